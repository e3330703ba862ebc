/* pcc-run, unchanged, except that an inference step is repeated for timing.
 *
 * Built by benchmarks/codegen.sh (not by meson) from runtime/main.c and the
 * build directory's runtime objects.  With PCC_BENCH_REPS=N (N >= 1), an
 * inference plan's step runs once as a warm-up and then N more times, and
 * rank 0 prints
 *
 *   pcc-bench: step median X ms, min Y ms over N runs (mean per step: kernels K ms, of which dots D ms,
 *   communication C ms)
 *
 * before pcc-run's own lines.  The outputs are those of the last run (the
 * step is a pure function of the inputs and the weights).  Training plans
 * are not affected: time them with --steps S and pcc-run's own final line.
 * The runtime prints inference times with millisecond resolution only, too
 * coarse for the test fixtures, hence this wrapper.
 */
#define rt_step bench_rt_step
#include "../runtime/main.c"
#undef rt_step

int rt_step(struct rt *r, const struct ir_tensor *inputs);
int bench_rt_step(struct rt *r, const struct ir_tensor *inputs);

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int bench_rt_step(struct rt *r, const struct ir_tensor *inputs)
{
	const char *s = getenv("PCC_BENCH_REPS");
	long n = s ? strtol(s, NULL, 10) : 0;
	if (n < 1 || r->p->train)
		return rt_step(r, inputs);
	double *t = calloc((size_t)n, sizeof *t);
	int rc = t ? rt_step(r, inputs) : -ENOMEM; /* warm-up */
	double k0 = r->t_kernel, c0 = r->t_comm, g0 = r->t_gemm;
	for (long i = 0; i < n && rc == 0; i++) {
		double t0 = ir_now();
		rc = rt_step(r, inputs);
		t[i] = ir_now() - t0;
	}
	if (rc == 0 && r->c->rank == 0) {
		double k = (r->t_kernel - k0) / (double)n * 1e3, c = (r->t_comm - c0) / (double)n * 1e3,
		       g = (r->t_gemm - g0) / (double)n * 1e3;
		qsort(t, (size_t)n, sizeof *t, cmp_double);
		printf("pcc-bench: step median %.4f ms, min %.4f ms over %ld runs "
		       "(mean per step: kernels %.4f ms, of which dots %.4f ms, communication %.4f ms)\n",
		       (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2) * 1e3, t[0] * 1e3, n, k, g, c);
		fflush(stdout);
	}
	free(t);
	return rc;
}
