/*
 * lower.c: SPMD lowering of one sharded stage into per-device programs.
 *
 * Input: a graph annotated with shardings (ir.h), as the intra-op pass
 * leaves it or as the IR text gives them: nothing of the pass's own state
 * is read. Walk the nodes in order; for each, bring every operand to the
 * sharding the node reads it in (lower_reshard.c: all-reduce or
 * reduce-scatter of partial sums, all-gathers, local slices), then run the
 * op on the local pieces. Each node's annotation must be one its op's
 * sharding rule allows (intra_rule_find). The dimension-label rules
 * (intra_rules.c) only allow splits under which the local op is the same
 * op on local shapes, so the kernel is the op itself with shape attributes
 * made local, except: a max/min reduction over a split dimension
 * all-reduces its result, and a gather from a table split along the
 * gathered axis looks up only the rows the device holds and contributes
 * zeros elsewhere (a partial sum, summed by the consumer's resharding:
 * Megatron's vocabulary-parallel embedding). Outputs are left split as
 * annotated, partial sums reduced. The
 * buffers, instructions and kernels go into the program through
 * lower_emit.c's builders.
 * Constants (values no input or parameter flows into: masks, position
 * ids) are not lowered in program order but made where each reader needs
 * them, in its sharding (remat), so nothing big is held between readers.
 *
 * Example: y = relu(x @ w1) @ w2 on a 1x2 mesh, w1 by columns and w2 by
 * rows: each device runs dot, relu, dot on its halves; y is partial; one
 * all-reduce makes it whole.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"
#include "compiler/search/search.h"

/* ---- nodes ----------------------------------------------------------------- */

/* A scalar constant broadcast to shape s (per device when vals has nd
 * entries, else vals[0] everywhere). */
static int splat(struct lower *L, enum ir_dtype dt, const struct ir_shape *s, const int64_t *vals, bool per_dev,
		 int *out)
{
	struct ir_attrs *da = NULL, a;
	int64_t *store = ir_malloc(sizeof(int64_t) * 8 * (size_t)L->nd);
	int c, rc;
	if (!store)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	memset(&a, 0, sizeof a);
	a.dtype = dt;
	a.shape.rank = 0;
	for (int k = 0; k < (per_dev ? L->nd : 1); k++) {
		struct ir_tensor t = { dt, a.shape, &store[8 * k] };
		ir_tensor_set_i64(&t, 0, vals[k]);
	}
	if (per_dev) {
		if (!(da = ir_malloc(sizeof *da * (size_t)L->nd))) {
			ir_free(store);
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		}
		for (int k = 0; k < L->nd; k++) {
			da[k] = a;
			da[k].data = &store[8 * k];
		}
	} else {
		a.data = store;
	}
	rc = lw_kernel(L, IR_OP_CONSTANT, &a, da, 0, NULL, &c);
	ir_free(da);
	ir_free(store);
	if (rc < 0)
		return rc;
	memset(&a, 0, sizeof a);
	a.shape = *s;
	return lw_kernel(L, IR_OP_BROADCAST, &a, NULL, 1, &c, out);
}

static int binop(struct lower *L, enum ir_op op, int x, int y, int *out)
{
	struct ir_attrs a;
	memset(&a, 0, sizeof a);
	int in[2] = { x, y };
	return lw_kernel(L, op, &a, NULL, 2, in, out);
}

/* Gather from a table split over mask m along the gathered axis: each device
 * looks up the indices in its rows [off, off + rows) and writes zeros for
 * the others; the result is a partial sum over m. */
static int gather_split(struct lower *L, const struct ir_node *n, uint8_t m, int table, int idx, int *out)
{
	const struct lw_buf tb = L->buf[table]; /* a copy: L->buf moves as buffers are added */
	int ax = (int)n->a.axis;
	int64_t rows = tb.shape.dims[ax], total = n->in[0]->shape.dims[ax];
	enum ir_dtype it = L->buf[idx].dtype;
	struct ir_shape is = L->buf[idx].shape;
	int64_t *offs = ir_malloc(sizeof *offs * (size_t)L->nd);
	int zero, ntot, neg, wrapped, norm, off, rel, ge0, nrows, ltn, valid, relc, look, rc;
	if (!offs)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	for (int k = 0; k < L->nd; k++) {
		int piece, np;
		lw_piece(L, k, m, &piece, &np);
		offs[k] = piece * rows;
	}
	int64_t z = 0;
	if ((rc = splat(L, it, &is, &z, false, &zero)) < 0 || (rc = splat(L, it, &is, &total, false, &ntot)) < 0 ||
	    (rc = binop(L, IR_OP_LT, idx, zero, &neg)) < 0 || (rc = binop(L, IR_OP_ADD, idx, ntot, &wrapped)) < 0)
		goto out;
	{
		struct ir_attrs a;
		memset(&a, 0, sizeof a);
		int in3[3] = { neg, wrapped, idx };
		if ((rc = lw_kernel(L, IR_OP_SELECT, &a, NULL, 3, in3, &norm)) < 0)
			goto out;
	}
	if ((rc = splat(L, it, &is, offs, true, &off)) < 0 || (rc = binop(L, IR_OP_SUB, norm, off, &rel)) < 0 ||
	    (rc = binop(L, IR_OP_GE, rel, zero, &ge0)) < 0 || (rc = splat(L, it, &is, &rows, false, &nrows)) < 0 ||
	    (rc = binop(L, IR_OP_LT, rel, nrows, &ltn)) < 0 || (rc = binop(L, IR_OP_AND, ge0, ltn, &valid)) < 0)
		goto out;
	struct ir_attrs a;
	memset(&a, 0, sizeof a);
	int in3[3] = { valid, rel, zero };
	if ((rc = lw_kernel(L, IR_OP_SELECT, &a, NULL, 3, in3, &relc)) < 0)
		goto out;
	a.axis = ax;
	int in2[2] = { table, relc };
	if ((rc = lw_kernel(L, IR_OP_GATHER, &a, NULL, 2, in2, &look)) < 0)
		goto out;
	/* the mask broadcast over the looked-up rows */
	const struct ir_shape os = L->buf[look].shape;
	int vb, zt;
	memset(&a, 0, sizeof a);
	a.shape = os;
	a.axes.n = is.rank;
	for (int d = 0; d < is.rank; d++)
		a.axes.v[d] = ax + d;
	if ((rc = lw_kernel(L, IR_OP_BROADCAST, &a, NULL, 1, &valid, &vb)) < 0 ||
	    (rc = splat(L, tb.dtype, &os, &z, false, &zt)) < 0)
		goto out;
	memset(&a, 0, sizeof a);
	int sel[3] = { vb, look, zt };
	rc = lw_kernel(L, IR_OP_SELECT, &a, NULL, 3, sel, out);
out:
	ir_free(offs);
	return rc;
}

/* Attributes of node n made local: shapes that name the result's size. */
static void local_attrs(const struct lower *L, const struct ir_node *n, const struct ir_sharding *out,
			struct ir_attrs *a)
{
	*a = n->a;
	/* the labels split no other dimension an attribute names (intra_rules.c) */
	if (n->op == IR_OP_RESHAPE || n->op == IR_OP_BROADCAST)
		lw_local_shape(L, &n->out[0]->shape, out, &a->shape);
	if (n->op == IR_OP_SLICE)
		for (int d = 0; d < n->in[0]->shape.rank; d++)
			if (out->dim[d])
				a->limit.v[d] /= ir_sharding_pieces(out->dim[d], L->n0, L->n1);
}

/* Node n as annotated (intra_pass, or the IR text): its operands'
 * shardings and its result's, which its op's sharding rule must allow;
 * *own: the mesh axes over which the node all-reduces its result (a max
 * or min over a split dimension), with *red. */
static int node_spec(const struct lower *L, const struct ir_node *n, uint8_t *own, enum plan_reduce *red)
{
	char o[IR_SHARDING_STR_MAX], ins[256] = "";
	*red = n->op == IR_OP_REDUCE_MIN ? PLAN_MIN : PLAN_MAX;
	for (int k = 1; k < n->nout; k++)
		if (memcmp(&n->out[k]->sharding, &n->out[0]->sharding, sizeof n->out[0]->sharding))
			return ir_errorf(-EINVAL, "node %d \"%s\" (%s): its results are sharded differently", n->id,
					 n->name ? n->name : "", ir_op_name(n->op));
	if (intra_rule_find(n, L->n0, L->n1, &n->out[0]->sharding, n->in_sharding, false, NULL, own))
		return 0;
	for (int j = 0; j < n->nin; j++) {
		size_t at = strlen(ins);
		if (at + IR_SHARDING_STR_MAX + 2 >= sizeof ins)
			break;
		snprintf(ins + at, sizeof ins - at, "%s%s", j ? ", " : "",
			 ir_sharding_str(&n->in_sharding[j], n->in[j]->shape.rank, o, sizeof o));
	}
	return ir_errorf(-EINVAL, "node %d \"%s\" (%s): operands %s to result %s is no sharding its op allows", n->id,
			 n->name ? n->name : "", ir_op_name(n->op), n->nin ? ins : "(none)",
			 ir_sharding_str(&n->out[0]->sharding, n->out[0]->shape.rank, o, sizeof o));
}

/* The buffer holding value v under exactly spec dst, or -1. */
static int exact_rep(const struct lower *L, int v, const struct ir_sharding *dst)
{
	for (int r = L->rep_head[v]; r >= 0; r = L->reps[r].next)
		if (!memcmp(&L->reps[r].spec, dst, sizeof *dst))
			return L->reps[r].buf;
	return -1;
}

int lw_ensure(struct lower *L, const struct ir_value *v)
{
	if (L->rep_head[v->id] >= 0 || v->kind != IR_VAL_NODE)
		return 0;
	return lw_node(L, v->def);
}

static int operand(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst, int depth);

/* Constant value v (nothing upstream reads an input or parameter: masks,
 * position ids, iotas) computed again right where it is read, directly in
 * the sharding the reader needs, as a fusing backend does: no collective,
 * only the local piece, nothing held between readers. 1 with *buf, 0 when
 * its op has no such strategy (then it is computed once and resharded). */
static int remat(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst, int depth, int *buf)
{
	const struct ir_node *n = v->def;
	if (v->kind != IR_VAL_NODE || L->dyn[v->id] || dst->partial || depth > 64 || n->nout != 1 ||
	    n->nin > LW_MAX_IN || n->op == IR_OP_GATHER)
		return 0;
	struct ir_shape ls;
	struct ir_attrs a;
	int in[LW_MAX_IN], rc;
	lw_local_shape(L, &v->shape, dst, &ls);
	if (n->op == IR_OP_IOTA) {
		/* the local piece of an iota is an iota plus where the piece starts */
		int ax = (int)n->a.axis, it;
		a = n->a;
		a.shape = ls;
		if ((rc = lw_kernel(L, IR_OP_IOTA, &a, NULL, 0, NULL, &it)) < 0)
			return rc;
		if (!dst->dim[ax]) {
			*buf = it;
			return 1;
		}
		int64_t *offs = ir_malloc(sizeof *offs * (size_t)L->nd);
		int off;
		if (!offs)
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		for (int k = 0; k < L->nd; k++) {
			int piece, np;
			lw_piece(L, k, dst->dim[ax], &piece, &np);
			offs[k] = piece * ls.dims[ax];
		}
		rc = splat(L, n->a.dtype, &ls, offs, true, &off);
		ir_free(offs);
		if (rc < 0 || (rc = binop(L, IR_OP_ADD, it, off, buf)) < 0)
			return rc;
		return 1;
	}
	/* the operands' shardings of the op's way to compute dst alone */
	struct ir_sharding *ds = ir_malloc(sizeof *ds * (size_t)(n->nin + 1));
	if (!ds)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	if (!intra_rule_find(n, L->n0, L->n1, dst, NULL, true, ds, NULL)) {
		ir_free(ds);
		return 0;
	}
	for (int j = 0; j < n->nin; j++)
		if ((in[j] = operand(L, n->in[j], &ds[j], depth + 1)) < 0) {
			ir_free(ds);
			return in[j];
		}
	ir_free(ds);
	local_attrs(L, n, dst, &a);
	if ((rc = lw_kernel(L, n->op, &a, NULL, n->nin, in, buf)) < 0)
		return rc;
	return 1;
}

/* Value v as a buffer under dst: the rep that has it, a constant made
 * there, or the nearest rep resharded. */
static int operand(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst, int depth)
{
	int b = exact_rep(L, v->id, dst), rc;
	if (b >= 0)
		return b;
	if ((rc = remat(L, v, dst, depth, &b)) != 0)
		return rc < 0 ? rc : b;
	if ((rc = lw_ensure(L, v)) < 0)
		return rc;
	int r = L->rep_head[v->id];
	IR_ASSERT(r >= 0);
	struct ir_sharding src = L->reps[r].spec;
	return lw_reshard(L, v, L->reps[r].buf, &src, dst);
}

int lw_operand(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst)
{
	return operand(L, v, dst, 0);
}

int lw_node(struct lower *L, const struct ir_node *n)
{
	const struct ir_sharding *res = &n->out[0]->sharding;
	int in[LW_MAX_IN], out[2], rc;
	enum plan_reduce red;
	uint8_t mx;
	if (n->nin > LW_MAX_IN)
		return ir_errorf(-ENOTSUP, "node %d \"%s\" (%s): %d operands, lowering takes at most %d", n->id,
				 n->name ? n->name : "", ir_op_name(n->op), n->nin, LW_MAX_IN);
	if ((rc = node_spec(L, n, &mx, &red)) < 0)
		return rc;
	for (int j = 0; j < n->nin; j++)
		if ((in[j] = operand(L, n->in[j], &n->in_sharding[j], 0)) < 0)
			return in[j];
	if (n->op == IR_OP_GATHER) {
		int ax = (int)n->a.axis;
		uint8_t m = n->in_sharding[0].dim[ax];
		if (m) {
			if ((rc = gather_split(L, n, m, in[0], in[1], &out[0])) < 0)
				return rc;
			return lw_rep_add(L, n->out[0]->id, res, out[0]);
		}
	}
	struct ir_attrs a;
	local_attrs(L, n, res, &a);
	if ((rc = lw_kernel(L, n->op, &a, NULL, n->nin, in, out)) < 0) {
		ir_error_prefix("node %d \"%s\"", n->id, n->name ? n->name : "");
		return rc;
	}
	if (mx) {
		struct lw_ins c = { .kind = PLAN_ALL_REDUCE, .kernel = -1, .axes = mx, .reduce = red };
		int r2 = lw_buf_new(L, L->buf[out[0]].dtype, &L->buf[out[0]].shape);
		if (r2 < 0 || (rc = lw_emit(L, &c, 1, &out[0], 1, &r2)) < 0)
			return -ENOMEM;
		out[0] = r2;
	}
	for (int k = 0; k < n->nout; k++) {
		struct ir_shape want;
		lw_local_shape(L, &n->out[k]->shape, res, &want);
		IR_ASSERT(ir_shape_eq(&want, &L->buf[out[k]].shape));
		if ((rc = lw_rep_add(L, n->out[k]->id, res, out[k])) < 0)
			return rc;
	}
	return 0;
}
