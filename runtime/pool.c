/*
 * pool.c: persistent worker threads that split a range among themselves
 * and the caller (pool.h).
 *
 * A job is published under a generation number: the caller writes fn, ctx
 * and n, sets pending to the chunk count, stores
 * claim = gen << 32 | nchunks << 16 | next chunk (0), then bumps gen.
 * Workers spin on gen for SPIN_S (kernels can take ~10 us, less than a
 * sleep and wake-up), then sleep on a condition variable; the caller only
 * takes the lock to wake them when one sleeps. Everyone, the caller too,
 * takes chunks by a CAS on claim, which fails for a worker still holding
 * an older generation, so a late worker never runs a chunk twice or one of
 * another job. The caller then waits for pending to reach 0 the same way:
 * spin, then sleep. The sleep handshakes are Dekker-style: each side
 * stores its flag and then loads the other's, all sequentially consistent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/pool.h"

#define SPIN_S 50e-6 /* seconds to spin before sleeping */
#define MAX_THREADS 0xffff

struct pool {
	int nthreads; /* the caller and nthreads - 1 workers */
	int nstarted;
	pthread_t *tid;
	void (*fn)(void *ctx, int64_t begin, int64_t end);
	void *ctx;
	int64_t n;              /* items of the job */
	_Atomic uint64_t claim; /* gen << 32 | nchunks << 16 | next chunk */
	_Atomic uint32_t gen;
	_Atomic int pending;  /* chunks of the job not done yet */
	_Atomic int nsleep;   /* workers asleep on wake, or about to be */
	_Atomic bool waiting; /* the caller is asleep on done, or about to be */
	_Atomic bool stop;
	bool busy;     /* in pool_run (catches reentry) */
	void *scratch; /* pool_scratch's, nscratch bytes */
	size_t nscratch;
	pthread_mutex_t mu;
	pthread_cond_t wake, done;
};

/* Whether a spin loop in its s-th round, which started at *t0 (0 before
 * the first look at the clock), should go on. */
static bool spinning(int s, double *t0)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	if (s % 64)
		return true;
	double t = ir_now();
	*t0 = *t0 ? *t0 : t;
	return t - *t0 < SPIN_S;
}

/* Runs chunks of job gen until none is left. */
static void run_chunks(struct pool *p, uint32_t gen)
{
	uint64_t c = atomic_load_explicit(&p->claim, memory_order_acquire);
	for (;;) {
		int64_t nch = (int64_t)(c >> 16 & 0xffff), i = (int64_t)(c & 0xffff);
		if ((uint32_t)(c >> 32) != gen || i >= nch)
			return;
		if (!atomic_compare_exchange_weak_explicit(&p->claim, &c, c + 1, memory_order_acq_rel,
							   memory_order_acquire))
			continue;
		int64_t q = p->n / nch, r = p->n % nch;
		int64_t begin = i * q + (i < r ? i : r);
		p->fn(p->ctx, begin, begin + q + (i < r));
		if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->waiting)) {
			pthread_mutex_lock(&p->mu);
			pthread_cond_signal(&p->done);
			pthread_mutex_unlock(&p->mu);
		}
		c = atomic_load_explicit(&p->claim, memory_order_acquire);
	}
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	uint32_t seen = 0, g;
	for (;;) {
		double t0 = 0;
		for (int s = 0; (g = atomic_load(&p->gen)) == seen && spinning(s, &t0); s++)
			;
		if (g == seen) {
			pthread_mutex_lock(&p->mu);
			atomic_fetch_add(&p->nsleep, 1);
			while ((g = atomic_load(&p->gen)) == seen)
				pthread_cond_wait(&p->wake, &p->mu);
			atomic_fetch_sub(&p->nsleep, 1);
			pthread_mutex_unlock(&p->mu);
		}
		seen = g;
		if (atomic_load(&p->stop))
			return NULL;
		run_chunks(p, g);
	}
}

static void wake_all(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
}

struct pool *pool_new(int nthreads)
{
	struct pool *p;
	int rc;
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		ir_errorf(-EINVAL, "pool: %d threads (expected 1 to %d)", nthreads, MAX_THREADS);
		return NULL;
	}
	if (!(p = ir_calloc(1, sizeof *p)) || !(p->tid = ir_calloc((size_t)nthreads, sizeof *p->tid))) {
		ir_free(p);
		ir_errorf(-ENOMEM, "pool: out of memory");
		return NULL;
	}
	p->nthreads = nthreads;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	for (; p->nstarted < nthreads - 1; p->nstarted++) {
		if ((rc = pthread_create(&p->tid[p->nstarted], NULL, worker, p)) != 0) {
			ir_errorf(-rc, "pool: cannot start thread %d of %d: %s", p->nstarted + 1, nthreads,
				  strerror(rc));
			pool_free(p);
			return NULL;
		}
	}
	return p;
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, true);
	atomic_fetch_add(&p->gen, 1);
	wake_all(p);
	for (int i = 0; i < p->nstarted; i++)
		pthread_join(p->tid[i], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->mu);
	ir_free(p->tid);
	ir_free(p->scratch);
	ir_free(p);
}

void *pool_scratch(struct pool *p, size_t bytes)
{
	if (bytes <= p->nscratch)
		return p->scratch;
	void *s = ir_malloc(bytes);
	if (!s)
		return NULL;
	ir_free(p->scratch);
	p->scratch = s;
	p->nscratch = bytes;
	return s;
}

int pool_threads(const struct pool *p)
{
	return p->nthreads;
}

void pool_run(struct pool *p, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx, int64_t n, int64_t grain)
{
	int64_t nch;
	if (n <= 0)
		return;
	grain = grain < 1 ? 1 : grain;
	nch = n / grain < p->nthreads ? n / grain : p->nthreads;
	if (nch <= 1) {
		fn(ctx, 0, n);
		return;
	}
	IR_ASSERT(!p->busy);
	p->busy = true;
	uint32_t g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
	p->fn = fn;
	p->ctx = ctx;
	p->n = n;
	atomic_store(&p->pending, (int)nch);
	atomic_store_explicit(&p->claim, (uint64_t)g << 32 | (uint64_t)nch << 16, memory_order_release);
	atomic_store(&p->gen, g);
	if (atomic_load(&p->nsleep))
		wake_all(p);
	run_chunks(p, g);
	double t0 = 0;
	for (int s = 0; atomic_load(&p->pending) && spinning(s, &t0); s++)
		;
	if (atomic_load(&p->pending)) {
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->waiting, true);
		while (atomic_load(&p->pending))
			pthread_cond_wait(&p->done, &p->mu);
		atomic_store(&p->waiting, false);
		pthread_mutex_unlock(&p->mu);
	}
	p->busy = false;
}
