/*
 * shard_model.c: the reducer's working graph (edges that merge when added
 * twice, usage pieces, the worklist, elimination records), its compaction
 * into a struct shard_model, and the way back: expanding a model
 * assignment into one of the original problem.
 *
 * Time segments are the runs between distinct interval endpoints of the
 * nodes that can hold memory, as in shard_state.c: every point of a segment
 * sees the same live set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_reduce.h"

#define NOMEM() shard_errorf(-ENOMEM, "reduce: out of memory")

/* Segments, and one piece per memory-holding node. */
static int init_pieces(struct red *r)
{
	const struct shard_problem *p = r->p;
	int *seg = malloc(sizeof *seg * (2 * (size_t)p->nnodes + 1));
	if (!seg)
		return NOMEM();
	int rc = shard_segments(p, seg, seg + p->nnodes);
	if (rc < 0) {
		free(seg);
		return NOMEM();
	}
	r->nseg = rc;
	r->fixed = calloc((size_t)r->nseg + 2, sizeof *r->fixed);
	r->next_bind = malloc(sizeof *r->next_bind * ((size_t)r->nseg + 2));
	r->prev_bind = malloc(sizeof *r->prev_bind * ((size_t)r->nseg + 2));
	rc = r->fixed && r->next_bind && r->prev_bind ? 0 : NOMEM();
	for (int i = 0; i < p->nnodes && rc == 0; i++) {
		if (!shard_holds_memory(p, i))
			continue;
		int64_t off;
		rc = red_piece_add(r, i, seg[i], seg[p->nnodes + i], &off);
		if (rc == 0)
			memcpy(r->pool + off, p->usage + p->strat_off[i], sizeof *r->pool * (size_t)red_k(r, i));
	}
	free(seg);
	return rc;
}

int red_init(struct red *r, const struct shard_problem *p, int64_t inf)
{
	memset(r, 0, sizeof *r);
	r->p = p;
	r->inf = inf;
	r->n = p->nnodes;
	size_t n1 = (size_t)p->nnodes + 1, ns = (size_t)p->strat_off[p->nnodes] + 1;
	r->alive = malloc(ns);
	r->cost = malloc(sizeof *r->cost * ns);
	r->nal = malloc(sizeof *r->nal * n1);
	r->gone = calloc(n1, 1);
	r->adj = calloc(n1, sizeof *r->adj);
	r->adj_n = calloc(n1, sizeof *r->adj_n);
	r->adj_cap = calloc(n1, sizeof *r->adj_cap);
	r->deg = calloc(n1, sizeof *r->deg);
	r->phead = malloc(sizeof *r->phead * n1);
	r->q = malloc(sizeof *r->q * n1);
	r->inq = calloc(n1, 1);
	if (!r->alive || !r->cost || !r->nal || !r->gone || !r->adj || !r->adj_n || !r->adj_cap || !r->deg ||
	    !r->phead || !r->q || !r->inq)
		return NOMEM();
	memset(r->alive, 1, ns);
	for (int i = 0; i < p->nnodes; i++) {
		r->nal[i] = red_k(r, i);
		r->phead[i] = -1;
		for (int s = p->strat_off[i]; s < p->strat_off[i + 1]; s++)
			r->cost[s] = red_sat(r, p->cost[s]);
	}
	int rc = init_pieces(r);
	for (int k = 0; k < p->nedges && rc == 0; k++) {
		int u = p->edge_u[k], v = p->edge_v[k];
		const int64_t *mat = p->edge_cost + p->edge_off[k];
		if (u != v) {
			rc = red_edge_add(r, u, v, mat, false);
			continue;
		}
		/* A self-loop only ever sees its diagonal: node cost. */
		for (int s = 0; s < red_k(r, u); s++) {
			int64_t *c = &r->cost[p->strat_off[u] + s];
			*c = red_sat(r, (shard_i128)*c + (mat[(int64_t)s * red_k(r, u) + s] >= inf
								  ? inf
								  : mat[(int64_t)s * red_k(r, u) + s]));
		}
	}
	for (int i = 0; i < p->nnodes; i++)
		red_push(r, i);
	return rc;
}

void red_free(struct red *r)
{
	for (int k = 0; k < r->ne; k++)
		free(r->e[k].own);
	for (int i = 0; r->adj && i < r->n; i++)
		free(r->adj[i]);
	for (int k = 0; k < r->nrec; k++)
		free(r->rec[k].resp);
	free(r->e);
	free(r->hash);
	free(r->adj);
	free(r->adj_n);
	free(r->adj_cap);
	free(r->deg);
	free(r->alive);
	free(r->cost);
	free(r->nal);
	free(r->gone);
	free(r->pc);
	free(r->phead);
	free(r->pool);
	free(r->fixed);
	free(r->next_bind);
	free(r->prev_bind);
	free(r->q);
	free(r->inq);
	free(r->rec);
	memset(r, 0, sizeof *r);
}

void red_push(struct red *r, int i)
{
	if (r->inq[i] || r->gone[i])
		return;
	r->inq[i] = 1;
	r->q[(r->qhead + r->qcount) % r->n] = i;
	r->qcount++;
}

int red_pop(struct red *r)
{
	int i = r->q[r->qhead];
	r->qhead = (r->qhead + 1) % r->n;
	r->qcount--;
	r->inq[i] = 0;
	return i;
}

int red_edges(struct red *r, int i, int **ids)
{
	int n = 0;
	for (int k = 0; k < r->adj_n[i]; k++)
		if (!r->e[r->adj[i][k]].dead)
			r->adj[i][n++] = r->adj[i][k];
	r->adj_n[i] = n;
	*ids = r->adj[i];
	return n;
}

void red_push_neighbours(struct red *r, int i)
{
	int *ids, n = red_edges(r, i, &ids);
	for (int k = 0; k < n; k++)
		red_push(r, red_other(&r->e[ids[k]], i));
}

void red_edge_kill(struct red *r, int k)
{
	struct wedge *e = &r->e[k];
	e->dead = true;
	r->deg[e->u]--;
	r->deg[e->v]--;
	free(e->own);
	e->own = NULL;
	e->mat = NULL;
}

static int adj_append(struct red *r, int i, int k)
{
	if (r->adj_n[i] == r->adj_cap[i]) {
		int cap = r->adj_cap[i] ? 2 * r->adj_cap[i] : 4;
		int *a = realloc(r->adj[i], sizeof *a * (size_t)cap);
		if (!a)
			return NOMEM();
		r->adj[i] = a;
		r->adj_cap[i] = cap;
	}
	r->adj[i][r->adj_n[i]++] = k;
	r->deg[i]++;
	return 0;
}

static uint64_t pair_hash(int u, int v)
{
	uint64_t a = (uint64_t)(u < v ? u : v), b = (uint64_t)(u < v ? v : u);
	uint64_t z = (a << 32 | b) + 0x9e3779b97f4a7c15ull; /* splitmix64's finalizer */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void hash_put(struct red *r, int k)
{
	uint64_t h = pair_hash(r->e[k].u, r->e[k].v) & (uint64_t)(r->hcap - 1);
	while (r->hash[h] >= 0)
		h = (h + 1) & (uint64_t)(r->hcap - 1);
	r->hash[h] = k;
	r->hused++;
}

/* Room for one more entry: doubles (keeping live edges only) past half. */
static int hash_reserve(struct red *r)
{
	if (2 * (r->hused + 1) <= r->hcap)
		return 0;
	int cap = r->hcap ? r->hcap : 1024;
	while (2 * (r->ne + 1) > cap)
		cap *= 2;
	free(r->hash);
	if (!(r->hash = malloc(sizeof *r->hash * (size_t)cap)))
		return NOMEM();
	memset(r->hash, 0xff, sizeof *r->hash * (size_t)cap);
	r->hcap = cap;
	r->hused = 0;
	for (int k = 0; k < r->ne; k++)
		if (!r->e[k].dead)
			hash_put(r, k);
	return 0;
}

/* The live edge between u and v, or -1. */
static int find_edge(const struct red *r, int u, int v)
{
	if (!r->hcap)
		return -1;
	uint64_t h = pair_hash(u, v) & (uint64_t)(r->hcap - 1);
	for (; r->hash[h] >= 0; h = (h + 1) & (uint64_t)(r->hcap - 1)) {
		const struct wedge *e = &r->e[r->hash[h]];
		if (!e->dead && ((e->u == u && e->v == v) || (e->u == v && e->v == u)))
			return r->hash[h];
	}
	return -1;
}

int red_edge_add(struct red *r, int u, int v, const int64_t *mat, bool owned)
{
	int ku = red_k(r, u), kv = red_k(r, v);
	int k = find_edge(r, u, v);
	if (k >= 0) {
		struct wedge *e = &r->e[k];
		if (!e->own) {
			size_t bytes = sizeof *e->own * (size_t)ku * (size_t)kv;
			if (!(e->own = malloc(bytes + 1)))
				return NOMEM();
			memcpy(e->own, e->mat, bytes);
			e->mat = e->own;
		}
		for (int a = 0; a < ku; a++)
			for (int b = 0; b < kv; b++) {
				int64_t x = mat[(int64_t)a * kv + b];
				int64_t *y = e->u == u ? &e->own[(int64_t)a * kv + b] : &e->own[(int64_t)b * ku + a];
				*y = red_sat(r, (shard_i128)(*y >= r->inf ? r->inf : *y) + (x >= r->inf ? r->inf : x));
			}
		if (owned)
			free((void *)mat);
		return 0;
	}
	if (r->ne == r->ecap) {
		int cap = r->ecap ? 2 * r->ecap : 1024;
		struct wedge *ne = realloc(r->e, sizeof *ne * (size_t)cap);
		if (!ne)
			return NOMEM();
		r->e = ne;
		r->ecap = cap;
	}
	int rc = hash_reserve(r);
	if (rc < 0)
		return rc;
	r->e[r->ne] = (struct wedge){ u, v, mat, owned ? (int64_t *)mat : NULL, false };
	hash_put(r, r->ne);
	rc = adj_append(r, u, r->ne);
	if (rc == 0)
		rc = adj_append(r, v, r->ne);
	r->ne++;
	return rc;
}

int red_piece_add(struct red *r, int i, int a, int b, int64_t *use)
{
	int64_t k = red_k(r, i);
	if (r->npc == r->pccap) {
		int cap = r->pccap ? 2 * r->pccap : 1024;
		struct wpiece *np = realloc(r->pc, sizeof *np * (size_t)cap);
		if (!np)
			return NOMEM();
		r->pc = np;
		r->pccap = cap;
	}
	if (r->pool_n + k > r->pool_cap) {
		int64_t cap = r->pool_cap ? 2 * r->pool_cap : 1 << 16;
		while (cap < r->pool_n + k)
			cap *= 2;
		int64_t *np = realloc(r->pool, sizeof *np * (size_t)cap);
		if (!np)
			return NOMEM();
		r->pool = np;
		r->pool_cap = cap;
	}
	r->pc[r->npc] = (struct wpiece){ a, b, r->pool_n, r->phead[i] };
	r->phead[i] = r->npc++;
	*use = r->pool_n;
	r->pool_n += k;
	return 0;
}

void red_kill(struct red *r, int i, int s)
{
	r->alive[r->p->strat_off[i] + s] = 0;
	r->nal[i]--;
	if (r->nal[i] == 0)
		r->wiped = true;
}

int red_record(struct red *r, struct shard_rec rec)
{
	if (r->nrec == r->reccap) {
		int cap = r->reccap ? 2 * r->reccap : 1024;
		struct shard_rec *nr = realloc(r->rec, sizeof *nr * (size_t)cap);
		if (!nr) {
			free(rec.resp);
			return NOMEM();
		}
		r->rec = nr;
		r->reccap = cap;
	}
	r->rec[r->nrec++] = rec;
	r->gone[rec.j] = 1;
	return 0;
}

/* ---- compaction ------------------------------------------------------------ */

/* Growable piece and usage arrays of the model under construction. */
struct pieces_out {
	int n, cap;
	int64_t nuse, use_cap;
};

static int out_piece(struct shard_model *m, struct pieces_out *o, int a, int b, const shard_i128 *v, int k)
{
	if (o->n == o->cap) {
		int cap = o->cap ? 2 * o->cap : 1024;
		struct shard_piece *np = realloc(m->piece, sizeof *np * (size_t)cap);
		if (!np)
			return NOMEM();
		m->piece = np;
		o->cap = cap;
	}
	if (o->nuse + k > o->use_cap) {
		int64_t cap = o->use_cap ? 2 * o->use_cap : 1 << 16;
		while (cap < o->nuse + k)
			cap *= 2;
		int64_t *nu = realloc(m->use, sizeof *nu * (size_t)cap);
		if (!nu)
			return NOMEM();
		m->use = nu;
		o->use_cap = cap;
	}
	m->piece[o->n++] = (struct shard_piece){ a, b, o->nuse };
	for (int s = 0; s < k; s++)
		m->use[o->nuse++] = v[s] > INT64_MAX ? INT64_MAX : (int64_t)v[s];
	return 0;
}

static bool same_vec(const shard_i128 *x, const int64_t *y, int k)
{
	for (int s = 0; s < k; s++)
		if (x[s] != y[s])
			return false;
	return true;
}

/* Node i's pieces as disjoint ranges in segment order, usages summed where
 * they overlap, equal neighbours merged, all-zero ranges dropped: a move
 * then changes each range by one amount. A sweep over the sorted
 * endpoints keeps the running sum (ev: scratch of 2 x pieces entries). */
static int normalize(struct red *r, struct shard_model *m, struct pieces_out *o, int i, int64_t *ev, shard_i128 *sum)
{
	int np = 0, k = r->nal[i], rc = 0;
	for (int c = r->phead[i]; c >= 0; c = r->pc[c].next) {
		ev[np++] = (int64_t)r->pc[c].a << 32 | (uint32_t)(2 * c + 1); /* starts after ends */
		ev[np++] = (int64_t)r->pc[c].b << 32 | (uint32_t)(2 * c);
	}
	qsort(ev, (size_t)np, sizeof *ev, shard_cmp_i64);
	memset(sum, 0, sizeof *sum * (size_t)k);
	int first = o->n;
	for (int x = 0; x < np && rc == 0;) {
		int at = (int)(ev[x] >> 32);
		for (; x < np && (int)(ev[x] >> 32) == at; x++) {
			int c = (int)((uint32_t)ev[x] >> 1), sign = (ev[x] & 1) ? 1 : -1, t = 0;
			for (int s = 0; s < red_k(r, i); s++)
				if (red_alive(r, i, s))
					sum[t++] += sign * r->pool[r->pc[c].use + s];
		}
		if (x == np)
			break;
		int to = (int)(ev[x] >> 32);
		bool zero = true;
		for (int s = 0; s < k && zero; s++)
			zero = sum[s] == 0;
		if (zero)
			continue;
		struct shard_piece *last = o->n > first ? &m->piece[o->n - 1] : NULL;
		if (last && last->b == at && same_vec(sum, m->use + last->use, k))
			last->b = to;
		else
			rc = out_piece(m, o, at, to, sum, k);
	}
	return rc;
}

static int compact_nodes(struct red *r, struct shard_model *m, int *map, int *sidx)
{
	const struct shard_problem *p = r->p;
	int n = 0, ns = 0, maxp = 0, maxk = 1;
	for (int i = 0; i < r->n; i++) {
		map[i] = -1;
		if (r->gone[i])
			continue;
		map[i] = n++;
		ns += r->nal[i];
		int np = 0;
		for (int c = r->phead[i]; c >= 0; c = r->pc[c].next)
			np++;
		maxp = np > maxp ? np : maxp;
		maxk = r->nal[i] > maxk ? r->nal[i] : maxk;
	}
	m->n = n;
	m->node = malloc(sizeof *m->node * ((size_t)n + 1));
	m->off = malloc(sizeof *m->off * ((size_t)n + 1));
	m->cost = malloc(sizeof *m->cost * ((size_t)ns + 1));
	m->orig = malloc(sizeof *m->orig * ((size_t)ns + 1));
	m->poff = malloc(sizeof *m->poff * ((size_t)n + 1));
	int64_t *ev = malloc(sizeof *ev * (2 * (size_t)maxp + 1));
	shard_i128 *sum = malloc(sizeof *sum * (size_t)maxk);
	int rc = m->node && m->off && m->cost && m->orig && m->poff && ev && sum ? 0 : NOMEM();
	struct pieces_out o = { 0 };
	int at = 0;
	if (rc == 0)
		m->off[0] = m->poff[0] = 0;
	for (int i = 0; i < r->n && rc == 0; i++) {
		if (map[i] < 0)
			continue;
		int mi = map[i];
		m->node[mi] = i;
		for (int s = 0; s < red_k(r, i); s++) {
			sidx[p->strat_off[i] + s] = -1;
			if (!red_alive(r, i, s))
				continue;
			sidx[p->strat_off[i] + s] = at - m->off[mi];
			m->cost[at] = r->cost[p->strat_off[i] + s];
			m->orig[at++] = s;
		}
		m->off[mi + 1] = at;
		rc = normalize(r, m, &o, i, ev, sum);
		m->poff[mi + 1] = o.n;
	}
	free(ev);
	free(sum);
	if (rc == 0 && !m->piece && !(m->piece = malloc(sizeof *m->piece)))
		rc = NOMEM();
	if (rc == 0 && !m->use && !(m->use = malloc(sizeof *m->use)))
		rc = NOMEM();
	return rc;
}

static int compact_edges(struct red *r, struct shard_model *m, const int *map, const int *sidx)
{
	const struct shard_problem *p = r->p;
	int ne = 0;
	int64_t nent = 0;
	for (int k = 0; k < r->ne; k++)
		if (!r->e[k].dead) {
			ne++;
			nent += (int64_t)r->nal[r->e[k].u] * r->nal[r->e[k].v];
		}
	m->m = ne;
	m->eu = malloc(sizeof *m->eu * ((size_t)ne + 1));
	m->ev = malloc(sizeof *m->ev * ((size_t)ne + 1));
	m->eoff = malloc(sizeof *m->eoff * ((size_t)ne + 1));
	m->ecost = malloc(sizeof *m->ecost * ((size_t)nent + 1));
	if (!m->eu || !m->ev || !m->eoff || !m->ecost)
		return NOMEM();
	int at = 0;
	int64_t x = 0;
	m->eoff[0] = 0;
	for (int k = 0; k < r->ne; k++) {
		const struct wedge *e = &r->e[k];
		if (e->dead)
			continue;
		m->eu[at] = map[e->u];
		m->ev[at] = map[e->v];
		for (int a = 0; a < red_k(r, e->u); a++) {
			if (sidx[p->strat_off[e->u] + a] < 0)
				continue;
			for (int b = 0; b < red_k(r, e->v); b++)
				if (sidx[p->strat_off[e->v] + b] >= 0)
					m->ecost[x++] = red_ent(r, e, e->u, a, b);
		}
		m->eoff[++at] = x;
	}
	return 0;
}

int red_compact(struct red *r, struct shard_model *m)
{
	m->p = r->p;
	m->inf = r->inf;
	m->limit = r->p->usage_limit;
	m->nseg = r->nseg;
	m->offset = r->offset;
	int *map = malloc(sizeof *map * ((size_t)r->n + 1));
	int *sidx = malloc(sizeof *sidx * ((size_t)r->p->strat_off[r->n] + 1));
	m->base = malloc(sizeof *m->base * ((size_t)r->nseg + 1));
	int rc = map && sidx && m->base ? 0 : NOMEM();
	if (rc == 0)
		rc = compact_nodes(r, m, map, sidx);
	if (rc == 0)
		rc = compact_edges(r, m, map, sidx);
	shard_i128 run = 0;
	for (int s = 0; s < r->nseg && rc == 0; s++)
		m->base[s] = run += r->fixed[s];
	free(map);
	free(sidx);
	/* The records move over. */
	m->rec = r->rec;
	m->nrec = r->nrec;
	r->rec = NULL;
	r->nrec = r->reccap = 0;
	return rc;
}

void shard_model_free(struct shard_model *m)
{
	free(m->node);
	free(m->off);
	free(m->cost);
	free(m->orig);
	free(m->poff);
	free(m->piece);
	free(m->use);
	free(m->eu);
	free(m->ev);
	free(m->eoff);
	free(m->ecost);
	free(m->base);
	for (int k = 0; k < m->nrec; k++)
		free(m->rec[k].resp);
	free(m->rec);
	memset(m, 0, sizeof *m);
}

void shard_model_expand(const struct shard_model *m, const int *mchoice, int *choice)
{
	const struct shard_problem *p = m->p;
	for (int i = 0; i < m->n; i++)
		choice[m->node[i]] = m->orig[m->off[i] + mchoice[i]];
	for (int k = m->nrec - 1; k >= 0; k--) {
		const struct shard_rec *r = &m->rec[k];
		switch (r->kind) {
		case SHARD_REC_FIX:
			choice[r->j] = r->s;
			break;
		case SHARD_REC_LEAF:
			choice[r->j] = r->resp[choice[r->i]];
			break;
		case SHARD_REC_PAIR:
			choice[r->j] = r->resp[(int64_t)choice[r->i] * shard_problem_nstrat(p, r->l) + choice[r->l]];
			break;
		case SHARD_REC_COUNT:
			break;
		}
	}
}

bool shard_model_restrict(const struct shard_model *m, const int *choice, int *mchoice)
{
	for (int i = 0; i < m->n; i++) {
		int want = choice[m->node[i]], got = -1;
		for (int s = m->off[i]; s < m->off[i + 1] && got < 0; s++)
			if (m->orig[s] == want)
				got = s - m->off[i];
		if (got < 0)
			return false;
		mchoice[i] = got;
	}
	return true;
}

shard_i128 shard_model_cost(const struct shard_model *m, const int *mchoice)
{
	shard_i128 c = m->offset;
	for (int i = 0; i < m->n; i++)
		c += m->cost[m->off[i] + mchoice[i]];
	for (int k = 0; k < m->m; k++)
		c += m->ecost[m->eoff[k] + (int64_t)mchoice[m->eu[k]] * shard_model_nstrat(m, m->ev[k]) +
			      mchoice[m->ev[k]]];
	return c;
}

shard_i128 shard_model_peak_slack(const struct shard_model *m, const int *mchoice)
{
	shard_i128 *d = calloc((size_t)m->nseg + 1, sizeof *d), worst = 0, run = 0;
	if (!d)
		return 0;
	for (int i = 0; i < m->n; i++)
		for (int c = m->poff[i]; c < m->poff[i + 1]; c++) {
			int64_t u = m->use[m->piece[c].use + mchoice[i]];
			d[m->piece[c].a] += u;
			d[m->piece[c].b] -= u;
		}
	for (int s = 0; s < m->nseg; s++) {
		run += d[s];
		shard_i128 x = m->base[s] + run - m->limit;
		if (s == 0 || x > worst)
			worst = x;
	}
	free(d);
	return worst;
}
