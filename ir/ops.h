/*
 * The core op table: every op pcc's compiler knows after ONNX import, one
 * row each, its properties as columns (the layout of QBE's ops.h).
 *
 * X(ENUM, name, n_inputs, n_outputs, flags, form, cost, saved, shard, codegen)
 *
 *   name       the op's name in the text form and in plan files.
 *   n_inputs   operands; -1 means variadic (at least one).
 *   flags      IR_OPF_* (ir.h) without the prefix: elementwise class,
 *              operand dtypes, linearity, precision.
 *   form       what the op computes up to its scalar function: ops of one
 *              form share their shape rule (ir/infer.c rule_FORM), FLOPs
 *              (ir/stats.c flops_FORM), attributes in the text form
 *              (ir/text_syntax.c syn_FORM) and reference kernel
 *              (kernels/interp.c interp_FORM); an elementwise op's scalar
 *              function is a case in the kernel's eval_f64 and eval_i64.
 *   cost       its roofline class, COST_CLASS_cost (compiler/cost/cost.h).
 *   saved      what its gradient reads of its operands and results, kept
 *              from the forward pass for the backward
 *              (compiler/cost/cost_saved.c reads_saved).
 *   shard      its sharding rule: which dims split together and which
 *              reduce (compiler/search/intra_rules.c rule_shard), for
 *              automatic and manual plans alike.
 *   codegen    whether code generation compiles it, and as what
 *              (ir/codegen_class.c class_codegen); a compiled elementwise
 *              op's value is a case in compiler/codegen/codegen_expr.c.
 *
 * A lowercase column names a function or object that each file using it
 * defines by that suffix, so a row naming one that does not exist does not
 * compile; the uppercase cost column is an enum value's suffix. What truly
 * differs per op stays a switch with no default: (the scalar functions of
 * the interpreter and of codegen, the gradient in compiler/train/grad_rules.c),
 * and -Wswitch-enum lists those places for a new row.
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

/* clang-format off */
#define IR_OPS(X) \
	/*ENUM,        name,        in, out, flags,                form,       cost,        saved,      shard,       codegen */ \
	/* elementwise unary */                                                                                                 \
	X(NEG,         neg,         1,  1,   UNARY|NUMERIC|LINEAR, unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(ABS,         abs,         1,  1,   UNARY,                unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(SIGN,        sign,        1,  1,   UNARY,                unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(EXP,         exp,         1,  1,   UNARY|FLOAT|KEEP_F32, unary,      ELEMENTWISE, out,        elem,        elem)      \
	X(LOG,         log,         1,  1,   UNARY|FLOAT|KEEP_F32, unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(SQRT,        sqrt,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, out,        elem,        elem)      \
	X(RSQRT,       rsqrt,       1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, out,        elem,        elem)      \
	X(RECIP,       recip,       1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, out,        elem,        elem)      \
	X(TANH,        tanh,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, out,        elem,        elem)      \
	X(ERF,         erf,         1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(SIGMOID,     sigmoid,     1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, out,        elem,        elem)      \
	X(SOFTPLUS,    softplus,    1,  1,   UNARY|FLOAT|KEEP_F32, unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(RELU,        relu,        1,  1,   UNARY,                unary,      ELEMENTWISE, out,        elem,        elem)      \
	X(SIN,         sin,         1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(COS,         cos,         1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(TAN,         tan,         1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(ASIN,        asin,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(ACOS,        acos,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(ATAN,        atan,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(SINH,        sinh,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(COSH,        cosh,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(ASINH,       asinh,       1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(ACOSH,       acosh,       1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(ATANH,       atanh,       1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, in,         elem,        elem)      \
	X(FLOOR,       floor,       1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(CEIL,        ceil,        1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(ROUND,       round,       1,  1,   UNARY|FLOAT,          unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(NOT,         not,         1,  1,   UNARY|LOGIC,          unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(IS_NAN,      is_nan,      1,  1,   UNARY|PREDICATE,      unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(IS_INF,      is_inf,      1,  1,   UNARY|PREDICATE,      unary,      ELEMENTWISE, none,       elem,        elem)      \
	X(CONVERT,     convert,     1,  1,   UNARY|LINEAR,         convert,    ELEMENTWISE, none,       elem,        elem)      \
	/* elementwise binary */                                                                                                \
	X(ADD,         add,         2,  1,   BINARY|LINEAR,        binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(SUB,         sub,         2,  1,   BINARY|LINEAR,        binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(MUL,         mul,         2,  1,   BINARY,               binary,     ELEMENTWISE, crossed,    elem,        elem)      \
	X(DIV,         div,         2,  1,   BINARY,               binary,     ELEMENTWISE, div,        elem,        elem)      \
	X(REM,         rem,         2,  1,   BINARY,               binary,     ELEMENTWISE, both,       elem,        elem)      \
	X(POW,         pow,         2,  1,   BINARY,               binary,     ELEMENTWISE, both,       elem,        pow)       \
	X(MAX,         max,         2,  1,   BINARY,               binary,     ELEMENTWISE, both,       elem,        elem)      \
	X(MIN,         min,         2,  1,   BINARY,               binary,     ELEMENTWISE, both,       elem,        elem)      \
	X(AND,         and,         2,  1,   BINARY|LOGIC,         binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(OR,          or,          2,  1,   BINARY|LOGIC,         binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(XOR,         xor,         2,  1,   BINARY|LOGIC,         binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(EQ,          eq,          2,  1,   BINARY|PREDICATE,     binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(NE,          ne,          2,  1,   BINARY|PREDICATE,     binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(LT,          lt,          2,  1,   BINARY|PREDICATE,     binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(LE,          le,          2,  1,   BINARY|PREDICATE,     binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(GT,          gt,          2,  1,   BINARY|PREDICATE,     binary,     ELEMENTWISE, none,       elem,        elem)      \
	X(GE,          ge,          2,  1,   BINARY|PREDICATE,     binary,     ELEMENTWISE, none,       elem,        elem)      \
	/* elementwise ternary: select(cond, on_true, on_false) */                                                              \
	X(SELECT,      select,      3,  1,   ELEMENTWISE,          select,     ELEMENTWISE, select,     elem,        elem)      \
	/* contractions */                                                                                                      \
	X(DOT,         dot,         2,  1,   HEAVY,                dot,        DOT,         crossed,    dot,         none)      \
	X(CONV,        conv,        2,  1,   HEAVY,                conv,       CONV,        crossed,    conv,        none)      \
	/* reductions */                                                                                                        \
	X(REDUCE_SUM,  reduce_sum,  1,  1,   REDUCE|KEEP_F32,      reduce,     REDUCE,      none,       reduce_sum,  reduce)    \
	X(REDUCE_MAX,  reduce_max,  1,  1,   REDUCE,               reduce,     REDUCE,      extremum,   reduce_max,  reduce)    \
	X(REDUCE_MIN,  reduce_min,  1,  1,   REDUCE,               reduce,     REDUCE,      extremum,   reduce_max,  reduce)    \
	X(REDUCE_PROD, reduce_prod, 1,  1,   REDUCE|KEEP_F32,      reduce,     REDUCE,      extremum,   reduce_prod, reduce)    \
	X(ARGMAX,      argmax,      1,  1,   0,                    arg,        REDUCE,      none,       arg,         none)      \
	X(ARGMIN,      argmin,      1,  1,   0,                    arg,        REDUCE,      none,       arg,         none)      \
	X(WINDOW_MAX,  window_max,  1,  1,   0,                    window,     REDUCE,      extremum,   window,      none)      \
	X(WINDOW_SUM,  window_sum,  1,  1,   0,                    window,     REDUCE,      none,       window,      none)      \
	X(CUMSUM,      cumsum,      1,  1,   COMPOSITE|KEEP_F32,   cumsum,     REDUCE,      none,       scan,        none)      \
	/* data movement */                                                                                                     \
	X(RESHAPE,     reshape,     1,  1,   MOVE,                 reshape,    FREE,        none,       reshape,     move)      \
	X(TRANSPOSE,   transpose,   1,  1,   MOVE,                 transpose,  MOVE,        none,       transpose,   move)      \
	X(BROADCAST,   broadcast,   1,  1,   MOVE,                 broadcast,  FREE,        none,       broadcast,   move)      \
	X(SLICE,       slice,       1,  1,   MOVE,                 slice,      MOVE,        none,       slice,       move)      \
	X(CONCAT,      concat,      -1, 1,   MOVE,                 concat,     MOVE,        none,       concat,      none)      \
	X(PAD,         pad,         1,  1,   MOVE,                 pad,        MOVE,        none,       pad,         none)      \
	X(REVERSE,     reverse,     1,  1,   MOVE,                 reverse,    MOVE,        none,       reverse,     move)      \
	X(GATHER,      gather,      2,  1,   0,                    gather,     GATHER,      gather,     gather,      none)      \
	X(SCATTER,     scatter,     3,  1,   0,                    scatter,    GATHER,      scatter,    scatter,     none)      \
	/* sources */                                                                                                           \
	X(IOTA,        iota,        0,  1,   0,                    iota,       FREE,        none,       source,      move)      \
	X(CONSTANT,    constant,    0,  1,   0,                    constant,   FREE,        none,       source,      constant)  \
	/* composites */                                                                                                        \
	X(SOFTMAX,     softmax,     1,  1,   COMPOSITE|KEEP_F32,   softmax,    NORM,        out,        softmax,     softmax)   \
	X(LAYER_NORM,  layer_norm,  3,  1,   COMPOSITE|KEEP_F32,   layer_norm, NORM,        layer_norm, layer_norm,  row)       \
	X(TOPK,        topk,        1,  2,   COMPOSITE,            topk,       GATHER,      topk,       scan,        none)
/* clang-format on */

#endif
