/*
 * infer.c: result dtype and shape of every core op, one rule per form of the
 * op table (ops.h).
 *
 * The rules are the op semantics documented in ir.h; every failure names
 * the op, the operand shapes and the rule that was broken, e.g.
 *   dot: contracting dims differ: lhs f32[8,64] dim 1 is 64, rhs f32[32,16] dim 0 is 32
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "ir/ir.h"

#define SHAPE(v, buf) ir_shape_str(&(v)->shape, buf, sizeof buf)

static int fail(enum ir_op op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(enum ir_op op, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ir_errorf(-EINVAL, "%s: %s", ir_op_name(op), msg);
}

static int check_axis(enum ir_op op, int64_t axis, int rank)
{
	if (axis < 0 || axis >= rank)
		return fail(op, "axis %lld out of range for rank %d", (long long)axis, rank);
	return 0;
}

/* Axes must be valid, distinct and (when sorted) increasing. */
static int check_axes(enum ir_op op, const struct ir_ilist *l, int rank, bool sorted)
{
	unsigned seen = 0;
	if (l->n < 0 || l->n > rank)
		return fail(op, "%d axes for rank %d", l->n, rank);
	for (int i = 0; i < l->n; i++) {
		if (check_axis(op, l->v[i], rank) < 0)
			return -EINVAL;
		if (seen & (1u << l->v[i]))
			return fail(op, "axis %lld repeated", (long long)l->v[i]);
		if (sorted && i > 0 && l->v[i] < l->v[i - 1])
			return fail(op, "axes must be increasing");
		seen |= 1u << l->v[i];
	}
	return 0;
}

static int same_shape_operands(enum ir_op op, int nin, struct ir_value *const *in)
{
	char a[IR_SHAPE_STR_MAX], b[IR_SHAPE_STR_MAX];
	for (int i = 1; i < nin; i++) {
		if (!ir_shape_eq(&in[0]->shape, &in[i]->shape))
			return fail(op, "operand shapes %s and %s differ (broadcast explicitly)", SHAPE(in[0], a),
				    SHAPE(in[i], b));
	}
	return 0;
}

static int infer_dot(const struct ir_attrs *a, struct ir_value *const *in, struct ir_shape *s)
{
	const struct ir_value *l = in[0], *r = in[1];
	char bl[IR_SHAPE_STR_MAX], br[IR_SHAPE_STR_MAX];
	unsigned lused = 0, rused = 0;
	if (a->lhs_batch.n != a->rhs_batch.n || a->lhs_contract.n != a->rhs_contract.n)
		return fail(IR_OP_DOT, "batch or contracting dim lists differ in length");
	const struct ir_ilist *lists[4] = { &a->lhs_batch, &a->lhs_contract, &a->rhs_batch, &a->rhs_contract };
	for (int k = 0; k < 4; k++) {
		const struct ir_ilist *li = lists[k];
		int rank = k < 2 ? l->shape.rank : r->shape.rank;
		unsigned *used = k < 2 ? &lused : &rused;
		if (li->n < 0 || li->n > rank)
			return fail(IR_OP_DOT, "too many dims in a dim list");
		for (int i = 0; i < li->n; i++) {
			if (check_axis(IR_OP_DOT, li->v[i], rank) < 0)
				return -EINVAL;
			if (*used & (1u << li->v[i]))
				return fail(IR_OP_DOT, "dim %lld listed twice", (long long)li->v[i]);
			*used |= 1u << li->v[i];
		}
	}
	for (int i = 0; i < a->lhs_batch.n; i++) {
		if (l->shape.dims[a->lhs_batch.v[i]] != r->shape.dims[a->rhs_batch.v[i]])
			return fail(IR_OP_DOT, "batch dims differ: lhs %s dim %lld vs rhs %s dim %lld", SHAPE(l, bl),
				    (long long)a->lhs_batch.v[i], SHAPE(r, br), (long long)a->rhs_batch.v[i]);
	}
	for (int i = 0; i < a->lhs_contract.n; i++) {
		if (l->shape.dims[a->lhs_contract.v[i]] != r->shape.dims[a->rhs_contract.v[i]])
			return fail(IR_OP_DOT,
				    "operand shapes %s and %s do not contract (lhs dim %lld vs rhs dim %lld)",
				    SHAPE(l, bl), SHAPE(r, br), (long long)a->lhs_contract.v[i],
				    (long long)a->rhs_contract.v[i]);
	}
	int rank = a->lhs_batch.n + (l->shape.rank - a->lhs_batch.n - a->lhs_contract.n) +
		   (r->shape.rank - a->rhs_batch.n - a->rhs_contract.n);
	if (rank > IR_MAX_RANK)
		return fail(IR_OP_DOT, "result rank %d exceeds %d", rank, IR_MAX_RANK);
	s->rank = 0;
	for (int i = 0; i < a->lhs_batch.n; i++)
		s->dims[s->rank++] = l->shape.dims[a->lhs_batch.v[i]];
	for (int i = 0; i < l->shape.rank; i++)
		if (!(lused & (1u << i)))
			s->dims[s->rank++] = l->shape.dims[i];
	for (int i = 0; i < r->shape.rank; i++)
		if (!(rused & (1u << i)))
			s->dims[s->rank++] = r->shape.dims[i];
	return 0;
}

static int window_dim(enum ir_op op, int64_t size, int64_t win, int64_t stride, int64_t lo, int64_t hi, int64_t dil,
		      int64_t *out)
{
	if (win < 1 || stride < 1 || dil < 1 || lo < 0 || hi < 0)
		return fail(op, "window %lld, stride %lld, dilation %lld and pads %lld/%lld must be positive",
			    (long long)win, (long long)stride, (long long)dil, (long long)lo, (long long)hi);
	if (win > IR_MAX_NUMEL || dil > IR_MAX_NUMEL || lo > IR_MAX_NUMEL || hi > IR_MAX_NUMEL)
		return fail(op, "window or padding too large");
	int64_t span = dil * (win - 1) + 1, padded = size + lo + hi;
	if (padded < span)
		return fail(op, "window span %lld exceeds padded size %lld", (long long)span, (long long)padded);
	*out = (padded - span) / stride + 1;
	return 0;
}

static int infer_conv(const struct ir_attrs *a, struct ir_value *const *in, struct ir_shape *s)
{
	const struct ir_value *x = in[0], *w = in[1];
	char bx[IR_SHAPE_STR_MAX], bw[IR_SHAPE_STR_MAX];
	int k = x->shape.rank - 2;
	if (k < 1 || w->shape.rank != x->shape.rank)
		return fail(IR_OP_CONV, "input %s and weight %s need equal rank >= 3", SHAPE(x, bx), SHAPE(w, bw));
	if (a->stride.n != k || a->pad_lo.n != k || a->pad_hi.n != k || a->dilation.n != k)
		return fail(IR_OP_CONV, "stride, pads and dilation need %d entries", k);
	if (a->groups < 1 || x->shape.dims[1] % a->groups || w->shape.dims[0] % a->groups ||
	    x->shape.dims[1] != w->shape.dims[1] * a->groups)
		return fail(IR_OP_CONV, "input %s, weight %s and groups %lld disagree on channels", SHAPE(x, bx),
			    SHAPE(w, bw), (long long)a->groups);
	s->rank = x->shape.rank;
	s->dims[0] = x->shape.dims[0];
	s->dims[1] = w->shape.dims[0];
	for (int i = 0; i < k; i++)
		if (window_dim(IR_OP_CONV, x->shape.dims[i + 2], w->shape.dims[i + 2], a->stride.v[i], a->pad_lo.v[i],
			       a->pad_hi.v[i], a->dilation.v[i], &s->dims[i + 2]) < 0)
			return -EINVAL;
	return 0;
}

static int infer_window(enum ir_op op, const struct ir_attrs *a, const struct ir_value *x, struct ir_shape *s)
{
	int r = x->shape.rank;
	if (a->window.n != r || a->stride.n != r || a->pad_lo.n != r || a->pad_hi.n != r || a->dilation.n != r)
		return fail(op, "window, stride, pads and dilation need %d entries", r);
	s->rank = r;
	for (int i = 0; i < r; i++)
		if (window_dim(op, x->shape.dims[i], a->window.v[i], a->stride.v[i], a->pad_lo.v[i], a->pad_hi.v[i],
			       a->dilation.v[i], &s->dims[i]) < 0)
			return -EINVAL;
	return 0;
}

static int infer_broadcast(const struct ir_attrs *a, const struct ir_value *x, struct ir_shape *s)
{
	char bx[IR_SHAPE_STR_MAX], bs[IR_SHAPE_STR_MAX];
	if (ir_shape_check(&a->shape) < 0)
		return -EINVAL;
	if (a->axes.n != x->shape.rank)
		return fail(IR_OP_BROADCAST, "operand %s needs %d axes, got %d", SHAPE(x, bx), x->shape.rank,
			    a->axes.n);
	for (int i = 0; i < a->axes.n; i++) {
		int64_t d = a->axes.v[i];
		if (d < 0 || d >= a->shape.rank || (i > 0 && d <= a->axes.v[i - 1]))
			return fail(IR_OP_BROADCAST, "axes must be increasing result dims");
		if (x->shape.dims[i] != 1 && x->shape.dims[i] != a->shape.dims[d])
			return fail(IR_OP_BROADCAST, "operand %s does not broadcast to %s", SHAPE(x, bx),
				    ir_shape_str(&a->shape, bs, sizeof bs));
	}
	*s = a->shape;
	return 0;
}

static int infer_slice(const struct ir_attrs *a, const struct ir_value *x, struct ir_shape *s)
{
	char bx[IR_SHAPE_STR_MAX];
	int r = x->shape.rank;
	if (a->start.n != r || a->limit.n != r || a->stride.n != r)
		return fail(IR_OP_SLICE, "start, limit and stride need %d entries", r);
	s->rank = r;
	for (int i = 0; i < r; i++) {
		int64_t st = a->start.v[i], li = a->limit.v[i], sd = a->stride.v[i];
		if (st < 0 || st > li || li > x->shape.dims[i] || sd < 1)
			return fail(IR_OP_SLICE, "dim %d: start %lld, limit %lld, stride %lld invalid for %s", i,
				    (long long)st, (long long)li, (long long)sd, SHAPE(x, bx));
		s->dims[i] = (li - st + sd - 1) / sd;
	}
	return 0;
}

static int infer_concat(const struct ir_attrs *a, int nin, struct ir_value *const *in, struct ir_shape *s)
{
	char b0[IR_SHAPE_STR_MAX], bi[IR_SHAPE_STR_MAX];
	if (nin < 1)
		return fail(IR_OP_CONCAT, "needs at least one operand");
	if (check_axis(IR_OP_CONCAT, a->axis, in[0]->shape.rank) < 0)
		return -EINVAL;
	*s = in[0]->shape;
	for (int i = 1; i < nin; i++) {
		const struct ir_shape *o = &in[i]->shape;
		bool ok = o->rank == s->rank && in[i]->dtype == in[0]->dtype;
		for (int d = 0; ok && d < o->rank; d++)
			ok = d == a->axis || o->dims[d] == s->dims[d];
		if (!ok)
			return fail(IR_OP_CONCAT, "operands %s%s and %s%s differ off axis %lld",
				    ir_dtype_name(in[0]->dtype), SHAPE(in[0], b0), ir_dtype_name(in[i]->dtype),
				    SHAPE(in[i], bi), (long long)a->axis);
		s->dims[a->axis] += o->dims[a->axis];
	}
	return ir_shape_check(s) < 0 ? fail(IR_OP_CONCAT, "result too large") : 0;
}

static int infer_pad(const struct ir_attrs *a, const struct ir_value *x, struct ir_shape *s)
{
	int r = x->shape.rank;
	if (a->pad_lo.n != r || a->pad_hi.n != r)
		return fail(IR_OP_PAD, "pads need %d entries", r);
	if (a->mode < IR_PAD_CONSTANT || a->mode > IR_PAD_REFLECT)
		return fail(IR_OP_PAD, "unknown mode %lld", (long long)a->mode);
	s->rank = r;
	for (int i = 0; i < r; i++) {
		int64_t lo = a->pad_lo.v[i], hi = a->pad_hi.v[i], d = x->shape.dims[i];
		if (lo < 0 || hi < 0 || lo > IR_MAX_NUMEL || hi > IR_MAX_NUMEL)
			return fail(IR_OP_PAD, "pads must be non-negative and bounded");
		if (a->mode == IR_PAD_REFLECT && (lo >= d || hi >= d) && (lo || hi))
			return fail(IR_OP_PAD, "reflect pads must be smaller than the dim");
		if (a->mode == IR_PAD_EDGE && d == 0 && (lo || hi))
			return fail(IR_OP_PAD, "edge padding of an empty dim");
		s->dims[i] = d + lo + hi;
	}
	return ir_shape_check(s) < 0 ? fail(IR_OP_PAD, "result too large") : 0;
}

static int infer_gather(const struct ir_attrs *a, struct ir_value *const *in, struct ir_shape *s)
{
	const struct ir_value *x = in[0], *idx = in[1];
	if (!ir_dtype_is_int(idx->dtype))
		return fail(IR_OP_GATHER, "indices must be integers, not %s", ir_dtype_name(idx->dtype));
	if (check_axis(IR_OP_GATHER, a->axis, x->shape.rank) < 0)
		return -EINVAL;
	int rank = x->shape.rank - 1 + idx->shape.rank;
	if (rank > IR_MAX_RANK)
		return fail(IR_OP_GATHER, "result rank %d exceeds %d", rank, IR_MAX_RANK);
	s->rank = 0;
	for (int i = 0; i < a->axis; i++)
		s->dims[s->rank++] = x->shape.dims[i];
	for (int i = 0; i < idx->shape.rank; i++)
		s->dims[s->rank++] = idx->shape.dims[i];
	for (int i = (int)a->axis + 1; i < x->shape.rank; i++)
		s->dims[s->rank++] = x->shape.dims[i];
	return ir_shape_check(s) < 0 ? fail(IR_OP_GATHER, "result too large") : 0;
}

static int infer_scatter(const struct ir_attrs *a, struct ir_value *const *in, struct ir_shape *s)
{
	const struct ir_value *x = in[0], *idx = in[1], *up = in[2];
	char bx[IR_SHAPE_STR_MAX], bi[IR_SHAPE_STR_MAX], bu[IR_SHAPE_STR_MAX];
	if (!ir_dtype_is_int(idx->dtype))
		return fail(IR_OP_SCATTER, "indices must be integers, not %s", ir_dtype_name(idx->dtype));
	if (up->dtype != x->dtype)
		return fail(IR_OP_SCATTER, "updates dtype %s differs from data %s", ir_dtype_name(up->dtype),
			    ir_dtype_name(x->dtype));
	if (a->mode < IR_SCATTER_NONE || a->mode > IR_SCATTER_MIN)
		return fail(IR_OP_SCATTER, "unknown mode %lld", (long long)a->mode);
	bool ok = x->shape.rank >= 1 && up->shape.rank == idx->shape.rank + x->shape.rank - 1;
	for (int i = 0; ok && i < idx->shape.rank; i++)
		ok = up->shape.dims[i] == idx->shape.dims[i];
	for (int i = 1; ok && i < x->shape.rank; i++)
		ok = up->shape.dims[idx->shape.rank + i - 1] == x->shape.dims[i];
	if (!ok)
		return fail(IR_OP_SCATTER, "updates %s must be indices %s + data %s without its first dim",
			    SHAPE(up, bu), SHAPE(idx, bi), SHAPE(x, bx));
	*s = x->shape;
	return 0;
}

static int infer_reshape(const struct ir_attrs *a, const struct ir_value *x, struct ir_shape *s)
{
	char bx[IR_SHAPE_STR_MAX], bs[IR_SHAPE_STR_MAX];
	if (ir_shape_check(&a->shape) < 0)
		return -EINVAL;
	if (ir_shape_numel(&a->shape) != ir_shape_numel(&x->shape))
		return fail(IR_OP_RESHAPE, "cannot reshape %s to %s", SHAPE(x, bx),
			    ir_shape_str(&a->shape, bs, sizeof bs));
	*s = a->shape;
	return 0;
}

static int infer_transpose(const struct ir_attrs *a, const struct ir_value *x, struct ir_shape *s)
{
	if (a->axes.n != x->shape.rank)
		return fail(IR_OP_TRANSPOSE, "permutation has %d entries for rank %d", a->axes.n, x->shape.rank);
	if (check_axes(IR_OP_TRANSPOSE, &a->axes, x->shape.rank, false) < 0)
		return -EINVAL;
	s->rank = x->shape.rank;
	for (int i = 0; i < s->rank; i++)
		s->dims[i] = x->shape.dims[a->axes.v[i]];
	return 0;
}

static int infer_reduce(enum ir_op op, const struct ir_attrs *a, const struct ir_value *x, struct ir_shape *s)
{
	if (check_axes(op, &a->axes, x->shape.rank, true) < 0)
		return -EINVAL;
	s->rank = 0;
	for (int i = 0, j = 0; i < x->shape.rank; i++) {
		if (j < a->axes.n && a->axes.v[j] == i)
			j++;
		else
			s->dims[s->rank++] = x->shape.dims[i];
	}
	return 0;
}

static int infer_layer_norm(const struct ir_attrs *a, struct ir_value *const *in, struct ir_shape *s)
{
	const struct ir_value *x = in[0];
	char bx[IR_SHAPE_STR_MAX], bw[IR_SHAPE_STR_MAX];
	if (check_axis(IR_OP_LAYER_NORM, a->axis, x->shape.rank) < 0)
		return -EINVAL;
	for (int k = 1; k < 3; k++) {
		const struct ir_value *w = in[k];
		bool ok = w->dtype == x->dtype && w->shape.rank == x->shape.rank - a->axis;
		for (int i = 0; ok && i < w->shape.rank; i++)
			ok = w->shape.dims[i] == x->shape.dims[a->axis + i];
		if (!ok)
			return fail(IR_OP_LAYER_NORM, "%s %s%s does not match x %s%s from axis %lld",
				    k == 1 ? "scale" : "bias", ir_dtype_name(w->dtype), SHAPE(w, bw),
				    ir_dtype_name(x->dtype), SHAPE(x, bx), (long long)a->axis);
	}
	*s = x->shape;
	return 0;
}

static int check_operands(enum ir_op op, int nin, struct ir_value *const *in)
{
	int want = ir_op_ninputs(op);
	if ((want >= 0 && nin != want) || (want < 0 && nin < 1))
		return fail(op, "takes %d operands, got %d", want, nin);
	for (int i = 0; i < nin; i++)
		if (!in[i])
			return fail(op, "operand %d is missing", i);
	unsigned f = ir_op_flags(op);
	for (int i = 0; i < nin; i++) {
		if ((f & IR_OPF_FLOAT) && !ir_dtype_is_float(in[i]->dtype))
			return fail(op, "needs floating-point operands, got %s", ir_dtype_name(in[i]->dtype));
		if ((f & IR_OPF_LOGIC) && ir_dtype_is_float(in[i]->dtype))
			return fail(op, "needs bool or integer operands, got %s", ir_dtype_name(in[i]->dtype));
		if ((f & IR_OPF_NUMERIC) && in[i]->dtype == IR_BOOL)
			return fail(op, "needs a numeric operand, got bool");
	}
	return 0;
}

static int same_dtype(enum ir_op op, int first, int nin, struct ir_value *const *in)
{
	for (int i = first + 1; i < nin; i++)
		if (in[i]->dtype != in[first]->dtype)
			return fail(op, "operand dtypes %s and %s differ", ir_dtype_name(in[first]->dtype),
				    ir_dtype_name(in[i]->dtype));
	return 0;
}

/* ---- the shape rule of each form (the form column of ops.h) -------------
 * Each takes the operands, checked against the op's arity and dtype flags,
 * and sets the results' shapes; dt[0] is in[0]'s dtype on entry. */

#define RULE(form)                                                                                           \
	static int rule_##form(enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a, \
			       enum ir_dtype *dt, struct ir_shape *s)

RULE(unary)
{
	const struct ir_value *x = in[0];
	if ((ir_op_flags(op) & IR_OPF_PREDICATE) && !ir_dtype_is_float(x->dtype))
		return fail(op, "needs a floating-point operand, got %s", ir_dtype_name(x->dtype));
	*s = x->shape;
	if (ir_op_flags(op) & IR_OPF_PREDICATE)
		dt[0] = IR_BOOL;
	return 0;
}

RULE(convert)
{
	if ((unsigned)a->dtype >= IR_DTYPE_COUNT)
		return fail(op, "bad result dtype");
	*s = in[0]->shape;
	dt[0] = a->dtype;
	return 0;
}

RULE(binary)
{
	if (same_dtype(op, 0, nin, in) < 0 || same_shape_operands(op, nin, in) < 0)
		return -EINVAL;
	*s = in[0]->shape;
	if (ir_op_flags(op) & IR_OPF_PREDICATE)
		dt[0] = IR_BOOL;
	return 0;
}

RULE(select)
{
	if (in[0]->dtype != IR_BOOL)
		return fail(op, "condition must be bool, got %s", ir_dtype_name(in[0]->dtype));
	if (same_dtype(op, 1, nin, in) < 0 || same_shape_operands(op, nin, in) < 0)
		return -EINVAL;
	*s = in[0]->shape;
	dt[0] = in[1]->dtype;
	return 0;
}

RULE(dot)
{
	if (same_dtype(op, 0, nin, in) < 0)
		return -EINVAL;
	return infer_dot(a, in, s);
}

RULE(conv)
{
	if (same_dtype(op, 0, nin, in) < 0)
		return -EINVAL;
	if (!ir_dtype_is_float(in[0]->dtype))
		return fail(op, "needs floating-point operands");
	return infer_conv(a, in, s);
}

RULE(reduce)
{
	return infer_reduce(op, a, in[0], s);
}

RULE(arg)
{
	struct ir_attrs r = { .axes = { 1, { a->axis } } };
	if (check_axis(op, a->axis, in[0]->shape.rank) < 0)
		return -EINVAL;
	dt[0] = IR_I64;
	return infer_reduce(op, &r, in[0], s);
}

RULE(window)
{
	return infer_window(op, a, in[0], s);
}

RULE(cumsum)
{
	*s = in[0]->shape;
	return check_axis(op, a->axis, in[0]->shape.rank);
}

RULE(reshape)
{
	return infer_reshape(a, in[0], s);
}

RULE(transpose)
{
	return infer_transpose(a, in[0], s);
}

RULE(broadcast)
{
	return infer_broadcast(a, in[0], s);
}

RULE(slice)
{
	return infer_slice(a, in[0], s);
}

RULE(concat)
{
	return infer_concat(a, nin, in, s);
}

RULE(pad)
{
	return infer_pad(a, in[0], s);
}

RULE(reverse)
{
	*s = in[0]->shape;
	return check_axes(op, &a->axes, in[0]->shape.rank, true);
}

RULE(gather)
{
	return infer_gather(a, in, s);
}

RULE(scatter)
{
	return infer_scatter(a, in, s);
}

RULE(iota)
{
	if (ir_shape_check(&a->shape) < 0 || check_axis(op, a->axis, a->shape.rank) < 0)
		return -EINVAL;
	if ((unsigned)a->dtype >= IR_DTYPE_COUNT || a->dtype == IR_BOOL)
		return fail(op, "bad dtype");
	*s = a->shape;
	dt[0] = a->dtype;
	return 0;
}

RULE(constant)
{
	if (ir_shape_check(&a->shape) < 0)
		return -EINVAL;
	if ((unsigned)a->dtype >= IR_DTYPE_COUNT)
		return fail(op, "bad dtype");
	if (!a->data)
		return fail(op, "has no data");
	*s = a->shape;
	dt[0] = a->dtype;
	return 0;
}

RULE(softmax)
{
	if (!ir_dtype_is_float(in[0]->dtype))
		return fail(op, "needs a floating-point operand");
	*s = in[0]->shape;
	return check_axis(op, a->axis, in[0]->shape.rank);
}

RULE(layer_norm)
{
	if (!ir_dtype_is_float(in[0]->dtype))
		return fail(op, "needs a floating-point operand");
	return infer_layer_norm(a, in, s);
}

RULE(topk)
{
	const struct ir_value *x = in[0];
	if (check_axis(op, a->axis, x->shape.rank) < 0)
		return -EINVAL;
	if (a->k < 0 || a->k > x->shape.dims[a->axis])
		return fail(op, "k = %lld exceeds dim %lld of size %lld", (long long)a->k, (long long)a->axis,
			    (long long)x->shape.dims[a->axis]);
	s[0] = x->shape;
	s[0].dims[a->axis] = a->k;
	s[1] = s[0];
	dt[1] = IR_I64;
	return 0;
}

#undef RULE

typedef int (*rule_fn)(enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a, enum ir_dtype *dt,
		       struct ir_shape *s);

static const rule_fn rules[IR_OP_COUNT] = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = rule_##form,
	IR_OPS(X)
#undef X
};

int ir_infer(enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a, enum ir_dtype *dt,
	     struct ir_shape *s)
{
	if ((unsigned)op >= IR_OP_COUNT)
		return ir_errorf(-EINVAL, "unknown op %d", (int)op);
	if (check_operands(op, nin, in) < 0)
		return -EINVAL;
	if (nin > 0)
		dt[0] = in[0]->dtype;
	return rules[op](op, nin, in, a, dt, s);
}
