/*
 * interp_dot.c: DOT and CONV in the reference interpreter.
 *
 * DOT: each operand becomes batched row-major matrices, lhs A [B, M, K] and
 * rhs R [B, K, N] (B, M, K, N the products of the batch, free and
 * contracting dims, contracting dims paired in list order). An operand that
 * already has that layout, or its per-batch transpose, is used in place
 * (gemm's trans flags); any other is permuted once. Then one gemm per batch
 * writes the result, whose layout [batch, lhs free, rhs free] is exactly
 * [B, M, N]. Example: lhs [2,3,4,5], rhs [4,5,2,6], lhs_batch {2}, rhs_batch
 * {0}, lhs_contract {3,0}, rhs_contract {1,2}: A is lhs permuted to
 * [4 | 3 | 5,2], R is rhs permuted to [4 | 5,2 | 6], result [4,3,6].
 *
 * CONV: im2col per image and group, then one gemm: out[n, g] (Og x P) =
 * W[g] (Og x Cg*KK) * col (Cg*KK x P), where KK is the kernel volume and P
 * the number of output positions. The column gather uses a table, built
 * once per node, of which input offset each (kernel tap, output position)
 * reads (-1 in the padding).
 *
 * Compute domains: f32 (also for f16/bf16, converted exactly, result
 * rounded once from f32), f64, and int64 (integers and bool: a plain loop
 * with wrap-around; conv is float-only by ir_infer).
 */
#include <errno.h>
#include <string.h>

#include <cblas.h>

#include "kernels/interp_internal.h"

enum dom { DOM_F32, DOM_F64, DOM_I64 };

static enum dom domain_of(enum ir_dtype t)
{
	switch (t) {
	case IR_F32:
	case IR_F16:
	case IR_BF16:
		return DOM_F32;
	case IR_F64:
		return DOM_F64;
	case IR_I64:
	case IR_I32:
	case IR_I8:
	case IR_U8:
	case IR_BOOL:
		return DOM_I64;
	case IR_DTYPE_COUNT:
		break;
	}
	IR_ASSERT(!"bad dtype");
}

static size_t dom_size(enum dom d)
{
	return d == DOM_F32 ? sizeof(float) : 8;
}

/* The dtype whose element layout is the domain's. */
static enum ir_dtype dom_dtype(enum dom d)
{
	return d == DOM_F32 ? IR_F32 : d == DOM_F64 ? IR_F64 : IR_I64;
}

/* t's elements in the domain's type: t->data itself when it already is,
 * else a converted copy returned through *own too. NULL when out of memory. */
static const void *domain_data(const struct ir_tensor *t, enum dom d, void **own)
{
	int64_t n = ir_shape_numel(&t->shape);
	*own = NULL;
	if (t->dtype == dom_dtype(d))
		return t->data;
	switch (d) {
	case DOM_F32: {
		float *f = ir_malloc((size_t)n * sizeof *f);
		double buf[INTERP_BLOCK];
		if (!f) {
			interp_nomem("an f32 copy of an operand");
			return NULL;
		}
		for (int64_t off = 0; off < n; off += INTERP_BLOCK) {
			int64_t m = n - off < INTERP_BLOCK ? n - off : INTERP_BLOCK;
			interp_load_f64(t, off, m, buf);
			for (int64_t i = 0; i < m; i++)
				f[off + i] = (float)buf[i]; /* exact for f16/bf16 */
		}
		return *own = f;
	}
	case DOM_F64:
		return *own = interp_dup_f64(t);
	case DOM_I64:
		return *own = interp_dup_i64(t);
	}
	IR_ASSERT(!"bad domain");
}

/* Stores a result computed in the domain into out (a no-op when the
 * domain buffer is out->data). */
static void domain_store(struct ir_tensor *out, enum dom d, const void *res)
{
	int64_t n = ir_shape_numel(&out->shape);
	if (res == out->data)
		return;
	if (d == DOM_I64) {
		interp_store_i64(out, 0, n, res);
		return;
	}
	IR_ASSERT(d == DOM_F32);
	double buf[INTERP_BLOCK];
	const float *f = res;
	for (int64_t off = 0; off < n; off += INTERP_BLOCK) {
		int64_t m = n - off < INTERP_BLOCK ? n - off : INTERP_BLOCK;
		for (int64_t i = 0; i < m; i++)
			buf[i] = f[off + i];
		interp_store_f64(out, off, m, buf);
	}
}

static int check_blas(const char *op, int64_t m, int64_t n, int64_t k)
{
	if ((int64_t)(blasint)m != m || (int64_t)(blasint)n != n || (int64_t)(blasint)k != k)
		return ir_errorf(-EOVERFLOW,
				 "%s: matrix sizes M=%lld N=%lld K=%lld exceed the BLAS "
				 "integer range",
				 op, (long long)m, (long long)n, (long long)k);
	return 0;
}

/* ---- dot ----------------------------------------------------------------- */

/* One dot operand as [B, rows, cols] matrices (or [B, cols, rows] when
 * trans) in the domain's element type. */
struct operand {
	const void *p;
	void *own; /* buffer to free, or NULL */
	bool trans;
};

static bool is_identity(const int64_t *perm, int rank)
{
	for (int i = 0; i < rank; i++)
		if (perm[i] != i)
			return false;
	return true;
}

/* Appends list l to perm. */
static int append(int64_t *perm, int n, const struct ir_ilist *l)
{
	for (int i = 0; i < l->n; i++)
		perm[n++] = l->v[i];
	return n;
}

/* Orders t's dims as batch, then first, then second, where the free dims
 * (in operand order) stand in for whichever of first/second is NULL. */
static void order(const struct ir_tensor *t, const struct ir_ilist *batch, const struct ir_ilist *contract,
		  bool contract_first, int64_t *perm)
{
	unsigned used = 0;
	int n = 0, nfree = 0;
	int64_t freed[IR_MAX_RANK];
	for (int i = 0; i < batch->n; i++)
		used |= 1u << batch->v[i];
	for (int i = 0; i < contract->n; i++)
		used |= 1u << contract->v[i];
	for (int d = 0; d < t->shape.rank; d++)
		if (!(used & (1u << d)))
			freed[nfree++] = d;
	n = append(perm, n, batch);
	if (contract_first)
		n = append(perm, n, contract);
	for (int i = 0; i < nfree; i++)
		perm[n++] = freed[i];
	if (!contract_first)
		n = append(perm, n, contract);
	IR_ASSERT(n == t->shape.rank);
}

/* lhs wants [B, M, K] (contract last), rhs [B, K, N] (contract first). */
static int prepare(const struct ir_tensor *t, enum dom d, const struct ir_ilist *batch, const struct ir_ilist *contract,
		   bool is_lhs, struct operand *op)
{
	int64_t want[IR_MAX_RANK], alt[IR_MAX_RANK], st[IR_MAX_RANK];
	int64_t dims[IR_MAX_RANK], strides[IR_MAX_RANK];
	int rank = t->shape.rank;
	void *src_own;
	const void *src = domain_data(t, d, &src_own);
	if (!src)
		return -ENOMEM;
	order(t, batch, contract, !is_lhs, want);
	order(t, batch, contract, is_lhs, alt);
	op->own = src_own;
	op->p = src;
	op->trans = false;
	if (is_identity(want, rank))
		return 0;
	if (d != DOM_I64 && is_identity(alt, rank)) {
		op->trans = true;
		return 0;
	}
	void *buf = ir_malloc((size_t)ir_shape_numel(&t->shape) * dom_size(d));
	if (!buf) {
		ir_free(src_own);
		op->own = NULL;
		return interp_nomem("a permuted dot operand");
	}
	interp_strides(&t->shape, st);
	for (int i = 0; i < rank; i++) {
		dims[i] = t->shape.dims[want[i]];
		strides[i] = st[want[i]];
	}
	interp_copy_view(buf, src, dom_size(d), rank, dims, strides, 0);
	ir_free(src_own);
	op->p = op->own = buf;
	return 0;
}

/* Product of the dims of t in neither list. */
static int64_t free_prod(const struct ir_tensor *t, const struct ir_ilist *batch, const struct ir_ilist *contract)
{
	unsigned used = 0;
	int64_t p = 1;
	for (int i = 0; i < batch->n; i++)
		used |= 1u << batch->v[i];
	for (int i = 0; i < contract->n; i++)
		used |= 1u << contract->v[i];
	for (int i = 0; i < t->shape.rank; i++)
		if (!(used & (1u << i)))
			p *= t->shape.dims[i];
	return p;
}

static void gemm_int(const int64_t *a, const int64_t *b, int64_t *c, int64_t M, int64_t N, int64_t K)
{
	for (int64_t m = 0; m < M; m++) {
		int64_t *cr = c + m * N;
		for (int64_t k = 0; k < K; k++) {
			uint64_t x = (uint64_t)a[m * K + k];
			const int64_t *br = b + k * N;
			for (int64_t n = 0; n < N; n++)
				cr[n] = (int64_t)((uint64_t)cr[n] + x * (uint64_t)br[n]);
		}
	}
}

int interp_dot(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_attrs *a = &n->a;
	const struct ir_tensor *l = &in[0], *r = &in[1];
	enum dom d = domain_of(l->dtype);
	int64_t B = 1, K = 1;
	int64_t M = free_prod(l, &a->lhs_batch, &a->lhs_contract);
	int64_t N = free_prod(r, &a->rhs_batch, &a->rhs_contract);
	for (int i = 0; i < a->lhs_batch.n; i++)
		B *= l->shape.dims[a->lhs_batch.v[i]];
	for (int i = 0; i < a->lhs_contract.n; i++)
		K *= l->shape.dims[a->lhs_contract.v[i]];
	if (B == 0 || M == 0 || N == 0 || K == 0)
		return 0; /* out is already zero (or empty) */
	int rc = check_blas("dot", M, N, K);
	if (rc < 0)
		return rc;

	struct operand lo = { 0 }, ro = { 0 };
	void *res = NULL;
	rc = prepare(l, d, &a->lhs_batch, &a->lhs_contract, true, &lo);
	if (rc == 0)
		rc = prepare(r, d, &a->rhs_batch, &a->rhs_contract, false, &ro);
	if (rc < 0)
		goto done;
	res = out->dtype == dom_dtype(d) ? out->data : ir_calloc((size_t)(B * M * N), dom_size(d));
	if (!res) {
		rc = interp_nomem("a dot result");
		goto done;
	}
	for (int64_t b = 0; b < B; b++) {
		enum CBLAS_TRANSPOSE ta = lo.trans ? CblasTrans : CblasNoTrans;
		enum CBLAS_TRANSPOSE tb = ro.trans ? CblasTrans : CblasNoTrans;
		int64_t lda = lo.trans ? M : K, ldb = ro.trans ? K : N;
		switch (d) {
		case DOM_F32:
			cblas_sgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, 1.0f,
				    (const float *)lo.p + b * M * K, (blasint)lda, (const float *)ro.p + b * K * N,
				    (blasint)ldb, 0.0f, (float *)res + b * M * N, (blasint)N);
			break;
		case DOM_F64:
			cblas_dgemm(CblasRowMajor, ta, tb, (blasint)M, (blasint)N, (blasint)K, 1.0,
				    (const double *)lo.p + b * M * K, (blasint)lda, (const double *)ro.p + b * K * N,
				    (blasint)ldb, 0.0, (double *)res + b * M * N, (blasint)N);
			break;
		case DOM_I64:
			gemm_int((const int64_t *)lo.p + b * M * K, (const int64_t *)ro.p + b * K * N,
				 (int64_t *)res + b * M * N, M, N, K);
			break;
		}
	}
	domain_store(out, d, res);
done:
	if (res != out->data)
		ir_free(res);
	ir_free(lo.own);
	ir_free(ro.own);
	return rc;
}

/* ---- conv ---------------------------------------------------------------- */

/* tab[r * P + p]: offset in one input channel plane read by kernel tap r at
 * output position p (both row-major over the spatial dims), or -1. */
static int64_t *conv_table(const struct ir_shape *xs, const struct ir_shape *ws, const struct ir_shape *os,
			   const struct ir_attrs *a, int64_t KK, int64_t P)
{
	int k = xs->rank - 2;
	int64_t kidx[IR_MAX_RANK] = { 0 }, sst[IR_MAX_RANK];
	int64_t *tab = ir_malloc((size_t)(KK * P) * sizeof *tab);
	if (!tab) {
		interp_nomem("a convolution index table");
		return NULL;
	}
	int64_t st = 1;
	for (int i = k - 1; i >= 0; i--) {
		sst[i] = st;
		st *= xs->dims[i + 2];
	}
	for (int64_t r = 0; r < KK; r++) {
		int64_t oidx[IR_MAX_RANK] = { 0 };
		for (int64_t p = 0; p < P; p++) {
			int64_t off = 0;
			for (int i = 0; i < k && off >= 0; i++) {
				int64_t pos = oidx[i] * a->stride.v[i] - a->pad_lo.v[i] + kidx[i] * a->dilation.v[i];
				off = pos < 0 || pos >= xs->dims[i + 2] ? -1 : off + pos * sst[i];
			}
			tab[r * P + p] = off;
			interp_index_next(oidx, os->dims + 2, k);
		}
		interp_index_next(kidx, ws->dims + 2, k);
	}
	return tab;
}

int interp_conv(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	const struct ir_tensor *x = &in[0], *w = &in[1];
	enum dom d = domain_of(x->dtype);
	int64_t N = x->shape.dims[0], C = x->shape.dims[1], O = w->shape.dims[0];
	int64_t G = n->a.groups, Cg = C / G, Og = O / G;
	int64_t S = interp_dims_prod(&x->shape, 2, x->shape.rank);
	int64_t KK = interp_dims_prod(&w->shape, 2, w->shape.rank);
	int64_t P = interp_dims_prod(&out->shape, 2, out->shape.rank);
	int64_t CK = Cg * KK;
	IR_ASSERT(d != DOM_I64);
	if (ir_shape_numel(&out->shape) == 0 || CK == 0)
		return 0;
	int rc = check_blas("conv", Og, P, CK);
	if (rc < 0)
		return rc;

	void *xown = NULL, *wown = NULL, *res = NULL, *col = NULL;
	const void *xp = domain_data(x, d, &xown), *wp = xp ? domain_data(w, d, &wown) : NULL;
	int64_t *tab = wp ? conv_table(&x->shape, &w->shape, &out->shape, &n->a, KK, P) : NULL;
	if (!tab) {
		rc = -ENOMEM;
		goto done;
	}
	col = ir_malloc((size_t)(CK * P) * dom_size(d));
	res = out->dtype == dom_dtype(d) ? out->data : ir_calloc((size_t)ir_shape_numel(&out->shape), dom_size(d));
	if (!col || !res) {
		rc = interp_nomem("convolution buffers");
		goto done;
	}
	for (int64_t b = 0; b < N; b++) {
		for (int64_t g = 0; g < G; g++) {
			int64_t xoff = (b * C + g * Cg) * S, ooff = (b * O + g * Og) * P;
			int64_t woff = g * Og * CK;
			if (d == DOM_F32) {
				const float *xs = (const float *)xp + xoff;
				float *cs = col;
				for (int64_t c = 0; c < Cg; c++, xs += S)
					for (int64_t i = 0; i < KK * P; i++)
						*cs++ = tab[i] < 0 ? 0.0f : xs[tab[i]];
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)Og, (blasint)P,
					    (blasint)CK, 1.0f, (const float *)wp + woff, (blasint)CK, col, (blasint)P,
					    0.0f, (float *)res + ooff, (blasint)P);
			} else {
				const double *xs = (const double *)xp + xoff;
				double *cs = col;
				for (int64_t c = 0; c < Cg; c++, xs += S)
					for (int64_t i = 0; i < KK * P; i++)
						*cs++ = tab[i] < 0 ? 0.0 : xs[tab[i]];
				cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)Og, (blasint)P,
					    (blasint)CK, 1.0, (const double *)wp + woff, (blasint)CK, col, (blasint)P,
					    0.0, (double *)res + ooff, (blasint)P);
			}
		}
	}
	domain_store(out, d, res);
done:
	if (res != out->data)
		ir_free(res);
	ir_free(col);
	ir_free(tab);
	ir_free(xown);
	ir_free(wown);
	return rc;
}
