/*
 * shard_solve.c: the solver's driver (see solvers.h).
 *
 * 1. Feasibility: the least-usage strategy of every node minimizes every
 *    time point at once, so if it does not fit nothing does (-ENOSPC).
 * 2. Reduction (shard_reduce.c) into a model with far fewer nodes and
 *    strategies (followers merged, leaves and chains eliminated); every
 *    model assignment expands to a full one. Then repeated identical
 *    sub-problems solved once (shard_dedup.c): of the model's connected
 *    components that carry no memory (and so are independent), one per
 *    class of identical ones is searched and its answer copied. First
 *    without the memory limit (2b: every component is then memory-free),
 *    an optimum that fits being the answer.
 * 3. Local search on the model (shard_msearch.c) for a first incumbent;
 *    then, when the model is too big for one MIP, Lagrangian relaxation
 *    of the memory limit (shard_lagr.c: prices per time segment by
 *    subgradient steps, the priced model solved by TRW-S and descent,
 *    each answer repaired into the limit): the constrained search gets
 *    trapped behind memory walls.
 * 4. Exact MIP (shard_mip.c): the whole model when small enough, else
 *    windows around the incumbent (shard_lns.c); local search rounds
 *    with the time that is left.
 * 5. The answer is expanded and re-evaluated by shard_evaluate; if the
 *    model path fails (no finite assignment, no feasible start) the plain
 *    heuristic answers instead.
 *
 * Unbounded (the defaults, the contest's way) the phases take shares of
 * the time limit. Bounded (max_rounds finite, as the compiler calls it)
 * each phase ends at a count: rounds, Lagrangian iterations, windows,
 * simplex iterations (mip_it_limit) and branch-and-bound nodes, so that a
 * loaded machine gets the same answer later; the time limit then only
 * stops the whole solve as a backstop, and stats->timed_out says that it
 * did (every deadline check that fires sets mstate.backstop).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_dedup.h"
#include "solvers/shard_lagr.h"

void shard_solve_params_init(struct shard_solve_params *prm)
{
	prm->time_limit = 10.0;
	prm->mip_gap = 1e-6;
	prm->seed = 1;
	prm->verbose = false;
	prm->forbidden_cost = 1000000000000000000; /* the contest's "infinite" cost */
	prm->mip_max_cols = 80000;
	prm->lns_window = 24;
	prm->lns_windows = INT_MAX;
	prm->lns_iterations = 0;
	prm->lns_patience = 0;
	prm->mip_node_limit = 2000;
	prm->mip_it_limit = 0;
	prm->max_rounds = INT_MAX;
	prm->relax_share = 0.4;
	prm->lagr_iters = 0;
	prm->stop_when_optimal = true;
	prm->memory_free_share = 0.2;
	prm->dedup = true;
	prm->stats = NULL;
	prm->incumbent = NULL;
	prm->incumbent_ctx = NULL;
}

static int fallback(const struct shard_problem *p, const struct shard_solve_params *prm, double left, int *choice,
		    struct shard_eval *out, bool *timed_out)
{
	struct shard_heuristic_params h;
	shard_heuristic_params_init(&h);
	h.time_limit = left > 0.05 ? left : 0.05;
	h.seed = prm->seed;
	h.verbose = prm->verbose;
	h.forbidden_cost = prm->forbidden_cost;
	h.max_rounds = prm->max_rounds;
	h.timed_out = timed_out;
	if (prm->verbose)
		fprintf(stderr, "shard: the reduced problem has no feasible start: plain heuristic\n");
	return shard_heuristic(p, &h, choice, out);
}

/* The caller's incumbent hook (shard_solve_params.incumbent): model
 * assignments of the searched model s, expanded through the dedup map d
 * (NULL: none) and the reduced model m into choice, evaluated on p and
 * reported when feasible and cheaper than the last report. Expanding and
 * evaluating is linear in p, so within a phase it happens every 0.1 s at
 * most; the phase ends force it. */
struct pub {
	struct ms_pub hook;
	const struct shard_problem *p;
	const struct shard_solve_params *prm;
	const struct shard_model *m;
	const struct shard_dedup *d;
	int *mchoice, *choice; /* scratch: m->n (when d), p->nnodes */
	shard_i128 reported;   /* the last report's cost */
	bool have;
	shard_i128 mcost; /* s's cost of the last assignment expanded */
	bool mhave;
	double last; /* when it was expanded */
};

static void pub_report(struct pub *b, const int *choice, const struct shard_eval *ev)
{
	if (!ev->feasible || (b->have && ev->cost >= b->reported))
		return;
	b->reported = ev->cost;
	b->have = true;
	b->prm->incumbent(b->prm->incumbent_ctx, choice, ev);
}

static void pub_model(void *ctx, const int *qchoice, shard_i128 cost, bool force)
{
	struct pub *b = ctx;
	double now = shard_now();
	if (!b->m || (b->mhave && cost >= b->mcost) || (!force && now - b->last < 0.1))
		return;
	b->mcost = cost;
	b->mhave = true;
	b->last = now;
	if (b->d) {
		shard_dedup_expand(b->m, b->d, qchoice, b->mchoice);
		shard_model_expand(b->m, b->mchoice, b->choice);
	} else {
		shard_model_expand(b->m, qchoice, b->choice);
	}
	struct shard_eval ev;
	if (shard_evaluate(b->p, b->choice, &ev) == 0)
		pub_report(b, b->choice, &ev);
}

/* The hook for searches of model m (d: its dedup map, or NULL); NULL when
 * the caller wants no reports. */
static const struct ms_pub *pub_on(struct pub *b, const struct shard_model *m, const struct shard_dedup *d)
{
	if (!b || !b->prm->incumbent)
		return NULL;
	free(b->mchoice);
	b->mchoice = d ? malloc(sizeof *b->mchoice * ((size_t)m->n + 1)) : NULL;
	b->m = !d || b->mchoice ? m : NULL; /* out of memory: no reports */
	b->d = d;
	b->mhave = false;
	b->last = 0;
	return &b->hook;
}

static void pub_off(struct pub *b)
{
	if (!b)
		return;
	free(b->mchoice);
	b->mchoice = NULL;
	b->m = NULL;
	b->d = NULL;
}

/* Bounded work (see solvers.h): no phase stops at a share of the time. */
static bool bounded(const struct shard_solve_params *prm)
{
	return prm->max_rounds != INT_MAX;
}

/* Columns the whole model's MIP needs: strategies and finite entries. */
static int64_t whole_cols(const struct shard_model *m)
{
	int64_t n = m->n ? m->off[m->n] : 0;
	for (int64_t x = 0; m->m && x < m->eoff[m->m]; x++)
		n += m->ecost[x] < m->inf;
	return n;
}

/* The whole model as one MIP (GLPK's presolver on: its strengthened
 * memory rows make the relaxation much tighter). */
static int whole_mip(struct mstate *st, const struct shard_solve_params *prm, double t0, bool *optimal, bool *solved)
{
	const struct shard_model *m = st->m;
	int *nodes = malloc(sizeof *nodes * ((size_t)m->n + 1));
	if (!nodes)
		return shard_errorf(-ENOMEM, "solve: out of memory");
	for (int i = 0; i < m->n; i++)
		nodes[i] = i;
	/* GLPK gets no incumbent with its presolver on, so an unfinished run
	 * leaves nothing: keep 40% of the time for the windows after it
	 * (bounded: the iteration and node limits end it, the time only as
	 * the backstop) */
	double left = st->deadline - shard_now();
	struct mip_params mp = { prm->mip_node_limit,
				 prm->mip_it_limit,
				 prm->mip_gap,
				 bounded(prm) ? left : 0.6 * left,
				 0,
				 4 * prm->mip_max_cols,
				 true,
				 false,
				 false,
				 false };
	struct mip_result res;
	struct mip_moves mv = { 0, 0, NULL, NULL };
	bool taken = false;
	int rc = shard_mip_window(st, nodes, m->n, &mp, &mv, &res);
	st->backstop |= res.timed_out;
	if (rc == 0 && res.solved)
		rc = lns_take(st, &mv, &taken);
	moves_free(&mv);
	*optimal = res.optimal;
	*solved = res.solved;
	if (prm->verbose) {
		char b[SHARD_I128_STRLEN];
		fprintf(stderr,
			"shard: %.2fs whole MIP (%d columns, %d rows, %d memory): %s%s%s in %.2fs, %d iterations, "
			"cost %s\n",
			shard_now() - t0, res.cols, res.rows, res.mem_rows,
			res.optimal  ? "optimal"
			: res.solved ? "feasible"
				     : "no solution",
			taken ? ", taken" : "", res.timed_out ? " (time limit)" : "", res.seconds, res.iterations,
			shard_i128_str(st->cost, b));
	}
	free(nodes);
	return rc;
}

static int lns(struct mstate *st, struct msearch *ms, const struct shard_solve_params *prm, double t0, int windows)
{
	struct lns_params lp = {
		prm->lns_window, 200,          20000, prm->mip_node_limit, prm->mip_gap,     false, true, 3000, windows,
		prm->seed,       prm->verbose, t0,    prm->lns_iterations, prm->lns_patience
	};
	struct lns_stats ls;
	int rc = shard_lns(st, ms, &lp, &ls);
	if (prm->verbose)
		fprintf(stderr, "shard: %.2fs lns: %d windows, %d optimal, %d improved, window %d, %lld iterations\n",
			shard_now() - t0, ls.windows, ls.optimal, ls.improved, ls.final_window,
			(long long)ls.iterations);
	return rc;
}

/* A memory-free model's check (see memory_free_first): its local-search
 * answer, expanded, must fit p's limit before the MIP is tried, and only
 * the whole MIP is tried. */
struct gate {
	const struct shard_problem *p;
	const struct shard_model *m; /* the reduced model of p */
	const struct shard_dedup *d; /* the searched model's map to m, or NULL */
	int *mchoice;                /* scratch of m->n */
	int *choice;                 /* scratch of p->nnodes */
};

static bool gate_fits(const struct gate *g, const struct shard_model *q, const int *qchoice)
{
	struct shard_eval ev;
	if (g->d) {
		shard_dedup_expand(g->m, g->d, qchoice, g->mchoice);
		shard_model_expand(g->m, g->mchoice, g->choice);
	} else {
		shard_model_expand(q, qchoice, g->choice);
	}
	return shard_evaluate(g->p, g->choice, &ev) == 0 && ev.feasible;
}

/* Steps 3-4 on the model; leaves the best model assignment in mchoice.
 * *optimal: the whole model's MIP proved it optimal. With a gate, stops
 * early unless the gate passes, and tries nothing after the whole MIP. */
static int search_model(const struct shard_model *m, const struct shard_solve_params *prm, double t0, int *mchoice,
			bool *optimal, const struct gate *gate, bool *timed_out, const struct ms_pub *pub)
{
	struct mstate st;
	struct msearch ms;
	struct msearch_params mp = { prm->seed, prm->verbose, t0 };
	*optimal = false;
	int rc = ms_init(&st, m, t0 + prm->time_limit);
	if (rc < 0)
		return rc;
	if ((rc = msearch_init(&ms, &st, &mp)) < 0) {
		ms_free(&st);
		return rc;
	}
	st.pub = pub;
	/* merged nodes carry many pieces, whose memory rows no single MIP
	 * can take (even lazily): windows then */
	bool whole = whole_cols(m) <= prm->mip_max_cols && m->poff[m->n] <= 4000;
	/* bounded work: the result must not depend on the machine's speed */
	bool fixed = bounded(prm);
	rc = msearch_start(&ms);
	bool have = rc == 0;
	if (rc == -ENOSPC)
		rc = 0;
	if (have)
		ms_publish(&st, st.choice, st.cost, true);
	/* the constrained incumbent first gets rounds of its own (a share of
	 * the time at most when unbounded), so that a repaired Lagrangian
	 * answer replaces it only when it is truly better */
	if (rc == 0 && have && !whole) {
		double deadline = st.deadline, cap = t0 + 0.05 * prm->time_limit;
		if (!fixed && cap < deadline)
			st.deadline = cap;
		rc = msearch_improve(&ms, prm->max_rounds < 300 ? prm->max_rounds : 300);
		st.deadline = deadline;
		st.timed_out = false;
	}
	/* Unbounded, the Lagrangian phase also runs before the whole MIP: on
	 * small models with a tight limit (the contest's B and G) it reaches
	 * the optimum in a fraction of a second where the constrained search
	 * is stuck at several times the cost, and the MIP, which hands GLPK's
	 * presolver no incumbent, needs many seconds to find anything. Its
	 * share counts from now, not from t0, so that slow earlier phases on
	 * a loaded machine do not leave it no time at all. */
	if (rc == 0 && (!whole || !fixed) && prm->relax_share > 0) {
		double share = (whole ? 0.5 : 1.0) * prm->relax_share, now = shard_now();
		double until = now + share * (st.deadline - now);
		if (until < t0 + share * prm->time_limit)
			until = t0 + share * prm->time_limit;
		struct lagr_params lp = { fixed ? st.deadline : until,
					  !fixed                ? INT_MAX
					  : prm->lagr_iters > 0 ? prm->lagr_iters
								: 1 + prm->max_rounds / 20,
					  prm->verbose, t0 };
		rc = shard_lagr(&st, &ms, &lp, &have);
	}
	if (rc == 0 && !have)
		rc = -ENOSPC;
	if (rc == 0 && have)
		ms_publish(&st, st.choice, st.cost, true);
	if (rc == 0)
		rc = msearch_improve(&ms, prm->max_rounds < 2000 ? prm->max_rounds : 2000);
	if (rc == 0)
		ms_publish(&st, st.choice, st.cost, true);
	bool solved = false;
	if (rc == 0 && gate && (!whole || !gate_fits(gate, m, st.choice)))
		goto out;
	if (rc == 0 && whole)
		rc = whole_mip(&st, prm, t0, optimal, &solved);
	if (rc == 0 && solved)
		ms_publish(&st, st.choice, st.cost, true);
	if (rc == 0 && gate)
		goto out;
	if (rc == 0 && !solved)
		rc = lns(&st, &ms, prm, t0, prm->lns_windows);
	if (rc == 0 && !(*optimal && prm->stop_when_optimal))
		rc = msearch_improve(&ms, prm->max_rounds);
out:
	*timed_out |= st.backstop;
	if (rc == 0)
		memcpy(mchoice, st.choice, sizeof *mchoice * (size_t)m->n);
	msearch_free(&ms);
	ms_free(&st);
	return rc;
}

/* Step 2c: the model's repeated memory-free components solved once
 * (shard_dedup.c), the rest by search_model; mchoice gets m's assignment.
 * A gated search (memory_free_first) stops at once, not optimal, when
 * the deduplicated model is too big for one MIP. */
static int search_dedup(const struct shard_model *m, const struct shard_solve_params *prm, double t0, int *mchoice,
			bool *optimal, struct gate *gate, struct shard_solve_stats *st, struct pub *pb)
{
	struct shard_dedup d = { 0 };
	struct shard_dedup_stats ds = { 0 };
	int rc = prm->dedup ? shard_dedup_build(m, &d, &ds) : 0;
	if (rc < 0)
		return rc;
	bool use = ds.copies > 0;
	const struct shard_model *s = use ? &d.q : m;
	st->reduced_nodes = st->solved_nodes = m->n;
	st->components = ds.components;
	st->distinct = ds.distinct;
	st->copies = ds.copies;
	if (use)
		st->solved_nodes = d.q.n;
	if (prm->verbose && prm->dedup)
		fprintf(stderr,
			"shard: %.2fs %d components, %d memory-free in %d classes: %d copies (%d nodes) solved once, "
			"%d nodes left\n",
			shard_now() - t0, ds.components, ds.free, ds.distinct, ds.copies, ds.nodes, s->n);
	*optimal = false;
	int *sc = use ? malloc(sizeof *sc * ((size_t)s->n + 1)) : mchoice;
	if (!sc)
		rc = shard_errorf(-ENOMEM, "solve: out of memory");
	if (gate) {
		gate->m = m;
		gate->d = use ? &d : NULL;
	}
	if (rc == 0 && !(gate && whole_cols(s) > prm->mip_max_cols))
		rc = search_model(s, prm, t0, sc, optimal, gate, &st->timed_out, pub_on(pb, m, use ? &d : NULL));
	else if (rc == 0)
		rc = -ENOSPC; /* too big to be proved optimal here */
	pub_off(pb);
	if (rc == 0 && use)
		shard_dedup_expand(m, &d, sc, mchoice);
	if (use)
		free(sc);
	if (gate)
		gate->d = NULL;
	shard_dedup_free(&d);
	return rc;
}

/* Step 2b: when memory may not bind at all, the problem without it (every
 * interval emptied: far stronger reductions, often one small MIP once the
 * repeated components are solved once) is solved first under a share of
 * the time, when its local-search answer fits the limit and its model is
 * small enough for one MIP. Its proved optimum, if it fits the limit, is
 * the optimum: *done then, with choice and out set. */
static int memory_free_first(const struct shard_problem *p, const struct shard_solve_params *prm, double t0,
			     int *choice, struct shard_eval *out, bool *done, struct shard_solve_stats *st,
			     struct pub *pb)
{
	*done = false;
	struct shard_problem q = *p;
	q.hi = q.lo;
	struct shard_model m;
	struct shard_reduce_stats rs;
	int rc = shard_reduce(&q, prm->forbidden_cost, &m, &rs);
	if (rc < 0)
		return rc;
	if (m.no_finite) {
		shard_model_free(&m);
		return 0;
	}
	struct shard_solve_params sub = *prm;
	/* bounded: the first try ends at its counts; the time only as the backstop */
	sub.time_limit = bounded(prm) ? prm->time_limit - (shard_now() - t0) : prm->memory_free_share * prm->time_limit;
	sub.stop_when_optimal = true;
	int *mchoice = malloc(sizeof *mchoice * ((size_t)m.n + 1)), *c = malloc(sizeof *c * ((size_t)p->nnodes + 1));
	int *gm = malloc(sizeof *gm * ((size_t)m.n + 1));
	bool optimal = false;
	struct gate gate = { p, &m, NULL, gm, c };
	rc = mchoice && c && gm ? search_dedup(&m, &sub, shard_now(), mchoice, &optimal, &gate, st, pb)
				: shard_errorf(-ENOMEM, "solve: out of memory");
	if (rc == 0 && optimal) {
		shard_model_expand(&m, mchoice, c);
		struct shard_eval ev;
		if ((rc = shard_evaluate(p, c, &ev)) == 0 && ev.feasible) {
			memcpy(choice, c, sizeof *c * (size_t)p->nnodes);
			*out = ev;
			*done = true;
		}
	}
	if (prm->verbose)
		fprintf(stderr, "shard: %.2fs without memory: %d nodes, %s%s\n", shard_now() - t0, m.n,
			optimal ? "optimal" : "not proved optimal", *done ? ", fits: done" : "");
	if (rc == -ENOSPC)
		rc = 0;
	free(mchoice);
	free(c);
	free(gm);
	shard_model_free(&m);
	return rc;
}

static int solve(const struct shard_problem *p, const struct shard_solve_params *prm, int *choice,
		 struct shard_eval *out, struct pub *pb)
{
	double t0 = shard_now();
	memset(out, 0, sizeof *out);
	int rc = shard_problem_check(p);
	if (rc < 0)
		return rc;
	shard_least_usage(p, NULL, choice);
	if ((rc = shard_evaluate(p, choice, out)) < 0)
		return rc;
	if (!out->feasible)
		return shard_infeasible(p, choice, out);
	if (pb)
		pub_report(pb, choice, out);
	bool done = false;
	struct shard_solve_stats st = { 0 };
	if (prm->memory_free_share > 0 && (rc = memory_free_first(p, prm, t0, choice, out, &done, &st, pb)) < 0)
		return rc;
	st.memory_free = done;
	if (done) {
		if (prm->stats)
			*prm->stats = st;
		return 0;
	}
	bool late = st.timed_out; /* an unfinished first try changed what follows */
	memset(&st, 0, sizeof st);
	st.timed_out = late;
	struct shard_model m;
	struct shard_reduce_stats rs;
	if ((rc = shard_reduce(p, prm->forbidden_cost, &m, &rs)) < 0)
		return rc;
	if (prm->verbose)
		fprintf(stderr,
			"shard: %.2fs reduced %d nodes to %d (%d strategies, %d edges, %lld entries, %d pieces): "
			"%d fixed, %d leaves, %d pairs, %d followers, %d dominated, %d pruned\n",
			shard_now() - t0, p->nnodes, m.n, m.n ? m.off[m.n] : 0, m.m, (long long)(m.m ? m.eoff[m.m] : 0),
			m.n ? m.poff[m.n] : 0, rs.fixed, rs.leaves, rs.pairs, rs.followers, rs.dominated, rs.pruned);
	int *mchoice = malloc(sizeof *mchoice * ((size_t)m.n + 1));
	if (!mchoice) {
		shard_model_free(&m);
		return shard_errorf(-ENOMEM, "solve: out of memory");
	}
	bool optimal = false;
	rc = m.no_finite ? -ENOSPC : search_dedup(&m, prm, t0, mchoice, &optimal, NULL, &st, pb);
	if (rc == 0) {
		shard_model_expand(&m, mchoice, choice);
		rc = shard_evaluate(p, choice, out);
		if (rc == 0 && !out->feasible)
			rc = -ENOSPC; /* a bug upstream; the fallback still answers */
	}
	free(mchoice);
	shard_model_free(&m);
	if (rc == -ENOSPC) {
		bool cut = false;
		rc = fallback(p, prm, t0 + prm->time_limit - shard_now(), choice, out, &cut);
		st.timed_out |= cut;
	}
	if (prm->stats)
		*prm->stats = st;
	return rc;
}

int shard_solve(const struct shard_problem *p, const struct shard_solve_params *prm, int *choice,
		struct shard_eval *out)
{
	if (!prm->incumbent)
		return solve(p, prm, choice, out, NULL);
	struct pub pb = { { pub_model, NULL }, p, prm, NULL, NULL, NULL, NULL, 0, false, 0, false, 0 };
	pb.hook.ctx = &pb;
	pb.choice = malloc(sizeof *pb.choice * ((size_t)(p->nnodes > 0 ? p->nnodes : 0) + 1));
	if (!pb.choice)
		return shard_errorf(-ENOMEM, "solve: out of memory");
	int rc = solve(p, prm, choice, out, &pb);
	if (rc == 0)
		pub_report(&pb, choice, out);
	pub_off(&pb);
	free(pb.choice);
	return rc;
}
