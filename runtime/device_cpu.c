/*
 * device_cpu.c: the host as the device (device.h). The arena is the host's
 * (rt_init's), so put and get have nothing to move; kernels run generated
 * host code, pcc-run's host ops or the reference interpreter's op over the
 * arena's buffers (kernels.c), a dot through the host's BLAS
 * (kernels_gemm.c); collectives pack, call the communication table and
 * unpack (collective.c), and receives and collectives start early and
 * finish late where the step's trace allows (overlap.c). Work is done when
 * its entry returns: an event is the host's clock.
 */
#include <errno.h>
#include <string.h>

#include "runtime/exec_internal.h"

struct rt_event {
	double t;
};

static int cpu_open(struct rt *r, bool tf32)
{
	(void)r, (void)tf32;
	return 0;
}

static int cpu_connect(struct rt *r)
{
	(void)r;
	return 0;
}

static void cpu_close(struct rt *r)
{
	(void)r;
}

static int cpu_alloc(struct rt *r, size_t n, const char *what, uint64_t *addr)
{
	char b[IR_BYTES_STRLEN];
	void *p = ir_malloc(n ? n : 1);
	(void)r;
	if (!p)
		return ir_errorf(-ENOMEM, "cannot allocate %s (%s) on the host", what, ir_bytes_str((double)n, b));
	*addr = (uint64_t)(uintptr_t)p;
	return 0;
}

static void cpu_free(struct rt *r, uint64_t addr)
{
	(void)r;
	ir_free((void *)(uintptr_t)addr);
}

static int cpu_put(struct rt *r, const struct plan_buffer *b)
{
	(void)r, (void)b;
	return 0;
}

static int cpu_fill(struct rt *r, const struct plan_buffer *b, uint8_t byte)
{
	memset(rt_buf(r, b), byte, (size_t)b->bytes);
	return 0;
}

static int cpu_copy(struct rt *r, const struct plan_instr *x)
{
	memcpy(rt_buf(r, rt_arg(r, x, 1)), rt_buf(r, rt_arg(r, x, 0)), (size_t)rt_arg(r, x, 0)->bytes);
	return 0;
}

/* A kernel whose core is a dot (plan_kernel_core): the host's BLAS, then
 * its generated epilogue in place (kernels.c). */
static bool cpu_gemm(struct rt *r, const struct plan_instr *x, int *rc)
{
	*rc = 0;
	if (plan_kernel_core(&r->p->kernels[x->kernel]) != IR_OP_DOT)
		return false;
	*rc = rt_run_kernel(r, x);
	return true;
}

static int cpu_launch(struct rt *r, const struct plan_instr *x, int i)
{
	(void)i;
	return rt_run_kernel(r, x);
}

static int cpu_transfer(struct rt *r, const struct plan_instr *x, int pos)
{
	const struct rt_comm_ops *c = r->c->ops;
	if (x->kind == PLAN_SEND)
		return c->send(r->c, rt_buf(r, rt_arg(r, x, 0)), (size_t)rt_arg(r, x, 0)->bytes, x->peer, x->tag);
	r->n_recv++;
	if (r->ov && pos >= 0)
		return rt_overlap_finish(r, pos);
	return c->recv(r->c, rt_buf(r, rt_arg(r, x, x->nin)), (size_t)rt_arg(r, x, x->nin)->bytes, x->peer, x->tag,
		       NULL);
}

static int cpu_collective(struct rt *r, const struct plan_instr *x, int pos)
{
	struct rt_overlap *ov = pos >= 0 ? r->ov : NULL;
	r->n_coll++;
	if (ov && rt_overlap_started(ov, pos))
		return 0;
	int rc = ov && rt_overlap_early(ov, pos) ? rt_overlap_start_async(r, x, pos) : 0;
	return rc == 0 ? rt_collective(r, x) : rc < 0 ? rc : 0;
}

static bool cpu_traced(const struct rt *r, const struct plan_instr *x, int pos)
{
	return r->ov && (x->kind == PLAN_RECV || (plan_instr_is_collective(x->kind) && rt_overlap_started(r->ov, pos)));
}

static int cpu_sync(struct rt *r)
{
	(void)r;
	return 0;
}

static int cpu_event_record(struct rt *r, struct rt_event **ev)
{
	(void)r;
	if (!(*ev = ir_malloc(sizeof **ev)))
		return ir_errorf(-ENOMEM, "out of memory for an event");
	(*ev)->t = ir_now();
	return 0;
}

static int cpu_event_elapsed(struct rt *r, struct rt_event *a, struct rt_event *b, double *seconds)
{
	(void)r;
	*seconds = b->t - a->t;
	return 0;
}

static void cpu_event_free(struct rt *r, struct rt_event *ev)
{
	(void)r;
	ir_free(ev);
}

static int cpu_profile_check(const struct rt *r, double *peak_bw)
{
	(void)r;
	*peak_bw = 0;
	return 0;
}

static const char *cpu_kernel_how(const struct rt *r, int k)
{
	(void)r, (void)k;
	return NULL;
}

static int cpu_fallback_report(const struct rt *r, char *buf, size_t n)
{
	(void)r;
	if (n)
		buf[0] = 0;
	return 0;
}

const struct rt_device_ops rt_device_cpu = {
	.name = "cpu",
	.clock = "host clock",
	.host_arena = true,
	.issues = false,
	.open = cpu_open,
	.connect = cpu_connect,
	.close = cpu_close,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.put = cpu_put,
	.get = cpu_put,
	.fill = cpu_fill,
	.copy = cpu_copy,
	.gemm = cpu_gemm,
	.launch = cpu_launch,
	.transfer = cpu_transfer,
	.collective = cpu_collective,
	.plan_step = rt_overlap_init,
	.at = rt_overlap_at,
	.traced = cpu_traced,
	.sync = cpu_sync,
	.event_record = cpu_event_record,
	.event_elapsed = cpu_event_elapsed,
	.event_free = cpu_event_free,
	.profile_check = cpu_profile_check,
	.kernel_how = cpu_kernel_how,
	.fallback_report = cpu_fallback_report,
};
