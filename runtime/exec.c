/*
 * exec.c: one instruction of a device program at a time (rt.h), each
 * through the device table (device.h), which never tells the executor
 * which device it is: a kernel is a GEMM or a launch, timed by the
 * device's events under --profile; copies, transfers and collectives are
 * the device's. Faults injected for the tests (PCC_RUN_FAULT).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt.h"

/* Kernel instruction i (x): a GEMM where the device runs it as one, else
 * its code; timed by a pair of the device's events under --profile. */
static int kernel(struct rt *r, const struct plan_instr *x, int i)
{
	const struct rt_device_ops *dev = r->dev;
	struct rt_event *a = NULL, *b = NULL;
	int rc = 0;
	if (r->prof_time && (rc = dev->event_record(r, &a)) < 0)
		return rc;
	if (!dev->gemm(r, x, &rc))
		rc = dev->launch(r, x, i);
	if (!r->prof_time)
		return rc;
	if (rc == 0)
		rc = dev->event_record(r, &b);
	if (rc == 0 && r->ntimed == r->captimed) {
		int cap = r->captimed ? 2 * r->captimed : 256;
		struct rt_timed *v = ir_realloc(r->timed, (size_t)cap * sizeof *v);
		if (!v)
			rc = ir_errorf(-ENOMEM, "out of memory for the profile");
		else {
			r->timed = v;
			r->captimed = cap;
		}
	}
	if (rc < 0) {
		if (a)
			dev->event_free(r, a);
		if (b)
			dev->event_free(r, b);
		return rc;
	}
	r->timed[r->ntimed++] = (struct rt_timed){ a, b, x->kernel };
	return 0;
}

void rt_timed_release(struct rt *r)
{
	for (int k = 0; k < r->ntimed; k++) {
		r->dev->event_free(r, r->timed[k].a);
		r->dev->event_free(r, r->timed[k].b);
	}
	ir_free(r->timed);
	r->timed = NULL;
	r->ntimed = r->captimed = 0;
}

int rt_sync(struct rt *r)
{
	int rc = r->dev->sync(r);
	for (int k = 0; k < r->ntimed; k++) {
		struct rt_timed *t = &r->timed[k];
		double s = 0;
		if (rc == 0)
			rc = r->dev->event_elapsed(r, t->a, t->b, &s);
		if (rc == 0) {
			r->prof_time[t->kernel] += s;
			r->prof_calls[t->kernel]++;
		}
		r->dev->event_free(r, t->a);
		r->dev->event_free(r, t->b);
	}
	r->ntimed = 0;
	return rc;
}

static int run_one(struct rt *r, const struct plan_instr *x, int i, int pos)
{
	const struct rt_device_ops *dev = r->dev;
	switch (x->kind) {
	case PLAN_KERNEL:
		return kernel(r, x, i);
	case PLAN_COPY:
		return dev->copy(r, x);
	case PLAN_FREE: /* the tests' poison: a read after the free shows as NaN */
		return r->poison ? dev->fill(r, &r->d->buf[r->d->args[x->arg]], 0xff) : 0;
	case PLAN_SEND:
	case PLAN_RECV:
		return dev->transfer(r, x, pos);
	case PLAN_ALL_REDUCE:
	case PLAN_ALL_GATHER:
	case PLAN_REDUCE_SCATTER:
	case PLAN_ALL_TO_ALL:
		return dev->collective(r, x, pos);
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
		int pos = s->pos + 1 + i - s->lo;
		r->pc = i;
		struct rt_comm_progress *g = r->c->prog; /* for a peer's watchdog (comm.h) */
		g->step = r->step;
		g->mb = r->mb;
		g->instr = i;
		g->kind = x->kind;
		g->op = x->kind == PLAN_KERNEL ? (int32_t)r->p->kernels[x->kernel].op : -1;
		g->since = t0;
		int rc = r->dev->at ? r->dev->at(r, pos) : 0;
		if (rc < 0) /* named the instruction that started it */
			return rc;
		double tw = r->dev->at ? ir_now() : t0;
		rc = inject(r, i);
		if (rc == 0)
			rc = run_one(r, x, i, pos);
		double t1 = ir_now(), t = t1 - tw;
		if (r->trace)
			rt_trace_instr(r, x, i, pos, tw, t1);
		r->t_comm += tw - t0;
		t0 = t1;
		if (x->kind == PLAN_KERNEL) {
			r->t_kernel += t;
			if (plan_kernel_core(&r->p->kernels[x->kernel]) == IR_OP_DOT)
				r->t_gemm += t;
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
