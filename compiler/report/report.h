/*
 * report.h: manual plans and `pcc report`, the what-if side of
 * compiler/: the one header of compiler/report/ that the rest of the
 * compiler (the driver) and the tests include; its files share
 * report_internal.h.
 */
#ifndef PCC_COMPILER_REPORT_H
#define PCC_COMPILER_REPORT_H

#include <stdio.h>

#include "compiler/compiler.h"

/* ---- manual plans: `pcc report --plan` (compiler/report/) ---------------
 * A Megatron-style plan of one training step: dp data-parallel replicas,
 * tp-way tensor parallelism inside a node, pp pipeline stages cut at
 * layer boundaries with balanced time. The inter-op pass held to it
 * (inter_opts: stages, mesh dp x tp with manual_tp, micro-batches,
 * schedule, recomputation, ZeRO) plans and costs it as it plans the
 * automatic plan (report_auto.c). Device ids: tp fastest, then dp, then
 * pp (Megatron's order). */

struct report_plan {
	int dp, tp, pp;        /* degrees, each >= 1 */
	int mb;                /* micro-batches per step; 0: derived */
	int v;                 /* interleaved: model chunks per device (>= 2) */
	enum cost_sched sched; /* default 1f1b */
	int zero;              /* ZeRO stage 0..3 over the dp replicas */
	int recompute;         /* 1: keep only layer inputs, recompute the rest */
	enum cost_optim optim; /* default adam */
	int prec;              /* enum cost_prec of dots, or -1: bf16 where the
				* device has it, else f16, else f32 */
};
void report_plan_init(struct report_plan *p);
/* "dp=8,tp=8,pp=16,mb=64,schedule=1f1b,zero=1,recompute=0,optim=adam,
 * precision=bf16,v=2"; -EINVAL naming the bad key or value. */
int report_plan_parse(const char *s, struct report_plan *p);

/* `pcc report ...` (report_cli.c): argv[0] is "report"; the exit status.
 * Its usage, as the driver lists it: report_cli_usage (struct cli_usage,
 * cli/cli.h). */
struct cli_usage;
extern const struct cli_usage report_cli_usage;
int report_cli(int argc, char **argv);

#endif
