/*
 * report_tp.c: a manual plan's tensor parallelism (`pcc report --plan
 * ...,tp=T`), laid out by the intra-op pass under the plan's constraint.
 *
 * The forward graph, its batch dim bound to the micro-batch, is solved by
 * the intra-op pass (intra*.c: its per-op rules, costs and solver) for a
 * training step on a 1 x T mesh of the tp group's devices (consecutive
 * ones, as the plan's device order has them), with intra_opts.manual_tp:
 * no dim that runs along the samples or their tokens splits (data
 * parallelism divides those, on its own axis, which the evaluator costs),
 * and a weight's dim that T does not divide splits padded (Megatron's
 * vocabulary). What is left to split is the model's own dims: heads,
 * hidden and feature dims, the vocabulary, channels. Tensor parallelism
 * is there to divide the model's state, and what that saves outside the
 * pass's view (the gradient sync over the data-parallel replicas, the
 * optimizer, memory) grows with the state per device: the pass solves
 * the layout lean, as the automatic planner's lean variant
 * (inter_lean_price): first the fastest, then again with each byte of
 * state per device priced at that plan's time per byte of state
 * (intra_reprice). On a GPT layer it is Megatron's: QKV and the first MLP
 * dot column-parallel, attention per head, the out-projection and the
 * second MLP dot row-parallel, their partial sums all-reduced where the
 * residual stream needs them whole; the token embedding and the LM head
 * split the vocabulary; the position embedding splits its hidden dim and
 * is all-gathered once a micro-batch (Megatron keeps it whole).
 *
 * The evaluator (report_eval.c) reads back the share of every value one
 * rank holds (its sharding), the share of every node's work
 * (intra_node_pieces) and every collective with its time (the pass's
 * events): forward or backward per micro-batch, or once per step (the
 * gradient of a weight used whole by split work).
 *
 * Preconditions: a verified graph; tp >= 1 devices of c.
 */
#include <errno.h>
#include <string.h>

#include "compiler/report/report_internal.h"

void tp_result_free(struct tp_result *r)
{
	ir_free(r->share);
	ir_free(r->work);
	ir_free(r->grad);
	ir_free(r->ev);
	memset(r, 0, sizeof *r);
}

double tp_local_bytes(const struct tp_result *r, const struct ir_value *v, int elem_bytes)
{
	return cost_value_bytes(v, elem_bytes) * r->share[v->id];
}

/* What the pass's collective is, in the words of --explain. */
static const char *why_of(const struct intra_event *ev)
{
	if (ev->operand < 0)
		return "reduction over a split dim";
	if (ev->once)
		return "gradient of a weight used whole by split work";
	switch (ev->coll) {
	case COST_ALL_REDUCE:
		return ev->bwd ? "gradient of a value used whole by split work (Megatron's f)"
			       : "partial sums needed whole (row-parallel, Megatron's g)";
	case COST_REDUCE_SCATTER:
		return ev->bwd ? "gradient of a split value's whole use" : "partial sums needed split";
	case COST_ALL_GATHER:
		return ev->bwd ? "split value needed whole again backward" : "split value needed whole";
	case COST_ALL_TO_ALL:
		return "split moved to another dim";
	case COST_BROADCAST:
	case COST_SEND_RECV:
	case COST_COLL_COUNT:
		break;
	}
	return "resharding";
}

static int take_solve(const struct ir_graph *g, const struct intra_result *ir, struct tp_result *r)
{
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g);
	for (int i = 0; i < nv; i++) {
		const struct ir_value *v = ir_graph_value(g, i);
		double pieces = 1;
		for (int d = 0; v->sharded && d < v->shape.rank; d++)
			pieces *= ir_sharding_pieces(v->sharding.dim[d], 1, r->tp);
		r->share[v->id] = 1 / pieces;
	}
	for (int i = 0; i < nn; i++)
		r->work[ir_graph_node(g, i)->id] = 1.0 / intra_node_pieces(ir, i);
	r->ev = ir_calloc((size_t)ir->nevents + 1, sizeof *r->ev);
	if (!r->ev)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int i = 0; i < ir->nevents; i++) {
		const struct intra_event *ev = &ir->events[i];
		r->ev[r->nev++] = (struct tp_event){
			.node = ev->node,
			.coll = ev->coll,
			.phase = ev->once  ? TP_STEP
				 : ev->bwd ? TP_BWD
					   : TP_FWD,
			.bytes = ev->bytes,
			.t = ev->t,
			.why = why_of(ev),
		};
	}
	return 0;
}

int tp_layout(struct ir_graph *g, const struct cost_cluster *c, const struct tp_request *q, struct tp_result *r)
{
	IR_ASSERT(q->tp >= 1);
	int nv = ir_graph_nvalues(g), nn = ir_graph_nnodes(g), rc = 0;
	memset(r, 0, sizeof *r);
	r->tp = q->tp;
	r->share = ir_malloc(((size_t)nv + 1) * sizeof *r->share);
	r->work = ir_malloc(((size_t)nn + 1) * sizeof *r->work);
	r->grad = cost_grad_values(g); /* values that carry a gradient */
	if (!r->share || !r->work || !r->grad) {
		tp_result_free(r);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < nv; i++)
		r->share[i] = 1;
	for (int i = 0; i < nn; i++)
		r->work[i] = 1;
	if (q->tp == 1) /* nothing to lay out: every value whole on its one device */
		return 0;
	struct intra_opts o;
	intra_opts_init(&o);
	o.n0 = 1;
	o.n1 = q->tp;
	o.train = true;
	o.optim = q->optim;
	o.prec = (int)q->prec;
	o.cal = q->cal;
	o.manual_tp = true;
	o.inputs_resident = true; /* the report costs no copies from the host */
	o.mem_limit = 1e30;       /* whether it fits is the evaluator's to say */
	o.step_share = 1.0 / (q->micro > 0 ? q->micro : 1);
	/* local search only: on GPT-3 1.3B, 125M and 175B, MoE 380M and
	 * Wide-ResNet 250M the full solve finds the same plans, taking up to
	 * 10 times as long (Wide-ResNet's batch search: 3.7 s against 0.3 s) */
	o.quick = true;
	struct intra_result ir;
	if ((rc = intra_pass(g, c, &o, &ir)) < 0) {
		ir_error_prefix("plan tp=%d", q->tp);
		tp_result_free(r);
		return rc;
	}
	/* lean: the state priced at the fastest plan's time per byte of it */
	if (ir.mem_state > 0 && ir.t_total > 0 && (rc = intra_reprice(g, ir.t_total / ir.mem_state, &ir)) < 0) {
		ir_error_prefix("plan tp=%d", q->tp);
		tp_result_free(r);
		return rc;
	}
	rc = take_solve(g, &ir, r);
	intra_result_free(&ir);
	if (rc < 0)
		tp_result_free(r);
	return rc;
}
