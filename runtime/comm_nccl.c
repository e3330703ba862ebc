/*
 * comm_nccl.c: the communication table (comm.h) over NCCL, for buffers in
 * a GPU's memory: every buffer pointer is a device address. Each plan
 * communicator with more than one rank, and each ordered pair of ranks
 * that exchange messages (gpu_plan_pairs), is an NCCL communicator split
 * from a world one (whose id rank 0 sends over the bootstrap table's ctl
 * channel) with a stream of its own: its lane.
 *
 * An operation is enqueued on its lane's stream and is finished when the
 * stream passes it. req NULL waits for that; otherwise *req names the lane
 * and wait synchronizes its stream, or the caller orders its own work after
 * the lane's stream (rt_comm_nccl_stream) and never waits: a req owns
 * nothing. Sends go on the pair's lane and never wait for the receiver on
 * the host. Every wait watches NCCL's asynchronous errors, so a peer that
 * failed shows as an error, and lasts at most the table's timeout. The
 * ctl entries, abort and the clock of progress go to the bootstrap table
 * (MPI), as does every message of the runtime's own.
 *
 * finish destroys the communicators of a run that went well; after an
 * error it aborts them, as NCCL asks (ncclCommDestroy waits for work that
 * may never finish): when the run failed (c->failed), when a call or a
 * wait of this table failed, when a communicator holds an asynchronous
 * error, or when a lane's stream still has work or has failed. A destroy
 * NCCL refuses is followed by an abort, so nothing is left held.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "runtime/gpu_internal.h"

struct lane {
	ncclComm_t comm; /* NULL: this rank is not in it */
	CUstream s;
};

struct nccl {
	const struct gpu_api *a;
	struct rt_comm *boot;
	const struct plan *p;
	ncclComm_t world;
	struct lane *lane; /* [ncomms] then [npairs] */
	int nlane;
	int *pairs, npairs;
	bool failed; /* a call or a wait failed: finish aborts */
};

static struct nccl *impl(const struct rt_comm *c)
{
	return c->impl;
}

static int check(struct nccl *n, ncclResult_t e, const char *what)
{
	if (e == ncclSuccess || e == ncclInProgress)
		return 0;
	n->failed = true;
	return ir_errorf(-EIO, "NCCL %s: %s", what, n->a->ncclGetErrorString(e));
}

static int cu_check(struct nccl *n, CUresult e, const char *what)
{
	if (e == CUDA_SUCCESS)
		return 0;
	n->failed = true;
	return ir_errorf(-EIO, "%s: %s", what, gpu_cu_error(n->a, e));
}

static int split(struct nccl *n, int color, int key, struct lane *l)
{
	ncclComm_t c = NULL;
	int rc = check(n, n->a->ncclCommSplit(n->world, color, key, &c, NULL), "ncclCommSplit");
	if (rc == 0 && color != NCCL_SPLIT_NOCOLOR) {
		l->comm = c;
		rc = cu_check(n, n->a->cuStreamCreate(&l->s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	}
	return rc;
}

static int nccl_setup(struct rt_comm *c, const struct plan *p)
{
	struct nccl *n = impl(c);
	struct rt_comm *b = n->boot;
	ncclUniqueId id;
	int rc = 0, me = c->rank;
	n->p = p;
	if (me == 0)
		rc = check(n, n->a->ncclGetUniqueId(&id), "ncclGetUniqueId");
	for (int q = 1; q < c->size && me == 0 && rc == 0; q++)
		rc = b->ops->ctl_send(b, &id, sizeof id, q);
	if (me != 0)
		rc = b->ops->ctl_recv(b, &id, sizeof id, 0);
	if (rc == 0)
		rc = check(n, n->a->ncclCommInitRank(&n->world, c->size, id, me), "ncclCommInitRank");
	if (rc == 0)
		rc = gpu_plan_pairs(p, &n->pairs, &n->npairs);
	if (rc == 0)
		rc = gpu_plan_check_p2p(p);
	if (rc == 0 && !(n->lane = ir_calloc((size_t)p->ncomms + (size_t)n->npairs + 1, sizeof *n->lane)))
		rc = ir_errorf(-ENOMEM, "out of memory for the communicators");
	if (rc == 0)
		n->nlane = p->ncomms + n->npairs;
	/* every rank splits the same communicators in the same order; one-rank
	 * communicators need none (their collectives are copies) */
	for (int k = 0; k < p->ncomms && rc == 0; k++) {
		const struct plan_comm *pc = &p->comms[k];
		int key = -1;
		for (int j = 0; j < pc->n; j++)
			key = pc->ranks[j] == me ? j : key;
		if (pc->n > 1)
			rc = split(n, key >= 0 ? k : NCCL_SPLIT_NOCOLOR, key >= 0 ? key : 0, &n->lane[k]);
	}
	for (int k = 0; k < n->npairs && rc == 0; k++) {
		int from = n->pairs[2 * k], to = n->pairs[2 * k + 1];
		bool in = me == from || me == to;
		rc = split(n, in ? p->ncomms + k : NCCL_SPLIT_NOCOLOR, me == from ? 0 : 1, &n->lane[p->ncomms + k]);
	}
	return rc;
}

/* The lane of messages from rank `from` to rank `to`, or NULL. */
static struct lane *pair(const struct nccl *n, int from, int to)
{
	for (int k = 0; k < n->npairs; k++)
		if (n->pairs[2 * k] == from && n->pairs[2 * k + 1] == to)
			return n->lane[n->p->ncomms + k].comm ? &n->lane[n->p->ncomms + k] : NULL;
	return NULL;
}

static struct lane *coll(const struct nccl *n, int comm)
{
	return comm >= 0 && comm < n->p->ncomms && n->lane[comm].comm ? &n->lane[comm] : NULL;
}

static int nccl_progress(struct rt_comm *c)
{
	struct nccl *n = impl(c);
	for (int k = -1; k < n->nlane; k++) {
		ncclComm_t m = k < 0 ? n->world : n->lane[k].comm;
		ncclResult_t e = ncclSuccess;
		if (m)
			n->a->ncclCommGetAsyncError(m, &e);
		if (e != ncclSuccess && e != ncclInProgress)
			return check(n, e, "(a peer rank may have failed)");
	}
	return 0;
}

/* Waits for stream s with the table's timeout, watching NCCL's errors. */
static int sync_stream(struct rt_comm *c, CUstream s, const char *what)
{
	struct nccl *n = impl(c);
	double t0 = ir_now(), next_check = t0 + 0.1;
	useconds_t nap = 20;
	bool marked = false;
	for (;;) {
		CUresult e = n->a->cuStreamQuery(s);
		if (e == CUDA_SUCCESS || e != CUDA_ERROR_NOT_READY) {
			if (marked)
				rt_comm_waiting(c, NULL, 0);
			return e == CUDA_SUCCESS ? 0 : cu_check(n, e, what);
		}
		double now = ir_now();
		if (now > next_check) {
			int rc = nccl_progress(c);
			if (rc < 0) {
				ir_error_prefix("%s", what);
				return rc;
			}
			if (!marked)
				rt_comm_waiting(c, what, t0);
			marked = true;
			next_check = now + 0.1;
		}
		if (now - t0 > c->timeout) {
			char who[320];
			n->failed = true;
			rt_comm_blame(c, who, sizeof who);
			/* still marked waiting: a peer timing out later must not blame this rank */
			return ir_errorf(-ETIMEDOUT, "%s: NCCL did not finish in %.0f s%s", what, c->timeout,
					 who[0] ? who : " (a peer rank may have stopped)");
		}
		usleep(nap);
		nap = nap < 1000 ? nap * 2 : nap;
	}
}

/* The end of an operation on lane l: waited for (req NULL), else *req. */
static int done(struct rt_comm *c, struct lane *l, struct rt_comm_req **req, const char *what)
{
	if (req) {
		*req = (struct rt_comm_req *)l;
		return 0;
	}
	return sync_stream(c, l->s, what);
}

static int nccl_send(struct rt_comm *c, const void *buf, size_t bytes, int peer, int tag)
{
	struct nccl *n = impl(c);
	struct lane *l = pair(n, c->rank, peer);
	(void)tag; /* messages of a pair match in order (gpu_plan_check_p2p) */
	if (!l)
		return ir_errorf(-EINVAL, "no communicator for messages from rank %d to rank %d", c->rank, peer);
	return check(n, n->a->ncclSend(buf, bytes, ncclUint8, 1, l->comm, l->s), "send");
}

static int nccl_recv(struct rt_comm *c, void *buf, size_t bytes, int peer, int tag, struct rt_comm_req **req)
{
	struct nccl *n = impl(c);
	struct lane *l = pair(n, peer, c->rank);
	(void)tag;
	if (!l)
		return ir_errorf(-EINVAL, "no communicator for messages from rank %d to rank %d", peer, c->rank);
	int rc = check(n, n->a->ncclRecv(buf, bytes, ncclUint8, 0, l->comm, l->s), "recv");
	return rc == 0 ? done(c, l, req, "a receive") : rc;
}

static ncclDataType_t nccl_type(enum ir_dtype t)
{
	switch (t) {
	case IR_F32:
		return ncclFloat32;
	case IR_F64:
		return ncclFloat64;
	case IR_F16:
		return ncclFloat16;
	case IR_BF16:
		return ncclBfloat16;
	case IR_I64:
		return ncclInt64;
	case IR_I32:
		return ncclInt32;
	case IR_I8:
		return ncclInt8;
	case IR_U8:
	case IR_BOOL:
	case IR_DTYPE_COUNT:
		break;
	}
	return ncclUint8;
}

static struct lane *member(const struct nccl *n, int comm)
{
	struct lane *l = coll(n, comm);
	if (!l)
		ir_errorf(-EINVAL, "this rank is not in communicator %d", comm);
	return l;
}

static int nccl_all_reduce(struct rt_comm *c, int comm, const void *in, void *out, int64_t count, enum ir_dtype t,
			   enum plan_reduce op, struct rt_comm_req **req)
{
	static const ncclRedOp_t ops[PLAN_REDUCE_COUNT] = { ncclSum, ncclMax, ncclMin };
	struct nccl *n = impl(c);
	struct lane *l = member(n, comm);
	if (!l)
		return -EINVAL;
	int rc = check(n, n->a->ncclAllReduce(in, out, (size_t)count, nccl_type(t), ops[op], l->comm, l->s),
		       "all_reduce");
	return rc == 0 ? done(c, l, req, "an all_reduce") : rc;
}

static int nccl_reduce_scatter(struct rt_comm *c, int comm, const void *in, void *out, int64_t count, enum ir_dtype t,
			       struct rt_comm_req **req)
{
	struct nccl *n = impl(c);
	struct lane *l = member(n, comm);
	if (!l)
		return -EINVAL;
	int rc = check(n, n->a->ncclReduceScatter(in, out, (size_t)count, nccl_type(t), ncclSum, l->comm, l->s),
		       "reduce_scatter");
	return rc == 0 ? done(c, l, req, "a reduce_scatter") : rc;
}

static int nccl_all_gather(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes,
			   struct rt_comm_req **req)
{
	struct nccl *n = impl(c);
	struct lane *l = member(n, comm);
	if (!l)
		return -EINVAL;
	int rc = check(n, n->a->ncclAllGather(in, out, bytes, ncclUint8, l->comm, l->s), "all_gather");
	return rc == 0 ? done(c, l, req, "an all_gather") : rc;
}

static int nccl_all_to_all(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes,
			   struct rt_comm_req **req)
{
	struct nccl *n = impl(c);
	struct lane *l = member(n, comm);
	if (!l)
		return -EINVAL;
	const uint8_t *s = in;
	uint8_t *d = out;
	int rc = check(n, n->a->ncclGroupStart(), "group start");
	for (int q = 0; q < n->p->comms[comm].n && rc == 0; q++) {
		rc = check(n, n->a->ncclSend(s + (size_t)q * bytes, bytes, ncclUint8, q, l->comm, l->s), "send");
		if (rc == 0)
			rc = check(n, n->a->ncclRecv(d + (size_t)q * bytes, bytes, ncclUint8, q, l->comm, l->s),
				   "recv");
	}
	if (rc == 0)
		rc = check(n, n->a->ncclGroupEnd(), "group end");
	return rc == 0 ? done(c, l, req, "an all_to_all") : rc;
}

static int nccl_wait(struct rt_comm *c, struct rt_comm_req *req)
{
	struct lane *l = (struct lane *)req;
	return l ? sync_stream(c, l->s, "NCCL") : 0;
}

static int nccl_flush(struct rt_comm *c)
{
	struct nccl *n = impl(c);
	int rc = 0;
	for (int k = n->p ? n->p->ncomms : 0; k < n->nlane && rc == 0; k++)
		if (n->lane[k].comm)
			rc = sync_stream(c, n->lane[k].s, "a send");
	return rc;
}

static int nccl_ctl_send(struct rt_comm *c, const void *buf, size_t bytes, int peer)
{
	struct rt_comm *b = impl(c)->boot;
	return b->ops->ctl_send(b, buf, bytes, peer);
}

static int nccl_ctl_recv(struct rt_comm *c, void *buf, size_t bytes, int peer)
{
	struct rt_comm *b = impl(c)->boot;
	return b->ops->ctl_recv(b, buf, bytes, peer);
}

static int nccl_ctl_min(struct rt_comm *c, int *v)
{
	struct rt_comm *b = impl(c)->boot;
	return b->ops->ctl_min(b, v);
}

static void nccl_blame(struct rt_comm *c, char *buf, size_t n)
{
	rt_comm_blame(impl(c)->boot, buf, n);
}

static void nccl_abort(struct rt_comm *c, int code)
{
	struct rt_comm *b = impl(c)->boot;
	b->ops->abort(b, code);
}

/* Whether communicator m holds an asynchronous error (or cannot say). */
static bool async_failed(const struct nccl *n, ncclComm_t m)
{
	ncclResult_t e = ncclSuccess;
	return m && (n->a->ncclCommGetAsyncError(m, &e) != ncclSuccess || (e != ncclSuccess && e != ncclInProgress));
}

/* Destroys m, or aborts it (after an error, or where NCCL refuses the
 * destroy). */
static void release(const struct nccl *n, ncclComm_t m, bool failed)
{
	if (m && (failed || n->a->ncclCommDestroy(m) != ncclSuccess))
		n->a->ncclCommAbort(m);
}

/* Frees the NCCL communicators and their streams, aborting the
 * communicators after an error (the file's comment says when); the
 * bootstrap table is the caller's. */
static void nccl_finish(struct rt_comm *c)
{
	struct nccl *n = impl(c);
	if (!n)
		return;
	bool failed = c->failed || n->failed || async_failed(n, n->world);
	for (int k = 0; k < n->nlane && !failed; k++)
		failed = async_failed(n, n->lane[k].comm) ||
			 (n->lane[k].s && n->a->cuStreamQuery(n->lane[k].s) != CUDA_SUCCESS);
	for (int k = 0; k < n->nlane; k++) {
		release(n, n->lane[k].comm, failed);
		if (n->lane[k].s)
			n->a->cuStreamDestroy(n->lane[k].s);
	}
	release(n, n->world, failed);
	ir_free(n->lane);
	ir_free(n->pairs);
	ir_free(n);
	c->impl = NULL;
}

static const struct rt_comm_ops nccl_ops = {
	.name = "NCCL",
	.setup = nccl_setup,
	.send = nccl_send,
	.recv = nccl_recv,
	.all_reduce = nccl_all_reduce,
	.reduce_scatter = nccl_reduce_scatter,
	.all_gather = nccl_all_gather,
	.all_to_all = nccl_all_to_all,
	.wait = nccl_wait,
	.progress = nccl_progress,
	.flush = nccl_flush,
	.ctl_send = nccl_ctl_send,
	.ctl_recv = nccl_ctl_recv,
	.ctl_min = nccl_ctl_min,
	.blame = nccl_blame,
	.abort = nccl_abort,
	.finish = nccl_finish,
};

int rt_comm_nccl_init(struct rt_comm *c, struct rt_comm *boot, const struct gpu_api *a)
{
	struct nccl *n = ir_calloc(1, sizeof *n);
	if (!n)
		return ir_errorf(-ENOMEM, "out of memory");
	*n = (struct nccl){ .a = a, .boot = boot };
	*c = (struct rt_comm){ .ops = &nccl_ops,
			       .rank = boot->rank,
			       .size = boot->size,
			       .timeout = boot->timeout,
			       .prog = boot->prog,
			       .impl = n,
			       .local_rank = boot->local_rank,
			       .local_size = boot->local_size };
	snprintf(c->mpi, sizeof c->mpi, "%s", boot->mpi);
	return 0;
}

CUstream rt_comm_nccl_stream(const struct rt_comm *c, int comm, int from, int to)
{
	const struct nccl *n = impl(c);
	const struct lane *l = comm >= 0 ? coll(n, comm) : pair(n, from, to);
	return l ? l->s : NULL;
}
