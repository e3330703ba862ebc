/*
 * report_chart_sweep.c: a sweep's chart (report_sweep.c): throughput and
 * MFU against the GPU count on log-log axes fitted to the points (with
 * ideal linear scaling from the first point dashed), throughput of every tp,pp plan as bars (red where the
 * plan does not fit), and the step time's change per sensitivity knob.
 */
#include <math.h>
#include <string.h>

#include "compiler/report/report_internal.h"

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

/* A log axis from lo to hi: y of v. */
static double log_y(struct box p, double lo, double hi, double v)
{
	return p.y + p.h - (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * p.h;
}

/* Grid lines and labels at 1, 2 and 5 times the powers of ten in [lo, hi]. */
static void log_grid(cairo_t *cr, struct box p, double lo, double hi)
{
	static const double m[] = { 1, 2, 5 };
	for (double d = pow(10, floor(log10(lo))); d <= hi; d *= 10)
		for (int i = 0; i < 3; i++) {
			double v = d * m[i];
			if (v < lo * 0.9999 || v > hi * 1.0001)
				continue;
			double y = log_y(p, lo, hi, v);
			cairo_set_source_rgb(cr, m[i] == 1 ? 0.85 : 0.93, m[i] == 1 ? 0.85 : 0.93,
					     m[i] == 1 ? 0.85 : 0.93);
			segment(cr, p.x, y, p.x + p.w, y);
			cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
			chart_text(cr, p.x - 6, y + 4, 1, 10, false, "%g", v);
		}
}

/* Throughput (left, log scale) and MFU (right, linear) against the GPU
 * count (log scale), both axes fitted to the points and to ideal linear
 * scaling from the first point (a straight line of slope 1 on log-log). */
static void gpus_chart(cairo_t *cr, const struct wi_sweep_result *r, struct box b)
{
	struct box p = { b.x + 90, b.y + 50, b.w - 170, b.h - 110 };
	double lo = INFINITY, hi = 0, first = 0, mfu = 0;
	int first_i = -1;
	for (int i = 0; i < r->n; i++)
		if (r->pt[i].ok && r->pt[i].w.samples_per_s > 0) {
			lo = fmin(lo, r->pt[i].w.samples_per_s);
			hi = fmax(hi, r->pt[i].w.samples_per_s);
			mfu = fmax(mfu, r->pt[i].w.mfu);
			if (first_i < 0) {
				first_i = i;
				first = r->pt[i].w.samples_per_s;
			}
		}
	if (first_i < 0 || r->n < 1)
		return;
	double g0 = r->pt[0].gpus, g1 = r->pt[r->n - 1].gpus;
	double ideal_hi = first * g1 / r->pt[first_i].gpus;
	hi = fmax(hi, ideal_hi);
	/* a little room above and below, never less than a factor 4 in all */
	double pad = fmax(1.15, sqrt(4 / (hi / lo)));
	lo /= pad;
	hi *= pad;
	log_grid(cr, p, lo, hi);
	double mfu_top = fmin(1, ceil(mfu * 1.15 * 10) / 10);
	grid(cr, p, mfu_top, true, 100, "%");
	double span = g1 > g0 ? log2(g1 / g0) : 1;
#define X(g) (p.x + (g1 > g0 ? log2((g) / g0) / span * p.w : p.w / 2))
	double px = 0, py = 0, pm = 0;
	bool have = false;
	for (int i = 0; i < r->n; i++) {
		double x = X(r->pt[i].gpus);
		cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
		chart_text(cr, x, p.y + p.h + 14, 0, 10, false, "%d", r->pt[i].gpus);
		if (!r->pt[i].ok || !(r->pt[i].w.samples_per_s > 0))
			continue;
		double y = log_y(p, lo, hi, r->pt[i].w.samples_per_s), m = p.y + p.h - r->pt[i].w.mfu / mfu_top * p.h;
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
	/* ideal: throughput proportional to GPUs from the first point */
	const double dash[] = { 5, 4 };
	cairo_set_dash(cr, dash, 2, 0);
	chart_color(cr, INK_IDEAL);
	double gf = r->pt[first_i].gpus;
	segment(cr, X(gf), log_y(p, lo, hi, first), X(g1), log_y(p, lo, hi, ideal_hi));
	cairo_set_dash(cr, NULL, 0, 0);
#undef X
	cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
	chart_text(cr, p.x + p.w / 2, p.y + p.h + 30, 0, 11, false, "GPUs (log scale)");
	double lx = chart_legend(cr, b.x + 20, b.y + b.h - 10, INK_THROUGHPUT, "samples/s (left, log scale)");
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
