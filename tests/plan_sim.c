/*
 * plan_sim.c: the one-process simulation of a plan's ranks (plan_sim.h).
 * Round robin over devices: each runs until it blocks on a receive with no
 * message yet or a collective not every member has reached; a collective
 * runs for all members at once when the last one arrives.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/plan_sim.h"

struct msg {
	int src, dst, tag;
	size_t n;
	void *data;
	struct msg *next;
};

struct plan_sim {
	const struct plan *p;
	uint8_t **arena;
	int *pc, *end; /* per device: where it is, where this part ends */
	int *mb;       /* per device: the micro-batch its part runs (slots) */
	struct msg *mail;
};
#define sim plan_sim

static const struct plan_buffer *arg_buf(const struct plan_device *d, const struct plan_instr *x, int j)
{
	return &d->buf[d->args[x->arg + j]];
}

static void *buf_data(struct sim *s, int dev, const struct plan_buffer *b)
{
	return s->arena[dev] + b->offset + plan_slot_stride(b) * (s->mb[dev] % plan_buffer_slots(b));
}

#define copy_block ir_copy_block

static const int64_t zero_start[IR_MAX_RANK];

static int run_kernel(struct sim *s, int dev, const struct plan_instr *x)
{
	const struct plan_device *d = &s->p->devices[dev];
	const struct plan_kernel *k = &s->p->kernels[x->kernel];
	struct ir_tensor tin[256], tout[2];
	for (int j = 0; j < k->nin; j++)
		tin[j] = (struct ir_tensor){ k->dtype[j], k->shape[j], buf_data(s, dev, arg_buf(d, x, j)) };
	int rc = interp_kernel(k, tin, tout);
	if (rc < 0)
		return rc;
	for (int j = 0; j < k->nout; j++) {
		const struct plan_buffer *b = arg_buf(d, x, k->nin + j);
		memcpy(buf_data(s, dev, b), tout[j].data, ir_tensor_bytes(&tout[j]));
		ir_tensor_free(&tout[j]);
	}
	return 0;
}

/* Whether every member of comm c is at a collective on c. */
static bool comm_ready(struct sim *s, int c)
{
	const struct plan_comm *cm = &s->p->comms[c];
	for (int r = 0; r < cm->n; r++) {
		const struct plan_device *d = &s->p->devices[cm->ranks[r]];
		int pc = s->pc[cm->ranks[r]];
		if (pc >= s->end[cm->ranks[r]] || d->instr[pc].comm != c)
			return false;
	}
	return true;
}

static double reduce2(enum plan_reduce op, double a, double b)
{
	switch (op) {
	case PLAN_SUM:
		return a + b;
	case PLAN_MAX:
		return a > b ? a : b;
	case PLAN_MIN:
		return a < b ? a : b;
	case PLAN_REDUCE_COUNT:
		break;
	}
	return a;
}

static int run_collective(struct sim *s, int c)
{
	const struct plan *p = s->p;
	const struct plan_comm *cm = &p->comms[c];
	int n = cm->n, r0 = cm->ranks[0];
	const struct plan_device *d0 = &p->devices[r0];
	const struct plan_instr *x0 = &d0->instr[s->pc[r0]];
	const struct plan_buffer *bi0 = arg_buf(d0, x0, 0);
	size_t es = ir_dtype_size(bi0->dtype);
	struct ir_tensor acc;
	int rc = 0;
	switch (x0->kind) {
	case PLAN_ALL_REDUCE:
	case PLAN_REDUCE_SCATTER: {
		if ((rc = ir_tensor_alloc(&acc, bi0->dtype, &bi0->shape)) < 0)
			return rc;
		int64_t ne = ir_shape_numel(&bi0->shape);
		for (int r = 0; r < n; r++) {
			const struct plan_device *d = &p->devices[cm->ranks[r]];
			const struct plan_buffer *b = arg_buf(d, &d->instr[s->pc[cm->ranks[r]]], 0);
			struct ir_tensor t = { b->dtype, b->shape, buf_data(s, cm->ranks[r], b) };
			for (int64_t i = 0; i < ne; i++)
				ir_tensor_set_f64(&acc, i,
						  r == 0 ? ir_tensor_get_f64(&t, i)
							 : reduce2(x0->reduce, ir_tensor_get_f64(&acc, i),
								   ir_tensor_get_f64(&t, i)));
		}
		for (int r = 0; r < n; r++) {
			const struct plan_device *d = &p->devices[cm->ranks[r]];
			const struct plan_buffer *b = arg_buf(d, &d->instr[s->pc[cm->ranks[r]]], 1);
			int64_t st[IR_MAX_RANK] = { 0 };
			if (x0->kind == PLAN_REDUCE_SCATTER)
				st[x0->axis] = r * b->shape.dims[x0->axis];
			copy_block(buf_data(s, cm->ranks[r], b), &b->shape, zero_start, acc.data, &acc.shape, st,
				   &b->shape, es);
		}
		ir_tensor_free(&acc);
		break;
	}
	case PLAN_ALL_GATHER:
		for (int r = 0; r < n; r++) {
			const struct plan_device *d = &p->devices[cm->ranks[r]];
			const struct plan_buffer *bi = arg_buf(d, &d->instr[s->pc[cm->ranks[r]]], 0);
			for (int q = 0; q < n; q++) {
				const struct plan_device *e = &p->devices[cm->ranks[q]];
				const struct plan_buffer *bo = arg_buf(e, &e->instr[s->pc[cm->ranks[q]]], 1);
				int64_t st[IR_MAX_RANK] = { 0 };
				st[x0->axis] = r * bi->shape.dims[x0->axis];
				copy_block(buf_data(s, cm->ranks[q], bo), &bo->shape, st, buf_data(s, cm->ranks[r], bi),
					   &bi->shape, zero_start, &bi->shape, es);
			}
		}
		break;
	case PLAN_ALL_TO_ALL:
		for (int r = 0; r < n; r++) {
			const struct plan_device *d = &p->devices[cm->ranks[r]];
			const struct plan_buffer *bi = arg_buf(d, &d->instr[s->pc[cm->ranks[r]]], 0);
			struct ir_shape piece = bi->shape;
			piece.dims[x0->axis] /= n;
			for (int q = 0; q < n; q++) {
				const struct plan_device *e = &p->devices[cm->ranks[q]];
				const struct plan_buffer *bo = arg_buf(e, &e->instr[s->pc[cm->ranks[q]]], 1);
				int64_t ss[IR_MAX_RANK] = { 0 }, ds[IR_MAX_RANK] = { 0 };
				ss[x0->axis] = q * piece.dims[x0->axis];
				ds[x0->axis2] = r * piece.dims[x0->axis2];
				copy_block(buf_data(s, cm->ranks[q], bo), &bo->shape, ds, buf_data(s, cm->ranks[r], bi),
					   &bi->shape, ss, &piece, es);
			}
		}
		break;
	case PLAN_KERNEL:
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		return ir_errorf(-EINVAL, "comm %d: not a collective", c);
	}
	for (int r = 0; r < n; r++)
		s->pc[cm->ranks[r]]++;
	return 0;
}

/* Runs device dev until it blocks or ends; *progress set when it moved. */
static int step(struct sim *s, int dev, bool *progress)
{
	const struct plan_device *d = &s->p->devices[dev];
	while (s->pc[dev] < s->end[dev]) {
		const struct plan_instr *x = &d->instr[s->pc[dev]];
		int rc = 0;
		switch (x->kind) {
		case PLAN_KERNEL:
			rc = run_kernel(s, dev, x);
			break;
		case PLAN_COPY:
			memcpy(buf_data(s, dev, arg_buf(d, x, 1)), buf_data(s, dev, arg_buf(d, x, 0)),
			       (size_t)arg_buf(d, x, 0)->bytes);
			break;
		case PLAN_FREE:
			memset(buf_data(s, dev, arg_buf(d, x, 0)), 0xff, (size_t)arg_buf(d, x, 0)->bytes);
			break;
		case PLAN_SEND: {
			struct msg *m = calloc(1, sizeof *m), **t = &s->mail;
			const struct plan_buffer *b = arg_buf(d, x, 0);
			if (!m || !(m->data = malloc((size_t)b->bytes + 1)))
				return ir_errorf(-ENOMEM, "out of memory");
			*m = (struct msg){ dev, x->peer, x->tag, (size_t)b->bytes, m->data, NULL };
			memcpy(m->data, buf_data(s, dev, b), m->n);
			while (*t)
				t = &(*t)->next;
			*t = m;
			break;
		}
		case PLAN_RECV: {
			struct msg **t = &s->mail;
			while (*t && !((*t)->src == x->peer && (*t)->dst == dev && (*t)->tag == x->tag))
				t = &(*t)->next;
			if (!*t)
				return 0;
			struct msg *m = *t;
			*t = m->next;
			memcpy(buf_data(s, dev, arg_buf(d, x, 0 + x->nin)), m->data, m->n);
			free(m->data);
			free(m);
			break;
		}
		case PLAN_ALL_REDUCE:
		case PLAN_ALL_GATHER:
		case PLAN_REDUCE_SCATTER:
		case PLAN_ALL_TO_ALL:
			if (!comm_ready(s, x->comm))
				return 0;
			if ((rc = run_collective(s, x->comm)) < 0)
				return rc;
			*progress = true;
			continue;
		case PLAN_INSTR_KIND_COUNT:
			return ir_errorf(-EINVAL, "device %d: bad instruction", dev);
		}
		if (rc < 0) {
			ir_error_prefix("device %d, instruction %d (%s)", dev, s->pc[dev],
					plan_instr_kind_name(x->kind));
			return rc;
		}
		s->pc[dev]++;
		*progress = true;
	}
	return 0;
}

/* Runs every device from pc to end together. */
static int run_part(struct sim *s)
{
	const struct plan *p = s->p;
	int rc = 0;
	for (;;) {
		bool progress = false, done = true;
		for (int dev = 0; dev < p->ndevices && rc == 0; dev++) {
			rc = step(s, dev, &progress);
			if (s->pc[dev] < s->end[dev])
				done = false;
		}
		if (rc < 0 || done)
			return rc;
		if (!progress) {
			for (int dev = 0; dev < p->ndevices; dev++)
				if (s->pc[dev] < s->end[dev])
					return ir_errorf(-EDEADLK, "deadlock: device %d waits at instruction %d (%s)",
							 dev, s->pc[dev],
							 plan_instr_kind_name(p->devices[dev].instr[s->pc[dev]].kind));
			return rc;
		}
	}
}

/* Fills device dev's buffers bound to `bind` from the global tensors t[index]. */
static void load_device(struct sim *s, int dev, enum plan_bind bind, const struct ir_tensor *t)
{
	const struct plan_device *d = &s->p->devices[dev];
	for (int b = 0; b < d->nbuf; b++) {
		const struct plan_buffer *x = &d->buf[b];
		if (x->bind != bind)
			continue;
		const struct ir_tensor *g = &t[x->index];
		copy_block(buf_data(s, dev, x), &x->shape, zero_start, g->data, &g->shape, x->start, &x->shape,
			   ir_dtype_size(x->dtype));
	}
}

static void load_bound(struct sim *s, enum plan_bind bind, const struct ir_tensor *t)
{
	for (int dev = 0; dev < s->p->ndevices; dev++)
		load_device(s, dev, bind, t);
}

/* The per-micro-batch outputs device dev's instructions [lo, hi) wrote,
 * into out[] (allocated when first written). */
static int take_device_outputs(struct sim *s, int dev, int lo, int hi, struct ir_tensor *out)
{
	const struct plan *p = s->p;
	const struct plan_device *d = &p->devices[dev];
	for (int i = lo; i < hi; i++) {
		const struct plan_instr *x = &d->instr[i];
		for (int j = 0; j < x->nout; j++) {
			const struct plan_buffer *b = arg_buf(d, x, x->nin + j);
			if (b->bind != PLAN_BIND_OUTPUT || !b->writer || p->outputs[b->index].per_step)
				continue;
			struct ir_tensor *o = &out[b->index];
			int rc;
			if (!o->data &&
			    (rc = ir_tensor_alloc(o, p->outputs[b->index].dtype, &p->outputs[b->index].shape)) < 0)
				return rc;
			copy_block(o->data, &o->shape, b->start, buf_data(s, dev, b), &b->shape, zero_start, &b->shape,
				   ir_dtype_size(b->dtype));
		}
	}
	return 0;
}

/* A pipelined plan's micro-batches: each device runs its stage's order of
 * forward and backward parts; a part starts when the device finished its
 * last one (inputs are loaded into their slots when a forward part starts,
 * outputs taken when the part that writes them ends). */
static int run_pipeline(struct sim *s, const struct ir_tensor *inputs, struct ir_tensor *outputs)
{
	const struct plan *p = s->p;
	int nd = p->ndevices, rc = 0;
	int *k = calloc((size_t)nd + 1, sizeof *k); /* next entry of the order */
	if (!k)
		return ir_errorf(-ENOMEM, "out of memory");
	for (int dev = 0; dev < nd; dev++)
		s->pc[dev] = s->end[dev] = 0;
	for (;;) {
		bool progress = false, done = true;
		for (int dev = 0; dev < nd && rc == 0; dev++) {
			const struct plan_device *d = &p->devices[dev];
			const struct plan_stage *st = &p->stages[d->stage];
			if (s->pc[dev] == s->end[dev] && s->end[dev] > 0) {
				int m = s->mb[dev];
				rc = take_device_outputs(s, dev, s->end[dev] == d->nfwd ? 0 : d->nfwd, s->end[dev],
							 outputs + (size_t)m * (size_t)p->noutputs);
				s->end[dev] = 0;
			}
			if (rc == 0 && s->end[dev] == 0 && k[dev] < st->norder) {
				int e = st->order[k[dev]++], m = e >= 0 ? e : -(e + 1);
				s->mb[dev] = m;
				s->pc[dev] = e >= 0 ? 0 : d->nfwd;
				s->end[dev] = e >= 0 ? d->nfwd : plan_step_first(d);
				if (e >= 0)
					load_device(s, dev, PLAN_BIND_INPUT, inputs + (size_t)m * (size_t)p->ninputs);
				progress = true;
			}
			if (rc == 0)
				rc = step(s, dev, &progress);
			if (s->end[dev] > 0 || k[dev] < st->norder)
				done = false;
		}
		if (rc < 0 || done)
			break;
		if (!progress) {
			for (int dev = 0; dev < nd; dev++)
				if (s->pc[dev] < s->end[dev]) {
					rc = ir_errorf(
						-EDEADLK,
						"deadlock: device %d waits at instruction %d (%s) of micro-batch %d",
						dev, s->pc[dev],
						plan_instr_kind_name(p->devices[dev].instr[s->pc[dev]].kind),
						s->mb[dev]);
					break;
				}
			break;
		}
	}
	free(k);
	return rc;
}

/* Output slices written by the part just run (per_step or not) into out[]. */
static int take_outputs(struct sim *s, bool per_step, struct ir_tensor *out)
{
	const struct plan *p = s->p;
	for (int i = 0; i < p->noutputs; i++) {
		if (p->outputs[i].per_step != per_step)
			continue;
		int rc = ir_tensor_alloc(&out[i], p->outputs[i].dtype, &p->outputs[i].shape);
		if (rc < 0)
			return rc;
	}
	for (int dev = 0; dev < p->ndevices; dev++) {
		const struct plan_device *d = &p->devices[dev];
		for (int b = 0; b < d->nbuf; b++) {
			const struct plan_buffer *x = &d->buf[b];
			if (x->bind != PLAN_BIND_OUTPUT || !x->writer || p->outputs[x->index].per_step != per_step)
				continue;
			struct ir_tensor *o = &out[x->index];
			copy_block(o->data, &o->shape, x->start, buf_data(s, dev, x), &x->shape, zero_start, &x->shape,
				   ir_dtype_size(x->dtype));
		}
	}
	return 0;
}

void plan_sim_free(struct plan_sim *s)
{
	if (!s)
		return;
	for (int dev = 0; s->arena && dev < s->p->ndevices; dev++)
		free(s->arena[dev]);
	while (s->mail) {
		struct msg *m = s->mail;
		s->mail = m->next;
		free(m->data);
		free(m);
	}
	free(s->arena);
	free(s->pc);
	free(s->end);
	free(s->mb);
	free(s);
}

struct plan_sim *plan_sim_new(const struct plan *p, const struct ir_tensor *params)
{
	struct sim *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->p = p;
	s->arena = calloc((size_t)p->ndevices + 1, sizeof(uint8_t *));
	s->pc = calloc((size_t)p->ndevices + 1, sizeof(int));
	s->end = calloc((size_t)p->ndevices + 1, sizeof(int));
	s->mb = calloc((size_t)p->ndevices + 1, sizeof(int));
	if (!s->arena || !s->pc || !s->end || !s->mb) {
		plan_sim_free(s);
		return NULL;
	}
	for (int dev = 0; dev < p->ndevices; dev++) {
		const struct plan_device *d = &p->devices[dev];
		/* NaN bytes everywhere: a read of memory nothing wrote shows */
		if (!(s->arena[dev] = malloc((size_t)d->arena_bytes + 1))) {
			plan_sim_free(s);
			return NULL;
		}
		memset(s->arena[dev], 0xff, (size_t)d->arena_bytes + 1);
		for (int b = 0; b < d->nbuf; b++) {
			const struct plan_buffer *x = &d->buf[b];
			if (x->bind != PLAN_BIND_STATE)
				continue;
			struct ir_tensor t = { x->dtype, x->shape, buf_data(s, dev, x) };
			for (int64_t i = 0; i < ir_shape_numel(&x->shape); i++)
				ir_tensor_set_f64(&t, i, p->state[x->index].init);
		}
	}
	load_bound(s, PLAN_BIND_PARAM, params);
	return s;
}

int plan_sim_step(struct plan_sim *s, const struct ir_tensor *inputs, struct ir_tensor *outputs)
{
	const struct plan *p = s->p;
	int rc = 0, m = p->micro > 0 ? p->micro : 1;
	for (int i = 0; i < m * p->noutputs; i++)
		outputs[i].data = NULL;
	for (int dev = 0; dev < p->ndevices; dev++) {
		const struct plan_device *d = &p->devices[dev];
		for (int b = 0; b < d->nbuf; b++)
			if (d->buf[b].bind == PLAN_BIND_ACCUM)
				memset(buf_data(s, dev, &d->buf[b]), 0, (size_t)d->buf[b].bytes);
	}
	if (p->ndevices && p->devices[0].nfwd) {
		rc = run_pipeline(s, inputs, outputs);
		m = 0;
	}
	for (int k = 0; k < m && rc == 0; k++) {
		load_bound(s, PLAN_BIND_INPUT, inputs + (size_t)k * (size_t)p->ninputs);
		for (int dev = 0; dev < p->ndevices; dev++) {
			s->pc[dev] = 0;
			s->end[dev] = plan_step_first(&p->devices[dev]);
		}
		if ((rc = run_part(s)) == 0)
			rc = take_outputs(s, false, outputs + (size_t)k * (size_t)p->noutputs);
	}
	for (int dev = 0; dev < p->ndevices; dev++) {
		s->pc[dev] = plan_step_first(&p->devices[dev]);
		s->end[dev] = p->devices[dev].ninstr;
	}
	m = p->micro > 0 ? p->micro : 1;
	for (int dev = 0; dev < p->ndevices; dev++)
		s->mb[dev] = 0;
	if (rc == 0 && (rc = run_part(s)) == 0)
		rc = take_outputs(s, true, outputs + (size_t)(m - 1) * (size_t)p->noutputs);
	return rc;
}

int plan_sim_params(struct plan_sim *s, struct ir_tensor *params)
{
	const struct plan *p = s->p;
	int rc = 0;
	for (int i = 0; i < p->nparams; i++)
		params[i].data = NULL;
	uint8_t **done = calloc((size_t)p->nparams + 1, sizeof *done); /* per element: some device wrote it */
	if (!done)
		return -ENOMEM;
	for (int i = 0; i < p->nparams && rc == 0; i++)
		if ((rc = ir_tensor_alloc(&params[i], p->params[i].dtype, &p->params[i].shape)) == 0 &&
		    !(done[i] = calloc((size_t)ir_shape_numel(&p->params[i].shape) + 1, 1)))
			rc = -ENOMEM;
	for (int dev = 0; dev < p->ndevices && rc == 0; dev++) {
		const struct plan_device *d = &p->devices[dev];
		for (int b = 0; b < d->nbuf && rc == 0; b++) {
			const struct plan_buffer *x = &d->buf[b];
			if (x->bind != PLAN_BIND_PARAM)
				continue;
			struct ir_tensor *t = &params[x->index], have;
			int64_t n = ir_shape_numel(&x->shape);
			uint8_t *was = malloc((size_t)n + 1), *ones = malloc((size_t)n + 1);
			if (!was || !ones || (rc = ir_tensor_alloc(&have, x->dtype, &x->shape)) < 0) {
				free(was);
				free(ones);
				rc = -ENOMEM;
				break;
			}
			memset(ones, 1, (size_t)n + 1);
			/* a replica must hold exactly what the others hold */
			copy_block(have.data, &x->shape, zero_start, t->data, &t->shape, x->start, &x->shape,
				   ir_dtype_size(x->dtype));
			copy_block(was, &x->shape, zero_start, done[x->index], &t->shape, x->start, &x->shape, 1);
			struct ir_tensor mine = { x->dtype, x->shape, buf_data(s, dev, x) };
			for (int64_t e = 0; e < n && rc == 0; e++) {
				double u = ir_tensor_get_f64(&have, e), v = ir_tensor_get_f64(&mine, e);
				if (was[e] && u != v && !(isnan(u) && isnan(v)))
					rc = ir_errorf(-EINVAL,
						       "device %d, buffer %d: its slice of parameter %d differs "
						       "from another device's copy (%g, not %g)",
						       dev, b, x->index, v, u);
			}
			copy_block(t->data, &t->shape, x->start, mine.data, &x->shape, zero_start, &x->shape,
				   ir_dtype_size(x->dtype));
			copy_block(done[x->index], &t->shape, x->start, ones, &x->shape, zero_start, &x->shape, 1);
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

int plan_sim_run(const struct plan *p, const struct ir_tensor *params, const struct ir_tensor *inputs,
		 struct ir_tensor *outputs)
{
	struct sim *s = plan_sim_new(p, params);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory");
	load_bound(s, PLAN_BIND_INPUT, inputs);
	for (int i = 0; i < p->noutputs; i++)
		outputs[i].data = NULL;
	for (int dev = 0; dev < p->ndevices; dev++)
		s->end[dev] = p->devices[dev].ninstr;
	int rc = run_part(s);
	if (rc == 0)
		rc = take_outputs(s, false, outputs);
	if (rc == 0)
		rc = take_outputs(s, true, outputs);
	plan_sim_free(s);
	return rc;
}
