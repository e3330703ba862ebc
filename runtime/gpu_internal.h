/*
 * gpu_internal.h: the CUDA device table's state (r->dev_state), shared by
 * gpu.c (devices, memory, modules, communicators) and gpu_exec.c (the
 * table; instructions, transfers between host and device, the ordering
 * of streams, events).
 *
 * Streams: kernels, GEMMs, copies and the host's transfers run in program
 * order on one compute stream. Each collective runs on its communicator's
 * stream, each send or receive on its pair's stream (the NCCL table's,
 * comm_nccl.c): it starts after an
 * event recorded on the compute stream when it is issued, and records its
 * own event when done. It stays pending until an instruction (or a host
 * transfer) touches bytes it writes, or writes bytes it reads: that one
 * makes the compute stream wait for its event first. So a gradient's
 * all-reduce overlaps the backward kernels that follow it, and a send
 * never holds back the sender.
 *
 * A step as a CUDA graph (gpu_graph.c): the step's work, the lanes' too,
 * recorded once from the compute stream and replayed by one launch a
 * step; its inputs and saved outputs pass through pinned staging buffers
 * at fixed addresses (stage), since a graph's copies name their host
 * memory once.
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

/* A plan communicator's stream (the NCCL table's, rt_comm_nccl_stream;
 * NULL: this rank is not in it) and its buffer for packing collectives. */
struct gpu_lane {
	CUstream s;
	CUdeviceptr scratch;
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
	struct rt_comm nccl;   /* the NCCL table (comm_nccl.c) over r->c; ops
				* NULL until connected */
	struct gpu_lane *lane; /* [ncomms] */
	struct gpu_pending pend[GPU_MAX_PENDING];
	int npend;
	CUevent *free_ev; /* events to reuse */
	int nfree, capfree;
	void *pinned[GPU_MAX_PINNED]; /* host pages registered with the driver */
	int npinned;
	CUevent *tev; /* timing events (the table's) to reuse */
	int ntev, captev;
	double peak_bw; /* bytes/s of device memory: 2 x clock x bus width */
	int fallbacks;  /* kernels run on the host so far */
	bool *fell;     /* [nkernels]: kernel k ran on the host */
	/* the step as a CUDA graph (gpu_graph.c) */
	enum { GPU_GRAPH_UNTRIED, GPU_GRAPH_READY, GPU_GRAPH_NEVER } gstate;
	bool warm;                 /* a training step ran (gpu_graph.c's warm-up) */
	bool capturing, replaying; /* this step is being recorded, replayed */
	CUgraphExec exec;
	long captured_at, replays; /* the step recorded (1-based), the steps that replayed it */
	char why_not[320];         /* GPU_GRAPH_NEVER: why ("": --cuda-graph=off) */
	uint8_t *stage;            /* pinned staging of a step's inputs and saved outputs */
	int64_t *stage_off;        /* [nbuf]: buffer b's micro-batch 0 slot there, or -1 */
	struct gpu_save {          /* saves to finish when the step's graph is done */
		void *dst;
		const void *src;
		size_t n;
	} * saves;
	int nsaves, capsaves;
};

static inline struct rt_gpu *gpu_of(const struct rt *r)
{
	return r->dev_state;
}

/* gpu.c: the table's entries (device.h) for the device itself */
int gpu_open(struct rt *r, bool tf32);
int gpu_connect(struct rt *r);
void gpu_close(struct rt *r);
int gpu_alloc(struct rt *r, size_t n, const char *what, uint64_t *addr);
void gpu_free(struct rt *r, uint64_t addr);
int gpu_profile_check(const struct rt *r, double *peak_bw);
const char *gpu_kernel_how(const struct rt *r, int k);
int gpu_fallback_report(const struct rt *r, char *buf, size_t n);
int gpu_check(const struct rt_gpu *g, CUresult e, const char *what);
/* Waits for stream s with the table's timeout, watching NCCL's errors
 * (the NCCL table's progress). */
int gpu_wait(struct rt *r, CUstream s, const char *what);
CUdeviceptr gpu_dbuf(const struct rt *r, const struct plan_buffer *b);

/* comm_nccl.c: the communication table (comm.h) over NCCL for buffers in
 * the GPU's memory, its ctl entries and abort through boot. Not collective
 * (setup is). */
int rt_comm_nccl_init(struct rt_comm *c, struct rt_comm *boot, const struct gpu_api *a);
/* The stream of plan communicator comm's work (comm >= 0), or of the
 * messages from rank `from` to rank `to` (comm < 0); NULL where this rank
 * has none. */
CUstream rt_comm_nccl_stream(const struct rt_comm *c, int comm, int from, int to);

/* gpu_exec.c: the table's entries (device.h) for work */
int gpu_put(struct rt *r, const struct plan_buffer *b);
int gpu_get(struct rt *r, const struct plan_buffer *b);
int gpu_fill(struct rt *r, const struct plan_buffer *b, uint8_t byte);
int gpu_copy(struct rt *r, const struct plan_instr *x);
bool gpu_gemm(struct rt *r, const struct plan_instr *x, int *rc);
int gpu_launch(struct rt *r, const struct plan_instr *x, int i);
int gpu_transfer(struct rt *r, const struct plan_instr *x, int pos);
int gpu_collective(struct rt *r, const struct plan_instr *x, int pos);
int gpu_sync(struct rt *r);
/* gpu_graph.c: the step as a CUDA graph (gpu_exec.c decides when) */
/* This step recorded from here: the staging made, the capture begun (or,
 * where the driver refuses it, no graph from now on). */
int gpu_graph_begin(struct rt *r);
/* The pinned slot of buffer b (micro-batch r->mb) in the staging, or NULL
 * with an error naming b. */
void *gpu_stage(struct rt *r, const struct plan_buffer *b);
/* At the step's sync, its pending lanes joined: the recording ended and
 * instantiated, or the replay, launched on the compute stream. */
int gpu_graph_launch(struct rt *r);
/* After the launch's wait: the saved outputs copied out of the staging. */
void gpu_graph_done(struct rt *r);
void gpu_graph_close(struct rt *r);
void gpu_graph_report(const struct rt *r, long *captured, long *replays, const char **why);
int gpu_save(struct rt *r, const struct plan_buffer *b, void *dst);
int gpu_event_record(struct rt *r, struct rt_event **ev);
int gpu_event_elapsed(struct rt *r, struct rt_event *a, struct rt_event *b, double *seconds);
void gpu_event_free(struct rt *r, struct rt_event *ev);

#endif
