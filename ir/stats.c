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

double ir_node_flops(const struct ir_node *n)
{
	switch (n->op) {
	case IR_OP_DOT: {
		double k = 1;
		for (int i = 0; i < n->a.lhs_contract.n; i++)
			k *= (double)n->in[0]->shape.dims[n->a.lhs_contract.v[i]];
		return 2.0 * numel(n->out[0]) * k;
	}
	case IR_OP_CONV: {
		/* each output element: C/groups * prod(kernel) multiply-adds */
		const struct ir_shape *w = &n->in[1]->shape;
		double per = 1;
		for (int i = 1; i < w->rank; i++)
			per *= (double)w->dims[i];
		return 2.0 * numel(n->out[0]) * per;
	}
	case IR_OP_NEG:
	case IR_OP_ABS:
	case IR_OP_SIGN:
	case IR_OP_EXP:
	case IR_OP_LOG:
	case IR_OP_SQRT:
	case IR_OP_RSQRT:
	case IR_OP_RECIP:
	case IR_OP_TANH:
	case IR_OP_ERF:
	case IR_OP_SIGMOID:
	case IR_OP_RELU:
	case IR_OP_SIN:
	case IR_OP_COS:
	case IR_OP_TAN:
	case IR_OP_ASIN:
	case IR_OP_ACOS:
	case IR_OP_ATAN:
	case IR_OP_SINH:
	case IR_OP_COSH:
	case IR_OP_ASINH:
	case IR_OP_ACOSH:
	case IR_OP_ATANH:
	case IR_OP_FLOOR:
	case IR_OP_CEIL:
	case IR_OP_ROUND:
	case IR_OP_NOT:
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_ADD:
	case IR_OP_SUB:
	case IR_OP_MUL:
	case IR_OP_DIV:
	case IR_OP_REM:
	case IR_OP_POW:
	case IR_OP_MAX:
	case IR_OP_MIN:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
	case IR_OP_SELECT:
	case IR_OP_CUMSUM:
		return numel(n->out[0]);
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
		return numel(n->in[0]);
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM: {
		double w = 1;
		for (int i = 0; i < n->a.window.n; i++)
			w *= (double)n->a.window.v[i];
		return numel(n->out[0]) * w;
	}
	case IR_OP_SOFTMAX:
		return 5.0 * numel(n->in[0]); /* max, sub, exp, sum, div */
	case IR_OP_LAYER_NORM:
		return 8.0 * numel(n->in[0]); /* mean, var (3), normalize (2), scale, bias */
	case IR_OP_TOPK:
		return numel(n->in[0]) * (double)(n->a.k > 1 ? n->a.k : 1);
	case IR_OP_CONVERT:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
		return 0;
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"bad op");
}
