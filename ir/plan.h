/*
 * plan.h: the executable plan, in memory. What the compiler's SPMD lowering
 * produces, what plan.bin holds (ir/plan.proto, written by plan_io.c and
 * read by plan_unpack.c) and what the runtime runs. Depends only on ir.h's
 * plain types (dtypes, shapes, the op table and its attributes).
 *
 * A plan is a set of devices (global ranks 0 .. ndevices-1), each with its
 * own program: buffers (tensors with a local dtype and shape, placed at an
 * offset of the device's arena) and an instruction stream run in order. A
 * kernel instruction runs one core op from the plan's kernel table over
 * buffers; collectives run over a communicator (an ordered list of ranks:
 * every rank of it issues the same collectives in the same order); sends
 * and receives pair by (peer, tag). Parameters, inputs and outputs are
 * global tensors; a device's buffer bound to one holds the slice of it that
 * starts at `start` (per dimension, in elements) with the buffer's shape.
 *
 * A plan of several pipeline stages gives each stage its own ranks; a
 * stage's sends carry the values a later stage reads. A program's first
 * part, all but its last nstep instructions, runs once per micro-batch (micro
 * times a step): inputs and outputs are one micro-batch's slices of the
 * global batch. A training plan's first part also adds every gradient into
 * its accumulator (PLAN_BIND_ACCUM, zeroed before each step; the gradients
 * come pre-scaled by 1/micro, so the sum is the mean; a plan of one
 * micro-batch has none and reads the gradients directly); the rest of the
 * program runs once per step: it reduces the accumulated gradients across
 * data-parallel copies as the sharding demands (all-reduce, or reduce-
 * scatter when the update is split), runs the optimizer on each device's
 * slice, and copies the new values over the parameter and state buffers
 * (all-gathering a split update back to the parameter's own sharding).
 * A pipelined training plan splits each device's per-micro-batch part into
 * a forward and a backward part (nfwd) that run in its stage's order
 * (GPipe or 1F1B); values the backward part reads from the forward part
 * of the same micro-batch live in buffers with one slot per micro-batch in
 * flight. Stages exchange activations in the forward parts, gradients in
 * the backward parts and the gradient norm's partial sums in the per-step
 * parts; every stage keeps its own copy of the step counter.
 *
 * Example: y = x @ w on two devices with w split by columns: each device
 * binds x whole and its half of w (start [0, 0] and [0, n/2]), runs the dot
 * kernel, and binds its y to output 0 at [0, 0] and [0, n/2].
 */
#ifndef IR_PLAN_H
#define IR_PLAN_H

#include "ir/ir.h"

#define PLAN_FORMAT_VERSION 6
#define PLAN_ALIGN 256 /* bytes: every buffer offset is a multiple */

enum plan_instr_kind {
	PLAN_KERNEL,         /* kernel `kernel` reads in[], writes out[] */
	PLAN_ALL_REDUCE,     /* out[0] = reduction (`reduce`) of in[0] over comm */
	PLAN_ALL_GATHER,     /* out[0] = concat of every rank's in[0] along `axis`,
			      * in comm rank order */
	PLAN_REDUCE_SCATTER, /* out[0] = piece `comm rank` along `axis` of the sum of
			      * every rank's in[0] */
	PLAN_ALL_TO_ALL,     /* in[0] cut into comm-size pieces along `axis`; piece r
			      * goes to rank r; out[0] = the received pieces concatenated
			      * along `axis2` in rank order */
	PLAN_SEND,           /* in[0] to rank `peer`, matched by `tag` */
	PLAN_RECV,           /* out[0] from rank `peer`, matched by `tag` */
	PLAN_COPY,           /* out[0] = in[0] (same bytes) */
	PLAN_FREE,           /* in[0] is dead from here on */
	PLAN_INSTR_KIND_COUNT
};

enum plan_reduce { PLAN_SUM, PLAN_MAX, PLAN_MIN, PLAN_REDUCE_COUNT };

/* What a buffer holds for the whole run or from outside. */
enum plan_bind {
	PLAN_BIND_NONE,   /* a temporary: written by an instruction */
	PLAN_BIND_PARAM,  /* slice of parameter `index`, loaded before the first step */
	PLAN_BIND_INPUT,  /* slice of input `index`, fed every step */
	PLAN_BIND_OUTPUT, /* slice of output `index`, read after every micro-batch, or
			   * after every step when the output is per_step (also
			   * written by an instruction) */
	PLAN_BIND_STATE,  /* slice of state tensor `index` (training: optimizer slots,
			   * step counter), every element set to its init before
			   * the first step, then kept and updated by the program */
	PLAN_BIND_ACCUM,  /* gradient accumulator of parameter `index` (its shape,
			   * the gradient's dtype): zeroed by the runtime before
			   * every step's first micro-batch */
	PLAN_BIND_COUNT
};

/* A buffer as every device of its stage has it: a stage's devices run one
 * program, and differ in their bound buffers' slices alone (plan_slice),
 * so that they may share one array of these. */
struct plan_buffer {
	enum ir_dtype dtype;
	struct ir_shape shape; /* local, elements */
	int64_t offset;        /* bytes into the device's arena, PLAN_ALIGN-aligned */
	int64_t bytes;         /* ir_dtype_size * numel */
	enum plan_bind bind;
	int index; /* the parameter, input or output it binds */
	int slice; /* a bound buffer's slice: the device's slice[slice] (the
		    * bound buffers numbered in order); -1: a temporary,
		    * which has none (plan_slice_of) */
	int slots; /* pipelined training: copies, one per micro-batch in
		    * flight, slot k at offset + k * the aligned size;
		    * micro-batch m uses slot m % slots (0 or 1: one) */
};

/* Where one device's bound buffer lies in its global tensor. */
struct plan_slice {
	int64_t start[IR_MAX_RANK]; /* where the slice starts, per dimension */
	bool writer;                /* outputs: this device's copy is the one to read
				     * (replicated slices have exactly one writer);
				     * true for every other buffer */
};

struct plan_instr {
	enum plan_instr_kind kind;
	int kernel; /* PLAN_KERNEL: index into plan kernels */
	int comm;   /* collectives: index into plan comms */
	enum plan_reduce reduce;
	int axis, axis2; /* gather/scatter/all-to-all dimensions */
	int peer;        /* send/recv: the other rank */
	int tag;         /* send/recv: matches a send with its receive */
	int nin, nout;
	int arg; /* in[] then out[]: args[arg .. arg + nin + nout) of the device */
};

#define PLAN_FOP_MAX_IN 3

/* One op of a fused kernel's body. Values are numbered: the kernel's
 * operands 0 .. nin-1, then body op i's result nin + i. */
struct plan_fop {
	enum ir_op op;
	struct ir_attrs a; /* CONSTANT data: a plan-owned copy */
	int nin;
	int in[PLAN_FOP_MAX_IN]; /* value numbers, each below this op's own */
	enum ir_dtype dtype;     /* the result */
	struct ir_shape shape;
};

/* One core op with local operand and result types: what a kernel runs.
 * A fused kernel (nbody > 0, the fusion pass's groups) runs its body's ops
 * in order instead; op is its last op's (the root, for display), a is
 * unused, and its one result is the last op's. Kernels codegen compiled
 * carry host code (plan.host_object defines "pcc_k<index>") and PTX
 * (plan.ptx defines the same name); rows is the number of independent
 * work items the code splits into (codegen.h). */
struct plan_kernel {
	enum ir_op op;
	struct ir_attrs a; /* CONSTANT data: a plan-owned copy */
	int nin, nout;
	enum ir_dtype *dtype;   /* [nin + nout] */
	struct ir_shape *shape; /* [nin + nout] */
	int nbody;
	struct plan_fop *body; /* [nbody] */
	bool host;             /* host code exists */
	bool gpu;              /* PTX exists */
	int64_t rows;
};

/* PTX text of every kernel with gpu set, for one GPU architecture. */
struct plan_ptx {
	char *arch; /* "sm_80", "sm_90" */
	char *text;
};

struct plan_comm {
	int n;
	int *ranks; /* [n] global ranks in comm rank order */
};

struct plan_device {
	int rank; /* global rank == index in plan devices */
	int stage;
	int coord[IR_MESH_AXES]; /* position in its stage's logical mesh */
	int nbuf;
	struct plan_buffer *buf;
	int ninstr;
	struct plan_instr *instr;
	int nargs;
	int *args;           /* buffer ids */
	int64_t arena_bytes; /* the arena this program needs */
	int nstep;           /* the last nstep instructions run once per step,
			      * after the last micro-batch (training: the update);
			      * the others once per micro-batch. 0: inference */
	int nfwd;            /* pipelined training: the per-micro-batch part is a
			      * forward part, the first nfwd instructions, and a
			      * backward part, the rest, run in the stage's order.
			      * 0: it runs as one */
	int nslice;
	struct plan_slice *slice; /* [nslice] its bound buffers' slices */
	/* buf (args) is an earlier device's array, equal to what this device's
	 * would be and shared to save memory (a stage's devices run one
	 * program: at scale, hundreds of copies). Read it, never change it:
	 * plan_device_unshare gives the device arrays of its own first; the
	 * plan frees a shared array once, with the device that owns it. */
	bool shared_buf, shared_args;
};

/* A temporary's slice: it starts at 0 and is its device's own. */
extern const struct plan_slice plan_no_slice;

/* Device d's slice of buffer b (plan_no_slice for a temporary). */
static inline const struct plan_slice *plan_slice_of(const struct plan_device *d, int b)
{
	int s = d->buf[b].slice;
	return s < 0 ? &plan_no_slice : &d->slice[s];
}

/* A global tensor the plan binds (parameter, input, output or state). */
struct plan_tensor {
	char *name;
	enum ir_dtype dtype;
	struct ir_shape shape; /* global */
	double init;           /* state: the value of every element at the start */
	bool per_step;         /* output: written once per step, by the update part */
};

struct plan_stage {
	int first_rank, ndevices; /* ranks [first_rank, first_rank + ndevices) */
	int rows, cols;           /* sub-mesh: nodes x devices per node */
	int n0, n1;               /* logical mesh; rank = first_rank + i0 * n1 + i1 */
	int norder;               /* pipelined training: 2 * micro, else 0 */
	int *order;               /* the schedule: m >= 0 runs the forward part of
				   * micro-batch m, -(m + 1) its backward part; each
				   * in increasing m, a forward before its backward */
};

/* Micro-batches per step: the runtime holds inputs and outputs for each,
 * so their count is bounded (plan_verify; the planner never asks more). */
#define PLAN_MAX_MICRO (1 << 16)

struct plan {
	int version;                        /* PLAN_FORMAT_VERSION */
	char *cluster;                      /* the cluster spec it was compiled for */
	int cluster_nodes, cluster_devices; /* the whole cluster */
	char *model;                        /* the ONNX file compiled, where the runtime loads the
					     * weights from: absolute in the compiler; in a plan
					     * file relative to its directory where they share
					     * a top folder (plan_write, plan_model_path);
					     * NULL: unknown */
	uint64_t model_hash;                /* of the ONNX file's bytes */
	uint64_t options_hash;              /* of the compile options that shaped the plan */
	bool train;
	char *train_config;    /* training: optimizer and options, readable
				* ("adamw lr=0.001 ..."); NULL otherwise */
	int labels_input;      /* training with a class-index loss (cross
				* entropy): the input holding the labels, integers
				* in [0, classes) or the ignored -100; -1: none */
	int64_t classes;       /* that loss's class count (an LM's vocabulary) */
	int *input_file;       /* [ninputs]: the N of the DIR/input_N.pb that feeds
				* input i, strictly increasing: its place among the
				* model's inputs when some were bound as constants at
				* compile time (pcc --const); NULL: i */
	int micro;             /* micro-batches per step (1: none; at most
				* PLAN_MAX_MICRO) */
	int64_t device_memory; /* bytes per device the plan must fit */
	int nstages;
	struct plan_stage *stages;
	int nparams, ninputs, noutputs, nstate;
	struct plan_tensor *params, *inputs, *outputs, *state;
	int nkernels;
	struct plan_kernel *kernels;
	int ncomms;
	struct plan_comm *comms;
	int ndevices;
	struct plan_device *devices;
	/* Generated code (codegen.c): one x86-64 ELF relocatable object with
	 * every host kernel, the CPU it was tuned for and the features it
	 * needs ("+avx2,+fma,..."); PTX per architecture. Empty: none. */
	uint8_t *host_object;
	size_t host_object_len;
	char *host_cpu, *host_features;
	int nptx;
	struct plan_ptx *ptx;
};

const char *plan_instr_kind_name(enum plan_instr_kind k); /* "kernel", "all_reduce", ... */
const char *plan_reduce_name(enum plan_reduce r);
const char *plan_bind_name(enum plan_bind b);
/* all_reduce, all_gather, reduce_scatter, all_to_all: run over a communicator */
bool plan_instr_is_collective(enum plan_instr_kind k);
/* The library op a kernel calls: a dot or a convolution, alone or as the
 * first op of a fused kernel (its epilogue the rest); else IR_OP_COUNT. */
enum ir_op plan_kernel_core(const struct plan_kernel *k);

/* An empty plan of version PLAN_FORMAT_VERSION; NULL on allocation failure. */
struct plan *plan_new(void);
void plan_free(struct plan *p);
/* Frees the plan's generated code (host object, its CPU and features, the
 * PTX) and marks no kernel as compiled: codegen replaces it whole. */
void plan_code_free(struct plan *p);
/* Gives device d its own copies of the arrays it shares with an earlier
 * device (plan_device.shared_buf, shared_args), so that they may change.
 * 0, or -ENOMEM with a message. */
int plan_device_unshare(struct plan_device *d);
/* Numbers device d's bound buffers' slices in buffer order (buf[].slice;
 * -1 for temporaries, left as they are when buf is shared) and gives it
 * that many, each at start 0 and a writer. 0, or -ENOMEM with a message. */
int plan_device_slices(struct plan_device *d);
/* Every field of two buffers equal: two devices of a stage have equal
 * buffers (their slices are apart), which their arrays may then share. */
bool plan_buffer_equal(const struct plan_buffer *a, const struct plan_buffer *b);

/* Frees what one kernel owns (types, body, constant data), not k itself. */
void plan_kernel_free(struct plan_kernel *k);

/* The first instruction of device d's per-step part. */
static inline int plan_step_first(const struct plan_device *d)
{
	return d->ninstr - d->nstep;
}

/* The fewest slots with which micro-batch m's slot, m % slots, is free
 * whenever the order (plan_stage.order, n entries) starts m's forward
 * part: micro-batch m - slots has finished its backward part. The order
 * runs forwards in micro-batch order (plan_verify checks it). */
int plan_schedule_slots(const int *order, int n);

/* Micro-batch invariance: which buffers of a training program hold the
 * same bytes in every micro-batch of a step, so that a value its forward
 * part writes and its backward part reads needs one slot, not one per
 * micro-batch in flight (a parameter's 16-bit copy, a transposed weight,
 * a gathered ZeRO-3 shard: recomputed by every forward part, always to the
 * same bytes). Kernels are deterministic functions of their operands, and
 * parameters and optimizer state change only in the per-step part, so a
 * buffer is invariant when every instruction of the per-micro-batch part
 * that writes it reads only invariant buffers, and none reads it before
 * its first write (that would be the previous micro-batch's value). A
 * receive is never invariant; a collective is when its operand is (every
 * device of a stage runs the same program). The one rule for lowering's
 * memory plan and plan_verify: st[b] = plan_invariant_init(bind) for every
 * buffer, then plan_invariant_instr for each instruction of the
 * per-micro-batch part in order; buffer b is invariant when st[b] is
 * PLAN_INVARIANT. */
enum { PLAN_UNWRITTEN, PLAN_INVARIANT, PLAN_VARIANT };

static inline unsigned char plan_invariant_init(enum plan_bind b)
{
	return b == PLAN_BIND_PARAM || b == PLAN_BIND_STATE ? PLAN_INVARIANT
	       : b == PLAN_BIND_NONE                        ? PLAN_UNWRITTEN
							    : PLAN_VARIANT;
}

/* args: the instruction's nin operands, then its nout results. */
void plan_invariant_instr(unsigned char *st, enum plan_instr_kind kind, const int *args, int nin, int nout);

/* Device memory at its peak of live bytes, by what it holds: bound buffers
 * live the whole program, a temporary from the first instruction that
 * names it to its last (its FREE), a stashed one (a value a pipelined
 * program's backward part reads from its forward part: slots, or one slot
 * on the last stage) the whole per-micro-batch part, every slot; each at
 * its aligned size, as the memory plan places it. The arena is the peak
 * plus what the placement loses to fragmentation. */
enum plan_mem_kind {
	PLAN_MEM_PARAM, /* parameters */
	PLAN_MEM_ACCUM, /* gradient accumulators */
	PLAN_MEM_STATE, /* optimizer state, step counter, loss scale */
	PLAN_MEM_IO,    /* inputs and outputs */
	PLAN_MEM_STASH, /* forward values kept for the backward part, every slot */
	PLAN_MEM_TEMP,  /* other temporaries */
	PLAN_MEM_KIND_COUNT
};

struct plan_mem {
	int64_t bytes[PLAN_MEM_KIND_COUNT]; /* per device, at the peak */
	int64_t live;                       /* their sum: the peak of live bytes */
	int at;                             /* the instruction where it peaks */
};

/* -ENOMEM, or 0 with *m filled for device d. */
int plan_device_memory(const struct plan_device *d, struct plan_mem *m);

static inline int plan_buffer_slots(const struct plan_buffer *b)
{
	return b->slots > 1 ? b->slots : 1;
}

/* Bytes between a buffer's slots (its size rounded up to PLAN_ALIGN). */
static inline int64_t plan_slot_stride(const struct plan_buffer *b)
{
	return (b->bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

/* Checks that p can run as written (plan_verify.c): every buffer and
 * kernel index in range, shapes and sizes agree with the kernel table and
 * collectives, every buffer written before it is read and not read after
 * it is freed, buffers live at the same time do not overlap and fit the
 * arena, arenas within device_memory, every send has its receive (equal
 * size and dtype, and vice versa) and the collectives of each communicator
 * match in order, kind and size across its ranks. 0, or -EINVAL with a
 * message naming the device, the instruction index and what is wrong:
 * "device 3, instruction 17 (all_gather): ...". */
int plan_verify(const struct plan *p);

/* plan.bin (plan_io.c packs, plan_unpack.c reads, plan_file.c): protobuf
 * (ir/plan.proto) with a format version and a checksum of the content.
 * plan_write writes a temporary file and renames it. plan_read: NULL with a message naming the file and what is wrong
 * (truncated, another format version, checksum mismatch, not a plan). */
int plan_write(const struct plan *p, const char *path);
struct plan *plan_read(const char *path);

/* Signed plans (plan_sign.c). A plan carries x86-64 code and pcc-run runs
 * it: the checksum finds corruption, not intent. A plan written with a key
 * carries an HMAC-SHA256 under that key of every byte before it (the
 * PlanFile's field 4, 32 bytes, last); reading with a key refuses a plan
 * without that field or whose tag differs ("not signed", "its signature
 * does not match") before anything in it is decoded. Reading without a
 * key ignores a tag. A key is a file's bytes, PLAN_KEY_MIN to PLAN_KEY_MAX
 * of them (head -c 32 /dev/urandom > plan.key). */
#define PLAN_KEY_MIN 16
#define PLAN_KEY_MAX 1024
struct plan_key {
	uint8_t bytes[PLAN_KEY_MAX];
	size_t n;
	char path[256]; /* the key file, for messages */
};
int plan_key_read(const char *path, struct plan_key *k); /* 0, or -errno naming path and what is wrong */
void plan_key_wipe(struct plan_key *k);                  /* clears the key's bytes */
int plan_write_signed(const struct plan *p, const char *path, const struct plan_key *k);
struct plan *plan_read_verified(const char *path, const struct plan_key *k);
/* The tag appended to a packed plan in buf (grown: ir_realloc), its size in *n. */
int plan_sign(uint8_t **buf, size_t *n, const struct plan_key *k);
/* plan_unpack with a key: k NULL is plan_unpack. */
struct plan *plan_unpack_verified(const uint8_t *data, size_t n, const struct plan_key *k);
/* The same over memory: *out (ir_malloc'd) and *n bytes. */
int plan_pack(const struct plan *p, uint8_t **out, size_t *n);
struct plan *plan_unpack(const uint8_t *data, size_t n);

/* Refuses a plan compiled for another cluster or a different number of
 * ranks: 0 or -EINVAL naming both. */
int plan_check_mesh(const struct plan *p, int nranks);

/* XXH3-64 of a file's bytes: plan.model_hash of the model compiled. */
int plan_hash_file(const char *path, uint64_t *out);

/* The model a plan read from plan_path names, as a path to open: its
 * plan.model as written when absolute, else joined to plan_path's
 * directory (plan_write stores it relative to that directory when the two
 * share a folder below "/", so a plan moved with its model still finds it).
 * *out is ir_malloc'd; NULL when the plan names no model. */
int plan_model_path(const struct plan *p, const char *plan_path, char **out);

#endif
