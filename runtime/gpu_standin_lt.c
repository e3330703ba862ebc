/*
 * gpu_standin_lt.c: cuBLASLt's matmul in the checking stand-in for a GPU
 * (gpu_standin.h). Descriptors and layouts are checked when the heuristic
 * is asked and at every matmul (types alike, op(A) m x k times op(B) k x n
 * into C m x n, leading dimensions and batch strides), every matrix's
 * bytes against the live allocations; the product runs, column-major as
 * cuBLASLt's, by the host's BLAS in f32 (f64 for f64 data) when the
 * stream reaches it.
 */
#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/gpu_standin.h"

#define LT_LIVE 0x6c746c76u
#define LT_ALGO 0x70636373746e646eull

struct cublasLtContext {
	uint32_t magic;
};

struct lt_desc {
	uint32_t magic;
	cublasComputeType_t ct;
	cudaDataType_t scale;
	cublasOperation_t ta, tb;
};

struct lt_layout {
	uint32_t magic;
	cudaDataType_t t;
	uint64_t rows, cols;
	int64_t ld, stride;
	int32_t batch;
};

struct lt_pref {
	uint32_t magic;
	uint64_t ws;
};

static struct si_why why;

static const char *status_name(cublasStatus_t s)
{
	return s == CUBLAS_STATUS_SUCCESS            ? "success"
	       : s == CUBLAS_STATUS_NOT_INITIALIZED  ? "the library was not initialized"
	       : s == CUBLAS_STATUS_ALLOC_FAILED     ? "the resource allocation failed"
	       : s == CUBLAS_STATUS_INVALID_VALUE    ? "an invalid numeric value was used as an argument"
	       : s == CUBLAS_STATUS_NOT_SUPPORTED    ? "the functionality requested is not supported"
	       : s == CUBLAS_STATUS_EXECUTION_FAILED ? "the GPU program failed to execute"
						     : "an error";
}

static cublasStatus_t lt_fail(cublasStatus_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cublasStatus_t lt_fail(cublasStatus_t s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	si_why_set(&why, (int)s, status_name(s), fmt, ap);
	va_end(ap);
	return s;
}

/* s, with the driver's message for error e as its text. */
static cublasStatus_t lt_pass(cublasStatus_t s, int e)
{
	return (cublasStatus_t)si_why_pass(&why, (int)s, e);
}

static const char *status_string(cublasStatus_t s)
{
	return si_why_text(&why, (int)s, status_name(s));
}

static size_t type_size(cudaDataType_t t)
{
	return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : t == CUDA_R_16F || t == CUDA_R_16BF ? 2 : 0;
}

static cublasStatus_t create(cublasLtHandle_t *h)
{
	struct cublasLtContext *c = ir_calloc(1, sizeof *c);
	if (!c)
		return lt_fail(CUBLAS_STATUS_ALLOC_FAILED, "out of host memory");
	c->magic = LT_LIVE;
	*h = c;
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t destroy(cublasLtHandle_t h)
{
	if (!h || h->magic != LT_LIVE)
		return lt_fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtDestroy of a handle that is not live");
	h->magic = 0;
	ir_free(h);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t desc_create(cublasLtMatmulDesc_t *out, cublasComputeType_t ct, cudaDataType_t scale)
{
	if (ct != CUBLAS_COMPUTE_32F && ct != CUBLAS_COMPUTE_32F_FAST_TF32 && ct != CUBLAS_COMPUTE_64F)
		return lt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "compute type %d", (int)ct);
	struct lt_desc *d = ir_calloc(1, sizeof *d);
	if (!d)
		return lt_fail(CUBLAS_STATUS_ALLOC_FAILED, "out of host memory");
	*d = (struct lt_desc){ LT_LIVE, ct, scale, CUBLAS_OP_N, CUBLAS_OP_N };
	*out = (cublasLtMatmulDesc_t)(void *)d;
	return CUBLAS_STATUS_SUCCESS;
}

static struct lt_desc *desc_of(cublasLtMatmulDesc_t x)
{
	struct lt_desc *d = (struct lt_desc *)(void *)x;
	return d && d->magic == LT_LIVE ? d : NULL;
}

static cublasStatus_t desc_destroy(cublasLtMatmulDesc_t x)
{
	struct lt_desc *d = desc_of(x);
	if (!d)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE,
			       "cublasLtMatmulDescDestroy of a descriptor that is not live");
	d->magic = 0;
	ir_free(d);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t desc_set(cublasLtMatmulDesc_t x, cublasLtMatmulDescAttributes_t a, const void *v, size_t n)
{
	struct lt_desc *d = desc_of(x);
	if (!d || !v)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE,
			       "cublasLtMatmulDescSetAttribute on a descriptor that is not live");
	if ((a == CUBLASLT_MATMUL_DESC_TRANSA || a == CUBLASLT_MATMUL_DESC_TRANSB) && n == sizeof(cublasOperation_t)) {
		cublasOperation_t op;
		memcpy(&op, v, n);
		if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
			return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "transpose operation %d", (int)op);
		*(a == CUBLASLT_MATMUL_DESC_TRANSA ? &d->ta : &d->tb) = op;
		return CUBLAS_STATUS_SUCCESS;
	}
	return lt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "matmul descriptor attribute %d (%zu bytes)", (int)a, n);
}

static cublasStatus_t layout_create(cublasLtMatrixLayout_t *out, cudaDataType t, uint64_t rows, uint64_t cols,
				    int64_t ld)
{
	if (!type_size(t))
		return lt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "data type %d", (int)t);
	if (!rows || !cols || ld < (int64_t)rows)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "a %llu x %llu layout with leading dimension %lld",
			       (unsigned long long)rows, (unsigned long long)cols, (long long)ld);
	struct lt_layout *l = ir_calloc(1, sizeof *l);
	if (!l)
		return lt_fail(CUBLAS_STATUS_ALLOC_FAILED, "out of host memory");
	*l = (struct lt_layout){ LT_LIVE, t, rows, cols, ld, 0, 1 };
	*out = (cublasLtMatrixLayout_t)(void *)l;
	return CUBLAS_STATUS_SUCCESS;
}

static struct lt_layout *layout_of(cublasLtMatrixLayout_t x)
{
	struct lt_layout *l = (struct lt_layout *)(void *)x;
	return l && l->magic == LT_LIVE ? l : NULL;
}

static cublasStatus_t layout_destroy(cublasLtMatrixLayout_t x)
{
	struct lt_layout *l = layout_of(x);
	if (!l)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatrixLayoutDestroy of a layout that is not live");
	l->magic = 0;
	ir_free(l);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t layout_set(cublasLtMatrixLayout_t x, cublasLtMatrixLayoutAttribute_t a, const void *v, size_t n)
{
	struct lt_layout *l = layout_of(x);
	if (!l || !v)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE,
			       "cublasLtMatrixLayoutSetAttribute on a layout that is not live");
	if (a == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && n == sizeof(int32_t)) {
		memcpy(&l->batch, v, n);
		return l->batch >= 1 ? CUBLAS_STATUS_SUCCESS
				     : lt_fail(CUBLAS_STATUS_INVALID_VALUE, "batch count %d", (int)l->batch);
	}
	if (a == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET && n == sizeof(int64_t)) {
		memcpy(&l->stride, v, n);
		return l->stride >= 0 ? CUBLAS_STATUS_SUCCESS
				      : lt_fail(CUBLAS_STATUS_INVALID_VALUE, "batch stride %lld", (long long)l->stride);
	}
	return lt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "matrix layout attribute %d (%zu bytes)", (int)a, n);
}

static cublasStatus_t pref_create(cublasLtMatmulPreference_t *out)
{
	struct lt_pref *p = ir_calloc(1, sizeof *p);
	if (!p)
		return lt_fail(CUBLAS_STATUS_ALLOC_FAILED, "out of host memory");
	p->magic = LT_LIVE;
	*out = (cublasLtMatmulPreference_t)(void *)p;
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t pref_destroy(cublasLtMatmulPreference_t x)
{
	struct lt_pref *p = (struct lt_pref *)(void *)x;
	if (!p || p->magic != LT_LIVE)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmulPreferenceDestroy of one that is not live");
	p->magic = 0;
	ir_free(p);
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t pref_set(cublasLtMatmulPreference_t x, cublasLtMatmulPreferenceAttributes_t a, const void *v,
			       size_t n)
{
	struct lt_pref *p = (struct lt_pref *)(void *)x;
	if (!p || p->magic != LT_LIVE || !v)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE,
			       "cublasLtMatmulPreferenceSetAttribute on one that is not live");
	if (a == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && n == sizeof(uint64_t)) {
		memcpy(&p->ws, v, n);
		return CUBLAS_STATUS_SUCCESS;
	}
	return lt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "preference attribute %d", (int)a);
}

/* The matmul's shape, checked: op(A) m x k, op(B) k x n, C and D m x n. */
struct lt_shape {
	const struct lt_desc *d;
	const struct lt_layout *a, *b, *c, *dl;
	int64_t m, n, k, batch;
};

static cublasStatus_t shape(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
			    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, struct lt_shape *s)
{
	*s = (struct lt_shape){ desc_of(desc), layout_of(a), layout_of(b), layout_of(c), layout_of(d), 0, 0, 0, 0 };
	if (!s->d || !s->a || !s->b || !s->c || !s->dl)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "a descriptor or layout that is not live");
	if (s->a->t != s->b->t || s->a->t != s->c->t || s->c->t != s->dl->t)
		return lt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "A, B, C and D of types %d, %d, %d and %d", (int)s->a->t,
			       (int)s->b->t, (int)s->c->t, (int)s->dl->t);
	bool ta = s->d->ta == CUBLAS_OP_T, tb = s->d->tb == CUBLAS_OP_T;
	int64_t m = (int64_t)(ta ? s->a->cols : s->a->rows), k = (int64_t)(ta ? s->a->rows : s->a->cols);
	int64_t kb = (int64_t)(tb ? s->b->cols : s->b->rows), n = (int64_t)(tb ? s->b->rows : s->b->cols);
	if (k != kb || (int64_t)s->c->rows != m || (int64_t)s->c->cols != n || s->dl->rows != s->c->rows ||
	    s->dl->cols != s->c->cols || s->dl->ld != s->c->ld)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE,
			       "op(A) is %lld x %lld, op(B) %lld x %lld, C %llu x %llu: they do not multiply",
			       (long long)m, (long long)k, (long long)kb, (long long)n, (unsigned long long)s->c->rows,
			       (unsigned long long)s->c->cols);
	if (s->a->batch != s->c->batch || s->b->batch != s->c->batch || s->dl->batch != s->c->batch)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "batch counts %d, %d, %d differ", (int)s->a->batch,
			       (int)s->b->batch, (int)s->c->batch);
	/* operands may overlap across a batch (stride 0 broadcasts), the result may not */
	if (s->c->batch > 1 && s->c->stride < s->c->ld * (int64_t)s->c->cols)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "the result's batch stride %lld overlaps its matrices",
			       (long long)s->c->stride);
	s->m = m;
	s->n = n;
	s->k = k;
	s->batch = s->c->batch;
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t heuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
				cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
				cublasLtMatmulPreference_t pref, int want, cublasLtMatmulHeuristicResult_t *res,
				int *got)
{
	struct lt_shape s;
	if (!h || h->magic != LT_LIVE)
		return lt_fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtMatmulAlgoGetHeuristic without a live handle");
	cublasStatus_t st = shape(desc, a, b, c, d, &s);
	if (st != CUBLAS_STATUS_SUCCESS)
		return st;
	if (want < 1 || !res || !got)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "asked for %d algorithms", want);
	*got = want < 3 ? want : 3; /* as a GPU's: several, to choose among */
	for (int i = 0; i < *got; i++) {
		memset(&res[i], 0, sizeof res[i]);
		res[i].algo.data[0] = LT_ALGO;
		res[i].algo.data[1] = (uint64_t)i;
		res[i].state = CUBLAS_STATUS_SUCCESS;
		res[i].wavesCount = 1;
	}
	(void)pref;
	return CUBLAS_STATUS_SUCCESS;
}

struct mm_op {
	struct si_op op;
	struct lt_shape s;
	struct lt_layout a, b, c; /* copies: the layouts may be destroyed before the stream runs */
	bool ta, tb, f64;
	CUdeviceptr pa, pb, pc, pd;
	double alpha, beta;
};

/* The bytes a batch of matrices spans. */
static int64_t span(const struct lt_layout *l)
{
	return ((int64_t)(l->batch - 1) * l->stride + (int64_t)(l->cols - 1) * l->ld + (int64_t)l->rows) *
	       (int64_t)type_size(l->t);
}

static void load(const struct lt_layout *l, const void *src, int64_t b, double *dst)
{
	int64_t n = (int64_t)l->ld * (int64_t)(l->cols - 1) + (int64_t)l->rows;
	const unsigned char *p = (const unsigned char *)src + b * l->stride * (int64_t)type_size(l->t);
	for (int64_t i = 0; i < n; i++) {
		uint16_t h;
		float f;
		switch ((int)l->t) {
		case CUDA_R_64F:
			memcpy(&dst[i], p + 8 * i, 8);
			break;
		case CUDA_R_32F:
			memcpy(&f, p + 4 * i, 4);
			dst[i] = f;
			break;
		default:
			memcpy(&h, p + 2 * i, 2);
			dst[i] = l->t == CUDA_R_16F ? ir_f16_to_f32(h) : ir_bf16_to_f32(h);
		}
	}
}

static void store(const struct lt_layout *l, void *dst, int64_t b, const double *src)
{
	unsigned char *p = (unsigned char *)dst + b * l->stride * (int64_t)type_size(l->t);
	for (uint64_t c = 0; c < l->cols; c++)
		for (uint64_t r = 0; r < l->rows; r++) {
			int64_t i = (int64_t)c * l->ld + (int64_t)r;
			double v = src[i];
			float f = (float)v;
			uint16_t h;
			switch ((int)l->t) {
			case CUDA_R_64F:
				memcpy(p + 8 * i, &v, 8);
				break;
			case CUDA_R_32F:
				memcpy(p + 4 * i, &f, 4);
				break;
			default:
				h = l->t == CUDA_R_16F ? ir_f32_to_f16(f) : ir_f32_to_bf16(f);
				memcpy(p + 2 * i, &h, 2);
			}
		}
}

static int run_matmul(struct si_op *o, bool first)
{
	struct mm_op *x = (struct mm_op *)o;
	const void *a = si_host(x->pa, (size_t)span(&x->a), "matmul's A");
	const void *b = a ? si_host(x->pb, (size_t)span(&x->b), "matmul's B") : NULL;
	const void *c = b ? si_host(x->pc, (size_t)span(&x->c), "matmul's C") : NULL;
	void *d = c ? si_host(x->pd, (size_t)span(&x->c), "matmul's D") : NULL;
	(void)first;
	if (!d)
		return -1;
	size_t na = (size_t)(x->a.ld * (int64_t)(x->a.cols - 1) + (int64_t)x->a.rows),
	       nb = (size_t)(x->b.ld * (int64_t)(x->b.cols - 1) + (int64_t)x->b.rows),
	       nc = (size_t)(x->c.ld * (int64_t)(x->c.cols - 1) + (int64_t)x->c.rows);
	double *da = ir_malloc(na * sizeof *da), *db = ir_malloc(nb * sizeof *db), *dc = ir_malloc(nc * sizeof *dc);
	if (!da || !db || !dc) {
		ir_free(da);
		ir_free(db);
		ir_free(dc);
		si_fail(CUDA_ERROR_OUT_OF_MEMORY, "out of host memory for a matmul");
		return -1;
	}
	for (int64_t i = 0; i < x->s.batch; i++) {
		load(&x->a, a, i, da);
		load(&x->b, b, i, db);
		if (x->beta != 0)
			load(&x->c, c, i, dc);
		else
			memset(dc, 0, nc * sizeof *dc);
		/* in f64 whatever the type: a check, not a speed; f32 data in f32 would only round more */
		cblas_dgemm(CblasColMajor, x->ta ? CblasTrans : CblasNoTrans, x->tb ? CblasTrans : CblasNoTrans,
			    (int)x->s.m, (int)x->s.n, (int)x->s.k, x->alpha, da, (int)x->a.ld, db, (int)x->b.ld,
			    x->beta, dc, (int)x->c.ld);
		store(&x->c, d, i, dc);
	}
	ir_free(da);
	ir_free(db);
	ir_free(dc);
	return 0;
}

static cublasStatus_t matmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
			     cublasLtMatrixLayout_t Al, const void *B, cublasLtMatrixLayout_t Bl, const void *beta,
			     const void *C, cublasLtMatrixLayout_t Cl, void *D, cublasLtMatrixLayout_t Dl,
			     const cublasLtMatmulAlgo_t *algo, void *ws, size_t nws, CUstream stream)
{
	struct lt_shape s;
	if (!h || h->magic != LT_LIVE)
		return lt_fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasLtMatmul without a live handle");
	cublasStatus_t st = shape(desc, Al, Bl, Cl, Dl, &s);
	if (st != CUBLAS_STATUS_SUCCESS)
		return st;
	if (!algo || algo->data[0] != LT_ALGO)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul with an algorithm no heuristic gave");
	if (!alpha || !beta)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul without alpha or beta");
	if (si_stream_ok(stream, "cublasLtMatmul") != CUDA_SUCCESS)
		return lt_fail(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul on a stream that is not live");
	bool f64 = s.d->ct == CUBLAS_COMPUTE_64F;
	if (f64 != (s.d->scale == CUDA_R_64F) || f64 != (s.a->t == CUDA_R_64F))
		return lt_fail(CUBLAS_STATUS_NOT_SUPPORTED, "compute type %d with scale type %d and data type %d",
			       (int)s.d->ct, (int)s.d->scale, (int)s.a->t);
	struct mm_op *x = si_op_new(sizeof *x, "cublasLtMatmul", run_matmul, 4);
	if (!x)
		return lt_fail(CUBLAS_STATUS_ALLOC_FAILED, "out of host memory");
	x->s = s;
	x->a = *s.a;
	x->b = *s.b;
	x->c = *s.c;
	x->ta = s.d->ta == CUBLAS_OP_T;
	x->tb = s.d->tb == CUBLAS_OP_T;
	x->pa = (CUdeviceptr)A;
	x->pb = (CUdeviceptr)B;
	x->pc = (CUdeviceptr)C;
	x->pd = (CUdeviceptr)D;
	if (f64) {
		memcpy(&x->alpha, alpha, 8);
		memcpy(&x->beta, beta, 8);
	} else {
		float fa, fb;
		memcpy(&fa, alpha, 4);
		memcpy(&fb, beta, 4);
		x->alpha = fa;
		x->beta = fb;
	}
	x->op.rg[0] = (struct si_range){ x->pa, x->pa + (CUdeviceptr)span(&x->a), false };
	x->op.rg[1] = (struct si_range){ x->pb, x->pb + (CUdeviceptr)span(&x->b), false };
	x->op.rg[2] = (struct si_range){ x->pd, x->pd + (CUdeviceptr)span(&x->c), true };
	x->op.rg[3] = (struct si_range){ x->pc, x->beta != 0 ? x->pc + (CUdeviceptr)span(&x->c) : x->pc, false };
	if (nws && !si_host((CUdeviceptr)ws, nws, "cublasLtMatmul's workspace")) {
		ir_free(x->op.rg);
		ir_free(x);
		return lt_pass(CUBLAS_STATUS_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
	}
	CUresult e = si_enqueue(stream, &x->op);
	if (e != CUDA_SUCCESS)
		return lt_pass(CUBLAS_STATUS_EXECUTION_FAILED, (int)e);
	return CUBLAS_STATUS_SUCCESS;
}

void si_fill_lt(struct gpu_api *a)
{
	a->cublasLtCreate = create;
	a->cublasLtDestroy = destroy;
	a->cublasLtGetStatusString = status_string;
	a->cublasLtMatmul = matmul;
	a->cublasLtMatmulDescCreate = desc_create;
	a->cublasLtMatmulDescDestroy = desc_destroy;
	a->cublasLtMatmulDescSetAttribute = desc_set;
	a->cublasLtMatrixLayoutCreate = layout_create;
	a->cublasLtMatrixLayoutDestroy = layout_destroy;
	a->cublasLtMatrixLayoutSetAttribute = layout_set;
	a->cublasLtMatmulPreferenceCreate = pref_create;
	a->cublasLtMatmulPreferenceDestroy = pref_destroy;
	a->cublasLtMatmulPreferenceSetAttribute = pref_set;
	a->cublasLtMatmulAlgoGetHeuristic = heuristic;
}
