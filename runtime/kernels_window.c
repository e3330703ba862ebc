/*
 * kernels_window.c: the window ops and pads pcc-run runs on the arena's
 * buffers (kernels.c):
 *
 * - an f32 window max or sum over the last two dims (pooling), from a
 *   copy of each plane with its padding in place (-inf for max, 0 for
 *   sum: no bounds checks), each output's taps folded in a register, a
 *   max four outputs to a maxps (fixture's 3x3/2 pool: 15 -> 5 us,
 *   ResNet-50's: 1.3 -> 0.5 ms, one thread);
 * - a constant pad (zero in any dtype, any value in f32): row copies.
 *
 * Window ops and pads compute what the reference kernel computes in the
 * same order and precision (max in float is exact, sums in double rounded
 * once, NaN and signed zeros as interp_window has them): bit for bit.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels_internal.h"
#include "runtime/pool.h"

/* A window op over the last two dims of a tensor viewed as [planes, H, W],
 * read from a copy of each plane with its padding in place. */
struct window {
	const float *x;
	float *out, *work; /* work: `parts` planes of Hp x Wp floats */
	int64_t H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
	int64_t Hp, Wp; /* the planes that the windows reach, from (-ph, -pw) on */
	int64_t planes, parts;
	bool max;
};

#define WINDOW_SLACK 8 /* floats after each padded plane: load4 reads past the last tap */

/* One output of the window at (oh, ow) of plane x, the out-of-range taps
 * skipped, the others in interp_window's order (row-major over the window):
 * max propagates NaN, sum adds in double and rounds once. */
static float window_at(const struct window *c, const float *x, int64_t oh, int64_t ow)
{
	double acc = c->max ? -INFINITY : 0.0;
	for (int64_t kh = 0; kh < c->KH; kh++) {
		int64_t ih = oh * c->sh - c->ph + kh * c->dh;
		if (ih < 0 || ih >= c->H)
			continue;
		for (int64_t kw = 0; kw < c->KW; kw++) {
			int64_t iw = ow * c->sw - c->pw + kw * c->dw;
			if (iw < 0 || iw >= c->W)
				continue;
			double v = x[ih * c->W + iw];
			acc = !c->max ? acc + v : acc != acc || v != v ? NAN : acc > v ? acc : v;
		}
	}
	return (float)acc;
}

/* Four floats and the lane masks that compare them (GCC's vector
 * extensions: one SSE register). */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

/* Whether x[0..n) holds a NaN. */
static bool has_nan(const float *x, int64_t n)
{
	v4i any = { 0, 0, 0, 0 };
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		v4f v;
		memcpy(&v, x + i, sizeof v);
		any |= v != v;
	}
	bool a = any[0] | any[1] | any[2] | any[3];
	for (; i < n; i++)
		a |= x[i] != x[i];
	return a;
}

/* p[0], p[sw], p[2 sw], p[3 sw]; with sw = 2, p[7] is read too. */
static inline v4f load4(const float *p, int64_t sw)
{
	v4f a, b;
	if (sw > 2)
		return (v4f){ p[0], p[sw], p[2 * sw], p[3 * sw] };
	memcpy(&a, p, sizeof a);
	if (sw == 1)
		return a;
	memcpy(&b, p + 4, sizeof b);
#ifdef __clang__ /* the fuzz build's compiler (tests/fuzz/run-fuzz.sh) */
	return __builtin_shufflevector(a, b, 0, 2, 4, 6);
#else
	return __builtin_shuffle(a, b, (v4i){ 0, 2, 4, 6 });
#endif
}

/* a > b ? a : b lane by lane: maxps, where there is one. */
static inline v4f max4(v4f a, v4f b)
{
#ifdef __SSE__
	return __builtin_ia32_maxps(a, b);
#else
	v4i m = a > b;
	return (v4f)(((v4i)a & m) | ((v4i)b & ~m));
#endif
}

/* The window max or sum of a padded plane xp (no NaN for max), KH x KW
 * taps (constants where inlined): each output folds its taps in
 * interp_window's order (row-major), the max as acc > v ? acc : v (maxss,
 * or maxps on four outputs at once: the later of +0 and -0 wins) from
 * -inf, the sum in double from 0. Taps in the padding read -inf (max) or
 * 0 (sum), which change no accumulator in value or sign (a double sum
 * from +0 is never -0), so each output is interp_window's, without a
 * bounds check. */
static inline __attribute__((always_inline)) void window_fold(const struct window *c, const float *xp,
							      float *restrict o, int64_t KH, int64_t KW, int64_t sw)
{
	int64_t Wp = c->Wp, dh = c->dh * Wp, dw = c->dw;
	for (int64_t oh = 0; oh < c->OH; oh++, o += c->OW) {
		const float *row = xp + oh * c->sh * Wp;
		int64_t ow = 0;
		for (; c->max && ow + 8 <= c->OW; ow += 8) { /* two blocks of four: two chains of maxps */
			const float *at = row + ow * sw;
			v4f a = { -INFINITY, -INFINITY, -INFINITY, -INFINITY }, b = a;
			for (int64_t kh = 0; kh < KH; kh++)
				for (int64_t kw = 0; kw < KW; kw++) {
					a = max4(a, load4(at + kh * dh + kw * dw, sw));
					b = max4(b, load4(at + 4 * sw + kh * dh + kw * dw, sw));
				}
			memcpy(o + ow, &a, sizeof a);
			memcpy(o + ow + 4, &b, sizeof b);
		}
		for (; ow < c->OW; ow++) {
			const float *at = row + ow * sw;
			if (c->max) {
				float acc = -INFINITY;
				for (int64_t kh = 0; kh < KH; kh++)
					for (int64_t kw = 0; kw < KW; kw++) {
						float v = at[kh * dh + kw * dw];
						acc = acc > v ? acc : v;
					}
				o[ow] = acc;
			} else {
				double acc = 0.0;
				for (int64_t kh = 0; kh < KH; kh++)
					for (int64_t kw = 0; kw < KW; kw++)
						acc += at[kh * dh + kw * dw];
				o[ow] = (float)acc;
			}
		}
	}
}

/* window_fold with the common shapes' sizes as constants. */
static void window_plane(const struct window *c, const float *xp, float *o)
{
	if (c->KH == 3 && c->KW == 3 && c->sw == 2)
		window_fold(c, xp, o, 3, 3, 2);
	else if (c->KH == 3 && c->KW == 3 && c->sw == 1)
		window_fold(c, xp, o, 3, 3, 1);
	else if (c->KH == 2 && c->KW == 2 && c->sw == 2)
		window_fold(c, xp, o, 2, 2, 2);
	else
		window_fold(c, xp, o, c->KH, c->KW, c->sw);
}

/* Part t of the planes, in work area t: its border filled once (the
 * planes differ only inside), each plane's rows copied in, then folded. A
 * plane of a max with a NaN goes output by output (window_at). */
static void window_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct window *c = ctx;
	int64_t i0 = c->ph, i1 = c->ph + c->H < c->Hp ? c->ph + c->H : c->Hp; /* xp's rows from the input */
	int64_t j0 = c->pw < c->Wp ? c->pw : c->Wp, j1 = c->pw + c->W < c->Wp ? c->pw + c->W : c->Wp;
	float fill = c->max ? -INFINITY : 0.0f;
	for (int64_t t = begin; t < end; t++) {
		float *xp = c->work + (size_t)(t * (c->Hp * c->Wp + WINDOW_SLACK));
		for (int64_t i = 0; i < c->Hp * c->Wp + WINDOW_SLACK; i++)
			xp[i] = fill;
		for (int64_t p = t * c->planes / c->parts; p < (t + 1) * c->planes / c->parts; p++) {
			const float *x = c->x + p * c->H * c->W;
			float *o = c->out + p * c->OH * c->OW;
			if (c->max && has_nan(x, c->H * c->W)) {
				for (int64_t oh = 0; oh < c->OH; oh++)
					for (int64_t ow = 0; ow < c->OW; ow++)
						o[oh * c->OW + ow] = window_at(c, x, oh, ow);
				continue;
			}
			for (int64_t i = i0; i < i1; i++)
				copy_floats(xp + i * c->Wp + j0, x + (i - c->ph) * c->W, j1 - j0);
			window_plane(c, xp, o);
		}
	}
}

bool rt_host_window(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	const struct ir_shape *xs = &k->shape[0], *os = &k->shape[1];
	const struct ir_attrs *a = &k->a;
	int n = xs->rank;
	if (k->dtype[0] != IR_F32 || k->dtype[1] != IR_F32 || n < 2)
		return false;
	for (int d = 0; d < n - 2; d++)
		if (a->window.v[d] != 1 || a->stride.v[d] != 1 || a->pad_lo.v[d] != 0 || os->dims[d] != xs->dims[d])
			return false;
	struct window c = { .H = xs->dims[n - 2],
			    .W = xs->dims[n - 1],
			    .OH = os->dims[n - 2],
			    .OW = os->dims[n - 1],
			    .KH = a->window.v[n - 2],
			    .KW = a->window.v[n - 1],
			    .sh = a->stride.v[n - 2],
			    .sw = a->stride.v[n - 1],
			    .ph = a->pad_lo.v[n - 2],
			    .pw = a->pad_lo.v[n - 1],
			    .dh = a->dilation.v[n - 2],
			    .dw = a->dilation.v[n - 1],
			    .max = k->op == IR_OP_WINDOW_MAX };
	if (c.sh < 1 || c.sw < 1 || c.dh < 1 || c.dw < 1 || c.KH < 1 || c.KW < 1 || c.ph < 0 || c.pw < 0)
		return false;
	c.x = buf[0];
	c.out = buf[1];
	if (overlap(c.out, kernel_bytes(k, 1), c.x, kernel_bytes(k, 0)))
		return false;
	if (c.OH * c.OW == 0)
		return true;
	c.planes = ir_shape_numel(os) / (c.OH * c.OW);
	c.Hp = (c.OH - 1) * c.sh + (c.KH - 1) * c.dh + 1;
	c.Wp = (c.OW - 1) * c.sw + (c.KW - 1) * c.dw + 1;
	/* a thread per at least ~8K taps (a few microseconds) */
	int64_t taps = c.planes * c.OH * c.OW * c.KH * c.KW;
	c.parts = pool_threads(r->pool) < ceil_div(taps, 8192) ? pool_threads(r->pool) : ceil_div(taps, 8192);
	c.parts = c.parts < c.planes ? c.parts : c.planes;
	if (!(c.work = pool_scratch(r->pool, (size_t)(c.parts * (c.Hp * c.Wp + WINDOW_SLACK)) * sizeof(float))))
		return false;
	pool_run(r->pool, window_chunk, &c, c.parts, 1);
	return true;
}

/* n bytes copied, or zeroed; the sizes of one to four floats inline (the
 * rows of a pad are often that short: a call each would cost more). */
static inline void put_bytes(char *restrict d, const char *restrict s, size_t n)
{
	if (n == 4)
		memcpy(d, s, 4);
	else if (n == 8)
		memcpy(d, s, 8);
	else if (n == 16)
		memcpy(d, s, 16);
	else if (n)
		memcpy(d, s, n);
}

static inline void zero_bytes(char *d, size_t n)
{
	if (n == 4)
		memset(d, 0, 4);
	else if (n == 8)
		memset(d, 0, 8);
	else if (n == 16)
		memset(d, 0, 16);
	else if (n)
		memset(d, 0, n);
}

/* A constant pad: block d of the output is the fill where its index lies
 * in the padding, else block d + 1 over the input's; at the last padded
 * dim, e, the blocks after it are contiguous in both, so a row there is
 * fill, input, fill. */
struct pad {
	const struct ir_shape *xs, *os;
	const struct ir_attrs *a;
	int e;
	size_t es;                                 /* bytes of an element */
	size_t ost[IR_MAX_RANK], ist[IR_MAX_RANK]; /* bytes between indices of dim d */
	float f;                                   /* the fill, in f32 unless zero */
	uint32_t fbits;                            /* its bits, for 4-byte elements (0 when zero) */
	bool zero;
};

static inline void pad_fill(const struct pad *c, char *out, size_t bytes)
{
	if (c->zero) {
		zero_bytes(out, bytes);
		return;
	}
	for (size_t i = 0; i < bytes / sizeof c->f; i++)
		memcpy(out + i * sizeof c->f, &c->f, sizeof c->f);
}

/* Rows of dim e, count of them rows apart in the output (opitch bytes)
 * and the input (ipitch). A row is fill,
 * the input's n elements, fill. Short rows of 4-byte elements (the pads
 * that interleave zeros have thousands of one or two) go element by
 * element with a select, which stays inline; others as three copies. */
static void pad_rows(const struct pad *c, char *restrict out, const char *restrict in, int64_t count, size_t opitch,
		     size_t ipitch)
{
	int64_t lo = c->a->pad_lo.v[c->e], n = c->xs->dims[c->e], L = c->os->dims[c->e];
	size_t row = c->ist[c->e], head = (size_t)lo * row, body = (size_t)n * row;
	size_t tail = (size_t)(L - lo - n) * row;
	if (c->es == 4 && row == 4 && L <= 16) {
		uint32_t f = c->fbits;
		for (int64_t r = 0; r < count; r++, out += opitch, in += ipitch) {
			for (int64_t j = 0; j < L; j++) {
				uint32_t v = f;
				if ((uint64_t)(j - lo) < (uint64_t)n)
					memcpy(&v, in + (j - lo) * 4, 4);
				memcpy(out + j * 4, &v, 4);
			}
		}
		return;
	}
	for (int64_t r = 0; r < count; r++, out += opitch, in += ipitch) {
		pad_fill(c, out, head);
		put_bytes(out + head, in, body);
		pad_fill(c, out + head + body, tail);
	}
}

/* Dim d's blocks: the rows when d == e, else each block of d, the fill or
 * the blocks of dim d + 1 (the rows of dim e in one call when d + 1 == e:
 * the blocks of d in range are consecutive). */
static void pad_block(const struct pad *c, int d, char *out, const char *in)
{
	if (d == c->e) {
		pad_rows(c, out, in, 1, 0, 0);
		return;
	}
	int64_t dlo = c->a->pad_lo.v[d], dn = c->xs->dims[d], m = c->os->dims[d];
	pad_fill(c, out, (size_t)dlo * c->ost[d]);
	if (d + 1 == c->e)
		pad_rows(c, out + (size_t)dlo * c->ost[d], in, dn, c->ost[d], c->ist[d]);
	else
		for (int64_t i = 0; i < dn; i++)
			pad_block(c, d + 1, out + (size_t)(dlo + i) * c->ost[d], in + (size_t)i * c->ist[d]);
	pad_fill(c, out + (size_t)(dlo + dn) * c->ost[d], (size_t)(m - dlo - dn) * c->ost[d]);
}

bool rt_host_pad(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	struct pad c = { .xs = &k->shape[0],
			 .os = &k->shape[1],
			 .a = &k->a,
			 .e = -1,
			 .es = ir_dtype_size(k->dtype[0]),
			 .f = (float)k->a.value };
	int n = c.xs->rank;
	c.zero = c.a->value == 0 && !signbit(c.a->value);
	if (!c.zero)
		memcpy(&c.fbits, &c.f, sizeof c.fbits);
	if (c.a->mode != IR_PAD_CONSTANT || n < 1 || !(c.zero || k->dtype[0] == IR_F32))
		return false;
	const char *in = buf[0];
	char *out = buf[1];
	size_t nout = kernel_bytes(k, 1);
	if (overlap(out, nout, in, kernel_bytes(k, 0)))
		return false;
	for (int d = 0; d < n; d++) {
		if (c.a->pad_lo.v[d] < 0 || c.os->dims[d] < c.xs->dims[d] + c.a->pad_lo.v[d])
			return false;
		if (c.os->dims[d] != c.xs->dims[d])
			c.e = d;
	}
	if (nout == 0)
		return true;
	if (c.e < 0) {
		memcpy(out, in, nout);
		return true;
	}
	c.ost[n - 1] = c.ist[n - 1] = c.es;
	for (int d = n - 2; d >= 0; d--) {
		c.ost[d] = c.ost[d + 1] * (size_t)c.os->dims[d + 1];
		c.ist[d] = c.ist[d + 1] * (size_t)c.xs->dims[d + 1];
	}
	pad_block(&c, 0, out, in);
	return true;
}
