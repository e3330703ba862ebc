/*
 * onnx_ops_nn.c: ONNX contractions, convolution, pooling, normalization,
 * softmax, losses and top-k -> core ops.
 *
 * MatMul, Gemm and Einsum all become one general dot (batch, contracting
 * and free dims) plus transposes, reshapes and broadcasts. Normalizations
 * in inference form are elementwise arithmetic over broadcast statistics;
 * in training form their statistics are reductions over the batch.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/frontend/onnx_internal.h"

static struct ir_value *dot(struct onnx_ctx *c, struct ir_value *l, struct ir_value *r, const struct ir_attrs *a)
{
	struct ir_value *ops[2] = { l, r };
	return l && r ? b_op(c, IR_OP_DOT, 2, ops, a) : NULL;
}

/* numpy.matmul: 1-D operands gain then lose a dim; batch dims broadcast. */
int onnx_matmul(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *l = in[0], *r = in[1];
	int lr = l->shape.rank, rr = r->shape.rank;
	if (lr == 0 || rr == 0)
		return onnx_fail(c, "operands must have rank >= 1");
	if (l->dtype != r->dtype)
		return onnx_fail(c, "operand types %s and %s differ", ir_dtype_name(l->dtype), ir_dtype_name(r->dtype));
	struct ir_attrs a = { .lhs_contract = { 1, { lr - 1 } }, .rhs_contract = { 1, { rr >= 2 ? rr - 2 : 0 } } };
	if (rr <= 2) {
		/* weights: lhs leading dims are all free dims, no batch */
		return OUT1(dot(c, l, r, &a));
	}
	if (lr == 1) {
		/* [k] x [..., k, n]: contract, result [..., n] already ordered */
		return OUT1(dot(c, l, r, &a));
	}
	/* both batched: broadcast batch dims to a common shape */
	int nb = (lr > rr ? lr : rr) - 2;
	struct ir_shape ls = { nb + 2, { 0 } }, rs = { nb + 2, { 0 } };
	for (int i = 0; i < nb; i++) {
		int li = i - (nb - (lr - 2)), ri = i - (nb - (rr - 2));
		int64_t dl = li >= 0 ? l->shape.dims[li] : 1, dr = ri >= 0 ? r->shape.dims[ri] : 1;
		if (dl != dr && dl != 1 && dr != 1)
			return onnx_fail(c, "batch dims of %s and %s do not broadcast (%lld against %lld)",
					 ir_shape_str(&l->shape, (char[IR_SHAPE_STR_MAX]){ 0 }, IR_SHAPE_STR_MAX),
					 ir_shape_str(&r->shape, (char[IR_SHAPE_STR_MAX]){ 0 }, IR_SHAPE_STR_MAX),
					 (long long)dl, (long long)dr);
		ls.dims[i] = rs.dims[i] = dl == 1 ? dr : dl;
	}
	ls.dims[nb] = l->shape.dims[lr - 2];
	ls.dims[nb + 1] = l->shape.dims[lr - 1];
	rs.dims[nb] = r->shape.dims[rr - 2];
	rs.dims[nb + 1] = r->shape.dims[rr - 1];
	l = b_broadcast_to(c, l, &ls);
	r = b_broadcast_to(c, r, &rs);
	a = (struct ir_attrs){ .lhs_contract = { 1, { nb + 1 } }, .rhs_contract = { 1, { nb } } };
	a.lhs_batch.n = a.rhs_batch.n = nb;
	for (int i = 0; i < nb; i++)
		a.lhs_batch.v[i] = a.rhs_batch.v[i] = i;
	return OUT1(dot(c, l, r, &a));
}

int onnx_gemm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *l = in[0], *r = in[1];
	if (l->shape.rank != 2 || r->shape.rank != 2)
		return onnx_fail(c, "A and B must be matrices");
	double alpha = attr_float(c, "alpha", 1.0), beta = attr_float(c, "beta", 1.0);
	struct ir_attrs a = { .lhs_contract = { 1, { attr_int(c, "transA", 0) ? 0 : 1 } },
			      .rhs_contract = { 1, { attr_int(c, "transB", 0) ? 1 : 0 } } };
	struct ir_value *y = dot(c, l, r, &a);
	if (y && alpha != 1.0)
		y = b_binary(c, IR_OP_MUL, y, b_scalar(c, y->dtype, alpha));
	if (y && nin > 2 && in[2] && beta != 0.0) {
		struct ir_value *bias = in[2];
		if (beta != 1.0)
			bias = b_binary(c, IR_OP_MUL, bias, b_scalar(c, bias->dtype, beta));
		y = b_binary(c, IR_OP_ADD, y, b_broadcast_to(c, bias, &y->shape));
	}
	return OUT1(y);
}

/* ---- einsum ---------------------------------------------------------------- */

#define EIN_MAX 8
struct ein_term {
	char lab[IR_MAX_RANK + 1]; /* one label per dim */
	struct ir_value *v;
};

/* Parses one operand's labels; '...' expands to digits '0'..'7' aligned right. */
static int ein_labels(struct onnx_ctx *c, const char *s, size_t n, int rank, int ell_rank, char *out)
{
	int k = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ' ')
			continue;
		if (s[i] == '.') {
			if (i + 2 >= n + 0 || s[i + 1] != '.' || s[i + 2] != '.')
				return onnx_fail(c, "malformed ellipsis in the equation");
			int fixed = 0;
			for (size_t j = 0; j < n; j++)
				fixed += (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z');
			int ne = rank >= 0 ? rank - fixed : ell_rank;
			if (ne < 0 || k + ne > IR_MAX_RANK)
				return onnx_fail(c, "ellipsis does not fit the operand rank");
			for (int j = 0; j < ne; j++)
				out[k++] = (char)('0' + (ell_rank - ne) + j);
			i += 2;
		} else if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) {
			if (k >= IR_MAX_RANK)
				return onnx_fail(c, "too many labels");
			out[k++] = s[i];
		} else {
			return onnx_fail(c, "bad character '%c' in the equation", s[i]);
		}
	}
	out[k] = 0;
	return k;
}

/* Sums away the labels of t that are not in keep; rejects repeated labels. */
static int ein_reduce(struct onnx_ctx *c, struct ein_term *t, const char *keep)
{
	int64_t axes[IR_MAX_RANK];
	int n = 0, k = 0;
	char lab[IR_MAX_RANK + 1];
	for (int i = 0; t->lab[i]; i++) {
		if (strchr(t->lab + i + 1, t->lab[i]))
			return onnx_unsupported(c, "repeated label '%c' (diagonals) is not supported", t->lab[i]);
		if (!strchr(keep, t->lab[i]))
			axes[n++] = i;
		else
			lab[k++] = t->lab[i];
	}
	lab[k] = 0;
	if (n) {
		t->v = b_reduce(c, IR_OP_REDUCE_SUM, t->v, axes, n, false);
		memcpy(t->lab, lab, (size_t)k + 1);
	}
	return t->v ? 0 : -EINVAL;
}

/* Contracts two terms; the result keeps labels in `keep`. */
static int ein_pair(struct onnx_ctx *c, struct ein_term *l, const struct ein_term *r, const char *keep)
{
	struct ir_attrs a = { 0 };
	char lab[IR_MAX_RANK + 1];
	int k = 0;
	for (int i = 0; l->lab[i]; i++) {
		const char *p = strchr(r->lab, l->lab[i]);
		if (!p)
			continue;
		int j = (int)(p - r->lab);
		if (l->v->shape.dims[i] != r->v->shape.dims[j])
			return onnx_fail(c, "label '%c' has sizes %lld and %lld", l->lab[i],
					 (long long)l->v->shape.dims[i], (long long)r->v->shape.dims[j]);
		struct ir_ilist *lb = strchr(keep, l->lab[i]) ? &a.lhs_batch : &a.lhs_contract;
		struct ir_ilist *rb = strchr(keep, l->lab[i]) ? &a.rhs_batch : &a.rhs_contract;
		lb->v[lb->n++] = i;
		rb->v[rb->n++] = j;
	}
	for (int i = 0; i < a.lhs_batch.n; i++)
		lab[k++] = l->lab[a.lhs_batch.v[i]];
	for (int i = 0; l->lab[i]; i++)
		if (!strchr(r->lab, l->lab[i]))
			lab[k++] = l->lab[i];
	for (int i = 0; r->lab[i]; i++)
		if (!strchr(l->lab, r->lab[i]))
			lab[k++] = r->lab[i];
	if (k > IR_MAX_RANK)
		return onnx_fail(c, "intermediate rank exceeds %d", IR_MAX_RANK);
	lab[k] = 0;
	l->v = dot(c, l->v, r->v, &a);
	memcpy(l->lab, lab, (size_t)k + 1);
	return l->v ? 0 : -EINVAL;
}

static int h_einsum(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	char eq[256], outlab[IR_MAX_RANK + 1];
	struct ein_term t[EIN_MAX];
	if (nin < 1 || nin > EIN_MAX)
		return onnx_fail(c, "%d operands (1..%d supported)", nin, EIN_MAX);
	if (!attr_string(c, "equation", NULL, eq, sizeof eq))
		return onnx_fail(c, "attribute 'equation' is required");
	char *arrow = strstr(eq, "->");
	const char *p = eq;
	int ell = 0;
	/* pass 1: the widest ellipsis over operands */
	for (int i = 0; i < nin; i++) {
		NEED(i);
		const char *e = strchr(p, ',');
		size_t n = (size_t)((e && (!arrow || e < arrow) ? e : arrow ? arrow : p + strlen(p)) - p);
		int fixed = 0;
		for (size_t j = 0; j < n; j++)
			fixed += (p[j] >= 'a' && p[j] <= 'z') || (p[j] >= 'A' && p[j] <= 'Z');
		if (memchr(p, '.', n) && in[i]->shape.rank - fixed > ell)
			ell = in[i]->shape.rank - fixed;
		p += n + (e && (!arrow || e < arrow) ? 1 : 0);
	}
	p = eq;
	for (int i = 0; i < nin; i++) {
		const char *e = strchr(p, ',');
		bool comma = e && (!arrow || e < arrow);
		size_t n = (size_t)((comma ? e : arrow ? arrow : p + strlen(p)) - p);
		int k = ein_labels(c, p, n, in[i]->shape.rank, ell, t[i].lab);
		if (k < 0)
			return -EINVAL;
		if (k != in[i]->shape.rank)
			return onnx_fail(c, "operand %d has %d labels for rank %d", i, k, in[i]->shape.rank);
		t[i].v = in[i];
		p += n + (comma ? 1 : 0);
		if (i + 1 < nin && !comma)
			return onnx_fail(c, "the equation names fewer operands than given");
	}
	if (arrow) {
		if (ein_labels(c, arrow + 2, strlen(arrow + 2), -1, ell, outlab) < 0)
			return -EINVAL;
	} else {
		/* implicit output: ellipsis dims, then labels seen once, sorted */
		int k = 0;
		for (int j = 0; j < ell; j++)
			outlab[k++] = (char)('0' + j);
		for (int ch = 'A'; ch <= 'z'; ch++) {
			int seen = 0;
			for (int i = 0; i < nin; i++)
				for (int j = 0; t[i].lab[j]; j++)
					seen += t[i].lab[j] == ch;
			if (seen == 1 && ch > '9' && k < IR_MAX_RANK)
				outlab[k++] = (char)ch;
		}
		outlab[k] = 0;
	}
	/* left fold: each step keeps labels of the output and of later operands */
	for (int i = 0; i < nin; i++) {
		char keep[IR_MAX_RANK * EIN_MAX + 2];
		strcpy(keep, outlab);
		for (int j = i + 1; j < nin; j++)
			strcat(keep, t[j].lab);
		if (i == 0) {
			/* labels only in operand 0 and not kept are summed away */
			char keep0[sizeof keep + IR_MAX_RANK + 1];
			strcpy(keep0, keep);
			if (ein_reduce(c, &t[0], keep0) < 0)
				return -EINVAL;
			continue;
		}
		char keep_i[sizeof keep + IR_MAX_RANK + 1];
		strcpy(keep_i, keep);
		strcat(keep_i, t[0].lab);
		if (ein_reduce(c, &t[i], keep_i) < 0 || ein_pair(c, &t[0], &t[i], keep) < 0)
			return -EINVAL;
	}
	int64_t perm[IR_MAX_RANK];
	int k = (int)strlen(outlab);
	if (k != (int)strlen(t[0].lab))
		return onnx_fail(c, "output labels '%s' not all found among the operands", outlab);
	for (int i = 0; i < k; i++) {
		const char *q = strchr(t[0].lab, outlab[i]);
		if (!q)
			return onnx_fail(c, "output label '%c' not found among the operands", outlab[i]);
		perm[i] = q - t[0].lab;
	}
	return OUT1(b_transpose(c, t[0].v, perm));
}

/* ---- convolution and pooling ------------------------------------------------------ */

/* Spatial window parameters from ONNX attributes (kernel dims known). */
struct window {
	int k;
	int64_t kernel[IR_MAX_RANK], stride[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK], dil[IR_MAX_RANK];
};

static int window_attrs(struct onnx_ctx *c, const struct ir_shape *x, struct window *w, bool ceil_mode)
{
	char buf[32];
	int64_t pads[2 * IR_MAX_RANK];
	int k = w->k, n;
	for (int i = 0; i < k; i++)
		w->stride[i] = w->dil[i] = 1, w->lo[i] = w->hi[i] = 0;
	if ((n = attr_ints(c, "strides", w->stride, IR_MAX_RANK)) < 0 || (n && n != k))
		return onnx_fail(c, "strides must have %d entries", k);
	if ((n = attr_ints(c, "dilations", w->dil, IR_MAX_RANK)) < 0 || (n && n != k))
		return onnx_fail(c, "dilations must have %d entries", k);
	if ((n = attr_ints(c, "pads", pads, 2 * IR_MAX_RANK)) < 0 || (n && n != 2 * k))
		return onnx_fail(c, "pads must have %d entries", 2 * k);
	for (int i = 0; n && i < k; i++)
		w->lo[i] = pads[i], w->hi[i] = pads[i + k];
	for (int i = 0; i < k; i++)
		if (w->stride[i] < 1 || w->dil[i] < 1 || w->lo[i] < 0 || w->hi[i] < 0 || w->kernel[i] < 1)
			return onnx_fail(c, "strides, dilations and kernel must be positive and pads non-negative");
	const char *ap = attr_string(c, "auto_pad", "NOTSET", buf, sizeof buf);
	if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
		for (int i = 0; i < k; i++) {
			int64_t in = x->dims[i + 2], o = (in + w->stride[i] - 1) / w->stride[i];
			int64_t total = (o - 1) * w->stride[i] + (w->kernel[i] - 1) * w->dil[i] + 1 - in;
			if (total < 0)
				total = 0;
			w->lo[i] = ap[5] == 'U' ? total / 2 : total - total / 2;
			w->hi[i] = total - w->lo[i];
		}
	} else if (!strcmp(ap, "VALID")) {
		for (int i = 0; i < k; i++)
			w->lo[i] = w->hi[i] = 0;
	} else if (strcmp(ap, "NOTSET") != 0) {
		return onnx_fail(c, "unknown auto_pad '%s'", ap);
	}
	if (ceil_mode) {
		/* extra right padding so the last partial window is kept, unless
		 * that window would start in the padding */
		for (int i = 0; i < k; i++) {
			int64_t in = x->dims[i + 2], span = (w->kernel[i] - 1) * w->dil[i] + 1;
			int64_t room = in + w->lo[i] + w->hi[i] - span;
			if (room < 0)
				continue;
			int64_t o = (room + w->stride[i] - 1) / w->stride[i] + 1;
			if ((o - 1) * w->stride[i] >= in + w->lo[i])
				o--;
			int64_t need = (o - 1) * w->stride[i] + span - (in + w->lo[i] + w->hi[i]);
			if (need > 0)
				w->hi[i] += need;
		}
	}
	return 0;
}

static int h_conv(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *x = in[0], *wv = in[1];
	struct window w = { .k = x->shape.rank - 2 };
	if (w.k < 1 || wv->shape.rank != x->shape.rank)
		return onnx_fail(c, "input and weight need equal rank >= 3");
	int64_t ks[IR_MAX_RANK];
	int n = attr_ints(c, "kernel_shape", ks, IR_MAX_RANK);
	for (int i = 0; i < w.k; i++) {
		w.kernel[i] = wv->shape.dims[i + 2];
		if (n > 0 && (n != w.k || ks[i] != w.kernel[i]))
			return onnx_fail(c, "kernel_shape disagrees with the weight");
	}
	if (window_attrs(c, &x->shape, &w, false) < 0)
		return -EINVAL;
	struct ir_attrs a = { .groups = attr_int(c, "group", 1) };
	a.stride.n = a.pad_lo.n = a.pad_hi.n = a.dilation.n = w.k;
	for (int i = 0; i < w.k; i++) {
		a.stride.v[i] = w.stride[i];
		a.pad_lo.v[i] = w.lo[i];
		a.pad_hi.v[i] = w.hi[i];
		a.dilation.v[i] = w.dil[i];
	}
	struct ir_value *ops[2] = { x, wv };
	struct ir_value *y = b_op(c, IR_OP_CONV, 2, ops, &a);
	if (y && nin > 2 && in[2]) {
		struct ir_shape bs = { y->shape.rank, { 1, y->shape.dims[1] } };
		for (int i = 2; i < bs.rank; i++)
			bs.dims[i] = 1;
		y = b_binary(c, IR_OP_ADD, y, b_reshape(c, in[2], &bs));
	}
	return OUT1(y);
}

static int h_pool(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	bool max = strcmp(c->node->op_type, "MaxPool") == 0;
	struct window w = { .k = x->shape.rank - 2 };
	if (w.k < 1)
		return onnx_fail(c, "input needs rank >= 3");
	if (attr_ints(c, "kernel_shape", w.kernel, IR_MAX_RANK) != w.k)
		return onnx_fail(c, "kernel_shape must have %d entries", w.k);
	if (max && nout > 1)
		return onnx_unsupported(c, "the Indices output is not supported");
	if (max && attr_int(c, "storage_order", 0))
		return onnx_unsupported(c, "storage_order=1 is not supported");
	if (!max && attr_since(c, "dilations", 19) < 0)
		return -ENOTSUP;
	if (window_attrs(c, &x->shape, &w, attr_int(c, "ceil_mode", 0)) < 0)
		return -EINVAL;
	int r = x->shape.rank;
	struct ir_attrs a = { 0 };
	a.window.n = a.stride.n = a.pad_lo.n = a.pad_hi.n = a.dilation.n = r;
	for (int i = 0; i < r; i++) {
		bool sp = i >= 2;
		a.window.v[i] = sp ? w.kernel[i - 2] : 1;
		a.stride.v[i] = sp ? w.stride[i - 2] : 1;
		a.pad_lo.v[i] = sp ? w.lo[i - 2] : 0;
		a.pad_hi.v[i] = sp ? w.hi[i - 2] : 0;
		a.dilation.v[i] = sp ? w.dil[i - 2] : 1;
	}
	if (max)
		return OUT1(b_op(c, IR_OP_WINDOW_MAX, 1, &x, &a));
	struct ir_value *sum = b_op(c, IR_OP_WINDOW_SUM, 1, &x, &a);
	/* divisor: window sum over ones, padding counted only when asked
	 * (explicit pads count; ceil-mode extra padding never does) */
	struct ir_value *ones = b_broadcast_to(c, b_scalar(c, x->dtype, 1), &x->shape);
	struct ir_attrs ca = a;
	if (attr_int(c, "count_include_pad", 0)) {
		int64_t pads[2 * IR_MAX_RANK];
		int n = attr_ints(c, "pads", pads, 2 * IR_MAX_RANK);
		struct ir_attrs pa = { .pad_lo.n = r, .pad_hi.n = r, .mode = IR_PAD_CONSTANT, .value = 1 };
		for (int i = 2; i < r; i++) {
			pa.pad_lo.v[i] = w.lo[i - 2];
			pa.pad_hi.v[i] = n ? pads[i - 2 + w.k] : w.hi[i - 2];
			if (pa.pad_hi.v[i] > w.hi[i - 2])
				pa.pad_hi.v[i] = w.hi[i - 2];
			ca.pad_lo.v[i] = 0;
			ca.pad_hi.v[i] = w.hi[i - 2] - pa.pad_hi.v[i];
		}
		ones = b_op(c, IR_OP_PAD, 1, &ones, &pa);
	}
	struct ir_value *count = ones ? b_op(c, IR_OP_WINDOW_SUM, 1, &ones, &ca) : NULL;
	return OUT1(b_binary(c, IR_OP_DIV, sum, count));
}

static int h_global_pool(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	int64_t axes[IR_MAX_RANK];
	double count = 1;
	if (x->shape.rank < 3)
		return onnx_fail(c, "input needs rank >= 3");
	for (int i = 2; i < x->shape.rank; i++) {
		axes[i - 2] = i;
		count *= (double)x->shape.dims[i];
	}
	if (strcmp(c->node->op_type, "GlobalMaxPool") == 0)
		return OUT1(b_reduce(c, IR_OP_REDUCE_MAX, x, axes, x->shape.rank - 2, true));
	struct ir_value *s = b_reduce(c, IR_OP_REDUCE_SUM, x, axes, x->shape.rank - 2, true);
	return OUT1(b_binary(c, IR_OP_DIV, s, b_scalar(c, x->dtype, count)));
}

/* ---- normalization ------------------------------------------------------------ */

/* [C] -> [1, C, 1, ...] for broadcasting against NC... tensors */
static struct ir_value *per_channel(struct onnx_ctx *c, struct ir_value *v, int rank)
{
	struct ir_shape s = { rank, { 1, v->shape.rank ? v->shape.dims[0] : 1 } };
	for (int i = 2; i < rank; i++)
		s.dims[i] = 1;
	return b_reshape(c, v, &s);
}

static int h_batchnorm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	for (int i = 0; i < 5; i++)
		NEED(i);
	struct ir_value *x = in[0];
	int r = x->shape.rank;
	if (r < 2)
		return onnx_fail(c, "input needs rank >= 2");
	double eps = attr_float(c, "epsilon", 1e-5), mom = attr_float(c, "momentum", 0.9);
	if (attr_int(c, "spatial", 1) != 1)
		return onnx_unsupported(c, "spatial=0 is not supported");
	/* BatchNormalization-9 (opset < 14) trains when it has several outputs */
	bool train = c->opset >= 14 ? attr_int(c, "training_mode", 0) != 0 : nout > 1;
	struct ir_value *mean = per_channel(c, in[3], r), *var = per_channel(c, in[4], r);
	struct ir_value *bmean = NULL, *bvar = NULL;
	if (train) {
		int64_t axes[IR_MAX_RANK];
		int n = 0;
		double count = 1;
		for (int i = 0; i < r; i++)
			if (i != 1)
				axes[n++] = i, count *= (double)x->shape.dims[i];
		bmean = b_binary(c, IR_OP_DIV, b_reduce(c, IR_OP_REDUCE_SUM, x, axes, n, true),
				 b_scalar(c, x->dtype, count));
		struct ir_value *d = b_binary(c, IR_OP_SUB, x, bmean);
		bvar = b_binary(c, IR_OP_DIV,
				b_reduce(c, IR_OP_REDUCE_SUM, b_binary(c, IR_OP_MUL, d, d), axes, n, true),
				b_scalar(c, x->dtype, count));
		mean = bmean;
		var = bvar;
	}
	struct ir_value *inv = b_unary(c, IR_OP_RSQRT, b_binary(c, IR_OP_ADD, var, b_scalar(c, x->dtype, eps)));
	struct ir_value *y = b_binary(c, IR_OP_MUL, b_binary(c, IR_OP_SUB, x, mean),
				      b_binary(c, IR_OP_MUL, inv, per_channel(c, in[1], r)));
	y = b_binary(c, IR_OP_ADD, y, per_channel(c, in[2], r));
	if (!y)
		return -EINVAL;
	out[0] = y;
	/* The running statistics are model state, not parameters. */
	for (int i = 3; i < 5; i++)
		if (in[i]->kind == IR_VAL_PARAM)
			in[i]->buffer = true;
	if (!train)
		return 0;
	/* ONNX's running statistics: input * momentum + batch * (1 - momentum),
	 * with the batch's population variance (PyTorch's uses n / (n - 1)). */
	struct ir_shape cs = in[3]->shape;
	struct ir_value *m1 = b_scalar(c, x->dtype, mom), *m0 = b_scalar(c, x->dtype, 1 - mom);
	struct ir_value *bm = b_reshape(c, bmean, &cs), *bv = b_reshape(c, bvar, &cs);
	struct ir_value *run[2] = {
		b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MUL, in[3], m1), b_binary(c, IR_OP_MUL, bm, m0)),
		b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MUL, in[4], m1), b_binary(c, IR_OP_MUL, bv, m0)),
	};
	struct ir_value *res[5] = { y, run[0], run[1], bm, bv };
	for (int i = 1; i < nout && i < 5; i++)
		if (!(out[i] = res[i]))
			return -EINVAL;
	/* Training keeps them: the initializers take the new values. */
	for (int i = 0; c->opts->updates && i < 2; i++)
		if (!run[i] || (in[3 + i]->kind == IR_VAL_PARAM && in[3 + i]->dtype == run[i]->dtype &&
				ir_graph_add_update(c->g, in[3 + i], run[i]) < 0))
			return onnx_fail(c, "%s", ir_error());
	return 0;
}

/* The stash type of LayerNormalization-17 and GroupNormalization-21
 * (float by default): the precision of the statistics. -EINVAL unless a
 * floating-point type. */
static int stash_type(struct onnx_ctx *c, enum ir_dtype *t)
{
	const Onnx__AttributeProto *a = attr_find(c, "stash_type");
	if (!a || !a->has_i) {
		*t = IR_F32;
		return 0;
	}
	if (onnx_dtype_to_ir((int32_t)a->i, t) < 0 || !ir_dtype_is_float(*t))
		return onnx_fail(c, "stash_type %lld is not a floating-point type", (long long)a->i);
	return 0;
}

int onnx_layernorm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *x = in[0];
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", -1), x->shape.rank, &axis) < 0)
		return -EINVAL;
	double eps = attr_float(c, "epsilon", 1e-5);
	struct ir_shape ns = { x->shape.rank - (int)axis, { 0 } };
	for (int i = 0; i < ns.rank; i++)
		ns.dims[i] = x->shape.dims[axis + i];
	struct ir_value *scale = b_broadcast_to(c, in[1], &ns);
	struct ir_value *bias = nin > 2 && in[2] ? b_broadcast_to(c, in[2], &ns)
						 : b_broadcast_to(c, b_scalar(c, x->dtype, 0), &ns);
	struct ir_attrs a = { .axis = axis, .eps = eps };
	struct ir_value *ops[3] = { x, scale, bias };
	if (!scale || !bias)
		return -EINVAL;
	/* Y: the core op normalizes in at least f32 whatever x's type, and
	 * rounds once, where ONNX rounds the normalized x to x's type before
	 * the scale and bias: within a rounding of x's type of it */
	out[0] = b_op(c, IR_OP_LAYER_NORM, 3, ops, &a);
	enum ir_dtype st;
	if (nout > 1 && stash_type(c, &st) < 0)
		return -EINVAL;
	if (nout > 1) {
		/* Mean and InvStdDev outputs, kept dims, in the stash type */
		int64_t axes[IR_MAX_RANK];
		int n = 0;
		double count = 1;
		for (int i = (int)axis; i < x->shape.rank; i++)
			axes[n++] = i, count *= (double)x->shape.dims[i];
		struct ir_value *xu = b_convert(c, x, st);
		struct ir_value *m = b_binary(c, IR_OP_DIV, b_reduce(c, IR_OP_REDUCE_SUM, xu, axes, n, true),
					      b_scalar(c, st, count));
		struct ir_value *d = b_binary(c, IR_OP_SUB, xu, m);
		struct ir_value *v = b_binary(c, IR_OP_DIV,
					      b_reduce(c, IR_OP_REDUCE_SUM, b_binary(c, IR_OP_MUL, d, d), axes, n,
						       true),
					      b_scalar(c, st, count));
		out[1] = m;
		if (nout > 2)
			out[2] = b_unary(c, IR_OP_RSQRT, b_binary(c, IR_OP_ADD, v, b_scalar(c, st, eps)));
	}
	return out[0] ? 0 : -EINVAL;
}

/* GroupNormalization: x [N, C, ...] as [N, G, C/G * spatial], each group
 * normalized over its last dim in the stash type (opset 21; opset 18 in
 * x's type), back to x's shape and type, then scale and bias per channel
 * (opset 21: [C]) or per group (opset 18: [G], repeated over the group's
 * C/G channels). */
static int h_groupnorm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	struct ir_value *x = in[0], *scale = in[1], *bias = in[2];
	const struct ir_shape *xs = &x->shape;
	int64_t g = attr_int(c, "num_groups", 0), ch = xs->rank >= 2 ? xs->dims[1] : 0;
	enum ir_dtype st = x->dtype;
	if (attr_since(c, "stash_type", 21) < 0 || (c->opset >= 21 && stash_type(c, &st) < 0))
		return -EINVAL;
	if (xs->rank < 3)
		return onnx_fail(c, "input needs rank >= 3, got %d", xs->rank);
	if (g < 1 || ch % g != 0)
		return onnx_fail(c, "num_groups %lld must divide the %lld channels", (long long)g, (long long)ch);
	int64_t per = c->opset >= 21 ? ch : g;
	if (ir_shape_numel(&scale->shape) != per || ir_shape_numel(&bias->shape) != per)
		return onnx_fail(c, "scale and bias need %lld elements (one per %s at opset %lld)", (long long)per,
				 c->opset >= 21 ? "channel" : "group", (long long)c->opset);
	if (!ir_dtype_is_float(x->dtype))
		return onnx_fail(c, "needs a floating-point input, got %s", ir_dtype_name(x->dtype));
	struct ir_shape s3 = { 3, { xs->dims[0], g, ir_shape_numel(xs) / (xs->dims[0] ? xs->dims[0] * g : 1) } };
	int64_t axis = 2;
	double count = (double)s3.dims[2];
	struct ir_value *x3 = b_reshape(c, b_convert(c, x, st), &s3);
	struct ir_value *m = b_binary(c, IR_OP_DIV, b_reduce(c, IR_OP_REDUCE_SUM, x3, &axis, 1, true),
				      b_scalar(c, st, count));
	struct ir_value *d = b_binary(c, IR_OP_SUB, x3, m);
	struct ir_value *v = b_binary(c, IR_OP_DIV,
				      b_reduce(c, IR_OP_REDUCE_SUM, b_binary(c, IR_OP_MUL, d, d), &axis, 1, true),
				      b_scalar(c, st, count));
	struct ir_value *inv = b_unary(c, IR_OP_RSQRT,
				       b_binary(c, IR_OP_ADD, v, b_scalar(c, st, attr_float(c, "epsilon", 1e-5))));
	struct ir_value *y = b_convert(c, b_reshape(c, b_binary(c, IR_OP_MUL, d, inv), xs), x->dtype);
	if (per != ch) { /* [G] -> [G, C/G] -> [C] */
		struct ir_shape gs = { 2, { g, 1 } }, gc = { 2, { g, ch / g } }, cs = { 1, { ch } };
		scale = b_reshape(c, b_broadcast_to(c, b_reshape(c, scale, &gs), &gc), &cs);
		bias = b_reshape(c, b_broadcast_to(c, b_reshape(c, bias, &gs), &gc), &cs);
		if (!scale || !bias)
			return -EINVAL;
	}
	y = b_binary(c, IR_OP_MUL, y, per_channel(c, scale, xs->rank));
	return OUT1(b_binary(c, IR_OP_ADD, y, per_channel(c, bias, xs->rank)));
}

static int h_instancenorm(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	struct ir_value *x = in[0];
	int r = x->shape.rank;
	int64_t axes[IR_MAX_RANK];
	double count = 1;
	if (r < 3)
		return onnx_fail(c, "input needs rank >= 3");
	for (int i = 2; i < r; i++)
		axes[i - 2] = i, count *= (double)x->shape.dims[i];
	struct ir_value *m = b_binary(c, IR_OP_DIV, b_reduce(c, IR_OP_REDUCE_SUM, x, axes, r - 2, true),
				      b_scalar(c, x->dtype, count));
	struct ir_value *d = b_binary(c, IR_OP_SUB, x, m);
	struct ir_value *v = b_binary(c, IR_OP_DIV,
				      b_reduce(c, IR_OP_REDUCE_SUM, b_binary(c, IR_OP_MUL, d, d), axes, r - 2, true),
				      b_scalar(c, x->dtype, count));
	struct ir_value *inv = b_unary(c, IR_OP_RSQRT,
				       b_binary(c, IR_OP_ADD, v,
						b_scalar(c, x->dtype, attr_float(c, "epsilon", 1e-5))));
	struct ir_value *y = b_binary(c, IR_OP_MUL, b_binary(c, IR_OP_MUL, d, inv), per_channel(c, in[1], r));
	return OUT1(b_binary(c, IR_OP_ADD, y, per_channel(c, in[2], r)));
}

/* ---- softmax and losses ------------------------------------------------------------ */

/* log_softmax along axis: x - max - log(sum(exp(x - max))) */
static struct ir_value *log_softmax(struct onnx_ctx *c, struct ir_value *x, int64_t axis)
{
	struct ir_value *m = b_reduce(c, IR_OP_REDUCE_MAX, x, &axis, 1, true);
	struct ir_value *d = b_binary(c, IR_OP_SUB, x, m);
	struct ir_value *s = b_reduce(c, IR_OP_REDUCE_SUM, b_unary(c, IR_OP_EXP, d), &axis, 1, true);
	return b_binary(c, IR_OP_SUB, d, b_unary(c, IR_OP_LOG, s));
}

static int h_softmax(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	int64_t axis;
	bool logsm = strcmp(c->node->op_type, "LogSoftmax") == 0;
	if (c->opset < 13) {
		/* before opset 13: over all dims from axis (default 1), as a
		 * [prod(dims[:axis]), prod(dims[axis:])] matrix */
		if (onnx_axis(c, attr_int(c, "axis", 1), x->shape.rank, &axis) < 0)
			return -EINVAL;
		struct ir_shape m = { 2, { 1, 1 } };
		for (int i = 0; i < x->shape.rank; i++)
			m.dims[i < axis ? 0 : 1] *= x->shape.dims[i];
		struct ir_value *xm = b_reshape(c, x, &m);
		struct ir_attrs a = { .axis = 1 };
		struct ir_value *y = logsm ? log_softmax(c, xm, 1) : b_op(c, IR_OP_SOFTMAX, 1, &xm, &a);
		return OUT1(b_reshape(c, y, &x->shape));
	}
	if (onnx_axis(c, attr_int(c, "axis", -1), x->shape.rank, &axis) < 0)
		return -EINVAL;
	if (logsm)
		return OUT1(log_softmax(c, x, axis));
	struct ir_attrs a = { .axis = axis };
	return OUT1(b_op(c, IR_OP_SOFTMAX, 1, &x, &a));
}

/* The graph input whose elements are exactly v's (v itself, or an input
 * reshaped, transposed or widened to another integer type: PyTorch flattens
 * the labels before its loss), else NULL. */
static struct ir_value *labels_input(struct ir_value *v)
{
	while (v->kind == IR_VAL_NODE &&
	       (v->def->op == IR_OP_RESHAPE || v->def->op == IR_OP_TRANSPOSE ||
		(v->def->op == IR_OP_CONVERT && ir_dtype_is_int(v->dtype) && ir_dtype_is_int(v->def->in[0]->dtype) &&
		 ir_dtype_size(v->dtype) >= ir_dtype_size(v->def->in[0]->dtype))))
		v = v->def->in[0];
	return v->kind == IR_VAL_INPUT ? v : NULL;
}

/* SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: scores [N, C, d...],
 * labels [N, d...]. The picked log-probability comes from a one-hot select,
 * so an ignored label (which may be out of range) picks nothing. Labels
 * that are a graph input (labels_input) are marked as classes of C
 * (ir_value.classes); labels computed in the graph are not checked. */
static int h_loss(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	char buf[16];
	bool sce = strcmp(c->node->op_type, "SoftmaxCrossEntropyLoss") == 0;
	struct ir_value *x = in[0], *lab = b_convert(c, in[1], IR_I64);
	const struct ir_shape *xs = &x->shape;
	if (xs->rank < 2 || in[1]->shape.rank != xs->rank - 1)
		return onnx_fail(c, "scores must be [N, C, ...] and labels [N, ...]");
	const char *red = attr_string(c, "reduction", "mean", buf, sizeof buf);
	if (strcmp(red, "mean") && strcmp(red, "sum") && strcmp(red, "none"))
		return onnx_fail(c, "unknown reduction '%s'", red);
	const Onnx__AttributeProto *ig = attr_find(c, "ignore_index");
	/* a label outside [0, C) would pick nothing: labels read from a graph
	 * input are checked where inputs are read (ir_labels_check) */
	struct ir_value *src = labels_input(in[1]);
	if (src && (!src->classes || src->classes > xs->dims[1])) {
		src->classes = xs->dims[1];
		src->has_ignore = ig && ig->has_i;
		src->ignore = ig && ig->has_i ? ig->i : 0;
	}
	struct ir_value *logp = sce ? log_softmax(c, x, 1) : x;
	/* labels [N, 1, d...] compared with an iota over C */
	struct ir_shape ls = *xs;
	ls.dims[1] = 1;
	struct ir_value *hot = b_binary(c, IR_OP_EQ, b_reshape(c, lab, &ls), b_iota(c, IR_I64, xs, 1));
	int64_t one = 1;
	struct ir_value *picked = b_reduce(c, IR_OP_REDUCE_SUM, b_select(c, hot, logp, b_scalar(c, x->dtype, 0)), &one,
					   1, false);
	struct ir_value *w;
	if (nin > 2 && in[2]) {
		/* weight of each element's class: one-hot dot weights */
		struct ir_value *wb = b_binary(c, IR_OP_MUL, b_convert(c, hot, x->dtype),
					       per_channel(c, in[2], xs->rank));
		w = b_reduce(c, IR_OP_REDUCE_SUM, wb, &one, 1, false);
	} else {
		w = b_broadcast_to(c, b_scalar(c, x->dtype, 1), &in[1]->shape);
	}
	if (ig && ig->has_i) {
		struct ir_value *keep = b_binary(c, IR_OP_NE, lab, b_scalar(c, IR_I64, (double)ig->i));
		w = b_select(c, keep, w, b_scalar(c, x->dtype, 0));
	}
	struct ir_value *loss = b_unary(c, IR_OP_NEG, b_binary(c, IR_OP_MUL, picked, w));
	if (!loss)
		return -EINVAL;
	if (strcmp(red, "none") != 0) {
		int64_t axes[IR_MAX_RANK];
		for (int i = 0; i < loss->shape.rank; i++)
			axes[i] = i;
		int n = loss->shape.rank;
		loss = b_reduce(c, IR_OP_REDUCE_SUM, loss, axes, n, false);
		if (!strcmp(red, "mean"))
			loss = b_binary(c, IR_OP_DIV, loss, b_reduce(c, IR_OP_REDUCE_SUM, w, axes, n, false));
	}
	out[0] = loss;
	if (nout > 1 && sce)
		out[1] = logp;
	return out[0] ? 0 : -EINVAL;
}

static int h_topk(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_value *x = in[0];
	int64_t k, axis;
	if (c->opset < 10)
		k = attr_int(c, "k", -1);
	else if (nin < 2 || !in[1] || onnx_const_ints(c, in[1], &k, 1, "K") != 1)
		return nin < 2 || !in[1] ? onnx_fail(c, "input 1 (K) is required") : -EINVAL;
	if (onnx_axis(c, attr_int(c, "axis", -1), x->shape.rank, &axis) < 0)
		return -EINVAL;
	struct ir_attrs a = { .axis = axis, .k = k, .mode = attr_int(c, "largest", 1) ? 0 : IR_TOPK_SMALLEST };
	struct ir_node *n = b_node(c, IR_OP_TOPK, 1, &x, &a);
	if (!n)
		return -EINVAL;
	out[0] = n->out[0];
	if (nout > 1)
		out[1] = n->out[1];
	return 0;
}

const struct onnx_op_def onnx_ops_nn[] = {
	{ "MatMul", onnx_matmul, "" },
	{ "Gemm", onnx_gemm, "alpha beta transA transB" },
	{ "Einsum", h_einsum, "equation" },
	{ "Conv", h_conv, "auto_pad dilations group kernel_shape pads strides" },
	{ "MaxPool", h_pool, "auto_pad ceil_mode dilations kernel_shape pads storage_order strides" },
	{ "AveragePool", h_pool, "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides" },
	{ "GlobalAveragePool", h_global_pool, "" },
	{ "GlobalMaxPool", h_global_pool, "" },
	{ "BatchNormalization", h_batchnorm, "epsilon momentum training_mode spatial" },
	{ "LayerNormalization", onnx_layernorm, "axis epsilon stash_type" },
	{ "InstanceNormalization", h_instancenorm, "epsilon" },
	{ "GroupNormalization", h_groupnorm, "epsilon num_groups stash_type" },
	{ "Softmax", h_softmax, "axis" },
	{ "LogSoftmax", h_softmax, "axis" },
	{ "SoftmaxCrossEntropyLoss", h_loss, "ignore_index reduction" },
	{ "NegativeLogLikelihoodLoss", h_loss, "ignore_index reduction" },
	{ "TopK", h_topk, "axis largest sorted k" },
};
const int onnx_ops_nn_count = sizeof onnx_ops_nn / sizeof onnx_ops_nn[0];
