/*
 * test_onnx_tile.c: ONNX Tile (h_tile in compiler/frontend/onnx_ops_shape.c), a
 * broadcast with one new axis per tiled dim, then a reshape.
 *
 * Cases: every dim tiled (rank 3); torch's repeat_interleave of a rank-4
 * attention tensor's key/value heads as the TorchScript exporter writes
 * it since torch 2.1 (Unsqueeze to rank 5, Tile by [1, 1, r, 1, 1], then
 * a reshape: issue 39), which doubled to rank 10 and was refused; rank 7
 * with one dim tiled (rank 8, the most there is); and a Tile needing more
 * than rank 8, refused in one line. Values: the interpreter's against
 * Tile's definition, y[i0, ..., in] = x[i0 mod d0, ..., in mod dn].
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */

#include "onnx_builder.h"

/* y = Tile(x, reps) on x of the given dims holding 0, 1, 2, ...: imports,
 * and the interpreter's y is Tile's. */
static void check(const char *what, int rank, const int64_t *dims, const int64_t *reps)
{
	char xd[128] = "", yd[128] = "", rd[8];
	int64_t ydims[IR_MAX_RANK], xn = 1, yn = 1;
	for (int i = 0; i < rank; i++) {
		ydims[i] = dims[i] * reps[i];
		snprintf(xd + strlen(xd), sizeof xd - strlen(xd), "%s%lld", i ? "," : "", (long long)dims[i]);
		snprintf(yd + strlen(yd), sizeof yd - strlen(yd), "%s%lld", i ? "," : "", (long long)ydims[i]);
		xn *= dims[i];
		yn *= ydims[i];
	}
	snprintf(rd, sizeof rd, "%d", rank);
	struct mb *b = mb_new(17);
	mb_input(b, "x", T_FLOAT, xd);
	mb_init_raw(b, "reps", T_INT64, rd, reps, (size_t)rank * sizeof *reps);
	mb_node(b, "Tile", "tile", "x,reps", "y");
	mb_output(b, "y", T_FLOAT, yd);
	ir_error_clear();
	struct ir_graph *g = onnx_import(mb_write(b, "tile.onnx"), NULL, NULL);
	mb_free(b);
	if (!g) {
		TAP_OK(0, "%s: imports (%s)", what, ir_error());
		return;
	}
	struct ir_tensor x, y = { 0 };
	ir_tensor_alloc(&x, IR_F32, &ir_graph_input(g, 0)->shape);
	for (int64_t i = 0; i < xn; i++)
		((float *)x.data)[i] = (float)i;
	int rc = interp_run(g, &x, &y);
	bool ok = rc == 0 && y.shape.rank == rank && ir_shape_numel(&y.shape) == yn;
	for (int i = 0; ok && i < rank; i++)
		ok = y.shape.dims[i] == ydims[i];
	int64_t bad = -1;
	for (int64_t e = 0; ok && e < yn; e++) {
		/* y's element e: its index, each coordinate mod x's dim */
		int64_t rest = e, at = 0, stride = 1;
		for (int i = rank - 1; i >= 0; i--) {
			at += (rest % ydims[i]) % dims[i] * stride;
			rest /= ydims[i];
			stride *= dims[i];
		}
		if (((float *)y.data)[e] != (float)at) {
			bad = e;
			ok = false;
		}
	}
	TAP_OK(ok, "%s: [%s] tiled to [%s], each element x's at its index mod x's dims%s%s", what, xd, yd,
	       rc ? ir_error() : "", bad >= 0 ? " (one is not)" : "");
	ir_tensor_free(&x);
	if (rc == 0)
		ir_tensor_free(&y);
	ir_graph_free(g);
}

int main(void)
{
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	check("every dim tiled", 3, (int64_t[]){ 2, 3, 2 }, (int64_t[]){ 2, 1, 3 });
	check("repeat_interleave of 2 key/value heads, 3 times (torch >= 2.1's export)", 5,
	      (int64_t[]){ 2, 2, 1, 4, 8 }, (int64_t[]){ 1, 1, 3, 1, 1 });
	check("rank 7, one dim tiled", 7, (int64_t[]){ 2, 1, 2, 1, 3, 1, 2 }, (int64_t[]){ 1, 1, 1, 1, 1, 2, 1 });

	struct mb *b = mb_new(17);
	mb_input(b, "x", T_FLOAT, "2,2,2,2,2");
	mb_init_raw(b, "reps", T_INT64, "5", (int64_t[]){ 2, 2, 1, 2, 2 }, 5 * sizeof(int64_t));
	mb_node(b, "Tile", "tile", "x,reps", "y");
	mb_output(b, "y", T_FLOAT, "4,4,2,4,4");
	EXPECT_MODEL_ERROR(b, "tile_deep.onnx", "a Tile past rank 8: refused in one line", "\"tile\" (Tile)",
			   "tiles 4 dims of rank 5: at most 3");
	tmpdir_remove(tmpdir);
	return tap_done();
}
