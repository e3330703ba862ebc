/*
 * driver.h: the one header of compiler/driver/, the pcc program: its
 * commands and their dispatch (main.c) and `pcc inspect`'s statistics
 * (inspect.c). The top of compiler/: it includes the command line's
 * pieces (cli/cli.h), the compile pipeline (pipeline/pipeline.h) and pcc
 * report (report/report.h); no other folder includes it.
 */
#ifndef PCC_DRIVER_H
#define PCC_DRIVER_H

#include <stdbool.h>
#include <stdio.h>

#include "compiler/compiler.h"

/* ---- statistics and `pcc inspect` (inspect.c) --------------------------- */

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

#endif
