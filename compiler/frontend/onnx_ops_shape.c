/*
 * onnx_ops_shape.c: ONNX shape and data-movement ops -> core ops: Shape,
 * Reshape, Flatten, (Un)Squeeze, Transpose, Expand, Concat, Split, Slice,
 * Gather/Scatter and their Elements/ND forms, Constant(OfShape), Range,
 * Tile, OneHot, CumSum, Trilu, Pad, CenterCropPad.
 *
 * Inputs that decide shapes (Reshape's shape, Slice's starts...) must be
 * compile-time constants: pcc compiles static shapes. Opset 7..12 forms
 * read the same information from attributes.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "compiler/frontend/onnx_internal.h"

/* Wrap padding builds an index vector of the padded length (elements) */
#define WRAP_MAX (INT64_C(1) << 24)

static int h_shape(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int r = in[0]->shape.rank;
	int64_t start = attr_int(c, "start", 0), end = attr_int(c, "end", r);
	if (start < 0)
		start += r;
	if (end < 0)
		end += r;
	start = start < 0 ? 0 : start > r ? r : start;
	end = end < start ? start : end > r ? r : end;
	return OUT1(b_const_i64(c, (int)(end - start), in[0]->shape.dims + start));
}

static int h_size(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int64_t n = ir_shape_numel(&in[0]->shape);
	struct ir_shape s = { 0 };
	return OUT1(b_const(c, IR_I64, &s, &n));
}

static int shape_from_const(struct onnx_ctx *c, struct ir_value *v, struct ir_shape *s, const char *what)
{
	int64_t dims[IR_MAX_RANK];
	int n = onnx_const_ints(c, v, dims, IR_MAX_RANK, what);
	if (n < 0)
		return -EINVAL;
	s->rank = n;
	for (int i = 0; i < n; i++)
		s->dims[i] = dims[i];
	return 0;
}

static int h_reshape(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_shape s;
	char b1[IR_SHAPE_STR_MAX], b2[IR_SHAPE_STR_MAX];
	if (shape_from_const(c, in[1], &s, "the target shape") < 0)
		return -EINVAL;
	bool allowzero = attr_int(c, "allowzero", 0);
	int infer = -1;
	int64_t known = 1;
	for (int i = 0; i < s.rank; i++) {
		if (s.dims[i] == 0 && !allowzero) {
			if (i >= in[0]->shape.rank)
				return onnx_fail(c, "shape entry %d is 0 but the input has rank %d", i,
						 in[0]->shape.rank);
			s.dims[i] = in[0]->shape.dims[i];
		}
		if (s.dims[i] == -1) {
			if (infer >= 0)
				return onnx_fail(c, "target shape has more than one -1");
			infer = i;
		} else if (s.dims[i] < 0) {
			return onnx_fail(c, "target shape has a negative entry %lld", (long long)s.dims[i]);
		} else if (s.dims[i] > 0 && known > IR_MAX_NUMEL / s.dims[i]) {
			return onnx_fail(c, "target shape is absurdly large");
		} else {
			known *= s.dims[i];
		}
	}
	int64_t n = ir_shape_numel(&in[0]->shape);
	if (infer >= 0) {
		if (known == 0 || n % known)
			return onnx_fail(c, "cannot reshape %s into %s", ir_shape_str(&in[0]->shape, b1, sizeof b1),
					 ir_shape_str(&s, b2, sizeof b2));
		s.dims[infer] = n / known;
	}
	return OUT1(b_reshape(c, in[0], &s));
}

static int h_flatten(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *x = &in[0]->shape;
	int64_t axis = attr_int(c, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return onnx_fail(c, "axis %lld out of range for rank %d", (long long)attr_int(c, "axis", 1), x->rank);
	struct ir_shape s = { 2, { 1, 1 } };
	for (int i = 0; i < x->rank; i++)
		s.dims[i < axis ? 0 : 1] *= x->dims[i];
	return OUT1(b_reshape(c, in[0], &s));
}

/* Axes of Squeeze/Unsqueeze: an input since opset 13. */
static int axes_input(struct onnx_ctx *c, struct ir_value **in, int nin, int64_t *axes)
{
	if (c->opset < 13)
		return attr_ints(c, "axes", axes, IR_MAX_RANK);
	if (nin > 1 && in[1])
		return onnx_const_ints(c, in[1], axes, IR_MAX_RANK, "axes");
	return 0;
}

static int h_squeeze(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int64_t axes[IR_MAX_RANK];
	int n = axes_input(c, in, nin, axes);
	const struct ir_shape *x = &in[0]->shape;
	bool drop[IR_MAX_RANK] = { 0 };
	if (n < 0)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		int64_t ax;
		if (onnx_axis(c, axes[i], x->rank, &ax) < 0)
			return -EINVAL;
		if (x->dims[ax] != 1)
			return onnx_fail(c, "cannot squeeze dim %lld of size %lld", (long long)ax,
					 (long long)x->dims[ax]);
		drop[ax] = true;
	}
	struct ir_shape s = { 0 };
	for (int i = 0; i < x->rank; i++)
		if (!(n ? drop[i] : x->dims[i] == 1))
			s.dims[s.rank++] = x->dims[i];
	return OUT1(b_reshape(c, in[0], &s));
}

static int h_unsqueeze(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	if (c->opset >= 13)
		NEED(1);
	int64_t axes[IR_MAX_RANK];
	int n = axes_input(c, in, nin, axes);
	const struct ir_shape *x = &in[0]->shape;
	if (n < 0)
		return -EINVAL;
	int r = x->rank + n;
	if (r > IR_MAX_RANK)
		return onnx_fail(c, "result rank %d exceeds %d", r, IR_MAX_RANK);
	bool ins[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < n; i++) {
		int64_t ax;
		if (onnx_axis(c, axes[i], r, &ax) < 0)
			return -EINVAL;
		if (ins[ax])
			return onnx_fail(c, "axis %lld repeated", (long long)axes[i]);
		ins[ax] = true;
	}
	struct ir_shape s = { r, { 0 } };
	for (int i = 0, j = 0; i < r; i++)
		s.dims[i] = ins[i] ? 1 : x->dims[j++];
	return OUT1(b_reshape(c, in[0], &s));
}

static int h_transpose(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int r = in[0]->shape.rank;
	int64_t perm[IR_MAX_RANK];
	int n = attr_ints(c, "perm", perm, IR_MAX_RANK);
	if (n < 0)
		return -EINVAL;
	if (n == 0) {
		for (int i = 0; i < r; i++)
			perm[i] = r - 1 - i;
	} else if (n != r) {
		return onnx_fail(c, "perm has %d entries for rank %d", n, r);
	} else {
		for (int i = 0; i < r; i++)
			if (onnx_axis(c, perm[i], r, &perm[i]) < 0)
				return -EINVAL;
	}
	return OUT1(b_transpose(c, in[0], perm));
}

static int h_expand(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_shape s, r;
	if (shape_from_const(c, in[1], &s, "the target shape") < 0)
		return -EINVAL;
	/* Expand broadcasts both ways: result = broadcast(input shape, s) */
	const struct ir_shape *x = &in[0]->shape;
	r.rank = x->rank > s.rank ? x->rank : s.rank;
	for (int i = 0; i < r.rank; i++) {
		int xi = i - (r.rank - x->rank), si = i - (r.rank - s.rank);
		int64_t dx = xi >= 0 ? x->dims[xi] : 1, ds = si >= 0 ? s.dims[si] : 1;
		if (dx != ds && dx != 1 && ds != 1)
			return onnx_fail(c, "input shape does not broadcast to the target shape");
		r.dims[i] = dx == 1 ? ds : dx;
	}
	if (ir_shape_check(&r) < 0)
		return -EINVAL;
	return OUT1(b_broadcast_to(c, in[0], &r));
}

static int h_concat(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	struct ir_value *parts[64];
	int n = 0;
	int64_t axis;
	NEED(0);
	if (onnx_axis(c, attr_int(c, "axis", 0), in[0]->shape.rank, &axis) < 0)
		return -EINVAL;
	for (int i = 0; i < nin; i++) {
		NEED(i);
		if (in[i]->shape.rank == in[0]->shape.rank && in[i]->shape.dims[axis] == 0 && nin > 1)
			continue; /* empty pieces contribute nothing */
		parts[n++] = in[i];
	}
	if (n == 0)
		parts[n++] = in[0];
	return OUT1(b_concat(c, n, parts, (int)axis));
}

static int h_split(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	int64_t axis, sizes[64];
	const struct ir_shape *x = &in[0]->shape;
	if (onnx_axis(c, attr_int(c, "axis", 0), x->rank, &axis) < 0)
		return -EINVAL;
	int n = 0;
	if (attr_since(c, "num_outputs", 18) < 0)
		return -ENOTSUP;
	if (c->opset < 13 && attr_find(c, "split")) {
		n = attr_ints(c, "split", sizes, 64);
		if (n != nout)
			return onnx_fail(c, "split has %d sizes for %d outputs", n, nout);
	} else if (nin > 1 && in[1]) {
		if (attr_find(c, "num_outputs"))
			return onnx_fail(c, "split and num_outputs are both given (one of them must be)");
		n = onnx_const_ints(c, in[1], sizes, 64, "split");
		if (n < 0)
			return -EINVAL;
		if (n != nout)
			return onnx_fail(c, "split has %d sizes for %d outputs", n, nout);
	} else {
		/* equal parts of ceil(d / n), the last one smaller; Split-18 names
		 * n in num_outputs, which must then be the count of outputs */
		int64_t d = x->dims[axis], each = (d + nout - 1) / nout;
		int64_t parts = attr_int(c, "num_outputs", nout);
		if (parts != nout)
			return onnx_fail(c, "num_outputs is %lld, but the node has %d outputs", (long long)parts, nout);
		if (nout < 1 || nout > 64)
			return onnx_fail(c, "%d outputs", nout);
		for (n = 0; n < nout; n++)
			sizes[n] = d - each * n < each ? (d - each * n > 0 ? d - each * n : 0) : each;
	}
	int64_t at = 0;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0 || at + sizes[i] > x->dims[axis])
			return onnx_fail(c, "split sizes exceed dim %lld", (long long)axis);
		out[i] = b_slice(c, in[0], (int)axis, at, at + sizes[i], 1);
		if (!out[i])
			return -EINVAL;
		at += sizes[i];
	}
	if (at != x->dims[axis])
		return onnx_fail(c, "split sizes sum to %lld, dim %lld has %lld", (long long)at, (long long)axis,
				 (long long)x->dims[axis]);
	return 0;
}

/* SplitToSequence: the parts of input along axis as a sequence (which
 * SequenceAt reads): split a list of sizes, or one size repeated, the
 * last part smaller where it does not divide; without split parts of 1,
 * the axis dropped unless keepdims. The dynamo exporter writes it for
 * torch.split when its optimizer does not run. */
#define SEQ_MAX 4096

static int h_split_to_sequence(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *x = &in[0]->shape;
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", 0), x->rank, &axis) < 0)
		return -EINVAL;
	int64_t d = x->dims[axis], *sizes = ir_graph_alloc(c->g, SEQ_MAX * sizeof *sizes);
	struct ir_value **items = ir_graph_alloc(c->g, SEQ_MAX * sizeof *items);
	bool keep = true;
	int n = 0;
	if (!sizes || !items)
		return ir_errorf(-ENOMEM, "out of memory");
	if (nin > 1 && in[1] && in[1]->shape.rank == 0) {
		double each;
		if (onnx_const_scalar(c, in[1], &each, "split") < 0)
			return -EINVAL;
		if (!(each >= 1) || (d + (int64_t)each - 1) / (int64_t)each > SEQ_MAX)
			return onnx_fail(c, "split %g: parts must be of 1 or more, and at most %d of them", each,
					 SEQ_MAX);
		for (int64_t at = 0; at < d; at += (int64_t)each)
			sizes[n++] = d - at < (int64_t)each ? d - at : (int64_t)each;
	} else if (nin > 1 && in[1]) {
		if ((n = onnx_const_ints(c, in[1], sizes, SEQ_MAX, "split")) < 0)
			return -EINVAL;
	} else {
		if (d > SEQ_MAX)
			return onnx_fail(c, "%lld parts of 1: at most %d", (long long)d, SEQ_MAX);
		keep = attr_int(c, "keepdims", 1) != 0;
		for (n = 0; n < d; n++)
			sizes[n] = 1;
	}
	int64_t at = 0;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0 || at + sizes[i] > d)
			return onnx_fail(c, "split sizes exceed dim %lld", (long long)axis);
		items[i] = b_slice(c, in[0], (int)axis, at, at + sizes[i], 1);
		if (items[i] && !keep) {
			struct ir_shape s = *x;
			memmove(&s.dims[axis], &s.dims[axis + 1], (size_t)(s.rank - axis - 1) * sizeof s.dims[0]);
			s.rank--;
			items[i] = b_reshape(c, items[i], &s);
		}
		if (!items[i])
			return -EINVAL;
		at += sizes[i];
	}
	if (at != d)
		return onnx_fail(c, "split sizes sum to %lld, dim %lld has %lld", (long long)at, (long long)axis,
				 (long long)d);
	if (onnx_seq_add(c, n, items) < 0)
		return -ENOMEM;
	(void)nout;
	out[0] = in[0]; /* stands for the sequence in the name table */
	return 0;
}

/* SequenceAt: the tensor at a constant position (negative from the end)
 * of a sequence SplitToSequence made. */
static int h_sequence_at(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	ARITY(2);
	NEED(0);
	NEED(1);
	const struct onnx_seq *s = onnx_seq_find(c, c->node->input[0]);
	double pos;
	if (!s)
		return onnx_fail(c, "input \"%s\" is not a sequence", c->node->input[0]);
	if (onnx_const_scalar(c, in[1], &pos, "position") < 0)
		return -EINVAL;
	int64_t p = (int64_t)pos < 0 ? (int64_t)pos + s->n : (int64_t)pos;
	if (p < 0 || p >= s->n)
		return onnx_fail(c, "position %lld is outside the sequence of %d tensors", (long long)pos, s->n);
	return OUT1(s->items[p]);
}

static int h_slice(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *x = &in[0]->shape;
	int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
	int n;
	bool attrs = c->opset < 10; /* Slice-1 takes starts, ends, axes as attributes */
	if (attrs) {
		n = attr_ints(c, "starts", st, IR_MAX_RANK);
		if (n < 0 || attr_ints(c, "ends", en, IR_MAX_RANK) != n)
			return onnx_fail(c, "starts and ends differ in length");
	} else {
		NEED(1);
		NEED(2);
		n = onnx_const_ints(c, in[1], st, IR_MAX_RANK, "starts");
		if (n < 0 || onnx_const_ints(c, in[2], en, IR_MAX_RANK, "ends") != n)
			return n < 0 ? -EINVAL : onnx_fail(c, "starts and ends differ in length");
	}
	if (attrs && attr_find(c, "axes")) {
		if (attr_ints(c, "axes", ax, IR_MAX_RANK) != n)
			return onnx_fail(c, "axes and starts differ in length");
	} else if (!attrs && nin > 3 && in[3]) {
		if (onnx_const_ints(c, in[3], ax, IR_MAX_RANK, "axes") != n)
			return onnx_fail(c, "axes and starts differ in length");
	} else {
		for (int i = 0; i < n; i++)
			ax[i] = i;
	}
	if (!attrs && nin > 4 && in[4]) {
		if (onnx_const_ints(c, in[4], sp, IR_MAX_RANK, "steps") != n)
			return onnx_fail(c, "steps and starts differ in length");
	} else {
		for (int i = 0; i < n; i++)
			sp[i] = 1;
	}
	struct ir_attrs a = { 0 };
	a.start.n = a.limit.n = a.stride.n = x->rank;
	bool rev[IR_MAX_RANK] = { 0 }, seen[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < x->rank; i++) {
		a.start.v[i] = 0;
		a.limit.v[i] = x->dims[i];
		a.stride.v[i] = 1;
	}
	for (int i = 0; i < n; i++) {
		int64_t axis, d;
		if (onnx_axis(c, ax[i], x->rank, &axis) < 0)
			return -EINVAL;
		if (seen[axis])
			return onnx_fail(c, "axis %lld repeated", (long long)ax[i]);
		seen[axis] = true;
		d = x->dims[axis];
		int64_t s = st[i], e = en[i], step = sp[i];
		if (step == 0)
			return onnx_fail(c, "step 0 on axis %lld", (long long)axis);
		/* a step beyond the dim selects one element, like the dim itself */
		int64_t dmax = d > 1 ? d : 1;
		step = step > dmax ? dmax : step < -dmax ? -dmax : step;
		if (s < 0)
			s += d;
		if (e < 0 && e > INT64_MIN / 2)
			e += d;
		if (step > 0) {
			s = s < 0 ? 0 : s > d ? d : s;
			e = e < 0 ? 0 : e > d ? d : e;
			if (e < s)
				e = s;
			a.start.v[axis] = s;
			a.limit.v[axis] = e;
			a.stride.v[axis] = step;
		} else {
			/* walk backwards: reverse the axis, then slice forwards */
			s = s < 0 ? -1 : s > d - 1 ? d - 1 : s;
			e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
			if (e > s)
				e = s;
			rev[axis] = true;
			a.start.v[axis] = d - 1 - s;
			a.limit.v[axis] = d - 1 - e;
			a.stride.v[axis] = -step;
		}
	}
	struct ir_value *v = in[0];
	struct ir_attrs ra = { 0 };
	for (int i = 0; i < x->rank; i++)
		if (rev[i])
			ra.axes.v[ra.axes.n++] = i;
	if (ra.axes.n)
		v = b_op(c, IR_OP_REVERSE, 1, &v, &ra);
	bool whole = true;
	for (int i = 0; i < x->rank; i++)
		whole &= a.start.v[i] == 0 && a.limit.v[i] == x->dims[i] && a.stride.v[i] == 1;
	return OUT1(whole || !v ? v : b_op(c, IR_OP_SLICE, 1, &v, &a));
}

static int h_gather(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", 0), in[0]->shape.rank, &axis) < 0)
		return -EINVAL;
	struct ir_attrs a = { .axis = axis };
	struct ir_value *ops[2] = { in[0], in[1] };
	return OUT1(b_op(c, IR_OP_GATHER, 2, ops, &a));
}

/* Flat row index for element-wise indexing along `axis`:
 * flat = ((outer * dim) + idx) * inner + inner_pos, where idx is normalized
 * to be non-negative. Used by GatherElements and ScatterElements. */
static struct ir_value *flat_elements_index(struct onnx_ctx *c, struct ir_value *idx, int64_t axis,
					    const struct ir_shape *data)
{
	const struct ir_shape *s = &idx->shape;
	struct ir_value *i64 = b_convert(c, idx, IR_I64);
	int64_t d = data->dims[axis];
	/* negative indices count from the end */
	struct ir_value *neg = b_binary(c, IR_OP_LT, i64, b_scalar(c, IR_I64, 0));
	i64 = b_select(c, neg, b_binary(c, IR_OP_ADD, i64, b_scalar(c, IR_I64, (double)d)), i64);
	struct ir_value *flat = NULL;
	for (int k = 0; k < s->rank && i64; k++) {
		struct ir_value *pos = k == axis ? i64 : b_iota(c, IR_I64, s, k);
		flat = flat ? b_binary(c, IR_OP_ADD,
				       b_binary(c, IR_OP_MUL, flat, b_scalar(c, IR_I64, (double)data->dims[k])), pos)
			    : pos;
	}
	return flat;
}

static int h_gather_elements(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	const struct ir_shape *x = &in[0]->shape;
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", 0), x->rank, &axis) < 0)
		return -EINVAL;
	if (in[1]->shape.rank != x->rank)
		return onnx_fail(c, "indices rank %d differs from data rank %d", in[1]->shape.rank, x->rank);
	for (int k = 0; k < x->rank; k++)
		if (k != axis && in[1]->shape.dims[k] > x->dims[k])
			return onnx_fail(c, "indices dim %d exceeds data", k);
	struct ir_value *flat = flat_elements_index(c, in[1], axis, x);
	struct ir_shape all = { 1, { ir_shape_numel(x) } };
	struct ir_value *ops[2] = { b_reshape(c, in[0], &all), flat };
	struct ir_attrs a = { .axis = 0 };
	return OUT1(ops[0] && ops[1] ? b_op(c, IR_OP_GATHER, 2, ops, &a) : NULL);
}

/* ScatterElements/ScatterND reduction attribute -> IR_SCATTER_*, or -EINVAL. */
static int64_t scatter_mode(struct onnx_ctx *c)
{
	static const char *names[] = { [IR_SCATTER_NONE] = "none",
				       [IR_SCATTER_ADD] = "add",
				       [IR_SCATTER_MUL] = "mul",
				       [IR_SCATTER_MAX] = "max",
				       [IR_SCATTER_MIN] = "min" };
	char buf[16];
	const char *red = attr_string(c, "reduction", "none", buf, sizeof buf);
	for (int64_t m = 0; m < (int64_t)(sizeof names / sizeof names[0]); m++) {
		if (strcmp(red, names[m]) != 0)
			continue;
		if ((m == IR_SCATTER_MAX || m == IR_SCATTER_MIN) && c->opset < 18)
			return onnx_unsupported(c, "reduction '%s' came with %s-18, but the model imports opset %lld",
						red, c->node->op_type, (long long)c->opset);
		return m;
	}
	return onnx_fail(c, "unknown reduction '%s'", red);
}

static int h_scatter_elements(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	const struct ir_shape *x = &in[0]->shape;
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", 0), x->rank, &axis) < 0)
		return -EINVAL;
	int64_t mode = scatter_mode(c);
	if (mode < 0)
		return -EINVAL;
	if (!ir_shape_eq(&in[1]->shape, &in[2]->shape) || in[1]->shape.rank != x->rank)
		return onnx_fail(c, "indices and updates must have one shape of the data's rank");
	struct ir_value *flat = flat_elements_index(c, in[1], axis, x);
	struct ir_shape all = { 1, { ir_shape_numel(x) } }, one = { 1, { ir_shape_numel(&in[2]->shape) } };
	struct ir_value *ops[3] = { b_reshape(c, in[0], &all), b_reshape(c, flat, &one), b_reshape(c, in[2], &one) };
	struct ir_attrs a = { .mode = mode };
	if (!ops[0] || !ops[1] || !ops[2])
		return -EINVAL;
	return OUT1(b_reshape(c, b_op(c, IR_OP_SCATTER, 3, ops, &a), x));
}

/* GatherND / ScatterND with indices [..., K]: the first K data dims are
 * flattened into one row index r = sum idx_k * stride_k. */
static struct ir_value *nd_rows(struct onnx_ctx *c, struct ir_value *idx, const struct ir_shape *x, int64_t k,
				struct ir_value **data, struct ir_value *dv)
{
	const struct ir_shape *s = &idx->shape;
	struct ir_shape lead = { s->rank - 1, { 0 } };
	for (int i = 0; i < s->rank - 1; i++)
		lead.dims[i] = s->dims[i];
	struct ir_value *flat = NULL;
	struct ir_value *i64 = b_convert(c, idx, IR_I64);
	for (int64_t j = 0; j < k && i64; j++) {
		struct ir_value *col = b_reshape(c, b_slice(c, i64, s->rank - 1, j, j + 1, 1), &lead);
		struct ir_value *neg = b_binary(c, IR_OP_LT, col, b_scalar(c, IR_I64, 0));
		col = b_select(c, neg, b_binary(c, IR_OP_ADD, col, b_scalar(c, IR_I64, (double)x->dims[j])), col);
		flat = flat ? b_binary(c, IR_OP_ADD,
				       b_binary(c, IR_OP_MUL, flat, b_scalar(c, IR_I64, (double)x->dims[j])), col)
			    : col;
	}
	struct ir_shape rows = { x->rank - (int)k + 1, { 1 } };
	for (int i = 0; i < k; i++)
		rows.dims[0] *= x->dims[i];
	for (int i = (int)k; i < x->rank; i++)
		rows.dims[i - k + 1] = x->dims[i];
	*data = b_reshape(c, dv, &rows);
	return flat;
}

static int h_gather_nd(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	if (attr_int(c, "batch_dims", 0) != 0)
		return onnx_unsupported(c, "batch_dims other than 0 is not supported");
	const struct ir_shape *x = &in[0]->shape, *s = &in[1]->shape;
	int64_t k = s->rank ? s->dims[s->rank - 1] : 0;
	if (s->rank < 1 || k < 1 || k > x->rank)
		return onnx_fail(c, "indices last dim %lld must be in 1..%d", (long long)k, x->rank);
	struct ir_value *data = NULL, *rows = nd_rows(c, in[1], x, k, &data, in[0]);
	struct ir_value *ops[2] = { data, rows };
	struct ir_attrs a = { .axis = 0 };
	return OUT1(data && rows ? b_op(c, IR_OP_GATHER, 2, ops, &a) : NULL);
}

static int h_scatter_nd(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	int64_t mode = scatter_mode(c);
	if (mode < 0)
		return -EINVAL;
	const struct ir_shape *x = &in[0]->shape, *s = &in[1]->shape;
	int64_t k = s->rank ? s->dims[s->rank - 1] : 0;
	if (s->rank < 1 || k < 1 || k > x->rank)
		return onnx_fail(c, "indices last dim %lld must be in 1..%d", (long long)k, x->rank);
	struct ir_value *data = NULL, *rows = nd_rows(c, in[1], x, k, &data, in[0]);
	if (!data || !rows)
		return -EINVAL;
	struct ir_shape us = rows->shape;
	for (int i = (int)k; i < x->rank; i++)
		us.dims[us.rank++] = x->dims[i];
	struct ir_value *ops[3] = { data, rows, b_reshape(c, in[2], &us) };
	struct ir_attrs a = { .mode = mode };
	return OUT1(ops[2] ? b_reshape(c, b_op(c, IR_OP_SCATTER, 3, ops, &a), x) : NULL);
}

static int h_constant(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	const Onnx__AttributeProto *a;
	if ((a = attr_find(c, "value")) && a->t) {
		struct ir_tensor t;
		if (onnx_tensor_decode(a->t, &t) < 0)
			return -EINVAL;
		out[0] = b_const(c, t.dtype, &t.shape, t.data);
		ir_tensor_free(&t);
		return out[0] ? 0 : -EINVAL;
	}
	struct ir_shape s = { 0 };
	/* an empty list is a tensor of shape [0] (the dynamo exporter's
	 * value_ints=[], the shape a scalar expands to); protobuf-c leaves its
	 * array NULL, and a constant needs data, if none of it is read */
	static const int64_t none[1];
	if ((a = attr_find(c, "value_float")))
		return OUT1(b_scalar(c, IR_F32, a->f));
	if ((a = attr_find(c, "value_int")))
		return OUT1(b_const(c, IR_I64, &s, &a->i));
	if ((a = attr_find(c, "value_floats"))) {
		s = (struct ir_shape){ 1, { (int64_t)a->n_floats } };
		return OUT1(b_const(c, IR_F32, &s, a->n_floats ? (const void *)a->floats : none));
	}
	if ((a = attr_find(c, "value_ints"))) {
		s = (struct ir_shape){ 1, { (int64_t)a->n_ints } };
		return OUT1(b_const(c, IR_I64, &s, a->n_ints ? a->ints : none));
	}
	return onnx_fail(c, "needs one of value, value_float(s), value_int(s)");
}

static int h_constant_of_shape(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	struct ir_shape s;
	struct ir_tensor t = { IR_F32, { 0 }, NULL };
	float zero = 0;
	if (shape_from_const(c, in[0], &s, "the shape") < 0 || ir_shape_check(&s) < 0)
		return -EINVAL;
	const Onnx__AttributeProto *a = attr_find(c, "value");
	if (a && a->t && onnx_tensor_decode(a->t, &t) < 0)
		return -EINVAL;
	if (t.data && ir_shape_numel(&t.shape) != 1) {
		ir_tensor_free(&t);
		return onnx_fail(c, "value must hold one element");
	}
	struct ir_shape scalar = { 0 };
	struct ir_value *v = b_const(c, t.dtype, &scalar, t.data ? t.data : &zero);
	if (t.data)
		ir_tensor_free(&t);
	return OUT1(b_broadcast_to(c, v, &s));
}

static int h_range(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	double s, l, d;
	if (onnx_const_scalar(c, in[0], &s, "start") < 0 || onnx_const_scalar(c, in[1], &l, "limit") < 0 ||
	    onnx_const_scalar(c, in[2], &d, "delta") < 0)
		return -EINVAL;
	enum ir_dtype t = in[0]->dtype;
	if (d == 0)
		return onnx_fail(c, "delta is 0");
	double n = ceil((l - s) / d);
	if (!(n >= 0))
		n = 0;
	if (n > (double)IR_MAX_NUMEL)
		return onnx_fail(c, "range of %g elements is absurd", n);
	struct ir_shape sh = { 1, { (int64_t)n } };
	struct ir_value *i = b_iota(c, t, &sh, 0);
	return OUT1(b_binary(c, IR_OP_ADD, b_binary(c, IR_OP_MUL, i, b_scalar(c, t, d)), b_scalar(c, t, s)));
}

static int h_tile(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int64_t reps[IR_MAX_RANK];
	const struct ir_shape *x = &in[0]->shape;
	int n = onnx_const_ints(c, in[1], reps, IR_MAX_RANK, "repeats");
	if (n < 0)
		return -EINVAL;
	if (n != x->rank)
		return onnx_fail(c, "repeats has %d entries for rank %d", n, x->rank);
	/* [d0, d1] -> broadcast to [r0, d0, r1, d1] -> reshape [r0*d0, r1*d1],
	 * with no axis for a repeat of 1: torch's repeat_interleave of a
	 * rank-4 attention tensor tiles its unsqueezed rank 5 by
	 * [1, 1, r, 1, 1], a broadcast of rank 6 */
	int tiled = 0;
	for (int i = 0; i < x->rank; i++) {
		if (reps[i] < 0)
			return onnx_fail(c, "negative repeat");
		tiled += reps[i] != 1;
	}
	if (x->rank + tiled > IR_MAX_RANK)
		return onnx_fail(c, "tiles %d dims of rank %d: at most %d (rank plus tiled dims up to %d)", tiled,
				 x->rank, IR_MAX_RANK - x->rank, IR_MAX_RANK);
	struct ir_shape b = { x->rank + tiled, { 0 } }, r = { x->rank, { 0 } };
	struct ir_attrs a = { .axes.n = x->rank };
	for (int i = 0, k = 0; i < x->rank; i++) {
		if (reps[i] != 1)
			b.dims[k++] = reps[i];
		a.axes.v[i] = k;
		b.dims[k++] = x->dims[i];
		r.dims[i] = reps[i] * x->dims[i];
	}
	if (ir_shape_check(&b) < 0)
		return -EINVAL;
	a.shape = b;
	struct ir_value *v = in[0];
	return OUT1(b_reshape(c, b_op(c, IR_OP_BROADCAST, 1, &v, &a), &r));
}

static int h_onehot(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	NEED(2);
	double depth_f;
	if (onnx_const_scalar(c, in[1], &depth_f, "depth") < 0)
		return -EINVAL;
	if (!(depth_f >= 1 && depth_f <= (double)IR_MAX_NUMEL))
		return onnx_fail(c, "depth %g is not a positive size", depth_f);
	if (in[2]->shape.rank != 1 || in[2]->shape.dims[0] != 2)
		return onnx_fail(c, "values must hold [off, on]");
	int64_t depth = (int64_t)depth_f;
	const struct ir_shape *s = &in[0]->shape;
	if (depth < 1 || s->rank + 1 > IR_MAX_RANK)
		return onnx_fail(c, "depth %lld or rank invalid", (long long)depth);
	int64_t axis;
	if (onnx_axis(c, attr_int(c, "axis", -1), s->rank + 1, &axis) < 0)
		return -EINVAL;
	struct ir_shape r = { s->rank + 1, { 0 } };
	for (int i = 0, j = 0; i < r.rank; i++)
		r.dims[i] = i == axis ? depth : s->dims[j++];
	if (ir_shape_check(&r) < 0)
		return -EINVAL;
	struct ir_value *idx = b_convert(c, in[0], IR_I64);
	idx = b_select(c, b_binary(c, IR_OP_LT, idx, b_scalar(c, IR_I64, 0)),
		       b_binary(c, IR_OP_ADD, idx, b_scalar(c, IR_I64, (double)depth)), idx);
	struct ir_shape ks = r;
	ks.dims[axis] = 1;
	struct ir_value *hot = b_binary(c, IR_OP_EQ, b_reshape(c, idx, &ks), b_iota(c, IR_I64, &r, (int)axis));
	struct ir_shape one = { 0 };
	struct ir_value *off = b_reshape(c, b_slice(c, in[2], 0, 0, 1, 1), &one);
	struct ir_value *on = b_reshape(c, b_slice(c, in[2], 0, 1, 2, 1), &one);
	return OUT1(b_select(c, hot, on, off));
}

static int h_cumsum(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	int64_t ax[1], axis;
	if (onnx_const_ints(c, in[1], ax, 1, "axis") != 1 || onnx_axis(c, ax[0], in[0]->shape.rank, &axis) < 0)
		return -EINVAL;
	struct ir_attrs a = { .axis = axis,
			      .mode = (attr_int(c, "exclusive", 0) ? IR_CUMSUM_EXCLUSIVE : 0) |
				      (attr_int(c, "reverse", 0) ? IR_CUMSUM_REVERSE : 0) };
	struct ir_value *x = in[0];
	return OUT1(b_op(c, IR_OP_CUMSUM, 1, &x, &a));
}

/* Trilu: keep elements with j - i <= k (lower) or >= k (upper). */
static int h_trilu(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *s = &in[0]->shape;
	int64_t k = 0;
	if (s->rank < 2)
		return onnx_fail(c, "needs rank >= 2");
	if (nin > 1 && in[1] && onnx_const_ints(c, in[1], &k, 1, "k") != 1)
		return -EINVAL;
	struct ir_shape m = { 2, { s->dims[s->rank - 2], s->dims[s->rank - 1] } };
	struct ir_value *diff = b_binary(c, IR_OP_SUB, b_iota(c, IR_I64, &m, 1), b_iota(c, IR_I64, &m, 0));
	struct ir_value *keep = b_binary(c, attr_int(c, "upper", 1) ? IR_OP_GE : IR_OP_LE, diff,
					 b_scalar(c, IR_I64, (double)k));
	return OUT1(b_select(c, keep, in[0], b_scalar(c, in[0]->dtype, 0)));
}

/* Pad-19's wrap mode: result index j along an axis reads the input at
 * (j - lo) mod d, one gather per padded axis (negative pads crop the same
 * way). Example: d = 3, lo = 2, hi = 1 reads 1 2 0 1 2 0. */
static struct ir_value *pad_wrap(struct onnx_ctx *c, struct ir_value *x, const int64_t *pads, const int64_t *axes,
				 int naxes)
{
	for (int i = 0; i < naxes && x; i++) {
		int64_t lo = pads[i], hi = pads[i + naxes], d = x->shape.dims[axes[i]];
		if (!lo && !hi)
			continue;
		/* bounded first, so that the length cannot overflow */
		bool small = lo >= -WRAP_MAX && lo <= WRAP_MAX && hi >= -WRAP_MAX && hi <= WRAP_MAX;
		int64_t n = small ? d + lo + hi : -1;
		if (d == 0 || n < 0 || n > WRAP_MAX) {
			onnx_fail(c, "wrap padding of dim %lld (size %lld) by %lld and %lld is not supported",
				  (long long)axes[i], (long long)d, (long long)lo, (long long)hi);
			return NULL;
		}
		int64_t *idx = ir_malloc((size_t)(n ? n : 1) * sizeof *idx);
		if (!idx) {
			ir_errorf(-ENOMEM, "out of memory");
			return NULL;
		}
		for (int64_t j = 0; j < n; j++)
			idx[j] = ((j - lo) % d + d) % d;
		struct ir_shape is = { 1, { n } };
		struct ir_value *ops[2] = { x, b_const(c, IR_I64, &is, idx) };
		ir_free(idx);
		struct ir_attrs a = { .axis = axes[i] };
		x = ops[1] ? b_op(c, IR_OP_GATHER, 2, ops, &a) : NULL;
	}
	return x;
}

static int h_pad(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	const struct ir_shape *x = &in[0]->shape;
	int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
	char buf[16];
	int n;
	if (c->opset < 11) /* Pad-2: pads and value are attributes */
		n = attr_ints(c, "pads", pads, 2 * IR_MAX_RANK);
	else if (nin > 1 && in[1])
		n = onnx_const_ints(c, in[1], pads, 2 * IR_MAX_RANK, "pads");
	else
		return onnx_fail(c, "input 1 is required");
	if (n < 0)
		return -EINVAL;
	int naxes = x->rank;
	if (nin > 3 && in[3]) {
		if ((naxes = onnx_const_ints(c, in[3], axes, IR_MAX_RANK, "axes")) < 0)
			return -EINVAL;
		for (int i = 0; i < naxes; i++)
			if (onnx_axis(c, axes[i], x->rank, &axes[i]) < 0)
				return -EINVAL;
	} else {
		for (int i = 0; i < naxes; i++)
			axes[i] = i;
	}
	if (n != 2 * naxes)
		return onnx_fail(c, "pads has %d entries, expected %d", n, 2 * naxes);
	const char *mode = attr_string(c, "mode", "constant", buf, sizeof buf);
	struct ir_attrs a = { .pad_lo.n = x->rank, .pad_hi.n = x->rank };
	if (!strcmp(mode, "wrap") && c->opset < 19)
		return onnx_unsupported(c, "mode 'wrap' came with Pad-19, but the model imports opset %lld",
					(long long)c->opset);
	if (!strcmp(mode, "wrap"))
		return OUT1(pad_wrap(c, in[0], pads, axes, naxes));
	a.mode = !strcmp(mode, "constant")  ? IR_PAD_CONSTANT
		 : !strcmp(mode, "edge")    ? IR_PAD_EDGE
		 : !strcmp(mode, "reflect") ? IR_PAD_REFLECT
					    : -1;
	if (a.mode < 0)
		return onnx_fail(c, "unknown mode '%s'", mode);
	if (c->opset < 11) {
		a.value = attr_float(c, "value", 0);
	} else if (nin > 2 && in[2] && onnx_const_scalar(c, in[2], &a.value, "constant_value") < 0) {
		return -EINVAL;
	}
	/* negative pads crop: slice first, then pad the positive parts */
	struct ir_value *v = in[0];
	for (int i = 0; i < naxes; i++) {
		int64_t lo = pads[i], hi = pads[i + naxes], ax = axes[i];
		if (lo < 0 || hi < 0) {
			int64_t d = v->shape.dims[ax];
			int64_t s = lo < 0 ? -lo : 0, e = hi < 0 ? d + hi : d;
			if (s > e)
				return onnx_fail(c, "negative pads remove more than dim %lld holds", (long long)ax);
			v = b_slice(c, v, (int)ax, s, e, 1);
			if (!v)
				return -EINVAL;
		}
		a.pad_lo.v[ax] = lo > 0 ? lo : 0;
		a.pad_hi.v[ax] = hi > 0 ? hi : 0;
	}
	bool any = false;
	for (int i = 0; i < x->rank; i++)
		any |= a.pad_lo.v[i] || a.pad_hi.v[i];
	return OUT1(any ? b_op(c, IR_OP_PAD, 1, &v, &a) : v);
}

/* CenterCropPad-18: each listed axis (all by default) cropped or padded
 * with zeros to its size in shape, centred: the odd element goes at the
 * end (crop from floor((d - n) / 2), pad floor((n - d) / 2) in front). */
static int h_center_crop_pad(struct onnx_ctx *c, struct ir_value **in, int nin, struct ir_value **out, int nout)
{
	NEED(0);
	NEED(1);
	struct ir_value *x = in[0];
	int r = x->shape.rank;
	int64_t sz[IR_MAX_RANK], axes[IR_MAX_RANK];
	int n = onnx_const_ints(c, in[1], sz, IR_MAX_RANK, "shape"), na = attr_ints(c, "axes", axes, IR_MAX_RANK);
	if (n < 0 || na < 0)
		return -EINVAL;
	if (!attr_find(c, "axes"))
		for (na = 0; na < r; na++)
			axes[na] = na;
	if (n != na)
		return onnx_fail(c, "shape has %d entries for %d axes", n, na);
	struct ir_attrs a = { .pad_lo.n = r, .pad_hi.n = r, .mode = IR_PAD_CONSTANT, .value = 0 };
	bool pad = false, seen[IR_MAX_RANK] = { 0 };
	for (int i = 0; i < na && x; i++) {
		if (onnx_axis(c, axes[i], r, &axes[i]) < 0)
			return -EINVAL;
		if (seen[axes[i]] || sz[i] < 0)
			return onnx_fail(c, "axis %lld is repeated or its size %lld negative", (long long)axes[i],
					 (long long)sz[i]);
		seen[axes[i]] = true;
		int64_t d = x->shape.dims[axes[i]];
		if (sz[i] < d) {
			x = b_slice(c, x, (int)axes[i], (d - sz[i]) / 2, (d - sz[i]) / 2 + sz[i], 1);
		} else if (sz[i] > d) {
			a.pad_lo.v[axes[i]] = (sz[i] - d) / 2;
			a.pad_hi.v[axes[i]] = sz[i] - d - (sz[i] - d) / 2;
			pad = true;
		}
	}
	return OUT1(pad && x ? b_op(c, IR_OP_PAD, 1, &x, &a) : x);
}

const struct onnx_op_def onnx_ops_shape[] = {
	{ "Shape", h_shape, "start end" },
	{ "Size", h_size, "" },
	{ "Reshape", h_reshape, "allowzero" },
	{ "Flatten", h_flatten, "axis" },
	{ "Squeeze", h_squeeze, "axes" },
	{ "Unsqueeze", h_unsqueeze, "axes" },
	{ "Transpose", h_transpose, "perm" },
	{ "Expand", h_expand, "" },
	{ "Concat", h_concat, "axis" },
	{ "Split", h_split, "axis num_outputs split" },
	{ "SplitToSequence", h_split_to_sequence, "axis keepdims" },
	{ "SequenceAt", h_sequence_at, "" },
	{ "Slice", h_slice, "starts ends axes" },
	{ "Gather", h_gather, "axis" },
	{ "GatherElements", h_gather_elements, "axis" },
	{ "GatherND", h_gather_nd, "batch_dims" },
	{ "ScatterElements", h_scatter_elements, "axis reduction" },
	{ "ScatterND", h_scatter_nd, "reduction" },
	{ "Constant", h_constant, "value value_float value_floats value_int value_ints" },
	{ "ConstantOfShape", h_constant_of_shape, "value" },
	{ "Range", h_range, "" },
	{ "Tile", h_tile, "" },
	{ "OneHot", h_onehot, "axis" },
	{ "CumSum", h_cumsum, "exclusive reverse" },
	{ "Trilu", h_trilu, "upper" },
	{ "Pad", h_pad, "mode pads value" },
	{ "CenterCropPad", h_center_crop_pad, "axes" },
};
const int onnx_ops_shape_count = sizeof onnx_ops_shape / sizeof onnx_ops_shape[0];
