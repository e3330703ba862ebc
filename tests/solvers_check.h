/*
 * solvers_check.h: shared by the solver library's tests (test_solvers_*.c):
 * message and int128 checks, problems built in memory (empty ones to fill,
 * seeded random ones) and their optimum by enumerating every assignment.
 */
#ifndef PCC_TESTS_SOLVERS_CHECK_H
#define PCC_TESTS_SOLVERS_CHECK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/solvers.h"
#include "tests/tap.h"

static inline bool has(const char *s)
{
	bool ok = strstr(shard_error(), s) != NULL;
	if (!ok)
		TAP_DIAG("message was: %s", shard_error());
	return ok;
}

static inline bool i128_is(shard_i128 v, const char *want)
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
static inline void problem_alloc(struct shard_problem *p, int n, int kmax, int e)
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

static inline uint64_t rnd(uint64_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (rng_state >> 33) % n;
}

/* A random instance: n nodes of 1..kmax strategies, up to 2n edges, costs
 * up to cmax, intervals within [0, 20), a limit between the least and the
 * largest possible peak so that it sometimes binds and is sometimes
 * infeasible. */
static inline void problem_random(struct shard_problem *p, int n, int kmax, int64_t cmax)
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

/* ---- brute force --------------------------------------------------------- */

/* The optimum by enumeration: 0 with best set, or -ENOSPC. */
static inline int brute_force(const struct shard_problem *p, int *best, shard_i128 *best_cost)
{
	int n = p->nnodes, c[16] = { 0 }, found = 0;
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

#endif
