/*
 * test_solvers_search.c: the intra-op solver's search phases and their
 * determinism (solvers/shard_*.c): TRW-S exact on trees and pricing its
 * labelings exactly on loopy graphs, the Lagrangian search (feasible,
 * exactly priced, never above its start or below the brute-force
 * optimum), and the heuristic and shard_solve giving the same assignment
 * on two runs and on a machine 250 times slower (shard_clock_scale), a
 * time limit that fires reported as such.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_lagr.h"
#include "solvers/shard_model.h"
#include "tests/solvers_check.h"

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
		struct msearch_params mp = { 1, false, shard_now() };
		ms_init(&st, &m, shard_now() + 60);
		msearch_init(&ms, &st, &mp);
		int rc = msearch_start(&ms);
		bool have = rc == 0, started = have;
		shard_i128 start = st.cost;
		struct lagr_params lp = { shard_now() + 10, 40, false, shard_now() };
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
	TAP_OK(runs > 40 && wrong == 0,
	       "lagrange: feasible, exactly priced, never worse than its start (%d runs, %d wrong)", runs, wrong);
}

/* msearch_improve's block rounds back off when they keep failing: from a
 * descended start on random models with a binding limit, a kind that
 * never lowers the cost runs at its turns 0, 2, 6, 14, 30 and 62 only
 * (6 of 2000 rounds' 63 forest turns; 5 of their 62 star turns), and what the rounds leave is
 * feasible, priced exactly and no worse than the start. */
static void test_backoff(void)
{
	int runs = 0, wrong = 0, idle = 0, too_many = 0, won = 0;
	const int64_t forbidden = 1000000000000000000;
	rng_state = 1618;
	for (int t = 0; t < 80; t++) {
		struct shard_problem p;
		problem_random(&p, 4 + (int)rnd(9), 4, 100);
		struct shard_model m;
		if (shard_model_plain(&p, forbidden, &m) != 0) {
			wrong++;
			shard_problem_free(&p);
			continue;
		}
		struct mstate st;
		struct msearch ms;
		struct msearch_params mp = { 7, false, shard_now() };
		ms_init(&st, &m, shard_now() + 60);
		msearch_init(&ms, &st, &mp);
		if (msearch_start(&ms) == 0) {
			runs++;
			shard_i128 start = st.cost;
			if (msearch_improve(&ms, 2000) != 0 || !ms_feasible(&st) ||
			    st.cost != shard_model_cost(&m, st.choice) || st.cost > start)
				wrong++;
			for (int kind = 0; kind < 2; kind++) {
				won += ms.blocks_won[kind];
				if (ms.blocks_won[kind] == 0) {
					idle++;
					too_many += ms.blocks[kind] != (kind == 0 ? 6 : 5);
				}
			}
		}
		msearch_free(&ms);
		ms_free(&st);
		shard_model_free(&m);
		shard_problem_free(&p);
	}
	TAP_DIAG("backoff: %d runs, %d block kinds that never won, %d winning block rounds", runs, idle, won);
	TAP_OK(runs > 30 && wrong == 0, "block rounds: feasible, exactly priced, never worse (%d runs, %d wrong)", runs,
	       wrong);
	TAP_OK(idle > 30 && too_many == 0,
	       "a block kind that never wins runs 6 of 63 turns, or 5 of 62 (%d of %d kinds ran another count)",
	       too_many, idle);
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
	static const char *path[2] = { "the whole MIP", "Lagrangian and windows" };
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

int main(void)
{
	test_trws();
	test_lagr();
	test_backoff();
	test_determinism();
	return tap_done();
}
