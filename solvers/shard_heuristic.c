/*
 * shard_heuristic.c: the fast deterministic heuristic for the strategy
 * problem (see solvers.h).
 *
 * 1. Feasibility test: the least-usage strategy of every node minimizes the
 *    usage at every time point at once, so the instance is feasible iff that
 *    assignment is; if not, stop with -ENOSPC.
 * 2. Pruning (shard_prune.c): strategies that a forbidden cost rules out
 *    on some edge whatever the neighbour does are left out of the search.
 * 3. Greedy start, in node index order (producers come first in pcc's and
 *    the contest's numbering): each node takes the strategy minimizing its
 *    cost plus the edge entries to already assigned neighbours.
 * 4. Memory repair when that start is over the limit: at the first peak
 *    segment, move one live node to a lower-usage strategy at the least cost
 *    increase per byte removed (bytes counted up to the excess), until
 *    feasible; this ends because usage at the peak only decreases and step
 *    1 proved the least-usage assignment fits. A second, memory-aware greedy
 *    (cheapest strategy that keeps the unassigned nodes' least usages
 *    feasible) is also descended and the better start kept.
 * 5. Descent: single-node and edge-pair moves (shard_search.c) until none
 *    improves.
 * 6. Perturbation rounds (iterated local search): move a short random walk
 *    of nodes to random strategies that fit, descend around them, keep the
 *    result if it costs no more, otherwise undo. Every 16th round is a
 *    block move instead: exact DP over a random spanning forest
 *    (shard_dp.c), repaired and descended. Seeded splitmix64, fixed
 *    order: the time limit only cuts the sequence short.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_search.h"

void shard_heuristic_params_init(struct shard_heuristic_params *prm)
{
	prm->time_limit = 10.0;
	prm->seed = 1;
	prm->max_rounds = 20000;
	prm->verbose = false;
	prm->forbidden_cost = 1000000000000000000; /* the contest's "infinite" cost */
	prm->timed_out = NULL;
}

/* Working memory of one run. */
struct run {
	struct shard_state st;
	struct shard_queue q;
	struct shard_dp dp;
	unsigned char *mask;
	int *start; /* an assignment being built */
	const struct shard_heuristic_params *prm;
	double t0;
	uint64_t rng;
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int64_t usage_of(const struct shard_problem *p, int i, int q)
{
	return p->usage[p->strat_off[i] + q];
}

/* Step 3 (memory_aware false) or the memory-aware greedy; r->st must hold
 * the least-usage assignment. Leaves the start in r->start. */
static int greedy(struct run *r, bool memory_aware)
{
	struct shard_state *st = &r->st;
	const struct shard_problem *p = st->p;
	memset(r->mask, 0, (size_t)p->nnodes);
	for (int i = 0; i < p->nnodes; i++) {
		int k = shard_problem_nstrat(p, i), c = st->choice[i], best = -1;
		shard_state_local(st, i, -1, r->mask, st->local);
		shard_i128 room = (shard_i128)p->usage_limit - shard_tree_max(&st->tree, st->seg_a[i], st->seg_b[i]);
		for (int q = 0; q < k; q++) {
			shard_i128 du = (shard_i128)usage_of(p, i, q) - usage_of(p, i, c);
			if (!st->alive[p->strat_off[i] + q])
				continue;
			if (memory_aware && du > 0 && du > room)
				continue;
			if (best < 0 || st->local[q] < st->local[best] ||
			    (st->local[q] == st->local[best] && usage_of(p, i, q) < usage_of(p, i, best)))
				best = q;
		}
		/* Only the tree matters here: the cost is recomputed on load. */
		int rc = memory_aware ? shard_state_move(st, i, best, 0) : 0;
		if (rc < 0)
			return rc;
		r->start[i] = best;
		r->mask[i] = 1;
	}
	shard_state_commit(st);
	return 0;
}

/* Step 4: the best usage-lowering move at segment j, or node -1. */
static int repair_pick(struct run *r, int j, shard_i128 excess, int *to, shard_i128 *dcost)
{
	struct shard_state *st = &r->st;
	const struct shard_problem *p = st->p;
	int node = -1;
	double best_score = 0;
	for (int i = 0; i < p->nnodes; i++) {
		if (st->seg_a[i] > j || st->seg_b[i] <= j)
			continue;
		int c = st->choice[i];
		bool local_done = false;
		for (int q = 0; q < shard_problem_nstrat(p, i); q++) {
			shard_i128 saved = (shard_i128)usage_of(p, i, c) - usage_of(p, i, q);
			if (saved <= 0 || !st->alive[p->strat_off[i] + q])
				continue;
			if (!local_done) {
				shard_state_local(st, i, -1, NULL, st->local);
				local_done = true;
			}
			shard_i128 d = st->local[q] - st->local[c];
			double score = (double)d / (double)(saved < excess ? saved : excess);
			if (node < 0 || score < best_score) {
				node = i, *to = q, *dcost = d;
				best_score = score;
			}
		}
	}
	return node;
}

static int repair(struct run *r)
{
	struct shard_state *st = &r->st;
	shard_i128 limit = st->p->usage_limit;
	while (shard_tree_peak(&st->tree) > limit) {
		int j = shard_tree_argmax(&st->tree), to = 0;
		shard_i128 d = 0;
		int i = repair_pick(r, j, shard_tree_peak(&st->tree) - limit, &to, &d);
		assert(i >= 0 && "the least-usage alive assignment fits, so a assignment exists");
		int rc = shard_state_move(st, i, to, d);
		if (rc < 0)
			return rc;
	}
	shard_state_commit(st);
	return 0;
}

/* Step 5: descend with single and pair moves until neither improves. */
static int descend_all(struct run *r)
{
	struct shard_state *st = &r->st;
	const struct shard_problem *p = st->p;
	int moved, rc;
	do {
		moved = 0;
		for (int i = 0; i < p->nnodes; i++)
			shard_queue_push(&r->q, i);
		if ((rc = shard_descend(st, &r->q, &moved)) < 0)
			return rc;
		for (int k = 0; k < p->nedges && !shard_state_late(st); k++) {
			if ((rc = shard_pair_move(st, k)) < 0)
				return rc;
			moved += rc;
		}
	} while (moved > 0 && !shard_state_late(st));
	shard_state_commit(st);
	return 0;
}

static void say(const struct run *r, const char *what)
{
	char b[SHARD_I128_STRLEN];
	if (r->prm->verbose)
		fprintf(stderr, "shard: %.2fs %s: cost %s\n", shard_now() - r->t0, what, shard_i128_str(r->st.cost, b));
}

/* Steps 3-5 for one greedy; leaves the descended assignment in r->start. */
static int start_from(struct run *r, const int *least, bool memory_aware, shard_i128 *cost, bool *was_over)
{
	struct shard_state *st = &r->st;
	shard_state_load(st, least);
	int rc = greedy(r, memory_aware);
	if (rc < 0)
		return rc;
	shard_state_load(st, r->start);
	*was_over = shard_tree_peak(&st->tree) > st->p->usage_limit;
	say(r, memory_aware ? "memory-aware greedy" : "greedy");
	rc = repair(r);
	if (rc == 0)
		rc = descend_all(r);
	say(r, "descent");
	memcpy(r->start, st->choice, sizeof *r->start * (size_t)st->p->nnodes);
	*cost = st->cost;
	return rc;
}

/* Step 6, one round: a random walk of up to 4 nodes moved to random
 * strategies that fit the memory. */
static int perturb(struct run *r)
{
	struct shard_state *st = &r->st;
	const struct shard_problem *p = st->p;
	int i = (int)(rng_next(&r->rng) % (uint64_t)p->nnodes), rc;
	int len = 1 + (int)(rng_next(&r->rng) % 4);
	for (int s = 0; s < len; s++) {
		int k = shard_problem_nstrat(p, i), c = st->choice[i];
		if (k > 1) {
			int q = (c + 1 + (int)(rng_next(&r->rng) % (uint64_t)(k - 1))) % k;
			shard_i128 du = (shard_i128)usage_of(p, i, q) - usage_of(p, i, c);
			shard_i128 mx = shard_tree_max(&st->tree, st->seg_a[i], st->seg_b[i]);
			if (st->alive[p->strat_off[i] + q] && (du <= 0 || mx + du <= p->usage_limit)) {
				shard_state_local(st, i, -1, NULL, st->local);
				if ((rc = shard_state_move(st, i, q, st->local[q] - st->local[c])) < 0)
					return rc;
				shard_queue_push(&r->q, i);
				shard_queue_push_neighbours(&r->q, st, i);
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
static int round_pairs(struct run *r)
{
	struct shard_state *st = &r->st;
	int n = st->nundo, moved = 0, rc;
	for (int m = 0; m < n; m++) {
		int i = st->undo[m].node;
		for (int j = st->adj_off[i]; j < st->adj_off[i + 1]; j++) {
			if ((rc = shard_pair_move(st, st->adj[j].edge)) < 0)
				return rc;
			if (rc) {
				shard_queue_push_neighbours(&r->q, st, st->p->edge_u[st->adj[j].edge]);
				shard_queue_push_neighbours(&r->q, st, st->p->edge_v[st->adj[j].edge]);
			}
		}
	}
	return shard_descend(st, &r->q, &moved);
}

/* A block round: the forest DP's proposal, repaired and descended, kept
 * when it costs no more. */
static int dp_round(struct run *r)
{
	struct shard_state *st = &r->st;
	shard_i128 before = st->cost;
	int moved = 0;
	memcpy(r->start, st->choice, sizeof *r->start * (size_t)st->p->nnodes);
	struct shard_graph g;
	shard_state_graph(st, &g);
	int rc = shard_dp_propose(&r->dp, &g, rng_next, &r->rng);
	if (rc < 0)
		return rc;
	shard_state_load(st, r->dp.choice);
	if ((rc = repair(r)) < 0)
		return rc;
	for (int i = 0; i < st->p->nnodes; i++)
		shard_queue_push(&r->q, i);
	if ((rc = shard_descend(st, &r->q, &moved)) < 0)
		return rc;
	if (st->cost > before)
		shard_state_load(st, r->start);
	else if (st->cost < before)
		say(r, "forest move");
	shard_state_commit(st);
	return 0;
}

static int rounds(struct run *r)
{
	struct shard_state *st = &r->st;
	int rc;
	for (int k = 0; k < r->prm->max_rounds && st->p->nnodes > 0; k++) {
		shard_i128 before = st->cost;
		if (k % 16 == 0) {
			if ((rc = dp_round(r)) < 0)
				return rc;
			if (shard_state_late(st))
				break;
			continue;
		}
		if ((rc = perturb(r)) < 0)
			return rc;
		int moved = 0;
		if ((rc = shard_descend(st, &r->q, &moved)) < 0 || (rc = round_pairs(r)) < 0)
			return rc;
		if (shard_state_late(st)) {
			shard_state_undo(st); /* an unfinished round may be worse */
			break;
		}
		if (st->cost <= before)
			shard_state_commit(st);
		else
			shard_state_undo(st);
	}
	r->q.count = 0;
	memset(r->q.in, 0, (size_t)st->p->nnodes + 1);
	say(r, "rounds");
	return 0;
}

static int solve(struct run *r, const int *least)
{
	struct shard_state *st = &r->st;
	size_t bytes = sizeof *r->start * (size_t)st->p->nnodes;
	shard_i128 cost_a, cost_b;
	bool was_over;
	int *best = malloc(bytes + 1);
	if (!best)
		return shard_errorf(-ENOMEM, "heuristic: out of memory");
	int rc = start_from(r, least, false, &cost_a, &was_over);
	memcpy(best, r->start, bytes);
	/* The cost-only greedy was over the limit, so memory binds: the
	 * memory-aware start may do better. */
	if (rc == 0 && was_over && !shard_state_late(st)) {
		rc = start_from(r, least, true, &cost_b, &was_over);
		if (cost_b < cost_a)
			memcpy(best, r->start, bytes);
	}
	shard_state_load(st, best);
	free(best);
	return rc < 0 ? rc : rounds(r);
}

static int alloc_run(struct run *r, const struct shard_problem *p)
{
	int rc = shard_state_init(&r->st, p, r->t0 + r->prm->time_limit);
	if (rc < 0)
		return rc;
	if ((rc = shard_queue_init(&r->q, p->nnodes)) < 0 ||
	    (rc = shard_dp_init(&r->dp, p->nnodes, p->nedges, p->strat_off[p->nnodes])) < 0)
		return rc;
	r->mask = malloc((size_t)p->nnodes + 1);
	r->start = malloc(sizeof *r->start * ((size_t)p->nnodes + 1));
	if (!r->mask || !r->start)
		return shard_errorf(-ENOMEM, "heuristic: out of memory");
	return 0;
}

int shard_heuristic(const struct shard_problem *p, const struct shard_heuristic_params *prm, int *choice,
		    struct shard_eval *out)
{
	struct run r = { .prm = prm, .t0 = shard_now(), .rng = prm->seed };
	memset(out, 0, sizeof *out);
	int rc = shard_problem_check(p);
	if (rc < 0)
		return rc;
	if ((rc = alloc_run(&r, p)) < 0)
		goto out;
	shard_least_usage(p, NULL, choice);
	shard_state_load(&r.st, choice);
	if (shard_tree_peak(&r.st.tree) > p->usage_limit) {
		rc = shard_infeasible(p, choice, out);
		goto out;
	}
	if ((rc = shard_state_prune(&r.st, prm->forbidden_cost)) < 0)
		goto out;
	shard_least_usage(p, r.st.alive, choice);
	shard_state_load(&r.st, choice);
	if (shard_tree_peak(&r.st.tree) > p->usage_limit) {
		/* Memory forces forbidden entries: search everything. */
		memset(r.st.alive, 1, (size_t)p->strat_off[p->nnodes]);
		shard_least_usage(p, NULL, choice);
	}
	if ((rc = solve(&r, choice)) < 0)
		goto out;
	memcpy(choice, r.st.choice, sizeof *choice * (size_t)p->nnodes);
	if ((rc = shard_evaluate(p, choice, out)) < 0)
		goto out;
	assert(out->feasible && out->cost == r.st.cost && "the evaluator disagrees with the search");
	if (prm->timed_out)
		*prm->timed_out = r.st.timed_out;
out:
	shard_state_free(&r.st);
	shard_queue_free(&r.q);
	shard_dp_free(&r.dp);
	free(r.mask);
	free(r.start);
	return rc;
}
