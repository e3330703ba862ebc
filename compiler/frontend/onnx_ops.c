/*
 * onnx_ops.c: ONNX elementwise ops, activations and reductions -> core ops.
 *
 * One handler per ONNX op (or per family of ops with one rule). Handlers
 * read attributes, check what the core ops cannot know (ONNX conventions
 * such as negative axes and -1 in Reshape), and build through the b_*
 * builders, which broadcast explicitly and fold constants. Opset-dependent
 * forms are chosen on c->opset (7..21).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/frontend/onnx_internal.h"

static const char *op_type(struct onnx_ctx *c)
{
	return c->node->op_type;
}

/* ---- elementwise ------------------------------------------------------------ */

static const struct {
	const char *onnx;
	enum ir_op op;
} unary_map[] = {
	{ "Abs", IR_OP_ABS },     { "Neg", IR_OP_NEG },     { "Exp", IR_OP_EXP },
	{ "Log", IR_OP_LOG },     { "Sqrt", IR_OP_SQRT },   { "Reciprocal", IR_OP_RECIP },
	{ "Tanh", IR_OP_TANH },   { "Erf", IR_OP_ERF },     { "Sigmoid", IR_OP_SIGMOID },
	{ "Relu", IR_OP_RELU },   { "Sin", IR_OP_SIN },     { "Cos", IR_OP_COS },
	{ "Tan", IR_OP_TAN },     { "Asin", IR_OP_ASIN },   { "Acos", IR_OP_ACOS },
	{ "Atan", IR_OP_ATAN },   { "Sinh", IR_OP_SINH },   { "Cosh", IR_OP_COSH },
	{ "Asinh", IR_OP_ASINH }, { "Acosh", IR_OP_ACOSH }, { "Atanh", IR_OP_ATANH },
	{ "Floor", IR_OP_FLOOR }, { "Ceil", IR_OP_CEIL },   { "Round", IR_OP_ROUND },
	{ "Not", IR_OP_NOT },     { "Sign", IR_OP_SIGN },   { "BitwiseNot", IR_OP_NOT },
};

/* And, Or, Xor, Not take bool; Bitwise* (opset 18) integers: the core ops
 * take either. */
static int logic_operand(struct onnx_ctx *c, enum ir_op op, const struct ir_value *x)
{
	bool bitwise = strncmp(op_type(c), "Bitwise", 7) == 0;
	if (!(ir_op_flags(op) & IR_OPF_LOGIC) ||
	    (bitwise ? x->dtype != IR_BOOL && !ir_dtype_is_float(x->dtype) : x->dtype == IR_BOOL))
		return 0;
	return onnx_fail(c, "needs %s operands, got %s", bitwise ? "integer" : "bool", ir_dtype_name(x->dtype));
}

static int h_unary(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	ARITY(1);
	for (size_t i = 0; i < sizeof unary_map / sizeof unary_map[0]; i++)
		if (strcmp(unary_map[i].onnx, op_type(c)) == 0)
			return logic_operand(c, unary_map[i].op, in[0]) < 0 ? -EINVAL
									    : OUT1(b_unary(c, unary_map[i].op, in[0]));
	IR_ASSERT(!"unary op missing from unary_map");
}

static const struct {
	const char *onnx;
	enum ir_op op;
	bool variadic; /* one input or more; else exactly two */
} binary_map[] = {
	{ "Add", IR_OP_ADD, false },
	{ "Sub", IR_OP_SUB, false },
	{ "Mul", IR_OP_MUL, false },
	{ "Div", IR_OP_DIV, false },
	{ "And", IR_OP_AND, false },
	{ "Or", IR_OP_OR, false },
	{ "Xor", IR_OP_XOR, false },
	{ "Equal", IR_OP_EQ, false },
	{ "Less", IR_OP_LT, false },
	{ "LessOrEqual", IR_OP_LE, false },
	{ "Greater", IR_OP_GT, false },
	{ "GreaterOrEqual", IR_OP_GE, false },
	{ "Max", IR_OP_MAX, true },
	{ "Min", IR_OP_MIN, true },
	{ "Sum", IR_OP_ADD, true },
	{ "Mean", IR_OP_ADD, true },
	/* opset 18: the core ops are bitwise on integers */
	{ "BitwiseAnd", IR_OP_AND, false },
	{ "BitwiseOr", IR_OP_OR, false },
	{ "BitwiseXor", IR_OP_XOR, false },
};

/* Binary and variadic (Max, Min, Sum, Mean) elementwise ops. */
static int h_binary(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	enum ir_op op = IR_OP_COUNT;
	bool variadic = false;
	for (size_t i = 0; i < sizeof binary_map / sizeof binary_map[0]; i++)
		if (strcmp(binary_map[i].onnx, op_type(c)) == 0) {
			op = binary_map[i].op;
			variadic = binary_map[i].variadic;
		}
	IR_ASSERT(op != IR_OP_COUNT);
	NEED(0);
	if (!variadic)
		ARITY(2);
	if (logic_operand(c, op, in[0]) < 0)
		return -EINVAL;
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

/* The one value of every element of constant v, or NAN when they differ
 * or v is not a compile-time constant (a float initializer is a
 * parameter, which --trainable may train: its value is not fixed). */
static double uniform_const(const struct ir_value *v)
{
	if (!onnx_is_const(v))
		return NAN;
	struct ir_tensor t = { v->dtype, v->shape, (void *)v->def->a.data };
	int64_t n = ir_shape_numel(&t.shape);
	double e = n ? ir_tensor_get_f64(&t, 0) : NAN;
	for (int64_t i = 1; i < n && e == e; i++)
		if (ir_tensor_get_f64(&t, i) != e)
			e = NAN;
	return e;
}

/* x^e for a constant e in {1, 2, 3, 4, -1, 0.5} as multiplies, a
 * reciprocal or a square root, on x broadcast to p's shape (p: the Pow
 * built as usual, left dead); NULL for other exponents. */
static struct ir_value *pow_by_mul(struct onnx_ctx *c, struct ir_value *x, double e, const struct ir_value *p)
{
	if (e != 1 && e != 2 && e != 3 && e != 4 && e != -1 && e != 0.5)
		return NULL;
	struct ir_value *b = b_broadcast_to(c, x, &p->shape);
	if (!b || e == 1)
		return b;
	if (e == -1)
		return b_unary(c, IR_OP_RECIP, b);
	if (e == 0.5)
		return b_unary(c, IR_OP_SQRT, b);
	struct ir_value *sq = b_binary(c, IR_OP_MUL, b, b);
	return e == 2 ? sq : b_binary(c, IR_OP_MUL, sq, e == 3 ? b : sq);
}

/* Pow allows an exponent of another type; computed in the base's. A
 * float Pow by a constant small integer, -1 or 0.5 (gelu_new's x^3, a
 * variance's x^2) becomes multiplies, a reciprocal or a square root here
 * at import, so that the interpreter, the host and the GPU code all skip
 * libm's pow (GPT-2's gelu took twice the time through it). x*x*x rounds
 * twice, within 2 ulp of pow's result; x^0.5 as sqrt differs from pow
 * only at -0 (-0, pow's +0) and -inf (NaN, pow's +inf). */
static int h_pow(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	ARITY(2);
	NEED(0);
	NEED(1);
	struct ir_value *e = b_convert(c, in[1], in[0]->dtype);
	struct ir_value *p = b_binary(c, IR_OP_POW, in[0], e);
	if (!p || onnx_is_const(p) || !ir_dtype_is_float(p->dtype))
		return OUT1(p);
	struct ir_value *m = pow_by_mul(c, in[0], uniform_const(e), p);
	return OUT1(m ? m : p);
}

/* Mod: fmod=1 is C's remainder; fmod=0 (integers) takes the divisor's sign. */
static int h_mod(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	ARITY(2);
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
	ARITY(3);
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

/* Dropout at inference (training_mode absent or false), or in training
 * mode with a constant ratio of 0 (what a model whose dropout
 * probabilities are 0 exports in training mode): identity, mask of ones. */
static int h_dropout(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	if (nin > 2 && in[2]) {
		double training, ratio = 0.5; /* the default ratio */
		if (onnx_const_scalar(c, in[2], &training, "training_mode") < 0)
			return -EINVAL;
		if (training != 0 && nin > 1 && in[1] && onnx_const_scalar(c, in[1], &ratio, "ratio") < 0)
			return -EINVAL;
		if (training != 0 && ratio != 0)
			return onnx_unsupported(
				c, "training-mode dropout (ratio %g) is not supported yet; only ratio 0 is", ratio);
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
		if (onnx_dtype_to_ir((int32_t)a->i, &t) < 0) {
			ir_error_prefix("output \"%s\"", c->node->n_output ? c->node->output[0] : "");
			return -ENOTSUP;
		}
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
		struct ir_value *neg = b_binary(c, IR_OP_MUL, scalar_like(c, x, alpha), b_binary(c, IR_OP_SUB, e, one));
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
		r = b_unary(c, IR_OP_SOFTPLUS, x);
	} else if (strcmp(op, "Softsign") == 0) {
		r = b_binary(c, IR_OP_DIV, x, b_binary(c, IR_OP_ADD, one, b_unary(c, IR_OP_ABS, x)));
	} else if (strcmp(op, "ThresholdedRelu") == 0) {
		r = b_select(c, b_binary(c, IR_OP_GT, x, scalar_like(c, x, attr_float(c, "alpha", 1.0))), x, zero);
	} else if (strcmp(op, "PRelu") == 0) {
		NEED(1);
		r = b_select(c, b_binary(c, IR_OP_GE, x, zero), x, b_binary(c, IR_OP_MUL, x, in[1]));
	} else if (strcmp(op, "Gelu") == 0) {
		/* Gelu-20: x/2 (1 + erf(x / sqrt 2)), or with approximate="tanh"
		 * x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
		char buf[16];
		const char *ap = attr_string(c, "approximate", "none", buf, sizeof buf);
		struct ir_value *t;
		if (!strcmp(ap, "none")) {
			t = b_unary(c, IR_OP_ERF, b_binary(c, IR_OP_MUL, x, scalar_like(c, x, M_SQRT1_2)));
		} else if (!strcmp(ap, "tanh")) {
			struct ir_value *x3 = b_binary(c, IR_OP_MUL, b_binary(c, IR_OP_MUL, x, x), x);
			struct ir_value *arg = b_binary(c, IR_OP_ADD, x,
							b_binary(c, IR_OP_MUL, x3, scalar_like(c, x, 0.044715)));
			t = b_unary(c, IR_OP_TANH, b_binary(c, IR_OP_MUL, arg, scalar_like(c, x, sqrt(2 / M_PI))));
		} else {
			return onnx_fail(c, "unknown approximate '%s' (none or tanh)", ap);
		}
		r = b_binary(c, IR_OP_MUL, b_binary(c, IR_OP_MUL, x, scalar_like(c, x, 0.5)),
			     b_binary(c, IR_OP_ADD, one, t));
	} else if (strcmp(op, "Mish") == 0) {
		r = b_binary(c, IR_OP_MUL, x, b_unary(c, IR_OP_TANH, b_unary(c, IR_OP_SOFTPLUS, x)));
	}
	return OUT1(r);
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
	if (attr_since(c, "noop_with_empty_axes", strcmp(op, "Sum") == 0 ? 13 : 18) < 0)
		return -ENOTSUP;
	/* ReduceSum takes axes as an input from opset 13, the others from 18 */
	int n = reduce_axes(c, in, nin, axes, (strcmp(op, "Sum") == 0 && c->opset >= 13) || c->opset >= 18);
	if (n < 0)
		return -EINVAL;
	/* noop_with_empty_axes and no axes: the input as it is, for every
	 * Reduce* as the spec says (ONNX's reference squares it in
	 * ReduceSumSquare) */
	if (n == 0 && attr_int(c, "noop_with_empty_axes", 0)) {
		out[0] = in[0];
		return 0;
	}
	bool keep = attr_int(c, "keepdims", 1);
	struct ir_value *x = in[0], *r;
	/* ReduceMax/Min-20 take bool: any and all, reduced as 0 and 1 */
	if (x->dtype == IR_BOOL && (!strcmp(op, "Max") || !strcmp(op, "Min"))) {
		r = b_reduce(c, op[1] == 'a' ? IR_OP_REDUCE_MAX : IR_OP_REDUCE_MIN, b_convert(c, x, IR_U8), axes, n,
			     keep);
		return OUT1(b_convert(c, r, IR_BOOL));
	}
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
		r = b_binary(c, IR_OP_DIV, b_reduce(c, IR_OP_REDUCE_SUM, x, axes, n, keep),
			     b_scalar(c, x->dtype, count));
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

const struct onnx_op_def onnx_ops_basic[] = {
	{ "Add", h_binary, "" },
	{ "Sub", h_binary, "" },
	{ "Mul", h_binary, "" },
	{ "Div", h_binary, "" },
	{ "And", h_binary, "" },
	{ "Or", h_binary, "" },
	{ "Xor", h_binary, "" },
	{ "BitwiseAnd", h_binary, "" },
	{ "BitwiseOr", h_binary, "" },
	{ "BitwiseXor", h_binary, "" },
	{ "BitwiseNot", h_unary, "" },
	{ "Equal", h_binary, "" },
	{ "Less", h_binary, "" },
	{ "LessOrEqual", h_binary, "" },
	{ "Greater", h_binary, "" },
	{ "GreaterOrEqual", h_binary, "" },
	{ "Max", h_binary, "" },
	{ "Min", h_binary, "" },
	{ "Sum", h_binary, "" },
	{ "Mean", h_binary, "" },
	{ "Abs", h_unary, "" },
	{ "Neg", h_unary, "" },
	{ "Exp", h_unary, "" },
	{ "Log", h_unary, "" },
	{ "Sqrt", h_unary, "" },
	{ "Reciprocal", h_unary, "" },
	{ "Tanh", h_unary, "" },
	{ "Erf", h_unary, "" },
	{ "Sigmoid", h_unary, "" },
	{ "Relu", h_unary, "" },
	{ "Sin", h_unary, "" },
	{ "Cos", h_unary, "" },
	{ "Tan", h_unary, "" },
	{ "Asin", h_unary, "" },
	{ "Acos", h_unary, "" },
	{ "Atan", h_unary, "" },
	{ "Sinh", h_unary, "" },
	{ "Cosh", h_unary, "" },
	{ "Asinh", h_unary, "" },
	{ "Acosh", h_unary, "" },
	{ "Atanh", h_unary, "" },
	{ "Floor", h_unary, "" },
	{ "Ceil", h_unary, "" },
	{ "Round", h_unary, "" },
	{ "Not", h_unary, "" },
	{ "Sign", h_unary, "" },
	{ "IsNaN", h_isinf, "" },
	{ "IsInf", h_isinf, "detect_negative detect_positive" },
	{ "Pow", h_pow, "" },
	{ "Mod", h_mod, "fmod" },
	{ "Where", h_where, "" },
	{ "Identity", h_identity, "" },
	{ "Dropout", h_dropout, "seed ratio" },
	{ "Cast", h_cast, "to saturate" },
	{ "CastLike", h_cast, "saturate" }, /* saturate (19): float8 targets only */
	{ "Clip", h_clip, "min max" },
	{ "LeakyRelu", h_activation, "alpha" },
	{ "Elu", h_activation, "alpha" },
	{ "Selu", h_activation, "alpha gamma" },
	{ "Celu", h_activation, "alpha" },
	{ "HardSigmoid", h_activation, "alpha beta" },
	{ "HardSwish", h_activation, "" },
	{ "Softplus", h_activation, "" },
	{ "Softsign", h_activation, "" },
	{ "ThresholdedRelu", h_activation, "alpha" },
	{ "PRelu", h_activation, "" },
	{ "Mish", h_activation, "" },
	{ "Gelu", h_activation, "approximate" },
	{ "ReduceSum", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceMean", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceMax", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceMin", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceProd", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceL1", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceL2", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceSumSquare", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceLogSum", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ReduceLogSumExp", h_reduce, "axes keepdims noop_with_empty_axes" },
	{ "ArgMax", h_argmax, "axis keepdims select_last_index" },
	{ "ArgMin", h_argmax, "axis keepdims select_last_index" },
};
const int onnx_ops_basic_count = sizeof onnx_ops_basic / sizeof onnx_ops_basic[0];
