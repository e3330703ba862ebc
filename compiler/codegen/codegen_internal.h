/*
 * codegen_internal.h: shared by codegen.c (modules, targets, the kernel's
 * loops) and codegen_expr.c (the value of a kernel's op at an index).
 */
#ifndef PCC_COMPILER_CODEGEN_INTERNAL_H
#define PCC_COMPILER_CODEGEN_INTERNAL_H

#include <llvm-c/Core.h>

#include "compiler/codegen/codegen.h"

struct cg {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMValueRef fn;
	bool gpu;
	LLVMTypeRef i1, i8, i32, i64, f32, f64, ptr, vd;
	const struct plan_kernel *k;
	LLVMValueRef base[64]; /* operand j's data, then the result's ([nin]) */
	int core;              /* the body op with a reduction, -1 */
	LLVMValueRef core_val; /* its value in the current row (CG_REDUCE), else: */
	LLVMValueRef stat[2];  /* softmax: max, sum; layer norm: mean, 1/std (f64) */
	bool stats_ready;      /* the final pass: the core op's value from stat[] */
	int split;             /* a row is the dimensions from split on */
	/* the result's element being computed: its index array (emit_row's)
	 * and its flat offset; an operand of the result's shape read at that
	 * very index is read at the offset (cg_value), NULL: none */
	const LLVMValueRef *out_idx;
	LLVMValueRef out_off;
	int lanes;                                 /* threads a row's passes split among: 32 (a warp) in
						    * a GPU's row kernels, else 1 */
	LLVMValueRef lane;                         /* this thread's among them (i64) */
	int vec;                                   /* elements a row (cg_kernel_vec; host: 1) */
	LLVMValueRef grid;                         /* a grid reduction (cg_kernel_grid_reduce): its
						    * scratch, else NULL; then: */
	LLVMValueRef tid, ctaid, nctaid, nthreads; /* the thread in its block, the
						    * block, blocks, threads (i64) */
	LLVMValueRef grid_row;                     /* the result being reduced */
	LLVMValueRef store_ok;                     /* i1: this thread stores the result (the last
						    * block's first) */
	LLVMValueRef row;                          /* host softmax: the row's exp(x - max) (f64, on the
						    * stack), for the final pass; NULL: computed again */
	int kid;                                   /* the kernel's index (names its constants) */
	const char *mvec;                          /* host: libmvec variants the CPU runs, as ISA letter
						    * and lanes ("b2d4e8": SSE2 x2, AVX2 x4, AVX-512 x8) */
	LLVMValueRef mvec_used[64];                /* the variants declared (kept: llvm.compiler.used) */
	int nmvec_used;
};

/* codegen_loop.c: for (i = lo; i < hi; i += step), with an optional
 * accumulator (acc: its start; NULL for none). cg_loop_end closes the loop
 * with acc the next value and returns the final one (or NULL). */
struct cg_loop {
	LLVMBasicBlockRef head, body, exit;
	LLVMValueRef i, acc;
	LLVMValueRef start_i, start_acc;
	LLVMBasicBlockRef from;
};
void cg_loop_begin(struct cg *c, struct cg_loop *l, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef acc);
LLVMValueRef cg_loop_end(struct cg *c, struct cg_loop *l, LLVMValueRef step, LLVMValueRef acc);
/* The product of s's dims from `from` on. */
int64_t cg_tail_numel(const struct ir_shape *s, int from);

/* codegen_gpu.c: the kernel of a GPU-only op with a loop of its own
 * (cg_own_loop), at row r. */
void cg_emit_gpu_only(struct cg *c, const struct plan_kernel *b, LLVMValueRef r);

/* Value v of kernel k (an operand, or a body op's result) at the index
 * idx[] of its shape (i64 values), in its dtype's LLVM type (bool: i8). */
LLVMValueRef cg_value(struct cg *c, int v, const LLVMValueRef *idx);

/* Dtype and shape of value v. */
enum ir_dtype cg_dtype(const struct cg *c, int v);
const struct ir_shape *cg_shape(const struct cg *c, int v);

/* x of dtype t as f64, or as i64 (sign- or zero-extended as t reads). */
LLVMValueRef cg_to_f64(struct cg *c, LLVMValueRef x, enum ir_dtype t);
LLVMValueRef cg_to_i64(struct cg *c, LLVMValueRef x, enum ir_dtype t);
/* A double or i64 rounded or wrapped to dtype t (the interpreter's store). */
LLVMValueRef cg_from_f64(struct cg *c, LLVMValueRef x, enum ir_dtype t);
LLVMValueRef cg_from_i64(struct cg *c, LLVMValueRef x, enum ir_dtype t);
LLVMTypeRef cg_type(const struct cg *c, enum ir_dtype t); /* bf16: f32, the value's */
/* Stores v (a value of dtype t) at base[off] in t's storage (bf16: the
 * rounded top half of the f32). */
void cg_store(struct cg *c, LLVMValueRef base, enum ir_dtype t, LLVMValueRef off, LLVMValueRef v);
/* a * b + d in their float type, fused where the target has FMA. */
LLVMValueRef cg_fmuladd(struct cg *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d);
/* The value of dtype t at base[off] (bf16: as f32). */
LLVMValueRef cg_load(struct cg *c, LLVMValueRef base, enum ir_dtype t, LLVMValueRef off);
/* Traps (the GPU kernel fails) unless 0 <= j < n; the builder continues
 * where it holds. */
void cg_trap_unless_index(struct cg *c, LLVMValueRef j, int64_t n);
/* f32 x rounded to bf16's precision, as an f32. */
LLVMValueRef cg_round_bf16(struct cg *c, LLVMValueRef x);
/* A value computed in f32 rounded to dtype t's precision: bf16's, f16's
 * (to nearest, ties to even), or x itself. */
LLVMValueRef cg_round(struct cg *c, LLVMValueRef x, enum ir_dtype t);

/* Keeps the libmvec variants cg_math declared through the optimizer until
 * the vectorizer has used them (llvm.compiler.used). */
void cg_mvec_keep(struct cg *c);

/* A call of the double math function name ("exp"; on GPUs libdevice's). */
LLVMValueRef cg_math(struct cg *c, const char *name, LLVMValueRef x, LLVMValueRef y);
/* exp or tanh of a double whose result is rounded to f32: on the host
 * computed inline (a polynomial within a few ulp of double, as libmvec's
 * variants, so rounded to f32 it almost always equals libm's result
 * rounded and is never 1 ulp of f32 off it), so loops vectorize with no
 * call; on GPUs cg_math. */
LLVMValueRef cg_math_f32(struct cg *c, const char *name, LLVMValueRef x);
/* Whether op calls the math library (libdevice on GPUs). */
bool cg_needs_libm(enum ir_op op);
/* NaN-propagating max/min as the interpreter's (x, z both double). */
LLVMValueRef cg_fmax(struct cg *c, LLVMValueRef x, LLVMValueRef z, bool max);

/* llvm.maximum: NaN if either is, and -0 below +0. */
LLVMValueRef cg_maximum(struct cg *c, LLVMValueRef x, LLVMValueRef z);

/* Linear offset of idx in shape s (row-major), and back. */
LLVMValueRef cg_linear(struct cg *c, const struct ir_shape *s, const LLVMValueRef *idx, int lo, int hi);
void cg_delinear(struct cg *c, LLVMValueRef lin, const struct ir_shape *s, int lo, int hi, LLVMValueRef *idx);

static inline LLVMValueRef cg_i64c(const struct cg *c, int64_t v)
{
	return LLVMConstInt(c->i64, (unsigned long long)v, 1);
}

#endif
