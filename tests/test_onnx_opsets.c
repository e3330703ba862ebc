/*
 * test_onnx_opsets.c: the op forms of ONNX opsets 18 to 21, each in a
 * small hand-built model (onnx_builder.h) whose inputs are initializers,
 * through import and the reference interpreter, against ONNX's reference
 * evaluator (or numpy where that has no kernel): onnx_opsets_expect.h,
 * written by tests/gen_onnx_opsets.py, which builds the same models. Also
 * the edges: a form used at an opset older than the one that brought it,
 * Split's num_outputs against its outputs, And on integers and Bitwise* on
 * bool, LayerNormalization's statistics in its stash type; and the
 * sequence ops the dynamo exporter writes for torch.split without its
 * optimizer (SplitToSequence, SequenceAt: expected values by hand).
 *
 * Tolerance: the interpreter computes in double; f32 results within 1e-5
 * relative (1e-6 absolute near zero) of the reference's f32 ones.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <math.h>

#include "onnx_builder.h"
#include "onnx_opsets_expect.h"

#define RTOL 1e-5
#define ATOL 1e-6
#define OUT_MAX 8

/* An initializer from one of the header's arrays (all of it). */
#define INIT(b, name, type, dims, arr) mb_init_raw(b, name, type, dims, arr, sizeof arr)

struct run {
	struct ir_graph *g;
	struct ir_tensor out[OUT_MAX];
	int nout;
};

/* Imports b (written to tmpdir/file, then freed) and runs it on no inputs;
 * false, with a failed case, when either fails. */
static bool run_model(struct mb *b, const char *file, const char *what, struct run *r)
{
	struct ir_tensor none[1] = { 0 };
	memset(r, 0, sizeof *r);
	ir_error_clear();
	r->g = onnx_import(mb_write(b, file), NULL, NULL);
	mb_free(b);
	if (r->g && ir_graph_ninputs(r->g) == 0 && ir_graph_noutputs(r->g) <= OUT_MAX) {
		r->nout = ir_graph_noutputs(r->g);
		if (interp_run(r->g, none, r->out) == 0)
			return true;
		r->nout = 0;
	}
	TAP_OK(0, "%s", what);
	TAP_DIAG("  %s", ir_error());
	ir_graph_free(r->g);
	r->g = NULL;
	return false;
}

static void run_free(struct run *r)
{
	for (int i = 0; i < r->nout; i++)
		ir_tensor_free(&r->out[i]);
	ir_graph_free(r->g);
}

/* Output k is f32 with n elements, each within tolerance of want. */
static void expect_f32(const struct run *r, int k, const float *want, size_t n, const char *what)
{
	const struct ir_tensor *t = &r->out[k];
	bool ok = t->dtype == IR_F32 && (size_t)ir_shape_numel(&t->shape) == n;
	size_t bad = n;
	for (size_t i = 0; ok && i < n; i++) {
		double got = ir_tensor_get_f64(t, (int64_t)i), w = want[i];
		if (!(fabs(got - w) <= ATOL + RTOL * fabs(w))) {
			ok = false;
			bad = i;
		}
	}
	TAP_OK(ok, "%s", what);
	if (bad < n)
		TAP_DIAG("  element %zu: got %.9g, expected %.9g", bad, ir_tensor_get_f64(t, (int64_t)bad),
			 (double)want[bad]);
	else if (!ok)
		TAP_DIAG("  got %s with %lld elements, expected f32 with %zu", ir_dtype_name(t->dtype),
			 (long long)ir_shape_numel(&t->shape), n);
}

/* Output k is dtype with exactly the bytes of want. */
static void expect_exact(const struct run *r, int k, enum ir_dtype dtype, const void *want, size_t nbytes,
			 const char *what)
{
	const struct ir_tensor *t = &r->out[k];
	TAP_OK(t->dtype == dtype && ir_tensor_bytes(t) == nbytes && memcmp(t->data, want, nbytes) == 0, "%s", what);
}
#define EXPECT_F32(r, k, want, what) expect_f32(r, k, want, sizeof want / sizeof want[0], what)
#define EXPECT_EXACT(r, k, dtype, want, what) expect_exact(r, k, dtype, want, sizeof want, what)

/* ---- Reduce*-18: axes as an input, noop_with_empty_axes; -20 on bool ---- */

static void test_reduce(void)
{
	struct mb *b = mb_new(18);
	struct run r;
	INIT(b, "x", T_FLOAT, "2,3,4", reduce_x);
	INIT(b, "ax_l2", T_INT64, "2", reduce_ax_l2);
	INIT(b, "ax_lse", T_INT64, "1", reduce_ax_lse);
	INIT(b, "ax_prod", T_INT64, "1", reduce_ax_prod);
	mb_attr_int(b, mb_node(b, "ReduceL2", "l2", "x,ax_l2", "l2"), "keepdims", 0);
	mb_attr_int(b, mb_node(b, "ReduceLogSumExp", "lse", "x,ax_lse", "lse"), "keepdims", 1);
	mb_attr_int(b, mb_node(b, "ReduceSumSquare", "ssq", "x", "ssq"), "keepdims", 0);
	mb_attr_int(b, mb_node(b, "ReduceProd", "prod", "x,ax_prod", "prod"), "keepdims", 0);
	mb_attr_int(b, mb_node(b, "ReduceMean", "noop", "x", "noop"), "noop_with_empty_axes", 1);
	const char *outs[] = { "l2", "lse", "ssq", "prod", "noop" };
	for (int i = 0; i < 5; i++)
		mb_output(b, outs[i], T_FLOAT, "");
	if (run_model(b, "reduce18.onnx", "Reduce*-18 imports and runs", &r)) {
		EXPECT_F32(&r, 0, reduce_l2, "ReduceL2-18, axes input [-1, 0], keepdims 0");
		EXPECT_F32(&r, 1, reduce_lse, "ReduceLogSumExp-18, axes input [1], keepdims 1");
		EXPECT_F32(&r, 2, reduce_ssq, "ReduceSumSquare-18 without axes: all of them");
		EXPECT_F32(&r, 3, reduce_prod, "ReduceProd-18, axes input [2]");
		EXPECT_F32(&r, 4, reduce_x, "ReduceMean-18 with noop_with_empty_axes and no axes: the input");
		run_free(&r);
	}

	b = mb_new(20);
	INIT(b, "b", T_BOOL, "3,3", reduce_bool_b);
	INIT(b, "ax", T_INT64, "1", reduce_bool_ax);
	mb_attr_int(b, mb_node(b, "ReduceMax", "any", "b,ax", "any"), "keepdims", 0);
	mb_attr_int(b, mb_node(b, "ReduceMin", "all", "b,ax", "all"), "keepdims", 0);
	mb_output(b, "any", T_BOOL, "");
	mb_output(b, "all", T_BOOL, "");
	if (run_model(b, "reduce20_bool.onnx", "ReduceMax/Min-20 on bool import and run", &r)) {
		EXPECT_EXACT(&r, 0, IR_BOOL, reduce_bool_any, "ReduceMax-20 on bool is any");
		EXPECT_EXACT(&r, 1, IR_BOOL, reduce_bool_all, "ReduceMin-20 on bool is all");
		run_free(&r);
	}

	b = mb_new(17);
	INIT(b, "x", T_FLOAT, "2,3,4", reduce_x);
	mb_attr_int(b, mb_node(b, "ReduceMean", "noop", "x", "y"), "noop_with_empty_axes", 1);
	mb_output(b, "y", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "reduce17_noop.onnx", "ReduceMean's noop_with_empty_axes at opset 17",
			   "node \"noop\" (ReduceMean)", "'noop_with_empty_axes' came with ReduceMean-18",
			   "imports opset 17");
}

/* ---- Pad-18 axes, Pad-19 wrap ---- */

static void test_pad(void)
{
	struct mb *b = mb_new(19);
	struct run r;
	INIT(b, "x", T_FLOAT, "2,3", pad_x);
	INIT(b, "p_wrap", T_INT64, "2", pad_p_wrap);
	INIT(b, "ax1", T_INT64, "1", pad_ax1);
	INIT(b, "p_const", T_INT64, "2", pad_p_const);
	INIT(b, "v", T_FLOAT, "", pad_v);
	INIT(b, "axm1", T_INT64, "1", pad_axm1);
	INIT(b, "p_edge", T_INT64, "2", pad_p_edge);
	INIT(b, "ax0", T_INT64, "1", pad_ax0);
	mb_attr_string(b, mb_node(b, "Pad", "wrap", "x,p_wrap,,ax1", "wrap"), "mode", "wrap");
	mb_attr_string(b, mb_node(b, "Pad", "const", "x,p_const,v,axm1", "const"), "mode", "constant");
	mb_attr_string(b, mb_node(b, "Pad", "edge", "x,p_edge,,ax0", "edge"), "mode", "edge");
	mb_output(b, "wrap", T_FLOAT, "");
	mb_output(b, "const", T_FLOAT, "");
	mb_output(b, "edge", T_FLOAT, "");
	if (run_model(b, "pad19.onnx", "Pad-18/19 import and run", &r)) {
		EXPECT_F32(&r, 0, pad_wrap, "Pad-19 wrap by 4 and 2 on a dim of 3 (axes [1])");
		EXPECT_F32(&r, 1, pad_const, "Pad-18 constant 9.5 on axes [-1]");
		EXPECT_F32(&r, 2, pad_edge, "Pad-18 edge on axes [0]");
		run_free(&r);
	}

	b = mb_new(18);
	INIT(b, "x", T_FLOAT, "2,3", pad_x);
	INIT(b, "p_wrap", T_INT64, "2", pad_p_wrap);
	INIT(b, "ax1", T_INT64, "1", pad_ax1);
	mb_attr_string(b, mb_node(b, "Pad", "wrap", "x,p_wrap,,ax1", "wrap"), "mode", "wrap");
	mb_output(b, "wrap", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "pad18_wrap.onnx", "Pad's wrap mode at opset 18", "node \"wrap\" (Pad)",
			   "mode 'wrap' came with Pad-19");
	b = mb_new(19);
	INIT(b, "x", T_FLOAT, "2,3", pad_x);
	mb_init_i64(b, "huge", 2, (int64_t[]){ INT64_MAX, INT64_MIN });
	INIT(b, "ax1", T_INT64, "1", pad_ax1);
	mb_attr_string(b, mb_node(b, "Pad", "wrap", "x,huge,,ax1", "wrap"), "mode", "wrap");
	mb_output(b, "wrap", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "pad19_wrap_huge.onnx", "Pad-19 wrap by pads near the int64 limits",
			   "node \"wrap\" (Pad)", "wrap padding of dim 1 (size 3)", "is not supported");
}

/* ---- ScatterElements-18, ScatterND-18: max and min ---- */

static void test_scatter(void)
{
	struct mb *b = mb_new(18);
	struct run r;
	INIT(b, "d", T_FLOAT, "2,3", scatter_d);
	INIT(b, "ie", T_INT64, "2,3", scatter_ie);
	INIT(b, "ue", T_FLOAT, "2,3", scatter_ue);
	INIT(b, "ind", T_INT64, "3,2", scatter_ind);
	INIT(b, "und", T_FLOAT, "3", scatter_und);
	Onnx__NodeProto *n = mb_node(b, "ScatterElements", "emax", "d,ie,ue", "emax");
	mb_attr_int(b, n, "axis", 1);
	mb_attr_string(b, n, "reduction", "max");
	n = mb_node(b, "ScatterElements", "emin", "d,ie,ue", "emin");
	mb_attr_int(b, n, "axis", 1);
	mb_attr_string(b, n, "reduction", "min");
	mb_attr_string(b, mb_node(b, "ScatterND", "ndmin", "d,ind,und", "ndmin"), "reduction", "min");
	mb_attr_string(b, mb_node(b, "ScatterND", "ndmax", "d,ind,und", "ndmax"), "reduction", "max");
	const char *outs[] = { "emax", "emin", "ndmin", "ndmax" };
	for (int i = 0; i < 4; i++)
		mb_output(b, outs[i], T_FLOAT, "");
	if (run_model(b, "scatter18.onnx", "ScatterElements/ScatterND-18 import and run", &r)) {
		EXPECT_F32(&r, 0, scatter_emax, "ScatterElements-18 max, repeated indices");
		EXPECT_F32(&r, 1, scatter_emin, "ScatterElements-18 min, repeated indices");
		EXPECT_F32(&r, 2, scatter_ndmin, "ScatterND-18 min, a repeated index");
		EXPECT_F32(&r, 3, scatter_ndmax, "ScatterND-18 max, a repeated index");
		run_free(&r);
	}

	b = mb_new(17);
	INIT(b, "d", T_FLOAT, "2,3", scatter_d);
	INIT(b, "ind", T_INT64, "3,2", scatter_ind);
	INIT(b, "und", T_FLOAT, "3", scatter_und);
	mb_attr_string(b, mb_node(b, "ScatterND", "ndmax", "d,ind,und", "ndmax"), "reduction", "max");
	mb_output(b, "ndmax", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "scatter17_max.onnx", "ScatterND's max at opset 17", "node \"ndmax\" (ScatterND)",
			   "reduction 'max' came with ScatterND-18, but the model imports opset 17");
}

/* ---- Split-18 num_outputs ---- */

static void test_split(void)
{
	struct mb *b = mb_new(18);
	struct run r;
	INIT(b, "x", T_FLOAT, "7", split_x);
	mb_attr_int(b, mb_node(b, "Split", "parts", "x", "a,b,c"), "num_outputs", 3);
	mb_output(b, "a", T_FLOAT, "");
	mb_output(b, "b", T_FLOAT, "");
	mb_output(b, "c", T_FLOAT, "");
	if (run_model(b, "split18.onnx", "Split-18 imports and runs", &r)) {
		EXPECT_F32(&r, 0, split_a, "Split-18 num_outputs 3 of 7: first part of ceil(7/3)");
		EXPECT_F32(&r, 1, split_b, "Split-18 num_outputs 3 of 7: second part");
		EXPECT_F32(&r, 2, split_c, "Split-18 num_outputs 3 of 7: the rest");
		run_free(&r);
	}

	b = mb_new(18);
	INIT(b, "x", T_FLOAT, "7", split_x);
	mb_attr_int(b, mb_node(b, "Split", "parts", "x", "a,b,c"), "num_outputs", 2);
	mb_output(b, "a", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "split18_count.onnx", "Split-18 whose num_outputs is not its outputs' count",
			   "node \"parts\" (Split)", "num_outputs is 2, but the node has 3 outputs");
	b = mb_new(17);
	INIT(b, "x", T_FLOAT, "7", split_x);
	mb_attr_int(b, mb_node(b, "Split", "parts", "x", "a,b,c"), "num_outputs", 3);
	mb_output(b, "a", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "split17_num_outputs.onnx", "Split's num_outputs at opset 17", "node \"parts\" (Split)",
			   "'num_outputs' came with Split-18");
}

/* ---- SplitToSequence and SequenceAt (opset 11; the dynamo exporter's
 * torch.split without its optimizer): x = 0..9 as [2,5], the expected
 * parts by hand ---- */

static const float seq_x[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };

/* x, then SplitToSequence(x[, split]) -> s, SequenceAt(s, pos) -> y for
 * each position, outputs y0, y1... */
static struct mb *mb_seq(const char *split_ins, int64_t axis, int npos, const int64_t *pos)
{
	struct mb *b = mb_new(18);
	INIT(b, "x", T_FLOAT, "2,5", seq_x);
	mb_attr_int(b, mb_node(b, "SplitToSequence", "split", split_ins, "s"), "axis", axis);
	for (int i = 0; i < npos; i++) {
		char p[8], y[8], ins[16];
		snprintf(p, sizeof p, "p%d", i);
		snprintf(y, sizeof y, "y%d", i);
		snprintf(ins, sizeof ins, "s,%s", p);
		mb_init_raw(b, p, T_INT64, "", &pos[i], sizeof pos[i]);
		mb_node(b, "SequenceAt", y, ins, y);
		mb_output(b, y, T_FLOAT, "");
	}
	return b;
}

static void test_sequence(void)
{
	struct run r;
	struct mb *b = mb_seq("x,sizes", 1, 2, (int64_t[]){ 1, -2 });
	mb_init_i64(b, "sizes", 2, (int64_t[]){ 2, 3 });
	if (run_model(b, "seq_list.onnx", "SplitToSequence with split [2,3] imports and runs", &r)) {
		EXPECT_F32(&r, 0, ((float[]){ 2, 3, 4, 7, 8, 9 }), "SequenceAt 1 of split [2,3] on axis 1");
		EXPECT_F32(&r, 1, ((float[]){ 0, 1, 5, 6 }), "SequenceAt -2 of split [2,3]: the first part");
		run_free(&r);
	}
	b = mb_seq("x,two", 1, 1, (int64_t[]){ 2 });
	mb_init_raw(b, "two", T_INT64, "", &(int64_t){ 2 }, 8);
	if (run_model(b, "seq_scalar.onnx", "SplitToSequence with a scalar split imports and runs", &r)) {
		struct ir_shape want = { 2, { 2, 1 } };
		EXPECT_F32(&r, 0, ((float[]){ 4, 9 }),
			   "scalar split 2 of 5 columns: the third part is the last column");
		TAP_OK(ir_shape_eq(&r.out[0].shape, &want), "the third part of scalar split 2 of 5 is [2,1]");
		run_free(&r);
	}
	b = mb_seq("x", 0, 1, (int64_t[]){ -1 });
	mb_attr_int(b, b->g.node[0], "keepdims", 0);
	if (run_model(b, "seq_nokeep.onnx", "SplitToSequence without split, keepdims 0, imports and runs", &r)) {
		struct ir_shape want = { 1, { 5 } };
		EXPECT_F32(&r, 0, ((float[]){ 5, 6, 7, 8, 9 }), "no split: parts of 1, SequenceAt -1 the last row");
		TAP_OK(ir_shape_eq(&r.out[0].shape, &want), "keepdims 0 drops the split axis: [5]");
		run_free(&r);
	}
	b = mb_seq("x", 0, 1, (int64_t[]){ 2 });
	EXPECT_MODEL_ERROR(b, "seq_range.onnx", "SequenceAt past the end refused", "node \"y0\" (SequenceAt)",
			   "position 2 is outside the sequence of 2 tensors");
	b = mb_seq("x", 0, 0, NULL);
	mb_output(b, "s", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "seq_output.onnx", "a sequence as a graph output refused", "graph output \"s\"",
			   "is a sequence (pcc's outputs are tensors)");
	b = mb_seq("x", 0, 0, NULL);
	mb_node(b, "Identity", "copy", "s", "y");
	mb_output(b, "y", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "seq_identity.onnx", "a sequence read by another op than SequenceAt refused",
			   "node \"copy\" (Identity)",
			   "input \"s\" is a sequence: pcc reads sequences only with SequenceAt");
}

/* ---- Resize-18/19 ---- */

static void test_resize(void)
{
	struct mb *b = mb_new(19);
	struct run r;
	INIT(b, "x", T_FLOAT, "1,1,4,6", resize_x);
	INIT(b, "sz_hw", T_INT64, "2", resize_sz_hw);
	INIT(b, "sc_half", T_FLOAT, "4", resize_sc_half);
	INIT(b, "sz_cubic", T_INT64, "4", resize_sz_cubic);
	INIT(b, "sc_sym", T_FLOAT, "4", resize_sc_sym);
	INIT(b, "sc_w", T_FLOAT, "1", resize_sc_w);
	Onnx__NodeProto *n = mb_node(b, "Resize", "keep", "x,,,sz_hw", "keep");
	mb_attr_string(b, n, "mode", "linear");
	mb_attr_ints(b, n, "axes", 2, (int64_t[]){ 2, 3 });
	mb_attr_string(b, n, "keep_aspect_ratio_policy", "not_larger");
	n = mb_node(b, "Resize", "keep_big", "x,,,sz_hw", "keep_big");
	mb_attr_string(b, n, "mode", "nearest");
	mb_attr_ints(b, n, "axes", 2, (int64_t[]){ -2, -1 });
	mb_attr_string(b, n, "keep_aspect_ratio_policy", "not_smaller");
	n = mb_node(b, "Resize", "aa_lin", "x,,sc_half", "aa_lin");
	mb_attr_string(b, n, "mode", "linear");
	mb_attr_int(b, n, "antialias", 1);
	n = mb_node(b, "Resize", "aa_cub", "x,,,sz_cubic", "aa_cub");
	mb_attr_string(b, n, "mode", "cubic");
	mb_attr_int(b, n, "antialias", 1);
	n = mb_node(b, "Resize", "sym", "x,,sc_sym", "sym");
	mb_attr_string(b, n, "mode", "linear");
	mb_attr_string(b, n, "coordinate_transformation_mode", "half_pixel_symmetric");
	n = mb_node(b, "Resize", "axis_w", "x,,sc_w", "axis_w");
	mb_attr_string(b, n, "mode", "nearest");
	mb_attr_ints(b, n, "axes", 1, (int64_t[]){ 3 });
	const char *outs[] = { "keep", "keep_big", "aa_lin", "aa_cub", "sym", "axis_w" };
	for (int i = 0; i < 6; i++)
		mb_output(b, outs[i], T_FLOAT, "");
	if (run_model(b, "resize19.onnx", "Resize-18/19 import and run", &r)) {
		EXPECT_F32(&r, 0, resize_keep, "Resize-18 sizes [3, 3] on axes [2, 3], not_larger: 2x3");
		EXPECT_F32(&r, 1, resize_keep_big, "Resize-18 sizes [3, 3] on axes [-2, -1], not_smaller: 3x5");
		EXPECT_F32(&r, 2, resize_aa_lin, "Resize-18 linear antialias, scales 1/2");
		EXPECT_F32(&r, 3, resize_aa_cub, "Resize-18 cubic antialias, 4x6 to 3x2");
		EXPECT_F32(&r, 4, resize_sym, "Resize-19 half_pixel_symmetric, scales 0.7 and 0.6");
		EXPECT_F32(&r, 5, resize_axis_w, "Resize-18 nearest on axes [3] alone, scale 1.5");
		run_free(&r);
	}
}

/* ---- GroupNormalization-18 (per group) and -21 (per channel) ---- */

static void test_groupnorm(void)
{
	struct mb *b = mb_new(18);
	struct run r;
	INIT(b, "x", T_FLOAT, "2,4,3", groupnorm_x);
	INIT(b, "s", T_FLOAT, "2", groupnorm18_s);
	INIT(b, "b", T_FLOAT, "2", groupnorm18_b);
	mb_attr_int(b, mb_node(b, "GroupNormalization", "gn", "x,s,b", "y"), "num_groups", 2);
	mb_output(b, "y", T_FLOAT, "");
	if (run_model(b, "groupnorm18.onnx", "GroupNormalization-18 imports and runs", &r)) {
		EXPECT_F32(&r, 0, groupnorm18_y,
			   "GroupNormalization-18: 2 groups of 2 channels, scale and bias per group");
		run_free(&r);
	}

	b = mb_new(21);
	INIT(b, "x", T_FLOAT, "2,4,3", groupnorm_x);
	INIT(b, "s", T_FLOAT, "4", groupnorm21_s);
	INIT(b, "b", T_FLOAT, "4", groupnorm21_b);
	Onnx__NodeProto *n = mb_node(b, "GroupNormalization", "gn", "x,s,b", "y");
	mb_attr_int(b, n, "num_groups", 2);
	mb_attr_float(b, n, "epsilon", 1e-3f);
	mb_attr_int(b, n, "stash_type", 1);
	mb_output(b, "y", T_FLOAT, "");
	if (run_model(b, "groupnorm21.onnx", "GroupNormalization-21 imports and runs", &r)) {
		EXPECT_F32(&r, 0, groupnorm21_y, "GroupNormalization-21: scale and bias per channel, epsilon 1e-3");
		run_free(&r);
	}

	b = mb_new(21);
	INIT(b, "x", T_FLOAT, "2,4,3", groupnorm_x);
	INIT(b, "s", T_FLOAT, "2", groupnorm18_s);
	INIT(b, "b", T_FLOAT, "2", groupnorm18_b);
	mb_attr_int(b, mb_node(b, "GroupNormalization", "gn", "x,s,b", "y"), "num_groups", 2);
	mb_output(b, "y", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "groupnorm21_per_group.onnx", "GroupNormalization-21 with opset 18's per-group scale",
			   "node \"gn\" (GroupNormalization)",
			   "scale and bias need 4 elements (one per channel at opset 21)");
}

/* ---- Col2Im-18 ---- */

static void test_col2im(void)
{
	struct mb *b = mb_new(18);
	struct run r;
	INIT(b, "x", T_FLOAT, "1,8,4", col2im_x);
	INIT(b, "xd", T_FLOAT, "1,8,20", col2im_xd);
	INIT(b, "img", T_INT64, "2", col2im_img);
	INIT(b, "blk", T_INT64, "2", col2im_blk);
	mb_attr_ints(b, mb_node(b, "Col2Im", "strided", "x,img,blk", "y"), "strides", 2, (int64_t[]){ 2, 2 });
	Onnx__NodeProto *n = mb_node(b, "Col2Im", "dilated", "xd,img,blk", "yd");
	mb_attr_ints(b, n, "dilations", 2, (int64_t[]){ 2, 1 });
	mb_attr_ints(b, n, "pads", 4, (int64_t[]){ 1, 0, 0, 1 });
	mb_output(b, "y", T_FLOAT, "");
	mb_output(b, "yd", T_FLOAT, "");
	if (run_model(b, "col2im18.onnx", "Col2Im-18 imports and runs", &r)) {
		EXPECT_F32(&r, 0, col2im_y, "Col2Im-18 2x2 blocks, strides 2 on 5x5: the last row and column empty");
		EXPECT_F32(&r, 1, col2im_yd,
			   "Col2Im-18 2x2 blocks, dilations [2, 1], pads [1, 0, 0, 1]: overlaps summed");
		run_free(&r);
	}
}

/* ---- CenterCropPad-18 ---- */

static void test_center_crop_pad(void)
{
	struct mb *b = mb_new(18);
	struct run r;
	INIT(b, "x", T_FLOAT, "3,5", ccp_x);
	INIT(b, "shape", T_INT64, "2", ccp_shape);
	INIT(b, "shape_ax", T_INT64, "1", ccp_shape_ax);
	mb_node(b, "CenterCropPad", "both", "x,shape", "y");
	mb_attr_ints(b, mb_node(b, "CenterCropPad", "last", "x,shape_ax", "ya"), "axes", 1, (int64_t[]){ -1 });
	mb_output(b, "y", T_FLOAT, "");
	mb_output(b, "ya", T_FLOAT, "");
	if (run_model(b, "ccp18.onnx", "CenterCropPad-18 imports and runs", &r)) {
		EXPECT_F32(&r, 0, ccp_y, "CenterCropPad-18 3x5 to 6x2: padded, then cropped, odd parts at the end");
		EXPECT_F32(&r, 1, ccp_ya, "CenterCropPad-18 on axes [-1] only: 5 to 8");
		run_free(&r);
	}
}

/* ---- Gelu-20, AveragePool-19 dilations ---- */

static void test_gelu_avgpool(void)
{
	struct mb *b = mb_new(20);
	struct run r;
	INIT(b, "x", T_FLOAT, "9", gelu_x);
	mb_node(b, "Gelu", "erf", "x", "y");
	mb_attr_string(b, mb_node(b, "Gelu", "tanh", "x", "yt"), "approximate", "tanh");
	mb_output(b, "y", T_FLOAT, "");
	mb_output(b, "yt", T_FLOAT, "");
	if (run_model(b, "gelu20.onnx", "Gelu-20 imports and runs", &r)) {
		EXPECT_F32(&r, 0, gelu_y, "Gelu-20 (erf)");
		EXPECT_F32(&r, 1, gelu_yt, "Gelu-20 approximate tanh");
		run_free(&r);
	}

	b = mb_new(19);
	INIT(b, "x", T_FLOAT, "1,1,5,5", avgpool_x);
	for (int inc = 1; inc >= 0; inc--) {
		Onnx__NodeProto *n = mb_node(b, "AveragePool", inc ? "incl" : "excl", "x", inc ? "y" : "y0");
		mb_attr_ints(b, n, "kernel_shape", 2, (int64_t[]){ 2, 2 });
		mb_attr_ints(b, n, "dilations", 2, (int64_t[]){ 2, 2 });
		mb_attr_ints(b, n, "pads", 4, (int64_t[]){ 1, 1, 1, 1 });
		mb_attr_ints(b, n, "strides", 2, (int64_t[]){ 1, 2 });
		mb_attr_int(b, n, "count_include_pad", inc);
	}
	mb_output(b, "y", T_FLOAT, "");
	mb_output(b, "y0", T_FLOAT, "");
	if (run_model(b, "avgpool19.onnx", "AveragePool-19 imports and runs", &r)) {
		EXPECT_F32(&r, 0, avgpool_y, "AveragePool-19 dilations 2, pads 1, count_include_pad 1");
		EXPECT_F32(&r, 1, avgpool_y0, "AveragePool-19 dilations 2, pads 1, count_include_pad 0");
		run_free(&r);
	}
}

/* ---- BitwiseAnd/Or/Xor/Not-18 ---- */

static void test_bitwise(void)
{
	struct mb *b = mb_new(18);
	struct run r;
	INIT(b, "a", T_INT32, "4", bitwise_a);
	INIT(b, "b", T_INT32, "4", bitwise_b);
	INIT(b, "u", T_UINT8, "3", bitwise_u);
	mb_node(b, "BitwiseAnd", "and", "a,b", "and");
	mb_node(b, "BitwiseOr", "or", "a,b", "or");
	mb_node(b, "BitwiseXor", "xor", "a,b", "xor");
	mb_node(b, "BitwiseNot", "not", "a", "not");
	mb_node(b, "BitwiseNot", "unot", "u", "unot");
	const char *outs[] = { "and", "or", "xor", "not" };
	for (int i = 0; i < 4; i++)
		mb_output(b, outs[i], T_INT32, "");
	mb_output(b, "unot", T_UINT8, "");
	if (run_model(b, "bitwise18.onnx", "Bitwise*-18 import and run", &r)) {
		EXPECT_EXACT(&r, 0, IR_I32, bitwise_and, "BitwiseAnd-18 int32");
		EXPECT_EXACT(&r, 1, IR_I32, bitwise_or, "BitwiseOr-18 int32");
		EXPECT_EXACT(&r, 2, IR_I32, bitwise_xor, "BitwiseXor-18 int32");
		EXPECT_EXACT(&r, 3, IR_I32, bitwise_not, "BitwiseNot-18 int32");
		EXPECT_EXACT(&r, 4, IR_U8, bitwise_unot, "BitwiseNot-18 uint8");
		run_free(&r);
	}

	b = mb_new(18);
	INIT(b, "a", T_INT32, "4", bitwise_a);
	mb_node(b, "And", "and", "a,a", "y");
	mb_output(b, "y", T_INT32, "");
	EXPECT_MODEL_ERROR(b, "and_int.onnx", "And on int32 (BitwiseAnd's job)", "node \"and\" (And)",
			   "needs bool operands, got i32");
	b = mb_new(18);
	INIT(b, "p", T_BOOL, "3,3", reduce_bool_b);
	mb_node(b, "BitwiseNot", "not", "p", "y");
	mb_output(b, "y", T_BOOL, "");
	EXPECT_MODEL_ERROR(b, "bitwise_not_bool.onnx", "BitwiseNot on bool (Not's job)", "node \"not\" (BitwiseNot)",
			   "needs integer operands, got bool");
}

/* ---- Cast-19/CastLike-19's saturate: float8 targets only, so nothing ---- */

static void test_cast_saturate(void)
{
	static const float x[3] = { -1.5f, 0.25f, 7.0f };
	static const int64_t want[3] = { -1, 0, 7 };
	struct mb *b = mb_new(19);
	struct run r;
	INIT(b, "x", T_FLOAT, "3", x);
	mb_init_i64(b, "like", 1, (int64_t[]){ 0 });
	Onnx__NodeProto *n = mb_node(b, "Cast", "cast", "x", "y");
	mb_attr_int(b, n, "to", T_INT64);
	mb_attr_int(b, n, "saturate", 0);
	mb_attr_int(b, mb_node(b, "CastLike", "like", "x,like", "yl"), "saturate", 1);
	mb_output(b, "y", T_INT64, "");
	mb_output(b, "yl", T_INT64, "");
	if (run_model(b, "cast19.onnx", "Cast-19 and CastLike-19 with saturate import and run", &r)) {
		EXPECT_EXACT(&r, 0, IR_I64, want, "Cast-19 to int64 with saturate 0: truncated toward zero");
		EXPECT_EXACT(&r, 1, IR_I64, want, "CastLike-19 to int64 with saturate 1: the same");
		run_free(&r);
	}
}

/* ---- LayerNormalization's Mean and InvStdDev in the stash type ---- */

static void test_layernorm_stash(void)
{
	/* f16 rows [1, 2, 3, 4] and [-1, 0, 0.5, 2.5]: means 2.5 and 0.5,
	 * variances 1.25 and 1.625 */
	static const uint16_t x[8] = { 0x3c00, 0x4000, 0x4200, 0x4400, 0xbc00, 0x0000, 0x3800, 0x4100 };
	static const uint16_t one[4] = { 0x3c00, 0x3c00, 0x3c00, 0x3c00 };
	const float mean[2] = { 2.5f, 0.5f };
	const float inv[2] = { (float)(1 / sqrt(1.25 + 1e-5)), (float)(1 / sqrt(1.625 + 1e-5)) };
	struct mb *b = mb_new(17);
	struct run r;
	INIT(b, "x", 10, "2,4", x);
	INIT(b, "s", 10, "4", one);
	mb_node(b, "LayerNormalization", "ln", "x,s", "y,mean,inv");
	mb_output(b, "y", 10, "");
	mb_output(b, "mean", T_FLOAT, "");
	mb_output(b, "inv", T_FLOAT, "");
	if (run_model(b, "layernorm_f16.onnx", "LayerNormalization of f16 with three outputs imports and runs", &r)) {
		EXPECT_F32(&r, 1, mean, "LayerNormalization of f16: Mean in the stash type, f32");
		EXPECT_F32(&r, 2, inv, "LayerNormalization of f16: InvStdDev in the stash type, f32");
		run_free(&r);
	}
}

int main(void)
{
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	test_reduce();
	test_pad();
	test_scatter();
	test_split();
	test_sequence();
	test_resize();
	test_groupnorm();
	test_col2im();
	test_center_crop_pad();
	test_gelu_avgpool();
	test_bitwise();
	test_cast_saturate();
	test_layernorm_stash();
	tmpdir_remove(tmpdir);
	return tap_done();
}
