/*
 * text_syntax.c: which attributes each op reads in the IR text form, in
 * print order, and the names of its modes (one switch over the op table).
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

#define WITH_MODES(bits, names) ((struct op_syntax){ (bits) | A(MODE), names, (int)(sizeof names / sizeof names[0]) })
#define PLAIN(bits) ((struct op_syntax){ (bits), NULL, 0 })

struct op_syntax tx_op_syntax(enum ir_op op)
{
	switch (op) {
	case IR_OP_NEG:
	case IR_OP_ABS:
	case IR_OP_SIGN:
	case IR_OP_EXP:
	case IR_OP_LOG:
	case IR_OP_SQRT:
	case IR_OP_RSQRT:
	case IR_OP_RECIP:
	case IR_OP_TANH:
	case IR_OP_ERF:
	case IR_OP_SIGMOID:
	case IR_OP_RELU:
	case IR_OP_SIN:
	case IR_OP_COS:
	case IR_OP_TAN:
	case IR_OP_ASIN:
	case IR_OP_ACOS:
	case IR_OP_ATAN:
	case IR_OP_SINH:
	case IR_OP_COSH:
	case IR_OP_ASINH:
	case IR_OP_ACOSH:
	case IR_OP_ATANH:
	case IR_OP_FLOOR:
	case IR_OP_CEIL:
	case IR_OP_ROUND:
	case IR_OP_NOT:
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_ADD:
	case IR_OP_SUB:
	case IR_OP_MUL:
	case IR_OP_DIV:
	case IR_OP_REM:
	case IR_OP_POW:
	case IR_OP_MAX:
	case IR_OP_MIN:
	case IR_OP_AND:
	case IR_OP_OR:
	case IR_OP_XOR:
	case IR_OP_EQ:
	case IR_OP_NE:
	case IR_OP_LT:
	case IR_OP_LE:
	case IR_OP_GT:
	case IR_OP_GE:
	case IR_OP_SELECT:
		return PLAIN(0);
	case IR_OP_CONVERT:
		return PLAIN(A(DTYPE));
	case IR_OP_DOT:
		return PLAIN(A(LHS_BATCH) | A(RHS_BATCH) | A(LHS_CONTRACT) | A(RHS_CONTRACT));
	case IR_OP_CONV:
		return PLAIN(A(STRIDE) | A(PAD_LO) | A(PAD_HI) | A(DILATION) | A(GROUPS));
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_TRANSPOSE:
	case IR_OP_REVERSE:
		return PLAIN(A(AXES));
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
		return WITH_MODES(A(AXIS), arg_modes);
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
		return PLAIN(A(WINDOW) | A(STRIDE) | A(PAD_LO) | A(PAD_HI) | A(DILATION));
	case IR_OP_CUMSUM:
		return WITH_MODES(A(AXIS), cumsum_modes);
	case IR_OP_RESHAPE:
		return PLAIN(A(SHAPE));
	case IR_OP_BROADCAST:
		return PLAIN(A(SHAPE) | A(AXES));
	case IR_OP_SLICE:
		return PLAIN(A(START) | A(LIMIT) | A(STRIDE));
	case IR_OP_CONCAT:
	case IR_OP_GATHER:
	case IR_OP_SOFTMAX:
		return PLAIN(A(AXIS));
	case IR_OP_PAD:
		/* value only matters for mode=constant, but printing it always
		 * keeps the round trip exact whatever the builder stored */
		return WITH_MODES(A(PAD_LO) | A(PAD_HI) | A(VALUE), pad_modes);
	case IR_OP_SCATTER:
		return WITH_MODES(0, scatter_modes);
	case IR_OP_IOTA:
		return PLAIN(A(DTYPE) | A(SHAPE) | A(AXIS));
	case IR_OP_CONSTANT:
		return PLAIN(A(DTYPE) | A(SHAPE) | A(DATA));
	case IR_OP_LAYER_NORM:
		return PLAIN(A(AXIS) | A(EPS));
	case IR_OP_TOPK:
		return WITH_MODES(A(AXIS) | A(K), topk_modes);
	case IR_OP_COUNT:
		break;
	}
	ir_assert_fail(__FILE__, __LINE__, "op_syntax: op out of range");
}
