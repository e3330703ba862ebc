/*
 * pb_cmp: compares tensors within a tolerance, for the runtime's tests.
 *
 *   pb_cmp [--rtol R] [--atol A] GOT_DIR WANT_DIR    every WANT_DIR/output_N.pb
 *   pb_cmp --onnx [--rtol R] [--atol A] GOT.onnx WANT.onnx   every parameter
 *   pb_cmp --onnx --from BASE.onnx [--rtol R] [--atol A] GOT.onnx WANT.onnx
 *          the updates: every parameter's GOT - BASE against WANT - BASE
 *   pb_cmp --stats MODEL.onnx    per parameter: name, elements, mean, std, min, max
 *
 * Each element must satisfy |got - want| <= atol + rtol * |want| (NaN only
 * where the reference has NaN). Prints one line with the largest errors;
 * exit 0 when everything is within, 1 when not, 2 on bad input.
 *
 * --from compares what training changed rather than where it ended: a
 * large model's parameters move by far less than any tolerance on their
 * values in a step or two, so only the updates show a wrong gradient. The
 * line then also gives the largest |WANT - BASE| (in double). An update is
 * known only to the units in the last place of the values it is the
 * difference of, so its tolerance adds 2^-21 |WANT| (four f32 units).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/compiler.h"

struct errs {
	double abs, rel, span; /* span: the largest |want| compared (an update's with --from) */
	int64_t bad, n;
	char where[256];
};

/* base: NULL, or the values both got and want are taken relative to */
static void compare(const char *name, const struct ir_tensor *got, const struct ir_tensor *want,
		    const struct ir_tensor *base, double rtol, double atol, struct errs *e)
{
	char a[IR_SHAPE_STR_MAX], b[IR_SHAPE_STR_MAX];
	const struct ir_tensor *odd = !ir_shape_eq(&got->shape, &want->shape)            ? got
				      : base && !ir_shape_eq(&base->shape, &want->shape) ? base
											 : NULL;
	if (odd) {
		if (!e->bad++)
			snprintf(e->where, sizeof e->where, "%s: shape %s%s, expected %s", name,
				 odd == base ? "in the base " : "", ir_shape_str(&odd->shape, a, sizeof a),
				 ir_shape_str(&want->shape, b, sizeof b));
		return;
	}
	for (int64_t i = 0; i < ir_shape_numel(&want->shape); i++) {
		double x = ir_tensor_get_f64(got, i), y = ir_tensor_get_f64(want, i), floor = 0;
		if (base) {
			floor = ldexp(fabs(y), -21); /* four f32 units in the last place of the value */
			x -= ir_tensor_get_f64(base, i);
			y -= ir_tensor_get_f64(base, i);
		}
		double d = fabs(x - y);
		e->n++;
		if (fabs(y) > e->span)
			e->span = fabs(y);
		if ((isnan(x) && isnan(y)) || x == y) /* equal infinities too */
			continue;
		if (!(d <= atol + rtol * fabs(y) + floor)) {
			if (!e->bad++)
				snprintf(e->where, sizeof e->where, "%s element %lld: %.9g, expected %.9g", name,
					 (long long)i, x, y);
		}
		if (isnan(d))
			d = INFINITY;
		e->abs = fmax(e->abs, d);
		if (fabs(y) > atol && fabs(y) > 1024 * floor) /* relative to updates well above their rounding */
			e->rel = fmax(e->rel, d / fabs(y));
	}
}

static int dirs(const char *got, const char *want, double rtol, double atol, struct errs *e)
{
	char pa[4096], pb[4096];
	struct stat st;
	int k = 0;
	for (;; k++) {
		snprintf(pb, sizeof pb, "%s/output_%d.pb", want, k);
		if (stat(pb, &st) != 0)
			break;
		snprintf(pa, sizeof pa, "%s/output_%d.pb", got, k);
		struct ir_tensor x, y;
		if (onnx_tensor_read(pa, &x, NULL) < 0 || onnx_tensor_read(pb, &y, NULL) < 0) {
			fprintf(stderr, "pb_cmp: %s\n", ir_error());
			return -1;
		}
		compare(pa, &x, &y, NULL, rtol, atol, e);
		ir_tensor_free(&x);
		ir_tensor_free(&y);
	}
	if (k == 0)
		fprintf(stderr, "pb_cmp: %s has no output_0.pb\n", want);
	return k ? k : -1;
}

/* The parameter of g named name, or NULL. */
static const struct ir_value *param_named(const struct ir_graph *g, const char *name)
{
	for (int j = 0; name && j < ir_graph_nparams(g); j++)
		if (ir_graph_param(g, j)->name && !strcmp(ir_graph_param(g, j)->name, name))
			return ir_graph_param(g, j);
	return NULL;
}

static int models(const char *got, const char *want, const char *from, double rtol, double atol, struct errs *e)
{
	struct ir_graph *a = onnx_import(got, NULL, NULL), *b = onnx_import(want, NULL, NULL);
	struct ir_graph *c = from ? onnx_import(from, NULL, NULL) : NULL;
	int n = 0;
	if (!a || !b || (from && !c)) {
		fprintf(stderr, "pb_cmp: %s\n", ir_error());
		n = -1;
	}
	for (int i = 0; n >= 0 && i < ir_graph_nparams(b); i++) {
		const struct ir_value *v = ir_graph_param(b, i), *u = param_named(a, v->name);
		const struct ir_value *w = c ? param_named(c, v->name) : NULL;
		struct ir_tensor x, y, z = { 0 };
		if (!u || (c && !w)) {
			fprintf(stderr, "pb_cmp: %s has no parameter \"%s\"\n", !u ? got : from,
				v->name ? v->name : "?");
			n = -1;
		} else if (interp_load_param(u, &x) < 0 || interp_load_param(v, &y) < 0 ||
			   (w && interp_load_param(w, &z) < 0)) {
			fprintf(stderr, "pb_cmp: %s\n", ir_error());
			n = -1;
		} else {
			compare(v->name, &x, &y, w ? &z : NULL, rtol, atol, e);
			ir_tensor_free(&x);
			ir_tensor_free(&y);
			if (w)
				ir_tensor_free(&z);
			n++;
		}
	}
	ir_graph_free(a);
	ir_graph_free(b);
	ir_graph_free(c);
	return n;
}

/* One line per parameter: name count mean std min max. */
static int stats(const char *path)
{
	struct ir_graph *g = onnx_import(path, NULL, NULL);
	int rc = g ? 0 : 2;
	for (int i = 0; rc == 0 && i < ir_graph_nparams(g); i++) {
		const struct ir_value *v = ir_graph_param(g, i);
		struct ir_tensor x;
		if (interp_load_param(v, &x) < 0) {
			rc = 2;
			break;
		}
		int64_t n = ir_shape_numel(&x.shape);
		double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
		for (int64_t k = 0; k < n; k++) {
			double y = ir_tensor_get_f64(&x, k);
			sum += y;
			sq += y * y;
			lo = fmin(lo, y);
			hi = fmax(hi, y);
		}
		double mean = n ? sum / (double)n : 0;
		printf("%s %lld %.6g %.6g %.6g %.6g\n", v->name ? v->name : "?", (long long)n, mean,
		       n ? sqrt(fmax(sq / (double)n - mean * mean, 0)) : 0, lo, hi);
		ir_tensor_free(&x);
	}
	if (rc)
		fprintf(stderr, "pb_cmp: %s\n", ir_error());
	ir_graph_free(g);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--stats"))
		return stats(argv[2]);
	double rtol = 1e-5, atol = 1e-6;
	bool onnx = false;
	const char *p[2] = { NULL, NULL }, *from = NULL;
	int np = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--onnx"))
			onnx = true;
		else if (!strcmp(argv[i], "--from") && i + 1 < argc)
			from = argv[++i];
		else if ((!strcmp(argv[i], "--rtol") || !strcmp(argv[i], "--atol")) && i + 1 < argc) {
			double *dst = argv[i][2] == 'r' ? &rtol : &atol;
			*dst = atof(argv[++i]);
		} else if (np < 2)
			p[np++] = argv[i];
	}
	if (np != 2 || (from && !onnx)) {
		fprintf(stderr, "usage: pb_cmp [--onnx [--from BASE.onnx]] [--rtol R] [--atol A] GOT WANT | pb_cmp "
				"--stats MODEL.onnx\n");
		return 2;
	}
	struct errs e = { 0 };
	int n = onnx ? models(p[0], p[1], from, rtol, atol, &e) : dirs(p[0], p[1], rtol, atol, &e);
	if (n < 0)
		return 2;
	char span[64] = "";
	if (from)
		snprintf(span, sizeof span, ", largest update %.3g", e.span);
	printf("%d tensors, %lld elements%s: max abs err %.3g, max rel err %.3g (rtol %g, atol %g)%s%s\n", n,
	       (long long)e.n, span, e.abs, e.rel, rtol, atol, e.bad ? "; first outside: " : "", e.bad ? e.where : "");
	return e.bad ? 1 : 0;
}
