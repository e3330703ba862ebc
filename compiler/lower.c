/*
 * lower.c: SPMD lowering of one sharded stage into per-device programs.
 *
 * Input: a graph the intra-op pass has solved (its strategy per node, in
 * intra_result.st). Walk the nodes in order; for each, bring every operand
 * to the sharding the node's strategy needs (lower_reshard.c: all-reduce or
 * reduce-scatter of partial sums, all-gathers, local slices), then run the
 * op on the local pieces. The dimension-label rules (intra_rules.c) only
 * allow splits under which the local op is the same op on local shapes, so
 * the kernel is the op itself with shape attributes made local, except:
 * a max/min reduction over a split dimension all-reduces its result, and a
 * gather from a table split along the gathered axis looks up only the rows
 * the device holds and contributes zeros elsewhere (a partial sum, summed
 * by the consumer's resharding: Megatron's vocabulary-parallel embedding).
 * Outputs are left split as the pass chose, partial sums reduced.
 * Constants (values no input or parameter flows into: masks, position
 * ids) are not lowered in program order but made where each reader needs
 * them, in its sharding (remat), so nothing big is held between readers.
 *
 * Example: y = relu(x @ w1) @ w2 on a 1x2 mesh, w1 by columns and w2 by
 * rows: each device runs dot, relu, dot on its halves; y is partial; one
 * all-reduce makes it whole.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <xxhash.h>

#include "compiler/lower_internal.h"

#define LW_MAX_IN 256 /* operands of one op (a concat's) */

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

/* ---- nodes ----------------------------------------------------------------- */

/* A scalar constant broadcast to shape s (per device when vals has nd
 * entries, else vals[0] everywhere). */
static int splat(struct lower *L, enum ir_dtype dt, const struct ir_shape *s, const int64_t *vals, bool per_dev,
		 int *out)
{
	struct ir_attrs *da = NULL, a;
	int64_t *store = ir_malloc(sizeof(int64_t) * 8 * (size_t)L->nd);
	int c, rc;
	if (!store)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	memset(&a, 0, sizeof a);
	a.dtype = dt;
	a.shape.rank = 0;
	for (int k = 0; k < (per_dev ? L->nd : 1); k++) {
		struct ir_tensor t = { dt, a.shape, &store[8 * k] };
		ir_tensor_set_i64(&t, 0, vals[k]);
	}
	if (per_dev) {
		if (!(da = ir_malloc(sizeof *da * (size_t)L->nd))) {
			ir_free(store);
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		}
		for (int k = 0; k < L->nd; k++) {
			da[k] = a;
			da[k].data = &store[8 * k];
		}
	} else {
		a.data = store;
	}
	rc = lw_kernel(L, IR_OP_CONSTANT, &a, da, 0, NULL, &c);
	ir_free(da);
	ir_free(store);
	if (rc < 0)
		return rc;
	memset(&a, 0, sizeof a);
	a.shape = *s;
	return lw_kernel(L, IR_OP_BROADCAST, &a, NULL, 1, &c, out);
}

static int binop(struct lower *L, enum ir_op op, int x, int y, int *out)
{
	struct ir_attrs a;
	memset(&a, 0, sizeof a);
	int in[2] = { x, y };
	return lw_kernel(L, op, &a, NULL, 2, in, out);
}

/* Gather from a table split over mask m along the gathered axis: each device
 * looks up the indices in its rows [off, off + rows) and writes zeros for
 * the others; the result is a partial sum over m. */
static int gather_split(struct lower *L, const struct ir_node *n, uint8_t m, int table, int idx, int *out)
{
	const struct lw_buf tb = L->buf[table]; /* a copy: L->buf moves as buffers are added */
	int ax = (int)n->a.axis;
	int64_t rows = tb.shape.dims[ax], total = n->in[0]->shape.dims[ax];
	enum ir_dtype it = L->buf[idx].dtype;
	struct ir_shape is = L->buf[idx].shape;
	int64_t *offs = ir_malloc(sizeof *offs * (size_t)L->nd);
	int zero, ntot, neg, wrapped, norm, off, rel, ge0, nrows, ltn, valid, relc, look, rc;
	if (!offs)
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	for (int k = 0; k < L->nd; k++) {
		int piece, np;
		lw_piece(L, k, m, &piece, &np);
		offs[k] = piece * rows;
	}
	int64_t z = 0;
	if ((rc = splat(L, it, &is, &z, false, &zero)) < 0 || (rc = splat(L, it, &is, &total, false, &ntot)) < 0 ||
	    (rc = binop(L, IR_OP_LT, idx, zero, &neg)) < 0 || (rc = binop(L, IR_OP_ADD, idx, ntot, &wrapped)) < 0)
		goto out;
	{
		struct ir_attrs a;
		memset(&a, 0, sizeof a);
		int in3[3] = { neg, wrapped, idx };
		if ((rc = lw_kernel(L, IR_OP_SELECT, &a, NULL, 3, in3, &norm)) < 0)
			goto out;
	}
	if ((rc = splat(L, it, &is, offs, true, &off)) < 0 || (rc = binop(L, IR_OP_SUB, norm, off, &rel)) < 0 ||
	    (rc = binop(L, IR_OP_GE, rel, zero, &ge0)) < 0 || (rc = splat(L, it, &is, &rows, false, &nrows)) < 0 ||
	    (rc = binop(L, IR_OP_LT, rel, nrows, &ltn)) < 0 || (rc = binop(L, IR_OP_AND, ge0, ltn, &valid)) < 0)
		goto out;
	struct ir_attrs a;
	memset(&a, 0, sizeof a);
	int in3[3] = { valid, rel, zero };
	if ((rc = lw_kernel(L, IR_OP_SELECT, &a, NULL, 3, in3, &relc)) < 0)
		goto out;
	a.axis = ax;
	int in2[2] = { table, relc };
	if ((rc = lw_kernel(L, IR_OP_GATHER, &a, NULL, 2, in2, &look)) < 0)
		goto out;
	/* the mask broadcast over the looked-up rows */
	const struct ir_shape os = L->buf[look].shape;
	int vb, zt;
	memset(&a, 0, sizeof a);
	a.shape = os;
	a.axes.n = is.rank;
	for (int d = 0; d < is.rank; d++)
		a.axes.v[d] = ax + d;
	if ((rc = lw_kernel(L, IR_OP_BROADCAST, &a, NULL, 1, &valid, &vb)) < 0 ||
	    (rc = splat(L, tb.dtype, &os, &z, false, &zt)) < 0)
		goto out;
	memset(&a, 0, sizeof a);
	int sel[3] = { vb, look, zt };
	rc = lw_kernel(L, IR_OP_SELECT, &a, NULL, 3, sel, out);
out:
	ir_free(offs);
	return rc;
}

/* Attributes of node n made local: shapes that name the result's size. */
static void local_attrs(const struct lower *L, const struct ir_node *n, const struct ir_sharding *out,
			struct ir_attrs *a)
{
	*a = n->a;
	/* the labels split no other dimension an attribute names (intra_rules.c) */
	if (n->op == IR_OP_RESHAPE || n->op == IR_OP_BROADCAST)
		lw_local_shape(L, &n->out[0]->shape, out, &a->shape);
	if (n->op == IR_OP_SLICE)
		for (int d = 0; d < n->in[0]->shape.rank; d++)
			if (out->dim[d])
				a->limit.v[d] /= ir_sharding_pieces(out->dim[d], L->n0, L->n1);
}

/* The mesh axes on which strategy s splits a max label (the node then
 * all-reduces its result with *red over them). */
static int max_axes(const struct intra_labels *l, const struct intra_strat *s, enum plan_reduce *red,
		    const struct ir_node *n)
{
	uint8_t m = 0;
	for (int ax = 0; ax < IR_MESH_AXES; ax++)
		if (s->lab[ax] >= 0 && l->kind[s->lab[ax]] == INTRA_MAX)
			m |= (uint8_t)(1u << ax);
	*red = n->op == IR_OP_REDUCE_MIN ? PLAN_MIN : PLAN_MAX;
	return m;
}

/* The buffer holding value v under exactly spec dst, or -1. */
static int exact_rep(const struct lower *L, int v, const struct ir_sharding *dst)
{
	for (int r = L->rep_head[v]; r >= 0; r = L->reps[r].next)
		if (!memcmp(&L->reps[r].spec, dst, sizeof *dst))
			return L->reps[r].buf;
	return -1;
}

int lw_ensure(struct lower *L, const struct ir_value *v)
{
	if (L->rep_head[v->id] >= 0 || v->kind != IR_VAL_NODE)
		return 0;
	return lw_node(L, v->def);
}

static int operand(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst, int depth);

/* Constant value v (nothing upstream reads an input or parameter: masks,
 * position ids, iotas) computed again right where it is read, directly in
 * the sharding the reader needs, as a fusing backend does: no collective,
 * only the local piece, nothing held between readers. 1 with *buf, 0 when
 * its op has no such strategy (then it is computed once and resharded). */
static int remat(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst, int depth, int *buf)
{
	const struct ir_node *n = v->def;
	if (v->kind != IR_VAL_NODE || L->dyn[v->id] || dst->partial || depth > 64 || n->nout != 1 ||
	    n->nin > LW_MAX_IN || n->op == IR_OP_GATHER)
		return 0;
	struct ir_shape ls;
	struct ir_attrs a;
	int in[LW_MAX_IN], rc;
	lw_local_shape(L, &v->shape, dst, &ls);
	if (n->op == IR_OP_IOTA) {
		/* the local piece of an iota is an iota plus where the piece starts */
		int ax = (int)n->a.axis, it;
		a = n->a;
		a.shape = ls;
		if ((rc = lw_kernel(L, IR_OP_IOTA, &a, NULL, 0, NULL, &it)) < 0)
			return rc;
		if (!dst->dim[ax]) {
			*buf = it;
			return 1;
		}
		int64_t *offs = ir_malloc(sizeof *offs * (size_t)L->nd);
		int off;
		if (!offs)
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		for (int k = 0; k < L->nd; k++) {
			int piece, np;
			lw_piece(L, k, dst->dim[ax], &piece, &np);
			offs[k] = piece * ls.dims[ax];
		}
		rc = splat(L, n->a.dtype, &ls, offs, true, &off);
		ir_free(offs);
		if (rc < 0 || (rc = binop(L, IR_OP_ADD, it, off, buf)) < 0)
			return rc;
		return 1;
	}
	const struct intra_unit *x = &L->st->unit[n->id];
	const struct intra_strat *s = NULL;
	for (int i = 0; i < x->nstrat && !s; i++) {
		enum plan_reduce red;
		if (!memcmp(&x->strat[i].out, dst, sizeof *dst) && !max_axes(&x->lab, &x->strat[i], &red, n))
			s = &x->strat[i];
	}
	if (!s)
		return 0;
	for (int j = 0; j < n->nin; j++) {
		struct ir_sharding ds;
		intra_operand_spec(&x->lab, s, j, n->in[j]->shape.rank, &ds);
		if ((in[j] = operand(L, n->in[j], &ds, depth + 1)) < 0)
			return in[j];
	}
	local_attrs(L, n, dst, &a);
	if ((rc = lw_kernel(L, n->op, &a, NULL, n->nin, in, buf)) < 0)
		return rc;
	return 1;
}

/* Value v as a buffer under dst: the rep that has it, a constant made
 * there, or the nearest rep resharded. */
static int operand(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst, int depth)
{
	int b = exact_rep(L, v->id, dst), rc;
	if (b >= 0)
		return b;
	if ((rc = remat(L, v, dst, depth, &b)) != 0)
		return rc < 0 ? rc : b;
	if ((rc = lw_ensure(L, v)) < 0)
		return rc;
	int r = L->rep_head[v->id];
	IR_ASSERT(r >= 0);
	struct ir_sharding src = L->reps[r].spec;
	return lw_reshard(L, v, L->reps[r].buf, &src, dst);
}

int lw_operand(struct lower *L, const struct ir_value *v, const struct ir_sharding *dst)
{
	return operand(L, v, dst, 0);
}

int lw_node(struct lower *L, const struct ir_node *n)
{
	const struct intra_state *st = L->st;
	const struct intra_unit *x = &st->unit[n->id];
	const struct intra_strat *s = intra_chosen(st, n->id);
	int in[LW_MAX_IN], out[2], rc;
	if (n->nin > LW_MAX_IN)
		return ir_errorf(-ENOTSUP, "node %d \"%s\" (%s): %d operands, lowering takes at most %d", n->id,
				 n->name ? n->name : "", ir_op_name(n->op), n->nin, LW_MAX_IN);
	for (int j = 0; j < n->nin; j++) {
		const struct ir_value *v = n->in[j];
		struct ir_sharding dst;
		intra_operand_spec(&x->lab, s, j, v->shape.rank, &dst);
		if ((in[j] = operand(L, v, &dst, 0)) < 0)
			return in[j];
	}
	if (n->op == IR_OP_GATHER) {
		int ax = (int)n->a.axis;
		struct ir_sharding tsp;
		intra_operand_spec(&x->lab, s, 0, n->in[0]->shape.rank, &tsp);
		if (tsp.dim[ax]) {
			if ((rc = gather_split(L, n, tsp.dim[ax], in[0], in[1], &out[0])) < 0)
				return rc;
			return lw_rep_add(L, n->out[0]->id, &s->out, out[0]);
		}
	}
	struct ir_attrs a;
	local_attrs(L, n, &s->out, &a);
	if ((rc = lw_kernel(L, n->op, &a, NULL, n->nin, in, out)) < 0) {
		ir_error_prefix("node %d \"%s\"", n->id, n->name ? n->name : "");
		return rc;
	}
	enum plan_reduce red;
	uint8_t mx = (uint8_t)max_axes(&x->lab, s, &red, n);
	if (mx) {
		struct lw_ins c = { .kind = PLAN_ALL_REDUCE, .kernel = -1, .axes = mx, .reduce = red };
		int r2 = lw_buf_new(L, L->buf[out[0]].dtype, &L->buf[out[0]].shape);
		if (r2 < 0 || (rc = lw_emit(L, &c, 1, &out[0], 1, &r2)) < 0)
			return -ENOMEM;
		out[0] = r2;
	}
	for (int k = 0; k < n->nout; k++) {
		struct ir_shape want;
		lw_local_shape(L, &n->out[k]->shape, &s->out, &want);
		IR_ASSERT(ir_shape_eq(&want, &L->buf[out[k]].shape));
		if ((rc = lw_rep_add(L, n->out[k]->id, &s->out, out[k])) < 0)
			return rc;
	}
	return 0;
}
