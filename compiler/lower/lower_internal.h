/*
 * lower_internal.h: shared by the SPMD lowering's files (lower*.c); not part
 * of compiler.h.
 *
 * A stage is lowered once, as a template program that every device of its
 * mesh runs (SPMD): the same buffers (local shapes are equal on every device
 * since splits are even) and the same instructions, except kernels whose
 * attributes depend on where the device sits (a slice of its piece, a
 * lookup offset): those carry one kernel per device. Collectives name mesh
 * axes; each device's communicator follows from its coordinates when the
 * template is expanded into the plan's per-device programs.
 */
#ifndef PCC_COMPILER_LOWER_INTERNAL_H
#define PCC_COMPILER_LOWER_INTERNAL_H

#include "compiler/lower/lower.h"
#include "ir/plan.h"

#define LW_MAX_IN 256 /* operands of one op (a concat's) */

struct lw_buf {
	enum ir_dtype dtype;
	struct ir_shape shape; /* local */
	enum plan_bind bind;
	int index;               /* bound tensor */
	struct ir_sharding spec; /* bound: how the global tensor is split */
	int64_t offset;          /* bytes, set by the memory plan */
	int slots;               /* set by the memory plan (plan_buffer.slots) */
};

struct lw_ins {
	enum plan_instr_kind kind;
	int kernel;      /* PLAN_KERNEL, same on every device, or -1 */
	int *dev_kernel; /* [devices]: per-device kernels, or NULL */
	uint8_t axes;    /* collectives: mesh-axis mask of the communicator */
	enum plan_reduce reduce;
	int axis, axis2;
	int only;      /* 0: every device of the stage; k + 1: device k alone */
	int peer;      /* send/recv: the other global rank ... */
	int *dev_peer; /* ... or per device (receives), or NULL */
	int tag;       /* send/recv */
	int nin, nout;
	int arg; /* into lower.args */
};

/* A value available in some buffer under some sharding. */
struct lw_rep {
	int value;
	struct ir_sharding spec;
	int buf;
	int next; /* next rep of the same value, -1 */
};

/* What the stages of one plan share: the kernel table's dedup index and
 * the send/receive tags. */
struct lw_shared {
	int *khash; /* open addressing over plan kernels, -1 empty */
	int khcap;
	int ntags;
};

struct lower {
	struct plan *p;
	struct lw_shared *sh;
	const struct ir_graph *g;
	int stage, first_rank, n0, n1, nd;
	int nbuf, capbuf;
	struct lw_buf *buf;
	int nins, capins;
	struct lw_ins *ins;
	int nargs, capargs;
	int *args;
	int nreps, capreps;
	struct lw_rep *reps;
	int *rep_head;    /* per value id: first rep, -1 */
	bool *dyn;        /* per value id: reads an input or parameter upstream
			   * (else a constant, made where it is read) */
	int step_first;   /* training: the first instruction run once per
			   * step; -1 (or nins) for none */
	int fwd_end;      /* pipelined training: the first instruction of the
			   * backward part; 0 for none */
	const int *order; /* pipelined training: the stage's schedule */
	int norder;
	struct lw_early *early; /* training: lw_train_node's bookkeeping, or NULL */
};

/* The lowering of one plan: its stages and how their values relate to
 * the whole graph's. */
struct lw_ctx {
	const struct lower_train *tr; /* a training step, or NULL */
	const struct ir_graph *whole;
	const struct lower_stage *st;
	int ns;
	struct lower *L;  /* [ns] */
	int **inv;        /* [ns][whole value id]: the stage's value id, -1 */
	int *owner;       /* [whole value id]: the stage computing it, -1 */
	int *pidx, *iidx; /* [whole value id]: parameter / input index, -1 */
};

/* lower_stage.c: the whole graph's value id that stage s's value v stands
 * for; stage s's lowering set up (buffers, reps, the plan's stage entry);
 * its bound values; stage s's input v, computed by another stage, sent
 * from there now (appended to both programs) and added as v's rep. */
int lw_src_of(const struct lw_ctx *c, int s, int v);
int lw_init_stage(struct lw_ctx *c, int s, struct plan *p, struct lw_shared *sh);
/* Stage s's parameters, model inputs and training state bound to the
 * slices its devices load (values of other stages are received apart). */
int lw_bind_stage(struct lw_ctx *c, int s);
int lw_receive(struct lw_ctx *c, int s, const struct ir_value *v);
/* Stage s's bound values, then those it reads from earlier stages (the
 * stages lowered one after another). */
int lw_stage_inputs(struct lw_ctx *c, int s);

/* lower_pipe.c: a pipelined training plan's stages lowered together. */
int lw_pipe_all(struct lw_ctx *c, struct plan *p, struct lw_shared *sh);

/* lower_fuse.c: the fusion pass over the stage's program (lower_fuse, after
 * every stage's program is lowered and before the memory plan). */
int lw_fuse(struct lower *L);

/* lower_emit.c: the program's builders. */
/* The index of kernel k in the plan's table, adding it (taking over its
 * arrays) when new; k's arrays are freed when an equal one is there. */
int lw_kernel_intern(struct lower *L, struct plan_kernel *k);
int lw_buf_new(struct lower *L, enum ir_dtype dt, const struct ir_shape *shape);
/* Appends an instruction with its buffers; returns its index or -ENOMEM. */
int lw_emit(struct lower *L, const struct lw_ins *proto, int nin, const int *in, int nout, const int *out);
/* Kernel op(attrs) over buffers in[]; creates its result buffers (local
 * types from shape inference) into out[] and returns 0. dev_attrs: per
 * device attributes (then a[] is ignored), or NULL. */
int lw_kernel(struct lower *L, enum ir_op op, const struct ir_attrs *a, const struct ir_attrs *dev_attrs, int nin,
	      const int *in, int *out);
/* Kernel op (no attributes) over in[] written into the existing buffer
 * out (which may be one of in[]: elementwise ops run in place). */
int lw_kernel_into(struct lower *L, enum ir_op op, int nin, const int *in, int out);
/* Piece index and count of device k (0 .. nd-1 in the stage) along mesh-axis mask m. */
void lw_piece(const struct lower *L, int k, uint8_t m, int *piece, int *n);
int lw_rep_add(struct lower *L, int value, const struct ir_sharding *spec, int buf);
/* Local shape of global shape s under spec. */
void lw_local_shape(const struct lower *L, const struct ir_shape *s, const struct ir_sharding *spec,
		    struct ir_shape *out);

/* lower.c: node n of L's graph: operands resharded to what its strategy
 * needs, then its local kernel(s); its results become reps. */
int lw_node(struct lower *L, const struct ir_node *n);

/* Lowers v's producer when v has no rep yet (constants are made lazily). */
int lw_ensure(struct lower *L, const struct ir_value *v);

/* lower_reshard.c: buf (value v under src) converted to dst (not partial);
 * returns the new buffer (or buf itself when nothing changes), -errno. */
int lw_reshard(struct lower *L, const struct ir_value *v, int buf, const struct ir_sharding *src,
	       const struct ir_sharding *dst);

/* lower_xfer.c: value u of sender stage S (in buffer sbuf under spec ss)
 * sent to receiver stage R, which needs it under spec rs (on its own mesh)
 * as its value v: S gets the slices and sends (each byte sent once, from
 * the least-loaded device holding it), R the receives and the
 * concatenations that assemble each device's piece. *rbuf: R's buffer. */
int lw_transfer(struct lower *S, const struct ir_value *u, int sbuf, const struct ir_sharding *ss, struct lower *R,
		const struct ir_value *v, const struct ir_sharding *rs, int *rbuf);

/* lower_stage.c: a buffer bound to (bind, index) holding graph input or
 * parameter v under spec (NULL: the pass's choice; nothing is bound when
 * nothing reads v), added as v's rep. */
int lw_bind_value(struct lower *L, const struct ir_value *v, enum plan_bind bind, int index,
		  const struct ir_sharding *spec);
/* The rep of value id v to send or bind: one that is not a partial sum
 * when there is one. */
int lw_pick_rep(const struct lower *L, int v);
/* Plan output i from L's value v: whole where partial, bound where it
 * lies, copied when that buffer is already bound. */
int lw_bind_output(struct lower *L, int i, const struct ir_value *v);

/* lower_train.c: the training plan's parts. lw_train_tensors: the plan's
 * state tensors, output names and configuration. lw_train_split, between
 * the two parts: the loss output and the per-micro-batch write-backs,
 * gradients added into their accumulators, then the per-step part starts
 * with only bound buffers and accumulators known. lw_train_finish: the
 * gradient-norm output and the write-back of new parameters and state. */
int lw_train_tensors(struct plan *p, const struct lower_train *tr);
int lw_train_split(struct lower *L, const struct lower_train *tr);
int lw_train_finish(struct lower *L, const struct lower_train *tr, const int *inv, bool norm_out);
/* lw_train_split's halves, for a stage of a pipelined step (inv: the
 * whole step's value id -> L's, NULL when L is the whole step): the loss
 * output and per-micro-batch write-backs of the values L computes, at the
 * end of the forward part; the gradients L computes into accumulators
 * (accumulate) or kept, and the per-step part's start. */
int lw_train_fwd_end(struct lower *L, const struct lower_train *tr, const int *inv);
/* After node m of L's graph is lowered: a parameter gradient m completes
 * is added into its accumulator now (per micro-batch part, several
 * micro-batches), and a new parameter or state value whose old value no
 * node left to lower reads is written back now (per-step part), so that
 * neither waits, live, for the end of its part. lw_train_bwd_end and
 * lw_train_finish then skip what was done here. */
int lw_train_node(struct lower *L, const struct lower_train *tr, const int *inv, const struct ir_node *m);
void lw_train_early_free(struct lower *L);
int lw_train_bwd_end(struct lower *L, const struct lower_train *tr, const int *inv, bool accumulate);

/* Value v as a buffer under dst (lower.c): the rep that has it, a
 * constant made there, or the nearest rep resharded. */
int lw_operand(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst);

/* lower_mem.c: frees after last uses, buffer offsets, then the template
 * expanded into the plan's devices of this stage (lower_memory). */
int lw_memory(struct lower *L);
/* The template as its first device will run it, in plan_print_program's
 * form (offsets not placed yet, collectives without a communicator). */
int lw_print(const struct lower *L, FILE *f);

#endif
