/*
 * kernels.c: the generated host kernels of a plan (compiler/codegen.h),
 * loaded from the plan's object (hostcode.c) and run across this rank's
 * threads (pool.c). A kernel without host code, or every kernel with
 * --reference, runs the reference interpreter's kernels instead, except
 * for the ops below, which run here, straight on the arena's buffers, where
 * the reference kernel computes into a fresh tensor that the runtime then
 * copies:
 *
 * - a dot that is one batched gemm on its operands in place
 *   (gpu_plan_gemm): sgemm or dgemm into its result buffer (the LM head of
 *   GPT-2 small writes 26 MB), the matrices split over the pool's threads,
 *   or with fewer matrices than threads, blocks of rows or columns of each;
 * - an f32 convolution with one or two spatial dims, per image and group,
 *   as interp_conv computes it: out (Og x P) = w (Og x Cg*KH*KW) * col
 *   (Cg*KH*KW x P), one sgemm. With at least as many (image, group) items
 *   as threads, the threads take items; with fewer (a batch of one image
 *   at real sizes), each item is split across them: its column matrix by
 *   channels, its gemm by output channels or by columns, whichever is
 *   longer (ResNet-50 at batch 1, 2 threads: 250 -> 155 ms on a busy
 *   machine, 67 -> 52 ms on a quiet one). For dots and convolutions alike,
 *   OpenBLAS runs single-threaded inside the pool's threads: its own
 *   threads would compete with them for the cores, and spin on (yielding)
 *   long after each call. The column matrix is built in the pool's
 *   scratch memory from a copy of the input with its padding in place
 *   (no index table, no bounds checks); a 1x1
 *   kernel with stride 1 and no padding needs none (the input is col);
 *   with stride 1, col runs over OH x Wp columns (Wp the padded width), so
 *   each of its rows is one slice of the padded input, and the junk
 *   columns are dropped from the result (conv_wide), unless the rows are
 *   short in a big gemm, where the junk would cost more to multiply than
 *   im2col's pieces to copy (ResNet-50's 14x14 and 7x7 stages: 14% and
 *   29% more columns; 51 -> 48 ms);
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
 * Dots and convolutions compute each output as a dot of the same entries
 * with sgemm, but not always in the same calls: conv_wide's extra columns
 * and a split gemm's pieces can change how OpenBLAS rounds in the last
 * place (1 ulp on the ResNet fixture; GPT-2 small came out bit for bit,
 * ResNet-50's logits within 6e-7; test_codegen checks 1e-5 of the sum of
 * magnitudes). Anything else (other dtypes or ranks, a result buffer that
 * overlaps an operand) goes to the reference kernel.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "runtime/gpu_plan.h"
#include "runtime/hostcode.h"
#include "runtime/pool.h"
#include "runtime/rt.h"

int rt_kernels_load(struct rt *r, bool reference, int threads)
{
	const struct plan *p = r->p;
	if (reference || !p->host_object_len)
		return 0;
	int rc = hostcode_check_cpu(p->host_features ? p->host_features : "", p->host_cpu ? p->host_cpu : "?");
	if (rc < 0) {
		ir_error_prefix("the plan's host kernels cannot run here (recompile with --host-cpu, or run with "
				"--reference)");
		return rc;
	}
	if ((rc = hostcode_load(p->host_object, p->host_object_len, &r->hc)) < 0)
		return rc;
	if (!(r->fn = ir_calloc((size_t)p->nkernels + 1, sizeof *r->fn)))
		return ir_errorf(-ENOMEM, "out of memory loading the host kernels");
	for (int k = 0; k < p->nkernels; k++) {
		char name[32];
		if (!p->kernels[k].host)
			continue;
		snprintf(name, sizeof name, "pcc_k%d", k);
		void *sym = hostcode_sym(r->hc, name);
		if (!sym)
			return ir_errorf(-EINVAL, "host code: kernel %d has no function %s", k, name);
		memcpy(&r->fn[k], &sym, sizeof sym); /* POSIX: a symbol's address converts */
	}
	/* mpirun binds a rank to a core or a socket unless told not to: the
	 * CPUs this rank may run on, when fewer than the machine's, are its
	 * share; else the machine's divided among this host's ranks */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int allowed = rt_allowed_cpus();
	cpus = cpus > 0 ? cpus : 1;
	if (threads <= 0) {
		threads = allowed > 0 && allowed < cpus ? allowed : (int)cpus / rt_local_ranks();
		threads = threads < 1 ? 1 : threads;
	} else if (allowed > 0 && threads > allowed && r->c->rank == 0) {
		fprintf(stderr, "pcc-run: warning: --threads %d, but rank 0 may run on %d CPU%s only (mpirun binds "
			"ranks to cores: pass it --bind-to none or --map-by ...:PE=%d)\n", threads, allowed,
			allowed == 1 ? "" : "s", threads);
	}
	if (!(r->pool = pool_new(threads)))
		return -ENOMEM;
	return 0;
}

void rt_kernels_release(struct rt *r)
{
	if (r->pool)
		pool_free(r->pool);
	if (r->hc)
		hostcode_free(r->hc);
	ir_free(r->fn);
	r->pool = NULL;
	r->hc = NULL;
	r->fn = NULL;
}

struct call {
	rt_kernel_fn fn;
	void **args;
};

static void chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct call *c = ctx;
	c->fn(c->args, begin, end);
}

/* ceil(a / b) for b > 0 and any a. */
static int64_t ceil_div(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/* OpenBLAS's thread count (weak: with another BLAS, these are NULL). */
int openblas_get_num_threads(void) __attribute__((weak));
void openblas_set_num_threads(int n) __attribute__((weak));

/* OpenBLAS to one thread while the pool's threads each make sgemm calls
 * (its own threads would compete with them for the cores, and spin on
 * after each call); returns the count to restore (1: nothing to do). */
static int blas_single(const struct rt *r)
{
	int n = pool_threads(r->pool) > 1 && openblas_get_num_threads ? openblas_get_num_threads() : 1;
	if (n > 1)
		openblas_set_num_threads(1);
	return n;
}

static void blas_restore(int n)
{
	if (n > 1)
		openblas_set_num_threads(n);
}

#define DOT_ROW_BLOCK 16 /* rows of C per piece of a split gemm (sgemm's unroll divides it) */
#define DOT_COL_BLOCK 64 /* columns of C per piece */

/* A batched gemm C_i = op(A_i) op(B_i) in pieces: each matrix of the
 * batch whole, or, with fewer matrices than threads, split into blocks
 * of rows or of columns of C (whichever dim is longer). */
struct dot {
	const char *a, *b;
	char *c;
	struct gpu_gemm g;
	size_t es;               /* bytes of an element */
	int64_t pieces;          /* per matrix */
	bool by_rows;
};

static void dot_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct dot *d = ctx;
	const struct gpu_gemm *g = &d->g;
	enum CBLAS_TRANSPOSE ta = g->ta ? CblasTrans : CblasNoTrans, tb = g->tb ? CblasTrans : CblasNoTrans;
	blasint lda = (blasint)(g->ta ? g->m : g->k), ldb = (blasint)(g->tb ? g->k : g->n), ldc = (blasint)g->n;
	for (int64_t u = begin; u < end; u++) {
		int64_t i = u / d->pieces, p = u % d->pieces, m0 = 0, m1 = g->m, n0 = 0, n1 = g->n;
		if (d->pieces > 1 && d->by_rows) {
			m0 = p * DOT_ROW_BLOCK;
			m1 = m0 + DOT_ROW_BLOCK < g->m ? m0 + DOT_ROW_BLOCK : g->m;
		} else if (d->pieces > 1) {
			n0 = p * DOT_COL_BLOCK;
			n1 = n0 + DOT_COL_BLOCK < g->n ? n0 + DOT_COL_BLOCK : g->n;
		}
		/* rows m0.. of op(A): rows of A, or its columns when transposed; likewise B's columns */
		const char *ai = d->a + (size_t)(i * g->m * g->k + (g->ta ? m0 : m0 * g->k)) * d->es;
		const char *bi = d->b + (size_t)(i * g->k * g->n + (g->tb ? n0 * g->k : n0)) * d->es;
		char *ci = d->c + (size_t)(i * g->m * g->n + m0 * g->n + n0) * d->es;
		blasint m = (blasint)(m1 - m0), n = (blasint)(n1 - n0), k = (blasint)g->k;
		if (d->es == sizeof(float))
			cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, (const float *)ai, lda, (const float *)bi, ldb,
				    0.0f, (float *)ci, ldc);
		else
			cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, (const double *)ai, lda, (const double *)bi, ldb,
				    0.0, (double *)ci, ldc);
	}
}

/* The dot x as interp_dot runs it, when it is one batched gemm in place,
 * across the pool's threads (dot_chunk). */
static bool host_dot(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	struct dot d = { .a = buf[0], .b = buf[1], .c = buf[2], .pieces = 1 };
	struct gpu_gemm *g = &d.g;
	if (!gpu_plan_gemm(k, g) || (k->dtype[0] != IR_F32 && k->dtype[0] != IR_F64) || g->m > INT32_MAX ||
	    g->n > INT32_MAX || g->k > INT32_MAX)
		return false;
	d.es = k->dtype[0] == IR_F32 ? sizeof(float) : sizeof(double);
	size_t na = (size_t)(g->batch * g->m * g->k) * d.es, nb = (size_t)(g->batch * g->k * g->n) * d.es,
	       nc = (size_t)(g->batch * g->m * g->n) * d.es;
	if ((d.c < d.a + na && d.a < d.c + nc) || (d.c < d.b + nb && d.b < d.c + nc))
		return false; /* written in place: gemm's C may not alias A or B */
	int threads = pool_threads(r->pool);
	d.by_rows = g->m > g->n;
	if (g->batch < threads)
		d.pieces = d.by_rows ? ceil_div(g->m, DOT_ROW_BLOCK) : ceil_div(g->n, DOT_COL_BLOCK);
	/* a thread per at least ~64K multiply-adds */
	int64_t macs = g->k * (d.pieces == 1 ? g->m * g->n : d.by_rows ? DOT_ROW_BLOCK * g->n : g->m * DOT_COL_BLOCK);
	int64_t units = g->batch * d.pieces, grain = macs > 0 ? ceil_div(65536, macs) : units;
	if (units < 1)
		return true;
	int blas = blas_single(r);
	pool_run(r->pool, dot_chunk, &d, units, grain);
	blas_restore(blas);
	return true;
}

/* Whether [a, a + na) and [b, b + nb) share a byte. */
static bool overlap(const void *a, size_t na, const void *b, size_t nb)
{
	const char *x = a, *y = b;
	return x < y + nb && y < x + na;
}

static size_t kernel_bytes(const struct plan_kernel *k, int j)
{
	return (size_t)ir_shape_numel(&k->shape[j]) * ir_dtype_size(k->dtype[j]);
}

/* A convolution with two spatial dims (one: H = KH = 1), per image and
 * group: out (Og x P) = w (Og x CK) * col (CK x ncol). */
struct conv {
	const float *x, *w;
	float *out, *work;      /* work: nthreads blocks of `block` floats */
	int64_t N, C, O, G, Cg, Og, H, W, KH, KW, OH, OW, P, CK;
	int64_t sh, sw, ph, pw, dh, dw;
	int64_t Hp, Wp;         /* the input plane with its padding */
	int64_t ncol;           /* columns of the gemm: P, or OH * Wp when wide */
	int64_t items, nthreads, block, slack;
	bool direct;            /* 1x1, stride 1, no padding: col is the input */
	bool padded;            /* im2col reads a zero-padded copy of the input */
	bool wide;              /* stride 1: the gemm runs over OH x Wp columns */
	/* split_item's: the item that the threads share, its work areas */
	const float *xi, *wi;
	float *oi, *col, *xp, *cw;
	bool by_rows;           /* its gemm split by output channels, else by columns */
};

#define CONV_ROW_BLOCK 16 /* output channels per piece of a split gemm: sgemm's unroll divides it */
#define CONV_COL_BLOCK 64 /* columns per piece of a split gemm (not wide) */
#define WIDE_ROW_MIN 16        /* output rows this long run wide at any size */
#define WIDE_MACS_MAX (1 << 20) /* items under this many multiply-adds run wide at any row length */

/* n floats from s to d, in constant-size pieces that the compiler inlines
 * (the rows are a few floats long: a call each would cost more). */
static void copy_floats(float *restrict d, const float *restrict s, int64_t n)
{
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		memcpy(d + i, s + i, 8 * sizeof *d);
	if (i + 4 <= n) {
		memcpy(d + i, s + i, 4 * sizeof *d);
		i += 4;
	}
	if (i + 2 <= n) {
		memcpy(d + i, s + i, 2 * sizeof *d);
		i += 2;
	}
	if (i < n)
		d[i] = s[i];
}

/* The KH * KW rows (kh, kw) of one channel's column matrix, x its plane:
 * column (oh, ow) is the input at (oh * sh - ph + kh * dh, ow * sw - pw +
 * kw * dw), 0 in the padding; as interp_conv's table gathers it. x is the
 * input's plane, or (c->padded) its copy in Hp x Wp with the padding in
 * place, so that no read needs a bounds check. */
static void im2col_plane(const struct conv *c, const float *x, float *restrict col)
{
	int64_t Wp = c->Wp, OW = c->OW, sw = c->sw;
	for (int64_t kh = 0; kh < c->KH; kh++) {
		for (int64_t kw = 0; kw < c->KW; kw++) {
			const float *src = x + kh * c->dh * Wp + kw * c->dw;
			for (int64_t oh = 0; oh < c->OH; oh++, col += OW, src += c->sh * Wp) {
				if (sw == 1)
					copy_floats(col, src, OW);
				else
					for (int64_t ow = 0; ow < OW; ow++)
						col[ow] = src[ow * sw];
			}
		}
	}
}

/* The column matrix of one image and group, x its Cg planes. */
static void im2col(const struct conv *c, const float *x, float *restrict col)
{
	for (int64_t ch = 0; ch < c->Cg; ch++, x += c->Hp * c->Wp, col += c->KH * c->KW * c->P)
		im2col_plane(c, x, col);
}

/* One input plane x in Hp x Wp, at (ph, pw), zeros around. */
static void pad_plane(const struct conv *c, const float *x, float *restrict xp)
{
	memset(xp, 0, (size_t)(c->Hp * c->Wp) * sizeof *xp);
	for (int64_t h = 0; h < c->H; h++, x += c->W)
		copy_floats(xp + (h + c->ph) * c->Wp + c->pw, x, c->W);
}

/* The group's input x in Hp x Wp planes, then slack zeros. */
static void pad_input(const struct conv *c, const float *x, float *restrict xp)
{
	for (int64_t ch = 0; ch < c->Cg; ch++, xp += c->Hp * c->Wp, x += c->H * c->W)
		pad_plane(c, x, xp);
	memset(xp, 0, (size_t)c->slack * sizeof *xp);
}

/* With stride 1, the column matrix over OH x Wp columns (the Wp - OW
 * rightmost of each output row are junk: they read across the padded
 * row's end) has rows that are plain slices of the padded input: one copy
 * each, where im2col copies OH pieces of OW floats. The gemm's columns are
 * independent of one another, so the OW real ones of each row come out as
 * im2col's do; the junk ones are dropped when the result is compacted.
 * These are the KH * KW rows of one channel, xp its padded plane. */
static void wide_rows(const struct conv *c, const float *xp, float *restrict row)
{
	for (int64_t kh = 0; kh < c->KH; kh++)
		for (int64_t kw = 0; kw < c->KW; kw++, row += c->ncol)
			memcpy(row, xp + kh * c->dh * c->Wp + kw * c->dw, (size_t)c->ncol * sizeof *row);
}

/* Output channels [o0, o1) and rows [h0, h1) of the wide result cw into out. */
static void compact(const struct conv *c, const float *cw, float *out, int64_t o0, int64_t o1, int64_t h0,
		    int64_t h1)
{
	for (int64_t o = o0; o < o1; o++)
		for (int64_t oh = h0; oh < h1; oh++)
			copy_floats(out + o * c->P + oh * c->OW, cw + o * c->ncol + oh * c->Wp, c->OW);
}

static void conv_wide(const struct conv *c, const float *xp, float *restrict col, float *restrict cw,
		      const float *w, float *out)
{
	for (int64_t ch = 0; ch < c->Cg; ch++)
		wide_rows(c, xp + ch * c->Hp * c->Wp, col + ch * c->KH * c->KW * c->ncol);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)c->Og, (blasint)c->ncol, (blasint)c->CK, 1.0f,
		    w, (blasint)c->CK, col, (blasint)c->ncol, 0.0f, cw, (blasint)c->ncol);
	compact(c, cw, out, 0, c->Og, 0, c->OH);
}

/* Thread t's share of the (image, group) items. */
static void conv_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	for (int64_t t = begin; t < end; t++) {
		float *col = NULL, *xp = NULL, *cw = NULL; /* no work area for a direct 1x1 */
		if (c->work) {
			col = c->work + (size_t)(t * c->block);
			xp = col + c->CK * c->ncol;
			cw = xp + c->Cg * c->Hp * c->Wp + c->slack;
		}
		for (int64_t i = t * c->items / c->nthreads; i < (t + 1) * c->items / c->nthreads; i++) {
			int64_t b = i / c->G, g = i % c->G;
			const float *x = c->x + (b * c->C + g * c->Cg) * c->H * c->W, *w = c->w + g * c->Og * c->CK;
			float *out = c->out + (b * c->O + g * c->Og) * c->P;
			if (c->padded)
				pad_input(c, x, xp);
			if (c->wide) {
				conv_wide(c, xp, col, cw, w, out);
				continue;
			}
			if (c->direct)
				col = (float *)x;
			else
				im2col(c, c->padded ? xp : x, col);
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)c->Og, (blasint)c->P,
				    (blasint)c->CK, 1.0f, w, (blasint)c->CK, col, (blasint)c->P, 0.0f, out, (blasint)c->P);
		}
	}
}

/* split_item's phases, over the item's channels: the padded planes, then
 * (once they are all in place: a wide row reads into the next plane) the
 * column matrix's rows. */
static void pad_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	for (int64_t ch = begin; ch < end; ch++)
		pad_plane(c, c->xi + ch * c->H * c->W, c->xp + ch * c->Hp * c->Wp);
}

static void col_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	const float *x = c->padded ? c->xp : c->xi;
	for (int64_t ch = begin; ch < end; ch++) {
		const float *plane = x + ch * c->Hp * c->Wp;
		float *rows = c->col + ch * c->KH * c->KW * c->ncol;
		if (c->wide)
			wide_rows(c, plane, rows);
		else
			im2col_plane(c, plane, rows);
	}
}

/* Pieces [begin, end) of the item's gemm: output channels in blocks of
 * CONV_ROW_BLOCK (by_rows), else columns: whole output rows when wide (so
 * that the piece compacts its own), else blocks of CONV_COL_BLOCK. */
static void gemm_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	int64_t o0 = 0, o1 = c->Og, j0 = 0, j1 = c->ncol, unit = c->wide ? c->Wp : CONV_COL_BLOCK;
	if (c->by_rows) {
		o0 = begin * CONV_ROW_BLOCK;
		o1 = end * CONV_ROW_BLOCK < c->Og ? end * CONV_ROW_BLOCK : c->Og;
	} else {
		j0 = begin * unit;
		j1 = end * unit < c->ncol ? end * unit : c->ncol;
	}
	const float *b = c->direct ? c->xi : c->col;
	float *dst = c->wide ? c->cw : c->oi;
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(o1 - o0), (blasint)(j1 - j0), (blasint)c->CK,
		    1.0f, c->wi + o0 * c->CK, (blasint)c->CK, b + j0, (blasint)c->ncol, 0.0f, dst + o0 * c->ncol + j0,
		    (blasint)c->ncol);
	if (c->wide)
		compact(c, c->cw, c->oi, o0, o1, j0 / c->Wp, j1 / c->Wp);
}

/* Items one at a time, each across the pool's threads (fewer items than
 * threads: a batch of one image): its padded input and column matrix
 * split by channels, its gemm by output channels or by columns, whichever
 * is longer (each piece packs the whole of the other operand). */
static void split_items(struct rt *r, struct conv *c)
{
	c->col = c->work;
	c->xp = c->col ? c->col + c->CK * c->ncol : NULL;
	c->cw = c->xp ? c->xp + c->Cg * c->Hp * c->Wp + c->slack : NULL;
	c->by_rows = c->Og > c->ncol;
	int64_t unit = c->wide ? c->Wp : CONV_COL_BLOCK;
	int64_t pieces = c->by_rows ? ceil_div(c->Og, CONV_ROW_BLOCK) : ceil_div(c->ncol, unit);
	int64_t macs = c->CK * (c->by_rows ? CONV_ROW_BLOCK * c->ncol : c->Og * unit);
	/* a thread per at least ~64K multiply-adds, or ~8K floats copied */
	int64_t grain = ceil_div(65536, macs), pgrain = ceil_div(8192, c->Hp * c->Wp),
		cgrain = ceil_div(8192, c->KH * c->KW * c->ncol);
	for (int64_t i = 0; i < c->items; i++) {
		int64_t b = i / c->G, g = i % c->G;
		c->xi = c->x + (b * c->C + g * c->Cg) * c->H * c->W;
		c->wi = c->w + g * c->Og * c->CK;
		c->oi = c->out + (b * c->O + g * c->Og) * c->P;
		if (c->padded) {
			pool_run(r->pool, pad_chunk, c, c->Cg, pgrain);
			memset(c->xp + c->Cg * c->Hp * c->Wp, 0, (size_t)c->slack * sizeof *c->xp);
		}
		if (!c->direct)
			pool_run(r->pool, col_chunk, c, c->Cg, cgrain);
		pool_run(r->pool, gemm_chunk, c, pieces, grain);
	}
}

static bool host_conv(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	const struct ir_shape *xs = &k->shape[0], *ws = &k->shape[1], *os = &k->shape[2];
	const struct ir_attrs *a = &k->a;
	int sp = xs->rank - 2; /* spatial dims */
	if (k->dtype[0] != IR_F32 || k->dtype[1] != IR_F32 || k->dtype[2] != IR_F32 || sp < 1 || sp > 2)
		return false;
	struct conv c = { .N = xs->dims[0], .C = xs->dims[1], .O = ws->dims[0], .G = a->groups };
	int h = sp == 2 ? 0 : -1, w = sp - 1; /* index of H and W in the attributes; -1: none */
	c.H = h < 0 ? 1 : xs->dims[2];
	c.W = xs->dims[2 + w];
	c.KH = h < 0 ? 1 : ws->dims[2];
	c.KW = ws->dims[2 + w];
	c.OH = h < 0 ? 1 : os->dims[2];
	c.OW = os->dims[2 + w];
	c.sh = h < 0 ? 1 : a->stride.v[h];
	c.ph = h < 0 ? 0 : a->pad_lo.v[h];
	c.dh = h < 0 ? 1 : a->dilation.v[h];
	c.sw = a->stride.v[w];
	c.pw = a->pad_lo.v[w];
	c.dw = a->dilation.v[w];
	if (c.G < 1 || c.C % c.G || c.O % c.G)
		return false;
	c.Cg = c.C / c.G;
	c.Og = c.O / c.G;
	c.P = c.OH * c.OW;
	c.CK = c.Cg * c.KH * c.KW;
	if (c.sh < 1 || c.sw < 1 || c.dh < 1 || c.dw < 1 || c.Og > INT32_MAX || c.P > INT32_MAX || c.CK > INT32_MAX)
		return false;
	c.x = buf[0];
	c.w = buf[1];
	c.out = buf[2];
	size_t nout = kernel_bytes(k, 2);
	if (overlap(c.out, nout, c.x, kernel_bytes(k, 0)) || overlap(c.out, nout, c.w, kernel_bytes(k, 1)))
		return false;
	if (nout == 0)
		return true;
	if (c.CK == 0) {
		memset(c.out, 0, nout);
		return true;
	}
	c.direct = c.KH == 1 && c.KW == 1 && c.sh == 1 && c.sw == 1 && c.ph == 0 && c.pw == 0 && c.OH == c.H &&
		   c.OW == c.W;
	/* a thread per at least ~64K multiply-adds: fewer is not worth the hand-off */
	int64_t macs = c.Og * c.P * c.CK;
	c.items = c.N * c.G;
	int threads = pool_threads(r->pool);
	bool split = c.items < threads;
	c.nthreads = split ? 1 : threads;
	int64_t cap = c.items * macs / 65536;
	c.nthreads = c.nthreads < cap ? c.nthreads : cap > 1 ? cap : 1;
	/* the planes that the windows reach, from (-ph, -pw) on */
	c.Hp = (c.OH - 1) * c.sh + (c.KH - 1) * c.dh + 1;
	c.Wp = (c.OW - 1) * c.sw + (c.KW - 1) * c.dw + 1;
	/* junk columns cost (Wp - OW) / OW of the gemm: short rows of a big
	 * gemm are cheaper to gather (im2col) than to multiply */
	c.wide = !c.direct && c.sh == 1 && c.sw == 1 && (c.OW >= WIDE_ROW_MIN || macs < WIDE_MACS_MAX);
	c.padded = c.wide || c.ph || c.pw || c.Hp > c.H || c.Wp > c.W;
	c.Hp = c.padded && c.Hp < c.H + c.ph ? c.H + c.ph : c.padded ? c.Hp : c.H;
	c.Wp = c.padded && c.Wp < c.W + c.pw ? c.W + c.pw : c.padded ? c.Wp : c.W;
	c.ncol = c.wide ? c.OH * c.Wp : c.P;
	if (c.ncol > INT32_MAX)
		return false;
	c.slack = c.wide ? (c.KW - 1) * c.dw : 0; /* the last junk columns read past the last plane */
	c.block = c.direct ? 0
			   : c.wide ? (c.CK + c.Og) * c.ncol + c.Cg * c.Hp * c.Wp + c.slack
				    : c.CK * c.P + (c.padded ? c.Cg * c.Hp * c.Wp : 0);
	if (c.block && !(c.work = pool_scratch(r->pool, (size_t)(c.nthreads * c.block) * sizeof(float))))
		return false;
	int blas = blas_single(r);
	if (split)
		split_items(r, &c);
	else
		pool_run(r->pool, conv_chunk, &c, c.nthreads, 1);
	blas_restore(blas);
	return true;
}

/* A window op over the last two dims of a tensor viewed as [planes, H, W],
 * read from a copy of each plane with its padding in place. */
struct window {
	const float *x;
	float *out, *work;      /* work: `parts` planes of Hp x Wp floats */
	int64_t H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
	int64_t Hp, Wp;         /* the planes that the windows reach, from (-ph, -pw) on */
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
	return __builtin_shuffle(a, b, (v4i){ 0, 2, 4, 6 });
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

static bool host_window(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	const struct ir_shape *xs = &k->shape[0], *os = &k->shape[1];
	const struct ir_attrs *a = &k->a;
	int n = xs->rank;
	if (k->dtype[0] != IR_F32 || k->dtype[1] != IR_F32 || n < 2)
		return false;
	for (int d = 0; d < n - 2; d++)
		if (a->window.v[d] != 1 || a->stride.v[d] != 1 || a->pad_lo.v[d] != 0 || os->dims[d] != xs->dims[d])
			return false;
	struct window c = { .H = xs->dims[n - 2], .W = xs->dims[n - 1], .OH = os->dims[n - 2], .OW = os->dims[n - 1],
			    .KH = a->window.v[n - 2], .KW = a->window.v[n - 1], .sh = a->stride.v[n - 2],
			    .sw = a->stride.v[n - 1], .ph = a->pad_lo.v[n - 2], .pw = a->pad_lo.v[n - 1],
			    .dh = a->dilation.v[n - 2], .dw = a->dilation.v[n - 1], .max = k->op == IR_OP_WINDOW_MAX };
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
	size_t es;              /* bytes of an element */
	size_t ost[IR_MAX_RANK], ist[IR_MAX_RANK]; /* bytes between indices of dim d */
	float f;                /* the fill, in f32 unless zero */
	uint32_t fbits;         /* its bits, for 4-byte elements (0 when zero) */
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
static void pad_rows(const struct pad *c, char *restrict out, const char *restrict in, int64_t count,
		     size_t opitch, size_t ipitch)
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

static bool host_pad(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	struct pad c = { .xs = &k->shape[0], .os = &k->shape[1], .a = &k->a, .e = -1,
			 .es = ir_dtype_size(k->dtype[0]), .f = (float)k->a.value };
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

/* The ops above on kernel k (one op), buffers buf (operands, result). */
static bool host_op(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	if (k->op == IR_OP_DOT)
		return host_dot(r, k, buf);
	if (k->op == IR_OP_CONV)
		return host_conv(r, k, buf);
	if (k->op == IR_OP_WINDOW_MAX || k->op == IR_OP_WINDOW_SUM)
		return host_window(r, k, buf);
	return k->op == IR_OP_PAD && host_pad(r, k, buf);
}

/* The library core of fused kernel k (plan_kernel_core), its first body
 * op, as a kernel of its own over k's buffers buf (operands, result):
 * host_op's if it runs it, else the reference kernel's,
 * written into k's result buffer. */
static int run_core(struct rt *r, const struct plan_kernel *k, void *const *buf)
{
	const struct plan_fop *f = &k->body[0];
	enum ir_dtype dt[PLAN_FOP_MAX_IN + 1];
	struct ir_shape sh[PLAN_FOP_MAX_IN + 1];
	struct ir_tensor tin[PLAN_FOP_MAX_IN], tout;
	void *cbuf[PLAN_FOP_MAX_IN + 1];
	for (int j = 0; j < f->nin; j++) {
		dt[j] = k->dtype[f->in[j]];
		sh[j] = k->shape[f->in[j]];
		cbuf[j] = buf[f->in[j]];
		tin[j] = (struct ir_tensor){ dt[j], sh[j], cbuf[j] };
	}
	dt[f->nin] = f->dtype;
	sh[f->nin] = f->shape;
	cbuf[f->nin] = buf[k->nin];
	struct plan_kernel c = { .op = f->op, .a = f->a, .nin = f->nin, .nout = 1, .dtype = dt, .shape = sh };
	if (host_op(r, &c, cbuf))
		return 0;
	int rc = interp_kernel(&c, tin, &tout);
	if (rc < 0)
		return rc;
	memcpy(buf[k->nin], tout.data, ir_tensor_bytes(&tout));
	ir_tensor_free(&tout);
	return 0;
}

bool rt_kernel_host(struct rt *r, const struct plan_instr *x, int *rc)
{
	*rc = 0;
	if (!r->fn)
		return false;
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	void *args[66];
	if (k->nin > 64)
		return false;
	for (int j = 0; j <= k->nin; j++)
		args[j] = rt_buf(r, &r->d->buf[r->d->args[x->arg + j]]);
	if (!r->fn[x->kernel])
		return !k->nbody && host_op(r, k, args);
	if (k->nbody > 1 && plan_kernel_core(k) != IR_OP_COUNT) {
		/* a library call, then its epilogue in place: the generated
		 * function reads the call's result as operand nin */
		if ((*rc = run_core(r, k, args)) < 0)
			return true;
		args[k->nin + 1] = args[k->nin];
	}
	struct call c = { r->fn[x->kernel], args };
	int64_t rows = k->rows, per = rows ? ir_shape_numel(&k->shape[k->nin]) / rows : 1;
	int64_t grain = 32768 / (per > 0 ? per : 1);
	pool_run(r->pool, chunk, &c, rows, grain > 0 ? grain : 1);
	return true;
}
