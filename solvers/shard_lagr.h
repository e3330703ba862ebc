/*
 * shard_lagr.h: message passing on a reduced model (shard_trws.c) and the
 * Lagrangian search that prices memory with it (shard_lagr.c). Internal
 * to solvers/.
 */
#ifndef PCC_SOLVERS_SHARD_LAGR_H
#define PCC_SOLVERS_SHARD_LAGR_H

#include "solvers/shard_lns.h"

/* TRW-S (sequential tree-reweighted message passing, Kolmogorov 2006) on
 * the model's pairwise costs with caller-given node costs (doubles: the
 * model's costs plus memory prices). Messages persist between runs, so a
 * run after a small change of the node costs starts close to where the
 * last one ended. */
struct trws {
	const struct mstate *st; /* graph and adjacency */
	int64_t *moff;           /* per adjacency entry: its message into the node */
	double *msg;             /* the messages, normalized to minimum 0 */
	int64_t nmsg;
	int *twin;       /* per adjacency entry: the other end's entry */
	double *gamma;   /* per node: 1 / max(earlier, later neighbours) */
	double *hat, *h; /* scratch, maxk */
	int *label;      /* the last forward pass's labeling */
};

int trws_init(struct trws *t, const struct mstate *st);
void trws_free(struct trws *t);
/* Forgets the messages. */
void trws_reset(struct trws *t);
/* iters forward and backward passes with node costs unary (per model
 * strategy); the labeling of the forward pass whose energy (unary plus
 * pairwise) is lowest goes to best, that energy to *energy. */
void trws_run(struct trws *t, const double *unary, int iters, int *best, double *energy);

/* ---- the Lagrangian search (shard_lagr.c) ---------------------------------- */

struct lagr_params {
	double until; /* seconds on shard_now()'s clock */
	int max_iters;
	bool verbose;
	double t0;
};

/* Prices each time segment's memory (multipliers by subgradient steps
 * on the usage over the limit), solves the priced model without the limit
 * by TRW-S, repairs each labeling into the limit and descends from it;
 * leaves in st the best feasible assignment seen, st's own when none is
 * better. *have: st holds a feasible assignment (in and out). */
int shard_lagr(struct mstate *st, struct msearch *ms, const struct lagr_params *prm, bool *have);

#endif
