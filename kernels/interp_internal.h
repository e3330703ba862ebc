/*
 * interp_internal.h: helpers shared by the reference kernels' files
 * (interp.c: elementwise ops and dispatch; interp_data.c: dtype
 * conversions and layout; interp_dot.c: dot and conv; interp_nn.c:
 * everything else). Not part of kernels.h.
 *
 * Kernels compute in one of two domains chosen by the operand dtype: double
 * for floating point, int64 for integers and bool. The load/store helpers
 * convert a run of elements between a tensor and such a domain buffer with
 * one typed loop per call, so no kernel pays per-element dispatch.
 */
#ifndef PCC_KERNELS_INTERP_INTERNAL_H
#define PCC_KERNELS_INTERP_INTERNAL_H

#include "kernels/kernels.h"

/* Elements per stack buffer in blockwise kernels. */
#define INTERP_BLOCK 512

/* ---- domain conversions (interp_data.c) ----------------------------------
 * load: elements off..off+n-1 of t, exactly (bool reads 0/1).
 * store_f64: rounds once to t's dtype (nearest even, also for f16/bf16);
 *   to integers truncates toward zero (NaN -> 0, clamped to int64, then
 *   wrapped to the width); to bool stores v != 0.
 * store_i64: wraps to integer widths, v != 0 for bool, rounds to floats. */
void interp_load_f64(const struct ir_tensor *t, int64_t off, int64_t n, double *dst);
void interp_load_i64(const struct ir_tensor *t, int64_t off, int64_t n, int64_t *dst);
void interp_store_f64(struct ir_tensor *t, int64_t off, int64_t n, const double *src);
void interp_store_i64(struct ir_tensor *t, int64_t off, int64_t n, const int64_t *src);
/* The whole tensor as a fresh ir_malloc'd buffer; NULL (message set) on
 * allocation failure. */
double *interp_dup_f64(const struct ir_tensor *t);
int64_t *interp_dup_i64(const struct ir_tensor *t);
/* The lowest and highest value of an integer or bool dtype, as int64. */
int64_t interp_int_lowest(enum ir_dtype t);
int64_t interp_int_highest(enum ir_dtype t);

/* ---- layout helpers (interp_data.c) ------------------------------------- */

/* Row-major strides of s, in elements. */
void interp_strides(const struct ir_shape *s, int64_t *strides);
/* Product of dims[lo..hi-1]. */
int64_t interp_dims_prod(const struct ir_shape *s, int lo, int hi);
/* Advances the row-major multi-index idx over dims (wrapping to zeros). */
void interp_index_next(int64_t *idx, const int64_t *dims, int rank);
/* Copies a strided view of src into contiguous dst: dst walks dims[0..rank-1]
 * row-major; the source element of index (i0..) is
 * offset + sum_d i_d * strides[d] (elements of esize bytes; strides may be 0
 * or negative). Runs with stride 1 are memcpy'd. */
void interp_copy_view(void *dst, const void *src, size_t esize, int rank, const int64_t *dims, const int64_t *strides,
		      int64_t offset);

/* ---- kernels: in[] and out[] as for interp_node, out[] already allocated
 * (zeroed) with the node's result dtypes and shapes. 0 or negative error. */
int interp_dot(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_conv(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_reduce(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_arg(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_window(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_cumsum(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_softmax(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_layer_norm(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_topk(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_gather(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_scatter(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_pad(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_reverse(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_concat(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_slice(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_transpose(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_broadcast(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_iota(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);
int interp_constant(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);

#endif
