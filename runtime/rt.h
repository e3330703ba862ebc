/*
 * rt.h: the CPU runtime's pieces, shared by pcc-run's files. One process
 * runs one device program of a plan (ir/plan.h): its arena, its
 * instruction stream with the reference kernels, and the communication
 * table (comm.h) for transfers and collectives. Depends on ir/, on the
 * reference kernels (kernels/kernels.h) and on ONNX file I/O without the
 * importer (onnxio/onnxio.h), never on compiler/. Every file below is in
 * the library libpccrt (pccrt_dep), which pcc-run (main.c), the tests and
 * the benchmarks' timing drivers link; no module depends on it.
 *
 *   exec.c     one instruction at a time, each through the device table
 *              (device.h): kernels, copies, collectives, sends, receives;
 *              kernel timing for --profile by the device's events
 *   device_cpu.c  the host's device table: kernels on the arena,
 *              transfers and collectives through the communication table
 *              (exec_internal.h: what it shares with its two helpers)
 *   collective.c  a collective: operands packed to rank-major blocks for
 *              the table, the result unpacked
 *   overlap.c  receives and collectives started early, finished late
 *   step.c     a step: inputs into their slots, the per-micro-batch parts in
 *              the stage's order, the per-step part, outputs saved
 *   state.c    parameters loaded from the model, state and accumulators,
 *              outputs and parameters gathered on rank 0
 *   data.c     inputs and training data: the backend-test layout, token files
 *   gpu*.c     the CUDA device table: the arena on a GPU, kernels,
 *              cuBLASLt and NCCL (gpu_internal.h); gpu_none.c where it is
 *              not built
 *   ckpt*.c    checkpoints
 *   trace.c    --trace: the measured timeline, a Chrome trace-event file
 *   run.c      pcc-run's program (rt_main): options, the load, the run
 *              loop, errors; main.c, pcc-run's own file, only calls it
 */
#ifndef PCC_RUNTIME_RT_H
#define PCC_RUNTIME_RT_H

#include "ir/plan.h"
#include "runtime/comm.h"
#include "runtime/device.h"

/* One run of a part of the program within a step, in the order the step
 * runs them (step.c builds the list once). Trace positions number what a
 * step does: a segment's feed at pos, its instruction i at pos + 1 + i -
 * lo, its save at pos + 1 + hi - lo; the step's end one past the last
 * segment's save. */
struct rt_seg {
	int mb;     /* the micro-batch (its slots) */
	int lo, hi; /* instructions [lo, hi) */
	int part;   /* 0 forward or whole, 1 backward, 2 per step */
	bool feed;  /* the micro-batch's inputs go in first */
	int pos;    /* trace position of its feed */
};

struct rt_overlap;

struct rt {
	const struct plan *p;
	const struct plan_device *d; /* this rank's program */
	struct rt_comm *c;
	uint8_t *arena; /* d->arena_bytes; on a device with memory of its own
			 * (a GPU) the host's copy of what the host reads and
			 * writes, reserved whole but only touched pages take
			 * memory */
	bool sparse;    /* arena is such a reservation (mmap) */
	/* the device that runs the program (device.h; rt_init: the host's)
	 * and its implementation's state */
	const struct rt_device_ops *dev;
	void *dev_state;
	int mb;           /* the micro-batch whose slots are in use */
	int pc;           /* the instruction running (for messages) */
	uint8_t *scratch; /* packing collectives */
	size_t nscratch;
	int micro; /* micro-batches per step */
	/* output slices this rank writes (writer, not per step), saved per
	 * micro-batch after the part that writes them: saved[m * nbuf + b] */
	void **saved;
	void **saved_step; /* per-step outputs: saved_step[b] */
	/* per device and buffer, computed once from the plan: the part writing
	 * a gathered output (0 forward or whole, 1 backward, 2 per step; -1
	 * none), and whether it is the saver of its parameter or state slice
	 * (the first buffer, by rank then index, holding that slice: the copy
	 * gathered or checkpointed) */
	int8_t **part;
	uint8_t **saver;
	/* generated host kernels (kernels.c): fn[k] runs kernel k's rows
	 * [begin, end); NULL where the reference kernel runs */
	struct hostcode *hc;
	void (**fn)(void **args, int64_t begin, int64_t end);
	struct pool *pool;
	/* an inference plan's parameters that dots multiply by (B), packed
	 * for igemm at their first use (kernels_gemm.c), by address */
	struct rt_packed {
		const void *src;
		int64_t batch, k, n;
		bool tb;
		float *data;
	} * packed;
	int npacked;
	double t_kernel, t_comm; /* seconds in kernels, in the table */
	double t_gemm;           /* of t_kernel: in kernels whose core is a dot (plan_kernel_core) */
	/* per-kernel profile, filled only where the caller allocated it
	 * (--profile, profile.c; the codegen benchmark's PCC_BENCH_PROFILE):
	 * seconds and calls, [nkernels]; timed by the device's events, read
	 * at rt_sync: the pairs recorded since */
	double *prof_time;
	long *prof_calls;
	struct rt_timed {
		struct rt_event *a, *b;
		int kernel;
	} * timed;
	int ntimed, captimed;
	struct rt_seg *seg; /* a step's segments (step.c) */
	int nseg;
	bool poison;     /* tests: a freed buffer's bytes are set to 0xff */
	bool failed;     /* the run failed: the device's communicators
			  * are torn down as after an error (rt_release) */
	bool no_overlap; /* --no-overlap: every receive and collective
			  * waits at its instruction (the host's device) */
	/* --cuda-graph (device.h's step_begin): auto records a step that later
	 * steps replay; on also an inference's one step, which none does;
	 * off none */
	enum rt_graph { RT_GRAPH_AUTO, RT_GRAPH_ON, RT_GRAPH_OFF } graph;
	bool replay;           /* this step replays the device's recording: its
				* instructions are not issued (step.c) */
	struct rt_overlap *ov; /* overlap.c: which receives start early, which
				* collectives finish late; NULL: none */
	/* since the start: receives run, of them posted before their
	 * instruction; collectives run, of them started before their
	 * instruction or waited for after it */
	long n_recv, n_early, n_coll, n_late;
	long step;               /* steps run so far (since the start or resume) */
	struct rt_trace *trace;  /* --trace (trace.c); NULL: nothing recorded */
	struct rt_fault {        /* fault injection for tests (PCC_RUN_FAULT) */
		int rank, instr; /* where: this rank's instruction, at step `step` */
		long step;
		char kind; /* 'x' exit, 'h' hang, 'e' error, 'a' an assertion
			    * fails, 'n' the checkpoint
			    * file write of `step + 1` runs out of space, 'c'
			    * rank 0 dies as it puts that checkpoint in place
			    * (run.c parses it); 0 none */
	} fault;
};

/* Buffer b's bytes in the host's arena (the micro-batch r->mb's slot). */
static inline void *rt_buf(const struct rt *r, const struct plan_buffer *b)
{
	return r->arena + b->offset + plan_slot_stride(b) * (r->mb % plan_buffer_slots(b));
}

/* Ranks sharing this host (MPI's shared-memory split, under any MPI and
 * launcher: mpirun, srun; 1 when unknown). */
static inline int rt_local_ranks(const struct rt_comm *c)
{
	return c && c->local_size > 0 ? c->local_size : 1;
}

/* ---- kernels.c */
/* The CPUs this process may run on (its affinity mask); 0: unknown. */
int rt_allowed_cpus(void);
typedef void (*rt_kernel_fn)(void **args, int64_t begin, int64_t end);
/* Loads the plan's host kernels (after checking this CPU has the features
 * they need) and a pool of `threads` threads (<= 0: the cores divided
 * among this host's ranks). Nothing with reference set. */
int rt_kernels_load(struct rt *r, bool reference, int threads);
void rt_kernels_release(struct rt *r);
/* Runs instruction x's kernel here (generated code, or one of the ops
 * kernels.c runs on the arena's buffers): true, *rc its status; false
 * when the reference kernel must run it. A fused kernel whose first op is
 * a dot or a convolution (plan_kernel_core) runs that op first, then its
 * generated epilogue in place on the result. */
bool rt_kernel_host(struct rt *r, const struct plan_instr *x, int *rc);
/* The same for plan kernel `kernel` over buf (its nin operands, then its
 * results). */
bool rt_kernel_host_on(struct rt *r, int kernel, void *const *buf, int *rc);
/* Runs kernel instruction x on the host's arena: rt_kernel_host, else the
 * reference kernel. */
int rt_run_kernel(struct rt *r, const struct plan_instr *x);
/* The same for plan kernel `kernel` over buf (operands, then results): a
 * device runs a kernel it has no code for, and the GPU stand-in a launch,
 * this way. */
int rt_run_kernel_on(struct rt *r, int kernel, void *const *buf);

/* ---- profile.c: --profile */
/* Allocates prof_time and prof_calls (every kernel run from now on is
 * timed); -ENOTSUP where a GPU's driver cannot time kernels. */
int rt_profile_start(struct rt *r);
/* The kernels by time over `steps` steps, a table on f: the `rows`
 * slowest, the rest summed in one line; rows 0: every kernel. */
void rt_profile_print(const struct rt *r, long steps, long rows, FILE *f);

/* ---- trace.c: pcc-run --trace FILE.json, the measured timeline (trace.c
 * says what it holds). Every call but open and close records only; the
 * caller checks r->trace first, so a run without --trace pays nothing. */
/* Every rank its event buffer and message numbering; rank 0 opens path
 * (an error naming it, for the caller to agree on before any step). */
int rt_trace_open(struct rt *r, const char *path);
/* Rank 0 learns each rank's clock offset. Collective, before the first step. */
int rt_trace_clock(struct rt *r);
/* Instruction i (x, at trace position pos) ran from t0 to t1 (ir_now());
 * receives and collectives still in flight are left to rt_trace_op. */
void rt_trace_instr(struct rt *r, const struct plan_instr *x, int i, int pos, double t0, double t1);
/* Instruction i of micro-batch mb from t0 to t1, whatever it is. */
void rt_trace_op(struct rt *r, int i, int mb, double t0, double t1);
/* Segment s ran from t0 to t1. */
void rt_trace_part(struct rt *r, const struct rt_seg *s, double t0, double t1);
/* Step r->step ran from t0 to t1 (the time the log states). */
void rt_trace_step(struct rt *r, double t0, double t1);
/* Every rank's events to rank 0, which writes the file (plan: its name
 * there); *events: how many. Collective. */
int rt_trace_write(struct rt *r, const char *plan, long *events);
void rt_trace_close(struct rt *r);

/* ---- exec.c */
/* Reads PCC_RUN_FAULT=RANK:INSTR:KIND[:STEP] (KIND exit, hang, error or
 * assert; STEP 1-based, default 1): at that instruction the rank exits at
 * once, sleeps forever, fails as a kernel error would, or fails an
 * IR_ASSERT as a broken invariant would. RANK:ckpt:enospc[:STEP]:
 * the rank's file of the checkpoint saved after step STEP finds the disk
 * full half way (ckpt.c). For the fault tests. A rank, instruction or step
 * (of `steps`) that does not exist is refused: it would never fire. */
int rt_fault_parse(struct rt *r, const char *spec, long steps);
/* Runs segment s's instructions (r->mb is its micro-batch) on the device.
 * Errors are prefixed "instruction I (kind)". */
int rt_run(struct rt *r, const struct rt_seg *s);
/* Waits for the device's work, then adds the kernel times its events
 * measured (--profile) to prof_time and prof_calls. */
int rt_sync(struct rt *r);
/* The events of kernels not yet read, freed (before the device closes). */
void rt_timed_release(struct rt *r);
/* ---- overlap.c: the host device's (device_cpu.c) */
/* Overlap of communication with compute (unless no_overlap),
 * worked out once from r->seg and the memory plan: each receive starts
 * (MPI_Irecv) at the earliest trace position after which no step of the
 * trace touches a byte of its buffer before the receive's instruction,
 * which waits for it. Each collective starts (MPI_Iallreduce, ...) at the
 * earliest position after which nothing writes its input or touches its
 * result up to its instruction and no collective of its communicator
 * comes between, and is waited for before the first position after its
 * instruction that touches its result or writes its input. Receives from
 * one peer start in the order of their instructions and the collectives
 * of a communicator in program order, so messages match as they would
 * without overlap; nothing is waited for before its own instruction. */
int rt_overlap_init(struct rt *r);
/* What is due before trace position pos (r->seg): collectives finished,
 * receives started, progress driven. Call it for every position in order
 * (rt_run does for instructions); pos past the last ends the step. Errors
 * of a collective name the instruction that started it. */
int rt_overlap_at(struct rt *r, int pos);
/* Frees the overlap's plan and r->seg. */
void rt_overlap_release(struct rt *r);

/* ---- state.c */
/* The arena (checked against the host's memory first; with sparse only
 * reserved, for a device with memory of its own), state at its init, the
 * output bookkeeping; the host's device (rt_device_cpu), which the caller
 * may replace before it opens it. Collective: no; errors name the size. */
int rt_init(struct rt *r, const struct plan *p, struct rt_comm *c, bool sparse);
/* Closes the device, frees it all. */
void rt_release(struct rt *r);
/* Every parameter and state buffer to the device (to_device) or back. */
int rt_state_sync(struct rt *r, bool to_device);
/* Loads this rank's parameter slices from the ONNX model; with fill (not
 * NULL, fill->on), a parameter whose external data file is absent is
 * filled by rt_fill_block instead, else that is an error naming the file
 * and --init. *filled: the parameters filled on this rank (NULL: unused). */
struct rt_fill;
int rt_load_params(struct rt *r, const char *model, const struct rt_fill *fill, int *filled);

/* ---- fill.c: pcc-run --init [SPEC] --seed N, values for parameters whose
 * weights are absent: rules PATTERN=KIND tried in order, then defaults (a
 * name holding "bias" or "beta": zeros; a vector: ones; else normal 0.02).
 * Each element a function of the seed, the name and its place in the whole
 * parameter, so a sharded parameter gets the same values on any mesh. */
enum rt_fill_kind { RT_FILL_ZEROS, RT_FILL_ONES, RT_FILL_CONST, RT_FILL_NORMAL, RT_FILL_UNIFORM, RT_FILL_COUNT };
struct rt_fill_rule {
	const char *pattern; /* fnmatch shell pattern over the parameter's name */
	enum rt_fill_kind kind;
	double value; /* const: the value; normal: the standard deviation; uniform: the bound */
};
struct rt_fill {
	bool on; /* --init given */
	uint64_t seed;
	int n; /* rules, in the order given */
	struct rt_fill_rule *rule;
	char *text; /* the spec, cut into the rules' patterns */
};
/* Parses SPEC (NULL or "": defaults only); -EINVAL naming a bad rule. */
int rt_fill_parse(struct rt_fill *f, const char *spec, uint64_t seed);
void rt_fill_release(struct rt_fill *f);
/* The rule for a parameter of this name and rank (pattern "(default)" when none matches). */
struct rt_fill_rule rt_fill_rule_for(const struct rt_fill *f, const char *name, int rank);
const char *rt_fill_kind_name(enum rt_fill_kind k);
/* Fills the block at start[] of a parameter of shape global, dtype a float. */
int rt_fill_block(const struct rt_fill *f, const char *name, enum ir_dtype dtype, const struct ir_shape *global,
		  const int64_t *start, const struct ir_shape *block, void *dst);
/* Rank 0 gets every parameter whole (params[p->nparams], allocated); the
 * others send their slices. Collective over all ranks. */
int rt_gather_params(struct rt *r, struct ir_tensor *params);
/* Rank 0 gets the outputs of the last step: out[m * noutputs + o] for
 * every micro-batch m (per-step outputs in the last micro-batch's entries,
 * others NULL data), allocated. Collective. */
int rt_gather_outputs(struct rt *r, struct ir_tensor *out);

/* ---- ckpt.c: checkpoints (DIR/step-NNNNNNNN/: one file of raw shards per
 * rank and manifest.json with every shard's place, slice and XXH3; DIR/LATEST
 * names the newest complete one). Each file is written under a temporary
 * name, fsynced and renamed; the checkpoint directory is renamed into place
 * only when every rank's file and the manifest are durable, and the one
 * before it is kept, so a crash at any moment leaves a loadable checkpoint.
 * The calls are collective. */
int rt_ckpt_save(struct rt *r, const char *dir, long step);
/* At the start of a run that saves checkpoints: rank 0 creates dir if it
 * is missing, then every rank checks that it is a directory it may write,
 * so a bad --checkpoint stops the run before its first step, not at its
 * first save. Collective; 0, or a negative errno with a message on the
 * rank that found the fault (-ECANCELED elsewhere). */
int rt_ckpt_check_dir(struct rt *r, const char *dir);
/* Loads the checkpoint dir/LATEST names, or dir itself when it is one;
 * when LATEST is missing, corrupt or names no complete checkpoint, or what
 * it names fails its checks, the newest other complete one, then the ones
 * before it (each time a warning); resharding every slice from the shards
 * that overlap it, so the mesh may differ from the one that saved it.
 * *step: the steps it had run; used: its directory and why that one.
 * -ECANCELED when dir is one checkpoint and fails its checks: the rank that
 * found the fault has printed it; other errors are for the caller to
 * print. */
int rt_ckpt_load(struct rt *r, const char *dir, long *step, char *used, size_t nused);

/* ---- step.c */
/* One step: accumulators zeroed, inputs[m * ninputs + i] fed to
 * micro-batch m, the parts run in order, outputs saved. */
int rt_step(struct rt *r, const struct ir_tensor *inputs);

/* An evaluation step (pcc-run --eval-data): the inputs fed and the
 * per-micro-batch part run for every micro-batch, never the per-step part,
 * so neither parameters nor optimizer state are updated; the parameter
 * and state buffers the part itself writes (a training-mode BatchNorm's
 * running statistics) are put back as they were. A pipelined plan whose
 * loss comes out of the forward parts runs those alone; otherwise the
 * whole part runs (a plan without a forward/backward split), and the
 * gradients it leaves in the accumulators are zeroed by the next step.
 * The graph is the training step's: BatchNorm normalizes by the batch's
 * statistics, dropout drops. Outputs are saved as rt_step saves them (the
 * loss: rt_gather_outputs). Receives and collectives wait at their
 * instruction. */
int rt_eval_step(struct rt *r, const struct ir_tensor *inputs);

/* ---- run.c */
/* A step as rt_main runs it: rt_step, or a benchmark's wrapper of it. */
typedef int (*rt_step_fn)(struct rt *r, const struct ir_tensor *inputs);
/* pcc-run's whole program on its command line (usage() in run.c):
 * options, the load, every step run by step (rt_step when NULL), errors;
 * its exit status (0, 1 an error, 2 a usage error). */
int rt_main(int argc, char **argv, rt_step_fn step);

/* ---- data.c: what a run feeds the plan's inputs. A data source yields
 * one step's inputs at a time, micro-batch by micro-batch. */
struct rt_data;
/* The backend-test layout (input_N.pb, in DIR or in each
 * DIR/test_data_set_K/; input i reads N = plan.input_file[i], else i; a
 * bf16 input also reads ONNX 1.12's UINT16): each set holds either one micro-batch or one
 * whole step (dimension 0 of every input `micro` times the plan's), used in
 * turn, cycling. The labels of a class-index loss are checked: one line
 * naming the file, element, label and range. */
struct rt_data *rt_data_open(const char *dir, const struct plan *p);
/* A flat file of token ids (type "u16", the default when NULL, "u32" or
 * "i32") for a plan whose inputs are ids and the labels of its cross
 * entropy, both [B,T]: every micro-batch row a window of T + 1 tokens at a
 * place set by the step (data.c gives the rule). Refused in one line: a
 * plan without such inputs, a size that is not whole tokens, fewer tokens
 * than one window. */
struct rt_data *rt_data_open_tokens(const char *path, const char *type, const struct plan *p);
/* The inputs of the next step: in[m * ninputs + i], valid until the next
 * call. Fails (token files) on a token read as an id outside the rows of
 * the embedding the ids index (the plan's classes where none is found) or
 * read as a label outside [0, plan classes). */
int rt_data_next(struct rt_data *d, const struct ir_tensor **in);
/* The next call feeds step `step` (0-based): where a resumed run goes on. */
void rt_data_seek(struct rt_data *d, long step);
/* Data sets taken in a random order (pcc-run --shuffle SEED): each pass
 * over the sets a permutation of them drawn from SEED and the pass's
 * number, so the order depends on the step alone (a resumed run, and
 * every rank, reads the same sets). -EINVAL for a token file. */
int rt_data_shuffle(struct rt_data *d, uint64_t seed);
/* The steps that feed every set once from step 0 (rt_data_seek), and in
 * *mbs how many of their micro-batches do before the sets come round again
 * (the backend-test layout; --eval-data). */
int rt_data_pass(const struct rt_data *d, int *mbs);
/* The sets the last rt_data_next fed, in micro-batch order (n of them; a
 * token file: none, *n = 0). */
const int *rt_data_sets(const struct rt_data *d, int *n);
/* "3 data sets" or "FILE: N tokens, W windows of T + 1", for the log. */
void rt_data_describe(const struct rt_data *d, char *buf, size_t n);
void rt_data_close(struct rt_data *d);

#endif
