/*
 * test_host_ops.c: pcc-run's own kernels for the ops without generated
 * code (runtime/kernels.c, kernels_gemm.c, kernels_igemm.c,
 * kernels_window.c, from libpccrt) against interp_kernel.
 *
 * Dots, convolutions, window max and sum, and pads run on random inputs
 * over odd sizes, strides, pads, dilations, groups (depthwise ones, which
 * run without a gemm, on random shapes too) and transposes, on a
 * pool of 3 threads: window ops and pads bit for bit (NaN and signed
 * zeros included); dots and convolutions within 1e-5 of the sum of
 * magnitudes (the same BLAS, but gemv for one row or column, over more
 * columns where a convolution's stride is 1, or split in pieces for one
 * image at real sizes, all of which may round differently in the last
 * place). Results start as NaN, so that a kernel that reads one before
 * writing it fails. Convolutions run on igemm (where the CPU has
 * AVX-512F) and again on sgemm (depthwise ones on their AVX-512 variant,
 * then on the AVX2 one, then on the portable one), and each once more with an epilogue for
 * the kernel to run on its result's rows (struct rt_epilogue): every row
 * exactly once, after its values are final. igemm itself runs against a
 * double-precision triple loop on every tile shape. f32 dots run on igemm
 * too (B transposed packed into panels first), and again with B a
 * parameter of an inference plan, packed once and reused by a second
 * run, then all again on sgemm.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compiler.h"
#include "ir/plan.h"
#include "runtime/kernels_igemm.h"
#include "runtime/kernels_internal.h"
#include "runtime/pool.h"
#include "runtime/rt.h"
#include "tests/rng.h"
#include "tests/tap.h"

/* Kernel k (its operands' shapes and dtypes set) run by rt_kernel_host on
 * a pool, and by interp_kernel, on the same random inputs (special 1: with
 * NaN and signed zeros; 2: +0 and -0 tied for the max, no NaN); *err: the largest difference relative to
 * the output's sum of magnitudes. false when rt_kernel_host did not take
 * it or the results differ in size. */
/* Operand 1 a parameter of an inference plan (rt_host_dot may pack it
 * once): run_host_op runs the kernel twice, checking the second run. */
static bool param_b;

static bool run_host_op(struct plan_kernel *k, struct pool *pool, int special, bool *same, double *err)
{
	int nb = k->nin + k->nout;
	struct plan_buffer buf[4] = { 0 };
	int args[4] = { 0, 1, 2, 3 };
	int64_t off = 0;
	for (int j = 0; j < nb; j++) {
		buf[j] = (struct plan_buffer){ .dtype = k->dtype[j], .shape = k->shape[j], .offset = off };
		buf[j].bytes = ir_shape_numel(&k->shape[j]) * (int64_t)ir_dtype_size(k->dtype[j]);
		off += (buf[j].bytes + 63) / 64 * 64 + 64;
	}
	if (param_b)
		buf[1].bind = PLAN_BIND_PARAM;
	uint8_t *arena = calloc((size_t)off + 64, 1);
	struct ir_tensor tin[3], tout[1];
	for (int j = 0; j < k->nin; j++) {
		tin[j] = (struct ir_tensor){ k->dtype[j], k->shape[j], arena + buf[j].offset };
		int64_t n = ir_shape_numel(&k->shape[j]);
		for (int64_t i = 0; i < n; i++) {
			double v = urand() * 2 - 1;
			if (special == 1 && i % 7 == 3)
				v = i % 3 ? 0.0 : -0.0;
			if (special == 1 && i % 97 == 5)
				v = NAN;
			if (special == 2)
				v = i % 3 ? (i % 5 < 2 ? -0.0 : 0.0) : -fabs(v);
			if (k->dtype[j] == IR_F32)
				((float *)tin[j].data)[i] = (float)v;
			else if (k->dtype[j] == IR_I64)
				((int64_t *)tin[j].data)[i] = (int64_t)(v * 1000);
		}
	}
	struct plan p = { .nkernels = 1, .kernels = k };
	struct plan_device d = { .nbuf = nb, .buf = buf, .nargs = nb, .args = args };
	struct plan_instr x = { .kind = PLAN_KERNEL, .kernel = 0, .nin = k->nin, .nout = k->nout, .arg = 0 };
	rt_kernel_fn none[1] = { NULL };
	struct rt r = { .p = &p, .d = &d, .arena = arena, .fn = none, .pool = pool };
	/* every element must be written, and nothing read before: NaN (f32 and f64) */
	memset(arena + buf[k->nin].offset, 0xff, (size_t)buf[k->nin].bytes);
	int rc;
	bool took = rt_kernel_host(&r, &x, &rc) && rc == 0;
	if (param_b && took) { /* again, from what the first run packed */
		memset(arena + buf[k->nin].offset, 0xff, (size_t)buf[k->nin].bytes);
		took = rt_kernel_host(&r, &x, &rc) && rc == 0;
	}
	for (int i = 0; i < r.npacked; i++)
		free(r.packed[i].data);
	free(r.packed);
	rc = interp_kernel(k, tin, tout);
	const uint8_t *got = arena + buf[k->nin].offset;
	*same = took && rc == 0 && memcmp(got, tout[0].data, (size_t)buf[k->nin].bytes) == 0;
	*err = 0;
	if (took && rc == 0 && k->dtype[k->nin] == IR_F32) {
		int64_t n = ir_shape_numel(&k->shape[k->nin]);
		double mag = 0;
		const float *g = (const float *)got, *w = tout[0].data;
		for (int64_t i = 0; i < n; i++)
			mag += fabs(w[i]);
		for (int64_t i = 0; i < n; i++) {
			double e = (isnan(g[i]) != isnan(w[i])) ? INFINITY : isnan(g[i]) ? 0 : fabs(g[i] - w[i]);
			*err = e / (mag > 0 ? mag : 1) > *err ? e / (mag > 0 ? mag : 1) : *err;
		}
	}
	if (rc == 0)
		ir_tensor_free(&tout[0]);
	free(arena);
	return took && rc == 0;
}

static struct ir_shape shape_of(int rank, const int64_t *dims)
{
	struct ir_shape s = { .rank = rank };
	for (int i = 0; i < rank; i++)
		s.dims[i] = dims[i];
	return s;
}

static void set_list(struct ir_ilist *l, int n, const int64_t *v)
{
	l->n = n;
	for (int i = 0; i < n; i++)
		l->v[i] = v[i];
}

/* N, C, spatial dims, O, kernel, stride, pad lo, pad hi, dilation, groups:
 * sp = 1 or 2 spatial dims (the second entry of each pair unused for 1). */
struct conv_case {
	int sp;
	int64_t n, c, h, w, o, kh, kw, sh, sw, plh, plw, phh, phw, dh, dw, g;
};

/* The epilogue run_conv_epilogue hands the convolution: each row r of
 * the result (row elements each) becomes 2 y + r, and is counted. */
struct epi_rows {
	float *y;
	int64_t row;
	int *count;
};

static void epi_fn(void **args, int64_t begin, int64_t end)
{
	const struct epi_rows *e = args[0];
	for (int64_t r = begin; r < end; r++) {
		e->count[r]++;
		for (int64_t j = 0; j < e->row; j++)
			e->y[r * e->row + j] = 2 * e->y[r * e->row + j] + (float)r;
	}
}

/* Convolution k run by rt_host_conv with that epilogue, against the
 * interpreter's result put through it: *err as run_host_op's; false
 * unless the kernel ran the epilogue on every row exactly once. A row is
 * an output row, or with plane an output channel's whole plane (as a
 * generated epilogue's rows are where output rows are short). */
static bool run_conv_epilogue(const struct plan_kernel *k, struct pool *pool, bool plane, double *err)
{
	struct ir_tensor in[2], ref, out;
	for (int j = 0; j < 2; j++) {
		ir_tensor_alloc(&in[j], IR_F32, &k->shape[j]);
		for (int64_t i = 0; i < ir_shape_numel(&k->shape[j]); i++)
			((float *)in[j].data)[i] = (float)(urand() * 2 - 1);
	}
	ir_tensor_alloc(&out, IR_F32, &k->shape[2]);
	int64_t n = ir_shape_numel(&k->shape[2]), row = k->shape[2].dims[k->shape[2].rank - 1];
	if (plane && k->shape[2].rank == 4)
		row *= k->shape[2].dims[2];
	int64_t rows = row ? n / row : 0;
	memset(out.data, 0xff, (size_t)n * sizeof(float));
	int *count = calloc((size_t)rows + 1, sizeof *count);
	struct epi_rows e = { out.data, row, count };
	void *args[1] = { &e }, *buf[3] = { in[0].data, in[1].data, out.data };
	struct rt_epilogue epi = { epi_fn, args, rows, false };
	struct rt r = { .pool = pool };
	bool ok = rt_host_conv(&r, k, buf, &epi) && epi.done && interp_kernel(k, in, &ref) == 0;
	for (int64_t i = 0; i < rows; i++)
		ok = ok && count[i] == 1;
	*err = ok ? 0 : INFINITY;
	double mag = 0;
	for (int64_t i = 0; ok && i < n; i++)
		mag += fabs(2.0 * ((float *)ref.data)[i] + (double)(i / row));
	for (int64_t i = 0; ok && i < n; i++) {
		double want = 2.0 * ((float *)ref.data)[i] + (double)(i / row), d = fabs(((float *)out.data)[i] - want);
		*err = isnan(d) ? INFINITY : fmax(*err, d / (mag > 0 ? mag : 1));
	}
	if (ok)
		ir_tensor_free(&ref);
	ir_tensor_free(&in[0]);
	ir_tensor_free(&in[1]);
	ir_tensor_free(&out);
	free(count);
	return ok;
}

/* Convolution case t on rt_host_conv against the interpreter, without
 * and with an epilogue. */
static void run_conv_case(struct pool *pool, const struct conv_case *t)
{
	struct plan_kernel k = { .op = IR_OP_CONV, .nin = 2, .nout = 1 };
	enum ir_dtype dt[3] = { IR_F32, IR_F32, IR_F32 };
	struct ir_shape sh[3];
	int64_t oh = (t->h + t->plh + t->phh - t->dh * (t->kh - 1) - 1) / t->sh + 1;
	int64_t ow = (t->w + t->plw + t->phw - t->dw * (t->kw - 1) - 1) / t->sw + 1;
	int64_t xd[4] = { t->n, t->c, t->h, t->w }, wd[4] = { t->o, t->c / t->g, t->kh, t->kw },
		od[4] = { t->n, t->o, oh, ow };
	int64_t st[2] = { t->sh, t->sw }, lo[2] = { t->plh, t->plw }, hi[2] = { t->phh, t->phw },
		dl[2] = { t->dh, t->dw };
	if (t->sp == 1) { /* the second entry of each pair is the only spatial one */
		xd[2] = t->w, wd[2] = t->kw, od[2] = ow;
		st[0] = t->sw, lo[0] = t->plw, hi[0] = t->phw, dl[0] = t->dw;
	}
	sh[0] = shape_of(t->sp + 2, xd);
	sh[1] = shape_of(t->sp + 2, wd);
	sh[2] = shape_of(t->sp + 2, od);
	set_list(&k.a.stride, t->sp, st);
	set_list(&k.a.pad_lo, t->sp, lo);
	set_list(&k.a.pad_hi, t->sp, hi);
	set_list(&k.a.dilation, t->sp, dl);
	k.a.groups = t->g;
	k.dtype = dt;
	k.shape = sh;
	bool same;
	double err;
	char s0[IR_SHAPE_STR_MAX], s1[IR_SHAPE_STR_MAX];
	bool ok = run_host_op(&k, pool, false, &same, &err);
	TAP_OK(ok && err <= 1e-5,
	       "host conv %s * %s, stride %ld,%ld pad %ld,%ld/%ld,%ld dilation %ld,%ld groups %ld: "
	       "max err %.2g of the sum of magnitudes%s",
	       ir_shape_str(&sh[0], s0, sizeof s0), ir_shape_str(&sh[1], s1, sizeof s1), (long)t->sh, (long)t->sw,
	       (long)t->plh, (long)t->plw, (long)t->phh, (long)t->phw, (long)t->dh, (long)t->dw, (long)t->g, err,
	       same ? " (bit for bit)" : "");
	ok = run_conv_epilogue(&k, pool, false, &err);
	TAP_OK(ok && err <= 1e-5, "the same with an epilogue: run on every row once, when final; max err %.2g", err);
	ok = run_conv_epilogue(&k, pool, true, &err);
	TAP_OK(ok && err <= 1e-5, "the same with an epilogue on planes: each once, when final; max err %.2g", err);
}

static void check_host_conv(struct pool *pool)
{
	static const struct conv_case cs[] = {
		{ 2, 2, 3, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, /* resnet's first */
		{ 2, 2, 16, 8, 8, 32, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1 },  /* 1x1 stride 2 */
		{ 2, 2, 16, 8, 8, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1 },  /* 3x3 stride 2 */
		{ 2, 3, 8, 5, 7, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1 },    /* 1x1: no im2col */
		{ 2, 1, 6, 9, 11, 4, 3, 2, 1, 1, 2, 0, 1, 3, 2, 1, 2 },   /* groups, dilation, odd pads */
		{ 2, 3, 4, 7, 6, 8, 2, 3, 3, 2, 0, 1, 2, 0, 1, 2, 4 },    /* depth multiplier 2 */
		{ 2, 1, 5, 13, 3, 7, 5, 1, 2, 1, 2, 0, 2, 0, 1, 1, 1 },   /* kernel taller than wide */
		{ 2, 2, 4, 4, 4, 4, 4, 4, 1, 1, 0, 0, 0, 0, 1, 1, 1 },    /* kernel = input: one position */
		{ 2, 1, 2, 3, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1 },    /* dilated past the input */
		{ 2, 4, 1, 1, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1 },    /* 1x1 image */
		{ 1, 3, 5, 1, 17, 4, 1, 3, 1, 2, 0, 1, 0, 1, 1, 1, 1 },   /* 1-D, stride 2 */
		{ 1, 2, 4, 1, 10, 6, 1, 4, 1, 1, 0, 2, 0, 1, 1, 3, 2 },   /* 1-D, dilation 3, groups */
		/* one image at real sizes: split across the threads (split_items) */
		{ 2, 1, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },   /* wide, by columns */
		{ 2, 1, 96, 7, 7, 200, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },    /* short rows: im2col, by rows */
		{ 2, 1, 32, 16, 16, 600, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1 },  /* wide, by rows (600: a part block) */
		{ 2, 1, 64, 28, 27, 72, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1 },   /* 1x1 stride 2, by columns */
		{ 2, 1, 128, 14, 14, 232, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1 }, /* direct 1x1, by rows */
		{ 2, 1, 3, 56, 56, 16, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 1 },    /* the stem: padded, stride 2 */
		{ 2, 1, 32, 20, 20, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2 },   /* two groups, three threads */
		{ 1, 1, 64, 1, 500, 48, 1, 5, 1, 1, 0, 2, 0, 2, 1, 1, 1 },   /* 1-D, wide, one output row */
		{ 1, 1, 64, 1, 700, 40, 1, 3, 1, 2, 0, 1, 0, 1, 1, 1, 1 },   /* 1-D, stride 2, by columns */
		{ 2, 1, 6, 12, 12, 5, 10, 10, 1, 1, 0, 0, 0, 0, 1, 1, 1 }, /* a weight gradient's: 3x3 out, not wide */
		/* depthwise (groups = C): computed directly, not by gemm */
		{ 2, 2, 16, 12, 12, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16 }, /* 3x3, pad 1 */
		{ 2, 1, 24, 15, 13, 24, 5, 5, 2, 2, 2, 2, 2, 1, 1, 1, 24 }, /* 5x5, stride 2, odd pads */
		{ 2, 2, 8, 9, 9, 16, 3, 3, 2, 1, 0, 2, 1, 0, 2, 1, 8 },     /* multiplier 2, dilation */
		{ 2, 1, 96, 28, 28, 96, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 96 }, /* mobilenet's size, threads */
		{ 2, 1, 5, 6, 6, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 5 },      /* 1x1 */
		{ 1, 2, 6, 1, 20, 6, 1, 3, 1, 2, 0, 1, 0, 0, 1, 1, 6 },     /* 1-D, stride 2 */
	};
	for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
		run_conv_case(pool, &cs[i]);
	/* random depthwise convolutions (groups = C, depth multiplier 1 or
	 * 2): odd sizes, strides 1 to 3, pads, dilations, 1-D too */
	for (int i = 0; i < 16; i++) {
		struct conv_case t = { .sp = urand() < 0.2 ? 1 : 2, .n = 1 + (int64_t)(2 * urand()) };
		t.c = t.g = 1 + (int64_t)(40 * urand());
		t.o = t.c * (1 + (int64_t)(2 * urand()));
		t.h = t.sp == 1 ? 1 : 1 + (int64_t)(20 * urand());
		t.w = 1 + (int64_t)(20 * urand());
		t.kh = t.sp == 1 ? 1 : 1 + (int64_t)(5 * urand());
		t.kw = 1 + (int64_t)(5 * urand());
		t.sh = t.sp == 1 ? 1 : 1 + (int64_t)(3 * urand());
		t.sw = 1 + (int64_t)(3 * urand());
		t.plh = t.sp == 1 ? 0 : (int64_t)(3 * urand()), t.phh = t.sp == 1 ? 0 : (int64_t)(3 * urand());
		t.plw = (int64_t)(3 * urand()), t.phw = (int64_t)(3 * urand());
		t.dh = t.sp == 1 ? 1 : 1 + (int64_t)(2 * urand());
		t.dw = 1 + (int64_t)(2 * urand());
		/* at least one output position along each dim */
		while (t.h + t.plh + t.phh < t.dh * (t.kh - 1) + 1)
			t.phh++;
		while (t.w + t.plw + t.phw < t.dw * (t.kw - 1) + 1)
			t.phw++;
		run_conv_case(pool, &t);
	}
}

/* rank, dims, window, stride, pad lo, pad hi, dilation (last two dims). */
struct window_case {
	int rank;
	int64_t dims[4], kh, kw, sh, sw, plh, plw, phh, phw, dh, dw;
};

static void check_host_window(struct pool *pool)
{
	static const struct window_case cs[] = {
		{ 4, { 2, 16, 16, 16 }, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1 }, /* resnet's max pool */
		{ 4, { 2, 3, 7, 9 }, 2, 3, 1, 2, 0, 1, 1, 2, 1, 1 },
		{ 4, { 1, 2, 11, 6 }, 3, 2, 3, 1, 2, 0, 2, 1, 2, 3 },     /* dilation, odd pads */
		{ 4, { 3, 1, 4, 4 }, 4, 4, 1, 1, 0, 0, 0, 0, 1, 1 },      /* global */
		{ 3, { 2, 5, 13 }, 1, 3, 1, 2, 0, 1, 0, 1, 1, 1 },        /* 1-D */
		{ 4, { 1, 2, 3, 3 }, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1 },      /* windows wholly in the padding */
		{ 4, { 1, 64, 112, 112 }, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1 }, /* resnet-50's max pool */
		{ 3, { 1, 2, 5000 }, 1, 3, 1, 1, 0, 1, 0, 1, 1, 1 },      /* a long row */
	};
	for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
		for (int op = 0; op < 2; op++) {
			for (int special = 0; special < 3; special++) {
				const struct window_case *t = &cs[i];
				int r = t->rank;
				struct plan_kernel k = { .op = op ? IR_OP_WINDOW_SUM : IR_OP_WINDOW_MAX,
							 .nin = 1,
							 .nout = 1 };
				enum ir_dtype dt[2] = { IR_F32, IR_F32 };
				struct ir_shape sh[2];
				int64_t win[4], st[4], lo[4], hi[4], dl[4], od[4];
				for (int d = 0; d < r; d++)
					win[d] = st[d] = dl[d] = 1, lo[d] = hi[d] = 0, od[d] = t->dims[d];
				win[r - 2] = t->kh, win[r - 1] = t->kw, st[r - 2] = t->sh, st[r - 1] = t->sw;
				lo[r - 2] = t->plh, lo[r - 1] = t->plw, hi[r - 2] = t->phh, hi[r - 1] = t->phw;
				dl[r - 2] = t->dh, dl[r - 1] = t->dw;
				for (int d = r - 2; d < r; d++)
					od[d] = (t->dims[d] + lo[d] + hi[d] - dl[d] * (win[d] - 1) - 1) / st[d] + 1;
				sh[0] = shape_of(r, t->dims);
				sh[1] = shape_of(r, od);
				set_list(&k.a.window, r, win);
				set_list(&k.a.stride, r, st);
				set_list(&k.a.pad_lo, r, lo);
				set_list(&k.a.pad_hi, r, hi);
				set_list(&k.a.dilation, r, dl);
				k.dtype = dt;
				k.shape = sh;
				bool same;
				double err;
				char s0[IR_SHAPE_STR_MAX], s1[IR_SHAPE_STR_MAX];
				bool ok = run_host_op(&k, pool, special, &same, &err);
				TAP_OK(ok && same, "host window_%s %s -> %s%s: bit for bit", op ? "sum" : "max",
				       ir_shape_str(&sh[0], s0, sizeof s0), ir_shape_str(&sh[1], s1, sizeof s1),
				       special == 1 ? ", with NaN and signed zeros"
				       : special    ? ", +0 and -0 tied"
						    : "");
			}
		}
	}
}

/* batch (0: none), m, k, n, A transposed, B transposed, dtype. */
struct dot_case {
	int64_t batch, m, k, n;
	bool ta, tb;
	enum ir_dtype dt;
};

static void check_host_dot(struct pool *pool)
{
	static const struct dot_case cs[] = {
		{ 0, 1, 2048, 1000, false, false, IR_F32 }, /* resnet-50's fc: by columns, gemv */
		{ 0, 1, 2048, 1000, false, true, IR_F32 },  /* the same as ONNX's Gemm (transB) */
		{ 0, 1, 300, 70, true, false, IR_F32 },     /* a row of A stored as a column */
		{ 0, 500, 64, 1, false, false, IR_F32 },    /* a column of C: by rows, gemv */
		{ 0, 300, 50, 1, true, true, IR_F32 },      /* the same, both transposed */
		{ 0, 1, 100, 1, false, false, IR_F32 },     /* one element */
		{ 3, 1, 40, 50, false, false, IR_F32 },     /* rows of a batch */
		{ 0, 1, 100, 130, false, true, IR_F64 },    /* dgemv */
		{ 0, 33, 100, 1, true, false, IR_F64 },
		{ 0, 300, 64, 90, false, false, IR_F32 },  /* by rows, a part block */
		{ 0, 77, 129, 200, true, false, IR_F32 },  /* A transposed */
		{ 0, 250, 96, 70, false, true, IR_F32 },   /* B transposed, by rows */
		{ 0, 40, 33, 300, true, true, IR_F64 },    /* both, f64 */
		{ 2, 64, 100, 130, false, false, IR_F32 }, /* two matrices, three threads */
		{ 4, 20, 50, 30, false, true, IR_F32 },    /* a matrix per thread */
		{ 0, 3, 5, 7, false, false, IR_F32 },      /* too small to split */
		/* igemm's shapes: by columns in pieces of 96 with a last part
		 * piece, tails of 1 to 4 columns past whole vectors, B packed
		 * (transposed) across panels */
		{ 0, 40, 70, 500, false, false, IR_F32 },
		{ 0, 9, 300, 97, false, true, IR_F32 },
		{ 0, 130, 64, 52, false, false, IR_F32 },
		{ 12, 33, 64, 33, false, true, IR_F32 }, /* attention's q . k^T */
		{ 12, 33, 33, 64, false, false, IR_F32 },
		{ 0, 2, 513, 200, false, false, IR_F32 },
	};
	for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
		const struct dot_case *t = &cs[i];
		struct plan_kernel k = { .op = IR_OP_DOT, .nin = 2, .nout = 1 };
		enum ir_dtype dt[3] = { t->dt, t->dt, t->dt };
		struct ir_shape sh[3];
		int nb = t->batch ? 1 : 0;
		int64_t ad[3] = { t->batch }, bd[3] = { t->batch }, od[3] = { t->batch, t->m, t->n };
		ad[nb] = t->ta ? t->k : t->m, ad[nb + 1] = t->ta ? t->m : t->k;
		bd[nb] = t->tb ? t->n : t->k, bd[nb + 1] = t->tb ? t->k : t->n;
		int64_t zero = 0, lc = nb + (t->ta ? 0 : 1), rc = nb + (t->tb ? 1 : 0);
		sh[0] = shape_of(nb + 2, ad);
		sh[1] = shape_of(nb + 2, bd);
		sh[2] = shape_of(nb + 2, nb ? od : od + 1);
		set_list(&k.a.lhs_batch, nb, &zero);
		set_list(&k.a.rhs_batch, nb, &zero);
		set_list(&k.a.lhs_contract, 1, &lc);
		set_list(&k.a.rhs_contract, 1, &rc);
		k.dtype = dt;
		k.shape = sh;
		bool same;
		double err;
		char s0[IR_SHAPE_STR_MAX], s1[IR_SHAPE_STR_MAX];
		bool ok = run_host_op(&k, pool, false, &same, &err);
		TAP_OK(ok && (t->dt != IR_F32 || err <= 1e-5) && (t->dt == IR_F32 || same),
		       "host dot %s %s . %s: max err %.2g of the sum of magnitudes%s", ir_dtype_name(t->dt),
		       ir_shape_str(&sh[0], s0, sizeof s0), ir_shape_str(&sh[1], s1, sizeof s1), err,
		       same ? " (bit for bit)" : "");
	}
}

static void check_host_pad(struct pool *pool)
{
	static const struct {
		int rank;
		int64_t dims[5], lo[5], hi[5];
	} cs[] = {
		{ 4, { 2, 8, 16, 16 }, { 0, 0, 1, 1 }, { 0, 0, 1, 1 } },
		{ 5, { 2, 8, 15, 8, 1 }, { 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 1 } }, /* zeros interleaved */
		{ 5, { 2, 3, 4, 1, 4 }, { 0, 0, 0, 1, 0 }, { 0, 0, 0, 0, 0 } },
		{ 3, { 3, 5, 7 }, { 1, 0, 2 }, { 2, 3, 0 } },
		{ 2, { 4, 3 }, { 2, 0 }, { 1, 0 } },
		{ 1, { 9 }, { 3 }, { 5 } },
		{ 3, { 2, 0, 3 }, { 1, 1, 1 }, { 0, 1, 0 } }, /* empty input */
		{ 2, { 5, 6 }, { 0, 0 }, { 0, 0 } },          /* nothing to pad */
	};
	static const double values[] = { 0.0, 1.5, -0.0 };
	static const enum ir_dtype dts[] = { IR_F32, IR_I64 };
	for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
		for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
			for (size_t t = 0; t < sizeof dts / sizeof *dts; t++) {
				struct plan_kernel k = { .op = IR_OP_PAD, .nin = 1, .nout = 1 };
				enum ir_dtype dt[2] = { dts[t], dts[t] };
				struct ir_shape sh[2];
				int64_t od[5];
				for (int d = 0; d < cs[i].rank; d++)
					od[d] = cs[i].dims[d] + cs[i].lo[d] + cs[i].hi[d];
				sh[0] = shape_of(cs[i].rank, cs[i].dims);
				sh[1] = shape_of(cs[i].rank, od);
				set_list(&k.a.pad_lo, cs[i].rank, cs[i].lo);
				set_list(&k.a.pad_hi, cs[i].rank, cs[i].hi);
				k.a.mode = IR_PAD_CONSTANT;
				k.a.value = values[v];
				k.dtype = dt;
				k.shape = sh;
				bool same, fast = values[v] == 0 && !signbit(values[v]) ? true : dts[t] == IR_F32;
				double err;
				char s0[IR_SHAPE_STR_MAX], s1[IR_SHAPE_STR_MAX];
				bool ok = run_host_op(&k, pool, false, &same, &err);
				TAP_OK(fast ? ok && same : !ok, "host pad %s %s -> %s with %g: %s",
				       ir_dtype_name(dts[t]), ir_shape_str(&sh[0], s0, sizeof s0),
				       ir_shape_str(&sh[1], s1, sizeof s1), values[v],
				       fast ? "bit for bit" : "left to the reference kernel");
			}
		}
	}
}

/* igemm against a plain triple loop in double, on every tile shape
 * (rows 1 to 8 past the last full tile, 1 to 48 columns past it), B's
 * rows out of order and spaced (off), past one pass of KC steps, and on
 * a block of C inside a bigger one. */
static void check_igemm(void)
{
	if (!rt_igemm_available()) {
		TAP_DIAG("igemm: this CPU has no AVX-512F (not checked)");
		return;
	}
	static const int64_t cs[][5] = {
		/* M, N, K, lda pad, ldc pad */
		{ 1, 1, 1, 0, 0 },
		{ 5, 20, 0, 0, 1 },
		{ 7, 17, 3, 1, 2 },
		{ 8, 48, 64, 0, 0 },
		{ 13, 95, 300, 5, 3 },
		{ 33, 130, 257, 0, 7 },
		{ 3, 200, 700, 2, 0 },
		/* 1 to 4 columns past whole vectors (from n0 = 2), as dot products */
		{ 17, 51, 300, 1, 2 },
		{ 9, 198, 600, 0, 0 },
		{ 4, 21, 40, 3, 0 },
		{ 2, 4, 17, 0, 1 },
	};
	for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
		int64_t M = cs[i][0], N = cs[i][1], K = cs[i][2], lda = K + cs[i][3], ldc = N + cs[i][4], ldb = N + 9;
		float *a = malloc((size_t)(M * lda + 1) * sizeof *a), *b = malloc((size_t)(K * ldb + 1) * sizeof *b);
		float *c = malloc((size_t)(M * ldc) * sizeof *c);
		int64_t *off = malloc((size_t)(K + 1) * sizeof *off);
		for (int64_t j = 0; j < M * lda; j++)
			a[j] = (float)(urand() * 2 - 1);
		for (int64_t j = 0; j < K * ldb; j++)
			b[j] = (float)(urand() * 2 - 1);
		for (int64_t j = 0; j < M * ldc; j++)
			c[j] = 1234.5f; /* outside the block: must stay */
		for (int64_t k = 0; k < K; k++)
			off[k] = ((k * 7 + 3) % K) * ldb; /* a permutation of the rows when K is not a multiple of 7 */
		struct rt_igemm g = {
			.a = a, .b = b, .off = off, .c = c, .M = M, .N = N, .K = K, .lda = lda, .ldc = ldc
		};
		int64_t m0 = M > 2 ? 1 : 0, n0 = N > 2 ? 2 : 0; /* a block that starts inside a tile */
		rt_igemm_block(&g, m0, M, n0, N);
		double worst = 0;
		bool kept = true;
		for (int64_t r = 0; r < M; r++) {
			for (int64_t j = 0; j < ldc; j++) {
				float got = c[r * ldc + j];
				if (r < m0 || j < n0 || j >= N) {
					kept = kept && got == 1234.5f;
					continue;
				}
				double want = 0, mag = 0;
				for (int64_t k = 0; k < K; k++) {
					want += (double)a[r * lda + k] * b[off[k] + j];
					mag += fabs((double)a[r * lda + k] * b[off[k] + j]);
				}
				double e = fabs(got - want) / (mag > 0 ? mag : 1);
				worst = e > worst ? e : worst;
			}
		}
		/* K fused multiply-adds in f32: each rounds by at most 2^-24 of a
		 * partial sum, itself at most the sum of magnitudes */
		TAP_OK(kept && worst <= (double)K * 0x1p-24,
		       "igemm %ldx%ldx%ld, block from (%ld, %ld): max err %.2g of "
		       "the sum of magnitudes, C outside the block kept",
		       (long)M, (long)N, (long)K, (long)m0, (long)n0, worst);
		free(a), free(b), free(c), free(off);
	}
}

/* rt_igemm_stride2 against the plain loop for every length to 40, on a
 * source exactly 2 (n - 1) + 1 floats long (the sanitizer builds catch a
 * read past it). */
static void check_stride2(void)
{
	if (!rt_igemm_available())
		return;
	bool ok = true;
	for (int64_t n = 1; n <= 40; n++) {
		float *s = malloc((size_t)(2 * n - 1) * sizeof *s), d[48];
		for (int64_t i = 0; i < 2 * n - 1; i++)
			s[i] = (float)(i * 3 + 1);
		for (int i = 0; i < 48; i++)
			d[i] = -1;
		rt_igemm_stride2(d, s, n);
		for (int64_t q = 0; q < 48; q++)
			ok = ok && d[q] == (q < n ? s[2 * q] : -1);
		free(s);
	}
	TAP_OK(ok, "rt_igemm_stride2: every length 1 to 40 picks the even floats, writes no more");
}

static void check_host_ops(void)
{
	struct pool *pool = pool_new(3);
	TAP_OK(pool, "a pool of 3 threads");
	if (!pool)
		return;
	check_host_dot(pool);
	if (rt_conv_igemm()) {
		TAP_DIAG("dots again with B a parameter (packed once for igemm)");
		param_b = true;
		check_host_dot(pool);
		param_b = false;
		TAP_DIAG("dots again on sgemm, as on a CPU without AVX-512F");
		rt_conv_paths_set(0, -1);
		check_host_dot(pool);
		rt_conv_paths_set(-1, -1);
	}
	check_igemm();
	check_stride2();
	bool ig = rt_conv_igemm();
	TAP_DIAG("convolutions on %s", ig ? "igemm" : "sgemm (no AVX-512F)");
	check_host_conv(pool);
	if (ig) {
		TAP_DIAG("again on sgemm, as on a CPU without AVX-512F");
		rt_conv_paths_set(0, -1);
		check_host_conv(pool);
	}
	__builtin_cpu_init();
	if (ig && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		TAP_DIAG("depthwise convolutions again on their AVX2 variant, as on a CPU without AVX-512F");
		rt_conv_paths_set(ig, 1);
		check_host_conv(pool);
	}
	TAP_DIAG("depthwise convolutions again on their portable variant, as on a CPU without AVX2");
	rt_conv_paths_set(ig, 0);
	check_host_conv(pool);
	rt_conv_paths_set(-1, -1);
	check_host_window(pool);
	check_host_pad(pool);
	pool_free(pool);
}

int main(void)
{
	check_host_ops();
	return tap_done();
}
