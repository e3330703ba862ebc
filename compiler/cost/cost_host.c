/*
 * cost_host.c: the figures of a cpu:N cluster's device, this host's own:
 * measured once per machine, then read back from a cache, so that the
 * same command compiles the same plan however loaded the machine is.
 *
 * Measured (host_measure): one thread's sgemm and dgemm through OpenBLAS
 * for the peaks (times the cores), one memcpy of a buffer larger than the
 * caches for the bandwidth, one of a quarter of the L2 for the cache
 * bandwidth (the fixtures' and small layers' tensors never leave the
 * cache); sysconf for the capacity. cost_device_host shares them among
 * the cluster's ranks.
 *
 * Why a cache: even best-of-N timings move with load (one thread's sgemm
 * 0.092 vs 0.047 TFLOP/s on a 2-core VM beside three busy processes), and
 * a plan near a decision boundary moved with them (test_runtime_errors'
 * 4-rank inference plan stopped communicating on rank 0 under load). The
 * first measurement on a machine is written to host.json in the cache
 * directory ($PCC_CACHE_DIR, else $XDG_CACHE_HOME/pcc, else
 * ~/.cache/pcc, as pcc-run's cubin cache), keyed by what identifies the
 * host (CPU model, cores, L2 size, OpenBLAS's kernels); later compiles on
 * that host read it. Processes racing to write it take turns (flock(2)
 * on the cache directory): the first measures and publishes, the others
 * then read its file; where no lock can be had, the first file published
 * wins (link(2) fails for the later ones, which read it back). Files are
 * published whole (link or rename of a finished one), never half-written.
 * A file for another host is replaced; an unreadable or malformed one
 * gets a one-line warning and is replaced. PCC_HOST_CACHE=0 measures
 * every time and touches no file; deleting host.json measures again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <jansson.h>

#include "compiler/cost/cost.h"
#include "ir/ir.h"

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

/* One core's figures and what they were measured on. */
struct host {
	char cpu[128], blas[32]; /* /proc/cpuinfo's model name; OpenBLAS's core */
	long cores, l2;          /* sysconf's online CPUs and L2 bytes (0: unknown) */
	double sgemm, dgemm;     /* one thread's best FLOP/s */
	double copy, cache_copy; /* one core's memcpy bytes/s: DRAM, and a quarter of the L2 */
};

char *openblas_get_corename(void) __attribute__((weak));

static void host_identify(struct host *h)
{
	memset(h, 0, sizeof *h);
	snprintf(h->cpu, sizeof h->cpu, "?");
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = 0;
		snprintf(h->cpu, sizeof h->cpu, "%s", colon);
		break;
	}
	if (f)
		fclose(f);
	snprintf(h->blas, sizeof h->blas, "%s", openblas_get_corename ? openblas_get_corename() : "other");
	h->cores = sysconf(_SC_NPROCESSORS_ONLN);
	h->l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	h->cores = h->cores > 0 ? h->cores : 1;
	h->l2 = h->l2 > 0 ? h->l2 : 0;
}

static int host_measure(struct host *h)
{
	int threads = openblas_get_num_threads ? openblas_get_num_threads() : 0;
	if (threads > 0 && openblas_set_num_threads)
		openblas_set_num_threads(1);
	size_t cache = h->l2 > 0 ? (size_t)h->l2 : CACHE_DEFAULT;
	h->sgemm = gemm_rate(false);
	h->dgemm = gemm_rate(true);
	h->copy = copy_rate(COPY_BYTES);
	h->cache_copy = copy_rate(cache / 4); /* src + dst: half the cache, the rest for the program */
	if (threads > 0 && openblas_set_num_threads)
		openblas_set_num_threads(threads);
	if (h->sgemm <= 0 || h->dgemm <= 0 || h->copy <= 0 || h->cache_copy <= 0)
		return ir_errorf(-ENOMEM, "out of memory measuring the host");
	return 0;
}

#define HOST_CACHE_VERSION 1

/* What cache_read found in the file. */
enum cache_state { CACHE_NONE, CACHE_READ, CACHE_OTHER /* another host's or version's */, CACHE_BAD };

/* The figures in path for the host id (CACHE_BAD: why says what is
 * wrong). */
static enum cache_state cache_read(const char *path, const struct host *id, struct host *h, char *why, size_t nwhy)
{
	/* opened here, once: a file that another process publishes between
	 * a failed open and a second look is not malformed */
	FILE *f = fopen(path, "r");
	if (!f && errno == ENOENT)
		return CACHE_NONE;
	if (!f) {
		snprintf(why, nwhy, "%s", strerror(errno));
		return CACHE_BAD;
	}
	json_error_t err;
	json_t *j = json_loadf(f, 0, &err);
	fclose(f);
	if (!j) {
		snprintf(why, nwhy, "line %d: %s", err.line, err.text);
		return CACHE_BAD;
	}
	const char *cpu = NULL, *blas = NULL;
	json_int_t version = 0, cores = 0, l2 = -1;
	*h = *id;
	enum cache_state st = CACHE_BAD;
	int rc = json_unpack_ex(j, &err, 0, "{s:I, s:s, s:s, s:I, s:I, s:F, s:F, s:F, s:F}", "version", &version, "cpu",
				&cpu, "blas", &blas, "cores", &cores, "l2", &l2, "sgemm", &h->sgemm, "dgemm", &h->dgemm,
				"copy", &h->copy, "cache_copy", &h->cache_copy);
	if (rc < 0)
		snprintf(why, nwhy, "%s", err.text);
	else if (version != HOST_CACHE_VERSION)
		st = CACHE_OTHER; /* another pcc's: measured again */
	else if (!(h->sgemm > 0 && h->dgemm > 0 && h->copy > 0 && h->cache_copy > 0))
		snprintf(why, nwhy, "a figure is not a positive number");
	else
		st = strcmp(cpu, id->cpu) || strcmp(blas, id->blas) || cores != id->cores || l2 != id->l2 ? CACHE_OTHER
													  : CACHE_READ;
	json_decref(j);
	return st;
}

/* Writes h to a file beside path and publishes it there: with replace,
 * over what is there; else only if nothing is (link fails when another
 * process published first). Best effort: the caller reads back what is
 * there. */
static void cache_write(const char *path, const struct host *h, bool replace)
{
	char tmp[4300];
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
	char when[32] = "";
	time_t now = time(NULL);
	struct tm tm;
	if (gmtime_r(&now, &tm))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_t *j = json_pack("{s:i, s:s, s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:s}", "version", HOST_CACHE_VERSION,
			      "cpu", h->cpu, "blas", h->blas, "cores", (json_int_t)h->cores, "l2", (json_int_t)h->l2,
			      "sgemm", h->sgemm, "dgemm", h->dgemm, "copy", h->copy, "cache_copy", h->cache_copy,
			      "measured", when);
	bool ok = j && json_dump_file(j, tmp, JSON_INDENT(1) | JSON_SORT_KEYS) == 0;
	json_decref(j);
	if (ok)
		replace ? rename(tmp, path) : link(tmp, path);
	unlink(tmp);
}

/* This host's figures: from the cache, else measured (and cached). */
static int host_figures(struct host *h, char *src, size_t nsrc)
{
	struct host id;
	host_identify(&id);
	*h = id;
	const char *off = getenv("PCC_HOST_CACHE");
	char dir[4096], path[4200], why[256] = "";
	if ((off && !strcmp(off, "0")) || !ir_cache_dir(dir, sizeof dir)) {
		snprintf(src, nsrc, "measured");
		return host_measure(h);
	}
	snprintf(path, sizeof path, "%s/host.json", dir);
	enum cache_state got = cache_read(path, &id, h, why, sizeof why);
	if (got == CACHE_READ) {
		snprintf(src, nsrc, "measured once, cached");
		return 0;
	}
	/* One process measures and writes at a time (a lock on the cache
	 * directory, held until its file is published); the others, waiting,
	 * then read its figures. Two that each replaced another host's file
	 * would otherwise each use their own. */
	ir_make_dirs(dir);
	int lock = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock >= 0 && flock(lock, LOCK_EX) == 0)
		got = cache_read(path, &id, h, why, sizeof why);
	int rc = 0;
	if (got == CACHE_READ) {
		snprintf(src, nsrc, "measured once, cached");
		goto out;
	}
	if (got == CACHE_BAD)
		fprintf(stderr, "pcc: warning: ignoring the host figures in %s (%s): measuring again\n", path, why);
	*h = id;
	if ((rc = host_measure(h)) < 0)
		goto out;
	/* a file for another host, or a bad one, is replaced; none: the first
	 * process to publish wins (where no lock was had, another may have
	 * while this one measured), and everyone reads its figures */
	cache_write(path, h, got != CACHE_NONE);
	struct host won;
	if (cache_read(path, &id, &won, why, sizeof why) == CACHE_READ) {
		*h = won;
		snprintf(src, nsrc, "measured once, cached");
	} else {
		snprintf(src, nsrc, "measured");
	}
out:
	if (lock >= 0)
		close(lock); /* and the lock with it */
	return rc;
}

int cost_device_host(int ranks, struct cost_device *d)
{
	if (ranks < 1)
		return ir_errorf(-EINVAL, "cpu: %d ranks (expected at least 1)", ranks);
	memset(d, 0, sizeof *d);
	struct host h;
	char src[32];
	int rc = host_figures(&h, src, sizeof src);
	if (rc < 0)
		return rc;
	snprintf(d->name, sizeof d->name, "cpu");
	snprintf(d->desc, sizeof d->desc, "host CPU, 1 of %d ranks (%s)", ranks, src);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || page <= 0)
		return ir_errorf(-EIO, "cannot read the host's memory size (sysconf)");
	size_t cache = h.l2 > 0 ? (size_t)h.l2 : CACHE_DEFAULT;
	/* One thread's rate per core (another BLAS timed with all its threads
	 * already); ranks beyond the cores share them. */
	double per = openblas_set_num_threads ? (double)h.cores : 1.0;
	d->peak_flops[COST_PREC_F32] = h.sgemm * per / ranks;
	d->peak_flops[COST_PREC_F64] = h.dgemm * per / ranks;
	/* A copy reads and writes every byte; the roofline counts both. One
	 * core's memcpy understates a many-channel host, which keeps the
	 * figure conservative. */
	d->mem_bw = 2 * h.copy / ranks;
	d->host_bw = h.copy / ranks; /* feeding a rank is a memcpy */
	d->mem_bytes = (double)pages * (double)page / ranks;
	/* Each core has its own L2: a rank keeps one core's while ranks do not
	 * outnumber the cores, and shares it beyond. */
	double share = ranks > h.cores ? (double)h.cores / ranks : 1.0;
	d->cache_bytes = (double)cache * share;
	d->cache_bw = 2 * h.cache_copy * share;
	return 0;
}
