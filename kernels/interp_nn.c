/*
 * interp_nn.c: the reference interpreter's kernels other than elementwise
 * ops, dot and conv: reductions, argmax/argmin, window ops, cumsum,
 * softmax, layer_norm, topk, gather/scatter and data movement.
 *
 * Numerics (see the contract in interp.c): floating-point kernels copy the
 * operand into doubles, compute there and round once on the store; integer
 * kernels compute in int64 with wrap-around. Data movement copies bytes and
 * is exact. Each kernel is O(elements) except topk (a stable merge sort per
 * row) and window ops (O(outputs * window)).
 *
 * Most kernels view a tensor around one axis as [outer, len, inner]
 * (row-major); element (o, j, i) is at (o * len + j) * inner + i.
 *
 * Reference decompositions of the composites:
 *   softmax(x)    = exp(x - max(x)) / sum(exp(x - max(x)))   over axis
 *   layer_norm(x) = (x - mean) / sqrt(var + eps) * scale + bias, mean and
 *                   biased var over dims axis..rank-1
 *   cumsum(x)     = reduce_sum of the prefix (exclusive: without the element
 *                   itself; reverse: the suffix)
 *   topk(x)       = the first k of a stable sort along axis (descending, or
 *                   ascending with IR_TOPK_SMALLEST; NaN ranks above all)
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "kernels/interp_internal.h"

static void axis_view(const struct ir_shape *s, int64_t axis, int64_t *outer, int64_t *len, int64_t *inner)
{
	*outer = interp_dims_prod(s, 0, (int)axis);
	*len = s->dims[axis];
	*inner = interp_dims_prod(s, (int)axis + 1, s->rank);
}

/* The whole tensor in its domain: double for floats, int64 otherwise. */
static void *dup_domain(const struct ir_tensor *t)
{
	if (ir_dtype_is_float(t->dtype))
		return interp_dup_f64(t);
	return interp_dup_i64(t);
}

static void store_domain(struct ir_tensor *t, const struct ir_tensor *like, const void *v)
{
	int64_t n = ir_shape_numel(&t->shape);
	if (ir_dtype_is_float(like->dtype))
		interp_store_f64(t, 0, n, v);
	else
		interp_store_i64(t, 0, n, v);
}

static double max_f(double x, double z)
{
	return x != x || z != z ? NAN : x > z ? x : z;
}

static double min_f(double x, double z)
{
	return x != x || z != z ? NAN : x < z ? x : z;
}

static int64_t wrap_add(int64_t x, int64_t z)
{
	return (int64_t)((uint64_t)x + (uint64_t)z);
}

static int64_t wrap_mul(int64_t x, int64_t z)
{
	return (int64_t)((uint64_t)x * (uint64_t)z);
}

/* ---- reductions ------------------------------------------------------------ */

enum red { RED_SUM, RED_MAX, RED_MIN, RED_PROD };

static double red_f64(enum red k, const double *x, int64_t n)
{
	double acc = k == RED_SUM ? 0.0 : k == RED_PROD ? 1.0 : k == RED_MAX ? -INFINITY : INFINITY;
	for (int64_t i = 0; i < n; i++) {
		switch (k) {
		case RED_SUM:
			acc += x[i];
			break;
		case RED_PROD:
			acc *= x[i];
			break;
		case RED_MAX:
			acc = max_f(acc, x[i]);
			break;
		case RED_MIN:
			acc = min_f(acc, x[i]);
			break;
		}
	}
	return acc;
}

static int64_t red_i64(enum red k, const int64_t *x, int64_t n, enum ir_dtype t)
{
	int64_t acc = k == RED_SUM    ? 0
		      : k == RED_PROD ? 1
		      : k == RED_MAX  ? interp_int_lowest(t)
				      : interp_int_highest(t);
	for (int64_t i = 0; i < n; i++) {
		switch (k) {
		case RED_SUM:
			acc = wrap_add(acc, x[i]);
			break;
		case RED_PROD:
			acc = wrap_mul(acc, x[i]);
			break;
		case RED_MAX:
			acc = x[i] > acc ? x[i] : acc;
			break;
		case RED_MIN:
			acc = x[i] < acc ? x[i] : acc;
			break;
		}
	}
	return acc;
}

/* Reduced axes are moved last (one permuting copy, skipped when they
 * already are), so every result reduces one contiguous run. */
int interp_reduce(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	enum red k = n->op == IR_OP_REDUCE_SUM   ? RED_SUM
		     : n->op == IR_OP_REDUCE_MAX ? RED_MAX
		     : n->op == IR_OP_REDUCE_MIN ? RED_MIN
						 : RED_PROD;
	int r = x->shape.rank, np = 0;
	int64_t st[IR_MAX_RANK], dims[IR_MAX_RANK], strides[IR_MAX_RANK], R = 1;
	unsigned reduced = 0;
	bool moved = false, fl = ir_dtype_is_float(x->dtype);
	int64_t O = ir_shape_numel(&out->shape);

	interp_strides(&x->shape, st);
	for (int i = 0; i < n->a.axes.n; i++)
		reduced |= 1u << n->a.axes.v[i];
	for (int pass = 0; pass < 2; pass++) {
		for (int d = 0; d < r; d++) {
			if (!!(reduced & (1u << d)) != pass)
				continue;
			moved |= np != d;
			dims[np] = x->shape.dims[d];
			strides[np++] = st[d];
			if (pass)
				R *= x->shape.dims[d];
		}
	}
	void *v = dup_domain(x), *res = ir_malloc((size_t)O * 8);
	if (v && res && moved) {
		void *t = ir_malloc((size_t)ir_shape_numel(&x->shape) * 8);
		if (t)
			interp_copy_view(t, v, 8, r, dims, strides, 0);
		ir_free(v);
		v = t;
	}
	if (!v || !res) {
		ir_free(v);
		ir_free(res);
		return interp_nomem("a reduction");
	}
	for (int64_t o = 0; o < O; o++) {
		if (fl)
			((double *)res)[o] = red_f64(k, (const double *)v + o * R, R);
		else
			((int64_t *)res)[o] = red_i64(k, (const int64_t *)v + o * R, R, x->dtype);
	}
	store_domain(out, x, res);
	ir_free(v);
	ir_free(res);
	return 0;
}

/* Whether x replaces the current extreme b; NaN ranks as the extreme. */
static bool arg_better_f(double x, double b, bool is_max, bool last)
{
	if (b != b)
		return last && x != x;
	if (x != x)
		return true;
	if (x == b)
		return last;
	return is_max ? x > b : x < b;
}

static bool arg_better_i(int64_t x, int64_t b, bool is_max, bool last)
{
	if (x == b)
		return last;
	return is_max ? x > b : x < b;
}

int interp_arg(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	int64_t outer, L, inner, *res = out->data;
	bool is_max = n->op == IR_OP_ARGMAX, last = n->a.mode & IR_ARG_LAST;
	bool fl = ir_dtype_is_float(x->dtype);
	axis_view(&x->shape, n->a.axis, &outer, &L, &inner);
	void *v = dup_domain(x);
	if (!v)
		return -ENOMEM;
	const double *fv = v;
	const int64_t *iv = v;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t i = 0; i < inner; i++) {
			int64_t base = o * L * inner + i, best = 0;
			for (int64_t j = 1; j < L; j++) {
				int64_t e = base + j * inner, b = base + best * inner;
				if (fl ? arg_better_f(fv[e], fv[b], is_max, last)
				       : arg_better_i(iv[e], iv[b], is_max, last))
					best = j;
			}
			res[o * inner + i] = best;
		}
	}
	ir_free(v);
	return 0;
}

/* ---- window ops ---------------------------------------------------------- */

/* For every output position, the in-range input offsets of its window are
 * listed, then combined; out-of-range taps read -inf (max) or 0 (sum), which
 * is the same as skipping them. */
int interp_window(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_attrs *a = &n->a;
	const struct ir_tensor *x = &in[0];
	int r = x->shape.rank;
	bool is_max = n->op == IR_OP_WINDOW_MAX, fl = ir_dtype_is_float(x->dtype);
	int64_t P = ir_shape_numel(&out->shape), W = 1, st[IR_MAX_RANK];
	int64_t oidx[IR_MAX_RANK] = { 0 };
	for (int d = 0; d < r; d++)
		W *= a->window.v[d];
	interp_strides(&x->shape, st);
	void *v = dup_domain(x), *res = ir_malloc((size_t)P * 8);
	int64_t *offs = ir_malloc((size_t)W * sizeof *offs);
	if (!v || !res || !offs) {
		ir_free(v);
		ir_free(res);
		ir_free(offs);
		return interp_nomem("a window op");
	}
	for (int64_t p = 0; p < P; p++) {
		int64_t widx[IR_MAX_RANK] = { 0 }, nv = 0;
		for (int64_t w = 0; w < W; w++) {
			int64_t off = 0;
			for (int d = 0; d < r && off >= 0; d++) {
				int64_t pos = oidx[d] * a->stride.v[d] - a->pad_lo.v[d] + widx[d] * a->dilation.v[d];
				off = pos < 0 || pos >= x->shape.dims[d] ? -1 : off + pos * st[d];
			}
			if (off >= 0)
				offs[nv++] = off;
			interp_index_next(widx, a->window.v, r);
		}
		if (fl) {
			const double *fv = v;
			double acc = is_max ? -INFINITY : 0.0;
			for (int64_t j = 0; j < nv; j++)
				acc = is_max ? max_f(acc, fv[offs[j]]) : acc + fv[offs[j]];
			((double *)res)[p] = acc;
		} else {
			const int64_t *iv = v;
			int64_t acc = is_max ? interp_int_lowest(x->dtype) : 0;
			for (int64_t j = 0; j < nv; j++)
				acc = is_max ? (iv[offs[j]] > acc ? iv[offs[j]] : acc) : wrap_add(acc, iv[offs[j]]);
			((int64_t *)res)[p] = acc;
		}
		interp_index_next(oidx, out->shape.dims, r);
	}
	store_domain(out, x, res);
	ir_free(v);
	ir_free(res);
	ir_free(offs);
	return 0;
}

/* ---- scans and normalizations ---------------------------------------------- */

int interp_cumsum(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	bool excl = n->a.mode & IR_CUMSUM_EXCLUSIVE, rev = n->a.mode & IR_CUMSUM_REVERSE;
	bool fl = ir_dtype_is_float(x->dtype);
	int64_t outer, L, inner;
	axis_view(&x->shape, n->a.axis, &outer, &L, &inner);
	void *v = dup_domain(x);
	if (!v)
		return -ENOMEM;
	double *fv = v;
	int64_t *iv = v;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t i = 0; i < inner; i++) {
			double facc = 0;
			int64_t iacc = 0;
			for (int64_t t = 0; t < L; t++) {
				int64_t e = (o * L + (rev ? L - 1 - t : t)) * inner + i;
				if (fl) {
					double xv = fv[e];
					fv[e] = excl ? facc : facc + xv;
					facc += xv;
				} else {
					int64_t xv = iv[e];
					iv[e] = excl ? iacc : wrap_add(iacc, xv);
					iacc = wrap_add(iacc, xv);
				}
			}
		}
	}
	store_domain(out, x, v);
	ir_free(v);
	return 0;
}

int interp_softmax(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	int64_t outer, L, inner;
	axis_view(&in[0].shape, n->a.axis, &outer, &L, &inner);
	double *v = interp_dup_f64(&in[0]);
	if (!v)
		return -ENOMEM;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t i = 0; i < inner; i++) {
			double *row = v + o * L * inner + i, mx = -INFINITY, sum = 0;
			for (int64_t j = 0; j < L; j++)
				mx = row[j * inner] > mx ? row[j * inner] : mx;
			for (int64_t j = 0; j < L; j++) {
				row[j * inner] = exp(row[j * inner] - mx);
				sum += row[j * inner];
			}
			for (int64_t j = 0; j < L; j++)
				row[j * inner] /= sum;
		}
	}
	interp_store_f64(out, 0, ir_shape_numel(&out->shape), v);
	ir_free(v);
	return 0;
}

int interp_layer_norm(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	int64_t inner = interp_dims_prod(&in[0].shape, (int)n->a.axis, in[0].shape.rank);
	int64_t outer = inner ? ir_shape_numel(&in[0].shape) / inner : 0;
	double *v = interp_dup_f64(&in[0]), *scale = interp_dup_f64(&in[1]);
	double *bias = interp_dup_f64(&in[2]);
	if (!v || !scale || !bias) {
		ir_free(v);
		ir_free(scale);
		ir_free(bias);
		return -ENOMEM;
	}
	for (int64_t o = 0; o < outer; o++) {
		double *row = v + o * inner, mean = 0, var = 0;
		for (int64_t j = 0; j < inner; j++)
			mean += row[j];
		mean /= (double)inner;
		for (int64_t j = 0; j < inner; j++)
			var += (row[j] - mean) * (row[j] - mean);
		var /= (double)inner;
		double rstd = 1.0 / sqrt(var + n->a.eps);
		for (int64_t j = 0; j < inner; j++)
			row[j] = (row[j] - mean) * rstd * scale[j] + bias[j];
	}
	interp_store_f64(out, 0, ir_shape_numel(&out->shape), v);
	ir_free(v);
	ir_free(scale);
	ir_free(bias);
	return 0;
}

/* ---- topk ------------------------------------------------------------------ */

/* One row of keys: element j is at base + j * stride of f or i. */
struct keys {
	const double *f;
	const int64_t *i;
	int64_t base, stride;
	bool smallest;
};

/* Whether element a ranks strictly before b (NaN above every number). */
static bool ranks_before(const struct keys *k, int64_t a, int64_t b)
{
	int64_t ea = k->base + a * k->stride, eb = k->base + b * k->stride;
	if (k->f) {
		double x = k->f[ea], y = k->f[eb];
		if (x != x)
			return !k->smallest && y == y;
		if (y != y)
			return k->smallest;
		return k->smallest ? x < y : x > y;
	}
	return k->smallest ? k->i[ea] < k->i[eb] : k->i[ea] > k->i[eb];
}

/* Stable merge sort of idx[0..n-1] by ranks_before; tmp has n slots. */
static void merge_sort(const struct keys *k, int64_t *idx, int64_t *tmp, int64_t n)
{
	if (n < 2)
		return;
	int64_t h = n / 2, i = 0, j = h, o = 0;
	merge_sort(k, idx, tmp, h);
	merge_sort(k, idx + h, tmp, n - h);
	while (i < h && j < n)
		tmp[o++] = ranks_before(k, idx[j], idx[i]) ? idx[j++] : idx[i++];
	while (i < h)
		tmp[o++] = idx[i++];
	while (j < n)
		tmp[o++] = idx[j++];
	memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

int interp_topk(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	int64_t outer, L, inner, K = n->a.k, *oidx = out[1].data;
	size_t es = ir_dtype_size(x->dtype);
	axis_view(&x->shape, n->a.axis, &outer, &L, &inner);
	void *v = dup_domain(x);
	int64_t *idx = ir_malloc((size_t)L * sizeof *idx), *tmp = ir_malloc((size_t)L * sizeof *tmp);
	if (!v || !idx || !tmp) {
		ir_free(v);
		ir_free(idx);
		ir_free(tmp);
		return interp_nomem("topk");
	}
	struct keys k = { .stride = inner, .smallest = n->a.mode & IR_TOPK_SMALLEST };
	if (ir_dtype_is_float(x->dtype))
		k.f = v;
	else
		k.i = v;
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t i = 0; i < inner; i++) {
			k.base = o * L * inner + i;
			for (int64_t j = 0; j < L; j++)
				idx[j] = j;
			merge_sort(&k, idx, tmp, L);
			for (int64_t j = 0; j < K; j++) {
				int64_t dst = (o * K + j) * inner + i;
				memcpy((char *)out[0].data + dst * (int64_t)es,
				       (const char *)x->data + (k.base + idx[j] * inner) * (int64_t)es, es);
				oidx[dst] = idx[j];
			}
		}
	}
	ir_free(v);
	ir_free(idx);
	ir_free(tmp);
	return 0;
}

/* ---- gather and scatter ---------------------------------------------------- */

/* Indices as int64 with negative ones resolved against size; NULL with
 * -ERANGE (message names the index) or -ENOMEM in *rc. */
static int64_t *resolve_indices(const struct ir_tensor *t, int64_t axis, int64_t size, int *rc)
{
	int64_t n = ir_shape_numel(&t->shape);
	int64_t *idx = interp_dup_i64(t);
	*rc = -ENOMEM;
	if (!idx)
		return NULL;
	for (int64_t j = 0; j < n; j++) {
		if (idx[j] < -size || idx[j] >= size) {
			*rc = ir_errorf(-ERANGE,
					"index %lld (indices element %lld) is out of range for "
					"axis %lld of size %lld",
					(long long)idx[j], (long long)j, (long long)axis, (long long)size);
			ir_free(idx);
			return NULL;
		}
		if (idx[j] < 0)
			idx[j] += size;
	}
	*rc = 0;
	return idx;
}

int interp_gather(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	int64_t pre, A, post, I = ir_shape_numel(&in[1].shape);
	int rc;
	axis_view(&x->shape, n->a.axis, &pre, &A, &post);
	int64_t *idx = resolve_indices(&in[1], n->a.axis, A, &rc);
	if (!idx)
		return rc;
	size_t row = (size_t)post * ir_dtype_size(x->dtype);
	char *dst = out->data;
	for (int64_t p = 0; p < pre; p++)
		for (int64_t j = 0; j < I; j++, dst += row)
			memcpy(dst, (const char *)x->data + (size_t)(p * A + idx[j]) * row, row);
	ir_free(idx);
	return 0;
}

/* Combines update rows into the result one index at a time, each step
 * rounded to the dtype, so duplicates accumulate in index order. */
static int scatter_combine(int64_t mode, struct ir_tensor *out, const struct ir_tensor *up, const int64_t *idx,
			   int64_t I, int64_t R)
{
	bool fl = ir_dtype_is_float(out->dtype);
	void *ov = ir_malloc((size_t)R * 8), *uv = ir_malloc((size_t)R * 8);
	if (!ov || !uv) {
		ir_free(ov);
		ir_free(uv);
		return interp_nomem("scatter");
	}
	double *fo = ov, *fu = uv;
	int64_t *io = ov, *iu = uv;
	for (int64_t j = 0; j < I; j++) {
		if (fl) {
			interp_load_f64(out, idx[j] * R, R, fo);
			interp_load_f64(up, j * R, R, fu);
		} else {
			interp_load_i64(out, idx[j] * R, R, io);
			interp_load_i64(up, j * R, R, iu);
		}
		for (int64_t e = 0; e < R; e++) {
			switch (mode) {
			case IR_SCATTER_ADD:
				if (fl)
					fo[e] += fu[e];
				else
					io[e] = wrap_add(io[e], iu[e]);
				break;
			case IR_SCATTER_MUL:
				if (fl)
					fo[e] *= fu[e];
				else
					io[e] = wrap_mul(io[e], iu[e]);
				break;
			case IR_SCATTER_MAX:
				if (fl)
					fo[e] = max_f(fo[e], fu[e]);
				else
					io[e] = iu[e] > io[e] ? iu[e] : io[e];
				break;
			case IR_SCATTER_MIN:
				if (fl)
					fo[e] = min_f(fo[e], fu[e]);
				else
					io[e] = iu[e] < io[e] ? iu[e] : io[e];
				break;
			default:
				IR_ASSERT(!"bad scatter mode");
			}
		}
		if (fl)
			interp_store_f64(out, idx[j] * R, R, fo);
		else
			interp_store_i64(out, idx[j] * R, R, io);
	}
	ir_free(ov);
	ir_free(uv);
	return 0;
}

int interp_scatter(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0], *up = &in[2];
	int64_t N = x->shape.dims[0], R = interp_dims_prod(&x->shape, 1, x->shape.rank);
	int64_t I = ir_shape_numel(&in[1].shape);
	int rc;
	memcpy(out->data, x->data, ir_tensor_bytes(x));
	int64_t *idx = resolve_indices(&in[1], 0, N, &rc);
	if (!idx)
		return rc;
	if (n->a.mode == IR_SCATTER_NONE) {
		size_t row = (size_t)R * ir_dtype_size(x->dtype);
		for (int64_t j = 0; j < I; j++)
			memcpy((char *)out->data + (size_t)idx[j] * row, (const char *)up->data + (size_t)j * row, row);
	} else {
		rc = scatter_combine(n->a.mode, out, up, idx, I, R);
	}
	ir_free(idx);
	return rc;
}

/* ---- data movement --------------------------------------------------------- */

/* Source index along a dim of size s for padded position p - lo, or -1 for
 * the constant. */
static int64_t pad_source(int64_t p, int64_t s, int64_t mode)
{
	if (p >= 0 && p < s)
		return p;
	if (mode == IR_PAD_EDGE)
		return p < 0 ? 0 : s - 1;
	if (mode != IR_PAD_REFLECT || s == 0)
		return -1;
	if (s == 1)
		return 0;
	int64_t period = 2 * (s - 1), q = ((p % period) + period) % period;
	return q >= s ? period - q : q;
}

/* Every output element reads through a per-dim map of source indices
 * (-1: the constant); the unpadded middle of each row is one memcpy. */
int interp_pad(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	const struct ir_shape *os = &out->shape;
	int r = x->shape.rank;
	size_t es = ir_dtype_size(x->dtype);
	uint64_t fill_buf = 0;
	struct ir_tensor fill = { .dtype = x->dtype, .shape = { .rank = 0 }, .data = &fill_buf };
	int64_t st[IR_MAX_RANK], oidx[IR_MAX_RANK] = { 0 }, *map[IR_MAX_RANK], total = 0;
	if (ir_shape_numel(os) == 0)
		return 0;
	if (r == 0) {
		memcpy(out->data, x->data, es);
		return 0;
	}
	interp_store_f64(&fill, 0, 1, &n->a.value);
	for (int d = 0; d < r; d++)
		total += os->dims[d];
	int64_t *maps = ir_malloc((size_t)total * sizeof *maps);
	if (!maps)
		return interp_nomem("pad");
	map[0] = maps;
	for (int d = 0; d < r; d++) {
		if (d > 0)
			map[d] = map[d - 1] + os->dims[d - 1];
		for (int64_t o = 0; o < os->dims[d]; o++)
			map[d][o] = pad_source(o - n->a.pad_lo.v[d], x->shape.dims[d], n->a.mode);
	}
	interp_strides(&x->shape, st);
	int64_t L = os->dims[r - 1], lo = n->a.pad_lo.v[r - 1], s = x->shape.dims[r - 1];
	int64_t rows = ir_shape_numel(os) / L;
	char *dst = out->data;
	for (int64_t row = 0; row < rows; row++, dst += L * (int64_t)es) {
		int64_t base = 0;
		for (int d = 0; d < r - 1 && base >= 0; d++)
			base = map[d][oidx[d]] < 0 ? -1 : base + map[d][oidx[d]] * st[d];
		const char *src = (const char *)x->data + (base < 0 ? 0 : base) * (int64_t)es;
		for (int64_t o = 0; o < L; o++) {
			if (base >= 0 && o == lo && s > 0) {
				memcpy(dst + o * (int64_t)es, src + 0, (size_t)s * es);
				o += s - 1;
				continue;
			}
			int64_t m = base < 0 ? -1 : map[r - 1][o];
			memcpy(dst + o * (int64_t)es, m < 0 ? (const char *)&fill_buf : src + m * (int64_t)es, es);
		}
		interp_index_next(oidx, os->dims, r - 1);
	}
	ir_free(maps);
	return 0;
}

int interp_reverse(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	int64_t st[IR_MAX_RANK], off = 0;
	interp_strides(&x->shape, st);
	for (int i = 0; i < n->a.axes.n; i++) {
		int64_t d = n->a.axes.v[i];
		off += (x->shape.dims[d] - 1) * st[d];
		st[d] = -st[d];
	}
	interp_copy_view(out->data, x->data, ir_dtype_size(x->dtype), x->shape.rank, x->shape.dims, st, off);
	return 0;
}

int interp_concat(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	int64_t outer = interp_dims_prod(&out->shape, 0, (int)n->a.axis);
	size_t es = ir_dtype_size(out->dtype);
	char *dst = out->data;
	for (int64_t o = 0; o < outer; o++) {
		for (int k = 0; k < n->nin; k++) {
			size_t chunk = (size_t)interp_dims_prod(&in[k].shape, (int)n->a.axis, in[k].shape.rank) * es;
			memcpy(dst, (const char *)in[k].data + (size_t)o * chunk, chunk);
			dst += chunk;
		}
	}
	return 0;
}

int interp_slice(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	int64_t st[IR_MAX_RANK], off = 0;
	interp_strides(&x->shape, st);
	for (int d = 0; d < x->shape.rank; d++) {
		off += n->a.start.v[d] * st[d];
		st[d] *= n->a.stride.v[d];
	}
	interp_copy_view(out->data, x->data, ir_dtype_size(x->dtype), out->shape.rank, out->shape.dims, st, off);
	return 0;
}

int interp_transpose(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	int64_t st[IR_MAX_RANK], strides[IR_MAX_RANK];
	interp_strides(&x->shape, st);
	for (int i = 0; i < out->shape.rank; i++)
		strides[i] = st[n->a.axes.v[i]];
	interp_copy_view(out->data, x->data, ir_dtype_size(x->dtype), out->shape.rank, out->shape.dims, strides, 0);
	return 0;
}

int interp_broadcast(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0];
	int64_t st[IR_MAX_RANK], strides[IR_MAX_RANK] = { 0 };
	interp_strides(&x->shape, st);
	for (int i = 0; i < x->shape.rank; i++)
		if (x->shape.dims[i] != 1)
			strides[n->a.axes.v[i]] = st[i];
	interp_copy_view(out->data, x->data, ir_dtype_size(x->dtype), out->shape.rank, out->shape.dims, strides, 0);
	return 0;
}

int interp_iota(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	int64_t outer, L, inner, e = 0;
	(void)in; /* a source: no operands */
	axis_view(&out->shape, n->a.axis, &outer, &L, &inner);
	int64_t *v = ir_malloc((size_t)ir_shape_numel(&out->shape) * sizeof *v);
	if (!v)
		return interp_nomem("iota");
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < L; j++)
			for (int64_t i = 0; i < inner; i++)
				v[e++] = j;
	interp_store_i64(out, 0, e, v);
	ir_free(v);
	return 0;
}

int interp_constant(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	(void)in; /* a source: no operands */
	memcpy(out->data, n->a.data, ir_tensor_bytes(out));
	return 0;
}
