/*
 * report_chart_sweep.c: a sweep's chart (report_sweep.c): throughput and
 * MFU against the GPU count (with ideal linear scaling from the first
 * point dashed), throughput of every tp,pp plan as bars (red where the
 * plan does not fit), and the step time's change per sensitivity knob.
 */
#include <math.h>
#include <string.h>

#include "compiler/report_internal.h"

#if PCC_HAVE_CAIRO

static void segment(cairo_t *cr, double x0, double y0, double x1, double y1)
{
	cairo_move_to(cr, x0, y0);
	cairo_line_to(cr, x1, y1);
	cairo_stroke(cr);
}

static void grid(cairo_t *cr, struct box p, double max, bool right, double scale, const char *unit)
{
	double step = chart_tick(max, 5);
	for (double v = 0; v <= max * 1.0001; v += step) {
		double y = p.y + p.h - v / max * p.h;
		if (!right) {
			cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
			segment(cr, p.x, y, p.x + p.w, y);
		}
		cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
		chart_text(cr, right ? p.x + p.w + 6 : p.x - 6, y + 4, right ? -1 : 1, 10, false, "%.4g%s", v * scale,
			   unit);
	}
}

static void marker(cairo_t *cr, double x, double y)
{
	cairo_arc(cr, x, y, 3.5, 0, 2 * M_PI);
	cairo_fill(cr);
}

/* Throughput (left axis) and MFU (right) against the GPU count. */
static void gpus_chart(cairo_t *cr, const struct wi_sweep_result *r, struct box b)
{
	struct box p = { b.x + 90, b.y + 50, b.w - 170, b.h - 110 };
	double max = 0, first = 0;
	int first_i = -1;
	for (int i = 0; i < r->n; i++)
		if (r->pt[i].ok) {
			max = fmax(max, r->pt[i].w.samples_per_s);
			if (first_i < 0) {
				first_i = i;
				first = r->pt[i].w.samples_per_s;
			}
		}
	double ideal_max = first_i >= 0 ? first * r->pt[r->n - 1].gpus / r->pt[first_i].gpus : 0;
	max = fmax(max, fmin(ideal_max, 2 * max)) * 1.08;
	grid(cr, p, max, false, 1, "");
	grid(cr, p, 1, true, 100, "%");
	double dx = r->n > 1 ? p.w / (r->n - 1) : 0;
	double px = 0, py = 0, pm = 0;
	bool have = false;
	for (int i = 0; i < r->n; i++) {
		double x = p.x + dx * i;
		cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
		chart_text(cr, x, p.y + p.h + 14, 0, 10, false, "%d", r->pt[i].gpus);
		if (!r->pt[i].ok)
			continue;
		double y = p.y + p.h - r->pt[i].w.samples_per_s / max * p.h, m = p.y + p.h - r->pt[i].w.mfu * p.h;
		chart_color(cr, INK_THROUGHPUT);
		marker(cr, x, y);
		if (have)
			segment(cr, px, py, x, y);
		chart_color(cr, INK_MFU);
		marker(cr, x, m);
		if (have)
			segment(cr, px, pm, x, m);
		px = x;
		py = y;
		pm = m;
		have = true;
	}
	if (first_i >= 0) { /* ideal: throughput proportional to GPUs, up to the plot's top */
		const double dash[] = { 5, 4 };
		cairo_set_dash(cr, dash, 2, 0);
		chart_color(cr, INK_IDEAL);
		for (int i = first_i; i + 1 < r->n; i++) {
			double y0 = first * r->pt[i].gpus / r->pt[first_i].gpus;
			double y1 = first * r->pt[i + 1].gpus / r->pt[first_i].gpus;
			if (y1 > max)
				break;
			segment(cr, p.x + dx * i, p.y + p.h - y0 / max * p.h, p.x + dx * (i + 1),
				p.y + p.h - y1 / max * p.h);
		}
		cairo_set_dash(cr, NULL, 0, 0);
	}
	cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
	chart_text(cr, p.x + p.w / 2, p.y + p.h + 30, 0, 11, false, "GPUs");
	double lx = chart_legend(cr, b.x + 20, b.y + b.h - 10, INK_THROUGHPUT, "samples/s (left)");
	lx = chart_legend(cr, lx, b.y + b.h - 10, INK_MFU, "MFU (right)");
	chart_legend(cr, lx, b.y + b.h - 10, INK_IDEAL, "linear scaling from the first point");
}

/* One bar per plan, samples/s. */
static void tppp_chart(cairo_t *cr, const struct wi_sweep_result *r, struct box b)
{
	double max = 0, x0 = b.x + 170, width = b.w - 170 - 210;
	for (int i = 0; i < r->n; i++)
		max = r->pt[i].ok ? fmax(max, r->pt[i].w.samples_per_s) : max;
	for (int i = 0; i < r->n; i++) {
		const struct wi_point *pt = &r->pt[i];
		double y = b.y + 44 + 20.0 * i;
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		chart_text(cr, x0 - 8, y + 12, 1, 11, i == r->best, "%s", pt->name);
		if (!pt->ok) {
			chart_text(cr, x0 + 4, y + 12, -1, 10, false, "- %.80s", pt->err);
			continue;
		}
		double w = max > 0 ? pt->w.samples_per_s / max * width : 0;
		chart_color(cr, pt->w.fits ? INK_THROUGHPUT : INK_WORSE);
		cairo_rectangle(cr, x0, y + 2, w, 14);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		chart_text(cr, x0 + w + 6, y + 13, -1, 10, i == r->best, "%.4g samples/s%s%s", pt->w.samples_per_s,
			   pt->w.fits ? "" : ", does not fit", i == r->best ? " (best)" : "");
	}
}

/* The step time's change against the base, per knob. */
static void sens_chart(cairo_t *cr, const struct wi_sweep_result *r, struct box b)
{
	double base = r->pt[0].w.t_step, max = 0.01, mid = b.x + b.w / 2 + 40, half = b.w / 2 - 160;
	for (int i = 0; i < r->n; i++)
		max = r->pt[i].ok ? fmax(max, fabs(r->pt[i].w.t_step / base - 1)) : max;
	cairo_set_source_rgb(cr, 0.5, 0.5, 0.5);
	segment(cr, mid, b.y + 40, mid, b.y + 40 + 28.0 * r->n);
	for (int i = 0; i < r->n; i++) {
		const struct wi_point *pt = &r->pt[i];
		double y = b.y + 44 + 28.0 * i;
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		chart_text(cr, b.x + 150, y + 14, 1, 11, false, "%s", pt->name);
		if (!pt->ok)
			continue;
		double d = pt->w.t_step / base - 1, w = d / max * half;
		chart_color(cr, d > 0 ? INK_WORSE : INK_BETTER);
		cairo_rectangle(cr, w < 0 ? mid + w : mid, y + 2, fabs(w), 18);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		chart_text(cr, d < 0 ? mid + w - 6 : mid + w + 6, y + 15, d < 0 ? 1 : -1, 10, false, "%+.1f%%",
			   100 * d);
	}
	chart_text(cr, mid, b.y + b.h - 8, 0, 11, false, "step time against the cluster as given (left: faster)");
}

void chart_sweep(cairo_t *cr, const struct chart_in *in, struct box b)
{
	const struct wi_sweep_result *r = in->sw;
	static const char *const titles[WI_SWEEP_COUNT] = { "Scaling with the GPU count", "Every tp x pp plan",
							    "Sensitivity of the step time" };
	chart_title(cr, b, titles[r->sw.kind]);
	switch (r->sw.kind) {
	case WI_SWEEP_GPUS:
		gpus_chart(cr, r, b);
		break;
	case WI_SWEEP_TPPP:
		tppp_chart(cr, r, b);
		break;
	case WI_SWEEP_SENS:
		sens_chart(cr, r, b);
		break;
	case WI_SWEEP_COUNT:
		IR_ASSERT(!"sweep kind out of range");
	}
}

#endif
