/*
 * inter_cost.c: what the inter-op pass's DP reads: per layer, per sub-mesh
 * and logical mesh, the intra-op pass's plan of that layer alone: its
 * per-micro-batch time (without the once-per-step gradient reduction and
 * optimizer update, kept apart), the bytes of parameters, gradients and
 * optimizer state per device with and without ZeRO-1, the activation
 * bytes one micro-batch keeps for its backward pass, and the working set
 * above them at the layer's peak. Constant values a layer reads (masks)
 * are recomputed inside it.
 *
 * A layer becomes a graph of its own (inputs: the values it reads from
 * earlier layers; outputs: the values later ones read); layers whose text
 * form, names left out, is the same (a transformer's blocks) are solved
 * once. A layer range's costs are the sums of its layers' (the same plan
 * per layer, no resharding between them: exact for repeated blocks).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/search/inter_internal.h"
#include "compiler/parallel.h"
#include "compiler/progress.h"

/* The gradient reductions (once per step) among the plan's collectives. */
static double sync_time(const struct intra_result *r)
{
	double t = 0;
	for (int i = 0; i < r->nevents; i++)
		if (r->events[i].once)
			t += r->events[i].t;
	return t;
}

/* Parameter, gradient and optimizer bytes per device under the plan,
 * without ZeRO-1 (the intra-op pass reports what ZeRO saves). */
static double state_bytes(const struct ir_graph *s, const struct inter_env *env)
{
	int n0, n1;
	ir_graph_mesh(s, &n0, &n1);
	double b = 0;
	for (int i = 0; i < ir_graph_nparams(s); i++) {
		const struct ir_value *p = ir_graph_param(s, i);
		double n = (double)ir_shape_numel(&p->shape);
		for (int d = 0; d < p->shape.rank && p->sharded; d++)
			n /= ir_sharding_pieces(p->sharding.dim[d], n0, n1);
		if (!ir_dtype_is_float(p->dtype) || p->buffer || !env->train)
			b += n * (double)ir_dtype_size(p->dtype);
		else
			b += n * (env->state.params + env->state.grads + env->state.optim);
	}
	return b;
}

void inter_layer_opts(const struct inter_opts *io, int n0, int n1, int micro, bool overlap, struct intra_opts *o)
{
	intra_opts_init(o);
	o->n0 = n0;
	o->n1 = n1;
	o->train = io->train;
	o->optim = io->optim;
	o->prec = io->prec;
	o->mem_limit = 1e30; /* the DP checks memory on whole stages */
	o->cal = io->cal;
	o->time_limit = io->time_limit > 0 ? io->time_limit : INTER_TIME_LIMIT;
	o->quick = true;                                          /* no MIP: many small solves, on every core */
	o->zero = io->train ? (io->zero >= 2 ? io->zero : 1) : 0; /* ZeRO-1 unless held to 2 or 3 */
	o->manual_tp = io->manual_tp;
	o->step_share = 1.0 / micro;
	if (overlap)
		o->sync_share = INTER_SYNC_OVERLAP / micro;
	o->inputs_resident =
		true; /* activations of the layer before (data loading overlaps the step, as in the report) */
}

void inter_cluster_opts(const struct inter_opts *io, struct cluster_opts *co)
{
	cluster_opts_init(co);
	co->layers = io->layers;
	if (io->manual_tp)
		co->max_layers = 0;
}

double inter_trained_numel(const struct ir_graph *g)
{
	double n = 0;
	for (int i = 0; i < ir_graph_nparams(g); i++) {
		const struct ir_value *p = ir_graph_param(g, i);
		if (ir_dtype_is_float(p->dtype) && !p->buffer)
			n += (double)ir_shape_numel(&p->shape);
	}
	return n;
}

/* Worth a solve when the fastest plan holds a fifth more state than
 * splitting all of it over the mesh would, and the model's state matters. */
double inter_lean_price(const struct intra_result *fast, double layer_numel, double model_numel, double mem_limit)
{
	if (!(fast->mem_state > 1.2 * fast->mem_state_least && fast->t_total > 0 && layer_numel > 0) ||
	    fast->mem_state * model_numel / layer_numel <= 0.25 * mem_limit)
		return 0;
	return fast->t_total / fast->mem_state;
}

double inter_layer_t_mb(const struct intra_result *r, const struct intra_opts *o, double t_sync)
{
	double sync = o->sync_share >= 0 ? o->sync_share : o->step_share;
	return fmax(r->t_total - sync * t_sync - o->step_share * r->t_optim, 0);
}

/* out from r, solved under o. */
static void fill_cost(const struct inter_env *env, const struct ir_graph *s, const struct intra_result *r,
		      const struct intra_opts *o, struct inter_layer_cost *out)
{
	out->ok = true;
	out->t_sync = sync_time(r);
	out->t_optim = r->t_optim;
	out->t_optim_nozero = r->t_optim_nozero;
	out->t_mb = inter_layer_t_mb(r, o, out->t_sync);
	out->mem_state_nozero = state_bytes(s, env);
	out->mem_state = out->mem_state_nozero - r->mem_zero_saved;
	/* the layer's outputs: the next layer keeps what its backward needs */
	out->mem_act = fmax(r->mem_end - r->mem_out - out->mem_state, 0);
	out->mem_once = fmax(r->mem_peak - fmax(r->mem_end, out->mem_state), 0);
	out->mem_in_kept = fmin(r->mem_in_kept, out->mem_act);
	out->mem_in_dup = fmin(r->mem_in_dup, out->mem_in_kept);
	out->mem_out_kept = fmin(r->mem_out_kept, out->mem_act);
}

/* Per input of layer s (src: its values' ids in g): kept in another form
 * by the layer before. The whole graph (saved: intra_saved_values) keeps
 * something upstream of it in its place, the input of the elementwise op
 * that made it, which the layer before keeps for that op's backward. */
static bool *kept_before(const struct ir_graph *g, const struct ir_graph *s, const int *src, const bool *saved)
{
	bool *b = ir_calloc((size_t)ir_graph_ninputs(s) + 1, sizeof *b);
	for (int i = 0; b && saved && i < ir_graph_ninputs(s); i++) {
		int v = src[ir_graph_input(s, i)->id];
		b[i] = v >= 0 && ir_graph_value(g, v)->kind == IR_VAL_NODE && !saved[v];
	}
	return b;
}

/* out, and its lean variant (when lean is not NULL; a copy of out when
 * inter_lean_price says it is the same). model: the whole model's
 * inter_trained_numel; saved: g's intra_saved_values (training);
 * overlap: as inter_layer_opts. */
static int solve_layer(const struct inter_env *env, const struct ir_graph *g, int first, int last,
		       const struct inter_config *cfg, int micro, bool overlap, double model, const bool *saved,
		       struct inter_layer_cost *out, struct inter_layer_cost *lean)
{
	int *src = NULL;
	struct ir_graph *s = graph_extract(g, first, last, false, &src);
	bool *before = s ? kept_before(g, s, src, saved) : NULL;
	ir_free(src);
	if (!before) {
		ir_graph_free(s);
		return -ENOMEM;
	}
	struct intra_opts o;
	inter_layer_opts(env->opts, cfg->n0, cfg->n1, micro, overlap, &o);
	o.inputs_kept_before = before;
	struct intra_result r;
	int rc = intra_pass(s, env->c, &o, &r);
	if (rc == -ENOSPC) { /* does not fit this mesh: not a choice */
		out->ok = false;
		if (lean)
			lean->ok = false;
		ir_graph_free(s);
		ir_free(before);
		return 0;
	}
	if (rc == 0) {
		fill_cost(env, s, &r, &o, out);
		double price = lean ? inter_lean_price(&r, inter_trained_numel(s), model, env->mem_limit) : 0;
		if (lean)
			*lean = *out;
		if (price > 0 && (rc = intra_reprice(s, price, &r)) == 0)
			fill_cost(env, s, &r, &o, lean);
		if (rc == 0)
			intra_result_free(&r);
	}
	ir_graph_free(s);
	ir_free(before);
	return rc;
}

/* The solves of one inter_layer_costs call, shared by its threads. */
struct pool {
	const struct inter_env *env;
	const struct ir_graph *g;
	const struct cluster_result *cl;
	const struct inter_config *cfg;
	int ncfg, micro;
	bool overlap;      /* inter_layer_opts' */
	double model;      /* inter_trained_numel(g) */
	const bool *saved; /* intra_saved_values(g), training */
	struct inter_layer_cost *cost, *lean;
	const int *job; /* l * ncfg + c, layers solved for themselves */
	int njobs;
	pthread_mutex_t lock;
	int rc; /* the first error, its message in err */
	char err[512];
};

static int solve_job(void *arg, int j)
{
	struct pool *p = arg;
	int l = p->job[j] / p->ncfg, c = p->job[j] % p->ncfg;
	int rc = solve_layer(p->env, p->g, p->cl->first[l], p->cl->first[l + 1], &p->cfg[c], p->micro, p->overlap,
			     p->model, p->saved, &p->cost[p->job[j]], p->lean ? &p->lean[p->job[j]] : NULL);
	progress_done(1);
	if (rc < 0) {
		pthread_mutex_lock(&p->lock);
		if (p->rc == 0) {
			p->rc = rc;
			snprintf(p->err, sizeof p->err, "%s", ir_error());
		}
		pthread_mutex_unlock(&p->lock);
	}
	return rc;
}

/* Runs the pool's solves (par_run). */
static int run_pool(struct pool *p)
{
	pthread_mutex_init(&p->lock, NULL);
	par_run(p->njobs, solve_job, p);
	pthread_mutex_destroy(&p->lock);
	return p->rc < 0 ? ir_errorf(p->rc, "%s", p->err) : 0;
}

int inter_layer_costs(const struct inter_env *env, const struct ir_graph *g, const struct cluster_result *cl, int ncfg,
		      const struct inter_config *cfg, int micro, const bool *overlap, struct inter_layer_cost *cost,
		      struct inter_layer_cost *lean, int *nsolved)
{
	int L = cl->nlayers, rc = 0;
	char **sig = ir_calloc((size_t)L, sizeof *sig);
	int *same = ir_malloc(sizeof *same * (size_t)(L + 1));
	int *job = ir_malloc(sizeof *job * ((size_t)L * (size_t)ncfg + 1));
	if (!sig || !same || !job) {
		ir_free(sig);
		ir_free(same);
		ir_free(job);
		return ir_errorf(-ENOMEM, "out of memory costing layers");
	}
	int njobs = 0;
	for (int l = 0; l < L; l++) {
		sig[l] = graph_signature(g, cl->first[l], cl->first[l + 1]);
		same[l] = l;
		for (int k = 0; k < l && sig[l]; k++)
			if (sig[k] && !strcmp(sig[k], sig[l])) {
				same[l] = k;
				break;
			}
	}
	/* a class of identical layers is solved once, by its first, for any
	 * config one of them wants */
	for (int l = 0; l < L; l++)
		for (int c = 0; c < ncfg && same[l] == l; c++) {
			bool want = !overlap;
			for (int k = l; k < L && !want; k++)
				want = same[k] == l && overlap[k * ncfg + c];
			if (want)
				job[njobs++] = l * ncfg + c;
		}
	bool *saved = env->train ? intra_saved_values(g) : NULL;
	progress_add(njobs);
	struct pool p = { .env = env,
			  .g = g,
			  .cl = cl,
			  .cfg = cfg,
			  .ncfg = ncfg,
			  .micro = micro,
			  .overlap = overlap,
			  .cost = cost,
			  .model = inter_trained_numel(g),
			  .saved = saved,
			  .lean = overlap ? NULL : lean,
			  .job = job,
			  .njobs = njobs };
	rc = env->train && !saved ? ir_errorf(-ENOMEM, "out of memory costing layers") : run_pool(&p);
	ir_free(saved);
	for (int l = 0; l < L && rc == 0; l++)
		for (int c = 0; c < ncfg && same[l] != l; c++) {
			size_t at = (size_t)l * (size_t)ncfg + (size_t)c,
			       from = (size_t)same[l] * (size_t)ncfg + (size_t)c;
			if (overlap && !overlap[at])
				continue;
			cost[at] = cost[from];
			if (lean && !overlap)
				lean[at] = lean[from];
		}
	*nsolved = njobs;
	for (int l = 0; l < L; l++)
		free(sig[l]);
	ir_free(sig);
	ir_free(same);
	ir_free(job);
	return rc;
}
