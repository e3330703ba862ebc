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
 * (gpu_graph_report). A dot's GEMM algorithms are timed (gpu_exec.c's
 * tune, which waits for the GPU) before the capture begins.
 *
 * Inputs go to the GPU and saved outputs come back through pinned staging
 * buffers (cuMemAllocHost) at fixed addresses, one slot per buffer and
 * micro-batch, so the graph's copies read and write the same bytes every
 * step; the saves are copied out of the staging when the graph is done.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/gpu_internal.h"

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
	if (r->graph_off)
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
			rc = gpu_graph_kernel(r, x, &host, &l);
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

/* The staging: a slot per micro-batch for every input and every output
 * this rank saves, 256-byte aligned. */
static int stage_alloc(struct rt *r)
{
	struct rt_gpu *g = gpu_of(r);
	const struct plan_device *d = r->d;
	size_t n = 0;
	if (g->stage)
		return 0;
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
	if (e != CUDA_SUCCESS)
		return ir_errorf(-ENOMEM, "cannot pin %s of host memory for the CUDA graph's inputs and outputs: %s",
				 ir_bytes_str((double)n, sz), gpu_cu_error(g->a, e));
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

int gpu_step_begin(struct rt *r, bool *replay)
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
	if ((rc = stage_alloc(r)) < 0 || (lanes && (rc = gpu_events_ahead(g, GPU_MAX_PENDING + 1)) < 0))
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
