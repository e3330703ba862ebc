/*
 * lower_mem.c: the memory plan of a lowered stage, and its expansion into
 * the plan's per-device programs.
 *
 * Liveness over the template's instruction order: a temporary lives from
 * the instruction that writes it to its last reader, after which a FREE is
 * inserted (a temporary nothing reads is freed at once); bound buffers
 * (parameters, inputs, outputs, state, gradient accumulators) live for the
 * whole program. A training program's two parts (once per micro-batch,
 * then once per step) are planned as one sequence: sound because the
 * per-step part reads nothing of the first but bound buffers, and the
 * first part reads no temporary it did not write itself. A pipelined
 * program's forward and backward parts interleave with other
 * micro-batches': what crosses from one to the other gets a slot per
 * micro-batch in flight (one when it is the same in every micro-batch,
 * plan_invariant_instr) and the whole per-micro-batch part as its
 * interval (stash_slots). Offsets: largest buffer first,
 * each at the lowest aligned offset that overlaps no placed buffer live at
 * the same time (greedy by size, the usual heuristic of static memory
 * planners: within a few percent of the peak of live bytes on layer-
 * structured programs). Every device of the stage shares the layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/lower/lower_internal.h"

static int64_t align_up(int64_t x)
{
	return (x + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

static int64_t buf_bytes(const struct lw_buf *b)
{
	return (int64_t)ir_dtype_size(b->dtype) * ir_shape_numel(&b->shape);
}

/* Bytes of the arena a buffer takes, all its slots. */
static int64_t extent(const struct lw_buf *b)
{
	return align_up(buf_bytes(b)) * (b->slots > 1 ? b->slots : 1);
}

/* A pipelined program with more than one micro-batch in flight: per
 * buffer, whether it crosses from the forward part to the backward part
 * holding the same bytes in every micro-batch (plan_invariant_instr), so
 * that one slot serves every micro-batch in flight: none of their
 * backward parts may free it. NULL when out of memory. */
static bool *shared_stash(const struct lower *L)
{
	int nb = L->nbuf, sf = L->step_first >= 0 ? L->step_first : L->nins;
	bool *shared = ir_calloc((size_t)nb + 1, sizeof *shared);
	unsigned char *st = ir_malloc((size_t)nb * 2 + 1), *read = st + nb;
	if (!shared || !st) {
		ir_free(shared);
		ir_free(st);
		return NULL;
	}
	if (L->fwd_end <= 0 || plan_schedule_slots(L->order, L->norder) < 2) {
		ir_free(st);
		return shared;
	}
	memset(read, 0, (size_t)nb);
	for (int b = 0; b < nb; b++)
		st[b] = plan_invariant_init(L->buf[b].bind);
	for (int i = 0; i < sf; i++) {
		const struct lw_ins *x = &L->ins[i];
		if (i < L->fwd_end)
			for (int j = x->nin; j < x->nin + x->nout; j++)
				read[L->args[x->arg + j]] |= 1; /* written by the forward part */
		plan_invariant_instr(st, x->kind, L->args + x->arg, x->nin, x->nout);
		for (int j = 0; i >= L->fwd_end && j < x->nin; j++)
			read[L->args[x->arg + j]] |= 2; /* read by the backward part */
	}
	for (int b = 0; b < nb; b++)
		shared[b] = L->buf[b].bind == PLAN_BIND_NONE && read[b] == 3 && st[b] == PLAN_INVARIANT;
	ir_free(st);
	return shared;
}

/* Inserts a FREE after the last use of every temporary but the shared
 * stash; lo/hi receive each buffer's live interval in the new order. */
static int insert_frees(struct lower *L, int *lo, int *hi, const bool *shared)
{
	int nb = L->nbuf, ni = L->nins;
	int *last = ir_malloc(sizeof *last * (size_t)(nb + 1));
	struct lw_ins *ins = NULL;
	int rc = -ENOMEM;
	if (!last)
		goto out;
	for (int b = 0; b < nb; b++)
		last[b] = -1;
	for (int i = 0; i < ni; i++) {
		const struct lw_ins *x = &L->ins[i];
		for (int j = 0; j < x->nin + x->nout; j++)
			last[L->args[x->arg + j]] = i;
	}
	int extra = 0;
	for (int b = 0; b < nb; b++)
		if (L->buf[b].bind == PLAN_BIND_NONE && last[b] >= 0) {
			extra++;
		}
	if (!(ins = ir_malloc(sizeof *ins * (size_t)(ni + extra + 1))))
		goto out;
	int need = L->nargs + extra;
	if (need > L->capargs) {
		int *na = ir_realloc(L->args, sizeof *na * (size_t)need);
		if (!na)
			goto out;
		L->args = na;
		L->capargs = need;
	}
	for (int b = 0; b < nb; b++)
		lo[b] = hi[b] = -1;
	int k = 0, sf = -1, fe = -1;
	for (int i = 0; i < ni; i++) {
		const struct lw_ins *x = &L->ins[i];
		if (i == L->step_first)
			sf = k;
		if (i == L->fwd_end)
			fe = k;
		ins[k] = *x;
		for (int j = 0; j < x->nin + x->nout; j++) {
			int b = L->args[x->arg + j];
			if (lo[b] < 0)
				lo[b] = k;
			hi[b] = k;
		}
		k++;
		for (int j = 0; j < x->nin + x->nout; j++) {
			int b = L->args[x->arg + j];
			if (last[b] != i || L->buf[b].bind != PLAN_BIND_NONE || shared[b])
				continue;
			last[b] = -2; /* freed once even when listed twice */
			struct lw_ins f = { .kind = PLAN_FREE, .kernel = -1, .nin = 1, .arg = L->nargs };
			L->args[L->nargs++] = b;
			hi[b] = k;
			ins[k++] = f;
		}
	}
	for (int b = 0; b < nb; b++)
		if (L->buf[b].bind != PLAN_BIND_NONE || lo[b] < 0) {
			lo[b] = 0;
			hi[b] = k;
		}
	ir_free(L->ins);
	L->ins = ins;
	L->nins = L->capins = k;
	L->step_first = sf < 0 ? k : sf;
	L->fwd_end = L->fwd_end > 0 ? (fe < 0 ? L->step_first : fe) : 0;
	ins = NULL;
	rc = 0;
out:
	ir_free(ins);
	ir_free(last);
	return rc < 0 ? ir_errorf(rc, "out of memory planning memory") : 0;
}

/* A pipelined program: temporaries the forward part writes and the
 * backward part reads, and inputs the backward part reads, live while
 * other micro-batches' parts run: one slot per micro-batch in flight (one
 * for a value the same in every micro-batch), and the whole
 * per-micro-batch part as their interval (plan_verify's rule). */
static int stash_slots(struct lower *L, int *lo, int *hi, const bool *shared)
{
	if (L->fwd_end <= 0)
		return 0;
	int slots = plan_schedule_slots(L->order, L->norder);
	unsigned char *read = ir_calloc((size_t)L->nbuf + 1, 1);
	if (!read)
		return ir_errorf(-ENOMEM, "out of memory planning memory");
	for (int i = L->fwd_end; i < L->step_first; i++)
		for (int j = 0; j < L->ins[i].nin; j++)
			read[L->args[L->ins[i].arg + j]] = 1;
	for (int b = 0; b < L->nbuf; b++) {
		struct lw_buf *x = &L->buf[b];
		if (!read[b] || !(x->bind == PLAN_BIND_INPUT || (x->bind == PLAN_BIND_NONE && lo[b] < L->fwd_end)))
			continue;
		x->slots = shared[b] ? 1 : slots;
		lo[b] = 0;
		if (hi[b] < L->step_first)
			hi[b] = L->step_first;
	}
	ir_free(read);
	return 0;
}

static const struct lower *sort_ctx;

static int by_size(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	int64_t sx = extent(&sort_ctx->buf[x]), sy = extent(&sort_ctx->buf[y]);
	return sx != sy ? (sx < sy ? 1 : -1) : (x > y) - (x < y);
}

struct span {
	int64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Greedy offsets; returns the arena size or -ENOMEM. */
static int64_t place(struct lower *L, const int *lo, const int *hi)
{
	int nb = L->nbuf;
	int *order = ir_malloc(sizeof *order * (size_t)(nb + 1));
	int *placed = ir_malloc(sizeof *placed * (size_t)(nb + 1));
	struct span *sp = ir_malloc(sizeof *sp * (size_t)(nb + 1));
	int64_t arena = 0;
	if (!order || !placed || !sp) {
		arena = ir_errorf(-ENOMEM, "out of memory planning memory");
		goto out;
	}
	for (int b = 0; b < nb; b++)
		order[b] = b;
	sort_ctx = L;
	qsort(order, (size_t)nb, sizeof *order, by_size);
	int np = 0;
	for (int i = 0; i < nb; i++) {
		int b = order[i], ns = 0;
		int64_t size = extent(&L->buf[b]);
		for (int j = 0; j < np; j++) {
			int c = placed[j];
			if (lo[c] <= hi[b] && lo[b] <= hi[c])
				sp[ns++] = (struct span){ L->buf[c].offset, L->buf[c].offset + extent(&L->buf[c]) };
		}
		qsort(sp, (size_t)ns, sizeof *sp, by_lo);
		int64_t off = 0;
		for (int j = 0; j < ns; j++) {
			if (sp[j].lo >= off + size)
				break;
			if (sp[j].hi > off)
				off = sp[j].hi;
		}
		L->buf[b].offset = off;
		if (off + size > arena)
			arena = off + size;
		placed[np++] = b;
	}
out:
	ir_free(order);
	ir_free(placed);
	ir_free(sp);
	return arena;
}

/* Communicators of the stage: per axis of size > 1 one per line of the mesh
 * along it, and one over the whole mesh when both axes are split. */
static int comm_base(struct lower *L, int base[3])
{
	struct plan *p = L->p;
	int want = (L->n0 > 1 ? L->n1 : 0) + (L->n1 > 1 ? L->n0 : 0) + (L->n0 > 1 && L->n1 > 1);
	struct plan_comm *c = ir_realloc(p->comms, sizeof *c * (size_t)(p->ncomms + want + 1));
	if (!c)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	p->comms = c;
	base[0] = base[1] = base[2] = -1;
	for (int m = 1; m <= 3; m++) {
		int lines = m == 1 ? L->n1 : m == 2 ? L->n0 : 1;
		int len = ir_sharding_pieces((uint8_t)m, L->n0, L->n1);
		if ((m == 1 && L->n0 == 1) || (m == 2 && L->n1 == 1) || (m == 3 && (L->n0 == 1 || L->n1 == 1)))
			continue;
		base[m - 1] = p->ncomms;
		for (int l = 0; l < lines; l++) {
			struct plan_comm *x = &p->comms[p->ncomms];
			if (!(x->ranks = ir_malloc(sizeof *x->ranks * (size_t)len)))
				return ir_errorf(-ENOMEM, "out of memory lowering the plan");
			x->n = len;
			p->ncomms++;
			for (int r = 0; r < len; r++) {
				int i0 = m == 1 ? r : m == 2 ? l : r / L->n1;
				int i1 = m == 1 ? l : m == 2 ? r : r % L->n1;
				x->ranks[r] = L->first_rank + i0 * L->n1 + i1;
			}
		}
	}
	return 0;
}

static int comm_of(const struct lower *L, const int base[3], uint8_t axes, int k)
{
	int i0 = k / L->n1, i1 = k % L->n1;
	IR_ASSERT(axes >= 1 && axes <= 3 && base[axes - 1] >= 0);
	return base[axes - 1] + (axes == 1 ? i1 : axes == 2 ? i0 : 0);
}

/* Device k of the stage (d, zeroed by the caller) from the template: its
 * buffers at the arena's offsets, its slices of bound tensors, and its
 * instructions, collectives on the communicators from base (NULL: none
 * yet, comm -1). touched: nbuf + 1 bytes of scratch. first: the stage's
 * first device, whose buffers and arguments d shares; NULL: d is it. */
static int expand_device(const struct lower *L, int k, const int *base, int64_t arena, unsigned char *touched,
			 const struct plan_device *first, struct plan_device *d)
{
	d->rank = L->first_rank + k;
	d->stage = L->stage;
	d->coord[0] = k / L->n1;
	d->coord[1] = k % L->n1;
	d->arena_bytes = arena;
	d->instr = ir_calloc((size_t)L->nins + 1, sizeof *d->instr);
	if (first) {
		d->args = first->args;
		d->shared_args = true;
		d->buf = first->buf;
		d->shared_buf = true;
	} else {
		if ((d->args = ir_malloc(sizeof *d->args * (size_t)(L->nargs + 1))))
			memcpy(d->args, L->args, sizeof *d->args * (size_t)L->nargs);
		d->buf = ir_calloc((size_t)L->nbuf + 1, sizeof *d->buf);
	}
	if (!d->buf || !d->instr || !d->args)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	d->nbuf = L->nbuf;
	d->ninstr = L->nins;
	d->nargs = L->nargs;
	for (int b = 0; !first && b < L->nbuf; b++) {
		const struct lw_buf *s = &L->buf[b];
		struct plan_buffer *x = &d->buf[b];
		x->dtype = s->dtype;
		x->shape = s->shape;
		x->offset = s->offset;
		x->bytes = buf_bytes(s);
		x->bind = s->bind;
		x->index = s->index;
		x->slots = s->slots;
	}
	int rc = plan_device_slices(d);
	if (rc < 0)
		return rc;
	for (int b = 0; b < L->nbuf; b++) {
		const struct lw_buf *s = &L->buf[b];
		if (d->buf[b].slice < 0)
			continue;
		struct plan_slice *x = &d->slice[d->buf[b].slice];
		uint8_t used = 0;
		for (int e = 0; e < s->shape.rank; e++) {
			int piece, n;
			lw_piece(L, k, s->spec.dim[e], &piece, &n);
			x->start[e] = piece * s->shape.dims[e];
			used |= s->spec.dim[e];
		}
		/* an output's one copy to read; every other buffer is its
		 * device's own (plan.h) */
		if (s->bind == PLAN_BIND_OUTPUT && ((!(used & 1) && d->coord[0]) || (!(used & 2) && d->coord[1])))
			x->writer = false;
	}
	/* instructions for other devices (a transfer's block) are left
	 * out, and so are frees of buffers only they write */
	memset(touched, 0, (size_t)L->nbuf + 1);
	int n = 0;
	int sf = -1, fe = -1;
	for (int i = 0; i < L->nins; i++) {
		const struct lw_ins *s = &L->ins[i];
		if (i == L->step_first)
			sf = n;
		if (i == L->fwd_end)
			fe = n;
		if (s->only && s->only - 1 != k)
			continue;
		if (s->kind == PLAN_FREE && !touched[L->args[s->arg]])
			continue;
		for (int j = 0; j < s->nin + s->nout; j++)
			touched[L->args[s->arg + j]] = 1;
		struct plan_instr *x = &d->instr[n++];
		x->kind = s->kind;
		x->kernel = s->dev_kernel ? s->dev_kernel[k] : s->kernel;
		x->comm = -1;
		if (plan_instr_is_collective(s->kind) && base)
			x->comm = comm_of(L, base, s->axes, k);
		x->reduce = s->reduce;
		x->axis = s->axis;
		x->axis2 = s->axis2;
		x->peer = -1;
		if (s->kind == PLAN_SEND || s->kind == PLAN_RECV)
			x->peer = s->dev_peer ? s->dev_peer[k] : s->peer;
		x->tag = s->tag;
		x->nin = s->nin;
		x->nout = s->nout;
		x->arg = s->arg;
	}
	d->ninstr = n;
	d->nstep = sf < 0 ? 0 : n - sf;
	/* an empty forward part still marks the program as pipelined */
	d->nfwd = L->fwd_end > 0 ? (fe < 0 ? n - d->nstep : fe) : 0;
	if (L->fwd_end > 0 && d->nfwd == 0)
		return ir_errorf(-EINVAL, "stage %d: device %d has an empty forward part", L->stage, k);
	return 0;
}

static int expand(struct lower *L, int64_t arena)
{
	struct plan *p = L->p;
	int base[3];
	int rc = comm_base(L, base);
	if (rc < 0)
		return rc;
	struct plan_device *dv = ir_realloc(p->devices, sizeof *dv * (size_t)(L->first_rank + L->nd));
	if (!dv)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	p->devices = dv;
	unsigned char *touched = ir_malloc((size_t)L->nbuf + 1);
	if (!touched)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	/* the stage's devices share its first's buffers and arguments */
	for (int k = 0; k < L->nd && rc == 0; k++) {
		struct plan_device *d = &p->devices[L->first_rank + k];
		memset(d, 0, sizeof *d);
		p->ndevices = L->first_rank + k + 1;
		if ((rc = expand_device(L, k, base, arena, touched, k ? &p->devices[L->first_rank] : NULL, d)) < 0)
			break;
	}
	ir_free(touched);
	if (rc < 0 || !L->norder)
		return rc;
	struct plan_stage *st = &p->stages[L->stage];
	if (!(st->order = ir_malloc(sizeof *st->order * (size_t)L->norder)))
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	memcpy(st->order, L->order, sizeof *st->order * (size_t)L->norder);
	st->norder = L->norder;
	return 0;
}

int lw_print(const struct lower *L, FILE *f)
{
	struct plan_device d;
	unsigned char *touched = ir_malloc((size_t)L->nbuf + 1);
	memset(&d, 0, sizeof d);
	int rc = touched ? expand_device(L, 0, NULL, 0, touched, NULL, &d) : ir_errorf(-ENOMEM, "out of memory");
	if (rc == 0) {
		fprintf(f,
			"stage %d on mesh %dx%d (ranks %d..%d), device %d's program before the memory plan: %d "
			"buffers, %d instructions\n",
			L->stage, L->n0, L->n1, L->first_rank, L->first_rank + L->nd - 1, d.rank, d.nbuf, d.ninstr);
		rc = plan_print_program(L->p, &d, f);
	}
	ir_free(touched);
	ir_free(d.buf);
	ir_free(d.slice);
	ir_free(d.instr);
	ir_free(d.args);
	return rc;
}

int lw_memory(struct lower *L)
{
	int *lo = ir_malloc(sizeof *lo * (size_t)(L->nbuf + 1));
	int *hi = ir_malloc(sizeof *hi * (size_t)(L->nbuf + 1));
	bool *shared = NULL;
	int rc = -ENOMEM;
	if (!lo || !hi) {
		rc = ir_errorf(-ENOMEM, "out of memory planning memory");
		goto out;
	}
	if (!(shared = shared_stash(L))) {
		rc = ir_errorf(-ENOMEM, "out of memory planning memory");
		goto out;
	}
	if ((rc = insert_frees(L, lo, hi, shared)) < 0 || (rc = stash_slots(L, lo, hi, shared)) < 0)
		goto out;
	int64_t arena = place(L, lo, hi);
	if (arena < 0) {
		rc = (int)arena;
		goto out;
	}
	rc = expand(L, arena);
out:
	ir_free(lo);
	ir_free(hi);
	ir_free(shared);
	return rc;
}
