/*
 * codegen_class.h: which plan kernels codegen (compiler/codegen/codegen.h)
 * compiles, and the shape of the code it emits: the rows of a kernel's
 * host function and GPU kernel, the threads per row, the elements per row,
 * the grid reductions. The compiler decides and emits by these answers and
 * pcc-run launches by them, so they live here, once, below both
 * (codegen_class.c: one function per value of the op table's codegen
 * column).
 */
#ifndef PCC_IR_CODEGEN_CLASS_H
#define PCC_IR_CODEGEN_CLASS_H

#include "ir/plan.h"

enum cg_class {
	CG_NONE,   /* not compiled: a library call or the reference kernel */
	CG_ELEM,   /* elementwise: result element i from operand elements i */
	CG_MOVE,   /* data movement and sources: one operand index per result index */
	CG_REDUCE, /* reduction over attrs.axes */
	CG_ROW,    /* softmax, layer norm: over the trailing dimensions */
};

/* How op compiles over operands of dtypes in[] and shapes sh[] with result
 * dtype out: the op table's codegen column (ops.h). */
enum cg_class cg_op_class(enum ir_op op, const struct ir_attrs *a, int nin, const enum ir_dtype *in,
			  const struct ir_shape *sh, enum ir_dtype out);

/* The class of op i of kernel k's body (operand types from the kernel's
 * operands and earlier body ops). */
enum cg_class cg_body_class(const struct plan_kernel *k, int i);

/* The most operands a compiled kernel has (its function's args[] holds
 * them and its result). */
#define CG_MAX_IN 63

/* A kernel as a one-op body when it is not fused (so one path emits both);
 * a fused kernel with a library core (plan_kernel_core) as its epilogue:
 * the body after the core, the core's result an operand after the
 * kernel's own (number nin, as in the body), which the runtime passes as
 * the result buffer the call wrote (the epilogue runs in place). */
struct cg_view {
	struct plan_kernel k;
	struct plan_fop one;
	enum ir_dtype dtype[CG_MAX_IN + 1];
	struct ir_shape shape[CG_MAX_IN + 1];
};
const struct plan_kernel *cg_as_body(const struct plan_kernel *k, struct cg_view *v);

/* Whether k compiles; its core op (a reduction, softmax or layer norm; -1
 * for none) in *core. */
bool cg_kernel_compiles(const struct plan_kernel *k, int *core);
/* The same for a GPU kernel: also a pad, a concat of up to 3 operands, a
 * gather, a scatter, a float convolution, window op or dot (the GPU's
 * fallback where cuBLASLt does not take the dot), a top-k (two results)
 * or a cumsum on its own (the host
 * runs those on the arena's buffers or by BLAS, or by the reference
 * kernel, which checks indices; the GPU's traps on one out of range). */
bool cg_kernel_compiles_gpu(const struct plan_kernel *k, int *core);
/* Whether such a kernel of op alone has a loop of its own
 * (codegen_gpu.c), rather than a value in the row loop (pad, concat and
 * gather do). */
bool cg_own_loop(enum ir_op op);
/* The first dimension of the trailing run one row of body b covers. */
int cg_row_split(const struct plan_kernel *b, int core, bool gpu);
/* The rows of k's host function (gpu false) or GPU kernel; 0 when k does
 * not compile. */
int64_t cg_kernel_rows(const struct plan_kernel *k, bool gpu);
/* Threads of k's GPU kernel per row: a warp (32) for a kernel with a
 * reduction, softmax or layer norm, whose lanes split each pass over the
 * row (coalesced) and combine by shuffles; else 1. Its grid wants rows x
 * lanes threads (a grid-stride loop takes fewer). */
int cg_kernel_lanes(const struct plan_kernel *k);
/* Elements each row of k's GPU kernel computes: CG_VEC for an elementwise
 * kernel (no reduction, softmax or layer norm; not an op with a loop of its
 * own) whose result's elements CG_VEC divides, else 1. A thread loads all
 * of a row's operands before it stores the results, so that CG_VEC loads
 * are in flight where one was: such kernels are bound by memory latency
 * (a thread's single 4-byte load is the GPU's bytes in flight). */
enum { CG_VEC = 4 };
int cg_kernel_vec(const struct plan_kernel *k);
/* A GPU reduction with few results, each over many elements (a gradient's
 * squared norm: one result over millions), is reduced by the whole grid
 * rather than a warp: every block folds its share of a result's elements,
 * stores its partial in the launch's scratch, and the last block to finish
 * (an atomic count per result) folds the partials in block order, so a
 * grid of given size gives the same bits on every run. Returns the
 * elements each result reduces for such a kernel, else 0. The runtime
 * launches it with 256-thread blocks, at most CG_GRID_BLOCKS of them, and
 * a third parameter: CG_GRID_SCRATCH zeroed bytes (the counts, which each
 * launch leaves zero again, then the partials). */
enum { CG_GRID_ROWS = 64, CG_GRID_BLOCKS = 1024, CG_GRID_MIN = 16384 };
#define CG_GRID_SCRATCH ((size_t)256 + 8u * CG_GRID_ROWS * CG_GRID_BLOCKS)
int64_t cg_kernel_grid_reduce(const struct plan_kernel *k);

#endif
