/*
 * report_trace.c: `pcc report --trace FILE.json`: one step of a plan as a
 * Chrome trace-event file (the JSON object form: {"traceEvents": [...]}),
 * which Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 * One process per pipeline stage (its devices run the same program), one
 * thread per stream: compute (forwards, backwards, the optimizer update,
 * idle time), collectives (the part of each forward and backward spent in
 * them), activations and gradients arriving from the neighbouring stages,
 * and the gradient reduction left exposed after the pipeline. Spans come
 * from the schedule simulator's timeline (report_timeline.c). Times are
 * microseconds, quantized to whole nanoseconds so that an event's end and
 * the next one's start are the same number: events on one thread never
 * overlap. Receives that overlap in time (several in flight) go to extra
 * threads of the same stream ("receive activation 2", ...). A flow arrow
 * ("s" to "f", as pcc-run --trace draws them) joins each receive to the
 * forward or backward on the stage that sent it, and a counter track
 * gives each stage's memory per device over a training step. The streams,
 * thread ids and names are ir/trace.h's, which pcc-run --trace's measured
 * timeline (runtime/trace.c) shares.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/report/report_internal.h"
#include "ir/trace.h"

static enum ir_trace_stream stream_of(enum wi_span_kind k)
{
	switch (k) {
	case WI_SPAN_FWD:
	case WI_SPAN_BWD:
	case WI_SPAN_OPTIM:
	case WI_SPAN_IDLE:
		return IR_TRACE_COMPUTE;
	case WI_SPAN_COLL:
		return IR_TRACE_COLL;
	case WI_SPAN_RECV_ACT:
		return IR_TRACE_RECV_ACT;
	case WI_SPAN_RECV_GRAD:
		return IR_TRACE_RECV_GRAD;
	case WI_SPAN_SYNC:
		return IR_TRACE_SYNC;
	case WI_SPAN_COUNT:
		break;
	}
	IR_ASSERT(!"span kind out of range");
	return IR_TRACE_COMPUTE;
}

static const char *category(enum wi_span_kind k)
{
	switch (stream_of(k)) {
	case IR_TRACE_COMPUTE:
		return k == WI_SPAN_IDLE ? "idle" : "compute";
	case IR_TRACE_COLL:
	case IR_TRACE_SYNC:
		return "collective";
	case IR_TRACE_RECV_ACT:
	case IR_TRACE_RECV_GRAD:
	case IR_TRACE_SEND_ACT:
	case IR_TRACE_SEND_GRAD:
		return "transfer";
	case IR_TRACE_STREAMS:
		break;
	}
	return "";
}

static void lanes_free(struct ir_trace_lanes *l, int n)
{
	for (int i = 0; l && i < n; i++)
		ir_trace_lanes_release(&l[i]);
	ir_free(l);
}

static json_t *event(const struct wi_span *sp, int pid, int tid, long long t0, long long t1)
{
	char name[96];
	if (sp->mb >= 0 && sp->chunk > 0)
		snprintf(name, sizeof name, "%s %d.%d", wi_span_name[sp->kind], sp->mb, sp->chunk);
	else if (sp->mb >= 0)
		snprintf(name, sizeof name, "%s %d", wi_span_name[sp->kind], sp->mb);
	else
		snprintf(name, sizeof name, "%s", wi_span_name[sp->kind]);
	json_t *e = json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i}", "name", name, "cat", category(sp->kind), "ph", "X",
			      "ts", (double)t0 / 1e3, "dur", (double)(t1 - t0) / 1e3, "pid", pid, "tid", tid);
	if (sp->mb >= 0)
		json_object_set_new(e, "args", json_pack("{s:i, s:i}", "micro_batch", sp->mb, "chunk", sp->chunk));
	return e;
}

static void stage_names(json_t *ev, const struct whatif *w, int i, int n, int s, const struct ir_trace_lanes *l)
{
	char name[256];
	int pid = i * 1000 + s;
	const struct wi_stage *st = &w->stages[s];
	if (n > 1)
		snprintf(name, sizeof name, "%s (%s) stage %d: %d device%s, %s", i ? "B" : "A", w->label, s,
			 st->devices, st->devices == 1 ? "" : "s", st->mesh);
	else
		snprintf(name, sizeof name, "stage %d: %d device%s, %s", s, st->devices, st->devices == 1 ? "" : "s",
			 st->mesh);
	ir_trace_names(ev, pid, name, pid, l);
}

/* Where a span went in the trace: its thread and whole-ns times; tid 0
 * where it was left out (no duration). */
struct placed {
	int tid;
	long long t0, t1;
};

static json_t *flow(bool start, bool act, long long id, long long at, int pid, int tid)
{
	json_t *f = json_pack("{s:s, s:s, s:s, s:I, s:f, s:i, s:i}", "name", act ? "activation" : "gradient", "cat",
			      "transfer", "ph", start ? "s" : "f", "id", (json_int_t)id, "ts", (double)at / 1e3, "pid",
			      pid, "tid", tid);
	if (!start)
		json_object_set_new(f, "bp", json_string("e"));
	return f;
}

/* A flow arrow per receive: from the end of the forward or backward that
 * produced it on the sending stage (its collectives where it has some: the
 * send is issued when the op ends) to the end of the receive, each point
 * 1 ns inside its span so that the viewers bind it there. Virtual stage
 * k = chunk p + stage receives activations from k - 1 and gradients from
 * k + 1 (report_timeline.c). *id numbers the arrows of every plan. */
static int add_flows(json_t *ev, const struct whatif *w, int i, const struct wi_timeline *tl, const struct placed *at,
		     long long *id)
{
	int p = w->nstages, v = w->v, m = w->micro;
	size_t keys = 2 * (size_t)p * (size_t)v * (size_t)m;
	int *last = ir_malloc(sizeof *last * (keys + 1)); /* (fwd or bwd, k, mb): the op's last span */
	if (!last)
		return ir_errorf(-ENOMEM, "out of memory writing the trace");
	for (size_t x = 0; x < keys; x++)
		last[x] = -1;
#define KEY(bwd, k, mb) (((size_t)(bwd) * (size_t)(p * v) + (size_t)(k)) * (size_t)m + (size_t)(mb))
	for (int x = 0; x < tl->n; x++) {
		const struct wi_span *sp = &tl->span[x];
		bool fwd = sp->kind == WI_SPAN_FWD, bwd = sp->kind == WI_SPAN_BWD;
		if (sp->mb < 0 || sp->mb >= m || sp->chunk < 0 || sp->chunk >= v || !at[x].tid)
			continue;
		if (!fwd && !bwd && sp->kind != WI_SPAN_COLL)
			continue;
		bool back = bwd;
		if (sp->kind == WI_SPAN_COLL) /* a forward's or a backward's: the one ending where it starts */
			for (int y = x - 1; y >= 0; y--)
				if (tl->span[y].stage == sp->stage && tl->span[y].mb == sp->mb &&
				    tl->span[y].chunk == sp->chunk &&
				    (tl->span[y].kind == WI_SPAN_FWD || tl->span[y].kind == WI_SPAN_BWD) &&
				    tl->span[y].t1 <= sp->t0) {
					back = tl->span[y].kind == WI_SPAN_BWD;
					break;
				}
		size_t key = KEY(back, sp->chunk * p + sp->stage, sp->mb);
		if (last[key] < 0 || at[x].t1 >= at[last[key]].t1)
			last[key] = x;
	}
	for (int x = 0; x < tl->n; x++) {
		const struct wi_span *sp = &tl->span[x];
		bool act = sp->kind == WI_SPAN_RECV_ACT;
		if ((!act && sp->kind != WI_SPAN_RECV_GRAD) || !at[x].tid || sp->mb < 0 || sp->mb >= m)
			continue;
		int k = sp->chunk * p + sp->stage, from = act ? k - 1 : k + 1;
		if (from < 0 || from >= p * v)
			continue;
		int y = last[KEY(!act, from, sp->mb)];
		if (y < 0)
			continue;
		const struct placed *a = &at[y], *b = &at[x];
		++*id;
		json_array_append_new(ev, flow(true, act, *id, a->t1 - (a->t1 - a->t0 >= 2 ? 1 : 0),
					       i * 1000 + tl->span[y].stage, a->tid));
		json_array_append_new(ev, flow(false, act, *id, b->t1 - (b->t1 - b->t0 >= 2 ? 1 : 0),
					       i * 1000 + sp->stage, b->tid));
	}
#undef KEY
	ir_free(last);
	return 0;
}

struct mem_step {
	double t, d; /* s, bytes */
};

static int by_time(const void *a, const void *b)
{
	const struct mem_step *x = a, *y = b;
	/* frees first at a tie: a backward's end and the next forward's start */
	return x->t != y->t ? (x->t > y->t) - (x->t < y->t) : (x->d > y->d) - (x->d < y->d);
}

/* A training step's memory per device of each stage as a counter track
 * ("ph": "C", GiB): the state, workspace and the rest that stays, plus a
 * micro-batch's activations (of one chunk: 1/v of it) from the start of
 * its forward to the end of its backward. Its peak is the stage's peak
 * when the replayed schedule holds as many micro-batches as the memory
 * model counts (inflight). */
static int add_memory(json_t *ev, const struct whatif *w, int i, const struct wi_timeline *tl)
{
	if (!w->train)
		return 0;
	struct mem_step *st = ir_malloc(sizeof *st * ((size_t)tl->n + 1));
	if (!st)
		return ir_errorf(-ENOMEM, "out of memory writing the trace");
	for (int d = 0; d < w->nstages; d++) {
		const struct wi_stage *sg = &w->stages[d];
		double act = sg->inflight > 0 ? sg->mem[WI_MEM_ACT] / sg->inflight / w->v : 0, base = 0;
		for (int k = 0; k < WI_MEM_COUNT; k++)
			base += k == WI_MEM_ACT ? 0 : sg->mem[k];
		int n = 0;
		for (int k = 0; k < tl->n; k++) {
			const struct wi_span *sp = &tl->span[k];
			if (sp->stage == d && sp->kind == WI_SPAN_FWD)
				st[n++] = (struct mem_step){ sp->t0, act };
			else if (sp->stage == d && sp->kind == WI_SPAN_BWD)
				st[n++] = (struct mem_step){ sp->t1, -act };
		}
		qsort(st, (size_t)n, sizeof *st, by_time);
		double held = 0;
		json_array_append_new(ev, json_pack("{s:s, s:s, s:f, s:i, s:{s:f}}", "name", "memory (GiB)", "ph", "C",
						    "ts", 0.0, "pid", i * 1000 + d, "args", "GiB", base / (1 << 30)));
		for (int k = 0; k < n; k++) {
			held += st[k].d;
			if (k + 1 < n && st[k + 1].t == st[k].t)
				continue; /* one value per instant */
			json_array_append_new(ev, json_pack("{s:s, s:s, s:f, s:i, s:{s:f}}", "name", "memory (GiB)",
							    "ph", "C", "ts", (double)llround(st[k].t * 1e9) / 1e3,
							    "pid", i * 1000 + d, "args", "GiB",
							    (base + fmax(held, 0)) / (1 << 30)));
		}
	}
	ir_free(st);
	return 0;
}

/* Adds what-if i's events to ev. */
static int add_plan(json_t *ev, json_t *info, const struct whatif *w, int i, int n, long long *flows)
{
	struct wi_timeline tl;
	int rc = wi_timeline_build(w, &tl);
	if (rc < 0)
		return rc;
	struct ir_trace_lanes *l = ir_calloc((size_t)w->nstages, sizeof *l);
	struct placed *at = ir_calloc((size_t)tl.n + 1, sizeof *at);
	if (!l || !at) {
		ir_free(l);
		ir_free(at);
		wi_timeline_free(&tl);
		return ir_errorf(-ENOMEM, "out of memory writing the trace");
	}
	for (int k = 0; k < tl.n && rc == 0; k++) {
		const struct wi_span *sp = &tl.span[k];
		long long t0 = llround(sp->t0 * 1e9), t1 = llround(sp->t1 * 1e9);
		if (t1 <= t0)
			continue;
		enum ir_trace_stream s = stream_of(sp->kind);
		int lane = ir_trace_lane(&l[sp->stage], s, t0, t1);
		if (lane < 0)
			rc = lane;
		else {
			at[k] = (struct placed){ ir_trace_tid(s, lane), t0, t1 };
			json_array_append_new(ev, event(sp, i * 1000 + sp->stage, at[k].tid, t0, t1));
		}
	}
	if (rc == 0)
		rc = add_flows(ev, w, i, &tl, at, flows);
	if (rc == 0)
		rc = add_memory(ev, w, i, &tl);
	ir_free(at);
	for (int s = 0; s < w->nstages && rc == 0; s++)
		stage_names(ev, w, i, n, s, &l[s]);
	if (rc == 0)
		json_array_append_new(info, json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:i, s:s, s:i}", "label",
						      w->label, "model", w->model, "cluster", w->cluster, "step_time_s",
						      w->t_step, "simulated_step_time_s", tl.t_step, "pipeline_time_s",
						      tl.t_pipe, "micro_batches", w->micro, "schedule",
						      cost_sched_name(w->sched), "stages", w->nstages));
	lanes_free(l, w->nstages);
	wi_timeline_free(&tl);
	return rc;
}

json_t *wi_trace_json(const struct whatif *const *w, int n)
{
	json_t *ev = json_array(), *info = json_array();
	long long flows = 0;
	for (int i = 0; i < n; i++)
		if (add_plan(ev, info, w[i], i, n, &flows) < 0) {
			json_decref(ev);
			json_decref(info);
			return NULL;
		}
	return json_pack("{s:o, s:s, s:{s:s, s:o}}", "traceEvents", ev, "displayTimeUnit", "ms", "otherData",
			 "generator", "pcc report", "plans", info);
}

int wi_trace_write(const struct whatif *const *w, int n, const char *path)
{
	json_t *o = wi_trace_json(w, n);
	if (!o)
		return ir_error_code() ? ir_error_code() : -ENOMEM;
	FILE *f = fopen(path, "w");
	if (!f) {
		json_decref(o);
		return ir_errorf(-EIO, "--trace %s: cannot write: %s", path, strerror(errno));
	}
	int rc = json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	fputc('\n', f);
	if (fclose(f) != 0)
		rc = -1;
	json_decref(o);
	return rc < 0 ? ir_errorf(-EIO, "--trace %s: write error", path) : 0;
}
