/*
 * shard_model.h: the reduced strategy problem that shard_solve works on, and
 * the reductions that build it (shard_reduce.c, shard_model.c). Internal to
 * solvers/.
 *
 * A model node stands for one original node that survived the reductions;
 * its strategies are the original strategies still alive. Eliminated nodes
 * leave records (fixed strategy, best response to one neighbour, best
 * response to a pair of neighbours) that shard_model_expand replays in
 * reverse to recover a full assignment.
 *
 * Memory is no longer one interval per node: eliminating a leaf moves its
 * usage, now a function of the neighbour's strategy, onto the neighbour as
 * an extra piece. A piece is a range of time segments [a, b) and one usage
 * per strategy of its node; usage that no choice can change is summed into
 * base[] per segment. Segments where even the largest usages fit are not
 * binding, and pieces are cut to the binding ones.
 */
#ifndef PCC_SOLVERS_SHARD_MODEL_H
#define PCC_SOLVERS_SHARD_MODEL_H

#include "solvers/shard_internal.h"

struct shard_piece {
	int a, b;    /* segments [a, b) */
	int64_t use; /* offset into shard_model.use: one entry per strategy of the node */
};

/* How an eliminated node's strategy follows from the kept ones. */
enum shard_rec_kind {
	SHARD_REC_FIX,  /* node j takes strategy s */
	SHARD_REC_LEAF, /* j takes resp[choice[i]] */
	SHARD_REC_PAIR, /* j takes resp[choice[i] * |S_l| + choice[l]] */
	SHARD_REC_COUNT
};

struct shard_rec {
	enum shard_rec_kind kind;
	int j, i, l, s;
	int *resp; /* original local strategy indices */
};

struct shard_model {
	const struct shard_problem *p;
	int64_t inf; /* costs at or above are forbidden; sums saturate here */

	int n;         /* model nodes */
	int *node;     /* per model node: the original node */
	int *off;      /* n+1: strategies of node i are off[i] .. off[i+1]-1 */
	int64_t *cost; /* per model strategy: node cost plus folded terms */
	int *orig;     /* per model strategy: the original local strategy */

	int *poff; /* n+1: pieces of node i are piece[poff[i] .. poff[i+1]-1] */
	struct shard_piece *piece;
	int64_t *use; /* bytes, per piece and strategy */

	int m; /* edges, parallel ones merged */
	int *eu, *ev;
	int64_t *eoff;  /* m+1 */
	int64_t *ecost; /* row major over model strategies, |S_eu| x |S_ev| */

	int nseg;         /* time segments */
	shard_i128 *base; /* per segment: usage fixed whatever the choice */
	int64_t limit;
	shard_i128 offset; /* cost of the fixed nodes, in every assignment */

	struct shard_rec *rec; /* in elimination order */
	int nrec;
	/* Set when pruning left some node with no finite strategy: the model
	 * is then empty and the caller must search the problem itself. */
	bool no_finite;
};

static inline int shard_model_nstrat(const struct shard_model *m, int i)
{
	return m->off[i + 1] - m->off[i];
}

struct shard_reduce_stats {
	int rounds, fixed, leaves, pairs, followers, dominated, pruned, pieces_cut;
};

/* Reduces p into m (forbidden: the cost that marks impossible
 * combinations). Exact: every optimum of m expands to an optimum of p, and
 * every feasible choice of m expands to a feasible choice of p with the
 * same cost (saturation aside). 0 or -ENOMEM. */
int shard_reduce(const struct shard_problem *p, int64_t forbidden, struct shard_model *m,
		 struct shard_reduce_stats *stats);
/* The model of p without any reduction (every node and strategy kept). */
int shard_model_plain(const struct shard_problem *p, int64_t forbidden, struct shard_model *m);
void shard_model_free(struct shard_model *m);
/* Expands a model assignment (n entries, local to model nodes) into an
 * assignment of p (nnodes entries). */
void shard_model_expand(const struct shard_model *m, const int *mchoice, int *choice);
/* The model assignment that an assignment of p restricts to; false when
 * some kept node's strategy was reduced away. */
bool shard_model_restrict(const struct shard_model *m, const int *choice, int *mchoice);
/* Exact cost and peak usage of a model assignment (for checks). */
shard_i128 shard_model_cost(const struct shard_model *m, const int *mchoice);
shard_i128 shard_model_peak_slack(const struct shard_model *m, const int *mchoice);

#endif
