/*
 * test_onnx_errors.c: the ONNX importer on bad input (compiler/onnx_*.c).
 *
 * Each case builds a small ModelProto with protobuf-c, breaks one thing,
 * writes it to a temporary directory and checks that onnx_import() returns
 * NULL with a message naming the file, the node, its ONNX op and the
 * problem ("FILE: node \"NAME\" (OP): what is wrong"). Also:
 *  - every prefix and every one-byte corruption of a valid model, and random
 *    bytes, end in a graph or a clean error (run under ASan or valgrind to
 *    see that nothing leaks or reads out of bounds);
 *  - every allocation failure during import (and during interp_run) ends
 *    in NULL / a negative code with a message;
 *  - run-time errors (missing external weights, Gather out of range) come
 *    from interp_run, not from import, which never reads weights;
 *  - the pcc binary (argv[1]) turns an import error into exit status 1 and
 *    exactly one stderr line "pcc: ...".
 */
#define _GNU_SOURCE /* nftw */
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "onnx.pb-c.h"
#include "tap.h"

/* ONNX TensorProto.DataType codes */
enum { T_FLOAT = 1, T_INT64 = 7, T_STRING = 8 };

static char tmpdir[] = "/tmp/pcc_onnx_errors_XXXXXX";

/* ---- a tiny ModelProto builder -----------------------------------------
 * Everything a model points to is calloc'd into the builder's pool and
 * freed with it. Name lists and shapes are written as comma-separated
 * strings: inputs "x,W", shape "batch,8" (a number is a dim_value, anything
 * else a dim_param; "" is rank 0). */

#define POOL_MAX 1024
#define LIST_MAX 16

struct mb {
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	Onnx__OperatorSetIdProto opset;
	Onnx__OperatorSetIdProto *opsets[1];
	void *pool[POOL_MAX];
	int npool;
	char path[512]; /* where mb_write put it */
};

static void *mb_alloc(struct mb *b, size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p || b->npool == POOL_MAX)
		abort();
	b->pool[b->npool++] = p;
	return p;
}

static char *mb_str(struct mb *b, const char *s)
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
static size_t mb_split(struct mb *b, const char *csv, char ***out)
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

static struct mb *mb_new(int64_t opset)
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

static void mb_free(struct mb *b)
{
	for (int i = 0; i < b->npool; i++)
		free(b->pool[i]);
	free(b);
}

static Onnx__ValueInfoProto *mb_value(struct mb *b, const char *name, int32_t type,
				      const char *dims)
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

static void mb_input(struct mb *b, const char *name, int32_t type, const char *dims)
{
	PUSH(b, b->g.input, b->g.n_input, mb_value(b, name, type, dims));
}

static void mb_output(struct mb *b, const char *name, int32_t type, const char *dims)
{
	PUSH(b, b->g.output, b->g.n_output, mb_value(b, name, type, dims));
}

static Onnx__NodeProto *mb_node(struct mb *b, const char *op, const char *name, const char *ins,
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

static void mb_attr_int(struct mb *b, Onnx__NodeProto *n, const char *name, int64_t v)
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

/* An initializer with dims but no data yet. */
static Onnx__TensorProto *mb_tensor(struct mb *b, const char *name, int32_t type, const char *dims)
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

static void mb_raw(struct mb *b, Onnx__TensorProto *t, size_t nbytes)
{
	t->has_raw_data = 1;
	t->raw_data.len = nbytes;
	t->raw_data.data = mb_alloc(b, nbytes);
}

/* A float initializer with raw_data of exactly the right size (zeros). */
static Onnx__TensorProto *mb_init_f32(struct mb *b, const char *name, const char *dims)
{
	Onnx__TensorProto *t = mb_tensor(b, name, T_FLOAT, dims);
	size_t n = 1;
	for (size_t i = 0; i < t->n_dims; i++)
		n *= (size_t)t->dims[i];
	mb_raw(b, t, n * 4);
	return t;
}

static Onnx__TensorProto *mb_init_i64(struct mb *b, const char *name, size_t n, const int64_t *v)
{
	char dims[24];
	snprintf(dims, sizeof dims, "%zu", n);
	Onnx__TensorProto *t = mb_tensor(b, name, T_INT64, dims);
	t->n_int64_data = n;
	t->int64_data = mb_alloc(b, (n + 1) * sizeof *v);
	memcpy(t->int64_data, v, n * sizeof *v);
	return t;
}

static void mb_external(struct mb *b, Onnx__TensorProto *t, const char *location)
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

static uint8_t *mb_pack(struct mb *b, size_t *len)
{
	*len = onnx__model_proto__get_packed_size(&b->m);
	uint8_t *buf = mb_alloc(b, *len);
	onnx__model_proto__pack(&b->m, buf);
	return buf;
}

/* Writes n bytes to tmpdir/name; returns the path in buf. */
static const char *write_bytes(const char *name, const void *data, size_t n, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", tmpdir, name);
	FILE *f = fopen(buf, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0)
		abort();
	return buf;
}

/* Packs the model into tmpdir/name; returns its path (owned by b). */
static const char *mb_write(struct mb *b, const char *name)
{
	size_t len;
	const uint8_t *buf = mb_pack(b, &len);
	return write_bytes(name, buf, len, b->path, sizeof b->path);
}

/* x: f32[2,3] -> op (one node named name) -> y */
static struct mb *mb_one_op(const char *op, const char *name)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_node(b, op, name, "x", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	return b;
}

/* y = x[2,8] @ W[8,4] + B[4] */
static struct mb *mb_mlp(void)
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
static struct mb *mb_folding(void)
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

/* ---- checks ------------------------------------------------------------ */

static bool has_all(const char *msg, va_list ap, const char **missing)
{
	for (const char *s; (s = va_arg(ap, const char *));) {
		if (!strstr(msg, s)) {
			*missing = s;
			return false;
		}
	}
	return true;
}

static void vexpect_error(const char *what, const char *path, const struct onnx_import_opts *o,
			  va_list ap)
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
static void expect_error(const char *what, const char *path, const struct onnx_import_opts *o, ...)
{
	va_list ap;
	va_start(ap, o);
	vexpect_error(what, path, o, ap);
	va_end(ap);
}
#define EXPECT_ERROR(what, path, opts, ...) \
	expect_error(what, path, opts, __VA_ARGS__, (const char *)NULL)

/* The same for model b written to tmpdir/file; frees b. */
static void expect_model_error(struct mb *b, const char *file, const char *what, ...)
{
	va_list ap;
	va_start(ap, what);
	vexpect_error(what, mb_write(b, file), NULL, ap);
	va_end(ap);
	mb_free(b);
}
#define EXPECT_MODEL_ERROR(b, file, what, ...) \
	expect_model_error(b, file, what, __VA_ARGS__, (const char *)NULL)

/* Imports path and expects a verified graph (caller frees). */
static struct ir_graph *expect_import(const char *what, const char *path,
				      const struct onnx_import_opts *o)
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
static int run_zeros(const struct ir_graph *g, long fail_after)
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

/* ---- unsupported input ---------------------------------------------------- */

static void test_unsupported(void)
{
	struct mb *b = mb_one_op("FooBar", "foo");
	EXPECT_MODEL_ERROR(b, "unsupported_op.onnx", "unsupported op", ": node \"foo\" (FooBar): ",
			   "unsupported op");

	b = mb_one_op("Relu", "act");
	mb_attr_int(b, b->g.node[0], "alpha", 2);
	EXPECT_MODEL_ERROR(b, "unsupported_attr.onnx", "unsupported attribute",
			   "node \"act\" (Relu)", "unsupported attribute 'alpha'");

	b = mb_one_op("FusedGelu", "fused");
	b->g.node[0]->domain = "com.microsoft";
	EXPECT_MODEL_ERROR(b, "unsupported_domain.onnx", "unsupported domain",
			   "node \"fused\" (FusedGelu)", "domain \"com.microsoft\"");

	b = mb_one_op("Relu", "act");
	b->g.input[0]->type->tensor_type->elem_type = T_STRING;
	EXPECT_MODEL_ERROR(b, "string_input.onnx", "string input", "input \"x\"", "STRING");
}

static void test_opset(void)
{
	struct mb *b = mb_one_op("Relu", "act");
	b->opset.version = 6;
	EXPECT_MODEL_ERROR(b, "opset6.onnx", "opset 6 rejected with the supported range", "opset 6",
			   "7 to 17");
	b = mb_one_op("Relu", "act");
	b->opset.version = 18;
	EXPECT_MODEL_ERROR(b, "opset18.onnx", "opset 18 rejected with the supported range",
			   "opset 18", "7 to 17");
	b = mb_one_op("Relu", "act");
	b->opset.domain = "ai.onnx.ml";
	EXPECT_MODEL_ERROR(b, "no_opset.onnx", "no default-domain opset",
			   "no default-domain opset");
}

/* ---- malformed files ----------------------------------------------------- */

static void test_files(void)
{
	char path[512];
	const char *p = write_bytes("empty.onnx", "", 0, path, sizeof path);
	EXPECT_ERROR("empty file", p, NULL, "no graph");

	snprintf(path, sizeof path, "%s/does_not_exist.onnx", tmpdir);
	EXPECT_ERROR("missing file", path, NULL, "cannot open");

	EXPECT_ERROR("a directory", tmpdir, NULL, "not a regular file");

	unsigned char junk[1024];
	srand(1);
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)rand();
	p = write_bytes("random.onnx", junk, sizeof junk, path, sizeof path);
	EXPECT_ERROR("random bytes", p, NULL, "not a valid ONNX model");
}

/* Imports buf[0..n) written to a file: a graph (verified) or NULL with a
 * message naming the file. Returns false on a graph that fails to verify or
 * a NULL without the file in the message. */
static bool import_bytes_cleanly(const void *buf, size_t n, int *nfail)
{
	char path[512];
	write_bytes("mutant.onnx", buf, n, path, sizeof path);
	ir_error_clear();
	struct ir_graph *g = onnx_import(path, NULL, NULL);
	bool ok = g ? ir_verify(g) == 0 : strstr(ir_error(), path) != NULL;
	if (!ok)
		TAP_DIAG("  %zu bytes: %s", n, g ? "imported but does not verify" : ir_error());
	*nfail += !g;
	ir_graph_free(g);
	return ok;
}

static void test_truncated(void)
{
	struct mb *b = mb_mlp();
	size_t len;
	uint8_t *buf = mb_pack(b, &len);
	char path[512];

	const char *p = write_bytes("half.onnx", buf, len / 2, path, sizeof path);
	EXPECT_ERROR("model cut in half", p, NULL, "not a valid ONNX model");

	int bad = 0, nfail = 0;
	for (size_t n = 0; n < len; n++)
		bad += !import_bytes_cleanly(buf, n, &nfail);
	TAP_OK(bad == 0, "every prefix of a %zu-byte model: %d rejected, %d imported, %d unclean",
	       len, nfail, (int)len - nfail, bad);

	bad = nfail = 0;
	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0xff;
		bad += !import_bytes_cleanly(buf, len, &nfail);
		buf[i] ^= 0xff;
	}
	TAP_OK(bad == 0, "every one-byte corruption: %d rejected, %d imported, %d unclean", nfail,
	       (int)len - nfail, bad);
	mb_free(b);

	unsigned char junk[4096];
	bad = nfail = 0;
	srand(2);
	for (int k = 0; k < 200; k++) {
		size_t n = (size_t)rand() % sizeof junk;
		for (size_t i = 0; i < n; i++)
			junk[i] = (unsigned char)rand();
		bad += !import_bytes_cleanly(junk, n, &nfail);
	}
	TAP_OK(bad == 0, "200 random buffers: %d rejected, %d unclean", nfail, bad);
}

/* ---- initializers ------------------------------------------------------------ */

static void test_initializers(void)
{
	struct mb *b = mb_mlp();
	b->g.initializer[0]->raw_data.len = 7;
	EXPECT_MODEL_ERROR(b, "raw_size.onnx", "raw_data size does not match the shape",
			   "initializer \"W\"", "raw_data holds 7 bytes", "[8,4]", "needs 128");

	b = mb_mlp();
	Onnx__TensorProto *t = b->g.initializer[0];
	t->has_raw_data = 0;
	t->n_float_data = 5;
	t->float_data = mb_alloc(b, 5 * sizeof(float));
	EXPECT_MODEL_ERROR(b, "float_data_count.onnx", "float_data of the wrong count",
			   "initializer \"W\"", "5 elements", "[8,4]", "32");

	b = mb_mlp();
	t = mb_tensor(b, "big", T_FLOAT, "1000000,1000000,1000000");
	mb_raw(b, t, 4);
	EXPECT_MODEL_ERROR(b, "absurd_init.onnx", "absurd initializer shape rejected without allocating",
			   "initializer \"big\"", "[1000000,1000000,1000000]", "2^44");

	/* 2^32 * 2^32 wraps to 0 elements in unchecked int64 arithmetic */
	b = mb_mlp();
	t = mb_tensor(b, "wrap", T_FLOAT, "4294967296,4294967296");
	mb_raw(b, t, 0);
	EXPECT_MODEL_ERROR(b, "wrapping_init.onnx", "initializer shape whose element count wraps",
			   "initializer \"wrap\"", "2^44");

	b = mb_mlp();
	mb_tensor(b, "neg", T_FLOAT, "-3,2");
	EXPECT_MODEL_ERROR(b, "negative_init.onnx", "negative initializer dim",
			   "initializer \"neg\"", "negative");
}

static void test_absurd_input(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1000000,1000000,1000000");
	mb_node(b, "Relu", "act", "x", "y");
	mb_output(b, "y", T_FLOAT, "1000000,1000000,1000000");
	EXPECT_MODEL_ERROR(b, "absurd_input.onnx", "absurd input shape rejected without allocating",
			   "input \"x\"", "[1000000,1000000,1000000]", "2^44");

	b = mb_one_op("Relu", "act");
	b->g.input[0]->type->tensor_type->shape->dim[1]->dim_value = -3;
	EXPECT_MODEL_ERROR(b, "negative_input.onnx", "negative input dim", "input \"x\"",
			   "negative");

	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1,1,1,1,1,1,1,1,1");
	mb_node(b, "Relu", "act", "x", "y");
	mb_output(b, "y", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "rank9_input.onnx", "input of rank 9", "input \"x\"", "rank 9");
}

/* ---- graph structure ------------------------------------------------------- */

static void test_structure(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_node(b, "Add", "first", "x,b", "a");
	mb_node(b, "Relu", "second", "a", "b");
	mb_output(b, "b", T_FLOAT, "2,3");
	EXPECT_MODEL_ERROR(b, "cycle.onnx", "cycle between two nodes", ": node \"", "cycle");

	b = mb_one_op("Relu", "act");
	b->g.node[0]->input[0] = "nowhere";
	EXPECT_MODEL_ERROR(b, "dangling.onnx", "dangling node input", "node \"act\" (Relu)",
			   "\"nowhere\"", "not defined");

	b = mb_one_op("Relu", "act");
	mb_node(b, "Neg", "again", "x", "y");
	EXPECT_MODEL_ERROR(b, "defined_twice.onnx", "value defined twice by two nodes",
			   "node \"again\" (Neg)", "\"y\"", "defined twice");

	b = mb_one_op("Relu", "act");
	b->g.node[0]->output[0] = "x";
	b->g.output[0]->name = "x";
	EXPECT_MODEL_ERROR(b, "redefines_input.onnx", "node output redefines a graph input",
			   "node \"act\" (Relu)", "\"x\"", "defined twice");

	b = mb_mlp();
	mb_init_f32(b, "W", "8,4");
	EXPECT_MODEL_ERROR(b, "init_twice.onnx", "two initializers with one name", "\"W\"",
			   "defined twice");

	b = mb_one_op("Relu", "act");
	b->g.output[0]->name = "z";
	EXPECT_MODEL_ERROR(b, "missing_output.onnx", "graph output nothing produces",
			   "output \"z\"");

	b = mb_one_op("Relu", "act");
	b->g.node[0]->n_input = 0;
	EXPECT_MODEL_ERROR(b, "no_operand.onnx", "node without its required input",
			   "node \"act\" (Relu)", "input 0 is required");
}

static void test_symbolic_dim(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "batch,8");
	mb_node(b, "Relu", "act", "x", "y");
	mb_output(b, "y", T_FLOAT, "batch,8");
	const char *p = mb_write(b, "symbolic.onnx");
	EXPECT_ERROR("unbound symbolic dimension", p, NULL, "input \"x\"", "\"batch\"",
		     "--dim batch=N");

	struct onnx_dim_binding dims[] = { { "batch", 3 } };
	struct onnx_import_opts o;
	onnx_import_opts_init(&o);
	o.dims = dims;
	o.ndims = 1;
	struct ir_graph *g = expect_import("the same model with --dim batch=3", p, &o);
	TAP_OK(g && ir_graph_input(g, 0)->shape.dims[0] == 3, "batch bound to 3");
	ir_graph_free(g);
	mb_free(b);
}

/* ---- external data ----------------------------------------------------------- */

static void test_external(void)
{
	struct mb *b = mb_mlp();
	mb_external(b, b->g.initializer[0], "w_missing.bin");
	const char *p = mb_write(b, "external_missing.onnx");
	struct ir_graph *g = expect_import("import with missing external data succeeds", p, NULL);
	if (g) {
		int rc = run_zeros(g, -1);
		TAP_OK(rc == -ENOENT && strstr(ir_error(), "w_missing.bin"),
		       "interp_run: -ENOENT naming the missing file");
		TAP_DIAG("  rc %d: %s", rc, ir_error());
	}
	ir_graph_free(g);
	mb_free(b);

	const char *escapes[] = { "../x.bin", "/etc/passwd", "sub/../../x.bin" };
	for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
		b = mb_mlp();
		mb_external(b, b->g.initializer[0], escapes[i]);
		char what[128];
		snprintf(what, sizeof what, "external data location \"%s\" rejected", escapes[i]);
		EXPECT_MODEL_ERROR(b, "external_escape.onnx", what, "initializer \"W\"", escapes[i]);
	}

	b = mb_mlp();
	mb_external(b, b->g.initializer[0], "");
	EXPECT_MODEL_ERROR(b, "external_empty.onnx", "empty external data location rejected",
			   "initializer \"W\"", "location");

	/* ".." inside a file name is not a parent directory */
	b = mb_mlp();
	mb_external(b, b->g.initializer[0], "w..v2.bin");
	g = expect_import("external data file \"w..v2.bin\" accepted", mb_write(b, "external_dots.onnx"),
			  NULL);
	ir_graph_free(g);
	mb_free(b);
}

/* ---- shape errors ----------------------------------------------------------- */

/* x: f32[2,3] -> Reshape to the constant [d0, d1] */
static struct mb *mb_reshape_to(int64_t d0, int64_t d1)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_init_i64(b, "s", 2, (int64_t[]){ d0, d1 });
	mb_node(b, "Reshape", "rs", "x,s", "y");
	mb_output(b, "y", T_FLOAT, "");
	return b;
}

static void test_shapes(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,8");
	mb_init_f32(b, "W", "4,3");
	mb_node(b, "MatMul", "proj", "x,W", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	EXPECT_MODEL_ERROR(b, "matmul.onnx", "MatMul operands that do not contract",
			   "node \"proj\" (MatMul)", "[2,8]", "[4,3]", "do not contract");

	b = mb_reshape_to(4, -1);
	EXPECT_MODEL_ERROR(b, "reshape_infer.onnx", "Reshape [2,3] to [4,-1]",
			   "node \"rs\" (Reshape)", "[2,3]", "[4,-1]");

	b = mb_reshape_to(5, 7);
	EXPECT_MODEL_ERROR(b, "reshape_count.onnx", "Reshape [2,3] to [5,7]",
			   "node \"rs\" (Reshape)", "[2,3]", "[5,7]");
}

/* x[:, -1::INT64_MIN] is valid ONNX (one column, walking backwards); the
 * step must not be negated as is. */
static void test_slice_extreme_step(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_init_i64(b, "starts", 1, (int64_t[]){ -1 });
	mb_init_i64(b, "ends", 1, (int64_t[]){ INT64_MIN });
	mb_init_i64(b, "axes", 1, (int64_t[]){ 1 });
	mb_init_i64(b, "steps", 1, (int64_t[]){ INT64_MIN });
	mb_node(b, "Slice", "sl", "x,starts,ends,axes,steps", "y");
	mb_output(b, "y", T_FLOAT, "2,1");
	struct ir_graph *g = expect_import("Slice with step INT64_MIN imports", mb_write(b, "slice.onnx"),
					   NULL);
	struct ir_shape want = { 2, { 2, 1 } };
	TAP_OK(g && ir_shape_eq(&ir_graph_output(g, 0)->shape, &want), "Slice result is [2,1]");
	ir_graph_free(g);
	mb_free(b);
}

/* ---- constants of the wrong size -------------------------------------------
 * Operands that ONNX defines as one number (Range's start, OneHot's depth,
 * Pad's constant_value, Dropout's training_mode, ConstantOfShape's value),
 * given as an empty tensor: the importer must not read element 0. */

static struct mb *mb_with_empty(const char *op, const char *ins, const char *empty)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_INT64, "2,3");
	mb_init_i64(b, "one", 1, (int64_t[]){ 1 });
	mb_init_i64(b, "pads", 4, (int64_t[]){ 0, 0, 0, 0 });
	mb_init_i64(b, "values", 2, (int64_t[]){ 0, 1 });
	mb_tensor(b, empty, T_INT64, "0");
	mb_node(b, op, "op", ins, "y");
	mb_output(b, "y", T_INT64, "");
	return b;
}

static void test_empty_scalars(void)
{
	struct mb *b = mb_with_empty("Range", "empty,one,one", "empty");
	EXPECT_MODEL_ERROR(b, "range_empty.onnx", "Range with an empty start", "(Range)", "start");
	b = mb_with_empty("OneHot", "x,empty,values", "empty");
	EXPECT_MODEL_ERROR(b, "onehot_empty.onnx", "OneHot with an empty depth", "(OneHot)", "depth");
	b = mb_with_empty("Pad", "x,pads,empty", "empty");
	EXPECT_MODEL_ERROR(b, "pad_empty.onnx", "Pad with an empty constant_value", "(Pad)",
			   "constant_value");
	b = mb_with_empty("Dropout", "x,,empty", "empty");
	EXPECT_MODEL_ERROR(b, "dropout_empty.onnx", "Dropout with an empty training_mode",
			   "(Dropout)", "training_mode");

	b = mb_with_empty("ConstantOfShape", "pads", "unused");
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = "value";
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	a->t = b->g.initializer[--b->g.n_initializer]; /* the empty tensor, moved */
	PUSH(b, b->g.node[0]->attribute, b->g.node[0]->n_attribute, a);
	EXPECT_MODEL_ERROR(b, "constant_of_shape_empty.onnx", "ConstantOfShape with an empty value",
			   "(ConstantOfShape)", "value");
}

/* ---- run-time errors ---------------------------------------------------------- */

static void test_gather(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "4,3");
	mb_init_i64(b, "idx", 2, (int64_t[]){ 1, 7 });
	mb_node(b, "Gather", "lookup", "x,idx", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	const char *p = mb_write(b, "gather_runtime.onnx");
	struct ir_graph *g = expect_import("Gather with bad indices imports", p, NULL);
	if (g) {
		int rc = run_zeros(g, -1);
		TAP_OK(rc < 0 && strstr(ir_error(), "lookup") && strstr(ir_error(), "gather") &&
			       strstr(ir_error(), "out of range"),
		       "interp_run: Gather index 7 of 4 fails naming the op");
		TAP_DIAG("  rc %d: %s", rc, ir_error());
	}
	ir_graph_free(g);
	mb_free(b);

	/* all operands constant: folding evaluates it during import */
	b = mb_new(13);
	mb_init_i64(b, "data", 4, (int64_t[]){ 0, 1, 2, 3 });
	mb_init_i64(b, "idx", 1, (int64_t[]){ -9 });
	mb_node(b, "Gather", "lookup", "data,idx", "y");
	mb_output(b, "y", T_INT64, "1");
	EXPECT_MODEL_ERROR(b, "gather_fold.onnx", "Gather of constants out of range (folded at import)",
			   "node \"lookup\" (Gather)", "out of range");
	const char *first = strstr(ir_error(), "node \"lookup\"");
	TAP_OK(first && !strstr(first + 1, "node \"lookup\""), "folding error names the node once");
}

/* ---- allocation failures -------------------------------------------------------
 * Each failure point runs in a child process so that an abort is reported
 * as one failing case (and, under ASan or valgrind, a leak fails the
 * child's exit status). */

enum { CLEAN_FAILURE, BAD_MESSAGE, SUCCEEDED };

struct fail_point {
	long k;                   /* allocations that succeed first */
	const char *path;         /* model to import */
	const struct ir_graph *g; /* graph to run */
};

static int import_at(const struct fail_point *f)
{
	ir_error_clear();
	ir_alloc_fail_after(f->k);
	struct ir_graph *g = onnx_import(f->path, NULL, NULL);
	ir_alloc_fail_after(-1);
	ir_graph_free(g);
	if (g)
		return SUCCEEDED;
	if (strstr(ir_error(), f->path))
		return CLEAN_FAILURE;
	TAP_DIAG("  failing allocation %ld: %s", f->k, ir_error());
	return BAD_MESSAGE;
}

static int run_at(const struct fail_point *f)
{
	int rc = run_zeros(f->g, f->k);
	if (rc == 0 || rc == -ENOMEM)
		return rc == 0 ? SUCCEEDED : CLEAN_FAILURE;
	TAP_DIAG("  failing allocation %ld: rc %d: %s", f->k, rc, ir_error());
	return BAD_MESSAGE;
}

/* fn(f) in a child: its result, or -signal when it crashed or ran for more
 * than 5 s (SIGALRM). */
static int in_child(int (*fn)(const struct fail_point *), const struct fail_point *f)
{
	int st;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(5);
		exit(fn(f));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		abort();
	return WIFSIGNALED(st) ? -WTERMSIG(st) : WEXITSTATUS(st);
}

/* Fails allocation k = 0, 1, ... until fn succeeds; one case. */
static void sweep_failures(const char *what, int (*fn)(const struct fail_point *),
			   struct fail_point *f)
{
	long bad = 0;
	int r = -1;
	for (f->k = 0; f->k < 100000; f->k++) {
		r = in_child(fn, f);
		if (r == SUCCEEDED)
			break;
		if (r != CLEAN_FAILURE)
			bad++;
		if (r < 0 || r > SUCCEEDED)
			TAP_DIAG("  failing allocation %ld: %s", f->k,
				 r < 0 ? strsignal(-r) : "unexpected exit status");
	}
	TAP_OK(r == SUCCEEDED && bad == 0, "%s: %ld failure points, %ld not clean", what, f->k, bad);
}

/* An attribute without a name (empty, or absent from the file) on an op
 * that accepts attributes: imported in a child, as a hang is possible. */
static void test_nameless_attribute(void)
{
	const char *names[] = { "", NULL };
	for (int i = 0; i < 2; i++) {
		struct mb *b = mb_reshape_to(3, 2);
		mb_attr_int(b, b->g.node[0], "allowzero", 0);
		b->g.node[0]->attribute[0]->name = (char *)names[i];
		struct fail_point f = { .k = -1, .path = mb_write(b, "nameless_attr.onnx") };
		int r = in_child(import_at, &f);
		TAP_OK(r == CLEAN_FAILURE, "attribute with %s name rejected", names[i] ? "an empty" : "no");
		if (r < 0)
			TAP_DIAG("  %s", strsignal(-r));
		mb_free(b);
	}
}

static void alloc_failures(struct mb *b, const char *name)
{
	char what[128];
	struct fail_point f = { .path = mb_write(b, name) };
	snprintf(what, sizeof what, "%s: import under allocation failure (NULL, message names the file)",
		 name);
	sweep_failures(what, import_at, &f);
	struct ir_graph *g = onnx_import(f.path, NULL, NULL);
	snprintf(what, sizeof what, "%s: interp_run under allocation failure (-ENOMEM)", name);
	if ((f.g = g))
		sweep_failures(what, run_at, &f);
	ir_graph_free(g);
	mb_free(b);
}

static void test_alloc_failures(void)
{
	alloc_failures(mb_mlp(), "alloc_mlp.onnx");
	alloc_failures(mb_folding(), "alloc_folding.onnx");
}

/* ---- the pcc binary ---------------------------------------------------------- */

/* Runs `pcc inspect model`; checks exit status 1 and one stderr line "pcc: ..." */
static void check_cli(const char *pcc, const char *model)
{
	char cmd[2048], errpath[512], line[2048];
	snprintf(errpath, sizeof errpath, "%s/stderr.txt", tmpdir);
	snprintf(cmd, sizeof cmd, "'%s' inspect '%s' >/dev/null 2>'%s'", pcc, model, errpath);
	int st = system(cmd);
	FILE *f = fopen(errpath, "r");
	int nlines = 0;
	bool prefixed = false;
	while (f && fgets(line, sizeof line, f)) {
		if (nlines++ == 0) {
			prefixed = strncmp(line, "pcc: ", 5) == 0 && strstr(line, model);
			TAP_DIAG("  stderr: %s", strtok(line, "\n"));
		}
	}
	if (f)
		fclose(f);
	TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && nlines == 1 && prefixed,
	       "pcc inspect %s: exit 1, one stderr line \"pcc: FILE: ...\"", strrchr(model, '/') + 1);
}

static void test_cli(const char *pcc)
{
	const char *files[] = { "unsupported_op.onnx", "half.onnx" };
	char path[512];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%s", tmpdir, files[i]);
		check_cli(pcc, path);
	}
}

/* ---- main ------------------------------------------------------------------------ */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* BatchNormalization's running statistics are model state: never trained;
 * in training mode, with onnx_import_opts.updates, graph updates. */
static struct mb *mb_batchnorm(bool training)
{
	struct mb *b = mb_new(15);
	mb_input(b, "x", T_FLOAT, "2,3,4");
	for (int i = 0; i < 4; i++)
		mb_init_f32(b, (const char *[]){ "s", "B", "m", "v" }[i], "3");
	Onnx__NodeProto *n = mb_node(b, "BatchNormalization", "bn", "x,s,B,m,v", training ? "y,rm,rv" : "y");
	mb_attr_int(b, n, "training_mode", training);
	mb_output(b, "y", T_FLOAT, "2,3,4");
	return b;
}

static void test_batchnorm_state(void)
{
	struct mb *b = mb_batchnorm(false);
	struct ir_graph *g = onnx_import(mb_write(b, "bn_eval.onnx"), NULL, NULL);
	int buffers = 0;
	for (int i = 0; g && i < ir_graph_nparams(g); i++)
		buffers += ir_graph_param(g, i)->buffer;
	struct train_opts o;
	struct train_step ts;
	train_opts_init(&o);
	o.loss = "mse:y,target";
	int rc = g ? train_build(g, &o, &ts) : -1;
	TAP_OK(buffers == 2 && rc == 0 && ts.nparams == 2 && !strcmp(ts.params[0]->name, "s") &&
	       !strcmp(ts.params[1]->name, "B"),
	       "BatchNorm (inference mode): running mean and var are state, only scale and bias train (%s)",
	       rc ? ir_error() : "");
	if (rc == 0)
		train_step_free(&ts);
	mb_free(b);

	b = mb_batchnorm(true);
	const char *path = mb_write(b, "bn_train.onnx");
	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	g = onnx_import(path, &imp, NULL);
	TAP_OK(g && ir_graph_nupdates(g) == 0 && ir_graph_nparams(g) == 2,
	       "BatchNorm (training mode), plain import: no updates, the unread statistics dropped");
	ir_graph_free(g);
	imp.updates = true;
	g = onnx_import(path, &imp, NULL);
	TAP_OK(g && ir_graph_nupdates(g) == 2 && !strcmp(ir_graph_update_param(g, 0)->name, "m") &&
	       !strcmp(ir_graph_update_param(g, 1)->name, "v") && ir_verify(g) == 0,
	       "BatchNorm (training mode), imported for training: running mean and var are updated");
	ir_graph_free(g);
	mb_free(b);
}

int main(int argc, char **argv)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_unsupported();
	test_opset();
	test_files();
	test_truncated();
	test_initializers();
	test_absurd_input();
	test_structure();
	test_symbolic_dim();
	test_external();
	test_shapes();
	test_slice_extreme_step();
	test_empty_scalars();
	test_gather();
	test_nameless_attribute();
	test_alloc_failures();
	test_batchnorm_state();
	if (argc > 1)
		test_cli(argv[1]);
	else
		TAP_DIAG("no pcc binary given: skipping the CLI checks");
	nftw(tmpdir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}
