/*
 * grad_check.h: the finite-difference check shared by the autodiff tests
 * (test_grad_ops.c, test_grad_graph.c).
 *
 * A case (struct gc) builds a small f64 graph whose inputs are the
 * differentiable operands of what is under test, applies it and reduces
 * its result y to the scalar L = reduce_sum(y * W), W a fixed random
 * constant of y's shape (each output element gets its own weight, so a VJP
 * that mixes elements up fails). grad_build appends dL/dx for every input;
 * the graph runs once with L and the gradients as outputs, then twice per
 * input element with that element moved by +-h, and each gradient element
 * must match the central difference (L(x + h e_j) - L(x - h e_j)) / 2h
 * within atol + rtol |fd| (h = 1e-6, both tolerances 1e-6, unless a case
 * says why not). At least one element of each gradient must exceed 1e-3 in
 * magnitude, so a rule returning zeros fails. A case marked zero expects
 * a gradient of zeros, or NULL.
 */
#ifndef PCC_TESTS_GRAD_CHECK_H
#define PCC_TESTS_GRAD_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "tap.h"

#define SH(...) \
	((struct ir_shape){ .rank = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), .dims = { __VA_ARGS__ } })
#define SCALAR ((struct ir_shape){ .rank = 0 })
#define NOAXES ((struct ir_ilist){ .n = 0 })

#define MAXIN 8

/* ---- random numbers (fixed seed: every run sees the same graphs) -------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static inline double urand(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1p-53;
}

static inline double uni(double lo, double hi)
{
	return lo + (hi - lo) * urand();
}

/* ---- one case: a graph, its inputs and their values ---------------------- */

struct gc {
	char what[192];
	struct ir_graph *g;
	int n; /* graph inputs, all of them differentiated */
	struct ir_value *in[MAXIN];
	struct ir_tensor x[MAXIN]; /* their values, f64 */
	bool ok;                   /* every node built */
	double h, atol, rtol;
	bool zero; /* the op's gradient is zero wherever it is smooth */
};

__attribute__((format(printf, 2, 3))) static inline void gc_begin(struct gc *c, const char *fmt, ...)
{
	va_list ap;
	memset(c, 0, sizeof *c);
	va_start(ap, fmt);
	vsnprintf(c->what, sizeof c->what, fmt, ap);
	va_end(ap);
	c->g = ir_graph_new();
	c->ok = c->g != NULL;
	c->h = 1e-6;
	c->atol = 1e-6;
	c->rtol = 1e-6;
}

/* How an input is filled. */
enum fill_kind {
	F_UNI,    /* uniform in [a, b) */
	F_SIGNED, /* magnitude uniform in [a, b), random sign: away from 0 */
	F_SEP,    /* distinct values k * a + b for k = -n/2 .. n/2, shuffled:
		   * neighbours a apart, so no ties within h */
};
struct fill {
	enum fill_kind kind;
	double a, b;
};
#define UNI(lo, hi) ((struct fill){ F_UNI, (lo), (hi) })
#define SIGNED(lo, hi) ((struct fill){ F_SIGNED, (lo), (hi) })
#define SEP(step, off) ((struct fill){ F_SEP, (step), (off) })

static inline void fill_values(double *v, int64_t n, struct fill f)
{
	for (int64_t i = 0; i < n; i++) {
		switch (f.kind) {
		case F_UNI:
			v[i] = uni(f.a, f.b);
			break;
		case F_SIGNED:
			v[i] = uni(f.a, f.b) * (urand() < 0.5 ? -1 : 1);
			break;
		case F_SEP:
			v[i] = (double)(i - n / 2) * f.a + f.b;
			break;
		}
	}
	if (f.kind == F_SEP) {
		for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
			int64_t j = (int64_t)(urand() * (double)(i + 1));
			double t = v[i];
			v[i] = v[j];
			v[j] = t;
		}
	}
}

/* Adds an f64 graph input (a differentiated operand) filled per f. */
static inline struct ir_value *gc_in(struct gc *c, const char *name, struct ir_shape s, struct fill f)
{
	IR_ASSERT(c->n < MAXIN);
	if (!c->ok)
		return NULL;
	struct ir_value *v = ir_graph_add_input(c->g, name, IR_F64, &s);
	if (!v || ir_tensor_alloc(&c->x[c->n], IR_F64, &s) < 0) {
		c->ok = false;
		return NULL;
	}
	fill_values(c->x[c->n].data, ir_shape_numel(&s), f);
	c->in[c->n++] = v;
	return v;
}

static inline double *gc_data(struct gc *c, int i)
{
	return c->x[i].data;
}

static const struct ir_attrs no_attrs;

/* Appends op and returns its result number k; NULL (and the case fails)
 * when the node cannot be built or an operand is missing. */
static inline struct ir_value *opn(struct gc *c, enum ir_op op, const struct ir_attrs *a, int nin,
				   struct ir_value *const *in, int k)
{
	if (!c->ok)
		return NULL;
	for (int i = 0; i < nin; i++) {
		if (!in[i]) {
			c->ok = false;
			return NULL;
		}
	}
	struct ir_node *nd = ir_graph_add_node(c->g, op, NULL, nin, in, a ? a : &no_attrs);
	if (!nd) {
		TAP_DIAG("%s: cannot build %s: %s", c->what, ir_op_name(op), ir_error());
		c->ok = false;
		return NULL;
	}
	return nd->out[k];
}

static inline struct ir_value *op1(struct gc *c, enum ir_op op, const struct ir_attrs *a, struct ir_value *x)
{
	return opn(c, op, a, 1, (struct ir_value *[]){ x }, 0);
}

static inline struct ir_value *op2(struct gc *c, enum ir_op op, const struct ir_attrs *a, struct ir_value *x,
				   struct ir_value *y)
{
	return opn(c, op, a, 2, (struct ir_value *[]){ x, y }, 0);
}

static inline struct ir_value *op3(struct gc *c, enum ir_op op, const struct ir_attrs *a, struct ir_value *x,
				   struct ir_value *y, struct ir_value *z)
{
	return opn(c, op, a, 3, (struct ir_value *[]){ x, y, z }, 0);
}

static inline struct ir_value *cst(struct gc *c, enum ir_dtype dt, struct ir_shape s, const void *data)
{
	struct ir_attrs a = { .dtype = dt, .shape = s, .data = data };
	struct ir_value *none[1] = { NULL };
	return opn(c, IR_OP_CONSTANT, &a, 0, none, 0);
}

/* A constant of distinct random weights, magnitudes in [0.25, 1). */
static inline struct ir_value *cst_weights(struct gc *c, struct ir_shape s)
{
	int64_t n = ir_shape_numel(&s);
	double *w = malloc((size_t)(n ? n : 1) * sizeof *w);
	fill_values(w, n, SIGNED(0.25, 1.0));
	struct ir_value *v = cst(c, IR_F64, s, w);
	free(w);
	return v;
}

static inline struct ir_value *reduce_all(struct gc *c, enum ir_op op, struct ir_value *y)
{
	if (!y) {
		c->ok = false;
		return NULL;
	}
	struct ir_attrs a = { .axes = { .n = y->shape.rank } };
	for (int i = 0; i < y->shape.rank; i++)
		a.axes.v[i] = i;
	return op1(c, op, &a, y);
}

/* L = reduce_sum(y * W). */
static inline struct ir_value *weighted_sum(struct gc *c, struct ir_value *y)
{
	if (!y) {
		c->ok = false;
		return NULL;
	}
	return reduce_all(c, IR_OP_REDUCE_SUM, op2(c, IR_OP_MUL, NULL, y, cst_weights(c, y->shape)));
}

/* ---- the check ------------------------------------------------------------- */

/* Runs the graph at the current input values; output 0 is the loss. */
static inline double eval_loss(struct gc *c)
{
	struct ir_tensor out[MAXIN + 1];
	int nout = ir_graph_noutputs(c->g);
	if (interp_run(c->g, c->x, out) < 0) {
		TAP_DIAG("%s: %s", c->what, ir_error());
		return NAN;
	}
	double l = ir_tensor_get_f64(&out[0], 0);
	for (int i = 0; i < nout; i++)
		ir_tensor_free(&out[i]);
	return l;
}

/* Compares gradient grad (NULL: none) of input i with central differences. */
static inline void check_input(struct gc *c, int i, const struct ir_tensor *grad)
{
	const char *name = c->in[i]->name;
	double *xv = c->x[i].data;
	int64_t n = ir_shape_numel(&c->x[i].shape), bad = 0, first = -1;
	double max_err = 0, max_g = 0, max_fd = 0, g_first = 0, fd_first = 0;
	bool all_zero = true;
	double gs[4] = { 0 }, fds[4] = { 0 };
	for (int64_t j = 0; j < n; j++) {
		double x0 = xv[j];
		xv[j] = x0 + c->h;
		double xp = xv[j], lp = eval_loss(c);
		xv[j] = x0 - c->h;
		double xm = xv[j], lm = eval_loss(c);
		xv[j] = x0;
		double fd = (lp - lm) / (xp - xm);
		double g = grad ? ir_tensor_get_f64(grad, j) : 0.0;
		double err = fabs(g - fd);
		if (j < 4) {
			gs[j] = g;
			fds[j] = fd;
		}
		if (!(err <= c->atol + c->rtol * fabs(fd))) {
			if (bad++ == 0) {
				first = j;
				g_first = g;
				fd_first = fd;
			}
		}
		if (err > max_err || err != err)
			max_err = err;
		max_g = fmax(max_g, fabs(g));
		max_fd = fmax(max_fd, fabs(fd));
		all_zero = all_zero && g == 0;
	}
	if (c->zero) {
		TAP_OK(bad == 0 && all_zero, "%s: d/d%s is zero (%s)", c->what, name, grad ? "all zeros" : "NULL");
		if (!all_zero)
			TAP_DIAG("max |g| %.3g", max_g);
		if (bad)
			TAP_DIAG("finite differences not zero: max %.3g (a kink within h?)", max_fd);
		return;
	}
	if (!grad) {
		TAP_OK(0, "%s: d/d%s is NULL but the loss depends on it (|fd| up to %.3g)", c->what, name, max_fd);
		return;
	}
	TAP_OK(bad == 0 && max_g > 1e-3, "%s: d/d%s matches central differences (max err %.2g)", c->what, name,
	       max_err);
	if (bad) {
		TAP_DIAG("%lld of %lld elements off; element %lld: got %.12g, want %.12g", (long long)bad, (long long)n,
			 (long long)first, g_first, fd_first);
		for (int j = 0; j < 4 && j < n; j++)
			TAP_DIAG("  element %d: got %.12g, want %.12g", j, gs[j], fds[j]);
	}
	if (max_g <= 1e-3)
		TAP_DIAG("gradient is zero everywhere (max |g| %.3g, max |fd| %.3g)", max_g, max_fd);
}

/* Differentiates loss with respect to every input, checks each gradient
 * and frees the case. */
static inline void gc_finish(struct gc *c, struct ir_value *loss)
{
	struct ir_value *grads[MAXIN] = { 0 };
	struct ir_tensor out[MAXIN + 1];
	char s1[IR_SHAPE_STR_MAX], s2[IR_SHAPE_STR_MAX];
	int nout = 0, rc;
	if (!c->ok || !loss) {
		TAP_OK(0, "%s: the test graph builds", c->what);
		goto done;
	}
	rc = grad_build(c->g, loss, c->n, c->in, grads);
	if (rc < 0) {
		TAP_OK(0, "%s: grad_build: %s", c->what, ir_error());
		goto done;
	}
	ir_graph_add_output(c->g, loss, "loss");
	for (int i = 0; i < c->n; i++) {
		struct ir_value *d = grads[i];
		if (!d)
			continue;
		if (d->dtype != c->in[i]->dtype || !ir_shape_eq(&d->shape, &c->in[i]->shape)) {
			TAP_OK(0, "%s: d/d%s is %s%s, expected %s%s", c->what, c->in[i]->name, ir_dtype_name(d->dtype),
			       ir_shape_str(&d->shape, s1, sizeof s1), ir_dtype_name(c->in[i]->dtype),
			       ir_shape_str(&c->in[i]->shape, s2, sizeof s2));
			goto done;
		}
		ir_graph_add_output(c->g, d, NULL);
	}
	if (ir_verify(c->g) < 0) {
		TAP_OK(0, "%s: the gradient graph verifies: %s", c->what, ir_error());
		goto done;
	}
	if (interp_run(c->g, c->x, out) < 0) {
		TAP_OK(0, "%s: the gradient graph runs: %s", c->what, ir_error());
		goto done;
	}
	nout = ir_graph_noutputs(c->g);
	for (int i = 0, k = 1; i < c->n; i++)
		check_input(c, i, grads[i] ? &out[k++] : NULL);
done:
	for (int i = 0; i < nout; i++)
		ir_tensor_free(&out[i]);
	for (int i = 0; i < c->n; i++)
		ir_tensor_free(&c->x[i]);
	ir_graph_free(c->g);
}

/* The usual ending: L = reduce_sum(y * W). */
static inline void gc_check(struct gc *c, struct ir_value *y)
{
	gc_finish(c, weighted_sum(c, y));
}

#endif
