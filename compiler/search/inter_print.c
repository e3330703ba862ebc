/*
 * inter_print.c: `pcc MODEL --cluster C --explain`: the automatic plan in
 * words: every stage with its layers, sub-mesh and logical mesh, the
 * schedule and micro-batches, the predicted step time, throughput, MFU
 * and memory per device; and the plans the search weighed against it
 * (the best stage assignment of each micro-batch size under each
 * schedule, and of one stage without a pipeline), fastest first.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/search/inter_internal.h"
#include "ir/plan.h"

static bool before(const struct inter_alt *a, const struct inter_alt *b)
{
	return a->step_time < b->step_time * (1 - 1e-12) ||
	       (a->step_time <= b->step_time * (1 + 1e-12) && a->mem_peak < b->mem_peak);
}

static bool same_plan(const struct inter_alt *a, const struct inter_alt *b)
{
	return a->micro_batch == b->micro_batch && a->micro == b->micro && a->sched == b->sched && a->v == b->v &&
	       a->nstages == b->nstages && !strcmp(a->stages, b->stages);
}

/* Into the list sorted fastest first, at most INTER_MAX_ALTS long. */
static void insert(struct inter_plan *p, const struct inter_alt *a)
{
	int n = p->nalt;
	if (n == INTER_MAX_ALTS) {
		if (!before(a, &p->alt[n - 1]))
			return;
		n--;
	}
	while (n > 0 && before(a, &p->alt[n - 1])) {
		p->alt[n] = p->alt[n - 1];
		n--;
	}
	p->alt[n] = *a;
	if (p->nalt < INTER_MAX_ALTS)
		p->nalt++;
}

void inter_alt_keep(struct inter_plan *p, const struct inter_alt *a)
{
	for (int j = 0; j < p->nalt; j++) {
		if (!same_plan(&p->alt[j], a))
			continue;
		/* the same stages solved the other way: one entry, the faster */
		struct inter_alt kept = before(a, &p->alt[j]) ? *a : p->alt[j];
		const struct inter_alt *other = before(a, &p->alt[j]) ? &p->alt[j] : a;
		kept.twin = true;
		kept.twin_time = other->step_time;
		kept.twin_mem = other->mem_peak;
		memmove(&p->alt[j], &p->alt[j + 1], sizeof *p->alt * (size_t)(p->nalt - j - 1));
		p->nalt--;
		insert(p, &kept);
		return;
	}
	insert(p, a);
}

void inter_alt_json_sync(json_t *o, const struct inter_alt *a, bool train)
{
	json_object_set_new(o, "gradient_sync", train ? json_string(a->overlap ? "overlapped" : "after") : json_null());
	json_object_set_new(o, "other_way_step_time_s", a->twin ? json_real(a->twin_time) : json_null());
	json_object_set_new(o, "other_way_peak_memory_bytes", a->twin ? json_real(a->twin_mem) : json_null());
}

void inter_alt_sync_str(const struct inter_alt *a, bool train, char *buf, size_t size)
{
	const char *how = a->overlap ? "overlapped" : "after backward";
	if (!train)
		snprintf(buf, size, "%s", "");
	else if (!a->twin)
		snprintf(buf, size, "%s", how);
	else if (fabs(a->twin_time - a->step_time) <= 5e-4 * a->step_time)
		snprintf(buf, size, "%s (%s: same)", how, a->overlap ? "after" : "overlapped");
	else
		snprintf(buf, size, "%s (%s: %+.1f%%)", how, a->overlap ? "after" : "overlapped",
			 100 * (a->twin_time / a->step_time - 1));
}

void inter_alt_mark(struct inter_plan *p)
{
	for (int i = 0; i < p->nalt; i++) {
		struct inter_alt *a = &p->alt[i];
		a->chosen = a->micro_batch == p->micro_batch && a->sched == p->sched && a->nstages == p->nstages &&
			    fabs(a->step_time - p->step_time) <= 1e-9 * p->step_time;
		if (a->chosen)
			break;
	}
}

void inter_alts_print(const struct inter_alt *alt, int nalt, int nweighed, double t_plan, bool train, FILE *f)
{
	fprintf(f, "plans weighed: %d; the fastest that fit (micro-batch size x count):\n", nweighed);
	fprintf(f, "      %-12s  %-16s  %-40s  %12s  %8s  %9s%s\n", "size x count", "schedule",
		"stages (logical meshes)", "step time", "vs plan", "peak GiB",
		train ? "  gradient sync (the other way)" : "");
	for (int i = 0; i < nalt; i++) {
		const struct inter_alt *a = &alt[i];
		char mb[32], sch[24];
		snprintf(mb, sizeof mb, "%lld x %d", (long long)a->micro_batch, a->micro);
		snprintf(sch, sizeof sch, "%s%s", cost_sched_name(a->sched), a->v > 1 ? " v=2" : "");
		char sync[64];
		inter_alt_sync_str(a, train, sync, sizeof sync);
		fprintf(f, "%-4s  %-12s  %-16s  %-40s  %9.3f ms  %+7.1f%%  %9.2f%s%s\n", a->chosen ? "plan" : "", mb,
			sch, a->stages, a->step_time * 1e3, 100 * (a->step_time / t_plan - 1), a->mem_peak / (1 << 30),
			train ? "  " : "", sync);
	}
}

static double gib(double b)
{
	return b / (1 << 30);
}

int inter_explain(const struct inter_plan *p, FILE *f)
{
	fprintf(f, "plan: %d stage%s over %d devices, %d layers; schedule %s", p->nstages, p->nstages == 1 ? "" : "s",
		p->devices, p->nlayers, cost_sched_name(p->sched));
	if (p->sched == COST_SCHED_INTERLEAVED)
		fprintf(f, " (%d chunks per device)", p->v);
	fprintf(f, ", %d micro-batch%s of %lld (batch %lld)\n", p->micro, p->micro == 1 ? "" : "es",
		(long long)p->micro_batch, (long long)p->batch);
	fprintf(f,
		"  stage  layers   nodes          sub-mesh  logical  per micro-batch  transfer   grad sync     update  "
		"memory/device\n");
	for (int i = 0; i < p->nstages; i++) {
		const struct inter_stage *s = &p->stages[i];
		char layers[32], nodes[32], sub[16], mesh[16];
		snprintf(layers, sizeof layers, "%d-%d", s->layer_first, s->layer_last);
		snprintf(nodes, sizeof nodes, "%d-%d", s->node_first, s->node_last - 1);
		snprintf(sub, sizeof sub, "%dx%d", s->rows, s->cols);
		snprintf(mesh, sizeof mesh, "%dx%d", s->n0, s->n1);
		char b[4][IR_BYTES_STRLEN];
		fprintf(f,
			"  %5d  %-7s  %-13s  %-8s  %-7s  %12.3f ms  %6.3f ms  %6.3f ms  %6.3f ms  %9s (%s state%s + %.1f x %s",
			i, layers, nodes, sub, mesh, s->t_mb * 1e3, s->t_xfer * 1e3, s->t_sync * 1e3, s->t_optim * 1e3,
			ir_bytes_str(s->mem, b[0]), ir_bytes_str(s->mem_state, b[1]),
			s->zero && p->train ? " ZeRO-1" : "", s->inflight, ir_bytes_str(s->mem_act, b[2]));
		fprintf(f, " + %s%s%s%s)\n", ir_bytes_str(s->mem_once, b[3]), s->recompute ? "; recomputed" : "",
			s->lean ? "; lean: state split at a price" : "",
			s->overlap ? "; solved with its gradient sync overlapped" : "");
	}
	fprintf(f, "step time %.3f ms, throughput %.4g samples/s, MFU %.1f%%\n", p->step_time * 1e3, p->samples_per_s,
		100 * p->mfu);
	fprintf(f, "memory per device: peak %.2f GiB of %.2f GiB\n", gib(p->mem_peak), gib(p->mem_limit));
	fprintf(f, "search: %.3f s, %d intra-op solves", p->search_s, p->nsolved);
	if (p->nskipped)
		fprintf(f, ", %d candidate%s skipped", p->nskipped, p->nskipped == 1 ? "" : "s");
	fprintf(f, "\n");
	inter_alts_print(p->alt, p->nalt, p->nweighed, p->step_time, p->train, f);
	return ferror(f) ? -1 : 0;
}

void inter_skipped_print(const struct inter_plan *p, FILE *f)
{
	if (!p->nskipped)
		return;
	fprintf(f, "skipped %d candidate%s that cannot be shaped: micro-batch size %lld (%s)%s\n", p->nskipped,
		p->nskipped == 1 ? "" : "s", (long long)p->skipped_size, p->skipped_why,
		p->nskipped > 1 ? " and larger ones" : "");
}

void inter_lowered_print(const struct inter_plan *p, const struct plan *lp, FILE *f)
{
	fprintf(f, "memory per device, the prediction (the sharding solve lowering laid out) against the lowered "
		   "plan's arena (each stage's first device, at the arena's peak):\n");
	fprintf(f, "  stage   predicted       arena  parameters  accumulators   optimizer       stash  temporaries  "
		   "arena/predicted\n");
	for (int i = 0; i < lp->ndevices; i++) {
		const struct plan_device *d = &lp->devices[i];
		struct plan_mem m;
		if ((i && d->stage == lp->devices[i - 1].stage) || d->stage >= p->nstages ||
		    plan_device_memory(d, &m) < 0)
			continue;
		double pred = p->stages[d->stage].mem;
		char b[8][IR_BYTES_STRLEN];
		static const int kind[] = { PLAN_MEM_PARAM, PLAN_MEM_ACCUM, PLAN_MEM_STATE, PLAN_MEM_STASH,
					    PLAN_MEM_TEMP };
		ir_bytes_str(pred, b[0]);
		ir_bytes_str((double)d->arena_bytes, b[1]);
		for (int k = 0; k < 5; k++)
			ir_bytes_str((double)m.bytes[kind[k]], b[2 + k]);
		fprintf(f, "  %5d  %10s  %10s  %10s  %12s  %10s  %10s  %11s  %15.3f\n", d->stage, b[0], b[1], b[2],
			b[3], b[4], b[5], b[6], pred > 0 ? (double)d->arena_bytes / pred : 0);
	}
}

const char *inter_layers_str(int first, int last, char buf[INTER_LAYERS_STRLEN])
{
	if (first == last)
		snprintf(buf, INTER_LAYERS_STRLEN, "layer %d", first);
	else
		snprintf(buf, INTER_LAYERS_STRLEN, "layers %d-%d", first, last);
	return buf;
}
