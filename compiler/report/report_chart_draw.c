/*
 * report_chart_draw.c: the plans' charts (report_chart.c says which):
 * the step-time stack (one bar of parts per plan, a shared scale), memory
 * per stage by kind with the device's capacity and the planner's limit,
 * and the timeline of one step per stage. Plus the small drawing helpers
 * the sweep charts share (text, palette, ticks, titles, legends).
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "compiler/report/report_internal.h"

const unsigned chart_ink_rgb[INK_COUNT] = {
	[INK_COMPUTE] = 0x4e79a7, [INK_BACKWARD] = 0xa0cbe8, [INK_RECOMPUTE] = 0x499894,
	[INK_COLL] = 0xf28e2b,    [INK_TRANSFER] = 0xb07aa1, [INK_RECV_GRAD] = 0xd4a6c8,
	[INK_SYNC] = 0xf1ce63,    [INK_OPTIM] = 0x9d7660,    [INK_IDLE] = 0xd9d4d0,
	[INK_PARAMS] = 0x59a14f,  [INK_GRADS] = 0x8cd17d,    [INK_OPTIM_STATE] = 0xd7b5a6,
	[INK_ACT] = 0xd37295,     [INK_WORK] = 0x86bcb6,     [INK_THROUGHPUT] = 0x2f4b7c,
	[INK_MFU] = 0xb6992d,     [INK_IDEAL] = 0x79706e,    [INK_WORSE] = 0xd62728,
	[INK_LIMIT] = 0xff9d9a,   [INK_BETTER] = 0x2ca02c,
};
const char *const chart_ink_name[INK_COUNT] = {
	[INK_COMPUTE] = "compute (a forward)",
	[INK_BACKWARD] = "a backward",
	[INK_RECOMPUTE] = "recomputation",
	[INK_COLL] = "collectives inside the micro-batches",
	[INK_TRANSFER] = "pipeline transfers (an activation received)",
	[INK_RECV_GRAD] = "a gradient received",
	[INK_SYNC] = "gradient sync left exposed",
	[INK_OPTIM] = "optimizer step",
	[INK_IDLE] = "pipeline bubble, idle",
	[INK_PARAMS] = "memory: parameters",
	[INK_GRADS] = "memory: gradients",
	[INK_OPTIM_STATE] = "memory: optimizer state",
	[INK_ACT] = "memory: activations",
	[INK_WORK] = "memory: buffers and workspace",
	[INK_THROUGHPUT] = "throughput (samples/s)",
	[INK_MFU] = "MFU",
	[INK_IDEAL] = "linear scaling",
	[INK_WORSE] = "does not fit, the device's capacity, slower",
	[INK_LIMIT] = "the planner's memory limit",
	[INK_BETTER] = "faster",
};
const enum chart_ink chart_group_ink[WI_GROUP_COUNT] = { INK_COMPUTE, INK_RECOMPUTE, INK_COLL, INK_TRANSFER,
							 INK_IDLE,    INK_SYNC,      INK_OPTIM };
const enum chart_ink chart_mem_ink[WI_MEM_COUNT] = { INK_PARAMS, INK_GRADS, INK_OPTIM_STATE, INK_ACT, INK_WORK };
const enum chart_ink chart_span_ink[WI_SPAN_COUNT] = {
	[WI_SPAN_FWD] = INK_COMPUTE,       [WI_SPAN_BWD] = INK_BACKWARD,        [WI_SPAN_COLL] = INK_COLL,
	[WI_SPAN_RECV_ACT] = INK_TRANSFER, [WI_SPAN_RECV_GRAD] = INK_RECV_GRAD, [WI_SPAN_SYNC] = INK_SYNC,
	[WI_SPAN_OPTIM] = INK_OPTIM,       [WI_SPAN_IDLE] = INK_IDLE,
};

#if PCC_HAVE_CAIRO

#define GIB (1024.0 * 1024 * 1024)

void chart_text(cairo_t *cr, double x, double y, int align, double size, bool bold, const char *fmt, ...)
{
	char s[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof s, fmt, ap);
	va_end(ap);
	cairo_text_extents_t e;
	cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
	cairo_text_extents(cr, s, &e);
	cairo_move_to(cr, align < 0 ? x : align == 0 ? x - e.x_advance / 2 : x - e.x_advance, y);
	cairo_show_text(cr, s);
}

void chart_color(cairo_t *cr, enum chart_ink k)
{
	IR_ASSERT(k >= 0 && k < INK_COUNT);
	unsigned c = chart_ink_rgb[k];
	cairo_set_source_rgb(cr, (c >> 16) / 255.0, ((c >> 8) & 255) / 255.0, (c & 255) / 255.0);
}

double chart_tick(double max, int n)
{
	if (!(max > 0))
		return 1;
	double raw = max / n, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

void chart_title(cairo_t *cr, struct box b, const char *title)
{
	cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
	chart_text(cr, b.x + 20, b.y + 26, -1, 15, true, "%s", title);
}

double chart_legend(cairo_t *cr, double x, double y, enum chart_ink color, const char *label)
{
	chart_color(cr, color);
	cairo_rectangle(cr, x, y - 10, 12, 12);
	cairo_fill(cr);
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	chart_text(cr, x + 17, y, -1, 11, false, "%s", label);
	cairo_text_extents_t e;
	cairo_text_extents(cr, label, &e);
	return x + 17 + e.x_advance + 18;
}

static void line(cairo_t *cr, double x0, double y0, double x1, double y1)
{
	cairo_move_to(cr, x0, y0);
	cairo_line_to(cr, x1, y1);
	cairo_stroke(cr);
}

/* ---- the step-time stack ----------------------------------------------------- */

/* A bar per plan of its parts by group (the rows of a comparison), so that
 * a colour means the same in every plan; the legend names the groups any
 * plan spends time in, in the groups' order. */
void chart_steps(cairo_t *cr, const struct chart_in *in, struct box b)
{
	double max = 0, x0 = b.x + 190, width = b.w - 190 - 110;
	char t[32];
	bool used[WI_GROUP_COUNT] = { false };
	for (int i = 0; i < in->n; i++)
		max = fmax(max, in->w[i]->t_step);
	chart_title(cr, b, "Step time by part");
	for (int i = 0; i < in->n; i++) {
		const struct whatif *w = in->w[i];
		double y = b.y + 44 + 34.0 * i, x = x0;
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		chart_text(cr, x0 - 10, y + 17, 1, 12, false, "%s%.24s", in->n > 1 ? (i ? "B: " : "A: ") : "",
			   w->label);
		for (int g = 0; g < WI_GROUP_COUNT; g++) {
			double s = wi_group_time(w, g), dx = max > 0 ? s / max * width : 0;
			chart_color(cr, chart_group_ink[g]);
			cairo_rectangle(cr, x, y, dx, 24);
			cairo_fill(cr);
			x += dx;
			used[g] |= s > 0;
		}
		cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
		chart_text(cr, x + 8, y + 17, -1, 12, true, "%s", wi_secs(w->t_step, t, sizeof t));
	}
	double lx = b.x + 20, ly = b.y + 44 + 34.0 * in->n + 20;
	for (int g = 0; g < WI_GROUP_COUNT; g++) {
		if (!used[g])
			continue;
		if (lx > b.x + b.w - 230) {
			lx = b.x + 20;
			ly += 22;
		}
		lx = chart_legend(cr, lx, ly, chart_group_ink[g], wi_group_label[g]);
	}
}

/* ---- memory per stage ------------------------------------------------------ */

static void dashed(cairo_t *cr, double x0, double x1, double y, enum chart_ink ink)
{
	const double dash[] = { 6, 4 };
	chart_color(cr, ink);
	cairo_set_dash(cr, dash, 2, 0);
	cairo_set_line_width(cr, 1.5);
	line(cr, x0, y, x1, y);
	cairo_set_dash(cr, NULL, 0, 0);
	cairo_set_line_width(cr, 1);
}

static void y_axis(cairo_t *cr, struct box p, double max, const char *unit)
{
	double step = chart_tick(max, 5);
	cairo_set_line_width(cr, 1);
	for (double v = 0; v <= max * 1.0001; v += step) {
		double y = p.y + p.h - v / max * p.h;
		cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
		line(cr, p.x, y, p.x + p.w, y);
		cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
		chart_text(cr, p.x - 6, y + 4, 1, 10, false, "%g%s", v, unit);
	}
}

static void memory_one(cairo_t *cr, const struct whatif *w, struct box b)
{
	char title[160];
	snprintf(title, sizeof title, "Memory per device by stage: %.60s", w->label);
	chart_title(cr, b, title);
	struct box p = { b.x + 70, b.y + 50, b.w - 100, b.h - 112 };
	double max = fmax(w->mem_capacity, w->mem_peak) * 1.08 / GIB;
	y_axis(cr, p, max, " GiB");
	double slot = p.w / w->nstages, bw = fmin(60, slot * 0.7);
	for (int s = 0; s < w->nstages; s++) {
		const struct wi_stage *st = &w->stages[s];
		double x = p.x + slot * s + (slot - bw) / 2, y = p.y + p.h;
		for (int k = 0; k < WI_MEM_COUNT; k++) {
			double h = st->mem[k] / GIB / max * p.h;
			chart_color(cr, chart_mem_ink[k]);
			cairo_rectangle(cr, x, y - h, bw, h);
			cairo_fill(cr);
			y -= h;
		}
		cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
		if (w->nstages <= 32 || s % (w->nstages / 16) == 0)
			chart_text(cr, x + bw / 2, p.y + p.h + 14, 0, 10, false, "%d", s);
	}
	double yc = p.y + p.h - w->mem_capacity / GIB / max * p.h;
	dashed(cr, p.x, p.x + p.w, yc, INK_WORSE);
	chart_text(cr, p.x + p.w, yc - 4, 1, 10, false, "capacity %.1f GiB", w->mem_capacity / GIB);
	if (w->mem_limit < w->mem_capacity) {
		double yl = p.y + p.h - w->mem_limit / GIB / max * p.h;
		dashed(cr, p.x, p.x + p.w, yl, INK_LIMIT);
		chart_text(cr, p.x + p.w, yl + 12, 1, 10, false, "planner's limit %.1f GiB", w->mem_limit / GIB);
	}
	cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
	chart_text(cr, p.x + p.w / 2, p.y + p.h + 28, 0, 11, false, "stage");
	double lx = b.x + 20;
	for (int k = 0; k < WI_MEM_COUNT; k++)
		lx = chart_legend(cr, lx, b.y + b.h - 8, chart_mem_ink[k], wi_mem_label[k]);
}

void chart_memory(cairo_t *cr, const struct chart_in *in, struct box b)
{
	double h = b.h / in->n;
	for (int i = 0; i < in->n; i++)
		memory_one(cr, in->w[i], (struct box){ b.x, b.y + h * i, b.w, h });
}

/* ---- timeline ---------------------------------------------------------------- */

/* Ticks over the window [lo, hi]. */
static void time_axis(cairo_t *cr, struct box p, double lo, double hi)
{
	char t[32];
	double step = chart_tick(hi - lo, 8);
	for (double v = ceil(lo / step * 0.9999) * step; v <= hi * 1.0001; v += step) {
		double x = p.x + (v - lo) / (hi - lo) * p.w;
		cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
		line(cr, x, p.y, x, p.y + p.h);
		cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
		chart_text(cr, x, p.y + p.h + 13, 0, 10, false, "%s", v > 0 ? wi_secs(v, t, sizeof t) : "0");
	}
}

/* One panel: the spans of tl inside [lo, hi], clipped to it. */
static void timeline_panel(cairo_t *cr, const struct whatif *w, const struct wi_timeline *tl, struct box b, double lo,
			   double hi, const char *title)
{
	chart_title(cr, b, title);
	struct box p = { b.x + 80, b.y + 40, b.w - 100, 22.0 * w->nstages };
	for (int s = 0; s < w->nstages; s++) {
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		chart_text(cr, p.x - 8, p.y + 22.0 * s + 15, 1, 11, false, "stage %d", s);
	}
	time_axis(cr, p, lo, hi);
	for (int k = 0; k < tl->n; k++) {
		const struct wi_span *sp = &tl->span[k];
		if (sp->t1 <= lo || sp->t0 >= hi)
			continue;
		bool recv = sp->kind == WI_SPAN_RECV_ACT || sp->kind == WI_SPAN_RECV_GRAD;
		double x0 = p.x + (fmax(sp->t0, lo) - lo) / (hi - lo) * p.w;
		double x1 = p.x + (fmin(sp->t1, hi) - lo) / (hi - lo) * p.w;
		double y = p.y + 22.0 * sp->stage + (recv ? 17 : 2);
		chart_color(cr, chart_span_ink[sp->kind]);
		cairo_rectangle(cr, x0, y, fmax(x1 - x0, 0.5), recv ? 3 : 14);
		cairo_fill(cr);
		/* a micro-batch's number on its forward or backward where it fits */
		if ((sp->kind == WI_SPAN_FWD || sp->kind == WI_SPAN_BWD) && sp->mb >= 0 && x1 - x0 >= 16) {
			cairo_set_source_rgb(cr, sp->kind == WI_SPAN_FWD ? 1 : 0.1, sp->kind == WI_SPAN_FWD ? 1 : 0.1,
					     sp->kind == WI_SPAN_FWD ? 1 : 0.1);
			chart_text(cr, (x0 + x1) / 2, y + 11, 0, 9, false, "%d", sp->mb);
		}
	}
	double lx = b.x + 20;
	for (int k = 0; k < WI_SPAN_COUNT; k++)
		lx = chart_legend(cr, lx, b.y + b.h - 10, chart_span_ink[k], wi_span_name[k]);
}

/* One plan's step, on a time axis of at least T (plans compared share it);
 * with many micro-batches also its start and its end zoomed in. */
static void timeline_one(cairo_t *cr, const struct whatif *w, struct box b, double T)
{
	struct wi_timeline tl;
	char title[240], t[2][32];
	snprintf(title, sizeof title, "One step: %.60s (%s, %d micro-batch%s)", w->label, cost_sched_name(w->sched),
		 w->micro, w->micro == 1 ? "" : "es");
	if (wi_timeline_build(w, &tl) < 0 || !(tl.t_step > 0)) {
		chart_title(cr, b, title);
		chart_text(cr, b.x + 20, b.y + 50, -1, 11, false, "(no timeline: %s)", ir_error());
		return;
	}
	double h = b.h / wi_timeline_panels(w), lo[2], hi[2];
	timeline_panel(cr, w, &tl, (struct box){ b.x, b.y, b.w, h }, 0, fmax(T, tl.t_step), title);
	if (wi_timeline_panels(w) == 3 && wi_timeline_zoom(w, &tl, lo, hi) == 0)
		for (int z = 0; z < 2; z++) {
			snprintf(title, sizeof title, "%s, zoomed in: %s to %s (%s)", z ? "The end" : "The start",
				 lo[z] > 0 ? wi_secs(lo[z], t[0], sizeof t[0]) : "0", wi_secs(hi[z], t[1], sizeof t[1]),
				 z ? "the last micro-batches and the drain" : "the fill and the first micro-batches");
			timeline_panel(cr, w, &tl, (struct box){ b.x, b.y + h * (z + 1), b.w, h }, lo[z], hi[z], title);
		}
	wi_timeline_free(&tl);
}

void chart_timeline(cairo_t *cr, const struct chart_in *in, struct box b)
{
	double y = b.y, T = 0;
	for (int i = 0; i < in->n; i++)
		T = fmax(T, in->w[i]->t_step);
	for (int i = 0; i < in->n; i++) {
		double h = wi_timeline_panels(in->w[i]) * (80 + 22.0 * in->w[i]->nstages);
		timeline_one(cr, in->w[i], (struct box){ b.x, y, b.w, h }, T);
		y += h;
	}
}

#endif
