/*
 * trace.c: pcc-run --trace FILE.json, the measured timeline of a run as a
 * Chrome trace-event file (rt.h), beside the predicted step of
 * `pcc report --trace` (compiler/report/report_trace.c).
 *
 * Every rank keeps its own events in memory while it runs, timed by the
 * clock reads the executor makes anyway (exec.c reads ir_now() once per
 * instruction; with --trace, sends, receives and collectives add a read
 * where they start and end away from their instruction); without --trace
 * nothing is kept and nothing more is read (r->trace is NULL). At the end
 * every rank sends its events to rank 0, which writes the one file.
 *
 * Events: per rank a process ("rank 3 (stage 1)", pid 10000 + rank) with
 * the threads ir/trace.h names: on "compute" each step ("step 2") holds
 * the parts it ran ("forward 0", "backward 0", "optimizer", as the
 * predicted trace names them; "forward+backward 0" where a plan runs both
 * in one part) and those hold the kernels (named by their ops, "dot",
 * "layer_norm", "dot+broadcast+add"); collectives by kind ("all_reduce")
 * on "collectives", or "gradient sync" for the per-step part's; sends on
 * "send activation" or "send gradient", receives on "receive activation"
 * or "receive gradient" (of the forward or the backward part; the
 * per-step part's, "send to rank 2", on "gradient sync"). A receive
 * or collective started early (overlap.c) spans from its start to the
 * wait that finished it. A flow arrow ("s" at the send's start, "f" at the
 * receive's end) joins each send to its receive: message k of (sender,
 * receiver, tag) matches receive k of the same, as MPI matches them, and
 * both ranks number it alike from the plan.
 *
 * Clocks: when all ranks share a host (MPI's shared-memory split) their
 * ir_now() is the same CLOCK_MONOTONIC and is used as it is; otherwise
 * rank 0 estimates each rank's offset from 16 round trips with it (the
 * shortest one's midpoint; error at most half of it; both written per
 * rank, otherData.clock_offset_us and clock_error_us;
 * PCC_TRACE_CLOCK=estimate estimates on one host too, for the tests). Times are microseconds (whole nanoseconds)
 * from the earliest event of any rank. On GPU ranks the spans are when the
 * host issued each instruction to its stream (as the log's "issuing
 * kernels" says), so a receive issued before its send shows so.
 *
 * A rank keeps at most RT_TRACE_MAX_EVENTS events, then stops at the end
 * of a step; the file holds the steps every rank recorded whole
 * (otherData.truncated says so).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ir/trace.h"
#include "runtime/rt.h"

#define RT_TRACE_MAX_EVENTS (1 << 20) /* per rank: 40 MiB */
#define PID_BASE 10000                /* measured ranks' pids: apart from the predicted stages' */

enum ev_type { EV_INSTR, EV_PART, EV_STEP };

struct ev {
	double t0, t1; /* ir_now(), seconds */
	int64_t flow;  /* send or receive: its flow id; 0: none */
	int32_t step;  /* of the run, 0-based */
	int32_t what;  /* EV_INSTR: the instruction; EV_PART: the part (0, 1, 2) */
	int16_t mb;    /* micro-batch */
	int16_t type;  /* enum ev_type */
};

struct rt_trace {
	FILE *f; /* rank 0 */
	char *path;
	struct ev *ev;
	size_t n, cap;
	bool on;        /* still recording */
	bool cut;       /* stopped before the run's end */
	long steps;     /* steps recorded whole */
	int *slot;      /* [ninstr] a send or receive: the first instruction
			 * of its kind with its peer and tag (whose count
			 * it shares); -1 elsewhere */
	int64_t *base;  /* [ninstr] its message's number among the plan's
			 * sends (the first send of its sender, receiver and
			 * tag, in device then program order); -1: none */
	int64_t *count; /* [ninstr] per slot: messages so far */
	int64_t nsends; /* sends in the whole plan */
	double *offset; /* rank 0: each rank's clock minus rank 0's, s */
	double *error;  /* rank 0: the bound on that estimate, s */
	bool shared;    /* all ranks on one host: one clock */
};

/* Operand j of instruction x of device d. */
static const struct plan_buffer *arg_of(const struct plan_device *d, const struct plan_instr *x, int j)
{
	return &d->buf[d->args[x->arg + j]];
}

/* Numbers the plan's messages alike on every rank: flow id = k * nsends +
 * base + 1 for message k of a (sender, receiver, tag). */
static int flow_tables(struct rt_trace *t, const struct plan *p, int me)
{
	const struct plan_device *d = &p->devices[me];
	int64_t *first = ir_calloc((size_t)p->ndevices + 1, sizeof *first); /* each device's first send's number */
	t->slot = ir_malloc(sizeof *t->slot * ((size_t)d->ninstr + 1));
	t->base = ir_malloc(sizeof *t->base * ((size_t)d->ninstr + 1));
	t->count = ir_calloc((size_t)d->ninstr + 1, sizeof *t->count);
	if (!first || !t->slot || !t->base || !t->count) {
		ir_free(first);
		return ir_errorf(-ENOMEM, "out of memory for the trace");
	}
	for (int q = 0; q < p->ndevices; q++) {
		int64_t n = 0;
		for (int i = 0; i < p->devices[q].ninstr; i++)
			n += p->devices[q].instr[i].kind == PLAN_SEND;
		first[q] = t->nsends;
		t->nsends += n;
	}
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *x = &d->instr[i];
		t->slot[i] = -1;
		t->base[i] = -1;
		if (x->kind != PLAN_SEND && x->kind != PLAN_RECV)
			continue;
		int j = 0;
		while (d->instr[j].kind != x->kind || d->instr[j].peer != x->peer || d->instr[j].tag != x->tag)
			j++;
		t->slot[i] = j;
		/* the sender's program: its sends up to the first to (receiver, tag) */
		int src = x->kind == PLAN_SEND ? me : x->peer, dst = x->kind == PLAN_SEND ? x->peer : me;
		const struct plan_device *s = &p->devices[src];
		int64_t k = 0;
		for (int q = 0; q < s->ninstr; q++) {
			const struct plan_instr *y = &s->instr[q];
			if (y->kind != PLAN_SEND)
				continue;
			if (y->peer == dst && y->tag == x->tag) {
				t->base[i] = first[src] + k;
				break;
			}
			k++;
		}
	}
	ir_free(first);
	return 0;
}

int rt_trace_open(struct rt *r, const char *path)
{
	struct rt_trace *t = ir_calloc(1, sizeof *t);
	size_t n = strlen(path) + 1;
	if (!t || !(t->path = ir_malloc(n))) {
		ir_free(t);
		return ir_errorf(-ENOMEM, "out of memory for the trace");
	}
	memcpy(t->path, path, n);
	r->trace = t;
	t->on = true;
	if (r->c->rank == 0 && !(t->f = fopen(path, "w"))) {
		int e = errno;
		return ir_errorf(-e, "--trace %s: cannot write: %s", path, strerror(e));
	}
	return flow_tables(t, r->p, r->c->rank);
}

void rt_trace_close(struct rt *r)
{
	struct rt_trace *t = r->trace;
	if (!t)
		return;
	if (t->f)
		fclose(t->f);
	ir_free(t->path);
	ir_free(t->ev);
	ir_free(t->slot);
	ir_free(t->base);
	ir_free(t->count);
	ir_free(t->offset);
	ir_free(t->error);
	ir_free(t);
	r->trace = NULL;
}

static struct ev *add(struct rt *r, enum ev_type type, int what, int mb, double t0, double t1)
{
	struct rt_trace *t = r->trace;
	if (!t->on)
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 4096;
		struct ev *e = ir_realloc(t->ev, sizeof *e * cap);
		if (!e) { /* out of memory: the steps so far are the trace */
			t->on = false;
			t->cut = true;
			return NULL;
		}
		t->ev = e;
		t->cap = cap;
	}
	struct ev *e = &t->ev[t->n++];
	*e = (struct ev){ t0, t1, 0, (int32_t)r->step, what, (int16_t)mb, (int16_t)type };
	return e;
}

void rt_trace_op(struct rt *r, int i, int mb, double t0, double t1)
{
	struct rt_trace *t = r->trace;
	int s = t->slot[i];
	int64_t k = s >= 0 ? t->count[s]++ : 0;
	struct ev *e = add(r, EV_INSTR, i, mb, t0, t1);
	if (e && s >= 0 && t->base[i] >= 0)
		e->flow = k * t->nsends + t->base[i] + 1;
}

void rt_trace_instr(struct rt *r, const struct plan_instr *x, int i, int pos, double t0, double t1)
{
	if (x->kind == PLAN_COPY || x->kind == PLAN_FREE)
		return;
	/* the device times it itself (the host: from its start to its wait) */
	if (r->dev->traced && r->dev->traced(r, x, pos))
		return;
	rt_trace_op(r, i, r->mb, t0, t1);
}

void rt_trace_part(struct rt *r, const struct rt_seg *s, double t0, double t1)
{
	if (s->hi > s->lo)
		add(r, EV_PART, s->part, s->mb, t0, t1);
}

void rt_trace_step(struct rt *r, double t0, double t1)
{
	struct rt_trace *t = r->trace;
	if (!t->on)
		return;
	add(r, EV_STEP, 0, 0, t0, t1);
	if (!t->on) /* the step's own event did not fit */
		return;
	t->steps++;
	if (t->n >= RT_TRACE_MAX_EVENTS) {
		t->on = false;
		t->cut = true;
	}
}

int rt_trace_clock(struct rt *r)
{
	struct rt_comm *c = r->c;
	struct rt_trace *t = r->trace;
	int rc = 0;
	/* PCC_TRACE_CLOCK=estimate: the estimate on one host too (the tests:
	 * there the truth is 0, within the error it states) */
	const char *how = getenv("PCC_TRACE_CLOCK");
	t->shared = (c->size == 1 || c->local_size == c->size) && !(how && !strcmp(how, "estimate"));
	if (c->rank == 0 && (!(t->offset = ir_calloc((size_t)c->size, sizeof *t->offset)) ||
			     !(t->error = ir_calloc((size_t)c->size, sizeof *t->error))))
		return ir_errorf(-ENOMEM, "out of memory for the trace");
	for (int q = 1; q < c->size && !t->shared && rc == 0; q++) {
		double best = INFINITY;
		for (int k = 0; k < 16 && rc == 0; k++) {
			double a = ir_now(), b = 0;
			if (c->rank == 0) {
				if ((rc = c->ops->ctl_send(c, &a, sizeof a, q)) == 0 &&
				    (rc = c->ops->ctl_recv(c, &b, sizeof b, q)) == 0) {
					double e = ir_now();
					if (e - a < best) {
						best = e - a;
						t->offset[q] = b - (a + e) / 2;
						t->error[q] = best / 2;
					}
				}
			} else if (c->rank == q) {
				if ((rc = c->ops->ctl_recv(c, &a, sizeof a, 0)) == 0) {
					b = ir_now();
					rc = c->ops->ctl_send(c, &b, sizeof b, 0);
				}
			}
		}
	}
	return rc;
}

/* "dot", "dot+broadcast+add", "layer_norm+4 more" */
static void kernel_name(const struct plan_kernel *k, char *buf, size_t n)
{
	size_t len = 0;
	int nb = k->nbody ? k->nbody : 1;
	buf[0] = 0;
	for (int i = 0; i < nb && i < 4 && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "+" : "",
					ir_op_name(k->nbody ? k->body[i].op : k->op));
	if (nb > 4 && len < n)
		snprintf(buf + len, n - len, "+%d more", nb - 4);
}

/* The part instruction i of device d is in: 0 forward (or the whole
 * per-micro-batch part), 1 backward, 2 per step. */
static int part_of(const struct plan_device *d, int i)
{
	return i >= plan_step_first(d) ? 2 : d->nfwd && i >= d->nfwd ? 1 : 0;
}

struct writer {
	FILE *f;
	const struct plan *p;
	bool first;     /* no event written yet */
	long long zero; /* ns: the earliest event */
	long steps;     /* steps every rank recorded */
	long events;
};

static void put(struct writer *w, json_t *e)
{
	if (!e)
		return;
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = false;
	json_dumpf(e, w->f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
	json_decref(e);
	w->events++;
}

static double us(long long ns)
{
	return (double)ns / 1e3;
}

/* Rank q's events (its clock offset off, seconds) into the file. */
static int put_rank(struct writer *w, int q, const struct ev *ev, size_t n, double off)
{
	const struct plan *p = w->p;
	const struct plan_device *d = &p->devices[q];
	struct ir_trace_lanes l = { 0 };
	int pid = PID_BASE + q, rc = ir_trace_lane(&l, IR_TRACE_COMPUTE, 0, 0); /* compute: one thread, nested */
	for (size_t k = 0; k < n && rc >= 0; k++) {
		const struct ev *e = &ev[k];
		if (e->step >= w->steps)
			continue;
		long long t0 = llround((e->t0 - off) * 1e9) - w->zero, t1 = llround((e->t1 - off) * 1e9) - w->zero;
		t1 = t1 > t0 ? t1 : t0;
		char name[128];
		json_t *args = json_pack("{s:i}", "step", e->step + 1);
		enum ir_trace_stream s = IR_TRACE_COMPUTE;
		const char *cat = "compute";
		if (e->type == EV_STEP) {
			snprintf(name, sizeof name, "step %d", e->step + 1);
			cat = "step";
		} else if (e->type == EV_PART) {
			const char *what = e->what == 2           ? (p->train ? "optimizer" : "per step")
					   : e->what == 1         ? "backward"
					   : d->nfwd || !p->train ? "forward"
								  : "forward+backward";
			snprintf(name, sizeof name, e->what == 2 ? "%s" : "%s %d", what, e->mb);
			json_object_set_new(args, "micro_batch", json_integer(e->mb));
		} else {
			const struct plan_instr *x = &d->instr[e->what];
			int part = part_of(d, e->what);
			json_object_set_new(args, "instruction", json_integer(e->what));
			json_object_set_new(args, "micro_batch", json_integer(e->mb));
			if (x->kind == PLAN_KERNEL) {
				kernel_name(&p->kernels[x->kernel], name, sizeof name);
				json_object_set_new(args, "kernel", json_integer(x->kernel));
				cat = "kernel";
			} else if (x->kind == PLAN_SEND || x->kind == PLAN_RECV) {
				bool send = x->kind == PLAN_SEND, grad = part == 1;
				s = part == 2 ? IR_TRACE_SYNC
				    : send    ? (grad ? IR_TRACE_SEND_GRAD : IR_TRACE_SEND_ACT)
					      : (grad ? IR_TRACE_RECV_GRAD : IR_TRACE_RECV_ACT);
				if (part == 2) /* between stages, once a step: a norm, a tied weight */
					snprintf(name, sizeof name, "%s rank %d", send ? "send to" : "receive from",
						 x->peer);
				else
					snprintf(name, sizeof name, "%s %d", ir_trace_stream_name[s], e->mb);
				json_object_set_new(args, send ? "to" : "from", json_integer(x->peer));
				json_object_set_new(args, "tag", json_integer(x->tag));
				json_object_set_new(args, "bytes",
						    json_integer(arg_of(d, x, send ? 0 : x->nin)->bytes));
				cat = "transfer";
			} else {
				s = part == 2 ? IR_TRACE_SYNC : IR_TRACE_COLL;
				snprintf(name, sizeof name, "%s", plan_instr_kind_name(x->kind));
				json_object_set_new(args, "communicator", json_integer(x->comm));
				json_object_set_new(args, "bytes", json_integer(arg_of(d, x, 0)->bytes));
				cat = "collective";
			}
		}
		int lane = s == IR_TRACE_COMPUTE ? 0 : ir_trace_lane(&l, s, t0, t1);
		if (lane < 0) {
			json_decref(args);
			rc = lane;
			break;
		}
		int tid = ir_trace_tid(s, lane);
		put(w, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", name, "cat", cat, "ph", "X", "ts",
				 us(t0), "dur", us(t1 - t0), "pid", pid, "tid", tid, "args", args));
		if (e->flow) { /* the send's start to the receive's end, inside both */
			bool send = d->instr[e->what].kind == PLAN_SEND;
			long long at = send ? t0 : t1 - t0 >= 2 ? t1 - 1 : t0;
			json_t *f = json_pack("{s:s, s:s, s:s, s:I, s:f, s:i, s:i}", "name",
					      part_of(d, e->what) == 0 ? "activation" : "gradient", "cat", "transfer",
					      "ph", send ? "s" : "f", "id", (json_int_t)e->flow, "ts", us(at), "pid",
					      pid, "tid", tid);
			if (!send)
				json_object_set_new(f, "bp", json_string("e"));
			put(w, f);
		}
	}
	if (rc >= 0) {
		char pname[64];
		json_t *meta = json_array();
		snprintf(pname, sizeof pname, "rank %d (stage %d)", q, d->stage);
		ir_trace_names(meta, pid, pname, pid, &l);
		for (size_t k = 0; k < json_array_size(meta); k++)
			put(w, json_incref(json_array_get(meta, k)));
		w->events -= (long)json_array_size(meta);
		json_decref(meta);
	}
	ir_trace_lanes_release(&l);
	return rc < 0 ? rc : 0;
}

/* What each rank tells rank 0 before its events. */
struct head {
	int64_t n, steps;
	double t_first; /* its earliest event's start; INFINITY: none */
	int32_t cut;
	int32_t pad;
};

static double first_time(const struct rt_trace *t)
{
	double m = INFINITY;
	for (size_t k = 0; k < t->n; k++)
		m = fmin(m, t->ev[k].t0);
	return m;
}

int rt_trace_write(struct rt *r, const char *plan, long *events)
{
	struct rt_comm *c = r->c;
	struct rt_trace *t = r->trace;
	struct head me = { (int64_t)t->n, t->steps, first_time(t), t->cut, 0 };
	*events = 0;
	if (c->rank != 0) {
		int rc = c->ops->ctl_send(c, &me, sizeof me, 0);
		if (rc == 0 && t->n)
			rc = c->ops->ctl_send(c, t->ev, sizeof *t->ev * t->n, 0);
		return rc;
	}
	struct head *h = ir_calloc((size_t)c->size, sizeof *h);
	if (!h)
		return ir_errorf(-ENOMEM, "out of memory writing the trace");
	h[0] = me;
	int rc = 0;
	for (int q = 1; q < c->size && rc == 0; q++)
		rc = c->ops->ctl_recv(c, &h[q], sizeof h[q], q);
	struct writer w = { t->f, r->p, true, 0, me.steps, 0 };
	double zero = INFINITY;
	bool cut = false;
	for (int q = 0; q < c->size && rc == 0; q++) {
		zero = fmin(zero, h[q].t_first - t->offset[q]);
		w.steps = h[q].steps < w.steps ? h[q].steps : w.steps;
		cut = cut || h[q].cut;
	}
	w.zero = isfinite(zero) ? llround(zero * 1e9) : 0;
	if (rc == 0)
		fputs("{\"traceEvents\": [", t->f);
	/* every rank's events are taken, even past an error writing them:
	 * its sender waits for that */
	int wrc = 0;
	for (int q = 0; q < c->size && rc == 0; q++) {
		struct ev *ev = t->ev;
		if (q > 0 && h[q].n) {
			size_t bytes = sizeof *ev * (size_t)h[q].n;
			rc = (ev = ir_malloc(bytes)) ? c->ops->ctl_recv(c, ev, bytes, q)
						     : ir_errorf(-ENOMEM, "out of memory writing the trace");
		}
		if (rc == 0 && wrc == 0 && ev)
			wrc = put_rank(&w, q, ev, (size_t)h[q].n, t->offset[q]);
		if (q > 0)
			ir_free(ev);
	}
	rc = rc < 0 ? rc : wrc;
	if (rc == 0) {
		json_t *err = json_array(), *off = json_array();
		for (int q = 0; q < c->size; q++) {
			json_array_append_new(off, json_real(t->offset[q] * 1e6));
			json_array_append_new(err, json_real(t->error[q] * 1e6));
		}
		json_t *other = json_pack("{s:s, s:s, s:i, s:I, s:i, s:b, s:s, s:o, s:o, s:I}", "generator", "pcc-run",
					  "plan", plan, "ranks", c->size, "steps", (json_int_t)w.steps, "micro_batches",
					  r->micro, "truncated", cut, "clock",
					  t->shared ? "one host: every rank's CLOCK_MONOTONIC"
						    : "offsets from round trips to rank 0",
					  "clock_offset_us", off, "clock_error_us", err, "events",
					  (json_int_t)w.events);
		fputs("\n], \"displayTimeUnit\": \"ms\", \"otherData\": ", t->f);
		json_dumpf(other, t->f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
		fputs("}\n", t->f);
		json_decref(other);
		FILE *f = t->f;
		t->f = NULL;
		if (ferror(f) | (fclose(f) != 0))
			rc = ir_errorf(-EIO, "--trace %s: write error", t->path);
	}
	ir_free(h);
	*events = w.events;
	return rc;
}
