/*
 * train_optim.c: the once-per-step part of the train step, as graph nodes:
 * loss-scale handling, global gradient norm and clipping, the learning-rate
 * schedule, and the optimizer update of every trained parameter. The
 * formulas are PyTorch's (torch.optim.SGD/Adam/AdamW,
 * clip_grad_norm_, GradScaler), so a step can be checked against it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/train/grad_internal.h"
#include "ir/lr.h"
#include "compiler/train/train_internal.h"

static const char *const optim_names[] = { "sgd", "momentum", "nesterov", "adam", "adamw" };
static const char *const sched_names[] = { "constant", "cosine", "linear" };

int train_optim_parse(const char *s, enum train_optim *out)
{
	for (int i = 0; i < (int)(sizeof optim_names / sizeof *optim_names); i++)
		if (!strcmp(s, optim_names[i])) {
			*out = (enum train_optim)i;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown optimizer '%s' (sgd, momentum, nesterov, adam, adamw)", s);
}

int train_sched_parse(const char *s, enum train_sched *out)
{
	for (int i = 0; i < (int)(sizeof sched_names / sizeof *sched_names); i++)
		if (!strcmp(s, sched_names[i])) {
			*out = (enum train_sched)i;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown learning-rate schedule '%s' (constant, cosine, linear)", s);
}

static double weight_decay(const struct train_opts *o);

void train_opts_str(const struct train_opts *o, char *buf, size_t n)
{
	char opt[96] = "";
	if (o->optim == TRAIN_MOMENTUM || o->optim == TRAIN_NESTEROV)
		snprintf(opt, sizeof opt, " momentum=%g", o->momentum);
	else if (o->optim == TRAIN_ADAM || o->optim == TRAIN_ADAMW)
		snprintf(opt, sizeof opt, " betas=%g,%g eps=%g", o->beta1, o->beta2, o->eps);
	snprintf(buf, n,
		 "%s lr=%g%s weight_decay=%g clip_norm=%g schedule=%s warmup=%lld total=%lld min_lr=%g "
		 "precision=%s%s%s%s",
		 optim_names[o->optim], o->lr, opt, weight_decay(o), o->clip_norm, sched_names[o->sched],
		 (long long)o->warmup, (long long)o->total, o->min_lr, ir_dtype_name(o->compute),
		 o->skip_nonfinite ? " skip_nonfinite" : "", o->loss ? " loss=" : "", o->loss ? o->loss : "");
}

static double weight_decay(const struct train_opts *o)
{
	if (o->weight_decay >= 0)
		return o->weight_decay;
	return o->optim == TRAIN_ADAMW ? 0.01 : 0;
}

int train_check_opts(const struct train_opts *o)
{
	struct {
		const char *name;
		double v, lo;
		bool open_hi;
		double hi;
	} c[] = {
		{ "momentum", o->momentum, 0, true, 1 },
		{ "beta1", o->beta1, 0, true, 1 },
		{ "beta2", o->beta2, 0, true, 1 },
		{ "eps", o->eps, 0, false, INFINITY },
		{ "clip norm", o->clip_norm, 0, false, INFINITY },
		{ "min lr", o->min_lr, 0, false, INFINITY },
		{ "loss scale", o->loss_scale, 0, false, INFINITY },
	};
	if (!(o->lr > 0) || !isfinite(o->lr))
		return ir_errorf(-EINVAL, "learning rate %g must be positive and finite", o->lr);
	for (size_t i = 0; i < sizeof c / sizeof *c; i++)
		if (!isfinite(c[i].v) || c[i].v < c[i].lo || (c[i].open_hi && c[i].v >= c[i].hi))
			return ir_errorf(-EINVAL, "%s %g is not a finite number in range", c[i].name, c[i].v);
	if (!isfinite(o->weight_decay))
		return ir_errorf(-EINVAL, "weight decay %g is not a finite number", o->weight_decay);
	if (o->warmup < 0 || o->total < 0 || (o->sched != TRAIN_LR_CONSTANT && o->total <= o->warmup))
		return ir_errorf(-EINVAL, "schedule: need 0 <= warmup (%lld) < total steps (%lld)",
				 (long long)o->warmup, (long long)o->total);
	if (o->compute != IR_F32 && o->compute != IR_F64 && o->compute != IR_BF16 && o->compute != IR_F16)
		return ir_errorf(-EINVAL, "compute precision %s: expected f32, bf16, f16 or f64",
				 ir_dtype_name(o->compute));
	if (o->accum < 1 || o->scale_window < 1)
		return ir_errorf(-EINVAL, "micro-batches and the loss-scale window must be >= 1");
	return 0;
}

double train_lr_at(const struct train_opts *o, int64_t t)
{
	struct ir_lr s = { o->sched == TRAIN_LR_COSINE   ? IR_LR_COSINE
			   : o->sched == TRAIN_LR_LINEAR ? IR_LR_LINEAR
							 : IR_LR_CONSTANT,
			   o->lr, o->warmup, o->total, o->min_lr };
	return ir_lr_at(&s, t);
}

/* The same schedule as nodes, on the step t (a scalar of the master dtype). */
static struct ir_value *lr_node(struct gb *b, const struct train_opts *o, struct ir_value *t)
{
	struct ir_value *lr = gb_like(b, t, o->lr);
	if (o->sched != TRAIN_LR_CONSTANT) {
		double span = (double)(o->total - o->warmup);
		struct ir_value *p = gb_scale(b, gb_offset(b, t, -(double)o->warmup), 1 / span);
		p = gb_bin(b, IR_OP_MIN, gb_bin(b, IR_OP_MAX, p, gb_like(b, t, 0)), gb_like(b, t, 1));
		struct ir_value *f;
		if (o->sched == TRAIN_LR_COSINE)
			f = gb_scale(b, gb_offset(b, gb_un(b, IR_OP_COS, gb_scale(b, p, M_PI)), 1), 0.5);
		else
			f = gb_bin(b, IR_OP_SUB, gb_like(b, t, 1), p);
		lr = gb_offset(b, gb_scale(b, f, o->lr - o->min_lr), o->min_lr);
	}
	if (o->warmup > 0) {
		struct ir_value *warm = gb_scale(b, gb_offset(b, t, 1), o->lr / (double)o->warmup);
		struct ir_value *in_warmup = gb_bin(b, IR_OP_LT, t, gb_like(b, t, (double)o->warmup));
		lr = gb_select(b, in_warmup, warm, lr);
	}
	return lr;
}

int train_add_state(struct train_step *ts, const char *name, enum ir_dtype t, const struct ir_shape *s,
		    struct ir_value **out)
{
	struct ir_value **grown = ir_realloc(ts->state, (size_t)(ts->nstate + 1) * sizeof *grown);
	if (!grown)
		return ir_errorf(-ENOMEM, "out of memory adding optimizer state");
	ts->state = grown;
	struct ir_value *v = ir_graph_add_input(ts->g, name, t, s);
	if (!v)
		return ir_error_code() ? ir_error_code() : -ENOMEM;
	ts->state[ts->nstate++] = v;
	*out = v;
	return 0;
}

/* x broadcast from a scalar to like's shape. */
static struct ir_value *spread(struct gb *b, struct ir_value *x, const struct ir_value *like)
{
	static const struct ir_ilist none;
	return like ? gb_broadcast(b, x, &like->shape, &none) : NULL;
}

/* Gradient g unscaled by inv (f16's loss scaling), or g itself. */
static struct ir_value *unscaled(struct gb *b, struct ir_value *g, struct ir_value *inv)
{
	return inv ? gb_bin(b, IR_OP_MUL, g, spread(b, inv, g)) : g;
}

static struct ir_value *sum_all(struct gb *b, struct ir_value *x)
{
	struct ir_ilist all = { .n = x ? x->shape.rank : 0 };
	for (int i = 0; i < all.n; i++)
		all.v[i] = i;
	return gb_sum(b, x, &all);
}

/* One parameter's update. slot[]: its state inputs; nslot_out[]: their new
 * values. Returns the new parameter. */
static struct ir_value *update_param(struct gb *b, const struct train_opts *o, struct ir_value *p, struct ir_value *g,
				     struct ir_value *const *slot, struct ir_value **slot_out, struct ir_value *lr,
				     struct ir_value *t1)
{
	double wd = weight_decay(o);
	struct ir_value *lr_b = spread(b, lr, p);
	if (wd > 0 && o->optim != TRAIN_ADAMW) /* L2: added to the gradient */
		g = gb_bin(b, IR_OP_ADD, g, gb_scale(b, p, wd));
	switch (o->optim) {
	case TRAIN_SGD:
		return gb_bin(b, IR_OP_SUB, p, gb_bin(b, IR_OP_MUL, lr_b, g));
	case TRAIN_MOMENTUM:
	case TRAIN_NESTEROV: {
		struct ir_value *buf = gb_bin(b, IR_OP_ADD, gb_scale(b, slot[0], o->momentum), g);
		slot_out[0] = buf;
		if (o->optim == TRAIN_NESTEROV)
			buf = gb_bin(b, IR_OP_ADD, g, gb_scale(b, buf, o->momentum));
		return gb_bin(b, IR_OP_SUB, p, gb_bin(b, IR_OP_MUL, lr_b, buf));
	}
	case TRAIN_ADAM:
	case TRAIN_ADAMW: {
		if (o->optim == TRAIN_ADAMW && wd > 0) /* decoupled: p (1 - lr wd) */
			p = gb_bin(b, IR_OP_SUB, p, gb_bin(b, IR_OP_MUL, gb_scale(b, lr_b, wd), p));
		struct ir_value *m = gb_bin(b, IR_OP_ADD, gb_scale(b, slot[0], o->beta1), gb_scale(b, g, 1 - o->beta1));
		struct ir_value *v = gb_bin(b, IR_OP_ADD, gb_scale(b, slot[1], o->beta2),
					    gb_scale(b, gb_bin(b, IR_OP_MUL, g, g), 1 - o->beta2));
		slot_out[0] = m;
		slot_out[1] = v;
		/* step = lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps) */
		struct ir_value *bc1 = gb_bin(b, IR_OP_SUB, gb_like(b, t1, 1),
					      gb_bin(b, IR_OP_POW, gb_like(b, t1, o->beta1), t1));
		struct ir_value *bc2 = gb_bin(b, IR_OP_SUB, gb_like(b, t1, 1),
					      gb_bin(b, IR_OP_POW, gb_like(b, t1, o->beta2), t1));
		struct ir_value *denom = gb_offset(b,
						   gb_bin(b, IR_OP_DIV, gb_un(b, IR_OP_SQRT, v),
							  spread(b, gb_un(b, IR_OP_SQRT, bc2), p)),
						   o->eps);
		struct ir_value *size = spread(b, gb_bin(b, IR_OP_DIV, lr, bc1), p);
		return gb_bin(b, IR_OP_SUB, p, gb_bin(b, IR_OP_MUL, size, gb_bin(b, IR_OP_DIV, m, denom)));
	}
	}
	return NULL;
}

static int nslots(enum train_optim o)
{
	return o == TRAIN_SGD ? 0 : o == TRAIN_MOMENTUM || o == TRAIN_NESTEROV ? 1 : 2;
}

/* Pipelined steps: what follows belongs to parameter i's stage, or is
 * a global scalar every stage computes. */
static void param_tag(struct gb *b, const struct train_step *ts, int i)
{
	b->tagged = ts->nstages > 0;
	b->tag = ts->nstages ? ts->param_stage[i] : IR_TAG_NONE;
}

static void global_tag(struct gb *b, const struct train_step *ts)
{
	b->tagged = ts->nstages > 0;
	b->tag = IR_TAG_ALL;
}

int train_update(struct train_step *ts, const struct train_opts *o)
{
	struct ir_graph *g = ts->g;
	struct gb b = { .g = g, .name = "update" };
	enum ir_dtype dt = ts->params[0]->dtype;
	int ns = nslots(o->optim), nstate0 = ts->nstate, rc = 0;
	static const char *const slot_names[3][2] = { { NULL, NULL }, { "momentum", NULL }, { "adam_m", "adam_v" } };
	/* State inputs: one or two slots per parameter. */
	for (int i = 0; i < ts->nparams && rc == 0; i++)
		for (int s = 0; s < ns && rc == 0; s++) {
			char name[512];
			struct ir_value *v;
			snprintf(name, sizeof name, "%s.%s", ts->params[i]->name ? ts->params[i]->name : "param",
				 slot_names[ns][s]);
			rc = train_add_state(ts, name, dt, &ts->params[i]->shape, &v);
		}
	if (rc < 0)
		return rc;
	global_tag(&b, ts);
	struct ir_value *step = ts->state[0], *scale = NULL, *good = NULL;
	if (o->compute == IR_F16) {
		scale = ts->state[1];
		good = ts->state[2];
	}
	struct ir_value *t = gb_convert(&b, step, dt), *t1 = gb_offset(&b, t, 1);
	struct ir_value **out = ir_calloc((size_t)(ts->nparams + ts->nstate), sizeof *out);
	if (!out) {
		rc = -ENOMEM;
		goto done;
	}
	struct ir_value *inv = scale ? gb_un(&b, IR_OP_RECIP, gb_convert(&b, scale, dt)) : NULL;
	/* The squared norm: per pipeline stage a partial sum over its own
	 * parameters, then the stages' sums, which every stage adds up alike. */
	int nparts = ts->nstages ? ts->nstages : 1;
	struct ir_value **part = ir_calloc((size_t)nparts, sizeof *part), *sumsq = NULL;
	if (!part) {
		rc = -ENOMEM;
		goto done;
	}
	/* the unscaled gradient, made here for the norm and again right before
	 * its update (the same op on the same values: the same numbers), so
	 * that no parameter's is held while the others' are made */
	for (int i = 0; i < ts->nparams; i++) {
		int s = ts->nstages ? ts->param_stage[i] : 0;
		param_tag(&b, ts, i);
		struct ir_value *g1 = unscaled(&b, ts->grads[i], inv);
		part[s] = gb_accumulate(&b, part[s], sum_all(&b, gb_bin(&b, IR_OP_MUL, g1, g1)));
	}
	global_tag(&b, ts);
	for (int s = 0; s < nparts; s++)
		sumsq = gb_accumulate(&b, sumsq, part[s]);
	ir_free(part);
	struct ir_value *norm = gb_un(&b, IR_OP_SQRT, sumsq);
	struct ir_value *coef = NULL;
	if (o->clip_norm > 0) {
		coef = gb_bin(&b, IR_OP_DIV, gb_like(&b, norm, o->clip_norm), gb_offset(&b, norm, 1e-6));
		coef = gb_bin(&b, IR_OP_MIN, coef, gb_like(&b, norm, 1));
	}
	struct ir_value *lr = lr_node(&b, o, t);
	/* finite: the step is taken (always, unless f16 gradients overflowed
	 * or skip_nonfinite asks to skip a non-finite gradient norm). */
	struct ir_value *finite = NULL;
	if (scale || o->skip_nonfinite)
		finite = gb_un(&b, IR_OP_NOT,
			       gb_bin(&b, IR_OP_OR, gb_un(&b, IR_OP_IS_NAN, sumsq), gb_un(&b, IR_OP_IS_INF, sumsq)));
	int first_slot = nstate0;
	for (int i = 0; i < ts->nparams; i++) {
		struct ir_value *const *slot = &ts->state[first_slot + i * ns];
		struct ir_value **slot_out = &out[ts->nparams + first_slot + i * ns];
		struct ir_value *p = ts->params[i];
		param_tag(&b, ts, i);
		struct ir_value *gi = unscaled(&b, ts->grads[i], inv);
		if (coef)
			gi = gb_bin(&b, IR_OP_MUL, gi, spread(&b, coef, gi));
		out[i] = update_param(&b, o, p, gi, slot, slot_out, lr, t1);
		if (finite) {
			struct ir_value *ok = spread(&b, finite, p);
			out[i] = gb_select(&b, ok, out[i], p);
			for (int s = 0; s < ns; s++)
				slot_out[s] = gb_select(&b, ok, slot_out[s], slot[s]);
		}
	}
	global_tag(&b, ts);
	struct ir_value **sout = &out[ts->nparams];
	sout[0] = gb_offset(&b, step, 1);
	if (finite) /* a skipped step is not counted */
		sout[0] = gb_select(&b, finite, sout[0], step);
	if (scale) {
		/* GradScaler: halve on overflow (and keep the step); double after
		 * scale_window good steps in a row. */
		struct ir_value *g1 = gb_offset(&b, good, 1);
		struct ir_value *grow = gb_bin(&b, IR_OP_GE, g1, gb_like(&b, good, (double)o->scale_window));
		sout[1] = gb_select(&b, finite, gb_select(&b, grow, gb_scale(&b, scale, 2), scale),
				    gb_scale(&b, scale, 0.5));
		sout[2] = gb_select(&b, finite, gb_select(&b, grow, gb_like(&b, good, 0), g1), gb_like(&b, good, 0));
	}
	rc = b.err;
	if (rc < 0)
		goto done;
	ir_graph_clear_outputs(g);
	rc = ir_graph_add_output(g, ts->loss, "loss");
	if (rc == 0)
		rc = ir_graph_add_output(g, gb_convert(&b, norm, IR_F32), "grad_norm");
	for (int i = 0; rc == 0 && i < ts->nparams + ts->nstate; i++) {
		struct ir_value *v = i < ts->nparams ? ts->params[i] : ts->state[i - ts->nparams];
		rc = ir_graph_add_output(g, out[i], v->name);
	}
	for (int i = 0; rc == 0 && i < ir_graph_nupdates(g); i++)
		rc = ir_graph_add_output(g, ir_graph_update_value(g, i), ir_graph_update_param(g, i)->name);
	if (rc == 0)
		rc = b.err;
done:
	ir_free(out);
	return rc;
}

/* Every element's start value of state input v. */
static double state_start(const struct ir_value *v, const struct train_opts *o)
{
	return v->name && !strcmp(v->name, "train.loss_scale") ? o->loss_scale : 0;
}

void train_state_start(const struct train_step *ts, const struct train_opts *o, double *start)
{
	for (int i = 0; i < ts->nstate; i++)
		start[i] = state_start(ts->state[i], o);
}

void train_step_ties(const struct train_step *ts, int (*ties)[2])
{
	for (int i = 0; i < ts->nparams + ts->nstate; i++) {
		ties[i][0] = ir_graph_output(ts->g, 2 + i)->id;
		ties[i][1] = i < ts->nparams ? ts->params[i]->id : ts->state[i - ts->nparams]->id;
	}
}

int train_state_init(const struct train_step *ts, const struct train_opts *o, struct ir_tensor *state)
{
	for (int i = 0; i < ts->nstate; i++)
		state[i].data = NULL;
	for (int i = 0; i < ts->nstate; i++) {
		const struct ir_value *v = ts->state[i];
		int rc = ir_tensor_alloc(&state[i], v->dtype, &v->shape);
		if (rc < 0) {
			while (i-- > 0)
				ir_tensor_free(&state[i]);
			return rc;
		}
		double x = state_start(v, o);
		for (int64_t e = 0; x != 0 && e < ir_shape_numel(&v->shape); e++)
			ir_tensor_set_f64(&state[i], e, x);
	}
	return 0;
}
