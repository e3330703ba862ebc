/*
 * lr.h: the learning-rate schedule, one truth for the compiler (which
 * builds it into the training step's graph and logs it in pcc train) and
 * pcc-run (which logs it): the peak rate, a linear warmup, then constant,
 * cosine or linear decay to a floor over `total` steps. A plan carries it
 * in its train_config line ("... lr=0.001 ... schedule=cosine warmup=100
 * total=1000 min_lr=0 ..."), which ir_lr_parse reads back.
 */
#ifndef PCC_IR_LR_H
#define PCC_IR_LR_H

#include <stdint.h>

enum ir_lr_kind { IR_LR_CONSTANT, IR_LR_COSINE, IR_LR_LINEAR };

struct ir_lr {
	enum ir_lr_kind kind;
	double lr;      /* peak */
	int64_t warmup; /* linear warmup steps */
	int64_t total;  /* steps of the decay, warmup included */
	double min_lr;  /* where the decay ends */
};

/* The rate of step t (0-based). */
double ir_lr_at(const struct ir_lr *s, int64_t t);

/* The schedule a train_config line states: 0, or -EINVAL when it states no
 * lr= (a missing schedule= is constant; warmup, total and min_lr are 0). */
int ir_lr_parse(const char *train_config, struct ir_lr *s);

#endif
