/*
 * test_gpu_standin_comm.c: pcc-run's NCCL communication table
 * (runtime/comm_nccl.c) on the checking stand-in for a GPU, on 2 MPI ranks,
 * with a plan of one communicator of both ranks:
 *   - a run that went well: an all-reduce through the table sums the
 *     ranks' buffers, and finish destroys every communicator it made
 *     (none aborted, none left);
 *   - a run that failed elsewhere (the table's `failed` set, as rt_main
 *     sets it): finish aborts every communicator, NCCL's way after an
 *     error, which waits for no peer's work;
 *   - a fault in one rank: rank 1 all-reduces 8 int32 where rank 0
 *     all-reduces 8 float32; each rank's wait fails within seconds, naming both
 *     calls, and finish frees every communicator though the failed call is
 *     still queued (ncclCommDestroy refuses such a communicator; an abort
 *     frees it, and the sanitized suite's leak check sees MPI's
 *     communicator freed).
 * The stand-in counts communicators neither destroyed nor aborted
 * (si_nccl_live). Rank 0 prints the TAP lines, with rank 1's results sent
 * to it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/gpu_internal.h"
#include "runtime/gpu_standin.h"
#include "tests/standin_check.h"
#include "tests/tap.h"

/* The table over boot for plan p, set up; false (with a diagnostic) if
 * it could not be. */
static bool table(struct rt_comm *t, struct rt_comm *boot, const struct plan *p)
{
	if (rt_comm_nccl_init(t, boot, a) < 0 || t->ops->setup(t, p) < 0) {
		TAP_DIAG("rank %d: %s", me, ir_error());
		return false;
	}
	t->timeout = 30;
	return true;
}

/* An all-reduce of 8 elements (rank r's element i: i + 10 r as a float)
 * of type ty through table t; 0 with the sum checked into *ok, or the
 * table's error. */
static int all_reduce(struct rt_comm *t, CUdeviceptr d, enum ir_dtype ty, bool *ok)
{
	CUstream s = NULL;
	float x[8], y[8];
	for (int i = 0; i < 8; i++)
		x[i] = (float)(i + 10 * me);
	*ok = a->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
	      a->cuMemcpyHtoDAsync(d, x, sizeof x, s) == CUDA_SUCCESS && a->cuStreamSynchronize(s) == CUDA_SUCCESS;
	int rc = t->ops->all_reduce(t, 0, (void *)d, (void *)(d + 64), 8, ty, PLAN_SUM, NULL);
	if (rc == 0) {
		*ok = *ok && a->cuMemcpyDtoHAsync(y, d + 64, sizeof y, s) == CUDA_SUCCESS &&
		      a->cuStreamSynchronize(s) == CUDA_SUCCESS;
		for (int i = 0; i < 8; i++)
			*ok = *ok && y[i] == (float)(2 * i + 10);
	}
	if (s)
		a->cuStreamDestroy(s);
	return rc;
}

int main(int argc, char **argv)
{
	struct rt_comm boot;
	setenv("PCC_GPU_STANDIN", "1", 1);
	if (rt_comm_mpi_init(&boot, &argc, &argv) < 0) {
		fprintf(stderr, "test_gpu_standin_comm: %s\n", ir_error());
		return 1;
	}
	me = boot.rank;
	a = gpu_api_load();
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d = 0;
	bool up = boot.size == 2 && a && gpu_api_standin(a) && a->cuInit(0) == CUDA_SUCCESS &&
		  a->cuDeviceGet(&dev, 0) == CUDA_SUCCESS && a->cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
		  a->cuCtxSetCurrent(ctx) == CUDA_SUCCESS && a->cuMemAlloc(&d, 4096) == CUDA_SUCCESS;
	both(up, "2 ranks, PCC_GPU_STANDIN=1: the stand-in's context and memory");
	if (!up) {
		boot.ops->finish(&boot);
		return 1;
	}
	/* one communicator of both ranks; no transfers */
	int ranks[2] = { 0, 1 };
	struct plan_comm comm = { 2, ranks };
	struct plan_device devs[2] = { { .rank = 0 }, { .rank = 1 } };
	struct plan p = { .ncomms = 1, .comms = &comm, .ndevices = 2, .devices = devs };
	struct rt_comm t;
	int aborted0 = 0, aborted = 0;
	bool ok = false;

	/* a run that went well */
	bool made = table(&t, &boot, &p);
	int live = si_nccl_live(&aborted0);
	both(made && live == 2, "the table makes 2 communicators: the world's and the plan communicator's");
	both(made && all_reduce(&t, d, IR_F32, &ok) == 0 && ok,
	     "an all-reduce through the table sums the ranks' buffers");
	if (made)
		t.ops->finish(&t);
	live = si_nccl_live(&aborted);
	both(live == 0 && aborted == aborted0,
	     "a run that went well: finish destroys every communicator, none aborted");

	/* a run that failed elsewhere */
	made = table(&t, &boot, &p);
	both(made && all_reduce(&t, d, IR_F32, &ok) == 0 && ok, "a second table's all-reduce");
	t.failed = true;
	if (made)
		t.ops->finish(&t);
	aborted0 = aborted;
	live = si_nccl_live(&aborted);
	both(live == 0 && aborted == aborted0 + 2,
	     "a run that failed: finish aborts both communicators (NCCL's way after an error), none left");

	/* a fault in rank 1: another type than rank 0's (as many bytes) */
	made = table(&t, &boot, &p);
	double t0 = ir_now();
	int rc = made ? all_reduce(&t, d, me == 0 ? IR_F32 : IR_I32, &ok) : 0;
	double secs = ir_now() - t0;
	const char *why = rc < 0 ? ir_error() : "";
	if (me == 0)
		TAP_DIAG("rank 0: %s (%.2f s)", why, secs);
	both(made && rc < 0 && strstr(why, "NCCL calls out of step") && strstr(why, "ncclAllReduce of 8 int32") &&
		     strstr(why, "ncclAllReduce of 8 float32") && secs < 20,
	     "a fault in rank 1 (int32 all-reduced where rank 0 gives float32): each rank's wait fails within "
	     "seconds, naming both calls");
	if (made)
		t.ops->finish(&t);
	aborted0 = aborted;
	live = si_nccl_live(&aborted);
	both(live == 0 && aborted == aborted0 + 2,
	     "after the fault finish aborts every communicator, the one with the failed call queued too; none left");

	int code = me == 0 ? tap_done() : 0;
	boot.ops->finish(&boot);
	return code;
}
