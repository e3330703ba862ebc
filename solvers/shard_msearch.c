/*
 * shard_msearch.c: local search over a reduced model, the same scheme as
 * shard_heuristic.c on the original problem (greedy starts, memory
 * repair, single and pair descent, perturbation and forest-DP rounds) but
 * with a node's memory in several pieces: a move fits when every piece
 * whose usage grows stays within the limit over its segments.
 *
 * Starts: the least-memory assignment (each node's smallest total usage
 * over its pieces), a memory-aware greedy from it (each node in turn takes
 * the cheapest strategy, against the nodes already placed, that keeps
 * every segment within the limit, the rest still at their least memory),
 * and a cost-only greedy repaired at its peaks. Repair moves, at the first
 * peak segment, the node whose usage there drops at the least cost per
 * byte, preferring moves that push no other segment over the limit and
 * never raising one to the peak, so that it ends.
 *
 * Rounds: a random walk of moves then descent, kept when it costs no more;
 * every 16th round a block move instead: the forest DP (shard_dp.c) or
 * star moves, where a node with many neighbours takes each strategy in
 * turn with every neighbour at its best response (the only way a hub can
 * change when each of its edges alone would object).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_mstate.h"

#define NOMEM() shard_errorf(-ENOMEM, "search: out of memory")
#define PAIR_TRIES 8

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void say(const struct msearch *r, const char *what)
{
	char b[SHARD_I128_STRLEN];
	if (r->prm.verbose)
		fprintf(stderr, "shard: %.2fs model %s: cost %s\n", shard_now() - r->prm.t0, what,
			shard_i128_str(r->st->cost, b));
}

static void push_neighbours(struct msearch *r, int i)
{
	for (int j = r->st->adj_off[i]; j < r->st->adj_off[i + 1]; j++)
		shard_queue_push(&r->q, r->st->adj[j].other);
}

/* ---- descent ---------------------------------------------------------------- */

static int best_single(struct msearch *r, int i, shard_i128 *dcost)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	int k = shard_model_nstrat(m, i), c = st->choice[i], best = c;
	if (k == 1)
		return -1;
	shard_i128 *local = st->local;
	ms_local(st, i, -1, NULL, local);
	const int64_t *tot = r->tot + m->off[i];
	for (int q = 0; q < k; q++) {
		if (q == c || local[q] > local[best] || (local[q] == local[best] && tot[q] >= tot[best]))
			continue;
		if (ms_fits(st, i, q))
			best = q;
	}
	*dcost = local[best] - local[c];
	return best == c ? -1 : best;
}

static int descend(struct msearch *r, int *moved)
{
	struct mstate *st = r->st;
	int rc;
	while (r->q.count > 0 && !ms_late(st)) {
		int i = shard_queue_pop(&r->q);
		shard_i128 d;
		int to = best_single(r, i, &d);
		if (to < 0)
			continue;
		if ((rc = ms_move(st, i, to, d)) < 0)
			return rc;
		(*moved)++;
		push_neighbours(r, i);
	}
	return 0;
}

struct pair_cand {
	shard_i128 t;
	int a, b;
};

/* The cheapest improving joint move of edge k's ends that fits; among the
 * PAIR_TRIES cheapest, since each memory check costs a few tree updates. */
static int pair_move(struct msearch *r, int k)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	int u = m->eu[k], v = m->ev[k], ku = shard_model_nstrat(m, u), kv = shard_model_nstrat(m, v);
	if (ku == 1 && kv == 1)
		return 0;
	shard_i128 *lu = st->local, *lv = st->local2;
	ms_local(st, u, v, NULL, lu);
	ms_local(st, v, u, NULL, lv);
	const int64_t *mat = m->ecost + m->eoff[k];
	int cu = st->choice[u], cv = st->choice[v], nc = 0;
	shard_i128 cur = lu[cu] + lv[cv] + mat[(int64_t)cu * kv + cv];
	struct pair_cand c[PAIR_TRIES];
	for (int a = 0; a < ku; a++) {
		if (lu[a] >= cur)
			continue;
		for (int b = 0; b < kv; b++) {
			shard_i128 t = lu[a] + lv[b] + mat[(int64_t)a * kv + b];
			if (t >= cur || (nc == PAIR_TRIES && t >= c[nc - 1].t))
				continue;
			int at = nc < PAIR_TRIES ? nc++ : nc - 1;
			while (at > 0 && c[at - 1].t > t) {
				c[at] = c[at - 1];
				at--;
			}
			c[at] = (struct pair_cand){ t, a, b };
		}
	}
	for (int x = 0; x < nc; x++) {
		if (!ms_fits_pair(st, u, c[x].a, v, c[x].b))
			continue;
		int rc = ms_move(st, u, c[x].a, c[x].t - cur);
		if (rc == 0)
			rc = ms_move(st, v, c[x].b, 0);
		return rc < 0 ? rc : 1;
	}
	return 0;
}

static int descend_all(struct msearch *r)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	int moved, rc;
	do {
		moved = 0;
		for (int i = 0; i < m->n; i++)
			shard_queue_push(&r->q, i);
		if ((rc = descend(r, &moved)) < 0)
			return rc;
		for (int k = 0; k < m->m && !ms_late(st); k++) {
			if ((rc = pair_move(r, k)) < 0)
				return rc;
			moved += rc;
		}
	} while (moved > 0 && !ms_late(st));
	ms_commit(st);
	return 0;
}

/* ---- starts and repair ------------------------------------------------------ */

static void least_memory(const struct msearch *r, int *choice)
{
	const struct shard_model *m = r->st->m;
	for (int i = 0; i < m->n; i++) {
		int best = 0;
		const int64_t *tot = r->tot + m->off[i], *c = m->cost + m->off[i];
		for (int q = 1; q < shard_model_nstrat(m, i); q++)
			if (tot[q] < tot[best] || (tot[q] == tot[best] && c[q] < c[best]))
				best = q;
		choice[i] = best;
	}
}

/* The cheapest usage-lowering move at segment j, or -1. A move may raise
 * other segments, over the limit even, but never to the current peak: the
 * number of segments at the peak then falls with each move (or the peak
 * does), so repair ends; moves that keep every segment within the limit
 * are preferred. */
/* r->cover_* for segment j. */
static void cover(struct msearch *r, int j)
{
	const struct shard_model *m = r->st->m;
	if (r->cover_j == j)
		return;
	r->ncover = 0;
	for (int i = 0; i < m->n; i++) {
		int x = m->poff[i];
		while (x < m->poff[i + 1] && m->piece[x].b <= j)
			x++;
		if (x == m->poff[i + 1] || m->piece[x].a > j)
			continue;
		r->cover_node[r->ncover] = i;
		r->cover_piece[r->ncover++] = x;
	}
	r->cover_j = j;
}

static int repair_pick(struct msearch *r, int j, shard_i128 excess, int *to, shard_i128 *dcost)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	int node = -1;
	double best_score = 0;
	bool best_within = false;
	shard_i128 peak = ms_peak(st);
	cover(r, j);
	for (int k = 0; k < r->ncover; k++) {
		int i = r->cover_node[k], x = r->cover_piece[k];
		int c = st->choice[i];
		if (ms_use(m, x, c) == r->least_use[x])
			continue; /* no strategy lowers it here */
		bool local_done = false;
		for (int q = 0; q < shard_model_nstrat(m, i); q++) {
			shard_i128 saved = (shard_i128)ms_use(m, x, c) - ms_use(m, x, q);
			if (saved <= 0)
				continue;
			shard_i128 over = ms_excess(st, i, q); /* highest raised segment, less the limit */
			bool within = over <= 0;
			if (!within && over + m->limit >= peak)
				continue;
			if (best_within && !within)
				continue;
			if (!local_done) {
				ms_local(st, i, -1, NULL, st->local);
				local_done = true;
			}
			shard_i128 d = st->local[q] - st->local[c];
			double score = (double)d / (double)(saved < excess ? saved : excess);
			if (node < 0 || score < best_score || (within && !best_within)) {
				node = i, *to = q, *dcost = d;
				best_score = score;
				best_within = within;
			}
		}
	}
	return node;
}

static int repair(struct msearch *r)
{
	struct mstate *st = r->st;
	while (!ms_feasible(st)) {
		if (ms_late(st))
			return -ENOSPC; /* unfinished: the caller keeps what it had */
		int j = shard_tree_argmax(&st->tree), to = 0;
		shard_i128 d = 0;
		int i = repair_pick(r, j, ms_peak(st) - st->m->limit, &to, &d);
		if (i < 0)
			return -ENOSPC;
		int rc = ms_move(st, i, to, d);
		if (rc < 0)
			return rc;
	}
	ms_commit(st);
	return 0;
}

/* Greedy from the least-memory assignment (loaded in st); memory_aware
 * keeps every segment within the limit. Leaves the result in r->save. */
static int greedy(struct msearch *r, bool memory_aware)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	memset(r->mask, 0, (size_t)m->n + 1);
	for (int i = 0; i < m->n; i++) {
		int k = shard_model_nstrat(m, i), best = -1;
		ms_local(st, i, -1, r->mask, st->local);
		const int64_t *tot = r->tot + m->off[i];
		for (int q = 0; q < k; q++) {
			if (best >= 0 && (st->local[q] > st->local[best] ||
					  (st->local[q] == st->local[best] && tot[q] >= tot[best])))
				continue;
			if (!memory_aware || q == st->choice[i] || ms_fits(st, i, q))
				best = q;
		}
		int rc = memory_aware ? ms_move(st, i, best, 0) : 0;
		if (rc < 0)
			return rc;
		r->save[i] = best;
		r->mask[i] = 1;
	}
	ms_commit(st);
	return 0;
}

int msearch_start(struct msearch *r)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	size_t bytes = sizeof *r->save * ((size_t)m->n + 1);
	int *least = malloc(bytes), *best = malloc(bytes), rc = 0;
	bool have = false;
	shard_i128 best_cost = 0;
	if (!least || !best) {
		free(least);
		free(best);
		return NOMEM();
	}
	least_memory(r, least);
	if (r->prm.verbose) {
		char a[SHARD_I128_STRLEN];
		ms_load(st, least);
		fprintf(stderr, "shard: least-memory start: peak %s of %lld\n", shard_i128_str(ms_peak(st), a),
			(long long)m->limit);
	}
	for (int pass = 0; pass < 2 && rc >= 0; pass++) {
		ms_load(st, least);
		if ((rc = greedy(r, pass == 0)) < 0)
			break;
		ms_load(st, r->save);
		say(r, pass == 0 ? "memory-aware greedy" : "greedy");
		rc = repair(r);
		if (rc == -ENOSPC) {
			char a[SHARD_I128_STRLEN];
			if (r->prm.verbose)
				fprintf(stderr, "shard: repair stuck at peak %s\n", shard_i128_str(ms_peak(st), a));
			continue;
		}
		if (rc < 0 || (rc = descend_all(r)) < 0)
			break;
		say(r, "descent");
		if (!have || st->cost < best_cost) {
			memcpy(best, st->choice, bytes);
			best_cost = st->cost;
			have = true;
		}
	}
	if (rc >= 0)
		rc = have ? 0 : -ENOSPC;
	if (have)
		ms_load(st, best);
	free(least);
	free(best);
	return rc;
}

int msearch_descend(struct msearch *r)
{
	return descend_all(r);
}

int msearch_repair(struct msearch *r)
{
	return repair(r);
}

/* ---- rounds ----------------------------------------------------------------- */

/* A random walk of up to 4 nodes moved to random strategies that fit. */
static int perturb(struct msearch *r)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	int i = (int)(rng_next(&r->rng) % (uint64_t)m->n), rc;
	int len = 1 + (int)(rng_next(&r->rng) % 4);
	for (int s = 0; s < len; s++) {
		int k = shard_model_nstrat(m, i), c = st->choice[i];
		if (k > 1) {
			int q = (c + 1 + (int)(rng_next(&r->rng) % (uint64_t)(k - 1))) % k;
			if (ms_fits(st, i, q)) {
				ms_local(st, i, -1, NULL, st->local);
				if ((rc = ms_move(st, i, q, st->local[q] - st->local[c])) < 0)
					return rc;
				shard_queue_push(&r->q, i);
				push_neighbours(r, i);
			}
		}
		int deg = st->adj_off[i + 1] - st->adj_off[i];
		if (deg == 0)
			break;
		i = st->adj[st->adj_off[i] + (int)(rng_next(&r->rng) % (uint64_t)deg)].other;
	}
	return 0;
}

/* Pair moves on the edges of the nodes moved this round, then descent. */
static int round_pairs(struct msearch *r)
{
	struct mstate *st = r->st;
	int n = st->nundo, moved = 0, rc;
	for (int x = 0; x < n; x++) {
		int i = st->undo[x].node;
		for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
			if ((rc = pair_move(r, st->adj[j].edge)) < 0)
				return rc;
			if (rc) {
				push_neighbours(r, st->m->eu[st->adj[j].edge]);
				push_neighbours(r, st->m->ev[st->adj[j].edge]);
			}
		}
	}
	return descend(r, &moved);
}

static void model_local(void *ctx, int i, shard_i128 *out)
{
	ms_local(ctx, i, -1, NULL, out);
}

/* The forest DP's proposal, repaired and descended, kept when it costs no
 * more. */
static int dp_round(struct msearch *r)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	shard_i128 before = st->cost;
	int moved = 0;
	if (ms_late(st))
		return 0;
	memcpy(r->save, st->choice, sizeof *r->save * (size_t)m->n);
	struct shard_graph g = { m->n,        m->m,    m->off,     m->eu, m->ev,       m->eoff, m->ecost,
				 st->adj_off, st->adj, st->choice, NULL,  model_local, st };
	int rc = shard_dp_propose(&r->dp, &g, rng_next, &r->rng);
	if (rc < 0)
		return rc;
	ms_load(st, r->dp.choice);
	rc = repair(r);
	if (rc == 0) {
		for (int i = 0; i < m->n; i++)
			shard_queue_push(&r->q, i);
		rc = descend(r, &moved);
	}
	if (rc < 0 && rc != -ENOSPC)
		return rc;
	if (rc == -ENOSPC || st->cost > before || !ms_feasible(st) || st->timed_out)
		ms_load(st, r->save);
	else if (st->cost < before)
		say(r, "forest move");
	r->q.count = 0;
	memset(r->q.in, 0, (size_t)m->n + 1);
	ms_commit(st);
	return 0;
}

/* Star move around node h: for each strategy q of h, every neighbour
 * takes its best response to q (its other neighbours as they are); the
 * best few q are tried in turn, each priced exactly as its moves are made
 * and kept when the cost falls and memory fits. A node with many
 * neighbours can only change this way: alone, every edge would object. */
static int star_move(struct msearch *r, int h, bool *moved)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	int kh = shard_model_nstrat(m, h), deg = st->adj_off[h + 1] - st->adj_off[h];
	*moved = false;
	if (kh < 2 || deg == 0)
		return 0;
	int *resp = malloc(sizeof *resp * (size_t)deg * (size_t)kh);
	shard_i128 *tot = malloc(sizeof *tot * (size_t)kh), *lj = malloc(sizeof *lj * ((size_t)st->maxk + 1));
	if (!resp || !tot || !lj) {
		free(resp);
		free(tot);
		free(lj);
		return NOMEM();
	}
	for (int q = 0; q < kh; q++)
		tot[q] = m->cost[m->off[h] + q];
	for (int d = 0; d < deg; d++) {
		const struct shard_adj *a = &st->adj[st->adj_off[h] + d];
		int j = a->other, kj = shard_model_nstrat(m, j);
		const int64_t *mat = m->ecost + m->eoff[a->edge];
		ms_local(st, j, h, NULL, lj);
		for (int q = 0; q < kh; q++) {
			int best = 0;
			shard_i128 bv = 0;
			for (int s = 0; s < kj; s++) {
				shard_i128 v = lj[s] + mat[q * a->row + s * a->col];
				if (s == 0 || v < bv)
					bv = v, best = s;
			}
			tot[q] += bv;
			resp[(size_t)d * kh + q] = best;
		}
	}
	int rc = 0;
	for (int tries = 0; tries < 3 && rc == 0 && !*moved; tries++) {
		int q = -1;
		for (int x = 0; x < kh; x++)
			if (x != st->choice[h] && tot[x] < m->inf && (q < 0 || tot[x] < tot[q]))
				q = x;
		if (q < 0)
			break;
		tot[q] = m->inf; /* tried */
		shard_i128 before = st->cost;
		ms_local(st, h, -1, NULL, st->local);
		rc = ms_move(st, h, q, st->local[q] - st->local[st->choice[h]]);
		for (int d = 0; d < deg && rc == 0; d++) {
			int j = st->adj[st->adj_off[h] + d].other, s = resp[(size_t)d * kh + q];
			if (s == st->choice[j])
				continue;
			ms_local(st, j, -1, NULL, st->local);
			rc = ms_move(st, j, s, st->local[s] - st->local[st->choice[j]]);
		}
		if (rc == 0 && st->cost < before && ms_feasible(st)) {
			ms_commit(st);
			*moved = true;
		} else {
			ms_undo(st);
		}
	}
	free(resp);
	free(tot);
	free(lj);
	return rc;
}

/* Whether i or a neighbour moved since i's last star move. */
static bool star_stale(const struct msearch *r, int i)
{
	const struct mstate *st = r->st;
	uint64_t last = r->star_at[i];
	if (st->stamp[i] > last || last == 0)
		return true;
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++)
		if (st->stamp[st->adj[j].other] > last)
			return true;
	return false;
}

/* Star moves on the nodes with at least 3 neighbours whose neighbourhood
 * changed since their last one. */
static int star_round(struct msearch *r)
{
	struct mstate *st = r->st;
	const struct shard_model *m = st->m;
	int rc = 0, moved = 0;
	for (int i = 0; i < m->n && rc == 0 && !ms_late(st); i++) {
		bool did = false;
		if (st->adj_off[i + 1] - st->adj_off[i] < 3 || !star_stale(r, i))
			continue;
		r->star_at[i] = ++st->clock;
		rc = star_move(r, i, &did);
		if (did) {
			moved++;
			shard_queue_push(&r->q, i);
			push_neighbours(r, i);
		}
	}
	int dm = 0;
	if (rc == 0 && moved) {
		rc = descend(r, &dm);
		ms_commit(st);
		say(r, "star moves");
	}
	return rc;
}

int msearch_improve(struct msearch *r, int rounds)
{
	struct mstate *st = r->st;
	/* per block kind (forest, star): misses in a row, and turns to skip.
	 * A kind that keeps failing waits twice as many of its turns after
	 * each miss, up to 31: on a tight limit the forest DP's memory-blind
	 * proposal is repaired to the same worse answer turn after turn (63
	 * repairs of 924 moves, 3.2 s of MoE 70B's 4.2 s rounds). */
	int miss[2] = { 0, 0 }, skip[2] = { 0, 0 }, rc;
	for (int k = 0; k < rounds && st->m->n > 0; k++) {
		shard_i128 before = st->cost;
		if (k % 16 == 0) {
			int kind = k % 32 == 0 ? 0 : 1;
			if (skip[kind] > 0) {
				skip[kind]--;
				continue;
			}
			if ((rc = (kind == 0 ? dp_round(r) : star_round(r))) < 0)
				return rc;
			if (ms_late(st))
				break;
			r->blocks[kind]++;
			r->blocks_won[kind] += st->cost < before;
			miss[kind] = st->cost < before ? 0 : miss[kind] + 1;
			skip[kind] = (1 << (miss[kind] < 5 ? miss[kind] : 5)) - 1;
			if (st->cost < before && ms_feasible(st))
				ms_publish(st, st->choice, st->cost, false);
			continue;
		}
		if ((rc = perturb(r)) < 0)
			return rc;
		int moved = 0;
		if ((rc = descend(r, &moved)) < 0 || (rc = round_pairs(r)) < 0)
			return rc;
		if (ms_late(st)) {
			ms_undo(st); /* an unfinished round may be worse */
			break;
		}
		if (st->cost <= before)
			ms_commit(st);
		else
			ms_undo(st);
		if (st->cost < before && ms_feasible(st))
			ms_publish(st, st->choice, st->cost, false);
	}
	r->q.count = 0;
	memset(r->q.in, 0, (size_t)st->m->n + 1);
	say(r, "rounds");
	return 0;
}

int msearch_init(struct msearch *r, struct mstate *st, const struct msearch_params *prm)
{
	const struct shard_model *m = st->m;
	memset(r, 0, sizeof *r);
	r->st = st;
	r->prm = *prm;
	r->rng = prm->seed;
	int rc = shard_queue_init(&r->q, m->n);
	if (rc == 0)
		rc = shard_dp_init(&r->dp, m->n, m->m, m->off[m->n]);
	r->save = malloc(sizeof *r->save * ((size_t)m->n + 1));
	r->mask = malloc((size_t)m->n + 1);
	r->tot = calloc((size_t)m->off[m->n] + 1, sizeof *r->tot);
	r->star_at = calloc((size_t)m->n + 1, sizeof *r->star_at);
	r->cover_j = -1;
	r->cover_node = malloc(sizeof *r->cover_node * ((size_t)m->n + 1));
	r->cover_piece = malloc(sizeof *r->cover_piece * ((size_t)m->n + 1));
	r->least_use = malloc(sizeof *r->least_use * ((size_t)m->poff[m->n] + 1));
	if (rc < 0 || !r->save || !r->mask || !r->tot || !r->star_at || !r->cover_node || !r->cover_piece ||
	    !r->least_use) {
		msearch_free(r);
		return NOMEM();
	}
	for (int i = 0; i < m->n; i++)
		for (int x = m->poff[i]; x < m->poff[i + 1]; x++) {
			r->least_use[x] = INT64_MAX;
			for (int q = 0; q < shard_model_nstrat(m, i); q++) {
				r->tot[m->off[i] + q] += ms_use(m, x, q);
				if (ms_use(m, x, q) < r->least_use[x])
					r->least_use[x] = ms_use(m, x, q);
			}
		}
	return 0;
}

void msearch_free(struct msearch *r)
{
	shard_queue_free(&r->q);
	shard_dp_free(&r->dp);
	free(r->save);
	free(r->mask);
	free(r->tot);
	free(r->star_at);
	free(r->cover_node);
	free(r->cover_piece);
	free(r->least_use);
	memset(r, 0, sizeof *r);
}
