/*
 * shard_dedup.c: repeated identical sub-problems solved once (see
 * shard_dedup.h).
 *
 * After the reductions a model may fall apart into connected components,
 * some of them copies of each other (a model's repeated blocks that only
 * meet in nodes the reductions fixed or folded away). A component that carries no memory piece touches no
 * binding time segment: whatever it chooses, memory is unchanged, so it is
 * an independent problem of its own. Two such components whose canonical
 * forms are equal have the same optima; one is solved and its answer copied.
 * Components with pieces stay: the limit couples them through the shared
 * timeline (their live segments differ even when their data is equal).
 *
 * Algorithm: components by breadth-first search; the canonical form of a
 * memory-free component is its nodes in model order (so a node's position
 * is its index among the component's), then per node its strategy count and
 * costs, then its edges sorted by (position of the first end, of the
 * second), each with its matrix (transposed so that the first end is the
 * row). A 64-bit hash of these words sorts the components; equal hashes are
 * compared word by word, so a collision costs time, never correctness. The
 * first component (lowest model node) of each class represents it, which
 * keeps the result deterministic.
 *
 * Example: a model of 3 identical 2-node chains a0-b0, a1-b1, a2-b2 and a
 * node c with a memory piece: q holds a0-b0 and c; a1 and a2 take a0's
 * strategy, b1 and b2 take b0's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_dedup.h"

#define NOMEM() shard_errorf(-ENOMEM, "solve: out of memory")

struct comp {
	int first, n;  /* nodes cnode[first .. first+n-1], in model order */
	int efirst, m; /* edges cedge[efirst .. efirst+m-1], sorted canonically */
	bool pieces;   /* some node carries a memory piece */
	int rep;       /* the component it copies, or itself */
};

struct dd {
	const struct shard_model *m;
	int ncomp;
	struct comp *c;
	int *comp;  /* per node: its component */
	int *pos;   /* per node: its position in its component */
	int *cnode; /* nodes grouped by component */
	int *cedge; /* edges grouped by component */
	int64_t *w; /* scratch: one component's canonical words */
	int64_t wn, wcap;
};

static int words_push(struct dd *d, int64_t x)
{
	if (d->wn == d->wcap) {
		int64_t cap = d->wcap ? 2 * d->wcap : 1024;
		int64_t *w = realloc(d->w, sizeof *w * (size_t)cap);
		if (!w)
			return NOMEM();
		d->w = w;
		d->wcap = cap;
	}
	d->w[d->wn++] = x;
	return 0;
}

/* Edge k's ends as (first, second) by position in the component. */
static void edge_ends(const struct dd *d, int k, int *a, int *b)
{
	int u = d->m->eu[k], v = d->m->ev[k];
	bool swap = d->pos[u] > d->pos[v];
	*a = swap ? v : u;
	*b = swap ? u : v;
}

/* The canonical words of component c into d->w (from 0). */
static int canon(struct dd *d, const struct comp *c)
{
	const struct shard_model *m = d->m;
	int rc = 0;
	d->wn = 0;
	rc |= words_push(d, c->n);
	for (int t = 0; t < c->n && rc == 0; t++) {
		int i = d->cnode[c->first + t];
		rc |= words_push(d, shard_model_nstrat(m, i));
		for (int s = m->off[i]; s < m->off[i + 1] && rc == 0; s++)
			rc |= words_push(d, m->cost[s]);
	}
	rc |= words_push(d, c->m);
	for (int x = 0; x < c->m && rc == 0; x++) {
		int k = d->cedge[c->efirst + x], a, b;
		edge_ends(d, k, &a, &b);
		rc |= words_push(d, d->pos[a]);
		rc |= words_push(d, d->pos[b]);
		int ka = shard_model_nstrat(m, a), kb = shard_model_nstrat(m, b);
		bool tr = a != m->eu[k];
		const int64_t *mat = m->ecost + m->eoff[k];
		for (int sa = 0; sa < ka && rc == 0; sa++)
			for (int sb = 0; sb < kb && rc == 0; sb++)
				rc |= words_push(d, tr ? mat[(int64_t)sb * ka + sa] : mat[(int64_t)sa * kb + sb]);
	}
	return rc < 0 ? NOMEM() : 0;
}

/* A strong enough 64-bit hash of words (each word mixed by the splitmix64
 * finalizer, then combined): equal hashes are checked word by word. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9u;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

static uint64_t hash_words(const int64_t *w, int64_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15u;
	for (int64_t i = 0; i < n; i++)
		h = mix(h ^ mix((uint64_t)w[i] + (uint64_t)i));
	return h;
}

/* Sort keys carry what they compare (no global context: shard_solve may
 * run in several threads at once). */
struct ekey {
	int pa, pb, k; /* positions of the edge's first and second end; the edge */
};

struct ckey {
	uint64_t hash;
	int c; /* the component; components are numbered by their lowest node */
};

static int cmp_ekey(const void *x, const void *y)
{
	const struct ekey *a = x, *b = y;
	if (a->pa != b->pa)
		return a->pa < b->pa ? -1 : 1;
	return (a->pb > b->pb) - (a->pb < b->pb);
}

static int cmp_ckey(const void *x, const void *y)
{
	const struct ckey *a = x, *b = y;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return (a->c > b->c) - (a->c < b->c);
}

/* Components by breadth-first search, numbered by their lowest node. */
static int components(struct dd *d)
{
	const struct shard_model *m = d->m;
	int n = m->n;
	int *deg = calloc((size_t)n + 1, sizeof *deg), *adj = malloc(sizeof *adj * (2 * (size_t)m->m + 1));
	int *q = malloc(sizeof *q * ((size_t)n + 1)), *cnt = NULL;
	int rc = deg && adj && q ? 0 : NOMEM();
	for (int k = 0; k < m->m && rc == 0; k++) {
		deg[m->eu[k] + 1]++;
		deg[m->ev[k] + 1]++;
	}
	for (int i = 0; i < n && rc == 0; i++)
		deg[i + 1] += deg[i];
	for (int k = 0; k < m->m && rc == 0; k++) {
		adj[deg[m->eu[k]]++] = m->ev[k];
		adj[deg[m->ev[k]]++] = m->eu[k];
	}
	for (int i = n; i > 0 && rc == 0; i--) /* back to the starts */
		deg[i] = deg[i - 1];
	if (rc == 0)
		deg[0] = 0;
	for (int i = 0; i < n && rc == 0; i++)
		d->comp[i] = -1;
	for (int s = 0; s < n && rc == 0; s++) {
		if (d->comp[s] >= 0)
			continue;
		int head = 0, tail = 0;
		q[tail++] = s;
		d->comp[s] = d->ncomp;
		while (head < tail) {
			int i = q[head++];
			for (int x = deg[i]; x < deg[i + 1]; x++)
				if (d->comp[adj[x]] < 0) {
					d->comp[adj[x]] = d->ncomp;
					q[tail++] = adj[x];
				}
		}
		d->ncomp++;
	}
	d->c = calloc((size_t)d->ncomp + 1, sizeof *d->c);
	cnt = calloc((size_t)d->ncomp + 1, sizeof *cnt);
	if (rc == 0 && (!d->c || !cnt))
		rc = NOMEM();
	/* nodes grouped in model order, hence sorted within each component */
	for (int i = 0; i < n && rc == 0; i++)
		d->c[d->comp[i]].n++;
	for (int c = 0, at = 0; c < d->ncomp && rc == 0; c++) {
		d->c[c].first = at;
		at += d->c[c].n;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		struct comp *c = &d->c[d->comp[i]];
		d->pos[i] = cnt[d->comp[i]]++;
		d->cnode[c->first + d->pos[i]] = i;
		c->pieces |= m->poff[i + 1] > m->poff[i];
	}
	for (int c = 0; c < d->ncomp && rc == 0; c++)
		cnt[c] = 0;
	for (int k = 0; k < m->m && rc == 0; k++)
		d->c[d->comp[m->eu[k]]].m++;
	for (int c = 0, at = 0; c < d->ncomp && rc == 0; c++) {
		d->c[c].efirst = at;
		at += d->c[c].m;
	}
	for (int k = 0; k < m->m && rc == 0; k++) {
		int c = d->comp[m->eu[k]];
		d->cedge[d->c[c].efirst + cnt[c]++] = k;
	}
	struct ekey *ek = rc == 0 ? malloc(sizeof *ek * ((size_t)m->m + 1)) : NULL;
	if (rc == 0 && !ek)
		rc = NOMEM();
	for (int c = 0; c < d->ncomp && rc == 0; c++) {
		int *e = d->cedge + d->c[c].efirst;
		for (int x = 0; x < d->c[c].m; x++) {
			int a, b;
			edge_ends(d, e[x], &a, &b);
			ek[x] = (struct ekey){ d->pos[a], d->pos[b], e[x] };
		}
		qsort(ek, (size_t)d->c[c].m, sizeof *ek, cmp_ekey);
		for (int x = 0; x < d->c[c].m; x++)
			e[x] = ek[x].k;
	}
	free(ek);
	free(deg);
	free(adj);
	free(q);
	free(cnt);
	return rc;
}

/* Classes: sorted by hash, each memory-free component compared with the
 * representatives found so far in its run of equal hashes. */
static int classes(struct dd *d, struct shard_dedup_stats *st)
{
	int nf = 0;
	struct ckey *order = malloc(sizeof *order * ((size_t)d->ncomp + 1));
	int64_t *rw = NULL, rcap = 0;
	int rc = order ? 0 : NOMEM();
	for (int c = 0; c < d->ncomp; c++)
		d->c[c].rep = c;
	for (int c = 0; c < d->ncomp; c++)
		nf += !d->c[c].pieces;
	st->free = st->distinct = nf;
	if (nf < 2) /* nothing to compare */
		goto out;
	nf = 0;
	st->distinct = 0;
	for (int c = 0; c < d->ncomp && rc == 0; c++) {
		if (d->c[c].pieces)
			continue;
		if ((rc = canon(d, &d->c[c])) == 0)
			order[nf++] = (struct ckey){ hash_words(d->w, d->wn), c };
	}
	if (rc == 0)
		qsort(order, (size_t)nf, sizeof *order, cmp_ckey);
	for (int x = 0; x < nf && rc == 0;) {
		int y = x + 1;
		while (y < nf && order[y].hash == order[x].hash)
			y++;
		/* within the run, every component that is no copy of an earlier
		 * representative becomes one (collisions: more than one) */
		for (int r = x; r < y && rc == 0; r++) {
			struct comp *cr = &d->c[order[r].c];
			if (cr->rep != order[r].c)
				continue;
			st->distinct++;
			if (r + 1 == y || (rc = canon(d, cr)) < 0)
				continue;
			if (d->wn > rcap) {
				int64_t *t = realloc(rw, sizeof *rw * (size_t)d->wn);
				if (!t) {
					rc = NOMEM();
					break;
				}
				rw = t;
				rcap = d->wn;
			}
			int64_t rn = d->wn;
			memcpy(rw, d->w, sizeof *rw * (size_t)rn);
			for (int o = r + 1; o < y && rc == 0; o++) {
				struct comp *co = &d->c[order[o].c];
				if (co->rep != order[o].c || (rc = canon(d, co)) < 0)
					continue;
				if (d->wn == rn && !memcmp(d->w, rw, sizeof *rw * (size_t)rn)) {
					co->rep = order[r].c;
					st->copies++;
					st->nodes += co->n;
				}
			}
		}
		x = y;
	}
out:
	free(order);
	free(rw);
	return rc;
}

/* q: the kept components' nodes (in model order), their pieces and edges. */
static int build(const struct dd *d, struct shard_dedup *out)
{
	const struct shard_model *m = d->m;
	struct shard_model *q = &out->q;
	int n = 0, ne = 0, np = 0;
	int64_t ns = 0, nu = 0, nent = 0;
	for (int i = 0; i < m->n; i++)
		if (d->c[d->comp[i]].rep == d->comp[i]) {
			out->to[i] = n++;
			ns += shard_model_nstrat(m, i);
			for (int x = m->poff[i]; x < m->poff[i + 1]; x++, np++)
				nu += shard_model_nstrat(m, i);
		}
	for (int k = 0; k < m->m; k++)
		if (d->c[d->comp[m->eu[k]]].rep == d->comp[m->eu[k]]) {
			ne++;
			nent += m->eoff[k + 1] - m->eoff[k];
		}
	q->p = m->p;
	q->inf = m->inf;
	q->n = n;
	q->m = ne;
	q->nseg = m->nseg;
	q->limit = m->limit;
	q->offset = m->offset;
	q->node = malloc(sizeof *q->node * ((size_t)n + 1));
	q->off = malloc(sizeof *q->off * ((size_t)n + 1));
	q->cost = malloc(sizeof *q->cost * ((size_t)ns + 1));
	q->orig = malloc(sizeof *q->orig * ((size_t)ns + 1));
	q->poff = malloc(sizeof *q->poff * ((size_t)n + 1));
	q->piece = malloc(sizeof *q->piece * ((size_t)np + 1));
	q->use = malloc(sizeof *q->use * ((size_t)nu + 1));
	q->eu = malloc(sizeof *q->eu * ((size_t)ne + 1));
	q->ev = malloc(sizeof *q->ev * ((size_t)ne + 1));
	q->eoff = malloc(sizeof *q->eoff * ((size_t)ne + 1));
	q->ecost = malloc(sizeof *q->ecost * ((size_t)nent + 1));
	q->base = malloc(sizeof *q->base * ((size_t)m->nseg + 1));
	if (!q->node || !q->off || !q->cost || !q->orig || !q->poff || !q->piece || !q->use || !q->eu || !q->ev ||
	    !q->eoff || !q->ecost || !q->base)
		return NOMEM();
	memcpy(q->base, m->base, sizeof *q->base * (size_t)m->nseg);
	q->off[0] = q->poff[0] = 0;
	int64_t su = 0;
	for (int i = 0, qi = 0; i < m->n; i++) {
		if (d->c[d->comp[i]].rep != d->comp[i])
			continue;
		int k = shard_model_nstrat(m, i), s0 = q->off[qi];
		q->node[qi] = m->node[i];
		memcpy(q->cost + s0, m->cost + m->off[i], sizeof *q->cost * (size_t)k);
		memcpy(q->orig + s0, m->orig + m->off[i], sizeof *q->orig * (size_t)k);
		q->off[qi + 1] = s0 + k;
		int pq = q->poff[qi];
		for (int x = m->poff[i]; x < m->poff[i + 1]; x++, pq++) {
			q->piece[pq] = m->piece[x];
			q->piece[pq].use = su;
			memcpy(q->use + su, m->use + m->piece[x].use, sizeof *q->use * (size_t)k);
			su += k;
		}
		q->poff[qi + 1] = pq;
		qi++;
	}
	q->eoff[0] = 0;
	for (int k = 0, e = 0; k < m->m; k++) {
		if (d->c[d->comp[m->eu[k]]].rep != d->comp[m->eu[k]])
			continue;
		int64_t len = m->eoff[k + 1] - m->eoff[k];
		q->eu[e] = out->to[m->eu[k]];
		q->ev[e] = out->to[m->ev[k]];
		memcpy(q->ecost + q->eoff[e], m->ecost + m->eoff[k], sizeof *q->ecost * (size_t)len);
		q->eoff[e + 1] = q->eoff[e] + len;
		e++;
	}
	/* copies: the node at the same position of the representative */
	for (int i = 0; i < m->n; i++) {
		const struct comp *c = &d->c[d->comp[i]];
		if (c->rep != d->comp[i])
			out->to[i] = out->to[d->cnode[d->c[c->rep].first + d->pos[i]]];
	}
	return 0;
}

int shard_dedup_build(const struct shard_model *m, struct shard_dedup *out, struct shard_dedup_stats *stats)
{
	memset(out, 0, sizeof *out);
	memset(stats, 0, sizeof *stats);
	struct dd d = { .m = m };
	size_t n = (size_t)m->n + 1;
	d.comp = malloc(sizeof *d.comp * n);
	d.pos = malloc(sizeof *d.pos * n);
	d.cnode = malloc(sizeof *d.cnode * n);
	d.cedge = malloc(sizeof *d.cedge * ((size_t)m->m + 1));
	out->to = malloc(sizeof *out->to * n);
	int rc = d.comp && d.pos && d.cnode && d.cedge && out->to ? 0 : NOMEM();
	if (rc == 0)
		rc = components(&d);
	if (rc == 0)
		rc = classes(&d, stats);
	if (rc == 0 && stats->copies > 0)
		rc = build(&d, out);
	stats->components = d.ncomp;
	free(d.c);
	free(d.comp);
	free(d.pos);
	free(d.cnode);
	free(d.cedge);
	free(d.w);
	if (rc < 0) {
		shard_dedup_free(out);
		memset(stats, 0, sizeof *stats);
	}
	return rc;
}

void shard_dedup_expand(const struct shard_model *m, const struct shard_dedup *d, const int *qchoice, int *mchoice)
{
	for (int i = 0; i < m->n; i++)
		mchoice[i] = qchoice[d->to[i]];
}

void shard_dedup_free(struct shard_dedup *d)
{
	shard_model_free(&d->q);
	free(d->to);
	memset(d, 0, sizeof *d);
}
