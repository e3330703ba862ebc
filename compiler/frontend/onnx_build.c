/*
 * onnx_build.c: the builders ONNX handlers emit core ops through, and
 * compile-time constants.
 *
 * b_* builders broadcast numpy-style where ONNX does (core ops take equal
 * shapes), skip identity reshapes/transposes/slices, and fold any op whose
 * operands are all constants and whose result is small by running the
 * reference interpreter on it: shape arithmetic (Shape -> Gather -> Concat
 * -> Reshape) becomes CONSTANT nodes while the graph is built. The folded
 * node stays behind, dead, and the importer's final DCE removes it.
 *
 * An initializer stored as external data is a parameter whose bytes stay
 * in their file (onnx_import.c). Its values are read only where import
 * needs them: a handler asks for a constant (onnx_const_view: a Reshape's
 * shape, Slice's starts, Pad's value), or an op it feeds folds (an integer
 * or bool one, as it would folded inline: a Gather index in a shape
 * computation, a mask sliced to the sequence). A file that cannot be read
 * leaves the tensor runtime data, unless its values are needed: then the
 * message names the initializer and the file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "compiler/frontend/onnx_internal.h"
#include "kernels/kernels.h"

/* Results of constant folding stay this small (elements); larger constant
 * subgraphs are left for the runtime. */
#define FOLD_MAX_NUMEL (1 << 16)

/* ---- constants ---------------------------------------------------------------- */

bool onnx_is_const(const struct ir_value *v)
{
	return v && v->kind == IR_VAL_NODE && v->def->op == IR_OP_CONSTANT;
}

bool onnx_is_external(const struct ir_value *v)
{
	return v && v->kind == IR_VAL_PARAM && !v->data.bytes && v->data.path;
}

/* Reads external parameter v's bytes into the graph: from then on it is a
 * parameter with inline bytes. A file that cannot be read: -errno (-EIO
 * when short) with the words `initializer "NAME", whose values are in the
 * external file "FILE", which cannot be read: WHY`. */
static int load_external(struct onnx_ctx *c, struct ir_value *v)
{
	struct ir_data *d = &v->data;
	size_t n = (size_t)d->nbytes;
	const char *why = NULL;
	int rc = 0;
	uint8_t *buf = NULL;
	/* a regular file inside the model's directory, never a link or a FIFO */
	int fd = ir_data_open(d, v->name);
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (fd < 0) /* a missing file as the others; a link or a FIFO in ir_data_open's words */
		rc = fd, why = fd == -ENOENT || fd == -EACCES ? strerror(-fd) : ir_error();
	else if (!f)
		rc = -errno, why = strerror(errno);
	else if (!(buf = ir_graph_alloc(c->g, n ? n : 1)))
		rc = -ENOMEM, why = "out of memory";
	else if (fseeko(f, (off_t)d->offset, SEEK_SET) != 0 || fread(buf, 1, n, f) != n)
		rc = -EIO, why = "it is shorter than the initializer's offset and length";
	if (f)
		fclose(f);
	else if (fd >= 0)
		close(fd);
	if (rc < 0) {
		char w[1024];
		snprintf(w, sizeof w, "%s", why);
		return ir_errorf(
			rc,
			"initializer \"%s\", whose values are in the external file \"%s\", which cannot be read: %s",
			v->name, d->path, w);
	}
	d->bytes = buf;
	d->path = NULL;
	d->base_dir = NULL;
	d->offset = 0;
	return 0;
}

/* The first external parameter whose bytes could not be read that v is
 * computed from (v itself included), looking back at most 64 nodes; NULL
 * when none. */
static struct ir_value *external_source(struct ir_value *v)
{
	struct ir_value *stack[64];
	int n = 0, seen = 0;
	stack[n++] = v;
	while (n > 0 && seen++ < 64) {
		struct ir_value *x = stack[--n];
		if (onnx_is_external(x))
			return x;
		if (x->kind != IR_VAL_NODE)
			continue;
		for (int i = 0; i < x->def->nin && n < 64; i++)
			stack[n++] = x->def->in[i];
	}
	return NULL;
}

int onnx_const_view(struct onnx_ctx *c, struct ir_value *v, struct ir_tensor *t, const char *what)
{
	if (!v)
		return onnx_fail(c, "%s is missing", what);
	t->dtype = v->dtype;
	t->shape = v->shape;
	if (onnx_is_const(v)) {
		t->data = (void *)v->def->a.data;
		return 0;
	}
	if (onnx_is_external(v) && load_external(c, v) < 0)
		return ir_error_code() == -ENOMEM
			       ? -ENOMEM
			       : onnx_fail(c, "%s must be known at compile time: it is %s", what, ir_error());
	if (v->kind == IR_VAL_PARAM && v->data.bytes) {
		t->data = (void *)v->data.bytes;
		return 0;
	}
	if (v->kind == IR_VAL_INPUT)
		return onnx_fail(c,
				 "%s must be a constant known at compile time (it is the graph input \"%s\": "
				 "bind it with --const %s=FILE.pb)",
				 what, v->name ? v->name : "", v->name ? v->name : "NAME");
	struct ir_value *x = external_source(v);
	if (x && load_external(c, x) < 0 && ir_error_code() != -ENOMEM)
		return onnx_fail(c, "%s must be known at compile time: it is computed from %s", what, ir_error());
	return onnx_fail(c, "%s must be a constant known at compile time (it is computed at run time)", what);
}

int onnx_const_scalar(struct onnx_ctx *c, struct ir_value *v, double *out, const char *what)
{
	struct ir_tensor t;
	if (onnx_const_view(c, v, &t, what) < 0)
		return -EINVAL;
	if (ir_shape_numel(&t.shape) != 1)
		return onnx_fail(c, "%s must hold one element, not %lld", what, (long long)ir_shape_numel(&t.shape));
	*out = ir_tensor_get_f64(&t, 0);
	return 0;
}

int onnx_const_ints(struct onnx_ctx *c, struct ir_value *v, int64_t *out, int max, const char *what)
{
	struct ir_tensor t;
	if (onnx_const_view(c, v, &t, what) < 0)
		return -EINVAL;
	if (!ir_dtype_is_int(t.dtype))
		return onnx_fail(c, "%s must be integers, not %s", what, ir_dtype_name(t.dtype));
	int64_t n = ir_shape_numel(&t.shape);
	if (n > max)
		return onnx_fail(c, "%s has %lld entries (at most %d supported)", what, (long long)n, max);
	for (int64_t i = 0; i < n; i++)
		out[i] = ir_tensor_get_i64(&t, i);
	return (int)n;
}

/* ---- builders ---------------------------------------------------------------- */

/* An operand folding may read: a constant, or an integer or bool
 * initializer (external, or read already), which inline would have been
 * a constant. */
static bool fold_operand(const struct ir_value *v)
{
	return onnx_is_const(v) ||
	       (v->kind == IR_VAL_PARAM && !ir_dtype_is_float(v->dtype) && (v->data.bytes || v->data.path));
}

static const void *fold_bytes(const struct ir_value *v)
{
	return onnx_is_const(v) ? v->def->a.data : v->data.bytes;
}

/* A float broadcast that replicates its constant (an activation's 3 or
 * 0.5 against a [1,576,7,7] map): left a broadcast node, which kernels
 * compute as a splat, rather than folded into a constant of the result's
 * size, which every kernel reading it would carry (MobileNetV3-small's
 * hardswish constants made 2.2 MB of its object code, and half of its
 * compile time in LLVM). Integer and bool ones fold: shape arithmetic
 * and masks read their values. */
static bool splat(const struct ir_node *n)
{
	return n->op == IR_OP_BROADCAST && ir_dtype_is_float(n->out[0]->dtype) &&
	       ir_shape_numel(&n->out[0]->shape) > ir_shape_numel(&n->in[0]->shape);
}

/* Whether n folds; reads the external operands it needs (a file that
 * cannot be read leaves n to the runtime). */
static bool foldable(struct onnx_ctx *c, const struct ir_node *n)
{
	if (n->op == IR_OP_CONSTANT || splat(n))
		return false;
	for (int i = 0; i < n->nin; i++)
		if (!fold_operand(n->in[i]))
			return false;
	for (int i = 0; i < n->nout; i++)
		if (ir_shape_numel(&n->out[i]->shape) > FOLD_MAX_NUMEL)
			return false;
	for (int i = 0; i < n->nin; i++)
		if (onnx_is_external(n->in[i]) && load_external(c, n->in[i]) < 0) {
			ir_error_clear();
			return false;
		}
	return true;
}

/* Evaluates n with the interpreter and returns the CONSTANT node whose
 * results replace n's (n itself becomes dead and is removed later). */
static struct ir_node *fold(struct onnx_ctx *c, struct ir_node *n)
{
	struct ir_tensor in[8], out[2] = { 0 };
	if (n->nin > 8)
		return n;
	for (int i = 0; i < n->nin; i++)
		in[i] = (struct ir_tensor){ n->in[i]->dtype, n->in[i]->shape, (void *)fold_bytes(n->in[i]) };
	if (interp_node(n, in, out) < 0) {
		/* the importer names the ONNX node; keep only the kernel's reason */
		char why[1024];
		const char *m = ir_error(), *p = strstr(m, "): ");
		snprintf(why, sizeof why, "%s", p ? p + 3 : m);
		ir_errorf(ir_error_code(), "%s", why);
		return NULL;
	}
	struct ir_node *k = NULL;
	if (n->nout == 1) {
		struct ir_attrs a = { .dtype = out[0].dtype, .shape = out[0].shape, .data = out[0].data };
		k = ir_graph_add_node(c->g, IR_OP_CONSTANT, n->name, 0, NULL, &a);
	} else {
		/* multi-result ops (topk) fold into one constant per result;
		 * return the original node with its results redirected */
		k = n;
		for (int i = 0; i < n->nout; i++) {
			struct ir_attrs a = { .dtype = out[i].dtype, .shape = out[i].shape, .data = out[i].data };
			struct ir_node *ki = ir_graph_add_node(c->g, IR_OP_CONSTANT, n->name, 0, NULL, &a);
			if (!ki) {
				k = NULL;
				break;
			}
			ir_graph_replace_uses(c->g, n->out[i], ki->out[0]);
			n->out[i] = ki->out[0];
		}
	}
	for (int i = 0; i < n->nout; i++)
		ir_tensor_free(&out[i]);
	return k;
}

struct ir_node *b_node(struct onnx_ctx *c, enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a)
{
	struct ir_node *n = ir_graph_add_node(c->g, op, onnx_node_label(c->node), nin, in, a);
	if (n && foldable(c, n))
		return fold(c, n);
	return n;
}

struct ir_value *b_op(struct onnx_ctx *c, enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a)
{
	struct ir_node *n = b_node(c, op, nin, in, a);
	return n ? n->out[0] : NULL;
}

struct ir_value *b_unary(struct onnx_ctx *c, enum ir_op op, struct ir_value *x)
{
	struct ir_attrs a = { 0 };
	return x ? b_op(c, op, 1, &x, &a) : NULL;
}

struct ir_value *b_broadcast_to(struct onnx_ctx *c, struct ir_value *x, const struct ir_shape *s)
{
	char bx[IR_SHAPE_STR_MAX], bs[IR_SHAPE_STR_MAX];
	if (!x)
		return NULL;
	if (ir_shape_eq(&x->shape, s))
		return x;
	int off = s->rank - x->shape.rank;
	if (off < 0)
		goto bad;
	struct ir_attrs a = { .shape = *s };
	/* Drop size-1 dims that broadcast so the op sees only real dims. */
	struct ir_shape keep = { 0 };
	for (int i = 0; i < x->shape.rank; i++) {
		int64_t d = x->shape.dims[i];
		if (d != 1 && d != s->dims[off + i])
			goto bad;
		if (d == s->dims[off + i]) {
			keep.dims[keep.rank++] = d;
			a.axes.v[a.axes.n++] = off + i;
		}
	}
	if (keep.rank != x->shape.rank && !(x = b_reshape(c, x, &keep)))
		return NULL;
	return b_op(c, IR_OP_BROADCAST, 1, &x, &a);
bad:
	ir_errorf(-EINVAL, "shape %s does not broadcast to %s", ir_shape_str(&x->shape, bx, sizeof bx),
		  ir_shape_str(s, bs, sizeof bs));
	return NULL;
}

static int broadcast_shape(const struct ir_shape *x, const struct ir_shape *y, struct ir_shape *s)
{
	char bx[IR_SHAPE_STR_MAX], by[IR_SHAPE_STR_MAX];
	s->rank = x->rank > y->rank ? x->rank : y->rank;
	for (int i = 0; i < s->rank; i++) {
		int xi = i - (s->rank - x->rank), yi = i - (s->rank - y->rank);
		int64_t dx = xi >= 0 ? x->dims[xi] : 1, dy = yi >= 0 ? y->dims[yi] : 1;
		if (dx != dy && dx != 1 && dy != 1)
			return ir_errorf(-EINVAL, "shapes %s and %s do not broadcast", ir_shape_str(x, bx, sizeof bx),
					 ir_shape_str(y, by, sizeof by));
		s->dims[i] = dx == 1 ? dy : dx;
	}
	return 0;
}

struct ir_value *b_binary(struct onnx_ctx *c, enum ir_op op, struct ir_value *x, struct ir_value *y)
{
	struct ir_shape s;
	if (!x || !y || broadcast_shape(&x->shape, &y->shape, &s) < 0)
		return NULL;
	struct ir_value *in[2] = { b_broadcast_to(c, x, &s), b_broadcast_to(c, y, &s) };
	struct ir_attrs a = { 0 };
	return in[0] && in[1] ? b_op(c, op, 2, in, &a) : NULL;
}

struct ir_value *b_select(struct onnx_ctx *c, struct ir_value *cond, struct ir_value *x, struct ir_value *y)
{
	struct ir_shape s, s2;
	if (!cond || !x || !y || broadcast_shape(&x->shape, &y->shape, &s) < 0 ||
	    broadcast_shape(&cond->shape, &s, &s2) < 0)
		return NULL;
	struct ir_value *in[3] = { b_broadcast_to(c, cond, &s2), b_broadcast_to(c, x, &s2), b_broadcast_to(c, y, &s2) };
	struct ir_attrs a = { 0 };
	return in[0] && in[1] && in[2] ? b_op(c, IR_OP_SELECT, 3, in, &a) : NULL;
}

struct ir_value *b_convert(struct onnx_ctx *c, struct ir_value *x, enum ir_dtype t)
{
	if (!x || x->dtype == t)
		return x;
	struct ir_attrs a = { .dtype = t };
	return b_op(c, IR_OP_CONVERT, 1, &x, &a);
}

struct ir_value *b_reshape(struct onnx_ctx *c, struct ir_value *x, const struct ir_shape *s)
{
	if (!x || ir_shape_eq(&x->shape, s))
		return x;
	struct ir_attrs a = { .shape = *s };
	return b_op(c, IR_OP_RESHAPE, 1, &x, &a);
}

struct ir_value *b_transpose(struct onnx_ctx *c, struct ir_value *x, const int64_t *perm)
{
	if (!x)
		return NULL;
	struct ir_attrs a = { .axes.n = x->shape.rank };
	bool identity = true;
	for (int i = 0; i < x->shape.rank; i++) {
		a.axes.v[i] = perm[i];
		identity &= perm[i] == i;
	}
	return identity ? x : b_op(c, IR_OP_TRANSPOSE, 1, &x, &a);
}

struct ir_value *b_reduce(struct onnx_ctx *c, enum ir_op op, struct ir_value *x, const int64_t *axes, int naxes,
			  bool keepdims)
{
	if (!x)
		return NULL;
	int rank = x->shape.rank;
	bool mark[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < naxes; i++) {
		int64_t ax;
		if (onnx_axis(c, axes[i], rank, &ax) < 0)
			return NULL;
		if (mark[ax]) {
			onnx_fail(c, "axis %lld repeated", (long long)axes[i]);
			return NULL;
		}
		mark[ax] = true;
	}
	struct ir_attrs a = { 0 };
	struct ir_shape kept = x->shape;
	for (int i = 0; i < rank; i++) {
		if (mark[i]) {
			a.axes.v[a.axes.n++] = i;
			kept.dims[i] = 1;
		}
	}
	struct ir_value *r = b_op(c, op, 1, &x, &a);
	return keepdims ? b_reshape(c, r, &kept) : r;
}

struct ir_value *b_slice(struct onnx_ctx *c, struct ir_value *x, int axis, int64_t start, int64_t limit, int64_t stride)
{
	if (!x)
		return NULL;
	struct ir_attrs a = { 0 };
	int r = x->shape.rank;
	a.start.n = a.limit.n = a.stride.n = r;
	for (int i = 0; i < r; i++) {
		a.start.v[i] = i == axis ? start : 0;
		a.limit.v[i] = i == axis ? limit : x->shape.dims[i];
		a.stride.v[i] = i == axis ? stride : 1;
	}
	if (start == 0 && limit == x->shape.dims[axis] && stride == 1)
		return x;
	return b_op(c, IR_OP_SLICE, 1, &x, &a);
}

struct ir_value *b_concat(struct onnx_ctx *c, int n, struct ir_value *const *in, int axis)
{
	if (n == 1)
		return in[0];
	struct ir_attrs a = { .axis = axis };
	return b_op(c, IR_OP_CONCAT, n, in, &a);
}

struct ir_value *b_const(struct onnx_ctx *c, enum ir_dtype t, const struct ir_shape *s, const void *data)
{
	struct ir_attrs a = { .dtype = t, .shape = *s, .data = data };
	return b_op(c, IR_OP_CONSTANT, 0, NULL, &a);
}

struct ir_value *b_scalar(struct onnx_ctx *c, enum ir_dtype t, double v)
{
	unsigned char buf[8];
	struct ir_tensor x = { t, { 0 }, buf };
	ir_tensor_set_f64(&x, 0, v);
	return b_const(c, t, &x.shape, buf);
}

struct ir_value *b_const_i64(struct onnx_ctx *c, int n, const int64_t *v)
{
	struct ir_shape s = { 1, { n } };
	return b_const(c, IR_I64, &s, v);
}

struct ir_value *b_iota(struct onnx_ctx *c, enum ir_dtype t, const struct ir_shape *s, int axis)
{
	struct ir_attrs a = { .dtype = t, .shape = *s, .axis = axis };
	return b_op(c, IR_OP_IOTA, 0, NULL, &a);
}
