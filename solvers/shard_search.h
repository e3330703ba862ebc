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
void shard_queue_push_neighbours(struct shard_queue *q, const struct shard_state *st, int i);

/* Single-node descent until the queue empties or time runs out; adds the
 * number of moves to *moved. The state must be feasible and stays so. */
int shard_descend(struct shard_state *st, struct shard_queue *q, int *moved);
/* The best improving joint move of edge k's ends: 1 moved, 0 not, or < 0. */
int shard_pair_move(struct shard_state *st, int k);



/* The forest DP block move (shard_dp.c) and its scratch memory. */
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

int shard_dp_init(struct shard_dp *dp, const struct shard_problem *p);
void shard_dp_free(struct shard_dp *dp);
/* Fills dp->choice with the forest optimum around st's assignment (memory
 * not checked); rng(seed) draws the forest. */
int shard_dp_propose(struct shard_dp *dp, struct shard_state *st, uint64_t (*rng)(uint64_t *), uint64_t *seed);
#endif
