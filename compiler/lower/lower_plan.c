/*
 * lower_plan.c: the lowering's entry: a plan's stages, each a sharded graph
 * of some of the model's nodes on its own sub-mesh, become one plan.
 *
 * Per stage, in order: its parameters and the model inputs it reads are
 * bound to the slices its devices load (lower_stage.c, which sets up every
 * stage, pipelined ones too); values it reads from an earlier stage are
 * received from that stage (lower_xfer.c: the sender's sends are appended
 * to the sender's program, which is complete by then, so every stage
 * receives before it sends and messages follow one global order: no
 * deadlock); then its nodes (lower.c). Every model output is bound in
 * the stage that computes it. Then two passes of their own over every
 * stage's program (lower_fuse, lower_memory): fusion (lower_fuse.c), and
 * frees, the memory plan and the expansion into per-device programs
 * (lower_mem.c). lower_plan and lower_train run the three in a row; the
 * compile pipeline (pipeline.c) runs them one by one, to check, dump and
 * time each.
 *
 * The programs run once per micro-batch: inputs and outputs are one
 * micro-batch's, and a stage's sends carry that micro-batch's activations.
 */
#include <errno.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"

static int add_tensors(struct plan_tensor **arr, int *n, const struct ir_graph *g, int count,
		       struct ir_value *(*get)(const struct ir_graph *, int), bool outputs)
{
	if (!(*arr = ir_calloc((size_t)(count ? count : 1), sizeof **arr)))
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	*n = count;
	for (int i = 0; i < count; i++) {
		const struct ir_value *v = get(g, i);
		const char *name = outputs ? ir_graph_output_name(g, i) : v->name;
		char tmp[32];
		if (!name) {
			snprintf(tmp, sizeof tmp, "%s%d", outputs ? "output" : "value", i);
			name = tmp;
		}
		size_t len = strlen(name);
		if (!((*arr)[i].name = ir_malloc(len + 1)))
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		memcpy((*arr)[i].name, name, len + 1);
		(*arr)[i].dtype = v->dtype;
		(*arr)[i].shape = v->shape;
	}
	return 0;
}

/* Per value id of the whole graph: its parameter or input index, -1. */
static int *index_of(const struct ir_graph *g, int n, struct ir_value *(*get)(const struct ir_graph *, int))
{
	int nv = ir_graph_nvalues(g);
	int *x = ir_malloc(sizeof *x * (size_t)(nv + 1));
	if (!x)
		return NULL;
	for (int i = 0; i < nv; i++)
		x[i] = -1;
	for (int i = 0; i < n; i++)
		x[get(g, i)->id] = i;
	return x;
}

/* Model output o, bound in the stage computing it (or, for a model input
 * or parameter passed through, the first stage reading it). */
static int model_output(struct lw_ctx *c, int o)
{
	const struct ir_value *w = ir_graph_output(c->whole, o);
	int s = c->owner[w->id];
	for (int t = 0; t < c->ns && s < 0; t++)
		if (c->inv[t][w->id] >= 0 && c->L[t].rep_head[c->inv[t][w->id]] >= 0)
			s = t;
	if (s < 0)
		return ir_errorf(-ENOTSUP,
				 "output %d \"%s\" is a model input or parameter no node reads; lowering "
				 "cannot bind it",
				 o, ir_graph_output_name(c->whole, o) ? ir_graph_output_name(c->whole, o) : "");
	const struct ir_value *v = ir_graph_value(c->L[s].g, c->inv[s][w->id]);
	int rc = lw_ensure(&c->L[s], v);
	return rc < 0 ? rc : lw_bind_output(&c->L[s], o, v);
}

static void lower_release(struct lower *L)
{
	lw_train_early_free(L);
	for (int i = 0; i < L->nins; i++) {
		ir_free(L->ins[i].dev_kernel);
		ir_free(L->ins[i].dev_peer);
	}
	ir_free(L->buf);
	ir_free(L->ins);
	ir_free(L->args);
	ir_free(L->reps);
	ir_free(L->rep_head);
	ir_free(L->dyn);
	L->buf = NULL;
	L->ins = NULL;
	L->args = NULL;
	L->reps = NULL;
	L->rep_head = NULL;
	L->dyn = NULL;
	L->nins = 0;
}

/* Constants are made where they are read (lw_node), not in program order. */
static bool is_const(const struct lower *L, const struct ir_node *n)
{
	for (int j = 0; j < n->nout; j++)
		if (L->dyn[n->out[j]->id])
			return false;
	return true;
}

static int lower_all(struct lw_ctx *c, struct plan *p, struct lw_shared *sh)
{
	int rc;
	for (int s = 0; s < c->ns; s++) {
		if ((rc = lw_init_stage(c, s, p, sh)) < 0)
			return rc;
		if ((rc = lw_stage_inputs(c, s)) < 0)
			return rc;
		struct lower *L = &c->L[s];
		int nn = ir_graph_nnodes(L->g), split = c->tr ? c->tr->ts->update_first : nn;
		for (int i = 0; i < nn; i++) {
			if (i == split && (rc = lw_train_split(L, c->tr)) < 0)
				return rc;
			const struct ir_node *n = ir_graph_node(L->g, i);
			if (is_const(L, n))
				continue;
			if ((rc = lw_node(L, n)) < 0) {
				if (c->ns > 1)
					ir_error_prefix("stage %d", s);
				return rc;
			}
			if (c->tr && (rc = lw_train_node(L, c->tr, NULL, n)) < 0)
				return rc;
		}
		if (c->tr && (rc = lw_train_finish(L, c->tr, NULL, true)) < 0)
			return rc;
	}
	for (int o = 0; !c->tr && o < ir_graph_noutputs(c->whole); o++)
		if ((rc = model_output(c, o)) < 0)
			return rc;
	return 0;
}

/* A plan's stages between lowering's passes: the plan under construction
 * and each stage's template program. */
struct lowering {
	struct lw_shared sh;
	struct lw_ctx c;
	struct plan *p;
};

void lower_free(struct lowering *lw)
{
	if (!lw)
		return;
	struct lw_ctx *c = &lw->c;
	for (int s = 0; c->L && s < c->ns; s++)
		lower_release(&c->L[s]);
	for (int s = 0; c->inv && s < c->ns; s++)
		ir_free(c->inv[s]);
	ir_free(c->L);
	ir_free(c->inv);
	ir_free(c->owner);
	ir_free(c->pidx);
	ir_free(c->iidx);
	ir_free(lw->sh.khash);
	plan_free(lw->p);
	ir_free(lw);
}

int lower_begin(const struct lower_train *tr, const struct ir_graph *whole, const struct lower_stage *st, int nstages,
		const char *cluster, struct lowering **out)
{
	*out = NULL;
	if (tr && nstages == 1 && (st->g != tr->ts->g || st->src))
		return ir_errorf(-EINVAL, "lower_train: the stage must be the train step's own graph");
	if (tr && nstages > 1 && (tr->ts->nstages != nstages || ir_graph_nschedules(tr->ts->g) != nstages))
		return ir_errorf(-EINVAL, "lower_train: a step built for %d stages with %d schedules, lowered on %d",
				 tr->ts->nstages, ir_graph_nschedules(tr->ts->g), nstages);
	for (int s = 0; tr && nstages > 1 && s < nstages; s++) {
		int n;
		ir_graph_schedule(tr->ts->g, s, &n);
		if (n != 2 * tr->micro)
			return ir_errorf(-EINVAL, "lower_train: stage %d's schedule runs %d micro-batches, the step %d",
					 s, n / 2, tr->micro);
	}
	struct lowering *lw = ir_calloc(1, sizeof *lw);
	if (!lw)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	lw->c = (struct lw_ctx){ tr, whole, st, nstages, NULL, NULL, NULL, NULL, NULL };
	struct lw_ctx *c = &lw->c;
	int ndata = tr ? tr->ts->ndata : ir_graph_ninputs(whole);
	struct plan *p = lw->p = plan_new();
	int nw = ir_graph_nvalues(whole), rc = -ENOMEM;
	if (!p)
		goto fail;
	size_t len = strlen(cluster ? cluster : "");
	if (!(p->cluster = ir_malloc(len + 1)) || !(p->stages = ir_calloc((size_t)nstages, sizeof *p->stages)) ||
	    !(c->L = ir_calloc((size_t)nstages, sizeof *c->L)) ||
	    !(c->inv = ir_calloc((size_t)nstages, sizeof *c->inv)) ||
	    !(c->owner = ir_malloc(sizeof *c->owner * (size_t)(nw + 1))) ||
	    !(c->pidx = index_of(whole, ir_graph_nparams(whole), ir_graph_param)) ||
	    !(c->iidx = index_of(whole, ndata, ir_graph_input)))
		goto fail;
	memcpy(p->cluster, cluster ? cluster : "", len + 1);
	memset(c->owner, -1, sizeof *c->owner * (size_t)(nw + 1));
	p->micro = 1;
	p->nstages = nstages;
	if ((rc = add_tensors(&p->params, &p->nparams, whole, ir_graph_nparams(whole), ir_graph_param, false)) < 0 ||
	    (rc = add_tensors(&p->inputs, &p->ninputs, whole, ndata, ir_graph_input, false)) < 0 ||
	    (rc = add_tensors(&p->outputs, &p->noutputs, whole, tr ? 2 : ir_graph_noutputs(whole), ir_graph_output,
			      true)) < 0 ||
	    (tr && (rc = lw_train_tensors(p, tr)) < 0))
		goto fail;
	rc = tr && nstages > 1 ? lw_pipe_all(c, p, &lw->sh) : lower_all(c, p, &lw->sh);
fail:
	if (rc == -ENOMEM && !ir_error()[0])
		ir_errorf(-ENOMEM, "out of memory lowering the plan");
	if (rc < 0)
		lower_free(lw);
	else
		*out = lw;
	return rc;
}

int lower_fuse(struct lowering *lw)
{
	int rc = 0;
	for (int s = 0; s < lw->c.ns && rc == 0; s++)
		rc = lw_fuse(&lw->c.L[s]);
	return rc;
}

int lower_memory(struct lowering *lw, struct plan **out)
{
	int rc = 0;
	*out = NULL;
	/* a stage's template is done with once its devices are made: freed
	 * before the next stage's are (at scale, the peak of a compile) */
	for (int s = 0; s < lw->c.ns && rc == 0; s++)
		if ((rc = lw_memory(&lw->c.L[s])) == 0)
			lower_release(&lw->c.L[s]);
	if (rc == 0) {
		*out = lw->p;
		lw->p = NULL;
	}
	return rc;
}

int lower_print(const struct lowering *lw, FILE *f)
{
	int rc = 0;
	for (int s = 0; s < lw->c.ns && rc == 0; s++)
		rc = lw_print(&lw->c.L[s], f);
	return rc == 0 && ferror(f) ? ir_errorf(-EIO, "write error") : rc;
}

/* The three passes in a row. */
static int lower_any(const struct lower_train *tr, const struct ir_graph *whole, const struct lower_stage *st,
		     int nstages, const char *cluster, struct plan **out)
{
	struct lowering *lw;
	*out = NULL;
	int rc = lower_begin(tr, whole, st, nstages, cluster, &lw);
	if (rc == 0 && (rc = lower_fuse(lw)) == 0)
		rc = lower_memory(lw, out);
	lower_free(lw);
	return rc;
}

int lower_plan(const struct ir_graph *whole, const struct lower_stage *st, int nstages, const char *cluster,
	       struct plan **out)
{
	return lower_any(NULL, whole, st, nstages, cluster, out);
}

int lower_train(const struct lower_train *tr, const struct lower_stage *st, int nstages, const char *cluster,
		struct plan **out)
{
	return lower_any(tr, tr->ts->g, st, nstages, cluster, out);
}

int lower_single(const struct ir_graph *g, const char *cluster, struct plan **out)
{
	int n0, n1;
	ir_graph_mesh(g, &n0, &n1);
	struct lower_stage s = { g, 0, 1, n0 * n1, NULL };
	return lower_plan(g, &s, 1, cluster, out);
}
