/*
 * interp.h: the reference interpreter's graph walk, the one header of
 * compiler/interp/. It builds on ir/ and the reference kernels alone and
 * calls nothing else of the compiler; compiler.h includes it for the rest
 * (pcc eval, pcc train's steps, the tests). Errors follow ir.h: negative
 * errno, message in ir_error().
 */
#ifndef PCC_COMPILER_INTERP_H
#define PCC_COMPILER_INTERP_H

#include <stdbool.h>

#include "ir/ir.h"

/* ---- the graph walk (interp_run.c) ---------------------------------------
 * Runs any verified graph on the CPU, node by node, through the reference
 * kernels (kernels/kernels.h: interp_node, interp_load_param). It is the
 * oracle for every later path. */

/* Runs the whole graph. inputs[i] feeds ir_graph_input(g, i) and must
 * match its dtype and shape; outputs[] receives ir_graph_noutputs(g)
 * allocated tensors. Intermediate values are freed after their last use. */
int interp_run(const struct ir_graph *g, const struct ir_tensor *inputs, struct ir_tensor *outputs);
/* As interp_run, with params[i] (when params and params[i] are not NULL)
 * used instead of the bytes of ir_graph_param(g, i): a trainer's current
 * weights. Inputs and params are read in place, never freed. */
int interp_run_with(const struct ir_graph *g, const struct ir_tensor *inputs, const struct ir_tensor *const *params,
		    struct ir_tensor *outputs);
/* Runs nodes [first, last) of g over a value table the caller owns:
 * vals[v] holds value id v where present[v]. Operands must be present or be
 * params (then loaded). Results become present. A value not in keep[] is
 * freed after its last reader in g when that reader runs here, and at once
 * when nothing reads it; kept values are the caller's to free. */
int interp_run_range(const struct ir_graph *g, int first, int last, struct ir_tensor *vals, bool *present,
		     const bool *keep);

#endif
