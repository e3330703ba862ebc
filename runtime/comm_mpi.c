/*
 * comm_mpi.c: the communication table over MPI (comm.h). Every operation is
 * non-blocking underneath and waited for with a deadline (MPI_Test in a
 * loop that backs off to short sleeps, which keeps over-subscribed ranks
 * from starving each other), so a dead or stuck peer becomes an error that
 * names what was awaited instead of a hang. Plan messages travel on a
 * duplicate of the world communicator, the runtime's own on another, and
 * each plan communicator is an MPI_Comm_split of the world.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "runtime/comm.h"

struct pending {
	MPI_Request req;
	void *copy;
};

struct mpi_impl {
	MPI_Comm plan_world, ctl;
	int ncomms;
	MPI_Comm *comms; /* per plan comm; MPI_COMM_NULL where this rank is not a member */
	const struct plan *p;
	struct pending *pend;
	int npend, cap;
	struct rt_comm_req **live; /* started and not yet waited for */
	int nlive, livecap;
	int tag_ub;
	MPI_Win win; /* every rank's rt_comm_progress; MPI_WIN_NULL: none */
};

/* This rank's progress record where there is no window (or no longer one). */
static struct rt_comm_progress lone;

static struct mpi_impl *impl(struct rt_comm *c)
{
	return c->impl;
}

static int mpi_fail(int err, const char *what)
{
	char msg[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(err, msg, &len);
	return ir_errorf(-EIO, "%s: MPI error: %.*s", what, len, msg);
}

/* Wall-clock seconds, comparable between hosts (ir_now is per host). */
static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Rank q's progress record into *out, waiting at most secs: false when q's
 * memory cannot be read that fast (its host or MPI does not answer). */
static bool peek(struct mpi_impl *m, int q, struct rt_comm_progress *out, double secs)
{
	MPI_Request r;
	int done = 0;
	/* a buffer of its own: a read given up on may still land in it */
	struct rt_comm_progress *b = ir_malloc(sizeof *b);
	if (!b || MPI_Rget(b, (int)sizeof *b, MPI_BYTE, q, 0, (int)sizeof *b, MPI_BYTE, m->win, &r) != MPI_SUCCESS) {
		ir_free(b);
		return false;
	}
	for (double t0 = ir_now(); !done && ir_now() - t0 < secs;)
		if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			break;
	if (!done) { /* left to MPI, and b with it: the job stops anyway */
		MPI_Request_free(&r);
		return false;
	}
	*out = *b;
	out->what[sizeof out->what - 1] = 0;
	ir_free(b);
	return true;
}

/* "step 2, micro-batch 0, instruction 10 (kernel MatMul)" into buf. */
static void where(const struct rt_comm_progress *g, char *buf, size_t n)
{
	if (g->instr < 0) {
		snprintf(buf, n, "before its first instruction");
		return;
	}
	bool kernel = g->kind == PLAN_KERNEL && g->op >= 0 && g->op < IR_OP_COUNT;
	snprintf(buf, n, "step %lld, micro-batch %d, instruction %d (%s%s%s)", (long long)g->step + 1, g->mb, g->instr,
		 g->kind >= 0 && g->kind < PLAN_INSTR_KIND_COUNT ? plan_instr_kind_name(g->kind) : "?",
		 kernel ? " " : "", kernel ? ir_op_name(g->op) : "");
}

/* After a wait of this rank timed out: which rank holds the job up, from
 * what every rank last published, into buf ("" when nothing is known).
 * The culprit is a rank that is not waiting for anyone (the one that has
 * been longest at its instruction), else one whose record cannot be read;
 * when every rank waits, what each waits for (a deadlock). */
static void blame(struct rt_comm *c, char *buf, size_t n)
{
	struct mpi_impl *m = impl(c);
	struct rt_comm_progress g, worst;
	int culprit = -1, mute = -1, nwait = 0;
	double age = -1, now = wall();
	size_t k = 0;
	buf[0] = 0;
	if (m->win == MPI_WIN_NULL)
		return;
	for (int q = 0; q < c->size; q++) {
		if (q == c->rank)
			continue;
		if (!peek(m, q, &g, 1.0)) {
			mute = mute < 0 ? q : mute;
			continue;
		}
		nwait += g.waiting || g.done;
		double a = now - (g.since + g.clock);
		if (!g.waiting && !g.done && a > age) {
			age = a;
			culprit = q;
			worst = g;
		}
	}
	char at[160];
	if (culprit >= 0) {
		where(&worst, at, sizeof at);
		snprintf(buf, n, "; rank %d seems hung: at %s for %.1f s, waiting for no rank", culprit, at, age);
	} else if (mute >= 0) {
		snprintf(buf, n, "; rank %d does not answer", mute);
	} else if (nwait == c->size - 1) { /* every rank waits: say for what */
		k = (size_t)snprintf(buf, n, "; every rank waits:");
		for (int q = 0, i = 0; q < c->size && k + 1 < n; q++)
			if (q != c->rank && peek(m, q, &g, 1.0))
				k += (size_t)snprintf(buf + k, n - k, "%s rank %d for %s", i++ ? "," : "", q,
						      g.done ? "the others to finish" : g.what);
	}
}

/* Waits for r until done or the timeout; what names it for the message
 * and this rank's progress record while it blocks. */
static int wait_req(struct rt_comm *c, MPI_Request *r, MPI_Status *st, const char *what)
{
	double t0 = ir_now();
	int rc = 0;
	for (long spins = 0;; spins++) {
		int done = 0, err = MPI_Test(r, &done, st ? st : MPI_STATUS_IGNORE);
		if (err != MPI_SUCCESS || done) {
			rc = err != MPI_SUCCESS ? mpi_fail(err, what) : 0;
			break;
		}
		if (spins == 200) { /* blocking from now: say so */
			snprintf(c->prog->what, sizeof c->prog->what, "%s", what);
			c->prog->since = t0;
			c->prog->waiting = 1;
		}
		if (spins > 200) {
			if (ir_now() - t0 > c->timeout) {
				char who[320];
				blame(c, who, sizeof who);
				/* still marked waiting: a peer timing out later must not blame this rank */
				return ir_errorf(-ETIMEDOUT, "no progress for %.0f s waiting for %s%s", c->timeout,
						 what, who);
			}
			nanosleep(&(struct timespec){ 0, 50000 }, NULL);
		}
	}
	c->prog->waiting = 0;
	return rc;
}

static MPI_Datatype mpi_type(enum ir_dtype t)
{
	switch (t) {
	case IR_F64:
		return MPI_DOUBLE;
	case IR_F32:
		return MPI_FLOAT;
	case IR_F16:
	case IR_BF16:
		return MPI_FLOAT; /* reduced as f32 (see widen) */
	case IR_I64:
		return MPI_INT64_T;
	case IR_I32:
		return MPI_INT32_T;
	case IR_I8:
		return MPI_INT8_T;
	case IR_U8:
	case IR_BOOL:
		return MPI_UINT8_T;
	case IR_DTYPE_COUNT:
		break;
	}
	return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(enum plan_reduce op)
{
	return op == PLAN_MAX ? MPI_MAX : op == PLAN_MIN ? MPI_MIN : MPI_SUM;
}

static bool narrow(enum ir_dtype t)
{
	return t == IR_F16 || t == IR_BF16;
}

/* 16-bit floats travel and reduce as f32: one rounding at the end. */
static float *widen(const void *in, int64_t n, enum ir_dtype t)
{
	float *w = ir_malloc(sizeof *w * (size_t)(n + 1));
	const uint16_t *h = in;
	for (int64_t i = 0; w && i < n; i++)
		w[i] = t == IR_F16 ? ir_f16_to_f32(h[i]) : ir_bf16_to_f32(h[i]);
	return w;
}

static void shorten(const float *w, void *out, int64_t n, enum ir_dtype t)
{
	uint16_t *h = out;
	for (int64_t i = 0; i < n; i++)
		h[i] = t == IR_F16 ? ir_f32_to_f16(w[i]) : ir_f32_to_bf16(w[i]);
}

static int count_of(int64_t n, const char *what)
{
	if (n > 0x7fffffff)
		return ir_errorf(-E2BIG, "%s: %lld elements, more than one MPI call carries", what, (long long)n);
	return 0;
}

/* "all_reduce over ranks 0,1,2,3" into buf. */
static const char *comm_what(struct rt_comm *c, int comm, const char *op, char *buf, size_t n)
{
	const struct plan_comm *pc = &impl(c)->p->comms[comm];
	size_t k = (size_t)snprintf(buf, n, "%s over ranks ", op);
	for (int i = 0; i < pc->n && k + 12 < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%d", i ? "," : "", pc->ranks[i]);
	return buf;
}

static int reap(struct rt_comm *c, bool all)
{
	struct mpi_impl *m = impl(c);
	int keep = 0, rc = 0;
	for (int i = 0; i < m->npend; i++) {
		int done = 0;
		if (rc == 0 && all)
			rc = wait_req(c, &m->pend[i].req, NULL, "a send to complete");
		else if (rc == 0 && MPI_Test(&m->pend[i].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			rc = ir_errorf(-EIO, "MPI_Test of a send failed");
		if (all || done)
			ir_free(m->pend[i].copy);
		else
			m->pend[keep++] = m->pend[i];
	}
	m->npend = all ? 0 : keep;
	return rc;
}

static int m_send(struct rt_comm *c, const void *buf, size_t n, int peer, int tag)
{
	struct mpi_impl *m = impl(c);
	int rc = reap(c, false);
	if (rc < 0 || (rc = count_of((int64_t)n, "send")) < 0)
		return rc;
	if (m->npend == m->cap) {
		int cap = m->cap ? 2 * m->cap : 16;
		struct pending *p = ir_realloc(m->pend, sizeof *p * (size_t)cap);
		if (!p)
			return ir_errorf(-ENOMEM, "out of memory queueing a send");
		m->pend = p;
		m->cap = cap;
	}
	struct pending *p = &m->pend[m->npend];
	if (!(p->copy = ir_malloc(n ? n : 1)))
		return ir_errorf(-ENOMEM, "out of memory queueing a send of %zu bytes", n);
	memcpy(p->copy, buf, n);
	int err = MPI_Isend(p->copy, (int)n, MPI_BYTE, peer, tag % m->tag_ub, m->plan_world, &p->req);
	if (err != MPI_SUCCESS) {
		ir_free(p->copy);
		return mpi_fail(err, "send");
	}
	m->npend++;
	return 0;
}

/* An operation started: what the wait needs to finish it. */
struct rt_comm_req {
	MPI_Request r;
	MPI_Status st;
	bool done;      /* progress saw it complete (st holds its status) */
	int mpi_err;    /* progress saw MPI fail it */
	int64_t expect; /* a receive: the bytes it must get; else -1 */
	float *w;       /* 16-bit floats widened (owned); shortened into out */
	void *out;
	int64_t n; /* elements of w */
	enum ir_dtype t;
	char what[160]; /* "all_reduce over ranks 0,1" for messages */
};

/* A request, listed for progress until it is freed; NULL: out of memory. */
static struct rt_comm_req *req_new(struct rt_comm *c, int64_t expect)
{
	struct mpi_impl *m = impl(c);
	if (m->nlive == m->livecap) {
		int cap = m->livecap ? 2 * m->livecap : 16;
		struct rt_comm_req **l = ir_realloc(m->live, sizeof *l * (size_t)cap);
		if (!l)
			return NULL;
		m->live = l;
		m->livecap = cap;
	}
	struct rt_comm_req *q = ir_calloc(1, sizeof *q);
	if (q) {
		q->r = MPI_REQUEST_NULL;
		q->expect = expect;
		m->live[m->nlive++] = q;
	}
	return q;
}

static void req_free(struct rt_comm *c, struct rt_comm_req *q)
{
	struct mpi_impl *m = impl(c);
	for (int i = 0; i < m->nlive; i++)
		if (m->live[i] == q) {
			m->live[i] = m->live[--m->nlive];
			break;
		}
	ir_free(q->w);
	ir_free(q);
}

static int m_wait(struct rt_comm *c, struct rt_comm_req *q)
{
	int got = 0, rc = q->mpi_err != MPI_SUCCESS ? mpi_fail(q->mpi_err, q->what) : 0;
	if (rc == 0 && !q->done)
		rc = wait_req(c, &q->r, &q->st, q->what);
	if (rc == 0 && q->expect >= 0 && (MPI_Get_count(&q->st, MPI_BYTE, &got), got != q->expect))
		rc = ir_errorf(-EPROTO, "%s: got %d bytes", q->what, got);
	if (rc == 0 && q->w)
		shorten(q->w, q->out, q->n, q->t);
	req_free(c, q);
	return rc;
}

/* The tail of every start: err is the MPI call's; q finished now when req
 * is NULL, else handed over. */
static int issued(struct rt_comm *c, struct rt_comm_req *q, int err, struct rt_comm_req **req)
{
	if (err != MPI_SUCCESS) {
		int rc = mpi_fail(err, q->what);
		req_free(c, q);
		return rc;
	}
	if (!req)
		return m_wait(c, q);
	*req = q;
	return 0;
}

/* One MPI_Test drives Open MPI's whole progress engine (every request,
 * libnbc's schedules included), and each can cost a sched_yield on an
 * over-subscribed host: so one test a call, of the oldest operation not
 * seen done, else of the oldest send. */
static int m_progress(struct rt_comm *c)
{
	struct mpi_impl *m = impl(c);
	int done = 0, err = MPI_SUCCESS;
	for (int i = 0; i < m->nlive; i++) {
		struct rt_comm_req *q = m->live[i];
		if (q->done || q->mpi_err != MPI_SUCCESS)
			continue;
		if ((err = MPI_Test(&q->r, &done, &q->st)) != MPI_SUCCESS)
			q->mpi_err = err;
		q->done = done != 0;
		return 0;
	}
	if (m->npend && MPI_Test(&m->pend[0].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
		return ir_errorf(-EIO, "MPI_Test of a send failed");
	return 0;
}

static int m_recv(struct rt_comm *c, void *buf, size_t n, int peer, int tag, struct rt_comm_req **req)
{
	struct mpi_impl *m = impl(c);
	int rc = count_of((int64_t)n, "recv");
	struct rt_comm_req *q = rc < 0 ? NULL : req_new(c, (int64_t)n);
	if (rc < 0)
		return rc;
	if (!q)
		return ir_errorf(-ENOMEM, "out of memory receiving from rank %d", peer);
	snprintf(q->what, sizeof q->what, "a message from rank %d (tag %d, %zu bytes)", peer, tag, n);
	/* a longer message fails as truncated (MPI_ERRORS_RETURN), a shorter one at the wait */
	return issued(c, q, MPI_Irecv(buf, (int)n, MPI_BYTE, peer, tag % m->tag_ub, m->plan_world, &q->r), req);
}

/* A request for collective op over comm, its count checked (elements). */
static struct rt_comm_req *coll_req(struct rt_comm *c, int comm, const char *op, int64_t count, int *rc)
{
	struct rt_comm_req *q = req_new(c, -1);
	if (!q) {
		*rc = ir_errorf(-ENOMEM, "out of memory starting %s", op);
		return NULL;
	}
	comm_what(c, comm, op, q->what, sizeof q->what);
	if ((*rc = count_of(count, q->what)) < 0) {
		req_free(c, q);
		return NULL;
	}
	return q;
}

/* 16-bit floats of in widened into q (n elements), shortened into out at the wait. */
static int widened(struct rt_comm_req *q, const void *in, void *out, int64_t n, enum ir_dtype t)
{
	if (!narrow(t))
		return 0;
	if (!(q->w = widen(in, n, t)))
		return ir_errorf(-ENOMEM, "out of memory in %s", q->what);
	q->out = out;
	q->n = n;
	q->t = t;
	return 0;
}

static int m_all_reduce(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
			enum plan_reduce op, struct rt_comm_req **req)
{
	int rc;
	struct rt_comm_req *q = coll_req(c, comm, "all_reduce", n, &rc);
	if (q && (rc = widened(q, in, out, n, t)) < 0)
		req_free(c, q);
	if (rc < 0)
		return rc;
	const void *src = q->w ? (const void *)q->w : in;
	void *dst = q->w ? (void *)q->w : out;
	return issued(c, q,
		      MPI_Iallreduce(src == dst ? MPI_IN_PLACE : src, dst, (int)n, mpi_type(t), mpi_op(op),
				     impl(c)->comms[comm], &q->r),
		      req);
}

static int m_reduce_scatter(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
			    struct rt_comm_req **req)
{
	int rc, size = impl(c)->p->comms[comm].n;
	struct rt_comm_req *q = coll_req(c, comm, "reduce_scatter", n * size, &rc);
	if (q && (rc = widened(q, in, out, n * size, t)) < 0)
		req_free(c, q);
	if (rc < 0)
		return rc;
	q->n = n; /* only the first n come back */
	/* widened: in place (MPI forbids one buffer as both); the block comes back first in it */
	return issued(c, q,
		      MPI_Ireduce_scatter_block(q->w ? MPI_IN_PLACE : in, q->w ? (void *)q->w : out, (int)n,
						mpi_type(t), MPI_SUM, impl(c)->comms[comm], &q->r),
		      req);
}

static int m_all_gather(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes, struct rt_comm_req **req)
{
	int rc;
	struct rt_comm_req *q = coll_req(c, comm, "all_gather", (int64_t)bytes * impl(c)->p->comms[comm].n, &rc);
	if (!q)
		return rc;
	return issued(c, q,
		      MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, impl(c)->comms[comm], &q->r),
		      req);
}

static int m_all_to_all(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes, struct rt_comm_req **req)
{
	int rc;
	struct rt_comm_req *q = coll_req(c, comm, "all_to_all", (int64_t)bytes * impl(c)->p->comms[comm].n, &rc);
	if (!q)
		return rc;
	return issued(c, q,
		      MPI_Ialltoall(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, impl(c)->comms[comm], &q->r),
		      req);
}

static int m_flush(struct rt_comm *c)
{
	return reap(c, true);
}

static int m_ctl_send(struct rt_comm *c, const void *buf, size_t n, int peer)
{
	MPI_Request r;
	char what[96];
	snprintf(what, sizeof what, "rank %d to take %zu bytes", peer, n);
	int rc = count_of((int64_t)n, what);
	if (rc < 0)
		return rc;
	int err = MPI_Isend(buf, (int)n, MPI_BYTE, peer, 0, impl(c)->ctl, &r);
	return err != MPI_SUCCESS ? mpi_fail(err, what) : wait_req(c, &r, NULL, what);
}

static int m_ctl_recv(struct rt_comm *c, void *buf, size_t n, int peer)
{
	MPI_Request r;
	MPI_Status st;
	char what[96];
	int got = 0;
	snprintf(what, sizeof what, "%zu bytes from rank %d", n, peer);
	int rc = count_of((int64_t)n, what);
	if (rc < 0)
		return rc;
	int err = MPI_Irecv(buf, (int)n, MPI_BYTE, peer, 0, impl(c)->ctl, &r);
	if (err != MPI_SUCCESS)
		return mpi_fail(err, what);
	if ((rc = wait_req(c, &r, &st, what)) == 0 && (MPI_Get_count(&st, MPI_BYTE, &got), (size_t)got != n))
		rc = ir_errorf(-EPROTO, "%s: got %d", what, got);
	return rc;
}

static int m_ctl_min(struct rt_comm *c, int *v)
{
	MPI_Request r;
	int err = MPI_Iallreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MIN, impl(c)->ctl, &r);
	return err != MPI_SUCCESS ? mpi_fail(err, "every rank's status") : wait_req(c, &r, NULL, "every rank's status");
}

static int m_setup(struct rt_comm *c, const struct plan *p)
{
	struct mpi_impl *m = impl(c);
	m->p = p;
	if (!(m->comms = ir_calloc((size_t)p->ncomms + 1, sizeof *m->comms)))
		return ir_errorf(-ENOMEM, "out of memory creating communicators");
	m->ncomms = p->ncomms;
	for (int k = 0; k < p->ncomms; k++) {
		int key = -1;
		for (int i = 0; i < p->comms[k].n; i++)
			if (p->comms[k].ranks[i] == c->rank)
				key = i;
		int err = MPI_Comm_split(MPI_COMM_WORLD, key >= 0 ? 0 : MPI_UNDEFINED, key, &m->comms[k]);
		if (err != MPI_SUCCESS)
			return mpi_fail(err, "creating a communicator");
		if (m->comms[k] != MPI_COMM_NULL)
			MPI_Comm_set_errhandler(m->comms[k], MPI_ERRORS_RETURN);
	}
	return 0;
}

static _Noreturn void m_abort(struct rt_comm *c, int code)
{
	fflush(stdout);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, code);
	exit(code); /* MPI_Abort does not return; this satisfies _Noreturn */
}

static void m_finish(struct rt_comm *c)
{
	struct mpi_impl *m = impl(c);
	if (!m)
		return;
	reap(c, true);
	c->prog->done = 1;
	if (m->win != MPI_WIN_NULL) {
		MPI_Win_unlock_all(m->win);
		MPI_Win_free(&m->win);
	}
	c->prog = &lone; /* the window's memory is gone */
	for (int k = 0; k < m->ncomms; k++)
		if (m->comms[k] != MPI_COMM_NULL)
			MPI_Comm_free(&m->comms[k]);
	MPI_Comm_free(&m->plan_world);
	MPI_Comm_free(&m->ctl);
	ir_free(m->comms);
	ir_free(m->pend);
	ir_free(m->live);
	ir_free(m);
	c->impl = NULL;
	MPI_Finalize();
}

static const struct rt_comm_ops mpi_ops = {
	.name = "mpi",
	.setup = m_setup,
	.send = m_send,
	.recv = m_recv,
	.all_reduce = m_all_reduce,
	.reduce_scatter = m_reduce_scatter,
	.all_gather = m_all_gather,
	.all_to_all = m_all_to_all,
	.wait = m_wait,
	.progress = m_progress,
	.flush = m_flush,
	.ctl_send = m_ctl_send,
	.ctl_recv = m_ctl_recv,
	.ctl_min = m_ctl_min,
	.blame = blame,
	.abort = m_abort,
	.finish = m_finish,
};

/* The window of progress records, or none (c->prog then &lone, and a
 * timeout names only what it waited for): an MPI without one-sided
 * support, or a file size limit (ulimit -f), which would fail the
 * shared-memory file behind the window, on any rank. Every rank decides
 * alike: the window is collective. */
static void progress_window(struct rt_comm *c, struct mpi_impl *m)
{
	struct rt_comm_progress *g = NULL;
	struct rlimit fs;
	int ok = getrlimit(RLIMIT_FSIZE, &fs) < 0 || fs.rlim_cur == RLIM_INFINITY;
	m->win = MPI_WIN_NULL;
	c->prog = &lone;
	if (MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS || !ok)
		return;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	ok = MPI_Win_allocate((MPI_Aint)sizeof *g, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &g, &m->win) == MPI_SUCCESS &&
	     MPI_Win_set_errhandler(m->win, MPI_ERRORS_RETURN) == MPI_SUCCESS &&
	     MPI_Win_lock_all(MPI_MODE_NOCHECK, m->win) == MPI_SUCCESS;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	if (ok)
		c->prog = g;
	else if (m->win != MPI_WIN_NULL)
		MPI_Win_free(&m->win);
}

/* MPI's name for itself up to its first comma or line, spaces collapsed
 * and MPICH's "Version:" dropped: "Open MPI v4.1.4", "MPICH 4.0.2". */
static void library_name(char *out, size_t n)
{
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;
	size_t k = 0;
	if (MPI_Get_library_version(v, &len) != MPI_SUCCESS)
		len = 0;
	for (int i = 0; i < len && v[i] && v[i] != ',' && v[i] != '\n' && k + 1 < n; i++)
		if (!(v[i] == ' ' || v[i] == '\t') || (k > 0 && out[k - 1] != ' '))
			out[k++] = v[i] == '\t' ? ' ' : v[i];
	while (k > 0 && out[k - 1] == ' ')
		k--;
	snprintf(out + k, n - k, "%s", k ? "" : "an unnamed MPI");
	char *w = strstr(out, " Version: ");
	if (w)
		memmove(w + 1, w + sizeof " Version: " - 1, strlen(w + sizeof " Version: " - 1) + 1);
}

int rt_comm_mpi_init(struct rt_comm *c, int *argc, char ***argv)
{
	int flag = 0, *ub = NULL;
	memset(c, 0, sizeof *c);
	if (MPI_Init(argc, argv) != MPI_SUCCESS)
		return ir_errorf(-EIO, "MPI_Init failed");
	struct mpi_impl *m = ir_calloc(1, sizeof *m);
	if (!m)
		return ir_errorf(-ENOMEM, "out of memory");
	MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &c->size);
	MPI_Comm_dup(MPI_COMM_WORLD, &m->plan_world);
	MPI_Comm_dup(MPI_COMM_WORLD, &m->ctl);
	MPI_Comm_set_errhandler(m->plan_world, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(m->ctl, MPI_ERRORS_RETURN);
	MPI_Comm node;
	if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
		MPI_Comm_rank(node, &c->local_rank);
		MPI_Comm_size(node, &c->local_size);
		MPI_Comm_free(&node);
	}
	library_name(c->mpi, sizeof c->mpi);
	/* PCC_RUN_LOCAL_RANKS=N says better where a launcher groups ranks
	 * wrongly (containers that hide the host's shared memory) */
	const char *lr = getenv("PCC_RUN_LOCAL_RANKS");
	char *end;
	long n = lr ? strtol(lr, &end, 10) : 0;
	if (lr && *lr && !*end && n >= 1 && n <= INT_MAX)
		c->local_size = (int)n;
	progress_window(c, m);
	memset(c->prog, 0, sizeof *c->prog);
	c->prog->instr = -1;
	c->prog->op = -1;
	c->prog->since = ir_now();
	c->prog->clock = wall() - c->prog->since;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
	m->tag_ub = flag && ub && *ub > 0 ? *ub : 32767;
	c->ops = &mpi_ops;
	c->impl = m;
	c->timeout = 300;
	return 0;
}
