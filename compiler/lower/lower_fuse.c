/*
 * lower_fuse.c: the fusion pass over a stage's template program (every
 * device of the stage runs it), before the memory plan, so that a value
 * fused away never gets a buffer in the arena.
 *
 * A kernel instruction C absorbs the producer P of one of its operands
 * when the value passes through nothing else: P's result buffer is a
 * temporary written once (by P) and read by C alone. P's ops then run
 * inside C's kernel (the fused kernel's body, plan.h) and P's instruction
 * goes away. Groups grow in program order, so a chain of elementwise ops,
 * broadcasts and transposes becomes one loop over the last one's result.
 * What may join (cg_op_class, codegen.h):
 *   - a loop group (elementwise and data movement ops, constants, iota)
 *     joins any fusible consumer: it is evaluated per element of what the
 *     consumer reads, as an elementwise prologue of a reduction, softmax
 *     or layer norm too; when the consumer broadcasts it to more elements
 *     only if it is cheap (no op but data movement, conversion and
 *     constants), so that fusion never multiplies real work;
 *   - a group with a reduction, softmax or layer norm (its core) joins an
 *     elementwise consumer that reads it element for element (the core's
 *     epilogue: the scaling after a mean, a residual add after layer norm),
 *     never another group with a core.
 * Nor when P's operands, then live until C, would raise the program's
 * peak of live temporaries (keeps_peak; in a pipelined program, nor raise
 * the bytes live anywhere): fusion never raises the peak.
 * Never across anything but kernels (collectives, transfers, copies), nor
 * across the boundaries of the per-micro-batch, forward and per-step
 * parts; never when an instruction in between writes a buffer P reads, or
 * when C writes one (in place) that P reads. Dots, convolutions, gathers and
 * the rest stay kernels of their own (library calls), except that on CPU
 * ranks a finished loop group that reads a dot's or a convolution's result
 * element for element takes that call as its core (absorb_core, a second
 * pass): the call writes the group's result buffer and the group's ops
 * then run on it in place, while it is in cache (bias, activation,
 * residual add: a pass over the result and a buffer fewer). GPU plans keep
 * them apart (cuBLASLt's epilogues cover only some). A dot reading a
 * transpose's result under the same conditions reads the transpose's
 * operand instead, through renamed dims (fold_transpose: a gemm flag in
 * place of a copy per step). PCC_NO_FUSE=1 in the
 * environment turns the pass off (to measure what it buys).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/codegen/codegen.h"
#include "compiler/lower/lower_internal.h"

#define FUSE_MAX_OPS 64
#define FUSE_MAX_LEAVES 16

/* A group under construction: refs >= 0 are ops of the group, < 0 are
 * -(buffer + 1). The last op is the root. */
struct group {
	int nop;
	struct plan_fop op[FUSE_MAX_OPS];
	int ref[FUSE_MAX_OPS][PLAN_FOP_MAX_IN];
};

static int ref_buf(int r)
{
	return -r - 1;
}

/* The group of instruction x (its kernel, single op or fused). */
static bool group_of(const struct lower *L, const struct lw_ins *x, struct group *g)
{
	const struct plan_kernel *k = &L->p->kernels[x->kernel];
	const int *arg = &L->args[x->arg];
	if (k->nout != 1)
		return false;
	if (!k->nbody) {
		if (k->nin > PLAN_FOP_MAX_IN)
			return false;
		g->nop = 1;
		g->op[0] = (struct plan_fop){
			.op = k->op, .a = k->a, .nin = k->nin, .dtype = k->dtype[k->nin], .shape = k->shape[k->nin]
		};
		for (int j = 0; j < k->nin; j++)
			g->ref[0][j] = -arg[j] - 1;
		return true;
	}
	if (k->nbody > FUSE_MAX_OPS)
		return false;
	g->nop = k->nbody;
	for (int i = 0; i < k->nbody; i++) {
		g->op[i] = k->body[i];
		for (int j = 0; j < k->body[i].nin; j++) {
			int v = k->body[i].in[j];
			g->ref[i][j] = v < k->nin ? -arg[v] - 1 : v - k->nin;
		}
	}
	return true;
}

static enum cg_class op_class(const struct group *g, int i, const struct lower *L)
{
	enum ir_dtype dt[PLAN_FOP_MAX_IN];
	struct ir_shape sh[PLAN_FOP_MAX_IN];
	for (int j = 0; j < g->op[i].nin; j++) {
		int r = g->ref[i][j];
		dt[j] = r >= 0 ? g->op[r].dtype : L->buf[ref_buf(r)].dtype;
		sh[j] = r >= 0 ? g->op[r].shape : L->buf[ref_buf(r)].shape;
	}
	return cg_op_class(g->op[i].op, &g->op[i].a, g->op[i].nin, dt, sh, g->op[i].dtype);
}

/* Whether every op of g compiles; *core: the op with a reduction, -1. */
static bool group_ok(const struct lower *L, const struct group *g, int *core, bool *cheap)
{
	*core = -1;
	*cheap = true;
	for (int i = 0; i < g->nop; i++) {
		enum cg_class c = op_class(g, i, L);
		if (c == CG_NONE)
			return false;
		if (c == CG_REDUCE || c == CG_ROW) {
			if (*core >= 0)
				return false;
			*core = i;
		}
		if (c != CG_MOVE && g->op[i].op != IR_OP_CONVERT && g->op[i].op != IR_OP_CONSTANT)
			*cheap = false;
	}
	return true;
}

static bool group_reads(const struct group *g, int b)
{
	for (int i = 0; i < g->nop; i++)
		for (int j = 0; j < g->op[i].nin; j++)
			if (g->ref[i][j] == -b - 1)
				return true;
	return false;
}

/* Whether every read of buffer b in g is element for element: each op on
 * the way from it to the root is elementwise. */
static bool reads_identity(const struct lower *L, const struct group *g, int b)
{
	bool ident[FUSE_MAX_OPS]; /* op i's result reaches the root elementwise */
	for (int i = g->nop - 1; i >= 0; i--) {
		ident[i] = i == g->nop - 1;
		for (int u = i + 1; u < g->nop && !ident[i]; u++)
			for (int j = 0; j < g->op[u].nin; j++)
				if (g->ref[u][j] == i && ident[u] && op_class(g, u, L) == CG_ELEM)
					ident[i] = true;
	}
	for (int i = 0; i < g->nop; i++)
		for (int j = 0; j < g->op[i].nin; j++)
			if (g->ref[i][j] == -b - 1 && (!ident[i] || op_class(g, i, L) != CG_ELEM))
				return false;
	return true;
}

static int count_leaves(const struct group *g, int *leaf)
{
	int n = 0;
	for (int i = 0; i < g->nop; i++)
		for (int j = 0; j < g->op[i].nin; j++) {
			int r = g->ref[i][j], k;
			if (r >= 0)
				continue;
			for (k = 0; k < n && leaf[k] != ref_buf(r); k++)
				;
			if (k == n) {
				if (n == FUSE_MAX_LEAVES)
					return -1;
				leaf[n++] = ref_buf(r);
			}
		}
	return n;
}

/* c = p's ops, then c's with buffer b replaced by p's root. */
static bool merge(struct group *c, const struct group *p, int b)
{
	struct group m;
	if (p->nop + c->nop > FUSE_MAX_OPS)
		return false;
	memcpy(&m, p, sizeof m);
	for (int i = 0; i < c->nop; i++) {
		m.op[p->nop + i] = c->op[i];
		for (int j = 0; j < c->op[i].nin; j++) {
			int r = c->ref[i][j];
			m.ref[p->nop + i][j] = r >= 0 ? r + p->nop : r == -b - 1 ? p->nop - 1 : r;
		}
	}
	m.nop = p->nop + c->nop;
	int leaf[FUSE_MAX_LEAVES];
	if (count_leaves(&m, leaf) < 0)
		return false;
	*c = m;
	return true;
}

struct fuse {
	struct lower *L;
	int *writes, *reads, *writer, *seg, *last;
	bool *dead;
	int64_t *live; /* per instruction: bytes of the temporaries live there */
	int64_t peak;  /* their most, over the program */
	bool strict;   /* no more bytes live anywhere (the first round) */
};

static int64_t buf_bytes(const struct lower *L, int b)
{
	return ir_shape_numel(&L->buf[b].shape) * (int64_t)ir_dtype_size(L->buf[b].dtype);
}

/* Whether fusing producer p into consumer i keeps the peak of live
 * temporaries: p's operands leaf[] then live until i, p's result b not
 * at all. Extending a lifetime costs nothing where the program is below
 * its peak (a residual add and its ReLU, a dot and its bias); it only
 * must not raise the peak. But the fusions that free bytes come first
 * (F->strict: no more bytes live anywhere), as they lower the peak the
 * others must then keep. With apply, records the change. */
static bool keeps_peak(struct fuse *F, int p, int i, const int *leaf, int nl, int b, bool apply)
{
	const struct lower *L = F->L;
	int64_t gone = buf_bytes(L, b);
	for (int t = p; t <= i; t++) {
		int64_t d = -gone;
		for (int k = 0; k < nl; k++)
			if (L->buf[leaf[k]].bind == PLAN_BIND_NONE && F->last[leaf[k]] < t)
				d += buf_bytes(L, leaf[k]);
		if (apply)
			F->live[t] += d;
		else if (d > 0 && (F->strict || F->live[t] + d > F->peak))
			return false;
	}
	return true;
}

/* Whether instruction t writes buffer b. */
static bool writes_buf(const struct lower *L, const struct lw_ins *t, int b)
{
	for (int j = 0; j < t->nout; j++)
		if (L->args[t->arg + t->nin + j] == b)
			return true;
	return false;
}

static bool fusible_ins(const struct lw_ins *x)
{
	return x->kind == PLAN_KERNEL && x->kernel >= 0 && !x->dev_kernel && !x->only && x->nout == 1;
}

/* F->live: each temporary live from its first write (first[])
 * to its last read, as the memory plan has it. */
static void live_profile(struct fuse *F, const int *first)
{
	const struct lower *L = F->L;
	int ni = L->nins;
	for (int b = 0; b < L->nbuf; b++)
		if (L->buf[b].bind == PLAN_BIND_NONE && F->writes[b] > 0) {
			int end = F->last[b] > first[b] ? F->last[b] : first[b];
			F->live[first[b]] += buf_bytes(L, b);
			F->live[end + 1] -= buf_bytes(L, b);
		}
	for (int t = 1; t < ni; t++)
		F->live[t] += F->live[t - 1];
}

/* Producer p (operands leaf[], result b) is now part of instruction i's
 * group; had[k]: the group read leaf[k] already. */
static void took(struct fuse *F, int p, int i, const int *leaf, int nl, const bool *had, int b)
{
	keeps_peak(F, p, i, leaf, nl, b, true);
	for (int k = 0; k < nl; k++) {
		F->last[leaf[k]] = F->last[leaf[k]] > i ? F->last[leaf[k]] : i;
		if (had[k])
			F->reads[leaf[k]]--; /* now one reader (i) where there were two */
	}
	F->dead[p] = true;
	F->reads[b] = F->writes[b] = 0;
}

/* The instruction writing buffer b, when i may absorb it: b a temporary
 * written once (by it) and read by i alone, not i's result, the writer an
 * earlier fusible kernel in i's part of the program; else -1. */
static int producer(const struct fuse *F, int i, int b)
{
	const struct lower *L = F->L;
	int out = L->args[L->ins[i].arg + L->ins[i].nin], p = F->writer[b];
	if (L->buf[b].bind != PLAN_BIND_NONE || F->writes[b] != 1 || F->reads[b] != 1 || b == out)
		return -1;
	if (p < 0 || p >= i || F->dead[p] || F->seg[p] != F->seg[i] || !fusible_ins(&L->ins[p]))
		return -1;
	return p;
}

/* Producer p's group pg joins i's group c in place of buffer b, p's
 * operands leaf[] read at i instead: when none of them is i's result or
 * written in between, the peak stays, and the merged group fits. */
static bool join(struct fuse *F, int p, int i, struct group *c, const struct group *pg, int b)
{
	const struct lower *L = F->L;
	int out = L->args[L->ins[i].arg + L->ins[i].nin], leaf[FUSE_MAX_LEAVES];
	int nl = count_leaves(pg, leaf);
	if (nl < 0)
		return false;
	for (int k = 0; k < nl; k++) {
		if (leaf[k] == out)
			return false;
		for (int t = p + 1; t < i; t++)
			if (!F->dead[t] && writes_buf(L, &L->ins[t], leaf[k]))
				return false;
	}
	if (!keeps_peak(F, p, i, leaf, nl, b, false))
		return false;
	bool had[FUSE_MAX_LEAVES];
	for (int k = 0; k < nl; k++)
		had[k] = group_reads(c, leaf[k]);
	if (!merge(c, pg, b))
		return false;
	took(F, p, i, leaf, nl, had, b);
	return true;
}

/* Tries to absorb the producer of buffer b into instruction i's group. */
static bool absorb(struct fuse *F, int i, struct group *c, int b)
{
	struct lower *L = F->L;
	int p = producer(F, i, b);
	struct group pg;
	int pcore, ccore;
	bool pcheap, ccheap;
	if (p < 0 || !group_of(L, &L->ins[p], &pg) || !group_ok(L, &pg, &pcore, &pcheap) ||
	    !group_ok(L, c, &ccore, &ccheap))
		return false;
	if (pcore >= 0) {
		/* an epilogue: read element for element, over the same shape */
		if (ccore >= 0 || !reads_identity(L, c, b) ||
		    !ir_shape_eq(&pg.op[pg.nop - 1].shape, &c->op[c->nop - 1].shape))
			return false;
	} else if (!pcheap && ir_shape_numel(&L->buf[b].shape) < ir_shape_numel(&c->op[c->nop - 1].shape) &&
		   !reads_identity(L, c, b)) {
		return false; /* would recompute real work per broadcast copy */
	}
	return join(F, p, i, c, &pg, b);
}

/* Tries to make the dot or convolution writing buffer b the core of
 * instruction i's loop group c: the library call writes c's result buffer,
 * then c's ops run on it in place (plan_kernel_core). Only when c reads b
 * element for element, b's type is c's result's, and c reads nothing the call
 * would overwrite (its result buffer, written in place by an update);
 * otherwise as absorb. */
static bool absorb_core(struct fuse *F, int i, struct group *c, int b)
{
	struct lower *L = F->L;
	int p = producer(F, i, b), out = L->args[L->ins[i].arg + L->ins[i].nin], cl[FUSE_MAX_LEAVES], ccore;
	bool ccheap;
	if (p < 0)
		return false;
	const struct plan_kernel *pk = &L->p->kernels[L->ins[p].kernel];
	struct group pg;
	if (pk->nbody || (pk->op != IR_OP_DOT && pk->op != IR_OP_CONV) || !group_of(L, &L->ins[p], &pg) ||
	    !group_ok(L, c, &ccore, &ccheap) || ccore >= 0 || !reads_identity(L, c, b) ||
	    !ir_shape_eq(&L->buf[b].shape, &L->buf[out].shape) || L->buf[b].dtype != L->buf[out].dtype)
		return false; /* the call writes its result where the group's goes */
	int ncl = count_leaves(c, cl);
	for (int k = 0; k < ncl; k++)
		if (cl[k] == out)
			return false;
	return ncl >= 0 && join(F, p, i, c, &pg, b);
}

/* The transpose a single-op kernel (or a fused one of one op) applies, or
 * NULL when it is not one. */
static const struct ir_ilist *transpose_of(const struct plan_kernel *k)
{
	if (k->nin != 1 || k->nout != 1)
		return NULL;
	if (!k->nbody)
		return k->op == IR_OP_TRANSPOSE ? &k->a.axes : NULL;
	return k->nbody == 1 && k->body[0].op == IR_OP_TRANSPOSE ? &k->body[0].a.axes : NULL;
}

/* The dot's lists of operand j read through transpose perm: dim d of the
 * transposed value is dim perm[d] of its source. False when the operand's
 * free dims would change order (the result's layout lists them in operand
 * order). */
static bool dot_through(struct ir_attrs *a, int j, const struct ir_ilist *perm, int rank)
{
	struct ir_ilist *batch = j ? &a->rhs_batch : &a->lhs_batch, *con = j ? &a->rhs_contract : &a->lhs_contract;
	unsigned used = 0;
	int64_t last = -1;
	for (int i = 0; i < batch->n; i++)
		used |= 1u << batch->v[i];
	for (int i = 0; i < con->n; i++)
		used |= 1u << con->v[i];
	for (int d = 0; d < rank; d++)
		if (!(used & (1u << d))) {
			if (perm->v[d] < last)
				return false;
			last = perm->v[d];
		}
	for (int i = 0; i < batch->n; i++)
		batch->v[i] = perm->v[batch->v[i]];
	for (int i = 0; i < con->n; i++)
		con->v[i] = perm->v[con->v[i]];
	return true;
}

/* Whether l is first, first + 1, ... */
static bool consecutive(const struct ir_ilist *l, int64_t first)
{
	for (int i = 0; i < l->n; i++)
		if (l->v[i] != first + i)
			return false;
	return true;
}

/* Whether operand j of dot a is a batch of matrices a gemm reads in place,
 * as is or transposed: batch dims leading, contracting dims together at
 * either end of the rest (gpu_plan_gemm's test; interp_dot's in-place
 * layouts). */
static bool gemm_layout(const struct ir_attrs *a, int j, int rank)
{
	const struct ir_ilist *batch = j ? &a->rhs_batch : &a->lhs_batch,
			      *con = j ? &a->rhs_contract : &a->lhs_contract;
	return consecutive(batch, 0) && (consecutive(con, batch->n) || consecutive(con, rank - con->n));
}

/* A dot reading a transpose's result reads the transpose's operand
 * instead, with its batch and contracting dims renamed, when the result is
 * a temporary the dot alone reads (the conditions of absorb) and the source
 * is a batch of matrices a gemm reads in place (else the dot would copy it
 * anyway, and a GPU would run it on the host). The dot then reads the
 * source in place (a gemm trans flag in interp_dot.c, a cuBLASLt op) where
 * the transpose copied it every step: GPT-2's weights, [out, in] in the
 * ONNX file, and its tied embedding in the LM head. Example: transpose
 * {1,0} of w [2304,768] into t [768,2304], dot x [1,128,768] . t with
 * rhs_contract {0} becomes dot x . w with rhs_contract {1}. */
static int fold_transpose(struct fuse *F, int i)
{
	struct lower *L = F->L;
	struct lw_ins *x = &L->ins[i];
	const struct plan_kernel *k = &L->p->kernels[x->kernel];
	if (k->nbody || k->op != IR_OP_DOT || k->nin != 2 || k->nout != 1)
		return 0;
	int *arg = &L->args[x->arg], out = arg[2];
	for (int j = 0; j < 2; j++) {
		int b = arg[j];
		const struct lw_buf *bf = &L->buf[b];
		if (arg[0] == arg[1] || bf->bind != PLAN_BIND_NONE || F->writes[b] != 1 || F->reads[b] != 1 || b == out)
			continue;
		int p = F->writer[b];
		if (p < 0 || p >= i || F->dead[p] || F->seg[p] != F->seg[i] || !fusible_ins(&L->ins[p]))
			continue;
		const struct plan_kernel *pk = &L->p->kernels[L->ins[p].kernel];
		const struct ir_ilist *perm = transpose_of(pk);
		int src = L->args[L->ins[p].arg], t;
		if (!perm || src == out || src == arg[1 - j])
			continue;
		for (t = p + 1; t < i && (F->dead[t] || !writes_buf(L, &L->ins[t], src)); t++)
			;
		if (t < i)
			continue;
		struct ir_attrs a = k->a;
		if (!dot_through(&a, j, perm, bf->shape.rank) || !gemm_layout(&a, j, bf->shape.rank))
			continue;
		/* src (as large as b) now lives until i where b did: never more */
		struct plan_kernel nk = { .op = IR_OP_DOT, .a = a, .nin = 2, .nout = 1 };
		nk.dtype = ir_malloc(sizeof *nk.dtype * 3);
		nk.shape = ir_malloc(sizeof *nk.shape * 3);
		if (!nk.dtype || !nk.shape) {
			plan_kernel_free(&nk);
			return ir_errorf(-ENOMEM, "out of memory fusing kernels");
		}
		memcpy(nk.dtype, k->dtype, sizeof *nk.dtype * 3);
		memcpy(nk.shape, k->shape, sizeof *nk.shape * 3);
		nk.shape[j] = L->buf[src].shape;
		int kid = lw_kernel_intern(L, &nk);
		if (kid < 0)
			return kid;
		x->kernel = kid;
		k = &L->p->kernels[kid];
		arg[j] = src;
		F->last[src] = F->last[src] > i ? F->last[src] : i;
		F->dead[p] = true;
		F->reads[b] = F->writes[b] = 0;
	}
	return 0;
}

/* The group as a plan kernel, interned; its leaves are the new operands. */
static int emit_group(struct fuse *F, int i, const struct group *g)
{
	struct lower *L = F->L;
	struct lw_ins *x = &L->ins[i];
	int leaf[FUSE_MAX_LEAVES];
	int nl = count_leaves(g, leaf), out = L->args[x->arg + x->nin];
	IR_ASSERT(nl >= 0);
	struct plan_kernel k = { .op = g->op[g->nop - 1].op, .nin = nl, .nout = 1, .nbody = g->nop };
	k.dtype = ir_malloc(sizeof *k.dtype * (size_t)(nl + 1));
	k.shape = ir_malloc(sizeof *k.shape * (size_t)(nl + 1));
	k.body = ir_calloc((size_t)g->nop, sizeof *k.body);
	if (!k.dtype || !k.shape || !k.body)
		goto nomem;
	for (int j = 0; j < nl; j++) {
		k.dtype[j] = L->buf[leaf[j]].dtype;
		k.shape[j] = L->buf[leaf[j]].shape;
	}
	k.dtype[nl] = L->buf[out].dtype;
	k.shape[nl] = L->buf[out].shape;
	for (int o = 0; o < g->nop; o++) {
		struct plan_fop *f = &k.body[o];
		*f = g->op[o];
		f->a.data = NULL;
		for (int j = 0; j < f->nin; j++) {
			int r = g->ref[o][j], v = 0;
			if (r >= 0)
				v = nl + r;
			else
				while (leaf[v] != ref_buf(r))
					v++;
			f->in[j] = v;
		}
		if (f->op == IR_OP_CONSTANT) {
			struct ir_tensor t = { f->a.dtype, f->a.shape, NULL };
			size_t n = ir_tensor_bytes(&t);
			void *d = ir_malloc(n ? n : 1);
			if (!d)
				goto nomem;
			memcpy(d, g->op[o].a.data, n);
			f->a.data = d;
		}
	}
	int kid = lw_kernel_intern(L, &k);
	if (kid < 0)
		return kid;
	int need = L->nargs + nl + 1;
	if (need > L->capargs) {
		int *na = ir_realloc(L->args, sizeof *na * (size_t)need);
		if (!na)
			return ir_errorf(-ENOMEM, "out of memory fusing kernels");
		L->args = na;
		L->capargs = need;
	}
	x->kernel = kid;
	x->arg = L->nargs;
	x->nin = nl;
	memcpy(&L->args[L->nargs], leaf, sizeof *leaf * (size_t)nl);
	L->args[L->nargs + nl] = out;
	L->nargs += nl + 1;
	return 0;
nomem:
	plan_kernel_free(&k);
	return ir_errorf(-ENOMEM, "out of memory fusing kernels");
}

/* Instruction i's group g, grown by every producer it can absorb. */
static int grow(struct fuse *F, int i, struct group *g)
{
	struct lower *L = F->L;
	struct lw_ins *x = &L->ins[i];
	int core, leaf[FUSE_MAX_LEAVES];
	bool cheap, changed = false, again = true;
	if (F->dead[i] || !fusible_ins(x) || !group_of(L, x, g) || !group_ok(L, g, &core, &cheap))
		return 0;
	while (again) {
		again = false;
		int nl = count_leaves(g, leaf);
		for (int k = 0; k < nl && !again; k++)
			again = absorb(F, i, g, leaf[k]);
		changed |= again;
	}
	return changed ? emit_group(F, i, g) : 0;
}

/* Drops the instructions fused away, keeping the part boundaries. */
static void compact(struct fuse *F)
{
	struct lower *L = F->L;
	int k = 0, sf = -1, fe = -1;
	for (int i = 0; i < L->nins; i++) {
		if (i == L->step_first)
			sf = k;
		if (i == L->fwd_end)
			fe = k;
		if (!F->dead[i])
			L->ins[k++] = L->ins[i];
		else
			ir_free(L->ins[i].dev_kernel);
	}
	if (L->step_first >= 0)
		L->step_first = sf < 0 ? k : sf;
	if (L->fwd_end > 0)
		L->fwd_end = fe < 0 ? k : fe;
	L->nins = k;
}

/* Drops the temporaries no instruction uses any more, renumbering the rest. */
static int drop_buffers(struct lower *L)
{
	int *map = ir_malloc(sizeof *map * ((size_t)L->nbuf + 1)), nb = 0;
	if (!map)
		return ir_errorf(-ENOMEM, "out of memory fusing kernels");
	for (int b = 0; b < L->nbuf; b++)
		map[b] = L->buf[b].bind == PLAN_BIND_NONE ? -1 : 0;
	for (int i = 0; i < L->nins; i++)
		for (int j = 0; j < L->ins[i].nin + L->ins[i].nout; j++)
			map[L->args[L->ins[i].arg + j]] = 0;
	for (int b = 0; b < L->nbuf; b++)
		if (map[b] == 0) {
			L->buf[nb] = L->buf[b];
			map[b] = nb++;
		}
	for (int i = 0; i < L->nins; i++)
		for (int j = 0; j < L->ins[i].nin + L->ins[i].nout; j++)
			L->args[L->ins[i].arg + j] = map[L->args[L->ins[i].arg + j]];
	for (int r = 0; r < L->nreps; r++)
		L->reps[r].buf = L->reps[r].buf >= 0 ? map[L->reps[r].buf] : -1;
	L->nbuf = nb;
	ir_free(map);
	return 0;
}

int lw_fuse(struct lower *L)
{
	if (getenv("PCC_NO_FUSE"))
		return 0;
	int nb = L->nbuf, ni = L->nins, rc = 0;
	struct fuse F = { .L = L };
	F.writes = ir_calloc((size_t)nb + 1, sizeof *F.writes);
	F.reads = ir_calloc((size_t)nb + 1, sizeof *F.reads);
	F.writer = ir_malloc(sizeof *F.writer * ((size_t)nb + 1));
	F.last = ir_calloc((size_t)nb + 1, sizeof *F.last);
	F.seg = ir_malloc(sizeof *F.seg * ((size_t)ni + 1));
	F.dead = ir_calloc((size_t)ni + 1, sizeof *F.dead);
	F.live = ir_calloc((size_t)ni + 2, sizeof *F.live);
	int *first = ir_malloc(sizeof *first * ((size_t)nb + 1));
	struct group *g = ir_malloc(sizeof *g);
	if (!F.writes || !F.reads || !F.writer || !F.seg || !F.dead || !F.last || !F.live || !first || !g) {
		rc = ir_errorf(-ENOMEM, "out of memory fusing kernels");
		goto out;
	}
	for (int b = 0; b < nb; b++)
		F.writer[b] = -1;
	int seg = 0;
	for (int i = 0; i < ni; i++) {
		const struct lw_ins *x = &L->ins[i];
		if (i == L->step_first || (i == L->fwd_end && i > 0) || x->kind != PLAN_KERNEL)
			seg++;
		F.seg[i] = seg;
		if (x->kind != PLAN_KERNEL)
			seg++;
		for (int j = 0; j < x->nin; j++) {
			int b = L->args[x->arg + j], dup = 0;
			for (int u = 0; u < j; u++)
				dup |= L->args[x->arg + u] == b;
			F.reads[b] += !dup;
			F.last[b] = i;
		}
		for (int j = 0; j < x->nout; j++) {
			int b = L->args[x->arg + x->nin + j];
			if (!F.writes[b]++)
				first[b] = i;
			F.writer[b] = i;
		}
	}
	for (int i = 0; i < ni && rc == 0; i++)
		if (fusible_ins(&L->ins[i]))
			rc = fold_transpose(&F, i);
	live_profile(&F, first);
	/* a pipelined program's profile is not its memory plan's (what crosses
	 * from the forward part to the backward takes a slot per micro-batch
	 * in flight): only the first round there */
	int rounds = L->fwd_end > 0 ? 1 : 2;
	for (int round = 0; round < rounds && rc == 0; round++) {
		F.strict = round == 0;
		for (int t = F.peak = 0; t < ni; t++) /* the peak the first round left */
			F.peak = F.live[t] > F.peak ? F.live[t] : F.peak;
		for (int i = 0; i < ni && rc == 0; i++)
			rc = grow(&F, i, g);
	}
	/* then, on CPU ranks ("cpu:N"), each finished loop group's dot or
	 * convolution (after the rounds above, so that a group with a core is
	 * never absorbed into a later one) */
	bool host = cost_cluster_spec_cpu(L->p->cluster);
	for (int i = 0; i < ni && rc == 0 && host; i++) {
		struct lw_ins *x = &L->ins[i];
		int leaf[FUSE_MAX_LEAVES], nl;
		if (F.dead[i] || !fusible_ins(x) || !group_of(L, x, g) || (nl = count_leaves(g, leaf)) < 0)
			continue;
		for (int k = 0; k < nl; k++)
			if (absorb_core(&F, i, g, leaf[k])) {
				rc = emit_group(&F, i, g);
				break;
			}
	}
	if (rc == 0) {
		compact(&F);
		rc = drop_buffers(L);
	}
out:
	ir_free(g);
	ir_free(F.writes);
	ir_free(F.reads);
	ir_free(F.writer);
	ir_free(F.last);
	ir_free(F.seg);
	ir_free(F.dead);
	ir_free(F.live);
	ir_free(first);
	return rc;
}
