/*
 * cost_saved.c: what a training step's backward pass reads from its
 * forward pass, the activation memory that both the report (manual plans)
 * and the intra-op pass (automatic plans) charge.
 *
 * An op's gradient reads some of its operands or results (a dot the other
 * operand, softmax its output, layer norm its input, a sum nothing). A
 * value read that way is kept from the forward pass to the backward, unless
 * a fusing backend would recompute it: the result of a cheap elementwise op
 * whose own dynamic inputs are no larger is recomputed from them, so they
 * are kept instead (the GeLU chain behind a dot keeps the dot's output
 * only; "no larger" allows a sixteenth more for broadcast statistics).
 * Views (a broadcast statistic, a reshape) are redone from what they view,
 * so keeping one costs its source: batch normalization keeps its input, not
 * the centred copy. Constants are recomputed, and parameters and what is
 * computed from them alone (a transposed weight) are training state, the
 * same in every micro-batch: none of them counts as an activation.
 */
#include "compiler/compiler.h"

int cost_grad_reads(const struct ir_node *n, unsigned gmask, const struct ir_value *out[4])
{
	bool g0 = gmask & 1u, g1 = gmask & 2u, g2 = gmask & 4u;
	int k = 0;
	switch ((enum ir_op)n->op) {
	case IR_OP_EXP:
	case IR_OP_TANH:
	case IR_OP_SIGMOID:
	case IR_OP_SQRT:
	case IR_OP_RSQRT:
	case IR_OP_RECIP:
	case IR_OP_RELU:
		if (g0)
			out[k++] = n->out[0];
		break;
	case IR_OP_LOG:
	case IR_OP_ERF:
	case IR_OP_ABS:
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
		if (g0)
			out[k++] = n->in[0];
		break;
	case IR_OP_NEG:
	case IR_OP_SIGN:
	case IR_OP_FLOOR:
	case IR_OP_CEIL:
	case IR_OP_ROUND:
	case IR_OP_NOT:
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_CONVERT:
	case IR_OP_ADD:
	case IR_OP_SUB:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
		break;
	case IR_OP_MUL:
	case IR_OP_DOT:
	case IR_OP_CONV:
		if (g1)
			out[k++] = n->in[0];
		if (g0)
			out[k++] = n->in[1];
		break;
	case IR_OP_DIV:
		if (g0 || g1)
			out[k++] = n->in[1];
		if (g1)
			out[k++] = n->in[0];
		break;
	case IR_OP_REM:
	case IR_OP_POW:
	case IR_OP_MAX:
	case IR_OP_MIN:
		if (g0 || g1) {
			out[k++] = n->in[0];
			out[k++] = n->in[1];
		}
		break;
	case IR_OP_SELECT:
		if (g1 || g2)
			out[k++] = n->in[0];
		break;
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_WINDOW_MAX:
		if (g0) {
			out[k++] = n->in[0];
			out[k++] = n->out[0];
		}
		break;
	case IR_OP_REDUCE_SUM:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_WINDOW_SUM:
	case IR_OP_CUMSUM:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
		break;
	case IR_OP_GATHER:
		if (g0)
			out[k++] = n->in[1];
		break;
	case IR_OP_SCATTER:
		if (g0 || g2)
			out[k++] = n->in[1];
		break;
	case IR_OP_TOPK:
		if (g0)
			out[k++] = n->out[1];
		break;
	case IR_OP_SOFTMAX:
		if (g0)
			out[k++] = n->out[0];
		break;
	case IR_OP_LAYER_NORM:
		if (g0 || g1)
			out[k++] = n->in[0];
		break;
	case IR_OP_COUNT:
		IR_ASSERT(!"op out of range");
		break;
	}
	return k;
}

static bool *depends(const struct ir_graph *g, bool params)
{
	bool *dyn = ir_calloc((size_t)ir_graph_nvalues(g) + 1, sizeof *dyn);
	if (!dyn)
		return NULL;
	for (int i = 0; i < ir_graph_ninputs(g); i++)
		dyn[ir_graph_input(g, i)->id] = true;
	for (int i = 0; params && i < ir_graph_nparams(g); i++)
		dyn[ir_graph_param(g, i)->id] = true;
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		bool d = false;
		for (int k = 0; k < n->nin; k++)
			d |= dyn[n->in[k]->id];
		for (int k = 0; k < n->nout; k++)
			dyn[n->out[k]->id] = d;
	}
	return dyn;
}

bool *cost_dynamic_values(const struct ir_graph *g)
{
	return depends(g, true);
}

bool *cost_activation_values(const struct ir_graph *g)
{
	return depends(g, false);
}

static bool is_view(const struct ir_value *v)
{
	return v->kind == IR_VAL_NODE && cost_op_class(v->def->op) == COST_CLASS_FREE;
}

/* Bytes that keeping v costs: a view (a broadcast statistic, a reshape)
 * costs what it views. */
static double kept_size(const struct cost_keep *c, const struct ir_value *v, int depth)
{
	if (!c->dyn[v->id] || v->kind == IR_VAL_PARAM)
		return 0;
	if (!is_view(v) || depth >= 16)
		return c->bytes(v, c->arg);
	double b = 0;
	for (int k = 0; k < v->def->nin; k++)
		b += kept_size(c, v->def->in[k], depth + 1);
	return b;
}

static int keep_value(const struct cost_keep *c, const struct ir_value *v, int depth)
{
	if (!c->dyn[v->id] || v->kind == IR_VAL_PARAM)
		return 0;
	const struct ir_node *d = v->kind == IR_VAL_NODE ? v->def : NULL;
	if (d && depth < 16 && is_view(v)) { /* views are free to redo: keep what they view */
		for (int k = 0; k < d->nin; k++) {
			int rc = keep_value(c, d->in[k], depth + 1);
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	if (d && depth < 16 && cost_op_class(d->op) == COST_CLASS_ELEMENTWISE) {
		double in = 0, self = c->bytes(v, c->arg);
		for (int k = 0; k < d->nin; k++)
			in += kept_size(c, d->in[k], 0);
		if (in <= self * (1 + 1.0 / 16)) { /* no larger, give or take a statistic */
			for (int k = 0; k < d->nin; k++) {
				int rc = keep_value(c, d->in[k], depth + 1);
				if (rc < 0)
					return rc;
			}
			return 0;
		}
	}
	return c->keep(v, c->arg);
}

int cost_backward_keeps(const struct cost_keep *c, const struct ir_node *n, unsigned gmask)
{
	const struct ir_value *r[4];
	int k = cost_grad_reads(n, gmask, r);
	for (int i = 0; i < k; i++) {
		int rc = keep_value(c, r[i], 0);
		if (rc < 0)
			return rc;
	}
	return 0;
}
