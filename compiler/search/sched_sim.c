/*
 * sched_sim.c: runs a pipeline schedule's per-device orders against
 * per-stage costs and checks them (the contract is in search.h).
 *
 * Two passes. The first reads every op once and files it under its key
 * (the sending virtual stage and the micro-batch: a send and its receive
 * share a key), rejecting ops out of range, with the wrong peer or
 * repeated, then ops missing, transfers unmatched, and orders that break a
 * dependency inside one device (a BWD before its FWD, a send before the
 * op producing it, a compute op before the receive of its input). After
 * it, a compute op's inputs are always earlier ops on its own device, so
 * the only waits left are receives.
 *
 * The second pass is the simulation proper. Each device has a clock and a
 * program counter; devices are advanced in turn, each as far as it can: a
 * compute op takes its time, a send stamps its issue time and costs
 * nothing, a receive whose send has been issued ends at max(clock, issue
 * + t_xfer) and otherwise stops the device. As there is no contention (a
 * device runs one op at a time and links are not shared), every op's
 * start is the max of its device's clock and its inputs' times, whatever
 * order the devices are advanced in; a round in which no device moves
 * while ops remain is a deadlock, reported with every waiting device.
 *
 * Example: 2-stage gpipe, m = 1, transfer x: device 0 runs F0 (tf0) and
 * sends at tf0; device 1 receives at tf0 + x, runs F0 and B0, sends;
 * device 0 receives at tf0 + x + tf1 + tb1 + x and ends after tb0.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/search/search.h"

struct slot {
	int dev, idx; /* dev -1: no such op */
};

struct sim {
	const struct sched *s;
	const struct sched_costs *c;
	int nv;                            /* virtual stages, p * v */
	struct slot *at[SCHED_KIND_COUNT]; /* [nv * m] by key */
	double *issued;                    /* [2 * nv * m] send times, < 0 not yet;
					    * activations, then gradients */
};

/* "device 0 op 3 (Sa0>1)" */
static const char *where(const struct sched *s, int d, int i, char *buf, size_t n)
{
	char op[48];
	snprintf(buf, n, "device %d op %d (%s)", d, i, sched_op_str(&s->ops[d][i], op, sizeof op));
	return buf;
}

/* The virtual stage that sends what op moves (its own for compute ops). */
static int key_stage(const struct sched_op *op, int k)
{
	switch (op->kind) {
	case SCHED_FWD:
	case SCHED_BWD:
	case SCHED_SEND_ACT:
	case SCHED_SEND_GRAD:
		return k;
	case SCHED_RECV_ACT:
		return k - 1;
	case SCHED_RECV_GRAD:
		return k + 1;
	case SCHED_KIND_COUNT:
		break;
	}
	IR_ASSERT(!"op kind out of range");
	return k;
}

/* Range, peer and repetition of op i on device d; files it. */
static int file_op(struct sim *sm, int d, int i)
{
	const struct sched *s = sm->s;
	const struct sched_op *op = &s->ops[d][i];
	char w[96];
	if (op->kind < 0 || op->kind >= SCHED_KIND_COUNT)
		return ir_errorf(-EINVAL, "device %d op %d: unknown op kind %d", d, i, (int)op->kind);
	if (op->mb < 0 || op->mb >= s->m || op->chunk < 0 || op->chunk >= s->v)
		return ir_errorf(-EINVAL, "%s: micro-batch or chunk out of range (%d micro-batches, %d chunks)",
				 where(s, d, i, w, sizeof w), s->m, s->v);
	int k = op->chunk * s->p + d, ks = key_stage(op, k);
	if (op->kind != SCHED_FWD && op->kind != SCHED_BWD) {
		int other = op->kind == SCHED_SEND_ACT || op->kind == SCHED_RECV_GRAD ? k + 1 : k - 1;
		if (other < 0 || other >= sm->nv)
			return ir_errorf(-EINVAL, "%s: virtual stage %d has no stage %d to exchange with",
					 where(s, d, i, w, sizeof w), k, other);
		if (other % s->p == d)
			return ir_errorf(-EINVAL,
					 "%s: virtual stages %d and %d are both on device %d; nothing to transfer",
					 where(s, d, i, w, sizeof w), k, other, d);
		if (op->peer != other % s->p)
			return ir_errorf(-EINVAL, "%s: the peer of virtual stage %d is device %d (stage %d)",
					 where(s, d, i, w, sizeof w), k, other % s->p, other);
	}
	struct slot *at = &sm->at[op->kind][ks * s->m + op->mb];
	if (at->dev >= 0)
		return ir_errorf(-EINVAL, "%s repeats op %d", where(s, d, i, w, sizeof w), at->idx);
	*at = (struct slot){ d, i };
	return 0;
}

/* Every FWD and BWD present once; every send received, every receive sent. */
static int check_complete(const struct sim *sm)
{
	const struct sched *s = sm->s;
	char w[96], op[48];
	for (int key = 0; key < sm->nv * s->m; key++) {
		int k = key / s->m, mb = key % s->m;
		for (int kind = SCHED_FWD; kind <= SCHED_BWD; kind++)
			if (sm->at[kind][key].dev < 0) {
				struct sched_op o = { .kind = kind, .mb = mb, .chunk = k / s->p };
				return ir_errorf(-EINVAL, "device %d never runs %s (virtual stage %d)", k % s->p,
						 sched_op_str(&o, op, sizeof op), k);
			}
		static const enum sched_kind pairs[2][2] = { { SCHED_SEND_ACT, SCHED_RECV_ACT },
							     { SCHED_SEND_GRAD, SCHED_RECV_GRAD } };
		for (int j = 0; j < 2; j++) {
			struct slot snd = sm->at[pairs[j][0]][key], rcv = sm->at[pairs[j][1]][key];
			if (snd.dev >= 0 && rcv.dev < 0)
				return ir_errorf(-EINVAL, "%s: device %d never receives it",
						 where(s, snd.dev, snd.idx, w, sizeof w),
						 s->ops[snd.dev][snd.idx].peer);
			if (rcv.dev >= 0 && snd.dev < 0)
				return ir_errorf(-EINVAL, "%s: device %d never sends it",
						 where(s, rcv.dev, rcv.idx, w, sizeof w),
						 s->ops[rcv.dev][rcv.idx].peer);
		}
	}
	return 0;
}

/* The compute op at `use` takes its input (`what`) from the op at `from`
 * on the same device: a receive or, with p = 1, the neighbouring stage's
 * compute op. from.dev < 0: there is none. */
static int check_input(const struct sim *sm, struct slot use, struct slot from, const char *what)
{
	char w[96], w2[96];
	if (from.dev < 0)
		return ir_errorf(-EINVAL, "%s: no op receives its %s", where(sm->s, use.dev, use.idx, w, sizeof w),
				 what);
	if (from.idx > use.idx)
		return ir_errorf(-EDEADLK, "%s: comes before %s that gives it its %s, and would wait forever",
				 where(sm->s, use.dev, use.idx, w, sizeof w),
				 where(sm->s, from.dev, from.idx, w2, sizeof w2), what);
	return 0;
}

/* Dependencies inside one device, for virtual stage k and micro-batch mb. */
static int check_order(const struct sim *sm, int k, int mb)
{
	const struct sched *s = sm->s;
	int m = s->m, key = k * m + mb;
	struct slot f = sm->at[SCHED_FWD][key], b = sm->at[SCHED_BWD][key];
	char w[96], w2[96];
	int err;
	if (b.idx < f.idx)
		return ir_errorf(-EINVAL, "%s: backward before its forward, %s", where(s, b.dev, b.idx, w, sizeof w),
				 where(s, f.dev, f.idx, w2, sizeof w2));
	bool prev_here = k > 0 && (k - 1) % s->p == f.dev;
	bool next_here = k < sm->nv - 1 && (k + 1) % s->p == f.dev;
	if (k > 0) {
		struct slot from = prev_here ? sm->at[SCHED_FWD][key - m] : sm->at[SCHED_RECV_ACT][key - m];
		if ((err = check_input(sm, f, from, "activation")))
			return err;
	}
	if (k < sm->nv - 1) {
		struct slot from = next_here ? sm->at[SCHED_BWD][key + m] : sm->at[SCHED_RECV_GRAD][key + m];
		if ((err = check_input(sm, b, from, "gradient")))
			return err;
	}
	struct slot sa = sm->at[SCHED_SEND_ACT][key], sg = sm->at[SCHED_SEND_GRAD][key];
	if (sa.dev >= 0 && sa.idx < f.idx)
		return ir_errorf(-EINVAL, "%s: sends the activation before computing it, %s",
				 where(s, sa.dev, sa.idx, w, sizeof w), where(s, f.dev, f.idx, w2, sizeof w2));
	if (sg.dev >= 0 && sg.idx < b.idx)
		return ir_errorf(-EINVAL, "%s: sends the gradient before computing it, %s",
				 where(s, sg.dev, sg.idx, w, sizeof w), where(s, b.dev, b.idx, w2, sizeof w2));
	return 0;
}

static int check_costs(const struct sched *s, const struct sched_costs *c, int nv)
{
	const struct {
		const char *name;
		const double *x;
		int n;
	} arrays[] = { { "t_fwd", c->t_fwd, nv },
		       { "t_bwd", c->t_bwd, nv },
		       { "t_xfer", c->t_xfer, nv - 1 },
		       { "act_bytes", c->act_bytes, nv },
		       { "static_bytes", c->static_bytes, s->p } };
	IR_ASSERT(c->t_fwd && c->t_bwd);
	for (size_t a = 0; a < sizeof arrays / sizeof arrays[0]; a++)
		for (int i = 0; arrays[a].x && i < arrays[a].n; i++)
			if (!isfinite(arrays[a].x[i]) || arrays[a].x[i] < 0)
				return ir_errorf(-EINVAL, "schedule costs: %s[%d] = %g; need a finite value >= 0",
						 arrays[a].name, i, arrays[a].x[i]);
	return 0;
}

/* The message for a round in which no device moved. */
static int deadlock(const struct sim *sm, const int *pc)
{
	const struct sched *s = sm->s;
	char msg[1024] = "", w[96], w2[96];
	size_t len = 0;
	for (int d = 0; d < s->p && len < sizeof msg; d++) {
		if (pc[d] == s->nops[d])
			continue;
		const struct sched_op *op = &s->ops[d][pc[d]];
		IR_ASSERT(op->kind == SCHED_RECV_ACT || op->kind == SCHED_RECV_GRAD);
		int k = op->chunk * s->p + d;
		struct slot snd = op->kind == SCHED_RECV_ACT ? sm->at[SCHED_SEND_ACT][(k - 1) * s->m + op->mb]
							     : sm->at[SCHED_SEND_GRAD][(k + 1) * s->m + op->mb];
		len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s waits for %s", len ? "; " : "",
					where(s, d, pc[d], w, sizeof w), where(s, snd.dev, snd.idx, w2, sizeof w2));
	}
	return ir_errorf(-EDEADLK, "pipeline deadlock: %s", msg);
}

/* Runs device d's ops from pc[d] until it ends or reaches a receive whose
 * send is not issued yet; returns the ops run. */
static int advance(struct sim *sm, struct sched_sim *out, int d, int *pc, double *clock, double *held)
{
	const struct sched *s = sm->s;
	const struct sched_costs *c = sm->c;
	int moved = 0, m = s->m, half = sm->nv * m; /* gradients' sends after activations' */
	for (; pc[d] < s->nops[d]; pc[d]++, moved++) {
		const struct sched_op *op = &s->ops[d][pc[d]];
		int k = op->chunk * s->p + d;
		double act = c->act_bytes ? c->act_bytes[k] : 0, t, bytes, sent;
		switch (op->kind) {
		case SCHED_FWD:
		case SCHED_BWD:
			t = op->kind == SCHED_FWD ? c->t_fwd[k] : c->t_bwd[k];
			clock[d] += t;
			out->busy[d] += t;
			held[d] += op->kind == SCHED_FWD ? act : -act;
			bytes = (c->static_bytes ? c->static_bytes[d] : 0) + held[d];
			out->peak_bytes[d] = bytes > out->peak_bytes[d] ? bytes : out->peak_bytes[d];
			continue;
		case SCHED_SEND_ACT:
		case SCHED_SEND_GRAD:
			sm->issued[(op->kind == SCHED_SEND_GRAD) * half + k * m + op->mb] = clock[d];
			continue;
		case SCHED_RECV_ACT:
		case SCHED_RECV_GRAD:
			sent = sm->issued[(op->kind == SCHED_RECV_GRAD) * half + key_stage(op, k) * m + op->mb];
			if (sent < 0)
				return moved;
			/* the boundary crossed: k-1 -> k for an activation, k -> k+1 for a gradient */
			t = sent + (c->t_xfer ? c->t_xfer[op->kind == SCHED_RECV_ACT ? k - 1 : k] : 0);
			clock[d] = t > clock[d] ? t : clock[d];
			continue;
		case SCHED_KIND_COUNT:
			break;
		}
		IR_ASSERT(!"op kind out of range");
	}
	return moved;
}

/* The simulation proper; all checks of the first pass have been made. */
static int run(struct sim *sm, struct sched_sim *out, int *pc, double *clock, double *held)
{
	const struct sched *s = sm->s;
	int left = 0;
	for (int d = 0; d < s->p; d++) {
		left += s->nops[d];
		out->peak_bytes[d] = sm->c->static_bytes ? sm->c->static_bytes[d] : 0;
	}
	while (left > 0) {
		int moved = 0;
		for (int d = 0; d < s->p; d++)
			moved += advance(sm, out, d, pc, clock, held);
		if (moved == 0)
			return deadlock(sm, pc);
		left -= moved;
	}
	double sum = 0;
	for (int d = 0; d < s->p; d++) {
		sum += out->busy[d];
		out->step_time = clock[d] > out->step_time ? clock[d] : out->step_time;
	}
	double capacity = s->p * out->step_time;
	out->bubble_fraction = sum > 0 ? (capacity - sum) / sum : 0;
	out->idle_fraction = capacity > 0 ? 1 - sum / capacity : 0;
	return 0;
}

int sched_simulate(const struct sched *s, const struct sched_costs *c, struct sched_sim *out)
{
	memset(out, 0, sizeof *out);
	struct sim sm = { .s = s, .c = c, .nv = s->p * s->v };
	int nkeys = sm.nv * s->m, err = check_costs(s, c, sm.nv);
	if (err)
		return err;
	int *pc = ir_calloc((size_t)s->p, sizeof *pc);
	double *clock = ir_calloc((size_t)s->p, sizeof *clock), *held = ir_calloc((size_t)s->p, sizeof *held);
	sm.issued = ir_malloc(2 * (size_t)nkeys * sizeof *sm.issued);
	out->busy = ir_calloc((size_t)s->p, sizeof *out->busy);
	out->peak_bytes = ir_calloc((size_t)s->p, sizeof *out->peak_bytes);
	bool ok = pc && clock && held && sm.issued && out->busy && out->peak_bytes;
	for (int kind = 0; kind < SCHED_KIND_COUNT; kind++)
		ok = (sm.at[kind] = ir_malloc((size_t)nkeys * sizeof *sm.at[kind])) && ok;
	if (!ok) {
		err = ir_errorf(-ENOMEM, "simulating the schedule: out of memory");
		goto out;
	}
	for (int kind = 0; kind < SCHED_KIND_COUNT; kind++)
		for (int key = 0; key < nkeys; key++)
			sm.at[kind][key] = (struct slot){ -1, -1 };
	for (int key = 0; key < 2 * nkeys; key++)
		sm.issued[key] = -1;
	for (int d = 0; d < s->p; d++)
		for (int i = 0; i < s->nops[d]; i++)
			if ((err = file_op(&sm, d, i)))
				goto out;
	if ((err = check_complete(&sm)))
		goto out;
	for (int key = 0; key < nkeys; key++)
		if ((err = check_order(&sm, key / s->m, key % s->m)))
			goto out;
	err = run(&sm, out, pc, clock, held);
out:
	for (int kind = 0; kind < SCHED_KIND_COUNT; kind++)
		ir_free(sm.at[kind]);
	ir_free(sm.issued);
	ir_free(held);
	ir_free(clock);
	ir_free(pc);
	return err;
}

void sched_sim_free(struct sched_sim *r)
{
	ir_free(r->busy);
	ir_free(r->peak_bytes);
	memset(r, 0, sizeof *r);
}
