/*
 * train.h: autodiff and the training step, the one header of
 * compiler/train/. Its files build on ir/, the cost model (which values a
 * backward pass keeps), the importer and the interpreter's graph walk
 * (pcc train) and call nothing else of the compiler; compiler.h includes
 * this header for the passes and the driver. The files share
 * grad_internal.h and train_internal.h. Errors follow ir.h: negative
 * errno, message in ir_error().
 */
#ifndef PCC_COMPILER_TRAIN_H
#define PCC_COMPILER_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler/frontend/frontend.h"
#include "ir/ir.h"

/* ---- autodiff (grad*.c) -------------------------------------------
 * Reverse mode over the core ops: one VJP rule per op (grad_rules.c, one
 * switch, no default). */

/* Appends to g the nodes computing d loss / d wrt[i] for a scalar floating
 * point loss (a value of g). grads[i] receives a value of wrt[i]'s dtype and
 * shape; where the loss does not depend on wrt[i] differentiably, grads[i]
 * is NULL. Values on a path from some wrt[i] to the loss through integer or
 * boolean results (comparisons, argmax, indices) carry no gradient.
 * Errors: -EINVAL the loss is not a floating point scalar, or a wrt value
 * is not floating point; -ENOTSUP an op with no gradient rule lies on a path
 * from wrt[i] to the loss (the message names the op, its node and wrt[i]).
 * On error g may hold unused extra nodes (ir_graph_dce removes them). */
int grad_build(struct ir_graph *g, struct ir_value *loss, int n, struct ir_value *const *wrt, struct ir_value **grads);

/* ---- the training step (train*.c) ---------------------------------
 * train_build turns a forward graph into one train-step graph: the loss,
 * the gradients of every trained parameter (grad_build) and the optimizer
 * update, with parameters and optimizer state updated in place.
 *
 * Graph inputs: the model's inputs, the loss's extra input (labels or
 * target) if any, then the state: "train.step" (f32 scalar, steps done so
 * far), for f16 "train.loss_scale" and "train.good_steps", then per trained
 * parameter its optimizer slots ("<param>.momentum", "<param>.adam_m",
 * "<param>.adam_v"), all zero at the start except loss_scale.
 * Graph outputs: 0 the loss (unscaled), 1 the global gradient norm (before
 * clipping), then the new value of every trained parameter, then the new
 * value of every state input, in order: the runtime writes output
 * 2 + i back over params[i] and output 2 + nparams + j over state[j];
 * last, one output per graph update (ir_graph_update_param: BatchNorm's
 * running statistics, imported with onnx_import_opts.updates), computed
 * per micro-batch, so each micro-batch sees the last one's statistics.
 * Nodes [0, update_first) compute the loss and gradients of one micro-batch
 * (forward and loss before bwd_first, backward from it);
 * nodes [update_first, n) read only grads[], params, state and the step
 * and run once per step: gradient accumulation and the data-parallel
 * reduction go between the two. */

enum train_optim { TRAIN_SGD, TRAIN_MOMENTUM, TRAIN_NESTEROV, TRAIN_ADAM, TRAIN_ADAMW };
enum train_sched { TRAIN_LR_CONSTANT, TRAIN_LR_COSINE, TRAIN_LR_LINEAR };

/* Which floating point initializers train (train_params.c): by default
 * the parameters, every one the loss reaches except the constants the rule
 * sets aside (enum train_aside); --trainable and --freeze patterns
 * (fnmatch on the initializer's name) override it, the last pattern that
 * matches a name deciding. BatchNorm's running statistics never train. */
struct train_pattern {
	const char *glob;
	bool train; /* --trainable (true) or --freeze (false) */
};

/* Why an initializer the loss reaches is a constant, not a parameter. */
enum train_aside {
	TRAIN_ASIDE_SCALAR,   /* 0-d: an exporter's scalar (gelu's 0.5, a mask fill) */
	TRAIN_ASIDE_EXPONENT, /* only ever a Pow's exponent */
	TRAIN_ASIDE_BOUND,    /* one element, only ever a Max/Min operand (Clip's bounds) */
	TRAIN_ASIDE_FILL,     /* one element, only ever a Where branch (a fill value) */
	TRAIN_ASIDE_EPSILON,  /* one element, only ever added to what is square-rooted
			       * or divided by (a norm's epsilon) */
	TRAIN_ASIDE_TABLE,    /* a sine/cosine table (folded RoPE or sinusoidal positions) */
	TRAIN_ASIDE_BUFFER,   /* the exporter declared it a buffer or constant (RoPE's inv_freq) */
	TRAIN_ASIDE_COUNT
};
const char *train_aside_name(enum train_aside why);

struct train_opts {
	const char *loss;                     /* NULL: the model's own scalar output;
					       * "cross_entropy:LOGITS,LABELS" or "mse:OUTPUT,TARGET" */
	const struct train_pattern *patterns; /* --trainable / --freeze, in command-line order */
	int npatterns;
	bool skip_nonfinite;      /* a step whose gradient norm is not finite changes
				   * nothing (always so under f16 loss scaling) */
	enum train_optim optim;   /* default adamw */
	double lr;                /* peak learning rate (default 1e-3) */
	double momentum;          /* SGD momentum (0.9) */
	double beta1, beta2, eps; /* Adam (0.9, 0.999, 1e-8) */
	double weight_decay;      /* AdamW decoupled, else L2 added to the gradient (0; AdamW 0.01) */
	double clip_norm;         /* global gradient norm limit; 0: no clipping */
	enum train_sched sched;   /* default constant */
	int64_t warmup;           /* linear warmup steps */
	int64_t total;            /* steps of the decay (schedule length) */
	double min_lr;            /* where the decay ends */
	enum ir_dtype compute;    /* IR_F32, or IR_BF16 / IR_F16: mixed precision with
				   * f32 master weights */
	double loss_scale;        /* f16: initial dynamic loss scale (65536) */
	int64_t scale_window;     /* f16: good steps before the scale doubles (2000) */
	int accum;                /* micro-batches per step (1); the loss and gradients are
				   * their mean */
	double grad_scale;        /* the gradients are those of loss * grad_scale (1);
				   * lowering sets 1 / micro-batches, so accumulated
				   * gradients sum to the mean */
};
void train_opts_init(struct train_opts *o);
/* The options as one readable line ("adamw lr=0.001 betas=0.9,0.999 ..."). */
void train_opts_str(const struct train_opts *o, char *buf, size_t n);
/* Parses "sgd", "momentum", "nesterov", "adam", "adamw"; -EINVAL naming it. */
int train_optim_parse(const char *s, enum train_optim *out);
/* Parses "constant", "cosine", "linear"; -EINVAL naming it. */
int train_sched_parse(const char *s, enum train_sched *out);
/* The learning rate of step t (0-based) under o: what the graph computes. */
double train_lr_at(const struct train_opts *o, int64_t t);

struct train_step {
	struct ir_graph *g; /* owned */
	struct ir_value *loss;
	int nparams;
	struct ir_value **params; /* trained parameters (IR_VAL_PARAM values of g) */
	struct ir_value **grads;  /* their gradients: what update nodes read */
	int nstate;
	struct ir_value **state; /* state inputs of g, in input order */
	int ndata;               /* data inputs (model + loss); state[0] is input ndata */
	int update_first;        /* first node of the once-per-step part */
	int bwd_first;           /* first node of the backward pass (after the loss) */
	int nstages;             /* pipelined (the forward graph's nodes carried their
				  * stage in ir_node.tag): every node's tag is its
				  * stage, or IR_TAG_ALL for the update's global
				  * scalars (step, learning rate, gradient norm),
				  * which every stage computes; 0: not pipelined */
	int *param_stage;        /* [nparams] when pipelined, else NULL */
	int nfrozen;             /* floating point params left alone (frozen, set aside
				  * or off the loss) */
	int naside;              /* constants the rule set aside that the loss reaches */
	struct ir_value **aside; /* [naside] */
	enum train_aside *aside_why;
};

/* Builds the train step from forward graph g (which it takes over, also on
 * error). Errors: the loss spec names a missing value, a loss that is not
 * a scalar, labels of the wrong dtype or shape, an op with no gradient rule
 * (names the op and the parameter), a bad option: -EINVAL / -ENOTSUP. */
int train_build(struct ir_graph *g, const struct train_opts *o, struct train_step *ts);
void train_step_free(struct train_step *ts);
/* Zero-filled initial values of the state inputs (loss scale set). */
int train_state_init(const struct train_step *ts, const struct train_opts *o, struct ir_tensor *state);
/* The start value of every element of each state input, without the
 * tensors: start[ts->nstate]. */
void train_state_start(const struct train_step *ts, const struct train_opts *o, double *start);
/* The step's write-backs, nparams + nstate pairs: ties[k] = { the new
 * value's id, the id of the parameter or state input it replaces } (the
 * output layout above; intra_opts.ties). */
void train_step_ties(const struct train_step *ts, int (*ties)[2]);
/* One stderr-style summary of what ts trains, for pcc train and pcc
 * --train: when the rule set constants aside, "pcc: MODEL: training N
 * tensors; set aside as constants: NAME (WHY), ..."; then a warning per
 * trained tensor whose values equal another trained one's, or its
 * transpose (an untied copy of a tied weight: an export with constant
 * folding). Nothing when there is nothing to say. Reads inline values
 * only (external weights are not loaded for this). */
void train_params_print(const struct train_step *ts, const char *model, FILE *f);

/* `pcc train`: steps of the train step on the reference interpreter over
 * the data sets in in_dir (backend-test layout: input_N.pb in in_dir, or
 * in in_dir/test_data_set_K/, used in turn, accum sets per step; or .npz
 * files: in_dir itself, or those in it), then the
 * trained model written to save (ONNX, initializers updated) if given. */
struct train_run_opts {
	const char *model, *in_dir, *save;
	struct onnx_import_opts imp;
	struct train_opts t;
	int64_t steps;         /* default 1 */
	int64_t log_every;     /* 0: about 10 lines */
	FILE *log;             /* per-step lines; NULL: none */
	const char *log_json;  /* --log-json FILE: a JSON line every step (ir/steplog.h) */
	const char *eval_data; /* --eval-data DIR: held-out sets (as in_dir's) */
	int64_t eval_every;    /* their mean loss after every eval_every steps; 0: after the last */
};
/* Errors name the file, input or step; nothing is written unless every
 * step succeeded (a non-finite loss or gradient norm fails, unless the
 * step skips those: f16 loss scaling, train_opts.skip_nonfinite). */
int train_run(const struct train_run_opts *o);

#endif
