/*
 * train.c: builds the train-step graph: picks or builds the loss, chooses
 * the trained parameters, differentiates (grad.c) and appends the optimizer
 * update (train_optim.c). The layout of inputs and outputs is in
 * train.h; this file keeps that order.
 */
#include <errno.h>
#include <string.h>

#include "compiler/cost/cost.h"
#include "compiler/train/grad_internal.h"
#include "compiler/train/train_internal.h"

void train_opts_init(struct train_opts *o)
{
	memset(o, 0, sizeof *o);
	o->optim = TRAIN_ADAMW;
	o->lr = 1e-3;
	o->momentum = 0.9;
	o->beta1 = 0.9;
	o->beta2 = 0.999;
	o->eps = 1e-8;
	o->weight_decay = -1; /* the optimizer's default */
	o->sched = TRAIN_LR_CONSTANT;
	o->compute = IR_F32;
	o->loss_scale = 65536;
	o->scale_window = 2000;
	o->accum = 1;
	o->grad_scale = 1;
}

/* A value by name: graph outputs first (their names), then any value. */
static struct ir_value *find_value(const struct ir_graph *g, const char *name)
{
	for (int i = 0; i < ir_graph_noutputs(g); i++) {
		const char *on = ir_graph_output_name(g, i);
		struct ir_value *v = ir_graph_output(g, i);
		if ((on && !strcmp(on, name)) || (v->name && !strcmp(v->name, name)))
			return v;
	}
	for (int i = ir_graph_nvalues(g) - 1; i >= 0; i--) {
		struct ir_value *v = ir_graph_value(g, i);
		if (v->name && !strcmp(v->name, name))
			return v;
	}
	return NULL;
}

static int model_loss(const struct ir_graph *g, struct ir_value **loss)
{
	int found = 0;
	for (int i = 0; i < ir_graph_noutputs(g); i++) {
		struct ir_value *v = ir_graph_output(g, i);
		if (v->shape.rank == 0 && ir_dtype_is_float(v->dtype)) {
			*loss = v;
			found++;
		}
	}
	if (found == 1)
		return 0;
	if (found == 0)
		return ir_errorf(-EINVAL, "the model has no scalar loss output: give --loss "
					  "cross_entropy:LOGITS,LABELS or mse:OUTPUT,TARGET");
	return ir_errorf(-EINVAL, "the model has %d scalar outputs: name the loss with --loss", found);
}

/* mean over all elements of x (a floating point value). */
static struct ir_value *mean_all(struct gb *b, struct ir_value *x)
{
	struct ir_ilist all = { .n = x->shape.rank };
	for (int i = 0; i < x->shape.rank; i++)
		all.v[i] = i;
	int64_t n = ir_shape_numel(&x->shape);
	return gb_scale(b, gb_sum(b, x, &all), n ? 1.0 / (double)n : 0);
}

/* Mean cross entropy of logits [..., C] (class dim last) against integer
 * labels [...]; labels equal to -100 are ignored (PyTorch's ignore_index). */
static struct ir_value *cross_entropy(struct gb *b, struct ir_value *logits, struct ir_value *labels)
{
	int r = logits->shape.rank;
	struct ir_ilist cls = { .n = 1, .v = { r - 1 } }, lead = { .n = r - 1 };
	for (int i = 0; i < r - 1; i++)
		lead.v[i] = i;
	struct ir_value *x = logits;
	struct ir_attrs ma = { .axes = cls };
	struct ir_value *mx = gb_op(b, IR_OP_REDUCE_MAX, 1, &x, &ma);
	struct ir_value *z = gb_bin(b, IR_OP_SUB, x, gb_broadcast(b, mx, &x->shape, &lead));
	struct ir_value *lse = gb_un(b, IR_OP_LOG, gb_sum(b, gb_un(b, IR_OP_EXP, z), &cls));
	struct ir_attrs io = { .shape = logits->shape, .dtype = labels->dtype, .axis = r - 1 };
	struct ir_value *cls_ids = gb_op(b, IR_OP_IOTA, 0, NULL, &io);
	struct ir_value *hot = gb_bin(b, IR_OP_EQ, cls_ids, gb_broadcast(b, labels, &x->shape, &lead));
	struct ir_value *picked = gb_sum(b, gb_select(b, hot, z, gb_like(b, z, 0)), &cls);
	struct ir_value *valid = gb_bin(b, IR_OP_NE, labels, gb_like(b, labels, -100));
	struct ir_value *w = gb_convert(b, valid, x->dtype);
	struct ir_value *per = gb_bin(b, IR_OP_MUL, gb_bin(b, IR_OP_SUB, lse, picked), w);
	struct ir_ilist all = lead;
	return gb_bin(b, IR_OP_DIV, gb_sum(b, per, &all), gb_sum(b, w, &all));
}

/* Builds the loss from a "kind:A,B" spec, adding B as a graph input. */
static int spec_loss(struct train_step *ts, struct ir_graph *g, const char *spec, struct ir_value **loss)
{
	char kind[32], a[256], bname[256];
	const char *colon = strchr(spec, ':'), *comma = colon ? strchr(colon, ',') : NULL;
	if (!colon || !comma || colon - spec >= (long)sizeof kind || comma - colon - 1 >= (long)sizeof a ||
	    strlen(comma + 1) >= sizeof bname || comma == colon + 1 || !comma[1])
		return ir_errorf(-EINVAL,
				 "--loss %s: expected cross_entropy:LOGITS,LABELS or "
				 "mse:OUTPUT,TARGET",
				 spec);
	snprintf(kind, sizeof kind, "%.*s", (int)(colon - spec), spec);
	snprintf(a, sizeof a, "%.*s", (int)(comma - colon - 1), colon + 1);
	snprintf(bname, sizeof bname, "%s", comma + 1);
	bool ce = !strcmp(kind, "cross_entropy");
	if (!ce && strcmp(kind, "mse"))
		return ir_errorf(-EINVAL, "--loss %s: unknown loss '%s' (cross_entropy or mse)", spec, kind);
	struct ir_value *out = find_value(g, a);
	if (!out)
		return ir_errorf(-EINVAL, "--loss %s: the model has no value named \"%s\"", spec, a);
	char sb[IR_SHAPE_STR_MAX];
	if (!ir_dtype_is_float(out->dtype) || (ce && out->shape.rank < 1))
		return ir_errorf(-EINVAL, "--loss %s: \"%s\" is %s%s, expected floating point%s", spec, a,
				 ir_dtype_name(out->dtype), ir_shape_str(&out->shape, sb, sizeof sb),
				 ce ? " logits with a class dimension (last)" : "");
	if (find_value(g, bname))
		return ir_errorf(-EINVAL, "--loss %s: \"%s\" already names a value of the model", spec, bname);
	struct ir_shape tshape = out->shape;
	if (ce)
		tshape.rank--;
	struct ir_value *t = ir_graph_add_input(g, bname, ce ? IR_I64 : out->dtype, &tshape);
	if (!t)
		return -ENOMEM;
	struct gb b = { .g = g, .name = ce ? "loss/cross_entropy" : "loss/mse" };
	if (ce) {
		t->classes = out->shape.dims[out->shape.rank - 1];
		t->has_ignore = true;
		t->ignore = -100;
		*loss = cross_entropy(&b, out, t);
	} else {
		struct ir_value *d = gb_bin(&b, IR_OP_SUB, out, t);
		*loss = mean_all(&b, gb_bin(&b, IR_OP_MUL, d, d));
	}
	return b.err;
}

/* The step counter, and for f16 the dynamic loss scale: the gradients are
 * those of loss * scale, so small f16 gradients do not flush to zero; the
 * update divides the scale out again. */
static int loss_scaling(struct train_step *ts, const struct train_opts *o, struct ir_value **target)
{
	static const struct ir_shape scalar;
	struct ir_value *step, *scale, *good;
	int rc = train_add_state(ts, "train.step", IR_F32, &scalar, &step);
	if (rc < 0 || o->compute != IR_F16)
		return rc;
	rc = train_add_state(ts, "train.loss_scale", IR_F32, &scalar, &scale);
	if (rc == 0)
		rc = train_add_state(ts, "train.good_steps", IR_F32, &scalar, &good);
	if (rc < 0)
		return rc;
	struct gb b = { .g = ts->g, .name = "loss/scaled" };
	*target = gb_bin(&b, IR_OP_MUL, *target, gb_convert(&b, scale, (*target)->dtype));
	return b.err;
}

/* The backward pass's first node once dead nodes are gone: fwd[0 .. nf)
 * were the nodes before it, and survivors keep their order. */
static int first_after(const struct ir_graph *g, struct ir_node *const *fwd, int nf)
{
	int j = 0, n = ir_graph_nnodes(g);
	for (int i = 0; i < n; i++) {
		const struct ir_node *x = ir_graph_node(g, i);
		while (j < nf && fwd[j] != x)
			j++;
		if (j == nf)
			return i;
	}
	return n;
}

/* A pipelined step: the forward graph's nodes came tagged with their
 * stage. Untagged nodes before the update (the loss, converts, the
 * gradient seed's users) take the latest stage among their operands'
 * producers; those still untagged (reading only inputs and parameters)
 * the earliest stage among their readers. Constants stay untagged: every
 * stage makes its own. Each trained parameter belongs to the first stage
 * reading it (a weight later stages read too, such as tied embeddings,
 * gets their gradient contributions there and sends them its new value). */
static int stage_tags(struct train_step *ts)
{
	struct ir_graph *g = ts->g;
	int nn = ir_graph_nnodes(g), nv = ir_graph_nvalues(g), ns = 0, rc = 0;
	for (int i = 0; i < nn; i++)
		if (ir_graph_node(g, i)->tag >= ns)
			ns = ir_graph_node(g, i)->tag + 1;
	if (ns == 0)
		return 0;
	bool *dyn = cost_dynamic_values(g);
	int *lo = ir_malloc(sizeof *lo * (size_t)(nv + 1));
	if (!dyn || !lo || !(ts->param_stage = ir_malloc(sizeof *ts->param_stage * (size_t)(ts->nparams + 1)))) {
		rc = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nn; i++) {
		struct ir_node *n = ir_graph_node(g, i);
		if (n->tag != IR_TAG_NONE || !dyn[n->out[0]->id])
			continue;
		for (int j = 0; j < n->nin; j++)
			if (n->in[j]->kind == IR_VAL_NODE && n->in[j]->def->tag > n->tag)
				n->tag = n->in[j]->def->tag;
	}
	for (int v = 0; v < nv; v++)
		lo[v] = ns;
	for (int i = nn - 1; i >= 0; i--) {
		struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nout && n->tag == IR_TAG_NONE && dyn[n->out[0]->id]; j++)
			if (lo[n->out[j]->id] < ns)
				n->tag = lo[n->out[j]->id];
		if (n->tag < 0)
			continue;
		for (int j = 0; j < n->nin; j++)
			if (n->tag < lo[n->in[j]->id])
				lo[n->in[j]->id] = n->tag;
	}
	for (int i = 0; i < ts->nparams; i++)
		ts->param_stage[i] = lo[ts->params[i]->id] < ns ? lo[ts->params[i]->id] : 0;
	ts->nstages = ns;
out:
	ir_free(dyn);
	ir_free(lo);
	return rc == -ENOMEM ? ir_errorf(rc, "out of memory building the train step") : rc;
}

/* Mixed precision: a parameter's gradient is its 16-bit gradient
 * converted to f32, a node autodiff makes after every other (it reaches
 * the parameter's own convert last). Each is moved to right after its
 * 16-bit gradient is complete, so that the backward pass does not hold
 * every layer's 16-bit gradients to its end, and lowering adds the
 * gradient into its accumulator right there (lower_train.c). */
static int hoist_grad_converts(struct train_step *ts)
{
	int nn = ir_graph_nnodes(ts->g), any = 0;
	bool *move = ir_calloc((size_t)nn + 1, sizeof *move);
	if (!move)
		return ir_errorf(-ENOMEM, "out of memory building the train step");
	for (int i = 0; i < ts->nparams; i++) {
		const struct ir_value *v = ts->grads[i];
		if (v->kind != IR_VAL_NODE || v->def->op != IR_OP_CONVERT || v->def->in[0]->kind != IR_VAL_NODE ||
		    v->def->in[0]->def->id < ts->bwd_first)
			continue;
		move[v->def->id] = true;
		any = 1;
	}
	int rc = any ? ir_graph_hoist(ts->g, move) : 0;
	ir_free(move);
	return rc;
}

int train_build(struct ir_graph *g, const struct train_opts *o, struct train_step *ts)
{
	memset(ts, 0, sizeof *ts);
	ts->g = g;
	struct ir_value *loss = NULL, **cand = NULL, **grads = NULL;
	struct ir_node **fwd = NULL;
	int rc = train_check_opts(o);
	if (rc == 0)
		rc = o->loss ? spec_loss(ts, g, o->loss, &loss) : model_loss(g, &loss);
	if (rc < 0)
		return rc;
	/* The loss is the only output from here on; the cast copies the loss
	 * nodes too, so they run in the compute precision (f32 for their
	 * reductions under mixed precision). */
	ir_graph_clear_outputs(g);
	rc = ir_graph_add_output(g, loss, "loss");
	if (rc == 0 && o->compute != IR_F32)
		rc = train_cast(&ts->g, o->compute);
	g = ts->g;
	if (rc < 0)
		return rc;
	loss = ir_graph_output(g, 0);
	if (loss->dtype != IR_F32 && loss->dtype != IR_F64) {
		struct gb b = { .g = g, .name = "loss" };
		loss = gb_convert(&b, loss, IR_F32);
		if (b.err)
			return b.err;
	}
	int ndata = ir_graph_ninputs(g);
	struct ir_value *target = loss;
	rc = loss_scaling(ts, o, &target);
	if (rc == 0 && o->grad_scale != 1) {
		struct gb b = { .g = g, .name = "loss/per_micro_batch" };
		target = gb_scale(&b, target, o->grad_scale);
		rc = b.err;
	}
	if (rc < 0)
		return rc;
	int n = train_candidates(g, target, o, ts, &cand);
	if (n < 0)
		return n;
	grads = ir_calloc((size_t)n + 1, sizeof *grads);
	if (!grads) {
		rc = -ENOMEM;
		goto done;
	}
	int nf = ir_graph_nnodes(g);
	if (!(fwd = ir_malloc(sizeof *fwd * (size_t)(nf + 1)))) {
		rc = -ENOMEM;
		goto done;
	}
	for (int i = 0; i < nf; i++)
		fwd[i] = ir_graph_node(g, i);
	rc = grad_build(g, target, n, cand, grads);
	if (rc < 0)
		goto done;
	/* Parameters the loss does not depend on are not trained. */
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (grads[i]) {
			cand[k] = cand[i];
			grads[k++] = grads[i];
		} else {
			ts->nfrozen++;
		}
	}
	if (k == 0) {
		rc = ir_errorf(-EINVAL, "no parameter to train: the loss depends on no floating point "
					"initializer that is not frozen or a constant (--trainable PATTERN "
					"trains one)");
		goto done;
	}
	/* Drop forward work the loss does not need before the update is added. */
	ir_graph_clear_outputs(g);
	rc = ir_graph_add_output(g, loss, "loss");
	for (int i = 0; rc == 0 && i < k; i++)
		rc = ir_graph_add_output(g, grads[i], NULL);
	if (rc == 0)
		rc = ir_graph_dce(g);
	if (rc < 0)
		goto done;
	ts->loss = loss;
	ts->nparams = k;
	ts->params = cand;
	ts->grads = grads;
	ts->ndata = ndata;
	ts->update_first = ir_graph_nnodes(g);
	ts->bwd_first = first_after(g, fwd, nf);
	cand = grads = NULL;
	if ((rc = hoist_grad_converts(ts)) < 0 || (rc = stage_tags(ts)) < 0)
		goto done;
	rc = train_update(ts, o);
	if (rc == 0)
		rc = ir_verify(ts->g);
done:
	ir_free(cand);
	ir_free(grads);
	ir_free(fwd);
	return rc;
}

void train_step_free(struct train_step *ts)
{
	ir_graph_free(ts->g);
	ir_free(ts->params);
	ir_free(ts->grads);
	ir_free(ts->state);
	ir_free(ts->param_stage);
	ir_free(ts->aside);
	ir_free(ts->aside_why);
	memset(ts, 0, sizeof *ts);
}
