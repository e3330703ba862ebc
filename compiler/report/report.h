/*
 * report.h: manual-plan reports and `pcc report`, the what-if side of
 * compiler/: the one header of compiler/report/ that the rest of the
 * compiler (the driver) and the tests include; its files share
 * report_internal.h.
 */
#ifndef PCC_COMPILER_REPORT_H
#define PCC_COMPILER_REPORT_H

#include <stdio.h>

#include "compiler/compiler.h"

/* ---- manual-plan reports: `pcc report` (compiler/report/) ---------------
 * Evaluates a Megatron-style plan of one training step under the cost
 * model: dp data-parallel replicas, tp-way tensor parallelism inside a
 * node (report_tp.c says how the graph is split), pp pipeline stages cut
 * at layer boundaries with balanced time. Device ids: tp fastest, then dp,
 * then pp (Megatron's order). */

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

struct report_stage {
	int first, last;           /* its nodes [first, last) (first chunk when interleaved) */
	int layers;                /* layer boundaries (cut points) inside it, + 1 */
	double params;             /* parameter elements on one device */
	double t_fwd, t_bwd;       /* compute per micro-batch, s */
	double t_tp_fwd, t_tp_bwd; /* tensor-parallel collectives per micro-batch, s */
	int n_tp_fwd, n_tp_bwd;    /* how many of them */
	double t_bs_fwd, t_bs_bwd; /* all-reduces of batch statistics over dp per micro-batch, s */
	int n_bs;                  /* batch statistics (forward) */
	double t_recompute;        /* per micro-batch, s (recompute=1) */
	double t_mb;               /* everything per micro-batch, s */
	double t_dp;               /* gradient synchronization per step, s */
	double t_optim;            /* optimizer update per step, s */
	double act_mb;             /* activation bytes kept per micro-batch */
	double inflight;           /* micro-batches held at the peak */
	double send_bytes;         /* activation sent to the next stage per micro-batch */
	double mem_params, mem_grads, mem_optim, mem_act, mem_buffers, mem_total;
};

/* One tensor-parallel collective per micro-batch, for --explain. */
struct report_event {
	char node[96]; /* ONNX node it comes from (or the core op) */
	int stage;
	int fwd; /* 1 forward, 0 backward */
	enum cost_coll coll;
	double bytes, t; /* per device; s */
	const char *why; /* static string */
};

struct report {
	char model[256], cluster[64];
	int nevents;
	struct report_event *events; /* [nevents], ir_malloc'd */
	struct report_plan plan;
	struct cost_device dev;
	int devices;
	enum cost_prec prec;
	bool mixed;                                                     /* 16-bit compute with fp32 master weights */
	int64_t batch;                                                  /* global samples per step */
	int64_t micro_batch;                                            /* samples per micro-batch per replica */
	int mb;                                                         /* micro-batches per step */
	bool batch_chosen;                                              /* the micro-batch size was searched */
	double tokens_per_sample;                                       /* 0 when the model has no token input */
	double params;                                                  /* all parameter elements of the model */
	double fwd_flops;                                               /* one forward pass of one micro-batch */
	double model_flops;                                             /* per step: 3 x forward, no recomputation */
	double hw_flops;                                                /* per step, recomputation included */
	double t_step;                                                  /* s */
	double t_compute, t_tp, t_bstat, t_pp, t_bubble, t_dp, t_optim; /* parts of t_step */
	double samples_per_s, tokens_per_s, tflops_per_device, mfu;
	int peak_stage;  /* the stage with the most memory */
	double mem_peak; /* bytes on its devices */
	bool fits;
	const char *fidelity; /* what is known of the cost model's error here (static) */
	int nstages;
	struct report_stage *stages; /* [nstages], ir_malloc'd */
};

/* Imports model (batch dim bound per the plan; other symbolic dims from
 * imp), evaluates plan p on cluster c with global batch `batch` (0: dp x mb
 * x micro-batch with defaults), fills r. Errors name the model, the plan
 * part or the cluster. cal NULL: default efficiencies. */
int report_evaluate(const char *model, const struct onnx_import_opts *imp, int64_t batch, const struct cost_cluster *c,
		    const struct report_plan *p, const struct cost_calib *cal, struct report *r);
void report_free(struct report *r);
/* Text table, or one JSON object (step_time_s, samples_per_s, mfu,
 * peak_memory_bytes, fits, and the breakdowns). */
int report_print(const struct report *r, bool json, FILE *f);
/* Lists every tensor-parallel collective of one micro-batch with its cause. */
int report_explain(const struct report *r, FILE *f);

/* `pcc report ...` (report_cli.c): argv[0] is "report"; the exit status.
 * Its usage, as the driver lists it: report_cli_usage (struct cli_usage,
 * cli/cli.h). */
struct cli_usage;
extern const struct cli_usage report_cli_usage;
int report_cli(int argc, char **argv);

#endif
