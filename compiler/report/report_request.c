/*
 * report_request.c: one what-if request evaluated, whichever plan it
 * names: the planner held to a manual plan (wi_held), or the automatic
 * planner's (wi_auto), both in report_auto.c. `pcc report` (report_cli.c) and its
 * sweeps (report_sweep.c) ask here; the files that fill a struct whatif
 * never call back.
 */
#include <string.h>

#include "compiler/report/report_internal.h"

void wi_request_init(struct wi_request *q)
{
	memset(q, 0, sizeof *q);
	report_plan_init(&q->plan);
	inter_opts_init(&q->inter);
	q->prec = -1;
}

int wi_eval(const struct wi_request *q, const struct cost_cluster *c, struct whatif *w)
{
	memset(w, 0, sizeof *w);
	return q->manual ? wi_held(q, c, w) : wi_auto(q, c, w);
}
