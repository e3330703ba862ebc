/*
 * onnx_internal.h: shared by the ONNX importer's files (and nothing else:
 * this and onnxio/onnxio_pb.h, whose file, dtype and TensorProto helpers
 * it builds on, are the only places protobuf-c ONNX types meet the IR).
 *
 * Each ONNX op has one handler (onnx_ops*.c) that reads the node's
 * attributes, decomposes it into core ops through the b_* builders below,
 * and sets the node's results. The builders fold operations whose operands
 * are all constants (shape computations) into CONSTANT nodes as they go.
 */
#ifndef PCC_ONNX_INTERNAL_H
#define PCC_ONNX_INTERNAL_H

#include "compiler/frontend/frontend.h"
#include "onnxio/onnxio_pb.h"

struct symtab;

/* A sequence of tensors (SplitToSequence's result), which only SequenceAt
 * reads: its name stands in the name table for its first tensor's input,
 * its tensors are here (graph-owned). */
struct onnx_seq {
	const char *name; /* the ONNX value */
	int n;
	struct ir_value **items;
	struct onnx_seq *next;
};

/* An ONNX file read and unpacked once (onnx_model_read). Every graph
 * imported from it holds a reference, since its floating point
 * initializers' raw_data stays in the model; onnx_model_free drops the
 * reader's, and the last one frees it. */
struct onnx_model {
	const char *path;        /* the file, for messages (after the struct) */
	Onnx__ModelProto *proto; /* its graph may be NULL: onnx_model_import says so */
	int refs;                /* changed atomically: graphs may be freed on any thread */
	uint64_t hash;           /* the file's bytes, as plan_hash_file hashes them */
};

struct onnx_ctx {
	const char *path;     /* model file, for messages */
	const char *base_dir; /* its directory, for external data */
	struct ir_graph *g;
	int64_t opset; /* default-domain opset */
	const struct onnx_import_opts *opts;
	struct symtab *names;        /* ONNX value name -> ir_value */
	const Onnx__NodeProto *node; /* node being imported */
	struct onnx_seq *seqs;       /* the sequences defined so far */
};

/* The sequence named name, or NULL when name is a tensor. */
const struct onnx_seq *onnx_seq_find(const struct onnx_ctx *c, const char *name);
/* Records the current node's output 0 as the sequence of items[0..n)
 * (copied); -ENOMEM. */
int onnx_seq_add(struct onnx_ctx *c, int n, struct ir_value *const *items);

/* A handler gets the node's inputs (NULL where an optional input is
 * omitted) and must fill out[i] for each declared output i < nout
 * (entries for omitted optional outputs may stay NULL). 0 or negative. */
typedef int (*onnx_handler_fn)(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout);

struct onnx_op_def {
	const char *name;
	onnx_handler_fn fn;
	const char *attrs; /* accepted attribute names, space separated */
};

/* In handlers: set the single result, or fail; require input k. */
#define OUT1(v) (out[0] = (v), out[0] ? 0 : -EINVAL)
#define NEED(k)                                                           \
	do {                                                              \
		if (nin <= (k) || !in[k])                                 \
			return onnx_fail(c, "input %d is required", (k)); \
	} while (0)

/* In handlers: the node has exactly n inputs, as its op takes (a missing
 * operand or one past them would otherwise go unnoticed). */
#define ARITY(n)                                                                                               \
	do {                                                                                                   \
		if (nin != (n))                                                                                \
			return onnx_fail(c, "has %d input%s; the op takes %d", nin, nin == 1 ? "" : "s", (n)); \
	} while (0)

/* The handler tables: elementwise (onnx_ops.c), shapes and data movement
 * (onnx_ops_shape.c), contractions and nn ops (onnx_ops_nn.c), image ops
 * (onnx_ops_image.c: Resize, DepthToSpace...), ConvTranspose
 * (onnx_ops_convt.c). */
extern const struct onnx_op_def onnx_ops_basic[];
extern const int onnx_ops_basic_count;
extern const struct onnx_op_def onnx_ops_shape[];
extern const int onnx_ops_shape_count;
extern const struct onnx_op_def onnx_ops_nn[];
extern const int onnx_ops_nn_count;
extern const struct onnx_op_def onnx_ops_image[];
extern const int onnx_ops_image_count;
extern const struct onnx_op_def onnx_ops_convt[];
extern const int onnx_ops_convt_count;
/* Quantization (onnx_ops_quant.c), and the com.microsoft ops ONNX
 * Runtime's optimizer writes (onnx_ops_ms.c: looked up for that domain
 * only). */
extern const struct onnx_op_def onnx_ops_quant[];
extern const int onnx_ops_quant_count;
extern const struct onnx_op_def onnx_ops_ms[];
extern const int onnx_ops_ms_count;

/* Handlers other handlers build on (onnx_ops_nn.c): MatMul of two
 * operands of one type (integers too), Gemm reading the node's alpha,
 * beta, transA and transB, LayerNormalization its axis and epsilon. */
int onnx_matmul(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout);
int onnx_gemm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout);
int onnx_layernorm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout);

/* "name", or the first output's name for unnamed nodes (for messages). */
const char *onnx_node_label(const Onnx__NodeProto *n);

/* ---- errors: record a message about the current node; returns -EINVAL */
int onnx_fail(struct onnx_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same for a valid model using a feature pcc does not support; -ENOTSUP. */
int onnx_unsupported(struct onnx_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- attributes */
const Onnx__AttributeProto *attr_find(struct onnx_ctx *c, const char *name);
int64_t attr_int(struct onnx_ctx *c, const char *name, int64_t dflt);
double attr_float(struct onnx_ctx *c, const char *name, double dflt);
/* Copies a string attribute into buf (dflt when absent). */
const char *attr_string(struct onnx_ctx *c, const char *name, const char *dflt, char *buf, size_t n);
/* Reads an ints attribute; returns its length (0 when absent), or -EINVAL
 * when longer than max. */
int attr_ints(struct onnx_ctx *c, const char *name, int64_t *out, int max);
/* -ENOTSUP naming the attribute when the node has it but the model's
 * opset is older than since, the version of the op that brought it. */
int attr_since(struct onnx_ctx *c, const char *name, int since);

/* ---- builders (onnx_build.c): every builder returns NULL on error with
 * the message in ir_error(); the dispatcher adds the node context. */
struct ir_node *b_node(struct onnx_ctx *c, enum ir_op op, int nin, struct ir_value *const *in,
		       const struct ir_attrs *a);
struct ir_value *b_op(struct onnx_ctx *c, enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a);
struct ir_value *b_unary(struct onnx_ctx *c, enum ir_op op, struct ir_value *x);
/* Numpy-broadcasts x and y to a common shape, then applies op. */
struct ir_value *b_binary(struct onnx_ctx *c, enum ir_op op, struct ir_value *x, struct ir_value *y);
struct ir_value *b_select(struct onnx_ctx *c, struct ir_value *cond, struct ir_value *x, struct ir_value *y);
/* Numpy-style (right-aligned) broadcast of x to shape. */
struct ir_value *b_broadcast_to(struct onnx_ctx *c, struct ir_value *x, const struct ir_shape *s);
struct ir_value *b_convert(struct onnx_ctx *c, struct ir_value *x, enum ir_dtype t);
struct ir_value *b_reshape(struct onnx_ctx *c, struct ir_value *x, const struct ir_shape *s);
struct ir_value *b_transpose(struct onnx_ctx *c, struct ir_value *x, const int64_t *perm);
/* Reduces axes (any order, duplicates rejected) and keeps them as size 1
 * when keepdims. */
struct ir_value *b_reduce(struct onnx_ctx *c, enum ir_op op, struct ir_value *x, const int64_t *axes, int naxes,
			  bool keepdims);
struct ir_value *b_slice(struct onnx_ctx *c, struct ir_value *x, int axis, int64_t start, int64_t limit,
			 int64_t stride);
struct ir_value *b_concat(struct onnx_ctx *c, int n, struct ir_value *const *in, int axis);
struct ir_value *b_scalar(struct onnx_ctx *c, enum ir_dtype t, double v);
/* A constant of the given shape and dtype from host data (copied). */
struct ir_value *b_const(struct onnx_ctx *c, enum ir_dtype t, const struct ir_shape *s, const void *data);
struct ir_value *b_const_i64(struct onnx_ctx *c, int n, const int64_t *v);
struct ir_value *b_iota(struct onnx_ctx *c, enum ir_dtype t, const struct ir_shape *s, int axis);

/* The value of a constant (a CONSTANT node's result, or an initializer,
 * whose external data is read here) as a tensor view: t->data points at
 * graph-owned bytes. -EINVAL with a message when v is not a compile-time
 * constant, or its external file cannot be read (naming the initializer
 * and the file). */
int onnx_const_view(struct onnx_ctx *c, struct ir_value *v, struct ir_tensor *t, const char *what);
/* Integer constant values (up to max) into out; returns the count or -EINVAL. */
int onnx_const_ints(struct onnx_ctx *c, struct ir_value *v, int64_t *out, int max, const char *what);
bool onnx_is_const(const struct ir_value *v);
/* An initializer stored as external data whose bytes were not read (yet):
 * onnx_const_view reads them. */
bool onnx_is_external(const struct ir_value *v);
/* The single element of a constant (any dtype) as a double; -EINVAL unless
 * it holds exactly one element. */
int onnx_const_scalar(struct onnx_ctx *c, struct ir_value *v, double *out, const char *what);

/* Normalizes a possibly negative axis against rank; -EINVAL if out of range. */
int onnx_axis(struct onnx_ctx *c, int64_t axis, int rank, int64_t *out);

#endif
