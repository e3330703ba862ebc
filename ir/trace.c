/*
 * trace.c: the streams, lanes and names of pcc's Chrome trace files
 * (trace.h).
 */
#include <errno.h>
#include <stdio.h>

#include "ir/ir.h"
#include "ir/trace.h"

const char *const ir_trace_stream_name[IR_TRACE_STREAMS] = {
	"compute",       "collectives",     "receive activation", "receive gradient",
	"gradient sync", "send activation", "send gradient",
};

int ir_trace_lane(struct ir_trace_lanes *l, enum ir_trace_stream s, long long t0, long long t1)
{
	int k = 0;
	while (k < l->used[s] && l->end[s][k] > t0)
		k++;
	if (k == l->cap[s]) {
		int nc = l->cap[s] ? 2 * l->cap[s] : 4;
		long long *e = ir_realloc(l->end[s], sizeof *e * (size_t)nc);
		if (!e)
			return ir_errorf(-ENOMEM, "out of memory writing the trace");
		l->end[s] = e;
		l->cap[s] = nc;
	}
	if (k == l->used[s])
		l->used[s]++;
	l->end[s][k] = t1;
	return k;
}

void ir_trace_lanes_release(struct ir_trace_lanes *l)
{
	for (int s = 0; l && s < IR_TRACE_STREAMS; s++) {
		ir_free(l->end[s]);
		l->end[s] = NULL;
		l->used[s] = l->cap[s] = 0;
	}
}

json_t *ir_trace_meta(const char *what, int pid, int tid, const char *name)
{
	json_t *e = json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", what, "ph", "M", "pid", pid, "args", "name", name);
	if (tid >= 0)
		json_object_set_new(e, "tid", json_integer(tid));
	return e;
}

void ir_trace_names(json_t *ev, int pid, const char *name, int sort_index, const struct ir_trace_lanes *l)
{
	json_array_append_new(ev, ir_trace_meta("process_name", pid, -1, name));
	json_array_append_new(ev, json_pack("{s:s, s:s, s:i, s:{s:i}}", "name", "process_sort_index", "ph", "M", "pid",
					    pid, "args", "sort_index", sort_index));
	for (int s = 0; s < IR_TRACE_STREAMS; s++)
		for (int k = 0; k < l->used[s]; k++) {
			char tn[64];
			snprintf(tn, sizeof tn, k ? "%s %d" : "%s", ir_trace_stream_name[s], k + 1);
			json_array_append_new(ev, ir_trace_meta("thread_name", pid, ir_trace_tid(s, k), tn));
		}
}
