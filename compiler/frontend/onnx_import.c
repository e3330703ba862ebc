/*
 * onnx_import.c: ONNX model -> core IR.
 *
 * 1. Read and unpack the ModelProto (bounded by the file size; protobuf-c
 *    rejects malformed input): onnx_model_read, once for a caller that
 *    imports the model at several batch sizes (onnx_model_import). Only
 *    opsets 7..21 of the default domain (and the com.microsoft ops that
 *    onnx_ops_ms.c lists).
 * 2. Graph inputs get static shapes: symbolic dims are bound by --dim.
 *    An input bound to a constant (onnx_import_opts.consts, pcc --const)
 *    becomes that constant, so the shapes it decides fold.
 * 3. Initializers: floating point ones become parameters that keep a
 *    reference to their bytes (inline, owned by the unpacked model, or an
 *    external file); inline integer and bool ones become constants so
 *    shape arithmetic folds. External ones of any dtype are parameters
 *    whose file is read only where import needs their values
 *    (onnx_build.c: a Reshape's shape, an op that folds).
 * 4. Nodes are visited in dependency order (the file's order need not be
 *    topological); each is decomposed by its handler (onnx_ops*.c).
 * 5. Builders (onnx_build.c) fold any op whose operands are all constants
 *    and whose result is small, so Shape -> Gather -> Concat -> Reshape
 *    chains vanish.
 * 6. Dead nodes are removed and the graph is verified.
 *
 * Example: MatMul(x[2,8,32], W[32,64]) becomes one dot with lhs_contract=[2]
 * rhs_contract=[0]; Gemm becomes dot + broadcast + add.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "compiler/frontend/onnx_internal.h"

/* Opsets 7..12 are read where an op's meaning did not change, and through
 * their attribute forms (Squeeze axes, Split sizes, Pad, Slice, Clip, TopK,
 * 2-D Softmax) where it did. Opsets 18..21 through their new forms (Split's
 * num_outputs, Reduce*'s axes input, Pad's axes, Resize's axes and
 * keep_aspect_ratio_policy...); what changed in them only by new element
 * types (float8, int4) is refused where such a type appears. */
#define OPSET_MIN 7
#define OPSET_MAX 21

/* ---- name table: open addressing, arena keys --------------------------- */

struct symtab {
	const char **keys;
	struct ir_value **vals;
	size_t cap, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static size_t sym_slot(const struct symtab *t, const char *k)
{
	size_t i = hash_str(k) & (t->cap - 1);
	while (t->keys[i] && strcmp(t->keys[i], k) != 0)
		i = (i + 1) & (t->cap - 1);
	return i;
}

static struct ir_value *sym_get(const struct symtab *t, const char *k)
{
	if (!t->cap)
		return NULL;
	size_t i = sym_slot(t, k);
	return t->keys[i] ? t->vals[i] : NULL;
}

static int sym_put(struct symtab *t, const char *k, struct ir_value *v)
{
	if (2 * (t->n + 1) > t->cap) {
		struct symtab big = { 0 };
		big.cap = t->cap ? 2 * t->cap : 256;
		big.keys = ir_calloc(big.cap, sizeof *big.keys);
		big.vals = ir_calloc(big.cap, sizeof *big.vals);
		if (!big.keys || !big.vals) {
			ir_free(big.keys);
			ir_free(big.vals);
			return ir_errorf(-ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < t->cap; i++) {
			if (t->keys[i]) {
				size_t j = sym_slot(&big, t->keys[i]);
				big.keys[j] = t->keys[i];
				big.vals[j] = t->vals[i];
			}
		}
		big.n = t->n;
		ir_free(t->keys);
		ir_free(t->vals);
		*t = big;
	}
	size_t i = sym_slot(t, k);
	if (!t->keys[i])
		t->n++;
	t->keys[i] = k;
	t->vals[i] = v;
	return 0;
}

static void sym_free(struct symtab *t)
{
	ir_free(t->keys);
	ir_free(t->vals);
}

/* ---- errors ---------------------------------------------------------------- */

const char *onnx_node_label(const Onnx__NodeProto *n)
{
	if (n->name && n->name[0])
		return n->name;
	return n->n_output && n->output[0] ? n->output[0] : "";
}

static int vfail(int code, const char *fmt, va_list ap)
{
	char msg[768];
	vsnprintf(msg, sizeof msg, fmt, ap);
	return ir_errorf(code, "%s", msg);
}

int onnx_fail(struct onnx_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vfail(-EINVAL, fmt, ap);
	va_end(ap);
	return rc;
}

int onnx_unsupported(struct onnx_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vfail(-ENOTSUP, fmt, ap);
	va_end(ap);
	return rc;
}

int onnx_axis(struct onnx_ctx *c, int64_t axis, int rank, int64_t *out)
{
	if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1))
		return onnx_fail(c, "axis %lld out of range for rank %d", (long long)axis, rank);
	*out = axis < 0 ? axis + rank : axis;
	return 0;
}

/* ---- attributes ------------------------------------------------------------ */

const Onnx__AttributeProto *attr_find(struct onnx_ctx *c, const char *name)
{
	for (size_t i = 0; i < c->node->n_attribute; i++)
		if (c->node->attribute[i]->name && strcmp(c->node->attribute[i]->name, name) == 0)
			return c->node->attribute[i];
	return NULL;
}

int64_t attr_int(struct onnx_ctx *c, const char *name, int64_t dflt)
{
	const Onnx__AttributeProto *a = attr_find(c, name);
	return a && a->has_i ? a->i : dflt;
}

double attr_float(struct onnx_ctx *c, const char *name, double dflt)
{
	const Onnx__AttributeProto *a = attr_find(c, name);
	return a && a->has_f ? a->f : dflt;
}

const char *attr_string(struct onnx_ctx *c, const char *name, const char *dflt, char *buf, size_t n)
{
	const Onnx__AttributeProto *a = attr_find(c, name);
	if (!a || !a->has_s)
		return dflt;
	size_t len = a->s.len < n - 1 ? a->s.len : n - 1;
	memcpy(buf, a->s.data, len);
	buf[len] = 0;
	return buf;
}

int attr_ints(struct onnx_ctx *c, const char *name, int64_t *out, int max)
{
	const Onnx__AttributeProto *a = attr_find(c, name);
	if (!a)
		return 0;
	if (a->n_ints > (size_t)max)
		return onnx_fail(c, "attribute '%s' has %zu entries (at most %d supported)", name, a->n_ints, max);
	if (a->n_ints) /* an empty list may have no array */
		memcpy(out, a->ints, a->n_ints * sizeof *out);
	return (int)a->n_ints;
}

int attr_since(struct onnx_ctx *c, const char *name, int since)
{
	if (c->opset >= since || !attr_find(c, name))
		return 0;
	return onnx_unsupported(c, "attribute '%s' came with %s-%d, but the model imports opset %lld", name,
				c->node->op_type, since, (long long)c->opset);
}

/* ---- model-level import ---------------------------------------------------- */

/* ---- the model read once ------------------------------------------------ */

struct onnx_model *onnx_model_read(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	if (onnx_read_file(path, &buf, &len) < 0)
		return NULL;
	struct onnx_model *m = ir_calloc(1, sizeof *m + strlen(path) + 1);
	if (!m) {
		ir_free(buf);
		ir_errorf(-ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	m->path = strcpy((char *)(m + 1), path);
	m->refs = 1;
	m->hash = XXH3_64bits(buf, len);
	m->proto = onnx__model_proto__unpack(NULL, len, buf);
	ir_free(buf);
	if (!m->proto) {
		ir_free(m);
		ir_errorf(-EINVAL, "%s: not a valid ONNX model (protobuf decoding failed: truncated or corrupt)", path);
		return NULL;
	}
	return m;
}

/* Drops a reference: the reader's (onnx_model_free) or a graph's. */
static void model_unref(void *p)
{
	struct onnx_model *m = p;
	if (m && __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		onnx__model_proto__free_unpacked(m->proto, NULL);
		ir_free(m);
	}
}

void onnx_model_free(struct onnx_model *m)
{
	model_unref(m);
}

const char *onnx_model_path(const struct onnx_model *m)
{
	return m->path;
}

uint64_t onnx_model_hash(const struct onnx_model *m)
{
	return m->hash;
}

static int import_opset(struct onnx_ctx *c, const Onnx__ModelProto *m)
{
	c->opset = -1;
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[i];
		if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0)
			c->opset = o->has_version ? o->version : 1;
	}
	if (c->opset < 0)
		return ir_errorf(
			-ENOTSUP,
			"%s: the model imports no default-domain opset (only other domains, which pcc does not support)",
			c->path);
	if (c->opset < OPSET_MIN)
		return ir_errorf(-ENOTSUP,
				 "%s: opset %lld is not supported (pcc imports opsets %d to %d; "
				 "re-export with opset_version=%d or newer)",
				 c->path, (long long)c->opset, OPSET_MIN, OPSET_MAX, 13);
	if (c->opset > OPSET_MAX)
		return ir_errorf(-ENOTSUP,
				 "%s: opset %lld is newer than pcc reads (pcc imports opsets %d to %d; "
				 "re-export with opset_version=%d)",
				 c->path, (long long)c->opset, OPSET_MIN, OPSET_MAX, OPSET_MAX);
	return 0;
}

static int bind_dim(struct onnx_ctx *c, const char *input, const Onnx__TensorShapeProto__Dimension *d, int i,
		    int64_t *out)
{
	if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
		if (d->dim_value < 0)
			return ir_errorf(-EINVAL, "%s: input \"%s\": dimension %d is negative", c->path, input, i);
		*out = d->dim_value;
		return 0;
	}
	if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param) {
		for (int k = 0; k < c->opts->ndims; k++) {
			if (strcmp(c->opts->dims[k].name, d->dim_param) == 0) {
				*out = c->opts->dims[k].value;
				return 0;
			}
		}
		return ir_errorf(-EINVAL, "%s: input \"%s\": dimension %d is symbolic \"%s\"; bind it with --dim %s=N",
				 c->path, input, i, d->dim_param, d->dim_param);
	}
	return ir_errorf(-EINVAL, "%s: input \"%s\": dimension %d has neither a size nor a name", c->path, input, i);
}

/* Whether dimension d has a size without a constant's help: a number, or a
 * name bound by --dim. */
static bool dim_fixed(const struct onnx_ctx *c, const Onnx__TensorShapeProto__Dimension *d)
{
	if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
		return true;
	for (int k = 0; d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
			k < c->opts->ndims;
	     k++)
		if (strcmp(c->opts->dims[k].name, d->dim_param) == 0)
			return true;
	return false;
}

/* The shape as the model declares it: "[2,batch,?]". */
static const char *decl_shape_str(const Onnx__TensorShapeProto *sp, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "[");
	for (size_t i = 0; i < sp->n_dim && at < n; i++) {
		const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
		const char *sep = i ? "," : "";
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			at += (size_t)snprintf(buf + at, n - at, "%s%lld", sep, (long long)d->dim_value);
		else
			at += (size_t)snprintf(buf + at, n - at, "%s%s", sep,
					       d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
							       d->dim_param
						       ? d->dim_param
						       : "?");
	}
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

static const struct onnx_const_input *find_const(const struct onnx_ctx *c, const char *name)
{
	for (int i = 0; i < c->opts->nconsts; i++)
		if (strcmp(c->opts->consts[i].name, name) == 0)
			return &c->opts->consts[i];
	return NULL;
}

/* Input name becomes constant k: its dtype must match, and its shape where
 * the model fixes it; symbolic dimensions take the constant's sizes. */
static int import_const_input(struct onnx_ctx *c, const char *name, enum ir_dtype dt, const Onnx__TensorShapeProto *sp,
			      const struct onnx_const_input *k)
{
	struct ir_shape s = k->value.shape;
	bool ok = k->value.dtype == dt && (size_t)s.rank == sp->n_dim;
	for (int i = 0; ok && i < s.rank; i++) {
		int64_t want;
		if (dim_fixed(c, sp->dim[i]))
			ok = bind_dim(c, name, sp->dim[i], i, &want) == 0 && want == s.dims[i];
	}
	if (!ok) {
		char s1[IR_SHAPE_STR_MAX], s2[IR_SHAPE_STR_MAX];
		return ir_errorf(-EINVAL, "%s: input \"%s\" is %s%s, but the constant bound to it%s%s%s is %s%s",
				 c->path, name, ir_dtype_name(dt), decl_shape_str(sp, s1, sizeof s1),
				 k->from ? " (" : "", k->from ? k->from : "", k->from ? ")" : "",
				 ir_dtype_name(k->value.dtype), ir_shape_str(&s, s2, sizeof s2));
	}
	struct ir_attrs a = { .dtype = dt, .shape = s, .data = k->value.data };
	struct ir_node *n = ir_graph_add_node(c->g, IR_OP_CONSTANT, name, 0, NULL, &a);
	if (!n)
		return -ENOMEM;
	n->out[0]->name = ir_graph_strdup(c->g, name);
	return sym_put(c->names, n->out[0]->name, n->out[0]);
}

static int import_input(struct onnx_ctx *c, const Onnx__ValueInfoProto *vi)
{
	const char *name = vi->name ? vi->name : "";
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return ir_errorf(-ENOTSUP, "%s: input \"%s\": only tensor inputs are supported", c->path, name);
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	enum ir_dtype dt;
	if (onnx_dtype_to_ir(tt->elem_type, &dt) < 0) {
		ir_error_prefix("%s: input \"%s\"", c->path, name);
		return -ENOTSUP;
	}
	if (!tt->shape)
		return ir_errorf(-EINVAL, "%s: input \"%s\" has no shape", c->path, name);
	struct ir_shape s = { 0 };
	if (tt->shape->n_dim > IR_MAX_RANK)
		return ir_errorf(-EINVAL, "%s: input \"%s\": rank %zu exceeds %d", c->path, name, tt->shape->n_dim,
				 IR_MAX_RANK);
	const struct onnx_const_input *k = find_const(c, name);
	if (k)
		return import_const_input(c, name, dt, tt->shape, k);
	s.rank = (int)tt->shape->n_dim;
	for (int i = 0; i < s.rank; i++)
		if (bind_dim(c, name, tt->shape->dim[i], i, &s.dims[i]) < 0)
			return -EINVAL;
	struct ir_value *v = ir_graph_add_input(c->g, name, dt, &s);
	if (!v) {
		ir_error_prefix("%s: input \"%s\"", c->path, name);
		return -EINVAL;
	}
	return sym_put(c->names, v->name, v);
}

/* Every constant binds an input of the model, once (initializers are
 * imported already: names holds them alone). */
static int check_consts(struct onnx_ctx *c, const Onnx__GraphProto *gp)
{
	for (int i = 0; i < c->opts->nconsts; i++) {
		const char *name = c->opts->consts[i].name;
		bool found = false;
		for (int j = 0; j < i; j++)
			if (strcmp(c->opts->consts[j].name, name) == 0)
				return ir_errorf(-EINVAL, "%s: input \"%s\" is bound to a constant twice", c->path,
						 name);
		for (size_t k = 0; k < gp->n_input && !found; k++)
			found = gp->input[k]->name && strcmp(gp->input[k]->name, name) == 0;
		if (found && sym_get(c->names, name))
			return ir_errorf(-EINVAL,
					 "%s: \"%s\" is an initializer of the model (a weight), not an input "
					 "to bind to a constant",
					 c->path, name);
		if (found)
			continue;
		char list[512] = "";
		size_t at = 0;
		int shown = 0;
		for (size_t k = 0; k < gp->n_input && at < sizeof list; k++) {
			const char *in = gp->input[k]->name ? gp->input[k]->name : "";
			if (sym_get(c->names, in))
				continue;
			at += (size_t)snprintf(list + at, sizeof list - at, "%s\"%s\"", shown++ ? ", " : "", in);
		}
		return ir_errorf(-EINVAL,
				 "%s: the model has no input \"%s\" to bind to a constant%s%s%s "
				 "(its inputs: %s)",
				 c->path, name, c->opts->consts[i].from ? " (" : "",
				 c->opts->consts[i].from ? c->opts->consts[i].from : "",
				 c->opts->consts[i].from ? ")" : "", shown ? list : "none");
	}
	return 0;
}

/* PyTorch's dynamo exporter: the key of the ValueInfoProto metadata
 * (field 4, metadata_props, ONNX 1.16) that says what a graph input of
 * the exported program was. */
#define TORCH_INPUT_KIND "pkg.torch.export.graph_signature.InputSpec.kind"
#define VALUE_INFO_METADATA 4

/* The kind vi's metadata declares (TORCH_INPUT_KIND), or NONE. The field
 * is read through the descriptor where this onnx.proto has it, else from
 * the unknown fields protobuf-c kept. */
static enum ir_declared declared_kind(const Onnx__ValueInfoProto *vi)
{
	const ProtobufCMessage *b = &vi->base;
	const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(b->descriptor,
										     VALUE_INFO_METADATA);
	const char *kind = NULL;
	if (fd && fd->label == PROTOBUF_C_LABEL_REPEATED && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
		size_t n = *(const size_t *)((const char *)vi + fd->quantifier_offset);
		Onnx__StringStringEntryProto *const *e = *(
			Onnx__StringStringEntryProto *const *const *)((const char *)vi + fd->offset);
		for (size_t i = 0; i < n && !kind; i++)
			if (e[i]->key && e[i]->value && !strcmp(e[i]->key, TORCH_INPUT_KIND))
				kind = e[i]->value;
	}
	Onnx__StringStringEntryProto *u = NULL;
	for (size_t i = 0; !fd && !kind && i < b->n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *x = &b->unknown_fields[i];
		if (x->tag != VALUE_INFO_METADATA || x->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
			continue;
		/* protobuf-c keeps the field's bytes after its tag: the length
		 * varint, then the message */
		size_t at = 0, len = 0;
		for (int sh = 0; at < x->len && sh < 64; sh += 7) {
			len |= (size_t)(x->data[at] & 0x7f) << sh;
			if (!(x->data[at++] & 0x80))
				break;
		}
		if (len > x->len - at)
			continue;
		if ((u = onnx__string_string_entry_proto__unpack(NULL, len, x->data + at)) && u->key && u->value &&
		    !strcmp(u->key, TORCH_INPUT_KIND))
			kind = u->value;
		else if (u)
			onnx__string_string_entry_proto__free_unpacked(u, NULL), u = NULL;
	}
	enum ir_declared d = !kind                                                         ? IR_DECLARED_NONE
			     : !strcmp(kind, "PARAMETER")                                  ? IR_DECLARED_PARAMETER
			     : !strcmp(kind, "BUFFER") || !strcmp(kind, "CONSTANT_TENSOR") ? IR_DECLARED_BUFFER
											   : IR_DECLARED_NONE;
	if (u)
		onnx__string_string_entry_proto__free_unpacked(u, NULL);
	return d;
}

/* Each initializer's declared kind (ir_value.declared), from the value
 * infos and inputs that name it. */
static void declared_kinds(struct onnx_ctx *c, const Onnx__GraphProto *gp)
{
	for (size_t i = 0; i < gp->n_value_info + gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = i < gp->n_value_info ? gp->value_info[i]
								      : gp->input[i - gp->n_value_info];
		struct ir_value *v = vi->name ? sym_get(c->names, vi->name) : NULL;
		if (v && v->kind == IR_VAL_PARAM) {
			enum ir_declared d = declared_kind(vi);
			if (d != IR_DECLARED_NONE)
				v->declared = (signed char)d;
		}
	}
}

static int import_initializer(struct onnx_ctx *c, const Onnx__TensorProto *t)
{
	const char *name = t->name ? t->name : "";
	enum ir_dtype dt;
	struct ir_shape s;
	struct ir_data d = { 0 };
	struct ir_tensor host = { 0 };
	struct ir_value *v = NULL;
	if (sym_get(c->names, name))
		goto dup;
	if (onnx_tensor_type(t, &dt, &s) < 0)
		goto fail;
	size_t want = (size_t)ir_shape_numel(&s) * ir_dtype_size(dt);
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		if (onnx_external_ref(c->base_dir, t, &d) < 0)
			goto fail;
		if (d.nbytes < 0)
			d.nbytes = (int64_t)want;
		if ((size_t)d.nbytes != want) {
			ir_errorf(-EINVAL, "external data holds %lld bytes, shape %s of %s needs %zu",
				  (long long)d.nbytes,
				  ir_shape_str(&s, (char[IR_SHAPE_STR_MAX]){ 0 }, IR_SHAPE_STR_MAX), ir_dtype_name(dt),
				  want);
			goto fail;
		}
		v = ir_graph_add_param(c->g, name, dt, &s, &d);
	} else if (t->has_raw_data && ir_dtype_is_float(dt)) {
		if (t->raw_data.len != want) {
			ir_errorf(-EINVAL, "raw_data holds %zu bytes, shape %s of %s needs %zu", t->raw_data.len,
				  ir_shape_str(&s, (char[IR_SHAPE_STR_MAX]){ 0 }, IR_SHAPE_STR_MAX), ir_dtype_name(dt),
				  want);
			goto fail;
		}
		d.bytes = t->raw_data.data; /* owned by the unpacked model */
		d.nbytes = (int64_t)want;
		v = ir_graph_add_param(c->g, name, dt, &s, &d);
	} else {
		if (onnx_tensor_decode(t, &host) < 0)
			goto fail;
		if (ir_dtype_is_float(dt)) {
			void *bytes = ir_graph_alloc(c->g, want);
			if (!bytes)
				goto fail;
			memcpy(bytes, host.data, want);
			d.bytes = bytes;
			d.nbytes = (int64_t)want;
			v = ir_graph_add_param(c->g, name, dt, &s, &d);
		} else {
			struct ir_attrs a = { .dtype = dt, .shape = s, .data = host.data };
			struct ir_node *n = ir_graph_add_node(c->g, IR_OP_CONSTANT, name, 0, NULL, &a);
			v = n ? n->out[0] : NULL;
			if (v)
				v->name = ir_graph_strdup(c->g, name);
		}
		ir_tensor_free(&host);
	}
	if (!v)
		goto fail;
	return sym_put(c->names, v->name, v);
dup:
	ir_errorf(-EINVAL, "name \"%s\" is defined twice", name);
fail:
	ir_tensor_free(&host);
	ir_error_prefix("%s: initializer \"%s\"", c->path, name);
	return -EINVAL;
}

const struct onnx_seq *onnx_seq_find(const struct onnx_ctx *c, const char *name)
{
	for (const struct onnx_seq *s = c->seqs; s && name; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

int onnx_seq_add(struct onnx_ctx *c, int n, struct ir_value *const *items)
{
	struct onnx_seq *s = ir_graph_alloc(c->g, sizeof *s);
	struct ir_value **copy = ir_graph_alloc(c->g, (size_t)(n ? n : 1) * sizeof *copy);
	if (!s || !copy)
		return ir_errorf(-ENOMEM, "out of memory");
	memcpy(copy, items, (size_t)n * sizeof *copy);
	*s = (struct onnx_seq){ .name = c->node->output[0], .n = n, .items = copy, .next = c->seqs };
	c->seqs = s;
	return 0;
}

/* The handler of op name in the default domain, or (ms) com.microsoft's. */
static const struct onnx_op_def *find_op(const char *name, bool ms)
{
	static const struct {
		const struct onnx_op_def *defs;
		const int *count;
	} tables[] = { { onnx_ops_basic, &onnx_ops_basic_count }, { onnx_ops_shape, &onnx_ops_shape_count },
		       { onnx_ops_nn, &onnx_ops_nn_count },       { onnx_ops_image, &onnx_ops_image_count },
		       { onnx_ops_convt, &onnx_ops_convt_count }, { onnx_ops_quant, &onnx_ops_quant_count } };
	if (ms) {
		for (int i = 0; i < onnx_ops_ms_count; i++)
			if (strcmp(onnx_ops_ms[i].name, name) == 0)
				return &onnx_ops_ms[i];
		return NULL;
	}
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (int i = 0; i < *tables[t].count; i++)
			if (strcmp(tables[t].defs[i].name, name) == 0)
				return &tables[t].defs[i];
	return NULL;
}

static bool attr_accepted(const char *list, const char *name)
{
	size_t n = strlen(name);
	if (n == 0)
		return false;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
			return true;
	return false;
}

#define NODE_MAX_IO 64

static int import_node(struct onnx_ctx *c, const Onnx__NodeProto *n)
{
	const char *op = n->op_type ? n->op_type : "";
	struct ir_value *in[NODE_MAX_IO] = { 0 }, *out[NODE_MAX_IO] = { 0 };
	int rc;
	c->node = n;
	bool ms = n->domain && strcmp(n->domain, "com.microsoft") == 0;
	if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0 && !ms) {
		rc = ir_errorf(-ENOTSUP, "unsupported op domain \"%s\"", n->domain);
		goto fail;
	}
	const struct onnx_op_def *def = find_op(op, ms);
	if (!def && ms) {
		rc = ir_errorf(-ENOTSUP,
			       "unsupported op of domain \"com.microsoft\" (pcc reads its FusedMatMul, FusedGemm, "
			       "Gelu, BiasGelu, FastGelu and SkipLayerNormalization)");
		goto fail;
	}
	if (!def) {
		rc = ir_errorf(-ENOTSUP, "unsupported op");
		goto fail;
	}
	if (n->n_input > NODE_MAX_IO || n->n_output > NODE_MAX_IO) {
		rc = ir_errorf(-EINVAL, "more than %d inputs or outputs", NODE_MAX_IO);
		goto fail;
	}
	for (size_t i = 0; i < n->n_attribute; i++) {
		const char *a = n->attribute[i]->name ? n->attribute[i]->name : "";
		if (!attr_accepted(def->attrs, a)) {
			rc = ir_errorf(-ENOTSUP, "unsupported attribute '%s'", a);
			goto fail;
		}
		if (n->attribute[i]->ref_attr_name) {
			rc = ir_errorf(-ENOTSUP, "attribute references are only valid inside functions");
			goto fail;
		}
	}
	for (size_t i = 0; i < n->n_input; i++) {
		if (!n->input[i] || !n->input[i][0])
			continue;
		in[i] = sym_get(c->names, n->input[i]);
		IR_ASSERT(in[i]); /* dependency order guarantees definition */
		if (strcmp(op, "SequenceAt") != 0 && onnx_seq_find(c, n->input[i])) {
			rc = ir_errorf(-ENOTSUP, "input \"%s\" is a sequence: pcc reads sequences only with SequenceAt",
				       n->input[i]);
			goto fail;
		}
	}
	ir_error_clear();
	rc = def->fn(c, in, (int)n->n_input, out, (int)n->n_output);
	if (rc < 0)
		goto fail;
	for (size_t i = 0; i < n->n_output; i++) {
		if (!n->output[i] || !n->output[i][0])
			continue;
		if (!out[i]) {
			rc = ir_errorf(-ENOTSUP, "output %zu (\"%s\") is not supported", i, n->output[i]);
			goto fail;
		}
		if (!out[i]->name && out[i]->kind == IR_VAL_NODE)
			out[i]->name = ir_graph_strdup(c->g, n->output[i]);
		if ((rc = sym_put(c->names, n->output[i], out[i])) < 0)
			goto fail;
	}
	return 0;
fail:
	ir_error_prefix("%s: node \"%s\" (%s)", c->path, onnx_node_label(n), op);
	return rc < 0 ? rc : -EINVAL;
}

/* Imports nodes so every input is defined first: a depth-first walk from
 * each node to the producers of its inputs (explicit stack, no recursion),
 * reporting a cycle or a name that nothing defines. */
static int import_nodes(struct onnx_ctx *c, const Onnx__GraphProto *gp)
{
	size_t nn = gp->n_node;
	int rc = 0;
	struct symtab producers = { 0 };
	unsigned char *state = ir_calloc(nn ? nn : 1, 1); /* 0 new, 1 on stack, 2 done */
	size_t *stack = ir_calloc(nn ? nn : 1, sizeof *stack);
	size_t *next_in = ir_calloc(nn ? nn : 1, sizeof *next_in);
	if (!state || !stack || !next_in) {
		rc = ir_errorf(-ENOMEM, "%s: out of memory", c->path);
		goto out;
	}
	/* producers maps an output name to (node index + 1) smuggled in a pointer */
	for (size_t i = 0; i < nn; i++) {
		const Onnx__NodeProto *n = gp->node[i];
		for (size_t k = 0; k < n->n_output; k++) {
			if (!n->output[k] || !n->output[k][0])
				continue;
			if (sym_get(&producers, n->output[k]) || sym_get(c->names, n->output[k])) {
				rc = ir_errorf(-EINVAL, "%s: node \"%s\" (%s): value \"%s\" is defined twice", c->path,
					       onnx_node_label(n), n->op_type, n->output[k]);
				goto out;
			}
			if ((rc = sym_put(&producers, n->output[k], (struct ir_value *)(uintptr_t)(i + 1))) < 0)
				goto out;
		}
	}
	for (size_t root = 0; root < nn; root++) {
		size_t sp = 0;
		if (state[root])
			continue;
		stack[sp++] = root;
		state[root] = 1;
		while (sp) {
			size_t i = stack[sp - 1];
			const Onnx__NodeProto *n = gp->node[i];
			if (next_in[i] < n->n_input) {
				const char *name = n->input[next_in[i]++];
				if (!name || !name[0] || sym_get(c->names, name))
					continue;
				uintptr_t p = (uintptr_t)sym_get(&producers, name);
				if (!p) {
					rc = ir_errorf(
						-EINVAL,
						"%s: node \"%s\" (%s): input \"%s\" is not defined by any node, input or initializer",
						c->path, onnx_node_label(n), n->op_type, name);
					goto out;
				}
				if (state[p - 1] == 1) {
					rc = ir_errorf(
						-EINVAL,
						"%s: node \"%s\" (%s): input \"%s\" depends on this node's own output (cycle)",
						c->path, onnx_node_label(n), n->op_type, name);
					goto out;
				}
				if (state[p - 1] == 0) {
					state[p - 1] = 1;
					stack[sp++] = p - 1;
				}
				continue;
			}
			if ((rc = import_node(c, n)) < 0)
				goto out;
			state[i] = 2;
			sp--;
		}
	}
out:
	sym_free(&producers);
	ir_free(state);
	ir_free(stack);
	ir_free(next_in);
	return rc;
}

static void fill_info(struct onnx_ctx *c, const Onnx__ModelProto *m, struct onnx_model_info *info)
{
	const Onnx__GraphProto *gp = m->graph;
	memset(info, 0, sizeof *info);
	info->opset = c->opset;
	info->producer = ir_graph_strdup(c->g, m->producer_name);
	info->op_names = ir_graph_alloc(c->g, (gp->n_node + 1) * sizeof *info->op_names);
	info->op_counts = ir_graph_alloc(c->g, (gp->n_node + 1) * sizeof *info->op_counts);
	if (!info->op_names || !info->op_counts)
		return;
	for (size_t i = 0; i < gp->n_node; i++) {
		const char *op = gp->node[i]->op_type ? gp->node[i]->op_type : "";
		int k = 0;
		while (k < info->nops && strcmp(info->op_names[k], op) != 0)
			k++;
		if (k == info->nops) {
			/* insertion keeps names sorted */
			while (k > 0 && strcmp(info->op_names[k - 1], op) > 0) {
				info->op_names[k] = info->op_names[k - 1];
				info->op_counts[k] = info->op_counts[k - 1];
				k--;
			}
			info->op_names[k] = ir_graph_strdup(c->g, op);
			info->op_counts[k] = 0;
			info->nops++;
		}
		info->op_counts[k]++;
	}
}

void onnx_import_opts_init(struct onnx_import_opts *o)
{
	memset(o, 0, sizeof *o);
}

static char *dir_of(struct ir_graph *g, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return (char *)ir_graph_strdup(g, ".");
	size_t n = (size_t)(slash - path);
	char *d = ir_graph_alloc(g, n + 2);
	if (d)
		memcpy(d, path, n ? n : 1);
	return d;
}

struct ir_graph *onnx_model_import(const struct onnx_model *model, const struct onnx_import_opts *opts,
				   struct onnx_model_info *info)
{
	struct onnx_import_opts dflt;
	struct symtab names = { 0 };
	const char *path = model->path;
	struct onnx_ctx c = { .path = path, .opts = opts, .names = &names };
	const Onnx__ModelProto *m = model->proto;
	struct onnx_model *own = (struct onnx_model *)model; /* its count of references alone */
	if (!opts) {
		onnx_import_opts_init(&dflt);
		c.opts = &dflt;
	}
	if (!m->graph) {
		ir_errorf(-EINVAL, "%s: the model has no graph", path);
		return NULL;
	}
	c.g = ir_graph_new();
	__atomic_add_fetch(&own->refs, 1, __ATOMIC_ACQ_REL); /* the graph's: raw_data stays in the model */
	if (!c.g || ir_graph_on_free(c.g, model_unref, own) < 0) {
		model_unref(own);
		ir_graph_free(c.g);
		ir_errorf(-ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	c.base_dir = dir_of(c.g, path);
	const Onnx__GraphProto *gp = m->graph;
	if (import_opset(&c, m) < 0)
		goto fail;
	for (size_t i = 0; i < gp->n_initializer; i++)
		if (import_initializer(&c, gp->initializer[i]) < 0)
			goto fail;
	if (check_consts(&c, gp) < 0)
		goto fail;
	declared_kinds(&c, gp);
	for (size_t i = 0; i < gp->n_input; i++) {
		/* old exporters list initializers among the inputs too */
		if (gp->input[i]->name && sym_get(&names, gp->input[i]->name))
			continue;
		if (import_input(&c, gp->input[i]) < 0)
			goto fail;
	}
	if (gp->n_sparse_initializer) {
		ir_errorf(-ENOTSUP, "%s: sparse initializers are not supported", path);
		goto fail;
	}
	if (gp->n_output == 0) {
		ir_errorf(-EINVAL, "%s: the graph has no outputs (nothing to compute)", path);
		goto fail;
	}
	if (import_nodes(&c, gp) < 0)
		goto fail;
	for (size_t i = 0; i < gp->n_output; i++) {
		const char *name = gp->output[i]->name ? gp->output[i]->name : "";
		struct ir_value *v = sym_get(&names, name);
		if (!v) {
			ir_errorf(-EINVAL, "%s: graph output \"%s\" is not produced by any node", path, name);
			goto fail;
		}
		if (onnx_seq_find(&c, name)) {
			ir_errorf(-ENOTSUP, "%s: graph output \"%s\" is a sequence (pcc's outputs are tensors)", path,
				  name);
			goto fail;
		}
		if (ir_graph_add_output(c.g, v, name) < 0)
			goto fail;
	}
	if (ir_graph_dce(c.g) < 0)
		goto fail;
	if (ir_verify(c.g) < 0) {
		ir_error_prefix("%s: internal error after import", path);
		goto fail;
	}
	if (info)
		fill_info(&c, m, info);
	sym_free(&names);
	return c.g;
fail:
	/* every message names the file, whatever failed */
	if (strncmp(ir_error(), path, strlen(path)) != 0)
		ir_error_prefix("%s", path);
	sym_free(&names);
	ir_graph_free(c.g);
	return NULL;
}

struct ir_graph *onnx_import(const char *path, const struct onnx_import_opts *opts, struct onnx_model_info *info)
{
	struct onnx_model *m = onnx_model_read(path);
	if (!m)
		return NULL;
	struct ir_graph *g = onnx_model_import(m, opts, info);
	onnx_model_free(m);
	return g;
}
