/*
 * compiler.h: the one interface of compiler/ (ONNX import, reference
 * interpreter, tensor I/O, statistics, the pcc driver's building blocks).
 * Depends on ir/ only. Errors follow ir.h: negative errno, message in
 * ir_error().
 */
#ifndef PCC_COMPILER_H
#define PCC_COMPILER_H

#include "ir/ir.h"
#include "compiler/cost.h"

/* ---- ONNX import (compiler/onnx_*.c) --------------------------------- */

struct onnx_dim_binding {
	const char *name; /* symbolic dimension name (dim_param) */
	int64_t value;
};

/* A graph input replaced by a constant at import (e.g. a shape tensor that
 * a model takes as input), so what depends on it folds. */
struct onnx_const_input {
	const char *name;
	struct ir_tensor value; /* must match the input's dtype and shape */
};

struct onnx_import_opts {
	const struct onnx_dim_binding *dims; /* --dim NAME=VALUE */
	int ndims;
	const struct onnx_const_input *consts;
	int nconsts;
};
void onnx_import_opts_init(struct onnx_import_opts *o);

/* Statistics of the ONNX file itself, filled by the importer. */
struct onnx_model_info {
	int64_t opset;            /* default-domain opset */
	const char *producer;     /* arena string or NULL */
	int nops;                 /* distinct ONNX op types */
	const char **op_names;    /* [nops], sorted by name */
	int *op_counts;           /* [nops] */
};

/* Reads path, decomposes it into core ops and folds shape computations.
 * Never reads external weight data. On error returns NULL with a message
 * "FILE: node \"NAME\" (OP): what is wrong" in ir_error(). info may be NULL;
 * its arrays live in the graph's arena. */
struct ir_graph *onnx_import(const char *path, const struct onnx_import_opts *o,
			     struct onnx_model_info *info);

/* TensorProto files (the ONNX backend-test layout input_N.pb/output_N.pb).
 * read: t->data is ir_malloc'd; *name (may be NULL) is ir_malloc'd too. */
int onnx_tensor_read(const char *path, struct ir_tensor *t, char **name);
int onnx_tensor_write(const char *path, const struct ir_tensor *t, const char *name);

/* ---- reference interpreter (compiler/interp*.c) --------------------------
 * Runs any verified graph on the CPU, simply and exactly: floating point
 * math in f64 per element (f32 results rounded once), dots through OpenBLAS
 * (dgemm for f64, sgemm for f32 with results checked by the conformance
 * tests), integers in int64. It is the oracle for every later path. */

/* Evaluates node n: in[] holds n->nin tensors matching its operand types;
 * out[] receives n->nout freshly allocated tensors. 0 or negative error
 * (e.g. -ERANGE for an index out of bounds, message names the op). */
int interp_node(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out);

/* Loads a parameter's bytes (inline or external file) into t (allocated).
 * -ENOENT / -EIO with a message naming the file when external data is
 * missing or short. */
int interp_load_param(const struct ir_value *v, struct ir_tensor *t);

/* Runs the whole graph. inputs[i] feeds ir_graph_input(g, i) and must
 * match its dtype and shape; outputs[] receives ir_graph_noutputs(g)
 * allocated tensors. Intermediate values are freed after their last use. */
int interp_run(const struct ir_graph *g, const struct ir_tensor *inputs,
	       struct ir_tensor *outputs);

/* ---- statistics and `pcc inspect` (compiler/inspect.c) ------------------ */

struct inspect_stats {
	int64_t params;           /* elements of floating-point parameters */
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

#endif
