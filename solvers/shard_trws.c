/*
 * shard_trws.c: sequential tree-reweighted message passing (TRW-S,
 * Kolmogorov, "Convergent tree-reweighted message passing for energy
 * minimization", PAMI 2006) on a reduced model without its memory limit.
 *
 * Why: the Lagrangian phase (shard_lagr.c) needs the priced model
 * without memory solved many times. A pass costs one sweep over the edge
 * matrices, and its labeling weighs every edge at once through the
 * messages, where single-node moves see one neighbourhood; a descent
 * then polishes it. TRW-S can stall at a fixed point that is not the
 * LP optimum on loopy graphs (it does on one contest instance's model
 * without memory), so its labeling is a start, not an answer.
 *
 * Nodes are taken in index order (program order). A forward pass visits
 * them first to last: node i's reparametrized cost is
 *   hat_i(x) = unary_i(x) + sum over its edges of the message into i,
 * and for each edge to a later node j the message into j becomes
 *   m_ij(y) = min_x gamma_i hat_i(x) - m_ji(x) + theta_ij(x, y),
 * normalized to minimum 0, gamma_i = 1 / max(earlier, later neighbours).
 * The backward pass does the same last to first towards earlier nodes.
 * The forward pass also labels: node i takes the x minimizing unary_i(x)
 * plus its edges to earlier nodes at their labels plus the messages from
 * later ones (Kolmogorov's sequential rounding).
 *
 * Deterministic: fixed order, ties to the lowest strategy.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_lagr.h"

#define NOMEM() shard_errorf(-ENOMEM, "trws: out of memory")

int trws_init(struct trws *t, const struct mstate *st)
{
	const struct shard_model *m = st->m;
	size_t na = (size_t)st->adj_off[m->n] + 1;
	memset(t, 0, sizeof *t);
	t->st = st;
	t->moff = malloc(sizeof *t->moff * na);
	t->twin = malloc(sizeof *t->twin * na);
	t->gamma = malloc(sizeof *t->gamma * ((size_t)m->n + 1));
	t->hat = malloc(sizeof *t->hat * ((size_t)st->maxk + 1));
	t->h = malloc(sizeof *t->h * ((size_t)st->maxk + 1));
	t->label = calloc((size_t)m->n + 1, sizeof *t->label);
	int *first = malloc(sizeof *first * ((size_t)m->m + 1));
	if (!t->moff || !t->twin || !t->gamma || !t->hat || !t->h || !t->label || !first) {
		free(first);
		trws_free(t);
		return NOMEM();
	}
	int64_t total = 0;
	for (int k = 0; k < m->m; k++)
		first[k] = -1;
	for (int i = 0; i < m->n; i++) {
		int before = 0, after = 0;
		for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
			const struct shard_adj *a = &st->adj[j];
			t->moff[j] = total;
			total += shard_model_nstrat(m, i);
			before += a->other < i;
			after += a->other > i;
			if (first[a->edge] < 0) {
				first[a->edge] = j;
			} else {
				t->twin[j] = first[a->edge];
				t->twin[first[a->edge]] = j;
			}
		}
		int most = before > after ? before : after;
		t->gamma[i] = most > 0 ? 1.0 / most : 1.0;
	}
	free(first);
	t->nmsg = total;
	t->msg = calloc((size_t)total + 1, sizeof *t->msg);
	if (!t->msg) {
		trws_free(t);
		return NOMEM();
	}
	return 0;
}

void trws_free(struct trws *t)
{
	free(t->moff);
	free(t->msg);
	free(t->twin);
	free(t->gamma);
	free(t->hat);
	free(t->h);
	free(t->label);
	memset(t, 0, sizeof *t);
}

void trws_reset(struct trws *t)
{
	memset(t->msg, 0, sizeof *t->msg * (size_t)t->nmsg);
}

/* The message along adjacency entry j of node i into the other end. */
static void send(struct trws *t, int i, int j)
{
	const struct mstate *st = t->st;
	const struct shard_model *m = st->m;
	const struct shard_adj *a = &st->adj[j];
	int ki = shard_model_nstrat(m, i), ko = shard_model_nstrat(m, a->other);
	const double *in = t->msg + t->moff[j];
	double *out = t->msg + t->moff[t->twin[j]], *h = t->h, g = t->gamma[i];
	for (int x = 0; x < ki; x++)
		h[x] = g * t->hat[x] - in[x];
	for (int y = 0; y < ko; y++)
		out[y] = HUGE_VAL;
	const int64_t *mat = m->ecost + m->eoff[a->edge];
	for (int x = 0; x < ki; x++) {
		const int64_t *row = mat + x * a->row;
		double hx = h[x];
		if (a->col == 1) {
			for (int y = 0; y < ko; y++) {
				double v = hx + (double)row[y];
				out[y] = v < out[y] ? v : out[y];
			}
		} else {
			for (int y = 0; y < ko; y++) {
				double v = hx + (double)row[y * a->col];
				out[y] = v < out[y] ? v : out[y];
			}
		}
	}
	double lo = out[0];
	for (int y = 1; y < ko; y++)
		lo = out[y] < lo ? out[y] : lo;
	for (int y = 0; y < ko; y++)
		out[y] -= lo;
}

static void gather(struct trws *t, int i, const double *unary)
{
	const struct mstate *st = t->st;
	const struct shard_model *m = st->m;
	int k = shard_model_nstrat(m, i);
	memcpy(t->hat, unary + m->off[i], sizeof *t->hat * (size_t)k);
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
		const double *in = t->msg + t->moff[j];
		for (int x = 0; x < k; x++)
			t->hat[x] += in[x];
	}
}

/* Node i's label: unary, edges to earlier nodes at their labels,
 * messages from later ones. */
static void label(struct trws *t, int i, const double *unary)
{
	const struct mstate *st = t->st;
	const struct shard_model *m = st->m;
	int k = shard_model_nstrat(m, i);
	double *v = t->h;
	memcpy(v, unary + m->off[i], sizeof *v * (size_t)k);
	for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
		const struct shard_adj *a = &st->adj[j];
		if (a->other > i) {
			const double *in = t->msg + t->moff[j];
			for (int x = 0; x < k; x++)
				v[x] += in[x];
			continue;
		}
		const int64_t *e = m->ecost + m->eoff[a->edge] + t->label[a->other] * a->col;
		for (int x = 0; x < k; x++)
			v[x] += (double)e[x * a->row];
	}
	int best = 0;
	for (int x = 1; x < k; x++)
		if (v[x] < v[best])
			best = x;
	t->label[i] = best;
}

static double energy(const struct trws *t, const double *unary, const int *lab)
{
	const struct shard_model *m = t->st->m;
	double e = 0;
	for (int i = 0; i < m->n; i++)
		e += unary[m->off[i] + lab[i]];
	for (int k = 0; k < m->m; k++)
		e += (double)m->ecost[m->eoff[k] + (int64_t)lab[m->eu[k]] * shard_model_nstrat(m, m->ev[k]) +
				      lab[m->ev[k]]];
	return e;
}

void trws_run(struct trws *t, const double *unary, int iters, int *best, double *out)
{
	const struct mstate *st = t->st;
	const struct shard_model *m = st->m;
	double top = HUGE_VAL;
	for (int it = 0; it < iters; it++) {
		for (int i = 0; i < m->n; i++) {
			label(t, i, unary);
			gather(t, i, unary);
			for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++)
				if (st->adj[j].other > i)
					send(t, i, j);
		}
		double e = energy(t, unary, t->label);
		if (e < top) {
			top = e;
			memcpy(best, t->label, sizeof *best * (size_t)m->n);
		}
		for (int i = m->n - 1; i >= 0; i--) {
			gather(t, i, unary);
			for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++)
				if (st->adj[j].other < i)
					send(t, i, j);
		}
	}
	*out = top;
}
