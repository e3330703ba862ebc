/*
 * text_syntax.c: which attributes each op reads in the IR text form, in
 * print order, and the names of its modes: one syntax per form of the op
 * table (ops.h).
 */
#include <stddef.h>

#include "ir/text_internal.h"

const struct tx_attr_row tx_attr_info[ATTR_COUNT] = {
#define F(a) offsetof(struct ir_attrs, a)
	[ATTR_DTYPE] = { "dtype", KIND_DTYPE, F(dtype) },
	[ATTR_SHAPE] = { "shape", KIND_SHAPE, F(shape) },
	[ATTR_AXES] = { "axes", KIND_ILIST, F(axes) },
	[ATTR_AXIS] = { "axis", KIND_INT, F(axis) },
	[ATTR_K] = { "k", KIND_INT, F(k) },
	[ATTR_LHS_BATCH] = { "lhs_batch", KIND_ILIST, F(lhs_batch) },
	[ATTR_RHS_BATCH] = { "rhs_batch", KIND_ILIST, F(rhs_batch) },
	[ATTR_LHS_CONTRACT] = { "lhs_contract", KIND_ILIST, F(lhs_contract) },
	[ATTR_RHS_CONTRACT] = { "rhs_contract", KIND_ILIST, F(rhs_contract) },
	[ATTR_WINDOW] = { "window", KIND_ILIST, F(window) },
	[ATTR_START] = { "start", KIND_ILIST, F(start) },
	[ATTR_LIMIT] = { "limit", KIND_ILIST, F(limit) },
	[ATTR_STRIDE] = { "stride", KIND_ILIST, F(stride) },
	[ATTR_PAD_LO] = { "pad_lo", KIND_ILIST, F(pad_lo) },
	[ATTR_PAD_HI] = { "pad_hi", KIND_ILIST, F(pad_hi) },
	[ATTR_DILATION] = { "dilation", KIND_ILIST, F(dilation) },
	[ATTR_GROUPS] = { "groups", KIND_INT, F(groups) },
	[ATTR_MODE] = { "mode", KIND_MODE, F(mode) },
	[ATTR_EPS] = { "eps", KIND_DOUBLE, F(eps) },
	[ATTR_VALUE] = { "value", KIND_DOUBLE, F(value) },
	[ATTR_DATA] = { "data", KIND_DATA, F(data) },
#undef F
};

static const char *const arg_modes[] = {
	[0] = "first",
	[IR_ARG_LAST] = "last",
};
static const char *const cumsum_modes[] = {
	[0] = "inclusive",
	[IR_CUMSUM_EXCLUSIVE] = "exclusive",
	[IR_CUMSUM_REVERSE] = "reverse",
	[IR_CUMSUM_EXCLUSIVE | IR_CUMSUM_REVERSE] = "exclusive_reverse",
};
static const char *const pad_modes[] = {
	[IR_PAD_CONSTANT] = "constant",
	[IR_PAD_EDGE] = "edge",
	[IR_PAD_REFLECT] = "reflect",
};
static const char *const scatter_modes[] = {
	[IR_SCATTER_NONE] = "none", [IR_SCATTER_ADD] = "add", [IR_SCATTER_MUL] = "mul",
	[IR_SCATTER_MAX] = "max",   [IR_SCATTER_MIN] = "min",
};
static const char *const topk_modes[] = {
	[0] = "largest",
	[IR_TOPK_SMALLEST] = "smallest",
};

/* ---- the attributes of each form (the form column of ops.h) ----------- */

#define SYNTAX(form, bits) static const struct op_syntax syn_##form = { (bits), NULL, 0 }
#define SYNTAX_MODES(form, bits, names) \
	static const struct op_syntax syn_##form = { (bits) | A(MODE), names, (int)(sizeof names / sizeof names[0]) }

SYNTAX(unary, 0);
SYNTAX(binary, 0);
SYNTAX(select, 0);
SYNTAX(convert, A(DTYPE));
SYNTAX(dot, A(LHS_BATCH) | A(RHS_BATCH) | A(LHS_CONTRACT) | A(RHS_CONTRACT));
SYNTAX(conv, A(STRIDE) | A(PAD_LO) | A(PAD_HI) | A(DILATION) | A(GROUPS));
SYNTAX(reduce, A(AXES));
SYNTAX_MODES(arg, A(AXIS), arg_modes);
SYNTAX(window, A(WINDOW) | A(STRIDE) | A(PAD_LO) | A(PAD_HI) | A(DILATION));
SYNTAX_MODES(cumsum, A(AXIS), cumsum_modes);
SYNTAX(reshape, A(SHAPE));
SYNTAX(transpose, A(AXES));
SYNTAX(broadcast, A(SHAPE) | A(AXES));
SYNTAX(slice, A(START) | A(LIMIT) | A(STRIDE));
SYNTAX(concat, A(AXIS));
/* value only matters for mode=constant, but printing it always keeps the
 * round trip exact whatever the builder stored */
SYNTAX_MODES(pad, A(PAD_LO) | A(PAD_HI) | A(VALUE), pad_modes);
SYNTAX(reverse, A(AXES));
SYNTAX(gather, A(AXIS));
SYNTAX_MODES(scatter, 0, scatter_modes);
SYNTAX(iota, A(DTYPE) | A(SHAPE) | A(AXIS));
SYNTAX(constant, A(DTYPE) | A(SHAPE) | A(DATA));
SYNTAX(softmax, A(AXIS));
SYNTAX(layer_norm, A(AXIS) | A(EPS));
SYNTAX_MODES(topk, A(AXIS) | A(K), topk_modes);

#undef SYNTAX
#undef SYNTAX_MODES

static const struct op_syntax *const syntax[IR_OP_COUNT] = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = &syn_##form,
	IR_OPS(X)
#undef X
};

struct op_syntax tx_op_syntax(enum ir_op op)
{
	if ((unsigned)op >= IR_OP_COUNT)
		ir_assert_fail(__FILE__, __LINE__, "op_syntax: op out of range");
	return *syntax[op];
}
