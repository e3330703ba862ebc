/*
 * codegen.h: the plan's kernels compiled through LLVM's C API, from one
 * description (the kernel's ops, single or fused) to two targets: x86-64
 * host code (one ELF relocatable object in plan.bin, loaded by pcc-run
 * without a compiler) and PTX for NVIDIA GPUs (sm_80, sm_90: one or more
 * modules an architecture, compiled in parallel, which pcc-run links).
 *
 * What compiles (cg_op_class, ir/codegen_class.h): elementwise ops, data
 * movement that maps an output index to one operand index (broadcast,
 * transpose, reshape, slice, reverse), constants, iota, reductions,
 * softmax over the last axis and layer norm, over f32, f64 and integer
 * and bool dtypes. Dots and convolutions are library calls (OpenBLAS,
 * cuBLAS) and, with everything else, keep the reference kernels.
 *
 * A kernel is a loop over rows. Loop kernels (no reduction) iterate their
 * result as rows x the last dimension; a kernel with a reduction (its
 * core) iterates its result's elements, each reducing its own run; one
 * with softmax or layer norm iterates rows of the normalized trailing
 * dimensions, two or three passes per row. plan_kernel.rows holds the host
 * count; the host function is
 *   void pcc_k<index>(void **args, int64_t row_begin, int64_t row_end)
 * over args[0 .. nin] (operands, then the result), so the runtime splits
 * rows across threads; the GPU kernel of the same name takes
 *   (void **args, int64_t rows)
 * with args in device memory, and strides one thread per row over its
 * grid, where a loop kernel's rows are its result's elements
 * (cg_kernel_rows(k, true)).
 *
 * Numerics: the interpreter's contract (kernels/interp.c). Each op's result is
 * rounded to its dtype exactly as the reference kernel rounds it: +, -, *,
 * / and sqrt in the dtype (the same as rounding the double result), other
 * float math in double through libm, reductions accumulated in double.
 */
#ifndef PCC_COMPILER_CODEGEN_H
#define PCC_COMPILER_CODEGEN_H

#include "ir/codegen_class.h"

struct codegen_opts {
	bool host;            /* x86-64 object */
	const char *host_cpu; /* LLVM CPU name; NULL: "x86-64-v3" */
	bool ptx;             /* PTX (see sm) */
	int sm;               /* the cluster's GPUs (cost_device_sm): 90, PTX for
			       * sm_90 only; 70 or 80, sm_80 only; 0 (unknown),
			       * both */
	int opt_level;        /* 0 .. 3 */
	bool host_as_gpu;     /* tests: the host object holds the kernels the GPU
			       * compiles (cg_kernel_compiles_gpu), so that their
			       * logic runs against the interpreter on a host */
};

void codegen_opts_init(struct codegen_opts *o);

/* Drops kernels no instruction runs (the fusion pass leaves its inputs'
 * kernels behind), then compiles every kernel that compiles into
 * p->host_object and p->ptx, setting each one's host, gpu and rows.
 * 0, or a negative errno with a message. */
int codegen_plan(struct plan *p, const struct codegen_opts *o);

#endif
