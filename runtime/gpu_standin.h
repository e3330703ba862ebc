/*
 * gpu_standin.h: the checking stand-in for a GPU, shared by its three
 * parts: gpu_standin.c (the driver: memory, streams, events, modules and
 * launches, and the engine that runs queued work), gpu_standin_lt.c
 * (cuBLASLt's matmul by the host's BLAS) and gpu_standin_nccl.c (NCCL's
 * collectives and transfers over MPI between the ranks), and by the table
 * that puts their entries together (gpu_standin_load.c). The two
 * libraries queue their work through the driver's engine (si_*, below).
 *
 * Device memory is host memory handed out at addresses no host pointer
 * has (from 0x200000000000 up, with unmapped gaps between allocations), so
 * a device pointer used on the host faults at once and a host pointer
 * given as a device one fails the lookup. Every pointer, size and offset a
 * call names is checked against the live allocations when the call is
 * made; the first bad one fails with a message that names the call, the
 * range and the allocation it missed (cuGetErrorString, ncclGetErrorString
 * and cublasLtGetStatusString return it for that error).
 *
 * Work is queued per stream and runs only when the host waits (a stream
 * or event query or synchronize), in stream order, a wait on an event
 * holding its stream until the event's work is done: a host that reads a
 * result before waiting for it reads stale bytes, as it could on a GPU.
 * Vector clocks over streams, events and the host's waits check that two
 * pieces of work on different streams that touch the same bytes (one of
 * them writing) are ordered by events: an unordered pair is a race, and
 * the call that queued the second one fails, naming both.
 *
 * Stream capture (cuStreamBeginCapture to cuStreamEndCapture) records
 * the work queued on the capturing stream, and on the streams that join
 * it by waiting on an event recorded in it, as a graph: each piece of
 * work kept as a template (its pointers checked when recorded), and the
 * events recorded and waited for between the streams. cuGraphLaunch
 * queues a copy of every template, in the order they were recorded, on
 * the launch's stream and on streams of the executable graph's own, the
 * events replayed between them, so a launch's work is checked as live
 * work is (pointers, races, NCCL's order). The calls CUDA refuses during
 * a capture are refused with its codes (gpu_standin.c says which), and
 * the capture is invalidated as CUDA does.
 */
#ifndef PCC_RUNTIME_GPU_STANDIN_H
#define PCC_RUNTIME_GPU_STANDIN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/gpu_api.h"

/* A byte range of device memory a piece of work reads or writes. */
struct si_range {
	CUdeviceptr lo, hi;
	bool write;
};

/* A piece of queued work. step() runs or advances it: 0 done, 1 still in
 * flight (called again at the next wait), or a negative value after
 * si_fail(). done() frees it, rg included (NULL: ir_free of rg and op). */
struct si_op {
	const char *what; /* the call that queued it, for messages */
	int (*step)(struct si_op *op, bool first);
	void (*done)(struct si_op *op);
	/* A graph launch's copy of a recorded op (si_op_clone): called on the
	 * copy, which holds the template's bytes; it replaces the pointers
	 * the template owns by its own (or NULL) before anything can fail,
	 * then returns 0, or -1 after si_fail (done() then frees the copy).
	 * NULL: the op owns nothing but rg. */
	int (*clone)(struct si_op *op);
	size_t size;         /* of the whole op (si_op_new's) */
	struct si_range *rg; /* [nrg], owned */
	int nrg;
	/* the engine's */
	uint64_t call;  /* which API call queued it (1, 2, ...) */
	int stream;     /* its stream's index */
	uint64_t clock; /* its place on that stream */
	bool started;
	CUevent wait;     /* a wait on an event: clock of its stream ... */
	int wait_stream;  /* ... on this stream */
	uint64_t wait_at; /* ... to reach */
	struct si_op *next;
};

/* What the last failed call of a library went wrong on, for its error
 * string: "NAME [GPU stand-in: WHAT]" for its code. */
struct si_why {
	char text[1536];
	int code;
};
/* Sets w to code's name and the printf-formatted reason; returns code. */
int si_why_set(struct si_why *w, int code, const char *name, const char *fmt, va_list ap);
/* Sets w to the driver's text for its error e (a call the driver part
 * refused); returns code. */
int si_why_pass(struct si_why *w, int code, int e);
/* w's text when it is about code, else name. */
const char *si_why_text(const struct si_why *w, int code, const char *name);

/* Records what went wrong (printf format) for the error string of code e
 * and returns e. */
CUresult si_fail(CUresult e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The host address of device bytes [p, p + n), all inside one live
 * allocation; NULL after si_fail (naming what, e.g. "the source"). */
void *si_host(CUdeviceptr p, size_t n, const char *what);
/* Checks that s names a live stream (NULL: the default stream). */
CUresult si_stream_ok(CUstream s, const char *what);
/* Queues op on stream s: checks its ranges against the live allocations
 * and against unordered work on other streams; on failure frees op. */
CUresult si_enqueue(CUstream s, struct si_op *op);
/* A new op of size bytes (a struct whose first member is a si_op). */
void *si_op_new(size_t size, const char *what, int (*step)(struct si_op *, bool), int nrg);
/* Whether stream s is capturing a graph (its work is recorded, not queued). */
bool si_capturing(CUstream s);
/* A copy of recorded op t to queue (t->clone's), or NULL after si_fail. */
struct si_op *si_op_clone(const struct si_op *t);
/* The sticky error of a failed piece of work, or CUDA_SUCCESS. */
CUresult si_sticky(void);
/* Keeps handle h reachable until the process ends: the stand-in keeps the
 * handles it gives out, dead ones included (a use after destroy is caught
 * by its magic), so that leak checkers see them as held, not lost. */
void si_keep(void *h);
/* The text si_fail recorded for e, or NULL. */
const char *si_detail(int e);
/* For the tests: NCCL communicators made and neither destroyed nor
 * aborted yet; *aborted (unless NULL): those ncclCommAbort freed. */
int si_nccl_live(int *aborted);

/* Each part's entries of the table a (gpu_standin_load.c calls them once):
 * the driver's, for ndev devices of mem bytes each and compute
 * capability sm (80 or 90), its default stream made live; cuBLASLt's;
 * NCCL's. */
void si_fill_driver(struct gpu_api *a, int ndev, size_t mem, int sm);
void si_fill_lt(struct gpu_api *a);
void si_fill_nccl(struct gpu_api *a);

#endif
