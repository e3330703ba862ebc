/*
 * harness.h: shared by the model tests: load a backend-test data set
 * (input_N.pb / output_N.pb), run the reference interpreter, compare.
 */
#ifndef PCC_TESTS_HARNESS_H
#define PCC_TESTS_HARNESS_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/compiler.h"

struct cmp {
	double max_abs, max_rel; /* worst errors seen */
	int64_t bad;             /* elements outside tolerance */
	char what[256];          /* first problem, for the report */
};

/* numpy.testing.assert_allclose rule: |got - want| <= atol + rtol * |want|;
 * NaN matches NaN, infinities must match exactly. */
static inline void cmp_tensor(const struct ir_tensor *got, const struct ir_tensor *want, double rtol,
			      double atol, int index, struct cmp *c)
{
	char s1[IR_SHAPE_STR_MAX], s2[IR_SHAPE_STR_MAX];
	bool fl = ir_dtype_is_float(want->dtype);
	if (got->dtype != want->dtype || !ir_shape_eq(&got->shape, &want->shape)) {
		c->bad++;
		snprintf(c->what, sizeof c->what, "output %d is %s%s, expected %s%s", index,
			 ir_dtype_name(got->dtype), ir_shape_str(&got->shape, s1, sizeof s1),
			 ir_dtype_name(want->dtype), ir_shape_str(&want->shape, s2, sizeof s2));
		return;
	}
	int64_t n = ir_shape_numel(&want->shape);
	for (int64_t i = 0; i < n; i++) {
		bool ok;
		double g, w;
		if (fl) {
			g = ir_tensor_get_f64(got, i);
			w = ir_tensor_get_f64(want, i);
			if (isnan(w) || isnan(g))
				ok = isnan(w) && isnan(g);
			else if (isinf(w) || isinf(g))
				ok = g == w;
			else {
				double d = fabs(g - w);
				ok = d <= atol + rtol * fabs(w);
				if (d > c->max_abs)
					c->max_abs = d;
				if (w != 0 && d / fabs(w) > c->max_rel)
					c->max_rel = d / fabs(w);
			}
		} else {
			int64_t gi = ir_tensor_get_i64(got, i), wi = ir_tensor_get_i64(want, i);
			ok = gi == wi;
			g = (double)gi;
			w = (double)wi;
		}
		if (!ok && c->bad++ == 0)
			snprintf(c->what, sizeof c->what, "output %d element %lld: got %.9g, expected %.9g",
				 index, (long long)i, g, w);
	}
}

static inline bool file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* Runs g on dir/input_N.pb and compares with dir/output_N.pb. Returns 0
 * when run; errors in c->what. */
static inline int run_data_set(const struct ir_graph *g, const char *dir, double rtol, double atol,
			       struct cmp *c)
{
	char path[4096];
	int nin = ir_graph_ninputs(g), nout = ir_graph_noutputs(g), rc = 0;
	struct ir_tensor *in = calloc((size_t)nin + 1, sizeof *in);
	struct ir_tensor *out = calloc((size_t)nout + 1, sizeof *out);
	memset(c, 0, sizeof *c);
	for (int i = 0; i < nin && rc == 0; i++) {
		snprintf(path, sizeof path, "%s/input_%d.pb", dir, i);
		rc = onnx_tensor_read(path, &in[i], NULL);
	}
	if (rc == 0)
		rc = interp_run(g, in, out);
	if (rc < 0) {
		snprintf(c->what, sizeof c->what, "%s", ir_error());
		c->bad = 1;
	}
	for (int i = 0; i < nout && rc == 0; i++) {
		struct ir_tensor want;
		snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
		if ((rc = onnx_tensor_read(path, &want, NULL)) < 0) {
			snprintf(c->what, sizeof c->what, "%s", ir_error());
			c->bad = 1;
			break;
		}
		cmp_tensor(&out[i], &want, rtol, atol, i, c);
		ir_tensor_free(&want);
	}
	for (int i = 0; i < nin; i++)
		ir_tensor_free(&in[i]);
	for (int i = 0; i < nout; i++)
		ir_tensor_free(&out[i]);
	free(in);
	free(out);
	return rc;
}

#endif
