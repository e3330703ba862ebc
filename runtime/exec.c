/*
 * exec.c: one instruction of a device program at a time (rt.h). Kernels run
 * the reference interpreter's op over the arena's buffers; collectives
 * pack their operands into rank-major blocks for the communication table
 * and unpack the result along the plan's axes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt.h"

void *rt_buf(const struct rt *r, const struct plan_buffer *b)
{
	return r->arena + b->offset + plan_slot_stride(b) * (r->mb % plan_buffer_slots(b));
}

static const struct plan_buffer *arg(const struct rt *r, const struct plan_instr *x, int j)
{
	return &r->d->buf[r->d->args[x->arg + j]];
}

static uint8_t *scratch(struct rt *r, size_t n)
{
	if (n > r->nscratch) {
		uint8_t *s = ir_realloc(r->scratch, n);
		if (!s)
			return NULL;
		r->scratch = s;
		r->nscratch = n;
	}
	return r->scratch;
}

int rt_run_kernel(struct rt *r, const struct plan_instr *x)
{
	if (rt_kernel_host(r, x))
		return 0;
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	struct ir_tensor tin[256], tout[2];
	if (k->nin > 256 || k->nout > 2)
		return ir_errorf(-EINVAL, "kernel %d has %d operands and %d results", x->kernel, k->nin, k->nout);
	for (int j = 0; j < k->nin; j++)
		tin[j] = (struct ir_tensor){ k->dtype[j], k->shape[j], rt_buf(r, arg(r, x, j)) };
	int rc = interp_kernel(k, tin, tout);
	if (rc < 0)
		return rc;
	for (int j = 0; j < k->nout; j++) {
		memcpy(rt_buf(r, arg(r, x, k->nin + j)), tout[j].data, ir_tensor_bytes(&tout[j]));
		ir_tensor_free(&tout[j]);
	}
	return 0;
}

static int comm_size(const struct rt *r, const struct plan_instr *x)
{
	return r->p->comms[x->comm].n;
}

/* out = every rank's in concatenated along axis, in rank order. */
static int all_gather(struct rt *r, const struct plan_instr *x)
{
	const struct plan_buffer *in = arg(r, x, 0), *out = arg(r, x, 1);
	int n = comm_size(r, x);
	bool lead = true; /* the gathered axis is the outermost that is not 1 */
	for (int a = 0; a < x->axis; a++)
		lead = lead && in->shape.dims[a] == 1;
	if (lead)
		return r->c->ops->all_gather(r->c, x->comm, rt_buf(r, in), rt_buf(r, out), (size_t)in->bytes);
	uint8_t *s = scratch(r, (size_t)in->bytes * (size_t)n);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory packing an all_gather");
	int rc = r->c->ops->all_gather(r->c, x->comm, rt_buf(r, in), s, (size_t)in->bytes);
	for (int q = 0; q < n && rc == 0; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis] = q * in->shape.dims[x->axis];
		ir_copy_block(rt_buf(r, out), &out->shape, st, s + (size_t)q * (size_t)in->bytes, &in->shape, NULL,
			      &in->shape, ir_dtype_size(in->dtype));
	}
	return rc;
}

/* out = piece `comm rank` along axis of the sum of every rank's in. */
static int reduce_scatter(struct rt *r, const struct plan_instr *x)
{
	const struct plan_buffer *in = arg(r, x, 0), *out = arg(r, x, 1);
	int n = comm_size(r, x);
	uint8_t *s = scratch(r, (size_t)in->bytes);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory packing a reduce_scatter");
	for (int q = 0; q < n; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis] = q * out->shape.dims[x->axis];
		ir_copy_block(s + (size_t)q * (size_t)out->bytes, &out->shape, NULL, rt_buf(r, in), &in->shape, st,
			      &out->shape, ir_dtype_size(in->dtype));
	}
	return r->c->ops->reduce_scatter(r->c, x->comm, s, rt_buf(r, out), ir_shape_numel(&out->shape), in->dtype);
}

/* in cut into n pieces along axis, piece q to rank q; out = the received
 * pieces concatenated along axis2 in rank order. */
static int all_to_all(struct rt *r, const struct plan_instr *x)
{
	const struct plan_buffer *in = arg(r, x, 0), *out = arg(r, x, 1);
	int n = comm_size(r, x);
	struct ir_shape piece = in->shape;
	piece.dims[x->axis] /= n;
	size_t pb = (size_t)in->bytes / (size_t)n, es = ir_dtype_size(in->dtype);
	uint8_t *s = scratch(r, 2 * (size_t)in->bytes);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory packing an all_to_all");
	for (int q = 0; q < n; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis] = q * piece.dims[x->axis];
		ir_copy_block(s + (size_t)q * pb, &piece, NULL, rt_buf(r, in), &in->shape, st, &piece, es);
	}
	int rc = r->c->ops->all_to_all(r->c, x->comm, s, s + in->bytes, pb);
	for (int q = 0; q < n && rc == 0; q++) {
		int64_t st[IR_MAX_RANK] = { 0 };
		st[x->axis2] = q * piece.dims[x->axis2];
		ir_copy_block(rt_buf(r, out), &out->shape, st, s + in->bytes + (size_t)q * pb, &piece, NULL, &piece, es);
	}
	return rc;
}

static int run_one(struct rt *r, const struct plan_instr *x)
{
	const struct rt_comm_ops *c = r->c->ops;
	switch (x->kind) {
	case PLAN_KERNEL:
		return rt_run_kernel(r, x);
	case PLAN_COPY:
		memcpy(rt_buf(r, arg(r, x, 1)), rt_buf(r, arg(r, x, 0)), (size_t)arg(r, x, 0)->bytes);
		return 0;
	case PLAN_FREE:
		return 0;
	case PLAN_SEND:
		return c->send(r->c, rt_buf(r, arg(r, x, 0)), (size_t)arg(r, x, 0)->bytes, x->peer, x->tag);
	case PLAN_RECV:
		return c->recv(r->c, rt_buf(r, arg(r, x, x->nin)), (size_t)arg(r, x, x->nin)->bytes, x->peer, x->tag);
	case PLAN_ALL_REDUCE: {
		const struct plan_buffer *in = arg(r, x, 0);
		return c->all_reduce(r->c, x->comm, rt_buf(r, in), rt_buf(r, arg(r, x, 1)), ir_shape_numel(&in->shape),
				     in->dtype, x->reduce);
	}
	case PLAN_ALL_GATHER:
		return all_gather(r, x);
	case PLAN_REDUCE_SCATTER:
		return reduce_scatter(r, x);
	case PLAN_ALL_TO_ALL:
		return all_to_all(r, x);
	case PLAN_INSTR_KIND_COUNT:
		break;
	}
	return ir_errorf(-EINVAL, "unknown instruction kind %d", (int)x->kind);
}

/* A whole number from s up to its end or a ':', at least lo; *s moves past it. */
static bool fault_num(const char **s, long lo, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(*s, &end, 10);
	if (end == *s || errno || v < lo || (*end && *end != ':') || (**s < '0' || **s > '9'))
		return false;
	*out = v;
	*s = end;
	return true;
}

int rt_fault_parse(struct rt *r, const char *spec, long steps)
{
	const struct plan *p = r->p;
	long rank = 0, instr = -1, step = 1;
	char kind[16] = "";
	const char *s = spec;
	memset(&r->fault, 0, sizeof r->fault);
	if (!spec)
		return 0;
	bool ok = fault_num(&s, 0, &rank) && *s++ == ':';
	if (ok && !strncmp(s, "ckpt:", 5))
		s += 4;
	else
		ok = ok && fault_num(&s, 0, &instr);
	size_t k = ok && *s++ == ':' ? strcspn(s, ":") : 0;
	if (k > 0 && k < sizeof kind) {
		memcpy(kind, s, k);
		s += k;
	}
	ok = ok && k > 0 && k < sizeof kind && (*s == 0 || (*s++ == ':' && fault_num(&s, 1, &step) && !*s));
	bool ckpt = instr < 0;
	if (!ok || (ckpt ? strcmp(kind, "enospc") : strcmp(kind, "exit") && strcmp(kind, "hang") && strcmp(kind, "error")))
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: expected RANK:INSTRUCTION:exit|hang|error[:STEP] or "
				 "RANK:ckpt:enospc[:STEP]", spec);
	/* a fault that can never fire would pass a test for the wrong reason */
	if (rank >= p->ndevices)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: rank %ld does not exist (the plan has ranks 0 to %d)", spec,
				 rank, p->ndevices - 1);
	if (instr >= p->devices[rank].ninstr)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: rank %ld has no instruction %ld (its program has %d)", spec,
				 rank, instr, p->devices[rank].ninstr);
	if (step > steps)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: step %ld is past the run's last step (%ld)", spec, step,
				 steps);
	r->fault = (struct rt_fault){ (int)rank, (int)instr, step - 1,
				      ckpt ? 'n' : kind[0] == 'e' && kind[1] == 'x' ? 'x' : kind[0] };
	return 0;
}

static int inject(const struct rt *r, int i)
{
	if (r->fault.kind == 0 || r->fault.kind == 'n' || r->fault.rank != r->c->rank || r->fault.instr != i ||
	    r->fault.step != r->step)
		return 0;
	if (r->fault.kind == 'x')
		_exit(9);
	while (r->fault.kind == 'h')
		sleep(1000);
	return ir_errorf(-EIO, "injected fault");
}

int rt_run(struct rt *r, int lo, int hi)
{
	for (int i = lo; i < hi; i++) {
		const struct plan_instr *x = &r->d->instr[i];
		double t0 = ir_now();
		r->pc = i;
		int rc = inject(r, i);
		if (rc == 0)
			rc = r->gpu ? rt_gpu_run(r, x, i) : run_one(r, x);
		double t = ir_now() - t0;
		if (x->kind == PLAN_KERNEL)
			r->t_kernel += t;
		else
			r->t_comm += t;
		if (rc < 0) {
			ir_error_prefix("instruction %d (%s%s%s)", i, plan_instr_kind_name(x->kind),
					x->kind == PLAN_KERNEL ? " " : "",
					x->kind == PLAN_KERNEL ? ir_op_name(r->p->kernels[x->kernel].op) : "");
			return rc;
		}
	}
	return 0;
}
