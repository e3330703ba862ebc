/*
 * step.c: one step of a rank's program (rt.h). Accumulators start at zero;
 * the per-micro-batch part runs once per micro-batch (a pipelined plan's
 * forward and backward parts in its stage's order, inputs fed into the
 * micro-batch's slots when its forward part starts); then the per-step
 * part. Output slices are saved when the part writing them ends, before a
 * later micro-batch can overwrite them. The step is a fixed list of
 * segments (rt.h), so the receives and collectives that overlap compute
 * (exec.c) are worked out once over it. An evaluation step (pcc-run
 * --eval-data) runs the same segments but the per-step one. A device that
 * records a step (a CUDA graph, device.h's step_begin) replays it: such a
 * step feeds its inputs and saves its outputs but issues no instruction.
 */
#include <errno.h>
#include <string.h>

#include "runtime/rt.h"

/* What the device has due before trace position pos (device.h). */
static int at(struct rt *r, int pos)
{
	return r->dev->at ? r->dev->at(r, pos) : 0;
}

static int feed(struct rt *r, const struct ir_tensor *in)
{
	const struct plan_device *d = r->d;
	int rc = 0;
	for (int k = 0; k < d->nbuf && rc == 0; k++) {
		const struct plan_buffer *x = &d->buf[k];
		if (x->bind != PLAN_BIND_INPUT)
			continue;
		const struct ir_tensor *g = &in[x->index];
		ir_copy_block(rt_buf(r, x), &x->shape, NULL, g->data, &g->shape, plan_slice_of(d, k)->start, &x->shape,
			      ir_dtype_size(x->dtype));
		rc = r->dev->put(r, x);
	}
	return rc;
}

static int save(struct rt *r, int part)
{
	const struct plan_device *d = r->d;
	for (int b = 0; b < d->nbuf; b++) {
		if (r->part[r->c->rank][b] != part)
			continue;
		void **slot = part == 2 ? &r->saved_step[b] : &r->saved[(size_t)r->mb * (size_t)d->nbuf + (size_t)b];
		if (!*slot && !(*slot = ir_malloc((size_t)d->buf[b].bytes + 1)))
			return ir_errorf(-ENOMEM, "out of memory saving an output");
		int rc = r->dev->save ? r->dev->save(r, &d->buf[b], *slot) : r->dev->get(r, &d->buf[b]);
		if (rc < 0)
			return rc;
		if (!r->dev->save)
			memcpy(*slot, rt_buf(r, &d->buf[b]), (size_t)d->buf[b].bytes);
	}
	return 0;
}

/* Runs segment s, then saves what its part writes. */
static int run_part(struct rt *r, const struct rt_seg *s)
{
	r->mb = s->mb;
	double t0 = r->trace ? ir_now() : 0;
	int rc = r->replay ? 0 : rt_run(r, s);
	if (rc == 0)
		rc = at(r, s->pos + 1 + s->hi - s->lo);
	if (rc == 0)
		rc = save(r, s->part);
	if (rc == 0 && r->trace)
		rt_trace_part(r, s, t0, ir_now());
	if (rc < 0 && s->part < 2)
		ir_error_prefix("micro-batch %d", s->mb);
	return rc;
}

/* A step's segments, once: the stage's order of forward and backward
 * parts (pipelined training) or the micro-batches in turn, then the
 * per-step part; and what the device plans over them (the host: the
 * receives and collectives that overlap compute). */
static int segments(struct rt *r)
{
	const struct plan_device *d = r->d;
	const struct plan_stage *st = &r->p->stages[d->stage];
	int last = plan_step_first(d), n = (d->nfwd ? st->norder : r->micro) + 1, pos = 0;
	struct rt_seg *s = ir_calloc((size_t)n, sizeof *s);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory ordering a step");
	for (int k = 0; k < n - 1; k++) {
		int e = d->nfwd ? st->order[k] : k, m = e >= 0 ? e : -(e + 1);
		bool fwd = e >= 0;
		s[k] = (struct rt_seg){ m, fwd ? 0 : d->nfwd, fwd && d->nfwd ? d->nfwd : last, fwd ? 0 : 1, fwd, 0 };
	}
	s[n - 1] = (struct rt_seg){ 0, last, d->ninstr, 2, false, 0 };
	for (int k = 0; k < n; k++) {
		s[k].pos = pos;
		pos += s[k].hi - s[k].lo + 2;
	}
	r->seg = s;
	r->nseg = n;
	return r->dev->plan_step ? r->dev->plan_step(r) : 0;
}

int rt_step(struct rt *r, const struct ir_tensor *inputs)
{
	const struct plan *p = r->p;
	const struct plan_device *d = r->d;
	int rc = r->seg ? 0 : segments(r);
	bool replay = false;
	r->mb = 0;
	if (rc == 0 && r->dev->step_begin)
		rc = r->dev->step_begin(r, &replay);
	r->replay = replay;
	for (int k = 0; k < d->nbuf && rc == 0; k++)
		if (d->buf[k].bind == PLAN_BIND_ACCUM)
			rc = r->dev->fill(r, &d->buf[k], 0);
	for (int k = 0; k < r->nseg && rc == 0; k++) {
		const struct rt_seg *s = &r->seg[k];
		r->mb = s->mb;
		rc = at(r, s->pos);
		if (rc == 0 && s->feed)
			rc = feed(r, inputs + (size_t)s->mb * (size_t)p->ninputs);
		if (rc == 0)
			rc = run_part(r, s);
	}
	if (rc == 0) {
		const struct rt_seg *s = &r->seg[r->nseg - 1];
		rc = at(r, s->pos + s->hi - s->lo + 2);
	}
	if (rc == 0)
		rc = rt_sync(r);
	r->replay = false;
	if (rc == 0)
		rc = r->c->ops->flush(r->c);
	return rc;
}

/* Whether the loss (output 0) comes out of the forward parts on every
 * device that writes it (a replica's copy is not gathered: part -1): a
 * pipelined plan's evaluation then runs the forward parts alone. */
static bool loss_in_forward(const struct rt *r)
{
	const struct plan *p = r->p;
	for (int dev = 0; dev < p->ndevices; dev++) {
		const struct plan_device *d = &p->devices[dev];
		if (!d->nfwd)
			return false;
		for (int b = 0; b < d->nbuf; b++)
			if (d->buf[b].bind == PLAN_BIND_OUTPUT && d->buf[b].index == 0 && r->part[dev][b] > 0)
				return false;
	}
	return true;
}

/* The parameter and state buffers the per-micro-batch part writes (a
 * training-mode BatchNorm's running statistics, updated as it runs):
 * copied to or from keep (NULL: their bytes in *n), every slot; on a
 * device with its own memory through the host's copy. */
static int kept(struct rt *r, uint8_t *keep, bool back, size_t *n)
{
	const struct plan_device *d = r->d;
	int first = plan_step_first(d), rc = 0, mb = r->mb;
	uint8_t *w = ir_calloc((size_t)d->nbuf + 1, 1);
	if (!w)
		return ir_errorf(-ENOMEM, "out of memory evaluating");
	for (int i = 0; i < first; i++)
		for (int j = 0; j < d->instr[i].nout; j++) {
			int b = d->args[d->instr[i].arg + d->instr[i].nin + j];
			w[b] = d->buf[b].bind == PLAN_BIND_PARAM || d->buf[b].bind == PLAN_BIND_STATE;
		}
	*n = 0;
	for (int b = 0; b < d->nbuf && rc == 0; b++)
		for (int k = 0; w[b] && k < plan_buffer_slots(&d->buf[b]) && rc == 0; k++) {
			size_t bytes = (size_t)d->buf[b].bytes;
			r->mb = k;
			if (keep && !back)
				rc = r->dev->get(r, &d->buf[b]);
			if (keep && rc == 0)
				memcpy(back ? rt_buf(r, &d->buf[b]) : keep + *n,
				       back ? keep + *n : rt_buf(r, &d->buf[b]), bytes);
			if (keep && back && rc == 0)
				rc = r->dev->put(r, &d->buf[b]);
			*n += bytes;
		}
	r->mb = mb;
	ir_free(w);
	return rc;
}

int rt_eval_step(struct rt *r, const struct ir_tensor *inputs)
{
	const struct plan *p = r->p;
	int rc = r->seg ? 0 : segments(r);
	size_t n = 0;
	uint8_t *keep = NULL;
	if (rc == 0 && (rc = kept(r, NULL, false, &n)) == 0 && n) {
		rc = (keep = ir_malloc(n)) ? kept(r, keep, false, &n) : ir_errorf(-ENOMEM, "out of memory evaluating");
	}
	bool fwd = loss_in_forward(r);
	struct rt_overlap *ov = r->ov; /* worked out for the training step's order */
	r->ov = NULL;
	for (int k = 0; k < r->nseg - 1 && rc == 0; k++) {
		const struct rt_seg *s = &r->seg[k];
		if (fwd && s->part != 0)
			continue;
		r->mb = s->mb;
		if (s->feed)
			rc = feed(r, inputs + (size_t)s->mb * (size_t)p->ninputs);
		if (rc == 0)
			rc = run_part(r, s);
	}
	r->ov = ov;
	if (rc == 0)
		rc = rt_sync(r);
	if (rc == 0)
		rc = r->c->ops->flush(r->c);
	if (rc == 0 && keep)
		rc = kept(r, keep, true, &n);
	if (rc == 0 && keep)
		rc = rt_sync(r);
	ir_free(keep);
	return rc;
}
