/*
 * kernels_gemm.c: the dots and convolutions pcc-run runs on the arena's
 * buffers (kernels.c):
 *
 * - a dot that is one batched gemm on its operands in place
 *   (gpu_plan_gemm): sgemm or dgemm into its result buffer (the LM head of
 *   GPT-2 small writes 26 MB), the matrices split over the pool's threads,
 *   or with fewer matrices than threads, blocks of rows or columns of each;
 *   an f32 one whose A is not transposed on igemm (kernels_igemm.c) where
 *   the CPU has AVX-512F: Debian 12's OpenBLAS (0.3.21) runs its AVX2
 *   Haswell kernel on a Zen 5, at about half igemm's 200 GFLOP/s on
 *   GPT-2's shapes. B is read in place, or packed into igemm's panels
 *   when transposed (attention's q . k^T), and an inference plan's
 *   parameter (a weight) is packed once, at its first use, and kept
 *   (struct rt_packed), as ONNX Runtime prepacks its weights;
 * - an f32 convolution with one or two spatial dims, per image and group,
 *   as interp_conv computes it: out (Og x P) = w (Og x Cg*KH*KW) * col
 *   (Cg*KH*KW x P), one gemm: igemm (kernels_igemm.c) on a CPU with
 *   AVX-512F, which packs nothing: a stride-1 convolution's col is never
 *   built (igemm reads each of its rows from the padded input through an
 *   offset table), a strided one's is built in igemm's panels of 48
 *   columns; else sgemm, on col as described next (ResNet-50 at batch 1
 *   spent about two thirds of its sgemm time packing, the weights most).
 *   With at least as many (image, group) items
 *   as threads, the threads take items; with fewer (a batch of one image
 *   at real sizes), each item is split across them: its column matrix by
 *   channels, its gemm by output channels or by columns, whichever is
 *   longer (ResNet-50 at batch 1, 2 threads: 250 -> 155 ms on a busy
 *   machine, 67 -> 52 ms on a quiet one). For dots and convolutions alike,
 *   OpenBLAS runs single-threaded inside the pool's threads: its own
 *   threads would compete with them for the cores, and spin on (yielding)
 *   long after each call. The column matrix is built in the pool's
 *   scratch memory from a copy of the input with its padding in place
 *   (no index table, no bounds checks); a 1x1 kernel with stride 1 and
 *   no padding needs none (the input is col);
 *   with stride 1, col runs over OH x Wp columns (Wp the padded width), so
 *   each of its rows is one slice of the padded input, and the junk
 *   columns are dropped from the result (conv_wide), unless the rows are
 *   short in a big gemm, where the junk would cost more to multiply than
 *   im2col's pieces to copy (ResNet-50's 14x14 and 7x7 stages: 14% and
 *   29% more columns; 51 -> 48 ms);
 * - an f32 convolution whose groups read one input channel each
 *   (depthwise, or a single-channel input): directly, a plane at a time,
 *   no gemm (depthwise, below).
 *
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

#include <cblas.h>

#include "runtime/gpu_plan.h"
#include "runtime/kernels_igemm.h"
#include "runtime/kernels_internal.h"
#include "runtime/pool.h"

/* OpenBLAS's thread count (weak: with another BLAS, these are NULL). */
int openblas_get_num_threads(void) __attribute__((weak));
void openblas_set_num_threads(int n) __attribute__((weak));

/* OpenBLAS to one thread while the pool's threads each make sgemm calls
 * (its own threads would compete with them for the cores, and spin on
 * after each call); returns the count to restore (1: nothing to do).
 * With a pool of one thread too: --threads 1 is one thread, and
 * OpenBLAS's idle workers, yielding in a loop after each call, took a
 * third of the CPU from MobileNetV3-small's step on a loaded machine. */
static int blas_single(const struct rt *r)
{
	(void)r;
	int n = openblas_get_num_threads ? openblas_get_num_threads() : 1;
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
	size_t es;      /* bytes of an element */
	int64_t pieces; /* per matrix */
	int64_t cols;   /* columns of C per piece when split by columns */
	bool by_rows;
	/* igemm's offsets of B's rows (NULL: sgemm): k * n with B in place,
	 * k * IGEMM_NR with B packed into panels (pb) */
	const int64_t *off;
	const float *pb; /* B packed: each matrix's columns in panels of IGEMM_NR */
	int64_t panel;   /* floats from one panel to the next */
};

/* A piece of one row or one column of C (m or n is 1) as a matrix-vector
 * product: sgemm on a vector runs its matrix path, packing the whole
 * matrix for one pass over it (ResNet-50's fc, 2048 x 1000, took 1.4 ms
 * where sgemv takes 0.3). y is zeroed first: gemv with beta 0 scales y,
 * and 0 times a NaN left in the arena is NaN. */
static void gemv(const struct dot *d, const char *ai, const char *bi, char *ci, blasint m, blasint n)
{
	const struct gpu_gemm *g = &d->g;
	blasint lda = (blasint)(g->ta ? g->m : g->k), ldb = (blasint)(g->tb ? g->k : g->n), ldc = (blasint)g->n;
	const char *mat, *x;
	enum CBLAS_TRANSPOSE t;
	blasint rows, cols, ld, incx, incy, len;
	if (m == 1) { /* y (n) = op(B)^T x, x row m0 of op(A) */
		mat = bi, x = ai, ld = ldb, incx = g->ta ? lda : 1, incy = 1, len = n;
		t = g->tb ? CblasNoTrans : CblasTrans;
		rows = g->tb ? n : (blasint)g->k, cols = g->tb ? (blasint)g->k : n;
	} else { /* y (m, column n0 of C) = op(A) x, x column n0 of op(B) */
		mat = ai, x = bi, ld = lda, incx = g->tb ? 1 : ldb, incy = ldc, len = m;
		t = g->ta ? CblasTrans : CblasNoTrans;
		rows = g->ta ? (blasint)g->k : m, cols = g->ta ? m : (blasint)g->k;
	}
	for (blasint i = 0; i < len; i++)
		memset(ci + (size_t)i * (size_t)incy * d->es, 0, d->es);
	if (d->es == sizeof(float))
		cblas_sgemv(CblasRowMajor, t, rows, cols, 1.0f, (const float *)mat, ld, (const float *)x, incx, 0.0f,
			    (float *)ci, incy);
	else
		cblas_dgemv(CblasRowMajor, t, rows, cols, 1.0, (const double *)mat, ld, (const double *)x, incx, 0.0,
			    (double *)ci, incy);
}

static void dot_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct dot *d = ctx;
	const struct gpu_gemm *g = &d->g;
	enum CBLAS_TRANSPOSE ta = g->ta ? CblasTrans : CblasNoTrans, tb = g->tb ? CblasTrans : CblasNoTrans;
	blasint lda = (blasint)(g->ta ? g->m : g->k), ldb = (blasint)(g->tb ? g->k : g->n), ldc = (blasint)g->n;
	/* one call per matrix for the chunk's consecutive pieces of it: each
	 * call packs its operands again (the LM head of GPT-2 small in pieces
	 * of 64 columns packed its 128 x 768 rows 786 times) */
	for (int64_t u = begin, next; u < end; u = next) {
		int64_t i = u / d->pieces, p = u % d->pieces, m0 = 0, m1 = g->m, n0 = 0, n1 = g->n;
		next = (i + 1) * d->pieces < end ? (i + 1) * d->pieces : end;
		int64_t q = p + next - u; /* pieces p .. q - 1 */
		if (d->pieces > 1 && d->by_rows) {
			m0 = p * DOT_ROW_BLOCK;
			m1 = q * DOT_ROW_BLOCK < g->m ? q * DOT_ROW_BLOCK : g->m;
		} else if (d->pieces > 1) {
			n0 = p * d->cols;
			n1 = q * d->cols < g->n ? q * d->cols : g->n;
		}
		/* rows m0.. of op(A): rows of A, or its columns when transposed; likewise B's columns */
		const char *ai = d->a + (size_t)(i * g->m * g->k + (g->ta ? m0 : m0 * g->k)) * d->es;
		const char *bi = d->b + (size_t)(i * g->k * g->n + (g->tb ? n0 * g->k : n0)) * d->es;
		char *ci = d->c + (size_t)(i * g->m * g->n + m0 * g->n + n0) * d->es;
		blasint m = (blasint)(m1 - m0), n = (blasint)(n1 - n0), k = (blasint)g->k;
		if (m == 1 || n == 1) {
			gemv(d, ai, bi, ci, m, n);
			continue;
		}
		if (d->off) { /* B packed, or in place with its rows n floats apart; the piece's columns from n0 */
			const float *b = d->pb ? d->pb + i * ceil_div(g->n, IGEMM_NR) * d->panel
					       : (const float *)bi - n0;
			struct rt_igemm ig = { (const float *)ai, b, d->off, (float *)ci - n0, m, g->n, g->k, lda, ldc,
					       d->panel };
			rt_igemm_block(&ig, 0, m, n0, n1);
			continue;
		}
		if (d->es == sizeof(float))
			cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, (const float *)ai, lda, (const float *)bi,
				    ldb, 0.0f, (float *)ci, ldc);
		else
			cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, (const double *)ai, lda, (const double *)bi,
				    ldb, 0.0, (double *)ci, ldc);
	}
}

/* B's batch of k x n matrices (op(B): stored n x k when tb) into igemm's
 * panels at dst: matrix i's columns j .. j + IGEMM_NR - 1 at dst + (i *
 * panels + j / IGEMM_NR) * k * IGEMM_NR, row by row (the last panel's
 * columns past n zero). */
static void pack_panels(const float *b, int64_t batch, int64_t k, int64_t n, bool tb, float *restrict dst)
{
	int64_t np = ceil_div(n, IGEMM_NR);
	for (int64_t i = 0; i < batch; i++, b += k * n)
		for (int64_t p = 0; p < np; p++) {
			float *d = dst + (i * np + p) * k * IGEMM_NR;
			int64_t j0 = p * IGEMM_NR, w = n - j0 < IGEMM_NR ? n - j0 : IGEMM_NR;
			if (w < IGEMM_NR)
				memset(d, 0, (size_t)(k * IGEMM_NR) * sizeof *d);
			if (tb) /* column j of op(B) is row j of b: k floats, each to its own row of the panel */
				for (int64_t j = 0; j < w; j++)
					for (int64_t q = 0; q < k; q++)
						d[q * IGEMM_NR + j] = b[(j0 + j) * k + q];
			else
				for (int64_t q = 0; q < k; q++)
					memcpy(d + q * IGEMM_NR, b + q * n + j0, (size_t)w * sizeof *d);
		}
}

/* Whether b is a parameter that no instruction writes: a whole PARAM
 * buffer of an inference plan on a CPU rank (loaded once, before the first
 * step), which a dot may then pack once for all its calls. */
static bool fixed_operand(const struct rt *r, const void *b, size_t bytes)
{
	if (!r->p || r->p->train || (r->dev && !r->dev->host_arena) || !r->d || !r->arena)
		return false;
	for (int j = 0; j < r->d->nbuf; j++) {
		const struct plan_buffer *x = &r->d->buf[j];
		if (x->bind == PLAN_BIND_PARAM && x->slots <= 1 && (size_t)x->bytes == bytes && rt_buf(r, x) == b)
			return true;
	}
	return false;
}

/* Fixed operand b of dot g packed into panels (pack_panels), once: kept
 * in r->packed until the plan is released. NULL when out of memory. */
static const float *packed_once(struct rt *r, const struct gpu_gemm *g, const float *b)
{
	for (int i = 0; i < r->npacked; i++) {
		const struct rt_packed *q = &r->packed[i];
		if (q->src == b && q->batch == g->batch && q->k == g->k && q->n == g->n && q->tb == g->tb)
			return q->data;
	}
	struct rt_packed *grown = ir_realloc(r->packed, (size_t)(r->npacked + 1) * sizeof *grown);
	float *data = ir_malloc((size_t)(g->batch * ceil_div(g->n, IGEMM_NR) * g->k * IGEMM_NR) * sizeof(float));
	if (grown)
		r->packed = grown;
	if (!grown || !data) {
		ir_free(data);
		return NULL;
	}
	pack_panels(b, g->batch, g->k, g->n, g->tb, data);
	r->packed[r->npacked++] = (struct rt_packed){ b, g->batch, g->k, g->n, g->tb, data };
	return data;
}

/* The dot x as interp_dot runs it, when it is one batched gemm in place,
 * across the pool's threads (dot_chunk). */
bool rt_host_dot(struct rt *r, const struct plan_kernel *k, void *const *buf)
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
	/* f32 whose A is not transposed on igemm, where the CPU has it:
	 * AVX-512 where this OpenBLAS may pick an AVX2 kernel (0.3.21 runs
	 * its Haswell kernel on a Zen 5: 2x slower); not a matrix-vector
	 * product (gemv runs those, on B as stored) */
	bool ig = d.es == sizeof(float) && !g->ta && g->k > 0 && g->m > 1 && g->n > 1 && rt_conv_igemm();
	d.cols = ig ? 2 * IGEMM_NR : DOT_COL_BLOCK;
	d.by_rows = g->m > g->n;
	if (g->batch < threads)
		d.pieces = d.by_rows ? ceil_div(g->m, DOT_ROW_BLOCK) : ceil_div(g->n, d.cols);
	/* a thread per at least ~64K multiply-adds */
	int64_t macs = g->k * (d.pieces == 1 ? g->m * g->n : d.by_rows ? DOT_ROW_BLOCK * g->n : g->m * d.cols);
	int64_t units = g->batch * d.pieces, grain = macs > 0 ? ceil_div(65536, macs) : units;
	if (units < 1)
		return true;
	if (ig) {
		/* B packed when transposed (igemm reads rows of op(B)) or fixed
		 * (then once): the offsets, then (not fixed) B in the scratch */
		bool fixed = fixed_operand(r, d.b, nb), pack = g->tb || fixed;
		size_t noff = ((size_t)g->k * sizeof(int64_t) + 63) / 64 * 64,
		       nf = pack && !fixed ? (size_t)(g->batch * ceil_div(g->n, IGEMM_NR) * g->k * IGEMM_NR) : 0;
		char *scratch = pool_scratch(r->pool, noff + nf * sizeof(float));
		if (!scratch || (fixed && !(d.pb = packed_once(r, g, (const float *)d.b))))
			return false;
		if (nf) {
			pack_panels((const float *)d.b, g->batch, g->k, g->n, g->tb, (float *)(scratch + noff));
			d.pb = (const float *)(scratch + noff);
		}
		int64_t *off = (int64_t *)scratch;
		for (int64_t i = 0; i < g->k; i++)
			off[i] = i * (pack ? IGEMM_NR : g->n);
		d.off = off;
		d.panel = pack ? g->k * IGEMM_NR : 0;
	}
	int blas = blas_single(r);
	pool_run(r->pool, dot_chunk, &d, units, grain);
	blas_restore(blas);
	return true;
}

/* A convolution with two spatial dims (one: H = KH = 1), per image and
 * group: out (Og x P) = w (Og x CK) * col (CK x ncol). */
struct conv {
	const float *x, *w;
	float *out, *work; /* work: nthreads blocks of `block` floats */
	int64_t *off;      /* igemm's row offsets into B (col, or xp when wide) */
	int64_t N, C, O, G, Cg, Og, H, W, KH, KW, OH, OW, P, CK;
	int64_t sh, sw, ph, pw, dh, dw;
	int64_t Hp, Wp; /* the input plane with its padding */
	int64_t Wq;     /* depthwise with stride: the width of a column phase of the padded plane */
	int64_t ncol;   /* columns of the gemm: P, or OH * Wp when wide */
	int64_t items, nthreads, block, slack;
	bool direct;             /* 1x1, stride 1, no padding: col is the input */
	bool padded;             /* im2col reads a zero-padded copy of the input */
	bool wide;               /* stride 1: the gemm runs over OH x Wp columns */
	bool ig;                 /* igemm, not sgemm: no column matrix when wide */
	bool panels;             /* igemm's column matrix, in panels of IGEMM_NR columns */
	struct rt_epilogue *epi; /* run on blocks of output channels once final; NULL: none */
	int64_t epi_rows;        /* its rows per output channel: OH, or 1 (a plane a row) */
	/* split_item's: the item that the threads share, its work areas */
	int64_t item;
	const float *xi, *wi;
	float *oi, *col, *xp, *cw;
	bool by_rows; /* its gemm split by output channels, else by columns */
};

#define CONV_ROW_BLOCK 16 /* output channels per piece of a split gemm: sgemm's unroll divides it */
#define CONV_COL_BLOCK 64 /* columns per piece of a split gemm (not wide) */
/* columns per piece of a split igemm: one tile (a piece costs nothing to
 * start, and the threads' shares then differ by a tile at most) */
#define IGEMM_COL_BLOCK IGEMM_NR
#define WIDE_ROW_MIN 16             /* output rows this long run wide at any size */
#define EPI_BLOCK_BYTES (128 << 10) /* result computed, then finished (epilogue), at a time: it stays in L2 */
#define WIDE_MACS_MAX (1 << 20)     /* items under this many multiply-adds run wide at any row length */
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

/* Panels [t0, t1) of the column matrix (c->panels), x the item's planes
 * (padded or not, as for im2col): panel t holds columns t * IGEMM_NR on,
 * row after row, IGEMM_NR floats each, so that igemm's tile reads it in
 * order (a row of the plain column matrix is P floats long: its tiles'
 * rows were a page or more apart). Columns past P are zeros. */
static void im2col_panels(const struct conv *c, const float *x, float *restrict col, int64_t t0, int64_t t1)
{
	for (int64_t t = t0; t < t1; t++) {
		int64_t p0 = t * IGEMM_NR, n = c->P - p0 < IGEMM_NR ? c->P - p0 : IGEMM_NR;
		float *dst = col + t * c->CK * IGEMM_NR;
		const float *plane = x;
		for (int64_t ch = 0; ch < c->Cg; ch++, plane += c->Hp * c->Wp)
			for (int64_t kh = 0; kh < c->KH; kh++)
				for (int64_t kw = 0; kw < c->KW; kw++, dst += IGEMM_NR) {
					const float *s = plane + kh * c->dh * c->Wp + kw * c->dw;
					/* the tile's columns, a run of one output row at a time */
					for (int64_t j = 0, p = p0; j < n;) {
						int64_t oh = p / c->OW, ow = p % c->OW;
						int64_t run = c->OW - ow < n - j ? c->OW - ow : n - j;
						const float *r = s + oh * c->sh * c->Wp + ow * c->sw;
						if (c->sw == 1)
							copy_floats(dst + j, r, run);
						else if (c->sw == 2)
							rt_igemm_stride2(dst + j, r, run);
						else
							for (int64_t q = 0; q < run; q++)
								dst[j + q] = r[q * c->sw];
						j += run;
						p += run;
					}
					for (int64_t j = n; j < IGEMM_NR; j++)
						dst[j] = 0;
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
static void compact(const struct conv *c, const float *cw, float *out, int64_t o0, int64_t o1, int64_t h0, int64_t h1)
{
	for (int64_t o = o0; o < o1; o++)
		for (int64_t oh = h0; oh < h1; oh++)
			copy_floats(out + o * c->P + oh * c->OW, cw + o * c->ncol + oh * c->Wp, c->OW);
}

/* Output channels [o0, o1) and columns [j0, j1) of dst = w * B, B the
 * column matrix (or, c->ig and wide, the padded planes xp read through
 * c->off). */
static void conv_gemm(const struct conv *c, const float *w, const float *b, float *dst, int64_t o0, int64_t o1,
		      int64_t j0, int64_t j1)
{
	if (c->ig) {
		struct rt_igemm g = { .a = w,
				      .b = b,
				      .off = c->off,
				      .c = dst,
				      .K = c->CK,
				      .lda = c->CK,
				      .ldc = c->ncol,
				      .panel = c->panels ? c->CK * IGEMM_NR : 0 };
		rt_igemm_block(&g, o0, o1, j0, j1);
		return;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(o1 - o0), (blasint)(j1 - j0), (blasint)c->CK,
		    1.0f, w + o0 * c->CK, (blasint)c->CK, b + j0, (blasint)c->ncol, 0.0f, dst + o0 * c->ncol + j0,
		    (blasint)c->ncol);
}

#define PANEL_GROUP 4 /* panels built, then multiplied, at a time: they are read back from L1/L2 */

/* Output channels [o0, o1) and tiles [t0, t1) of out = w * col, the
 * panels of col built from x a few at a time just before their multiply
 * (the whole column matrix, 7.4 MB for ResNet-50's stem, went out to
 * memory and back). */
static void panels_gemm(const struct conv *c, const float *x, const float *w, float *col, float *out, int64_t o0,
			int64_t o1, int64_t t0, int64_t t1)
{
	for (int64_t t = t0; t < t1; t += PANEL_GROUP) {
		int64_t u = t + PANEL_GROUP < t1 ? t + PANEL_GROUP : t1;
		im2col_panels(c, x, col, t, u);
		conv_gemm(c, w, col, out, o0, o1, t * IGEMM_NR, u * IGEMM_NR < c->P ? u * IGEMM_NR : c->P);
	}
}

/* Floats of a work area's column matrix: none when the gemm reads its
 * input in place. */
static int64_t col_floats(const struct conv *c)
{
	return c->direct || (c->ig && c->wide) ? 0
	       : c->panels                     ? ceil_div(c->P, IGEMM_NR) * IGEMM_NR * c->CK
					       : c->CK * c->ncol;
}

/* The epilogue (c->epi) on output channels [o0, o1) of item (image,
 * group) i: epi_rows rows of the result each. */
static void conv_epilogue(const struct conv *c, int64_t i, int64_t o0, int64_t o1)
{
	if (!c->epi)
		return;
	int64_t r0 = (i / c->G * c->O + i % c->G * c->Og + o0) * c->epi_rows;
	c->epi->fn(c->epi->args, r0, r0 + (o1 - o0) * c->epi_rows);
}

/* Output channels [o0, o1) of item i, whole: dst = w * b (all columns;
 * dst is the wide result when c->wide, then compacted into out), then
 * the epilogue; in blocks of channels that stay in cache between the two
 * when igemm runs it (sgemm would pack b again for each). */
static void finish_rows(const struct conv *c, int64_t i, const float *w, const float *b, float *dst, float *out,
			int64_t o0, int64_t o1)
{
	int64_t blk = o1 - o0;
	if (c->epi && c->ig) {
		blk = EPI_BLOCK_BYTES / (int64_t)sizeof(float) / c->ncol / 8 * 8;
		blk = blk > 8 ? blk : 8;
	}
	for (int64_t a = o0, e; a < o1; a = e) {
		e = a + blk < o1 ? a + blk : o1;
		conv_gemm(c, w, b, dst, a, e, 0, c->ncol);
		if (c->wide)
			compact(c, dst, out, a, e, 0, c->OH);
		conv_epilogue(c, i, a, e);
	}
}

/* Thread t's share of the (image, group) items. */
static void conv_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	for (int64_t t = begin; t < end; t++) {
		float *col = NULL, *xp = NULL, *cw = NULL; /* no work area for a direct 1x1 */
		if (c->work) {
			col = c->work + (size_t)(t * c->block);
			xp = col + col_floats(c);
			cw = xp + c->Cg * c->Hp * c->Wp + c->slack;
		}
		for (int64_t i = t * c->items / c->nthreads; i < (t + 1) * c->items / c->nthreads; i++) {
			int64_t b = i / c->G, g = i % c->G;
			const float *x = c->x + (b * c->C + g * c->Cg) * c->H * c->W, *w = c->w + g * c->Og * c->CK;
			float *out = c->out + (b * c->O + g * c->Og) * c->P;
			if (c->padded)
				pad_input(c, x, xp);
			if (c->wide) {
				if (!c->ig)
					for (int64_t ch = 0; ch < c->Cg; ch++)
						wide_rows(c, xp + ch * c->Hp * c->Wp,
							  col + ch * c->KH * c->KW * c->ncol);
				finish_rows(c, i, w, c->ig ? xp : col, cw, out, 0, c->Og);
				continue;
			}
			if (c->panels) {
				panels_gemm(c, c->padded ? xp : x, w, col, out, 0, c->Og, 0, ceil_div(c->P, IGEMM_NR));
				conv_epilogue(c, i, 0, c->Og);
				continue;
			}
			if (c->direct)
				col = (float *)x;
			else
				im2col(c, c->padded ? xp : x, col);
			finish_rows(c, i, w, col, out, out, 0, c->Og);
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
	if (c->panels) { /* [begin, end) are panels */
		im2col_panels(c, x, c->col, begin, end);
		return;
	}
	for (int64_t ch = begin; ch < end; ch++) {
		const float *plane = x + ch * c->Hp * c->Wp;
		float *rows = c->col + ch * c->KH * c->KW * c->ncol;
		if (c->wide)
			wide_rows(c, plane, rows);
		else
			im2col_plane(c, plane, rows);
	}
}

/* The columns of a piece of a split gemm: sgemm's wide pieces are whole
 * output rows (each piece compacts its own); igemm's are whole tiles, and
 * its wide result is compacted after (compact_chunk). */
static int64_t col_unit(const struct conv *c)
{
	return c->ig ? IGEMM_COL_BLOCK : c->wide ? c->Wp : CONV_COL_BLOCK;
}

/* Pieces [begin, end) of the item's gemm: output channels in blocks of
 * CONV_ROW_BLOCK (by_rows: whole, epilogue included), else blocks of
 * col_unit columns. */
static void gemm_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	const float *b = c->direct ? c->xi : c->ig && c->wide ? c->xp : c->col;
	if (c->by_rows) {
		int64_t o1 = end * CONV_ROW_BLOCK < c->Og ? end * CONV_ROW_BLOCK : c->Og;
		finish_rows(c, c->item, c->wi, b, c->wide ? c->cw : c->oi, c->oi, begin * CONV_ROW_BLOCK, o1);
		return;
	}
	if (c->panels) { /* pieces are tiles: each builds its own panels */
		panels_gemm(c, c->padded ? c->xp : c->xi, c->wi, c->col, c->oi, 0, c->Og, begin, end);
		return;
	}
	int64_t unit = col_unit(c), j0 = begin * unit, j1 = end * unit < c->ncol ? end * unit : c->ncol;
	conv_gemm(c, c->wi, b, c->wide ? c->cw : c->oi, 0, c->Og, j0, j1);
	if (c->wide && !c->ig)
		compact(c, c->cw, c->oi, 0, c->Og, j0 / c->Wp, j1 / c->Wp);
}

/* After a gemm split by columns: output channels [begin, end) compacted
 * (igemm's wide result), then finished (the epilogue). */
static void compact_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	if (c->ig && c->wide)
		compact(c, c->cw, c->oi, begin, end, 0, c->OH);
	conv_epilogue(c, c->item, begin, end);
}

/* Items one at a time, each across the pool's threads (fewer items than
 * threads: a batch of one image): its padded input and column matrix
 * split by channels, its gemm by output channels or by columns, whichever
 * is longer (each piece packs the whole of the other operand). */
static void split_items(struct rt *r, struct conv *c)
{
	c->col = c->work;
	c->xp = c->col ? c->col + col_floats(c) : NULL;
	c->cw = c->xp ? c->xp + c->Cg * c->Hp * c->Wp + c->slack : NULL;
	/* with an epilogue, igemm splits by output channels when they make
	 * two pieces a thread: each piece is then final, and finished while
	 * it is in cache (igemm packs nothing, so no operand is packed again) */
	int threads = pool_threads(r->pool);
	c->by_rows = c->Og > c->ncol ||
		     (c->epi && c->ig && !c->panels && ceil_div(c->Og, CONV_ROW_BLOCK) >= 2 * threads);
	int64_t unit = col_unit(c);
	int64_t pieces = c->by_rows ? ceil_div(c->Og, CONV_ROW_BLOCK) : ceil_div(c->ncol, unit);
	int64_t macs = c->CK * (c->by_rows ? CONV_ROW_BLOCK * c->ncol : c->Og * unit);
	/* a thread per at least ~64K multiply-adds, or ~8K floats copied */
	int64_t grain = ceil_div(65536, macs), pgrain = ceil_div(8192, c->Hp * c->Wp),
		cgrain = ceil_div(8192, c->KH * c->KW * c->ncol);
	for (int64_t i = 0; i < c->items; i++) {
		int64_t b = i / c->G, g = i % c->G;
		c->item = i;
		c->xi = c->x + (b * c->C + g * c->Cg) * c->H * c->W;
		c->wi = c->w + g * c->Og * c->CK;
		c->oi = c->out + (b * c->O + g * c->Og) * c->P;
		if (c->padded) {
			pool_run(r->pool, pad_chunk, c, c->Cg, pgrain);
			memset(c->xp + c->Cg * c->Hp * c->Wp, 0, (size_t)c->slack * sizeof *c->xp);
		}
		if (c->panels) { /* by columns, gemm_chunk builds its own */
			if (c->by_rows)
				pool_run(r->pool, col_chunk, c, ceil_div(c->P, IGEMM_NR),
					 ceil_div(8192, c->CK * IGEMM_NR));
		} else if (!c->direct && !(c->ig && c->wide)) {
			pool_run(r->pool, col_chunk, c, c->Cg, cgrain);
		}
		pool_run(r->pool, gemm_chunk, c, pieces, grain);
		if (!c->by_rows && ((c->ig && c->wide) || c->epi))
			pool_run(r->pool, compact_chunk, c, c->Og, ceil_div(8192, c->P));
	}
}

/* ---- depthwise ---------------------------------------------------------- */

typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));

/* Extra floats after a padded plane: reads of a last block of up to 16
 * outputs run past the plane's end (into zeros; those lanes are dropped). */
#define DEPTHWISE_SLACK(c) (16 * (c)->sw + (c)->Wp + 16)
/* ... and after the wide plane, which a last vector may overrun by 15 */
#define WIDE_SLACK 16

/* a0..a3 += wk times the vectors at p, p + stride, p + 2 stride, p + 3
 * stride: four independent sums in four registers (an array of four in
 * a loop GCC kept on the stack, each add waiting on the last store) */
#define DEPTHWISE_FMA4(V, a0, a1, a2, a3, wk, p, stride)     \
	do {                                                 \
		const float *p_ = (p), w_ = (wk);            \
		V v0_, v1_, v2_, v3_;                        \
		memcpy(&v0_, p_, sizeof v0_);                \
		memcpy(&v1_, p_ + (stride), sizeof v1_);     \
		memcpy(&v2_, p_ + 2 * (stride), sizeof v2_); \
		memcpy(&v3_, p_ + 3 * (stride), sizeof v3_); \
		a0 += w_ * v0_;                              \
		a1 += w_ * v1_;                              \
		a2 += w_ * v2_;                              \
		a3 += w_ * v3_;                              \
	} while (0)

/* One depthwise plane, out (OH x OW), from xp, its input channel with the
 * padding in place (Hp x Wp: no tap needs a bounds check): each output
 * is the sum over taps k of w[k] times xp at off[k] from the output's
 * window corner, L outputs at a time (a vector V), the sum in a register
 * across the taps, four vectors at a time (four independent chains of
 * fused multiply-adds: one alone waits out each add's latency, which
 * made the 5x5 planes of MobileNetV3-small 4x slower than the loads
 * allow). With stride 1, the L are consecutive positions of the
 * wide plane (OH x Wp, the junk columns past OW included, as conv_wide),
 * each tap one contiguous load, and the rows are compacted into out
 * after; else L consecutive outputs of a row, four rows at a time, from
 * xp's column phases (depthwise_phases: with stride sw, the columns ph,
 * ph + sw, ... of the padded plane, each phase Hp x Wq), each tap one
 * contiguous load from its phase too. (Gathering each tap's L values at
 * stride sw instead, lane by lane through the stack, took 3/4 of
 * MobileNetV3-small's depthwise time, in its four stride-2 convolutions.)
 * Compiled three times (DEPTHWISE_PLANE): 16 lanes for AVX-512F, 8 for
 * AVX2 with FMA and 8 for any x86-64 (SSE pairs there). */
#define DEPTHWISE_PLANE(NAME, ATTR, V, L)                                                                       \
	static ATTR void NAME(const struct conv *c, const float *xp, const float *w, const int64_t *off,        \
			      float *restrict wide, float *restrict out)                                        \
	{                                                                                                       \
		int64_t K = c->CK, Wp = c->Wp, OW = c->OW, OH = c->OH, Wq = c->Wq;                              \
		if (c->sh == 1 && c->sw == 1) {                                                                 \
			int64_t Q = (OH - 1) * Wp + OW, q = 0;                                                  \
			for (; q + 3 * L < Q; q += 4 * L) {                                                     \
				V a0 = { 0 }, a1 = { 0 }, a2 = { 0 }, a3 = { 0 };                               \
				for (int64_t k = 0; k < K; k++)                                                 \
					DEPTHWISE_FMA4(V, a0, a1, a2, a3, w[k], xp + q + off[k], L);            \
				memcpy(wide + q, &a0, sizeof a0);                                               \
				memcpy(wide + q + L, &a1, sizeof a1);                                           \
				memcpy(wide + q + 2 * L, &a2, sizeof a2);                                       \
				memcpy(wide + q + 3 * L, &a3, sizeof a3);                                       \
			}                                                                                       \
			for (; q < Q; q += L) {                                                                 \
				V acc = { 0 };                                                                  \
				for (int64_t k = 0; k < K; k++) {                                               \
					V v;                                                                    \
					memcpy(&v, xp + q + off[k], sizeof v);                                  \
					acc += w[k] * v;                                                        \
				}                                                                               \
				memcpy(wide + q, &acc, sizeof acc);                                             \
			}                                                                                       \
			for (int64_t oh = 0; oh < OH; oh++)                                                     \
				memcpy(out + oh * OW, wide + oh * Wp, (size_t)OW * sizeof *out);                \
			return;                                                                                 \
		}                                                                                               \
		int64_t step = c->sh * Wq;                                                                      \
		for (int64_t oh = 0; oh < OH;) {                                                                \
			int rows = OH - oh >= 4 ? 4 : 1;                                                        \
			const float *x0 = xp + oh * step;                                                       \
			for (int64_t j = 0; j < OW; j += L) {                                                   \
				V acc[4] = { { 0 } };                                                           \
				if (rows == 4) {                                                                \
					V a0 = { 0 }, a1 = { 0 }, a2 = { 0 }, a3 = { 0 };                       \
					for (int64_t k = 0; k < K; k++)                                         \
						DEPTHWISE_FMA4(V, a0, a1, a2, a3, w[k], x0 + off[k] + j, step); \
					acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;                     \
				} else {                                                                        \
					for (int64_t k = 0; k < K; k++) {                                       \
						V v;                                                            \
						memcpy(&v, x0 + off[k] + j, sizeof v);                          \
						acc[0] += w[k] * v;                                             \
					}                                                                       \
				}                                                                               \
				for (int u = 0; u < rows; u++) {                                                \
					float *o = out + (oh + u) * OW + j;                                     \
					if (j + L <= OW)                                                        \
						memcpy(o, &acc[u], sizeof acc[u]);                              \
					else                                                                    \
						for (int64_t l = 0; j + l < OW; l++)                            \
							o[l] = acc[u][l];                                       \
				}                                                                               \
			}                                                                                       \
			oh += rows;                                                                             \
		}                                                                                               \
	}
DEPTHWISE_PLANE(depthwise_plane_avx512, __attribute__((target("avx512f"))), v16f, 16)
DEPTHWISE_PLANE(depthwise_plane_avx2, __attribute__((target("avx2,fma"))), v8f, 8)
DEPTHWISE_PLANE(depthwise_plane, , v8f, 8)

/* Which depthwise_plane runs: 2 AVX-512F, 1 AVX2 and FMA, 0 the portable
 * one; -1 not asked yet (depthwise sets it before its threads start). */
static int depthwise_isa = -1;

/* Extra floats after the column phases: a last vector of up to 16
 * outputs reads up to 15 past the last phase's end (those lanes are
 * dropped). */
#define PHASE_SLACK 32

/* Input plane x (H x W), padded (Hp x Wp, x at (ph, pw)), as its sw
 * column phases into xq: phase q holds the padded plane's columns q, q +
 * sw, ... of each row, Wq of them (zeros in the padding and past Wp), so
 * that every tap of a strided depthwise convolution reads consecutive
 * outputs' inputs from one phase. Built from x directly: padding the
 * plane first, then splitting it, took half of a stride-2 depthwise
 * convolution's time. */
static void depthwise_phases(const struct conv *c, const float *x, float *restrict xq)
{
	int64_t sw = c->sw, Wq = c->Wq;
	for (int64_t q = 0; q < sw; q++) {
		/* phase columns [lo, hi) hold input columns j sw + q - pw */
		int64_t lo = c->pw > q ? (c->pw - q + sw - 1) / sw : 0;
		int64_t hi = c->W + c->pw > q ? (c->W + c->pw - q + sw - 1) / sw : 0;
		hi = hi < Wq ? hi : Wq;
		lo = lo < hi ? lo : hi;
		for (int64_t r = 0; r < c->Hp; r++) {
			float *d = xq + (q * c->Hp + r) * Wq;
			int64_t h = r - c->ph;
			if (h < 0 || h >= c->H) {
				memset(d, 0, (size_t)Wq * sizeof *d);
				continue;
			}
			const float *src = x + h * c->W + lo * sw + q - c->pw;
			memset(d, 0, (size_t)lo * sizeof *d);
			if (sw == 2 && depthwise_isa == 2)
				rt_igemm_stride2(d + lo, src, hi - lo);
			else
				for (int64_t j = 0; j < hi - lo; j++)
					d[lo + j] = src[j * sw];
			memset(d + hi, 0, (size_t)(Wq - hi) * sizeof *d);
		}
	}
}

/* Thread t's share of a depthwise result's planes, (image, output
 * channel) each: the input channel padded into t's work area (once for
 * the Og planes it feeds), the plane, then the epilogue on its rows. */
static void depthwise_chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct conv *c = ctx;
	int64_t planes = c->N * c->O;
	for (int64_t t = begin; t < end; t++) {
		float *xp = c->work + t * c->block, *wide = xp + c->Hp * c->Wp + DEPTHWISE_SLACK(c);
		/* with a column stride, the taps read xp's phases (xq) */
		float *xq = c->sw > 1 ? wide + c->OH * c->Wp + WIDE_SLACK : NULL, *x = xq ? xq : xp;
		int64_t padded = -1; /* the (image, group) now in xp */
		memset(xp + c->Hp * c->Wp, 0, (size_t)DEPTHWISE_SLACK(c) * sizeof *xp);
		if (xq)
			memset(xq + c->sw * c->Hp * c->Wq, 0, PHASE_SLACK * sizeof *xq);
		for (int64_t i = t * planes / c->nthreads; i < (t + 1) * planes / c->nthreads; i++) {
			int64_t b = i / c->O, o = i % c->O, bg = b * c->G + o / c->Og;
			if (bg != padded) {
				if (xq)
					depthwise_phases(c, c->x + bg * c->H * c->W, xq);
				else
					pad_plane(c, c->x + bg * c->H * c->W, xp);
				padded = bg;
			}
			const float *w = c->w + o * c->CK;
			float *out = c->out + i * c->P;
			if (depthwise_isa == 2)
				depthwise_plane_avx512(c, x, w, c->off, wide, out);
			else if (depthwise_isa == 1)
				depthwise_plane_avx2(c, x, w, c->off, wide, out);
			else
				depthwise_plane(c, x, w, c->off, wide, out);
			if (c->epi)
				c->epi->fn(c->epi->args, i * c->epi_rows, (i + 1) * c->epi_rows);
		}
	}
}

/* A convolution whose groups read one input channel each (depthwise,
 * any depth multiplier Og): as a gemm, each (image, group) item is Og
 * rows of CK = KH * KW, too small for sgemm or igemm to pay for their
 * column matrix, packing and calls; computed directly instead, a plane
 * at a time, summing the taps in another order than the gemm (within
 * rounding of it). False when out of memory. */
static bool depthwise(struct rt *r, struct conv *c)
{
	c->Hp = (c->OH - 1) * c->sh + (c->KH - 1) * c->dh + 1;
	c->Wp = (c->OW - 1) * c->sw + (c->KW - 1) * c->dw + 1;
	c->Hp = c->Hp > c->H + c->ph ? c->Hp : c->H + c->ph;
	c->Wp = c->Wp > c->W + c->pw ? c->Wp : c->W + c->pw;
	c->Wq = (c->Wp + c->sw - 1) / c->sw;
	c->block = c->Hp * c->Wp + DEPTHWISE_SLACK(c) + c->OH * c->Wp + WIDE_SLACK +
		   (c->sw > 1 ? c->sw * c->Hp * c->Wq + PHASE_SLACK : 0);
	if (depthwise_isa < 0) {
		__builtin_cpu_init();
		depthwise_isa = rt_igemm_available()                                              ? 2
				: __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1
												  : 0;
	}
	int64_t planes = c->N * c->O, cap = planes * c->P * c->CK / 65536;
	c->nthreads = pool_threads(r->pool);
	c->nthreads = c->nthreads < planes ? c->nthreads : planes;
	c->nthreads = c->nthreads < cap ? c->nthreads : cap > 1 ? cap : 1;
	size_t noff = ((size_t)c->CK * sizeof *c->off + 63) / 64 * 64;
	char *scratch = pool_scratch(r->pool, noff + (size_t)(c->nthreads * c->block) * sizeof(float));
	if (!scratch)
		return false;
	c->off = (int64_t *)scratch;
	c->work = (float *)(scratch + noff);
	/* tap (kh, kw) from the window's corner: in xp (Wq = Wp with sw 1),
	 * or in the phase (kw dw) mod sw of xq */
	for (int64_t kh = 0, k = 0; kh < c->KH; kh++)
		for (int64_t kw = 0; kw < c->KW; kw++)
			c->off[k++] = (kw * c->dw % c->sw * c->Hp + kh * c->dh) * c->Wq + kw * c->dw / c->sw;
	pool_run(r->pool, depthwise_chunk, c, c->nthreads, 1);
	return true;
}

/* Whether convolutions run on igemm: 1 yes, 0 no, -1 not asked yet
 * (rt_conv_paths_set sets it to check both paths). */
static int conv_igemm = -1;

/* igemm when the CPU has it, unless PCC_IGEMM=0 (sgemm: for comparisons). */
bool rt_conv_igemm(void)
{
	if (conv_igemm < 0) {
		const char *e = getenv("PCC_IGEMM");
		conv_igemm = rt_igemm_available() && !(e && !strcmp(e, "0"));
	}
	return conv_igemm;
}

void rt_conv_paths_set(int igemm, int depthwise)
{
	conv_igemm = igemm;
	depthwise_isa = depthwise;
}

/* igemm's row k of B: row k of the column matrix, or, when wide, the
 * slice of the padded planes that is that row (wide_rows' copy). */
static void conv_offsets(struct conv *c)
{
	int64_t k = 0;
	if (!c->wide) {
		for (; k < c->CK; k++)
			c->off[k] = c->panels ? k * IGEMM_NR : k * c->ncol;
		return;
	}
	for (int64_t ch = 0; ch < c->Cg; ch++)
		for (int64_t kh = 0; kh < c->KH; kh++)
			for (int64_t kw = 0; kw < c->KW; kw++)
				c->off[k++] = ch * c->Hp * c->Wp + kh * c->dh * c->Wp + kw * c->dw;
}

bool rt_host_conv(struct rt *r, const struct plan_kernel *k, void *const *buf, struct rt_epilogue *epi)
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
	/* the epilogue's rows are the result's (image, channel, output row),
	 * or with short output rows its (image, channel) planes */
	c.epi_rows = epi && c.N * c.O > 0 ? epi->rows / (c.N * c.O) : 0;
	c.epi = epi && (c.epi_rows == c.OH || c.epi_rows == 1) && epi->rows == c.N * c.O * c.epi_rows ? epi : NULL;
	if (c.Cg == 1) {
		if (!depthwise(r, &c))
			return false;
		if (c.epi)
			c.epi->done = true;
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
	/* junk columns cost (Wp - OW) / OW of the gemm: with sgemm, short rows
	 * of a big gemm are cheaper to gather (im2col) than to multiply. igemm
	 * reads the padded planes in place, so it goes wide unless that takes
	 * twice the vectors of 16 columns that P does: building the column
	 * matrix costs about what the junk lanes do (the resnet fixture's 8x8
	 * planes: 5 vectors against 4, wide 0.009 ms, im2col 0.016), but a
	 * weight gradient's 3x3 output from a 56-wide input takes 11 against 1.
	 * Nor when igemm's last few columns are dot products (P % 16 <=
	 * IGEMM_TAIL_MAX) and the whole vectors left are a quarter fewer, for
	 * 64 output channels or more: ResNet-50's 7x7 stage's 3x3 takes 3
	 * vectors and a dot against 4, 15% less time with its panels built */
	c.ig = rt_conv_igemm();
	int64_t wp = c.Wp > c.W + c.pw ? c.Wp : c.W + c.pw; /* Wp if wide, as set below */
	int64_t vwide = ceil_div(c.OH * wp, 16), vcol = ceil_div(c.P, 16);
	bool tail = c.P % 16 && c.P % 16 <= IGEMM_TAIL_MAX && 4 * (vwide - c.P / 16) >= vwide && c.Og >= 64;
	c.wide = !c.direct && c.sh == 1 && c.sw == 1 &&
		 (c.ig ? vwide <= 2 * vcol && !tail : c.OW >= WIDE_ROW_MIN || macs < WIDE_MACS_MAX);
	c.padded = c.wide || c.ph || c.pw || c.Hp > c.H || c.Wp > c.W;
	c.Hp = c.padded && c.Hp < c.H + c.ph ? c.H + c.ph : c.padded ? c.Hp : c.H;
	c.Wp = c.padded && c.Wp < c.W + c.pw ? c.W + c.pw : c.padded ? c.Wp : c.W;
	c.ncol = c.wide ? c.OH * c.Wp : c.P;
	c.panels = c.ig && !c.wide && !c.direct;
	if (c.ncol > INT32_MAX)
		return false;
	c.slack = c.wide ? (c.KW - 1) * c.dw : 0; /* the last junk columns read past the last plane */
	c.block = c.direct ? 0
		  : c.wide ? col_floats(&c) + c.Og * c.ncol + c.Cg * c.Hp * c.Wp + c.slack
			   : col_floats(&c) + (c.padded ? c.Cg * c.Hp * c.Wp : 0);
	/* the scratch: igemm's offsets, then the threads' work areas */
	size_t noff = c.ig ? ((size_t)c.CK * sizeof *c.off + 63) / 64 * 64 : 0;
	char *scratch = NULL;
	if ((noff || c.block) &&
	    !(scratch = pool_scratch(r->pool, noff + (size_t)(c.nthreads * c.block) * sizeof(float))))
		return false;
	c.off = noff ? (int64_t *)scratch : NULL;
	c.work = c.block ? (float *)(scratch + noff) : NULL;
	if (c.ig)
		conv_offsets(&c);
	int blas = blas_single(r);
	if (split)
		split_items(r, &c);
	else
		pool_run(r->pool, conv_chunk, &c, c.nthreads, 1);
	blas_restore(blas);
	if (c.epi)
		c.epi->done = true;
	return true;
}
