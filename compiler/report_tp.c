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
	const struct tp_value *t = &r->val[v->id];
	double b = cost_value_bytes(v, elem_bytes);
	return t->kind == TP_S || (v->kind == IR_VAL_PARAM && r->param_split[v->id]) ? b / r->tp : b;
}

double tp_full_bytes(const struct tp_ctx *c, const struct ir_value *v)
{
	return cost_value_bytes(v, c->eb);
}

int tp_event_add(struct tp_ctx *c, const struct ir_node *n, enum cost_coll coll, enum tp_phase ph, double bytes,
		 const char *why)
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

struct tp_value *tp_st(struct tp_ctx *c, const struct ir_value *v)
{
	return &c->r->val[v->id];
}

bool tp_divisible(const struct tp_ctx *c, const struct ir_value *v, int d)
{
	return d >= 0 && d < v->shape.rank && v->shape.dims[d] % c->tp == 0;
}

/* Weights split unevenly by padding (Megatron pads the vocabulary to a
 * multiple of tp): any dim at least tp long. */
bool tp_splittable(const struct tp_ctx *c, const struct ir_value *v, int d)
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
int tp_used_whole(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v, const char *why)
{
	struct tp_value *t = tp_st(c, v);
	if (!t->grad || t->bwd_reduced)
		return 0;
	t->bwd_reduced = true;
	double b = tp_full_bytes(c, v);
	if (v->kind == IR_VAL_PARAM || t->kind == TP_FREE)
		why = "gradient of a replicated weight used by split work";
	return tp_event_add(c, n, COST_ALL_REDUCE, TP_BWD, b, why);
}

/* Makes v available whole on every rank at node n. */
int tp_need_repl(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v)
{
	struct tp_value *t = tp_st(c, v);
	int rc = 0;
	switch (t->kind) {
	case TP_R:
		break;
	case TP_FREE:
		break; /* parameter kept replicated */
	case TP_P:
		rc = tp_event_add(c, n, COST_ALL_REDUCE, TP_FWD, tp_full_bytes(c, v), "partial sums (row-parallel)");
		t->kind = TP_R;
		break;
	case TP_S:
		if (t->gathered)
			break;
		blame(c, t->origin);
		t->gathered = true;
		rc = tp_event_add(c, n, COST_ALL_GATHER, TP_FWD, tp_full_bytes(c, v), "split value needed whole");
		if (rc == 0 && t->grad)
			rc = tp_event_add(c, n, COST_REDUCE_SCATTER, TP_BWD, tp_full_bytes(c, v),
					  "split value needed whole");
		break;
	}
	return rc;
}

/* Makes v available split on dim d at node n. */
int tp_take_split(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v, int d)
{
	struct tp_value *t = tp_st(c, v);
	if (t->kind == TP_S && t->dim == d)
		return 0;
	if (t->kind == TP_FREE) {
		settle_param(c, t, t->pdim[d]);
		if (t->pdim[d] < 0 || !c->r->param_split[t->root])
			return tp_used_whole(c, n, v, NULL);
		return 0;
	}
	if (t->kind == TP_S) {
		blame(c, t->origin);
		int rc = tp_event_add(c, n, COST_ALL_TO_ALL, TP_FWD, tp_full_bytes(c, v) / c->tp,
				      "split moved to another dim");
		return rc < 0    ? rc
		       : t->grad ? tp_event_add(c, n, COST_ALL_TO_ALL, TP_BWD, tp_full_bytes(c, v) / c->tp,
						"split moved to another dim")
				 : 0;
	}
	/* A broadcast value (a softmax's max, a norm's statistics) sums its
	 * gradient down to its small source first: cheap, no blame. */
	const struct ir_value *src = v;
	while (src->kind == IR_VAL_NODE && (src->def->op == IR_OP_BROADCAST || src->def->op == IR_OP_RESHAPE))
		src = src->def->in[0];
	if (t->grad && src == v)
		blame(c, c->origin);
	int rc = tp_need_repl(c, n, v); /* partial sums are reduced first */
	return rc < 0 ? rc : tp_used_whole(c, n, src, "replicated input of split work (Megatron's f)");
}

void tp_set_split(struct tp_ctx *c, const struct ir_value *v, int d)
{
	struct tp_value *t = tp_st(c, v);
	t->kind = TP_S;
	t->dim = d;
	t->origin = c->origin;
}

void tp_set_free_like(struct tp_ctx *c, const struct ir_value *out, const struct tp_value *src,
		      const int *map /* out dim -> src dim or -1 */)
{
	struct tp_value *t = tp_st(c, out);
	t->kind = TP_FREE;
	t->root = src->root;
	for (int i = 0; i < out->shape.rank; i++)
		t->pdim[i] = map[i] >= 0 ? src->pdim[map[i]] : -1;
}

/* ---- op rules ------------------------------------------------------------ */

bool tp_is_free(struct tp_ctx *c, const struct ir_value *v)
{
	return tp_st(c, v)->kind == TP_FREE;
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
		rc = tp_node_rule(c, n);
	}
	c->origin = -1;
	for (int i = 0; i < ir_graph_noutputs(g) && rc == 0 && nn > 0; i++)
		if (r->val[ir_graph_output(g, i)->id].kind != TP_R)
			rc = tp_need_repl(c, ir_graph_node(g, nn - 1), ir_graph_output(g, i));
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
