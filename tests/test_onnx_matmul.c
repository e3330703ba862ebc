/*
 * test_onnx_matmul.c: ONNX MatMul (onnx_matmul in compiler/frontend/onnx_ops_nn.c),
 * numpy.matmul's rules, and the grouped-query attention forms torch's
 * exporters write around it (issue 39).
 *
 * MatMul cases: batch dims broadcast from either side, operands of unequal
 * ranks (4 against 3 and 2, 5 against 4, 6 against 6 with 1s on both
 * sides), 1-d operands on either side or both. Values: the interpreter's
 * against a plain loop over numpy.matmul's definition (a 1-d lhs gains a
 * leading dim, a 1-d rhs a trailing one, both dropped from the result;
 * batch dims aligned right, a dim of 1 read at index 0). The operands hold
 * small multiples of 1/4 and 1/2, so every sum is exact in float and the
 * results must be equal.
 *
 * Grouped-query attention: q [B, H, S, D] against k [B, KV, S, D] whose
 * KV heads are each repeated R = H / KV times, scores[b, h, i, j] =
 * sum_d q[b, h, i, d] k[b, h / R, j, d], with the repeat written as
 *  - transformers' repeat_kv: Unsqueeze to [B, KV, 1, S, D], Expand to
 *    [B, KV, R, S, D], Reshape to [B, H, S, D];
 *  - torch.repeat_interleave, TorchScript exporter since torch 2.1:
 *    Unsqueeze, Tile by [1, 1, R, 1, 1], Reshape;
 *  - torch.repeat_interleave by a tensor of repeats (and by an int in
 *    torch 1.13), the exporter's per-head form: Split into the KV heads,
 *    each unsqueezed and expanded to [B, 1, R, S, D], reshaped to
 *    [B, R, S, D], Concat;
 *  - the grouped MatMul that needs no repeat: q reshaped to
 *    [B, KV, R, S, D] against k unsqueezed to [B, KV, 1, D, S] (rank 5,
 *    the repeat as a broadcast of the batch dims).
 * And the per-head form as torch's TorchScript exporter writes it when the
 * batch and sequence are symbolic (dynamic_axes): its Reshape target is
 * the input's sizes with each symbolic size as 0, [0, -1, 0, D], but the
 * tensor it reshapes has gained an axis, so the 0s copy [B, 1, R, S, D]'s
 * dims 0 and 2 (B and R, not B and S) and the heads come out [B, S, R, D].
 * ONNX Runtime 1.32 refuses the file at the MatMul as pcc does; the
 * refusal is one line naming the MatMul, both shapes and the dims that
 * disagree.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */

#include "onnx_builder.h"

enum { MAXN = 4096 };

static void dims_str(char *s, size_t cap, int rank, const int64_t *d)
{
	s[0] = 0;
	for (int i = 0; i < rank; i++)
		snprintf(s + strlen(s), cap - strlen(s), "%s%lld", i ? "," : "", (long long)d[i]);
}

static int64_t numel(int rank, const int64_t *d)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= d[i];
	return n;
}

/* Exact small values: multiples of 1/4 in [-1.25, 1.25] and of 1/2 in [-3, 3]. */
static void fill(float *x, int64_t n, int seed)
{
	for (int64_t i = 0; i < n; i++)
		x[i] = seed ? (float)((i * 5 + 3) % 13 - 6) * 0.5f : (float)((i * 7 + 1) % 11 - 5) * 0.25f;
}

/* numpy.matmul of a [ar dims ad] and b [br dims bd] into y, its dims into
 * yd (rank returned); -1 when the batch dims do not broadcast. */
static int matmul_ref(int ar, const int64_t *ad, const float *a, int br, const int64_t *bd, const float *b, float *y,
		      int64_t *yd)
{
	int64_t A[IR_MAX_RANK], B[IR_MAX_RANK];
	int pa = ar == 1 ? 2 : ar, pb = br == 1 ? 2 : br;
	for (int i = 0; i < ar; i++)
		A[pa - ar + i] = ad[i]; /* [K] -> [1, K] */
	if (ar == 1)
		A[0] = 1;
	for (int i = 0; i < br; i++)
		B[i] = bd[i]; /* [K] -> [K, 1] */
	if (br == 1)
		B[1] = 1;
	int nb = (pa > pb ? pa : pb) - 2, yr = 0;
	int64_t batch[IR_MAX_RANK], M = A[pa - 2], K = A[pa - 1], N = B[pb - 1];
	for (int i = 0; i < nb; i++) {
		int ai = i - (nb - (pa - 2)), bi = i - (nb - (pb - 2));
		int64_t da = ai >= 0 ? A[ai] : 1, db = bi >= 0 ? B[bi] : 1;
		if (da != db && da != 1 && db != 1)
			return -1;
		batch[i] = da == 1 ? db : da;
		yd[yr++] = batch[i];
	}
	if (ar > 1)
		yd[yr++] = M;
	if (br > 1)
		yd[yr++] = N;
	int64_t nbatch = numel(nb, batch);
	for (int64_t t = 0; t < nbatch; t++) {
		/* t's batch coordinates, each read at 0 where the operand's dim is 1 */
		int64_t aoff = 0, boff = 0, astride = M * K, bstride = K * N, rest = t;
		for (int i = nb - 1; i >= 0; i--) {
			int64_t c = rest % batch[i];
			rest /= batch[i];
			int ai = i - (nb - (pa - 2)), bi = i - (nb - (pb - 2));
			if (ai >= 0) {
				aoff += (A[ai] == 1 ? 0 : c) * astride;
				astride *= A[ai];
			}
			if (bi >= 0) {
				boff += (B[bi] == 1 ? 0 : c) * bstride;
				bstride *= B[bi];
			}
		}
		for (int64_t m = 0; m < M; m++)
			for (int64_t n = 0; n < N; n++) {
				double s = 0;
				for (int64_t k = 0; k < K; k++)
					s += (double)a[aoff + m * K + k] * b[boff + k * N + n];
				y[(t * M + m) * N + n] = (float)s;
			}
	}
	return yr;
}

/* Runs g on inputs and compares its one output with want of dims wd. */
static void check_run(const char *what, struct ir_graph *g, struct ir_tensor *in, int wr, const int64_t *wd,
		      const float *want)
{
	struct ir_tensor y = { 0 };
	int rc = interp_run(g, in, &y);
	bool ok = rc == 0 && y.shape.rank == wr;
	for (int i = 0; ok && i < wr; i++)
		ok = y.shape.dims[i] == wd[i];
	int64_t n = numel(wr, wd), bad = -1;
	for (int64_t i = 0; ok && i < n; i++)
		if (((float *)y.data)[i] != want[i]) {
			bad = i;
			ok = false;
		}
	char ws[128];
	dims_str(ws, sizeof ws, wr, wd);
	TAP_OK(ok, "%s: [%s], every element the definition's", what, ws);
	if (rc)
		TAP_DIAG("  %s", ir_error());
	else if (bad >= 0)
		TAP_DIAG("  element %lld: %g, want %g", (long long)bad, ((float *)y.data)[bad], want[bad]);
	if (rc == 0)
		ir_tensor_free(&y);
}

static void check_matmul(int ar, const int64_t *ad, int br, const int64_t *bd)
{
	static float a[MAXN], b[MAXN], want[MAXN];
	int64_t yd[IR_MAX_RANK];
	char as[128], bs[128], ys[128], what[300];
	fill(a, numel(ar, ad), 0);
	fill(b, numel(br, bd), 1);
	int yr = matmul_ref(ar, ad, a, br, bd, b, want, yd);
	dims_str(as, sizeof as, ar, ad);
	dims_str(bs, sizeof bs, br, bd);
	dims_str(ys, sizeof ys, yr, yd);
	snprintf(what, sizeof what, "MatMul [%s] x [%s]", as, bs);
	struct mb *m = mb_new(17);
	mb_input(m, "a", T_FLOAT, as);
	mb_input(m, "b", T_FLOAT, bs);
	mb_node(m, "MatMul", "mm", "a,b", "y");
	mb_output(m, "y", T_FLOAT, ys);
	struct ir_graph *g = expect_import(what, mb_write(m, "matmul.onnx"), NULL);
	mb_free(m);
	if (!g)
		return;
	struct ir_tensor in[2];
	ir_tensor_alloc(&in[0], IR_F32, &ir_graph_input(g, 0)->shape);
	ir_tensor_alloc(&in[1], IR_F32, &ir_graph_input(g, 1)->shape);
	memcpy(in[0].data, a, (size_t)numel(ar, ad) * sizeof *a);
	memcpy(in[1].data, b, (size_t)numel(br, bd) * sizeof *b);
	check_run(what, g, in, yr, yd, want);
	ir_tensor_free(&in[0]);
	ir_tensor_free(&in[1]);
	ir_graph_free(g);
}

/* ---- grouped-query attention ------------------------------------------- */

enum { B_ = 2, H_ = 4, KV_ = 2, R_ = H_ / KV_, S_ = 3, D_ = 4 };

enum gqa_form {
	REPEAT_KV,      /* Unsqueeze, Expand, Reshape */
	TILE,           /* Unsqueeze, Tile, Reshape */
	PER_HEAD,       /* Split, then per head Unsqueeze, Expand, Reshape; Concat */
	PER_HEAD_ZEROS, /* PER_HEAD with the symbolic export's Reshape to [0, -1, 0, D] */
	GROUPED_MATMUL, /* q as [B, KV, R, S, D] against k as [B, KV, 1, D, S] */
};

static const char *const gqa_name[] = {
	[REPEAT_KV] = "repeat_kv's Unsqueeze, Expand and Reshape",
	[TILE] = "repeat_interleave as Unsqueeze, Tile and Reshape",
	[PER_HEAD] = "repeat_interleave per head (Split, Expand, Reshape, Concat)",
	[PER_HEAD_ZEROS] = "repeat_interleave per head, reshaped to [0,-1,0,D] as the symbolic export does",
	[GROUPED_MATMUL] = "the grouped rank-5 MatMul, the repeat a broadcast",
};

static void mb_i64(struct mb *b, const char *name, int n, const int64_t *v)
{
	mb_init_i64(b, name, (size_t)n, v);
}

/* scores = q [B,H,S,D] x transpose(repeat(k)) [B,H,D,S], the repeat as form f. */
static struct mb *gqa_model(enum gqa_form f)
{
	struct mb *b = mb_new(17);
	mb_input(b, "q", T_FLOAT, "2,4,3,4");
	mb_input(b, "k", T_FLOAT, "2,2,3,4");
	mb_i64(b, "axis2", 1, (int64_t[]){ 2 });
	mb_i64(b, "bhsd", 4, (int64_t[]){ B_, H_, S_, D_ });
	switch (f) {
	case REPEAT_KV:
		mb_i64(b, "to5", 5, (int64_t[]){ B_, KV_, R_, S_, D_ });
		mb_node(b, "Unsqueeze", "unsq", "k,axis2", "k5");
		mb_node(b, "Expand", "expand", "k5,to5", "kx");
		mb_node(b, "Reshape", "heads", "kx,bhsd", "kr");
		break;
	case TILE:
		mb_i64(b, "reps", 5, (int64_t[]){ 1, 1, R_, 1, 1 });
		mb_node(b, "Unsqueeze", "unsq", "k,axis2", "k5");
		mb_node(b, "Tile", "tile", "k5,reps", "kx");
		mb_node(b, "Reshape", "heads", "kx,bhsd", "kr");
		break;
	case PER_HEAD:
	case PER_HEAD_ZEROS:
		mb_i64(b, "ones", KV_, (int64_t[]){ 1, 1 });
		mb_i64(b, "to5", 5, (int64_t[]){ 1, 1, R_, 1, 1 });
		if (f == PER_HEAD)
			mb_i64(b, "brsd", 4, (int64_t[]){ B_, R_, S_, D_ });
		else
			mb_i64(b, "brsd", 4, (int64_t[]){ 0, -1, 0, D_ });
		mb_attr_int(b, mb_node(b, "Split", "split", "k,ones", "k0,k1"), "axis", 1);
		mb_node(b, "Unsqueeze", "unsq0", "k0,axis2", "k05");
		mb_node(b, "Unsqueeze", "unsq1", "k1,axis2", "k15");
		mb_node(b, "Expand", "expand0", "k05,to5", "k0x");
		mb_node(b, "Expand", "expand1", "k15,to5", "k1x");
		mb_node(b, "Reshape", "heads0", "k0x,brsd", "k0r");
		mb_node(b, "Reshape", "heads1", "k1x,brsd", "k1r");
		mb_attr_int(b, mb_node(b, "Concat", "concat", "k0r,k1r", "kr"), "axis", 1);
		break;
	case GROUPED_MATMUL:
		mb_i64(b, "grouped", 5, (int64_t[]){ B_, KV_, R_, S_, D_ });
		mb_node(b, "Reshape", "groups", "q,grouped", "q5");
		mb_node(b, "Unsqueeze", "unsq", "k,axis2", "k5");
		mb_attr_ints(b, mb_node(b, "Transpose", "kt", "k5", "k5t"), "perm", 5, (int64_t[]){ 0, 1, 2, 4, 3 });
		mb_node(b, "MatMul", "scores", "q5,k5t", "s5");
		mb_node(b, "Reshape", "heads", "s5,bhss", "y");
		mb_i64(b, "bhss", 4, (int64_t[]){ B_, H_, S_, S_ });
		mb_output(b, "y", T_FLOAT, "2,4,3,3");
		return b;
	}
	mb_attr_ints(b, mb_node(b, "Transpose", "kt", "kr", "krt"), "perm", 4, (int64_t[]){ 0, 1, 3, 2 });
	mb_node(b, "MatMul", "scores", "q,krt", "y");
	mb_output(b, "y", T_FLOAT, "2,4,3,3");
	return b;
}

static void check_gqa(enum gqa_form f)
{
	static float q[B_ * H_ * S_ * D_], k[B_ * KV_ * S_ * D_], want[B_ * H_ * S_ * S_];
	fill(q, B_ * H_ * S_ * D_, 0);
	fill(k, B_ * KV_ * S_ * D_, 1);
	for (int b = 0; b < B_; b++)
		for (int h = 0; h < H_; h++)
			for (int i = 0; i < S_; i++)
				for (int j = 0; j < S_; j++) {
					double s = 0;
					for (int d = 0; d < D_; d++)
						s += (double)q[((b * H_ + h) * S_ + i) * D_ + d] *
						     k[((b * KV_ + h / R_) * S_ + j) * D_ + d];
					want[((b * H_ + h) * S_ + i) * S_ + j] = (float)s;
				}
	char what[200];
	snprintf(what, sizeof what, "GQA scores, %s", gqa_name[f]);
	struct mb *m = gqa_model(f);
	struct ir_graph *g = expect_import(what, mb_write(m, "gqa.onnx"), NULL);
	mb_free(m);
	if (!g)
		return;
	struct ir_tensor in[2];
	ir_tensor_alloc(&in[0], IR_F32, &ir_graph_input(g, 0)->shape);
	ir_tensor_alloc(&in[1], IR_F32, &ir_graph_input(g, 1)->shape);
	memcpy(in[0].data, q, sizeof q);
	memcpy(in[1].data, k, sizeof k);
	check_run(what, g, in, 4, (int64_t[]){ B_, H_, S_, S_ }, want);
	ir_tensor_free(&in[0]);
	ir_tensor_free(&in[1]);
	ir_graph_free(g);
}

int main(void)
{
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	/* equal ranks, a 1 on either side */
	check_matmul(4, (int64_t[]){ 2, 4, 3, 5 }, 4, (int64_t[]){ 2, 1, 5, 2 });
	check_matmul(4, (int64_t[]){ 1, 4, 3, 5 }, 4, (int64_t[]){ 2, 4, 5, 2 });
	check_matmul(4, (int64_t[]){ 1, 1, 3, 5 }, 4, (int64_t[]){ 2, 4, 5, 2 });
	/* unequal ranks */
	check_matmul(4, (int64_t[]){ 2, 4, 3, 5 }, 3, (int64_t[]){ 4, 5, 2 });
	check_matmul(3, (int64_t[]){ 4, 3, 5 }, 4, (int64_t[]){ 2, 1, 5, 2 });
	check_matmul(2, (int64_t[]){ 3, 5 }, 4, (int64_t[]){ 2, 4, 5, 2 });
	check_matmul(4, (int64_t[]){ 2, 4, 3, 5 }, 2, (int64_t[]){ 5, 2 });
	check_matmul(5, (int64_t[]){ 2, 2, 2, 3, 5 }, 4, (int64_t[]){ 2, 1, 5, 3 });
	check_matmul(6, (int64_t[]){ 3, 1, 2, 1, 2, 3 }, 6, (int64_t[]){ 1, 2, 1, 2, 3, 2 });
	check_matmul(3, (int64_t[]){ 1, 3, 5 }, 5, (int64_t[]){ 2, 1, 2, 5, 2 });
	/* 1-d operands */
	check_matmul(1, (int64_t[]){ 5 }, 4, (int64_t[]){ 2, 4, 5, 2 });
	check_matmul(4, (int64_t[]){ 2, 4, 3, 5 }, 1, (int64_t[]){ 5 });
	check_matmul(1, (int64_t[]){ 5 }, 2, (int64_t[]){ 5, 2 });
	check_matmul(2, (int64_t[]){ 3, 5 }, 1, (int64_t[]){ 5 });
	check_matmul(1, (int64_t[]){ 5 }, 1, (int64_t[]){ 5 });

	check_gqa(REPEAT_KV);
	check_gqa(TILE);
	check_gqa(PER_HEAD);
	check_gqa(GROUPED_MATMUL);
	EXPECT_MODEL_ERROR(gqa_model(PER_HEAD_ZEROS), "gqa_zeros.onnx", gqa_name[PER_HEAD_ZEROS],
			   "node \"scores\" (MatMul)", "batch dims of [2,4,3,4] and [2,6,4,2] do not broadcast",
			   "4 against 6");

	struct mb *b = mb_new(17);
	mb_input(b, "a", T_FLOAT, "2,4,3,5");
	mb_input(b, "b", T_FLOAT, "2,3,5,2");
	mb_node(b, "MatMul", "mm", "a,b", "y");
	mb_output(b, "y", T_FLOAT, "2,4,3,2");
	EXPECT_MODEL_ERROR(b, "matmul_heads.onnx", "MatMul of 4 heads against 3: refused in one line",
			   "node \"mm\" (MatMul)", "batch dims of [2,4,3,5] and [2,3,5,2] do not broadcast",
			   "4 against 3");
	tmpdir_remove(tmpdir);
	return tap_done();
}
