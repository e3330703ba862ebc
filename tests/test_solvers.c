/*
 * test_solvers.c: the intra-op solver library (solvers/solvers.h): the IOPDDL
 * reader and its error messages, the independent evaluator against hand
 * computations, and the heuristic against brute force on small random
 * instances and on the contest's small instances.
 *
 * Usage: test_solvers EXAMPLE_DIR SHARED_DIR. EXAMPLE_DIR holds example.json
 * (tests/iopddl); SHARED_DIR the contest instances (../shared/iopddl), whose
 * cases are skipped when it is missing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "solvers/shard_lagr.h"
#include "solvers/shard_model.h"
#include "solvers/solvers.h"
#include "tests/tap.h"

static const char *example_dir = "tests/iopddl";
static const char *shared_dir = "../shared/iopddl";
static char tmp_dir[] = "/tmp/test_solvers.XXXXXX";

static bool has(const char *s)
{
	bool ok = strstr(shard_error(), s) != NULL;
	if (!ok)
		TAP_DIAG("message was: %s", shard_error());
	return ok;
}

static bool i128_is(shard_i128 v, const char *want)
{
	char b[SHARD_I128_STRLEN];
	bool ok = !strcmp(shard_i128_str(v, b), want);
	if (!ok)
		TAP_DIAG("got %s, want %s", b, want);
	return ok;
}

/* ---- building problems in memory ---------------------------------------- */

/* A problem with room for n nodes of up to kmax strategies and e edges;
 * the caller fills the arrays and the offsets. */
static void problem_alloc(struct shard_problem *p, int n, int kmax, int e)
{
	memset(p, 0, sizeof *p);
	p->nnodes = n;
	p->nedges = e;
	p->strat_off = calloc((size_t)n + 1, sizeof *p->strat_off);
	p->cost = calloc((size_t)n * kmax + 1, sizeof *p->cost);
	p->usage = calloc((size_t)n * kmax + 1, sizeof *p->usage);
	p->lo = calloc((size_t)n + 1, sizeof *p->lo);
	p->hi = calloc((size_t)n + 1, sizeof *p->hi);
	p->edge_u = calloc((size_t)e + 1, sizeof *p->edge_u);
	p->edge_v = calloc((size_t)e + 1, sizeof *p->edge_v);
	p->edge_off = calloc((size_t)e + 1, sizeof *p->edge_off);
	p->edge_cost = calloc((size_t)e * kmax * kmax + 1, sizeof *p->edge_cost);
}

static uint64_t rng_state;

static uint64_t rnd(uint64_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (rng_state >> 33) % n;
}

/* A random instance: n nodes of 1..kmax strategies, up to 2n edges, costs
 * up to cmax, intervals within [0, 20), a limit between the least and the
 * largest possible peak so that it sometimes binds and is sometimes
 * infeasible. */
static void problem_random(struct shard_problem *p, int n, int kmax, int64_t cmax)
{
	int e = (int)rnd((uint64_t)(2 * n));
	problem_alloc(p, n, kmax, e);
	int64_t max_use = 0;
	for (int i = 0; i < n; i++) {
		int k = 1 + (int)rnd((uint64_t)kmax);
		p->strat_off[i + 1] = p->strat_off[i] + k;
		for (int s = p->strat_off[i]; s < p->strat_off[i + 1]; s++) {
			p->cost[s] = (int64_t)rnd((uint64_t)cmax);
			p->usage[s] = (int64_t)rnd(10);
		}
		p->lo[i] = (int64_t)rnd(20);
		p->hi[i] = rnd(5) == 0 ? p->lo[i] : p->lo[i] + (int64_t)rnd(10);
		max_use += 9;
	}
	for (int k = 0; k < e; k++) {
		p->edge_u[k] = (int)rnd((uint64_t)n);
		p->edge_v[k] = (int)rnd((uint64_t)n);
		int64_t sz = (int64_t)shard_problem_nstrat(p, p->edge_u[k]) * shard_problem_nstrat(p, p->edge_v[k]);
		p->edge_off[k + 1] = p->edge_off[k] + sz;
		for (int64_t j = p->edge_off[k]; j < p->edge_off[k + 1]; j++)
			p->edge_cost[j] = (int64_t)rnd((uint64_t)cmax);
	}
	p->usage_limit = (int64_t)rnd((uint64_t)(max_use / 2 + 1));
}

/* ---- the example --------------------------------------------------------- */

static void test_example(void)
{
	struct shard_problem p;
	char path[4096];
	snprintf(path, sizeof path, "%s/example.json", example_dir);
	if (!TAP_OK(shard_problem_read_iopddl(path, &p) == 0, "example.json reads: %s", shard_error()))
		return;
	TAP_OK(p.nnodes == 5 && p.nedges == 5 && p.usage_limit == 50 && p.strat_off[5] == 9 &&
		       p.edge_off[5] == 2 + 3 + 4 + 3 + 2 && !strcmp(p.name, "example"),
	       "example: 5 nodes, 9 strategies, 5 edges, 14 matrix entries, limit 50");
	/*
	 * By hand, [0, 0, 2, 1, 0]: nodes 15 + 55 + 35 + 75 + 95 = 275; edges
	 * (0,1) 30, (0,2) 40, (1,3) entry 0*2+1 = 10, (2,4) 30, (3,4) entry 1
	 * = 60: 170; total 445. Memory: on [50, 70) nodes 0, 1, 2 hold
	 * 10 + 25 + 15 = 50, at the limit; on [110, 120) 15 + 10 + 15 = 40.
	 * Node 2 with strategy 1 would be cheaper (45 + 10 + 20 = 75 against
	 * 35 + 40 + 30 = 105, total 415) but needs 20 bytes: 55 on the 20
	 * points 50..69.
	 */
	int best[5] = {0, 0, 2, 1, 0}, cheap[5] = {0, 0, 1, 1, 0}, got[5];
	struct shard_eval ev;
	TAP_OK(shard_evaluate(&p, best, &ev) == 0 && i128_is(ev.cost, "445") && ev.feasible &&
		       i128_is(ev.peak_usage, "50") && ev.peak_time == 50 && ev.over_points == 0,
	       "evaluate [0,0,2,1,0]: 445, feasible, peak 50 at t=50");
	TAP_OK(shard_evaluate(&p, cheap, &ev) == 0 && i128_is(ev.cost, "415") && !ev.feasible &&
		       i128_is(ev.peak_usage, "55") && ev.over_points == 20 && ev.first_over_time == 50,
	       "evaluate [0,0,1,1,0]: 415 but 20 points over the limit from t=50");
	struct shard_heuristic_params prm;
	shard_heuristic_params_init(&prm);
	prm.time_limit = 2;
	TAP_OK(shard_heuristic(&p, &prm, got, &ev) == 0 && !memcmp(got, best, sizeof best) && i128_is(ev.cost, "445"),
	       "heuristic finds the optimum [0, 0, 2, 1, 0] of cost 445");
	p.usage_limit = 49;
	TAP_OK(shard_heuristic(&p, &prm, got, &ev) == -ENOSPC && has("usage limit 49") && has("50 at time 50"),
	       "limit 49 is infeasible: -ENOSPC naming the peak 50 at t=50");
	shard_problem_free(&p);
}

/* ---- evaluator ----------------------------------------------------------- */

static void test_evaluator_extremes(void)
{
	struct shard_problem p;
	struct shard_eval ev;
	problem_alloc(&p, 3, 2, 2);
	for (int i = 0; i < 3; i++) {
		p.strat_off[i + 1] = 2 * (i + 1);
		p.cost[2 * i] = INT64_MAX;
		p.cost[2 * i + 1] = INT64_MIN;
		p.usage[2 * i] = INT64_MAX; /* [0, 0]: never live */
	}
	for (int k = 0; k < 2; k++) {
		p.edge_u[k] = k, p.edge_v[k] = k + 1;
		p.edge_off[k + 1] = 4 * (k + 1);
		for (int j = 0; j < 4; j++)
			p.edge_cost[4 * k + j] = j == 0 ? INT64_MAX : INT64_MIN;
	}
	p.usage_limit = 0;
	int zero[3] = {0, 0, 0}, one[3] = {1, 1, 1}, bad[3] = {0, 2, 0};
	/* 5 (2^63 - 1) = 46116860184273879035; 5 (-2^63) = -46116860184273879040 */
	TAP_OK(shard_evaluate(&p, zero, &ev) == 0 && i128_is(ev.cost, "46116860184273879035") && ev.feasible,
	       "five INT64_MAX terms sum exactly past 2^63; [0,0] intervals hold no memory");
	TAP_OK(shard_evaluate(&p, one, &ev) == 0 && i128_is(ev.cost, "-46116860184273879040"),
	       "five INT64_MIN terms sum exactly");
	TAP_OK(shard_evaluate(&p, bad, &ev) == -EINVAL && has("node 1: strategy 2 out of range"),
	       "an out-of-range choice is rejected naming the node");
	/* Usages INT64_MAX on [0, 10^18) and [5, 10^17), limit INT64_MAX: the
	 * sum 2^64 - 2 is over the limit on the 10^17 - 5 points from t = 5. */
	for (int i = 0; i < 2; i++)
		p.usage[2 * i] = INT64_MAX;
	p.lo[0] = 0, p.hi[0] = 1000000000000000000;
	p.lo[1] = 5, p.hi[1] = 100000000000000000;
	p.usage_limit = INT64_MAX;
	TAP_OK(shard_evaluate(&p, zero, &ev) == 0 && !ev.feasible && ev.over_points == 100000000000000000 - 5 &&
		       ev.first_over_time == 5 && i128_is(ev.peak_usage, "18446744073709551614") && ev.peak_time == 5,
	       "huge intervals: 10^17 - 5 points over from t=5, peak 2^64 - 2 summed exactly");
	TAP_OK(shard_evaluate(&p, one, &ev) == 0 && ev.feasible && i128_is(ev.peak_usage, "0"),
	       "zero-usage strategies: feasible, peak 0");
	shard_problem_free(&p);
}

/* ---- brute force --------------------------------------------------------- */

/* The optimum by enumeration: 0 with best set, or -ENOSPC. */
static int brute_force(const struct shard_problem *p, int *best, shard_i128 *best_cost)
{
	int n = p->nnodes, c[16] = {0}, found = 0;
	struct shard_eval ev;
	for (;;) {
		shard_evaluate(p, c, &ev);
		if (ev.feasible && (!found || ev.cost < *best_cost)) {
			*best_cost = ev.cost;
			memcpy(best, c, sizeof *c * (size_t)n);
			found = 1;
		}
		int i = 0;
		while (i < n && ++c[i] == shard_problem_nstrat(p, i))
			c[i++] = 0;
		if (i == n)
			break;
	}
	return found ? 0 : -ENOSPC;
}

static void test_brute_force(void)
{
	int instances = 200, feasible = 0, optimal = 0, wrong_feasible = 0, wrong_infeasible = 0, bad_eval = 0;
	struct shard_heuristic_params prm;
	shard_heuristic_params_init(&prm);
	prm.time_limit = 5;
	prm.max_rounds = 300;
	rng_state = 12345;
	for (int t = 0; t < instances; t++) {
		struct shard_problem p;
		problem_random(&p, 3 + (int)rnd(5), 4, t % 3 == 0 ? 1000000000000000000 : 100);
		int best[16], got[16];
		shard_i128 best_cost = 0;
		struct shard_eval ev, ev2;
		int bf = brute_force(&p, best, &best_cost);
		int rc = shard_heuristic(&p, &prm, got, &ev);
		if (bf == 0) {
			feasible++;
			if (rc != 0 || !ev.feasible)
				wrong_infeasible++;
			else if (ev.cost == best_cost)
				optimal++;
			if (rc == 0 && (shard_evaluate(&p, got, &ev2) != 0 || ev2.cost != ev.cost))
				bad_eval++;
		} else if (rc != -ENOSPC) {
			wrong_feasible++;
		}
		shard_problem_free(&p);
	}
	TAP_DIAG("brute force: %d of %d random instances feasible; heuristic optimal on %d (%.1f%%)", feasible,
		 instances, optimal, 100.0 * optimal / (feasible ? feasible : 1));
	TAP_OK(feasible > 50 && feasible < instances, "the random limits bind sometimes (%d feasible)", feasible);
	TAP_OK(wrong_infeasible == 0, "a feasible solution whenever one exists (%d misses)", wrong_infeasible);
	TAP_OK(wrong_feasible == 0, "infeasible instances reported as -ENOSPC (%d wrong)", wrong_feasible);
	TAP_OK(bad_eval == 0, "the reported evaluation matches the evaluator");
	TAP_OK(optimal >= feasible * 8 / 10, "optimal on at least 80%% of the feasible ones (%d of %d)", optimal,
	       feasible);
}

/* A random instance where some entries are the forbidden cost 10^18 and
 * many nodes are leaves or chains, the shapes the reductions act on. */
static void problem_random_sparse(struct shard_problem *p, int n, int kmax)
{
	problem_random(p, n, kmax, 100);
	for (int k = 0; k < p->nedges; k++) {
		/* mostly a tree: edge k joins k+1 to an earlier node */
		if (k + 1 < n && rnd(4) != 0) {
			p->edge_v[k] = k + 1;
			p->edge_u[k] = (int)rnd((uint64_t)(k + 1));
		}
		int64_t sz = (int64_t)shard_problem_nstrat(p, p->edge_u[k]) * shard_problem_nstrat(p, p->edge_v[k]);
		p->edge_off[k + 1] = p->edge_off[k] + sz;
		for (int64_t j = p->edge_off[k]; j < p->edge_off[k + 1]; j++)
			p->edge_cost[j] = rnd(4) == 0 ? 1000000000000000000 : (int64_t)rnd(100);
	}
	for (int i = 0; i < n; i++)
		if (rnd(3) == 0) /* same usage for all strategies */
			for (int s = p->strat_off[i] + 1; s < p->strat_off[i + 1]; s++)
				p->usage[s] = p->usage[p->strat_off[i]];
}

/* The optimum of a reduced model by enumeration, expanded: 0 or -ENOSPC. */
static int brute_force_model(const struct shard_model *m, int *best, shard_i128 *best_cost)
{
	int c[16] = {0}, found = 0, full[16];
	for (;;) {
		shard_i128 cost = shard_model_cost(m, c);
		if (shard_model_peak_slack(m, c) <= 0 && (!found || cost < *best_cost)) {
			*best_cost = cost;
			shard_model_expand(m, c, full);
			memcpy(best, full, sizeof full);
			found = 1;
		}
		int i = 0;
		while (i < m->n && ++c[i] == shard_model_nstrat(m, i))
			c[i++] = 0;
		if (i == m->n)
			break;
	}
	return found ? 0 : -ENOSPC;
}

static void test_reduce(void)
{
	int instances = 400, compared = 0, wrong = 0, bad_expand = 0, smaller = 0, binding = 0;
	const int64_t forbidden = 1000000000000000000;
	rng_state = 4242;
	for (int t = 0; t < instances; t++) {
		struct shard_problem p;
		if (t % 2)
			problem_random(&p, 3 + (int)rnd(6), 4, 100);
		else
			problem_random_sparse(&p, 3 + (int)rnd(8), 4);
		int best[16], got[16];
		shard_i128 best_cost = 0, got_cost = 0;
		struct shard_model m;
		struct shard_reduce_stats st;
		int bf = brute_force(&p, best, &best_cost);
		if (shard_reduce(&p, forbidden, &m, &st) != 0) {
			wrong++;
			shard_problem_free(&p);
			continue;
		}
		bool finite = bf == 0 && best_cost < forbidden;
		if (finite) { /* does memory bind? the optimum without the limit is cheaper */
			int64_t limit = p.usage_limit;
			int free_best[16];
			shard_i128 free_cost = 0;
			p.usage_limit = INT64_MAX;
			brute_force(&p, free_best, &free_cost);
			p.usage_limit = limit;
			binding += free_cost < best_cost;
		}
		int mb = m.no_finite ? -ENOSPC : brute_force_model(&m, got, &got_cost);
		if (finite) {
			struct shard_eval ev;
			compared++;
			smaller += m.n < p.nnodes;
			if (mb != 0 || got_cost != best_cost)
				wrong++;
			else if (shard_evaluate(&p, got, &ev) != 0 || !ev.feasible || ev.cost != best_cost)
				bad_expand++;
		} else if (mb == 0 && got_cost < forbidden) {
			wrong++; /* the model found a finite optimum the problem lacks */
		}
		shard_model_free(&m);
		shard_problem_free(&p);
	}
	TAP_DIAG("reductions: %d finite instances compared, %d reduced to fewer nodes, memory binds in %d", compared,
		 smaller, binding);
	TAP_OK(compared > 100 && smaller > compared / 2 && binding > 20,
	       "the random instances reduce (%d of %d) and memory binds in some (%d)", smaller, compared, binding);
	TAP_OK(wrong == 0, "reductions keep the optimum cost (%d wrong)", wrong);
	TAP_OK(bad_expand == 0, "expanded optima evaluate to the same cost, feasible (%d wrong)", bad_expand);
}

/* shard_solve against brute force: the exact optimum on every feasible
 * instance (the reduced problems are small enough for one MIP), -ENOSPC on
 * the infeasible ones. */
static void test_solve_brute_force(void)
{
	int instances = 150, feasible = 0, optimal = 0, wrong_feasible = 0, bad_eval = 0;
	struct shard_solve_params prm;
	shard_solve_params_init(&prm);
	prm.time_limit = 5;
	prm.max_rounds = 300;
	rng_state = 999;
	for (int t = 0; t < instances; t++) {
		struct shard_problem p;
		if (t % 2)
			problem_random(&p, 3 + (int)rnd(6), 4, 100);
		else
			problem_random_sparse(&p, 3 + (int)rnd(9), 4);
		int best[16], got[16];
		shard_i128 best_cost = 0;
		struct shard_eval ev, ev2;
		int bf = brute_force(&p, best, &best_cost);
		int rc = shard_solve(&p, &prm, got, &ev);
		if (bf == 0) {
			feasible++;
			optimal += rc == 0 && ev.feasible && ev.cost == best_cost;
			if (rc == 0 && (shard_evaluate(&p, got, &ev2) != 0 || ev2.cost != ev.cost || !ev2.feasible))
				bad_eval++;
		} else if (rc != -ENOSPC) {
			wrong_feasible++;
		}
		shard_problem_free(&p);
	}
	TAP_OK(optimal == feasible, "shard_solve: the optimum on all %d feasible instances (%d found)", feasible,
	       optimal);
	TAP_OK(wrong_feasible == 0, "shard_solve: infeasible instances are -ENOSPC (%d wrong)", wrong_feasible);
	TAP_OK(bad_eval == 0, "shard_solve: the reported evaluation matches the evaluator");
}

/* ---- repeated identical sub-problems (shard_dedup.c) --------------------- */

/* k copies of a side by side, no edge between them; copy c's intervals
 * shifted by shift[c] time steps, or emptied (no memory) when shift[c] < 0. */
static void problem_copies(const struct shard_problem *a, int k, const int *shift, struct shard_problem *p)
{
	int n = a->nnodes, kmax = 1;
	for (int i = 0; i < n; i++)
		kmax = shard_problem_nstrat(a, i) > kmax ? shard_problem_nstrat(a, i) : kmax;
	problem_alloc(p, k * n, kmax, k * a->nedges);
	for (int c = 0; c < k; c++) {
		for (int i = 0; i < n; i++) {
			int j = c * n + i, ns = shard_problem_nstrat(a, i);
			p->strat_off[j + 1] = p->strat_off[j] + ns;
			memcpy(p->cost + p->strat_off[j], a->cost + a->strat_off[i], sizeof *p->cost * (size_t)ns);
			memcpy(p->usage + p->strat_off[j], a->usage + a->strat_off[i], sizeof *p->usage * (size_t)ns);
			p->lo[j] = shift[c] < 0 ? 0 : a->lo[i] + shift[c];
			p->hi[j] = shift[c] < 0 ? 0 : a->hi[i] + shift[c];
		}
		for (int e = 0; e < a->nedges; e++) {
			int x = c * a->nedges + e;
			int64_t len = a->edge_off[e + 1] - a->edge_off[e];
			p->edge_u[x] = c * n + a->edge_u[e];
			p->edge_v[x] = c * n + a->edge_v[e];
			p->edge_off[x + 1] = p->edge_off[x] + len;
			memcpy(p->edge_cost + p->edge_off[x], a->edge_cost + a->edge_off[e],
			       sizeof *p->edge_cost * (size_t)len);
		}
	}
	p->usage_limit = a->usage_limit;
}

/* A complete graph on n nodes of k strategies with random costs, every
 * node live at [0, 1) with usage s + 1 for strategy s (so that the
 * reductions keep it whole). */
static void problem_clique(struct shard_problem *p, int n, int k)
{
	problem_alloc(p, n, k, n * (n - 1) / 2);
	for (int i = 0; i < n; i++) {
		p->strat_off[i + 1] = p->strat_off[i] + k;
		for (int s = 0; s < k; s++) {
			p->cost[i * k + s] = (int64_t)rnd(100);
			p->usage[i * k + s] = s + 1;
		}
		p->hi[i] = 1;
	}
	int e = 0;
	for (int u = 0; u < n; u++)
		for (int v = u + 1; v < n; v++, e++) {
			p->edge_u[e] = u;
			p->edge_v[e] = v;
			p->edge_off[e + 1] = p->edge_off[e] + k * k;
			for (int x = 0; x < k * k; x++)
				p->edge_cost[p->edge_off[e] + x] = (int64_t)rnd(100);
		}
	p->usage_limit = INT64_MAX;
}

static bool copies_agree(const int *choice, int n, int k)
{
	for (int c = 1; c < k; c++)
		if (memcmp(choice, choice + c * n, sizeof *choice * (size_t)n))
			return false;
	return true;
}

static void test_dedup(void)
{
	struct shard_solve_params prm;
	shard_solve_params_init(&prm);
	prm.time_limit = 600; /* a backstop only: the work is bounded */
	prm.max_rounds = 300;
	prm.lns_windows = 20;
	struct shard_solve_stats st, st0;
	rng_state = 4242;
	/* one 4-node clique of 3 strategies, its optimum by brute force */
	struct shard_problem a, p;
	problem_clique(&a, 4, 3);
	int best[16], got[64], got0[64];
	shard_i128 free_opt = 0, tight_opt = 0;
	brute_force(&a, best, &free_opt);
	struct shard_eval ev, ev0;
	/* 6 copies, no limit */
	enum { K = 6 };
	int shift[K] = {0, 1, 2, 3, 4, 5};
	problem_copies(&a, K, shift, &p);
	prm.stats = &st;
	int rc = shard_solve(&p, &prm, got, &ev);
	prm.dedup = false;
	prm.stats = &st0;
	int rc0 = shard_solve(&p, &prm, got0, &ev0);
	prm.dedup = true;
	TAP_OK(rc == 0 && rc0 == 0 && ev.cost == K * free_opt && ev0.cost == ev.cost,
	       "dedup: %d identical cliques without a limit: %d times one clique's optimum, as without dedup", K, K);
	TAP_OK(copies_agree(got, 4, K), "dedup: every copy takes the same strategies");
	TAP_OK(st.memory_free && st.components == K && st.distinct == 1 && st.copies == K - 1 &&
		       st.solved_nodes == st.reduced_nodes / K && st0.copies == 0 &&
		       st0.solved_nodes == st0.reduced_nodes,
	       "dedup: %d components, %d distinct solved, %d copies, %d of %d nodes searched", st.components,
	       st.distinct, st.copies, st.solved_nodes, st.reduced_nodes);
	shard_problem_free(&p);
	/* a limit that binds one clique: copies 0 and 1 live at [0, 1) and
	 * [1, 2), copies 2 to 5 hold no memory */
	a.usage_limit = 6;
	if (brute_force(&a, best, &tight_opt) != 0 || tight_opt == free_opt)
		TAP_DIAG("the limit does not bind the clique");
	int shift2[K] = {0, 1, -1, -1, -1, -1};
	problem_copies(&a, K, shift2, &p);
	prm.stats = &st;
	rc = shard_solve(&p, &prm, got, &ev);
	prm.dedup = false;
	prm.stats = &st0;
	rc0 = shard_solve(&p, &prm, got0, &ev0);
	prm.dedup = true;
	TAP_OK(rc == 0 && rc0 == 0 && ev.feasible && ev.cost == 2 * tight_opt + (K - 2) * free_opt &&
		       ev0.cost == ev.cost,
	       "dedup: a binding limit over two of %d cliques: the optimum, as without dedup", K);
	TAP_OK(copies_agree(got + 8, 4, K - 2), "dedup: the memory-free copies take the same strategies");
	TAP_OK(!st.memory_free && st.components == K && st.distinct == 1 && st.copies == K - 3,
	       "dedup: the two cliques under the limit are solved apart (%d components, %d distinct, %d copies)",
	       st.components, st.distinct, st.copies);
	/* all six under a limit that binds every one at the same time point:
	 * nothing is memory-free, so nothing is copied */
	int shift3[K] = {0, 0, 0, 0, 0, 0};
	shard_problem_free(&p);
	problem_copies(&a, K, shift3, &p);
	p.usage_limit = K * 6;
	prm.stats = &st;
	rc = shard_solve(&p, &prm, got, &ev);
	TAP_OK(rc == 0 && ev.feasible && st.copies == 0 && st.distinct == 0,
	       "dedup: copies coupled through memory are not deduplicated");
	shard_problem_free(&p);
	shard_problem_free(&a);
	prm.stats = NULL;
	/* random cliques (which the reductions keep), 2 or 3 copies each
	 * shifted in time, sharing it or holding no memory, under random
	 * limits, against brute force */
	int instances = 80, feasible = 0, optimal = 0, wrong = 0, deduped = 0;
	for (int t = 0; t < instances; t++) {
		int n = 3 + (int)rnd(2), k = n == 3 ? 3 : 2, sh[3];
		int64_t peak = 0;
		problem_clique(&a, n, 2 + (int)rnd(2));
		for (int i = 0; i < n; i++) {
			int64_t top = 0;
			for (int s = a.strat_off[i]; s < a.strat_off[i + 1]; s++) {
				a.usage[s] = (int64_t)rnd(10);
				top = a.usage[s] > top ? a.usage[s] : top;
			}
			a.lo[i] = (int64_t)rnd(4);
			a.hi[i] = a.lo[i] + (int64_t)rnd(4);
			peak += top;
		}
		for (int c = 0; c < k; c++)
			sh[c] = rnd(3) == 0 ? -1 : (int)rnd(3) * 2;
		problem_copies(&a, k, sh, &p);
		p.usage_limit = (int64_t)rnd((uint64_t)(k * peak + 1));
		shard_i128 opt = 0;
		int bf = brute_force(&p, best, &opt);
		prm.stats = &st;
		memset(&st, 0, sizeof st);
		rc = shard_solve(&p, &prm, got, &ev);
		deduped += st.copies > 0;
		if (bf == 0) {
			feasible++;
			optimal += rc == 0 && ev.feasible && ev.cost == opt;
		} else {
			wrong += rc != -ENOSPC;
		}
		shard_problem_free(&p);
		shard_problem_free(&a);
	}
	prm.stats = NULL;
	TAP_OK(optimal == feasible && wrong == 0 && deduped > 0,
	       "dedup: the optimum on all %d feasible random instances of copies (%d found, %d wrong -ENOSPC, %d "
	       "deduplicated)",
	       feasible, optimal, wrong, deduped);
}

/* TRW-S (shard_trws.c) on models without memory: exact on trees (it is
 * then min-sum belief propagation), and on loopy graphs its labeling's
 * reported energy is that labeling's exact cost. */
static void test_trws(void)
{
	int trees = 0, tree_exact = 0, loopy = 0, loopy_optimal = 0, energy_wrong = 0;
	const int64_t forbidden = 1000000000000000000;
	rng_state = 31337;
	for (int t = 0; t < 200; t++) {
		bool tree = t % 2 == 0;
		int n = 3 + (int)rnd(6), e = tree ? n - 1 : n + 2;
		struct shard_problem p;
		problem_alloc(&p, n, 4, e);
		for (int i = 0; i < n; i++) {
			p.strat_off[i + 1] = p.strat_off[i] + 1 + (int)rnd(4);
			for (int s = p.strat_off[i]; s < p.strat_off[i + 1]; s++)
				p.cost[s] = (int64_t)rnd(100);
		}
		for (int k = 0; k < e; k++) {
			int v = tree ? k + 1 : 1 + (int)rnd((uint64_t)(n - 1));
			p.edge_u[k] = (int)rnd((uint64_t)v);
			p.edge_v[k] = v;
			int64_t sz = (int64_t)shard_problem_nstrat(&p, p.edge_u[k]) * shard_problem_nstrat(&p, v);
			p.edge_off[k + 1] = p.edge_off[k] + sz;
			for (int64_t j = p.edge_off[k]; j < p.edge_off[k + 1]; j++)
				p.edge_cost[j] = (int64_t)rnd(100);
		}
		p.usage_limit = INT64_MAX;
		int best[16], lab[16];
		shard_i128 best_cost = 0;
		struct shard_model m;
		struct mstate st;
		struct trws tr;
		double *unary = malloc(sizeof *unary * ((size_t)p.strat_off[n] + 1)), energy = 0;
		if (brute_force(&p, best, &best_cost) != 0 || shard_model_plain(&p, forbidden, &m) != 0) {
			energy_wrong++;
			free(unary);
			shard_problem_free(&p);
			continue;
		}
		ms_init(&st, &m, shard_now() + 60);
		trws_init(&tr, &st);
		for (int q = 0; q < m.off[m.n]; q++)
			unary[q] = (double)m.cost[q];
		trws_run(&tr, unary, 30, lab, &energy);
		shard_i128 got = shard_model_cost(&m, lab);
		energy_wrong += (double)got != energy + (double)m.offset;
		if (tree) {
			trees++;
			tree_exact += got == best_cost;
		} else {
			loopy++;
			loopy_optimal += got == best_cost;
			energy_wrong += got < best_cost;
		}
		trws_free(&tr);
		ms_free(&st);
		shard_model_free(&m);
		free(unary);
		shard_problem_free(&p);
	}
	TAP_DIAG("trws: optimal on %d of %d loopy instances", loopy_optimal, loopy);
	TAP_OK(tree_exact == trees, "trws: the optimum on all %d trees (%d found)", trees, tree_exact);
	TAP_OK(energy_wrong == 0, "trws: reported energies are the labelings' exact costs (%d wrong)", energy_wrong);
}

/* The Lagrangian search (shard_lagr.c) on random models with a binding
 * limit: what it leaves is feasible, priced exactly, never below the
 * brute-force optimum and never above where it started. */
static void test_lagr(void)
{
	int runs = 0, optimal = 0, wrong = 0, found = 0;
	const int64_t forbidden = 1000000000000000000;
	rng_state = 2718;
	for (int t = 0; t < 150; t++) {
		struct shard_problem p;
		problem_random(&p, 3 + (int)rnd(7), 4, 100);
		int best[16];
		shard_i128 best_cost = 0;
		struct shard_model m;
		if (shard_model_plain(&p, forbidden, &m) != 0) {
			wrong++;
			shard_problem_free(&p);
			continue;
		}
		int bf = brute_force(&p, best, &best_cost);
		struct mstate st;
		struct msearch ms;
		struct msearch_params mp = {1, false, shard_now()};
		ms_init(&st, &m, shard_now() + 60);
		msearch_init(&ms, &st, &mp);
		int rc = msearch_start(&ms);
		bool have = rc == 0, started = have;
		shard_i128 start = st.cost;
		struct lagr_params lp = {shard_now() + 10, 40, false, shard_now()};
		rc = rc == 0 || rc == -ENOSPC ? shard_lagr(&st, &ms, &lp, &have) : rc;
		if (rc != 0 || (have && bf != 0)) {
			wrong++;
		} else if (have) {
			runs++;
			found += bf == 0;
			optimal += st.cost == best_cost;
			if (!ms_feasible(&st) || st.cost != shard_model_cost(&m, st.choice) || st.cost < best_cost ||
			    (started && st.cost > start))
				wrong++;
		}
		msearch_free(&ms);
		ms_free(&st);
		shard_model_free(&m);
		shard_problem_free(&p);
	}
	TAP_DIAG("lagrange: optimal on %d of %d feasible runs", optimal, runs);
	TAP_OK(runs > 40 && wrong == 0, "lagrange: feasible, exactly priced, never worse than its start (%d runs, %d wrong)",
	       runs, wrong);
}

/* The MIP written by shard_mip_write, solved by COIN-OR CBC, against brute
 * force: an independent check of the formulation (memory rows included). */
static void test_mip_cbc(void)
{
	if (system("command -v cbc >/dev/null 2>&1") != 0) {
		printf("ok %d - # SKIP cbc not installed (apt-get install coinor-cbc)\n", ++tap_n);
		return;
	}
	int instances = 12, compared = 0, agree = 0;
	rng_state = 31337;
	for (int t = 0; t < instances; t++) {
		struct shard_problem p;
		problem_random(&p, 5 + (int)rnd(5), 4, 100);
		int best[16];
		shard_i128 best_cost = 0;
		if (brute_force(&p, best, &best_cost) != 0) {
			shard_problem_free(&p);
			continue;
		}
		char path[4200], cmd[8600], line[512];
		snprintf(path, sizeof path, "%s/mip%d.lp", tmp_dir, t);
		int rc = shard_mip_write(&p, path);
		shard_problem_free(&p);
		if (rc != 0)
			continue;
		compared++;
		snprintf(cmd, sizeof cmd, "cbc '%s' solve 2>&1", path);
		FILE *f = popen(cmd, "r");
		double obj = -1;
		while (f && fgets(line, sizeof line, f))
			if (!strncmp(line, "Objective value:", 16))
				obj = atof(line + 16);
		if (f)
			pclose(f);
		if (obj >= 0 && (shard_i128)(obj + 0.5) == best_cost)
			agree++;
		else
			TAP_DIAG("instance %d: cbc %.1f, brute force %lld", t, obj, (long long)best_cost);
	}
	TAP_OK(compared >= 5 && agree == compared, "cbc on shard_mip_write's MIP finds the brute-force optimum (%d of %d)",
	       agree, compared);
}

static void test_determinism(void)
{
	struct shard_problem p;
	struct shard_heuristic_params prm;
	shard_heuristic_params_init(&prm);
	/* the work is bounded (max_rounds, lns_windows, node and iteration
	 * limits); the time limits are backstops that a loaded machine must
	 * not reach, or a phase cut short would make the runs differ */
	prm.time_limit = 3600;
	prm.max_rounds = 3000;
	rng_state = 777;
	problem_random(&p, 300, 6, 1000);
	p.usage_limit = INT64_MAX;
	int *a = malloc(sizeof *a * 300), *b = malloc(sizeof *b * 300);
	struct shard_eval ea, eb;
	int ra = shard_heuristic(&p, &prm, a, &ea), rb = shard_heuristic(&p, &prm, b, &eb);
	TAP_OK(ra == 0 && rb == 0 && !memcmp(a, b, sizeof *a * 300) && ea.cost == eb.cost,
	       "two runs on a 300-node instance give the same assignment");
	prm.seed = 2;
	shard_heuristic(&p, &prm, b, &eb);
	char c1[SHARD_I128_STRLEN], c2[SHARD_I128_STRLEN];
	TAP_DIAG("300 nodes: seed 1 cost %s, seed 2 cost %s", shard_i128_str(ea.cost, c1), shard_i128_str(eb.cost, c2));
	/* shard_solve: the same, with a memory limit that binds */
	struct shard_solve_params sp;
	shard_solve_params_init(&sp);
	sp.time_limit = 3600;
	sp.max_rounds = 2000;
	sp.lns_windows = 60;
	p.usage_limit = 0;
	int *lu = malloc(sizeof *lu * 300);
	for (int i = 0; i < 300; i++) /* the least-usage peak, plus some room */
		lu[i] = 0;
	for (int i = 0; i < 300; i++)
		for (int s = 1; s < shard_problem_nstrat(&p, i); s++)
			if (p.usage[p.strat_off[i] + s] < p.usage[p.strat_off[i] + lu[i]])
				lu[i] = s;
	struct shard_eval el;
	shard_evaluate(&p, lu, &el);
	p.usage_limit = (int64_t)el.peak_usage + 20;
	/* both paths: the whole reduced problem as one MIP (its
	 * branch-and-bound stopped by the node count: run to the end, this
	 * MIP takes several CPU seconds, which a loaded machine once turned
	 * into a timed-out and so different run) and, with fewer MIP columns
	 * allowed, the Lagrangian phase and the MIP windows */
	static const char *path[2] = {"the whole MIP", "Lagrangian and windows"};
	sp.mip_node_limit = 200;
	sp.mip_it_limit = 3000;
	struct shard_solve_stats sa, sb;
	for (int x = 0; x < 2; x++) {
		sp.mip_max_cols = x == 0 ? 80000 : 3000;
		sp.stats = &sa;
		double t0 = shard_now();
		ra = shard_solve(&p, &sp, a, &ea);
		double took = shard_now() - t0;
		/* The second run sees a machine SLOW times slower (or as loaded):
		 * the phases must still end at their counts, not at shares of the
		 * time limit, and give the same answer. The first run's time
		 * scaled stays well inside the backstop on any host. */
		sp.stats = &sb;
		enum { SLOW = 250 };
		shard_clock_scale(SLOW);
		rb = shard_solve(&p, &sp, b, &eb);
		shard_clock_scale(1);
		TAP_DIAG("%s: %.3f s, %.0f s on a machine %d times slower, of the %.0f s backstop", path[x], took,
			 took * SLOW, (int)SLOW, sp.time_limit);
		TAP_OK(ra == 0 && rb == 0 && !memcmp(a, b, sizeof *a * 300) && ea.cost == eb.cost && ea.feasible &&
			       !sa.timed_out && !sb.timed_out,
		       "shard_solve (%s): a 300-node instance with a binding limit gets the same assignment on a "
		       "machine %d times slower, the time limit not reached",
		       path[x], (int)SLOW);
		/* and a backstop that does fire is reported */
		sp.time_limit = 1e-9;
		rb = shard_solve(&p, &sp, b, &eb);
		sp.time_limit = 3600;
		TAP_OK(rb == 0 && eb.feasible && sb.timed_out,
		       "shard_solve (%s): a time limit that cuts the search short says so (stats.timed_out)", path[x]);
	}
	sp.stats = NULL;
	free(lu);
	free(a);
	free(b);
	shard_problem_free(&p);
}

/* ---- malformed files ----------------------------------------------------- */

static const char *write_file(const char *name, const char *text)
{
	static char path[4096];
	snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
	FILE *f = fopen(path, "wb");
	fputs(text, f);
	fclose(f);
	return path;
}

#define NODES_OK "\"nodes\": {\"costs\": [[1, 2], [3]], \"usages\": [[1, 1], [2]], \"intervals\": [[0, 2], [1, 3]]}"

static void expect_error(const char *name, const char *text, const char *msg)
{
	struct shard_problem p;
	const char *path = write_file(name, text);
	int rc = shard_problem_read_iopddl(path, &p);
	TAP_OK(rc < 0 && has(path) && has(msg), "%s: rejected with \"%s\"", name, msg);
}

static void test_malformed(void)
{
	expect_error("syntax.json", "{\"problem\": {", "malformed JSON at line 1");
	expect_error("nokey.json", "{\"problem\": {\"nodes\": {\"costs\": [[1]], \"intervals\": [[0, 1]]}, "
				   "\"edges\": {\"nodes\": [], \"costs\": []}, \"usage_limit\": 5}}",
		     "problem.nodes: missing key \"usages\"");
	expect_error("noedge.json", "{\"problem\": {" NODES_OK ", \"edges\": {\"nodes\": [[0, 2]], \"costs\": [[0]]}}}",
		     "problem.edges.nodes[0]: node 2 does not exist (2 nodes)");
	expect_error("matrix.json", "{\"problem\": {" NODES_OK ", \"edges\": {\"nodes\": [[0, 1]], \"costs\": [[0, 1, 2]]}}}",
		     "problem.edges.costs[0]: has 3 entries, expected 2 x 1 = 2");
	expect_error("usages.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1, 2]], \"usages\": [[1]], \"intervals\": [[0, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.usages[0]: has 1 entries, expected 2");
	expect_error("negative.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1]], \"usages\": [[-1]], \"intervals\": [[0, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.usages[0][0]: negative usage -1");
	expect_error("interval.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1]], \"usages\": [[1]], \"intervals\": [[3, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.intervals[0]: [3, 1) has lo > hi");
	expect_error("real.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1.5]], \"usages\": [[1]], \"intervals\": [[0, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.costs[0][0]: expected an integer");
	/* gzip magic, then garbage */
	expect_error("bad.json.gz", "\x1f\x8b\x08\x00garbage that is not deflate data", "cannot read");
	struct shard_problem p;
	char path[4096];
	snprintf(path, sizeof path, "%s/missing.json", tmp_dir);
	TAP_OK(shard_problem_read_iopddl(path, &p) < 0 && has("missing.json: cannot open"), "a missing file: cannot open");

	/* A valid gzip file reads like the plain one; cut short, it fails. */
	snprintf(path, sizeof path, "%s/ok.json.gz", tmp_dir);
	const char *text = "{\"problem\": {" NODES_OK ", \"edges\": {\"nodes\": [[0, 1]], \"costs\": [[5, 7]]}, "
			   "\"usage_limit\": 3}}";
	gzFile gz = gzopen(path, "wb");
	gzputs(gz, text);
	gzclose(gz);
	TAP_OK(shard_problem_read_iopddl(path, &p) == 0 && p.nnodes == 2 && p.edge_cost[1] == 7 && p.usage_limit == 3,
	       "a gzip-compressed instance reads: %s", shard_error());
	shard_problem_free(&p);
	FILE *f = fopen(path, "rb");
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	f = fopen(path, "wb");
	fwrite(buf, 1, n - 12, f);
	fclose(f);
	TAP_OK(shard_problem_read_iopddl(path, &p) < 0 && has("cannot read"), "a truncated gzip file is rejected");
}

/* ---- contest instances --------------------------------------------------- */

static void test_shared(const char *id, const char *best_known)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/asplos-2025-iopddl-%s.json.gz", shared_dir, id);
	if (access(path, R_OK) != 0) {
		printf("ok %d - # SKIP %s: no %s\n", ++tap_n, id, path);
		return;
	}
	struct shard_problem p;
	struct shard_solve_params prm;
	shard_solve_params_init(&prm);
	prm.time_limit = 2;
	if (!TAP_OK(shard_problem_read_iopddl(path, &p) == 0, "%s reads: %s", id, shard_error()))
		return;
	int *c = malloc(sizeof *c * (size_t)p.nnodes);
	struct shard_eval ev;
	int rc = shard_solve(&p, &prm, c, &ev);
	char b[SHARD_I128_STRLEN];
	TAP_OK(rc == 0 && ev.feasible, "%s (%d nodes): feasible within 2 s", id, p.nnodes);
	TAP_DIAG("%s: cost %s, best known %s (ratio %.3f)", id, shard_i128_str(ev.cost, b), best_known,
		 (double)ev.cost / atof(best_known));
	free(c);
	shard_problem_free(&p);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		example_dir = argv[1];
	if (argc > 2)
		shared_dir = argv[2];
	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_example();
	test_evaluator_extremes();
	test_brute_force();
	test_reduce();
	test_solve_brute_force();
	test_dedup();
	test_trws();
	test_lagr();
	test_mip_cbc();
	test_determinism();
	test_malformed();
	test_shared("B", "532843");
	test_shared("G", "217039");
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
	if (system(cmd) != 0)
		TAP_DIAG("could not remove %s", tmp_dir);
	return tap_done();
}
