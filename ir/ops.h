/*
 * The core op table: every op pcc's compiler knows after ONNX import.
 *
 * X(ENUM, text_name, n_inputs, n_outputs, flags)
 *   n_inputs -1 means variadic (at least one).
 * Every concern (shape inference, interpreter, text form, and later autodiff,
 * sharding and cost) is one switch over these with no default:, so adding a
 * row here makes -Wswitch-enum list each place that must handle it.
 *
 * Conventions (see ir.h for the attribute fields each op reads):
 *  - elementwise ops take operands of identical shape: broadcasting is
 *    explicit through BROADCAST;
 *  - comparisons produce BOOL; CONVERT changes dtype only;
 *  - NOT, AND, OR, XOR are logical on BOOL and bitwise on integers;
 *  - composites (SOFTMAX, LAYER_NORM, TOPK, CUMSUM) exist because a fast
 *    kernel or a sharding rule needs them whole; each has a reference
 *    decomposition documented at its interpreter kernel.
 */
#ifndef IR_OPS_H
#define IR_OPS_H

#define IR_OPS(X)                                                  \
	/* elementwise unary */                                    \
	X(NEG, neg, 1, 1, IR_OPF_UNARY)                            \
	X(ABS, abs, 1, 1, IR_OPF_UNARY)                            \
	X(SIGN, sign, 1, 1, IR_OPF_UNARY)                          \
	X(EXP, exp, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)             \
	X(LOG, log, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)             \
	X(SQRT, sqrt, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(RSQRT, rsqrt, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)         \
	X(RECIP, recip, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)         \
	X(TANH, tanh, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(ERF, erf, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)             \
	X(SIGMOID, sigmoid, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)     \
	X(RELU, relu, 1, 1, IR_OPF_UNARY)                          \
	X(SIN, sin, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)             \
	X(COS, cos, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)             \
	X(TAN, tan, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)             \
	X(ASIN, asin, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(ACOS, acos, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(ATAN, atan, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(SINH, sinh, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(COSH, cosh, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(ASINH, asinh, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)         \
	X(ACOSH, acosh, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)         \
	X(ATANH, atanh, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)         \
	X(FLOOR, floor, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)         \
	X(CEIL, ceil, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)           \
	X(ROUND, round, 1, 1, IR_OPF_UNARY | IR_OPF_FLOAT)         \
	X(NOT, not, 1, 1, IR_OPF_UNARY | IR_OPF_LOGIC)             \
	X(IS_NAN, is_nan, 1, 1, IR_OPF_UNARY | IR_OPF_PREDICATE)   \
	X(IS_INF, is_inf, 1, 1, IR_OPF_UNARY | IR_OPF_PREDICATE)   \
	X(CONVERT, convert, 1, 1, IR_OPF_UNARY)                    \
	/* elementwise binary */                                   \
	X(ADD, add, 2, 1, IR_OPF_BINARY)                           \
	X(SUB, sub, 2, 1, IR_OPF_BINARY)                           \
	X(MUL, mul, 2, 1, IR_OPF_BINARY)                           \
	X(DIV, div, 2, 1, IR_OPF_BINARY)                           \
	X(REM, rem, 2, 1, IR_OPF_BINARY)                           \
	X(POW, pow, 2, 1, IR_OPF_BINARY)                           \
	X(MAX, max, 2, 1, IR_OPF_BINARY)                           \
	X(MIN, min, 2, 1, IR_OPF_BINARY)                           \
	X(AND, and, 2, 1, IR_OPF_BINARY | IR_OPF_LOGIC)            \
	X(OR, or, 2, 1, IR_OPF_BINARY | IR_OPF_LOGIC)              \
	X(XOR, xor, 2, 1, IR_OPF_BINARY | IR_OPF_LOGIC)            \
	X(EQ, eq, 2, 1, IR_OPF_BINARY | IR_OPF_PREDICATE)          \
	X(NE, ne, 2, 1, IR_OPF_BINARY | IR_OPF_PREDICATE)          \
	X(LT, lt, 2, 1, IR_OPF_BINARY | IR_OPF_PREDICATE)          \
	X(LE, le, 2, 1, IR_OPF_BINARY | IR_OPF_PREDICATE)          \
	X(GT, gt, 2, 1, IR_OPF_BINARY | IR_OPF_PREDICATE)          \
	X(GE, ge, 2, 1, IR_OPF_BINARY | IR_OPF_PREDICATE)          \
	/* elementwise ternary: select(cond, on_true, on_false) */ \
	X(SELECT, select, 3, 1, IR_OPF_ELEMENTWISE)                \
	/* contractions */                                         \
	X(DOT, dot, 2, 1, IR_OPF_HEAVY)                            \
	X(CONV, conv, 2, 1, IR_OPF_HEAVY)                          \
	/* reductions */                                           \
	X(REDUCE_SUM, reduce_sum, 1, 1, IR_OPF_REDUCE)             \
	X(REDUCE_MAX, reduce_max, 1, 1, IR_OPF_REDUCE)             \
	X(REDUCE_MIN, reduce_min, 1, 1, IR_OPF_REDUCE)             \
	X(REDUCE_PROD, reduce_prod, 1, 1, IR_OPF_REDUCE)           \
	X(ARGMAX, argmax, 1, 1, 0)                                 \
	X(ARGMIN, argmin, 1, 1, 0)                                 \
	X(WINDOW_MAX, window_max, 1, 1, 0)                         \
	X(WINDOW_SUM, window_sum, 1, 1, 0)                         \
	X(CUMSUM, cumsum, 1, 1, IR_OPF_COMPOSITE)                  \
	/* data movement */                                        \
	X(RESHAPE, reshape, 1, 1, IR_OPF_MOVE)                     \
	X(TRANSPOSE, transpose, 1, 1, IR_OPF_MOVE)                 \
	X(BROADCAST, broadcast, 1, 1, IR_OPF_MOVE)                 \
	X(SLICE, slice, 1, 1, IR_OPF_MOVE)                         \
	X(CONCAT, concat, -1, 1, IR_OPF_MOVE)                      \
	X(PAD, pad, 1, 1, IR_OPF_MOVE)                             \
	X(REVERSE, reverse, 1, 1, IR_OPF_MOVE)                     \
	X(GATHER, gather, 2, 1, 0)                                 \
	X(SCATTER, scatter, 3, 1, 0)                               \
	/* sources */                                              \
	X(IOTA, iota, 0, 1, 0)                                     \
	X(CONSTANT, constant, 0, 1, 0)                             \
	/* composites */                                           \
	X(SOFTMAX, softmax, 1, 1, IR_OPF_COMPOSITE)                \
	X(LAYER_NORM, layer_norm, 3, 1, IR_OPF_COMPOSITE)          \
	X(TOPK, topk, 1, 2, IR_OPF_COMPOSITE)

#endif
