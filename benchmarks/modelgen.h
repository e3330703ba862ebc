/*
 * modelgen.h: pcc-modelgen, which writes benchmark models (GPT-3, GShard
 * MoE, Wide-ResNet) as ONNX graphs whose weights are external data in a
 * file that is never written: the .onnx holds the graph and the shapes, so
 * pcc can plan a 175-billion-parameter model from a file of a few hundred KB.
 *
 * modelgen.c         command line and the table of models
 * modelgen_onnx.c    the ONNX builder (the only file that sees protobuf-c)
 * modelgen_gpt.c     GPT-3 and GShard MoE transformers
 * modelgen_llama.c   Llama 2 and Llama 3 decoders
 * modelgen_wresnet.c Wide-ResNet
 */
#ifndef PCC_MODELGEN_H
#define PCC_MODELGEN_H

#include <stdint.h>

/* ONNX TensorProto.DataType codes of the element types used here */
enum mg_elem { MG_FLOAT = 1, MG_INT64 = 7, MG_BOOL = 9 };

enum mg_family { MG_GPT, MG_MOE, MG_LLAMA, MG_WRESNET, MG_FAMILY_COUNT };

/* One benchmark model. Fields a family does not use stay 0. */
struct mg_config {
	const char *name;
	enum mg_family family;
	/* transformers */
	int64_t layers; /* decoder layers (GPT, MoE); depth 50 or 101 (Wide-ResNet) */
	int64_t hidden; /* d_model */
	int64_t heads;
	int64_t seq; /* tokens per sequence, also the rows of the position table */
	int64_t vocab;
	int64_t mlp_ratio; /* MLP width / d_model */
	int64_t experts;   /* MoE: experts per MoE layer */
	int64_t kv_heads;  /* Llama: key and value heads (grouped-query attention) */
	int64_t ffn;       /* Llama: MLP width */
	double rope_theta; /* Llama: the rotary embedding's base */
	/* Wide-ResNet */
	int64_t channels; /* base channels of the first stage */
	int64_t width;    /* width factor of the 3x3 convolutions */
	int64_t classes;
	int64_t image; /* image height = width */
	/* all */
	int64_t batch;      /* 0: a symbolic dimension named "batch" */
	double published;   /* the parameter count the source gives */
	const char *source; /* paper and table the configuration comes from */
};

/* ---- errors: one message, recorded by the failing call ---------------- */
int mg_errorf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *mg_error(void);

/* ---- the ONNX builder (modelgen_onnx.c) --------------------------------
 * Every call records the first failure (out of memory) in the builder and
 * then does nothing; mgb_write reports it. Names returned are owned by the
 * builder. Node and weight names start with the current scope. */
struct mg_builder;
struct Onnx__NodeProto;

/* location: the external data file named in every weight (never written) */
struct mg_builder *mgb_new(const char *location);
void mgb_free(struct mg_builder *b);
/* printf-style scope, e.g. "h.3.attn" */
void mgb_scope(struct mg_builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mgb_scope_clear(struct mg_builder *b);
/* Elements in the weights (not the state) added so far. */
int64_t mgb_params(const struct mg_builder *b);

/* Graph inputs and outputs; a dim < 0 is the symbolic dimension "batch". */
const char *mgb_input(struct mg_builder *b, const char *name, enum mg_elem t, int rank, const int64_t *dims);
void mgb_output(struct mg_builder *b, const char *name, enum mg_elem t, int rank, const int64_t *dims);
/* An f32 initializer "scope.name" whose bytes are external data: a
 * trainable parameter (weight), or model state that is not one (state,
 * e.g. BatchNormalization's running statistics). */
const char *mgb_weight(struct mg_builder *b, const char *name, int rank, const int64_t *dims);
const char *mgb_state(struct mg_builder *b, const char *name, int rank, const int64_t *dims);

/* A node with nin inputs and nout outputs named after the node. */
struct Onnx__NodeProto *mgb_node(struct mg_builder *b, const char *op, int nin, const char *const *in, int nout);
const char *mgb_out(const struct Onnx__NodeProto *n, int i);
/* Gives output i another name (a graph output's). */
void mgb_rename(struct mg_builder *b, struct Onnx__NodeProto *n, int i, const char *name);
void mgb_attr_int(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, int64_t v);
void mgb_attr_ints(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, int count, const int64_t *v);
void mgb_attr_float(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, float v);
void mgb_attr_str(struct mg_builder *b, struct Onnx__NodeProto *n, const char *name, const char *v);
/* A node without attributes and one output: mgb_op(b, "Add", 2, x, y). */
const char *mgb_op(struct mg_builder *b, const char *op, int nin, ...);

/* Constant nodes: int64 1-D, int64 scalar, f32 scalar, f32 1-D. */
const char *mgb_ints(struct mg_builder *b, int count, const int64_t *v);
const char *mgb_int(struct mg_builder *b, int64_t v);
const char *mgb_float(struct mg_builder *b, float v);
const char *mgb_floats(struct mg_builder *b, int count, const float *v);

/* A language model's loss, the graph's output "loss": the mean softmax
 * cross entropy of logits [b, s, vocab] against int64 labels [b, s]. */
void mgb_lm_loss(struct mg_builder *b, const char *logits, const char *labels, int64_t vocab);

/* Serializes the model (opset 17) to path: 0, or -errno with a message. */
int mgb_write(struct mg_builder *b, const char *path, const char *graph_name);

/* ---- families: build the graph, and the exact parameter count of that
 * graph (every f32 initializer, as `pcc inspect` counts them) ------------ */
int mg_build_transformer(struct mg_builder *b, const struct mg_config *c);
int64_t mg_transformer_params(const struct mg_config *c);
int mg_build_llama(struct mg_builder *b, const struct mg_config *c);
int64_t mg_llama_params(const struct mg_config *c);
int mg_build_wresnet(struct mg_builder *b, const struct mg_config *c);
int64_t mg_wresnet_params(const struct mg_config *c);

#endif
