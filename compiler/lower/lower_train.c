/*
 * lower_train.c: what a training plan adds to the lowering of one stage
 * (lower.h, lower_train): the split of the train step into the part run
 * once per micro-batch and the part run once per step, the gradient
 * accumulators between them, and the write-back of the step's new values.
 *
 * Per micro-batch: forward and backward (nodes before update_first), the
 * loss output, the graph's own updates (BatchNorm running statistics)
 * copied over their parameters, and each gradient added into its
 * accumulator in the sharding it was computed in (with one micro-batch
 * the gradient itself is kept instead: no accumulator, no add). A data-parallel
 * gradient is a partial sum there, so nothing is communicated per
 * micro-batch. Per step: the update nodes read the accumulators; bringing
 * a partial accumulator to the sharding the update needs is the step's
 * gradient reduction (an all-reduce for a replicated update, a reduce-
 * scatter for one split over the data-parallel axis, as ZeRO does). Every
 * new parameter and state value is brought to the sharding of the buffer
 * it replaces (for a split update, the all-gather of the new parameter)
 * and copied over it.
 *
 * Both happen as early as they may (lw_train_node): a gradient is added
 * into its accumulator right after the node that completes it, a new value
 * written back right after the last node reading the old one, so that the
 * part does not hold every gradient, or every new value, at its end: the
 * memory the inter-op search charges (the stage's state and activations)
 * is then the arena's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"

int lw_train_tensors(struct plan *p, const struct lower_train *tr)
{
	const struct train_step *ts = tr->ts;
	p->train = true;
	p->micro = tr->micro;
	p->outputs[1].per_step = true;
	/* pcc-run checks the labels of a class-index loss against its
	 * classes, -100 ignored (plan.h): the first data input of class
	 * labels (ir_value.classes) whose ignored index, if any, is -100 or a
	 * class. (Labels without an ignored index let -100 pass there.) */
	for (int i = 0; i < ts->ndata && p->labels_input < 0; i++) {
		const struct ir_value *v = ir_graph_input(ts->g, i);
		if (v->classes && (!v->has_ignore || v->ignore == -100 || (v->ignore >= 0 && v->ignore < v->classes))) {
			p->labels_input = i;
			p->classes = v->classes;
		}
	}
	if (!(p->state = ir_calloc((size_t)ts->nstate + 1, sizeof *p->state)))
		return -ENOMEM;
	p->nstate = ts->nstate;
	for (int j = 0; j < ts->nstate; j++) {
		const struct ir_value *v = ts->state[j];
		const char *name = v->name ? v->name : "state";
		size_t len = strlen(name);
		if (!(p->state[j].name = ir_malloc(len + 1)))
			return -ENOMEM;
		memcpy(p->state[j].name, name, len + 1);
		p->state[j].dtype = v->dtype;
		p->state[j].shape = v->shape;
		p->state[j].init = tr->state_init ? tr->state_init[j] : 0;
	}
	const char *cfg = tr->config ? tr->config : "";
	size_t len = strlen(cfg);
	if (!(p->train_config = ir_malloc(len + 1)))
		return -ENOMEM;
	memcpy(p->train_config, cfg, len + 1);
	return 0;
}

/* The rep of t held in a bound buffer (parameter or state), or -1. */
static int bound_rep(const struct lower *L, int t)
{
	for (int r = L->rep_head[t]; r >= 0; r = L->reps[r].next)
		if (L->buf[L->reps[r].buf].bind == PLAN_BIND_PARAM || L->buf[L->reps[r].buf].bind == PLAN_BIND_STATE)
			return r;
	return -1;
}

/* New value v copied over the bound buffer of t (a parameter or state
 * input of index idx), brought to that buffer's sharding first. A t that
 * nothing read has no buffer yet: it gets one, replicated. */
static int write_back(struct lower *L, const struct ir_value *t, enum plan_bind bind, int idx, const struct ir_value *v)
{
	if (v == t)
		return 0; /* the step leaves it as it was */
	int r = bound_rep(L, t->id), rc;
	if (r < 0) {
		struct ir_sharding whole;
		memset(&whole, 0, sizeof whole);
		if ((rc = lw_bind_value(L, t, bind, idx, &whole)) < 0)
			return rc;
		r = bound_rep(L, t->id);
		IR_ASSERT(r >= 0);
	}
	int dst = L->reps[r].buf;
	struct ir_sharding spec = L->reps[r].spec;
	if ((rc = lw_ensure(L, v)) < 0)
		return rc;
	int b = lw_operand(L, v, &spec);
	if (b < 0)
		return b;
	struct lw_ins c = { .kind = PLAN_COPY, .kernel = -1 };
	return lw_emit(L, &c, 1, &b, 1, &dst) < 0 ? -ENOMEM : 0;
}

/* The index of parameter value v among the graph's parameters. */
static int param_index(const struct ir_graph *g, const struct ir_value *v)
{
	for (int i = 0; i < ir_graph_nparams(g); i++)
		if (ir_graph_param(g, i) == v)
			return i;
	return -1;
}

/* The per-step nodes may read gradients, parameters, state inputs,
 * constants and each other only (train_build's contract). */
static int check_update_reads(const struct lower *L, const struct train_step *ts, const bool *grad)
{
	for (int i = ts->update_first; i < ir_graph_nnodes(L->g); i++) {
		const struct ir_node *n = ir_graph_node(L->g, i);
		for (int j = 0; j < n->nin; j++) {
			const struct ir_value *v = n->in[j];
			bool ok = v->kind == IR_VAL_PARAM || grad[v->id] || !L->dyn[v->id] ||
				  (v->kind == IR_VAL_NODE && v->def->id >= ts->update_first);
			for (int k = 0; !ok && k < ts->nstate; k++)
				ok = ts->state[k] == v;
			if (!ok)
				return ir_errorf(-EINVAL,
						 "train step: update node %d (%s) reads value \"%s\" of the "
						 "per-micro-batch part, which is not a gradient (a compiler bug)",
						 n->id, ir_op_name(n->op), v->name ? v->name : "");
		}
	}
	return 0;
}

/* L's value standing for whole value w (inv: whole id -> L's, NULL when
 * L's graph is the whole), or NULL. */
static const struct ir_value *in_L(const struct lower *L, const int *inv, const struct ir_value *w)
{
	int v = inv ? inv[w->id] : w->id;
	return v < 0 ? NULL : ir_graph_value(L->g, v);
}

/* Computed by L's own nodes (not received, bound or absent). */
static bool made_here(const struct ir_value *v)
{
	return v && v->kind == IR_VAL_NODE;
}

/* lw_train_node's bookkeeping for one stage. */
struct lw_early {
	int *acc;            /* [nparams]: the accumulator made early, -1 */
	int *left;           /* [L's values]: nodes left to lower that read it */
	unsigned char *done; /* [nparams + nstate]: written back early */
};

void lw_train_early_free(struct lower *L)
{
	if (!L->early)
		return;
	ir_free(L->early->acc);
	ir_free(L->early->left);
	ir_free(L->early->done);
	ir_free(L->early);
	L->early = NULL;
}

static bool node_is_const(const struct lower *L, const struct ir_node *n)
{
	for (int j = 0; j < n->nout; j++)
		if (L->dyn[n->out[j]->id])
			return false;
	return true;
}

static int early_init(struct lower *L, const struct train_step *ts)
{
	int nv = ir_graph_nvalues(L->g);
	struct lw_early *e = ir_calloc(1, sizeof *e);
	if (!e)
		return -ENOMEM;
	L->early = e;
	e->acc = ir_malloc(sizeof *e->acc * (size_t)(ts->nparams + 1));
	e->left = ir_calloc((size_t)nv + 1, sizeof *e->left);
	e->done = ir_calloc((size_t)(ts->nparams + ts->nstate) + 1, 1);
	if (!e->acc || !e->left || !e->done)
		return -ENOMEM;
	for (int i = 0; i < ts->nparams; i++)
		e->acc[i] = -1;
	for (int i = 0; i < ir_graph_nnodes(L->g); i++) {
		const struct ir_node *n = ir_graph_node(L->g, i);
		if (node_is_const(L, n))
			continue; /* made where read, never lowered in order */
		for (int j = 0; j < n->nin; j++) {
			bool again = false;
			for (int k = 0; k < j; k++)
				again |= n->in[k] == n->in[j];
			if (!again)
				e->left[n->in[j]->id]++;
		}
	}
	return 0;
}

/* The accumulator of parameter i: acc += gradient gv, in the gradient's
 * own sharding (*spec). */
static int accumulate_into(struct lower *L, const struct train_step *ts, int i, const struct ir_value *gv, int *acc,
			   struct ir_sharding *spec)
{
	int rc;
	if ((rc = lw_ensure(L, gv)) < 0)
		return rc;
	int r = L->rep_head[gv->id];
	IR_ASSERT(r >= 0);
	int gb = L->reps[r].buf;
	*spec = L->reps[r].spec;
	if ((*acc = lw_buf_new(L, L->buf[gb].dtype, &L->buf[gb].shape)) < 0)
		return -ENOMEM;
	L->buf[*acc].bind = PLAN_BIND_ACCUM;
	L->buf[*acc].index = param_index(ts->g, ts->params[i]);
	L->buf[*acc].spec = *spec;
	int in[2] = { *acc, gb };
	return lw_kernel_into(L, IR_OP_ADD, 2, in, *acc);
}

/* Write-back k (parameters, then state inputs) of the step: L's old value
 * *t and new value *v (either NULL when L holds none). */
static void wb_pair(const struct lower *L, const struct lower_train *tr, const int *inv, int k,
		    const struct ir_value **t, const struct ir_value **v)
{
	const struct train_step *ts = tr->ts;
	*t = in_L(L, inv, k < ts->nparams ? ts->params[k] : ts->state[k - ts->nparams]);
	*v = in_L(L, inv, ir_graph_output(ts->g, 2 + k));
}

/* Write-back k's bound tensor: its bind and index (a parameter's found by
 * a search of the graph's, so only for a write-back made). */
static enum plan_bind wb_bind(const struct lower_train *tr, int k, int *idx)
{
	const struct train_step *ts = tr->ts;
	bool param = k < ts->nparams;
	*idx = param ? param_index(ts->g, ts->params[k]) : k - ts->nparams;
	return param ? PLAN_BIND_PARAM : PLAN_BIND_STATE;
}

int lw_train_node(struct lower *L, const struct lower_train *tr, const int *inv, const struct ir_node *m)
{
	const struct train_step *ts = tr->ts;
	int rc = 0;
	if (!L->early && (rc = early_init(L, ts)) < 0)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	struct lw_early *e = L->early;
	for (int j = 0; j < m->nin; j++) {
		bool again = false;
		for (int k = 0; k < j; k++)
			again |= m->in[k] == m->in[j];
		if (!again && e->left[m->in[j]->id] > 0)
			e->left[m->in[j]->id]--;
	}
	if (L->step_first < 0) { /* per micro-batch: gradients completed by m */
		for (int i = 0; i < ts->nparams && tr->micro > 1 && rc == 0; i++) {
			const struct ir_value *gv = in_L(L, inv, ts->grads[i]);
			struct ir_sharding spec;
			if (gv && made_here(gv) && gv->def == m && e->acc[i] < 0)
				rc = accumulate_into(L, ts, i, gv, &e->acc[i], &spec);
		}
		return rc == -ENOMEM ? ir_errorf(-ENOMEM, "out of memory lowering the plan") : rc;
	}
	/* per step: new values whose old ones nothing left reads */
	for (int k = 0; k < ts->nparams + ts->nstate && rc == 0; k++) {
		const struct ir_value *t, *v;
		int idx;
		if (e->done[k])
			continue;
		wb_pair(L, tr, inv, k, &t, &v);
		if (!t || v == t || !made_here(v) || L->rep_head[v->id] < 0 || e->left[t->id] > 0)
			continue;
		e->done[k] = 1;
		enum plan_bind bind = wb_bind(tr, k, &idx);
		rc = write_back(L, t, bind, idx, v);
	}
	return rc;
}

int lw_train_fwd_end(struct lower *L, const struct lower_train *tr, const int *inv)
{
	const struct ir_graph *whole = tr->ts->g;
	const struct ir_value *loss = in_L(L, inv, tr->ts->loss);
	int rc;
	/* the loss of this micro-batch */
	if (made_here(loss) && ((rc = lw_ensure(L, loss)) < 0 || (rc = lw_bind_output(L, 0, loss)) < 0))
		return rc;
	/* BatchNorm running statistics: each micro-batch sees the last one's */
	for (int j = 0; j < ir_graph_nupdates(whole); j++) {
		const struct ir_value *t = ir_graph_update_param(whole, j);
		const struct ir_value *v = in_L(L, inv, ir_graph_update_value(whole, j)), *tl = in_L(L, inv, t);
		if (!made_here(v))
			continue;
		if (!tl)
			return ir_errorf(-EINVAL, "stage %d updates \"%s\" but does not hold it (a compiler bug)",
					 L->stage, t->name ? t->name : "");
		if ((rc = write_back(L, tl, PLAN_BIND_PARAM, param_index(whole, t), v)) < 0)
			return rc;
	}
	return 0;
}

int lw_train_bwd_end(struct lower *L, const struct lower_train *tr, const int *inv, bool accumulate)
{
	const struct train_step *ts = tr->ts;
	int nv = ir_graph_nvalues(L->g), rc = 0;
	int *acc = ir_malloc(sizeof *acc * (size_t)(ts->nparams + 1));
	struct ir_sharding *spec = ir_malloc(sizeof *spec * (size_t)(ts->nparams + 1));
	if (!acc || !spec) {
		rc = -ENOMEM;
		goto out;
	}
	/* accumulators: acc += gradient, in the gradient's own sharding */
	for (int i = 0; i < ts->nparams; i++) {
		const struct ir_value *gv = in_L(L, inv, ts->grads[i]);
		acc[i] = -1;
		if (!made_here(gv))
			continue;
		if (accumulate && L->early && L->early->acc[i] >= 0) { /* added when completed */
			acc[i] = L->early->acc[i];
			spec[i] = L->buf[acc[i]].spec;
			continue;
		}
		if (!accumulate) {
			if ((rc = lw_ensure(L, gv)) < 0)
				goto out;
			int r = L->rep_head[gv->id];
			IR_ASSERT(r >= 0);
			acc[i] = L->reps[r].buf; /* one micro-batch: the gradient is the sum */
			spec[i] = L->reps[r].spec;
			continue;
		}
		if ((rc = accumulate_into(L, ts, i, gv, &acc[i], &spec[i])) < 0)
			goto out;
	}
	/* the per-step part knows only bound buffers and the accumulators */
	L->step_first = L->nins;
	for (int v = 0; v < nv; v++) {
		int r = bound_rep(L, v);
		L->rep_head[v] = r;
		if (r >= 0)
			L->reps[r].next = -1;
	}
	for (int i = 0; i < ts->nparams && rc == 0; i++) {
		if (acc[i] < 0)
			continue;
		int g = in_L(L, inv, ts->grads[i])->id;
		/* an accumulated gradient is never remade from its nodes */
		L->dyn[g] = true;
		rc = lw_rep_add(L, g, &spec[i], acc[i]);
	}
out:
	ir_free(acc);
	ir_free(spec);
	return rc == -ENOMEM ? ir_errorf(-ENOMEM, "out of memory lowering the plan") : rc;
}

int lw_train_split(struct lower *L, const struct lower_train *tr)
{
	const struct train_step *ts = tr->ts;
	bool *grad = ir_calloc((size_t)ir_graph_nvalues(L->g) + 1, sizeof *grad);
	int rc;
	if (!grad)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	for (int i = 0; i < ts->nparams; i++)
		grad[ts->grads[i]->id] = true;
	rc = check_update_reads(L, ts, grad);
	ir_free(grad);
	if (rc == 0)
		rc = lw_train_fwd_end(L, tr, NULL);
	return rc < 0 ? rc : lw_train_bwd_end(L, tr, NULL, tr->micro > 1);
}

int lw_train_finish(struct lower *L, const struct lower_train *tr, const int *inv, bool norm_out)
{
	const struct train_step *ts = tr->ts;
	const struct ir_graph *whole = ts->g;
	const struct ir_value *norm = in_L(L, inv, ir_graph_output(whole, 1));
	int rc;
	if (norm_out && ((rc = lw_ensure(L, norm)) < 0 || (rc = lw_bind_output(L, 1, norm)) < 0))
		return rc;
	for (int k = 0; k < ts->nparams + ts->nstate; k++) {
		const struct ir_value *t, *v;
		int idx;
		wb_pair(L, tr, inv, k, &t, &v);
		if (!t || !(made_here(v) || v == t) || (L->early && L->early->done[k]))
			continue;
		enum plan_bind bind = wb_bind(tr, k, &idx);
		if ((rc = write_back(L, t, bind, idx, v)) < 0)
			return rc;
	}
	return 0;
}
