/*
 * search.h: the one header of compiler/search/, the search for a plan;
 * for now pipeline schedules and their simulator (part of compiler.h's
 * interface, which includes it; include compiler.h).
 */
#ifndef PCC_COMPILER_SEARCH_H
#define PCC_COMPILER_SEARCH_H

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

#endif
