/*
 * pool.h: a small pool of persistent threads that runs a kernel over a
 * range of items split across cores, for pcc-run's host kernels.
 *
 *	struct pool *p = pool_new(8);     // the caller and 7 workers
 *	pool_run(p, fn, ctx, rows, 64);   // fn(ctx, begin, end) on <= 8 chunks
 *	pool_free(p);
 *
 * One thread at a time may call pool_run on a pool, and fn must not call
 * pool_run on the same pool.
 */
#ifndef PCC_RUNTIME_POOL_H
#define PCC_RUNTIME_POOL_H

#include <stddef.h>
#include <stdint.h>

struct pool;

/* nthreads >= 1 counts the caller; NULL with an ir_errorf message if the
 * threads cannot be started. */
struct pool *pool_new(int nthreads);
void pool_free(struct pool *p);
int pool_threads(const struct pool *p);

/* Calls fn(ctx, begin, end) over [0, n) split into at most pool_threads()
 * contiguous chunks of at least grain items each (one chunk, run inline,
 * when n <= grain or the pool has one thread); the caller runs chunks too.
 * Returns when every chunk is done. */
void pool_run(struct pool *p, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx, int64_t n, int64_t grain);

/* Scratch memory of at least bytes for the pool's caller (the host kernels'
 * work areas), 64-byte aligned, kept and reused across calls: valid until
 * the next pool_scratch or pool_free. NULL when out of memory. */
void *pool_scratch(struct pool *p, size_t bytes);

#endif
