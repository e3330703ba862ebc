/*
 * lower.h: SPMD lowering and its fusion pass, the one header of
 * compiler/lower/, above compiler.h. It lowers a graph annotated with
 * shardings and reads nothing else of the intra-op pass: the annotated IR
 * is the contract between planning and lowering. The compile pipeline
 * (compile.c, pipeline.c) and the tests include it; its files share
 * lower_internal.h. Errors follow ir.h: negative errno, message in
 * ir_error().
 */
#ifndef PCC_COMPILER_LOWER_H
#define PCC_COMPILER_LOWER_H

#include <stdio.h>

#include "compiler/compiler.h"

/* ---- SPMD lowering (lower*.c) -------------------------------------------
 * Turns a graph annotated with shardings (ir.h: its mesh, every value's
 * sharding, every node's operands'; as intra_pass leaves it, or as the IR
 * text gives them) into one program per device of its mesh
 * (ir/plan.h): local kernels, the collectives the sharding implies on
 * per-axis communicators, buffers placed in per-device arenas by liveness,
 * every parameter and input bound to the slice each device loads, outputs
 * to the slices each device writes. cluster: the spec recorded in the plan.
 * 0, or negative with a message; *out is the caller's (plan_free). */
struct plan;
int lower_single(const struct ir_graph *g, const char *cluster, struct plan **out);

/* Pipelined: stage s runs graph st[s].g (a node range of the whole model,
 * graph_extract) annotated by its own pass, on ranks [first_rank, first_rank
 * + its mesh) (stages take consecutive ranks); values one stage reads from
 * an earlier one are sent between their sub-meshes, each byte once, and
 * assembled on the receiving side. The programs run once per micro-batch. */
struct lower_stage {
	const struct ir_graph *g;   /* annotated with shardings (intra_pass(g, ...)) */
	int first_rank, rows, cols; /* its devices; sub-mesh nodes x devices per node */
	const int *src;             /* per value id of g: the whole graph's value id it
				     * stands for (graph_extract); NULL: g is the whole graph */
};
int lower_plan(const struct ir_graph *whole, const struct lower_stage *st, int nstages, const char *cluster,
	       struct plan **out);
/* A training plan (lower_train.c): the train step ts->g (built
 * with train_opts.grad_scale = 1 / micro) sharded on one stage, st->g ==
 * ts->g. Nodes before ts->update_first become the per-micro-batch part,
 * which adds every gradient into its accumulator (kept as the pass left
 * it: a data-parallel gradient stays a partial sum; with one micro-batch
 * the gradient itself is kept, no accumulator); the rest the
 * per-step part, whose resharding of the accumulators is the once-per-step
 * gradient reduction, followed by the write-back of new parameters and
 * state. Plan inputs are the data inputs, plan state the state inputs
 * (state_init[j] every element's start), outputs "loss" (per micro-batch)
 * and "grad_norm" (per step). Pipelined (nstages > 1, lower_pipe.c): ts
 * built from a forward graph whose nodes carried their stage, st[s].g the
 * stage's nodes (graph_extract_set of the tags s and IR_TAG_ALL), each
 * stage's schedule the step graph's (ir_graph_schedule, 2 * micro
 * entries); every device's per-micro-batch part splits into a forward and
 * a backward part run in that order. */
struct lower_train {
	const struct train_step *ts;
	int micro;
	const double *state_init; /* [ts->nstate] */
	const char *config;       /* the optimizer's options, as text */
};
int lower_train(const struct lower_train *tr, const struct lower_stage *st, int nstages, const char *cluster,
		struct plan **out);

/* lower_plan and lower_train are three passes over one handle, which the
 * compile pipeline (pipeline.c) runs one by one: lower_begin, each stage's
 * program as a template every device of its mesh runs (tr NULL: an
 * inference plan; else lower_train's step); lower_fuse, kernel fusion
 * over each template (lower_fuse.c); lower_memory, frees, buffer offsets
 * and the per-device programs (lower_mem.c), the plan taken out into *out.
 * lower_print writes each stage's template as its first device would run
 * it (plan_print_program's form, before the memory plan). */
struct lowering;
int lower_begin(const struct lower_train *tr, const struct ir_graph *whole, const struct lower_stage *st, int nstages,
		const char *cluster, struct lowering **out);
int lower_fuse(struct lowering *lw);
int lower_memory(struct lowering *lw, struct plan **out);
int lower_print(const struct lowering *lw, FILE *f);
void lower_free(struct lowering *lw); /* NULL: nothing */

#endif
