/*
 * plan_sim.c: a plan's ranks in one process (plan_sim.h): one thread per
 * rank, each running pcc-run's own executor (runtime/rt.h: rt_step on the
 * host's device table) over its own arena, the ranks talking through the
 * in-process communication table (runtime/comm_local.c) as pcc-run's
 * talk through MPI. Only the poison is the tests' own: the arena starts
 * as 0xff bytes (NaN) and every freed buffer is set to them again.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "tests/plan_sim.h"

struct plan_sim {
	const struct plan *p;
	struct rt_local *w;
	struct rt_comm *c; /* [ndevices] */
	struct rt *r;      /* [ndevices] */
	int nready;        /* ranks whose rt_init succeeded */
};

/* One rank's step, on its thread. */
struct job {
	struct plan_sim *s;
	int dev;
	const struct ir_tensor *in;
	struct ir_tensor *out; /* rank 0: the gathered outputs */
	int rc;
	char err[512];
};

static void *run_rank(void *arg)
{
	struct job *j = arg;
	struct rt *r = &j->s->r[j->dev];
	int rc = rt_step(r, j->in);
	if (rc == 0)
		rc = rt_gather_outputs(r, j->out);
	if (rc < 0)
		snprintf(j->err, sizeof j->err, "%s", ir_error());
	j->rc = rc;
	rt_comm_local_done(&j->s->c[j->dev]);
	return NULL;
}

void plan_sim_free(struct plan_sim *s)
{
	if (!s)
		return;
	for (int dev = 0; dev < s->nready; dev++) {
		rt_overlap_release(&s->r[dev]);
		rt_release(&s->r[dev]);
	}
	for (int dev = 0; s->c && dev < s->p->ndevices; dev++)
		if (s->c[dev].ops)
			s->c[dev].ops->finish(&s->c[dev]);
	rt_local_free(s->w);
	free(s->c);
	free(s->r);
	free(s);
}

/* Rank dev's buffers bound to `bind` from the whole tensors t[index]. */
static void load(struct rt *r, enum plan_bind bind, const struct ir_tensor *t)
{
	for (int b = 0; b < r->d->nbuf; b++) {
		const struct plan_buffer *x = &r->d->buf[b];
		if (x->bind != bind)
			continue;
		const struct ir_tensor *g = &t[x->index];
		ir_copy_block(rt_buf(r, x), &x->shape, NULL, g->data, &g->shape, plan_slice_of(r->d, b)->start,
			      &x->shape, ir_dtype_size(x->dtype));
	}
}

/* Rank dev's runtime: its arena all 0xff but its state at its init, its
 * parameter slices loaded. */
static int open_rank(struct plan_sim *s, int dev, const struct ir_tensor *params)
{
	const struct plan *p = s->p;
	struct rt *r = &s->r[dev];
	struct rt_comm *c = &s->c[dev];
	int rc = rt_comm_local_init(c, s->w, dev);
	if (rc == 0)
		rc = c->ops->setup(c, p);
	if (rc == 0 && (rc = rt_init(r, p, c, false)) == 0)
		s->nready++;
	if (rc == 0)
		rc = r->dev->open(r, false);
	if (rc == 0)
		rc = rt_kernels_load(r, true, 1); /* the reference kernels */
	if (rc < 0)
		return rc;
	/* every receive and collective at its instruction: a buffer's free
	 * then comes after every read of it, so its poison is a check */
	r->poison = true;
	r->no_overlap = true;
	memset(r->arena, 0xff, (size_t)r->d->arena_bytes + 1);
	for (int b = 0; b < r->d->nbuf; b++) { /* as rt_init sets it */
		const struct plan_buffer *x = &r->d->buf[b];
		if (x->bind != PLAN_BIND_STATE)
			continue;
		struct ir_tensor t = { x->dtype, x->shape, rt_buf(r, x) };
		for (int64_t i = 0; i < ir_shape_numel(&x->shape); i++)
			ir_tensor_set_f64(&t, i, p->state[x->index].init);
	}
	load(r, PLAN_BIND_PARAM, params);
	return 0;
}

struct plan_sim *plan_sim_new(const struct plan *p, const struct ir_tensor *params)
{
	struct plan_sim *s = calloc(1, sizeof *s);
	int rc = 0;
	if (!s) {
		ir_errorf(-ENOMEM, "out of memory");
		return NULL;
	}
	s->p = p;
	s->c = calloc((size_t)p->ndevices + 1, sizeof *s->c);
	s->r = calloc((size_t)p->ndevices + 1, sizeof *s->r);
	s->w = rt_local_new(p->ndevices, 60);
	if (!s->c || !s->r || !s->w)
		rc = ir_errorf(-ENOMEM, "out of memory");
	for (int dev = 0; dev < p->ndevices && rc == 0; dev++)
		if ((rc = open_rank(s, dev, params)) < 0)
			ir_error_prefix("rank %d", dev);
	if (rc < 0) {
		plan_sim_free(s);
		return NULL;
	}
	return s;
}

int plan_sim_step(struct plan_sim *s, const struct ir_tensor *inputs, struct ir_tensor *outputs)
{
	const struct plan *p = s->p;
	int nd = p->ndevices, rc = 0, failed = -1;
	struct job *j = calloc((size_t)nd + 1, sizeof *j);
	pthread_t *t = calloc((size_t)nd + 1, sizeof *t);
	bool *started = calloc((size_t)nd + 1, sizeof *started);
	if (!j || !t || !started) {
		free(j);
		free(t);
		free(started);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	for (int i = 0; i < s->r[0].micro * p->noutputs; i++)
		outputs[i] = (struct ir_tensor){ 0 };
	rt_local_start(s->w);
	for (int dev = 0; dev < nd; dev++) {
		j[dev] = (struct job){ s, dev, inputs, dev == 0 ? outputs : NULL, 0, "" };
		started[dev] = pthread_create(&t[dev], NULL, run_rank, &j[dev]) == 0;
		if (!started[dev]) {
			j[dev].rc = -EAGAIN;
			snprintf(j[dev].err, sizeof j[dev].err, "cannot start its thread");
			rt_comm_local_done(&s->c[dev]);
		}
	}
	for (int dev = 0; dev < nd; dev++)
		if (started[dev])
			pthread_join(t[dev], NULL);
	/* the rank that failed first for its own reason, not for waiting on it */
	for (int dev = 0; dev < nd; dev++)
		if (j[dev].rc < 0 && (failed < 0 || (j[failed].rc == -EDEADLK && j[dev].rc != -EDEADLK)))
			failed = dev;
	if (failed >= 0)
		rc = ir_errorf(j[failed].rc, "rank %d: %s", failed, j[failed].err);
	free(j);
	free(t);
	free(started);
	return rc;
}

int plan_sim_run(const struct plan *p, const struct ir_tensor *params, const struct ir_tensor *inputs,
		 struct ir_tensor *outputs)
{
	if (p->micro > 1)
		return ir_errorf(-EINVAL, "plan_sim_run: the plan runs %d micro-batches a step (plan_sim_step)",
				 p->micro);
	struct plan_sim *s = plan_sim_new(p, params);
	if (!s)
		return -ENOMEM;
	int rc = plan_sim_step(s, inputs, outputs);
	plan_sim_free(s);
	return rc;
}

int plan_sim_params(struct plan_sim *s, struct ir_tensor *params)
{
	const struct plan *p = s->p;
	int rc = 0;
	for (int i = 0; i < p->nparams; i++)
		params[i].data = NULL;
	uint8_t **done = calloc((size_t)p->nparams + 1, sizeof *done); /* per element: some rank wrote it */
	if (!done)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int i = 0; i < p->nparams && rc == 0; i++)
		if ((rc = ir_tensor_alloc(&params[i], p->params[i].dtype, &p->params[i].shape)) == 0 &&
		    !(done[i] = calloc((size_t)ir_shape_numel(&p->params[i].shape) + 1, 1)))
			rc = ir_errorf(-ENOMEM, "out of memory");
	for (int dev = 0; dev < p->ndevices && rc == 0; dev++) {
		struct rt *r = &s->r[dev];
		r->mb = 0;
		for (int b = 0; b < r->d->nbuf && rc == 0; b++) {
			const struct plan_buffer *x = &r->d->buf[b];
			if (x->bind != PLAN_BIND_PARAM)
				continue;
			struct ir_tensor *t = &params[x->index], have;
			const int64_t *start = plan_slice_of(r->d, b)->start;
			int64_t n = ir_shape_numel(&x->shape);
			uint8_t *was = malloc((size_t)n + 1), *ones = malloc((size_t)n + 1);
			if (!was || !ones || (rc = ir_tensor_alloc(&have, x->dtype, &x->shape)) < 0) {
				free(was);
				free(ones);
				rc = ir_errorf(-ENOMEM, "out of memory");
				break;
			}
			memset(ones, 1, (size_t)n + 1);
			/* a replica must hold exactly what the others hold */
			ir_copy_block(have.data, &x->shape, NULL, t->data, &t->shape, start, &x->shape,
				      ir_dtype_size(x->dtype));
			ir_copy_block(was, &x->shape, NULL, done[x->index], &t->shape, start, &x->shape, 1);
			struct ir_tensor mine = { x->dtype, x->shape, rt_buf(r, x) };
			for (int64_t e = 0; e < n && rc == 0; e++) {
				double u = ir_tensor_get_f64(&have, e), v = ir_tensor_get_f64(&mine, e);
				if (was[e] && u != v && !(isnan(u) && isnan(v)))
					rc = ir_errorf(-EINVAL,
						       "rank %d, buffer %d: its slice of parameter %d differs "
						       "from another rank's copy (%g, not %g)",
						       dev, b, x->index, v, u);
			}
			ir_copy_block(t->data, &t->shape, start, mine.data, &x->shape, NULL, &x->shape,
				      ir_dtype_size(x->dtype));
			ir_copy_block(done[x->index], &t->shape, start, ones, &x->shape, NULL, &x->shape, 1);
			ir_tensor_free(&have);
			free(was);
			free(ones);
		}
	}
	for (int i = 0; i < p->nparams; i++)
		free(done[i]);
	free(done);
	return rc;
}
