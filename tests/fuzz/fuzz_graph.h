/*
 * fuzz_graph.h: for the targets whose readers make a graph (fuzz_onnx.c,
 * fuzz_text.c): a small graph is run by the reference interpreter on zero
 * inputs, so folding and run-time checks (indices, external data) are
 * fuzzed too. Include after compiler/compiler.h.
 */
#ifndef PCC_TESTS_FUZZ_GRAPH_H
#define PCC_TESTS_FUZZ_GRAPH_H

/* Graphs are only run when this small (bytes of all values, FLOPs). */
#define RUN_MAX_BYTES (16 << 20)
#define RUN_MAX_FLOPS 1e8
#define RUN_MAX_IO 64

static inline bool fuzz_graph_small(const struct ir_graph *g)
{
	double bytes = 0, flops = 0;
	for (int i = 0; i < ir_graph_nvalues(g); i++) {
		const struct ir_value *v = ir_graph_value(g, i);
		bytes += (double)ir_shape_numel(&v->shape) * (double)ir_dtype_size(v->dtype);
	}
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		flops += ir_node_flops(ir_graph_node(g, i));
	return bytes <= RUN_MAX_BYTES && flops <= RUN_MAX_FLOPS && ir_graph_ninputs(g) <= RUN_MAX_IO &&
	       ir_graph_noutputs(g) <= RUN_MAX_IO;
}

/* Runs g, when small, on zero inputs; errors (missing weights, bad
 * indices) are fine. */
static inline void fuzz_run_graph(const struct ir_graph *g)
{
	struct ir_tensor in[RUN_MAX_IO] = { 0 }, out[RUN_MAX_IO] = { 0 };
	int nin = ir_graph_ninputs(g), nout = ir_graph_noutputs(g), i;
	if (!fuzz_graph_small(g))
		return;
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

#endif
