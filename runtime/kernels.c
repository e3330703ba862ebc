/*
 * kernels.c: the generated host kernels of a plan (compiler/codegen/codegen.h),
 * loaded from the plan's object (hostcode.c) and run across this rank's
 * threads (pool.c). A kernel without host code, or every kernel with
 * --reference, runs the reference interpreter's kernels instead, except
 * for dots and convolutions (kernels_gemm.c), window ops and pads
 * (kernels_window.c), which run straight on the arena's buffers, where the
 * reference kernel computes into a fresh tensor that the runtime then
 * copies. A fused kernel whose first op is a dot or a convolution
 * (plan_kernel_core: on CPU ranks, the fusion pass gives them their
 * elementwise consumers) runs that call into its result buffer, then its
 * generated epilogue over it in place. rt_run_kernel: any kernel on the
 * host's arena, by that code or the reference kernel.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "runtime/hostcode.h"
#include "runtime/kernels_internal.h"
#include "runtime/pool.h"

int rt_allowed_cpus(void)
{
	cpu_set_t set;
	return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

int rt_kernels_load(struct rt *r, bool reference, int threads)
{
	const struct plan *p = r->p;
	if (reference || !p->host_object_len)
		return 0;
	int rc = hostcode_check_cpu(p->host_features ? p->host_features : "", p->host_cpu ? p->host_cpu : "?");
	if (rc < 0) {
		ir_error_prefix("the plan's host kernels cannot run here (recompile with --host-cpu, or run with "
				"--reference)");
		return rc;
	}
	if ((rc = hostcode_load(p->host_object, p->host_object_len, &r->hc)) < 0)
		return rc;
	if (!(r->fn = ir_calloc((size_t)p->nkernels + 1, sizeof *r->fn)))
		return ir_errorf(-ENOMEM, "out of memory loading the host kernels");
	for (int k = 0; k < p->nkernels; k++) {
		char name[32];
		if (!p->kernels[k].host)
			continue;
		snprintf(name, sizeof name, "pcc_k%d", k);
		void *sym = hostcode_sym(r->hc, name);
		if (!sym)
			return ir_errorf(-EINVAL, "host code: kernel %d has no function %s", k, name);
		memcpy(&r->fn[k], &sym, sizeof sym); /* POSIX: a symbol's address converts */
	}
	/* the machine's CPUs divided among this host's ranks, but no more than
	 * this rank may run on (mpirun binds a rank to a core or a socket
	 * unless told not to) */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int allowed = rt_allowed_cpus();
	if (threads <= 0) {
		threads = (int)(cpus > 0 ? cpus : 1) / rt_local_ranks(r->c);
		threads = allowed > 0 && allowed < threads ? allowed : threads;
		threads = threads < 1 ? 1 : threads;
	} else if (allowed > 0 && threads > allowed && r->c->rank == 0) {
		fprintf(stderr,
			"pcc-run: warning: --threads %d, but rank 0 may run on %d CPU%s only (mpirun binds "
			"ranks to cores: pass it --bind-to none or --map-by ...:PE=%d)\n",
			threads, allowed, allowed == 1 ? "" : "s", threads);
	}
	if (!(r->pool = pool_new(threads)))
		return -ENOMEM;
	return 0;
}

void rt_kernels_release(struct rt *r)
{
	if (r->pool)
		pool_free(r->pool);
	if (r->hc)
		hostcode_free(r->hc);
	ir_free(r->fn);
	for (int i = 0; i < r->npacked; i++)
		ir_free(r->packed[i].data);
	ir_free(r->packed);
	r->packed = NULL;
	r->npacked = 0;
	r->pool = NULL;
	r->hc = NULL;
	r->fn = NULL;
}

struct call {
	rt_kernel_fn fn;
	void **args;
};

static void chunk(void *ctx, int64_t begin, int64_t end)
{
	const struct call *c = ctx;
	c->fn(c->args, begin, end);
}

/* The ops kernels_internal.h lists, on kernel k (one op), buffers buf (operands, result). */
static bool host_op(struct rt *r, const struct plan_kernel *k, void *const *buf, struct rt_epilogue *epi)
{
	if (k->op == IR_OP_DOT)
		return rt_host_dot(r, k, buf);
	if (k->op == IR_OP_CONV)
		return rt_host_conv(r, k, buf, epi);
	if (k->op == IR_OP_WINDOW_MAX || k->op == IR_OP_WINDOW_SUM)
		return rt_host_window(r, k, buf);
	return k->op == IR_OP_PAD && rt_host_pad(r, k, buf);
}

/* The library core of fused kernel k (plan_kernel_core), its first body
 * op, as a kernel of its own over k's buffers buf (operands, result):
 * host_op's if it runs it (with k's epilogue epi, which it may run),
 * else the reference kernel's, written into k's result buffer. */
static int run_core(struct rt *r, const struct plan_kernel *k, void *const *buf, struct rt_epilogue *epi)
{
	const struct plan_fop *f = &k->body[0];
	enum ir_dtype dt[PLAN_FOP_MAX_IN + 1];
	struct ir_shape sh[PLAN_FOP_MAX_IN + 1];
	struct ir_tensor tin[PLAN_FOP_MAX_IN], tout;
	void *cbuf[PLAN_FOP_MAX_IN + 1];
	for (int j = 0; j < f->nin; j++) {
		dt[j] = k->dtype[f->in[j]];
		sh[j] = k->shape[f->in[j]];
		cbuf[j] = buf[f->in[j]];
		tin[j] = (struct ir_tensor){ dt[j], sh[j], cbuf[j] };
	}
	dt[f->nin] = f->dtype;
	sh[f->nin] = f->shape;
	cbuf[f->nin] = buf[k->nin];
	struct plan_kernel c = { .op = f->op, .a = f->a, .nin = f->nin, .nout = 1, .dtype = dt, .shape = sh };
	if (host_op(r, &c, cbuf, epi))
		return 0;
	int rc = interp_kernel(&c, tin, &tout);
	if (rc < 0)
		return rc;
	memcpy(buf[k->nin], tout.data, ir_tensor_bytes(&tout));
	ir_tensor_free(&tout);
	return 0;
}

bool rt_kernel_host_on(struct rt *r, int kernel, void *const *buf, int *rc)
{
	*rc = 0;
	if (!r->fn)
		return false;
	const struct plan_kernel *k = &r->p->kernels[kernel];
	void *args[66];
	if (k->nin > 64)
		return false;
	for (int j = 0; j <= k->nin; j++)
		args[j] = buf[j];
	if (!r->fn[kernel])
		return !k->nbody && host_op(r, k, args, NULL);
	int64_t rows = k->rows;
	if (k->nbody > 1 && plan_kernel_core(k) != IR_OP_COUNT) {
		/* a library call, then its epilogue in place: the generated
		 * function reads the call's result as operand nin; the call
		 * may run it itself, on blocks of rows still in cache */
		args[k->nin + 1] = args[k->nin];
		struct rt_epilogue epi = { r->fn[kernel], args, rows, false };
		if ((*rc = run_core(r, k, args, &epi)) < 0 || epi.done)
			return true;
	}
	struct call c = { r->fn[kernel], args };
	int64_t per = rows ? ir_shape_numel(&k->shape[k->nin]) / rows : 1;
	int64_t grain = 32768 / (per > 0 ? per : 1);
	pool_run(r->pool, chunk, &c, rows, grain > 0 ? grain : 1);
	return true;
}

bool rt_kernel_host(struct rt *r, const struct plan_instr *x, int *rc)
{
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	void *buf[66];
	*rc = 0;
	if (!r->fn || k->nin > 64)
		return false;
	for (int j = 0; j <= k->nin; j++)
		buf[j] = rt_buf(r, &r->d->buf[r->d->args[x->arg + j]]);
	return rt_kernel_host_on(r, x->kernel, buf, rc);
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
		buf[j] = rt_buf(r, &r->d->buf[r->d->args[x->arg + j]]);
	return rt_run_kernel_on(r, x->kernel, buf);
}
