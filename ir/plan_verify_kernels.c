/*
 * plan_verify_kernels.c: plan_verify's checks of the kernel table. Every
 * kernel's op, operand counts and types; a single op's results are what
 * shape inference gives; a fused kernel's body (each op reads values
 * before it, its recorded result is what shape inference gives, the last
 * op's result is the kernel's).
 */
#include <errno.h>

#include "ir/plan_verify.h"

#define ty plan_verify_ty

/* A fused kernel's body: every op reads earlier values, its result type is
 * what shape inference gives, and the last op's is the kernel's result. */
static int check_body(const struct plan_kernel *kn, int k)
{
	int nv = kn->nin + kn->nbody;
	struct ir_value *v = ir_calloc((size_t)nv, sizeof *v);
	char a[TY_MAX], b[TY_MAX];
	int rc = 0;
	if (!v)
		return ir_errorf(-ENOMEM, "out of memory checking the plan");
	for (int j = 0; j < kn->nin; j++) {
		v[j].dtype = kn->dtype[j];
		v[j].shape = kn->shape[j];
	}
	for (int i = 0; i < kn->nbody && rc == 0; i++) {
		const struct plan_fop *f = &kn->body[i];
		struct ir_value *in[PLAN_FOP_MAX_IN];
		enum ir_dtype dt[2];
		struct ir_shape sh[2];
		int want = (unsigned)f->op < IR_OP_COUNT ? ir_op_ninputs(f->op) : -2;
		if (want < 0 || f->nin != want || ir_op_noutputs(f->op) != 1 || f->nin > PLAN_FOP_MAX_IN) {
			rc = ir_errorf(-EINVAL, "plan: kernel %d, body op %d: op %d with %d operands cannot be fused",
				       k, i, (int)f->op, f->nin);
			break;
		}
		for (int j = 0; j < f->nin && rc == 0; j++) {
			if (f->in[j] < 0 || f->in[j] >= kn->nin + i)
				rc = ir_errorf(-EINVAL,
					       "plan: kernel %d, body op %d (%s): operand %d is value %d, "
					       "not one before it",
					       k, i, ir_op_name(f->op), j, f->in[j]);
			else
				in[j] = &v[f->in[j]];
		}
		if (rc == 0 && ir_infer(f->op, f->nin, in, &f->a, dt, sh) < 0) {
			ir_error_prefix("plan: kernel %d, body op %d (%s)", k, i, ir_op_name(f->op));
			rc = -EINVAL;
		} else if (rc == 0 && (dt[0] != f->dtype || !ir_shape_eq(&sh[0], &f->shape))) {
			rc = ir_errorf(-EINVAL, "plan: kernel %d, body op %d (%s) yields %s, recorded as %s", k, i,
				       ir_op_name(f->op), ty(a, dt[0], &sh[0]), ty(b, f->dtype, &f->shape));
		}
		v[kn->nin + i].dtype = f->dtype;
		v[kn->nin + i].shape = f->shape;
	}
	const struct plan_fop *last = &kn->body[kn->nbody - 1];
	if (rc == 0 && (last->dtype != kn->dtype[kn->nin] || !ir_shape_eq(&last->shape, &kn->shape[kn->nin])))
		rc = ir_errorf(-EINVAL, "plan: kernel %d: its body yields %s, its result is %s", k,
			       ty(a, last->dtype, &last->shape), ty(b, kn->dtype[kn->nin], &kn->shape[kn->nin]));
	ir_free(v);
	return rc;
}

/* A single op's results are what shape inference gives on its operands
 * and attributes: the kernels trust the attributes (a slice's bounds, a
 * reshape's shape) to fit the buffers they are given. */
static int check_single(const struct plan_kernel *kn, int k)
{
	struct ir_value *v = ir_calloc((size_t)kn->nin + 1, sizeof *v);
	struct ir_value **in = ir_calloc((size_t)kn->nin + 1, sizeof *in);
	enum ir_dtype dt[2];
	struct ir_shape sh[2];
	char a[TY_MAX], b[TY_MAX];
	int rc = 0;
	if (!v || !in || kn->nout > 2)
		rc = kn->nout > 2 ? ir_errorf(-EINVAL, "plan: kernel %d has %d results", k, kn->nout)
				  : ir_errorf(-ENOMEM, "out of memory checking the plan");
	for (int j = 0; rc == 0 && j < kn->nin; j++) {
		v[j] = (struct ir_value){ .dtype = kn->dtype[j], .shape = kn->shape[j] };
		in[j] = &v[j];
	}
	if (rc == 0 && ir_infer(kn->op, kn->nin, in, &kn->a, dt, sh) < 0) {
		ir_error_prefix("plan: kernel %d (%s)", k, ir_op_name(kn->op));
		rc = -EINVAL;
	}
	for (int j = 0; rc == 0 && j < kn->nout; j++) {
		const enum ir_dtype *t = &kn->dtype[kn->nin + j];
		const struct ir_shape *s = &kn->shape[kn->nin + j];
		if (dt[j] != *t || !ir_shape_eq(&sh[j], s))
			rc = ir_errorf(-EINVAL, "plan: kernel %d (%s) yields %s as result %d, recorded as %s", k,
				       ir_op_name(kn->op), ty(a, dt[j], &sh[j]), j, ty(b, *t, s));
	}
	ir_free(v);
	ir_free(in);
	return rc;
}

int plan_verify_kernels(const struct plan *p)
{
	for (int k = 0; k < p->nkernels; k++) {
		const struct plan_kernel *kn = &p->kernels[k];
		if ((unsigned)kn->op >= IR_OP_COUNT)
			return ir_errorf(-EINVAL, "plan: kernel %d has op %d, not a core op", k, (int)kn->op);
		const char *name = ir_op_name(kn->op);
		int nin = ir_op_ninputs(kn->op), nout = ir_op_noutputs(kn->op);
		if (kn->nbody > 0) {
			int rc = 0;
			if (kn->nout != 1 || !kn->dtype || !kn->shape)
				return ir_errorf(-EINVAL, "plan: kernel %d (fused) has %d results, not 1", k, kn->nout);
			for (int j = 0; j < kn->nin + kn->nout && rc == 0; j++)
				if ((unsigned)kn->dtype[j] >= IR_DTYPE_COUNT || ir_shape_check(&kn->shape[j]) < 0)
					rc = ir_errorf(-EINVAL, "plan: kernel %d (fused), operand %d: bad type", k, j);
			if (rc == 0)
				rc = check_body(kn, k);
			if (rc < 0)
				return rc;
			continue;
		}
		if (nin >= 0 ? kn->nin != nin : kn->nin < 1)
			return ir_errorf(-EINVAL, "plan: kernel %d (%s) has %d inputs, the op takes %s%d", k, name,
					 kn->nin, nin < 0 ? "at least " : "", nin < 0 ? 1 : nin);
		if (kn->nout != nout)
			return ir_errorf(-EINVAL, "plan: kernel %d (%s) has %d outputs, the op has %d", k, name,
					 kn->nout, nout);
		if (!kn->dtype || !kn->shape)
			return ir_errorf(-EINVAL, "plan: kernel %d (%s) has no operand types", k, name);
		for (int j = 0; j < kn->nin + kn->nout; j++) {
			if ((unsigned)kn->dtype[j] >= IR_DTYPE_COUNT)
				return ir_errorf(-EINVAL, "plan: kernel %d (%s), operand %d: dtype %d is not a dtype",
						 k, name, j, (int)kn->dtype[j]);
			if (ir_shape_check(&kn->shape[j]) < 0) {
				ir_error_prefix("plan: kernel %d (%s), operand %d", k, name, j);
				return -EINVAL;
			}
		}
		int rc = check_single(kn, k);
		if (rc < 0)
			return rc;
	}
	return 0;
}
