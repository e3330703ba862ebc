/*
 * cost_train.c: the memory a training step keeps per device for its state
 * (parameters, gradients, optimizer) and the time and activation memory of
 * pipeline schedules.
 *
 * State follows the ZeRO paper's accounting (Rajbhandari et al. 2020, sec.
 * 3.1): with mixed-precision Adam a parameter costs 2 (fp16/bf16 weights) +
 * 2 (gradients) + K = 12 (fp32 master weights, momentum, variance) bytes;
 * ZeRO stages 1, 2, 3 partition the optimizer state, then the gradients,
 * then the parameters over the data-parallel replicas.
 *
 * Schedules (Huang et al. 2019 GPipe; Narayanan et al. 2021 for 1F1B and
 * interleaving): with p stages and m micro-batches the pipeline idles for
 * (p - 1) micro-batch slots, a fraction (p - 1)/m of the ideal m slots;
 * interleaving v chunks per device shrinks each slot of the fill and drain
 * to 1/v. 1F1B bounds in-flight micro-batches on stage i by p - i.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "compiler/cost/cost.h"
#include "ir/ir.h"

static const char *const optim_names[COST_OPT_COUNT] = { "sgd", "momentum", "adam", "adamw" };
static const char *const sched_names[COST_SCHED_COUNT] = { "gpipe", "1f1b", "interleaved" };

const char *cost_optim_name(enum cost_optim o)
{
	IR_ASSERT(o >= 0 && o < COST_OPT_COUNT);
	return optim_names[o];
}

int cost_optim_parse(const char *s, enum cost_optim *out)
{
	for (int i = 0; i < COST_OPT_COUNT; i++)
		if (strcasecmp(s, optim_names[i]) == 0) {
			*out = i;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown optimizer \"%s\" (sgd, momentum, adam, adamw)", s);
}

const char *cost_sched_name(enum cost_sched s)
{
	IR_ASSERT(s >= 0 && s < COST_SCHED_COUNT);
	return sched_names[s];
}

int cost_sched_parse(const char *s, enum cost_sched *out)
{
	for (int i = 0; i < COST_SCHED_COUNT; i++)
		if (strcasecmp(s, sched_names[i]) == 0) {
			*out = i;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown pipeline schedule \"%s\" (gpipe, 1f1b, interleaved)", s);
}

static int moments(enum cost_optim o)
{
	switch (o) {
	case COST_OPT_SGD:
		return 0;
	case COST_OPT_MOMENTUM:
		return 1;
	case COST_OPT_ADAM:
	case COST_OPT_ADAMW:
		return 2;
	case COST_OPT_COUNT:
		break;
	}
	IR_ASSERT(!"optimizer out of range");
	return 0;
}

void cost_state_bytes_per_param(enum cost_optim o, bool mixed, struct cost_state_bytes *b)
{
	int k = moments(o);
	if (mixed) {
		b->params = 2;
		b->grads = 2;
		b->optim = 4 + 4.0 * k; /* fp32 master copy + fp32 moments */
	} else {
		b->params = 4;
		b->grads = 4;
		b->optim = 4.0 * k;
	}
}

double cost_optim_time(const struct cost_device *d, const struct cost_calib *cal, const struct cost_state_bytes *sb,
		       bool mixed, double nparams)
{
	const double bulk = 1e9; /* parameters of a step's fused update */
	double per = sb->grads + 2 * sb->optim + (mixed ? sb->params : 2 * sb->params);
	double t = cost_roofline(d, cal, COST_CLASS_ELEMENTWISE, COST_PREC_F32, 12 * bulk, per * bulk) -
		   cal->cls[COST_CLASS_ELEMENTWISE].overhead;
	return nparams > 0 && t > 0 ? t * (nparams / bulk) : 0;
}

void cost_state_memory(enum cost_optim o, bool mixed, int zero, int dp, double nparams, struct cost_state_bytes *out)
{
	IR_ASSERT(zero >= 0 && zero <= 3 && dp >= 1);
	struct cost_state_bytes b;
	cost_state_bytes_per_param(o, mixed, &b);
	out->params = nparams * b.params / (zero >= 3 ? dp : 1);
	out->grads = nparams * b.grads / (zero >= 2 ? dp : 1);
	out->optim = nparams * b.optim / (zero >= 1 ? dp : 1);
}

double cost_bubble_fraction(enum cost_sched s, int p, int m, int v)
{
	IR_ASSERT(p >= 1 && m >= 1);
	if (s == COST_SCHED_INTERLEAVED && v > 1)
		return (double)(p - 1) / ((double)v * m);
	return (double)(p - 1) / m;
}

double cost_pipeline_time(enum cost_sched s, int p, int m, int v, const double *t, double t_p2p)
{
	IR_ASSERT(p >= 1 && m >= 1);
	if (p == 1)
		return m * t[0];
	if (s == COST_SCHED_INTERLEAVED && v > 1) {
		double tmax = 0;
		for (int i = 0; i < p; i++)
			if (t[i] + v * t_p2p > tmax)
				tmax = t[i] + v * t_p2p;
		return (m + (double)(p - 1) / v) * tmax;
	}
	double sum = 0, tmax = 0;
	for (int i = 0; i < p; i++) {
		sum += t[i] + t_p2p;
		if (t[i] + t_p2p > tmax)
			tmax = t[i] + t_p2p;
	}
	return sum - t_p2p + (m - 1) * tmax;
}

double cost_inflight(enum cost_sched s, int p, int m, int v, int stage)
{
	IR_ASSERT(p >= 1 && m >= 1 && stage >= 0 && stage < p);
	switch (s) {
	case COST_SCHED_GPIPE:
		return m;
	case COST_SCHED_1F1B:
		return p - stage < m ? p - stage : m;
	case COST_SCHED_INTERLEAVED: {
		double base = p - stage < m ? p - stage : m;
		return v > 1 ? base + (double)(p - 1) / v : base;
	}
	case COST_SCHED_COUNT:
		break;
	}
	IR_ASSERT(!"schedule out of range");
	return m;
}
