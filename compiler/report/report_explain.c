/*
 * report_explain.c: `pcc report --explain` of a plan: why this plan. The
 * plans the search weighed against it (inter_plan's alternatives: the
 * best stage assignment of each micro-batch size under each schedule, and
 * the best without a pipeline), fastest first with their step time over
 * the plan's; and per stage the ops that cost most per micro-batch (time
 * x how many such ops it runs), each with its sharding, the collective it
 * causes and the runner-up sharding with the objective's rise under it
 * (intra_notes). The same as JSON. A manual plan has only its ops: the
 * pass was held to its choices, nothing was weighed against them.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "compiler/report/report_internal.h"

static void ops(const struct whatif *w, FILE *f)
{
	char b[32], d[32];
	for (int s = 0; s < w->nstages; s++) {
		const struct wi_stage *st = &w->stages[s];
		char layers[INTER_LAYERS_STRLEN];
		fprintf(f, "\nstage %d (%s, mesh %s): the %d costliest of %d op%s per micro-batch\n", s,
			inter_layers_str(st->first, st->last, layers), st->mesh, st->nops, st->ops_total,
			st->ops_total == 1 ? "" : "s");
		for (int i = 0; i < st->nops; i++) {
			const struct intra_note *n = &st->ops[i].n;
			fprintf(f, "  %-10s %s%s%s  %s", n->op, n->name[0] ? "\"" : "", n->name, n->name[0] ? "\"" : "",
				wi_secs(n->t, b, sizeof b));
			if (st->ops[i].count > 1)
				fprintf(f, " x %d", st->ops[i].count);
			fprintf(f, "\n      %s", n->chosen);
			if (n->coll[0])
				fprintf(f, "; %s", n->coll);
			if (isfinite(n->delta))
				fprintf(f, "\n      runner-up %s: %s%s", n->runner, n->delta >= 0 ? "+" : "-",
					wi_secs(fabs(n->delta), d, sizeof d));
			fputc('\n', f);
		}
	}
}

int wi_explain(const struct whatif *w, FILE *f)
{
	fputc('\n', f);
	if (!w->manual) /* a manual plan is held to one micro-batch count: nothing was weighed against it */
		inter_alts_print(w->alt, w->nalt, w->nweighed, w->t_step, w->train, f);
	ops(w, f);
	return ferror(f) ? ir_errorf(-EIO, "cannot write the report") : 0;
}

json_t *wi_alts_json(const struct whatif *w)
{
	json_t *a = json_array();
	for (int i = 0; i < w->nalt; i++) {
		const struct inter_alt *x = &w->alt[i];
		json_array_append_new(a, json_pack("{s:b, s:I, s:i, s:s, s:i, s:i, s:s, s:f, s:f, s:f}", "chosen",
						   x->chosen, "micro_batch", (json_int_t)x->micro_batch,
						   "micro_batches", x->micro, "schedule", cost_sched_name(x->sched),
						   "chunks_per_device", x->v, "stages", x->nstages, "meshes", x->stages,
						   "step_time_s", x->step_time, "vs_plan", x->step_time / w->t_step - 1,
						   "peak_memory_bytes", x->mem_peak));
		inter_alt_json_sync(json_array_get(a, json_array_size(a) - 1), x, w->train);
	}
	return a;
}

json_t *wi_ops_json(const struct wi_stage *st)
{
	json_t *a = json_array();
	for (int i = 0; i < st->nops; i++) {
		const struct intra_note *n = &st->ops[i].n;
		json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:f, s:s}", "op", n->op, "name", n->name, "count",
				      st->ops[i].count, "sharding", n->chosen, "time_s", n->t, "collective", n->coll);
		json_object_set_new(o, "runner_up", isfinite(n->delta) ? json_string(n->runner) : json_null());
		json_object_set_new(o, "runner_up_extra_s", isfinite(n->delta) ? json_real(n->delta) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}
