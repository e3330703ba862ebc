/*
 * steplog.h: --log-json FILE of pcc-run and pcc train: one JSON object per
 * training step and line (JSON Lines, which pandas.read_json(lines=True)
 * and jq read), written and flushed as the step ends:
 *
 *   {"step": 3, "steps": 100, "loss": 9.94, "grad_norm": 3.64, "lr": 0.0001,
 *    "skipped": false, "step_ms": 26.512, "samples": 1, "tokens": 1024,
 *    "samples_per_s": 37.7, "tokens_per_s": 38623, "sets": [2],
 *    "ranks": [{"rank": 0, "kernel_ms": 20.1, "comm_ms": 0.3}, ...]}
 *
 * "eval_loss" follows "loss" on the lines of steps an evaluation on
 * held-out data followed (pcc-run --eval-data DIR --eval-every K).
 * Non-finite numbers are null (JSON has none); "tokens" and its rate are
 * absent where the model reads no token ids; "ranks" where the tool runs
 * no ranks (pcc train). Times carry microseconds.
 */
#ifndef PCC_IR_STEPLOG_H
#define PCC_IR_STEPLOG_H

#include <stdbool.h>

struct ir_steplog;

struct ir_steprec {
	long step, steps; /* 1-based, of the run's total */
	double loss, grad_norm, lr;
	bool skipped;    /* a non-finite gradient norm: the update was skipped */
	double seconds;  /* the step's wall time */
	double samples;  /* per step */
	double tokens;   /* per step; 0: none */
	const int *sets; /* [nsets]: the data sets the step read (0: not told) */
	int nsets;
	int nranks;                      /* 0: no per-rank figures */
	const double *kernel_s, *comm_s; /* [nranks]: each rank's time this step */
	bool evaluated;                  /* an evaluation followed the step: "eval_loss" */
	double eval_loss;                /* its mean loss over the held-out data */
};

/* Opens path for writing (truncating it): 0, or a negative errno naming it. */
int ir_steplog_open(const char *path, struct ir_steplog **out);
/* Appends one line: 0, or -EIO naming the file. */
int ir_steplog_write(struct ir_steplog *l, const struct ir_steprec *r);
/* Closes it (NULL: nothing): 0, or -EIO when the last writes failed. */
int ir_steplog_close(struct ir_steplog *l);

#endif
