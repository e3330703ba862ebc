/*
 * kernels.c: the generated host kernels of a plan (compiler/codegen.h),
 * loaded from the plan's object (hostcode.c) and run across this rank's
 * threads (pool.c). A kernel without host code, or every kernel with
 * --reference, runs the reference interpreter's kernels instead, except
 * for a dot that is one batched gemm on its operands in place
 * (gpu_plan_gemm): that one calls sgemm or dgemm here, straight into its
 * result buffer, where the reference kernel computes into a fresh tensor
 * that the runtime then copies (the LM head of GPT-2 small writes 26 MB).
 * The calls are interp_dot's, so the results are the same bit for bit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "runtime/gpu_plan.h"
#include "runtime/hostcode.h"
#include "runtime/pool.h"
#include "runtime/rt.h"

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
	if (threads <= 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		threads = (int)(cpus > 0 ? cpus : 1) / rt_local_ranks();
		threads = threads < 1 ? 1 : threads;
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

/* The dot x as interp_dot runs it, when it is one batched gemm in place. */
static bool host_dot(struct rt *r, const struct plan_instr *x)
{
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	struct gpu_gemm g;
	if (!gpu_plan_gemm(k, &g) || (k->dtype[0] != IR_F32 && k->dtype[0] != IR_F64) || g.m > INT32_MAX ||
	    g.n > INT32_MAX || g.k > INT32_MAX)
		return false;
	const struct plan_device *d = r->d;
	const char *a = rt_buf(r, &d->buf[d->args[x->arg]]), *b = rt_buf(r, &d->buf[d->args[x->arg + 1]]);
	char *c = rt_buf(r, &d->buf[d->args[x->arg + 2]]);
	size_t es = k->dtype[0] == IR_F32 ? sizeof(float) : sizeof(double);
	size_t na = (size_t)(g.batch * g.m * g.k) * es, nb = (size_t)(g.batch * g.k * g.n) * es,
	       nc = (size_t)(g.batch * g.m * g.n) * es;
	if ((c < a + na && a < c + nc) || (c < b + nb && b < c + nc))
		return false; /* written in place: gemm's C may not alias A or B */
	enum CBLAS_TRANSPOSE ta = g.ta ? CblasTrans : CblasNoTrans, tb = g.tb ? CblasTrans : CblasNoTrans;
	blasint m = (blasint)g.m, n = (blasint)g.n, kk = (blasint)g.k;
	blasint lda = g.ta ? m : kk, ldb = g.tb ? kk : n;
	for (int64_t i = 0; i < g.batch; i++) {
		const char *ai = a + (size_t)(i * g.m * g.k) * es, *bi = b + (size_t)(i * g.k * g.n) * es;
		char *ci = c + (size_t)(i * g.m * g.n) * es;
		if (es == sizeof(float))
			cblas_sgemm(CblasRowMajor, ta, tb, m, n, kk, 1.0f, (const float *)ai, lda, (const float *)bi, ldb,
				    0.0f, (float *)ci, n);
		else
			cblas_dgemm(CblasRowMajor, ta, tb, m, n, kk, 1.0, (const double *)ai, lda, (const double *)bi, ldb,
				    0.0, (double *)ci, n);
	}
	return true;
}

bool rt_kernel_host(struct rt *r, const struct plan_instr *x)
{
	if (!r->fn)
		return false;
	if (!r->fn[x->kernel])
		return host_dot(r, x);
	const struct plan_kernel *k = &r->p->kernels[x->kernel];
	void *args[64];
	for (int j = 0; j <= k->nin; j++)
		args[j] = rt_buf(r, &r->d->buf[r->d->args[x->arg + j]]);
	struct call c = { r->fn[x->kernel], args };
	int64_t rows = k->rows, per = rows ? ir_shape_numel(&k->shape[k->nin]) / rows : 1;
	int64_t grain = 32768 / (per > 0 ? per : 1);
	pool_run(r->pool, chunk, &c, rows, grain > 0 ? grain : 1);
	return true;
}
