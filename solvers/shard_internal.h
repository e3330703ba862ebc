/*
 * shard_internal.h: helpers shared by the solver library's files; not part of
 * the interface (solvers.h is).
 */
#ifndef PCC_SOLVERS_SHARD_INTERNAL_H
#define PCC_SOLVERS_SHARD_INTERNAL_H

#include "solvers/solvers.h"

/* Records a message for shard_error() and returns code (negative errno). */
int shard_errorf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Seconds on a monotonic clock. */
double shard_now(void);

/* qsort comparator of int64_t. */
int shard_cmp_i64(const void *a, const void *b);

/* Whether node i holds memory: a non-empty interval and a positive usage. */
bool shard_holds_memory(const struct shard_problem *p, int i);

/* The time line cut at the interval ends of the memory-holding nodes:
 * returns the number of segments (or -ENOMEM) and, per node, the
 * half-open segment range [seg_a[i], seg_b[i]) its interval covers (0, 0
 * for a node without memory). */
int shard_segments(const struct shard_problem *p, int *seg_a, int *seg_b);

/* The least-usage strategy of each node among those alive (all when alive
 * is NULL), ties to the lower cost: it minimizes every time point at once,
 * so when it does not fit, nothing does. */
void shard_least_usage(const struct shard_problem *p, const unsigned char *alive, int *choice);

/* The -ENOSPC message for a problem whose least-usage choice is over the
 * limit; evaluates it into out. */
int shard_infeasible(const struct shard_problem *p, const int *choice, struct shard_eval *out);

/* ---- the heuristic's working state (shard_state.c) ----------------------- */

/* Max segment tree with range add over the compressed time segments:
 * mx[x] = max over x's range of the usage, counting the adds stored at x
 * and below, so the root is the global peak. */
struct shard_tree {
	int n; /* segments */
	shard_i128 *mx, *add;
};

#define SHARD_NEG_INF (-((shard_i128)1 << 120))

/* One incident edge of a node: the edge and which end the node is. */
struct shard_adj {
	int edge;
	int other;   /* the other endpoint (the node itself for a self-loop) */
	int64_t row; /* stride to step by this node's strategy in the matrix */
	int64_t col; /* stride to step by the other node's strategy */
};

struct shard_undo {
	int node, from;
	shard_i128 dcost;
};

struct shard_state {
	const struct shard_problem *p;
	int *choice;
	shard_i128 cost; /* exact cost of choice */
	int *adj_off;    /* nnodes+1 offsets into adj */
	struct shard_adj *adj;
	int *seg_a, *seg_b; /* per node: its segments [seg_a, seg_b), empty if none */
	struct shard_tree tree;
	shard_i128 *local; /* scratch, max strategies entries: local costs */
	shard_i128 *local2;
	int maxk;
	/* Per global strategy: 0 when pruning proved it forbidden (a cost at or
	 * above the forbidden threshold in every completion); the search only
	 * takes alive strategies. */
	unsigned char *alive;
	/* Moves since the last commit, to undo a rejected round. */
	struct shard_undo *undo;
	int nundo, undo_cap;
	double deadline;
	bool timed_out;
	unsigned ticks;
};

int shard_state_init(struct shard_state *st, const struct shard_problem *p, double deadline);
void shard_state_free(struct shard_state *st);
/* Marks forbidden strategies dead (shard_prune.c); keeps all alive when
 * that would leave some node with none. */
int shard_state_prune(struct shard_state *st, int64_t forbidden);
/* Loads choice (all nodes) into the state: cost and tree rebuilt. */
void shard_state_load(struct shard_state *st, const int *choice);
/* Max usage over segments [a, b); SHARD_NEG_INF when empty. */
shard_i128 shard_tree_max(const struct shard_tree *t, int a, int b);
static inline shard_i128 shard_tree_peak(const struct shard_tree *t)
{
	return t->n ? t->mx[1] : 0;
}
/* Adds d to the usage of segments [a, b). */
void shard_tree_add(struct shard_tree *t, int a, int b, shard_i128 d);
/* The first segment holding the global peak. */
int shard_tree_argmax(const struct shard_tree *t);
/* local[q] = node cost of q plus the entries of i's edges with the
 * neighbours' current strategies; skip: a neighbour whose edges are left
 * out (-1: none); mask: when not NULL, only neighbours with mask[j] count. */
void shard_state_local(struct shard_state *st, int i, int skip, const unsigned char *mask, shard_i128 *local);
/* Moves node i to strategy q, with dcost the exact change of the total. */
int shard_state_move(struct shard_state *st, int i, int q, shard_i128 dcost);
/* Reverts every move since the last commit; commit forgets them. */
void shard_state_undo(struct shard_state *st);
static inline void shard_state_commit(struct shard_state *st)
{
	st->nundo = 0;
}
/* True once the deadline has passed (checked every few calls). */
bool shard_state_late(struct shard_state *st);

#endif
