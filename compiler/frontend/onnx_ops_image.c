/*
 * onnx_ops_image.c: ONNX image ops -> core ops: Resize (and its
 * predecessor Upsample), DepthToSpace, SpaceToDepth (ConvTranspose is
 * onnx_ops_convt.c's). None is a core op: each decomposes into ops every
 * later stage (interpreter, autodiff, sharding, fusion, code generation,
 * runtime) already handles.
 *
 * Resize is separable: along each resized axis every output element is a
 * weighted sum of at most 4 input elements whose indices and weights
 * depend only on the output position. They are computed here, in double
 * precision, from constant scales or sizes; the axis then becomes one
 * gather with constant indices per tap and multiply-adds with constant
 * weights (nearest: one gather; linear: two; cubic: four). Axes that map
 * every element to itself are skipped, and axes that shrink go first.
 * The coordinates follow the spec, onnxruntime and PyTorch: the resized
 * length in align_corners' ratio is the output size (ONNX's reference,
 * which made the backend tests' data, takes scale * input length
 * unrounded, and disagrees where that is not a whole number).
 *
 * DepthToSpace and SpaceToDepth are a reshape, a transpose and a reshape.
 *
 * Example: Resize of x[1,3,4,4] by scales [1,1,2,2] in linear mode is
 * gather(x, i0, axis 2) * w0 + gather(x, i1, axis 2) * w1 = t[1,3,8,4],
 * then the same along axis 3 of t: eight ops, no new kernel.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/onnx_internal.h"

/* ---- DepthToSpace, SpaceToDepth --------------------------------------------------- */

static int h_depth_to_space(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	char buf[8];
	int64_t b = attr_int(c, "blocksize", 0);
	bool d2s = strcmp(c->node->op_type, "DepthToSpace") == 0;
	if (x->shape.rank != 4)
		return onnx_fail(c, "input must be [N, C, H, W]");
	int64_t N = x->shape.dims[0], C = x->shape.dims[1], H = x->shape.dims[2], W = x->shape.dims[3];
	if (b < 1 || (d2s ? b > C / b : b > H || b > W))
		return onnx_fail(c, "attribute 'blocksize' %lld must be given, positive and at most %s", (long long)b,
				 d2s ? "the square root of the channels" : "the height and the width");
	if (!d2s) {
		if (H % b || W % b)
			return onnx_fail(c, "H %lld and W %lld must be multiples of blocksize %lld", (long long)H,
					 (long long)W, (long long)b);
		/* [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b] */
		struct ir_shape s6 = { 6, { N, C, H / b, b, W / b, b } }, s4 = { 4, { N, C * b * b, H / b, W / b } };
		int64_t perm[6] = { 0, 3, 5, 1, 2, 4 };
		return OUT1(b_reshape(c, b_transpose(c, b_reshape(c, x, &s6), perm), &s4));
	}
	if (C % (b * b))
		return onnx_fail(c, "C %lld must be a multiple of blocksize^2 = %lld", (long long)C,
				 (long long)(b * b));
	const char *mode = attr_string(c, "mode", "DCR", buf, sizeof buf);
	struct ir_shape s4 = { 4, { N, C / (b * b), H * b, W * b } }, s6;
	int64_t perm[6];
	if (!strcmp(mode, "DCR")) {
		/* [N, b, b, C/b^2, H, W] -> [N, C/b^2, H, b, W, b] */
		s6 = (struct ir_shape){ 6, { N, b, b, C / (b * b), H, W } };
		memcpy(perm, (int64_t[6]){ 0, 3, 4, 1, 5, 2 }, sizeof perm);
	} else if (!strcmp(mode, "CRD")) {
		/* [N, C/b^2, b, b, H, W] -> [N, C/b^2, H, b, W, b] */
		s6 = (struct ir_shape){ 6, { N, C / (b * b), b, b, H, W } };
		memcpy(perm, (int64_t[6]){ 0, 1, 4, 2, 5, 3 }, sizeof perm);
	} else {
		return onnx_fail(c, "unknown mode '%s' (DCR or CRD)", mode);
	}
	return OUT1(b_reshape(c, b_transpose(c, b_reshape(c, x, &s6), perm), &s4));
}

/* ---- Resize ------------------------------------------------------------------------ */

enum coord_mode {
	CM_HALF_PIXEL,
	CM_PYTORCH_HALF_PIXEL,
	CM_ALIGN_CORNERS,
	CM_ASYMMETRIC,
	CM_TF_HALF_PIXEL_FOR_NN,
	CM_TF_CROP_AND_RESIZE,
	CM_HALF_PIXEL_SYMMETRIC, /* opset 19 */
	CM_COUNT
};
enum nearest_mode { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_LEGACY, NM_COUNT };
enum interp_mode { IM_NEAREST, IM_LINEAR, IM_CUBIC, IM_COUNT };

/* The longest resized dim (elements): its indices and weights are built
 * at import and kept in the graph as constants. */
#define RESIZE_MAX (1 << 20)
/* Antialiased shrinking reads 2 + 2 floor(1 / scale) taps (linear), twice
 * that (cubic): this bounds 1 / scale to about 15 */
#define TAPS_MAX 64

struct resize {
	enum interp_mode mode;
	enum coord_mode cm;
	enum nearest_mode nm;
	double cubic_a, extrapolation;
	bool exclude_outside;
	bool antialias; /* Resize-18: linear and cubic widen their kernel by 1 / scale when shrinking */
};

/* One axis: output element o reads input elements idx[t * out + o] with
 * weights w[t * out + o] for t < ntaps (nearest: one tap, weight 1);
 * outside[o]: tf_crop_and_resize puts the extrapolation value there. */
struct taps {
	int ntaps;
	int64_t *idx;
	double *w;
	bool *outside;
	bool any_outside;
};

static int parse_name(struct onnx_ctx *c, const char *attr, const char *dflt, const char *const *names, int count,
		      int *out)
{
	char buf[32];
	const char *v = attr_string(c, attr, dflt, buf, sizeof buf);
	for (int i = 0; i < count; i++) {
		if (names[i] && !strcmp(v, names[i])) {
			*out = i;
			return 0;
		}
	}
	return onnx_unsupported(c, "%s '%s' is not supported", attr, v);
}

static double cubic_weight(double a, double t)
{
	/* Keys' cubic convolution kernel at distance t >= 0 */
	if (t <= 1)
		return ((a + 2) * t - (a + 3)) * t * t + 1;
	if (t < 2)
		return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
	return 0;
}

/* Where output element o of n_out falls in an input of length n_in,
 * scale being the axis's scale (n_out / n_in when sizes were given).
 * The resized length in align_corners' and tf_crop_and_resize's ratios
 * is n_out, as the spec says and onnxruntime and PyTorch compute; ONNX's
 * reference takes scale * n_in, unrounded (see test_conformance.c). */
static double source_coord(const struct resize *z, int64_t o, int64_t n_in, int64_t n_out, double scale, double roi_lo,
			   double roi_hi)
{
	double x = (double)o, len = (double)n_out;
	switch (z->cm) {
	case CM_HALF_PIXEL:
		return (x + 0.5) / scale - 0.5;
	case CM_PYTORCH_HALF_PIXEL:
		return len > 1 ? (x + 0.5) / scale - 0.5 : 0;
	case CM_ALIGN_CORNERS:
		return len == 1 ? 0 : x * (double)(n_in - 1) / (len - 1);
	case CM_ASYMMETRIC:
		return x / scale;
	case CM_TF_HALF_PIXEL_FOR_NN:
		return (x + 0.5) / scale;
	case CM_TF_CROP_AND_RESIZE:
		if (len == 1)
			return (roi_hi - roi_lo) * (double)(n_in - 1) / 2 + roi_lo * (double)(n_in - 1);
		return x * (roi_hi - roi_lo) * (double)(n_in - 1) / (len - 1) + roi_lo * (double)(n_in - 1);
	case CM_HALF_PIXEL_SYMMETRIC: {
		/* half_pixel about the centre: the whole output length n_out
		 * against the unrounded scale * n_in */
		double adjust = len / (scale * (double)n_in);
		return (double)n_in / 2 * (1 - adjust) + (x + 0.5) / scale - 0.5;
	}
	case CM_COUNT:
		break;
	}
	IR_ASSERT(0);
	return 0;
}

static int64_t clamp_index(int64_t i, int64_t n)
{
	return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* Nearest index to coordinate x (x - floor(x) = f). */
static int64_t nearest_index(enum nearest_mode m, double x, double scale)
{
	double fl = floor(x), f = x - fl;
	if (f == 0)
		return (int64_t)fl;
	switch (m) {
	case NM_ROUND_PREFER_FLOOR:
		return (int64_t)fl + (f > 0.5);
	case NM_ROUND_PREFER_CEIL:
		return (int64_t)fl + (f >= 0.5);
	case NM_FLOOR:
		return (int64_t)fl;
	case NM_CEIL:
		return (int64_t)fl + 1;
	case NM_LEGACY: /* Resize-10 and Upsample, as onnxruntime reads them */
		return (int64_t)fl + (scale < 1);
	case NM_COUNT:
		break;
	}
	IR_ASSERT(0);
	return 0;
}

static void taps_free(struct taps *t)
{
	ir_free(t->idx);
	ir_free(t->w);
	ir_free(t->outside);
	memset(t, 0, sizeof *t);
}

/* How many taps an axis reads: 1, 2 or 4, or with antialias when
 * shrinking by scale < 1, 2 - 2 start, start = floor(-support / scale) + 1
 * (support 1 linear, 2 cubic), as ONNX's reference computes it. */
static int taps_count(const struct resize *z, double scale)
{
	if (z->mode == IM_NEAREST)
		return 1;
	double support = z->mode == IM_LINEAR ? 1 : 2;
	if (!z->antialias || scale >= 1)
		return 2 * (int)support;
	double start = floor(-support / scale) + 1;
	return 2 - 2 * start > TAPS_MAX ? TAPS_MAX + 1 : (int)(2 - 2 * start);
}

/* The weight of a tap at distance dist (in input elements) from the
 * coordinate; antialias stretches the kernel by 1 / scale when shrinking. */
static double tap_weight(const struct resize *z, double dist, double scale)
{
	if (z->antialias && scale < 1)
		dist *= scale;
	dist = fabs(dist);
	if (z->mode == IM_LINEAR)
		return dist < 1 ? 1 - dist : 0;
	return cubic_weight(z->cubic_a, dist);
}

/* Fills t for one axis of n_in -> n_out elements. -ENOMEM. */
static int axis_taps(const struct resize *z, int64_t n_in, int64_t n_out, double scale, double roi_lo, double roi_hi,
		     struct taps *t)
{
	int nt = taps_count(z, scale);
	memset(t, 0, sizeof *t);
	t->ntaps = nt;
	t->idx = ir_malloc((size_t)(nt * n_out) * sizeof *t->idx);
	t->w = ir_malloc((size_t)(nt * n_out) * sizeof *t->w);
	t->outside = ir_calloc((size_t)n_out, sizeof *t->outside);
	if (!t->idx || !t->w || !t->outside) {
		taps_free(t);
		return ir_errorf(-ENOMEM, "out of memory for Resize's indices");
	}
	for (int64_t o = 0; o < n_out; o++) {
		double x = source_coord(z, o, n_in, n_out, scale, roi_lo, roi_hi);
		if (z->cm == CM_TF_CROP_AND_RESIZE && !(x >= 0 && x <= (double)(n_in - 1))) {
			t->outside[o] = t->any_outside = true; /* NaN too (a NaN roi) */
			x = x > 0 ? (double)(n_in - 1) : 0;
		}
		if (nt == 1) {
			t->idx[o] = clamp_index(nearest_index(z->nm, x, scale), n_in);
			t->w[o] = 1;
			continue;
		}
		/* the taps straddle x, the one at or left of it at nt/2 - 1 (an
		 * integer x sits on the right-hand tap of the middle pair, as in
		 * ONNX's reference); they stay within nt/2 of the ends, where
		 * ONNX's reference pads by repeating the edge */
		double fl = floor(x), ratio = x - fl;
		int64_t base = (int64_t)fl;
		if (ratio == 0) {
			ratio = 1;
			base--;
		}
		int64_t first = base - (nt / 2 - 1), pad = nt / 2;
		if (first + nt - 1 > n_in - 1 + pad)
			first = n_in - 1 + pad - (nt - 1);
		if (first < -pad)
			first = -pad;
		double sum = 0, kept = 0;
		for (int j = 0; j < nt; j++) {
			int64_t i = first + j;
			/* distance from x of tap j as the reference's coefficient list sees it */
			double wj = tap_weight(z, (double)(j - (nt / 2 - 1)) - ratio, scale);
			sum += wj;
			if (z->exclude_outside && (i < 0 || i >= n_in))
				wj = 0;
			t->idx[j * n_out + o] = clamp_index(i, n_in);
			t->w[j * n_out + o] = wj;
			kept += wj;
		}
		/* antialias normalizes the stretched kernel to sum 1, then
		 * exclude_outside renormalizes what is left */
		double norm = z->exclude_outside ? kept : z->antialias ? sum : 1;
		if (norm != 0 && norm != 1)
			for (int j = 0; j < nt; j++)
				t->w[j * n_out + o] /= norm;
	}
	return 0;
}

/* Whether the axis maps every element to itself. */
static bool taps_identity(const struct taps *t, int64_t n_in, int64_t n_out)
{
	if (n_in != n_out || t->any_outside)
		return false;
	for (int64_t o = 0; o < n_out; o++) {
		double self = 0;
		for (int j = 0; j < t->ntaps; j++) {
			double w = t->w[j * n_out + o];
			if (t->idx[j * n_out + o] == o)
				self += w;
			else if (fabs(w) > 1e-12)
				return false;
		}
		if (fabs(self - 1) > 1e-12)
			return false;
	}
	return true;
}

/* A constant [n, 1, ..] of rank `rank` (n along its first dim) holding v
 * converted to t. */
static struct ir_value *axis_const(struct onnx_ctx *c, enum ir_dtype t, int rank, int64_t n, const double *v)
{
	struct ir_shape s = { rank, { n } };
	for (int i = 1; i < rank; i++)
		s.dims[i] = 1;
	struct ir_tensor k = { 0 };
	if (ir_tensor_alloc(&k, t, &s) < 0)
		return NULL;
	for (int64_t i = 0; i < n; i++)
		ir_tensor_set_f64(&k, i, v[i]);
	struct ir_value *r = b_const(c, t, &s, k.data);
	ir_tensor_free(&k);
	return r;
}

/* x resized along axis by t. */
static struct ir_value *resize_axis(struct onnx_ctx *c, const struct resize *z, struct ir_value *x, int axis,
				    const struct taps *t, int64_t n_out)
{
	int wr = x->shape.rank - axis; /* weights [n_out, 1..] broadcast from axis on */
	struct ir_value *acc = NULL;
	for (int j = 0; j < t->ntaps && x; j++) {
		const double *w = t->w + j * n_out;
		bool zero = true, one = true;
		for (int64_t o = 0; o < n_out; o++) {
			zero = zero && w[o] == 0;
			one = one && w[o] == 1;
		}
		if (zero)
			continue;
		struct ir_shape is = { 1, { n_out } };
		struct ir_value *ops[2] = { x, b_const(c, IR_I64, &is, t->idx + j * n_out) };
		struct ir_attrs ga = { .axis = axis };
		struct ir_value *g = ops[1] ? b_op(c, IR_OP_GATHER, 2, ops, &ga) : NULL;
		if (!one)
			g = b_binary(c, IR_OP_MUL, g, axis_const(c, x->dtype, wr, n_out, w));
		acc = acc ? b_binary(c, IR_OP_ADD, acc, g) : g;
		if (!acc)
			return NULL;
	}
	if (!acc && x) { /* every weight zero */
		struct ir_shape s = x->shape;
		s.dims[axis] = n_out;
		acc = b_broadcast_to(c, b_scalar(c, x->dtype, 0), &s);
	}
	if (acc && t->any_outside) {
		double *m = ir_malloc((size_t)n_out * sizeof *m);
		if (!m) {
			ir_errorf(-ENOMEM, "out of memory for Resize's mask");
			return NULL;
		}
		for (int64_t o = 0; o < n_out; o++)
			m[o] = t->outside[o];
		struct ir_value *mask = axis_const(c, IR_BOOL, wr, n_out, m);
		ir_free(m);
		acc = b_select(c, mask, b_scalar(c, x->dtype, z->extrapolation), acc);
	}
	return acc;
}

/* The elements of a constant input as doubles (up to max); -ENOTSUP
 * when it is computed at run time. */
static int const_doubles(struct onnx_ctx *c, struct ir_value *v, double *out, int max, const char *what)
{
	struct ir_tensor t;
	if (!onnx_is_const(v) && !(v->kind == IR_VAL_PARAM && (v->data.bytes || onnx_is_external(v))))
		return onnx_unsupported(c, "%s must be a constant known at compile time (it is computed at run time)",
					what);
	if (onnx_const_view(c, v, &t, what) < 0)
		return -EINVAL;
	int64_t n = ir_shape_numel(&t.shape);
	if (n > max)
		return onnx_fail(c, "%s has %lld entries, not %d", what, (long long)n, max);
	for (int64_t i = 0; i < n; i++)
		out[i] = ir_tensor_get_f64(&t, i);
	return (int)n;
}

static int resize_attrs(struct onnx_ctx *c, bool legacy, struct resize *z)
{
	static const char *const modes[IM_COUNT] = { "nearest", "linear", "cubic" };
	static const char *const cms[CM_COUNT] = { "half_pixel",          "pytorch_half_pixel",   "align_corners",
						   "asymmetric",          "tf_half_pixel_for_nn", "tf_crop_and_resize",
						   "half_pixel_symmetric" };
	static const char *const nms[NM_COUNT] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
	int m = 0, cm = CM_ASYMMETRIC, nm = NM_LEGACY;
	char buf[32];
	/* Upsample-7 spells linear "bilinear" in some exporters */
	if (legacy && !strcmp(attr_string(c, "mode", "nearest", buf, sizeof buf), "bilinear"))
		m = IM_LINEAR;
	else if (parse_name(c, "mode", "nearest", modes, legacy ? IM_CUBIC : IM_COUNT, &m) < 0)
		return -ENOTSUP;
	if (!legacy && (parse_name(c, "coordinate_transformation_mode", "half_pixel", cms, CM_COUNT, &cm) < 0 ||
			parse_name(c, "nearest_mode", "round_prefer_floor", nms, NM_LEGACY, &nm) < 0))
		return -ENOTSUP;
	if (cm == CM_TF_HALF_PIXEL_FOR_NN && c->opset >= 13)
		return onnx_unsupported(
			c, "coordinate_transformation_mode 'tf_half_pixel_for_nn' was removed in opset 13");
	if (cm == CM_HALF_PIXEL_SYMMETRIC && c->opset < 19)
		return onnx_fail(c, "coordinate_transformation_mode 'half_pixel_symmetric' needs opset 19");
	if (attr_since(c, "antialias", 18) < 0 || attr_since(c, "axes", 18) < 0 ||
	    attr_since(c, "keep_aspect_ratio_policy", 18) < 0)
		return -ENOTSUP;
	bool antialias = attr_int(c, "antialias", 0) != 0;
	if (antialias && m == IM_NEAREST)
		return onnx_fail(c, "antialias applies to linear and cubic modes, not nearest");
	*z = (struct resize){ .mode = (enum interp_mode)m,
			      .cm = (enum coord_mode)cm,
			      .nm = (enum nearest_mode)nm,
			      .cubic_a = attr_float(c, "cubic_coeff_a", -0.75),
			      .extrapolation = attr_float(c, "extrapolation_value", 0),
			      .exclude_outside = attr_int(c, "exclude_outside", 0) != 0,
			      .antialias = antialias };
	return 0;
}

/* Resize-18's axes: which dims scales, sizes and roi list (all when
 * absent); the count, or -EINVAL. */
static int resize_axes(struct onnx_ctx *c, int rank, int64_t *axes)
{
	int n = attr_ints(c, "axes", axes, IR_MAX_RANK);
	if (n < 0)
		return -EINVAL;
	if (!attr_find(c, "axes")) {
		for (n = 0; n < rank; n++)
			axes[n] = n;
		return n;
	}
	bool seen[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < n; i++) {
		if (onnx_axis(c, axes[i], rank, &axes[i]) < 0)
			return -EINVAL;
		if (seen[axes[i]])
			return onnx_fail(c, "axis %lld is repeated in axes", (long long)axes[i]);
		seen[axes[i]] = true;
	}
	return n;
}

/* keep_aspect_ratio_policy with sizes: "stretch" takes each size; the
 * others one scale for every listed axis, the smallest ("not_larger") or
 * the largest ("not_smaller") of size / input, and sizes of that scale
 * times the input rounded half up. */
static int keep_aspect(struct onnx_ctx *c, const struct ir_shape *x, const int64_t *axes, int naxes, double *sz,
		       double *scale)
{
	char buf[32];
	const char *p = attr_string(c, "keep_aspect_ratio_policy", "stretch", buf, sizeof buf);
	bool larger = !strcmp(p, "not_smaller");
	if (!strcmp(p, "stretch"))
		return 0;
	if (!larger && strcmp(p, "not_larger"))
		return onnx_fail(c, "unknown keep_aspect_ratio_policy '%s'", p);
	double k = larger ? 0 : INFINITY;
	for (int i = 0; i < naxes; i++) {
		double r = sz[axes[i]] / (double)(x->dims[axes[i]] ? x->dims[axes[i]] : 1);
		k = larger ? fmax(k, r) : fmin(k, r);
	}
	for (int i = 0; i < naxes; i++) {
		sz[axes[i]] = floor(k * (double)x->dims[axes[i]] + 0.5);
		scale[axes[i]] = k;
	}
	return 1;
}

/* Resize-10/11/13/18/19 (X, roi, scales, sizes; from 18 the axes they
 * list, antialias and keep_aspect_ratio_policy; from 19
 * half_pixel_symmetric) and Upsample-7/9 (X, scales; Upsample-7 has
 * scales as an attribute). Before opset 11 the coordinate
 * is asymmetric (x / scale) and nearest rounds down, up when shrinking,
 * which is what onnxruntime does with those forms. */
static int h_resize(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	int r = x->shape.rank, rc;
	bool upsample = strcmp(c->node->op_type, "Upsample") == 0, legacy = upsample || c->opset < 11;
	struct resize z = { 0 };
	double scale[IR_MAX_RANK], roi[2 * IR_MAX_RANK], sz[IR_MAX_RANK];
	double given[2 * IR_MAX_RANK]; /* one per listed axis (roi: two) */
	int64_t n_out[IR_MAX_RANK], axes[IR_MAX_RANK];
	int nscale = 0, nsize = 0, naxes;
	if (r < 1)
		return onnx_fail(c, "input must have rank >= 1");
	if ((rc = resize_attrs(c, legacy, &z)) < 0)
		return rc;
	if ((naxes = resize_axes(c, r, axes)) < 0)
		return naxes;
	if (z.mode != IM_NEAREST && !ir_dtype_is_float(x->dtype))
		return onnx_unsupported(c, "%s resize of %s data is not supported (nearest only)",
					z.mode == IM_LINEAR ? "linear" : "cubic", ir_dtype_name(x->dtype));
	if (upsample && c->opset < 9) {
		const Onnx__AttributeProto *a = attr_find(c, "scales");
		if (!a || a->n_floats != (size_t)r)
			return onnx_fail(c, "attribute 'scales' must have %d entries", r);
		for (int i = 0; i < r; i++)
			scale[i] = a->floats[i];
		nscale = r;
	} else {
		int si = legacy ? 1 : 2; /* scales' input */
		if (nin > si && in[si] && (nscale = const_doubles(c, in[si], given, naxes, "scales")) < 0)
			return nscale;
		if (!legacy && nin > 3 && in[3] && (nsize = const_doubles(c, in[3], given, naxes, "sizes")) < 0)
			return nsize;
		for (int i = 0; i < r; i++) {
			scale[i] = 1;
			sz[i] = (double)x->shape.dims[i];
		}
		for (int i = 0; i < naxes && i < (nscale ? nscale : nsize); i++)
			*(nscale ? &scale[axes[i]] : &sz[axes[i]]) = given[i];
	}
	if (nscale && nsize)
		return onnx_fail(c, "only one of scales and sizes may be given");
	if ((!nscale && !nsize) || (nscale && nscale != naxes) || (nsize && nsize != naxes))
		return onnx_fail(c, "scales or sizes must be given with %d entries (one per %s)", naxes,
				 naxes == r ? "dim" : "axis listed");
	for (int i = 0; i < 2 * r; i++)
		roi[i] = i < r ? 0 : 1;
	if (z.cm == CM_TF_CROP_AND_RESIZE) {
		if (nin < 2 || !in[1])
			return onnx_fail(c, "tf_crop_and_resize needs roi");
		if ((rc = const_doubles(c, in[1], given, 2 * naxes, "roi")) < 0)
			return rc;
		if (rc != 2 * naxes)
			return onnx_fail(c, "roi must have %d entries (starts, then ends)", 2 * naxes);
		for (int i = 0; i < naxes; i++) {
			roi[axes[i]] = given[i];
			roi[r + axes[i]] = given[naxes + i];
		}
	}
	int kept = nsize ? keep_aspect(c, &x->shape, axes, naxes, sz, scale) : 0;
	if (kept < 0)
		return kept;
	for (int i = 0; i < r; i++) {
		int64_t n_in = x->shape.dims[i];
		double v = nsize ? sz[i] : floor(scale[i] * (double)n_in);
		if (!nsize && !(scale[i] > 0))
			return onnx_fail(c, "scale %g for dim %d must be positive", scale[i], i);
		if (!(v >= (n_in > 0) && v <= (double)RESIZE_MAX))
			return onnx_fail(c, "dim %d of %lld elements would have %g (at most 2^20 supported)", i,
					 (long long)n_in, v);
		n_out[i] = (int64_t)v;
		if (nsize && !kept)
			scale[i] = n_in ? (double)n_out[i] / (double)n_in : 1;
		if (taps_count(&z, scale[i]) > TAPS_MAX)
			return onnx_unsupported(c, "antialiased resize of dim %d by %g (down to about 1/15 supported)",
						i, scale[i]);
		if (n_in == 0 && n_out[i] != 0)
			return onnx_fail(c, "dim %d is empty and cannot be resized to %lld", i, (long long)n_out[i]);
	}
	/* shrinking axes first, so the later ones work on less */
	int order[IR_MAX_RANK];
	for (int i = 0; i < r; i++) {
		int j = i;
		for (; j > 0; j--) {
			int p = order[j - 1];
			double rp = (double)n_out[p] / (double)(x->shape.dims[p] ? x->shape.dims[p] : 1);
			double ri = (double)n_out[i] / (double)(x->shape.dims[i] ? x->shape.dims[i] : 1);
			if (rp <= ri)
				break;
			order[j] = p;
		}
		order[j] = i;
	}
	struct ir_value *y = x;
	for (int k = 0; k < r && y; k++) {
		int i = order[k];
		int64_t n_in = x->shape.dims[i];
		if (n_in == 0)
			continue;
		struct taps t;
		if (axis_taps(&z, n_in, n_out[i], scale[i], roi[i], roi[r + i], &t) < 0)
			return -ENOMEM;
		if (!taps_identity(&t, n_in, n_out[i]))
			y = resize_axis(c, &z, y, i, &t, n_out[i]);
		taps_free(&t);
	}
	return OUT1(y);
}

const struct onnx_op_def onnx_ops_image[] = {
	{ "Resize", h_resize,
	  "antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value "
	  "keep_aspect_ratio_policy mode nearest_mode" },
	{ "Upsample", h_resize, "mode scales" },
	{ "DepthToSpace", h_depth_to_space, "blocksize mode" },
	{ "SpaceToDepth", h_depth_to_space, "blocksize" },
};
const int onnx_ops_image_count = sizeof onnx_ops_image / sizeof onnx_ops_image[0];
