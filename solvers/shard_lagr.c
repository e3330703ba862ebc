/*
 * shard_lagr.c: Lagrangian relaxation of the memory limit, one multiplier
 * per time segment, with TRW-S (shard_trws.c) as the solver of the priced
 * problem and repair plus descent as the primal heuristic.
 *
 * The dual function of the model, for multipliers lambda_s >= 0 (cost per
 * byte live at segment s), is
 *   L(lambda) = min_x cost(x) + sum_s lambda_s (use_s(x) - limit),
 * where use_s counts the fixed base; the inner minimum is the model
 * without memory whose node costs carry their usage priced over their
 * pieces' segments. Each iteration runs a few TRW-S passes on the priced
 * costs (warm: messages persist), descends from their labeling on the
 * priced model (single and pair moves, no limit), takes the result x, and
 *  - primal: loads x into the search state, repairs it into the limit at
 *    the least cost per byte (shard_msearch.c) and descends; the best
 *    feasible assignment is kept;
 *  - dual: a projected subgradient step, Polyak's rule towards the best
 *    feasible cost, on g_s = use_s(x) - limit:
 *      lambda_s = max(0, lambda_s + theta (UB - L~) g_s / |g|^2),
 *    L~ the priced cost of x (an estimate of L, since x is only nearly a
 *    minimizer), theta halved when L~ has not risen for 3 steps and
 *    set back to 1/2 once below 1e-3 (to climb again from elsewhere).
 * Segments no multiplier or excess touches stay out of |g|^2.
 *
 * Deterministic: no randomness; stops after max_iters iterations or at
 * the deadline (a backstop when max_iters is finite).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_lagr.h"

#define NOMEM() shard_errorf(-ENOMEM, "lagrange: out of memory")

struct lagr {
	struct mstate *st;
	struct msearch *ms;
	const struct lagr_params *prm;
	double *lambda, *pre, *unary;
	shard_i128 *use;
	int *lab, *best;
	struct trws t;
	/* the priced model: no pieces, node costs priced (rounded), and a
	 * search state on it for descent from TRW-S's labeling */
	struct shard_model m2;
	struct mstate st2;
	struct msearch ms2;
	bool st2_ok;
};

/* Per-segment usage of a model assignment (base included): a sweep. */
static void usage_of(const struct shard_model *m, const int *choice, shard_i128 *u)
{
	memset(u, 0, sizeof *u * ((size_t)m->nseg + 1));
	for (int i = 0; i < m->n; i++)
		for (int x = m->poff[i]; x < m->poff[i + 1]; x++) {
			u[m->piece[x].a] += ms_use(m, x, choice[i]);
			u[m->piece[x].b] -= ms_use(m, x, choice[i]);
		}
	shard_i128 run = 0;
	for (int s = 0; s < m->nseg; s++) {
		run += u[s];
		u[s] = run + m->base[s];
	}
}

/* Node costs plus, per piece, its usage times the summed multipliers of
 * its segments. */
static void price(struct lagr *l)
{
	const struct shard_model *m = l->st->m;
	l->pre[0] = 0;
	for (int s = 0; s < m->nseg; s++)
		l->pre[s + 1] = l->pre[s] + l->lambda[s];
	for (int i = 0; i < m->n; i++)
		for (int q = m->off[i]; q < m->off[i + 1]; q++) {
			double c = (double)m->cost[q];
			for (int x = m->poff[i]; x < m->poff[i + 1]; x++)
				c += (double)ms_use(m, x, q - m->off[i]) *
				     (l->pre[m->piece[x].b] - l->pre[m->piece[x].a]);
			l->unary[q] = c;
			l->m2.cost[q] = m->cost[q] >= m->inf || c >= (double)m->inf ? m->inf : (int64_t)c;
		}
}

static void lagr_free(struct lagr *l)
{
	free(l->lambda);
	free(l->pre);
	free(l->unary);
	free(l->use);
	free(l->lab);
	free(l->best);
	trws_free(&l->t);
	if (l->st2_ok) {
		msearch_free(&l->ms2);
		ms_free(&l->st2);
	}
	free(l->m2.poff);
	free(l->m2.cost);
}

/* x (l->lab) loaded into st, repaired into the limit and descended; kept
 * in l->best when it beats *ub (st is left where the descent ended). */
static int primal(struct lagr *l, bool *have, shard_i128 *ub)
{
	struct mstate *st = l->st;
	const struct shard_model *m = st->m;
	ms_load(st, l->lab);
	int rc = msearch_repair(l->ms);
	if (rc == 0)
		rc = msearch_descend(l->ms);
	if (rc == -ENOSPC || (rc == 0 && st->timed_out)) {
		rc = 0;
	} else if (rc == 0 && ms_feasible(st) && (!*have || st->cost < *ub)) {
		*ub = st->cost;
		*have = true;
		memcpy(l->best, st->choice, sizeof *l->best * (size_t)m->n);
		ms_publish(st, l->best, *ub, false);
		if (l->prm->verbose) {
			char b[SHARD_I128_STRLEN];
			fprintf(stderr, "shard: %.2fs lagrange: cost %s\n", shard_now() - l->prm->t0,
				shard_i128_str(*ub, b));
		}
	}
	return rc;
}

int shard_lagr(struct mstate *st, struct msearch *ms, const struct lagr_params *prm, bool *have)
{
	const struct shard_model *m = st->m;
	struct lagr l;
	if (m->n == 0 || m->nseg == 0)
		return 0;
	memset(&l, 0, sizeof l);
	l.st = st, l.ms = ms, l.prm = prm;
	l.m2 = *m;
	l.m2.nseg = 0;
	l.m2.poff = calloc((size_t)m->n + 1, sizeof *l.m2.poff);
	l.m2.cost = malloc(sizeof *l.m2.cost * ((size_t)m->off[m->n] + 1));
	l.lambda = calloc((size_t)m->nseg + 1, sizeof *l.lambda);
	l.pre = malloc(sizeof *l.pre * ((size_t)m->nseg + 2));
	l.unary = malloc(sizeof *l.unary * ((size_t)m->off[m->n] + 1));
	l.use = malloc(sizeof *l.use * ((size_t)m->nseg + 1));
	l.lab = malloc(sizeof *l.lab * ((size_t)m->n + 1));
	l.best = malloc(sizeof *l.best * ((size_t)m->n + 1));
	int rc = l.lambda && l.pre && l.unary && l.use && l.lab && l.best && l.m2.poff && l.m2.cost
			 ? trws_init(&l.t, st)
			 : NOMEM();
	struct msearch_params mp = { 1, false, prm->t0 };
	if (rc == 0 && (rc = ms_init(&l.st2, &l.m2, prm->until)) == 0) {
		if ((rc = msearch_init(&l.ms2, &l.st2, &mp)) < 0)
			ms_free(&l.st2);
		l.st2_ok = rc == 0;
	}
	if (rc < 0) {
		lagr_free(&l);
		return rc;
	}
	double deadline = st->deadline;
	st->deadline = prm->until < deadline ? prm->until : deadline;
	shard_i128 ub = st->cost;
	if (*have)
		memcpy(l.best, st->choice, sizeof *l.best * (size_t)m->n);
	double theta = 1.0, top = -HUGE_VAL;
	int stall = 0, it;
	bool converged = false;
	for (it = 0; it < prm->max_iters && rc == 0 && shard_now() < st->deadline; it++) {
		price(&l);
		double e;
		trws_run(&l.t, l.unary, it == 0 ? 20 : 5, l.lab, &e);
		ms_load(&l.st2, l.lab);
		if ((rc = msearch_descend(&l.ms2)) < 0)
			break;
		memcpy(l.lab, l.st2.choice, sizeof *l.lab * (size_t)m->n);
		usage_of(m, l.lab, l.use);
		double cost = (double)shard_model_cost(m, l.lab), dot = 0, norm = 0;
		for (int s = 0; s < m->nseg; s++) {
			double g = (double)(l.use[s] - m->limit);
			dot += l.lambda[s] * g;
			if (l.lambda[s] > 0 || g > 0)
				norm += g * g;
		}
		double est = cost + dot;
		if (est > top) {
			top = est, stall = 0;
		} else if (++stall >= 3) {
			theta /= 2, stall = 0;
		}
		if (theta < 1e-3) /* converged: start climbing again */
			theta = 0.5, top = -HUGE_VAL;
		if ((rc = primal(&l, have, &ub)) < 0)
			break;
		if (prm->verbose) {
			char b[SHARD_I128_STRLEN];
			fprintf(stderr, "shard: %.2fs lagrange %d: labeling %.6e, dual~ %.6e, theta %.3g, best %s\n",
				shard_now() - prm->t0, it, cost, est, theta, *have ? shard_i128_str(ub, b) : "none");
		}
		if (norm == 0) {
			converged = true; /* x fits and every priced segment is exactly full */
			break;
		}
		double target = *have ? (double)ub : 1.05 * est;
		double step = theta * (target - est) / norm;
		if (step <= 0)
			step = theta * 0.01 * fabs(est) / norm;
		for (int s = 0; s < m->nseg; s++) {
			double v = l.lambda[s] + step * (double)(l.use[s] - m->limit);
			l.lambda[s] = v > 0 ? v : 0;
		}
	}
	/* iterations left when the time came, in the search or its inner one */
	st->backstop |= (rc == 0 && !converged && it < prm->max_iters) || (l.st2_ok && l.st2.backstop);
	st->deadline = deadline;
	st->timed_out = false;
	if (*have)
		ms_load(st, l.best);
	if (prm->verbose)
		fprintf(stderr, "shard: %.2fs lagrange: %d iterations\n", shard_now() - prm->t0, it);
	lagr_free(&l);
	return rc;
}
