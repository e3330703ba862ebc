/*
 * device.h: the runtime's device-backend table. The executor (exec.c,
 * step.c, state.c, run.c) reaches the device that holds a rank's arena only
 * through these entries, as it reaches other ranks only through the
 * communication table (comm.h); it never asks which device it has.
 * Dependencies go one way: executor -> this table -> an implementation ->
 * the host kernels (kernels.c) and the communication table.
 *
 *   device_cpu.c  the host: kernels on the arena itself (generated code,
 *                 pcc-run's host ops, the reference kernels), transfers and
 *                 collectives through the communication table, overlapped
 *                 with compute (overlap.c, collective.c)
 *   gpu*.c        CUDA through the driver API (gpu_api.h): kernels as PTX
 *                 or cuBLASLt GEMMs on streams, NCCL; gpu_none.c where the
 *                 CUDA headers were not found
 *
 * The checking stand-in for a GPU (gpu_standin*.c, PCC_GPU_STANDIN=1) is an
 * implementation of the driver, cuBLASLt and NCCL APIs that the CUDA backend
 * calls (gpu_api.c picks it), so it is a third backend by construction,
 * without a table of its own: every line of the CUDA backend runs on it.
 *
 * Every entry returns 0 or a negative errno with a message in ir_error().
 * Instructions run on the micro-batch r->mb's slots. On a device with its
 * own memory (not host_arena), r->arena is the host's copy of the arena:
 * put and get move a buffer between the two; on the host they are
 * the arena itself (put and get do nothing).
 */
#ifndef PCC_RUNTIME_DEVICE_H
#define PCC_RUNTIME_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/plan.h"

struct rt;
struct rt_event; /* a point in the device's order of work */

struct rt_device_ops {
	const char *name;  /* "cpu", "cuda": for messages */
	const char *clock; /* what times kernels for --profile */
	bool host_arena;   /* kernels work on r->arena itself */
	bool issues;       /* launch and gemm only issue the work, which the
			    * device finishes later (sync): their time is the
			    * issue's */

	/* The device for rank r's program (r->p, r->d): not collective; a
	 * missing driver or device is a one-line error. tf32: f32 dots on
	 * tensor cores where the device has them. */
	int (*open)(struct rt *r, bool tf32);
	/* What the device needs of the other ranks (communicators of its
	 * own). Collective over all ranks. */
	int (*connect)(struct rt *r);
	/* Frees all of it; safe after a failed open, and twice. */
	void (*close)(struct rt *r);

	/* Device memory beyond the arena: n bytes at *addr, or -ENOMEM naming
	 * what and the size. */
	int (*alloc)(struct rt *r, size_t n, const char *what, uint64_t *addr);
	void (*free)(struct rt *r, uint64_t addr);

	/* Buffer b of the host's copy to the device, back, or every byte of
	 * the device's set to `byte`; ordered after the work issued before
	 * that touches it, and done on return (put, get). */
	int (*put)(struct rt *r, const struct plan_buffer *b);
	int (*get)(struct rt *r, const struct plan_buffer *b);
	int (*fill)(struct rt *r, const struct plan_buffer *b, uint8_t byte);
	/* A copy instruction, device to device. */
	int (*copy)(struct rt *r, const struct plan_instr *x);

	/* Kernel instruction i (x): gemm runs it as a library GEMM and returns
	 * true (*rc its status) when its kernel is one the device runs so;
	 * false leaves it to launch, which runs the kernel's code (the
	 * device's, or the host's where the device has none). */
	bool (*gemm)(struct rt *r, const struct plan_instr *x, int *rc);
	int (*launch)(struct rt *r, const struct plan_instr *x, int i);

	/* A send or receive, and a collective, at trace position pos of the
	 * step (rt.h; -1 outside a step's segments): through the
	 * communication table, in the device's order of work. */
	int (*transfer)(struct rt *r, const struct plan_instr *x, int pos);
	int (*collective)(struct rt *r, const struct plan_instr *x, int pos);
	/* Once the step's segments are known (r->seg): what the device plans
	 * over them (the host: which receives and collectives overlap
	 * compute). NULL: nothing. */
	int (*plan_step)(struct rt *r);
	/* What is due before trace position pos (called for every position in
	 * order; pos past the last ends the step). NULL: nothing. */
	int (*at)(struct rt *r, int pos);
	/* Whether the device puts instruction x at pos in the trace itself
	 * (rt_trace_op; the host: a receive or collective it overlaps, from
	 * its start to its wait). NULL: never. */
	bool (*traced)(const struct rt *r, const struct plan_instr *x, int pos);

	/* Waits until every piece of work issued so far has finished. */
	int (*sync)(struct rt *r);

	/* A step's work as one unit, where the device can (a CUDA graph):
	 * called first thing in a step (rt_step, not an evaluation's). The
	 * device may record the step's work from here to the step's sync,
	 * which runs it; or replay a recording: then *replay is set and the
	 * step issues only its inputs (put) and saves (save), its
	 * instructions being in the recording. NULL: every step issues its
	 * instructions. */
	int (*step_begin)(struct rt *r, bool *replay);
	/* Buffer b's bytes (r->mb's slot) into dst, host memory the caller
	 * keeps: done by the step's sync at the latest (at once outside a
	 * recorded step). NULL: get, then a copy out of the host's arena. */
	int (*save)(struct rt *r, const struct plan_buffer *b, void *dst);
	/* For the run's summary: the step the recording was made at (1-based;
	 * 0: none) and the steps that replayed it; where none was made, *why
	 * says why (NULL: none was asked for). NULL: the device records
	 * nothing. */
	void (*graph_report)(const struct rt *r, long *captured, long *replays, const char **why);
	/* Events: *ev marks the device's work issued so far; elapsed, once both
	 * are past (sync), is the seconds between two. */
	int (*event_record)(struct rt *r, struct rt_event **ev);
	int (*event_elapsed)(struct rt *r, struct rt_event *a, struct rt_event *b, double *seconds);
	void (*event_free)(struct rt *r, struct rt_event *ev);

	/* For --profile: -ENOTSUP where events cannot time kernels; *peak_bw
	 * the device memory's bytes/s (0: unknown). How kernel k ran ("PTX",
	 * "cuBLASLt", "host"; NULL: nothing to say). */
	int (*profile_check)(const struct rt *r, double *peak_bw);
	const char *(*kernel_how)(const struct rt *r, int k);
	/* The kernel instructions that ran on the host for want of device
	 * code, and in buf (n bytes; n 0: count only) what they are. */
	int (*fallback_report)(const struct rt *r, char *buf, size_t n);
};

/* The host (device_cpu.c); every rank's until run.c picks another. */
extern const struct rt_device_ops rt_device_cpu;
/* The CUDA backend (gpu.c), or NULL in a build without the CUDA headers
 * (gpu_none.c). */
const struct rt_device_ops *rt_device_cuda(void);

#endif
