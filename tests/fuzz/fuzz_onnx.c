/*
 * fuzz_onnx.c: libFuzzer target for the ONNX importer (tests/fuzz/run-fuzz.sh
 * builds and runs it).
 *
 * Each input is written to one file per process (onnx_import reads paths),
 * in $FUZZ_ONNX_TMP or /tmp, and imported. A graph that comes back must
 * verify and print; a small one is then run by the reference interpreter on
 * zero inputs, so folding and run-time checks (indices, external data) are
 * fuzzed too. Any outcome but a crash, a sanitizer report, a leak or an
 * assertion is fine: NULL with a message is the importer rejecting bad
 * input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "compiler/compiler.h"

/* Graphs are only run when this small (bytes of all values, FLOPs). */
#define RUN_MAX_BYTES (16 << 20)
#define RUN_MAX_FLOPS 1e8
#define RUN_MAX_IO 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[4096];
static FILE *devnull;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FUZZ_ONNX_TMP");
	snprintf(path, sizeof path, "%s/fuzz_onnx_%ld.onnx", dir ? dir : "/tmp", (long)getpid());
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

static bool small_enough(const struct ir_graph *g)
{
	double bytes = 0, flops = 0;
	for (int i = 0; i < ir_graph_nvalues(g); i++) {
		const struct ir_value *v = ir_graph_value(g, i);
		bytes += (double)ir_shape_numel(&v->shape) * (double)ir_dtype_size(v->dtype);
	}
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		flops += ir_node_flops(ir_graph_node(g, i));
	return bytes <= RUN_MAX_BYTES && flops <= RUN_MAX_FLOPS &&
	       ir_graph_ninputs(g) <= RUN_MAX_IO && ir_graph_noutputs(g) <= RUN_MAX_IO;
}

/* Runs g on zero inputs; errors (missing weights, bad indices) are fine. */
static void run(const struct ir_graph *g)
{
	struct ir_tensor in[RUN_MAX_IO] = { 0 }, out[RUN_MAX_IO] = { 0 };
	int nin = ir_graph_ninputs(g), nout = ir_graph_noutputs(g), i;
	for (i = 0; i < nin; i++) {
		const struct ir_value *v = ir_graph_input(g, i);
		if (ir_tensor_alloc(&in[i], v->dtype, &v->shape) < 0)
			goto out;
	}
	if (interp_run(g, in, out) == 0)
		for (int k = 0; k < nout; k++)
			ir_tensor_free(&out[k]);
out:
	while (i-- > 0)
		ir_tensor_free(&in[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct onnx_dim_binding dims[] = { { "batch", 2 }, { "seq", 4 } };
	struct onnx_import_opts o;
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	onnx_import_opts_init(&o);
	o.dims = dims;
	o.ndims = 2;
	struct ir_graph *g = onnx_import(path, &o, NULL);
	if (!g)
		return 0;
	if (ir_verify(g) < 0) {
		fprintf(stderr, "imported graph does not verify: %s\n", ir_error());
		abort();
	}
	if (ir_print(g, devnull) < 0)
		abort();
	if (small_enough(g))
		run(g);
	ir_graph_free(g);
	return 0;
}
