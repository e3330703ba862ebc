/*
 * test_interp_elementwise.c: the reference interpreter's elementwise ops
 * (kernels/interp.c).
 *
 * Each case builds a one-node graph through the C API, runs interp_run and
 * compares with values computed independently here: literal numbers worked
 * out by hand, or libm in double rounded once. Covered: every unary,
 * binary, comparison, logical, select and convert op, the dtypes f32, f64,
 * f16, bf16, i64, i32, i8, u8 and bool, and the numerics contract at the
 * top of interp.c (one rounding, wrap-around, division by zero, NaN rules).
 * The other kernels are in test_interp_dot.c and test_interp_nn.c, the
 * graph walk and its errors in test_interp_graph.c.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "interp_check.h"

/* ---- elementwise ------------------------------------------------------------ */

static double rsqrt_ref(double x)
{
	return 1.0 / sqrt(x);
}
static double recip_ref(double x)
{
	return 1.0 / x;
}
static double sigmoid_ref(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

static double softplus_ref(double x)
{
	return log(1.0 + exp(x)); /* the definition: exact enough in double for |x| < 30 */
}

/* Transcendental f32 ops equal libm in double rounded once to f32. */
static void test_unary_float(void)
{
	static const struct {
		enum ir_op op;
		double (*f)(double);
		int domain; /* 0: any, 1: (0, 1), 2: [1, 2) */
	} ops[] = {
		{ IR_OP_EXP, exp, 0 },         { IR_OP_LOG, log, 1 },
		{ IR_OP_SQRT, sqrt, 1 },       { IR_OP_RSQRT, rsqrt_ref, 1 },
		{ IR_OP_RECIP, recip_ref, 0 }, { IR_OP_TANH, tanh, 0 },
		{ IR_OP_ERF, erf, 0 },         { IR_OP_SIGMOID, sigmoid_ref, 0 },
		{ IR_OP_SIN, sin, 0 },         { IR_OP_COS, cos, 0 },
		{ IR_OP_TAN, tan, 0 },         { IR_OP_ASIN, asin, 1 },
		{ IR_OP_ACOS, acos, 1 },       { IR_OP_ATAN, atan, 0 },
		{ IR_OP_SINH, sinh, 0 },       { IR_OP_COSH, cosh, 0 },
		{ IR_OP_ASINH, asinh, 0 },     { IR_OP_ACOSH, acosh, 2 },
		{ IR_OP_ATANH, atanh, 1 },     { IR_OP_SOFTPLUS, softplus_ref, 0 },
	};
	static const float any[6] = { -2.5f, -0.7f, 0.3f, 1.25f, 2.0f, -1e-3f };
	static const float unit[6] = { 0.1f, 0.3f, 0.5f, 0.7f, 0.9f, 0.25f };
	static const float big[6] = { 1.0f, 1.1f, 1.3f, 1.5f, 1.7f, 1.9f };
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		const float *x = ops[k].domain == 0 ? any : ops[k].domain == 1 ? unit : big;
		struct ir_tensor in = T(IR_F32, SH(2, 3), x), out;
		float want[6];
		for (int i = 0; i < 6; i++)
			want[i] = (float)ops[k].f((double)x[i]);
		int rc = run_op(ops[k].op, &no_attrs, 1, &in, &out);
		TAP_OK(rc == 0 && same_f32(&out, want, 6), "%s f32 = libm in double, rounded once",
		       ir_op_name(ops[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
}

/* softplus where log(1 + e^x) in double overflows (x = 1000) or loses
 * everything to 1 + tiny (x = -40: e^x is 4.2e-18, the result is e^x to
 * within 1e-35 relative); NaN stays NaN. */
static void test_softplus_extremes(void)
{
	static const float x[6] = { -1000.0f, -40.0f, 0.0f, 40.0f, 1000.0f, NAN };
	const float want[6] = { 0.0f, (float)exp(-40.0), (float)M_LN2, 40.0f, 1000.0f, NAN };
	struct ir_tensor in = T(IR_F32, SH(6), x), out;
	int rc = run_op(IR_OP_SOFTPLUS, &no_attrs, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, want, 6), "softplus f32 at -1000, -40, 0, 40, 1000 and NaN");
	if (rc == 0)
		ir_tensor_free(&out);
}

/* Ops with exact results, checked against literals. */
static void test_unary_exact(void)
{
	static const float x[8] = { -2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.7f, -0.0f };
	static const struct {
		enum ir_op op;
		float want[8];
	} cases[] = {
		{ IR_OP_NEG, { 2.5f, 1.5f, 0.5f, -0.5f, -1.5f, -2.5f, -2.7f, 0.0f } },
		{ IR_OP_ABS, { 2.5f, 1.5f, 0.5f, 0.5f, 1.5f, 2.5f, 2.7f, 0.0f } },
		{ IR_OP_SIGN, { -1, -1, -1, 1, 1, 1, 1, 0 } },
		{ IR_OP_RELU, { 0, 0, 0, 0.5f, 1.5f, 2.5f, 2.7f, 0 } },
		{ IR_OP_FLOOR, { -3, -2, -1, 0, 1, 2, 2, -0.0f } },
		{ IR_OP_CEIL, { -2, -1, -0.0f, 1, 2, 3, 3, -0.0f } },
		/* half to even, as ONNX Round */
		{ IR_OP_ROUND, { -2, -2, -0.0f, 0, 2, 2, 3, -0.0f } },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct ir_tensor in = T(IR_F32, SH(8), x), out;
		int rc = run_op(cases[k].op, &no_attrs, 1, &in, &out);
		TAP_OK(rc == 0 && same_f32(&out, cases[k].want, 8), "%s f32 literals", ir_op_name(cases[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	/* f64 keeps full precision: exp(1) and tanh(0.5) to the last bit */
	static const double xd[2] = { 1.0, 0.5 };
	struct ir_tensor in = T(IR_F64, SH(2), xd), out;
	int rc = run_op(IR_OP_EXP, &no_attrs, 1, &in, &out);
	TAP_OK(rc == 0 && f64_at(&out, 0) == exp(1.0) && f64_at(&out, 1) == exp(0.5), "exp f64");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_half(void)
{
	/* exp(1) = 2.71828..: f16 spacing in [2, 4) is 2^-9, nearest is
	 * 1392 * 2^-9 = 2.71875 */
	uint16_t x[2] = { f16(1.0f), f16(-1.0f) }, hb[2];
	struct ir_tensor in = T(IR_F16, SH(2), x), out;
	int rc = run_op(IR_OP_EXP, &no_attrs, 1, &in, &out);
	TAP_OK(rc == 0 && ir_f16_to_f32(((uint16_t *)out.data)[0]) == 2.71875f, "exp f16: 2.71875 (nearest f16 to e)");
	/* exp(-1) = 0.367879..: spacing in [0.25, 0.5) is 2^-12, nearest is
	 * 1507 * 2^-12 = 0.367919921875 */
	TAP_OK(rc == 0 && ir_f16_to_f32(((uint16_t *)out.data)[1]) == 0.367919921875f,
	       "exp f16: 0.36792 (nearest f16 to 1/e)");
	if (rc == 0)
		ir_tensor_free(&out);

	/* 1 + 2^-11 + 2^-40 is just above the midpoint between the f16 values
	 * 1 and 1 + 2^-10: correct rounding gives 1 + 2^-10, while rounding to
	 * f32 first would land on the midpoint and then round to even (1). */
	double d[2] = { 1.0 + ldexp(1, -11) + ldexp(1, -40), 1.0 + ldexp(1, -11) };
	struct ir_attrs a = { .dtype = IR_F16 };
	in = T(IR_F64, SH(2), d);
	rc = run_op(IR_OP_CONVERT, &a, 1, &in, &out);
	TAP_OK(rc == 0 && ir_f16_to_f32(((uint16_t *)out.data)[0]) == 1.0009765625f,
	       "convert f64->f16 rounds once (no double rounding)");
	TAP_OK(rc == 0 && ir_f16_to_f32(((uint16_t *)out.data)[1]) == 1.0f,
	       "convert f64->f16 exact tie rounds to even");
	if (rc == 0)
		ir_tensor_free(&out);

	/* bf16 keeps 8 significant bits: 1 + 2^-8 ties to 1, 1 + 3*2^-8 ties
	 * up to 1 + 2^-6 (even), 1 + 2^-8 + 2^-20 rounds up to 1 + 2^-7 */
	float fb[3] = { 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f };
	a.dtype = IR_BF16;
	in = T(IR_F32, SH(3), fb);
	rc = run_op(IR_OP_CONVERT, &a, 1, &in, &out);
	TAP_OK(rc == 0 && ir_bf16_to_f32(((uint16_t *)out.data)[0]) == 1.0f &&
		       ir_bf16_to_f32(((uint16_t *)out.data)[1]) == 1.0f + 0x1p-6f &&
		       ir_bf16_to_f32(((uint16_t *)out.data)[2]) == 1.0f + 0x1p-7f,
	       "convert f32->bf16 rounds to nearest even");
	if (rc == 0)
		ir_tensor_free(&out);

	/* f16 add: 2048 + 1 is a tie between 2048 and 2050 -> 2048 (even) */
	hb[0] = f16(2048.0f);
	hb[1] = f16(1.0f);
	struct ir_tensor ab[2] = { T(IR_F16, SH(1), &hb[0]), T(IR_F16, SH(1), &hb[1]) };
	rc = run_op(IR_OP_ADD, &no_attrs, 2, ab, &out);
	TAP_OK(rc == 0 && ir_f16_to_f32(((uint16_t *)out.data)[0]) == 2048.0f, "add f16: 2048 + 1 rounds to even");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_binary_float(void)
{
	static const float a[6] = { 7.5f, -7.5f, 2.0f, 0.0f, NAN, 3.0f };
	static const float b[6] = { 2.0f, 2.0f, -0.5f, 0.0f, 1.0f, 3.0f };
	struct ir_tensor in[2] = { T(IR_F32, SH(6), a), T(IR_F32, SH(6), b) }, out;
	static const struct {
		enum ir_op op;
		float want[6];
	} cases[] = {
		{ IR_OP_ADD, { 9.5f, -5.5f, 1.5f, 0, NAN, 6 } },
		{ IR_OP_SUB, { 5.5f, -9.5f, 2.5f, 0, NAN, 0 } },
		{ IR_OP_MUL, { 15, -15, -1, 0, NAN, 9 } },
		{ IR_OP_DIV, { 3.75f, -3.75f, -4, NAN, NAN, 1 } },
		/* C fmod: the sign follows the dividend */
		{ IR_OP_REM, { 1.5f, -1.5f, 0, NAN, NAN, 0 } },
		{ IR_OP_POW, { 56.25f, 56.25f, 0.70710678f, 1, NAN, 27 } },
		{ IR_OP_MAX, { 7.5f, 2, 2, 0, NAN, 3 } },
		{ IR_OP_MIN, { 2, -7.5f, -0.5f, 0, NAN, 3 } },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		float want[6];
		memcpy(want, cases[k].want, sizeof want);
		if (cases[k].op == IR_OP_POW)
			want[2] = (float)pow(2.0, -0.5);
		int rc = run_op(cases[k].op, &no_attrs, 2, in, &out);
		TAP_OK(rc == 0 && same_f32(&out, want, 6), "%s f32 (NaN propagates)", ir_op_name(cases[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	static const struct {
		enum ir_op op;
		uint8_t want[6];
	} preds[] = {
		{ IR_OP_EQ, { 0, 0, 0, 1, 0, 1 } }, { IR_OP_NE, { 1, 1, 1, 0, 1, 0 } },
		{ IR_OP_LT, { 0, 1, 0, 0, 0, 0 } }, { IR_OP_LE, { 0, 1, 0, 1, 0, 1 } },
		{ IR_OP_GT, { 1, 0, 1, 0, 0, 0 } }, { IR_OP_GE, { 1, 0, 1, 1, 0, 1 } },
	};
	for (size_t k = 0; k < sizeof preds / sizeof preds[0]; k++) {
		int rc = run_op(preds[k].op, &no_attrs, 2, in, &out);
		TAP_OK(rc == 0 && out.dtype == IR_BOOL && memcmp(out.data, preds[k].want, 6) == 0,
		       "%s f32 -> bool (NaN compares false)", ir_op_name(preds[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	static const float c[4] = { NAN, INFINITY, -INFINITY, 1.0f };
	struct ir_tensor ci = T(IR_F32, SH(4), c);
	int rc = run_op(IR_OP_IS_NAN, &no_attrs, 1, &ci, &out);
	TAP_OK(rc == 0 && memcmp(out.data, (uint8_t[]){ 1, 0, 0, 0 }, 4) == 0, "is_nan f32");
	if (rc == 0)
		ir_tensor_free(&out);
	rc = run_op(IR_OP_IS_INF, &no_attrs, 1, &ci, &out);
	TAP_OK(rc == 0 && memcmp(out.data, (uint8_t[]){ 0, 1, 1, 0 }, 4) == 0, "is_inf f32");
	if (rc == 0)
		ir_tensor_free(&out);
}

/* Elementwise over more than one block (the interpreter works in blocks). */
static void test_long_vector(void)
{
	enum { N = 1300 };
	static float a[N], b[N], want[N];
	static double ad[N], bd[N];
	for (int i = 0; i < N; i++) {
		a[i] = (float)i * 0.25f - 100.0f;
		b[i] = (float)(i % 7) + 0.5f;
		want[i] = (float)((double)a[i] * (double)b[i]);
		ad[i] = a[i];
		bd[i] = b[i];
	}
	struct ir_tensor in[2] = { T(IR_F32, SH(N), a), T(IR_F32, SH(N), b) }, out;
	int rc = run_op(IR_OP_MUL, &no_attrs, 2, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, want, N), "mul f32 over %d elements", N);
	if (rc == 0)
		ir_tensor_free(&out);
	in[0] = T(IR_F64, SH(N), ad);
	in[1] = T(IR_F64, SH(N), bd);
	rc = run_op(IR_OP_SUB, &no_attrs, 2, in, &out);
	bool ok = rc == 0;
	for (int i = 0; ok && i < N; i++)
		ok = f64_at(&out, i) == ad[i] - bd[i];
	TAP_OK(ok, "sub f64 over %d elements", N);
	if (rc == 0)
		ir_tensor_free(&out);
}

/* and, or, xor, not on integers are bitwise (ONNX's Bitwise*, opset 18):
 * 0b1100 and 0b1010, -1 and 5, 0x5a and 0xf0 in i32 and u8 */
static void test_bitwise(void)
{
	static const int32_t a[3] = { 12, -1, 0x5a }, b[3] = { 10, 5, 0xf0 };
	struct ir_tensor in[2] = { T(IR_I32, SH(3), a), T(IR_I32, SH(3), b) }, out;
	static const struct {
		enum ir_op op;
		int32_t want[3];
	} cases[] = {
		{ IR_OP_AND, { 8, 5, 0x50 } },
		{ IR_OP_OR, { 14, -1, 0xfa } },
		{ IR_OP_XOR, { 6, -6, 0xaa } },
		{ IR_OP_NOT, { -13, 0, -0x5b } },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int nin = cases[k].op == IR_OP_NOT ? 1 : 2;
		int rc = run_op(cases[k].op, &no_attrs, nin, in, &out);
		TAP_OK(rc == 0 && i32_at(&out, 0) == cases[k].want[0] && i32_at(&out, 1) == cases[k].want[1] &&
			       i32_at(&out, 2) == cases[k].want[2],
		       "%s i32 is bitwise", ir_op_name(cases[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	static const uint8_t ua[2] = { 0x5a, 0 };
	in[0] = T(IR_U8, SH(2), ua);
	int rc = run_op(IR_OP_NOT, &no_attrs, 1, in, &out);
	TAP_OK(rc == 0 && u8_at(&out, 0) == 0xa5 && u8_at(&out, 1) == 0xff, "not u8 is bitwise (0x5a -> 0xa5)");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_integer(void)
{
	static const int64_t a[8] = { INT64_MAX, -7, -7, 7, 3, 2, -1, INT64_MIN };
	static const int64_t b[8] = { 1, 2, 3, 0, 5, -1, -3, -1 };
	struct ir_tensor in[2] = { T(IR_I64, SH(8), a), T(IR_I64, SH(8), b) }, out;
	static const struct {
		enum ir_op op;
		int64_t want[8];
	} cases[] = {
		{ IR_OP_ADD, { INT64_MIN, -5, -4, 7, 8, 1, -4, INT64_MAX } },
		{ IR_OP_SUB, { INT64_MAX - 1, -9, -10, 7, -2, 3, 2, INT64_MIN + 1 } },
		{ IR_OP_MUL, { INT64_MAX, -14, -21, 0, 15, -2, 3, INT64_MIN } },
		/* truncation toward zero; x / 0 = 0; INT64_MIN / -1 wraps */
		{ IR_OP_DIV, { INT64_MAX, -3, -2, 0, 0, -2, 0, INT64_MIN } },
		/* C %: sign of the dividend; x % 0 = 0 */
		{ IR_OP_REM, { 0, -1, -1, 0, 3, 0, -1, 0 } },
		/* repeated squaring; 2^-1 = 0, (-1)^-3 = -1, MIN^-1 = 0 */
		{ IR_OP_POW, { INT64_MAX, 49, -343, 1, 243, 0, -1, 0 } },
		{ IR_OP_MAX, { INT64_MAX, 2, 3, 7, 5, 2, -1, -1 } },
		{ IR_OP_MIN, { 1, -7, -7, 0, 3, -1, -3, INT64_MIN } },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int rc = run_op(cases[k].op, &no_attrs, 2, in, &out);
		TAP_OK(rc == 0 && same_i64(&out, cases[k].want, 8), "%s i64 (wrap, x/0 = 0)", ir_op_name(cases[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	static const struct {
		enum ir_op op;
		int64_t want[8];
	} unary[] = {
		{ IR_OP_NEG, { -INT64_MAX, 7, 7, -7, -3, -2, 1, INT64_MIN } },
		{ IR_OP_ABS, { INT64_MAX, 7, 7, 7, 3, 2, 1, INT64_MIN } },
		{ IR_OP_SIGN, { 1, -1, -1, 1, 1, 1, -1, -1 } },
		{ IR_OP_RELU, { INT64_MAX, 0, 0, 7, 3, 2, 0, 0 } },
	};
	for (size_t k = 0; k < sizeof unary / sizeof unary[0]; k++) {
		int rc = run_op(unary[k].op, &no_attrs, 1, in, &out);
		TAP_OK(rc == 0 && same_i64(&out, unary[k].want, 8), "%s i64", ir_op_name(unary[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	/* narrow widths wrap */
	int32_t i32a[2] = { INT32_MAX, -5 }, i32b[2] = { 1, 2 };
	in[0] = T(IR_I32, SH(2), i32a);
	in[1] = T(IR_I32, SH(2), i32b);
	int rc = run_op(IR_OP_ADD, &no_attrs, 2, in, &out);
	TAP_OK(rc == 0 && i32_at(&out, 0) == INT32_MIN && i32_at(&out, 1) == -3, "add i32 wraps");
	if (rc == 0)
		ir_tensor_free(&out);
	uint8_t u8a[3] = { 3, 200, 255 }, u8b[3] = { 5, 100, 2 };
	in[0] = T(IR_U8, SH(3), u8a);
	in[1] = T(IR_U8, SH(3), u8b);
	rc = run_op(IR_OP_SUB, &no_attrs, 2, in, &out);
	TAP_OK(rc == 0 && u8_at(&out, 0) == 254 && u8_at(&out, 1) == 100 && u8_at(&out, 2) == 253, "sub u8 wraps");
	if (rc == 0)
		ir_tensor_free(&out);
	rc = run_op(IR_OP_DIV, &no_attrs, 2, in, &out);
	TAP_OK(rc == 0 && u8_at(&out, 0) == 0 && u8_at(&out, 1) == 2 && u8_at(&out, 2) == 127, "div u8 (unsigned)");
	if (rc == 0)
		ir_tensor_free(&out);
	int8_t i8a[2] = { 100, -128 }, i8b[2] = { 3, 2 };
	in[0] = T(IR_I8, SH(2), i8a);
	in[1] = T(IR_I8, SH(2), i8b);
	rc = run_op(IR_OP_MUL, &no_attrs, 2, in, &out);
	TAP_OK(rc == 0 && ((int8_t *)out.data)[0] == 44 && ((int8_t *)out.data)[1] == 0,
	       "mul i8 wraps (300 -> 44, -256 -> 0)");
	if (rc == 0)
		ir_tensor_free(&out);
	test_bitwise();
}

static void test_bool_and_select(void)
{
	static const uint8_t p[4] = { 0, 0, 1, 1 }, q[4] = { 0, 1, 0, 1 };
	struct ir_tensor in[3] = { T(IR_BOOL, SH(4), p), T(IR_BOOL, SH(4), q) }, out;
	static const struct {
		enum ir_op op;
		uint8_t want[4];
	} cases[] = {
		{ IR_OP_AND, { 0, 0, 0, 1 } }, { IR_OP_OR, { 0, 1, 1, 1 } },  { IR_OP_XOR, { 0, 1, 1, 0 } },
		{ IR_OP_EQ, { 1, 0, 0, 1 } },  { IR_OP_MAX, { 0, 1, 1, 1 } },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int rc = run_op(cases[k].op, &no_attrs, 2, in, &out);
		TAP_OK(rc == 0 && memcmp(out.data, cases[k].want, 4) == 0, "%s bool", ir_op_name(cases[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	int rc = run_op(IR_OP_NOT, &no_attrs, 1, in, &out);
	TAP_OK(rc == 0 && memcmp(out.data, (uint8_t[]){ 1, 1, 0, 0 }, 4) == 0, "not bool");
	if (rc == 0)
		ir_tensor_free(&out);

	static const float t[4] = { 1, 2, 3, 4 }, f[4] = { -1, -2, -3, -4 };
	in[1] = T(IR_F32, SH(4), t);
	in[2] = T(IR_F32, SH(4), f);
	rc = run_op(IR_OP_SELECT, &no_attrs, 3, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ -1, -2, 3, 4 }, 4), "select f32");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int64_t ti[4] = { 10, 20, 30, 40 }, fi[4] = { -10, -20, -30, -40 };
	in[0] = T(IR_BOOL, SH(4), q);
	in[1] = T(IR_I64, SH(4), ti);
	in[2] = T(IR_I64, SH(4), fi);
	rc = run_op(IR_OP_SELECT, &no_attrs, 3, in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ -10, 20, -30, 40 }, 4), "select i64");
	if (rc == 0)
		ir_tensor_free(&out);
	static const uint16_t th[2] = { 0x3c00, 0x4000 }, fh[2] = { 0xbc00, 0xc000 };
	in[0] = T(IR_BOOL, SH(2), q + 2);
	in[1] = T(IR_F16, SH(2), th);
	in[2] = T(IR_F16, SH(2), fh);
	rc = run_op(IR_OP_SELECT, &no_attrs, 3, in, &out);
	TAP_OK(rc == 0 && ((uint16_t *)out.data)[0] == 0xbc00 && ((uint16_t *)out.data)[1] == 0x4000, "select f16");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_convert(void)
{
	static const float x[6] = { -2.7f, 2.7f, NAN, 0.5f, -0.0f, 3e9f };
	struct ir_attrs a = { .dtype = IR_I32 };
	struct ir_tensor in = T(IR_F32, SH(6), x), out;
	int rc = run_op(IR_OP_CONVERT, &a, 1, &in, &out);
	/* 3e9 clamps to int64 3000000000, which wraps in i32 to -1294967296 */
	TAP_OK(rc == 0 && i32_at(&out, 0) == -2 && i32_at(&out, 1) == 2 && i32_at(&out, 2) == 0 &&
		       i32_at(&out, 3) == 0 && i32_at(&out, 4) == 0 && i32_at(&out, 5) == -1294967296,
	       "convert f32->i32 truncates toward zero, NaN -> 0");
	if (rc == 0)
		ir_tensor_free(&out);
	a.dtype = IR_BOOL;
	rc = run_op(IR_OP_CONVERT, &a, 1, &in, &out);
	TAP_OK(rc == 0 && memcmp(out.data, (uint8_t[]){ 1, 1, 1, 1, 0, 1 }, 6) == 0, "convert f32->bool is x != 0");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int64_t xi[3] = { 16777217, -3, 300 };
	in = T(IR_I64, SH(3), xi);
	a.dtype = IR_F32;
	rc = run_op(IR_OP_CONVERT, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 16777216.0f, -3.0f, 300.0f }, 3),
	       "convert i64->f32 rounds to nearest even");
	if (rc == 0)
		ir_tensor_free(&out);
	a.dtype = IR_U8;
	rc = run_op(IR_OP_CONVERT, &a, 1, &in, &out);
	TAP_OK(rc == 0 && u8_at(&out, 0) == 1 && u8_at(&out, 1) == 253 && u8_at(&out, 2) == 44,
	       "convert i64->u8 wraps");
	if (rc == 0)
		ir_tensor_free(&out);
	static const uint8_t xb[3] = { 1, 0, 1 };
	in = T(IR_BOOL, SH(3), xb);
	a.dtype = IR_F64;
	rc = run_op(IR_OP_CONVERT, &a, 1, &in, &out);
	TAP_OK(rc == 0 && f64_at(&out, 0) == 1 && f64_at(&out, 1) == 0 && f64_at(&out, 2) == 1, "convert bool->f64");
	if (rc == 0)
		ir_tensor_free(&out);
}

int main(void)
{
	test_unary_float();
	test_unary_exact();
	test_softplus_extremes();
	test_half();
	test_binary_float();
	test_long_vector();
	test_integer();
	test_bool_and_select();
	test_convert();
	return tap_done();
}
