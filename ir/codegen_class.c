/*
 * codegen_class.c: which ops codegen compiles, and as what (codegen_class.h).
 * One function per value of the op table's codegen column (ops.h); the
 * fusion pass asks the same question.
 */
#include <string.h>

#include "ir/codegen_class.h"

/* bf16 values are f32 with their low 16 bits rounded away, in integer
 * arithmetic (codegen_expr.c), on any host and GPU; f16 values are f32
 * rounded through half, which GPUs convert in hardware and hosts with
 * F16C too (host code for a CPU without it leaves f16 kernels to the
 * reference kernels: codegen.c). */
static bool dtype_ok(enum ir_dtype t)
{
	switch (t) {
	case IR_F64:
	case IR_F32:
	case IR_BF16:
	case IR_F16:
	case IR_I64:
	case IR_I32:
	case IR_I8:
	case IR_U8:
	case IR_BOOL:
		return true;
	case IR_DTYPE_COUNT:
		return false;
	}
	return false;
}

#define CG_MAX_CONSTANT 65536 /* elements: larger constants stay buffers */

/* ---- the class of each op (the codegen column of ops.h) --------------- */

#define CLASS(name) \
	static enum cg_class class_##name(const struct ir_attrs *a, const struct ir_shape *sh, enum ir_dtype out)

CLASS(elem)
{
	return CG_ELEM;
}

CLASS(pow) /* integer pow is repeated squaring: the reference kernel's */
{
	return ir_dtype_is_float(out) ? CG_ELEM : CG_NONE;
}

CLASS(move)
{
	return CG_MOVE;
}

CLASS(constant)
{
	return ir_shape_numel(&a->shape) <= CG_MAX_CONSTANT ? CG_MOVE : CG_NONE;
}

CLASS(reduce)
{
	return CG_REDUCE;
}

CLASS(softmax)
{
	return ir_dtype_is_float(out) && a->axis == sh[0].rank - 1 ? CG_ROW : CG_NONE;
}

CLASS(row)
{
	return ir_dtype_is_float(out) ? CG_ROW : CG_NONE;
}

CLASS(none)
{
	return CG_NONE;
}

#undef CLASS

static enum cg_class (*const classes[IR_OP_COUNT])(const struct ir_attrs *a, const struct ir_shape *sh,
						   enum ir_dtype out) = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = class_##cg,
	IR_OPS(X)
#undef X
};

enum cg_class cg_op_class(enum ir_op op, const struct ir_attrs *a, int nin, const enum ir_dtype *in,
			  const struct ir_shape *sh, enum ir_dtype out)
{
	if (!dtype_ok(out) || (unsigned)op >= IR_OP_COUNT)
		return CG_NONE;
	for (int j = 0; j < nin; j++)
		if (!dtype_ok(in[j]))
			return CG_NONE;
	return classes[op](a, sh, out);
}

enum cg_class cg_body_class(const struct plan_kernel *k, int i)
{
	const struct plan_fop *f = &k->body[i];
	enum ir_dtype dt[PLAN_FOP_MAX_IN];
	struct ir_shape sh[PLAN_FOP_MAX_IN];
	for (int j = 0; j < f->nin; j++) {
		int v = f->in[j];
		dt[j] = v < k->nin ? k->dtype[v] : k->body[v - k->nin].dtype;
		sh[j] = v < k->nin ? k->shape[v] : k->body[v - k->nin].shape;
	}
	return cg_op_class(f->op, &f->a, f->nin, dt, sh, f->dtype);
}

/* ---- kernels ----------------------------------------------------------------- */

const struct plan_kernel *cg_as_body(const struct plan_kernel *k, struct cg_view *v)
{
	if (k->nbody > 1 && plan_kernel_core(k) != IR_OP_COUNT && k->nin < CG_MAX_IN) {
		int n = k->nin;
		v->k = *k;
		v->k.nin = n + 1;
		memcpy(v->dtype, k->dtype, sizeof *v->dtype * (size_t)n);
		memcpy(v->shape, k->shape, sizeof *v->shape * (size_t)n);
		v->dtype[n] = k->body[0].dtype;
		v->shape[n] = k->body[0].shape;
		v->dtype[n + 1] = k->dtype[n];
		v->shape[n + 1] = k->shape[n];
		v->k.dtype = v->dtype;
		v->k.shape = v->shape;
		v->k.body = k->body + 1;
		v->k.nbody = k->nbody - 1;
		return &v->k;
	}
	if (k->nbody)
		return k;
	v->k = *k;
	v->one = (struct plan_fop){
		.op = k->op, .a = k->a, .nin = k->nin, .dtype = k->dtype[k->nin], .shape = k->shape[k->nin]
	};
	for (int j = 0; j < k->nin && j < PLAN_FOP_MAX_IN; j++)
		v->one.in[j] = j;
	v->k.nbody = 1;
	v->k.body = &v->one;
	return &v->k;
}

bool cg_kernel_compiles(const struct plan_kernel *k, int *core)
{
	*core = -1;
	if (k->nout != 1 || k->nin + (plan_kernel_core(k) != IR_OP_COUNT) > CG_MAX_IN ||
	    (!k->nbody && k->nin > PLAN_FOP_MAX_IN))
		return false;
	struct cg_view v;
	const struct plan_kernel *b = cg_as_body(k, &v);
	for (int i = 0; i < b->nbody; i++) {
		enum cg_class c = cg_body_class(b, i);
		if (c == CG_NONE)
			return false;
		if (c == CG_REDUCE || c == CG_ROW) {
			if (*core >= 0)
				return false;
			*core = i;
		}
	}
	if (*core >= 0 && *core != b->nbody - 1 && !ir_shape_eq(&b->body[*core].shape, &b->body[b->nbody - 1].shape))
		return false;
	return true;
}

/* Elements of a host row of an elementwise kernel, at least, where the
 * result's shape allows (cg_row_split). */
#define ROW_MIN 32

int cg_row_split(const struct plan_kernel *b, int core, bool gpu)
{
	const struct ir_shape *s = &b->body[b->nbody - 1].shape;
	if (b->nbody == 1 && b->body[0].op == IR_OP_SCATTER) /* a row of the result each */
		return 1;
	if (b->nbody == 1 && (b->body[0].op == IR_OP_CONV || b->body[0].op == IR_OP_WINDOW_MAX ||
			      b->body[0].op == IR_OP_WINDOW_SUM || b->body[0].op == IR_OP_DOT)) /* an element each */
		return s->rank;
	if (core < 0) {
		if (gpu || s->rank == 0)
			return s->rank;
		/* host: the last dimension, and the ones before it while a row
		 * is shorter than ROW_MIN (the first dimension stays a row's):
		 * the loop over a row vectorizes, and the rows of a small
		 * feature map (7 or 14 floats) ran mostly in its scalar
		 * remainder */
		int split = s->rank - 1;
		for (int64_t inner = s->dims[split]; split > 1 && inner < ROW_MIN;)
			inner *= s->dims[--split];
		return split;
	}
	const struct plan_fop *f = &b->body[core];
	if (cg_body_class(b, core) == CG_REDUCE)
		return s->rank;
	return f->op == IR_OP_SOFTMAX ? s->rank - 1 : (int)f->a.axis;
}

bool cg_kernel_compiles_gpu(const struct plan_kernel *k, int *core)
{
	if (cg_kernel_compiles(k, core))
		return true;
	*core = -1;
	if (k->op == IR_OP_TOPK && !k->nbody && k->nin == 1 && k->nout == 2 && dtype_ok(k->dtype[0]) &&
	    k->dtype[1] == k->dtype[0] && k->dtype[2] == IR_I64)
		return true;
	if (k->nbody || k->nout != 1 || k->nin > PLAN_FOP_MAX_IN || !dtype_ok(k->dtype[k->nin]))
		return false;
	if (k->op == IR_OP_CUMSUM)
		return k->dtype[0] == k->dtype[1];
	bool indexed = k->op == IR_OP_GATHER || k->op == IR_OP_SCATTER;
	for (int j = 0; j < k->nin; j++)
		if (!(indexed && j == 1 ? k->dtype[j] == IR_I64 || k->dtype[j] == IR_I32 : dtype_ok(k->dtype[j])))
			return false;
	if (k->op == IR_OP_CONV || k->op == IR_OP_WINDOW_MAX || k->op == IR_OP_WINDOW_SUM || k->op == IR_OP_DOT)
		return ir_dtype_is_float(k->dtype[k->nin]) && k->dtype[0] == k->dtype[k->nin] &&
		       (k->nin == 1 || k->dtype[1] == k->dtype[0]);
	return k->op == IR_OP_PAD || k->op == IR_OP_CONCAT || indexed;
}

int64_t cg_kernel_rows(const struct plan_kernel *k, bool gpu)
{
	struct cg_view v;
	int core;
	if (!cg_kernel_compiles_gpu(k, &core)) /* the host's kernels are among the GPU's */
		return 0;
	const struct plan_kernel *b = cg_as_body(k, &v);
	const struct ir_shape *s = &b->body[b->nbody - 1].shape;
	int64_t r = 1;
	if (b->nbody == 1 && (b->body[0].op == IR_OP_TOPK || b->body[0].op == IR_OP_CUMSUM)) /* a line each */
		return k->shape[0].dims[b->body[0].a.axis]
			       ? ir_shape_numel(&k->shape[0]) / k->shape[0].dims[b->body[0].a.axis]
			       : 0;
	for (int d = 0; d < cg_row_split(b, core, gpu); d++)
		r *= s->dims[d];
	return gpu ? r / cg_kernel_vec(k) : r;
}

int cg_kernel_vec(const struct plan_kernel *k)
{
	struct cg_view v;
	int core;
	if (!cg_kernel_compiles_gpu(k, &core) || core >= 0)
		return 1;
	const struct plan_kernel *b = cg_as_body(k, &v);
	if (b->nbody == 1 && cg_own_loop(b->body[0].op))
		return 1;
	int64_t n = ir_shape_numel(&b->body[b->nbody - 1].shape);
	return n >= CG_VEC && n % CG_VEC == 0 ? CG_VEC : 1;
}

int cg_kernel_lanes(const struct plan_kernel *k)
{
	int core;
	return cg_kernel_compiles_gpu(k, &core) && core >= 0 ? 32 : 1; /* as emit_kernel */
}

int64_t cg_kernel_grid_reduce(const struct plan_kernel *k)
{
	struct cg_view v;
	int core;
	if (!cg_kernel_compiles_gpu(k, &core) || core < 0)
		return 0;
	const struct plan_kernel *b = cg_as_body(k, &v);
	if (cg_body_class(b, core) != CG_REDUCE)
		return 0;
	const struct plan_fop *f = &b->body[core];
	int in = f->in[0];
	const struct ir_shape *is = in < b->nin ? &b->shape[in] : &b->body[in - b->nin].shape;
	int64_t rows = ir_shape_numel(&f->shape), per = rows > 0 ? ir_shape_numel(is) / rows : 0;
	return rows <= CG_GRID_ROWS && per >= CG_GRID_MIN ? per : 0;
}

bool cg_own_loop(enum ir_op op)
{
	return op == IR_OP_SCATTER || op == IR_OP_CONV || op == IR_OP_WINDOW_MAX || op == IR_OP_WINDOW_SUM ||
	       op == IR_OP_TOPK || op == IR_OP_CUMSUM || op == IR_OP_DOT;
}
