/*
 * cost_compute.c: how long one op (or one fused group) takes on one device.
 *
 * The roofline: an op is bound either by arithmetic, FLOPs / (peak x
 * compute efficiency), or by memory traffic, bytes / (bandwidth x memory
 * efficiency), whichever is slower, plus a fixed launch overhead. The
 * efficiencies depend on the op class and, for contractions, on the size
 * (small GEMMs cannot fill a GPU). The defaults below are assumptions, not
 * measurements; a calibration file written on the real device replaces them
 * per class and size. Example: a [2048 x 12288] x [12288 x 36864] bf16 dot on
 * an H100 is 1.86e12 FLOPs, 0.8 x 989.4e12 FLOP/s -> 2.35 ms, compute-bound.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "compiler/cost/cost.h"
#include "ir/ir.h"

static const char *const class_names[COST_CLASS_COUNT] = {
	[COST_CLASS_DOT] = "dot",       [COST_CLASS_CONV] = "conv", [COST_CLASS_ELEMENTWISE] = "elementwise",
	[COST_CLASS_REDUCE] = "reduce", [COST_CLASS_NORM] = "norm", [COST_CLASS_MOVE] = "move",
	[COST_CLASS_GATHER] = "gather", [COST_CLASS_FREE] = "free",
};

const char *cost_class_name(enum cost_class c)
{
	IR_ASSERT(c >= 0 && c < COST_CLASS_COUNT);
	return class_names[c];
}

int cost_class_parse(const char *s, enum cost_class *out)
{
	for (int c = 0; c < COST_CLASS_COUNT; c++)
		if (strcmp(s, class_names[c]) == 0) {
			*out = c;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown op class \"%s\" (dot, conv, elementwise, reduce, norm, move, gather, free)",
			 s);
}

/* The cost concern of the op table: which efficiency row an op uses. */
bool cost_op_fusable(int op)
{
	enum cost_class c = cost_op_class(op);
	return c == COST_CLASS_ELEMENTWISE || c == COST_CLASS_FREE;
}

uint32_t *cost_fused_reads(const struct ir_graph *g)
{
	int nn = ir_graph_nnodes(g);
	uint32_t *mask = ir_calloc((size_t)nn + 1, sizeof *mask);
	int *barrier = ir_malloc(sizeof *barrier * ((size_t)nn + 1)); /* the latest non-fusable op feeding a node */
	if (!mask || !barrier) {
		ir_free(mask);
		ir_free(barrier);
		return NULL;
	}
	for (int i = 0; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		barrier[i] = -1;
		for (int j = 0; j < n->nin; j++) {
			const struct ir_node *p = n->in[j]->kind == IR_VAL_NODE ? n->in[j]->def : NULL;
			if (p && (cost_op_fusable(p->op) ? barrier[p->id] : p->id) > barrier[i])
				barrier[i] = cost_op_fusable(p->op) ? barrier[p->id] : p->id;
		}
		if (!cost_op_fusable(n->op))
			continue;
		for (int j = 0; j < n->nin && j < 32; j++) {
			const struct ir_node *p = n->in[j]->kind == IR_VAL_NODE ? n->in[j]->def : NULL;
			if (p && cost_op_fusable(p->op) && barrier[i] < p->id)
				mask[i] |= 1u << j;
		}
	}
	ir_free(barrier);
	return mask;
}

bool cost_transpose_folds(const struct ir_node *n)
{
	if (n->op != IR_OP_TRANSPOSE || n->a.axes.n < 2)
		return false;
	int r = n->a.axes.n;
	for (int i = 0; i < r - 2; i++)
		if (n->a.axes.v[i] != i)
			return false;
	return n->a.axes.v[r - 2] == r - 1 && n->a.axes.v[r - 1] == r - 2;
}

static const enum cost_class op_class[IR_OP_COUNT] = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = COST_CLASS_##cost,
	IR_OPS(X)
#undef X
};

enum cost_class cost_op_class(int op)
{
	IR_ASSERT((unsigned)op < IR_OP_COUNT);
	return op_class[op];
}

#define HOST_OVERHEAD_US 0.6 /* us per kernel on the host CPU, see cost_calib_host */

static void set_rows(struct cost_calib *cal, enum cost_class c, double overhead_us, int n, const struct cost_eff *rows)
{
	cal->cls[c].nrows = n;
	memcpy(cal->cls[c].rows, rows, (size_t)n * sizeof *rows);
	cal->cls[c].overhead = overhead_us * 1e-6;
}

/*
 * Default efficiencies (assumptions until calibrated): large GEMMs reach
 * about 80% of the tensor-core peak in cuBLAS, small ones far less
 * (a GEMM of 1e8 FLOPs is a few microseconds of work, too little to fill
 * 100+ SMs); convolutions somewhat less than GEMMs; memory-bound kernels
 * reach 70-80% of the HBM bandwidth (STREAM-like), gathers and transposes
 * less for their irregular access. Launch overhead: a few microseconds per
 * kernel, the cost CUDA graphs and fusion later remove.
 */
void cost_calib_init(struct cost_calib *cal)
{
	memset(cal, 0, sizeof *cal);
	set_rows(cal, COST_CLASS_DOT, 3, 4,
		 (const struct cost_eff[]){
			 { 1e7, 0.2, 0.5 }, { 1e9, 0.45, 0.65 }, { 1e11, 0.7, 0.8 }, { 1e13, 0.8, 0.8 } });
	set_rows(cal, COST_CLASS_CONV, 3, 4,
		 (const struct cost_eff[]){
			 { 1e7, 0.15, 0.45 }, { 1e9, 0.4, 0.6 }, { 1e11, 0.6, 0.7 }, { 1e13, 0.7, 0.7 } });
	set_rows(cal, COST_CLASS_ELEMENTWISE, 2, 1, (const struct cost_eff[]){ { INFINITY, 0.5, 0.8 } });
	set_rows(cal, COST_CLASS_REDUCE, 2, 1, (const struct cost_eff[]){ { INFINITY, 0.5, 0.7 } });
	set_rows(cal, COST_CLASS_NORM, 2, 1, (const struct cost_eff[]){ { INFINITY, 0.5, 0.7 } });
	set_rows(cal, COST_CLASS_MOVE, 2, 1, (const struct cost_eff[]){ { INFINITY, 0.5, 0.6 } });
	set_rows(cal, COST_CLASS_GATHER, 3, 1, (const struct cost_eff[]){ { INFINITY, 0.3, 0.4 } });
	set_rows(cal, COST_CLASS_FREE, 0, 1, (const struct cost_eff[]){ { INFINITY, 1, 1 } });
}

/*
 * The host CPU's defaults, for a "cpu:N" cluster run by pcc-run's generated
 * kernels (benchmarks/cpu_model.sh measures them against the predictions):
 *   - overhead 0.6 us per kernel, every class: pcc-run dispatches a kernel
 *     by a function call (arguments resolved, rows split over the pool only
 *     above 32 Ki elements), no launch. Fitted on the mlp, mlp_loss and gpt
 *     fixtures on one rank (0.3 to 0.7 us per kernel left after the
 *     roofline), not on the other models the benchmark checks it with.
 *   - dot: the GPU rows; a small sgemm in OpenBLAS reaches a similar
 *     fraction of the host's peak (one thread's best large sgemm x cores).
 *   - conv: pcc-run's igemm (runtime/kernels_igemm.c) reads a stride-1
 *     convolution's input in place and runs near one thread's sgemm peak
 *     from about 1e8 FLOPs (75-80%); at the fixtures' sizes (1e5-1e6) a
 *     call's setup and copies hold it to 10-25%. Fitted on the resnet
 *     fixture's and ResNet-50's inference (predicted 0.074 and 58 ms,
 *     measured 0.077 and 51 on a Zen 4); the resnet_train fixture checks
 *     it (0.169 predicted, 0.233 measured). The rows before, fitted when
 *     a convolution was im2col and sgemm, put ResNet-50 at 382 ms.
 * The other classes keep the GPU figures (their bytes are small against the
 * overhead at the sizes checked so far).
 */
void cost_calib_host(struct cost_calib *cal)
{
	cost_calib_init(cal);
	set_rows(cal, COST_CLASS_CONV, HOST_OVERHEAD_US, 4,
		 (const struct cost_eff[]){
			 { 1e5, 0.1, 0.3 }, { 1e6, 0.25, 0.4 }, { 1e8, 0.75, 0.6 }, { 1e13, 0.8, 0.7 } });
	for (int c = 0; c < COST_CLASS_COUNT; c++)
		if (c != COST_CLASS_FREE && c != COST_CLASS_CONV)
			cal->cls[c].overhead = HOST_OVERHEAD_US * 1e-6;
}

/* The efficiencies at flops: rows with a finite max_flops are knots,
 * interpolated linearly in log(FLOPs) between neighbours (so a search over
 * sizes sees no steps); below the first knot its values hold; above the
 * last finite knot the next row (max_flops = infinity) holds if there is
 * one, else the last knot's values. */
static struct cost_eff pick_eff(const struct cost_calib *cal, enum cost_class cls, double flops)
{
	int n = cal->cls[cls].nrows;
	const struct cost_eff *r = cal->cls[cls].rows;
	IR_ASSERT(n > 0);
	if (flops <= r[0].max_flops || !isfinite(r[0].max_flops))
		return r[0];
	for (int i = 0; i + 1 < n; i++) {
		if (flops > r[i + 1].max_flops)
			continue;
		if (!isfinite(r[i + 1].max_flops))
			return r[i + 1];
		double w = (log(flops) - log(r[i].max_flops)) / (log(r[i + 1].max_flops) - log(r[i].max_flops));
		return (struct cost_eff){ flops, r[i].compute_eff + w * (r[i + 1].compute_eff - r[i].compute_eff),
					  r[i].memory_eff + w * (r[i + 1].memory_eff - r[i].memory_eff) };
	}
	return r[n - 1];
}

double cost_roofline(const struct cost_device *d, const struct cost_calib *cal, enum cost_class cls,
		     enum cost_prec prec, double flops, double bytes)
{
	IR_ASSERT(cls >= 0 && cls < COST_CLASS_COUNT);
	if (cls == COST_CLASS_FREE || (flops <= 0 && bytes <= 0))
		return 0;
	struct cost_eff r = pick_eff(cal, cls, flops);
	double peak = cost_device_peak(d, prec);
	double tc = flops > 0 && peak > 0 ? flops / (peak * r.compute_eff) : 0;
	double bw = d->cache_bytes > 0 && bytes <= d->cache_bytes && d->cache_bw > 0 ? d->cache_bw : d->mem_bw;
	double tm = bytes > 0 && bw > 0 ? bytes / (bw * r.memory_eff) : 0;
	return cal->cls[cls].overhead + (tc > tm ? tc : tm);
}

double cost_value_bytes(const struct ir_value *v, int elem_bytes)
{
	double e = ir_dtype_is_float(v->dtype) && elem_bytes > 0 ? elem_bytes : (double)ir_dtype_size(v->dtype);
	return (double)ir_shape_numel(&v->shape) * e;
}

/* ---- calibration files (JSON, format in cost.h) ------------------------ */

static int load_class(const char *path, const char *cname, json_t *o, struct cost_calib *cal, enum cost_class c)
{
	const char *key;
	json_t *val;
	if (!json_is_object(o))
		return ir_errorf(-EINVAL, "%s: classes.%s must be an object", path, cname);
	json_object_foreach(o, key, val) {
		if (strcmp(key, "overhead_us") == 0) {
			if (!json_is_number(val) || json_number_value(val) < 0)
				return ir_errorf(-EINVAL, "%s: classes.%s.overhead_us must be a number >= 0", path,
						 cname);
			cal->cls[c].overhead = json_number_value(val) * 1e-6;
		} else if (strcmp(key, "rows") == 0) {
			size_t n = json_array_size(val);
			if (!json_is_array(val) || n == 0 || n > COST_MAX_EFF_ROWS)
				return ir_errorf(-EINVAL, "%s: classes.%s.rows must be an array of 1 to %d rows", path,
						 cname, COST_MAX_EFF_ROWS);
			for (size_t i = 0; i < n; i++) {
				json_t *r = json_array_get(val, i), *mf = json_object_get(r, "max_flops"),
				       *ce = json_object_get(r, "compute_eff"), *me = json_object_get(r, "memory_eff");
				if (!json_is_object(r) || !json_is_number(ce) || !json_is_number(me) ||
				    (mf && !json_is_number(mf)) || json_object_size(r) != 2u + (mf != NULL))
					return ir_errorf(-EINVAL,
							 "%s: classes.%s.rows[%zu] needs compute_eff, memory_eff "
							 "and optionally max_flops, nothing else",
							 path, cname, i);
				struct cost_eff *e = &cal->cls[c].rows[i];
				e->max_flops = mf ? json_number_value(mf) : INFINITY;
				e->compute_eff = json_number_value(ce);
				e->memory_eff = json_number_value(me);
				if (!(e->max_flops > 0))
					return ir_errorf(-EINVAL,
							 "%s: classes.%s.rows[%zu]: max_flops must be positive", path,
							 cname, i);
				if (!(e->compute_eff > 0 && e->compute_eff <= 1 && e->memory_eff > 0 &&
				      e->memory_eff <= 1))
					return ir_errorf(-EINVAL,
							 "%s: classes.%s.rows[%zu]: efficiencies must be in (0, 1]",
							 path, cname, i);
				if (i > 0 && !(e->max_flops > e[-1].max_flops))
					return ir_errorf(-EINVAL, "%s: classes.%s.rows[%zu]: max_flops must increase",
							 path, cname, i);
			}
			cal->cls[c].nrows = (int)n;
		} else {
			return ir_errorf(-EINVAL, "%s: classes.%s: unknown key \"%s\" (overhead_us, rows)", path, cname,
					 key);
		}
	}
	return 0;
}

int cost_calib_load(const char *path, struct cost_calib *cal)
{
	json_error_t jerr;
	FILE *f = fopen(path, "r");
	if (!f)
		return ir_errorf(-ENOENT, "%s: cannot open calibration file: %s", path, strerror(errno));
	json_t *root = json_loadf(f, 0, &jerr);
	fclose(f);
	if (!root)
		return ir_errorf(-EINVAL, "%s:%d: %s", path, jerr.line, jerr.text);
	int rc = 0;
	const char *key;
	json_t *val;
	if (!json_is_object(root)) {
		rc = ir_errorf(-EINVAL, "%s: a calibration file is one JSON object", path);
		goto out;
	}
	json_object_foreach(root, key, val) {
		if (strcmp(key, "device") == 0 && json_is_string(val)) {
			snprintf(cal->device, sizeof cal->device, "%s", json_string_value(val));
		} else if (strcmp(key, "classes") == 0 && json_is_object(val)) {
			const char *ck;
			json_t *cv;
			json_object_foreach(val, ck, cv) {
				enum cost_class c;
				if ((rc = cost_class_parse(ck, &c)) < 0) {
					ir_error_prefix("%s: classes: ", path);
					goto out;
				}
				if ((rc = load_class(path, ck, cv, cal, c)) < 0)
					goto out;
			}
		} else {
			rc = ir_errorf(-EINVAL, "%s: unknown or mistyped key \"%s\" (device: string, classes: object)",
				       path, key);
			goto out;
		}
	}
out:
	json_decref(root);
	return rc;
}

int cost_calib_save(const char *path, const struct cost_calib *cal)
{
	json_t *root = json_object(), *classes = json_object();
	json_object_set_new(root, "device", json_string(cal->device));
	for (int c = 0; c < COST_CLASS_COUNT; c++) {
		json_t *rows = json_array();
		for (int i = 0; i < cal->cls[c].nrows; i++) {
			const struct cost_eff *e = &cal->cls[c].rows[i];
			json_t *r = json_object();
			if (isfinite(e->max_flops))
				json_object_set_new(r, "max_flops", json_real(e->max_flops));
			json_object_set_new(r, "compute_eff", json_real(e->compute_eff));
			json_object_set_new(r, "memory_eff", json_real(e->memory_eff));
			json_array_append_new(rows, r);
		}
		json_object_set_new(classes, class_names[c],
				    json_pack("{s:f, s:o}", "overhead_us", cal->cls[c].overhead * 1e6, "rows", rows));
	}
	json_object_set_new(root, "classes", classes);
	int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return rc < 0 ? ir_errorf(-EIO, "%s: cannot write calibration file", path) : 0;
}
