/*
 * plan.c: the executable plan's lifetime and the names of its enums.
 *
 * A plan owns every array it points to, each one ir_malloc'd on its own:
 * plan_free releases them one by one, so a plan that was only partly built
 * (plan_unpack failing half way) is freed by the same call as long as each
 * count is set no earlier than its array.
 */
#include <errno.h>
#include <string.h>

#include "ir/plan.h"

struct plan *plan_new(void)
{
	struct plan *p = ir_calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->version = PLAN_FORMAT_VERSION;
	p->micro = 1;
	p->labels_input = -1;
	return p;
}

static void free_tensors(struct plan_tensor *t, int n)
{
	for (int i = 0; t && i < n; i++)
		ir_free(t[i].name);
	ir_free(t);
}

void plan_kernel_free(struct plan_kernel *k)
{
	ir_free(k->dtype);
	ir_free(k->shape);
	/* only a CONSTANT's data is the plan's; other ops leave it NULL */
	if (k->op == IR_OP_CONSTANT)
		ir_free((void *)k->a.data);
	for (int i = 0; k->body && i < k->nbody; i++)
		if (k->body[i].op == IR_OP_CONSTANT)
			ir_free((void *)k->body[i].a.data);
	ir_free(k->body);
}

enum ir_op plan_kernel_core(const struct plan_kernel *k)
{
	enum ir_op op = k->nbody ? k->body[0].op : k->op;
	return op == IR_OP_DOT || op == IR_OP_CONV ? op : IR_OP_COUNT;
}

/* Whether slots k suffice: micro-batch m >= k starts its forward part
 * only once m - k has finished its backward part. done: [micro] scratch. */
static bool slots_suffice(const int *order, int n, int micro, int k, bool *done)
{
	memset(done, 0, (size_t)micro + 1);
	for (int i = 0; i < n; i++) {
		int m = order[i];
		if (m < 0 && -(m + 1) < micro)
			done[-(m + 1)] = true;
		else if (m >= k && m < micro && !done[m - k])
			return false;
	}
	return true;
}

/* The fewest slots that suffice, found by bisection: with forwards in
 * micro-batch order, k slots sufficing means k + 1 do (m - k - 1 finished
 * before m - 1 started, which is before m starts), and micro always do.
 * O(n log micro), where trying each k in turn was O(n micro). */
int plan_schedule_slots(const int *order, int n)
{
	int micro = n / 2, lo = 1, hi = micro > 1 ? micro : 1;
	bool *done = ir_calloc((size_t)micro + 1, 1);
	if (!done)
		return hi;
	while (lo < hi) {
		int k = lo + (hi - lo) / 2;
		if (slots_suffice(order, n, micro, k, done))
			hi = k;
		else
			lo = k + 1;
	}
	ir_free(done);
	return lo;
}

void plan_invariant_instr(unsigned char *st, enum plan_instr_kind kind, const int *args, int nin, int nout)
{
	bool same = kind != PLAN_RECV;
	for (int j = 0; j < nin; j++)
		same &= st[args[j]] == PLAN_INVARIANT;
	for (int j = nin; j < nin + nout; j++)
		st[args[j]] = same && st[args[j]] != PLAN_VARIANT ? PLAN_INVARIANT : PLAN_VARIANT;
}

void plan_code_free(struct plan *p)
{
	ir_free(p->host_object);
	ir_free(p->host_cpu);
	ir_free(p->host_features);
	for (int i = 0; p->ptx && i < p->nptx; i++) {
		ir_free(p->ptx[i].arch);
		ir_free(p->ptx[i].text);
	}
	ir_free(p->ptx);
	p->host_object = NULL;
	p->host_object_len = 0;
	p->host_cpu = p->host_features = NULL;
	p->ptx = NULL;
	p->nptx = 0;
	for (int k = 0; p->kernels && k < p->nkernels; k++)
		p->kernels[k].host = p->kernels[k].gpu = false;
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	plan_code_free(p); /* before the kernels it marks */
	ir_free(p->cluster);
	for (int i = 0; p->stages && i < p->nstages; i++)
		ir_free(p->stages[i].order);
	ir_free(p->stages);
	free_tensors(p->params, p->nparams);
	free_tensors(p->inputs, p->ninputs);
	ir_free(p->input_file);
	free_tensors(p->outputs, p->noutputs);
	free_tensors(p->state, p->nstate);
	ir_free(p->train_config);
	ir_free(p->model);
	for (int i = 0; p->kernels && i < p->nkernels; i++)
		plan_kernel_free(&p->kernels[i]);
	ir_free(p->kernels);
	for (int i = 0; p->comms && i < p->ncomms; i++)
		ir_free(p->comms[i].ranks);
	ir_free(p->comms);
	for (int i = 0; p->devices && i < p->ndevices; i++) {
		struct plan_device *d = &p->devices[i];
		if (!d->shared_buf)
			ir_free(d->buf);
		ir_free(d->slice);
		ir_free(d->instr);
		if (!d->shared_args)
			ir_free(d->args);
	}
	ir_free(p->devices);
	ir_free(p);
}

int plan_device_unshare(struct plan_device *d)
{
	if (d->shared_buf) {
		struct plan_buffer *b = ir_malloc(sizeof *b * (size_t)(d->nbuf + 1));
		if (!b)
			return ir_errorf(-ENOMEM, "out of memory copying device %d's buffers", d->rank);
		memcpy(b, d->buf, sizeof *b * (size_t)d->nbuf);
		d->buf = b;
		d->shared_buf = false;
	}
	if (d->shared_args) {
		int *a = ir_malloc(sizeof *a * (size_t)(d->nargs + 1));
		if (!a)
			return ir_errorf(-ENOMEM, "out of memory copying device %d's arguments", d->rank);
		memcpy(a, d->args, sizeof *a * (size_t)d->nargs);
		d->args = a;
		d->shared_args = false;
	}
	return 0;
}

const struct plan_slice plan_no_slice = { .writer = true };

int plan_device_slices(struct plan_device *d)
{
	int n = 0;
	for (int b = 0; b < d->nbuf; b++) {
		bool bound = d->buf[b].bind != PLAN_BIND_NONE;
		if (!d->shared_buf)
			d->buf[b].slice = bound ? n : -1;
		n += bound;
	}
	ir_free(d->slice);
	d->nslice = 0;
	if (!(d->slice = ir_calloc((size_t)n + 1, sizeof *d->slice)))
		return ir_errorf(-ENOMEM, "out of memory: device %d's %d slices", d->rank, n);
	d->nslice = n;
	for (int k = 0; k < n; k++)
		d->slice[k].writer = true;
	return 0;
}

bool plan_buffer_equal(const struct plan_buffer *a, const struct plan_buffer *b)
{
	return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape) && a->offset == b->offset &&
	       a->bytes == b->bytes && a->bind == b->bind && a->index == b->index && a->slice == b->slice &&
	       a->slots == b->slots;
}

const char *plan_instr_kind_name(enum plan_instr_kind k)
{
	switch (k) {
	case PLAN_KERNEL:
		return "kernel";
	case PLAN_ALL_REDUCE:
		return "all_reduce";
	case PLAN_ALL_GATHER:
		return "all_gather";
	case PLAN_REDUCE_SCATTER:
		return "reduce_scatter";
	case PLAN_ALL_TO_ALL:
		return "all_to_all";
	case PLAN_SEND:
		return "send";
	case PLAN_RECV:
		return "recv";
	case PLAN_COPY:
		return "copy";
	case PLAN_FREE:
		return "free";
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	return "?";
}

bool plan_instr_is_collective(enum plan_instr_kind k)
{
	switch (k) {
	case PLAN_ALL_REDUCE:
	case PLAN_ALL_GATHER:
	case PLAN_REDUCE_SCATTER:
	case PLAN_ALL_TO_ALL:
		return true;
	case PLAN_KERNEL:
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		return false;
	}
	return false;
}

const char *plan_reduce_name(enum plan_reduce r)
{
	switch (r) {
	case PLAN_SUM:
		return "sum";
	case PLAN_MAX:
		return "max";
	case PLAN_MIN:
		return "min";
	case PLAN_REDUCE_COUNT:
		break;
	}
	return "?";
}

const char *plan_bind_name(enum plan_bind b)
{
	switch (b) {
	case PLAN_BIND_NONE:
		return "none";
	case PLAN_BIND_PARAM:
		return "param";
	case PLAN_BIND_INPUT:
		return "input";
	case PLAN_BIND_OUTPUT:
		return "output";
	case PLAN_BIND_STATE:
		return "state";
	case PLAN_BIND_ACCUM:
		return "accum";
	case PLAN_BIND_COUNT:
		break;
	}
	return "?";
}

static int mem_kind(const struct plan_buffer *b, bool crosses)
{
	switch (b->bind) {
	case PLAN_BIND_PARAM:
		return PLAN_MEM_PARAM;
	case PLAN_BIND_ACCUM:
		return PLAN_MEM_ACCUM;
	case PLAN_BIND_STATE:
		return PLAN_MEM_STATE;
	case PLAN_BIND_INPUT:
	case PLAN_BIND_OUTPUT:
		return PLAN_MEM_IO;
	case PLAN_BIND_NONE:
	case PLAN_BIND_COUNT:
		break;
	}
	return b->slots > 1 || crosses ? PLAN_MEM_STASH : PLAN_MEM_TEMP;
}

int plan_device_memory(const struct plan_device *d, struct plan_mem *m)
{
	int nb = d->nbuf, ni = d->ninstr > 0 ? d->ninstr : 1, sf = plan_step_first(d);
	enum { K = PLAN_MEM_KIND_COUNT };
	memset(m, 0, sizeof *m);
	int *lo = ir_malloc(sizeof *lo * (size_t)(2 * nb + 1));
	int64_t *delta = ir_calloc((size_t)(ni + 1) * K, sizeof *delta); /* per instruction and kind */
	if (!lo || !delta) {
		ir_free(lo);
		ir_free(delta);
		return -ENOMEM;
	}
	int *hi = lo + nb;
	for (int b = 0; b < nb; b++)
		lo[b] = hi[b] = -1;
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *x = &d->instr[i];
		for (int j = 0; j < x->nin + x->nout; j++) {
			int b = d->args[x->arg + j];
			lo[b] = lo[b] < 0 ? i : lo[b];
			hi[b] = i;
		}
	}
	for (int b = 0; b < nb; b++) {
		const struct plan_buffer *x = &d->buf[b];
		int from = 0, to = ni; /* live over [from, to) */
		if (x->bind == PLAN_BIND_NONE && lo[b] < 0)
			continue;
		bool crosses = d->nfwd > 0 && lo[b] < d->nfwd && hi[b] >= d->nfwd;
		if (x->bind == PLAN_BIND_NONE && (x->slots > 1 || crosses))
			to = sf > 0 ? sf : 1;
		else if (x->bind == PLAN_BIND_NONE)
			from = lo[b], to = hi[b] + 1;
		int k = mem_kind(x, crosses);
		int64_t bytes = plan_slot_stride(x) * plan_buffer_slots(x);
		delta[(size_t)from * K + (size_t)k] += bytes;
		delta[(size_t)to * K + (size_t)k] -= bytes;
	}
	int64_t cur[K] = { 0 };
	m->live = -1;
	for (int i = 0; i < ni; i++) {
		int64_t live = 0;
		for (int k = 0; k < K; k++)
			live += cur[k] += delta[(size_t)i * K + (size_t)k];
		if (live > m->live) {
			m->live = live;
			m->at = i;
			memcpy(m->bytes, cur, sizeof cur);
		}
	}
	ir_free(lo);
	ir_free(delta);
	return 0;
}
