/*
 * test_grad_graph.c: reverse-mode autodiff (grad_build, compiler/train/grad*.c)
 * over graphs of several ops, and its contract.
 *
 * Against central finite differences (grad_check.h): gradient
 * accumulation over several consumers and repeated operands, an input
 * reaching the loss along paths of different lengths, a loss that is an
 * input itself, and a 2-layer MLP with layer_norm and a softmax
 * cross-entropy made of core ops. The contract, against expected codes and
 * hand-derived values: non-scalar or integer loss, integer wrt, an op
 * without a gradient rule on the path (and one off it), integer paths that
 * carry no gradient, inputs that do not reach the loss, wrt a parameter,
 * an intermediate value or one input twice, and an f32 graph.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "grad_check.h"

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
	struct ir_value *lse = op1(&c, IR_OP_LOG, NULL, op1(&c, IR_OP_REDUCE_SUM, &rows, op1(&c, IR_OP_EXP, NULL, zs)));
	struct ir_value *logp = op2(&c, IR_OP_SUB, NULL, zs, bcast(&c, lse, SH(4, 5), IR_ILIST(0)));
	struct ir_value *nll = op1(&c, IR_OP_NEG, NULL,
				   reduce_all(&c, IR_OP_REDUCE_SUM,
					      op2(&c, IR_OP_MUL, NULL, logp, cst(&c, IR_F64, SH(4, 5), onehot))));
	gc_finish(&c, op2(&c, IR_OP_MUL, NULL, nll, cst(&c, IR_F64, SCALAR, &quarter)));
}

/* ---- contract: errors and NULL gradients ----------------------------------- */

static struct ir_value *node1(struct ir_graph *g, enum ir_op op, const struct ir_attrs *a, struct ir_value *x)
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
		       "scatter max on the path from %s: -ENOTSUP naming scatter and %s (got %d: %s)", names[which],
		       names[which], rc, msg);
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
	TAP_OK(rc == 0 && grads[0] == NULL, "argmax -> convert -> loss: d/dx NULL, no error (got %d%s%s)", rc,
	       rc ? ": " : "", rc ? ir_error() : "");
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
	       "input not reaching the loss: its gradient NULL, the other's set (got %d%s%s)", rc, rc ? ": " : "",
	       rc ? ir_error() : "");
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
	TAP_OK(ok, "wrt a parameter, an intermediate value and one input twice (got %d%s%s)", rc, rc ? ": " : "",
	       rc ? ir_error() : "");
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
	TAP_OK(ok, "f32 graph: d/dx of sum(exp(x) * w) is f32[5] = exp(x) * w (got %d%s%s)", rc, rc ? ": " : "",
	       rc ? ir_error() : "");
	ir_graph_free(g);
}

int main(void)
{
	test_accumulate();
	test_mlp();
	test_errors();
	test_null_grads();
	test_wrt_kinds();
	test_f32();
	return tap_done();
}
