/*
 * report_timeline.c: one step of a what-if's pipeline on the schedule
 * simulator (compiler/search/sched_sim.c), as a step time and as a timeline of
 * spans per stage, for the step-time split (report_auto.c), the Chrome
 * trace (report_trace.c) and the timeline chart.
 *
 * The simulator checks the per-device orders and gives the step time; it
 * keeps no per-op times, so the timeline replays the same orders by the
 * rules its contract states (search/search.h): a compute op takes its time, a
 * send costs nothing and never blocks, a receive ends at its send's issue
 * time plus the transfer, and a device waits for it. With no contention
 * every op's start is then fixed whatever order the devices advance in,
 * so the replay's end equals the simulator's step time (tested).
 *
 * Costs per virtual stage k (p stages, v chunks each, k = chunk p +
 * stage): stage k % p's forward and backward over v, its transfer to the
 * next stage for the boundary k -> k + 1: how the planner simulates its
 * candidates (inter.c). Example: 2 stages of 1 s forward, 2 s backward,
 * 1F1B, 1 micro-batch, no transfer: stage 0 runs F0 [0,1], waits, B0
 * [4,6]; stage 1 runs F0 [1,2], B0 [2,4]; step 6 s.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/report/report_internal.h"

const char *const wi_span_name[WI_SPAN_COUNT] = { "forward",          "backward",
						  "collectives",      "receive activation",
						  "receive gradient", "gradient sync",
						  "optimizer",        "idle" };

/* The simulator's cost arrays for w (4 p v doubles in *buf, ir_free). */
static int make_costs(const struct whatif *w, bool xfer, double **buf, struct sched_costs *c)
{
	int p = w->nstages, v = w->v, nv = p * v;
	double *b = ir_calloc((size_t)nv * 4 + 1, sizeof *b);
	if (!b)
		return ir_errorf(-ENOMEM, "out of memory simulating the schedule");
	double *tf = b, *tb = b + nv, *x = b + 2 * nv, *act = b + 3 * nv;
	/* interleaved: the last device's chunk feeds the first device's next
	 * one, a crossing as costly as the largest stage boundary (inter.c) */
	double wrap = 0;
	for (int s = 0; s + 1 < p; s++)
		wrap = fmax(wrap, w->stages[s].t_xfer);
	for (int k = 0; k < nv; k++) {
		const struct wi_stage *st = &w->stages[k % p];
		tf[k] = st->t_fwd / v;
		tb[k] = st->t_bwd / v;
		x[k] = !xfer ? 0 : k % p + 1 < p ? st->t_xfer : wrap;
		act[k] = 1.0 / v;
	}
	*c = (struct sched_costs){ .t_fwd = tf, .t_bwd = tb, .t_xfer = nv > 1 ? x : NULL, .act_bytes = act };
	*buf = b;
	return 0;
}

/* Builds and simulates w's schedule: s and sim are the caller's to free. */
static int simulate(const struct whatif *w, bool xfer, struct sched *s, struct sched_sim *sim, double **buf,
		    struct sched_costs *c)
{
	memset(sim, 0, sizeof *sim);
	*buf = NULL;
	int rc = sched_build(w->sched, w->nstages, w->micro, w->v, s);
	if (rc == 0)
		rc = make_costs(w, xfer, buf, c);
	if (rc == 0)
		rc = sched_simulate(s, c, sim);
	return rc;
}

int wi_pipeline_time(const struct whatif *w, bool xfer, double *t)
{
	struct sched s;
	struct sched_sim sim;
	struct sched_costs c;
	double *buf;
	int rc = simulate(w, xfer, &s, &sim, &buf, &c);
	*t = rc == 0 ? sim.step_time : 0;
	sched_sim_free(&sim);
	sched_free(&s);
	ir_free(buf);
	return rc;
}

static int push(struct wi_timeline *tl, enum wi_span_kind kind, int stage, int mb, int chunk, double t0, double t1)
{
	if (!(t1 > t0))
		return 0;
	if (tl->n == tl->cap) {
		int nc = tl->cap ? 2 * tl->cap : 1024;
		struct wi_span *sp = ir_realloc(tl->span, sizeof *sp * (size_t)nc);
		if (!sp)
			return ir_errorf(-ENOMEM, "out of memory building the timeline");
		tl->span = sp;
		tl->cap = nc;
	}
	tl->span[tl->n++] = (struct wi_span){ kind, stage, mb, chunk, t0, t1 };
	return 0;
}

struct replay {
	const struct whatif *w;
	const struct sched *s;
	const struct sched_costs *c;
	double *clock;  /* [p] */
	int *pc;        /* [p] */
	double *issued; /* [2 p v m]: send times of activations, then gradients; < 0 not yet */
	struct wi_timeline *tl;
};

/* A forward or backward: compute, then its collectives. */
static int compute_op(struct replay *r, int d, const struct sched_op *op, int k)
{
	bool fwd = op->kind == SCHED_FWD;
	double t = fwd ? r->c->t_fwd[k] : r->c->t_bwd[k], t0 = r->clock[d];
	double split = t0 + t * (1 - r->w->stages[d].comm_frac);
	int rc = push(r->tl, fwd ? WI_SPAN_FWD : WI_SPAN_BWD, d, op->mb, op->chunk, t0, split);
	if (rc == 0)
		rc = push(r->tl, WI_SPAN_COLL, d, op->mb, op->chunk, split, t0 + t);
	r->clock[d] = t0 + t;
	return rc;
}

/* Runs device d until it ends or reaches a receive not yet sent; the
 * number of ops run, or a negative error. */
static int advance(struct replay *r, int d)
{
	const struct sched *s = r->s;
	int moved = 0, m = s->m, half = s->p * s->v * m, rc = 0;
	for (; r->pc[d] < s->nops[d] && rc == 0; r->pc[d]++, moved++) {
		const struct sched_op *op = &s->ops[d][r->pc[d]];
		int k = op->chunk * s->p + d;
		bool act = op->kind == SCHED_RECV_ACT;
		switch (op->kind) {
		case SCHED_FWD:
		case SCHED_BWD:
			rc = compute_op(r, d, op, k);
			break;
		case SCHED_SEND_ACT:
		case SCHED_SEND_GRAD:
			r->issued[(op->kind == SCHED_SEND_GRAD) * half + k * m + op->mb] = r->clock[d];
			break;
		case SCHED_RECV_ACT:
		case SCHED_RECV_GRAD: {
			double sent = r->issued[!act * half + (act ? k - 1 : k + 1) * m + op->mb];
			if (sent < 0)
				return moved;
			double end = sent + (r->c->t_xfer ? r->c->t_xfer[act ? k - 1 : k] : 0);
			rc = push(r->tl, act ? WI_SPAN_RECV_ACT : WI_SPAN_RECV_GRAD, d, op->mb, op->chunk, sent, end);
			r->clock[d] = fmax(r->clock[d], end);
			break;
		}
		case SCHED_KIND_COUNT:
			IR_ASSERT(!"op kind out of range");
		}
	}
	return rc < 0 ? rc : moved;
}

static int replay(struct replay *r)
{
	const struct sched *s = r->s;
	int left = 0;
	for (int d = 0; d < s->p; d++)
		left += s->nops[d];
	while (left > 0) {
		int moved = 0;
		for (int d = 0; d < s->p; d++) {
			int n = advance(r, d);
			if (n < 0)
				return n;
			moved += n;
		}
		/* the simulator accepted these orders: they cannot deadlock */
		IR_ASSERT(moved > 0);
		left -= moved;
	}
	return 0;
}

static int by_stage_start(const void *a, const void *b)
{
	const struct wi_span *x = a, *y = b;
	if (x->stage != y->stage)
		return x->stage - y->stage;
	return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* Once-per-step work after the pipeline, then idle spans over the gaps in
 * each stage's busy time (compute, collectives, sync, optimizer). */
static int finish(const struct whatif *w, struct wi_timeline *tl, double T)
{
	int rc = 0;
	tl->t_step = T;
	for (int d = 0; d < w->nstages && rc == 0; d++) {
		const struct wi_stage *st = &w->stages[d];
		rc = push(tl, WI_SPAN_SYNC, d, -1, -1, T, T + st->t_sync);
		if (rc == 0)
			rc = push(tl, WI_SPAN_OPTIM, d, -1, -1, T + st->t_sync, T + st->t_sync + st->t_optim);
		tl->t_step = fmax(tl->t_step, T + st->t_sync + st->t_optim);
	}
	qsort(tl->span, (size_t)tl->n, sizeof *tl->span, by_stage_start);
	int n = tl->n;
	double busy_end = 0;
	for (int i = 0, d = -1; i <= n && rc == 0; i++) {
		if (i == n || tl->span[i].stage != d) {
			if (d >= 0)
				rc = push(tl, WI_SPAN_IDLE, d, -1, -1, busy_end, tl->t_step);
			if (i == n)
				break;
			d = tl->span[i].stage;
			busy_end = 0;
		}
		struct wi_span sp = tl->span[i]; /* a copy: push may move the array */
		if (sp.kind == WI_SPAN_RECV_ACT || sp.kind == WI_SPAN_RECV_GRAD)
			continue;
		if (sp.t0 > busy_end)
			rc = push(tl, WI_SPAN_IDLE, d, -1, -1, busy_end, sp.t0);
		busy_end = fmax(busy_end, sp.t1);
	}
	if (rc == 0)
		qsort(tl->span, (size_t)tl->n, sizeof *tl->span, by_stage_start);
	return rc;
}

int wi_timeline_build(const struct whatif *w, struct wi_timeline *tl)
{
	struct sched s;
	struct sched_sim sim;
	struct sched_costs c;
	double *buf;
	memset(tl, 0, sizeof *tl);
	tl->nstages = w->nstages;
	int rc = simulate(w, true, &s, &sim, &buf, &c);
	struct replay r = { .w = w, .s = &s, .c = &c, .tl = tl };
	if (rc == 0) {
		size_t keys = 2 * (size_t)s.p * (size_t)s.v * (size_t)s.m;
		r.clock = ir_calloc((size_t)s.p, sizeof *r.clock);
		r.pc = ir_calloc((size_t)s.p, sizeof *r.pc);
		r.issued = ir_malloc(keys * sizeof *r.issued);
		if (!r.clock || !r.pc || !r.issued)
			rc = ir_errorf(-ENOMEM, "out of memory building the timeline");
		for (size_t i = 0; rc == 0 && i < keys; i++)
			r.issued[i] = -1;
	}
	if (rc == 0)
		rc = replay(&r);
	if (rc == 0) {
		tl->t_pipe = sim.step_time;
		double T = 0;
		for (int d = 0; d < s.p; d++)
			T = fmax(T, r.clock[d]);
		rc = finish(w, tl, T);
	}
	ir_free(r.clock);
	ir_free(r.pc);
	ir_free(r.issued);
	sched_sim_free(&sim);
	sched_free(&s);
	ir_free(buf);
	if (rc < 0)
		wi_timeline_free(tl);
	return rc;
}

void wi_timeline_free(struct wi_timeline *tl)
{
	ir_free(tl->span);
	memset(tl, 0, sizeof *tl);
}

int wi_timeline_panels(const struct whatif *w)
{
	return w->micro >= WI_TIMELINE_ZOOM ? 3 : 1;
}

int wi_timeline_zoom(const struct whatif *w, const struct wi_timeline *tl, double lo[2], double hi[2])
{
	int m = w->micro, K = WI_TIMELINE_KEEP;
	bool bwd = false;
	for (int k = 0; k < tl->n && !bwd; k++)
		bwd = tl->span[k].kind == WI_SPAN_BWD;
	double ta = 0, tb = INFINITY;
	for (int k = 0; k < tl->n; k++) {
		const struct wi_span *sp = &tl->span[k];
		if (sp->kind == WI_SPAN_FWD && sp->stage == w->nstages - 1 && sp->mb < K)
			ta = fmax(ta, sp->t1);
		if (sp->kind == (bwd ? WI_SPAN_BWD : WI_SPAN_FWD) && sp->mb >= m - K)
			tb = fmin(tb, sp->t0);
	}
	if (!(ta > 0) || !(tb < tl->t_step) || ta >= tb)
		return ir_errorf(-EINVAL, "no window to zoom in on");
	lo[0] = 0;
	hi[0] = ta;
	lo[1] = tb;
	hi[1] = tl->t_step;
	return 0;
}
