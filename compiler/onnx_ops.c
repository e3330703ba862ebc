/*
 * onnx_ops.c: ONNX elementwise, shape and data-movement ops -> core ops.
 *
 * One handler per ONNX op (or per family of ops with one rule). Handlers
 * read attributes, check what the core ops cannot know (ONNX conventions
 * such as negative axes and -1 in Reshape), and build through the b_*
 * builders, which broadcast explicitly and fold constants. Opset-dependent
 * forms are chosen on c->opset (13..17 here).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/onnx_internal.h"

#define OUT1(v) (out[0] = (v), out[0] ? 0 : -EINVAL)
#define NEED(k)                                                                   \
	do {                                                                      \
		if (nin <= (k) || !in[k])                                         \
			return onnx_fail(c, "input %d is required", (k));         \
	} while (0)

static const char *op_type(struct onnx_ctx *c)
{
	return c->node->op_type;
}

/* ---- elementwise ------------------------------------------------------------ */

static const struct {
	const char *onnx;
	enum ir_op op;
} unary_map[] = {
	{ "Abs", IR_OP_ABS },     { "Neg", IR_OP_NEG },       { "Exp", IR_OP_EXP },
	{ "Log", IR_OP_LOG },     { "Sqrt", IR_OP_SQRT },     { "Reciprocal", IR_OP_RECIP },
	{ "Tanh", IR_OP_TANH },   { "Erf", IR_OP_ERF },       { "Sigmoid", IR_OP_SIGMOID },
	{ "Relu", IR_OP_RELU },   { "Sin", IR_OP_SIN },       { "Cos", IR_OP_COS },
	{ "Tan", IR_OP_TAN },     { "Asin", IR_OP_ASIN },     { "Acos", IR_OP_ACOS },
	{ "Atan", IR_OP_ATAN },   { "Sinh", IR_OP_SINH },     { "Cosh", IR_OP_COSH },
	{ "Asinh", IR_OP_ASINH }, { "Acosh", IR_OP_ACOSH },   { "Atanh", IR_OP_ATANH },
	{ "Floor", IR_OP_FLOOR }, { "Ceil", IR_OP_CEIL },     { "Round", IR_OP_ROUND },
	{ "Not", IR_OP_NOT },     { "Sign", IR_OP_SIGN },
};

static int h_unary(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	for (size_t i = 0; i < sizeof unary_map / sizeof unary_map[0]; i++)
		if (strcmp(unary_map[i].onnx, op_type(c)) == 0)
			return OUT1(b_unary(c, unary_map[i].op, in[0]));
	IR_ASSERT(!"unary op missing from unary_map");
}

static const struct {
	const char *onnx;
	enum ir_op op;
} binary_map[] = {
	{ "Add", IR_OP_ADD },         { "Sub", IR_OP_SUB },
	{ "Mul", IR_OP_MUL },         { "Div", IR_OP_DIV },
	{ "And", IR_OP_AND },         { "Or", IR_OP_OR },
	{ "Xor", IR_OP_XOR },         { "Equal", IR_OP_EQ },
	{ "Less", IR_OP_LT },         { "LessOrEqual", IR_OP_LE },
	{ "Greater", IR_OP_GT },      { "GreaterOrEqual", IR_OP_GE },
	{ "Max", IR_OP_MAX },         { "Min", IR_OP_MIN },
	{ "Sum", IR_OP_ADD },         { "Mean", IR_OP_ADD },
};

/* Binary and variadic (Max, Min, Sum, Mean) elementwise ops. */
static int h_binary(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	enum ir_op op = IR_OP_COUNT;
	for (size_t i = 0; i < sizeof binary_map / sizeof binary_map[0]; i++)
		if (strcmp(binary_map[i].onnx, op_type(c)) == 0)
			op = binary_map[i].op;
	IR_ASSERT(op != IR_OP_COUNT);
	NEED(0);
	struct ir_value *acc = in[0];
	for (int i = 1; i < nin && acc; i++) {
		NEED(i);
		if (in[i]->dtype != acc->dtype)
			return onnx_fail(c, "operand types %s and %s differ", ir_dtype_name(acc->dtype),
					 ir_dtype_name(in[i]->dtype));
		acc = b_binary(c, op, acc, in[i]);
	}
	if (acc && strcmp(op_type(c), "Mean") == 0 && nin > 1)
		acc = b_binary(c, IR_OP_DIV, acc, b_scalar(c, acc->dtype, nin));
	return OUT1(acc);
}

static int h_pow(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	/* Pow allows an exponent of another type; compute in the base's. */
	return OUT1(b_binary(c, IR_OP_POW, in[0], b_convert(c, in[1], in[0]->dtype)));
}

/* Mod: fmod=1 is C's remainder; fmod=0 (integers) takes the divisor's sign. */
static int h_mod(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int64_t fmod_ = attr_int(c, "fmod", 0);
	if (!fmod_ && ir_dtype_is_float(in[0]->dtype))
		return onnx_fail(c, "fmod=0 is not defined for floating-point inputs");
	struct ir_value *r = b_binary(c, IR_OP_REM, in[0], in[1]);
	if (fmod_ || !r)
		return OUT1(r);
	struct ir_value *b = b_broadcast_to(c, in[1], &r->shape);
	struct ir_value *zero = b_broadcast_to(c, b_scalar(c, r->dtype, 0), &r->shape);
	struct ir_value *fix = b_binary(c, IR_OP_AND, b_binary(c, IR_OP_NE, r, zero),
					b_binary(c, IR_OP_NE, b_binary(c, IR_OP_LT, r, zero),
						 b_binary(c, IR_OP_LT, b, zero)));
	return OUT1(b_select(c, fix, b_binary(c, IR_OP_ADD, r, b), r));
}

static int h_where(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	return OUT1(b_select(c, in[0], in[1], in[2]));
}

static int h_identity(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	out[0] = in[0];
	return 0;
}

/* Dropout at inference (training_mode absent or false): identity, mask of ones. */
static int h_dropout(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	if (nin > 2 && in[2]) {
		double training;
		if (onnx_const_scalar(c, in[2], &training, "training_mode") < 0)
			return -EINVAL;
		if (training != 0)
			return onnx_unsupported(c, "training-mode dropout is not supported yet");
	}
	out[0] = in[0];
	if (nout > 1)
		out[1] = b_broadcast_to(c, b_scalar(c, IR_BOOL, 1), &in[0]->shape);
	return nout > 1 && !out[1] ? -EINVAL : 0;
}

static int h_isinf(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	if (strcmp(op_type(c), "IsNaN") == 0)
		return OUT1(b_unary(c, IR_OP_IS_NAN, x));
	int64_t neg = attr_int(c, "detect_negative", 1), pos = attr_int(c, "detect_positive", 1);
	struct ir_value *r = b_unary(c, IR_OP_IS_INF, x);
	if (r && !(neg && pos)) {
		struct ir_value *zero = b_broadcast_to(c, b_scalar(c, x->dtype, 0), &x->shape);
		struct ir_value *side = b_binary(c, pos ? IR_OP_GT : IR_OP_LT, x, zero);
		r = (neg || pos) ? b_binary(c, IR_OP_AND, r, side)
				 : b_broadcast_to(c, b_scalar(c, IR_BOOL, 0), &x->shape);
	}
	return OUT1(r);
}

static int h_cast(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	enum ir_dtype t;
	if (strcmp(op_type(c), "CastLike") == 0) {
		NEED(1);
		t = in[1]->dtype;
	} else {
		const Onnx__AttributeProto *a = attr_find(c, "to");
		if (!a || !a->has_i)
			return onnx_fail(c, "attribute 'to' is required");
		if (onnx_dtype_to_ir((int32_t)a->i, &t) < 0)
			return -EINVAL;
	}
	return OUT1(b_convert(c, in[0], t));
}

static struct ir_value *scalar_like(struct onnx_ctx *c, struct ir_value *x, double v)
{
	return b_broadcast_to(c, b_scalar(c, x->dtype, v), &x->shape);
}

static int h_clip(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	if (c->opset < 11) {
		x = b_binary(c, IR_OP_MAX, x, b_scalar(c, x->dtype, attr_float(c, "min", -INFINITY)));
		return OUT1(b_binary(c, IR_OP_MIN, x, b_scalar(c, x->dtype, attr_float(c, "max", INFINITY))));
	}
	if (nin > 1 && in[1])
		x = b_binary(c, IR_OP_MAX, x, in[1]);
	if (nin > 2 && in[2])
		x = b_binary(c, IR_OP_MIN, x, in[2]);
	return OUT1(x);
}

/* Activations with attributes, written in core ops. */
static int h_activation(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0], *r = NULL;
	if (!ir_dtype_is_float(x->dtype))
		return onnx_fail(c, "needs a floating-point input, got %s", ir_dtype_name(x->dtype));
	const char *op = op_type(c);
	struct ir_value *zero = scalar_like(c, x, 0), *one = scalar_like(c, x, 1);
	if (strcmp(op, "LeakyRelu") == 0) {
		struct ir_value *ax = b_binary(c, IR_OP_MUL, x, scalar_like(c, x, attr_float(c, "alpha", 0.01)));
		r = b_select(c, b_binary(c, IR_OP_GE, x, zero), x, ax);
	} else if (strcmp(op, "Elu") == 0 || strcmp(op, "Selu") == 0 || strcmp(op, "Celu") == 0) {
		bool selu = op[0] == 'S', celu = op[0] == 'C';
		double alpha = attr_float(c, "alpha", selu ? 1.67326319217681884765625 : 1.0);
		double gamma = selu ? attr_float(c, "gamma", 1.05070102214813232421875) : 1.0;
		struct ir_value *e = celu ? b_unary(c, IR_OP_EXP, b_binary(c, IR_OP_DIV, x, scalar_like(c, x, alpha)))
					  : b_unary(c, IR_OP_EXP, x);
		struct ir_value *neg = b_binary(c, IR_OP_MUL, scalar_like(c, x, alpha),
						b_binary(c, IR_OP_SUB, e, one));
		r = b_select(c, b_binary(c, IR_OP_GT, x, zero), x, neg);
		if (gamma != 1.0)
			r = b_binary(c, IR_OP_MUL, r, scalar_like(c, x, gamma));
	} else if (strcmp(op, "HardSigmoid") == 0 || strcmp(op, "HardSwish") == 0) {
		bool swish = op[4] == 'S' && op[5] == 'w';
		double alpha = swish ? 1.0 / 6 : attr_float(c, "alpha", 0.2);
		double beta = swish ? 0.5 : attr_float(c, "beta", 0.5);
		r = b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MUL, x, scalar_like(c, x, alpha)),
			     scalar_like(c, x, beta));
		r = b_binary(c, IR_OP_MIN, b_binary(c, IR_OP_MAX, r, zero), one);
		if (swish)
			r = b_binary(c, IR_OP_MUL, x, r);
	} else if (strcmp(op, "Softplus") == 0) {
		/* log(1 + e^x) = max(x, 0) + log(1 + e^-|x|), stable for large |x| */
		struct ir_value *t = b_unary(c, IR_OP_EXP, b_unary(c, IR_OP_NEG, b_unary(c, IR_OP_ABS, x)));
		r = b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MAX, x, zero),
			     b_unary(c, IR_OP_LOG, b_binary(c, IR_OP_ADD, one, t)));
	} else if (strcmp(op, "Softsign") == 0) {
		r = b_binary(c, IR_OP_DIV, x, b_binary(c, IR_OP_ADD, one, b_unary(c, IR_OP_ABS, x)));
	} else if (strcmp(op, "ThresholdedRelu") == 0) {
		r = b_select(c, b_binary(c, IR_OP_GT, x, scalar_like(c, x, attr_float(c, "alpha", 1.0))), x, zero);
	} else if (strcmp(op, "PRelu") == 0) {
		NEED(1);
		r = b_select(c, b_binary(c, IR_OP_GE, x, zero), x, b_binary(c, IR_OP_MUL, x, in[1]));
	} else if (strcmp(op, "Mish") == 0) {
		struct ir_value *t = b_unary(c, IR_OP_EXP, b_unary(c, IR_OP_NEG, b_unary(c, IR_OP_ABS, x)));
		struct ir_value *sp = b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MAX, x, zero),
					       b_unary(c, IR_OP_LOG, b_binary(c, IR_OP_ADD, one, t)));
		r = b_binary(c, IR_OP_MUL, x, b_unary(c, IR_OP_TANH, sp));
	}
	return OUT1(r);
}

/* ---- shapes ---------------------------------------------------------------- */

static int h_shape(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int r = in[0]->shape.rank;
	int64_t start = attr_int(c, "start", 0), end = attr_int(c, "end", r);
	if (start < 0)
		start += r;
	if (end < 0)
		end += r;
	start = start < 0 ? 0 : start > r ? r : start;
	end = end < start ? start : end > r ? r : end;
	return OUT1(b_const_i64(c, (int)(end - start), in[0]->shape.dims + start));
}

static int h_size(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int64_t n = ir_shape_numel(&in[0]->shape);
	struct ir_shape s = { 0 };
	return OUT1(b_const(c, IR_I64, &s, &n));
}

static int shape_from_const(struct onnx_ctx *c, struct ir_value *v, struct ir_shape *s, const char *what)
{
	int64_t dims[IR_MAX_RANK];
	int n = onnx_const_ints(c, v, dims, IR_MAX_RANK, what);
	if (n < 0)
		return -EINVAL;
	s->rank = n;
	for (int i = 0; i < n; i++)
		s->dims[i] = dims[i];
	return 0;
}

static int h_reshape(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_shape s;
	char b1[IR_SHAPE_STR_MAX], b2[IR_SHAPE_STR_MAX];
	if (shape_from_const(c, in[1], &s, "the target shape") < 0)
		return -EINVAL;
	bool allowzero = attr_int(c, "allowzero", 0);
	int infer = -1;
	int64_t known = 1;
	for (int i = 0; i < s.rank; i++) {
		if (s.dims[i] == 0 && !allowzero) {
			if (i >= in[0]->shape.rank)
				return onnx_fail(c, "shape entry %d is 0 but the input has rank %d", i, in[0]->shape.rank);
			s.dims[i] = in[0]->shape.dims[i];
		}
		if (s.dims[i] == -1) {
			if (infer >= 0)
				return onnx_fail(c, "target shape has more than one -1");
			infer = i;
		} else if (s.dims[i] < 0) {
			return onnx_fail(c, "target shape has a negative entry %lld", (long long)s.dims[i]);
		} else if (s.dims[i] > 0 && known > IR_MAX_NUMEL / s.dims[i]) {
			return onnx_fail(c, "target shape is absurdly large");
		} else {
			known *= s.dims[i];
		}
	}
	int64_t n = ir_shape_numel(&in[0]->shape);
	if (infer >= 0) {
		if (known == 0 || n % known)
			return onnx_fail(c, "cannot reshape %s into %s", ir_shape_str(&in[0]->shape, b1, sizeof b1),
					 ir_shape_str(&s, b2, sizeof b2));
		s.dims[infer] = n / known;
	}
	return OUT1(b_reshape(c, in[0], &s));
}

static int h_flatten(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *x = &in[0]->shape;
	int64_t axis = attr_int(c, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return onnx_fail(c, "axis %lld out of range for rank %d", (long long)attr_int(c, "axis", 1), x->rank);
	struct ir_shape s = { 2, { 1, 1 } };
	for (int i = 0; i < x->rank; i++)
		s.dims[i < axis ? 0 : 1] *= x->dims[i];
	return OUT1(b_reshape(c, in[0], &s));
}

/* Axes of Squeeze/Unsqueeze: an input since opset 13. */
static int axes_input(struct onnx_ctx *c, struct ir_value **in, int nin, int64_t *axes)
{
	if (c->opset < 13)
		return attr_ints(c, "axes", axes, IR_MAX_RANK);
	if (nin > 1 && in[1])
		return onnx_const_ints(c, in[1], axes, IR_MAX_RANK, "axes");
	return 0;
}

static int h_squeeze(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int64_t axes[IR_MAX_RANK];
	int n = axes_input(c, in, nin, axes);
	const struct ir_shape *x = &in[0]->shape;
	bool drop[IR_MAX_RANK] = { 0 };
	if (n < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		int64_t ax;
		if (onnx_axis(c, axes[i], x->rank, &ax) < 0)
			return -EINVAL;
		if (x->dims[ax] != 1)
			return onnx_fail(c, "cannot squeeze dim %lld of size %lld", (long long)ax, (long long)x->dims[ax]);
		drop[ax] = true;
	}
	struct ir_shape s = { 0 };
	for (int i = 0; i < x->rank; i++)
		if (!(n ? drop[i] : x->dims[i] == 1))
			s.dims[s.rank++] = x->dims[i];
	return OUT1(b_reshape(c, in[0], &s));
}

static int h_unsqueeze(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	if (c->opset >= 13)
		NEED(1);
	int64_t axes[IR_MAX_RANK];
	int n = axes_input(c, in, nin, axes);
	const struct ir_shape *x = &in[0]->shape;
	if (n < 0)
		return -EINVAL;
	int r = x->rank + n;
	if (r > IR_MAX_RANK)
		return onnx_fail(c, "result rank %d exceeds %d", r, IR_MAX_RANK);
	bool ins[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < n; i++) {
		int64_t ax;
		if (onnx_axis(c, axes[i], r, &ax) < 0)
			return -EINVAL;
		if (ins[ax])
			return onnx_fail(c, "axis %lld repeated", (long long)axes[i]);
		ins[ax] = true;
	}
	struct ir_shape s = { r, { 0 } };
	for (int i = 0, j = 0; i < r; i++)
		s.dims[i] = ins[i] ? 1 : x->dims[j++];
	return OUT1(b_reshape(c, in[0], &s));
}

static int h_transpose(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int r = in[0]->shape.rank;
	int64_t perm[IR_MAX_RANK];
	int n = attr_ints(c, "perm", perm, IR_MAX_RANK);
	if (n < 0)
		return -EINVAL;
	if (n == 0) {
		for (int i = 0; i < r; i++)
			perm[i] = r - 1 - i;
	} else if (n != r) {
		return onnx_fail(c, "perm has %d entries for rank %d", n, r);
	} else {
		for (int i = 0; i < r; i++)
			if (onnx_axis(c, perm[i], r, &perm[i]) < 0)
				return -EINVAL;
	}
	return OUT1(b_transpose(c, in[0], perm));
}

static int h_expand(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_shape s, r;
	if (shape_from_const(c, in[1], &s, "the target shape") < 0)
		return -EINVAL;
	/* Expand broadcasts both ways: result = broadcast(input shape, s) */
	const struct ir_shape *x = &in[0]->shape;
	r.rank = x->rank > s.rank ? x->rank : s.rank;
	for (int i = 0; i < r.rank; i++) {
		int xi = i - (r.rank - x->rank), si = i - (r.rank - s.rank);
		int64_t dx = xi >= 0 ? x->dims[xi] : 1, ds = si >= 0 ? s.dims[si] : 1;
		if (dx != ds && dx != 1 && ds != 1)
			return onnx_fail(c, "input shape does not broadcast to the target shape");
		r.dims[i] = dx == 1 ? ds : dx;
	}
	if (ir_shape_check(&r) < 0)
		return -EINVAL;
	return OUT1(b_broadcast_to(c, in[0], &r));
}

static int h_concat(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	struct ir_value *parts[64];
	int n = 0;
	int64_t axis;
	NEED(0);
	if (onnx_axis(c, attr_int(c, "axis", 0), in[0]->shape.rank, &axis) < 0)
		return -EINVAL;
	for (int i = 0; i < nin; i++) {
		NEED(i);
		if (in[i]->shape.rank == in[0]->shape.rank && in[i]->shape.dims[axis] == 0 && nin > 1)
			continue; /* empty pieces contribute nothing */
		parts[n++] = in[i];
	}
	if (n == 0)
		parts[n++] = in[0];
	return OUT1(b_concat(c, n, parts, (int)axis));
}

static int h_split(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int64_t axis, sizes[64];
	const struct ir_shape *x = &in[0]->shape;
	if (onnx_axis(c, attr_int(c, "axis", 0), x->rank, &axis) < 0)
		return -EINVAL;
	int n = 0;
	if (c->opset < 13 && attr_find(c, "split")) {
		n = attr_ints(c, "split", sizes, 64);
		if (n != nout)
			return onnx_fail(c, "split has %d sizes for %d outputs", n, nout);
	} else if (nin > 1 && in[1]) {
		n = onnx_const_ints(c, in[1], sizes, 64, "split");
		if (n < 0)
			return -EINVAL;
		if (n != nout)
			return onnx_fail(c, "split has %d sizes for %d outputs", n, nout);
	} else {
		int64_t d = x->dims[axis], each = (d + nout - 1) / nout;
		if (nout < 1 || nout > 64)
			return onnx_fail(c, "%d outputs", nout);
		for (n = 0; n < nout; n++)
			sizes[n] = d - each * n < each ? (d - each * n > 0 ? d - each * n : 0) : each;
	}
	int64_t at = 0;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0 || at + sizes[i] > x->dims[axis])
			return onnx_fail(c, "split sizes exceed dim %lld", (long long)axis);
		out[i] = b_slice(c, in[0], (int)axis, at, at + sizes[i], 1);
		if (!out[i])
			return -EINVAL;
		at += sizes[i];
	}
	if (at != x->dims[axis])
		return onnx_fail(c, "split sizes sum to %lld, dim %lld has %lld", (long long)at, (long long)axis,
				 (long long)x->dims[axis]);
	return 0;
}

static int h_slice(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *x = &in[0]->shape;
	int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
	int n;
	bool attrs = c->opset < 10; /* Slice-1 takes starts, ends, axes as attributes */
	if (attrs) {
		n = attr_ints(c, "starts", st, IR_MAX_RANK);
		if (n < 0 || attr_ints(c, "ends", en, IR_MAX_RANK) != n)
			return onnx_fail(c, "starts and ends differ in length");
	} else {
		NEED(1);
		NEED(2);
		n = onnx_const_ints(c, in[1], st, IR_MAX_RANK, "starts");
		if (n < 0 || onnx_const_ints(c, in[2], en, IR_MAX_RANK, "ends") != n)
			return n < 0 ? -EINVAL : onnx_fail(c, "starts and ends differ in length");
	}
	if (attrs && attr_find(c, "axes")) {
		if (attr_ints(c, "axes", ax, IR_MAX_RANK) != n)
			return onnx_fail(c, "axes and starts differ in length");
	} else if (!attrs && nin > 3 && in[3]) {
		if (onnx_const_ints(c, in[3], ax, IR_MAX_RANK, "axes") != n)
			return onnx_fail(c, "axes and starts differ in length");
	} else {
		for (int i = 0; i < n; i++)
			ax[i] = i;
	}
	if (!attrs && nin > 4 && in[4]) {
		if (onnx_const_ints(c, in[4], sp, IR_MAX_RANK, "steps") != n)
			return onnx_fail(c, "steps and starts differ in length");
	} else {
		for (int i = 0; i < n; i++)
			sp[i] = 1;
	}
	struct ir_attrs a = { 0 };
	a.start.n = a.limit.n = a.stride.n = x->rank;
	bool rev[IR_MAX_RANK] = { 0 }, seen[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < x->rank; i++) {
		a.start.v[i] = 0;
		a.limit.v[i] = x->dims[i];
		a.stride.v[i] = 1;
	}
	for (int i = 0; i < n; i++) {
		int64_t axis, d;
		if (onnx_axis(c, ax[i], x->rank, &axis) < 0)
			return -EINVAL;
		if (seen[axis])
			return onnx_fail(c, "axis %lld repeated", (long long)ax[i]);
		seen[axis] = true;
		d = x->dims[axis];
		int64_t s = st[i], e = en[i], step = sp[i];
		if (step == 0)
			return onnx_fail(c, "step 0 on axis %lld", (long long)axis);
		/* a step beyond the dim selects one element, like the dim itself */
		int64_t dmax = d > 1 ? d : 1;
		step = step > dmax ? dmax : step < -dmax ? -dmax : step;
		if (s < 0)
			s += d;
		if (e < 0 && e > INT64_MIN / 2)
			e += d;
		if (step > 0) {
			s = s < 0 ? 0 : s > d ? d : s;
			e = e < 0 ? 0 : e > d ? d : e;
			if (e < s)
				e = s;
			a.start.v[axis] = s;
			a.limit.v[axis] = e;
			a.stride.v[axis] = step;
		} else {
			/* walk backwards: reverse the axis, then slice forwards */
			s = s < 0 ? -1 : s > d - 1 ? d - 1 : s;
			e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
			if (e > s)
				e = s;
			rev[axis] = true;
			a.start.v[axis] = d - 1 - s;
			a.limit.v[axis] = d - 1 - e;
			a.stride.v[axis] = -step;
		}
	}
	struct ir_value *v = in[0];
	struct ir_attrs ra = { 0 };
	for (int i = 0; i < x->rank; i++)
		if (rev[i])
			ra.axes.v[ra.axes.n++] = i;
	if (ra.axes.n)
		v = b_op(c, IR_OP_REVERSE, 1, &v, &ra);
	bool whole = true;
	for (int i = 0; i < x->rank; i++)
		whole &= a.start.v[i] == 0 && a.limit.v[i] == x->dims[i] && a.stride.v[i] == 1;
	return OUT1(whole || !v ? v : b_op(c, IR_OP_SLICE, 1, &v, &a));
}

static int h_gather(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", 0), in[0]->shape.rank, &axis) < 0)
		return -EINVAL;
	struct ir_attrs a = { .axis = axis };
	struct ir_value *ops[2] = { in[0], in[1] };
	return OUT1(b_op(c, IR_OP_GATHER, 2, ops, &a));
}

/* Flat row index for element-wise indexing along `axis`:
 * flat = ((outer * dim) + idx) * inner + inner_pos, where idx is normalized
 * to be non-negative. Used by GatherElements and ScatterElements. */
static struct ir_value *flat_elements_index(struct onnx_ctx *c, struct ir_value *idx, int64_t axis,
					    const struct ir_shape *data)
{
	const struct ir_shape *s = &idx->shape;
	struct ir_value *i64 = b_convert(c, idx, IR_I64);
	int64_t d = data->dims[axis];
	/* negative indices count from the end */
	struct ir_value *neg = b_binary(c, IR_OP_LT, i64, b_scalar(c, IR_I64, 0));
	i64 = b_select(c, neg, b_binary(c, IR_OP_ADD, i64, b_scalar(c, IR_I64, (double)d)), i64);
	struct ir_value *flat = NULL;
	for (int k = 0; k < s->rank && i64; k++) {
		struct ir_value *pos = k == axis ? i64 : b_iota(c, IR_I64, s, k);
		flat = flat ? b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MUL, flat, b_scalar(c, IR_I64, (double)data->dims[k])), pos)
			    : pos;
	}
	return flat;
}

static int h_gather_elements(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	const struct ir_shape *x = &in[0]->shape;
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", 0), x->rank, &axis) < 0)
		return -EINVAL;
	if (in[1]->shape.rank != x->rank)
		return onnx_fail(c, "indices rank %d differs from data rank %d", in[1]->shape.rank, x->rank);
	for (int k = 0; k < x->rank; k++)
		if (k != axis && in[1]->shape.dims[k] > x->dims[k])
			return onnx_fail(c, "indices dim %d exceeds data", k);
	struct ir_value *flat = flat_elements_index(c, in[1], axis, x);
	struct ir_shape all = { 1, { ir_shape_numel(x) } };
	struct ir_value *ops[2] = { b_reshape(c, in[0], &all), flat };
	struct ir_attrs a = { .axis = 0 };
	return OUT1(ops[0] && ops[1] ? b_op(c, IR_OP_GATHER, 2, ops, &a) : NULL);
}

static int h_scatter_elements(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	const struct ir_shape *x = &in[0]->shape;
	int64_t axis;
	char buf[16];
	if (onnx_axis(c, attr_int(c, "axis", 0), x->rank, &axis) < 0)
		return -EINVAL;
	const char *red = attr_string(c, "reduction", "none", buf, sizeof buf);
	int64_t mode = !strcmp(red, "none") ? IR_SCATTER_NONE : !strcmp(red, "add") ? IR_SCATTER_ADD
		     : !strcmp(red, "mul") ? IR_SCATTER_MUL : !strcmp(red, "max") ? IR_SCATTER_MAX
		     : !strcmp(red, "min") ? IR_SCATTER_MIN : -1;
	if (mode < 0)
		return onnx_fail(c, "unknown reduction '%s'", red);
	if (!ir_shape_eq(&in[1]->shape, &in[2]->shape) || in[1]->shape.rank != x->rank)
		return onnx_fail(c, "indices and updates must have one shape of the data's rank");
	struct ir_value *flat = flat_elements_index(c, in[1], axis, x);
	struct ir_shape all = { 1, { ir_shape_numel(x) } }, one = { 1, { ir_shape_numel(&in[2]->shape) } };
	struct ir_value *ops[3] = { b_reshape(c, in[0], &all), b_reshape(c, flat, &one), b_reshape(c, in[2], &one) };
	struct ir_attrs a = { .mode = mode };
	if (!ops[0] || !ops[1] || !ops[2])
		return -EINVAL;
	return OUT1(b_reshape(c, b_op(c, IR_OP_SCATTER, 3, ops, &a), x));
}

/* GatherND / ScatterND with indices [..., K]: the first K data dims are
 * flattened into one row index r = sum idx_k * stride_k. */
static struct ir_value *nd_rows(struct onnx_ctx *c, struct ir_value *idx, const struct ir_shape *x,
				int64_t k, struct ir_value **data, struct ir_value *dv)
{
	const struct ir_shape *s = &idx->shape;
	struct ir_shape lead = { s->rank - 1, { 0 } };
	for (int i = 0; i < s->rank - 1; i++)
		lead.dims[i] = s->dims[i];
	struct ir_value *flat = NULL;
	struct ir_value *i64 = b_convert(c, idx, IR_I64);
	for (int64_t j = 0; j < k && i64; j++) {
		struct ir_value *col = b_reshape(c, b_slice(c, i64, s->rank - 1, j, j + 1, 1), &lead);
		struct ir_value *neg = b_binary(c, IR_OP_LT, col, b_scalar(c, IR_I64, 0));
		col = b_select(c, neg, b_binary(c, IR_OP_ADD, col, b_scalar(c, IR_I64, (double)x->dims[j])), col);
		flat = flat ? b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MUL, flat, b_scalar(c, IR_I64, (double)x->dims[j])), col)
			    : col;
	}
	struct ir_shape rows = { x->rank - (int)k + 1, { 1 } };
	for (int i = 0; i < k; i++)
		rows.dims[0] *= x->dims[i];
	for (int i = (int)k; i < x->rank; i++)
		rows.dims[i - k + 1] = x->dims[i];
	*data = b_reshape(c, dv, &rows);
	return flat;
}

static int h_gather_nd(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	if (attr_int(c, "batch_dims", 0) != 0)
		return onnx_unsupported(c, "batch_dims other than 0 is not supported");
	const struct ir_shape *x = &in[0]->shape, *s = &in[1]->shape;
	int64_t k = s->rank ? s->dims[s->rank - 1] : 0;
	if (s->rank < 1 || k < 1 || k > x->rank)
		return onnx_fail(c, "indices last dim %lld must be in 1..%d", (long long)k, x->rank);
	struct ir_value *data = NULL, *rows = nd_rows(c, in[1], x, k, &data, in[0]);
	struct ir_value *ops[2] = { data, rows };
	struct ir_attrs a = { .axis = 0 };
	return OUT1(data && rows ? b_op(c, IR_OP_GATHER, 2, ops, &a) : NULL);
}

static int h_scatter_nd(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	char buf[16];
	const char *red = attr_string(c, "reduction", "none", buf, sizeof buf);
	int64_t mode = !strcmp(red, "none") ? IR_SCATTER_NONE : !strcmp(red, "add") ? IR_SCATTER_ADD
		     : !strcmp(red, "mul") ? IR_SCATTER_MUL : !strcmp(red, "max") ? IR_SCATTER_MAX
		     : !strcmp(red, "min") ? IR_SCATTER_MIN : -1;
	if (mode < 0)
		return onnx_fail(c, "unknown reduction '%s'", red);
	const struct ir_shape *x = &in[0]->shape, *s = &in[1]->shape;
	int64_t k = s->rank ? s->dims[s->rank - 1] : 0;
	if (s->rank < 1 || k < 1 || k > x->rank)
		return onnx_fail(c, "indices last dim %lld must be in 1..%d", (long long)k, x->rank);
	struct ir_value *data = NULL, *rows = nd_rows(c, in[1], x, k, &data, in[0]);
	if (!data || !rows)
		return -EINVAL;
	struct ir_shape us = rows->shape;
	for (int i = (int)k; i < x->rank; i++)
		us.dims[us.rank++] = x->dims[i];
	struct ir_value *ops[3] = { data, rows, b_reshape(c, in[2], &us) };
	struct ir_attrs a = { .mode = mode };
	return OUT1(ops[2] ? b_reshape(c, b_op(c, IR_OP_SCATTER, 3, ops, &a), x) : NULL);
}

static int h_constant(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	const Onnx__AttributeProto *a;
	if ((a = attr_find(c, "value")) && a->t) {
		struct ir_tensor t;
		if (onnx_tensor_decode(a->t, &t) < 0)
			return -EINVAL;
		out[0] = b_const(c, t.dtype, &t.shape, t.data);
		ir_tensor_free(&t);
		return out[0] ? 0 : -EINVAL;
	}
	struct ir_shape s = { 0 };
	if ((a = attr_find(c, "value_float")))
		return OUT1(b_scalar(c, IR_F32, a->f));
	if ((a = attr_find(c, "value_int")))
		return OUT1(b_const(c, IR_I64, &s, &a->i));
	if ((a = attr_find(c, "value_floats"))) {
		s = (struct ir_shape){ 1, { (int64_t)a->n_floats } };
		return OUT1(b_const(c, IR_F32, &s, a->floats));
	}
	if ((a = attr_find(c, "value_ints"))) {
		s = (struct ir_shape){ 1, { (int64_t)a->n_ints } };
		return OUT1(b_const(c, IR_I64, &s, a->ints));
	}
	return onnx_fail(c, "needs one of value, value_float(s), value_int(s)");
}

static int h_constant_of_shape(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_shape s;
	struct ir_tensor t = { IR_F32, { 0 }, NULL };
	float zero = 0;
	if (shape_from_const(c, in[0], &s, "the shape") < 0 || ir_shape_check(&s) < 0)
		return -EINVAL;
	const Onnx__AttributeProto *a = attr_find(c, "value");
	if (a && a->t && onnx_tensor_decode(a->t, &t) < 0)
		return -EINVAL;
	if (t.data && ir_shape_numel(&t.shape) != 1) {
		ir_tensor_free(&t);
		return onnx_fail(c, "value must hold one element");
	}
	struct ir_shape scalar = { 0 };
	struct ir_value *v = b_const(c, t.dtype, &scalar, t.data ? t.data : &zero);
	if (t.data)
		ir_tensor_free(&t);
	return OUT1(b_broadcast_to(c, v, &s));
}

static int h_range(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	double s, l, d;
	if (onnx_const_scalar(c, in[0], &s, "start") < 0 || onnx_const_scalar(c, in[1], &l, "limit") < 0 ||
	    onnx_const_scalar(c, in[2], &d, "delta") < 0)
		return -EINVAL;
	enum ir_dtype t = in[0]->dtype;
	if (d == 0)
		return onnx_fail(c, "delta is 0");
	double n = ceil((l - s) / d);
	if (!(n >= 0))
		n = 0;
	if (n > (double)IR_MAX_NUMEL)
		return onnx_fail(c, "range of %g elements is absurd", n);
	struct ir_shape sh = { 1, { (int64_t)n } };
	struct ir_value *i = b_iota(c, t, &sh, 0);
	return OUT1(b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MUL, i, b_scalar(c, t, d)), b_scalar(c, t, s)));
}

static int h_tile(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int64_t reps[IR_MAX_RANK];
	const struct ir_shape *x = &in[0]->shape;
	int n = onnx_const_ints(c, in[1], reps, IR_MAX_RANK, "repeats");
	if (n < 0)
		return -EINVAL;
	if (n != x->rank)
		return onnx_fail(c, "repeats has %d entries for rank %d", n, x->rank);
	if (2 * x->rank > IR_MAX_RANK)
		return onnx_fail(c, "rank %d too large to tile", x->rank);
	/* [d0, d1] -> broadcast to [r0, d0, r1, d1] -> reshape [r0*d0, r1*d1] */
	struct ir_shape b = { 2 * x->rank, { 0 } }, r = { x->rank, { 0 } };
	struct ir_attrs a = { .axes.n = x->rank };
	for (int i = 0; i < x->rank; i++) {
		if (reps[i] < 0)
			return onnx_fail(c, "negative repeat");
		b.dims[2 * i] = reps[i];
		b.dims[2 * i + 1] = x->dims[i];
		r.dims[i] = reps[i] * x->dims[i];
		a.axes.v[i] = 2 * i + 1;
	}
	if (ir_shape_check(&b) < 0)
		return -EINVAL;
	a.shape = b;
	struct ir_value *v = in[0];
	return OUT1(b_reshape(c, b_op(c, IR_OP_BROADCAST, 1, &v, &a), &r));
}

static int h_onehot(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	double depth_f;
	if (onnx_const_scalar(c, in[1], &depth_f, "depth") < 0)
		return -EINVAL;
	if (!(depth_f >= 1 && depth_f <= (double)IR_MAX_NUMEL))
		return onnx_fail(c, "depth %g is not a positive size", depth_f);
	if (in[2]->shape.rank != 1 || in[2]->shape.dims[0] != 2)
		return onnx_fail(c, "values must hold [off, on]");
	int64_t depth = (int64_t)depth_f;
	const struct ir_shape *s = &in[0]->shape;
	if (depth < 1 || s->rank + 1 > IR_MAX_RANK)
		return onnx_fail(c, "depth %lld or rank invalid", (long long)depth);
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", -1), s->rank + 1, &axis) < 0)
		return -EINVAL;
	struct ir_shape r = { s->rank + 1, { 0 } };
	for (int i = 0, j = 0; i < r.rank; i++)
		r.dims[i] = i == axis ? depth : s->dims[j++];
	if (ir_shape_check(&r) < 0)
		return -EINVAL;
	struct ir_value *idx = b_convert(c, in[0], IR_I64);
	idx = b_select(c, b_binary(c, IR_OP_LT, idx, b_scalar(c, IR_I64, 0)),
		       b_binary(c, IR_OP_ADD, idx, b_scalar(c, IR_I64, (double)depth)), idx);
	struct ir_shape ks = r;
	ks.dims[axis] = 1;
	struct ir_value *hot = b_binary(c, IR_OP_EQ, b_reshape(c, idx, &ks), b_iota(c, IR_I64, &r, (int)axis));
	struct ir_shape one = { 0 };
	struct ir_value *off = b_reshape(c, b_slice(c, in[2], 0, 0, 1, 1), &one);
	struct ir_value *on = b_reshape(c, b_slice(c, in[2], 0, 1, 2, 1), &one);
	return OUT1(b_select(c, hot, on, off));
}

static int h_cumsum(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int64_t ax[1], axis;
	if (onnx_const_ints(c, in[1], ax, 1, "axis") != 1 || onnx_axis(c, ax[0], in[0]->shape.rank, &axis) < 0)
		return -EINVAL;
	struct ir_attrs a = { .axis = axis, .mode = (attr_int(c, "exclusive", 0) ? IR_CUMSUM_EXCLUSIVE : 0) |
						    (attr_int(c, "reverse", 0) ? IR_CUMSUM_REVERSE : 0) };
	struct ir_value *x = in[0];
	return OUT1(b_op(c, IR_OP_CUMSUM, 1, &x, &a));
}

/* Trilu: keep elements with j - i <= k (lower) or >= k (upper). */
static int h_trilu(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *s = &in[0]->shape;
	int64_t k = 0;
	if (s->rank < 2)
		return onnx_fail(c, "needs rank >= 2");
	if (nin > 1 && in[1] && onnx_const_ints(c, in[1], &k, 1, "k") != 1)
		return -EINVAL;
	struct ir_shape m = { 2, { s->dims[s->rank - 2], s->dims[s->rank - 1] } };
	struct ir_value *diff = b_binary(c, IR_OP_SUB, b_iota(c, IR_I64, &m, 1), b_iota(c, IR_I64, &m, 0));
	struct ir_value *keep = b_binary(c, attr_int(c, "upper", 1) ? IR_OP_GE : IR_OP_LE, diff,
					 b_scalar(c, IR_I64, (double)k));
	return OUT1(b_select(c, keep, in[0], b_scalar(c, in[0]->dtype, 0)));
}

static int h_pad(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *x = &in[0]->shape;
	int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
	char buf[16];
	int n;
	if (c->opset < 11) /* Pad-2: pads and value are attributes */
		n = attr_ints(c, "pads", pads, 2 * IR_MAX_RANK);
	else if (nin > 1 && in[1])
		n = onnx_const_ints(c, in[1], pads, 2 * IR_MAX_RANK, "pads");
	else
		return onnx_fail(c, "input 1 is required");
	if (n < 0)
		return -EINVAL;
	int naxes = x->rank;
	if (nin > 3 && in[3]) {
		if ((naxes = onnx_const_ints(c, in[3], axes, IR_MAX_RANK, "axes")) < 0)
			return -EINVAL;
		for (int i = 0; i < naxes; i++)
			if (onnx_axis(c, axes[i], x->rank, &axes[i]) < 0)
				return -EINVAL;
	} else {
		for (int i = 0; i < naxes; i++)
			axes[i] = i;
	}
	if (n != 2 * naxes)
		return onnx_fail(c, "pads has %d entries, expected %d", n, 2 * naxes);
	const char *mode = attr_string(c, "mode", "constant", buf, sizeof buf);
	struct ir_attrs a = { .pad_lo.n = x->rank, .pad_hi.n = x->rank };
	a.mode = !strcmp(mode, "constant") ? IR_PAD_CONSTANT : !strcmp(mode, "edge") ? IR_PAD_EDGE
	       : !strcmp(mode, "reflect") ? IR_PAD_REFLECT : -1;
	if (a.mode < 0)
		return onnx_fail(c, "unknown mode '%s'", mode);
	if (c->opset < 11) {
		a.value = attr_float(c, "value", 0);
	} else if (nin > 2 && in[2] && onnx_const_scalar(c, in[2], &a.value, "constant_value") < 0) {
		return -EINVAL;
	}
	/* negative pads crop: slice first, then pad the positive parts */
	struct ir_value *v = in[0];
	for (int i = 0; i < naxes; i++) {
		int64_t lo = pads[i], hi = pads[i + naxes], ax = axes[i];
		if (lo < 0 || hi < 0) {
			int64_t d = v->shape.dims[ax];
			int64_t s = lo < 0 ? -lo : 0, e = hi < 0 ? d + hi : d;
			if (s > e)
				return onnx_fail(c, "negative pads remove more than dim %lld holds", (long long)ax);
			v = b_slice(c, v, (int)ax, s, e, 1);
			if (!v)
				return -EINVAL;
		}
		a.pad_lo.v[ax] = lo > 0 ? lo : 0;
		a.pad_hi.v[ax] = hi > 0 ? hi : 0;
	}
	bool any = false;
	for (int i = 0; i < x->rank; i++)
		any |= a.pad_lo.v[i] || a.pad_hi.v[i];
	return OUT1(any ? b_op(c, IR_OP_PAD, 1, &v, &a) : v);
}

/* ---- reductions ---------------------------------------------------------------- */

static int reduce_axes(struct onnx_ctx *c, struct ir_value **in, int nin, int64_t *axes, bool from_input)
{
	int n;
	if (from_input)
		n = nin > 1 && in[1] ? onnx_const_ints(c, in[1], axes, IR_MAX_RANK, "axes") : 0;
	else
		n = attr_ints(c, "axes", axes, IR_MAX_RANK);
	if (n < 0)
		return -EINVAL;
	if (n == 0 && !attr_int(c, "noop_with_empty_axes", 0)) {
		for (int i = 0; i < in[0]->shape.rank; i++)
			axes[i] = i;
		n = in[0]->shape.rank;
	}
	return n;
}

static int h_reduce(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const char *op = op_type(c) + strlen("Reduce");
	int64_t axes[IR_MAX_RANK];
	/* ReduceSum takes axes as an input from opset 13, the others from 18 */
	int n = reduce_axes(c, in, nin, axes, (strcmp(op, "Sum") == 0 && c->opset >= 13) || c->opset >= 18);
	if (n < 0)
		return -EINVAL;
	bool keep = attr_int(c, "keepdims", 1);
	struct ir_value *x = in[0], *r;
	double count = 1;
	for (int i = 0; i < n; i++) {
		int64_t ax;
		if (onnx_axis(c, axes[i], x->shape.rank, &ax) < 0)
			return -EINVAL;
		count *= (double)x->shape.dims[ax];
	}
	if (!strcmp(op, "Sum"))
		r = b_reduce(c, IR_OP_REDUCE_SUM, x, axes, n, keep);
	else if (!strcmp(op, "Mean"))
		r = b_binary(c, IR_OP_DIV, b_reduce(c, IR_OP_REDUCE_SUM, x, axes, n, keep), b_scalar(c, x->dtype, count));
	else if (!strcmp(op, "Max"))
		r = b_reduce(c, IR_OP_REDUCE_MAX, x, axes, n, keep);
	else if (!strcmp(op, "Min"))
		r = b_reduce(c, IR_OP_REDUCE_MIN, x, axes, n, keep);
	else if (!strcmp(op, "Prod"))
		r = b_reduce(c, IR_OP_REDUCE_PROD, x, axes, n, keep);
	else if (!strcmp(op, "L1"))
		r = b_reduce(c, IR_OP_REDUCE_SUM, b_unary(c, IR_OP_ABS, x), axes, n, keep);
	else if (!strcmp(op, "L2"))
		r = b_unary(c, IR_OP_SQRT, b_reduce(c, IR_OP_REDUCE_SUM, b_binary(c, IR_OP_MUL, x, x), axes, n, keep));
	else if (!strcmp(op, "SumSquare"))
		r = b_reduce(c, IR_OP_REDUCE_SUM, b_binary(c, IR_OP_MUL, x, x), axes, n, keep);
	else if (!strcmp(op, "LogSum"))
		r = b_unary(c, IR_OP_LOG, b_reduce(c, IR_OP_REDUCE_SUM, x, axes, n, keep));
	else {
		/* LogSumExp: m + log(sum(exp(x - m))), m the max kept for broadcast */
		struct ir_value *m = b_reduce(c, IR_OP_REDUCE_MAX, x, axes, n, true);
		struct ir_value *e = b_unary(c, IR_OP_EXP, b_binary(c, IR_OP_SUB, x, m));
		r = b_binary(c, IR_OP_ADD, b_unary(c, IR_OP_LOG, b_reduce(c, IR_OP_REDUCE_SUM, e, axes, n, true)), m);
		if (r && !keep)
			r = b_reduce(c, IR_OP_REDUCE_SUM, r, axes, n, false); /* drops size-1 dims */
	}
	return OUT1(r);
}

static int h_argmax(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int64_t axis;
	struct ir_value *x = in[0];
	if (onnx_axis(c, attr_int(c, "axis", 0), x->shape.rank, &axis) < 0)
		return -EINVAL;
	struct ir_attrs a = { .axis = axis, .mode = attr_int(c, "select_last_index", 0) ? IR_ARG_LAST : 0 };
	struct ir_value *r = b_op(c, strcmp(op_type(c), "ArgMax") == 0 ? IR_OP_ARGMAX : IR_OP_ARGMIN, 1, &x, &a);
	if (r && attr_int(c, "keepdims", 1)) {
		struct ir_shape s = x->shape;
		s.dims[axis] = 1;
		r = b_reshape(c, r, &s);
	}
	return OUT1(r);
}

#define BIN "" /* binary ops take no attributes */
const struct onnx_op_def onnx_ops_basic[] = {
	{ "Abs", h_unary, "" }, { "Neg", h_unary, "" }, { "Exp", h_unary, "" },
	{ "Log", h_unary, "" }, { "Sqrt", h_unary, "" }, { "Reciprocal", h_unary, "" },
	{ "Tanh", h_unary, "" }, { "Erf", h_unary, "" }, { "Sigmoid", h_unary, "" },
	{ "Relu", h_unary, "" }, { "Sin", h_unary, "" }, { "Cos", h_unary, "" },
	{ "Tan", h_unary, "" }, { "Asin", h_unary, "" }, { "Acos", h_unary, "" },
	{ "Atan", h_unary, "" }, { "Sinh", h_unary, "" }, { "Cosh", h_unary, "" },
	{ "Asinh", h_unary, "" }, { "Acosh", h_unary, "" }, { "Atanh", h_unary, "" },
	{ "Floor", h_unary, "" }, { "Ceil", h_unary, "" }, { "Round", h_unary, "" },
	{ "Not", h_unary, "" }, { "Sign", h_unary, "" },
	{ "IsNaN", h_isinf, "" }, { "IsInf", h_isinf, "detect_negative detect_positive" },
	{ "Add", h_binary, BIN }, { "Sub", h_binary, BIN }, { "Mul", h_binary, BIN },
	{ "Div", h_binary, BIN }, { "And", h_binary, BIN }, { "Or", h_binary, BIN },
	{ "Xor", h_binary, BIN }, { "Equal", h_binary, BIN }, { "Less", h_binary, BIN },
	{ "LessOrEqual", h_binary, BIN }, { "Greater", h_binary, BIN },
	{ "GreaterOrEqual", h_binary, BIN }, { "Max", h_binary, BIN }, { "Min", h_binary, BIN },
	{ "Sum", h_binary, BIN }, { "Mean", h_binary, BIN },
	{ "Pow", h_pow, "" }, { "Mod", h_mod, "fmod" }, { "Where", h_where, "" },
	{ "Identity", h_identity, "" }, { "Dropout", h_dropout, "seed ratio" },
	{ "Cast", h_cast, "to saturate" }, { "CastLike", h_cast, "" }, { "Clip", h_clip, "min max" },
	{ "LeakyRelu", h_activation, "alpha" }, { "Elu", h_activation, "alpha" },
	{ "Selu", h_activation, "alpha gamma" }, { "Celu", h_activation, "alpha" },
	{ "HardSigmoid", h_activation, "alpha beta" }, { "HardSwish", h_activation, "" },
	{ "Softplus", h_activation, "" }, { "Softsign", h_activation, "" },
	{ "ThresholdedRelu", h_activation, "alpha" }, { "PRelu", h_activation, "" },
	{ "Mish", h_activation, "" },
	{ "Shape", h_shape, "start end" }, { "Size", h_size, "" },
	{ "Reshape", h_reshape, "allowzero" }, { "Flatten", h_flatten, "axis" },
	{ "Squeeze", h_squeeze, "axes" }, { "Unsqueeze", h_unsqueeze, "axes" },
	{ "Transpose", h_transpose, "perm" }, { "Expand", h_expand, "" },
	{ "Concat", h_concat, "axis" }, { "Split", h_split, "axis split" }, { "Slice", h_slice, "starts ends axes" },
	{ "Gather", h_gather, "axis" }, { "GatherElements", h_gather_elements, "axis" },
	{ "GatherND", h_gather_nd, "batch_dims" },
	{ "ScatterElements", h_scatter_elements, "axis reduction" },
	{ "ScatterND", h_scatter_nd, "reduction" },
	{ "Constant", h_constant, "value value_float value_floats value_int value_ints" },
	{ "ConstantOfShape", h_constant_of_shape, "value" }, { "Range", h_range, "" },
	{ "Tile", h_tile, "" }, { "OneHot", h_onehot, "axis" },
	{ "CumSum", h_cumsum, "exclusive reverse" }, { "Trilu", h_trilu, "upper" },
	{ "Pad", h_pad, "mode pads value" },
	{ "ReduceSum", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceMean", h_reduce, "axes keepdims" }, { "ReduceMax", h_reduce, "axes keepdims" },
	{ "ReduceMin", h_reduce, "axes keepdims" }, { "ReduceProd", h_reduce, "axes keepdims" },
	{ "ReduceL1", h_reduce, "axes keepdims" }, { "ReduceL2", h_reduce, "axes keepdims" },
	{ "ReduceSumSquare", h_reduce, "axes keepdims" }, { "ReduceLogSum", h_reduce, "axes keepdims" },
	{ "ReduceLogSumExp", h_reduce, "axes keepdims" },
	{ "ArgMax", h_argmax, "axis keepdims select_last_index" },
	{ "ArgMin", h_argmax, "axis keepdims select_last_index" },
};
const int onnx_ops_basic_count = sizeof onnx_ops_basic / sizeof onnx_ops_basic[0];
