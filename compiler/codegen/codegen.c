/*
 * codegen.c: the plan's kernels through LLVM (codegen.h): one module per
 * target holding a function per compiled kernel, the loops around each
 * kernel's values (codegen_expr.c builds those), LLVM's O3 pipeline, and
 * the object or PTX text stored in the plan.
 *
 * Loops (rows as in codegen.h):
 *   loop kernel:   for r in rows: for j in the last dimension (host; the
 *                  GPU makes every element a row): out = value(root)
 *   reduction:     for r in result elements: acc = fold over the reduced
 *                  elements (double, or int64); out = value(root)
 *   softmax, layer norm: for r in rows: two passes for the statistics
 *                  (max and sum of exp; mean and variance, as the
 *                  interpreter), then out = value(root) per element; the
 *                  host keeps a softmax row's exp values (double) on the
 *                  stack for that last pass rather than computing them
 *                  again
 * The host function takes [row_begin, row_end) so the runtime splits rows
 * over threads; the GPU kernel strides its rows over the grid.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "compiler/codegen/codegen_internal.h"
#include "compiler/parallel.h"

void codegen_opts_init(struct codegen_opts *o)
{
	*o = (struct codegen_opts){ .host = true, .host_cpu = NULL, .ptx = true, .opt_level = 3 };
}

static LLVMValueRef reassoc(LLVMValueRef v)
{
	if (LLVMCanValueUseFastMathFlags(v))
		LLVMSetFastMathFlags(v, LLVMFastMathAllowReassoc);
	return v;
}

/* x from the lane whose number differs from this one's in bit m (a
 * butterfly shuffle over the warp; 64-bit values as two halves). */
static LLVMValueRef shfl_xor(struct cg *c, LLVMValueRef x, int m)
{
	LLVMTypeRef t = LLVMTypeOf(x);
	bool f32 = t == c->f32, wide = t == c->f64 || t == c->i64;
	const char *name = f32 ? "llvm.nvvm.shfl.sync.bfly.f32" : "llvm.nvvm.shfl.sync.bfly.i32";
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, LLVMLookupIntrinsicID(name, strlen(name)), NULL, 0);
	LLVMTypeRef ft = LLVMGlobalGetValueType(fn);
	LLVMValueRef mask = LLVMConstInt(c->i32, 0xffffffffu, 0), lm = LLVMConstInt(c->i32, (unsigned)m, 0),
		     clampv = LLVMConstInt(c->i32, 31, 0);
	if (f32 || t == c->i32) {
		LLVMValueRef a[4] = { mask, x, lm, clampv };
		return LLVMBuildCall2(c->b, ft, fn, a, 4, "");
	}
	IR_ASSERT(wide);
	LLVMValueRef bits = t == c->f64 ? LLVMBuildBitCast(c->b, x, c->i64, "") : x;
	LLVMValueRef lo = LLVMBuildTrunc(c->b, bits, c->i32, "");
	LLVMValueRef hi = LLVMBuildTrunc(c->b, LLVMBuildLShr(c->b, bits, cg_i64c(c, 32), ""), c->i32, "");
	LLVMValueRef a[4] = { mask, lo, lm, clampv }, b[4] = { mask, hi, lm, clampv };
	lo = LLVMBuildZExt(c->b, LLVMBuildCall2(c->b, ft, fn, a, 4, ""), c->i64, "");
	hi = LLVMBuildZExt(c->b, LLVMBuildCall2(c->b, ft, fn, b, 4, ""), c->i64, "");
	bits = LLVMBuildOr(c->b, lo, LLVMBuildShl(c->b, hi, cg_i64c(c, 32), ""), "");
	return t == c->f64 ? LLVMBuildBitCast(c->b, bits, c->f64, "") : bits;
}

enum combine { C_ADD, C_MUL, C_MAXIMUM, C_FMAX, C_FMIN, C_SELMAX, C_IMAX, C_IMIN };

static LLVMValueRef combine(struct cg *c, enum combine how, LLVMValueRef a, LLVMValueRef b)
{
	bool fl = LLVMTypeOf(a) == c->f64 || LLVMTypeOf(a) == c->f32;
	switch (how) {
	case C_ADD:
		return fl ? LLVMBuildFAdd(c->b, a, b, "") : LLVMBuildAdd(c->b, a, b, "");
	case C_MUL:
		return fl ? LLVMBuildFMul(c->b, a, b, "") : LLVMBuildMul(c->b, a, b, "");
	case C_MAXIMUM:
		return cg_maximum(c, a, b);
	case C_FMAX:
	case C_FMIN:
		return cg_fmax(c, a, b, how == C_FMAX);
	case C_SELMAX: /* as row_pass's f64 max: a NaN partial loses */
		return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, b, a, ""), b, a, "");
	case C_IMAX:
	case C_IMIN:
		return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, how == C_IMAX ? LLVMIntSGT : LLVMIntSLT, b, a, ""), b,
				       a, "");
	}
	return a;
}

/* A row's partial x of each lane combined over the warp (every lane gets
 * the whole); x itself where a row is one thread's. */
static LLVMValueRef warp_all(struct cg *c, LLVMValueRef x, enum combine how)
{
	for (int m = c->lanes / 2; m >= 1; m /= 2)
		x = combine(c, how, x, shfl_xor(c, x, m));
	return x;
}

/* A call of the NVVM intrinsic name, which takes nothing and returns nothing. */
static void nvvm(struct cg *c, const char *name)
{
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, LLVMLookupIntrinsicID(name, strlen(name)), NULL, 0);
	LLVMBuildCall2(c->b, LLVMGlobalGetValueType(fn), fn, NULL, 0, "");
}

/* if (cond) { ...: the builder is in the then block; when_end closes it. */
static LLVMBasicBlockRef when(struct cg *c, LLVMValueRef cond)
{
	LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "then");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "join");
	LLVMBuildCondBr(c->b, cond, then, join);
	LLVMPositionBuilderAtEnd(c->b, then);
	return join;
}

static void when_end(struct cg *c, LLVMBasicBlockRef join)
{
	LLVMBuildBr(c->b, join);
	LLVMPositionBuilderAtEnd(c->b, join);
}

/* A block-shared variable of type t, this kernel's own. */
static LLVMValueRef shared(struct cg *c, const char *what, LLVMTypeRef t)
{
	char name[48];
	snprintf(name, sizeof name, "pcc_k%d_%s", c->kid, what);
	LLVMValueRef v = LLVMGetNamedGlobal(c->mod, name);
	if (!v) {
		v = LLVMAddGlobalInAddressSpace(c->mod, t, name, 3);
		LLVMSetInitializer(v, LLVMGetUndef(t));
		LLVMSetLinkage(v, LLVMInternalLinkage);
		LLVMSetAlignment(v, 8);
	}
	return v;
}

enum { GRID_WARPS = 8 }; /* the runtime's blocks: 256 threads */

/* Every warp's x (whole over the warp) combined in warp order through
 * shared memory: every thread of the block gets the block's whole. */
static LLVMValueRef block_all(struct cg *c, LLVMValueRef x, enum combine how)
{
	LLVMTypeRef t = LLVMArrayType2(LLVMTypeOf(x), GRID_WARPS);
	LLVMValueRef sm = shared(c, LLVMTypeOf(x) == c->f64 ? "warps_f" : "warps_i", t), zero = cg_i64c(c, 0);
	LLVMValueRef warp = LLVMBuildUDiv(c->b, c->tid, cg_i64c(c, 32), "");
	LLVMValueRef at[2] = { zero, warp };
	LLVMBasicBlockRef j = when(c, LLVMBuildICmp(c->b, LLVMIntEQ, LLVMBuildURem(c->b, c->tid, cg_i64c(c, 32), ""),
						    zero, ""));
	LLVMBuildStore(c->b, x, LLVMBuildGEP2(c->b, t, sm, at, 2, ""));
	when_end(c, j);
	nvvm(c, "llvm.nvvm.barrier0");
	LLVMValueRef v = NULL;
	for (int w = 0; w < GRID_WARPS; w++) {
		LLVMValueRef aw[2] = { zero, cg_i64c(c, w) };
		LLVMValueRef e = LLVMBuildLoad2(c->b, LLVMTypeOf(x), LLVMBuildGEP2(c->b, t, sm, aw, 2, ""), "");
		v = v ? combine(c, how, v, e) : e;
	}
	nvvm(c, "llvm.nvvm.barrier0"); /* the slots are free again */
	return v;
}

/* A grid reduction's whole from each thread's partial x (cg_kernel_grid_reduce):
 * the block's whole goes to the scratch, and the last block to count in folds
 * every block's in block order. Sets c->store_ok; the value is the whole in
 * that block only. */
static LLVMValueRef grid_all(struct cg *c, LLVMValueRef x, enum combine how, LLVMValueRef init)
{
	LLVMTypeRef at = LLVMTypeOf(x);
	LLVMValueRef flag = shared(c, "last", c->i32), zero = cg_i64c(c, 0);
	x = block_all(c, warp_all(c, x, how), how);
	LLVMValueRef cnt = LLVMBuildGEP2(c->b, c->i32, c->grid, &c->grid_row, 1, "");
	LLVMValueRef off = cg_i64c(c, 256);
	LLVMValueRef parts = LLVMBuildGEP2(c->b, c->i8, c->grid, &off, 1, "");
	LLVMValueRef base = LLVMBuildMul(c->b, c->grid_row, c->nctaid, "");
	LLVMValueRef first = LLVMBuildICmp(c->b, LLVMIntEQ, c->tid, zero, "");
	LLVMBasicBlockRef j = when(c, first);
	LLVMValueRef mine = LLVMBuildAdd(c->b, base, c->ctaid, "");
	LLVMSetVolatile(LLVMBuildStore(c->b, x, LLVMBuildGEP2(c->b, at, parts, &mine, 1, "")), 1);
	nvvm(c, "llvm.nvvm.membar.gl");
	LLVMValueRef old = LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpAdd, cnt, LLVMConstInt(c->i32, 1, 0),
					      LLVMAtomicOrderingMonotonic, 0);
	LLVMValueRef n1 = LLVMBuildTrunc(c->b, LLVMBuildSub(c->b, c->nctaid, cg_i64c(c, 1), ""), c->i32, "");
	LLVMBuildStore(c->b, LLVMBuildZExt(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, old, n1, ""), c->i32, ""), flag);
	when_end(c, j);
	nvvm(c, "llvm.nvvm.barrier0");
	LLVMValueRef last = LLVMBuildICmp(c->b, LLVMIntNE, LLVMBuildLoad2(c->b, c->i32, flag, ""),
					  LLVMConstInt(c->i32, 0, 0), "");
	nvvm(c, "llvm.nvvm.barrier0"); /* the flag is free again */
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
	j = when(c, last); /* the same in the whole block: its barriers are safe */
	nvvm(c, "llvm.nvvm.membar.gl");
	struct cg_loop l;
	cg_loop_begin(c, &l, c->tid, c->nctaid, init);
	LLVMValueRef k = LLVMBuildAdd(c->b, base, l.i, "");
	LLVMValueRef e = LLVMBuildLoad2(c->b, at, LLVMBuildGEP2(c->b, at, parts, &k, 1, ""), "");
	LLVMSetVolatile(e, 1);
	LLVMValueRef t = cg_loop_end(c, &l, cg_i64c(c, 32 * GRID_WARPS), combine(c, how, l.acc, e));
	t = block_all(c, warp_all(c, t, how), how);
	LLVMBasicBlockRef z = when(c, first); /* the count back to 0 for the next launch */
	LLVMSetVolatile(LLVMBuildStore(c->b, LLVMConstInt(c->i32, 0, 0), cnt), 1);
	when_end(c, z);
	LLVMBasicBlockRef done = LLVMGetInsertBlock(c->b);
	when_end(c, j);
	LLVMValueRef v = LLVMBuildPhi(c->b, at, "");
	LLVMValueRef vv[2] = { x, t };
	LLVMBasicBlockRef vb[2] = { pre, done };
	LLVMAddIncoming(v, vv, vb, 2);
	c->store_ok = LLVMBuildAnd(c->b, last, first, "");
	return v;
}

static int64_t int_extreme(enum ir_dtype t, bool lowest)
{
	switch (t) {
	case IR_I64:
		return lowest ? INT64_MIN : INT64_MAX;
	case IR_I32:
		return lowest ? INT32_MIN : INT32_MAX;
	case IR_I8:
		return lowest ? INT8_MIN : INT8_MAX;
	case IR_U8:
		return lowest ? 0 : UINT8_MAX;
	case IR_BOOL:
		return lowest ? 0 : 1;
	case IR_F64:
	case IR_F32:
	case IR_F16:
	case IR_BF16:
	case IR_DTYPE_COUNT:
		break;
	}
	return 0;
}

/* A reduction's value for the result element at oidx. */
static LLVMValueRef reduce_row(struct cg *c, const struct plan_fop *f, const LLVMValueRef *oidx)
{
	const struct ir_shape *is = cg_shape(c, f->in[0]);
	enum ir_dtype it = cg_dtype(c, f->in[0]);
	bool fl = ir_dtype_is_float(it);
	struct ir_shape rs = { .rank = 0 };
	int kept[IR_MAX_RANK], red[IR_MAX_RANK], nk = 0;
	unsigned mask = 0;
	for (int j = 0; j < f->a.axes.n; j++)
		mask |= 1u << f->a.axes.v[j];
	for (int d = 0; d < is->rank; d++) {
		if (mask & (1u << d)) {
			red[rs.rank] = d;
			rs.dims[rs.rank++] = is->dims[d];
		} else {
			kept[nk++] = d;
		}
	}
	LLVMValueRef init;
	if (fl)
		init = LLVMConstReal(c->f64, f->op == IR_OP_REDUCE_SUM    ? 0.0
					     : f->op == IR_OP_REDUCE_PROD ? 1.0
					     : f->op == IR_OP_REDUCE_MAX  ? -INFINITY
									  : INFINITY);
	else
		init = cg_i64c(c, f->op == IR_OP_REDUCE_SUM    ? 0
				  : f->op == IR_OP_REDUCE_PROD ? 1
							       : int_extreme(it, f->op == IR_OP_REDUCE_MAX));
	struct cg_loop l;
	cg_loop_begin(c, &l, c->lane, cg_i64c(c, ir_shape_numel(&rs)), init);
	LLVMValueRef ri[IR_MAX_RANK], full[IR_MAX_RANK];
	cg_delinear(c, l.i, &rs, 0, rs.rank, ri);
	for (int j = 0; j < nk; j++)
		full[kept[j]] = oidx[j];
	for (int j = 0; j < rs.rank; j++)
		full[red[j]] = ri[j];
	LLVMValueRef x = cg_value(c, f->in[0], full), acc = l.acc, n;
	bool sum = f->op == IR_OP_REDUCE_SUM, prod = f->op == IR_OP_REDUCE_PROD, max = f->op == IR_OP_REDUCE_MAX;
	if (fl) {
		x = cg_to_f64(c, x, it);
		n = sum    ? reassoc(LLVMBuildFAdd(c->b, acc, x, ""))
		    : prod ? reassoc(LLVMBuildFMul(c->b, acc, x, ""))
			   : cg_fmax(c, acc, x, max);
	} else {
		x = cg_to_i64(c, x, it);
		n = sum    ? LLVMBuildAdd(c->b, acc, x, "")
		    : prod ? LLVMBuildMul(c->b, acc, x, "")
			   : LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, max ? LLVMIntSGT : LLVMIntSLT, x, acc, ""), x,
					     acc, "");
	}
	acc = cg_loop_end(c, &l, c->grid ? c->nthreads : cg_i64c(c, c->lanes), n);
	enum combine how = sum ? C_ADD : prod ? C_MUL : fl ? (max ? C_FMAX : C_FMIN) : (max ? C_IMAX : C_IMIN);
	acc = c->grid ? grid_all(c, acc, how, init) : warp_all(c, acc, how);
	return fl ? cg_from_f64(c, acc, f->dtype) : cg_from_i64(c, acc, f->dtype);
}

/* One pass over a row's trailing elements: returns the fold of g (f64).
 * The max folds in the input's float type with llvm.maximum, which
 * vectorizes where a compare and select does not. The interpreter's max
 * skips NaN and maximum returns it, but a row with a NaN is NaN throughout
 * either way (its exp joins the sum), and the two differ otherwise only
 * in the sign of a zero max, which x - max and so exp do not see. The sum
 * of exp stores each exp in c->row when there is one. */
enum pass { P_MAX, P_SUMEXP, P_SUM, P_SQDEV };

static LLVMValueRef row_pass(struct cg *c, const struct plan_fop *f, LLVMValueRef *idx, int split, enum pass p)
{
	const struct ir_shape *s = &f->shape;
	enum ir_dtype it = cg_dtype(c, f->in[0]);
	bool native = p == P_MAX && ir_dtype_is_float(it);
	LLVMTypeRef at = native ? cg_type(c, it) : c->f64;
	struct cg_loop l;
	LLVMValueRef init = LLVMConstReal(at, p == P_MAX ? -INFINITY : 0.0);
	cg_loop_begin(c, &l, c->lane, cg_i64c(c, cg_tail_numel(s, split)), init);
	cg_delinear(c, l.i, s, split, s->rank, idx);
	LLVMValueRef x = cg_value(c, f->in[0], idx), n = NULL;
	if (!native)
		x = cg_to_f64(c, x, it);
	switch (p) {
	case P_MAX:
		n = native ? cg_maximum(c, l.acc, x)
			   : LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, x, l.acc, ""), x, l.acc, "");
		break;
	case P_SUMEXP: {
		LLVMValueRef d = LLVMBuildFSub(c->b, x, c->stat[0], "");
		LLVMValueRef e = f->dtype == IR_F32 ? cg_math_f32(c, "exp", d) : cg_math(c, "exp", d, NULL);
		if (c->row)
			LLVMBuildStore(c->b, e, LLVMBuildGEP2(c->b, c->f64, c->row, &l.i, 1, ""));
		n = reassoc(LLVMBuildFAdd(c->b, l.acc, e, ""));
		break;
	}
	case P_SUM:
		n = reassoc(LLVMBuildFAdd(c->b, l.acc, x, ""));
		break;
	case P_SQDEV: {
		LLVMValueRef d = LLVMBuildFSub(c->b, x, c->stat[0], "");
		n = reassoc(LLVMBuildFAdd(c->b, l.acc, LLVMBuildFMul(c->b, d, d, ""), ""));
		break;
	}
	}
	LLVMValueRef r = cg_loop_end(c, &l, cg_i64c(c, c->lanes), n);
	r = warp_all(c, r, p != P_MAX ? C_ADD : native ? C_MAXIMUM : C_SELMAX);
	return native ? cg_to_f64(c, r, it) : r;
}

/* The per-row code: statistics or the reduction, then the row's results. */
static void emit_row(struct cg *c, const struct plan_kernel *b, LLVMValueRef r, int split)
{
	const struct ir_shape *s = &b->body[b->nbody - 1].shape;
	int root = b->nin + b->nbody - 1;
	enum ir_dtype rt = b->body[b->nbody - 1].dtype;
	LLVMValueRef idx[IR_MAX_RANK];
	int64_t inner = cg_tail_numel(s, split);
	if (c->vec > 1) { /* elements r * vec ..: every value, then every store */
		LLVMValueRef v[CG_VEC], e[CG_VEC];
		for (int j = 0; j < c->vec; j++) {
			e[j] = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, r, cg_i64c(c, c->vec), ""), cg_i64c(c, j), "");
			cg_delinear(c, e[j], s, 0, split, idx);
			c->out_idx = idx, c->out_off = e[j];
			v[j] = cg_value(c, root, idx);
			c->out_idx = NULL;
		}
		for (int j = 0; j < c->vec; j++)
			cg_store(c, c->base[b->nin], rt, e[j], v[j]);
		return;
	}
	cg_delinear(c, r, s, 0, split, idx);
	c->grid_row = r;
	c->core_val = NULL;
	c->stats_ready = false;
	if (c->core >= 0) {
		const struct plan_fop *f = &b->body[c->core];
		if (cg_body_class(b, c->core) == CG_REDUCE) {
			c->core_val = reduce_row(c, f, idx);
		} else if (f->op == IR_OP_SOFTMAX) {
			c->stat[0] = row_pass(c, f, idx, split, P_MAX);
			c->stat[1] = row_pass(c, f, idx, split, P_SUMEXP);
		} else {
			LLVMValueRef n = LLVMConstReal(c->f64, (double)inner);
			c->stat[0] = LLVMBuildFDiv(c->b, row_pass(c, f, idx, split, P_SUM), n, "");
			LLVMValueRef var = LLVMBuildFDiv(c->b, row_pass(c, f, idx, split, P_SQDEV), n, "");
			var = LLVMBuildFAdd(c->b, var, LLVMConstReal(c->f64, f->a.eps), "");
			c->stat[1] = LLVMBuildFDiv(c->b, LLVMConstReal(c->f64, 1.0), cg_math(c, "sqrt", var, NULL), "");
		}
		c->stats_ready = true;
	}
	LLVMValueRef base = LLVMBuildMul(c->b, r, cg_i64c(c, inner), "");
	if (inner == 1 && split == s->rank) {
		if (c->lanes == 1) {
			c->out_idx = idx, c->out_off = base;
			cg_store(c, c->base[b->nin], rt, base, cg_value(c, root, idx));
			c->out_idx = NULL;
			return;
		}
		/* the warp's lanes hold the same value: lane 0 stores it (a grid
		 * reduction: the last block's first thread) */
		LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "lane0");
		LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
		LLVMValueRef v = cg_value(c, root, idx);
		LLVMBuildCondBr(c->b,
				c->grid ? c->store_ok : LLVMBuildICmp(c->b, LLVMIntEQ, c->lane, cg_i64c(c, 0), ""), st,
				done);
		LLVMPositionBuilderAtEnd(c->b, st);
		cg_store(c, c->base[b->nin], rt, base, v);
		LLVMBuildBr(c->b, done);
		LLVMPositionBuilderAtEnd(c->b, done);
		return;
	}
	struct cg_loop l;
	cg_loop_begin(c, &l, c->lane, cg_i64c(c, inner), NULL);
	cg_delinear(c, l.i, s, split, s->rank, idx);
	LLVMValueRef off = LLVMBuildAdd(c->b, base, l.i, "");
	/* not on GPUs: each lane's share of a row there */
	if (!c->gpu)
		c->out_idx = idx, c->out_off = off;
	cg_store(c, c->base[b->nin], rt, off, cg_value(c, root, idx));
	c->out_idx = NULL;
	cg_loop_end(c, &l, cg_i64c(c, c->lanes), NULL);
}

static LLVMValueRef sreg(struct cg *c, const char *name)
{
	LLVMTypeRef ft = LLVMFunctionType(c->i32, NULL, 0, 0);
	LLVMValueRef f = LLVMGetNamedFunction(c->mod, name);
	if (!f)
		f = LLVMAddFunction(c->mod, name, ft);
	return LLVMBuildZExt(c->b, LLVMBuildCall2(c->b, ft, f, NULL, 0, ""), c->i64, "");
}

/* Elements of a softmax row whose exp the host keeps on the stack (in
 * double, 8 bytes each) between the sum and the final pass, rather than
 * computing it again: longer rows compute it twice. */
enum { ROW_STACK_MAX = 4096 };

/* The parameters of a kernel's function: the operands' address table and
 * the rows, [begin, end) on the host, the end on a GPU, where a grid
 * reduction takes its scratch third; a slice's shared body (twin_body)
 * takes the bytes its operand starts at last. Returns their count. */
static unsigned kernel_params(struct cg *c, const struct plan_kernel *k, bool shared, LLVMTypeRef *pt)
{
	bool grid = c->gpu && cg_kernel_grid_reduce(k) > 0;
	unsigned n = 0;
	pt[n++] = c->ptr;
	pt[n++] = c->i64;
	if (!c->gpu || grid)
		pt[n++] = grid ? c->ptr : c->i64;
	if (shared)
		pt[n++] = c->i64;
	return n;
}

static void fn_attr(struct cg *c, LLVMValueRef f, const char *name)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
	LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, kind, 0));
}

/* The function `name` computing kernel k: pcc_k<kid>, the host function
 * or the GPU kernel; or (shared) a slice's body that its twins call
 * (twin_body), which reads its operand that many bytes (its last
 * parameter) into the address table's. */
static void emit_fn(struct cg *c, const struct plan_kernel *k, int kid, int core, const char *name, bool shared)
{
	struct cg_view v;
	const struct plan_kernel *b = cg_as_body(k, &v);
	bool grid = c->gpu && cg_kernel_grid_reduce(k) > 0; /* a third parameter: its scratch */
	LLVMTypeRef pt[4];
	unsigned np = kernel_params(c, k, shared, pt);
	LLVMTypeRef ft = LLVMFunctionType(c->vd, pt, np, 0);
	c->fn = LLVMAddFunction(c->mod, name, ft);
	if (shared) {
		LLVMSetLinkage(c->fn, LLVMInternalLinkage);
		fn_attr(c, c->fn, "noinline");
	} else if (c->gpu) {
		LLVMSetFunctionCallConv(c->fn, 71); /* ptx_kernel */
	}
	c->k = b;
	c->kid = kid;
	c->core = core;
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "entry");
	LLVMPositionBuilderAtEnd(c->b, entry);
	LLVMValueRef args = LLVMGetParam(c->fn, 0);
	for (int j = 0; j <= b->nin + (k->nout - 1); j++) { /* top-k: two results */
		LLVMValueRef jj = cg_i64c(c, j);
		LLVMValueRef p = LLVMBuildGEP2(c->b, c->ptr, args, &jj, 1, "");
		c->base[j] = LLVMBuildLoad2(c->b, c->ptr, p, "");
	}
	if (shared) {
		LLVMValueRef off = LLVMGetParam(c->fn, np - 1);
		c->base[0] = LLVMBuildGEP2(c->b, c->i8, c->base[0], &off, 1, "");
	}
	/* an epilogue reads its library call's result where it writes its
	 * own: through the same pointer, LLVM sees each element read before
	 * it is written and vectorizes without a runtime overlap check */
	if (b != k && k->nbody)
		c->base[b->nin - 1] = c->base[b->nin];
	int split = cg_row_split(b, core, c->gpu);
	c->split = split;
	c->row = NULL;
	if (!c->gpu && core >= 0 && b->body[core].op == IR_OP_SOFTMAX &&
	    cg_tail_numel(&b->body[core].shape, split) <= ROW_STACK_MAX) {
		LLVMTypeRef rt = LLVMArrayType2(c->f64, (uint64_t)cg_tail_numel(&b->body[core].shape, split));
		c->row = LLVMBuildAlloca(c->b, rt, "row");
		LLVMSetAlignment(c->row, 64);
	}
	LLVMValueRef lo, hi, step;
	c->lanes = c->gpu && core >= 0 ? 32 : 1; /* as cg_kernel_lanes */
	c->lane = cg_i64c(c, 0);
	c->grid = NULL;
	c->vec = c->gpu ? cg_kernel_vec(k) : 1;
	if (c->gpu) {
		LLVMValueRef tid = sreg(c, "llvm.nvvm.read.ptx.sreg.tid.x");
		LLVMValueRef ntid = sreg(c, "llvm.nvvm.read.ptx.sreg.ntid.x");
		LLVMValueRef ctaid = sreg(c, "llvm.nvvm.read.ptx.sreg.ctaid.x");
		LLVMValueRef nctaid = sreg(c, "llvm.nvvm.read.ptx.sreg.nctaid.x");
		lo = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, ctaid, ntid, ""), tid, "");
		step = LLVMBuildMul(c->b, nctaid, ntid, "");
		hi = LLVMGetParam(c->fn, 1);
		if (grid) { /* the whole grid on each row in turn */
			c->grid = LLVMGetParam(c->fn, 2);
			c->tid = tid;
			c->ctaid = ctaid;
			c->nctaid = nctaid;
			c->lane = lo;
			c->nthreads = step;
			lo = cg_i64c(c, 0);
			step = cg_i64c(c, 1);
		} else if (c->lanes > 1) { /* a warp a row: blocks are whole warps (the runtime's 256 threads) */
			c->lane = LLVMBuildURem(c->b, lo, cg_i64c(c, c->lanes), "");
			lo = LLVMBuildUDiv(c->b, lo, cg_i64c(c, c->lanes), "");
			step = LLVMBuildUDiv(c->b, step, cg_i64c(c, c->lanes), "");
		}
	} else {
		lo = LLVMGetParam(c->fn, 1);
		hi = LLVMGetParam(c->fn, 2);
		step = cg_i64c(c, 1);
	}
	struct cg_loop l;
	cg_loop_begin(c, &l, lo, hi, NULL);
	enum ir_op op = b->nbody == 1 ? b->body[0].op : IR_OP_COUNT;
	if (cg_own_loop(op))
		cg_emit_gpu_only(c, b, l.i);
	else
		emit_row(c, b, l.i, split);
	cg_loop_end(c, &l, step, NULL);
	LLVMBuildRetVoid(c->b);
}

/* ---- slices that differ only in their start ---------------------------------- */

/* A stage's devices each slice their own piece of one buffer: kernels
 * equal but for the slice's start, a few hundred in a large plan. Each
 * such kernel's function calls one body the kernels of its kind share
 * (per module), the slice from the start of its operand, which it
 * receives moved by the bytes the kernel's own start is into it. The
 * plan's kernels stay as they are. */
static bool slice_alone(const struct plan_kernel *k)
{
	return k->op == IR_OP_SLICE && !k->nbody && k->nin == 1 && k->nout == 1 && k->a.start.n == k->shape[0].rank;
}

static bool slice_twins(const struct plan_kernel *a, const struct plan_kernel *b)
{
	return slice_alone(a) && slice_alone(b) && a->dtype[0] == b->dtype[0] && a->dtype[1] == b->dtype[1] &&
	       ir_shape_eq(&a->shape[0], &b->shape[0]) && ir_shape_eq(&a->shape[1], &b->shape[1]) &&
	       a->a.stride.n == b->a.stride.n &&
	       !memcmp(a->a.stride.v, b->a.stride.v, sizeof a->a.stride.v[0] * (size_t)a->a.stride.n);
}

/* twin[k]: the first kernel of k's kind when it has a twin among those
 * compiled (ok), else -1. */
static int slice_twin_map(const struct plan *p, const bool *ok, int *twin)
{
	int *first = ir_malloc(sizeof *first * ((size_t)p->nkernels + 1)), nfirst = 0;
	if (!first)
		return ir_errorf(-ENOMEM, "out of memory in codegen");
	for (int k = 0; k < p->nkernels; k++) {
		twin[k] = -1;
		if (!ok[k] || !slice_alone(&p->kernels[k]))
			continue;
		int f = 0;
		while (f < nfirst && !slice_twins(&p->kernels[first[f]], &p->kernels[k]))
			f++;
		if (f == nfirst)
			first[nfirst++] = k;
		else
			twin[k] = twin[first[f]] = first[f];
	}
	ir_free(first);
	return 0;
}

/* pcc_s<first>, kernel first's slice from the start of its operand, once a module. */
static LLVMValueRef twin_body(struct cg *c, const struct plan_kernel *k, int first, int core)
{
	char name[32];
	snprintf(name, sizeof name, "pcc_s%d", first);
	LLVMValueRef f = LLVMGetNamedFunction(c->mod, name);
	if (f)
		return f;
	struct plan_kernel z = *k;
	for (int d = 0; d < z.a.start.n; d++) {
		z.a.limit.v[d] -= z.a.start.v[d];
		z.a.start.v[d] = 0;
	}
	emit_fn(c, &z, first, core, name, true);
	return c->fn;
}

/* pcc_k<kid>: the shared body of its kind, its operand moved to its start. */
static void emit_twin(struct cg *c, const struct plan_kernel *k, int kid, int first, int core)
{
	LLVMValueRef body = twin_body(c, k, first, core);
	LLVMTypeRef pt[4];
	unsigned np = kernel_params(c, k, false, pt);
	char name[32];
	snprintf(name, sizeof name, "pcc_k%d", kid);
	LLVMValueRef fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(c->vd, pt, np, 0));
	if (c->gpu)
		LLVMSetFunctionCallConv(fn, 71); /* ptx_kernel */
	LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, fn, "entry"));
	/* bytes from the operand's start to the slice's, row-major */
	int64_t off = 0, stride = ir_dtype_size(k->dtype[0]);
	for (int d = k->shape[0].rank - 1; d >= 0; d--) {
		off += k->a.start.v[d] * stride;
		stride *= k->shape[0].dims[d];
	}
	LLVMValueRef args[4];
	for (unsigned i = 0; i < np; i++)
		args[i] = LLVMGetParam(fn, i);
	args[np] = cg_i64c(c, off);
	LLVMTypeRef st[4];
	unsigned ns = kernel_params(c, k, true, st);
	LLVMBuildCall2(c->b, LLVMFunctionType(c->vd, st, ns, 0), body, args, ns, "");
	LLVMBuildRetVoid(c->b);
}

/* Kernel kid's function: its own, or a call of its kind's shared body. */
static void emit_kernel(struct cg *c, const struct plan_kernel *k, int kid, int core, const int *twin)
{
	if (twin[kid] >= 0) {
		emit_twin(c, k, kid, twin[kid], core);
		return;
	}
	char name[32];
	snprintf(name, sizeof name, "pcc_k%d", kid);
	emit_fn(c, k, kid, core, name, false);
}

/* ---- modules and targets ------------------------------------------------------ */

static void cg_open(struct cg *c, bool gpu, const char *triple)
{
	memset(c, 0, sizeof *c);
	c->ctx = LLVMContextCreate();
	c->mod = LLVMModuleCreateWithNameInContext(gpu ? "pcc_gpu" : "pcc_host", c->ctx);
	LLVMSetTarget(c->mod, triple);
	c->b = LLVMCreateBuilderInContext(c->ctx);
	c->gpu = gpu;
	c->i1 = LLVMInt1TypeInContext(c->ctx);
	c->i8 = LLVMInt8TypeInContext(c->ctx);
	c->i32 = LLVMInt32TypeInContext(c->ctx);
	c->i64 = LLVMInt64TypeInContext(c->ctx);
	c->f32 = LLVMFloatTypeInContext(c->ctx);
	c->f64 = LLVMDoubleTypeInContext(c->ctx);
	c->ptr = LLVMPointerTypeInContext(c->ctx, 0);
	c->vd = LLVMVoidTypeInContext(c->ctx);
}

static void cg_close(struct cg *c)
{
	if (c->b)
		LLVMDisposeBuilder(c->b);
	if (c->mod)
		LLVMDisposeModule(c->mod);
	if (c->ctx)
		LLVMContextDispose(c->ctx);
	memset(c, 0, sizeof *c);
}

static int llvm_error(const char *what, char *msg)
{
	int rc = ir_errorf(-EINVAL, "codegen: %s: %s", what, msg ? msg : "failed");
	LLVMDisposeMessage(msg);
	return rc;
}

static int target_machine(const char *triple, const char *cpu, const char *features, int opt, LLVMTargetMachineRef *tm)
{
	LLVMTargetRef t;
	char *err = NULL;
	if (LLVMGetTargetFromTriple(triple, &t, &err))
		return llvm_error(triple, err);
	LLVMCodeGenOptLevel ol = opt >= 3   ? LLVMCodeGenLevelAggressive
				 : opt == 2 ? LLVMCodeGenLevelDefault
				 : opt == 1 ? LLVMCodeGenLevelLess
					    : LLVMCodeGenLevelNone;
	*tm = LLVMCreateTargetMachine(t, triple, cpu, features, ol, LLVMRelocPIC, LLVMCodeModelSmall);
	if (!*tm)
		return ir_errorf(-EINVAL, "codegen: no target machine for %s (cpu %s)", triple, cpu);
	return 0;
}

static int optimize(struct cg *c, LLVMTargetMachineRef tm, int opt)
{
	char *err = NULL;
	if (LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &err))
		return llvm_error("the generated module is invalid", err);
	LLVMDisposeMessage(err);
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopVectorization(po, opt >= 2);
	LLVMPassBuilderOptionsSetSLPVectorization(po, opt >= 2);
	char passes[32];
	snprintf(passes, sizeof passes, "default<O%d>", opt);
	LLVMErrorRef e = LLVMRunPasses(c->mod, passes, tm, po);
	LLVMDisposePassBuilderOptions(po);
	if (e)
		return llvm_error("optimizing", LLVMGetErrorMessage(e));
	return 0;
}

static int emit_to(LLVMTargetMachineRef tm, struct cg *c, LLVMCodeGenFileType ft, uint8_t **out, size_t *n)
{
	LLVMMemoryBufferRef mb;
	char *err = NULL;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, c->mod, ft, &err, &mb))
		return llvm_error("emitting code", err);
	*n = LLVMGetBufferSize(mb);
	*out = ir_malloc(*n + 1);
	if (*out) {
		memcpy(*out, LLVMGetBufferStart(mb), *n);
		(*out)[*n] = 0;
	}
	LLVMDisposeMemoryBuffer(mb);
	return *out ? 0 : ir_errorf(-ENOMEM, "out of memory in codegen");
}

/* libdevice (the GPU's math library, as LLVM bitcode) from the CUDA toolkit. */
static const char *libdevice_path(void)
{
	static const char *const paths[] = { "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc",
					     "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc",
					     "/usr/lib/cuda/nvvm/libdevice/libdevice.10.bc" };
	const char *env = getenv("PCC_LIBDEVICE");
	if (env)
		return access(env, R_OK) == 0 ? env : NULL;
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		if (access(paths[i], R_OK) == 0)
			return paths[i];
	return NULL;
}

static bool needs_math(const struct plan_kernel *k)
{
	struct cg_view v;
	const struct plan_kernel *b = cg_as_body(k, &v);
	for (int i = 0; i < b->nbody; i++)
		if (cg_needs_libm(b->body[i].op))
			return true;
	return false;
}

static char *cg_strdup(const char *s)
{
	char *d = ir_malloc(strlen(s) + 1);
	return d ? strcpy(d, s) : NULL;
}

/* Kernels no instruction runs are dropped; instructions renumbered. */
static int prune_kernels(struct plan *p)
{
	int *map = ir_malloc(sizeof *map * ((size_t)p->nkernels + 1)), n = 0;
	if (!map)
		return ir_errorf(-ENOMEM, "out of memory in codegen");
	for (int k = 0; k < p->nkernels; k++)
		map[k] = -1;
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++)
			if (p->devices[d].instr[i].kind == PLAN_KERNEL)
				map[p->devices[d].instr[i].kernel] = 0;
	for (int k = 0; k < p->nkernels; k++) {
		struct plan_kernel *x = &p->kernels[k];
		if (map[k] < 0) {
			plan_kernel_free(x);
			continue;
		}
		map[k] = n;
		p->kernels[n++] = *x;
	}
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++)
			if (p->devices[d].instr[i].kind == PLAN_KERNEL)
				p->devices[d].instr[i].kernel = map[p->devices[d].instr[i].kernel];
	p->nkernels = n;
	ir_free(map);
	return 0;
}

static bool uses_f16(const struct plan_kernel *k)
{
	for (int i = 0; i < k->nin + k->nout; i++)
		if (k->dtype[i] == IR_F16)
			return true;
	for (int i = 0; i < k->nbody; i++)
		if (k->body[i].dtype == IR_F16)
			return true;
	return false;
}

/* Features the host code may use, by CPU level (what pcc-run checks). */
static const char *cpu_features(const char *cpu)
{
	if (!strcmp(cpu, "x86-64-v4"))
		return "+sse4.2,+popcnt,+avx,+avx2,+fma,+bmi,+bmi2,+f16c,+avx512f,+avx512bw,+avx512vl,+avx512dq,"
		       "+avx512cd";
	if (!strcmp(cpu, "x86-64-v3"))
		return "+sse4.2,+popcnt,+avx,+avx2,+fma,+bmi,+bmi2,+f16c";
	if (!strcmp(cpu, "x86-64-v2"))
		return "+sse4.2,+popcnt";
	return "";
}

static int host_code(struct plan *p, const struct codegen_opts *o, const bool *ok, const int *core)
{
	const char *triple = "x86_64-pc-linux-gnu";
	const char *cpu = o->host_cpu ? o->host_cpu : "x86-64-v3";
	char *host_cpu = NULL, *host_feat = NULL;
	const char *feat = cpu_features(cpu);
	if (!strcmp(cpu, "native")) {
		host_cpu = LLVMGetHostCPUName();
		host_feat = LLVMGetHostCPUFeatures();
		cpu = host_cpu;
		feat = host_feat;
	} else if (!*feat) {
		return ir_errorf(-EINVAL, "--host-cpu %s: expected x86-64-v2, x86-64-v3, x86-64-v4 or native", cpu);
	}
	LLVMTargetMachineRef tm = NULL;
	struct cg c;
	int *twin = ir_malloc(sizeof *twin * ((size_t)p->nkernels + 1));
	bool *hk = ir_malloc(sizeof *hk * ((size_t)p->nkernels + 1));
	int rc = twin && hk ? 0 : ir_errorf(-ENOMEM, "out of memory in codegen");
	/* f16 converts by F16C's instructions: without them LLVM would call
	 * compiler-rt, which the plan's object cannot */
	for (int k = 0; rc == 0 && k < p->nkernels; k++)
		hk[k] = ok[k] && (strstr(feat, "+f16c") || !uses_f16(&p->kernels[k]));
	if (rc == 0)
		rc = slice_twin_map(p, hk, twin);
	if (rc == 0)
		rc = target_machine(triple, cpu, feat, o->opt_level, &tm);
	if (rc == 0) {
		cg_open(&c, false, triple);
		c.mvec = strstr(feat, "+avx512f") ? "b2d4e8" : strstr(feat, "+avx2") ? "b2d4" : "b2";
		LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
		LLVMSetModuleDataLayout(c.mod, dl);
		LLVMDisposeTargetData(dl);
		for (int k = 0; k < p->nkernels; k++)
			if (hk[k])
				emit_kernel(&c, &p->kernels[k], k, core[k], twin);
		cg_mvec_keep(&c);
		if ((rc = optimize(&c, tm, o->opt_level)) == 0)
			rc = emit_to(tm, &c, LLVMObjectFile, &p->host_object, &p->host_object_len);
		cg_close(&c);
		LLVMDisposeTargetMachine(tm);
	}
	if (rc == 0 && (!(p->host_cpu = cg_strdup(cpu)) || !(p->host_features = cg_strdup(feat))))
		rc = ir_errorf(-ENOMEM, "out of memory in codegen");
	for (int k = 0; rc == 0 && k < p->nkernels; k++)
		p->kernels[k].host = hk[k];
	LLVMDisposeMessage(host_cpu);
	LLVMDisposeMessage(host_feat);
	ir_free(twin);
	ir_free(hk);
	return rc;
}

/* Links libdevice in and makes every function but the kernels internal. */
static int link_libdevice(struct cg *c, const char *path)
{
	LLVMMemoryBufferRef mb;
	LLVMModuleRef lib;
	char *err = NULL;
	if (LLVMCreateMemoryBufferWithContentsOfFile(path, &mb, &err))
		return llvm_error(path, err);
	if (LLVMParseBitcodeInContext2(c->ctx, mb, &lib)) {
		LLVMDisposeMemoryBuffer(mb);
		return ir_errorf(-EINVAL, "codegen: %s: not LLVM bitcode", path);
	}
	LLVMDisposeMemoryBuffer(mb);
	LLVMSetTarget(lib, LLVMGetTarget(c->mod));
	LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(c->mod));
	if (LLVMLinkModules2(c->mod, lib))
		return ir_errorf(-EINVAL, "codegen: linking %s failed", path);
	for (LLVMValueRef f = LLVMGetFirstFunction(c->mod); f; f = LLVMGetNextFunction(f))
		if (!LLVMIsDeclaration(f) && LLVMGetFunctionCallConv(f) != 71)
			LLVMSetLinkage(f, LLVMInternalLinkage);
	return 0;
}

/* PTX modules per GPU architecture: the kernels spread over them, each
 * to the module with the fewest so far, a slice's twins to their first's
 * (so that their shared body is compiled once), each module compiled on a
 * thread of its own (par_run) and the
 * modules of an architecture linked by the driver into one (pcc-run). Their
 * count depends on the plan alone, never on this machine's cores, so that
 * the plan's bytes do too. */
#define CG_KERNELS_PER_MODULE 64
#define CG_MAX_MODULES 8

static const char *const cg_arch[2] = { "sm_80", "sm_90" };
static const char *const cg_arch_feat[2] = { "+ptx70", "+ptx78" };

struct gpu_jobs {
	const struct plan *p;
	const struct codegen_opts *o;
	const bool *g;
	const int *core;
	const int *twin; /* slice_twin_map's */
	const int *mod;  /* [kernels] the module of each */
	const char *lib;
	int arch0, nmod; /* job j: architecture arch0 + j / nmod, module j % nmod */
	char **text;     /* [jobs] each module's PTX (NULL: it has no kernel) */
	int *rc;         /* [jobs] */
	char (*err)[512];
};

/* NVPTX numbers call sites ("// callseq N", "prototype_N") from one
 * counter shared by every module this process compiles, so that the
 * numbers in a module would depend on which thread got there first. Renumbers
 * them in the order each first appears in the text: a module's PTX depends
 * on its kernels alone. Returns the new text (the old one freed), NULL when
 * out of memory. */
static char *canon_callsites(char *text)
{
	static const char *const marks[2] = { "callseq ", "prototype_" };
	size_t len = strlen(text), cap = len + 1, n = 0, nseen = 0, seencap = 0;
	char *out = ir_malloc(cap);
	unsigned long *seen = NULL;
	if (!out)
		goto oom;
	for (const char *s = text; *s;) {
		size_t mlen = 0;
		for (int m = 0; m < 2 && !mlen; m++)
			if (!strncmp(s, marks[m], strlen(marks[m])) && s[strlen(marks[m])] >= '0' &&
			    s[strlen(marks[m])] <= '9')
				mlen = strlen(marks[m]);
		if (!mlen) {
			out[n++] = *s++;
			continue;
		}
		char *end;
		unsigned long v = strtoul(s + mlen, &end, 10);
		size_t k = 0;
		while (k < nseen && seen[k] != v)
			k++;
		if (k == nseen) {
			if (nseen == seencap) {
				seencap = seencap ? 2 * seencap : 16;
				unsigned long *g = ir_realloc(seen, seencap * sizeof *seen);
				if (!g)
					goto oom;
				seen = g;
			}
			seen[nseen++] = v;
		}
		/* room for the new number (20 digits at most) and the rest */
		if (n + mlen + 24 + len - (size_t)(end - text) >= cap) {
			cap = n + mlen + 24 + len - (size_t)(end - text) + 1;
			char *g = ir_realloc(out, cap);
			if (!g)
				goto oom;
			out = g;
		}
		memcpy(out + n, s, mlen);
		n += mlen;
		n += (size_t)sprintf(out + n, "%zu", k);
		s = end;
	}
	out[n] = 0;
	ir_free(seen);
	ir_free(text);
	return out;
oom:
	ir_free(seen);
	ir_free(out);
	ir_free(text);
	return NULL;
}

static int gpu_module(struct gpu_jobs *x, int j, char **out)
{
	const struct plan *p = x->p;
	int a = x->arch0 + j / x->nmod, m = j % x->nmod, rc = 0, any = 0;
	for (int k = 0; k < p->nkernels; k++)
		any |= x->g[k] && x->mod[k] == m;
	if (!any)
		return 0;
	LLVMTargetMachineRef tm;
	struct cg c;
	if ((rc = target_machine("nvptx64-nvidia-cuda", cg_arch[a], cg_arch_feat[a], x->o->opt_level, &tm)) < 0)
		return rc;
	cg_open(&c, true, "nvptx64-nvidia-cuda");
	LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
	LLVMSetModuleDataLayout(c.mod, dl);
	LLVMDisposeTargetData(dl);
	bool math = false;
	for (int k = 0; k < p->nkernels; k++)
		if (x->g[k] && x->mod[k] == m) {
			emit_kernel(&c, &p->kernels[k], k, x->core[k], x->twin);
			math |= needs_math(&p->kernels[k]);
		}
	size_t n;
	if (math)
		rc = link_libdevice(&c, x->lib);
	if (rc == 0 && (rc = optimize(&c, tm, x->o->opt_level)) == 0)
		rc = emit_to(tm, &c, LLVMAssemblyFile, (uint8_t **)out, &n);
	if (rc == 0 && !(*out = canon_callsites(*out)))
		rc = ir_errorf(-ENOMEM, "out of memory in codegen");
	cg_close(&c);
	LLVMDisposeTargetMachine(tm);
	return rc;
}

static int gpu_job(void *arg, int j)
{
	struct gpu_jobs *x = arg;
	if ((x->rc[j] = gpu_module(x, j, &x->text[j])) < 0)
		snprintf(x->err[j], sizeof x->err[j], "%s", ir_error());
	return 0; /* the others go on: the first failure in order is the error */
}

static int gpu_code(struct plan *p, const struct codegen_opts *o, const bool *g0, const int *core)
{
	/* a cluster of sm_90 GPUs needs sm_90 code only, one of older GPUs
	 * sm_80 only (which sm_90 GPUs run too); an unknown GPU both */
	int arch0 = o->sm >= 90 ? 1 : 0, narch = o->sm == 0 ? 2 : 1, ngpu = 0;
	const char *lib = libdevice_path();
	bool *g = ir_calloc((size_t)p->nkernels + 1, sizeof *g);
	int *twin = ir_malloc(sizeof *twin * ((size_t)p->nkernels + 1));
	int *mod = ir_malloc(sizeof *mod * ((size_t)p->nkernels + 1));
	if (!g || !twin || !mod) {
		ir_free(g);
		ir_free(twin);
		ir_free(mod);
		return ir_errorf(-ENOMEM, "out of memory in codegen");
	}
	for (int k = 0; k < p->nkernels; k++) {
		g[k] = g0[k] && (lib || !needs_math(&p->kernels[k]));
		ngpu += g[k];
	}
	int nmod = (ngpu + CG_KERNELS_PER_MODULE - 1) / CG_KERNELS_PER_MODULE;
	nmod = nmod < 1 ? 1 : nmod > CG_MAX_MODULES ? CG_MAX_MODULES : nmod;
	int jobs = narch * nmod;
	struct gpu_jobs x = {
		.p = p, .o = o, .g = g, .core = core, .twin = twin, .mod = mod, .lib = lib, .arch0 = arch0, .nmod = nmod
	};
	int rc = slice_twin_map(p, g, twin);
	int load[CG_MAX_MODULES] = { 0 };
	for (int k = 0; rc == 0 && k < p->nkernels; k++) {
		int m = 0;
		if (twin[k] >= 0 && twin[k] < k) {
			m = mod[twin[k]];
		} else {
			for (int j = 1; j < nmod; j++)
				m = load[j] < load[m] ? j : m;
		}
		mod[k] = m;
		load[m] += g[k];
	}
	x.text = ir_calloc((size_t)jobs, sizeof *x.text);
	x.rc = ir_calloc((size_t)jobs, sizeof *x.rc);
	x.err = ir_calloc((size_t)jobs, sizeof *x.err);
	if (rc == 0 && (!x.text || !x.rc || !x.err || !(p->ptx = ir_calloc((size_t)jobs, sizeof *p->ptx))))
		rc = ir_errorf(-ENOMEM, "out of memory in codegen");
	if (rc == 0)
		par_run(jobs, gpu_job, &x);
	for (int j = 0; rc == 0 && j < jobs; j++)
		if (x.rc[j] < 0)
			rc = ir_errorf(x.rc[j], "%s", x.err[j]);
	for (int j = 0; rc == 0 && j < jobs; j++) {
		if (!x.text[j])
			continue;
		p->ptx[p->nptx].text = x.text[j];
		x.text[j] = NULL;
		if (!(p->ptx[p->nptx++].arch = cg_strdup(cg_arch[arch0 + j / nmod])))
			rc = ir_errorf(-ENOMEM, "out of memory in codegen");
	}
	for (int j = 0; x.text && j < jobs; j++)
		ir_free(x.text[j]);
	for (int k = 0; rc == 0 && k < p->nkernels; k++)
		p->kernels[k].gpu = g[k];
	ir_free(x.text);
	ir_free(x.rc);
	ir_free(x.err);
	ir_free(g);
	ir_free(twin);
	ir_free(mod);
	return rc;
}

int codegen_plan(struct plan *p, const struct codegen_opts *o)
{
	plan_code_free(p); /* a plan read with code: replaced whole */
	int rc = prune_kernels(p);
	if (rc < 0)
		return rc;
	bool *ok = ir_calloc((size_t)p->nkernels + 1, sizeof *ok);
	bool *okg = ir_calloc((size_t)p->nkernels + 1, sizeof *okg);
	int *core = ir_calloc((size_t)p->nkernels + 1, sizeof *core);
	int *coreg = ir_calloc((size_t)p->nkernels + 1, sizeof *coreg);
	bool any = false, anyh = false;
	if (!ok || !okg || !core || !coreg) {
		rc = ir_errorf(-ENOMEM, "out of memory in codegen");
		goto out;
	}
	for (int k = 0; k < p->nkernels; k++) {
		okg[k] = cg_kernel_compiles_gpu(&p->kernels[k], &coreg[k]);
		ok[k] = o->host_as_gpu ? okg[k] : cg_kernel_compiles(&p->kernels[k], &core[k]);
		core[k] = o->host_as_gpu ? coreg[k] : core[k];
		p->kernels[k].rows = ok[k] ? cg_kernel_rows(&p->kernels[k], false) : 0;
		anyh |= ok[k];
		any |= ok[k] || (o->ptx && okg[k]);
	}
	if (!any)
		goto out;
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	if (o->host && anyh && (rc = host_code(p, o, ok, core)) < 0)
		goto out;
	if (o->ptx)
		rc = gpu_code(p, o, okg, coreg);
out:
	ir_free(ok);
	ir_free(okg);
	ir_free(core);
	ir_free(coreg);
	return rc;
}
