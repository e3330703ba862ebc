/*
 * test_solvers_exact.c: the intra-op solvers (solvers/solvers.h) against
 * the optimum found by enumerating every assignment, on seeded random
 * instances: the heuristic (a feasible solution whenever one exists, the
 * optimum on most), the reductions (the optimum kept, and expanded back),
 * shard_solve (the optimum on every feasible instance, -ENOSPC on the
 * rest), repeated identical sub-problems solved once (shard_dedup.c), and
 * the MIP that shard_mip_write writes, solved by COIN-OR CBC (skipped
 * without cbc).
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_model.h"
#include "tests/solvers_check.h"
#include "tests/tmpdir.h"

static char tmp_dir[] = "/tmp/test_solvers.XXXXXX";

/* ---- against brute force ------------------------------------------------- */

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
	int c[16] = { 0 }, found = 0, full[16];
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
	int shift[K] = { 0, 1, 2, 3, 4, 5 };
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
	int shift2[K] = { 0, 1, -1, -1, -1, -1 };
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
	int shift3[K] = { 0, 0, 0, 0, 0, 0 };
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
	TAP_OK(compared >= 5 && agree == compared,
	       "cbc on shard_mip_write's MIP finds the brute-force optimum (%d of %d)", agree, compared);
}

int main(void)
{
	if (tmpdir_make(tmp_dir) < 0)
		return 1;
	test_brute_force();
	test_reduce();
	test_solve_brute_force();
	test_dedup();
	test_mip_cbc();
	tmpdir_remove(tmp_dir);
	return tap_done();
}
