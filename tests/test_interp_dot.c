/*
 * test_interp_dot.c: DOT and CONV in the reference interpreter
 * (kernels/interp_dot.c).
 *
 * Against plain loops written straight from the op semantics in ir.h (dot
 * as a sum over contracting indices, naive convolution) and small cases
 * worked out by hand. Dot: two batch dims and contracting dims out of
 * order in f64, f32, f16 and i64, operands transposed in memory, vector by
 * vector, the outer product, an empty contraction. Conv: grouped, strided,
 * padded and dilated in f64 and f32, and a 1-d depthwise one by hand.
 */
#include <math.h>
#include <stdint.h>

#include "interp_check.h"

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
	struct ir_attrs a = { .lhs_batch = IR_ILIST(0, 3),
			      .rhs_batch = IR_ILIST(3, 1),
			      .lhs_contract = IR_ILIST(4, 2),
			      .rhs_contract = IR_ILIST(0, 4) };
	struct ir_tensor in[2] = { T(IR_F64, SH(2, 3, 4, 2, 5), l), T(IR_F64, SH(5, 2, 3, 2, 4), r) };
	struct ir_tensor out;
	int rc = run_op(IR_OP_DOT, &a, 2, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(2, 2, 3, 3)) && near_f64(out.data, want, NO, 0),
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
static void conv_ref(const double *x, const double *w, double *y, const int64_t *xd, const int64_t *wd,
		     const int64_t *yd, const struct ir_attrs *a)
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
								int64_t h = i * a->stride.v[0] - a->pad_lo.v[0] +
									    p * a->dilation.v[0];
								int64_t v = j * a->stride.v[1] - a->pad_lo.v[1] +
									    q * a->dilation.v[1];
								if (h < 0 || h >= xd[2] || v < 0 || v >= xd[3])
									continue;
								s += x[((n * xd[1] + g * Cg + c) * xd[2] + h) * xd[3] +
								       v] *
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
	struct ir_attrs a = { .stride = IR_ILIST(2, 1),
			      .pad_lo = IR_ILIST(1, 0),
			      .pad_hi = IR_ILIST(2, 1),
			      .dilation = IR_ILIST(1, 2),
			      .groups = 2 };
	conv_ref(x, w, want, xd, wd, yd, &a);
	struct ir_tensor in[2] = { T(IR_F64, SH(2, 4, 7, 6), x), T(IR_F64, SH(6, 2, 3, 2), w) }, out;
	int rc = run_op(IR_OP_CONV, &a, 2, in, &out);
	TAP_OK(rc == 0 && ir_shape_eq(&out.shape, &SH(2, 6, 4, 5)) && near_f64(out.data, want, NY, 1e-12),
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
	struct ir_attrs a1 = { .stride = IR_ILIST(1),
			       .pad_lo = IR_ILIST(1),
			       .pad_hi = IR_ILIST(0),
			       .dilation = IR_ILIST(1),
			       .groups = 2 };
	in[0] = T(IR_F32, SH(1, 2, 4), x1);
	in[1] = T(IR_F32, SH(2, 1, 2), w1);
	rc = run_op(IR_OP_CONV, &a1, 2, in, &out);
	TAP_OK(rc == 0 && same_f32(&out, (float[]){ -1, -1, -1, -1, 0, 3, 2, 3 }, 8), "conv1d f32 depthwise by hand");
	if (rc == 0)
		ir_tensor_free(&out);
}

int main(void)
{
	test_dot();
	test_conv();
	return tap_done();
}
