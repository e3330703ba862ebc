/*
 * report_chart.c: `pcc report --svg FILE / --png FILE` and the pictures of
 * --html, drawn with cairo: the step-time stack of each plan (one bar of
 * its parts), memory per stage by kind against the device's capacity, the
 * timeline of one step per stage (report_timeline.c), and a sweep's chart
 * (throughput and MFU against GPUs; throughput per tp,pp plan; the step
 * time's change per sensitivity knob). Every figure drawn is a field of a
 * what-if; nothing is computed here but positions.
 *
 * Built without cairo (PCC_HAVE_CAIRO unset), the pictures are an error
 * that says so, and --html leaves them out.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/report/report_internal.h"

#if PCC_HAVE_CAIRO

#include <cairo-svg.h>

#define WIDTH 960.0

/* One chart: its height at WIDTH, and how to draw it into a box. */
struct chart {
	double (*height)(const struct chart_in *in);
	void (*draw)(cairo_t *cr, const struct chart_in *in, struct box b);
};

static double steps_height(const struct chart_in *in)
{
	return 96 + 34.0 * in->n;
}

static double memory_height(const struct chart_in *in)
{
	return 300.0 * in->n;
}

static double timeline_height(const struct chart_in *in)
{
	double h = 0;
	for (int i = 0; i < in->n; i++)
		h += wi_timeline_panels(in->w[i]) * (80 + 22.0 * in->w[i]->nstages);
	return h;
}

static double sweep_height(const struct chart_in *in)
{
	if (in->sw->sw.kind == WI_SWEEP_TPPP)
		return 70 + 20.0 * in->sw->n;
	return in->sw->sw.kind == WI_SWEEP_SENS ? 70 + 28.0 * in->sw->n : 360;
}

static const struct chart charts[WI_CHART_COUNT] = {
	[WI_CHART_STEPS] = { steps_height, chart_steps },
	[WI_CHART_MEMORY] = { memory_height, chart_memory },
	[WI_CHART_TIMELINE] = { timeline_height, chart_timeline },
	[WI_CHART_SWEEP] = { sweep_height, chart_sweep },
};

/* The charts a picture holds: the sweep's alone, or the three of the plans. */
static int picture(const struct chart_in *in, int which, int *list)
{
	if (which != WI_CHART_ALL) {
		list[0] = which;
		return 1;
	}
	if (in->sw) {
		list[0] = WI_CHART_SWEEP;
		return 1;
	}
	list[0] = WI_CHART_STEPS;
	list[1] = WI_CHART_MEMORY;
	list[2] = WI_CHART_TIMELINE;
	return 3;
}

static int check_input(const struct chart_in *in, int which)
{
	if ((which == WI_CHART_SWEEP || (which == WI_CHART_ALL && in->sw)) && !in->sw)
		return ir_errorf(-EINVAL, "no sweep to draw");
	if (which != WI_CHART_SWEEP && !(which == WI_CHART_ALL && in->sw) && in->n == 0)
		return ir_errorf(-EINVAL, "no plan to draw");
	return 0;
}

static double total_height(const struct chart_in *in, const int *list, int k)
{
	double h = 0;
	for (int i = 0; i < k; i++)
		h += charts[list[i]].height(in);
	return ceil(h);
}

static void render(cairo_t *cr, const struct chart_in *in, const int *list, int k)
{
	double y = 0;
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	for (int i = 0; i < k; i++) {
		double h = charts[list[i]].height(in);
		charts[list[i]].draw(cr, in, (struct box){ 0, y, WIDTH, h });
		y += h;
	}
}

static int status(cairo_surface_t *s, const char *what)
{
	cairo_status_t st = cairo_surface_status(s);
	return st == CAIRO_STATUS_SUCCESS ? 0 : ir_errorf(-EIO, "%s: %s", what, cairo_status_to_string(st));
}

/* The picture onto a new surface: SVG at path, or an image. */
static cairo_surface_t *draw(const struct chart_in *in, int which, const char *svg_path)
{
	int list[3], k = picture(in, which, list);
	double h = total_height(in, list, k);
	cairo_surface_t *s = svg_path ? cairo_svg_surface_create(svg_path, WIDTH, h)
				      : cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)WIDTH, (int)h);
	cairo_t *cr = cairo_create(s);
	render(cr, in, list, k);
	cairo_destroy(cr);
	return s;
}

int wi_chart_write(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, const char *path, bool png)
{
	const struct chart_in in = { w, n, sw };
	const char *opt = png ? "--png" : "--svg";
	if (check_input(&in, WI_CHART_ALL) < 0) {
		ir_error_prefix("%s %s", opt, path);
		return -EINVAL;
	}
	cairo_surface_t *s = draw(&in, WI_CHART_ALL, png ? NULL : path);
	char what[4200];
	snprintf(what, sizeof what, "%s %s", opt, path);
	int rc = status(s, what);
	if (rc == 0 && png && cairo_surface_write_to_png(s, path) != CAIRO_STATUS_SUCCESS)
		rc = ir_errorf(-EIO, "%s: cannot write", what);
	cairo_surface_finish(s);
	if (rc == 0)
		rc = status(s, what);
	cairo_surface_destroy(s);
	return rc;
}

struct membuf {
	unsigned char *p;
	size_t n, cap;
};

static cairo_status_t append(void *closure, const unsigned char *data, unsigned int len)
{
	struct membuf *b = closure;
	if (b->n + len > b->cap) {
		size_t nc = (b->n + len) * 2;
		unsigned char *p = ir_realloc(b->p, nc);
		if (!p)
			return CAIRO_STATUS_NO_MEMORY;
		b->p = p;
		b->cap = nc;
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
	return CAIRO_STATUS_SUCCESS;
}

int wi_chart_png(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, int which, unsigned char **buf,
		 size_t *len)
{
	const struct chart_in in = { w, n, sw };
	struct membuf b = { 0 };
	*buf = NULL;
	*len = 0;
	if (check_input(&in, which) < 0)
		return -EINVAL;
	cairo_surface_t *s = draw(&in, which, NULL);
	int rc = status(s, "drawing a chart");
	if (rc == 0 && cairo_surface_write_to_png_stream(s, append, &b) != CAIRO_STATUS_SUCCESS)
		rc = ir_errorf(-ENOMEM, "drawing a chart: out of memory");
	cairo_surface_destroy(s);
	if (rc < 0)
		ir_free(b.p);
	else {
		*buf = b.p;
		*len = b.n;
	}
	return rc;
}

#else /* no cairo */

static int none(void)
{
	return ir_errorf(-ENOTSUP, "pictures need cairo: install libcairo2-dev (scripts/install-deps) and rebuild pcc");
}

int wi_chart_write(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, const char *path, bool png)
{
	(void)w, (void)n, (void)sw, (void)path, (void)png;
	return none();
}

int wi_chart_png(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, int which, unsigned char **buf,
		 size_t *len)
{
	(void)w, (void)n, (void)sw, (void)which;
	*buf = NULL;
	*len = 0;
	return none();
}

#endif
