/*
 * compiler.h: the interface of compiler/'s flat files, what the folders
 * above share: plan printing (plan_print.c) and node ranges (extract.c).
 * Beside it, two small headers of flat files that the search, code
 * generation, pcc report and the pipeline include without the rest: jobs
 * on every core (parallel.h) and the status line (progress.h). Depends on
 * ir/, solvers/, the reference kernels (kernels/kernels.h) and ONNX file
 * I/O (onnxio/onnxio.h), and on the sub-folders below it: the cost model
 * (cost/cost.h), ONNX import (frontend/frontend.h), the reference
 * interpreter's graph walk (interp/interp.h) and autodiff with the
 * training step (train/train.h), whose headers it includes. The other
 * sub-folders have their own header, which it does not include: code
 * generation (codegen/codegen.h, over ir/ alone), and the search for a
 * plan (search/search.h: schedules, the intra-op and inter-op passes),
 * SPMD lowering (lower/lower.h) and pcc report (report/report.h), which
 * include this one; above those, the compile pipeline
 * (pipeline/pipeline.h), the command line's pieces (cli/cli.h) and the pcc
 * program (driver/driver.h). Errors follow ir.h: negative errno, message
 * in ir_error().
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

#endif
