/*
 * test_gpu_plan.c: what the CUDA backend works out from a plan without a
 * GPU (runtime/gpu_plan.h), checked on any machine:
 *   - block copies as 2-D copies: applied with memcpy, they equal
 *     ir_copy_block on random shapes, blocks and offsets, and the packing
 *     of a gather along an inner axis is one 2-D copy;
 *   - dots as GEMMs: the batch, m, n, k and transposes found for a dot,
 *     run as a plain triple loop, equal the interpreter's dot on random
 *     data (forward, both gradient forms, two contracting dims); layouts
 *     that are not a GEMM in place are refused;
 *   - transfers: pipelined training plans pcc compiles match every
 *     pair's sends and receives in order, with the pairs listed once; a
 *     plan whose receives are swapped, or one missing, is refused naming
 *     the pair.
 *
 * argv: pcc, train dir.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/compiler.h"
#include "ir/plan.h"
#include "runtime/gpu_plan.h"
#include "tests/tap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t pick(int64_t n)
{
	return n > 0 ? (int64_t)(next() % (uint64_t)n) : 0;
}

/* ---- block copies ------------------------------------------------------------- */

static void apply(uint8_t *dst, const uint8_t *src, const struct gpu_copy2d *v, int n)
{
	for (int i = 0; i < n; i++)
		for (int64_t h = 0; h < v[i].height; h++)
			memcpy(dst + v[i].dst + h * v[i].dpitch, src + v[i].src + h * v[i].spitch, (size_t)v[i].width);
}

/* One random copy; true when the 2-D copies equal ir_copy_block. */
static bool random_copy(void)
{
	struct ir_shape s = { .rank = 1 + (int)pick(4) }, d = s, b = s;
	int64_t ss[IR_MAX_RANK] = { 0 }, ds[IR_MAX_RANK] = { 0 };
	size_t es = (size_t)1 << pick(4);
	for (int i = 0; i < s.rank; i++) {
		b.dims[i] = 1 + pick(4);
		s.dims[i] = b.dims[i] + (pick(2) ? pick(3) : 0);
		d.dims[i] = b.dims[i] + (pick(2) ? pick(3) : 0);
		ss[i] = pick(s.dims[i] - b.dims[i] + 1);
		ds[i] = pick(d.dims[i] - b.dims[i] + 1);
	}
	size_t sn = (size_t)ir_shape_numel(&s) * es, dn = (size_t)ir_shape_numel(&d) * es;
	uint8_t *src = malloc(sn), *want = calloc(dn, 1), *got = calloc(dn, 1);
	for (size_t i = 0; i < sn; i++)
		src[i] = (uint8_t)next();
	ir_copy_block(want, &d, ds, src, &s, ss, &b, es);
	struct gpu_copy2d v[256];
	int n = 0;
	bool ok = gpu_plan_block(&d, ds, &s, ss, &b, es, v, 256, &n) == 0;
	if (ok)
		apply(got, src, v, n);
	ok = ok && !memcmp(got, want, dn);
	free(src);
	free(want);
	free(got);
	return ok;
}

static void block_copies(void)
{
	int good = 0;
	for (int i = 0; i < 500; i++)
		good += random_copy();
	TAP_OK(good == 500, "500 random block copies as 2-D copies equal ir_copy_block (%d did)", good);
	/* a rank's piece of an all-gather along axis 1 of [4, 16, 8] f32 */
	struct ir_shape out = { 3, { 4, 16, 8 } }, piece = { 3, { 4, 4, 8 } };
	int64_t st[IR_MAX_RANK] = { 0, 8, 0 };
	struct gpu_copy2d v[4];
	int n = 0;
	int rc = gpu_plan_block(&out, st, &piece, NULL, &piece, 4, v, 4, &n);
	TAP_OK(rc == 0 && n == 1 && v[0].width == 4 * 8 * 4 && v[0].height == 4 && v[0].spitch == 128 &&
		       v[0].dpitch == 16 * 8 * 4 && v[0].dst == 8 * 8 * 4,
	       "an all-gather's piece along an inner axis is one 2-D copy (4 rows of 128 bytes, pitch 512)");
	rc = gpu_plan_block(&out, st, &piece, NULL, &piece, 4, v, 0, &n);
	TAP_OK(rc == -ENOSPC && n == 1, "too small a list says how many copies are needed");
}

/* ---- dots --------------------------------------------------------------------- */

struct dot_case {
	const char *what;
	struct ir_shape l, r;
	int nb, lb[2], rb[2], nc, lc[2], rc[2];
	bool gemm;
	struct gpu_gemm want;
};

static void fill_list(struct ir_ilist *l, int n, const int *v)
{
	l->n = n;
	for (int i = 0; i < n; i++)
		l->v[i] = v[i];
}

/* The dot as the GEMM g describes, by triple loop. */
static void run_gemm(const struct gpu_gemm *g, const float *a, const float *b, float *c)
{
	for (int64_t z = 0; z < g->batch; z++)
		for (int64_t i = 0; i < g->m; i++)
			for (int64_t j = 0; j < g->n; j++) {
				double s = 0;
				for (int64_t k = 0; k < g->k; k++) {
					double x = g->ta ? a[z * g->m * g->k + k * g->m + i]
							 : a[z * g->m * g->k + i * g->k + k];
					double y = g->tb ? b[z * g->n * g->k + j * g->k + k]
							 : b[z * g->n * g->k + k * g->n + j];
					s += x * y;
				}
				c[z * g->m * g->n + i * g->n + j] = (float)s;
			}
}

static void dot_case(const struct dot_case *dc, enum ir_dtype t)
{
	struct plan_kernel k = { .op = IR_OP_DOT, .nin = 2, .nout = 1 };
	enum ir_dtype dt[3] = { t, t, t };
	struct ir_shape sh[3] = { dc->l, dc->r };
	fill_list(&k.a.lhs_batch, dc->nb, dc->lb);
	fill_list(&k.a.rhs_batch, dc->nb, dc->rb);
	fill_list(&k.a.lhs_contract, dc->nc, dc->lc);
	fill_list(&k.a.rhs_contract, dc->nc, dc->rc);
	struct ir_value v[2] = { { .dtype = t, .shape = dc->l }, { .dtype = t, .shape = dc->r } };
	struct ir_value *vp[2] = { &v[0], &v[1] };
	if (ir_infer(IR_OP_DOT, 2, vp, &k.a, &dt[2], &sh[2]) < 0) {
		TAP_OK(0, "%s: the dot infers (%s)", dc->what, ir_error());
		return;
	}
	k.dtype = dt;
	k.shape = sh;
	struct gpu_gemm g;
	bool is = gpu_plan_gemm(&k, &g);
	if (!dc->gemm || t != IR_F32) {
		TAP_OK(!is, "%s (%s): not a GEMM in place", dc->what, ir_dtype_name(t));
		return;
	}
	const struct gpu_gemm *w = &dc->want;
	TAP_OK(is && g.batch == w->batch && g.m == w->m && g.n == w->n && g.k == w->k && g.ta == w->ta && g.tb == w->tb,
	       "%s: batch %lld m %lld n %lld k %lld%s%s", dc->what, (long long)w->batch, (long long)w->m,
	       (long long)w->n, (long long)w->k, w->ta ? ", lhs transposed" : "", w->tb ? ", rhs transposed" : "");
	struct ir_tensor in[2], out, ref;
	for (int j = 0; j < 2; j++) {
		ir_tensor_alloc(&in[j], IR_F32, &sh[j]);
		for (int64_t e = 0; e < ir_shape_numel(&sh[j]); e++)
			ir_tensor_set_f64(&in[j], e, (double)pick(17) - 8);
	}
	ir_tensor_alloc(&out, IR_F32, &sh[2]);
	bool same = is && interp_kernel(&k, in, &ref) == 0;
	if (same) {
		run_gemm(&g, in[0].data, in[1].data, out.data);
		same = !memcmp(out.data, ref.data, ir_tensor_bytes(&out));
		ir_tensor_free(&ref);
	}
	TAP_OK(same, "%s: that GEMM computes the interpreter's dot", dc->what);
	ir_tensor_free(&in[0]);
	ir_tensor_free(&in[1]);
	ir_tensor_free(&out);
}

static void dots(void)
{
	static const struct dot_case cases[] = {
		{ "batched matmul [2,3,4] x [2,4,5]",
		  { 3, { 2, 3, 4 } },
		  { 3, { 2, 4, 5 } },
		  1,
		  { 0 },
		  { 0 },
		  1,
		  { 2 },
		  { 1 },
		  true,
		  { 2, 3, 5, 4, false, false } },
		{ "weight gradient x^T dy: [4,3] x [4,5] over dim 0",
		  { 2, { 4, 3 } },
		  { 2, { 4, 5 } },
		  0,
		  { 0 },
		  { 0 },
		  1,
		  { 0 },
		  { 0 },
		  true,
		  { 1, 3, 5, 4, true, false } },
		{ "input gradient dy W^T: [4,5] x [3,5] over dim 1",
		  { 2, { 4, 5 } },
		  { 2, { 3, 5 } },
		  0,
		  { 0 },
		  { 0 },
		  1,
		  { 1 },
		  { 1 },
		  true,
		  { 1, 4, 3, 5, false, true } },
		{ "two contracting dims [2,3,4,5] x [4,5,6]",
		  { 4, { 2, 3, 4, 5 } },
		  { 3, { 4, 5, 6 } },
		  0,
		  { 0 },
		  { 0 },
		  2,
		  { 2, 3 },
		  { 0, 1 },
		  true,
		  { 1, 6, 6, 20, false, false } },
		{ "batch dim not leading [3,2,4] x [2,4,5]",
		  { 3, { 3, 2, 4 } },
		  { 3, { 2, 4, 5 } },
		  1,
		  { 1 },
		  { 0 },
		  1,
		  { 2 },
		  { 1 },
		  false,
		  { 0 } },
		{ "contracting dims out of order [2,3,4,5] x [5,4,6]",
		  { 4, { 2, 3, 4, 5 } },
		  { 3, { 5, 4, 6 } },
		  0,
		  { 0 },
		  { 0 },
		  2,
		  { 3, 2 },
		  { 0, 1 },
		  false,
		  { 0 } },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		dot_case(&cases[i], IR_F32);
	dot_case(&cases[0], IR_I64);
}

/* ---- transfers ------------------------------------------------------------------ */

static struct plan *compile(const char *pcc, const char *train, const char *dir, const char *name, const char *opts)
{
	char cmd[4096], path[2048];
	snprintf(path, sizeof path, "%s/%s.bin", dir, name);
	snprintf(cmd, sizeof cmd,
		 "'%s' '%s/gpt/model.onnx' --train --loss cross_entropy:logits,labels %s -o '%s' >/dev/null", pcc,
		 train, opts, path);
	if (!TAP_OK(system(cmd) == 0, "%s: pcc compiles (%s)", name, opts))
		return NULL;
	return plan_read(path);
}

/* The i-th receive of device d (in program order) and the one after it. */
static struct plan_instr *recv_at(struct plan *p, int d, int i)
{
	for (int j = 0; j < p->devices[d].ninstr; j++)
		if (p->devices[d].instr[j].kind == PLAN_RECV && i-- == 0)
			return &p->devices[d].instr[j];
	return NULL;
}

static void transfers(const char *pcc, const char *train, const char *dir)
{
	static const char *const opts[][2] = {
		{ "pp2", "--cluster cpu:2 --stages 2 --micro-batches 4" },
		{ "pp2x2", "--cluster cpu:4 --stages 2 --micro-batches 2" },
		{ "pp4", "--cluster cpu:4 --stages 4 --micro-batches 4" },
	};
	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		struct plan *p = compile(pcc, train, dir, opts[i][0], opts[i][1]);
		if (!p)
			continue;
		int *pairs = NULL, n = 0;
		int rc = gpu_plan_pairs(p, &pairs, &n);
		bool sorted = rc == 0 && n > 0;
		for (int k = 1; k < n && sorted; k++)
			sorted = pairs[2 * k - 2] < pairs[2 * k] ||
				 (pairs[2 * k - 2] == pairs[2 * k] && pairs[2 * k - 1] < pairs[2 * k + 1]);
		TAP_OK(sorted, "%s: %d ordered pairs of ranks exchange messages, each listed once", opts[i][0], n);
		ir_free(pairs);
		rc = gpu_plan_check_p2p(p);
		TAP_OK(rc == 0, "%s: every pair's receives take its sends in order, part by part%s%s", opts[i][0],
		       rc ? ": " : "", rc ? ir_error() : "");
		if (i == 0) {
			struct plan_instr *a = recv_at(p, 1, 0), *b = recv_at(p, 1, 1);
			bool two = a && b && a->peer == b->peer;
			if (two) {
				int t = a->tag;
				a->tag = b->tag;
				b->tag = t;
			}
			rc = gpu_plan_check_p2p(p);
			TAP_OK(two && rc == -EINVAL && strstr(ir_error(), "from rank 0 to rank 1") &&
				       strstr(ir_error(), "out of order"),
			       "%s: two receives swapped are refused (%s)", opts[i][0], ir_error());
			if (two) {
				int t = a->tag;
				a->tag = b->tag;
				b->tag = t;
				a->kind = PLAN_FREE;
			}
			rc = gpu_plan_check_p2p(p);
			TAP_OK(two && rc == -EINVAL && strstr(ir_error(), "never received"),
			       "%s: a send without its receive is refused (%s)", opts[i][0], ir_error());
		}
		plan_free(p);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_gpu_plan PCC TRAIN_DIR\n");
		return 2;
	}
	char dir[] = "/tmp/pcc-gpu-plan-XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	block_copies();
	dots();
	transfers(argv[1], argv[2], dir);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return tap_done();
}
