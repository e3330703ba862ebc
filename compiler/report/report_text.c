/*
 * report_text.c: a what-if (struct whatif) as text or JSON, and two of
 * them side by side with deltas (`pcc report --compare`). Every number is
 * a field of struct whatif; nothing is computed here but differences.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/report/report_internal.h"

#define GIB (1024.0 * 1024 * 1024)

static void plan_words(const struct whatif *w, char *b, size_t n)
{
	int at = snprintf(b, n, "%s%d stage%s, %s", w->manual ? "manual, " : "", w->nstages, w->nstages == 1 ? "" : "s",
			  cost_sched_name(w->sched));
	if (w->v > 1 && at > 0 && (size_t)at < n)
		at += snprintf(b + at, n - (size_t)at, " (%d chunks per device)", w->v);
	if (at > 0 && (size_t)at < n)
		snprintf(b + at, n - (size_t)at, ", %d micro-batch%s of %lld", w->micro, w->micro == 1 ? "" : "es",
			 (long long)w->micro_batch);
}

static void header(const struct whatif *w, FILE *f)
{
	char plan[160];
	plan_words(w, plan, sizeof plan);
	double n = w->params;
	fprintf(f, "model     %s: %.4g %sparameters, %s (%s), %s\n", w->model,
		n >= 1e9   ? n / 1e9
		: n >= 1e6 ? n / 1e6
			   : n,
		n >= 1e9   ? "B "
		: n >= 1e6 ? "M "
			   : "",
		w->train ? "training step" : "forward pass", cost_optim_name(w->optim), cost_prec_name(w->prec));
	fprintf(f, "cluster   %s: %d devices, %s, %.4g TFLOP/s %s, %.2f GiB\n", w->cluster, w->devices, w->device,
		w->peak_flops / 1e12, cost_prec_name(w->prec), w->mem_capacity / GIB);
	fprintf(f, "plan      %s: %s (batch %lld)", w->label, plan, (long long)w->batch);
	if (!w->manual)
		fprintf(f, "; search %.3f s", w->search_s);
	if (!w->manual && w->nskipped)
		fprintf(f, ", %d candidate%s skipped (micro-batch sizes that cannot be shaped)", w->nskipped,
			w->nskipped == 1 ? "" : "s");
	fprintf(f, "\n");
}

static void time_stack(const struct whatif *w, FILE *f)
{
	char b[32];
	fprintf(f, "\nstep time %34s\n", wi_secs(w->t_step, b, sizeof b));
	for (int i = 0; i < w->nparts; i++) {
		const struct wi_part *p = &w->part[i];
		if (p->s == 0 && i > 0)
			continue;
		fprintf(f, "  %-40s %12s %6.1f%%\n", p->label, wi_secs(p->s, b, sizeof b),
			w->t_step > 0 ? 100 * p->s / w->t_step : 0);
	}
}

static void rates(const struct whatif *w, FILE *f)
{
	fprintf(f, "\nthroughput %.4g samples/s", w->samples_per_s);
	if (w->tokens_per_sample > 0)
		fprintf(f, ", %.4g tokens/s", w->tokens_per_s);
	fprintf(f, "\nper device %.1f TFLOP/s achieved, MFU %.1f%%\n", w->tflops_per_device, 100 * w->mfu);
	if (w->price <= 0)
		return;
	fprintf(f, "price     %.4g per GPU-hour: %.4g per step", w->price, w->cost_per_step);
	if (w->tokens_per_sample > 0)
		fprintf(f, ", %.4g per million tokens", w->cost_per_mtokens);
	fprintf(f, ", %.4g per million samples\n", w->cost_per_msamples);
}

static void stage_table(const struct whatif *w, FILE *f)
{
	char b[32], rng[32], act[32];
	fprintf(f, "\nstage  %-7s  devices  %-18s  %12s  %8s  %8s  %8s  %14s  %9s  %9s\n", "layers", "mesh",
		"per micro-b.", "params", "grads", "optim", "activations", "workspace", "total GiB");
	for (int s = 0; s < w->nstages; s++) {
		const struct wi_stage *st = &w->stages[s];
		snprintf(rng, sizeof rng, "%d-%d", st->first, st->last);
		snprintf(act, sizeof act, "%.3g x %.3g", st->inflight,
			 st->inflight > 0 ? st->mem[WI_MEM_ACT] / st->inflight / GIB : 0);
		fprintf(f, "%5d  %-7s  %7d  %-18s  %12s  %8.3f  %8.3f  %8.3f  %14s  %9.3f  %9.3f%s%s\n", s, rng,
			st->devices, st->mesh, wi_secs(st->t_fwd + st->t_bwd, b, sizeof b),
			st->mem[WI_MEM_PARAMS] / GIB, st->mem[WI_MEM_GRADS] / GIB, st->mem[WI_MEM_OPTIM] / GIB, act,
			st->mem[WI_MEM_WORK] / GIB, st->mem_total / GIB, st->recompute ? "  recompute" : "",
			st->zero ? "  ZeRO" : "");
	}
}

int wi_print(const struct whatif *w, FILE *f)
{
	header(w, f);
	time_stack(w, f);
	rates(w, f);
	stage_table(w, f);
	fprintf(f, "memory per device: peak %.2f GiB (stage %d) of %.2f GiB", w->mem_peak / GIB, w->peak_stage,
		w->mem_capacity / GIB);
	if (w->mem_limit < w->mem_capacity)
		fprintf(f, ", the planner's limit %.2f GiB", w->mem_limit / GIB);
	if (w->fits)
		fprintf(f, "\nverdict   fits (%.0f%% of device memory)\n", 100 * w->mem_peak / w->mem_capacity);
	else
		fprintf(f, "\nverdict   DOES NOT FIT: stage %d needs %.2f GiB more\n", w->peak_stage,
			(w->mem_peak - w->mem_limit) / GIB);
	if (w->fidelity)
		fprintf(f, "fidelity  %s\n", w->fidelity);
	return ferror(f) ? ir_errorf(-EIO, "cannot write the report") : 0;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *stage_json(const struct wi_stage *st)
{
	json_t *mem = json_object();
	for (int k = 0; k < WI_MEM_COUNT; k++)
		json_object_set_new(mem, wi_mem_key[k], json_real(st->mem[k]));
	return json_pack("{s:s, s:i, s:i, s:i, s:b, s:b, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:f}", "mesh",
			 st->mesh, "devices", st->devices, "first", st->first, "last", st->last, "recompute",
			 st->recompute, "zero", st->zero, "fwd_s", st->t_fwd, "bwd_s", st->t_bwd, "comm_fraction",
			 st->comm_frac, "xfer_s", st->t_xfer, "grad_sync_exposed_s", st->t_sync, "optimizer_s",
			 st->t_optim, "inflight", st->inflight, "memory_bytes", mem, "total_bytes", st->mem_total);
}

static json_t *num_or_null(double x, bool ok)
{
	return ok ? json_real(x) : json_null();
}

json_t *wi_json(const struct whatif *w)
{
	json_t *o = json_object(), *parts = json_object(), *stages = json_array();
	json_object_set_new(o, "label", json_string(w->label));
	json_object_set_new(o, "mode", json_string(w->manual ? "manual" : "auto"));
	json_object_set_new(o, "model", json_string(w->model));
	json_object_set_new(o, "cluster", json_string(w->cluster));
	json_object_set_new(o, "device", json_string(w->device));
	json_object_set_new(o, "devices", json_integer(w->devices));
	json_object_set_new(o, "train", json_boolean(w->train));
	json_object_set_new(o, "precision", json_string(cost_prec_name(w->prec)));
	json_object_set_new(o, "optimizer", json_string(cost_optim_name(w->optim)));
	json_object_set_new(o, "schedule", json_string(cost_sched_name(w->sched)));
	json_object_set_new(o, "chunks_per_device", json_integer(w->v));
	if (w->manual) {
		const struct report_plan *p = &w->plan;
		json_object_set_new(o, "plan",
				    json_pack("{s:i, s:i, s:i, s:i, s:s, s:i, s:i, s:b}", "dp", p->dp, "tp", p->tp,
					      "pp", p->pp, "mb", w->micro, "schedule", cost_sched_name(p->sched), "v",
					      w->v, "zero", p->zero, "recompute", p->recompute > 0));
	}
	json_object_set_new(o, "micro_batches", json_integer(w->micro));
	json_object_set_new(o, "micro_batch", json_integer(w->micro_batch));
	json_object_set_new(o, "batch", json_integer(w->batch));
	json_object_set_new(o, "params", json_real(w->params));
	json_object_set_new(o, "step_time_s", json_real(w->t_step));
	for (int i = 0; i < w->nparts; i++)
		json_object_set_new(parts, w->part[i].key, json_real(w->part[i].s));
	json_object_set_new(o, "time_s", parts);
	json_object_set_new(o, "samples_per_s", json_real(w->samples_per_s));
	json_object_set_new(o, "tokens_per_s", num_or_null(w->tokens_per_s, w->tokens_per_sample > 0));
	json_object_set_new(o, "model_flops_per_step", json_real(w->model_flops));
	json_object_set_new(o, "hw_flops_per_step", json_real(w->hw_flops));
	json_object_set_new(o, "tflops_per_device", json_real(w->tflops_per_device));
	json_object_set_new(o, "mfu", json_real(w->mfu));
	json_object_set_new(o, "peak_memory_bytes", json_real(w->mem_peak));
	json_object_set_new(o, "memory_capacity_bytes", json_real(w->mem_capacity));
	json_object_set_new(o, "memory_limit_bytes", json_real(w->mem_limit));
	json_object_set_new(o, "peak_stage", json_integer(w->peak_stage));
	json_object_set_new(o, "fits", json_boolean(w->fits));
	json_object_set_new(o, "fidelity", w->fidelity ? json_string(w->fidelity) : json_null());
	json_object_set_new(o, "price_per_gpu_hour", num_or_null(w->price, w->price > 0));
	json_object_set_new(o, "cost_per_step", num_or_null(w->cost_per_step, w->price > 0));
	json_object_set_new(o, "cost_per_million_tokens",
			    num_or_null(w->cost_per_mtokens, w->price > 0 && w->tokens_per_sample > 0));
	json_object_set_new(o, "cost_per_million_samples", num_or_null(w->cost_per_msamples, w->price > 0));
	if (!w->manual) {
		json_object_set_new(o, "search_s", json_real(w->search_s));
		json_object_set_new(o, "breakdown_residual", json_real(w->residual));
	}
	for (int s = 0; s < w->nstages; s++) {
		json_t *st = stage_json(&w->stages[s]);
		json_object_set_new(st, "ops", wi_ops_json(&w->stages[s]));
		json_array_append_new(stages, st);
	}
	json_object_set_new(o, "stages", stages);
	if (!w->manual) {
		json_object_set_new(o, "plans_weighed", json_integer(w->nweighed));
		json_object_set_new(o, "alternatives", wi_alts_json(w));
	}
	return o;
}

/* ---- side by side ----------------------------------------------------------- */

/* The step-time part key of w, or 0 when w has none. */
static double part_of(const struct whatif *w, const char *key, const char **label)
{
	for (int i = 0; i < w->nparts; i++)
		if (!strcmp(w->part[i].key, key)) {
			if (label)
				*label = w->part[i].label;
			return w->part[i].s;
		}
	return 0;
}

static void row(FILE *f, const char *what, const char *a, const char *b, const char *delta)
{
	fprintf(f, "%-44s %-26s %-26s %s\n", what, a, b, delta);
}

/* "+12.3%" of b over a; "" when a is 0. */
static const char *rel(double a, double b, char *buf, size_t n)
{
	if (a == 0)
		snprintf(buf, n, "%s", b == 0 ? "" : "new");
	else
		snprintf(buf, n, "%+.1f%%", 100 * (b - a) / fabs(a));
	return buf;
}

static void row_t(FILE *f, const char *what, double a, double b)
{
	char x[32], y[32], d[32];
	row(f, what, wi_secs(a, x, sizeof x), wi_secs(b, y, sizeof y), rel(a, b, d, sizeof d));
}

static void row_n(FILE *f, const char *what, const char *fmt, double a, double b)
{
	char x[32], y[32], d[32];
	snprintf(x, sizeof x, fmt, a);
	snprintf(y, sizeof y, fmt, b);
	row(f, what, x, y, rel(a, b, d, sizeof d));
}

/* The step time's parts by group (the same rows for both plans). */
static void parts_side(const struct whatif *a, const struct whatif *b, FILE *f)
{
	for (int g = 0; g < WI_GROUP_COUNT; g++) {
		double x = wi_group_time(a, g), y = wi_group_time(b, g);
		if (x == 0 && y == 0)
			continue;
		char what[72];
		snprintf(what, sizeof what, "  %s", wi_group_label[g]);
		row_t(f, what, x, y);
	}
}

int wi_compare_print(const struct whatif *a, const struct whatif *b, FILE *f)
{
	char x[160], y[160], la[112], lb[112];
	snprintf(la, sizeof la, "A: %s", a->label);
	snprintf(lb, sizeof lb, "B: %s", b->label);
	row(f, "", la, lb, "B vs A");
	row(f, "cluster", a->cluster, b->cluster, "");
	row_n(f, "devices", "%.0f", a->devices, b->devices);
	plan_words(a, x, sizeof x);
	plan_words(b, y, sizeof y);
	fprintf(f, "plan A: %s\nplan B: %s\n", x, y);
	row_n(f, "batch (samples per step)", "%.0f", (double)a->batch, (double)b->batch);
	row_t(f, "step time", a->t_step, b->t_step);
	parts_side(a, b, f);
	row_n(f, "throughput (samples/s)", "%.4g", a->samples_per_s, b->samples_per_s);
	if (a->tokens_per_sample > 0 || b->tokens_per_sample > 0)
		row_n(f, "throughput (tokens/s)", "%.4g", a->tokens_per_s, b->tokens_per_s);
	row_n(f, "TFLOP/s per device", "%.1f", a->tflops_per_device, b->tflops_per_device);
	snprintf(la, sizeof la, "%.1f%%", 100 * a->mfu);
	snprintf(lb, sizeof lb, "%.1f%%", 100 * b->mfu);
	snprintf(x, sizeof x, "%+.1f points", 100 * (b->mfu - a->mfu));
	row(f, "MFU", la, lb, x);
	row_n(f, "peak memory per device (GiB)", "%.2f", a->mem_peak / GIB, b->mem_peak / GIB);
	row(f, "fits", a->fits ? "yes" : "NO", b->fits ? "yes" : "NO", "");
	if (a->price > 0 && a->tokens_per_sample > 0)
		row_n(f, "cost per million tokens", "%.4g", a->cost_per_mtokens, b->cost_per_mtokens);
	else if (a->price > 0)
		row_n(f, "cost per million samples", "%.4g", a->cost_per_msamples, b->cost_per_msamples);
	return ferror(f) ? ir_errorf(-EIO, "cannot write the report") : 0;
}

json_t *wi_compare_json(const struct whatif *a, const struct whatif *b)
{
	json_t *d = json_object(), *parts = json_object();
	json_object_set_new(d, "step_time_s", json_real(b->t_step - a->t_step));
	json_object_set_new(d, "step_time_ratio", json_real(a->t_step > 0 ? b->t_step / a->t_step : 0));
	json_object_set_new(d, "samples_per_s_ratio",
			    json_real(a->samples_per_s > 0 ? b->samples_per_s / a->samples_per_s : 0));
	json_object_set_new(d, "mfu", json_real(b->mfu - a->mfu));
	json_object_set_new(d, "peak_memory_bytes", json_real(b->mem_peak - a->mem_peak));
	for (int k = 0; k < a->nparts + b->nparts; k++) {
		const struct wi_part *p = k < a->nparts ? &a->part[k] : &b->part[k - a->nparts];
		if (!json_object_get(parts, p->key))
			json_object_set_new(parts, p->key,
					    json_real(part_of(b, p->key, NULL) - part_of(a, p->key, NULL)));
	}
	json_object_set_new(d, "time_s", parts);
	return json_pack("{s:o, s:o, s:o}", "a", wi_json(a), "b", wi_json(b), "delta", d);
}
