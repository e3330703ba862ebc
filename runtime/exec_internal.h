/*
 * exec_internal.h: what the host's device table (device_cpu.c) shares with
 * its helpers collective.c and overlap.c.
 */
#ifndef PCC_RUNTIME_EXEC_INTERNAL_H
#define PCC_RUNTIME_EXEC_INTERNAL_H

#include "runtime/rt.h"

/* Operand j of instruction x (its results follow its nin operands). */
static inline const struct plan_buffer *rt_arg(const struct rt *r, const struct plan_instr *x, int j)
{
	return &r->d->buf[r->d->args[x->arg + j]];
}

/* collective.c */
/* Bytes collective x packs its operands into (0: none). */
size_t rt_coll_pack_bytes(const struct rt *r, const struct plan_instr *x);
/* Starts collective x with its operands packed into s (rt_coll_pack_bytes
 * of them): finished on return when req is NULL, else once the table's
 * wait says so, and then unpacked (rt_coll_unpack). */
int rt_coll_start(struct rt *r, const struct plan_instr *x, uint8_t *s, struct rt_comm_req **req);
/* The received blocks of a finished collective from s into its result. */
void rt_coll_unpack(struct rt *r, const struct plan_instr *x, const uint8_t *s);
/* Collective x, start to finish. */
int rt_collective(struct rt *r, const struct plan_instr *x);

/* overlap.c: for run_one, the receive or collective at trace position pos */
/* Waits for the operation started at pos (a receive, or a collective
 * started early) and forgets it. */
int rt_overlap_finish(struct rt *r, int pos);
/* Whether the collective at pos was started before its instruction. */
bool rt_overlap_started(const struct rt_overlap *ov, int pos);
/* Whether the collective at pos is waited for after its instruction
 * (then rt_overlap_start_async starts it there). */
bool rt_overlap_early(const struct rt_overlap *ov, int pos);
int rt_overlap_start_async(struct rt *r, const struct plan_instr *x, int pos);
#endif
