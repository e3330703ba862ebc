/*
 * stage_dp.c: Alpa's inter-operator stage construction over plain cost
 * tables. Cut L layers into contiguous stages, give each stage a sub-mesh
 * kind and a logical-mesh config so that the stages use exactly every
 * device, and minimize the pipeline's step time for B micro-batches,
 *   T = sum_i t_i + (B - 1) max_i t_i          (GPipe and 1F1B alike).
 *
 * Algorithm (FORMULATIONS.md, "Stage DP"): the candidate bounds t_max are
 * the distinct finite stage latencies (table plus transfer). For one bound,
 *   F(0, L, 0) = 0,
 *   F(s, l, d) = min over r >= l, mesh m, config c of
 *                lat(l, r, m, c) + F(s - 1, r + 1, d - |m|)
 * over stages no slower than t_max that fit memory with s - 1 stages after
 * them; the bound's plan is the argmin of min_s F(s, 0, D) over the stage
 * counts allowed (min_stages <= s <= S), scored by its
 * own sum plus (B - 1) times its actual slowest stage. The optimum's slowest
 * stage is one of the bounds, and at that bound the DP's plan scores no
 * worse, so the best over bounds is exact. Feasibility only grows with the
 * bound: the largest bound runs first (it also gives S_min, the least sum of
 * any plan), bisection finds the smallest feasible bound, then bounds ascend
 * until S_min + (B - 1) t_max >= the best T, which no later bound can beat
 * (Alpa's rule with 0 for S_min). Time O(#bounds L^2 S D meshes configs),
 * memory O(S L D + L^2 meshes configs S).
 *
 * Ties, deterministically: equal step times go to the smaller slowest stage,
 * then to fewer stages, then to the plan found first (largest bound, then
 * the bisection's probes, then ascending bounds). Within one bound, among
 * equal sums, the DP keeps fewer stages, then the shorter first stage, its
 * lower mesh index, its lower config (and likewise for the later stages).
 *
 * Example: 2 layers, meshes of 1 and 2 devices, D = 2, B = 4, each layer
 * 1 s on one device, both layers 1.5 s on two: two stages score
 * 2 + 3 * 1 = 5, one stage 1.5 + 3 * 1.5 = 6, so the DP splits.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solvers/shard_internal.h"

int stage_submeshes(int nodes, int per_node, int *rows, int *cols, int max)
{
	if (nodes < 1 || per_node < 1)
		return shard_errorf(-EINVAL, "sub-meshes: a cluster of %d nodes x %d devices, expected at least 1 x 1",
				    nodes, per_node);
	int n = 0;
	for (long long w = 1;; w *= 2) {
		int c = w < per_node ? (int)w : per_node;
		if (n < max) {
			rows[n] = 1;
			cols[n] = c;
		}
		n++;
		if (c == per_node)
			break;
	}
	for (int h = 2; h <= nodes; h++, n++)
		if (n < max) {
			rows[n] = h;
			cols[n] = per_node;
		}
	return n < max ? n : max;
}

/* The latency (s) of stage (l, r, m, c) with its outgoing transfer, or
 * INFINITY when the table says not available, the transfer is negative or
 * not finite, or the mesh is larger than the cluster. */
static double stage_lat(const struct stage_dp_problem *p, int l, int r, int m, int c)
{
	int L = p->nlayers;
	double t = p->t[(((size_t)l * L + r) * p->nmeshes + m) * p->nconfigs + c];
	if (p->xfer && r < L - 1) {
		double x = p->xfer[(size_t)r * p->nmeshes + m];
		if (!(x >= 0))
			return INFINITY;
		t += x;
	}
	if (!(t >= 0) || !isfinite(t) || p->mesh_devices[m] > p->ndevices)
		return INFINITY;
	return t;
}

/* The fewest stages a plan may have. */
static int least(const struct stage_dp_problem *p)
{
	return p->min_stages > 1 ? p->min_stages : 1;
}

/* The stage counts allowed, as text: "at most 4", "exactly 2", "2 to 4". */
static const char *counts_str(int lo, int hi, char *buf, size_t n)
{
	if (lo <= 1)
		snprintf(buf, n, "at most %d", hi);
	else if (lo == hi)
		snprintf(buf, n, "exactly %d", hi);
	else
		snprintf(buf, n, "%d to %d", lo, hi);
	return buf;
}

/* Whether ndevices is a sum of k sub-mesh sizes for some allowed stage
 * count k (coin change over exact counts); -ENOMEM. */
static int devices_split(const struct stage_dp_problem *p, int S)
{
	size_t D = (size_t)p->ndevices, row = D + 1;
	unsigned char *can = calloc(((size_t)S + 1) * row, 1); /* can[k * row + d]: d is a sum of k sizes */
	if (!can)
		return shard_errorf(-ENOMEM, "stage DP: out of memory");
	can[0] = 1;
	for (int k = 1; k <= S; k++)
		for (size_t d = 1; d <= D; d++)
			for (int m = 0; m < p->nmeshes && !can[k * row + d]; m++)
				if ((size_t)p->mesh_devices[m] <= d)
					can[k * row + d] = can[(k - 1) * row + d - (size_t)p->mesh_devices[m]];
	int ok = 0;
	for (int k = least(p); k <= S && !ok; k++)
		ok = can[k * row + D];
	free(can);
	return ok;
}

/* Checks p and returns 0 with *smax the stage limit, or -EINVAL. */
static int check(const struct stage_dp_problem *p, int *smax)
{
	if (!p)
		return shard_errorf(-EINVAL, "stage DP: no problem given");
	if (p->nlayers < 1)
		return shard_errorf(-EINVAL, "stage DP: nlayers is %d, expected at least 1 layer", p->nlayers);
	if (p->nmeshes < 1 || !p->mesh_devices)
		return shard_errorf(-EINVAL, "stage DP: %d sub-mesh kinds, expected at least 1 with mesh_devices set",
				    p->nmeshes);
	for (int m = 0; m < p->nmeshes; m++)
		if (p->mesh_devices[m] < 1)
			return shard_errorf(-EINVAL, "stage DP: sub-mesh %d has %d devices, expected at least 1", m,
					    p->mesh_devices[m]);
	if (p->nconfigs < 1 || p->ndevices < 1 || p->nmicro < 1 || p->max_stages < 0)
		return shard_errorf(-EINVAL,
				    "stage DP: nconfigs %d, ndevices %d, nmicro %d, max_stages %d: expected the first "
				    "three at least 1 and max_stages at least 0",
				    p->nconfigs, p->ndevices, p->nmicro, p->max_stages);
	if (!p->t)
		return shard_errorf(-EINVAL, "stage DP: no latency table (t is NULL)");
	if (p->min_stages < 0 || (p->max_stages && p->min_stages > p->max_stages))
		return shard_errorf(-EINVAL,
				    "stage DP: min_stages %d, max_stages %d: expected 0 <= min_stages <= "
				    "max_stages (or max_stages 0)",
				    p->min_stages, p->max_stages);
	if (p->min_stages > p->nlayers)
		return shard_errorf(-EINVAL,
				    "stage DP: at least %d stages asked of %d layers (a stage holds at "
				    "least one layer)",
				    p->min_stages, p->nlayers);
	int L = p->nlayers, S = p->max_stages && p->max_stages < L ? p->max_stages : L;
	double cells = (double)L * L * p->nmeshes * p->nconfigs * S + (double)(S + 1) * (L + 1) * (p->ndevices + 1);
	if (cells > 1e10)
		return shard_errorf(-EINVAL, "stage DP: %d layers, %d meshes, %d configs, %d devices: tables too large",
				    L, p->nmeshes, p->nconfigs, p->ndevices);
	int ok = devices_split(p, S);
	if (ok < 0)
		return ok;
	if (!ok) {
		char sizes[128], counts[48];
		int o = 0;
		for (int m = 0; m < p->nmeshes && o < (int)sizeof sizes - 16; m++)
			o += snprintf(sizes + o, sizeof sizes - (size_t)o, "%s%d", m ? ", " : "", p->mesh_devices[m]);
		return shard_errorf(-EINVAL,
				    "stage DP: %d devices is not a sum of %s sub-mesh sizes (%s); a plan must "
				    "use every device",
				    p->ndevices, counts_str(least(p), S, counts, sizeof counts), sizes);
	}
	*smax = S;
	return 0;
}

/* T of a plan: its sum plus (B - 1) times its slowest stage (*tmax). */
static double objective(const struct stage_dp_stage *st, int n, int nmicro, double *tmax)
{
	double sum = 0, mx = 0;
	for (int i = 0; i < n; i++) {
		sum += st[i].t;
		mx = st[i].t > mx ? st[i].t : mx;
	}
	*tmax = mx;
	return sum + (double)(nmicro - 1) * mx;
}

static bool better(double step, double tmax, int n, const struct stage_dp_result *best)
{
	if (!best->nstages || step != best->step_time)
		return !best->nstages || step < best->step_time;
	return tmax < best->t_max || (tmax == best->t_max && n < best->nstages);
}

/* Copies plan st into r when it beats r's plan. */
static void keep(struct stage_dp_result *r, const struct stage_dp_stage *st, int n, int nmicro)
{
	double tmax, step = objective(st, n, nmicro, &tmax);
	if (!better(step, tmax, n, r))
		return;
	memcpy(r->stages, st, sizeof *st * (size_t)n);
	r->nstages = n;
	r->step_time = step;
	r->t_max = tmax;
}

struct dp {
	const struct stage_dp_problem *p;
	int L, M, C, D, S;
	int lo;                     /* the fewest stages a plan may have */
	int dmin, dmax;             /* the smallest and largest sub-mesh's devices */
	double *lat;                /* [L][L][M][C]: stage_lat, INFINITY when unavailable */
	unsigned char *fit;         /* [L][L][M][C][S]: fits with `after` stages after; NULL: all fit */
	double *f;                  /* [S+1][L+1][D+1]: F(s, l, d) for the current bound */
	int *arg;                   /* same shape: r * M + m of the first stage */
	struct stage_dp_stage *cur; /* [S]: the current bound's plan */
	int ncur;
};

static size_t fidx(const struct dp *w, int s, int l, int d)
{
	return ((size_t)s * (w->L + 1) + l) * (w->D + 1) + d;
}

static int dp_init(struct dp *w, const struct stage_dp_problem *p, int S)
{
	*w = (struct dp){
		.p = p, .L = p->nlayers, .M = p->nmeshes, .C = p->nconfigs, .D = p->ndevices, .S = S, .lo = least(p)
	};
	size_t nlat = (size_t)w->L * w->L * w->M * w->C, nf = fidx(w, S + 1, 0, 0);
	w->lat = malloc(sizeof *w->lat * nlat);
	w->f = malloc(sizeof *w->f * nf);
	w->arg = malloc(sizeof *w->arg * nf);
	w->cur = malloc(sizeof *w->cur * (size_t)S);
	w->dmin = w->dmax = p->mesh_devices[0];
	for (int m = 1; m < w->M; m++) {
		w->dmin = p->mesh_devices[m] < w->dmin ? p->mesh_devices[m] : w->dmin;
		w->dmax = p->mesh_devices[m] > w->dmax ? p->mesh_devices[m] : w->dmax;
	}
	if (p->fits)
		w->fit = calloc(nlat * (size_t)S, 1);
	if (!w->lat || !w->f || !w->arg || !w->cur || (p->fits && !w->fit))
		return shard_errorf(-ENOMEM, "stage DP: out of memory");
	for (int l = 0; l < w->L; l++)
		for (int r = 0; r < w->L; r++)
			for (int m = 0; m < w->M; m++)
				for (int c = 0; c < w->C; c++) {
					size_t k = (((size_t)l * w->L + r) * w->M + m) * w->C + c;
					w->lat[k] = r < l ? INFINITY : stage_lat(p, l, r, m, c);
					for (int a = 0; w->fit && a < S && isfinite(w->lat[k]); a++)
						w->fit[k * S + a] = p->fits(p->ctx, l, r, m, c, a);
				}
	return 0;
}

static void dp_free(struct dp *w)
{
	free(w->lat);
	free(w->fit);
	free(w->f);
	free(w->arg);
	free(w->cur);
}

/* The fastest config of stage (l, r, m) within tm that fits (when memory)
 * with `after` stages after it: its latency and *cbest, or INFINITY. */
static double best_config(const struct dp *w, int l, int r, int m, int after, double tm, bool memory, int *cbest)
{
	size_t k = (((size_t)l * w->L + r) * w->M + m) * w->C;
	double best = INFINITY;
	for (int c = 0; c < w->C; c++) {
		double t = w->lat[k + c];
		if (t <= tm && t < best && (!memory || !w->fit || w->fit[(k + c) * w->S + after])) {
			best = t;
			*cbest = c;
		}
	}
	return best;
}

/* Runs the DP for bound tm; on success the plan is in w->cur and *sum is
 * its F value. Returns whether any plan exists. */
static bool dp_run(struct dp *w, double tm, bool memory, double *sum)
{
	int L = w->L, M = w->M, D = w->D, c = 0;
	for (size_t i = 0, nf = fidx(w, w->S + 1, 0, 0); i < nf; i++)
		w->f[i] = INFINITY;
	w->f[fidx(w, 0, L, 0)] = 0;
	/* F(s, l, .) is read only where the stages before l can number
	 * lo - s or more, one layer each at least: l >= lo - s */
	for (int s = 1; s <= w->S; s++)
		for (int l = w->lo > s ? w->lo - s : 0; l <= L - s; l++)
			for (int r = s == 1 ? L - 1 : l; r <= L - s; r++)
				for (int m = 0; m < M; m++) {
					double t = best_config(w, l, r, m, s - 1, tm, memory, &c);
					if (t > tm)
						continue;
					/* F(s - 1, ..., d') is finite only for the d' that
					 * s - 1 sub-meshes can make up */
					int dev = w->p->mesh_devices[m];
					long long lo = dev + (long long)(s - 1) * w->dmin;
					long long hi = dev + (long long)(s - 1) * w->dmax;
					const double *next = w->f + fidx(w, s - 1, r + 1, 0);
					double *f = w->f + fidx(w, s, l, 0);
					int *arg = w->arg + fidx(w, s, l, 0);
					for (long long d = lo; d <= D && d <= hi; d++)
						if (t + next[d - dev] < f[d]) {
							f[d] = t + next[d - dev];
							arg[d] = r * M + m;
						}
				}
	int sbest = 0;
	for (int s = w->lo; s <= w->S; s++)
		if (w->f[fidx(w, s, 0, D)] < (sbest ? w->f[fidx(w, sbest, 0, D)] : INFINITY))
			sbest = s;
	if (!sbest)
		return false;
	*sum = w->f[fidx(w, sbest, 0, D)];
	int l = 0, d = D;
	w->ncur = 0;
	for (int s = sbest; s > 0; s--) {
		int a = w->arg[fidx(w, s, l, d)], r = a / M, m = a % M;
		double t = best_config(w, l, r, m, s - 1, tm, memory, &c);
		w->cur[w->ncur++] = (struct stage_dp_stage){ .first = l, .last = r, .mesh = m, .config = c, .t = t };
		l = r + 1;
		d -= w->p->mesh_devices[m];
	}
	return true;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The distinct finite latencies, ascending, into a malloc'd *out. */
static int candidates(const struct dp *w, double **out)
{
	size_t nlat = (size_t)w->L * w->L * w->M * w->C, n = 0;
	double *v = malloc(sizeof *v * (nlat ? nlat : 1));
	if (!v)
		return shard_errorf(-ENOMEM, "stage DP: out of memory");
	for (size_t k = 0; k < nlat; k++)
		if (isfinite(w->lat[k]))
			v[n++] = w->lat[k];
	qsort(v, n, sizeof *v, cmp_double);
	size_t u = 0;
	for (size_t k = 0; k < n; k++)
		if (!u || v[u - 1] != v[k])
			v[u++] = v[k];
	*out = v;
	return (int)u;
}

static int infeasible(struct dp *w, int ncand, double tm)
{
	const struct stage_dp_problem *p = w->p;
	double sum;
	char counts[48];
	counts_str(w->lo, w->S, counts, sizeof counts);
	if (!ncand)
		return shard_errorf(-ENOSPC,
				    "stage DP: no stage has a finite latency on a sub-mesh of at most %d "
				    "devices",
				    p->ndevices);
	if (w->fit && dp_run(w, tm, false, &sum))
		return shard_errorf(-ENOSPC,
				    "stage DP: every plan of %d layers in %s stages on exactly %d devices "
				    "exceeds device memory (fits() rejects a stage of each)",
				    p->nlayers, counts, p->ndevices);
	return shard_errorf(-ENOSPC,
			    "stage DP: no plan covers the %d layers in %s stages with finite latencies on "
			    "exactly %d devices",
			    p->nlayers, counts, p->ndevices);
}

/* Clears r and checks p; *S: the most stages. */
static int begin(const struct stage_dp_problem *p, struct stage_dp_result *r, int *S)
{
	if (!r)
		return shard_errorf(-EINVAL, "stage DP: no result given");
	memset(r, 0, sizeof *r);
	return check(p, S);
}

int stage_dp_solve(const struct stage_dp_problem *p, struct stage_dp_result *r)
{
	int S, rc = begin(p, r, &S);
	if (rc)
		return rc;
	struct dp w;
	double *cand = NULL, smin, sum;
	unsigned char *done = NULL;
	int n = 0;
	if ((rc = dp_init(&w, p, S)))
		goto out;
	if ((n = candidates(&w, &cand)) < 0) {
		rc = n;
		goto out;
	}
	done = calloc((size_t)n + 1, 1);
	r->stages = malloc(sizeof *r->stages * (size_t)S);
	if (!done || !r->stages) {
		rc = shard_errorf(-ENOMEM, "stage DP: out of memory");
		goto out;
	}
	r->evaluated += n > 0;
	if (!n || !dp_run(&w, cand[n - 1], true, &smin)) {
		rc = infeasible(&w, n, n ? cand[n - 1] : 0);
		goto out;
	}
	keep(r, w.cur, w.ncur, p->nmicro);
	done[n - 1] = 1;
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		r->evaluated++;
		done[mid] = 1;
		if (dp_run(&w, cand[mid], true, &sum)) {
			keep(r, w.cur, w.ncur, p->nmicro);
			hi = mid;
		} else {
			lo = mid + 1;
		}
	}
	for (int k = lo; k < n && smin + (double)(p->nmicro - 1) * cand[k] < r->step_time; k++) {
		if (done[k])
			continue;
		r->evaluated++;
		if (dp_run(&w, cand[k], true, &sum))
			keep(r, w.cur, w.ncur, p->nmicro);
	}
out:
	dp_free(&w);
	free(cand);
	free(done);
	if (rc) {
		free(r->stages);
		memset(r, 0, sizeof *r);
	}
	return rc;
}

void stage_dp_result_free(struct stage_dp_result *r)
{
	if (!r)
		return;
	free(r->stages);
	memset(r, 0, sizeof *r);
}

struct brute {
	const struct stage_dp_problem *p;
	int S;
	struct stage_dp_stage *cur;
	struct stage_dp_result *r;
};

/* Every plan of layers l.. given n stages on d devices so far. */
static void brute_rec(struct brute *b, int l, int n, int d)
{
	const struct stage_dp_problem *p = b->p;
	if (l == p->nlayers) {
		if (d != p->ndevices || n < least(p))
			return;
		b->r->evaluated++;
		for (const struct stage_dp_stage *s = b->cur; p->fits && s < b->cur + n; s++)
			if (!p->fits(p->ctx, s->first, s->last, s->mesh, s->config, n - 1 - (int)(s - b->cur)))
				return;
		keep(b->r, b->cur, n, p->nmicro);
		return;
	}
	if (n == b->S)
		return;
	for (int r = l; r < p->nlayers; r++)
		for (int m = 0; m < p->nmeshes; m++)
			for (int c = 0; c < p->nconfigs; c++) {
				double t = stage_lat(p, l, r, m, c);
				int dev = p->mesh_devices[m];
				if (d + dev > p->ndevices || !isfinite(t))
					continue;
				b->cur[n] = (struct stage_dp_stage){ l, r, m, c, t };
				brute_rec(b, r + 1, n + 1, d + dev);
			}
}

int stage_dp_brute(const struct stage_dp_problem *p, struct stage_dp_result *r)
{
	int S, rc = begin(p, r, &S);
	if (rc)
		return rc;
	struct brute b = { .p = p, .S = S, .r = r, .cur = malloc(sizeof *b.cur * (size_t)S) };
	r->stages = malloc(sizeof *r->stages * (size_t)S);
	if (!b.cur || !r->stages)
		rc = shard_errorf(-ENOMEM, "stage DP: out of memory");
	else
		brute_rec(&b, 0, 0, 0);
	if (!rc && !r->nstages)
		rc = shard_errorf(-ENOSPC, "stage DP (brute force): no plan of the %d layers fits", p->nlayers);
	free(b.cur);
	if (rc) {
		free(r->stages);
		memset(r, 0, sizeof *r);
	}
	return rc;
}
