/*
 * gpu_graph.c: a training or inference step as one CUDA graph
 * (pcc-run --cuda-graph=auto, the default; gpu_internal.h). Issuing a
 * step instruction by instruction costs the host a driver call or more
 * each (GPT-2 small: over a thousand a step); a graph holds them all and
 * one launch runs them.
 *
 * A training run's first step is issued as without a graph, a warm-up
 * (NCCL's connections are made at a communicator's first calls, kernels
 * and cuBLASLt's are loaded at their first launch, each dot's GEMM
 * algorithms are timed then: better done live than inside a capture); an
 * inference run's one step is recorded. The first step after that which
 * can be recorded is: from its start to its sync the
 * compute stream captures (thread-local mode: pcc-run's own thread may
 * make no call that could wait for the GPU or change its memory), and the
 * lanes of collectives and transfers join the capture through the events
 * that order them, as NCCL's calls may be captured. At the sync the
 * capture ends, the graph is instantiated and launched; each later step
 * only refills the staging with its inputs and launches it again.
 *
 * A step cannot be recorded when any of its work needs the host mid-step:
 * a kernel the GPU has no code for (it runs on the host between two
 * copies and a wait), per-instruction timing (--profile's CUDA events,
 * --trace's host clock), a fault injected at an instruction; then every
 * step is issued as before, and the run's summary says why
 * (gpu_graph_report). A dot's GEMM algorithms are timed (tune, which
 * waits for the GPU) before the capture begins. gpu_exec.c decides when a
 * step is recorded (its step_begin); this file records, launches and
 * stages.
 *
 * Inputs go to the GPU and saved outputs come back through pinned staging
 * buffers (cuMemAllocHost) at fixed addresses, one slot per buffer and
 * micro-batch, so the graph's copies read and write the same bytes every
 * step; the saves are copied out of the staging when the graph is done.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtime/gpu_internal.h"

/* The staging: a slot per micro-batch for every input and every output
 * this rank saves, 256-byte aligned. */
static int stage_alloc(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan_device *d = r->d;
	size_t n = 0;
	if (g->stage)
		return 0;
	ir_free(g->stage_off);
	if (!(g->stage_off = ir_calloc((size_t)d->nbuf + 1, sizeof *g->stage_off)))
		return ir_errorf(-ENOMEM, "out of memory for the CUDA graph's staging");
	for (int b = 0; b < d->nbuf; b++) {
		bool staged = d->buf[b].bind == PLAN_BIND_INPUT || r->part[r->c->rank][b] >= 0;
		g->stage_off[b] = staged ? (int64_t)n : -1;
		n += staged ? (size_t)r->micro * (((size_t)d->buf[b].bytes + 255) / 256 * 256) : 0;
	}
	void *p = NULL;
	char sz[IR_BYTES_STRLEN];
	CUresult e = g->a->cuMemAllocHost(&p, n ? n : 1);
	if (e != CUDA_SUCCESS) { /* the steps run as without a graph */
		snprintf(g->why_not, sizeof g->why_not, "cannot pin %s of host memory for its inputs and outputs: %s",
			 ir_bytes_str((double)n, sz), gpu_cu_error(g->a, e));
		g->gstate = GPU_GRAPH_NEVER;
		return 0;
	}
	g->stage = p;
	return 0;
}

void *gpu_stage(struct rt *r, const struct plan_buffer *b)
{
	struct rt_gpu *g = gpu_of(r);
	int k = (int)(b - r->d->buf);
	if (!g->stage_off || g->stage_off[k] < 0) {
		ir_errorf(-EINVAL,
			  "buffer %d moves between the host and the GPU mid-step, which a CUDA graph cannot hold", k);
		return NULL;
	}
	return g->stage + g->stage_off[k] + (size_t)r->mb * (((size_t)b->bytes + 255) / 256 * 256);
}

int gpu_graph_begin(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	int rc = stage_alloc(r);
	if (rc < 0 || g->gstate == GPU_GRAPH_NEVER)
		return rc;
	CUresult e = g->a->cuStreamBeginCapture(g->compute, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
	if (e != CUDA_SUCCESS) { /* the step runs as without a graph */
		snprintf(g->why_not, sizeof g->why_not, "cuStreamBeginCapture: %s", gpu_cu_error(g->a, e));
		g->gstate = GPU_GRAPH_NEVER;
		return 0;
	}
	g->capturing = true;
	g->captured_at = r->step + 1;
	return 0;
}

int gpu_graph_launch(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct gpu_api *a = g->a;
	int rc = 0;
	if (g->capturing) {
		CUgraph graph = NULL;
		g->capturing = false;
		rc = gpu_check(g, a->cuStreamEndCapture(g->compute, &graph), "cuStreamEndCapture");
		if (rc == 0)
			rc = gpu_check(g, a->cuGraphInstantiateWithFlags(&g->exec, graph, 0), "cuGraphInstantiate");
		if (graph) /* the executable graph is all a launch needs */
			a->cuGraphDestroy(graph);
		if (rc < 0) {
			g->exec = NULL;
			g->gstate = GPU_GRAPH_NEVER;
			ir_error_prefix("recording step %ld as a CUDA graph (pcc-run --cuda-graph=off issues its "
					"instructions one by one)",
					g->captured_at);
			return rc;
		}
		g->gstate = GPU_GRAPH_READY;
	} else {
		g->replays++;
	}
	rc = gpu_check(g, a->cuGraphLaunch(g->exec, g->compute), "cuGraphLaunch");
	if (rc < 0)
		g->replaying = false;
	return rc;
}

void gpu_graph_done(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	for (int k = 0; k < g->nsaves; k++)
		memcpy(g->saves[k].dst, g->saves[k].src, g->saves[k].n);
	g->nsaves = 0;
	g->replaying = false;
}

void gpu_graph_close(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct gpu_api *a = g->a;
	if (g->capturing) { /* a step failed while recording */
		CUgraph graph = NULL;
		if (a->cuStreamEndCapture(g->compute, &graph) == CUDA_SUCCESS && graph)
			a->cuGraphDestroy(graph);
		g->capturing = false;
	}
	if (g->exec)
		a->cuGraphExecDestroy(g->exec);
	g->exec = NULL;
	if (g->stage)
		a->cuMemFreeHost(g->stage);
	g->stage = NULL;
	ir_free(g->stage_off);
	ir_free(g->saves);
	g->stage_off = NULL;
	g->saves = NULL;
}

void gpu_graph_report(const struct rt *r, long *captured, long *replays, const char **why)
{
	const struct rt_gpu *g = gpu_of(r);
	*captured = g && g->gstate == GPU_GRAPH_READY ? g->captured_at : 0;
	*replays = g ? g->replays : 0;
	*why = g && g->gstate == GPU_GRAPH_NEVER && g->why_not[0] ? g->why_not : NULL;
}
