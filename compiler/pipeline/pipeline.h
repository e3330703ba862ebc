/*
 * pipeline.h: the compile pipeline of `pcc MODEL --cluster C` (pipeline.c),
 * its passes by name, and the model loader the search and lowering share.
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

#endif
