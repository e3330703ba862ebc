/*
 * ir.h: pcc's core intermediate representation, the one interface of ir/.
 *
 * A graph is a list of nodes in topological order over values. A value is a
 * tensor with a dtype and a static shape; it is a graph input (fed at run
 * time), a parameter (an ONNX initializer: bytes inline or in an external
 * file that is only read when the graph runs) or the output of a node.
 * Everything a graph points to lives in its arena and is freed with it.
 *
 * Errors: functions that can fail on bad input return a negative errno-style
 * code and record a one-line message (what is wrong, with shapes and op
 * names) readable with ir_error(); callers add file and node context.
 * Broken invariants are bugs and abort through IR_ASSERT.
 */
#ifndef IR_IR_H
#define IR_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ops.h"

/* ---- errors and assertions -------------------------------------------- */

/* Records a message (printf-style) and returns code (a negative errno). */
int ir_errorf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the recorded message with printf-style context and ": ". */
void ir_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *ir_error(void);
int ir_error_code(void); /* the code of the last ir_errorf, 0 after clear */
void ir_error_clear(void);
/* The option getopt_long (optstring starting with ':') just refused, as
 * the recorded error: "unknown option '--x'", "--x needs a value" (c is
 * ':') or "--x takes no value"; returns -EINVAL. The programs' mains add
 * "(try 'CMD --help')" to every usage error they print. */
int ir_getopt_error(int c, char *const *argv);

/* bytes for a message, in the unit that keeps 3 significant digits
 * readable: "512 B", "83.7 KiB", "43.2 MiB", "1.25 GiB"; returns buf. */
#define IR_BYTES_STRLEN 32
const char *ir_bytes_str(double bytes, char buf[IR_BYTES_STRLEN]);

/* Seconds on the monotonic clock (for durations). */
double ir_now(void);

/* pcc's cache directory (the host's figures, cubins): $PCC_CACHE_DIR, else
 * $XDG_CACHE_HOME/pcc, else $HOME/.cache/pcc; NULL when none is set. */
const char *ir_cache_dir(char *buf, size_t n);
/* mkdir -p dir, best effort (a failure shows when a file is written). */
void ir_make_dirs(char *dir);

/* An assertion failure prints "WHO: internal error: FILE:LINE: assertion
 * 'EXPR' failed" and aborts; WHO is "pcc" until ir_assert_set_who sets it
 * (pcc-run: "pcc-run: rank N", as every line a rank prints starts). */
void ir_assert_set_who(const char *who);
_Noreturn void ir_assert_fail(const char *file, int line, const char *expr);
#define IR_ASSERT(e) ((e) ? (void)0 : ir_assert_fail(__FILE__, __LINE__, #e))

/* All heap allocation in pcc goes through these; tests install a hook that
 * makes the n-th allocation fail (ir_alloc_fail_after). NULL on failure. */
void *ir_malloc(size_t n);
void *ir_calloc(size_t count, size_t size);
void *ir_realloc(void *p, size_t n);
void ir_free(void *p);
/* After n more successful allocations, every allocation fails; n < 0 turns
 * injection off. For tests only. */
void ir_alloc_fail_after(long n);

/* ---- dtypes and shapes ------------------------------------------------ */

enum ir_dtype { IR_F64, IR_F32, IR_F16, IR_BF16, IR_I64, IR_I32, IR_I8, IR_U8, IR_BOOL, IR_DTYPE_COUNT };

size_t ir_dtype_size(enum ir_dtype t);                 /* bytes per element */
const char *ir_dtype_name(enum ir_dtype t);            /* "f32", "i64", ... */
int ir_dtype_parse(const char *s, enum ir_dtype *out); /* 0 or -EINVAL */
bool ir_dtype_is_float(enum ir_dtype t);
bool ir_dtype_is_int(enum ir_dtype t); /* signed or unsigned ints, not bool */

#define IR_MAX_RANK 8
/* No tensor may hold more elements than this (about 1.8e13): larger shapes
 * are rejected as absurd input rather than overflowing size arithmetic. */
#define IR_MAX_NUMEL (INT64_C(1) << 44)

struct ir_shape {
	int rank;
	int64_t dims[IR_MAX_RANK];
};

/* Number of elements; 1 for rank 0. Shapes in a graph are always valid
 * (dims >= 0, numel <= IR_MAX_NUMEL): ir_shape_check enforces it. */
int64_t ir_shape_numel(const struct ir_shape *s);
int ir_shape_check(const struct ir_shape *s); /* 0 or -EINVAL with message */
bool ir_shape_eq(const struct ir_shape *a, const struct ir_shape *b);
/* Writes "[2,3,4]" into buf (always NUL-terminated); returns buf. */
char *ir_shape_str(const struct ir_shape *s, char *buf, size_t n);
#define IR_SHAPE_STR_MAX (IR_MAX_RANK * 22 + 3)

/* ---- tensors (host buffers used by the interpreter and I/O) ----------- */

struct ir_tensor {
	enum ir_dtype dtype;
	struct ir_shape shape;
	void *data; /* ir_tensor_bytes() bytes, row-major; owned by the holder */
};

size_t ir_tensor_bytes(const struct ir_tensor *t);
/* Allocates zeroed data for dtype and shape; 0 or -ENOMEM with message. */
int ir_tensor_alloc(struct ir_tensor *t, enum ir_dtype dtype, const struct ir_shape *shape);
void ir_tensor_free(struct ir_tensor *t); /* frees data, leaves t empty */
/* Element i converted to double / int64 (any dtype). */
double ir_tensor_get_f64(const struct ir_tensor *t, int64_t i);
int64_t ir_tensor_get_i64(const struct ir_tensor *t, int64_t i);
/* Stores v converted to t's dtype (round to nearest even for f16/bf16). */
void ir_tensor_set_f64(struct ir_tensor *t, int64_t i, double v);
void ir_tensor_set_i64(struct ir_tensor *t, int64_t i, int64_t v);
/* Copies the block of shape `block` at src_start inside a row-major tensor
 * of src_shape to dst_start inside one of dst_shape (es bytes an element;
 * a NULL start is all zeros). The block must lie inside both. */
void ir_copy_block(void *dst, const struct ir_shape *dst_shape, const int64_t *dst_start, const void *src,
		   const struct ir_shape *src_shape, const int64_t *src_start, const struct ir_shape *block, size_t es);

float ir_f16_to_f32(uint16_t h);
uint16_t ir_f32_to_f16(float f);
float ir_bf16_to_f32(uint16_t h);
uint16_t ir_f32_to_bf16(float f);

/* ---- ops ---------------------------------------------------------------- */

/* clang-format off */
enum ir_op {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) IR_OP_##e,
	IR_OPS(X)
#undef X
	IR_OP_COUNT
};
/* clang-format on */

enum {
	IR_OPF_UNARY = 1 << 0,       /* elementwise, one operand */
	IR_OPF_BINARY = 1 << 1,      /* elementwise, two operands of one shape */
	IR_OPF_ELEMENTWISE = 1 << 2, /* other elementwise (select) */
	IR_OPF_FLOAT = 1 << 3,       /* operands must be floating point */
	IR_OPF_LOGIC = 1 << 4,       /* operands bool (logical) or integer (bitwise) */
	IR_OPF_PREDICATE = 1 << 5,   /* result is bool */
	IR_OPF_REDUCE = 1 << 6,      /* reduction over attrs.axes */
	IR_OPF_MOVE = 1 << 7,        /* moves data, computes nothing */
	IR_OPF_HEAVY = 1 << 8,       /* dot and convolution */
	IR_OPF_COMPOSITE = 1 << 9,   /* has a reference decomposition */
	IR_OPF_NUMERIC = 1 << 10,    /* operands must not be bool */
	IR_OPF_LINEAR = 1 << 11,     /* op(a + b) = op(a) + op(b): partial sums pass through */
	IR_OPF_KEEP_F32 = 1 << 12,   /* computed in f32 under mixed precision */
};

const char *ir_op_name(enum ir_op op);              /* "dot", "reduce_sum", ... */
int ir_op_parse(const char *name, enum ir_op *out); /* 0 or -EINVAL */
int ir_op_ninputs(enum ir_op op);                   /* -1: variadic */
int ir_op_noutputs(enum ir_op op);
unsigned ir_op_flags(enum ir_op op);
static inline bool ir_op_is_elementwise(enum ir_op op)
{
	return ir_op_flags(op) & (IR_OPF_UNARY | IR_OPF_BINARY | IR_OPF_ELEMENTWISE);
}

/* ---- attributes ---------------------------------------------------------
 * One plain struct for every op; each op reads only the fields named here
 * (the text form prints exactly those). Axes are 0-based and non-negative.
 *
 * CONVERT     dtype: the result dtype.
 * DOT         lhs_batch, rhs_batch, lhs_contract, rhs_contract (pairwise
 *             equal sizes). Result dims: batch dims (lhs order), then lhs
 *             free dims, then rhs free dims, each in operand order.
 * CONV        input [N, C, s1..sk], weight [O, C/groups, k1..kk]; stride,
 *             pad_lo, pad_hi, dilation (k entries each), groups.
 *             Result [N, O, o1..ok], o = (s + lo + hi - d(k-1) - 1)/stride + 1.
 * REDUCE_*    axes: sorted, distinct dims reduced away (no keepdims).
 * ARGMAX/MIN  axis (reduced away); mode IR_ARG_LAST picks the last of equal
 *             extremes. Result i64.
 * WINDOW_*    window, stride, pad_lo, pad_hi, dilation: one entry per dim.
 *             Padding reads -inf (max) or 0 (sum).
 * CUMSUM      axis; mode bits IR_CUMSUM_EXCLUSIVE, IR_CUMSUM_REVERSE.
 * RESHAPE     shape: result shape (same element count).
 * TRANSPOSE   axes: permutation; result dim i is operand dim axes[i].
 * BROADCAST   shape: result shape; axes[i]: the result dim that operand dim
 *             i maps to (increasing); operand dim size is 1 or equal.
 * SLICE       start, limit, stride (one per dim; 0 <= start <= limit <= dim,
 *             stride >= 1); result dim ceil((limit - start) / stride).
 * CONCAT      axis.
 * PAD         pad_lo, pad_hi (>= 0, one per dim); mode IR_PAD_CONSTANT
 *             (value), IR_PAD_EDGE or IR_PAD_REFLECT.
 * REVERSE     axes.
 * GATHER      (data, indices) axis; indices integer of any shape, negative
 *             ones count from the end; result data[:axis]+idx+data[axis+1:].
 * SCATTER     (data, indices, updates): data [N, r...], integer indices of
 *             shape I selecting rows, updates I + [r...]; result is data
 *             with the rows replaced (mode IR_SCATTER_NONE) or combined
 *             (IR_SCATTER_ADD, _MUL, _MAX, _MIN) in index order.
 * IOTA        shape, dtype, axis: element = its index along axis.
 * CONSTANT    shape, dtype, data (ir_tensor_bytes of it, in the arena).
 * SOFTMAX     axis.
 * LAYER_NORM  (x, scale, bias) axis: normalize over dims axis..rank-1;
 *             scale and bias have shape x.dims[axis:]; eps.
 * TOPK        axis, k; mode IR_TOPK_SMALLEST for the smallest; results
 *             (values, i64 indices), sorted, ties to the lower index.
 */
struct ir_ilist {
	int n;
	int64_t v[IR_MAX_RANK];
};

enum { IR_ARG_LAST = 1 };
enum { IR_CUMSUM_EXCLUSIVE = 1, IR_CUMSUM_REVERSE = 2 };
enum { IR_PAD_CONSTANT = 0, IR_PAD_EDGE = 1, IR_PAD_REFLECT = 2 };
enum { IR_SCATTER_NONE = 0, IR_SCATTER_ADD, IR_SCATTER_MUL, IR_SCATTER_MAX, IR_SCATTER_MIN };
enum { IR_TOPK_SMALLEST = 1 };

struct ir_attrs {
	enum ir_dtype dtype;
	struct ir_shape shape;
	struct ir_ilist axes;
	struct ir_ilist lhs_batch, rhs_batch, lhs_contract, rhs_contract;
	struct ir_ilist start, limit, stride;
	struct ir_ilist pad_lo, pad_hi, window, dilation;
	int64_t axis;
	int64_t k;
	int64_t groups;
	int64_t mode;
	double eps;
	double value;
	const void *data; /* CONSTANT: arena bytes */
};

/* An ilist from a literal: IR_ILIST(2, 0, 1) has n = 3. */
#define IR_ILIST(...) \
	((struct ir_ilist){ .n = sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), .v = { __VA_ARGS__ } })

/* ---- graph ---------------------------------------------------------------- */

struct ir_graph; /* opaque: owns everything below */

enum ir_value_kind { IR_VAL_INPUT, IR_VAL_PARAM, IR_VAL_NODE, IR_VAL_KIND_COUNT };

/* Where a parameter's bytes are. Exactly one of bytes / path is set. */
struct ir_data {
	const void *bytes;    /* inline, owned by the graph */
	const char *path;     /* external file: absolute, or relative to base_dir */
	const char *base_dir; /* directory of the model file, or NULL */
	int64_t offset;       /* bytes into path */
	int64_t nbytes;       /* == ir_tensor_bytes of the value */
};

/* Opens d's external file to read, a regular file only and never through a
 * symbolic link: a relative path is walked from base_dir one directory at
 * a time (O_NOFOLLOW), so it stays inside the model's directory, and a
 * FIFO is refused without blocking (O_NONBLOCK). A file descriptor, or a
 * negative errno with "FILE: ... external data of \"NAME\" ..." (name:
 * the initializer or parameter) recorded. */
int ir_data_open(const struct ir_data *d, const char *name);

struct ir_node;

/* ---- sharding annotations --------------------------------------------------
 * Set by the intra-op pass: how a value is laid out over the graph's 2-D
 * logical device mesh (ir_graph_mesh). Per tensor dimension, the mesh axes
 * that split it (bit a: axis a; both bits: split n0*n1 ways, axis 0 major);
 * partial: the axes over which each device holds a partial sum that still
 * needs reducing. Every axis appears at most once in dims and partial, and a
 * split dimension's size is divisible by its number of pieces.
 * Text form: "<S0,R,S01|P1>" (dimension 0 split on axis 0, dimension 1
 * replicated, dimension 2 on both axes, partial sums over axis 1). */
#define IR_MESH_AXES 2
struct ir_sharding {
	uint8_t dim[IR_MAX_RANK]; /* mesh-axis masks, 0 .. 3 */
	uint8_t partial;          /* mesh-axis mask */
};
#define IR_SHARDING_STR_MAX (IR_MAX_RANK * 4 + 8)
/* Writes the text form, angle brackets included, for a value of rank rank. */
char *ir_sharding_str(const struct ir_sharding *s, int rank, char *buf, size_t n);
/* Parses the text form between the brackets ("S0,R|P1") of n bytes for a
 * value of rank rank: 0 or -EINVAL with a message. */
int ir_sharding_parse(const char *text, size_t n, int rank, struct ir_sharding *out);
/* Checks s against shape on mesh n0 x n1: 0 or -EINVAL with a message. */
int ir_sharding_check(const struct ir_sharding *s, const struct ir_shape *shape, int n0, int n1);
/* Pieces the mesh cuts dimension d into, and the mesh size of axis mask m. */
int ir_sharding_pieces(uint8_t m, int n0, int n1);

/* What an exporter declared an initializer to be: PyTorch's dynamo
 * exporter names each graph input of the exported program a PARAMETER, a
 * BUFFER or a CONSTANT_TENSOR (ValueInfoProto metadata); other
 * initializers it made itself (folded scalars and tables). */
enum ir_declared { IR_DECLARED_NONE, IR_DECLARED_PARAMETER, IR_DECLARED_BUFFER };

struct ir_value {
	int id;           /* dense index in ir_graph_values, stable until compact */
	const char *name; /* ONNX name, or NULL */
	enum ir_dtype dtype;
	struct ir_shape shape;
	enum ir_value_kind kind;
	struct ir_node *def;  /* IR_VAL_NODE: producer */
	int def_index;        /* IR_VAL_NODE: which output of def */
	struct ir_data data;  /* IR_VAL_PARAM only */
	bool buffer;          /* IR_VAL_PARAM: model state, never trained (running statistics) */
	signed char declared; /* IR_VAL_PARAM: what the exporter declared it (enum ir_declared) */
	bool sharded;         /* sharding below is set (needs a mesh) */
	struct ir_sharding sharding;
	/* IR_VAL_INPUT of class indices (a loss's labels): every element is in
	 * [0, classes), or is ignore where has_ignore; classes 0: unchecked.
	 * Checked where inputs are read (ir_labels_check). */
	int64_t classes;
	bool has_ignore;
	int64_t ignore;
};

/* Whether t holds labels that input v accepts (v->classes): 0, or -EINVAL
 * with "label L at element E is outside [0, C)" (and " (and not the ignored
 * I)" where v has one). */
int ir_labels_check(const struct ir_value *v, const struct ir_tensor *t);

struct ir_node {
	int id; /* position in ir_graph_nodes */
	enum ir_op op;
	const char *name; /* ONNX node name it came from (for messages), or NULL */
	int nin, nout;
	struct ir_value **in;
	struct ir_value **out;
	struct ir_attrs a;
	int tag;       /* a pass's label, IR_TAG_NONE when new: the
			* pipeline stage of a train step's node
			* (IR_TAG_ALL: computed in every stage) */
	int recompute; /* a forward node the backward pass recomputes rather
			* than keep its results: the number of its segment (a
			* layer) + 1, recomputed from the segment's inputs
			* when the backward pass reaches it (grad_build);
			* 0 when new: kept */
	/* The sharding each operand is read in (none partial), set with the
	 * results' by the intra-op pass: lowering brings every operand to it
	 * and runs the op on the local pieces. NULL: not annotated. Text form:
	 * each operand followed by its sharding, "dot %0 <S0,R>, %1 <R,S1>". */
	struct ir_sharding *in_sharding;
};

#define IR_TAG_NONE (-1)
#define IR_TAG_ALL (-2)

struct ir_graph *ir_graph_new(void); /* NULL on allocation failure */
void ir_graph_free(struct ir_graph *g);
/* Arena allocation, zeroed, freed with the graph. NULL on failure. */
void *ir_graph_alloc(struct ir_graph *g, size_t n);
const char *ir_graph_strdup(struct ir_graph *g, const char *s);
/* Runs fn(ctx) when the graph is freed (e.g. to release a buffer that
 * parameter bytes point into). 0 or -ENOMEM. */
int ir_graph_on_free(struct ir_graph *g, void (*fn)(void *), void *ctx);

struct ir_value *ir_graph_add_input(struct ir_graph *g, const char *name, enum ir_dtype dtype,
				    const struct ir_shape *shape);
struct ir_value *ir_graph_add_param(struct ir_graph *g, const char *name, enum ir_dtype dtype,
				    const struct ir_shape *shape, const struct ir_data *data);
/* Appends a node; infers its results' dtypes and shapes (ir_infer). NULL on
 * invalid operands or attributes, with the reason in ir_error(). */
struct ir_node *ir_graph_add_node(struct ir_graph *g, enum ir_op op, const char *name, int nin,
				  struct ir_value *const *in, const struct ir_attrs *a);
/* Marks v as graph output number ir_graph_noutputs(); name may be NULL. */
int ir_graph_add_output(struct ir_graph *g, struct ir_value *v, const char *name);
/* Forgets every output (the values stay; ir_graph_dce may then drop them). */
void ir_graph_clear_outputs(struct ir_graph *g);
/* State updates: after a run, parameter param takes the value v (same
 * dtype and shape), as BatchNorm's running statistics do in training mode.
 * Updates are effects: ir_graph_dce keeps v and param. 0, or -EINVAL when
 * the types differ or param is already updated. */
int ir_graph_add_update(struct ir_graph *g, struct ir_value *param, struct ir_value *v);
int ir_graph_nupdates(const struct ir_graph *g);
struct ir_value *ir_graph_update_param(const struct ir_graph *g, int i);
struct ir_value *ir_graph_update_value(const struct ir_graph *g, int i);
/* Replaces output i by v (same dtype and shape). */
void ir_graph_set_output(struct ir_graph *g, int i, struct ir_value *v);

int ir_graph_ninputs(const struct ir_graph *g);
struct ir_value *ir_graph_input(const struct ir_graph *g, int i);
int ir_graph_nparams(const struct ir_graph *g);
struct ir_value *ir_graph_param(const struct ir_graph *g, int i);
int ir_graph_noutputs(const struct ir_graph *g);
struct ir_value *ir_graph_output(const struct ir_graph *g, int i);
const char *ir_graph_output_name(const struct ir_graph *g, int i);
int ir_graph_nnodes(const struct ir_graph *g);
struct ir_node *ir_graph_node(const struct ir_graph *g, int i);
int ir_graph_nvalues(const struct ir_graph *g);
struct ir_value *ir_graph_value(const struct ir_graph *g, int i);

/* Annotates node n's operands with the shardings in[0 .. n->nin - 1]
 * (copied into g's arena): 0, or -ENOMEM with a message. */
int ir_node_set_in_sharding(struct ir_graph *g, struct ir_node *n, const struct ir_sharding *in);

/* The 2-D logical device mesh the sharding annotations refer to: n0 x n1
 * devices, or 0 x 0 when the graph has none. */
void ir_graph_set_mesh(struct ir_graph *g, int n0, int n1);
void ir_graph_mesh(const struct ir_graph *g, int *n0, int *n1);

/* A pipelined graph's schedules: stage s's is the order in which its
 * devices run the forward (m) and backward (-(m + 1)) parts of
 * micro-batches 0 .. n/2 - 1 (plan_stage.order), as the inter-op pass
 * chose it; lowering reads it from here. Stages get theirs in order (s ==
 * ir_graph_nschedules(g)); order is copied into g's arena. 0, -EINVAL (s
 * out of turn, or not every micro-batch's forward then backward exactly
 * once) or -ENOMEM, with a message. Text form: "schedule 1: F0 B0 F1 B1". */
int ir_graph_add_schedule(struct ir_graph *g, int s, int n, const int *order);
int ir_graph_nschedules(const struct ir_graph *g);
/* Stage s's schedule, *n entries. */
const int *ir_graph_schedule(const struct ir_graph *g, int s, int *n);

/* Replaces every use of old by new (same dtype and shape), outputs too. */
void ir_graph_replace_uses(struct ir_graph *g, struct ir_value *old, struct ir_value *new_);
/* Drops nodes whose results are unused (transitively) and params no one
 * reads; renumbers node and value ids densely. Returns nodes removed, or
 * -ENOMEM (graph unchanged). */
int ir_graph_dce(struct ir_graph *g);
/* Moves each node i with move[i] to right after the node making the last
 * of its operands (a node reading no other node's result stays), the
 * others keeping their order; renumbers node ids. The order stays
 * topological. 0, or -ENOMEM with a message (graph unchanged). */
int ir_graph_hoist(struct ir_graph *g, const bool *move);

/* ---- shape inference and verification -------------------------------- */

/* Result dtypes and shapes of op on operands in[] with attributes a.
 * 0, or -EINVAL with a message naming op, operand shapes and the rule. */
int ir_infer(enum ir_op op, int nin, struct ir_value *const *in, const struct ir_attrs *a, enum ir_dtype *out_dtype,
	     struct ir_shape *out_shape);

/* Checks the whole graph: topological order, operand counts, shapes and
 * dtypes agree with ir_infer, ids dense, outputs defined. 0 or -EINVAL
 * with a message naming the node, its op and shapes. */
int ir_verify(const struct ir_graph *g);

/* ---- text form -------------------------------------------------------------
 * Printed and parsed with exact round trip: print(parse(print(g))) equals
 * print(g). Parameter bytes print as a reference to their file, or inline as
 * hex when inline (so small test graphs are self-contained). A node's tag
 * and recompute print after its attributes when set ("tag=1", "tag=all",
 * "recompute=2"), its operands' shardings after each operand, schedules
 * last. */
int ir_print(const struct ir_graph *g, FILE *f);
/* Parses text (NUL-terminated). NULL on error, message like
 * "line 12: unknown op 'dott'" in ir_error(). */
struct ir_graph *ir_parse(const char *text);

/* ---- statistics ------------------------------------------------------------ */

/* FLOPs of one execution of node n (2 per multiply-add for dot and conv,
 * 1 per element for elementwise and reductions, 0 for data movement). */
double ir_node_flops(const struct ir_node *n);

#endif
