/*
 * train_internal.h: shared by the train-step files (train.c, train_optim.c,
 * train_cast.c) and nothing else.
 */
#ifndef PCC_TRAIN_INTERNAL_H
#define PCC_TRAIN_INTERNAL_H

#include "compiler/train/train.h"

/* Rejects options no step can be built from: -EINVAL naming the option. */
int train_check_opts(const struct train_opts *o);
/* Replaces *g by a copy computing in dtype to (train_cast.c): f64 casts
 * everything, parameters included; f16/bf16 keep f32 parameters (master
 * weights) and inputs, converted where read, and run layer norm, softmax,
 * reductions, exp and log in f32. Frees the old graph. */
int train_cast(struct ir_graph **g, enum ir_dtype to);
/* Adds a state input (name, dtype, shape) to ts->g and ts->state. */
int train_add_state(struct train_step *ts, const char *name, enum ir_dtype t, const struct ir_shape *s,
		    struct ir_value **out);
/* Appends the once-per-step part (train_optim.c): clipping, the learning
 * rate schedule, the optimizer and loss scaling; adds the state inputs and
 * sets the outputs. */
int train_update(struct train_step *ts, const struct train_opts *o);
/* The parameters train_build differentiates (train_params.c): the
 * floating point initializers of g that are not state, not frozen and not
 * constants by the rule (those the loss reaches: ts->aside, with why),
 * into *out (ir_calloc'd); returns how many, ts->nfrozen counting the
 * others. loss: the value differentiated. */
int train_candidates(const struct ir_graph *g, const struct ir_value *loss, const struct train_opts *o,
		     struct train_step *ts, struct ir_value ***out);

#endif
