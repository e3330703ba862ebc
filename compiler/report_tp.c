/*
 * report_tp.c: Megatron-style tensor parallelism over a whole graph, for
 * evaluating manual plans (`pcc report --plan ...,tp=T`).
 *
 * One pass over the nodes in program order gives every value a layout on
 * the tp ranks (replicated, split along one dim, or partial sums) and
 * records each collective the layout costs, forward and backward:
 *  - a dot with a weight whose activation is replicated splits the weight's
 *    output columns ("column-parallel", no communication forward; the
 *    activation's gradient is all-reduced backward: Megatron's f);
 *  - a dot whose activation is split on the contracting dim splits the
 *    weight's rows and yields partial sums ("row-parallel"), all-reduced
 *    where they are first used (Megatron's g, free backward);
 *  - batched dots over split dims (attention heads) and elementwise ops on
 *    split values stay local; an embedding lookup splits the vocabulary and
 *    yields partial sums; softmax and layer norm over a split dim exchange
 *    only their statistics;
 *  - anything else that cannot work on a split value all-gathers it
 *    (reduce-scatter of its gradient backward).
 * On a GPT layer this finds exactly Megatron's plan: QKV and MLP-in
 * column-parallel, attention per head, out-projection and MLP-out
 * row-parallel: two all-reduces forward and two backward per layer.
 * Preconditions: a verified graph; tp >= 1.
 */
#include <errno.h>
#include <string.h>

#include "compiler/report_internal.h"

struct tp_ctx {
	const struct ir_graph *g;
	struct tp_result *r;
	int tp;
	int eb; /* activation element bytes (0: the model's) */
	int origin;   /* the column-parallel node the current node's split comes from */
	bool *forbid; /* [nnodes]: column-parallel splits that cost more than they save */
	bool blamed;  /* a new one was found this round */
};

/* The split made at node o forced a collective it was meant to avoid (an
 * all-gather of its result, or a split of a replicated activation that
 * carries a gradient, such as the residual stream): forbid it and run the
 * propagation again. */
static void blame(struct tp_ctx *c, int o)
{
	if (o >= 0 && !c->forbid[o]) {
		c->forbid[o] = true;
		c->blamed = true;
	}
}

double tp_local_bytes(const struct tp_result *r, const struct ir_value *v, int elem_bytes)
{
	double e = ir_dtype_is_float(v->dtype) && elem_bytes > 0 ? elem_bytes : (double)ir_dtype_size(v->dtype);
	double b = (double)ir_shape_numel(&v->shape) * e;
	const struct tp_value *t = &r->val[v->id];
	if (t->kind == TP_S || (v->kind == IR_VAL_PARAM && r->param_split[v->id]))
		b /= r->tp;
	return b;
}

static double full_bytes(const struct tp_ctx *c, const struct ir_value *v)
{
	double e = ir_dtype_is_float(v->dtype) && c->eb > 0 ? c->eb : (double)ir_dtype_size(v->dtype);
	return (double)ir_shape_numel(&v->shape) * e;
}

static int event(struct tp_ctx *c, const struct ir_node *n, enum cost_coll coll, enum tp_phase ph,
		 double bytes, const char *why)
{
	struct tp_result *r = c->r;
	if (r->nev == r->cap) {
		int cap = r->cap ? 2 * r->cap : 64;
		struct tp_event *e = ir_realloc(r->ev, (size_t)cap * sizeof *e);
		if (!e)
			return ir_errorf(-ENOMEM, "out of memory");
		r->ev = e;
		r->cap = cap;
	}
	r->ev[r->nev++] = (struct tp_event){ .node = n->id, .coll = coll, .phase = ph, .bytes = bytes, .why = why };
	return 0;
}

static struct tp_value *st(struct tp_ctx *c, const struct ir_value *v)
{
	return &c->r->val[v->id];
}

static bool divisible(const struct tp_ctx *c, const struct ir_value *v, int d)
{
	return d >= 0 && d < v->shape.rank && v->shape.dims[d] % c->tp == 0;
}

/* Weights split unevenly by padding (Megatron pads the vocabulary to a
 * multiple of tp): any dim at least tp long. */
static bool splittable(const struct tp_ctx *c, const struct ir_value *v, int d)
{
	return d >= 0 && d < v->shape.rank && v->shape.dims[d] >= c->tp;
}

/* A FREE value's layout is chosen: its parameter is stored split on pd
 * (when pd >= 0) or replicated. */
static void settle_param(struct tp_ctx *c, const struct tp_value *t, int pd)
{
	if (t->root >= 0 && pd >= 0 && ir_graph_value(c->g, t->root)->shape.dims[pd] >= c->tp)
		c->r->param_split[t->root] = true;
}

/* v is used whole by work that is split: its gradient is partial on every
 * rank and is all-reduced once backward (Megatron's f). */
static int used_whole(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v, const char *why)
{
	struct tp_value *t = st(c, v);
	if (!t->grad || t->bwd_reduced)
		return 0;
	t->bwd_reduced = true;
	double b = full_bytes(c, v);
	if (v->kind == IR_VAL_PARAM || t->kind == TP_FREE)
		why = "gradient of a replicated weight used by split work";
	return event(c, n, COST_ALL_REDUCE, TP_BWD, b, why);
}

/* Makes v available whole on every rank at node n. */
static int need_repl(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v)
{
	struct tp_value *t = st(c, v);
	int rc = 0;
	switch (t->kind) {
	case TP_R:
		break;
	case TP_FREE:
		break; /* parameter kept replicated */
	case TP_P:
		rc = event(c, n, COST_ALL_REDUCE, TP_FWD, full_bytes(c, v), "partial sums (row-parallel)");
		t->kind = TP_R;
		break;
	case TP_S:
		if (t->gathered)
			break;
		blame(c, t->origin);
		t->gathered = true;
		rc = event(c, n, COST_ALL_GATHER, TP_FWD, full_bytes(c, v), "split value needed whole");
		if (rc == 0 && t->grad)
			rc = event(c, n, COST_REDUCE_SCATTER, TP_BWD, full_bytes(c, v), "split value needed whole");
		break;
	}
	return rc;
}

/* Makes v available split on dim d at node n. */
static int take_split(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v, int d)
{
	struct tp_value *t = st(c, v);
	if (t->kind == TP_S && t->dim == d)
		return 0;
	if (t->kind == TP_FREE) {
		settle_param(c, t, t->pdim[d]);
		if (t->pdim[d] < 0 || !c->r->param_split[t->root])
			return used_whole(c, n, v, NULL);
		return 0;
	}
	if (t->kind == TP_S) {
		blame(c, t->origin);
		int rc = event(c, n, COST_ALL_TO_ALL, TP_FWD, full_bytes(c, v) / c->tp, "split moved to another dim");
		return rc < 0 ? rc : t->grad ? event(c, n, COST_ALL_TO_ALL, TP_BWD, full_bytes(c, v) / c->tp,
						    "split moved to another dim") : 0;
	}
	/* A broadcast value (a softmax's max, a norm's statistics) sums its
	 * gradient down to its small source first: cheap, no blame. */
	const struct ir_value *src = v;
	while (src->kind == IR_VAL_NODE && (src->def->op == IR_OP_BROADCAST || src->def->op == IR_OP_RESHAPE))
		src = src->def->in[0];
	if (t->grad && src == v)
		blame(c, c->origin);
	int rc = need_repl(c, n, v); /* partial sums are reduced first */
	return rc < 0 ? rc : used_whole(c, n, src, "replicated input of split work (Megatron's f)");
}

static void set_split(struct tp_ctx *c, const struct ir_value *v, int d)
{
	struct tp_value *t = st(c, v);
	t->kind = TP_S;
	t->dim = d;
	t->origin = c->origin;
}

static void set_free_like(struct tp_ctx *c, const struct ir_value *out, const struct tp_value *src,
			  const int *map /* out dim -> src dim or -1 */)
{
	struct tp_value *t = st(c, out);
	t->kind = TP_FREE;
	t->root = src->root;
	for (int i = 0; i < out->shape.rank; i++)
		t->pdim[i] = map[i] >= 0 ? src->pdim[map[i]] : -1;
}

/* ---- op rules ------------------------------------------------------------ */

static bool is_free(struct tp_ctx *c, const struct ir_value *v)
{
	return st(c, v)->kind == TP_FREE;
}

static int elementwise(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *out = n->out[0];
	int split = -1, npart = 0, nfree = 0, rc;
	for (int i = 0; i < n->nin; i++) {
		const struct tp_value *t = st(c, n->in[i]);
		if (t->kind == TP_S && split < 0)
			split = t->dim;
		npart += t->kind == TP_P;
		nfree += t->kind == TP_FREE;
	}
	if (split >= 0) {
		for (int i = 0; i < n->nin; i++)
			if ((rc = take_split(c, n, n->in[i], split)) < 0)
				return rc;
		set_split(c, out, split);
		c->r->node_split[n->id] = true;
		return 0;
	}
	bool linear = n->op == IR_OP_ADD || n->op == IR_OP_SUB || n->op == IR_OP_NEG || n->op == IR_OP_CONVERT;
	if (npart == n->nin && linear) {
		st(c, out)->kind = TP_P;
		c->r->node_split[n->id] = true;
		return 0;
	}
	if (nfree == n->nin) {
		int map[IR_MAX_RANK];
		for (int i = 0; i < out->shape.rank; i++)
			map[i] = i;
		set_free_like(c, out, st(c, n->in[0]), map);
		return 0;
	}
	for (int i = 0; i < n->nin; i++)
		if ((rc = need_repl(c, n, n->in[i])) < 0)
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
		if (dot_pair(n, side, d, &k) >= 0 || dot_out_dim(n, side, d) < 0 || !splittable(c, w, d))
			continue;
		if (best < 0 || w->shape.dims[d] >= w->shape.dims[best])
			best = d;
	}
	return best;
}

static int dot_split_from(struct tp_ctx *c, const struct ir_node *n, int side)
{
	const struct ir_value *x = n->in[side], *o = n->in[1 - side];
	int d = st(c, x)->dim, rc;
	bool contract;
	int pd = dot_pair(n, side, d, &contract);
	c->r->node_split[n->id] = true;
	if (pd >= 0) {
		if ((rc = take_split(c, n, o, pd)) < 0)
			return rc;
		if (contract)
			st(c, n->out[0])->kind = TP_P;
		else
			set_split(c, n->out[0], dot_out_dim(n, side, d));
		return 0;
	}
	/* x split on a free dim: the other operand is used whole */
	if ((rc = need_repl(c, n, o)) < 0 || (rc = used_whole(c, n, o, "operand of a dot split on the other side")) < 0)
		return rc;
	set_split(c, n->out[0], dot_out_dim(n, side, d));
	return 0;
}

static int dot(struct tp_ctx *c, const struct ir_node *n)
{
	int rc;
	for (int s = 0; s < 2; s++)
		if (st(c, n->in[s])->kind == TP_P && (rc = need_repl(c, n, n->in[s])) < 0)
			return rc;
	const struct tp_value *l = st(c, n->in[0]), *r = st(c, n->in[1]);
	if (l->kind == TP_S && r->kind == TP_S) {
		bool k;
		if (dot_pair(n, 0, l->dim, &k) == r->dim)
			return dot_split_from(c, n, 0);
		/* mismatched splits: gather the smaller one */
		int s = ir_shape_numel(&n->in[0]->shape) <= ir_shape_numel(&n->in[1]->shape) ? 0 : 1;
		if ((rc = need_repl(c, n, n->in[s])) < 0)
			return rc;
		st(c, n->in[s])->kind = TP_R; /* this node reads the gathered copy */
		rc = dot_split_from(c, n, 1 - s);
		st(c, n->in[s])->kind = TP_S;
		return rc;
	}
	if (l->kind == TP_S)
		return dot_split_from(c, n, 0);
	if (r->kind == TP_S)
		return dot_split_from(c, n, 1);
	/* neither split: column-parallel on the weight, if there is one */
	int w = is_free(c, n->in[1]) ? 1 : is_free(c, n->in[0]) ? 0 : -1;
	if (w >= 0 && !is_free(c, n->in[1 - w]) && !c->forbid[n->id]) {
		int d = weight_column(c, n, w);
		if (d >= 0) {
			if ((rc = take_split(c, n, n->in[w], d)) < 0 ||
			    (rc = used_whole(c, n, n->in[1 - w], "input of a column-parallel dot (Megatron's f)")) < 0)
				return rc;
			c->origin = n->id;
			set_split(c, n->out[0], dot_out_dim(n, w, d));
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
	if (st(c, x)->kind == TP_P && (rc = need_repl(c, n, x)) < 0)
		return rc;
	const struct tp_value *tx = st(c, x);
	bool depthwise = n->a.groups > 1 && n->a.groups == x->shape.dims[1] && w->shape.dims[1] == 1;
	c->r->node_split[n->id] = true;
	if (tx->kind == TP_S && tx->dim == 1 && depthwise) {
		if ((rc = take_split(c, n, w, 0)) < 0)
			return rc;
		set_split(c, n->out[0], 1);
		return 0;
	}
	if (tx->kind == TP_S && tx->dim == 1 && n->a.groups == 1) { /* row-parallel: split in-channels */
		if ((rc = take_split(c, n, w, 1)) < 0)
			return rc;
		st(c, n->out[0])->kind = TP_P;
		return 0;
	}
	if (tx->kind == TP_S && tx->dim == 0) {
		if ((rc = need_repl(c, n, w)) < 0 || (rc = used_whole(c, n, w, NULL)) < 0)
			return rc;
		set_split(c, n->out[0], 0);
		return 0;
	}
	if ((rc = need_repl(c, n, x)) < 0)
		return rc;
	if (n->a.groups == 1 && is_free(c, w) && splittable(c, w, 0) && !c->forbid[n->id]) {
		/* column-parallel: out-channels */
		c->origin = n->id;
		if ((rc = take_split(c, n, w, 0)) < 0 ||
		    (rc = used_whole(c, n, x, "input of a channel-parallel convolution")) < 0)
			return rc;
		set_split(c, n->out[0], 1);
		return 0;
	}
	c->r->node_split[n->id] = false;
	return need_repl(c, n, w);
}

/* Small all-reduces of statistics over a split dim (softmax, layer norm,
 * max-reductions): numel / dim elements each. */
static int stats(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *x, int d, int fwd, int bwd,
		 const char *why)
{
	double b = full_bytes(c, x) / (double)x->shape.dims[d];
	int rc = 0;
	for (int i = 0; i < fwd && rc == 0; i++)
		rc = event(c, n, COST_ALL_REDUCE, TP_FWD, b, why);
	for (int i = 0; i < bwd && rc == 0 && st(c, x)->grad; i++)
		rc = event(c, n, COST_ALL_REDUCE, TP_BWD, b, why);
	return rc;
}

static int reduce(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = st(c, x);
	if (t->kind == TP_P && n->op == IR_OP_REDUCE_SUM) {
		st(c, n->out[0])->kind = TP_P;
		return 0;
	}
	if (t->kind != TP_S)
		return need_repl(c, n, x);
	int before = 0;
	for (int i = 0; i < n->a.axes.n; i++) {
		if (n->a.axes.v[i] == t->dim) {
			c->r->node_split[n->id] = true;
			if (n->op == IR_OP_REDUCE_SUM) {
				st(c, n->out[0])->kind = TP_P;
				return 0;
			}
			return stats(c, n, x, t->dim, 1, 0, "reduction over a split dim");
		}
		before += n->a.axes.v[i] < t->dim;
	}
	c->r->node_split[n->id] = true;
	set_split(c, n->out[0], t->dim - before);
	return 0;
}

/* Ops that keep the rank and must see dim `axis` (or the dims flagged in
 * touched[]) whole. */
static int same_rank(struct tp_ctx *c, const struct ir_node *n, const bool *touched)
{
	const struct tp_value *t = st(c, n->in[0]);
	if (t->kind == TP_S && !touched[t->dim]) {
		for (int j = 0; j < n->nout; j++)
			set_split(c, n->out[j], t->dim);
		c->r->node_split[n->id] = true;
		return 0;
	}
	return need_repl(c, n, n->in[0]);
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
	const struct tp_value *t = st(c, x);
	int fwd[IR_MAX_RANK], back[IR_MAX_RANK];
	reshape_map(&x->shape, &o->shape, fwd, back);
	switch (t->kind) {
	case TP_R:
		return 0;
	case TP_P:
		st(c, o)->kind = TP_P;
		return 0;
	case TP_FREE:
		set_free_like(c, o, t, back);
		return 0;
	case TP_S:
		/* a dim passed through keeps its (possibly padded) split; one
		 * regrouped (hidden -> heads x head size) needs tp | heads */
		if (fwd[t->dim] >= 0 && (divisible(c, o, fwd[t->dim]) ||
					 o->shape.dims[fwd[t->dim]] == x->shape.dims[t->dim])) {
			set_split(c, o, fwd[t->dim]);
			return 0;
		}
		return need_repl(c, n, x);
	}
	return 0;
}

static int transpose(struct tp_ctx *c, const struct ir_node *n)
{
	const struct tp_value *t = st(c, n->in[0]);
	int map[IR_MAX_RANK];
	for (int i = 0; i < n->a.axes.n; i++)
		map[i] = (int)n->a.axes.v[i];
	if (t->kind == TP_FREE) {
		set_free_like(c, n->out[0], t, map);
	} else if (t->kind == TP_S) {
		for (int i = 0; i < n->a.axes.n; i++)
			if (map[i] == t->dim)
				set_split(c, n->out[0], i);
	} else {
		st(c, n->out[0])->kind = t->kind;
	}
	return 0;
}

static int broadcast(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0], *o = n->out[0];
	const struct tp_value *t = st(c, x);
	int map[IR_MAX_RANK];
	for (int j = 0; j < o->shape.rank; j++)
		map[j] = -1;
	for (int i = 0; i < x->shape.rank; i++)
		if (x->shape.dims[i] == o->shape.dims[n->a.axes.v[i]])
			map[n->a.axes.v[i]] = i;
	if (t->kind == TP_FREE)
		set_free_like(c, o, t, map);
	else if (t->kind == TP_S)
		set_split(c, o, (int)n->a.axes.v[t->dim]);
	else
		st(c, o)->kind = t->kind;
	return 0;
}

/* A slice keeps a split when it cuts the split dim at multiples of tp:
 * the weights that produced it can be laid out per shard (as Megatron
 * lays out its fused QKV weight). */
static int slice(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = st(c, x);
	if (t->kind == TP_S) {
		int d = t->dim;
		int64_t s = n->a.start.v[d], l = n->a.limit.v[d];
		if (n->a.stride.v[d] == 1 && s % c->tp == 0 && (l - s) % c->tp == 0) {
			set_split(c, n->out[0], d);
			return 0;
		}
		return need_repl(c, n, x);
	}
	if (t->kind == TP_FREE) {
		int map[IR_MAX_RANK];
		for (int i = 0; i < x->shape.rank; i++)
			map[i] = i;
		set_free_like(c, n->out[0], t, map);
		return 0;
	}
	st(c, n->out[0])->kind = t->kind;
	return 0;
}

static int concat(struct tp_ctx *c, const struct ir_node *n)
{
	int split = -1, rc;
	bool all_axis = true;
	for (int i = 0; i < n->nin; i++) {
		const struct tp_value *t = st(c, n->in[i]);
		if (t->kind == TP_S && split < 0)
			split = t->dim;
		all_axis &= t->kind == TP_S && t->dim == n->a.axis && divisible(c, n->in[i], (int)n->a.axis);
	}
	if (split >= 0 && (split != n->a.axis || all_axis)) {
		for (int i = 0; i < n->nin; i++)
			if ((rc = take_split(c, n, n->in[i], split)) < 0)
				return rc;
		set_split(c, n->out[0], split);
		return 0;
	}
	for (int i = 0; i < n->nin; i++)
		if ((rc = need_repl(c, n, n->in[i])) < 0)
			return rc;
	return 0;
}

static int gather(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0], *idx = n->in[1], *o = n->out[0];
	const struct tp_value *t = st(c, x);
	int a = (int)n->a.axis, rc;
	if ((rc = need_repl(c, n, idx)) < 0)
		return rc;
	if (t->kind == TP_FREE && splittable(c, x, a)) { /* vocabulary-parallel embedding */
		if ((rc = take_split(c, n, x, a)) < 0)
			return rc;
		if (t->pdim[a] >= 0 && c->r->param_split[t->root]) {
			st(c, o)->kind = TP_P;
			c->r->node_split[n->id] = true;
		}
		return 0;
	}
	if (t->kind == TP_S && t->dim == a && full_bytes(c, o) <= full_bytes(c, x)) {
		st(c, o)->kind = TP_P; /* each rank picks the indices it holds */
		c->r->node_split[n->id] = true;
		return 0;
	}
	if (t->kind == TP_S && t->dim != a) {
		set_split(c, o, t->dim < a ? t->dim : t->dim + idx->shape.rank - 1);
		c->r->node_split[n->id] = true;
		return 0;
	}
	if (t->kind == TP_P) {
		st(c, o)->kind = TP_P;
		return 0;
	}
	return need_repl(c, n, x);
}

static int softmax(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = st(c, x);
	if (t->kind == TP_S) {
		set_split(c, n->out[0], t->dim);
		c->r->node_split[n->id] = true;
		return t->dim == n->a.axis ? stats(c, n, x, t->dim, 2, 1, "softmax over a split dim") : 0;
	}
	return need_repl(c, n, x);
}

static int layer_norm(struct tp_ctx *c, const struct ir_node *n)
{
	const struct ir_value *x = n->in[0];
	const struct tp_value *t = st(c, x);
	int rc;
	if (t->kind != TP_S) {
		for (int i = 0; i < 3; i++)
			if ((rc = need_repl(c, n, n->in[i])) < 0)
				return rc;
		return 0;
	}
	int d = t->dim, ax = (int)n->a.axis;
	set_split(c, n->out[0], d);
	c->r->node_split[n->id] = true;
	if (d >= ax) {
		for (int i = 1; i < 3; i++)
			if ((rc = take_split(c, n, n->in[i], d - ax)) < 0)
				return rc;
		return stats(c, n, x, d, 2, 2, "layer norm over a split dim");
	}
	for (int i = 1; i < 3; i++)
		if ((rc = need_repl(c, n, n->in[i])) < 0 || (rc = used_whole(c, n, n->in[i], NULL)) < 0)
			return rc;
	return 0;
}

/* The tensor-parallel sharding rule of each op (one switch over the op table). */
static int node_rule(struct tp_ctx *c, const struct ir_node *n)
{
	bool touched[IR_MAX_RANK] = { false };
	switch (n->op) {
	case IR_OP_NEG: case IR_OP_ABS: case IR_OP_SIGN: case IR_OP_EXP: case IR_OP_LOG:
	case IR_OP_SQRT: case IR_OP_RSQRT: case IR_OP_RECIP: case IR_OP_TANH: case IR_OP_ERF:
	case IR_OP_SIGMOID: case IR_OP_RELU: case IR_OP_SIN: case IR_OP_COS: case IR_OP_TAN:
	case IR_OP_ASIN: case IR_OP_ACOS: case IR_OP_ATAN: case IR_OP_SINH: case IR_OP_COSH:
	case IR_OP_ASINH: case IR_OP_ACOSH: case IR_OP_ATANH: case IR_OP_FLOOR: case IR_OP_CEIL:
	case IR_OP_ROUND: case IR_OP_NOT: case IR_OP_IS_NAN: case IR_OP_IS_INF: case IR_OP_CONVERT:
	case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV: case IR_OP_REM:
	case IR_OP_POW: case IR_OP_MAX: case IR_OP_MIN: case IR_OP_AND: case IR_OP_OR:
	case IR_OP_XOR: case IR_OP_EQ: case IR_OP_NE: case IR_OP_LT: case IR_OP_LE:
	case IR_OP_GT: case IR_OP_GE: case IR_OP_SELECT:
		return elementwise(c, n);
	case IR_OP_DOT:
		return dot(c, n);
	case IR_OP_CONV:
		return conv(c, n);
	case IR_OP_REDUCE_SUM: case IR_OP_REDUCE_MAX: case IR_OP_REDUCE_MIN: case IR_OP_REDUCE_PROD:
		return reduce(c, n);
	case IR_OP_ARGMAX: case IR_OP_ARGMIN: case IR_OP_CUMSUM: case IR_OP_TOPK:
		touched[n->a.axis] = true;
		if (st(c, n->in[0])->kind == TP_S && !touched[st(c, n->in[0])->dim] && n->op != IR_OP_CUMSUM &&
		    n->op != IR_OP_TOPK) { /* arg-reductions drop the axis */
			int d = st(c, n->in[0])->dim;
			set_split(c, n->out[0], d - (d > n->a.axis));
			return 0;
		}
		return n->op == IR_OP_ARGMAX || n->op == IR_OP_ARGMIN ? need_repl(c, n, n->in[0]) : same_rank(c, n, touched);
	case IR_OP_WINDOW_MAX: case IR_OP_WINDOW_SUM:
		for (int i = 0; i < n->in[0]->shape.rank; i++)
			touched[i] = n->a.window.v[i] != 1 || n->a.stride.v[i] != 1 || n->a.pad_lo.v[i] || n->a.pad_hi.v[i];
		return same_rank(c, n, touched);
	case IR_OP_PAD:
		for (int i = 0; i < n->in[0]->shape.rank; i++)
			touched[i] = n->a.pad_lo.v[i] || n->a.pad_hi.v[i];
		return same_rank(c, n, touched);
	case IR_OP_REVERSE:
		for (int i = 0; i < n->a.axes.n; i++)
			touched[n->a.axes.v[i]] = true;
		return same_rank(c, n, touched);
	case IR_OP_RESHAPE:
		return reshape(c, n);
	case IR_OP_TRANSPOSE:
		return transpose(c, n);
	case IR_OP_BROADCAST:
		return broadcast(c, n);
	case IR_OP_SLICE:
		return slice(c, n);
	case IR_OP_CONCAT:
		return concat(c, n);
	case IR_OP_GATHER:
		return gather(c, n);
	case IR_OP_SCATTER:
		for (int i = 0; i < 3; i++) {
			int rc = need_repl(c, n, n->in[i]);
			if (rc < 0)
				return rc;
		}
		return 0;
	case IR_OP_IOTA: case IR_OP_CONSTANT:
		return 0;
	case IR_OP_SOFTMAX:
		return softmax(c, n);
	case IR_OP_LAYER_NORM:
		return layer_norm(c, n);
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"op out of range");
	return 0;
}

void tp_result_free(struct tp_result *r)
{
	ir_free(r->val);
	ir_free(r->node_split);
	ir_free(r->param_split);
	ir_free(r->ev);
	memset(r, 0, sizeof *r);
}

/* One round over the graph from scratch. */
static int propagate_once(struct tp_ctx *c)
{
	const struct ir_graph *g = c->g;
	struct tp_result *r = c->r;
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g), rc = 0;
	r->nev = 0;
	memset(r->node_split, 0, (size_t)nn * sizeof *r->node_split);
	memset(r->param_split, 0, (size_t)nv * sizeof *r->param_split);
	for (int i = 0; i < nv; i++) {
		const struct ir_value *v = ir_graph_value(g, i);
		struct tp_value *t = &r->val[v->id];
		bool grad = t->grad;
		memset(t, 0, sizeof *t);
		t->grad = grad;
		t->kind = TP_R;
		t->root = t->origin = -1;
		if (v->kind == IR_VAL_PARAM && ir_dtype_is_float(v->dtype)) {
			t->kind = TP_FREE;
			t->root = v->id;
			for (int d = 0; d < v->shape.rank; d++)
				t->pdim[d] = (signed char)d;
		}
	}
	for (int i = 0; i < nn && rc == 0; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		c->origin = -1;
		for (int k = 0; k < n->nin && c->origin < 0; k++)
			if (r->val[n->in[k]->id].kind == TP_S)
				c->origin = r->val[n->in[k]->id].origin;
		rc = node_rule(c, n);
	}
	c->origin = -1;
	for (int i = 0; i < ir_graph_noutputs(g) && rc == 0 && nn > 0; i++)
		if (r->val[ir_graph_output(g, i)->id].kind != TP_R)
			rc = need_repl(c, ir_graph_node(g, nn - 1), ir_graph_output(g, i));
	return rc;
}

int tp_propagate(const struct ir_graph *g, int tp, int elem_bytes, struct tp_result *r)
{
	IR_ASSERT(tp >= 1);
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g), rc = 0;
	memset(r, 0, sizeof *r);
	r->tp = tp;
	r->val = ir_calloc((size_t)nv + 1, sizeof *r->val);
	r->node_split = ir_calloc((size_t)nn + 1, sizeof *r->node_split);
	r->param_split = ir_calloc((size_t)nv + 1, sizeof *r->param_split);
	bool *forbid = ir_calloc((size_t)nn + 1, sizeof *forbid);
	if (!r->val || !r->node_split || !r->param_split || !forbid) {
		ir_free(forbid);
		tp_result_free(r);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	struct tp_ctx c = { .g = g, .r = r, .tp = tp, .eb = elem_bytes, .forbid = forbid };
	for (int i = 0; i < nv; i++) {
		const struct ir_value *v = ir_graph_value(g, i);
		r->val[v->id].grad = v->kind == IR_VAL_PARAM && ir_dtype_is_float(v->dtype);
		r->val[v->id].kind = v->kind == IR_VAL_PARAM && ir_dtype_is_float(v->dtype) ? TP_FREE : TP_R;
		r->val[v->id].root = r->val[v->id].kind == TP_FREE ? v->id : -1;
	}
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		bool grad = false;
		for (int k = 0; k < n->nin; k++)
			grad |= r->val[n->in[k]->id].grad;
		for (int k = 0; k < n->nout; k++)
			r->val[n->out[k]->id].grad = grad && ir_dtype_is_float(n->out[k]->dtype);
	}
	if (tp == 1) { /* nothing to lay out: every value replicated */
		ir_free(forbid);
		return 0;
	}
	/* each round forbids at least one more column split, so this ends */
	do {
		c.blamed = false;
		rc = propagate_once(&c);
	} while (rc == 0 && c.blamed);
	ir_free(forbid);
	if (rc < 0)
		tp_result_free(r);
	return rc;
}
