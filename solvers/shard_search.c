/*
 * shard_search.c: the heuristic's improving moves, on a feasible state.
 *
 * Single-node moves: for node i, local[q] (node cost plus edge entries with
 * the neighbours' current strategies) gives the exact cost change of every
 * strategy q; the move is allowed when the peak over i's segments plus the
 * usage change stays within the limit. Moves must decrease (cost, usage)
 * lexicographically, so equal-cost moves that free memory are taken too and
 * the descent terminates. A FIFO work queue revisits the neighbours of each
 * moved node, in a fixed order.
 *
 * Edge-pair moves: for an edge (u, v), every pair (p, q) is priced exactly
 * as lu[p] + lv[q] + M[p][q] (the locals leaving out the edges between u and
 * v), and its memory checked in O(1) from three range maxima: segments of
 * u only, of v only, and of both.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_search.h"

int shard_queue_init(struct shard_queue *q, int n)
{
	q->n = n;
	q->head = q->count = 0;
	q->item = malloc(sizeof *q->item * ((size_t)n + 1));
	q->in = calloc((size_t)n + 1, 1);
	return q->item && q->in ? 0 : shard_errorf(-ENOMEM, "heuristic: out of memory");
}

void shard_queue_free(struct shard_queue *q)
{
	free(q->item);
	free(q->in);
	memset(q, 0, sizeof *q);
}

void shard_queue_push(struct shard_queue *q, int i)
{
	if (q->in[i])
		return;
	q->in[i] = 1;
	q->item[(q->head + q->count) % q->n] = i;
	q->count++;
}

int shard_queue_pop(struct shard_queue *q)
{
	int i = q->item[q->head];
	q->head = (q->head + 1) % q->n;
	q->count--;
	q->in[i] = 0;
	return i;
}

void shard_queue_push_neighbours(struct shard_queue *q, const struct shard_state *st, int i)
{
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++)
		shard_queue_push(q, st->adj[j].other);
}

static int64_t usage_of(const struct shard_state *st, int i, int q)
{
	return st->p->usage[st->p->strat_off[i] + q];
}

/* The best improving single move of node i, or -1. */
static int best_single(struct shard_state *st, int i, shard_i128 *dcost)
{
	int k = shard_problem_nstrat(st->p, i), c = st->choice[i], best = c;
	if (k == 1)
		return -1;
	shard_i128 *local = st->local;
	shard_state_local(st, i, -1, NULL, local);
	shard_i128 room = (shard_i128)st->p->usage_limit - shard_tree_max(&st->tree, st->seg_a[i], st->seg_b[i]);
	int64_t uc = usage_of(st, i, c);
	const unsigned char *alive = st->alive + st->p->strat_off[i];
	for (int q = 0; q < k; q++) {
		int64_t uq = usage_of(st, i, q);
		if (!alive[q] || local[q] > local[best] || (local[q] == local[best] && uq >= usage_of(st, i, best)))
			continue;
		if (uq > uc && (shard_i128)uq - uc > room)
			continue;
		best = q;
	}
	*dcost = local[best] - local[c];
	return best == c ? -1 : best;
}

int shard_descend(struct shard_state *st, struct shard_queue *q, int *moved)
{
	int rc;
	while (q->count > 0 && !shard_state_late(st)) {
		int i = shard_queue_pop(q);
		shard_i128 d;
		int to = best_single(st, i, &d);
		if (to < 0)
			continue;
		if ((rc = shard_state_move(st, i, to, d)) < 0)
			return rc;
		(*moved)++;
		shard_queue_push_neighbours(q, st, i);
	}
	return 0;
}

/* Peak memory on u's segments outside v's, v's outside u's, and both. */
struct pair_room {
	shard_i128 u_only, v_only, both;
};

static shard_i128 max_outside(const struct shard_tree *t, int a, int b, int a2, int b2)
{
	int lo_end = b < a2 ? b : a2, hi_start = a > b2 ? a : b2;
	shard_i128 x = shard_tree_max(t, a, lo_end), y = shard_tree_max(t, hi_start, b);
	return x > y ? x : y;
}

static struct pair_room pair_room(const struct shard_state *st, int u, int v)
{
	int a1 = st->seg_a[u], b1 = st->seg_b[u], a2 = st->seg_a[v], b2 = st->seg_b[v];
	struct pair_room r;
	r.u_only = max_outside(&st->tree, a1, b1, a2, b2);
	r.v_only = max_outside(&st->tree, a2, b2, a1, b1);
	r.both = shard_tree_max(&st->tree, a1 > a2 ? a1 : a2, b1 < b2 ? b1 : b2);
	return r;
}

static bool pair_fits(const struct pair_room *r, shard_i128 du, shard_i128 dv, shard_i128 limit)
{
	return (du <= 0 || r->u_only + du <= limit) && (dv <= 0 || r->v_only + dv <= limit) &&
	       (du + dv <= 0 || r->both + du + dv <= limit);
}

/* The edges between u and v, seen from u: matrix and strides. */
#define PAIR_MAX_EDGES 8
struct pair_edges {
	int n;
	const int64_t *m[PAIR_MAX_EDGES];
	int64_t row[PAIR_MAX_EDGES], col[PAIR_MAX_EDGES];
};

static bool find_between(const struct shard_state *st, int u, int v, struct pair_edges *pe)
{
	pe->n = 0;
	for (int j = st->adj_off[u]; j < st->adj_off[u + 1]; j++) {
		const struct shard_adj *a = &st->adj[j];
		if (a->other != v)
			continue;
		if (pe->n == PAIR_MAX_EDGES)
			return false;
		pe->m[pe->n] = st->p->edge_cost + st->p->edge_off[a->edge];
		pe->row[pe->n] = a->row;
		pe->col[pe->n] = a->col;
		pe->n++;
	}
	return true;
}

static shard_i128 between(const struct pair_edges *pe, int p, int q)
{
	shard_i128 s = 0;
	for (int e = 0; e < pe->n; e++)
		s += pe->m[e][p * pe->row[e] + q * pe->col[e]];
	return s;
}

/* Tries the best improving joint move of the ends of edge k; returns 1 if it
 * moved, 0 if not, or a negative error. */
int shard_pair_move(struct shard_state *st, int k)
{
	const struct shard_problem *p = st->p;
	int u = p->edge_u[k], v = p->edge_v[k];
	int ku = shard_problem_nstrat(p, u), kv = shard_problem_nstrat(p, v);
	struct pair_edges pe;
	if (u == v || (ku == 1 && kv == 1) || !find_between(st, u, v, &pe))
		return 0;
	shard_i128 *lu = st->local, *lv = st->local2;
	shard_state_local(st, u, v, NULL, lu);
	shard_state_local(st, v, u, NULL, lv);
	struct pair_room room = pair_room(st, u, v);
	int cu = st->choice[u], cv = st->choice[v], bu = cu, bv = cv;
	shard_i128 cur = lu[cu] + lv[cv] + between(&pe, cu, cv), best = cur;
	int64_t ucu = usage_of(st, u, cu), ucv = usage_of(st, v, cv);
	shard_i128 best_use = (shard_i128)ucu + ucv;
	const unsigned char *au = st->alive + p->strat_off[u], *av = st->alive + p->strat_off[v];
	for (int a = 0; a < ku; a++) {
		for (int b = 0; b < kv && au[a]; b++) {
			if (!av[b])
				continue;
			shard_i128 t = lu[a] + lv[b] + between(&pe, a, b);
			shard_i128 use = (shard_i128)usage_of(st, u, a) + usage_of(st, v, b);
			if (t > best || (t == best && use >= best_use))
				continue;
			if (!pair_fits(&room, usage_of(st, u, a) - (shard_i128)ucu,
				       usage_of(st, v, b) - (shard_i128)ucv, p->usage_limit))
				continue;
			best = t, best_use = use, bu = a, bv = b;
		}
	}
	if (bu == cu && bv == cv)
		return 0;
	int rc = shard_state_move(st, u, bu, best - cur);
	if (rc == 0)
		rc = shard_state_move(st, v, bv, 0);
	return rc < 0 ? rc : 1;
}
