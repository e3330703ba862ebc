/*
 * report_html.c: `pcc report --html FILE`: one self-contained HTML5 page
 * (no scripts, no external files): the plans' summary, step-time parts
 * and memory per stage as tables, a sweep's points as a table, and the
 * charts (report_chart.c) as PNG images embedded in base64 data URIs
 * (separate images, so that nothing in one can clash with another). Built
 * without cairo the page keeps its tables and says the charts are missing.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "compiler/report/report_internal.h"

#define GIB (1024.0 * 1024 * 1024)

static void esc(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
}

static void base64(FILE *f, const unsigned char *p, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		fputc(a[v >> 18 & 63], f);
		fputc(a[v >> 12 & 63], f);
		fputc(i + 1 < n ? a[v >> 6 & 63] : '=', f);
		fputc(i + 2 < n ? a[v & 63] : '=', f);
	}
}

static void image(FILE *f, const struct whatif *const *w, int n, const struct wi_sweep_result *sw, int which,
		  const char *alt)
{
	unsigned char *png;
	size_t len;
	if (wi_chart_png(w, n, sw, which, &png, &len) < 0) {
		fprintf(f, "<p class=\"note\">(%s: no chart; ", alt);
		esc(f, ir_error());
		fputs(")</p>\n", f);
		return;
	}
	fprintf(f, "<img alt=\"%s\" src=\"data:image/png;base64,", alt);
	base64(f, png, len);
	fputs("\">\n", f);
	ir_free(png);
}

/* A table cell; th when head. */
__attribute__((format(printf, 3, 4))) static void cell(FILE *f, bool head, const char *fmt, ...)
{
	char s[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof s, fmt, ap);
	va_end(ap);
	fputs(head ? "<th>" : "<td>", f);
	esc(f, s);
	fputs(head ? "</th>" : "</td>", f);
}

/* A comparison's B/A cell: "1.38x"; "new" where A is 0; empty where
 * both are, or for n != 2 (no cell). */
static void ratio(FILE *f, int n, double a, double b)
{
	if (n != 2)
		return;
	if (a != 0)
		cell(f, false, "%.3gx", b / a);
	else
		cell(f, false, "%s", b != 0 ? "new" : "");
}

static void summary(FILE *f, const struct whatif *const *w, int n)
{
	char b[32];
	fputs("<h2>Summary</h2>\n<table>\n<tr>", f);
	cell(f, true, "%s", "");
	for (int i = 0; i < n; i++)
		cell(f, true, "%s%s", n > 1 ? (i ? "B: " : "A: ") : "", w[i]->label);
	if (n == 2)
		cell(f, true, "%s", "B/A");
	fputs("</tr>\n", f);
	/* a row; ROWR with B/A of the field x */
#define ROW_(name, r, ...)                           \
	do {                                         \
		fputs("<tr>", f);                    \
		cell(f, true, "%s", name);           \
		for (int i = 0; i < n; i++)          \
			cell(f, false, __VA_ARGS__); \
		r;                                   \
		fputs("</tr>\n", f);                 \
	} while (0)
#define ROW(name, ...) ROW_(name, ratio(f, n, 0, 0), __VA_ARGS__)
#define ROWR(name, x, ...) ROW_(name, ratio(f, n, w[0]->x, w[n - 1]->x), __VA_ARGS__)
	ROW("cluster", "%s (%d devices, %s)", w[i]->cluster, w[i]->devices, w[i]->device);
	ROW("plan", "%d stage%s, %s, %d micro-batch%s of %lld", w[i]->nstages, w[i]->nstages == 1 ? "" : "s",
	    cost_sched_name(w[i]->sched), w[i]->micro, w[i]->micro == 1 ? "" : "es", (long long)w[i]->micro_batch);
	ROW("step", "%s, batch %lld", w[i]->train ? "training" : "forward", (long long)w[i]->batch);
	ROWR("step time", t_step, "%s", wi_secs(w[i]->t_step, b, sizeof b));
	ROWR("throughput", samples_per_s, "%.4g samples/s, %.4g tokens/s", w[i]->samples_per_s, w[i]->tokens_per_s);
	ROWR("per device", tflops_per_device, "%.1f TFLOP/s, MFU %.1f%%", w[i]->tflops_per_device, 100 * w[i]->mfu);
	ROWR("peak memory", mem_peak, "%.2f of %.2f GiB per device (%s)", w[i]->mem_peak / GIB,
	     w[i]->mem_capacity / GIB, w[i]->fits ? "fits" : "does not fit");
	if (w[0]->price > 0)
		ROWR("cost", cost_per_step, "%.4g per step, %.4g per million tokens", w[i]->cost_per_step,
		     w[i]->cost_per_mtokens);
	ROW("cost model's error", "%s", w[i]->fidelity ? w[i]->fidelity : "");
#undef ROWR
#undef ROW
#undef ROW_
	fputs("</table>\n", f);
}

/* One plan: its own parts; plans compared: the parts by group, the same
 * rows for each, and B/A. */
static void parts(FILE *f, const struct whatif *const *w, int n)
{
	char b[32];
	fputs("<h2>Step time</h2>\n<table>\n<tr>", f);
	cell(f, true, "%s", "part");
	for (int i = 0; i < n; i++)
		cell(f, true, "%s%s", n > 1 ? (i ? "B: " : "A: ") : "", w[i]->label);
	if (n == 2)
		cell(f, true, "%s", "B/A");
	fputs("</tr>\n", f);
	if (n == 1)
		for (int k = 0; k < w[0]->nparts; k++) {
			fputs("<tr>", f);
			cell(f, true, "%s", w[0]->part[k].label);
			cell(f, false, "%s", wi_secs(w[0]->part[k].s, b, sizeof b));
			fputs("</tr>\n", f);
		}
	for (int g = 0; g < WI_GROUP_COUNT && n > 1; g++) {
		bool any = false;
		for (int i = 0; i < n; i++)
			any |= wi_group_time(w[i], g) != 0;
		if (!any)
			continue;
		fputs("<tr>", f);
		cell(f, true, "%s", wi_group_label[g]);
		for (int i = 0; i < n; i++)
			cell(f, false, "%s", wi_secs(wi_group_time(w[i], g), b, sizeof b));
		ratio(f, n, wi_group_time(w[0], g), wi_group_time(w[n - 1], g));
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	image(f, w, n, NULL, WI_CHART_STEPS, "step time by part");
}

static void stages(FILE *f, const struct whatif *w)
{
	char b[32];
	fputs("<h3>", f);
	esc(f, w->label);
	fputs("</h3>\n<table>\n<tr>", f);
	const char *head[] = { "stage", "devices", "mesh", "per micro-batch" };
	for (size_t k = 0; k < sizeof head / sizeof *head; k++)
		cell(f, true, "%s", head[k]);
	for (int k = 0; k < WI_MEM_COUNT; k++)
		cell(f, true, "%s (GiB)", wi_mem_label[k]);
	cell(f, true, "%s", "total (GiB)");
	fputs("</tr>\n", f);
	for (int s = 0; s < w->nstages; s++) {
		const struct wi_stage *st = &w->stages[s];
		fputs("<tr>", f);
		cell(f, false, "%d", s);
		cell(f, false, "%d", st->devices);
		cell(f, false, "%s%s%s", st->mesh, st->zero ? ", ZeRO" : "", st->recompute ? ", recompute" : "");
		cell(f, false, "%s", wi_secs(st->t_fwd + st->t_bwd, b, sizeof b));
		for (int k = 0; k < WI_MEM_COUNT; k++)
			cell(f, false, "%.3f", st->mem[k] / GIB);
		cell(f, false, "%.3f", st->mem_total / GIB);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* An automatic plan's --explain: the plans weighed, each stage's costliest ops. */
static void why(FILE *f, const struct whatif *w)
{
	char b[32];
	if (w->manual || w->nalt == 0)
		return;
	fputs("<h3>", f);
	esc(f, w->label);
	fprintf(f, ": the fastest of %d plans weighed</h3>\n<table>\n<tr>", w->nweighed);
	const char *head[] = {
		"micro-batch size x count", "schedule", "stages (logical meshes)", "step time", "vs plan",
		"peak memory (GiB)"
	};
	for (size_t k = 0; k < sizeof head / sizeof *head; k++)
		cell(f, true, "%s", head[k]);
	if (w->train)
		cell(f, true, "%s", "gradient sync (the other way)");
	fputs("</tr>\n", f);
	for (int i = 0; i < w->nalt; i++) {
		const struct inter_alt *a = &w->alt[i];
		fputs(a->chosen ? "<tr class=\"best\">" : "<tr>", f);
		cell(f, false, "%lld x %d", (long long)a->micro_batch, a->micro);
		cell(f, false, "%s%s", cost_sched_name(a->sched), a->v > 1 ? " v=2" : "");
		cell(f, false, "%s", a->stages);
		cell(f, false, "%s", wi_secs(a->step_time, b, sizeof b));
		cell(f, false, "%+.1f%%", 100 * (a->step_time / w->t_step - 1));
		cell(f, false, "%.2f", a->mem_peak / GIB);
		if (w->train) {
			char sync[64];
			inter_alt_sync_str(a, true, sync, sizeof sync);
			cell(f, false, "%s", sync);
		}
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	if (w->train)
		fputs("<p class=\"note\">Each training plan was solved twice: with every stage's gradient reduction "
		      "after the backward pass, and with it overlapped with the backward pass (the layers then pay "
		      "for it in full and may shard weights to shrink it). A row is the faster way; the last column "
		      "gives the other's step time against it.</p>\n",
		      f);
	fputs("<table>\n<tr>", f);
	const char *ohead[] = { "stage",          "op", "time per micro-batch", "sharding and collective", "runner-up",
				"runner-up costs" };
	for (size_t k = 0; k < sizeof ohead / sizeof *ohead; k++)
		cell(f, true, "%s", ohead[k]);
	fputs("</tr>\n", f);
	for (int s = 0; s < w->nstages; s++)
		for (int i = 0; i < w->stages[s].nops; i++) {
			const struct wi_op *o = &w->stages[s].ops[i];
			fputs("<tr>", f);
			cell(f, false, "%d", s);
			cell(f, false, "%s %s", o->n.op, o->n.name);
			char times[16] = "";
			if (o->count > 1)
				snprintf(times, sizeof times, " x %d", o->count);
			cell(f, false, "%s%s", wi_secs(o->n.t, b, sizeof b), times);
			cell(f, false, "%s%s%s", o->n.chosen, o->n.coll[0] ? "; " : "", o->n.coll);
			cell(f, false, "%s", isfinite(o->n.delta) ? o->n.runner : "");
			cell(f, false, "%s%s", isfinite(o->n.delta) ? "+" : "",
			     isfinite(o->n.delta) ? wi_secs(o->n.delta, b, sizeof b) : "");
			fputs("</tr>\n", f);
		}
	fputs("</table>\n", f);
}

static void sweep_table(FILE *f, const struct wi_sweep_result *r)
{
	char b[32];
	fputs("<h2>Sweep</h2>\n<table>\n<tr>", f);
	const char *head[] = { "point", "step time", "samples/s", "tokens/s", "TFLOP/s per device",
			       "MFU",   "peak GiB",  "fits" };
	for (size_t k = 0; k < sizeof head / sizeof *head; k++)
		cell(f, true, "%s", head[k]);
	fputs("</tr>\n", f);
	for (int i = 0; i < r->n; i++) {
		const struct wi_point *p = &r->pt[i];
		fputs(i == r->best ? "<tr class=\"best\">" : "<tr>", f);
		cell(f, false, "%s", p->name);
		if (!p->ok) {
			fputs("<td colspan=\"7\">", f);
			esc(f, p->err);
			fputs("</td></tr>\n", f);
			continue;
		}
		cell(f, false, "%s", wi_secs(p->w.t_step, b, sizeof b));
		cell(f, false, "%.4g", p->w.samples_per_s);
		cell(f, false, "%.4g", p->w.tokens_per_s);
		cell(f, false, "%.1f", p->w.tflops_per_device);
		cell(f, false, "%.1f%%", 100 * p->w.mfu);
		cell(f, false, "%.2f", p->w.mem_peak / GIB);
		cell(f, false, "%s", p->w.fits ? "yes" : "no");
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
	image(f, NULL, 0, r, WI_CHART_SWEEP,
	      r->sw.kind == WI_SWEEP_GPUS ? "scaling: samples/s (log scale) and MFU against GPUs (log scale)"
					  : "sweep");
}

#if PCC_HAVE_CAIRO
/* The charts' colours, each meaning once (report_internal.h's palette). */
static void colours(FILE *f)
{
	fputs("<h2>Colours</h2>\n<table class=\"key\">\n", f);
	for (int k = 0; k < INK_COUNT; k++) {
		fprintf(f, "<tr><td class=\"swatch\" style=\"background:#%06x\"></td>", chart_ink_rgb[k]);
		cell(f, false, "%s", chart_ink_name[k]);
		fputs("</tr>\n", f);
	}
	fputs("</table>\n", f);
}
#endif

static const char style[] =
	"body{font-family:'DejaVu Sans',sans-serif;margin:2em;color:#222;max-width:1000px}"
	"table{border-collapse:collapse;margin:0.5em 0 1em}th,td{border:1px solid #ccc;padding:3px 8px;"
	"text-align:right}th{background:#f3f3f3;text-align:left}tr.best td{font-weight:bold}"
	"img{max-width:100%;display:block;margin:0.5em 0 1.5em}.note{color:#888}"
	".key td{text-align:left;border:none;padding:1px 6px}.key td.swatch{width:2em;border:1px solid #ccc}";

int wi_html_write(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return ir_errorf(-EIO, "--html %s: cannot write: %s", path, strerror(errno));
	const char *model = n > 0 ? w[0]->model : sw && sw->n ? sw->pt[0].w.model : "";
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>pcc report: ");
	esc(f, model);
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>pcc report</h1>\n<p>Model ", style);
	esc(f, model);
	fputs(", predicted by pcc's cost model (no hardware run).</p>\n", f);
	if (n > 0) {
		summary(f, w, n);
		parts(f, w, n);
		fputs("<h2>Memory per device by stage</h2>\n", f);
		for (int i = 0; i < n; i++)
			stages(f, w[i]);
		image(f, w, n, NULL, WI_CHART_MEMORY, "memory per stage");
		fputs("<h2>One step, per stage</h2>\n", f);
		bool zoom = false;
		for (int i = 0; i < n; i++)
			zoom |= wi_timeline_panels(w[i]) > 1;
		image(f, w, n, NULL, WI_CHART_TIMELINE,
		      zoom ? "timeline: the whole step, then its start and its end zoomed in" : "timeline");
		bool any = false;
		for (int i = 0; i < n; i++)
			any |= !w[i]->manual && w[i]->nalt > 0;
		if (any)
			fputs("<h2>Why this plan</h2>\n", f);
		for (int i = 0; i < n; i++)
			why(f, w[i]);
	}
	if (sw)
		sweep_table(f, sw);
#if PCC_HAVE_CAIRO
	colours(f);
#endif
	fputs("</body>\n</html>\n", f);
	return fclose(f) != 0 ? ir_errorf(-EIO, "--html %s: write error", path) : 0;
}
