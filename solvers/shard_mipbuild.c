/*
 * shard_mipbuild.c: builds the MIP of a window of a reduced model (the
 * formulation is described in shard_mip.c): x columns per strategy priced
 * with the fixed or following outside neighbours, pair columns with their
 * row and column sums per inside edge, and the memory runs with the rows
 * that go in first. Plain arrays of triplets; GLPK sees them in
 * shard_mip.c.
 */
#include <errno.h>
#include <glpk.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_mipbuild.h"

#define NOMEM() shard_errorf(-ENOMEM, "mip: out of memory")

static int trip_add(struct trip *t, int row, int col, double v)
{
	if (t->n + 1 >= t->cap) {
		int cap = t->cap ? 2 * t->cap : 4096;
		int *ia = realloc(t->ia, sizeof *ia * (size_t)cap);
		if (ia)
			t->ia = ia;
		int *ja = realloc(t->ja, sizeof *ja * (size_t)cap);
		if (ja)
			t->ja = ja;
		double *ar = realloc(t->ar, sizeof *ar * (size_t)cap);
		if (ar)
			t->ar = ar;
		if (!ia || !ja || !ar)
			return NOMEM();
		t->cap = cap;
	}
	t->n++;
	t->ia[t->n] = row;
	t->ja[t->n] = col;
	t->ar[t->n] = v;
	return 0;
}

static void trip_free(struct trip *t)
{
	free(t->ia);
	free(t->ja);
	free(t->ar);
}

static int grow(void **p, int *cap, int need, size_t size)
{
	if (need < *cap)
		return 0;
	int c = *cap ? *cap : 4096;
	while (c <= need)
		c *= 2;
	void *np = realloc(*p, size * (size_t)c);
	if (!np)
		return NOMEM();
	*p = np;
	*cap = c;
	return 0;
}

static int new_col(struct build *b, double obj, double warm)
{
	int cap = b->cols_cap;
	if (grow((void **)&b->obj, &cap, b->ncols + 1, sizeof *b->obj) < 0)
		return -1;
	cap = b->cols_cap;
	if (grow((void **)&b->warm, &cap, b->ncols + 1, sizeof *b->warm) < 0)
		return -1;
	b->cols_cap = cap;
	b->ncols++;
	b->obj[b->ncols] = obj;
	b->warm[b->ncols] = warm;
	return b->ncols;
}

static int new_row(struct build *b, int type, double rhs)
{
	int cap = b->rows_cap;
	if (grow((void **)&b->rtype, &cap, b->nrows + 1, sizeof *b->rtype) < 0)
		return -1;
	cap = b->rows_cap;
	if (grow((void **)&b->rhs, &cap, b->nrows + 1, sizeof *b->rhs) < 0)
		return -1;
	b->rows_cap = cap;
	b->nrows++;
	b->rtype[b->nrows] = type;
	b->rhs[b->nrows] = rhs;
	return b->nrows;
}

/* Outside node o's best response to each strategy q of window node i,
 * its other neighbours fixed, among the strategies that use no more
 * memory than o's current one in every piece (so the window's memory rows
 * stay valid); adds the cost to local[] and records the responses. */
static int respond(struct build *b, int i, const struct shard_adj *a, shard_i128 *local, shard_i128 *lo)
{
	const struct mstate *st = b->st;
	const struct shard_model *m = b->m;
	int o = a->other, ki = shard_model_nstrat(m, i), ko = shard_model_nstrat(m, o), co = st->choice[o];
	const int64_t *mat = m->ecost + m->eoff[a->edge];
	int cap = b->rsp_cap;
	if (grow((void **)&b->rsp, &cap, b->nrsp + 1, sizeof *b->rsp) < 0)
		return NOMEM();
	b->rsp_cap = cap;
	cap = b->rpool_cap;
	if (grow((void **)&b->rpool, &cap, b->rpool_n + ki, sizeof *b->rpool) < 0)
		return NOMEM();
	b->rpool_cap = cap;
	b->rsp[b->nrsp++] = (struct responder){ o, i, b->rpool_n };
	int *resp = b->rpool + b->rpool_n;
	b->rpool_n += ki;
	ms_local(st, o, i, NULL, lo);
	for (int q = 0; q < ki; q++) {
		int best = co;
		shard_i128 bv = lo[co] + mat[q * a->row + co * a->col];
		for (int s = 0; s < ko; s++) {
			shard_i128 v = lo[s] + mat[q * a->row + s * a->col];
			if (v >= bv)
				continue;
			bool fits = true;
			for (int x = m->poff[o]; x < m->poff[o + 1] && fits; x++)
				fits = ms_use(m, x, s) <= ms_use(m, x, co);
			if (fits)
				best = s, bv = v;
		}
		resp[q] = best;
		local[q] += bv;
	}
	return 0;
}

/* x columns of W's nodes, priced with the edges to the fixed nodes (or,
 * with soft boundaries, to the best responses of outside nodes that
 * touch the window once); a strategy forbidden against them gets no
 * column. */
static int add_nodes(struct build *b)
{
	const struct mstate *st = b->st;
	const struct shard_model *m = b->m;
	shard_i128 *local = malloc(sizeof *local * ((size_t)st->maxk + 1));
	shard_i128 *lo = malloc(sizeof *lo * ((size_t)st->maxk + 1));
	int rc = local && lo ? 0 : NOMEM();
	for (int w = 0; w < b->nw && rc == 0; w++) {
		int i = b->nodes[w], k = shard_model_nstrat(m, i), row = new_row(b, GLP_FX, 1.0);
		if (row < 0)
			rc = NOMEM();
		for (int q = 0; q < k; q++)
			local[q] = m->cost[m->off[i] + q];
		for (int j = st->adj_off[i]; j < st->adj_off[i + 1] && rc == 0; j++) {
			const struct shard_adj *a = &st->adj[j];
			if (!b->outside[a->other])
				continue;
			if (b->nin && b->nin[a->other] == 1 && shard_model_nstrat(m, a->other) > 1) {
				rc = respond(b, i, a, local, lo);
				continue;
			}
			const int64_t *e = m->ecost + m->eoff[a->edge] + st->choice[a->other] * a->col;
			for (int q = 0; q < k; q++)
				local[q] += e[q * a->row];
		}
		for (int q = 0; q < k && rc == 0; q++) {
			b->xcol[m->off[i] + q] = 0;
			if (local[q] >= m->inf)
				continue;
			int c = new_col(b, (double)local[q], q == st->choice[i]);
			rc = c < 0 ? NOMEM() : trip_add(&b->t, row, c, 1.0);
			b->xcol[m->off[i] + q] = c;
		}
		if (rc == 0 && b->xcol[m->off[i] + st->choice[i]] == 0)
			b->warm_ok = false;
	}
	free(local);
	free(lo);
	return rc;
}

/* Pair columns and their row and column sums for edge k inside W. */
static int add_edge(struct build *b, int k, int *ra, int *rb)
{
	const struct shard_model *m = b->m;
	int u = m->eu[k], v = m->ev[k], ku = shard_model_nstrat(m, u), kv = shard_model_nstrat(m, v), rc = 0;
	const int *xu = b->xcol + m->off[u], *xv = b->xcol + m->off[v];
	const int64_t *mat = m->ecost + m->eoff[k];
	int cu = b->st->choice[u], cv = b->st->choice[v];
	for (int a = 0; a < ku && rc == 0; a++)
		if ((ra[a] = xu[a] ? new_row(b, GLP_FX, 0.0) : 0) < 0 ||
		    (xu[a] && trip_add(&b->t, ra[a], xu[a], -1.0) < 0))
			rc = NOMEM();
	for (int c = 0; c < kv && rc == 0; c++)
		if ((rb[c] = xv[c] ? new_row(b, GLP_FX, 0.0) : 0) < 0 ||
		    (xv[c] && trip_add(&b->t, rb[c], xv[c], -1.0) < 0))
			rc = NOMEM();
	if (mat[(int64_t)cu * kv + cv] >= m->inf)
		b->warm_ok = false;
	for (int a = 0; a < ku && rc == 0; a++) {
		if (!xu[a])
			continue;
		for (int c = 0; c < kv && rc == 0; c++) {
			int64_t x = mat[(int64_t)a * kv + c];
			if (!xv[c] || x >= m->inf)
				continue;
			int y = new_col(b, (double)x, a == cu && c == cv);
			if (y < 0 || trip_add(&b->t, ra[a], y, 1.0) < 0 || trip_add(&b->t, rb[c], y, 1.0) < 0)
				rc = NOMEM();
		}
	}
	return rc;
}

static int add_edges(struct build *b)
{
	const struct mstate *st = b->st;
	int *ra = malloc(sizeof *ra * ((size_t)st->maxk + 1)), *rb = malloc(sizeof *rb * ((size_t)st->maxk + 1)),
	    rc = 0;
	if (!ra || !rb)
		rc = NOMEM();
	for (int w = 0; w < b->nw && rc == 0; w++) {
		int i = b->nodes[w];
		for (int j = st->adj_off[i]; j < st->adj_off[i + 1] && rc == 0; j++) {
			const struct shard_adj *a = &st->adj[j];
			/* each inside edge once, from its first end */
			if (b->outside[a->other] || b->m->eu[a->edge] != i)
				continue;
			rc = add_edge(b, a->edge, ra, rb);
		}
	}
	free(ra);
	free(rb);
	return rc;
}

/* Columns an edge set would need, to refuse windows that are too big. */
static int64_t count_cols(const struct build *b)
{
	const struct mstate *st = b->st;
	const struct shard_model *m = b->m;
	int64_t n = 0;
	for (int w = 0; w < b->nw; w++) {
		int i = b->nodes[w];
		n += shard_model_nstrat(m, i);
		for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++)
			if (!b->outside[st->adj[j].other] && m->eu[st->adj[j].edge] == i)
				n += m->eoff[st->adj[j].edge + 1] - m->eoff[st->adj[j].edge];
	}
	return n;
}

/* Piece x's least and largest usage over strategies with a column. */
static void piece_range(const struct build *b, int i, int x, int64_t *lo, int64_t *hi)
{
	const struct shard_model *m = b->m;
	bool any = false;
	*lo = *hi = 0;
	for (int q = 0; q < shard_model_nstrat(m, i); q++) {
		if (!b->xcol[m->off[i] + q])
			continue;
		int64_t u = ms_use(m, x, q);
		if (!any || u < *lo)
			*lo = u;
		if (!any || u > *hi)
			*hi = u;
		any = true;
	}
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, c = *(const int *)y;
	return (a > c) - (a < c);
}

/* A run is redundant when a run around it, whose piece set holds its
 * own (pieces are intervals), has no larger right-hand side; equal sets
 * with equal sides keep the first. Scans are capped: a longer one keeps
 * the row, which is only ever safe. */
static bool redundant(const struct run *r, int nr, int x)
{
	const struct run *me = &r[x];
	if (me->slack >= 0)
		return true; /* cannot bind */
	for (int y = x + 1, steps = 0; y < nr && r[y].b <= me->minend && steps < 4096; y++, steps++)
		if (r[y].rhs < me->rhs || (r[y].rhs == me->rhs && r[y].ncover > me->ncover))
			return true;
	for (int y = x - 1, steps = 0; y >= 0 && r[y].a >= me->maxstart && steps < 4096; y--, steps++)
		if (r[y].rhs < me->rhs || (r[y].rhs == me->rhs && r[y].ncover >= me->ncover))
			return true;
	return false;
}

/* Runs between W's piece endpoints with their covering pieces (sweep). */
static int make_runs(struct build *b, const int *pn, const int *px, int np, struct run **runs, int *nruns, int **cov)
{
	const struct shard_model *m = b->m;
	int *bp = malloc(sizeof *bp * (2 * (size_t)np + 1)), nb = 0;
	int *act = malloc(sizeof *act * ((size_t)np + 1)), na = 0;
	*cov = NULL;
	*runs = NULL;
	if (!bp || !act) {
		free(bp);
		free(act);
		return NOMEM();
	}
	for (int z = 0; z < np; z++) {
		bp[nb++] = m->piece[px[z]].a;
		bp[nb++] = m->piece[px[z]].b;
	}
	qsort(bp, (size_t)nb, sizeof *bp, cmp_int);
	int u = 0;
	for (int z = 0; z < nb; z++)
		if (u == 0 || bp[u - 1] != bp[z])
			bp[u++] = bp[z];
	int nr = u - 1, ncov = 0, cap = 0, rc = 0;
	*runs = malloc(sizeof **runs * ((size_t)nr + 1));
	rc = *runs ? 0 : NOMEM();
	for (int r = 0; r < nr && rc == 0; r++) {
		int lo = bp[r], hi = bp[r + 1];
		na = 0; /* rebuilt per run: windows are small */
		for (int z = 0; z < np; z++)
			if (m->piece[px[z]].a <= lo && m->piece[px[z]].b >= hi)
				act[na++] = z;
		if ((rc = grow((void **)cov, &cap, ncov + na, sizeof **cov)) < 0)
			break;
		struct run *run = &(*runs)[r];
		*run = (struct run){ lo, hi, ncov, na, hi, lo, 0, 0, 0 };
		shard_i128 cur = 0, lhs = 0;
		for (int y = 0; y < na; y++) {
			int z = act[y], x = px[z], i = pn[z];
			int64_t plo, phi;
			(*cov)[ncov++] = z;
			piece_range(b, i, x, &plo, &phi);
			cur += ms_use(m, x, b->st->choice[i]);
			lhs += phi;
			if (m->piece[x].b < run->minend || y == 0)
				run->minend = y == 0 ? m->piece[x].b
						     : (m->piece[x].b < run->minend ? m->piece[x].b : run->minend);
			if (m->piece[x].a > run->maxstart || y == 0)
				run->maxstart = y == 0 ? m->piece[x].a
						       : (m->piece[x].a > run->maxstart ? m->piece[x].a
											: run->maxstart);
		}
		run->rhs = (shard_i128)m->limit - (shard_tree_max(&b->st->tree, lo, hi) - cur);
		run->slack = run->rhs - lhs;
		run->cur = cur;
	}
	*nruns = nr < 0 ? 0 : nr;
	free(bp);
	free(act);
	return rc;
}

/* Run r's row with coefficients less each piece's least usage (one
 * strategy per node is taken): smaller numbers, more zeros. Fills
 * ival/dval (1-based) and returns the length; *rhs gets the bound. */
int mip_run_row(struct build *b, int r, double *rhs)
{
	const struct shard_model *m = b->m;
	const struct run *run = &b->runs[r];
	shard_i128 bound = run->rhs;
	int len = 0;
	for (int y = 0; y < run->ncover; y++) {
		int z = b->cov[run->cover + y], i = b->pn[z], x = b->px[z];
		int64_t plo, phi;
		piece_range(b, i, x, &plo, &phi);
		bound -= plo;
		for (int q = 0; q < shard_model_nstrat(m, i); q++) {
			int c = b->xcol[m->off[i] + q];
			if (c && ms_use(m, x, q) != plo) {
				len++;
				b->ival[len] = c;
				b->dval[len] = (double)(ms_use(m, x, q) - plo);
			}
		}
	}
	*rhs = (double)bound;
	return len;
}

/* Memory runs of W; rows go in for the runs that can bind and are tight
 * at the incumbent (all that can bind, unless lazy): the others join only
 * when a solution breaks them (shard_mip_window). */
static int add_memory(struct build *b, bool lazy)
{
	const struct shard_model *m = b->m;
	int np = 0, rc = 0, width = 0;
	for (int w = 0; w < b->nw; w++) {
		int i = b->nodes[w];
		np += m->poff[i + 1] - m->poff[i];
		width += shard_model_nstrat(m, i);
	}
	if (np == 0)
		return 0;
	b->pn = malloc(sizeof *b->pn * (size_t)np);
	b->pn_w = malloc(sizeof *b->pn_w * (size_t)np);
	b->px = malloc(sizeof *b->px * (size_t)np);
	b->ival = malloc(sizeof *b->ival * ((size_t)width + 1));
	b->dval = malloc(sizeof *b->dval * ((size_t)width + 1));
	if (!b->pn || !b->pn_w || !b->px || !b->ival || !b->dval)
		return NOMEM();
	for (int w = 0; w < b->nw; w++)
		for (int x = m->poff[b->nodes[w]]; x < m->poff[b->nodes[w] + 1]; x++) {
			b->pn[b->np] = b->nodes[w];
			b->pn_w[b->np] = w;
			b->px[b->np++] = x;
		}
	if ((rc = make_runs(b, b->pn, b->px, b->np, &b->runs, &b->nr, &b->cov)) < 0)
		return rc;
	if (!(b->rstate = calloc((size_t)b->nr + 1, 1)))
		return NOMEM();
	shard_i128 tight = m->limit / 100;
	for (int r = 0; r < b->nr && rc == 0; r++) {
		if (redundant(b->runs, b->nr, r)) {
			b->rstate[r] = 2;
			continue;
		}
		if (lazy && b->runs[r].rhs - b->runs[r].cur > tight)
			continue;
		double rhs;
		int len = mip_run_row(b, r, &rhs), row = new_row(b, GLP_UP, rhs);
		if (row < 0)
			return NOMEM();
		b->rstate[r] = 1;
		b->mem_rows++;
		for (int y = 1; y <= len && rc == 0; y++)
			rc = trip_add(&b->t, row, b->ival[y], b->dval[y]);
	}
	return rc;
}

void mip_build_free(struct build *b)
{
	trip_free(&b->t);
	free(b->pos);
	free(b->outside);
	free(b->xcol);
	free(b->obj);
	free(b->warm);
	free(b->rtype);
	free(b->rhs);
	free(b->nin);
	free(b->rsp);
	free(b->rpool);
	free(b->pn);
	free(b->pn_w);
	free(b->px);
	free(b->cov);
	free(b->runs);
	free(b->rstate);
	free(b->ival);
	free(b->dval);
}

int mip_build(struct build *b, const struct mstate *st, const int *nodes, int nw, int max_cols, bool soft, bool lazy,
	      bool *too_big)
{
	const struct shard_model *m = st->m;
	memset(b, 0, sizeof *b);
	b->st = st;
	b->m = m;
	b->nodes = nodes;
	b->nw = nw;
	b->warm_ok = true;
	b->outside = malloc((size_t)m->n + 1);
	b->xcol = calloc((size_t)m->off[m->n] + 1, sizeof *b->xcol);
	if (!b->outside || !b->xcol)
		return NOMEM();
	memset(b->outside, 1, (size_t)m->n + 1);
	for (int w = 0; w < nw; w++)
		b->outside[nodes[w]] = 0;
	*too_big = max_cols > 0 && count_cols(b) > max_cols;
	if (*too_big)
		return 0;
	if (soft) {
		if (!(b->nin = calloc((size_t)m->n + 1, sizeof *b->nin)))
			return NOMEM();
		for (int w = 0; w < nw; w++)
			for (int j = st->adj_off[nodes[w]]; j < st->adj_off[nodes[w] + 1]; j++)
				b->nin[st->adj[j].other]++;
	}
	int rc = add_nodes(b);
	if (rc == 0)
		rc = add_edges(b);
	if (rc == 0)
		rc = add_memory(b, lazy);
	return rc;
}
