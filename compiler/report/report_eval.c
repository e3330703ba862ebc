/*
 * report_eval.c: one training step of a manual plan under the cost model.
 *
 * For a micro-batch size b the model is imported with its batch dim bound
 * to b, laid out over tp ranks by the intra-op pass (report_tp.c), and
 * costed per node:
 *  - compute: the roofline of each op on its local shapes; chains of
 *    elementwise ops count as one fused kernel (only the bytes crossing the
 *    chain's boundary move); backward costs twice the forward (two dots per
 *    dot), recomputation once more;
 *  - activations kept for backward: what each op's gradient needs (a dot
 *    both operands, softmax its output, layer norm its input, ...), with
 *    cheap elementwise chains recomputed rather than kept when that saves
 *    memory; on a GPT layer this is Korthikanti et al.'s 32sbh + 2as^2b
 *    bytes (their 34sbh + 5as^2b without dropout);
 *  - stages: contiguous node ranges cut only where a single activation is
 *    live (layer boundaries), balanced by the automatic planner's stage DP
 *    (solvers/stage_dp.c) held to the plan's stage count, which minimizes
 *    the slowest stage; the activation crossing a cut is sent to the next
 *    stage.
 * Then the schedule gives the pipeline time, the data-parallel gradient
 * synchronization overlaps the last micro-batch's backward, the optimizer
 * update is memory-bound, and memory per device adds training state
 * (ZeRO), activations in flight, transfer buffers and workspace.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/report/report_internal.h"
#include "solvers/solvers.h"

struct eval {
	const struct ir_graph *g;
	const struct report_plan *p;
	const struct cost_calib *cal;
	struct report *r;
	struct tp_result tp;
	struct cost_axis ax_tp, ax_dp, ax_pp;
	int eb; /* activation element bytes */
	int nn;
	double *t_node;  /* [nn] forward compute, s */
	bool *dyn;       /* [nvalues] depends on an input or a parameter */
	bool *act;       /* [nvalues] depends on an input (differs per micro-batch) */
	bool *stored;    /* [nvalues] written to memory (not fused away) */
	int *need_first; /* [nn + 1] CSR: values node i's backward keeps */
	int *need;
	double *cross; /* [nn + 1] bytes of gradient-carrying activations live at position k */
	int *ncross;
	int *mark; /* [nvalues] scratch for dedup */
	int mark_id;
	int *cand; /* candidate cut positions, 0 and nn included */
	int ncand;
	const double *bs_fwd, *bs_bwd; /* [nn] batch statistics' all-reduce bytes, or NULL */
};

/* ---- compute per node (fused elementwise chains) ------------------------ */

static enum cost_prec op_prec(const struct eval *e, const struct ir_node *n)
{
	if ((ir_op_flags(n->op) & IR_OPF_HEAVY) && ir_dtype_is_float(n->out[0]->dtype))
		return e->r->prec;
	return n->out[0]->dtype == IR_F64 ? COST_PREC_F64 : COST_PREC_F32;
}

static double node_flops(const struct eval *e, const struct ir_node *n)
{
	double f = ir_node_flops(n);
	return f * e->tp.work[n->id];
}

static int compute_times(struct eval *e)
{
	const struct ir_graph *g = e->g;
	int nv = ir_graph_nvalues(g);
	/* uses: bit 1 read in registers by a node of its chain, bit 2 from
	 * memory (by another node, or an output), bit 4 by something other
	 * than a dot (or an output) */
	int *use = ir_calloc((size_t)nv + 1, sizeof *use);
	uint32_t *fused_in = cost_fused_reads(g);
	if (!use || !fused_in) {
		ir_free(use);
		ir_free(fused_in);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < e->nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int k = 0; k < n->nin; k++)
			use[n->in[k]->id] |= (cost_read_fused(fused_in, i, k) ? 1 : 2) | (n->op != IR_OP_DOT ? 4 : 0);
	}
	for (int i = 0; i < ir_graph_noutputs(g); i++)
		use[ir_graph_output(g, i)->id] |= 2 | 4;
	for (int i = 0; i < e->nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		enum cost_class cls = cost_op_class(n->op);
		double flops = node_flops(e, n), bytes = 0;
		if (!cost_op_fusable(n->op)) {
			if (cost_transpose_folds(n) && !(use[n->out[0]->id] & 4))
				continue; /* never written: the dots reading it take their operand transposed */
			for (int k = 0; k < n->nout; k++)
				e->stored[n->out[k]->id] = true;
			for (int k = 0; k < n->nin; k++)
				bytes += tp_local_bytes(&e->tp, n->in[k], e->eb);
			for (int k = 0; k < n->nout; k++)
				bytes += tp_local_bytes(&e->tp, n->out[k], e->eb);
			e->t_node[i] = cost_roofline(&e->r->dev, e->cal, cls, op_prec(e, n), flops, bytes);
			continue;
		}
		/* in a chain: read what comes from outside it, write what leaves it */
		for (int k = 0; k < n->nin; k++) {
			const struct ir_value *v = n->in[k];
			bool inside = cost_read_fused(fused_in, i, k);
			if (!inside && e->dyn[v->id])
				bytes += tp_local_bytes(&e->tp, v, e->eb);
		}
		for (int k = 0; k < n->nout; k++)
			if (use[n->out[k]->id] & 2) {
				bytes += tp_local_bytes(&e->tp, n->out[k], e->eb);
				e->stored[n->out[k]->id] = cls != COST_CLASS_FREE;
			}
		if (cls == COST_CLASS_FREE && bytes == 0)
			continue;
		if (cls == COST_CLASS_FREE)
			cls = COST_CLASS_ELEMENTWISE; /* a view feeding a kernel: its bytes are the kernel's */
		/* one launch per chain: charge the overhead at the chain's end only */
		double t = cost_roofline(&e->r->dev, e->cal, cls, op_prec(e, n), flops, bytes);
		bool end = false;
		for (int k = 0; k < n->nout; k++)
			end |= (use[n->out[k]->id] & 2) != 0;
		if (!end && t > 0)
			t -= e->cal->cls[cls].overhead;
		e->t_node[i] = t > 0 ? t : 0;
	}
	ir_free(use);
	ir_free(fused_in);
	return 0;
}

/* ---- what backward keeps ------------------------------------------------- */

static int push_need(struct eval *e, int *n, int *cap, int v)
{
	if (*n == *cap) {
		int c2 = *cap ? 2 * *cap : 1024;
		int *p = ir_realloc(e->need, (size_t)c2 * sizeof *p);
		if (!p)
			return ir_errorf(-ENOMEM, "out of memory");
		e->need = p;
		*cap = c2;
	}
	e->need[(*n)++] = v;
	return 0;
}

/* What cost_backward_keeps's callbacks share (its one arg). */
struct need_acc {
	struct eval *e;
	int cnt, cap;
};

static double eval_bytes(const struct ir_value *v, void *arg)
{
	const struct need_acc *a = arg;
	return tp_local_bytes(&a->e->tp, v, a->e->eb);
}

static int eval_keep(const struct ir_value *v, void *arg)
{
	struct need_acc *a = arg;
	return push_need(a->e, &a->cnt, &a->cap, v->id);
}

static int compute_needs(struct eval *e)
{
	struct need_acc acc = { e, 0, 0 };
	struct cost_keep c = { e->act, eval_bytes, eval_keep, &acc };
	int rc;
	e->need_first = ir_calloc((size_t)e->nn + 1, sizeof *e->need_first);
	if (!e->need_first)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int i = 0; i < e->nn; i++) {
		const struct ir_node *n = ir_graph_node(e->g, i);
		unsigned gmask = 0;
		for (int k = 0; k < n->nin && k < 8; k++)
			if (e->tp.grad[n->in[k]->id])
				gmask |= 1u << k;
		e->need_first[i] = acc.cnt;
		if ((rc = cost_backward_keeps(&c, n, gmask)) < 0)
			return rc;
	}
	e->need_first[e->nn] = acc.cnt;
	return 0;
}

/* Bytes kept per micro-batch by the backward of nodes [a, b), each value once. */
static double kept_bytes(struct eval *e, int a, int b)
{
	double s = 0;
	e->mark_id++;
	for (int i = a; i < b; i++)
		for (int j = e->need_first[i]; j < e->need_first[i + 1]; j++) {
			int v = e->need[j];
			if (e->mark[v] == e->mark_id)
				continue;
			e->mark[v] = e->mark_id;
			s += tp_local_bytes(&e->tp, ir_graph_value(e->g, v), e->eb);
		}
	return s;
}

/* ---- layer boundaries ----------------------------------------------------- */

static int compute_cuts(struct eval *e)
{
	const struct ir_graph *g = e->g;
	int nv = ir_graph_nvalues(g), nn = e->nn;
	int *last = ir_malloc(((size_t)nv + 1) * sizeof *last);
	e->cross = ir_calloc((size_t)nn + 2, sizeof *e->cross);
	e->ncross = ir_calloc((size_t)nn + 2, sizeof *e->ncross);
	e->cand = ir_malloc(((size_t)nn + 2) * sizeof *e->cand);
	if (!last || !e->cross || !e->ncross || !e->cand) {
		ir_free(last);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < nv; i++)
		last[i] = -1;
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int k = 0; k < n->nin; k++)
			last[n->in[k]->id] = i;
	}
	for (int i = 0; i < ir_graph_noutputs(g); i++)
		last[ir_graph_output(g, i)->id] = nn;
	/* difference arrays over positions k (before node k) */
	for (int i = 0; i < nv; i++) {
		const struct ir_value *v = ir_graph_value(g, i);
		if (v->kind != IR_VAL_NODE || !e->tp.grad[i] || last[i] <= v->def->id)
			continue;
		int a = v->def->id + 1, b = last[i]; /* crossing positions a..b */
		double by = tp_local_bytes(&e->tp, v, e->eb);
		e->cross[a] += by;
		e->cross[b + 1] -= by;
		e->ncross[a]++;
		e->ncross[b + 1]--;
	}
	for (int k = 1; k <= nn + 1; k++) {
		e->cross[k] += e->cross[k - 1];
		e->ncross[k] += e->ncross[k - 1];
	}
	e->ncand = 0;
	e->cand[e->ncand++] = 0;
	for (int k = 1; k < nn; k++)
		if (e->ncross[k] == 1)
			e->cand[e->ncand++] = k;
	e->cand[e->ncand++] = nn;
	ir_free(last);
	return 0;
}

/* ---- stages --------------------------------------------------------------- */

static double range_time(const struct eval *e, const double *pre, int a, int b)
{
	return pre[b] - pre[a];
}

/* Splits the node range into s contiguous chunks at the layer boundaries
 * with the stage DP (solvers/stage_dp.c): the layers are its layers, every
 * chunk is a stage on a sub-mesh of one device, s devices in all. The
 * chunks' forward times add up to the same whole whatever the split, so
 * the DP's step time, sum + (B - 1) x slowest, is least where the slowest
 * chunk is (B at least 2 for that). bounds[0..s]. As in the automatic
 * planner, a chunk holds at least one layer (a piece between two cuts). */
static int partition(struct eval *e, int s, const double *pre, int *bounds)
{
	const int *cand = e->cand, nc = e->ncand;
	const struct report_plan *p = e->p;
	if (nc - 1 < s)
		return ir_errorf(-EINVAL,
				 "plan pp=%d%s: %d pipeline chunks, but the model splits into at most %d pieces "
				 "(cuts fall where one activation is live); a chunk holds at least one piece",
				 p->pp, s > p->pp ? " with interleaving" : "", s, nc - 1);
	int L = nc - 1, one = 1, rc;
	double *t = ir_malloc((size_t)L * L * sizeof *t);
	if (!t)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int l = 0; l < L; l++)
		for (int r = 0; r < L; r++)
			t[(size_t)l * L + r] = r < l ? INFINITY : range_time(e, pre, cand[l], cand[r + 1]);
	struct stage_dp_problem q = {
		.nlayers = L,
		.nmeshes = 1,
		.mesh_devices = &one,
		.nconfigs = 1,
		.ndevices = s,
		.nmicro = e->r->mb > 1 ? e->r->mb : 2,
		.t = t,
		.max_stages = s,
		.min_stages = s,
	};
	struct stage_dp_result res;
	if ((rc = stage_dp_solve(&q, &res)) < 0) {
		rc = ir_errorf(rc, "%s", shard_error());
	} else {
		for (int k = 0; k < s; k++)
			bounds[k] = cand[res.stages[k].first];
		bounds[s] = e->nn;
	}
	stage_dp_result_free(&res);
	ir_free(t);
	return rc;
}

/* Collectives of nodes [a, b): per micro-batch into st, once per step
 * (weights' gradients over the tp ranks) into *t_step. */
static void tp_range(const struct eval *e, int a, int b, struct report_stage *st, double *t_step)
{
	for (int i = a; e->bs_fwd && i < b; i++)
		if (e->bs_fwd[i] > 0) {
			st->t_bs_fwd += cost_collective(&e->ax_dp, COST_ALL_REDUCE, e->bs_fwd[i], NULL);
			st->t_bs_bwd += e->bs_bwd[i] > 0
						? cost_collective(&e->ax_dp, COST_ALL_REDUCE, e->bs_bwd[i], NULL)
						: 0;
			st->n_bs++;
		}
	for (int i = 0; i < e->tp.nev; i++) {
		const struct tp_event *ev = &e->tp.ev[i];
		if (ev->node < a || ev->node >= b)
			continue;
		switch (ev->phase) {
		case TP_FWD:
			st->t_tp_fwd += ev->t;
			st->n_tp_fwd++;
			break;
		case TP_BWD:
			st->t_tp_bwd += ev->t;
			st->n_tp_bwd++;
			break;
		case TP_STEP:
			*t_step += ev->t;
			break;
		}
	}
}

/* Parameters read by nodes [a, b), each once, in local elements. */
static double range_params(struct eval *e, int a, int b)
{
	double s = 0;
	e->mark_id++;
	for (int i = a; i < b; i++) {
		const struct ir_node *n = ir_graph_node(e->g, i);
		for (int k = 0; k < n->nin; k++) {
			const struct ir_value *v = n->in[k];
			if (v->kind != IR_VAL_PARAM || !ir_dtype_is_float(v->dtype) || e->mark[v->id] == e->mark_id)
				continue;
			e->mark[v->id] = e->mark_id;
			s += (double)ir_shape_numel(&v->shape) * e->tp.share[v->id];
		}
	}
	return s;
}

/* Activation bytes held per micro-batch by a chunk [a, b): everything its
 * backward keeps, or with recomputation only the inputs of its layers plus
 * one layer's worth (the one being recomputed). */
static double chunk_act(struct eval *e, int a, int b, double *peak_extra, int *layers)
{
	*layers = 1;
	*peak_extra = 0;
	if (!e->p->recompute) {
		for (int c = 0; c < e->ncand; c++)
			*layers += e->cand[c] > a && e->cand[c] < b;
		return kept_bytes(e, a, b);
	}
	double held = e->cross[a], seg_max = 0;
	int start = a;
	for (int c = 0; c < e->ncand; c++) {
		int k = e->cand[c];
		if (k <= a || k > b)
			continue;
		double seg = kept_bytes(e, start, k);
		seg_max = seg > seg_max ? seg : seg_max;
		if (k < b) {
			held += e->cross[k];
			(*layers)++;
		}
		start = k;
	}
	if (start < b) {
		double seg = kept_bytes(e, start, b);
		seg_max = seg > seg_max ? seg : seg_max;
	}
	*peak_extra = seg_max;
	return held;
}

/* The largest tensor a node of [a, b) writes: workspace for it and its gradient. */
static double largest_value(const struct eval *e, int a, int b)
{
	double m = 0;
	for (int i = a; i < b; i++) {
		const struct ir_node *n = ir_graph_node(e->g, i);
		for (int k = 0; k < n->nout; k++) {
			if (!e->stored[n->out[k]->id])
				continue; /* fused away or a view */
			double by = tp_local_bytes(&e->tp, n->out[k], e->eb);
			m = by > m ? by : m;
		}
	}
	return m;
}

static int record_events(struct eval *e, const int *bounds, int nchunks)
{
	struct report *r = e->r;
	r->events = ir_calloc((size_t)e->tp.nev + 1, sizeof *r->events);
	if (!r->events)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int i = 0; i < e->tp.nev; i++) {
		const struct tp_event *ev = &e->tp.ev[i];
		if (ev->phase == TP_STEP)
			continue; /* with the gradient sync, not per micro-batch */
		const struct ir_node *n = ir_graph_node(e->g, ev->node);
		struct report_event *o = &r->events[r->nevents++];
		int c = 0;
		while (c + 1 < nchunks && ev->node >= bounds[c + 1])
			c++;
		snprintf(o->node, sizeof o->node, "%s (%s)", n->name ? n->name : "", ir_op_name(n->op));
		o->stage = c % e->p->pp;
		o->fwd = ev->phase == TP_FWD;
		o->coll = ev->coll;
		o->bytes = ev->bytes;
		o->t = ev->t;
		o->why = ev->why;
	}
	return 0;
}

static int build_stages(struct eval *e, const double *pre)
{
	const struct report_plan *p = e->p;
	struct report *r = e->r;
	int v = p->sched == COST_SCHED_INTERLEAVED && p->pp > 1 ? p->v : 1;
	int nchunks = p->pp * v, rc;
	int *bounds = ir_malloc(((size_t)nchunks + 1) * sizeof *bounds);
	r->stages = ir_calloc((size_t)p->pp, sizeof *r->stages);
	if (!bounds || !r->stages) {
		ir_free(bounds);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	r->nstages = p->pp;
	if ((rc = partition(e, nchunks, pre, bounds)) < 0) {
		ir_free(bounds);
		return rc;
	}
	if ((rc = record_events(e, bounds, nchunks)) < 0) {
		ir_free(bounds);
		return rc;
	}
	struct cost_state_bytes sb;
	cost_state_bytes_per_param(p->optim, r->mixed, &sb);
	for (int s = 0; s < p->pp; s++) {
		struct report_stage *st = &r->stages[s];
		double act = 0, extra = 0, big = 0, send = 0, recv = 0, t_tp_step = 0;
		st->first = bounds[s];
		st->last = bounds[s + 1];
		st->layers = 0;
		for (int c = s; c < nchunks; c += p->pp) {
			int a = bounds[c], b = bounds[c + 1], layers;
			double x;
			st->t_fwd += range_time(e, pre, a, b);
			tp_range(e, a, b, st, &t_tp_step);
			st->params += range_params(e, a, b);
			act += chunk_act(e, a, b, &x, &layers);
			extra = x > extra ? x : extra;
			st->layers += layers;
			double lv = largest_value(e, a, b);
			big = lv > big ? lv : big;
			send = b < e->nn ? e->cross[b] : 0;
			recv += a > 0 ? e->cross[a] : 0;
			st->send_bytes = send > st->send_bytes ? send : st->send_bytes;
		}
		st->t_bwd = 2 * st->t_fwd;
		st->t_recompute = p->recompute ? st->t_fwd + st->t_tp_fwd + st->t_bs_fwd : 0;
		st->t_mb = st->t_fwd + st->t_bwd + st->t_tp_fwd + st->t_tp_bwd + st->t_bs_fwd + st->t_bs_bwd +
			   st->t_recompute;
		st->act_mb = act;
		st->inflight = cost_inflight(p->sched, p->pp, r->mb, v, s);
		struct cost_state_bytes m;
		cost_state_memory(p->optim, r->mixed, p->zero, p->dp, st->params, &m);
		st->mem_params = m.params;
		st->mem_grads = m.grads;
		st->mem_optim = m.optim;
		st->mem_act = act * st->inflight + extra;
		/* transfers: the activation received and sent, and their gradients;
		 * workspace: the largest tensor twice (a result and its gradient) */
		st->mem_buffers = 2 * (recv + st->send_bytes * v) + 2 * big;
		if (p->zero >= 3) /* gathered parameters of the layer at hand */
			st->mem_buffers += 2 * st->params * sb.params / (st->layers ? st->layers : 1);
		st->mem_total = st->mem_params + st->mem_grads + st->mem_optim + st->mem_act + st->mem_buffers;
		/* gradient synchronization across replicas, once per step */
		double gbytes = st->params * sb.grads;
		if (p->zero == 0)
			st->t_dp = cost_collective(&e->ax_dp, COST_ALL_REDUCE, gbytes, NULL);
		else /* reduce-scatter gradients, all-gather updated parameters */
			st->t_dp = cost_collective(&e->ax_dp, COST_REDUCE_SCATTER, gbytes, NULL) +
				   cost_collective(&e->ax_dp, COST_ALL_GATHER, st->params * sb.params, NULL);
		st->t_dp += t_tp_step; /* weights' gradients over the tp ranks, with the rest */
		if (p->zero >= 3) {    /* parameters gathered for forward and backward of every micro-batch */
			double ag = cost_collective(&e->ax_dp, COST_ALL_GATHER, st->params * sb.params, NULL);
			double rs = cost_collective(&e->ax_dp, COST_REDUCE_SCATTER, gbytes, NULL);
			double comp = st->t_fwd + st->t_bwd + st->t_recompute;
			double extra_t = 2 * ag + rs - comp; /* prefetched under compute */
			st->t_mb += extra_t > 0 ? extra_t : 0;
		}
		/* optimizer: reads gradients and state, writes state and weights */
		st->t_optim = cost_optim_time(&r->dev, e->cal, &sb, r->mixed, st->params / (p->zero >= 1 ? p->dp : 1));
	}
	ir_free(bounds);
	return 0;
}

/* ---- the step ------------------------------------------------------------- */

static int summarize(struct eval *e)
{
	struct report *r = e->r;
	const struct report_plan *p = e->p;
	int pp = p->pp, v = p->sched == COST_SCHED_INTERLEAVED && pp > 1 ? p->v : 1;
	double *t = ir_malloc((size_t)pp * sizeof *t), p2p = 0;
	if (!t)
		return ir_errorf(-ENOMEM, "out of memory");
	int slow = 0;
	for (int s = 0; s < pp; s++) {
		t[s] = r->stages[s].t_mb;
		if (t[s] > t[slow])
			slow = s;
		/* Megatron's scatter/gather: each tp rank sends 1/tp of the
		 * activation, the next stage all-gathers it over the fast links */
		double b = r->stages[s].send_bytes, x = 0;
		if (pp > 1)
			x = 2 * (cost_collective(&e->ax_pp, COST_SEND_RECV, b / p->tp, NULL) +
				 cost_collective(&e->ax_tp, COST_ALL_GATHER, b, NULL));
		p2p = x > p2p ? x : p2p;
	}
	double pipe = cost_pipeline_time(p->sched, pp, r->mb, v, t, p2p);
	ir_free(t);
	const struct report_stage *st = &r->stages[slow];
	double comp = st->t_fwd + st->t_bwd + st->t_recompute, tp = st->t_tp_fwd + st->t_tp_bwd;
	double bs = st->t_bs_fwd + st->t_bs_bwd;
	r->t_compute = r->mb * comp;
	r->t_tp = r->mb * tp;
	r->t_bstat = r->mb * bs;
	r->t_pp = pp > 1 ? r->mb * p2p * v : 0;
	double zero3 = r->mb * (st->t_mb - comp - tp - bs); /* ZeRO-3 gathers not hidden by compute */
	zero3 = zero3 > 1e-12 * r->mb * st->t_mb ? zero3 : 0;
	r->t_bubble = pipe - r->mb * (st->t_mb + (pp > 1 ? v * p2p : 0));
	if (r->t_bubble < 0)
		r->t_bubble = 0;
	/* gradient sync overlaps the backward of the last micro-batch */
	r->t_dp = 0;
	r->t_optim = 0;
	for (int s = 0; s < pp; s++) {
		double x = r->stages[s].t_dp - r->stages[s].t_bwd;
		if (x > r->t_dp + 1e-15)
			r->t_dp = x;
		if (r->stages[s].t_optim > r->t_optim)
			r->t_optim = r->stages[s].t_optim;
	}
	r->t_dp += zero3;
	r->t_step = r->t_compute + r->t_tp + r->t_bstat + r->t_pp + r->t_bubble + r->t_dp + r->t_optim;
	r->samples_per_s = (double)r->batch / r->t_step;
	r->tokens_per_s = r->samples_per_s * r->tokens_per_sample;
	r->model_flops = 3 * r->fwd_flops * r->mb * p->dp;
	r->hw_flops = r->model_flops + (p->recompute ? r->fwd_flops * r->mb * p->dp : 0);
	r->tflops_per_device = r->hw_flops / r->t_step / r->devices / 1e12;
	double peak = cost_device_peak(&r->dev, r->prec);
	r->mfu = peak > 0 ? r->model_flops / (r->t_step * r->devices * peak) : 0;
	r->peak_stage = 0;
	for (int s = 0; s < pp; s++)
		if (r->stages[s].mem_total > r->stages[r->peak_stage].mem_total)
			r->peak_stage = s;
	r->mem_peak = r->stages[r->peak_stage].mem_total;
	r->fits = r->mem_peak <= r->dev.mem_bytes;
	return 0;
}

static void eval_free(struct eval *e)
{
	tp_result_free(&e->tp);
	ir_free(e->t_node);
	ir_free(e->dyn);
	ir_free(e->act);
	ir_free(e->stored);
	ir_free(e->need_first);
	ir_free(e->need);
	ir_free(e->cross);
	ir_free(e->ncross);
	ir_free(e->mark);
	ir_free(e->cand);
}

/* Evaluates graph g (batch bound to r->micro_batch) into r. */
int report_eval_graph(struct ir_graph *g, const struct cost_cluster *c, const struct report_plan *p,
		      const struct cost_calib *cal, const struct cost_axis axes[3], const double *bs_fwd,
		      const double *bs_bwd, struct report *r)
{
	struct eval e = {
		.g = g, .p = p, .cal = cal, .r = r, .nn = ir_graph_nnodes(g), .bs_fwd = bs_fwd, .bs_bwd = bs_bwd
	};
	int nv = ir_graph_nvalues(g), rc;
	e.ax_tp = axes[0];
	e.ax_dp = axes[1];
	e.ax_pp = axes[2];
	e.eb = r->mixed ? 2 : 0;
	e.t_node = ir_calloc((size_t)e.nn + 1, sizeof *e.t_node);
	e.dyn = cost_dynamic_values(g);
	e.act = cost_activation_values(g);
	e.stored = ir_calloc((size_t)nv + 1, sizeof *e.stored);
	e.mark = ir_calloc((size_t)nv + 1, sizeof *e.mark);
	double *pre = ir_calloc((size_t)e.nn + 1, sizeof *pre);
	if (!e.t_node || !e.dyn || !e.act || !e.stored || !e.mark || !pre) {
		rc = ir_errorf(-ENOMEM, "out of memory");
		goto out;
	}
	struct tp_request tq = { .tp = p->tp, .micro = r->mb, .prec = r->prec, .optim = p->optim, .cal = cal };
	if ((rc = tp_layout(g, c, &tq, &e.tp)) < 0)
		goto out;
	if ((rc = compute_times(&e)) < 0 || (rc = compute_needs(&e)) < 0 || (rc = compute_cuts(&e)) < 0)
		goto out;
	r->fwd_flops = 0;
	for (int i = 0; i < e.nn; i++) {
		pre[i + 1] = pre[i] + e.t_node[i];
		r->fwd_flops += ir_node_flops(ir_graph_node(g, i));
	}
	r->params = 0;
	for (int i = 0; i < ir_graph_nparams(g); i++)
		if (ir_dtype_is_float(ir_graph_param(g, i)->dtype))
			r->params += (double)ir_shape_numel(&ir_graph_param(g, i)->shape);
	if ((rc = build_stages(&e, pre)) < 0)
		goto out;
	rc = summarize(&e);
out:
	ir_free(pre);
	eval_free(&e);
	return rc;
}
