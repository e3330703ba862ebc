/*
 * onnx_ops_convt.c: ONNX ConvTranspose (and Col2Im, which is one) -> core
 * ops. Not a core op: it decomposes into ops every later stage
 * (interpreter, autodiff, sharding, fusion, code generation, runtime)
 * already handles.
 *
 * ConvTranspose is the gradient of a convolution with respect to its
 * input (compiler/train/grad_rules_nn.c, conv_input_grad): zeros inserted
 * between the input's elements (stride - 1 of them), the kernel reversed
 * spatially with in and out channels swapped per group, then a stride-1
 * convolution padded by d(K-1) - pad (plus output_padding at the end); a
 * pad that would be negative becomes a slice of the result. With a
 * stride above 1 all but one in s^k of that convolution's products are
 * with inserted zeros, so it runs as its s^k output phases instead (the
 * outputs o with o mod s fixed per dim): each a stride-1 convolution of x
 * itself with the kernel taps that land on that phase, the phases then
 * interleaved (ct_phases; DCGAN's k4s2: four 2x2 convolutions for one
 * 4x4 over four times the positions). When the kernel equals the stride
 * (k2s2 upsampling) the contributions do not overlap and it is a dot
 * followed by a pixel shuffle instead.
 *
 * Example: ConvTranspose of x[1,8,16,16] by W[8,4,4,4], strides 2, pads
 * 1 (DCGAN's upsampling) is four convolutions of x, each with a 2x2 slice
 * of W reversed, [1,4,16,16], interleaved into y[1,4,32,32].
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/onnx_internal.h"

/* ---- ConvTranspose --------------------------------------------------------------- */

/* Strides, dilations, pads and output padding beyond this are refused. */
#define LIMIT (1 << 20)
/* Output phases (the product of the strides) ct_phases builds at most, a
 * convolution each; beyond, the convolution over zeros (one kernel). */
#define CT_MAX_PHASES 64

/* Python's floor division by 2 (pads may be negative). */
static int64_t half_floor(int64_t v)
{
	return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

/* x [N, C, D..] with (s - 1) zeros after each element of every spatial
 * dim i of stride s[i] > 1: [N, C, D s..] (the result keeps s - 1 zeros
 * after the last element too; the caller's padding accounts for them).
 * One pad between two reshapes: [.., D, 1, ..] padded to [.., D, s, ..]. */
static struct ir_value *insert_zeros(struct onnx_ctx *c, struct ir_value *x, const int64_t *s)
{
	struct ir_shape split = { 0 }, merged = x->shape;
	struct ir_attrs pa = { .mode = IR_PAD_CONSTANT, .value = 0 };
	bool any = false;
	for (int i = 0; i < x->shape.rank; i++) {
		int sp = i - 2;
		split.dims[split.rank++] = x->shape.dims[i];
		if (sp >= 0 && s[sp] > 1) {
			split.dims[split.rank++] = 1;
			pa.pad_hi.v[split.rank - 1] = s[sp] - 1;
			merged.dims[i] *= s[sp];
			any = true;
		}
	}
	if (!any)
		return x;
	pa.pad_lo.n = pa.pad_hi.n = split.rank;
	struct ir_value *t = b_reshape(c, x, &split);
	t = t ? b_op(c, IR_OP_PAD, 1, &t, &pa) : NULL;
	return b_reshape(c, t, &merged);
}

/* ConvTranspose's geometry per spatial dim: kernel, stride, dilation,
 * the pads at each end (hi less output_padding; negative pads add zero
 * rows) and the result's length. */
struct ct {
	int k;
	int64_t G;
	int64_t K[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK], len[IR_MAX_RANK];
};

/* y [N, M, ..] cut to len[i] elements from start[i] along spatial dim i
 * (one slice, none when it would keep everything). */
static struct ir_value *cut_spatial(struct onnx_ctx *c, struct ir_value *y, int k, const int64_t *start,
				    const int64_t *len)
{
	if (!y)
		return NULL;
	struct ir_attrs a = { .start.n = k + 2, .limit.n = k + 2, .stride.n = k + 2 };
	bool all = true;
	for (int i = 0; i < k + 2; i++) {
		bool sp = i >= 2;
		a.start.v[i] = sp ? start[i - 2] : 0;
		a.limit.v[i] = sp ? start[i - 2] + len[i - 2] : y->shape.dims[i];
		a.stride.v[i] = 1;
		all = all && a.start.v[i] == 0 && a.limit.v[i] == y->shape.dims[i];
	}
	return all ? y : b_op(c, IR_OP_SLICE, 1, &y, &a);
}

/* W [C, M/G, K..] reversed spatially, with in and out channels swapped
 * per group: [G, C/G, M/G, K..] -> [G, M/G, C/G, K..] = [M, C/G, K..],
 * the kernel of the convolution whose input gradient ConvTranspose is. */
static struct ir_value *flipped_kernel(struct onnx_ctx *c, struct ir_value *x, struct ir_value *w, const struct ct *t)
{
	int k = t->k, r = k + 2;
	int64_t G = t->G, C = x->shape.dims[1], Mg = w->shape.dims[1];
	struct ir_attrs rev = { .axes.n = k };
	struct ir_shape s5 = { r + 1, { G, C / G, Mg } }, sw = { r, { G * Mg, C / G } };
	int64_t perm[IR_MAX_RANK] = { 0, 2, 1 };
	for (int i = 0; i < k; i++) {
		rev.axes.v[i] = i + 2;
		s5.dims[i + 3] = sw.dims[i + 2] = t->K[i];
		perm[i + 3] = i + 3;
	}
	struct ir_value *wf = b_op(c, IR_OP_REVERSE, 1, &w, &rev);
	return b_reshape(c, b_transpose(c, b_reshape(c, wf, &s5), perm), &sw);
}

/* The general form: a stride-1 conv over x with zeros inserted, of the
 * kernel reversed with in and out channels swapped per group. */
static struct ir_value *ct_conv(struct onnx_ctx *c, struct ir_value *x, struct ir_value *w, const struct ct *t)
{
	int k = t->k;
	int64_t G = t->G;
	struct ir_value *wf = flipped_kernel(c, x, w, t);
	struct ir_value *xd = insert_zeros(c, x, t->s);
	struct ir_attrs a = { .groups = G, .stride.n = k, .dilation.n = k, .pad_lo.n = k, .pad_hi.n = k };
	int64_t cut[IR_MAX_RANK];
	for (int i = 0; i < k; i++) {
		int64_t span = t->d[i] * (t->K[i] - 1);
		/* the input ends in s - 1 inserted zeros already */
		int64_t plo = span - t->lo[i], phi = span - t->hi[i] - (t->s[i] - 1);
		a.stride.v[i] = 1;
		a.dilation.v[i] = t->d[i];
		a.pad_lo.v[i] = plo > 0 ? plo : 0;
		a.pad_hi.v[i] = phi > 0 ? phi : 0;
		cut[i] = plo < 0 ? -plo : 0; /* a negative pad drops rows */
	}
	struct ir_value *ops[2] = { xd, wf };
	struct ir_value *y = xd && wf ? b_op(c, IR_OP_CONV, 2, ops, &a) : NULL;
	return cut_spatial(c, y, k, cut, t->len);
}

/* One output phase of ConvTranspose along one spatial dim: the outputs o
 * = s m + rho (m < len), each sum_j wf[j] x[(o + j d - plo) / s] over the
 * taps j whose argument is a multiple of s: j0, j0 + s/g, .. (g =
 * gcd(d, s)), reading x at m + e0, m + e0 + d/g, .. */
struct phase {
	int64_t len;       /* outputs of the phase: ceil((out - rho) / s) */
	int64_t j0, jstep; /* its taps in wf */
	int64_t taps;      /* 0: the phase is zeros */
	int64_t e0, dil;   /* x's element for tap 0 at m = 0, and the step between taps */
};

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static struct phase phase_of(const struct ct *t, int i, int64_t rho, int64_t plo)
{
	int64_t s = t->s[i], d = t->d[i], g = gcd64(d, s);
	struct phase p = { .len = rho < t->len[i] ? (t->len[i] - rho + s - 1) / s : 0, .jstep = s / g, .dil = d / g };
	p.j0 = -1;
	for (int64_t j = 0; j < s / g && j < t->K[i]; j++)
		if ((rho + j * d - plo) % s == 0) {
			p.j0 = j;
			break;
		}
	if (p.j0 >= 0) {
		p.taps = (t->K[i] - 1 - p.j0) / p.jstep + 1;
		p.e0 = floor_div(rho + p.j0 * d - plo, s);
	}
	return p;
}

/* The phase of x's spatial dims rho[] as a stride-1 convolution of x with
 * the phase's taps of wf: [N, M, len..], zeros when it has no tap. */
static struct ir_value *phase_conv(struct onnx_ctx *c, struct ir_value *x, struct ir_value *wf, const struct ct *t,
				   const int64_t *rho)
{
	int k = t->k;
	struct ir_attrs a = { .groups = t->G, .stride.n = k, .dilation.n = k, .pad_lo.n = k, .pad_hi.n = k };
	if (!x || !wf)
		return NULL;
	struct ir_shape zs = { k + 2, { x->shape.dims[0], wf->shape.dims[0] } };
	int64_t cut[IR_MAX_RANK], len[IR_MAX_RANK];
	bool zero = false;
	for (int i = 0; i < k && x && wf; i++) {
		/* the conv over zeros' pad: o reads x's zero-inserted v = o + j d - plo */
		struct phase p = phase_of(t, i, rho[i], t->d[i] * (t->K[i] - 1) - t->lo[i]);
		int64_t n = x->shape.dims[i + 2];
		zs.dims[i + 2] = len[i] = p.len;
		/* outputs m read x at m + e0 + tap * dil: those past x are zeros */
		if (!p.taps || p.len == 0 || p.e0 >= n || p.e0 + p.len - 1 + (p.taps - 1) * p.dil < 0) {
			zero = true;
			continue;
		}
		wf = b_slice(c, wf, i + 2, p.j0, t->K[i], p.jstep);
		int64_t plo = p.e0 < 0 ? -p.e0 : 0;
		if (p.e0 > 0) /* x from e0 on */
			x = b_slice(c, x, i + 2, p.e0, n, 1);
		n -= p.e0 > 0 ? p.e0 : 0;
		int64_t phi = p.len - n - plo + p.dil * (p.taps - 1);
		a.stride.v[i] = 1;
		a.dilation.v[i] = p.dil;
		a.pad_lo.v[i] = plo;
		a.pad_hi.v[i] = phi > 0 ? phi : 0;
		cut[i] = 0;
	}
	if (!x || !wf)
		return NULL;
	if (zero)
		return b_broadcast_to(c, b_scalar(c, x->dtype, 0), &zs);
	struct ir_value *ops[2] = { x, wf };
	return cut_spatial(c, b_op(c, IR_OP_CONV, 2, ops, &a), k, cut, len);
}

/* The phases along dims i.. (rho[0..i) fixed), each padded at the end to
 * ceil(len / s) and given a unit dim after each spatial dim, concatenated
 * along those: [N, M, L0, s0, L1, s1, ..] from dim i on. */
static struct ir_value *phases_from(struct onnx_ctx *c, struct ir_value *x, struct ir_value *wf, const struct ct *t,
				    int i, int64_t *rho)
{
	int k = t->k;
	if (i == k) {
		struct ir_value *y = phase_conv(c, x, wf, t, rho);
		if (!y)
			return NULL;
		struct ir_attrs pa = { .pad_lo.n = k + 2, .pad_hi.n = k + 2, .mode = IR_PAD_CONSTANT };
		struct ir_shape es = { 2 + 2 * k, { y->shape.dims[0], y->shape.dims[1] } };
		bool pad = false;
		for (int j = 0; j < k; j++) {
			int64_t full = (t->len[j] + t->s[j] - 1) / t->s[j];
			pa.pad_hi.v[j + 2] = full - y->shape.dims[j + 2];
			pad = pad || pa.pad_hi.v[j + 2] > 0;
			es.dims[2 + 2 * j] = full;
			es.dims[3 + 2 * j] = 1;
		}
		if (pad)
			y = b_op(c, IR_OP_PAD, 1, &y, &pa);
		return b_reshape(c, y, &es);
	}
	struct ir_value *part[CT_MAX_PHASES];
	int64_t s = t->s[i];
	for (rho[i] = 0; rho[i] < s; rho[i]++)
		if (!(part[rho[i]] = phases_from(c, x, wf, t, i + 1, rho)))
			return NULL;
	return b_concat(c, (int)s, part, 3 + 2 * i);
}

/* Strides above 1: the result as the s^k phases of its positions (o mod
 * s per dim), each a stride-1 convolution of x itself with the taps of
 * the kernel that land on it, interleaved: s^k fewer multiply-adds than
 * the conv over x with zeros inserted, whose products with the zeros are
 * all but 1 in s^k of its work. */
static struct ir_value *ct_phases(struct onnx_ctx *c, struct ir_value *x, struct ir_value *w, const struct ct *t)
{
	int k = t->k;
	int64_t rho[IR_MAX_RANK] = { 0 };
	struct ir_value *y = phases_from(c, x, flipped_kernel(c, x, w, t), t, 0, rho);
	if (!y)
		return NULL;
	struct ir_shape full = { k + 2, { y->shape.dims[0], y->shape.dims[1] } };
	int64_t start[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < k; i++)
		full.dims[i + 2] = y->shape.dims[2 + 2 * i] * t->s[i];
	return cut_spatial(c, b_reshape(c, y, &full), k, start, t->len);
}

/* Kernel dims equal to the strides, no dilation, one group (UNet's k2s2
 * upsampling): input pixels' contributions do not overlap, so the result
 * is a dot of x with W, [N, D.., M, K..], whose kernel dims are then
 * interleaved with the input's ([N, M, D1 K1, ..]), then padded or cut
 * at the ends: s^k times fewer multiply-adds than the conv over zeros. */
static struct ir_value *ct_dot(struct onnx_ctx *c, struct ir_value *x, struct ir_value *w, const struct ct *t)
{
	int k = t->k;
	struct ir_attrs a = { .lhs_contract = { 1, { 1 } }, .rhs_contract = { 1, { 0 } } };
	struct ir_value *ops[2] = { x, w };
	struct ir_value *y = b_op(c, IR_OP_DOT, 2, ops, &a);
	int64_t perm[IR_MAX_RANK] = { 0, k + 1 };
	struct ir_shape full = { k + 2, { x->shape.dims[0], w->shape.dims[1] } };
	struct ir_attrs pa = { .pad_lo.n = k + 2, .pad_hi.n = k + 2, .mode = IR_PAD_CONSTANT };
	bool pad = false;
	for (int i = 0; i < k; i++) {
		perm[2 + 2 * i] = 1 + i;
		perm[3 + 2 * i] = k + 2 + i;
		full.dims[i + 2] = x->shape.dims[i + 2] * t->K[i];
		pa.pad_lo.v[i + 2] = t->lo[i] < 0 ? -t->lo[i] : 0;
		pa.pad_hi.v[i + 2] = t->hi[i] < 0 ? -t->hi[i] : 0;
		pad = pad || t->lo[i] < 0 || t->hi[i] < 0;
	}
	y = b_reshape(c, b_transpose(c, y, perm), &full);
	if (y && pad)
		y = b_op(c, IR_OP_PAD, 1, &y, &pa);
	int64_t start[IR_MAX_RANK];
	for (int i = 0; i < k; i++)
		start[i] = t->lo[i] > 0 ? t->lo[i] : 0;
	return cut_spatial(c, y, k, start, t->len);
}

/* The transposed convolution t of x by w, by the cheapest of the three
 * forms. */
static struct ir_value *ct_build(struct onnx_ctx *c, struct ir_value *x, struct ir_value *w, const struct ct *t)
{
	bool dot = t->G == 1;
	int64_t phases = 1;
	for (int i = 0; i < t->k; i++) {
		dot = dot && t->K[i] == t->s[i] && t->d[i] == 1;
		phases = phases * t->s[i] <= CT_MAX_PHASES ? phases * t->s[i] : CT_MAX_PHASES + 1;
	}
	bool by_phases = phases > 1 && phases <= CT_MAX_PHASES;
	return dot ? ct_dot(c, x, w, t) : by_phases ? ct_phases(c, x, w, t) : ct_conv(c, x, w, t);
}

static int h_conv_transpose(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *x = in[0], *w = in[1];
	int r = x->shape.rank, k = r - 2;
	char buf[32];
	if (k < 1 || w->shape.rank != r)
		return onnx_fail(c, "input and weight need equal rank >= 3");
	if (k > 3) /* the zero insertion splits each dim in two: 2k + 2 <= IR_MAX_RANK */
		return onnx_unsupported(c, "%d spatial dims (1 to 3 are supported)", k);
	if (x->dtype != w->dtype)
		return onnx_fail(c, "input and weight types %s and %s differ", ir_dtype_name(x->dtype),
				 ir_dtype_name(w->dtype));
	int64_t G = attr_int(c, "group", 1), C = x->shape.dims[1];
	if (w->shape.dims[0] != C)
		return onnx_fail(
			c,
			"the weight's first dim is %lld, not the input's %lld channels (weights are [C, M/group, k..])",
			(long long)w->shape.dims[0], (long long)C);
	if (G < 1 || C % G != 0)
		return onnx_fail(c, "the input's %lld channels are not divisible by group %lld", (long long)C,
				 (long long)G);
	int64_t K[IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK], op[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK],
		pads[2 * IR_MAX_RANK], oshape[IR_MAX_RANK + 2], ks[IR_MAX_RANK];
	int n;
	for (int i = 0; i < k; i++) {
		K[i] = w->shape.dims[i + 2];
		s[i] = d[i] = 1;
		op[i] = lo[i] = hi[i] = 0;
	}
	if ((n = attr_ints(c, "kernel_shape", ks, IR_MAX_RANK)) < 0)
		return -EINVAL;
	for (int i = 0; n && i < k; i++)
		if (n != k || ks[i] != K[i])
			return onnx_fail(c, "kernel_shape disagrees with the weight");
	if ((n = attr_ints(c, "strides", s, IR_MAX_RANK)) < 0 || (n && n != k))
		return onnx_fail(c, "strides must have %d entries", k);
	if ((n = attr_ints(c, "dilations", d, IR_MAX_RANK)) < 0 || (n && n != k))
		return onnx_fail(c, "dilations must have %d entries", k);
	if ((n = attr_ints(c, "output_padding", op, IR_MAX_RANK)) < 0 || (n && n != k))
		return onnx_fail(c, "output_padding must have %d entries", k);
	if ((n = attr_ints(c, "pads", pads, 2 * IR_MAX_RANK)) < 0 || (n && n != 2 * k))
		return onnx_fail(c, "pads must have %d entries", 2 * k);
	for (int i = 0; n && i < k; i++)
		lo[i] = pads[i], hi[i] = pads[i + k];
	for (int i = 0; i < k; i++) {
		if (s[i] < 1 || d[i] < 1 || op[i] < 0 || K[i] < 1)
			return onnx_fail(
				c, "strides, dilations and kernel must be positive and output_padding non-negative");
		/* bounds that keep the size arithmetic below in int64 */
		if (s[i] > LIMIT || d[i] > LIMIT || op[i] > LIMIT || llabs(lo[i]) > LIMIT || llabs(hi[i]) > LIMIT)
			return onnx_fail(c, "strides, dilations, pads or output_padding beyond %d", LIMIT);
		if (x->shape.dims[i + 2] > IR_MAX_NUMEL / s[i] || K[i] > IR_MAX_NUMEL / d[i])
			return onnx_fail(c, "the output's spatial dim %d would be too large", i);
	}
	const char *ap = attr_string(c, "auto_pad", "NOTSET", buf, sizeof buf);
	bool upper = !strcmp(ap, "SAME_UPPER"), same = upper || !strcmp(ap, "SAME_LOWER");
	if (!same && strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
		return onnx_fail(c, "unknown auto_pad '%s'", ap);
	if (!strcmp(ap, "VALID"))
		for (int i = 0; i < k; i++)
			lo[i] = hi[i] = 0;
	/* output_shape (spatial dims; a full [N, M, ..] is taken too) or
	 * SAME's in * stride decide the pads: SAME_UPPER puts the odd one at
	 * the end, the others at the start (the ONNX spec's formula) */
	if ((n = attr_ints(c, "output_shape", oshape, IR_MAX_RANK + 2)) < 0 || (n && n != k && n != k + 2))
		return onnx_fail(c, "output_shape must have %d entries", k);
	if (n || same) {
		for (int i = 0; i < k; i++) {
			int64_t want = n ? oshape[i + n - k] : x->shape.dims[i + 2] * s[i];
			if (want < 1 || want > IR_MAX_NUMEL)
				return onnx_fail(c, "output_shape %lld for spatial dim %d", (long long)want, i);
			int64_t total = s[i] * (x->shape.dims[i + 2] - 1) + op[i] + d[i] * (K[i] - 1) + 1 - want;
			lo[i] = upper ? half_floor(total) : total - half_floor(total);
			hi[i] = total - lo[i];
		}
	}
	struct ct ct = { .k = k, .G = G };
	for (int i = 0; i < k; i++) {
		ct.K[i] = K[i], ct.s[i] = s[i], ct.d[i] = d[i], ct.lo[i] = lo[i];
		ct.hi[i] = hi[i] - op[i]; /* output_padding is a negative pad at the end */
		ct.len[i] = s[i] * (x->shape.dims[i + 2] - 1) + op[i] + d[i] * (K[i] - 1) + 1 - lo[i] - hi[i];
		if (ct.len[i] < 1)
			return onnx_fail(c, "the output's spatial dim %d would have %lld elements", i,
					 (long long)ct.len[i]);
	}
	struct ir_value *y = ct_build(c, x, w, &ct);
	if (y && nin > 2 && in[2]) {
		struct ir_shape bs = { r, { 1, y->shape.dims[1] } };
		for (int i = 2; i < r; i++)
			bs.dims[i] = 1;
		y = b_binary(c, IR_OP_ADD, y, b_reshape(c, in[2], &bs));
	}
	return OUT1(y);
}

/* ---- Col2Im --------------------------------------------------------------------- */

/* Col2Im-18: x [N, C B, L] holds, for each of the L = L1..Lk block
 * positions, the B = K1..Kk elements of a block of image [N, C, I1..Ik]
 * (strided, dilated, padded as a convolution's window); the image is the
 * sum of the blocks. That is the transposed convolution of x as [N, C B,
 * L1..Lk] in C groups by a one-hot weight [C B, 1, K..] (block element b
 * of channel c to kernel tap b), its end padded to the image size where
 * the strides leave a remainder. */
static int h_col2im(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	struct ir_value *x = in[0];
	int64_t img[IR_MAX_RANK], K[IR_MAX_RANK], pads[2 * IR_MAX_RANK], s[IR_MAX_RANK], d[IR_MAX_RANK];
	int k = onnx_const_ints(c, in[1], img, IR_MAX_RANK, "image_shape"), n;
	if (k < 0 || (n = onnx_const_ints(c, in[2], K, IR_MAX_RANK, "block_shape")) < 0)
		return -EINVAL;
	if (n != k)
		return onnx_fail(c, "image_shape has %d entries, block_shape %d (one per spatial dim)", k, n);
	if (k < 1 || k > 3)
		return onnx_unsupported(c, "%d spatial dims (1 to 3 are supported)", k);
	if (x->shape.rank != 3 || !ir_dtype_is_float(x->dtype))
		return onnx_fail(c, "input must be floating point [N, C * block size, blocks], got rank %d %s",
				 x->shape.rank, ir_dtype_name(x->dtype));
	for (int i = 0; i < k; i++)
		s[i] = d[i] = 1, pads[i] = pads[i + k] = 0;
	if ((n = attr_ints(c, "strides", s, IR_MAX_RANK)) < 0 || (n && n != k) ||
	    (n = attr_ints(c, "dilations", d, IR_MAX_RANK)) < 0 || (n && n != k) ||
	    (n = attr_ints(c, "pads", pads, 2 * IR_MAX_RANK)) < 0 || (n && n != 2 * k))
		return onnx_fail(c, "strides and dilations need %d entries, pads %d", k, 2 * k);
	int64_t B = 1, L = 1;
	struct ct ct = { .k = k };
	struct ir_shape xs = { k + 2, { x->shape.dims[0], x->shape.dims[1] } }, ws = { k + 2, { 0, 1 } };
	for (int i = 0; i < k; i++) {
		if (s[i] < 1 || d[i] < 1 || K[i] < 1 || img[i] < 1 || pads[i] < 0 || pads[i + k] < 0 || s[i] > LIMIT ||
		    d[i] > LIMIT || K[i] > LIMIT || img[i] > LIMIT || pads[i] > LIMIT || pads[i + k] > LIMIT)
			return onnx_fail(c, "image, block, strides and dilations must be positive, pads non-negative");
		int64_t room = img[i] + pads[i] + pads[i + k] - d[i] * (K[i] - 1) - 1;
		if (room < 0)
			return onnx_fail(c, "block dim %d (%lld, dilation %lld) exceeds the padded image (%lld)", i,
					 (long long)K[i], (long long)d[i], (long long)(img[i] + pads[i] + pads[i + k]));
		xs.dims[i + 2] = room / s[i] + 1;
		ws.dims[i + 2] = K[i];
		B *= K[i];
		L *= xs.dims[i + 2];
		ct.K[i] = K[i], ct.s[i] = s[i], ct.d[i] = d[i], ct.lo[i] = pads[i];
		ct.hi[i] = pads[i + k] - room % s[i]; /* the remainder: zeros at the end */
		ct.len[i] = img[i];
	}
	int64_t C = B ? x->shape.dims[1] / B : 0;
	if (C * B != x->shape.dims[1] || L != x->shape.dims[2])
		return onnx_fail(c, "input [%lld, %lld, %lld] is not [N, C * %lld, %lld] for these blocks",
				 (long long)x->shape.dims[0], (long long)x->shape.dims[1], (long long)x->shape.dims[2],
				 (long long)B, (long long)L);
	if (C < 1 || C * B * B > (INT64_C(1) << 24))
		return onnx_unsupported(c, "%lld channels of %lld-element blocks (a %lld-element weight)", (long long)C,
					(long long)B, (long long)(C * B * B));
	ws.dims[0] = C * B;
	ct.G = C;
	struct ir_tensor w = { 0 };
	if (ir_tensor_alloc(&w, x->dtype, &ws) < 0)
		return -ENOMEM;
	for (int64_t ch = 0; ch < C * B; ch++)
		for (int64_t b = 0; b < B; b++)
			ir_tensor_set_f64(&w, ch * B + b, b == ch % B);
	struct ir_value *wv = b_const(c, x->dtype, &ws, w.data);
	ir_tensor_free(&w);
	struct ir_value *xv = b_reshape(c, x, &xs);
	return OUT1(wv && xv ? ct_build(c, xv, wv, &ct) : NULL);
}

const struct onnx_op_def onnx_ops_convt[] = {
	{ "ConvTranspose", h_conv_transpose,
	  "auto_pad dilations group kernel_shape output_padding output_shape pads strides" },
	{ "Col2Im", h_col2im, "dilations pads strides" },
};
const int onnx_ops_convt_count = sizeof onnx_ops_convt / sizeof onnx_ops_convt[0];
