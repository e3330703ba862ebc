/*
 * test_grad_ops.c: reverse-mode autodiff (grad_build, compiler/train/grad*.c):
 * the VJP of every core op against central finite differences
 * (grad_check.h).
 *
 * Each case applies one op to f64 inputs. Inputs stay in the op's smooth
 * domain: positive for log and pow's base, |x| < 1 for asin/acos/atanh,
 * and well separated values wherever max, min, sorting, abs or relu pick a
 * branch, so no tie or kink lies within h. Also covered: attribute
 * variants (dot's batch and contracting dims in any order; strided,
 * dilated, grouped conv; reductions over any axes; pads in all modes;
 * gather/scatter with repeats and negative indices), ops whose gradient is
 * zero (sign, floor, ceil, round: zeros or NULL accepted), a select whose
 * condition is computed from x, a concat reading one value twice and a
 * topk whose indices are used too. Graphs of several ops and the error
 * contract: test_grad_graph.c.
 */
#include <stdint.h>

#include "grad_check.h"

/* ---- elementwise ------------------------------------------------------------ */

static void test_unary(void)
{
	const struct {
		enum ir_op op;
		struct fill f;
	} ops[] = {
		{ IR_OP_NEG, UNI(-2, 2) },      { IR_OP_ABS, SEP(0.1, 0.05) }, /* k * 0.1 + 0.05: never within 0.05 of 0
										*/
		{ IR_OP_EXP, UNI(-1.5, 1.5) },  { IR_OP_LOG, UNI(0.3, 3) },      { IR_OP_SQRT, UNI(0.3, 3) },
		{ IR_OP_RSQRT, UNI(0.3, 3) },   { IR_OP_RECIP, SIGNED(0.5, 2) }, { IR_OP_TANH, UNI(-2, 2) },
		{ IR_OP_ERF, UNI(-2, 2) },      { IR_OP_SIGMOID, UNI(-3, 3) },   { IR_OP_RELU, SEP(0.1, 0.05) },
		{ IR_OP_SIN, UNI(-3, 3) },      { IR_OP_COS, UNI(-3, 3) },       { IR_OP_TAN, UNI(-1.2, 1.2) },
		{ IR_OP_ASIN, UNI(-0.9, 0.9) }, { IR_OP_ACOS, UNI(-0.9, 0.9) },  { IR_OP_ATAN, UNI(-3, 3) },
		{ IR_OP_SINH, UNI(-2, 2) },     { IR_OP_COSH, UNI(-2, 2) },      { IR_OP_ASINH, UNI(-3, 3) },
		{ IR_OP_ACOSH, UNI(1.2, 3) },   { IR_OP_ATANH, UNI(-0.9, 0.9) }, { IR_OP_SOFTPLUS, UNI(-3, 3) },
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		struct gc c;
		gc_begin(&c, "%s", ir_op_name(ops[k].op));
		struct ir_value *x = gc_in(&c, "x", SH(3, 4), ops[k].f);
		gc_check(&c, op1(&c, ops[k].op, NULL, x));
	}
}

/* Piecewise constant ops: zero gradient (zeros or NULL). Values k * 0.5 +
 * 0.2 have fractional part .2 or .7: at least 0.2 from every integer and
 * half-integer where these jump. */
static void test_unary_zero(void)
{
	static const enum ir_op ops[] = { IR_OP_SIGN, IR_OP_FLOOR, IR_OP_CEIL, IR_OP_ROUND };
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		struct gc c;
		gc_begin(&c, "%s", ir_op_name(ops[k]));
		c.zero = true;
		struct ir_value *x = gc_in(&c, "x", SH(3, 4), SEP(0.5, 0.2));
		gc_check(&c, op1(&c, ops[k], NULL, x));
	}
}

/* y = f64(f32(x)) * x: the gradient passes through both converts. The f32
 * rounding (relative 6e-8) makes L a step function at scale 1e-7, so the
 * differences use h = 1e-3 and a 1e-4 tolerance (y is quadratic in x, so
 * the central difference has no truncation error). */
static void test_convert(void)
{
	struct gc c;
	gc_begin(&c, "convert f64->f32->f64");
	c.h = 1e-3;
	c.atol = c.rtol = 1e-4;
	struct ir_value *x = gc_in(&c, "x", SH(3, 4), UNI(-2, 2));
	struct ir_attrs to32 = { .dtype = IR_F32 }, to64 = { .dtype = IR_F64 };
	struct ir_value *r = op1(&c, IR_OP_CONVERT, &to64, op1(&c, IR_OP_CONVERT, &to32, x));
	gc_check(&c, op2(&c, IR_OP_MUL, NULL, r, x));
}

static void test_binary(void)
{
	const struct {
		enum ir_op op;
		struct fill a, b;
	} ops[] = {
		{ IR_OP_ADD, UNI(-2, 2), UNI(-2, 2) },
		{ IR_OP_SUB, UNI(-2, 2), UNI(-2, 2) },
		{ IR_OP_MUL, UNI(-2, 2), UNI(-2, 2) },
		{ IR_OP_DIV, UNI(-2, 2), SIGNED(0.5, 2) },
		{ IR_OP_POW, UNI(0.5, 2), UNI(-1.5, 1.5) },
		/* a on multiples of 0.1, b halfway between: |a - b| >= 0.05 */
		{ IR_OP_MAX, SEP(0.1, 0), SEP(0.1, 0.05) },
		{ IR_OP_MIN, SEP(0.1, 0), SEP(0.1, 0.05) },
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		struct gc c;
		gc_begin(&c, "%s", ir_op_name(ops[k].op));
		struct ir_value *a = gc_in(&c, "a", SH(3, 4), ops[k].a);
		struct ir_value *b = gc_in(&c, "b", SH(3, 4), ops[k].b);
		gc_check(&c, op2(&c, ops[k].op, NULL, a, b));
	}
}

/* rem = fmod(a, b) = a - trunc(a / b) * b: a = b * (q + f) with q an
 * integer and f in [0.2, 0.8] keeps a / b away from the integers where
 * trunc jumps; both signs of a and b. */
static void test_rem(void)
{
	struct gc c;
	gc_begin(&c, "rem");
	struct ir_value *a = gc_in(&c, "a", SH(3, 4), UNI(0, 1));
	struct ir_value *b = gc_in(&c, "b", SH(3, 4), SIGNED(0.6, 1.4));
	if (c.ok) {
		double *av = gc_data(&c, 0), *bv = gc_data(&c, 1);
		for (int i = 0; i < 12; i++) {
			double q = (double)(i % 7 - 3), f = uni(0.2, 0.8);
			av[i] = bv[i] * (q + (q < 0 ? -f : f));
		}
	}
	gc_check(&c, op2(&c, IR_OP_REM, NULL, a, b));
}

static void test_select(void)
{
	static const uint8_t cond[12] = { 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1 };
	struct gc c;
	gc_begin(&c, "select (constant cond)");
	struct ir_value *t = gc_in(&c, "on_true", SH(3, 4), UNI(-2, 2));
	struct ir_value *f = gc_in(&c, "on_false", SH(3, 4), UNI(-2, 2));
	gc_check(&c, op3(&c, IR_OP_SELECT, NULL, cst(&c, IR_BOOL, SH(3, 4), cond), t, f));

	/* cond = x > 0 is computed from x itself: that path is boolean and
	 * carries nothing; y = x > 0 ? exp(x) : -x */
	double zero[12] = { 0 };
	gc_begin(&c, "select (cond computed from x)");
	struct ir_value *x = gc_in(&c, "x", SH(3, 4), SEP(0.2, 0.1));
	struct ir_value *p = op2(&c, IR_OP_GT, NULL, x, cst(&c, IR_F64, SH(3, 4), zero));
	gc_check(&c, op3(&c, IR_OP_SELECT, NULL, p, op1(&c, IR_OP_EXP, NULL, x), op1(&c, IR_OP_NEG, NULL, x)));
}

/* ---- dot and conv ------------------------------------------------------------ */

static void dot_case(const char *what, struct ir_shape ls, struct ir_shape rs, struct ir_ilist lb, struct ir_ilist rb,
		     struct ir_ilist lc, struct ir_ilist rc)
{
	struct gc c;
	gc_begin(&c, "dot %s", what);
	struct ir_value *l = gc_in(&c, "lhs", ls, UNI(-1, 1));
	struct ir_value *r = gc_in(&c, "rhs", rs, UNI(-1, 1));
	struct ir_attrs a = { .lhs_batch = lb, .rhs_batch = rb, .lhs_contract = lc, .rhs_contract = rc };
	gc_check(&c, op2(&c, IR_OP_DOT, &a, l, r));
}

static void test_dot(void)
{
	dot_case("matmul [3,4]x[4,5]", SH(3, 4), SH(4, 5), NOAXES, NOAXES, IR_ILIST(1), IR_ILIST(0));
	dot_case("batched [2,3,4]x[2,4,5] batch [0]/[0]", SH(2, 3, 4), SH(2, 4, 5), IR_ILIST(0), IR_ILIST(0),
		 IR_ILIST(2), IR_ILIST(1));
	dot_case("lhs transposed [4,3]x[4,5] contract [0]/[0]", SH(4, 3), SH(4, 5), NOAXES, NOAXES, IR_ILIST(0),
		 IR_ILIST(0));
	dot_case("rhs transposed [3,4]x[5,4] contract [1]/[1]", SH(3, 4), SH(5, 4), NOAXES, NOAXES, IR_ILIST(1),
		 IR_ILIST(1));
	dot_case("two contracting dims [3,2,4]x[2,4,5] contract [1,2]/[0,1]", SH(3, 2, 4), SH(2, 4, 5), NOAXES, NOAXES,
		 IR_ILIST(1, 2), IR_ILIST(0, 1));
	dot_case("two contracting dims out of order [3,2,4]x[4,5,2] contract [1,2]/[2,0]", SH(3, 2, 4), SH(4, 5, 2),
		 NOAXES, NOAXES, IR_ILIST(1, 2), IR_ILIST(2, 0));
	dot_case("batch not leading [3,2,4]x[4,2,5] batch [1]/[1] contract [2]/[0]", SH(3, 2, 4), SH(4, 2, 5),
		 IR_ILIST(1), IR_ILIST(1), IR_ILIST(2), IR_ILIST(0));
	dot_case("two batch dims, swapped [2,3,4,2]x[3,2,4,5] batch [0,1]/[1,0] contract [2]/[2]", SH(2, 3, 4, 2),
		 SH(3, 2, 4, 5), IR_ILIST(0, 1), IR_ILIST(1, 0), IR_ILIST(2), IR_ILIST(2));
	dot_case("vector-matrix [4]x[4,5]", SH(4), SH(4, 5), NOAXES, NOAXES, IR_ILIST(0), IR_ILIST(0));
	dot_case("matrix-vector [3,4]x[4]", SH(3, 4), SH(4), NOAXES, NOAXES, IR_ILIST(1), IR_ILIST(0));
	dot_case("inner product [4]x[4] (scalar result)", SH(4), SH(4), NOAXES, NOAXES, IR_ILIST(0), IR_ILIST(0));
	dot_case("outer product [3]x[4] (no contraction)", SH(3), SH(4), NOAXES, NOAXES, NOAXES, NOAXES);
}

static void conv_case(const char *what, struct ir_shape xs, struct ir_shape ws, struct ir_ilist stride,
		      struct ir_ilist lo, struct ir_ilist hi, struct ir_ilist dil, int64_t groups)
{
	struct gc c;
	gc_begin(&c, "conv %s", what);
	struct ir_value *x = gc_in(&c, "input", xs, UNI(-1, 1));
	struct ir_value *w = gc_in(&c, "weight", ws, UNI(-1, 1));
	struct ir_attrs a = { .stride = stride, .pad_lo = lo, .pad_hi = hi, .dilation = dil, .groups = groups };
	gc_check(&c, op2(&c, IR_OP_CONV, &a, x, w));
}

static void test_conv(void)
{
	conv_case("1-D [2,3,7]*[4,3,3]", SH(2, 3, 7), SH(4, 3, 3), IR_ILIST(1), IR_ILIST(0), IR_ILIST(0), IR_ILIST(1),
		  1);
	conv_case("2-D [2,3,5,5]*[4,3,3,3] pad 1", SH(2, 3, 5, 5), SH(4, 3, 3, 3), IR_ILIST(1, 1), IR_ILIST(1, 1),
		  IR_ILIST(1, 1), IR_ILIST(1, 1), 1);
	/* (7 + 2 - 3) / 2: divisible */
	conv_case("2-D stride 2 pad 1 [1,2,7,7]*[3,2,3,3]", SH(1, 2, 7, 7), SH(3, 2, 3, 3), IR_ILIST(2, 2),
		  IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1), 1);
	/* (6 + 2 - 3) / 2 leaves 1: the last row and column are never read */
	conv_case("2-D stride 2 not dividing [1,2,6,6]*[3,2,3,3]", SH(1, 2, 6, 6), SH(3, 2, 3, 3), IR_ILIST(2, 2),
		  IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1), 1);
	conv_case("2-D asymmetric pads lo [2,0] hi [0,1]", SH(1, 2, 5, 6), SH(3, 2, 3, 2), IR_ILIST(1, 1),
		  IR_ILIST(2, 0), IR_ILIST(0, 1), IR_ILIST(1, 1), 1);
	conv_case("2-D dilation 2 [1,2,7,7]*[2,2,3,3]", SH(1, 2, 7, 7), SH(2, 2, 3, 3), IR_ILIST(1, 1), IR_ILIST(0, 0),
		  IR_ILIST(0, 0), IR_ILIST(2, 2), 1);
	conv_case("2-D groups 2 [2,4,5,5]*[6,2,3,3]", SH(2, 4, 5, 5), SH(6, 2, 3, 3), IR_ILIST(1, 1), IR_ILIST(1, 1),
		  IR_ILIST(1, 1), IR_ILIST(1, 1), 2);
	/* padded 13, span 5: (13 - 5) / 3 leaves 2 */
	conv_case("1-D stride 3 pads 1/2 dilation 2 groups 2 [2,4,10]*[4,2,3]", SH(2, 4, 10), SH(4, 2, 3), IR_ILIST(3),
		  IR_ILIST(1), IR_ILIST(2), IR_ILIST(2), 2);
	conv_case("2-D depthwise groups 3, stride [2,1], dilation [1,2] [1,3,6,7]*[3,1,2,3]", SH(1, 3, 6, 7),
		  SH(3, 1, 2, 3), IR_ILIST(2, 1), IR_ILIST(0, 1), IR_ILIST(1, 2), IR_ILIST(1, 2), 3);
}

/* ---- reductions, windows, cumsum ------------------------------------------ */

static void reduce_case(enum ir_op op, struct ir_ilist axes, struct fill f, const char *what)
{
	struct gc c;
	gc_begin(&c, "%s axes %s of [2,3,4]", ir_op_name(op), what);
	struct ir_value *x = gc_in(&c, "x", SH(2, 3, 4), f);
	struct ir_attrs a = { .axes = axes };
	gc_check(&c, op1(&c, op, &a, x));
}

static void test_reduce(void)
{
	const struct {
		enum ir_op op;
		struct fill f;
	} ops[] = {
		{ IR_OP_REDUCE_SUM, UNI(-1, 1) },
		{ IR_OP_REDUCE_MAX, SEP(0.05, 0) },
		{ IR_OP_REDUCE_MIN, SEP(0.05, 0) },
		/* magnitudes near 1 keep the product of 24 in a sane range */
		{ IR_OP_REDUCE_PROD, SIGNED(0.7, 1.3) },
	};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
		reduce_case(ops[k].op, IR_ILIST(1), ops[k].f, "[1]");
		reduce_case(ops[k].op, IR_ILIST(2), ops[k].f, "[2]");
		reduce_case(ops[k].op, IR_ILIST(0, 2), ops[k].f, "[0,2]");
		reduce_case(ops[k].op, IR_ILIST(0, 1, 2), ops[k].f, "[0,1,2]");
	}
	reduce_case(IR_OP_REDUCE_SUM, IR_ILIST(0), UNI(-1, 1), "[0]");
	reduce_case(IR_OP_REDUCE_SUM, NOAXES, UNI(-1, 1), "[] (identity)");

	/* A product with an exact zero factor: d/dx_j = product of the others,
	 * so a rule dividing the product by x_j gives NaN or 0 there. */
	struct gc c;
	gc_begin(&c, "reduce_prod axes [1] of [3,4] with a zero element");
	struct ir_value *x = gc_in(&c, "x", SH(3, 4), SIGNED(0.7, 1.3));
	if (c.ok)
		gc_data(&c, 0)[5] = 0.0;
	struct ir_attrs a = { .axes = IR_ILIST(1) };
	gc_check(&c, op1(&c, IR_OP_REDUCE_PROD, &a, x));
}

static void window_case(enum ir_op op, const char *what, struct ir_shape s, struct ir_ilist win, struct ir_ilist stride,
			struct ir_ilist lo, struct ir_ilist hi, struct ir_ilist dil)
{
	struct gc c;
	gc_begin(&c, "%s %s", ir_op_name(op), what);
	struct ir_value *x = gc_in(&c, "x", s, op == IR_OP_WINDOW_MAX ? SEP(0.05, 0) : UNI(-1, 1));
	struct ir_attrs a = { .window = win, .stride = stride, .pad_lo = lo, .pad_hi = hi, .dilation = dil };
	gc_check(&c, op1(&c, op, &a, x));
}

static void test_window(void)
{
	static const enum ir_op ops[] = { IR_OP_WINDOW_MAX, IR_OP_WINDOW_SUM };
	for (size_t k = 0; k < 2; k++) {
		window_case(ops[k], "2-D [6,7] window 3x3 stride 2 pad 1", SH(6, 7), IR_ILIST(3, 3), IR_ILIST(2, 2),
			    IR_ILIST(1, 1), IR_ILIST(1, 1), IR_ILIST(1, 1));
		window_case(ops[k], "NCHW [1,2,5,6] window [1,1,3,3] stride [1,1,2,2] pad 1", SH(1, 2, 5, 6),
			    IR_ILIST(1, 1, 3, 3), IR_ILIST(1, 1, 2, 2), IR_ILIST(0, 0, 1, 1), IR_ILIST(0, 0, 1, 1),
			    IR_ILIST(1, 1, 1, 1));
		window_case(ops[k], "1-D [10] window 3 dilation 2", SH(10), IR_ILIST(3), IR_ILIST(1), IR_ILIST(0),
			    IR_ILIST(0), IR_ILIST(2));
		window_case(ops[k], "1-D [9] window 2 stride 3 pads 0/1 (not dividing)", SH(9), IR_ILIST(2),
			    IR_ILIST(3), IR_ILIST(0), IR_ILIST(1), IR_ILIST(1));
	}
}

static void test_cumsum(void)
{
	static const struct {
		int64_t axis, mode;
		const char *what;
	} cases[] = {
		{ 1, 0, "axis 1" },
		{ 1, IR_CUMSUM_EXCLUSIVE, "axis 1 exclusive" },
		{ 1, IR_CUMSUM_REVERSE, "axis 1 reverse" },
		{ 1, IR_CUMSUM_EXCLUSIVE | IR_CUMSUM_REVERSE, "axis 1 exclusive reverse" },
		{ 0, 0, "axis 0" },
		{ 0, IR_CUMSUM_EXCLUSIVE | IR_CUMSUM_REVERSE, "axis 0 exclusive reverse" },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct gc c;
		gc_begin(&c, "cumsum %s of [3,5]", cases[k].what);
		struct ir_value *x = gc_in(&c, "x", SH(3, 5), UNI(-1, 1));
		struct ir_attrs a = { .axis = cases[k].axis, .mode = cases[k].mode };
		gc_check(&c, op1(&c, IR_OP_CUMSUM, &a, x));
	}
	struct gc c;
	gc_begin(&c, "cumsum axis 1 (middle) exclusive of [2,4,3]");
	struct ir_value *x = gc_in(&c, "x", SH(2, 4, 3), UNI(-1, 1));
	struct ir_attrs a = { .axis = 1, .mode = IR_CUMSUM_EXCLUSIVE };
	gc_check(&c, op1(&c, IR_OP_CUMSUM, &a, x));
}

/* ---- data movement -------------------------------------------------------- */

/* One op with attributes a on one input of shape s. */
static void move_case(enum ir_op op, const char *what, struct ir_shape s, const struct ir_attrs *a)
{
	struct gc c;
	gc_begin(&c, "%s %s", ir_op_name(op), what);
	struct ir_value *x = gc_in(&c, "x", s, UNI(-1, 1));
	gc_check(&c, op1(&c, op, a, x));
}

static void test_move(void)
{
	move_case(IR_OP_RESHAPE, "[2,3,4] -> [4,6]", SH(2, 3, 4), &(struct ir_attrs){ .shape = SH(4, 6) });
	move_case(IR_OP_RESHAPE, "[1] -> [] (scalar)", SH(1), &(struct ir_attrs){ .shape = SCALAR });
	move_case(IR_OP_TRANSPOSE, "[2,3,4] axes [2,0,1]", SH(2, 3, 4),
		  &(struct ir_attrs){ .axes = IR_ILIST(2, 0, 1) });
	move_case(IR_OP_TRANSPOSE, "[2,3,4] axes [1,2,0]", SH(2, 3, 4),
		  &(struct ir_attrs){ .axes = IR_ILIST(1, 2, 0) });
	move_case(IR_OP_BROADCAST, "[3,1] -> [2,3,4] axes [1,2] (size-1 dim and a new dim)", SH(3, 1),
		  &(struct ir_attrs){ .shape = SH(2, 3, 4), .axes = IR_ILIST(1, 2) });
	move_case(IR_OP_BROADCAST, "[4] -> [3,4] axes [1]", SH(4),
		  &(struct ir_attrs){ .shape = SH(3, 4), .axes = IR_ILIST(1) });
	move_case(IR_OP_BROADCAST, "[3] -> [3,2,4] axes [0] (new trailing dims)", SH(3),
		  &(struct ir_attrs){ .shape = SH(3, 2, 4), .axes = IR_ILIST(0) });
	move_case(IR_OP_BROADCAST, "[] -> [3,4] (scalar)", SCALAR,
		  &(struct ir_attrs){ .shape = SH(3, 4), .axes = NOAXES });
	move_case(IR_OP_SLICE, "[6,7] start [1,2] limit [6,7] stride [2,2]", SH(6, 7),
		  &(struct ir_attrs){ .start = IR_ILIST(1, 2), .limit = IR_ILIST(6, 7), .stride = IR_ILIST(2, 2) });
	move_case(IR_OP_SLICE, "[6,7] start [2,0] limit [5,6] stride [1,3]", SH(6, 7),
		  &(struct ir_attrs){ .start = IR_ILIST(2, 0), .limit = IR_ILIST(5, 6), .stride = IR_ILIST(1, 3) });
	move_case(IR_OP_PAD, "constant 0.5 lo [1,0] hi [2,1]", SH(3, 4),
		  &(struct ir_attrs){
			  .pad_lo = IR_ILIST(1, 0), .pad_hi = IR_ILIST(2, 1), .mode = IR_PAD_CONSTANT, .value = 0.5 });
	move_case(IR_OP_PAD, "edge lo [2,1] hi [1,3]", SH(3, 4),
		  &(struct ir_attrs){ .pad_lo = IR_ILIST(2, 1), .pad_hi = IR_ILIST(1, 3), .mode = IR_PAD_EDGE });
	move_case(IR_OP_PAD, "reflect lo [2,1] hi [1,3]", SH(3, 5),
		  &(struct ir_attrs){ .pad_lo = IR_ILIST(2, 1), .pad_hi = IR_ILIST(1, 3), .mode = IR_PAD_REFLECT });
	move_case(IR_OP_REVERSE, "[2,3,4] axes [0,2]", SH(2, 3, 4), &(struct ir_attrs){ .axes = IR_ILIST(0, 2) });
	move_case(IR_OP_REVERSE, "[2,3,4] axes [1]", SH(2, 3, 4), &(struct ir_attrs){ .axes = IR_ILIST(1) });

	struct gc c;
	gc_begin(&c, "concat of [2,1,3] [2,2,3] [2,3,3] axis 1");
	struct ir_value *in[3] = {
		gc_in(&c, "a", SH(2, 1, 3), UNI(-1, 1)),
		gc_in(&c, "b", SH(2, 2, 3), UNI(-1, 1)),
		gc_in(&c, "c", SH(2, 3, 3), UNI(-1, 1)),
	};
	struct ir_attrs a = { .axis = 1 };
	gc_check(&c, opn(&c, IR_OP_CONCAT, &a, 3, in, 0));

	/* the same value twice among concat's operands: both slots accumulate */
	gc_begin(&c, "concat of x, y, x axis 0");
	struct ir_value *x = gc_in(&c, "x", SH(2, 3), UNI(-1, 1));
	struct ir_value *y = gc_in(&c, "y", SH(1, 3), UNI(-1, 1));
	struct ir_attrs a0 = { .axis = 0 };
	gc_check(&c, opn(&c, IR_OP_CONCAT, &a0, 3, (struct ir_value *[]){ x, y, x }, 0));
}

static void test_gather_scatter(void)
{
	struct gc c;
	/* repeats (1 twice) and a negative index (-1 is row 4) */
	static const int64_t idx0[4] = { 1, 3, 1, -1 };
	gc_begin(&c, "gather axis 0 of [5,3], indices [1,3,1,-1]");
	struct ir_value *d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	struct ir_attrs a0 = { .axis = 0 };
	gc_check(&c, op2(&c, IR_OP_GATHER, &a0, d, cst(&c, IR_I64, SH(4), idx0)));

	static const int64_t idx1[4] = { 0, 4, -2, 0 };
	gc_begin(&c, "gather axis 1 of [2,5,3], indices [[0,4],[-2,0]]");
	d = gc_in(&c, "data", SH(2, 5, 3), UNI(-1, 1));
	struct ir_attrs a1 = { .axis = 1 };
	gc_check(&c, op2(&c, IR_OP_GATHER, &a1, d, cst(&c, IR_I64, SH(2, 2), idx1)));

	static const int64_t one = -2;
	gc_begin(&c, "gather axis 0 of [5,3], scalar index -2");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	gc_check(&c, op2(&c, IR_OP_GATHER, &a0, d, cst(&c, IR_I64, SCALAR, &one)));

	static const int64_t sidx[2] = { 3, 0 };
	gc_begin(&c, "scatter none into [5,3], indices [3,0]");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	struct ir_value *u = gc_in(&c, "updates", SH(2, 3), UNI(-1, 1));
	struct ir_attrs sn = { .mode = IR_SCATTER_NONE };
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sn, d, cst(&c, IR_I64, SH(2), sidx), u));

	static const int64_t sidx2[4] = { 1, -1, 0, 2 };
	gc_begin(&c, "scatter none into [5,3], indices [[1,-1],[0,2]]");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(2, 2, 3), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sn, d, cst(&c, IR_I64, SH(2, 2), sidx2), u));

	/* Repeated rows without combining: the later update wins, so the
	 * overwritten one gets no gradient (and -2 is row 3 again). */
	static const int64_t didx[3] = { 3, 0, -2 };
	gc_begin(&c, "scatter none into [5,3], indices [3,0,-2] (row 3 written twice)");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(3, 3), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sn, d, cst(&c, IR_I64, SH(3), didx), u));

	static const int64_t aidx[3] = { 1, 4, 1 };
	gc_begin(&c, "scatter add into [5,3], indices [1,4,1] (repeated)");
	d = gc_in(&c, "data", SH(5, 3), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(3, 3), UNI(-1, 1));
	struct ir_attrs sa = { .mode = IR_SCATTER_ADD };
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sa, d, cst(&c, IR_I64, SH(3), aidx), u));

	static const int64_t aidx2[4] = { 2, -3, 0, 1 }; /* -3 is 2 again */
	gc_begin(&c, "scatter add into [5,2,2], indices [[2,-3],[0,1]]");
	d = gc_in(&c, "data", SH(5, 2, 2), UNI(-1, 1));
	u = gc_in(&c, "updates", SH(2, 2, 2, 2), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_SCATTER, &sa, d, cst(&c, IR_I64, SH(2, 2), aidx2), u));
}

/* ---- composites -------------------------------------------------------- */

static void test_composites(void)
{
	struct gc c;
	struct ir_attrs a;

	gc_begin(&c, "softmax axis 1 (last) of [3,5]");
	a = (struct ir_attrs){ .axis = 1 };
	gc_check(&c, op1(&c, IR_OP_SOFTMAX, &a, gc_in(&c, "x", SH(3, 5), UNI(-2, 2))));

	gc_begin(&c, "softmax axis 1 (middle) of [2,4,3]");
	gc_check(&c, op1(&c, IR_OP_SOFTMAX, &a, gc_in(&c, "x", SH(2, 4, 3), UNI(-2, 2))));

	gc_begin(&c, "softmax axis 0 of [4,3]");
	a = (struct ir_attrs){ .axis = 0 };
	gc_check(&c, op1(&c, IR_OP_SOFTMAX, &a, gc_in(&c, "x", SH(4, 3), UNI(-2, 2))));

	gc_begin(&c, "layer_norm axis 1 (last) of [3,6], eps 1e-5");
	a = (struct ir_attrs){ .axis = 1, .eps = 1e-5 };
	struct ir_value *x = gc_in(&c, "x", SH(3, 6), UNI(-2, 2));
	struct ir_value *s = gc_in(&c, "scale", SH(6), UNI(0.5, 1.5));
	struct ir_value *b = gc_in(&c, "bias", SH(6), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_LAYER_NORM, &a, x, s, b));

	gc_begin(&c, "layer_norm axis 1 (rank-2) of [2,3,4], eps 1e-5");
	x = gc_in(&c, "x", SH(2, 3, 4), UNI(-2, 2));
	s = gc_in(&c, "scale", SH(3, 4), UNI(0.5, 1.5));
	b = gc_in(&c, "bias", SH(3, 4), UNI(-1, 1));
	gc_check(&c, op3(&c, IR_OP_LAYER_NORM, &a, x, s, b));

	gc_begin(&c, "topk largest k=3 axis 1 of [3,6] (values)");
	a = (struct ir_attrs){ .axis = 1, .k = 3 };
	x = gc_in(&c, "x", SH(3, 6), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	gc_begin(&c, "topk smallest k=2 axis 0 of [5,4] (values)");
	a = (struct ir_attrs){ .axis = 0, .k = 2, .mode = IR_TOPK_SMALLEST };
	x = gc_in(&c, "x", SH(5, 4), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	gc_begin(&c, "topk largest k=1 axis 1 of [2,3,4] (values)");
	a = (struct ir_attrs){ .axis = 1, .k = 1 };
	x = gc_in(&c, "x", SH(2, 3, 4), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	gc_begin(&c, "topk smallest k=5 (whole dim: a sort) axis 1 of [2,5] (values)");
	a = (struct ir_attrs){ .axis = 1, .k = 5, .mode = IR_TOPK_SMALLEST };
	x = gc_in(&c, "x", SH(2, 5), SEP(0.1, 0));
	gc_check(&c, opn(&c, IR_OP_TOPK, &a, 1, &x, 0));

	/* topk whose indices output is also used (through an integer path) */
	gc_begin(&c, "topk largest k=2 axis 1 of [3,4], indices used too");
	a = (struct ir_attrs){ .axis = 1, .k = 2 };
	x = gc_in(&c, "x", SH(3, 4), SEP(0.1, 0));
	struct ir_value *vals = opn(&c, IR_OP_TOPK, &a, 1, &x, 0);
	struct ir_value *idx = c.ok ? vals->def->out[1] : NULL;
	struct ir_attrs f64 = { .dtype = IR_F64 };
	gc_check(&c, op2(&c, IR_OP_MUL, NULL, vals, op1(&c, IR_OP_CONVERT, &f64, idx)));
}

int main(void)
{
	test_unary();
	test_unary_zero();
	test_convert();
	test_binary();
	test_rem();
	test_select();
	test_dot();
	test_conv();
	test_reduce();
	test_window();
	test_cumsum();
	test_move();
	test_gather_scatter();
	test_composites();
	return tap_done();
}
