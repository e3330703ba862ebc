/*
 * shard_state.c: the heuristic's working state: the current assignment with
 * its exact cost, node adjacency, and a max segment tree over compressed
 * time so that the peak memory under a candidate move is O(log T).
 *
 * Time compression: the distinct interval endpoints t_0 < ... < t_m of the
 * nodes that can hold memory cut time into m segments [t_j, t_{j+1}); all
 * points of a segment see the same live set, so a node live on [lo, hi)
 * covers exactly the segments [index(lo), index(hi)).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_internal.h"

static int build_segments(struct shard_state *st)
{
	int n = shard_segments(st->p, st->seg_a, st->seg_b);
	if (n < 0)
		return n;
	st->tree.n = n;
	size_t sz = 4 * (size_t)st->tree.n + 4;
	st->tree.mx = calloc(sz, sizeof *st->tree.mx);
	st->tree.add = calloc(sz, sizeof *st->tree.add);
	return st->tree.mx && st->tree.add ? 0 : -ENOMEM;
}

static int build_adjacency(struct shard_state *st)
{
	const struct shard_problem *p = st->p;
	st->adj_off = calloc((size_t)p->nnodes + 1, sizeof *st->adj_off);
	st->adj = malloc(sizeof *st->adj * (2 * (size_t)p->nedges + 1));
	if (!st->adj_off || !st->adj)
		return -ENOMEM;
	for (int k = 0; k < p->nedges; k++) {
		st->adj_off[p->edge_u[k] + 1]++;
		if (p->edge_v[k] != p->edge_u[k])
			st->adj_off[p->edge_v[k] + 1]++;
	}
	for (int i = 0; i < p->nnodes; i++)
		st->adj_off[i + 1] += st->adj_off[i];
	int *fill = malloc(sizeof *fill * ((size_t)p->nnodes + 1));
	if (!fill)
		return -ENOMEM;
	memcpy(fill, st->adj_off, sizeof *fill * (size_t)p->nnodes);
	for (int k = 0; k < p->nedges; k++) {
		int u = p->edge_u[k], v = p->edge_v[k];
		int64_t kv = shard_problem_nstrat(p, v);
		st->adj[fill[u]++] = (struct shard_adj){ k, v, kv, 1 };
		if (v != u)
			st->adj[fill[v]++] = (struct shard_adj){ k, u, 1, kv };
	}
	free(fill);
	return 0;
}

int shard_state_init(struct shard_state *st, const struct shard_problem *p, double deadline)
{
	memset(st, 0, sizeof *st);
	st->p = p;
	st->deadline = deadline;
	for (int i = 0; i < p->nnodes; i++)
		if (shard_problem_nstrat(p, i) > st->maxk)
			st->maxk = shard_problem_nstrat(p, i);
	size_t n1 = (size_t)p->nnodes + 1;
	st->choice = calloc(n1, sizeof *st->choice);
	st->seg_a = malloc(sizeof *st->seg_a * n1);
	st->seg_b = malloc(sizeof *st->seg_b * n1);
	st->local = malloc(sizeof *st->local * ((size_t)st->maxk + 1));
	st->local2 = malloc(sizeof *st->local2 * ((size_t)st->maxk + 1));
	st->alive = malloc((size_t)p->strat_off[p->nnodes] + 1);
	if (st->alive)
		memset(st->alive, 1, (size_t)p->strat_off[p->nnodes] + 1);
	if (!st->alive || !st->choice || !st->seg_a || !st->seg_b || !st->local || !st->local2 ||
	    build_adjacency(st) < 0 || build_segments(st) < 0) {
		shard_state_free(st);
		return shard_errorf(-ENOMEM, "heuristic: out of memory");
	}
	return 0;
}

void shard_state_free(struct shard_state *st)
{
	free(st->choice);
	free(st->adj_off);
	free(st->adj);
	free(st->seg_a);
	free(st->seg_b);
	free(st->tree.mx);
	free(st->tree.add);
	free(st->local);
	free(st->local2);
	free(st->undo);
	free(st->alive);
	memset(st, 0, sizeof *st);
}

static shard_i128 max2(shard_i128 a, shard_i128 b)
{
	return a > b ? a : b;
}

static void tree_add(struct shard_tree *t, int x, int l, int r, int a, int b, shard_i128 d)
{
	if (b <= l || r <= a)
		return;
	if (a <= l && r <= b) {
		t->mx[x] += d;
		t->add[x] += d;
		return;
	}
	int mid = l + (r - l) / 2;
	tree_add(t, 2 * x, l, mid, a, b, d);
	tree_add(t, 2 * x + 1, mid, r, a, b, d);
	t->mx[x] = max2(t->mx[2 * x], t->mx[2 * x + 1]) + t->add[x];
}

static shard_i128 tree_query(const struct shard_tree *t, int x, int l, int r, int a, int b)
{
	if (b <= l || r <= a)
		return SHARD_NEG_INF;
	if (a <= l && r <= b)
		return t->mx[x];
	int mid = l + (r - l) / 2;
	shard_i128 m = max2(tree_query(t, 2 * x, l, mid, a, b), tree_query(t, 2 * x + 1, mid, r, a, b));
	return m == SHARD_NEG_INF ? m : m + t->add[x];
}

shard_i128 shard_tree_max(const struct shard_tree *t, int a, int b)
{
	if (a >= b || t->n == 0)
		return SHARD_NEG_INF;
	return tree_query(t, 1, 0, t->n, a, b);
}

int shard_tree_argmax(const struct shard_tree *t)
{
	int x = 1, l = 0, r = t->n;
	if (t->n == 0)
		return 0;
	while (r - l > 1) {
		int mid = l + (r - l) / 2;
		shard_i128 want = t->mx[x] - t->add[x];
		if (t->mx[2 * x] == want) {
			x = 2 * x;
			r = mid;
		} else {
			x = 2 * x + 1;
			l = mid;
		}
	}
	return l;
}

void shard_tree_add(struct shard_tree *t, int a, int b, shard_i128 d)
{
	if (d != 0 && a < b)
		tree_add(t, 1, 0, t->n, a, b, d);
}

static void usage_add(struct shard_state *st, int i, shard_i128 d)
{
	shard_tree_add(&st->tree, st->seg_a[i], st->seg_b[i], d);
}

void shard_state_load(struct shard_state *st, const int *choice)
{
	const struct shard_problem *p = st->p;
	size_t sz = 4 * (size_t)st->tree.n + 4;
	memset(st->tree.mx, 0, sz * sizeof *st->tree.mx);
	memset(st->tree.add, 0, sz * sizeof *st->tree.add);
	st->cost = 0;
	for (int i = 0; i < p->nnodes; i++) {
		st->choice[i] = choice[i];
		st->cost += p->cost[p->strat_off[i] + choice[i]];
		usage_add(st, i, p->usage[p->strat_off[i] + choice[i]]);
	}
	for (int k = 0; k < p->nedges; k++) {
		int u = p->edge_u[k], v = p->edge_v[k];
		st->cost += p->edge_cost[p->edge_off[k] + (int64_t)choice[u] * shard_problem_nstrat(p, v) + choice[v]];
	}
	st->nundo = 0;
}

void shard_state_local(struct shard_state *st, int i, int skip, const unsigned char *mask, shard_i128 *local)
{
	const struct shard_problem *p = st->p;
	int k = shard_problem_nstrat(p, i);
	const int64_t *c = p->cost + p->strat_off[i];
	for (int q = 0; q < k; q++)
		local[q] = c[q];
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
		const struct shard_adj *a = &st->adj[j];
		const int64_t *m = p->edge_cost + p->edge_off[a->edge];
		if (a->other == skip || (mask && !mask[a->other]))
			continue;
		if (a->other == i) { /* self-loop: both ends take q */
			for (int q = 0; q < k; q++)
				local[q] += m[q * a->row + q * a->col];
			continue;
		}
		m += st->choice[a->other] * a->col;
		for (int q = 0; q < k; q++)
			local[q] += m[q * a->row];
	}
}

int shard_state_move(struct shard_state *st, int i, int q, shard_i128 dcost)
{
	const struct shard_problem *p = st->p;
	int from = st->choice[i];
	if (st->nundo == st->undo_cap) {
		int cap = st->undo_cap ? 2 * st->undo_cap : 64;
		struct shard_undo *u = realloc(st->undo, sizeof *u * (size_t)cap);
		if (!u)
			return shard_errorf(-ENOMEM, "heuristic: out of memory");
		st->undo = u;
		st->undo_cap = cap;
	}
	st->undo[st->nundo++] = (struct shard_undo){ i, from, dcost };
	usage_add(st, i, (shard_i128)p->usage[p->strat_off[i] + q] - p->usage[p->strat_off[i] + from]);
	st->choice[i] = q;
	st->cost += dcost;
	return 0;
}

void shard_state_undo(struct shard_state *st)
{
	const struct shard_problem *p = st->p;
	while (st->nundo > 0) {
		struct shard_undo u = st->undo[--st->nundo];
		int cur = st->choice[u.node];
		usage_add(st, u.node,
			  (shard_i128)p->usage[p->strat_off[u.node] + u.from] - p->usage[p->strat_off[u.node] + cur]);
		st->choice[u.node] = u.from;
		st->cost -= u.dcost;
	}
}

bool shard_state_late(struct shard_state *st)
{
	if (st->timed_out)
		return true;
	if ((++st->ticks & 255) == 0 && shard_now() > st->deadline)
		st->timed_out = true;
	return st->timed_out;
}
