/*
 * shard_reduce.c: exact reductions of the strategy problem before search.
 *
 * Rules, applied from a worklist until nothing changes (each keeps the
 * optimum and maps feasible choices to feasible choices of equal cost):
 *  - prune: a strategy whose cost is forbidden, or that has no finite
 *    partner across some edge, is dead (arc consistency);
 *  - fixed usage: a piece whose usage is the same for every alive strategy
 *    moves into the per-segment base;
 *  - single: a node with one strategy folds its edge rows into its
 *    neighbours' node costs;
 *  - leaf: a node j with one edge to i is replaced by its best response
 *    r(t) to each strategy t of i, provided r(t) is the cheapest and also
 *    uses the least memory, piece by piece, among j's strategies finite
 *    against t (then no other strategy of j can ever be better); i's cost
 *    gains the response's cost and i gains j's pieces with usage u_j(r(t));
 *  - pair: a node with two edges and no pieces becomes an edge between its
 *    neighbours, N[t][w] = min_s c_j(s) + M_ij(t, s) + M_jl(s, w);
 *  - follower: when every strategy t of a neighbour i has exactly one
 *    finite partner f(t) in j, j is f(i) in every finite assignment and
 *    merges into i (cost, other edges re-indexed by f, pieces);
 *  - dominance: strategy a of node i goes when some b costs no more, uses
 *    no more memory in every piece, and its row is no larger on every edge
 *    (ties keep the lower index).
 * Between passes, segments whose largest possible usage fits the limit are
 * marked non-binding and pieces are cut to the binding ones: a node whose
 * memory can never bind becomes free to eliminate. Largest usages only
 * shrink as the rules apply, so a non-binding segment stays so.
 *
 * Example: u (strategies a, b) -- v (one strategy) with M = [[1], [5]]:
 * single folds v into u's costs (+1, +5) and u, now isolated without
 * memory, is fixed to its cheaper strategy.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_reduce.h"

#define NOMEM() shard_errorf(-ENOMEM, "reduce: out of memory")
/* Work bounds: pair eliminations beyond this many matrix steps, and
 * dominance beyond this many comparison steps in total, are skipped. */
#define PAIR_WORK 20000000
#define PAIR_ENTRIES 2000000
#define DOM_BUDGET 400000000

static int64_t ncost(const struct red *r, int i, int s)
{
	return r->cost[r->p->strat_off[i] + s];
}

static int64_t *ncostp(struct red *r, int i, int s)
{
	return &r->cost[r->p->strat_off[i] + s];
}

/* ---- prune ------------------------------------------------------------------ */

static int revise(struct red *r, int j)
{
	int died = 0, *ids, ne = red_edges(r, j, &ids);
	for (int s = 0; s < red_k(r, j); s++) {
		if (!red_alive(r, j, s))
			continue;
		bool ok = ncost(r, j, s) < r->inf;
		for (int k = 0; k < ne && ok; k++) {
			const struct wedge *e = &r->e[ids[k]];
			int o = red_other(e, j);
			ok = false;
			for (int t = 0; t < red_k(r, o) && !ok; t++)
				ok = red_alive(r, o, t) && red_ent(r, e, j, s, t) < r->inf;
		}
		if (!ok) {
			red_kill(r, j, s);
			died++;
		}
	}
	if (died)
		red_push_neighbours(r, j);
	r->stats->pruned += died;
	return died;
}

/* ---- pieces ----------------------------------------------------------------- */

static bool piece_const(const struct red *r, int i, const struct wpiece *c, int64_t *val)
{
	bool have = false;
	for (int s = 0; s < red_k(r, i); s++) {
		if (!red_alive(r, i, s))
			continue;
		if (have && r->pool[c->use + s] != *val)
			return false;
		*val = r->pool[c->use + s];
		have = true;
	}
	return true;
}

/* Moves i's constant pieces into the fixed usage. */
static void fix_pieces(struct red *r, int i)
{
	int *link = &r->phead[i];
	while (*link >= 0) {
		struct wpiece *c = &r->pc[*link];
		int64_t v = 0;
		if (piece_const(r, i, c, &v)) {
			r->fixed[c->a] += v;
			r->fixed[c->b] -= v;
			*link = c->next;
		} else {
			link = &c->next;
		}
	}
}

/* ---- single, isolated ------------------------------------------------------- */

static int first_alive(const struct red *r, int i)
{
	for (int s = 0; s < red_k(r, i); s++)
		if (red_alive(r, i, s))
			return s;
	return 0;
}

static int fold_single(struct red *r, int j)
{
	int s = first_alive(r, j), *ids, ne = red_edges(r, j, &ids);
	for (int k = ne - 1; k >= 0; k--) {
		const struct wedge *e = &r->e[ids[k]];
		int i = red_other(e, j);
		for (int t = 0; t < red_k(r, i); t++)
			if (red_alive(r, i, t))
				*ncostp(r, i, t) = red_sat(r, (shard_i128)ncost(r, i, t) + red_ent(r, e, i, t, s));
		red_edge_kill(r, ids[k]);
		red_push(r, i);
	}
	r->stats->fixed++;
	r->offset += ncost(r, j, s);
	return red_record(r, (struct shard_rec){ SHARD_REC_FIX, j, -1, -1, s, NULL });
}

static int fix_isolated(struct red *r, int j)
{
	int best = first_alive(r, j);
	for (int s = best + 1; s < red_k(r, j); s++)
		if (red_alive(r, j, s) && ncost(r, j, s) < ncost(r, j, best))
			best = s;
	r->stats->fixed++;
	r->offset += ncost(r, j, best);
	return red_record(r, (struct shard_rec){ SHARD_REC_FIX, j, -1, -1, best, NULL });
}

/* ---- leaf ------------------------------------------------------------------- */

/* Piece by piece usage of s no larger than of x (all pieces of j). */
static bool use_le(const struct red *r, int j, int s, int x)
{
	for (int c = r->phead[j]; c >= 0; c = r->pc[c].next)
		if (r->pool[r->pc[c].use + s] > r->pool[r->pc[c].use + x])
			return false;
	return true;
}

/* j's best response to strategy t of the other end of edge e: cheapest,
 * ties to the least usage; *ok false when it does not also use the least
 * memory against every finite alternative. */
static int respond(const struct red *r, int j, const struct wedge *e, int t, int64_t *val, bool *ok)
{
	int best = -1;
	int64_t bv = 0;
	for (int s = 0; s < red_k(r, j); s++) {
		if (!red_alive(r, j, s))
			continue;
		int64_t v = red_sat(r, (shard_i128)ncost(r, j, s) + red_ent(r, e, j, s, t));
		if (best < 0 || v < bv || (v == bv && use_le(r, j, s, best) && !use_le(r, j, best, s)))
			best = s, bv = v;
	}
	*val = bv;
	*ok = true;
	if (bv >= r->inf || r->phead[j] < 0)
		return best;
	for (int s = 0; s < red_k(r, j) && *ok; s++)
		if (red_alive(r, j, s) && red_ent(r, e, j, s, t) < r->inf &&
		    red_sat(r, (shard_i128)ncost(r, j, s) + red_ent(r, e, j, s, t)) < r->inf)
			*ok = use_le(r, j, best, s);
	return best;
}

static int eliminate_leaf(struct red *r, int j, int k)
{
	const struct wedge *e = &r->e[k];
	int i = red_other(e, j), ki = red_k(r, i);
	int *resp = malloc(sizeof *resp * (size_t)ki);
	int64_t *val = malloc(sizeof *val * (size_t)ki);
	if (!resp || !val) {
		free(resp);
		free(val);
		return NOMEM();
	}
	bool ok = true;
	for (int t = 0; t < ki && ok; t++)
		resp[t] = red_alive(r, i, t) ? respond(r, j, e, t, &val[t], &ok) : first_alive(r, j);
	if (!ok) {
		free(resp);
		free(val);
		return 0;
	}
	for (int t = 0; t < ki; t++) {
		if (!red_alive(r, i, t))
			continue;
		int64_t *c = ncostp(r, i, t);
		*c = red_sat(r, (shard_i128)*c + val[t]);
	}
	free(val);
	int rc = 0;
	for (int c = r->phead[j]; c >= 0 && rc == 0; c = r->pc[c].next) {
		int64_t off, src = r->pc[c].use;
		rc = red_piece_add(r, i, r->pc[c].a, r->pc[c].b, &off);
		for (int t = 0; t < ki && rc == 0; t++)
			r->pool[off + t] = r->pool[src + resp[t]];
	}
	r->phead[j] = -1;
	red_edge_kill(r, k);
	red_push(r, i);
	r->stats->leaves++;
	if (rc < 0) {
		free(resp);
		return rc;
	}
	return red_record(r, (struct shard_rec){ SHARD_REC_LEAF, j, i, -1, 0, resp });
}

/* ---- pair ------------------------------------------------------------------- */

/* eliminate_pair's matrix the fast way, when no cost involved is negative
 * (the compiler's never are) and inf leaves room for three: each sum of
 * three entries then fits an int64 and saturates as the min with inf, so
 * j's alive strategies' columns are gathered once, contiguous, and summed
 * without 128-bit arithmetic. The same answer as the general loop (ties
 * to the lowest strategy; s0 where every sum is inf). false: not taken
 * (negative costs, or no memory for the columns). */
static bool pair_fast(const struct red *r, int j, int i, int l, const struct wedge *e1, const struct wedge *e2, int s0,
		      int64_t *mat, int *resp)
{
	int ki = red_k(r, i), kl = red_k(r, l), kj = red_k(r, j), ns = 0;
	if (r->inf > INT64_MAX / 3)
		return false;
	int *alive = malloc(sizeof *alive * (size_t)kj);
	int64_t *a = malloc(sizeof *a * (size_t)ki * (size_t)kj), *b = malloc(sizeof *b * (size_t)kl * (size_t)kj);
	bool ok = alive && a && b;
	for (int s = 0; ok && s < kj; s++)
		if (red_alive(r, j, s)) {
			alive[ns++] = s;
			ok = ncost(r, j, s) >= 0;
		}
	for (int t = 0; ok && t < ki; t++)
		for (int q = 0; ok && q < ns; q++) {
			int64_t x = red_ent(r, e1, j, alive[q], t);
			a[(int64_t)t * ns + q] = ncost(r, j, alive[q]) + x;
			ok = x >= 0;
		}
	for (int w = 0; ok && w < kl; w++)
		for (int q = 0; ok && q < ns; q++) {
			int64_t x = red_ent(r, e2, j, alive[q], w);
			b[(int64_t)w * ns + q] = x;
			ok = x >= 0;
		}
	for (int t = 0; ok && t < ki; t++) {
		const int64_t *at = a + (int64_t)t * ns;
		for (int w = 0; w < kl; w++) {
			int64_t x = (int64_t)t * kl + w, best = r->inf;
			const int64_t *bw = b + (int64_t)w * ns;
			int arg = -1;
			if (red_alive(r, i, t) && red_alive(r, l, w))
				for (int q = 0; q < ns; q++)
					if (at[q] + bw[q] < best)
						best = at[q] + bw[q], arg = q;
			mat[x] = best;
			resp[x] = arg < 0 ? s0 : alive[arg];
		}
	}
	free(alive);
	free(a);
	free(b);
	return ok;
}

static int eliminate_pair(struct red *r, int j, int k1, int k2)
{
	const struct wedge *e1 = &r->e[k1], *e2 = &r->e[k2];
	int i = red_other(e1, j), l = red_other(e2, j), ki = red_k(r, i), kl = red_k(r, l);
	if ((int64_t)r->nal[i] * r->nal[l] * r->nal[j] > PAIR_WORK || (int64_t)ki * kl > PAIR_ENTRIES)
		return 0;
	int64_t *mat = malloc(sizeof *mat * (size_t)ki * (size_t)kl);
	int *resp = malloc(sizeof *resp * (size_t)ki * (size_t)kl);
	if (!mat || !resp) {
		free(mat);
		free(resp);
		return NOMEM();
	}
	int s0 = first_alive(r, j);
	if (!pair_fast(r, j, i, l, e1, e2, s0, mat, resp))
		for (int t = 0; t < ki; t++) {
			for (int w = 0; w < kl; w++) {
				int64_t x = (int64_t)t * kl + w;
				mat[x] = r->inf;
				resp[x] = s0;
				if (!red_alive(r, i, t) || !red_alive(r, l, w))
					continue;
				for (int s = 0; s < red_k(r, j); s++) {
					if (!red_alive(r, j, s))
						continue;
					int64_t v = red_sat(r, (shard_i128)ncost(r, j, s) + red_ent(r, e1, j, s, t) +
								       red_ent(r, e2, j, s, w));
					if (v < mat[x] || (s == s0 && v == mat[x]))
						mat[x] = v, resp[x] = s;
				}
			}
		}
	red_edge_kill(r, k1);
	red_edge_kill(r, k2);
	r->stats->pairs++;
	int rc = red_record(r, (struct shard_rec){ SHARD_REC_PAIR, j, i, l, 0, resp });
	if (rc < 0) {
		free(mat);
		return rc;
	}
	rc = red_edge_add(r, i, l, mat, true);
	red_push(r, i);
	red_push(r, l);
	return rc;
}

/* ---- follower --------------------------------------------------------------- */

/* When every alive strategy t of i has exactly one finite partner f(t)
 * across edge k, j is a function of i in every finite assignment: j is
 * merged into i (its cost, its other edges re-indexed by f, its pieces)
 * and follows it. Returns 1 when it merged. */
static int merge_follower(struct red *r, int j, int k, int64_t nbr_strats)
{
	const struct wedge *e = &r->e[k];
	int i = red_other(e, j), ki = red_k(r, i);
	int *ids, ne;
	/* the matrices j's other edges become */
	if ((int64_t)ki * (nbr_strats - red_k(r, i)) > PAIR_ENTRIES)
		return 0;
	int *f = malloc(sizeof *f * (size_t)ki);
	if (!f)
		return NOMEM();
	for (int t = 0; t < ki; t++) {
		f[t] = first_alive(r, j);
		if (!red_alive(r, i, t))
			continue;
		int n = 0;
		for (int s = 0; s < red_k(r, j) && n < 2; s++)
			if (red_alive(r, j, s) && red_ent(r, e, i, t, s) < r->inf)
				n++, f[t] = s;
		if (n != 1) {
			free(f);
			return 0;
		}
	}
	for (int t = 0; t < ki; t++)
		if (red_alive(r, i, t))
			*ncostp(r, i, t) = red_sat(r, (shard_i128)ncost(r, i, t) + ncost(r, j, f[t]) +
							      red_ent(r, e, i, t, f[t]));
	red_edge_kill(r, k);
	int rc = 0;
	/* j's other edges move to i through f; a snapshot of j's list, since
	 * adding edges may move the lists */
	ne = red_edges(r, j, &ids);
	int *snap = malloc(sizeof *snap * ((size_t)ne + 1));
	if (!snap)
		rc = NOMEM();
	for (int x = 0; x < ne && snap; x++)
		snap[x] = ids[x];
	for (int x = 0; x < ne && rc == 0; x++) {
		int k2 = snap[x], w = red_other(&r->e[k2], j), kw = red_k(r, w);
		int64_t *mat = malloc(sizeof *mat * (size_t)ki * (size_t)kw + 1);
		if (!mat) {
			rc = NOMEM();
			break;
		}
		for (int t = 0; t < ki; t++)
			for (int c = 0; c < kw; c++)
				mat[(int64_t)t * kw + c] = red_alive(r, i, t) ? red_ent(r, &r->e[k2], j, f[t], c)
									      : r->inf;
		red_edge_kill(r, k2);
		rc = red_edge_add(r, i, w, mat, true);
		red_push(r, w);
	}
	free(snap);
	for (int c = r->phead[j]; c >= 0 && rc == 0; c = r->pc[c].next) {
		int64_t off, src = r->pc[c].use;
		rc = red_piece_add(r, i, r->pc[c].a, r->pc[c].b, &off);
		for (int t = 0; t < ki && rc == 0; t++)
			r->pool[off + t] = r->pool[src + f[t]];
	}
	r->phead[j] = -1;
	red_push(r, i);
	r->stats->followers++;
	if (rc < 0) {
		free(f);
		return rc;
	}
	rc = red_record(r, (struct shard_rec){ SHARD_REC_LEAF, j, i, -1, 0, f });
	return rc < 0 ? rc : 1;
}

/* A live edge of j across which j follows its neighbour, or -1. */
static int try_followers(struct red *r, int j)
{
	int *ids, ne = red_edges(r, j, &ids);
	int64_t nbr = 0; /* strategies over j's neighbours */
	for (int x = 0; x < ne; x++)
		nbr += red_k(r, red_other(&r->e[ids[x]], j));
	for (int x = 0; x < ne; x++) {
		/* a one-to-one edge can merge either way: move the fewer edges */
		int i = red_other(&r->e[ids[x]], j);
		if (r->deg[i] < r->deg[j] && r->deg[i] > 0) {
			int *iids, ine = red_edges(r, i, &iids);
			int64_t inbr = 0;
			for (int y = 0; y < ine; y++)
				inbr += red_k(r, red_other(&r->e[iids[y]], i));
			int rc = merge_follower(r, i, ids[x], inbr);
			if (rc != 0)
				return rc;
			ne = red_edges(r, j, &ids);
		}
		if (x >= ne)
			break;
		int rc = merge_follower(r, j, ids[x], nbr);
		if (rc != 0)
			return rc; /* merged (j is gone) or failed */
	}
	return 0;
}

/* ---- one node --------------------------------------------------------------- */

static int examine(struct red *r, int j)
{
	if (r->gone[j]) /* merged into a neighbour while it waited */
		return 0;
	revise(r, j);
	if (r->nal[j] == 0)
		return 0;
	fix_pieces(r, j);
	if (r->nal[j] == 1)
		return fold_single(r, j);
	int *ids, ne = red_edges(r, j, &ids);
	if (ne == 0 && r->phead[j] < 0)
		return fix_isolated(r, j);
	if (ne == 1)
		return eliminate_leaf(r, j, ids[0]);
	if (ne == 2 && r->phead[j] < 0) {
		int rc = eliminate_pair(r, j, ids[0], ids[1]);
		if (rc < 0 || r->gone[j])
			return rc;
	}
	int rc = try_followers(r, j);
	return rc < 0 ? rc : 0;
}

static int drain(struct red *r)
{
	int rc = 0;
	while (r->qcount > 0 && rc == 0 && !r->wiped)
		rc = examine(r, red_pop(r));
	return rc;
}

/* ---- dominance -------------------------------------------------------------- */

/* 1 when b dominates a strictly or ties with a lower index, else 0. */
static int dominates(struct red *r, int i, int b, int a, int *ids, int ne)
{
	bool strict = ncost(r, i, b) < ncost(r, i, a);
	if (ncost(r, i, b) > ncost(r, i, a))
		return 0;
	for (int c = r->phead[i]; c >= 0; c = r->pc[c].next) {
		int64_t ub = r->pool[r->pc[c].use + b], ua = r->pool[r->pc[c].use + a];
		if (ub > ua)
			return 0;
		strict |= ub < ua;
	}
	for (int k = 0; k < ne; k++) {
		const struct wedge *e = &r->e[ids[k]];
		int o = red_other(e, i);
		r->dom_budget -= red_k(r, o);
		for (int t = 0; t < red_k(r, o); t++) {
			if (!red_alive(r, o, t))
				continue;
			int64_t xb = red_ent(r, e, i, b, t), xa = red_ent(r, e, i, a, t);
			if (xb > xa)
				return 0;
			strict |= xb < xa;
		}
	}
	return strict || b < a;
}

static int dominance(struct red *r, int i)
{
	int *ids, ne = red_edges(r, i, &ids), died = 0;
	for (int a = 0; a < red_k(r, i) && r->dom_budget > 0; a++) {
		if (!red_alive(r, i, a))
			continue;
		for (int b = 0; b < red_k(r, i); b++) {
			if (b == a || !red_alive(r, i, b) || !dominates(r, i, b, a, ids, ne))
				continue;
			red_kill(r, i, a);
			died++;
			break;
		}
	}
	r->stats->dominated += died;
	return died;
}

static int dominance_pass(struct red *r)
{
	int changed = 0;
	for (int i = 0; i < r->n && r->dom_budget > 0; i++) {
		if (r->gone[i] || r->nal[i] < 2 || !dominance(r, i))
			continue;
		changed++;
		red_push(r, i);
		red_push_neighbours(r, i);
	}
	return changed;
}

/* ---- binding segments ------------------------------------------------------- */

static int64_t piece_max(const struct red *r, int i, const struct wpiece *c)
{
	int64_t mx = 0;
	for (int s = 0; s < red_k(r, i); s++)
		if (red_alive(r, i, s) && r->pool[c->use + s] > mx)
			mx = r->pool[c->use + s];
	return mx;
}

/* Marks binding segments; cuts pieces to them. Returns pieces changed. */
static int cut_pass(struct red *r)
{
	int nseg = r->nseg, changed = 0;
	shard_i128 *mx = malloc(sizeof *mx * ((size_t)nseg + 1));
	if (!mx)
		return NOMEM();
	memcpy(mx, r->fixed, sizeof *mx * ((size_t)nseg + 1));
	for (int i = 0; i < r->n; i++)
		for (int c = r->gone[i] ? -1 : r->phead[i]; c >= 0; c = r->pc[c].next) {
			int64_t v = piece_max(r, i, &r->pc[c]);
			mx[r->pc[c].a] += v;
			mx[r->pc[c].b] -= v;
		}
	shard_i128 run = 0;
	int prev = -1;
	for (int s = 0; s < nseg; s++) {
		run += mx[s];
		if (run > r->p->usage_limit)
			prev = s;
		r->prev_bind[s] = prev;
	}
	int next = -1;
	for (int s = nseg - 1; s >= 0; s--) {
		if (r->prev_bind[s] == s)
			next = s;
		r->next_bind[s] = next;
	}
	free(mx);
	for (int i = 0; i < r->n; i++) {
		int *link = r->gone[i] ? NULL : &r->phead[i];
		bool touched = false;
		while (link && *link >= 0) {
			struct wpiece *c = &r->pc[*link];
			int a = r->next_bind[c->a], b = r->prev_bind[c->b - 1];
			if (a < 0 || a >= c->b) { /* never binding: the usage cannot matter */
				*link = c->next;
				touched = true;
				continue;
			}
			if (a != c->a || b + 1 != c->b) {
				c->a = a;
				c->b = b + 1;
				touched = true;
			}
			link = &c->next;
		}
		if (touched) {
			changed++;
			red_push(r, i);
		}
	}
	r->stats->pieces_cut += changed;
	return changed;
}

int shard_reduce(const struct shard_problem *p, int64_t forbidden, struct shard_model *m,
		 struct shard_reduce_stats *stats)
{
	struct red r;
	memset(m, 0, sizeof *m);
	memset(stats, 0, sizeof *stats);
	int rc = red_init(&r, p, forbidden);
	r.stats = stats;
	r.dom_budget = DOM_BUDGET;
	for (int round = 0; rc == 0 && round < 50; round++) {
		stats->rounds++;
		if ((rc = drain(&r)) < 0 || r.wiped)
			break;
		int cut = cut_pass(&r);
		if (cut < 0) {
			rc = cut;
			break;
		}
		if ((rc = drain(&r)) < 0 || r.wiped)
			break;
		if (!dominance_pass(&r) && !cut)
			break;
	}
	if (rc == 0 && r.wiped)
		m->no_finite = true;
	else if (rc == 0)
		rc = red_compact(&r, m);
	red_free(&r);
	if (rc < 0)
		shard_model_free(m);
	return rc;
}

int shard_model_plain(const struct shard_problem *p, int64_t forbidden, struct shard_model *m)
{
	struct red r;
	struct shard_reduce_stats stats;
	memset(m, 0, sizeof *m);
	int rc = red_init(&r, p, forbidden);
	r.stats = &stats;
	if (rc == 0)
		rc = red_compact(&r, m);
	red_free(&r);
	if (rc < 0)
		shard_model_free(m);
	return rc;
}
