/*
 * igemm.c: pcc-run's convolution gemm (runtime/kernels_igemm.c) against
 * OpenBLAS's sgemm on the gemm shapes of ResNet-50's convolutions at
 * batch 1, one thread, weights cold as in a forward pass (a different
 * copy of A, from a 64 MB rotation, each run; B, its rows contiguous,
 * and C stay in cache).
 *
 *	build/benchmarks/pcc-igemm-bench [RUNS]
 *
 * Prints per shape M x N x K (output channels x positions x Cin*KH*KW) the
 * median GFLOP/s of each over RUNS runs (default 9), interleaved run by
 * run, and their ratio; exits 77 without AVX-512F.
 */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/kernels_igemm.h"

#define ROTATION_BYTES (64L << 20)
#define MAX_RUNS 99

void openblas_set_num_threads(int n);

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One shape: median GFLOP/s of igemm and sgemm, in *ig and *sg. */
static int bench(int64_t M, int64_t N, int64_t K, int runs, double *ig, double *sg)
{
	int64_t na = M * K, copies = ROTATION_BYTES / (na * 4) + 1;
	float *a = malloc((size_t)(na * copies) * sizeof *a), *b = malloc((size_t)(K * N) * sizeof *b);
	float *c = malloc((size_t)(M * N) * sizeof *c);
	int64_t *off = malloc((size_t)K * sizeof *off);
	if (!a || !b || !c || !off) {
		free(a), free(b), free(c), free(off);
		return -1;
	}
	for (int64_t i = 0; i < na * copies; i++)
		a[i] = (float)(i % 31) / 31.0f - 0.5f;
	for (int64_t i = 0; i < K * N; i++)
		b[i] = (float)(i % 17) / 17.0f - 0.5f;
	for (int64_t k = 0; k < K; k++)
		off[k] = k * N;
	double ti[MAX_RUNS], ts[MAX_RUNS], flop = 2.0 * (double)(M * N * K);
	for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
		const float *ar = a + (2 * r + 2) % copies * na, *as = a + (2 * r + 3) % copies * na;
		struct rt_igemm g = { .a = ar, .b = b, .off = off, .c = c, .M = M, .N = N, .K = K, .lda = K, .ldc = N };
		double t0 = now();
		rt_igemm_block(&g, 0, M, 0, N);
		double t1 = now();
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, as, (int)K, b,
			    (int)N, 0.0f, c, (int)N);
		double t2 = now();
		if (r >= 0) {
			ti[r] = flop / (t1 - t0) * 1e-9;
			ts[r] = flop / (t2 - t1) * 1e-9;
		}
	}
	*ig = median(ti, runs);
	*sg = median(ts, runs);
	free(a), free(b), free(c), free(off);
	return 0;
}

int main(int argc, char **argv)
{
	/* M (output channels), N (positions; 3x3 stride-1 convolutions run
	 * wide, over OH x (OW + 2)), K (input channels x kernel) */
	static const int64_t shapes[][3] = {
		{ 64, 12544, 147 },                                                             /* stem 7x7/2 */
		{ 64, 3136, 64 },   { 64, 3248, 576 },  { 256, 3136, 64 },  { 64, 3136, 256 },  /* 56x56 */
		{ 128, 784, 256 },  { 128, 840, 1152 }, { 512, 784, 128 },  { 128, 784, 512 },  /* 28x28 */
		{ 256, 196, 512 },  { 256, 224, 2304 }, { 1024, 196, 256 }, { 256, 196, 1024 }, /* 14x14 */
		{ 512, 49, 1024 },  { 512, 63, 4608 },  { 2048, 49, 512 },  { 512, 49, 2048 },  /* 7x7 */
	};
	int runs = argc > 1 ? atoi(argv[1]) : 9;
	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "pcc-igemm-bench: RUNS must be 1 to %d\n", MAX_RUNS);
		return 2;
	}
	if (!rt_igemm_available()) {
		printf("pcc-igemm-bench: this CPU has no AVX-512F: igemm does not run here\n");
		return 77;
	}
	openblas_set_num_threads(1);
	printf("| M x N x K | igemm GFLOP/s | sgemm GFLOP/s | igemm/sgemm |\n|---|---|---|---|\n");
	double lr = 0;
	int n = (int)(sizeof shapes / sizeof *shapes);
	for (int i = 0; i < n; i++) {
		double ig, sg;
		if (bench(shapes[i][0], shapes[i][1], shapes[i][2], runs, &ig, &sg) < 0) {
			fprintf(stderr, "pcc-igemm-bench: out of memory\n");
			return 1;
		}
		printf("| %lld x %lld x %lld | %.1f | %.1f | %.2f |\n", (long long)shapes[i][0],
		       (long long)shapes[i][1], (long long)shapes[i][2], ig, sg, ig / sg);
		lr += ig / sg;
	}
	printf("mean igemm/sgemm over %d shapes: %.2f (median of %d runs each, one thread)\n", n, lr / n, runs);
	return 0;
}
