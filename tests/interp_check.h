/*
 * interp_check.h: shared by the reference interpreter's tests
 * (test_interp_*.c): a tensor over a literal array, one op run through
 * interp_run on a graph of one node, and results read and compared with
 * what the test computed (exactly, or within a tolerance).
 */
#ifndef PCC_TESTS_INTERP_CHECK_H
#define PCC_TESTS_INTERP_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "compiler/compiler.h"
#include "tap.h"

#define SH(...) \
	((struct ir_shape){ .rank = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), .dims = { __VA_ARGS__ } })
#define SCALAR ((struct ir_shape){ .rank = 0 })

static inline struct ir_tensor T(enum ir_dtype dt, struct ir_shape s, const void *data) {
	return (struct ir_tensor){ .dtype = dt, .shape = s, .data = (void *)data };
}

/* Runs one op on inputs in[] (graph inputs in that order); out[] gets all
 * of the node's results. Returns interp_run's code, or -1000 when the node
 * cannot be built (the attributes in the test are wrong). */
static inline int
run_op(enum ir_op op, const struct ir_attrs *a, int nin, const struct ir_tensor *in, struct ir_tensor *out)
{
	struct ir_graph *g = ir_graph_new();
	struct ir_value *v[8];
	int rc = -1000;
	for (int i = 0; i < nin; i++)
		v[i] = ir_graph_add_input(g, NULL, in[i].dtype, &in[i].shape);
	struct ir_node *n = ir_graph_add_node(g, op, "n0", nin, v, a);
	if (!n) {
		TAP_DIAG("cannot build %s: %s", ir_op_name(op), ir_error());
		goto done;
	}
	for (int j = 0; j < n->nout; j++)
		ir_graph_add_output(g, n->out[j], NULL);
	rc = interp_run(g, in, out);
	if (rc < 0)
		TAP_DIAG("%s: %s", ir_op_name(op), ir_error());
done:
	ir_graph_free(g);
	return rc;
}

static const struct ir_attrs no_attrs;

static inline float f32_at(const struct ir_tensor *t, int64_t i)
{
	return ((const float *)t->data)[i];
}
static inline double f64_at(const struct ir_tensor *t, int64_t i)
{
	return ((const double *)t->data)[i];
}
static inline int64_t i64_at(const struct ir_tensor *t, int64_t i)
{
	return ((const int64_t *)t->data)[i];
}
static inline int32_t i32_at(const struct ir_tensor *t, int64_t i)
{
	return ((const int32_t *)t->data)[i];
}
static inline uint8_t u8_at(const struct ir_tensor *t, int64_t i)
{
	return ((const uint8_t *)t->data)[i];
}

/* Exact comparison of n floats of got with want. */
static inline bool same_f32(const struct ir_tensor *t, const float *want, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		float g = f32_at(t, i);
		if (!(g == want[i] || (g != g && want[i] != want[i]))) {
			TAP_DIAG("element %lld: got %.9g want %.9g", (long long)i, g, want[i]);
			return false;
		}
	}
	return true;
}

static inline bool same_i64(const struct ir_tensor *t, const int64_t *want, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		if (i64_at(t, i) != want[i]) {
			TAP_DIAG("element %lld: got %lld want %lld", (long long)i, (long long)i64_at(t, i),
				 (long long)want[i]);
			return false;
		}
	}
	return true;
}

static inline bool near_f64(const double *got, const double *want, int64_t n, double tol)
{
	for (int64_t i = 0; i < n; i++) {
		if (!(fabs(got[i] - want[i]) <= tol * fmax(1.0, fabs(want[i])))) {
			TAP_DIAG("element %lld: got %.17g want %.17g", (long long)i, got[i], want[i]);
			return false;
		}
	}
	return true;
}

static inline uint16_t f16(float f)
{
	return ir_f32_to_f16(f);
}
#endif
