/*
 * shard_mstate.c: the search state over a reduced model: the assignment and
 * its exact cost, adjacency with strides, and a max segment tree holding
 * the usage of every time segment (the fixed base included), so that a
 * move's memory check is one range maximum per piece of the node. A node's
 * pieces are disjoint (shard_model.c), so each range changes by one amount.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_mstate.h"

#define NOMEM() shard_errorf(-ENOMEM, "search: out of memory")

static int build_adjacency(struct mstate *st)
{
	const struct shard_model *m = st->m;
	st->adj_off = calloc((size_t)m->n + 1, sizeof *st->adj_off);
	st->adj = malloc(sizeof *st->adj * (2 * (size_t)m->m + 1));
	int *fill = malloc(sizeof *fill * ((size_t)m->n + 1));
	if (!st->adj_off || !st->adj || !fill) {
		free(fill);
		return NOMEM();
	}
	for (int k = 0; k < m->m; k++) {
		st->adj_off[m->eu[k] + 1]++;
		st->adj_off[m->ev[k] + 1]++;
	}
	for (int i = 0; i < m->n; i++)
		st->adj_off[i + 1] += st->adj_off[i];
	memcpy(fill, st->adj_off, sizeof *fill * (size_t)m->n);
	for (int k = 0; k < m->m; k++) {
		int u = m->eu[k], v = m->ev[k];
		int64_t kv = shard_model_nstrat(m, v);
		st->adj[fill[u]++] = (struct shard_adj){ k, v, kv, 1 };
		st->adj[fill[v]++] = (struct shard_adj){ k, u, 1, kv };
	}
	free(fill);
	return 0;
}

int ms_init(struct mstate *st, const struct shard_model *m, double deadline)
{
	memset(st, 0, sizeof *st);
	st->m = m;
	st->deadline = deadline;
	for (int i = 0; i < m->n; i++)
		if (shard_model_nstrat(m, i) > st->maxk)
			st->maxk = shard_model_nstrat(m, i);
	st->choice = calloc((size_t)m->n + 1, sizeof *st->choice);
	st->stamp = calloc((size_t)m->n + 1, sizeof *st->stamp);
	st->lc = malloc(sizeof *st->lc * ((size_t)m->off[m->n] + 1));
	st->local = malloc(sizeof *st->local * ((size_t)st->maxk + 1));
	st->local2 = malloc(sizeof *st->local2 * ((size_t)st->maxk + 1));
	st->tree.n = m->nseg;
	st->tree.mx = calloc(4 * (size_t)m->nseg + 4, sizeof *st->tree.mx);
	st->tree.add = calloc(4 * (size_t)m->nseg + 4, sizeof *st->tree.add);
	if (!st->choice || !st->stamp || !st->lc || !st->local || !st->local2 || !st->tree.mx || !st->tree.add ||
	    build_adjacency(st) < 0) {
		ms_free(st);
		return NOMEM();
	}
	return 0;
}

void ms_free(struct mstate *st)
{
	free(st->choice);
	free(st->stamp);
	free(st->lc);
	free(st->adj_off);
	free(st->adj);
	free(st->tree.mx);
	free(st->tree.add);
	free(st->local);
	free(st->local2);
	free(st->undo);
	memset(st, 0, sizeof *st);
}

/* local[] from scratch: node cost plus the edges to counted neighbours. */
static void local_scratch(const struct mstate *st, int i, int skip, const unsigned char *mask, shard_i128 *local)
{
	const struct shard_model *m = st->m;
	int k = shard_model_nstrat(m, i);
	const int64_t *c = m->cost + m->off[i];
	for (int q = 0; q < k; q++)
		local[q] = c[q];
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
		const struct shard_adj *a = &st->adj[j];
		if (a->other == skip || (mask && !mask[a->other]))
			continue;
		const int64_t *e = m->ecost + m->eoff[a->edge] + st->choice[a->other] * a->col;
		for (int q = 0; q < k; q++)
			local[q] += e[q * a->row];
	}
}

/* Leaves of [l, r) at node x get v[l..r-1] (a plain build, no adds). */
static void tree_build(struct shard_tree *t, int x, int l, int r, const shard_i128 *v)
{
	t->add[x] = 0;
	if (r - l == 1) {
		t->mx[x] = v[l];
		return;
	}
	int mid = l + (r - l) / 2;
	tree_build(t, 2 * x, l, mid, v);
	tree_build(t, 2 * x + 1, mid, r, v);
	t->mx[x] = t->mx[2 * x] > t->mx[2 * x + 1] ? t->mx[2 * x] : t->mx[2 * x + 1];
}

void ms_load(struct mstate *st, const int *choice)
{
	const struct shard_model *m = st->m;
	st->clock++;
	for (int i = 0; i < m->n; i++)
		if (st->choice[i] != choice[i])
			st->stamp[i] = st->clock;
	memcpy(st->choice, choice, sizeof *choice * (size_t)m->n);
	st->cost = shard_model_cost(m, choice);
	for (int i = 0; i < m->n; i++)
		local_scratch(st, i, -1, NULL, st->lc + m->off[i]);
	if (m->nseg > 0) {
		tree_build(&st->tree, 1, 0, m->nseg, m->base);
		for (int i = 0; i < m->n; i++)
			for (int c = m->poff[i]; c < m->poff[i + 1]; c++)
				shard_tree_add(&st->tree, m->piece[c].a, m->piece[c].b, ms_use(m, c, choice[i]));
	}
	st->nundo = 0;
}

void ms_local(const struct mstate *st, int i, int skip, const unsigned char *mask, shard_i128 *local)
{
	const struct shard_model *m = st->m;
	if (mask) {
		local_scratch(st, i, skip, mask, local);
		return;
	}
	int k = shard_model_nstrat(m, i);
	memcpy(local, st->lc + m->off[i], sizeof *local * (size_t)k);
	if (skip < 0)
		return;
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
		const struct shard_adj *a = &st->adj[j];
		if (a->other != skip)
			continue;
		const int64_t *e = m->ecost + m->eoff[a->edge] + st->choice[a->other] * a->col;
		for (int q = 0; q < k; q++)
			local[q] -= e[q * a->row];
	}
}

/* i moved from strategy `from` to `to`: its neighbours' cached locals
 * follow (seen from the neighbour, the strides swap). */
static void lc_update(struct mstate *st, int i, int from, int to)
{
	const struct shard_model *m = st->m;
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
		const struct shard_adj *a = &st->adj[j];
		int o = a->other, ko = shard_model_nstrat(m, o);
		const int64_t *e = m->ecost + m->eoff[a->edge];
		shard_i128 *l = st->lc + m->off[o];
		for (int q = 0; q < ko; q++)
			l[q] += (shard_i128)e[q * a->col + to * a->row] - e[q * a->col + from * a->row];
	}
}

shard_i128 ms_excess(const struct mstate *st, int i, int q)
{
	const struct shard_model *m = st->m;
	int c = st->choice[i];
	shard_i128 worst = 0;
	bool any = false;
	for (int x = m->poff[i]; x < m->poff[i + 1]; x++) {
		shard_i128 d = (shard_i128)ms_use(m, x, q) - ms_use(m, x, c);
		if (d <= 0)
			continue;
		shard_i128 over = shard_tree_max(&st->tree, m->piece[x].a, m->piece[x].b) + d - m->limit;
		if (!any || over > worst)
			worst = over;
		any = true;
	}
	return worst;
}

bool ms_fits(const struct mstate *st, int i, int q)
{
	const struct shard_model *m = st->m;
	int c = st->choice[i];
	for (int x = m->poff[i]; x < m->poff[i + 1]; x++) {
		shard_i128 d = (shard_i128)ms_use(m, x, q) - ms_use(m, x, c);
		if (d > 0 && shard_tree_max(&st->tree, m->piece[x].a, m->piece[x].b) + d > m->limit)
			return false;
	}
	return true;
}

static void apply_usage(struct mstate *st, int i, int from, int to)
{
	const struct shard_model *m = st->m;
	for (int x = m->poff[i]; x < m->poff[i + 1]; x++)
		shard_tree_add(&st->tree, m->piece[x].a, m->piece[x].b,
			       (shard_i128)ms_use(m, x, to) - ms_use(m, x, from));
}

bool ms_fits_pair(struct mstate *st, int u, int a, int v, int b)
{
	const struct shard_model *m = st->m;
	int cu = st->choice[u], cv = st->choice[v];
	if (a == cu)
		return ms_fits(st, v, b);
	if (b == cv)
		return ms_fits(st, u, a);
	apply_usage(st, u, cu, a);
	apply_usage(st, v, cv, b);
	bool ok = true;
	for (int x = m->poff[u]; x < m->poff[u + 1] && ok; x++)
		if (ms_use(m, x, a) > ms_use(m, x, cu))
			ok = shard_tree_max(&st->tree, m->piece[x].a, m->piece[x].b) <= m->limit;
	for (int x = m->poff[v]; x < m->poff[v + 1] && ok; x++)
		if (ms_use(m, x, b) > ms_use(m, x, cv))
			ok = shard_tree_max(&st->tree, m->piece[x].a, m->piece[x].b) <= m->limit;
	apply_usage(st, v, b, cv);
	apply_usage(st, u, a, cu);
	return ok;
}

int ms_move(struct mstate *st, int i, int q, shard_i128 dcost)
{
	if (st->nundo == st->undo_cap) {
		int cap = st->undo_cap ? 2 * st->undo_cap : 64;
		struct shard_undo *u = realloc(st->undo, sizeof *u * (size_t)cap);
		if (!u)
			return NOMEM();
		st->undo = u;
		st->undo_cap = cap;
	}
	st->undo[st->nundo++] = (struct shard_undo){ i, st->choice[i], dcost };
	apply_usage(st, i, st->choice[i], q);
	lc_update(st, i, st->choice[i], q);
	st->choice[i] = q;
	st->cost += dcost;
	st->stamp[i] = ++st->clock;
	return 0;
}

void ms_undo(struct mstate *st)
{
	while (st->nundo > 0) {
		struct shard_undo u = st->undo[--st->nundo];
		apply_usage(st, u.node, st->choice[u.node], u.from);
		lc_update(st, u.node, st->choice[u.node], u.from);
		st->choice[u.node] = u.from;
		st->stamp[u.node] = ++st->clock;
		st->cost -= u.dcost;
	}
}

bool ms_late(struct mstate *st)
{
	if (st->timed_out)
		return true;
	if ((++st->ticks & 7) == 0 && shard_now() > st->deadline)
		st->timed_out = st->backstop = true;
	return st->timed_out;
}
