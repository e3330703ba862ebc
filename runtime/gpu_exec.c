/*
 * gpu_exec.c: a device program's instructions on the GPU (gpu_internal.h
 * says how streams are ordered): generated kernels, dots through cuBLASLt,
 * every other kernel on the host (its operands copied over and back),
 * copies, collectives and transfers through NCCL; and the host's own
 * transfers (inputs in, outputs out, parameters and state both ways).
 */
#include <errno.h>
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

/* Starts work on lane l after everything the compute stream has so far. */
static int lane_begin(struct rt_gpu *g, struct gpu_lane *l, const struct gpu_range *rg, int n)
{
	CUevent ev;
	int rc = order_after(g, rg, n);
	if (rc == 0)
		rc = new_event(g, &ev);
	if (rc < 0)
		return rc;
	rc = gpu_check(g, g->a->cuEventRecord(ev, g->compute), "cuEventRecord");
	if (rc == 0)
		rc = gpu_check(g, g->a->cuStreamWaitEvent(l->s, ev, 0), "cuStreamWaitEvent");
	drop_event(g, ev); /* the wait took the event's state: it can be recorded again */
	return rc;
}

/* Lane l's work so far is pending over rg (n <= 4 ranges). */
static int lane_end(struct rt_gpu *g, struct gpu_lane *l, const struct gpu_range *rg, int n)
{
	int rc = 0;
	if (g->npend == GPU_MAX_PENDING)
		rc = join(g, 0);
	struct gpu_pending *p = &g->pend[g->npend];
	if (rc == 0)
		rc = new_event(g, &p->ev);
	if (rc == 0)
		rc = gpu_check(g, g->a->cuEventRecord(p->ev, l->s), "cuEventRecord");
	if (rc < 0)
		return rc;
	memcpy(p->rg, rg, (size_t)n * sizeof *rg);
	p->n = n;
	g->npend++;
	return 0;
}

/* ---- the host's transfers ------------------------------------------------------ */

int rt_gpu_put(struct rt *r, const struct plan_buffer *b)
{
	struct rt_gpu *g = r->gpu;
	struct gpu_range rg = range_of(r, b, true);
	int rc = order_after(g, &rg, 1);
	if (rc == 0)
		rc = gpu_check(g, g->a->cuMemcpyHtoDAsync(gpu_dbuf(r, b), rt_buf(r, b), (size_t)b->bytes, g->compute),
			       "cuMemcpyHtoD");
	return rc == 0 ? gpu_wait(r, g->compute, "copying to the GPU") : rc;
}

int rt_gpu_get(struct rt *r, const struct plan_buffer *b)
{
	struct rt_gpu *g = r->gpu;
	struct gpu_range rg = range_of(r, b, false);
	int rc = order_after(g, &rg, 1);
	if (rc == 0)
		rc = gpu_check(g, g->a->cuMemcpyDtoHAsync(rt_buf(r, b), gpu_dbuf(r, b), (size_t)b->bytes, g->compute),
			       "cuMemcpyDtoH");
	return rc == 0 ? gpu_wait(r, g->compute, "copying from the GPU") : rc;
}

int rt_gpu_zero(struct rt *r, const struct plan_buffer *b)
{
	struct rt_gpu *g = r->gpu;
	struct gpu_range rg = range_of(r, b, true);
	int rc = order_after(g, &rg, 1);
	return rc == 0 ? gpu_check(g, g->a->cuMemsetD8Async(gpu_dbuf(r, b), 0, (size_t)b->bytes, g->compute),
				   "cuMemsetD8")
		       : rc;
}

int rt_gpu_state(struct rt *r, bool to_device)
{
	int rc = 0, saved = r->mb;
	r->mb = 0;
	for (int k = 0; k < r->d->nbuf && rc == 0; k++) {
		const struct plan_buffer *b = &r->d->buf[k];
		if (b->bind == PLAN_BIND_PARAM || b->bind == PLAN_BIND_STATE)
			rc = to_device ? rt_gpu_put(r, b) : rt_gpu_get(r, b);
	}
	r->mb = saved;
	return rc;
}

static int read_profile(struct rt *r);

int rt_gpu_finish(struct rt *r)
{
	struct rt_gpu *g = r->gpu;
	int rc = 0;
	while (g->npend && rc == 0)
		rc = join(g, 0);
	if (rc == 0)
		rc = gpu_wait(r, g->compute, "the step");
	return rc == 0 && g->ntimed ? read_profile(r) : rc;
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
	struct rt_gpu *g = r->gpu;
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
	struct rt_gpu *g = r->gpu;
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

/* true: the dot ran (or failed: *rc) as a GEMM; false: it is not one. */
static bool gemm(struct rt *r, const struct plan_instr *x, int *rc)
{
	struct rt_gpu *g = r->gpu;
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	struct gpu_gemm_plan *e = &g->gemm[x->kernel];
	if (!e->tried) {
		e->tried = true;
		if (gpu_plan_gemm(k, &e->g) && e->g.m < INT32_MAX && e->g.n < INT32_MAX && e->g.k < INT32_MAX &&
		    e->g.batch < INT32_MAX)
			gemm_plan(g, k, e); /* no algorithm: the host runs it */
	}
	if (!e->ok)
		return false;
	bool f64 = k->dtype[0] == IR_F64;
	CUdeviceptr lhs = gpu_dbuf(r, arg(r, x, 0)), rhs = gpu_dbuf(r, arg(r, x, 1)), out = gpu_dbuf(r, arg(r, x, 2));
	*rc = 0;
	if (e->ncand > 1) {
		*rc = tune(r, e, f64, lhs, rhs, out);
		e->ncand = 1; /* tuned */
	}
	if (*rc == 0)
		*rc = lt_check(g, matmul(g, e, &e->algo, f64, lhs, rhs, out), "matmul");
	return true;
}

/* Any other kernel: its operands to the host, the host's kernel, its
 * results back. */
static int on_host(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = r->gpu;
	int rc = 0;
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

/* ---- --profile --------------------------------------------------------------- */

static int timing_event(struct rt_gpu *g, CUevent *ev)
{
	if (g->ntev) {
		*ev = g->tev[--g->ntev];
		return 0;
	}
	return gpu_check(g, g->a->cuEventCreate(ev, CU_EVENT_DEFAULT), "cuEventCreate");
}

static void keep_event(CUevent **v, int *n, int *cap, CUevent ev, const struct gpu_api *a)
{
	if (*n == *cap) {
		int c = *cap ? 2 * *cap : 64;
		CUevent *w = ir_realloc(*v, (size_t)c * sizeof *w);
		if (!w) {
			a->cuEventDestroy(ev);
			return;
		}
		*v = w;
		*cap = c;
	}
	(*v)[(*n)++] = ev;
}

/* Records a timing event on the compute stream: the start (*slot < 0: a
 * new pair for kernel k) or the end of the pair *slot. */
static int stamp(struct rt *r, int k, int *slot)
{
	struct rt_gpu *g = r->gpu;
	CUevent ev;
	int rc = timing_event(g, &ev);
	if (rc < 0)
		return rc;
	if (*slot < 0) {
		if (g->ntimed == g->captimed) {
			int c = g->captimed ? 2 * g->captimed : 256;
			struct gpu_timed *v = ir_realloc(g->timed, (size_t)c * sizeof *v);
			if (!v)
				return ir_errorf(-ENOMEM, "out of memory for the profile");
			g->timed = v;
			g->captimed = c;
		}
		*slot = g->ntimed++;
		g->timed[*slot] = (struct gpu_timed){ ev, NULL, k };
	} else {
		g->timed[*slot].b = ev;
	}
	return gpu_check(g, g->a->cuEventRecord(ev, g->compute), "cuEventRecord");
}

/* The step's kernel times into r->prof_time (seconds) and prof_calls,
 * after the compute stream is done. */
static int read_profile(struct rt *r)
{
	struct rt_gpu *g = r->gpu;
	int rc = 0;
	for (int i = 0; i < g->ntimed; i++) {
		struct gpu_timed *t = &g->timed[i];
		float ms = 0;
		if (rc == 0 && t->b)
			rc = gpu_check(g, g->a->cuEventElapsedTime(&ms, t->a, t->b), "cuEventElapsedTime");
		if (rc == 0 && t->b) {
			r->prof_time[t->kernel] += ms * 1e-3;
			r->prof_calls[t->kernel]++;
		}
		keep_event(&g->tev, &g->ntev, &g->captev, t->a, g->a);
		if (t->b)
			keep_event(&g->tev, &g->ntev, &g->captev, t->b, g->a);
	}
	g->ntimed = 0;
	return rc;
}

static int kernel_work(struct rt *r, const struct plan_instr *x, int i);

static int kernel(struct rt *r, const struct plan_instr *x, int i)
{
	int slot = -1, rc;
	if (!r->prof_time)
		return kernel_work(r, x, i);
	if ((rc = stamp(r, x->kernel, &slot)) < 0 || (rc = kernel_work(r, x, i)) < 0)
		return rc;
	return stamp(r, x->kernel, &slot);
}

static int kernel_work(struct rt *r, const struct plan_instr *x, int i)
{
	struct gpu_range rg[65];
	int rc = order_after(r->gpu, rg, ranges(r, x, rg));
	if (rc < 0)
		return rc;
	/* a CPU plan's library call with its epilogue (plan_kernel_core): the
	 * PTX is the epilogue alone, so the host runs the pair */
	if (plan_kernel_core(&r->p->kernels[x->kernel]) != IR_OP_COUNT && r->p->kernels[x->kernel].nbody)
		return on_host(r, x);
	if (gemm(r, x, &rc)) /* cuBLASLt before a dot's generated kernel, the fallback */
		return rc;
	if (r->gpu->fn[x->kernel])
		return launch(r, x, i);
	return on_host(r, x);
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

/* Whether dims before axis are all 1 (the blocks are already rank-major). */
static bool leading(const struct plan_buffer *b, int axis)
{
	for (int a = 0; a < axis; a++)
		if (b->shape.dims[a] != 1)
			return false;
	return true;
}

static int gather(struct rt_gpu *g, struct gpu_lane *l, const struct plan_instr *x, int n, const struct plan_buffer *in,
		  CUdeviceptr din, const struct plan_buffer *out, CUdeviceptr dout)
{
	const struct gpu_api *a = g->a;
	if (leading(in, x->axis))
		return gpu_nccl_check(g,
				      a->ncclAllGather((void *)din, (void *)dout, (size_t)in->bytes, ncclUint8, l->comm,
						       l->s),
				      "all_gather");
	int rc = gpu_nccl_check(g,
				a->ncclAllGather((void *)din, (void *)l->scratch, (size_t)in->bytes, ncclUint8, l->comm,
						 l->s),
				"all_gather");
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
		rc = gpu_nccl_check(g,
				    g->a->ncclReduceScatter((void *)src, (void *)dout,
							    (size_t)ir_shape_numel(&out->shape), nccl_type(in->dtype),
							    ncclSum, l->comm, l->s),
				    "reduce_scatter");
	return rc;
}

static int all_to_all(struct rt_gpu *g, struct gpu_lane *l, const struct plan_instr *x, int n,
		      const struct plan_buffer *in, CUdeviceptr din, const struct plan_buffer *out, CUdeviceptr dout)
{
	const struct gpu_api *a = g->a;
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
		rc = gpu_nccl_check(g, a->ncclGroupStart(), "group start");
	for (int q = 0; q < n && rc == 0; q++) {
		rc = gpu_nccl_check(g, a->ncclSend((void *)(s + q * pb), pb, ncclUint8, q, l->comm, l->s), "send");
		if (rc == 0)
			rc = gpu_nccl_check(g, a->ncclRecv((void *)(recv + q * pb), pb, ncclUint8, q, l->comm, l->s),
					    "recv");
	}
	if (rc == 0)
		rc = gpu_nccl_check(g, a->ncclGroupEnd(), "group end");
	for (int q = 0; q < n && rc == 0; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis2] = q * piece.dims[x->axis2];
		rc = copy_block(g, l->s, dout, &out->shape, st, recv + (CUdeviceptr)(q * pb), &piece, NULL, &piece, es);
	}
	return rc;
}

static int collective(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = r->gpu;
	const struct plan_buffer *in = arg(r, x, 0), *out = arg(r, x, 1);
	CUdeviceptr din = gpu_dbuf(r, in), dout = gpu_dbuf(r, out);
	struct gpu_lane *l = &g->lane[x->comm];
	struct gpu_range rg[2] = { range_of(r, in, false), range_of(r, out, true) };
	int n = r->p->comms[x->comm].n, rc;
	if (n == 1) { /* a communicator of one: every collective is a copy */
		if ((rc = order_after(g, rg, 2)) < 0 || din == dout)
			return rc;
		return gpu_check(g, g->a->cuMemcpyDtoDAsync(dout, din, (size_t)out->bytes, g->compute), "cuMemcpyDtoD");
	}
	if (!l->comm)
		return ir_errorf(-EINVAL, "this rank is not in communicator %d", x->comm);
	if ((rc = lane_begin(g, l, rg, 2)) < 0)
		return rc;
	static const ncclRedOp_t ops[PLAN_REDUCE_COUNT] = { ncclSum, ncclMax, ncclMin };
	if (x->kind == PLAN_ALL_REDUCE)
		rc = gpu_nccl_check(g,
				    g->a->ncclAllReduce((void *)din, (void *)dout, (size_t)ir_shape_numel(&in->shape),
							nccl_type(in->dtype), ops[x->reduce], l->comm, l->s),
				    "all_reduce");
	else if (x->kind == PLAN_ALL_GATHER)
		rc = gather(g, l, x, n, in, din, out, dout);
	else if (x->kind == PLAN_REDUCE_SCATTER)
		rc = scatter(g, l, x, n, in, din, out, dout);
	else
		rc = all_to_all(g, l, x, n, in, din, out, dout);
	return rc == 0 ? lane_end(g, l, rg, 2) : rc;
}

/* A send from this rank to x->peer, or a receive from it, on their pair's
 * lane (in the pair's communicator the sender is rank 0). */
static int transfer(struct rt *r, const struct plan_instr *x)
{
	struct rt_gpu *g = r->gpu;
	bool send = x->kind == PLAN_SEND;
	int from = send ? r->c->rank : x->peer, to = send ? x->peer : r->c->rank, k = 0;
	while (k < g->npairs && (g->pairs[2 * k] != from || g->pairs[2 * k + 1] != to))
		k++;
	if (k == g->npairs)
		return ir_errorf(-EINVAL, "no communicator for messages from rank %d to rank %d", from, to);
	struct gpu_lane *l = &g->lane[r->p->ncomms + k];
	const struct plan_buffer *b = arg(r, x, send ? 0 : x->nin);
	struct gpu_range rg = range_of(r, b, !send);
	void *p = (void *)gpu_dbuf(r, b);
	int rc = lane_begin(g, l, &rg, 1);
	if (rc == 0)
		rc = gpu_nccl_check(g,
				    send ? g->a->ncclSend(p, (size_t)b->bytes, ncclUint8, 1, l->comm, l->s)
					 : g->a->ncclRecv(p, (size_t)b->bytes, ncclUint8, 0, l->comm, l->s),
				    send ? "send" : "recv");
	return rc == 0 ? lane_end(g, l, &rg, 1) : rc;
}

int rt_gpu_run(struct rt *r, const struct plan_instr *x, int i)
{
	struct rt_gpu *g = r->gpu;
	switch (x->kind) {
	case PLAN_KERNEL:
		return kernel(r, x, i);
	case PLAN_COPY: {
		struct gpu_range rg[2] = { range_of(r, arg(r, x, 0), false), range_of(r, arg(r, x, 1), true) };
		int rc = order_after(g, rg, 2);
		return rc == 0 ? gpu_check(g,
					   g->a->cuMemcpyDtoDAsync(gpu_dbuf(r, arg(r, x, 1)), gpu_dbuf(r, arg(r, x, 0)),
								   (size_t)arg(r, x, 0)->bytes, g->compute),
					   "cuMemcpyDtoD")
			       : rc;
	}
	case PLAN_FREE:
		return 0;
	case PLAN_SEND:
	case PLAN_RECV:
		return transfer(r, x);
	case PLAN_ALL_REDUCE:
	case PLAN_ALL_GATHER:
	case PLAN_REDUCE_SCATTER:
	case PLAN_ALL_TO_ALL:
		return collective(r, x);
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	return ir_errorf(-EINVAL, "unknown instruction kind %d", (int)x->kind);
}
