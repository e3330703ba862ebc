/*
 * search.h: the search for a plan, the one header of compiler/search/:
 * pipeline schedules and their simulator, the intra-op pass (a stage's
 * shardings on its logical mesh), layer clustering and the inter-op pass
 * (stages, sub-meshes, micro-batches, the schedule). Above compiler.h,
 * which it includes (the passes cut graphs with graph_extract and cost
 * with the cost model): the compile pipeline, lowering, pcc report and
 * the tests include it; the intra-op pass's files share intra_internal.h,
 * the inter-op pass's inter_internal.h. Errors follow ir.h: negative
 * errno, message in ir_error().
 */
#ifndef PCC_COMPILER_SEARCH_H
#define PCC_COMPILER_SEARCH_H

#include <stdio.h>

#include "compiler/compiler.h"

/* ---- pipeline schedules (sched*.c) --------------------------------------
 * A pipeline schedule as the explicit order of operations on each device,
 * and a simulator that runs those orders against per-stage costs: it finds
 * the step time, idle time and activation memory, and rejects a broken
 * order (deadlock, unmatched transfer, missing or repeated op) with a
 * message naming the device, the op index and the op.
 *
 * p stages on p devices (one representative device per stage), m
 * micro-batches, v model chunks per device (interleaved only; else 1).
 * Virtual stage k = chunk * p + device, k = 0 .. p*v - 1 in model order
 * (Megatron-LM's layout): activations flow k -> k + 1, gradients back. */

enum sched_kind {
	SCHED_FWD,       /* forward of (mb, chunk) */
	SCHED_BWD,       /* backward of (mb, chunk) */
	SCHED_SEND_ACT,  /* activation of mb from this device's chunk (stage k) to k + 1 on peer */
	SCHED_RECV_ACT,  /* activation of mb into this device's chunk (stage k) from k - 1 on peer */
	SCHED_SEND_GRAD, /* gradient of mb from this device's chunk (stage k) to k - 1 on peer */
	SCHED_RECV_GRAD, /* gradient of mb into this device's chunk (stage k) from k + 1 on peer */
	SCHED_KIND_COUNT
};

/* One op. chunk is always the chunk on the device running the op; peer is
 * the other device of a transfer (unused, 0, for FWD and BWD). */
struct sched_op {
	enum sched_kind kind;
	int mb, chunk, peer;
};

struct sched {
	enum cost_sched kind;
	int p, m, v;
	int *nops;             /* [p] ops per device */
	struct sched_op **ops; /* [p][nops[d]], each ir_malloc'd (tests edit them with ir_realloc) */
};

/* Builds the orders; a transfer is placed right before the op that needs
 * it (receive) or right after the op that makes it (send).
 *   gpipe        all m forwards in order, then all backwards in reverse
 *                order (m-1 first, as autograd runs them in GPipe): a
 *                stage holds m micro-batches of activations at its peak.
 *   1f1b         PipeDream-flush / Megatron: stage i runs min(p-i-1, m)
 *                warm-up forwards, then one forward one backward, then
 *                the remaining backwards.
 *   interleaved  Megatron's interleaved 1F1B: the device's forwards and
 *                backwards are numbered 0 .. m*v-1, the j-th in groups of
 *                p micro-batches per chunk (forward chunk (j mod pv) / p,
 *                backward chunks in reverse); warm-up of
 *                min(2 (p-i-1) + (v-1) p, m v) forwards, then as 1f1b.
 *                Needs m % p == 0 and v >= 2.
 * gpipe and 1f1b take v = 1. -EINVAL with a message (for m % p != 0, the
 * nearest valid micro-batch counts). s is zeroed first, so sched_free is
 * safe after an error. */
int sched_build(enum cost_sched kind, int p, int m, int v, struct sched *s);
void sched_free(struct sched *s);

/* An op as text: F3, B3 (forward, backward of micro-batch 3), Sa3>1 (send
 * its activation to device 1), Ra3<0 (receive it from device 0), Sg3>0,
 * Rg3<1 (the gradient); ".c" after the micro-batch for chunk c > 0
 * (F3.1). Returns buf. */
const char *sched_op_str(const struct sched_op *op, char *buf, size_t n);
/* One device's order on one line, ops separated by spaces. -EINVAL for a
 * device out of range, -EIO when the write fails. */
int sched_print(const struct sched *s, int device, FILE *f);

/* Costs per virtual stage k (p*v entries; with v = 1 one per stage). */
struct sched_costs {
	const double *t_fwd, *t_bwd; /* s per micro-batch */
	const double *t_xfer;        /* [p*v - 1] s per transfer across the boundary k -> k+1
				      * (either direction); NULL: 0. Boundaries inside one
				      * device (p = 1) have no transfer. */
	const double *act_bytes;     /* bytes per micro-batch held from the FWD of k to its
				      * BWD; NULL: 0 */
	const double *static_bytes;  /* [p] bytes per device (parameters, ...); NULL: 0 */
};

struct sched_sim {
	double step_time;       /* s: when the last op of any device ends */
	double *busy;           /* [p] s of FWD and BWD per device */
	double *peak_bytes;     /* [p] bytes per device: static + most activations held */
	double bubble_fraction; /* (p * step_time - sum busy) / sum busy: idle time
				 * relative to the ideal (busy) time, the definition of
				 * cost_bubble_fraction ((p-1)/m for equal stages) */
	double idle_fraction;   /* 1 - sum busy / (p * step_time): the idle share of
				 * the step ((p-1)/(m+p-1) for equal stages) */
};

/* Runs every device's ops in order. FWD and BWD take their time; sends
 * take none and never block (asynchronous); a receive ends when the
 * matching send has been issued plus t_xfer, and the device waits for it;
 * links have no contention. A compute op's inputs are earlier ops on its
 * own device: the receive of its activation (gradient), or the FWD of k-1
 * (BWD of k+1) when that stage is on the same device; the last stage's
 * BWD needs its own FWD. Activations are counted from FWD to BWD.
 * Errors, each naming device, op index and op: -EINVAL an op out of range
 * or with the wrong peer, an op run twice or never, a send never received
 * or a receive never sent, a BWD before its FWD, a send before the op
 * producing it; -EDEADLK an op before the receive it needs on its own
 * device, or devices all waiting on receives that no one reaches (every
 * waiting device is named). Free out with sched_sim_free, also after an
 * error. */
int sched_simulate(const struct sched *s, const struct sched_costs *c, struct sched_sim *out);
void sched_sim_free(struct sched_sim *r);

/* ---- the intra-op pass (intra*.c) ---------------------------------------
 * Chooses how every value of one stage is split over a 2-D logical mesh of
 * the cluster's devices: per op, strategies from its dimension labels
 * (intra_rules.c), compute, communication and memory costs from the cost
 * model, resharding costs on every edge, then the strategy problem solved
 * by solvers/. The answer is written onto the graph as sharding annotations
 * (ir_value.sharding, ir_graph_mesh). */

/* The solver's default backstop, s: about 6 times the longest bounded
 * solve measured (MoE 380M on 1x8, 10.5 s on an idle 2-core host). */
#define INTRA_TIME_LIMIT 60

struct intra_opts {
	int n0, n1;                     /* the mesh; n0 * n1 <= the cluster's devices */
	bool train;                     /* cost a training step: backward compute and
					 * collectives, gradients, optimizer state */
	enum cost_optim optim;          /* training only; default adam */
	int prec;                       /* enum cost_prec, or -1: bf16 where the device
					 * has it, else f16, else f32 (as pcc report) */
	bool step_dtypes;               /* the graph's dtypes are those lowering keeps (a
					 * train step's own: 16-bit copies, f32 softmax and
					 * master weights; a stage lowered as imported):
					 * values cost their dtype's bytes, not the 16 bits
					 * a mixed-precision step would give a forward
					 * graph's floats */
	double mem_limit;               /* bytes per device; 0: 90% of device memory */
	double time_limit;              /* s of wall time for the solver, a backstop only:
					 * its work is bounded by counts, so the plan does
					 * not depend on the machine's load unless this
					 * fires (intra_result.timed_out); default
					 * INTRA_TIME_LIMIT */
	const struct cost_calib *cal;   /* NULL: default efficiencies */
	bool no_follow;                 /* give every op its own variable (tests) */
	bool quick;                     /* greedy and local search only, no MIP (thread-safe:
					 * the inter-op pass's many per-layer solves) */
	int zero;                       /* training: the ZeRO stage. 1: each parameter's
					 * optimizer state and update split over the devices
					 * holding copies of it (its gradient all-reduce
					 * becomes a reduce-scatter and an all-gather: the
					 * same bytes); 2: its gradient too; 3: the parameter
					 * too, all-gathered over mesh axis 0 for the forward
					 * and again for the backward of every micro-batch
					 * (not hidden under compute; the gradient still
					 * reduced once per step, as with 1 and 2) */
	double step_share;              /* weight of once-per-step costs (gradient
					 * reductions, optimizer updates) in the objective:
					 * 1 / micro-batches when solving one micro-batch; default 1 */
	double sync_share;              /* weight of the gradient reductions alone: 0 when
					 * they overlap the backward pass; < 0 (default):
					 * step_share */
	bool inputs_resident;           /* the graph's inputs are already on the devices (a
					 * layer's activations from the layer before), not
					 * copied from the host every step */
	const bool *inputs_kept_before; /* per graph input (by index): what the
					 * backward pass keeps of it is kept in another form
					 * by the layer before (its producer's input), so
					 * intra_result.mem_in_dup counts it; NULL: none */
	double state_price;             /* training: s per byte of parameter, gradient and
					 * optimizer state per device added to the objective,
					 * for a plan leaner than the fastest (weights split
					 * at some communication); t_total leaves it out; 0: none */
	int update_first;               /* a train step's graph (train_build): nodes from
					 * update_first on run once per step, so their costs
					 * and those of resharding into them weigh step_share;
					 * 0: none */
	int bwd_first;                  /* a pipelined stage's part of a train step: nodes
					 * from bwd_first to update_first are its backward
					 * part; a value of the forward part (or an input)
					 * the backward part reads is stashed as lowering
					 * stashes it (lower_mem.c): held from the start of
					 * the micro-batch's part to its end, in stash_slots
					 * copies; 0: not pipelined */
	int stash_slots;                /* micro-batches in flight on the stage (slots) */
	const bool *held;               /* per value id, or NULL: held from the start of the
					 * step to its end in the sharding computed (a
					 * gradient added into its accumulator, a model
					 * input bound for the whole step) */
	const bool *passed;             /* per value id, or NULL: a graph output passed on
					 * once made (sent to another stage, or written
					 * back over the value it replaces): it lives until
					 * its last reader here, not to the end */
	int nties;                      /* value pairs (v, w) of a train step: after the
					 * step, new value v is brought to w's sharding and
					 * copied over it (new parameters and state), costed
					 * once per step */
	const int (*ties)[2];
	bool manual_tp; /* a manual plan's tensor parallelism (pcc report
			 * --plan ...,tp=T, on a 1 x T mesh): no axis splits a
			 * dim that runs along a graph input's dims (the
			 * samples and their tokens, which data parallelism
			 * divides, not the mesh; on a D x T mesh axis 0 is
			 * the D data-parallel replicas and splits only
			 * those, axis 1 only the rest), and a dim that runs along
			 * a parameter's splits padded when it does not divide
			 * (Megatron pads the vocabulary to a multiple of
			 * tp); such a plan is costed, never lowered */
};
void intra_opts_init(struct intra_opts *o);

/* One collective the chosen plan runs, for --explain and tests. */
struct intra_event {
	int node;    /* graph node causing it (consumer for resharding) */
	int operand; /* its operand, or -1: the node's own collective */
	bool bwd;    /* in the backward pass (training) */
	enum cost_coll coll;
	int axis;     /* mesh axis */
	double bytes; /* per device, as cost_collective takes it */
	double t;     /* s */
	bool once;    /* once per step: the gradient reduction of a parameter
		       * or a value computed from parameters alone */
};

struct intra_state;
struct intra_result {
	double t_total; /* s: the objective (one step or forward pass) */
	double t_compute, t_comm;
	double mem_peak, mem_limit; /* bytes per device */
	double mem_end;             /* bytes per device live at the end (state, kept activations, outputs) */
	double mem_out;             /* of which graph outputs the backward pass does not keep */
	double mem_out_kept;        /* of which graph outputs it keeps */
	double mem_in_kept;         /* of which graph inputs it keeps */
	double mem_in_dup;          /* of that, inputs intra_opts.inputs_kept_before marks */
	double t_optim;             /* s: optimizer updates (once per step; in t_total x step_share) */
	double t_optim_nozero;      /* s: the same without ZeRO's split */
	double mem_zero_saved;      /* bytes per device ZeRO's split saves */
	double mem_zero_kind[3];    /* of them, parameters', gradients', optimizer state's */
	double mem_state;           /* bytes per device of parameters, gradients and
				     * optimizer state (with ZeRO's split when zero) */
	double mem_state_least;     /* the same split evenly over every device */
	int nvars;                  /* solver variables after following */
	int nstrategies;            /* strategies over all variables */
	double solve_s;             /* wall time of the solver */
	double pass_s;              /* wall time of the whole pass */
	bool timed_out;             /* the time limit (a backstop) cut the solver's
				     * counted work short: the plan may vary with the
				     * machine's speed and load */
	int nevents;
	struct intra_event *events; /* [nevents] */
	struct intra_state *st;     /* what --explain needs */
	/* mem_peak by what holds it: bytes held for the whole program
	 * (parameters, optimizer state, gradient accumulators, bound inputs);
	 * a pipelined stage's stash per micro-batch, in stash_slots slots;
	 * the rest is the working set at the peak */
	double mem_held, mem_stash;
	int stash_slots;
	/* mem_peak with the buffers the chosen strategies' reshardings take,
	 * which lowering's arena holds and the problem's usages cannot (a
	 * resharding is an edge's, a usage a unit's): what a plan states its
	 * stage holds; mem_held and mem_stash are at this peak */
	double mem_stated;
};

/* Runs the pass on g over cluster c; on success annotates g (ir.h): its
 * mesh, every value's sharding and the sharding every node reads its
 * operands in, the contract lowering reads; and fills r (free with
 * intra_result_free). Errors name the mesh, the op or the memory limit:
 * -EINVAL bad options, -ENOSPC no plan fits memory. */
int intra_pass(struct ir_graph *g, const struct cost_cluster *c, const struct intra_opts *o, struct intra_result *r);
void intra_result_free(struct intra_result *r);

/* The sharding rule of node n's op (intra_rules.c) on mesh n0 x n1, asked
 * in the order the pass lists its strategies for the first one whose
 * result has sharding out (partial sums included), whose operands have
 * in[0 .. n->nin - 1] when in is not NULL, and which, when no_own, runs
 * no collective of its own. 1 when one does, with its operands' shardings
 * in got[0 .. n->nin - 1] (when got is not NULL) and in *own (when not
 * NULL) the mesh axes over which the node all-reduces its result (a max
 * or min over a split dimension; 0 for most); 0 when none does. */
int intra_rule_find(const struct ir_node *n, int n0, int n1, const struct ir_sharding *out,
		    const struct ir_sharding *in, bool no_own, struct ir_sharding *got, uint8_t *own);
/* How many intra_pass and intra_reprice solves in this process so far were
 * cut short by their time limit (intra_result.timed_out; thread-safe), so
 * that a driver can say once that its plan may vary with machine load. */
int intra_timeouts(void);
/* Solves r's problem again (r from intra_pass on g, training) with
 * intra_opts.state_price set to state_price; r and g's annotations are
 * replaced by the new answer, or r is freed on error. */
int intra_reprice(struct ir_graph *g, double state_price, struct intra_result *r);
/* Training: per value id of g, whether the backward pass keeps it (as
 * intra_pass counts memory: an elementwise result may be redone from its
 * kept inputs instead). NULL when out of memory (ir_free it). */
bool *intra_saved_values(const struct ir_graph *g);
/* Devices sharing the work of node `node` (its index in g) under r's plan:
 * the product of the mesh axes its strategy splits (1: replicated work). */
int intra_node_pieces(const struct intra_result *r, int node);
/* Per op: chosen sharding, its cost, the collectives it causes and the
 * runner-up strategy with its extra cost. */
int intra_explain(const struct ir_graph *g, const struct intra_result *r, FILE *f);

/* One op of an intra-op plan as intra_explain describes it. */
struct intra_note {
	int node; /* its node id in the graph solved */
	char op[24], name[80];
	char chosen[160]; /* "<S1,R> x <R,R> -> <S1,R>" (cut short when longer) */
	char runner[160]; /* the runner-up strategy, "" when the op has none of
			   * its own (it follows a neighbour, or has one strategy) */
	double t;         /* s: compute and the collectives it causes, per
			   * micro-batch (once-per-step gradient reductions left out) */
	double delta;     /* s: the objective's rise under the runner-up; NAN: none */
	char coll[80];    /* its costliest such collective, "" when none */
};
/* Every op of r's plan, costliest first (*out ir_malloc'd, *n). */
int intra_notes(const struct intra_result *r, struct intra_note **out, int *n);

/* ---- layer clustering (cluster.c) ---------------------------------------
 * Cuts a graph's nodes, in program order, into layers for the inter-op
 * pass: fewest bytes across the worst cut, then across all cuts, then the
 * most even FLOPs; each layer has a heavy op and at most (1 + eps) times
 * the mean FLOPs (eps doubled where nothing meets it). */
struct cluster_opts {
	int layers;     /* 0: automatic, heavy ops / 3, at most max_layers */
	int max_layers; /* 16 */
	double eps;     /* 0.5, Alpa's */
};
void cluster_opts_init(struct cluster_opts *o);

struct cluster_result {
	int nlayers;
	int *first;              /* [nlayers + 1]: layer l is nodes [first[l], first[l+1]) */
	double *flops;           /* [nlayers] */
	double *cut_bytes;       /* [nlayers + 1]: bytes crossing into layer l (0 for l = 0) */
	double max_cut, sum_cut; /* over the cuts between layers */
	double eps;              /* the balance bound used */
};
int cluster_layers(const struct ir_graph *g, const struct cluster_opts *o, struct cluster_result *r);
void cluster_result_free(struct cluster_result *r);

/* ---- the inter-op pass (inter*.c) ---------------------------------------
 * The whole automatic plan: layers (cluster_layers), per layer and
 * (sub-mesh, logical mesh) the intra-op pass's plan, then the stage DP
 * (solvers/: stage_dp_solve) over layer ranges and sub-meshes with the
 * stage-to-stage transfers and each stage's memory under the schedule
 * (1F1B holds one micro-batch per later stage, plus its own), for each
 * candidate micro-batch count; then the schedule (GPipe, 1F1B,
 * interleaved 1F1B) with the best step time that fits. */
struct inter_opts {
	bool train;
	enum cost_optim optim; /* training; default adam */
	int prec;              /* enum cost_prec, or -1: the device's 16-bit type */
	int64_t batch;         /* global batch per step; 0: the graph's batch, one micro-batch */
	int micro;             /* micro-batches per step; 0: searched */
	int layers;            /* 0: automatic */
	double mem_limit;      /* bytes per device; 0: 90% of device memory */
	const struct cost_calib *cal;
	/* The forward graph at micro-batch size b (a symbolic batch bound to
	 * b), or with static_batch > 0, the graph of that batch whatever b. */
	struct ir_graph *(*load)(void *ctx, int64_t b);
	void *ctx;
	int64_t static_batch;                /* the model's batch when fixed, else 0 */
	bool no_interleaved;                 /* leave interleaved 1F1B out of the search (what
					      * lowering a training plan cannot run yet) */
	bool lowered_memory;                 /* training: charge each stage the activations and
					      * working sets the lowering allocates, measured on the
					      * train step (inter_step.c), not those of an ideal
					      * backend (cost_saved.c, as pcc report's manual plans):
					      * for a plan that is lowered (pcc -o plan.bin) */
	int stages;                          /* exactly this many pipeline stages (at most the
					      * devices, the layers and 64); 0: searched */
	int mesh0, mesh1;                    /* every stage's logical mesh is mesh0 x mesh1 on a
					      * sub-mesh of mesh0 * mesh1 devices, so the stages
					      * number devices / (mesh0 * mesh1); 0: searched */
	double time_limit;                   /* s, every sharding solve's backstop (the search's
					      * per-layer ones and the stages' final ones, as
					      * intra_opts.time_limit); 0: INTER_TIME_LIMIT for
					      * the per-layer solves, INTRA_TIME_LIMIT for the rest */
	const struct inter_refused *refused; /* stages lowering could not fit: never chosen */
	int nrefused;
	int recompute;  /* training: -1 searched per stage (default), 0 never, 1 every
			 * stage recomputes its activations (activation checkpointing) */
	int zero;       /* training: -1 searched per stage (default), 0 never, 1 every
			 * stage splits its optimizer state (ZeRO-1); with manual_tp
			 * also 2 (its gradients too) and 3 (its parameters too,
			 * gathered every micro-batch: intra_opts.zero) */
	int sched;      /* the pipeline schedule (enum cost_sched), -1: searched (default);
			 * with stages, mesh and micro a plan held to a manual
			 * plan's choices, costed as the search costs its own */
	int v;          /* interleaved: chunks per device; 0: 2 (what the search tries) */
	bool manual_tp; /* every layer solved as a manual plan's (intra_opts.manual_tp):
			 * on mesh n0 x n1, n0 data-parallel replicas and n1
			 * tensor-parallel ranks */
	/* What the searches of one compile share (NULL: none): every micro-
	 * batch size's layer costs, which do not depend on the stages refused,
	 * so a search run again after lowering refused a stage solves no
	 * layer a search before it solved. */
	struct inter_cache *cache;
};
void inter_opts_init(struct inter_opts *o);
/* An empty cache for inter_opts.cache (NULL: out of memory); freed with
 * inter_cache_free (NULL: nothing). */
struct inter_cache *inter_cache_new(void);
void inter_cache_free(struct inter_cache *c);

/* A stage of a chosen plan that lowering (compile_lower) could not fit in
 * the memory limit: its layers on its mesh, at that micro-batch size with
 * at least that many micro-batches in flight (lowering solves the stage's
 * sharding itself, so the search's per-stage options do not matter). The
 * search leaves every such stage out (inter_opts.refused), so a plan
 * written is one lowering keeps within the limit. */
struct inter_refused {
	int64_t micro_batch;
	int layer_first, layer_last, rows, cols, n0, n1;
	double inflight;
};

/* The backstop of the search's per-layer solves, s: they take milliseconds
 * (at most 40 ms measured, for real models on an idle host). */
#define INTER_TIME_LIMIT 30

/* How the inter-op pass solves one layer (a graph of its own,
 * graph_extract) on mesh n0 x n1 for steps of `micro` micro-batches: the
 * intra-op pass without a memory limit (the search checks memory per
 * stage), local search only. With overlap, the gradient reductions weigh
 * INTER_SYNC_OVERLAP of their share: a stage whose reduction the backward
 * pass hides trades it for less work per micro-batch (a data-parallel
 * layout rather than sharded weights), and so does the stage's final
 * solve (inter_stage.overlap). */
#define INTER_SYNC_OVERLAP 0.1
void inter_layer_opts(const struct inter_opts *io, int n0, int n1, int micro, bool overlap, struct intra_opts *o);
/* How the pass clusters the graph into layers: io->layers, or automatic,
 * at most 16 for the search, and for a manual plan (io->manual_tp) as
 * many as the model has (a third of its heavy ops: two per transformer
 * block, cut after each residual add), as pcc report cuts a manual
 * plan's stages wherever one activation is live. */
void inter_cluster_opts(const struct inter_opts *io, struct cluster_opts *co);
/* A layer's time per micro-batch, forward and backward, from r solved
 * under o: its objective less the once-per-step costs (t_sync: the
 * gradient reductions among r's events). */
double inter_layer_t_mb(const struct intra_result *r, const struct intra_opts *o, double t_sync);
/* A layer's lean variant, which a stage short of memory takes instead of
 * its fastest plan: the layer re-solved (intra_reprice) with its
 * parameter, gradient and optimizer bytes priced at the fastest plan's
 * time per byte of them, so that splitting weights wins wherever it saves
 * a larger share of state than of time (Megatron's tensor parallelism
 * where data parallelism's replicas do not fit). The price, given the
 * fastest plan `fast` of the layer, the trained parameter elements of the
 * layer and of the whole model (inter_trained_numel) and the memory limit
 * per device; 0 when the variant is the fastest plan: its state is split
 * already, or the whole model's state laid out as this layer's would take
 * under a quarter of the limit. */
double inter_lean_price(const struct intra_result *fast, double layer_numel, double model_numel, double mem_limit);
double inter_trained_numel(const struct ir_graph *g);

struct inter_stage {
	int layer_first, layer_last; /* layers [first, last] */
	int node_first, node_last;   /* nodes [first, last) of the forward graph */
	int rows, cols;              /* sub-mesh: nodes x devices per node */
	int n0, n1;                  /* logical mesh */
	double t_mb;                 /* s per micro-batch, forward and backward */
	double t_xfer;               /* s per micro-batch sending to the next stage and back */
	double t_sync;               /* s per step: gradient reduction */
	double mem_state, mem_act;   /* bytes per device: state, per micro-batch in flight */
	double mem_once;             /* bytes per device held once: a layer's working set */
	bool recompute;              /* keeps only layer inputs, recomputes the rest */
	bool zero;                   /* ZeRO-1: optimizer state split over each parameter's copies */
	bool lean;                   /* its layers' plans trade time for less state
				      * (inter_layer_solve's lean variant) */
	bool overlap;                /* solved with its gradient reduction overlapped
				      * (inter_layer_opts) */
	double t_optim;              /* s per step: optimizer update */
	double inflight;             /* micro-batches held at the peak */
	double mem;                  /* peak bytes per device */
};

/* A plan the search weighed (the best stage assignment of one micro-batch
 * size under one schedule), for --explain: why this plan and not another. */
#define INTER_MAX_ALTS 10
struct inter_alt {
	int64_t micro_batch;
	int micro;
	enum cost_sched sched;
	int v;
	int nstages;
	char stages[96];            /* "2 x 1x8, 1 x 2x4" */
	double step_time, mem_peak; /* s, bytes per device */
	bool chosen;                /* the plan taken */
	/* Training: the same stages solved twice, with each stage's gradient
	 * reduction after the backward pass and overlapped with it
	 * (inter_layer_opts). One entry holds both: the faster (on a tie the
	 * one with less memory, then the first) and the other's figures. */
	bool overlap;               /* this one was solved overlapped */
	bool twin;                  /* the other solve was timed too */
	double twin_time, twin_mem; /* its step time and peak memory */
};

struct inter_plan {
	bool train; /* a training step (else inference) */
	int nlayers;
	int *layer_node; /* [nlayers + 1]: each layer's first node in the forward
			  * graph, then the graph's node count */
	int nstages;
	struct inter_stage *stages;
	int64_t batch, micro_batch;
	int micro; /* micro-batches per step */
	enum cost_sched sched;
	int v; /* interleaved: chunks per device */
	double step_time, samples_per_s, mfu, mem_peak, mem_limit;
	int devices;
	int nsolved;     /* intra-op solves (identical layers share) */
	double search_s; /* wall time of the pass */
	/* The fastest plans that fit among those weighed, fastest first, the
	 * chosen one among them; nweighed counts every one weighed (those
	 * that do not fit included), each once: a training plan timed with
	 * its gradient sync after the backward pass and overlapped is one
	 * plan (one entry), and so is one stage under 1F1B and GPipe. */
	struct inter_alt alt[INTER_MAX_ALTS];
	int nalt, nweighed;
	/* Candidates skipped: micro-batch sizes whose graph the loader could
	 * not build (a Reshape that cannot take that many samples), and why
	 * the smallest of them failed (the loader's message). */
	int nskipped;
	int64_t skipped_size;
	char skipped_why[384];
};
/* A micro-batch size the loader cannot build (with a symbolic batch) is
 * skipped and counted, not fatal.
 * Errors: -ENOSPC "does not fit" naming the least memory per device any
 * plan needs and what the devices have; -EINVAL a batch no schedule can
 * split, with the nearest valid batch sizes, or a forced stage count or
 * mesh the cluster or the model cannot take (more stages than devices or
 * layers, a mesh no sub-mesh matches, stages x mesh not the devices), or
 * no candidate micro-batch size the loader can build: the loader's reason
 * at the smallest, the sizes tried, and the smallest size that builds. */
int inter_pass(const struct cost_cluster *c, const struct inter_opts *o, struct inter_plan *p);
void inter_plan_free(struct inter_plan *p);
/* How a's gradient reduction was solved, and what the other way costs:
 * "after backward", "overlapped (after: +0.4%)", "" for inference. */
void inter_alt_sync_str(const struct inter_alt *a, bool train, char *buf, size_t size);
/* The same into a's JSON object o: "gradient_sync" ("after", "overlapped",
 * null for inference), "other_way_step_time_s" and
 * "other_way_peak_memory_bytes" (null where the other way was not timed). */
struct json_t;
void inter_alt_json_sync(struct json_t *o, const struct inter_alt *a, bool train);
/* Stages, sub-meshes, logical meshes, schedule, micro-batches, step time,
 * throughput, MFU and memory per device; then the fastest alternatives. */
int inter_explain(const struct inter_plan *p, FILE *f);
/* One line when the search skipped candidates (nothing otherwise): how
 * many, the smallest micro-batch size skipped and why. */
void inter_skipped_print(const struct inter_plan *p, FILE *f);
/* "layer 2" or "layers 2-5": a stage's layers in words. */
#define INTER_LAYERS_STRLEN 48
const char *inter_layers_str(int first, int last, char buf[INTER_LAYERS_STRLEN]);
struct plan;
/* pcc --explain -o plan.bin: per stage, the predicted memory per device
 * (as lowering's sharding solve restated it, compile_input.stated)
 * against the lowered plan's arena, by what it holds. */
void inter_lowered_print(const struct inter_plan *p, const struct plan *lp, FILE *f);
/* The plans weighed as a table, fastest first, each against t_plan. */
void inter_alts_print(const struct inter_alt *alt, int nalt, int nweighed, double t_plan, bool train, FILE *f);

#endif
