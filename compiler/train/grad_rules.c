/*
 * grad_rules.c: the vector-Jacobian product of every core op, in one switch
 * with no default (a new op in ir/ops.h makes the compiler list this place).
 *
 * x, y: the node's first operand and result; g: the gradient of the result.
 * Rules reuse forward results where that is cheaper than recomputing (exp,
 * tanh, sigmoid, softmax read y). Where a function is not differentiable at
 * a point the rule picks PyTorch's convention: relu'(0) = 0, max/min split
 * the gradient evenly on ties, reduce_max shares it among equal maxima,
 * window_max gives it to the first maximum of the window.
 */
#include <errno.h>
#include <math.h>

#include "compiler/train/grad_internal.h"

static struct ir_value *sq(struct gb *b, struct ir_value *x)
{
	return gb_bin(b, IR_OP_MUL, x, x);
}

/* g * f, the common shape of a unary rule. */
static struct ir_value *times(struct gb *b, struct ir_value *g, struct ir_value *f)
{
	return gb_bin(b, IR_OP_MUL, g, f);
}

/* 1 - x^2 and x^2 + s, for the inverse trigonometric rules. */
static struct ir_value *one_minus_sq(struct gb *b, struct ir_value *x)
{
	return gb_bin(b, IR_OP_SUB, gb_like(b, x, 1), sq(b, x));
}

/* trunc(z) = sign(z) floor(|z|), for the divisor's part of rem. */
static struct ir_value *trunc_v(struct gb *b, struct ir_value *z)
{
	return times(b, gb_un(b, IR_OP_SIGN, z), gb_un(b, IR_OP_FLOOR, gb_un(b, IR_OP_ABS, z)));
}

/* g where x beats z, g/2 where they tie, else 0 (max with cmp GT, min LT). */
static struct ir_value *winner(struct gb *b, enum ir_op cmp, struct ir_value *x, struct ir_value *z, struct ir_value *g)
{
	struct ir_value *zero = gb_like(b, g, 0);
	struct ir_value *tie = gb_select(b, gb_bin(b, IR_OP_EQ, x, z), gb_scale(b, g, 0.5), zero);
	return gb_select(b, gb_bin(b, cmp, x, z), g, tie);
}

/* Sums a broadcast's gradient back onto its operand: over the new dims and
 * over operand dims of size 1 that were stretched. */
static struct ir_value *unbroadcast(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	const struct ir_value *x = n->in[0];
	struct ir_ilist red = { 0 };
	int k = 0;
	for (int d = 0; d < g->shape.rank; d++) {
		bool mapped = k < x->shape.rank && n->a.axes.v[k] == d;
		if (!mapped || (x->shape.dims[k] == 1 && g->shape.dims[d] != 1))
			red.v[red.n++] = d;
		k += mapped;
	}
	return gb_reshape(b, gb_sum(b, g, &red), &x->shape);
}

/* The dims a reduction keeps, for broadcasting its gradient back. */
static struct ir_ilist kept(const struct ir_node *n)
{
	struct ir_ilist keep = { 0 };
	for (int d = 0, j = 0; d < n->in[0]->shape.rank; d++) {
		if (j < n->a.axes.n && n->a.axes.v[j] == d)
			j++;
		else
			keep.v[keep.n++] = d;
	}
	return keep;
}

/* reduce_max / reduce_min: the gradient shared evenly among the elements
 * equal to the extreme. */
static struct ir_value *extreme(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	struct ir_value *x = n->in[0], *y = n->out[0];
	struct ir_ilist keep = kept(n);
	struct ir_value *hit = gb_bin(b, IR_OP_EQ, x, gb_broadcast(b, y, &x->shape, &keep));
	struct ir_value *count = gb_sum(b, gb_convert(b, hit, x->dtype), &n->a.axes);
	struct ir_value *share = gb_broadcast(b, gb_bin(b, IR_OP_DIV, g, count), &x->shape, &keep);
	return gb_select(b, hit, share, gb_like(b, x, 0));
}

/* reduce_prod: g times the product of the other elements of the row:
 * y / x without zeros; with one zero, the product of the nonzero elements
 * for the zero and 0 elsewhere; with more, 0. */
static struct ir_value *prod_others(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	struct ir_value *x = n->in[0];
	struct ir_ilist keep = kept(n);
	struct ir_attrs pa = { .axes = n->a.axes };
	struct ir_value *zero = gb_like(b, x, 0), *is0 = gb_bin(b, IR_OP_EQ, x, zero);
	struct ir_value *nz = gb_select(b, is0, gb_like(b, x, 1), x);
	struct ir_value *p_nz = gb_broadcast(b, gb_op(b, IR_OP_REDUCE_PROD, 1, &nz, &pa), &x->shape, &keep);
	struct ir_value *zeros = gb_broadcast(b, gb_sum(b, gb_convert(b, is0, x->dtype), &n->a.axes), &x->shape, &keep);
	struct ir_value *none = gb_bin(b, IR_OP_EQ, zeros, zero);
	struct ir_value *one = gb_bin(b, IR_OP_EQ, zeros, gb_like(b, x, 1));
	struct ir_value *others = gb_select(b, is0, gb_select(b, one, p_nz, zero),
					    gb_select(b, none, gb_bin(b, IR_OP_DIV, p_nz, nz), zero));
	return times(b, gb_broadcast(b, g, &x->shape, &keep), others);
}

/* softmax: y (g - sum(g y)) over the axis. */
static struct ir_value *softmax(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	struct ir_value *y = n->out[0];
	struct ir_value *gy = times(b, g, y);
	return times(b, y, gb_bin(b, IR_OP_SUB, g, gb_rowsum(b, gy, n->a.axis, n->a.axis)));
}

static int concat(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin)
{
	int64_t at = 0;
	for (int k = 0; k < n->nin; k++) {
		int64_t len = n->in[k]->shape.dims[n->a.axis];
		if (want[k])
			gin[k] = gb_slice_dim(b, g, (int)n->a.axis, at, at + len);
		at += len;
	}
	return 0;
}

static struct ir_value *transpose(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	int64_t inv[IR_MAX_RANK];
	for (int i = 0; i < n->a.axes.n; i++)
		inv[n->a.axes.v[i]] = i;
	return gb_transpose(b, g, inv);
}

/* Under scatter without combining, a repeated index keeps only its last
 * update: the others get no gradient. The last writer of each row is found
 * by scattering the update positions themselves. */
static struct ir_value *last_writer_only(struct gb *b, const struct ir_node *n, struct ir_value *gu)
{
	struct ir_value *idx = n->in[1], *up = n->in[2];
	int64_t ni = ir_shape_numel(&idx->shape), rows = n->in[0]->shape.dims[0];
	struct ir_shape flat = { .rank = 1, .dims = { ni } }, table = { .rank = 1, .dims = { rows } };
	struct ir_attrs io = { .shape = flat, .dtype = IR_I64, .axis = 0 };
	struct ir_value *pos = gb_op(b, IR_OP_IOTA, 0, NULL, &io);
	struct ir_value *fi = gb_reshape(b, idx, &flat);
	struct ir_value *sin[3] = { gb_full(b, IR_I64, &table, -1), fi, pos };
	struct ir_attrs sa = { .mode = IR_SCATTER_NONE };
	struct ir_value *last = gb_op(b, IR_OP_SCATTER, 3, sin, &sa);
	struct ir_value *gin_[2] = { last, fi };
	struct ir_attrs ga = { .axis = 0 };
	struct ir_value *mine = gb_bin(b, IR_OP_EQ, gb_op(b, IR_OP_GATHER, 2, gin_, &ga), pos);
	struct ir_ilist lead = { .n = idx->shape.rank };
	for (int i = 0; i < lead.n; i++)
		lead.v[i] = i;
	struct ir_value *m = gb_broadcast(b, gb_reshape(b, mine, &idx->shape), &up->shape, &lead);
	return gb_select(b, m, gu, gb_like(b, gu, 0));
}

static int scatter(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin)
{
	struct ir_value *idx = n->in[1], *up = n->in[2];
	if (n->a.mode != IR_SCATTER_NONE && n->a.mode != IR_SCATTER_ADD)
		return ir_errorf(-ENOTSUP, "scatter with mode %s has no gradient rule",
				 n->a.mode == IR_SCATTER_MUL   ? "mul"
				 : n->a.mode == IR_SCATTER_MAX ? "max"
							       : "min");
	if (want[0]) {
		/* Replaced rows do not reach the result. */
		struct ir_value *in[3] = { g, idx, gb_like(b, up, 0) };
		struct ir_attrs a = { .mode = IR_SCATTER_NONE };
		gin[0] = n->a.mode == IR_SCATTER_ADD ? g : gb_op(b, IR_OP_SCATTER, 3, in, &a);
	}
	if (want[2]) {
		struct ir_value *in[2] = { g, idx };
		struct ir_attrs a = { .axis = 0 };
		gin[2] = gb_op(b, IR_OP_GATHER, 2, in, &a);
		if (n->a.mode == IR_SCATTER_NONE)
			gin[2] = last_writer_only(b, n, gin[2]);
	}
	return 0;
}

/* d/dz of x^z = y log x, taken as 0 where x = 0 (as PyTorch does, so 0^z
 * with a trained z stays finite). */
static struct ir_value *pow_exponent(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	struct ir_value *x = n->in[0], *y = n->out[0];
	struct ir_value *at0 = gb_bin(b, IR_OP_EQ, x, gb_like(b, x, 0));
	struct ir_value *safe = gb_select(b, at0, gb_like(b, x, 1), x);
	return times(b, g, times(b, y, gb_un(b, IR_OP_LOG, safe)));
}

#define WANT(k, expr) (gin[k] = want[k] ? (expr) : NULL)

int grad_rule(struct gb *b, const struct ir_node *n, struct ir_value *const *gout, const bool *want,
	      struct ir_value **gin)
{
	struct ir_value *g = gout[0], *x = n->in[0], *y = n->out[0];
	struct ir_value *z = n->nin > 1 ? n->in[1] : NULL;
	switch (n->op) {
	case IR_OP_NEG:
		gin[0] = gb_un(b, IR_OP_NEG, g);
		return 0;
	case IR_OP_ABS:
		gin[0] = times(b, g, gb_un(b, IR_OP_SIGN, x));
		return 0;
	case IR_OP_EXP:
		gin[0] = times(b, g, y);
		return 0;
	case IR_OP_LOG:
		gin[0] = gb_bin(b, IR_OP_DIV, g, x);
		return 0;
	case IR_OP_SQRT: /* g / 2y */
		gin[0] = gb_bin(b, IR_OP_DIV, g, gb_scale(b, y, 2));
		return 0;
	case IR_OP_RSQRT: /* -g y^3 / 2 */
		gin[0] = times(b, g, gb_scale(b, times(b, sq(b, y), y), -0.5));
		return 0;
	case IR_OP_RECIP:
		gin[0] = gb_un(b, IR_OP_NEG, times(b, g, sq(b, y)));
		return 0;
	case IR_OP_TANH:
		gin[0] = times(b, g, one_minus_sq(b, y));
		return 0;
	case IR_OP_ERF: /* g 2/sqrt(pi) exp(-x^2) */
		gin[0] = times(b, g, gb_scale(b, gb_un(b, IR_OP_EXP, gb_un(b, IR_OP_NEG, sq(b, x))), 2 / sqrt(M_PI)));
		return 0;
	case IR_OP_SIGMOID:
		gin[0] = times(b, g, times(b, y, gb_bin(b, IR_OP_SUB, gb_like(b, y, 1), y)));
		return 0;
	case IR_OP_SOFTPLUS: /* g sigmoid(x) */
		gin[0] = times(b, g, gb_un(b, IR_OP_SIGMOID, x));
		return 0;
	case IR_OP_RELU:
		gin[0] = gb_select(b, gb_bin(b, IR_OP_GT, x, gb_like(b, x, 0)), g, gb_like(b, g, 0));
		return 0;
	case IR_OP_SIN:
		gin[0] = times(b, g, gb_un(b, IR_OP_COS, x));
		return 0;
	case IR_OP_COS:
		gin[0] = gb_un(b, IR_OP_NEG, times(b, g, gb_un(b, IR_OP_SIN, x)));
		return 0;
	case IR_OP_TAN:
		gin[0] = times(b, g, gb_offset(b, sq(b, y), 1));
		return 0;
	case IR_OP_ASIN:
		gin[0] = times(b, g, gb_un(b, IR_OP_RSQRT, one_minus_sq(b, x)));
		return 0;
	case IR_OP_ACOS:
		gin[0] = gb_un(b, IR_OP_NEG, times(b, g, gb_un(b, IR_OP_RSQRT, one_minus_sq(b, x))));
		return 0;
	case IR_OP_ATAN:
		gin[0] = gb_bin(b, IR_OP_DIV, g, gb_offset(b, sq(b, x), 1));
		return 0;
	case IR_OP_SINH:
		gin[0] = times(b, g, gb_un(b, IR_OP_COSH, x));
		return 0;
	case IR_OP_COSH:
		gin[0] = times(b, g, gb_un(b, IR_OP_SINH, x));
		return 0;
	case IR_OP_ASINH:
		gin[0] = times(b, g, gb_un(b, IR_OP_RSQRT, gb_offset(b, sq(b, x), 1)));
		return 0;
	case IR_OP_ACOSH:
		gin[0] = times(b, g, gb_un(b, IR_OP_RSQRT, gb_offset(b, sq(b, x), -1)));
		return 0;
	case IR_OP_ATANH:
		gin[0] = gb_bin(b, IR_OP_DIV, g, one_minus_sq(b, x));
		return 0;
	case IR_OP_CONVERT:
		gin[0] = gb_convert(b, g, x->dtype);
		return 0;
	case IR_OP_SIGN:
	case IR_OP_FLOOR:
	case IR_OP_CEIL:
	case IR_OP_ROUND:
		return 0; /* piecewise constant: zero almost everywhere */
	case IR_OP_NOT:
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
		return 0; /* boolean, integer or no operands: never on a gradient path */
	case IR_OP_ADD:
		WANT(0, g);
		WANT(1, g);
		return 0;
	case IR_OP_SUB:
		WANT(0, g);
		WANT(1, gb_un(b, IR_OP_NEG, g));
		return 0;
	case IR_OP_MUL:
		WANT(0, times(b, g, z));
		WANT(1, times(b, g, x));
		return 0;
	case IR_OP_DIV: /* d/dz (x/z) = -y/z */
		WANT(0, gb_bin(b, IR_OP_DIV, g, z));
		WANT(1, gb_un(b, IR_OP_NEG, gb_bin(b, IR_OP_DIV, times(b, g, y), z)));
		return 0;
	case IR_OP_POW: /* d/dx = z x^(z-1) */
		WANT(0, times(b, g, times(b, z, gb_bin(b, IR_OP_POW, x, gb_offset(b, z, -1)))));
		WANT(1, pow_exponent(b, n, g));
		return 0;
	case IR_OP_REM: /* x - z trunc(x/z) */
		WANT(0, g);
		WANT(1, gb_un(b, IR_OP_NEG, times(b, g, trunc_v(b, gb_bin(b, IR_OP_DIV, x, z)))));
		return 0;
	case IR_OP_MAX:
		WANT(0, winner(b, IR_OP_GT, x, z, g));
		WANT(1, winner(b, IR_OP_GT, z, x, g));
		return 0;
	case IR_OP_MIN:
		WANT(0, winner(b, IR_OP_LT, x, z, g));
		WANT(1, winner(b, IR_OP_LT, z, x, g));
		return 0;
	case IR_OP_SELECT:
		WANT(1, gb_select(b, x, g, gb_like(b, g, 0)));
		WANT(2, gb_select(b, x, gb_like(b, g, 0), g));
		return 0;
	case IR_OP_DOT:
		return grad_dot(b, n, g, want, gin);
	case IR_OP_CONV:
		return grad_conv(b, n, g, want, gin);
	case IR_OP_REDUCE_SUM: {
		struct ir_ilist keep = kept(n);
		gin[0] = gb_broadcast(b, g, &x->shape, &keep);
		return 0;
	}
	case IR_OP_REDUCE_PROD:
		gin[0] = prod_others(b, n, g);
		return 0;
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
		gin[0] = extreme(b, n, g);
		return 0;
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
		return grad_window(b, n, g, gin);
	case IR_OP_CUMSUM: { /* the same sum run the other way */
		struct ir_attrs a = n->a;
		a.mode ^= IR_CUMSUM_REVERSE;
		gin[0] = gb_op(b, IR_OP_CUMSUM, 1, &g, &a);
		return 0;
	}
	case IR_OP_RESHAPE:
		gin[0] = gb_reshape(b, g, &x->shape);
		return 0;
	case IR_OP_TRANSPOSE:
		gin[0] = transpose(b, n, g);
		return 0;
	case IR_OP_BROADCAST:
		gin[0] = unbroadcast(b, n, g);
		return 0;
	case IR_OP_SLICE:
		gin[0] = gb_unslice(b, g, &x->shape, &n->a.start, &n->a.stride);
		return 0;
	case IR_OP_CONCAT:
		return concat(b, n, g, want, gin);
	case IR_OP_PAD:
		return grad_pad(b, n, g, gin);
	case IR_OP_REVERSE:
		gin[0] = gb_op(b, IR_OP_REVERSE, 1, &g, &n->a);
		return 0;
	case IR_OP_GATHER:
		return grad_gather(b, n, g, gin);
	case IR_OP_SCATTER:
		return scatter(b, n, g, want, gin);
	case IR_OP_SOFTMAX:
		gin[0] = softmax(b, n, g);
		return 0;
	case IR_OP_LAYER_NORM:
		return grad_layer_norm(b, n, g, want, gin);
	case IR_OP_TOPK:
		return g ? grad_topk(b, n, g, gin) : 0;
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"unknown op");
	return -EINVAL;
}
