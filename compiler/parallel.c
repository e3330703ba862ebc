/*
 * parallel.c: independent solves on up to one thread per core, the
 * calling thread among them (the search's layer solves, inter_cost.c;
 * lowering's stage solves, compile.c).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "compiler/parallel.h"
#include "solvers/solvers.h"

struct par {
	int n;
	int (*job)(void *ctx, int j);
	void *ctx;
	atomic_int next;
};

static void *par_worker(void *arg)
{
	struct par *p = arg;
	for (;;) {
		int j = atomic_fetch_add(&p->next, 1);
		if (j >= p->n)
			break;
		if (p->job(p->ctx, j) < 0)
			atomic_store(&p->next, p->n); /* the others take no new job */
	}
	shard_thread_exit(); /* GLPK's state for this thread */
	return NULL;
}

void par_run(int n, int (*job)(void *ctx, int j), void *ctx)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int nt = cores < 1 ? 1 : cores > 16 ? 16 : (int)cores, started = 0;
	pthread_t th[16];
	struct par p = { .n = n, .job = job, .ctx = ctx };
	atomic_init(&p.next, 0);
	for (int i = 1; i < nt && i < n; i++) {
		if (pthread_create(&th[started], NULL, par_worker, &p) != 0)
			break; /* fewer threads: the others take the work */
		started++;
	}
	par_worker(&p);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}
