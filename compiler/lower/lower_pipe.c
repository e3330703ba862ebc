/*
 * lower_pipe.c: a pipelined training plan (lower.h, lower_train with
 * several stages). The train step's nodes carry their stage (ir_node.tag,
 * train_build); each stage's nodes are a graph of their own, sharded by
 * its own intra-op pass. Every device's program has three parts:
 *
 *   forward   (per micro-batch)  the stage's forward nodes; activations
 *             received from earlier stages and sent to later ones; at its
 *             end the loss output (last stage) and the per-micro-batch
 *             write-backs (BatchNorm statistics), and the forward values
 *             the backward part needs from other stages;
 *   backward  (per micro-batch)  the stage's backward nodes; gradients
 *             received from later stages and sent to earlier ones; each
 *             parameter gradient added into its accumulator;
 *   step      (once per step)    the update of the stage's parameters; the
 *             global scalars (step counter, learning rate, gradient norm,
 *             f16 overflow check) computed by every stage alike from the
 *             stages' partial sums of squares, which they exchange; then
 *             the write-backs, and a weight other stages read too (tied
 *             embeddings) sent to them.
 *
 * The stage's schedule (plan_stage.order: GPipe or 1F1B) runs the forward
 * and backward parts of the micro-batches. Nodes are lowered in the step
 * graph's order, each into its stage, and a value another stage needs is
 * sent and received at that moment: every pair of programs then sees its
 * messages in one global order, so the plan cannot deadlock on them, and
 * each part's messages pair with the same part on the other side. Values
 * the backward part reads from the forward part of the same micro-batch,
 * and inputs it reads, get a slot per micro-batch in flight (lower_mem.c).
 */
#include <errno.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"

/* Stage s's node standing for whole node n, or NULL. */
static const struct ir_node *stage_node(const struct lw_ctx *c, int s, const struct ir_node *n)
{
	int v = c->inv[s][n->out[0]->id];
	if (v < 0)
		return NULL;
	const struct ir_value *x = ir_graph_value(c->L[s].g, v);
	return x->kind == IR_VAL_NODE ? x->def : NULL;
}

/* The whole step's node computing stage s's value v, or NULL. */
static const struct ir_node *whole_def(const struct lw_ctx *c, int s, const struct ir_value *v)
{
	int w = lw_src_of(c, s, v->id);
	const struct ir_value *x = w >= 0 ? ir_graph_value(c->whole, w) : NULL;
	return x && x->kind == IR_VAL_NODE ? x->def : NULL;
}

/* Receives, now, every operand of stage s's node m that another stage
 * computes and s does not hold yet; when fwd_only, only those computed by
 * a forward node. */
static int receive_operands(struct lw_ctx *c, int s, const struct ir_node *m, bool fwd_only)
{
	struct lower *L = &c->L[s];
	for (int j = 0; j < m->nin; j++) {
		const struct ir_value *v = m->in[j];
		if (v->kind != IR_VAL_INPUT || L->rep_head[v->id] >= 0)
			continue;
		const struct ir_node *d = whole_def(c, s, v);
		if (!d)
			continue; /* a model input or state: bound */
		if (fwd_only && d->id >= c->tr->ts->bwd_first)
			continue;
		if (d->id >= c->tr->ts->bwd_first && d->id < c->tr->ts->update_first && d->tag < s)
			return ir_errorf(-EINVAL,
					 "stage %d's backward reads a backward value of stage %d, which runs "
					 "after it (a compiler bug)",
					 s, d->tag);
		int rc = lw_receive(c, s, v);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static bool is_const(const struct lower *L, const struct ir_node *m)
{
	for (int j = 0; j < m->nout; j++)
		if (L->dyn[m->out[j]->id])
			return false;
	return true;
}

/* Whole node n lowered into stage s (operands received first). */
static int lower_node(struct lw_ctx *c, int s, const struct ir_node *n)
{
	const struct ir_node *m = stage_node(c, s, n);
	if (!m)
		return ir_errorf(-EINVAL, "node %d (%s) of stage %d is missing from the stage's graph (a compiler bug)",
				 n->id, ir_op_name(n->op), s);
	if (is_const(&c->L[s], m))
		return 0; /* made where it is read */
	int rc = receive_operands(c, s, m, false);
	if (rc == 0 && (rc = lw_node(&c->L[s], m)) < 0)
		ir_error_prefix("stage %d", s);
	return rc < 0 ? rc : lw_train_node(&c->L[s], c->tr, c->inv[s], m);
}

/* Nodes [first, last) of the whole step, in order, each into its stage
 * (IR_TAG_ALL: every stage). */
static int lower_nodes(struct lw_ctx *c, int first, int last)
{
	for (int i = first; i < last; i++) {
		const struct ir_node *n = ir_graph_node(c->whole, i);
		int rc = 0;
		if (n->tag == IR_TAG_ALL) {
			for (int s = 0; s < c->ns && rc == 0; s++)
				rc = lower_node(c, s, n);
		} else if (n->tag >= 0 && n->tag < c->ns) {
			rc = lower_node(c, n->tag, n);
		} else if (n->tag != IR_TAG_NONE) {
			rc = ir_errorf(-EINVAL, "node %d (%s) has stage %d of %d (a compiler bug)", n->id,
				       ir_op_name(n->op), n->tag, c->ns);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* A parameter other stages read too (tied embeddings): its owner's new
 * value sent to each of them and copied over their copy. */
static int share_param(struct lw_ctx *c, int i)
{
	const struct train_step *ts = c->tr->ts;
	int o = ts->param_stage[i], rc;
	struct lower *S = &c->L[o];
	int u = c->inv[o][ir_graph_output(c->whole, 2 + i)->id];
	for (int s = 0; s < c->ns; s++) {
		int t = c->inv[s][ts->params[i]->id];
		if (s == o || t < 0)
			continue;
		struct lower *R = &c->L[s];
		int r = -1, rb;
		for (int q = R->rep_head[t]; q >= 0 && r < 0; q = R->reps[q].next)
			if (R->buf[R->reps[q].buf].bind == PLAN_BIND_PARAM)
				r = q;
		if (r < 0)
			continue; /* bound nowhere: nothing reads it there */
		if (u < 0)
			return ir_errorf(-EINVAL,
					 "stage %d does not compute the new value of parameter %d (a compiler bug)", o,
					 i);
		const struct ir_value *uv = ir_graph_value(S->g, u);
		if ((rc = lw_ensure(S, uv)) < 0)
			return rc;
		int k = lw_pick_rep(S, u);
		struct ir_sharding ss = S->reps[k].spec, rs = R->reps[r].spec;
		int dst = R->reps[r].buf;
		if ((rc = lw_transfer(S, uv, S->reps[k].buf, &ss, R, ir_graph_value(R->g, t), &rs, &rb)) < 0)
			return rc;
		struct lw_ins cp = { .kind = PLAN_COPY, .kernel = -1 };
		if (lw_emit(R, &cp, 1, &rb, 1, &dst) < 0)
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	}
	return 0;
}

int lw_pipe_all(struct lw_ctx *c, struct plan *p, struct lw_shared *sh)
{
	const struct train_step *ts = c->tr->ts;
	int nn = ir_graph_nnodes(c->whole), rc;
	for (int s = 0; s < c->ns; s++) {
		if ((rc = lw_init_stage(c, s, p, sh)) < 0)
			return rc;
		c->L[s].order = ir_graph_schedule(ts->g, s, &c->L[s].norder);
		if ((rc = lw_bind_stage(c, s)) < 0)
			return rc;
	}
	/* forward parts */
	if ((rc = lower_nodes(c, 0, ts->bwd_first)) < 0)
		return rc;
	for (int i = ts->bwd_first; i < ts->update_first; i++) {
		const struct ir_node *n = ir_graph_node(c->whole, i), *m;
		if (n->tag >= 0 && n->tag < c->ns && (m = stage_node(c, n->tag, n)) &&
		    (rc = receive_operands(c, n->tag, m, true)) < 0)
			return rc;
	}
	for (int s = 0; s < c->ns; s++) {
		if ((rc = lw_train_fwd_end(&c->L[s], c->tr, c->inv[s])) < 0)
			return rc;
		c->L[s].fwd_end = c->L[s].nins;
	}
	/* backward parts */
	if ((rc = lower_nodes(c, ts->bwd_first, ts->update_first)) < 0)
		return rc;
	for (int s = 0; s < c->ns; s++)
		if ((rc = lw_train_bwd_end(&c->L[s], c->tr, c->inv[s], true)) < 0)
			return rc;
	/* per-step parts */
	if ((rc = lower_nodes(c, ts->update_first, nn)) < 0)
		return rc;
	for (int i = 0; i < ts->nparams; i++)
		if ((rc = share_param(c, i)) < 0)
			return rc;
	for (int s = 0; s < c->ns; s++)
		if ((rc = lw_train_finish(&c->L[s], c->tr, c->inv[s], s == c->ns - 1)) < 0)
			return rc;
	return 0;
}
