/*
 * gpu_internal.h: the CUDA backend's state, shared by gpu.c (devices,
 * memory, modules, communicators) and gpu_exec.c (instructions, transfers
 * between host and device, the ordering of streams).
 *
 * Streams: kernels, GEMMs, copies and the host's transfers run in program
 * order on one compute stream. Each collective runs on its communicator's
 * stream, each send or receive on its pair's stream: it starts after an
 * event recorded on the compute stream when it is issued, and records its
 * own event when done. It stays pending until an instruction (or a host
 * transfer) touches bytes it writes, or writes bytes it reads: that one
 * makes the compute stream wait for its event first. So a gradient's
 * all-reduce overlaps the backward kernels that follow it, and a send
 * never holds back the sender.
 */
#ifndef PCC_RUNTIME_GPU_INTERNAL_H
#define PCC_RUNTIME_GPU_INTERNAL_H

#include "runtime/gpu_api.h"
#include "runtime/gpu_plan.h"
#include "runtime/rt.h"

#define GPU_MAX_PENDING 64
#define GPU_MAX_PINNED 256

/* A byte range of the device arena an instruction reads or writes. */
struct gpu_range {
	int64_t lo, hi;
	bool write;
};

struct gpu_pending {
	CUevent ev;
	struct gpu_range rg[4];
	int n;
};

/* Algorithms cuBLASLt's heuristic is asked for: the first call of each
 * dot times them all and keeps the fastest (gpu_exec.c's tune). */
enum { GPU_GEMM_ALGOS = 8 };

struct gpu_gemm_plan {
	bool tried, ok;
	struct gpu_gemm g;
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulAlgo_t algo;                 /* the one used */
	cublasLtMatmulAlgo_t cand[GPU_GEMM_ALGOS]; /* the heuristic's, best first */
	int ncand;
	double tuned_ms[GPU_GEMM_ALGOS]; /* each one's time at the first call (ms; < 0: failed) */
	int pick, ntuned;                /* the one kept, of ntuned timed */
};

/* A stream with NCCL work: a plan communicator's or a pair's. */
struct gpu_lane {
	ncclComm_t comm; /* NULL: this rank is not in it */
	CUstream s;
	CUdeviceptr scratch; /* packing collectives */
	size_t nscratch;
};

struct rt_gpu {
	const struct gpu_api *a;
	CUdevice dev;
	CUcontext ctx;
	char name[128];
	int cc, sms; /* compute capability (major * 10 + minor), SMs */
	CUdeviceptr arena;
	CUmodule mod;
	CUfunction *fn;       /* [nkernels]: NULL where no PTX */
	int64_t *rows;        /* [nkernels]: the GPU kernel's rows */
	int *lanes;           /* [nkernels]: its threads per row (cg_kernel_lanes) */
	int64_t *grid;        /* [nkernels]: elements a result reduces where the
			       * whole grid reduces it (cg_kernel_grid_reduce), else 0 */
	CUdeviceptr gscratch; /* such kernels' scratch (CG_GRID_SCRATCH bytes) */
	int grid_blocks;      /* their most blocks: 4 an SM, at most CG_GRID_BLOCKS */
	CUdeviceptr argtab;   /* kernel arguments: per instruction, micro
			       * rows of nin + 1 device pointers */
	int64_t *argoff;      /* [ninstr]: its first pointer's index, or -1 */
	cublasLtHandle_t lt;
	CUdeviceptr ws; /* cuBLASLt workspace */
	size_t nws;
	struct gpu_gemm_plan *gemm; /* [nkernels] */
	bool tf32;
	CUstream compute;
	ncclComm_t world;
	struct gpu_lane *lane; /* [ncomms] then [npairs] */
	int *pairs, npairs;
	struct gpu_pending pend[GPU_MAX_PENDING];
	int npend;
	CUevent *free_ev; /* events to reuse */
	int nfree, capfree;
	void *pinned[GPU_MAX_PINNED]; /* host pages registered with the driver */
	int npinned;
	/* --profile: a timing event pair around each kernel of the step,
	 * read when the step is done (rt_gpu_finish) */
	struct gpu_timed {
		CUevent a, b;
		int kernel;
	} * timed;
	int ntimed, captimed;
	CUevent *tev; /* timing events to reuse */
	int ntev, captev;
	double peak_bw; /* bytes/s of device memory: 2 x clock x bus width */
	int fallbacks;  /* kernels run on the host so far */
	bool *fell;     /* [nkernels]: kernel k ran on the host */
};

/* gpu.c */
int gpu_check(const struct rt_gpu *g, CUresult e, const char *what);
int gpu_nccl_check(const struct rt_gpu *g, ncclResult_t e, const char *what);
/* Waits for stream s with the table's timeout, watching NCCL's errors. */
int gpu_wait(struct rt *r, CUstream s, const char *what);
CUdeviceptr gpu_dbuf(const struct rt *r, const struct plan_buffer *b);

#endif
