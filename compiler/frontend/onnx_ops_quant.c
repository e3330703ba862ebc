/*
 * onnx_ops_quant.c: ONNX's linear quantization ops -> core ops
 * (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
 * QLinearMatMul). None is a core op: each is exact arithmetic on ops every
 * later stage already handles, in the order the ONNX spec and ONNX
 * Runtime's CPU kernels compute it:
 *
 *   quantize(x, s, zp)   = convert(clamp(round(f32(x) / f32(s)) + zp, qmin, qmax))
 *   dequantize(q, s, zp) = f32(i32(q) - i32(zp)) * f32(s), then s's type
 *   integer matmul       = dot of i32(a) - i32(a_zp) and i32(b) - i32(b_zp),
 *                          accumulated in i32 (the interpreter's integer
 *                          dot wraps modulo 2^32 as int32 accumulation does)
 *
 * round is ROUND, half to even; the clamp saturates to int8 [-128, 127] or
 * uint8 [0, 255]. Only the steps the spec rounds round (in f32): the
 * division by the scale, the product with it, and QLinearMatMul's
 * product with a_scale * b_scale / y_scale; the rest is exact.
 * A scale or zero point is a scalar (per tensor) or 1-D along one axis
 * (per axis: QuantizeLinear and DequantizeLinear's axis, A's rows and B's
 * columns in the matmuls); blocked quantization (block_size, opset 21)
 * and the 16-bit, 4-bit and 8-bit float types are refused.
 *
 * These graphs run for inference: with onnx_import_opts.updates (a train
 * step) every op here is refused, since a gradient through round and an
 * integer conversion is zero and the scales alone would train.
 *
 * Example: QuantizeLinear(x = [-1.5, 0.25, 300], s = 0.5, zp = int8 1) is
 * round([-3, 0.5, 600]) + 1 = [-2, 1, 601] clamped to [-2, 1, 127].
 */
#include <errno.h>

#include "compiler/frontend/onnx_internal.h"

/* The saturation range of quantized type t; -ENOTSUP for another type. */
static int qrange(struct onnx_ctx *c, enum ir_dtype t, const char *what, double *lo, double *hi)
{
	if (t == IR_U8) {
		*lo = 0, *hi = 255;
		return 0;
	}
	if (t == IR_I8) {
		*lo = -128, *hi = 127;
		return 0;
	}
	return onnx_unsupported(c, "%s is %s; pcc quantizes to int8 and uint8 only", what, ir_dtype_name(t));
}

static int inference_only(struct onnx_ctx *c)
{
	if (!c->opts->updates)
		return 0;
	return onnx_unsupported(c, "quantized ops run for inference only; pcc does not train through them "
				   "(train the float model, then quantize it)");
}

/* A handler's code after a builder or along() failed: the message's
 * (-ENOTSUP for what pcc does not support), else -EINVAL. */
static int failed(void)
{
	return ir_error_code() == -ENOTSUP ? -ENOTSUP : -EINVAL;
}

/* Scale or zero point v of x: one element applies to all of x (a
 * scalar); a 1-D v of x's dims[axis] elements lies along axis (shaped
 * [1, .., n, .., 1] to broadcast). axis < 0: per tensor only. NULL with
 * a message otherwise. */
static struct ir_value *along(struct onnx_ctx *c, struct ir_value *v, const struct ir_value *x, int64_t axis,
			      const char *what)
{
	char b[IR_SHAPE_STR_MAX];
	if (ir_shape_numel(&v->shape) == 1)
		return b_reshape(c, v, &(struct ir_shape){ 0 });
	if (v->shape.rank == 1 && axis >= 0 && v->shape.dims[0] == x->shape.dims[axis]) {
		struct ir_shape s = { x->shape.rank, { 0 } };
		for (int i = 0; i < s.rank; i++)
			s.dims[i] = i == axis ? v->shape.dims[0] : 1;
		return b_reshape(c, v, &s);
	}
	if (v->shape.rank > 1)
		onnx_unsupported(c,
				 "%s has shape %s: blocked quantization is not supported (per tensor or per axis only)",
				 what, ir_shape_str(&v->shape, b, sizeof b));
	else if (axis < 0)
		onnx_fail(c, "%s has shape %s; it must be a scalar here", what, ir_shape_str(&v->shape, b, sizeof b));
	else
		onnx_fail(c, "%s has shape %s; it must be a scalar or 1-D of %lld elements (dimension %lld of %s)",
			  what, ir_shape_str(&v->shape, b, sizeof b), (long long)x->shape.dims[axis], (long long)axis,
			  ir_shape_str(&x->shape, (char[IR_SHAPE_STR_MAX]){ 0 }, IR_SHAPE_STR_MAX));
	return NULL;
}

/* The per-axis axis attribute (opset 13; default 1, or none for a
 * vector or scalar x) normalized against x's rank (-1: per tensor only),
 * and blocked quantization refused. */
static int quant_axis(struct onnx_ctx *c, const struct ir_value *x, int64_t *axis)
{
	int rc;
	if ((rc = attr_since(c, "axis", 13)) < 0 || (rc = attr_since(c, "block_size", 21)) < 0)
		return rc;
	int64_t bs = attr_int(c, "block_size", 0);
	if (bs != 0)
		return onnx_unsupported(c, "block_size %lld: blocked quantization is not supported", (long long)bs);
	*axis = -1;
	if (attr_find(c, "axis"))
		return onnx_axis(c, attr_int(c, "axis", 1), x->shape.rank, axis);
	if (x->shape.rank > 1)
		*axis = 1;
	return 0;
}

/* round(v) + zp (f32, may be NULL), saturated to [lo, hi], as type t. */
static struct ir_value *saturate(struct onnx_ctx *c, struct ir_value *v, struct ir_value *zp, double lo, double hi,
				 enum ir_dtype t)
{
	v = b_unary(c, IR_OP_ROUND, v);
	if (zp)
		v = b_binary(c, IR_OP_ADD, v, zp);
	v = b_binary(c, IR_OP_MAX, v, b_scalar(c, IR_F32, lo));
	v = b_binary(c, IR_OP_MIN, v, b_scalar(c, IR_F32, hi));
	return b_convert(c, v, t);
}

static int h_quantize(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *x = in[0], *s = in[1], *zp = nin > 2 ? in[2] : NULL;
	int64_t axis;
	double lo = 0, hi = 0;
	int rc;
	if ((rc = inference_only(c)) < 0 || (rc = quant_axis(c, x, &axis)) < 0 ||
	    (rc = attr_since(c, "saturate", 19)) < 0 || (rc = attr_since(c, "output_dtype", 21)) < 0)
		return rc;
	if (!ir_dtype_is_float(x->dtype) && x->dtype != IR_I32)
		return onnx_fail(c, "x must be floating point or int32, not %s", ir_dtype_name(x->dtype));
	if (!ir_dtype_is_float(s->dtype))
		return onnx_fail(c, "y_scale must be floating point, not %s", ir_dtype_name(s->dtype));
	enum ir_dtype t = zp ? zp->dtype : IR_U8;
	const Onnx__AttributeProto *od = attr_find(c, "output_dtype");
	if (od && od->has_i && od->i != 0) {
		enum ir_dtype want;
		if (onnx_dtype_to_ir((int32_t)od->i, &want) < 0 || (zp && want != zp->dtype))
			return onnx_unsupported(c, "output_dtype %lld is not the zero point's type or not int8/uint8",
						(long long)od->i);
		t = want;
	}
	if ((rc = qrange(c, t, "the quantized type", &lo, &hi)) < 0)
		return rc;
	struct ir_value *sf = b_convert(c, along(c, s, x, axis, "y_scale"), IR_F32), *zf = NULL;
	if (!sf || (zp && !(zf = b_convert(c, along(c, zp, x, axis, "y_zero_point"), IR_F32))))
		return failed();
	return OUT1(saturate(c, b_binary(c, IR_OP_DIV, b_convert(c, x, IR_F32), sf), zf, lo, hi, t));
}

static int h_dequantize(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *x = in[0], *s = in[1], *zp = nin > 2 ? in[2] : NULL;
	int64_t axis;
	double lo = 0, hi = 0;
	int rc;
	if ((rc = inference_only(c)) < 0 || (rc = quant_axis(c, x, &axis)) < 0)
		return rc;
	if (x->dtype != IR_I32 && (rc = qrange(c, x->dtype, "x", &lo, &hi)) < 0)
		return rc;
	if (!ir_dtype_is_float(s->dtype))
		return onnx_fail(c, "x_scale must be floating point, not %s", ir_dtype_name(s->dtype));
	if (zp && zp->dtype != x->dtype)
		return onnx_fail(c, "x_zero_point is %s, x %s", ir_dtype_name(zp->dtype), ir_dtype_name(x->dtype));
	struct ir_value *q = b_convert(c, x, IR_I32);
	if (zp)
		q = b_binary(c, IR_OP_SUB, q, b_convert(c, along(c, zp, x, axis, "x_zero_point"), IR_I32));
	struct ir_value *sf = b_convert(c, along(c, s, x, axis, "x_scale"), IR_F32);
	if (!q || !sf)
		return failed();
	return OUT1(b_convert(c, b_binary(c, IR_OP_MUL, b_convert(c, q, IR_F32), sf), s->dtype));
}

/* DynamicQuantizeLinear: uint8 with the scale and zero point of x's range
 * widened to hold 0. Where that range is empty (x all zeros) the spec
 * divides by a zero scale; the scale is 1 there, as ONNX Runtime has it. */
static int h_dyn_quantize(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	int rc;
	if ((rc = inference_only(c)) < 0)
		return rc;
	if (x->dtype != IR_F32)
		return onnx_fail(c, "x must be float, not %s", ir_dtype_name(x->dtype));
	int64_t axes[IR_MAX_RANK];
	for (int i = 0; i < x->shape.rank; i++)
		axes[i] = i;
	struct ir_value *mx = x, *mn = x;
	if (x->shape.rank > 0) {
		mx = b_reduce(c, IR_OP_REDUCE_MAX, x, axes, x->shape.rank, false);
		mn = b_reduce(c, IR_OP_REDUCE_MIN, x, axes, x->shape.rank, false);
	}
	struct ir_value *zero = b_scalar(c, IR_F32, 0);
	mx = b_binary(c, IR_OP_MAX, mx, zero);
	mn = b_binary(c, IR_OP_MIN, mn, zero);
	struct ir_value *range = b_binary(c, IR_OP_SUB, mx, mn);
	struct ir_value *s = b_select(c, b_binary(c, IR_OP_EQ, range, zero), b_scalar(c, IR_F32, 1),
				      b_binary(c, IR_OP_DIV, range, b_scalar(c, IR_F32, 255)));
	/* the zero point: qmin - min / scale, saturated, rounded */
	struct ir_value *zf = b_unary(c, IR_OP_NEG, b_binary(c, IR_OP_DIV, mn, s));
	zf = b_unary(c, IR_OP_ROUND,
		     b_binary(c, IR_OP_MIN, b_binary(c, IR_OP_MAX, zf, zero), b_scalar(c, IR_F32, 255)));
	out[0] = saturate(c, b_binary(c, IR_OP_DIV, x, s), zf, 0, 255, IR_U8);
	if (nout > 1)
		out[1] = s;
	if (nout > 2)
		out[2] = b_convert(c, zf, IR_U8);
	return out[0] && s && zf ? 0 : -EINVAL;
}

/* i32(v) - i32(zp), zp (may be NULL) along v's axis (-1: a scalar). */
static struct ir_value *centered(struct onnx_ctx *c, struct ir_value *v, struct ir_value *zp, int64_t axis,
				 const char *what)
{
	struct ir_value *q = b_convert(c, v, IR_I32);
	if (!zp || !q)
		return q;
	if (zp->dtype != v->dtype) {
		onnx_fail(c, "%s is %s, its operand %s", what, ir_dtype_name(zp->dtype), ir_dtype_name(v->dtype));
		return NULL;
	}
	struct ir_value *z = along(c, zp, v, axis, what);
	return z ? b_binary(c, IR_OP_SUB, q, b_convert(c, z, IR_I32)) : NULL;
}

/* A's rows and B's columns: the axes of their per-row and per-column
 * zero points and scales (-1 for a vector, which has none). */
static int64_t rows_axis(const struct ir_value *a)
{
	return a->shape.rank >= 2 ? a->shape.rank - 2 : -1;
}

static int64_t cols_axis(const struct ir_value *b)
{
	return b->shape.rank >= 2 ? b->shape.rank - 1 : -1;
}

/* The int32 product of the centered 8-bit operands a and b. */
static struct ir_value *int_matmul(struct onnx_ctx *c, struct ir_value *a, struct ir_value *azp, struct ir_value *b,
				   struct ir_value *bzp)
{
	double lo = 0, hi = 0;
	if (qrange(c, a->dtype, "A", &lo, &hi) < 0 || qrange(c, b->dtype, "B", &lo, &hi) < 0)
		return NULL;
	struct ir_value *ops[2] = { centered(c, a, azp, rows_axis(a), "a_zero_point"),
				    centered(c, b, bzp, cols_axis(b), "b_zero_point") };
	struct ir_value *y[1] = { 0 };
	if (!ops[0] || !ops[1] || onnx_matmul(c, ops, 2, y, 1) < 0)
		return NULL;
	return y[0];
}

static int h_matmul_integer(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int rc;
	if ((rc = inference_only(c)) < 0)
		return rc;
	struct ir_value *y = int_matmul(c, in[0], nin > 2 ? in[2] : NULL, in[1], nin > 3 ? in[3] : NULL);
	return y ? OUT1(y) : failed();
}

/* QLinearMatMul: the int32 product requantized as ONNX Runtime does it,
 * round(f32(acc) * (a_scale * b_scale / y_scale)) + y_zero_point,
 * saturated. */
static int h_qlinear_matmul(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	ARITY(8);
	for (int i = 0; i < 8; i++)
		NEED(i);
	struct ir_value *a = in[0], *as = in[1], *b = in[3], *bs = in[4], *ys = in[6], *yzp = in[7];
	double lo = 0, hi = 0;
	int rc;
	if ((rc = inference_only(c)) < 0 || (rc = qrange(c, yzp->dtype, "y_zero_point", &lo, &hi)) < 0)
		return rc;
	for (int i = 1; i < 8; i += i == 4 ? 2 : 3) /* the scales: inputs 1, 4 and 6 */
		if (!ir_dtype_is_float(in[i]->dtype))
			return onnx_fail(c, "input %d (a scale) must be floating point, not %s", i,
					 ir_dtype_name(in[i]->dtype));
	struct ir_value *acc = int_matmul(c, a, in[2], b, in[5]);
	if (!acc)
		return failed();
	struct ir_value *af = b_convert(c, along(c, as, a, rows_axis(a), "a_scale"), IR_F32);
	struct ir_value *bf = b_convert(c, along(c, bs, b, cols_axis(b), "b_scale"), IR_F32);
	struct ir_value *yf = b_convert(c, along(c, ys, a, -1, "y_scale"), IR_F32);
	struct ir_value *zf = b_convert(c, along(c, yzp, a, -1, "y_zero_point"), IR_F32);
	if (!af || !bf || !yf || !zf)
		return failed();
	struct ir_value *m = b_binary(c, IR_OP_DIV, b_binary(c, IR_OP_MUL, af, bf), yf);
	return OUT1(saturate(c, b_binary(c, IR_OP_MUL, b_convert(c, acc, IR_F32), m), zf, lo, hi, yzp->dtype));
}

const struct onnx_op_def onnx_ops_quant[] = {
	{ "QuantizeLinear", h_quantize, "axis block_size output_dtype saturate" },
	{ "DequantizeLinear", h_dequantize, "axis block_size" },
	{ "DynamicQuantizeLinear", h_dyn_quantize, "" },
	{ "MatMulInteger", h_matmul_integer, "" },
	{ "QLinearMatMul", h_qlinear_matmul, "" },
};
const int onnx_ops_quant_count = sizeof onnx_ops_quant / sizeof onnx_ops_quant[0];
