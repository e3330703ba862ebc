/*
 * modelgen_onnx.c: builds an ONNX ModelProto with protobuf-c and writes it.
 *
 * All protobuf-c structures and strings live in an arena freed at once by
 * mgb_free. Weights are TensorProtos with data_location EXTERNAL and
 * external_data {location, offset, length}; offsets are laid out back to
 * back as if the file existed, but it is never written: the point is a
 * small .onnx that a compiler reads without the weights.
 *
 * Errors are sticky: the first failure (out of memory) is kept in the
 * builder, later calls do nothing and return "", and mgb_write reports it,
 * so the family code reads as a straight list of layers.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchmarks/modelgen.h"
#include "onnx.pb-c.h"

#define OPSET 17
#define IR_VERSION 8 /* the IR version that goes with opset 17 */
#define BLOCK_BYTES (64 * 1024)
#define MAX_IO 8 /* graph inputs, graph outputs */

/* ---- errors ------------------------------------------------------------- */

static char err_msg[512];

int mg_errorf(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof err_msg, fmt, ap);
	va_end(ap);
	return code;
}

const char *mg_error(void)
{
	return err_msg;
}

/* ---- arena ---------------------------------------------------------------- */

struct block {
	struct block *next;
	size_t used, cap;
	max_align_t data[];
};

struct mg_builder {
	struct block *blocks;
	Onnx__NodeProto **nodes;
	size_t nnodes, cap_nodes;
	Onnx__TensorProto **inits;
	size_t ninits, cap_inits;
	Onnx__ValueInfoProto *inputs[MAX_IO], *outputs[MAX_IO];
	size_t ninputs, noutputs;
	char scope[160];
	char *location;  /* external data file, relative to the model */
	int64_t offset;  /* bytes of external data laid out so far */
	int64_t params;  /* elements of all weights (trainable) */
	unsigned serial; /* makes node names unique */
	int err;         /* first failure, 0 if none */
};

static void *fail_nomem(struct mg_builder *b)
{
	if (!b->err)
		b->err = mg_errorf(-ENOMEM, "out of memory");
	return NULL;
}

/* Zeroed, aligned memory owned by the builder. */
static void *alloc(struct mg_builder *b, size_t n)
{
	if (b->err)
		return NULL;
	n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	struct block *k = b->blocks;
	if (!k || k->cap - k->used < n) {
		size_t cap = n > BLOCK_BYTES ? n : BLOCK_BYTES;
		k = calloc(1, sizeof *k + cap);
		if (!k)
			return fail_nomem(b);
		k->cap = cap;
		k->next = b->blocks;
		b->blocks = k;
	}
	void *p = (char *)k->data + k->used;
	k->used += n;
	return p;
}

static char *str_printf(struct mg_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *str_printf(struct mg_builder *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = n >= 0 ? alloc(b, (size_t)n + 1) : NULL;
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* Appends p to a growable array of pointers of any one type. */
#define PUSH(b, arr, n, cap, p)                                          \
	do {                                                             \
		if ((n) == (cap)) {                                      \
			size_t c2_ = (cap) ? 2 * (cap) : 256;            \
			void *a2_ = realloc((arr), c2_ * sizeof *(arr)); \
			if (!a2_) {                                      \
				fail_nomem(b);                           \
				break;                                   \
			}                                                \
			(arr) = a2_;                                     \
			(cap) = c2_;                                     \
		}                                                        \
		(arr)[(n)++] = (p);                                      \
	} while (0)

/* ---- builder -------------------------------------------------------------- */

struct mg_builder *mgb_new(const char *location)
{
	struct mg_builder *b = calloc(1, sizeof *b);
	if (!b) {
		mg_errorf(-ENOMEM, "out of memory");
		return NULL;
	}
	b->location = str_printf(b, "%s", location);
	if (b->err) {
		mgb_free(b);
		return NULL;
	}
	return b;
}

void mgb_free(struct mg_builder *b)
{
	if (!b)
		return;
	while (b->blocks) {
		struct block *next = b->blocks->next;
		free(b->blocks);
		b->blocks = next;
	}
	free(b->nodes);
	free(b->inits);
	free(b);
}

void mgb_scope(struct mg_builder *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->scope, sizeof b->scope, fmt, ap);
	va_end(ap);
}

void mgb_scope_clear(struct mg_builder *b)
{
	b->scope[0] = 0;
}

int64_t mgb_params(const struct mg_builder *b)
{
	return b->params;
}

/* scope + sep + name, or name alone outside a scope */
static char *scoped(struct mg_builder *b, char sep, const char *name)
{
	return b->scope[0] ? str_printf(b, "%s%c%s", b->scope, sep, name) : str_printf(b, "%s", name);
}

static Onnx__ValueInfoProto *value_info(struct mg_builder *b, const char *name, enum mg_elem t, int rank,
					const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = alloc(b, sizeof *vi);
	Onnx__TypeProto *tp = alloc(b, sizeof *tp);
	Onnx__TypeProto__Tensor *tt = alloc(b, sizeof *tt);
	Onnx__TensorShapeProto *sh = alloc(b, sizeof *sh);
	Onnx__TensorShapeProto__Dimension **dv = alloc(b, (size_t)(rank + 1) * sizeof *dv);
	if (b->err)
		return NULL;
	onnx__value_info_proto__init(vi);
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(sh);
	for (int i = 0; i < rank; i++) {
		Onnx__TensorShapeProto__Dimension *d = alloc(b, sizeof *d);
		if (!d)
			return NULL;
		onnx__tensor_shape_proto__dimension__init(d);
		if (dims[i] < 0) {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			d->dim_param = (char *)"batch";
		} else {
			d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			d->dim_value = dims[i];
		}
		dv[i] = d;
	}
	sh->n_dim = (size_t)rank;
	sh->dim = dv;
	tt->has_elem_type = 1;
	tt->elem_type = t;
	tt->shape = sh;
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	vi->name = str_printf(b, "%s", name);
	vi->type = tp;
	return b->err ? NULL : vi;
}

const char *mgb_input(struct mg_builder *b, const char *name, enum mg_elem t, int rank, const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = value_info(b, name, t, rank, dims);
	if (!vi || b->ninputs == MAX_IO)
		return "";
	b->inputs[b->ninputs++] = vi;
	return vi->name;
}

void mgb_output(struct mg_builder *b, const char *name, enum mg_elem t, int rank, const int64_t *dims)
{
	Onnx__ValueInfoProto *vi = value_info(b, name, t, rank, dims);
	if (vi && b->noutputs < MAX_IO)
		b->outputs[b->noutputs++] = vi;
}

static Onnx__StringStringEntryProto *entry(struct mg_builder *b, const char *key, char *value)
{
	Onnx__StringStringEntryProto *e = alloc(b, sizeof *e);
	if (!e)
		return NULL;
	onnx__string_string_entry_proto__init(e);
	e->key = (char *)key;
	e->value = value;
	return e;
}

static const char *initializer(struct mg_builder *b, const char *name, int rank, const int64_t *dims, bool trainable)
{
	Onnx__TensorProto *t = alloc(b, sizeof *t);
	int64_t *d = alloc(b, (size_t)(rank + 1) * sizeof *d);
	Onnx__StringStringEntryProto **ext = alloc(b, 3 * sizeof *ext);
	if (b->err)
		return "";
	onnx__tensor_proto__init(t);
	int64_t numel = 1;
	for (int i = 0; i < rank; i++)
		numel *= (d[i] = dims[i]);
	int64_t bytes = numel * 4;
	ext[0] = entry(b, "location", b->location);
	ext[1] = entry(b, "offset", str_printf(b, "%lld", (long long)b->offset));
	ext[2] = entry(b, "length", str_printf(b, "%lld", (long long)bytes));
	t->name = scoped(b, '.', name);
	t->n_dims = (size_t)rank;
	t->dims = d;
	t->has_data_type = 1;
	t->data_type = MG_FLOAT;
	t->has_data_location = 1;
	t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	t->n_external_data = 3;
	t->external_data = ext;
	if (b->err)
		return "";
	PUSH(b, b->inits, b->ninits, b->cap_inits, t);
	b->offset += bytes;
	if (trainable)
		b->params += numel;
	return b->err ? "" : t->name;
}

const char *mgb_weight(struct mg_builder *b, const char *name, int rank, const int64_t *dims)
{
	return initializer(b, name, rank, dims, true);
}

const char *mgb_state(struct mg_builder *b, const char *name, int rank, const int64_t *dims)
{
	return initializer(b, name, rank, dims, false);
}

/* ---- nodes ------------------------------------------------------------------ */

struct Onnx__NodeProto *mgb_node(struct mg_builder *b, const char *op, int nin, const char *const *in, int nout)
{
	Onnx__NodeProto *n = alloc(b, sizeof *n);
	char **ins = alloc(b, (size_t)(nin + 1) * sizeof *ins);
	char **outs = alloc(b, (size_t)(nout + 1) * sizeof *outs);
	char *base = str_printf(b, "%s_%u", op, b->serial++);
	if (b->err)
		return NULL;
	onnx__node_proto__init(n);
	n->op_type = (char *)op;
	n->name = scoped(b, '/', base);
	for (int i = 0; i < nin; i++)
		ins[i] = (char *)in[i];
	for (int i = 0; i < nout; i++)
		outs[i] = nout == 1 ? n->name : str_printf(b, "%s:%d", n->name, i);
	n->n_input = (size_t)nin;
	n->input = ins;
	n->n_output = (size_t)nout;
	n->output = outs;
	if (b->err)
		return NULL;
	PUSH(b, b->nodes, b->nnodes, b->cap_nodes, n);
	return b->err ? NULL : n;
}

const char *mgb_out(const struct Onnx__NodeProto *n, int i)
{
	return n && (size_t)i < n->n_output ? n->output[i] : "";
}

void mgb_rename(struct mg_builder *b, struct Onnx__NodeProto *n, int i, const char *name)
{
	char *s = str_printf(b, "%s", name);
	if (n && s && (size_t)i < n->n_output)
		n->output[i] = s;
}

static Onnx__AttributeProto *attr_add(struct mg_builder *b, Onnx__NodeProto *n, const char *name,
				      Onnx__AttributeProto__AttributeType type)
{
	if (!n || b->err)
		return NULL;
	Onnx__AttributeProto *a = alloc(b, sizeof *a);
	Onnx__AttributeProto **v = alloc(b, (n->n_attribute + 1) * sizeof *v);
	if (b->err)
		return NULL;
	onnx__attribute_proto__init(a);
	a->name = (char *)name;
	a->has_type = 1;
	a->type = type;
	if (n->n_attribute)
		memcpy(v, n->attribute, n->n_attribute * sizeof *v);
	v[n->n_attribute++] = a;
	n->attribute = v;
	return a;
}

void mgb_attr_int(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, int64_t v)
{
	Onnx__AttributeProto *a = attr_add(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
	if (a) {
		a->has_i = 1;
		a->i = v;
	}
}

void mgb_attr_ints(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
	Onnx__AttributeProto *a = attr_add(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	int64_t *copy = alloc(b, (size_t)(count + 1) * sizeof *copy);
	if (a && copy) {
		memcpy(copy, v, (size_t)count * sizeof *copy);
		a->n_ints = (size_t)count;
		a->ints = copy;
	}
}

void mgb_attr_float(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr_add(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	if (a) {
		a->has_f = 1;
		a->f = v;
	}
}

void mgb_attr_str(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr_add(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	if (a) {
		char *copy = str_printf(b, "%s", v);
		a->has_s = 1;
		a->s.len = copy ? strlen(copy) : 0;
		a->s.data = (uint8_t *)copy;
	}
}

const char *mgb_op(struct mg_builder *b, const char *op, int nin, ...)
{
	const char *in[8];
	va_list ap;
	assert(nin <= 8);
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, const char *);
	va_end(ap);
	return mgb_out(mgb_node(b, op, nin, in, 1), 0);
}

/* A Constant node holding an inline tensor (int64 or f32 data). */
static const char *const_tensor(struct mg_builder *b, enum mg_elem t, int rank, int count, const void *v)
{
	Onnx__NodeProto *n = mgb_node(b, "Constant", 0, NULL, 1);
	Onnx__AttributeProto *a = attr_add(b, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
	Onnx__TensorProto *tp = alloc(b, sizeof *tp);
	int64_t *dims = alloc(b, sizeof *dims);
	void *data = alloc(b, (size_t)(count + 1) * 8);
	if (!a || b->err)
		return "";
	onnx__tensor_proto__init(tp);
	tp->has_data_type = 1;
	tp->data_type = t;
	dims[0] = count;
	tp->n_dims = (size_t)rank;
	tp->dims = dims;
	if (t == MG_INT64) {
		memcpy(data, v, (size_t)count * sizeof(int64_t));
		tp->n_int64_data = (size_t)count;
		tp->int64_data = data;
	} else {
		memcpy(data, v, (size_t)count * sizeof(float));
		tp->n_float_data = (size_t)count;
		tp->float_data = data;
	}
	a->t = tp;
	return mgb_out(n, 0);
}

const char *mgb_ints(struct mg_builder *b, int count, const int64_t *v)
{
	return const_tensor(b, MG_INT64, 1, count, v);
}

const char *mgb_int(struct mg_builder *b, int64_t v)
{
	return const_tensor(b, MG_INT64, 0, 1, &v);
}

const char *mgb_float(struct mg_builder *b, float v)
{
	return const_tensor(b, MG_FLOAT, 0, 1, &v);
}

const char *mgb_floats(struct mg_builder *b, int count, const float *v)
{
	return const_tensor(b, MG_FLOAT, 1, count, v);
}

/* ---- the model ---------------------------------------------------------- */

static int write_file(const char *path, const uint8_t *buf, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return mg_errorf(-EIO, "%s: cannot write: %s", path, strerror(errno));
	int rc = 0;
	if (fwrite(buf, 1, n, f) != n)
		rc = mg_errorf(-EIO, "%s: cannot write: %s", path, strerror(errno));
	if (fclose(f) != 0 && rc == 0)
		rc = mg_errorf(-EIO, "%s: cannot write: %s", path, strerror(errno));
	return rc;
}

void mgb_lm_loss(struct mg_builder *b, const char *logits, const char *labels, int64_t vocab)
{
	const char *in[2] = { mgb_op(b, "Reshape", 2, logits, mgb_ints(b, 2, (int64_t[]){ -1, vocab })),
			      mgb_op(b, "Reshape", 2, labels, mgb_ints(b, 1, (int64_t[]){ -1 })) };
	struct Onnx__NodeProto *loss = mgb_node(b, "SoftmaxCrossEntropyLoss", 2, in, 1);
	mgb_attr_str(b, loss, "reduction", "mean");
	mgb_rename(b, loss, 0, "loss");
	mgb_output(b, "loss", MG_FLOAT, 0, NULL);
}

int mgb_write(struct mg_builder *b, const char *path, const char *graph_name)
{
	if (b->err)
		return b->err;
	Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
	Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
	Onnx__OperatorSetIdProto *opsets[1] = { &opset };
	Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
	g.name = (char *)graph_name;
	g.n_node = b->nnodes;
	g.node = b->nodes;
	g.n_initializer = b->ninits;
	g.initializer = b->inits;
	g.n_input = b->ninputs;
	g.input = b->inputs;
	g.n_output = b->noutputs;
	g.output = b->outputs;
	opset.domain = (char *)"";
	opset.has_version = 1;
	opset.version = OPSET;
	m.has_ir_version = 1;
	m.ir_version = IR_VERSION;
	m.n_opset_import = 1;
	m.opset_import = opsets;
	m.producer_name = (char *)"pcc-modelgen";
	m.graph = &g;
	size_t n = onnx__model_proto__get_packed_size(&m);
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		return mg_errorf(-ENOMEM, "out of memory packing %zu bytes", n);
	onnx__model_proto__pack(&m, buf);
	int rc = write_file(path, buf, n);
	free(buf);
	return rc;
}
