/*
 * test_interp_nn.c: the reference interpreter's kernels other than
 * elementwise ops, dot and conv (kernels/interp_nn.c).
 *
 * Each case runs one op and compares with literals worked out by hand or
 * plain loops written from the op semantics in ir.h (reductions by
 * accumulating, window ops by scanning every tap). Covered: reductions
 * (f32 accumulating in double, NaN, i64, bool), argmax/argmin and their
 * ties, window max and sum (padding, strides, dilation), cumsum in every
 * mode, softmax, layer_norm, topk (ties, NaN), gather and scatter (negative
 * and out-of-range indices, duplicates under every combining mode), pad in
 * every mode, transpose, reverse, slice, reshape, broadcast, concat, iota
 * and constant.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "interp_check.h"

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
	} cases[] = { { IR_OP_REDUCE_SUM, sum },
		      { IR_OP_REDUCE_PROD, prod },
		      { IR_OP_REDUCE_MAX, mx },
		      { IR_OP_REDUCE_MIN, mn } };
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
static void window_ref(bool is_max, const float *x, int H, int W, const int64_t *win, const int64_t *st,
		       const int64_t *lo, const int64_t *dil, int OH, int OW, float *y)
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
	struct ir_attrs a = { .window = IR_ILIST(3, 2),
			      .stride = IR_ILIST(2, 2),
			      .pad_lo = IR_ILIST(1, 1),
			      .pad_hi = IR_ILIST(1, 2),
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
	struct ir_attrs b = { .window = IR_ILIST(2),
			      .stride = IR_ILIST(1),
			      .pad_lo = IR_ILIST(1),
			      .pad_hi = IR_ILIST(1),
			      .dilation = IR_ILIST(1) };
	in = T(IR_F32, SH(3), y);
	int rc = run_op(IR_OP_WINDOW_MAX, &b, 1, &in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ -1, -1, -2, -3 }, 4), "window_max pads with -inf");
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
	struct ir_tensor ln[3] = { T(IR_F32, SH(2, 2, 3), xl), T(IR_F32, SH(2, 3), sc), T(IR_F32, SH(2, 3), bi) };
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
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(4, 2, 3)) && same_f32(&out, want, 24), "transpose {2,0,1}");
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

	struct ir_attrs sl = { .start = IR_ILIST(1, 0, 1), .limit = IR_ILIST(2, 3, 4), .stride = IR_ILIST(1, 2, 2) };
	/* [1,2,2]: x[1][0][1], x[1][0][3], x[1][2][1], x[1][2][3] */
	rc = run_op(IR_OP_SLICE, &sl, 1, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(1, 2, 2)) && same_f32(&out, (float[]){ 13, 15, 21, 23 }, 4),
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

int main(void)
{
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
	return tap_done();
}
