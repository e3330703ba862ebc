/*
 * kernels_igemm.h: an f32 gemm on operands in place, with B's rows found
 * through an offset table (kernels_igemm.c):
 *
 *	C[i][j] = sum over k of A[i][k] * b[off[k] + j]
 *
 * for i in [0, M), j in [0, N); A row-major with row stride lda, C with
 * ldc. A convolution's B is its column matrix (off[k] = k * ncol) or,
 * with stride 1, the padded input itself (off[k] the offset of channel c,
 * kernel row kh and column kw).
 */
#ifndef PCC_RUNTIME_KERNELS_IGEMM_H
#define PCC_RUNTIME_KERNELS_IGEMM_H

#include <stdbool.h>
#include <stdint.h>

struct igemm {
	const float *a, *b;
	const int64_t *off; /* K offsets into b */
	float *c;
	int64_t M, N, K, lda, ldc;
};

/* Whether this CPU runs igemm_block (AVX-512F). */
bool igemm_available(void);

/* C's rows [m0, m1) and columns [n0, n1). */
void igemm_block(const struct igemm *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
#endif
