/*
 * cost_device.c: device presets (NVIDIA datasheet figures) and the CPU host
 * measured on the spot.
 *
 * Every preset figure is dense (no 2:4 sparsity) and names its source. The
 * peaks are the datasheets' "FP64", "FP32" (plain vector rates) and "Tensor
 * Core" rates for TF32, BF16, FP16 and FP8; a precision the hardware lacks
 * is 0 and cost_device_peak falls back to a wider one.
 *
 * Memory capacity convention: NVIDIA's HBM sizes are binary, so a "GB" of
 * a datasheet is 2^30 bytes here (an A100 80 GB reports 81920 MiB in
 * nvidia-smi, an H200 "141 GB" 143771 MiB = 140.4 GiB). The driver and
 * ECC keep a little of it (an H100 80 GB reports 81559 MiB = 79.6 GiB);
 * that is the memory budget's headroom to cover, not this figure's.
 * Bandwidths are decimal: 900 GB/s = 900e9 bytes/s.
 *
 * The host (cost_device_host) is measured: one thread's sgemm and dgemm
 * through OpenBLAS, times the cores, for the peaks, one memcpy of a buffer
 * larger than the caches for the bandwidth, one of a buffer a quarter of
 * the L2 for the cache bandwidth (the fixtures' and small layers' tensors
 * never leave the cache), sysconf for the capacity, each shared by `ranks`
 * processes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "compiler/compiler.h"

#define GIB 1073741824.0 /* bytes in a datasheet "GB" of HBM, see above */
#define T 1e12           /* TFLOP/s */

static const char *const prec_names[COST_PREC_COUNT] = {
	[COST_PREC_F64] = "f64", [COST_PREC_F32] = "f32", [COST_PREC_TF32] = "tf32",
	[COST_PREC_BF16] = "bf16", [COST_PREC_F16] = "f16", [COST_PREC_FP8] = "fp8",
};

const char *cost_prec_name(enum cost_prec p)
{
	return (unsigned)p < COST_PREC_COUNT ? prec_names[p] : "?";
}

int cost_prec_parse(const char *s, enum cost_prec *out)
{
	static const struct {
		const char *alias;
		enum cost_prec p;
	} aliases[] = { { "fp64", COST_PREC_F64 }, { "fp32", COST_PREC_F32 },
			{ "fp16", COST_PREC_F16 }, { "f8", COST_PREC_FP8 } };
	for (int i = 0; i < COST_PREC_COUNT; i++)
		if (!strcasecmp(s, prec_names[i])) {
			*out = (enum cost_prec)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcasecmp(s, aliases[i].alias)) {
			*out = aliases[i].p;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown precision \"%s\" (expected f64, f32, tf32, bf16, f16 or fp8)", s);
}

/* Sources:
 *  V100: NVIDIA Tesla V100 GPU Accelerator datasheet (SXM2 column):
 *        FP64 7.8, FP32 15.7, Tensor 125 TFLOPS (FP16 inputs); HBM2
 *        16 or 32 GB at 900 GB/s. Volta tensor cores take FP16 only: no
 *        TF32, BF16 or FP8.
 *  A100: NVIDIA A100 Tensor Core GPU datasheet (SXM column): FP64 9.7,
 *        FP32 19.5, TF32 156, BF16 312, FP16 312 TFLOPS dense (the 312/624
 *        TF32/BF16 figures are with sparsity); 40 GB HBM2 at 1555 GB/s,
 *        80 GB HBM2e at 2039 GB/s. No FP8.
 *  H100: NVIDIA H100 Tensor Core GPU datasheet (SXM column): FP64 34,
 *        FP32 67 TFLOPS; TF32 989, BF16/FP16 1979, FP8 3958 TFLOPS are
 *        "with sparsity", so dense is half: 494.7, 989.4, 1978.9 (the
 *        Hopper architecture whitepaper's dense table); 80 GB HBM3 at
 *        3.35 TB/s.
 *  H200: NVIDIA H200 Tensor Core GPU datasheet (SXM column): the same
 *        compute figures as H100 SXM; 141 GB HBM3e at 4.8 TB/s. */
static const struct cost_device presets[] = {
	{ .name = "v100-16g", .desc = "NVIDIA V100 SXM2 16 GB",
	  .peak_flops = { [COST_PREC_F64] = 7.8 * T, [COST_PREC_F32] = 15.7 * T,
			  [COST_PREC_F16] = 125 * T },
	  .mem_bytes = 16 * GIB, .mem_bw = 900e9, .host_bw = 16e9 },
	{ .name = "v100-32g", .desc = "NVIDIA V100 SXM2 32 GB",
	  .peak_flops = { [COST_PREC_F64] = 7.8 * T, [COST_PREC_F32] = 15.7 * T,
			  [COST_PREC_F16] = 125 * T },
	  .mem_bytes = 32 * GIB, .mem_bw = 900e9, .host_bw = 16e9 },
	{ .name = "a100-40g", .desc = "NVIDIA A100 SXM4 40 GB",
	  .peak_flops = { [COST_PREC_F64] = 9.7 * T, [COST_PREC_F32] = 19.5 * T,
			  [COST_PREC_TF32] = 156 * T, [COST_PREC_BF16] = 312 * T,
			  [COST_PREC_F16] = 312 * T },
	  .mem_bytes = 40 * GIB, .mem_bw = 1555e9, .host_bw = 32e9 },
	{ .name = "a100-80g", .desc = "NVIDIA A100 SXM4 80 GB",
	  .peak_flops = { [COST_PREC_F64] = 9.7 * T, [COST_PREC_F32] = 19.5 * T,
			  [COST_PREC_TF32] = 156 * T, [COST_PREC_BF16] = 312 * T,
			  [COST_PREC_F16] = 312 * T },
	  .mem_bytes = 80 * GIB, .mem_bw = 2039e9, .host_bw = 32e9 },
	{ .name = "h100-80g", .desc = "NVIDIA H100 SXM5 80 GB",
	  .peak_flops = { [COST_PREC_F64] = 34 * T, [COST_PREC_F32] = 67 * T,
			  [COST_PREC_TF32] = 494.7 * T, [COST_PREC_BF16] = 989.4 * T,
			  [COST_PREC_F16] = 989.4 * T, [COST_PREC_FP8] = 1978.9 * T },
	  .mem_bytes = 80 * GIB, .mem_bw = 3.35e12, .host_bw = 64e9 },
	{ .name = "h200-141g", .desc = "NVIDIA H200 SXM 141 GB",
	  .peak_flops = { [COST_PREC_F64] = 34 * T, [COST_PREC_F32] = 67 * T,
			  [COST_PREC_TF32] = 494.7 * T, [COST_PREC_BF16] = 989.4 * T,
			  [COST_PREC_F16] = 989.4 * T, [COST_PREC_FP8] = 1978.9 * T },
	  .mem_bytes = 141 * GIB, .mem_bw = 4.8e12, .host_bw = 64e9 },
};
#define NPRESETS ((int)(sizeof presets / sizeof presets[0]))

/* Short names: the largest memory of each kind. */
static const struct {
	const char *alias, *preset;
} aliases[] = { { "v100", "v100-32g" }, { "a100", "a100-80g" }, { "h100", "h100-80g" },
		{ "h200", "h200-141g" } };

int cost_device_npresets(void)
{
	return NPRESETS;
}

const struct cost_device *cost_device_preset_at(int i)
{
	return i >= 0 && i < NPRESETS ? &presets[i] : NULL;
}

int cost_device_preset(const char *name, struct cost_device *d)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcasecmp(name, aliases[i].alias))
			name = aliases[i].preset;
	for (int i = 0; i < NPRESETS; i++)
		if (!strcasecmp(name, presets[i].name)) {
			*d = presets[i];
			return 0;
		}
	return ir_errorf(-ENOENT, "unknown device \"%s\" (presets: v100-16g, v100-32g, a100-40g, "
			 "a100-80g, h100-80g, h200-141g; aliases v100, a100, h100, h200)", name);
}

/* The next wider precision whose values p converts to exactly, so running
 * p there gives the same numbers: FP8 fits BF16 and F16; both 16-bit
 * types fit TF32 (8-bit exponent, 10-bit mantissa); TF32 is F32 rounded. */
double cost_device_peak(const struct cost_device *d, enum cost_prec p)
{
	switch (p) {
	case COST_PREC_FP8:
		if (d->peak_flops[p] > 0)
			return d->peak_flops[p];
		if (d->peak_flops[COST_PREC_BF16] > 0 || d->peak_flops[COST_PREC_F16] > 0)
			return d->peak_flops[COST_PREC_BF16] > d->peak_flops[COST_PREC_F16]
				       ? d->peak_flops[COST_PREC_BF16]
				       : d->peak_flops[COST_PREC_F16];
		return cost_device_peak(d, COST_PREC_TF32);
	case COST_PREC_BF16:
	case COST_PREC_F16:
		return d->peak_flops[p] > 0 ? d->peak_flops[p] : cost_device_peak(d, COST_PREC_TF32);
	case COST_PREC_TF32:
		return d->peak_flops[p] > 0 ? d->peak_flops[p] : cost_device_peak(d, COST_PREC_F32);
	case COST_PREC_F32:
		return d->peak_flops[p] > 0 ? d->peak_flops[p] : d->peak_flops[COST_PREC_F64];
	case COST_PREC_F64:
		return d->peak_flops[p];
	case COST_PREC_COUNT:
		break;
	}
	IR_ASSERT(!"bad precision");
}

/* ---- the measured host ---------------------------------------------------- */

/* One core's rate, times the cores: OpenBLAS is told to use one thread
 * while timing (where it is OpenBLAS; its functions are weak references, so
 * another BLAS links and times with its own threads). A multi-threaded
 * gemm on a shared machine waits for its slowest thread's time slice, and
 * the rate it gives swung 10x between runs on a loaded 2-core host; a
 * single thread's best of several short calls is usually a call that ran
 * unpreempted, so it stays within a few percent.
 *
 * Grow n (doubling from 64) until one call takes GEMM_MIN_S, then keep the
 * best of GEMM_REPS calls at that n; never start a larger n after
 * GEMM_BUDGET_S, so a loaded machine (tests run in parallel) still answers
 * quickly. */
#define GEMM_MIN_S 0.0005
#define GEMM_MAX_N 1024
#define GEMM_REPS 5
#define GEMM_BUDGET_S 0.15

void openblas_set_num_threads(int n) __attribute__((weak));
int openblas_get_num_threads(void) __attribute__((weak));

static double gemm_once(bool dbl, int n, void *a, void *b, void *c)
{
	double t0 = ir_now();
	if (dbl)
		cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
	return ir_now() - t0;
}

/* FLOP/s of one thread's best n x n gemm, as above. 0 when out of memory. */
static double gemm_rate(bool dbl)
{
	size_t esz = dbl ? sizeof(double) : sizeof(float);
	double best = 0, start = ir_now();
	for (int n = 64; n <= GEMM_MAX_N && ir_now() - start < GEMM_BUDGET_S; n *= 2) {
		size_t bytes = (size_t)n * (size_t)n * esz;
		char *buf = ir_calloc(3, bytes);
		if (!buf)
			return best;
		/* Zeros would do for timing, but keep the values normal anyway. */
		for (size_t i = 0; i < 2 * bytes / esz; i++) {
			if (dbl)
				((double *)buf)[i] = 1.0 + (double)(i % 7) * 0.125;
			else
				((float *)buf)[i] = 1.0f + (float)(i % 7) * 0.125f;
		}
		double t = gemm_once(dbl, n, buf, buf + bytes, buf + 2 * bytes); /* warm-up */
		bool last = t >= GEMM_MIN_S || 2 * n > GEMM_MAX_N;
		for (int r = 0; r < (last ? GEMM_REPS : 1); r++) {
			double tr = gemm_once(dbl, n, buf, buf + bytes, buf + 2 * bytes);
			t = tr < t ? tr : t;
		}
		ir_free(buf);
		double rate = 2.0 * n * n * (double)n / (t > 0 ? t : 1e-9);
		best = rate > best ? rate : best;
		if (last)
			break;
	}
	return best;
}

/* 64 MiB each way: a copy touches 128 MiB, more than the last-level cache a
 * core sees on current servers, so this times DRAM. It is timed in
 * COPY_CHUNKS pieces and the median piece's rate kept, so a piece the
 * scheduler preempted (on a loaded host) does not set the figure. */
#define COPY_BYTES ((size_t)64 << 20)
#define COPY_CHUNKS 32
#define COPY_REPS 3 /* the first one faults dst in and is not timed */
/* One core's cache when sysconf does not know its L2 size. */
#define CACHE_DEFAULT ((size_t)1 << 20)

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Bytes copied per second by one core's memcpy of `bytes` each way (median
 * piece of the later copies), 0 when out of memory. */
static double copy_rate(size_t bytes)
{
	char *src = ir_malloc(bytes), *dst = ir_malloc(bytes);
	double t[(COPY_REPS - 1) * COPY_CHUNKS], rate = 0;
	size_t piece = bytes / COPY_CHUNKS;
	int nt = 0;
	if (!src || !dst)
		goto out;
	/* src must be written (untouched pages read as the shared zero page);
	 * dst faults its pages in during the first copy. */
	memset(src, 1, bytes);
	for (int r = 0; r < COPY_REPS; r++) {
		char *to = r % 2 ? src : dst, *from = r % 2 ? dst : src;
		for (int k = 0; k < COPY_CHUNKS; k++) {
			double t0 = ir_now();
			memcpy(to + (size_t)k * piece, from + (size_t)k * piece, piece);
			if (r > 0)
				t[nt++] = ir_now() - t0;
		}
		/* Read the result so the copy cannot be dropped as dead. */
		if (((volatile char *)to)[bytes / 2] != 1)
			IR_ASSERT(!"memcpy lost its data");
	}
	qsort(t, (size_t)nt, sizeof *t, cmp_double);
	rate = (double)piece / (t[nt / 2] > 0 ? t[nt / 2] : 1e-9);
out:
	ir_free(src);
	ir_free(dst);
	return rate;
}

int cost_device_host(int ranks, struct cost_device *d)
{
	if (ranks < 1)
		return ir_errorf(-EINVAL, "cpu: %d ranks (expected at least 1)", ranks);
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "cpu");
	snprintf(d->desc, sizeof d->desc, "host CPU, 1 of %d ranks (measured)", ranks);
	int threads = openblas_get_num_threads ? openblas_get_num_threads() : 0;
	if (threads > 0 && openblas_set_num_threads)
		openblas_set_num_threads(1);
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	size_t cache = l2 > 0 ? (size_t)l2 : CACHE_DEFAULT;
	double sgemm = gemm_rate(false), dgemm = gemm_rate(true), copy = copy_rate(COPY_BYTES);
	double ccopy = copy_rate(cache / 4); /* src + dst: half the cache, the rest for the program */
	if (threads > 0 && openblas_set_num_threads)
		openblas_set_num_threads(threads);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (sgemm <= 0 || dgemm <= 0 || copy <= 0 || ccopy <= 0)
		return ir_errorf(-ENOMEM, "out of memory measuring the host");
	if (pages <= 0 || page <= 0)
		return ir_errorf(-EIO, "cannot read the host's memory size (sysconf)");
	/* One thread's rate per core (threads == 0: another BLAS timed with
	 * all its threads already); ranks beyond the cores share them. */
	double per = threads > 0 && openblas_set_num_threads ? (double)(cores > 0 ? cores : 1) : 1.0;
	d->peak_flops[COST_PREC_F32] = sgemm * per / ranks;
	d->peak_flops[COST_PREC_F64] = dgemm * per / ranks;
	/* A copy reads and writes every byte; the roofline counts both. One
	 * core's memcpy understates a many-channel host, which keeps the
	 * figure conservative. */
	d->mem_bw = 2 * copy / ranks;
	d->host_bw = copy / ranks; /* feeding a rank is a memcpy */
	d->mem_bytes = (double)pages * (double)page / ranks;
	/* Each core has its own L2: a rank keeps one core's while ranks do not
	 * outnumber the cores, and shares it beyond. */
	double share = cores > 0 && ranks > cores ? (double)cores / ranks : 1.0;
	d->cache_bytes = (double)cache * share;
	d->cache_bw = 2 * ccopy * share;
	return 0;
}

enum cost_prec cost_default_prec(const struct cost_device *d)
{
	double bf = cost_device_peak(d, COST_PREC_BF16), hf = cost_device_peak(d, COST_PREC_F16);
	double f32 = cost_device_peak(d, COST_PREC_F32);
	if (bf >= hf && bf > f32)
		return COST_PREC_BF16;
	return hf > f32 ? COST_PREC_F16 : COST_PREC_F32;
}
