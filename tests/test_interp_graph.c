/*
 * test_interp_graph.c: the reference interpreter's graph walk
 * (compiler/interp/interp_run.c) and its errors.
 *
 * Graphs built through the C API: params inline and external (absolute
 * and relative paths, interp_load_param alone), intermediate values,
 * outputs that are inputs or repeated, a dead node; a chain long enough
 * that intermediates must be freed. Errors: missing or short external
 * files, mismatched inputs, and allocation failures at every step, in one
 * small graph and across every kernel that allocates scratch memory
 * (-ENOMEM each time, no leak under ASan).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interp_check.h"

/* ---- graphs, params, errors ------------------------------------------------- */

static char tmpdir[64];

static void write_file(const char *path, const void *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(bytes, 1, n, f);
		fclose(f);
	}
}

/* y = relu(x * w + b) with w inline and b external, plus x itself and y
 * twice as outputs, and a dead node. */
static struct ir_graph *build_mlp(const char *bpath, const char *base_dir, int64_t boff)
{
	static const float w[6] = { 1, -1, 2, 0.5f, 0, -2 }; /* [3,2] */
	struct ir_graph *g = ir_graph_new();
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &SH(2, 3));
	struct ir_data wd = { .bytes = w, .nbytes = sizeof w };
	struct ir_data bd = { .path = bpath, .base_dir = base_dir, .offset = boff, .nbytes = 8 };
	struct ir_value *wv = ir_graph_add_param(g, "w", IR_F32, &SH(3, 2), &wd);
	struct ir_value *bv = ir_graph_add_param(g, "b", IR_F32, &SH(2), &bd);
	struct ir_attrs dot = { .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) };
	struct ir_node *mm = ir_graph_add_node(g, IR_OP_DOT, "mm", 2, (struct ir_value *[]){ x, wv }, &dot);
	struct ir_attrs bc = { .shape = SH(2, 2), .axes = IR_ILIST(1) };
	struct ir_node *bb = ir_graph_add_node(g, IR_OP_BROADCAST, "bb", 1, &bv, &bc);
	struct ir_node *add = ir_graph_add_node(g, IR_OP_ADD, "add", 2, (struct ir_value *[]){ mm->out[0], bb->out[0] },
						&no_attrs);
	ir_graph_add_node(g, IR_OP_EXP, "dead", 1, &add->out[0], &no_attrs);
	struct ir_node *relu = ir_graph_add_node(g, IR_OP_RELU, "relu", 1, &add->out[0], &no_attrs);
	ir_graph_add_output(g, relu->out[0], "y");
	ir_graph_add_output(g, x, "x_again");
	ir_graph_add_output(g, relu->out[0], "y_again");
	ir_graph_add_output(g, wv, "w");
	return g;
}

static void test_graph(void)
{
	static const float x[6] = { 1, 2, 3, -1, -2, -3 };
	static const float bfile[4] = { 99, 0.5f, -1, 99 }; /* b at byte offset 4 */
	char path[128], rel[] = "b.bin";
	snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
	write_file(path, bfile, sizeof bfile);
	/* x . w: row 0: (1 + 4 + 0, -1 + 1 - 6) = (5, -6); row 1: (-5, 6)
	 * + b (0.5, -1): (5.5, -7), (-4.5, 5); relu: (5.5, 0), (0, 5) */
	const float want[4] = { 5.5f, 0, 0, 5 };
	struct ir_tensor in = T(IR_F32, SH(2, 3), x), out[4];
	for (int variant = 0; variant < 2; variant++) {
		struct ir_graph *g = variant ? build_mlp(rel, tmpdir, 4) : build_mlp(path, NULL, 4);
		int rc = ir_verify(g);
		if (rc == 0)
			rc = interp_run(g, &in, out);
		if (rc < 0)
			TAP_DIAG("%s", ir_error());
		TAP_OK(rc == 0 && same_f32(&out[0], want, 4) && same_f32(&out[1], x, 6) && same_f32(&out[2], want, 4) &&
			       out[0].data != out[2].data && f32_at(&out[3], 2) == 2.0f,
		       "graph with inline and external (%s path) params, repeated outputs",
		       variant ? "relative" : "absolute");
		for (int o = 0; rc == 0 && o < 4; o++)
			ir_tensor_free(&out[o]);
		ir_graph_free(g);
	}

	/* allocation failure at every step gives -ENOMEM, never a crash */
	struct ir_graph *g = build_mlp(path, NULL, 4);
	bool clean = true;
	int fails = 0;
	for (long k = 0; k < 200; k++) {
		ir_alloc_fail_after(k);
		int rc = interp_run(g, &in, out);
		ir_alloc_fail_after(-1);
		if (rc == 0) {
			for (int o = 0; o < 4; o++)
				ir_tensor_free(&out[o]);
			break;
		}
		fails++;
		clean &= rc == -ENOMEM;
	}
	TAP_OK(clean && fails > 5, "every allocation failure gives -ENOMEM (%d tried)", fails);

	/* wrong input shape names the input */
	struct ir_tensor wrong = T(IR_F32, SH(3, 2), x);
	int rc = interp_run(g, &wrong, out);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), "\"x\"") && strstr(ir_error(), "[2,3]"),
	       "mismatched input: -EINVAL naming it (%s)", ir_error());
	ir_graph_free(g);

	/* external data: missing file, short file */
	char missing[128];
	snprintf(missing, sizeof missing, "%s/no_such_file.bin", tmpdir);
	g = build_mlp(missing, NULL, 0);
	rc = interp_run(g, &in, out);
	TAP_OK(rc == -ENOENT && strstr(ir_error(), missing) && strstr(ir_error(), "\"b\""),
	       "missing external file: -ENOENT naming the file (%s)", ir_error());
	ir_graph_free(g);
	g = build_mlp(path, NULL, 12);
	rc = interp_run(g, &in, out);
	TAP_OK(rc == -EIO && strstr(ir_error(), path), "short external file: -EIO naming the file (%s)", ir_error());
	ir_graph_free(g);

	/* interp_load_param alone */
	g = build_mlp("b.bin", tmpdir, 4);
	struct ir_tensor t;
	rc = interp_load_param(ir_graph_param(g, 1), &t);
	TAP_OK(rc == 0 && same_f32(&t, (float[]){ 0.5f, -1 }, 2), "interp_load_param relative to base_dir");
	if (rc == 0)
		ir_tensor_free(&t);
	ir_graph_free(g);
	unlink(path);
}

/* A graph touching every kernel that allocates scratch memory: making each
 * allocation fail in turn must give -ENOMEM and leak nothing (ASan). */
static void test_alloc_failures(void)
{
	struct ir_graph *g = ir_graph_new();
	static const float wv[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, sv[4] = { 1, 1, 2, 2 };
	struct ir_value *x16 = ir_graph_add_input(g, "x", IR_F16, &SH(2, 3, 4));
	struct ir_value *idx = ir_graph_add_input(g, "idx", IR_I64, &SH(2));
	struct ir_data wd = { .bytes = wv, .nbytes = sizeof wv }, sd = { .bytes = sv, .nbytes = sizeof sv };
	struct ir_value *w = ir_graph_add_param(g, "w", IR_F32, &SH(2, 1, 2, 2), &wd);
	struct ir_value *sc = ir_graph_add_param(g, "s", IR_F32, &SH(4), &sd);
	struct ir_attrs cv = { .dtype = IR_F32 };
	struct ir_value *x = ir_graph_add_node(g, IR_OP_CONVERT, "cvt", 1, &x16, &cv)->out[0];
	struct ir_value *outs[16];
	int no = 0;
	struct ir_attrs dot = { .lhs_batch = IR_ILIST(0),
				.rhs_batch = IR_ILIST(0),
				.lhs_contract = IR_ILIST(2, 1),
				.rhs_contract = IR_ILIST(2, 1) };
	outs[no++] = ir_graph_add_node(g, IR_OP_DOT, "dot", 2, (struct ir_value *[]){ x16, x16 }, &dot)->out[0];
	struct ir_attrs rs = { .shape = SH(1, 2, 3, 4) };
	struct ir_value *x4 = ir_graph_add_node(g, IR_OP_RESHAPE, "rs", 1, &x, &rs)->out[0];
	struct ir_attrs conv = { .stride = IR_ILIST(1, 1),
				 .pad_lo = IR_ILIST(1, 0),
				 .pad_hi = IR_ILIST(0, 1),
				 .dilation = IR_ILIST(1, 1),
				 .groups = 2 };
	outs[no++] = ir_graph_add_node(g, IR_OP_CONV, "conv", 2, (struct ir_value *[]){ x4, w }, &conv)->out[0];
	struct ir_attrs red = { .axes = IR_ILIST(1) };
	outs[no++] = ir_graph_add_node(g, IR_OP_REDUCE_SUM, "red", 1, &x, &red)->out[0];
	struct ir_attrs win = { .window = IR_ILIST(1, 2, 2),
				.stride = IR_ILIST(1, 1, 1),
				.pad_lo = IR_ILIST(0, 1, 1),
				.pad_hi = IR_ILIST(0, 0, 0),
				.dilation = IR_ILIST(1, 1, 1) };
	outs[no++] = ir_graph_add_node(g, IR_OP_WINDOW_MAX, "win", 1, &x, &win)->out[0];
	struct ir_attrs tk = { .axis = 2, .k = 2 };
	struct ir_node *topk = ir_graph_add_node(g, IR_OP_TOPK, "topk", 1, &x, &tk);
	outs[no++] = topk->out[0];
	outs[no++] = topk->out[1];
	struct ir_attrs ax1 = { .axis = 1 }, ax2 = { .axis = 2, .eps = 1e-5 }, ax0 = { .axis = 0 };
	outs[no++] = ir_graph_add_node(g, IR_OP_SOFTMAX, "sm", 1, &x, &ax1)->out[0];
	outs[no++] = ir_graph_add_node(g, IR_OP_LAYER_NORM, "ln", 3, (struct ir_value *[]){ x, sc, sc }, &ax2)->out[0];
	outs[no++] = ir_graph_add_node(g, IR_OP_CUMSUM, "cs", 1, &x, &ax1)->out[0];
	outs[no++] = ir_graph_add_node(g, IR_OP_ARGMAX, "am", 1, &x, &ax1)->out[0];
	struct ir_value *ga =
		ir_graph_add_node(g, IR_OP_GATHER, "ga", 2, (struct ir_value *[]){ x, idx }, &ax0)->out[0];
	struct ir_attrs sa = { .mode = IR_SCATTER_ADD };
	outs[no++] = ir_graph_add_node(g, IR_OP_SCATTER, "sc", 3, (struct ir_value *[]){ x, idx, ga }, &sa)->out[0];
	struct ir_attrs pad = { .pad_lo = IR_ILIST(0, 1, 1), .pad_hi = IR_ILIST(1, 1, 0), .mode = IR_PAD_REFLECT };
	outs[no++] = ir_graph_add_node(g, IR_OP_PAD, "pad", 1, &x, &pad)->out[0];
	struct ir_attrs io = { .shape = SH(2, 2), .dtype = IR_F16, .axis = 1 };
	outs[no++] = ir_graph_add_node(g, IR_OP_IOTA, "iota", 0, NULL, &io)->out[0];
	for (int o = 0; o < no; o++)
		ir_graph_add_output(g, outs[o], NULL);
	TAP_OK(ir_verify(g) == 0, "allocation-failure graph verifies (%s)", ir_error());

	uint16_t xs[24];
	for (int i = 0; i < 24; i++)
		xs[i] = f16((float)((i * 7) % 5) - 1.5f);
	static const int64_t iv[2] = { 1, -1 };
	struct ir_tensor in[2] = { T(IR_F16, SH(2, 3, 4), xs), T(IR_I64, SH(2), iv) }, out[16];
	bool clean = true;
	int fails = 0, rc = -1;
	for (long k = 0; k < 1000 && rc != 0; k++) {
		ir_alloc_fail_after(k);
		rc = interp_run(g, in, out);
		ir_alloc_fail_after(-1);
		if (rc == 0)
			break;
		fails++;
		if (rc != -ENOMEM) {
			TAP_DIAG("allocation %ld: %d %s", k, rc, ir_error());
			clean = false;
		}
	}
	TAP_OK(rc == 0 && clean && fails > 30, "each of %d allocation failures across all kernels gives -ENOMEM",
	       fails);
	for (int o = 0; rc == 0 && o < no; o++)
		ir_tensor_free(&out[o]);
	ir_graph_free(g);
}

/* A chain long enough that freeing intermediates matters: 200 adds of a
 * 1 MiB tensor would need 200 MiB if nothing were freed; the result is x +
 * 200 exactly. */
static void test_chain(void)
{
	enum { N = 1 << 18, STEPS = 200 };
	struct ir_graph *g = ir_graph_new();
	float one = 1;
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &SH(N));
	struct ir_data od = { .bytes = &one, .nbytes = 4 };
	struct ir_value *p = ir_graph_add_param(g, "one", IR_F32, &SCALAR, &od);
	struct ir_attrs bc = { .shape = SH(N), .axes = { 0 } };
	struct ir_value *ones = ir_graph_add_node(g, IR_OP_BROADCAST, NULL, 1, &p, &bc)->out[0];
	struct ir_value *v = x;
	for (int i = 0; i < STEPS; i++)
		v = ir_graph_add_node(g, IR_OP_ADD, NULL, 2, (struct ir_value *[]){ v, ones }, &no_attrs)->out[0];
	ir_graph_add_output(g, v, NULL);
	float *xs = malloc(N * sizeof *xs);
	for (int i = 0; i < N; i++)
		xs[i] = (float)(i % 1000);
	struct ir_tensor in = T(IR_F32, SH(N), xs), out;
	int rc = interp_run(g, &in, &out);
	bool ok = rc == 0;
	for (int i = 0; ok && i < N; i++)
		ok = f32_at(&out, i) == xs[i] + STEPS;
	TAP_OK(ok, "chain of %d adds over %d elements", STEPS, N);
	if (rc == 0)
		ir_tensor_free(&out);
	free(xs);
	ir_graph_free(g);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/pcc_interp_XXXXXX");
	if (!mkdtemp(tmpdir))
		snprintf(tmpdir, sizeof tmpdir, "/tmp");
	test_graph();
	test_alloc_failures();
	test_chain();
	rmdir(tmpdir);
	return tap_done();
}
