/*
 * step.c: one step of a rank's program (rt.h). Accumulators start at zero;
 * the per-micro-batch part runs once per micro-batch (a pipelined plan's
 * forward and backward parts in its stage's order, inputs fed into the
 * micro-batch's slots when its forward part starts); then the per-step
 * part. Output slices are saved when the part writing them ends, before a
 * later micro-batch can overwrite them.
 */
#include <errno.h>
#include <string.h>

#include "runtime/rt.h"

static int feed(struct rt *r, const struct ir_tensor *in)
{
	const struct plan_device *d = r->d;
	int rc = 0;
	for (int k = 0; k < d->nbuf && rc == 0; k++) {
		const struct plan_buffer *x = &d->buf[k];
		if (x->bind != PLAN_BIND_INPUT)
			continue;
		const struct ir_tensor *g = &in[x->index];
		ir_copy_block(rt_buf(r, x), &x->shape, NULL, g->data, &g->shape, x->start, &x->shape,
			      ir_dtype_size(x->dtype));
		if (r->gpu)
			rc = rt_gpu_put(r, x);
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
		int rc = r->gpu ? rt_gpu_get(r, &d->buf[b]) : 0;
		if (rc < 0)
			return rc;
		memcpy(*slot, rt_buf(r, &d->buf[b]), (size_t)d->buf[b].bytes);
	}
	return 0;
}

static int run_part(struct rt *r, int m, int lo, int hi, int part)
{
	r->mb = m;
	int rc = rt_run(r, lo, hi);
	if (rc == 0)
		rc = save(r, part);
	if (rc < 0 && part < 2)
		ir_error_prefix("micro-batch %d", m);
	return rc;
}

int rt_step(struct rt *r, const struct ir_tensor *inputs)
{
	const struct plan *p = r->p;
	const struct plan_device *d = r->d;
	const struct plan_stage *st = &p->stages[d->stage];
	int rc = 0, last = plan_step_first(d);
	r->mb = 0;
	for (int k = 0; k < d->nbuf && rc == 0; k++)
		if (d->buf[k].bind == PLAN_BIND_ACCUM && r->gpu)
			rc = rt_gpu_zero(r, &d->buf[k]);
		else if (d->buf[k].bind == PLAN_BIND_ACCUM)
			memset(rt_buf(r, &d->buf[k]), 0, (size_t)d->buf[k].bytes);
	if (d->nfwd) {
		for (int k = 0; k < st->norder && rc == 0; k++) {
			int e = st->order[k], m = e >= 0 ? e : -(e + 1);
			r->mb = m;
			if (e >= 0)
				rc = feed(r, inputs + (size_t)m * (size_t)p->ninputs);
			if (rc == 0)
				rc = e >= 0 ? run_part(r, m, 0, d->nfwd, 0) : run_part(r, m, d->nfwd, last, 1);
		}
	} else {
		for (int m = 0; m < r->micro && rc == 0; m++) {
			r->mb = m;
			rc = feed(r, inputs + (size_t)m * (size_t)p->ninputs);
			if (rc == 0)
				rc = run_part(r, m, 0, last, 0);
		}
	}
	if (rc == 0)
		rc = run_part(r, 0, last, d->ninstr, 2);
	if (rc == 0 && r->gpu)
		rc = rt_gpu_finish(r);
	if (rc == 0)
		rc = r->c->ops->flush(r->c);
	return rc;
}
