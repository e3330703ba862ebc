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
	/* one line whatever it quotes (jansson's error text quotes the input
	 * near the error, newlines and all): control bytes become '?' */
	for (char *c = err_msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return code;
}

const char *shard_error(void)
{
	return err_msg[0] ? err_msg : "unknown error";
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* shard_clock_scale's state: since wall time `since`, the clock reads
 * `base` plus scale times the wall time passed (scale 1: the wall clock). */
static double clock_scale = 1, clock_since, clock_base;

void shard_clock_scale(double scale)
{
	double now = shard_now();
	clock_since = wall_now();
	clock_base = now;
	clock_scale = scale > 0 ? scale : 1;
}

double shard_now(void)
{
	double t = wall_now();
	return clock_scale == 1 && clock_base == 0 ? t : clock_base + clock_scale * (t - clock_since);
}

int shard_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

bool shard_holds_memory(const struct shard_problem *p, int i)
{
	if (p->lo[i] >= p->hi[i])
		return false;
	for (int s = p->strat_off[i]; s < p->strat_off[i + 1]; s++)
		if (p->usage[s] > 0)
			return true;
	return false;
}

static int find_i64(const int64_t *v, int n, int64_t x)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int shard_segments(const struct shard_problem *p, int *seg_a, int *seg_b)
{
	int64_t *t = malloc(sizeof *t * (2 * (size_t)p->nnodes + 1));
	if (!t)
		return -ENOMEM;
	int m = 0;
	for (int i = 0; i < p->nnodes; i++)
		if (shard_holds_memory(p, i)) {
			t[m++] = p->lo[i];
			t[m++] = p->hi[i];
		}
	qsort(t, (size_t)m, sizeof *t, shard_cmp_i64);
	int u = 0;
	for (int k = 0; k < m; k++)
		if (u == 0 || t[u - 1] != t[k])
			t[u++] = t[k];
	for (int i = 0; i < p->nnodes; i++) {
		seg_a[i] = seg_b[i] = 0;
		if (shard_holds_memory(p, i)) {
			seg_a[i] = find_i64(t, u, p->lo[i]);
			seg_b[i] = find_i64(t, u, p->hi[i]);
		}
	}
	free(t);
	return u > 1 ? u - 1 : 0;
}

void shard_least_usage(const struct shard_problem *p, const unsigned char *alive, int *choice)
{
	for (int i = 0; i < p->nnodes; i++) {
		const int64_t *u = p->usage + p->strat_off[i], *c = p->cost + p->strat_off[i];
		const unsigned char *al = alive ? alive + p->strat_off[i] : NULL;
		int best = -1;
		for (int q = 0; q < shard_problem_nstrat(p, i); q++)
			if (!(al && !al[q]) && (best < 0 || u[q] < u[best] || (u[q] == u[best] && c[q] < c[best])))
				best = q;
		choice[i] = best;
	}
}

int shard_infeasible(const struct shard_problem *p, const int *choice, struct shard_eval *out)
{
	char a[SHARD_I128_STRLEN];
	shard_evaluate(p, choice, out);
	return shard_errorf(
		-ENOSPC,
		"no assignment fits the usage limit %lld: even the least-usage strategies need %s at time %lld",
		(long long)p->usage_limit, shard_i128_str(out->peak_usage, a), (long long)out->peak_time);
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
