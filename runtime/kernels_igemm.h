/*
 * kernels_igemm.h: an f32 gemm on operands in place, with B's rows found
 * through an offset table (kernels_igemm.c):
 *
 *	C[i][j] = sum over k of A[i][k] * b[off[k] + j]
 *
 * for i in [0, M), j in [0, N); A row-major with row stride lda, C with
 * ldc. A convolution's B is, with stride 1, the padded input itself
 * (off[k] the offset of channel c, kernel row kh and column kw), else its
 * column matrix built in panels: with panel > 0, columns j to j + 47 (j a
 * multiple of IGEMM_NR) are read from b + j / IGEMM_NR * panel + off[k],
 * so that a tile's rows of B are contiguous (off[k] = k * IGEMM_NR).
 */
#ifndef PCC_RUNTIME_KERNELS_IGEMM_H
#define PCC_RUNTIME_KERNELS_IGEMM_H

#include <stdbool.h>
#include <stdint.h>

#define IGEMM_NR 48      /* columns of a tile */
#define IGEMM_TAIL_MAX 4 /* columns past the last whole vector of 16 computed as dot products, at most */

struct rt_igemm {
	const float *a, *b;
	const int64_t *off; /* K offsets into b */
	float *c;
	int64_t M, N, K, lda, ldc;
	int64_t panel; /* floats from one tile's panel of B to the next; 0: B's columns are contiguous */
};

/* Whether this CPU runs rt_igemm_block (AVX-512F). */
bool rt_igemm_available(void);

/* d[q] = s[2 q] for q < n (a stride-2 row of a column matrix), reading
 * nothing past s[2 (n - 1)]; needs rt_igemm_available() on x86. */
void rt_igemm_stride2(float *restrict d, const float *restrict s, int64_t n);

/* C's rows [m0, m1) and columns [n0, n1) (n0 a multiple of IGEMM_NR
 * when g->panel). */
void rt_igemm_block(const struct rt_igemm *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
#endif
