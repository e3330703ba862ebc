/*
 * gpu_standin_nccl.c: NCCL in the checking stand-in for a GPU
 * (gpu_standin.h), over MPI between the ranks pcc-run already runs as. A
 * communicator is an MPI communicator (ncclCommInitRank dups the world and
 * checks that every rank gave the same id; ncclCommSplit is
 * MPI_Comm_split). A collective or transfer starts as non-blocking MPI
 * when its stream reaches it and is done when MPI says so; calls between
 * ncclGroupStart and ncclGroupEnd start together.
 *
 * Every message carries a header (the call, its count and type, the
 * reduction, the collective's number on its communicator), so a rank that
 * issued another collective, another size or another order than its peers
 * fails naming both calls, where NCCL would hang or mix the bytes up.
 * Reductions add the ranks' blocks in rank order, in f64 for floating
 * types: every rank gets the same bits. A communicator neither destroyed
 * nor aborted when MPI_Finalize starts is named on stderr (a program that
 * leaves one behind holds MPI's too).
 *
 * A call recorded in a stream capture (NCCL's calls can be) is numbered
 * when a launch of its graph queues it, not when recorded, so a rank that
 * replays a graph and one that issues the same calls live agree; the
 * recorded call holds its communicator until the graph is destroyed.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ir/ir.h"
#include "runtime/gpu_standin.h"

#define NC_LIVE 0x6e63636cu
#define NC_MAGIC 0x70636373u

enum nc_kind { NC_ALL_REDUCE, NC_ALL_GATHER, NC_REDUCE_SCATTER, NC_SEND, NC_RECV, NC_GROUP };

static const char *const kind_name[] = { "ncclAllReduce", "ncclAllGather", "ncclReduceScatter",
					 "ncclSend",      "ncclRecv",      "ncclGroup" };

struct ncclComm {
	uint32_t magic;
	MPI_Comm mpi;
	int rank, n;
	uint64_t seq; /* collectives queued on it so far */
	int inflight; /* queued and not done */
	ncclResult_t async;
};

struct hdr {
	uint32_t magic, kind;
	uint64_t count, seq;
	int32_t type, op, from, pad;
};

struct nc_op {
	struct si_op op;
	enum nc_kind kind;
	struct ncclComm *c;
	CUdeviceptr send, recv;
	size_t count; /* elements: per rank's block (all-gather, reduce-scatter) or whole */
	ncclDataType_t type;
	ncclRedOp_t red;
	int peer;
	struct hdr h;
	unsigned char *out, *in; /* messages: header + bytes */
	size_t block;            /* bytes of one message */
	MPI_Request req;
	bool running;       /* started, not yet done (a group's calls) */
	struct nc_op **sub; /* NC_GROUP: its calls */
	int nsub;
};

static struct si_why why;
static int nlive, naborted; /* si_nccl_live's */
static int group_depth;
static struct nc_op **group;
static int ngroup, capgroup;
static CUstream group_stream;

static const char *result_name(ncclResult_t r)
{
	return r == ncclSuccess              ? "no error"
	       : r == ncclUnhandledCudaError ? "unhandled cuda error"
	       : r == ncclSystemError        ? "unhandled system error"
	       : r == ncclInternalError      ? "internal error"
	       : r == ncclInvalidArgument    ? "invalid argument"
	       : r == ncclInvalidUsage       ? "invalid usage"
					     : "error";
}

static ncclResult_t nc_fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static ncclResult_t nc_fail(ncclResult_t r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	si_why_set(&why, (int)r, result_name(r), fmt, ap);
	va_end(ap);
	return r;
}

/* r, with the driver's message for error e as its text. */
static ncclResult_t nc_pass(ncclResult_t r, int e)
{
	return (ncclResult_t)si_why_pass(&why, (int)r, e);
}

static const char *error_string(ncclResult_t r)
{
	return si_why_text(&why, (int)r, result_name(r));
}

static size_t type_size(ncclDataType_t t)
{
	if (t == ncclInt8 || t == ncclUint8)
		return 1;
	if (t == ncclFloat16 || t == ncclBfloat16)
		return 2;
	if (t == ncclInt32 || t == ncclUint32 || t == ncclFloat32)
		return 4;
	return t == ncclInt64 || t == ncclUint64 || t == ncclFloat64 ? 8 : 0;
}

static ncclResult_t get_version(int *v)
{
	*v = 22800;
	return ncclSuccess;
}

static ncclResult_t get_unique_id(ncclUniqueId *id)
{
	memset(id, 0, sizeof *id);
	snprintf(id->internal, sizeof id->internal, "pcc-standin %ld %ld %lld", (long)getpid(), (long)time(NULL),
		 (long long)(ir_now() * 1e9));
	return ncclSuccess;
}

static ncclResult_t mpi_check(int err, const char *what)
{
	if (err == MPI_SUCCESS)
		return ncclSuccess;
	char s[MPI_MAX_ERROR_STRING];
	int n = 0;
	MPI_Error_string(err, s, &n);
	return nc_fail(ncclSystemError, "%s: %s", what, s);
}

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: the count of
 * communicators left then. */
static int at_finalize(MPI_Comm self, int key, void *val, void *extra)
{
	(void)self;
	(void)val;
	(void)extra;
	if (nlive) {
		int rank = 0;
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		fprintf(stderr,
			"pcc GPU stand-in: rank %d: %d NCCL communicator%s neither destroyed nor aborted at "
			"MPI_Finalize\n",
			rank, nlive, nlive == 1 ? "" : "s");
	}
	MPI_Comm_free_keyval(&key);
	return MPI_SUCCESS;
}

static struct ncclComm *comm_new(MPI_Comm m)
{
	static bool watched;
	int key;
	if (!watched && MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &key, NULL) == MPI_SUCCESS)
		watched = MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL) == MPI_SUCCESS;
	struct ncclComm *c = ir_calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->magic = NC_LIVE;
	nlive++;
	si_keep(c); /* held until freed: an in-flight one outlives ncclCommDestroy */
	c->mpi = m;
	MPI_Comm_rank(m, &c->rank);
	MPI_Comm_size(m, &c->n);
	MPI_Comm_set_errhandler(m, MPI_ERRORS_RETURN);
	return c;
}

static ncclResult_t comm_init_rank(ncclComm_t *out, int n, ncclUniqueId id, int rank)
{
	int inited = 0, size = 0, me = 0;
	MPI_Initialized(&inited);
	if (!inited)
		return nc_fail(ncclInvalidUsage, "ncclCommInitRank before MPI_Init (the stand-in runs NCCL over MPI)");
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (n != size || rank != me)
		return nc_fail(ncclInvalidArgument,
			       "ncclCommInitRank(%d ranks, rank %d), but MPI has %d ranks and this is rank %d", n, rank,
			       size, me);
	MPI_Comm m;
	ncclResult_t r = mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &m), "MPI_Comm_dup");
	if (r != ncclSuccess)
		return r;
	char *all = ir_malloc((size_t)size * sizeof id.internal);
	if (!all) {
		MPI_Comm_free(&m);
		return nc_fail(ncclSystemError, "out of host memory");
	}
	r = mpi_check(MPI_Allgather(id.internal, sizeof id.internal, MPI_BYTE, all, sizeof id.internal, MPI_BYTE, m),
		      "MPI_Allgather");
	for (int q = 0; q < size && r == ncclSuccess; q++)
		if (memcmp(all + (size_t)q * sizeof id.internal, id.internal, sizeof id.internal))
			r = nc_fail(ncclInvalidUsage, "ncclCommInitRank: rank %d gave another unique id than rank %d",
				    q, me);
	ir_free(all);
	if (r == ncclSuccess && !(*out = comm_new(m)))
		r = nc_fail(ncclSystemError, "out of host memory");
	if (r != ncclSuccess) /* the duplicate is no one's */
		MPI_Comm_free(&m);
	return r;
}

static ncclResult_t comm_ok(struct ncclComm *c, const char *what)
{
	if (!c || c->magic != NC_LIVE)
		return nc_fail(ncclInvalidArgument, "%s on a communicator that is not live", what);
	return ncclSuccess;
}

static ncclResult_t comm_split(ncclComm_t c, int color, int key, ncclComm_t *out, ncclConfig_t *config)
{
	ncclResult_t r = comm_ok(c, "ncclCommSplit");
	MPI_Comm m = MPI_COMM_NULL;
	if (r == ncclSuccess)
		r = mpi_check(MPI_Comm_split(c->mpi, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &m),
			      "MPI_Comm_split");
	if (r != ncclSuccess)
		return r;
	*out = NULL;
	if (m != MPI_COMM_NULL && !(*out = comm_new(m)))
		return nc_fail(ncclSystemError, "out of host memory");
	(void)config;
	return ncclSuccess;
}

static ncclResult_t comm_free(ncclComm_t c, bool check)
{
	ncclResult_t r = comm_ok(c, check ? "ncclCommDestroy" : "ncclCommAbort");
	if (r == ncclSuccess && check && c->inflight)
		r = nc_fail(ncclInvalidUsage,
			    "ncclCommDestroy with %d calls on it not done (queued, or recorded in a CUDA graph not "
			    "destroyed yet)",
			    c->inflight);
	if (r != ncclSuccess)
		return r;
	c->magic = 0;
	nlive--;
	naborted += !check;
	/* Once the context is lost its queued calls never run again, so an
	 * abort frees the MPI communicator at once (MPI lets a pending
	 * operation finish on a freed one): else MPI_Finalize would find it
	 * still held. The struct stays while queued calls name it. */
	if (!c->inflight || (!check && si_sticky()))
		MPI_Comm_free(&c->mpi);
	if (!c->inflight)
		ir_free(c);
	return ncclSuccess;
}

static ncclResult_t comm_destroy(ncclComm_t c)
{
	return comm_free(c, true);
}

static ncclResult_t comm_abort(ncclComm_t c)
{
	return comm_free(c, false);
}

static ncclResult_t async_error(ncclComm_t c, ncclResult_t *r)
{
	ncclResult_t e = comm_ok(c, "ncclCommGetAsyncError");
	*r = e == ncclSuccess ? c->async : e;
	return e;
}

/* ---- reductions ------------------------------------------------------------------ */

static double get(const unsigned char *p, ncclDataType_t t, size_t i)
{
	float f;
	double d;
	uint16_t h;
	int32_t i32;
	uint32_t u32;
	int64_t i64;
	uint64_t u64;
	if (t == ncclFloat32)
		return memcpy(&f, p + 4 * i, 4), f;
	if (t == ncclFloat64)
		return memcpy(&d, p + 8 * i, 8), d;
	if (t == ncclFloat16 || t == ncclBfloat16) {
		memcpy(&h, p + 2 * i, 2);
		return t == ncclFloat16 ? ir_f16_to_f32(h) : ir_bf16_to_f32(h);
	}
	if (t == ncclInt32)
		return memcpy(&i32, p + 4 * i, 4), i32;
	if (t == ncclUint32)
		return memcpy(&u32, p + 4 * i, 4), u32;
	if (t == ncclInt64)
		return memcpy(&i64, p + 8 * i, 8), (double)i64;
	if (t == ncclUint64)
		return memcpy(&u64, p + 8 * i, 8), (double)u64;
	return t == ncclInt8 ? (int8_t)p[i] : p[i];
}

static void put(unsigned char *p, ncclDataType_t t, size_t i, double v)
{
	float f = (float)v;
	uint16_t h;
	int32_t i32 = (int32_t)v;
	uint32_t u32 = (uint32_t)v;
	int64_t i64 = (int64_t)v;
	uint64_t u64 = (uint64_t)v;
	if (t == ncclFloat32)
		memcpy(p + 4 * i, &f, 4);
	else if (t == ncclFloat64)
		memcpy(p + 8 * i, &v, 8);
	else if (t == ncclFloat16 || t == ncclBfloat16) {
		h = t == ncclFloat16 ? ir_f32_to_f16(f) : ir_f32_to_bf16(f);
		memcpy(p + 2 * i, &h, 2);
	} else if (t == ncclInt32)
		memcpy(p + 4 * i, &i32, 4);
	else if (t == ncclUint32)
		memcpy(p + 4 * i, &u32, 4);
	else if (t == ncclInt64)
		memcpy(p + 8 * i, &i64, 8);
	else if (t == ncclUint64)
		memcpy(p + 8 * i, &u64, 8);
	else
		p[i] = (unsigned char)(int64_t)v;
}

/* dst[i] = blocks[0][i] red blocks[1][i] red ..., blocks n apart by stride. */
static void reduce(unsigned char *dst, const unsigned char *blocks, size_t stride, int n, size_t count,
		   ncclDataType_t t, ncclRedOp_t red)
{
	for (size_t i = 0; i < count; i++) {
		double v = get(blocks, t, i);
		for (int q = 1; q < n; q++) {
			double w = get(blocks + (size_t)q * stride, t, i);
			v = red == ncclMax    ? (w > v ? w : v)
			    : red == ncclMin  ? (w < v ? w : v)
			    : red == ncclProd ? v * w
					      : v + w;
		}
		put(dst, t, i, red == ncclAvg ? v / n : v);
	}
}

/* ---- calls ------------------------------------------------------------------------ */

static void nc_done(struct si_op *o)
{
	struct nc_op *x = (struct nc_op *)o;
	for (int i = 0; i < x->nsub; i++) {
		x->sub[i]->op.done = NULL;
		nc_done(&x->sub[i]->op);
	}
	if (x->c && --x->c->inflight == 0 && x->c->magic != NC_LIVE) {
		if (x->c->mpi != MPI_COMM_NULL)
			MPI_Comm_free(&x->c->mpi);
		ir_free(x->c);
	}
	ir_free(x->sub);
	ir_free(x->out);
	ir_free(x->in);
	ir_free(x->op.rg);
	ir_free(x);
}

static int start(struct nc_op *x)
{
	size_t es = type_size(x->type), bytes = x->count * es;
	int n = x->c->n, err;
	x->block = sizeof(struct hdr) + bytes;
	size_t nout = x->kind == NC_REDUCE_SCATTER ? (size_t)n * x->block : x->kind == NC_RECV ? 0 : x->block;
	size_t nin = x->kind == NC_SEND ? 0 : x->kind == NC_RECV ? x->block + 1 : (size_t)n * x->block;
	if ((nout && !(x->out = ir_malloc(nout))) || (nin && !(x->in = ir_malloc(nin)))) {
		si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for %s", kind_name[x->kind]);
		return -1;
	}
	size_t sbytes = x->kind == NC_REDUCE_SCATTER ? (size_t)n * bytes : bytes;
	const unsigned char *src = x->kind == NC_RECV ? NULL : si_host(x->send, sbytes, "the send buffer");
	if (x->kind != NC_RECV && !src)
		return -1;
	for (int q = 0; q < (x->kind == NC_REDUCE_SCATTER ? n : x->kind == NC_RECV ? 0 : 1); q++) {
		memcpy(x->out + (size_t)q * x->block, &x->h, sizeof x->h);
		memcpy(x->out + (size_t)q * x->block + sizeof x->h, src + (size_t)q * bytes, bytes);
	}
	int cnt = (int)x->block;
	if (x->block > (size_t)INT32_MAX) {
		si_fail(CUDA_ERROR_INVALID_VALUE, "%s of %zu bytes: more than the stand-in's MPI count",
			kind_name[x->kind], x->block);
		return -1;
	}
	if (x->kind == NC_ALL_REDUCE || x->kind == NC_ALL_GATHER)
		err = MPI_Iallgather(x->out, cnt, MPI_BYTE, x->in, cnt, MPI_BYTE, x->c->mpi, &x->req);
	else if (x->kind == NC_REDUCE_SCATTER)
		err = MPI_Ialltoall(x->out, cnt, MPI_BYTE, x->in, cnt, MPI_BYTE, x->c->mpi, &x->req);
	else if (x->kind == NC_SEND)
		err = MPI_Isend(x->out, cnt, MPI_BYTE, x->peer, 0, x->c->mpi, &x->req);
	else
		err = MPI_Irecv(x->in, cnt + 1, MPI_BYTE, x->peer, 0, x->c->mpi, &x->req);
	x->running = true;
	if (mpi_check(err, kind_name[x->kind]) != ncclSuccess) {
		si_fail(CUDA_ERROR_LAUNCH_FAILED, "%s", why.text);
		return -1;
	}
	return 1;
}

static const char *type_name(int32_t t)
{
	static const struct {
		ncclDataType_t t;
		const char *name;
	} v[] = { { ncclInt8, "int8" },        { ncclUint8, "uint8" },     { ncclInt32, "int32" },
		  { ncclUint32, "uint32" },    { ncclInt64, "int64" },     { ncclUint64, "uint64" },
		  { ncclFloat16, "float16" },  { ncclFloat32, "float32" }, { ncclFloat64, "float64" },
		  { ncclBfloat16, "bfloat16" } };
	for (size_t i = 0; i < sizeof v / sizeof *v; i++)
		if ((int32_t)v[i].t == t)
			return v[i].name;
	return "?";
}

/* The header from rank q against this rank's. */
static int same(const struct nc_op *x, const struct hdr *h, int q)
{
	const struct hdr *m = &x->h;
	enum nc_kind want = x->kind == NC_RECV ? NC_SEND : x->kind;
	if (h->magic == NC_MAGIC && h->kind == (uint32_t)want && h->count == m->count && h->type == m->type &&
	    h->op == m->op && h->seq == m->seq)
		return 0;
	si_fail(CUDA_ERROR_LAUNCH_FAILED,
		"NCCL calls out of step: rank %d of the communicator issued %s of %llu %s (reduction %d) as its "
		"collective #%llu, where rank %d issued %s of %llu %s (reduction %d) as #%llu",
		q, h->kind < NC_GROUP ? kind_name[h->kind] : "?", (unsigned long long)h->count, type_name(h->type),
		(int)h->op, (unsigned long long)h->seq, x->c->rank, kind_name[want], (unsigned long long)m->count,
		type_name(m->type), (int)m->op, (unsigned long long)m->seq);
	return -1;
}

static int finish(struct nc_op *x)
{
	size_t es = type_size(x->type), bytes = x->count * es;
	int n = x->c->n;
	if (x->kind == NC_SEND)
		return 0;
	if (x->kind == NC_RECV) {
		struct hdr h;
		memcpy(&h, x->in, sizeof h);
		if (same(x, &h, x->peer) < 0)
			return -1;
	} else {
		for (int q = 0; q < n; q++) {
			struct hdr h;
			memcpy(&h, x->in + (size_t)q * x->block, sizeof h);
			if (same(x, &h, q) < 0)
				return -1;
		}
	}
	size_t rbytes = x->kind == NC_ALL_GATHER ? (size_t)n * bytes : bytes;
	unsigned char *dst = si_host(x->recv, rbytes, "the receive buffer");
	if (!dst)
		return -1;
	const unsigned char *data = x->in + sizeof(struct hdr);
	if (x->kind == NC_RECV)
		memcpy(dst, data, bytes);
	else if (x->kind == NC_ALL_GATHER)
		for (int q = 0; q < n; q++)
			memcpy(dst + (size_t)q * bytes, data + (size_t)q * x->block, bytes);
	else
		reduce(dst, data, x->block, n, x->count, x->type, x->red);
	return 0;
}

static int poll_one(struct nc_op *x, bool first)
{
	if (first)
		return start(x);
	int flag = 0;
	MPI_Status st;
	int err = MPI_Test(&x->req, &flag, &st);
	if (err != MPI_SUCCESS) {
		mpi_check(err, kind_name[x->kind]);
		si_fail(CUDA_ERROR_LAUNCH_FAILED, "%s (rank %d sent more bytes than this call receives?)", why.text,
			x->peer);
		return -1;
	}
	if (!flag)
		return 1;
	if (x->kind == NC_RECV) {
		int got = 0;
		MPI_Get_count(&st, MPI_BYTE, &got);
		if ((size_t)got != x->block) {
			si_fail(CUDA_ERROR_LAUNCH_FAILED,
				"ncclRecv of %zu bytes from rank %d of the communicator got a message of %zu bytes",
				x->block - sizeof(struct hdr), x->peer, (size_t)got - sizeof(struct hdr));
			return -1;
		}
	}
	return finish(x);
}

static int step(struct si_op *o, bool first)
{
	struct nc_op *x = (struct nc_op *)o;
	if (x->kind != NC_GROUP)
		return poll_one(x, first);
	int busy = 0;
	for (int i = 0; i < x->nsub; i++) { /* all start at once, as NCCL's group does */
		struct nc_op *s = x->sub[i];
		if (!first && !s->running)
			continue;
		int rc = poll_one(s, first);
		if (rc < 0)
			return rc;
		if (rc == 0)
			s->running = false;
		busy += rc == 1;
	}
	return busy ? 1 : 0;
}

/* A graph launch's copy of a recorded call (gpu_standin.h): its own
 * buffers, a hold on the communicator, its number there now. */
static int nc_clone(struct si_op *o)
{
	struct nc_op *x = (struct nc_op *)o, **tsub = x->sub;
	int n = x->nsub;
	x->out = x->in = NULL;
	x->sub = NULL;
	x->nsub = 0;
	x->running = false;
	x->req = MPI_REQUEST_NULL;
	if (x->c)
		x->c->inflight++;
	if (x->c && x->c->magic != NC_LIVE) {
		si_fail(CUDA_ERROR_LAUNCH_FAILED,
			"cuGraphLaunch: the graph's %s is on a NCCL communicator destroyed since its capture",
			kind_name[x->kind]);
		return -1;
	}
	if (x->c && x->kind != NC_SEND && x->kind != NC_RECV)
		x->h.seq = ++x->c->seq;
	if (n && !(x->sub = ir_calloc((size_t)n, sizeof *x->sub))) {
		si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory launching a graph");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct si_op *c = si_op_clone(&tsub[i]->op);
		if (!c)
			return -1;
		c->done = NULL; /* freed by the group's */
		x->sub[x->nsub++] = (struct nc_op *)c;
	}
	return 0;
}

static CUresult queue(struct nc_op *x, CUstream s)
{
	x->c->inflight++;
	return si_enqueue(s, &x->op);
}

static ncclResult_t call(enum nc_kind kind, const void *send, void *recv, size_t count, ncclDataType_t type,
			 ncclRedOp_t red, int peer, ncclComm_t c, cudaStream_t stream)
{
	CUstream s = (CUstream)stream;
	ncclResult_t r = comm_ok(c, kind_name[kind]);
	if (r != ncclSuccess)
		return r;
	size_t es = type_size(type);
	if (!es)
		return nc_fail(ncclInvalidArgument, "%s: data type %d", kind_name[kind], (int)type);
	if ((kind == NC_SEND || kind == NC_RECV) && (peer < 0 || peer >= c->n || peer == c->rank))
		return nc_fail(ncclInvalidArgument, "%s: peer %d in a communicator of %d ranks where this is rank %d",
			       kind_name[kind], peer, c->n, c->rank);
	if (si_stream_ok(s, kind_name[kind]) != CUDA_SUCCESS)
		return nc_pass(ncclInvalidArgument, CUDA_ERROR_INVALID_HANDLE);
	if (si_sticky())
		return nc_fail(ncclUnhandledCudaError, "%s after a failed piece of GPU work: %s", kind_name[kind],
			       si_detail((int)si_sticky()) ? si_detail((int)si_sticky()) : "?");
	struct nc_op *x = si_op_new(sizeof *x, kind_name[kind], step, kind == NC_SEND || kind == NC_RECV ? 1 : 2);
	if (!x)
		return nc_fail(ncclSystemError, "out of host memory");
	x->op.done = nc_done;
	x->op.clone = nc_clone;
	x->kind = kind;
	x->c = c;
	x->send = (CUdeviceptr)send;
	x->recv = (CUdeviceptr)recv;
	x->count = count;
	x->type = type;
	x->red = red;
	x->peer = peer;
	bool coll = kind != NC_SEND && kind != NC_RECV;
	x->h = (struct hdr){ NC_MAGIC,      kind,
			     count,         coll && !si_capturing(s) ? ++c->seq : 0,
			     (int32_t)type, coll && kind != NC_ALL_GATHER ? (int32_t)red : 0,
			     c->rank,       0 };
	size_t bytes = count * es, n = (size_t)c->n;
	size_t in = kind == NC_REDUCE_SCATTER ? n * bytes : bytes, out = kind == NC_ALL_GATHER ? n * bytes : bytes;
	int k = 0;
	if (kind != NC_RECV)
		x->op.rg[k++] = (struct si_range){ x->send, x->send + in, false };
	if (kind != NC_SEND)
		x->op.rg[k++] = (struct si_range){ x->recv, x->recv + out, true };
	if (group_depth) { /* checked now, queued at ncclGroupEnd */
		for (int j = 0; j < x->op.nrg; j++)
			if (x->op.rg[j].hi > x->op.rg[j].lo &&
			    !si_host(x->op.rg[j].lo, (size_t)(x->op.rg[j].hi - x->op.rg[j].lo), kind_name[kind])) {
				x->c = NULL;
				nc_done(&x->op);
				return nc_pass(ncclInvalidArgument, CUDA_ERROR_INVALID_VALUE);
			}
		if (ngroup && s != group_stream) {
			x->c = NULL;
			nc_done(&x->op);
			return nc_fail(ncclInvalidUsage, "a group's calls on two streams (the stand-in takes one)");
		}
		if (ngroup == capgroup) {
			int cap = capgroup ? 2 * capgroup : 16;
			struct nc_op **v = ir_realloc(group, (size_t)cap * sizeof *v);
			if (!v) {
				x->c = NULL;
				nc_done(&x->op);
				return nc_fail(ncclSystemError, "out of host memory");
			}
			group = v;
			capgroup = cap;
		}
		c->inflight++;
		group_stream = s;
		group[ngroup++] = x;
		return ncclSuccess;
	}
	CUresult e = queue(x, s);
	if (e != CUDA_SUCCESS)
		return nc_pass(ncclInvalidArgument, (int)e);
	return ncclSuccess;
}

static ncclResult_t all_reduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
			       ncclComm_t c, cudaStream_t s)
{
	return call(NC_ALL_REDUCE, send, recv, count, type, op, -1, c, s);
}

static ncclResult_t reduce_scatter(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
				   ncclComm_t c, cudaStream_t s)
{
	return call(NC_REDUCE_SCATTER, send, recv, count, type, op, -1, c, s);
}

static ncclResult_t all_gather(const void *send, void *recv, size_t count, ncclDataType_t type, ncclComm_t c,
			       cudaStream_t s)
{
	return call(NC_ALL_GATHER, send, recv, count, type, ncclSum, -1, c, s);
}

static ncclResult_t send(const void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t c, cudaStream_t s)
{
	return call(NC_SEND, buf, NULL, count, type, ncclSum, peer, c, s);
}

static ncclResult_t recv(void *buf, size_t count, ncclDataType_t type, int peer, ncclComm_t c, cudaStream_t s)
{
	return call(NC_RECV, NULL, buf, count, type, ncclSum, peer, c, s);
}

static ncclResult_t group_start(void)
{
	group_depth++;
	return ncclSuccess;
}

static ncclResult_t group_end(void)
{
	if (group_depth == 0)
		return nc_fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	if (--group_depth || !ngroup)
		return ncclSuccess;
	int nrg = 0;
	for (int i = 0; i < ngroup; i++)
		nrg += group[i]->op.nrg;
	struct nc_op *g = si_op_new(sizeof *g, kind_name[NC_GROUP], step, nrg);
	if (!g || !(g->sub = ir_calloc((size_t)ngroup, sizeof *g->sub))) {
		ir_free(g ? g->op.rg : NULL);
		ir_free(g);
		return nc_fail(ncclSystemError, "out of host memory");
	}
	g->op.done = nc_done;
	g->op.clone = nc_clone;
	g->kind = NC_GROUP;
	nrg = 0;
	for (int i = 0; i < ngroup; i++) {
		g->sub[i] = group[i];
		memcpy(g->op.rg + nrg, group[i]->op.rg, (size_t)group[i]->op.nrg * sizeof *g->op.rg);
		nrg += group[i]->op.nrg;
	}
	g->nsub = ngroup;
	ngroup = 0;
	CUresult e = si_enqueue(group_stream, &g->op);
	if (e != CUDA_SUCCESS)
		return nc_pass(ncclInvalidArgument, (int)e);
	return ncclSuccess;
}

int si_nccl_live(int *aborted)
{
	if (aborted)
		*aborted = naborted;
	return nlive;
}

void si_fill_nccl(struct gpu_api *a)
{
	a->ncclGetVersion = get_version;
	a->ncclGetUniqueId = get_unique_id;
	a->ncclCommInitRank = comm_init_rank;
	a->ncclCommSplit = comm_split;
	a->ncclCommDestroy = comm_destroy;
	a->ncclCommAbort = comm_abort;
	a->ncclCommGetAsyncError = async_error;
	a->ncclGetErrorString = error_string;
	a->ncclAllReduce = all_reduce;
	a->ncclReduceScatter = reduce_scatter;
	a->ncclAllGather = all_gather;
	a->ncclSend = send;
	a->ncclRecv = recv;
	a->ncclGroupStart = group_start;
	a->ncclGroupEnd = group_end;
}
