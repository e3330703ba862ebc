/*
 * report_print.c: a plan's report as a text table or one JSON object.
 * Every number printed is a field of struct report, computed in
 * report_eval.c.
 */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "compiler/report/report_internal.h"

static const char *secs(double t, char *b, size_t n)
{
	if (t >= 1)
		snprintf(b, n, "%.3f s", t);
	else if (t >= 1e-3)
		snprintf(b, n, "%.3f ms", t * 1e3);
	else
		snprintf(b, n, "%.1f us", t * 1e6);
	return b;
}

static const char *gib(double x, char *b, size_t n)
{
	snprintf(b, n, "%.2f GiB", x / (1024.0 * 1024 * 1024));
	return b;
}

static void line_t(FILE *f, const char *what, double t, double total, const char *note)
{
	char b[32];
	fprintf(f, "  %-30s %12s %6.1f%%%s%s\n", what, secs(t, b, sizeof b), total > 0 ? 100 * t / total : 0,
		note && *note ? "  " : "", note ? note : "");
}

static void line_m(FILE *f, const char *what, double x, const char *note)
{
	char b[32];
	fprintf(f, "  %-30s %12s%s%s\n", what, gib(x, b, sizeof b), note && *note ? "  " : "", note ? note : "");
}

static int print_text(const struct report *r, FILE *f)
{
	const struct report_plan *p = &r->plan;
	const struct report_stage *ps = &r->stages[r->peak_stage];
	char b1[64], b2[64], note[160];
	fprintf(f, "model     %s: %.4g B parameters, %.4g GFLOP forward per micro-batch\n", r->model, r->params / 1e9,
		r->fwd_flops / 1e9);
	fprintf(f, "cluster   %s: %d devices used, %s, %.4g TFLOP/s %s, %s\n", r->cluster, r->devices,
		r->dev.desc[0] ? r->dev.desc : r->dev.name, cost_device_peak(&r->dev, r->prec) / 1e12,
		cost_prec_name(r->prec), gib(r->dev.mem_bytes, b1, sizeof b1));
	fprintf(f, "plan      dp=%d tp=%d pp=%d, %s", p->dp, p->tp, p->pp, cost_sched_name(p->sched));
	if (p->sched == COST_SCHED_INTERLEAVED)
		fprintf(f, " (v=%d)", p->v);
	fprintf(f, ", zero=%d, recompute=%d, %s, %s%s\n", p->zero, p->recompute, cost_optim_name(p->optim),
		cost_prec_name(r->prec), r->mixed ? " mixed precision" : "");
	fprintf(f, "batch     %lld samples per step = dp %d x %d micro-batches x %lld%s\n", (long long)r->batch, p->dp,
		r->mb, (long long)r->micro_batch, r->batch_chosen ? " (micro-batch size chosen)" : "");
	fprintf(f, "\nstep time %34s\n", secs(r->t_step, b1, sizeof b1));
	snprintf(note, sizeof note, "forward, backward x2%s", p->recompute ? ", recompute" : "");
	line_t(f, "compute", r->t_compute, r->t_step, note);
	snprintf(note, sizeof note, "%d collectives forward, %d backward per micro-batch", ps->n_tp_fwd, ps->n_tp_bwd);
	line_t(f, "tensor-parallel comm (tp)", r->t_tp, r->t_step, p->tp > 1 ? note : "");
	if (r->t_bstat > 0) {
		snprintf(note, sizeof note, "%d all-reduced forward per micro-batch", ps->n_bs);
		line_t(f, "batch statistics over dp", r->t_bstat, r->t_step, note);
	}
	line_t(f, "pipeline transfers (pp)", r->t_pp, r->t_step, "");
	snprintf(note, sizeof note, "bubble fraction %.1f%%", 100 * cost_bubble_fraction(p->sched, p->pp, r->mb, p->v));
	line_t(f, "pipeline bubble", r->t_bubble, r->t_step, p->pp > 1 ? note : "");
	line_t(f, "data-parallel comm (dp)", r->t_dp, r->t_step, p->dp > 1 ? "exposed, after overlap" : "");
	line_t(f, "optimizer step", r->t_optim, r->t_step, "");
	fprintf(f, "\nthroughput %.4g samples/s", r->samples_per_s);
	if (r->tokens_per_sample > 0)
		fprintf(f, ", %.4g tokens/s", r->tokens_per_s);
	fprintf(f, "\nper device %.1f TFLOP/s achieved, MFU %.1f%%\n", r->tflops_per_device, 100 * r->mfu);
	fprintf(f, "\nmemory per device (stage %d, the fullest)\n", r->peak_stage);
	line_m(f, "parameters", ps->mem_params, "");
	line_m(f, "gradients", ps->mem_grads, "");
	line_m(f, "optimizer state", ps->mem_optim, "");
	snprintf(note, sizeof note, "%s per micro-batch x %.3g in flight", gib(ps->act_mb, b2, sizeof b2),
		 ps->inflight);
	line_m(f, "activations", ps->mem_act, note);
	line_m(f, "buffers and workspace", ps->mem_buffers, "");
	snprintf(note, sizeof note, "of %s", gib(r->dev.mem_bytes, b1, sizeof b1));
	line_m(f, "total", ps->mem_total, note);
	if (r->fits)
		fprintf(f, "verdict   fits (%.0f%% of device memory)\n", 100 * r->mem_peak / r->dev.mem_bytes);
	else
		fprintf(f, "verdict   DOES NOT FIT: stage %d needs %s more than the device's %s\n", r->peak_stage,
			gib(r->mem_peak - r->dev.mem_bytes, b1, sizeof b1), gib(r->dev.mem_bytes, b2, sizeof b2));
	if (r->fidelity)
		fprintf(f, "fidelity  %s\n", r->fidelity);
	if (r->nstages > 1) {
		fprintf(f, "\nstage  segments  params/dev  fwd+bwd/mb    tp/mb   memory\n");
		for (int s = 0; s < r->nstages; s++) {
			const struct report_stage *st = &r->stages[s];
			fprintf(f, "%5d  %8d  %9.4gB  %10s  %7s  %s\n", s, st->layers, st->params / 1e9,
				secs(st->t_fwd + st->t_bwd + st->t_recompute, b1, sizeof b1),
				secs(st->t_tp_fwd + st->t_tp_bwd, b2, sizeof b2),
				gib(st->mem_total, note, sizeof note));
		}
	}
	return ferror(f) ? ir_errorf(-EIO, "cannot write the report") : 0;
}

static json_t *stage_json(const struct report_stage *st)
{
	return json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
			 "s:f, s:f, s:f, s:f}",
			 "first_node", st->first, "last_node", st->last, "layers", st->layers, "params", st->params,
			 "fwd_s", st->t_fwd, "bwd_s", st->t_bwd, "tp_fwd_s", st->t_tp_fwd, "tp_bwd_s", st->t_tp_bwd,
			 "tp_fwd_collectives", st->n_tp_fwd, "tp_bwd_collectives", st->n_tp_bwd, "recompute_s",
			 st->t_recompute, "per_microbatch_s", st->t_mb, "dp_sync_s", st->t_dp, "optimizer_s",
			 st->t_optim, "activation_bytes_per_microbatch", st->act_mb, "inflight", st->inflight,
			 "param_bytes", st->mem_params, "grad_bytes", st->mem_grads, "optimizer_bytes", st->mem_optim,
			 "activation_bytes", st->mem_act, "total_bytes", st->mem_total);
}

json_t *report_json(const struct report *r)
{
	const struct report_plan *p = &r->plan;
	const struct report_stage *ps = &r->stages[r->peak_stage];
	json_t *o = json_object(), *stages = json_array();
	json_object_set_new(o, "model", json_string(r->model));
	json_object_set_new(o, "cluster", json_string(r->cluster));
	json_object_set_new(o, "device", json_string(r->dev.name));
	json_object_set_new(o, "devices", json_integer(r->devices));
	json_object_set_new(o, "plan",
			    json_pack("{s:i, s:i, s:i, s:i, s:s, s:i, s:i, s:i, s:s, s:s}", "dp", p->dp, "tp", p->tp,
				      "pp", p->pp, "mb", r->mb, "schedule", cost_sched_name(p->sched), "v", p->v,
				      "zero", p->zero, "recompute", p->recompute, "optim", cost_optim_name(p->optim),
				      "precision", cost_prec_name(r->prec)));
	json_object_set_new(o, "batch", json_integer(r->batch));
	json_object_set_new(o, "micro_batch", json_integer(r->micro_batch));
	json_object_set_new(o, "params", json_real(r->params));
	json_object_set_new(o, "fwd_flops_per_microbatch", json_real(r->fwd_flops));
	json_object_set_new(o, "model_flops_per_step", json_real(r->model_flops));
	json_object_set_new(o, "step_time_s", json_real(r->t_step));
	json_object_set_new(o, "time_s",
			    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "compute", r->t_compute, "tp", r->t_tp,
				      "batch_stats", r->t_bstat, "pp", r->t_pp, "bubble", r->t_bubble, "dp", r->t_dp,
				      "optimizer", r->t_optim));
	json_object_set_new(o, "samples_per_s", json_real(r->samples_per_s));
	json_object_set_new(o, "tokens_per_s", r->tokens_per_sample > 0 ? json_real(r->tokens_per_s) : json_null());
	json_object_set_new(o, "tflops_per_device", json_real(r->tflops_per_device));
	json_object_set_new(o, "mfu", json_real(r->mfu));
	json_object_set_new(o, "peak_memory_bytes", json_real(r->mem_peak));
	json_object_set_new(o, "memory_capacity_bytes", json_real(r->dev.mem_bytes));
	json_object_set_new(o, "peak_stage", json_integer(r->peak_stage));
	json_object_set_new(o, "memory_bytes",
			    json_pack("{s:f, s:f, s:f, s:f, s:f}", "params", ps->mem_params, "grads", ps->mem_grads,
				      "optimizer", ps->mem_optim, "activations", ps->mem_act, "buffers",
				      ps->mem_buffers));
	json_object_set_new(o, "fits", json_boolean(r->fits));
	json_object_set_new(o, "fidelity", r->fidelity ? json_string(r->fidelity) : json_null());
	for (int s = 0; s < r->nstages; s++)
		json_array_append_new(stages, stage_json(&r->stages[s]));
	json_object_set_new(o, "stages", stages);
	return o;
}

static int print_json(const struct report *r, FILE *f)
{
	json_t *o = report_json(r);
	int rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
	fputc('\n', f);
	json_decref(o);
	return rc < 0 ? ir_errorf(-EIO, "cannot write JSON") : 0;
}

int report_print(const struct report *r, bool json, FILE *f)
{
	IR_ASSERT(r->nstages > 0);
	return json ? print_json(r, f) : print_text(r, f);
}

int report_explain(const struct report *r, FILE *f)
{
	char b[32];
	fprintf(f, "\ntensor-parallel collectives per micro-batch (tp=%d):\n", r->plan.tp);
	fprintf(f, "stage  pass  collective       bytes/device        time  node: cause\n");
	for (int i = 0; i < r->nevents; i++) {
		const struct report_event *e = &r->events[i];
		fprintf(f, "%5d  %-4s  %-14s  %12.4g  %10s  %s: %s\n", e->stage, e->fwd ? "fwd" : "bwd",
			cost_coll_name(e->coll), e->bytes, secs(e->t, b, sizeof b), e->node, e->why);
	}
	return ferror(f) ? ir_errorf(-EIO, "cannot write the report") : 0;
}
