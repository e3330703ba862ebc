/*
 * test_onnx_pow.c: ONNX Pow by a constant small integer, -1 or 0.5
 * imported as multiplies, a reciprocal or a square root (h_pow in
 * compiler/frontend/onnx_ops.c), so that no kernel calls libm's pow.
 *
 * Each case is a one-node f32 model Pow(x, e) with e a Constant node (as
 * the TorchScript exporter writes gelu's x^3), an integer initializer,
 * a float initializer (a parameter, which --trainable may train: it stays
 * a pow) or an exponent that is no such constant. Checked: whether the
 * imported graph holds a pow node, and the interpreter's values on x
 * (random in [-3, 3), with 0, -0, 1, -1, +inf and NaN among them) against
 * C's pow in double rounded to f32: within 2 ulp (x*x*x rounds twice),
 * NaN exactly where pow gives NaN. The gradients through the rewritten
 * forms are test_grad_onnx's.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <math.h>

#include "onnx_builder.h"
#include "rng.h"

#define N 64

/* How e reaches the Pow. */
enum src { CONST_NODE, INT_INIT, FLOAT_INIT };

/* A Constant node named "e" whose value is the f32 tensor v (dims). */
static void const_node(struct mb *b, const char *dims, int n, const float *v)
{
	Onnx__NodeProto *k = mb_node(b, "Constant", "e_const", "", "e");
	Onnx__TensorProto *t = mb_alloc(b, sizeof *t);
	*t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
	t->has_data_type = 1;
	t->data_type = T_FLOAT;
	if (*dims) {
		t->n_dims = 1;
		t->dims = mb_alloc(b, sizeof *t->dims);
		t->dims[0] = n;
	}
	mb_raw(b, t, (size_t)n * sizeof *v);
	memcpy(t->raw_data.data, v, (size_t)n * sizeof *v);
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = mb_str(b, "value");
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	a->t = t;
	PUSH(b, k->attribute, k->n_attribute, a);
}

static int count_pow(const struct ir_graph *g)
{
	int k = 0;
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		k += ir_graph_node(g, i)->op == IR_OP_POW;
	return k;
}

static int64_t ord(float f)
{
	int32_t i;
	memcpy(&i, &f, sizeof i);
	return i < 0 ? -(int64_t)(i & 0x7fffffff) : i;
}

/* The model y = Pow(x[xn], e) with e's ne values from src; the graph's pow
 * count must be want_pow, y[i] within 2 ulp of pow(x[i mod xn], e[i mod
 * ne]). */
static void check(const char *what, enum src src, int xn, int ne, const float *e, int want_pow)
{
	char xdims[16], edims[16], ydims[16];
	int yn = xn > ne ? xn : ne;
	snprintf(xdims, sizeof xdims, xn > 1 ? "%d" : "", xn);
	snprintf(edims, sizeof edims, ne > 1 ? "%d" : "", ne);
	snprintf(ydims, sizeof ydims, yn > 1 ? "%d" : "", yn);
	struct mb *b = mb_new(17);
	mb_input(b, "x", T_FLOAT, xdims);
	if (src == CONST_NODE) {
		const_node(b, edims, ne, e);
	} else if (src == INT_INIT) {
		int64_t v[N];
		for (int i = 0; i < ne; i++)
			v[i] = (int64_t)e[i];
		mb_init_raw(b, "e", T_INT64, edims, v, (size_t)ne * sizeof *v);
	} else {
		mb_init_raw(b, "e", T_FLOAT, edims, e, (size_t)ne * sizeof *e);
	}
	mb_node(b, "Pow", "pow", "x,e", "y");
	mb_output(b, "y", T_FLOAT, ydims);
	ir_error_clear();
	struct ir_graph *g = onnx_import(mb_write(b, "pow.onnx"), NULL, NULL);
	mb_free(b);
	if (!g) {
		TAP_OK(0, "%s: imports (%s)", what, ir_error());
		return;
	}
	int npow = count_pow(g);
	TAP_OK(npow == want_pow, "%s: %s (%d pow nodes)", what, want_pow ? "stays a pow" : "no pow node", npow);
	struct ir_tensor x, y = { 0 };
	const struct ir_value *xv = ir_graph_input(g, 0);
	ir_tensor_alloc(&x, IR_F32, &xv->shape);
	static const float odd[] = { 0.0f, -0.0f, 1.0f, -1.0f, INFINITY, NAN };
	float *xs = x.data;
	for (int i = 0; i < xn; i++)
		xs[i] = i < 6 && xn > 6 ? odd[i] : (float)(6 * urand() - 3);
	int rc = interp_run(g, &x, &y);
	bool ok = rc == 0 && ir_shape_numel(&y.shape) == yn;
	char why[160] = "";
	for (int i = 0; ok && i < yn; i++) {
		float got = ((float *)y.data)[i], xi = xs[i % xn];
		float want = (float)pow((double)xi, (double)e[i % ne]);
		bool same = isnan(want) ? isnan(got) : got == want || llabs(ord(got) - ord(want)) <= 2;
		if (!same) {
			snprintf(why, sizeof why, ": x = %.9g: %.9g, pow %.9g", (double)xi, (double)got, (double)want);
			ok = false;
		}
	}
	TAP_OK(ok, "%s: the interpreter's values within 2 ulp of pow's%s%s", what, rc ? ir_error() : "", why);
	ir_tensor_free(&x);
	if (rc == 0)
		ir_tensor_free(&y);
	ir_graph_free(g);
}

int main(void)
{
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	static const float rewritten[] = { 2, 3, 4, -1, 0.5f, 1 };
	for (size_t i = 0; i < sizeof rewritten / sizeof *rewritten; i++) {
		char what[64];
		snprintf(what, sizeof what, "x^%g, a Constant exponent", (double)rewritten[i]);
		check(what, CONST_NODE, N, 1, &rewritten[i], 0);
	}
	const float three = 3, three4[4] = { 3, 3, 3, 3 }, mixed[2] = { 2, 3 }, frac = 2.5f;
	check("x^3, an int64 initializer exponent", INT_INIT, N, 1, &three, 0);
	check("scalar x to the [4] constant 3s: x broadcast", CONST_NODE, 1, 4, three4, 0);
	check("x^2.5", CONST_NODE, N, 1, &frac, 1);
	check("x[2] to the constant [2, 3]", CONST_NODE, 2, 2, mixed, 1);
	check("x^3, a float initializer exponent (a parameter)", FLOAT_INIT, N, 1, &three, 1);
	tmpdir_remove(tmpdir);
	return tap_done();
}
