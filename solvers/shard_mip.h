/*
 * shard_mip.h: exact solves of windows of a reduced model by GLPK
 * (shard_mip.c). Internal to solvers/.
 */
#ifndef PCC_SOLVERS_SHARD_MIP_H
#define PCC_SOLVERS_SHARD_MIP_H

#include "solvers/shard_mstate.h"

struct mip_params {
	int node_limit;    /* branch-and-bound nodes */
	int it_limit;      /* simplex iterations of the root LP (0: none) */
	double gap;        /* relative MIP gap */
	double time_limit; /* seconds, a backstop only */
	int max_cols;      /* windows needing more columns are not built */
	int max_nnz;       /* nor solved with more nonzeros (0: no limit) */
	bool presolve;     /* GLPK's MIP presolver (no warm start then) */
	/* Outside nodes with one neighbour in the window follow it with their
	 * best response (no more memory than now) instead of staying fixed:
	 * a hub inside can change although its other neighbours are not. */
	bool soft;
	/* Memory rows only where the incumbent is tight, the others added
	 * when a solution breaks them (for windows of nodes with many pieces) */
	bool lazy;
	bool verbose; /* GLPK's own output */
};

struct mip_result {
	int cols, rows, mem_rows;
	bool solved;     /* GLPK returned an integer solution */
	bool optimal;    /* and proved it optimal within the gap */
	bool too_big;    /* over max_cols: nothing was built */
	int iterations;  /* simplex iterations, a deterministic measure of work */
	int lazy_rounds; /* re-solves after adding broken memory rows */
	bool timed_out;  /* GLPK stopped at the time limit (the backstop) */
	double seconds;
};

/* Moves proposed by a window: node[k] to strategy to[k]. */
struct mip_moves {
	int n, cap;
	int *node, *to;
};

int moves_reserve(struct mip_moves *mv, int n);
void moves_free(struct mip_moves *mv);

/* Solves window nodes[0..nw-1] of st's model with the other nodes fixed at
 * st's assignment (or following, see soft); when res->solved, mv holds the
 * window's strategies (first nw moves, in window order) and the
 * followers'. 0, or -ENOMEM. */
int shard_mip_window(const struct mstate *st, const int *nodes, int nw, const struct mip_params *prm,
		     struct mip_moves *mv, struct mip_result *res);
/* Writes the MIP of the whole model (st's assignment as the fixed part of
 * nothing) to path, CPLEX LP or, for a ".mps" name, free MPS. 0, -ENOMEM,
 * or -EIO. */
int shard_mip_write_model(const struct mstate *st, const char *path);

#endif
