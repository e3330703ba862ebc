/*
 * shard_lns.c: large-neighbourhood search over a reduced model: windows of
 * a few dozen nodes around the incumbent, each solved exactly by GLPK
 * (shard_mip.c) with every other node fixed, the result taken when its
 * exact cost is lower.
 *
 * Windows take turns among three shapes:
 *  - graph: breadth-first from a seed node, the costliest edges (at the
 *    current assignment) first, so that a chain of nodes that must change
 *    together lands in one window;
 *  - time: the nodes whose memory is live at a seed segment (the peak
 *    first), with their costliest neighbours, so that the MIP can trade
 *    memory between nodes that compete for the same time points.
 *  - sweep: a run of consecutive model nodes (program order), moving on
 *    by half a window each time.
 * Outside nodes touching a window once follow it (soft boundaries,
 * shard_mip.h), so a hub inside can change without its other neighbours.
 * Seeds come from a seeded generator; the window grows after cheap exact
 * solves and shrinks after costly or unfinished ones (in simplex
 * iterations, so the sequence does not depend on the machine), within a
 * column budget. After each improvement a local descent runs around it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_lns.h"

#define NOMEM() shard_errorf(-ENOMEM, "lns: out of memory")

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

struct lns {
	struct mstate *st;
	struct msearch *ms;
	const struct lns_params *prm;
	int *win, nw;      /* the window */
	unsigned char *in; /* per node: in the window */
	struct mip_moves mv;
	int64_t cols; /* columns the window needs so far */
	uint64_t rng;
	int sweep; /* next node of the sweep windows */
	struct lns_stats *stats;
};

/* Columns node i adds: its strategies and its edges into the window. */
static int64_t node_cols(const struct lns *l, int i)
{
	const struct mstate *st = l->st;
	const struct shard_model *m = st->m;
	int64_t n = shard_model_nstrat(m, i);
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++)
		if (l->in[st->adj[j].other])
			n += m->eoff[st->adj[j].edge + 1] - m->eoff[st->adj[j].edge];
	return n;
}

static bool add(struct lns *l, int i, int size)
{
	if (l->in[i] || l->nw >= size)
		return false;
	int64_t c = node_cols(l, i);
	if (l->cols + c > l->prm->max_cols)
		return false;
	l->in[i] = 1;
	l->win[l->nw++] = i;
	l->cols += c;
	return true;
}

/* Edge k's entry at the current assignment: how much it costs now. */
static int64_t edge_now(const struct mstate *st, int k)
{
	const struct shard_model *m = st->m;
	return m->ecost[m->eoff[k] + (int64_t)st->choice[m->eu[k]] * shard_model_nstrat(m, m->ev[k]) +
			st->choice[m->ev[k]]];
}

/* Breadth-first growth from the window's nodes, each node's neighbours
 * taken costliest edge first (selection: neighbours are few). */
static void grow_bfs(struct lns *l, int size)
{
	const struct mstate *st = l->st;
	for (int h = 0; h < l->nw && l->nw < size; h++) {
		int i = l->win[h];
		for (;;) {
			int pick = -1;
			int64_t best = -1;
			for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
				int o = st->adj[j].other;
				int64_t c = edge_now(st, st->adj[j].edge);
				if (!l->in[o] && c > best && node_cols(l, o) + l->cols <= l->prm->max_cols)
					best = c, pick = o;
			}
			if (pick < 0 || !add(l, pick, size))
				break;
		}
	}
}

/* The nodes live at segment s, in node order from a random start. */
static void seed_time(struct lns *l, int s, int size)
{
	const struct shard_model *m = l->st->m;
	int n = m->n, start = (int)(rng_next(&l->rng) % (uint64_t)n);
	for (int z = 0; z < n && l->nw < size / 2; z++) {
		int i = (start + z) % n;
		for (int x = m->poff[i]; x < m->poff[i + 1]; x++)
			if (m->piece[x].a <= s && s < m->piece[x].b) {
				add(l, i, size / 2);
				break;
			}
	}
}

/* Consecutive model nodes from the sweep position: nodes keep the
 * original order, which is program order, so a run of them is a stretch
 * of the program (a layer, say). The sweep moves on by half a window. */
static void seed_sweep(struct lns *l, int size)
{
	const struct shard_model *m = l->st->m;
	int i = l->sweep % m->n;
	for (int z = 0; z < m->n && l->nw < size; z++)
		if (!add(l, (i + z) % m->n, size) && l->nw > 0)
			break;
	l->sweep = (i + (l->nw + 1) / 2) % m->n;
}

static void make_window(struct lns *l, int round, int size)
{
	const struct mstate *st = l->st;
	const struct shard_model *m = st->m;
	for (int w = 0; w < l->nw; w++)
		l->in[l->win[w]] = 0;
	l->nw = 0;
	l->cols = 0;
	if (round % 3 == 2) {
		seed_sweep(l, size);
		return;
	}
	if (round % 3 == 1 && m->nseg > 0) {
		int s = round % 6 == 1 ? shard_tree_argmax(&st->tree) : (int)(rng_next(&l->rng) % (uint64_t)m->nseg);
		seed_time(l, s, size);
	}
	if (l->nw == 0)
		add(l, (int)(rng_next(&l->rng) % (uint64_t)m->n), size);
	grow_bfs(l, size);
}

int lns_take(struct mstate *st, const struct mip_moves *mv, bool *taken)
{
	shard_i128 before = st->cost;
	*taken = false;
	for (int k = 0; k < mv->n; k++) {
		int i = mv->node[k], to = mv->to[k];
		if (to == st->choice[i])
			continue;
		ms_local(st, i, -1, NULL, st->local);
		int rc = ms_move(st, i, to, st->local[to] - st->local[st->choice[i]]);
		if (rc < 0)
			return rc;
	}
	if (st->cost < before && ms_feasible(st)) {
		ms_commit(st);
		*taken = true;
	} else {
		ms_undo(st);
	}
	return 0;
}

int shard_lns(struct mstate *st, struct msearch *ms, const struct lns_params *prm, struct lns_stats *stats)
{
	const struct shard_model *m = st->m;
	struct lns l = { st, ms, prm, NULL, 0, NULL, { 0, 0, NULL, NULL }, 0, prm->seed, 0, stats };
	memset(stats, 0, sizeof *stats);
	if (m->n == 0)
		return 0;
	l.win = malloc(sizeof *l.win * ((size_t)m->n + 1));
	l.in = calloc((size_t)m->n + 1, 1);
	int rc = l.win && l.in ? 0 : NOMEM();
	int size = prm->window, idle = 0;
	bool spent = false;
	for (int round = 0; rc == 0 && round < prm->max_windows && !spent && shard_now() < st->deadline; round++) {
		make_window(&l, round, size);
		double left = st->deadline - shard_now();
		struct mip_params mp = { prm->node_limit,   40 * prm->cheap, prm->gap,  left, prm->max_cols,
					 4 * prm->max_cols, prm->presolve,   prm->soft, true, false };
		struct mip_result res;
		bool taken = false;
		if ((rc = shard_mip_window(st, l.win, l.nw, &mp, &l.mv, &res)) < 0)
			break;
		st->backstop |= res.timed_out;
		stats->windows++;
		stats->iterations += res.iterations;
		spent = prm->max_iterations > 0 && stats->iterations >= prm->max_iterations;
		stats->optimal += res.optimal;
		if (res.solved && (rc = lns_take(st, &l.mv, &taken)) < 0)
			break;
		idle = taken ? 0 : idle + 1;
		spent |= prm->patience > 0 && idle >= prm->patience;
		if (taken) {
			stats->improved++;
			rc = msearch_descend(ms);
			if (rc == 0 && ms_feasible(st))
				ms_publish(st, st->choice, st->cost, false);
		}
		/* Quick exact solves: grow; slow or unfinished ones: shrink. */
		if (res.optimal && res.iterations < prm->cheap && size < prm->max_window)
			size++;
		else if ((!res.optimal || res.iterations > 4 * prm->cheap) && size > 4)
			size--;
		if (prm->verbose && (taken || round % 50 == 0)) {
			char b[SHARD_I128_STRLEN];
			fprintf(stderr,
				"shard: %.2fs lns window %d (%d nodes, %d cols, %s, %.3fs, %d iterations)%s: cost %s\n",
				shard_now() - prm->t0, round, l.nw, res.cols,
				res.optimal  ? "optimal"
				: res.solved ? "feasible"
					     : "unsolved",
				res.seconds, res.iterations, taken ? " improved" : "", shard_i128_str(st->cost, b));
		}
	}
	/* windows left when the deadline came: the backstop cut the search */
	if (rc == 0 && stats->windows < prm->max_windows && !spent && shard_now() >= st->deadline)
		st->backstop = true;
	stats->final_window = size;
	free(l.win);
	moves_free(&l.mv);
	free(l.in);
	return rc;
}
