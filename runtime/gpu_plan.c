/*
 * gpu_plan.c: the CUDA backend's plan analysis (gpu_plan.h): transfer
 * pairs and their order, dots as GEMMs, block copies as 2-D copies.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gpu_plan.h"

/* One send or receive: the pair (from, to), the sender's part (0 per
 * micro-batch or forward, 1 backward, 2 per step), its place among the
 * pair's messages of that part, its tag. */
struct msg {
	int from, to, part, seq, tag;
};

static int part_of(const struct plan_device *d, int i)
{
	return i >= plan_step_first(d) ? 2 : d->nfwd && i >= d->nfwd ? 1 : 0;
}

static int cmp_msg(const void *x, const void *y)
{
	const struct msg *a = x, *b = y;
	int ka[4] = { a->from, a->to, a->part, a->seq }, kb[4] = { b->from, b->to, b->part, b->seq };
	for (int i = 0; i < 4; i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? -1 : 1;
	return 0;
}

/* Every send (kind PLAN_SEND) or receive of the plan, sorted; seq counts
 * per (from, to, part) in program order. */
static int collect(const struct plan *p, enum plan_instr_kind kind, struct msg **out, int *n)
{
	int total = 0;
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++)
			total += p->devices[d].instr[i].kind == kind;
	struct msg *m = ir_calloc((size_t)total + 1, sizeof *m);
	if (!m)
		return ir_errorf(-ENOMEM, "out of memory matching transfers");
	*n = 0;
	for (int d = 0; d < p->ndevices; d++) {
		const struct plan_device *dev = &p->devices[d];
		for (int i = 0; i < dev->ninstr; i++) {
			const struct plan_instr *x = &dev->instr[i];
			if (x->kind != kind)
				continue;
			struct msg e = { kind == PLAN_SEND ? d : x->peer, kind == PLAN_SEND ? x->peer : d,
					 part_of(dev, i), 0, x->tag };
			for (int j = 0; j < *n; j++) /* a device's own messages are contiguous */
				e.seq += m[j].from == e.from && m[j].to == e.to && m[j].part == e.part;
			m[(*n)++] = e;
		}
	}
	qsort(m, (size_t)*n, sizeof *m, cmp_msg);
	*out = m;
	return 0;
}

int gpu_plan_pairs(const struct plan *p, int **pairs, int *npairs)
{
	struct msg *s;
	int n, rc = collect(p, PLAN_SEND, &s, &n);
	if (rc < 0)
		return rc;
	int *v = ir_calloc(2 * (size_t)n + 2, sizeof *v), k = 0;
	if (!v) {
		ir_free(s);
		return ir_errorf(-ENOMEM, "out of memory listing transfers");
	}
	for (int i = 0; i < n; i++)
		if (k == 0 || v[2 * k - 2] != s[i].from || v[2 * k - 1] != s[i].to) {
			v[2 * k] = s[i].from;
			v[2 * k + 1] = s[i].to;
			k++;
		}
	ir_free(s);
	*pairs = v;
	*npairs = k;
	return 0;
}

int gpu_plan_check_p2p(const struct plan *p)
{
	struct msg *s = NULL, *r = NULL;
	int ns = 0, nr = 0, rc = collect(p, PLAN_SEND, &s, &ns);
	if (rc == 0)
		rc = collect(p, PLAN_RECV, &r, &nr);
	for (int i = 0; rc == 0 && i < (ns > nr ? ns : nr); i++) {
		const struct msg *a = i < ns ? &s[i] : NULL, *b = i < nr ? &r[i] : NULL;
		if (a && b && !cmp_msg(a, b) && a->tag == b->tag)
			continue;
		const struct msg *e = a && (!b || cmp_msg(a, b) <= 0) ? a : b;
		rc = ir_errorf(-EINVAL, "transfers from rank %d to rank %d: message %d of its %s part (tag %d) %s",
			       e->from, e->to, e->seq,
			       e->part == 2   ? "per-step"
			       : e->part == 1 ? "backward"
					      : "forward",
			       e->tag,
			       a && b && !cmp_msg(a, b) ? "is received out of order (the GPU runtime matches "
							  "messages by order)"
			       : e == a                 ? "is never received"
							: "is never sent");
	}
	ir_free(s);
	ir_free(r);
	return rc;
}

/* ---- dots ---------------------------------------------------------------- */

/* Whether dims l (n of them) are exactly first, first + 1, ... */
static bool consecutive(const struct ir_ilist *l, int first)
{
	for (int i = 0; i < l->n; i++)
		if (l->v[i] != first + i)
			return false;
	return true;
}

static int64_t prod(const struct ir_shape *s, int from, int to)
{
	int64_t n = 1;
	for (int d = from; d < to; d++)
		n *= s->dims[d];
	return n;
}

/* Operand s with batch dims leading, then either [free, contract] (or,
 * transposed, [contract, free]): *trans says which; -1 neither. */
static int layout(const struct ir_shape *s, const struct ir_ilist *batch, const struct ir_ilist *contract,
		  bool contract_last)
{
	int nb = batch->n, nc = contract->n, nf = s->rank - nb - nc;
	if (!consecutive(batch, 0))
		return -1;
	if (consecutive(contract, contract_last ? nb + nf : nb))
		return 0;
	if (consecutive(contract, contract_last ? nb : nb + nf))
		return 1;
	return -1;
}

bool gpu_plan_gemm(const struct plan_kernel *k, struct gpu_gemm *g)
{
	if (k->nbody || k->op != IR_OP_DOT || k->nin != 2 || k->nout != 1)
		return false;
	enum ir_dtype t = k->dtype[0];
	if (k->dtype[1] != t || k->dtype[2] != t || (t != IR_F32 && t != IR_F64 && t != IR_F16 && t != IR_BF16))
		return false;
	const struct ir_attrs *a = &k->a;
	const struct ir_shape *l = &k->shape[0], *r = &k->shape[1];
	int la = layout(l, &a->lhs_batch, &a->lhs_contract, true);
	int ra = layout(r, &a->rhs_batch, &a->rhs_contract, false);
	if (la < 0 || ra < 0)
		return false;
	int nb = a->lhs_batch.n, nc = a->lhs_contract.n;
	g->batch = prod(l, 0, nb);
	g->k = la ? prod(l, nb, nb + nc) : prod(l, l->rank - nc, l->rank);
	g->m = prod(l, 0, l->rank) / (g->batch * g->k > 0 ? g->batch * g->k : 1);
	g->n = prod(r, 0, r->rank) / (g->batch * g->k > 0 ? g->batch * g->k : 1);
	g->ta = la == 1;
	g->tb = ra == 1;
	return g->batch > 0 && g->m > 0 && g->n > 0 && g->k > 0;
}

/* ---- block copies -------------------------------------------------------- */

static void strides(const struct ir_shape *s, size_t es, int64_t *st)
{
	int64_t acc = (int64_t)es;
	for (int d = s->rank - 1; d >= 0; d--) {
		st[d] = acc;
		acc *= s->dims[d];
	}
}

int gpu_plan_block(const struct ir_shape *dshape, const int64_t *dstart, const struct ir_shape *sshape,
		   const int64_t *sstart, const struct ir_shape *blk, size_t es, struct gpu_copy2d *out, int cap,
		   int *n)
{
	int rank = blk->rank, t = rank;
	int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK], zero[IR_MAX_RANK] = { 0 };
	dstart = dstart ? dstart : zero;
	sstart = sstart ? sstart : zero;
	strides(dshape, es, ds);
	strides(sshape, es, ss);
	/* dims t.. are whole in the block, the source and the destination */
	while (t > 0 && blk->dims[t - 1] == sshape->dims[t - 1] && blk->dims[t - 1] == dshape->dims[t - 1])
		t--;
	int64_t inner = (int64_t)es * prod(blk, t, rank);
	int row = t - 1, col = t - 2; /* a 2-D copy: rows along dim `row`, stepping along dim `col` */
	int64_t width = row >= 0 ? inner * blk->dims[row] : inner;
	int64_t height = col >= 0 ? blk->dims[col] : 1;
	int64_t outer = col > 0 ? prod(blk, 0, col) : 1;
	*n = (int)(outer < 1 << 30 ? outer : 1 << 30);
	if (prod(blk, 0, rank) == 0)
		*n = 0;
	if (*n > cap)
		return -ENOSPC;
	int64_t base_s = 0, base_d = 0;
	for (int d = 0; d < rank; d++) {
		base_s += sstart[d] * ss[d];
		base_d += dstart[d] * ds[d];
	}
	for (int64_t i = 0; i < *n; i++) {
		int64_t rem = i, so = base_s, dof = base_d;
		for (int d = col - 1; d >= 0; d--) { /* i's index over dims 0 .. col-1 */
			int64_t x = rem % blk->dims[d];
			rem /= blk->dims[d];
			so += x * ss[d];
			dof += x * ds[d];
		}
		out[i] = (struct gpu_copy2d){
			so, dof, width, height, col >= 0 ? ss[col] : width, col >= 0 ? ds[col] : width
		};
	}
	return 0;
}
