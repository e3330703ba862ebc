/*
 * test_onnx_errors_messages.c: the ONNX importer on bad input
 * (compiler/frontend/onnx_*.c) and what it says.
 *
 * Each case builds a small ModelProto with protobuf-c (onnx_builder.h),
 * breaks one thing, writes it to a temporary directory and checks that
 * onnx_import() returns NULL with a message naming the file, the node, its
 * ONNX op and the problem ("FILE: node \"NAME\" (OP): what is wrong").
 * Also:
 *  - every prefix and every one-byte corruption of a valid model, and random
 *    bytes, end in a graph or a clean error (run under ASan or valgrind to
 *    see that nothing leaks or reads out of bounds);
 *  - run-time errors (missing external weights, Gather out of range) come
 *    from interp_run, not from import, which reads an external initializer
 *    only where it needs its values: integer and bool ones of any size may
 *    be external; one whose values import needs (a Reshape's shape, an
 *    index of a shape computation) is read from its file, and a file that
 *    cannot be read is one message naming the initializer and the file;
 *    one import does not need (a mask Where reads) stays runtime data;
 *  - BatchNormalization's running statistics are state, never trained;
 *  - Constant's empty value_ints and value_floats are tensors of shape [0];
 *  - the pcc binary (argv[1]) turns an import error into exit status 1 and
 *    exactly one stderr line "pcc: ...".
 * Allocation failures: test_onnx_errors_alloc.c.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onnx_builder.h"

/* ---- unsupported input ---------------------------------------------------- */

static void test_unsupported(void)
{
	struct mb *b = mb_one_op("FooBar", "foo");
	EXPECT_MODEL_ERROR(b, "unsupported_op.onnx", "unsupported op", ": node \"foo\" (FooBar): ", "unsupported op");

	b = mb_one_op("Relu", "act");
	mb_attr_int(b, b->g.node[0], "alpha", 2);
	EXPECT_MODEL_ERROR(b, "unsupported_attr.onnx", "unsupported attribute", "node \"act\" (Relu)",
			   "unsupported attribute 'alpha'");

	b = mb_one_op("FusedGelu", "fused");
	b->g.node[0]->domain = "com.microsoft";
	EXPECT_MODEL_ERROR(b, "unsupported_domain.onnx", "unsupported domain", "node \"fused\" (FusedGelu)",
			   "domain \"com.microsoft\"");

	b = mb_one_op("Attention", "attn");
	b->g.node[0]->domain = "com.microsoft";
	EXPECT_MODEL_ERROR(b, "unsupported_ms_op.onnx", "a com.microsoft op pcc does not read",
			   "node \"attn\" (Attention)", "unsupported op of domain \"com.microsoft\"",
			   "FusedMatMul, FusedGemm");

	b = mb_one_op("FusedMatMul", "fmm");
	b->g.node[0]->domain = "com.microsoft";
	mb_attr_int(b, b->g.node[0], "transBatchA", 1);
	EXPECT_MODEL_ERROR(b, "ms_trans_batch.onnx", "FusedMatMul's transBatchA", "node \"fmm\" (FusedMatMul)",
			   "transBatchA and transBatchB are not supported");

	b = mb_one_op("Relu", "act");
	b->g.input[0]->type->tensor_type->elem_type = T_STRING;
	EXPECT_MODEL_ERROR(b, "string_input.onnx", "string input", "input \"x\"", "STRING");
}

static void test_opset(void)
{
	struct mb *b = mb_one_op("Relu", "act");
	b->opset.version = 6;
	EXPECT_MODEL_ERROR(b, "opset6.onnx", "opset 6 rejected with the supported range", "opset 6", "7 to 21",
			   "opset_version=13 or newer");
	b = mb_one_op("Relu", "act");
	b->opset.version = 22;
	EXPECT_MODEL_ERROR(b, "opset22.onnx", "opset 22 rejected with the supported range", "opset 22", "7 to 21",
			   "re-export with opset_version=21)");
	for (int v = 18; v <= 21; v++) {
		b = mb_one_op("Relu", "act");
		b->opset.version = v;
		char what[64];
		snprintf(what, sizeof what, "opset %d imports", v);
		ir_graph_free(expect_import(what, mb_write(b, "opset18_21.onnx"), NULL));
		mb_free(b);
	}
	/* opset 19 and 21's new element types: refused naming the tensor */
	b = mb_one_op("Relu", "act");
	b->opset.version = 19;
	b->g.input[0]->type->tensor_type->elem_type = 17;
	EXPECT_MODEL_ERROR(b, "float8_input.onnx", "a float8 input", "input \"x\"", "FLOAT8E4M3FN (17)",
			   "no 8-bit float");
	b = mb_one_op("Relu", "act");
	b->opset.version = 21;
	mb_tensor(b, "w4", 22, "2");
	EXPECT_MODEL_ERROR(b, "int4_initializer.onnx", "an int4 initializer", "initializer \"w4\"", "INT4 (22)");
	b = mb_one_op("Cast", "to_e5m2");
	b->opset.version = 19;
	mb_attr_int(b, b->g.node[0], "to", 19);
	EXPECT_MODEL_ERROR(b, "cast_float8.onnx", "a Cast to float8", "node \"to_e5m2\" (Cast)", "output \"y\"",
			   "FLOAT8E5M2 (19)");
	b = mb_one_op("Relu", "act");
	b->opset.domain = "ai.onnx.ml";
	EXPECT_MODEL_ERROR(b, "no_opset.onnx", "no default-domain opset", "no default-domain opset");
}

/* ---- malformed files ----------------------------------------------------- */

static void test_files(void)
{
	char path[512];
	const char *p = write_bytes("empty.onnx", "", 0, path, sizeof path);
	EXPECT_ERROR("empty file", p, NULL, "no graph");

	snprintf(path, sizeof path, "%s/does_not_exist.onnx", tmpdir);
	EXPECT_ERROR("missing file", path, NULL, "cannot open");

	EXPECT_ERROR("a directory", tmpdir, NULL, "not a regular file");

	unsigned char junk[1024];
	srand(1);
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)rand();
	p = write_bytes("random.onnx", junk, sizeof junk, path, sizeof path);
	EXPECT_ERROR("random bytes", p, NULL, "not a valid ONNX model");
}

/* Imports buf[0..n) written to a file: a graph (verified) or NULL with a
 * message naming the file. Returns false on a graph that fails to verify or
 * a NULL without the file in the message. */
static bool import_bytes_cleanly(const void *buf, size_t n, int *nfail)
{
	char path[512];
	write_bytes("mutant.onnx", buf, n, path, sizeof path);
	ir_error_clear();
	struct ir_graph *g = onnx_import(path, NULL, NULL);
	bool ok = g ? ir_verify(g) == 0 : strstr(ir_error(), path) != NULL;
	if (!ok)
		TAP_DIAG("  %zu bytes: %s", n, g ? "imported but does not verify" : ir_error());
	*nfail += !g;
	ir_graph_free(g);
	return ok;
}

static void test_truncated(void)
{
	struct mb *b = mb_mlp();
	size_t len;
	uint8_t *buf = mb_pack(b, &len);
	char path[512];

	const char *p = write_bytes("half.onnx", buf, len / 2, path, sizeof path);
	EXPECT_ERROR("model cut in half", p, NULL, "not a valid ONNX model");

	int bad = 0, nfail = 0;
	for (size_t n = 0; n < len; n++)
		bad += !import_bytes_cleanly(buf, n, &nfail);
	TAP_OK(bad == 0, "every prefix of a %zu-byte model: %d rejected, %d imported, %d unclean", len, nfail,
	       (int)len - nfail, bad);

	bad = nfail = 0;
	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0xff;
		bad += !import_bytes_cleanly(buf, len, &nfail);
		buf[i] ^= 0xff;
	}
	TAP_OK(bad == 0, "every one-byte corruption: %d rejected, %d imported, %d unclean", nfail, (int)len - nfail,
	       bad);
	mb_free(b);

	unsigned char junk[4096];
	bad = nfail = 0;
	srand(2);
	for (int k = 0; k < 200; k++) {
		size_t n = (size_t)rand() % sizeof junk;
		for (size_t i = 0; i < n; i++)
			junk[i] = (unsigned char)rand();
		bad += !import_bytes_cleanly(junk, n, &nfail);
	}
	TAP_OK(bad == 0, "200 random buffers: %d rejected, %d unclean", nfail, bad);
}

/* ---- initializers ------------------------------------------------------------ */

static void test_initializers(void)
{
	struct mb *b = mb_mlp();
	b->g.initializer[0]->raw_data.len = 7;
	EXPECT_MODEL_ERROR(b, "raw_size.onnx", "raw_data size does not match the shape", "initializer \"W\"",
			   "raw_data holds 7 bytes", "[8,4]", "needs 128");

	b = mb_mlp();
	Onnx__TensorProto *t = b->g.initializer[0];
	t->has_raw_data = 0;
	t->n_float_data = 5;
	t->float_data = mb_alloc(b, 5 * sizeof(float));
	EXPECT_MODEL_ERROR(b, "float_data_count.onnx", "float_data of the wrong count", "initializer \"W\"",
			   "5 elements", "[8,4]", "32");

	b = mb_mlp();
	t = mb_tensor(b, "big", T_FLOAT, "1000000,1000000,1000000");
	mb_raw(b, t, 4);
	EXPECT_MODEL_ERROR(b, "absurd_init.onnx", "absurd initializer shape rejected without allocating",
			   "initializer \"big\"", "[1000000,1000000,1000000]", "2^44");

	/* 2^32 * 2^32 wraps to 0 elements in unchecked int64 arithmetic */
	b = mb_mlp();
	t = mb_tensor(b, "wrap", T_FLOAT, "4294967296,4294967296");
	mb_raw(b, t, 0);
	EXPECT_MODEL_ERROR(b, "wrapping_init.onnx", "initializer shape whose element count wraps",
			   "initializer \"wrap\"", "2^44");

	b = mb_mlp();
	mb_tensor(b, "neg", T_FLOAT, "-3,2");
	EXPECT_MODEL_ERROR(b, "negative_init.onnx", "negative initializer dim", "initializer \"neg\"", "negative");
}

static void test_absurd_input(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1000000,1000000,1000000");
	mb_node(b, "Relu", "act", "x", "y");
	mb_output(b, "y", T_FLOAT, "1000000,1000000,1000000");
	EXPECT_MODEL_ERROR(b, "absurd_input.onnx", "absurd input shape rejected without allocating", "input \"x\"",
			   "[1000000,1000000,1000000]", "2^44");

	b = mb_one_op("Relu", "act");
	b->g.input[0]->type->tensor_type->shape->dim[1]->dim_value = -3;
	EXPECT_MODEL_ERROR(b, "negative_input.onnx", "negative input dim", "input \"x\"", "negative");

	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1,1,1,1,1,1,1,1,1");
	mb_node(b, "Relu", "act", "x", "y");
	mb_output(b, "y", T_FLOAT, "");
	EXPECT_MODEL_ERROR(b, "rank9_input.onnx", "input of rank 9", "input \"x\"", "rank 9");
}

/* ---- graph structure ------------------------------------------------------- */

static void test_structure(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_node(b, "Add", "first", "x,b", "a");
	mb_node(b, "Relu", "second", "a", "b");
	mb_output(b, "b", T_FLOAT, "2,3");
	EXPECT_MODEL_ERROR(b, "cycle.onnx", "cycle between two nodes", ": node \"", "cycle");

	b = mb_one_op("Relu", "act");
	b->g.node[0]->input[0] = "nowhere";
	EXPECT_MODEL_ERROR(b, "dangling.onnx", "dangling node input", "node \"act\" (Relu)", "\"nowhere\"",
			   "not defined");

	b = mb_one_op("Relu", "act");
	mb_node(b, "Neg", "again", "x", "y");
	EXPECT_MODEL_ERROR(b, "defined_twice.onnx", "value defined twice by two nodes", "node \"again\" (Neg)", "\"y\"",
			   "defined twice");

	b = mb_one_op("Relu", "act");
	b->g.node[0]->output[0] = "x";
	b->g.output[0]->name = "x";
	EXPECT_MODEL_ERROR(b, "redefines_input.onnx", "node output redefines a graph input", "node \"act\" (Relu)",
			   "\"x\"", "defined twice");

	b = mb_mlp();
	mb_init_f32(b, "W", "8,4");
	EXPECT_MODEL_ERROR(b, "init_twice.onnx", "two initializers with one name", "\"W\"", "defined twice");

	b = mb_one_op("Relu", "act");
	b->g.output[0]->name = "z";
	EXPECT_MODEL_ERROR(b, "missing_output.onnx", "graph output nothing produces", "output \"z\"");

	b = mb_one_op("Relu", "act");
	b->g.node[0]->n_input = 0;
	EXPECT_MODEL_ERROR(b, "no_operand.onnx", "node without its required input", "node \"act\" (Relu)",
			   "input 0 is required");

	b = mb_one_op("Relu", "act");
	b->g.n_output = 0;
	EXPECT_MODEL_ERROR(b, "no_outputs.onnx", "a graph without outputs",
			   "no_outputs.onnx: the graph has no outputs");

	/* the wrong number of operands (onnx.checker refuses such a node):
	 * never an identity, never an operand ignored */
	const char *binary[] = { "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Equal", "Less" };
	for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++)
		for (int nin = 1; nin <= 3; nin += 2) {
			char what[96], want[64];
			b = mb_new(13);
			mb_input(b, "x", T_FLOAT, "2,3");
			mb_node(b, binary[i], "op", nin == 1 ? "x" : "x,x,x", "y");
			mb_output(b, "y", T_FLOAT, "2,3");
			snprintf(what, sizeof what, "%s with %d input%s refused", binary[i], nin, nin == 1 ? "" : "s");
			snprintf(want, sizeof want, "node \"op\" (%s): has %d input%s; the op takes 2", binary[i], nin,
				 nin == 1 ? "" : "s");
			EXPECT_MODEL_ERROR(b, "binary_arity.onnx", what, want);
		}
	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_node(b, "Relu", "act", "x,x", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	EXPECT_MODEL_ERROR(b, "unary_arity.onnx", "Relu with 2 inputs refused",
			   "node \"act\" (Relu): has 2 inputs; the op takes 1");
	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_node(b, "Sum", "one", "x", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	ir_graph_free(expect_import("Sum of one input (variadic) accepted", mb_write(b, "sum_one.onnx"), NULL));
	mb_free(b);
}

static void test_symbolic_dim(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "batch,8");
	mb_node(b, "Relu", "act", "x", "y");
	mb_output(b, "y", T_FLOAT, "batch,8");
	const char *p = mb_write(b, "symbolic.onnx");
	EXPECT_ERROR("unbound symbolic dimension", p, NULL, "input \"x\"", "\"batch\"", "--dim batch=N");

	struct onnx_dim_binding dims[] = { { "batch", 3 } };
	struct onnx_import_opts o;
	onnx_import_opts_init(&o);
	o.dims = dims;
	o.ndims = 1;
	struct ir_graph *g = expect_import("the same model with --dim batch=3", p, &o);
	TAP_OK(g && ir_graph_input(g, 0)->shape.dims[0] == 3, "batch bound to 3");
	ir_graph_free(g);
	mb_free(b);
}

/* ---- external data ----------------------------------------------------------- */

/* x f32[2,3] -> Where(mask, x, x2) -> Reshape to shape [3,2]: the bool mask
 * and the int64 shape external in mask_file and shape_file (written with
 * their values when the flags say so, else absent). */
static struct mb *mb_external_ints(const char *mask_file, bool write_mask, const char *shape_file, bool write_shape)
{
	struct mb *b = mb_new(17);
	char buf[600];
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_input(b, "x2", T_FLOAT, "2,3");
	Onnx__TensorProto *m = mb_tensor(b, "consts/causal_mask", T_BOOL, "2,3");
	mb_external(b, m, mask_file);
	Onnx__TensorProto *s = mb_init_i64(b, "consts/shape", 2, (int64_t[]){ 3, 2 });
	s->n_int64_data = 0;
	mb_external(b, s, shape_file);
	if (write_mask)
		write_bytes(mask_file, (uint8_t[]){ 1, 0, 1, 0, 1, 0 }, 6, buf, sizeof buf);
	if (write_shape)
		write_bytes(shape_file, (int64_t[]){ 3, 2 }, 16, buf, sizeof buf);
	mb_node(b, "Where", "attn/Where", "consts/causal_mask,x,x2", "m");
	mb_node(b, "Reshape", "attn/Reshape", "m,consts/shape", "y");
	mb_output(b, "y", T_FLOAT, "3,2");
	return b;
}

/* An int64 initializer whose data is external in file. */
static void mb_external_i64(struct mb *b, const char *name, int64_t v, const char *file)
{
	Onnx__TensorProto *t = mb_init_i64(b, name, 1, &v);
	t->n_int64_data = 0;
	mb_external(b, t, file);
}

static void test_external_ints(void)
{
	char f[600];
	/* both files there: the shape is read, the mask stays runtime data */
	struct mb *b = mb_external_ints("mask.bin", true, "shape.bin", true);
	struct ir_graph *g = expect_import("external bool and int64 initializers import",
					   mb_write(b, "external_ints.onnx"), NULL);
	const struct ir_value *mask = NULL;
	for (int i = 0; g && i < ir_graph_nparams(g); i++)
		if (!strcmp(ir_graph_param(g, i)->name, "consts/causal_mask"))
			mask = ir_graph_param(g, i);
	TAP_OK(g && ir_graph_output(g, 0)->shape.rank == 2 && ir_graph_output(g, 0)->shape.dims[0] == 3 && mask &&
		       mask->data.path && !mask->data.bytes,
	       "the shape [3,2] is read from shape.bin; the mask is a parameter left in mask.bin");
	if (g) {
		struct ir_tensor in[2] = { 0 }, out[1] = { 0 };
		struct ir_shape s = { 2, { 2, 3 } };
		int rc = ir_tensor_alloc(&in[0], IR_F32, &s) | ir_tensor_alloc(&in[1], IR_F32, &s);
		for (int i = 0; rc == 0 && i < 6; i++) {
			((float *)in[0].data)[i] = (float)(i + 1);
			((float *)in[1].data)[i] = -(float)(i + 1);
		}
		rc = rc == 0 ? interp_run(g, in, out) : rc;
		const float *y = rc == 0 ? out[0].data : NULL;
		TAP_OK(y && y[0] == 1 && y[1] == -2 && y[2] == 3 && y[5] == -6,
		       "and runs: Where reads the mask from mask.bin (1 -2 3 -4 5 -6)");
		if (rc < 0)
			TAP_DIAG("  %s", ir_error());
		for (int i = 0; i < 2; i++)
			ir_tensor_free(&in[i]);
		ir_tensor_free(&out[0]);
	}
	ir_graph_free(g);
	mb_free(b);

	/* the mask's file absent: not needed to import, so only running fails */
	remove(write_bytes("mask_gone.bin", "", 0, f, sizeof f));
	b = mb_external_ints("mask_gone.bin", false, "shape.bin", true);
	g = expect_import("an external mask whose file is absent still imports (runtime data)",
			  mb_write(b, "external_mask_gone.onnx"), NULL);
	if (g) {
		int rc = run_zeros(g, -1);
		TAP_OK(rc == -ENOENT && strstr(ir_error(), "mask_gone.bin"), "interp_run: -ENOENT naming the file");
		TAP_DIAG("  rc %d: %s", rc, ir_error());
	}
	ir_graph_free(g);
	mb_free(b);

	/* the shape's file absent, or short: it is needed, one message names both */
	b = mb_external_ints("mask.bin", true, "shape_gone.bin", false);
	EXPECT_MODEL_ERROR(
		b, "external_shape_gone.onnx", "an external shape whose file is absent",
		"node \"attn/Reshape\" (Reshape): the target shape must be known at compile time: it is initializer "
		"\"consts/shape\", whose values are in the external file \"shape_gone.bin\", which cannot be "
		"read: No such file or directory");
	b = mb_external_ints("mask.bin", true, "shape_short.bin", false);
	write_bytes("shape_short.bin", (int64_t[]){ 3 }, 8, f, sizeof f);
	EXPECT_MODEL_ERROR(b, "external_shape_short.onnx", "an external shape whose file is short",
			   "initializer \"consts/shape\"", "\"shape_short.bin\"", "shorter");

	/* the shape's file a link to a good one: import reads it as the runtime
	 * does, never through a link (ir_data_open) */
	b = mb_external_ints("mask.bin", true, "shape_link.bin", false);
	{
		char target[600];
		write_bytes("shape_target.bin", (int64_t[]){ 2, 3 }, 16, target, sizeof target);
		write_bytes("shape_link.bin", "", 0, f, sizeof f);
		remove(f);
		TAP_OK(symlink(target, f) == 0, "a link shape_link.bin to a good shape file");
	}
	EXPECT_MODEL_ERROR(b, "external_shape_link.onnx", "an external shape whose file is a symbolic link is refused",
			   "initializer \"consts/shape\"", "\"shape_link.bin\"", "symbolic link");

	/* a shape computed from an external index: Gather(Shape(x), idx) */
	b = mb_new(17);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_external_i64(b, "idx", 0, "idx_gone.bin");
	mb_init_i64(b, "minus1", 1, (int64_t[]){ -1 });
	mb_node(b, "Shape", "shape", "x", "s");
	mb_node(b, "Gather", "dim0", "s,idx", "d0");
	mb_attr_int(b, mb_node(b, "Concat", "target", "d0,minus1", "t"), "axis", 0);
	mb_node(b, "Reshape", "same", "x,t", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	EXPECT_MODEL_ERROR(
		b, "external_index_gone.onnx", "a shape computed from an external index whose file is absent",
		"node \"same\" (Reshape): the target shape must be known at compile time: it is computed from "
		"initializer \"idx\", whose values are in the external file \"idx_gone.bin\"");
	b = mb_new(17);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_external_i64(b, "idx", 0, "idx.bin");
	write_bytes("idx.bin", (int64_t[]){ 0 }, 8, f, sizeof f);
	mb_init_i64(b, "minus1", 1, (int64_t[]){ -1 });
	mb_node(b, "Shape", "shape", "x", "s");
	mb_node(b, "Gather", "dim0", "s,idx", "d0");
	mb_attr_int(b, mb_node(b, "Concat", "target", "d0,minus1", "t"), "axis", 0);
	mb_node(b, "Reshape", "same", "x,t", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	g = expect_import("with the index's file there, the shape computation folds",
			  mb_write(b, "external_index.onnx"), NULL);
	TAP_OK(g && ir_graph_nparams(g) == 0 && ir_graph_output(g, 0)->shape.dims[1] == 3,
	       "no parameter is left: the index became part of a constant");
	ir_graph_free(g);
	mb_free(b);
}

static void test_external(void)
{
	struct mb *b = mb_mlp();
	mb_external(b, b->g.initializer[0], "w_missing.bin");
	const char *p = mb_write(b, "external_missing.onnx");
	struct ir_graph *g = expect_import("import with missing external data succeeds", p, NULL);
	if (g) {
		int rc = run_zeros(g, -1);
		TAP_OK(rc == -ENOENT && strstr(ir_error(), "w_missing.bin"),
		       "interp_run: -ENOENT naming the missing file");
		TAP_DIAG("  rc %d: %s", rc, ir_error());
	}
	ir_graph_free(g);
	mb_free(b);

	const char *escapes[] = { "../x.bin", "/etc/passwd", "sub/../../x.bin" };
	for (size_t i = 0; i < sizeof escapes / sizeof escapes[0]; i++) {
		b = mb_mlp();
		mb_external(b, b->g.initializer[0], escapes[i]);
		char what[128];
		snprintf(what, sizeof what, "external data location \"%s\" rejected", escapes[i]);
		EXPECT_MODEL_ERROR(b, "external_escape.onnx", what, "initializer \"W\"", escapes[i]);
	}

	b = mb_mlp();
	mb_external(b, b->g.initializer[0], "");
	EXPECT_MODEL_ERROR(b, "external_empty.onnx", "empty external data location rejected", "initializer \"W\"",
			   "location");

	/* ".." inside a file name is not a parent directory */
	b = mb_mlp();
	mb_external(b, b->g.initializer[0], "w..v2.bin");
	g = expect_import("external data file \"w..v2.bin\" accepted", mb_write(b, "external_dots.onnx"), NULL);
	ir_graph_free(g);
	mb_free(b);
}

/* External data that is not a regular file inside the model's directory
 * (issue 40): a symbolic link to a file elsewhere, a file under a linked
 * directory, a FIFO (which blocked open() forever). Both readers refuse
 * it, naming the file and the initializer: the interpreter (pcc eval,
 * train) and onnx_weights (pcc-run); alarm() turns a hang into a failure. */
static void expect_unreadable(const char *loc, const char *model, const char *want)
{
	char what[160];
	struct mb *b = mb_mlp();
	mb_external(b, b->g.initializer[0], loc);
	const char *p = mb_write(b, model);
	struct ir_graph *g = onnx_import(p, NULL, NULL);
	alarm(20);
	int rc = g ? run_zeros(g, -1) : -1;
	snprintf(what, sizeof what, "interp_run: external data \"%s\" refused: %s", loc, want);
	TAP_OK(rc < 0 && strstr(ir_error(), loc) && strstr(ir_error(), "\"W\"") && strstr(ir_error(), want), "%s",
	       what);
	TAP_DIAG("  rc %d: %s", rc, ir_error());
	ir_graph_free(g);

	struct onnx_weights *w = onnx_weights_open(p);
	float dst[32];
	struct ir_shape s = { 2, { 8, 4 } };
	int64_t start[2] = { 0, 0 };
	rc = w ? onnx_weights_read(w, "W", IR_F32, &s, start, &s, dst) : -1;
	alarm(0);
	snprintf(what, sizeof what, "onnx_weights_read: external data \"%s\" refused: %s", loc, want);
	TAP_OK(rc < 0 && strstr(ir_error(), loc) && strstr(ir_error(), "\"W\"") && strstr(ir_error(), want), "%s",
	       what);
	TAP_DIAG("  rc %d: %s", rc, ir_error());
	onnx_weights_close(w);
	mb_free(b);
}

static void test_external_files(void)
{
	char secret[] = "/tmp/pcc_secret_XXXXXX", path[512], link[512];
	if (!TAP_OK(tmpdir_make(secret) == 0, "a directory outside the model's"))
		return;
	float zeros[32] = { 0 };
	snprintf(path, sizeof path, "%s/w.bin", secret);
	FILE *f = fopen(path, "wb");
	TAP_OK(f && fwrite(zeros, sizeof zeros, 1, f) == 1 && fclose(f) == 0, "a file of W's 128 bytes there");
	snprintf(link, sizeof link, "%s/w_link.bin", tmpdir);
	TAP_OK(symlink(path, link) == 0, "w_link.bin: a symbolic link to it");
	snprintf(link, sizeof link, "%s/linked_dir", tmpdir);
	TAP_OK(symlink(secret, link) == 0, "linked_dir: a symbolic link to its directory");
	snprintf(path, sizeof path, "%s/w_fifo.bin", tmpdir);
	TAP_OK(mkfifo(path, 0600) == 0, "w_fifo.bin: a FIFO");
	snprintf(path, sizeof path, "%s/sub", tmpdir);
	TAP_OK(mkdir(path, 0700) == 0, "sub: a directory");

	expect_unreadable("w_link.bin", "external_link.onnx", "symbolic link");
	expect_unreadable("linked_dir/w.bin", "external_linked_dir.onnx", "symbolic link \"linked_dir\"");
	expect_unreadable("w_fifo.bin", "external_fifo.onnx", "is a FIFO, not a regular file");
	expect_unreadable("sub", "external_dir.onnx", "is a directory, not a regular file");

	/* the control: a regular file in a subdirectory is read */
	snprintf(path, sizeof path, "%s/sub/w.bin", tmpdir);
	f = fopen(path, "wb");
	TAP_OK(f && fwrite(zeros, sizeof zeros, 1, f) == 1 && fclose(f) == 0, "sub/w.bin: a regular file");
	struct mb *b = mb_mlp();
	mb_external(b, b->g.initializer[0], "sub/w.bin");
	struct ir_graph *g = expect_import("external data in sub/w.bin imports", mb_write(b, "external_sub.onnx"),
					   NULL);
	TAP_OK(g && run_zeros(g, -1) == 0, "external data in sub/w.bin is read");
	ir_graph_free(g);
	mb_free(b);
	tmpdir_remove(secret);
}

/* A declared tensor larger than its data or than any machine's memory
 * (2^40 floats, 4 TiB) is refused before the interpreter allocates it
 * (issue 40: pcc eval allocated 8 GiB for a 2^31-element initializer
 * before finding its data short); an attempt would end in "out of memory". */
static void test_huge_declared(void)
{
	char path[512];
	float zeros[32] = { 0 };
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1");
	mb_external(b, mb_tensor(b, "W", T_FLOAT, "1048576,1048576"), "w_small.bin");
	mb_node(b, "Identity", "same", "W", "y");
	mb_output(b, "y", T_FLOAT, "1048576,1048576");
	write_bytes("w_small.bin", zeros, sizeof zeros, path, sizeof path);
	struct ir_graph *g = expect_import("an initializer declared f32[2^20,2^20] with 128 bytes of data imports",
					   mb_write(b, "huge_init.onnx"), NULL);
	int rc = g ? run_zeros(g, -1) : 0;
	TAP_OK(rc < 0 && strstr(ir_error(), "w_small.bin") && strstr(ir_error(), "\"W\"") &&
		       strstr(ir_error(), "needs 4398046511104 bytes at offset 0, the file has 128 bytes"),
	       "interp_run: its data is short, found before allocating 4 TiB");
	TAP_DIAG("  rc %d: %s", rc, ir_error());
	ir_graph_free(g);
	mb_free(b);

	static const int64_t shape[2] = { 1048576, 1048576 };
	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1");
	mb_init_i64(b, "shape", 2, shape);
	mb_node(b, "Expand", "big", "x,shape", "y");
	mb_output(b, "y", T_FLOAT, "1048576,1048576");
	g = expect_import("Expand to f32[2^20,2^20] imports", mb_write(b, "huge_expand.onnx"), NULL);
	rc = g ? run_zeros(g, -1) : 0;
	TAP_OK(rc == -ENOMEM && strstr(ir_error(), "node \"big\"") &&
		       strstr(ir_error(),
			      "its result f32[1048576,1048576] needs 4 TiB, more than this machine's memory"),
	       "interp_run: a result larger than the machine's memory is refused before allocating it");
	TAP_DIAG("  rc %d: %s", rc, ir_error());
	ir_graph_free(g);
	mb_free(b);
}

/* ---- shape errors ----------------------------------------------------------- */

static void test_shapes(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,8");
	mb_init_f32(b, "W", "4,3");
	mb_node(b, "MatMul", "proj", "x,W", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	EXPECT_MODEL_ERROR(b, "matmul.onnx", "MatMul operands that do not contract", "node \"proj\" (MatMul)", "[2,8]",
			   "[4,3]", "do not contract");

	b = mb_reshape_to(4, -1);
	EXPECT_MODEL_ERROR(b, "reshape_infer.onnx", "Reshape [2,3] to [4,-1]", "node \"rs\" (Reshape)", "[2,3]",
			   "[4,-1]");

	b = mb_reshape_to(5, 7);
	EXPECT_MODEL_ERROR(b, "reshape_count.onnx", "Reshape [2,3] to [5,7]", "node \"rs\" (Reshape)", "[2,3]",
			   "[5,7]");
}

/* x[:, -1::INT64_MIN] is valid ONNX (one column, walking backwards); the
 * step must not be negated as is. */
static void test_slice_extreme_step(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_init_i64(b, "starts", 1, (int64_t[]){ -1 });
	mb_init_i64(b, "ends", 1, (int64_t[]){ INT64_MIN });
	mb_init_i64(b, "axes", 1, (int64_t[]){ 1 });
	mb_init_i64(b, "steps", 1, (int64_t[]){ INT64_MIN });
	mb_node(b, "Slice", "sl", "x,starts,ends,axes,steps", "y");
	mb_output(b, "y", T_FLOAT, "2,1");
	struct ir_graph *g = expect_import("Slice with step INT64_MIN imports", mb_write(b, "slice.onnx"), NULL);
	struct ir_shape want = { 2, { 2, 1 } };
	TAP_OK(g && ir_shape_eq(&ir_graph_output(g, 0)->shape, &want), "Slice result is [2,1]");
	ir_graph_free(g);
	mb_free(b);
}

/* ---- constants of the wrong size -------------------------------------------
 * Operands that ONNX defines as one number (Range's start, OneHot's depth,
 * Pad's constant_value, Dropout's training_mode, ConstantOfShape's value),
 * given as an empty tensor: the importer must not read element 0. */

static struct mb *mb_with_empty(const char *op, const char *ins, const char *empty)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_INT64, "2,3");
	mb_init_i64(b, "one", 1, (int64_t[]){ 1 });
	mb_init_i64(b, "pads", 4, (int64_t[]){ 0, 0, 0, 0 });
	mb_init_i64(b, "values", 2, (int64_t[]){ 0, 1 });
	mb_tensor(b, empty, T_INT64, "0");
	mb_node(b, op, "op", ins, "y");
	mb_output(b, "y", T_INT64, "");
	return b;
}

static void test_empty_scalars(void)
{
	struct mb *b = mb_with_empty("Range", "empty,one,one", "empty");
	EXPECT_MODEL_ERROR(b, "range_empty.onnx", "Range with an empty start", "(Range)", "start");
	b = mb_with_empty("OneHot", "x,empty,values", "empty");
	EXPECT_MODEL_ERROR(b, "onehot_empty.onnx", "OneHot with an empty depth", "(OneHot)", "depth");
	b = mb_with_empty("Pad", "x,pads,empty", "empty");
	EXPECT_MODEL_ERROR(b, "pad_empty.onnx", "Pad with an empty constant_value", "(Pad)", "constant_value");
	b = mb_with_empty("Dropout", "x,,empty", "empty");
	EXPECT_MODEL_ERROR(b, "dropout_empty.onnx", "Dropout with an empty training_mode", "(Dropout)",
			   "training_mode");

	b = mb_with_empty("ConstantOfShape", "pads", "unused");
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = "value";
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	a->t = b->g.initializer[--b->g.n_initializer]; /* the empty tensor, moved */
	PUSH(b, b->g.node[0]->attribute, b->g.node[0]->n_attribute, a);
	EXPECT_MODEL_ERROR(b, "constant_of_shape_empty.onnx", "ConstantOfShape with an empty value",
			   "(ConstantOfShape)", "value");
}

/* Constant value_ints=[] and value_floats=[]: tensors of shape [0], not
 * "no data" (the dynamo exporter writes Expand(zero, value_ints=[]) for a
 * scalar zero). y = Expand(x, []) and y = Reshape(Concat(flat x, []), [2,3])
 * are x. */
static struct mb *mb_empty_list(const char *attr)
{
	struct mb *b = mb_new(17);
	mb_input(b, "x", T_FLOAT, "2,3");
	Onnx__NodeProto *n = mb_node(b, "Constant", "empty", "", "e");
	Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = mb_str(b, attr);
	a->has_type = 1;
	a->type = strcmp(attr, "value_ints") == 0 ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
						  : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
	PUSH(b, n->attribute, n->n_attribute, a);
	if (a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) {
		mb_node(b, "Expand", "expand", "x,e", "y");
	} else {
		mb_init_i64(b, "flat", 1, (int64_t[]){ -1 });
		mb_init_i64(b, "shape", 2, (int64_t[]){ 2, 3 });
		mb_node(b, "Reshape", "flatten", "x,flat", "xf");
		mb_attr_int(b, mb_node(b, "Concat", "concat", "xf,e", "c"), "axis", 0);
		mb_node(b, "Reshape", "back", "c,shape", "y");
	}
	mb_output(b, "y", T_FLOAT, "2,3");
	return b;
}

static void test_empty_constant_lists(void)
{
	static const char *const attrs[] = { "value_ints", "value_floats" };
	for (int k = 0; k < 2; k++) {
		char what[96], file[64];
		snprintf(what, sizeof what, "Constant %s=[] imports as a tensor of shape [0]", attrs[k]);
		snprintf(file, sizeof file, "empty_%s.onnx", attrs[k]);
		struct mb *b = mb_empty_list(attrs[k]);
		struct ir_graph *g = expect_import(what, mb_write(b, file), NULL);
		mb_free(b);
		if (!g)
			continue;
		struct ir_tensor x, y = { 0 };
		ir_tensor_alloc(&x, IR_F32, &ir_graph_input(g, 0)->shape);
		for (int i = 0; i < 6; i++)
			((float *)x.data)[i] = (float)i;
		int rc = interp_run(g, &x, &y);
		bool ok = rc == 0 && y.shape.rank == 2 && y.shape.dims[0] == 2 && y.shape.dims[1] == 3;
		for (int i = 0; ok && i < 6; i++)
			ok = ((float *)y.data)[i] == (float)i;
		TAP_OK(ok, "Constant %s=[]: %s is x", attrs[k], k ? "x concatenated with it" : "x expanded to it");
		if (rc)
			TAP_DIAG("  %s", ir_error());
		else
			ir_tensor_free(&y);
		ir_tensor_free(&x);
		ir_graph_free(g);
	}
}

/* Dropout in training mode (as a model exported with
 * TrainingMode.TRAINING writes it): with a constant ratio of 0 it is the
 * identity, the output the input itself; any other ratio, the default 0.5
 * too, is refused naming it. */
static struct mb *mb_dropout_training(const char *ins, float ratio)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "2,3");
	mb_init_raw(b, "ratio", T_FLOAT, "", &ratio, sizeof ratio);
	mb_init_raw(b, "training", T_BOOL, "", &(uint8_t){ 1 }, 1);
	mb_node(b, "Dropout", "drop", ins, "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	return b;
}

static void test_dropout_training(void)
{
	struct mb *b = mb_dropout_training("x,ratio,training", 0);
	struct ir_graph *g = expect_import("training-mode Dropout with ratio 0 imports", mb_write(b, "drop0.onnx"),
					   NULL);
	TAP_OK(g && ir_graph_output(g, 0) == ir_graph_input(g, 0),
	       "training-mode Dropout with ratio 0 is the identity");
	ir_graph_free(g);
	mb_free(b);
	b = mb_dropout_training("x,ratio,training", 0.1f);
	EXPECT_MODEL_ERROR(b, "drop01.onnx", "training-mode Dropout with ratio 0.1 refused", "node \"drop\" (Dropout)",
			   "training-mode dropout (ratio 0.1) is not supported yet; only ratio 0 is");
	b = mb_dropout_training("x,,training", 0);
	EXPECT_MODEL_ERROR(b, "drop_default.onnx", "training-mode Dropout with the default ratio refused",
			   "node \"drop\" (Dropout)", "(ratio 0.5)");
}

/* ---- image ops (onnx_ops_image.c, onnx_ops_convt.c) ---------------------------------------------- */

/* x f32[1,4,4,4] -> Resize(x, roi, scales) -> y, scales an initializer */
static struct mb *mb_resize(const char *mode)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1,4,4,4");
	Onnx__TensorProto *t = mb_init_f32(b, "scales", "4");
	memcpy(t->raw_data.data, (float[]){ 1, 1, 2, 2 }, 16);
	mb_attr_string(b, mb_node(b, "Resize", "up", "x,,scales", "y"), "mode", mode);
	mb_output(b, "y", T_FLOAT, "1,4,8,8");
	return b;
}

static void test_image_ops(void)
{
	struct mb *b = mb_resize("area");
	EXPECT_MODEL_ERROR(b, "resize_area.onnx", "Resize with an unknown mode", "(Resize)",
			   "mode 'area' is not supported");
	b = mb_resize("linear");
	mb_attr_int(b, b->g.node[0], "antialias", 1);
	EXPECT_MODEL_ERROR(b, "resize_antialias.onnx", "Resize with antialias at opset 13", "(Resize)",
			   "attribute 'antialias' came with Resize-18, but the model imports opset 13");
	b = mb_resize("nearest");
	b->opset.version = 18;
	mb_attr_int(b, b->g.node[0], "antialias", 1);
	EXPECT_MODEL_ERROR(b, "resize_antialias_nearest.onnx", "Resize with antialias in nearest mode", "(Resize)",
			   "antialias applies to linear and cubic modes, not nearest");
	b = mb_resize("nearest");
	mb_input(b, "s", T_FLOAT, "4");
	b->g.node[0]->input[2] = "s";
	EXPECT_MODEL_ERROR(b, "resize_scales_input.onnx", "Resize whose scales are computed at run time", "(Resize)",
			   "scales must be a constant known at compile time");
	b = mb_resize("cubic");
	b->g.node[0]->input[2] = "";
	EXPECT_MODEL_ERROR(b, "resize_no_scales.onnx", "Resize without scales or sizes", "(Resize)",
			   "scales or sizes must be given");

	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1,4,3,3");
	mb_init_f32(b, "W", "3,2,3,3");
	mb_node(b, "ConvTranspose", "up", "x,W", "y");
	mb_output(b, "y", T_FLOAT, "1,2,5,5");
	EXPECT_MODEL_ERROR(b, "convtranspose_channels.onnx", "ConvTranspose whose weight has other channels",
			   "(ConvTranspose)", "first dim is 3, not the input's 4 channels");

	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1,1,2,2,2,2");
	mb_init_f32(b, "W", "1,1,1,1,1,1");
	mb_node(b, "ConvTranspose", "up", "x,W", "y");
	mb_output(b, "y", T_FLOAT, "1,1,2,2,2,2");
	EXPECT_MODEL_ERROR(b, "convtranspose_4d.onnx", "ConvTranspose of 4 spatial dims", "(ConvTranspose)",
			   "4 spatial dims (1 to 3 are supported)");

	b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "1,6,2,2");
	mb_attr_int(b, mb_node(b, "DepthToSpace", "d2s", "x", "y"), "blocksize", 2);
	mb_output(b, "y", T_FLOAT, "1,1,4,4");
	EXPECT_MODEL_ERROR(b, "depthtospace_channels.onnx", "DepthToSpace of channels not a multiple of b^2",
			   "(DepthToSpace)", "multiple of blocksize^2");
}

/* ---- run-time errors ---------------------------------------------------------- */

static void test_gather(void)
{
	struct mb *b = mb_new(13);
	mb_input(b, "x", T_FLOAT, "4,3");
	mb_init_i64(b, "idx", 2, (int64_t[]){ 1, 7 });
	mb_node(b, "Gather", "lookup", "x,idx", "y");
	mb_output(b, "y", T_FLOAT, "2,3");
	const char *p = mb_write(b, "gather_runtime.onnx");
	struct ir_graph *g = expect_import("Gather with bad indices imports", p, NULL);
	if (g) {
		int rc = run_zeros(g, -1);
		TAP_OK(rc < 0 && strstr(ir_error(), "lookup") && strstr(ir_error(), "gather") &&
			       strstr(ir_error(), "out of range"),
		       "interp_run: Gather index 7 of 4 fails naming the op");
		TAP_DIAG("  rc %d: %s", rc, ir_error());
	}
	ir_graph_free(g);
	mb_free(b);

	/* all operands constant: folding evaluates it during import */
	b = mb_new(13);
	mb_init_i64(b, "data", 4, (int64_t[]){ 0, 1, 2, 3 });
	mb_init_i64(b, "idx", 1, (int64_t[]){ -9 });
	mb_node(b, "Gather", "lookup", "data,idx", "y");
	mb_output(b, "y", T_INT64, "1");
	EXPECT_MODEL_ERROR(b, "gather_fold.onnx", "Gather of constants out of range (folded at import)",
			   "node \"lookup\" (Gather)", "out of range");
	const char *first = strstr(ir_error(), "node \"lookup\"");
	TAP_OK(first && !strstr(first + 1, "node \"lookup\""), "folding error names the node once");
}

/* ---- model state ------------------------------------------------------------- */

/* BatchNormalization's running statistics are model state: never trained;
 * in training mode, with onnx_import_opts.updates, graph updates. */
static struct mb *mb_batchnorm(bool training)
{
	struct mb *b = mb_new(15);
	mb_input(b, "x", T_FLOAT, "2,3,4");
	for (int i = 0; i < 4; i++)
		mb_init_f32(b, (const char *[]){ "s", "B", "m", "v" }[i], "3");
	Onnx__NodeProto *n = mb_node(b, "BatchNormalization", "bn", "x,s,B,m,v", training ? "y,rm,rv" : "y");
	mb_attr_int(b, n, "training_mode", training);
	mb_output(b, "y", T_FLOAT, "2,3,4");
	return b;
}

static void test_batchnorm_state(void)
{
	struct mb *b = mb_batchnorm(false);
	struct ir_graph *g = onnx_import(mb_write(b, "bn_eval.onnx"), NULL, NULL);
	int buffers = 0;
	for (int i = 0; g && i < ir_graph_nparams(g); i++)
		buffers += ir_graph_param(g, i)->buffer;
	struct train_opts o;
	struct train_step ts;
	train_opts_init(&o);
	o.loss = "mse:y,target";
	int rc = g ? train_build(g, &o, &ts) : -1;
	TAP_OK(buffers == 2 && rc == 0 && ts.nparams == 2 && !strcmp(ts.params[0]->name, "s") &&
		       !strcmp(ts.params[1]->name, "B"),
	       "BatchNorm (inference mode): running mean and var are state, only scale and bias train (%s)",
	       rc ? ir_error() : "");
	if (rc == 0)
		train_step_free(&ts);
	mb_free(b);

	b = mb_batchnorm(true);
	const char *path = mb_write(b, "bn_train.onnx");
	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	g = onnx_import(path, &imp, NULL);
	TAP_OK(g && ir_graph_nupdates(g) == 0 && ir_graph_nparams(g) == 2,
	       "BatchNorm (training mode), plain import: no updates, the unread statistics dropped");
	ir_graph_free(g);
	imp.updates = true;
	g = onnx_import(path, &imp, NULL);
	TAP_OK(g && ir_graph_nupdates(g) == 2 && !strcmp(ir_graph_update_param(g, 0)->name, "m") &&
		       !strcmp(ir_graph_update_param(g, 1)->name, "v") && ir_verify(g) == 0,
	       "BatchNorm (training mode), imported for training: running mean and var are updated");
	ir_graph_free(g);
	mb_free(b);
}

/* ---- quantization ------------------------------------------------------------ */

/* x [2,4] -> QuantizeLinear(scale, uint8 zero point) -> DequantizeLinear,
 * scale and zero point initializers of shape sdims, QuantizeLinear's axis 1. */
static struct mb *mb_qdq(const char *sdims, int n, int64_t opset)
{
	struct mb *b = mb_new(opset);
	mb_input(b, "x", T_FLOAT, "2,4");
	mb_init_f32(b, "s", sdims);
	mb_init_raw(b, "zp", T_UINT8, sdims, (uint8_t[4]){ 0 }, (size_t)n);
	Onnx__NodeProto *q = mb_node(b, "QuantizeLinear", "q", "x,s,zp", "xq");
	mb_attr_int(b, q, "axis", 1);
	mb_node(b, "DequantizeLinear", "dq", "xq,s,zp", "y");
	mb_output(b, "y", T_FLOAT, "2,4");
	return b;
}

/* Quantized graphs import for inference and are refused for a train step
 * (onnx_import_opts.updates): rounding's zero gradient would train only
 * the scales. A per-axis scale of the wrong length, a blocked one and the
 * axis attribute before opset 13 are refused naming the node. */
static void test_quantized(void)
{
	struct mb *b = mb_qdq("4", 4, 13);
	const char *path = mb_write(b, "qdq.onnx");
	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	struct ir_graph *g = expect_import("a QDQ model imports for inference", path, &imp);
	ir_graph_free(g);
	imp.updates = true;
	EXPECT_ERROR("a QDQ model imported for a train step is refused", path, &imp, "node \"q\" (QuantizeLinear)",
		     "quantized ops run for inference only; pcc does not train through them");
	mb_free(b);

	EXPECT_MODEL_ERROR(mb_qdq("3", 3, 13), "qdq_axis_len.onnx", "a per-axis scale of the wrong length",
			   "node \"q\" (QuantizeLinear)", "y_scale has shape [3]",
			   "1-D of 4 elements (dimension 1 of [2,4])");
	EXPECT_MODEL_ERROR(mb_qdq("2,2", 4, 13), "qdq_blocked.onnx", "a blocked scale", "node \"q\" (QuantizeLinear)",
			   "blocked quantization is not supported");
	EXPECT_MODEL_ERROR(mb_qdq("4", 4, 10), "qdq_axis_opset10.onnx", "QuantizeLinear's axis at opset 10",
			   "node \"q\" (QuantizeLinear)", "attribute 'axis' came with QuantizeLinear-13",
			   "imports opset 10");
}

/* ---- the pcc binary ---------------------------------------------------------- */

/* Runs `pcc inspect model`; checks exit status 1 and one stderr line "pcc: ..." */
static void check_cli(const char *pcc, const char *model)
{
	char cmd[2048], errpath[512], line[2048];
	snprintf(errpath, sizeof errpath, "%s/stderr.txt", tmpdir);
	snprintf(cmd, sizeof cmd, "'%s' inspect '%s' >/dev/null 2>'%s'", pcc, model, errpath);
	int st = system(cmd);
	FILE *f = fopen(errpath, "r");
	int nlines = 0;
	bool prefixed = false;
	while (f && fgets(line, sizeof line, f)) {
		if (nlines++ == 0) {
			prefixed = strncmp(line, "pcc: ", 5) == 0 && strstr(line, model);
			TAP_DIAG("  stderr: %s", strtok(line, "\n"));
		}
	}
	if (f)
		fclose(f);
	TAP_OK(WIFEXITED(st) && WEXITSTATUS(st) == 1 && nlines == 1 && prefixed,
	       "pcc inspect %s: exit 1, one stderr line \"pcc: FILE: ...\"", strrchr(model, '/') + 1);
}

static void test_cli(const char *pcc)
{
	const char *files[] = { "unsupported_op.onnx", "half.onnx" };
	char path[512];
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/%s", tmpdir, files[i]);
		check_cli(pcc, path);
	}
}

int main(int argc, char **argv)
{
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	test_unsupported();
	test_opset();
	test_files();
	test_truncated();
	test_initializers();
	test_absurd_input();
	test_structure();
	test_symbolic_dim();
	test_external();
	test_external_ints();
	test_external_files();
	test_huge_declared();
	test_shapes();
	test_slice_extreme_step();
	test_empty_scalars();
	test_empty_constant_lists();
	test_dropout_training();
	test_image_ops();
	test_gather();
	test_batchnorm_state();
	test_quantized();
	if (argc > 1)
		test_cli(argv[1]);
	else
		TAP_DIAG("no pcc binary given: skipping the CLI checks");
	tmpdir_remove(tmpdir);
	return tap_done();
}
