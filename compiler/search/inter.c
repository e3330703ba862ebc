/*
 * inter.c: the inter-op pass: the search over micro-batch counts, stage
 * DP and schedules that gives the whole automatic plan (search.h).
 *
 * Per candidate micro-batch size b (global batch B = b * m): the graph at
 * b, its layers, every layer's intra-op plan on every (sub-mesh, logical
 * mesh) (inter_cost.c), then solvers/'s stage DP with per-micro-batch stage
 * latency t + u / m (u the once-per-step gradient reduction left exposed
 * and optimizer update, spread over the micro-batches, so the DP sees data
 * parallelism's price; ZeRO-1 and recomputation are per-stage choices), the
 * transfer to the next stage added to the sender, and memory checked with
 * 1F1B's in-flight count. The DP's stages are then timed under each
 * schedule (cost_pipeline_time) and the fastest that fits wins; ties go to
 * the least memory. A plan to be lowered (inter_opts.lowered_memory) is
 * charged, per stage, the activations and working sets the lowering
 * allocates (inter_step.c: measured on the train step, scaled by each
 * layer plan's sharding), so that its prediction is its arena.
 *
 * Forced shapes (tests, or a user who knows better): inter_opts.stages
 * makes the DP return exactly that many stages (clustering into at least
 * as many layers); inter_opts.mesh0 x mesh1 keeps only the sub-meshes of
 * that many devices, each with that one logical mesh, so the stage count
 * is devices / (mesh0 * mesh1). Requests the cluster or the model cannot
 * take are -EINVAL naming the option and why. The schedule (sched, v),
 * recomputation and ZeRO-1 can be held too, and with micro-batches and
 * manual_tp (each layer's mesh n0 x n1 as dp x tp) the search is a manual
 * plan costed as the automatic one is: the same layer solves, stage DP
 * and schedule simulator (tests/test_inter.c compares it with pcc
 * report's evaluator of the manual plan).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/search/inter_internal.h"
#include "compiler/progress.h"
#include "ir/plan.h"
#include "solvers/solvers.h"

#define MAX_SUBMESH 64
#define MAX_CONFIGS 192

void inter_opts_init(struct inter_opts *o)
{
	memset(o, 0, sizeof *o);
	o->optim = COST_OPT_ADAM;
	o->prec = -1;
	o->recompute = -1;
	o->zero = -1;
	o->sched = -1;
}

/* ---- the layer costs of each micro-batch size, kept across searches ---------- */

struct inter_cache_entry {
	int64_t b;
	int m, L, ncfg;
	struct inter_layer_cost *cost; /* [L * ncfg], then the lean ones in training */
	size_t ncost;                  /* entries of cost */
	struct inter_step_mem real;
};

struct inter_cache {
	struct inter_cache_entry *e;
	int n;
};

struct inter_cache *inter_cache_new(void)
{
	return ir_calloc(1, sizeof(struct inter_cache));
}

void inter_cache_free(struct inter_cache *c)
{
	for (int i = 0; c && i < c->n; i++) {
		ir_free(c->e[i].cost);
		inter_step_mem_free(&c->e[i].real);
	}
	if (c)
		ir_free(c->e);
	ir_free(c);
}

static const struct inter_cache_entry *cache_find(const struct inter_cache *c, int64_t b, int m, int L, int ncfg)
{
	for (int i = 0; c && i < c->n; i++)
		if (c->e[i].b == b && c->e[i].m == m && c->e[i].L == L && c->e[i].ncfg == ncfg)
			return &c->e[i];
	return NULL;
}

/* A copy of real's arrays (nlayers of each) into d. */
static int step_mem_copy(const struct inter_step_mem *real, struct inter_step_mem *d)
{
	memset(d, 0, sizeof *d);
	if (real->nlayers == 0)
		return 0;
	size_t n = (size_t)real->nlayers;
	double *a = ir_malloc(sizeof *a * n * 7);
	if (!a)
		return -ENOMEM;
	const double *src[7] = {
		real->own, real->cross, real->work, real->model, real->upd, real->state, real->shared
	};
	double **dst[7] = { &d->own, &d->cross, &d->work, &d->model, &d->upd, &d->state, &d->shared };
	for (int k = 0; k < 7; k++) {
		memcpy(a + k * n, src[k], sizeof *a * n);
		*dst[k] = a + k * n;
	}
	d->nlayers = real->nlayers;
	return 0;
}

/* Keeps a copy of one size's costs (best effort: a cache that cannot grow
 * only solves again later). */
static void cache_keep(struct inter_cache *c, int64_t b, int m, int L, int ncfg, const struct inter_layer_cost *cost,
		       size_t ncost, const struct inter_step_mem *real)
{
	if (!c || cache_find(c, b, m, L, ncfg))
		return;
	struct inter_cache_entry *ne = ir_realloc(c->e, sizeof *ne * ((size_t)c->n + 1)),
				 e = { .b = b, .m = m, .L = L, .ncfg = ncfg };
	if (!ne)
		return;
	c->e = ne;
	e.ncost = ncost;
	if (!(e.cost = ir_malloc(sizeof *e.cost * (ncost + 1))))
		return;
	memcpy(e.cost, cost, sizeof *e.cost * ncost);
	if (step_mem_copy(real, &e.real) < 0) {
		ir_free(e.cost);
		return;
	}
	c->e[c->n++] = e;
}

void inter_plan_free(struct inter_plan *p)
{
	ir_free(p->stages);
	ir_free(p->layer_node);
	memset(p, 0, sizeof *p);
}

/* The sub-meshes and their logical meshes, the same for every
 * micro-batch size: the DP's (mesh m, config c) is cfg[cfg_of[m * maxc +
 * c]], the c-th logical mesh of sub-mesh m. */
struct meshes {
	int nmesh, ncfg, maxc;
	int dev[MAX_SUBMESH]; /* devices of sub-mesh m */
	struct inter_config cfg[MAX_CONFIGS];
	int cfg_of[MAX_CONFIGS];
};

/* Whether the search tries logical mesh (d / n1) x n1 on a rows x cols
 * sub-mesh of d devices: with a forced axis 1 (f1 > 0) exactly that one,
 * else every n0 x n1 = d whose fast axis 1 divides a node (Alpa enumerates
 * every 2-D shape; d x 1 is 1 x d with the axes swapped, and an axis 1
 * spanning nodes only repeats what splitting over both axes of
 * (d / cols) x cols does). */
static bool mesh_tried(int rows, int cols, int n1, int f1)
{
	int d = rows * cols;
	if (f1 > 0)
		return n1 == f1;
	return !(d % n1 || (n1 == 1 && d > 1) || (n1 > cols && rows > 1) || cols % n1);
}

/* The sub-meshes (only those of f0 * f1 devices when f0 > 0) and their
 * logical meshes, widest axis 1 first. */
static void meshes_make(const struct cost_cluster *c, int per_node, int f0, int f1, struct meshes *ms)
{
	int rows[MAX_SUBMESH + 1], cols[MAX_SUBMESH + 1], slot[MAX_CONFIGS];
	memset(ms, 0, sizeof *ms);
	int n = stage_submeshes(c->nodes, per_node, rows, cols, MAX_SUBMESH), fd = f0 * f1;
	bool listed = false;
	for (int k = 0; k < n; k++)
		listed |= rows[k] * cols[k] == fd;
	/* a forced mesh of whole nodes past the first MAX_SUBMESH shapes (a
	 * manual plan's stage of 1024 devices): that one shape */
	if (f0 > 0 && !listed && fd > per_node && fd % per_node == 0 && fd / per_node <= c->nodes) {
		rows[n] = fd / per_node;
		cols[n++] = per_node;
	}
	for (int k = 0; k < n; k++) {
		int d = rows[k] * cols[k], first = ms->ncfg, m = ms->nmesh;
		if (f0 > 0 && d != f0 * f1)
			continue;
		ms->dev[ms->nmesh++] = d;
		for (int n1 = d; n1 >= 1 && ms->ncfg < MAX_CONFIGS; n1--) {
			if (!mesh_tried(rows[k], cols[k], n1, f1))
				continue;
			slot[ms->ncfg] = ms->ncfg - first;
			ms->cfg[ms->ncfg++] = (struct inter_config){ m, rows[k], cols[k], d / n1, n1 };
			ms->maxc = ms->ncfg - first > ms->maxc ? ms->ncfg - first : ms->maxc;
		}
	}
	for (int x = 0; x < ms->nmesh * ms->maxc; x++)
		ms->cfg_of[x] = -1;
	for (int k = 0; k < ms->ncfg; k++)
		ms->cfg_of[ms->cfg[k].mesh * ms->maxc + slot[k]] = k;
}

/* The DP's view of one micro-batch size. */
struct search {
	const struct inter_env *env;
	const struct cost_cluster *c;
	const struct cluster_result *cl;
	const struct meshes *ms;
	int L, m;
	const struct inter_layer_cost *cost; /* [L * ncfg] */
	const struct inter_layer_cost *lean; /* [L * ncfg], or NULL (inference) */
	const bool *overlap;                 /* per stage of the assignment timed: cost holds its
					      * layers solved with the reduction overlapped; or NULL */
	const struct inter_step_mem *real;   /* training: what the lowering keeps; or NULL */
	int64_t b;                           /* the micro-batch size */
	struct range_memo *memo;             /* fits()'s last stage summed, or NULL */
};

/* The stage DP asks fits() of one stage once per count of stages after
 * it, in a row: its sum (range) is kept between them. */
struct range_memo {
	bool valid, ok;
	int l, r, k, opt;
	struct inter_layer_cost sum;
};

/* Per-stage choices the DP makes besides the mesh: bits of a config. */
enum { OPT_RECOMPUTE = 1, OPT_ZERO = 2, OPT_LEAN = 4, NOPT = 8 };

/* The activations and working sets of layers l..r of config k as the
 * lowering allocates them (inter_step.c): each layer's measured bytes
 * times the fraction of its ideal kept bytes one device holds under the
 * layer's own plan (all of them when it keeps none), and what an earlier
 * layer's backward reads first held here too; the update's temporaries
 * scaled as the state is (stage_once); the weights' copies the backward
 * reads, held once, as state. A recomputed range keeps its layers' inputs
 * (range) and holds one layer's forward values again at a time. */
static void real_act(const struct search *s, int l, int r, int k, int opt, struct inter_layer_cost *sum)
{
	const struct inter_step_mem *m = s->real;
	double act = 0, once = 0, upd = 0, shared = 0, redo = 0, least = 1.0 / (s->ms->cfg[k].n0 * s->ms->cfg[k].n1);
	for (int x = l; x <= r; x++) {
		const struct inter_layer_cost *y = &(
			opt & OPT_LEAN ? s->lean : s->cost)[(size_t)x * (size_t)s->ms->ncfg + (size_t)k];
		/* a fraction between one device's even share and all */
		double f = least < 1 && m->model[x] > 0 ? fmax(fmin(y->mem_act / m->model[x], 1), least) : 1;
		act += m->own[x] * f + (x == l ? m->cross[x] * f : 0);
		double fs = least < 1 && m->state[x] > 0 ? fmax(fmin(y->mem_state_nozero / m->state[x], 1), least) : 1;
		once = fmax(once, m->work[x] * f);
		upd = fmax(upd, m->upd[x] * fs);
		/* weights' copies shard as the weights do */
		shared += m->shared[x] * fs;
		/* recomputed: the layer's forward values made again for its
		 * backward, with its working set */
		redo = fmax(redo, (m->own[x] + m->cross[x] + m->work[x]) * f);
	}
	sum->mem_state += shared;
	if (opt & OPT_RECOMPUTE) {
		sum->mem_once = fmax(sum->mem_once, redo);
	} else {
		sum->mem_act = act;
		sum->mem_once = once;
	}
	sum->mem_upd = upd;
}

/* The working set a stage holds once with `inflight` micro-batches' kept
 * activations: the per-micro-batch one, or the update's where that is
 * larger than both (it takes the activations' place after the last
 * micro-batch), so that state + inflight * act + this is the peak. */
static double stage_once(const struct inter_layer_cost *sum, double inflight)
{
	return fmax(sum->mem_once, sum->mem_upd - inflight * sum->mem_act);
}

/* Sums over layers l..r of config k with options opt; false when a layer
 * has no plan. Kept activations add up over the layers, working sets do
 * not (one layer's at a time); a value crossing from one layer to the
 * next that both keep for their backward passes is held once. Recomputation keeps only each layer's
 * input per micro-batch in flight (spread over the stage's devices) and
 * one layer's kept activations and working set at a time, for one more
 * forward pass (a third of forward plus backward). */
static bool range(const struct search *s, int l, int r, int k, int opt, struct inter_layer_cost *sum)
{
	memset(sum, 0, sizeof *sum);
	if ((opt & OPT_LEAN) && !s->lean)
		return false;
	if (s->env->opts && s->env->opts->recompute >= 0 && !(opt & OPT_RECOMPUTE) != !s->env->opts->recompute)
		return false;
	if (s->env->opts && s->env->opts->zero >= 0 && s->env->train && !(opt & OPT_ZERO) != !s->env->opts->zero)
		return false;
	double inputs = 0, widest = 0;
	int d = s->ms->cfg[k].n0 * s->ms->cfg[k].n1;
	bool zero = opt & OPT_ZERO;
	for (int x = l; x <= r; x++) {
		const struct inter_layer_cost *y = &(
			opt & OPT_LEAN ? s->lean : s->cost)[(size_t)x * (size_t)s->ms->ncfg + (size_t)k];
		if (!y->ok)
			return false;
		sum->t_mb += y->t_mb;
		sum->t_sync += y->t_sync;
		sum->t_optim += zero ? y->t_optim : y->t_optim_nozero;
		sum->mem_state += zero ? y->mem_state : y->mem_state_nozero;
		sum->mem_act += y->mem_act;
		if (x > l) /* held once: the smaller of what both ends keep, and what the layer before keeps for it */
			sum->mem_act -= fmin(y[-(ptrdiff_t)s->ms->ncfg].mem_out_kept, y->mem_in_kept - y->mem_in_dup) +
					y->mem_in_dup;
		sum->mem_once = fmax(sum->mem_once, y->mem_once);
		inputs += s->cl->cut_bytes[x] * s->env->elem_scale / d;
		widest = fmax(widest, y->mem_act + y->mem_once);
	}
	if (opt & OPT_RECOMPUTE) {
		sum->t_mb *= 4.0 / 3.0;
		sum->mem_act = inputs;
		sum->mem_once = widest;
	}
	if (s->real && s->real->nlayers == s->L)
		real_act(s, l, r, k, opt, sum);
	sum->ok = true;
	return true;
}

/* Once per step on a stage: the gradient reduction not hidden behind the
 * last micro-batch's backward pass (two thirds of t_mb), then the update. */
static double once_per_step(const struct inter_layer_cost *sum)
{
	return fmax(sum->t_sync - sum->t_mb * 2 / 3, 0) + sum->t_optim;
}

/* The config index and options (OPT_*) of the DP's (mesh, config). */
static int config_of(const struct search *s, int m, int c, int *opt)
{
	*opt = c % NOPT;
	return s->ms->cfg_of[m * s->ms->maxc + c / NOPT];
}

/* Activation forward and its gradient backward across the cut after
 * layer r, sent by a stage of d devices: each byte once, spread over the
 * senders, over NVLink inside a node and the NICs between nodes. */
static double xfer_time(const struct search *s, int r, int d)
{
	if (r + 1 >= s->L)
		return 0;
	double bytes = s->cl->cut_bytes[r + 1] * s->env->elem_scale * (s->env->train ? 2 : 1);
	const struct cost_link *ln = d >= s->env->per_node ? &s->env->inter : &s->env->intra;
	return ln->latency + bytes / (ln->bw * d);
}

/* Whether lowering refused layers l..r on config k at this micro-batch
 * size with as many micro-batches in flight or fewer (inter_opts.refused):
 * with more in flight it needs more still. Lowering solves the stage's
 * sharding itself, whatever the search's options (recomputation, ZeRO, the
 * lean variant), so a refusal covers them all. */
static bool refused(const struct search *s, int l, int r, int k, double inflight)
{
	const struct inter_opts *o = s->env->opts;
	const struct inter_config *y = &s->ms->cfg[k];
	for (int i = 0; o && i < o->nrefused; i++) {
		const struct inter_refused *x = &o->refused[i];
		if (x->micro_batch == s->b && x->layer_first == l && x->layer_last == r && x->rows == y->rows &&
		    x->cols == y->cols && x->n0 == y->n0 && x->n1 == y->n1 && inflight >= x->inflight)
			return true;
	}
	return false;
}

static bool fits(void *ctx, int l, int r, int m, int c, int after)
{
	const struct search *s = ctx;
	int opt;
	int k = config_of(s, m, c, &opt);
	struct range_memo *y = s->memo;
	if (k < 0)
		return false;
	if (!y->valid || y->l != l || y->r != r || y->k != k || y->opt != opt) {
		y->ok = range(s, l, r, k, opt, &y->sum);
		y->valid = true;
		y->l = l;
		y->r = r;
		y->k = k;
		y->opt = opt;
	}
	if (!y->ok)
		return false;
	const struct inter_layer_cost sum = y->sum;
	double inflight = fmin(s->m, after + 1);
	return sum.mem_state + inflight * sum.mem_act + stage_once(&sum, inflight) <= s->env->mem_limit &&
	       !refused(s, l, r, k, inflight);
}

/* Runs schedule (sch, v) of the stages on the simulator: a backward takes
 * twice its forward; interleaved splits each stage into v equal chunks.
 * Fills the step time (without the gradient reduction) and per stage the
 * micro-batches held at the peak. -EINVAL: no such schedule. */
static int simulate(const struct search *s, int np, const struct inter_layer_cost *sum, const double *xf,
		    enum cost_sched sch, int v, double *T, double *inflight)
{
	int nv = np * v, rc;
	struct sched sc;
	struct sched_sim sim = { 0 };
	double *buf = ir_calloc((size_t)nv * 4 + (size_t)np, sizeof *buf);
	if (!buf)
		return ir_errorf(-ENOMEM, "out of memory simulating a schedule");
	double *tf = buf, *tb = buf + nv, *act = buf + 2 * nv, *x = buf + 3 * nv, *st = buf + 4 * nv;
	/* interleaved: the last device's chunk feeds the first device's next
	 * one; that crossing takes the largest of the stage boundaries' */
	double wrap = 0;
	for (int i = 0; i + 1 < np; i++)
		wrap = fmax(wrap, xf[i]);
	for (int k = 0; k < nv; k++) {
		int i = k % np;
		tf[k] = sum[i].t_mb / 3 / v;
		tb[k] = 2 * tf[k];
		act[k] = v > 1 ? 1.0 / v : 1; /* in units of the stage's micro-batch */
		x[k] = i + 1 < np ? xf[i] : wrap;
	}
	rc = sched_build(sch, np, s->m, v, &sc);
	struct sched_costs c = {
		.t_fwd = tf, .t_bwd = tb, .t_xfer = nv > 1 ? x : NULL, .act_bytes = act, .static_bytes = st
	};
	if (rc == 0)
		rc = sched_simulate(&sc, &c, &sim);
	if (rc == 0) {
		*T = sim.step_time;
		for (int i = 0; i < np; i++)
			inflight[i] = sim.peak_bytes[i];
	}
	sched_sim_free(&sim);
	sched_free(&sc);
	ir_free(buf);
	return rc;
}

/* "4 x 1x8, 2 x 2x4 recomputed": the stages' logical meshes, runs of
 * equal ones counted, and the options any stage takes. */
static void describe(const struct search *s, const struct stage_dp_result *dr, char *buf, size_t n)
{
	size_t at = 0;
	int any = 0;
	buf[0] = 0;
	for (int i = 0, run = 1; i < dr->nstages; i++, run++) {
		int opt, optn;
		int k = config_of(s, dr->stages[i].mesh, dr->stages[i].config, &opt);
		any |= opt;
		int kn = i + 1 < dr->nstages ? config_of(s, dr->stages[i + 1].mesh, dr->stages[i + 1].config, &optn)
					     : -1;
		if (kn >= 0 && s->ms->cfg[kn].n0 == s->ms->cfg[k].n0 && s->ms->cfg[kn].n1 == s->ms->cfg[k].n1)
			continue;
		if (at < n)
			at += (size_t)snprintf(buf + at, n - at, "%s%d x %dx%d", at ? ", " : "", run, s->ms->cfg[k].n0,
					       s->ms->cfg[k].n1);
		run = 0;
	}
	static const char *const name[] = { " recomputed", " ZeRO-1", " lean" };
	for (int b = 0; b < 3; b++)
		if ((any & (1 << b)) && (b != 1 || s->env->train) && at < n)
			at += (size_t)snprintf(buf + at, n - at, "%s", name[b]);
}

/* Times one stage assignment under each schedule (simulated) and keeps it
 * among the plans weighed; fills best when it beats it; *t_min: the
 * fastest that fits, if faster. */
static void try_schedules(const struct search *s, const struct stage_dp_result *dr, int64_t b, double fwd_flops,
			  struct inter_plan *best, bool *have, double *t_min)
{
	int np = dr->nstages;
	double xf[64], sync = 0, infl[64];
	struct inter_layer_cost sum[64];
	if (np > 64)
		return;
	for (int i = 0; i < np; i++) {
		const struct stage_dp_stage *st = &dr->stages[i];
		int opt;
		int k = config_of(s, st->mesh, st->config, &opt);
		range(s, st->first, st->last, k, opt, &sum[i]);
		sync = fmax(sync, once_per_step(&sum[i]));
		xf[i] = xfer_time(s, st->last, s->ms->cfg[k].n0 * s->ms->cfg[k].n1);
	}
	/* 1F1B first: on ties (one stage) it is the canonical answer */
	static const int order[COST_SCHED_COUNT] = { COST_SCHED_1F1B, COST_SCHED_GPIPE, COST_SCHED_INTERLEAVED };
	for (int oi = 0; oi < COST_SCHED_COUNT; oi++) {
		int sch = order[oi], want = s->env->opts ? s->env->opts->sched : -1;
		int v = sch != COST_SCHED_INTERLEAVED ? 1 : want >= 0 && s->env->opts->v > 0 ? s->env->opts->v : 2;
		if (want >= 0 && sch != want)
			continue;
		if (sch == COST_SCHED_INTERLEAVED) { /* each chunk at least a layer */
			bool ok = np > 1 && s->m % np == 0 && !s->env->no_interleaved;
			for (int i = 0; i < np && ok; i++)
				ok = dr->stages[i].last - dr->stages[i].first + 1 >= v;
			if (!ok)
				continue;
		}
		double T = 0, peak = 0;
		if (simulate(s, np, sum, xf, (enum cost_sched)sch, v, &T, infl) < 0)
			continue;
		T += sync;
		bool ok = true;
		for (int i = 0; i < np; i++) {
			double mem = sum[i].mem_state + infl[i] * sum[i].mem_act + stage_once(&sum[i], infl[i]);
			int opt, k = config_of(s, dr->stages[i].mesh, dr->stages[i].config, &opt);
			ok &= mem <= s->env->mem_limit &&
			      !refused(s, dr->stages[i].first, dr->stages[i].last, k, infl[i]);
			peak = fmax(peak, mem);
		}
		/* one stage: GPipe is 1F1B's twin; re-timed with the gradient
		 * sync overlapped (try_overlap): the same plan, one row */
		bool twin = np == 1 && sch == COST_SCHED_GPIPE && want < 0;
		if (!twin && !s->overlap)
			best->nweighed++;
		if (!ok || twin)
			continue;
		struct inter_alt alt = { .micro_batch = b,
					 .micro = s->m,
					 .sched = (enum cost_sched)sch,
					 .v = v,
					 .nstages = np,
					 .step_time = T,
					 .mem_peak = peak,
					 .overlap = s->overlap != NULL };
		describe(s, dr, alt.stages, sizeof alt.stages);
		inter_alt_keep(best, &alt);
		*t_min = fmin(*t_min, T);
		if (*have &&
		    (T > best->step_time * (1 + 1e-9) || (T >= best->step_time * (1 - 1e-9) && peak >= best->mem_peak)))
			continue;
		struct inter_stage *stages = ir_calloc((size_t)np, sizeof *stages);
		int *layer_node = ir_malloc(sizeof *layer_node * (size_t)(s->L + 1));
		if (!stages || !layer_node) {
			ir_free(stages);
			ir_free(layer_node);
			return;
		}
		for (int x = 0; x <= s->L; x++)
			layer_node[x] = s->cl->first[x];
		for (int i = 0; i < np; i++) {
			const struct stage_dp_stage *st = &dr->stages[i];
			int opt;
			int k = config_of(s, st->mesh, st->config, &opt);
			stages[i] = (struct inter_stage){
				.recompute = opt & OPT_RECOMPUTE,
				.zero = opt & OPT_ZERO,
				.lean = opt & OPT_LEAN,
				.overlap = s->overlap && s->overlap[i],
				.mem_once = stage_once(&sum[i], infl[i]),
				.t_optim = sum[i].t_optim,
				.layer_first = st->first,
				.layer_last = st->last,
				.node_first = s->cl->first[st->first],
				.node_last = s->cl->first[st->last + 1],
				.rows = s->ms->cfg[k].rows,
				.cols = s->ms->cfg[k].cols,
				.n0 = s->ms->cfg[k].n0,
				.n1 = s->ms->cfg[k].n1,
				.t_mb = sum[i].t_mb,
				.t_sync = sum[i].t_sync,
				.t_xfer = i + 1 < np ? xf[i] : 0,
				.mem_state = sum[i].mem_state,
				.mem_act = sum[i].mem_act,
				.inflight = infl[i],
			};
			stages[i].mem = stages[i].mem_state + stages[i].inflight * stages[i].mem_act +
					stages[i].mem_once;
		}
		progress_best(T);
		ir_free(best->stages);
		ir_free(best->layer_node);
		best->stages = stages;
		best->layer_node = layer_node;
		best->nstages = np;
		best->nlayers = s->L;
		best->train = s->env->train;
		best->micro = s->m;
		best->micro_batch = b;
		best->batch = b * s->m;
		best->sched = (enum cost_sched)sch;
		best->v = v;
		best->step_time = T;
		best->mem_peak = peak;
		/* T is 0 for a model with nothing to compute (an Identity) */
		best->samples_per_s = T > 0 ? (double)best->batch / T : 0;
		double flops = fwd_flops * (s->env->train ? 3 : 1) * s->m;
		best->mfu = T > 0 ? flops / (T * s->c->ndevices * s->env->peak_flops) : 0;
		*have = true;
	}
}

/* The stage assignment dr timed again with each stage whose gradient
 * reduction the backward pass hides re-solved with that reduction
 * overlapped (inter_layer_opts): the layers' objective charges it in full
 * and so may shard weights to shrink it, at a cost per micro-batch that
 * the step does pay. Kept (try_schedules) where faster. */
static int try_overlap(const struct search *s, const struct ir_graph *g, const struct stage_dp_result *dr, int64_t b,
		       double fwd_flops, struct inter_plan *best, bool *have, double *t_min)
{
	int np = dr->nstages, ncfg = s->ms->ncfg, nsolved = 0, rc = 0;
	size_t ncost = (size_t)s->L * (size_t)ncfg;
	if (!s->env->train || np > 64)
		return 0;
	bool *want = ir_calloc(ncost + 1, sizeof *want), over[64] = { 0 }, any = false;
	struct inter_layer_cost *cost = ir_malloc(sizeof *cost * (ncost + 1));
	if (!want || !cost) {
		ir_free(want);
		ir_free(cost);
		return ir_errorf(-ENOMEM, "out of memory in the inter-op pass");
	}
	memcpy(cost, s->cost, sizeof *cost * ncost);
	for (int i = 0; i < np; i++) {
		const struct stage_dp_stage *st = &dr->stages[i];
		struct inter_layer_cost sum;
		int opt;
		int k = config_of(s, st->mesh, st->config, &opt);
		if ((opt & OPT_LEAN) || !range(s, st->first, st->last, k, opt, &sum) || sum.t_sync <= 0 ||
		    sum.t_sync > sum.t_mb * 2 / 3)
			continue;
		over[i] = any = true;
		for (int x = st->first; x <= st->last; x++)
			want[(size_t)x * (size_t)ncfg + (size_t)k] = true;
	}
	if (any)
		rc = inter_layer_costs(s->env, g, s->cl, ncfg, s->ms->cfg, s->m, want, cost, NULL, &nsolved);
	if (any && rc == 0) {
		struct search again = *s;
		again.cost = cost;
		again.overlap = over;
		try_schedules(&again, dr, b, fwd_flops, best, have, t_min);
		best->nsolved += nsolved;
	}
	ir_free(want);
	ir_free(cost);
	return rc;
}

/* Micro-batch sizes to try first for global batch B: the static batch,
 * or B and the powers of two dividing it, largest first (at most max). */
static int batch_candidates(const struct inter_opts *o, int64_t B, int64_t *cand, int max)
{
	int n = 0;
	if (o->static_batch > 0) {
		cand[n++] = o->static_batch;
		return n;
	}
	if (o->micro > 0) {
		cand[n++] = B / o->micro;
		return n;
	}
	cand[n++] = B;
	for (int64_t b = (int64_t)1 << 40; b >= 1 && n < max; b >>= 1)
		if (b < B && B % b == 0 && B / b <= PLAN_MAX_MICRO)
			cand[n++] = b;
	return n;
}

int inter_batch_between(int64_t B, int64_t best, int64_t *cand, int max)
{
	int n = 0;
	int64_t lo = best / 2, hi = best * 2 < B ? best * 2 : B;
	for (int64_t d = B / hi; d <= B / (lo > 0 ? lo : 1) && n < max; d++) {
		int64_t b = B / d;
		if (d > 0 && d <= PLAN_MAX_MICRO && B % d == 0 && b >= lo && b < hi && (b & (b - 1)) != 0)
			cand[n++] = b;
	}
	for (int i = 1; i < n; i++) /* nearest to best first (ratio) */
		for (int j = i; j > 0; j--) {
			double a = fabs(log((double)cand[j] / (double)best)),
			       p = fabs(log((double)cand[j - 1] / (double)best));
			if (a >= p)
				break;
			int64_t t = cand[j];
			cand[j] = cand[j - 1];
			cand[j - 1] = t;
		}
	return n;
}

static int check_batch(const struct inter_opts *o, int64_t *B)
{
	int64_t b0 = o->static_batch;
	if (*B == 0)
		*B = b0 > 0 ? b0 * (o->micro > 0 ? o->micro : 1) : 0;
	if (*B <= 0)
		return ir_errorf(-EINVAL, "the model's batch dimension is symbolic: give --batch B (samples per step)");
	if (o->micro > PLAN_MAX_MICRO)
		return ir_errorf(-EINVAL, "--micro-batches %d: a step holds at most %d micro-batches", o->micro,
				 PLAN_MAX_MICRO);
	if (b0 > 0 && *B / b0 > PLAN_MAX_MICRO) /* before any work: the plan could not hold them */
		return ir_errorf(-EINVAL,
				 "--batch %lld is %lld micro-batches of the model's %lld samples; a step holds at "
				 "most %d (the largest valid batch is %lld)",
				 (long long)*B, (long long)(*B / b0), (long long)b0, PLAN_MAX_MICRO,
				 (long long)(b0 * PLAN_MAX_MICRO));
	if (b0 > 0 && *B < b0)
		return ir_errorf(-EINVAL,
				 "--batch %lld is smaller than the model's batch %lld (the micro-batch "
				 "size): the smallest valid is %lld",
				 (long long)*B, (long long)b0, (long long)b0);
	if (b0 > 0 && *B % b0)
		return ir_errorf(-EINVAL,
				 "--batch %lld is not a multiple of the model's batch %lld (the micro-batch "
				 "size): the nearest valid are %lld and %lld",
				 (long long)*B, (long long)b0, (long long)(*B / b0 * b0),
				 (long long)((*B / b0 + 1) * b0));
	if (b0 > 0 && o->micro > 0 && *B != b0 * o->micro)
		return ir_errorf(-EINVAL,
				 "--batch %lld with %d micro-batches of the model's %lld samples: the batch "
				 "would be %lld",
				 (long long)*B, o->micro, (long long)b0, (long long)(b0 * o->micro));
	if (b0 == 0 && o->micro > 0 && *B % o->micro) {
		int64_t lo = *B / o->micro * o->micro;
		return ir_errorf(-EINVAL,
				 "--batch %lld does not split into %d micro-batches: the nearest valid "
				 "batches are %lld and %lld",
				 (long long)*B, o->micro, (long long)(lo ? lo : o->micro), (long long)(lo + o->micro));
	}
	return 0;
}

static double graph_flops(const struct ir_graph *g)
{
	double f = 0;
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		f += ir_node_flops(ir_graph_node(g, i));
	return f;
}

/* How the stage count was forced, for messages: "--stages 4", or
 * "--mesh 1x2 (4 stages of 2 devices)", or a manual plan's "plan pp=4". */
static const char *forced_str(const struct inter_opts *o, int P, char *buf, size_t n)
{
	if (o->manual_tp && o->stages > 0)
		snprintf(buf, n, "plan pp=%d", o->stages);
	else if (o->stages > 0)
		snprintf(buf, n, "--stages %d", o->stages);
	else
		snprintf(buf, n, "--mesh %dx%d (%d stage%s of %d device%s)", o->mesh0, o->mesh1, P, P == 1 ? "" : "s",
			 o->mesh0 * o->mesh1, o->mesh0 * o->mesh1 == 1 ? "" : "s");
	return buf;
}

/* The layers of g: o->layers, or as many as clustering finds, but at
 * least the forced stage count P (a stage holds at least one layer). */
static int layers_of(const struct ir_graph *g, const struct inter_opts *o, int P, struct cluster_result *cl)
{
	struct cluster_opts co;
	inter_cluster_opts(o, &co);
	int rc = cluster_layers(g, &co, cl);
	if (rc < 0 || cl->nlayers >= P)
		return rc;
	cluster_result_free(cl);
	co.layers = P;
	if ((rc = cluster_layers(g, &co, cl)) < 0) {
		char why[96];
		ir_error_prefix("%s: more stages than the model has layers", forced_str(o, P, why, sizeof why));
	}
	return rc;
}

/* The forced stage count *P (0: searched) after checking that cluster c
 * and the sub-meshes ms (made with the forced mesh) can take it. */
static int forced_stages(const struct cost_cluster *c, const struct inter_opts *o, const struct meshes *ms,
			 int per_node, int *P)
{
	int D = c->ndevices, d = o->mesh0 * o->mesh1;
	*P = o->stages;
	if (o->stages < 0 || o->mesh0 < 0 || o->mesh1 < 0 || (o->mesh0 > 0) != (o->mesh1 > 0))
		return ir_errorf(-EINVAL, "stages %d and mesh %dx%d: expected 0 (searched) or positive sizes",
				 o->stages, o->mesh0, o->mesh1);
	if (o->stages > D)
		return ir_errorf(-EINVAL,
				 "--stages %d: more stages than the %d devices of cluster %s (a stage "
				 "needs at least one)",
				 o->stages, D, c->name);
	if (d > 0 && ms->nmesh == 0) {
		int rows[MAX_SUBMESH], cols[MAX_SUBMESH];
		int n = stage_submeshes(c->nodes, per_node, rows, cols, MAX_SUBMESH);
		char sizes[256];
		for (int k = 0, at = 0; k < n && at < (int)sizeof sizes - 16; k++)
			at += snprintf(sizes + at, sizeof sizes - (size_t)at, "%s%d", k ? ", " : "", rows[k] * cols[k]);
		return ir_errorf(-EINVAL,
				 "--mesh %dx%d: no sub-mesh of cluster %s has %d devices (its sub-meshes "
				 "have %s)",
				 o->mesh0, o->mesh1, c->name, d, sizes);
	}
	if (d > 0 && o->stages > 0 && d * o->stages != D)
		return ir_errorf(-EINVAL,
				 "--stages %d with --mesh %dx%d takes %d devices, cluster %s has %d (a plan "
				 "uses every device)",
				 o->stages, o->mesh0, o->mesh1, d * o->stages, c->name, D);
	if (d > 0 && D % d)
		return ir_errorf(-EINVAL, "--mesh %dx%d: the %d devices of cluster %s do not split into stages of %d",
				 o->mesh0, o->mesh1, D, c->name, d);
	if (d > 0)
		*P = D / d;
	char why[96];
	if (o->layers > 0 && *P > o->layers)
		return ir_errorf(-EINVAL,
				 "%s: more stages than the %d layers of --layers (a stage holds at least "
				 "one layer)",
				 forced_str(o, *P, why, sizeof why), o->layers);
	if (*P > 64) /* try_schedules' arrays */
		return ir_errorf(-EINVAL, "%s: more than 64 stages", forced_str(o, *P, why, sizeof why));
	return 0;
}

/* search_one's answer for a micro-batch size the loader cannot build. */
#define SKIPPED 1

/* One micro-batch size: cluster, cost, DP; improves *best; *t_here: the
 * fastest plan of this size that fits (INFINITY: none). SKIPPED, the
 * loader's message in ir_error(), when a symbolic batch cannot be bound
 * to b (a Reshape grouping samples in twos cannot take one). */
static int search_one(const struct inter_env *env, const struct inter_opts *o, int64_t b, int m,
		      const struct meshes *ms, struct inter_plan *best, bool *have, double *t_here, double *least_mem,
		      double *least_layer)
{
	*t_here = INFINITY;
	struct ir_graph *g = o->load(o->ctx, b);
	if (!g && o->static_batch <= 0 && ir_error_code() != -ENOMEM)
		return SKIPPED;
	if (!g)
		return ir_error_code() ? ir_error_code() : -EINVAL;
	struct cluster_result cl;
	int rc = layers_of(g, o, env->stages, &cl);
	int v = o->v > 0 ? o->v : 2; /* held interleaved: each chunk at least a layer */
	if (rc == 0 && o->sched == COST_SCHED_INTERLEAVED && env->stages > 0 && cl.nlayers < env->stages * v) {
		rc = ir_errorf(-EINVAL,
			       "interleaved 1F1B with %d chunks per device: %d stages take %d layers at least, the "
			       "model has %d",
			       v, env->stages, env->stages * v, cl.nlayers);
		cluster_result_free(&cl);
	}
	if (rc < 0) {
		ir_graph_free(g);
		return rc;
	}
	int L = cl.nlayers, nsolved = 0, nx = ms->nmesh * ms->maxc * NOPT; /* (mesh, config, options) */
	size_t ncost = (size_t)L * (size_t)ms->ncfg;
	struct inter_layer_cost *cost = ir_calloc(ncost * (env->train ? 2 : 1), sizeof *cost);
	struct inter_layer_cost *lean = env->train && cost ? cost + ncost : NULL;
	double *t = ir_malloc(sizeof *t * (size_t)L * (size_t)L * (size_t)nx);
	double *xf = ir_malloc(sizeof *xf * (size_t)L * (size_t)ms->nmesh);
	if (!cost || !t || !xf)
		rc = ir_errorf(-ENOMEM, "out of memory in the inter-op pass");
	struct inter_step_mem real = { 0 };
	const struct inter_cache_entry *kept = rc == 0 ? cache_find(o->cache, b, m, L, ms->ncfg) : NULL;
	if (kept) { /* solved by a search before this one */
		memcpy(cost, kept->cost, sizeof *cost * kept->ncost);
		if (step_mem_copy(&kept->real, &real) < 0)
			rc = ir_errorf(-ENOMEM, "out of memory in the inter-op pass");
	} else {
		if (rc == 0)
			rc = inter_layer_costs(env, g, &cl, ms->ncfg, ms->cfg, m, NULL, cost, lean, &nsolved);
		if (rc == 0 && env->train && o->lowered_memory)
			rc = inter_step_measure(env, o, b, m, g, &cl, &real);
		if (rc == 0)
			cache_keep(o->cache, b, m, L, ms->ncfg, cost, ncost * (env->train ? 2 : 1), &real);
	}
	struct range_memo memo = { 0 };
	struct search s = { .env = env,
			    .memo = &memo,
			    .c = env->c,
			    .cl = &cl,
			    .ms = ms,
			    .L = L,
			    .m = m,
			    .cost = cost,
			    .lean = lean,
			    .real = &real,
			    .b = b };
	if (rc == 0) {
		/* lower bounds on any pipeline: the largest layer alone on its
		 * leanest mesh, and every layer's bytes over all devices spread evenly */
		double worst_layer = 0, total = 0;
		for (int l = 0; l < L; l++) {
			double least = INFINITY, least_total = INFINITY;
			for (int r = 0; r < L; r++)
				for (int x = 0; x < nx; x++) {
					struct inter_layer_cost sum;
					int opt;
					int k = config_of(&s, x / (NOPT * ms->maxc), x % (NOPT * ms->maxc), &opt);
					double *at = &t[((size_t)l * (size_t)L + (size_t)r) * (size_t)nx + (size_t)x];
					*at = r >= l && k >= 0 && range(&s, l, r, k, opt, &sum)
						      ? sum.t_mb + once_per_step(&sum) / m
						      : INFINITY;
					if (!isfinite(*at))
						continue;
					double mem = sum.mem_state + sum.mem_act + stage_once(&sum, 1);
					if (r == L - 1 && l == 0)
						*least_mem = fmin(*least_mem, mem);
					if (r == l) {
						least = fmin(least, mem);
						/* a working set is held once per stage, not per layer */
						least_total = fmin(least_total, (sum.mem_state + sum.mem_act) *
											ms->dev[x / (NOPT * ms->maxc)]);
					}
				}
			worst_layer = fmax(worst_layer, least);
			total += least_total;
		}
		*least_layer = fmin(*least_layer, fmax(worst_layer, total / env->c->ndevices));
		for (int r = 0; r < L; r++)
			for (int x = 0; x < ms->nmesh; x++)
				xf[r * ms->nmesh + x] = xfer_time(&s, r, ms->dev[x]);
		struct stage_dp_problem p = {
			.nlayers = L,
			.nmeshes = ms->nmesh,
			.mesh_devices = ms->dev,
			.nconfigs = NOPT * ms->maxc,
			.ndevices = env->c->ndevices,
			.nmicro = m,
			.t = t,
			.xfer = xf,
			.fits = fits,
			.ctx = &s,
			.max_stages = env->stages ? env->stages : 64, /* try_schedules' arrays */
			.min_stages = env->stages,
		};
		struct stage_dp_result dr;
		int drc = stage_dp_solve(&p, &dr);
		char why[96];
		if (drc == 0) {
			try_schedules(&s, &dr, b, graph_flops(g), best, have, t_here);
			rc = try_overlap(&s, g, &dr, b, graph_flops(g), best, have, t_here);
			/* the plan without a pipeline, weighed too: the DP's step
			 * time is the schedule simulator's only up to transfers */
			if (rc == 0 && dr.nstages > 1 && !env->stages) {
				struct stage_dp_result one;
				p.min_stages = p.max_stages = 1;
				if (stage_dp_solve(&p, &one) == 0) {
					try_schedules(&s, &one, b, graph_flops(g), best, have, t_here);
					rc = try_overlap(&s, g, &one, b, graph_flops(g), best, have, t_here);
				}
				stage_dp_result_free(&one);
			}
			stage_dp_result_free(&dr);
		} else if (drc != -ENOSPC && env->stages) {
			rc = ir_errorf(drc, "%s: %s", forced_str(o, env->stages, why, sizeof why), shard_error());
		} else if (drc != -ENOSPC) {
			rc = ir_errorf(drc, "%s", shard_error());
		}
	}
	best->nsolved += nsolved;
	inter_step_mem_free(&real);
	ir_free(cost);
	ir_free(t);
	ir_free(xf);
	cluster_result_free(&cl);
	ir_graph_free(g);
	return rc;
}

/* The -ENOSPC of a search that found no plan: the least memory per
 * device any plan needs (least: one stage; least_layer: a pipeline) and
 * the limit. */
static int not_fit(const struct cost_cluster *c, const struct inter_opts *o, int P, double least, double least_layer,
		   double limit)
{
	char need[IR_BYTES_STRLEN], pipe[IR_BYTES_STRLEN], have_b[IR_BYTES_STRLEN], why[96];
	if (P > 0 && isfinite(least_layer))
		return ir_errorf(-ENOSPC,
				 "%s: no plan of %d stage%s fits cluster %s: a pipeline needs at least %s "
				 "per device (its largest layer alone, or all layers spread evenly, one micro-batch in "
				 "flight); the limit is %s",
				 forced_str(o, P, why, sizeof why), P, P == 1 ? "" : "s", c->name,
				 ir_bytes_str(least_layer, pipe), ir_bytes_str(limit, have_b));
	if (P > 0)
		return ir_errorf(-ENOSPC,
				 "%s: no plan of %d stage%s fits cluster %s: some layer fits no allowed "
				 "sub-mesh's %s per device, even fully sharded",
				 forced_str(o, P, why, sizeof why), P, P == 1 ? "" : "s", c->name,
				 ir_bytes_str(limit, have_b));
	if (isfinite(least_layer))
		return ir_errorf(-ENOSPC,
				 "the model does not fit cluster %s: as one stage it needs %s%s per "
				 "device, as a pipeline at least %s (its largest layer alone, or all layers "
				 "spread evenly, one micro-batch in flight); the limit is %s",
				 c->name, isfinite(least) ? "at least " : "",
				 isfinite(least) ? ir_bytes_str(least, need) : "more than the cluster",
				 ir_bytes_str(least_layer, pipe), ir_bytes_str(limit, have_b));
	return ir_errorf(-ENOSPC,
			 "the model does not fit cluster %s: some layer fits no sub-mesh's "
			 "%s per device, even fully sharded",
			 c->name, ir_bytes_str(limit, have_b));
}

/* The micro-batch sizes the loader could not build, ascending, each with
 * the loader's message. */
#define MAX_SKIPS 64
#define SKIP_WHY 384
struct skips {
	int n;
	int64_t size[MAX_SKIPS];
	char why[MAX_SKIPS][SKIP_WHY];
	int same; /* a message two sizes share (it does not depend on the size), or -1 */
};

/* Records size b, which failed with msg (at most MAX_SKIPS sizes), and
 * whether another size failed with the same message. */
static void skip_note(struct skips *sk, int64_t b, const char *msg)
{
	char m[SKIP_WHY];
	snprintf(m, sizeof m, "%s", msg);
	for (int k = 0; k < sk->n && sk->same < 0; k++)
		if (!strcmp(sk->why[k], m))
			sk->same = k;
	if (sk->n == MAX_SKIPS)
		return;
	int i = sk->n++;
	for (; i > 0 && sk->size[i - 1] > b; i--) {
		sk->size[i] = sk->size[i - 1];
		memcpy(sk->why[i], sk->why[i - 1], SKIP_WHY);
	}
	sk->same += sk->same >= i;
	sk->size[i] = b;
	memcpy(sk->why[i], m, SKIP_WHY);
}

static bool skipped(const struct skips *sk, int64_t b)
{
	for (int i = 0; i < sk->n; i++)
		if (sk->size[i] == b)
			return true;
	return false;
}

/* Sizes probed for the smallest that builds: 1..PROBE_DENSE, then powers
 * of two up to PROBE_MAX, at most PROBE_SECONDS (each is an import). */
#define PROBE_DENSE 64
#define PROBE_MAX (INT64_C(1) << 20)
#define PROBE_SECONDS 10.0

/* No candidate size could be built: the loader's reason at the smallest,
 * the sizes tried and the smallest size that builds (probed upwards). A
 * reason that two sizes share does not depend on the size (an
 * unsupported op): it is the error, as it is. */
static int no_size(const struct inter_opts *o, int64_t B, struct skips *sk)
{
	char sizes[256] = "", tail[96], why[SKIP_WHY];
	int ntried = sk->n;
	memcpy(why, sk->why[0], sizeof why); /* probes may add smaller sizes */
	for (int i = 0, at = 0; i < ntried && at < (int)sizeof sizes - 32; i++)
		at += snprintf(sizes + at, sizeof sizes - (size_t)at, "%s%lld",
			       i == 0            ? ""
			       : i == ntried - 1 ? " and "
						 : ", ",
			       (long long)sk->size[i]);
	int64_t works = 0, last = 0;
	double t0 = ir_now();
	for (int64_t b = 1; sk->same < 0 && b <= PROBE_MAX && ir_now() - t0 < PROBE_SECONDS;
	     b = b < PROBE_DENSE ? b + 1 : 2 * b) {
		if (skipped(sk, b))
			continue;
		last = b;
		struct ir_graph *g = o->load(o->ctx, b);
		if (g) {
			ir_graph_free(g);
			works = b;
			break;
		}
		if (ir_error_code() == -ENOMEM)
			return -ENOMEM;
		skip_note(sk, b, ir_error());
	}
	if (sk->same >= 0)
		return ir_errorf(-EINVAL, "%s", sk->why[sk->same]);
	if (works)
		snprintf(tail, sizeof tail, "the smallest that works is %lld", (long long)works);
	else
		snprintf(tail, sizeof tail, "no size up to %lld works either", (long long)last);
	if (o->micro > 0)
		return ir_errorf(-EINVAL,
				 "%s: micro-batch size %s (--micro-batches %d of a batch of %lld) cannot be shaped; %s",
				 why, sizes, o->micro, (long long)B, tail);
	return ir_errorf(-EINVAL,
			 "%s: micro-batch size%s %s (every one tried for a batch of %lld) cannot be shaped; %s", why,
			 ntried == 1 ? "" : "s", sizes, (long long)B, tail);
}

int inter_pass(const struct cost_cluster *c, const struct inter_opts *o, struct inter_plan *p)
{
	memset(p, 0, sizeof *p);
	double t0 = ir_now();
	struct inter_env env = { .c = c,
				 .train = o->train,
				 .optim = o->optim,
				 .prec = o->prec,
				 .cal = o->cal,
				 .opts = o,
				 .no_interleaved = o->no_interleaved };
	struct cost_device dev;
	cost_cluster_effective(c, &dev, &env.intra, &env.inter, &env.per_node);
	enum cost_prec prec = o->prec >= 0 ? (enum cost_prec)o->prec : cost_default_prec(&dev);
	bool mixed = prec == COST_PREC_BF16 || prec == COST_PREC_F16 || prec == COST_PREC_FP8;
	cost_state_bytes_per_param(o->optim, mixed, &env.state);
	env.peak_flops = cost_device_peak(&dev, prec);
	env.elem_scale = mixed ? 0.5 : 1;
	env.mem_limit = o->mem_limit > 0 ? o->mem_limit : 0.9 * dev.mem_bytes;
	if (o->micro < 0 || o->layers < 0)
		return ir_errorf(-EINVAL, "micro-batches %d and layers %d must not be negative", o->micro, o->layers);
	if (o->sched >= COST_SCHED_COUNT || o->v < 0 || (o->v > 1 && o->sched != COST_SCHED_INTERLEAVED))
		return ir_errorf(-EINVAL,
				 "schedule %d with %d chunks per device: expected -1 (searched) or a "
				 "schedule, and chunks only for interleaved 1F1B",
				 o->sched, o->v);
	if (o->zero < -1 || o->zero > 3 || (o->zero >= 2 && !o->manual_tp))
		return ir_errorf(-EINVAL,
				 "ZeRO stage %d: expected -1 (searched), 0 or 1, or with a manual plan's layout 2 or 3",
				 o->zero);
	int64_t B = o->batch;
	int rc = check_batch(o, &B);
	if (rc < 0)
		return rc;
	struct meshes *ms = ir_malloc(sizeof *ms);
	if (!ms)
		return ir_errorf(-ENOMEM, "out of memory in the inter-op pass");
	meshes_make(c, env.per_node, o->mesh0, o->mesh1, ms);
	if ((rc = forced_stages(c, o, ms, env.per_node, &env.stages)) < 0) {
		ir_free(ms);
		return rc;
	}
	if (o->sched == COST_SCHED_INTERLEAVED && env.stages == 1)
		rc = ir_errorf(-EINVAL, "interleaved 1F1B: one stage has no pipeline to interleave");
	else if (o->sched == COST_SCHED_INTERLEAVED && env.stages > 1 && o->micro % env.stages)
		rc = ir_errorf(-EINVAL, "interleaved 1F1B: %d micro-batches are not a multiple of the %d stages",
			       o->micro, env.stages);
	if (rc < 0) {
		ir_free(ms);
		return rc;
	}
	int64_t cand[48];
	int nc = batch_candidates(o, B, cand, 48), ntried = 0;
	bool have = false;
	double least = INFINITY, least_layer = INFINITY;
	struct skips *sk = ir_calloc(1, sizeof *sk);
	if (!sk) {
		ir_free(ms);
		return ir_errorf(-ENOMEM, "out of memory in the inter-op pass");
	}
	sk->same = -1;
	/* Smallest first. Once a size has no plan that fits, larger ones (more
	 * activations per micro-batch) have none either; the step time over
	 * the size is U-shaped (small kernels and per-micro-batch costs on the
	 * left, the pipeline's bubble on the right), so two sizes in a row
	 * slower than the best by a tenth end the climb. A size that cannot
	 * be built is passed over. */
	for (int i = nc - 1, worse = 0; i >= 0 && rc == 0 && worse < 2; i--) {
		double t;
		ntried++;
		progress_phase(0, "search: micro-batch size %lld (%d of at most %d), layer solves", (long long)cand[i],
			       ntried, nc);
		rc = search_one(&env, o, cand[i], (int)(B / cand[i]), ms, p, &have, &t, &least, &least_layer);
		if (rc == SKIPPED) {
			skip_note(sk, cand[i], ir_error());
			rc = 0;
			continue;
		}
		if (have && !isfinite(t))
			break;
		worse = have && t > 1.1 * p->step_time ? worse + 1 : 0;
	}
	if (rc == 0 && have && o->static_batch <= 0 && o->micro <= 0) {
		int64_t more[8];
		int nm = inter_batch_between(B, p->micro_batch, more, 8);
		double t;
		for (int i = 0; i < nm && rc == 0; i++) {
			progress_phase(
				0, "search: micro-batch size %lld (between the best and its neighbours), layer solves",
				(long long)more[i]);
			rc = search_one(&env, o, more[i], (int)(B / more[i]), ms, p, &have, &t, &least, &least_layer);
			if (rc == SKIPPED) {
				skip_note(sk, more[i], ir_error());
				rc = 0;
			}
		}
	}
	ir_free(ms);
	if (rc == 0 && !have && sk->n == ntried)
		rc = no_size(o, B, sk);
	else if (rc == 0 && !have)
		rc = not_fit(c, o, env.stages, least, least_layer, env.mem_limit);
	p->nskipped = sk->n;
	p->skipped_size = sk->n ? sk->size[0] : 0;
	snprintf(p->skipped_why, sizeof p->skipped_why, "%s", sk->n ? sk->why[0] : "");
	ir_free(sk);
	if (rc < 0) {
		inter_plan_free(p);
		return rc;
	}
	inter_alt_mark(p);
	p->devices = c->ndevices;
	p->mem_limit = env.mem_limit;
	p->search_s = ir_now() - t0;
	return 0;
}
