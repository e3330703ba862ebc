/*
 * stats.c: operation counts used by `pcc inspect` and, later, the cost
 * model. A multiply-add counts as 2 FLOPs (the convention of the Megatron-LM
 * and PaLM papers); elementwise ops and reductions count 1 per element
 * touched; data movement counts 0.
 */
#include "ir/ir.h"

static double numel(const struct ir_value *v)
{
	return (double)ir_shape_numel(&v->shape);
}

/* ---- the FLOPs of each form (the form column of ops.h) ---------------- */

static double flops_out(const struct ir_node *n)
{
	return numel(n->out[0]);
}

static double flops_in(const struct ir_node *n)
{
	return numel(n->in[0]);
}

static double flops_zero(const struct ir_node *n)
{
	return 0;
}

static double flops_dot(const struct ir_node *n)
{
	double k = 1;
	for (int i = 0; i < n->a.lhs_contract.n; i++)
		k *= (double)n->in[0]->shape.dims[n->a.lhs_contract.v[i]];
	return 2.0 * numel(n->out[0]) * k;
}

/* each output element: C/groups * prod(kernel) multiply-adds */
static double flops_conv(const struct ir_node *n)
{
	const struct ir_shape *w = &n->in[1]->shape;
	double per = 1;
	for (int i = 1; i < w->rank; i++)
		per *= (double)w->dims[i];
	return 2.0 * numel(n->out[0]) * per;
}

static double flops_window(const struct ir_node *n)
{
	double w = 1;
	for (int i = 0; i < n->a.window.n; i++)
		w *= (double)n->a.window.v[i];
	return numel(n->out[0]) * w;
}

static double flops_softmax(const struct ir_node *n)
{
	return 5.0 * numel(n->in[0]); /* max, sub, exp, sum, div */
}

static double flops_layer_norm(const struct ir_node *n)
{
	return 8.0 * numel(n->in[0]); /* mean, var (3), normalize (2), scale, bias */
}

static double flops_topk(const struct ir_node *n)
{
	return numel(n->in[0]) * (double)(n->a.k > 1 ? n->a.k : 1);
}

/* elementwise ops and scans: one per result element; reductions: one per
 * element reduced; conversions and data movement: none */
#define flops_unary flops_out
#define flops_binary flops_out
#define flops_select flops_out
#define flops_cumsum flops_out
#define flops_reduce flops_in
#define flops_arg flops_in
#define flops_convert flops_zero
#define flops_reshape flops_zero
#define flops_transpose flops_zero
#define flops_broadcast flops_zero
#define flops_slice flops_zero
#define flops_concat flops_zero
#define flops_pad flops_zero
#define flops_reverse flops_zero
#define flops_gather flops_zero
#define flops_scatter flops_zero
#define flops_iota flops_zero
#define flops_constant flops_zero

static double (*const flops[IR_OP_COUNT])(const struct ir_node *n) = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = flops_##form,
	IR_OPS(X)
#undef X
};

double ir_node_flops(const struct ir_node *n)
{
	IR_ASSERT((unsigned)n->op < IR_OP_COUNT);
	return flops[n->op](n);
}
