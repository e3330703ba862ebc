/*
 * frontend.h: ONNX import, the one header of compiler/frontend/. The
 * importer's files build on ir/ and onnxio/ alone and call nothing else of
 * the compiler; compiler.h includes this header for the rest of it (the
 * driver, the report, the tests), and the files share onnx_internal.h.
 * Errors follow ir.h: negative errno, message in ir_error().
 */
#ifndef PCC_COMPILER_FRONTEND_H
#define PCC_COMPILER_FRONTEND_H

#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"
#include "onnxio/onnxio.h"

/* ---- ONNX import (onnx_*.c) ---------------------------------------------- */

struct onnx_dim_binding {
	const char *name; /* symbolic dimension name (dim_param) */
	int64_t value;
};

/* A graph input replaced by a constant at import (e.g. a shape tensor that
 * a model takes as input), so what depends on it folds. A name that is no
 * input of the model is an error. */
struct onnx_const_input {
	const char *name;
	struct ir_tensor value; /* must match the input's dtype and its shape where the
				 * model fixes it (a symbolic dimension not bound by
				 * --dim takes the constant's size) */
	const char *from;       /* where the value came from, for messages (pcc --const's
				 * "NAME=FILE"); NULL: none */
};

struct onnx_import_opts {
	const struct onnx_dim_binding *dims; /* --dim NAME=VALUE */
	int ndims;
	const struct onnx_const_input *consts;
	int nconsts;
	bool updates; /* keep state updates (BatchNorm's running statistics in
		       * training mode) as ir_graph updates; training sets it */
};
void onnx_import_opts_init(struct onnx_import_opts *o);

/* Statistics of the ONNX file itself, filled by the importer. */
struct onnx_model_info {
	int64_t opset;         /* default-domain opset */
	const char *producer;  /* arena string or NULL */
	int nops;              /* distinct ONNX op types */
	const char **op_names; /* [nops], sorted by name */
	int *op_counts;        /* [nops] */
};

/* Reads path, decomposes it into core ops and folds shape computations.
 * Never reads external weight data. On error returns NULL with a message
 * "FILE: node \"NAME\" (OP): what is wrong" in ir_error(). info may be NULL;
 * its arrays live in the graph's arena. */
struct ir_graph *onnx_import(const char *path, const struct onnx_import_opts *o, struct onnx_model_info *info);

/* The batch dimension: dimension 0 of the first graph input that has one.
 * Symbolic: its name in name[] and *size = 0; static (fixed in the file,
 * or bound by a --dim binding of o, which may be NULL): name[0] = 0 and
 * its size. A model none of whose inputs has a first dimension (no inputs,
 * scalars only, or an empty one) has no batch to split: static, size 1.
 * Reads only the header. */
int onnx_batch_dim(const char *path, const struct onnx_import_opts *o, char *name, size_t namelen, int64_t *size);
/* onnx_import with the symbolic batch dimension name (from onnx_batch_dim;
 * empty or NULL: none) bound to b on top of o's bindings. */
struct ir_graph *onnx_import_batch(const char *path, const struct onnx_import_opts *o, const char *name, int64_t b);

/* An ONNX file read and unpacked once, for a caller that imports it more
 * than once (the compile pipeline, at each micro-batch size the search
 * weighs): onnx_model_import and onnx_model_import_batch are onnx_import
 * and onnx_import_batch over it, onnx_model_batch_dim is onnx_batch_dim,
 * onnx_model_input_names is onnx_input_names, without going back to the
 * file (an external initializer whose values import needs is still read
 * from its own file). Each graph holds a
 * reference to the model (its inline weights stay there), so
 * onnx_model_free may come before the graphs are freed. onnx_model_read:
 * NULL with a message naming the file when it cannot be read or decoded. */
struct onnx_model;
struct onnx_model *onnx_model_read(const char *path);
void onnx_model_free(struct onnx_model *m);
const char *onnx_model_path(const struct onnx_model *m);
/* The file's bytes as read, hashed as plan_hash_file hashes a file (a
 * plan's model_hash). */
uint64_t onnx_model_hash(const struct onnx_model *m);
struct ir_graph *onnx_model_import(const struct onnx_model *m, const struct onnx_import_opts *o,
				   struct onnx_model_info *info);
struct ir_graph *onnx_model_import_batch(const struct onnx_model *m, const struct onnx_import_opts *o, const char *name,
					 int64_t b);
int onnx_model_batch_dim(const struct onnx_model *m, const struct onnx_import_opts *o, char *name, size_t namelen,
			 int64_t *size);
int onnx_model_input_names(const struct onnx_model *m, char ***names, int *n);

/* The model's graph inputs in order (initializers that old exporters list
 * among them left out): the N of the backend-test layout's input_N.pb.
 * *names is one ir_malloc'd block holding the array and the strings
 * (ir_free it). Reads the whole file. */
int onnx_input_names(const char *path, char ***names, int *n);

/* TensorProto files, a rank's slices of the initializers and writing
 * trained weights back: onnxio/onnxio.h. */

#endif
