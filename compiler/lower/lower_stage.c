/*
 * lower_stage.c: one stage of a plan set up for lowering, whether the
 * stages are lowered one after another (lower_plan.c) or together, as a
 * pipelined training step (lower_pipe.c): its lowering state and its entry
 * in the plan; its parameters, model inputs and training state bound to
 * the slices its devices load, in the sharding its graph is annotated
 * with (the intra-op pass's choice);
 * values computed by another stage received from there (lower_xfer.c);
 * and a value bound to a plan output, made whole first.
 *
 * The stage walks (lower_plan.c, lower_pipe.c) and the training parts
 * (lower_train.c) call these; this file calls none of them.
 */
#include <errno.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"

/* The sharding graph input or parameter v is annotated with, or NULL when
 * it has none (lw_init_stage allows that only where nothing reads it). */
static const struct ir_sharding *chosen_spec(const struct lower *L, const struct ir_value *v)
{
	(void)L;
	return v->sharded ? &v->sharding : NULL;
}

/* Whether stage graph g carries what lowering reads: a mesh, every value
 * read or written sharded, every node's operands annotated. */
static int check_annotated(const struct ir_graph *g, int s)
{
	int n0, n1, nv = ir_graph_nvalues(g), rc = 0;
	ir_graph_mesh(g, &n0, &n1);
	if (n0 < 1)
		return ir_errorf(-EINVAL,
				 "stage %d: the graph has no mesh; lowering reads the shardings the "
				 "intra-op pass annotates it with",
				 s);
	bool *read = ir_calloc((size_t)nv + 1, sizeof *read);
	if (!read)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	for (int i = 0; i < ir_graph_noutputs(g); i++)
		read[ir_graph_output(g, i)->id] = true;
	for (int i = 0; i < ir_graph_nnodes(g) && !rc; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++)
			read[n->in[j]->id] = true;
		if (n->nin && !n->in_sharding)
			rc = ir_errorf(-EINVAL, "stage %d: node %d \"%s\" (%s) has no operand shardings", s, n->id,
				       n->name ? n->name : "", ir_op_name(n->op));
	}
	for (int v = 0; v < nv && !rc; v++) {
		const struct ir_value *x = ir_graph_value(g, v);
		if (!x->sharded && (read[v] || x->kind == IR_VAL_NODE))
			rc = ir_errorf(-EINVAL, "stage %d: value %d \"%s\" has no sharding", s, v,
				       x->name ? x->name : "");
	}
	ir_free(read);
	return rc;
}

int lw_bind_value(struct lower *L, const struct ir_value *v, enum plan_bind bind, int index,
		  const struct ir_sharding *spec)
{
	if (!spec && !(spec = chosen_spec(L, v)))
		return 0; /* nothing reads it */
	struct ir_shape ls;
	lw_local_shape(L, &v->shape, spec, &ls);
	int b = lw_buf_new(L, v->dtype, &ls);
	if (b < 0)
		return b;
	L->buf[b].bind = bind;
	L->buf[b].index = index;
	L->buf[b].spec = *spec;
	return lw_rep_add(L, v->id, spec, b);
}

int lw_pick_rep(const struct lower *L, int v)
{
	int r = L->rep_head[v];
	for (int q = r; q >= 0; q = L->reps[q].next)
		if (!L->reps[q].spec.partial)
			return q;
	return r;
}

int lw_bind_output(struct lower *L, int i, const struct ir_value *v)
{
	int r = lw_pick_rep(L, v->id);
	IR_ASSERT(r >= 0);
	struct ir_sharding src = L->reps[r].spec, dst = src;
	dst.partial = 0;
	int b = lw_reshard(L, v, L->reps[r].buf, &src, &dst);
	if (b < 0)
		return b;
	if (L->buf[b].bind != PLAN_BIND_NONE) {
		struct lw_ins c = { .kind = PLAN_COPY, .kernel = -1 };
		int nb = lw_buf_new(L, L->buf[b].dtype, &L->buf[b].shape);
		if (nb < 0 || lw_emit(L, &c, 1, &b, 1, &nb) < 0)
			return -ENOMEM;
		b = nb;
	}
	L->buf[b].bind = PLAN_BIND_OUTPUT;
	L->buf[b].index = i;
	L->buf[b].spec = dst;
	return 0;
}

int lw_src_of(const struct lw_ctx *c, int s, int v)
{
	return c->st[s].src ? c->st[s].src[v] : v;
}
#define src_of lw_src_of

int lw_init_stage(struct lw_ctx *c, int s, struct plan *p, struct lw_shared *sh)
{
	const struct lower_stage *x = &c->st[s];
	struct lower *L = &c->L[s];
	int nv = ir_graph_nvalues(x->g), nw = ir_graph_nvalues(c->whole);
	int rc = check_annotated(x->g, s);
	if (rc < 0)
		return rc;
	if (x->first_rank != (s ? c->st[s - 1].first_rank + c->L[s - 1].nd : 0))
		return ir_errorf(-EINVAL, "stage %d starts at rank %d; stages take consecutive ranks", s,
				 x->first_rank);
	L->p = p;
	L->sh = sh;
	L->g = x->g;
	L->stage = s;
	L->step_first = -1;
	L->first_rank = x->first_rank;
	ir_graph_mesh(x->g, &L->n0, &L->n1);
	L->nd = L->n0 * L->n1;
	if (!(L->rep_head = ir_malloc(sizeof *L->rep_head * (size_t)(nv + 1))) ||
	    !(c->inv[s] = ir_malloc(sizeof *c->inv[s] * (size_t)(nw + 1))))
		return -ENOMEM;
	memset(L->rep_head, -1, sizeof *L->rep_head * (size_t)(nv + 1));
	if (!(L->dyn = cost_dynamic_values(x->g)))
		return -ENOMEM;
	memset(c->inv[s], -1, sizeof *c->inv[s] * (size_t)(nw + 1));
	for (int v = 0; v < nv; v++) {
		int w = src_of(c, s, v);
		if (w < 0 || w >= nw)
			continue;
		c->inv[s][w] = v;
		/* the first stage computing it owns it: later ones recompute constants */
		if (ir_graph_value(x->g, v)->kind == IR_VAL_NODE && c->owner[w] < 0)
			c->owner[w] = s;
	}
	p->stages[s] = (struct plan_stage){ x->first_rank, L->nd, x->rows, x->cols, L->n0, L->n1, 0, NULL };
	return 0;
}

/* The training state input whole value id w stands for, or -1. */
static int state_index(const struct lw_ctx *c, int w)
{
	for (int j = 0; c->tr && w >= 0 && j < c->tr->ts->nstate; j++)
		if (c->tr->ts->state[j]->id == w)
			return j;
	return -1;
}

int lw_bind_stage(struct lw_ctx *c, int s)
{
	struct lower *L = &c->L[s];
	int rc;
	for (int i = 0; i < ir_graph_nparams(L->g); i++) {
		const struct ir_value *v = ir_graph_param(L->g, i);
		int w = src_of(c, s, v->id);
		if (w < 0 || c->pidx[w] < 0)
			return ir_errorf(-EINVAL, "stage %d: parameter \"%s\" is not one of the model's", s,
					 v->name ? v->name : "");
		if ((rc = lw_bind_value(L, v, PLAN_BIND_PARAM, c->pidx[w], NULL)) < 0)
			return rc;
	}
	for (int i = 0; i < ir_graph_ninputs(L->g); i++) {
		const struct ir_value *v = ir_graph_input(L->g, i);
		int w = src_of(c, s, v->id), j = state_index(c, w);
		if (w >= 0 && c->iidx[w] >= 0)
			rc = lw_bind_value(L, v, PLAN_BIND_INPUT, c->iidx[w], NULL);
		else
			rc = j >= 0 ? lw_bind_value(L, v, PLAN_BIND_STATE, j, NULL) : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

int lw_stage_inputs(struct lw_ctx *c, int s)
{
	struct lower *L = &c->L[s];
	int rc = lw_bind_stage(c, s);
	for (int i = 0; rc == 0 && i < ir_graph_ninputs(L->g); i++) {
		const struct ir_value *v = ir_graph_input(L->g, i);
		int w = src_of(c, s, v->id);
		if ((w >= 0 && c->iidx[w] >= 0) || state_index(c, w) >= 0)
			continue; /* bound */
		int from = w >= 0 ? c->owner[w] : -1;
		if (from < 0 || from >= s)
			return ir_errorf(-EINVAL, "stage %d: input \"%s\" is computed by no earlier stage", s,
					 v->name ? v->name : "");
		rc = lw_receive(c, s, v);
	}
	return rc;
}

int lw_receive(struct lw_ctx *c, int s, const struct ir_value *v)
{
	struct lower *L = &c->L[s];
	const struct ir_sharding *rs = chosen_spec(L, v);
	int w = src_of(c, s, v->id), from = w >= 0 ? c->owner[w] : -1, rc, rb;
	if (!rs)
		return 0; /* nothing reads it */
	if (from < 0 || from == s)
		return ir_errorf(-EINVAL, "stage %d: input \"%s\" is computed by no other stage", s,
				 v->name ? v->name : "");
	struct lower *S = &c->L[from];
	int u = c->inv[from][w];
	if ((rc = lw_ensure(S, ir_graph_value(S->g, u))) < 0)
		return rc;
	int r = lw_pick_rep(S, u);
	IR_ASSERT(r >= 0);
	struct ir_sharding ss = S->reps[r].spec;
	if ((rc = lw_transfer(S, ir_graph_value(S->g, u), S->reps[r].buf, &ss, L, v, rs, &rb)) < 0)
		return rc;
	return lw_rep_add(L, v->id, rs, rb);
}
