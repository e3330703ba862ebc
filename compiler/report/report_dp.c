/*
 * report_dp.c: what data parallelism adds to a manual plan's micro-batch
 * besides the once-per-step gradient reduction: statistics over the batch
 * that the model feeds back into the batch (batch normalization's mean and
 * variance in training). A replica holds 1/dp of the batch, so computing
 * what one device computes (pcc's plans do, as PyTorch's SyncBatchNorm
 * does, and as the automatic planner costs it) all-reduces each such
 * statistic over the dp replicas in the forward pass, and its gradient in
 * the backward pass where the reduced value has one.
 *
 * Which values carry the batch needs no per-op rules: the model is
 * imported at two batch sizes, and a value carries the batch where its
 * shape differs between the two. A reduction whose input carries the batch and
 * whose result does not reduces over the batch; it is a statistic when a
 * value computed from its result (through values that do not carry the
 * batch) meets a value that does. A loss averaged over the batch is not
 * one: nothing batch-sized reads it.
 */
#include <errno.h>
#include <string.h>

#include "compiler/report/report_internal.h"

static bool differs(const struct ir_value *a, const struct ir_value *b)
{
	if (a->shape.rank != b->shape.rank)
		return true;
	for (int d = 0; d < a->shape.rank; d++)
		if (a->shape.dims[d] != b->shape.dims[d])
			return true;
	return false;
}

/* Whether the result of reduction node r flows, through values that do
 * not carry the batch, into a node that reads or writes one that does. */
static bool fed_back(const struct ir_graph *g, const bool *carry, bool *from, int r)
{
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g);
	memset(from, 0, (size_t)nv * sizeof *from);
	from[ir_graph_node(g, r)->out[0]->id] = true;
	for (int i = r + 1; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		bool reads = false, batch = false;
		for (int j = 0; j < n->nin; j++) {
			reads |= from[n->in[j]->id];
			batch |= carry[n->in[j]->id];
		}
		if (!reads)
			continue;
		for (int j = 0; j < n->nout; j++)
			batch |= carry[n->out[j]->id];
		if (batch)
			return true;
		for (int j = 0; j < n->nout; j++)
			from[n->out[j]->id] = true;
	}
	return false;
}

/* carry[v] for every value of g: whether its shape differs in g2. The
 * two imports can differ by a node where a size coincides with another
 * (a broadcast to an equal shape is left out), so nodes are matched in
 * order by op and operand count, skipping over a node that has no match
 * a few places ahead; a value with no match counts as not carrying. */
static void carries(const struct ir_graph *g, const struct ir_graph *g2, bool *carry)
{
	int nn = ir_graph_nnodes(g), nn2 = ir_graph_nnodes(g2);
	for (int k = 0; k < ir_graph_ninputs(g) && k < ir_graph_ninputs(g2); k++)
		carry[ir_graph_input(g, k)->id] = differs(ir_graph_input(g, k), ir_graph_input(g2, k));
	for (int i = 0, j = 0; i < nn && j < nn2;) {
		const struct ir_node *a = ir_graph_node(g, i), *b = ir_graph_node(g2, j);
		if (a->op == b->op && a->nin == b->nin && a->nout == b->nout) {
			for (int k = 0; k < a->nout; k++)
				carry[a->out[k]->id] = differs(a->out[k], b->out[k]);
			i++, j++;
			continue;
		}
		int skip = 0; /* the nearest match ahead: in g2 first, then in g */
		for (int d = 1; d <= 4 && !skip; d++) {
			if (j + d < nn2 && ir_graph_node(g2, j + d)->op == a->op)
				skip = d;
			else if (i + d < nn && ir_graph_node(g, i + d)->op == b->op)
				skip = -d;
		}
		if (skip > 0)
			j += skip;
		else if (skip < 0)
			i += -skip;
		else
			i++, j++;
	}
}

int report_batch_stats(const struct ir_graph *g, const struct ir_graph *g2, int elem_bytes, double *fwd, double *bwd)
{
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g);
	memset(fwd, 0, (size_t)nn * sizeof *fwd);
	memset(bwd, 0, (size_t)nn * sizeof *bwd);
	bool *carry = ir_calloc((size_t)nv + 1, sizeof *carry), *grad = ir_calloc((size_t)nv + 1, sizeof *grad);
	bool *from = ir_calloc((size_t)nv + 1, sizeof *from);
	if (!carry || !grad || !from) {
		ir_free(carry);
		ir_free(grad);
		ir_free(from);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	carries(g, g2, carry);
	for (int v = 0; v < nv; v++) {
		const struct ir_value *x = ir_graph_value(g, v);
		grad[v] = x->kind == IR_VAL_PARAM && ir_dtype_is_float(x->dtype) && !x->buffer;
	}
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		bool gi = false;
		for (int j = 0; j < n->nin; j++)
			gi |= grad[n->in[j]->id];
		for (int j = 0; j < n->nout; j++)
			grad[n->out[j]->id] = gi && ir_dtype_is_float(n->out[j]->dtype);
	}
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		const struct ir_value *out = n->out[0];
		if (!(ir_op_flags(n->op) & IR_OPF_REDUCE) || !carry[n->in[0]->id] || carry[out->id] ||
		    !fed_back(g, carry, from, i))
			continue;
		fwd[i] = cost_value_bytes(out, elem_bytes);
		bwd[i] = grad[n->in[0]->id] ? fwd[i] : 0;
	}
	ir_free(carry);
	ir_free(grad);
	ir_free(from);
	return 0;
}
