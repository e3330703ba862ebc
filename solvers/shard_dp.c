/*
 * shard_dp.c: the block move of the heuristic: exact min-sum dynamic
 * programming over a random spanning forest of the node graph.
 *
 * Single-node and pair moves cannot change a chain of nodes that must agree
 * (a sharding carried along a path of followers): every intermediate step
 * costs more. A spanning forest lets all nodes change at once: each node's
 * unary cost is its node cost plus its non-forest edges priced against the
 * current neighbours (exact only if those neighbours keep their strategy),
 * and the forest edges are optimized exactly, leaves to roots:
 *   f_c(q) = unary_c(q) + sum over children d of min_r (M_cd[q][r] + f_d(r)).
 * Memory is ignored here; the caller repairs, descends, and keeps the result
 * only when its exact cost does not rise. Kruskal over a seeded random edge
 * order gives a different forest each call; every other call puts the edges
 * costing most under the current assignment first, so the forest holds
 * the edges that matter.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_search.h"

#define DP_INF ((shard_i128)1 << 100)

/* Stable merge sort of perm by descending key[perm[i]]. */
static void sort_by_key(int *perm, int *tmp, const int64_t *key, int n)
{
	for (int w = 1; w < n; w *= 2) {
		for (int lo = 0; lo < n; lo += 2 * w) {
			int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int a = lo, b = mid, o = lo;
			while (a < mid && b < hi)
				tmp[o++] = key[perm[b]] > key[perm[a]] ? perm[b++] : perm[a++];
			while (a < mid)
				tmp[o++] = perm[a++];
			while (b < hi)
				tmp[o++] = perm[b++];
		}
		memcpy(perm, tmp, sizeof *perm * (size_t)n);
	}
}

static int find(int *uf, int x)
{
	while (uf[x] != x)
		x = uf[x] = uf[uf[x]];
	return x;
}

int shard_dp_init(struct shard_dp *dp, int nn, int nm, int nstrat)
{
	size_t n = (size_t)nn + 1, e = (size_t)nm + 1;
	memset(dp, 0, sizeof *dp);
	dp->perm = malloc(sizeof *dp->perm * e);
	dp->is_tree = malloc(e);
	dp->tmp = malloc(sizeof *dp->tmp * e);
	dp->key = malloc(sizeof *dp->key * e);
	dp->uf = malloc(sizeof *dp->uf * n);
	dp->order = malloc(sizeof *dp->order * n);
	dp->up = malloc(sizeof *dp->up * n);
	dp->arg_off = malloc(sizeof *dp->arg_off * n);
	dp->f = malloc(sizeof *dp->f * ((size_t)nstrat + 1));
	dp->choice = malloc(sizeof *dp->choice * n);
	if (!dp->perm || !dp->tmp || !dp->key || !dp->is_tree || !dp->uf || !dp->order || !dp->up || !dp->arg_off ||
	    !dp->f || !dp->choice)
		return shard_errorf(-ENOMEM, "heuristic: out of memory");
	return 0;
}

void shard_dp_free(struct shard_dp *dp)
{
	free(dp->perm);
	free(dp->is_tree);
	free(dp->tmp);
	free(dp->key);
	free(dp->uf);
	free(dp->order);
	free(dp->up);
	free(dp->arg_off);
	free(dp->f);
	free(dp->choice);
	free(dp->arg);
	memset(dp, 0, sizeof *dp);
}

/* Kruskal over a random edge order, then a BFS numbering of each tree:
 * order lists parents before children, up[i] is i's adj entry towards its
 * parent (-1 at roots). */
static int nstrat(const struct shard_graph *g, int i)
{
	return g->off[i + 1] - g->off[i];
}

static void build_forest(struct shard_dp *dp, const struct shard_graph *g, uint64_t (*rng)(uint64_t *), uint64_t *seed)
{
	for (int k = 0; k < g->m; k++)
		dp->perm[k] = k;
	for (int k = g->m - 1; k > 0; k--) {
		int j = (int)(rng(seed) % (uint64_t)(k + 1)), t = dp->perm[k];
		dp->perm[k] = dp->perm[j];
		dp->perm[j] = t;
	}
	/* Every other forest: the edges costing most now go in first (a
	 * stable sort of the shuffled order keeps ties random). */
	if (rng(seed) & 1) {
		for (int k = 0; k < g->m; k++) {
			int e = g->eu[k], f = g->ev[k];
			dp->key[k] = g->ecost[g->eoff[k] + (int64_t)g->choice[e] * nstrat(g, f) + g->choice[f]];
		}
		sort_by_key(dp->perm, dp->tmp, dp->key, g->m);
	}
	for (int i = 0; i < g->n; i++)
		dp->uf[i] = i, dp->up[i] = -2;
	memset(dp->is_tree, 0, (size_t)g->m + 1);
	for (int k = 0; k < g->m; k++) {
		int e = dp->perm[k], a = find(dp->uf, g->eu[e]), b = find(dp->uf, g->ev[e]);
		if (a != b) {
			dp->uf[a] = b;
			dp->is_tree[e] = 1;
		}
	}
	int n = 0;
	for (int r = 0; r < g->n; r++) {
		if (dp->up[r] != -2)
			continue;
		dp->up[r] = -1;
		dp->order[n++] = r;
		for (int h = n - 1; h < n; h++) {
			int i = dp->order[h];
			for (int j = g->adj_off[i]; j < g->adj_off[i + 1]; j++) {
				int c = g->adj[j].other;
				if (!dp->is_tree[g->adj[j].edge] || dp->up[c] != -2)
					continue;
				/* c's entry for the same edge points back at i */
				for (int b = g->adj_off[c]; b < g->adj_off[c + 1]; b++)
					if (g->adj[b].edge == g->adj[j].edge)
						dp->up[c] = b;
				dp->order[n++] = c;
			}
		}
	}
}

/* f = the caller's local cost less the forest edges at the current
 * neighbours (the DP prices those itself). */
static void unary(struct shard_dp *dp, const struct shard_graph *g, int i)
{
	shard_i128 *f = dp->f + g->off[i];
	int k = nstrat(g, i);
	g->local(g->ctx, i, f);
	for (int j = g->adj_off[i]; j < g->adj_off[i + 1]; j++) {
		const struct shard_adj *a = &g->adj[j];
		if (!dp->is_tree[a->edge] || a->other == i)
			continue;
		const int64_t *m = g->ecost + g->eoff[a->edge] + g->choice[a->other] * a->col;
		for (int q = 0; q < k; q++)
			f[q] -= m[q * a->row];
	}
	for (int q = 0; q < k && g->alive; q++)
		if (!g->alive[g->off[i] + q])
			f[q] = DP_INF;
}

static int alloc_args(struct shard_dp *dp, const struct shard_graph *g)
{
	int64_t total = 0;
	for (int i = 0; i < g->n; i++) {
		dp->arg_off[i] = total;
		if (dp->up[i] >= 0)
			total += nstrat(g, g->adj[dp->up[i]].other);
	}
	if (total + 1 > dp->arg_cap) {
		free(dp->arg);
		dp->arg = malloc(sizeof *dp->arg * ((size_t)total + 1));
		dp->arg_cap = dp->arg ? total + 1 : 0;
		if (!dp->arg)
			return shard_errorf(-ENOMEM, "heuristic: out of memory");
	}
	return 0;
}

/* Child c sends min_r (M[a][r] + f_c(r)) to each strategy a of its parent. */
static void send_up(struct shard_dp *dp, const struct shard_graph *g, int c)
{
	const struct shard_adj *a = &g->adj[dp->up[c]]; /* from c's side */
	int par = a->other, kc = nstrat(g, c), kp = nstrat(g, par);
	const int64_t *m = g->ecost + g->eoff[a->edge];
	const shard_i128 *fc = dp->f + g->off[c];
	shard_i128 *fp = dp->f + g->off[par];
	int *arg = dp->arg + dp->arg_off[c];
	for (int x = 0; x < kp; x++) {
		shard_i128 best = 0;
		int bq = -1;
		for (int q = 0; q < kc; q++) {
			shard_i128 v = fc[q] + m[q * a->row + x * a->col];
			if (bq < 0 || v < best)
				best = v, bq = q;
		}
		fp[x] += best;
		arg[x] = bq;
	}
}

int shard_dp_propose(struct shard_dp *dp, const struct shard_graph *g, uint64_t (*rng)(uint64_t *), uint64_t *seed)
{
	build_forest(dp, g, rng, seed);
	int rc = alloc_args(dp, g);
	if (rc < 0)
		return rc;
	for (int i = 0; i < g->n; i++)
		unary(dp, g, i);
	for (int h = g->n - 1; h >= 0; h--)
		if (dp->up[dp->order[h]] >= 0)
			send_up(dp, g, dp->order[h]);
	for (int h = 0; h < g->n; h++) {
		int i = dp->order[h];
		if (dp->up[i] >= 0) {
			dp->choice[i] = dp->arg[dp->arg_off[i] + dp->choice[g->adj[dp->up[i]].other]];
			continue;
		}
		const shard_i128 *f = dp->f + g->off[i];
		int best = 0;
		for (int q = 1; q < nstrat(g, i); q++)
			if (f[q] < f[best])
				best = q;
		dp->choice[i] = best;
	}
	return 0;
}

static void state_local(void *ctx, int i, shard_i128 *out)
{
	shard_state_local(ctx, i, -1, NULL, out);
}

void shard_state_graph(struct shard_state *st, struct shard_graph *g)
{
	const struct shard_problem *p = st->p;
	*g = (struct shard_graph){ p->nnodes, p->nedges,   p->strat_off, p->edge_u,
				   p->edge_v, p->edge_off, p->edge_cost, st->adj_off,
				   st->adj,   st->choice,  st->alive,    state_local,
				   st };
}
