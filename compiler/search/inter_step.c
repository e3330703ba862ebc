/*
 * inter_step.c: what the lowering of a pipelined training plan allocates
 * per micro-batch, per layer, measured on the real train step, for the
 * inter-op pass's memory check (inter.c).
 *
 * The intra-op pass charges a layer the activations an ideal backend keeps
 * (cost_saved.c: cheap elementwise results and views recomputed, values
 * of the parameters alone kept once, 16-bit copies). The lowering keeps
 * what the train step's backward nodes read: every forward value they
 * read gets a slot per micro-batch in flight (lower_mem.c's stash), in
 * the dtype the step computes it in (softmax and layer norm in f32 under
 * mixed precision, each weight's 16-bit copy). On gpt_loss the ideal is a
 * third of that, on GPT-3 125M about 0.4. So the search builds the step
 * once per micro-batch size, with each forward node tagged by its layer
 * (train_build carries tags to the backward nodes, as for stages), and
 * measures in global bytes per layer x:
 *   own[x]    forward values whose first backward reader is in layer x;
 *   cross[x]  forward values first read by an earlier layer's backward
 *             and also by layer x's or a later one's: a stage starting at
 *             x holds them too (received, or computed again there);
 *   work[x]   the most bytes of other per-micro-batch temporaries live at
 *             a node of layer x, walking the step in order (the gradients
 *             in flight, a layer's working set);
 *   model[x]  the ideal's kept bytes as the layer's own intra-op solve
 *             counts them (values it makes or reads that cost_saved keeps);
 *   upd[x]    the most temporaries live while the once-per-step update of
 *             layer x's parameters runs (new values, each written back
 *             right after the last read of the old one, and the update's
 *             own intermediates: a few times the largest parameter);
 *   state[x]  the parameter, gradient and optimizer bytes of those
 *             parameters, unsharded, as inter_cost.c counts them;
 *   shared[x] values of the parameters alone (a weight's 16-bit copy or
 *             transpose) whose first backward reader is in layer x: the
 *             same in every micro-batch, so lowering keeps one copy
 *             (plan_invariant_instr), not one per micro-batch in flight.
 * inter.c scales these to one device of a (layer, mesh) by the solve's
 * own ratios mem_act / model[x] and mem_state / state[x], the fractions of
 * the layer's kept activations and state one device holds under its
 * sharding.
 */
#include <errno.h>
#include <string.h>

#include "compiler/search/inter_internal.h"

void inter_step_mem_free(struct inter_step_mem *m)
{
	ir_free(m->own);
	memset(m, 0, sizeof *m);
}

/* model[x] from forward graph g: the saved values (intra_saved_values)
 * that layer x makes or reads, at elem_bytes per float element. */
static int model_kept(const struct ir_graph *g, const struct cluster_result *cl, int elem_bytes, double *model)
{
	bool *saved = intra_saved_values(g);
	int nv = ir_graph_nvalues(g);
	int *seen = ir_malloc(sizeof *seen * (size_t)(nv + 1));
	if (!saved || !seen) {
		ir_free(saved);
		ir_free(seen);
		return -ENOMEM;
	}
	for (int v = 0; v < nv; v++)
		seen[v] = -1;
	for (int x = 0; x < cl->nlayers; x++)
		for (int i = cl->first[x]; i < cl->first[x + 1]; i++) {
			const struct ir_node *n = ir_graph_node(g, i);
			for (int j = 0; j < n->nin + n->nout; j++) {
				const struct ir_value *v = j < n->nin ? n->in[j] : n->out[j - n->nin];
				if (!saved[v->id] || seen[v->id] == x)
					continue;
				seen[v->id] = x;
				model[x] += cost_value_bytes(v, elem_bytes);
			}
		}
	ir_free(saved);
	ir_free(seen);
	return 0;
}

static double value_bytes(const struct ir_value *v)
{
	return (double)ir_shape_numel(&v->shape) * (double)ir_dtype_size(v->dtype);
}

/* own, cross and work (file comment) of train step ts over L layers. */
static int measure(const struct train_step *ts, int L, const struct cost_state_bytes *st, struct inter_step_mem *m)
{
	const struct ir_graph *g = ts->g;
	int nv = ir_graph_nvalues(g), nn = ts->update_first;
	bool *dyn = cost_dynamic_values(g), *act = cost_activation_values(g);
	int *lo = ir_malloc(sizeof *lo * (size_t)(nv + 1) * 4);
	if (!dyn || !act || !lo) {
		ir_free(dyn);
		ir_free(act);
		ir_free(lo);
		return -ENOMEM;
	}
	int *hi = lo + nv, *last = hi + nv, *grad = last + nv;
	for (int v = 0; v < nv; v++)
		lo[v] = hi[v] = last[v] = -1, grad[v] = 0;
	/* a parameter's gradient is added into its accumulator as soon as it
	 * is complete (lower_train.c): a bound buffer, no temporary */
	for (int i = 0; i < ts->nparams; i++)
		grad[ts->grads[i]->id] = 1;
	/* readers: the backward's layers (lo..hi) per forward value, and
	 * every value's last reader before the update */
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++) {
			const struct ir_value *v = n->in[j];
			last[v->id] = i;
			bool fwd = v->kind == IR_VAL_NODE ? v->def->id < ts->bwd_first : v->kind == IR_VAL_INPUT;
			if (i < ts->bwd_first || !fwd || !dyn[v->id] || n->tag < 0 || n->tag >= L)
				continue;
			if (lo[v->id] < 0 || n->tag < lo[v->id])
				lo[v->id] = n->tag;
			if (n->tag > hi[v->id])
				hi[v->id] = n->tag;
		}
	}
	for (int v = 0; v < nv; v++) {
		if (lo[v] < 0)
			continue;
		double b = value_bytes(ir_graph_value(g, v));
		if (!act[v]) { /* the same in every micro-batch: one copy */
			m->shared[lo[v]] += b;
			continue;
		}
		m->own[lo[v]] += b;
		for (int x = lo[v] + 1; x <= hi[v]; x++)
			m->cross[x] += b;
	}
	/* the other temporaries, live from their node to their last reader
	 * (the update's: to its last reader there) */
	for (int i = nn; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nin; j++)
			last[n->in[j]->id] = i;
	}
	double live = 0;
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		if (i == nn)
			live = 0; /* the step part starts with bound buffers alone */
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nout; j++) {
			const struct ir_value *v = n->out[j];
			if (dyn[v->id] && lo[v->id] < 0 && last[v->id] >= 0 && !grad[v->id])
				live += value_bytes(v);
		}
		double *peak = i < nn ? m->work : m->upd;
		if (n->tag >= 0 && n->tag < L && live > peak[n->tag])
			peak[n->tag] = live;
		for (int j = 0; j < n->nin + n->nout; j++) {
			const struct ir_value *v = j < n->nin ? n->in[j] : n->out[j - n->nin];
			if (v->kind == IR_VAL_NODE && dyn[v->id] && lo[v->id] < 0 && last[v->id] == i && !grad[v->id]) {
				live -= value_bytes(v);
				last[v->id] = -2; /* once, even when read twice */
			}
		}
	}
	for (int i = 0; i < ts->nparams; i++) {
		int x = ts->param_stage ? ts->param_stage[i] : 0;
		if (x >= 0 && x < L)
			m->state[x] += (double)ir_shape_numel(&ts->params[i]->shape) *
				       (st->params + st->grads + st->optim);
	}
	ir_free(dyn);
	ir_free(act);
	ir_free(lo);
	return 0;
}

int inter_step_measure(const struct inter_env *env, const struct inter_opts *o, int64_t b, int micro,
		       const struct ir_graph *g, const struct cluster_result *cl, struct inter_step_mem *m)
{
	int L = cl->nlayers, rc;
	memset(m, 0, sizeof *m);
	if (!(m->own = ir_calloc((size_t)L * 7 + 1, sizeof *m->own)))
		return ir_errorf(-ENOMEM, "out of memory measuring the train step");
	m->cross = m->own + L;
	m->work = m->cross + L;
	m->model = m->work + L;
	m->upd = m->model + L;
	m->state = m->upd + L;
	m->shared = m->state + L;
	m->nlayers = L;
	int elem = env->elem_scale < 0.75 ? 2 : 4;
	if ((rc = model_kept(g, cl, elem, m->model)) < 0) {
		inter_step_mem_free(m);
		return ir_errorf(rc, "out of memory measuring the train step");
	}
	struct ir_graph *w = o->load(o->ctx, b);
	if (!w) {
		inter_step_mem_free(m);
		return ir_error_code() ? ir_error_code() : -EINVAL;
	}
	for (int x = 0; x < L; x++)
		for (int i = cl->first[x]; i < cl->first[x + 1]; i++)
			ir_graph_node(w, i)->tag = x;
	struct train_opts to;
	train_opts_init(&to);
	to.compute = elem == 2 ? (env->prec == COST_PREC_F16 ? IR_F16 : IR_BF16) : IR_F32;
	to.grad_scale = 1.0 / micro;
	struct train_step ts;
	memset(&ts, 0, sizeof ts);
	rc = train_build(w, &to, &ts);
	if (rc == 0)
		rc = measure(&ts, L, &env->state, m);
	train_step_free(&ts);
	if (rc == -ENOMEM) {
		inter_step_mem_free(m);
		return ir_errorf(rc, "out of memory measuring the train step");
	}
	if (rc < 0) { /* a step the defaults cannot build (a loss to name): the ideal alone */
		inter_step_mem_free(m);
		ir_error_clear();
	}
	return 0;
}
