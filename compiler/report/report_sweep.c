/*
 * report_sweep.c: `pcc report --sweep`: one plan request evaluated over a
 * family of clusters or plans, each point a full what-if.
 *
 *   gpus=LO..HI   every power of two from LO to HI devices, in nodes of the
 *                 cluster's kind (N <= devices per node: one node of N);
 *                 a manual plan keeps tp and pp and scales dp, the
 *                 automatic plan is searched again per size. The scaling
 *                 efficiency is throughput per device against the first
 *                 point's.
 *   tp,pp         every manual plan tp x pp x dp of the cluster's devices
 *                 with tp and pp powers of two, tp within a node (the rest
 *                 of --plan, if given, kept); with no --plan the automatic
 *                 plan is listed too, for reference.
 *   sensitivity   the plan again with every link's bandwidth, every
 *                 link's latency and the devices' FLOP/s each x0.5 and x2
 *                 (the automatic plan is searched again on each: what the
 *                 planner would do on that hardware).
 *
 * A point that cannot be evaluated (the plan does not split the devices,
 * too many stages for the model, nothing fits) is kept with its reason;
 * the sweep fails only when no point can be evaluated. Give --batch to
 * hold the global batch fixed across the points.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/progress.h"
#include "compiler/report/report_internal.h"

#define MAX_GPUS (1 << 20)

static bool pow2(long x)
{
	return x > 0 && (x & (x - 1)) == 0;
}

int wi_sweep_parse(const char *s, struct wi_sweep *sw)
{
	memset(sw, 0, sizeof *sw);
	if (!strcmp(s, "tp,pp") || !strcmp(s, "pp,tp")) {
		sw->kind = WI_SWEEP_TPPP;
		return 0;
	}
	if (!strcmp(s, "sensitivity")) {
		sw->kind = WI_SWEEP_SENS;
		return 0;
	}
	if (strncmp(s, "gpus=", 5))
		return ir_errorf(-EINVAL, "--sweep %s: unknown sweep; expected gpus=LO..HI, tp,pp or sensitivity", s);
	char *end, *end2;
	long lo = strtol(s + 5, &end, 10), hi = 0;
	if (end != s + 5 && !strncmp(end, "..", 2))
		hi = strtol(end + 2, &end2, 10);
	if (end == s + 5 || strncmp(end, "..", 2) || end2 == end + 2 || *end2)
		return ir_errorf(-EINVAL, "--sweep %s: expected gpus=LO..HI, e.g. gpus=8..1024", s);
	if (!pow2(lo) || !pow2(hi) || lo > hi || hi > MAX_GPUS)
		return ir_errorf(-EINVAL, "--sweep %s: LO and HI must be powers of two with LO <= HI <= %d", s,
				 MAX_GPUS);
	sw->kind = WI_SWEEP_GPUS;
	sw->lo = (int)lo;
	sw->hi = (int)hi;
	return 0;
}

void wi_sweep_free(struct wi_sweep_result *r)
{
	for (int i = 0; i < r->n; i++)
		wi_free(&r->pt[i].w);
	ir_free(r->pt);
	memset(r, 0, sizeof *r);
}

static struct wi_point *add_point(struct wi_sweep_result *r, int cap)
{
	IR_ASSERT(r->n < cap);
	struct wi_point *p = &r->pt[r->n++];
	memset(p, 0, sizeof *p);
	p->factor = 1;
	return p;
}

/* Evaluates p's request on c; a failure is the point's, not the sweep's
 * (except running out of memory). */
static int eval_point(struct wi_point *p, const struct wi_request *q, const struct cost_cluster *c)
{
	progress_phase(0, "sweep: %s", p->name);
	int rc = wi_eval(q, c, &p->w);
	p->ok = rc == 0;
	if (rc < 0)
		snprintf(p->err, sizeof p->err, "%s", ir_error());
	return rc == -ENOMEM ? rc : 0;
}

/* n devices in nodes like c's first group. */
static void resize(const struct cost_cluster *c, int n, struct cost_cluster *out)
{
	const struct cost_node_group *g = &c->groups[0];
	*out = *c;
	out->ngroups = 1;
	out->groups[0] = *g;
	out->groups[0].devices = n < g->devices ? n : g->devices;
	out->groups[0].count = n / out->groups[0].devices;
	out->nodes = out->groups[0].count;
	out->ndevices = n;
	snprintf(out->name, sizeof out->name, "%dx%d:%s", out->nodes, out->groups[0].devices, g->dev.name);
}

static int sweep_gpus(struct wi_sweep_result *r, const struct wi_request *q, const struct cost_cluster *c, int cap)
{
	int per = c->groups[0].devices;
	if (!cost_cluster_uniform(c))
		return ir_errorf(-EINVAL, "--sweep gpus: cluster %s has nodes of different kinds; give one kind",
				 c->name);
	for (long n = r->sw.lo; n <= r->sw.hi; n *= 2) {
		struct wi_point *p = add_point(r, cap);
		struct wi_request qq = *q;
		struct cost_cluster cc;
		p->gpus = (int)n;
		snprintf(p->name, sizeof p->name, "%ld gpus", n);
		if (n > per && n % per) {
			snprintf(p->err, sizeof p->err, "%ld devices are not whole nodes of %d", n, per);
			continue;
		}
		if (q->manual) {
			int tp = q->plan.tp, pp = q->plan.pp;
			if (n % ((long)tp * pp)) {
				snprintf(p->err, sizeof p->err, "%ld devices do not split into tp=%d x pp=%d", n, tp,
					 pp);
				continue;
			}
			qq.plan.dp = (int)(n / ((long)tp * pp));
			p->dp = qq.plan.dp;
			p->tp = tp;
			p->pp = pp;
		}
		resize(c, (int)n, &cc);
		int rc = eval_point(p, &qq, &cc);
		if (rc < 0)
			return rc;
		r->base = n == c->ndevices ? r->n - 1 : r->base;
	}
	return 0;
}

static int sweep_tppp(struct wi_sweep_result *r, const struct wi_request *q, const struct cost_cluster *c, int cap)
{
	int per, rc = 0;
	cost_cluster_effective(c, NULL, NULL, NULL, &per);
	if (!q->manual) { /* the automatic plan, for reference */
		struct wi_point *p = add_point(r, cap);
		snprintf(p->name, sizeof p->name, "auto");
		if ((rc = eval_point(p, q, c)) < 0)
			return rc;
		r->base = 0;
	}
	for (int tp = 1; tp <= per && c->ndevices % tp == 0; tp *= 2)
		for (int pp = 1; (long)tp * pp <= c->ndevices && c->ndevices % (tp * pp) == 0; pp *= 2) {
			struct wi_point *p = add_point(r, cap);
			struct wi_request qq = *q;
			if (!qq.manual) { /* Megatron's plans with the automatic request's optimizer and precision */
				qq.manual = true;
				report_plan_init(&qq.plan);
				qq.plan.optim = q->inter.optim;
				qq.plan.prec = q->prec;
			}
			qq.plan.tp = p->tp = tp;
			qq.plan.pp = p->pp = pp;
			qq.plan.dp = p->dp = c->ndevices / (tp * pp);
			if (qq.plan.sched == COST_SCHED_INTERLEAVED && pp == 1)
				qq.plan.sched = COST_SCHED_1F1B;
			snprintf(p->name, sizeof p->name, "tp=%d pp=%d dp=%d", tp, pp, p->dp);
			snprintf(qq.label, sizeof qq.label, "dp=%d,tp=%d,pp=%d", p->dp, tp, pp);
			p->gpus = c->ndevices;
			if ((rc = eval_point(p, &qq, c)) < 0)
				return rc;
		}
	return 0;
}

/* c with every link's bandwidth or latency, or every device's peaks, x f. */
static void scale(const struct cost_cluster *c, const char *knob, double f, struct cost_cluster *out)
{
	*out = *c;
	for (int i = 0; i < out->ngroups; i++) {
		struct cost_node_group *g = &out->groups[i];
		if (!strcmp(knob, "bandwidth")) {
			g->intra.bw *= f;
			g->inter.bw *= f;
		} else if (!strcmp(knob, "latency")) {
			g->intra.latency *= f;
			g->inter.latency *= f;
		} else if (!strcmp(knob, "flops")) {
			for (int k = 0; k < COST_PREC_COUNT; k++)
				g->dev.peak_flops[k] *= f;
		}
	}
}

static int sweep_sens(struct wi_sweep_result *r, const struct wi_request *q, const struct cost_cluster *c, int cap)
{
	static const char *const knobs[] = { "base", "bandwidth", "latency", "flops" };
	for (int k = 0; k < 4; k++)
		for (int j = 0; j < (k ? 2 : 1); j++) {
			struct wi_point *p = add_point(r, cap);
			struct cost_cluster cc;
			p->factor = k ? (j ? 2 : 0.5) : 1;
			p->gpus = c->ndevices;
			snprintf(p->knob, sizeof p->knob, "%s", knobs[k]);
			snprintf(p->name, sizeof p->name, k ? "%s x%g" : "%s", knobs[k], p->factor);
			scale(c, knobs[k], p->factor, &cc);
			int rc = eval_point(p, q, &cc);
			if (rc < 0)
				return rc;
			if (k == 0 && !p->ok) /* nothing to compare with */
				return ir_errorf(-EINVAL, "%s", p->err);
		}
	r->base = 0;
	return 0;
}

static int points_cap(const struct wi_sweep *sw)
{
	int n = 0;
	for (long g = sw->lo; sw->kind == WI_SWEEP_GPUS && g <= sw->hi; g *= 2)
		n++;
	return sw->kind == WI_SWEEP_GPUS ? n : sw->kind == WI_SWEEP_SENS ? 7 : 1 + 32 * 32;
}

int wi_sweep_run(const struct wi_sweep *sw, const struct wi_request *q, const struct cost_cluster *c,
		 struct wi_sweep_result *r)
{
	memset(r, 0, sizeof *r);
	r->sw = *sw;
	r->base = r->best = -1;
	int cap = points_cap(sw), rc = 0;
	r->pt = ir_calloc((size_t)cap, sizeof *r->pt);
	if (!r->pt)
		return ir_errorf(-ENOMEM, "out of memory");
	switch (sw->kind) {
	case WI_SWEEP_GPUS:
		rc = sweep_gpus(r, q, c, cap);
		break;
	case WI_SWEEP_TPPP:
		rc = sweep_tppp(r, q, c, cap);
		break;
	case WI_SWEEP_SENS:
		rc = sweep_sens(r, q, c, cap);
		break;
	case WI_SWEEP_COUNT:
		IR_ASSERT(!"sweep kind out of range");
	}
	int first_err = -1;
	for (int i = 0; i < r->n; i++) {
		const struct wi_point *p = &r->pt[i];
		if (!p->ok && first_err < 0)
			first_err = i;
		if (p->ok && p->w.fits && (r->best < 0 || p->w.samples_per_s > r->pt[r->best].w.samples_per_s))
			r->best = i;
	}
	bool any = false;
	for (int i = 0; i < r->n; i++)
		any |= r->pt[i].ok;
	if (rc == 0 && !any && first_err >= 0)
		rc = ir_errorf(-EINVAL, "--sweep: no point could be evaluated; %s: %s", r->pt[first_err].name,
			       r->pt[first_err].err);
	if (rc < 0)
		wi_sweep_free(r);
	return rc;
}
