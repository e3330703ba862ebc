/*
 * test_interp.c: the reference interpreter (compiler/interp*.c).
 *
 * Each case builds a tiny graph through the C API, runs interp_run and
 * compares with values computed independently here: literal numbers worked
 * out by hand, or plain loops written straight from the op semantics in
 * ir.h (naive convolution, dot as a sum over contracting indices, window
 * ops by scanning every tap). Covered: every op, the dtypes f32, f64, f16,
 * bf16, i64, i32, i8, u8 and bool, the numerics contract at the top of
 * interp.c (one rounding, wrap-around, division by zero, NaN rules), graph
 * walking (params inline and external, intermediate values, outputs that
 * are inputs or repeated) and the error paths (index out of range, missing
 * or short external files, mismatched inputs, allocation failures).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "tap.h"

#define SH(...)                                                                 \
	((struct ir_shape){ .rank = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), \
			    .dims = { __VA_ARGS__ } })
#define SCALAR ((struct ir_shape){ .rank = 0 })

static struct ir_tensor T(enum ir_dtype dt, struct ir_shape s, const void *data)
{
	return (struct ir_tensor){ .dtype = dt, .shape = s, .data = (void *)data };
}

/* Runs one op on inputs in[] (graph inputs in that order); out[] gets all
 * of the node's results. Returns interp_run's code, or -1000 when the node
 * cannot be built (the attributes in the test are wrong). */
static int run_op(enum ir_op op, const struct ir_attrs *a, int nin, const struct ir_tensor *in,
		  struct ir_tensor *out)
{
	struct ir_graph *g = ir_graph_new();
	struct ir_value *v[8];
	int rc = -1000;
	for (int i = 0; i < nin; i++)
		v[i] = ir_graph_add_input(g, NULL, in[i].dtype, &in[i].shape);
	struct ir_node *n = ir_graph_add_node(g, op, "n0", nin, v, a);
	if (!n) {
		TAP_DIAG("cannot build %s: %s", ir_op_name(op), ir_error());
		goto done;
	}
	for (int j = 0; j < n->nout; j++)
		ir_graph_add_output(g, n->out[j], NULL);
	rc = interp_run(g, in, out);
	if (rc < 0)
		TAP_DIAG("%s: %s", ir_op_name(op), ir_error());
done:
	ir_graph_free(g);
	return rc;
}

static const struct ir_attrs no_attrs;

static float f32_at(const struct ir_tensor *t, int64_t i) { return ((const float *)t->data)[i]; }
static double f64_at(const struct ir_tensor *t, int64_t i) { return ((const double *)t->data)[i]; }
static int64_t i64_at(const struct ir_tensor *t, int64_t i) { return ((const int64_t *)t->data)[i]; }
static int32_t i32_at(const struct ir_tensor *t, int64_t i) { return ((const int32_t *)t->data)[i]; }
static uint8_t u8_at(const struct ir_tensor *t, int64_t i) { return ((const uint8_t *)t->data)[i]; }

/* Exact comparison of n floats of got with want. */
static bool same_f32(const struct ir_tensor *t, const float *want, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float g = f32_at(t, i);
		if (!(g == want[i] || (g != g && want[i] != want[i]))) {
			TAP_DIAG("element %lld: got %.9g want %.9g", (long long)i, g, want[i]);
			return false;
		}
	}
	return true;
}

static bool same_i64(const struct ir_tensor *t, const int64_t *want, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		if (i64_at(t, i) != want[i]) {
			TAP_DIAG("element %lld: got %lld want %lld", (long long)i,
				 (long long)i64_at(t, i), (long long)want[i]);
			return false;
		}
	}
	return true;
}

static bool near_f64(const double *got, const double *want, int64_t n, double tol)
{
	for (int64_t i = 0; i < n; i++) {
		if (!(fabs(got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])))) {
			TAP_DIAG("element %lld: got %.17g want %.17g", (long long)i, got[i], want[i]);
			return false;
		}
	}
	return true;
}

/* ---- elementwise ------------------------------------------------------------ */

static double rsqrt_ref(double x) { return 1.0 / sqrt(x); }
static double recip_ref(double x) { return 1.0 / x; }
static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Transcendental f32 ops equal libm in double rounded once to f32. */
static void test_unary_float(void)
{
	static const struct {
		enum ir_op op;
		double (*f)(double);
		int domain; /* 0: any, 1: (0, 1), 2: [1, 2) */
	} ops[] = {
		{ IR_OP_EXP, exp, 0 },     { IR_OP_LOG, log, 1 },     { IR_OP_SQRT, sqrt, 1 },
		{ IR_OP_RSQRT, rsqrt_ref, 1 }, { IR_OP_RECIP, recip_ref, 0 }, { IR_OP_TANH, tanh, 0 },
		{ IR_OP_ERF, erf, 0 },     { IR_OP_SIGMOID, sigmoid_ref, 0 }, { IR_OP_SIN, sin, 0 },
		{ IR_OP_COS, cos, 0 },     { IR_OP_TAN, tan, 0 },     { IR_OP_ASIN, asin, 1 },
		{ IR_OP_ACOS, acos, 1 },   { IR_OP_ATAN, atan, 0 },   { IR_OP_SINH, sinh, 0 },
		{ IR_OP_COSH, cosh, 0 },   { IR_OP_ASINH, asinh, 0 }, { IR_OP_ACOSH, acosh, 2 },
		{ IR_OP_ATANH, atanh, 1 },
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
		TAP_OK(rc == 0 && same_f32(&out, cases[k].want, 8), "%s f32 literals",
		       ir_op_name(cases[k].op));
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

static uint16_t f16(float f) { return ir_f32_to_f16(f); }

static void test_half(void)
{
	/* exp(1) = 2.71828..: f16 spacing in [2, 4) is 2^-9, nearest is
	 * 1392 * 2^-9 = 2.71875 */
	uint16_t x[2] = { f16(1.0f), f16(-1.0f) }, hb[2];
	struct ir_tensor in = T(IR_F16, SH(2), x), out;
	int rc = run_op(IR_OP_EXP, &no_attrs, 1, &in, &out);
	TAP_OK(rc == 0 && ir_f16_to_f32(((uint16_t *)out.data)[0]) == 2.71875f,
	       "exp f16: 2.71875 (nearest f16 to e)");
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
	TAP_OK(rc == 0 && ir_f16_to_f32(((uint16_t *)out.data)[0]) == 2048.0f,
	       "add f16: 2048 + 1 rounds to even");
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
		TAP_OK(rc == 0 && same_f32(&out, want, 6), "%s f32 (NaN propagates)",
		       ir_op_name(cases[k].op));
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
		TAP_OK(rc == 0 && same_i64(&out, cases[k].want, 8), "%s i64 (wrap, x/0 = 0)",
		       ir_op_name(cases[k].op));
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
	TAP_OK(rc == 0 && u8_at(&out, 0) == 254 && u8_at(&out, 1) == 100 && u8_at(&out, 2) == 253,
	       "sub u8 wraps");
	if (rc == 0)
		ir_tensor_free(&out);
	rc = run_op(IR_OP_DIV, &no_attrs, 2, in, &out);
	TAP_OK(rc == 0 && u8_at(&out, 0) == 0 && u8_at(&out, 1) == 2 && u8_at(&out, 2) == 127,
	       "div u8 (unsigned)");
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
}

static void test_bool_and_select(void)
{
	static const uint8_t p[4] = { 0, 0, 1, 1 }, q[4] = { 0, 1, 0, 1 };
	struct ir_tensor in[3] = { T(IR_BOOL, SH(4), p), T(IR_BOOL, SH(4), q) }, out;
	static const struct {
		enum ir_op op;
		uint8_t want[4];
	} cases[] = {
		{ IR_OP_AND, { 0, 0, 0, 1 } },
		{ IR_OP_OR, { 0, 1, 1, 1 } },
		{ IR_OP_XOR, { 0, 1, 1, 0 } },
		{ IR_OP_EQ, { 1, 0, 0, 1 } },
		{ IR_OP_MAX, { 0, 1, 1, 1 } },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int rc = run_op(cases[k].op, &no_attrs, 2, in, &out);
		TAP_OK(rc == 0 && memcmp(out.data, cases[k].want, 4) == 0, "%s bool",
		       ir_op_name(cases[k].op));
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
	TAP_OK(rc == 0 && ((uint16_t *)out.data)[0] == 0xbc00 && ((uint16_t *)out.data)[1] == 0x4000,
	       "select f16");
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
	TAP_OK(rc == 0 && memcmp(out.data, (uint8_t[]){ 1, 1, 1, 1, 0, 1 }, 6) == 0,
	       "convert f32->bool is x != 0");
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
	TAP_OK(rc == 0 && f64_at(&out, 0) == 1 && f64_at(&out, 1) == 0 && f64_at(&out, 2) == 1,
	       "convert bool->f64");
	if (rc == 0)
		ir_tensor_free(&out);
}

/* ---- dot and conv ------------------------------------------------------- */

/* lhs [B1=2, M=3, K1=4, B2=2, K2=5], rhs [K2=5, B2=2, N=3, B1=2, K1=4];
 * batch pairs (0,3), (3,1); contracting pairs listed K2 first: (4,0),
 * (2,4). Result [B1, B2, M, N] = [2, 2, 3, 3]. */
static void dot_batched_ref(const double *l, const double *r, double *want)
{
	for (int b1 = 0; b1 < 2; b1++)
		for (int b2 = 0; b2 < 2; b2++)
			for (int m = 0; m < 3; m++)
				for (int n = 0; n < 3; n++) {
					double s = 0;
					for (int k1 = 0; k1 < 4; k1++)
						for (int k2 = 0; k2 < 5; k2++)
							s += l[(((b1 * 3 + m) * 4 + k1) * 2 + b2) * 5 + k2] *
							     r[(((k2 * 2 + b2) * 3 + n) * 2 + b1) * 4 + k1];
					want[((b1 * 2 + b2) * 3 + m) * 3 + n] = s;
				}
}

static void test_dot(void)
{
	enum { NL = 2 * 3 * 4 * 2 * 5, NR = 5 * 2 * 3 * 2 * 4, NO = 2 * 2 * 3 * 3 };
	static double l[NL], r[NR], want[NO], got[NO];
	static float lf[NL], rf[NR];
	static int64_t li[NL], ri[NR];
	static uint16_t lh[NL], rh[NR];
	for (int i = 0; i < NL; i++) {
		li[i] = (i * 7) % 11 - 5;
		l[i] = (double)li[i] * 0.5;
		lf[i] = (float)l[i];
		lh[i] = f16(lf[i]);
	}
	for (int i = 0; i < NR; i++) {
		ri[i] = (i * 5) % 13 - 6;
		r[i] = (double)ri[i] * 0.25;
		rf[i] = (float)r[i];
		rh[i] = f16(rf[i]);
	}
	dot_batched_ref(l, r, want);
	struct ir_attrs a = { .lhs_batch = IR_ILIST(0, 3), .rhs_batch = IR_ILIST(3, 1),
			      .lhs_contract = IR_ILIST(4, 2), .rhs_contract = IR_ILIST(0, 4) };
	struct ir_tensor in[2] = { T(IR_F64, SH(2, 3, 4, 2, 5), l), T(IR_F64, SH(5, 2, 3, 2, 4), r) };
	struct ir_tensor out;
	int rc = run_op(IR_OP_DOT, &a, 2, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(2, 2, 3, 3)) &&
		       near_f64(out.data, want, NO, 0),
	       "dot f64, two batch dims, contracting dims out of order");
	if (rc == 0)
		ir_tensor_free(&out);

	in[0] = T(IR_F32, SH(2, 3, 4, 2, 5), lf);
	in[1] = T(IR_F32, SH(5, 2, 3, 2, 4), rf);
	rc = run_op(IR_OP_DOT, &a, 2, in, &out);
	for (int i = 0; rc == 0 && i < NO; i++)
		got[i] = f32_at(&out, i);
	TAP_OK(rc == 0 && near_f64(got, want, NO, 0), "dot f32 batched (exact on small halves)");
	if (rc == 0)
		ir_tensor_free(&out);

	in[0] = T(IR_F16, SH(2, 3, 4, 2, 5), lh);
	in[1] = T(IR_F16, SH(5, 2, 3, 2, 4), rh);
	rc = run_op(IR_OP_DOT, &a, 2, in, &out);
	for (int i = 0; rc == 0 && i < NO; i++)
		got[i] = ir_f16_to_f32(((uint16_t *)out.data)[i]);
	TAP_OK(rc == 0 && near_f64(got, want, NO, 0), "dot f16 batched");
	if (rc == 0)
		ir_tensor_free(&out);

	in[0] = T(IR_I64, SH(2, 3, 4, 2, 5), li);
	in[1] = T(IR_I64, SH(5, 2, 3, 2, 4), ri);
	rc = run_op(IR_OP_DOT, &a, 2, in, &out);
	bool ok = rc == 0;
	for (int i = 0; i < NL; i++)
		l[i] = (double)li[i];
	for (int i = 0; i < NR; i++)
		r[i] = (double)ri[i];
	dot_batched_ref(l, r, want);
	for (int i = 0; ok && i < NO; i++)
		ok = i64_at(&out, i) == (int64_t)want[i];
	TAP_OK(ok, "dot i64 batched");
	if (rc == 0)
		ir_tensor_free(&out);

	/* plain matmul with both operands transposed in memory: lhs [K=3, M=2]
	 * contracting dim 0, rhs [N=2, K=3] contracting dim 1 */
	static const float lt[6] = { 1, 2, 3, 4, 5, 6 }, rt[6] = { 1, 0, -1, 2, 1, 0 };
	struct ir_attrs mm = { .lhs_contract = IR_ILIST(0), .rhs_contract = IR_ILIST(1) };
	in[0] = T(IR_F32, SH(3, 2), lt);
	in[1] = T(IR_F32, SH(2, 3), rt);
	rc = run_op(IR_OP_DOT, &mm, 2, in, &out);
	/* out[m][n] = sum_k lt[k][m] * rt[n][k]:
	 * m=0: (1,3,5) . (1,0,-1) = -4, (1,3,5) . (2,1,0) = 5
	 * m=1: (2,4,6) . (1,0,-1) = -4, (2,4,6) . (2,1,0) = 8 */
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ -4, 5, -4, 8 }, 4), "dot f32 transposed operands");
	if (rc == 0)
		ir_tensor_free(&out);

	/* vector . vector -> scalar; outer product (no contraction) */
	struct ir_attrs vv = { .lhs_contract = IR_ILIST(0), .rhs_contract = IR_ILIST(0) };
	in[0] = T(IR_F32, SH(3), lt);
	in[1] = T(IR_F32, SH(3), rt);
	rc = run_op(IR_OP_DOT, &vv, 2, in, &out);
	TAP_OK(rc == 0 && out.shape.rank == 0 && f32_at(&out, 0) == -2.0f, "dot f32 vector.vector");
	if (rc == 0)
		ir_tensor_free(&out);
	in[0] = T(IR_F32, SH(2), lt);
	in[1] = T(IR_F32, SH(3), rt + 3);
	rc = run_op(IR_OP_DOT, &no_attrs, 2, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 2, 1, 0, 4, 2, 0 }, 6), "dot f32 outer product");
	if (rc == 0)
		ir_tensor_free(&out);

	/* empty contraction gives zeros */
	in[0] = T(IR_F32, SH(2, 0), lt);
	in[1] = T(IR_F32, SH(0, 2), rt);
	struct ir_attrs ek = { .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) };
	rc = run_op(IR_OP_DOT, &ek, 2, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 0, 0, 0, 0 }, 4), "dot with K = 0 is zero");
	if (rc == 0)
		ir_tensor_free(&out);
}

/* Naive N-d (here 2-d) convolution straight from the definition. */
static void conv_ref(const double *x, const double *w, double *y, const int64_t *xd,
		     const int64_t *wd, const int64_t *yd, const struct ir_attrs *a)
{
	int64_t G = a->groups, Cg = xd[1] / G, Og = wd[0] / G;
	for (int64_t n = 0; n < yd[0]; n++)
		for (int64_t o = 0; o < yd[1]; o++)
			for (int64_t i = 0; i < yd[2]; i++)
				for (int64_t j = 0; j < yd[3]; j++) {
					double s = 0;
					int64_t g = o / Og;
					for (int64_t c = 0; c < Cg; c++)
						for (int64_t p = 0; p < wd[2]; p++)
							for (int64_t q = 0; q < wd[3]; q++) {
								int64_t h = i * a->stride.v[0] - a->pad_lo.v[0] + p * a->dilation.v[0];
								int64_t v = j * a->stride.v[1] - a->pad_lo.v[1] + q * a->dilation.v[1];
								if (h < 0 || h >= xd[2] || v < 0 || v >= xd[3])
									continue;
								s += x[((n * xd[1] + g * Cg + c) * xd[2] + h) * xd[3] + v] *
								     w[((o * wd[1] + c) * wd[2] + p) * wd[3] + q];
							}
					y[((n * yd[1] + o) * yd[2] + i) * yd[3] + j] = s;
				}
}

static void test_conv(void)
{
	/* x [2,4,7,6], w [6,2,3,2], groups 2, stride (2,1), pads (1,0)/(2,1),
	 * dilation (1,2): H = (7+3-2-1)/2+1 = 4, W = (6+1-2-1)/1+1 = 5 */
	enum { NX = 2 * 4 * 7 * 6, NW = 6 * 2 * 3 * 2, NY = 2 * 6 * 4 * 5 };
	static double x[NX], w[NW], want[NY], got[NY];
	static float xf[NX], wf[NW];
	const int64_t xd[4] = { 2, 4, 7, 6 }, wd[4] = { 6, 2, 3, 2 }, yd[4] = { 2, 6, 4, 5 };
	for (int i = 0; i < NX; i++)
		xf[i] = (float)(x[i] = sin(i * 0.37));
	for (int i = 0; i < NW; i++)
		wf[i] = (float)(w[i] = cos(i * 0.91));
	struct ir_attrs a = { .stride = IR_ILIST(2, 1), .pad_lo = IR_ILIST(1, 0),
			      .pad_hi = IR_ILIST(2, 1), .dilation = IR_ILIST(1, 2), .groups = 2 };
	conv_ref(x, w, want, xd, wd, yd, &a);
	struct ir_tensor in[2] = { T(IR_F64, SH(2, 4, 7, 6), x), T(IR_F64, SH(6, 2, 3, 2), w) }, out;
	int rc = run_op(IR_OP_CONV, &a, 2, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(2, 6, 4, 5)) &&
		       near_f64(out.data, want, NY, 1e-12),
	       "conv f64 grouped, strided, padded, dilated = naive loop");
	if (rc == 0)
		ir_tensor_free(&out);
	for (int i = 0; i < NX; i++)
		x[i] = xf[i];
	for (int i = 0; i < NW; i++)
		w[i] = wf[i];
	conv_ref(x, w, want, xd, wd, yd, &a);
	in[0] = T(IR_F32, SH(2, 4, 7, 6), xf);
	in[1] = T(IR_F32, SH(6, 2, 3, 2), wf);
	rc = run_op(IR_OP_CONV, &a, 2, in, &out);
	for (int i = 0; rc == 0 && i < NY; i++)
		got[i] = f32_at(&out, i);
	TAP_OK(rc == 0 && near_f64(got, want, NY, 1e-5), "conv f32 grouped = naive loop");
	if (rc == 0)
		ir_tensor_free(&out);

	/* 1-d depthwise conv by hand: x [1,2,4], w [2,1,2], groups 2, pad 1/0:
	 * ch0 x = 1 2 3 4, w = 1 -1 -> (0-1) (1-2) (2-3) (3-4) = -1 -1 -1 -1
	 * ch1 x = 0 1 0 1, w = 2 3  -> (0+0) (0+3) (2+0) (0+3) = 0 3 2 3 */
	static const float x1[8] = { 1, 2, 3, 4, 0, 1, 0, 1 }, w1[4] = { 1, -1, 2, 3 };
	struct ir_attrs a1 = { .stride = IR_ILIST(1), .pad_lo = IR_ILIST(1), .pad_hi = IR_ILIST(0),
			       .dilation = IR_ILIST(1), .groups = 2 };
	in[0] = T(IR_F32, SH(1, 2, 4), x1);
	in[1] = T(IR_F32, SH(2, 1, 2), w1);
	rc = run_op(IR_OP_CONV, &a1, 2, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ -1, -1, -1, -1, 0, 3, 2, 3 }, 8),
	       "conv1d f32 depthwise by hand");
	if (rc == 0)
		ir_tensor_free(&out);
}

/* ---- reductions and windows -------------------------------------------------- */

static void test_reduce(void)
{
	float x[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)((i * 5) % 7) - 3.0f;
	struct ir_tensor in = T(IR_F32, SH(2, 3, 4), x), out;
	struct ir_attrs a = { .axes = IR_ILIST(0, 2) };
	float sum[3] = { 0 }, mx[3] = { -INFINITY, -INFINITY, -INFINITY }, mn[3] = { INFINITY, INFINITY, INFINITY };
	float prod[3] = { 1, 1, 1 };
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++) {
				float v = x[(i * 3 + j) * 4 + k];
				sum[j] += v;
				prod[j] *= v;
				mx[j] = v > mx[j] ? v : mx[j];
				mn[j] = v < mn[j] ? v : mn[j];
			}
	const struct {
		enum ir_op op;
		const float *want;
	} cases[] = { { IR_OP_REDUCE_SUM, sum }, { IR_OP_REDUCE_PROD, prod },
		      { IR_OP_REDUCE_MAX, mx }, { IR_OP_REDUCE_MIN, mn } };
	for (size_t k = 0; k < 4; k++) {
		int rc = run_op(cases[k].op, &a, 1, &in, &out);
		TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(3)) && same_f32(&out, cases[k].want, 3),
		       "%s f32 over axes {0,2}", ir_op_name(cases[k].op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	/* sums of many small f32 values accumulate in double */
	enum { N = 4096 };
	static float many[N];
	for (int i = 0; i < N; i++)
		many[i] = 0.1f;
	in = T(IR_F32, SH(N), many);
	struct ir_attrs a0 = { .axes = IR_ILIST(0) };
	int rc = run_op(IR_OP_REDUCE_SUM, &a0, 1, &in, &out);
	TAP_OK(rc == 0 && f32_at(&out, 0) == (float)(N * (double)0.1f), "reduce_sum f32 accumulates in double");
	if (rc == 0)
		ir_tensor_free(&out);

	static const float nanx[4] = { 1, NAN, 3, 2 };
	in = T(IR_F32, SH(4), nanx);
	rc = run_op(IR_OP_REDUCE_MAX, &a0, 1, &in, &out);
	TAP_OK(rc == 0 && isnan(f32_at(&out, 0)), "reduce_max propagates NaN");
	if (rc == 0)
		ir_tensor_free(&out);

	static const int64_t xi[6] = { 1, 2, 3, 4, 5, 6 };
	in = T(IR_I64, SH(2, 3), xi);
	struct ir_attrs a1 = { .axes = IR_ILIST(1) };
	rc = run_op(IR_OP_REDUCE_PROD, &a1, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 6, 120 }, 2), "reduce_prod i64 axis 1");
	if (rc == 0)
		ir_tensor_free(&out);
	rc = run_op(IR_OP_REDUCE_SUM, &a0, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 5, 7, 9 }, 3), "reduce_sum i64 axis 0");
	if (rc == 0)
		ir_tensor_free(&out);
	static const uint8_t xb[6] = { 0, 0, 1, 0, 0, 0 };
	in = T(IR_BOOL, SH(2, 3), xb);
	rc = run_op(IR_OP_REDUCE_MAX, &a1, 1, &in, &out);
	TAP_OK(rc == 0 && memcmp(out.data, (uint8_t[]){ 1, 0 }, 2) == 0, "reduce_max bool is any");
	if (rc == 0)
		ir_tensor_free(&out);
	/* all axes of a rank-3 tensor -> scalar */
	in = T(IR_F32, SH(2, 3, 4), x);
	struct ir_attrs all = { .axes = IR_ILIST(0, 1, 2) };
	rc = run_op(IR_OP_REDUCE_SUM, &all, 1, &in, &out);
	TAP_OK(rc == 0 && out.shape.rank == 0 && f32_at(&out, 0) == sum[0] + sum[1] + sum[2],
	       "reduce_sum over every axis");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_arg(void)
{
	/* rows: 1 3 3 0 | 2 2 -1 2; columns of [2,4] */
	static const float x[8] = { 1, 3, 3, 0, 2, 2, -1, 2 };
	struct ir_tensor in = T(IR_F32, SH(2, 4), x), out;
	struct ir_attrs a = { .axis = 1 };
	int rc = run_op(IR_OP_ARGMAX, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 1, 0 }, 2), "argmax first of ties");
	if (rc == 0)
		ir_tensor_free(&out);
	a.mode = IR_ARG_LAST;
	rc = run_op(IR_OP_ARGMAX, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 2, 3 }, 2), "argmax last of ties");
	if (rc == 0)
		ir_tensor_free(&out);
	a.mode = 0;
	rc = run_op(IR_OP_ARGMIN, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 3, 2 }, 2), "argmin");
	if (rc == 0)
		ir_tensor_free(&out);
	a.axis = 0;
	rc = run_op(IR_OP_ARGMIN, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 0, 1, 1, 0 }, 4), "argmin axis 0");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int32_t xi[4] = { -5, 7, 7, 1 };
	in = T(IR_I32, SH(4), xi);
	rc = run_op(IR_OP_ARGMAX, &a, 1, &in, &out);
	TAP_OK(rc == 0 && i64_at(&out, 0) == 1, "argmax i32");
	if (rc == 0)
		ir_tensor_free(&out);
}

/* Window op by scanning every tap, padding skipped. */
static void window_ref(bool is_max, const float *x, int H, int W, const int64_t *win,
		       const int64_t *st, const int64_t *lo, const int64_t *dil, int OH, int OW,
		       float *y)
{
	for (int i = 0; i < OH; i++)
		for (int j = 0; j < OW; j++) {
			double acc = is_max ? -INFINITY : 0;
			for (int p = 0; p < win[0]; p++)
				for (int q = 0; q < win[1]; q++) {
					int64_t h = i * st[0] - lo[0] + p * dil[0], v = j * st[1] - lo[1] + q * dil[1];
					if (h < 0 || h >= H || v < 0 || v >= W)
						continue;
					double e = x[h * W + v];
					acc = is_max ? fmax(acc, e) : acc + e;
				}
			y[i * OW + j] = (float)acc;
		}
}

static void test_window(void)
{
	float x[5 * 6], want[3 * 4];
	for (int i = 0; i < 30; i++)
		x[i] = (float)((i * 11) % 17) - 8.0f;
	/* [5,6], window 3x2, stride 2x2, pads (1,1)/(1,2), dilation (1,2):
	 * H = (5+2-3)/2+1 = 3, W = (6+3-3)/2+1 = 4 */
	struct ir_attrs a = { .window = IR_ILIST(3, 2), .stride = IR_ILIST(2, 2),
			      .pad_lo = IR_ILIST(1, 1), .pad_hi = IR_ILIST(1, 2),
			      .dilation = IR_ILIST(1, 2) };
	struct ir_tensor in = T(IR_F32, SH(5, 6), x), out;
	for (int k = 0; k < 2; k++) {
		enum ir_op op = k ? IR_OP_WINDOW_SUM : IR_OP_WINDOW_MAX;
		window_ref(!k, x, 5, 6, a.window.v, a.stride.v, a.pad_lo.v, a.dilation.v, 3, 4, want);
		int rc = run_op(op, &a, 1, &in, &out);
		TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(3, 4)) && same_f32(&out, want, 12),
		       "%s f32 padded, strided, dilated = tap scan", ir_op_name(op));
		if (rc == 0)
			ir_tensor_free(&out);
	}
	/* by hand: 1-d max pool of -1 -2 -3 with window 2, pad 1 each side
	 * reads -inf in the padding: max(-inf,-1) max(-1,-2) max(-2,-3) max(-3,-inf) */
	static const float y[3] = { -1, -2, -3 };
	struct ir_attrs b = { .window = IR_ILIST(2), .stride = IR_ILIST(1), .pad_lo = IR_ILIST(1),
			      .pad_hi = IR_ILIST(1), .dilation = IR_ILIST(1) };
	in = T(IR_F32, SH(3), y);
	int rc = run_op(IR_OP_WINDOW_MAX, &b, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ -1, -1, -2, -3 }, 4),
	       "window_max pads with -inf");
	if (rc == 0)
		ir_tensor_free(&out);
	rc = run_op(IR_OP_WINDOW_SUM, &b, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ -1, -3, -5, -3 }, 4), "window_sum pads with 0");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int64_t yi[3] = { -1, -2, -3 };
	in = T(IR_I64, SH(3), yi);
	rc = run_op(IR_OP_WINDOW_MAX, &b, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ -1, -1, -2, -3 }, 4), "window_max i64");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_cumsum(void)
{
	static const float x[6] = { 1, 2, 3, 4, 5, 6 };
	struct ir_tensor in = T(IR_F32, SH(2, 3), x), out;
	static const struct {
		int64_t axis, mode;
		float want[6];
	} cases[] = {
		{ 1, 0, { 1, 3, 6, 4, 9, 15 } },
		{ 1, IR_CUMSUM_EXCLUSIVE, { 0, 1, 3, 0, 4, 9 } },
		{ 1, IR_CUMSUM_REVERSE, { 6, 5, 3, 15, 11, 6 } },
		{ 1, IR_CUMSUM_EXCLUSIVE | IR_CUMSUM_REVERSE, { 5, 3, 0, 11, 6, 0 } },
		{ 0, 0, { 1, 2, 3, 5, 7, 9 } },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct ir_attrs a = { .axis = cases[k].axis, .mode = cases[k].mode };
		int rc = run_op(IR_OP_CUMSUM, &a, 1, &in, &out);
		TAP_OK(rc == 0 && same_f32(&out, cases[k].want, 6), "cumsum f32 axis %lld mode %lld",
		       (long long)cases[k].axis, (long long)cases[k].mode);
		if (rc == 0)
			ir_tensor_free(&out);
	}
	static const int64_t xi[4] = { INT64_MAX, 1, 5, -2 };
	struct ir_attrs a = { .axis = 0 };
	in = T(IR_I64, SH(4), xi);
	int rc = run_op(IR_OP_CUMSUM, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ INT64_MAX, INT64_MIN, INT64_MIN + 5, INT64_MIN + 3 }, 4),
	       "cumsum i64 wraps");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_softmax_layer_norm(void)
{
	static const float x[6] = { 1, 2, 3, -1, 0, 1000 };
	struct ir_tensor in = T(IR_F32, SH(2, 3), x), out;
	struct ir_attrs a = { .axis = 1 };
	float want[6];
	for (int r = 0; r < 2; r++) {
		double m = fmax(fmax(x[r * 3], x[r * 3 + 1]), x[r * 3 + 2]), s = 0;
		for (int j = 0; j < 3; j++)
			s += exp(x[r * 3 + j] - m);
		for (int j = 0; j < 3; j++)
			want[r * 3 + j] = (float)(exp(x[r * 3 + j] - m) / s);
	}
	int rc = run_op(IR_OP_SOFTMAX, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, want, 6), "softmax f32 axis 1 (large logits stay finite)");
	if (rc == 0)
		ir_tensor_free(&out);
	a.axis = 0;
	for (int c = 0; c < 3; c++) {
		double m = fmax(x[c], x[3 + c]), s = exp(x[c] - m) + exp(x[3 + c] - m);
		want[c] = (float)(exp(x[c] - m) / s);
		want[3 + c] = (float)(exp(x[3 + c] - m) / s);
	}
	rc = run_op(IR_OP_SOFTMAX, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, want, 6), "softmax f32 axis 0 (strided)");
	if (rc == 0)
		ir_tensor_free(&out);

	/* layer_norm over dims 1..2 of [2,2,3] */
	float xl[12], sc[6], bi[6], wl[12];
	for (int i = 0; i < 12; i++)
		xl[i] = (float)((i * 7) % 5) + 0.5f * (float)i;
	for (int i = 0; i < 6; i++) {
		sc[i] = 1.0f + 0.25f * (float)i;
		bi[i] = 0.5f - 0.125f * (float)i;
	}
	for (int r = 0; r < 2; r++) {
		double m = 0, v = 0;
		for (int j = 0; j < 6; j++)
			m += xl[r * 6 + j];
		m /= 6;
		for (int j = 0; j < 6; j++)
			v += (xl[r * 6 + j] - m) * (xl[r * 6 + j] - m);
		v /= 6;
		for (int j = 0; j < 6; j++)
			wl[r * 6 + j] = (float)((xl[r * 6 + j] - m) / sqrt(v + 1e-5) * sc[j] + bi[j]);
	}
	struct ir_tensor ln[3] = { T(IR_F32, SH(2, 2, 3), xl), T(IR_F32, SH(2, 3), sc),
				   T(IR_F32, SH(2, 3), bi) };
	struct ir_attrs la = { .axis = 1, .eps = 1e-5 };
	rc = run_op(IR_OP_LAYER_NORM, &la, 3, ln, &out);
	double got[12], wantd[12];
	for (int i = 0; rc == 0 && i < 12; i++) {
		got[i] = f32_at(&out, i);
		wantd[i] = wl[i];
	}
	TAP_OK(rc == 0 && near_f64(got, wantd, 12, 1e-6), "layer_norm f32 over two dims, eps");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_topk(void)
{
	static const float x[10] = { 3, 1, 3, 2, 3, /* row 2 */ 0, NAN, 5, 5, -1 };
	struct ir_tensor in = T(IR_F32, SH(2, 5), x), out[2];
	struct ir_attrs a = { .axis = 1, .k = 3 };
	int rc = run_op(IR_OP_TOPK, &a, 1, &in, out);
	/* ties go to the lower index; NaN ranks above every number */
	TAP_OK(rc == 0 && same_f32(&out[0], (float[]){ 3, 3, 3, NAN, 5, 5 }, 6) &&
		       same_i64(&out[1], (int64_t[]){ 0, 2, 4, 1, 2, 3 }, 6),
	       "topk largest, ties to the lower index");
	if (rc == 0) {
		ir_tensor_free(&out[0]);
		ir_tensor_free(&out[1]);
	}
	a.k = 2;
	a.mode = IR_TOPK_SMALLEST;
	rc = run_op(IR_OP_TOPK, &a, 1, &in, out);
	TAP_OK(rc == 0 && same_f32(&out[0], (float[]){ 1, 2, -1, 0 }, 4) &&
		       same_i64(&out[1], (int64_t[]){ 1, 3, 4, 0 }, 4),
	       "topk smallest");
	if (rc == 0) {
		ir_tensor_free(&out[0]);
		ir_tensor_free(&out[1]);
	}
	static const int64_t xi[6] = { 4, 9, 4, 9, 1, 1 };
	in = T(IR_I64, SH(3, 2), xi);
	struct ir_attrs b = { .axis = 0, .k = 2 };
	rc = run_op(IR_OP_TOPK, &b, 1, &in, out);
	/* column 0: 4 4 1 -> 4 (0), 4 (1); column 1: 9 9 1 -> 9 (0), 9 (1) */
	TAP_OK(rc == 0 && same_i64(&out[0], (int64_t[]){ 4, 9, 4, 9 }, 4) &&
		       same_i64(&out[1], (int64_t[]){ 0, 0, 1, 1 }, 4),
	       "topk i64 along axis 0 with ties");
	if (rc == 0) {
		ir_tensor_free(&out[0]);
		ir_tensor_free(&out[1]);
	}
}

/* ---- gather, scatter, data movement ---------------------------------------- */

static void test_gather_scatter(void)
{
	static const float d[12] = { 0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23 };
	static const int64_t idx[4] = { -1, 0, 2, -3 };
	struct ir_tensor in[3] = { T(IR_F32, SH(3, 4), d), T(IR_I64, SH(4), idx) }, out;
	struct ir_attrs a = { .axis = 0 };
	int rc = run_op(IR_OP_GATHER, &a, 2, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(4, 4)) &&
		       same_f32(&out, (float[]){ 20, 21, 22, 23, 0, 1, 2, 3, 20, 21, 22, 23, 0, 1, 2, 3 }, 16),
	       "gather axis 0 with negative indices");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int32_t idx2[4] = { 3, -4, 1, 1 };
	in[1] = T(IR_I32, SH(2, 2), idx2);
	a.axis = 1;
	rc = run_op(IR_OP_GATHER, &a, 2, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(3, 2, 2)) &&
		       same_f32(&out, (float[]){ 3, 0, 1, 1, 13, 10, 11, 11, 23, 20, 21, 21 }, 12),
	       "gather axis 1 with i32 [2,2] indices");
	if (rc == 0)
		ir_tensor_free(&out);

	/* out of range: the message names the op and the index */
	static const int64_t bad[2] = { 1, 5 };
	in[1] = T(IR_I64, SH(2), bad);
	rc = run_op(IR_OP_GATHER, &a, 2, in, &out);
	TAP_OK(rc == -ERANGE && strstr(ir_error(), "gather") && strstr(ir_error(), "index 5"),
	       "gather index out of range: -ERANGE naming op and index (%s)", ir_error());
	static const int64_t bad2[1] = { -5 };
	in[1] = T(IR_I64, SH(1), bad2);
	rc = run_op(IR_OP_GATHER, &a, 2, in, &out);
	TAP_OK(rc == -ERANGE && strstr(ir_error(), "-5"), "gather index -5 of 4 is out of range");

	/* scatter add with duplicates: rows 1, 3, 1, -4 (= 0) of a [4,2] */
	static const float base[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
	static const int64_t si[4] = { 1, 3, 1, -4 };
	static const float up[8] = { 1, 2, 10, 20, 100, 200, 5, 5 };
	in[0] = T(IR_F32, SH(4, 2), base);
	in[1] = T(IR_I64, SH(4), si);
	in[2] = T(IR_F32, SH(4, 2), up);
	struct ir_attrs s = { .mode = IR_SCATTER_ADD };
	rc = run_op(IR_OP_SCATTER, &s, 3, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 6, 6, 102, 203, 1, 1, 11, 21 }, 8),
	       "scatter add accumulates duplicates");
	if (rc == 0)
		ir_tensor_free(&out);
	s.mode = IR_SCATTER_NONE;
	rc = run_op(IR_OP_SCATTER, &s, 3, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 5, 5, 100, 200, 1, 1, 10, 20 }, 8),
	       "scatter none: last write wins");
	if (rc == 0)
		ir_tensor_free(&out);
	s.mode = IR_SCATTER_MAX;
	rc = run_op(IR_OP_SCATTER, &s, 3, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 5, 5, 100, 200, 1, 1, 10, 20 }, 8), "scatter max");
	if (rc == 0)
		ir_tensor_free(&out);
	s.mode = IR_SCATTER_MUL;
	rc = run_op(IR_OP_SCATTER, &s, 3, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 5, 5, 100, 400, 1, 1, 10, 20 }, 8), "scatter mul");
	if (rc == 0)
		ir_tensor_free(&out);
	s.mode = IR_SCATTER_MIN;
	rc = run_op(IR_OP_SCATTER, &s, 3, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 1, 1, 1, 1, 1, 1, 1, 1 }, 8), "scatter min");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int64_t bi[4] = { 1, 3, 4, 0 };
	in[1] = T(IR_I64, SH(4), bi);
	rc = run_op(IR_OP_SCATTER, &s, 3, in, &out);
	TAP_OK(rc == -ERANGE && strstr(ir_error(), "scatter") && strstr(ir_error(), "index 4"),
	       "scatter index out of range: -ERANGE (%s)", ir_error());
	/* integer scatter add: [3] with scalar rows */
	static const int64_t bx[3] = { 0, 0, 0 }, bidx[3] = { 2, 2, 0 }, bup[3] = { 5, 6, 7 };
	in[0] = T(IR_I64, SH(3), bx);
	in[1] = T(IR_I64, SH(3), bidx);
	in[2] = T(IR_I64, SH(3), bup);
	s.mode = IR_SCATTER_ADD;
	rc = run_op(IR_OP_SCATTER, &s, 3, in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 7, 0, 11 }, 3), "scatter add i64 scalar rows");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_pad(void)
{
	static const float x[6] = { 1, 2, 3, 4, 5, 6 }; /* [2,3] */
	struct ir_tensor in = T(IR_F32, SH(2, 3), x), out;
	struct ir_attrs a = { .pad_lo = IR_ILIST(1, 2), .pad_hi = IR_ILIST(0, 1), .value = 9 };
	/* [3,6]: a row of 9s, then each row as 9 9 x x x 9 */
	int rc = run_op(IR_OP_PAD, &a, 1, &in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(3, 6)) &&
		       same_f32(&out, (float[]){ 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9 }, 18),
	       "pad constant");
	if (rc == 0)
		ir_tensor_free(&out);
	a.mode = IR_PAD_EDGE;
	rc = run_op(IR_OP_PAD, &a, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6 }, 18),
	       "pad edge");
	if (rc == 0)
		ir_tensor_free(&out);
	a.mode = IR_PAD_REFLECT;
	rc = run_op(IR_OP_PAD, &a, 1, &in, &out);
	/* rows reflect: row -1 is row 1; columns: -2 -> 2, -1 -> 1, 3 -> 1 */
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5 }, 18),
	       "pad reflect");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int64_t xi[3] = { 1, 2, 3 };
	struct ir_attrs b = { .pad_lo = IR_ILIST(2), .pad_hi = IR_ILIST(2), .mode = IR_PAD_REFLECT };
	in = T(IR_I64, SH(3), xi);
	rc = run_op(IR_OP_PAD, &b, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 3, 2, 1, 2, 3, 2, 1 }, 7), "pad reflect 1-d i64");
	if (rc == 0)
		ir_tensor_free(&out);
	b.mode = IR_PAD_CONSTANT;
	b.value = -7;
	rc = run_op(IR_OP_PAD, &b, 1, &in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ -7, -7, 1, 2, 3, -7, -7 }, 7), "pad constant i64");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_movement(void)
{
	float x[24];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	struct ir_tensor in[3] = { T(IR_F32, SH(2, 3, 4), x) }, out;
	float want[64];

	struct ir_attrs tr = { .axes = IR_ILIST(2, 0, 1) };
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++)
				want[(i * 2 + j) * 3 + k] = x[(j * 3 + k) * 4 + i];
	int rc = run_op(IR_OP_TRANSPOSE, &tr, 1, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(4, 2, 3)) && same_f32(&out, want, 24),
	       "transpose {2,0,1}");
	if (rc == 0)
		ir_tensor_free(&out);

	struct ir_attrs rv = { .axes = IR_ILIST(0, 2) };
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 4; k++)
				want[(i * 3 + j) * 4 + k] = x[((1 - i) * 3 + j) * 4 + (3 - k)];
	rc = run_op(IR_OP_REVERSE, &rv, 1, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, want, 24), "reverse axes {0,2}");
	if (rc == 0)
		ir_tensor_free(&out);

	struct ir_attrs sl = { .start = IR_ILIST(1, 0, 1), .limit = IR_ILIST(2, 3, 4),
			       .stride = IR_ILIST(1, 2, 2) };
	/* [1,2,2]: x[1][0][1], x[1][0][3], x[1][2][1], x[1][2][3] */
	rc = run_op(IR_OP_SLICE, &sl, 1, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(1, 2, 2)) &&
		       same_f32(&out, (float[]){ 13, 15, 21, 23 }, 4),
	       "slice with strides");
	if (rc == 0)
		ir_tensor_free(&out);

	struct ir_attrs rs = { .shape = SH(6, 4) };
	rc = run_op(IR_OP_RESHAPE, &rs, 1, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(6, 4)) && same_f32(&out, x, 24), "reshape");
	if (rc == 0)
		ir_tensor_free(&out);

	/* broadcast [2,1] -> [2,3,4] with operand dims at result dims 0 and 2 */
	static const float b2[2] = { 7, 8 };
	struct ir_attrs bc = { .shape = SH(2, 3, 4), .axes = IR_ILIST(0, 2) };
	in[0] = T(IR_F32, SH(2, 1), b2);
	for (int i = 0; i < 24; i++)
		want[i] = i < 12 ? 7 : 8;
	rc = run_op(IR_OP_BROADCAST, &bc, 1, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, want, 24), "broadcast [2,1] -> [2,3,4]");
	if (rc == 0)
		ir_tensor_free(&out);
	static const int64_t b3[3] = { 1, 2, 3 };
	struct ir_attrs bc2 = { .shape = SH(2, 3), .axes = IR_ILIST(1) };
	in[0] = T(IR_I64, SH(3), b3);
	rc = run_op(IR_OP_BROADCAST, &bc2, 1, in, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 1, 2, 3, 1, 2, 3 }, 6), "broadcast i64 [3] -> [2,3]");
	if (rc == 0)
		ir_tensor_free(&out);
	static const double s1 = 2.5;
	struct ir_attrs bc3 = { .shape = SH(2, 2), .axes = { 0 } };
	in[0] = T(IR_F64, SCALAR, &s1);
	rc = run_op(IR_OP_BROADCAST, &bc3, 1, in, &out);
	TAP_OK(rc == 0 && f64_at(&out, 0) == 2.5 && f64_at(&out, 3) == 2.5, "broadcast scalar");
	if (rc == 0)
		ir_tensor_free(&out);

	/* concat of [2,1], [2,2], [2,1] on axis 1 */
	static const float c0[2] = { 1, 2 }, c1[4] = { 3, 4, 5, 6 }, c2[2] = { 7, 8 };
	in[0] = T(IR_F32, SH(2, 1), c0);
	in[1] = T(IR_F32, SH(2, 2), c1);
	in[2] = T(IR_F32, SH(2, 1), c2);
	struct ir_attrs ca = { .axis = 1 };
	rc = run_op(IR_OP_CONCAT, &ca, 3, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 1, 3, 4, 7, 2, 5, 6, 8 }, 8), "concat axis 1");
	if (rc == 0)
		ir_tensor_free(&out);
	ca.axis = 0;
	in[0] = T(IR_F32, SH(1, 2), c0);
	in[1] = T(IR_F32, SH(2, 2), c1);
	rc = run_op(IR_OP_CONCAT, &ca, 2, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 1, 2, 3, 4, 5, 6 }, 6), "concat axis 0");
	if (rc == 0)
		ir_tensor_free(&out);
}

static void test_sources(void)
{
	struct ir_tensor out;
	struct ir_attrs a = { .shape = SH(2, 3), .dtype = IR_F32, .axis = 1 };
	int rc = run_op(IR_OP_IOTA, &a, 0, NULL, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ 0, 1, 2, 0, 1, 2 }, 6), "iota f32 axis 1");
	if (rc == 0)
		ir_tensor_free(&out);
	a.dtype = IR_I64;
	a.axis = 0;
	rc = run_op(IR_OP_IOTA, &a, 0, NULL, &out);
	TAP_OK(rc == 0 && same_i64(&out, (int64_t[]){ 0, 0, 0, 1, 1, 1 }, 6), "iota i64 axis 0");
	if (rc == 0)
		ir_tensor_free(&out);
	static const uint16_t h[3] = { 0x3c00, 0xc000, 0x7e00 };
	struct ir_attrs c = { .shape = SH(3), .dtype = IR_F16, .data = h };
	rc = run_op(IR_OP_CONSTANT, &c, 0, NULL, &out);
	TAP_OK(rc == 0 && out.dtype == IR_F16 && memcmp(out.data, h, sizeof h) == 0, "constant f16 bytes");
	if (rc == 0)
		ir_tensor_free(&out);
}

/* ---- graphs, params, errors ------------------------------------------------- */

static char tmpdir[64];

static void write_file(const char *path, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(bytes, 1, n, f);
		fclose(f);
	}
}

/* y = relu(x * w + b) with w inline and b external, plus x itself and y
 * twice as outputs, and a dead node. */
static struct ir_graph *build_mlp(const char *bpath, const char *base_dir, int64_t boff)
{
	static const float w[6] = { 1, -1, 2, 0.5f, 0, -2 }; /* [3,2] */
	struct ir_graph *g = ir_graph_new();
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &SH(2, 3));
	struct ir_data wd = { .bytes = w, .nbytes = sizeof w };
	struct ir_data bd = { .path = bpath, .base_dir = base_dir, .offset = boff, .nbytes = 8 };
	struct ir_value *wv = ir_graph_add_param(g, "w", IR_F32, &SH(3, 2), &wd);
	struct ir_value *bv = ir_graph_add_param(g, "b", IR_F32, &SH(2), &bd);
	struct ir_attrs dot = { .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) };
	struct ir_node *mm = ir_graph_add_node(g, IR_OP_DOT, "mm", 2, (struct ir_value *[]){ x, wv }, &dot);
	struct ir_attrs bc = { .shape = SH(2, 2), .axes = IR_ILIST(1) };
	struct ir_node *bb = ir_graph_add_node(g, IR_OP_BROADCAST, "bb", 1, &bv, &bc);
	struct ir_node *add = ir_graph_add_node(g, IR_OP_ADD, "add", 2,
						(struct ir_value *[]){ mm->out[0], bb->out[0] }, &no_attrs);
	ir_graph_add_node(g, IR_OP_EXP, "dead", 1, &add->out[0], &no_attrs);
	struct ir_node *relu = ir_graph_add_node(g, IR_OP_RELU, "relu", 1, &add->out[0], &no_attrs);
	ir_graph_add_output(g, relu->out[0], "y");
	ir_graph_add_output(g, x, "x_again");
	ir_graph_add_output(g, relu->out[0], "y_again");
	ir_graph_add_output(g, wv, "w");
	return g;
}

static void test_graph(void)
{
	static const float x[6] = { 1, 2, 3, -1, -2, -3 };
	static const float bfile[4] = { 99, 0.5f, -1, 99 }; /* b at byte offset 4 */
	char path[128], rel[] = "b.bin";
	snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
	write_file(path, bfile, sizeof bfile);
	/* x . w: row 0: (1 + 4 + 0, -1 + 1 - 6) = (5, -6); row 1: (-5, 6)
	 * + b (0.5, -1): (5.5, -7), (-4.5, 5); relu: (5.5, 0), (0, 5) */
	const float want[4] = { 5.5f, 0, 0, 5 };
	struct ir_tensor in = T(IR_F32, SH(2, 3), x), out[4];
	for (int variant = 0; variant < 2; variant++) {
		struct ir_graph *g = variant ? build_mlp(rel, tmpdir, 4) : build_mlp(path, NULL, 4);
		int rc = ir_verify(g);
		if (rc == 0)
			rc = interp_run(g, &in, out);
		if (rc < 0)
			TAP_DIAG("%s", ir_error());
		TAP_OK(rc == 0 && same_f32(&out[0], want, 4) && same_f32(&out[1], x, 6) &&
			       same_f32(&out[2], want, 4) && out[0].data != out[2].data &&
			       f32_at(&out[3], 2) == 2.0f,
		       "graph with inline and external (%s path) params, repeated outputs",
		       variant ? "relative" : "absolute");
		for (int o = 0; rc == 0 && o < 4; o++)
			ir_tensor_free(&out[o]);
		ir_graph_free(g);
	}

	/* allocation failure at every step gives -ENOMEM, never a crash */
	struct ir_graph *g = build_mlp(path, NULL, 4);
	bool clean = true;
	int fails = 0;
	for (long k = 0; k < 200; k++) {
		ir_alloc_fail_after(k);
		int rc = interp_run(g, &in, out);
		ir_alloc_fail_after(-1);
		if (rc == 0) {
			for (int o = 0; o < 4; o++)
				ir_tensor_free(&out[o]);
			break;
		}
		fails++;
		clean &= rc == -ENOMEM;
	}
	TAP_OK(clean && fails > 5, "every allocation failure gives -ENOMEM (%d tried)", fails);

	/* wrong input shape names the input */
	struct ir_tensor wrong = T(IR_F32, SH(3, 2), x);
	int rc = interp_run(g, &wrong, out);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), "\"x\"") && strstr(ir_error(), "[2,3]"),
	       "mismatched input: -EINVAL naming it (%s)", ir_error());
	ir_graph_free(g);

	/* external data: missing file, short file */
	char missing[128];
	snprintf(missing, sizeof missing, "%s/no_such_file.bin", tmpdir);
	g = build_mlp(missing, NULL, 0);
	rc = interp_run(g, &in, out);
	TAP_OK(rc == -ENOENT && strstr(ir_error(), missing) && strstr(ir_error(), "\"b\""),
	       "missing external file: -ENOENT naming the file (%s)", ir_error());
	ir_graph_free(g);
	g = build_mlp(path, NULL, 12);
	rc = interp_run(g, &in, out);
	TAP_OK(rc == -EIO && strstr(ir_error(), path), "short external file: -EIO naming the file (%s)",
	       ir_error());
	ir_graph_free(g);

	/* interp_load_param alone */
	g = build_mlp("b.bin", tmpdir, 4);
	struct ir_tensor t;
	rc = interp_load_param(ir_graph_param(g, 1), &t);
	TAP_OK(rc == 0 && same_f32(&t, (float[]){ 0.5f, -1 }, 2), "interp_load_param relative to base_dir");
	if (rc == 0)
		ir_tensor_free(&t);
	ir_graph_free(g);
	unlink(path);
}

/* A graph touching every kernel that allocates scratch memory: making each
 * allocation fail in turn must give -ENOMEM and leak nothing (ASan). */
static void test_alloc_failures(void)
{
	struct ir_graph *g = ir_graph_new();
	static const float wv[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, sv[4] = { 1, 1, 2, 2 };
	struct ir_value *x16 = ir_graph_add_input(g, "x", IR_F16, &SH(2, 3, 4));
	struct ir_value *idx = ir_graph_add_input(g, "idx", IR_I64, &SH(2));
	struct ir_data wd = { .bytes = wv, .nbytes = sizeof wv }, sd = { .bytes = sv, .nbytes = sizeof sv };
	struct ir_value *w = ir_graph_add_param(g, "w", IR_F32, &SH(2, 1, 2, 2), &wd);
	struct ir_value *sc = ir_graph_add_param(g, "s", IR_F32, &SH(4), &sd);
	struct ir_attrs cv = { .dtype = IR_F32 };
	struct ir_value *x = ir_graph_add_node(g, IR_OP_CONVERT, "cvt", 1, &x16, &cv)->out[0];
	struct ir_value *outs[16];
	int no = 0;
	struct ir_attrs dot = { .lhs_batch = IR_ILIST(0), .rhs_batch = IR_ILIST(0),
				.lhs_contract = IR_ILIST(2, 1), .rhs_contract = IR_ILIST(2, 1) };
	outs[no++] = ir_graph_add_node(g, IR_OP_DOT, "dot", 2, (struct ir_value *[]){ x16, x16 }, &dot)->out[0];
	struct ir_attrs rs = { .shape = SH(1, 2, 3, 4) };
	struct ir_value *x4 = ir_graph_add_node(g, IR_OP_RESHAPE, "rs", 1, &x, &rs)->out[0];
	struct ir_attrs conv = { .stride = IR_ILIST(1, 1), .pad_lo = IR_ILIST(1, 0), .pad_hi = IR_ILIST(0, 1),
				 .dilation = IR_ILIST(1, 1), .groups = 2 };
	outs[no++] = ir_graph_add_node(g, IR_OP_CONV, "conv", 2, (struct ir_value *[]){ x4, w }, &conv)->out[0];
	struct ir_attrs red = { .axes = IR_ILIST(1) };
	outs[no++] = ir_graph_add_node(g, IR_OP_REDUCE_SUM, "red", 1, &x, &red)->out[0];
	struct ir_attrs win = { .window = IR_ILIST(1, 2, 2), .stride = IR_ILIST(1, 1, 1),
				.pad_lo = IR_ILIST(0, 1, 1), .pad_hi = IR_ILIST(0, 0, 0),
				.dilation = IR_ILIST(1, 1, 1) };
	outs[no++] = ir_graph_add_node(g, IR_OP_WINDOW_MAX, "win", 1, &x, &win)->out[0];
	struct ir_attrs tk = { .axis = 2, .k = 2 };
	struct ir_node *topk = ir_graph_add_node(g, IR_OP_TOPK, "topk", 1, &x, &tk);
	outs[no++] = topk->out[0];
	outs[no++] = topk->out[1];
	struct ir_attrs ax1 = { .axis = 1 }, ax2 = { .axis = 2, .eps = 1e-5 }, ax0 = { .axis = 0 };
	outs[no++] = ir_graph_add_node(g, IR_OP_SOFTMAX, "sm", 1, &x, &ax1)->out[0];
	outs[no++] = ir_graph_add_node(g, IR_OP_LAYER_NORM, "ln", 3, (struct ir_value *[]){ x, sc, sc }, &ax2)->out[0];
	outs[no++] = ir_graph_add_node(g, IR_OP_CUMSUM, "cs", 1, &x, &ax1)->out[0];
	outs[no++] = ir_graph_add_node(g, IR_OP_ARGMAX, "am", 1, &x, &ax1)->out[0];
	struct ir_value *ga = ir_graph_add_node(g, IR_OP_GATHER, "ga", 2, (struct ir_value *[]){ x, idx }, &ax0)->out[0];
	struct ir_attrs sa = { .mode = IR_SCATTER_ADD };
	outs[no++] = ir_graph_add_node(g, IR_OP_SCATTER, "sc", 3, (struct ir_value *[]){ x, idx, ga }, &sa)->out[0];
	struct ir_attrs pad = { .pad_lo = IR_ILIST(0, 1, 1), .pad_hi = IR_ILIST(1, 1, 0), .mode = IR_PAD_REFLECT };
	outs[no++] = ir_graph_add_node(g, IR_OP_PAD, "pad", 1, &x, &pad)->out[0];
	struct ir_attrs io = { .shape = SH(2, 2), .dtype = IR_F16, .axis = 1 };
	outs[no++] = ir_graph_add_node(g, IR_OP_IOTA, "iota", 0, NULL, &io)->out[0];
	for (int o = 0; o < no; o++)
		ir_graph_add_output(g, outs[o], NULL);
	TAP_OK(ir_verify(g) == 0, "allocation-failure graph verifies (%s)", ir_error());

	uint16_t xs[24];
	for (int i = 0; i < 24; i++)
		xs[i] = f16((float)((i * 7) % 5) - 1.5f);
	static const int64_t iv[2] = { 1, -1 };
	struct ir_tensor in[2] = { T(IR_F16, SH(2, 3, 4), xs), T(IR_I64, SH(2), iv) }, out[16];
	bool clean = true;
	int fails = 0, rc = -1;
	for (long k = 0; k < 1000 && rc != 0; k++) {
		ir_alloc_fail_after(k);
		rc = interp_run(g, in, out);
		ir_alloc_fail_after(-1);
		if (rc == 0)
			break;
		fails++;
		if (rc != -ENOMEM) {
			TAP_DIAG("allocation %ld: %d %s", k, rc, ir_error());
			clean = false;
		}
	}
	TAP_OK(rc == 0 && clean && fails > 30,
	       "each of %d allocation failures across all kernels gives -ENOMEM", fails);
	for (int o = 0; rc == 0 && o < no; o++)
		ir_tensor_free(&out[o]);
	ir_graph_free(g);
}

/* A chain long enough that freeing intermediates matters: 200 adds of a
 * 1 MiB tensor would need 200 MiB if nothing were freed; the result is x +
 * 200 exactly. */
static void test_chain(void)
{
	enum { N = 1 << 18, STEPS = 200 };
	struct ir_graph *g = ir_graph_new();
	float one = 1;
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &SH(N));
	struct ir_data od = { .bytes = &one, .nbytes = 4 };
	struct ir_value *p = ir_graph_add_param(g, "one", IR_F32, &SCALAR, &od);
	struct ir_attrs bc = { .shape = SH(N), .axes = { 0 } };
	struct ir_value *ones = ir_graph_add_node(g, IR_OP_BROADCAST, NULL, 1, &p, &bc)->out[0];
	struct ir_value *v = x;
	for (int i = 0; i < STEPS; i++)
		v = ir_graph_add_node(g, IR_OP_ADD, NULL, 2, (struct ir_value *[]){ v, ones }, &no_attrs)->out[0];
	ir_graph_add_output(g, v, NULL);
	float *xs = malloc(N * sizeof *xs);
	for (int i = 0; i < N; i++)
		xs[i] = (float)(i % 1000);
	struct ir_tensor in = T(IR_F32, SH(N), xs), out;
	int rc = interp_run(g, &in, &out);
	bool ok = rc == 0;
	for (int i = 0; ok && i < N; i++)
		ok = f32_at(&out, i) == xs[i] + STEPS;
	TAP_OK(ok, "chain of %d adds over %d elements", STEPS, N);
	if (rc == 0)
		ir_tensor_free(&out);
	free(xs);
	ir_graph_free(g);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/pcc_interp_XXXXXX");
	if (!mkdtemp(tmpdir))
		snprintf(tmpdir, sizeof tmpdir, "/tmp");
	test_unary_float();
	test_unary_exact();
	test_half();
	test_binary_float();
	test_long_vector();
	test_integer();
	test_bool_and_select();
	test_convert();
	test_dot();
	test_conv();
	test_reduce();
	test_arg();
	test_window();
	test_cumsum();
	test_softmax_layer_norm();
	test_topk();
	test_gather_scatter();
	test_pad();
	test_movement();
	test_sources();
	test_graph();
	test_alloc_failures();
	test_chain();
	rmdir(tmpdir);
	return tap_done();
}
