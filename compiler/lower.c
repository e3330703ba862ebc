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
 *
 * Example: y = relu(x @ w1) @ w2 on a 1x2 mesh, w1 by columns and w2 by
 * rows: each device runs dot, relu, dot on its halves; y is partial; one
 * all-reduce makes it whole.
 */
#include <errno.h>
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

#define GROW(L, arr, n, cap, need)                                                  \
	do {                                                                        \
		void *q_ = grow((L)->arr, &(L)->cap, (need), sizeof *(L)->arr);     \
		if (!q_)                                                            \
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");  \
		(L)->arr = q_;                                                      \
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
	case 0: *piece = 0; *n = 1; return;
	case 1: *piece = i0; *n = L->n0; return;
	case 2: *piece = i1; *n = L->n1; return;
	default: *piece = i0 * L->n1 + i1; *n = L->n0 * L->n1; return;
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

static uint64_t kernel_hash(const struct plan_kernel *k)
{
	XXH3_state_t *s = XXH3_createState();
	uint64_t h;
	if (!s)
		return (uint64_t)k->op;
	XXH3_64bits_reset(s);
	XXH3_64bits_update(s, &k->op, sizeof k->op);
	struct ir_attrs a = k->a;
	a.data = NULL;
	XXH3_64bits_update(s, &a, sizeof a);
	if (k->op == IR_OP_CONSTANT) {
		struct ir_tensor t = { a.dtype, a.shape, NULL };
		XXH3_64bits_update(s, k->a.data, ir_tensor_bytes(&t));
	}
	XXH3_64bits_update(s, k->dtype, sizeof *k->dtype * (size_t)(k->nin + k->nout));
	XXH3_64bits_update(s, k->shape, sizeof *k->shape * (size_t)(k->nin + k->nout));
	h = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	return h;
}

static bool kernel_eq(const struct plan_kernel *x, const struct plan_kernel *y)
{
	if (x->op != y->op || x->nin != y->nin || x->nout != y->nout)
		return false;
	struct ir_attrs a = x->a, b = y->a;
	a.data = b.data = NULL;
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
	int cap = L->khcap ? 2 * L->khcap : 1024;
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
	ir_free(L->khash);
	L->khash = t;
	L->khcap = cap;
	return 0;
}

/* The index of kernel k in the plan's table, adding it (taking over its
 * arrays) when new; k's arrays are freed when it was there already. */
static int kernel_intern(struct lower *L, struct plan_kernel *k)
{
	struct plan *p = L->p;
	if (2 * (p->nkernels + 1) > L->khcap && khash_grow(L) < 0)
		return -ENOMEM;
	uint64_t h = kernel_hash(k);
	size_t j = h & (size_t)(L->khcap - 1);
	for (; L->khash[j] >= 0; j = (j + 1) & (size_t)(L->khcap - 1))
		if (kernel_eq(&p->kernels[L->khash[j]], k)) {
			ir_free(k->dtype);
			ir_free(k->shape);
			ir_free((void *)k->a.data);
			return L->khash[j];
		}
	if (p->nkernels % 64 == 0) {
		struct plan_kernel *nk = ir_realloc(p->kernels, sizeof *nk * (size_t)(p->nkernels + 64));
		if (!nk)
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		p->kernels = nk;
	}
	p->kernels[p->nkernels] = *k;
	L->khash[j] = p->nkernels;
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
	return kernel_intern(L, &k);
nomem:
	ir_free(k.dtype);
	ir_free(k.shape);
	return ir_errorf(-ENOMEM, "out of memory lowering the plan");
}

int lw_kernel(struct lower *L, enum ir_op op, const struct ir_attrs *a, const struct ir_attrs *dev_attrs,
	      int nin, const int *in, int *out)
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

static int lower_node(struct lower *L, const struct ir_node *n)
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
		int r = L->rep_head[v->id];
		IR_ASSERT(r >= 0);
		int best = r;
		for (; r >= 0; r = L->reps[r].next)
			if (!memcmp(&L->reps[r].spec, &dst, sizeof dst)) {
				best = r;
				break;
			}
		struct ir_sharding src = L->reps[best].spec;
		int b = lw_reshard(L, v, L->reps[best].buf, &src, &dst);
		if (b < 0)
			return b;
		in[j] = b;
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

/* ---- entry ------------------------------------------------------------------ */

static int add_tensors(struct plan_tensor **arr, int *n, const struct ir_graph *g, int count,
		       struct ir_value *(*get)(const struct ir_graph *, int), bool outputs)
{
	if (!(*arr = ir_calloc((size_t)(count ? count : 1), sizeof **arr)))
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	*n = count;
	for (int i = 0; i < count; i++) {
		const struct ir_value *v = get(g, i);
		const char *name = outputs ? ir_graph_output_name(g, i) : v->name;
		char tmp[32];
		if (!name) {
			snprintf(tmp, sizeof tmp, "%s%d", outputs ? "output" : "value", i);
			name = tmp;
		}
		size_t len = strlen(name);
		if (!((*arr)[i].name = ir_malloc(len + 1)))
			return ir_errorf(-ENOMEM, "out of memory lowering the plan");
		memcpy((*arr)[i].name, name, len + 1);
		(*arr)[i].dtype = v->dtype;
		(*arr)[i].shape = v->shape;
	}
	return 0;
}

/* A bound buffer for a graph input or parameter under its unit's sharding. */
static int bind_value(struct lower *L, const struct ir_value *v, enum plan_bind bind, int index)
{
	int u = L->st->value_unit[v->id];
	if (u < 0)
		return 0; /* nothing reads it */
	const struct intra_strat *s = intra_chosen(L->st, u);
	struct ir_shape ls;
	lw_local_shape(L, &v->shape, &s->out, &ls);
	int b = lw_buf_new(L, v->dtype, &ls);
	if (b < 0)
		return b;
	L->buf[b].bind = bind;
	L->buf[b].index = index;
	L->buf[b].spec = s->out;
	return lw_rep_add(L, v->id, &s->out, b);
}

/* Output i: the value whole where partial, bound where it lies, copied
 * when that buffer is already bound. */
static int bind_output(struct lower *L, int i)
{
	const struct ir_value *v = ir_graph_output(L->g, i);
	int r = L->rep_head[v->id];
	IR_ASSERT(r >= 0);
	struct ir_sharding src = L->reps[r].spec, dst = src;
	dst.partial = 0;
	int b = lw_reshard(L, v, L->reps[r].buf, &src, &dst);
	if (b < 0)
		return b;
	if (L->buf[b].bind != PLAN_BIND_NONE) {
		struct lw_ins c = { .kind = PLAN_COPY, .kernel = -1 };
		int nb = lw_buf_new(L, L->buf[b].dtype, &L->buf[b].shape);
		if (nb < 0 || lw_emit(L, &c, 1, &b, 1, &nb) < 0)
			return -ENOMEM;
		b = nb;
	}
	L->buf[b].bind = PLAN_BIND_OUTPUT;
	L->buf[b].index = i;
	L->buf[b].spec = dst;
	return 0;
}

static void lower_release(struct lower *L)
{
	for (int i = 0; i < L->nins; i++)
		ir_free(L->ins[i].dev_kernel);
	ir_free(L->buf);
	ir_free(L->ins);
	ir_free(L->args);
	ir_free(L->reps);
	ir_free(L->rep_head);
	ir_free(L->khash);
}

int lower_single(const struct ir_graph *g, const struct intra_result *r, const char *cluster, struct plan **out)
{
	struct lower L;
	int rc = -ENOMEM;
	memset(&L, 0, sizeof L);
	*out = NULL;
	if (!r->st)
		return ir_errorf(-EINVAL, "lowering needs the intra-op pass's strategies");
	L.g = g;
	L.st = r->st;
	ir_graph_mesh(g, &L.n0, &L.n1);
	L.nd = L.n0 * L.n1;
	if (!(L.p = plan_new()))
		return ir_errorf(-ENOMEM, "out of memory lowering the plan");
	struct plan *p = L.p;
	size_t len = strlen(cluster ? cluster : "");
	if (!(p->cluster = ir_malloc(len + 1)))
		goto fail;
	memcpy(p->cluster, cluster ? cluster : "", len + 1);
	p->micro = 1;
	p->nstages = 1;
	if (!(p->stages = ir_calloc(1, sizeof *p->stages)))
		goto fail;
	p->stages[0] = (struct plan_stage){ 0, L.nd, 1, L.nd, L.n0, L.n1 };
	if ((rc = add_tensors(&p->params, &p->nparams, g, ir_graph_nparams(g), ir_graph_param, false)) < 0 ||
	    (rc = add_tensors(&p->inputs, &p->ninputs, g, ir_graph_ninputs(g), ir_graph_input, false)) < 0 ||
	    (rc = add_tensors(&p->outputs, &p->noutputs, g, ir_graph_noutputs(g), ir_graph_output, true)) < 0)
		goto fail;
	rc = -ENOMEM;
	if (!(L.rep_head = ir_malloc(sizeof *L.rep_head * (size_t)(ir_graph_nvalues(g) + 1))))
		goto fail;
	memset(L.rep_head, -1, sizeof *L.rep_head * (size_t)(ir_graph_nvalues(g) + 1));
	for (int i = 0; i < ir_graph_nparams(g); i++)
		if ((rc = bind_value(&L, ir_graph_param(g, i), PLAN_BIND_PARAM, i)) < 0)
			goto fail;
	for (int i = 0; i < ir_graph_ninputs(g); i++)
		if ((rc = bind_value(&L, ir_graph_input(g, i), PLAN_BIND_INPUT, i)) < 0)
			goto fail;
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		if ((rc = lower_node(&L, ir_graph_node(g, i))) < 0)
			goto fail;
	for (int i = 0; i < ir_graph_noutputs(g); i++)
		if ((rc = bind_output(&L, i)) < 0)
			goto fail;
	if ((rc = lw_finish(&L)) < 0)
		goto fail;
	lower_release(&L);
	*out = p;
	return 0;
fail:
	if (rc == -ENOMEM && !ir_error()[0])
		ir_errorf(-ENOMEM, "out of memory lowering the plan");
	lower_release(&L);
	plan_free(p);
	return rc;
}
