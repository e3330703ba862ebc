/*
 * intra.c: the intra-op pass's entry point: check the options, build the
 * strategy problem (intra_build.c), solve it (solvers/), check the answer
 * with the independent evaluator, write the shardings onto the graph and
 * list the collectives the plan runs.
 *
 * Precondition: g verified, static shapes. Postcondition on success: every
 * value of g carries a sharding on mesh o->n0 x o->n1.
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "compiler/search/intra_internal.h"

#define INTRA_MAX_ANNOTATED 8 /* operands annotated from a buffer on the stack; more: the heap */

/* Solves cut short by the time limit, over every thread (intra_timeouts). */
static atomic_int timeouts;

int intra_timeouts(void)
{
	return atomic_load(&timeouts);
}

void intra_opts_init(struct intra_opts *o)
{
	memset(o, 0, sizeof *o);
	o->n0 = o->n1 = 1;
	o->optim = COST_OPT_ADAM;
	o->prec = -1;
	o->time_limit = INTRA_TIME_LIMIT;
	o->step_share = 1;
	o->sync_share = -1;
}

static int make_env(struct intra_env *env, const struct cost_cluster *c, const struct intra_opts *o)
{
	if (o->n0 < 1 || o->n1 < 1)
		return ir_errorf(-EINVAL, "mesh %dx%d: each axis needs at least one device", o->n0, o->n1);
	if ((long)o->n0 * o->n1 > c->ndevices)
		return ir_errorf(-EINVAL, "mesh %dx%d needs %d devices, cluster %s has %d", o->n0, o->n1, o->n0 * o->n1,
				 c->name, c->ndevices);
	int rc = cost_mesh_make(c, o->n0, o->n1, &env->mesh);
	if (rc < 0) {
		ir_error_prefix("mesh %dx%d on cluster %s", o->n0, o->n1, c->name);
		return rc;
	}
	cost_cluster_effective(c, &env->dev, NULL, NULL, NULL);
	if (o->cal)
		env->cal = *o->cal;
	else if (c->cpu)
		cost_calib_host(&env->cal);
	else
		cost_calib_init(&env->cal);
	env->prec = o->prec >= 0 ? (enum cost_prec)o->prec : cost_default_prec(&env->dev);
	bool mixed = env->prec == COST_PREC_BF16 || env->prec == COST_PREC_F16 || env->prec == COST_PREC_FP8;
	env->elem_bytes = mixed && !o->step_dtypes ? 2 : 0;
	env->train = o->train;
	env->zero = o->train ? o->zero : 0;
	env->step_share = o->step_share > 0 ? o->step_share : 1;
	env->sync_share = o->sync_share >= 0 ? o->sync_share : env->step_share;
	env->inputs_resident = o->inputs_resident;
	env->host = c->cpu;
	env->inputs_kept_before = o->inputs_kept_before;
	env->state_price = o->train && o->state_price > 0 ? o->state_price : 0;
	cost_state_bytes_per_param(o->optim, mixed, &env->state);
	return 0;
}

int intra_annotate(struct ir_graph *g, const struct intra_state *st)
{
	struct ir_sharding in[INTRA_MAX_ANNOTATED];
	ir_graph_set_mesh(g, st->env.mesh.n0, st->env.mesh.n1);
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		const struct intra_strat *s = intra_chosen(st, u);
		int nout = x->node ? x->node->nout : 1;
		for (int k = 0; k < nout; k++) {
			struct ir_value *v = x->node ? x->node->out[k] : (struct ir_value *)x->value;
			v->sharded = true;
			v->sharding = s->out;
		}
		if (!x->node || !x->node->nin)
			continue;
		struct ir_node *n = (struct ir_node *)x->node;
		struct ir_sharding *ins = n->nin <= INTRA_MAX_ANNOTATED ? in : ir_malloc(sizeof *ins * (size_t)n->nin);
		if (!ins)
			return ir_errorf(-ENOMEM, "out of memory annotating the graph");
		for (int j = 0; j < n->nin; j++)
			intra_operand_spec(&x->lab, s, j, n->in[j]->shape.rank, &ins[j]);
		int rc = ir_node_set_in_sharding(g, n, ins);
		if (ins != in)
			ir_free(ins);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int push_event(struct intra_result *r, int *cap, const struct intra_event *ev)
{
	if (r->nevents == *cap) {
		int nc = *cap ? 2 * *cap : 64;
		struct intra_event *e = ir_realloc(r->events, sizeof *e * (size_t)nc);
		if (!e)
			return ir_errorf(-ENOMEM, "out of memory listing collectives");
		r->events = e;
		*cap = nc;
	}
	r->events[r->nevents++] = *ev;
	return 0;
}

/* bwd: 0 forward, 1 backward, 2 backward once per step (a weight's gradient) */
static int push_colls(struct intra_result *r, int *cap, const struct intra_coll *c, int node, int operand, int bwd)
{
	for (int i = 0; i < c->n; i++) {
		struct intra_event ev = {
			node, operand, bwd > 0, c->op[i], c->axis[i], c->bytes[i], c->t[i], bwd == 2
		};
		if (push_event(r, cap, &ev) < 0)
			return -ENOMEM;
		r->t_comm += c->t[i];
	}
	return 0;
}

/* Lists every collective of the chosen plan and sums compute and
 * communication (they add up to the objective up to rounding). */
static int list_events(struct intra_result *r, const struct intra_state *st, const struct ir_graph *g)
{
	int cap = 0;
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		const struct intra_strat *s = intra_chosen(st, u);
		r->t_compute += s->t_compute;
		if (s->own_axis >= 0) {
			struct intra_coll c = {
				1, { COST_ALL_REDUCE }, { s->own_axis }, { s->own_bytes }, { s->t_own }
			};
			if (push_colls(r, &cap, &c, x->node->id, -1, 0) < 0)
				return -ENOMEM;
		}
		if (!x->node)
			continue;
		for (int j = 0; j < x->node->nin; j++) {
			const struct ir_value *v = x->node->in[j];
			int pu = st->value_unit[v->id];
			const struct intra_strat *src = intra_chosen(st, pu);
			struct ir_sharding dst;
			struct intra_coll c;
			intra_operand_spec(&x->lab, s, j, v->shape.rank, &dst);
			intra_reshard(&st->env, v, &src->out, &dst, false, &c);
			if (push_colls(r, &cap, &c, x->node->id, j, 0) < 0)
				return -ENOMEM;
			if (intra_reads_operand(st, x->node, j)) {
				struct intra_coll ag = { 0 };
				for (int i = 0; i < c.n; i++)
					if (c.op[i] == COST_ALL_GATHER && ag.n < 4) {
						ag.op[ag.n] = c.op[i];
						ag.axis[ag.n] = c.axis[i];
						ag.bytes[ag.n] = c.bytes[i];
						ag.t[ag.n++] = c.t[i];
					}
				if (push_colls(r, &cap, &ag, x->node->id, j, 1) < 0)
					return -ENOMEM;
			}
			if (!st->grad[v->id])
				continue;
			struct ir_sharding gsrc = dst, gdst = src->out;
			gsrc.partial = intra_grad_partial(&x->lab, s, j, v->shape.rank);
			gdst.partial = 0;
			intra_reshard(&st->env, v, &gsrc, &gdst, st->weight[v->id], &c);
			if (push_colls(r, &cap, &c, x->node->id, j, st->weight[v->id] ? 2 : 1) < 0)
				return -ENOMEM;
		}
	}
	(void)g;
	return 0;
}

/* ZeRO-3 (intra_opts.zero 3): each trained parameter, split over its
 * copies, is all-gathered over mesh axis 0 (the data-parallel replicas of
 * a manual plan) for its first reader's forward and again for the
 * backward, every micro-batch: two all-gathers of the bytes one device
 * holds without the split, in the objective, the communication and the
 * events (at that reader), and the gathered parameters of the graph held
 * at its peak. Added to the solved plan: under a manual plan's layout
 * (intra_opts.manual_tp) they do not change which sharding is best. */
static int zero3_gathers(struct intra_result *r, const struct intra_state *st, const struct ir_graph *g)
{
	if (st->env.zero < 3 || st->env.mesh.n0 < 2)
		return 0;
	int nv = ir_graph_nvalues(g), cap = r->nevents;
	int *reader = ir_malloc(((size_t)nv + 1) * sizeof *reader);
	if (!reader)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int v = 0; v <= nv; v++)
		reader[v] = -1;
	for (int i = ir_graph_nnodes(g) - 1; i >= 0; i--) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++)
			reader[n->in[j]->id] = n->id;
	}
	double held = 0;
	int rc = 0;
	for (int u = 0; u < st->nunits && rc == 0; u++) {
		const struct intra_unit *x = &st->unit[u];
		double b[3];
		intra_state_split(st, x, x->map[st->choice[x->group]], 0, b);
		if (b[0] <= 0 || reader[x->value->id] < 0)
			continue;
		double t = cost_collective(&st->env.mesh.ax[0], COST_ALL_GATHER, b[0], NULL);
		for (int bwd = 0; bwd < 2 && rc == 0; bwd++) {
			struct intra_event ev = { reader[x->value->id], -1, bwd, COST_ALL_GATHER, 0, b[0], t, false };
			rc = push_event(r, &cap, &ev);
			r->t_comm += t;
			r->t_total += t;
		}
		held += b[0];
	}
	r->mem_peak += held;
	ir_free(reader);
	return rc;
}

/* Solves st's problem and fills r from the answer (r->st already st). */
static int solve_fill(struct ir_graph *g, struct intra_state *st, struct intra_result *r)
{
	r->nvars = st->ngroups;
	r->nstrategies = st->prob.strat_off[st->ngroups];
	r->mem_limit = (double)st->prob.usage_limit;
	/* Bounded rounds, windows, simplex iterations and branch-and-bound
	 * nodes: the same graph gets the same plan on any machine, however
	 * loaded, unless the time limit (a far backstop) cuts the search
	 * short, which r->timed_out and intra_timeouts() report. */
	struct shard_solve_params prm;
	shard_solve_params_init(&prm);
	prm.time_limit = st->time_limit;
	prm.max_rounds = 2000;
	prm.lns_windows = 60;
	/* Sized on an idle 2-core host to end about where the old 10 s limit
	 * did: 40000 simplex iterations are 30-42 windows and 5-9 s on GPT-3
	 * 125M and 1.3B, MoE 380M and Wide-ResNet 250M (whose last of 3
	 * improving windows is the 28th), and 40 Lagrangian iterations
	 * (about 55 ms each on GPT-3 1.3B's 4300 merged nodes), past which
	 * its dual bound hardly moves. */
	prm.lns_iterations = 40000;
	/* and they end after 16 windows in a row that improve nothing: on
	 * GPT-3 39B's stages (8-9k nodes) 42 windows made one improvement,
	 * of 0.06%, at the 28th, and took 4.7 of each stage's 6 s */
	prm.lns_patience = 16;
	prm.lagr_iters = 40;
	prm.mip_node_limit = 200;
	/* simplex iterations of the whole problem's root LP: 8-layer GPT-3
	 * slices on 2x4 need up to about 2400; GPT-3 125M's memory-free MIP
	 * (32k columns, 22k iterations, 12 s) stops at 3000 after 1.2 s,
	 * unsolved, as it did at its old time share (0.48 s) */
	prm.mip_it_limit = 3000;
	if (st->quick) { /* local search only: no MIP, no GLPK */
		prm.mip_max_cols = 0;
		prm.lns_windows = 0;
		prm.max_rounds = 200;
	}
	struct shard_eval ev;
	struct shard_solve_stats ss = { 0 };
	prm.stats = &ss;
	double t0 = ir_now();
	int rc = shard_solve(&st->prob, &prm, st->choice, &ev);
	r->solve_s = ir_now() - t0;
	r->timed_out = ss.timed_out;
	if (ss.timed_out)
		atomic_fetch_add(&timeouts, 1);
	if (rc == -ENOSPC) {
		char need[SHARD_I128_STRLEN], lim[IR_BYTES_STRLEN], least[IR_BYTES_STRLEN];
		return ir_errorf(-ENOSPC,
				 "no sharding on mesh %dx%d fits the memory limit of %s per device: the smallest "
				 "needs %s (%s bytes); use more devices, pipeline stages or a higher limit",
				 st->env.mesh.n0, st->env.mesh.n1, ir_bytes_str(r->mem_limit, lim),
				 ir_bytes_str((double)ev.peak_usage, least), shard_i128_str(ev.peak_usage, need));
	}
	if (rc < 0)
		return ir_errorf(rc, "strategy solver: %s", shard_error());
	r->t_total = (double)ev.cost / INTRA_COST_SCALE;
	r->mem_peak = (double)ev.peak_usage;
	if (intra_peak_parts(st, r) < 0)
		return ir_errorf(-ENOMEM, "out of memory");
	int64_t end = 0;
	for (int k = 0; k < st->prob.nnodes; k++)
		end = st->prob.hi[k] > end ? st->prob.hi[k] : end;
	for (int k = 0; k < st->prob.nnodes; k++)
		if (st->prob.hi[k] == end)
			r->mem_end += (double)st->prob.usage[st->prob.strat_off[k] + st->choice[k]];
	for (int i = 0; i < ir_graph_noutputs(g); i++) {
		const struct ir_value *v = ir_graph_output(g, i);
		bool again = false;
		for (int k = 0; k < i; k++)
			again |= ir_graph_output(g, k) == v;
		if (v->kind != IR_VAL_NODE || again)
			continue;
		double b = intra_local_bytes(&st->env, v, &intra_chosen(st, st->value_unit[v->id])->out);
		*(st->saved[v->id] ? &r->mem_out_kept : &r->mem_out) += b;
	}
	for (int i = 0; i < ir_graph_ninputs(g); i++) {
		const struct ir_value *v = ir_graph_input(g, i);
		if (!st->saved[v->id])
			continue;
		double b = intra_local_bytes(&st->env, v, &intra_chosen(st, st->value_unit[v->id])->out);
		r->mem_in_kept += b;
		if (st->env.inputs_kept_before && st->env.inputs_kept_before[i])
			r->mem_in_dup += b;
	}
	for (int u = 0; u < st->nunits; u++) {
		const struct intra_unit *x = &st->unit[u];
		int s = x->map[st->choice[x->group]];
		r->t_optim += intra_optim_time(st, x, s, st->env.zero);
		r->t_optim_nozero += intra_optim_time(st, x, s, false);
		double whole = intra_state_bytes(st, x, s, 0), kept = intra_state_bytes(st, x, s, st->env.zero);
		r->mem_zero_saved += whole - kept;
		double w3[3], k3[3];
		intra_state_split(st, x, s, 0, w3);
		intra_state_split(st, x, s, st->env.zero, k3);
		for (int k = 0; k < 3; k++)
			r->mem_zero_kind[k] += w3[k] - k3[k];
		r->mem_state += kept;
		if (whole > 0) { /* a trained parameter */
			const struct cost_state_bytes *b = &st->env.state;
			r->mem_state_least += (double)ir_shape_numel(&x->value->shape) *
					      (b->params + b->grads + b->optim) /
					      ((double)st->env.mesh.n0 * st->env.mesh.n1);
		}
	}
	r->t_total = fmax(r->t_total - st->env.state_price * r->mem_state, 0); /* the price is no time */
	if ((rc = intra_annotate(g, st)) < 0 || (rc = list_events(r, st, g)) < 0)
		return rc;
	return zero3_gathers(r, st, g);
}

int intra_pass(struct ir_graph *g, const struct cost_cluster *c, const struct intra_opts *o, struct intra_result *r)
{
	memset(r, 0, sizeof *r);
	double t_start = ir_now();
	struct intra_state *st = ir_calloc(1, sizeof *st);
	if (!st)
		return ir_errorf(-ENOMEM, "out of memory");
	int rc = make_env(&st->env, c, o);
	if (rc < 0 || (rc = intra_build(st, g, o)) < 0)
		goto fail;
	r->st = st;
	st->time_limit = o->time_limit > 0 ? o->time_limit : INTRA_TIME_LIMIT;
	st->quick = o->quick;
	st->choice = ir_malloc(sizeof *st->choice * ((size_t)st->ngroups + 1));
	if (!st->choice) {
		rc = ir_errorf(-ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = solve_fill(g, st, r)) < 0)
		goto fail;
	r->pass_s = ir_now() - t_start;
	return 0;
fail:
	r->st = NULL;
	intra_state_free(st);
	ir_free(st);
	intra_result_free(r);
	return rc;
}

int intra_reprice(struct ir_graph *g, double state_price, struct intra_result *r)
{
	double t_start = ir_now();
	struct intra_state *st = r->st;
	if (!st || !st->env.train || !(state_price >= 0))
		return ir_errorf(-EINVAL, "intra_reprice: needs a training result and a price >= 0");
	intra_price_state(st, state_price);
	ir_free(r->events);
	memset(r, 0, sizeof *r);
	r->st = st;
	int rc = solve_fill(g, st, r);
	if (rc < 0) {
		intra_result_free(r);
		return rc;
	}
	r->pass_s = ir_now() - t_start;
	return 0;
}

int intra_node_pieces(const struct intra_result *r, int node)
{
	const struct intra_state *st = r->st;
	IR_ASSERT(st && node >= 0 && node < st->nunits && st->unit[node].node && st->unit[node].node->id == node);
	const struct intra_strat *s = intra_chosen(st, node);
	int n = 1;
	for (int a = 0; a < IR_MESH_AXES; a++)
		if (s->lab[a] >= 0)
			n *= a == 0 ? st->env.mesh.n0 : st->env.mesh.n1;
	return n;
}

void intra_result_free(struct intra_result *r)
{
	if (r->st) {
		intra_state_free(r->st);
		ir_free(r->st);
	}
	ir_free(r->events);
	memset(r, 0, sizeof *r);
}
