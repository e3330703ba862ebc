/*
 * pipeline.h: the one header of compiler/pipeline/: the compile pipeline
 * of `pcc MODEL --cluster C` (pipeline.c), its passes by name, the model
 * loader the search and lowering share, and lowering's passes on one
 * handle (compile.c). Above the search (search/search.h), lowering
 * (lower/lower.h) and code generation (codegen/codegen.h), none of which
 * includes it; the driver, pcc report's automatic plan (the loader,
 * report/report_auto.c) and the tests do.
 */
#ifndef PCC_PIPELINE_H
#define PCC_PIPELINE_H

#include <stdio.h>

#include "compiler/codegen/codegen.h"
#include "compiler/compiler.h"
#include "compiler/search/search.h"
#include "ir/plan.h"

/* The passes in the order they run (PIPELINE_PASSES names them). */
enum pipeline_pass {
	PASS_SEARCH,   /* stages, meshes, micro-batches, schedule (inter_pass) */
	PASS_IMPORT,   /* the model at the chosen micro-batch size */
	PASS_AUTODIFF, /* training: the train step */
	PASS_LOWER,    /* each stage's sharding, lowered to a template program */
	PASS_FUSION,   /* kernel fusion over each template */
	PASS_MEMORY,   /* frees, buffer offsets, per-device programs */
	PASS_CODEGEN,  /* host code or PTX for every kernel */
	PASS_WRITE,    /* plan.bin written, read back and checked (or -o FILE.txt) */
	PASS_COUNT
};
#define PIPELINE_PASSES "search, import, autodiff, lower, fusion, memory, codegen, write"

const char *pipeline_pass_name(enum pipeline_pass p);
/* --dump-after=LIST (names separated by commas, or "all") into *mask (a
 * bit per pass, added); -EINVAL naming the valid names. */
int pipeline_dump_parse(const char *list, unsigned *mask);

/* A model file read once, and how to import it: ONNX (onnx: the file
 * unpacked; imp: --dim, --const and updates; bname: its symbolic batch
 * dimension, "" when none) or pcc's IR text (a name ending in ".ir";
 * text: the file's text). */
struct pipeline_model {
	const char *path;
	const struct onnx_import_opts *imp;
	char bname[128];
	struct onnx_model *onnx;
	char *text;
	uint64_t hash; /* the file's bytes as read (a plan's model_hash) */
};
/* Reads path once into *m, and the model's batch: when fixed, *batch > 0
 * (IR text: its first input's first dimension); else 0 with m->bname
 * naming its symbolic batch dimension. imp stays the caller's (the
 * pipeline changes its updates between the search and lowering).
 * Negative with a message naming the file; pipeline_model_close frees
 * what it read (graphs built from it keep what they need). */
int pipeline_model_open(struct pipeline_model *m, const char *path, const struct onnx_import_opts *imp, int64_t *batch);
void pipeline_model_close(struct pipeline_model *m);
/* The model with its batch bound to b (when bname names one), else as
 * given, built from what pipeline_model_open read, without the file; NULL
 * with a message. As inter_opts.load, ctx a pipeline_model: the search
 * builds each micro-batch size it weighs through it, and lowering the
 * size it chose. */
struct ir_graph *pipeline_load(void *ctx, int64_t b);

struct pipeline_input {
	const char *model;        /* ONNX, or IR text (.ir) */
	const char *cluster_spec; /* as given */
	const struct cost_cluster *cluster;
	struct inter_opts *opts;            /* the search's options; the pipeline sets load, ctx,
					     * static_batch, cache and refused */
	const struct onnx_import_opts *imp; /* --dim, --const */
	const struct train_opts *train;     /* --train: the step's options; NULL: inference */
	const char *out;                    /* -o plan.bin or FILE.txt; NULL: the search only */
	/* plan.bin: the code generator (codegen_plan: the driver links LLVM,
	 * the library does not), what code it generates, that in words (host,
	 * ptx, all or none) */
	int (*codegen)(struct plan *p, const struct codegen_opts *o);
	const struct codegen_opts *cg;
	const char *cg_name;
	const struct plan_key *key; /* sign plan.bin under it; NULL: unsigned */
	unsigned dump;              /* passes to dump after (1 << PASS_x) */
	const char *dump_dir;       /* dumps as files NN-PASS.ir|txt here; NULL: stdout */
};

struct pipeline_result {
	struct inter_plan plan; /* the search's plan (inter_plan_free) */
	struct plan *written;   /* -o plan.bin: the plan as read back (plan_free), else NULL */
};

/* Runs the passes in order: 0, or negative with a message naming the
 * model. On success r->plan is the caller's, and r->written when -o
 * wrote plan.bin. */
int pipeline_compile(const struct pipeline_input *in, struct pipeline_result *r);

/* ---- the executable plan (compile.c, pipeline.c) -----------------------
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
 * (pipeline.c), without dumps. */
int compile_lower(const struct compile_input *in, struct plan **out);

/* compile_lower's passes (compile.c), on one handle: compile_new
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
