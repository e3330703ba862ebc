/*
 * test_inter.c: layer clustering and the inter-op pass (the automatic
 * plan) on generated models:
 *   - a GPT of identical blocks cuts at block boundaries, where one
 *     activation [batch, seq, hidden] crosses, into layers of equal FLOPs;
 *   - a model that fits one device gets one stage (no pipeline), and a
 *     pipeline is never chosen where one stage is as fast;
 *   - a cluster too small gets "does not fit" with the memory found and
 *     the limit; a batch the micro-batches cannot split gets the nearest
 *     valid batches;
 *   - a forced stage count and logical mesh (inter_opts.stages, mesh0 x
 *     mesh1) are what the plan has, and requests the cluster or the model
 *     cannot take are refused naming the option and why;
 *   - the pass held to a plan's choices (stages, mesh, micro-batches,
 *     schedule, recomputation, ZeRO) gives that plan: the automatic plan
 *     again when held to its own, and with manual_tp (mesh dp x tp) a
 *     manual Megatron plan, whose pcc report (report_auto.c's wi_held) is
 *     that plan's step time and memory;
 *   - a Wide-ResNet's layer cuts never split a fused elementwise chain,
 *     its per-layer costs add up to the stage solved as one layer, and its
 *     automatic plan is at least as fast as data parallelism;
 *   - models with nothing to split or compute plan too: an ONNX model
 *     without inputs (no batch dimension: one sample) and a graph whose
 *     output is its input (no nodes: one empty layer).
 *
 * Usage: test_inter MODELGEN (the pcc-modelgen executable).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/search/inter_internal.h"
#include "compiler/frontend/onnx_internal.h"
#include "compiler/report/report_internal.h"
#include "tap.h"

static const char *modelgen;
static char tmpdir[] = "/tmp/pcc-test-inter-XXXXXX";

/* path of a generated model (written once per name). */
static const char *generated(const char *model, const char *extra, char *path, size_t n)
{
	char cmd[1024];
	snprintf(path, n, "%s/%s.onnx", tmpdir, model);
	snprintf(cmd, sizeof cmd, "'%s' %s -o '%s' %s >/dev/null", modelgen, model, path, extra);
	if (system(cmd) != 0) {
		TAP_DIAG("failed: %s", cmd);
		return NULL;
	}
	return path;
}

static struct ir_graph *import(const char *path)
{
	struct ir_graph *g = path ? onnx_import(path, NULL, NULL) : NULL;
	if (path && !g)
		TAP_DIAG("%s", ir_error());
	return g;
}

static void test_cluster_gpt(void)
{
	char path[256];
	enum { B = 2, S = 64, H = 768, BLOCKS = 6 };
	struct ir_graph *g = import(
		generated("gpt3-125m", "--batch 2 --seq 64 --layers 6 --vocab 64", path, sizeof path));
	if (!TAP_OK(g, "GPT (6 blocks) generated and imported"))
		return;
	struct cluster_opts o;
	struct cluster_result r;
	cluster_opts_init(&o);
	o.layers = BLOCKS;
	int rc = cluster_layers(g, &o, &r);
	double act = (double)B * S * H * 4; /* one f32 activation */
	TAP_OK(rc == 0 && r.nlayers == BLOCKS, "6 layers asked, 6 given (%s)", rc ? ir_error() : "");
	if (rc == 0) {
		TAP_OK(r.max_cut == act && r.sum_cut == (BLOCKS - 1) * act,
		       "every cut crosses one activation: max %.0f, sum %.0f bytes (want %.0f, %.0f)", r.max_cut,
		       r.sum_cut, act, (BLOCKS - 1) * act);
		/* the blocks between the first (embeddings) and last (head) are identical */
		bool same = true;
		for (int l = 2; l < BLOCKS - 1; l++)
			same &= fabs(r.flops[l] - r.flops[1]) <= 1e-9 * r.flops[1];
		TAP_OK(same && r.first[0] == 0 && r.first[BLOCKS] == ir_graph_nnodes(g),
		       "inner layers have equal FLOPs (%.4g) and the layers cover all %d nodes", r.flops[1],
		       ir_graph_nnodes(g));
		cluster_result_free(&r);
	}
	/* automatic: a third of the heavy ops, capped */
	o.layers = 0;
	o.max_layers = 4;
	rc = cluster_layers(g, &o, &r);
	TAP_OK(rc == 0 && r.nlayers == 4 && r.max_cut <= 2 * act,
	       "automatic layer count respects max_layers (%d) and cuts where little crosses (max %.0f)",
	       rc ? -1 : r.nlayers, rc ? 0 : r.max_cut);
	if (rc == 0)
		cluster_result_free(&r);
	o.layers = 100000;
	rc = cluster_layers(g, &o, &r);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), "100000 layers asked"), "too many layers: %s", ir_error());
	ir_graph_free(g);
}

struct loader {
	const char *path;
};

static struct ir_graph *load_static(void *ctx, int64_t b)
{
	(void)b;
	return onnx_import(((struct loader *)ctx)->path, NULL, NULL);
}

static void test_one_stage(void)
{
	char path[256];
	struct loader ld = { generated("gpt3-125m", "--batch 8 --seq 128 --layers 4", path, sizeof path) };
	struct cost_cluster c;
	struct inter_opts o;
	struct inter_plan p;
	if (!TAP_OK(ld.path && cost_cluster_parse("1x8:v100", &c) == 0, "small GPT and cluster ready"))
		return;
	inter_opts_init(&o);
	o.train = true;
	o.load = load_static;
	o.ctx = &ld;
	o.static_batch = 8;
	int rc = inter_pass(&c, &o, &p);
	TAP_OK(rc == 0 && p.nstages == 1 && p.micro == 1 && p.stages[0].rows * p.stages[0].cols == 8,
	       "a small model, one micro-batch: one stage on all 8 devices, no pipeline (%s)", rc ? ir_error() : "");
	if (rc == 0) {
		TAP_OK(p.step_time > 0 && p.mfu > 0 && p.mfu < 1 && p.mem_peak <= p.mem_limit,
		       "step %.3f ms, MFU %.3f, peak %.3f GiB within the limit", p.step_time * 1e3, p.mfu,
		       p.mem_peak / (1 << 30));
		inter_plan_free(&p);
	}
	/* batch not a multiple of the model's (static) batch */
	o.batch = 20;
	rc = inter_pass(&c, &o, &p);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), "nearest valid are 16 and 24"), "batch 20 of 8s: %s", ir_error());
}

static void test_does_not_fit(void)
{
	char path[256];
	struct loader ld = { generated("gpt3-6.7b", "--batch 1 --seq 512 --layers 16", path, sizeof path) };
	struct cost_cluster c;
	struct inter_opts o;
	struct inter_plan p;
	if (!TAP_OK(ld.path && cost_cluster_parse("1x2:v100-16g", &c) == 0, "GPT 6.7B (16 blocks), 2 V100s"))
		return;
	inter_opts_init(&o);
	o.train = true;
	o.load = load_static;
	o.ctx = &ld;
	o.static_batch = 1;
	int rc = inter_pass(&c, &o, &p);
	TAP_OK(rc == -ENOSPC && strstr(ir_error(), "does not fit cluster 1x2:v100-16g") &&
		       strstr(ir_error(), "GiB per device") && strstr(ir_error(), "as a pipeline at least"),
	       "too small a cluster: %s", ir_error());
	if (rc == 0)
		inter_plan_free(&p);
}

struct batch_loader {
	const char *path;
	char name[64];
};

static struct ir_graph *load_batch(void *ctx, int64_t b)
{
	struct batch_loader *l = ctx;
	return onnx_import_batch(l->path, NULL, l->name, b);
}

/* Generated model `model` with a symbolic batch (ld) and cluster c. */
static bool symbolic(const char *model, const char *cluster, char *path, size_t n, struct batch_loader *ld,
		     struct cost_cluster *c)
{
	int64_t sb = 0;
	*ld = (struct batch_loader){ generated(model, "", path, n), "" };
	return ld->path && cost_cluster_parse(cluster, c) == 0 &&
	       onnx_batch_dim(ld->path, NULL, ld->name, sizeof ld->name, &sb) == 0 && ld->name[0];
}

/* pcc report's what-if of manual plan `plan` (wi_held). */
static int manual_report(const char *path, int64_t batch, const struct cost_cluster *c, const char *plan,
			 struct whatif *w)
{
	static struct cost_calib cal;
	struct wi_request q;
	cost_calib_init(&cal);
	wi_request_init(&q);
	q.model = path;
	q.cal = &cal;
	q.batch = batch;
	q.manual = true;
	snprintf(q.label, sizeof q.label, "%s", plan);
	int rc = report_plan_parse(plan, &q.plan);
	return rc < 0 ? rc : wi_eval(&q, c, w);
}

/* The fastest of the manual plans (n of them) that fits within mem_limit
 * per device, its plan in best_s; 1e30 when none does. */
static double best_manual(const char *path, int64_t batch, const struct cost_cluster *c, double mem_limit,
			  char (*plans)[96], int n, char *best_s)
{
	double best = 1e30;
	snprintf(best_s, 96, "none");
	for (int i = 0; i < n; i++) {
		struct whatif w;
		if (manual_report(path, batch, c, plans[i], &w) < 0) {
			TAP_DIAG("%s: %s", plans[i], ir_error());
			continue;
		}
		if (w.fits && w.mem_peak <= mem_limit && w.t_step < best) {
			best = w.t_step;
			snprintf(best_s, 96, "%s", plans[i]);
		}
		wi_free(&w);
	}
	return best;
}

/* The automatic plan against every manual Megatron plan the report can
 * evaluate (dp x tp x pp = 8, ZeRO 0/1, recomputation, micro-batches
 * searched) that fits the same memory budget: the same cost model, and
 * the search's space holds each of them, so the automatic plan must be at
 * least as fast as the best. */
static void test_versus_manual(void)
{
	char path[256];
	struct batch_loader ld;
	struct cost_cluster c;
	if (!TAP_OK(symbolic("gpt3-1.3b", "1x8:v100", path, sizeof path, &ld, &c),
		    "GPT-3 1.3B with a symbolic batch, 8 V100s"))
		return;
	struct inter_opts o;
	struct inter_plan p;
	inter_opts_init(&o);
	o.train = true;
	o.batch = 32;
	o.load = load_batch;
	o.ctx = &ld;
	if (!TAP_OK(inter_pass(&c, &o, &p) == 0, "automatic plan: %s", ir_error()))
		return;
	char plans[64][96], best_s[96];
	int n = 0;
	for (int tp = 1; tp <= 8; tp *= 2)
		for (int pp = 1; tp * pp <= 8; pp *= 2)
			for (int zero = 0; zero <= 1; zero++)
				for (int rc = 0; rc <= 1; rc++)
					snprintf(plans[n++], sizeof plans[0], "dp=%d,tp=%d,pp=%d,zero=%d,recompute=%d",
						 8 / tp / pp, tp, pp, zero, rc);
	double best = best_manual(ld.path, 32, &c, p.mem_limit, plans, n, best_s);
	TAP_OK(best < 1e30 && p.step_time <= best * (1 + 1e-9) && p.mem_peak <= p.mem_limit,
	       "automatic plan %.1f ms at least as fast as the best manual plan (%s, %.1f ms)", p.step_time * 1e3,
	       best_s, best * 1e3);
	inter_plan_free(&p);
}

/* The pass held to choices (inter_opts stages, mesh, micro, sched, v,
 * recompute, zero) on the automatic plan's own: the same plan, since the
 * search's space held to them still holds it. */
static bool held(const struct cost_cluster *c, struct batch_loader *ld, int64_t batch, int stages, int n0, int n1,
		 int micro, int sched, int v, int recompute, int zero, double mem_limit, bool manual,
		 struct inter_plan *p)
{
	struct inter_opts o;
	inter_opts_init(&o);
	o.train = true;
	o.batch = batch;
	o.load = load_batch;
	o.ctx = ld;
	o.stages = stages;
	o.mesh0 = n0;
	o.mesh1 = n1;
	o.micro = micro;
	o.sched = sched;
	o.v = v;
	o.recompute = recompute;
	o.zero = zero;
	o.mem_limit = mem_limit;
	o.manual_tp = manual;
	if (inter_pass(c, &o, p) < 0)
		return TAP_DIAG("%s", ir_error()), false;
	return true;
}

/* -1 when the stages differ in flag f (0 recompute, 1 zero), else its value. */
static int uniform(const struct inter_plan *p, int f)
{
	int x = f ? p->stages[0].zero : p->stages[0].recompute;
	for (int i = 1; i < p->nstages; i++)
		if ((f ? p->stages[i].zero : p->stages[i].recompute) != x)
			return -1;
	return x;
}

static void test_held(void)
{
	char path[256];
	struct batch_loader ld;
	struct cost_cluster c;
	struct inter_plan p, q;
	if (!TAP_OK(symbolic("gpt3-1.3b", "1x8:v100", path, sizeof path, &ld, &c),
		    "GPT-3 1.3B with a symbolic batch, 8 V100s"))
		return;
	if (!TAP_OK(held(&c, &ld, 32, 0, 0, 0, 0, -1, 0, -1, -1, 0, false, &p), "automatic plan"))
		return;
	int n0 = p.stages[0].n0, n1 = p.stages[0].n1;
	for (int i = 1; i < p.nstages; i++)
		if (p.stages[i].n0 != n0 || p.stages[i].n1 != n1)
			n0 = n1 = 0;
	bool ok = held(&c, &ld, 32, p.nstages, n0, n1, p.micro, p.sched, p.sched == COST_SCHED_INTERLEAVED ? p.v : 0,
		       uniform(&p, 0), uniform(&p, 1), 0, false, &q);
	TAP_OK(ok && q.nstages == p.nstages && q.micro == p.micro && q.sched == p.sched && q.v == p.v &&
		       fabs(q.step_time - p.step_time) <= 1e-9 * p.step_time,
	       "held to its own choices (%d stages of %dx%d, %d micro-batches, %s): %.3f ms, the automatic plan's "
	       "%.3f ms",
	       p.nstages, p.stages[0].n0, p.stages[0].n1, p.micro, cost_sched_name(p.sched), ok ? q.step_time * 1e3 : 0,
	       p.step_time * 1e3);
	if (ok)
		inter_plan_free(&q);
	/* another schedule: that one, never faster */
	ok = held(&c, &ld, 32, 2, 0, 0, 8, COST_SCHED_GPIPE, 0, 0, 0, 1e30, false, &q);
	TAP_OK(ok && q.nstages == 2 && q.micro == 8 && q.sched == COST_SCHED_GPIPE && !q.stages[0].recompute &&
		       !q.stages[0].zero && q.step_time >= p.step_time * (1 - 1e-9),
	       "held to 2 stages, 8 micro-batches, GPipe, no recomputation or ZeRO: %.3f ms",
	       ok ? q.step_time * 1e3 : 0);
	if (ok)
		inter_plan_free(&q);
	ok = held(&c, &ld, 32, 2, 0, 0, 8, COST_SCHED_INTERLEAVED, 3, 1, 1, 0, false, &q);
	TAP_OK(ok && q.sched == COST_SCHED_INTERLEAVED && q.v == 3 && q.stages[0].recompute && q.stages[1].zero,
	       "held to interleaved 1F1B with 3 chunks per device, recomputation and ZeRO-1 (%s)",
	       ok ? "" : ir_error());
	if (ok)
		inter_plan_free(&q);
	static const struct {
		int stages, micro, sched, v;
		const char *want;
	} bad[] = {
		{ 2, 8, COST_SCHED_COUNT, 0,
		  "schedule 3 with 0 chunks per device: expected -1 (searched) or a schedule" },
		{ 2, 8, COST_SCHED_1F1B, 3, "and chunks only for interleaved 1F1B" },
		{ 4, 2, COST_SCHED_INTERLEAVED, 2,
		  "interleaved 1F1B: 2 micro-batches are not a multiple of the 4 stages" },
		{ 1, 8, COST_SCHED_INTERLEAVED, 2, "interleaved 1F1B: one stage has no pipeline to interleave" },
		{ 2, 8, COST_SCHED_INTERLEAVED, 9,
		  "interleaved 1F1B with 9 chunks per device: 2 stages take 18 layers at least, the model has 16" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ok = held(&c, &ld, 32, bad[i].stages, 0, 0, bad[i].micro, bad[i].sched, bad[i].v, -1, -1, 0, false, &q);
		TAP_OK(!ok && strstr(ir_error(), bad[i].want), "refused: %s", ok ? "a plan" : ir_error());
		if (ok)
			inter_plan_free(&q);
	}
	ok = held(&c, &ld, 32, 2, 0, 0, 8, COST_SCHED_1F1B, 0, 0, 2, 0, false, &q);
	TAP_OK(!ok && strstr(ir_error(), "ZeRO stage 2") && strstr(ir_error(), "manual plan"),
	       "refused: ZeRO-2 outside a manual plan's layout: %s", ok ? "a plan" : ir_error());
	if (ok)
		inter_plan_free(&q);
	/* pcc report's manual plans are this pass held to them (report_auto.c,
	 * wi_held): each report gives the step time and peak memory of the
	 * pass held here to the plan's stages, mesh dp x tp (manual_tp),
	 * micro-batches, schedule, recomputation and ZeRO stage, with no
	 * memory limit (one evaluator: equal up to the rounding of the
	 * report's sums) */
	static const char *const plans[] = { "dp=1,tp=1,pp=8,mb=8",
					     "dp=8,tp=1,pp=1,mb=1",
					     "dp=2,tp=1,pp=4,mb=4",
					     "dp=1,tp=8,pp=1,mb=1",
					     "dp=2,tp=2,pp=2,mb=4",
					     "dp=2,tp=2,pp=2,mb=8,recompute=1",
					     "dp=4,tp=2,pp=1,mb=2,zero=1",
					     "dp=1,tp=2,pp=4,mb=8,schedule=gpipe",
					     "dp=2,tp=1,pp=4,mb=8,schedule=interleaved,v=2",
					     "dp=2,tp=4,pp=1,mb=4,recompute=1,zero=1",
					     "dp=4,tp=2,pp=1,mb=2,zero=3" };
	for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
		struct report_plan m;
		struct whatif w;
		report_plan_init(&m);
		if (report_plan_parse(plans[i], &m) < 0 || manual_report(ld.path, 32, &c, plans[i], &w) < 0) {
			TAP_OK(false, "%s: %s", plans[i], ir_error());
			continue;
		}
		ok = held(&c, &ld, 32, m.pp, m.dp, m.tp, m.mb, m.sched, m.sched == COST_SCHED_INTERLEAVED ? m.v : 0,
			  m.recompute, m.zero, 1e30, true, &q);
		bool same = ok && q.nstages == m.pp && w.nstages == m.pp && q.micro == m.mb && w.micro == m.mb &&
			    q.sched == m.sched && q.stages[0].n0 == m.dp && q.stages[0].n1 == m.tp &&
			    q.stages[0].recompute == (m.recompute > 0) && q.stages[0].zero == (m.zero > 0) &&
			    w.stages[0].recompute == q.stages[0].recompute && w.stages[0].zero == q.stages[0].zero;
		TAP_OK(same && fabs(w.t_step - q.step_time) <= 1e-12 * q.step_time &&
			       fabs(w.mem_peak - q.mem_peak) <= 1e-9 * q.mem_peak,
		       "%s: report %.3f ms, %.3f GiB; the pass held to it %.3f ms, %.3f GiB%s", plans[i],
		       w.t_step * 1e3, w.mem_peak / (1 << 30), ok ? q.step_time * 1e3 : 0,
		       ok ? q.mem_peak / (1 << 30) : 0, ok ? "" : ir_error());
		if (ok)
			inter_plan_free(&q);
		wi_free(&w);
	}
	inter_plan_free(&p);
}

/* A stage whose fastest layer plans replicate weights that do not fit
 * takes the lean variant (weights split at a price) rather than
 * recomputation, which cannot help where state and not activations fill
 * memory; with room, the fastest plan. */
static void test_lean(void)
{
	char path[256];
	struct loader ld = { generated("gpt3-2.6b", "--batch 64 --seq 128 --layers 4 --vocab 1024", path,
				       sizeof path) };
	struct cost_cluster c;
	struct inter_opts o;
	struct inter_plan p;
	if (!TAP_OK(ld.path && cost_cluster_parse("1x8:v100", &c) == 0, "GPT 2.6B (4 blocks, short sequence), 8 V100s"))
		return;
	inter_opts_init(&o);
	o.train = true;
	o.load = load_static;
	o.ctx = &ld;
	o.static_batch = 64;
	o.stages = 1;
	o.mesh0 = 1; /* one logical mesh: only the lean variant or recomputation can save memory */
	o.mesh1 = 8;
	o.mem_limit = 1e15;
	int rc = inter_pass(&c, &o, &p);
	if (!TAP_OK(rc == 0 && p.nstages == 1, "with room: one stage (%s)", rc ? ir_error() : ""))
		return;
	struct inter_stage fast = p.stages[0];
	TAP_OK(!fast.lean && !fast.recompute && fast.mem_state > 4 * fast.mem_act,
	       "with room the fastest plan, state (%.3f GiB) far above activations (%.3f GiB)",
	       fast.mem_state / (1 << 30), fast.mem_act / (1 << 30));
	inter_plan_free(&p);
	o.mem_limit = 0.75 * fast.mem;
	rc = inter_pass(&c, &o, &p);
	if (!TAP_OK(rc == 0 && p.nstages == 1, "limit 3/4 of that plan's %.3f GiB: a plan (%s)", fast.mem / (1 << 30),
		    rc ? ir_error() : ""))
		return;
	const struct inter_stage *s = &p.stages[0];
	TAP_OK(s->lean && s->mem <= o.mem_limit && s->mem_state < 0.75 * fast.mem_state && s->t_mb >= fast.t_mb,
	       "the lean variant: state %.3f GiB (fastest %.3f), %.3f ms per micro-batch (fastest %.3f), %s",
	       s->mem_state / (1 << 30), fast.mem_state / (1 << 30), s->t_mb * 1e3, fast.t_mb * 1e3,
	       s->recompute ? "recomputed" : "not recomputed");
	inter_plan_free(&p);
}

/* The plan's stages cover the layers in order and use every device. */
static bool stages_ok(const struct inter_plan *p, int devices)
{
	int next = 0, used = 0;
	for (int i = 0; i < p->nstages; i++) {
		const struct inter_stage *s = &p->stages[i];
		if (s->layer_first != next || s->layer_last < s->layer_first || s->n0 * s->n1 != s->rows * s->cols)
			return TAP_DIAG("stage %d: layers %d-%d, sub-mesh %dx%d, mesh %dx%d", i, s->layer_first,
					s->layer_last, s->rows, s->cols, s->n0, s->n1),
			       false;
		next = s->layer_last + 1;
		used += s->rows * s->cols;
	}
	return next == p->nlayers && used == devices;
}

/* Runs the pass with stages and mesh forced; *rc its result. */
static bool forced(const struct loader *ld, const char *cluster, int stages, int mesh0, int mesh1, int layers,
		   struct inter_plan *p, int *rc)
{
	struct cost_cluster c;
	struct inter_opts o;
	if (cost_cluster_parse(cluster, &c) < 0)
		return TAP_DIAG("%s", ir_error()), false;
	inter_opts_init(&o);
	o.load = load_static;
	o.ctx = (void *)ld;
	o.static_batch = 2;
	o.stages = stages;
	o.mesh0 = mesh0;
	o.mesh1 = mesh1;
	o.layers = layers;
	*rc = inter_pass(&c, &o, p);
	return *rc == 0;
}

static void test_forced(void)
{
	char path[256];
	struct loader ld = { generated("gpt3-125m", "--batch 2 --seq 64 --layers 4 --vocab 64", path, sizeof path) };
	struct inter_plan p;
	int rc;
	if (!TAP_OK(ld.path, "small GPT for forced plans"))
		return;
	/* free, this model gets one stage on 1x8 (test_one_stage) */
	for (int P = 2; P <= 4; P += 2) {
		bool ok = forced(&ld, "1x8:v100", P, 0, 0, 0, &p, &rc);
		TAP_OK(ok && p.nstages == P && stages_ok(&p, 8), "--stages %d: %d stages on 1x8 (%s)", P,
		       ok ? p.nstages : -1, ok ? "" : ir_error());
		if (ok)
			inter_plan_free(&p);
	}
	bool ok = forced(&ld, "1x8:v100", 2, 2, 2, 0, &p, &rc);
	TAP_OK(ok && p.nstages == 2 && stages_ok(&p, 8) && p.stages[0].n0 == 2 && p.stages[0].n1 == 2 &&
		       p.stages[1].n0 == 2 && p.stages[1].n1 == 2,
	       "--stages 2 --mesh 2x2: two stages on 2x2 logical meshes (%s)", ok ? "" : ir_error());
	if (ok)
		inter_plan_free(&p);
	/* the mesh alone fixes the stage count: 8 / 2 */
	ok = forced(&ld, "1x8:v100", 0, 1, 2, 0, &p, &rc);
	TAP_OK(ok && p.nstages == 4 && stages_ok(&p, 8) && p.stages[3].n0 == 1 && p.stages[3].n1 == 2,
	       "--mesh 1x2: four stages on 1x2 (%s)", ok ? "" : ir_error());
	if (ok)
		inter_plan_free(&p);
	/* d x 1, which the free search leaves out as 1 x d swapped */
	ok = forced(&ld, "1x8:v100", 0, 8, 1, 0, &p, &rc);
	TAP_OK(ok && p.nstages == 1 && p.stages[0].n0 == 8 && p.stages[0].n1 == 1 && p.stages[0].cols == 8,
	       "--mesh 8x1: one stage on an 8x1 logical mesh of the 1x8 sub-mesh (%s)", ok ? "" : ir_error());
	if (ok)
		inter_plan_free(&p);

	static const struct {
		int stages, mesh0, mesh1, layers;
		const char *want;
	} bad[] = {
		{ 9, 0, 0, 0, "--stages 9: more stages than the 8 devices of cluster 1x8:v100" },
		{ 3, 1, 2, 0, "--stages 3 with --mesh 1x2 takes 6 devices, cluster 1x8:v100 has 8" },
		{ 0, 3, 1, 0,
		  "--mesh 3x1: no sub-mesh of cluster 1x8:v100 has 3 devices (its sub-meshes have 1, 2, 4, "
		  "8)" },
		{ 3, 0, 0, 2, "--stages 3: more stages than the 2 layers of --layers" },
		{ 0, 2, 0, 0, "mesh 2x0: expected 0 (searched) or positive sizes" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ok = forced(&ld, "1x8:v100", bad[i].stages, bad[i].mesh0, bad[i].mesh1, bad[i].layers, &p, &rc);
		TAP_OK(!ok && rc == -EINVAL && strstr(ir_error(), bad[i].want), "refused: %s", ir_error());
		if (ok)
			inter_plan_free(&p);
	}
	ok = forced(&ld, "cpu:6", 0, 1, 4, 0, &p, &rc);
	TAP_OK(!ok && rc == -EINVAL && strstr(ir_error(), "--mesh 1x4: the 6 devices of cluster cpu:6 do not split"),
	       "refused: %s", ir_error());
	if (ok)
		inter_plan_free(&p);
}

/* Micro-batch sizes besides the powers of two. */
/* Whether cut b (nodes [0, b) before it) splits a fused chain: a node
 * after it reads in registers (cost_fused_reads) a value made before. */
static bool splits_chain(const struct ir_graph *g, const uint32_t *fused, int b)
{
	for (int i = b; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++)
			if (cost_read_fused(fused, i, j) && n->in[j]->def->id < b)
				return true;
	}
	return false;
}

/* One stage of a Wide-ResNet on a 1x8 mesh, one micro-batch of 32, its
 * layers clustered into `layers`. */
static int wresnet_stage(struct batch_loader *ld, const struct cost_cluster *c, int layers, struct inter_plan *p)
{
	struct inter_opts o;
	inter_opts_init(&o);
	o.train = true;
	o.load = load_batch;
	o.ctx = ld;
	o.batch = 32;
	o.micro = 1;
	o.stages = 1;
	o.mesh0 = 1;
	o.mesh1 = 8;
	o.layers = layers;
	return inter_pass(c, &o, p);
}

static void test_wresnet(void)
{
	char path[256];
	struct batch_loader ld;
	struct cost_cluster c;
	if (!TAP_OK(symbolic("wresnet-250m", "1x8:v100", path, sizeof path, &ld, &c),
		    "Wide-ResNet 250M with a symbolic batch, 8 V100s"))
		return;
	struct ir_graph *g = load_batch(&ld, 32);
	if (!TAP_OK(g, "imported at batch 32: %s", g ? "" : ir_error()))
		return;
	/* residual blocks end in add then relu, fused: cuts fall after them */
	struct cluster_opts co;
	struct cluster_result cl;
	cluster_opts_init(&co);
	co.layers = 16;
	uint32_t *fused = cost_fused_reads(g);
	int rc = fused ? cluster_layers(g, &co, &cl) : -ENOMEM, bad = -1;
	for (int l = 1; rc == 0 && l < cl.nlayers && bad < 0; l++)
		if (splits_chain(g, fused, cl.first[l]))
			bad = cl.first[l];
	TAP_OK(rc == 0 && bad < 0, "16 layers, no cut splits a fused chain (first bad cut: node %d)", bad);
	if (rc == 0)
		cluster_result_free(&cl);
	ir_free(fused);
	ir_graph_free(g);

	/* the same stage as 16 layers and as one: what the DP adds up */
	struct inter_plan one, many;
	rc = wresnet_stage(&ld, &c, 1, &one);
	if (!TAP_OK(rc == 0, "as one layer: %s", rc ? ir_error() : "planned"))
		return;
	rc = wresnet_stage(&ld, &c, 16, &many);
	if (TAP_OK(rc == 0 && many.nlayers == 16, "as 16 layers: %s", rc ? ir_error() : "planned")) {
		const struct inter_stage *a = &one.stages[0], *b = &many.stages[0];
		/* one-sided: the big graph's local search may do worse than
		 * the small ones' (it does here, by 2%), but layer boundaries
		 * must not add costs the whole stage does not have */
		TAP_OK(b->t_mb <= a->t_mb * 1.005,
		       "time per micro-batch adds up: %.3f ms in 16 layers, %.3f ms "
		       "as one",
		       b->t_mb * 1e3, a->t_mb * 1e3);
		TAP_OK(fabs(b->mem_act / a->mem_act - 1) < 0.05,
		       "activations kept add up: %.3f GiB in 16 layers, "
		       "%.3f GiB as one",
		       b->mem_act / (1 << 30), a->mem_act / (1 << 30));
		inter_plan_free(&many);
	}
	inter_plan_free(&one);

	/* the automatic plan against data parallelism over all 8, every
	 * micro-batch count the report takes (the family where Alpa's plans
	 * beat the manual ones) */
	struct inter_opts o;
	struct inter_plan p;
	inter_opts_init(&o);
	o.train = true;
	o.load = load_batch;
	o.ctx = &ld;
	o.batch = 256;
	rc = inter_pass(&c, &o, &p);
	if (!TAP_OK(rc == 0, "automatic plan, batch 256: %s", rc ? ir_error() : "planned"))
		return;
	char plans[4][96], best_s[96];
	int n = 0;
	for (int re = 0; re <= 1; re++)
		for (int zero = 0; zero <= 1; zero++)
			snprintf(plans[n++], sizeof plans[0], "dp=8,tp=1,pp=1,recompute=%d,zero=%d", re, zero);
	double best = best_manual(ld.path, 256, &c, p.mem_limit, plans, n, best_s);
	TAP_OK(best < 1e30 && p.step_time <= best * (1 + 1e-9),
	       "automatic plan %.1f ms at least as fast as the best "
	       "data-parallel one (%s, %.1f ms)",
	       p.step_time * 1e3, best_s, best * 1e3);
	inter_plan_free(&p);
}

static void test_batch_between(void)
{
	int64_t c[8];
	int n = inter_batch_between(1536, 128, c, 8);
	TAP_OK(n == 2 && ((c[0] == 96 && c[1] == 192) || (c[0] == 192 && c[1] == 96)),
	       "batch 1536 around 128: 96 and 192 (%d: %lld %lld)", n, n > 0 ? (long long)c[0] : 0,
	       n > 1 ? (long long)c[1] : 0);
	n = inter_batch_between(1000, 8, c, 8);
	TAP_OK(n == 2 && c[0] == 10 && c[1] == 5, "batch 1000 around 8: 10 then 5 (%d: %lld %lld)", n,
	       n > 0 ? (long long)c[0] : 0, n > 1 ? (long long)c[1] : 0);
	n = inter_batch_between(24, 24, c, 8);
	TAP_OK(n == 1 && c[0] == 12, "batch 24 around itself: 12, never 24 again (%d)", n);
	TAP_OK(inter_batch_between(1024, 64, c, 8) == 0, "a power of two has no others");
}

static struct ir_graph *load_text(void *ctx, int64_t b)
{
	(void)b;
	return ir_parse(ctx);
}

static struct ir_graph *load_onnx(void *ctx, int64_t b)
{
	(void)b;
	return onnx_import(ctx, NULL, NULL);
}

/* An ONNX model of one Constant node: no inputs at all. */
static const char *constant_model(char *path, size_t n)
{
	float v[2] = { 1, 2 };
	int64_t dims[2] = { 2 };
	Onnx__TensorProto t = ONNX__TENSOR_PROTO__INIT;
	t.n_dims = 1, t.dims = dims, t.has_data_type = 1, t.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
	t.n_float_data = 2, t.float_data = v;
	Onnx__AttributeProto a = ONNX__ATTRIBUTE_PROTO__INIT, *ap = &a;
	a.name = "value", a.has_type = 1, a.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR, a.t = &t;
	char *out = "y";
	Onnx__NodeProto node = ONNX__NODE_PROTO__INIT, *np = &node;
	node.op_type = "Constant", node.n_output = 1, node.output = &out, node.n_attribute = 1, node.attribute = &ap;
	Onnx__TensorShapeProto__Dimension d = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT, *dp = &d;
	d.value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE, d.dim_value = 2;
	Onnx__TensorShapeProto sh = ONNX__TENSOR_SHAPE_PROTO__INIT;
	sh.n_dim = 1, sh.dim = &dp;
	Onnx__TypeProto__Tensor tt = ONNX__TYPE_PROTO__TENSOR__INIT;
	tt.has_elem_type = 1, tt.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, tt.shape = &sh;
	Onnx__TypeProto ty = ONNX__TYPE_PROTO__INIT;
	ty.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, ty.tensor_type = &tt;
	Onnx__ValueInfoProto vo = ONNX__VALUE_INFO_PROTO__INIT, *vp = &vo;
	vo.name = "y", vo.type = &ty;
	Onnx__GraphProto g = ONNX__GRAPH_PROTO__INIT;
	g.name = "constant", g.n_node = 1, g.node = &np, g.n_output = 1, g.output = &vp;
	Onnx__OperatorSetIdProto op = ONNX__OPERATOR_SET_ID_PROTO__INIT, *opp = &op;
	op.domain = "", op.has_version = 1, op.version = 17;
	Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
	m.has_ir_version = 1, m.ir_version = 8, m.n_opset_import = 1, m.opset_import = &opp, m.graph = &g;
	uint8_t buf[1024];
	size_t len = onnx__model_proto__get_packed_size(&m);
	snprintf(path, n, "%s/constant.onnx", tmpdir);
	FILE *f = len <= sizeof buf ? fopen(path, "wb") : NULL;
	if (!f)
		return NULL;
	onnx__model_proto__pack(&m, buf);
	bool ok = fwrite(buf, 1, len, f) == len;
	return fclose(f) == 0 && ok ? path : NULL;
}

/* Nothing to split or compute still plans (the ONNX backend tests
 * test_constant, test_range_*, test_identity, test_dropout_default, Sum
 * of one input: pcc refused them all). */
static void test_nothing_to_do(void)
{
	struct cost_cluster c;
	struct inter_opts o;
	struct inter_plan p;
	char path[256], name[128];
	int64_t b = 0;
	if (!TAP_OK(cost_cluster_parse("cpu:1", &c) == 0 && constant_model(path, sizeof path), "cpu:1 and a "
											       "Constant model ready"))
		return;
	int rc = onnx_batch_dim(path, NULL, name, sizeof name, &b);
	if (!TAP_OK(rc == 0 && !name[0] && b == 1, "a model without inputs has a static batch of one sample"))
		TAP_DIAG("%s", ir_error());
	inter_opts_init(&o);
	o.load = load_onnx;
	o.ctx = path;
	o.static_batch = b;
	rc = inter_pass(&c, &o, &p);
	if (TAP_OK(rc == 0 && p.nstages == 1, "and plans one stage"))
		inter_plan_free(&p);
	else
		TAP_DIAG("%s", ir_error());
	char text[] = "pcc-ir 1\ninput %0 \"x\" : f32[4,3]\noutput %0 \"y\"\n";
	struct ir_graph *g = ir_parse(text);
	struct cluster_opts co;
	struct cluster_result cl;
	cluster_opts_init(&co);
	rc = g ? cluster_layers(g, &co, &cl) : -1;
	if (TAP_OK(rc == 0 && cl.nlayers == 1 && cl.first[0] == 0 && cl.first[1] == 0,
		   "a graph of no nodes (its output is its input) is one empty layer"))
		cluster_result_free(&cl);
	else
		TAP_DIAG("%s", ir_error());
	ir_graph_free(g);
	o.load = load_text;
	o.ctx = text;
	o.static_batch = 4;
	rc = inter_pass(&c, &o, &p);
	if (TAP_OK(rc == 0 && p.nstages == 1, "and plans one stage"))
		inter_plan_free(&p);
	else
		TAP_DIAG("%s", ir_error());
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_inter MODELGEN\n");
		return 2;
	}
	modelgen = argv[1];
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_cluster_gpt();
	test_one_stage();
	test_does_not_fit();
	test_versus_manual();
	test_held();
	test_lean();
	test_forced();
	test_batch_between();
	test_nothing_to_do();
	test_wresnet();
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		TAP_DIAG("could not remove %s", tmpdir);
	return tap_done();
}
