/*
 * test_gpu_standin_api.c: the checking stand-in for a GPU (runtime/gpu_standin*.c),
 * through the same table of entry points pcc-run calls, run on 2 MPI ranks:
 *   - memory: copies round-trip; a copy past an allocation's end, a host
 *     pointer given as a device one, a freed allocation, a free while
 *     queued work uses it and a host range partly registered with
 *     cuMemHostRegister each fail at the call, naming what is wrong;
 *   - order: work runs when the host waits, so a result read before the
 *     wait is stale; two streams writing and reading the same bytes with
 *     no event between them are a race, named; with an event they are not;
 *   - kernels: a launch runs the host function registered for the name the
 *     PTX declares, over the launch's argument table; a name the PTX lacks
 *     and a launch with the wrong rows are refused;
 *   - cuBLASLt: matmuls (transposes, batches, f32, f64 and bf16) equal a
 *     triple loop; layouts that do not multiply are refused;
 *   - NCCL over MPI: all-reduce, all-gather, reduce-scatter, send and
 *     receive, grouped, equal their definitions on both ranks; ranks that
 *     issue different collectives fail, naming both calls; after that
 *     ncclCommDestroy is refused (a call in flight) and ncclCommAbort
 *     frees the communicator.
 * Rank 0 prints the TAP lines, with rank 1's results sent to it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/gpu_api.h"
#include "tests/standin_check.h"
#include "tests/tap.h"

static void memory(void)
{
	CUdeviceptr d = 0, e = 0;
	CUstream s = stream();
	float in[64], out[64];
	for (int i = 0; i < 64; i++)
		in[i] = (float)i * 0.5f;
	TAP_OK(a->cuMemAlloc(&d, sizeof in) == CUDA_SUCCESS && a->cuMemAlloc(&e, 4096) == CUDA_SUCCESS, "cuMemAlloc");
	memset(out, 0, sizeof out);
	a->cuMemcpyHtoDAsync(d, in, sizeof in, s);
	a->cuMemcpyDtoDAsync(e, d, sizeof in, s);
	a->cuMemcpyDtoHAsync(out, e, sizeof in, s);
	TAP_OK(out[5] == 0, "queued copies have not run before the host waits (a result read early is stale)");
	TAP_OK(a->cuStreamSynchronize(s) == CUDA_SUCCESS && !memcmp(in, out, sizeof in),
	       "after cuStreamSynchronize the bytes went host -> device -> device -> host unchanged");
	TAP_OK(fails(a->cuMemcpyHtoDAsync(d + 8, in, sizeof in, s), CUDA_ERROR_INVALID_VALUE,
		     "runs 8 bytes past the end of allocation"),
	       "a copy 8 bytes past an allocation's end fails naming the overrun");
	TAP_OK(fails(a->cuMemcpyDtoDAsync(e, (CUdeviceptr)(uintptr_t)in, 16, s), CUDA_ERROR_INVALID_VALUE,
		     "is not device memory"),
	       "a host pointer given as a device pointer fails");
	TAP_OK(fails(a->cuMemsetD8Async(d - 16, 0, 4, s), CUDA_ERROR_INVALID_VALUE, "is not device memory"),
	       "an address before any allocation fails");
	/* registration: a copy partly inside a registered range */
	static char host[3 * 4096] __attribute__((aligned(4096)));
	TAP_OK(a->cuMemHostRegister(host + 4096, 4096, 0) == CUDA_SUCCESS, "cuMemHostRegister");
	TAP_OK(fails(a->cuMemcpyHtoDAsync(e, host + 4000, 200, s), CUDA_ERROR_INVALID_VALUE, "partly inside"),
	       "a copy of host bytes partly registered fails (CUDA_ERROR_INVALID_VALUE, as the driver does)");
	TAP_OK(a->cuMemcpyHtoDAsync(e, host + 4096, 200, s) == CUDA_SUCCESS &&
		       a->cuMemcpyHtoDAsync(e, host, 200, s) == CUDA_SUCCESS,
	       "copies of host bytes all registered, or none, are taken");
	TAP_OK(fails(a->cuMemHostRegister(host + 4000, 200, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "overlaps"),
	       "a second registration over the first is refused");
	a->cuMemHostUnregister(host + 4096);
	/* free while queued, then use after free */
	a->cuMemsetD8Async(e, 1, 64, s);
	TAP_OK(fails(a->cuMemFree(e), CUDA_ERROR_INVALID_VALUE, "while queued work uses it"),
	       "cuMemFree while a queued memset writes the allocation fails");
	a->cuStreamSynchronize(s);
	TAP_OK(a->cuMemFree(e) == CUDA_SUCCESS, "cuMemFree once the work is done");
	TAP_OK(fails(a->cuMemcpyDtoHAsync(out, e, 16, s), CUDA_ERROR_INVALID_VALUE, "freed"),
	       "a copy from a freed allocation fails naming it freed");
	TAP_OK(fails(a->cuMemFree(e), CUDA_ERROR_INVALID_VALUE, "freed twice"), "a double free fails");
	a->cuMemFree(d);
	a->cuStreamDestroy(s);
	TAP_OK(fails(a->cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE, "not live"), "a destroyed stream is refused");
}

static void order(void)
{
	CUstream s1 = stream(), s2 = stream();
	CUdeviceptr d = 0, e = 0;
	CUevent ev;
	a->cuMemAlloc(&d, 1024);
	a->cuMemAlloc(&e, 1024);
	a->cuMemsetD8Async(d, 7, 1024, s1);
	TAP_OK(fails(a->cuMemcpyDtoDAsync(e, d, 1024, s2), CUDA_ERROR_INVALID_VALUE, "race: cuMemcpyDtoDAsync"),
	       "reading on stream 2 what stream 1 writes, with no event between, is a race, named");
	a->cuEventCreate(&ev, 0);
	a->cuEventRecord(ev, s1);
	a->cuStreamWaitEvent(s2, ev, 0);
	TAP_OK(a->cuMemcpyDtoDAsync(e, d, 1024, s2) == CUDA_SUCCESS, "the same copy after an event is taken");
	unsigned char b[1024];
	a->cuMemcpyDtoHAsync(b, e, sizeof b, s2);
	TAP_OK(a->cuStreamSynchronize(s2) == CUDA_SUCCESS && b[0] == 7 && b[1023] == 7,
	       "stream 2 waited for stream 1's memset: it copied its bytes");
	a->cuMemsetD8Async(e, 1, 16, s1); /* s1 writes what s2 read, ordered by the host's wait on s2 */
	TAP_OK(a->cuStreamSynchronize(s1) == CUDA_SUCCESS, "work ordered by the host's own wait is no race");
	a->cuMemsetD8Async(d, 3, 16, s1);
	a->cuMemsetD8Async(e, 3, 16, s2); /* different bytes: no race */
	TAP_OK(a->cuStreamSynchronize(s1) == CUDA_SUCCESS && a->cuStreamSynchronize(s2) == CUDA_SUCCESS,
	       "two streams on different bytes need no event");
	a->cuEventDestroy(ev);
	TAP_OK(fails(a->cuEventRecord(ev, s1), CUDA_ERROR_INVALID_HANDLE, "not live"), "a destroyed event is refused");
	a->cuMemFree(d);
	a->cuMemFree(e);
}

static int add_run(void *ctx, int kernel, void *const *args)
{
	const float *x = args[0], *y = args[1];
	float *z = args[2];
	for (int i = 0; i < 32; i++)
		z[i] = x[i] + y[i] * (float)kernel;
	(void)ctx;
	return 0;
}

static const int64_t add_bytes[3] = { 128, 128, 128 };

static int lookup(void *ctx, const char *name, struct gpu_standin_kernel *k)
{
	bool grid = !strcmp(name, "pcc_k5"); /* as pcc_k3, with a grid reduction's scratch of 512 bytes */
	if (strcmp(name, "pcc_k3") && !grid)
		return -1;
	*k = (struct gpu_standin_kernel){ .nargs = 3,
					  .nin = 2,
					  .kernel = 3,
					  .bytes = add_bytes,
					  .rows = 32,
					  .scratch = grid ? 512 : 0,
					  .run = add_run,
					  .ctx = ctx };
	return 0;
}

static void kernels(void)
{
	static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .entry pcc_k3(.param .u64 a, .param .u64 r)\n{\n\tret;\n}\n"
				  ".visible .entry pcc_k5(.param .u64 a, .param .u64 r, .param .u64 s)\n{\n\tret;\n}\n";
	CUmodule m = NULL;
	CUfunction f = NULL, g = NULL;
	CUstream s = stream();
	gpu_standin_kernels(lookup, NULL);
	TAP_OK(a->cuModuleLoadData(&m, ptx) == CUDA_SUCCESS && a->cuModuleGetFunction(&f, m, "pcc_k3") == CUDA_SUCCESS,
	       "a module of PTX text loads and gives the function it declares");
	TAP_OK(fails(a->cuModuleGetFunction(&g, m, "pcc_k4"), CUDA_ERROR_NOT_FOUND, "declares no .entry pcc_k4"),
	       "a name the PTX does not declare is refused");
	CUdeviceptr buf, tab;
	a->cuMemAlloc(&buf, 3 * 128);
	a->cuMemAlloc(&tab, 3 * sizeof(CUdeviceptr));
	CUdeviceptr t[3] = { buf, buf + 128, buf + 256 };
	float x[64], z[32];
	for (int i = 0; i < 64; i++)
		x[i] = (float)i;
	a->cuMemcpyHtoDAsync(tab, t, sizeof t, s);
	a->cuMemcpyHtoDAsync(buf, x, sizeof x, s);
	int64_t rows = 32, bad = 31;
	void *params[2] = { &tab, &rows }, *wrong[2] = { &tab, &bad };
	TAP_OK(a->cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, NULL) == CUDA_SUCCESS, "cuLaunchKernel");
	a->cuMemcpyDtoHAsync(z, buf + 256, sizeof z, s);
	TAP_OK(a->cuStreamSynchronize(s) == CUDA_SUCCESS && z[0] == 96 && z[31] == 31 + 63 * 3,
	       "the launch ran the host function over its argument table's buffers");
	TAP_OK(fails(a->cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, wrong, NULL), CUDA_ERROR_INVALID_VALUE,
		     "31 rows, where the kernel has 32"),
	       "a launch with other rows than the kernel's is refused");
	TAP_OK(fails(a->cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE,
		     "block 2048x1x1"),
	       "a block of 2048 threads is refused");
	t[2] = buf + 300; /* the result runs past the allocation */
	a->cuMemcpyHtoDAsync(tab, t, sizeof t, s);
	a->cuStreamSynchronize(s);
	TAP_OK(fails(a->cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params, NULL), CUDA_ERROR_INVALID_VALUE,
		     "past the end of allocation"),
	       "a launch whose argument table names bytes past an allocation is refused");
	t[2] = buf + 256;
	a->cuMemcpyHtoDAsync(tab, t, sizeof t, s);
	a->cuStreamSynchronize(s);
	CUfunction gr = NULL;
	CUdeviceptr scr = 0, small = 0;
	a->cuMemAlloc(&scr, 512);
	a->cuMemAlloc(&small, 256);
	void *gp[3] = { &tab, &rows, &scr }, *gsmall[3] = { &tab, &rows, &small };
	TAP_OK(a->cuModuleGetFunction(&gr, m, "pcc_k5") == CUDA_SUCCESS &&
		       a->cuLaunchKernel(gr, 4, 1, 1, 256, 1, 1, 0, s, gp, NULL) == CUDA_SUCCESS &&
		       a->cuStreamSynchronize(s) == CUDA_SUCCESS,
	       "a grid reduction's launch with its scratch runs");
	TAP_OK(fails(a->cuLaunchKernel(gr, 4, 1, 1, 256, 1, 1, 0, s, gsmall, NULL), CUDA_ERROR_INVALID_VALUE,
		     "grid reduction scratch"),
	       "a grid reduction's launch whose scratch is smaller than the kernel's is refused");
	a->cuMemFree(scr);
	TAP_OK(fails(a->cuLaunchKernel(gr, 4, 1, 1, 256, 1, 1, 0, s, gp, NULL), CUDA_ERROR_INVALID_VALUE,
		     "grid reduction scratch"),
	       "a grid reduction's launch with freed scratch is refused");
	a->cuMemFree(small);
	a->cuMemFree(buf);
	a->cuMemFree(tab);
}

static uint64_t rng = 0x243f6a8885a308d3ull;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0 - 0.5;
}

static size_t es(cudaDataType_t t)
{
	return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : 2;
}

static void put(void *p, cudaDataType_t t, size_t i, double v)
{
	float f = (float)v;
	uint16_t h = ir_f32_to_bf16(f);
	if (t == CUDA_R_64F)
		memcpy((char *)p + 8 * i, &v, 8);
	else if (t == CUDA_R_32F)
		memcpy((char *)p + 4 * i, &f, 4);
	else
		memcpy((char *)p + 2 * i, &h, 2);
}

static double get(const void *p, cudaDataType_t t, size_t i)
{
	double v;
	float f;
	uint16_t h;
	if (t == CUDA_R_64F)
		return memcpy(&v, (const char *)p + 8 * i, 8), v;
	if (t == CUDA_R_32F)
		return memcpy(&f, (const char *)p + 4 * i, 4), f;
	return memcpy(&h, (const char *)p + 2 * i, 2), ir_bf16_to_f32(h);
}

/* One batched matmul, column-major as cuBLASLt: D = op(A) op(B). */
static bool matmul(cublasLtHandle_t lt, cudaDataType_t t, int m, int n, int k, int batch, bool ta, bool tb)
{
	int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
	size_t na = (size_t)ar * ac, nb = (size_t)br * bc, nc = (size_t)m * n, e = es(t);
	char *A = malloc(na * batch * e), *B = malloc(nb * batch * e), *C = malloc(nc * batch * e);
	for (size_t i = 0; i < na * batch; i++)
		put(A, t, i, uniform());
	for (size_t i = 0; i < nb * batch; i++)
		put(B, t, i, uniform());
	CUdeviceptr dA, dB, dC, ws;
	CUstream s = stream();
	a->cuMemAlloc(&dA, na * batch * e);
	a->cuMemAlloc(&dB, nb * batch * e);
	a->cuMemAlloc(&dC, nc * batch * e);
	a->cuMemAlloc(&ws, 1 << 20);
	a->cuMemcpyHtoDAsync(dA, A, na * batch * e, s);
	a->cuMemcpyHtoDAsync(dB, B, nb * batch * e, s);
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
	bool f64 = t == CUDA_R_64F;
	int32_t nbatch = batch;
	int64_t sa = (int64_t)na, sb = (int64_t)nb, sc = (int64_t)nc;
	a->cublasLtMatmulDescCreate(&desc, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
				    f64 ? CUDA_R_64F : CUDA_R_32F);
	a->cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
	a->cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
	a->cublasLtMatrixLayoutCreate(&la, t, (uint64_t)ar, (uint64_t)ac, ar);
	a->cublasLtMatrixLayoutCreate(&lb, t, (uint64_t)br, (uint64_t)bc, br);
	a->cublasLtMatrixLayoutCreate(&lc, t, (uint64_t)m, (uint64_t)n, m);
	a->cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nbatch, sizeof nbatch);
	a->cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nbatch, sizeof nbatch);
	a->cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nbatch, sizeof nbatch);
	a->cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa);
	a->cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb);
	a->cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof sc);
	cublasLtMatmulHeuristicResult_t res;
	int got = 0;
	bool ok = a->cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, NULL, 1, &res, &got) ==
			  CUBLAS_STATUS_SUCCESS &&
		  got == 1;
	double one = 1, zero = 0;
	float onef = 1, zerof = 0;
	ok = ok && a->cublasLtMatmul(lt, desc, f64 ? (void *)&one : (void *)&onef, (void *)dA, la, (void *)dB, lb,
				     f64 ? (void *)&zero : (void *)&zerof, (void *)dC, lc, (void *)dC, lc, &res.algo,
				     (void *)ws, 1 << 20, s) == CUBLAS_STATUS_SUCCESS;
	ok = ok && a->cuMemcpyDtoHAsync(C, dC, nc * batch * e, s) == CUDA_SUCCESS &&
	     a->cuStreamSynchronize(s) == CUDA_SUCCESS;
	double worst = 0;
	for (int b = 0; b < batch && ok; b++)
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++) {
				double want = 0;
				for (int q = 0; q < k; q++) {
					double x = get(A, t, b * na + (ta ? (size_t)i * ar + q : (size_t)q * ar + i));
					double y = get(B, t, b * nb + (tb ? (size_t)q * br + j : (size_t)j * br + q));
					want += x * y;
				}
				double d = fabs(get(C, t, b * nc + (size_t)j * m + i) - want);
				worst = d > worst ? d : worst;
			}
	double tol = t == CUDA_R_16BF ? 2e-2 : t == CUDA_R_32F ? 1e-5 : 1e-12;
	if (worst > tol)
		TAP_DIAG("worst error %g", worst);
	a->cublasLtMatmulDescDestroy(desc);
	a->cublasLtMatrixLayoutDestroy(la);
	a->cublasLtMatrixLayoutDestroy(lb);
	a->cublasLtMatrixLayoutDestroy(lc);
	a->cuMemFree(dA);
	a->cuMemFree(dB);
	a->cuMemFree(dC);
	a->cuMemFree(ws);
	free(A);
	free(B);
	free(C);
	return ok && worst <= tol;
}

static void gemms(void)
{
	cublasLtHandle_t lt;
	TAP_OK(a->cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
	static const cudaDataType_t types[3] = { CUDA_R_32F, CUDA_R_64F, CUDA_R_16BF };
	for (int ti = 0; ti < 3; ti++)
		for (int tr = 0; tr < 4; tr++)
			TAP_OK(matmul(lt, types[ti], 7, 5, 9, tr == 3 ? 3 : 1, tr & 1, tr & 2),
			       "cublasLtMatmul (type %d, transposes %d %d, batch %d) equals a triple loop",
			       (int)types[ti], tr & 1, (tr & 2) >> 1, tr == 3 ? 3 : 1);
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulHeuristicResult_t res;
	int got = 0;
	a->cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	a->cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 4, 3, 4);
	a->cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 5, 2, 5);
	a->cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, 4, 2, 4);
	cublasStatus_t st = a->cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, NULL, 1, &res, &got);
	TAP_OK(st == CUBLAS_STATUS_INVALID_VALUE && strstr(a->cublasLtGetStatusString(st), "do not multiply"),
	       "a 4x3 times 5x2 matmul is refused: %s", a->cublasLtGetStatusString(st));
	a->cublasLtMatrixLayoutDestroy(la);
	a->cublasLtMatrixLayoutDestroy(lb);
	a->cublasLtMatrixLayoutDestroy(lc);
	a->cublasLtMatmulDescDestroy(desc);
	a->cublasLtDestroy(lt);
}

/* ---- NCCL over MPI ------------------------------------------------------------ */

static void nccl(void)
{
	ncclUniqueId id;
	ncclComm_t c = NULL, pair = NULL;
	CUstream s = stream();
	if (me == 0)
		a->ncclGetUniqueId(&id);
	MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
	both(a->ncclCommInitRank(&c, 2, id, me) == ncclSuccess, "ncclCommInitRank over MPI");
	both(a->ncclCommSplit(c, 0, 1 - me, &pair, NULL) == ncclSuccess && pair, "ncclCommSplit");
	CUdeviceptr d;
	a->cuMemAlloc(&d, 4096);
	float x[8], y[16], z[4];
	for (int i = 0; i < 8; i++)
		x[i] = (float)(i + 10 * me);
	a->cuMemcpyHtoDAsync(d, x, sizeof x, s);
	a->ncclAllReduce((void *)d, (void *)(d + 64), 8, ncclFloat32, ncclSum, c, s);
	a->cuMemcpyDtoHAsync(y, d + 64, 8 * sizeof *y, s);
	bool ok = a->cuStreamSynchronize(s) == CUDA_SUCCESS;
	for (int i = 0; i < 8; i++)
		ok = ok && y[i] == (float)(2 * i + 10);
	both(ok, "ncclAllReduce sums the ranks' buffers");
	a->ncclAllGather((void *)d, (void *)(d + 128), 8, ncclFloat32, c, s);
	a->cuMemcpyDtoHAsync(y, d + 128, 16 * sizeof *y, s);
	ok = a->cuStreamSynchronize(s) == CUDA_SUCCESS;
	for (int i = 0; i < 16; i++)
		ok = ok && y[i] == (float)(i % 8 + 10 * (i / 8));
	both(ok, "ncclAllGather puts rank q's block at q");
	a->ncclReduceScatter((void *)d, (void *)(d + 256), 4, ncclFloat32, ncclSum, c, s);
	a->cuMemcpyDtoHAsync(z, d + 256, sizeof z, s);
	ok = a->cuStreamSynchronize(s) == CUDA_SUCCESS;
	for (int i = 0; i < 4; i++)
		ok = ok && z[i] == (float)(2 * (4 * me + i) + 10);
	both(ok, "ncclReduceScatter gives rank q the sum of block q");
	/* a grouped exchange in the pair communicator (ranks swapped by the key) */
	int peer = 1 - me; /* in the world; in the pair, where keys swap them, it is rank me */
	a->ncclGroupStart();
	a->ncclSend((void *)d, 8, ncclFloat32, me, pair, s);
	a->ncclRecv((void *)(d + 512), 8, ncclFloat32, me, pair, s);
	ok = a->ncclGroupEnd() == ncclSuccess;
	a->cuMemcpyDtoHAsync(y, d + 512, 8 * sizeof *y, s);
	ok = ok && a->cuStreamSynchronize(s) == CUDA_SUCCESS;
	for (int i = 0; i < 8; i++)
		ok = ok && y[i] == (float)(i + 10 * peer);
	both(ok, "grouped ncclSend and ncclRecv exchange the ranks' buffers");
	both(a->ncclSend((void *)d, 8, ncclFloat32, 2, c, s) == ncclInvalidArgument,
	     "a send to rank 2 of 2 is refused");
	both(a->ncclCommDestroy(pair) == ncclSuccess, "ncclCommDestroy of a communicator with nothing in flight");
	/* last: out of step (the context is lost after it) */
	if (me == 0)
		a->ncclAllReduce((void *)d, (void *)(d + 64), 8, ncclFloat32, ncclSum, c, s);
	else
		a->ncclAllGather((void *)d, (void *)(d + 128), 8, ncclFloat32, c, s);
	CUresult e = a->cuStreamSynchronize(s);
	both(e != CUDA_SUCCESS && strstr(err(e), "NCCL calls out of step") && strstr(err(e), "ncclAllGather") &&
		     strstr(err(e), "ncclAllReduce"),
	     "ranks that issue different collectives fail, naming both calls");
	if (me == 0)
		TAP_DIAG("%s", err(e));
	both(a->cuMemAlloc(&d, 16) == e, "after a failed piece of work every call fails (the context is lost)");
	/* the failed collective stays queued: destroy refuses, abort frees
	 * (the sanitized suite's leak check sees MPI's communicator freed) */
	both(a->ncclCommDestroy(c) == ncclInvalidUsage, "ncclCommDestroy with a call in flight is refused");
	both(a->ncclCommAbort(c) == ncclSuccess, "ncclCommAbort after the context is lost frees the communicator");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	setenv("PCC_GPU_STANDIN", "1", 1);
	a = gpu_api_load();
	CUdevice dev;
	CUcontext ctx;
	bool up = a && gpu_api_standin(a) && a->cuInit(0) == CUDA_SUCCESS && a->cuDeviceGet(&dev, 0) == CUDA_SUCCESS &&
		  a->cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS && a->cuCtxSetCurrent(ctx) == CUDA_SUCCESS;
	if (me == 0) {
		TAP_OK(up, "PCC_GPU_STANDIN=1: gpu_api_load gives the stand-in, and a context starts");
		memory();
		order();
		kernels();
		gemms();
	}
	nccl();
	int rc = me == 0 ? tap_done() : 0;
	MPI_Finalize();
	return rc;
}
