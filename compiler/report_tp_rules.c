/*
 * report_tp_rules.c: the tensor-parallel rule of every op (one per value of
 * the op table's shard column, ops.h), for report_tp.c's propagation. Each
 * rule reads its operands' layouts, asks for the layouts it needs
 * (tp_need_repl, tp_take_split: these record the collectives) and sets its
 * results'.
 */
#include <string.h>

#include "compiler/report_internal.h"

static int elementwise(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *out = n->out[0];
	int split = -1, npart = 0, nfree = 0, rc;
	for (int i = 0; i < n->nin; i++) {
		const struct tp_value *t = tp_st(c, n->in[i]);
		if (t->kind == TP_S && split < 0)
			split = t->dim;
		npart += t->kind == TP_P;
		nfree += t->kind == TP_FREE;
	}
	if (split >= 0) {
		for (int i = 0; i < n->nin; i++)
			if ((rc = tp_take_split(c, n, n->in[i], split)) < 0)
				return rc;
		tp_set_split(c, out, split);
		c->r->node_split[n->id] = true;
		return 0;
	}
	bool linear = ir_op_flags(n->op) & IR_OPF_LINEAR;
	if (npart == n->nin && linear) {
		tp_st(c, out)->kind = TP_P;
		c->r->node_split[n->id] = true;
		return 0;
	}
	if (nfree == n->nin) {
		int map[IR_MAX_RANK];
		for (int i = 0; i < out->shape.rank; i++)
			map[i] = i;
		tp_set_free_like(c, out, tp_st(c, n->in[0]), map);
		return 0;
	}
	for (int i = 0; i < n->nin; i++)
		if ((rc = tp_need_repl(c, n, n->in[i])) < 0)
			return rc;
	return 0; /* out stays TP_R */
}

/* Position of dim d of an operand among the dot's result dims. */
static int dot_out_dim(const struct ir_node *n, int side, int d)
{
	const struct ir_ilist *b = side ? &n->a.rhs_batch : &n->a.lhs_batch;
	const struct ir_ilist *k = side ? &n->a.rhs_contract : &n->a.lhs_contract;
	for (int i = 0; i < b->n; i++)
		if (b->v[i] == d)
			return i;
	int pos = b->n;
	if (side) { /* after the lhs free dims */
		const struct ir_value *l = n->in[0];
		pos += l->shape.rank - n->a.lhs_batch.n - n->a.lhs_contract.n;
	}
	for (int i = 0; i < n->in[side]->shape.rank; i++) {
		bool bk = false;
		for (int j = 0; j < b->n; j++)
			bk |= b->v[j] == i;
		for (int j = 0; j < k->n; j++)
			bk |= k->v[j] == i;
		if (bk)
			continue;
		if (i == d)
			return pos;
		pos++;
	}
	return -1; /* d is contracted */
}

/* The other operand's dim paired with dim d of operand `side` (batch or
 * contracting), or -1 for a free dim. */
static int dot_pair(const struct ir_node *n, int side, int d, bool *contract)
{
	const struct ir_ilist *b = side ? &n->a.rhs_batch : &n->a.lhs_batch;
	const struct ir_ilist *ob = side ? &n->a.lhs_batch : &n->a.rhs_batch;
	const struct ir_ilist *k = side ? &n->a.rhs_contract : &n->a.lhs_contract;
	const struct ir_ilist *ok = side ? &n->a.lhs_contract : &n->a.rhs_contract;
	for (int i = 0; i < b->n; i++)
		if (b->v[i] == d) {
			*contract = false;
			return (int)ob->v[i];
		}
	for (int i = 0; i < k->n; i++)
		if (k->v[i] == d) {
			*contract = true;
			return (int)ok->v[i];
		}
	*contract = false;
	return -1;
}

/* Column-parallel choice for a weight w = in[side]: its largest free dim
 * divisible by tp (the output features), else none. */
static int weight_column(struct tp_ctx *c, const struct ir_node *n, int side)
{
	const struct ir_value *w = n->in[side];
	int best = -1;
	for (int d = 0; d < w->shape.rank; d++) {
		bool k;
		if (dot_pair(n, side, d, &k) >= 0 || dot_out_dim(n, side, d) < 0 || !tp_splittable(c, w, d))
			continue;
		if (best < 0 || w->shape.dims[d] >= w->shape.dims[best])
			best = d;
	}
	return best;
}

static int dot_split_from(struct tp_ctx *c, const struct ir_node *n, int side)
{
	const struct ir_value *x = n->in[side], *o = n->in[1 - side];
	int d = tp_st(c, x)->dim, rc;
	bool contract;
	int pd = dot_pair(n, side, d, &contract);
	c->r->node_split[n->id] = true;
	if (pd >= 0) {
		if ((rc = tp_take_split(c, n, o, pd)) < 0)
			return rc;
		if (contract)
			tp_st(c, n->out[0])->kind = TP_P;
		else
			tp_set_split(c, n->out[0], dot_out_dim(n, side, d));
		return 0;
	}
	/* x split on a free dim: the other operand is used whole */
	if ((rc = tp_need_repl(c, n, o)) < 0 ||
	    (rc = tp_used_whole(c, n, o, "operand of a dot split on the other side")) < 0)
		return rc;
	tp_set_split(c, n->out[0], dot_out_dim(n, side, d));
	return 0;
}

static int dot(struct tp_ctx *c, const struct ir_node *n)
{
	int rc;
	for (int s = 0; s < 2; s++)
		if (tp_st(c, n->in[s])->kind == TP_P && (rc = tp_need_repl(c, n, n->in[s])) < 0)
			return rc;
	const struct tp_value *l = tp_st(c, n->in[0]), *r = tp_st(c, n->in[1]);
	if (l->kind == TP_S && r->kind == TP_S) {
		bool k;
		if (dot_pair(n, 0, l->dim, &k) == r->dim)
			return dot_split_from(c, n, 0);
		/* mismatched splits: gather the smaller one */
		int s = ir_shape_numel(&n->in[0]->shape) <= ir_shape_numel(&n->in[1]->shape) ? 0 : 1;
		if ((rc = tp_need_repl(c, n, n->in[s])) < 0)
			return rc;
		tp_st(c, n->in[s])->kind = TP_R; /* this node reads the gathered copy */
		rc = dot_split_from(c, n, 1 - s);
		tp_st(c, n->in[s])->kind = TP_S;
		return rc;
	}
	if (l->kind == TP_S)
		return dot_split_from(c, n, 0);
	if (r->kind == TP_S)
		return dot_split_from(c, n, 1);
	/* neither split: column-parallel on the weight, if there is one */
	int w = tp_is_free(c, n->in[1]) ? 1 : tp_is_free(c, n->in[0]) ? 0 : -1;
	if (w >= 0 && !tp_is_free(c, n->in[1 - w]) && !c->forbid[n->id]) {
		int d = weight_column(c, n, w);
		if (d >= 0) {
			if ((rc = tp_take_split(c, n, n->in[w], d)) < 0 ||
			    (rc = tp_used_whole(c, n, n->in[1 - w], "input of a column-parallel dot (Megatron's f)")) <
				    0)
				return rc;
			c->origin = n->id;
			tp_set_split(c, n->out[0], dot_out_dim(n, w, d));
			c->r->node_split[n->id] = true;
			return 0;
		}
	}
	return 0; /* replicated work */
}

static int conv(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0], *w = n->in[1];
	int rc;
	if (tp_st(c, x)->kind == TP_P && (rc = tp_need_repl(c, n, x)) < 0)
		return rc;
	const struct tp_value *tx = tp_st(c, x);
	bool depthwise = n->a.groups > 1 && n->a.groups == x->shape.dims[1] && w->shape.dims[1] == 1;
	c->r->node_split[n->id] = true;
	if (tx->kind == TP_S && tx->dim == 1 && depthwise) {
		if ((rc = tp_take_split(c, n, w, 0)) < 0)
			return rc;
		tp_set_split(c, n->out[0], 1);
		return 0;
	}
	if (tx->kind == TP_S && tx->dim == 1 && n->a.groups == 1) { /* row-parallel: split in-channels */
		if ((rc = tp_take_split(c, n, w, 1)) < 0)
			return rc;
		tp_st(c, n->out[0])->kind = TP_P;
		return 0;
	}
	if (tx->kind == TP_S && tx->dim == 0) {
		if ((rc = tp_need_repl(c, n, w)) < 0 || (rc = tp_used_whole(c, n, w, NULL)) < 0)
			return rc;
		tp_set_split(c, n->out[0], 0);
		return 0;
	}
	if ((rc = tp_need_repl(c, n, x)) < 0)
		return rc;
	if (n->a.groups == 1 && tp_is_free(c, w) && tp_splittable(c, w, 0) && !c->forbid[n->id]) {
		/* column-parallel: out-channels */
		c->origin = n->id;
		if ((rc = tp_take_split(c, n, w, 0)) < 0 ||
		    (rc = tp_used_whole(c, n, x, "input of a channel-parallel convolution")) < 0)
			return rc;
		tp_set_split(c, n->out[0], 1);
		return 0;
	}
	c->r->node_split[n->id] = false;
	return tp_need_repl(c, n, w);
}

/* Small all-reduces of statistics over a split dim (softmax, layer norm,
 * max-reductions): numel / dim elements each. */
static int stats(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *x, int d, int fwd, int bwd,
		 const char *why)
{
	double b = tp_full_bytes(c, x) / (double)x->shape.dims[d];
	int rc = 0;
	for (int i = 0; i < fwd && rc == 0; i++)
		rc = tp_event_add(c, n, COST_ALL_REDUCE, TP_FWD, b, why);
	for (int i = 0; i < bwd && rc == 0 && tp_st(c, x)->grad; i++)
		rc = tp_event_add(c, n, COST_ALL_REDUCE, TP_BWD, b, why);
	return rc;
}

static int reduce(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = tp_st(c, x);
	if (t->kind == TP_P && n->op == IR_OP_REDUCE_SUM) {
		tp_st(c, n->out[0])->kind = TP_P;
		return 0;
	}
	if (t->kind != TP_S)
		return tp_need_repl(c, n, x);
	int before = 0;
	for (int i = 0; i < n->a.axes.n; i++) {
		if (n->a.axes.v[i] == t->dim) {
			c->r->node_split[n->id] = true;
			if (n->op == IR_OP_REDUCE_SUM) {
				tp_st(c, n->out[0])->kind = TP_P;
				return 0;
			}
			return stats(c, n, x, t->dim, 1, 0, "reduction over a split dim");
		}
		before += n->a.axes.v[i] < t->dim;
	}
	c->r->node_split[n->id] = true;
	tp_set_split(c, n->out[0], t->dim - before);
	return 0;
}

/* Ops that keep the rank and must see dim `axis` (or the dims flagged in
 * touched[]) whole. */
static int same_rank(struct tp_ctx *c, const struct ir_node *n, const bool *touched)
{
	const struct tp_value *t = tp_st(c, n->in[0]);
	if (t->kind == TP_S && !touched[t->dim]) {
		for (int j = 0; j < n->nout; j++)
			tp_set_split(c, n->out[j], t->dim);
		c->r->node_split[n->id] = true;
		return 0;
	}
	return tp_need_repl(c, n, n->in[0]);
}

/* Reshape: dims group into runs with equal products; a split on the
 * outermost non-unit dim of a run moves to the outermost non-unit dim of
 * the matching output run. */
static void reshape_map(const struct ir_shape *in, const struct ir_shape *out, int *in_to_out, int *out_to_in)
{
	for (int i = 0; i < in->rank; i++)
		in_to_out[i] = -1;
	for (int j = 0; j < out->rank; j++)
		out_to_in[j] = -1;
	int i = 0, j = 0;
	while (i < in->rank || j < out->rank) {
		int i0 = i, j0 = j;
		int64_t pi = i < in->rank ? in->dims[i++] : 1, pj = j < out->rank ? out->dims[j++] : 1;
		while (pi != pj) {
			if (pi < pj && i < in->rank)
				pi *= in->dims[i++];
			else if (j < out->rank)
				pj *= out->dims[j++];
			else
				break;
		}
		int a = i0, b = j0;
		while (a < i && in->dims[a] == 1)
			a++;
		while (b < j && out->dims[b] == 1)
			b++;
		if (a < i && b < j) {
			in_to_out[a] = b;
			out_to_in[b] = a;
		}
		if (pi != pj)
			break;
	}
}

static int reshape(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0], *o = n->out[0];
	const struct tp_value *t = tp_st(c, x);
	int fwd[IR_MAX_RANK], back[IR_MAX_RANK];
	reshape_map(&x->shape, &o->shape, fwd, back);
	switch (t->kind) {
	case TP_R:
		return 0;
	case TP_P:
		tp_st(c, o)->kind = TP_P;
		return 0;
	case TP_FREE:
		tp_set_free_like(c, o, t, back);
		return 0;
	case TP_S:
		/* a dim passed through keeps its (possibly padded) split; one
		 * regrouped (hidden -> heads x head size) needs tp | heads */
		if (fwd[t->dim] >= 0 &&
		    (tp_divisible(c, o, fwd[t->dim]) || o->shape.dims[fwd[t->dim]] == x->shape.dims[t->dim])) {
			tp_set_split(c, o, fwd[t->dim]);
			return 0;
		}
		return tp_need_repl(c, n, x);
	}
	return 0;
}

static int transpose(struct tp_ctx *c, const struct ir_node *n)
{
	const struct tp_value *t = tp_st(c, n->in[0]);
	int map[IR_MAX_RANK];
	for (int i = 0; i < n->a.axes.n; i++)
		map[i] = (int)n->a.axes.v[i];
	if (t->kind == TP_FREE) {
		tp_set_free_like(c, n->out[0], t, map);
	} else if (t->kind == TP_S) {
		for (int i = 0; i < n->a.axes.n; i++)
			if (map[i] == t->dim)
				tp_set_split(c, n->out[0], i);
	} else {
		tp_st(c, n->out[0])->kind = t->kind;
	}
	return 0;
}

static int broadcast(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0], *o = n->out[0];
	const struct tp_value *t = tp_st(c, x);
	int map[IR_MAX_RANK];
	for (int j = 0; j < o->shape.rank; j++)
		map[j] = -1;
	for (int i = 0; i < x->shape.rank; i++)
		if (x->shape.dims[i] == o->shape.dims[n->a.axes.v[i]])
			map[n->a.axes.v[i]] = i;
	if (t->kind == TP_FREE)
		tp_set_free_like(c, o, t, map);
	else if (t->kind == TP_S)
		tp_set_split(c, o, (int)n->a.axes.v[t->dim]);
	else
		tp_st(c, o)->kind = t->kind;
	return 0;
}

/* A slice keeps a split when it cuts the split dim at multiples of tp:
 * the weights that produced it can be laid out per shard (as Megatron
 * lays out its fused QKV weight). */
static int slice(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = tp_st(c, x);
	if (t->kind == TP_S) {
		int d = t->dim;
		int64_t s = n->a.start.v[d], l = n->a.limit.v[d];
		if (n->a.stride.v[d] == 1 && s % c->tp == 0 && (l - s) % c->tp == 0) {
			tp_set_split(c, n->out[0], d);
			return 0;
		}
		return tp_need_repl(c, n, x);
	}
	if (t->kind == TP_FREE) {
		int map[IR_MAX_RANK];
		for (int i = 0; i < x->shape.rank; i++)
			map[i] = i;
		tp_set_free_like(c, n->out[0], t, map);
		return 0;
	}
	tp_st(c, n->out[0])->kind = t->kind;
	return 0;
}

static int concat(struct tp_ctx *c, const struct ir_node *n)
{
	int split = -1, rc;
	bool all_axis = true;
	for (int i = 0; i < n->nin; i++) {
		const struct tp_value *t = tp_st(c, n->in[i]);
		if (t->kind == TP_S && split < 0)
			split = t->dim;
		all_axis &= t->kind == TP_S && t->dim == n->a.axis && tp_divisible(c, n->in[i], (int)n->a.axis);
	}
	if (split >= 0 && (split != n->a.axis || all_axis)) {
		for (int i = 0; i < n->nin; i++)
			if ((rc = tp_take_split(c, n, n->in[i], split)) < 0)
				return rc;
		tp_set_split(c, n->out[0], split);
		return 0;
	}
	for (int i = 0; i < n->nin; i++)
		if ((rc = tp_need_repl(c, n, n->in[i])) < 0)
			return rc;
	return 0;
}

static int gather(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0], *idx = n->in[1], *o = n->out[0];
	const struct tp_value *t = tp_st(c, x);
	int a = (int)n->a.axis, rc;
	if ((rc = tp_need_repl(c, n, idx)) < 0)
		return rc;
	if (t->kind == TP_FREE && tp_splittable(c, x, a)) { /* vocabulary-parallel embedding */
		if ((rc = tp_take_split(c, n, x, a)) < 0)
			return rc;
		if (t->pdim[a] >= 0 && c->r->param_split[t->root]) {
			tp_st(c, o)->kind = TP_P;
			c->r->node_split[n->id] = true;
		}
		return 0;
	}
	if (t->kind == TP_S && t->dim == a && tp_full_bytes(c, o) <= tp_full_bytes(c, x)) {
		tp_st(c, o)->kind = TP_P; /* each rank picks the indices it holds */
		c->r->node_split[n->id] = true;
		return 0;
	}
	if (t->kind == TP_S && t->dim != a) {
		tp_set_split(c, o, t->dim < a ? t->dim : t->dim + idx->shape.rank - 1);
		c->r->node_split[n->id] = true;
		return 0;
	}
	if (t->kind == TP_P) {
		tp_st(c, o)->kind = TP_P;
		return 0;
	}
	return tp_need_repl(c, n, x);
}

static int softmax(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = tp_st(c, x);
	if (t->kind == TP_S) {
		tp_set_split(c, n->out[0], t->dim);
		c->r->node_split[n->id] = true;
		return t->dim == n->a.axis ? stats(c, n, x, t->dim, 2, 1, "softmax over a split dim") : 0;
	}
	return tp_need_repl(c, n, x);
}

static int layer_norm(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = tp_st(c, x);
	int rc;
	if (t->kind != TP_S) {
		for (int i = 0; i < 3; i++)
			if ((rc = tp_need_repl(c, n, n->in[i])) < 0)
				return rc;
		return 0;
	}
	int d = t->dim, ax = (int)n->a.axis;
	tp_set_split(c, n->out[0], d);
	c->r->node_split[n->id] = true;
	if (d >= ax) {
		for (int i = 1; i < 3; i++)
			if ((rc = tp_take_split(c, n, n->in[i], d - ax)) < 0)
				return rc;
		return stats(c, n, x, d, 2, 2, "layer norm over a split dim");
	}
	for (int i = 1; i < 3; i++)
		if ((rc = tp_need_repl(c, n, n->in[i])) < 0 || (rc = tp_used_whole(c, n, n->in[i], NULL)) < 0)
			return rc;
	return 0;
}

/* ---- the rule of each op (the shard column of ops.h) ------------------- */

#define RULE(name) static int rule_##name(struct tp_ctx *c, const struct ir_node *n)

RULE(elem)
{
	return elementwise(c, n);
}

RULE(dot)
{
	return dot(c, n);
}

RULE(conv)
{
	return conv(c, n);
}

RULE(reduce_sum)
{
	return reduce(c, n);
}

RULE(reduce_max)
{
	return reduce(c, n);
}

RULE(reduce_prod)
{
	return reduce(c, n);
}

RULE(arg) /* arg-reductions drop the axis */
{
	const struct tp_value *t = tp_st(c, n->in[0]);
	if (t->kind == TP_S && t->dim != n->a.axis) {
		int d = t->dim;
		tp_set_split(c, n->out[0], d - (d > n->a.axis));
		return 0;
	}
	return tp_need_repl(c, n, n->in[0]);
}

RULE(scan)
{
	bool touched[IR_MAX_RANK] = { false };
	touched[n->a.axis] = true;
	return same_rank(c, n, touched);
}

RULE(window)
{
	bool touched[IR_MAX_RANK] = { false };
	for (int i = 0; i < n->in[0]->shape.rank; i++)
		touched[i] = n->a.window.v[i] != 1 || n->a.stride.v[i] != 1 || n->a.pad_lo.v[i] || n->a.pad_hi.v[i];
	return same_rank(c, n, touched);
}

RULE(pad)
{
	bool touched[IR_MAX_RANK] = { false };
	for (int i = 0; i < n->in[0]->shape.rank; i++)
		touched[i] = n->a.pad_lo.v[i] || n->a.pad_hi.v[i];
	return same_rank(c, n, touched);
}

RULE(reverse)
{
	bool touched[IR_MAX_RANK] = { false };
	for (int i = 0; i < n->a.axes.n; i++)
		touched[n->a.axes.v[i]] = true;
	return same_rank(c, n, touched);
}

RULE(reshape)
{
	return reshape(c, n);
}

RULE(transpose)
{
	return transpose(c, n);
}

RULE(broadcast)
{
	return broadcast(c, n);
}

RULE(slice)
{
	return slice(c, n);
}

RULE(concat)
{
	return concat(c, n);
}

RULE(gather)
{
	return gather(c, n);
}

RULE(scatter)
{
	for (int i = 0; i < 3; i++) {
		int rc = tp_need_repl(c, n, n->in[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

RULE(source)
{
	return 0;
}

RULE(softmax)
{
	return softmax(c, n);
}

RULE(layer_norm)
{
	return layer_norm(c, n);
}

#undef RULE

static int (*const rules[IR_OP_COUNT])(struct tp_ctx *c, const struct ir_node *n) = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = rule_##shard,
	IR_OPS(X)
#undef X
};

/* The tensor-parallel sharding rule of each op. */
int tp_node_rule(struct tp_ctx *c, const struct ir_node *n)
{
	IR_ASSERT((unsigned)n->op < IR_OP_COUNT);
	return rules[n->op](c, n);
}
