/*
 * fuzz_onnx.c: libFuzzer target for the ONNX importer (tests/fuzz/run-fuzz.sh
 * builds and runs it).
 *
 * Each input is written to one file per process (onnx_import reads paths),
 * in $FUZZ_TMP or /tmp, and imported. A graph that comes back must
 * verify and print; a small one is then run by the reference interpreter on
 * zero inputs, so folding and run-time checks (indices, external data) are
 * fuzzed too. Any outcome but a crash, a sanitizer report, a leak or an
 * assertion is fine: NULL with a one-line message is the importer
 * rejecting bad input.
 */
#include "compiler/compiler.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/fuzz_graph.h"

static char path[4096];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_path(path, sizeof path, "fuzz_onnx", ".onnx");
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct onnx_dim_binding dims[] = { { "batch", 2 }, { "seq", 4 } };
	struct onnx_import_opts o;
	fuzz_write(path, data, size);
	onnx_import_opts_init(&o);
	o.dims = dims;
	o.ndims = 2;
	struct ir_graph *g = onnx_import(path, &o, NULL);
	if (!g) {
		fuzz_check_message("onnx_import", ir_error());
		return 0;
	}
	if (ir_verify(g) < 0)
		FUZZ_FAIL("imported graph does not verify: %s", ir_error());
	if (ir_print(g, devnull) < 0)
		FUZZ_FAIL("imported graph does not print: %s", ir_error());
	fuzz_run_graph(g);
	ir_graph_free(g);
	return 0;
}
