/*
 * plan_verify_comm.c: the checks of plan_verify (plan.h) that need every
 * device at once: each output element has exactly one writer, the
 * collectives of each communicator match in order across its ranks, each
 * send pairs with one receive, and the devices run together to the end of
 * their programs.
 *
 * Collectives are bucketed by communicator in device order, so a member's
 * collectives on one communicator are a contiguous run in program order;
 * the k-th of every member must agree (kind, reduction, axes, dtype, input
 * shape) with the k-th of the first member that has one. Sends and receives
 * are sorted by (sender, receiver, tag, program order) and merged: the k-th
 * send of a key pairs with its k-th receive. Then a scheduler runs one
 * program counter per device: sends never block, a receive waits until its
 * paired send was issued, a collective until every member reached it. A
 * device is queued again only when what it waits on happens, so the run is
 * linear in the instructions; devices left unfinished are deadlocked:
 * "deadlock: device 0 waits at instruction 0 (recv from 1, tag 0); ...".
 *
 * Precondition: every device passed plan_verify.c's local checks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ir/plan_verify.h"

struct ref {
	int d, i;
};

/* A send or receive: sender, receiver, tag, and where it is. */
struct msg {
	int src, dst, tag, d, i;
};

struct sim {
	int64_t *base;  /* [ndevices + 1]: flat index of device d's first instruction */
	int *match;     /* per flat instruction: a send's or receive's partner
			 * instruction on the peer; a collective's instance */
	int *inst_comm; /* per instance: its communicator */
	int ninst;
};

static int oom(void)
{
	return ir_errorf(-ENOMEM, "plan: out of memory while verifying");
}

static const struct plan_instr *instr_of(const struct plan *p, struct ref x)
{
	return &p->devices[x.d].instr[x.i];
}

/* The buffer an instruction reads (j 0) or writes (j nin). */
static const struct plan_buffer *operand(const struct plan *p, int d, int i, int j)
{
	const struct plan_device *dev = &p->devices[d];
	return &dev->buf[dev->args[dev->instr[i].arg + j]];
}

/* ---- output slices ---------------------------------------------------- */

struct writer {
	int index, d, b;
};

static int cmp_writer(const void *x, const void *y)
{
	const struct writer *a = x, *b = y;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	if (a->d != b->d)
		return a->d < b->d ? -1 : 1;
	return (a->b > b->b) - (a->b < b->b);
}

/* whether device d's buffer b and device e's buffer c hold some element
 * of their tensor both */
static bool slices_meet(const struct plan *p, int d, int b, int e, int c)
{
	const struct plan_buffer *x = &p->devices[d].buf[b], *y = &p->devices[e].buf[c];
	const int64_t *s = plan_slice_of(&p->devices[d], b)->start, *t = plan_slice_of(&p->devices[e], c)->start;
	for (int k = 0; k < x->shape.rank; k++)
		if (s[k] + x->shape.dims[k] <= t[k] || t[k] + y->shape.dims[k] <= s[k])
			return false;
	return true;
}

/* Every output element has exactly one writer: the writer slices are
 * pairwise disjoint (checked pairwise: an output has about one writer per
 * device of a stage) and their sizes add up to the output's. */
int plan_verify_outputs(const struct plan *p)
{
	int64_t n = 0, k = 0;
	for (int d = 0; d < p->ndevices; d++)
		for (int b = 0; b < p->devices[d].nbuf; b++)
			n += p->devices[d].buf[b].bind == PLAN_BIND_OUTPUT && plan_slice_of(&p->devices[d], b)->writer;
	struct writer *w = ir_malloc((size_t)(n ? n : 1) * sizeof *w);
	if (!w)
		return ir_errorf(-ENOMEM, "plan: out of memory while verifying");
	for (int d = 0; d < p->ndevices; d++)
		for (int b = 0; b < p->devices[d].nbuf; b++)
			if (p->devices[d].buf[b].bind == PLAN_BIND_OUTPUT && plan_slice_of(&p->devices[d], b)->writer)
				w[k++] = (struct writer){ p->devices[d].buf[b].index, d, b };
	qsort(w, (size_t)n, sizeof *w, cmp_writer);
	int r = 0;
	k = 0;
	for (int o = 0; o < p->noutputs && !r; o++) {
		const struct plan_tensor *t = &p->outputs[o];
		int64_t g = k, held = 0;
		while (k < n && w[k].index == o)
			k++;
		for (int64_t x = g; x < k && !r; x++) {
			const struct plan_buffer *a = &p->devices[w[x].d].buf[w[x].b];
			held += ir_shape_numel(&a->shape);
			for (int64_t y = x + 1; y < k && !r && a->bytes; y++) {
				const struct plan_buffer *b = &p->devices[w[y].d].buf[w[y].b];
				if (b->bytes && slices_meet(p, w[x].d, w[x].b, w[y].d, w[y].b))
					r = ir_errorf(
						-EINVAL,
						"plan: output %d \"%s\": device %d, buffer %d and device %d, buffer %d both write some of its elements",
						o, t->name ? t->name : "", w[x].d, w[x].b, w[y].d, w[y].b);
			}
		}
		if (!r && held != ir_shape_numel(&t->shape))
			r = ir_errorf(-EINVAL,
				      "plan: output %d \"%s\": the writer slices cover %lld of its %lld elements", o,
				      t->name ? t->name : "", (long long)held, (long long)ir_shape_numel(&t->shape));
	}
	ir_free(w);
	return r;
}

/* ---- collectives ------------------------------------------------------ */

/* The part instruction i of device d belongs to: 0 per micro-batch (a
 * pipelined plan's forward part), 1 a pipelined plan's backward part, 2
 * per step. Messages and collectives pair within one part. */
static int part_of(const struct plan *p, int d, int i)
{
	const struct plan_device *dev = &p->devices[d];
	return i >= plan_step_first(dev) ? 2 : dev->nfwd > 0 && i >= dev->nfwd ? 1 : 0;
}

static const char *part_name(int part)
{
	return part == 2 ? "once per step" : part == 1 ? "in the backward part" : "per micro-batch (forward)";
}

static bool same_collective(const struct plan *p, struct ref x, struct ref y)
{
	const struct plan_instr *a = instr_of(p, x), *b = instr_of(p, y);
	const struct plan_buffer *ba = operand(p, x.d, x.i, 0), *bb = operand(p, y.d, y.i, 0);
	if (part_of(p, x.d, x.i) != part_of(p, y.d, y.i) || a->kind != b->kind || ba->dtype != bb->dtype ||
	    !ir_shape_eq(&ba->shape, &bb->shape))
		return false;
	switch (a->kind) {
	case PLAN_ALL_REDUCE:
		return a->reduce == b->reduce;
	case PLAN_REDUCE_SCATTER:
		return a->reduce == b->reduce && a->axis == b->axis;
	case PLAN_ALL_GATHER:
		return a->axis == b->axis;
	case PLAN_ALL_TO_ALL:
		return a->axis == b->axis && a->axis2 == b->axis2;
	case PLAN_KERNEL:
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	return false;
}

/* "reduce_scatter sum axis 0 of f32 [8,4]" */
static char *describe(const struct plan *p, struct ref x, char *out, size_t n)
{
	const struct plan_instr *in = instr_of(p, x);
	const struct plan_buffer *bf = operand(p, x.d, x.i, 0);
	char how[64] = "", sh[IR_SHAPE_STR_MAX];
	switch (in->kind) {
	case PLAN_ALL_REDUCE:
		snprintf(how, sizeof how, " %s", plan_reduce_name(in->reduce));
		break;
	case PLAN_REDUCE_SCATTER:
		snprintf(how, sizeof how, " %s axis %d", plan_reduce_name(in->reduce), in->axis);
		break;
	case PLAN_ALL_GATHER:
		snprintf(how, sizeof how, " axis %d", in->axis);
		break;
	case PLAN_ALL_TO_ALL:
		snprintf(how, sizeof how, " axes %d to %d", in->axis, in->axis2);
		break;
	case PLAN_KERNEL:
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	snprintf(out, n, "%s%s of %s %s", plan_instr_kind_name(in->kind), how, ir_dtype_name(bf->dtype),
		 ir_shape_str(&bf->shape, sh, sizeof sh));
	return out;
}

/* One communicator: its collectives are bucket[lo, hi) (device order, all
 * from members), pos[rank] a member's index. Numbers its instances from
 * m->ninst. */
static int match_comm(const struct plan *p, int c, const struct ref *bucket, int64_t lo, int64_t hi, const int *pos,
		      int64_t *mstart, int64_t *mcount, struct sim *m)
{
	const struct plan_comm *cm = &p->comms[c];
	char da[256], db[256];
	for (int j = 0; j < cm->n; j++)
		mcount[j] = 0;
	for (int64_t k = lo; k < hi; k++) {
		int j = pos[bucket[k].d];
		IR_ASSERT(j >= 0);
		if (mcount[j]++ == 0)
			mstart[j] = k;
	}
	int64_t most = 0;
	for (int j = 0; j < cm->n; j++)
		if (mcount[j] > most)
			most = mcount[j];
	for (int64_t k = 0; k < most; k++) {
		int j0 = 0;
		while (mcount[j0] <= k)
			j0++;
		struct ref a = bucket[mstart[j0] + k];
		for (int j = 0; j < cm->n; j++) {
			if (mcount[j] <= k)
				return ir_errorf(
					-EINVAL,
					"device %d never joins collective %lld on comm %d (device %d's instruction %d)",
					cm->ranks[j], (long long)k, c, a.d, a.i);
			struct ref b = bucket[mstart[j] + k];
			if (!same_collective(p, a, b))
				return plan_verify_instr_errorf(
					p, b.d, b.i,
					"collective %lld on comm %d is %s, device %d's (instruction %d) is %s",
					(long long)k, c, describe(p, b, db, sizeof db), a.d, a.i,
					describe(p, a, da, sizeof da));
			m->match[m->base[b.d] + b.i] = m->ninst + (int)k;
		}
		m->inst_comm[m->ninst + k] = c;
	}
	m->ninst += (int)most;
	return 0;
}

static int match_collectives(const struct plan *p, struct sim *m)
{
	int nc = p->ncomms, maxn = 1, r = 0;
	int64_t *first = ir_calloc((size_t)nc + 1, sizeof *first);
	int64_t *fill = ir_malloc(((size_t)nc + 1) * sizeof *fill);
	int *pos = ir_malloc((size_t)p->ndevices * sizeof *pos);
	for (int c = 0; c < nc; c++)
		maxn = p->comms[c].n > maxn ? p->comms[c].n : maxn;
	int64_t *mstart = ir_malloc((size_t)maxn * sizeof *mstart);
	int64_t *mcount = ir_malloc((size_t)maxn * sizeof *mcount);
	struct ref *bucket = NULL;
	if (!first || !fill || !pos || !mstart || !mcount) {
		r = oom();
		goto out;
	}
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++)
			if (plan_instr_is_collective(p->devices[d].instr[i].kind))
				first[p->devices[d].instr[i].comm + 1]++;
	for (int c = 0; c < nc; c++)
		first[c + 1] += first[c];
	int64_t total = first[nc];
	bucket = ir_malloc((size_t)(total ? total : 1) * sizeof *bucket);
	m->inst_comm = ir_malloc((size_t)(total ? total : 1) * sizeof *m->inst_comm);
	if (!bucket || !m->inst_comm) {
		r = oom();
		goto out;
	}
	memcpy(fill, first, ((size_t)nc + 1) * sizeof *fill);
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++)
			if (plan_instr_is_collective(p->devices[d].instr[i].kind))
				bucket[fill[p->devices[d].instr[i].comm]++] = (struct ref){ d, i };
	for (int d = 0; d < p->ndevices; d++)
		pos[d] = -1;
	/* Membership first, over every comm: a stray collective would
	 * otherwise read as a member missing one. */
	for (int pass = 0; pass < 2; pass++)
		for (int c = 0; c < nc && r == 0; c++) {
			const struct plan_comm *cm = &p->comms[c];
			for (int j = 0; j < cm->n; j++)
				pos[cm->ranks[j]] = j;
			for (int64_t k = first[c]; k < first[c + 1] && pass == 0 && r == 0; k++)
				if (pos[bucket[k].d] < 0)
					r = plan_verify_instr_errorf(p, bucket[k].d, bucket[k].i,
								     "device %d is not a member of comm %d",
								     bucket[k].d, c);
			if (pass == 1)
				r = match_comm(p, c, bucket, first[c], first[c + 1], pos, mstart, mcount, m);
			for (int j = 0; j < cm->n; j++)
				pos[cm->ranks[j]] = -1;
		}
out:
	ir_free(first);
	ir_free(fill);
	ir_free(pos);
	ir_free(mstart);
	ir_free(mcount);
	ir_free(bucket);
	return r;
}

/* ---- sends and receives ----------------------------------------------- */

static int cmp_key(const struct msg *a, const struct msg *b)
{
	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->dst != b->dst)
		return a->dst < b->dst ? -1 : 1;
	return (a->tag > b->tag) - (a->tag < b->tag);
}

static int cmp_msg(const void *x, const void *y)
{
	const struct msg *a = x, *b = y;
	int c = cmp_key(a, b);
	return c ? c : (a->i > b->i) - (a->i < b->i);
}

static int pair(const struct plan *p, const struct msg *s, const struct msg *v, struct sim *m)
{
	const struct plan_buffer *a = operand(p, s->d, s->i, 0), *b = operand(p, v->d, v->i, 0);
	char as[IR_SHAPE_STR_MAX], bs[IR_SHAPE_STR_MAX];
	if (a->dtype != b->dtype || a->bytes != b->bytes || !ir_shape_eq(&a->shape, &b->shape))
		return plan_verify_instr_errorf(
			p, s->d, s->i,
			"sends %s %s (%lld bytes) to device %d (tag %d), device %d's instruction %d (recv) receives %s %s (%lld bytes)",
			ir_dtype_name(a->dtype), ir_shape_str(&a->shape, as, sizeof as), (long long)a->bytes, s->dst,
			s->tag, v->d, v->i, ir_dtype_name(b->dtype), ir_shape_str(&b->shape, bs, sizeof bs),
			(long long)b->bytes);
	if (part_of(p, s->d, s->i) != part_of(p, v->d, v->i))
		return plan_verify_instr_errorf(p, s->d, s->i,
						"sends %s, device %d's instruction %d (recv) "
						"receives %s",
						part_name(part_of(p, s->d, s->i)), v->d, v->i,
						part_name(part_of(p, v->d, v->i)));
	m->match[m->base[s->d] + s->i] = v->i;
	m->match[m->base[v->d] + v->i] = s->i;
	return 0;
}

static int match_messages(const struct plan *p, struct sim *m)
{
	int64_t ns = 0, nr = 0;
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++) {
			ns += p->devices[d].instr[i].kind == PLAN_SEND;
			nr += p->devices[d].instr[i].kind == PLAN_RECV;
		}
	struct msg *snd = ir_malloc((size_t)(ns ? ns : 1) * sizeof *snd);
	struct msg *rcv = ir_malloc((size_t)(nr ? nr : 1) * sizeof *rcv);
	int r = 0;
	if (!snd || !rcv) {
		r = oom();
		goto out;
	}
	ns = nr = 0;
	for (int d = 0; d < p->ndevices; d++)
		for (int i = 0; i < p->devices[d].ninstr; i++) {
			const struct plan_instr *in = &p->devices[d].instr[i];
			if (in->kind == PLAN_SEND)
				snd[ns++] = (struct msg){ d, in->peer, in->tag, d, i };
			else if (in->kind == PLAN_RECV)
				rcv[nr++] = (struct msg){ in->peer, d, in->tag, d, i };
		}
	qsort(snd, (size_t)ns, sizeof *snd, cmp_msg);
	qsort(rcv, (size_t)nr, sizeof *rcv, cmp_msg);
	for (int64_t a = 0, b = 0; (a < ns || b < nr) && r == 0;) {
		int c = a == ns ? 1 : b == nr ? -1 : cmp_key(&snd[a], &rcv[b]);
		if (c < 0)
			r = plan_verify_instr_errorf(p, snd[a].d, snd[a].i,
						     "sends to device %d (tag %d), but device %d has no matching recv",
						     snd[a].dst, snd[a].tag, snd[a].dst);
		else if (c > 0)
			r = plan_verify_instr_errorf(
				p, rcv[b].d, rcv[b].i,
				"receives from device %d (tag %d), but device %d has no matching send", rcv[b].src,
				rcv[b].tag, rcv[b].src);
		else
			r = pair(p, &snd[a++], &rcv[b++], m);
	}
out:
	ir_free(snd);
	ir_free(rcv);
	return r;
}

/* ---- running all devices ---------------------------------------------- */

static int deadlock(const struct plan *p, const struct sim *m, const int *pc, const int *arrived)
{
	char msg[900];
	int at = snprintf(msg, sizeof msg, "deadlock:"), shown = 0, more = 0;
	for (int d = 0; d < p->ndevices; d++) {
		const struct plan_device *dev = &p->devices[d];
		if (pc[d] >= dev->ninstr)
			continue;
		if (shown == 4) {
			more++;
			continue;
		}
		const struct plan_instr *in = &dev->instr[pc[d]];
		char what[128];
		if (in->kind == PLAN_RECV) {
			snprintf(what, sizeof what, "recv from %d, tag %d", in->peer, in->tag);
		} else {
			int inst = m->match[m->base[d] + pc[d]];
			snprintf(what, sizeof what, "%s on comm %d, %d of %d ranks arrived",
				 plan_instr_kind_name(in->kind), in->comm, arrived[inst], p->comms[in->comm].n);
		}
		if (at < (int)sizeof msg)
			at += snprintf(msg + at, sizeof msg - (size_t)at, "%s device %d waits at instruction %d (%s)",
				       shown ? ";" : "", d, pc[d], what);
		shown++;
	}
	if (more && at < (int)sizeof msg)
		snprintf(msg + at, sizeof msg - (size_t)at, "; %d more devices wait", more);
	return ir_errorf(-EINVAL, "%s", msg);
}

static int run_all(const struct plan *p, const struct sim *m)
{
	int nd = p->ndevices, top = 0, r = 0;
	int *pc = ir_calloc((size_t)nd, sizeof *pc);
	int *stack = ir_malloc((size_t)nd * sizeof *stack);
	unsigned char *queued = ir_calloc((size_t)nd, 1), *joined = ir_calloc((size_t)nd, 1);
	int *arrived = ir_calloc((size_t)(m->ninst ? m->ninst : 1), sizeof *arrived);
	if (!pc || !stack || !queued || !joined || !arrived) {
		r = oom();
		goto out;
	}
	for (int d = nd - 1; d >= 0; d--) {
		stack[top++] = d;
		queued[d] = 1;
	}
	while (top > 0) {
		int d = stack[--top];
		const struct plan_device *dev = &p->devices[d];
		queued[d] = 0;
		while (pc[d] < dev->ninstr) {
			const struct plan_instr *in = &dev->instr[pc[d]];
			int partner = m->match[m->base[d] + pc[d]];
			if (in->kind == PLAN_RECV) {
				if (pc[in->peer] <= partner)
					break; /* the send is not issued yet: its device wakes us */
				pc[d]++;
			} else if (in->kind == PLAN_SEND) {
				int q = in->peer;
				pc[d]++;
				if (pc[q] == partner && !queued[q]) {
					stack[top++] = q;
					queued[q] = 1;
				}
			} else if (plan_instr_is_collective(in->kind)) {
				const struct plan_comm *cm = &p->comms[m->inst_comm[partner]];
				if (!joined[d]) {
					joined[d] = 1;
					arrived[partner]++;
				}
				if (arrived[partner] < cm->n)
					break; /* the last member to arrive releases everyone */
				for (int j = 0; j < cm->n; j++) {
					int q = cm->ranks[j];
					joined[q] = 0;
					pc[q]++;
					if (q != d && !queued[q]) {
						stack[top++] = q;
						queued[q] = 1;
					}
				}
			} else {
				pc[d]++;
			}
		}
	}
	for (int d = 0; d < nd && r == 0; d++)
		if (pc[d] < p->devices[d].ninstr)
			r = deadlock(p, m, pc, arrived);
out:
	ir_free(pc);
	ir_free(stack);
	ir_free(queued);
	ir_free(joined);
	ir_free(arrived);
	return r;
}

int plan_verify_comm(const struct plan *p)
{
	struct sim m = { 0 };
	int r = 0;
	m.base = ir_malloc(((size_t)p->ndevices + 1) * sizeof *m.base);
	if (!m.base)
		return oom();
	m.base[0] = 0;
	for (int d = 0; d < p->ndevices; d++)
		m.base[d + 1] = m.base[d] + p->devices[d].ninstr;
	int64_t total = m.base[p->ndevices];
	m.match = ir_malloc((size_t)(total ? total : 1) * sizeof *m.match);
	if (!m.match)
		r = oom();
	if (r == 0)
		r = match_collectives(p, &m);
	if (r == 0)
		r = match_messages(p, &m);
	if (r == 0)
		r = run_all(p, &m);
	ir_free(m.base);
	ir_free(m.match);
	ir_free(m.inst_comm);
	return r;
}
