/*
 * state.c: what a rank holds besides its program (rt.h): the arena, the
 * parameter slices loaded from the model, optimizer state at its start
 * value, the outputs it writes, and the gathering of outputs and of whole
 * parameters on rank 0 over the table's ctl channel; parameters and state
 * to and from the device (device.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#include "onnxio/onnxio.h"
#include "runtime/rt.h"

/* Bytes the host can still give (MemAvailable), or -1 when unknown. */
static int64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb < 0 ? -1 : (int64_t)kb * 1024;
}

/* Which part of device d's program writes each of its output slices that
 * are gathered: 0 the per-micro-batch part (its forward part when
 * pipelined), 1 the backward part, 2 the per-step part; -1 none. */
static void output_parts(const struct plan *p, const struct plan_device *d, int8_t *part)
{
	memset(part, -1, (size_t)d->nbuf);
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *x = &d->instr[i];
		for (int j = 0; j < x->nout; j++) {
			int b = d->args[x->arg + x->nin + j];
			const struct plan_buffer *o = &d->buf[b];
			if (o->bind != PLAN_BIND_OUTPUT || !plan_slice_of(d, b)->writer)
				continue;
			part[b] = i >= plan_step_first(d) || p->outputs[o->index].per_step ? 2
				  : d->nfwd && i >= d->nfwd                                ? 1
											   : 0;
		}
	}
}

/* A buffer of a device: find_savers's table entry. */
struct held {
	const struct plan_device *d; /* NULL: an empty entry */
	int b;
};

static uint64_t slice_hash(const struct plan_device *d, int b)
{
	const struct plan_buffer *x = &d->buf[b];
	int64_t key[3 + 2 * IR_MAX_RANK] = { x->bind, x->index, x->shape.rank };
	memcpy(key + 3, x->shape.dims, sizeof x->shape.dims);
	memcpy(key + 3 + IR_MAX_RANK, plan_slice_of(d, b)->start, sizeof plan_no_slice.start);
	return XXH3_64bits(key, sizeof key);
}

static bool same_slice(struct held h, const struct plan_device *d, int b)
{
	const struct plan_buffer *x = &h.d->buf[h.b], *y = &d->buf[b];
	return x->bind == y->bind && x->index == y->index && ir_shape_eq(&x->shape, &y->shape) &&
	       !memcmp(plan_slice_of(h.d, h.b)->start, plan_slice_of(d, b)->start, sizeof plan_no_slice.start);
}

/* saver[dev][b]: the first buffer, in rank then buffer order, holding its
 * parameter or state slice; one pass over every buffer with a hash table of
 * the slices seen. */
static int find_savers(const struct plan *p, uint8_t **saver)
{
	size_t total = 0, cap = 16;
	for (int dev = 0; dev < p->ndevices; dev++)
		total += (size_t)p->devices[dev].nbuf;
	while (cap < 2 * total)
		cap *= 2;
	struct held *seen = ir_calloc(cap, sizeof *seen);
	if (!seen)
		return -ENOMEM;
	for (int dev = 0; dev < p->ndevices; dev++) {
		const struct plan_device *d = &p->devices[dev];
		for (int b = 0; b < d->nbuf; b++) {
			if (d->buf[b].bind != PLAN_BIND_PARAM && d->buf[b].bind != PLAN_BIND_STATE)
				continue;
			size_t h = (size_t)slice_hash(d, b) & (cap - 1);
			while (seen[h].d && !same_slice(seen[h], d, b))
				h = (h + 1) & (cap - 1);
			saver[dev][b] = !seen[h].d;
			if (!seen[h].d)
				seen[h] = (struct held){ d, b };
		}
	}
	ir_free(seen);
	return 0;
}

/* Per device: the parts writing its gathered outputs, and its savers. */
static int index_devices(struct rt *r)
{
	const struct plan *p = r->p;
	if (!(r->part = ir_calloc((size_t)p->ndevices, sizeof *r->part)) ||
	    !(r->saver = ir_calloc((size_t)p->ndevices, sizeof *r->saver)))
		return -ENOMEM;
	for (int dev = 0; dev < p->ndevices; dev++) {
		size_t n = (size_t)p->devices[dev].nbuf + 1;
		if (!(r->part[dev] = ir_malloc(n)) || !(r->saver[dev] = ir_calloc(n, 1)))
			return -ENOMEM;
		output_parts(p, &p->devices[dev], r->part[dev]);
	}
	return find_savers(p, r->saver);
}

/* A GPU rank's host arena: address space only; a page takes memory when
 * the host first writes it (parameters, state, inputs, outputs). */
static uint8_t *reserve(size_t n)
{
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

int rt_init(struct rt *r, const struct plan *p, struct rt_comm *c, bool sparse)
{
	memset(r, 0, sizeof *r);
	r->p = p;
	r->c = c;
	r->d = &p->devices[c->rank];
	r->micro = p->micro > 0 ? p->micro : 1;
	r->dev = &rt_device_cpu;
	const struct plan_device *d = r->d;
	int64_t avail = mem_available(), need;
	char a[IR_BYTES_STRLEN], b[IR_BYTES_STRLEN];
	r->sparse = sparse;
	if (__builtin_mul_overflow(d->arena_bytes, (int64_t)rt_local_ranks(r->c), &need))
		need = INT64_MAX; /* more than any host has */
	if (avail >= 0 && need > avail && !sparse)
		return ir_errorf(-ENOMEM,
				 "the plan needs %s per rank (its arena) for %d ranks on this host, which has %s "
				 "available",
				 ir_bytes_str((double)d->arena_bytes, a), rt_local_ranks(r->c),
				 ir_bytes_str((double)avail, b));
	if (!(r->arena = sparse ? reserve((size_t)d->arena_bytes + 1) : ir_malloc((size_t)d->arena_bytes + 1)) ||
	    !(r->saved = ir_calloc((size_t)d->nbuf * (size_t)r->micro + 1, sizeof *r->saved)) ||
	    !(r->saved_step = ir_calloc((size_t)d->nbuf + 1, sizeof *r->saved_step)))
		return ir_errorf(-ENOMEM, "cannot allocate the arena of %s", ir_bytes_str((double)d->arena_bytes, a));
	if (index_devices(r) < 0)
		return ir_errorf(-ENOMEM, "out of memory indexing the plan's buffers");
	if (!sparse) /* every page now, not half-way through a step */
		memset(r->arena, 0, (size_t)d->arena_bytes + 1);
	for (int k = 0; k < d->nbuf; k++) {
		const struct plan_buffer *x = &d->buf[k];
		if (x->bind != PLAN_BIND_STATE || (sparse && p->state[x->index].init == 0))
			continue;
		struct ir_tensor t = { x->dtype, x->shape, rt_buf(r, x) };
		for (int64_t i = 0; i < ir_shape_numel(&x->shape); i++)
			ir_tensor_set_f64(&t, i, p->state[x->index].init);
	}
	return 0;
}

void rt_release(struct rt *r)
{
	if (!r->p)
		return;
	for (int k = 0; r->saved && k < r->d->nbuf * r->micro; k++)
		ir_free(r->saved[k]);
	for (int k = 0; r->saved_step && k < r->d->nbuf; k++)
		ir_free(r->saved_step[k]);
	ir_free(r->saved);
	ir_free(r->saved_step);
	for (int dev = 0; dev < r->p->ndevices; dev++) {
		ir_free(r->part ? r->part[dev] : NULL);
		ir_free(r->saver ? r->saver[dev] : NULL);
	}
	ir_free(r->part);
	ir_free(r->saver);
	ir_free(r->prof_time);
	ir_free(r->prof_calls);
	r->prof_time = NULL;
	r->prof_calls = NULL;
	rt_timed_release(r);
	r->dev->close(r);
	if (r->sparse && r->arena)
		munmap(r->arena, (size_t)r->d->arena_bytes + 1);
	else
		ir_free(r->arena);
	ir_free(r->scratch);
	rt_kernels_release(r);
	memset(r, 0, sizeof *r);
}

int rt_state_sync(struct rt *r, bool to_device)
{
	int rc = 0, saved = r->mb;
	r->mb = 0;
	for (int k = 0; k < r->d->nbuf && rc == 0; k++) {
		const struct plan_buffer *b = &r->d->buf[k];
		if (b->bind == PLAN_BIND_PARAM || b->bind == PLAN_BIND_STATE)
			rc = to_device ? r->dev->put(r, b) : r->dev->get(r, b);
	}
	r->mb = saved;
	return rc;
}

int rt_load_params(struct rt *r, const char *model, const struct rt_fill *fill, int *filled)
{
	struct onnx_weights *w = onnx_weights_open(model);
	int rc = w ? 0 : -EINVAL, nfilled = 0, last = -1;
	for (int k = 0; k < r->d->nbuf && rc == 0; k++) {
		const struct plan_buffer *x = &r->d->buf[k];
		if (x->bind != PLAN_BIND_PARAM)
			continue;
		const struct plan_tensor *t = &r->p->params[x->index];
		bool absent = onnx_weights_absent(w, t->name);
		if (absent && fill && fill->on) {
			rc = rt_fill_block(fill, t->name, x->dtype, &t->shape, plan_slice_of(r->d, k)->start, &x->shape,
					   rt_buf(r, x));
			nfilled += last != x->index;
			last = x->index;
			continue;
		}
		rc = onnx_weights_read(w, t->name, x->dtype, &t->shape, plan_slice_of(r->d, k)->start, &x->shape,
				       rt_buf(r, x));
		if (rc < 0 && absent) {
			char why[1024];
			snprintf(why, sizeof why, "%s", ir_error());
			ir_errorf(rc, "%s (pcc-run --init fills parameters whose weights are absent)", why);
		}
	}
	onnx_weights_close(w);
	if (filled)
		*filled = nfilled;
	return rc;
}

int rt_gather_params(struct rt *r, struct ir_tensor *params)
{
	const struct plan *p = r->p;
	int rc = 0, me = r->c->rank;
	if (me != 0) {
		for (int k = 0; k < r->d->nbuf && rc == 0; k++)
			if (r->d->buf[k].bind == PLAN_BIND_PARAM && r->saver[me][k])
				rc = r->c->ops->ctl_send(r->c, rt_buf(r, &r->d->buf[k]), (size_t)r->d->buf[k].bytes, 0);
		return rc;
	}
	for (int i = 0; i < p->nparams && rc == 0; i++)
		rc = ir_tensor_alloc(&params[i], p->params[i].dtype, &p->params[i].shape);
	for (int dev = 0; dev < p->ndevices && rc == 0; dev++) {
		const struct plan_device *d = &p->devices[dev];
		for (int k = 0; k < d->nbuf && rc == 0; k++) {
			const struct plan_buffer *x = &d->buf[k];
			if (x->bind != PLAN_BIND_PARAM || !r->saver[dev][k])
				continue;
			void *src = dev == 0 ? rt_buf(r, x) : ir_malloc((size_t)x->bytes + 1);
			if (!src)
				return ir_errorf(-ENOMEM, "out of memory gathering parameters");
			if (dev == 0 || (rc = r->c->ops->ctl_recv(r->c, src, (size_t)x->bytes, dev)) == 0)
				ir_copy_block(params[x->index].data, &params[x->index].shape,
					      plan_slice_of(d, k)->start, src, &x->shape, NULL, &x->shape,
					      ir_dtype_size(x->dtype));
			if (dev != 0)
				ir_free(src);
		}
	}
	return rc;
}

/* The saved slice of buffer b for micro-batch m (part 2: per step). */
static void *saved(const struct rt *r, int m, int b)
{
	return r->part[r->c->rank][b] == 2 ? r->saved_step[b] : r->saved[(size_t)m * (size_t)r->d->nbuf + (size_t)b];
}

/* Sends, or on rank 0 places, device dev's saved output slices in the
 * order every rank derives from the plan: micro-batch by micro-batch, then
 * the per-step ones. */
static int move_outputs(struct rt *r, int dev, const int8_t *part, struct ir_tensor *out)
{
	const struct plan *p = r->p;
	const struct plan_device *d = &p->devices[dev];
	int rc = 0, no = p->noutputs;
	void *tmp = NULL;
	for (int m = 0; m <= r->micro && rc == 0; m++)
		for (int b = 0; b < d->nbuf && rc == 0; b++) {
			const struct plan_buffer *x = &d->buf[b];
			if (part[b] < 0 || (m < r->micro) != (part[b] < 2))
				continue;
			int mb = m < r->micro ? m : r->micro - 1;
			if (r->c->rank == dev && dev != 0) {
				rc = r->c->ops->ctl_send(r->c, saved(r, mb, b), (size_t)x->bytes, 0);
				continue;
			}
			struct ir_tensor *o = &out[(size_t)mb * (size_t)no + (size_t)x->index];
			const void *src = dev == 0 ? saved(r, mb, b) : (tmp = ir_realloc(tmp, (size_t)x->bytes + 1));
			if (!src)
				rc = ir_errorf(-ENOMEM, "out of memory gathering outputs");
			else if (dev != 0)
				rc = r->c->ops->ctl_recv(r->c, tmp, (size_t)x->bytes, dev);
			if (rc == 0 && !o->data)
				rc = ir_tensor_alloc(o, p->outputs[x->index].dtype, &p->outputs[x->index].shape);
			if (rc == 0)
				ir_copy_block(o->data, &o->shape, plan_slice_of(d, b)->start, src, &x->shape, NULL,
					      &x->shape, ir_dtype_size(x->dtype));
		}
	ir_free(tmp);
	return rc;
}

int rt_gather_outputs(struct rt *r, struct ir_tensor *out)
{
	const struct plan *p = r->p;
	int rc = 0;
	if (r->c->rank != 0)
		return move_outputs(r, r->c->rank, r->part[r->c->rank], out);
	for (int i = 0; i < r->micro * p->noutputs; i++)
		out[i] = (struct ir_tensor){ 0 };
	for (int dev = 0; dev < p->ndevices && rc == 0; dev++)
		rc = move_outputs(r, dev, r->part[dev], out);
	return rc;
}
