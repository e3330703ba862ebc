/*
 * onnx_builder.h: shared by the ONNX importer's error tests
 * (test_onnx_errors_*.c): a tiny ModelProto builder over protobuf-c, the
 * checks that an import fails with a message holding given strings or
 * succeeds with a verified graph, interp_run on zero inputs, and the
 * temporary directory the models are written to (tmpdir.h: needs
 * _GNU_SOURCE defined before the first #include).
 */
#ifndef PCC_TESTS_ONNX_BUILDER_H
#define PCC_TESTS_ONNX_BUILDER_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "onnx.pb-c.h"
#include "tap.h"
#include "tmpdir.h"

/* ONNX TensorProto.DataType codes */
enum { T_FLOAT = 1, T_UINT8 = 2, T_INT32 = 6, T_INT64 = 7, T_STRING = 8, T_BOOL = 9 };

static char tmpdir[] = "/tmp/pcc_onnx_errors_XXXXXX";

/* ---- a tiny ModelProto builder -----------------------------------------
 * Everything a model points to is calloc'd into the builder's pool and
 * freed with it. Name lists and shapes are written as comma-separated
 * strings: inputs "x,W", shape "batch,8" (a number is a dim_value, anything
 * else a dim_param; "" is rank 0). */

#define POOL_MAX 1024
#define LIST_MAX 64

struct mb {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset;
	Onnx__OperatorSetIdProto *opsets[1];
	void *pool[POOL_MAX];
	int npool;
	char path[512]; /* where mb_write put it */
};

static inline void *mb_alloc(struct mb *b, size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p || b->npool == POOL_MAX)
		abort();
	b->pool[b->npool++] = p;
	return p;
}

static inline char *mb_str(struct mb *b, const char *s)
{
	return strcpy(mb_alloc(b, strlen(s) + 1), s);
}

/* Appends x to a pool array of LIST_MAX entries (allocated on first use). */
#define PUSH(b, arr, n, x)                                               \
	do {                                                             \
		if (!(arr))                                              \
			(arr) = mb_alloc((b), LIST_MAX * sizeof *(arr)); \
		if ((n) == LIST_MAX)                                     \
			abort();                                         \
		(arr)[(n)++] = (x);                                      \
	} while (0)

/* Splits "a,b,,c" into pool strings (empty entries kept); returns the count. */
static inline size_t mb_split(struct mb *b, const char *csv, char ***out)
{
	size_t n = 0;
	*out = NULL;
	if (!csv[0])
		return 0;
	for (const char *p = csv;; p++) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *s = mb_alloc(b, len + 1);
		memcpy(s, p, len);
		PUSH(b, *out, n, s);
		if (!e)
			return n;
		p = e;
	}
}

static inline struct mb *mb_new(int64_t opset)
{
	struct mb *b = calloc(1, sizeof *b);
	if (!b)
		abort();
	b->m = (Onnx__ModelProto)ONNX__MODEL_PROTO__INIT;
	b->g = (Onnx__GraphProto)ONNX__GRAPH_PROTO__INIT;
	b->opset = (Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT;
	b->opset.domain = "";
	b->opset.has_version = 1;
	b->opset.version = opset;
	b->opsets[0] = &b->opset;
	b->m.has_ir_version = 1;
	b->m.ir_version = 8;
	b->m.producer_name = "test_onnx_errors";
	b->m.n_opset_import = 1;
	b->m.opset_import = b->opsets;
	b->m.graph = &b->g;
	b->g.name = "g";
	return b;
}

static inline void mb_free(struct mb *b)
{
	for (int i = 0; i < b->npool; i++)
		free(b->pool[i]);
	free(b);
}

static inline Onnx__ValueInfoProto *mb_value(struct mb *b, const char *name, int32_t type, const char *dims)
{
	Onnx__ValueInfoProto *v = mb_alloc(b, sizeof *v);
	Onnx__TypeProto *tp = mb_alloc(b, sizeof *tp);
	Onnx__TypeProto__Tensor *tt = mb_alloc(b, sizeof *tt);
	Onnx__TensorShapeProto *sp = mb_alloc(b, sizeof *sp);
	char **d;
	size_t rank = mb_split(b, dims, &d);

	*v = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
	*tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
	*tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
	*sp = (Onnx__TensorShapeProto)ONNX__TENSOR_SHAPE_PROTO__INIT;
	for (size_t i = 0; i < rank; i++) {
		Onnx__TensorShapeProto__Dimension *dim = mb_alloc(b, sizeof *dim);
		*dim = (Onnx__TensorShapeProto__Dimension)ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
		char *end;
		long long x = strtoll(d[i], &end, 10);
		if (*end) {
			dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			dim->dim_param = d[i];
		} else {
			dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			dim->dim_value = x;
		}
		PUSH(b, sp->dim, sp->n_dim, dim);
	}
	tt->has_elem_type = 1;
	tt->elem_type = type;
	tt->shape = sp;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	v->name = mb_str(b, name);
	v->type = tp;
	return v;
}

static inline void mb_input(struct mb *b, const char *name, int32_t type, const char *dims)
{
	PUSH(b, b->g.input, b->g.n_input, mb_value(b, name, type, dims));
}

static inline void mb_output(struct mb *b, const char *name, int32_t type, const char *dims)
{
	PUSH(b, b->g.output, b->g.n_output, mb_value(b, name, type, dims));
}

static inline Onnx__NodeProto *mb_node(struct mb *b, const char *op, const char *name, const char *ins,
				       const char *outs)
{
	Onnx__NodeProto *n = mb_alloc(b, sizeof *n);
	*n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
	n->op_type = mb_str(b, op);
	n->name = mb_str(b, name);
	n->n_input = mb_split(b, ins, &n->input);
	n->n_output = mb_split(b, outs, &n->output);
	PUSH(b, b->g.node, b->g.n_node, n);
	return n;
}

static inline void mb_attr_int(struct mb *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = mb_str(b, name);
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	a->has_i = 1;
	a->i = v;
	PUSH(b, n->attribute, n->n_attribute, a);
}

static inline void mb_attr_float(struct mb *b, Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = mb_str(b, name);
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	a->has_f = 1;
	a->f = v;
	PUSH(b, n->attribute, n->n_attribute, a);
}

static inline void mb_attr_string(struct mb *b, Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = mb_str(b, name);
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	a->has_s = 1;
	a->s.len = strlen(v);
	a->s.data = (uint8_t *)mb_str(b, v);
	PUSH(b, n->attribute, n->n_attribute, a);
}

/* An ints attribute of n entries. */
static inline void mb_attr_ints(struct mb *b, Onnx__NodeProto *n, const char *name, size_t count, const int64_t *v)
{
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = mb_str(b, name);
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	a->n_ints = count;
	a->ints = mb_alloc(b, (count + 1) * sizeof *v);
	memcpy(a->ints, v, count * sizeof *v);
	PUSH(b, n->attribute, n->n_attribute, a);
}

/* An initializer with dims but no data yet. */
static inline Onnx__TensorProto *mb_tensor(struct mb *b, const char *name, int32_t type, const char *dims)
{
	Onnx__TensorProto *t = mb_alloc(b, sizeof *t);
	char **d;
	*t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
	t->name = mb_str(b, name);
	t->has_data_type = 1;
	t->data_type = type;
	t->n_dims = mb_split(b, dims, &d);
	t->dims = mb_alloc(b, (t->n_dims + 1) * sizeof *t->dims);
	for (size_t i = 0; i < t->n_dims; i++)
		t->dims[i] = strtoll(d[i], NULL, 10);
	PUSH(b, b->g.initializer, b->g.n_initializer, t);
	return t;
}

static inline void mb_raw(struct mb *b, Onnx__TensorProto *t, size_t nbytes)
{
	t->has_raw_data = 1;
	t->raw_data.len = nbytes;
	t->raw_data.data = mb_alloc(b, nbytes);
}

/* A float initializer with raw_data of exactly the right size (zeros). */
static inline Onnx__TensorProto *mb_init_f32(struct mb *b, const char *name, const char *dims)
{
	Onnx__TensorProto *t = mb_tensor(b, name, T_FLOAT, dims);
	size_t n = 1;
	for (size_t i = 0; i < t->n_dims; i++)
		n *= (size_t)t->dims[i];
	mb_raw(b, t, n * 4);
	return t;
}

static inline Onnx__TensorProto *mb_init_i64(struct mb *b, const char *name, size_t n, const int64_t *v)
{
	char dims[24];
	snprintf(dims, sizeof dims, "%zu", n);
	Onnx__TensorProto *t = mb_tensor(b, name, T_INT64, dims);
	t->n_int64_data = n;
	t->int64_data = mb_alloc(b, (n + 1) * sizeof *v);
	memcpy(t->int64_data, v, n * sizeof *v);
	return t;
}

/* An initializer of any type holding nbytes of little-endian raw_data. */
static inline Onnx__TensorProto *mb_init_raw(struct mb *b, const char *name, int32_t type, const char *dims,
					     const void *data, size_t nbytes)
{
	Onnx__TensorProto *t = mb_tensor(b, name, type, dims);
	mb_raw(b, t, nbytes);
	memcpy(t->raw_data.data, data, nbytes);
	return t;
}

static inline void mb_external(struct mb *b, Onnx__TensorProto *t, const char *location)
{
	Onnx__StringStringEntryProto *e = mb_alloc(b, sizeof *e);
	*e = (Onnx__StringStringEntryProto)ONNX__STRING_STRING_ENTRY_PROTO__INIT;
	e->key = "location";
	e->value = mb_str(b, location);
	PUSH(b, t->external_data, t->n_external_data, e);
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t->has_raw_data = 0;
}

static inline uint8_t *mb_pack(struct mb *b, size_t *len)
{
	*len = onnx__model_proto__get_packed_size(&b->m);
	uint8_t *buf = mb_alloc(b, *len);
	onnx__model_proto__pack(&b->m, buf);
	return buf;
}

/* Writes n bytes to tmpdir/name; returns the path in buf. */
static inline const char *write_bytes(const char *name, const void *data, size_t n, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", tmpdir, name);
	FILE *f = fopen(buf, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
		abort();
	return buf;
}

/* Packs the model into tmpdir/name; returns its path (owned by b). */
static inline const char *mb_write(struct mb *b, const char *name)
{
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);
	return write_bytes(name, buf, len, b->path, sizeof b->path);
}

/* x: f32[2,3] -> op (one node named name) -> y */
static inline struct mb *mb_one_op(const char *op, const char *name)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_node(b, op, name, "x", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	return b;
}

/* y = x[2,8] @ W[8,4] + B[4] */
static inline struct mb *mb_mlp(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,8");
	mb_init_f32(b, "W", "8,4");
	mb_init_f32(b, "B", "4");
	mb_node(b, "MatMul", "mm", "x,W", "h");
	mb_node(b, "Add", "bias", "h,B", "y");
	mb_output(b, "y", T_FLOAT, "2,4");
	return b;
}

/* mb_mlp, then y2 = Reshape(y, Concat(Gather(Shape(y), [0]), [-1])): the
 * shape computation folds into constants through the interpreter. */
static inline struct mb *mb_folding(void)
{
	struct mb *b = mb_mlp();
	mb_init_i64(b, "zero", 1, (int64_t[]){ 0 });
	mb_init_i64(b, "minus1", 1, (int64_t[]){ -1 });
	mb_node(b, "Shape", "shape", "y", "s");
	mb_node(b, "Gather", "dim0", "s,zero", "d0");
	mb_attr_int(b, mb_node(b, "Concat", "target", "d0,minus1", "t"), "axis", 0);
	mb_node(b, "Reshape", "same", "y,t", "y2");
	b->g.output[0]->name = "y2";
	return b;
}

/* x: f32[2,3] -> Reshape to the constant [d0, d1] */
static inline struct mb *mb_reshape_to(int64_t d0, int64_t d1)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_init_i64(b, "s", 2, (int64_t[]){ d0, d1 });
	mb_node(b, "Reshape", "rs", "x,s", "y");
	mb_output(b, "y", T_FLOAT, "");
	return b;
}

/* Opset 19's new forms in one model of two inputs, x f32[1,2,4,6] and
 * c f32[1,8,4]: Pad wrap, Resize with antialias and with
 * keep_aspect_ratio_policy, GroupNormalization, CenterCropPad, Split
 * num_outputs, ReduceMean with its axes input, Col2Im. */
static inline struct mb *mb_opsets(void)
{
	struct mb *b = mb_new(19);
	mb_input(b, "x", T_FLOAT, "1,2,4,6");
	mb_input(b, "c", T_FLOAT, "1,8,4");
	mb_init_i64(b, "pads", 2, (int64_t[]){ 4, 2 });
	mb_init_i64(b, "ax3", 1, (int64_t[]){ 3 });
	mb_init_i64(b, "sizes", 2, (int64_t[]){ 3, 3 });
	mb_init_i64(b, "img", 2, (int64_t[]){ 5, 5 });
	mb_init_i64(b, "blk", 2, (int64_t[]){ 2, 2 });
	Onnx__TensorProto *sc = mb_init_f32(b, "scales", "4");
	memcpy(sc->raw_data.data, (float[]){ 1, 1, 0.5f, 0.5f }, 16);
	mb_init_f32(b, "gs", "2");
	mb_init_f32(b, "gb", "2");
	mb_attr_string(b, mb_node(b, "Pad", "wrap", "x,pads,,ax3", "p"), "mode", "wrap");
	Onnx__NodeProto *n = mb_node(b, "Resize", "aa", "p,,scales", "r");
	mb_attr_string(b, n, "mode", "cubic");
	mb_attr_int(b, n, "antialias", 1);
	n = mb_node(b, "Resize", "keep", "x,,,sizes", "k");
	mb_attr_string(b, n, "mode", "linear");
	mb_attr_ints(b, n, "axes", 2, (int64_t[]){ 2, 3 });
	mb_attr_string(b, n, "keep_aspect_ratio_policy", "not_smaller");
	mb_attr_int(b, mb_node(b, "GroupNormalization", "gn", "k,gs,gb", "g"), "num_groups", 2);
	mb_attr_ints(b, mb_node(b, "CenterCropPad", "ccp", "g,sizes", "cc"), "axes", 2, (int64_t[]){ 2, 3 });
	mb_attr_int(b, mb_node(b, "Split", "split", "cc", "s0,s1"), "num_outputs", 2);
	mb_node(b, "ReduceMean", "mean", "s1,ax3", "m");
	mb_attr_ints(b, mb_node(b, "Col2Im", "col2im", "c,img,blk", "ci"), "strides", 2, (int64_t[]){ 2, 2 });
	mb_output(b, "r", T_FLOAT, "");
	mb_output(b, "m", T_FLOAT, "");
	mb_output(b, "ci", T_FLOAT, "");
	return b;
}

/* Quantized inference and com.microsoft ops: x quantized per axis and
 * dequantized, MatMulInteger, DynamicQuantizeLinear, FusedMatMul,
 * SkipLayerNormalization and Gelu of com.microsoft. */
static inline struct mb *mb_quantized(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,4");
	Onnx__TensorProto *s = mb_init_f32(b, "s", "4");
	memcpy(s->raw_data.data, (float[]){ 0.5f, 0.25f, 1, 2 }, 16);
	mb_init_raw(b, "zp", T_UINT8, "4", (uint8_t[]){ 1, 2, 3, 4 }, 4);
	mb_init_raw(b, "w", T_UINT8, "4,3", (uint8_t[12]){ 7, 200 }, 12);
	mb_init_f32(b, "wf", "4,3");
	mb_init_f32(b, "gamma", "3");
	mb_attr_int(b, mb_node(b, "QuantizeLinear", "q", "x,s,zp", "xq"), "axis", 1);
	mb_attr_int(b, mb_node(b, "DequantizeLinear", "dq", "xq,s,zp", "xd"), "axis", 1);
	mb_node(b, "MatMulInteger", "mmi", "xq,w", "acc");
	mb_node(b, "DynamicQuantizeLinear", "dyn", "xd", "y,ys,yzp");
	Onnx__NodeProto *n = mb_node(b, "FusedMatMul", "fmm", "xd,wf", "fm");
	n->domain = "com.microsoft";
	mb_attr_float(b, n, "alpha", 0.5f);
	n = mb_node(b, "SkipLayerNormalization", "sln", "fm,fm,gamma", "sl");
	n->domain = "com.microsoft";
	mb_attr_float(b, n, "epsilon", 1e-5f);
	mb_node(b, "Gelu", "gelu", "sl", "g")->domain = "com.microsoft";
	mb_output(b, "acc", T_INT32, "2,3");
	mb_output(b, "y", T_UINT8, "2,4");
	mb_output(b, "g", T_FLOAT, "2,3");
	return b;
}

/* ---- checks ------------------------------------------------------------ */

static inline bool has_all(const char *msg, va_list ap, const char **missing)
{
	for (const char *s; (s = va_arg(ap, const char *));) {
		if (!strstr(msg, s)) {
			*missing = s;
			return false;
		}
	}
	return true;
}

static inline void vexpect_error(const char *what, const char *path, const struct onnx_import_opts *o, va_list ap)
{
	const char *missing = NULL;
	ir_error_clear();
	struct ir_graph *g = onnx_import(path, o, NULL);
	bool ok = !g && strstr(ir_error(), path) && has_all(ir_error(), ap, &missing);
	TAP_OK(ok, "%s", what);
	TAP_DIAG("  %s", g ? "(imported)" : ir_error());
	if (missing)
		TAP_DIAG("  missing \"%s\"", missing);
	ir_graph_free(g);
}

/* One case: importing path fails, and the message holds the path and every
 * string of the NULL-terminated list. */
static inline void expect_error(const char *what, const char *path, const struct onnx_import_opts *o, ...)
{
	va_list ap;
	va_start(ap, o);
	vexpect_error(what, path, o, ap);
	va_end(ap);
}
#define EXPECT_ERROR(what, path, opts, ...) expect_error(what, path, opts, __VA_ARGS__, (const char *)NULL)

/* The same for model b written to tmpdir/file; frees b. */
static inline void expect_model_error(struct mb *b, const char *file, const char *what, ...)
{
	va_list ap;
	va_start(ap, what);
	vexpect_error(what, mb_write(b, file), NULL, ap);
	va_end(ap);
	mb_free(b);
}
#define EXPECT_MODEL_ERROR(b, file, what, ...) expect_model_error(b, file, what, __VA_ARGS__, (const char *)NULL)

/* Imports path and expects a verified graph (caller frees). */
static inline struct ir_graph *expect_import(const char *what, const char *path, const struct onnx_import_opts *o)
{
	ir_error_clear();
	struct ir_graph *g = onnx_import(path, o, NULL);
	TAP_OK(g && ir_verify(g) == 0, "%s", what);
	if (!g)
		TAP_DIAG("  %s", ir_error());
	return g;
}

/* Runs g on zero inputs with allocations failing after fail_after (-1:
 * never); returns interp_run's code (outputs freed). */
static inline int run_zeros(const struct ir_graph *g, long fail_after)
{
	struct ir_tensor in[4] = { 0 }, out[4] = { 0 };
	int nin = ir_graph_ninputs(g), nout = ir_graph_noutputs(g);
	if (nin > 4 || nout > 4)
		abort();
	for (int i = 0; i < nin; i++) {
		const struct ir_value *v = ir_graph_input(g, i);
		if (ir_tensor_alloc(&in[i], v->dtype, &v->shape) < 0)
			abort();
	}
	ir_error_clear();
	ir_alloc_fail_after(fail_after);
	int rc = interp_run(g, in, out);
	ir_alloc_fail_after(-1);
	for (int i = 0; i < nin; i++)
		ir_tensor_free(&in[i]);
	for (int i = 0; rc == 0 && i < nout; i++)
		ir_tensor_free(&out[i]);
	return rc;
}

#endif
