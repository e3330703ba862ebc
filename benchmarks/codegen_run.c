/* pcc-run, unchanged, except that an inference step is repeated for timing.
 *
 * pcc-run's program (rt_main, libpccrt) with bench_rt_step around each
 * step; meson builds it as build/benchmarks/codegen_run, which
 * benchmarks/codegen.sh and cpu_vs_ort.sh run.  With PCC_BENCH_REPS=N
 * (N >= 1), an inference plan's step runs once as a warm-up and then N
 * more times, and rank 0 prints
 *
 *   pcc-bench: step median X ms, min Y ms over N runs, cpu U ms (mean per step: kernels K ms, of which
 *   dots D ms, communication C ms)
 *
 * (U: the process's CPU time per step over the N runs, all threads,
 * idle pool threads spinning included)
 *
 * before pcc-run's own lines.  The outputs are those of the last run (the
 * step is a pure function of the inputs and the weights).  Training plans
 * are not affected: time them with --steps S and pcc-run's own final line.
 * The runtime prints inference times with millisecond resolution only, too
 * coarse for the test fixtures, hence this wrapper.
 *
 * With PCC_BENCH_PROFILE=1 as well, rank 0 then prints a line per kernel
 * run in the timed steps, slowest first: its index, ms and calls per step,
 * whether generated code or the reference kernel ran it, and what it
 * computes (the op, or a fused kernel's body with inputs as %0..), e.g.
 *
 *   pcc-bench: k41  2.95 ms/step  12 calls  gen  f32[1,12,128,128] { %1 = constant; ...; %9 = softmax %8 }
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ir/ir.h"
#include "runtime/rt.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Kernel k's result type and op or fused body, into buf. */
static void kernel_summary(const struct plan_kernel *k, char *buf, size_t n)
{
	char sh[128];
	size_t len = (size_t)snprintf(buf, n, "%s%s ", ir_dtype_name(k->dtype[k->nin]),
				      ir_shape_str(&k->shape[k->nin], sh, sizeof sh));
	if (!k->nbody) {
		snprintf(buf + len, n - len, "%s", ir_op_name(k->op));
		return;
	}
	len += (size_t)snprintf(buf + len, n - len, "{");
	for (int i = 0; i < k->nbody && len < n; i++) {
		const struct plan_fop *f = &k->body[i];
		len += (size_t)snprintf(buf + len, n - len, " %%%d = %s", k->nin + i, ir_op_name(f->op));
		for (int j = 0; j < f->nin && len < n; j++)
			len += (size_t)snprintf(buf + len, n - len, " %%%d", f->in[j]);
		if (len < n)
			len += (size_t)snprintf(buf + len, n - len, i + 1 < k->nbody ? ";" : " }");
	}
}

static const struct rt *prof_rt;

static int cmp_kernel_time(const void *a, const void *b)
{
	double x = prof_rt->prof_time[*(const int *)a], y = prof_rt->prof_time[*(const int *)b];
	return x > y ? -1 : x < y;
}

static void print_profile(const struct rt *r, long steps)
{
	int nk = r->p->nkernels, *order = calloc((size_t)nk + 1, sizeof *order);
	if (!order)
		return;
	for (int k = 0; k < nk; k++)
		order[k] = k;
	prof_rt = r;
	qsort(order, (size_t)nk, sizeof *order, cmp_kernel_time);
	for (int i = 0; i < nk && r->prof_calls[order[i]]; i++) {
		int k = order[i];
		char what[1024];
		kernel_summary(&r->p->kernels[k], what, sizeof what);
		printf("pcc-bench: k%-4d %8.3f ms/step %4ld calls  %s  %s\n", k, r->prof_time[k] / (double)steps * 1e3,
		       r->prof_calls[k] / steps, r->fn && r->fn[k] ? "gen" : "ref", what);
	}
	free(order);
}

/* CPU seconds of the whole process (all its threads) so far. */
static double cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int bench_rt_step(struct rt *r, const struct ir_tensor *inputs)
{
	const char *s = getenv("PCC_BENCH_REPS");
	long n = s ? strtol(s, NULL, 10) : 0;
	if (n < 1 || r->p->train)
		return rt_step(r, inputs);
	double *t = calloc((size_t)n, sizeof *t);
	int rc = t ? rt_step(r, inputs) : -ENOMEM; /* warm-up */
	double k0 = r->t_kernel, c0 = r->t_comm, g0 = r->t_gemm;
	const char *prof = getenv("PCC_BENCH_PROFILE");
	if (rc == 0 && prof && atoi(prof) > 0) {
		r->prof_time = calloc((size_t)r->p->nkernels + 1, sizeof *r->prof_time);
		r->prof_calls = calloc((size_t)r->p->nkernels + 1, sizeof *r->prof_calls);
		if (!r->prof_time || !r->prof_calls)
			rc = -ENOMEM;
	}
	double cpu0 = cpu_seconds();
	for (long i = 0; i < n && rc == 0; i++) {
		double t0 = ir_now();
		rc = rt_step(r, inputs);
		t[i] = ir_now() - t0;
	}
	double cpu = (cpu_seconds() - cpu0) / (double)n * 1e3;
	if (rc == 0 && r->c->rank == 0) {
		double k = (r->t_kernel - k0) / (double)n * 1e3, c = (r->t_comm - c0) / (double)n * 1e3,
		       g = (r->t_gemm - g0) / (double)n * 1e3;
		qsort(t, (size_t)n, sizeof *t, cmp_double);
		printf("pcc-bench: step median %.4f ms, min %.4f ms over %ld runs, cpu %.4f ms "
		       "(mean per step: kernels %.4f ms, of which dots %.4f ms, communication %.4f ms)\n",
		       (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2) * 1e3, t[0] * 1e3, n, cpu, k, g, c);
		if (r->prof_time)
			print_profile(r, n);
		fflush(stdout);
	}
	free(r->prof_time);
	free(r->prof_calls);
	r->prof_time = NULL;
	r->prof_calls = NULL;
	free(t);
	return rc;
}

int main(int argc, char **argv)
{
	return rt_main(argc, argv, bench_rt_step);
}
