/*
 * shard_prune.c: arc consistency on forbidden costs, before the search.
 *
 * Producers mark impossible combinations with a huge cost (the contest uses
 * 10^18). A strategy is dead when its node cost is at or above the
 * threshold, or when, on some edge, every alive strategy of the neighbour
 * pairs with it at or above the threshold. Killing one can kill others, so
 * edges are revisited from a work list until nothing changes (AC-3). The
 * greedy and the moves then never step onto a forbidden entry that one
 * edge already rules out, which single-node moves alone could not undo along
 * chains of matching nodes. Example: u with strategies {0, 1}, v with {0},
 * M = [[0], [10^18]]: u's strategy 1 dies.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_internal.h"

/* Kills the strategies of node i (the adj entry's owner) that have no
 * allowed partner across edge a; returns how many died. */
static int revise(struct shard_state *st, int i, const struct shard_adj *a, int64_t forbidden)
{
	const struct shard_problem *p = st->p;
	const int64_t *m = p->edge_cost + p->edge_off[a->edge];
	unsigned char *ai = st->alive + p->strat_off[i], *ao = st->alive + p->strat_off[a->other];
	int ki = shard_problem_nstrat(p, i), ko = shard_problem_nstrat(p, a->other), died = 0;
	for (int q = 0; q < ki; q++) {
		if (!ai[q])
			continue;
		bool ok = false;
		if (a->other == i)
			ok = m[q * a->row + q * a->col] < forbidden;
		for (int r = 0; r < ko && !ok && a->other != i; r++)
			ok = ao[r] && m[q * a->row + r * a->col] < forbidden;
		if (!ok) {
			ai[q] = 0;
			died++;
		}
	}
	return died;
}

static bool any_alive(const struct shard_state *st, int i)
{
	for (int s = st->p->strat_off[i]; s < st->p->strat_off[i + 1]; s++)
		if (st->alive[s])
			return true;
	return false;
}

/* AC-3 over a FIFO of nodes whose domains shrank; false on a wipe-out. */
static bool propagate(struct shard_state *st, int64_t forbidden, int *queue, unsigned char *in)
{
	const struct shard_problem *p = st->p;
	int n = p->nnodes, head = 0, count = n;
	for (int i = 0; i < n; i++)
		queue[i] = i, in[i] = 1;
	while (count > 0) {
		int j = queue[head];
		head = (head + 1) % n;
		count--;
		in[j] = 0;
		/* j shrank: its neighbours may lose support across j's edges. */
		for (int e = st->adj_off[j]; e < st->adj_off[j + 1]; e++) {
			int i = st->adj[e].other;
			const struct shard_adj *back = NULL;
			for (int f = st->adj_off[i]; f < st->adj_off[i + 1] && !back; f++)
				if (st->adj[f].edge == st->adj[e].edge)
					back = &st->adj[f];
			if (!revise(st, i, back, forbidden))
				continue;
			if (!any_alive(st, i))
				return false;
			if (!in[i]) {
				in[i] = 1;
				queue[(head + count) % n] = i;
				count++;
			}
		}
	}
	return true;
}

int shard_state_prune(struct shard_state *st, int64_t forbidden)
{
	const struct shard_problem *p = st->p;
	size_t ns = (size_t)p->strat_off[p->nnodes];
	bool ok = true;
	for (size_t s = 0; s < ns; s++)
		st->alive[s] = p->cost[s] < forbidden;
	for (int i = 0; i < p->nnodes && ok; i++)
		ok = any_alive(st, i);
	int *queue = malloc(sizeof *queue * ((size_t)p->nnodes + 1));
	unsigned char *in = malloc((size_t)p->nnodes + 1);
	if (!queue || !in) {
		free(queue);
		free(in);
		return shard_errorf(-ENOMEM, "heuristic: out of memory");
	}
	if (ok && p->nnodes > 0)
		ok = propagate(st, forbidden, queue, in);
	if (!ok) /* no finite assignment: search them all */
		memset(st->alive, 1, ns);
	free(queue);
	free(in);
	return 0;
}
