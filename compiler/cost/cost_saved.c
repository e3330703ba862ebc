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
#include "compiler/cost/cost.h"
#include "ir/ir.h"

/* ---- what each op's gradient reads (the saved column of ops.h) ---------
 * g0, g1, g2: whether the gradient of operand 0, 1, 2 is wanted. */

#define READS(name) \
	static int reads_##name(const struct ir_node *n, bool g0, bool g1, bool g2, const struct ir_value *out[4])

READS(none)
{
	return 0;
}

READS(out)
{
	int k = 0;
	if (g0)
		out[k++] = n->out[0];
	return k;
}

READS(in)
{
	int k = 0;
	if (g0)
		out[k++] = n->in[0];
	return k;
}

READS(crossed) /* each operand's gradient reads the other operand */
{
	int k = 0;
	if (g1)
		out[k++] = n->in[0];
	if (g0)
		out[k++] = n->in[1];
	return k;
}

READS(div)
{
	int k = 0;
	if (g0 || g1)
		out[k++] = n->in[1];
	if (g1)
		out[k++] = n->in[0];
	return k;
}

READS(both)
{
	int k = 0;
	if (g0 || g1) {
		out[k++] = n->in[0];
		out[k++] = n->in[1];
	}
	return k;
}

READS(select)
{
	int k = 0;
	if (g1 || g2)
		out[k++] = n->in[0];
	return k;
}

READS(extremum) /* where the operand equals the result */
{
	int k = 0;
	if (g0) {
		out[k++] = n->in[0];
		out[k++] = n->out[0];
	}
	return k;
}

READS(gather)
{
	int k = 0;
	if (g0)
		out[k++] = n->in[1];
	return k;
}

READS(scatter)
{
	int k = 0;
	if (g0 || g2)
		out[k++] = n->in[1];
	return k;
}

READS(topk)
{
	int k = 0;
	if (g0)
		out[k++] = n->out[1];
	return k;
}

READS(layer_norm)
{
	int k = 0;
	if (g0 || g1)
		out[k++] = n->in[0];
	return k;
}

#undef READS

static int (*const reads[IR_OP_COUNT])(const struct ir_node *n, bool g0, bool g1, bool g2,
				       const struct ir_value *out[4]) = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = reads_##saved,
	IR_OPS(X)
#undef X
};

int cost_grad_reads(const struct ir_node *n, unsigned gmask, const struct ir_value *out[4])
{
	IR_ASSERT((unsigned)n->op < IR_OP_COUNT);
	return reads[n->op](n, gmask & 1u, gmask & 2u, gmask & 4u, out);
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

bool *cost_grad_values(const struct ir_graph *g)
{
	bool *grad = ir_calloc((size_t)ir_graph_nvalues(g) + 1, sizeof *grad);
	if (!grad)
		return NULL;
	for (int i = 0; i < ir_graph_nparams(g); i++) {
		const struct ir_value *p = ir_graph_param(g, i);
		grad[p->id] = ir_dtype_is_float(p->dtype);
	}
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		bool any = false;
		for (int j = 0; j < n->nin; j++)
			any |= grad[n->in[j]->id];
		for (int k = 0; k < n->nout; k++)
			grad[n->out[k]->id] = any && ir_dtype_is_float(n->out[k]->dtype);
	}
	return grad;
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
