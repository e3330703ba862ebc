/*
 * exec.c: one instruction of a device program at a time (rt.h). Kernels run
 * generated host code, pcc-run's host ops or the reference interpreter's
 * op over the arena's buffers (kernels.c); collectives pack, call the
 * communication table and unpack (collective.c), starting early and
 * finishing late where the step's trace allows (overlap.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "runtime/exec_internal.h"

void *rt_buf(const struct rt *r, const struct plan_buffer *b)
{
	return r->arena + b->offset + plan_slot_stride(b) * (r->mb % plan_buffer_slots(b));
}

int rt_run_kernel_on(struct rt *r, int kernel, void *const *buf)
{
	int rc;
	if (rt_kernel_host_on(r, kernel, buf, &rc))
		return rc;
	const struct plan_kernel *k = &r->p->kernels[kernel];
	struct ir_tensor tin[256], tout[2];
	if (k->nin > 256 || k->nout > 2)
		return ir_errorf(-EINVAL, "kernel %d has %d operands and %d results", kernel, k->nin, k->nout);
	for (int j = 0; j < k->nin; j++)
		tin[j] = (struct ir_tensor){ k->dtype[j], k->shape[j], buf[j] };
	if ((rc = interp_kernel(k, tin, tout)) < 0)
		return rc;
	for (int j = 0; j < k->nout; j++) {
		memcpy(buf[k->nin + j], tout[j].data, ir_tensor_bytes(&tout[j]));
		ir_tensor_free(&tout[j]);
	}
	return 0;
}

int rt_run_kernel(struct rt *r, const struct plan_instr *x)
{
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	void *buf[258];
	if (k->nin > 256 || k->nout > 2)
		return ir_errorf(-EINVAL, "kernel %d has %d operands and %d results", x->kernel, k->nin, k->nout);
	for (int j = 0; j < k->nin + k->nout; j++)
		buf[j] = rt_buf(r, rt_arg(r, x, j));
	return rt_run_kernel_on(r, x->kernel, buf);
}

static int run_one(struct rt *r, const struct plan_instr *x, int pos)
{
	const struct rt_comm_ops *c = r->c->ops;
	struct rt_overlap *ov = pos >= 0 ? r->ov : NULL;
	switch (x->kind) {
	case PLAN_KERNEL:
		return rt_run_kernel(r, x);
	case PLAN_COPY:
		memcpy(rt_buf(r, rt_arg(r, x, 1)), rt_buf(r, rt_arg(r, x, 0)), (size_t)rt_arg(r, x, 0)->bytes);
		return 0;
	case PLAN_FREE:
		return 0;
	case PLAN_SEND:
		return c->send(r->c, rt_buf(r, rt_arg(r, x, 0)), (size_t)rt_arg(r, x, 0)->bytes, x->peer, x->tag);
	case PLAN_RECV:
		r->n_recv++;
		if (ov)
			return rt_overlap_finish(r, pos);
		return c->recv(r->c, rt_buf(r, rt_arg(r, x, x->nin)), (size_t)rt_arg(r, x, x->nin)->bytes, x->peer,
			       x->tag, NULL);
	case PLAN_ALL_REDUCE:
	case PLAN_ALL_GATHER:
	case PLAN_REDUCE_SCATTER:
	case PLAN_ALL_TO_ALL: {
		r->n_coll++;
		if (ov && rt_overlap_started(ov, pos))
			return 0;
		int rc = ov && rt_overlap_early(ov, pos) ? rt_overlap_start_async(r, x, pos) : 0;
		return rc == 0 ? rt_collective(r, x) : rc < 0 ? rc : 0;
	}
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
	if (!ok ||
	    (ckpt ? strcmp(kind, "enospc")
		  : strcmp(kind, "exit") && strcmp(kind, "hang") && strcmp(kind, "error") && strcmp(kind, "assert")))
		return ir_errorf(-EINVAL,
				 "PCC_RUN_FAULT=%s: expected RANK:INSTRUCTION:exit|hang|error|assert[:STEP] or "
				 "RANK:ckpt:enospc[:STEP]",
				 spec);
	/* a fault that can never fire would pass a test for the wrong reason */
	if (rank >= p->ndevices)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: rank %ld does not exist (the plan has ranks 0 to %d)",
				 spec, rank, p->ndevices - 1);
	if (instr >= p->devices[rank].ninstr)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: rank %ld has no instruction %ld (its program has %d)",
				 spec, rank, instr, p->devices[rank].ninstr);
	if (step > steps)
		return ir_errorf(-EINVAL, "PCC_RUN_FAULT=%s: step %ld is past the run's last step (%ld)", spec, step,
				 steps);
	r->fault = (struct rt_fault){ (int)rank, (int)instr, step - 1,
				      ckpt                               ? 'n'
				      : kind[0] == 'e' && kind[1] == 'x' ? 'x'
									 : kind[0] };
	return 0;
}

static int inject(const struct rt *r, int i)
{
	if (r->fault.kind == 0 || r->fault.kind == 'n' || r->fault.rank != r->c->rank || r->fault.instr != i ||
	    r->fault.step != r->step)
		return 0;
	if (r->fault.kind == 'x')
		_exit(9);
	IR_ASSERT(r->fault.kind != 'a' && "PCC_RUN_FAULT injected a broken invariant");
	while (r->fault.kind == 'h')
		sleep(1000);
	return ir_errorf(-EIO, "injected fault");
}

int rt_run(struct rt *r, const struct rt_seg *s)
{
	/* one clock read per instruction (two with overlap): each one's end is
	 * the next one's start */
	double t0 = ir_now();
	for (int i = s->lo; i < s->hi; i++) {
		const struct plan_instr *x = &r->d->instr[i];
		int pos = r->ov ? s->pos + 1 + i - s->lo : -1;
		r->pc = i;
		struct rt_comm_progress *g = r->c->prog; /* for a peer's watchdog (comm.h) */
		g->step = r->step;
		g->mb = r->mb;
		g->instr = i;
		g->kind = x->kind;
		g->op = x->kind == PLAN_KERNEL ? (int32_t)r->p->kernels[x->kernel].op : -1;
		g->since = t0;
		int rc = rt_overlap_at(r, pos);
		if (rc < 0) /* named the instruction that started it */
			return rc;
		double tw = r->ov ? ir_now() : t0;
		rc = inject(r, i);
		if (rc == 0)
			rc = r->gpu ? rt_gpu_run(r, x, i) : run_one(r, x, pos);
		double t1 = ir_now(), t = t1 - tw;
		if (r->trace)
			rt_trace_instr(r, x, i, pos, tw, t1);
		r->t_comm += tw - t0;
		t0 = t1;
		if (x->kind == PLAN_KERNEL) {
			r->t_kernel += t;
			if (plan_kernel_core(&r->p->kernels[x->kernel]) == IR_OP_DOT)
				r->t_gemm += t;
			if (r->prof_time && !r->gpu) { /* a GPU's: CUDA events (gpu_exec.c) */
				r->prof_time[x->kernel] += t;
				r->prof_calls[x->kernel]++;
			}
		} else {
			r->t_comm += t;
		}
		if (rc < 0) {
			ir_error_prefix("instruction %d (%s%s%s)", i, plan_instr_kind_name(x->kind),
					x->kind == PLAN_KERNEL ? " " : "",
					x->kind == PLAN_KERNEL ? ir_op_name(r->p->kernels[x->kernel].op) : "");
			return rc;
		}
	}
	return 0;
}
