/*
 * report_internal.h: what the manual-plan report's files share: the
 * Megatron-style tensor-parallel propagation (report_tp.c), the evaluation
 * of a plan under the cost model (report_eval.c) and the printers
 * (report_print.c).
 */
#ifndef PCC_REPORT_INTERNAL_H
#define PCC_REPORT_INTERNAL_H

#include "compiler/compiler.h"

/* How a value is laid out over the tp ranks of one stage. */
enum tp_kind {
	TP_R,    /* replicated: every rank holds all of it */
	TP_S,    /* split along dim: each rank holds 1/tp */
	TP_P,    /* partial sums: the value is the sum of the ranks' copies */
	TP_FREE, /* derived from parameters only, layout not chosen yet */
};

struct tp_value {
	enum tp_kind kind;
	int dim;                 /* TP_S: the split dim */
	int origin;              /* TP_S: the column-parallel node it comes from, or -1 */
	int root;                /* TP_FREE: the parameter's value id */
	signed char pdim[IR_MAX_RANK]; /* TP_FREE: value dim -> parameter dim, -1 */
	bool grad;               /* depends on a parameter: has a gradient */
	bool gathered;           /* a replicated copy exists (all-gathered) */
	bool bwd_reduced;        /* its gradient's all-reduce is already counted */
};

enum tp_phase { TP_FWD, TP_BWD };

/* One collective the layout causes, per micro-batch. */
struct tp_event {
	int node;               /* where it happens (a node id: decides the stage) */
	enum cost_coll coll;
	enum tp_phase phase;
	double bytes;           /* per device, as cost_collective takes them */
	const char *why;        /* "row-parallel dot", "layer norm statistics", ... */
};

struct tp_result {
	int tp;
	struct tp_value *val;   /* [nvalues] */
	bool *node_split;       /* [nnodes]: the node's work is divided by tp */
	bool *param_split;      /* [nvalues]: parameter stored 1/tp per rank */
	struct tp_event *ev;
	int nev, cap;
};

/* Lays the graph out Megatron-style over tp ranks: a dot whose activation
 * operand is replicated splits its weight by output columns; one whose
 * operand is split on the contracting dim splits the weight by rows and
 * leaves partial sums, all-reduced where they are used; embeddings split
 * the vocabulary. elem_bytes: bytes of a floating-point activation element
 * (2 in mixed precision, 0 for the model's own). tp == 1 records nothing. */
int tp_propagate(const struct ir_graph *g, int tp, int elem_bytes, struct tp_result *r);
void tp_result_free(struct tp_result *r);

/* Bytes of v on one rank under r (float elements at elem_bytes when > 0). */
double tp_local_bytes(const struct tp_result *r, const struct ir_value *v, int elem_bytes);


/* ---- internals of report_tp.c and report_tp_rules.c ---- */

struct tp_ctx {
	const struct ir_graph *g;
	struct tp_result *r;
	int tp;
	int eb; /* activation element bytes (0: the model's) */
	int origin;   /* the column-parallel node the current node's split comes from */
	bool *forbid; /* [nnodes]: column-parallel splits that cost more than they save */
	bool blamed;  /* a new one was found this round */
};

struct tp_value *tp_st(struct tp_ctx *c, const struct ir_value *v);
bool tp_divisible(const struct tp_ctx *c, const struct ir_value *v, int d);
bool tp_splittable(const struct tp_ctx *c, const struct ir_value *v, int d);
double tp_full_bytes(const struct tp_ctx *c, const struct ir_value *v);
bool tp_is_free(struct tp_ctx *c, const struct ir_value *v);
/* Records a collective at node n. */
int tp_event_add(struct tp_ctx *c, const struct ir_node *n, enum cost_coll coll, enum tp_phase ph,
		 double bytes, const char *why);
/* v used whole by split work: its gradient is all-reduced once backward. */
int tp_used_whole(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v, const char *why);
/* Makes v available whole (all-reduce of partial sums, all-gather of a split). */
int tp_need_repl(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v);
/* Makes v available split on dim d (a local slice of a replicated value). */
int tp_take_split(struct tp_ctx *c, const struct ir_node *n, const struct ir_value *v, int d);
void tp_set_split(struct tp_ctx *c, const struct ir_value *v, int d);
void tp_set_free_like(struct tp_ctx *c, const struct ir_value *out, const struct tp_value *src, const int *map);
/* The rule of n's op (report_tp_rules.c). */
int tp_node_rule(struct tp_ctx *c, const struct ir_node *n);

/* Evaluates graph g, its batch dim bound to r->micro_batch, under plan p
 * with the axes tp, dp, pp mapped onto the cluster; fills the rest of r
 * (r->dev, prec, mixed, batch, mb set by the caller). */
int report_eval_graph(const struct ir_graph *g, const struct report_plan *p, const struct cost_calib *cal,
		      const struct cost_axis axes[3], struct report *r);

#endif
