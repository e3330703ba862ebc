/*
 * inter_internal.h: shared by the inter-op pass's files (inter.c, the
 * search; inter_cost.c, per-layer costs from the intra-op pass;
 * inter_print.c, --explain and the plans weighed) and nothing else.
 */
#ifndef PCC_INTER_INTERNAL_H
#define PCC_INTER_INTERNAL_H

#include "compiler/search/search.h"

/* What every intra-op solve of the search shares. */
struct inter_env {
	const struct cost_cluster *c;
	bool train;
	enum cost_optim optim;
	int prec;         /* enum cost_prec or -1 */
	double mem_limit; /* bytes per device */
	const struct cost_calib *cal;
	const struct inter_opts *opts; /* what the layer solves take from the user */
	struct cost_state_bytes state; /* per parameter */
	double peak_flops;             /* one device at the step's precision */
	double elem_scale;             /* f32 activation bytes -> bytes in the step (0.5 mixed) */
	struct cost_link intra, inter;
	int per_node;        /* devices per node */
	bool no_interleaved; /* inter_opts.no_interleaved */
	int stages;          /* the exact stage count (inter_opts.stages, or what
			      * a forced mesh implies); 0: searched */
};

/* One (sub-mesh, logical mesh) choice: the DP's (m, c) flattened. */
struct inter_config {
	int mesh;       /* index into the sub-mesh list */
	int rows, cols; /* the sub-mesh: nodes x devices */
	int n0, n1;     /* its logical mesh */
};

struct inter_layer_cost {
	bool ok;                        /* a plan fits device memory */
	double t_mb;                    /* s per micro-batch, forward and backward */
	double t_sync;                  /* s per step: gradient reduction */
	double t_optim, t_optim_nozero; /* s per step: optimizer update with and without ZeRO-1 */
	double mem_state;               /* bytes per device: params, grads, optimizer (ZeRO-1) */
	double mem_state_nozero;        /* the same without ZeRO-1 */
	double mem_act;                 /* bytes per device one micro-batch keeps for its backward pass */
	double mem_once;                /* bytes per device held once: the working set above what is kept */
	double mem_upd;                 /* bytes per device of the update's temporaries (measured
					 * ranges only, inter_step.c), held after the last
					 * micro-batch instead of activations and mem_once */
	double mem_in_kept;             /* of mem_act, the layer's inputs (kept by the layer before too, */
	double mem_out_kept;            /* of mem_act, its outputs     when that one keeps its outputs) */
	double mem_in_dup;              /* of mem_in_kept, inputs the layer before keeps in another form */
};

/* What the lowering of a pipelined train step keeps per micro-batch, per
 * layer, in global bytes at the step's dtypes (inter_step.c): own[x], the
 * forward values whose first backward reader is layer x; cross[x], those
 * an earlier layer's backward reads first and layer x's or a later one's
 * too; work[x], the most other per-micro-batch temporaries live in layer
 * x; model[x], the ideal kept bytes the layer's intra-op solve counts;
 * upd[x], the most temporaries live in the update of layer x's
 * parameters; state[x], their parameter, gradient and optimizer bytes;
 * shared[x], values of the parameters alone (16-bit copies, transposed
 * weights) layer x's backward reads first, kept once for every
 * micro-batch in flight (plan_invariant_instr), not in own or cross.
 * All NULL (nlayers 0) when the step could not be built. */
struct inter_step_mem {
	int nlayers;
	double *own, *cross, *work, *model, *upd, *state, *shared; /* [nlayers] each, one allocation */
};

/* m for forward graph g at micro-batch size b in steps of `micro`
 * micro-batches, clustered as cl; g's nodes untouched (the step is built
 * from o->load's fresh copy). A step the default train options cannot
 * build leaves m empty (0); -ENOMEM. */
int inter_step_measure(const struct inter_env *env, const struct inter_opts *o, int64_t b, int micro,
		       const struct ir_graph *g, const struct cluster_result *cl, struct inter_step_mem *m);
void inter_step_mem_free(struct inter_step_mem *m);

/* Micro-batch sizes to try after the powers of two: the divisors of B
 * that are not powers of two within a factor of two of the best one,
 * nearest first, at most max (B = 1536, best 128: 96 and 192). */
int inter_batch_between(int64_t B, int64_t best, int64_t *cand, int max);

/* cost[l * ncfg + c] for every layer of cl and config, for steps of
 * `micro` micro-batches (the weight of once-per-step costs in the intra-op
 * objective), and lean[l * ncfg + c] (unless NULL) the lean variant of
 * each (inter_layer_solve); identical layers solved once (*nsolved counts
 * the layer and config pairs solved). With overlap (not NULL): only the
 * pairs it marks, solved with the gradient reduction overlapped
 * (inter_layer_opts), and no lean variants. */
int inter_layer_costs(const struct inter_env *env, const struct ir_graph *g, const struct cluster_result *cl, int ncfg,
		      const struct inter_config *cfg, int micro, const bool *overlap, struct inter_layer_cost *cost,
		      struct inter_layer_cost *lean, int *nsolved);

/* Keeps a plan weighed among p's fastest (p->alt, fastest first; ties:
 * less memory, then the earlier weighed). */
void inter_alt_keep(struct inter_plan *p, const struct inter_alt *a);
/* Marks the alternative that is p's plan. */
void inter_alt_mark(struct inter_plan *p);

#endif
