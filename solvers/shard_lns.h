/*
 * shard_lns.h: large-neighbourhood search with exact MIP windows
 * (shard_lns.c). Internal to solvers/.
 */
#ifndef PCC_SOLVERS_SHARD_LNS_H
#define PCC_SOLVERS_SHARD_LNS_H

#include "solvers/shard_mip.h"

struct lns_params {
	int window;     /* nodes per window to start with */
	int max_window; /* at most */
	int max_cols;   /* MIP columns per window */
	int node_limit; /* branch-and-bound nodes per window */
	double gap;
	bool presolve;
	bool soft; /* soft window boundaries (shard_mip.h) */
	/* simplex iterations: exact solves cheaper than this grow the window,
	 * ones over 4 times it shrink it (iterations, not seconds, so that
	 * the sequence of windows does not depend on the machine) */
	int cheap;
	int max_windows;
	uint64_t seed;
	bool verbose;
	double t0;
	/* simplex iterations over all windows: no window starts once they
	 * are spent (0: no limit); a count of work, not of seconds, so that
	 * the search's length does not depend on the machine's load */
	int64_t max_iterations;
	int patience; /* windows in a row without improvement that end the
		       * search (0: no such end) */
};

struct lns_stats {
	int windows, optimal, improved, final_window;
	int64_t iterations; /* simplex iterations over all windows */
};

/* Improves st's feasible assignment window by window until max_windows
 * or max_iterations are reached, or st's deadline; ms runs the descent
 * after each improvement. */
int shard_lns(struct mstate *st, struct msearch *ms, const struct lns_params *prm, struct lns_stats *stats);

/* Moves st to the window's new strategies (mv) when that costs less and
 * fits; *taken says whether it did. The MIP's doubles only propose: the
 * cost change is summed exactly and the memory checked on the tree. */
int lns_take(struct mstate *st, const struct mip_moves *mv, bool *taken);

#endif
