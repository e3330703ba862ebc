/*
 * grad_rules_nn.c: the gradient rules that take more than a line: dot and
 * convolution (each operand's gradient is again a dot or a convolution),
 * pooling windows, layer norm, top-k, gather and the padding modes.
 */
#include <errno.h>
#include <math.h>

#include "compiler/train/grad_internal.h"

/* ---- dot --------------------------------------------------------------------
 * y dims: batch (lhs order), lhs free, rhs free. d lhs = dot(g, rhs)
 * contracting g's rhs-free dims with rhs's free dims, which leaves [batch,
 * lhs free, rhs contract dims (in rhs order)]; a transpose puts those back
 * where lhs has them. d rhs is the mirror image. */

struct dot_dims {
	struct ir_ilist batch, contract, free;
};

static void dot_dims(int rank, const struct ir_ilist *batch, const struct ir_ilist *contract, struct dot_dims *d)
{
	d->batch = *batch;
	d->contract = *contract;
	d->free.n = 0;
	for (int i = 0; i < rank; i++) {
		bool used = false;
		for (int k = 0; k < batch->n; k++)
			used = used || batch->v[k] == i;
		for (int k = 0; k < contract->n; k++)
			used = used || contract->v[k] == i;
		if (!used)
			d->free.v[d->free.n++] = i;
	}
}

/* Position of dim among the sorted members of set (its rank in it). */
static int rank_in(const struct ir_ilist *set, int64_t dim)
{
	int r = 0;
	for (int k = 0; k < set->n; k++)
		r += set->v[k] < dim;
	return r;
}

/* The gradient of one operand (self, dims s) given the other (dims od):
 * g's dims for the other's free part start at g_other. */
static struct ir_value *dot_operand(struct gb *b, struct ir_value *g, int g_other, struct ir_value *other,
				    const struct dot_dims *s, const struct dot_dims *od, const struct ir_value *self)
{
	struct ir_attrs a = { 0 };
	struct ir_ilist gb_ = { .n = s->batch.n }, gc = { .n = od->free.n }, oc = od->free;
	for (int i = 0; i < s->batch.n; i++)
		gb_.v[i] = i;
	for (int i = 0; i < od->free.n; i++)
		gc.v[i] = g_other + i;
	/* The new dot's operands: g first, so its result is [batch, g's free
	 * dims that are not contracted (= self free), other's leftover dims
	 * (= other's contract dims, in other's order)]. */
	a.lhs_batch = gb_;
	a.rhs_batch = od->batch;
	a.lhs_contract = gc;
	a.rhs_contract = oc;
	struct ir_value *in[2] = { g, other };
	struct ir_value *r = gb_op(b, IR_OP_DOT, 2, in, &a);
	/* Self dim j comes from: its batch slot, its free slot, or the other's
	 * contract dim paired with it. */
	int64_t perm[IR_MAX_RANK];
	int nb = s->batch.n, nf = s->free.n;
	for (int j = 0; j < self->shape.rank; j++) {
		for (int k = 0; k < s->batch.n; k++)
			if (s->batch.v[k] == j)
				perm[j] = k;
		for (int k = 0; k < s->free.n; k++)
			if (s->free.v[k] == j)
				perm[j] = nb + k;
		for (int k = 0; k < s->contract.n; k++)
			if (s->contract.v[k] == j)
				perm[j] = nb + nf + rank_in(&od->contract, od->contract.v[k]);
	}
	return gb_transpose(b, r, perm);
}

int grad_dot(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin)
{
	struct ir_value *l = n->in[0], *r = n->in[1];
	struct dot_dims ld, rd;
	dot_dims(l->shape.rank, &n->a.lhs_batch, &n->a.lhs_contract, &ld);
	dot_dims(r->shape.rank, &n->a.rhs_batch, &n->a.rhs_contract, &rd);
	int nb = ld.batch.n, nlf = ld.free.n;
	if (want[0])
		gin[0] = dot_operand(b, g, nb + nlf, r, &ld, &rd, l);
	if (want[1])
		gin[1] = dot_operand(b, g, nb, l, &rd, &ld, r);
	return 0;
}

/* ---- convolution -------------------------------------------------------------
 * x [N, C, S..], w [O, C/G, K..], y [N, O, o..] with stride s, pads lo/hi,
 * dilation d, groups G.
 * d x: g dilated by s, convolved (stride 1, dilation d) with w flipped in
 *      space and with in/out channels swapped per group; pads d(K-1) - lo
 *      and d(K-1) - hi + r, r the rows the stride skipped at the end.
 * d w: x as [C/G, G*N, S..] convolved (stride d, dilation s, groups G) with
 *      g as [G*O/G, N, o..]: a [C/G, O, K'..] result, K' >= K, cut to K. */

static struct ir_value *conv_input_grad(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	const struct ir_value *x = n->in[0];
	struct ir_value *w = n->in[1];
	int k = x->shape.rank - 2;
	int64_t G = n->a.groups, O = w->shape.dims[0], Cg = w->shape.dims[1];
	struct ir_ilist sp = { .n = 0 }, st = { .n = k + 2 };
	for (int i = 0; i < k; i++)
		sp.v[sp.n++] = i + 2;
	st.v[0] = st.v[1] = 1;
	for (int i = 0; i < k; i++)
		st.v[i + 2] = n->a.stride.v[i];
	struct ir_value *gd = gb_dilate(b, g, &st);

	struct ir_attrs rev = { .axes = sp };
	struct ir_value *wf = gb_op(b, IR_OP_REVERSE, 1, &w, &rev);
	struct ir_shape s5 = { .rank = k + 3 }, s_out = { .rank = k + 2 };
	s5.dims[0] = G, s5.dims[1] = O / G, s5.dims[2] = Cg;
	s_out.dims[0] = G * Cg, s_out.dims[1] = O / G;
	int64_t perm[IR_MAX_RANK] = { 0, 2, 1 };
	for (int i = 0; i < k; i++) {
		s5.dims[i + 3] = s_out.dims[i + 2] = w->shape.dims[i + 2];
		perm[i + 3] = i + 3;
	}
	wf = gb_reshape(b, gb_transpose(b, gb_reshape(b, wf, &s5), perm), &s_out);

	struct ir_attrs a = {
		.groups = G, .stride = { .n = k }, .dilation = n->a.dilation, .pad_lo = { .n = k }, .pad_hi = { .n = k }
	};
	struct ir_ilist cut_lo = { .n = k };
	for (int i = 0; i < k; i++) {
		int64_t S = x->shape.dims[i + 2], K = w->shape.dims[i + 2], s = n->a.stride.v[i];
		int64_t d = n->a.dilation.v[i], lo = n->a.pad_lo.v[i], hi = n->a.pad_hi.v[i];
		int64_t span = d * (K - 1);
		int64_t rest = (S + lo + hi - span - 1) % s;
		int64_t plo = span - lo, phi = span - hi + rest;
		a.stride.v[i] = 1;
		a.pad_lo.v[i] = plo > 0 ? plo : 0;
		a.pad_hi.v[i] = phi > 0 ? phi : 0;
		cut_lo.v[i] = plo < 0 ? -plo : 0; /* a negative pad drops rows */
	}
	struct ir_value *in[2] = { gd, wf };
	struct ir_value *r = gb_op(b, IR_OP_CONV, 2, in, &a);
	for (int i = 0; r && i < k; i++)
		r = gb_slice_dim(b, r, i + 2, cut_lo.v[i], cut_lo.v[i] + x->shape.dims[i + 2]);
	return r;
}

static struct ir_value *conv_weight_grad(struct gb *b, const struct ir_node *n, struct ir_value *g)
{
	struct ir_value *x = n->in[0];
	const struct ir_value *w = n->in[1];
	int k = x->shape.rank - 2;
	int64_t G = n->a.groups, N = x->shape.dims[0], C = x->shape.dims[1], O = w->shape.dims[0];
	int64_t Cg = C / G, Og = O / G;
	struct ir_shape xs = { .rank = k + 3 }, xm = { .rank = k + 2 };
	struct ir_shape gs = { .rank = k + 3 }, gm = { .rank = k + 2 };
	int64_t perm_x[IR_MAX_RANK] = { 2, 1, 0 }, perm_g[IR_MAX_RANK] = { 1, 2, 0 };
	xs.dims[0] = N, xs.dims[1] = G, xs.dims[2] = Cg;
	xm.dims[0] = Cg, xm.dims[1] = G * N;
	gs.dims[0] = N, gs.dims[1] = G, gs.dims[2] = Og;
	gm.dims[0] = G * Og, gm.dims[1] = N;
	for (int i = 0; i < k; i++) {
		xs.dims[i + 3] = xm.dims[i + 2] = x->shape.dims[i + 2];
		gs.dims[i + 3] = gm.dims[i + 2] = g->shape.dims[i + 2];
		perm_x[i + 3] = perm_g[i + 3] = i + 3;
	}
	/* x: [N, G, Cg, S] -> [Cg, G, N, S]; g: [N, G, Og, o] -> [G, Og, N, o]. */
	struct ir_value *xr = gb_reshape(b, gb_transpose(b, gb_reshape(b, x, &xs), perm_x), &xm);
	struct ir_value *gr = gb_reshape(b, gb_transpose(b, gb_reshape(b, g, &gs), perm_g), &gm);
	struct ir_attrs a = { .groups = G,
			      .stride = n->a.dilation,
			      .dilation = n->a.stride,
			      .pad_lo = n->a.pad_lo,
			      .pad_hi = n->a.pad_hi };
	struct ir_value *in[2] = { xr, gr };
	struct ir_value *r = gb_op(b, IR_OP_CONV, 2, in, &a); /* [Cg, O, K'..] */
	for (int i = 0; r && i < k; i++)
		r = gb_slice_dim(b, r, i + 2, 0, w->shape.dims[i + 2]);
	int64_t swap[IR_MAX_RANK] = { 1, 0 };
	for (int i = 0; i < k; i++)
		swap[i + 2] = i + 2;
	return gb_transpose(b, r, swap);
}

int grad_conv(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin)
{
	if (want[0])
		gin[0] = conv_input_grad(b, n, g);
	if (want[1])
		gin[1] = conv_weight_grad(b, n, g);
	return 0;
}

/* ---- pooling windows -------------------------------------------------------------
 * The result is the max (or sum) over window offsets o of strided slices of
 * the padded input: y = max_o slice(xp, o * dilation, stride). The gradient
 * sends g back through each offset's slice; for max only where that slice
 * holds the window's first maximum (PyTorch's choice on ties). */
int grad_window(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin)
{
	struct ir_value *x = n->in[0], *y = n->out[0];
	const struct ir_attrs *a = &n->a;
	int r = x->shape.rank;
	bool is_max = n->op == IR_OP_WINDOW_MAX;
	struct ir_value *xp = gb_pad(b, x, &a->pad_lo, &a->pad_hi, is_max ? -INFINITY : 0);
	if (!xp)
		return b->err;
	struct ir_shape full = xp->shape;
	int64_t off[IR_MAX_RANK] = { 0 }, total = 1;
	for (int i = 0; i < r; i++)
		total *= a->window.v[i];
	struct ir_value *acc = NULL, *claimed = NULL, *zero = gb_like(b, g, 0);
	for (int64_t t = 0; t < total && !b->err; t++) {
		struct ir_ilist st = { .n = r }, li = st;
		for (int i = 0; i < r; i++) {
			st.v[i] = off[i] * a->dilation.v[i];
			li.v[i] = st.v[i] + (y->shape.dims[i] - 1) * a->stride.v[i] + 1;
			if (y->shape.dims[i] == 0)
				li.v[i] = st.v[i];
		}
		struct ir_value *part = g;
		if (is_max) {
			struct ir_value *hit = gb_bin(b, IR_OP_EQ, gb_slice(b, xp, &st, &li, &a->stride), y);
			if (claimed) {
				struct ir_value *fresh = gb_bin(b, IR_OP_AND, hit, gb_un(b, IR_OP_NOT, claimed));
				claimed = gb_bin(b, IR_OP_OR, claimed, hit);
				hit = fresh;
			} else {
				claimed = hit;
			}
			part = gb_select(b, hit, g, zero);
		}
		acc = gb_accumulate(b, acc, gb_unslice(b, part, &full, &st, &a->stride));
		for (int i = r - 1; i >= 0; i--) { /* next offset, row-major */
			if (++off[i] < a->window.v[i])
				break;
			off[i] = 0;
		}
	}
	for (int i = 0; acc && i < r; i++)
		acc = gb_slice_dim(b, acc, i, a->pad_lo.v[i], a->pad_lo.v[i] + x->shape.dims[i]);
	gin[0] = acc;
	return 0;
}

/* ---- layer norm -----------------------------------------------------------------
 * xhat = (x - mean) rstd over dims axis..; y = xhat scale + bias.
 * d x = rstd (gh - mean(gh) - xhat mean(gh xhat)) with gh = g scale;
 * d scale = sum over the leading dims of g xhat; d bias = sum of g. */
int grad_layer_norm(struct gb *b, const struct ir_node *n, struct ir_value *g, const bool *want, struct ir_value **gin)
{
	struct ir_value *x = n->in[0], *scale = n->in[1];
	int r = x->shape.rank;
	int64_t axis = n->a.axis, m = 1;
	struct ir_ilist lead = { 0 }, tail = { 0 };
	for (int i = 0; i < r; i++) {
		if (i < axis) {
			lead.v[lead.n++] = i;
		} else {
			tail.v[tail.n++] = i;
			m *= x->shape.dims[i];
		}
	}
	double inv_m = m ? 1.0 / (double)m : 0;
	struct ir_value *mean = gb_scale(b, gb_rowsum(b, x, axis, r - 1), inv_m);
	struct ir_value *xc = gb_bin(b, IR_OP_SUB, x, mean);
	struct ir_value *var = gb_scale(b, gb_rowsum(b, gb_bin(b, IR_OP_MUL, xc, xc), axis, r - 1), inv_m);
	struct ir_value *rstd = gb_un(b, IR_OP_RSQRT, gb_offset(b, var, n->a.eps));
	struct ir_value *xhat = gb_bin(b, IR_OP_MUL, xc, rstd);
	if (want[0]) {
		struct ir_value *gh = gb_bin(b, IR_OP_MUL, g, gb_broadcast(b, scale, &x->shape, &tail));
		struct ir_value *mg = gb_scale(b, gb_rowsum(b, gh, axis, r - 1), inv_m);
		struct ir_value *mgx = gb_scale(b, gb_rowsum(b, gb_bin(b, IR_OP_MUL, gh, xhat), axis, r - 1), inv_m);
		struct ir_value *inner = gb_bin(b, IR_OP_SUB, gb_bin(b, IR_OP_SUB, gh, mg),
						gb_bin(b, IR_OP_MUL, xhat, mgx));
		gin[0] = gb_bin(b, IR_OP_MUL, rstd, inner);
	}
	if (want[1])
		gin[1] = gb_sum(b, gb_bin(b, IR_OP_MUL, g, xhat), &lead);
	if (want[2])
		gin[2] = gb_sum(b, g, &lead);
	return 0;
}

/* Moves dim axis of a rank-r value last (perm) or back (inverse). */
static void axis_last(int r, int64_t axis, int64_t *perm, int64_t *inv)
{
	for (int i = 0, j = 0; i < r; i++)
		if (i != axis)
			perm[j++] = i;
	perm[r - 1] = axis;
	for (int i = 0; i < r; i++)
		inv[perm[i]] = i;
}

/* ---- top-k: the values' gradient scattered back to where they came from.
 * With the axis moved last and the rest flattened to R rows, element (row,
 * j) of the values came from flat position row * D + indices[row, j]. */
int grad_topk(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin)
{
	struct ir_value *x = n->in[0], *idx = n->out[1];
	int r = x->shape.rank;
	int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK];
	axis_last(r, n->a.axis, perm, inv);
	int64_t D = x->shape.dims[n->a.axis], k = n->a.k, R = ir_shape_numel(&x->shape) / (D ? D : 1);
	struct ir_shape rk = { .rank = 2, .dims = { R, k } }, flat = { .rank = 1, .dims = { R * D } };
	struct ir_value *gi = gb_reshape(b, gb_transpose(b, g, perm), &rk);
	struct ir_value *ii = gb_reshape(b, gb_transpose(b, idx, perm), &rk);
	struct ir_attrs io = { .shape = rk, .dtype = ii ? ii->dtype : IR_I64, .axis = 0 };
	struct ir_value *row = gb_op(b, IR_OP_IOTA, 0, NULL, &io);
	struct ir_value *pos = gb_bin(b, IR_OP_ADD, ii, gb_scale(b, row, (double)D));
	struct ir_value *in[3] = { gb_full(b, x->dtype, &flat, 0), pos, gi };
	struct ir_attrs sa = { .mode = IR_SCATTER_ADD };
	struct ir_value *s = gb_op(b, IR_OP_SCATTER, 3, in, &sa);
	struct ir_shape moved = { .rank = r };
	for (int i = 0; i < r; i++)
		moved.dims[i] = x->shape.dims[perm[i]];
	gin[0] = gb_transpose(b, gb_reshape(b, s, &moved), inv);
	return 0;
}

/* ---- gather: the gradient rows added back at their indices (repeats add),
 * through a scatter-add on axis 0 with the gathered axis moved first. */
int grad_gather(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin)
{
	struct ir_value *x = n->in[0], *idx = n->in[1];
	int r = x->shape.rank, ri = idx->shape.rank;
	int64_t axis = n->a.axis;
	/* g: x[:axis] + I + x[axis+1:] -> I + x[:axis] + x[axis+1:] */
	int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK];
	int p = 0;
	for (int i = 0; i < ri; i++)
		perm[p++] = axis + i;
	for (int i = 0; i < axis; i++)
		perm[p++] = i;
	for (int i = (int)axis + ri; i < g->shape.rank; i++)
		perm[p++] = i;
	struct ir_shape zs = { .rank = r };
	zs.dims[0] = x->shape.dims[axis];
	for (int i = 0, j = 1; i < r; i++)
		if (i != axis)
			zs.dims[j++] = x->shape.dims[i];
	struct ir_value *in[3] = { gb_full(b, x->dtype, &zs, 0), idx, gb_transpose(b, g, perm) };
	struct ir_attrs sa = { .mode = IR_SCATTER_ADD };
	struct ir_value *s = gb_op(b, IR_OP_SCATTER, 3, in, &sa);
	/* [D, x[:axis], x[axis+1:]] -> x's order */
	for (int i = 0; i < r; i++)
		inv[i] = i < axis ? i + 1 : i == axis ? 0 : i;
	gin[0] = gb_transpose(b, s, inv);
	return 0;
}

/* ---- pad: constant padding just drops the border; edge and reflect also
 * fold the border's gradient back onto the elements it copied, one dim at
 * a time (padding each dim in turn gives the same result). */
static struct ir_value *unpad_dim(struct gb *b, struct ir_value *g, int d, int64_t lo, int64_t len, int64_t mode)
{
	int64_t hi = g->shape.dims[d] - lo - len;
	struct ir_value *mid = gb_slice_dim(b, g, d, lo, lo + len);
	if (mode == IR_PAD_CONSTANT || (!lo && !hi))
		return mid;
	struct ir_ilist plo = { .n = g->shape.rank }, phi = plo;
	struct ir_value *acc = mid;
	if (mode == IR_PAD_EDGE) {
		struct ir_ilist one = { .n = 1, .v = { d } };
		struct ir_shape row = mid->shape;
		row.dims[d] = 1;
		if (lo) {
			struct ir_value *s = gb_reshape(b, gb_sum(b, gb_slice_dim(b, g, d, 0, lo), &one), &row);
			phi.v[d] = len - 1;
			acc = gb_accumulate(b, acc, gb_pad(b, s, &plo, &phi, 0));
			phi.v[d] = 0;
		}
		if (hi) {
			struct ir_value *s = gb_reshape(b,
							gb_sum(b, gb_slice_dim(b, g, d, lo + len, lo + len + hi), &one),
							&row);
			plo.v[d] = len - 1;
			acc = gb_accumulate(b, acc, gb_pad(b, s, &plo, &phi, 0));
		}
		return acc;
	}
	/* reflect: border position lo - 1 - i copies element i + 1. */
	struct ir_attrs rev = { .axes = { .n = 1, .v = { d } } };
	if (lo) {
		struct ir_value *s = gb_slice_dim(b, g, d, 0, lo);
		s = gb_op(b, IR_OP_REVERSE, 1, &s, &rev); /* elements 1 .. lo */
		plo.v[d] = 1;
		phi.v[d] = len - 1 - lo;
		acc = gb_accumulate(b, acc, gb_pad(b, s, &plo, &phi, 0));
	}
	if (hi) {
		struct ir_value *s = gb_slice_dim(b, g, d, lo + len, lo + len + hi);
		s = gb_op(b, IR_OP_REVERSE, 1, &s, &rev); /* elements len-1-hi .. len-2 */
		plo.v[d] = len - 1 - hi;
		phi.v[d] = 1;
		acc = gb_accumulate(b, acc, gb_pad(b, s, &plo, &phi, 0));
	}
	return acc;
}

int grad_pad(struct gb *b, const struct ir_node *n, struct ir_value *g, struct ir_value **gin)
{
	const struct ir_value *x = n->in[0];
	for (int d = 0; g && d < x->shape.rank; d++)
		g = unpad_dim(b, g, d, n->a.pad_lo.v[d], x->shape.dims[d], n->a.mode);
	gin[0] = g;
	return 0;
}
