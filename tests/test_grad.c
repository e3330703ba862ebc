/*
 * test_grad.c: reverse-mode autodiff (grad_build, compiler/grad*.c) against
 * finite differences.
 *
 * Every case builds a small f64 graph whose inputs are the differentiable
 * operands of the op under test, applies the op and reduces its result y to
 * the scalar L = reduce_sum(y * W), W a fixed random constant of y's shape
 * (each output element gets its own weight, so a VJP that mixes elements up
 * fails). grad_build appends dL/dx for every input; the graph runs once with
 * L and the gradients as outputs, then twice per input element with that
 * element moved by +-h, and each gradient element must match the central
 * difference (L(x + h e_j) - L(x - h e_j)) / 2h within atol + rtol |fd|
 * (h = 1e-6, both tolerances 1e-6, unless a case says why not). At least
 * one element of each gradient must exceed 1e-3 in magnitude, so a rule
 * returning zeros fails. Inputs stay in each op's smooth domain: positive
 * for log and pow's base, |x| < 1 for asin/acos/atanh, and well separated
 * values wherever max, min, sorting, abs or relu pick a branch, so no tie or
 * kink lies within h.
 *
 * Also covered: ops whose gradient is zero (sign, floor, ceil, round: zeros
 * or NULL accepted), the error contract (non-scalar or integer loss, integer
 * wrt, an op without a gradient rule on the path), integer paths that carry
 * no gradient, inputs that do not reach the loss, gradient accumulation over
 * several consumers and repeated operands, and a 2-layer MLP with
 * layer_norm and a softmax cross-entropy made of core ops.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "tap.h"

#define SH(...)                                                                 \
	((struct ir_shape){ .rank = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), \
			    .dims = { __VA_ARGS__ } })
#define SCALAR ((struct ir_shape){ .rank = 0 })
#define NOAXES ((struct ir_ilist){ .n = 0 })

#define MAXIN 8

/* ---- random numbers (fixed seed: every run sees the same graphs) -------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static double urand(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL); /* splitmix64 */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1p-53;
}

static double uni(double lo, double hi) { return lo + (hi - lo) * urand(); }

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

__attribute__((format(printf, 2, 3))) static void gc_begin(struct gc *c, const char *fmt, ...)
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

static void fill_values(double *v, int64_t n, struct fill f)
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
static struct ir_value *gc_in(struct gc *c, const char *name, struct ir_shape s, struct fill f)
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

static double *gc_data(struct gc *c, int i) { return c->x[i].data; }

static const struct ir_attrs no_attrs;

/* Appends op and returns its result number k; NULL (and the case fails)
 * when the node cannot be built or an operand is missing. */
static struct ir_value *opn(struct gc *c, enum ir_op op, const struct ir_attrs *a, int nin,
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

static struct ir_value *op1(struct gc *c, enum ir_op op, const struct ir_attrs *a, struct ir_value *x)
{
	return opn(c, op, a, 1, (struct ir_value *[]){ x }, 0);
}

static struct ir_value *op2(struct gc *c, enum ir_op op, const struct ir_attrs *a, struct ir_value *x,
			    struct ir_value *y)
{
	return opn(c, op, a, 2, (struct ir_value *[]){ x, y }, 0);
}

static struct ir_value *op3(struct gc *c, enum ir_op op, const struct ir_attrs *a, struct ir_value *x,
			    struct ir_value *y, struct ir_value *z)
{
	return opn(c, op, a, 3, (struct ir_value *[]){ x, y, z }, 0);
}

static struct ir_value *cst(struct gc *c, enum ir_dtype dt, struct ir_shape s, const void *data)
{
	struct ir_attrs a = { .dtype = dt, .shape = s, .data = data };
	struct ir_value *none[1] = { NULL };
	return opn(c, IR_OP_CONSTANT, &a, 0, none, 0);
}

/* A constant of distinct random weights, magnitudes in [0.25, 1). */
static struct ir_value *cst_weights(struct gc *c, struct ir_shape s)
{
	int64_t n = ir_shape_numel(&s);
	double *w = malloc((size_t)(n ? n : 1) * sizeof *w);
	fill_values(w, n, SIGNED(0.25, 1.0));
	struct ir_value *v = cst(c, IR_F64, s, w);
	free(w);
	return v;
}

static struct ir_value *reduce_all(struct gc *c, enum ir_op op, struct ir_value *y)
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
static struct ir_value *weighted_sum(struct gc *c, struct ir_value *y)
{
	if (!y) {
		c->ok = false;
		return NULL;
	}
	return reduce_all(c, IR_OP_REDUCE_SUM, op2(c, IR_OP_MUL, NULL, y, cst_weights(c, y->shape)));
}

/* ---- the check ------------------------------------------------------------- */

/* Runs the graph at the current input values; output 0 is the loss. */
static double eval_loss(struct gc *c)
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
static void check_input(struct gc *c, int i, const struct ir_tensor *grad)
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
		TAP_OK(bad == 0 && all_zero, "%s: d/d%s is zero (%s)", c->what, name,
		       grad ? "all zeros" : "NULL");
		if (!all_zero)
			TAP_DIAG("max |g| %.3g", max_g);
		if (bad)
			TAP_DIAG("finite differences not zero: max %.3g (a kink within h?)", max_fd);
		return;
	}
	if (!grad) {
		TAP_OK(0, "%s: d/d%s is NULL but the loss depends on it (|fd| up to %.3g)", c->what, name,
		       max_fd);
		return;
	}
	TAP_OK(bad == 0 && max_g > 1e-3, "%s: d/d%s matches central differences (max err %.2g)",
	       c->what, name, max_err);
	if (bad) {
		TAP_DIAG("%lld of %lld elements off; element %lld: got %.12g, want %.12g", (long long)bad,
			 (long long)n, (long long)first, g_first, fd_first);
		for (int j = 0; j < 4 && j < n; j++)
			TAP_DIAG("  element %d: got %.12g, want %.12g", j, gs[j], fds[j]);
	}
	if (max_g <= 1e-3)
		TAP_DIAG("gradient is zero everywhere (max |g| %.3g, max |fd| %.3g)", max_g, max_fd);
}

/* Differentiates loss with respect to every input, checks each gradient
 * and frees the case. */
static void gc_finish(struct gc *c, struct ir_value *loss)
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
			TAP_OK(0, "%s: d/d%s is %s%s, expected %s%s", c->what, c->in[i]->name,
			       ir_dtype_name(d->dtype), ir_shape_str(&d->shape, s1, sizeof s1),
			       ir_dtype_name(c->in[i]->dtype), ir_shape_str(&c->in[i]->shape, s2, sizeof s2));
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
static void gc_check(struct gc *c, struct ir_value *y)
{
	gc_finish(c, weighted_sum(c, y));
}

/* ---- elementwise ------------------------------------------------------------ */

static void test_unary(void)
{
	const struct {
		enum ir_op op;
		struct fill f;
	} ops[] = {
		{ IR_OP_NEG, UNI(-2, 2) },
		{ IR_OP_ABS, SEP(0.1, 0.05) }, /* k * 0.1 + 0.05: never within 0.05 of 0 */
		{ IR_OP_EXP, UNI(-1.5, 1.5) },
		{ IR_OP_LOG, UNI(0.3, 3) },
		{ IR_OP_SQRT, UNI(0.3, 3) },
		{ IR_OP_RSQRT, UNI(0.3, 3) },
		{ IR_OP_RECIP, SIGNED(0.5, 2) },
		{ IR_OP_TANH, UNI(-2, 2) },
		{ IR_OP_ERF, UNI(-2, 2) },
		{ IR_OP_SIGMOID, UNI(-3, 3) },
		{ IR_OP_RELU, SEP(0.1, 0.05) },
		{ IR_OP_SIN, UNI(-3, 3) },
		{ IR_OP_COS, UNI(-3, 3) },
		{ IR_OP_TAN, UNI(-1.2, 1.2) },
		{ IR_OP_ASIN, UNI(-0.9, 0.9) },
		{ IR_OP_ACOS, UNI(-0.9, 0.9) },
		{ IR_OP_ATAN, UNI(-3, 3) },
		{ IR_OP_SINH, UNI(-2, 2) },
		{ IR_OP_COSH, UNI(-2, 2) },
		{ IR_OP_ASINH, UNI(-3, 3) },
		{ IR_OP_ACOSH, UNI(1.2, 3) },
		{ IR_OP_ATANH, UNI(-0.9, 0.9) },
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		struct gc c;
		gc_begin(&c, "%s", ir_op_name(ops[k].op));
		struct ir_value *x = gc_in(&c, "x", SH(3, 4), ops[k].f);
		gc_check(&c, op1(&c, ops[k].op, NULL, x));
	}
}

/* Piecewise constant ops: zero gradient (zeros or NULL). Values k * 0.5 +
 * 0.2 have fractional part .2 or .7: at least 0.2 from every integer and
 * half-integer where these jump. */
static void test_unary_zero(void)
{
	static const enum ir_op ops[] = { IR_OP_SIGN, IR_OP_FLOOR, IR_OP_CEIL, IR_OP_ROUND };
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		struct gc c;
		gc_begin(&c, "%s", ir_op_name(ops[k]));
		c.zero = true;
		struct ir_value *x = gc_in(&c, "x", SH(3, 4), SEP(0.5, 0.2));
		gc_check(&c, op1(&c, ops[k], NULL, x));
	}
}

/* y = f64(f32(x)) * x: the gradient passes through both converts. The f32
 * rounding (relative 6e-8) makes L a step function at scale 1e-7, so the
 * differences use h = 1e-3 and a 1e-4 tolerance (y is quadratic in x, so
 * the central difference has no truncation error). */
static void test_convert(void)
{
	struct gc c;
	gc_begin(&c, "convert f64->f32->f64");
	c.h = 1e-3;
	c.atol = c.rtol = 1e-4;
	struct ir_value *x = gc_in(&c, "x", SH(3, 4), UNI(-2, 2));
	struct ir_attrs to32 = { .dtype = IR_F32 }, to64 = { .dtype = IR_F64 };
	struct ir_value *r = op1(&c, IR_OP_CONVERT, &to64, op1(&c, IR_OP_CONVERT, &to32, x));
	gc_check(&c, op2(&c, IR_OP_MUL, NULL, r, x));
}

static void test_binary(void)
{
	const struct {
		enum ir_op op;
		struct fill a, b;
	} ops[] = {
		{ IR_OP_ADD, UNI(-2, 2), UNI(-2, 2) },
		{ IR_OP_SUB, UNI(-2, 2), UNI(-2, 2) },
		{ IR_OP_MUL, UNI(-2, 2), UNI(-2, 2) },
		{ IR_OP_DIV, UNI(-2, 2), SIGNED(0.5, 2) },
		{ IR_OP_POW, UNI(0.5, 2), UNI(-1.5, 1.5) },
		/* a on multiples of 0.1, b halfway between: |a - b| >= 0.05 */
		{ IR_OP_MAX, SEP(0.1, 0), SEP(0.1, 0.05) },
		{ IR_OP_MIN, SEP(0.1, 0), SEP(0.1, 0.05) },
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		struct gc c;
		gc_begin(&c, "%s", ir_op_name(ops[k].op));
		struct ir_value *a = gc_in(&c, "a", SH(3, 4), ops[k].a);
		struct ir_value *b = gc_in(&c, "b", SH(3, 4), ops[k].b);
		gc_check(&c, op2(&c, ops[k].op, NULL, a, b));
	}
}

/* rem = fmod(a, b) = a - trunc(a / b) * b: a = b * (q + f) with q an
 * integer and f in [0.2, 0.8] keeps a / b away from the integers where
 * trunc jumps; both signs of a and b. */
static void test_rem(void)
{
	struct gc c;
	gc_begin(&c, "rem");
	struct ir_value *a = gc_in(&c, "a", SH(3, 4), UNI(0, 1));
	struct ir_value *b = gc_in(&c, "b", SH(3, 4), SIGNED(0.6, 1.4));
	if (c.ok) {
		double *av = gc_data(&c, 0), *bv = gc_data(&c, 1);
		for (int i = 0; i < 12; i++) {
			double q = (double)(i % 7 - 3), f = uni(0.2, 0.8);
			av[i] = bv[i] * (q + (q < 0 ? -f : f));
		}
	}
	gc_check(&c, op2(&c, IR_OP_REM, NULL, a, b));
}

static void test_select(void)
{
	static const uint8_t cond[12] = { 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1 };
	struct gc c;
	gc_begin(&c, "select (constant cond)");
	struct ir_value *t = gc_in(&c, "on_true", SH(3, 4), UNI(-2, 2));
	struct ir_value *f = gc_in(&c, "on_false", SH(3, 4), UNI(-2, 2));
	gc_check(&c, op3(&c, IR_OP_SELECT, NULL, cst(&c, IR_BOOL, SH(3, 4), cond), t, f));

	/* cond = x > 0 is computed from x itself: that path is boolean and
	 * carries nothing; y = x > 0 ? exp(x) : -x */
	double zero[12] = { 0 };
	gc_begin(&c, "select (cond computed from x)");
	struct ir_value *x = gc_in(&c, "x", SH(3, 4), SEP(0.2, 0.1));
	struct ir_value *p = op2(&c, IR_OP_GT, NULL, x, cst(&c, IR_F64, SH(3, 4), zero));
	gc_check(&c, op3(&c, IR_OP_SELECT, NULL, p, op1(&c, IR_OP_EXP, NULL, x),
			 op1(&c, IR_OP_NEG, NULL, x)));
}

/* ---- dot and conv ------------------------------------------------------------ */

static void dot_case(const char *what, struct ir_shape ls, struct ir_shape rs, struct ir_ilist lb,
		     struct ir_ilist rb, struct ir_ilist lc, struct ir_ilist rc)
{
	struct gc c;
	gc_begin(&c, "dot %s", what);
	struct ir_value *l = gc_in(&c, "lhs", ls, UNI(-1, 1));
	struct ir_value *r = gc_in(&c, "rhs", rs, UNI(-1, 1));
	struct ir_attrs a = { .lhs_batch = lb, .rhs_batch = rb, .lhs_contract = lc, .rhs_contract = rc };
	gc_check(&c, op2(&c, IR_OP_DOT, &a, l, r));
}

static void test_dot(void)
{
	dot_case("matmul [3,4]x[4,5]", SH(3, 4), SH(4, 5), NOAXES, NOAXES, IR_ILIST(1), IR_ILIST(0));
	dot_case("batched [2,3,4]x[2,4,5] batch [0]/[0]", SH(2, 3, 4), SH(2, 4, 5), IR_ILIST(0),
		 IR_ILIST(0), IR_ILIST(2), IR_ILIST(1));
	dot_case("lhs transposed [4,3]x[4,5] contract [0]/[0]", SH(4, 3), SH(4, 5), NOAXES, NOAXES,
		 IR_ILIST(0), IR_ILIST(0));
	dot_case("rhs transposed [3,4]x[5,4] contract [1]/[1]", SH(3, 4), SH(5, 4), NOAXES, NOAXES,
		 IR_ILIST(1), IR_ILIST(1));
	dot_case("two contracting dims [3,2,4]x[2,4,5] contract [1,2]/[0,1]", SH(3, 2, 4),
		 SH(2, 4, 5), NOAXES, NOAXES, IR_ILIST(1, 2), IR_ILIST(0, 1));
	dot_case("two contracting dims out of order [3,2,4]x[4,5,2] contract [1,2]/[2,0]",
		 SH(3, 2, 4), SH(4, 5, 2), NOAXES, NOAXES, IR_ILIST(1, 2), IR_ILIST(2, 0));
	dot_case("batch not leading [3,2,4]x[4,2,5] batch [1]/[1] contract [2]/[0]", SH(3, 2, 4),
		 SH(4, 2, 5), IR_ILIST(1), IR_ILIST(1), IR_ILIST(2), IR_ILIST(0));
	dot_case("two batch dims, swapped [2,3,4,2]x[3,2,4,5] batch [0,1]/[1,0] contract [2]/[2]",
		 SH(2, 3, 4, 2), SH(3, 2, 4, 5), IR_ILIST(0, 1), IR_ILIST(1, 0), IR_ILIST(2),
		 IR_ILIST(2));
	dot_case("vector-matrix [4]x[4,5]", SH(4), SH(4, 5), NOAXES, NOAXES, IR_ILIST(0), IR_ILIST(0));
	dot_case("matrix-vector [3,4]x[4]", SH(3, 4), SH(4), NOAXES, NOAXES, IR_ILIST(1), IR_ILIST(0));
	dot_case("inner product [4]x[4] (scalar result)", SH(4), SH(4), NOAXES, NOAXES, IR_ILIST(0),
		 IR_ILIST(0));
	dot_case("outer product [3]x[4] (no contraction)", SH(3), SH(4), NOAXES, NOAXES, NOAXES,
		 NOAXES);
}

static void conv_case(const char *what, struct ir_shape xs, struct ir_shape ws, struct ir_ilist stride,
		      struct ir_ilist lo, struct ir_ilist hi, struct ir_ilist dil, int64_t groups)
{
	struct gc c;
	gc_begin(&c, "conv %s", what);
	struct ir_value *x = gc_in(&c, "input", xs, UNI(-1, 1));
	struct ir_value *w = gc_in(&c, "weight", ws, UNI(-1, 1));
	struct ir_attrs a = { .stride = stride, .pad_lo = lo, .pad_hi = hi, .dilation = dil, .groups = groups };
	gc_check(&c, op2(&c, IR_OP_CONV, &a, x, w));
}

static void test_conv(void)
{
	conv_case("1-D [2,3,7]*[4,3,3]", SH(2, 3, 7), SH(4, 3, 3), IR_ILIST(1), IR_ILIST(0),
		  IR_ILIST(0), IR_ILIST(1), 1);
	conv_case("2-D [2,3,5,5]*[4,3,3,3] pad 1", SH(2, 3, 5, 5), SH(4, 3, 3, 3), IR_ILIST(1, 1),
		  IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1), 1);
	/* (7 + 2 - 3) / 2: divisible */
	conv_case("2-D stride 2 pad 1 [1,2,7,7]*[3,2,3,3]", SH(1, 2, 7, 7), SH(3, 2, 3, 3),
		  IR_ILIST(2, 2), IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1), 1);
	/* (6 + 2 - 3) / 2 leaves 1: the last row and column are never read */
	conv_case("2-D stride 2 not dividing [1,2,6,6]*[3,2,3,3]", SH(1, 2, 6, 6), SH(3, 2, 3, 3),
		  IR_ILIST(2, 2), IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1), 1);
	conv_case("2-D asymmetric pads lo [2,0] hi [0,1]", SH(1, 2, 5, 6), SH(3, 2, 3, 2),
		  IR_ILIST(1, 1), IR_ILIST(2, 0), IR_ILIST(0, 1), IR_ILIST(1, 1), 1);
	conv_case("2-D dilation 2 [1,2,7,7]*[2,2,3,3]", SH(1, 2, 7, 7), SH(2, 2, 3, 3),
		  IR_ILIST(1, 1), IR_ILIST(0, 0), IR_ILIST(0, 0), IR_ILIST(2, 2), 1);
	conv_case("2-D groups 2 [2,4,5,5]*[6,2,3,3]", SH(2, 4, 5, 5), SH(6, 2, 3, 3),
		  IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1), 2);
	/* padded 13, span 5: (13 - 5) / 3 leaves 2 */
	conv_case("1-D stride 3 pads 1/2 dilation 2 groups 2 [2,4,10]*[4,2,3]", SH(2, 4, 10),
		  SH(4, 2, 3), IR_ILIST(3), IR_ILIST(1), IR_ILIST(2), IR_ILIST(2), 2);
	conv_case("2-D depthwise groups 3, stride [2,1], dilation [1,2] [1,3,6,7]*[3,1,2,3]",
		  SH(1, 3, 6, 7), SH(3, 1, 2, 3), IR_ILIST(2, 1), IR_ILIST(0, 1), IR_ILIST(1, 2),
		  IR_ILIST(1, 2), 3);
}

/* ---- reductions, windows, cumsum ------------------------------------------ */

static void reduce_case(enum ir_op op, struct ir_ilist axes, struct fill f, const char *what)
{
	struct gc c;
	gc_begin(&c, "%s axes %s of [2,3,4]", ir_op_name(op), what);
	struct ir_value *x = gc_in(&c, "x", SH(2, 3, 4), f);
	struct ir_attrs a = { .axes = axes };
	gc_check(&c, op1(&c, op, &a, x));
}

static void test_reduce(void)
{
	const struct {
		enum ir_op op;
		struct fill f;
	} ops[] = {
		{ IR_OP_REDUCE_SUM, UNI(-1, 1) },
		{ IR_OP_REDUCE_MAX, SEP(0.05, 0) },
		{ IR_OP_REDUCE_MIN, SEP(0.05, 0) },
		/* magnitudes near 1 keep the product of 24 in a sane range */
		{ IR_OP_REDUCE_PROD, SIGNED(0.7, 1.3) },
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		reduce_case(ops[k].op, IR_ILIST(1), ops[k].f, "[1]");
		reduce_case(ops[k].op, IR_ILIST(2), ops[k].f, "[2]");
		reduce_case(ops[k].op, IR_ILIST(0, 2), ops[k].f, "[0,2]");
		reduce_case(ops[k].op, IR_ILIST(0, 1, 2), ops[k].f, "[0,1,2]");
	}
	reduce_case(IR_OP_REDUCE_SUM, IR_ILIST(0), UNI(-1, 1), "[0]");
	reduce_case(IR_OP_REDUCE_SUM, NOAXES, UNI(-1, 1), "[] (identity)");

	/* A product with an exact zero factor: d/dx_j = product of the others,
	 * so a rule dividing the product by x_j gives NaN or 0 there. */
	struct gc c;
	gc_begin(&c, "reduce_prod axes [1] of [3,4] with a zero element");
	struct ir_value *x = gc_in(&c, "x", SH(3, 4), SIGNED(0.7, 1.3));
	if (c.ok)
		gc_data(&c, 0)[5] = 0.0;
	struct ir_attrs a = { .axes = IR_ILIST(1) };
	gc_check(&c, op1(&c, IR_OP_REDUCE_PROD, &a, x));
}

static void window_case(enum ir_op op, const char *what, struct ir_shape s, struct ir_ilist win,
			struct ir_ilist stride, struct ir_ilist lo, struct ir_ilist hi, struct ir_ilist dil)
{
	struct gc c;
	gc_begin(&c, "%s %s", ir_op_name(op), what);
	struct ir_value *x = gc_in(&c, "x", s, op == IR_OP_WINDOW_MAX ? SEP(0.05, 0) : UNI(-1, 1));
	struct ir_attrs a = { .window = win, .stride = stride, .pad_lo = lo, .pad_hi = hi, .dilation = dil };
	gc_check(&c, op1(&c, op, &a, x));
}

static void test_window(void)
{
	static const enum ir_op ops[] = { IR_OP_WINDOW_MAX, IR_OP_WINDOW_SUM };
	for (size_t k = 0; k < 2; k++) {
		window_case(ops[k], "2-D [6,7] window 3x3 stride 2 pad 1", SH(6, 7), IR_ILIST(3, 3),
			    IR_ILIST(2, 2), IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1));
		window_case(ops[k], "NCHW [1,2,5,6] window [1,1,3,3] stride [1,1,2,2] pad 1",
			    SH(1, 2, 5, 6), IR_ILIST(1, 1, 3, 3), IR_ILIST(1, 1, 2, 2),
			    IR_ILIST(0, 0, 1, 1), IR_ILIST(0, 0, 1, 1), IR_ILIST(1, 1, 1, 1));
		window_case(ops[k], "1-D [10] window 3 dilation 2", SH(10), IR_ILIST(3), IR_ILIST(1),
			    IR_ILIST(0), IR_ILIST(0), IR_ILIST(2));
		window_case(ops[k], "1-D [9] window 2 stride 3 pads 0/1 (not dividing)", SH(9),
			    IR_ILIST(2), IR_ILIST(3), IR_ILIST(0), IR_ILIST(1), IR_ILIST(1));
	}
}

static void test_cumsum(void)
{
	static const struct {
		int64_t axis, mode;
		const char *what;
	} cases[] = {
		{ 1, 0, "axis 1" },
		{ 1, IR_CUMSUM_EXCLUSIVE, "axis 1 exclusive" },
		{ 1, IR_CUMSUM_REVERSE, "axis 1 reverse" },
		{ 1, IR_CUMSUM_EXCLUSIVE | IR_CUMSUM_REVERSE, "axis 1 exclusive reverse" },
		{ 0, 0, "axis 0" },
		{ 0, IR_CUMSUM_EXCLUSIVE | IR_CUMSUM_REVERSE, "axis 0 exclusive reverse" },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct gc c;
		gc_begin(&c, "cumsum %s of [3,5]", cases[k].what);
		struct ir_value *x = gc_in(&c, "x", SH(3, 5), UNI(-1, 1));
		struct ir_attrs a = { .axis = cases[k].axis, .mode = cases[k].mode };
		gc_check(&c, op1(&c, IR_OP_CUMSUM, &a, x));
	}
	struct gc c;
	gc_begin(&c, "cumsum axis 1 (middle) exclusive of [2,4,3]");
	struct ir_value *x = gc_in(&c, "x", SH(2, 4, 3), UNI(-1, 1));
	struct ir_attrs a = { .axis = 1, .mode = IR_CUMSUM_EXCLUSIVE };
	gc_check(&c, op1(&c, IR_OP_CUMSUM, &a, x));
}

/* ---- data movement -------------------------------------------------------- */

/* One op with attributes a on one input of shape s. */
static void move_case(enum ir_op op, const char *what, struct ir_shape s, const struct ir_attrs *a)
{
	struct gc c;
	gc_begin(&c, "%s %s", ir_op_name(op), what);
	struct ir_value *x = gc_in(&c, "x", s, UNI(-1, 1));
	gc_check(&c, op1(&c, op, a, x));
}

static void test_move(void)
{
	move_case(IR_OP_RESHAPE, "[2,3,4] -> [4,6]", SH(2, 3, 4), &(struct ir_attrs){ .shape = SH(4, 6) });
	move_case(IR_OP_RESHAPE, "[1] -> [] (scalar)", SH(1), &(struct ir_attrs){ .shape = SCALAR });
	move_case(IR_OP_TRANSPOSE, "[2,3,4] axes [2,0,1]", SH(2, 3, 4),
		  &(struct ir_attrs){ .axes = IR_ILIST(2, 0, 1) });
	move_case(IR_OP_TRANSPOSE, "[2,3,4] axes [1,2,0]", SH(2, 3, 4),
		  &(struct ir_attrs){ .axes = IR_ILIST(1, 2, 0) });
	move_case(IR_OP_BROADCAST, "[3,1] -> [2,3,4] axes [1,2] (size-1 dim and a new dim)", SH(3, 1),
		  &(struct ir_attrs){ .shape = SH(2, 3, 4), .axes = IR_ILIST(1, 2) });
	move_case(IR_OP_BROADCAST, "[4] -> [3,4] axes [1]", SH(4),
		  &(struct ir_attrs){ .shape = SH(3, 4), .axes = IR_ILIST(1) });
	move_case(IR_OP_BROADCAST, "[3] -> [3,2,4] axes [0] (new trailing dims)", SH(3),
		  &(struct ir_attrs){ .shape = SH(3, 2, 4), .axes = IR_ILIST(0) });
	move_case(IR_OP_BROADCAST, "[] -> [3,4] (scalar)", SCALAR,
		  &(struct ir_attrs){ .shape = SH(3, 4), .axes = NOAXES });
	move_case(IR_OP_SLICE, "[6,7] start [1,2] limit [6,7] stride [2,2]", SH(6, 7),
		  &(struct ir_attrs){ .start = IR_ILIST(1, 2), .limit = IR_ILIST(6, 7),
				      .stride = IR_ILIST(2, 2) });
	move_case(IR_OP_SLICE, "[6,7] start [2,0] limit [5,6] stride [1,3]", SH(6, 7),
		  &(struct ir_attrs){ .start = IR_ILIST(2, 0), .limit = IR_ILIST(5, 6),
				      .stride = IR_ILIST(1, 3) });
	move_case(IR_OP_PAD, "constant 0.5 lo [1,0] hi [2,1]", SH(3, 4),
		  &(struct ir_attrs){ .pad_lo = IR_ILIST(1, 0), .pad_hi = IR_ILIST(2, 1),
				      .mode = IR_PAD_CONSTANT, .value = 0.5 });
	move_case(IR_OP_PAD, "edge lo [2,1] hi [1,3]", SH(3, 4),
		  &(struct ir_attrs){ .pad_lo = IR_ILIST(2, 1), .pad_hi = IR_ILIST(1, 3),
				      .mode = IR_PAD_EDGE });
	move_case(IR_OP_PAD, "reflect lo [2,1] hi [1,3]", SH(3, 5),
		  &(struct ir_attrs){ .pad_lo = IR_ILIST(2, 1), .pad_hi = IR_ILIST(1, 3),
				      .mode = IR_PAD_REFLECT });
	move_case(IR_OP_REVERSE, "[2,3,4] axes [0,2]", SH(2, 3, 4),
		  &(struct ir_attrs){ .axes = IR_ILIST(0, 2) });
	move_case(IR_OP_REVERSE, "[2,3,4] axes [1]", SH(2, 3, 4),
		  &(struct ir_attrs){ .axes = IR_ILIST(1) });

	struct gc c;
	gc_begin(&c, "concat of [2,1,3] [2,2,3] [2,3,3] axis 1");
	struct ir_value *in[3] = {
		gc_in(&c, "a", SH(2, 1, 3), UNI(-1, 1)),
		gc_in(&c, "b", SH(2, 2, 3), UNI(-1, 1)),
		gc_in(&c, "c", SH(2, 3, 3), UNI(-1, 1)),
	};
	struct ir_attrs a = { .axis = 1 };
	gc_check(&c, opn(&c, IR_OP_CONCAT, &a, 3, in, 0));

	/* the same value twice among concat's operands: both slots accumulate */
	gc_begin(&c, "concat of x, y, x axis 0");
	struct ir_value *x = gc_in(&c, "x", SH(2, 3), UNI(-1, 1));
	struct ir_value *y = gc_in(&c, "y", SH(1, 3), UNI(-1, 1));
	struct ir_attrs a0 = { .axis = 0 };
	gc_check(&c, opn(&c, IR_OP_CONCAT, &a0, 3, (struct ir_value *[]){ x, y, x }, 0));
}

static void test_gather_scatter(void)
{
	struct gc c;
	/* repeats (1 twice) and a negative index (-1 is row 4) */
	static const int64_t idx0[4] = { 1, 3, 1, -1 };
	gc_begin(&c, "gather axis 0 of [5,3], indices [1,3,1,-1]");
	struct ir_value *d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	struct ir_attrs a0 = { .axis = 0 };
	gc_check(&c, op2(&c, IR_OP_GATHER, &a0, d, cst(&c, IR_I64, SH(4), idx0)));

	static const int64_t idx1[4] = { 0, 4, -2, 0 };
	gc_begin(&c, "gather axis 1 of [2,5,3], indices [[0,4],[-2,0]]");
	d = gc_in(&c, "data", SH(2, 5, 3), UNI(-1, 1));
	struct ir_attrs a1 = { .axis = 1 };
	gc_check(&c, op2(&c, IR_OP_GATHER, &a1, d, cst(&c, IR_I64, SH(2, 2), idx1)));

	static const int64_t one = -2;
	gc_begin(&c, "gather axis 0 of [5,3], scalar index -2");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	gc_check(&c, op2(&c, IR_OP_GATHER, &a0, d, cst(&c, IR_I64, SCALAR, &one)));

	static const int64_t sidx[2] = { 3, 0 };
	gc_begin(&c, "scatter none into [5,3], indices [3,0]");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	struct ir_value *u = gc_in(&c, "updates", SH(2, 3), UNI(-1, 1));
	struct ir_attrs sn = { .mode = IR_SCATTER_NONE };
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sn, d, cst(&c, IR_I64, SH(2), sidx), u));

	static const int64_t sidx2[4] = { 1, -1, 0, 2 };
	gc_begin(&c, "scatter none into [5,3], indices [[1,-1],[0,2]]");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(2, 2, 3), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sn, d, cst(&c, IR_I64, SH(2, 2), sidx2), u));

	/* Repeated rows without combining: the later update wins, so the
	 * overwritten one gets no gradient (and -2 is row 3 again). */
	static const int64_t didx[3] = { 3, 0, -2 };
	gc_begin(&c, "scatter none into [5,3], indices [3,0,-2] (row 3 written twice)");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(3, 3), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sn, d, cst(&c, IR_I64, SH(3), didx), u));

	static const int64_t aidx[3] = { 1, 4, 1 };
	gc_begin(&c, "scatter add into [5,3], indices [1,4,1] (repeated)");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(3, 3), UNI(-1, 1));
	struct ir_attrs sa = { .mode = IR_SCATTER_ADD };
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sa, d, cst(&c, IR_I64, SH(3), aidx), u));

	static const int64_t aidx2[4] = { 2, -3, 0, 1 }; /* -3 is 2 again */
	gc_begin(&c, "scatter add into [5,2,2], indices [[2,-3],[0,1]]");
	d = gc_in(&c, "data", SH(5, 2, 2), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(2, 2, 2, 2), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sa, d, cst(&c, IR_I64, SH(2, 2), aidx2), u));
}

/* ---- composites -------------------------------------------------------- */

static void test_composites(void)
{
	struct gc c;
	struct ir_attrs a;

	gc_begin(&c, "softmax axis 1 (last) of [3,5]");
	a = (struct ir_attrs){ .axis = 1 };
	gc_check(&c, op1(&c, IR_OP_SOFTMAX, &a, gc_in(&c, "x", SH(3, 5), UNI(-2, 2))));

	gc_begin(&c, "softmax axis 1 (middle) of [2,4,3]");
	gc_check(&c, op1(&c, IR_OP_SOFTMAX, &a, gc_in(&c, "x", SH(2, 4, 3), UNI(-2, 2))));

	gc_begin(&c, "softmax axis 0 of [4,3]");
	a = (struct ir_attrs){ .axis = 0 };
	gc_check(&c, op1(&c, IR_OP_SOFTMAX, &a, gc_in(&c, "x", SH(4, 3), UNI(-2, 2))));

	gc_begin(&c, "layer_norm axis 1 (last) of [3,6], eps 1e-5");
	a = (struct ir_attrs){ .axis = 1, .eps = 1e-5 };
	struct ir_value *x = gc_in(&c, "x", SH(3, 6), UNI(-2, 2));
	struct ir_value *s = gc_in(&c, "scale", SH(6), UNI(0.5, 1.5));
	struct ir_value *b = gc_in(&c, "bias", SH(6), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_LAYER_NORM, &a, x, s, b));

	gc_begin(&c, "layer_norm axis 1 (rank-2) of [2,3,4], eps 1e-5");
	x = gc_in(&c, "x", SH(2, 3, 4), UNI(-2, 2));
	s = gc_in(&c, "scale", SH(3, 4), UNI(0.5, 1.5));
	b = gc_in(&c, "bias", SH(3, 4), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_LAYER_NORM, &a, x, s, b));

	gc_begin(&c, "topk largest k=3 axis 1 of [3,6] (values)");
	a = (struct ir_attrs){ .axis = 1, .k = 3 };
	x = gc_in(&c, "x", SH(3, 6), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	gc_begin(&c, "topk smallest k=2 axis 0 of [5,4] (values)");
	a = (struct ir_attrs){ .axis = 0, .k = 2, .mode = IR_TOPK_SMALLEST };
	x = gc_in(&c, "x", SH(5, 4), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	gc_begin(&c, "topk largest k=1 axis 1 of [2,3,4] (values)");
	a = (struct ir_attrs){ .axis = 1, .k = 1 };
	x = gc_in(&c, "x", SH(2, 3, 4), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	gc_begin(&c, "topk smallest k=5 (whole dim: a sort) axis 1 of [2,5] (values)");
	a = (struct ir_attrs){ .axis = 1, .k = 5, .mode = IR_TOPK_SMALLEST };
	x = gc_in(&c, "x", SH(2, 5), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	/* topk whose indices output is also used (through an integer path) */
	gc_begin(&c, "topk largest k=2 axis 1 of [3,4], indices used too");
	a = (struct ir_attrs){ .axis = 1, .k = 2 };
	x = gc_in(&c, "x", SH(3, 4), SEP(0.1, 0));
	struct ir_value *vals = opn(&c, IR_OP_TOPK, &a, 1, &x, 0);
	struct ir_value *idx = c.ok ? vals->def->out[1] : NULL;
	struct ir_attrs f64 = { .dtype = IR_F64 };
	gc_check(&c, op2(&c, IR_OP_MUL, NULL, vals, op1(&c, IR_OP_CONVERT, &f64, idx)));
}

/* ---- composition: accumulation and an MLP ---------------------------------- */

static struct ir_value *bcast(struct gc *c, struct ir_value *v, struct ir_shape to, struct ir_ilist axes)
{
	struct ir_attrs a = { .shape = to, .axes = axes };
	return op1(c, IR_OP_BROADCAST, &a, v);
}

static void test_accumulate(void)
{
	struct gc c;
	gc_begin(&c, "one value, two consumers: t = tanh(x); exp(t) + t * sin(t)");
	struct ir_value *x = gc_in(&c, "x", SH(3, 4), UNI(-1.5, 1.5));
	struct ir_value *t = op1(&c, IR_OP_TANH, NULL, x);
	struct ir_value *e = op1(&c, IR_OP_EXP, NULL, t);
	struct ir_value *m = op2(&c, IR_OP_MUL, NULL, t, op1(&c, IR_OP_SIN, NULL, t));
	gc_check(&c, op2(&c, IR_OP_ADD, NULL, e, m));

	gc_begin(&c, "one operand twice: mul x, x");
	x = gc_in(&c, "x", SH(3, 4), UNI(-2, 2));
	gc_check(&c, op2(&c, IR_OP_MUL, NULL, x, x));

	gc_begin(&c, "one operand twice: dot x, x ([3,3] matmul)");
	x = gc_in(&c, "x", SH(3, 3), UNI(-1, 1));
	struct ir_attrs mm = { .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) };
	gc_check(&c, op2(&c, IR_OP_DOT, &mm, x, x));

	gc_begin(&c, "input reaching the loss along paths of different lengths");
	x = gc_in(&c, "x", SH(4), UNI(-1, 1));
	struct ir_value *y = gc_in(&c, "y", SH(4), UNI(-1, 1));
	struct ir_value *p = op2(&c, IR_OP_MUL, NULL, x, y);
	struct ir_value *q = op1(&c, IR_OP_EXP, NULL, op2(&c, IR_OP_ADD, NULL, p, x));
	gc_check(&c, op2(&c, IR_OP_SUB, NULL, op2(&c, IR_OP_MUL, NULL, q, p), x));

	/* the loss is a graph input itself: its gradient is the seed, 1 */
	gc_begin(&c, "loss is the wrt input");
	x = gc_in(&c, "x", SCALAR, UNI(-1, 1));
	gc_finish(&c, x);

	/* the loss is a reduce_sum of an input with no weights: ones */
	gc_begin(&c, "loss = reduce_sum(x)");
	x = gc_in(&c, "x", SH(2, 3), UNI(-1, 1));
	gc_finish(&c, reduce_all(&c, IR_OP_REDUCE_SUM, x));
}

/* x [4,6] -> dot W1 + b1 -> layer_norm -> tanh -> dot W2 + b2 -> logits
 * [4,5]; loss = mean over rows of -log softmax(logits)[label], the
 * log-softmax written out with reduce_max, exp, reduce_sum, log. */
static void test_mlp(void)
{
	static const double onehot[20] = {
		0, 0, 1, 0, 0, /* labels 2, 0, 4, 1 */
		1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0,
	};
	static const double quarter = 0.25;
	struct gc c;
	gc_begin(&c, "mlp: dot, layer_norm, tanh, dot, softmax cross-entropy");
	struct ir_value *x = gc_in(&c, "x", SH(4, 6), UNI(-1, 1));
	struct ir_value *w1 = gc_in(&c, "w1", SH(6, 8), UNI(-0.6, 0.6));
	struct ir_value *b1 = gc_in(&c, "b1", SH(8), UNI(-0.5, 0.5));
	struct ir_value *g1 = gc_in(&c, "ln_scale", SH(8), UNI(0.5, 1.5));
	struct ir_value *be1 = gc_in(&c, "ln_bias", SH(8), UNI(-0.5, 0.5));
	struct ir_value *w2 = gc_in(&c, "w2", SH(8, 5), UNI(-0.8, 0.8));
	struct ir_value *b2 = gc_in(&c, "b2", SH(5), UNI(-0.5, 0.5));
	struct ir_attrs mm = { .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) };
	struct ir_attrs ln = { .axis = 1, .eps = 1e-5 };
	struct ir_attrs rows = { .axes = IR_ILIST(1) };

	struct ir_value *h = op2(&c, IR_OP_DOT, &mm, x, w1);
	h = op2(&c, IR_OP_ADD, NULL, h, bcast(&c, b1, SH(4, 8), IR_ILIST(1)));
	h = op3(&c, IR_OP_LAYER_NORM, &ln, h, g1, be1);
	h = op1(&c, IR_OP_TANH, NULL, h);
	struct ir_value *z = op2(&c, IR_OP_DOT, &mm, h, w2);
	z = op2(&c, IR_OP_ADD, NULL, z, bcast(&c, b2, SH(4, 5), IR_ILIST(1)));
	struct ir_value *zmax = op1(&c, IR_OP_REDUCE_MAX, &rows, z);
	struct ir_value *zs = op2(&c, IR_OP_SUB, NULL, z, bcast(&c, zmax, SH(4, 5), IR_ILIST(0)));
	struct ir_value *lse = op1(&c, IR_OP_LOG, NULL,
				   op1(&c, IR_OP_REDUCE_SUM, &rows, op1(&c, IR_OP_EXP, NULL, zs)));
	struct ir_value *logp = op2(&c, IR_OP_SUB, NULL, zs, bcast(&c, lse, SH(4, 5), IR_ILIST(0)));
	struct ir_value *nll = op1(&c, IR_OP_NEG, NULL,
				   reduce_all(&c, IR_OP_REDUCE_SUM,
					      op2(&c, IR_OP_MUL, NULL, logp, cst(&c, IR_F64, SH(4, 5), onehot))));
	gc_finish(&c, op2(&c, IR_OP_MUL, NULL, nll, cst(&c, IR_F64, SCALAR, &quarter)));
}

/* ---- contract: errors and NULL gradients ----------------------------------- */

static struct ir_value *node1(struct ir_graph *g, enum ir_op op, const struct ir_attrs *a,
			      struct ir_value *x)
{
	struct ir_node *n = x ? ir_graph_add_node(g, op, NULL, 1, &x, a ? a : &no_attrs) : NULL;
	return n ? n->out[0] : NULL;
}

static void test_errors(void)
{
	struct ir_value *grads[2] = { 0 };
	struct ir_attrs all2 = { .axes = IR_ILIST(0, 1) };

	/* non-scalar loss */
	struct ir_graph *g = ir_graph_new();
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F64, &SH(3));
	struct ir_value *y = node1(g, IR_OP_EXP, NULL, x);
	int rc = y ? grad_build(g, y, 1, &x, grads) : -1000;
	TAP_OK(rc == -EINVAL, "non-scalar loss f64[3]: -EINVAL (got %d: %s)", rc, ir_error());
	ir_graph_free(g);

	/* integer scalar loss */
	g = ir_graph_new();
	x = ir_graph_add_input(g, "x", IR_F64, &SH(2, 3));
	struct ir_value *k = ir_graph_add_input(g, "k", IR_I64, &SH(2, 3));
	y = node1(g, IR_OP_REDUCE_SUM, &all2, k);
	rc = y ? grad_build(g, y, 1, &x, grads) : -1000;
	TAP_OK(rc == -EINVAL, "i64 scalar loss: -EINVAL (got %d: %s)", rc, ir_error());

	/* integer wrt (in the same graph; the loss is a proper f64 scalar) */
	y = node1(g, IR_OP_REDUCE_SUM, &all2, node1(g, IR_OP_EXP, NULL, x));
	struct ir_value *wrt[2] = { x, k };
	rc = y ? grad_build(g, y, 2, wrt, grads) : -1000;
	TAP_OK(rc == -EINVAL, "i64 wrt: -EINVAL (got %d: %s)", rc, ir_error());
	ir_graph_free(g);

	/* scatter max has no gradient rule: -ENOTSUP naming scatter and the wrt */
	static const int64_t idx[2] = { 0, 2 };
	for (int which = 0; which < 2; which++) {
		const char *names[2] = { "sc_data_in", "sc_updates_in" };
		g = ir_graph_new();
		struct ir_value *in[3];
		in[0] = ir_graph_add_input(g, names[0], IR_F64, &SH(4, 3));
		struct ir_attrs ca = { .dtype = IR_I64, .shape = SH(2), .data = idx };
		struct ir_node *cn = ir_graph_add_node(g, IR_OP_CONSTANT, NULL, 0, in, &ca);
		in[1] = cn ? cn->out[0] : NULL;
		in[2] = ir_graph_add_input(g, names[1], IR_F64, &SH(2, 3));
		struct ir_attrs sm = { .mode = IR_SCATTER_MAX };
		struct ir_node *sn = in[1] ? ir_graph_add_node(g, IR_OP_SCATTER, "the_scatter", 3, in, &sm) : NULL;
		y = sn ? node1(g, IR_OP_REDUCE_SUM, &all2, node1(g, IR_OP_EXP, NULL, sn->out[0])) : NULL;
		struct ir_value *w = in[which == 0 ? 0 : 2];
		ir_error_clear();
		rc = y ? grad_build(g, y, 1, &w, grads) : -1000;
		const char *msg = ir_error();
		TAP_OK(rc == -ENOTSUP && strstr(msg, "scatter") && strstr(msg, names[which]),
		       "scatter max on the path from %s: -ENOTSUP naming scatter and %s (got %d: %s)",
		       names[which], names[which], rc, msg);
		ir_graph_free(g);
	}

	/* the same graph with an unrelated wrt: the unsupported op is not on
	 * any path from it, so no error */
	g = ir_graph_new();
	{
		struct ir_value *in[3];
		in[0] = ir_graph_add_input(g, "d", IR_F64, &SH(4, 3));
		struct ir_attrs ca = { .dtype = IR_I64, .shape = SH(2), .data = idx };
		struct ir_node *cn = ir_graph_add_node(g, IR_OP_CONSTANT, NULL, 0, in, &ca);
		in[1] = cn ? cn->out[0] : NULL;
		in[2] = ir_graph_add_input(g, "u", IR_F64, &SH(2, 3));
		x = ir_graph_add_input(g, "x", IR_F64, &SH(4, 3));
		struct ir_attrs sm = { .mode = IR_SCATTER_MAX };
		struct ir_node *sn = in[1] ? ir_graph_add_node(g, IR_OP_SCATTER, NULL, 3, in, &sm) : NULL;
		struct ir_value *sum = NULL;
		if (sn) {
			struct ir_value *ab[2] = { sn->out[0], x };
			struct ir_node *an = ir_graph_add_node(g, IR_OP_MUL, NULL, 2, ab, &no_attrs);
			sum = an ? node1(g, IR_OP_REDUCE_SUM, &all2, an->out[0]) : NULL;
		}
		grads[0] = NULL;
		rc = sum ? grad_build(g, sum, 1, &x, grads) : -1000;
		TAP_OK(rc == 0 && grads[0], "scatter max off the path from the wrt: no error (got %d: %s)", rc,
		       rc ? ir_error() : "");
	}
	ir_graph_free(g);
}

static void test_null_grads(void)
{
	static const double w[3] = { 0.5, -1.0, 0.75 };
	struct ir_value *grads[2] = { 0 };
	struct ir_attrs axis1 = { .axis = 1 }, to64 = { .dtype = IR_F64 };
	struct ir_attrs all1 = { .axes = IR_ILIST(0) };

	/* loss = sum(f64(argmax(x, 1)) * w): depends on x only through integers */
	struct ir_graph *g = ir_graph_new();
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F64, &SH(3, 4));
	struct ir_value *am = node1(g, IR_OP_CONVERT, &to64, node1(g, IR_OP_ARGMAX, &axis1, x));
	struct ir_attrs ca = { .dtype = IR_F64, .shape = SH(3), .data = w };
	struct ir_node *wn = ir_graph_add_node(g, IR_OP_CONSTANT, NULL, 0, &x, &ca);
	struct ir_value *l = NULL;
	if (am && wn) {
		struct ir_value *ab[2] = { am, wn->out[0] };
		struct ir_node *mn = ir_graph_add_node(g, IR_OP_MUL, NULL, 2, ab, &no_attrs);
		l = mn ? node1(g, IR_OP_REDUCE_SUM, &all1, mn->out[0]) : NULL;
	}
	grads[0] = (struct ir_value *)1;
	int rc = l ? grad_build(g, l, 1, &x, grads) : -1000;
	TAP_OK(rc == 0 && grads[0] == NULL, "argmax -> convert -> loss: d/dx NULL, no error (got %d%s%s)",
	       rc, rc ? ": " : "", rc ? ir_error() : "");
	ir_graph_free(g);

	/* a wrt that the loss does not read at all */
	g = ir_graph_new();
	x = ir_graph_add_input(g, "x", IR_F64, &SH(3));
	struct ir_value *u = ir_graph_add_input(g, "unused", IR_F64, &SH(3));
	l = node1(g, IR_OP_REDUCE_SUM, &all1, node1(g, IR_OP_SIN, NULL, x));
	struct ir_value *wrt[2] = { x, u };
	grads[0] = NULL;
	grads[1] = (struct ir_value *)1;
	rc = l ? grad_build(g, l, 2, wrt, grads) : -1000;
	TAP_OK(rc == 0 && grads[0] && grads[1] == NULL,
	       "input not reaching the loss: its gradient NULL, the other's set (got %d%s%s)", rc,
	       rc ? ": " : "", rc ? ir_error() : "");
	ir_graph_free(g);

	/* both: an integer path and a float path from x; the gradient is the
	 * float path's alone (argmax is locally constant, so the differences
	 * agree) */
	struct gc c;
	gc_begin(&c, "argmax path plus float path: sum(f64(argmax(x))) + sum(x * W)");
	x = gc_in(&c, "x", SH(3, 4), SEP(0.1, 0));
	struct ir_value *a = reduce_all(&c, IR_OP_REDUCE_SUM,
					op1(&c, IR_OP_CONVERT, &to64, op1(&c, IR_OP_ARGMAX, &axis1, x)));
	gc_finish(&c, op2(&c, IR_OP_ADD, NULL, a, weighted_sum(&c, op1(&c, IR_OP_COS, NULL, x))));
}

/* wrt values that are not graph inputs: a parameter (initializer), an
 * intermediate value, and one value listed twice. L = sum(exp(p) * x):
 * dL/dp = exp(p) * x, dL/de = x for e = exp(p), dL/dx = exp(p). */
static void test_wrt_kinds(void)
{
	static const double pv[3] = { -0.5, 0.25, 1.0 }, xv[3] = { 0.75, -1.5, 0.5 };
	struct ir_attrs all = { .axes = IR_ILIST(0) };
	struct ir_graph *g = ir_graph_new();
	struct ir_data pd = { .bytes = pv, .nbytes = sizeof pv };
	struct ir_value *p = ir_graph_add_param(g, "p", IR_F64, &SH(3), &pd);
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F64, &SH(3));
	struct ir_value *e = node1(g, IR_OP_EXP, NULL, p), *l = NULL;
	if (e) {
		struct ir_value *ab[2] = { e, x };
		struct ir_node *mn = ir_graph_add_node(g, IR_OP_MUL, NULL, 2, ab, &no_attrs);
		l = mn ? node1(g, IR_OP_REDUCE_SUM, &all, mn->out[0]) : NULL;
	}
	struct ir_value *wrt[4] = { p, e, x, x }, *grads[4] = { 0 };
	int rc = l ? grad_build(g, l, 4, wrt, grads) : -1000;
	bool ok = rc == 0;
	for (int i = 0; ok && i < 4; i++)
		ok = grads[i] && grads[i]->dtype == IR_F64 && ir_shape_eq(&grads[i]->shape, &SH(3));
	struct ir_tensor in = { IR_F64, SH(3), (void *)xv }, out[4] = { { 0 } };
	for (int i = 0; ok && i < 4; i++)
		ir_graph_add_output(g, grads[i], NULL);
	ok = ok && interp_run(g, &in, out) == 0;
	for (int k = 0; ok && k < 3; k++) {
		double want[4] = { exp(pv[k]) * xv[k], xv[k], exp(pv[k]), exp(pv[k]) };
		for (int i = 0; i < 4; i++) {
			double got = ((double *)out[i].data)[k];
			if (!(fabs(got - want[i]) <= 1e-12 * fmax(1, fabs(want[i])))) {
				TAP_DIAG("wrt %d element %d: got %.17g want %.17g", i, k, got, want[i]);
				ok = false;
			}
		}
	}
	for (int i = 0; i < 4; i++)
		if (out[i].data)
			ir_tensor_free(&out[i]);
	TAP_OK(ok, "wrt a parameter, an intermediate value and one input twice (got %d%s%s)", rc,
	       rc ? ": " : "", rc ? ir_error() : "");
	ir_graph_free(g);
}

/* grad_build in f32: gradients come back as f32 of the input's shape. */
static void test_f32(void)
{
	static const float xv[5] = { -1.0f, -0.25f, 0.0f, 0.5f, 1.25f };
	static const float wv[5] = { 0.5f, -1.0f, 0.75f, 0.25f, -0.5f };
	struct ir_graph *g = ir_graph_new();
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &SH(5));
	struct ir_attrs ca = { .dtype = IR_F32, .shape = SH(5), .data = wv };
	struct ir_node *wn = ir_graph_add_node(g, IR_OP_CONSTANT, NULL, 0, &x, &ca);
	struct ir_value *e = node1(g, IR_OP_EXP, NULL, x), *l = NULL, *grad = NULL;
	struct ir_attrs all = { .axes = IR_ILIST(0) };
	if (e && wn) {
		struct ir_value *ab[2] = { e, wn->out[0] };
		struct ir_node *mn = ir_graph_add_node(g, IR_OP_MUL, NULL, 2, ab, &no_attrs);
		l = mn ? node1(g, IR_OP_REDUCE_SUM, &all, mn->out[0]) : NULL;
	}
	int rc = l ? grad_build(g, l, 1, &x, &grad) : -1000;
	bool ok = rc == 0 && grad && grad->dtype == IR_F32 && ir_shape_eq(&grad->shape, &x->shape);
	if (ok) {
		struct ir_tensor in = { IR_F32, SH(5), (void *)xv }, out = { 0 };
		ir_graph_add_output(g, grad, NULL);
		ok = interp_run(g, &in, &out) == 0;
		for (int i = 0; ok && i < 5; i++) {
			double want = exp((double)xv[i]) * wv[i], got = ((float *)out.data)[i];
			if (!(fabs(got - want) <= 1e-6 * fmax(1, fabs(want)))) {
				TAP_DIAG("element %d: got %.9g want %.9g", i, got, want);
				ok = false;
			}
		}
		if (out.data)
			ir_tensor_free(&out);
	}
	TAP_OK(ok, "f32 graph: d/dx of sum(exp(x) * w) is f32[5] = exp(x) * w (got %d%s%s)", rc,
	       rc ? ": " : "", rc ? ir_error() : "");
	ir_graph_free(g);
}

int main(void)
{
	test_unary();
	test_unary_zero();
	test_convert();
	test_binary();
	test_rem();
	test_select();
	test_dot();
	test_conv();
	test_reduce();
	test_window();
	test_cumsum();
	test_move();
	test_gather_scatter();
	test_composites();
	test_accumulate();
	test_mlp();
	test_errors();
	test_null_grads();
	test_wrt_kinds();
	test_f32();
	return tap_done();
}
