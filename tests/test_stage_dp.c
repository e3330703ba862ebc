/*
 * test_stage_dp.c: the stage DP (solvers/stage_dp.c): sub-mesh shapes, the
 * DP against brute force on seeded random small problems (every answer
 * re-checked here from the tables), balanced stages for identical layers,
 * error messages, and one timing line for a GPT-sized problem.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solvers/solvers.h"
#include "tests/tap.h"

static bool has(const char *s)
{
	bool ok = strstr(shard_error(), s) != NULL;
	if (!ok)
		TAP_DIAG("message was: %s", shard_error());
	return ok;
}

/* ---- sub-meshes ----------------------------------------------------------- */

static void check_submeshes(int nodes, int per_node, const char *want)
{
	int rows[32], cols[32], n = stage_submeshes(nodes, per_node, rows, cols, 32);
	char got[256] = "";
	for (int i = 0, o = 0; i < n && i < 32; i++)
		o += snprintf(got + o, sizeof got - (size_t)o, "%s(%d,%d)", i ? "," : "", rows[i], cols[i]);
	if (!TAP_OK(!strcmp(got, want), "sub-meshes of %dx%d: %s", nodes, per_node, got))
		TAP_DIAG("want %s", want);
}

/* ---- random problems ------------------------------------------------------ */

static uint64_t rng = 88172645463325252ull;

static uint64_t next_u64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double uniform(void)
{
	return (double)(next_u64() >> 11) / 9007199254740992.0;
}

static int below(int n)
{
	return (int)(next_u64() % (uint64_t)n);
}

/* A problem whose tables live here; fits() reads the ctx table. */
struct tables {
	struct stage_dp_problem p;
	int dev[16];
	double *t, *xfer;
	unsigned char *fit; /* [L][L][M][C][L] */
};

static bool fits_table(void *ctx, int l, int r, int m, int c, int after)
{
	const struct tables *tb = ctx;
	const struct stage_dp_problem *p = &tb->p;
	int L = p->nlayers;
	return tb->fit[((((size_t)l * L + r) * p->nmeshes + m) * p->nconfigs + c) * L + after];
}

static void random_problem(struct tables *tb, int kind)
{
	static const int clusters[3][2] = { { 1, 2 }, { 1, 4 }, { 2, 2 } };
	int rows[16], cols[16];
	const int *cl = clusters[below(3)];
	memset(tb, 0, sizeof *tb);
	struct stage_dp_problem *p = &tb->p;
	p->nlayers = 1 + below(8);
	p->nmeshes = stage_submeshes(cl[0], cl[1], rows, cols, 16);
	for (int m = 0; m < p->nmeshes; m++)
		tb->dev[m] = rows[m] * cols[m];
	p->mesh_devices = tb->dev;
	p->nconfigs = 1 + below(2);
	p->ndevices = cl[0] * cl[1];
	p->nmicro = 1 + below(8);
	p->max_stages = below(3) ? 0 : 1 + below(p->nlayers);
	/* a least (or, with max_stages, exact) stage count now and then;
	 * one the devices cannot take is checked in test_min_stages */
	int most = p->max_stages ? p->max_stages : p->nlayers;
	most = most < p->ndevices ? most : p->ndevices;
	p->min_stages = below(3) ? 0 : 1 + below(most);
	int L = p->nlayers, M = p->nmeshes, C = p->nconfigs;
	/* kind 0: layers of random weight, faster on more devices (pipelines
	 * pay off); 1: sparse (often infeasible); 2: small integers, so exact
	 * ties happen. */
	double unavailable = kind == 1 ? 0.75 : 0.15, w[8];
	for (int l = 0; l < L; l++)
		w[l] = 0.5 + uniform();
	size_t nt = (size_t)L * L * M * C;
	tb->t = malloc(sizeof *tb->t * nt);
	for (size_t k = 0; k < nt; k++) {
		int m = (int)(k / (size_t)C % (size_t)M), r = (int)(k / ((size_t)C * M) % (size_t)L);
		int l = (int)(k / ((size_t)C * M * L));
		double sum = 0;
		for (int j = l; j <= r; j++)
			sum += w[j];
		double scaled = sum / tb->dev[m] * (1 + 0.5 * tb->dev[m] * uniform() / p->ndevices);
		tb->t[k] = uniform() < unavailable ? INFINITY
			   : kind == 2             ? (double)(1 + below(4))
			   : kind == 0             ? scaled
						   : 0.1 + uniform();
	}
	if (below(2)) {
		tb->xfer = malloc(sizeof *tb->xfer * (size_t)L * M);
		for (int k = 0; k < L * M; k++)
			tb->xfer[k] = kind == 2 ? (double)below(2) : 0.2 * uniform();
		p->xfer = tb->xfer;
	}
	if (below(2)) {
		tb->fit = malloc(nt * (size_t)L);
		for (size_t k = 0; k < nt * (size_t)L; k++)
			tb->fit[k] = uniform() < (kind == 1 ? 0.5 : 0.8);
		p->fits = fits_table;
		p->ctx = tb;
	}
	p->t = tb->t;
}

static void tables_free(struct tables *tb)
{
	free(tb->t);
	free(tb->xfer);
	free(tb->fit);
}

/* Re-checks r against the tables: layers covered in order, every device
 * used, each stage's latency as the tables give it and fitting memory,
 * and step_time / t_max as the stages give them. *obj: the objective
 * recomputed here. */
static bool plan_ok(const struct stage_dp_problem *p, const struct stage_dp_result *r, double *obj)
{
	int L = p->nlayers, next = 0, devices = 0;
	double sum = 0, mx = 0;
	if (r->nstages < 1 || (p->max_stages && r->nstages > p->max_stages) || r->nstages < p->min_stages)
		return TAP_DIAG("%d stages", r->nstages), false;
	for (int i = 0; i < r->nstages; i++) {
		const struct stage_dp_stage *s = &r->stages[i];
		if (s->first != next || s->last < s->first || s->last >= L || s->mesh < 0 || s->mesh >= p->nmeshes ||
		    s->config < 0 || s->config >= p->nconfigs)
			return TAP_DIAG("stage %d: layers %d..%d mesh %d config %d", i, s->first, s->last, s->mesh,
					s->config),
			       false;
		double t = p->t[(((size_t)s->first * L + s->last) * p->nmeshes + s->mesh) * p->nconfigs + s->config];
		if (p->xfer && s->last < L - 1)
			t += p->xfer[s->last * p->nmeshes + s->mesh];
		if (!isfinite(t) || t != s->t)
			return TAP_DIAG("stage %d: t %.17g, tables say %.17g", i, s->t, t), false;
		if (p->fits && !p->fits(p->ctx, s->first, s->last, s->mesh, s->config, r->nstages - 1 - i))
			return TAP_DIAG("stage %d does not fit memory", i), false;
		next = s->last + 1;
		devices += p->mesh_devices[s->mesh];
		sum += t;
		mx = t > mx ? t : mx;
	}
	if (next != L || devices != p->ndevices)
		return TAP_DIAG("covers %d of %d layers on %d of %d devices", next, L, devices, p->ndevices), false;
	*obj = sum + (p->nmicro - 1) * mx;
	if (fabs(*obj - r->step_time) > 1e-12 * *obj || mx != r->t_max)
		return TAP_DIAG("step %.17g t_max %.17g, recomputed %.17g %.17g", r->step_time, r->t_max, *obj, mx),
		       false;
	return true;
}

static void test_random(int count)
{
	int solved = 0, nospace = 0;
	for (int i = 0; i < count; i++) {
		struct tables tb;
		random_problem(&tb, i % 3);
		struct stage_dp_result dp, bf;
		int rd = stage_dp_solve(&tb.p, &dp), rb = stage_dp_brute(&tb.p, &bf);
		bool ok = rd == rb;
		double od = 0, ob = 0;
		if (ok && rd == 0) {
			ok = plan_ok(&tb.p, &dp, &od) && plan_ok(&tb.p, &bf, &ob) &&
			     fabs(dp.step_time - bf.step_time) <= 1e-12 * bf.step_time && fabs(od - ob) <= 1e-12 * ob;
			solved++;
		} else if (ok) {
			ok = rd == -ENOSPC && dp.nstages == 0 && !dp.stages;
			nospace++;
		}
		TAP_OK(ok,
		       "random %d: L=%d meshes=%d configs=%d D=%d B=%d stages %d..%d%s%s: dp %d (%.6g, %d stages) "
		       "brute %d (%.6g)",
		       i, tb.p.nlayers, tb.p.nmeshes, tb.p.nconfigs, tb.p.ndevices, tb.p.nmicro, tb.p.min_stages,
		       tb.p.max_stages, tb.p.xfer ? " xfer" : "", tb.p.fits ? " fits" : "", rd, dp.step_time,
		       dp.nstages, rb, bf.step_time);
		stage_dp_result_free(&dp);
		stage_dp_result_free(&bf);
		tables_free(&tb);
	}
	TAP_OK(solved >= count / 4 && nospace >= count / 20, "random problems: %d solved, %d infeasible", solved,
	       nospace);
}

/* The best bound lies between the bisection's probes (bounds 1.5, 1.58,
 * 1.6, 2.9: probes 2.9, 1.58, 1.5), so only the ascending scan finds it:
 * layers 0 | 1..2 score 3.16 + 1.58 = 4.74, layers 0..1 | 2 score 3.1 +
 * 1.6 = 4.7, one 2-device stage 2.9 + 2.9 = 5.8. */
static void test_between_probes(void)
{
	static const int dev[2] = { 1, 2 };
	double t[3 * 3 * 2];
	for (int k = 0; k < 18; k++)
		t[k] = INFINITY;
	t[(0 * 3 + 0) * 2 + 0] = 1.58;
	t[(1 * 3 + 2) * 2 + 0] = 1.58;
	t[(0 * 3 + 1) * 2 + 0] = 1.5;
	t[(2 * 3 + 2) * 2 + 0] = 1.6;
	t[(0 * 3 + 2) * 2 + 1] = 2.9;
	struct stage_dp_problem p = {
		.nlayers = 3, .nmeshes = 2, .mesh_devices = dev, .nconfigs = 1, .ndevices = 2, .nmicro = 2, .t = t
	};
	struct stage_dp_result r, b;
	int rc = stage_dp_solve(&p, &r), rb = stage_dp_brute(&p, &b);
	TAP_OK(rc == 0 && rb == 0 && r.nstages == 2 && r.stages[0].last == 1 && r.step_time == b.step_time,
	       "best bound between the bisection's probes: %d stages, step %.17g (brute %.17g)", r.nstages, r.step_time,
	       b.step_time);
	stage_dp_result_free(&r);
	stage_dp_result_free(&b);
}

/* ---- identical layers ------------------------------------------------------- */

/* Layers of 1 s each on one device; 2 devices run 1.5x, 4 devices 2x as
 * fast: with B = 8 four one-device stages of equal size win. */
static void test_balanced(int L)
{
	static const int dev[3] = { 1, 2, 4 };
	static const double speedup[3] = { 1, 1.5, 2 };
	double *t = malloc(sizeof *t * (size_t)L * L * 3);
	for (int l = 0; l < L; l++)
		for (int r = 0; r < L; r++)
			for (int m = 0; m < 3; m++)
				t[((size_t)l * L + r) * 3 + m] = r < l ? INFINITY : (r - l + 1) / speedup[m];
	struct stage_dp_problem p = {
		.nlayers = L, .nmeshes = 3, .mesh_devices = dev, .nconfigs = 1, .ndevices = 4, .nmicro = 8, .t = t
	};
	struct stage_dp_result r;
	int rc = stage_dp_solve(&p, &r);
	bool ok = rc == 0 && r.nstages == 4;
	for (int i = 0; ok && i < r.nstages; i++)
		ok = r.stages[i].last - r.stages[i].first + 1 == L / 4 && r.stages[i].mesh == 0;
	TAP_OK(ok, "%d identical layers on 1x4, B=8: 4 stages of %d layers (rc %d, %d stages, step %g)", L, L / 4, rc,
	       r.nstages, r.step_time);
	TAP_NEAR(r.step_time, L + 7.0 * (L / 4), 1e-12, "%d identical layers: step time %d + 7 * %d", L, L, L / 4);
	stage_dp_result_free(&r);
	free(t);
}

static bool never_fits(void *ctx, int l, int r, int m, int c, int after)
{
	return false;
}

/* ---- a forced stage count ------------------------------------------------------- */

/* The layers of test_balanced(8) on 1x4 with exactly P stages: the free
 * optimum has 4, so each P is the constraint at work; P stages of 8 / P
 * layers (1 device each, except P = 1 on all 4) match brute force. */
static void test_exact_stages(void)
{
	enum { L = 8 };
	static const int dev[3] = { 1, 2, 4 };
	static const double speedup[3] = { 1, 1.5, 2 };
	double t[L * L * 3];
	for (int l = 0; l < L; l++)
		for (int r = 0; r < L; r++)
			for (int m = 0; m < 3; m++)
				t[(l * L + r) * 3 + m] = r < l ? INFINITY : (r - l + 1) / speedup[m];
	for (int P = 1; P <= 4; P++) {
		struct stage_dp_problem p = { .nlayers = L,
					      .nmeshes = 3,
					      .mesh_devices = dev,
					      .nconfigs = 1,
					      .ndevices = 4,
					      .nmicro = 8,
					      .t = t,
					      .min_stages = P,
					      .max_stages = P };
		struct stage_dp_result r, b;
		int rc = stage_dp_solve(&p, &r), rb = stage_dp_brute(&p, &b);
		double obj = 0;
		bool ok = rc == 0 && rb == 0 && r.nstages == P && b.nstages == P && plan_ok(&p, &r, &obj) &&
			  fabs(r.step_time - b.step_time) <= 1e-12 * b.step_time;
		TAP_OK(ok, "exactly %d stages of 8 identical layers on 1x4: rc %d, %d stages, step %g (brute %d, %g)",
		       P, rc, r.nstages, r.step_time, rb, b.step_time);
		stage_dp_result_free(&r);
		stage_dp_result_free(&b);
	}
	/* at least 3 (no upper bound): 3 is slower than 4, so 4 is kept */
	struct stage_dp_problem p = { .nlayers = L,
				      .nmeshes = 3,
				      .mesh_devices = dev,
				      .nconfigs = 1,
				      .ndevices = 4,
				      .nmicro = 8,
				      .t = t,
				      .min_stages = 3 };
	struct stage_dp_result r;
	int rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == 0 && r.nstages == 4, "at least 3 stages: the best has 4 (rc %d, %d stages)", rc, r.nstages);
	stage_dp_result_free(&r);
}

/* Stage counts the layers or the devices cannot take. */
static void test_min_stages_errors(void)
{
	static const int dev[2] = { 2, 4 };
	double t[3 * 3 * 2];
	for (int k = 0; k < 18; k++)
		t[k] = 1;
	struct stage_dp_problem p = { .nlayers = 3,
				      .nmeshes = 2,
				      .mesh_devices = dev,
				      .nconfigs = 1,
				      .ndevices = 4,
				      .nmicro = 2,
				      .t = t,
				      .min_stages = 4 };
	struct stage_dp_result r;
	int rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -EINVAL && has("at least 4 stages asked of 3 layers"), "more stages than layers: %s",
	       shard_error());
	p.min_stages = 3;
	p.max_stages = 2;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -EINVAL && has("min_stages 3, max_stages 2"), "min above max: %s", shard_error());
	p.max_stages = 3;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -EINVAL && has("4 devices is not a sum of exactly 3 sub-mesh sizes (2, 4)"),
	       "4 devices in exactly 3 stages of 2 or 4: %s", shard_error());
	rc = stage_dp_brute(&p, &r);
	TAP_OK(rc == -EINVAL && has("exactly 3"), "brute force, the same: %s", shard_error());
	p.min_stages = p.max_stages = 2;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == 0 && r.nstages == 2 && r.stages[0].mesh == 0 && r.stages[1].mesh == 0,
	       "exactly 2 stages: two 2-device sub-meshes (rc %d)", rc);
	stage_dp_result_free(&r);
	p.fits = never_fits;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -ENOSPC && has("in exactly 2 stages"), "nothing fits, exactly 2 stages: %s", shard_error());
}

/* ---- errors ------------------------------------------------------------------ */

static void test_errors(void)
{
	static const int dev[2] = { 2, 4 };
	double t[4] = { 1, 1, 1, 1 };
	struct stage_dp_problem p = {
		.nlayers = 1, .nmeshes = 2, .mesh_devices = dev, .nconfigs = 1, .ndevices = 4, .nmicro = 2, .t = t
	};
	struct stage_dp_result r;
	int rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == 0 && r.nstages == 1 && r.stages[0].mesh == 1, "valid base problem solves (rc %d)", rc);
	stage_dp_result_free(&r);

	p.nlayers = 0;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -EINVAL && has("nlayers is 0") && !r.stages, "nlayers 0: %s", shard_error());
	p.nlayers = 1;
	p.t = NULL;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -EINVAL && has("no latency table"), "NULL t: %s", shard_error());
	p.t = t;
	p.ndevices = 5;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -EINVAL && has("5 devices is not a sum") && has("2, 4"), "unreachable devices: %s", shard_error());
	rc = stage_dp_brute(&p, &r);
	TAP_OK(rc == -EINVAL && has("5 devices is not a sum"), "brute force, unreachable devices: %s", shard_error());
	p.ndevices = 4;
	t[1] = INFINITY;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -ENOSPC && has("no plan covers the 1 layers"), "no finite 4-device stage: %s", shard_error());
	t[1] = 1;
	p.fits = never_fits;
	rc = stage_dp_solve(&p, &r);
	TAP_OK(rc == -ENOSPC && has("exceeds device memory") && r.nstages == 0, "nothing fits memory: %s",
	       shard_error());
	TAP_OK(stage_submeshes(0, 8, NULL, NULL, 0) == -EINVAL && has("0 nodes x 8 devices"), "sub-meshes of 0x8: %s",
	       shard_error());
}

/* ---- timing ------------------------------------------------------------------ */

static bool fits_gpt(void *ctx, int l, int r, int m, int c, int after)
{
	const int *dev = ctx;
	/* Weights of the layers split over the mesh plus after + 1
	 * micro-batches of activations, in units of a device's memory. */
	return (r - l + 1) * (1.0 / dev[m] + 0.02 * (after + 1)) <= 3.0;
}

static void test_timing(void)
{
	enum { L = 32, C = 3 };
	rng = 2463534242ull;
	int rows[8], cols[8], dev[8], M = stage_submeshes(2, 8, rows, cols, 8);
	for (int m = 0; m < M; m++)
		dev[m] = rows[m] * cols[m];
	double *t = malloc(sizeof *t * (size_t)L * L * M * C), xfer[L * 8];
	for (int l = 0; l < L; l++)
		for (int r = 0; r < L; r++)
			for (int m = 0; m < M; m++)
				for (int c = 0; c < C; c++) {
					double eff = 1 - 0.05 * c * (dev[m] > 1) - 0.02 * dev[m] + 0.01 * uniform();
					t[(((size_t)l * L + r) * M + m) * C + c] = r < l ? INFINITY
											 : (r - l + 1) * 0.01 /
												   (dev[m] * eff);
				}
	for (int k = 0; k < L * M; k++)
		xfer[k] = 0.0005;
	struct stage_dp_problem p = { .nlayers = L,
				      .nmeshes = M,
				      .mesh_devices = dev,
				      .nconfigs = C,
				      .ndevices = 16,
				      .nmicro = 64,
				      .t = t,
				      .xfer = xfer,
				      .fits = fits_gpt,
				      .ctx = dev };
	struct stage_dp_result r;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int rc = stage_dp_solve(&p, &r);
	clock_gettime(CLOCK_MONOTONIC, &b);
	TAP_DIAG("timing: L=%d, 2x8 (%d meshes), %d configs, B=64: rc %d, %d stages, step %.6g s, %lld bounds "
		 "tried, %.3f s",
		 L, M, C, rc, r.nstages, r.step_time, r.evaluated,
		 (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec));
	stage_dp_result_free(&r);
	free(t);
}

int main(void)
{
	check_submeshes(1, 8, "(1,1),(1,2),(1,4),(1,8)");
	check_submeshes(2, 8, "(1,1),(1,2),(1,4),(1,8),(2,8)");
	check_submeshes(4, 8, "(1,1),(1,2),(1,4),(1,8),(2,8),(3,8),(4,8)");
	check_submeshes(1, 6, "(1,1),(1,2),(1,4),(1,6)");
	check_submeshes(1, 1, "(1,1)");
	int rows[2], cols[2];
	TAP_OK(stage_submeshes(4, 8, rows, cols, 2) == 2 && rows[1] == 1 && cols[1] == 2,
	       "sub-meshes: at most max are written");
	/* STAGE_DP_RANDOM=N: a longer run. */
	test_random(getenv("STAGE_DP_RANDOM") ? atoi(getenv("STAGE_DP_RANDOM")) : 200);
	test_between_probes();
	test_balanced(8);
	test_balanced(12);
	test_exact_stages();
	test_min_stages_errors();
	test_errors();
	test_timing();
	return tap_done();
}
