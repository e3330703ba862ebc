/* pcc-run, unchanged, except that every step is timed on its own.
 *
 * pcc-run's program (rt_main, libpccrt) with bench_rt_step around each
 * step; meson builds it as build/benchmarks/cpu_model_run, which
 * benchmarks/cpu_model.sh runs.
 * Each call of rt_step (one inference, or one training step with all its
 * micro-batches, gradient reduction and update) is timed; an inference
 * step is repeated PCC_BENCH_REPS times (default 1) after the first.  At
 * exit rank 0 prints
 *
 *   pcc-bench: step median X ms over N steps (kernels K ms, communication C ms, medians)
 *
 * leaving out the first step (page faults, first touches).  The median of
 * single steps, not a total over many, keeps the figure meaningful on a
 * loaded machine: a step the scheduler preempted is an outlier, not a
 * share of the mean.  Kernel and communication times are rank 0's, medians over
 * the same steps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/ir.h"
#include "runtime/rt.h"

#define MAX_TIMES 100000
static double times[MAX_TIMES], kern[MAX_TIMES], comm[MAX_TIMES];
static long ntimes, ncalls;
static int rank0 = -1;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(void)
{
	if (rank0 != 1 || ntimes == 0)
		return;
	long n = ntimes;
	printf("pcc-bench: step median %.4f ms over %ld steps (kernels %.4f ms, communication %.4f ms, medians)\n",
	       median(times, n) * 1e3, n, median(kern, n) * 1e3, median(comm, n) * 1e3);
	fflush(stdout);
}

static int timed(struct rt *r, const struct ir_tensor *inputs)
{
	double t0 = ir_now(), k0 = r->t_kernel, c0 = r->t_comm;
	int rc = rt_step(r, inputs);
	double t = ir_now() - t0;
	if (ncalls++ > 0 && ntimes < MAX_TIMES) { /* the first is a warm-up */
		kern[ntimes] = r->t_kernel - k0;
		comm[ntimes] = r->t_comm - c0;
		times[ntimes++] = t;
	}
	return rc;
}

static int bench_rt_step(struct rt *r, const struct ir_tensor *inputs)
{
	if (rank0 < 0) {
		rank0 = r->c->rank == 0;
		atexit(report);
	}
	const char *s = getenv("PCC_BENCH_REPS");
	long n = s && !r->p->train ? strtol(s, NULL, 10) : 0;
	int rc = timed(r, inputs);
	for (long i = 0; i < n && rc == 0; i++)
		rc = timed(r, inputs);
	return rc;
}

int main(int argc, char **argv)
{
	return rt_main(argc, argv, bench_rt_step);
}
