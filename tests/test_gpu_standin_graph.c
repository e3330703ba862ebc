/*
 * test_gpu_standin_graph.c: stream capture and CUDA graphs in the checking
 * stand-in for a GPU (runtime/gpu_standin.c), through the table pcc-run
 * calls, on 2 MPI ranks:
 *   - recorded work does not run; each launch of the instantiated graph
 *     runs it, reading its pinned host input as it is at the launch, on
 *     the capturing stream and on a stream that joined the capture through
 *     an event and was joined back;
 *   - a stream that joined and was not joined back fails
 *     cuStreamEndCapture (CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
 *   - calls CUDA forbids during a capture are refused with its codes,
 *     naming the call, and invalidate the capture: cuStreamSynchronize and
 *     cuStreamQuery of the capturing stream, a copy from pageable host
 *     memory, cuMemAlloc and cuMemFree (not in relaxed mode, where
 *     cuMemAlloc is taken), cuEventQuery of an event recorded in the
 *     capture, a wait on an event recorded outside it; later calls on the
 *     stream fail with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and
 *     cuStreamEndCapture gives no graph, naming the call that broke it;
 *   - a launch is checked as live work: after its pinned input is freed,
 *     or its device memory, it is refused; live work on another stream
 *     that writes what it reads, with no event between, is a race;
 *   - NCCL: an all-reduce recorded on both ranks and launched twice sums
 *     their buffers each time; one rank replaying its graph while the
 *     other issues the call live agree; ncclCommDestroy is refused while
 *     a graph holds a call on the communicator, taken once it is gone.
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

/* x[i] = 2 * y[i] + z[i]: the kernel the PTX below declares */
static int fma_run(void *ctx, int kernel, void *const *args)
{
	const float *y = args[0], *z = args[1];
	float *x = args[2];
	for (int i = 0; i < 16; i++)
		x[i] = 2 * y[i] + z[i];
	(void)ctx;
	(void)kernel;
	return 0;
}

static const int64_t fma_bytes[3] = { 64, 64, 64 };

static int lookup(void *ctx, const char *name, struct gpu_standin_kernel *k)
{
	if (strcmp(name, "pcc_k0"))
		return -1;
	*k = (struct gpu_standin_kernel){
		.nargs = 3, .nin = 2, .kernel = 0, .bytes = fma_bytes, .rows = 16, .run = fma_run, .ctx = ctx
	};
	return 0;
}

static CUfunction fn;

static CUresult launch(CUdeviceptr table, CUstream s)
{
	int64_t rows = 16;
	void *params[2] = { &table, &rows };
	return a->cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, s, params, NULL);
}

/* A capture of: in (pinned) -> y; x = 2 y + z (z set on a joined stream);
 * x -> out (pinned); replayed twice with new inputs. */
static void replay(void)
{
	static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
				  ".visible .entry pcc_k0(.param .u64 a, .param .u64 r)\n{\n\tret;\n}\n";
	CUmodule m;
	CUstream s = stream(), s2 = stream();
	CUevent fork, back;
	CUdeviceptr buf, tab;
	float *in = NULL, *out = NULL;
	gpu_standin_kernels(lookup, NULL);
	a->cuModuleLoadData(&m, ptx);
	a->cuModuleGetFunction(&fn, m, "pcc_k0");
	a->cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING);
	a->cuEventCreate(&back, CU_EVENT_DISABLE_TIMING);
	a->cuMemAlloc(&buf, 3 * 64);
	a->cuMemAlloc(&tab, 3 * sizeof(CUdeviceptr));
	CUdeviceptr t[3] = { buf, buf + 64, buf + 128 };
	a->cuMemcpyHtoDAsync(tab, t, sizeof t, s);
	a->cuMemsetD8Async(buf, 0, 3 * 64, s);
	a->cuStreamSynchronize(s);
	TAP_OK(a->cuMemAllocHost((void **)&in, 64) == CUDA_SUCCESS &&
		       a->cuMemAllocHost((void **)&out, 64) == CUDA_SUCCESS,
	       "cuMemAllocHost gives pinned host memory");
	for (int i = 0; i < 16; i++)
		in[i] = (float)i, out[i] = -1;
	CUgraph g = NULL;
	CUgraphExec x = NULL;
	CUresult e = a->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	a->cuMemcpyHtoDAsync(buf, in, 64, s);
	a->cuEventRecord(fork, s);
	a->cuStreamWaitEvent(s2, fork, 0);          /* s2 joins the capture */
	a->cuMemsetD8Async(buf + 64, 0x3f, 64, s2); /* z = 0.747..., on the joined stream */
	a->cuEventRecord(back, s2);
	a->cuStreamWaitEvent(s, back, 0); /* and is joined back */
	launch(tab, s);
	a->cuMemcpyDtoHAsync(out, buf + 128, 64, s);
	e = e == CUDA_SUCCESS ? a->cuStreamEndCapture(s, &g) : e;
	TAP_OK(e == CUDA_SUCCESS && g, "a capture on two streams, forked and joined by events, ends with a graph: %s",
	       err(e));
	TAP_OK(a->cuStreamSynchronize(s) == CUDA_SUCCESS && out[3] == -1,
	       "the recorded work did not run (the output is untouched)");
	TAP_OK(a->cuGraphInstantiateWithFlags(&x, g, 0) == CUDA_SUCCESS && a->cuGraphDestroy(g) == CUDA_SUCCESS,
	       "cuGraphInstantiate; the graph destroyed, its executable stays");
	float z;
	uint32_t zb = 0x3f3f3f3fu;
	memcpy(&z, &zb, 4);
	bool ok = true;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 16; i++)
			in[i] = (float)(i + 100 * round);
		ok = ok && a->cuGraphLaunch(x, s) == CUDA_SUCCESS && out[5] != 2 * (float)(5 + 100 * round) + z;
		ok = ok && a->cuStreamSynchronize(s) == CUDA_SUCCESS;
		for (int i = 0; i < 16; i++)
			ok = ok && out[i] == 2 * (float)(i + 100 * round) + z;
	}
	TAP_OK(ok, "two launches each run the recorded work when the host waits, reading the pinned input as it is "
		   "then");
	/* checked as live work: a race, a freed input */
	CUstream s3 = stream();
	a->cuMemsetD8Async(buf, 1, 64, s3);
	TAP_OK(fails(a->cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE, "race"),
	       "a launch whose work reads what live work on another stream writes, with no event between, is a "
	       "race");
	a->cuStreamSynchronize(s3);
	a->cuStreamSynchronize(s);
	a->cuMemFreeHost(in);
	TAP_OK(fails(a->cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE, "no longer pinned"),
	       "a launch after its pinned input was freed is refused");
	a->cuStreamSynchronize(s);
	TAP_OK(a->cuGraphExecDestroy(x) == CUDA_SUCCESS, "cuGraphExecDestroy");
	TAP_OK(fails(a->cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE, "not live"),
	       "a destroyed executable graph is refused");
	/* unjoined */
	a->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	a->cuEventRecord(fork, s);
	a->cuStreamWaitEvent(s2, fork, 0);
	a->cuMemsetD8Async(buf + 64, 0, 64, s2);
	g = NULL;
	TAP_OK(fails(a->cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "never joined back") && !g,
	       "a stream that joined the capture and was not joined back fails cuStreamEndCapture, no graph");
	TAP_OK(a->cuMemsetD8Async(buf + 64, 0, 64, s2) == CUDA_SUCCESS && a->cuStreamSynchronize(s2) == CUDA_SUCCESS,
	       "after it the joined stream runs live work again");
	a->cuMemFreeHost(out);
	a->cuMemFree(buf);
	a->cuMemFree(tab);
	a->cuEventDestroy(fork);
	a->cuEventDestroy(back);
	a->cuStreamDestroy(s2);
	a->cuStreamDestroy(s3);
	a->cuStreamDestroy(s);
	a->cuModuleUnload(m);
}

/* One forbidden call in a capture of stream s: refused with want and
 * frag, the stream's next work with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
 * and cuStreamEndCapture with no graph, naming the call. */
enum { SYNC, QUERY, PAGEABLE, ALLOC, FREE, EVENT_QUERY, ISOLATION };

static void forbidden(int kind, const char *what, CUresult want, const char *frag)
{
	CUstream s = stream();
	CUevent ev;
	CUdeviceptr d, d2 = 0;
	static float pageable[16];
	a->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
	a->cuMemAlloc(&d, 64);
	if (kind == FREE)
		a->cuMemAlloc(&d2, 64);
	if (kind == ISOLATION)
		a->cuEventRecord(ev, s); /* outside the capture */
	a->cuStreamBeginCapture(s, kind == FREE ? CU_STREAM_CAPTURE_MODE_GLOBAL : CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	a->cuMemsetD8Async(d, 0, 64, s);
	CUresult e = kind == SYNC          ? a->cuStreamSynchronize(s)
		     : kind == QUERY       ? a->cuStreamQuery(s)
		     : kind == PAGEABLE    ? a->cuMemcpyHtoDAsync(d, pageable, sizeof pageable, s)
		     : kind == ALLOC       ? a->cuMemAlloc(&d2, 64)
		     : kind == FREE        ? a->cuMemFree(d2)
		     : kind == EVENT_QUERY ? (a->cuEventRecord(ev, s), a->cuEventQuery(ev))
					   : a->cuStreamWaitEvent(s, ev, 0);
	TAP_OK(fails(e, want, frag), "%s during a capture is refused: %s", what, err(e));
	TAP_OK(fails(a->cuMemsetD8Async(d, 1, 64, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, frag),
	       "  after it the capture is invalidated: the stream's next work is refused, naming why");
	CUgraph g = (CUgraph)1;
	TAP_OK(fails(a->cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, frag) && !g,
	       "  and cuStreamEndCapture gives no graph, naming why");
	a->cuStreamSynchronize(s);
	a->cuMemFree(d);
	if (d2)
		a->cuMemFree(d2);
	a->cuEventDestroy(ev);
	a->cuStreamDestroy(s);
}

static void rules(void)
{
	forbidden(SYNC, "cuStreamSynchronize of the capturing stream", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
		  "cuStreamSynchronize on stream");
	forbidden(QUERY, "cuStreamQuery of the capturing stream", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
		  "cuStreamQuery on stream");
	forbidden(PAGEABLE, "a copy from pageable host memory", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
		  "pageable host memory");
	forbidden(ALLOC, "cuMemAlloc (thread-local mode)", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
		  "cuMemAlloc while stream");
	forbidden(FREE, "cuMemFree (global mode)", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "cuMemFree while stream");
	forbidden(EVENT_QUERY, "cuEventQuery of an event recorded in the capture", CUDA_ERROR_CAPTURED_EVENT,
		  "cuEventQuery on an event last recorded in a stream capture");
	forbidden(ISOLATION, "a wait on an event recorded outside the capture", CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
		  "recorded outside the capture");
	CUstream s = stream();
	CUdeviceptr d = 0;
	CUgraph g = NULL;
	a->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED);
	TAP_OK(a->cuMemAlloc(&d, 64) == CUDA_SUCCESS, "cuMemAlloc during a relaxed capture is taken");
	a->cuMemsetD8Async(d, 0, 64, s);
	TAP_OK(a->cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g, "and the capture ends with a graph");
	a->cuGraphDestroy(g);
	a->cuMemFree(d);
	TAP_OK(fails(a->cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
		     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "legacy stream"),
	       "a capture of the legacy stream is refused");
	TAP_OK(fails(a->cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "not capturing"),
	       "cuStreamEndCapture of a stream not capturing is refused");
	a->cuStreamDestroy(s);
}

/* ---- NCCL ------------------------------------------------------------------------ */

static void nccl(void)
{
	ncclUniqueId id;
	ncclComm_t c = NULL;
	CUstream s = stream(), lane = stream();
	CUevent fork, back;
	float *in = NULL, *out = NULL;
	CUdeviceptr d;
	if (me == 0)
		a->ncclGetUniqueId(&id);
	MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
	a->ncclCommInitRank(&c, 2, id, me);
	a->cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING);
	a->cuEventCreate(&back, CU_EVENT_DISABLE_TIMING);
	a->cuMemAlloc(&d, 64);
	a->cuMemAllocHost((void **)&in, 32);
	a->cuMemAllocHost((void **)&out, 32);
	CUgraph g = NULL;
	CUgraphExec x = NULL;
	/* pcc-run's shape: the collective on its lane, forked from and joined
	 * back to the capturing stream */
	CUresult e = a->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	a->cuMemcpyHtoDAsync(d, in, 32, s);
	a->cuEventRecord(fork, s);
	a->cuStreamWaitEvent(lane, fork, 0);
	bool ok = a->ncclAllReduce((void *)d, (void *)(d + 32), 8, ncclFloat32, ncclSum, c, lane) == ncclSuccess;
	a->cuEventRecord(back, lane);
	a->cuStreamWaitEvent(s, back, 0);
	a->cuMemcpyDtoHAsync(out, d + 32, 32, s);
	e = e == CUDA_SUCCESS ? a->cuStreamEndCapture(s, &g) : e;
	ok = ok && e == CUDA_SUCCESS && a->cuGraphInstantiateWithFlags(&x, g, 0) == CUDA_SUCCESS;
	both(ok, "an all-reduce on a lane forked from the capturing stream is recorded and instantiated");
	ok = true;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 8; i++)
			in[i] = (float)(i + 10 * me + 100 * round);
		ok = ok && a->cuGraphLaunch(x, s) == CUDA_SUCCESS && a->cuStreamSynchronize(s) == CUDA_SUCCESS;
		for (int i = 0; i < 8; i++)
			ok = ok && out[i] == (float)(2 * i + 10 + 200 * round);
	}
	both(ok, "two launches on both ranks each sum the ranks' inputs as they are at the launch");
	/* rank 0 replays, rank 1 issues the same call live */
	for (int i = 0; i < 8; i++)
		in[i] = (float)(i + 10 * me);
	if (me == 0) {
		ok = a->cuGraphLaunch(x, s) == CUDA_SUCCESS;
	} else {
		a->cuMemcpyHtoDAsync(d, in, 32, s);
		a->cuEventRecord(fork, s);
		a->cuStreamWaitEvent(lane, fork, 0);
		ok = a->ncclAllReduce((void *)d, (void *)(d + 32), 8, ncclFloat32, ncclSum, c, lane) == ncclSuccess;
		a->cuEventRecord(back, lane);
		a->cuStreamWaitEvent(s, back, 0);
		a->cuMemcpyDtoHAsync(out, d + 32, 32, s);
	}
	ok = ok && a->cuStreamSynchronize(s) == CUDA_SUCCESS;
	for (int i = 0; i < 8; i++)
		ok = ok && out[i] == (float)(2 * i + 10);
	both(ok, "a rank replaying its graph and a rank issuing the all-reduce live agree");
	ncclResult_t r = a->ncclCommDestroy(c);
	both(r == ncclInvalidUsage && strstr(a->ncclGetErrorString(r), "recorded in a CUDA graph"),
	     "ncclCommDestroy while a graph holds a call on the communicator is refused");
	if (me == 0)
		TAP_DIAG("%s", a->ncclGetErrorString(r));
	a->cuGraphExecDestroy(x);
	a->cuGraphDestroy(g);
	both(a->ncclCommDestroy(c) == ncclSuccess, "once the graphs are destroyed, ncclCommDestroy is taken");
	a->cuMemFreeHost(in);
	a->cuMemFreeHost(out);
	a->cuMemFree(d);
	a->cuEventDestroy(fork);
	a->cuEventDestroy(back);
	a->cuStreamDestroy(lane);
	a->cuStreamDestroy(s);
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
		TAP_OK(up && a->cuStreamBeginCapture && a->cuGraphLaunch,
		       "PCC_GPU_STANDIN=1: the stand-in, with the graph entry points");
		replay();
		rules();
	}
	nccl();
	int rc = me == 0 ? tap_done() : 0;
	MPI_Finalize();
	return rc;
}
