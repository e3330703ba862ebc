/*
 * interp_kernel.c: the reference interpreter over a plan kernel, one op or
 * a fused kernel's body run op by op: the oracle the generated code is
 * tested against and the runtime's reference path (pcc-run --reference).
 */
#include <errno.h>
#include <string.h>

#include "kernels/kernels.h"
#include "ir/plan.h"

/* One op over tensors in[] into out[] (ir_tensor-allocated results). */
static int run_op(enum ir_op op, const struct ir_attrs *a, int nin, int nout, const struct ir_tensor *in,
		  struct ir_tensor *out, const enum ir_dtype *odt, const struct ir_shape *osh)
{
	struct ir_value vin[256], vout[2], *pin[256], *pout[2];
	struct ir_node n = { .op = op, .a = *a, .nin = nin, .nout = nout, .in = pin, .out = pout };
	for (int j = 0; j < nin; j++) {
		vin[j] = (struct ir_value){ .dtype = in[j].dtype, .shape = in[j].shape };
		pin[j] = &vin[j];
	}
	for (int j = 0; j < nout; j++) {
		vout[j] = (struct ir_value){ .dtype = odt[j], .shape = osh[j] };
		pout[j] = &vout[j];
	}
	return interp_node(&n, in, out);
}

/* A fused kernel on the reference path: its body's ops one at a time. */
static int run_body(const struct plan_kernel *k, const struct ir_tensor *in, struct ir_tensor *out)
{
	struct ir_tensor v[64 + 128];
	int rc = 0, nv = k->nin;
	if (k->nin + k->nbody > 64 + 128)
		return ir_errorf(-EINVAL, "fused kernel of %d ops over %d operands", k->nbody, k->nin);
	memcpy(v, in, sizeof *v * (size_t)k->nin);
	for (int i = 0; i < k->nbody && rc == 0; i++) {
		const struct plan_fop *f = &k->body[i];
		struct ir_tensor fin[PLAN_FOP_MAX_IN];
		for (int j = 0; j < f->nin; j++)
			fin[j] = v[f->in[j]];
		if ((rc = run_op(f->op, &f->a, f->nin, 1, fin, &v[nv], &f->dtype, &f->shape)) == 0)
			nv++;
	}
	if (rc == 0)
		*out = v[--nv];
	for (int i = k->nin; i < nv; i++)
		ir_tensor_free(&v[i]);
	return rc;
}

int interp_kernel(const struct plan_kernel *k, const struct ir_tensor *in, struct ir_tensor *out)
{
	if (k->nbody)
		return run_body(k, in, out);
	if (k->nin > 256 || k->nout > 2)
		return ir_errorf(-EINVAL, "a %s kernel with %d operands and %d results", ir_op_name(k->op), k->nin,
				 k->nout);
	return run_op(k->op, &k->a, k->nin, k->nout, in, out, &k->dtype[k->nin], &k->shape[k->nin]);
}
