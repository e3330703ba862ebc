/*
 * gpu.c: a rank's GPU for the CUDA device table (gpu_internal.h): the
 * device its local rank picks,
 * the primary context, the device arena, the plan's PTX loaded as a module
 * (compiled by the driver for this GPU, the cubin cached on disk), the
 * kernels' argument tables, cuBLASLt, and the NCCL communication table
 * (comm_nccl.c) with each plan communicator's packing buffer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "ir/codegen_class.h"
#include "runtime/gpu_internal.h"

int gpu_check(const struct rt_gpu *g, CUresult e, const char *what)
{
	if (e == CUDA_SUCCESS)
		return 0;
	return ir_errorf(e == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO, "%s: %s", what, gpu_cu_error(g->a, e));
}

CUdeviceptr gpu_dbuf(const struct rt *r, const struct plan_buffer *b)
{
	return gpu_of(r)->arena + (CUdeviceptr)(b->offset + plan_slot_stride(b) * (r->mb % plan_buffer_slots(b)));
}

int gpu_wait(struct rt *r, CUstream s, const char *what)
{
	struct rt_gpu *g = gpu_of(r);
	double t0 = ir_now(), next_check = t0 + 0.1;
	useconds_t nap = 20;
	bool marked = false;
	for (;;) {
		CUresult e = g->a->cuStreamQuery(s);
		if (e == CUDA_SUCCESS || e != CUDA_ERROR_NOT_READY) {
			if (marked)
				rt_comm_waiting(r->c, NULL, 0);
			return e == CUDA_SUCCESS ? 0 : gpu_check(g, e, what);
		}
		double now = ir_now();
		if (now > next_check) { /* a peer's failure shows as NCCL's asynchronous error */
			int rc = g->nccl.ops ? g->nccl.ops->progress(&g->nccl) : 0;
			if (rc < 0) {
				ir_error_prefix("%s", what);
				return rc;
			}
			if (!marked) /* published: a peer timing out blames the rank this one waits for */
				rt_comm_waiting(r->c, what, t0);
			marked = true;
			next_check = now + 0.1;
		}
		if (now - t0 > r->c->timeout) {
			char who[320];
			rt_comm_blame(r->c, who, sizeof who);
			return ir_errorf(-ETIMEDOUT, "%s: the GPU did not finish in %.0f s%s", what, r->c->timeout,
					 who[0] ? who : " (a peer rank may have stopped)");
		}
		usleep(nap);
		nap = nap < 1000 ? nap * 2 : nap;
	}
}

/* ---- device and memory ----------------------------------------------------- */

static int pick_device(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct gpu_api *a = g->a;
	int n = 0, rc = gpu_check(g, a->cuInit(0), "cuInit (is an NVIDIA GPU visible to this process?)");
	if (rc == 0)
		rc = gpu_check(g, a->cuDeviceGetCount(&n), "cuDeviceGetCount");
	if (rc == 0 && n == 0)
		rc = ir_errorf(-ENODEV, "no CUDA device is visible (CUDA_VISIBLE_DEVICES?)");
	/* One GPU seen: this rank's own (srun --gpus-per-task=1 and
	 * CUDA_VISIBLE_DEVICES per rank show each rank one), whatever its
	 * local rank; ranks that do share one, NCCL refuses at its start.
	 * Several: the local rank's, one rank per GPU. */
	int local = r->c->local_size > 0 ? r->c->local_rank : r->c->rank;
	if (rc == 0 && n > 1 && rt_local_ranks(r->c) > n)
		rc = ir_errorf(-ENODEV, "%d ranks run on this host but it has %d GPUs: one rank per GPU",
			       rt_local_ranks(r->c), n);
	if (rc < 0)
		return rc;
	int maj = 0, min = 0;
	if ((rc = gpu_check(g, a->cuDeviceGet(&g->dev, n == 1 ? 0 : local % n), "cuDeviceGet")) < 0 ||
	    (rc = gpu_check(g, a->cuDeviceGetName(g->name, sizeof g->name, g->dev), "cuDeviceGetName")) < 0 ||
	    (rc = gpu_check(g, a->cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev),
			    "cuDeviceGetAttribute")) < 0 ||
	    (rc = gpu_check(g, a->cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev),
			    "cuDeviceGetAttribute")) < 0 ||
	    (rc = gpu_check(g, a->cuDeviceGetAttribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev),
			    "cuDeviceGetAttribute")) < 0)
		return rc;
	g->cc = maj * 10 + min;
	int clock = 0, bus = 0; /* kHz, bits: a peak for --profile, 0 where unknown */
	if (a->cuDeviceGetAttribute(&clock, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, g->dev) == CUDA_SUCCESS &&
	    a->cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, g->dev) == CUDA_SUCCESS)
		g->peak_bw = 2.0 * clock * 1e3 * bus / 8;
	if (g->cc < 80)
		return ir_errorf(-ENODEV, "%s has compute capability %d.%d; the plan's PTX needs 8.0 or newer", g->name,
				 maj, min);
	if ((rc = gpu_check(g, a->cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain")) < 0)
		return rc;
	return gpu_check(g, a->cuCtxSetCurrent(g->ctx), "cuCtxSetCurrent");
}

static int alloc(struct rt_gpu *g, CUdeviceptr *p, size_t n, const char *what)
{
	char b[IR_BYTES_STRLEN];
	CUresult e = g->a->cuMemAlloc(p, n ? n : 1);
	if (e != CUDA_SUCCESS)
		return ir_errorf(-ENOMEM, "cannot allocate %s (%s) on %s: %s", what, ir_bytes_str((double)n, b),
				 g->name, gpu_cu_error(g->a, e));
	return 0;
}

static int arena(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	size_t free_b = 0, total = 0, need = (size_t)r->d->arena_bytes + g->nws;
	char a[IR_BYTES_STRLEN], b[IR_BYTES_STRLEN];
	int rc = gpu_check(g, g->a->cuMemGetInfo(&free_b, &total), "cuMemGetInfo");
	if (rc == 0 && need > free_b)
		rc = ir_errorf(-ENOMEM, "the plan needs %s on %s (its arena and workspace), which has %s free",
			       ir_bytes_str((double)need, a), g->name, ir_bytes_str((double)free_b, b));
	if (rc == 0)
		rc = alloc(g, &g->arena, (size_t)r->d->arena_bytes, "the arena");
	if (rc == 0)
		rc = alloc(g, &g->ws, g->nws, "the cuBLASLt workspace");
	if (rc == 0)
		rc = gpu_check(g, g->a->cuMemsetD8Async(g->arena, 0, (size_t)r->d->arena_bytes, g->compute),
			       "cuMemsetD8");
	return rc == 0 ? gpu_wait(r, g->compute, "clearing the arena") : rc;
}

/* Pins the host arena, through which the host feeds inputs, reads outputs
 * and runs the kernels the GPU has no code for: all of it, as one range,
 * since a copy whose host bytes are partly registered fails
 * (CUDA_ERROR_INVALID_VALUE), and pinning only the inputs' and outputs'
 * pages cut through the buffers that share their first and last pages. A
 * sparse arena (only touched pages are real) is not pinned, nor one the
 * driver refuses: both only cost speed. */
static void pin_io(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	size_t n = (size_t)r->d->arena_bytes;
	if (!r->sparse && n && g->a->cuMemHostRegister(r->arena, n, 0) == CUDA_SUCCESS)
		g->pinned[g->npinned++] = r->arena;
}

/* ---- the plan's kernels ------------------------------------------------------ */

static void *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	void *buf = NULL;
	long len = -1;
	if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = ir_malloc((size_t)len)) && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		ir_free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	*n = buf ? (size_t)len : 0;
	return buf;
}

/* The cubin the driver links from the PTX modules text[0..n-1] for this
 * GPU, cached under ir_cache_dir()/cubin-<hash>.cubin (hash of the PTX,
 * the GPU and the driver). */
static int load_module(struct rt_gpu *g, const char *const *text, int n)
{
	const struct gpu_api *a = g->a;
	char dir[2048], path[2200], tmp[2300], log[4096] = "";
	int drv = 0;
	a->cuDriverGetVersion(&drv);
	XXH3_state_t *h = XXH3_createState();
	if (!h)
		return ir_errorf(-ENOMEM, "out of memory loading the GPU kernels");
	XXH3_64bits_reset(h);
	for (int i = 0; i < n; i++)
		XXH3_64bits_update(h, text[i], strlen(text[i]) + 1);
	uint64_t key[3] = { XXH3_64bits_digest(h), XXH3_64bits(g->name, strlen(g->name)),
			    (uint64_t)drv << 16 | (uint64_t)g->cc };
	XXH3_freeState(h);
	bool cached = ir_cache_dir(dir, sizeof dir);
	snprintf(path, sizeof path, "%s/cubin-%016llx.cubin", dir, (unsigned long long)XXH3_64bits(key, sizeof key));
	size_t nbin = 0;
	void *bin = cached ? read_all(path, &nbin) : NULL;
	if (bin) {
		CUresult e = a->cuModuleLoadData(&g->mod, bin);
		ir_free(bin);
		if (e == CUDA_SUCCESS)
			return 0;
	}
	CUjit_option opt[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *val[2] = { log, (void *)(uintptr_t)sizeof log };
	CUlinkState ls;
	void *cubin = NULL;
	size_t size = 0;
	int rc = gpu_check(g, a->cuLinkCreate(2, opt, val, &ls), "cuLinkCreate");
	if (rc < 0)
		return rc;
	CUresult e = CUDA_SUCCESS;
	for (int i = 0; i < n && e == CUDA_SUCCESS; i++) {
		char name[32];
		snprintf(name, sizeof name, "plan-%d.ptx", i);
		e = a->cuLinkAddData(ls, CU_JIT_INPUT_PTX, (void *)text[i], strlen(text[i]) + 1, name, 0, NULL, NULL);
	}
	if (e == CUDA_SUCCESS)
		e = a->cuLinkComplete(ls, &cubin, &size);
	if (e != CUDA_SUCCESS)
		rc = ir_errorf(-EINVAL, "the driver cannot compile the plan's PTX for %s: %s%s%s", g->name,
			       gpu_cu_error(a, e), log[0] ? ": " : "", log);
	if (rc == 0)
		rc = gpu_check(g, a->cuModuleLoadData(&g->mod, cubin), "cuModuleLoadData");
	if (rc == 0 && cached) { /* best effort: written whole, then renamed into place */
		snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
		ir_make_dirs(dir);
		FILE *f = fopen(tmp, "wb");
		bool ok = f && fwrite(cubin, 1, size, f) == size;
		if (f && fclose(f) != 0)
			ok = false;
		if (!ok || rename(tmp, path) != 0)
			unlink(tmp);
	}
	a->cuLinkDestroy(ls);
	return rc;
}

/* The stand-in's kernels (gpu_api.h): plan kernel N, named pcc_kN in the
 * PTX, runs by its host code or the reference kernel over the launch's
 * operands. */
static int standin_run(void *ctx, int kernel, void *const *args)
{
	return rt_run_kernel_on(ctx, kernel, args);
}

static int standin_lookup(void *ctx, const char *name, struct gpu_standin_kernel *k)
{
	static int64_t bytes[512];
	struct rt *r = ctx;
	char *end;
	long i = strncmp(name, "pcc_k", 5) ? -1 : strtol(name + 5, &end, 10);
	if (i < 0 || *end || i >= r->p->nkernels)
		return -EINVAL;
	const struct plan_kernel *pk = &r->p->kernels[i];
	int n = pk->nin + pk->nout;
	if (n > 512)
		return -EINVAL;
	for (int j = 0; j < n; j++)
		bytes[j] = ir_shape_numel(&pk->shape[j]) * (int64_t)ir_dtype_size(pk->dtype[j]);
	*k = (struct gpu_standin_kernel){ n,
					  pk->nin,
					  (int)i,
					  bytes,
					  cg_kernel_rows(pk, true),
					  cg_kernel_grid_reduce(pk) ? (int64_t)CG_GRID_SCRATCH : 0,
					  standin_run,
					  r };
	return 0;
}

static int kernels(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan *p = r->p;
	/* this GPU's code: sm_90's on sm_90 and later GPUs, else sm_80's
	 * (which those run too); one or more modules, linked into one */
	const char **text = ir_calloc((size_t)p->nptx + 1, sizeof *text);
	int ntext = 0;
	if (!text)
		return ir_errorf(-ENOMEM, "out of memory loading the GPU kernels");
	for (int want = g->cc >= 90 ? 1 : 0; want >= 0 && !ntext; want--)
		for (int i = 0; i < p->nptx; i++)
			if (!strcmp(p->ptx[i].arch, want ? "sm_90" : "sm_80"))
				text[ntext++] = p->ptx[i].text;
	if (!(g->fn = ir_calloc((size_t)p->nkernels + 1, sizeof *g->fn)) ||
	    !(g->rows = ir_calloc((size_t)p->nkernels + 1, sizeof *g->rows)) ||
	    !(g->lanes = ir_calloc((size_t)p->nkernels + 1, sizeof *g->lanes)) ||
	    !(g->grid = ir_calloc((size_t)p->nkernels + 1, sizeof *g->grid)) ||
	    !(g->gemm = ir_calloc((size_t)p->nkernels + 1, sizeof *g->gemm)) ||
	    !(g->fell = ir_calloc((size_t)p->nkernels + 1, sizeof *g->fell)))
		return ir_errorf(-ENOMEM, "out of memory loading the GPU kernels");
	if (!ntext) {
		ir_free(text);
		if (p->nptx)
			return ir_errorf(-EINVAL,
					 "the plan's PTX is for %s only, which %s (sm_%d) cannot run: compile the plan "
					 "for a cluster of this GPU",
					 p->ptx[0].arch, g->name, g->cc);
		return ir_errorf(-EINVAL,
				 "the plan has no PTX for %s (sm_%d): recompile it for a GPU cluster or with "
				 "--codegen ptx",
				 g->name, g->cc);
	}
	if (gpu_api_standin(g->a))
		gpu_standin_kernels(standin_lookup, r);
	int rc = load_module(g, text, ntext);
	ir_free(text);
	g->grid_blocks = 4 * g->sms < CG_GRID_BLOCKS ? 4 * g->sms : CG_GRID_BLOCKS;
	for (int k = 0; k < p->nkernels && rc == 0; k++) {
		char name[32];
		if (!p->kernels[k].gpu)
			continue;
		snprintf(name, sizeof name, "pcc_k%d", k);
		if (g->a->cuModuleGetFunction(&g->fn[k], g->mod, name) != CUDA_SUCCESS)
			rc = ir_errorf(-EINVAL, "the plan's PTX has no kernel %s", name);
		g->rows[k] = cg_kernel_rows(&p->kernels[k], true);
		g->lanes[k] = cg_kernel_lanes(&p->kernels[k]);
		g->grid[k] = cg_kernel_grid_reduce(&p->kernels[k]);
		if (g->grid[k] && !g->gscratch && rc == 0) {
			rc = alloc(g, &g->gscratch, CG_GRID_SCRATCH, "the grid reductions' scratch");
			if (rc == 0)
				rc = gpu_check(g, g->a->cuMemsetD8Async(g->gscratch, 0, CG_GRID_SCRATCH, g->compute),
					       "cuMemsetD8");
			if (rc == 0)
				rc = gpu_wait(r, g->compute, "clearing the grid reductions' scratch");
		}
	}
	return rc;
}

/* Per kernel instruction with GPU code: micro rows of device pointers to
 * its operands and result, one row per micro-batch (their slots differ). */
static int arg_tables(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan_device *d = r->d;
	int64_t n = 0;
	if (!(g->argoff = ir_calloc((size_t)d->ninstr + 1, sizeof *g->argoff)))
		return ir_errorf(-ENOMEM, "out of memory for the kernels' arguments");
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *x = &d->instr[i];
		bool gpu = x->kind == PLAN_KERNEL && g->fn[x->kernel];
		g->argoff[i] = gpu ? n : -1;
		n += gpu ? (int64_t)r->micro * (x->nin + x->nout) : 0;
	}
	CUdeviceptr *t = ir_calloc((size_t)n + 1, sizeof *t);
	if (!t)
		return ir_errorf(-ENOMEM, "out of memory for the kernels' arguments");
	int saved = r->mb;
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *x = &d->instr[i];
		for (int m = 0; g->argoff[i] >= 0 && m < r->micro; m++) {
			r->mb = m;
			for (int j = 0; j < x->nin + x->nout; j++)
				t[g->argoff[i] + (int64_t)m * (x->nin + x->nout) + j] =
					gpu_dbuf(r, &d->buf[d->args[x->arg + j]]);
		}
	}
	r->mb = saved;
	int rc = alloc(g, &g->argtab, (size_t)n * sizeof *t, "the kernels' argument tables");
	if (rc == 0)
		rc = gpu_check(g, g->a->cuMemcpyHtoDAsync(g->argtab, t, (size_t)n * sizeof *t, g->compute),
			       "cuMemcpyHtoD");
	if (rc == 0)
		rc = gpu_wait(r, g->compute, "copying the kernels' arguments");
	ir_free(t);
	return rc;
}

int gpu_open(struct rt *r, bool tf32)
{
	struct rt_gpu *g = ir_calloc(1, sizeof *g);
	if (!(r->dev_state = g))
		return ir_errorf(-ENOMEM, "out of memory");
	g->tf32 = tf32;
	g->nws = 32u << 20;
	if (!(g->a = gpu_api_load()))
		return -ENODEV;
	int rc = pick_device(r);
	if (rc == 0)
		rc = gpu_check(g, g->a->cuStreamCreate(&g->compute, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
	if (rc == 0)
		rc = arena(r);
	if (rc == 0)
		rc = kernels(r);
	if (rc == 0)
		rc = arg_tables(r);
	if (rc == 0 && g->a->cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS)
		rc = ir_errorf(-EIO, "cuBLASLt cannot start on %s", g->name);
	if (rc == 0)
		pin_io(r);
	if (rc < 0)
		ir_error_prefix("GPU %s", g->name[0] ? g->name : "?");
	return rc;
}

/* ---- communicators ------------------------------------------------------------- */

/* Scratch bytes collective x needs to pack its blocks (gpu_exec.c). */
static size_t scratch_need(const struct rt *r, const struct plan_instr *x)
{
	const struct plan_buffer *in = &r->d->buf[r->d->args[x->arg]];
	size_t n = (size_t)r->p->comms[x->comm].n;
	return x->kind == PLAN_ALL_GATHER       ? (size_t)in->bytes * n
	       : x->kind == PLAN_REDUCE_SCATTER ? (size_t)in->bytes
	       : x->kind == PLAN_ALL_TO_ALL     ? 2 * (size_t)in->bytes
						: 0;
}

/* The NCCL table over r->c (comm_nccl.c), and each communicator's stream
 * and packing buffer. */
int gpu_connect(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan *p = r->p;
	struct rt_comm *n = &g->nccl;
	int rc = rt_comm_nccl_init(n, r->c, g->a);
	if (rc == 0)
		rc = n->ops->setup(n, p);
	if (rc == 0 && !(g->lane = ir_calloc((size_t)p->ncomms + 1, sizeof *g->lane)))
		rc = ir_errorf(-ENOMEM, "out of memory for the communicators");
	for (int k = 0; k < p->ncomms && rc == 0; k++)
		g->lane[k].s = rt_comm_nccl_stream(n, k, 0, 0);
	for (int i = 0; i < r->d->ninstr && rc == 0; i++) {
		const struct plan_instr *x = &r->d->instr[i];
		if (plan_instr_is_collective(x->kind)) {
			struct gpu_lane *l = &g->lane[x->comm];
			size_t need = scratch_need(r, x);
			l->nscratch = need > l->nscratch ? need : l->nscratch;
		}
	}
	for (int k = 0; k < p->ncomms && rc == 0; k++)
		if (g->lane[k].nscratch)
			rc = alloc(g, &g->lane[k].scratch, g->lane[k].nscratch, "a collective's packing buffer");
	if (rc < 0)
		ir_error_prefix("GPU %s", g->name);
	return rc;
}

void gpu_close(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	if (!g)
		return;
	const struct gpu_api *a = g->a;
	int nl = r->p && a ? r->p->ncomms : 0;
	for (int k = 0; g->lane && k < nl; k++)
		if (g->lane[k].scratch)
			a->cuMemFree(g->lane[k].scratch);
	if (g->nccl.ops) {
		g->nccl.failed = g->nccl.failed || r->failed;
		g->nccl.ops->finish(&g->nccl);
	}
	if (!a) {
		ir_free(g);
		r->dev_state = NULL;
		return;
	}
	for (int k = 0; r->p && g->gemm && k < r->p->nkernels; k++)
		if (g->gemm[k].ok) {
			a->cublasLtMatmulDescDestroy(g->gemm[k].desc);
			a->cublasLtMatrixLayoutDestroy(g->gemm[k].la);
			a->cublasLtMatrixLayoutDestroy(g->gemm[k].lb);
			a->cublasLtMatrixLayoutDestroy(g->gemm[k].lc);
		}
	for (int k = 0; k < g->npend; k++)
		a->cuEventDestroy(g->pend[k].ev);
	for (int k = 0; k < g->ntev; k++)
		a->cuEventDestroy(g->tev[k]);
	ir_free(g->tev);
	for (int k = 0; k < g->nfree; k++)
		a->cuEventDestroy(g->free_ev[k]);
	for (int k = 0; k < g->npinned; k++)
		a->cuMemHostUnregister(g->pinned[k]);
	if (g->lt)
		a->cublasLtDestroy(g->lt);
	if (g->mod)
		a->cuModuleUnload(g->mod);
	if (g->argtab)
		a->cuMemFree(g->argtab);
	if (g->ws)
		a->cuMemFree(g->ws);
	if (g->gscratch)
		a->cuMemFree(g->gscratch);
	if (g->arena)
		a->cuMemFree(g->arena);
	if (g->compute)
		a->cuStreamDestroy(g->compute);
	if (g->ctx)
		a->cuDevicePrimaryCtxRelease(g->dev);
	ir_free(g->lane);
	ir_free(g->free_ev);
	ir_free(g->fn);
	ir_free(g->rows);
	ir_free(g->lanes);
	ir_free(g->grid);
	ir_free(g->gemm);
	ir_free(g->fell);
	ir_free(g->argoff);
	ir_free(g);
	r->dev_state = NULL;
}

int gpu_profile_check(const struct rt *r, double *peak_bw)
{
	*peak_bw = gpu_of(r)->peak_bw;
	if (!gpu_of(r)->a->cuEventElapsedTime)
		return ir_errorf(-ENOTSUP, "--profile: this NVIDIA driver has no cuEventElapsedTime");
	return 0;
}

const char *gpu_kernel_how(const struct rt *r, int k)
{
	const struct rt_gpu *g = gpu_of(r);
	static char buf[96];
	const struct gpu_gemm_plan *e = &g->gemm[k];
	if (!g->fell[k] && e->ok && e->ntuned > 1) {
		snprintf(buf, sizeof buf, "cuBLASLt, algorithm %d of %d: %.3g ms a call, the first %.3g", e->pick + 1,
			 e->ntuned, e->tuned_ms[e->pick], e->tuned_ms[0]);
		return buf;
	}
	return g->fell[k] ? "host" : e->ok ? "cuBLASLt" : !g->fn[k] ? "host" : g->grid[k] ? "PTX, grid" : "PTX";
}

int gpu_fallback_report(const struct rt *r, char *buf, size_t n)
{
	const struct rt_gpu *g = gpu_of(r);
	const struct plan_device *d = r->d;
	int ninstr = 0, nkinds = 0, kind_op[64], kind_dt[64], kind_n[64];
	if (n)
		buf[0] = 0;
	if (!g || !g->fell)
		return 0;
	for (int i = 0; i < d->ninstr; i++) { /* the program's instructions whose kernel ran here */
		const struct plan_instr *x = &d->instr[i];
		if (x->kind != PLAN_KERNEL || !g->fell[x->kernel])
			continue;
		const struct plan_kernel *k = &r->p->kernels[x->kernel];
		int op = k->nbody ? (int)k->body[k->nbody - 1].op : (int)k->op, dt = (int)k->dtype[k->nin], j = 0;
		while (j < nkinds && (kind_op[j] != op || kind_dt[j] != dt))
			j++;
		if (j == nkinds && nkinds < 64) {
			kind_op[nkinds] = op;
			kind_dt[nkinds] = dt;
			kind_n[nkinds++] = 0;
		}
		if (j < nkinds)
			kind_n[j]++;
		ninstr++;
	}
	size_t len = (size_t)snprintf(buf, n, "%d kernel instruction%s of %d ran on the host (no GPU code):", ninstr,
				      ninstr == 1 ? "" : "s", d->ninstr);
	for (int j = 0; j < nkinds && len < n; j++)
		len += (size_t)snprintf(buf + len, n - len, "%s %s %s x%d", j ? "," : "",
					ir_op_name((enum ir_op)kind_op[j]), ir_dtype_name((enum ir_dtype)kind_dt[j]),
					kind_n[j]);
	return ninstr;
}

int gpu_alloc(struct rt *r, size_t n, const char *what, uint64_t *addr)
{
	CUdeviceptr p = 0;
	int rc = alloc(gpu_of(r), &p, n, what);
	*addr = (uint64_t)p;
	return rc;
}

void gpu_free(struct rt *r, uint64_t addr)
{
	if (addr)
		gpu_of(r)->a->cuMemFree((CUdeviceptr)addr);
}
