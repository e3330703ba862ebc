/*
 * codegen_gpu.c: the kernels only GPUs compile, on their own
 * (cg_kernel_compiles_gpu): a scatter a result row per thread, a
 * convolution, window op or dot a result element per thread, a top-k or
 * cumsum a line along its axis per thread. The host runs these ops on the
 * arena's buffers, by BLAS or by the reference kernel; test_codegen
 * compiles these for the host too (codegen_opts.host_as_gpu) and checks
 * them against the interpreter.
 */
#include <math.h>
#include <string.h>

#include "compiler/codegen/codegen_internal.h"

/* A scatter's row n of the result (a GPU kernel: cg_kernel_compiles_gpu):
 * the operand's row, then every update row whose index is n combined into
 * it in index order, each step rounded to the dtype, as the interpreter
 * does; a thread per row reads all I indices (for an embedding gradient,
 * vocabulary x tokens compares) and writes only its own row. */
static void scatter_row(struct cg *c, const struct plan_kernel *b, LLVMValueRef n)
{
	const struct plan_fop *f = &b->body[0];
	const struct ir_shape *xs = &b->shape[0];
	enum ir_dtype t = b->dtype[0], it = b->dtype[1];
	int64_t N = xs->dims[0], R = cg_tail_numel(xs, 1), I = ir_shape_numel(&b->shape[1]);
	LLVMValueRef out = c->base[b->nin], row = LLVMBuildMul(c->b, n, cg_i64c(c, R), "");
	struct cg_loop l, u;
	cg_loop_begin(c, &l, cg_i64c(c, 0), cg_i64c(c, R), NULL);
	LLVMValueRef off = LLVMBuildAdd(c->b, row, l.i, "");
	cg_store(c, out, t, off, cg_load(c, c->base[0], t, off));
	cg_loop_end(c, &l, cg_i64c(c, 1), NULL);
	cg_loop_begin(c, &l, cg_i64c(c, 0), cg_i64c(c, I), NULL);
	LLVMValueRef j = cg_to_i64(c, cg_load(c, c->base[1], it, l.i), it);
	j = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, j, cg_i64c(c, 0), ""),
			    LLVMBuildAdd(c->b, j, cg_i64c(c, N), ""), j, "");
	cg_trap_unless_index(c, j, N);
	LLVMBasicBlockRef mine = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "mine");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "next");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, j, n, ""), mine, next);
	LLVMPositionBuilderAtEnd(c->b, mine);
	LLVMValueRef urow = LLVMBuildMul(c->b, l.i, cg_i64c(c, R), "");
	cg_loop_begin(c, &u, cg_i64c(c, 0), cg_i64c(c, R), NULL);
	LLVMValueRef o = LLVMBuildAdd(c->b, row, u.i, "");
	LLVMValueRef x = cg_load(c, out, t, o), y = cg_load(c, c->base[2], t, LLVMBuildAdd(c->b, urow, u.i, "")), r;
	bool fl = ir_dtype_is_float(t);
	int64_t mode = f->a.mode;
	if (mode == IR_SCATTER_NONE) {
		r = y;
	} else if (fl) {
		LLVMValueRef a = cg_to_f64(c, x, t), d = cg_to_f64(c, y, t);
		r = cg_from_f64(c,
				mode == IR_SCATTER_ADD   ? LLVMBuildFAdd(c->b, a, d, "")
				: mode == IR_SCATTER_MUL ? LLVMBuildFMul(c->b, a, d, "")
							 : cg_fmax(c, a, d, mode == IR_SCATTER_MAX),
				t);
	} else {
		LLVMValueRef a = cg_to_i64(c, x, t), d = cg_to_i64(c, y, t);
		r = cg_from_i64(
			c,
			mode == IR_SCATTER_ADD ? LLVMBuildAdd(c->b, a, d, "")
			: mode == IR_SCATTER_MUL
				? LLVMBuildMul(c->b, a, d, "")
				: LLVMBuildSelect(c->b,
						  LLVMBuildICmp(c->b, mode == IR_SCATTER_MAX ? LLVMIntSGT : LLVMIntSLT,
								d, a, ""),
						  d, a, ""),
			t);
	}
	cg_store(c, out, t, o, r);
	cg_loop_end(c, &u, cg_i64c(c, 1), NULL);
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, next);
	cg_loop_end(c, &l, cg_i64c(c, 1), NULL);
}

/* A convolution's or a window op's result element at row r (GPU kernels of
 * their own: cg_kernel_compiles_gpu), a thread each. Convolution: the sum
 * over the group's channels and the kernel's taps, in f32 for f32 and bf16
 * data (f64 for f64), taps in the padding skipped, the interpreter's
 * terms in another order. Window: max (NaN wins) or sum, in f64 over the
 * taps inside the operand in row-major order, as the interpreter does. */
static void window_elem(struct cg *c, const struct plan_kernel *b, LLVMValueRef r)
{
	const struct plan_fop *f = &b->body[0];
	const struct ir_shape *os = &f->shape, *xs = &b->shape[0];
	enum ir_dtype t = f->dtype;
	bool conv = f->op == IR_OP_CONV, max = f->op == IR_OP_WINDOW_MAX;
	LLVMValueRef idx[IR_MAX_RANK], ti[IR_MAX_RANK];
	cg_delinear(c, r, os, 0, os->rank, idx);
	LLVMTypeRef at = conv && t != IR_F64 ? c->f32 : c->f64;
	struct ir_shape win = { .rank = 0 };
	int64_t Cg = 1, Og = 1;
	if (conv) {
		const struct ir_shape *ws = &b->shape[1];
		Cg = xs->dims[1] / f->a.groups;
		Og = ws->dims[0] / f->a.groups;
		win.dims[win.rank++] = Cg;
		for (int d = 2; d < ws->rank; d++)
			win.dims[win.rank++] = ws->dims[d];
	} else {
		for (int d = 0; d < xs->rank; d++)
			win.dims[win.rank++] = f->a.window.v[d];
	}
	struct cg_loop l;
	LLVMValueRef init = LLVMConstReal(at, max ? -INFINITY : 0.0);
	cg_loop_begin(c, &l, cg_i64c(c, 0), cg_i64c(c, ir_shape_numel(&win)), init);
	cg_delinear(c, l.i, &win, 0, win.rank, ti);
	LLVMValueRef inside = LLVMConstInt(c->i1, 1, 0), xoff;
	int first = conv ? 2 : 0; /* the spatial dims: conv's after N and C, a window's all */
	if (conv) {
		LLVMValueRef g = LLVMBuildUDiv(c->b, idx[1], cg_i64c(c, Og), "");
		xoff = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, idx[0], cg_i64c(c, xs->dims[1]), ""),
				    LLVMBuildAdd(c->b, LLVMBuildMul(c->b, g, cg_i64c(c, Cg), ""), ti[0], ""), "");
	} else {
		xoff = cg_i64c(c, 0);
	}
	for (int d = first; d < xs->rank; d++) {
		int a = conv ? d - 2 : d; /* the attribute lists' entry */
		LLVMValueRef pos = LLVMBuildMul(c->b, idx[d], cg_i64c(c, f->a.stride.v[a]), "");
		pos = LLVMBuildSub(c->b, pos, cg_i64c(c, f->a.pad_lo.v[a]), "");
		pos = LLVMBuildAdd(c->b, pos,
				   LLVMBuildMul(c->b, ti[conv ? d - 1 : d], cg_i64c(c, f->a.dilation.v[a]), ""), "");
		LLVMValueRef in = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntSGE, pos, cg_i64c(c, 0), ""),
					       LLVMBuildICmp(c->b, LLVMIntSLT, pos, cg_i64c(c, xs->dims[d]), ""), "");
		inside = LLVMBuildAnd(c->b, inside, in, "");
		pos = LLVMBuildSelect(c->b, in, pos, cg_i64c(c, 0), ""); /* a load kept in bounds */
		xoff = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, xoff, cg_i64c(c, xs->dims[d]), ""), pos, "");
	}
	LLVMValueRef x = cg_load(c, c->base[0], t, xoff), n;
	if (conv) {
		LLVMValueRef woff = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, idx[1], cg_i64c(c, ir_shape_numel(&win)), ""),
						 l.i, "");
		LLVMValueRef w = cg_load(c, c->base[1], t, woff);
		if (at == c->f64) {
			x = cg_to_f64(c, x, t);
			w = cg_to_f64(c, w, t);
		}
		n = LLVMBuildSelect(c->b, inside, cg_fmuladd(c, x, w, l.acc), l.acc, "");
	} else {
		x = cg_to_f64(c, x, t);
		n = LLVMBuildSelect(c->b, inside, max ? cg_fmax(c, l.acc, x, true) : LLVMBuildFAdd(c->b, l.acc, x, ""),
				    l.acc, "");
	}
	LLVMValueRef acc = cg_loop_end(c, &l, cg_i64c(c, 1), n);
	cg_store(c, c->base[b->nin], t, r, at == c->f64 ? cg_from_f64(c, acc, t) : cg_round(c, acc, t));
}

/* A dot's result element at row r (a GPU kernel of its own, for a dot
 * whose operands are not matrices cuBLASLt takes in place), a thread
 * each: the products over the contracting dims in row-major order, summed
 * in f32 for f32 and bf16 (f64 for f64), as a GEMM would. */
static void dot_elem(struct cg *c, const struct plan_kernel *b, LLVMValueRef r)
{
	const struct plan_fop *f = &b->body[0];
	const struct ir_shape *os = &f->shape, *ls = &b->shape[0], *rs = &b->shape[1];
	enum ir_dtype t = f->dtype;
	LLVMTypeRef at = t == IR_F64 ? c->f64 : c->f32;
	LLVMValueRef idx[IR_MAX_RANK], li[IR_MAX_RANK], ri[IR_MAX_RANK], ci[IR_MAX_RANK];
	cg_delinear(c, r, os, 0, os->rank, idx);
	const struct ir_attrs *a = &f->a;
	int nb = a->lhs_batch.n, o = nb;
	struct ir_shape ks = { .rank = a->lhs_contract.n };
	for (int j = 0; j < ks.rank; j++)
		ks.dims[j] = ls->dims[a->lhs_contract.v[j]];
	for (int j = 0; j < nb; j++) {
		li[a->lhs_batch.v[j]] = idx[j];
		ri[a->rhs_batch.v[j]] = idx[j];
	}
	bool taken[IR_MAX_RANK] = { false };
	for (int j = 0; j < nb; j++)
		taken[a->lhs_batch.v[j]] = true;
	for (int j = 0; j < a->lhs_contract.n; j++)
		taken[a->lhs_contract.v[j]] = true;
	for (int d = 0; d < ls->rank; d++)
		if (!taken[d])
			li[d] = idx[o++];
	memset(taken, 0, sizeof taken);
	for (int j = 0; j < nb; j++)
		taken[a->rhs_batch.v[j]] = true;
	for (int j = 0; j < a->rhs_contract.n; j++)
		taken[a->rhs_contract.v[j]] = true;
	for (int d = 0; d < rs->rank; d++)
		if (!taken[d])
			ri[d] = idx[o++];
	struct cg_loop l;
	cg_loop_begin(c, &l, cg_i64c(c, 0), cg_i64c(c, ir_shape_numel(&ks)), LLVMConstReal(at, 0));
	cg_delinear(c, l.i, &ks, 0, ks.rank, ci);
	for (int j = 0; j < ks.rank; j++) {
		li[a->lhs_contract.v[j]] = ci[j];
		ri[a->rhs_contract.v[j]] = ci[j];
	}
	LLVMValueRef x = cg_load(c, c->base[0], t, cg_linear(c, ls, li, 0, ls->rank));
	LLVMValueRef y = cg_load(c, c->base[1], t, cg_linear(c, rs, ri, 0, rs->rank));
	LLVMValueRef acc = cg_loop_end(c, &l, cg_i64c(c, 1), cg_fmuladd(c, x, y, l.acc));
	cg_store(c, c->base[b->nin], t, r, cg_round(c, acc, t));
}

/* A line along the axis of a top-k or a cumsum (GPU kernels of their own),
 * row r of the operand's other dims, a thread each. Cumsum: the running sum
 * in f64 (i64 wrapping for integers) in the axis's order or its reverse,
 * as the interpreter's. Top-k: each element's place is the count of those
 * that rank before it (greater, or smaller for IR_TOPK_SMALLEST; NaN above
 * every number; ties to the lower index), which is the interpreter's stable
 * sort's; an element placed below k is written with its index. Each line
 * costs L^2 compares: for routing among experts, not for a vocabulary. */
static void line(struct cg *c, const struct plan_kernel *b, LLVMValueRef r)
{
	const struct plan_fop *f = &b->body[0];
	const struct ir_shape *xs = &b->shape[0];
	enum ir_dtype t = b->dtype[0];
	int ax = (int)f->a.axis;
	int64_t L = xs->dims[ax], inner = cg_tail_numel(xs, ax + 1);
	bool fl = ir_dtype_is_float(t);
	LLVMValueRef o = LLVMBuildUDiv(c->b, r, cg_i64c(c, inner), ""),
		     i = LLVMBuildURem(c->b, r, cg_i64c(c, inner), "");
	LLVMValueRef base = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, o, cg_i64c(c, L * inner), ""), i, "");
	struct cg_loop l, m;
	if (f->op == IR_OP_CUMSUM) {
		bool excl = f->a.mode & IR_CUMSUM_EXCLUSIVE, rev = f->a.mode & IR_CUMSUM_REVERSE;
		cg_loop_begin(c, &l, cg_i64c(c, 0), cg_i64c(c, L), fl ? LLVMConstReal(c->f64, 0) : cg_i64c(c, 0));
		LLVMValueRef pos = rev ? LLVMBuildSub(c->b, cg_i64c(c, L - 1), l.i, "") : l.i;
		LLVMValueRef e = LLVMBuildAdd(c->b, base, LLVMBuildMul(c->b, pos, cg_i64c(c, inner), ""), "");
		LLVMValueRef x = cg_load(c, c->base[0], t, e);
		x = fl ? cg_to_f64(c, x, t) : cg_to_i64(c, x, t);
		LLVMValueRef next = fl ? LLVMBuildFAdd(c->b, l.acc, x, "") : LLVMBuildAdd(c->b, l.acc, x, "");
		LLVMValueRef v = excl ? l.acc : next;
		cg_store(c, c->base[b->nin], t, e, fl ? cg_from_f64(c, v, t) : cg_from_i64(c, v, t));
		cg_loop_end(c, &l, cg_i64c(c, 1), next);
		return;
	}
	bool smallest = f->a.mode & IR_TOPK_SMALLEST;
	int64_t K = f->a.k;
	cg_loop_begin(c, &l, cg_i64c(c, 0), cg_i64c(c, L), NULL);
	LLVMValueRef ea = LLVMBuildAdd(c->b, base, LLVMBuildMul(c->b, l.i, cg_i64c(c, inner), ""), "");
	LLVMValueRef xa = cg_load(c, c->base[0], t, ea);
	LLVMValueRef a = fl ? cg_to_f64(c, xa, t) : cg_to_i64(c, xa, t);
	cg_loop_begin(c, &m, cg_i64c(c, 0), cg_i64c(c, L), cg_i64c(c, 0));
	LLVMValueRef eb = LLVMBuildAdd(c->b, base, LLVMBuildMul(c->b, m.i, cg_i64c(c, inner), ""), "");
	LLVMValueRef xb = cg_load(c, c->base[0], t, eb);
	LLVMValueRef bv = fl ? cg_to_f64(c, xb, t) : cg_to_i64(c, xb, t), ba, ab;
	if (fl) { /* ranks_before(x, y): NaN first (largest) or last (smallest) */
		LLVMValueRef bn = LLVMBuildFCmp(c->b, LLVMRealUNO, bv, bv, ""),
			     an = LLVMBuildFCmp(c->b, LLVMRealUNO, a, a, "");
		LLVMValueRef lt_ba = LLVMBuildFCmp(c->b, smallest ? LLVMRealOLT : LLVMRealOGT, bv, a, "");
		LLVMValueRef lt_ab = LLVMBuildFCmp(c->b, smallest ? LLVMRealOLT : LLVMRealOGT, a, bv, "");
		LLVMValueRef t1 = LLVMConstInt(c->i1, 1, 0), f0 = LLVMConstInt(c->i1, 0, 0);
		/* b before a: b NaN -> !smallest && a not NaN; a NaN -> smallest; else compare */
		ba = LLVMBuildSelect(c->b, bn, smallest ? f0 : LLVMBuildNot(c->b, an, ""),
				     LLVMBuildSelect(c->b, an, smallest ? t1 : f0, lt_ba, ""), "");
		ab = LLVMBuildSelect(c->b, an, smallest ? f0 : LLVMBuildNot(c->b, bn, ""),
				     LLVMBuildSelect(c->b, bn, smallest ? t1 : f0, lt_ab, ""), "");
	} else {
		ba = LLVMBuildICmp(c->b, smallest ? LLVMIntSLT : LLVMIntSGT, bv, a, "");
		ab = LLVMBuildICmp(c->b, smallest ? LLVMIntSLT : LLVMIntSGT, a, bv, "");
	}
	LLVMValueRef tie_first = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, m.i, l.i, ""),
					      LLVMBuildNot(c->b, ab, ""), "");
	LLVMValueRef before = LLVMBuildOr(c->b, ba, tie_first, "");
	LLVMValueRef rank = cg_loop_end(c, &m, cg_i64c(c, 1),
					LLVMBuildAdd(c->b, m.acc, LLVMBuildZExt(c->b, before, c->i64, ""), ""));
	LLVMBasicBlockRef put = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kept");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "next");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, rank, cg_i64c(c, K), ""), put, next);
	LLVMPositionBuilderAtEnd(c->b, put);
	LLVMValueRef out = LLVMBuildAdd(c->b, LLVMBuildMul(c->b, o, cg_i64c(c, K * inner), ""),
					LLVMBuildAdd(c->b, LLVMBuildMul(c->b, rank, cg_i64c(c, inner), ""), i, ""), "");
	cg_store(c, c->base[b->nin], t, out, xa);
	cg_store(c, c->base[b->nin + 1], IR_I64, out, l.i);
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, next);
	cg_loop_end(c, &l, cg_i64c(c, 1), NULL);
}

void cg_emit_gpu_only(struct cg *c, const struct plan_kernel *b, LLVMValueRef r)
{
	enum ir_op op = b->body[0].op;
	if (op == IR_OP_SCATTER)
		scatter_row(c, b, r);
	else if (op == IR_OP_TOPK || op == IR_OP_CUMSUM)
		line(c, b, r);
	else if (op == IR_OP_DOT)
		dot_elem(c, b, r);
	else
		window_elem(c, b, r);
}
