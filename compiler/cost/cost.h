/*
 * cost.h: the cost model, the single source of truth for the passes (which
 * plan is best) and for `pcc report` (how fast, how much memory, where).
 * The one header of compiler/cost/: compiler.h includes it for the rest of
 * the compiler; the cost model's own files include it and ir/ alone, and
 * call nothing else of the compiler.
 *
 * Units everywhere: seconds, bytes, FLOP/s, bytes/s. "Per device" unless a
 * field says otherwise. Every figure in a preset names its public source
 * where it is defined (cost_device.c).
 *
 *   cost_device.c   device presets and the measured CPU host
 *   cost_cluster.c  clusters (short form, JSON file), axes and 2-D meshes
 *   cost_comm.c     collectives on an axis (ring, tree, hierarchical)
 *   cost_compute.c  roofline per op class, calibration files
 *   cost_train.c    training state memory (ZeRO), pipeline schedules
 *   cost_saved.c    the activations a backward pass keeps
 *   cost_host.c     a cpu:N host's measured rates
 */
#ifndef PCC_COST_H
#define PCC_COST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- devices (cost_device.c) -------------------------------------------- */

/* Arithmetic precisions a device may have a peak for. TF32 and the 16-bit
 * and 8-bit types are tensor-core rates; F32/F64 the plain (non-tensor)
 * vector rates. */
enum cost_prec {
	COST_PREC_F64,
	COST_PREC_F32,
	COST_PREC_TF32,
	COST_PREC_BF16,
	COST_PREC_F16,
	COST_PREC_FP8,
	COST_PREC_COUNT
};
const char *cost_prec_name(enum cost_prec p);            /* "f32", "bf16", ... */
int cost_prec_parse(const char *s, enum cost_prec *out); /* 0 or -EINVAL with message */

struct cost_device {
	char name[32];                      /* preset key, e.g. "h100-80g" */
	char desc[80];                      /* e.g. "NVIDIA H100 SXM5 80 GB" */
	int sm;                             /* compute capability x 10 (90: sm_90); 0: not a
					     * known GPU (a CPU, a device of a cluster file) */
	double peak_flops[COST_PREC_COUNT]; /* FLOP/s, dense; 0 = no hardware support */
	double mem_bytes;                   /* device memory capacity, bytes */
	double mem_bw;                      /* device memory bandwidth, bytes/s */
	double host_bw;                     /* host-to-device copy bandwidth, bytes/s (PCIe) */
	/* An op whose bytes fit cache_bytes streams them at cache_bw instead of
	 * mem_bw (a CPU's private L2); 0 for GPUs and presets: not modelled. */
	double cache_bytes; /* bytes per device */
	double cache_bw;    /* bytes/s, counted as mem_bw is */
};

/* Presets: "v100-16g", "v100-32g", "a100-40g", "a100-80g", "h100-80g",
 * "h200-141g" (also the aliases "v100", "a100", "h100", "h200" for the
 * largest memory of each). Case-insensitive. -ENOENT with a message listing
 * the presets. */
int cost_device_preset(const char *name, struct cost_device *d);
int cost_device_npresets(void);
const struct cost_device *cost_device_preset_at(int i);

/* The CPU host this process runs on, one rank out of `ranks` sharing it:
 * f32/f64 peaks from a short OpenBLAS sgemm/dgemm timing (one thread's
 * best, times the online cores, robust on a loaded host; the other
 * precisions 0, so they run at the f32 rate), bandwidth from one
 * core's memcpy (mem_bw = 2 x bytes copied per second, as a copy reads and
 * writes each byte), capacity from sysconf, each divided by ranks (cores
 * and memory are shared); cache_bytes one core's L2 (sysconf) and
 * cache_bw a memcpy within it, shared only by ranks beyond the cores.
 * Takes well under a second. */
int cost_device_host(int ranks, struct cost_device *d);

/* The peak for p; where the device lacks p, the next wider precision it has
 * (FP8 -> BF16/F16 -> TF32 -> F32 -> F64): a V100 runs bf16 at its f32 rate. */
double cost_device_peak(const struct cost_device *d, enum cost_prec p);

/* The precision of a training step when the user names none: bf16 where
 * the device has 16-bit tensor cores faster than f32 (mixed precision),
 * else f16 (a V100), else f32. */
enum cost_prec cost_default_prec(const struct cost_device *d);

/* ---- clusters, axes, meshes (cost_cluster.c) ---------------------------- */

/* One direction of a link as one device sees it. */
struct cost_link {
	double bw;      /* bytes/s per device per direction */
	double latency; /* s per hop (NCCL's per-step latency) */
};

/* Nodes of one kind. */
struct cost_node_group {
	int count;   /* nodes */
	int devices; /* devices per node */
	struct cost_device dev;
	struct cost_link intra; /* NVLink/NVSwitch (GPU), shared memory (CPU) */
	struct cost_link inter; /* this device's share of the node's NICs */
};

#define COST_MAX_GROUPS 16

struct cost_cluster {
	char name[64]; /* the spec or the file's "name" */
	int ngroups;
	struct cost_node_group groups[COST_MAX_GROUPS];
	int nodes;    /* sum of groups[].count */
	int ndevices; /* sum of count * devices */
	bool cpu;     /* local CPU ranks ("cpu:N") */
};

/* Parses a short form or a JSON file (any spec naming an existing file, or
 * ending in ".json"):
 *   "4x8:a100-80g"                      4 nodes of 8 A100 80 GB
 *   "4x8:a100-80g,ib=200gbps,nvlink=600GBps,ib_lat=5us,nvlink_lat=1us"
 *   "8:h100"                            one node of 8
 *   "cpu:4"                             4 local CPU ranks (host measured)
 * Bandwidth units: Gbps/Mbps/Tbps (bits/s), GBps or GB/s (bytes/s), case of
 * the b/B significant. ib= is one device's NIC share, one direction (a bare
 * number is Gb/s); nvlink= is one GPU's NVLink figure as NVIDIA quotes it,
 * both directions summed (a bare number is GB/s; a direction gets half);
 * latencies take ns/us/ms/s (bare: us). Defaults per device kind are the
 * DGX systems' (cost_cluster.c, with the JSON format). Errors name the
 * offending part of the spec (or the file and JSON path) and return
 * -EINVAL, or -ENOENT for a file that does not exist. */
int cost_cluster_parse(const char *spec, struct cost_cluster *c);
/* Whether spec names CPU ranks ("cpu:N", the only form that does), as
 * cost_cluster_parse reads it: the lowering fuses for the host then. */
bool cost_cluster_spec_cpu(const char *spec);

/* True when every group has the same device, devices per node and links. */
bool cost_cluster_uniform(const struct cost_cluster *c);

/* What the search assumes for a non-uniform cluster: the slowest device
 * (least peak per precision, memory and bandwidth, each taken separately;
 * the peaks after cost_device_peak's fallback, so none is 0 where every
 * group can run the precision) and the slowest links (least bandwidth,
 * most latency). devices_per_node: the smallest group's. Any pointer may
 * be NULL. */
void cost_cluster_effective(const struct cost_cluster *c, struct cost_device *d, struct cost_link *intra,
			    struct cost_link *inter, int *devices_per_node);

/* One line per group: "2 x 8 h100-80g, NVLink 450 GB/s 1 us, NIC 50 GB/s 5 us". */
void cost_cluster_print(const struct cost_cluster *c, FILE *f);

/* A set of devices taking part in one collective: n devices, `local` of
 * them on each of `nodes` nodes (n = local * nodes). */
struct cost_axis {
	int n, local, nodes;
	struct cost_link intra, inter;
};

/* The axis of n devices whose consecutive members are `stride` device ids
 * apart, device ids numbered node-major (node k holds ids k*M .. k*M+M-1).
 * stride * n must not exceed the cluster; strides that straddle nodes
 * unevenly are rejected with -EINVAL. Uses cost_cluster_effective. */
int cost_axis_make(const struct cost_cluster *c, int stride, int n, struct cost_axis *ax);

/* A logical 2-D mesh n0 x n1 over the first n0*n1 devices: device (i, j) is
 * id i*n1 + j, so axis 1 (stride 1) is the fast, node-local one and axis 0
 * (stride n1) crosses nodes once n0*n1 exceeds a node. */
struct cost_mesh {
	int n0, n1;
	struct cost_axis ax[2];
};
int cost_mesh_make(const struct cost_cluster *c, int n0, int n1, struct cost_mesh *m);

/* ---- collectives (cost_comm.c) ------------------------------------------ */

enum cost_coll {
	COST_ALL_REDUCE,
	COST_ALL_GATHER,
	COST_REDUCE_SCATTER,
	COST_ALL_TO_ALL,
	COST_BROADCAST,
	COST_SEND_RECV,
	COST_COLL_COUNT
};
const char *cost_coll_name(enum cost_coll op); /* "all-reduce", ... */

enum cost_algo {
	COST_ALGO_NONE,   /* n == 1 or bytes == 0: free */
	COST_ALGO_RING,   /* NCCL ring (one channel per NIC when crossing nodes) */
	COST_ALGO_TREE,   /* NCCL double binary tree (all-reduce only) */
	COST_ALGO_HIER,   /* intra-node, then inter-node on 1/local of the data, then intra */
	COST_ALGO_DIRECT, /* all-to-all and send/recv: direct transfers */
	COST_ALGO_COUNT
};
const char *cost_algo_name(enum cost_algo a);
/* Names as above, case and '-'/'_' ignored ("allreduce", "all_gather");
 * "hier" for hierarchical. 0 or -EINVAL with a message. */
int cost_coll_parse(const char *s, enum cost_coll *out);
int cost_algo_parse(const char *s, enum cost_algo *out);

/* Time of one collective on ax (NCCL's alpha-beta model; the formulas are
 * in cost_comm.c). bytes is per device:
 *   all-reduce, broadcast, send/recv: the buffer;
 *   all-gather: the gathered result (each device contributes bytes/n);
 *   reduce-scatter: the input (each device keeps bytes/n);
 *   all-to-all: the buffer each device sends out (and receives).
 * The fastest algorithm applicable is chosen and returned in *algo (may be
 * NULL). Send/recv is between two members of the axis that sit on different
 * nodes when the axis spans nodes. */
double cost_collective(const struct cost_axis *ax, enum cost_coll op, double bytes, enum cost_algo *algo);

/* NCCL's bus bandwidth of a measured collective: algbw = bytes / t, and
 * busbw = algbw * 2(n-1)/n for all-reduce, (n-1)/n for all-gather and
 * reduce-scatter, 1 for the others. */
double cost_busbw(enum cost_coll op, int n, double bytes, double seconds);

/* ---- compute (cost_compute.c) ------------------------------------------- */

struct ir_graph;
struct ir_node;

/* Op classes with their own efficiencies. */
enum cost_class {
	COST_CLASS_DOT, /* dot: compute-bound when large */
	COST_CLASS_CONV,
	COST_CLASS_ELEMENTWISE, /* unary, binary, select, convert */
	COST_CLASS_REDUCE,      /* reductions, arg-reductions, windows, cumsum */
	COST_CLASS_NORM,        /* softmax, layer norm */
	COST_CLASS_MOVE,        /* transpose, slice, concat, pad, ... */
	COST_CLASS_GATHER,      /* gather, scatter, topk */
	COST_CLASS_FREE,        /* iota, constant (folded), reshape and broadcast
				 * (views, or folded into their consumers) */
	COST_CLASS_COUNT
};
const char *cost_class_name(enum cost_class c);
int cost_class_parse(const char *s, enum cost_class *out);
enum cost_class cost_op_class(int op); /* op: an enum ir_op */
/* Whether op fuses into an elementwise chain (one kernel: elementwise ops
 * and views), as the report and the intra-op pass both cost it. */
bool cost_op_fusable(int op);
/* Per node of g (by id), bit j set when input j stays in registers: node
 * and producer are fusable and share a kernel. They can when no
 * non-fusable op later than the producer feeds the node (a residual add
 * after the block's dots reads its input from memory). Inputs past the
 * 32nd are always read. NULL when out of memory (ir_free it). */
uint32_t *cost_fused_reads(const struct ir_graph *g);
/* Whether node `node` reads input j in registers (fused: cost_fused_reads). */
static inline bool cost_read_fused(const uint32_t *fused, int node, int j)
{
	return j < 32 && (fused[node] >> j & 1);
}
/* Whether node n is a transpose of the last two dims only: read by dots
 * alone, it costs nothing (the GEMM reads its operand transposed); both
 * the report and the intra-op pass check the consumers. */
bool cost_transpose_folds(const struct ir_node *n);

/* Efficiency of one op class at a size: a knot at max_flops FLOPs;
 * between knots the roofline interpolates in log(FLOPs), below the first
 * and above the last it holds their values; a last row without max_flops
 * (infinity) applies to everything above the last finite knot. */
struct cost_eff {
	double max_flops;   /* knot position, FLOPs per op; infinity: the tail */
	double compute_eff; /* fraction of peak FLOP/s reached */
	double memory_eff;  /* fraction of memory bandwidth reached */
};

#define COST_MAX_EFF_ROWS 8

/* Per-class efficiency tables plus a fixed launch overhead per op. The
 * defaults are assumptions stated in cost_compute.c; a calibration file
 * measured on the device (pcc-run --calibrate, later) replaces them:
 *   { "device": "h100-80g",
 *     "classes": { "dot": { "overhead_us": 4,
 *                           "rows": [ { "max_flops": 1e9, "compute_eff": 0.35, "memory_eff": 0.6 },
 *                                     { "compute_eff": 0.8, "memory_eff": 0.8 } ] },
 *                  "elementwise": { ... } } }
 * Classes absent from the file keep their defaults. */
struct cost_calib {
	char device[32]; /* what it was measured on, "" for the defaults */
	struct {
		int nrows;
		struct cost_eff rows[COST_MAX_EFF_ROWS]; /* increasing max_flops */
		double overhead;                         /* s per op */
	} cls[COST_CLASS_COUNT];
};
void cost_calib_init(struct cost_calib *cal); /* the defaults (GPU assumptions) */
/* The defaults for a "cpu:N" cluster (pcc-run's host kernels): a fraction
 * of a microsecond per kernel instead of a GPU launch, slower small
 * convolutions (cost_compute.c says why). device stays "" (defaults). */
void cost_calib_host(struct cost_calib *cal);
int cost_calib_load(const char *path, struct cost_calib *cal); /* -ENOENT/-EINVAL naming file and key */
int cost_calib_save(const char *path, const struct cost_calib *cal);

/* The roofline: overhead + max(flops / (peak(prec) * compute_eff),
 * bytes / (mem_bw * memory_eff)), the efficiencies taken at flops. Zero for
 * COST_CLASS_FREE. A fused group is costed as one op of its class with its
 * summed FLOPs and the bytes crossing its boundary. */
double cost_roofline(const struct cost_device *d, const struct cost_calib *cal, enum cost_class cls,
		     enum cost_prec prec, double flops, double bytes);

/* Bytes of a value, with elem_bytes replacing floating-point element
 * sizes when > 0 (mixed precision); integer and bool sizes kept. */
struct ir_value;
double cost_value_bytes(const struct ir_value *v, int elem_bytes);

/* ---- what the backward pass keeps (cost_saved.c) ------------------------- */

struct ir_node;
struct ir_graph;
/* The values op n's gradient reads (operands or results), at most 4, into
 * out, as the saved column of its row of the op table (ops.h) says; bit j
 * of gmask: operand j carries a gradient. Returns how many. */
int cost_grad_reads(const struct ir_node *n, unsigned gmask, const struct ir_value *out[4]);
/* Per value id: whether it depends on a graph input or a parameter (not a
 * constant); ir_malloc'd, NULL when out of memory. */
bool *cost_dynamic_values(const struct ir_graph *g);
/* Per value id: whether it depends on a graph input, i.e. differs between
 * micro-batches (an activation; a transposed weight is not one). */
bool *cost_activation_values(const struct ir_graph *g);
/* Per value id: whether it carries a gradient, a floating-point value
 * that depends on a floating-point parameter; ir_malloc'd, NULL when out
 * of memory. */
bool *cost_grad_values(const struct ir_graph *g);

/* The activations op n's backward pass keeps stored: cost_grad_reads's,
 * except that the result of a cheap elementwise op whose dynamic inputs
 * take no more bytes is recomputed from them (they are kept instead);
 * constants, parameters and values computed from them alone are never
 * activations. keep is called for
 * each (possibly more than once per value); a negative return stops. */
struct cost_keep {
	const bool *dyn;                                      /* cost_activation_values */
	double (*bytes)(const struct ir_value *v, void *arg); /* per device */
	int (*keep)(const struct ir_value *v, void *arg);
	void *arg;
};
int cost_backward_keeps(const struct cost_keep *c, const struct ir_node *n, unsigned gmask);

/* ---- training state, schedules (cost_train.c) --------------------------- */

enum cost_optim { COST_OPT_SGD, COST_OPT_MOMENTUM, COST_OPT_ADAM, COST_OPT_ADAMW, COST_OPT_COUNT };
const char *cost_optim_name(enum cost_optim o);
int cost_optim_parse(const char *s, enum cost_optim *out);

/* Bytes per parameter of each kind of training state. Mixed precision
 * (ZeRO paper's accounting): 16-bit parameters 2, 16-bit gradients 2,
 * optimizer K = fp32 master copy 4 + 4 per moment (SGD 4, momentum 8,
 * Adam/AdamW 12). Full fp32: 4, 4, and 4 per moment (SGD 0). */
struct cost_state_bytes {
	double params, grads, optim;
};
void cost_state_bytes_per_param(enum cost_optim o, bool mixed, struct cost_state_bytes *b);

/* Per-device bytes of nparams parameters (already divided by tensor and
 * pipeline parallelism) under ZeRO stage zero (0..3) over dp replicas:
 * stage 1 divides optimizer state by dp, 2 also gradients, 3 also
 * parameters. */
void cost_state_memory(enum cost_optim o, bool mixed, int zero, int dp, double nparams, struct cost_state_bytes *out);

/* Seconds of the optimizer update of nparams parameters on device d: one
 * memory-bound pass (multi-tensor, at the efficiency of a large kernel)
 * reading gradients, reading and writing optimizer state, writing the
 * weights (read and written when there is no master copy). Linear in
 * nparams, so per-tensor sums equal the whole. */
double cost_optim_time(const struct cost_device *d, const struct cost_calib *cal, const struct cost_state_bytes *sb,
		       bool mixed, double nparams);

enum cost_sched { COST_SCHED_GPIPE, COST_SCHED_1F1B, COST_SCHED_INTERLEAVED, COST_SCHED_COUNT };
const char *cost_sched_name(enum cost_sched s);
int cost_sched_parse(const char *s, enum cost_sched *out);

/* Idle fraction of a pipeline relative to its ideal time m * t: (p-1)/m
 * for GPipe and 1F1B, (p-1)/(v m) interleaved with v chunks per device. */
double cost_bubble_fraction(enum cost_sched s, int p, int m, int v);

/* Step time of a pipeline of p stages, stage i taking t[i] per micro-batch
 * (forward plus backward, its own communication included) and t_p2p per
 * micro-batch boundary transfer (forward activation plus backward
 * gradient): sum_i (t[i] + t_p2p) - t_p2p + (m - 1) max_i (t[i] + t_p2p)
 * for GPipe and 1F1B; interleaved with v chunks per device:
 * (m + (p - 1) / v) * max_i (t[i] + v * t_p2p). p = 1 gives m * t[0]
 * (t_p2p ignored). */
double cost_pipeline_time(enum cost_sched s, int p, int m, int v, const double *t, double t_p2p);

/* Micro-batches of activations stage i (0-based) holds at its peak, in
 * units of one micro-batch of the whole stage: GPipe m; 1F1B min(m, p - i);
 * interleaved min(m, p - i) + (p - 1) / v (Megatron's accounting). */
double cost_inflight(enum cost_sched s, int p, int m, int v, int stage);

#endif
