/*
 * lower_emit.c: the builders of a stage's template program, below every
 * other file of the lowering: buffers (local types), instructions with
 * their buffer arguments, a value's reps (which buffer holds it under
 * which sharding), a device's piece along mesh axes, and kernels, made by
 * shape inference on their operand buffers and kept once in the plan's
 * table however many instructions, stages or devices run them.
 *
 * Lowering a node (lower.c), resharding (lower_reshard.c), transfers,
 * stages, training and fusion all emit through these; this file calls
 * none of them.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <xxhash.h>

#include "compiler/lower/lower_internal.h"

static void *grow(void *p, int *cap, int need, size_t elem)
{
	if (need <= *cap)
		return p;
	int nc = *cap ? *cap : 16;
	while (nc < need)
		nc *= 2;
	void *q = ir_realloc(p, elem * (size_t)nc);
	if (q)
		*cap = nc;
	return q;
}

#define GROW(L, arr, n, cap, need)                                                    \
	do {                                                                          \
		void *q_ = grow((L)->arr, &(L)->cap, (need), sizeof *(L)->arr);       \
		if (!q_)                                                              \
			return ir_errorf(-ENOMEM, "out of memory lowering the plan"); \
		(L)->arr = q_;                                                        \
	} while (0)

int lw_buf_new(struct lower *L, enum ir_dtype dt, const struct ir_shape *shape_)
{
	struct ir_shape shape[1] = { *shape_ }; /* shape_ may point into L->buf, which moves */
	GROW(L, buf, L->nbuf, capbuf, L->nbuf + 1);
	struct lw_buf *b = &L->buf[L->nbuf];
	memset(b, 0, sizeof *b);
	b->dtype = dt;
	b->shape = *shape;
	b->bind = PLAN_BIND_NONE;
	b->index = -1;
	return L->nbuf++;
}

int lw_emit(struct lower *L, const struct lw_ins *proto, int nin, const int *in, int nout, const int *out)
{
	GROW(L, ins, L->nins, capins, L->nins + 1);
	GROW(L, args, L->nargs, capargs, L->nargs + nin + nout);
	struct lw_ins *x = &L->ins[L->nins];
	*x = *proto;
	x->nin = nin;
	x->nout = nout;
	x->arg = L->nargs;
	for (int i = 0; i < nin; i++)
		L->args[L->nargs++] = in[i];
	for (int i = 0; i < nout; i++)
		L->args[L->nargs++] = out[i];
	return L->nins++;
}

void lw_piece(const struct lower *L, int k, uint8_t m, int *piece, int *n)
{
	int i0 = k / L->n1, i1 = k % L->n1;
	switch (m & 3) {
	case 0:
		*piece = 0;
		*n = 1;
		return;
	case 1:
		*piece = i0;
		*n = L->n0;
		return;
	case 2:
		*piece = i1;
		*n = L->n1;
		return;
	default:
		*piece = i0 * L->n1 + i1;
		*n = L->n0 * L->n1;
		return;
	}
}

void lw_local_shape(const struct lower *L, const struct ir_shape *s, const struct ir_sharding *spec,
		    struct ir_shape *out)
{
	*out = *s;
	for (int d = 0; d < s->rank; d++) {
		int n = ir_sharding_pieces(spec->dim[d], L->n0, L->n1);
		IR_ASSERT(s->dims[d] % n == 0);
		out->dims[d] = s->dims[d] / n;
	}
}

int lw_rep_add(struct lower *L, int value, const struct ir_sharding *spec, int buf)
{
	GROW(L, reps, L->nreps, capreps, L->nreps + 1);
	struct lw_rep *r = &L->reps[L->nreps];
	r->value = value;
	r->spec = *spec;
	r->buf = buf;
	r->next = L->rep_head[value];
	L->rep_head[value] = L->nreps++;
	return 0;
}

/* ---- the kernel table, deduplicated ------------------------------------- */

/* Kernels hash and compare by canonical copies: zeroed, then each field
 * set, so that the bytes which mean nothing (padding, dims past a shape's
 * rank, entries past a list's n, left unset where the structs were built)
 * take no part and equal kernels always meet. Hashing the structs' raw
 * bytes read those (valgrind) and could keep equal kernels apart. A new
 * field fails the size checks: add it to canon_attrs or canon_fop. */
_Static_assert(sizeof(struct ir_attrs) == 8 + sizeof(struct ir_shape) + 12 * sizeof(struct ir_ilist) + 7 * 8,
	       "a new field of struct ir_attrs: add it to canon_attrs");
_Static_assert(sizeof(struct plan_fop) == offsetof(struct plan_fop, shape) + sizeof(struct ir_shape) &&
		       offsetof(struct plan_fop, dtype) ==
			       offsetof(struct plan_fop, in) + sizeof(int) * PLAN_FOP_MAX_IN &&
		       offsetof(struct plan_fop, nin) == offsetof(struct plan_fop, a) + sizeof(struct ir_attrs),
	       "a new field of struct plan_fop: add it to canon_fop");

static void canon_shape(struct ir_shape *c, const struct ir_shape *x)
{
	memset(c, 0, sizeof *c);
	c->rank = x->rank;
	for (int d = 0; d < x->rank && d < IR_MAX_RANK; d++)
		c->dims[d] = x->dims[d];
}

static void canon_ilist(struct ir_ilist *c, const struct ir_ilist *x)
{
	memset(c, 0, sizeof *c);
	c->n = x->n;
	for (int i = 0; i < x->n && i < IR_MAX_RANK; i++)
		c->v[i] = x->v[i];
}

/* data is left NULL: a CONSTANT's bytes are hashed and compared apart */
static void canon_attrs(struct ir_attrs *c, const struct ir_attrs *x)
{
	memset(c, 0, sizeof *c);
	c->dtype = x->dtype;
	canon_shape(&c->shape, &x->shape);
	canon_ilist(&c->axes, &x->axes);
	canon_ilist(&c->lhs_batch, &x->lhs_batch);
	canon_ilist(&c->rhs_batch, &x->rhs_batch);
	canon_ilist(&c->lhs_contract, &x->lhs_contract);
	canon_ilist(&c->rhs_contract, &x->rhs_contract);
	canon_ilist(&c->start, &x->start);
	canon_ilist(&c->limit, &x->limit);
	canon_ilist(&c->stride, &x->stride);
	canon_ilist(&c->pad_lo, &x->pad_lo);
	canon_ilist(&c->pad_hi, &x->pad_hi);
	canon_ilist(&c->window, &x->window);
	canon_ilist(&c->dilation, &x->dilation);
	c->axis = x->axis;
	c->k = x->k;
	c->groups = x->groups;
	c->mode = x->mode;
	c->eps = x->eps;
	c->value = x->value;
}

static void canon_fop(struct plan_fop *c, const struct plan_fop *x)
{
	memset(c, 0, sizeof *c);
	c->op = x->op;
	canon_attrs(&c->a, &x->a);
	c->nin = x->nin;
	for (int i = 0; i < x->nin && i < PLAN_FOP_MAX_IN; i++)
		c->in[i] = x->in[i];
	c->dtype = x->dtype;
	canon_shape(&c->shape, &x->shape);
}

static uint64_t kernel_hash(const struct plan_kernel *k)
{
	XXH3_state_t *s = XXH3_createState();
	uint64_t h;
	if (!s)
		return (uint64_t)k->op;
	XXH3_64bits_reset(s);
	XXH3_64bits_update(s, &k->op, sizeof k->op);
	struct ir_attrs a;
	canon_attrs(&a, &k->a);
	XXH3_64bits_update(s, &a, sizeof a);
	if (k->op == IR_OP_CONSTANT) {
		struct ir_tensor t = { a.dtype, a.shape, NULL };
		XXH3_64bits_update(s, k->a.data, ir_tensor_bytes(&t));
	}
	XXH3_64bits_update(s, k->dtype, sizeof *k->dtype * (size_t)(k->nin + k->nout));
	for (int i = 0; i < k->nin + k->nout; i++) {
		struct ir_shape sh;
		canon_shape(&sh, &k->shape[i]);
		XXH3_64bits_update(s, &sh, sizeof sh);
	}
	for (int i = 0; i < k->nbody; i++) {
		struct plan_fop f;
		canon_fop(&f, &k->body[i]);
		XXH3_64bits_update(s, &f, sizeof f);
		if (f.op == IR_OP_CONSTANT) {
			struct ir_tensor t = { f.a.dtype, f.a.shape, NULL };
			XXH3_64bits_update(s, k->body[i].a.data, ir_tensor_bytes(&t));
		}
	}
	h = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	return h;
}

static bool fop_eq(const struct plan_fop *x, const struct plan_fop *y)
{
	struct plan_fop a, b;
	canon_fop(&a, x);
	canon_fop(&b, y);
	if (memcmp(&a, &b, sizeof a))
		return false;
	struct ir_tensor t = { a.a.dtype, a.a.shape, NULL };
	return x->op != IR_OP_CONSTANT || !memcmp(x->a.data, y->a.data, ir_tensor_bytes(&t));
}

static bool kernel_eq(const struct plan_kernel *x, const struct plan_kernel *y)
{
	if (x->op != y->op || x->nin != y->nin || x->nout != y->nout || x->nbody != y->nbody)
		return false;
	for (int i = 0; i < x->nbody; i++)
		if (!fop_eq(&x->body[i], &y->body[i]))
			return false;
	struct ir_attrs a, b;
	canon_attrs(&a, &x->a);
	canon_attrs(&b, &y->a);
	if (memcmp(&a, &b, sizeof a))
		return false;
	for (int i = 0; i < x->nin + x->nout; i++)
		if (x->dtype[i] != y->dtype[i] || !ir_shape_eq(&x->shape[i], &y->shape[i]))
			return false;
	if (x->op == IR_OP_CONSTANT) {
		struct ir_tensor t = { a.dtype, a.shape, NULL };
		return !memcmp(x->a.data, y->a.data, ir_tensor_bytes(&t));
	}
	return true;
}

static int khash_grow(struct lower *L)
{
	int cap = L->sh->khcap ? 2 * L->sh->khcap : 1024;
	int *t = ir_malloc(sizeof *t * (size_t)cap);
	if (!t)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	memset(t, -1, sizeof *t * (size_t)cap);
	for (int i = 0; i < L->p->nkernels; i++) {
		uint64_t h = kernel_hash(&L->p->kernels[i]);
		size_t j = h & (size_t)(cap - 1);
		while (t[j] >= 0)
			j = (j + 1) & (size_t)(cap - 1);
		t[j] = i;
	}
	ir_free(L->sh->khash);
	L->sh->khash = t;
	L->sh->khcap = cap;
	return 0;
}

int lw_kernel_intern(struct lower *L, struct plan_kernel *k)
{
	struct plan *p = L->p;
	if (2 * (p->nkernels + 1) > L->sh->khcap && khash_grow(L) < 0)
		return -ENOMEM;
	uint64_t h = kernel_hash(k);
	size_t j = h & (size_t)(L->sh->khcap - 1);
	for (; L->sh->khash[j] >= 0; j = (j + 1) & (size_t)(L->sh->khcap - 1))
		if (kernel_eq(&p->kernels[L->sh->khash[j]], k)) {
			plan_kernel_free(k);
			return L->sh->khash[j];
		}
	if (p->nkernels % 64 == 0) {
		struct plan_kernel *nk = ir_realloc(p->kernels, sizeof *nk * (size_t)(p->nkernels + 64));
		if (!nk)
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		p->kernels = nk;
	}
	p->kernels[p->nkernels] = *k;
	L->sh->khash[j] = p->nkernels;
	return p->nkernels++;
}

/* Builds kernel op(a) over buffers in[] (result types inferred) and interns
 * it; result types in dt[]/sh[]. */
static int make_kernel(struct lower *L, enum ir_op op, const struct ir_attrs *a, int nin, const int *in,
		       enum ir_dtype *dt, struct ir_shape *sh)
{
	struct ir_value vals[LW_MAX_IN], *vp[LW_MAX_IN];
	IR_ASSERT(nin <= LW_MAX_IN);
	for (int i = 0; i < nin; i++) {
		memset(&vals[i], 0, sizeof vals[i]);
		vals[i].dtype = L->buf[in[i]].dtype;
		vals[i].shape = L->buf[in[i]].shape;
		vp[i] = &vals[i];
	}
	int nout = ir_op_noutputs(op);
	if (ir_infer(op, nin, vp, a, dt, sh) < 0) {
		ir_error_prefix("lowering %s", ir_op_name(op));
		return -EINVAL;
	}
	struct plan_kernel k = { .op = op, .a = *a, .nin = nin, .nout = nout };
	k.a.data = NULL;
	k.dtype = ir_malloc(sizeof *k.dtype * (size_t)(nin + nout));
	k.shape = ir_malloc(sizeof *k.shape * (size_t)(nin + nout));
	if (!k.dtype || !k.shape)
		goto nomem;
	for (int i = 0; i < nin; i++) {
		k.dtype[i] = vals[i].dtype;
		k.shape[i] = vals[i].shape;
	}
	for (int i = 0; i < nout; i++) {
		k.dtype[nin + i] = dt[i];
		k.shape[nin + i] = sh[i];
	}
	if (op == IR_OP_CONSTANT) {
		struct ir_tensor t = { a->dtype, a->shape, NULL };
		size_t n = ir_tensor_bytes(&t);
		void *d = ir_malloc(n ? n : 1);
		if (!d)
			goto nomem;
		memcpy(d, a->data, n);
		k.a.data = d;
	}
	return lw_kernel_intern(L, &k);
nomem:
	ir_free(k.dtype);
	ir_free(k.shape);
	return ir_errorf(-ENOMEM, "out of memory lowering the plan");
}

int lw_kernel(struct lower *L, enum ir_op op, const struct ir_attrs *a, const struct ir_attrs *dev_attrs, int nin,
	      const int *in, int *out)
{
	enum ir_dtype dt[2];
	struct ir_shape sh[2];
	struct lw_ins x = { .kind = PLAN_KERNEL, .kernel = -1 };
	int rc;
	if (dev_attrs) {
		if (!(x.dev_kernel = ir_malloc(sizeof *x.dev_kernel * (size_t)L->nd)))
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		for (int k = 0; k < L->nd; k++) {
			if ((rc = make_kernel(L, op, &dev_attrs[k], nin, in, dt, sh)) < 0) {
				ir_free(x.dev_kernel);
				return rc;
			}
			x.dev_kernel[k] = rc;
		}
	} else if ((x.kernel = make_kernel(L, op, a, nin, in, dt, sh)) < 0) {
		return x.kernel;
	}
	int nout = ir_op_noutputs(op);
	for (int i = 0; i < nout; i++)
		if ((out[i] = lw_buf_new(L, dt[i], &sh[i])) < 0)
			goto fail;
	if ((rc = lw_emit(L, &x, nin, in, nout, out)) < 0)
		goto fail;
	return 0;
fail:
	ir_free(x.dev_kernel);
	return -ENOMEM;
}

int lw_kernel_into(struct lower *L, enum ir_op op, int nin, const int *in, int out)
{
	enum ir_dtype dt[2];
	struct ir_shape sh[2];
	struct ir_attrs a;
	memset(&a, 0, sizeof a);
	struct lw_ins x = { .kind = PLAN_KERNEL, .kernel = make_kernel(L, op, &a, nin, in, dt, sh) };
	if (x.kernel < 0)
		return x.kernel;
	IR_ASSERT(ir_op_noutputs(op) == 1 && dt[0] == L->buf[out].dtype && ir_shape_eq(&sh[0], &L->buf[out].shape));
	return lw_emit(L, &x, nin, in, 1, &out) < 0 ? -ENOMEM : 0;
}
