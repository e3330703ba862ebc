/*
 * shard_eval.c: the independent evaluator. Shares no code with the
 * heuristic on purpose, so that it re-checks every answer.
 *
 * Cost: a plain __int128 sum of the chosen node costs and edge entries.
 * Memory: each live node contributes +usage at lo and -usage at hi; sorting
 * these 2n events by time and sweeping gives the usage on each run of time
 * points [t_k, t_{k+1}) between consecutive distinct event times, so the
 * count of points over the limit is a sum of run lengths, independent of how
 * far apart the times are. Example: usages 10 on [0, 5) and 20 on [3, 4)
 * with limit 25 give runs [0,3):10, [3,4):30, [4,5):10; one point (t = 3)
 * is over, the peak is 30 at t = 3.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_internal.h"

struct event {
	int64_t t;
	int64_t delta; /* +usage at lo, -usage at hi */
};

static int event_cmp(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

static int check_choice(const struct shard_problem *p, const int *choice)
{
	for (int i = 0; i < p->nnodes; i++)
		if (choice[i] < 0 || choice[i] >= shard_problem_nstrat(p, i))
			return shard_errorf(-EINVAL, "node %d: strategy %d out of range (the node has %d)", i,
					    choice[i], shard_problem_nstrat(p, i));
	return 0;
}

static shard_i128 total_cost(const struct shard_problem *p, const int *choice)
{
	shard_i128 c = 0;
	for (int i = 0; i < p->nnodes; i++)
		c += p->cost[p->strat_off[i] + choice[i]];
	for (int k = 0; k < p->nedges; k++) {
		int u = p->edge_u[k], v = p->edge_v[k];
		c += p->edge_cost[p->edge_off[k] + (int64_t)choice[u] * shard_problem_nstrat(p, v) + choice[v]];
	}
	return c;
}

/* Sweeps the n events (sorted) and fills the memory fields of out. */
static void sweep(const struct event *ev, int n, int64_t limit, struct shard_eval *out)
{
	shard_i128 cur = 0;
	for (int k = 0; k < n;) {
		int64_t t = ev[k].t;
		for (; k < n && ev[k].t == t; k++)
			cur += ev[k].delta;
		if (k == n)
			break; /* past the last end: nothing live */
		/* cur holds on the time points [t, ev[k].t). */
		if (cur > out->peak_usage) {
			out->peak_usage = cur;
			out->peak_time = t;
		}
		if (cur > limit) {
			if (out->over_points == 0)
				out->first_over_time = t;
			out->over_points += ev[k].t - t;
		}
	}
	out->feasible = out->over_points == 0;
}

int shard_evaluate(const struct shard_problem *p, const int *choice, struct shard_eval *out)
{
	memset(out, 0, sizeof *out);
	int rc = check_choice(p, choice);
	if (rc < 0)
		return rc;
	out->cost = total_cost(p, choice);
	struct event *ev = malloc(sizeof *ev * (2 * (size_t)p->nnodes + 1));
	if (!ev)
		return shard_errorf(-ENOMEM, "evaluate: out of memory");
	int n = 0;
	for (int i = 0; i < p->nnodes; i++) {
		int64_t u = p->usage[p->strat_off[i] + choice[i]];
		if (u == 0 || p->lo[i] >= p->hi[i])
			continue;
		ev[n++] = (struct event){ p->lo[i], u };
		ev[n++] = (struct event){ p->hi[i], -u };
	}
	qsort(ev, (size_t)n, sizeof *ev, event_cmp);
	sweep(ev, n, p->usage_limit, out);
	free(ev);
	return 0;
}
