/*
 * onnx_ops_ms.c: the com.microsoft ops ONNX Runtime's graph optimizer
 * writes into the models it saves (FusedMatMul, FusedGemm, Gelu, BiasGelu,
 * FastGelu, SkipLayerNormalization) -> core ops, as their definitions in
 * onnxruntime's docs/ContribOperators.md state them:
 *
 *   FusedMatMul(A, B)        alpha * MatMul(A', B'), ' a swap of the last
 *                            two dims where transA / transB (transBatchA/B,
 *                            which move batch dims, are refused)
 *   FusedGemm(A, B, C)       Gemm, then its activation: Relu, LeakyRelu
 *                            (activation_alpha, 0.01), Tanh, Sigmoid,
 *                            HardSigmoid (activation_alpha 0.2,
 *                            activation_beta 0.5)
 *   Gelu(X)                  X/2 (1 + erf(X / sqrt 2))
 *   BiasGelu(A, B)           Gelu(A + B)
 *   FastGelu(X, bias)        x/2 (1 + tanh(x (sqrt(2/pi) + 0.044715 sqrt(2/pi) x^2))), x = X + bias
 *   SkipLayerNormalization   s = input + skip (+ bias); output = LayerNorm(s)
 *     (input, skip, gamma,   over the last axis with gamma, beta and the
 *      beta, bias)           required epsilon; outputs 0 and 3 (s); the mean
 *                            and inv_std_var outputs (for training) are
 *                            refused
 *
 * The importer looks these up only for nodes of domain "com.microsoft";
 * any other op of that domain is refused naming the domain.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/frontend/onnx_internal.h"

static struct ir_value *scalar_of(struct onnx_ctx *c, struct ir_value *x, double v)
{
	return x ? b_scalar(c, x->dtype, v) : NULL;
}

static int float_input(struct onnx_ctx *c, const struct ir_value *x)
{
	if (ir_dtype_is_float(x->dtype))
		return 0;
	return onnx_fail(c, "needs a floating-point input, got %s", ir_dtype_name(x->dtype));
}

/* x/2 (1 + erf(x / sqrt 2)) */
static struct ir_value *gelu(struct onnx_ctx *c, struct ir_value *x)
{
	struct ir_value *t = b_unary(c, IR_OP_ERF, b_binary(c, IR_OP_MUL, x, scalar_of(c, x, M_SQRT1_2)));
	return b_binary(c, IR_OP_MUL, b_binary(c, IR_OP_MUL, x, scalar_of(c, x, 0.5)),
			b_binary(c, IR_OP_ADD, scalar_of(c, x, 1), t));
}

/* A with its last two dims swapped (a vector as it is). */
static struct ir_value *swap_last(struct onnx_ctx *c, struct ir_value *a)
{
	int r = a->shape.rank;
	if (r < 2)
		return a;
	int64_t perm[IR_MAX_RANK];
	for (int i = 0; i < r; i++)
		perm[i] = i;
	perm[r - 2] = r - 1;
	perm[r - 1] = r - 2;
	return b_transpose(c, a, perm);
}

static int h_fused_matmul(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	if (attr_int(c, "transBatchA", 0) || attr_int(c, "transBatchB", 0))
		return onnx_unsupported(c, "transBatchA and transBatchB are not supported");
	NEED(0);
	NEED(1);
	if (float_input(c, in[0]) < 0)
		return -EINVAL;
	struct ir_value *ops[2] = { attr_int(c, "transA", 0) ? swap_last(c, in[0]) : in[0],
				    attr_int(c, "transB", 0) ? swap_last(c, in[1]) : in[1] };
	struct ir_value *y[1] = { 0 };
	if (!ops[0] || !ops[1] || onnx_matmul(c, ops, 2, y, 1) < 0)
		return -EINVAL;
	double alpha = attr_float(c, "alpha", 1.0);
	return OUT1(alpha == 1.0 ? y[0] : b_binary(c, IR_OP_MUL, y[0], scalar_of(c, y[0], alpha)));
}

static int h_fused_gemm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	char buf[32];
	const char *act = attr_string(c, "activation", "", buf, sizeof buf);
	int rc = onnx_gemm(c, in, nin, out, nout);
	struct ir_value *x = out[0];
	if (rc < 0)
		return rc;
	if (!act[0])
		return 0;
	if (!strcmp(act, "Relu"))
		x = b_unary(c, IR_OP_RELU, x);
	else if (!strcmp(act, "Tanh"))
		x = b_unary(c, IR_OP_TANH, x);
	else if (!strcmp(act, "Sigmoid"))
		x = b_unary(c, IR_OP_SIGMOID, x);
	else if (!strcmp(act, "LeakyRelu"))
		x = b_select(c, b_binary(c, IR_OP_GE, x, scalar_of(c, x, 0)), x,
			     b_binary(c, IR_OP_MUL, x, scalar_of(c, x, attr_float(c, "activation_alpha", 0.01))));
	else if (!strcmp(act, "HardSigmoid")) {
		x = b_binary(c, IR_OP_ADD,
			     b_binary(c, IR_OP_MUL, x, scalar_of(c, x, attr_float(c, "activation_alpha", 0.2))),
			     scalar_of(c, x, attr_float(c, "activation_beta", 0.5)));
		x = b_binary(c, IR_OP_MIN, b_binary(c, IR_OP_MAX, x, scalar_of(c, x, 0)), scalar_of(c, x, 1));
	} else
		return onnx_unsupported(
			c, "activation '%s' is not supported (Relu, LeakyRelu, Tanh, Sigmoid, HardSigmoid)", act);
	return OUT1(x);
}

static int h_gelu(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	if (float_input(c, in[0]) < 0)
		return -EINVAL;
	return OUT1(gelu(c, in[0]));
}

static int h_bias_gelu(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	if (float_input(c, in[0]) < 0)
		return -EINVAL;
	return OUT1(gelu(c, b_binary(c, IR_OP_ADD, in[0], in[1])));
}

static int h_fast_gelu(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	if (float_input(c, x) < 0)
		return -EINVAL;
	if (nin > 1 && in[1])
		x = b_binary(c, IR_OP_ADD, x, in[1]);
	double a = sqrt(2 / M_PI), g = 0.044715 * sqrt(2 / M_PI);
	struct ir_value *inner = b_binary(c, IR_OP_ADD, scalar_of(c, x, a),
					  b_binary(c, IR_OP_MUL, scalar_of(c, x, g), b_binary(c, IR_OP_MUL, x, x)));
	struct ir_value *t = b_unary(c, IR_OP_TANH, b_binary(c, IR_OP_MUL, x, inner));
	return OUT1(b_binary(c, IR_OP_MUL, b_binary(c, IR_OP_MUL, x, scalar_of(c, x, 0.5)),
			     b_binary(c, IR_OP_ADD, scalar_of(c, x, 1), t)));
}

static int h_skip_layernorm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	if (float_input(c, in[0]) < 0)
		return -EINVAL;
	if (!attr_find(c, "epsilon"))
		return onnx_fail(c, "attribute 'epsilon' is required");
	struct ir_value *s = b_binary(c, IR_OP_ADD, in[0], in[1]);
	if (nin > 4 && in[4])
		s = b_binary(c, IR_OP_ADD, s, in[4]);
	if (!s)
		return -EINVAL;
	struct ir_value *ops[3] = { s, in[2], nin > 3 ? in[3] : NULL };
	int rc = onnx_layernorm(c, ops, 3, out, 1);
	if (rc < 0)
		return rc;
	/* outputs 1 and 2 (mean, inv_std_var) stay unset: the importer
	 * refuses them by name when the node has them */
	if (nout > 3)
		out[3] = s;
	return 0;
}

const struct onnx_op_def onnx_ops_ms[] = {
	{ "FusedMatMul", h_fused_matmul, "alpha transA transB transBatchA transBatchB" },
	{ "FusedGemm", h_fused_gemm,
	  "activation activation_alpha activation_beta activation_gamma alpha beta transA transB" },
	{ "Gelu", h_gelu, "" },
	{ "BiasGelu", h_bias_gelu, "" },
	{ "FastGelu", h_fast_gelu, "" },
	{ "SkipLayerNormalization", h_skip_layernorm, "epsilon" },
};
const int onnx_ops_ms_count = sizeof onnx_ops_ms / sizeof onnx_ops_ms[0];
