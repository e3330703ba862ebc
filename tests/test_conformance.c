/*
 * test_conformance.c: the ONNX backend node tests (Debian's
 * libonnx-testdata, ONNX 1.12 up to opset 17, and tests/onnx_node_18_21,
 * ONNX 1.16's tests of opsets 18 to 21: one model.onnx and
 * test_data_set_N directories per test) through import and the reference
 * interpreter. argv: [--markdown] DIR...; tests of every directory after
 * the first are named DIRNAME/TEST.
 *
 * Each test directory is one TAP case: ok (all data sets match), not ok
 * (a supported op computed something else, or failed), or skipped as
 * unsupported (the importer said -ENOTSUP: an op, attribute, dtype or
 * opset pcc does not take). Per-op counts are printed at the end; with
 * --markdown they are printed as the README's table.
 *
 * Tolerance: the ONNX backend test runner's defaults, rtol 1e-3 and
 * atol 1e-7 (onnx/backend/test/runner), so a pass here means what it
 * means for any ONNX backend.
 */
#include <dirent.h>
#include <stdlib.h>

#include "tests/conformance.h"
#include "tests/harness.h"
#include "tests/tap.h"

#define RTOL 1e-3
#define ATOL 1e-7

/* Tests whose reference data, not pcc, is at odds with the ONNX spec or
 * with the model file, by their TAP names (DIRNAME/TEST beyond the first
 * directory); each is reported as a skip with this reason. */
static const struct {
	const char *test, *why;
} data_issues[] = {
	{ "test_cast_FLOAT_to_BFLOAT16",
	  "ONNX 1.12's reference truncates f32 to bf16; pcc rounds to nearest even like PyTorch" },
	{ "onnx_node_18_21/test_cast_FLOAT_to_BFLOAT16",
	  "ONNX 1.16's reference truncates f32 to bf16 (0.48033667 to 0.478515625); pcc rounds to nearest even (0.48046875) like PyTorch" },
	{ "onnx_node_18_21/test_castlike_FLOAT_to_BFLOAT16",
	  "ONNX 1.16's reference truncates f32 to bf16 in CastLike (0.48033667 to 0.478515625); pcc rounds to nearest even (0.48046875) like PyTorch" },
	{ "onnx_node_18_21/test_castlike_FLOAT_to_BFLOAT16_expanded",
	  "ONNX 1.16's reference truncates f32 to bf16 in CastLike (0.48033667 to 0.478515625); pcc rounds to nearest even (0.48046875) like PyTorch" },
	/* QLinearMatMul-21 with int8 results out of range (-236, saturated to -128) */
	{ "onnx_node_18_21/test_qlinearmatmul_2D_int8_float16",
	  "ONNX 1.16's reference wraps int8 results modulo 256 (-236 to 20); the spec and onnxruntime saturate (-128), as pcc" },
	{ "onnx_node_18_21/test_qlinearmatmul_2D_int8_float32",
	  "ONNX 1.16's reference wraps int8 results modulo 256 (-236 to 20); the spec and onnxruntime saturate (-128), as pcc" },
	{ "onnx_node_18_21/test_qlinearmatmul_3D_int8_float16",
	  "ONNX 1.16's reference wraps int8 results modulo 256 (-139 to 117); the spec and onnxruntime saturate (-128), as pcc" },
	{ "onnx_node_18_21/test_qlinearmatmul_3D_int8_float32",
	  "ONNX 1.16's reference wraps int8 results modulo 256 (-139 to 117); the spec and onnxruntime saturate (-128), as pcc" },
	/* scale * input length is not whole here (0.6 * 4, 0.8 * 4) */
	{ "test_resize_downsample_scales_cubic_align_corners",
	  "ONNX's reference divides by scale * input length - 1, unrounded; the spec, onnxruntime and PyTorch by the output length - 1, as pcc (onnxruntime skips this test too)" },
	{ "test_resize_downsample_scales_linear_align_corners",
	  "ONNX's reference divides by scale * input length - 1, unrounded; the spec, onnxruntime and PyTorch by the output length - 1, as pcc (onnxruntime skips this test too)" },
	{ "onnx_node_18_21/test_resize_downsample_scales_cubic_align_corners",
	  "ONNX's reference divides by scale * input length - 1, unrounded; the spec, onnxruntime and PyTorch by the output length - 1, as pcc (onnxruntime skips this test too)" },
	{ "onnx_node_18_21/test_resize_downsample_scales_linear_align_corners",
	  "ONNX's reference divides by scale * input length - 1, unrounded; the spec, onnxruntime and PyTorch by the output length - 1, as pcc (onnxruntime skips this test too)" },
};

static int cmp_ops(const void *a, const void *b)
{
	return strcmp(((const struct op_count *)a)->op, ((const struct op_count *)b)->op);
}

static void run_test(const char *root, const char *label, const char *name)
{
	char model[2048], data[2048], op[64];
	snprintf(model, sizeof model, "%s/%s/model.onnx", root, name);
	node_test_op(model, op, sizeof op);
	struct op_count *e = op_entry(op);
	struct node_consts consts;
	struct onnx_import_opts o;
	struct ir_graph *g = import_node_test(root, name, &consts, &o);
	node_consts_free(&consts);
	if (!g) {
		if (ir_error_code() == -ENOTSUP) {
			e->unsupported++;
			const char *msg = ir_error(), *p = strstr(msg, "): ");
			TAP_OK(1, "%s (%s) # SKIP unsupported: %s", label, op, p ? p + 3 : msg);
		} else {
			e->failed++;
			TAP_OK(0, "%s (%s) imports", label, op);
			TAP_DIAG("%s", ir_error());
		}
		return;
	}
	for (size_t i = 0; i < sizeof data_issues / sizeof data_issues[0]; i++) {
		if (!strcmp(label, data_issues[i].test)) {
			e->unsupported++;
			TAP_OK(1, "%s (%s) # SKIP test data: %s", label, op, data_issues[i].why);
			ir_graph_free(g);
			return;
		}
	}
	bool ok = true, mismatch = false;
	char what[512] = "";
	for (int k = 0; k < 16; k++) {
		struct cmp c;
		snprintf(data, sizeof data, "%s/%s/test_data_set_%d", root, name, k);
		if (!file_exists(data))
			break;
		run_data_set(g, data, RTOL, ATOL, &c);
		if (c.input_mismatch) {
			mismatch = true;
			snprintf(what, sizeof what, "%s", c.what);
			break;
		}
		if (c.bad && ok) {
			ok = false;
			snprintf(what, sizeof what, "data set %d: %s", k, c.what);
		}
	}
	if (mismatch) {
		/* a static-shape compiler takes the model's declared shapes */
		e->unsupported++;
		TAP_OK(1, "%s (%s) # SKIP test data: %s", label, op, what);
		ir_graph_free(g);
		return;
	}
	ok ? e->passed++ : e->failed++;
	if (!TAP_OK(ok, "%s (%s)", label, op))
		TAP_DIAG("%s", what);
	ir_graph_free(g);
}

/* Runs every test of root; tests of roots after the first are named
 * after the directory too. 0, or -1 when root cannot be read. */
static int run_root(const char *root, bool first)
{
	DIR *d = opendir(root);
	if (!d) {
		printf("Bail out! cannot open %s (install libonnx-testdata)\n", root);
		return -1;
	}
	static char *names[4096];
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) && n < 4096;)
		if (!strncmp(e->d_name, "test_", 5))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_names);
	const char *base = strrchr(root, '/') ? strrchr(root, '/') + 1 : root;
	for (int i = 0; i < n; i++) {
		char label[512];
		snprintf(label, sizeof label, "%s%s%s", first ? "" : base, first ? "" : "/", names[i]);
		run_test(root, label, names[i]);
		free(names[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *roots[8] = { "/usr/share/libonnx-testdata/data/node" };
	int nroots = 0;
	bool markdown = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--markdown"))
			markdown = true;
		else if (nroots < 8)
			roots[nroots++] = argv[i];
	}
	for (int i = 0; i < (nroots ? nroots : 1); i++)
		if (run_root(roots[i], i == 0) < 0)
			return 1;
	qsort(ops, (size_t)nops, sizeof *ops, cmp_ops);
	int tp = 0, tf = 0, tu = 0, sup = 0;
	if (markdown)
		printf("| op | passed | failed | unsupported |\n|---|---|---|---|\n");
	for (int i = 0; i < nops; i++) {
		tp += ops[i].passed;
		tf += ops[i].failed;
		tu += ops[i].unsupported;
		sup += ops[i].passed + ops[i].failed > 0;
		if (markdown)
			printf("| %s | %d | %d | %d |\n", ops[i].op, ops[i].passed, ops[i].failed, ops[i].unsupported);
		else
			TAP_DIAG("%-32s passed %3d  failed %3d  unsupported %3d", ops[i].op, ops[i].passed,
				 ops[i].failed, ops[i].unsupported);
	}
	TAP_DIAG("node tests: %d passed, %d failed, %d unsupported; %d op types exercised", tp, tf, tu, sup);
	if (markdown)
		printf("\n%d passed, %d failed, %d unsupported (of %d node tests)\n", tp, tf, tu, tp + tf + tu);
	return markdown ? 0 : tap_done();
}
