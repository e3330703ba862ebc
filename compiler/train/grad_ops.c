/*
 * grad_ops.c: the builders gradient rules emit core ops through. Every
 * builder passes NULL through and records the first failure in b->err (see
 * grad_internal.h), so a rule is a straight line of builder calls.
 */
#include <errno.h>
#include <string.h>

#include "compiler/train/grad_internal.h"

struct ir_value *gb_op(struct gb *b, enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a)
{
	static const struct ir_attrs none;
	if (b->err)
		return NULL;
	for (int i = 0; i < nin; i++)
		if (!in[i]) {
			b->err = ir_errorf(-EINVAL, "gradient of %s: missing operand", ir_op_name(op));
			return NULL;
		}
	struct ir_node *n = ir_graph_add_node(b->g, op, b->name, nin, in, a ? a : &none);
	if (!n) {
		b->err = ir_error_code() ? ir_error_code() : -ENOMEM;
		return NULL;
	}
	if (b->tagged)
		n->tag = b->tag;
	n->recompute = b->recompute;
	return n->out[0];
}

struct ir_value *gb_un(struct gb *b, enum ir_op op, struct ir_value *x)
{
	return gb_op(b, op, 1, &x, NULL);
}

struct ir_value *gb_bin(struct gb *b, enum ir_op op, struct ir_value *x, struct ir_value *y)
{
	struct ir_value *in[2] = { x, y };
	return gb_op(b, op, 2, in, NULL);
}

struct ir_value *gb_select(struct gb *b, struct ir_value *c, struct ir_value *x, struct ir_value *y)
{
	struct ir_value *in[3] = { c, x, y };
	return gb_op(b, IR_OP_SELECT, 3, in, NULL);
}

struct ir_value *gb_full(struct gb *b, enum ir_dtype t, const struct ir_shape *s, double v)
{
	if (b->err)
		return NULL;
	void *data = ir_graph_alloc(b->g, ir_dtype_size(t));
	if (!data) {
		b->err = -ENOMEM;
		return NULL;
	}
	struct ir_tensor one = { .dtype = t, .shape = { 0 }, .data = data };
	if (ir_dtype_is_float(t))
		ir_tensor_set_f64(&one, 0, v);
	else
		ir_tensor_set_i64(&one, 0, (int64_t)v);
	struct ir_attrs a = { .dtype = t, .data = data };
	struct ir_value *c = gb_op(b, IR_OP_CONSTANT, 0, NULL, &a);
	if (!c || s->rank == 0)
		return c;
	struct ir_attrs br = { .shape = *s };
	return gb_op(b, IR_OP_BROADCAST, 1, &c, &br);
}

struct ir_value *gb_like(struct gb *b, const struct ir_value *x, double v)
{
	return x ? gb_full(b, x->dtype, &x->shape, v) : NULL;
}

struct ir_value *gb_scale(struct gb *b, struct ir_value *x, double v)
{
	return gb_bin(b, IR_OP_MUL, x, gb_like(b, x, v));
}

struct ir_value *gb_offset(struct gb *b, struct ir_value *x, double v)
{
	return gb_bin(b, IR_OP_ADD, x, gb_like(b, x, v));
}

struct ir_value *gb_convert(struct gb *b, struct ir_value *x, enum ir_dtype t)
{
	if (x && x->dtype == t)
		return x;
	struct ir_attrs a = { .dtype = t };
	return gb_op(b, IR_OP_CONVERT, 1, &x, &a);
}

struct ir_value *gb_reshape(struct gb *b, struct ir_value *x, const struct ir_shape *s)
{
	if (x && ir_shape_eq(&x->shape, s))
		return x;
	struct ir_attrs a = { .shape = *s };
	return gb_op(b, IR_OP_RESHAPE, 1, &x, &a);
}

struct ir_value *gb_transpose(struct gb *b, struct ir_value *x, const int64_t *perm)
{
	if (!x)
		return gb_op(b, IR_OP_TRANSPOSE, 1, &x, NULL);
	struct ir_attrs a = { .axes = { .n = x->shape.rank } };
	bool identity = true;
	for (int i = 0; i < x->shape.rank; i++) {
		a.axes.v[i] = perm[i];
		identity = identity && perm[i] == i;
	}
	return identity ? x : gb_op(b, IR_OP_TRANSPOSE, 1, &x, &a);
}

struct ir_value *gb_broadcast(struct gb *b, struct ir_value *x, const struct ir_shape *s, const struct ir_ilist *axes)
{
	if (x && ir_shape_eq(&x->shape, s))
		return x;
	struct ir_attrs a = { .shape = *s, .axes = *axes };
	return gb_op(b, IR_OP_BROADCAST, 1, &x, &a);
}

struct ir_value *gb_sum(struct gb *b, struct ir_value *x, const struct ir_ilist *axes)
{
	if (x && axes->n == 0)
		return x;
	struct ir_attrs a = { .axes = *axes };
	return gb_op(b, IR_OP_REDUCE_SUM, 1, &x, &a);
}

struct ir_value *gb_rowsum(struct gb *b, struct ir_value *g, int64_t axis, int64_t last)
{
	if (!g)
		return NULL;
	struct ir_ilist red = { 0 }, keep = { 0 };
	for (int i = 0; i < g->shape.rank; i++) {
		if (i >= axis && i <= last)
			red.v[red.n++] = i;
		else
			keep.v[keep.n++] = i;
	}
	return gb_broadcast(b, gb_sum(b, g, &red), &g->shape, &keep);
}

struct ir_value *gb_slice(struct gb *b, struct ir_value *x, const struct ir_ilist *start, const struct ir_ilist *limit,
			  const struct ir_ilist *stride)
{
	struct ir_attrs a = { .start = *start, .limit = *limit, .stride = *stride };
	return gb_op(b, IR_OP_SLICE, 1, &x, &a);
}

struct ir_value *gb_slice_dim(struct gb *b, struct ir_value *x, int dim, int64_t start, int64_t limit)
{
	if (!x)
		return NULL;
	struct ir_ilist st = { .n = x->shape.rank }, li = st, sd = st;
	for (int i = 0; i < x->shape.rank; i++) {
		li.v[i] = x->shape.dims[i];
		sd.v[i] = 1;
	}
	st.v[dim] = start;
	li.v[dim] = limit;
	if (start == 0 && limit == x->shape.dims[dim])
		return x;
	return gb_slice(b, x, &st, &li, &sd);
}

struct ir_value *gb_pad(struct gb *b, struct ir_value *x, const struct ir_ilist *lo, const struct ir_ilist *hi,
			double value)
{
	bool any = false;
	for (int i = 0; i < lo->n; i++)
		any = any || lo->v[i] || hi->v[i];
	if (x && !any)
		return x;
	struct ir_attrs a = { .pad_lo = *lo, .pad_hi = *hi, .mode = IR_PAD_CONSTANT, .value = value };
	return gb_op(b, IR_OP_PAD, 1, &x, &a);
}

/* g spread over a grid along the dims of `dims` (a mask): element i of dim
 * d lands at start[d] + i * stride[d] of a zero tensor whose dim d has
 * len[d] elements. One pad does it all, between two reshapes: each dim
 * with stride s > 1 splits into [n, 1] and pads to [q + n + e, s] (start =
 * q s + o: o zeros before each element and s - 1 - o after it, q and e
 * whole rows before and after), which merges into (q + n + e) s elements;
 * a dim with stride 1 pads by start before and what len leaves after;
 * then one slice cuts each dim to len. (Zero insertion pad by pad, dim by
 * dim, took four kernels a dim: two pads, two slices.) */
static struct ir_value *spread(struct gb *b, struct ir_value *g, unsigned dims, const int64_t *len,
			       const struct ir_ilist *start, const struct ir_ilist *stride)
{
	int r = g->shape.rank, k = 0;
	struct ir_shape split = { 0 }, merged = g->shape;
	struct ir_ilist lo = { 0 }, hi = { 0 }, st = { .n = r }, li = { .n = r }, one = { .n = r };
	bool cut = false;
	for (int d = 0; d < r; d++) {
		int64_t n = g->shape.dims[d], s = stride->v[d], q = start->v[d] / s, o = start->v[d] % s;
		bool on = dims >> d & 1;
		li.v[d] = on ? len[d] : n;
		one.v[d] = 1;
		split.dims[k] = n;
		lo.v[k] = on ? q : 0;
		if (!on || s == 1) {
			hi.v[k] = on && len[d] > q + n ? len[d] - q - n : 0;
			merged.dims[d] = n + lo.v[k] + hi.v[k];
			k++;
		} else {
			int64_t rows = q + n;
			hi.v[k] = len[d] > rows * s ? (len[d] - rows * s + s - 1) / s : 0;
			merged.dims[d] = (rows + hi.v[k]) * s;
			k++;
			split.dims[k] = 1;
			lo.v[k] = o;
			hi.v[k] = s - 1 - o;
			k++;
		}
		cut = cut || merged.dims[d] != li.v[d];
	}
	split.rank = lo.n = hi.n = k;
	struct ir_value *t = gb_reshape(b, gb_pad(b, gb_reshape(b, g, &split), &lo, &hi, 0), &merged);
	return t && cut ? gb_slice(b, t, &st, &li, &one) : t;
}

/* spread over every dim of `want` (a mask), as many at a time as the rank
 * limit lets a split shape hold. */
static struct ir_value *spread_all(struct gb *b, struct ir_value *g, unsigned want, const int64_t *len,
				   const struct ir_ilist *start, const struct ir_ilist *stride)
{
	while (g && want) {
		unsigned dims = 0;
		int rank = g->shape.rank;
		for (int d = 0; d < g->shape.rank; d++)
			if (want >> d & 1 && (stride->v[d] == 1 || rank < IR_MAX_RANK)) {
				rank += stride->v[d] > 1;
				dims |= 1u << d;
			}
		g = spread(b, g, dims, len, start, stride);
		want &= ~dims;
	}
	return g;
}

struct ir_value *gb_dilate(struct gb *b, struct ir_value *g, const struct ir_ilist *stride)
{
	if (!g)
		return NULL;
	int64_t len[IR_MAX_RANK];
	struct ir_ilist zero = { .n = g->shape.rank };
	struct ir_shape s = g->shape;
	unsigned want = 0;
	for (int d = 0; d < g->shape.rank; d++) {
		int64_t n = g->shape.dims[d];
		len[d] = s.dims[d] = n ? (n - 1) * stride->v[d] + 1 : 0;
		want |= (unsigned)(stride->v[d] > 1) << d;
	}
	if (ir_shape_numel(&g->shape) == 0)
		return gb_full(b, g->dtype, &s, 0);
	return spread_all(b, g, want, len, &zero, stride);
}

struct ir_value *gb_unslice(struct gb *b, struct ir_value *g, const struct ir_shape *full, const struct ir_ilist *start,
			    const struct ir_ilist *stride)
{
	if (!g)
		return NULL;
	if (ir_shape_numel(&g->shape) == 0)
		return gb_full(b, g->dtype, full, 0);
	return spread_all(b, g, (1u << full->rank) - 1, full->dims, start, stride);
}

struct ir_value *gb_accumulate(struct gb *b, struct ir_value *a, struct ir_value *c)
{
	if (!a)
		return c;
	if (!c)
		return a;
	return gb_bin(b, IR_OP_ADD, a, c);
}
