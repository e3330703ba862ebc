/*
 * parallel.h: independent jobs on every core (compiler/parallel.c): the
 * search's layer solves, lowering's stage solves, codegen's modules.
 */
#ifndef PCC_COMPILER_PARALLEL_H
#define PCC_COMPILER_PARALLEL_H

/* Runs job(ctx, j) for j in 0..n-1 on up to one thread per core (at most
 * 16), the calling thread among them; a job that returns < 0 stops the
 * others taking new ones. Jobs record their own results and errors
 * (ir_error is per thread). */
void par_run(int n, int (*job)(void *ctx, int j), void *ctx);

#endif
