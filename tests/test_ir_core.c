/*
 * test_ir_core.c: the graph container, shape inference rules and their
 * messages, dead-code elimination, dtype conversions.
 */
#include <errno.h>
#include <string.h>

#include "ir/ir.h"
#include "tests/tap.h"

static struct ir_shape sh(int rank, const int64_t *d)
{
	struct ir_shape s = { rank, { 0 } };
	memcpy(s.dims, d, (size_t)rank * sizeof *d);
	return s;
}
#define SH(...) sh(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), (int64_t[]){ __VA_ARGS__ })

static void test_dot_inference(void)
{
	struct ir_graph *g = ir_graph_new();
	struct ir_shape a = SH(8, 128, 64), b = SH(8, 64, 32);
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &a);
	struct ir_value *w = ir_graph_add_input(g, "w", IR_F32, &b);
	struct ir_attrs at = { .lhs_batch = IR_ILIST(0),
			       .rhs_batch = IR_ILIST(0),
			       .lhs_contract = IR_ILIST(2),
			       .rhs_contract = IR_ILIST(1) };
	struct ir_node *n = ir_graph_add_node(g, IR_OP_DOT, "bmm", 2, (struct ir_value *[]){ x, w }, &at);
	struct ir_shape want = SH(8, 128, 32);
	TAP_OK(n && ir_shape_eq(&n->out[0]->shape, &want), "batched dot infers [8,128,32]");
	/* contracting mismatch names both shapes */
	struct ir_attrs bad = { .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(1) };
	n = ir_graph_add_node(g, IR_OP_DOT, "bad", 2, (struct ir_value *[]){ x, w }, &bad);
	TAP_OK(!n && strstr(ir_error(), "[8,128,64]") && strstr(ir_error(), "[8,64,32]") &&
		       strstr(ir_error(), "do not contract"),
	       "dot mismatch message: %s", ir_error());
	/* free dims: [2,3] x [3,4,5] contracting 1/0 -> [2,4,5] */
	struct ir_shape c1 = SH(2, 3), c2 = SH(3, 4, 5);
	struct ir_value *p = ir_graph_add_input(g, "p", IR_F32, &c1);
	struct ir_value *q = ir_graph_add_input(g, "q", IR_F32, &c2);
	struct ir_attrs mm = { .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) };
	n = ir_graph_add_node(g, IR_OP_DOT, NULL, 2, (struct ir_value *[]){ p, q }, &mm);
	want = SH(2, 4, 5);
	TAP_OK(n && ir_shape_eq(&n->out[0]->shape, &want), "dot free dims keep operand order");
	ir_graph_free(g);
}

static void test_shape_rules(void)
{
	struct ir_graph *g = ir_graph_new();
	struct ir_shape s = SH(2, 3, 4), r;
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &s), *y;
	struct ir_attrs a = { .axes = IR_ILIST(2, 0, 1) };
	struct ir_node *n = ir_graph_add_node(g, IR_OP_TRANSPOSE, NULL, 1, &x, &a);
	r = SH(4, 2, 3);
	TAP_OK(n && ir_shape_eq(&n->out[0]->shape, &r), "transpose permutes dims");
	a = (struct ir_attrs){ .axes = IR_ILIST(0, 2) };
	n = ir_graph_add_node(g, IR_OP_REDUCE_SUM, NULL, 1, &x, &a);
	r = SH(3);
	TAP_OK(n && ir_shape_eq(&n->out[0]->shape, &r), "reduce drops axes");
	a = (struct ir_attrs){ .start = IR_ILIST(0, 1, 0), .limit = IR_ILIST(2, 3, 4), .stride = IR_ILIST(1, 1, 3) };
	n = ir_graph_add_node(g, IR_OP_SLICE, NULL, 1, &x, &a);
	r = SH(2, 2, 2);
	TAP_OK(n && ir_shape_eq(&n->out[0]->shape, &r), "strided slice rounds up");
	a = (struct ir_attrs){ .shape = SH(5, 2, 3, 4), .axes = IR_ILIST(1, 2, 3) };
	n = ir_graph_add_node(g, IR_OP_BROADCAST, NULL, 1, &x, &a);
	TAP_OK(n && n->out[0]->shape.dims[0] == 5, "broadcast adds a leading dim");
	a = (struct ir_attrs){ .shape = SH(5, 7, 4), .axes = IR_ILIST(0, 1, 2) };
	TAP_OK(!ir_graph_add_node(g, IR_OP_BROADCAST, NULL, 1, &x, &a) && strstr(ir_error(), "does not broadcast"),
	       "bad broadcast rejected: %s", ir_error());
	struct ir_shape xs = SH(1, 3, 8, 8), ws = SH(6, 1, 3, 3);
	struct ir_value *img = ir_graph_add_input(g, "img", IR_F32, &xs);
	struct ir_value *ker = ir_graph_add_input(g, "ker", IR_F32, &ws);
	a = (struct ir_attrs){ .stride = IR_ILIST(2, 2),
			       .pad_lo = IR_ILIST(1, 1),
			       .pad_hi = IR_ILIST(1, 1),
			       .dilation = IR_ILIST(1, 1),
			       .groups = 3 };
	n = ir_graph_add_node(g, IR_OP_CONV, NULL, 2, (struct ir_value *[]){ img, ker }, &a);
	r = SH(1, 6, 4, 4);
	TAP_OK(n && ir_shape_eq(&n->out[0]->shape, &r), "grouped strided conv shape");
	struct ir_shape t = SH(2, 3);
	y = ir_graph_add_input(g, "y", IR_F32, &t);
	TAP_OK(!ir_graph_add_node(g, IR_OP_ADD, NULL, 2, (struct ir_value *[]){ x, y }, &(struct ir_attrs){ 0 }) &&
		       strstr(ir_error(), "broadcast explicitly"),
	       "elementwise needs equal shapes: %s", ir_error());
	struct ir_shape huge = SH(1000000, 1000000, 1000000);
	TAP_OK(!ir_graph_add_input(g, "h", IR_F32, &huge) && strstr(ir_error(), "2^44"), "absurd shape rejected: %s",
	       ir_error());
	a = (struct ir_attrs){ .axis = 1, .k = 5 };
	TAP_OK(!ir_graph_add_node(g, IR_OP_TOPK, NULL, 1, &x, &a) && strstr(ir_error(), "k = 5"),
	       "topk k beyond dim rejected");
	TAP_OK(ir_verify(g) == 0, "graph verifies");
	ir_graph_free(g);
}

static void test_dce(void)
{
	struct ir_graph *g = ir_graph_new();
	struct ir_shape s = SH(4);
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &s);
	struct ir_attrs none = { 0 };
	struct ir_node *a = ir_graph_add_node(g, IR_OP_EXP, NULL, 1, &x, &none);
	ir_graph_add_node(g, IR_OP_LOG, NULL, 1, &x, &none); /* dead */
	struct ir_node *c = ir_graph_add_node(g, IR_OP_NEG, NULL, 1, &a->out[0], &none);
	ir_graph_add_output(g, c->out[0], "y");
	int removed = ir_graph_dce(g);
	TAP_OK(removed == 1 && ir_graph_nnodes(g) == 2, "dce removes the unused node");
	TAP_OK(ir_verify(g) == 0, "graph verifies after dce (ids dense)");
	ir_graph_free(g);
}

/* ir_graph_hoist: a node moved to right after the last producer of its
 * operands, a node moved after a moved one following it, the others in
 * their order, ids renumbered, the graph still topological. */
static void test_hoist(void)
{
	struct ir_graph *g = ir_graph_new();
	struct ir_shape s = SH(4);
	struct ir_value *x = ir_graph_add_input(g, "x", IR_F32, &s);
	struct ir_attrs none = { 0 };
	struct ir_node *a = ir_graph_add_node(g, IR_OP_EXP, "a", 1, &x, &none);
	struct ir_node *b = ir_graph_add_node(g, IR_OP_LOG, "b", 1, &x, &none);
	struct ir_node *c = ir_graph_add_node(g, IR_OP_NEG, "c", 1, &b->out[0], &none);
	struct ir_node *d = ir_graph_add_node(g, IR_OP_ABS, "d", 1, &a->out[0], &none);  /* moves after a */
	struct ir_node *e = ir_graph_add_node(g, IR_OP_SQRT, "e", 1, &d->out[0], &none); /* after d */
	struct ir_node *f = ir_graph_add_node(g, IR_OP_ADD, "f", 2, (struct ir_value *[]){ c->out[0], e->out[0] },
					      &none);
	struct ir_node *k = ir_graph_add_node(g, IR_OP_EXP, "k", 1, &x, &none); /* reads only an input: stays */
	ir_graph_add_output(g, f->out[0], "y");
	ir_graph_add_output(g, k->out[0], "z");
	bool move[7] = { false, false, false, true, true, false, true };
	int rc = ir_graph_hoist(g, move);
	const struct ir_node *want[7] = { a, d, e, b, c, f, k };
	bool order = rc == 0 && ir_graph_nnodes(g) == 7;
	for (int i = 0; order && i < 7; i++)
		order = ir_graph_node(g, i) == want[i] && want[i]->id == i;
	TAP_OK(order, "hoist: a d e b c f k (d after a, e after d, k stays)");
	TAP_OK(ir_verify(g) == 0, "graph verifies after hoist");
	ir_graph_free(g);
}

static void test_half(void)
{
	/* reference bit patterns from IEEE 754 binary16 / bfloat16 tables */
	TAP_OK(ir_f32_to_f16(1.0f) == 0x3c00 && ir_f32_to_f16(-2.0f) == 0xc000, "f16 of 1 and -2");
	TAP_OK(ir_f32_to_f16(65504.0f) == 0x7bff && ir_f32_to_f16(65520.0f) == 0x7c00, "f16 max and overflow");
	TAP_OK(ir_f32_to_f16(5.9604645e-8f) == 0x0001, "f16 smallest subnormal");
	TAP_OK(ir_f16_to_f32(0x3555) == 0.333251953125f, "f16 0x3555 is 0.33325");
	TAP_OK(ir_f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00, "f16 rounds half to even (down)");
	TAP_OK(ir_f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02, "f16 rounds half to even (up)");
	TAP_OK(ir_f32_to_bf16(1.0f) == 0x3f80 && ir_bf16_to_f32(0x4049) == 3.140625f, "bf16 of 1 and pi");
	int ok = 1;
	for (uint32_t h = 0; h < 0x7c00; h++)
		ok &= ir_f32_to_f16(ir_f16_to_f32((uint16_t)h)) == h;
	TAP_OK(ok, "every finite f16 round-trips through f32");
}

int main(void)
{
	test_dot_inference();
	test_shape_rules();
	test_dce();
	test_hoist();
	test_half();
	return tap_done();
}
