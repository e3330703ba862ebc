/*
 * shard_search.h: the heuristic's moves (shard_search.c), shared with its
 * driver (shard_heuristic.c). Internal to solvers/.
 */
#ifndef PCC_SOLVERS_SHARD_SEARCH_H
#define PCC_SOLVERS_SHARD_SEARCH_H

#include "solvers/shard_internal.h"

/* A FIFO of node indices, each at most once. */
struct shard_queue {
	int n, head, count;
	int *item;
	unsigned char *in;
};

int shard_queue_init(struct shard_queue *q, int n);
void shard_queue_free(struct shard_queue *q);
void shard_queue_push(struct shard_queue *q, int i);
int shard_queue_pop(struct shard_queue *q);
void shard_queue_push_neighbours(struct shard_queue *q, const struct shard_state *st, int i);

/* Single-node descent until the queue empties or time runs out; adds the
 * number of moves to *moved. The state must be feasible and stays so. */
int shard_descend(struct shard_state *st, struct shard_queue *q, int *moved);
/* The best improving joint move of edge k's ends: 1 moved, 0 not, or < 0. */
int shard_pair_move(struct shard_state *st, int k);

/* The forest DP block move (shard_dp.c) and its scratch memory. It sees a
 * graph view, so that it serves the original problem and reduced models. */
struct shard_graph {
	int n, m;
	const int *off; /* n+1: strategies of node i are off[i] .. off[i+1]-1 */
	const int *eu, *ev;
	const int64_t *eoff, *ecost;
	const int *adj_off;
	const struct shard_adj *adj;
	const int *choice;          /* the current assignment */
	const unsigned char *alive; /* per strategy, or NULL: all */
	/* out[q] = node cost of q plus i's edges at the current neighbours,
	 * plus whatever the caller prices in (memory). */
	void (*local)(void *ctx, int i, shard_i128 *out);
	void *ctx;
};

struct shard_dp {
	int *perm, *tmp;
	int64_t *key;
	unsigned char *is_tree;
	int *uf, *order, *up;
	int64_t *arg_off;
	int *arg;
	int64_t arg_cap;
	shard_i128 *f;
	int *choice; /* the proposal */
};

int shard_dp_init(struct shard_dp *dp, int n, int m, int nstrat);
void shard_dp_free(struct shard_dp *dp);
/* Fills dp->choice with the forest optimum around g's assignment (memory
 * not checked); rng(seed) draws the forest. */
int shard_dp_propose(struct shard_dp *dp, const struct shard_graph *g, uint64_t (*rng)(uint64_t *), uint64_t *seed);
/* The view of a heuristic state. */
void shard_state_graph(struct shard_state *st, struct shard_graph *g);
#endif
