/*
 * plan_sim.h: runs every device of a plan together in one process with the
 * reference interpreter's kernels, for tests: each device gets its own
 * arena of arena_bytes and its buffers live at their planned offsets (so a
 * wrong memory plan corrupts results), freed buffers are poisoned with NaN
 * bytes, collectives run when every member of the communicator has reached
 * them, sends are buffered and receives wait for them. Deadlock is an error.
 */
#ifndef PCC_TESTS_PLAN_SIM_H
#define PCC_TESTS_PLAN_SIM_H

#include "compiler/compiler.h"
#include "ir/plan.h"

/* params[i], inputs[i]: the global tensors (plan params and inputs, in
 * order); outputs[] receives p->noutputs allocated tensors assembled from
 * the writers' slices. 0 or negative with a message naming the device and
 * instruction. */
int plan_sim_run(const struct plan *p, const struct ir_tensor *params, const struct ir_tensor *inputs,
		 struct ir_tensor *outputs);

#endif
