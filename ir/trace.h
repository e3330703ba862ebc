/*
 * trace.h: what the two Chrome trace-event files pcc writes share, so that
 * they read alike side by side in Perfetto or chrome://tracing: the
 * predicted step of `pcc report --trace` (compiler/report/report_trace.c) and the
 * measured run of `pcc-run --trace` (runtime/trace.c). Each process (a
 * pipeline stage there, a rank here) has one thread per stream below,
 * thread id 100 s + lane + 1 for stream s; spans of one stream that
 * overlap in time (receives in flight together) take further lanes, named
 * "receive activation 2", ...
 */
#ifndef PCC_IR_TRACE_H
#define PCC_IR_TRACE_H

#include <jansson.h>

enum ir_trace_stream {
	IR_TRACE_COMPUTE,   /* forwards, backwards, the optimizer, kernels */
	IR_TRACE_COLL,      /* collectives within the forward and backward parts */
	IR_TRACE_RECV_ACT,  /* activations arriving from the previous stage */
	IR_TRACE_RECV_GRAD, /* gradients arriving from the next stage */
	IR_TRACE_SYNC,      /* the per-step part's collectives: the gradient reduction */
	IR_TRACE_SEND_ACT,  /* activations sent on (measured only) */
	IR_TRACE_SEND_GRAD, /* gradients sent back (measured only) */
	IR_TRACE_STREAMS
};

extern const char *const ir_trace_stream_name[IR_TRACE_STREAMS];

static inline int ir_trace_tid(enum ir_trace_stream s, int lane)
{
	return (int)s * 100 + lane + 1;
}

/* Lane ends per stream of one process (whole nanoseconds). */
struct ir_trace_lanes {
	long long *end[IR_TRACE_STREAMS];
	int used[IR_TRACE_STREAMS], cap[IR_TRACE_STREAMS];
};

/* The lane of stream s a span [t0, t1) takes: the first one free at t0,
 * else a new one; -ENOMEM. */
int ir_trace_lane(struct ir_trace_lanes *l, enum ir_trace_stream s, long long t0, long long t1);
void ir_trace_lanes_release(struct ir_trace_lanes *l);

/* A metadata event ("process_name", "thread_name", ...); tid < 0: none. */
json_t *ir_trace_meta(const char *what, int pid, int tid, const char *name);
/* Appends process pid's name, its sort index and the names of the lanes
 * l used to the array ev. */
void ir_trace_names(json_t *ev, int pid, const char *name, int sort_index, const struct ir_trace_lanes *l);

#endif
