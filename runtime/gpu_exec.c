/*
 * gpu_exec.c: the CUDA device table (device.h) and its entries for work
 * (gpu.c's open the device; gpu_internal.h says how streams are ordered):
 * generated kernels, dots through cuBLASLt, every other kernel on the host
 * (its operands copied over and back), copies, collectives and transfers
 * through the NCCL communication table (comm_nccl.c); the host's own
 * transfers (inputs in, outputs out, parameters and state both ways);
 * events that time kernels. In a step recorded as a CUDA graph
 * (gpu_graph.c) the host's transfers go through the pinned staging and
 * nothing waits for the GPU before the step's end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "runtime/gpu_internal.h"

/* ---- ordering ------------------------------------------------------------------ */

static struct gpu_range range_of(const struct rt *r, const struct plan_buffer *b, bool write)
{
	int64_t lo = b->offset + plan_slot_stride(b) * (r->mb % plan_buffer_slots(b));
	return (struct gpu_range){ lo, lo + b->bytes, write };
}

static bool conflicts(const struct gpu_pending *p, const struct gpu_range *rg, int n)
{
	for (int i = 0; i < p->n; i++)
		for (int j = 0; j < n; j++)
			if ((p->rg[i].write || rg[j].write) && p->rg[i].lo < rg[j].hi && rg[j].lo < p->rg[i].hi)
				return true;
	return false;
}

static int new_event(struct rt_gpu *g, CUevent *ev)
{
	if (g->nfree) {
		*ev = g->free_ev[--g->nfree];
		return 0;
	}
	return gpu_check(g, g->a->cuEventCreate(ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

static void drop_event(struct rt_gpu *g, CUevent ev)
{
	if (g->nfree == g->capfree) {
		int cap = g->capfree ? 2 * g->capfree : 16;
		CUevent *v = ir_realloc(g->free_ev, (size_t)cap * sizeof *v);
		if (!v) {
			g->a->cuEventDestroy(ev);
			return;
		}
		g->free_ev = v;
		g->capfree = cap;
	}
	g->free_ev[g->nfree++] = ev;
}

/* At least n events to reuse for ordering the lanes (as many as can be in
 * use at once: the pending ones and one forking), made before a capture
 * so that none is made inside it. */
static int events_ahead(struct rt_gpu *g, int n)
{
	int rc = 0;
	while (g->nfree < n && rc == 0) {
		CUevent ev;
		if ((rc = gpu_check(g, g->a->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate")) == 0)
			drop_event(g, ev);
	}
	return rc;
}

/* The compute stream waits for pending work k; k is no longer pending. */
static int join(struct rt_gpu *g, int k)
{
	int rc = gpu_check(g, g->a->cuStreamWaitEvent(g->compute, g->pend[k].ev, 0), "cuStreamWaitEvent");
	drop_event(g, g->pend[k].ev);
	g->pend[k] = g->pend[--g->npend];
	return rc;
}

/* Orders the compute stream after the pending work that touches rg. */
static int order_after(struct rt_gpu *g, const struct gpu_range *rg, int n)
{
	int rc = 0;
	for (int k = 0; k < g->npend && rc == 0;)
		if (conflicts(&g->pend[k], rg, n))
			rc = join(g, k);
		else
			k++;
	return rc;
}

/* Starts work on stream s (a lane) after everything the compute stream has
 * so far. */
static int lane_begin(struct rt_gpu *g, CUstream s, const struct gpu_range *rg, int n)
{
	CUevent ev;
	int rc = order_after(g, rg, n);
	if (rc == 0)
		rc = new_event(g, &ev);
	if (rc < 0)
		return rc;
	rc = gpu_check(g, g->a->cuEventRecord(ev, g->compute), "cuEventRecord");
	if (rc == 0)
		rc = gpu_check(g, g->a->cuStreamWaitEvent(s, ev, 0), "cuStreamWaitEvent");
	drop_event(g, ev); /* the wait took the event's state: it can be recorded again */
	return rc;
}

/* Stream s's work so far is pending over rg (n <= 4 ranges). */
static int lane_end(struct rt_gpu *g, CUstream s, const struct gpu_range *rg, int n)
{
	int rc = 0;
	if (g->npend == GPU_MAX_PENDING)
		rc = join(g, 0);
	struct gpu_pending *p = &g->pend[g->npend];
	if (rc == 0)
		rc = new_event(g, &p->ev);
	if (rc == 0)
		rc = gpu_check(g, g->a->cuEventRecord(p->ev, s), "cuEventRecord");
	if (rc < 0)
		return rc;
	memcpy(p->rg, rg, (size_t)n * sizeof *rg);
	p->n = n;
	g->npend++;
	return 0;
}

/* ---- the host's transfers ------------------------------------------------------ */

/* In a recorded step: b's bytes into its staging slot, whence the
 * recording's copy reads them (a replay only refills the slot). */
static int put_staged(struct rt *r, const struct plan_buffer *b)
{
	struct rt_gpu *g = gpu_of(r);
	struct gpu_range rg = range_of(r, b, true);
	void *slot = gpu_stage(r, b);
	if (!slot)
		return -EINVAL;
	memcpy(slot, rt_buf(r, b), (size_t)b->bytes);
	if (g->replaying)
		return 0;
	int rc = order_after(g, &rg, 1);
	return rc == 0 ? gpu_check(g, g->a->cuMemcpyHtoDAsync(gpu_dbuf(r, b), slot, (size_t)b->bytes, g->compute),
				   "cuMemcpyHtoD")
		       : rc;
}

int gpu_put(struct rt *r, const struct plan_buffer *b)
{
	struct rt_gpu *g = gpu_of(r);
	if (g->capturing || g->replaying)
		return put_staged(r, b);
	struct gpu_range rg = range_of(r, b, true);
	int rc = order_after(g, &rg, 1);
	if (rc == 0)
		rc = gpu_check(g, g->a->cuMemcpyHtoDAsync(gpu_dbuf(r, b), rt_buf(r, b), (size_t)b->bytes, g->compute),
			       "cuMemcpyHtoD");
	return rc == 0 ? gpu_wait(r, g->compute, "copying to the GPU") : rc;
}

int gpu_get(struct rt *r, const struct plan_buffer *b)
{
	struct rt_gpu *g = gpu_of(r);
	struct gpu_range rg = range_of(r, b, false);
	if (g->capturing || g->replaying) /* the host cannot wait in a recorded step */
		return ir_errorf(-EINVAL, "buffer %d is read back mid-step, which a CUDA graph cannot hold",
				 (int)(b - r->d->buf));
	int rc = order_after(g, &rg, 1);
	if (rc == 0)
		rc = gpu_check(g, g->a->cuMemcpyDtoHAsync(rt_buf(r, b), gpu_dbuf(r, b), (size_t)b->bytes, g->compute),
			       "cuMemcpyDtoH");
	return rc == 0 ? gpu_wait(r, g->compute, "copying from the GPU") : rc;
}

/* Buffer b into dst: now, or in a recorded step by its staging slot once
 * the step's graph is done (gpu_graph_done). */
int gpu_save(struct rt *r, const struct plan_buffer *b, void *dst)
{
	struct rt_gpu *g = gpu_of(r);
	if (!g->capturing && !g->replaying) {
		int rc = gpu_get(r, b);
		if (rc == 0)
			memcpy(dst, rt_buf(r, b), (size_t)b->bytes);
		return rc;
	}
	struct gpu_range rg = range_of(r, b, false);
	void *slot = gpu_stage(r, b);
	int rc = slot ? 0 : -EINVAL;
	if (rc == 0 && g->capturing && (rc = order_after(g, &rg, 1)) == 0)
		rc = gpu_check(g, g->a->cuMemcpyDtoHAsync(slot, gpu_dbuf(r, b), (size_t)b->bytes, g->compute),
			       "cuMemcpyDtoH");
	if (rc == 0 && g->nsaves == g->capsaves) {
		int cap = g->capsaves ? 2 * g->capsaves : 64;
		struct gpu_save *v = ir_realloc(g->saves, (size_t)cap * sizeof *v);
		if (!v)
			return ir_errorf(-ENOMEM, "out of memory saving an output");
		g->saves = v;
		g->capsaves = cap;
	}
	if (rc == 0)
		g->saves[g->nsaves++] = (struct gpu_save){ dst, slot, (size_t)b->bytes };
	return rc;
}

int gpu_fill(struct rt *r, const struct plan_buffer *b, uint8_t byte)
{
	struct rt_gpu *g = gpu_of(r);
	struct gpu_range rg = range_of(r, b, true);
	if (g->replaying) /* in the graph */
		return 0;
	int rc = order_after(g, &rg, 1);
	return rc == 0 ? gpu_check(g, g->a->cuMemsetD8Async(gpu_dbuf(r, b), byte, (size_t)b->bytes, g->compute),
				   "cuMemsetD8")
		       : rc;
}

int gpu_sync(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	int rc = 0;
	bool graph = g->capturing || g->replaying;
	while (g->npend && rc == 0)
		rc = join(g, 0);
	if (rc == 0 && graph)
		rc = gpu_graph_launch(r);
	if (rc == 0)
		rc = gpu_wait(r, g->compute, graph ? "the step's CUDA graph" : "the step");
	if (rc == 0 && graph)
		gpu_graph_done(r);
	return rc;
}

/* ---- kernels ------------------------------------------------------------------- */

static const struct plan_buffer *arg(const struct rt *r, const struct plan_instr *x, int j)
{
	return &r->d->buf[r->d->args[x->arg + j]];
}

/* x's operands and results as ranges (at most 65). */
static int ranges(const struct rt *r, const struct plan_instr *x, struct gpu_range *rg)
{
	int n = x->nin + x->nout < 65 ? x->nin + x->nout : 65;
	for (int j = 0; j < n; j++)
		rg[j] = range_of(r, arg(r, x, j), j >= x->nin);
	return n;
}

static int launch(struct rt *r, const struct plan_instr *x, int i)
{
	struct rt_gpu *g = gpu_of(r);
	int64_t rows = g->rows[x->kernel];
	CUdeviceptr args = g->argtab + (CUdeviceptr)(8 * (g->argoff[i] + (int64_t)r->mb * (x->nin + x->nout)));
	int64_t blocks = (rows * g->lanes[x->kernel] + 255) / 256, most = (int64_t)g->sms * 16;
	int64_t per = g->grid[x->kernel];
	void *params[3] = { &args, &rows, &g->gscratch };
	if (rows <= 0)
		return 0;
	if (per) { /* the whole grid on each result: at least 16 elements a thread */
		blocks = (per + 4095) / 4096;
		most = g->grid_blocks;
	}
	blocks = blocks < most ? blocks : most;
	return gpu_check(g,
			 g->a->cuLaunchKernel(g->fn[x->kernel], (unsigned)blocks, 1, 1, 256, 1, 1, 0, g->compute,
					      params, NULL),
			 "cuLaunchKernel");
}

static cudaDataType_t cuda_type(enum ir_dtype t)
{
	return t == IR_F64 ? CUDA_R_64F : t == IR_F16 ? CUDA_R_16F : t == IR_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static int lt_check(const struct rt_gpu *g, cublasStatus_t s, const char *what)
{
	return s == CUBLAS_STATUS_SUCCESS ? 0
					  : ir_errorf(-EIO, "cuBLASLt %s: %s", what, g->a->cublasLtGetStatusString(s));
}

static int layout(const struct rt_gpu *g, cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows, int64_t cols,
		  int64_t batch)
{
	int32_t nb = (int32_t)batch;
	int64_t stride = rows * cols;
	int rc = lt_check(g, g->a->cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, rows), "layout");
	if (rc == 0 && batch > 1)
		rc = lt_check(g,
			      g->a->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb,
								     sizeof nb),
			      "batch count");
	if (rc == 0 && batch > 1)
		rc = lt_check(g,
			      g->a->cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
								     &stride, sizeof stride),
			      "batch stride");
	return rc;
}

/* Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's A is the
 * dot's rhs, its B the lhs, its C^T (n x m) our C. */
static int gemm_plan(struct rt_gpu *g, const struct plan_kernel *k, struct gpu_gemm_plan *e)
{
	const struct gpu_api *a = g->a;
	struct gpu_gemm *m = &e->g;
	enum ir_dtype t = k->dtype[0];
	cudaDataType_t dt = cuda_type(t);
	cublasComputeType_t ct = t == IR_F64              ? CUBLAS_COMPUTE_64F
				 : t == IR_F32 && g->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
							  : CUBLAS_COMPUTE_32F;
	cublasOperation_t ta = m->tb ? CUBLAS_OP_T : CUBLAS_OP_N, tb = m->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	uint64_t ws = g->nws;
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t res[GPU_GEMM_ALGOS];
	int nres = 0;
	int rc = lt_check(g, a->cublasLtMatmulDescCreate(&e->desc, ct, t == IR_F64 ? CUDA_R_64F : CUDA_R_32F), "desc");
	if (rc == 0)
		rc = lt_check(g,
			      a->cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
			      "op");
	if (rc == 0)
		rc = lt_check(g,
			      a->cublasLtMatmulDescSetAttribute(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
			      "op");
	if (rc == 0) /* stored shapes, column-major: rhs n x k (or k x n), lhs k x m (or m x k) */
		rc = layout(g, &e->la, dt, m->tb ? m->k : m->n, m->tb ? m->n : m->k, m->batch);
	if (rc == 0)
		rc = layout(g, &e->lb, dt, m->ta ? m->m : m->k, m->ta ? m->k : m->m, m->batch);
	if (rc == 0)
		rc = layout(g, &e->lc, dt, m->n, m->m, m->batch);
	if (rc == 0)
		rc = lt_check(g, a->cublasLtMatmulPreferenceCreate(&pref), "preference");
	if (rc == 0)
		rc = lt_check(g,
			      a->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
								      &ws, sizeof ws),
			      "workspace");
	if (rc == 0)
		rc = lt_check(g,
			      a->cublasLtMatmulAlgoGetHeuristic(g->lt, e->desc, e->la, e->lb, e->lc, e->lc, pref,
								GPU_GEMM_ALGOS, res, &nres),
			      "heuristic");
	if (pref)
		a->cublasLtMatmulPreferenceDestroy(pref);
	for (int i = 0; rc == 0 && i < nres && i < GPU_GEMM_ALGOS; i++)
		if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= g->nws)
			e->cand[e->ncand++] = res[i].algo;
	if (e->ncand > 0) {
		e->algo = e->cand[0];
		e->ok = true;
	}
	return rc;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static cublasStatus_t matmul(struct rt_gpu *g, const struct gpu_gemm_plan *e, const cublasLtMatmulAlgo_t *algo,
			     bool f64, CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr out)
{
	static const float one = 1, zero = 0;
	static const double one64 = 1, zero64 = 0;
	return g->a->cublasLtMatmul(g->lt, e->desc, f64 ? (const void *)&one64 : (const void *)&one, (void *)rhs, e->la,
				    (void *)lhs, e->lb, f64 ? (const void *)&zero64 : (const void *)&zero, (void *)out,
				    e->lc, (void *)out, e->lc, algo, (void *)g->ws, g->nws, g->compute);
}

/* The first call of a dot: each of the heuristic's algorithms runs
 * twice on the dot's own operands, timed on the host's clock from an idle
 * stream to its end (what a step pays, the call's host work included),
 * and the fastest is kept. The heuristic's first choice can be far off: on
 * an H200 GPT-2's QKV projection (8192 x 768 x 2304, bf16) took 2.7 ms a
 * call where the MLP's larger GEMM took 0.15. The result is written
 * again by the call that follows. */
static int tune(struct rt *r, struct gpu_gemm_plan *e, bool f64, CUdeviceptr lhs, CUdeviceptr rhs, CUdeviceptr out)
{
	struct rt_gpu *g = gpu_of(r);
	int rc = gpu_wait(r, g->compute, "timing a dot's GEMM algorithms");
	double best = 0;
	e->pick = 0;
	for (int i = 0; i < e->ncand && rc == 0; i++) {
		double t0 = now_ms();
		bool ok = matmul(g, e, &e->cand[i], f64, lhs, rhs, out) == CUBLAS_STATUS_SUCCESS &&
			  matmul(g, e, &e->cand[i], f64, lhs, rhs, out) == CUBLAS_STATUS_SUCCESS;
		rc = gpu_wait(r, g->compute, "timing a dot's GEMM algorithms");
		e->tuned_ms[i] = ok ? (now_ms() - t0) / 2 : -1;
		if (ok && (best == 0 || e->tuned_ms[i] < best)) {
			best = e->tuned_ms[i];
			e->pick = i;
		}
	}
	e->algo = e->cand[e->pick];
	e->ntuned = e->ncand;
	return rc;
}

/* Whether kernel x's dot has a cuBLASLt plan (made at its first call;
 * none: the kernel is not a dot, or no algorithm fits, and launch runs it). */
static bool gemm_ready(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	struct gpu_gemm_plan *e = &g->gemm[x->kernel];
	if (!e->tried) {
		e->tried = true;
		if (gpu_plan_gemm(k, &e->g) && e->g.m < INT32_MAX && e->g.n < INT32_MAX && e->g.k < INT32_MAX &&
		    e->g.batch < INT32_MAX)
			gemm_plan(g, k, e); /* no algorithm: the host runs it */
	}
	return e->ok;
}

/* The dot of kernel x through cuBLASLt, its algorithm tuned at the first call. */
static int gemm(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	struct gpu_gemm_plan *e = &g->gemm[x->kernel];
	bool f64 = k->dtype[0] == IR_F64;
	CUdeviceptr lhs = gpu_dbuf(r, arg(r, x, 0)), rhs = gpu_dbuf(r, arg(r, x, 1)), out = gpu_dbuf(r, arg(r, x, 2));
	int rc = 0;
	if (e->ncand > 1 && g->capturing) /* graph_kernel timed every one first */
		return ir_errorf(-EINVAL, "a dot's GEMM algorithms are timed mid-way through recording a CUDA graph");
	if (e->ncand > 1) {
		rc = tune(r, e, f64, lhs, rhs, out);
		e->ncand = 1; /* tuned */
	}
	return rc == 0 ? lt_check(g, matmul(g, e, &e->algo, f64, lhs, rhs, out), "matmul") : rc;
}

/* Any other kernel: its operands to the host, the host's kernel, its
 * results back. */
static int on_host(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = gpu_of(r);
	int rc = 0;
	if (g->capturing) /* step_begin found none */
		return ir_errorf(-EINVAL, "a kernel runs on the host mid-way through recording a CUDA graph");
	for (int j = 0; j < x->nin && rc == 0; j++) {
		const struct plan_buffer *b = arg(r, x, j);
		rc = gpu_check(g, g->a->cuMemcpyDtoHAsync(rt_buf(r, b), gpu_dbuf(r, b), (size_t)b->bytes, g->compute),
			       "cuMemcpyDtoH");
	}
	if (rc == 0)
		rc = gpu_wait(r, g->compute, "copying a kernel's operands to the host");
	if (rc == 0)
		rc = rt_run_kernel(r, x);
	for (int j = x->nin; j < x->nin + x->nout && rc == 0; j++) {
		const struct plan_buffer *b = arg(r, x, j);
		rc = gpu_check(g, g->a->cuMemcpyHtoDAsync(gpu_dbuf(r, b), rt_buf(r, b), (size_t)b->bytes, g->compute),
			       "cuMemcpyHtoD");
	}
	if (rc == 0)
		rc = gpu_wait(r, g->compute, "copying a kernel's results to the GPU");
	g->fallbacks++;
	g->fell[x->kernel] = true;
	return rc;
}

/* A CPU plan's library call with its epilogue (plan_kernel_core): the PTX
 * is the epilogue alone, so the host runs the pair. */
static bool core_and_epilogue(const struct rt *r, const struct plan_instr *x)
{
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	return plan_kernel_core(k) != IR_OP_COUNT && k->nbody;
}

bool gpu_gemm(struct rt *r, const struct plan_instr *x, int *rc)
{
	struct gpu_range rg[65];
	*rc = 0;
	if (core_and_epilogue(r, x) || !gemm_ready(r, x))
		return false;
	if ((*rc = order_after(gpu_of(r), rg, ranges(r, x, rg))) == 0)
		*rc = gemm(r, x);
	return true;
}

/* Whether buffer range rg shares bytes with a parameter or state. */
static bool touches_kept(const struct rt *r, const struct gpu_range *rg)
{
	const struct plan_device *d = r->d;
	for (int b = 0; b < d->nbuf; b++) {
		const struct plan_buffer *p = &d->buf[b];
		int64_t lo = p->offset, hi = lo + plan_slot_stride(p) * (plan_buffer_slots(p) - 1) + p->bytes;
		if ((p->bind == PLAN_BIND_PARAM || p->bind == PLAN_BIND_STATE) && lo < rg->hi && rg->lo < hi)
			return true;
	}
	return false;
}

/* Before a step is recorded: whether kernel instruction x would run on
 * the host (*host), and its dot's GEMM algorithms timed now (timing waits
 * for the GPU, which a recording cannot), unless the dot's result shares
 * bytes with a parameter or state that the timing's writes would spoil
 * (*later: timed at its first call, as without a graph). */
static int graph_kernel(struct rt *r, const struct plan_instr *x, bool *host, bool *later)
{
	struct rt_gpu *g = gpu_of(r);
	struct gpu_gemm_plan *e = &g->gemm[x->kernel];
	*host = *later = false;
	if (core_and_epilogue(r, x) || !gemm_ready(r, x)) {
		*host = core_and_epilogue(r, x) || !g->fn[x->kernel];
		return 0;
	}
	if (e->ncand <= 1)
		return 0;
	int mb = r->mb;
	r->mb = 0;
	struct gpu_range out = range_of(r, arg(r, x, 2), true);
	int rc = 0;
	if (touches_kept(r, &out))
		*later = true;
	else if ((rc = tune(r, e, r->p->kernels[x->kernel].dtype[0] == IR_F64, gpu_dbuf(r, arg(r, x, 0)),
			    gpu_dbuf(r, arg(r, x, 1)), gpu_dbuf(r, arg(r, x, 2)))) == 0)
		e->ncand = 1; /* tuned */
	r->mb = mb;
	return rc;
}

int gpu_launch(struct rt *r, const struct plan_instr *x, int i)
{
	struct gpu_range rg[65];
	int rc = order_after(gpu_of(r), rg, ranges(r, x, rg));
	if (rc < 0)
		return rc;
	if (!core_and_epilogue(r, x) && gpu_of(r)->fn[x->kernel])
		return launch(r, x, i);
	return on_host(r, x);
}

/* ---- events (device.h): timing events on the compute stream, reused ------------ */

int gpu_event_record(struct rt *r, struct rt_event **ev)
{
	struct rt_gpu *g = gpu_of(r);
	CUevent e;
	if (g->ntev)
		e = g->tev[--g->ntev];
	else {
		int rc = gpu_check(g, g->a->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
		if (rc < 0)
			return rc;
	}
	*ev = (struct rt_event *)e;
	return gpu_check(g, g->a->cuEventRecord(e, g->compute), "cuEventRecord");
}

int gpu_event_elapsed(struct rt *r, struct rt_event *a, struct rt_event *b, double *seconds)
{
	struct rt_gpu *g = gpu_of(r);
	float ms = 0;
	int rc = gpu_check(g, g->a->cuEventElapsedTime(&ms, (CUevent)a, (CUevent)b), "cuEventElapsedTime");
	*seconds = ms * 1e-3;
	return rc;
}

void gpu_event_free(struct rt *r, struct rt_event *ev)
{
	struct rt_gpu *g = gpu_of(r);
	if (!ev)
		return;
	if (g->ntev == g->captev) {
		int c = g->captev ? 2 * g->captev : 64;
		CUevent *w = ir_realloc(g->tev, (size_t)c * sizeof *w);
		if (!w) {
			g->a->cuEventDestroy((CUevent)ev);
			return;
		}
		g->tev = w;
		g->captev = c;
	}
	g->tev[g->ntev++] = (CUevent)ev;
}

/* ---- collectives and transfers ---------------------------------------------------- */

/* ir_copy_block between device buffers, on stream s. */
static int copy_block(struct rt_gpu *g, CUstream s, CUdeviceptr dst, const struct ir_shape *dshape,
		      const int64_t *dstart, CUdeviceptr src, const struct ir_shape *sshape, const int64_t *sstart,
		      const struct ir_shape *blk, size_t es)
{
	struct gpu_copy2d one, *v = &one;
	int n = 0, rc = gpu_plan_block(dshape, dstart, sshape, sstart, blk, es, v, 1, &n);
	if (rc == -ENOSPC) {
		if (!(v = ir_calloc((size_t)n, sizeof *v)))
			return ir_errorf(-ENOMEM, "out of memory packing a collective");
		rc = gpu_plan_block(dshape, dstart, sshape, sstart, blk, es, v, n, &n);
	}
	for (int i = 0; i < n && rc == 0; i++) {
		CUDA_MEMCPY2D c = { .srcMemoryType = CU_MEMORYTYPE_DEVICE,
				    .srcDevice = src + (CUdeviceptr)v[i].src,
				    .srcPitch = (size_t)v[i].spitch,
				    .dstMemoryType = CU_MEMORYTYPE_DEVICE,
				    .dstDevice = dst + (CUdeviceptr)v[i].dst,
				    .dstPitch = (size_t)v[i].dpitch,
				    .WidthInBytes = (size_t)v[i].width,
				    .Height = (size_t)v[i].height };
		rc = gpu_check(g,
			       v[i].height == 1 ? g->a->cuMemcpyDtoDAsync(c.dstDevice, c.srcDevice, c.WidthInBytes, s)
						: g->a->cuMemcpy2DAsync(&c, s),
			       "cuMemcpy2D");
	}
	if (v != &one)
		ir_free(v);
	return rc;
}

/* Whether dims before axis are all 1 (the blocks are already rank-major). */
static bool leading(const struct plan_buffer *b, int axis)
{
	for (int a = 0; a < axis; a++)
		if (b->shape.dims[a] != 1)
			return false;
	return true;
}

/* Collective x's NCCL call on its lane's stream (comm.h's contract over
 * device addresses), finished in the stream's order (the lane's pending
 * event). */
static int gather(struct rt_gpu *g, struct gpu_lane *l, const struct plan_instr *x, int n, const struct plan_buffer *in,
		  CUdeviceptr din, const struct plan_buffer *out, CUdeviceptr dout)
{
	struct rt_comm *c = &g->nccl;
	struct rt_comm_req *req;
	if (leading(in, x->axis))
		return c->ops->all_gather(c, x->comm, (void *)din, (void *)dout, (size_t)in->bytes, &req);
	int rc = c->ops->all_gather(c, x->comm, (void *)din, (void *)l->scratch, (size_t)in->bytes, &req);
	for (int q = 0; q < n && rc == 0; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis] = q * in->shape.dims[x->axis];
		rc = copy_block(g, l->s, dout, &out->shape, st, l->scratch + (CUdeviceptr)q * (CUdeviceptr)in->bytes,
				&in->shape, NULL, &in->shape, ir_dtype_size(in->dtype));
	}
	return rc;
}

static int scatter(struct rt_gpu *g, struct gpu_lane *l, const struct plan_instr *x, int n,
		   const struct plan_buffer *in, CUdeviceptr din, const struct plan_buffer *out, CUdeviceptr dout)
{
	struct rt_comm *c = &g->nccl;
	struct rt_comm_req *req;
	CUdeviceptr src = din;
	int rc = 0;
	if (!leading(in, x->axis)) {
		src = l->scratch;
		for (int q = 0; q < n && rc == 0; q++) {
			int64_t st[IR_MAX_RANK] = { 0 };
			st[x->axis] = q * out->shape.dims[x->axis];
			rc = copy_block(g, l->s, l->scratch + (CUdeviceptr)q * (CUdeviceptr)out->bytes, &out->shape,
					NULL, din, &in->shape, st, &out->shape, ir_dtype_size(in->dtype));
		}
	}
	if (rc == 0)
		rc = c->ops->reduce_scatter(c, x->comm, (void *)src, (void *)dout, ir_shape_numel(&out->shape),
					    in->dtype, &req);
	return rc;
}

static int all_to_all(struct rt_gpu *g, struct gpu_lane *l, const struct plan_instr *x, int n,
		      const struct plan_buffer *in, CUdeviceptr din, const struct plan_buffer *out, CUdeviceptr dout)
{
	struct rt_comm *c = &g->nccl;
	struct rt_comm_req *req;
	struct ir_shape piece = in->shape;
	piece.dims[x->axis] /= n;
	size_t pb = (size_t)in->bytes / (size_t)n, es = ir_dtype_size(in->dtype);
	CUdeviceptr s = l->scratch, recv = l->scratch + (CUdeviceptr)in->bytes;
	int rc = 0;
	for (int q = 0; q < n && rc == 0; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis] = q * piece.dims[x->axis];
		rc = copy_block(g, l->s, s + (CUdeviceptr)(q * pb), &piece, NULL, din, &in->shape, st, &piece, es);
	}
	if (rc == 0)
		rc = c->ops->all_to_all(c, x->comm, (void *)s, (void *)recv, pb, &req);
	for (int q = 0; q < n && rc == 0; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis2] = q * piece.dims[x->axis2];
		rc = copy_block(g, l->s, dout, &out->shape, st, recv + (CUdeviceptr)(q * pb), &piece, NULL, &piece, es);
	}
	return rc;
}

static int collective(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan_buffer *in = arg(r, x, 0), *out = arg(r, x, 1);
	CUdeviceptr din = gpu_dbuf(r, in), dout = gpu_dbuf(r, out);
	struct gpu_lane *l = &g->lane[x->comm];
	struct gpu_range rg[2] = { range_of(r, in, false), range_of(r, out, true) };
	struct rt_comm_req *req;
	int n = r->p->comms[x->comm].n, rc;
	if (n == 1) { /* a communicator of one: every collective is a copy */
		if ((rc = order_after(g, rg, 2)) < 0 || din == dout)
			return rc;
		return gpu_check(g, g->a->cuMemcpyDtoDAsync(dout, din, (size_t)out->bytes, g->compute), "cuMemcpyDtoD");
	}
	if (!l->s)
		return ir_errorf(-EINVAL, "this rank is not in communicator %d", x->comm);
	if ((rc = lane_begin(g, l->s, rg, 2)) < 0)
		return rc;
	if (x->kind == PLAN_ALL_REDUCE)
		rc = g->nccl.ops->all_reduce(&g->nccl, x->comm, (void *)din, (void *)dout, ir_shape_numel(&in->shape),
					     in->dtype, x->reduce, &req);
	else if (x->kind == PLAN_ALL_GATHER)
		rc = gather(g, l, x, n, in, din, out, dout);
	else if (x->kind == PLAN_REDUCE_SCATTER)
		rc = scatter(g, l, x, n, in, din, out, dout);
	else
		rc = all_to_all(g, l, x, n, in, din, out, dout);
	return rc == 0 ? lane_end(g, l->s, rg, 2) : rc;
}

/* A send from this rank to x->peer, or a receive from it, on their pair's
 * stream. */
static int transfer(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = gpu_of(r);
	struct rt_comm *c = &g->nccl;
	struct rt_comm_req *req;
	bool send = x->kind == PLAN_SEND;
	int from = send ? r->c->rank : x->peer, to = send ? x->peer : r->c->rank;
	CUstream s = rt_comm_nccl_stream(c, -1, from, to);
	if (!s)
		return ir_errorf(-EINVAL, "no communicator for messages from rank %d to rank %d", from, to);
	const struct plan_buffer *b = arg(r, x, send ? 0 : x->nin);
	struct gpu_range rg = range_of(r, b, !send);
	void *p = (void *)gpu_dbuf(r, b);
	int rc = lane_begin(g, s, &rg, 1);
	if (rc == 0)
		rc = send ? c->ops->send(c, p, (size_t)b->bytes, x->peer, x->tag)
			  : c->ops->recv(c, p, (size_t)b->bytes, x->peer, x->tag, &req);
	return rc == 0 ? lane_end(g, s, &rg, 1) : rc;
}

int gpu_copy(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = gpu_of(r);
	struct gpu_range rg[2] = { range_of(r, arg(r, x, 0), false), range_of(r, arg(r, x, 1), true) };
	int rc = order_after(g, rg, 2);
	return rc == 0 ? gpu_check(g,
				   g->a->cuMemcpyDtoDAsync(gpu_dbuf(r, arg(r, x, 1)), gpu_dbuf(r, arg(r, x, 0)),
							   (size_t)arg(r, x, 0)->bytes, g->compute),
				   "cuMemcpyDtoD")
		       : rc;
}

int gpu_transfer(struct rt *r, const struct plan_instr *x, int pos)
{
	(void)pos;
	return transfer(r, x);
}

int gpu_collective(struct rt *r, const struct plan_instr *x, int pos)
{
	(void)pos;
	return collective(r, x);
}

/* ---- when a step is recorded as a CUDA graph (gpu_graph.c records it) ---------- */

/* -1, with why (printf) as the reason no step is recorded. */
static int give_up(struct rt_gpu *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int give_up(struct rt_gpu *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->why_not, sizeof g->why_not, fmt, ap);
	va_end(ap);
	return -1;
}

/* Whether this step can be recorded: 0 yes; -1 no step can (g->why_not
 * says why; "" for --cuda-graph=off); 1 not this one, the next perhaps; or
 * an error. */
static int not_now(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan_device *d = r->d;
	int nhost = 0, first = -1, later = 0, rc = 0;
	if (r->graph == RT_GRAPH_OFF)
		return give_up(g, "%s", "");
	if (!g->a->cuStreamBeginCapture)
		return give_up(g, "this NVIDIA driver lacks CUDA graphs (cuStreamBeginCapture_v2, "
				  "cuGraphInstantiateWithFlags)");
	if (r->prof_time)
		return give_up(g, "--profile times each kernel by CUDA events around it, which a graph's launch "
				  "cannot");
	if (r->trace)
		return give_up(g, "--trace times each instruction on the host");
	if (r->fault.kind && r->fault.instr >= 0 && r->fault.rank == r->c->rank)
		return give_up(g, "PCC_RUN_FAULT injects a fault at an instruction");
	for (int i = 0; i < d->ninstr && rc == 0; i++) {
		const struct plan_instr *x = &d->instr[i];
		bool host = false, l = false;
		if (x->kind == PLAN_KERNEL)
			rc = graph_kernel(r, x, &host, &l);
		if (host && nhost++ == 0)
			first = i;
		later += l;
	}
	if (rc < 0)
		return rc;
	if (nhost) {
		const struct plan_kernel *k = &r->p->kernels[d->instr[first].kernel];
		return give_up(g,
			       "%d kernel instruction%s run%s on the host (instruction %d, %s %s%s), between copies "
			       "the host waits for",
			       nhost, nhost == 1 ? "" : "s", nhost == 1 ? "s" : "", first,
			       ir_op_name(k->nbody ? k->body[k->nbody - 1].op : k->op), ir_dtype_name(k->dtype[k->nin]),
			       nhost > 1 ? ", ..." : "");
	}
	return later ? 1 : 0;
}

/* device.h's step_begin: a replay; a training run's warm-up; or the step
 * recorded, when it can be. An inference's one step is recorded only with
 * --cuda-graph=on: nothing replays it, so recording it would only add the
 * capture's cost (and its risks) to the run. */
static int step_begin(struct rt *r, bool *replay)
{
	struct rt_gpu *g = gpu_of(r);
	*replay = false;
	g->nsaves = 0;
	if (g->gstate == GPU_GRAPH_READY) {
		g->replaying = *replay = true;
		return 0;
	}
	if (g->gstate == GPU_GRAPH_NEVER)
		return 0;
	if (!r->p->train && r->graph != RT_GRAPH_ON) { /* one step: nothing would replay it */
		g->gstate = GPU_GRAPH_NEVER;
		g->why_not[0] = '\0';
		return 0;
	}
	if (r->p->train && !g->warm) { /* the warm-up */
		g->warm = true;
		return 0;
	}
	int rc = not_now(r);
	if (rc == -1) {
		g->gstate = GPU_GRAPH_NEVER;
		return 0;
	}
	if (rc != 0) /* an error, or a dot to time at its first call */
		return rc > 0 ? 0 : rc;
	bool lanes = false;
	for (int i = 0; i < r->d->ninstr; i++)
		lanes = lanes || plan_instr_is_collective(r->d->instr[i].kind) || r->d->instr[i].kind == PLAN_SEND ||
			r->d->instr[i].kind == PLAN_RECV;
	if (lanes && (rc = events_ahead(g, GPU_MAX_PENDING + 1)) < 0)
		return rc;
	return gpu_graph_begin(r);
}

/* The device's close: the graph first (it holds the lanes' memory and
 * NCCL's communicators). */
static void cuda_close(struct rt *r)
{
	if (gpu_of(r) && gpu_of(r)->a)
		gpu_graph_close(r);
	gpu_close(r);
}

static const struct rt_device_ops cuda_ops = {
	.name = "cuda",
	.clock = "CUDA events",
	.host_arena = false,
	.issues = true,
	.open = gpu_open,
	.connect = gpu_connect,
	.close = cuda_close,
	.alloc = gpu_alloc,
	.free = gpu_free,
	.put = gpu_put,
	.get = gpu_get,
	.fill = gpu_fill,
	.copy = gpu_copy,
	.gemm = gpu_gemm,
	.launch = gpu_launch,
	.transfer = gpu_transfer,
	.collective = gpu_collective,
	.plan_step = NULL, /* streams order the work (gpu_internal.h) */
	.at = NULL,
	.traced = NULL,
	.sync = gpu_sync,
	.step_begin = step_begin,
	.save = gpu_save,
	.graph_report = gpu_graph_report,
	.event_record = gpu_event_record,
	.event_elapsed = gpu_event_elapsed,
	.event_free = gpu_event_free,
	.profile_check = gpu_profile_check,
	.kernel_how = gpu_kernel_how,
	.fallback_report = gpu_fallback_report,
};

const struct rt_device_ops *rt_device_cuda(void)
{
	return &cuda_ops;
}
