/*
 * shard_reduce.h: the reducer's working graph, shared by the reduction
 * rules (shard_reduce.c) and the graph plumbing with the final compaction
 * (shard_model.c). Internal to solvers/.
 *
 * Strategies keep their original indices while reducing: matrices stay
 * indexed by them and a removed strategy is only marked dead, so no matrix
 * is ever copied to shrink it.
 */
#ifndef PCC_SOLVERS_SHARD_REDUCE_H
#define PCC_SOLVERS_SHARD_REDUCE_H

#include "solvers/shard_model.h"

struct wedge {
	int u, v;
	const int64_t *mat; /* |S_u| x |S_v| over original local strategies */
	int64_t *own;       /* mat when allocated here (merged or new) */
	bool dead;
};

struct wpiece {
	int a, b;    /* segments [a, b) */
	int64_t use; /* offset into the pool: |S_node| entries */
	int next;    /* the node's next piece, -1 */
};

struct red {
	const struct shard_problem *p;
	int64_t inf;
	int n;
	unsigned char *alive; /* per global strategy */
	int *nal;             /* per node: alive strategies */
	int64_t *cost;        /* per global strategy, saturated at inf */
	unsigned char *gone;  /* per node: eliminated */

	struct wedge *e;
	int ne, ecap;
	/* open addressing from the node pair to edge ids (dead ones stay
	 * until a rehash), so that adding an edge to a hub does not scan it */
	int *hash;
	int hcap, hused;
	int **adj; /* per node: incident edge ids, dead ones left until compacted */
	int *adj_n, *adj_cap, *deg;

	struct wpiece *pc;
	int npc, pccap;
	int *phead; /* per node: first piece or -1 */
	int64_t *pool;
	int64_t pool_n, pool_cap;

	int nseg;
	shard_i128 *fixed;          /* nseg+1: difference array of fixed usage */
	int *next_bind, *prev_bind; /* nseg+1: nearest binding segment >= s, <= s (-1 none) */

	int *q; /* FIFO worklist of nodes */
	unsigned char *inq;
	int qhead, qcount;

	struct shard_rec *rec;
	int nrec, reccap;
	shard_i128 offset;  /* node costs of fixed nodes */
	int64_t dom_budget; /* comparison steps left for dominance */
	struct shard_reduce_stats *stats;
	bool wiped; /* some node lost every strategy */
};

static inline int red_k(const struct red *r, int i)
{
	return shard_problem_nstrat(r->p, i);
}

static inline int64_t red_sat(const struct red *r, shard_i128 x)
{
	if (x >= r->inf)
		return r->inf;
	return x < -(shard_i128)r->inf ? -r->inf : (int64_t)x;
}

/* Matrix entry of live edge e with node's strategy a and the other end's b,
 * clamped to inf. */
static inline int64_t red_ent(const struct red *r, const struct wedge *e, int node, int a, int b)
{
	int64_t x = e->u == node ? e->mat[(int64_t)a * red_k(r, e->v) + b] : e->mat[(int64_t)b * red_k(r, e->v) + a];
	return x >= r->inf ? r->inf : x;
}

static inline int red_other(const struct wedge *e, int node)
{
	return e->u == node ? e->v : e->u;
}

static inline bool red_alive(const struct red *r, int i, int s)
{
	return r->alive[r->p->strat_off[i] + s];
}

/* shard_model.c: plumbing */
int red_init(struct red *r, const struct shard_problem *p, int64_t inf);
void red_free(struct red *r);
void red_push(struct red *r, int i);
int red_pop(struct red *r);
void red_push_neighbours(struct red *r, int i);
/* Live incident edges of i (compacts i's list first); *ids valid until the
 * next edge change. */
int red_edges(struct red *r, int i, int **ids);
void red_edge_kill(struct red *r, int k);
/* Adds matrix mat (|S_u| x |S_v|, original indices) as an edge u-v,
 * summing into an existing one; takes ownership when owned. */
int red_edge_add(struct red *r, int u, int v, const int64_t *mat, bool owned);
/* A new piece of node i over [a, b); *use gets its pool offset. */
int red_piece_add(struct red *r, int i, int a, int b, int64_t *use);
void red_kill(struct red *r, int i, int s);
int red_record(struct red *r, struct shard_rec rec);
/* Compacts the working graph into m. */
int red_compact(struct red *r, struct shard_model *m);

#endif
