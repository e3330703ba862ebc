/*
 * comm_local.c: the communication table (comm.h) between threads of one
 * process, one thread per rank, all of them over one world (rt_local_new)
 * that a mutex guards. Sends copy their bytes into the receiver's mailbox;
 * a receive takes the first message of its (peer, tag), or is posted and
 * filled by the send that brings it. A collective's members each leave
 * their operands in the communicator's round for that collective (the
 * members' n-th collective on a communicator is one round); the last to
 * arrive runs it for all of them: reductions in rank order, in double
 * (ir_tensor_get_f64), rounded once to the dtype. Started operations (req)
 * finish when their wait sees them done.
 *
 * A rank that waits while every other rank has stopped or waits too for
 * what is not done, with nothing changing for a while, fails with -EDEADLK
 * naming what it waits for; no wait lasts longer than the timeout. abort
 * ends the process.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/comm.h"

struct msg {
	int src, dst, tag; /* tag -1: the ctl channel */
	size_t n;
	uint8_t *data;
	struct msg *next;
};

struct rt_comm_req {
	bool recv, done;
	int rc;
	/* a posted receive */
	int peer, tag;
	void *buf;
	size_t n;
	/* a collective's round, this rank's place in it, where ctl_min's
	 * result goes */
	struct round *round;
	int me;
	int *ival;
	struct rt_comm_req *next; /* posted receives of a rank, in order */
};

/* One collective of a communicator: its members' operands, the last
 * arrival runs it. */
struct round {
	int comm; /* -1: the world's ctl_min */
	long seq;
	int arrived, left; /* members arrived, members that have waited */
	bool done;
	int rc;
	enum plan_instr_kind kind;
	enum ir_dtype dtype;
	enum plan_reduce op;
	int64_t count; /* elements (reduce) */
	size_t bytes;  /* per block (gather, all_to_all) */
	const void **in;
	void **out;
	int *ival; /* ctl_min */
	struct round *next;
};

struct rt_local {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int size;
	bool *gone;           /* [size]: the rank no longer uses its table */
	const bool **waiting; /* [size]: what the rank's wait waits to be true */
	long gen;             /* changes whenever anything a waiter may wait for does */
	double timeout;
	const struct plan *p;
	struct msg *mail;
	struct rt_comm_req **posted; /* [size]: receives posted, in order */
	long **seq;                  /* [size][ncomms + 1]: collectives started */
	struct round *rounds;
	struct rt_comm_progress *prog; /* [size] */
};

struct rank {
	struct rt_local *w;
};

static struct rt_local *world(const struct rt_comm *c)
{
	return ((struct rank *)c->impl)->w;
}

struct rt_local *rt_local_new(int size, double timeout)
{
	struct rt_local *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->size = size;
	w->timeout = timeout;
	w->posted = calloc((size_t)size + 1, sizeof *w->posted);
	w->seq = calloc((size_t)size + 1, sizeof *w->seq);
	w->prog = calloc((size_t)size + 1, sizeof *w->prog);
	w->gone = calloc((size_t)size + 1, sizeof *w->gone);
	w->waiting = calloc((size_t)size + 1, sizeof *w->waiting);
	if (!w->posted || !w->seq || !w->prog || !w->gone || !w->waiting) {
		rt_local_free(w);
		return NULL;
	}
	for (int k = 0; k < size; k++)
		w->prog[k].instr = -1;
	return w;
}

void rt_local_free(struct rt_local *w)
{
	if (!w)
		return;
	while (w->mail) {
		struct msg *m = w->mail;
		w->mail = m->next;
		free(m->data);
		free(m);
	}
	while (w->rounds) {
		struct round *r = w->rounds;
		w->rounds = r->next;
		free(r->in);
		free(r->out);
		free(r->ival);
		free(r);
	}
	for (int k = 0; w->seq && k < w->size; k++)
		free(w->seq[k]);
	free(w->seq);
	free(w->posted);
	free(w->prog);
	free(w->gone);
	free(w->waiting);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

/* Whether every rank has stopped or waits for something not yet done. */
static bool all_stuck(const struct rt_local *w)
{
	for (int k = 0; k < w->size; k++)
		if (!w->gone[k] && (!w->waiting[k] || *w->waiting[k]))
			return false;
	return true;
}

/* Waits (the lock held) until *flag, the timeout, or a deadlock: every
 * rank stopped or waiting for what is not done, and nothing changing for
 * 0.2 s (a rank whose wait is done counts as running, woken or not). */
static int block(struct rt_comm *c, const bool *flag, const char *what, int peer)
{
	struct rt_local *w = world(c);
	double t0 = ir_now();
	long seen = w->gen;
	double still = t0; /* since when nothing changed while all were stuck */
	w->waiting[c->rank] = flag;
	while (!*flag) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		if (*flag)
			break;
		double now = ir_now();
		if (w->gen != seen || !all_stuck(w)) {
			seen = w->gen;
			still = now;
		}
		if (now - still > 0.2) {
			w->waiting[c->rank] = NULL;
			w->gone[c->rank] = true; /* the others see it and fail in turn */
			w->gen++;
			pthread_cond_broadcast(&w->cv);
			return peer >= 0 ? ir_errorf(-EDEADLK, "deadlock: rank %d waits for %s from rank %d", c->rank,
						     what, peer)
					 : ir_errorf(-EDEADLK, "deadlock: rank %d waits for %s", c->rank, what);
		}
		if (now - t0 > c->timeout) {
			w->waiting[c->rank] = NULL;
			return ir_errorf(-ETIMEDOUT, "rank %d waited %.0f s for %s", c->rank, c->timeout, what);
		}
	}
	w->waiting[c->rank] = NULL;
	return 0;
}

static int local_setup(struct rt_comm *c, const struct plan *p)
{
	struct rt_local *w = world(c);
	int rc = 0;
	pthread_mutex_lock(&w->mu);
	w->p = p;
	if (!w->seq[c->rank] && !(w->seq[c->rank] = calloc((size_t)p->ncomms + 2, sizeof **w->seq)))
		rc = ir_errorf(-ENOMEM, "out of memory");
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* Puts message m where it goes: a posted receive it matches, or the mail. */
static void deliver(struct rt_local *w, struct msg *m)
{
	for (struct rt_comm_req **q = &w->posted[m->dst]; *q; q = &(*q)->next) {
		struct rt_comm_req *r = *q;
		if (r->peer != m->src || r->tag != m->tag)
			continue;
		if (r->n != m->n)
			r->rc = ir_errorf(-EINVAL, "a message of %zu bytes from rank %d (tag %d), expected %zu", m->n,
					  m->src, m->tag, r->n);
		else
			memcpy(r->buf, m->data, m->n);
		r->done = true;
		*q = r->next;
		free(m->data);
		free(m);
		return;
	}
	struct msg **t = &w->mail;
	while (*t)
		t = &(*t)->next;
	*t = m;
}

static int put(struct rt_comm *c, const void *buf, size_t n, int peer, int tag)
{
	struct rt_local *w = world(c);
	if (peer < 0 || peer >= c->size)
		return ir_errorf(-EINVAL, "send to rank %d of %d", peer, c->size);
	struct msg *m = calloc(1, sizeof *m);
	if (!m || !(m->data = malloc(n + 1))) {
		free(m);
		return ir_errorf(-ENOMEM, "out of memory sending %zu bytes", n);
	}
	*m = (struct msg){ c->rank, peer, tag, n, m->data, NULL };
	memcpy(m->data, buf, n);
	pthread_mutex_lock(&w->mu);
	deliver(w, m);
	w->gen++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static int local_send(struct rt_comm *c, const void *buf, size_t n, int peer, int tag)
{
	return put(c, buf, n, peer, tag);
}

static int local_wait(struct rt_comm *c, struct rt_comm_req *req);

static int take(struct rt_comm *c, void *buf, size_t n, int peer, int tag, struct rt_comm_req **req)
{
	struct rt_local *w = world(c);
	struct rt_comm_req *r = calloc(1, sizeof *r);
	if (!r)
		return ir_errorf(-ENOMEM, "out of memory receiving");
	*r = (struct rt_comm_req){ .recv = true, .peer = peer, .tag = tag, .buf = buf, .n = n };
	pthread_mutex_lock(&w->mu);
	struct msg **t = &w->mail;
	while (*t && !((*t)->src == peer && (*t)->dst == c->rank && (*t)->tag == tag))
		t = &(*t)->next;
	if (*t) {
		struct msg *m = *t;
		*t = m->next;
		if (m->n != n)
			r->rc = ir_errorf(-EINVAL, "a message of %zu bytes from rank %d (tag %d), expected %zu", m->n,
					  peer, tag, n);
		else
			memcpy(buf, m->data, n);
		r->done = true;
		free(m->data);
		free(m);
	} else { /* after the receives posted before it */
		struct rt_comm_req **q = &w->posted[c->rank];
		while (*q)
			q = &(*q)->next;
		*q = r;
	}
	pthread_mutex_unlock(&w->mu);
	if (req) {
		*req = r;
		return 0;
	}
	return local_wait(c, r);
}

static int local_recv(struct rt_comm *c, void *buf, size_t n, int peer, int tag, struct rt_comm_req **req)
{
	return take(c, buf, n, peer, tag, req);
}

static double reduce2(enum plan_reduce op, double a, double b)
{
	switch (op) {
	case PLAN_SUM:
		return a + b;
	case PLAN_MAX:
		return a > b ? a : b;
	case PLAN_MIN:
		return a < b ? a : b;
	case PLAN_REDUCE_COUNT:
		break;
	}
	return a;
}

/* Block `blk` of count elements of every member's in, reduced in rank
 * order, into dst. */
static int reduce_block(const struct round *r, int n, int64_t blk, void *dst)
{
	struct ir_shape sh = { .rank = 1, .dims = { r->count } };
	struct ir_tensor acc;
	int rc = ir_tensor_alloc(&acc, r->dtype, &sh);
	if (rc < 0)
		return rc;
	size_t es = ir_dtype_size(r->dtype);
	for (int q = 0; q < n; q++) {
		struct ir_tensor t = { r->dtype, sh, (uint8_t *)r->in[q] + (size_t)blk * (size_t)r->count * es };
		for (int64_t i = 0; i < r->count; i++)
			ir_tensor_set_f64(&acc, i,
					  q == 0 ? ir_tensor_get_f64(&t, i)
						 : reduce2(r->op, ir_tensor_get_f64(&acc, i),
							   ir_tensor_get_f64(&t, i)));
	}
	memcpy(dst, acc.data, (size_t)r->count * es);
	ir_tensor_free(&acc);
	return 0;
}

/* Runs round r for its n members (the last one has arrived). */
static int run_round(struct round *r, int n)
{
	int rc = 0;
	switch (r->kind) {
	case PLAN_ALL_REDUCE: {
		size_t bytes = (size_t)r->count * ir_dtype_size(r->dtype);
		uint8_t *tmp = malloc(bytes + 1);
		if (!tmp)
			return ir_errorf(-ENOMEM, "out of memory reducing");
		rc = reduce_block(r, n, 0, tmp);
		for (int q = 0; q < n && rc == 0; q++)
			memcpy(r->out[q], tmp, bytes);
		free(tmp);
		break;
	}
	case PLAN_REDUCE_SCATTER:
		for (int q = 0; q < n && rc == 0; q++)
			rc = reduce_block(r, n, q, r->out[q]);
		break;
	case PLAN_ALL_GATHER:
		for (int q = 0; q < n; q++)
			for (int s = 0; s < n; s++)
				memcpy((uint8_t *)r->out[q] + (size_t)s * r->bytes, r->in[s], r->bytes);
		break;
	case PLAN_ALL_TO_ALL:
		for (int q = 0; q < n; q++)
			for (int s = 0; s < n; s++)
				memcpy((uint8_t *)r->out[q] + (size_t)s * r->bytes,
				       (const uint8_t *)r->in[s] + (size_t)q * r->bytes, r->bytes);
		break;
	case PLAN_KERNEL: /* ctl_min */
		for (int q = 1; q < n; q++)
			r->ival[0] = r->ival[q] < r->ival[0] ? r->ival[q] : r->ival[0];
		for (int q = 1; q < n; q++)
			r->ival[q] = r->ival[0];
		break;
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		rc = ir_errorf(-EINVAL, "%s is not a collective", plan_instr_kind_name(r->kind));
		break;
	}
	return rc;
}

/* This rank's place in communicator comm (-1: the world), and its size. */
static int place(const struct rt_comm *c, int comm, int *n)
{
	const struct rt_local *w = world(c);
	if (comm < 0) {
		*n = c->size;
		return c->rank;
	}
	const struct plan_comm *pc = &w->p->comms[comm];
	*n = pc->n;
	for (int j = 0; j < pc->n; j++)
		if (pc->ranks[j] == c->rank)
			return j;
	return -1;
}

/* Joins this rank's next round of comm with its operands (the last
 * arrival runs it); a wait finishes it. */
static int arrive(struct rt_comm *c, int comm, const struct round *op, const void *in, void *out, int *ival,
		  struct rt_comm_req **req)
{
	struct rt_local *w = world(c);
	int n, me = place(c, comm, &n), rc = 0;
	if (me < 0)
		return ir_errorf(-EINVAL, "rank %d is not in communicator %d", c->rank, comm);
	struct rt_comm_req *q = calloc(1, sizeof *q);
	if (!q)
		return ir_errorf(-ENOMEM, "out of memory starting a collective");
	pthread_mutex_lock(&w->mu);
	long seq = w->seq[c->rank][comm + 1]++;
	struct round *r = w->rounds;
	while (r && (r->comm != comm || r->seq != seq))
		r = r->next;
	if (!r && (r = calloc(1, sizeof *r))) {
		*r = *op;
		r->comm = comm;
		r->seq = seq;
		r->in = calloc((size_t)n + 1, sizeof *r->in);
		r->out = calloc((size_t)n + 1, sizeof *r->out);
		r->ival = calloc((size_t)n + 1, sizeof *r->ival);
		r->next = w->rounds;
		w->rounds = r;
		if (!r->in || !r->out || !r->ival)
			rc = ir_errorf(-ENOMEM, "out of memory starting a collective");
	} else if (!r) {
		rc = ir_errorf(-ENOMEM, "out of memory starting a collective");
	} else if (r->kind != op->kind || r->count != op->count || r->bytes != op->bytes) {
		rc = ir_errorf(-EINVAL,
			       "communicator %d, collective %ld: rank %d starts a %s of %zu bytes, another "
			       "member a %s of %zu",
			       comm, seq, c->rank, plan_instr_kind_name(op->kind),
			       op->bytes ? op->bytes : (size_t)op->count * ir_dtype_size(op->dtype),
			       plan_instr_kind_name(r->kind),
			       r->bytes ? r->bytes : (size_t)r->count * ir_dtype_size(r->dtype));
	}
	if (rc == 0) {
		r->in[me] = in;
		r->out[me] = out;
		if (ival)
			r->ival[me] = *ival;
		if (++r->arrived == n) {
			r->rc = run_round(r, n);
			r->done = true;
		}
		q->round = r;
		q->me = me;
		q->ival = ival;
		w->gen++;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	if (rc < 0) {
		free(q);
		return rc;
	}
	if (req) {
		*req = q;
		return 0;
	}
	return local_wait(c, q);
}

static int local_all_reduce(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
			    enum plan_reduce op, struct rt_comm_req **req)
{
	struct round r = { .kind = PLAN_ALL_REDUCE, .dtype = t, .op = op, .count = n };
	return arrive(c, comm, &r, in, out, NULL, req);
}

static int local_reduce_scatter(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
				struct rt_comm_req **req)
{
	struct round r = { .kind = PLAN_REDUCE_SCATTER, .dtype = t, .op = PLAN_SUM, .count = n };
	return arrive(c, comm, &r, in, out, NULL, req);
}

static int local_all_gather(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes,
			    struct rt_comm_req **req)
{
	struct round r = { .kind = PLAN_ALL_GATHER, .bytes = bytes };
	return arrive(c, comm, &r, in, out, NULL, req);
}

static int local_all_to_all(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes,
			    struct rt_comm_req **req)
{
	struct round r = { .kind = PLAN_ALL_TO_ALL, .bytes = bytes };
	return arrive(c, comm, &r, in, out, NULL, req);
}

static int local_wait(struct rt_comm *c, struct rt_comm_req *q)
{
	struct rt_local *w = world(c);
	char what[96];
	if (q->recv)
		snprintf(what, sizeof what, "a message (tag %d)", q->tag);
	else if (q->round->comm < 0)
		snprintf(what, sizeof what, "every rank to agree");
	else
		snprintf(what, sizeof what, "a %s on communicator %d", plan_instr_kind_name(q->round->kind),
			 q->round->comm);
	pthread_mutex_lock(&w->mu);
	bool *flag = q->recv ? &q->done : &q->round->done;
	int rc = block(c, flag, what, q->recv ? q->peer : -1);
	if (rc == 0)
		rc = q->recv ? q->rc : q->round->rc;
	if (!q->recv && *flag) {
		struct round *r = q->round;
		int n;
		place(c, r->comm, &n);
		if (q->ival)
			*q->ival = r->ival[q->me];
		if (++r->left == n) { /* every member is past it */
			struct round **t = &w->rounds;
			while (*t != r)
				t = &(*t)->next;
			*t = r->next;
			free(r->in);
			free(r->out);
			free(r->ival);
			free(r);
		}
	}
	if (q->recv && !q->done) { /* failed: no longer posted */
		for (struct rt_comm_req **t = &w->posted[c->rank]; *t; t = &(*t)->next)
			if (*t == q) {
				*t = q->next;
				break;
			}
	}
	pthread_mutex_unlock(&w->mu);
	if (rc < 0 && q->recv && !q->done)
		ir_error_prefix("rank %d", c->rank);
	free(q);
	return rc;
}

static int local_progress(struct rt_comm *c)
{
	(void)c;
	return 0;
}

static int local_flush(struct rt_comm *c)
{
	(void)c;
	return 0;
}

static int local_ctl_send(struct rt_comm *c, const void *buf, size_t n, int peer)
{
	return put(c, buf, n, peer, -1);
}

static int local_ctl_recv(struct rt_comm *c, void *buf, size_t n, int peer)
{
	return take(c, buf, n, peer, -1, NULL);
}

static int local_ctl_min(struct rt_comm *c, int *v)
{
	struct round r = { .kind = PLAN_KERNEL };
	return arrive(c, -1, &r, NULL, NULL, v, NULL);
}

static void local_abort(struct rt_comm *c, int code)
{
	fprintf(stderr, "rank %d: aborting the process\n", c->rank);
	_exit(code);
}

static void local_finish(struct rt_comm *c)
{
	free(c->impl);
	c->impl = NULL;
}

static const struct rt_comm_ops local_ops = {
	.name = "in-process",
	.setup = local_setup,
	.send = local_send,
	.recv = local_recv,
	.all_reduce = local_all_reduce,
	.reduce_scatter = local_reduce_scatter,
	.all_gather = local_all_gather,
	.all_to_all = local_all_to_all,
	.wait = local_wait,
	.progress = local_progress,
	.flush = local_flush,
	.ctl_send = local_ctl_send,
	.ctl_recv = local_ctl_recv,
	.ctl_min = local_ctl_min,
	.abort = local_abort,
	.finish = local_finish,
};

int rt_comm_local_init(struct rt_comm *c, struct rt_local *w, int rank)
{
	struct rank *k = calloc(1, sizeof *k);
	if (!k)
		return ir_errorf(-ENOMEM, "out of memory");
	k->w = w;
	*c = (struct rt_comm){ .ops = &local_ops,
			       .rank = rank,
			       .size = w->size,
			       .timeout = w->timeout,
			       .prog = &w->prog[rank],
			       .impl = k,
			       .local_rank = rank,
			       .local_size = w->size };
	snprintf(c->mpi, sizeof c->mpi, "in-process");
	return 0;
}

void rt_local_start(struct rt_local *w)
{
	pthread_mutex_lock(&w->mu);
	for (int k = 0; k < w->size; k++)
		w->gone[k] = false;
	pthread_mutex_unlock(&w->mu);
}

void rt_comm_local_done(struct rt_comm *c)
{
	struct rt_local *w = world(c);
	pthread_mutex_lock(&w->mu);
	w->gone[c->rank] = true;
	w->gen++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}
