/*
 * shard_mstate.h: the search state over a reduced model (shard_mstate.c)
 * and the searches that use it: local search (shard_msearch.c), exact
 * windows by MIP (shard_mip.c) and the large-neighbourhood loop over them
 * (shard_lns.c). Internal to solvers/.
 */
#ifndef PCC_SOLVERS_SHARD_MSTATE_H
#define PCC_SOLVERS_SHARD_MSTATE_H

#include "solvers/shard_model.h"
#include "solvers/shard_search.h"

/* Where a search reports its improved model assignments (shard_solve.c
 * expands them to the whole problem for shard_solve_params.incumbent). */
struct ms_pub {
	void (*fn)(void *ctx, const int *mchoice, shard_i128 cost, bool force);
	void *ctx;
};

struct mstate {
	const struct shard_model *m;
	int *choice;
	shard_i128 cost;            /* exact model cost of choice, offset included */
	int *adj_off;               /* n+1 offsets into adj */
	struct shard_adj *adj;      /* strides over model strategies */
	struct shard_tree tree;     /* usage per segment, base included */
	shard_i128 *local, *local2; /* scratch, maxk entries */
	/* per model strategy: node cost plus the node's edges at the
	 * neighbours' current strategies, kept up to date by every move (a
	 * hub's neighbours move often; recomputing it each time would cost
	 * its degree times its strategies) */
	shard_i128 *lc;
	int maxk;
	struct shard_undo *undo; /* moves since the last commit */
	int nundo, undo_cap;
	double deadline;
	bool timed_out;
	/* Sticky: some phase ran into a wall-clock deadline (timed_out is
	 * reset between phases; this is not), so the answer may depend on the
	 * machine's speed and load. */
	bool backstop;
	unsigned ticks;
	/* per node: the move counter when it last changed strategy, so that
	 * block moves can skip neighbourhoods that did not change */
	uint64_t *stamp;
	uint64_t clock;
	const struct ms_pub *pub; /* NULL: nobody listens */
};

int ms_init(struct mstate *st, const struct shard_model *m, double deadline);
void ms_free(struct mstate *st);
void ms_load(struct mstate *st, const int *choice);
/* local[q]: node cost of q plus i's edges at the neighbours' current
 * strategies; skip: a neighbour left out (-1: none); mask: when not NULL,
 * only neighbours with mask[j] count. */
void ms_local(const struct mstate *st, int i, int skip, const unsigned char *mask, shard_i128 *local);
/* Whether moving i to q keeps every segment within the limit. */
bool ms_fits(const struct mstate *st, int i, int q);
/* How far the segments i's move to q touches rise above the limit at
 * most (<= 0: fits). */
shard_i128 ms_excess(const struct mstate *st, int i, int q);
/* Whether moving u to a and v to b together fits (the tree is restored). */
bool ms_fits_pair(struct mstate *st, int u, int a, int v, int b);
int ms_move(struct mstate *st, int i, int q, shard_i128 dcost);
void ms_undo(struct mstate *st);
static inline void ms_commit(struct mstate *st)
{
	st->nundo = 0;
}
bool ms_late(struct mstate *st);
/* Reports choice, a feasible assignment of st's model costing cost, to
 * st->pub (force: even within the reporting interval, at a phase end). */
static inline void ms_publish(const struct mstate *st, const int *choice, shard_i128 cost, bool force)
{
	if (st->pub)
		st->pub->fn(st->pub->ctx, choice, cost, force);
}
static inline shard_i128 ms_peak(const struct mstate *st)
{
	return shard_tree_peak(&st->tree);
}
static inline bool ms_feasible(const struct mstate *st)
{
	return st->tree.n == 0 || ms_peak(st) <= st->m->limit;
}
static inline int64_t ms_use(const struct shard_model *m, int piece, int q)
{
	return m->use[m->piece[piece].use + q];
}

/* ---- local search (shard_msearch.c) --------------------------------------- */

struct msearch_params {
	uint64_t seed;
	bool verbose;
	double t0; /* for progress lines */
};

struct msearch {
	struct mstate *st;
	struct msearch_params prm;
	struct shard_queue q;
	struct shard_dp dp;
	int *save;
	unsigned char *mask;
	int64_t *tot;      /* per model strategy: usage summed over the node's pieces */
	uint64_t *star_at; /* per node: st->clock at its last star move */
	uint64_t rng;
	/* repair's: the nodes with a piece covering segment cover_j, and
	 * those pieces (pieces never change: kept while the peak stays at
	 * cover_j, as it mostly does from one repair move to the next) */
	int cover_j, ncover;
	int *cover_node, *cover_piece;
	int64_t *least_use; /* per piece: its least usage over the node's strategies */
	/* block rounds of msearch_improve run, and those that lowered the
	 * cost: [0] forest DP, [1] star moves */
	int blocks[2], blocks_won[2];
};

int msearch_init(struct msearch *r, struct mstate *st, const struct msearch_params *prm);
void msearch_free(struct msearch *r);
/* Greedy starts, repaired and descended; leaves the best in st. 0 with st
 * feasible, -ENOSPC when no start could be repaired, or -ENOMEM. */
int msearch_start(struct msearch *r);
/* Up to rounds perturbation and block rounds from st's feasible
 * assignment, keeping only what costs no more; stops at st's deadline. */
int msearch_improve(struct msearch *r, int rounds);
/* Memory repair of st's assignment (loaded, possibly over the limit):
 * 0 when feasible, -ENOSPC when stuck. */
int msearch_repair(struct msearch *r);
/* Full descent (single and pair moves) from st's feasible assignment. */
int msearch_descend(struct msearch *r);

#endif
