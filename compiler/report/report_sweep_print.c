/*
 * report_sweep_print.c: a sweep's points (report_sweep.c) as a table, one
 * JSON object, or CSV rows (one per point, a header first; fields with a
 * comma or quote are quoted, RFC 4180).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/report/report_internal.h"

#define GIB (1024.0 * 1024 * 1024)

static const char *const sweep_name[WI_SWEEP_COUNT] = { "gpus", "tp,pp", "sensitivity" };

static void plan_short(const struct whatif *w, char *b, size_t n)
{
	snprintf(b, n, "%d stage%s, %s, %d mb", w->nstages, w->nstages == 1 ? "" : "s", cost_sched_name(w->sched),
		 w->micro);
}

/* Throughput per device against the first evaluated point's. */
static double efficiency(const struct wi_sweep_result *r, const struct wi_point *p)
{
	for (int i = 0; i < r->n; i++)
		if (r->pt[i].ok)
			return p->w.samples_per_s / p->gpus / (r->pt[i].w.samples_per_s / r->pt[i].gpus);
	return 0;
}

static void print_gpus(const struct wi_sweep_result *r, FILE *f)
{
	char b[32], plan[64];
	fprintf(f, "%6s  %-24s  %12s  %11s  %11s  %8s  %6s  %9s  %5s  %10s\n", "gpus", "plan", "step time", "samples/s",
		"tokens/s", "TFLOP/s", "MFU", "peak GiB", "fits", "scaling");
	for (int i = 0; i < r->n; i++) {
		const struct wi_point *p = &r->pt[i];
		if (!p->ok) {
			fprintf(f, "%6d  -  %s\n", p->gpus, p->err);
			continue;
		}
		const struct whatif *w = &p->w;
		if (w->manual)
			snprintf(plan, sizeof plan, "dp=%d tp=%d pp=%d", p->dp, p->tp, p->pp);
		else
			plan_short(w, plan, sizeof plan);
		fprintf(f, "%6d  %-24s  %12s  %11.4g  %11.4g  %8.1f  %5.1f%%  %9.2f  %5s  %9.1f%%%s\n", p->gpus, plan,
			wi_secs(w->t_step, b, sizeof b), w->samples_per_s, w->tokens_per_s, w->tflops_per_device,
			100 * w->mfu, w->mem_peak / GIB, w->fits ? "yes" : "NO", 100 * efficiency(r, p),
			i == r->best ? "  best" : "");
	}
}

static void print_tppp(const struct wi_sweep_result *r, FILE *f)
{
	char b[32];
	fprintf(f, "%-24s  %12s  %11s  %6s  %9s  %5s\n", "plan", "step time", "samples/s", "MFU", "peak GiB", "fits");
	for (int i = 0; i < r->n; i++) {
		const struct wi_point *p = &r->pt[i];
		if (!p->ok) {
			fprintf(f, "%-24s  -  %s\n", p->name, p->err);
			continue;
		}
		const struct whatif *w = &p->w;
		fprintf(f, "%-24s  %12s  %11.4g  %5.1f%%  %9.2f  %5s%s\n", p->name, wi_secs(w->t_step, b, sizeof b),
			w->samples_per_s, 100 * w->mfu, w->mem_peak / GIB, w->fits ? "yes" : "NO",
			i == r->best ? "  best" : "");
	}
}

static void print_sens(const struct wi_sweep_result *r, FILE *f)
{
	char b[32];
	const struct whatif *base = &r->pt[0].w;
	fprintf(f, "%-16s  %12s  %9s  %11s  %6s\n", "what", "step time", "vs base", "samples/s", "MFU");
	for (int i = 0; i < r->n; i++) {
		const struct wi_point *p = &r->pt[i];
		if (!p->ok) {
			fprintf(f, "%-16s  -  %s\n", p->name, p->err);
			continue;
		}
		fprintf(f, "%-16s  %12s  %+8.1f%%  %11.4g  %5.1f%%\n", p->name, wi_secs(p->w.t_step, b, sizeof b),
			100 * (p->w.t_step / base->t_step - 1), p->w.samples_per_s, 100 * p->w.mfu);
	}
}

int wi_sweep_print(const struct wi_sweep_result *r, FILE *f)
{
	const struct whatif *any = NULL;
	for (int i = 0; i < r->n && !any; i++)
		any = r->pt[i].ok ? &r->pt[i].w : NULL;
	if (any)
		fprintf(f, "sweep %s of %s, plan %s%s\n\n", sweep_name[r->sw.kind], any->model,
			r->sw.kind == WI_SWEEP_TPPP ? "dp x tp x pp" : any->label,
			any->train ? ", training step" : ", forward pass");
	switch (r->sw.kind) {
	case WI_SWEEP_GPUS:
		print_gpus(r, f);
		break;
	case WI_SWEEP_TPPP:
		print_tppp(r, f);
		break;
	case WI_SWEEP_SENS:
		print_sens(r, f);
		break;
	case WI_SWEEP_COUNT:
		IR_ASSERT(!"sweep kind out of range");
	}
	return ferror(f) ? ir_errorf(-EIO, "cannot write the sweep") : 0;
}

static json_t *point_json(const struct wi_sweep_result *r, const struct wi_point *p)
{
	json_t *o = json_pack("{s:s, s:i, s:b}", "name", p->name, "gpus", p->gpus, "ok", p->ok);
	if (p->tp)
		json_object_set_new(o, "plan", json_pack("{s:i, s:i, s:i}", "dp", p->dp, "tp", p->tp, "pp", p->pp));
	if (p->knob[0])
		json_object_set_new(o, "knob", json_pack("{s:s, s:f}", "what", p->knob, "factor", p->factor));
	if (!p->ok) {
		json_object_set_new(o, "error", json_string(p->err));
		return o;
	}
	const struct whatif *w = &p->w;
	json_object_set_new(o, "step_time_s", json_real(w->t_step));
	json_object_set_new(o, "samples_per_s", json_real(w->samples_per_s));
	json_object_set_new(o, "tokens_per_s", w->tokens_per_sample > 0 ? json_real(w->tokens_per_s) : json_null());
	json_object_set_new(o, "tflops_per_device", json_real(w->tflops_per_device));
	json_object_set_new(o, "mfu", json_real(w->mfu));
	json_object_set_new(o, "peak_memory_bytes", json_real(w->mem_peak));
	json_object_set_new(o, "fits", json_boolean(w->fits));
	if (r->sw.kind == WI_SWEEP_GPUS)
		json_object_set_new(o, "scaling_efficiency", json_real(efficiency(r, p)));
	json_object_set_new(o, "report", wi_json(w));
	return o;
}

json_t *wi_sweep_json(const struct wi_sweep_result *r)
{
	json_t *pts = json_array();
	for (int i = 0; i < r->n; i++)
		json_array_append_new(pts, point_json(r, &r->pt[i]));
	json_t *o = json_pack("{s:s, s:o}", "sweep", sweep_name[r->sw.kind], "points", pts);
	json_object_set_new(o, "base", r->base >= 0 ? json_integer(r->base) : json_null());
	json_object_set_new(o, "best", r->best >= 0 ? json_integer(r->best) : json_null());
	return o;
}

/* A CSV field: quoted when it holds a comma, quote or line break. */
static void field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_row(FILE *f, const struct wi_sweep_result *r, const struct wi_point *p)
{
	const struct whatif *w = &p->w;
	field(f, sweep_name[r->sw.kind]);
	fputc(',', f);
	field(f, p->name);
	fprintf(f, ",%d,%d,%d,%d,%s,%g,%d", p->gpus, p->dp, p->tp, p->pp, p->knob, p->factor, p->ok);
	if (p->ok)
		fprintf(f, ",%.15g,%.15g,%.15g,%.15g,%.15g,%.15g,%d,", w->t_step, w->samples_per_s, w->tokens_per_s,
			w->tflops_per_device, w->mfu, w->mem_peak, w->fits);
	else
		fprintf(f, ",,,,,,,,");
	field(f, p->ok ? "" : p->err);
	fputc('\n', f);
}

int wi_sweep_csv(const struct wi_sweep_result *r, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return ir_errorf(-EIO, "--csv %s: cannot write: %s", path, strerror(errno));
	fprintf(f, "sweep,name,gpus,dp,tp,pp,knob,factor,ok,step_time_s,samples_per_s,tokens_per_s,"
		   "tflops_per_device,mfu,peak_memory_bytes,fits,error\n");
	for (int i = 0; i < r->n; i++)
		csv_row(f, r, &r->pt[i]);
	return fclose(f) != 0 ? ir_errorf(-EIO, "--csv %s: write error", path) : 0;
}
