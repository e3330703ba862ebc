/*
 * gpu_standin.c: the CUDA driver API of the checking stand-in for a GPU
 * (gpu_standin.h says what it checks and how work runs). pcc-run uses it
 * instead of the real libraries when PCC_GPU_STANDIN is set (gpu_api.c):
 *
 *	PCC_GPU_STANDIN=1 mpirun -np 4 pcc-run plan.bin ...
 *
 * It has PCC_GPU_STANDIN_DEVICES devices per host (8) of compute
 * capability PCC_GPU_STANDIN_SM (90: 9.0; 80 or 90) with
 * PCC_GPU_STANDIN_MEM bytes each (80 GiB), of which the process sees
 * those CUDA_VISIBLE_DEVICES lists, as the driver does (srun
 * --gpus-per-task=1 shows each task one); the driver's JIT takes PTX for
 * that compute capability or an older one. Kernels run
 * by the host code (or the reference kernels) of the plan kernel whose
 * name the PTX declares (gpu_standin_kernels), never by the PTX itself.
 *
 * Stream capture follows CUDA's rules (the CUDA programming guide's
 * "prohibited and unhandled operations", cuStreamBeginCapture's and
 * cuThreadExchangeStreamCaptureMode's documentation): while a stream
 * captures, a query or synchronization of it, or of an event last
 * recorded in the capture, a copy between it and pageable host memory, a
 * wait from it on an event recorded outside the capture, and (unless the
 * capture's mode is CU_STREAM_CAPTURE_MODE_RELAXED) the potentially
 * unsafe calls (cuMemAlloc, cuMemFree, cuMemAllocHost, cuMemFreeHost,
 * cuMemHostRegister, cuMemHostUnregister) fail with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (CUDA_ERROR_CAPTURED_EVENT,
 * CUDA_ERROR_STREAM_CAPTURE_ISOLATION) and invalidate the capture: its
 * later calls fail with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and
 * cuStreamEndCapture returns no graph, naming the call that broke it. A
 * stream that joined the capture and was not joined back to the stream
 * that began it fails cuStreamEndCapture with
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED. One capture at a time.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ir/ir.h"
#include "runtime/gpu_standin.h"

#define MAX_STREAMS 512
#define ADDR_BASE 0x200000000000ull
#define ADDR_GAP (1ull << 20)
#define CUBIN_MAGIC "PCC-STANDIN-CUBIN\n"
#define LIVE 0x6c697665u
#define DEAD 0x64656164u
#define MAX_BRANCH 32 /* streams in one capture */

struct alloc {
	CUdeviceptr lo;
	size_t n;
	unsigned char *host;
	bool live;
	uint64_t call; /* that allocated it */
};

struct stream {
	bool used, live;
	int cap; /* 1 + its branch in the capture; 0: not capturing */
	struct si_op *head, *tail;
	uint64_t done; /* clock of its last finished op */
	uint64_t vc[MAX_STREAMS];
};

struct CUstream_st {
	uint32_t magic;
	int idx;
};

struct CUevent_st {
	uint32_t magic;
	bool recorded, timing;
	double when; /* ir_now() when its stream reached it (timing events) */
	int stream;
	uint64_t at;
	uint64_t vc[MAX_STREAMS];
	/* last recorded in capture cap_id (0: live), as its node cap_node,
	 * having seen cap_vc of the capture's branches */
	uint64_t cap_id;
	int cap_node;
	uint32_t cap_vc[MAX_BRANCH];
};

struct CUctx_st {
	int dev;
};

struct CUlinkState_st {
	uint32_t magic;
	char *ptx;
	char *cubin;
	size_t ncubin;
};

struct CUmod_st {
	uint32_t magic;
	char *ptx;
};

struct CUfunc_st {
	uint32_t magic;
	char name[64];
	struct gpu_standin_kernel k;
	int64_t *bytes;
};

/* Work done on device memory, kept until the host has seen it finish. */
struct hist {
	CUdeviceptr lo, hi;
	bool write;
	int stream;
	uint64_t clock, call;
	const char *what;
};

static struct {
	struct alloc *al;
	int nal, capal;
	CUdeviceptr next;
	size_t used, total;
	int ndev, sm;
	bool init;
	struct CUctx_st ctx[64];
	bool ctx_current;
	struct stream st[MAX_STREAMS];
	uint64_t host_vc[MAX_STREAMS];
	struct hist *h;
	int nh, caph;
	void *reg[1024][2]; /* host ranges registered: base, end */
	int nreg;
	struct {
		char *p;
		size_t n;
	} * hal; /* pinned host memory of cuMemAllocHost */
	int nhal, caphal;
	struct capture { /* the capture under way */
		bool on, invalid;
		int origin; /* the stream that began it */
		CUstreamCaptureMode mode;
		uint64_t id, begun; /* S.caps at its start; the call that began it */
		struct body *b;
		int nbranch;
		int stream[MAX_BRANCH];
		/* vc[b][c]: ops of branch c that branch b's next op follows */
		uint32_t vc[MAX_BRANCH][MAX_BRANCH];
		char why[1200]; /* what invalidated it */
	} cap;
	uint64_t caps;
	uint64_t calls;
	CUresult sticky;
	struct si_why why;
	gpu_standin_lookup_fn lookup;
	void *lookup_ctx;
} S;

/* ---- errors ------------------------------------------------------------------------ */

static const char *cu_name(CUresult e)
{
	switch ((int)e) {
	case CUDA_SUCCESS:
		return "no error";
	case CUDA_ERROR_INVALID_VALUE:
		return "invalid argument";
	case CUDA_ERROR_OUT_OF_MEMORY:
		return "out of memory";
	case CUDA_ERROR_NOT_INITIALIZED:
		return "initialization error";
	case CUDA_ERROR_INVALID_DEVICE:
		return "invalid device ordinal";
	case CUDA_ERROR_INVALID_IMAGE:
		return "device kernel image is invalid";
	case CUDA_ERROR_INVALID_CONTEXT:
		return "invalid device context";
	case CUDA_ERROR_INVALID_HANDLE:
		return "invalid resource handle";
	case CUDA_ERROR_NOT_FOUND:
		return "named symbol not found";
	case CUDA_ERROR_NOT_READY:
		return "device not ready";
	case CUDA_ERROR_ILLEGAL_ADDRESS:
		return "an illegal memory access was encountered";
	case CUDA_ERROR_LAUNCH_FAILED:
		return "unspecified launch failure";
	case CUDA_ERROR_INVALID_PTX:
		return "a PTX JIT compilation failed";
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		return "part or all of the requested memory range is already mapped";
	case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
		return "pointer does not correspond to a registered memory region";
	case CUDA_ERROR_LAUNCH_TIMEOUT:
		return "the launch timed out and was terminated";
	case CUDA_ERROR_ILLEGAL_STATE:
		return "the operation cannot be done in the present state";
	case CUDA_ERROR_NOT_SUPPORTED:
		return "operation not supported";
	case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
		return "operation not permitted when stream is capturing";
	case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
		return "operation failed due to a previous error during capture";
	case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
		return "capture was not initiated in this stream";
	case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
		return "capturing stream has unjoined work";
	case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
		return "dependency created on uncaptured work in another stream";
	case CUDA_ERROR_CAPTURED_EVENT:
		return "operation not permitted on an event last recorded in a capturing stream";
	default:
		return NULL;
	}
}

int si_why_set(struct si_why *w, int code, const char *name, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	w->code = code;
	snprintf(w->text, sizeof w->text, "%s [GPU stand-in: %s]", name, msg);
	return code;
}

int si_why_pass(struct si_why *w, int code, int e)
{
	const char *d = si_detail(e);
	w->code = code;
	snprintf(w->text, sizeof w->text, "%s", d ? d : "the GPU stand-in refused the call");
	return code;
}

const char *si_why_text(const struct si_why *w, int code, const char *name)
{
	return w->text[0] && w->code == code ? w->text : name;
}

CUresult si_fail(CUresult e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	si_why_set(&S.why, (int)e, cu_name(e) ? cu_name(e) : "error", fmt, ap);
	va_end(ap);
	return e;
}

const char *si_detail(int e)
{
	return si_why_text(&S.why, e, NULL);
}

CUresult si_sticky(void)
{
	return S.sticky;
}

static CUresult get_error_string(CUresult e, const char **s)
{
	const char *d = si_detail((int)e);
	*s = d ? d : cu_name(e);
	return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Every call counts (for messages) and stops on a failed piece of work:
 * as on a GPU, the context is lost. */
#define ENTER()                          \
	do {                             \
		S.calls++;               \
		if (S.sticky)            \
			return S.sticky; \
	} while (0)

#define NEED_CTX(what)                                                                                                \
	do {                                                                                                          \
		if (!S.ctx_current)                                                                                   \
			return si_fail(CUDA_ERROR_INVALID_CONTEXT, "%s: no current context (cuCtxSetCurrent)", what); \
	} while (0)

/* the capture's (below) */
static CUresult cap_unsafe(const char *what);

/* ---- memory ------------------------------------------------------------------------ */

/* The allocation whose range [lo, lo + n + gap) holds p, or NULL. */
/* si_keep's handles: never freed, only held */
static void **kept;
static size_t nkept, capkept;

void si_keep(void *h)
{
	if (nkept == capkept) {
		size_t c = capkept ? 2 * capkept : 256;
		void **v = realloc(kept, c * sizeof *v);
		if (!v)
			return; /* only a leak checker would notice */
		kept = v;
		capkept = c;
	}
	kept[nkept++] = h;
}

static struct alloc *find(CUdeviceptr p)
{
	int lo = 0, hi = S.nal - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		struct alloc *a = &S.al[mid];
		if (p < a->lo)
			hi = mid - 1;
		else if (p >= a->lo + a->n + ADDR_GAP)
			lo = mid + 1;
		else
			return a;
	}
	return NULL;
}

void *si_host(CUdeviceptr p, size_t n, const char *what)
{
	struct alloc *a = find(p);
	char b1[IR_BYTES_STRLEN];
	if (!a) {
		si_fail(CUDA_ERROR_INVALID_VALUE, "%s 0x%llx is not device memory (no allocation holds it)", what,
			(unsigned long long)p);
		return NULL;
	}
	int idx = (int)(a - S.al);
	if (!a->live) {
		si_fail(CUDA_ERROR_INVALID_VALUE, "%s 0x%llx is in allocation #%d (%s), freed", what,
			(unsigned long long)p, idx, ir_bytes_str((double)a->n, b1));
		return NULL;
	}
	if (p - a->lo > a->n || n > a->n - (p - a->lo)) {
		si_fail(CUDA_ERROR_INVALID_VALUE,
			"%s [0x%llx, +%zu) runs %llu bytes past the end of allocation #%d (0x%llx, %s, made by call "
			"%llu), from its offset %llu",
			what, (unsigned long long)p, n, (unsigned long long)(p - a->lo + n - a->n), idx,
			(unsigned long long)a->lo, ir_bytes_str((double)a->n, b1), (unsigned long long)a->call,
			(unsigned long long)(p - a->lo));
		return NULL;
	}
	return a->host + (p - a->lo);
}

static CUresult mem_alloc(CUdeviceptr *p, size_t n)
{
	ENTER();
	NEED_CTX("cuMemAlloc");
	char b[IR_BYTES_STRLEN], c[IR_BYTES_STRLEN];
	CUresult u = cap_unsafe("cuMemAlloc");
	if (u != CUDA_SUCCESS)
		return u;
	if (!p || n == 0)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc of %zu bytes", n);
	if (n > S.total - S.used)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of %s with %s free", ir_bytes_str((double)n, b),
			       ir_bytes_str((double)(S.total - S.used), c));
	if (S.nal == S.capal) {
		int cap = S.capal ? 2 * S.capal : 64;
		struct alloc *v = ir_realloc(S.al, (size_t)cap * sizeof *v);
		if (!v)
			return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for the allocation table");
		S.al = v;
		S.capal = cap;
	}
	unsigned char *h = ir_malloc(n);
	if (!h)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of %s: the host has no memory for it",
			       ir_bytes_str((double)n, b));
	memset(h, 0xff, n); /* device memory starts as garbage: NaN in floats */
	if (!S.next)
		S.next = ADDR_BASE;
	S.al[S.nal++] = (struct alloc){ S.next, n, h, true, S.calls };
	*p = S.next;
	S.next = (S.next + n + ADDR_GAP + ADDR_GAP - 1) / ADDR_GAP * ADDR_GAP;
	S.used += n;
	return CUDA_SUCCESS;
}

/* Whether queued work (not yet run) touches [lo, hi). */
static const struct si_op *queued_on(CUdeviceptr lo, CUdeviceptr hi)
{
	for (int s = 0; s < MAX_STREAMS; s++)
		for (const struct si_op *o = S.st[s].head; o; o = o->next)
			for (int j = 0; j < o->nrg; j++)
				if (o->rg[j].lo < hi && lo < o->rg[j].hi)
					return o;
	return NULL;
}

static CUresult mem_free(CUdeviceptr p)
{
	ENTER();
	NEED_CTX("cuMemFree");
	CUresult u = cap_unsafe("cuMemFree");
	if (u != CUDA_SUCCESS)
		return u;
	struct alloc *a = find(p);
	if (!a || a->lo != p || !a->live)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree(0x%llx): %s", (unsigned long long)p,
			       !a || a->lo != p ? "not the start of an allocation" : "freed twice");
	const struct si_op *o = queued_on(a->lo, a->lo + a->n);
	if (o)
		return si_fail(CUDA_ERROR_INVALID_VALUE,
			       "cuMemFree(0x%llx) while queued work uses it (%s, call %llu, not yet waited for)",
			       (unsigned long long)p, o->what, (unsigned long long)o->call);
	a->live = false;
	ir_free(a->host);
	a->host = NULL;
	S.used -= a->n;
	return CUDA_SUCCESS;
}

static CUresult mem_get_info(size_t *free_b, size_t *total)
{
	ENTER();
	NEED_CTX("cuMemGetInfo");
	*free_b = S.total - S.used;
	*total = S.total;
	return CUDA_SUCCESS;
}

static CUresult host_register(void *p, size_t n, unsigned int flags)
{
	ENTER();
	char *lo = p, *hi = lo + n;
	CUresult u = cap_unsafe("cuMemHostRegister");
	if (u != CUDA_SUCCESS)
		return u;
	if (!p || n == 0)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuMemHostRegister(%p, %zu)", p, n);
	for (int i = 0; i < S.nreg; i++)
		if (lo < (char *)S.reg[i][1] && (char *)S.reg[i][0] < hi)
			return si_fail(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
				       "cuMemHostRegister(%p, %zu) overlaps the registered range at %p", p, n,
				       S.reg[i][0]);
	if (S.nreg == 1024)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "more than 1024 registered host ranges");
	S.reg[S.nreg][0] = lo;
	S.reg[S.nreg][1] = hi;
	S.nreg++;
	(void)flags;
	return CUDA_SUCCESS;
}

static CUresult host_unregister(void *p)
{
	ENTER();
	CUresult u = cap_unsafe("cuMemHostUnregister");
	if (u != CUDA_SUCCESS)
		return u;
	for (int i = 0; i < S.nreg; i++)
		if (S.reg[i][0] == p) {
			S.reg[i][0] = S.reg[S.nreg - 1][0];
			S.reg[i][1] = S.reg[S.nreg - 1][1];
			S.nreg--;
			return CUDA_SUCCESS;
		}
	return si_fail(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister(%p): not registered", p);
}

static CUresult mem_alloc_host(void **pp, size_t n)
{
	ENTER();
	NEED_CTX("cuMemAllocHost");
	CUresult u = cap_unsafe("cuMemAllocHost");
	if (u != CUDA_SUCCESS)
		return u;
	if (!pp || n == 0)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuMemAllocHost of %zu bytes", n);
	if (S.nhal == S.caphal) {
		int cap = S.caphal ? 2 * S.caphal : 16;
		void *v = ir_realloc(S.hal, (size_t)cap * sizeof *S.hal);
		if (!v)
			return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for the pinned allocations");
		S.hal = v;
		S.caphal = cap;
	}
	char *p = ir_malloc(n);
	if (!p)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAllocHost of %zu bytes: the host has no memory for it",
			       n);
	memset(p, 0xff, n);
	S.hal[S.nhal].p = p;
	S.hal[S.nhal++].n = n;
	*pp = p;
	return CUDA_SUCCESS;
}

/* ---- streams, events and the engine ---------------------------------------------- */

static struct stream *stream_of(CUstream s)
{
	return &S.st[s ? s->idx : 0];
}

CUresult si_stream_ok(CUstream s, const char *what)
{
	if (s && (s->magic != LIVE || s->idx <= 0 || s->idx >= MAX_STREAMS || !S.st[s->idx].live))
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "%s on a stream that is not live (destroyed?)", what);
	return CUDA_SUCCESS;
}

static void vc_max(uint64_t *dst, const uint64_t *src)
{
	for (int i = 0; i < MAX_STREAMS; i++)
		dst[i] = src[i] > dst[i] ? src[i] : dst[i];
}

void *si_op_new(size_t size, const char *what, int (*step)(struct si_op *, bool), int nrg)
{
	struct si_op *o = ir_calloc(1, size);
	if (!o)
		return NULL;
	o->what = what;
	o->step = step;
	o->nrg = nrg;
	o->size = size;
	if (nrg && !(o->rg = ir_calloc((size_t)nrg, sizeof *o->rg))) {
		ir_free(o);
		return NULL;
	}
	return o;
}

/* done() frees the whole op, its ranges included */
static void op_free(struct si_op *o)
{
	if (o->done) {
		o->done(o);
		return;
	}
	ir_free(o->rg);
	ir_free(o);
}

static const char *rw(bool write)
{
	return write ? "writes" : "reads";
}

/* The host has seen every stream reach vc: work it covers is ordered
 * before anything queued from now on and needs no more checking. */
static void host_saw(const uint64_t *vc)
{
	vc_max(S.host_vc, vc);
	int k = 0;
	for (int i = 0; i < S.nh; i++)
		if (S.host_vc[S.h[i].stream] < S.h[i].clock)
			S.h[k++] = S.h[i];
	S.nh = k;
}

/* ---- what a capture records -------------------------------------------------------- */

enum { NODE_OP, NODE_RECORD, NODE_WAIT };

/* One recorded call, on branch `branch` of the capture (0: the stream
 * that began it; others joined it by waiting on its events). */
struct node {
	int kind, branch;
	struct si_op *op; /* NODE_OP: the template each launch copies */
	int rec;          /* NODE_WAIT: the NODE_RECORD of the event waited for */
};

/* What a capture recorded: its graph's, and the executable graphs made
 * from it share it (a graph may be destroyed before them). */
struct body {
	struct node *node;
	int n, cap, nbranch, refs;
	uint64_t begun; /* the call that began the capture */
};

struct CUgraph_st {
	uint32_t magic;
	struct body *b;
};

struct CUgraphExec_st {
	uint32_t magic;
	struct body *b;
	CUstream branch[MAX_BRANCH]; /* branch k > 0 runs on its own stream */
	CUevent *ev;                 /* [n]: NODE_RECORD i's event */
	CUevent end;                 /* the last launch's end */
	long launches;
};

static void body_unref(struct body *b)
{
	if (!b || --b->refs > 0)
		return;
	for (int i = 0; i < b->n; i++)
		if (b->node[i].op)
			op_free(b->node[i].op);
	ir_free(b->node);
	ir_free(b);
}

static int node_add(struct body *b, int kind, int branch, struct si_op *op, int rec)
{
	if (b->n == b->cap) {
		int cap = b->cap ? 2 * b->cap : 256;
		struct node *v = ir_realloc(b->node, (size_t)cap * sizeof *v);
		if (!v)
			return -1;
		b->node = v;
		b->cap = cap;
	}
	b->node[b->n++] = (struct node){ kind, branch, op, rec };
	return 0;
}

bool si_capturing(CUstream s)
{
	return S.cap.on && stream_of(s)->cap;
}

/* The call that failed (si_fail's text) breaks the capture under way, as
 * CUDA invalidates it; returns e. */
static CUresult cap_break(CUresult e)
{
	if (S.cap.on && !S.cap.invalid) {
		S.cap.invalid = true;
		snprintf(S.cap.why, sizeof S.cap.why, "%.1190s", S.why.text);
	}
	return e;
}

/* A potentially unsafe call (cuThreadExchangeStreamCaptureMode's term) is
 * refused while a capture not begun in relaxed mode is under way. */
static CUresult cap_unsafe(const char *what)
{
	if (!S.cap.on || S.cap.mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_SUCCESS;
	return cap_break(si_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
				 "%s while stream %d captures a graph (cuStreamBeginCapture, call %llu, in %s mode): a "
				 "potentially unsafe call during a capture (CU_STREAM_CAPTURE_MODE_RELAXED allows it)",
				 what, S.cap.origin, (unsigned long long)S.cap.begun,
				 S.cap.mode == CU_STREAM_CAPTURE_MODE_GLOBAL ? "global" : "thread-local"));
}

/* Stream idx (capturing) refuses call `what` and its capture breaks. */
static CUresult cap_refuse(CUresult e, int idx, const char *what, const char *why)
{
	return cap_break(si_fail(e, "%s on stream %d, which is capturing a graph (cuStreamBeginCapture, call %llu): %s",
				 what, idx, (unsigned long long)S.cap.begun, why));
}

/* Whether host bytes [p, p + n) are pinned: all in one registered range
 * or one cuMemAllocHost allocation. */
static bool pinned(const void *p, size_t n)
{
	const char *lo = p, *hi = lo + n;
	for (int i = 0; i < S.nreg; i++)
		if (lo >= (const char *)S.reg[i][0] && hi <= (const char *)S.reg[i][1])
			return true;
	for (int i = 0; i < S.nhal; i++)
		if (lo >= S.hal[i].p && hi <= S.hal[i].p + S.hal[i].n)
			return true;
	return false;
}

/* Records op on capturing stream idx: its ranges checked now (and again
 * at each launch), kept as a template. */
static CUresult cap_add(int idx, struct si_op *op)
{
	int b = S.st[idx].cap - 1;
	if (S.cap.invalid) {
		CUresult e = si_fail(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
				     "%s on stream %d, whose capture was invalidated by an earlier call: %s", op->what,
				     idx, S.cap.why);
		op_free(op);
		return e;
	}
	for (int j = 0; j < op->nrg; j++)
		if (op->rg[j].hi > op->rg[j].lo &&
		    !si_host(op->rg[j].lo, (size_t)(op->rg[j].hi - op->rg[j].lo), op->what)) {
			op_free(op);
			return cap_break(CUDA_ERROR_INVALID_VALUE);
		}
	if (node_add(S.cap.b, NODE_OP, b, op, -1) < 0) {
		op_free(op);
		return cap_break(si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory recording a graph"));
	}
	S.cap.vc[b][b]++;
	op->call = S.calls;
	return CUDA_SUCCESS;
}

struct si_op *si_op_clone(const struct si_op *t)
{
	struct si_op *o = ir_malloc(t->size);
	if (!o) {
		si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory launching a graph");
		return NULL;
	}
	memcpy(o, t, t->size);
	o->next = NULL;
	o->started = false;
	o->wait = NULL;
	o->rg = t->nrg ? ir_malloc((size_t)t->nrg * sizeof *o->rg) : NULL;
	if (t->nrg && !o->rg) {
		ir_free(o);
		si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory launching a graph");
		return NULL;
	}
	if (t->nrg)
		memcpy(o->rg, t->rg, (size_t)t->nrg * sizeof *o->rg);
	if (o->clone && o->clone(o) < 0) {
		op_free(o);
		return NULL;
	}
	return o;
}

CUresult si_enqueue(CUstream s, struct si_op *op)
{
	CUresult e = S.sticky ? S.sticky : si_stream_ok(s, op->what);
	if (e != CUDA_SUCCESS) {
		op_free(op);
		return e;
	}
	struct stream *st = stream_of(s);
	int idx = (int)(st - S.st);
	if (S.cap.on && st->cap)
		return cap_add(idx, op);
	for (int j = 0; j < op->nrg; j++) /* every range in one live allocation */
		if (op->rg[j].hi > op->rg[j].lo &&
		    !si_host(op->rg[j].lo, (size_t)(op->rg[j].hi - op->rg[j].lo), op->what)) {
			op_free(op);
			return CUDA_ERROR_INVALID_VALUE;
		}
	uint64_t vc[MAX_STREAMS];
	memcpy(vc, st->vc, sizeof vc);
	vc_max(vc, S.host_vc);
	vc[idx]++;
	for (int j = 0; j < op->nrg; j++)
		for (int i = 0; i < S.nh; i++) {
			const struct hist *h = &S.h[i];
			const struct si_range *r = &op->rg[j];
			if (h->stream == idx || !(h->write || r->write) || !(h->lo < r->hi && r->lo < h->hi) ||
			    vc[h->stream] >= h->clock)
				continue;
			e = si_fail(CUDA_ERROR_INVALID_VALUE,
				    "race: %s (call %llu, stream %d) %s [0x%llx, 0x%llx), which %s (call %llu, stream "
				    "%d) %s, and no event orders the two",
				    op->what, (unsigned long long)S.calls, idx, rw(r->write), (unsigned long long)r->lo,
				    (unsigned long long)r->hi, h->what, (unsigned long long)h->call, h->stream,
				    rw(h->write));
			op_free(op);
			return e;
		}
	if (S.nh + op->nrg > S.caph) {
		int cap = S.caph ? 2 * S.caph : 256;
		while (cap < S.nh + op->nrg)
			cap *= 2;
		struct hist *v = ir_realloc(S.h, (size_t)cap * sizeof *v);
		if (!v) {
			op_free(op);
			return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
		}
		S.h = v;
		S.caph = cap;
	}
	for (int j = 0; j < op->nrg; j++)
		S.h[S.nh++] = (struct hist){ op->rg[j].lo, op->rg[j].hi, op->rg[j].write, idx,
					     vc[idx],      S.calls,      op->what };
	memcpy(st->vc, vc, sizeof vc);
	op->call = S.calls;
	op->stream = idx;
	op->clock = vc[idx];
	if (st->tail)
		st->tail->next = op;
	else
		st->head = op;
	st->tail = op;
	return CUDA_SUCCESS;
}

/* Runs what can run, on every stream, until nothing moves. */
static CUresult pump(void)
{
	for (bool moved = true; moved && !S.sticky;) {
		moved = false;
		for (int s = 0; s < MAX_STREAMS && !S.sticky; s++) {
			struct stream *st = &S.st[s];
			while (st->head) {
				struct si_op *o = st->head;
				if (o->wait) {
					if (S.st[o->wait_stream].done < o->wait_at)
						break;
				} else {
					int rc = o->step(o, !o->started);
					o->started = true;
					if (rc == 1)
						break;
					if (rc < 0) {
						char d[1200];
						snprintf(d, sizeof d, "%.1100s", S.why.text);
						S.sticky = S.why.code ? (CUresult)S.why.code : CUDA_ERROR_LAUNCH_FAILED;
						snprintf(S.why.text, sizeof S.why.text,
							 "%.1200s (in %.100s, queued by call %llu on stream %d)", d,
							 o->what, (unsigned long long)o->call, s);
						break;
					}
				}
				st->done = o->clock;
				st->head = o->next;
				if (!st->head)
					st->tail = NULL;
				op_free(o);
				moved = true;
			}
		}
	}
	return S.sticky;
}

static CUresult stream_create(CUstream *out, unsigned int flags)
{
	ENTER();
	NEED_CTX("cuStreamCreate");
	int i = 1;
	while (i < MAX_STREAMS && S.st[i].used)
		i++;
	if (i == MAX_STREAMS)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "more than %d streams", MAX_STREAMS - 1);
	struct CUstream_st *s = ir_calloc(1, sizeof *s);
	if (!s)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	*s = (struct CUstream_st){ LIVE, i };
	si_keep(s);
	S.st[i].used = S.st[i].live = true;
	*out = s;
	(void)flags;
	return CUDA_SUCCESS;
}

static CUresult stream_destroy(CUstream s)
{
	ENTER();
	CUresult e = si_stream_ok(s, "cuStreamDestroy");
	if (e != CUDA_SUCCESS || !s)
		return e ? e : si_fail(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy of the default stream");
	if (si_capturing(s))
		return cap_refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, s->idx, "cuStreamDestroy",
				  "end the capture first");
	S.st[s->idx].live = false; /* its queued work still runs; the slot is never reused */
	s->magic = DEAD;
	return CUDA_SUCCESS;
}

/* The host may not wait for a capturing stream: its work is recorded, not run. */
static CUresult not_capturing(CUstream s, const char *what)
{
	if (!si_capturing(s))
		return CUDA_SUCCESS;
	return cap_refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, (int)(stream_of(s) - S.st), what,
			  "its work is recorded, not run, so the host cannot wait for it or ask about it");
}

static CUresult stream_query(CUstream s)
{
	ENTER();
	CUresult e = si_stream_ok(s, "cuStreamQuery");
	if (e == CUDA_SUCCESS)
		e = not_capturing(s, "cuStreamQuery");
	if (e == CUDA_SUCCESS)
		e = pump();
	if (e != CUDA_SUCCESS)
		return e;
	struct stream *st = stream_of(s);
	if (st->head)
		return CUDA_ERROR_NOT_READY;
	host_saw(st->vc);
	return CUDA_SUCCESS;
}

static CUresult stream_synchronize(CUstream s)
{
	double t0 = ir_now();
	if (si_capturing(s)) {
		S.calls++;
		return not_capturing(s, "cuStreamSynchronize");
	}
	for (;;) {
		CUresult e = stream_query(s);
		if (e != CUDA_ERROR_NOT_READY)
			return e;
		if (ir_now() - t0 > 300) {
			const struct si_op *o = stream_of(s)->head;
			return si_fail(CUDA_ERROR_LAUNCH_TIMEOUT, "the stream waited 300 s on %s (call %llu)", o->what,
				       (unsigned long long)o->call);
		}
		nanosleep(&(struct timespec){ 0, 20000 }, NULL);
	}
}

static CUresult event_create(CUevent *out, unsigned int flags)
{
	ENTER();
	NEED_CTX("cuEventCreate");
	struct CUevent_st *e = ir_calloc(1, sizeof *e);
	if (!e)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	e->magic = LIVE;
	e->timing = !(flags & CU_EVENT_DISABLE_TIMING);
	si_keep(e);
	*out = e;
	return CUDA_SUCCESS;
}

static CUresult event_ok(CUevent e, const char *what)
{
	if (!e || e->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "%s on an event that is not live (%s)", what,
			       e ? "destroyed" : "NULL");
	return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent e)
{
	ENTER();
	CUresult rc = event_ok(e, "cuEventDestroy");
	if (rc == CUDA_SUCCESS)
		e->magic = DEAD; /* kept, so that a later use is caught */
	return rc;
}

struct stamp_op {
	struct si_op op;
	CUevent e;
};

static int run_stamp(struct si_op *o, bool first)
{
	((struct stamp_op *)o)->e->when = ir_now();
	(void)first;
	return 0;
}

static CUresult event_record(CUevent e, CUstream s)
{
	ENTER();
	CUresult rc = event_ok(e, "cuEventRecord");
	if (rc == CUDA_SUCCESS)
		rc = si_stream_ok(s, "cuEventRecord");
	if (rc != CUDA_SUCCESS)
		return rc;
	struct stream *cs = stream_of(s);
	if (S.cap.on && cs->cap) { /* a point in the capture, for the streams that wait on it */
		int b = cs->cap - 1;
		if (S.cap.invalid)
			return si_fail(
				CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
				"cuEventRecord on stream %d, whose capture was invalidated by an earlier call: %s",
				(int)(cs - S.st), S.cap.why);
		if (node_add(S.cap.b, NODE_RECORD, b, NULL, -1) < 0)
			return cap_break(si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory recording a graph"));
		e->recorded = false;
		e->cap_id = S.cap.id;
		e->cap_node = S.cap.b->n - 1;
		memcpy(e->cap_vc, S.cap.vc[b], sizeof e->cap_vc);
		return CUDA_SUCCESS;
	}
	e->cap_id = 0;
	if (e->timing) { /* a marker that notes the time when the stream reaches it */
		struct stamp_op *m = si_op_new(sizeof *m, "cuEventRecord", run_stamp, 0);
		if (!m)
			return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
		m->e = e;
		e->when = -1;
		if ((rc = si_enqueue(s, &m->op)) != CUDA_SUCCESS)
			return rc;
	}
	struct stream *st = stream_of(s);
	e->recorded = true;
	e->stream = (int)(st - S.st);
	memcpy(e->vc, st->vc, sizeof e->vc);
	vc_max(e->vc, S.host_vc);
	e->at = st->vc[e->stream];
	return CUDA_SUCCESS;
}

/* An event last recorded in a capture marks no point of any stream's work. */
static CUresult not_captured(CUevent e, const char *what)
{
	if (!e->cap_id)
		return CUDA_SUCCESS;
	CUresult r = si_fail(CUDA_ERROR_CAPTURED_EVENT,
			     "%s on an event last recorded in a stream capture (%s): it marks a point of a graph, "
			     "not of any stream's work",
			     what, S.cap.on && e->cap_id == S.cap.id ? "under way" : "ended since");
	return S.cap.on && e->cap_id == S.cap.id ? cap_break(r) : r;
}

static CUresult event_query(CUevent e)
{
	ENTER();
	CUresult rc = event_ok(e, "cuEventQuery");
	if (rc == CUDA_SUCCESS)
		rc = not_captured(e, "cuEventQuery");
	if (rc == CUDA_SUCCESS)
		rc = pump();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (e->recorded && S.st[e->stream].done < e->at)
		return CUDA_ERROR_NOT_READY;
	if (e->recorded)
		host_saw(e->vc);
	return CUDA_SUCCESS;
}

static CUresult event_elapsed(float *ms, CUevent a, CUevent b)
{
	ENTER();
	CUresult rc = event_ok(a, "cuEventElapsedTime");
	if (rc == CUDA_SUCCESS)
		rc = event_ok(b, "cuEventElapsedTime");
	if (rc == CUDA_SUCCESS)
		rc = not_captured(a, "cuEventElapsedTime");
	if (rc == CUDA_SUCCESS)
		rc = not_captured(b, "cuEventElapsedTime");
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!a->timing || !b->timing || !a->recorded || !b->recorded)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime on an event %s",
			       !a->timing || !b->timing ? "made with CU_EVENT_DISABLE_TIMING" : "never recorded");
	if (a->when < 0 || b->when < 0)
		return CUDA_ERROR_NOT_READY;
	*ms = (float)((b->when - a->when) * 1e3);
	return CUDA_SUCCESS;
}

static int never(struct si_op *o, bool first)
{
	(void)o;
	(void)first;
	return 0;
}

static CUresult stream_wait_event(CUstream s, CUevent e, unsigned int flags)
{
	ENTER();
	CUresult rc = event_ok(e, "cuStreamWaitEvent");
	if (rc == CUDA_SUCCESS)
		rc = si_stream_ok(s, "cuStreamWaitEvent");
	if (rc != CUDA_SUCCESS)
		return rc;
	struct stream *ws = stream_of(s);
	int idx = (int)(ws - S.st);
	if (S.cap.on && e->cap_id == S.cap.id) { /* s waits in the capture, joining it if it was not in it */
		if (S.cap.invalid)
			return si_fail(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
				       "cuStreamWaitEvent on an event of a capture invalidated by an earlier call: %s",
				       S.cap.why);
		if (!ws->cap && S.cap.nbranch == MAX_BRANCH)
			return cap_break(si_fail(CUDA_ERROR_NOT_SUPPORTED,
						 "cuStreamWaitEvent: stream %d would be the capture's stream %d; the "
						 "stand-in takes %d",
						 idx, MAX_BRANCH + 1, MAX_BRANCH));
		if (!ws->cap) {
			ws->cap = ++S.cap.nbranch;
			S.cap.stream[ws->cap - 1] = idx;
			memset(S.cap.vc[ws->cap - 1], 0, sizeof S.cap.vc[0]);
		}
		int b = ws->cap - 1;
		if (node_add(S.cap.b, NODE_WAIT, b, NULL, e->cap_node) < 0)
			return cap_break(si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory recording a graph"));
		for (int k = 0; k < MAX_BRANCH; k++)
			S.cap.vc[b][k] = e->cap_vc[k] > S.cap.vc[b][k] ? e->cap_vc[k] : S.cap.vc[b][k];
		(void)flags;
		return CUDA_SUCCESS;
	}
	if (e->cap_id)
		return not_captured(e, "cuStreamWaitEvent");
	if (S.cap.on && ws->cap && e->recorded)
		return cap_refuse(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, idx, "cuStreamWaitEvent",
				  "the event was recorded outside the capture, and a graph cannot wait for work "
				  "outside it");
	if (!e->recorded) /* CUDA: waiting on an unrecorded event is a no-op */
		return rc;
	struct si_op *o = si_op_new(sizeof *o, "cuStreamWaitEvent", never, 0);
	if (!o)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	o->wait = e;
	o->wait_stream = e->stream;
	o->wait_at = e->at;
	vc_max(stream_of(s)->vc, e->vc); /* what the event saw happens before what s does next */
	(void)flags;
	return si_enqueue(s, o);
}

/* ---- copies ------------------------------------------------------------------------ */

struct copy_op {
	struct si_op op;
	CUdeviceptr dst, src;
	void *hdst;
	const void *hsrc;
	size_t n;                             /* bytes (a 2-D copy: the rows' widths, height of them) */
	int fill;                             /* >= 0: a memset with this byte */
	size_t dspan, sspan;                  /* bytes from dst and src the copy reaches */
	size_t width, height, spitch, dpitch; /* 2-D; height 0: one run of n */
};

static int run_copy(struct si_op *o, bool first)
{
	struct copy_op *c = (struct copy_op *)o;
	if (!c->n)
		return 0;
	void *d = c->hdst ? c->hdst : si_host(c->dst, c->dspan, "the destination");
	const void *s = c->fill >= 0 ? NULL : c->hsrc ? c->hsrc : si_host(c->src, c->sspan, "the source");
	(void)first;
	if (!d || (c->fill < 0 && !s))
		return -1;
	if (c->fill >= 0)
		memset(d, c->fill, c->n);
	else if (c->height)
		for (size_t i = 0; i < c->height; i++)
			memmove((char *)d + i * c->dpitch, (const char *)s + i * c->spitch, c->width);
	else
		memmove(d, s, c->n);
	return 0;
}

static CUresult mem_free_host(void *p)
{
	ENTER();
	CUresult u = cap_unsafe("cuMemFreeHost");
	if (u != CUDA_SUCCESS)
		return u;
	int i = 0;
	while (i < S.nhal && S.hal[i].p != p)
		i++;
	if (i == S.nhal)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost(%p): not memory of cuMemAllocHost", p);
	for (int k = 0; k < MAX_STREAMS; k++) /* a queued copy still reading or writing it */
		for (const struct si_op *o = S.st[k].head; o; o = o->next)
			if (o->step == run_copy) {
				const struct copy_op *c = (const struct copy_op *)o;
				const char *h = c->hdst ? c->hdst : c->hsrc;
				if (h && h < (char *)p + S.hal[i].n && (char *)p < h + c->n)
					return si_fail(
						CUDA_ERROR_INVALID_VALUE,
						"cuMemFreeHost(%p) while queued work uses it (%s, call %llu, not yet "
						"waited for)",
						p, o->what, (unsigned long long)o->call);
			}
	ir_free(S.hal[i].p);
	S.hal[i] = S.hal[--S.nhal];
	return CUDA_SUCCESS;
}

/* A graph launch's copy: its host memory still pinned. */
static int copy_clone(struct si_op *o)
{
	const struct copy_op *c = (const struct copy_op *)o;
	const void *h = c->hdst ? c->hdst : c->hsrc;
	if (!h || !c->n || pinned(h, c->n))
		return 0;
	si_fail(CUDA_ERROR_INVALID_VALUE,
		"cuGraphLaunch: the graph's %s (recorded by call %llu) names host bytes [%p, +%zu) that are no longer "
		"pinned (freed or unregistered since the capture)",
		o->what, (unsigned long long)o->call, h, c->n);
	return -1;
}

static CUresult copy(const char *what, CUdeviceptr dst, void *hdst, CUdeviceptr src, const void *hsrc, size_t n,
		     int fill, CUstream s)
{
	ENTER();
	NEED_CTX(what);
	bool ddst = !hdst, dsrc = !hsrc && fill < 0;
	struct copy_op *c = si_op_new(sizeof *c, what, run_copy, ddst + dsrc);
	if (!c)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	c->dst = dst;
	c->src = src;
	c->hdst = hdst;
	c->hsrc = hsrc;
	c->n = c->dspan = c->sspan = n;
	c->fill = fill;
	c->op.clone = copy_clone;
	int k = 0;
	if (ddst)
		c->op.rg[k++] = (struct si_range){ dst, dst + n, true };
	if (dsrc)
		c->op.rg[k++] = (struct si_range){ src, src + n, false };
	return si_enqueue(s, &c->op);
}

/* CUDA: host memory a copy names must be all inside one registered range
 * or outside every one; a range that is partly registered is
 * CUDA_ERROR_INVALID_VALUE. */
static CUresult host_range_ok(const char *what, const void *p, size_t n)
{
	const char *lo = p, *hi = lo + n;
	if (!p)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "%s with a NULL host pointer", what);
	for (int i = 0; i < S.nreg; i++) {
		const char *rlo = S.reg[i][0], *rhi = S.reg[i][1];
		if (lo < rhi && rlo < hi && (lo < rlo || hi > rhi))
			return si_fail(CUDA_ERROR_INVALID_VALUE,
				       "%s of host bytes [%p, +%zu), partly inside the range [%p, +%zu) registered "
				       "with cuMemHostRegister: a copy's host memory must be all registered or none",
				       what, p, n, (const void *)rlo, (size_t)(rhi - rlo));
	}
	return CUDA_SUCCESS;
}

/* A copy between a capturing stream and pageable host memory: CUDA
 * refuses it (a graph's copy node needs pinned memory). */
static CUresult host_capturable(const char *what, CUstream s, const void *p, size_t n)
{
	if (!si_capturing(s) || pinned(p, n))
		return CUDA_SUCCESS;
	char w[160];
	snprintf(w, sizeof w, "%s of pageable host memory [%p, +%zu)", what, p, n);
	return cap_refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, (int)(stream_of(s) - S.st), w,
			  "a graph's copies need pinned host memory (cuMemAllocHost, cuMemHostRegister)");
}

static CUresult memcpy_htod(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	CUresult e = S.sticky ? S.sticky : host_range_ok("cuMemcpyHtoDAsync", src, n);
	if (e == CUDA_SUCCESS && si_stream_ok(s, "cuMemcpyHtoDAsync") == CUDA_SUCCESS)
		e = host_capturable("cuMemcpyHtoDAsync", s, src, n);
	return e != CUDA_SUCCESS ? e : copy("cuMemcpyHtoDAsync", dst, NULL, 0, src, n, -1, s);
}

static CUresult memcpy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	CUresult e = S.sticky ? S.sticky : host_range_ok("cuMemcpyDtoHAsync", dst, n);
	if (e == CUDA_SUCCESS && si_stream_ok(s, "cuMemcpyDtoHAsync") == CUDA_SUCCESS)
		e = host_capturable("cuMemcpyDtoHAsync", s, dst, n);
	return e != CUDA_SUCCESS ? e : copy("cuMemcpyDtoHAsync", 0, dst, src, NULL, n, -1, s);
}

static CUresult memcpy_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	return copy("cuMemcpyDtoDAsync", dst, NULL, src, NULL, n, -1, s);
}

static CUresult memset_d8(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
	return copy("cuMemsetD8Async", dst, NULL, 0, NULL, n, v, s);
}

static CUresult memcpy_2d(const CUDA_MEMCPY2D *p, CUstream s)
{
	ENTER();
	NEED_CTX("cuMemcpy2DAsync");
	if (!p || p->srcMemoryType != CU_MEMORYTYPE_DEVICE || p->dstMemoryType != CU_MEMORYTYPE_DEVICE ||
	    p->srcXInBytes || p->srcY || p->dstXInBytes || p->dstY)
		return si_fail(CUDA_ERROR_INVALID_VALUE,
			       "cuMemcpy2DAsync: the stand-in takes device-to-device copies without offsets only");
	if (p->WidthInBytes > p->srcPitch || p->WidthInBytes > p->dstPitch || p->Height == 0)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpy2DAsync: width %zu, pitches %zu and %zu, height %zu",
			       p->WidthInBytes, p->srcPitch, p->dstPitch, p->Height);
	struct copy_op *c = si_op_new(sizeof *c, "cuMemcpy2DAsync", run_copy, 2);
	if (!c)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	size_t sn = p->srcPitch * (p->Height - 1) + p->WidthInBytes,
	       dn = p->dstPitch * (p->Height - 1) + p->WidthInBytes;
	c->dst = p->dstDevice;
	c->src = p->srcDevice;
	c->fill = -1;
	c->width = p->WidthInBytes;
	c->height = p->Height;
	c->spitch = p->srcPitch;
	c->dpitch = p->dstPitch;
	c->n = p->WidthInBytes * p->Height;
	c->dspan = dn;
	c->sspan = sn;
	c->op.rg[0] = (struct si_range){ p->dstDevice, p->dstDevice + dn, true };
	c->op.rg[1] = (struct si_range){ p->srcDevice, p->srcDevice + sn, false };
	return si_enqueue(s, &c->op);
}

/* ---- modules and kernels ----------------------------------------------------------- */

/* Checks PTX text: a .version, a .target no newer than the device's. */
static CUresult ptx_ok(const char *t, size_t n, const char *what)
{
	if (!t || !memchr(t, 0, n ? n : 1 << 30))
		return si_fail(CUDA_ERROR_INVALID_PTX, "%s: the PTX text is not NUL-terminated within its size", what);
	const char *v = strstr(t, ".version"), *g = strstr(t, ".target sm_");
	if (!v || !g)
		return si_fail(CUDA_ERROR_INVALID_PTX, "%s: no .version or .target sm_NN in the PTX", what);
	for (; g; g = strstr(g + 1, ".target sm_")) { /* every module's, when several were linked */
		int sm = atoi(g + strlen(".target sm_"));
		if (sm < 50 || sm > S.sm)
			return si_fail(CUDA_ERROR_INVALID_PTX,
				       "%s: .target sm_%d is not for a compute capability %d.%d device", what, sm,
				       S.sm / 10, S.sm % 10);
	}
	return CUDA_SUCCESS;
}

static CUresult link_create(unsigned int nopt, CUjit_option *opt, void **val, CUlinkState *out)
{
	ENTER();
	NEED_CTX("cuLinkCreate");
	struct CUlinkState_st *l = ir_calloc(1, sizeof *l);
	if (!l)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	l->magic = LIVE;
	*out = l;
	(void)nopt;
	(void)opt;
	(void)val;
	return CUDA_SUCCESS;
}

static CUresult link_add_data(CUlinkState l, CUjitInputType type, void *data, size_t n, const char *name,
			      unsigned int nopt, CUjit_option *opt, void **val)
{
	ENTER();
	if (!l || l->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "cuLinkAddData on a link state that is not live");
	if (type != CU_JIT_INPUT_PTX)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuLinkAddData: the stand-in links PTX only");
	CUresult e = ptx_ok(data, n, "cuLinkAddData");
	if (e != CUDA_SUCCESS)
		return e;
	/* the texts added, one after the other: what it declares is theirs */
	size_t had = l->ptx ? strlen(l->ptx) : 0;
	char *t = ir_realloc(l->ptx, had + strlen(data) + 2);
	if (!t)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	l->ptx = t;
	strcpy(t + had, data);
	strcat(t + had, "\n");
	(void)name;
	(void)nopt;
	(void)opt;
	(void)val;
	return CUDA_SUCCESS;
}

static CUresult link_complete(CUlinkState l, void **cubin, size_t *n)
{
	ENTER();
	if (!l || l->magic != LIVE || !l->ptx)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "cuLinkComplete with nothing added");
	size_t m = strlen(CUBIN_MAGIC), t = strlen(l->ptx);
	if (!(l->cubin = ir_malloc(m + t + 1)))
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	memcpy(l->cubin, CUBIN_MAGIC, m);
	memcpy(l->cubin + m, l->ptx, t + 1);
	*cubin = l->cubin;
	*n = m + t + 1;
	return CUDA_SUCCESS;
}

static CUresult link_destroy(CUlinkState l)
{
	ENTER();
	if (!l || l->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "cuLinkDestroy on a link state that is not live");
	l->magic = DEAD;
	ir_free(l->ptx);
	ir_free(l->cubin);
	ir_free(l);
	return CUDA_SUCCESS;
}

static CUresult module_load_data(CUmodule *out, const void *image)
{
	ENTER();
	NEED_CTX("cuModuleLoadData");
	const char *t = image;
	size_t m = strlen(CUBIN_MAGIC);
	if (!t)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData(NULL)");
	if (!strncmp(t, CUBIN_MAGIC, m))
		t += m;
	else if (!memchr(t, 0, 1 << 16) || !strstr(t, ".version")) /* a real cubin: ELF */
		return si_fail(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: neither PTX nor the stand-in's cubin");
	CUresult e = ptx_ok(t, 0, "cuModuleLoadData");
	struct CUmod_st *mod = e == CUDA_SUCCESS ? ir_calloc(1, sizeof *mod) : NULL;
	if (e == CUDA_SUCCESS && (!mod || !(mod->ptx = ir_malloc(strlen(t) + 1)))) {
		ir_free(mod);
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	}
	if (e != CUDA_SUCCESS)
		return e;
	strcpy(mod->ptx, t);
	mod->magic = LIVE;
	si_keep(mod);
	*out = mod;
	return CUDA_SUCCESS;
}

static CUresult module_unload(CUmodule mod)
{
	ENTER();
	if (!mod || mod->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "cuModuleUnload of a module that is not loaded");
	mod->magic = DEAD; /* kept: its functions' handles stay checkable */
	ir_free(mod->ptx);
	mod->ptx = NULL;
	return CUDA_SUCCESS;
}

/* Whether PTX text declares .entry name (followed by '(' or a blank). */
static bool declares(const char *ptx, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = strstr(ptx, ".entry "); p; p = strstr(p + 1, ".entry ")) {
		const char *q = p + strlen(".entry ");
		while (*q == ' ' || *q == '\t')
			q++;
		if (!strncmp(q, name, n) && (q[n] == '(' || q[n] == ' ' || q[n] == '\n' || q[n] == '\t'))
			return true;
	}
	return false;
}

static CUresult module_get_function(CUfunction *out, CUmodule mod, const char *name)
{
	ENTER();
	if (!mod || mod->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "cuModuleGetFunction on a module that is not loaded");
	if (!name || strlen(name) >= 64 || !declares(mod->ptx, name))
		return si_fail(CUDA_ERROR_NOT_FOUND, "the module's PTX declares no .entry %s", name ? name : "(NULL)");
	struct CUfunc_st *f = ir_calloc(1, sizeof *f);
	if (!f)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	snprintf(f->name, sizeof f->name, "%s", name);
	if (!S.lookup || S.lookup(S.lookup_ctx, name, &f->k) < 0) {
		ir_free(f);
		return si_fail(CUDA_ERROR_NOT_FOUND, "no host code stands in for kernel %s", name);
	}
	if (f->k.nargs < 1 || f->k.nargs > 512 || f->k.nin > f->k.nargs ||
	    !(f->bytes = ir_calloc((size_t)f->k.nargs, sizeof *f->bytes))) {
		ir_free(f);
		return si_fail(CUDA_ERROR_NOT_FOUND, "kernel %s: %d arguments", name, f->k.nargs);
	}
	memcpy(f->bytes, f->k.bytes, (size_t)f->k.nargs * sizeof *f->bytes);
	f->k.bytes = f->bytes;
	f->magic = LIVE;
	si_keep(f);
	*out = f;
	return CUDA_SUCCESS;
}

struct launch_op {
	struct si_op op;
	struct CUfunc_st *f;
	CUdeviceptr table;
};

static int run_launch(struct si_op *o, bool first)
{
	struct launch_op *l = (struct launch_op *)o;
	const struct gpu_standin_kernel *k = &l->f->k;
	const CUdeviceptr *t = si_host(l->table, (size_t)k->nargs * sizeof *t, "the kernel's argument table");
	void *args[512];
	(void)first;
	if (!t)
		return -1;
	for (int j = 0; j < k->nargs; j++) {
		char what[96];
		snprintf(what, sizeof what, "%s's argument %d", l->f->name, j);
		if (!(args[j] = si_host(t[j], (size_t)k->bytes[j], what)))
			return -1;
	}
	if (k->run(k->ctx, k->kernel, args) < 0) {
		si_fail(CUDA_ERROR_LAUNCH_FAILED, "%s's host code failed: %s", l->f->name, ir_error());
		return -1;
	}
	return 0;
}

static CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			      unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
	ENTER();
	NEED_CTX("cuLaunchKernel");
	if (!f || f->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel of a function that is not live");
	if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || gx > 0x7fffffffu || !bx || !by || !bz ||
	    (uint64_t)bx * by * bz > 1024 || bz > 64 || shmem > 227 * 1024)
		return si_fail(CUDA_ERROR_INVALID_VALUE,
			       "cuLaunchKernel %s: grid %ux%ux%u, block %ux%ux%u, %u bytes shared", f->name, gx, gy, gz,
			       bx, by, bz, shmem);
	if (!params || extra)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: parameters must come as kernelParams",
			       f->name);
	CUdeviceptr table;
	int64_t rows;
	memcpy(&table, params[0], sizeof table); /* the driver copies the parameters at the launch */
	memcpy(&rows, params[1], sizeof rows);
	if (rows != f->k.rows)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel %s: %lld rows, where the kernel has %lld",
			       f->name, (long long)rows, (long long)f->k.rows);
	const CUdeviceptr *t = si_host(table, (size_t)f->k.nargs * sizeof *t, "cuLaunchKernel's argument table");
	if (!t)
		return CUDA_ERROR_INVALID_VALUE;
	CUdeviceptr scratch = 0; /* a grid reduction's: read and written by the kernel */
	if (f->k.scratch) {
		memcpy(&scratch, params[2], sizeof scratch);
		if (!si_host(scratch, (size_t)f->k.scratch, "cuLaunchKernel's grid reduction scratch"))
			return CUDA_ERROR_INVALID_VALUE;
	}
	struct launch_op *l = si_op_new(sizeof *l, f->name, run_launch, f->k.nargs + 1 + !!scratch);
	if (!l)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	l->f = f;
	l->table = table;
	l->op.rg[0] = (struct si_range){ table, table + (CUdeviceptr)f->k.nargs * sizeof *t, false };
	for (int j = 0; j < f->k.nargs; j++)
		l->op.rg[j + 1] = (struct si_range){ t[j], t[j] + (CUdeviceptr)f->k.bytes[j], j >= f->k.nin };
	if (scratch)
		l->op.rg[f->k.nargs + 1] = (struct si_range){ scratch, scratch + (CUdeviceptr)f->k.scratch, true };
	return si_enqueue(s, &l->op);
}

/* ---- stream capture and graphs ------------------------------------------------------ */

static CUresult begin_capture(CUstream s, CUstreamCaptureMode mode)
{
	ENTER();
	NEED_CTX("cuStreamBeginCapture");
	CUresult e = si_stream_ok(s, "cuStreamBeginCapture");
	if (e != CUDA_SUCCESS)
		return e;
	if (!s)
		return si_fail(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuStreamBeginCapture on the legacy stream");
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuStreamBeginCapture: capture mode %d", (int)mode);
	if (S.cap.on && stream_of(s)->cap)
		return si_fail(CUDA_ERROR_ILLEGAL_STATE,
			       "cuStreamBeginCapture on stream %d, which is capturing already", s->idx);
	if (S.cap.on)
		return si_fail(CUDA_ERROR_NOT_SUPPORTED,
			       "cuStreamBeginCapture on stream %d while stream %d captures: the stand-in takes one "
			       "capture at a time",
			       s->idx, S.cap.origin);
	struct body *b = ir_calloc(1, sizeof *b);
	if (!b)
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	b->refs = 1;
	b->begun = S.calls;
	memset(&S.cap, 0, sizeof S.cap);
	S.cap.on = true;
	S.cap.origin = s->idx;
	S.cap.mode = mode;
	S.cap.id = ++S.caps;
	S.cap.begun = S.calls;
	S.cap.b = b;
	S.cap.nbranch = 1;
	S.cap.stream[0] = s->idx;
	S.st[s->idx].cap = 1;
	return CUDA_SUCCESS;
}

static CUresult end_capture(CUstream s, CUgraph *out)
{
	ENTER();
	CUresult e = si_stream_ok(s, "cuStreamEndCapture");
	if (e != CUDA_SUCCESS)
		return e;
	if (!out)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuStreamEndCapture with a NULL graph pointer");
	*out = NULL;
	int idx = (int)(stream_of(s) - S.st);
	if (!si_capturing(s))
		return si_fail(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
			       "cuStreamEndCapture on stream %d, which is not capturing", idx);
	if (idx != S.cap.origin)
		return cap_break(si_fail(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
					 "cuStreamEndCapture on stream %d, which joined the capture stream %d began: "
					 "end it there",
					 idx, S.cap.origin));
	for (int k = 0; k < S.cap.nbranch; k++)
		S.st[S.cap.stream[k]].cap = 0;
	S.cap.on = false;
	struct body *b = S.cap.b;
	S.cap.b = NULL;
	if (S.cap.invalid) {
		body_unref(b);
		return si_fail(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
			       "cuStreamEndCapture: the capture begun by call %llu was invalidated: %s",
			       (unsigned long long)S.cap.begun, S.cap.why);
	}
	for (int k = 1; k < S.cap.nbranch; k++)
		if (S.cap.vc[0][k] < S.cap.vc[k][k]) {
			body_unref(b);
			return si_fail(CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
				       "cuStreamEndCapture: stream %d joined the capture and its last %u recorded "
				       "operations were never joined back to stream %d (an event recorded on it "
				       "after them, waited for on stream %d)",
				       S.cap.stream[k], S.cap.vc[k][k] - S.cap.vc[0][k], idx, idx);
		}
	b->nbranch = S.cap.nbranch;
	struct CUgraph_st *g = ir_calloc(1, sizeof *g);
	if (!g) {
		body_unref(b);
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	}
	g->magic = LIVE;
	g->b = b;
	si_keep(g);
	*out = g;
	return CUDA_SUCCESS;
}

static CUresult graph_destroy(CUgraph g)
{
	ENTER();
	if (!g || g->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuGraphDestroy of a graph that is not live");
	g->magic = DEAD;
	body_unref(g->b);
	g->b = NULL;
	return CUDA_SUCCESS;
}

static CUresult exec_destroy(CUgraphExec x)
{
	ENTER();
	if (!x || x->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuGraphExecDestroy of an executable graph that is not live");
	x->magic = DEAD;
	/* queued work of its launches still runs: it holds copies, not the graph */
	for (int k = 1; k < MAX_BRANCH; k++)
		if (x->branch[k])
			stream_destroy(x->branch[k]);
	for (int i = 0; x->b && i < x->b->n; i++)
		if (x->ev[i])
			event_destroy(x->ev[i]);
	if (x->end)
		event_destroy(x->end);
	ir_free(x->ev);
	x->ev = NULL;
	body_unref(x->b);
	x->b = NULL;
	return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
	ENTER();
	NEED_CTX("cuGraphInstantiate");
	if (!out || !g || g->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuGraphInstantiate of a graph that is not live");
	if (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
					  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
		return si_fail(CUDA_ERROR_INVALID_VALUE,
			       "cuGraphInstantiate flags %#llx: the stand-in takes AUTO_FREE_ON_LAUNCH and "
			       "USE_NODE_PRIORITY only (a device launch or an upload needs more)",
			       flags);
	struct CUgraphExec_st *x = ir_calloc(1, sizeof *x);
	if (!x || !(x->ev = ir_calloc((size_t)g->b->n + 1, sizeof *x->ev))) {
		ir_free(x);
		return si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory");
	}
	x->magic = LIVE;
	x->b = g->b;
	x->b->refs++;
	si_keep(x);
	CUresult e = event_create(&x->end, CU_EVENT_DISABLE_TIMING);
	for (int k = 1; k < x->b->nbranch && e == CUDA_SUCCESS; k++)
		e = stream_create(&x->branch[k], CU_STREAM_NON_BLOCKING);
	for (int i = 0; i < x->b->n && e == CUDA_SUCCESS; i++)
		if (x->b->node[i].kind == NODE_RECORD)
			e = event_create(&x->ev[i], CU_EVENT_DISABLE_TIMING);
	if (e != CUDA_SUCCESS) {
		exec_destroy(x);
		return e;
	}
	*out = x;
	return CUDA_SUCCESS;
}

/* Queues a copy of every recorded call, in the order they were recorded:
 * branch 0's on s, each other branch's on the executable graph's own
 * stream, their events replayed between them. */
static CUresult graph_launch(CUgraphExec x, CUstream s)
{
	ENTER();
	NEED_CTX("cuGraphLaunch");
	if (!x || x->magic != LIVE)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuGraphLaunch of an executable graph that is not live");
	CUresult e = si_stream_ok(s, "cuGraphLaunch");
	if (e != CUDA_SUCCESS)
		return e;
	if (si_capturing(s))
		return cap_refuse(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, (int)(stream_of(s) - S.st), "cuGraphLaunch",
				  "the stand-in does not record a graph's launch in another graph");
	if (x->launches && (e = stream_wait_event(s, x->end, 0)) != CUDA_SUCCESS) /* after the one before */
		return e;
	const struct body *b = x->b;
	for (int i = 0; i < b->n && e == CUDA_SUCCESS; i++) {
		const struct node *n = &b->node[i];
		CUstream on = n->branch ? x->branch[n->branch] : s;
		if (n->kind == NODE_RECORD) {
			e = event_record(x->ev[i], on);
		} else if (n->kind == NODE_WAIT) {
			e = stream_wait_event(on, x->ev[n->rec], 0);
		} else {
			struct si_op *o = si_op_clone(n->op);
			e = o ? si_enqueue(on, o) : S.why.code ? (CUresult)S.why.code : CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (e != CUDA_SUCCESS) {
			char d[1100];
			snprintf(d, sizeof d, "%.1090s", S.why.text);
			return si_fail(e, "cuGraphLaunch, node %d of %d (%s, recorded by call %llu): %s", i, b->n,
				       n->op                  ? n->op->what
				       : n->kind == NODE_WAIT ? "cuStreamWaitEvent"
							      : "cuEventRecord",
				       (unsigned long long)(n->op ? n->op->call : b->begun), d);
		}
	}
	if (e == CUDA_SUCCESS)
		e = event_record(x->end, s);
	x->launches++;
	return e;
}

/* ---- devices and contexts ---------------------------------------------------------- */

static CUresult init(unsigned int flags)
{
	S.calls++;
	if (flags)
		return si_fail(CUDA_ERROR_INVALID_VALUE, "cuInit(%u): flags must be 0", flags);
	S.init = true;
	return CUDA_SUCCESS;
}

#define NEED_INIT(what)                                                                       \
	do {                                                                                  \
		ENTER();                                                                      \
		if (!S.init)                                                                  \
			return si_fail(CUDA_ERROR_NOT_INITIALIZED, "%s before cuInit", what); \
	} while (0)

static CUresult driver_version(int *v)
{
	S.calls++;
	*v = 13000;
	return CUDA_SUCCESS;
}

static CUresult device_count(int *n)
{
	NEED_INIT("cuDeviceGetCount");
	*n = S.ndev;
	return CUDA_SUCCESS;
}

static CUresult device_get(CUdevice *d, int ordinal)
{
	NEED_INIT("cuDeviceGet");
	if (ordinal < 0 || ordinal >= S.ndev)
		return si_fail(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet(%d) with %d devices", ordinal, S.ndev);
	*d = ordinal;
	return CUDA_SUCCESS;
}

#define NEED_DEV(d, what)                                                                                         \
	do {                                                                                                      \
		NEED_INIT(what);                                                                                  \
		if ((d) < 0 || (d) >= S.ndev)                                                                     \
			return si_fail(CUDA_ERROR_INVALID_DEVICE, "%s: device %d of %d", what, (int)(d), S.ndev); \
	} while (0)

static CUresult device_name(char *name, int len, CUdevice d)
{
	NEED_DEV(d, "cuDeviceGetName");
	snprintf(name, (size_t)(len > 0 ? len : 0), "pcc GPU stand-in");
	return CUDA_SUCCESS;
}

static CUresult device_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
	NEED_DEV(d, "cuDeviceGetAttribute");
	*v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? S.sm / 10
	     : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? S.sm % 10
	     : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 132
	     : a == CU_DEVICE_ATTRIBUTE_WARP_SIZE                ? 32
	     : a == CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK    ? 1024
	     : a == CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE        ? 2619000 /* an H100's: 3.35 TB/s */
	     : a == CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH  ? 5120
								 : 0;
	return CUDA_SUCCESS;
}

static CUresult device_total_mem(size_t *n, CUdevice d)
{
	NEED_DEV(d, "cuDeviceTotalMem");
	*n = S.total;
	return CUDA_SUCCESS;
}

static CUresult ctx_retain(CUcontext *c, CUdevice d)
{
	NEED_DEV(d, "cuDevicePrimaryCtxRetain");
	S.ctx[d].dev = d;
	*c = &S.ctx[d];
	return CUDA_SUCCESS;
}

static CUresult ctx_release(CUdevice d)
{
	NEED_DEV(d, "cuDevicePrimaryCtxRelease");
	return CUDA_SUCCESS;
}

static CUresult ctx_set_current(CUcontext c)
{
	ENTER();
	if (c && (c < S.ctx || c >= S.ctx + S.ndev))
		return si_fail(CUDA_ERROR_INVALID_CONTEXT, "cuCtxSetCurrent of a context that is not one");
	S.ctx_current = c != NULL;
	return CUDA_SUCCESS;
}

/* ---- the table --------------------------------------------------------------------- */

void si_fill_driver(struct gpu_api *a, int ndev, size_t mem, int sm)
{
	S.ndev = ndev;
	S.total = mem;
	S.sm = sm;
	a->cuInit = init;
	a->cuDriverGetVersion = driver_version;
	a->cuDeviceGet = device_get;
	a->cuDeviceGetCount = device_count;
	a->cuDeviceGetName = device_name;
	a->cuDeviceGetAttribute = device_attribute;
	a->cuDeviceTotalMem = device_total_mem;
	a->cuDevicePrimaryCtxRetain = ctx_retain;
	a->cuDevicePrimaryCtxRelease = ctx_release;
	a->cuCtxSetCurrent = ctx_set_current;
	a->cuMemAlloc = mem_alloc;
	a->cuMemFree = mem_free;
	a->cuMemGetInfo = mem_get_info;
	a->cuMemHostRegister = host_register;
	a->cuMemHostUnregister = host_unregister;
	a->cuMemAllocHost = mem_alloc_host;
	a->cuMemFreeHost = mem_free_host;
	a->cuStreamBeginCapture = begin_capture;
	a->cuStreamEndCapture = end_capture;
	a->cuGraphInstantiateWithFlags = instantiate;
	a->cuGraphLaunch = graph_launch;
	a->cuGraphExecDestroy = exec_destroy;
	a->cuGraphDestroy = graph_destroy;
	a->cuMemcpyHtoDAsync = memcpy_htod;
	a->cuMemcpyDtoHAsync = memcpy_dtoh;
	a->cuMemcpyDtoDAsync = memcpy_dtod;
	a->cuMemcpy2DAsync = memcpy_2d;
	a->cuMemsetD8Async = memset_d8;
	a->cuModuleLoadData = module_load_data;
	a->cuModuleUnload = module_unload;
	a->cuModuleGetFunction = module_get_function;
	a->cuLaunchKernel = launch_kernel;
	a->cuStreamCreate = stream_create;
	a->cuStreamDestroy = stream_destroy;
	a->cuStreamSynchronize = stream_synchronize;
	a->cuStreamQuery = stream_query;
	a->cuStreamWaitEvent = stream_wait_event;
	a->cuEventCreate = event_create;
	a->cuEventDestroy = event_destroy;
	a->cuEventRecord = event_record;
	a->cuEventQuery = event_query;
	a->cuEventElapsedTime = event_elapsed;
	a->cuGetErrorString = get_error_string;
	a->cuLinkCreate = link_create;
	a->cuLinkAddData = link_add_data;
	a->cuLinkComplete = link_complete;
	a->cuLinkDestroy = link_destroy;
	S.st[0].used = S.st[0].live = true;
}

void gpu_standin_kernels(gpu_standin_lookup_fn f, void *ctx)
{
	S.lookup = f;
	S.lookup_ctx = ctx;
}
