/*
 * compile.c: from the inter-op pass's plan to the executable plan: the
 * stage graph at the chosen micro-batch size, its sharding by the intra-op
 * pass on the stage's logical mesh, SPMD lowering and memory planning
 * (lower*.c), then the plan's identity (hashes of the model file and of the
 * options that shaped the plan) and its check (plan_verify).
 *
 * Lowered: inference plans, pipelined or not (each stage's nodes become a
 * graph of their own, graph_extract, sharded on the stage's mesh), and
 * one-stage training plans: the train step (train_build at the micro-batch
 * size, gradients scaled by 1 / micro-batches) sharded whole by the
 * intra-op pass, forward, backward and optimizer together, so the pass
 * chooses how gradients are reduced and whether the update and its state
 * are split (ZeRO); pipelined training: the step's nodes tagged with their
 * stage (forward nodes by the stage's node range, backward nodes with the
 * node they differentiate, the update with its parameter), each stage's
 * part sharded by its own pass and lowered with the schedule the search
 * chose (lower_pipe.c).
 *
 * The work is split into the compile pipeline's passes (pipeline.c runs
 * them in order, each checked, dumped on request and timed): compile_new
 * takes the forward graph at the micro-batch size; compile_autodiff builds
 * the train step; compile_lower_stages solves each stage's sharding (once)
 * and lowers the stages to template programs; compile_fuse and
 * compile_memory run lowering's fusion and memory plan; compile_refit
 * solves a training stage again whose arena came out over the limit (then
 * the three run again); compile_finish checks the memory limit, names
 * the model the plan was made from, and states each stage's memory as the
 * solve lowering laid out counts it (compile_input.stated: the plan's
 * prediction, by what holds it at the solve's peak).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "compiler/compiler.h"
#include "compiler/lower/lower.h"
#include "compiler/parallel.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/progress.h"
#include "compiler/search/search.h"
#include "ir/plan.h"

/* The stages of a plan on their way to lowering: per stage its graph (the
 * whole graph, not owned, or an extracted one), value map, the intra-op
 * pass's result and the entry lowering reads. */
struct stage_set {
	int n, rank; /* stages; ranks taken so far */
	const struct ir_graph *whole;
	struct ir_graph **g;
	int **src;
	struct intra_result *r;
	struct lower_stage *st;
	bool *solved;
};

static int stages_new(struct stage_set *x, int n, const struct ir_graph *whole)
{
	*x = (struct stage_set){ n,
				 0,
				 whole,
				 ir_calloc((size_t)n, sizeof *x->g),
				 ir_calloc((size_t)n, sizeof *x->src),
				 ir_calloc((size_t)n, sizeof *x->r),
				 ir_calloc((size_t)n, sizeof *x->st),
				 ir_calloc((size_t)n, sizeof *x->solved) };
	if (!x->g || !x->src || !x->r || !x->st || !x->solved)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int s = 0; s < n; s++)
		x->g[s] = (struct ir_graph *)whole;
	return 0;
}

/* Stage s solved: its lowering entry on the next ranks, and the memory the
 * pass allowed. */
static void stages_solved(struct stage_set *x, const struct compile_input *in, int s, double *mem)
{
	const struct inter_stage *y = &in->inter->stages[s];
	x->solved[s] = true;
	x->st[s] = (struct lower_stage){ x->g[s], x->rank, y->rows, y->cols, x->src[s] };
	x->rank += y->n0 * y->n1;
	*mem = x->r[s].mem_limit;
}

/* Stage s solved again: what its last solve made goes. */
static void stage_resolve(struct stage_set *x, int s)
{
	intra_result_free(&x->r[s]);
	x->solved[s] = false;
	if (x->g[s] != x->whole)
		ir_graph_free(x->g[s]);
	x->g[s] = (struct ir_graph *)x->whole;
	ir_free(x->src[s]);
	x->src[s] = NULL;
}

/* Its new solve in its lowering entry, on the same ranks. */
static void stage_resolved(struct stage_set *x, int s)
{
	x->solved[s] = true;
	x->st[s].g = x->g[s];
	x->st[s].src = x->src[s];
}

/* The largest arena of stage s's devices in plan p. */
static double stage_arena(const struct plan *p, int s)
{
	double a = 0;
	for (int i = 0; i < p->ndevices; i++)
		if (p->devices[i].stage == s && (double)p->devices[i].arena_bytes > a)
			a = (double)p->devices[i].arena_bytes;
	return a;
}

static int stages_fit(const struct stage_set *x, const struct compile_input *in)
{
	if (x->rank > in->cluster->ndevices)
		return ir_errorf(-EINVAL, "the stages take %d devices, the cluster has %d", x->rank,
				 in->cluster->ndevices);
	return 0;
}

static void stages_free(struct stage_set *x)
{
	for (int s = 0; s < x->n; s++) {
		if (x->solved && x->solved[s])
			intra_result_free(&x->r[s]);
		if (x->g && x->g[s] != x->whole)
			ir_graph_free(x->g[s]);
		if (x->src)
			ir_free(x->src[s]);
	}
	ir_free(x->g);
	ir_free(x->src);
	ir_free(x->r);
	ir_free(x->st);
	ir_free(x->solved);
}

/* Every stage's graph (the whole graph when there is one stage), sharded
 * by the intra-op pass on the stage's logical mesh. */
static int solve_stages(const struct compile_input *in, const struct ir_graph *g, struct stage_set *x, double *mem)
{
	const struct inter_plan *ip = in->inter;
	int ns = ip->nstages, rc;
	if ((rc = stages_new(x, ns, g)) < 0)
		return rc;
	progress_phase(ns, "lowering: each stage's sharding");
	for (int s = 0; s < ns; s++) {
		const struct inter_stage *y = &ip->stages[s];
		if (ns > 1 && !(x->g[s] = graph_extract(g, y->node_first, y->node_last, false, &x->src[s])))
			return -ENOMEM;
		struct intra_opts o;
		intra_opts_init(&o);
		o.n0 = y->n0;
		o.n1 = y->n1;
		o.mem_limit = in->opts->mem_limit;
		o.cal = in->opts->cal;
		o.step_dtypes = true; /* lowering keeps the graph's dtypes */
		if (in->opts->time_limit > 0)
			o.time_limit = in->opts->time_limit;
		o.inputs_resident = s > 0; /* received from the stage before */
		if ((rc = intra_pass(x->g[s], in->cluster, &o, &x->r[s])) < 0) {
			if (rc == -ENOSPC && in->refused)
				*in->refused = s;
			if (ns > 1)
				ir_error_prefix("stage %d (nodes %d..%d)", s, y->node_first, y->node_last - 1);
			return rc;
		}
		stages_solved(x, in, s, mem);
		progress_done(1);
	}
	return stages_fit(x, in);
}

/* Per stage, the schedule's order of forward (m) and backward (-(m + 1))
 * parts (plan_stage.order), from the schedule the search chose. */
static int stage_orders(const struct inter_plan *ip, int ***out)
{
	struct sched sc;
	if (ip->sched == COST_SCHED_INTERLEAVED)
		return ir_errorf(-ENOTSUP,
				 "the plan runs interleaved 1F1B (%d chunks per device), which lowering "
				 "does not support yet (inter_opts.no_interleaved leaves it out of the search)",
				 ip->v);
	int rc = sched_build(ip->sched, ip->nstages, ip->micro, 1, &sc);
	if (rc < 0)
		return rc;
	int **o = ir_calloc((size_t)ip->nstages, sizeof *o);
	for (int s = 0; o && s < ip->nstages; s++) {
		int k = 0;
		if (!(o[s] = ir_malloc(sizeof *o[s] * (size_t)(2 * ip->micro)))) {
			rc = -ENOMEM;
			break;
		}
		for (int j = 0; j < sc.nops[s]; j++) {
			const struct sched_op *x = &sc.ops[s][j];
			if ((x->kind == SCHED_FWD || x->kind == SCHED_BWD) && k < 2 * ip->micro)
				o[s][k++] = x->kind == SCHED_FWD ? x->mb : -(x->mb + 1);
		}
		IR_ASSERT(k == 2 * ip->micro);
	}
	sched_free(&sc);
	if (!o || rc < 0) {
		for (int s = 0; o && s < ip->nstages; s++)
			ir_free(o[s]);
		ir_free(o);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	*out = o;
	return 0;
}

/* The intra-op pass on one stage's part of the train step (the whole step
 * for one stage): the update's nodes weigh once per step, write-backs are
 * costed edges. keep: the stage's nodes, NULL for all; *src: the stage
 * graph's value ids in the step's. */
static int train_stage(const struct compile_input *in, const struct train_step *ts, const int (*ties)[2], int s,
		       int slots, double mem_limit, struct ir_graph **sg, int **src, struct intra_result *r)
{
	const struct inter_stage *x = &in->inter->stages[s];
	int ntie = ts->nparams + ts->nstate, rc = 0, k = 0;
	struct intra_opts o;
	intra_opts_init(&o);
	o.n0 = x->n0;
	o.n1 = x->n1;
	o.mem_limit = mem_limit;
	o.step_dtypes = true;
	o.cal = in->opts->cal;
	if (in->opts->time_limit > 0)
		o.time_limit = in->opts->time_limit;
	o.step_share = 1.0 / in->inter->micro;
	if (x->overlap)
		o.sync_share = INTER_SYNC_OVERLAP / in->inter->micro;
	*sg = ts->g;
	*src = NULL;
	int nn = ir_graph_nnodes(ts->g), nw = ir_graph_nvalues(ts->g);
	/* gradients accumulated over micro-batches, and the step's inputs
	 * (data, optimizer state), bound buffers: held the whole step */
	bool *held = ir_calloc((size_t)nw + 1, sizeof *held);
	if (!held)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int i = 0; in->inter->micro > 1 && i < ts->nparams; i++)
		held[ts->grads[i]->id] = true;
	for (int i = 0; i < ir_graph_ninputs(ts->g); i++)
		held[ir_graph_input(ts->g, i)->id] = true;
	/* new parameters and state are written back over the old ones */
	bool *passed = ir_calloc((size_t)nw + 1, sizeof *passed);
	if (!passed) {
		ir_free(held);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	for (int t = 0; t < ntie; t++)
		passed[ties[t][0]] = true;
	if (!ts->nstages) {
		o.update_first = ts->update_first;
		o.ties = ties;
		o.nties = ntie;
		o.held = held;
		o.passed = passed;
		rc = intra_pass(ts->g, in->cluster, &o, r);
		ir_free(held);
		ir_free(passed);
		return rc;
	}
	bool *keep = ir_calloc((size_t)nn + 1, sizeof *keep);
	int *inv = ir_malloc(sizeof *inv * (size_t)(nw + 1));
	int(*mine)[2] = ir_calloc((size_t)ntie + 1, sizeof *mine);
	bool *sheld = NULL, *spassed = NULL;
	if (!keep || !inv || !mine) {
		rc = ir_errorf(-ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < nn; i++)
		keep[i] = ir_graph_node(ts->g, i)->tag == s || ir_graph_node(ts->g, i)->tag == IR_TAG_ALL;
	if (!(*sg = graph_extract_set(ts->g, keep, src))) {
		rc = -ENOMEM;
		goto out;
	}
	int nv = ir_graph_nvalues(*sg);
	memset(inv, -1, sizeof *inv * (size_t)(nw + 1));
	for (int v = 0; v < nv; v++)
		if ((*src)[v] >= 0)
			inv[(*src)[v]] = v;
	o.update_first = ir_graph_nnodes(*sg);
	o.bwd_first = -1;
	for (int i = 0; i < ir_graph_nnodes(*sg); i++) {
		int w = (*src)[ir_graph_node(*sg, i)->out[0]->id];
		const struct ir_value *wv = w >= 0 ? ir_graph_value(ts->g, w) : NULL;
		if (wv && wv->kind == IR_VAL_NODE && wv->def->id >= ts->bwd_first && o.bwd_first < 0)
			o.bwd_first = i;
		if (wv && wv->kind == IR_VAL_NODE && wv->def->id >= ts->update_first) {
			o.update_first = i;
			break;
		}
	}
	if (o.bwd_first < 0)
		o.bwd_first = o.update_first;
	o.stash_slots = slots;
	sheld = ir_calloc((size_t)nv + 1, sizeof *sheld);
	spassed = ir_calloc((size_t)nv + 1, sizeof *spassed);
	if (!sheld || !spassed) {
		rc = ir_errorf(-ENOMEM, "out of memory");
		goto out;
	}
	for (int v = 0; v < nv; v++)
		sheld[v] = (*src)[v] >= 0 && held[(*src)[v]];
	o.held = sheld;
	/* what the stage makes for another stage is sent once made */
	for (int i = 0; i < ir_graph_noutputs(*sg); i++)
		spassed[ir_graph_output(*sg, i)->id] = true;
	for (int i = 0; i < ir_graph_noutputs(ts->g); i++) {
		int v = inv[ir_graph_output(ts->g, i)->id];
		if (v >= 0)
			spassed[v] = passed[ir_graph_output(ts->g, i)->id];
	}
	o.passed = spassed;
	for (int t = 0; t < ntie; t++)
		if (inv[ties[t][0]] >= 0 && inv[ties[t][1]] >= 0) {
			mine[k][0] = inv[ties[t][0]];
			mine[k++][1] = inv[ties[t][1]];
		}
	o.ties = (const int(*)[2])mine;
	o.nties = k;
	o.inputs_resident = s > 0; /* received from the stage before */
	if ((rc = intra_pass(*sg, in->cluster, &o, r)) < 0)
		ir_error_prefix("stage %d", s);
out:
	ir_free(keep);
	ir_free(inv);
	ir_free(mine);
	ir_free(held);
	ir_free(passed);
	ir_free(sheld);
	ir_free(spassed);
	return rc;
}

/* The forward nodes of stages that recompute their activations: each layer
 * (the whole stage when the plan names no layers) a segment the backward
 * pass computes again from its inputs (grad_build), as the search charged
 * it (inter.c: only each layer's input kept per micro-batch in flight). */
static void mark_recompute(const struct inter_plan *ip, struct ir_graph *g)
{
	int seg = 0;
	for (int s = 0; s < ip->nstages; s++) {
		const struct inter_stage *st = &ip->stages[s];
		if (!st->recompute)
			continue;
		if (!ip->layer_node) {
			seg++;
			for (int i = st->node_first; i < st->node_last; i++)
				ir_graph_node(g, i)->recompute = seg;
			continue;
		}
		for (int x = st->layer_first; x <= st->layer_last; x++) {
			seg++;
			for (int i = ip->layer_node[x]; i < ip->layer_node[x + 1]; i++)
				ir_graph_node(g, i)->recompute = seg;
		}
	}
}

static int stage_slots(const struct inter_plan *ip, int *const *order, int s)
{
	return order ? plan_schedule_slots(order[s], 2 * ip->micro) : 1;
}

/* The stages' sharding solves, independent of each other (par_run). */
struct stage_pool {
	const struct compile_input *in;
	const struct train_step *ts;
	const int (*ties)[2];
	int *const *order;
	struct stage_set *x;
	int n;
	int *rc;          /* [n] each solve's result */
	char (*err)[512]; /* [n] its message */
	int failed;       /* the first stage whose solve failed */
};

static int stage_job(void *arg, int s)
{
	struct stage_pool *p = arg;
	p->rc[s] = train_stage(p->in, p->ts, p->ties, s, stage_slots(p->in->inter, p->order, s), p->in->opts->mem_limit,
			       &p->x->g[s], &p->x->src[s], &p->x->r[s]);
	if (p->rc[s] < 0)
		snprintf(p->err[s], sizeof p->err[s], "%s", ir_error());
	progress_done(1);
	return 0; /* the others go on: the first failure in stage order is the error */
}

/* Every stage solved; the first failure (in stage order) is the error,
 * its stage in p->failed. The stages solved are marked so. */
static int stage_pool_run(struct stage_pool *p)
{
	int rc = 0;
	p->rc = ir_calloc((size_t)p->n + 1, sizeof *p->rc);
	p->err = ir_calloc((size_t)p->n + 1, sizeof *p->err);
	if (!p->rc || !p->err) {
		ir_free(p->rc);
		ir_free(p->err);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	par_run(p->n, stage_job, p);
	for (int s = 0; s < p->n; s++) {
		p->x->solved[s] = p->rc[s] == 0;
		if (p->rc[s] < 0 && rc == 0) {
			rc = ir_errorf(p->rc[s], "%s", p->err[s]);
			p->failed = s;
		}
	}
	ir_free(p->rc);
	ir_free(p->err);
	return rc;
}

/* Times lowering solves a stage again when its arena is over the limit
 * before it refuses the stage (each solve aims lower by its miss; a stage
 * whose arena a solve did not shrink is refused at once). */
#define REFIT_ROUNDS 4

/* A chosen plan on its way to the executable plan, between the passes
 * (pipeline.h). */
struct compile {
	const struct compile_input *in;
	struct ir_graph *g; /* the forward graph, until the train step takes it */
	struct stage_set x; /* each stage's graph and sharding */
	bool solved;        /* x holds every stage's solve */
	double mem;         /* bytes per device the stages' solves allowed */
	struct lowering *lw;
	struct plan *plan;
	/* training */
	bool built; /* ts holds the train step */
	struct train_opts to;
	struct train_step ts;
	int **order;          /* pipelined: each stage's schedule */
	double *start, *last; /* each state's first value; each stage's arena in the round before */
	int (*ties)[2];
	char cfg[512];
	struct lower_train tr;
	int round; /* lowerings of the train step so far */
};

int compile_new(const struct compile_input *in, struct ir_graph *g, struct compile **out)
{
	struct compile *c = ir_calloc(1, sizeof *c);
	*out = c;
	if (!c) {
		ir_graph_free(g);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	c->in = in;
	c->g = g;
	return 0;
}

const struct ir_graph *compile_graph(const struct compile *c)
{
	return c->built ? c->ts.g : c->g;
}

const struct lowering *compile_lowering(const struct compile *c)
{
	return c->lw;
}

const struct plan *compile_plan(const struct compile *c)
{
	return c->plan;
}

/* The train step of the forward graph (taken over): built at the
 * micro-batch size, gradients scaled by 1 / micro-batches, with its nodes
 * tagged by stage and each stage's schedule on it when pipelined, and the
 * recomputed layers marked. */
int compile_autodiff(struct compile *c)
{
	const struct compile_input *in = c->in;
	const struct inter_plan *ip = in->inter;
	int ns = ip->nstages, rc;
	struct ir_graph *g = c->g;
	if (ns > 1 && (rc = stage_orders(ip, &c->order)) < 0)
		return rc;
	for (int s = 0; ns > 1 && s < ns; s++) {
		for (int i = ip->stages[s].node_first; i < ip->stages[s].node_last; i++)
			ir_graph_node(g, i)->tag = s;
		if ((rc = ir_graph_add_schedule(g, s, 2 * ip->micro, c->order[s])) < 0)
			return rc;
	}
	mark_recompute(ip, g);
	if (in->train)
		c->to = *in->train;
	else
		train_opts_init(&c->to);
	c->to.grad_scale = 1.0 / ip->micro;
	c->g = NULL;
	c->built = true; /* ts is freed whatever train_build leaves in it */
	if ((rc = train_build(g, &c->to, &c->ts)) < 0)
		return rc;
	if (ns > 1 && c->ts.nstages != ns)
		return ir_errorf(-EINVAL, "the train step spans %d stages, the plan has %d", c->ts.nstages, ns);
	return 0;
}

/* Each stage's part of the train step sharded on its logical mesh. */
static int solve_training(struct compile *c)
{
	const struct compile_input *in = c->in;
	const struct inter_plan *ip = in->inter;
	struct train_step *ts = &c->ts;
	int ns = ip->nstages, rc;
	if ((rc = stages_new(&c->x, ns, ts->g)) < 0)
		return rc;
	c->start = ir_calloc((size_t)ts->nstate + 1, sizeof *c->start);
	c->ties = ir_calloc((size_t)(ts->nparams + ts->nstate) + 1, sizeof *c->ties);
	c->last = ir_calloc((size_t)ns, sizeof *c->last);
	if (!c->start || !c->ties || !c->last)
		return ir_errorf(-ENOMEM, "out of memory");
	train_state_start(ts, &c->to, c->start);
	train_step_ties(ts, c->ties);
	progress_phase(ns, "lowering: the sharding of each stage's part of the train step");
	struct stage_pool pool = { in, ts, (const int(*)[2])c->ties, c->order, &c->x, .n = ns };
	if ((rc = stage_pool_run(&pool)) < 0) {
		if (rc == -ENOSPC && in->refused)
			*in->refused = pool.failed;
		if (ns == 1)
			ir_error_prefix("the train step");
		return rc;
	}
	for (int s = 0; s < ns; s++)
		stages_solved(&c->x, in, s, &c->mem);
	train_opts_str(&c->to, c->cfg, sizeof c->cfg);
	c->tr = (struct lower_train){ ts, ip->micro, c->start, c->cfg };
	return stages_fit(&c->x, in);
}

int compile_lower_stages(struct compile *c)
{
	const struct compile_input *in = c->in;
	int rc = 0;
	if (!c->solved) {
		rc = c->built ? solve_training(c) : solve_stages(in, c->g, &c->x, &c->mem);
		if (rc < 0)
			return rc;
		c->solved = true;
	}
	lower_free(c->lw);
	c->lw = NULL;
	progress_phase(0, "lowering: instructions");
	return lower_begin(c->built ? &c->tr : NULL, compile_graph(c), c->x.st, in->inter->nstages, in->cluster_spec,
			   &c->lw);
}

int compile_fuse(struct compile *c)
{
	return lower_fuse(c->lw);
}

int compile_memory(struct compile *c)
{
	const struct compile_input *in = c->in;
	const struct inter_plan *ip = in->inter;
	int rc = lower_memory(c->lw, &c->plan);
	lower_free(c->lw); /* the templates are done with */
	c->lw = NULL;
	if (rc < 0)
		return rc;
	struct plan *p = c->plan;
	p->cluster_nodes = in->cluster->nodes;
	p->cluster_devices = in->cluster->ndevices;
	p->micro = ip->micro;
	char opts[1024];
	int at = snprintf(opts, sizeof opts, "cluster=%s;batch=%lld;micro=%d;train=%d;mem=%.17g;step=%s",
			  in->cluster_spec, (long long)ip->batch, ip->micro, ip->train, in->opts->mem_limit,
			  p->train_config ? p->train_config : "");
	if ((in->opts->stages || in->opts->mesh0) && at > 0 && at < (int)sizeof opts) /* forced shapes */
		at += snprintf(opts + at, sizeof opts - (size_t)at, ";stages=%d;mesh=%dx%d", in->opts->stages,
			       in->opts->mesh0, in->opts->mesh1);
	if (in->opts->recompute >= 0 && at > 0 && at < (int)sizeof opts) /* forced recomputation */
		snprintf(opts + at, sizeof opts - (size_t)at, ";recompute=%d", in->opts->recompute);
	p->options_hash = XXH3_64bits(opts, strlen(opts));
	/* inputs bound as constants shape the plan too: their names and bytes */
	for (int i = 0; in->imp && i < in->imp->nconsts; i++) {
		const struct onnx_const_input *k = &in->imp->consts[i];
		uint64_t h[2] = { XXH3_64bits(k->name, strlen(k->name)),
				  XXH3_64bits(k->value.data, ir_tensor_bytes(&k->value)) };
		p->options_hash = XXH3_64bits_withSeed(h, sizeof h, p->options_hash);
	}
	return 0;
}

int compile_refit(struct compile *c)
{
	const struct compile_input *in = c->in;
	const struct inter_plan *ip = in->inter;
	struct stage_set *x = &c->x;
	int ns = ip->nstages, rc = 0, refit = 0;
	if (!c->built || c->round++ == REFIT_ROUNDS)
		return 0;
	/* the arena is the truth: a stage it finds over the limit is solved
	 * again under its solve's peak scaled by the miss, while that shrinks
	 * its arena */
	for (int s = 0; s < ns && rc == 0; s++) {
		double arena = stage_arena(c->plan, s), lim = fmin(x->r[s].mem_limit, x->r[s].mem_peak);
		bool stuck = c->last[s] > 0 && arena > 0.995 * c->last[s];
		c->last[s] = arena;
		if (arena <= c->mem || stuck)
			continue;
		double tighter = lim * c->mem / arena * 0.98;
		char a[IR_BYTES_STRLEN], l[IR_BYTES_STRLEN];
		char sp[IR_BYTES_STRLEN];
		progress_phase(1, "lowering: stage %d again, its arena %s over the %s allowed (its solve counted %s)",
			       s, ir_bytes_str(arena, a), ir_bytes_str(c->mem, l), ir_bytes_str(x->r[s].mem_peak, sp));
		stage_resolve(x, s);
		rc = train_stage(in, &c->ts, (const int(*)[2])c->ties, s, stage_slots(ip, c->order, s), tighter,
				 &x->g[s], &x->src[s], &x->r[s]);
		if (rc < 0) {
			if (rc == -ENOSPC && in->refused)
				*in->refused = s;
			break;
		}
		stage_resolved(x, s);
		refit++;
	}
	if (rc < 0 || refit) {
		plan_free(c->plan);
		c->plan = NULL;
	}
	return rc < 0 ? rc : refit > 0;
}

void compile_free(struct compile *c)
{
	if (!c)
		return;
	int ns = c->in->inter->nstages;
	lower_free(c->lw);
	plan_free(c->plan);
	stages_free(&c->x);
	for (int s = 0; c->order && s < ns; s++)
		ir_free(c->order[s]);
	ir_free(c->order);
	ir_free(c->start);
	ir_free(c->ties);
	ir_free(c->last);
	if (c->built)
		train_step_free(&c->ts);
	ir_graph_free(c->g);
	ir_free(c);
}

/* With inputs bound as constants (in->imp), which input_N.pb feeds each
 * plan input: an input of the model its place among the model's inputs,
 * one the step adds (labels) the places after them, as if the bound ones
 * were still read. So a data set in the backend-test layout feeds the plan
 * as it is, its bound inputs' files left unread. */
static int input_files(const struct compile_input *in, struct plan *p)
{
	char **names;
	int n, extra = 0;
	if (!in->imp || in->imp->nconsts == 0 || p->ninputs == 0)
		return 0;
	int rc = in->read && in->read->onnx ? onnx_model_input_names(in->read->onnx, &names, &n)
					    : onnx_input_names(in->model, &names, &n);
	if (rc < 0)
		return rc;
	if (!(p->input_file = ir_malloc(sizeof *p->input_file * (size_t)p->ninputs))) {
		ir_free(names);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < p->ninputs; i++) {
		int k = 0;
		while (k < n && strcmp(names[k], p->inputs[i].name))
			k++;
		p->input_file[i] = k < n ? k : n + extra++;
	}
	ir_free(names);
	return 0;
}

/* -ENOSPC naming what device i holds at its peak. */
static int over_limit(const struct plan *p, int i)
{
	const struct plan_device *d = &p->devices[i];
	struct plan_mem m;
	char need[IR_BYTES_STRLEN], have[IR_BYTES_STRLEN], k[PLAN_MEM_KIND_COUNT][IR_BYTES_STRLEN];
	if (plan_device_memory(d, &m) < 0)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int j = 0; j < PLAN_MEM_KIND_COUNT; j++)
		ir_bytes_str((double)m.bytes[j], k[j]);
	return ir_errorf(-ENOSPC,
			 "the lowered plan needs %s on device %d, more than the %s allowed (at its peak: "
			 "parameters %s, gradient accumulators %s, optimizer state %s, inputs and outputs %s, "
			 "activations kept for the backward part %s, temporaries %s)",
			 ir_bytes_str((double)d->arena_bytes, need), i, ir_bytes_str((double)p->device_memory, have),
			 k[PLAN_MEM_PARAM], k[PLAN_MEM_ACCUM], k[PLAN_MEM_STATE], k[PLAN_MEM_IO], k[PLAN_MEM_STASH],
			 k[PLAN_MEM_TEMP]);
}

/* What stage solve r states a device of its stage holds at its peak, in
 * the search's terms: state (held the whole step), micro-batches in
 * flight x the stash of one, and the working set at the peak. */
static void stage_stated(const struct intra_result *r, struct inter_stage *y)
{
	y->mem = r->mem_stated;
	y->mem_state = r->mem_held;
	y->inflight = r->stash_slots;
	y->mem_act = r->mem_stash;
	y->mem_once = fmax(r->mem_stated - r->mem_held - r->stash_slots * r->mem_stash, 0);
}

int compile_finish(struct compile *c, struct plan **out)
{
	const struct compile_input *in = c->in;
	struct plan *p = c->plan;
	int rc = 0;
	*out = NULL;
	p->device_memory = (int64_t)c->mem; /* only now: a refit round may be over it */
	for (int i = 0; i < p->ndevices && rc == 0; i++)
		if (p->devices[i].arena_bytes > p->device_memory) {
			rc = over_limit(p, i);
			if (in->refused)
				*in->refused = p->devices[i].stage;
		}
	if (rc == 0 && !(p->model = realpath(in->model, NULL)))
		rc = ir_errorf(-errno, "%s: %s", in->model, strerror(errno));
	if (rc == 0 && in->read)
		p->model_hash = in->read->hash;
	else if (rc == 0)
		rc = plan_hash_file(in->model, &p->model_hash);
	if (rc < 0 || (rc = input_files(in, p)) < 0)
		return rc;
	for (int s = 0; in->stated && s < c->x.n; s++)
		stage_stated(&c->x.r[s], &in->stated[s]);
	*out = p;
	c->plan = NULL;
	return 0;
}
