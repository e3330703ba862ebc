/*
 * compiler.h: the interface of compiler/'s flat files (statistics, node
 * ranges, plan printing, the compile pipeline, the pcc driver's building
 * blocks). Depends on ir/, solvers/, the reference kernels
 * (kernels/kernels.h) and ONNX file I/O (onnxio/onnxio.h), and on the
 * sub-folders below it: the cost model (cost/cost.h), ONNX import
 * (frontend/frontend.h), the reference interpreter's graph walk
 * (interp/interp.h) and autodiff with the training step (train/train.h),
 * whose headers it includes. The other sub-folders have their own header,
 * which it does not include: code generation (codegen/codegen.h, over ir/
 * alone), and the search for a plan (search/search.h: schedules, the
 * intra-op and inter-op passes), SPMD lowering (lower/lower.h) and pcc
 * report (report/report.h), which include this one. Errors follow ir.h:
 * negative errno, message in ir_error().
 */
#ifndef PCC_COMPILER_H
#define PCC_COMPILER_H

#include "ir/ir.h"
#include "kernels/kernels.h"
#include "onnxio/onnxio.h"
#include "compiler/cost/cost.h"
#include "compiler/frontend/frontend.h"
#include "compiler/interp/interp.h"
#include "compiler/train/train.h"

/* ---- statistics and `pcc inspect` (compiler/inspect.c) ------------------ */

struct inspect_stats {
	int64_t params; /* elements of floating-point parameters */
	int64_t param_bytes;
	double flops;             /* one forward pass, 2 per multiply-add */
	double dot_flops;         /* the part in dots and convolutions */
	int64_t activation_bytes; /* bytes of all node results (constants excluded) */
	int core_ops[IR_OP_COUNT];
};

void inspect_stats_compute(const struct ir_graph *g, struct inspect_stats *s);
/* Text table, or one JSON object with at least params, param_bytes, flops,
 * onnx_ops, inputs, outputs. */
int inspect_print(const struct ir_graph *g, const struct onnx_model_info *info, bool json, FILE *f);
/* `pcc inspect --train`: what training adds per device without sharding:
 * a gradient per floating point parameter element and the optimizer's
 * state slots (momentum 1, Adam 2), in the parameters' dtype. Text lines,
 * or one JSON object (gradient_bytes, optimizer_state_bytes,
 * train_total_bytes). */
int inspect_print_train(const struct ir_graph *g, enum train_optim optim, bool json, FILE *f);

struct plan;
/* `pcc inspect plan.bin` (plan_print.c): a summary per device, and one
 * device's buffers and program as text. */
int plan_print_summary(const struct plan *p, FILE *f);
int plan_print_device(const struct plan *p, int dev, FILE *f);
/* Device d's buffers and program (d need not be one of p's devices yet:
 * lowering prints its templates so). */
struct plan_device;
int plan_print_program(const struct plan *p, const struct plan_device *d, FILE *f);

/* ---- node ranges (compiler/extract.c) -----------------------------------
 * Nodes [first, last) of g as a graph of their own: inputs are the values
 * the range reads from earlier nodes and g's inputs (named as in g),
 * parameters are g's (same data), outputs the values read after the range
 * or by g's outputs; constant values it reads are recomputed inside it.
 * sig: names and parameter data left out (a signature for comparing
 * ranges). src: when not NULL, *src (ir_free) maps each value id of the
 * new graph to the value id of g it stands for. NULL with a message. */
struct ir_graph *graph_extract(const struct ir_graph *g, int first, int last, bool sig, int **src);
/* Nodes [first, last) as text without names or parameter data (free()):
 * equal for identical layers. NULL when out of memory. */
char *graph_signature(const struct ir_graph *g, int first, int last);
/* The same for the nodes keep[] says, in order (a pipelined train step's
 * stage): outputs are the values other nodes or g's outputs read. */
struct ir_graph *graph_extract_set(const struct ir_graph *g, const bool *keep, int **src);

/* ---- the executable plan (compiler/compile.c, pipeline.c) --------------
 * The inter-op pass's plan lowered to per-device programs (ir/plan.h):
 * each stage's graph at the micro-batch size, sharded by the intra-op pass
 * on its logical mesh, lowered, memory-planned, identified (hashes of the
 * model file and of the options) and checked with plan_verify. The
 * search's plan and options are search/search.h's. */
struct inter_opts;
struct inter_plan;
struct inter_stage;
struct compile_input {
	const char *model;        /* the model file (hashed) */
	const char *cluster_spec; /* as given on the command line */
	const struct cost_cluster *cluster;
	const struct inter_opts *opts; /* what inter_pass ran with (its loader) */
	const struct inter_plan *inter;
	const struct train_opts *train;     /* training plans: the step's options (NULL: defaults) */
	const struct onnx_import_opts *imp; /* what the loader imports with; its constants decide
					     * which input_N.pb feeds each plan input (NULL: none) */
	int *refused;                       /* out, or NULL: on -ENOSPC the stage that does not fit, else -1 */
	const struct compile_read *read;    /* the model file as the caller read it; NULL: compile_finish
					     * reads the file for its hash and input names */
	/* out, or NULL: on success, each stage's memory per device (mem,
	 * mem_state, inflight, mem_act, mem_once of inter->stages[s]) as the
	 * sharding solve lowering laid out states it: the plan's prediction */
	struct inter_stage *stated;
};
/* The model file as the compile pipeline read it (pipeline_model_open). */
struct compile_read {
	uint64_t hash;                 /* its bytes, as plan_hash_file hashes them */
	const struct onnx_model *onnx; /* ONNX: the model unpacked, whose input names decide the
					* input files; NULL: IR text */
};
/* *out: the plan (plan_free). -ENOTSUP for what is not lowered yet
 * (interleaved 1F1B training schedules), with a message saying so. The
 * graph comes from in->opts->load at the plan's micro-batch size; the
 * passes below run in a row, as the compile pipeline runs them
 * (compiler/pipeline.c), without dumps. */
int compile_lower(const struct compile_input *in, struct plan **out);

/* compile_lower's passes (compiler/compile.c), on one handle: compile_new
 * takes forward graph g (also on error; compile_free frees the handle).
 * compile_autodiff (training plans only) builds the train step;
 * compile_lower_stages solves each stage's sharding (the first time) and
 * lowers the stages (lower_begin); compile_fuse, compile_memory: lowering's
 * fusion and memory plan, the plan then stamped with what shaped it;
 * compile_refit: 1 when a training stage whose arena is over the limit was
 * solved again (lower, fuse and memory run again), 0 when the plan stands;
 * compile_finish: the memory each device has recorded and every arena
 * checked against it, the model's path and hash and the input files
 * recorded, the plan taken out into *out. On -ENOSPC,
 * *in->refused names the stage that does not fit. compile_graph: the graph
 * being lowered (the forward graph or the train step); compile_lowering,
 * compile_plan: what the last pass made (NULL: nothing yet). */
struct compile;
int compile_new(const struct compile_input *in, struct ir_graph *g, struct compile **out);
int compile_autodiff(struct compile *c);
int compile_lower_stages(struct compile *c);
int compile_fuse(struct compile *c);
int compile_memory(struct compile *c);
int compile_refit(struct compile *c);
int compile_finish(struct compile *c, struct plan **out);
const struct ir_graph *compile_graph(const struct compile *c);
const struct lowering *compile_lowering(const struct compile *c);
const struct plan *compile_plan(const struct compile *c);
void compile_free(struct compile *c);

#endif
