/*
 * overlap.c: communication beside compute on CPU ranks (rt.h).
 *
 * rt_overlap_init: a step is a fixed trace of positions (feeds,
 * instructions, saves; step.c's segments). Once per run, from the memory
 * plan's byte regions, each receive gets the earliest position where it
 * may be posted and each collective the earliest where it may start and
 * the first after its instruction where it must have finished; then
 * rt_overlap_at does what is due at each position. Every operation still
 * completes no earlier than at its own instruction, receives from a peer
 * and collectives of a communicator start in program order, and the same
 * MPI calls run on the same bytes: results do not change by a bit.
 * Example: an all_reduce at instruction 497 whose input was last written
 * by instruction 480 and whose result is first read by instruction 510
 * starts before 481 and is waited for before 510 (unless another
 * collective of its communicator or a byte it shares comes between).
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/exec_internal.h"

/* A receive or collective started and not yet waited for. */
struct pending {
	int pos, instr, mb; /* where it started */
	struct rt_comm_req *req;
	uint8_t *pack; /* its packed operands (owned) */
	size_t npack;  /* their bytes */
	double t0;     /* --trace: ir_now() at its start */
};

struct rt_overlap {
	int npos;                 /* trace positions of a step */
	int *seg_of;              /* [npos] the segment of each position */
	int *from;                /* [npos] where a receive or collective
				   * starts (its own position: at its
				   * instruction) */
	int *at;                  /* [npos] where a collective is waited for
				   * (npos: the step's end; its position + 1:
				   * at its instruction); -1 elsewhere */
	int *post, npost;         /* receives, and collectives started before
				   * their instruction, by (from, position) */
	int *wait, nwait;         /* collectives started early or finished
				   * late, by (at, position) */
	int next_post, next_wait; /* in the step running */
	struct pending *pend;
	int npend, cap;
	size_t packed;     /* bytes of the pending ones' pack */
	double progressed; /* ir_now() of the last progress */
};

#define PROGRESS_GAP 100e-6 /* seconds */

/* Bytes [*lo, *hi) of the arena buffer b occupies in micro-batch mb. */
static void region(const struct plan_buffer *b, int mb, int64_t *lo, int64_t *hi)
{
	*lo = b->offset + plan_slot_stride(b) * (mb % plan_buffer_slots(b));
	*hi = *lo + b->bytes;
}

static bool overlaps(const struct plan_buffer *b, int mb, int64_t lo, int64_t hi)
{
	int64_t blo, bhi;
	region(b, mb, &blo, &bhi);
	return blo < hi && lo < bhi;
}

/* Whether what the step does at position pos reads or writes (writes
 * only, unless any) a byte of [lo, hi). Feeding writes the inputs; saving
 * reads the part's outputs; PLAN_FREE touches nothing. */
static bool touches(const struct rt *r, int pos, int64_t lo, int64_t hi, bool any)
{
	const struct plan_device *d = r->d;
	const struct rt_seg *s = &r->seg[r->ov->seg_of[pos]];
	int k = pos - s->pos;
	if (k == 0 || k == s->hi - s->lo + 1) {
		for (int b = 0; b < d->nbuf; b++) {
			bool fed = k == 0 && s->feed && d->buf[b].bind == PLAN_BIND_INPUT;
			bool saved = k > 0 && any && r->part[r->c->rank][b] == s->part;
			if ((fed || saved) && overlaps(&d->buf[b], s->mb, lo, hi))
				return true;
		}
		return false;
	}
	const struct plan_instr *x = &d->instr[s->lo + k - 1];
	if (x->kind == PLAN_FREE)
		return false;
	for (int j = 0; j < x->nin + x->nout; j++)
		if ((any || j >= x->nin) && overlaps(rt_arg(r, x, j), s->mb, lo, hi))
			return true;
	return false;
}

static const struct plan_instr *instr_at(const struct rt *r, int pos, int *mb)
{
	const struct rt_seg *s = &r->seg[r->ov->seg_of[pos]];
	int k = pos - s->pos;
	*mb = s->mb;
	return k >= 1 && k <= s->hi - s->lo ? &r->d->instr[s->lo + k - 1] : NULL;
}

/* The first position after s where collective x's result is touched or
 * its input written: where it must have finished; s + 1 when nothing but
 * frees comes before it (nothing to overlap). */
static int wait_pos(const struct rt *r, const struct plan_instr *x, int mb, int s)
{
	int64_t ilo, ihi, olo, ohi;
	bool work = false;
	region(rt_arg(r, x, 0), mb, &ilo, &ihi);
	region(rt_arg(r, x, x->nin), mb, &olo, &ohi);
	for (int q = s + 1; q < r->ov->npos; q++) {
		int qmb;
		const struct plan_instr *y = instr_at(r, q, &qmb);
		if (touches(r, q, olo, ohi, true) || touches(r, q, ilo, ihi, false))
			return work ? q : s + 1;
		work = work || !y || y->kind != PLAN_FREE;
	}
	return work ? r->ov->npos : s + 1;
}

/* The earliest position where collective x (at s) may start: after the
 * last position before s touching its result or writing its input, after
 * the last collective of its communicator (they start in program order on
 * every rank), and after every collective sharing a byte with it has
 * finished. */
static int start_pos(const struct rt *r, const struct plan_instr *x, int mb, int s)
{
	const struct rt_overlap *ov = r->ov;
	const struct plan_buffer *in = rt_arg(r, x, 0), *out = rt_arg(r, x, x->nin);
	int64_t ilo, ihi, olo, ohi;
	region(in, mb, &ilo, &ihi);
	region(out, mb, &olo, &ohi);
	int e = s;
	for (; e > 0; e--) {
		int ymb;
		const struct plan_instr *y = instr_at(r, e - 1, &ymb);
		if (touches(r, e - 1, olo, ohi, true) || touches(r, e - 1, ilo, ihi, false) ||
		    (y && plan_instr_is_collective(y->kind) && y->comm == x->comm))
			break;
	}
	for (int k = 0; k < ov->nwait; k++) {
		int cmb, c = ov->wait[k];
		const struct plan_instr *y = instr_at(r, c, &cmb);
		const struct plan_buffer *yi = rt_arg(r, y, 0), *yo = rt_arg(r, y, y->nin);
		if (ov->at[c] > e && (overlaps(yi, cmb, ilo, ihi) || overlaps(yi, cmb, olo, ohi) ||
				      overlaps(yo, cmb, ilo, ihi) || overlaps(yo, cmb, olo, ohi)))
			e = ov->at[c];
	}
	return e < s ? e : s;
}

/* The earliest position where receive x (at t) may start: after the last
 * position before t touching its buffer, and after every collective
 * touching it has finished. */
static int post_pos(const struct rt *r, const struct plan_instr *x, int mb, int t)
{
	const struct rt_overlap *ov = r->ov;
	int64_t lo, hi;
	region(rt_arg(r, x, x->nin), mb, &lo, &hi);
	int e = t;
	while (e > 0 && !touches(r, e - 1, lo, hi, true))
		e--;
	for (int k = 0; k < ov->nwait && ov->wait[k] < t; k++) {
		int cmb, c = ov->wait[k];
		const struct plan_instr *y = instr_at(r, c, &cmb);
		if (ov->at[c] > e &&
		    (overlaps(rt_arg(r, y, 0), cmb, lo, hi) || overlaps(rt_arg(r, y, y->nin), cmb, lo, hi)))
			e = ov->at[c];
	}
	return e;
}

/* qsort_r's order of positions by (key[position], position); ctx: key */
static int by_at(const void *a, const void *b, void *ctx)
{
	const int *key = ctx;
	int p = *(const int *)a, q = *(const int *)b;
	return key[p] != key[q] ? (key[p] > key[q]) - (key[p] < key[q]) : (p > q) - (p < q);
}

int rt_overlap_init(struct rt *r)
{
	const struct rt_seg *last = &r->seg[r->nseg - 1];
	int npos = last->pos + last->hi - last->lo + 2, rc = 0;
	if (r->no_overlap)
		return 0;
	int *after = ir_calloc((size_t)r->p->ndevices + 1, sizeof *after); /* per peer: the last start */
	struct rt_overlap *ov = r->ov = ir_calloc(1, sizeof *ov);
	if (!ov || !after || !(ov->seg_of = ir_malloc(sizeof *ov->seg_of * (size_t)npos)) ||
	    !(ov->at = ir_malloc(sizeof *ov->at * (size_t)npos)) ||
	    !(ov->from = ir_malloc(sizeof *ov->from * (size_t)npos)) ||
	    !(ov->post = ir_malloc(sizeof *ov->post * (size_t)npos)) ||
	    !(ov->wait = ir_malloc(sizeof *ov->wait * (size_t)npos))) {
		rc = ir_errorf(-ENOMEM, "out of memory planning the overlap of communication");
		goto done;
	}
	ov->npos = npos;
	for (int k = 0; k < r->nseg; k++)
		for (int q = r->seg[k].pos; q < r->seg[k].pos + r->seg[k].hi - r->seg[k].lo + 2; q++)
			ov->seg_of[q] = k;
	/* collectives first: a receive's start waits for them */
	for (int q = 0; q < npos; q++) {
		int mb;
		const struct plan_instr *x = instr_at(r, q, &mb);
		ov->at[q] = -1;
		ov->from[q] = q;
		if (!x || !plan_instr_is_collective(x->kind))
			continue;
		int w = wait_pos(r, x, mb, q), e = start_pos(r, x, mb, q);
		ov->at[q] = q + 1;
		if (w == q + 1 && e == q)
			continue;
		ov->at[q] = w;
		ov->from[q] = e;
		ov->wait[ov->nwait++] = q;
		if (e < q)
			ov->post[ov->npost++] = q;
	}
	for (int q = 0; q < npos; q++) {
		int mb;
		const struct plan_instr *x = instr_at(r, q, &mb);
		if (!x || x->kind != PLAN_RECV)
			continue;
		int e = post_pos(r, x, mb, q);
		if (e < after[x->peer])
			e = after[x->peer];
		after[x->peer] = e;
		ov->from[q] = e;
		ov->post[ov->npost++] = q;
	}
	qsort_r(ov->post, (size_t)ov->npost, sizeof *ov->post, by_at, ov->from);
	qsort_r(ov->wait, (size_t)ov->nwait, sizeof *ov->wait, by_at, ov->at);
done:
	ir_free(after);
	return rc;
}

static void overlap_free(struct rt *r)
{
	struct rt_overlap *ov = r->ov;
	if (!ov)
		return;
	for (int k = 0; k < ov->npend; k++)
		ir_free(ov->pend[k].pack);
	ir_free(ov->pend);
	ir_free(ov->seg_of);
	ir_free(ov->at);
	ir_free(ov->from);
	ir_free(ov->post);
	ir_free(ov->wait);
	ir_free(ov);
	r->ov = NULL;
}

void rt_overlap_release(struct rt *r)
{
	overlap_free(r);
	ir_free(r->seg);
	r->seg = NULL;
	r->nseg = 0;
}

static struct pending *pend_new(const struct rt *r, int pos, int instr, int mb)
{
	struct rt_overlap *ov = r->ov;
	if (ov->npend == ov->cap) {
		int cap = ov->cap ? 2 * ov->cap : 16;
		struct pending *p = ir_realloc(ov->pend, sizeof *p * (size_t)cap);
		if (!p)
			return NULL;
		ov->pend = p;
		ov->cap = cap;
	}
	struct pending *p = &ov->pend[ov->npend++];
	*p = (struct pending){ pos, instr, mb, NULL, NULL, 0, r->trace ? ir_now() : 0 };
	return p;
}

/* Waits for the operation started at pos and forgets it; the collectives'
 * blocks unpacked. A collective that ran at its instruction after all
 * (the pack limit) has nothing to wait for; a receive always has. */
int rt_overlap_finish(struct rt *r, int pos)
{
	struct rt_overlap *ov = r->ov;
	int k = 0;
	while (k < ov->npend && ov->pend[k].pos != pos)
		k++;
	int smb;
	IR_ASSERT(k < ov->npend || instr_at(r, pos, &smb)->kind != PLAN_RECV);
	if (k == ov->npend)
		return 0;
	struct pending p = ov->pend[k];
	ov->pend[k] = ov->pend[--ov->npend];
	const struct plan_instr *x = &r->d->instr[p.instr];
	int rc = r->c->ops->wait(r->c, p.req), mb = r->mb;
	if (rc == 0 && x->kind != PLAN_RECV) {
		r->mb = p.mb;
		rt_coll_unpack(r, x, p.pack);
		r->mb = mb;
	}
	ir_free(p.pack);
	ov->packed -= p.npack;
	if (rc == 0 && r->trace)
		rt_trace_op(r, p.instr, p.mb, p.t0, ir_now());
	return rc;
}

bool rt_overlap_started(const struct rt_overlap *ov, int pos)
{
	for (int k = 0; k < ov->npend; k++)
		if (ov->pend[k].pos == pos)
			return true;
	return false;
}

bool rt_overlap_early(const struct rt_overlap *ov, int pos)
{
	return ov->at[pos] > pos + 1;
}

/* Starts collective x (of position pos, r->mb its micro-batch) to be
 * waited for later: 1; 0 when its packed operands would pass the limit
 * (it then runs at its instruction). Operands packed and in flight cost
 * memory beside the arena: at most a quarter of it more. */
int rt_overlap_start_async(struct rt *r, const struct plan_instr *x, int pos)
{
	struct rt_overlap *ov = r->ov;
	size_t n = rt_coll_pack_bytes(r, x);
	if (n && ov->packed + n > (size_t)r->d->arena_bytes / 4)
		return 0;
	struct pending *p = pend_new(r, pos, (int)(x - r->d->instr), r->mb);
	if (!p || (n && !(p->pack = ir_malloc(n)))) {
		if (p)
			ov->npend--;
		return ir_errorf(-ENOMEM, "out of memory starting a %s", plan_instr_kind_name(x->kind));
	}
	int rc = rt_coll_start(r, x, p->pack, &p->req);
	if (rc < 0) {
		ir_free(p->pack);
		ov->npend--;
		return rc;
	}
	p->npack = n;
	ov->packed += n;
	r->n_late++;
	return 1;
}

/* "before instruction 25", "before feeding micro-batch 1", ... */
static void where(const struct rt *r, int pos, char *buf, size_t n)
{
	if (pos >= r->ov->npos) {
		snprintf(buf, n, "at the end of the step");
		return;
	}
	const struct rt_seg *s = &r->seg[r->ov->seg_of[pos]];
	int k = pos - s->pos;
	if (k == 0)
		snprintf(buf, n, "before feeding micro-batch %d", s->mb);
	else if (k == s->hi - s->lo + 1)
		snprintf(buf, n, "before saving the outputs of micro-batch %d", s->mb);
	else
		snprintf(buf, n, "before instruction %d", s->lo + k - 1);
}

int rt_overlap_at(struct rt *r, int pos)
{
	struct rt_overlap *ov = r->ov;
	const struct rt_comm_ops *c = r->c->ops;
	int rc = 0, mb = r->mb;
	if (!ov)
		return 0;
	if (pos == 0)
		ov->next_post = ov->next_wait = 0;
	bool due = (ov->next_wait < ov->nwait && ov->at[ov->wait[ov->next_wait]] == pos) ||
		   (ov->next_post < ov->npost && ov->from[ov->post[ov->next_post]] == pos);
	if (!due && ov->npend == 0 && pos < ov->npos) /* most instructions */
		return 0;
	while (rc == 0 && ov->next_wait < ov->nwait && ov->at[ov->wait[ov->next_wait]] == pos) {
		int q = ov->wait[ov->next_wait++], smb;
		const struct plan_instr *x = instr_at(r, q, &smb);
		if ((rc = rt_overlap_finish(r, q)) < 0) {
			char w[96];
			where(r, pos, w, sizeof w);
			ir_error_prefix("instruction %d (%s of micro-batch %d, waited for %s)", (int)(x - r->d->instr),
					plan_instr_kind_name(x->kind), smb, w);
		}
	}
	while (rc == 0 && ov->next_post < ov->npost && ov->from[ov->post[ov->next_post]] == pos) {
		int q = ov->post[ov->next_post++];
		const struct plan_instr *x = instr_at(r, q, &r->mb);
		if (x->kind == PLAN_RECV) {
			struct pending *p = pend_new(r, q, (int)(x - r->d->instr), r->mb);
			const struct plan_buffer *b = rt_arg(r, x, x->nin);
			rc = p ? c->recv(r->c, rt_buf(r, b), (size_t)b->bytes, x->peer, x->tag, &p->req)
			       : ir_errorf(-ENOMEM, "out of memory starting a receive");
			if (rc < 0 && p)
				ov->npend--;
			r->n_early += rc == 0 && pos < q;
		} else if ((rc = rt_overlap_start_async(r, x, q)) > 0) {
			rc = 0; /* started; 0: it runs at its instruction */
		}
		if (rc < 0)
			ir_error_prefix("instruction %d (%s of micro-batch %d, started early)", (int)(x - r->d->instr),
					plan_instr_kind_name(x->kind), r->mb);
		r->mb = mb;
	}
	if (rc == 0 && pos >= ov->npos)
		IR_ASSERT(ov->npend == 0);
	/* each progress is an MPI_Test, a sched_yield on an over-subscribed
	 * host: not more often than every PROGRESS_GAP seconds */
	double now = ir_now();
	if (rc == 0 && now - ov->progressed >= PROGRESS_GAP) {
		ov->progressed = now;
		if ((rc = c->progress(r->c)) < 0)
			ir_error_prefix("%s", "driving communication");
	}
	return rc;
}
