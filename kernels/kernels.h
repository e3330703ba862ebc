/*
 * kernels.h: the one interface of kernels/, the reference kernels: one core
 * op (interp_node) or one plan kernel (interp_kernel) evaluated on the CPU,
 * simply and exactly. Floating point math in f64 per element (f32 results
 * rounded once), dots through OpenBLAS (dgemm for f64, sgemm for f32 with
 * results checked by the conformance tests), integers in int64; the
 * numerics contract is interp.c's. The reference interpreter's graph walk
 * (compiler/interp/interp_run.c) and pcc-run (its reference path, and the
 * ops it runs on the arena's buffers) call them, so they sit below both,
 * as ggml-cpu sits below ggml. Depends on ir/ only. Errors follow ir.h:
 * negative errno, message in ir_error().
 *
 *   interp.c         elementwise ops, the switch from op to kernel,
 *                    parameter loading
 *   interp_data.c    dtype conversions and layout (interp_internal.h)
 *   interp_dot.c     dot and convolution
 *   interp_nn.c      everything else
 *   interp_kernel.c  a plan kernel, single op or fused body
 *   interp_blas.c    OpenBLAS's kernels for CPUs it does not recognize
 */
#ifndef PCC_KERNELS_KERNELS_H
#define PCC_KERNELS_KERNELS_H

#include "ir/ir.h"

/* Evaluates node n: in[] holds n->nin tensors matching its operand types;
 * out[] receives n->nout freshly allocated tensors. 0 or negative error
 * (e.g. -ERANGE for an index out of bounds, message names the op). */
int interp_node(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);

/* Points OpenBLAS at the best kernels the CPU supports when it did not
 * recognize the CPU and OPENBLAS_CORETYPE is unset (interp_blas.c); a no-op
 * with another BLAS. Called once at process start, before any BLAS call. */
void interp_blas_init(void);

struct plan_kernel;
/* Evaluates a plan kernel (ir/plan.h), single op or fused (its body's ops
 * one at a time): in[] holds its nin operands; out[] receives its nout
 * results, freshly allocated. As interp_node. */
int interp_kernel(const struct plan_kernel *k, const struct ir_tensor *in, struct ir_tensor *out);

/* Loads a parameter's bytes (inline or external file) into t (allocated).
 * -ENOENT / -EIO with a message naming the file when external data is
 * missing or short. */
int interp_load_param(const struct ir_value *v, struct ir_tensor *t);

/* Records "out of memory (what)" and returns -ENOMEM. */
int interp_nomem(const char *what);
/* v's name, or "%ID" written into buf, for messages. */
const char *interp_value_name(const struct ir_value *v, char *buf, size_t n);

#endif
