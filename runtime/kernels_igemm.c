/*
 * kernels_igemm.c: an f32 gemm that reads its operands where they lie
 * (kernels_igemm.h), for the convolutions of kernels_gemm.c.
 *
 * Why not sgemm: OpenBLAS packs both operands into its own layout on
 * every call. At batch 1 the weights are the big operand (ResNet-50's
 * last 3x3 convolution multiplies 9.4 MB of weights by 49 columns), so
 * the packing costs about what the multiply does, and a convolution must
 * first build its column matrix (im2col) for sgemm to pack again.
 *
 * Here nothing is packed. C's tile of MR rows by up to NR columns lives
 * in 24 AVX-512 registers for a pass of KC steps of k (C is loaded back
 * for the next pass); each step k loads NR
 * floats of B's row k (one row of the column matrix, which for a
 * stride-1 convolution is a slice of the padded input: off[k] says
 * where, so the column matrix is never built) and broadcasts MR weights
 * from A's rows in place. Each C element is the sum over k in order, by
 * fused multiply-adds.
 *
 * Cache blocking (GotoBLAS's order, without its packing): for each pass
 * of KC steps of k, the rows go in blocks whose A (rows x KC) stays in L2;
 * within a block, for each tile of NR columns (its KC rows of B, 48 KB,
 * read from L2 once and then mostly from L1), every row tile of the block
 * in turn. B's tile is thus read once per block of rows and A's block once
 * per tile of columns. (The other order, row tiles outer over a chunk of
 * columns kept in L2, read B's chunk from L2 once per row tile: 10-20%
 * slower on a Zen 4 (1 MB L2) where A is deep and B narrow, as in
 * ResNet-50's 7x7 and 14x14 stages; benchmarks/igemm.c measures both
 * shapes.)
 *
 * The last 1 to TAIL_MAX columns past whole vectors (ResNet-50's 7x7
 * stage: 49 = 3 x 16 + 1; its 14x14: 196 = 12 x 16 + 4) are dot products
 * over k instead, each row of A against the column packed: a vector for
 * them would carry 1 to 4 useful lanes of 16 (the 49th column cost a
 * third of the tile's other 48). 78 -> 98 GFLOP/s on 512 x 49 x 2048, one
 * Zen 4 core (benchmarks/igemm.c).
 *
 * Needs AVX-512F (checked at run time by rt_igemm_available; callers fall
 * back to sgemm without it).
 */
#include <stdbool.h>
#include <stdint.h>

#include "runtime/kernels_igemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define MR 8 /* rows of a tile */
#define NV 3 /* vectors of 16 floats per tile row: NR = 48 columns */
#define NR (16 * NV)
_Static_assert(NR == IGEMM_NR, "igemm's tile width");
#define KC 256                    /* steps k per pass over C: B's rows a tile reads span at most KC pages */
#define A_BLOCK_BYTES (256 << 10) /* A's rows for a block of rows: a quarter of a 1 MB L2 */
#define TAIL_MAX IGEMM_TAIL_MAX

bool rt_igemm_available(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
}

/* The tile C[0..mr) x [0..16 * nv) (its last vector's lanes masked by
 * last) = A's mr rows times B's columns from col. mr and nv are
 * constants in each instance below, so the loops unroll and acc stays in
 * registers. */
static inline __attribute__((always_inline, target("avx512f"))) void
tile(const int mr, const int nv, const float *restrict a, int64_t lda, const float *restrict b,
     const int64_t *restrict off, int64_t K, float *restrict c, int64_t ldc, __mmask16 last, bool add)
{
	__m512 acc[MR][NV];
#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			acc[i][v] = !add          ? _mm512_setzero_ps()
				    : v == nv - 1 ? _mm512_maskz_loadu_ps(last, c + i * ldc + 16 * v)
						  : _mm512_loadu_ps(c + i * ldc + 16 * v);
	for (int64_t k = 0; k < K; k++) {
		const float *bk = b + off[k];
		__m512 bv[NV];
#pragma GCC unroll 3
		for (int v = 0; v < nv; v++)
			bv[v] = v == nv - 1 ? _mm512_maskz_loadu_ps(last, bk + 16 * v) : _mm512_loadu_ps(bk + 16 * v);
#pragma GCC unroll 8
		for (int i = 0; i < mr; i++) {
			__m512 ai = _mm512_set1_ps(a[i * lda + k]);
#pragma GCC unroll 3
			for (int v = 0; v < nv; v++)
				acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
		}
	}
#pragma GCC unroll 8
	for (int i = 0; i < mr; i++)
#pragma GCC unroll 3
		for (int v = 0; v < nv; v++) {
			if (v == nv - 1)
				_mm512_mask_storeu_ps(c + i * ldc + 16 * v, last, acc[i][v]);
			else
				_mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
		}
}

typedef void tile_fn(const float *a, int64_t lda, const float *b, const int64_t *off, int64_t K, float *c, int64_t ldc,
		     __mmask16 last, bool add);

/* clang-format off */
#define TILE(R, V)                                                                                               \
	static __attribute__((target("avx512f"))) void tile_##R##_##V(const float *a, int64_t lda, const float *b, \
								       const int64_t *off, int64_t K, float *c,   \
								       int64_t ldc, __mmask16 last, bool add)     \
	{                                                                                                        \
		tile(R, V, a, lda, b, off, K, c, ldc, last, add);                                                \
	}
#define TILES(R) TILE(R, 1) TILE(R, 2) TILE(R, 3)
TILES(1) TILES(2) TILES(3) TILES(4) TILES(5) TILES(6) TILES(7) TILES(8)
#define ROW(R) { tile_##R##_1, tile_##R##_2, tile_##R##_3 }
static tile_fn *const tiles[MR][NV] = { ROW(1), ROW(2), ROW(3), ROW(4), ROW(5), ROW(6), ROW(7), ROW(8) };
/* clang-format on */

/* Rows [i0, i1) of C's nt (constant in each instance) columns from jt, as
 * dot products over this pass's nk steps, bt[q] column jt + q of B's
 * rows (packed): two rows at a time, a vector of 16 steps of k per
 * load of A, 2 nt accumulators. */
static inline __attribute__((always_inline, target("avx512f"))) void tail_dots(const int nt, const float *a,
									       int64_t lda, const float (*bt)[KC],
									       int64_t nk, float *c, int64_t ldc,
									       int64_t i0, int64_t i1, bool add)
{
	__mmask16 last = (__mmask16)(nk % 16 ? (1u << (nk % 16)) - 1 : 0xffffu);
	for (int64_t i = i0; i < i1; i += 2) {
		int rows = i1 - i < 2 ? 1 : 2;
		__m512 acc[2][TAIL_MAX];
		for (int r = 0; r < 2; r++)
#pragma GCC unroll 4
			for (int q = 0; q < nt; q++)
				acc[r][q] = _mm512_setzero_ps();
		for (int64_t k = 0; k < nk; k += 16) {
			__mmask16 m = k + 16 <= nk ? 0xffffu : last;
			__m512 a0 = _mm512_maskz_loadu_ps(m, a + i * lda + k);
			__m512 a1 = rows > 1 ? _mm512_maskz_loadu_ps(m, a + (i + 1) * lda + k) : _mm512_setzero_ps();
#pragma GCC unroll 4
			for (int q = 0; q < nt; q++) {
				__m512 bq = _mm512_maskz_loadu_ps(m, bt[q] + k);
				acc[0][q] = _mm512_fmadd_ps(a0, bq, acc[0][q]);
				acc[1][q] = _mm512_fmadd_ps(a1, bq, acc[1][q]);
			}
		}
		for (int r = 0; r < rows; r++)
#pragma GCC unroll 4
			for (int q = 0; q < nt; q++) {
				float *cq = c + (i + r) * ldc + q, v = _mm512_reduce_add_ps(acc[r][q]);
				*cq = add ? *cq + v : v;
			}
	}
}

/* clang-format off */
#define TAIL_DOTS(T)                                                                                            \
	static __attribute__((target("avx512f"))) void tail_dots_##T(const float *a, int64_t lda,              \
								      const float (*bt)[KC], int64_t nk, float *c, \
								      int64_t ldc, int64_t i0, int64_t i1, bool add) \
	{                                                                                                       \
		tail_dots(T, a, lda, bt, nk, c, ldc, i0, i1, add);                                              \
	}
TAIL_DOTS(1) TAIL_DOTS(2) TAIL_DOTS(3) TAIL_DOTS(4)
typedef void tail_fn(const float *a, int64_t lda, const float (*bt)[KC], int64_t nk, float *c, int64_t ldc,
		     int64_t i0, int64_t i1, bool add);
static tail_fn *const tails[TAIL_MAX] = { tail_dots_1, tail_dots_2, tail_dots_3, tail_dots_4 };
/* clang-format on */

void rt_igemm_block(const struct rt_igemm *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
	int64_t kc = g->K < KC ? g->K : KC;
	int64_t mc = kc > 0 ? A_BLOCK_BYTES / (4 * kc) / MR * MR : m1 - m0;
	mc = mc > MR ? mc : MR;
	/* the last few columns past whole vectors, as dot products: a vector
	 * for each would hold one to TAIL_MAX of them in its 16 lanes */
	int64_t nt = (n1 - n0) % 16 <= TAIL_MAX && g->K > 0 ? (n1 - n0) % 16 : 0, jt = n1 - nt;
	float bt[TAIL_MAX][KC];
	/* passes of kc steps; with K = 0, one pass that writes zeros */
	for (int64_t k0 = 0; k0 < g->K || (k0 == 0 && g->K == 0); k0 += kc > 0 ? kc : 1) {
		int64_t nk = g->K - k0 < kc ? g->K - k0 : kc;
		for (int64_t q = 0; q < nt; q++) {
			const float *bq = g->b + (g->panel ? (jt + q) / NR * g->panel + (jt + q) % NR : jt + q);
			for (int64_t k = 0; k < nk; k++)
				bt[q][k] = bq[g->off[k0 + k]];
		}
		for (int64_t i0 = m0; i0 < m1; i0 += mc) {
			int64_t i1 = i0 + mc < m1 ? i0 + mc : m1;
			for (int64_t j = n0; j < jt; j += NR) {
				int64_t n = jt - j < NR ? jt - j : NR;
				int nv = (int)((n + 15) / 16);
				__mmask16 last = (__mmask16)(n % 16 ? (1u << (n % 16)) - 1 : 0xffffu);
				const float *b = g->panel ? g->b + j / NR * g->panel : g->b + j;
				for (int64_t i = i0; i < i1; i += MR) {
					int mr = i1 - i < MR ? (int)(i1 - i) : MR;
					tiles[mr - 1][nv - 1](g->a + i * g->lda + k0, g->lda, b, g->off + k0, nk,
							      g->c + i * g->ldc + j, g->ldc, last, k0 > 0);
				}
			}
			/* after the tiles, which brought the block's rows of A into cache */
			if (nt)
				tails[nt - 1](g->a + k0, g->lda, (const float(*)[KC])bt, nk, g->c + jt, g->ldc, i0, i1,
					      k0 > 0);
		}
	}
}
/* d[q] = s[2 q] for q < n, reading nothing past s[2 (n - 1)]: 16 at a
 * time from two loads, the even lanes picked by one permute. */
__attribute__((target("avx512f"))) void rt_igemm_stride2(float *restrict d, const float *restrict s, int64_t n)
{
	const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
	int64_t q = 0;
	for (; q + 16 <= n; q += 16) { /* s[2q] .. s[2q + 30]: the second load stops short of s[2q + 31] */
		__m512 lo = _mm512_loadu_ps(s + 2 * q), hi = _mm512_maskz_loadu_ps(0x7fff, s + 2 * q + 16);
		_mm512_storeu_ps(d + q, _mm512_permutex2var_ps(lo, even, hi));
	}
	if (q < n) { /* the last 2 (n - q) - 1 floats */
		int64_t m = 2 * (n - q) - 1;
		__mmask16 ml = (__mmask16)(m >= 16 ? 0xffffu : (1u << m) - 1),
			  mh = (__mmask16)(m > 16 ? (1u << (m - 16)) - 1 : 0);
		__m512 lo = _mm512_maskz_loadu_ps(ml, s + 2 * q), hi = _mm512_maskz_loadu_ps(mh, s + 2 * q + 16);
		_mm512_mask_storeu_ps(d + q, (__mmask16)((1u << (n - q)) - 1), _mm512_permutex2var_ps(lo, even, hi));
	}
}
#else
void rt_igemm_stride2(float *restrict d, const float *restrict s, int64_t n)
{
	for (int64_t q = 0; q < n; q++)
		d[q] = s[2 * q];
}

bool rt_igemm_available(void)
{
	return false;
}

void rt_igemm_block(const struct rt_igemm *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
	(void)g, (void)m0, (void)m1, (void)n0, (void)n1;
}
#endif
