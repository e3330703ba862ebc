/*
 * intra_internal.h: shared by the intra-op pass's files (intra*.c); not part
 * of search.h.
 *
 * Every op is described by dimension labels, einsum style: a label is one
 * iteration dimension of the op with a size and a kind; each operand and
 * result dimension names the label it runs along, or none (-1: that
 * dimension can never be split, e.g. a softmax axis). A strategy assigns each
 * mesh axis to at most one label (both axes may take the same one); every
 * operand and the result are then split on the axes of their labels. A
 * split summed label (a dot's contracting dimension) leaves partial sums in
 * the result; a split max label costs the node an all-reduce.
 */
#ifndef PCC_COMPILER_INTRA_INTERNAL_H
#define PCC_COMPILER_INTRA_INTERNAL_H

#include "compiler/search/search.h"
#include "solvers/solvers.h"

#define INTRA_MAX_LABELS 16
#define INTRA_MAX_IN 3 /* operands with their own labels; later ones share row 0 (concat) */

enum intra_kind {
	INTRA_PAR, /* appears in the result */
	INTRA_SUM, /* reduced by a sum: split leaves partial sums */
	INTRA_MAX, /* reduced by max/min: split needs an all-reduce in the node */
	INTRA_KIND_COUNT
};

struct intra_labels {
	int n;
	int64_t size[INTRA_MAX_LABELS];
	unsigned char kind[INTRA_MAX_LABELS];
	signed char in[INTRA_MAX_IN][IR_MAX_RANK]; /* label per operand dim, -1 none */
	signed char out[IR_MAX_RANK];              /* label per result dim, -1 none */
	uint32_t padded;                           /* labels that may split unevenly, padded
						    * (intra_opts.manual_tp), a bit each */
};

/* Fills the labels of node n (intra_rules.c: the rule its row of the op
 * table names in the shard column). */
void intra_labels_of(const struct ir_node *n, struct intra_labels *l);
/* Labels of a graph input or parameter: one parallel label per dimension. */
void intra_labels_value(const struct ir_value *v, struct intra_labels *l);

static inline const signed char *intra_in_labels(const struct intra_labels *l, int j)
{
	return l->in[j < INTRA_MAX_IN ? j : 0];
}

/* One strategy: the label each mesh axis splits (-1: the axis is unused). */
struct intra_strat {
	signed char lab[IR_MESH_AXES];
	struct ir_sharding out; /* every result's sharding (partial included) */
	double t_compute;       /* s: forward (x3 when training) */
	double t_own;           /* s: the node's own collective (max labels) */
	enum cost_coll own_coll;
	int own_axis;
	double own_bytes;
};

/* The sharding of operand j (row intra_in_labels) under strategy s. */
void intra_operand_spec(const struct intra_labels *l, const struct intra_strat *s, int j, int rank,
			struct ir_sharding *out);
/* Axes the strategy splits that operand j's dims do not carry: its gradient
 * is a partial sum over them. */
uint8_t intra_grad_partial(const struct intra_labels *l, const struct intra_strat *s, int j, int rank);

/* What one stage's search needs to know about the hardware. */
struct intra_env {
	struct cost_mesh mesh;
	struct cost_device dev;
	struct cost_calib cal;
	enum cost_prec prec;
	int elem_bytes; /* floating-point bytes per element in the step */
	bool train;
	struct cost_state_bytes state;  /* per parameter, training */
	const uint8_t *fuse;            /* per value id INTRA_FUSE_* bits, or NULL (nothing fused) */
	const uint32_t *fused_in;       /* per node id: inputs read in registers (cost_fused_reads) */
	int zero;                       /* intra_opts.zero, 0 unless training */
	double step_share;              /* intra_opts.step_share */
	double sync_share;              /* intra_opts.sync_share (step_share when < 0) */
	bool inputs_resident;           /* intra_opts.inputs_resident */
	bool host;                      /* local CPU ranks (cost_cluster.cpu) */
	const bool *inputs_kept_before; /* intra_opts.inputs_kept_before */
	double state_price;             /* intra_opts.state_price */
};

/* Elementwise chains run as one kernel (as the report costs them): a
 * fusable op reads only operands from outside its chain and writes only
 * results something outside the chain reads (cost_fused_reads). */
enum {
	INTRA_FUSE_INSIDE = 1, /* produced by a fusable op (elementwise or a view) */
	INTRA_FUSE_STORED = 2, /* read from memory: by a non-fusable op, an op outside
				* its chain, or as a graph output */
	INTRA_FUSE_NONDOT = 4, /* read by something other than a dot (a graph output too) */
	INTRA_FUSE_SHARED = 8, /* read by more than one node, or a graph output: lowering
				* fuses a producer into its one reader alone (lower_fuse.c),
				* so the value gets a buffer whatever else fuses */
	INTRA_FUSE_CORE = 16,  /* a dot's or convolution's result that an elementwise chain
				* reading it alone takes as its core on CPU ranks
				* (lower_fuse.c's absorb_core): the call writes the
				* chain's result buffer, its own never exists */
};

/* Enumerates strategies of a unit with labels l (node n, or NULL for a graph
 * input or parameter v) into *out (ir_malloc'd); returns how many, or
 * -ENOMEM. Costs filled from env. */
int intra_strategies(const struct intra_env *env, const struct ir_node *n, const struct ir_value *v,
		     const struct intra_labels *l, struct intra_strat **out);

/* Up to four collectives of one resharding (two per axis at most). */
struct intra_coll {
	int n;
	enum cost_coll op[4];
	int axis[4];
	double bytes[4], t[4];
};

/* Time of converting value v from sharding src (partial allowed) to dst
 * (not partial), collectives listed in c (may be NULL). bucketed: a
 * gradient reduced once per step (a parameter's, or that of a value
 * computed from parameters alone), together with others in large buckets. */
double intra_reshard(const struct intra_env *env, const struct ir_value *v, const struct ir_sharding *src,
		     const struct ir_sharding *dst, bool bucketed, struct intra_coll *c);
/* The all-gathers of c: in training, repeated in the backward pass of an
 * op that reads the operand (intra_reads_operand). */
double intra_regather(const struct intra_coll *c);
/* Whether node n is a transpose the dots reading it fold in (never
 * written: no time, no memory unless the backward pass keeps it). */
bool intra_transpose_folded(const struct intra_env *env, const struct ir_node *n);
/* Bytes of v on one device under sharding s. */
double intra_local_bytes(const struct intra_env *env, const struct ir_value *v, const struct ir_sharding *s);

/* ---- the pass's state (intra_build.c builds it, intra.c solves it) ---- */

/* A unit is a graph node, or a graph input or parameter (the values a
 * stage starts from). Units in one group share one solver variable: a
 * follower's strategy is a function (map) of its leader's. */
struct intra_unit {
	const struct ir_node *node;   /* NULL for an input or parameter */
	const struct ir_value *value; /* the input or parameter; else NULL */
	struct intra_labels lab;
	int nstrat;
	struct intra_strat *strat;
	int group;      /* solver node index */
	int *map;       /* [group's strategies]: own strategy */
	int64_t lo, hi; /* live interval of its results */
	int copies;     /* of its results held at once: a stash's slots (intra_opts.stash_slots); 0: one */
	bool stashed;   /* read by a pipelined stage's backward part from its forward part */
	bool held;      /* held for the whole step (intra_opts.held: a gradient's accumulator) */
	bool transient; /* made before its group's held unit and read by it alone (a 16-bit
			 * gradient, converted into its f32 accumulator right after it is
			 * complete): never held with it, its bytes not counted */
};

struct intra_state {
	struct intra_env env;
	int nunits;
	struct intra_unit *unit; /* node units first (graph order), then inputs, params */
	int *value_unit;         /* per value id: the unit defining it, -1 unused */
	bool *grad;              /* per value id: carries a gradient (training) */
	bool *weight;            /* per value id: its gradient is reduced once per step (a
				  * parameter, or computed from parameters alone) */
	bool *saved;             /* per value id: kept for the backward pass (training) */
	uint8_t *fuse;           /* per value id: INTRA_FUSE_* */
	uint32_t *fused_in;      /* per node id: cost_fused_reads */
	int ngroups;
	int *leader; /* per group: its leading unit */
	struct shard_problem prob;
	int *choice;       /* per group: chosen strategy */
	double time_limit; /* intra_opts.time_limit, for the solver */
	bool quick;        /* intra_opts.quick */
};

/* In training, whether node n's backward pass reads its operand j (an
 * operand all-gathered forward is gathered again backward). */
bool intra_reads_operand(const struct intra_state *st, const struct ir_node *n, int j);

/* Training: the optimizer update of parameter unit x under strategy s,
 * in s per step, and the bytes its state takes per device under ZeRO
 * stage `zero` (0: none; 1: the optimizer state split over x's copies, 2:
 * the gradients too, 3: the parameters too); intra_state_split: the same
 * bytes as parameters, gradients, optimizer state. */
double intra_optim_time(const struct intra_state *st, const struct intra_unit *x, int s, bool zero);
double intra_state_bytes(const struct intra_state *st, const struct intra_unit *x, int s, int zero);
void intra_state_split(const struct intra_state *st, const struct intra_unit *x, int s, int zero, double out[3]);
/* The peak a solve states (intra_result.mem_stated: the chosen
 * strategies' live bytes at their most, with the buffers their
 * reshardings take) and what holds it (mem_held, mem_stash, stash_slots)
 * at the first time it is reached. -ENOMEM or 0. */
int intra_peak_parts(const struct intra_state *st, struct intra_result *r);

int intra_build(struct intra_state *st, const struct ir_graph *g, const struct intra_opts *o);
/* Sets the state price (intra_env.state_price) of a built problem to
 * price: the parameters' strategy costs change by the difference. */
void intra_price_state(struct intra_state *st, double price);
void intra_state_free(struct intra_state *st);
/* The strategy unit u runs under the current choice. */
static inline const struct intra_strat *intra_chosen(const struct intra_state *st, int u)
{
	const struct intra_unit *x = &st->unit[u];
	return &x->strat[x->map[st->choice[x->group]]];
}
/* The current choice written onto g, the graph st was built from (what
 * intra_pass does last, and what tests do after changing st->choice): the
 * mesh, every value's sharding and the sharding each node reads its
 * operands in, which is all lowering reads. 0 or -ENOMEM. */
int intra_annotate(struct ir_graph *g, const struct intra_state *st);
/* Seconds to integer solver costs and back. */
#define INTRA_COST_SCALE 1e12

#endif
