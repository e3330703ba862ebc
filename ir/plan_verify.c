/*
 * plan_verify.c: plan_verify (plan.h), the checks made one device at a
 * time; plan_verify_comm.c then checks the devices together.
 *
 * Order: the plan's tables (version, stages, devices, comms, kernels,
 * tensors); per device its buffers (sizes, alignment, arena, bindings), its
 * instructions (operand counts and ranges, shapes against the kernel or the
 * collective), a walk in program order that tracks each buffer as unwritten,
 * live or freed, and a sweep for buffers sharing bytes while both are live.
 * Each check stops at the first problem, so a later one may index anything
 * an earlier one accepted.
 *
 * Memory: a bound buffer lives for the whole program [0, ninstr]; a
 * temporary from its first use to its last (a read, a write or its free),
 * both inclusive, so an instruction's output never shares bytes with one of
 * its inputs unless it is the same buffer (in place). The sweep visits the
 * buffers by first use and keeps the live ones sorted by offset; those are
 * disjoint (the sweep stops at the first that is not), so a new buffer only
 * needs comparing with its two neighbours: O(n log n) plus the memmoves.
 *
 * Example: "device 1, instruction 0 (kernel): operand 1 (buffer 1) is f32
 * [8,4], kernel 0 (dot) expects f32 [8,8]".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/plan_verify.h"

enum { UNWRITTEN, LIVE, FREED };

/* A temporary's live interval, instructions inclusive; first -1: unused. */
struct span {
	int first, last;
};

struct event {
	int t, id;
};

/* A live buffer's bytes [lo, hi) in the sweep. */
struct placed {
	int64_t lo, hi;
	int id;
};

/* Per-device scratch, sized for the largest device and reused. */
struct scratch {
	unsigned char *state;
	struct span *span;
	struct event *start, *end;
	struct placed *live;
	int *need; /* [nstages] plan_schedule_slots of each stage */
};

#define ty plan_verify_ty

static const char *const bind_names[PLAN_BIND_COUNT] = {
	[PLAN_BIND_NONE] = "temporary", [PLAN_BIND_PARAM] = "parameter",
	[PLAN_BIND_INPUT] = "input",    [PLAN_BIND_OUTPUT] = "output",
	[PLAN_BIND_STATE] = "state",    [PLAN_BIND_ACCUM] = "the gradient accumulator of parameter",
};

int plan_verify_instr_errorf(const struct plan *p, int d, int i, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ir_errorf(-EINVAL, "device %d, instruction %d (%s): %s", d, i,
			 plan_instr_kind_name(p->devices[d].instr[i].kind), msg);
}

__attribute__((format(printf, 3, 4))) static int buf_errorf(int d, int b, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ir_errorf(-EINVAL, "device %d, buffer %d: %s", d, b, msg);
}

const char *plan_verify_ty(char *out, enum ir_dtype t, const struct ir_shape *s)
{
	char sh[IR_SHAPE_STR_MAX];
	snprintf(out, TY_MAX, "%s %s", ir_dtype_name(t), ir_shape_str(s, sh, sizeof sh));
	return out;
}

static bool bad_table(int n, const void *a)
{
	return n < 0 || (n > 0 && !a);
}

/* ---- the plan's tables ------------------------------------------------ */

static int check_header(const struct plan *p)
{
	if (p->version != PLAN_FORMAT_VERSION)
		return ir_errorf(-EINVAL, "plan: format version %d, this pcc reads version %d", p->version,
				 PLAN_FORMAT_VERSION);
	if (p->ndevices < 1 || !p->devices)
		return ir_errorf(-EINVAL, "plan: has no devices");
	if (p->nstages < 1 || !p->stages)
		return ir_errorf(-EINVAL, "plan: has no stages");
	if (bad_table(p->nparams, p->params) || bad_table(p->ninputs, p->inputs) ||
	    bad_table(p->noutputs, p->outputs) || bad_table(p->nkernels, p->kernels) || bad_table(p->ncomms, p->comms))
		return ir_errorf(-EINVAL, "plan: a table count is negative or its array is missing");
	return 0;
}

/* A stage's schedule: each micro-batch's forward once, in micro-batch
 * order; its backward once, after it; backwards in stage 0's order on
 * every stage (messages pair in order). done: [micro] scratch. */
static int check_order(const struct plan *p, int s, unsigned char *done)
{
	const struct plan_stage *st = &p->stages[s], *s0 = &p->stages[0];
	int f = 0;
	memset(done, 0, (size_t)p->micro);
	for (int k = 0, j = 0; k < st->norder; k++) {
		int m = st->order[k];
		bool ok = m == f;
		if (m < 0) { /* stage 0's next backward */
			while (j < s0->norder && s0->order[j] >= 0)
				j++;
			ok = -(m + 1) < f && !done[-(m + 1)] && j < s0->norder && s0->order[j++] == m;
			if (ok)
				done[-(m + 1)] = 1;
		} else {
			f++;
		}
		if (!ok)
			return ir_errorf(-EINVAL,
					 "plan: stage %d's schedule, entry %d (%d): forwards run in "
					 "micro-batch order, each backward after its forward and once, backwards in "
					 "stage 0's order",
					 s, k, m);
	}
	if (f != p->micro)
		return ir_errorf(-EINVAL, "plan: stage %d's schedule runs %d forward parts, one per micro-batch is %d",
				 s, f, p->micro);
	return 0;
}

/* Stage s's ranks (from next on) and meshes. */
static int check_stage(const struct plan *p, int s, int next)
{
	const struct plan_stage *st = &p->stages[s];
	if (st->first_rank != next)
		return ir_errorf(-EINVAL, "plan: stage %d starts at rank %d, the previous stage ends at rank %d", s,
				 st->first_rank, next);
	if (st->ndevices < 1 || st->ndevices > p->ndevices - next)
		return ir_errorf(-EINVAL, "plan: stage %d has %d devices, ranks [%d, %d) remain", s, st->ndevices, next,
				 p->ndevices);
	if (st->n0 < 1 || st->n1 < 1 || (int64_t)st->n0 * st->n1 != st->ndevices)
		return ir_errorf(-EINVAL, "plan: stage %d has %d devices but a %dx%d logical mesh", s, st->ndevices,
				 st->n0, st->n1);
	if (st->rows < 1 || st->cols < 1 || (int64_t)st->rows * st->cols != st->ndevices)
		return ir_errorf(-EINVAL, "plan: stage %d has %d devices but a %dx%d sub-mesh", s, st->ndevices,
				 st->rows, st->cols);
	if (st->norder && (st->norder != 2 * (int64_t)p->micro || !st->order))
		return ir_errorf(-EINVAL, "plan: stage %d has a schedule of %d entries, %d micro-batches need %d", s,
				 st->norder, p->micro, 2 * p->micro);
	return 0;
}

static int check_devices(const struct plan *p)
{
	for (int d = 0; d < p->ndevices; d++) {
		const struct plan_device *dev = &p->devices[d];
		if (dev->rank != d)
			return ir_errorf(-EINVAL, "plan: device %d has rank %d", d, dev->rank);
		if (dev->stage < 0 || dev->stage >= p->nstages)
			return ir_errorf(-EINVAL, "plan: device %d is in stage %d, the plan has %d", d, dev->stage,
					 p->nstages);
		const struct plan_stage *st = &p->stages[dev->stage];
		if ((dev->nfwd > 0) != (st->norder > 0))
			return ir_errorf(-EINVAL, "plan: device %d has %s forward part, its stage %d %s a schedule", d,
					 dev->nfwd > 0 ? "a" : "no", dev->stage, st->norder ? "has" : "has no");
		int i = d - st->first_rank;
		if (i < 0 || i >= st->ndevices)
			return ir_errorf(-EINVAL, "plan: device %d is in stage %d, which holds ranks [%d, %d)", d,
					 dev->stage, st->first_rank, st->first_rank + st->ndevices);
		if (dev->coord[0] != i / st->n1 || dev->coord[1] != i % st->n1)
			return ir_errorf(
				-EINVAL,
				"plan: device %d has mesh coordinates (%d, %d), its place in stage %d's %dx%d mesh is (%d, %d)",
				d, dev->coord[0], dev->coord[1], dev->stage, st->n0, st->n1, i / st->n1, i % st->n1);
	}
	return 0;
}

static int check_stages(const struct plan *p)
{
	int next = 0;
	if (p->micro < 1 || p->micro > PLAN_MAX_MICRO)
		return ir_errorf(-EINVAL, "plan: %d micro-batches per step (1 to %d)", p->micro, PLAN_MAX_MICRO);
	unsigned char *done = ir_malloc((size_t)p->micro);
	if (!done)
		return ir_errorf(-ENOMEM, "plan: out of memory while verifying");
	int r = 0;
	for (int s = 0; s < p->nstages && r == 0; s++) {
		const struct plan_stage *st = &p->stages[s];
		r = check_stage(p, s, next);
		if (r == 0 && st->norder)
			r = check_order(p, s, done);
		next += st->ndevices;
	}
	ir_free(done);
	if (r < 0)
		return r;
	if (next != p->ndevices)
		return ir_errorf(-EINVAL, "plan: stages cover ranks [0, %d), the plan has %d devices", next,
				 p->ndevices);
	return check_devices(p);
}

/* seen: [ndevices] zeroed scratch, for the duplicate check. */
static int check_comms(const struct plan *p, int *seen)
{
	for (int c = 0; c < p->ncomms; c++) {
		const struct plan_comm *cm = &p->comms[c];
		if (cm->n < 1 || !cm->ranks)
			return ir_errorf(-EINVAL, "plan: comm %d has %d ranks", c, cm->n);
		for (int j = 0; j < cm->n; j++) {
			int r = cm->ranks[j];
			if (r < 0 || r >= p->ndevices)
				return ir_errorf(-EINVAL, "plan: comm %d: rank %d is not in the plan (%d devices)", c,
						 r, p->ndevices);
			if (seen[r] == c + 1)
				return ir_errorf(-EINVAL, "plan: comm %d lists rank %d twice", c, r);
			seen[r] = c + 1;
		}
	}
	return 0;
}

static int check_tensors(const char *what, const struct plan_tensor *t, int n)
{
	for (int i = 0; i < n; i++) {
		const char *name = t[i].name ? t[i].name : "";
		if ((unsigned)t[i].dtype >= IR_DTYPE_COUNT)
			return ir_errorf(-EINVAL, "plan: %s %d \"%s\" has dtype %d, not a dtype", what, i, name,
					 (int)t[i].dtype);
		if (ir_shape_check(&t[i].shape) < 0) {
			ir_error_prefix("plan: %s %d \"%s\"", what, i, name);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- buffers ---------------------------------------------------------- */

static int check_binding(const struct plan *p, int d, int b)
{
	const struct plan_buffer *bf = &p->devices[d].buf[b];
	const struct plan_tensor *t = NULL;
	int n = 0;
	char bs[TY_MAX], ts[TY_MAX];
	if ((unsigned)bf->bind >= PLAN_BIND_COUNT)
		return buf_errorf(d, b, "binding %d is not a binding", (int)bf->bind);
	const struct plan_device *dv = &p->devices[d];
	if (bf->bind == PLAN_BIND_NONE ? bf->slice != -1 : bf->slice < 0 || bf->slice >= dv->nslice)
		return buf_errorf(d, b, "%s has slice %d of the device's %d",
				  bf->bind ? "a bound buffer" : "a temporary", bf->slice, dv->nslice);
	switch (bf->bind) {
	case PLAN_BIND_NONE:
		return 0;
	case PLAN_BIND_PARAM:
		t = p->params, n = p->nparams;
		break;
	case PLAN_BIND_INPUT:
		t = p->inputs, n = p->ninputs;
		break;
	case PLAN_BIND_OUTPUT:
		t = p->outputs, n = p->noutputs;
		break;
	case PLAN_BIND_STATE:
		t = p->state, n = p->nstate;
		break;
	case PLAN_BIND_ACCUM:
		t = p->params, n = p->nparams;
		break;
	case PLAN_BIND_COUNT:
		break;
	}
	const char *what = bind_names[bf->bind];
	if (bf->index < 0 || bf->index >= n)
		return buf_errorf(d, b, "binds %s %d, the plan has %d", what, bf->index, n);
	t += bf->index;
	const char *name = t->name ? t->name : "";
	/* an accumulator holds its parameter's gradient in the compute dtype */
	if ((bf->dtype != t->dtype && bf->bind != PLAN_BIND_ACCUM) || bf->shape.rank != t->shape.rank)
		return buf_errorf(d, b, "is %s, %s %d \"%s\" is %s", ty(bs, bf->dtype, &bf->shape), what, bf->index,
				  name, ty(ts, t->dtype, &t->shape));
	const int64_t *start = dv->slice[bf->slice].start;
	for (int k = 0; k < bf->shape.rank; k++)
		if (start[k] < 0 || start[k] > t->shape.dims[k] - bf->shape.dims[k])
			return buf_errorf(d, b, "slice [%lld, %lld) of dimension %d lies outside %s %d \"%s\" %s",
					  (long long)start[k], (long long)(start[k] + bf->shape.dims[k]), k, what,
					  bf->index, name, ty(ts, t->dtype, &t->shape));
	return 0;
}

static int check_buffers(const struct plan *p, int d)
{
	const struct plan_device *dev = &p->devices[d];
	char bs[TY_MAX];
	if (bad_table(dev->nbuf, dev->buf) || bad_table(dev->ninstr, dev->instr) || bad_table(dev->nargs, dev->args))
		return ir_errorf(
			-EINVAL,
			"device %d: a buffer, instruction or argument count is negative or its array is missing", d);
	if (dev->arena_bytes < 0)
		return ir_errorf(-EINVAL, "device %d: arena of %lld bytes", d, (long long)dev->arena_bytes);
	if (dev->nstep < 0 || dev->nstep > dev->ninstr)
		return ir_errorf(-EINVAL, "device %d: a per-step part of %d instructions, the program has %d", d,
				 dev->nstep, dev->ninstr);
	if (dev->nfwd < 0 || dev->nfwd > plan_step_first(dev))
		return ir_errorf(-EINVAL,
				 "device %d: a forward part of %d instructions, the per-micro-batch part has %d", d,
				 dev->nfwd, plan_step_first(dev));
	if (p->device_memory > 0 && dev->arena_bytes > p->device_memory)
		return ir_errorf(-EINVAL, "device %d: arena needs %lld bytes, devices have %lld", d,
				 (long long)dev->arena_bytes, (long long)p->device_memory);
	for (int b = 0; b < dev->nbuf; b++) {
		const struct plan_buffer *bf = &dev->buf[b];
		if ((unsigned)bf->dtype >= IR_DTYPE_COUNT)
			return buf_errorf(d, b, "dtype %d is not a dtype", (int)bf->dtype);
		if (ir_shape_check(&bf->shape) < 0) {
			ir_error_prefix("device %d, buffer %d", d, b);
			return -EINVAL;
		}
		int64_t need = (int64_t)ir_dtype_size(bf->dtype) * ir_shape_numel(&bf->shape);
		if (bf->bytes != need)
			return buf_errorf(d, b, "has %lld bytes, %s needs %lld", (long long)bf->bytes,
					  ty(bs, bf->dtype, &bf->shape), (long long)need);
		if (bf->offset < 0 || bf->offset % PLAN_ALIGN)
			return buf_errorf(d, b, "offset %lld is not a multiple of %d", (long long)bf->offset,
					  PLAN_ALIGN);
		if (bf->slots < 0 || bf->slots > p->micro || (bf->slots > 1 && !dev->nfwd))
			return buf_errorf(d, b, "has %d slots (%d micro-batches%s)", bf->slots, p->micro,
					  dev->nfwd ? "" : ", no forward part");
		int k = plan_buffer_slots(bf);
		/* slots past the arena (checked before their product can overflow) */
		int64_t extent = k > 1 && plan_slot_stride(bf) > dev->arena_bytes / (k - 1)
					 ? INT64_MAX
					 : plan_slot_stride(bf) * (k - 1) + bf->bytes;
		if (extent == INT64_MAX || bf->offset > dev->arena_bytes - extent)
			return buf_errorf(d, b, "bytes [%lld, %lld) lie outside the arena of %lld bytes",
					  (long long)bf->offset,
					  (long long)(extent == INT64_MAX ? extent : bf->offset + extent),
					  (long long)dev->arena_bytes);
		int r = check_binding(p, d, b);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- instructions ----------------------------------------------------- */

static int check_kernel_operands(const struct plan *p, int d, int i)
{
	const struct plan_device *dev = &p->devices[d];
	const struct plan_instr *in = &dev->instr[i];
	const struct plan_kernel *kn = &p->kernels[in->kernel];
	char bs[TY_MAX], ks[TY_MAX];
	for (int j = 0; j < in->nin + in->nout; j++) {
		int id = dev->args[in->arg + j];
		const struct plan_buffer *bf = &dev->buf[id];
		if (bf->dtype != kn->dtype[j] || !ir_shape_eq(&bf->shape, &kn->shape[j]))
			return plan_verify_instr_errorf(p, d, i, "%s %d (buffer %d) is %s, kernel %d (%s) expects %s",
							j < in->nin ? "operand" : "result",
							j < in->nin ? j : j - in->nin, id,
							ty(bs, bf->dtype, &bf->shape), in->kernel, ir_op_name(kn->op),
							ty(ks, kn->dtype[j], &kn->shape[j]));
	}
	return 0;
}

/* Divides dimension axis by n; false if it does not divide. */
static bool shrink(struct ir_shape *s, int axis, int n)
{
	if (s->dims[axis] % n)
		return false;
	s->dims[axis] /= n;
	return true;
}

static int check_collective(const struct plan *p, int d, int i, int ia, int io)
{
	const struct plan_device *dev = &p->devices[d];
	const struct plan_instr *in = &dev->instr[i];
	const struct plan_buffer *a = &dev->buf[ia], *o = &dev->buf[io];
	char as[TY_MAX], os[TY_MAX];
	if (in->comm < 0 || in->comm >= p->ncomms)
		return plan_verify_instr_errorf(p, d, i, "comm %d, the plan has %d", in->comm, p->ncomms);
	int n = p->comms[in->comm].n, rank = a->shape.rank;
	bool reduces = in->kind == PLAN_ALL_REDUCE || in->kind == PLAN_REDUCE_SCATTER;
	if (reduces && (unsigned)in->reduce >= PLAN_REDUCE_COUNT)
		return plan_verify_instr_errorf(p, d, i, "reduction %d is not a reduction", (int)in->reduce);
	if (in->kind != PLAN_ALL_REDUCE && (in->axis < 0 || in->axis >= rank))
		return plan_verify_instr_errorf(p, d, i, "axis %d is not a dimension of input buffer %d %s", in->axis,
						ia, ty(as, a->dtype, &a->shape));
	if (in->kind == PLAN_ALL_TO_ALL && (in->axis2 < 0 || in->axis2 >= rank))
		return plan_verify_instr_errorf(p, d, i, "axis2 %d is not a dimension of input buffer %d %s", in->axis2,
						ia, ty(as, a->dtype, &a->shape));
	/* Compare without multiplying: scale both sides down by n where the
	 * collective scales up, so absurd sizes cannot overflow. */
	struct ir_shape sa = a->shape, so = o->shape;
	bool ok = a->dtype == o->dtype && rank == o->shape.rank;
	switch (in->kind) {
	case PLAN_ALL_GATHER:
		ok = ok && shrink(&so, in->axis, n);
		break;
	case PLAN_REDUCE_SCATTER:
		ok = ok && shrink(&sa, in->axis, n);
		break;
	case PLAN_ALL_TO_ALL:
		ok = ok && shrink(&sa, in->axis, n) && shrink(&so, in->axis2, n);
		break;
	case PLAN_ALL_REDUCE:
	case PLAN_KERNEL:
	case PLAN_SEND:
	case PLAN_RECV:
	case PLAN_COPY:
	case PLAN_FREE:
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	if (ok && ir_shape_eq(&sa, &so))
		return 0;
	char how[96] = "";
	if (in->kind == PLAN_ALL_TO_ALL)
		snprintf(how, sizeof how, " from axis %d to axis %d", in->axis, in->axis2);
	else if (in->kind != PLAN_ALL_REDUCE)
		snprintf(how, sizeof how, " along axis %d", in->axis);
	return plan_verify_instr_errorf(
		p, d, i,
		"input buffer %d is %s and output buffer %d is %s: %s over %d ranks%s does not map one to the other",
		ia, ty(as, a->dtype, &a->shape), io, ty(os, o->dtype, &o->shape), plan_instr_kind_name(in->kind), n,
		how);
}

static int check_instr(const struct plan *p, int d, int i)
{
	const struct plan_device *dev = &p->devices[d];
	const struct plan_instr *in = &dev->instr[i];
	if ((unsigned)in->kind >= PLAN_INSTR_KIND_COUNT)
		return plan_verify_instr_errorf(p, d, i, "kind %d is not an instruction kind", (int)in->kind);
	if (in->arg < 0 || in->nin < 0 || in->nout < 0 || (int64_t)in->arg + in->nin + in->nout > dev->nargs)
		return plan_verify_instr_errorf(p, d, i, "arguments [%d, %lld) lie outside the device's %d", in->arg,
						(long long)in->arg + in->nin + in->nout, dev->nargs);
	for (int j = 0; j < in->nin + in->nout; j++) {
		int id = dev->args[in->arg + j];
		if (id < 0 || id >= dev->nbuf)
			return plan_verify_instr_errorf(p, d, i, "operand %d is buffer %d, the device has %d buffers",
							j, id, dev->nbuf);
	}
	int nin = 1, nout = 1;
	switch (in->kind) {
	case PLAN_KERNEL:
		if (in->kernel < 0 || in->kernel >= p->nkernels)
			return plan_verify_instr_errorf(p, d, i, "kernel %d, the plan has %d", in->kernel, p->nkernels);
		nin = p->kernels[in->kernel].nin;
		nout = p->kernels[in->kernel].nout;
		break;
	case PLAN_SEND:
	case PLAN_FREE:
		nout = 0;
		break;
	case PLAN_RECV:
		nin = 0;
		break;
	case PLAN_ALL_REDUCE:
	case PLAN_ALL_GATHER:
	case PLAN_REDUCE_SCATTER:
	case PLAN_ALL_TO_ALL:
	case PLAN_COPY:
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	if (in->nin != nin || in->nout != nout)
		return plan_verify_instr_errorf(p, d, i, "has %d inputs and %d outputs, it needs %d and %d", in->nin,
						in->nout, nin, nout);
	int ia = nin ? dev->args[in->arg] : -1, io = nout ? dev->args[in->arg + nin] : -1;
	switch (in->kind) {
	case PLAN_KERNEL:
		return check_kernel_operands(p, d, i);
	case PLAN_ALL_REDUCE:
	case PLAN_ALL_GATHER:
	case PLAN_REDUCE_SCATTER:
	case PLAN_ALL_TO_ALL:
		return check_collective(p, d, i, ia, io);
	case PLAN_SEND:
	case PLAN_RECV:
		if (in->peer < 0 || in->peer >= p->ndevices || in->peer == d)
			return plan_verify_instr_errorf(p, d, i, "peer %d is not another device of the plan's %d",
							in->peer, p->ndevices);
		return 0;
	case PLAN_COPY:
		if (dev->buf[ia].bytes != dev->buf[io].bytes)
			return plan_verify_instr_errorf(p, d, i,
							"copies buffer %d of %lld bytes into buffer %d of %lld bytes",
							ia, (long long)dev->buf[ia].bytes, io,
							(long long)dev->buf[io].bytes);
		return 0;
	case PLAN_FREE:
		/* A bound buffer holds a parameter, input or output for the whole
		 * run: freeing it would hand its bytes to a temporary. */
		if (dev->buf[ia].bind != PLAN_BIND_NONE)
			return plan_verify_instr_errorf(p, d, i, "frees buffer %d, which is bound to %s %d", ia,
							bind_names[dev->buf[ia].bind], dev->buf[ia].index);
		return 0;
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	return 0;
}

/* ---- dataflow --------------------------------------------------------- */

static void touch(struct scratch *s, int b, int i)
{
	if (s->span[b].first < 0)
		s->span[b].first = i;
	s->span[b].last = i;
}

/* Walks the program in order: reads need a live buffer, writes revive
 * nothing freed; records each temporary's span for the memory sweep. */
static int check_dataflow(const struct plan *p, int d, struct scratch *s)
{
	const struct plan_device *dev = &p->devices[d];
	for (int b = 0; b < dev->nbuf; b++) {
		enum plan_bind bind = dev->buf[b].bind;
		s->state[b] = bind == PLAN_BIND_NONE || bind == PLAN_BIND_OUTPUT ? UNWRITTEN : LIVE;
		s->span[b] = (struct span){ -1, -1 };
	}
	for (int i = 0; i < dev->ninstr; i++) {
		const struct plan_instr *in = &dev->instr[i];
		const int *args = dev->args + in->arg;
		bool frees = in->kind == PLAN_FREE;
		for (int j = 0; j < in->nin; j++) {
			int b = args[j];
			if (s->state[b] == FREED && frees)
				return plan_verify_instr_errorf(p, d, i,
								"frees buffer %d again (instruction %d freed it)", b,
								s->span[b].last);
			if (s->state[b] == FREED)
				return plan_verify_instr_errorf(p, d, i,
								"reads buffer %d after it is freed (at instruction %d)",
								b, s->span[b].last);
			if (s->state[b] == UNWRITTEN)
				return plan_verify_instr_errorf(p, d, i, "%s buffer %d before it is written",
								frees ? "frees" : "reads", b);
			touch(s, b, i);
		}
		if (frees)
			s->state[args[0]] = FREED;
		for (int j = in->nin; j < in->nin + in->nout; j++) {
			int b = args[j];
			if (s->state[b] == FREED)
				return plan_verify_instr_errorf(
					p, d, i, "writes buffer %d after it is freed (at instruction %d)", b,
					s->span[b].last);
			if (dev->buf[b].bind == PLAN_BIND_OUTPUT &&
			    p->outputs[dev->buf[b].index].per_step != (i >= plan_step_first(dev)))
				return plan_verify_instr_errorf(p, d, i,
								"writes output %d once per %s; it is read once per %s",
								dev->buf[b].index,
								i >= plan_step_first(dev) ? "step" : "micro-batch",
								p->outputs[dev->buf[b].index].per_step ? "step"
												       : "micro-batch");
			s->state[b] = LIVE;
			touch(s, b, i);
		}
	}
	for (int b = 0; b < dev->nbuf; b++)
		if (dev->buf[b].bind == PLAN_BIND_OUTPUT && s->state[b] != LIVE)
			return ir_errorf(-EINVAL, "device %d: output buffer %d is never written", d, b);
	return 0;
}

/* ---- memory ----------------------------------------------------------- */

static int cmp_event(const void *x, const void *y)
{
	const struct event *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

/* The first live buffer whose bytes start at or after off. */
static int lower_bound(const struct placed *live, int n, int64_t off)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (live[mid].lo < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* A pipelined program: a temporary the forward part writes and the
 * backward part reads, or an input the backward part reads, lives across
 * other micro-batches' parts: it needs a slot per micro-batch in flight
 * (one when it holds the same bytes in every micro-batch,
 * plan_invariant_instr) and bytes no other per-micro-batch buffer uses. Its span becomes the whole
 * per-micro-batch part. */
static int check_crossing(const struct plan *p, int d, struct scratch *s)
{
	const struct plan_device *dev = &p->devices[d];
	int need = s->need[dev->stage], sf = plan_step_first(dev), nb = dev->nbuf;
	unsigned char *inv = s->state + nb;
	memset(s->state, 0, (size_t)nb);
	for (int b = 0; b < nb; b++)
		inv[b] = plan_invariant_init(dev->buf[b].bind);
	for (int i = 0; i < sf; i++) {
		const struct plan_instr *in = &dev->instr[i];
		plan_invariant_instr(inv, in->kind, dev->args + in->arg, in->nin, in->nout);
		if (in->kind == PLAN_FREE)
			s->state[dev->args[in->arg]] |= 2;
		else
			for (int j = 0; i >= dev->nfwd && j < in->nin; j++)
				s->state[dev->args[in->arg + j]] |= 1;
	}
	for (int b = 0; b < nb; b++) {
		const struct plan_buffer *bf = &dev->buf[b];
		bool crosses = (s->state[b] & 1) &&
			       (bf->bind == PLAN_BIND_INPUT ||
				(bf->bind == PLAN_BIND_NONE && s->span[b].first >= 0 && s->span[b].first < dev->nfwd));
		if (!crosses)
			continue;
		if (plan_buffer_slots(bf) < need && inv[b] != PLAN_INVARIANT)
			return buf_errorf(d, b,
					  "is read by the backward part of the micro-batch whose forward part "
					  "%s it, and has %d slots for the %d micro-batches in flight",
					  bf->bind == PLAN_BIND_INPUT ? "reads" : "writes", plan_buffer_slots(bf),
					  need);
		if (plan_buffer_slots(bf) < need && (s->state[b] & 2))
			return buf_errorf(d, b,
					  "serves the %d micro-batches in flight in %d slot%s (the same bytes in "
					  "each), yet a backward part frees it",
					  need, plan_buffer_slots(bf), plan_buffer_slots(bf) == 1 ? "" : "s");
		s->span[b] = (struct span){ 0, sf };
	}
	return 0;
}

static int check_memory(const struct plan *p, int d, struct scratch *s)
{
	const struct plan_device *dev = &p->devices[d];
	int n = 0, nlive = 0;
	if (dev->nfwd) {
		int r = check_crossing(p, d, s);
		if (r < 0)
			return r;
	}
	for (int b = 0; b < dev->nbuf; b++) {
		const struct plan_buffer *bf = &dev->buf[b];
		struct span sp = { 0, dev->ninstr };
		if (bf->bind == PLAN_BIND_NONE)
			sp = s->span[b];
		if (bf->bytes == 0 || sp.first < 0)
			continue;
		s->start[n] = (struct event){ sp.first, b };
		s->end[n++] = (struct event){ sp.last, b };
	}
	qsort(s->start, (size_t)n, sizeof *s->start, cmp_event);
	qsort(s->end, (size_t)n, sizeof *s->end, cmp_event);
	for (int k = 0, e = 0; k < n; k++) {
		int t = s->start[k].t, b = s->start[k].id;
		for (; e < n && s->end[e].t < t; e++) {
			int at = lower_bound(s->live, nlive, dev->buf[s->end[e].id].offset);
			IR_ASSERT(at < nlive && s->live[at].id == s->end[e].id);
			memmove(s->live + at, s->live + at + 1, (size_t)(nlive - at - 1) * sizeof *s->live);
			nlive--;
		}
		const struct plan_buffer *bf = &dev->buf[b];
		struct placed me = { bf->offset,
				     bf->offset + plan_slot_stride(bf) * (plan_buffer_slots(bf) - 1) + bf->bytes, b };
		int at = lower_bound(s->live, nlive, me.lo);
		const struct placed *other = NULL;
		if (at > 0 && s->live[at - 1].hi > me.lo)
			other = &s->live[at - 1];
		else if (at < nlive && s->live[at].lo < me.hi)
			other = &s->live[at];
		if (other) {
			const struct placed *x = other->id < me.id ? other : &me, *y = other->id < me.id ? &me : other;
			return ir_errorf(
				-EINVAL,
				"device %d: buffers %d and %d overlap (bytes [%lld, %lld) and [%lld, %lld)) while both live at instruction %d",
				d, x->id, y->id, (long long)x->lo, (long long)x->hi, (long long)y->lo, (long long)y->hi,
				t);
		}
		memmove(s->live + at + 1, s->live + at, (size_t)(nlive - at) * sizeof *s->live);
		s->live[at] = me;
		nlive++;
	}
	return 0;
}

/* ---- entry ------------------------------------------------------------ */

static void scratch_free(struct scratch *s)
{
	ir_free(s->state);
	ir_free(s->span);
	ir_free(s->start);
	ir_free(s->end);
	ir_free(s->live);
	ir_free(s->need);
}

/* n: the most buffers a device has. The slots each stage's schedule needs
 * are found once here, not once per device. */
static int scratch_alloc(const struct plan *p, struct scratch *s, int n)
{
	size_t m = (size_t)(n ? n : 1);
	s->state = ir_malloc(2 * m); /* check_crossing: two bytes a buffer */
	s->span = ir_malloc(m * sizeof *s->span);
	s->start = ir_malloc(m * sizeof *s->start);
	s->end = ir_malloc(m * sizeof *s->end);
	s->live = ir_malloc(m * sizeof *s->live);
	s->need = ir_malloc((size_t)p->nstages * sizeof *s->need);
	if (!s->state || !s->span || !s->start || !s->end || !s->live || !s->need)
		return ir_errorf(-ENOMEM, "plan: out of memory while verifying");
	for (int i = 0; i < p->nstages; i++)
		s->need[i] = plan_schedule_slots(p->stages[i].order, p->stages[i].norder);
	return 0;
}

static int check_tables(const struct plan *p)
{
	int r = check_header(p);
	if (r < 0)
		return r;
	r = check_stages(p);
	if (r < 0)
		return r;
	int *seen = ir_calloc((size_t)p->ndevices, sizeof *seen);
	if (!seen)
		return ir_errorf(-ENOMEM, "plan: out of memory while verifying");
	r = check_comms(p, seen);
	ir_free(seen);
	if (r < 0)
		return r;
	r = plan_verify_kernels(p);
	if (r == 0)
		r = check_tensors("parameter", p->params, p->nparams);
	if (r == 0)
		r = check_tensors("input", p->inputs, p->ninputs);
	if (r == 0)
		r = check_tensors("output", p->outputs, p->noutputs);
	return r;
}

int plan_verify(const struct plan *p)
{
	struct scratch s = { 0 };
	int r = check_tables(p), most = 0;
	for (int d = 0; d < p->ndevices && r == 0; d++) {
		r = check_buffers(p, d);
		if (p->devices[d].nbuf > most)
			most = p->devices[d].nbuf;
	}
	if (r == 0)
		r = scratch_alloc(p, &s, most);
	for (int d = 0; d < p->ndevices && r == 0; d++) {
		for (int i = 0; i < p->devices[d].ninstr && r == 0; i++)
			r = check_instr(p, d, i);
		if (r == 0)
			r = check_dataflow(p, d, &s);
		if (r == 0)
			r = check_memory(p, d, &s);
	}
	scratch_free(&s);
	if (r == 0)
		r = plan_verify_outputs(p);
	if (r == 0)
		r = plan_verify_comm(p);
	return r;
}
