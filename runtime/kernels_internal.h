/*
 * kernels_internal.h: the ops pcc-run runs on the arena's buffers
 * (kernels.c dispatches to them), and what their files share.
 */
#ifndef PCC_RUNTIME_KERNELS_INTERNAL_H
#define PCC_RUNTIME_KERNELS_INTERNAL_H

#include <string.h>

#include "runtime/rt.h"

/* A fused kernel's epilogue (its generated function, run in place on its
 * library call's result), for the call to run on each block of rows as
 * soon as the block is final, while it is in cache: fn(args, begin, end)
 * on the result's rows [begin, end), rows of them in all. The call sets
 * done when it ran fn on every row once. */
struct rt_epilogue {
	rt_kernel_fn fn;
	void **args;
	int64_t rows;
	bool done;
};

/* Kernel k (one op) on its buffers buf (operands, then the result): true
 * when done here, false when the reference kernel must run it (another
 * dtype or rank, a result that overlaps an operand). rt_host_conv runs
 * epi (NULL: none) on its result, when its rows are whole output rows. */
bool rt_host_dot(struct rt *r, const struct plan_kernel *k, void *const *buf); /* kernels_gemm.c */
bool rt_host_conv(struct rt *r, const struct plan_kernel *k, void *const *buf, struct rt_epilogue *epi);
bool rt_host_window(struct rt *r, const struct plan_kernel *k, void *const *buf); /* kernels_window.c */
bool rt_host_pad(struct rt *r, const struct plan_kernel *k, void *const *buf);

/* Whether convolutions run on igemm (kernels_gemm.c): the CPU has AVX-512F
 * and PCC_IGEMM is not 0. */
bool rt_conv_igemm(void);
/* The convolutions' code paths, which test_host_ops sets to check each one
 * on one CPU: igemm 1 on igemm (only where rt_conv_igemm() said so), 0 on
 * sgemm; depthwise ones 2 on AVX-512F, 1 on AVX2 (each only where the
 * CPU has it), 0 on the portable variant; -1 as the CPU and PCC_IGEMM
 * decide. */
void rt_conv_paths_set(int igemm, int depthwise);

/* ceil(a / b) for b > 0 and any a. */
static inline int64_t ceil_div(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b - 1) / b : -(-a / b);
}

/* Whether [a, a + na) and [b, b + nb) share a byte. */
static inline bool overlap(const void *a, size_t na, const void *b, size_t nb)
{
	const char *x = a, *y = b;
	return x < y + nb && y < x + na;
}

static inline size_t kernel_bytes(const struct plan_kernel *k, int j)
{
	return (size_t)ir_shape_numel(&k->shape[j]) * ir_dtype_size(k->dtype[j]);
}
/* n floats from s to d, in constant-size pieces that the compiler inlines
 * (the rows are a few floats long: a call each would cost more). */
static inline void copy_floats(float *restrict d, const float *restrict s, int64_t n)
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
#endif
