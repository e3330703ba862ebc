/*
 * report_auto.c: `pcc report MODEL --cluster C` without --plan: the
 * automatic planner's plan (inter_pass, the search `pcc MODEL --cluster C`
 * runs, with the same options) and where its step time and memory go.
 *
 * The planner keeps per stage only totals (time per micro-batch, state
 * bytes). To split them, every layer of every chosen stage is solved
 * again by the intra-op pass on the stage's logical mesh with exactly the
 * options the planner used (inter_cost.c): the pass is deterministic, so
 * the layer's objective comes back the same, now with its compute, its
 * collectives per mesh axis (per micro-batch, or once per step: the
 * gradient reduction) and its state per kind. Identical layers are solved
 * once. A stage's re-solved time is checked against the plan's
 * (whatif.residual, 0 up to rounding); any difference is spread over the
 * parts so they still add up to the plan's step time.
 *
 * The step is then split as the planner timed it: the pipeline on the
 * schedule simulator (report_timeline.c), run once without the stage
 * transfers to tell the transfers' share from the bubble's; the slowest
 * stage's micro-batches (compute, recomputation, collectives per axis);
 * the once-per-step gradient reduction left exposed and the optimizer
 * update of the stage that takes longest at the end.
 *
 * A manual plan (`--plan dp=..,tp=..,pp=..`, wi_held) is the same pass
 * held to it: its stages, every stage's mesh dp x tp laid out as Megatron
 * does (inter_opts.manual_tp), its micro-batches (each size the plan
 * leaves open tried, the fastest that fits kept), schedule, recomputation
 * and ZeRO stage, on the plan's own devices; its report is filled by the
 * same breakdown, so a manual plan and the automatic planner held to the
 * same choices report the same figures.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/pipeline/pipeline.h"
#include "compiler/report/report_internal.h"

/* What one layer on one mesh costs, split by kind. */
struct layer_split {
	double t_mb; /* s per micro-batch: the objective less once-per-step costs */
	double compute;
	double comm[2];       /* per micro-batch, per mesh axis */
	double sync[2];       /* per step: gradient reductions, per mesh axis */
	double state[3];      /* bytes per device without ZeRO: params, grads, optimizer */
	double zero_saved[3]; /* bytes ZeRO takes off params, grads, optimizer state */
	double fwd_flops;     /* the layer's forward, whole (not per device) */
};

struct solved {
	char *sig;
	int n0, n1;
	bool lean, overlap;
	struct layer_split x;
	struct intra_note *notes; /* the layer's costliest ops (at most 4 x WI_MAX_OPS) */
	int nnotes, nops;         /* kept, and ops in the layer */
};

struct actx {
	const struct wi_request *q;
	const struct cost_cluster *c;
	const struct inter_opts *o;
	struct cost_state_bytes sb;
	int micro;
	double model, mem_limit; /* inter_lean_price's: the model's trained elements, the plan's limit */
	struct solved *memo;
	int nmemo;
};

/* Parameter bytes per device under the pass's sharding, by kind (the
 * planner's accounting: state bytes per element for trained floats, the
 * element size for the rest). */
static void state_split(const struct actx *a, const struct ir_graph *s, double *st)
{
	int n0, n1;
	ir_graph_mesh(s, &n0, &n1);
	for (int i = 0; i < ir_graph_nparams(s); i++) {
		const struct ir_value *p = ir_graph_param(s, i);
		double n = (double)ir_shape_numel(&p->shape);
		for (int d = 0; d < p->shape.rank && p->sharded; d++)
			n /= ir_sharding_pieces(p->sharding.dim[d], n0, n1);
		if (!ir_dtype_is_float(p->dtype) || p->buffer || !a->o->train) {
			st[0] += n * (double)ir_dtype_size(p->dtype);
			continue;
		}
		st[0] += n * a->sb.params;
		st[1] += n * a->sb.grads;
		st[2] += n * a->sb.optim;
	}
}

/* A layer solved as the planner solved it (its lean variant for a lean
 * stage, its gradient reduction overlapped for an overlap one), with its
 * costliest ops (m->notes). */
static int solve(const struct actx *a, const struct ir_graph *g, int first, int last, int n0, int n1, bool lean,
		 bool overlap, struct solved *m)
{
	struct layer_split *x = &m->x;
	struct ir_graph *s = graph_extract(g, first, last, false, NULL);
	if (!s)
		return ir_error_code() ? ir_error_code() : -ENOMEM;
	struct intra_opts o;
	inter_layer_opts(a->o, n0, n1, a->micro, overlap, &o);
	struct intra_result r;
	int rc = intra_pass(s, a->c, &o, &r);
	double price = rc == 0 && lean ? inter_lean_price(&r, inter_trained_numel(s), a->model, a->mem_limit) : 0;
	if (price > 0)
		rc = intra_reprice(s, price, &r);
	if (rc < 0) {
		ir_graph_free(s);
		return rc;
	}
	memset(x, 0, sizeof *x);
	for (int i = 0; i < r.nevents; i++) {
		const struct intra_event *e = &r.events[i];
		int ax = e->axis == 0 ? 0 : 1;
		if (e->once)
			x->sync[ax] += e->t;
		else
			x->comm[ax] += e->t;
	}
	x->compute = r.t_compute;
	x->t_mb = inter_layer_t_mb(&r, &o, x->sync[0] + x->sync[1]);
	memcpy(x->zero_saved, r.mem_zero_kind, sizeof x->zero_saved);
	state_split(a, s, x->state);
	for (int i = 0; i < ir_graph_nnodes(s); i++)
		x->fwd_flops += ir_node_flops(ir_graph_node(s, i));
	rc = intra_notes(&r, &m->notes, &m->nops);
	m->nnotes = m->nops < 4 * WI_MAX_OPS ? m->nops : 4 * WI_MAX_OPS;
	intra_result_free(&r);
	ir_graph_free(s);
	return rc;
}

/* solve() once per distinct (layer text, mesh): the memo entry's index. */
static int solve_memo(struct actx *a, const struct ir_graph *g, int first, int last, int n0, int n1, bool lean,
		      bool overlap)
{
	char *sig = graph_signature(g, first, last);
	if (!sig)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int i = 0; i < a->nmemo; i++)
		if (a->memo[i].n0 == n0 && a->memo[i].n1 == n1 && a->memo[i].lean == lean &&
		    a->memo[i].overlap == overlap && !strcmp(a->memo[i].sig, sig)) {
			free(sig);
			return i;
		}
	struct solved *m = ir_realloc(a->memo, sizeof *m * (size_t)(a->nmemo + 1));
	if (!m) {
		free(sig);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	a->memo = m;
	m += a->nmemo;
	*m = (struct solved){ .sig = sig, .n0 = n0, .n1 = n1, .lean = lean, .overlap = overlap };
	int rc = solve(a, g, first, last, n0, n1, lean, overlap, m);
	if (rc < 0) {
		free(sig);
		ir_free(m->notes);
		return rc;
	}
	return a->nmemo++;
}

/* The layers the planner cut g into (inter.c: its count, or at least a
 * forced stage count). */
static int layers_of(const struct inter_opts *o, const struct cost_cluster *c, const struct ir_graph *g,
		     struct cluster_result *cl)
{
	int forced = o->stages;
	if (!forced && o->mesh0 > 0 && o->mesh1 > 0)
		forced = c->ndevices / (o->mesh0 * o->mesh1);
	struct cluster_opts co;
	inter_cluster_opts(o, &co);
	int rc = cluster_layers(g, &co, cl);
	if (rc < 0 || cl->nlayers >= forced)
		return rc;
	cluster_result_free(cl);
	co.layers = forced;
	return cluster_layers(g, &co, cl);
}

/* One stage's layers summed; scale makes their time the plan's. */
struct stage_split {
	struct layer_split x;
	double scale;
};

static void add_split(struct layer_split *a, const struct layer_split *b)
{
	a->t_mb += b->t_mb;
	a->compute += b->compute;
	for (int k = 0; k < 2; k++) {
		a->comm[k] += b->comm[k];
		a->sync[k] += b->sync[k];
	}
	for (int k = 0; k < 3; k++)
		a->state[k] += b->state[k];
	for (int k = 0; k < 3; k++)
		a->zero_saved[k] += b->zero_saved[k];
	a->fwd_flops += b->fwd_flops;
}

/* Ops equal in kind, sharding and cost (the same op of repeated blocks)
 * sort together. */
static int by_kind(const void *a, const void *b)
{
	const struct intra_note *x = &((const struct wi_op *)a)->n, *y = &((const struct wi_op *)b)->n;
	int c = strcmp(x->op, y->op);
	c = c ? c : strcmp(x->chosen, y->chosen);
	c = c ? c : strcmp(x->runner, y->runner);
	c = c ? c : (x->t > y->t) - (x->t < y->t);
	return c ? c : x->node - y->node;
}

static bool same_kind(const struct intra_note *x, const struct intra_note *y)
{
	return !strcmp(x->op, y->op) && !strcmp(x->chosen, y->chosen) && !strcmp(x->runner, y->runner) &&
	       x->t == y->t && (x->delta == y->delta || (isnan(x->delta) && isnan(y->delta)));
}

static int by_weight(const void *a, const void *b)
{
	const struct wi_op *x = a, *y = b;
	double wx = x->n.t * x->count, wy = y->n.t * y->count;
	return wx > wy ? -1 : wx < wy ? 1 : 0;
}

/* The stage's costliest ops: each distinct layer's (cnt[i] of memo entry
 * i run in the stage), equal ones counted once with the times they run,
 * weighed by that count. */
static int stage_ops(const struct actx *a, const int *cnt, struct wi_stage *o)
{
	int n = 0, k = 0;
	for (int i = 0; i < a->nmemo; i++)
		if (cnt[i]) {
			n += a->memo[i].nnotes;
			o->ops_total += a->memo[i].nops;
		}
	struct wi_op *all = ir_calloc((size_t)n + 1, sizeof *all);
	if (!all)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int i = 0; i < a->nmemo; i++)
		for (int j = 0; cnt[i] && j < a->memo[i].nnotes; j++)
			all[k++] = (struct wi_op){ a->memo[i].notes[j], cnt[i] };
	qsort(all, (size_t)k, sizeof *all, by_kind);
	int u = 0;
	for (int i = 0; i < k; i++) {
		if (u > 0 && same_kind(&all[u - 1].n, &all[i].n))
			all[u - 1].count += all[i].count;
		else
			all[u++] = all[i];
	}
	k = u;
	qsort(all, (size_t)k, sizeof *all, by_weight);
	o->nops = k < WI_MAX_OPS ? k : WI_MAX_OPS;
	memcpy(o->ops, all, sizeof *all * (size_t)o->nops);
	ir_free(all);
	return 0;
}

static int split_stage(struct actx *a, const struct ir_graph *g, const struct cluster_result *cl,
		       const struct inter_stage *st, struct stage_split *out, struct wi_stage *ws)
{
	memset(out, 0, sizeof *out);
	IR_ASSERT(cl->first[st->layer_first] == st->node_first && cl->first[st->layer_last + 1] == st->node_last);
	int *cnt = ir_calloc((size_t)(a->nmemo + st->layer_last - st->layer_first + 1), sizeof *cnt);
	if (!cnt)
		return ir_errorf(-ENOMEM, "out of memory");
	int rc = 0;
	for (int l = st->layer_first; l <= st->layer_last && rc >= 0; l++) {
		rc = solve_memo(a, g, cl->first[l], cl->first[l + 1], st->n0, st->n1, st->lean, st->overlap);
		if (rc >= 0) {
			cnt[rc]++;
			add_split(&out->x, &a->memo[rc].x);
		}
	}
	if (rc >= 0)
		rc = stage_ops(a, cnt, ws);
	ir_free(cnt);
	double t = out->x.t_mb * (st->recompute ? 4.0 / 3.0 : 1);
	out->scale = t > 0 ? st->t_mb / t : 1;
	return rc < 0 ? rc : 0;
}

static void fill_stage(const struct inter_plan *p, const struct inter_stage *st, const struct stage_split *sp,
		       struct wi_stage *o)
{
	const struct layer_split *x = &sp->x;
	snprintf(o->mesh, sizeof o->mesh, "%dx%d on %dx%d", st->n0, st->n1, st->rows, st->cols);
	o->devices = st->rows * st->cols;
	o->first = st->layer_first;
	o->last = st->layer_last;
	o->recompute = st->recompute;
	o->zero = st->zero && p->train;
	o->t_fwd = st->t_mb / 3; /* as the planner simulates a stage: backward twice forward */
	o->t_bwd = 2 * o->t_fwd;
	o->comm_frac = x->t_mb > 0 ? fmin((x->comm[0] + x->comm[1]) / x->t_mb, 1) : 0;
	o->t_xfer = st->t_xfer;
	o->t_sync = fmax(st->t_sync - st->t_mb * 2 / 3, 0);
	o->t_optim = st->t_optim;
	o->inflight = st->inflight;
	o->mem[WI_MEM_PARAMS] = x->state[0] - (o->zero ? x->zero_saved[0] : 0);
	o->mem[WI_MEM_GRADS] = x->state[1] - (o->zero ? x->zero_saved[1] : 0);
	o->mem[WI_MEM_OPTIM] = x->state[2] - (o->zero ? x->zero_saved[2] : 0);
	o->mem[WI_MEM_ACT] = st->inflight * st->mem_act;
	o->mem[WI_MEM_WORK] = st->mem_once;
}

static void axis_label(char *b, size_t n, const char *what, int axis, const struct inter_stage *st)
{
	int size = axis == 0 ? st->n0 : st->n1;
	snprintf(b, n, "%s, mesh axis %d (%d device%s)", what, axis, size, size == 1 ? "" : "s");
}

/* The step-time parts (see the top of the file); sum: the plan's step. */
static int add_parts(struct whatif *w, const struct inter_plan *p, const struct stage_split *sp)
{
	int slow = 0, last = 0;
	for (int s = 0; s < p->nstages; s++) {
		if (p->stages[s].t_mb > p->stages[slow].t_mb)
			slow = s;
		if (w->stages[s].t_sync + w->stages[s].t_optim > w->stages[last].t_sync + w->stages[last].t_optim)
			last = s;
	}
	double T, T0, m = p->micro, k = sp[slow].scale;
	int rc = wi_pipeline_time(w, true, &T);
	if (rc < 0 || (rc = wi_pipeline_time(w, false, &T0)) < 0)
		return rc;
	const struct inter_stage *st = &p->stages[slow];
	const struct layer_split *x = &sp[slow].x;
	double busy = m * st->t_mb, rec = st->recompute ? m * k * x->t_mb / 3 : 0;
	double comm = m * k * (x->comm[0] + x->comm[1]);
	char l0[64], l1[64];
	axis_label(l0, sizeof l0, "collectives", 0, st);
	axis_label(l1, sizeof l1, "collectives", 1, st);
	wi_add_part(w, "compute", "compute", busy - rec - comm);
	wi_add_part(w, "recompute", "recomputation", rec);
	wi_add_part(w, "comm_axis0", l0, m * k * x->comm[0]);
	wi_add_part(w, "comm_axis1", l1, m * k * x->comm[1]);
	wi_add_part(w, "transfers", "pipeline transfers", T - T0);
	wi_add_part(w, "bubble", "pipeline bubble", T0 - busy);
	const struct layer_split *y = &sp[last].x;
	double sync = y->sync[0] + y->sync[1], exposed = w->stages[last].t_sync;
	axis_label(l0, sizeof l0, "gradient sync", 0, &p->stages[last]);
	axis_label(l1, sizeof l1, "gradient sync", 1, &p->stages[last]);
	wi_add_part(w, "sync_axis0", l0, sync > 0 ? exposed * y->sync[0] / sync : 0);
	wi_add_part(w, "sync_axis1", l1, sync > 0 ? exposed * y->sync[1] / sync : exposed);
	wi_add_part(w, "optimizer", "optimizer step", w->stages[last].t_optim);
	w->t_step = T + exposed + w->stages[last].t_optim;
	double off = fabs(w->t_step - p->step_time) / p->step_time;
	w->residual = fmax(w->residual, off);
	return 0;
}

static void fill_plan(struct whatif *w, const struct wi_request *q, const struct cost_cluster *c,
		      const struct inter_opts *o, const struct inter_plan *p, const struct ir_graph *g,
		      enum cost_prec prec)
{
	struct cost_device dev;
	cost_cluster_effective(c, &dev, NULL, NULL, NULL);
	snprintf(w->label, sizeof w->label, "%s", q->label[0] ? q->label : "auto");
	snprintf(w->model, sizeof w->model, "%s", q->model);
	snprintf(w->cluster, sizeof w->cluster, "%s", c->name);
	snprintf(w->device, sizeof w->device, "%s", dev.desc[0] ? dev.desc : dev.name);
	w->train = p->train;
	w->devices = p->devices;
	w->prec = prec;
	w->optim = o->optim;
	w->sched = p->sched;
	w->v = p->v > 0 ? p->v : 1;
	w->micro = p->micro;
	w->batch = p->batch;
	w->micro_batch = p->micro_batch;
	w->nstages = p->nstages;
	w->peak_flops = cost_device_peak(&dev, prec);
	w->mem_capacity = dev.mem_bytes;
	w->mem_limit = p->mem_limit;
	w->search_s = p->search_s;
	w->nskipped = p->nskipped;
	w->fidelity = report_fidelity(&dev, q->cal);
	memcpy(w->alt, p->alt, sizeof w->alt);
	w->nalt = p->nalt;
	w->nweighed = p->nweighed;
	w->tokens_per_sample = report_tokens_per_sample(g);
	for (int i = 0; i < ir_graph_nparams(g); i++)
		if (ir_dtype_is_float(ir_graph_param(g, i)->dtype))
			w->params += (double)ir_shape_numel(&ir_graph_param(g, i)->shape);
}

/* Model FLOPs per step: the whole forward (x3 training) of every
 * micro-batch, as the planner's MFU counts them; hardware FLOPs add a
 * forward of the stages that recompute (their layers as solved). */
static void flops(struct whatif *w, const struct inter_plan *p, const struct stage_split *sp, const struct ir_graph *g)
{
	double fwd = 0, again = 0;
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		fwd += ir_node_flops(ir_graph_node(g, i));
	for (int s = 0; s < p->nstages; s++)
		again += p->stages[s].recompute ? sp[s].x.fwd_flops : 0;
	w->model_flops = fwd * (p->train ? 3 : 1) * p->micro;
	w->hw_flops = w->model_flops + again * p->micro;
}

static int breakdown(const struct wi_request *q, const struct cost_cluster *c, const struct inter_opts *o,
		     const struct inter_plan *p, struct whatif *w)
{
	struct ir_graph *g = o->load(o->ctx, p->micro_batch);
	if (!g)
		return ir_error_code() ? ir_error_code() : -EINVAL;
	struct cluster_result cl = { 0 };
	struct actx a = {
		.q = q, .c = c, .o = o, .micro = p->micro, .model = inter_trained_numel(g), .mem_limit = p->mem_limit
	};
	struct stage_split *sp = ir_calloc((size_t)p->nstages, sizeof *sp);
	w->stages = ir_calloc((size_t)p->nstages, sizeof *w->stages);
	/* the planner's precision: o->prec, or the devices' default (inter.c) */
	struct cost_device dev;
	cost_cluster_effective(c, &dev, NULL, NULL, NULL);
	enum cost_prec prec = o->prec >= 0 ? (enum cost_prec)o->prec : cost_default_prec(&dev);
	cost_state_bytes_per_param(o->optim, prec == COST_PREC_BF16 || prec == COST_PREC_F16 || prec == COST_PREC_FP8,
				   &a.sb);
	int rc = !sp || !w->stages ? ir_errorf(-ENOMEM, "out of memory") : layers_of(o, c, g, &cl);
	if (rc == 0)
		IR_ASSERT(cl.nlayers == p->nlayers);
	for (int s = 0; s < p->nstages && rc == 0; s++) {
		rc = split_stage(&a, g, &cl, &p->stages[s], &sp[s], &w->stages[s]);
		if (rc == 0) {
			fill_stage(p, &p->stages[s], &sp[s], &w->stages[s]);
			w->residual = fmax(w->residual, fabs(sp[s].scale - 1));
		}
	}
	if (rc == 0) {
		fill_plan(w, q, c, o, p, g, prec);
		flops(w, p, sp, g);
		rc = add_parts(w, p, sp);
	}
	for (int i = 0; i < a.nmemo; i++) {
		free(a.memo[i].sig);
		ir_free(a.memo[i].notes);
	}
	ir_free(a.memo);
	ir_free(sp);
	cluster_result_free(&cl);
	ir_graph_free(g);
	return rc;
}

/* The planner's precision, as `pcc MODEL --cluster C` sets it (main.c):
 * training in --precision or else the devices' 16-bit type (f32 where
 * they have none); the planner's own default otherwise. */
static int plan_prec(const struct wi_request *q, const struct cost_cluster *c)
{
	if (!q->inter.train)
		return -1;
	if (q->prec >= 0)
		return q->prec;
	struct cost_device dev;
	cost_cluster_effective(c, &dev, NULL, NULL, NULL);
	enum cost_prec p = cost_default_prec(&dev);
	return p == COST_PREC_BF16 || p == COST_PREC_F16 ? (int)p : (int)COST_PREC_F32;
}

/* The model behind q, opened once: each micro-batch size the pass weighs
 * is imported from it (the compile's loader, over ONNX alone); o's
 * loader, batch and calibration set. */
static int open_model(const struct wi_request *q, struct onnx_import_opts *none, struct pipeline_model *l,
		      struct inter_opts *o)
{
	const struct onnx_import_opts *imp = q->imp;
	if (!imp) {
		onnx_import_opts_init(none);
		imp = none;
	}
	*l = (struct pipeline_model){ .path = q->model, .imp = imp };
	o->batch = q->batch;
	o->cal = q->cal;
	o->load = pipeline_load;
	o->ctx = l;
	if (!(l->onnx = onnx_model_read(q->model)))
		return ir_error_code();
	int rc = onnx_model_batch_dim(l->onnx, imp, l->bname, sizeof l->bname, &o->static_batch);
	if (rc < 0)
		pipeline_model_close(l);
	return rc;
}

static void name_model(const struct wi_request *q)
{
	if (strncmp(ir_error(), q->model, strlen(q->model)))
		ir_error_prefix("%s", q->model);
}

int wi_auto(const struct wi_request *q, const struct cost_cluster *c, struct whatif *w)
{
	struct onnx_import_opts none;
	struct pipeline_model l;
	struct inter_opts o = q->inter;
	memset(w, 0, sizeof *w);
	int rc = open_model(q, &none, &l, &o);
	if (rc < 0)
		return rc;
	o.prec = plan_prec(q, c);
	struct inter_plan p;
	if ((rc = inter_pass(c, &o, &p)) < 0) {
		name_model(q);
		pipeline_model_close(&l);
		return rc;
	}
	rc = breakdown(q, c, &o, &p, w);
	pipeline_model_close(&l);
	if (rc == 0)
		wi_finish(w, q->price);
	else
		wi_free(w);
	inter_plan_free(&p);
	return rc;
}

/* ---- a manual plan: the same pass held to its choices ------------------- */

/* The pass's options held to manual plan p on cluster c (the plan's own
 * devices): p's stages, every stage's mesh dp x tp with its layers solved
 * as Megatron lays them out (inter_opts.manual_tp), its schedule,
 * recomputation and ZeRO stage, no memory limit (a plan that does not fit
 * is reported as such, not refused). */
static void held_opts(const struct report_plan *p, const struct cost_cluster *c, struct inter_opts *o)
{
	struct cost_device dev;
	cost_cluster_effective(c, &dev, NULL, NULL, NULL);
	o->train = true;
	o->optim = p->optim;
	o->prec = p->prec >= 0 ? p->prec : (int)cost_default_prec(&dev);
	o->stages = p->pp;
	o->mesh0 = p->dp;
	o->mesh1 = p->tp;
	o->sched = p->sched;
	o->v = p->sched == COST_SCHED_INTERLEAVED ? p->v : 0;
	o->recompute = p->recompute;
	o->zero = p->zero;
	o->manual_tp = true;
	o->mem_limit = 1e30;
}

/* Of two plans of one request: the one that fits device memory cap; of
 * two that fit the faster, of two that do not the one needing less. */
static bool better(const struct inter_plan *a, const struct inter_plan *b, double cap)
{
	bool fa = a->mem_peak <= cap, fb = b->mem_peak <= cap;
	if (fa != fb)
		return fa;
	return fa ? a->step_time < b->step_time : a->mem_peak < b->mem_peak;
}

/* The held pass once per micro-batch size the plan leaves open
 * (report_resolve_batch), the best kept in *best and its count in o. */
static int held_plan(const struct wi_request *q, const struct cost_cluster *c, struct inter_opts *o,
		     struct inter_plan *best)
{
	struct report_batch bp;
	struct cost_device dev;
	cost_cluster_effective(c, &dev, NULL, NULL, NULL);
	int rc = report_resolve_batch(&q->plan, o->static_batch, q->batch, &bp), micro = 0;
	for (int i = 0; i < bp.n && rc == 0; i++) {
		struct inter_plan p;
		o->batch = bp.batch;
		o->micro = bp.mb[i];
		if ((rc = inter_pass(c, o, &p)) < 0)
			break;
		if (i == 0 || better(&p, best, dev.mem_bytes)) {
			if (i > 0)
				inter_plan_free(best);
			*best = p;
			micro = o->micro;
		} else {
			inter_plan_free(&p);
		}
	}
	if (rc < 0 && micro > 0)
		inter_plan_free(best);
	o->micro = micro;
	return rc;
}

/* What the report of a held plan says as a manual plan's: its meshes as dp
 * x tp, micro-batches per replica, fits when within device memory. */
static void as_manual(const struct report_plan *m, struct whatif *w)
{
	w->manual = true;
	w->plan = *m;
	w->micro_batch /= m->dp;
	w->mem_limit = w->mem_capacity;
	for (int s = 0; s < w->nstages; s++)
		snprintf(w->stages[s].mesh, sizeof w->stages[s].mesh, "dp %d x tp %d", m->dp, m->tp);
	char l0[40], l1[40];
	snprintf(l0, sizeof l0, "data-parallel (dp=%d)", m->dp);
	snprintf(l1, sizeof l1, "tensor-parallel (tp=%d)", m->tp);
	for (int i = 0; i < w->nparts; i++) {
		struct wi_part *p = &w->part[i];
		const char *what = !strncmp(p->key, "comm_", 5) ? "collectives, " : "gradient sync, ";
		if (!strcmp(p->key, "comm_axis0") || !strcmp(p->key, "sync_axis0"))
			snprintf(p->label, sizeof p->label, "%s%s", what, l0);
		else if (!strcmp(p->key, "comm_axis1") || !strcmp(p->key, "sync_axis1"))
			snprintf(p->label, sizeof p->label, "%s%s", what, l1);
	}
}

int wi_held(const struct wi_request *q, const struct cost_cluster *c, struct whatif *w)
{
	struct onnx_import_opts none;
	struct pipeline_model l;
	struct inter_opts o;
	struct cost_cluster sub;
	memset(w, 0, sizeof *w);
	inter_opts_init(&o);
	int rc = report_plan_cluster(&q->plan, c, &sub);
	if (rc < 0 || (rc = open_model(q, &none, &l, &o)) < 0)
		return rc;
	held_opts(&q->plan, &sub, &o);
	struct inter_plan p;
	if ((rc = held_plan(q, &sub, &o, &p)) < 0) {
		name_model(q);
		pipeline_model_close(&l);
		return rc;
	}
	rc = breakdown(q, &sub, &o, &p, w);
	pipeline_model_close(&l);
	if (rc == 0) {
		as_manual(&q->plan, w);
		wi_finish(w, q->price);
	} else {
		wi_free(w);
	}
	inter_plan_free(&p);
	return rc;
}
