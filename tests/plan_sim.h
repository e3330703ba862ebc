/*
 * plan_sim.h: runs every rank of a plan together in one process, for
 * tests: one thread per rank runs pcc-run's own executor (runtime/rt.h,
 * with the reference kernels) and the ranks talk through the in-process
 * communication table (runtime/comm_local.c). Each rank gets its own arena
 * of arena_bytes and its buffers live at their planned offsets (so a wrong
 * memory plan corrupts results); the arena starts as NaN bytes and freed
 * buffers are poisoned with them again. Deadlock is an error.
 */
#ifndef PCC_TESTS_PLAN_SIM_H
#define PCC_TESTS_PLAN_SIM_H

#include "compiler/compiler.h"
#include "ir/plan.h"

/* params[i], inputs[i]: the global tensors (plan params and inputs, in
 * order); outputs[] receives p->noutputs allocated tensors assembled from
 * the writers' slices (rank 0 gathers them, as pcc-run does). 0 or
 * negative with a message naming the rank and instruction. A plan of
 * several micro-batches a step is refused (plan_sim_step). */
int plan_sim_run(const struct plan *p, const struct ir_tensor *params, const struct ir_tensor *inputs,
		 struct ir_tensor *outputs);

/* A training plan step by step: plan_sim_new loads the parameters and sets
 * state to its init. plan_sim_step zeroes the accumulators, runs the
 * per-micro-batch part p->micro times, micro-batch k on inputs[k *
 * ninputs ...] with its outputs into outputs[k * noutputs ...], then the
 * per-step part, whose outputs go into the last micro-batch's slots (slots
 * not written have data NULL). plan_sim_params assembles the parameters
 * from the ranks' slices; copies that differ between ranks are an error
 * naming them. */
struct plan_sim;
struct plan_sim *plan_sim_new(const struct plan *p, const struct ir_tensor *params);
int plan_sim_step(struct plan_sim *s, const struct ir_tensor *inputs, struct ir_tensor *outputs);
int plan_sim_params(struct plan_sim *s, struct ir_tensor *params);
void plan_sim_free(struct plan_sim *s);

#endif
