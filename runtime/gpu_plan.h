/*
 * gpu_plan.h: what the CUDA backend (gpu.c, gpu_exec.c) works out from a
 * plan before it touches a GPU; plain C over ir/plan.h, so the tests check
 * it on machines without one.
 *
 * - Point-to-point transfers go over one NCCL communicator per ordered pair
 *   of ranks (sender, receiver), each on its own stream, so that a send
 *   waiting for its receiver never holds back a transfer the other way
 *   (the plan's programs assume buffered sends). NCCL matches a pair's
 *   messages by order, not by tag: gpu_plan_check_p2p() checks that every
 *   part of a receiver's program takes a sender's messages in the order
 *   the sender's same part sends them.
 * - A dot runs as one strided-batched GEMM when its operands are laid out
 *   as [batch, rows, cols] matrices, in place or transposed.
 * - Collectives pack and unpack blocks of a buffer; a block copy becomes
 *   a few 2-D copies (cuMemcpy2D).
 */
#ifndef PCC_RUNTIME_GPU_PLAN_H
#define PCC_RUNTIME_GPU_PLAN_H

#include "ir/plan.h"

/* The ordered pairs (from, to) of ranks with sends between them, in one
 * order every rank computes alike: pairs[2 * i], pairs[2 * i + 1]. */
int gpu_plan_pairs(const struct plan *p, int **pairs, int *npairs);

/* 0 when every pair's sends and receives match in order, part by part;
 * else -EINVAL naming the pair and the first mismatched tag. */
int gpu_plan_check_p2p(const struct plan *p);

/* Row-major C[b] (m x n) = op(A[b]) (m x k) * op(B[b]) (k x n): A is the
 * dot's lhs stored [batch, m, k] (ta: [batch, k, m]), B its rhs stored
 * [batch, k, n] (tb: [batch, n, k]). */
struct gpu_gemm {
	int64_t batch, m, n, k;
	bool ta, tb;
};

/* Whether kernel k is a dot that runs as one GEMM in place. */
bool gpu_plan_gemm(const struct plan_kernel *k, struct gpu_gemm *g);

/* One 2-D copy: height rows of width bytes, rows pitch bytes apart. */
struct gpu_copy2d {
	int64_t src, dst; /* byte offsets of the first row */
	int64_t width, height, spitch, dpitch;
};

/* ir_copy_block's copy (a block of shape blk from src at sstart into dst
 * at dstart, elements of es bytes) as 2-D copies: *n of them into out
 * (cap entries); -ENOSPC when more are needed (*n says how many). */
int gpu_plan_block(const struct ir_shape *dshape, const int64_t *dstart, const struct ir_shape *sshape,
		   const int64_t *sstart, const struct ir_shape *blk, size_t es, struct gpu_copy2d *out, int cap,
		   int *n);

#endif
