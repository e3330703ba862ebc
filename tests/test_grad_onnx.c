/*
 * test_grad_onnx.c: autodiff through ONNX ops that the importer decomposes
 * into several core ops (compiler/frontend/onnx_ops_convt.c, onnx_ops_image.c):
 * ConvTranspose, Resize, DepthToSpace, SpaceToDepth; and Pow by a
 * constant, which imports as multiplies, a reciprocal or a square root.
 *
 * Each case builds a one-node f64 model (onnx_builder.h), imports it and
 * checks dL/d(every graph input) of L = reduce_sum(y * W) against central
 * finite differences (grad_check.h: h = 1e-6, atol = rtol = 1e-6). The
 * decompositions hold reversed and transposed weights, zero-inserting
 * pads, slices, gathers with constant indices, multiply-adds with constant
 * weights and selects, so the check covers their rules composed as a real
 * model composes them. Resize is piecewise smooth in its input (it is
 * linear in it), so finite differences hold everywhere.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grad_check.h"
#include "onnx_builder.h"

enum { T_DOUBLE = 11 };

static Onnx__AttributeProto *attr_new(struct mb *b, Onnx__NodeProto *n, const char *name,
				      Onnx__AttributeProto__AttributeType type)
{
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = mb_str(b, name);
	a->has_type = 1;
	a->type = type;
	PUSH(b, n->attribute, n->n_attribute, a);
	return a;
}

static void attr_ints(struct mb *b, Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v)
{
	Onnx__AttributeProto *a = attr_new(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
	a->n_ints = (size_t)cnt;
	a->ints = mb_alloc(b, (size_t)cnt * sizeof *v);
	memcpy(a->ints, v, (size_t)cnt * sizeof *v);
}

static void attr_str(struct mb *b, Onnx__NodeProto *n, const char *name, const char *v)
{
	Onnx__AttributeProto *a = attr_new(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
	a->has_s = 1;
	a->s.len = strlen(v);
	a->s.data = (uint8_t *)mb_str(b, v);
}

static void attr_float(struct mb *b, Onnx__NodeProto *n, const char *name, float v)
{
	Onnx__AttributeProto *a = attr_new(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
	a->has_f = 1;
	a->f = v;
}

/* A float initializer holding v. */
static void init_floats(struct mb *b, const char *name, int cnt, const float *v)
{
	char dims[24];
	snprintf(dims, sizeof dims, "%d", cnt);
	Onnx__TensorProto *t = mb_init_f32(b, name, dims);
	memcpy(t->raw_data.data, v, (size_t)cnt * sizeof *v);
}

/* Imports b (written as file) and checks the gradients of its output 0
 * with respect to every graph input, filled uniformly in [-1, 1). */
static void check_model(const char *what, struct mb *b, const char *file)
{
	struct gc c;
	gc_begin(&c, "%s", what);
	ir_graph_free(c.g);
	c.g = onnx_import(mb_write(b, file), NULL, NULL);
	mb_free(b);
	if (!c.g) {
		TAP_OK(0, "%s: imports", what);
		TAP_DIAG("%s", ir_error());
		return;
	}
	struct ir_value *y = ir_graph_output(c.g, 0);
	ir_graph_clear_outputs(c.g);
	for (int i = 0; i < ir_graph_ninputs(c.g) && i < MAXIN; i++) {
		struct ir_value *v = ir_graph_input(c.g, i);
		if (ir_tensor_alloc(&c.x[i], v->dtype, &v->shape) < 0)
			c.ok = false;
		else
			fill_values(c.x[i].data, ir_shape_numel(&v->shape), UNI(-1, 1));
		c.in[c.n++] = v;
	}
	gc_check(&c, y);
}

/* ---- ConvTranspose ---------------------------------------------------------------- */

/* ConvTranspose's definition, as a scatter: every x[n, c, i..] times every
 * tap W[c, m', j..] adds to y[n, g M/G + m', i s + j d - lo ..]. */
static void ct_naive(int k, const int64_t *xd, const int64_t *wd, int64_t G, const int64_t *s, const int64_t *d,
		     const int64_t *lo, const int64_t *yd, const double *x, const double *w, double *y)
{
	int64_t C = xd[1], Mg = wd[1], M = yd[1], ny = yd[0] * M, nx = 1, nk = 1, ns = 1;
	for (int i = 0; i < k; i++) {
		ny *= yd[i + 2];
		nx *= xd[i + 2];
		nk *= wd[i + 2];
		ns *= yd[i + 2];
	}
	memset(y, 0, (size_t)ny * sizeof *y);
	for (int64_t n = 0; n < xd[0]; n++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t mm = 0; mm < Mg; mm++)
				for (int64_t xi = 0; xi < nx; xi++)
					for (int64_t ji = 0; ji < nk; ji++) {
						int64_t off = 0, xr = xi, jr = ji;
						bool in = true;
						for (int i = k - 1; i >= 0; i--) {
							int64_t a = xr % xd[i + 2], b = jr % wd[i + 2];
							xr /= xd[i + 2];
							jr /= wd[i + 2];
							int64_t o = a * s[i] + b * d[i] - lo[i], stride = 1;
							for (int q = i + 1; q < k; q++)
								stride *= yd[q + 2];
							in = in && o >= 0 && o < yd[i + 2];
							off += o * stride;
						}
						if (!in)
							continue;
						int64_t m = c / (C / G) * Mg + mm;
						y[(n * M + m) * ns + off] += x[(n * C + c) * nx + xi] *
									     w[(c * Mg + mm) * nk + ji];
					}
}

/* Random ConvTranspose nodes (1-D to 3-D; strides 1 to 3, dilations 1 to
 * 2, groups, pads of either sign through output_shape-free pads, and
 * output_padding) imported and run by the interpreter against ct_naive:
 * the decompositions (zero insertion, phases, the dot) against the
 * definition, forward. */
static void test_conv_transpose_values(void)
{
	int bad = 0, cases = 40;
	char first[300] = "";
	for (int t = 0; t < cases; t++) {
		int k = 1 + t % 3;
		int64_t G = 1 + (int64_t)(urand() * 2), Cg = 1 + (int64_t)(urand() * 2),
			Mg = 1 + (int64_t)(urand() * 2);
		int64_t xd[5] = { 1 + (int64_t)(urand() * 2), G * Cg }, wd[5] = { G * Cg, Mg }, yd[5], s[3], d[3],
			lo[3], hi[3], op[3];
		yd[0] = xd[0];
		yd[1] = G * Mg;
		char xs[64], ws[64], ys[64];
		int nx = snprintf(xs, sizeof xs, "%lld,%lld", (long long)xd[0], (long long)xd[1]);
		int nw = snprintf(ws, sizeof ws, "%lld,%lld", (long long)wd[0], (long long)wd[1]);
		int ny = snprintf(ys, sizeof ys, "%lld,%lld", (long long)yd[0], (long long)yd[1]);
		for (int i = 0; i < k; i++) {
			xd[i + 2] = 1 + (int64_t)(urand() * (k == 3 ? 3 : 5));
			wd[i + 2] = 1 + (int64_t)(urand() * 4);
			/* case 38 (3-D): 729 phases, past CT_MAX_PHASES: the conv over zeros */
			s[i] = t == 38 ? 9 : 1 + (int64_t)(urand() * 3);
			d[i] = 1 + (int64_t)(urand() * 2);
			op[i] = (int64_t)(urand() * (double)(s[i] > d[i] ? s[i] : d[i]));
			lo[i] = (int64_t)(urand() * 3);
			hi[i] = (int64_t)(urand() * 3);
			yd[i + 2] = s[i] * (xd[i + 2] - 1) + op[i] + d[i] * (wd[i + 2] - 1) + 1 - lo[i] - hi[i];
			if (yd[i + 2] < 1) { /* keep the output non-empty */
				lo[i] = hi[i] = 0;
				yd[i + 2] = s[i] * (xd[i + 2] - 1) + op[i] + d[i] * (wd[i + 2] - 1) + 1;
			}
			nx += snprintf(xs + nx, sizeof xs - (size_t)nx, ",%lld", (long long)xd[i + 2]);
			nw += snprintf(ws + nw, sizeof ws - (size_t)nw, ",%lld", (long long)wd[i + 2]);
			ny += snprintf(ys + ny, sizeof ys - (size_t)ny, ",%lld", (long long)yd[i + 2]);
		}
		int64_t pads[6];
		for (int i = 0; i < k; i++)
			pads[i] = lo[i], pads[i + k] = hi[i];
		struct mb *b = mb_new(13);
		mb_input(b, "x", T_DOUBLE, xs);
		mb_input(b, "W", T_DOUBLE, ws);
		Onnx__NodeProto *n = mb_node(b, "ConvTranspose", "up", "x,W", "y");
		attr_ints(b, n, "strides", k, s);
		attr_ints(b, n, "dilations", k, d);
		attr_ints(b, n, "pads", 2 * k, pads);
		attr_ints(b, n, "output_padding", k, op);
		mb_attr_int(b, n, "group", G);
		mb_output(b, "y", T_DOUBLE, ys);
		struct ir_graph *g = onnx_import(mb_write(b, "ct_values.onnx"), NULL, NULL);
		mb_free(b);
		struct ir_tensor in[2], out[1];
		bool ok = g != NULL;
		for (int i = 0; ok && i < 2; i++) {
			struct ir_value *v = ir_graph_input(g, i);
			ok = ir_tensor_alloc(&in[i], v->dtype, &v->shape) == 0;
			fill_values(in[i].data, ir_shape_numel(&v->shape), UNI(-1, 1));
		}
		ok = ok && interp_run(g, in, out) == 0;
		double worst = ok ? 0 : INFINITY;
		if (ok) {
			int64_t cnt = ir_shape_numel(&out[0].shape);
			double *want = malloc((size_t)cnt * sizeof *want);
			ct_naive(k, xd, wd, G, s, d, lo, yd, in[0].data, in[1].data, want);
			for (int64_t i = 0; i < cnt; i++)
				worst = fmax(worst, fabs(((double *)out[0].data)[i] - want[i]));
			free(want);
			ir_tensor_free(&out[0]);
		}
		if (g) {
			ir_tensor_free(&in[0]);
			ir_tensor_free(&in[1]);
			ir_graph_free(g);
		}
		if (!(worst <= 1e-12) && !bad++)
			snprintf(first, sizeof first, "x [%s] W [%s] -> [%s]: max err %.3g%s%s", xs, ws, ys, worst,
				 g ? "" : ": ", g ? "" : ir_error());
	}
	TAP_OK(bad == 0,
	       "ConvTranspose forward, %d random cases (1-D to 3-D, strides 1-3 and one of 9, dilations, groups, "
	       "pads, output_padding) equal the definition (a scatter) within 1e-12%s%s",
	       cases, bad ? "; first: " : "", first);
}

static void test_conv_transpose(void)
{
	/* 2-D, two groups, strides [2,1], dilations [1,2], asymmetric pads,
	 * output_padding, bias: x [1,4,3,3], W [4,3,3,2] -> y [1,6,5,4] */
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, "1,4,3,3");
	mb_input(b, "W", T_DOUBLE, "4,3,3,2");
	mb_input(b, "B", T_DOUBLE, "6");
	Onnx__NodeProto *n = mb_node(b, "ConvTranspose", "up", "x,W,B", "y");
	attr_ints(b, n, "strides", 2, (int64_t[]){ 2, 1 });
	attr_ints(b, n, "dilations", 2, (int64_t[]){ 1, 2 });
	attr_ints(b, n, "pads", 4, (int64_t[]){ 1, 0, 0, 1 });
	attr_ints(b, n, "output_padding", 2, (int64_t[]){ 1, 0 });
	mb_attr_int(b, n, "group", 2);
	mb_output(b, "y", T_DOUBLE, "1,6,7,4");
	check_model("ConvTranspose 2-D groups 2, strides [2,1], dilations [1,2], pads, output_padding, bias", b,
		    "ct2d.onnx");

	/* 1-D, stride 3, pads larger than the kernel's reach (a slice) */
	b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, "2,3,4");
	mb_input(b, "W", T_DOUBLE, "3,2,2");
	n = mb_node(b, "ConvTranspose", "up", "x,W", "y");
	attr_ints(b, n, "strides", 1, (int64_t[]){ 3 });
	attr_ints(b, n, "pads", 2, (int64_t[]){ 2, 1 });
	mb_output(b, "y", T_DOUBLE, "2,2,8");
	check_model("ConvTranspose 1-D stride 3, pads [2,1] beyond the kernel", b, "ct1d.onnx");

	/* 2-D output_shape with SAME_LOWER */
	b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, "1,2,3,2");
	mb_input(b, "W", T_DOUBLE, "2,2,3,3");
	n = mb_node(b, "ConvTranspose", "up", "x,W", "y");
	attr_ints(b, n, "strides", 2, (int64_t[]){ 2, 2 });
	attr_ints(b, n, "output_shape", 2, (int64_t[]){ 6, 5 });
	attr_str(b, n, "auto_pad", "SAME_LOWER");
	mb_output(b, "y", T_DOUBLE, "1,2,6,5");
	check_model("ConvTranspose 2-D output_shape [6,5], SAME_LOWER", b, "ct_same.onnx");

	/* kernel = stride (a dot and a pixel shuffle), output_shape one
	 * longer than the full result and pads cutting the other dim */
	b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, "2,3,3,2");
	mb_input(b, "W", T_DOUBLE, "3,2,2,3");
	mb_input(b, "B", T_DOUBLE, "2");
	n = mb_node(b, "ConvTranspose", "up", "x,W,B", "y");
	attr_ints(b, n, "strides", 2, (int64_t[]){ 2, 3 });
	attr_ints(b, n, "output_shape", 2, (int64_t[]){ 7, 5 });
	mb_output(b, "y", T_DOUBLE, "2,2,7,5");
	check_model("ConvTranspose 2-D kernel = stride [2,3] (a dot), output_shape [7,5]", b, "ct_dot.onnx");
}

/* ---- Resize ------------------------------------------------------------------------ */

static struct mb *resize_model(const char *x_dims, const int64_t *sizes, const char *y_dims, const char *mode,
			       const char *coord)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, x_dims);
	mb_init_i64(b, "sizes", 4, sizes);
	Onnx__NodeProto *n = mb_node(b, "Resize", "resize", "x,,,sizes", "y");
	attr_str(b, n, "mode", mode);
	attr_str(b, n, "coordinate_transformation_mode", coord);
	mb_output(b, "y", T_DOUBLE, y_dims);
	return b;
}

static void test_resize(void)
{
	struct mb *b = resize_model("1,2,3,4", (int64_t[]){ 1, 2, 5, 7 }, "1,2,5,7", "linear", "half_pixel");
	check_model("Resize linear half_pixel [1,2,3,4] -> [1,2,5,7]", b, "resize_up.onnx");

	b = resize_model("2,2,5,6", (int64_t[]){ 2, 2, 3, 4 }, "2,2,3,4", "linear", "align_corners");
	check_model("Resize linear align_corners [2,2,5,6] -> [2,2,3,4]", b, "resize_down.onnx");

	b = resize_model("1,1,4,5", (int64_t[]){ 1, 1, 6, 7 }, "1,1,6,7", "cubic", "pytorch_half_pixel");
	check_model("Resize cubic pytorch_half_pixel [1,1,4,5] -> [1,1,6,7]", b, "resize_cubic.onnx");

	b = resize_model("1,2,3,4", (int64_t[]){ 1, 2, 6, 8 }, "1,2,6,8", "nearest", "asymmetric");
	check_model("Resize nearest asymmetric [1,2,3,4] -> [1,2,6,8]", b, "resize_nearest.onnx");

	/* scales from an initializer; tf_crop_and_resize with points outside
	 * the crop (their gradient is zero: the extrapolation value) */
	b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, "1,1,4,4");
	init_floats(b, "roi", 8, (float[]){ 0, 0, -0.25f, 0.4f, 1, 1, 0.75f, 1.3f });
	init_floats(b, "scales", 4, (float[]){ 1, 1, 1.5f, 1.25f });
	Onnx__NodeProto *n = mb_node(b, "Resize", "resize", "x,roi,scales", "y");
	attr_str(b, n, "mode", "linear");
	attr_str(b, n, "coordinate_transformation_mode", "tf_crop_and_resize");
	attr_float(b, n, "extrapolation_value", 3.5f);
	mb_output(b, "y", T_DOUBLE, "1,1,6,5");
	check_model("Resize linear tf_crop_and_resize, scales, extrapolation", b, "resize_crop.onnx");
}

/* ---- DepthToSpace, SpaceToDepth --------------------------------------------------- */

static void test_depth_space(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, "1,8,2,3");
	Onnx__NodeProto *n = mb_node(b, "DepthToSpace", "d2s", "x", "y");
	mb_attr_int(b, n, "blocksize", 2);
	attr_str(b, n, "mode", "CRD");
	mb_output(b, "y", T_DOUBLE, "1,2,4,6");
	check_model("DepthToSpace CRD blocksize 2", b, "d2s.onnx");

	b = mb_new(13);
	mb_input(b, "x", T_DOUBLE, "1,2,4,6");
	n = mb_node(b, "SpaceToDepth", "s2d", "x", "y");
	mb_attr_int(b, n, "blocksize", 2);
	mb_output(b, "y", T_DOUBLE, "1,8,2,3");
	check_model("SpaceToDepth blocksize 2", b, "s2d.onnx");
}

/* ---- Pow by a constant -------------------------------------------------------------- */

/* Pow by a constant 2, 3, 4, -1 or 0.5 imports as multiplies, a
 * reciprocal or a square root (test_onnx_pow): their gradients, on
 * exp(x) > 0 where the exponent needs a positive base, on x itself for
 * the integers. */
static void test_pow(void)
{
	static const int64_t ints[] = { 2, 3, 4 };
	for (int i = 0; i < 3; i++) {
		struct mb *b = mb_new(13);
		mb_input(b, "x", T_DOUBLE, "2,5");
		mb_init_i64(b, "e", 1, &ints[i]);
		mb_node(b, "Pow", "pow", "x,e", "y");
		mb_output(b, "y", T_DOUBLE, "2,5");
		char what[64];
		snprintf(what, sizeof what, "Pow(x, %lld), as multiplies", (long long)ints[i]);
		check_model(what, b, "pow_int.onnx");
	}
	static const struct {
		double e;
		const char *what;
	} pos[] = { { -1, "Pow(exp(x), -1), as a reciprocal" }, { 0.5, "Pow(exp(x), 0.5), as a square root" } };
	for (int i = 0; i < 2; i++) {
		struct mb *b = mb_new(13);
		mb_input(b, "x", T_DOUBLE, "2,5");
		/* the exponent a Constant node, as exporters write it */
		Onnx__NodeProto *k = mb_node(b, "Constant", "e", "", "e");
		Onnx__TensorProto *t = mb_alloc(b, sizeof *t);
		*t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
		t->has_data_type = 1;
		t->data_type = T_DOUBLE;
		mb_raw(b, t, sizeof pos[i].e);
		memcpy(t->raw_data.data, &pos[i].e, sizeof pos[i].e);
		attr_new(b, k, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
		mb_node(b, "Exp", "exp", "x", "ex");
		mb_node(b, "Pow", "pow", "ex,e", "y");
		mb_output(b, "y", T_DOUBLE, "2,5");
		check_model(pos[i].what, b, "pow_pos.onnx");
	}
}

int main(void)
{
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	test_conv_transpose_values();
	test_conv_transpose();
	test_resize();
	test_depth_space();
	test_pow();
	tmpdir_remove(tmpdir);
	return tap_done();
}
