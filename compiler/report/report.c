/*
 * report.c: `pcc report --plan ...`: parses a manual plan, resolves its
 * batch (global batch, micro-batch size, micro-batch count) and the
 * devices it runs on (its axes on the cluster), which the planner held to
 * the plan (report_auto.c, wi_held) evaluates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compiler/report/report_internal.h"

void report_plan_init(struct report_plan *p)
{
	memset(p, 0, sizeof *p);
	p->dp = p->tp = p->pp = 1;
	p->v = 2;
	p->sched = COST_SCHED_1F1B;
	p->optim = COST_OPT_ADAM;
	p->prec = -1;
}

static int parse_int(const char *key, const char *val, int lo, int hi, int *out)
{
	char *end;
	long x = strtol(val, &end, 10);
	if (!*val || *end || x < lo || x > hi)
		return ir_errorf(-EINVAL, "plan: %s=%s: expected an integer from %d to %d", key, val, lo, hi);
	*out = (int)x;
	return 0;
}

int report_plan_parse(const char *s, struct report_plan *p)
{
	char buf[512];
	if (strlen(s) >= sizeof buf)
		return ir_errorf(-EINVAL, "plan: too long");
	snprintf(buf, sizeof buf, "%s", s);
	char *save = NULL;
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq)
			return ir_errorf(-EINVAL, "plan: \"%s\" is not KEY=VALUE", kv);
		*eq = 0;
		const char *k = kv, *v = eq + 1;
		int rc;
		if (strcmp(k, "dp") == 0)
			rc = parse_int(k, v, 1, 1 << 20, &p->dp);
		else if (strcmp(k, "tp") == 0)
			rc = parse_int(k, v, 1, 1 << 20, &p->tp);
		else if (strcmp(k, "pp") == 0)
			rc = parse_int(k, v, 1, 1 << 20, &p->pp);
		else if (strcmp(k, "mb") == 0)
			rc = parse_int(k, v, 1, 1 << 24, &p->mb);
		else if (strcmp(k, "v") == 0)
			rc = parse_int(k, v, 2, 64, &p->v);
		else if (strcmp(k, "zero") == 0)
			rc = parse_int(k, v, 0, 3, &p->zero);
		else if (strcmp(k, "recompute") == 0)
			rc = parse_int(k, v, 0, 1, &p->recompute);
		else if (strcmp(k, "schedule") == 0)
			rc = cost_sched_parse(v, &p->sched);
		else if (strcmp(k, "optim") == 0 || strcmp(k, "optimizer") == 0)
			rc = cost_optim_parse(v, &p->optim);
		else if (strcmp(k, "precision") == 0) {
			enum cost_prec pr;
			if ((rc = cost_prec_parse(v, &pr)) == 0)
				p->prec = (int)pr;
		} else
			return ir_errorf(-EINVAL,
					 "plan: unknown key \"%s\" (dp, tp, pp, mb, schedule, v, zero, "
					 "recompute, optim, precision)",
					 k);
		if (rc < 0) {
			if (strncmp(ir_error(), "plan:", 5) != 0)
				ir_error_prefix("plan: %s", k);
			return rc;
		}
	}
	return 0;
}

int report_resolve_batch(const struct report_plan *p, int64_t b0, int64_t batch, struct report_batch *bp)
{
	int64_t per;
	bp->n = 0;
	if (b0 > 0) { /* the ONNX batch is the micro-batch, split over the replicas (as automatic plans) */
		if (b0 % p->dp)
			return ir_errorf(
				-EINVAL,
				"plan dp=%d: the model's batch is fixed at %lld samples, one micro-batch, which "
				"%d data-parallel replicas cannot split evenly",
				p->dp, (long long)b0, p->dp);
		int mb = p->mb ? p->mb : (p->pp == 1 ? 1 : 4 * p->pp);
		if (batch) {
			if (batch % b0 != 0)
				return ir_errorf(-EINVAL, "--batch %lld is not a multiple of the model's batch %lld",
						 (long long)batch, (long long)b0);
			int64_t m = batch / b0;
			if (p->mb && p->mb != m)
				return ir_errorf(-EINVAL,
						 "plan: mb=%d but --batch %lld / the model's batch %lld = %lld", p->mb,
						 (long long)batch, (long long)b0, (long long)m);
			mb = (int)m;
		}
		bp->batch = mb * b0;
		bp->cand[0] = b0 / p->dp;
		bp->mb[0] = mb;
		bp->n = 1;
		return 0;
	}
	if (!batch) { /* micro-batch of 1 */
		int mb = p->mb ? p->mb : (p->pp == 1 ? 1 : 4 * p->pp);
		bp->batch = (int64_t)p->dp * mb;
		bp->cand[0] = 1;
		bp->mb[0] = mb;
		bp->n = 1;
		return 0;
	}
	if (batch % p->dp)
		return ir_errorf(-EINVAL, "--batch %lld is not a multiple of dp=%d", (long long)batch, p->dp);
	per = batch / p->dp;
	bp->batch = batch;
	if (p->mb) {
		if (per % p->mb)
			return ir_errorf(
				-EINVAL,
				"plan: mb=%d does not divide the %lld samples per replica (--batch %lld / dp %d)",
				p->mb, (long long)per, (long long)batch, p->dp);
		bp->cand[0] = per / p->mb;
		bp->mb[0] = p->mb;
		bp->n = 1;
		return 0;
	}
	/* the planner chooses: every divisor keeping at least pp micro-batches
	 * (interleaved: a multiple of pp, as its schedule needs) */
	bool inter = p->sched == COST_SCHED_INTERLEAVED;
	for (int64_t b = 1; b <= per && bp->n < 64; b++)
		if (per % b == 0 && (p->pp == 1 || per / b >= p->pp) && (!inter || per / b % p->pp == 0)) {
			bp->cand[bp->n] = b;
			bp->mb[bp->n++] = (int)(per / b);
		}
	if (bp->n == 0)
		return ir_errorf(-EINVAL, "--batch %lld gives %lld samples per replica, not %s pp=%d micro-batches",
				 (long long)batch, (long long)per, inter ? "a multiple of" : "at least", p->pp);
	return 0;
}

double report_tokens_per_sample(const struct ir_graph *g)
{
	for (int i = 0; i < ir_graph_ninputs(g); i++) {
		const struct ir_value *v = ir_graph_input(g, i);
		if (ir_dtype_is_int(v->dtype) && v->shape.rank == 2 && v->shape.dims[0] > 0)
			return (double)v->shape.dims[1];
	}
	return 0;
}

int report_plan_axes(const struct report_plan *p, const struct cost_cluster *c, struct cost_axis axes[3])
{
	int rc;
	if ((double)p->dp * p->tp * p->pp > c->ndevices)
		return ir_errorf(-EINVAL, "plan dp=%d x tp=%d x pp=%d = %.0f devices, the cluster %s has %d", p->dp,
				 p->tp, p->pp, (double)p->dp * p->tp * p->pp, c->name, c->ndevices);
	if (p->sched == COST_SCHED_INTERLEAVED && p->pp == 1)
		return ir_errorf(-EINVAL, "plan: schedule=interleaved needs pp > 1");
	const int strides[3] = { 1, p->tp, p->tp * p->dp }, sizes[3] = { p->tp, p->dp, p->pp };
	const char *names[3] = { "tp", "dp", "pp" };
	for (int i = 0; i < 3; i++)
		if ((rc = cost_axis_make(c, strides[i], sizes[i], &axes[i])) < 0) {
			ir_error_prefix("plan %s=%d on cluster %s", names[i], sizes[i], c->name);
			return rc;
		}
	return 0;
}

int report_plan_cluster(const struct report_plan *p, const struct cost_cluster *c, struct cost_cluster *sub)
{
	struct cost_axis axes[3];
	int rc = report_plan_axes(p, c, axes), d = p->dp * p->tp * p->pp;
	if (rc < 0)
		return rc;
	*sub = *c;
	if (d == c->ndevices)
		return 0;
	struct cost_node_group *g = &sub->groups[0];
	if (c->ngroups != 1)
		return ir_errorf(-EINVAL,
				 "plan dp=%d x tp=%d x pp=%d = %d devices: cluster %s mixes kinds of node, a plan "
				 "on it takes all %d devices",
				 p->dp, p->tp, p->pp, d, c->name, c->ndevices);
	if (d < g->devices) {
		g->count = 1;
		g->devices = d;
	} else if (d % g->devices == 0) {
		g->count = d / g->devices;
	} else {
		return ir_errorf(-EINVAL,
				 "plan dp=%d x tp=%d x pp=%d = %d devices: not whole nodes of %d of cluster %s, nor "
				 "part of one",
				 p->dp, p->tp, p->pp, d, g->devices, c->name);
	}
	sub->nodes = g->count;
	sub->ndevices = g->count * g->devices;
	return 0;
}
