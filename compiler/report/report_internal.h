/*
 * report_internal.h: what the report's files share.
 *
 * Manual plans: parsed, their batch and devices resolved (report.c).
 *
 * What-if reports (`pcc report` as a whole, report_cli.c): a plan's
 * figures as one struct whatif (report_whatif.c), filled from the
 * planner's plan, automatic or held to a manual plan (report_auto.c); text, JSON and comparisons
 * (report_text.c); one step on the schedule simulator as a timeline
 * (report_timeline.c) and a Chrome trace (report_trace.c); sweeps
 * (report_sweep.c, report_sweep_print.c); pictures with cairo
 * (report_chart.c, report_chart_draw.c, report_chart_sweep.c) and the
 * HTML page (report_html.c).
 */
#ifndef PCC_REPORT_INTERNAL_H
#define PCC_REPORT_INTERNAL_H

#include <jansson.h>

#include "compiler/report/report.h"
#include "compiler/search/search.h"

/* What is known of the cost model's error on device d (report_fidelity.c):
 * one sentence quoting a measurement in benchmarks/results/. */
const char *report_fidelity(const struct cost_device *d, const struct cost_calib *cal);

/* Samples per micro-batch and micro-batches per step of a manual plan,
 * for a static batch dim of size b0 (the model's batch is a micro-batch,
 * split over the dp replicas, as in an automatic plan) or a symbolic one
 * (b0 == 0), global batch `batch` (0: mb micro-batches, of one sample per
 * replica where the batch is symbolic): one candidate, or where the
 * micro-batch size is left to choose, every divisor of the samples per
 * replica keeping at least pp micro-batches (interleaved: a multiple of
 * pp). */
struct report_batch {
	int64_t batch;    /* global samples per step */
	int n;            /* candidates */
	int64_t cand[64]; /* samples per micro-batch per replica */
	int mb[64];       /* micro-batches per step */
};
int report_resolve_batch(const struct report_plan *p, int64_t b0, int64_t batch, struct report_batch *bp);

/* Plan p's axes on cluster c (tp fastest, then dp, then pp), or -EINVAL
 * naming the axis the cluster cannot lay out. */
int report_plan_axes(const struct report_plan *p, const struct cost_cluster *c, struct cost_axis axes[3]);
/* The cluster plan p runs on: c, or its first dp x tp x pp devices (whole
 * nodes, or part of one node) as a cluster of their own with c's name;
 * -EINVAL naming what does not fit. */
int report_plan_cluster(const struct report_plan *p, const struct cost_cluster *c, struct cost_cluster *sub);

/* Tokens per sample: the second dim of the first integer rank-2 input
 * (token ids), 0 when there is none. */
double report_tokens_per_sample(const struct ir_graph *g);

/* ---- what-if reports (report_whatif.c, report_auto.c, report_cli.c) -----
 * Whatever made a plan (the planner held to a manual Megatron-style one,
 * or the automatic planner), its figures come into one
 * struct whatif, which the printers, comparisons, traces, sweeps, charts
 * and pages read. Every number is the cost model's: nothing is re-derived
 * here that the model does not compute. */

#define WI_MAX_PARTS 12

/* One part of the step time, s per step; the parts add up to t_step. */
struct wi_part {
	char key[24];   /* JSON and CSV key: "compute", "comm_axis0", ... */
	char label[64]; /* for people: "communication, mesh axis 0" */
	double s;
};

enum wi_mem { WI_MEM_PARAMS, WI_MEM_GRADS, WI_MEM_OPTIM, WI_MEM_ACT, WI_MEM_WORK, WI_MEM_COUNT };
extern const char *const wi_mem_key[WI_MEM_COUNT];   /* "params", ... "workspace" */
extern const char *const wi_mem_label[WI_MEM_COUNT]; /* "parameters", ... */

/* One op of a stage's plan: the intra-op pass's note on it and
 * how many such ops (equal in kind, sharding and cost: the same op of
 * repeated blocks) the stage runs per micro-batch. */
#define WI_MAX_OPS 8
struct wi_op {
	struct intra_note n;
	int count;
};

struct wi_stage {
	char mesh[48];   /* "4x4 on a 2x8 sub-mesh" or "dp 8 x tp 8" */
	int devices;     /* devices running it */
	int first, last; /* layers [first, last] */
	bool recompute, zero;
	double t_fwd, t_bwd;      /* s per micro-batch, all of the device's chunks */
	double comm_frac;         /* the part of t_fwd and t_bwd that is collectives */
	double t_xfer;            /* s per transfer to the next stage (one direction) */
	double t_sync;            /* s per step: gradient reduction left exposed */
	double t_optim;           /* s per step: optimizer update */
	double inflight;          /* micro-batches of activations held at the peak */
	double mem[WI_MEM_COUNT]; /* bytes per device */
	double mem_total;
	struct wi_op ops[WI_MAX_OPS]; /* the costliest ops per micro-batch
				       * (time x count), costliest first */
	int nops, ops_total;          /* shown, and ops in the stage's distinct layers */
};

struct whatif {
	char label[96]; /* "auto", "dp=8,tp=8,pp=16" */
	char model[256], cluster[64], device[80];
	bool manual, train;
	struct report_plan plan; /* manual: the plan */
	int devices;
	enum cost_prec prec;
	enum cost_optim optim;
	enum cost_sched sched;
	int v;                      /* chunks per device (interleaved), else 1 */
	int micro;                  /* micro-batches per step */
	int64_t batch, micro_batch; /* global samples per step; per micro-batch (per replica, manual) */
	int nstages;
	struct wi_stage *stages; /* [nstages], ir_malloc'd */
	double t_step;           /* s */
	int nparts;
	struct wi_part part[WI_MAX_PARTS];
	double params; /* parameter elements of the model */
	double samples_per_s, tokens_per_sample, tokens_per_s;
	double model_flops, hw_flops; /* per step: without and with recomputation */
	double tflops_per_device, mfu, peak_flops;
	double mem_capacity, mem_limit, mem_peak; /* bytes per device */
	int peak_stage;
	bool fits;
	double price; /* per GPU-hour; 0: none given */
	double cost_per_step, cost_per_mtokens, cost_per_msamples;
	double search_s;                      /* automatic: wall time of the planner */
	int nskipped;                         /* automatic: candidates the planner skipped */
	double residual;                      /* automatic: |re-solved stage time - plan's| / plan's, worst stage */
	const char *fidelity;                 /* report_fidelity's sentence (static) */
	struct inter_alt alt[INTER_MAX_ALTS]; /* automatic: the fastest plans weighed */
	int nalt, nweighed;
};
void wi_free(struct whatif *w);
/* Appends a part (key, label, s); a full table is a bug. */
void wi_add_part(struct whatif *w, const char *key, const char *label, double s);
/* The step time's parts in groups that mean the same in every plan, the
 * rows of a comparison: an automatic plan's collectives per mesh axis and
 * a manual plan's tensor-parallel and batch-statistics ones are all
 * "collectives inside the micro-batches"; the gradient reduction left
 * exposed is one row however the plan's axes split it. */
enum wi_group {
	WI_GROUP_COMPUTE,
	WI_GROUP_RECOMPUTE,
	WI_GROUP_COLL,
	WI_GROUP_TRANSFERS,
	WI_GROUP_BUBBLE,
	WI_GROUP_SYNC,
	WI_GROUP_OPTIM,
	WI_GROUP_COUNT
};
extern const char *const wi_group_label[WI_GROUP_COUNT];
/* s of w's parts in group g. */
double wi_group_time(const struct whatif *w, enum wi_group g);
/* Fills throughput, FLOP/s, MFU, cost from t_step and the rest. */
void wi_finish(struct whatif *w, double price);

/* What to evaluate: one plan of one model, on a cluster given apart. */
struct wi_request {
	const char *model;
	const struct onnx_import_opts *imp;
	const struct cost_calib *cal; /* not NULL */
	int64_t batch;                /* --batch; 0: the plan's default */
	bool manual;
	struct report_plan plan; /* manual */
	struct inter_opts inter; /* automatic: the planner's options (load, ctx, static_batch,
				  * prec are set per evaluation) */
	int prec;                /* automatic, training: --precision as enum cost_prec, or -1 */
	double price;            /* per GPU-hour, 0: none */
	char label[96];
};
/* q's defaults (report_request.c): a manual plan's (report_plan_init),
 * the planner's (inter_opts_init), no precision given. */
void wi_request_init(struct wi_request *q);
/* q's plan on c as w: the planner held to the manual plan (wi_held), or
 * the automatic planner's (wi_auto); w zeroed first. */
int wi_eval(const struct wi_request *q, const struct cost_cluster *c, struct whatif *w);
/* The automatic planner's plan of q on c, with its breakdown (report_auto.c). */
int wi_auto(const struct wi_request *q, const struct cost_cluster *c, struct whatif *w);
/* q's manual plan on c: the same planner held to the plan's choices, its
 * breakdown filled as wi_auto fills the automatic plan's (report_auto.c). */
int wi_held(const struct wi_request *q, const struct cost_cluster *c, struct whatif *w);

/* Text and JSON of one what-if, and of two side by side with deltas. */
int wi_print(const struct whatif *w, FILE *f);
json_t *wi_json(const struct whatif *w);
int wi_compare_print(const struct whatif *a, const struct whatif *b, FILE *f);
json_t *wi_compare_json(const struct whatif *a, const struct whatif *b);
/* --explain of an automatic plan (report_explain.c): the plans the search
 * weighed against it and each stage's costliest ops with their runner-up
 * shardings; the same as JSON members "alternatives" and stages' "ops". */
int wi_explain(const struct whatif *w, FILE *f);
json_t *wi_alts_json(const struct whatif *w);
json_t *wi_ops_json(const struct wi_stage *st);
/* Writes o to path (or stdout for NULL), indented; -EIO naming the file. */
int wi_json_write(json_t *o, const char *path);
/* An output file can be created: its folder exists and is writable, it
 * is not a folder; -EINVAL/-EACCES naming it. */
int wi_check_writable(const char *opt, const char *path);
/* "1.234 s", "12.345 ms", "5.6 us" */
const char *wi_secs(double t, char *b, size_t n);

/* ---- the step on the schedule simulator (report_timeline.c) ------------- */

/* The pipeline part of w's step (forwards, backwards and transfers of
 * every micro-batch, no once-per-step work) on the schedule simulator:
 * virtual stage k runs stage k % p's t_fwd / v and t_bwd / v, and crosses
 * to k + 1 in stage k % p's t_xfer (0 when xfer is false). */
int wi_pipeline_time(const struct whatif *w, bool xfer, double *t);

enum wi_span_kind {
	WI_SPAN_FWD,       /* forward compute of (micro-batch, chunk) */
	WI_SPAN_BWD,       /* backward compute (recomputation included) */
	WI_SPAN_COLL,      /* the collectives inside a forward or backward */
	WI_SPAN_RECV_ACT,  /* an activation arriving from the stage before */
	WI_SPAN_RECV_GRAD, /* a gradient arriving from the stage after */
	WI_SPAN_SYNC,      /* the gradient reduction left exposed */
	WI_SPAN_OPTIM,     /* the optimizer update */
	WI_SPAN_IDLE,      /* nothing runs: bubble, waits */
	WI_SPAN_COUNT
};
extern const char *const wi_span_name[WI_SPAN_COUNT];

/* One interval on one stage's devices, s from the start of the step. */
struct wi_span {
	enum wi_span_kind kind;
	int stage, mb, chunk; /* mb, chunk: -1 where none */
	double t0, t1;
};

struct wi_timeline {
	int nstages;
	int n, cap;
	struct wi_span *span; /* ir_malloc'd, in order of start per stage */
	double t_pipe;        /* s: the simulator's step time of the pipeline */
	double t_step;        /* s: with the once-per-step work */
};
/* Every op of the schedule with its start and end, replayed by the rules
 * sched_simulate states (compute takes its time, sends are free and never
 * block, a receive ends at its send plus the transfer), after
 * sched_simulate has checked the orders; a forward or backward is split
 * into compute, then its collectives (comm_frac); then per stage its
 * exposed gradient reduction and optimizer update; idle spans fill what
 * is left of [0, t_step] on each stage. t_pipe is the simulator's. */
int wi_timeline_build(const struct whatif *w, struct wi_timeline *tl);
void wi_timeline_free(struct wi_timeline *tl);
/* A step of WI_TIMELINE_ZOOM or more micro-batches is drawn three times:
 * whole, and its start and its end zoomed in, so that each op is wide
 * enough to see. The panels w's timeline chart has (1 or 3). */
#define WI_TIMELINE_ZOOM 32
#define WI_TIMELINE_KEEP 4 /* micro-batches a zoomed window holds past the fill, or before the drain */
int wi_timeline_panels(const struct whatif *w);
/* The two zoomed windows [lo, hi]: the start, until the last stage ends
 * the forward of micro-batch WI_TIMELINE_KEEP - 1 (the fill and the first
 * micro-batches), and the end, from the first start of a backward (a
 * forward for inference) of the last WI_TIMELINE_KEEP micro-batches on
 * any stage; -EINVAL where they would not be shorter than the step. */
int wi_timeline_zoom(const struct whatif *w, const struct wi_timeline *tl, double lo[2], double hi[2]);

/* ---- Chrome trace (report_trace.c) ---------------------------------------- */

/* The timelines of n what-ifs (wi_timeline_build) as one Chrome
 * trace-event file: a process per stage (what-if i's stages numbered from
 * i * 1000), a thread per stream (compute, collectives, receives, gradient
 * sync), "X" events in microseconds that never overlap on one thread. */
int wi_trace_write(const struct whatif *const *w, int n, const char *path);
json_t *wi_trace_json(const struct whatif *const *w, int n);

/* ---- sweeps (report_sweep.c) ------------------------------------------------ */

enum wi_sweep_kind {
	WI_SWEEP_GPUS, /* gpus=LO..HI: powers of two, nodes of the cluster's kind */
	WI_SWEEP_TPPP, /* tp,pp: every power-of-two split of the cluster's devices */
	WI_SWEEP_SENS, /* sensitivity: links' bandwidth and latency, devices' FLOP/s x0.5, x2 */
	WI_SWEEP_COUNT
};

struct wi_sweep {
	enum wi_sweep_kind kind;
	int lo, hi; /* gpus */
};
/* "gpus=8..1024", "tp,pp", "sensitivity"; -EINVAL naming what is wrong. */
int wi_sweep_parse(const char *s, struct wi_sweep *sw);

struct wi_point {
	char name[48];        /* "64 gpus", "tp=2 pp=4", "bandwidth x2" */
	int gpus, dp, tp, pp; /* dp, tp, pp: manual plans and tp,pp; else 0 */
	char knob[16];        /* sensitivity: "base", "bandwidth", "latency", "flops" */
	double factor;        /* sensitivity: 0.5, 1 or 2 */
	bool ok;              /* evaluated; else err says why */
	char err[400];
	struct whatif w;
};

struct wi_sweep_result {
	struct wi_sweep sw;
	int n;
	struct wi_point *pt; /* [n] */
	int base;            /* the point of the cluster as given, or -1 */
	int best;            /* the fastest point that fits, or -1 */
};
int wi_sweep_run(const struct wi_sweep *sw, const struct wi_request *q, const struct cost_cluster *c,
		 struct wi_sweep_result *r);
void wi_sweep_free(struct wi_sweep_result *r);
int wi_sweep_print(const struct wi_sweep_result *r, FILE *f);
json_t *wi_sweep_json(const struct wi_sweep_result *r);
int wi_sweep_csv(const struct wi_sweep_result *r, const char *path);

/* ---- pictures (report_chart.c, report_html.c) ------------------------------- */

enum wi_chart {
	WI_CHART_STEPS,    /* the step-time stack of each plan */
	WI_CHART_MEMORY,   /* memory per stage by kind, against capacity */
	WI_CHART_TIMELINE, /* one step per stage on the simulator */
	WI_CHART_SWEEP,    /* the sweep's chart */
	WI_CHART_COUNT,
	WI_CHART_ALL = WI_CHART_COUNT /* the sweep's, or the three of the plans */
};

/* A sweep's chart when sw is given, else the step-time stack, memory per
 * stage and timeline of the n what-ifs, to path as SVG or PNG (cairo). */
int wi_chart_write(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, const char *path, bool png);
/* One chart (enum wi_chart) as PNG bytes in memory (*buf ir_malloc'd). */
int wi_chart_png(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, int which, unsigned char **buf,
		 size_t *len);
/* The charts' palette: one colour per meaning, the same in every chart
 * (and the HTML page's key). Red means one thing: worse than allowed or
 * than the base (does not fit, over the device's memory, slower). */
enum chart_ink {
	INK_COMPUTE,     /* compute; a forward */
	INK_BACKWARD,    /* a backward (compute, a lighter shade) */
	INK_RECOMPUTE,   /* recomputation */
	INK_COLL,        /* collectives inside the micro-batches */
	INK_TRANSFER,    /* pipeline transfers; an activation received */
	INK_RECV_GRAD,   /* a gradient received (a lighter shade) */
	INK_SYNC,        /* gradient sync left exposed */
	INK_OPTIM,       /* the optimizer step */
	INK_IDLE,        /* pipeline bubble; idle */
	INK_PARAMS,      /* memory: parameters */
	INK_GRADS,       /* memory: gradients */
	INK_OPTIM_STATE, /* memory: optimizer state */
	INK_ACT,         /* memory: activations */
	INK_WORK,        /* memory: buffers and workspace */
	INK_THROUGHPUT,  /* samples/s */
	INK_MFU,         /* MFU */
	INK_IDEAL,       /* linear scaling */
	INK_WORSE,       /* does not fit, the device's capacity, slower */
	INK_LIMIT,       /* the planner's memory limit */
	INK_BETTER,      /* faster than the base */
	INK_COUNT
};
extern const unsigned chart_ink_rgb[INK_COUNT];     /* 0xRRGGBB */
extern const char *const chart_ink_name[INK_COUNT]; /* its meaning in words */
extern const enum chart_ink chart_group_ink[WI_GROUP_COUNT];
extern const enum chart_ink chart_mem_ink[WI_MEM_COUNT];
extern const enum chart_ink chart_span_ink[WI_SPAN_COUNT];

/* One self-contained HTML page: tables and the charts as base64 PNG. */
int wi_html_write(const struct whatif *const *w, int n, const struct wi_sweep_result *sw, const char *path);

#if PCC_HAVE_CAIRO
#include <cairo.h>

/* ---- drawing (report_chart_draw.c, report_chart_sweep.c) ---- */

struct box {
	double x, y, w, h; /* device units (pixels at 1:1) */
};

struct chart_in {
	const struct whatif *const *w;
	int n;
	const struct wi_sweep_result *sw; /* may be NULL */
};

void chart_steps(cairo_t *cr, const struct chart_in *in, struct box b);
void chart_memory(cairo_t *cr, const struct chart_in *in, struct box b);
void chart_timeline(cairo_t *cr, const struct chart_in *in, struct box b);
void chart_sweep(cairo_t *cr, const struct chart_in *in, struct box b);

/* Text at (x, y) (baseline), aligned -1 left, 0 centre, 1 right. */
void chart_text(cairo_t *cr, double x, double y, int align, double size, bool bold, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
/* The palette's colour of a meaning (enum chart_ink). */
void chart_color(cairo_t *cr, enum chart_ink k);
/* A tick step near max / n: 1, 2 or 5 times a power of ten. */
double chart_tick(double max, int n);
/* A box's title, and the legend's swatch and label at (x, y). */
void chart_title(cairo_t *cr, struct box b, const char *title);
double chart_legend(cairo_t *cr, double x, double y, enum chart_ink color, const char *label);
#endif

#endif
