/*
 * standin_check.h: what the GPU stand-in's own tests share
 * (test_gpu_standin_api.c, _comm.c, _graph.c, each one program run as two
 * MPI ranks): the table under test, this rank, a refusal's check and the
 * verdict of a case over both ranks.
 */
#ifndef PCC_TESTS_STANDIN_CHECK_H
#define PCC_TESTS_STANDIN_CHECK_H

#include <mpi.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/gpu_api.h"
#include "tests/tap.h"

static const struct gpu_api *a; /* the stand-in's table */
static int me;                  /* this rank */

static inline const char *err(CUresult e)
{
	const char *s = NULL;
	a->cuGetErrorString(e, &s);
	return s ? s : "?";
}

/* e is error want and its text has frag. */
static inline bool fails(CUresult e, CUresult want, const char *frag)
{
	const char *s = err(e);
	if (e != want || !strstr(s, frag))
		TAP_DIAG("got %d (%s), want %d with \"%s\"", (int)e, s, (int)want, frag);
	return e == want && strstr(s, frag);
}

static inline CUstream stream(void)
{
	CUstream s = NULL;
	a->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	return s;
}

/* One case over both ranks: rank 0 prints it, ok only where both are. */
static inline void both(bool ok, const char *what)
{
	bool peer = ok;
	if (me == 1)
		MPI_Send(&ok, 1, MPI_C_BOOL, 0, 7, MPI_COMM_WORLD);
	else
		MPI_Recv(&peer, 1, MPI_C_BOOL, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (me == 0)
		TAP_OK(ok && peer, "%s (rank 0 %s, rank 1 %s)", what, ok ? "ok" : "failed", peer ? "ok" : "failed");
}

#endif
