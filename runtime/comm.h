/*
 * comm.h: the runtime's communication table. The device tables (device.h)
 * move bytes between ranks only through these entries: MPI for the host's
 * buffers (comm_mpi.c, the host device's), NCCL for buffers in a GPU's
 * memory (comm_nccl.c, the CUDA device's, which bootstraps over MPI and
 * enqueues on streams: it says how its operations finish), and between
 * threads of one process for the tests (comm_local.c). The rest of the
 * runtime uses the ctl entries. Every entry is collective over the ranks
 * named (a plan communicator, or the whole world for the ctl_* entries)
 * and returns 0 or a negative errno with a message in ir_error() naming
 * what it waited for; no entry waits longer than the table's timeout.
 *
 * Data movement contract (the executor packs and unpacks around it):
 * - send: the bytes are copied or kept until flush; the call never waits
 *   for the receiver (a plan's programs assume buffered sends).
 * - recv: the message of (peer, tag), which must be n bytes. Messages of
 *   one (peer, tag) match receives in the order the receives are started.
 * - all_reduce: n elements of dtype, reduced with op, into out (in == out
 *   allowed).
 * - reduce_scatter: in holds comm-size blocks of n elements in rank order;
 *   out gets the sum of every rank's block `comm rank`.
 * - all_gather: out gets every rank's `bytes` bytes in rank order.
 * - all_to_all: in holds comm-size blocks of `bytes`; block r goes to rank
 *   r; out gets the received blocks in rank order.
 * Plan communicators are indices into plan.comms; a rank calls only those
 * it belongs to.
 *
 * recv and the collectives take `req`: NULL waits until the operation is
 * done (the buffers are free when the call returns); otherwise the call
 * only starts it, sets *req, and wait(*req) finishes it later: until then
 * the caller leaves in and out alone (in may be read, out not at all).
 * Collectives of one communicator still start in the same order on all
 * its ranks. progress drives every started operation and the sends a
 * little without waiting (some MPIs move data only inside their calls).
 * An operation started and waited for later gives exactly the bytes the
 * waiting call gives (the same MPI call underneath).
 */
#ifndef PCC_RUNTIME_COMM_H
#define PCC_RUNTIME_COMM_H

#include <stddef.h>
#include <stdio.h>

#include "ir/plan.h"

struct rt_comm;
struct rt_comm_req; /* an operation started and not yet waited for */

/* What a rank is doing, published for its peers: the executor writes it at
 * every instruction, a wait when it starts blocking. A rank whose wait
 * times out reads every rank's (comm_mpi.c keeps them in an MPI window a
 * peer reads without the owner's help, so a hung rank's shows where it
 * stopped) and names the rank that holds the job up. */
struct rt_comm_progress {
	int64_t step;    /* the run's step, 0-based */
	int32_t mb;      /* micro-batch */
	int32_t instr;   /* instruction of this rank's program; -1: none yet */
	int32_t kind;    /* enum plan_instr_kind of instr */
	int32_t op;      /* a kernel's enum ir_op; else -1 */
	int32_t waiting; /* 1: blocked in a wait for what */
	int32_t done;    /* 1: past its last step, finishing */
	double since;    /* ir_now() when instr or the wait began (seconds) */
	double clock;    /* this host's wall clock minus ir_now() (seconds) */
	char what[96];   /* what a wait waits for */
};

struct rt_comm_ops {
	const char *name;
	/* Communicators for plan p (every rank calls it, collectively). */
	int (*setup)(struct rt_comm *c, const struct plan *p);
	int (*send)(struct rt_comm *c, const void *buf, size_t n, int peer, int tag);
	int (*recv)(struct rt_comm *c, void *buf, size_t n, int peer, int tag, struct rt_comm_req **req);
	int (*all_reduce)(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
			  enum plan_reduce op, struct rt_comm_req **req);
	int (*reduce_scatter)(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
			      struct rt_comm_req **req);
	int (*all_gather)(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes,
			  struct rt_comm_req **req);
	int (*all_to_all)(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes,
			  struct rt_comm_req **req);
	/* Finishes and frees an operation started above: waits at most the
	 * timeout; 0, or its error naming what it waited for. */
	int (*wait)(struct rt_comm *c, struct rt_comm_req *req);
	/* Drives the started operations and sends without waiting; errors of
	 * an operation are kept for its wait. */
	int (*progress)(struct rt_comm *c);
	/* Waits until every send so far has left this rank's buffers. */
	int (*flush)(struct rt_comm *c);
	/* The runtime's own traffic (outputs to rank 0, checkpoints, agreeing
	 * on errors), apart from the plan's messages: blocking point to point,
	 * and the minimum of one int over all ranks. */
	int (*ctl_send)(struct rt_comm *c, const void *buf, size_t n, int peer);
	int (*ctl_recv)(struct rt_comm *c, void *buf, size_t n, int peer);
	int (*ctl_min)(struct rt_comm *c, int *v);
	/* After a wait of this rank timed out: which rank holds the job up,
	 * from what every rank last published ("; rank 3 seems hung: at step
	 * 2, ..."), into buf, "" when nothing is known. NULL where no rank
	 * publishes what it does. */
	void (*blame)(struct rt_comm *c, char *buf, size_t n);
	/* Stops every rank of the job now, exit status code. */
	void (*abort)(struct rt_comm *c, int code); /* does not return */
	/* Frees the table; as after an error when c->failed is set. */
	void (*finish)(struct rt_comm *c);
};

struct rt_comm {
	const struct rt_comm_ops *ops;
	int rank, size;                /* this rank, the world */
	double timeout;                /* seconds one wait may last before it fails */
	struct rt_comm_progress *prog; /* this rank's, never NULL after init */
	void *impl;
	/* the ranks on this rank's host and its place among them (MPI's
	 * shared-memory split: any MPI, any launcher); 0: unknown, one */
	int local_rank, local_size;
	/* the MPI library this program is linked with, as it names itself
	 * ("Open MPI v4.1.4", "MPICH 4.0.2"), for messages */
	char mpi[64];
	/* set before finish when the run failed: the table tears its
	 * communicators down as after an error, waiting for no peer's work
	 * (NCCL: ncclCommAbort, comm_nccl.c) */
	bool failed;
};

/* MPI: initializes MPI (argc, argv as MPI_Init takes them) and fills c. */
int rt_comm_mpi_init(struct rt_comm *c, int *argc, char ***argv);

/* In-process (comm_local.c): the ranks are threads of one process, every
 * rank's table over one world of `size` ranks; a wait lasts at most
 * timeout seconds, and fails sooner with -EDEADLK when every rank not
 * stopped waits for what is not done and nothing moves. The tests run a
 * plan's ranks this way (tests/plan_sim.c). */
struct rt_local;
struct rt_local *rt_local_new(int size, double timeout);
void rt_local_free(struct rt_local *w);
int rt_comm_local_init(struct rt_comm *c, struct rt_local *w, int rank);
/* No rank has stopped (before the threads start); a rank's thread calls
 * done when it stops using its table, so the others' deadlock check no
 * longer waits for it. */
void rt_local_start(struct rt_local *w);
void rt_comm_local_done(struct rt_comm *c);

/* A wait of this rank outside the table (a GPU stream, NCCL's lanes),
 * published as the table's own waits are, so that a peer timing out
 * blames the rank it waits for, not this one: waiting for `what` since
 * ir_now() time `since`, or (what NULL) no longer waiting. */
static inline void rt_comm_waiting(struct rt_comm *c, const char *what, double since)
{
	if (!c || !c->prog)
		return;
	if (what) {
		snprintf(c->prog->what, sizeof c->prog->what, "%s", what);
		c->prog->since = since;
	}
	c->prog->waiting = what != NULL;
}

/* ops->blame's text, or "" where the table has none. */
static inline void rt_comm_blame(struct rt_comm *c, char *buf, size_t n)
{
	buf[0] = 0;
	if (c && c->ops && c->ops->blame)
		c->ops->blame(c, buf, n);
}

#endif
