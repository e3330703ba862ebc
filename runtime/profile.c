/*
 * profile.c: pcc-run --profile, per kernel of the plan: time per step
 * (CUDA events on GPUs, the host's clock on CPU ranks), its share, calls,
 * the bytes its operands and result hold over that time against the
 * device memory's peak (GPUs), and FLOP/s for dots and convolutions, the
 * kernels by time: the slowest 25, or N of them (--profile=N), or all
 * (--profile=all). Bytes are a floor (each operand read once, the result
 * written once): a kernel that reads an operand twice shows less.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/gpu_plan.h"
#include "runtime/pool.h"
#include "runtime/rt.h"

int rt_profile_start(struct rt *r)
{
	if (!(r->prof_time = ir_calloc((size_t)r->p->nkernels + 1, sizeof *r->prof_time)) ||
	    !(r->prof_calls = ir_calloc((size_t)r->p->nkernels + 1, sizeof *r->prof_calls)))
		return ir_errorf(-ENOMEM, "out of memory for the profile");
	double peak;
	return r->dev->profile_check(r, &peak);
}

static int64_t bytes_of(const struct plan_kernel *k)
{
	int64_t n = 0;
	for (int j = 0; j < k->nin + k->nout; j++)
		n += ir_shape_numel(&k->shape[j]) * (int64_t)ir_dtype_size(k->dtype[j]);
	return n;
}

/* FLOPs of one call: 2 per multiply-add of a dot or a convolution. */
static double flops_of(const struct plan_kernel *k)
{
	struct gpu_gemm g;
	if (k->nbody == 0 && k->op == IR_OP_DOT && gpu_plan_gemm(k, &g))
		return 2.0 * (double)g.batch * (double)g.m * (double)g.n * (double)g.k;
	if (k->nbody == 0 && k->op == IR_OP_CONV && k->shape[1].dims[0] > 0)
		return 2.0 * (double)ir_shape_numel(&k->shape[k->nin]) *
		       (double)(ir_shape_numel(&k->shape[1]) / k->shape[1].dims[0]);
	return 0;
}

/* "add+mul+convert bf16[8,1024,768]" */
static void describe(const struct plan_kernel *k, char *buf, size_t n)
{
	size_t len = 0;
	int nb = k->nbody ? k->nbody : 1;
	for (int i = 0; i < nb && i < 4 && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "+" : "",
					ir_op_name(k->nbody ? k->body[i].op : k->op));
	if (nb > 4 && len < n)
		len += (size_t)snprintf(buf + len, n - len, "+%d more", nb - 4);
	const struct ir_shape *s = &k->shape[k->nin];
	if (len < n)
		len += (size_t)snprintf(buf + len, n - len, " %s[", ir_dtype_name(k->dtype[k->nin]));
	for (int d = 0; d < s->rank && len < n; d++)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld", d ? "," : "", (long long)s->dims[d]);
	if (len < n)
		snprintf(buf + len, n - len, "]");
}

static const struct rt *sort_rt;

static int by_time(const void *x, const void *y)
{
	double a = sort_rt->prof_time[*(const int *)x], b = sort_rt->prof_time[*(const int *)y];
	return a < b ? 1 : a > b ? -1 : 0;
}

void rt_profile_print(const struct rt *r, long steps, long rows, FILE *f)
{
	const struct plan *p = r->p;
	int *order = ir_calloc((size_t)p->nkernels + 1, sizeof *order), n = 0;
	double total = 0, peak = 0, shown = 0;
	if (!order || steps < 1)
		goto out;
	r->dev->profile_check(r, &peak);
	for (int k = 0; k < p->nkernels; k++)
		if (r->prof_calls[k]) {
			order[n++] = k;
			total += r->prof_time[k];
		}
	sort_rt = r;
	qsort(order, (size_t)n, sizeof *order, by_time);
	int shown_n = rows > 0 && rows < n ? (int)rows : n;
	fprintf(f, "pcc-run: profile of rank %d over %ld step%s: %.3f ms of kernels per step, %d kernels (%s",
		r->c->rank, steps, steps == 1 ? "" : "s", total / (double)steps * 1e3, n, r->dev->clock);
	if (peak > 0)
		fprintf(f, "; device memory peak %.0f GB/s", peak / 1e9);
	/* where the rank found itself (its GPU, its share of the cores) */
	fprintf(f, "; local rank %d of %d on its host", r->c->local_rank, rt_local_ranks(r->c));
	if (r->dev->host_arena && r->pool)
		fprintf(f, ", %d thread%s", pool_threads(r->pool), pool_threads(r->pool) == 1 ? "" : "s");
	fprintf(f, ")\n   ms/step   share  calls    GB/s  %%peak  TFLOP/s  kernel\n");
	for (int i = 0; i < shown_n; i++) {
		int k = order[i];
		const struct plan_kernel *pk = &p->kernels[k];
		double t = r->prof_time[k], calls = (double)r->prof_calls[k];
		double bw = t > 0 ? (double)bytes_of(pk) * calls / t : 0, fl = t > 0 ? flops_of(pk) * calls / t : 0;
		char what[160], pct[16] = "     -", tf[16] = "      -";
		describe(pk, what, sizeof what);
		if (peak > 0)
			snprintf(pct, sizeof pct, "%5.1f%%", 100 * bw / peak);
		if (fl > 0)
			snprintf(tf, sizeof tf, "%7.2f", fl / 1e12);
		const char *how = r->dev->kernel_how(r, k);
		fprintf(f, "  %8.3f  %5.1f%%  %5.0f  %6.0f  %s  %s  k%d %s%s%s%s\n", t / (double)steps * 1e3,
			total > 0 ? 100 * t / total : 0, calls / (double)steps, bw / 1e9, pct, tf, k, what,
			how ? " (" : "", how ? how : "", how ? ")" : "");
		shown += t;
	}
	if (n > shown_n)
		fprintf(f, "  %8.3f  %5.1f%%  (%d more kernels)\n", (total - shown) / (double)steps * 1e3,
			total > 0 ? 100 * (total - shown) / total : 0, n - shown_n);
out:
	ir_free(order);
}
