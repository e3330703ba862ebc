/*
 * intra_rules.c: the intra-op pass's sharding rule of every op, as dimension
 * labels (intra_internal.h): which operand and result dimensions may be
 * split together. One rule per value of the op table's shard column (ops.h),
 * for automatic plans and manual plans' tensor parallelism alike.
 *
 * Example: dot [b,m,k] x [b,k,n] -> [b,m,n] gets labels b, m, n (parallel)
 * and k (summed); splitting k on axis 1 splits both operands' k dimension
 * and leaves partial sums over axis 1 in the result (Megatron's row-parallel
 * linear layer), splitting n splits the rhs by columns (column-parallel).
 */
#include <string.h>

#include "compiler/search/intra_internal.h"

static void clear(struct intra_labels *l)
{
	memset(l, 0, sizeof *l);
	memset(l->in, -1, sizeof l->in);
	memset(l->out, -1, sizeof l->out);
}

static int add_label(struct intra_labels *l, int64_t size, enum intra_kind kind)
{
	IR_ASSERT(l->n < INTRA_MAX_LABELS);
	l->size[l->n] = size;
	l->kind[l->n] = (unsigned char)kind;
	return l->n++;
}

/* One parallel label per result dimension, the result's dims on them. */
static void result_labels(struct intra_labels *l, const struct ir_shape *s)
{
	for (int d = 0; d < s->rank; d++)
		l->out[d] = (signed char)add_label(l, s->dims[d], INTRA_PAR);
}

/* Operand j's dims run along the result's dims one to one, except those in
 * `fixed` (a dimension mask) that may never split. */
static void same_dims(struct intra_labels *l, int j, int rank, unsigned fixed)
{
	for (int d = 0; d < rank; d++)
		l->in[j][d] = fixed & (1u << d) ? -1 : l->out[d];
}

static void elementwise(const struct ir_node *n, struct intra_labels *l, unsigned fixed)
{
	result_labels(l, &n->out[0]->shape);
	for (int d = 0; d < n->out[0]->shape.rank; d++)
		if (fixed & (1u << d))
			l->out[d] = -1;
	for (int j = 0; j < n->nin && j < INTRA_MAX_IN; j++)
		same_dims(l, j, n->in[j]->shape.rank, fixed);
}

static unsigned mask_of(const struct ir_ilist *axes)
{
	unsigned m = 0;
	for (int i = 0; i < axes->n; i++)
		m |= 1u << axes->v[i];
	return m;
}

static void dot(const struct ir_node *n, struct intra_labels *l)
{
	const struct ir_attrs *a = &n->a;
	unsigned lb = mask_of(&a->lhs_batch), lc = mask_of(&a->lhs_contract);
	unsigned rb = mask_of(&a->rhs_batch), rc = mask_of(&a->rhs_contract);
	int r = 0;
	result_labels(l, &n->out[0]->shape);
	for (int i = 0; i < a->lhs_batch.n; i++, r++) {
		l->in[0][a->lhs_batch.v[i]] = (signed char)r;
		l->in[1][a->rhs_batch.v[i]] = (signed char)r;
	}
	for (int d = 0; d < n->in[0]->shape.rank; d++)
		if (!((lb | lc) & (1u << d)))
			l->in[0][d] = (signed char)r++;
	for (int d = 0; d < n->in[1]->shape.rank; d++)
		if (!((rb | rc) & (1u << d)))
			l->in[1][d] = (signed char)r++;
	for (int i = 0; i < a->lhs_contract.n; i++) {
		int k = add_label(l, n->in[0]->shape.dims[a->lhs_contract.v[i]], INTRA_SUM);
		l->in[0][a->lhs_contract.v[i]] = (signed char)k;
		l->in[1][a->rhs_contract.v[i]] = (signed char)k;
	}
}

/* input [N, C, s...], weight [O, C/g, k...] -> [N, O, o...]: batch and
 * output channels split freely, input channels (groups == 1) leave partial
 * sums, spatial dimensions stay whole (halo exchanges are not costed). */
static void conv(const struct ir_node *n, struct intra_labels *l)
{
	l->out[0] = (signed char)add_label(l, n->out[0]->shape.dims[0], INTRA_PAR);
	l->in[0][0] = l->out[0];
	if (n->a.groups == 1) {
		l->out[1] = (signed char)add_label(l, n->out[0]->shape.dims[1], INTRA_PAR);
		l->in[1][0] = l->out[1];
		int c = add_label(l, n->in[0]->shape.dims[1], INTRA_SUM);
		l->in[0][1] = l->in[1][1] = (signed char)c;
	}
}

static void reduce(const struct ir_node *n, struct intra_labels *l, enum intra_kind kind)
{
	unsigned red = mask_of(&n->a.axes);
	int r = 0;
	result_labels(l, &n->out[0]->shape);
	for (int d = 0; d < n->in[0]->shape.rank; d++) {
		if (!(red & (1u << d)))
			l->in[0][d] = l->out[r++];
		else if (kind != INTRA_PAR)
			l->in[0][d] = (signed char)add_label(l, n->in[0]->shape.dims[d], kind);
	}
}

/* Arg-reductions drop `axis`; topk keeps it whole. */
static void drop_axis(const struct ir_node *n, struct intra_labels *l)
{
	int r = 0;
	result_labels(l, &n->out[0]->shape);
	for (int d = 0; d < n->in[0]->shape.rank; d++)
		if (d != n->a.axis)
			l->in[0][d] = l->out[r++];
}

/* Reshape splits a group of leading dims in step: input dims [i0, i1) and
 * result dims [o0, o1) with equal products form a group; a split of the
 * group's first input dim into f contiguous pieces is a split of its first
 * result dim when f divides both (row-major order keeps the pieces), so
 * the group gets one label of size gcd of the two. */
static int64_t gcd(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

static void reshape(const struct ir_node *n, struct intra_labels *l)
{
	const struct ir_shape *in = &n->in[0]->shape, *out = &n->out[0]->shape;
	int i = 0, o = 0;
	while (i < in->rank && o < out->rank) {
		if (in->dims[i] == 1) {
			i++;
			continue;
		}
		if (out->dims[o] == 1) {
			o++;
			continue;
		}
		int i0 = i, o0 = o;
		int64_t pi = in->dims[i++], po = out->dims[o++];
		while (pi != po) {
			if (pi < po && i < in->rank)
				pi *= in->dims[i++];
			else if (po < pi && o < out->rank)
				po *= out->dims[o++];
			else
				return; /* no clean grouping: nothing splits */
		}
		int k = add_label(l, gcd(in->dims[i0], out->dims[o0]), INTRA_PAR);
		l->in[0][i0] = l->out[o0] = (signed char)k;
	}
}

static void broadcast(const struct ir_node *n, struct intra_labels *l)
{
	result_labels(l, &n->out[0]->shape);
	for (int d = 0; d < n->in[0]->shape.rank; d++) {
		int64_t r = n->a.axes.v[d];
		if (n->in[0]->shape.dims[d] == n->out[0]->shape.dims[r])
			l->in[0][d] = l->out[r];
	}
}

/* Dims an op leaves untouched split freely: a slice's full-range dims, a
 * pad's unpadded ones, windows of size 1. */
static unsigned slice_fixed(const struct ir_node *n)
{
	unsigned m = 0;
	for (int d = 0; d < n->in[0]->shape.rank; d++)
		if (n->a.start.v[d] || n->a.limit.v[d] != n->in[0]->shape.dims[d] || n->a.stride.v[d] != 1)
			m |= 1u << d;
	return m;
}

static unsigned pad_fixed(const struct ir_node *n)
{
	unsigned m = 0;
	for (int d = 0; d < n->in[0]->shape.rank; d++)
		if (n->a.pad_lo.v[d] || n->a.pad_hi.v[d])
			m |= 1u << d;
	return m;
}

static unsigned window_fixed(const struct ir_node *n)
{
	unsigned m = pad_fixed(n);
	for (int d = 0; d < n->in[0]->shape.rank; d++)
		if (n->a.window.v[d] != 1 || n->a.stride.v[d] != 1)
			m |= 1u << d;
	return m;
}

/* data[:axis] + indices + data[axis+1:]. The gathered axis of the table is
 * a summed label: a device holding rows [a, b) looks up the indices that
 * fall there and contributes zeros elsewhere, so the result is a partial
 * sum (Megatron's vocabulary-parallel embedding). */
static void gather(const struct ir_node *n, struct intra_labels *l)
{
	int ax = (int)n->a.axis, ir = n->in[1]->shape.rank;
	result_labels(l, &n->out[0]->shape);
	for (int d = 0; d < n->in[0]->shape.rank; d++)
		if (d < ax)
			l->in[0][d] = l->out[d];
		else if (d > ax)
			l->in[0][d] = l->out[d - 1 + ir];
	l->in[0][ax] = (signed char)add_label(l, n->in[0]->shape.dims[ax], INTRA_SUM);
	for (int k = 0; k < ir; k++)
		l->in[1][k] = l->out[ax + k];
}

/* data [N, r...], indices I, updates I + [r...]: the row dims r split. */
static void scatter(const struct ir_node *n, struct intra_labels *l)
{
	int ir = n->in[1]->shape.rank;
	result_labels(l, &n->out[0]->shape);
	l->out[0] = -1;
	for (int d = 1; d < n->in[0]->shape.rank; d++) {
		l->in[0][d] = l->out[d];
		l->in[2][ir + d - 1] = l->out[d];
	}
}

void intra_labels_value(const struct ir_value *v, struct intra_labels *l)
{
	clear(l);
	result_labels(l, &v->shape);
}

/* ---- the rule of each op (the shard column of ops.h) ------------------- */

#define RULE(name) static void rule_##name(const struct ir_node *n, struct intra_labels *l)

RULE(elem)
{
	elementwise(n, l, 0);
}

RULE(dot)
{
	dot(n, l);
}

RULE(conv)
{
	conv(n, l);
}

RULE(reduce_sum)
{
	reduce(n, l, INTRA_SUM);
}

RULE(reduce_max)
{
	reduce(n, l, INTRA_MAX);
}

RULE(reduce_prod)
{
	reduce(n, l, INTRA_PAR); /* reduced dims stay whole */
}

RULE(arg)
{
	drop_axis(n, l);
}

RULE(window)
{
	elementwise(n, l, window_fixed(n));
}

RULE(scan) /* along attrs.axis, which stays whole */
{
	elementwise(n, l, 1u << n->a.axis);
}

RULE(softmax)
{
	elementwise(n, l, 1u << n->a.axis);
}

RULE(layer_norm)
{
	unsigned fixed = ~0u << n->a.axis;
	result_labels(l, &n->out[0]->shape);
	for (int d = (int)n->a.axis; d < n->out[0]->shape.rank; d++)
		l->out[d] = -1;
	same_dims(l, 0, n->in[0]->shape.rank, fixed); /* scale and bias stay whole */
}

RULE(reshape)
{
	reshape(n, l);
}

RULE(transpose)
{
	result_labels(l, &n->out[0]->shape);
	for (int d = 0; d < n->out[0]->shape.rank; d++)
		l->in[0][n->a.axes.v[d]] = l->out[d];
}

RULE(broadcast)
{
	broadcast(n, l);
}

RULE(slice)
{
	elementwise(n, l, slice_fixed(n));
}

RULE(concat)
{
	elementwise(n, l, 1u << n->a.axis);
}

RULE(pad)
{
	elementwise(n, l, pad_fixed(n));
}

RULE(reverse)
{
	elementwise(n, l, mask_of(&n->a.axes));
}

RULE(gather)
{
	gather(n, l);
}

RULE(scatter)
{
	scatter(n, l);
}

RULE(source) /* replicated: every device makes its own copy */
{
}

#undef RULE

static void (*const rules[IR_OP_COUNT])(const struct ir_node *n, struct intra_labels *l) = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = rule_##shard,
	IR_OPS(X)
#undef X
};

void intra_labels_of(const struct ir_node *n, struct intra_labels *l)
{
	IR_ASSERT((unsigned)n->op < IR_OP_COUNT);
	clear(l);
	rules[n->op](n, l);
}
