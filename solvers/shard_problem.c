/*
 * shard_problem.c: the error channel, int128 printing, and the invariants of
 * struct shard_problem (checked once here so solvers can trust them).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solvers/shard_internal.h"

static char err_msg[1024];

int shard_errorf(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof err_msg, fmt, ap);
	va_end(ap);
	return code;
}

const char *shard_error(void)
{
	return err_msg[0] ? err_msg : "unknown error";
}

double shard_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *shard_i128_str(shard_i128 v, char *buf)
{
	char tmp[SHARD_I128_STRLEN];
	int n = 0, neg = v < 0;
	/* Work on negative values so that the most negative one has no
	 * overflowing negation. */
	if (!neg)
		v = -v;
	do {
		tmp[n++] = (char)('0' - (int)(v % 10));
		v /= 10;
	} while (v != 0);
	int k = 0;
	if (neg)
		buf[k++] = '-';
	while (n > 0)
		buf[k++] = tmp[--n];
	buf[k] = '\0';
	return buf;
}

void shard_problem_free(struct shard_problem *p)
{
	free(p->strat_off);
	free(p->cost);
	free(p->usage);
	free(p->lo);
	free(p->hi);
	free(p->edge_u);
	free(p->edge_v);
	free(p->edge_off);
	free(p->edge_cost);
	free(p->name);
	memset(p, 0, sizeof *p);
}

static int check_nodes(const struct shard_problem *p)
{
	if (p->nnodes < 0 || !p->strat_off || p->strat_off[0] != 0)
		return shard_errorf(-EINVAL, "problem: bad node count or strategy offsets");
	for (int i = 0; i < p->nnodes; i++) {
		if (p->strat_off[i + 1] <= p->strat_off[i])
			return shard_errorf(-EINVAL, "problem: node %d has no strategies", i);
		if (p->lo[i] > p->hi[i])
			return shard_errorf(-EINVAL, "problem: node %d has interval [%lld, %lld) with lo > hi", i,
					    (long long)p->lo[i], (long long)p->hi[i]);
		for (int s = p->strat_off[i]; s < p->strat_off[i + 1]; s++)
			if (p->usage[s] < 0)
				return shard_errorf(-EINVAL, "problem: node %d strategy %d has negative usage %lld", i,
						    s - p->strat_off[i], (long long)p->usage[s]);
	}
	return 0;
}

int shard_problem_check(const struct shard_problem *p)
{
	int rc = check_nodes(p);
	if (rc < 0)
		return rc;
	if (p->nedges < 0 || (p->nedges > 0 && (!p->edge_off || p->edge_off[0] != 0)))
		return shard_errorf(-EINVAL, "problem: bad edge count or matrix offsets");
	for (int k = 0; k < p->nedges; k++) {
		int u = p->edge_u[k], v = p->edge_v[k];
		if (u < 0 || u >= p->nnodes || v < 0 || v >= p->nnodes)
			return shard_errorf(-EINVAL, "problem: edge %d names node %d, but there are %d nodes", k,
					    (u < 0 || u >= p->nnodes) ? u : v, p->nnodes);
		int64_t want = (int64_t)shard_problem_nstrat(p, u) * shard_problem_nstrat(p, v);
		if (p->edge_off[k + 1] - p->edge_off[k] != want)
			return shard_errorf(-EINVAL, "problem: edge %d matrix has %lld entries, expected %lld", k,
					    (long long)(p->edge_off[k + 1] - p->edge_off[k]), (long long)want);
	}
	if (p->usage_limit < 0)
		return shard_errorf(-EINVAL, "problem: negative usage limit %lld", (long long)p->usage_limit);
	return 0;
}
