/*
 * text.c: the IR's text form, ir_print and ir_parse.
 *
 * One statement per line. Values are %N; printing renumbers them densely in
 * definition order (inputs, params, then node results) and prints each op's
 * attributes in one fixed order, so the text of a graph is canonical and
 * print(parse(print(g))) == print(g) byte for byte:
 *
 *   pcc-ir 1
 *   input %0 "x" : f32[2,3]
 *   param %1 "fc.weight" : f32[3,4] = external "w.bin" offset 0 bytes 48
 *   param %2 "fc.bias" : f32[4] = hex "0000803f0000803f0000803f0000803f"
 *   %3 : f32[2,4] = dot %0, %1 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0] @"/fc/MatMul"
 *   %4 : f32[2,4] = broadcast %2 shape=[2,4] axes=[1]
 *   %5 "y" : f32[2,4] = add %3, %4
 *   output %5 "y"
 *
 * Grammar ('#' starts a comment outside strings; blank lines are ignored):
 *
 *   file  := "pcc-ir" "1" NL { stmt NL }
 *   stmt  := "input" def
 *          | "param" def "=" data
 *          | def { "," def } "=" OP [ ref { "," ref } ] { attr } [ "@" STR ]
 *          | "output" ref [ STR ]
 *          | "update" ref ref              param (first) takes the value after a run
 *   def   := ref [ STR ] ":" type          value, its name, its type
 *   ref   := "%" DIGITS
 *   type  := DTYPE "[" [ INT { "," INT } ] "]"
 *   data  := "hex" STR                     inline bytes, two digits a byte
 *          | "external" STR "offset" INT "bytes" INT [ "base_dir" STR ]
 *   attr  := NAME "=" ( INT | DOUBLE | DTYPE | MODE | "[" ints "]" | "hex" STR )
 *
 * STR is double-quoted with \" \\ \n \t and \xHH escapes; the printer
 * escapes every byte outside ' '..'~'. A name that is absent prints
 * nothing; an empty name prints "". Doubles print in the shortest %.Ng that
 * reads back to the same bits, and inf, -inf, nan, -nan by name (other
 * NaN payloads as nan:0x<16 hex digits>). Modes print by name (mode=last,
 * mode=reflect, ...) and numerically when outside the op's names. Numbers
 * assume the C locale for LC_NUMERIC (pcc never calls setlocale).
 *
 * The parser is lenient where it costs nothing (attributes in any order,
 * missing ones zero, sparse %ids, statements in any order as long as values
 * are defined before use) and strict elsewhere: every node goes through
 * ir_graph_add_node, whose shape inference must agree with the types in the
 * text. It never reads past the terminating NUL, bounds every count, and on
 * bad input returns NULL with "line N: what is wrong" in ir_error().
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ---- the attributes each op reads ------------------------------------- */

/* In print order. */
enum attr {
	ATTR_DTYPE,
	ATTR_SHAPE,
	ATTR_AXES,
	ATTR_AXIS,
	ATTR_K,
	ATTR_LHS_BATCH,
	ATTR_RHS_BATCH,
	ATTR_LHS_CONTRACT,
	ATTR_RHS_CONTRACT,
	ATTR_WINDOW,
	ATTR_START,
	ATTR_LIMIT,
	ATTR_STRIDE,
	ATTR_PAD_LO,
	ATTR_PAD_HI,
	ATTR_DILATION,
	ATTR_GROUPS,
	ATTR_MODE,
	ATTR_EPS,
	ATTR_VALUE,
	ATTR_DATA,
	ATTR_COUNT
};

enum attr_kind {
	KIND_DTYPE,
	KIND_SHAPE,
	KIND_ILIST,
	KIND_INT,
	KIND_MODE,
	KIND_DOUBLE,
	KIND_DATA,
	KIND_COUNT
};

static const struct {
	const char *name;
	enum attr_kind kind;
	size_t offset; /* into struct ir_attrs */
} attr_info[ATTR_COUNT] = {
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

#define A(x) (1u << ATTR_##x)

struct op_syntax {
	unsigned attrs;           /* A() bits: the fields the op reads (ir.h) */
	const char *const *modes; /* name of each mode value, or NULL */
	int nmodes;
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

#define WITH_MODES(bits, names) \
	((struct op_syntax){ (bits) | A(MODE), names, (int)(sizeof names / sizeof names[0]) })
#define PLAIN(bits) ((struct op_syntax){ (bits), NULL, 0 })

static struct op_syntax op_syntax(enum ir_op op)
{
	switch (op) {
	case IR_OP_NEG: case IR_OP_ABS: case IR_OP_SIGN: case IR_OP_EXP:
	case IR_OP_LOG: case IR_OP_SQRT: case IR_OP_RSQRT: case IR_OP_RECIP:
	case IR_OP_TANH: case IR_OP_ERF: case IR_OP_SIGMOID: case IR_OP_RELU:
	case IR_OP_SIN: case IR_OP_COS: case IR_OP_TAN: case IR_OP_ASIN:
	case IR_OP_ACOS: case IR_OP_ATAN: case IR_OP_SINH: case IR_OP_COSH:
	case IR_OP_ASINH: case IR_OP_ACOSH: case IR_OP_ATANH: case IR_OP_FLOOR:
	case IR_OP_CEIL: case IR_OP_ROUND: case IR_OP_NOT: case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	case IR_OP_ADD: case IR_OP_SUB: case IR_OP_MUL: case IR_OP_DIV:
	case IR_OP_REM: case IR_OP_POW: case IR_OP_MAX: case IR_OP_MIN:
	case IR_OP_AND: case IR_OP_OR: case IR_OP_XOR: case IR_OP_EQ:
	case IR_OP_NE: case IR_OP_LT: case IR_OP_LE: case IR_OP_GT: case IR_OP_GE:
	case IR_OP_SELECT:
		return PLAIN(0);
	case IR_OP_CONVERT:
		return PLAIN(A(DTYPE));
	case IR_OP_DOT:
		return PLAIN(A(LHS_BATCH) | A(RHS_BATCH) | A(LHS_CONTRACT) | A(RHS_CONTRACT));
	case IR_OP_CONV:
		return PLAIN(A(STRIDE) | A(PAD_LO) | A(PAD_HI) | A(DILATION) | A(GROUPS));
	case IR_OP_REDUCE_SUM: case IR_OP_REDUCE_MAX: case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD: case IR_OP_TRANSPOSE: case IR_OP_REVERSE:
		return PLAIN(A(AXES));
	case IR_OP_ARGMAX: case IR_OP_ARGMIN:
		return WITH_MODES(A(AXIS), arg_modes);
	case IR_OP_WINDOW_MAX: case IR_OP_WINDOW_SUM:
		return PLAIN(A(WINDOW) | A(STRIDE) | A(PAD_LO) | A(PAD_HI) | A(DILATION));
	case IR_OP_CUMSUM:
		return WITH_MODES(A(AXIS), cumsum_modes);
	case IR_OP_RESHAPE:
		return PLAIN(A(SHAPE));
	case IR_OP_BROADCAST:
		return PLAIN(A(SHAPE) | A(AXES));
	case IR_OP_SLICE:
		return PLAIN(A(START) | A(LIMIT) | A(STRIDE));
	case IR_OP_CONCAT: case IR_OP_GATHER: case IR_OP_SOFTMAX:
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

/* Bytes of a tensor whose shape passed ir_shape_check (cannot overflow). */
static int64_t type_bytes(enum ir_dtype t, const struct ir_shape *s)
{
	return ir_shape_numel(s) * (int64_t)ir_dtype_size(t);
}

/* ---- printing ---------------------------------------------------------- */

static const char hex_digits[] = "0123456789abcdef";

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < ' ' || *p > '~')
			fprintf(f, "\\x%c%c", hex_digits[*p >> 4], hex_digits[*p & 15]);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void put_hex(FILE *f, const void *data, int64_t n)
{
	const unsigned char *b = data;
	char buf[4096];
	size_t len = 0;

	fputc('"', f);
	for (int64_t i = 0; i < n; i++) {
		buf[len++] = hex_digits[b[i] >> 4];
		buf[len++] = hex_digits[b[i] & 15];
		if (len == sizeof buf) {
			fwrite(buf, 1, len, f);
			len = 0;
		}
	}
	fwrite(buf, 1, len, f);
	fputc('"', f);
}

static void put_dims(FILE *f, int n, const int64_t *v)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%" PRId64, i ? "," : "", v[i]);
	fputc(']', f);
}

static void put_type(FILE *f, enum ir_dtype t, const struct ir_shape *s)
{
	fputs(ir_dtype_name(t), f);
	put_dims(f, s->rank, s->dims);
}

static uint64_t double_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof u);
	return u;
}

#define NAN_BITS UINT64_C(0x7ff8000000000000)
#define NEG_NAN_BITS UINT64_C(0xfff8000000000000)

static void put_double(FILE *f, double d)
{
	char buf[40];

	if (isnan(d)) {
		uint64_t u = double_bits(d);
		if (u == NAN_BITS)
			fputs("nan", f);
		else if (u == NEG_NAN_BITS)
			fputs("-nan", f);
		else
			fprintf(f, "nan:0x%016" PRIx64, u);
		return;
	}
	if (isinf(d)) {
		fputs(d < 0 ? "-inf" : "inf", f);
		return;
	}
	/* the shortest of these that reads back exactly; %.17g always does */
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, d);
		if (double_bits(strtod(buf, NULL)) == double_bits(d))
			break;
	}
	fputs(buf, f);
}

static void put_attr(FILE *f, const struct ir_attrs *a, enum attr at,
		     const struct op_syntax *syn)
{
	const char *field = (const char *)a + attr_info[at].offset;

	fprintf(f, " %s=", attr_info[at].name);
	switch (attr_info[at].kind) {
	case KIND_DTYPE:
		fputs(ir_dtype_name(*(const enum ir_dtype *)field), f);
		break;
	case KIND_SHAPE: {
		const struct ir_shape *s = (const void *)field;
		put_dims(f, s->rank, s->dims);
		break;
	}
	case KIND_ILIST: {
		const struct ir_ilist *l = (const void *)field;
		put_dims(f, l->n, l->v);
		break;
	}
	case KIND_INT:
		fprintf(f, "%" PRId64, *(const int64_t *)field);
		break;
	case KIND_MODE: {
		int64_t m = *(const int64_t *)field;
		if (m >= 0 && m < syn->nmodes && syn->modes[m])
			fputs(syn->modes[m], f);
		else
			fprintf(f, "%" PRId64, m);
		break;
	}
	case KIND_DOUBLE:
		put_double(f, *(const double *)field);
		break;
	case KIND_DATA:
		/* CONSTANT: a.shape and a.dtype give its size */
		fputs("hex ", f);
		put_hex(f, a->data, type_bytes(a->dtype, &a->shape));
		break;
	case KIND_COUNT:
		IR_ASSERT(!"attr kind out of range");
	}
}

static void put_def(FILE *f, int num, const struct ir_value *v)
{
	fprintf(f, "%%%d ", num);
	if (v->name) {
		put_string(f, v->name);
		fputc(' ', f);
	}
	fputs(": ", f);
	put_type(f, v->dtype, &v->shape);
	if (v->sharded) {
		char buf[IR_SHARDING_STR_MAX];
		fprintf(f, " %s", ir_sharding_str(&v->sharding, v->shape.rank, buf, sizeof buf));
	}
}

static void put_param_data(FILE *f, const struct ir_data *d)
{
	if (d->bytes) {
		fputs(" = hex ", f);
		put_hex(f, d->bytes, d->nbytes);
		return;
	}
	IR_ASSERT(d->path);
	fputs(" = external ", f);
	put_string(f, d->path);
	fprintf(f, " offset %" PRId64 " bytes %" PRId64, d->offset, d->nbytes);
	if (d->base_dir) {
		fputs(" base_dir ", f);
		put_string(f, d->base_dir);
	}
}

static void put_node(FILE *f, const int *num, const struct ir_node *n)
{
	struct op_syntax syn = op_syntax(n->op);

	for (int i = 0; i < n->nout; i++) {
		if (i)
			fputs(", ", f);
		put_def(f, num[n->out[i]->id], n->out[i]);
	}
	fprintf(f, " = %s", ir_op_name(n->op));
	for (int i = 0; i < n->nin; i++) {
		IR_ASSERT(num[n->in[i]->id] >= 0);
		fprintf(f, "%s%%%d", i ? ", " : " ", num[n->in[i]->id]);
	}
	for (int at = 0; at < ATTR_COUNT; at++)
		if (syn.attrs & (1u << at))
			put_attr(f, &n->a, (enum attr)at, &syn);
	if (n->name) {
		fputs(" @", f);
		put_string(f, n->name);
	}
	fputc('\n', f);
}

static void number(int *num, int nv, int *next, const struct ir_value *v)
{
	IR_ASSERT(v->id >= 0 && v->id < nv && num[v->id] < 0);
	num[v->id] = (*next)++;
}

int ir_print(const struct ir_graph *g, FILE *f)
{
	int nv = ir_graph_nvalues(g), next = 0;
	int *num = ir_malloc(sizeof *num * (size_t)(nv > 0 ? nv : 1));

	if (!num)
		return ir_errorf(-ENOMEM, "out of memory printing the graph");
	for (int i = 0; i < nv; i++)
		num[i] = -1;
	for (int i = 0; i < ir_graph_ninputs(g); i++)
		number(num, nv, &next, ir_graph_input(g, i));
	for (int i = 0; i < ir_graph_nparams(g); i++)
		number(num, nv, &next, ir_graph_param(g, i));
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nout; j++)
			number(num, nv, &next, n->out[j]);
	}

	fputs("pcc-ir 1\n", f);
	int n0, n1;
	ir_graph_mesh(g, &n0, &n1);
	if (n0 > 0)
		fprintf(f, "mesh %dx%d\n", n0, n1);
	for (int i = 0; i < ir_graph_ninputs(g); i++) {
		const struct ir_value *v = ir_graph_input(g, i);
		fputs("input ", f);
		put_def(f, num[v->id], v);
		fputc('\n', f);
	}
	for (int i = 0; i < ir_graph_nparams(g); i++) {
		const struct ir_value *v = ir_graph_param(g, i);
		fputs("param ", f);
		put_def(f, num[v->id], v);
		put_param_data(f, &v->data);
		fputc('\n', f);
	}
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		put_node(f, num, ir_graph_node(g, i));
	for (int i = 0; i < ir_graph_noutputs(g); i++) {
		const char *name = ir_graph_output_name(g, i);
		fprintf(f, "output %%%d", num[ir_graph_output(g, i)->id]);
		if (name) {
			fputc(' ', f);
			put_string(f, name);
		}
		fputc('\n', f);
	}
	for (int i = 0; i < ir_graph_nupdates(g); i++)
		fprintf(f, "update %%%d %%%d\n", num[ir_graph_update_param(g, i)->id],
			num[ir_graph_update_value(g, i)->id]);
	ir_free(num);
	if (ferror(f))
		return ir_errorf(-EIO, "write error printing the graph");
	return 0;
}

/* ---- parsing ------------------------------------------------------------ */

/* Bounds that keep hostile text from asking for absurd work. Dims and ilist
 * entries are bounded by IR_MAX_RANK, element counts by ir_shape_check. */
#define MAX_RESULTS 8          /* results of one node (ops have at most 2) */
#define MAX_OPERANDS (1 << 20) /* operands of one node (concat) */

struct def_slot {
	int64_t id;         /* the N of %N */
	int line;           /* where it was defined */
	struct ir_value *v; /* NULL: slot empty */
};

struct parser {
	const char *p; /* cursor; never moves past the terminating NUL */
	int line;
	struct ir_graph *g;
	struct def_slot *defs; /* open-addressing hash on id, at most half full */
	size_t defs_cap, ndefs;
	struct ir_value **ops; /* operands of the node being parsed */
	int ops_cap;
};

/* One "%N "name" : type" before it becomes a value. */
struct def {
	int64_t id;
	const char *name; /* arena string or NULL */
	enum ir_dtype dtype;
	struct ir_shape shape;
	bool sharded;
	struct ir_sharding sharding;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static int hex_value(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool at_eol(const struct parser *ps)
{
	return *ps->p == '\n' || *ps->p == '\0' || *ps->p == '#';
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
		ps->p++;
}

__attribute__((format(printf, 2, 3))) static int fail(struct parser *ps, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ir_errorf(-EINVAL, "line %d: %s", ps->line, msg);
}

/* "expected WHAT, found 'TOKEN'": the token cut at 24 bytes, with bytes
 * outside ' '..'~' shown as '?' so the message stays one printable line. */
static int fail_expected(struct parser *ps, const char *what)
{
	char tok[25];
	size_t n = 0;

	skip_ws(ps);
	if (at_eol(ps))
		return fail(ps, "expected %s, found end of line", what);
	for (const char *p = ps->p; n < sizeof tok - 1 && *p && *p != ' ' && *p != '\n'; p++)
		tok[n++] = (*p >= ' ' && *p <= '~') ? *p : '?';
	tok[n] = '\0';
	return fail(ps, "expected %s, found '%s'", what, tok);
}

static int fail_builder(struct parser *ps)
{
	ir_error_prefix("line %d", ps->line);
	return -EINVAL;
}

static int fail_nomem(void)
{
	return ir_errorf(-ENOMEM, "out of memory parsing IR text");
}

static bool accept(struct parser *ps, char c)
{
	skip_ws(ps);
	if (*ps->p != c)
		return false;
	ps->p++;
	return true;
}

static int expect(struct parser *ps, char c)
{
	char what[4] = { '\'', c, '\'', '\0' };

	return accept(ps, c) ? 0 : fail_expected(ps, what);
}

/* An identifier [A-Za-z0-9_]+ at the cursor: its length (0 if none). */
static size_t word(struct parser *ps, const char **start)
{
	const char *p;

	skip_ws(ps);
	*start = p = ps->p;
	while (is_word_char(*p))
		p++;
	ps->p = p;
	return (size_t)(p - *start);
}

static bool word_is(const char *w, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(w, s, n) == 0;
}

/* Length to show of a word in a message. */
static int shown(size_t n)
{
	return n > 32 ? 32 : (int)n;
}

static int expect_word(struct parser *ps, const char *s)
{
	const char *start = ps->p, *w;
	size_t n = word(ps, &w);
	char what[40];

	if (word_is(w, n, s))
		return 0;
	ps->p = start;
	snprintf(what, sizeof what, "'%s'", s);
	return fail_expected(ps, what);
}

/* Copies a word into buf as a C string; false when it does not fit. */
static bool word_copy(const char *w, size_t n, char *buf, size_t size)
{
	if (n >= size)
		return false;
	memcpy(buf, w, n);
	buf[n] = '\0';
	return true;
}

static int parse_int(struct parser *ps, int64_t *out)
{
	const char *p;
	bool neg;
	int64_t v = 0;

	skip_ws(ps);
	p = ps->p;
	neg = *p == '-';
	p += neg;
	if (!is_digit(*p))
		return fail_expected(ps, "an integer");
	for (; is_digit(*p); p++) {
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return fail(ps, "integer out of range");
		v = v * 10 + (*p - '0');
	}
	if (is_word_char(*p) || *p == '.')
		return fail_expected(ps, "an integer");
	ps->p = p;
	*out = neg ? -v : v;
	return 0;
}

static int parse_ref(struct parser *ps, int64_t *id)
{
	const char *p;
	int64_t v = 0;

	skip_ws(ps);
	p = ps->p;
	if (*p != '%' || !is_digit(p[1]))
		return fail_expected(ps, "a value like %0");
	for (p++; is_digit(*p); p++) {
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return fail(ps, "value id too large");
	}
	if (is_word_char(*p))
		return fail_expected(ps, "a value like %0");
	ps->p = p;
	*id = v;
	return 0;
}

/* Reads a double: a decimal (anything strtod takes, whole token), inf,
 * -inf, nan, -nan, or nan:0x<bits> for other NaNs (see put_double). */
static int parse_double(struct parser *ps, double *out)
{
	char buf[48], *end;
	size_t n = 0;
	const char *p;
	double d;

	skip_ws(ps);
	for (p = ps->p; is_word_char(*p) || *p == '.' || *p == '-' || *p == '+' || *p == ':'; p++) {
		if (n == sizeof buf - 1)
			return fail(ps, "number too long");
		buf[n++] = *p;
	}
	buf[n] = '\0';
	if (!n)
		return fail_expected(ps, "a number");
	if (!strcmp(buf, "inf") || !strcmp(buf, "-inf")) {
		d = buf[0] == '-' ? -INFINITY : INFINITY;
	} else if (!strcmp(buf, "nan") || !strcmp(buf, "-nan")) {
		uint64_t u = buf[0] == '-' ? NEG_NAN_BITS : NAN_BITS;
		memcpy(&d, &u, sizeof d);
	} else if (!strncmp(buf, "nan:0x", 6)) {
		uint64_t u = 0;
		if (n != 6 + 16)
			return fail(ps, "bad NaN '%s': expected nan:0x and 16 hex digits", buf);
		for (size_t i = 6; i < n; i++) {
			if (hex_value(buf[i]) < 0)
				return fail(ps, "bad NaN '%s'", buf);
			u = u << 4 | (uint64_t)hex_value(buf[i]);
		}
		memcpy(&d, &u, sizeof d);
		if (!isnan(d))
			return fail(ps, "bad NaN '%s': the bits are not a NaN", buf);
	} else {
		d = strtod(buf, &end);
		if (end != buf + n || !(is_digit(buf[0]) || buf[0] == '-' || buf[0] == '.'))
			return fail(ps, "bad number '%s'", buf);
		if (isinf(d) || isnan(d))
			return fail(ps, "number '%s' out of range (write inf or nan)", buf);
	}
	ps->p = p;
	*out = d;
	return 0;
}

/* Decodes the body of a string literal starting at p (after the opening
 * quote) into out, or only measures it when out is NULL. Returns the
 * decoded length and sets *end past the closing quote, or -1 on error. */
static int64_t string_body(struct parser *ps, const char *p, char *out, const char **end)
{
	int64_t n = 0;

	for (;;) {
		char c = *p++;
		if (c == '"')
			break;
		if (c == '\0' || c == '\n')
			return fail(ps, "unterminated string"), -1;
		if (c == '\\') {
			c = *p++;
			switch (c) {
			case '"': case '\\':
				break;
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'x':
				if (hex_value(p[0]) < 0 || hex_value(p[1]) < 0)
					return fail(ps, "bad escape in string: \\x needs two hex digits"), -1;
				c = (char)(hex_value(p[0]) << 4 | hex_value(p[1]));
				p += 2;
				if (!c)
					return fail(ps, "NUL byte in string"), -1;
				break;
			case '\0': case '\n':
				return fail(ps, "unterminated string"), -1;
			default:
				return fail(ps, "bad escape in string: '\\%c'",
					    c >= ' ' && c <= '~' ? c : '?'), -1;
			}
		}
		if (out)
			out[n] = c;
		n++;
	}
	*end = p;
	return n;
}

/* A string literal, copied into the graph's arena. */
static int parse_string(struct parser *ps, const char **out)
{
	const char *end;
	int64_t n;
	char *s;

	skip_ws(ps);
	if (*ps->p != '"')
		return fail_expected(ps, "a string");
	n = string_body(ps, ps->p + 1, NULL, &end);
	if (n < 0)
		return -EINVAL;
	s = ir_graph_alloc(ps->g, (size_t)n + 1);
	if (!s)
		return fail_nomem();
	string_body(ps, ps->p + 1, s, &end);
	ps->p = end;
	*out = s;
	return 0;
}

/* An optional name: a string if one comes next. */
static int parse_name(struct parser *ps, const char **out)
{
	skip_ws(ps);
	*out = NULL;
	return *ps->p == '"' ? parse_string(ps, out) : 0;
}

/* "hex" has been read; a string of hex digits, two per byte, into the
 * arena (never a NULL pointer, even for zero bytes). */
static int parse_hex(struct parser *ps, const void **out, int64_t *nbytes)
{
	const char *p;
	int64_t n = 0;
	unsigned char *b;

	skip_ws(ps);
	if (*ps->p != '"')
		return fail_expected(ps, "a string of hex digits");
	for (p = ps->p + 1; *p != '"'; p++, n++) {
		if (*p == '\0' || *p == '\n')
			return fail(ps, "unterminated string");
		if (hex_value(*p) < 0)
			return fail(ps, "bad hex digit '%c'", *p >= ' ' && *p <= '~' ? *p : '?');
	}
	if (n % 2)
		return fail(ps, "odd number of hex digits (%" PRId64 ")", n);
	b = ir_graph_alloc(ps->g, n ? (size_t)n / 2 : 1);
	if (!b)
		return fail_nomem();
	for (int64_t i = 0; i < n / 2; i++)
		b[i] = (unsigned char)(hex_value(ps->p[1 + 2 * i]) << 4 | hex_value(ps->p[2 + 2 * i]));
	ps->p = p + 1;
	*out = b;
	*nbytes = n / 2;
	return 0;
}

/* "[" [ INT { "," INT } ] "]" into v[0..*n), at most IR_MAX_RANK. */
static int parse_ints(struct parser *ps, int64_t *v, int *n, const char *what)
{
	if (expect(ps, '['))
		return -EINVAL;
	*n = 0;
	if (accept(ps, ']'))
		return 0;
	for (;;) {
		if (*n == IR_MAX_RANK)
			return fail(ps, "more than %d %s", IR_MAX_RANK, what);
		if (parse_int(ps, &v[(*n)++]))
			return -EINVAL;
		if (accept(ps, ']'))
			return 0;
		if (!accept(ps, ','))
			return fail_expected(ps, "',' or ']'");
	}
}

static int parse_shape(struct parser *ps, struct ir_shape *s)
{
	memset(s, 0, sizeof *s);
	if (parse_ints(ps, s->dims, &s->rank, "dims"))
		return -EINVAL;
	if (ir_shape_check(s))
		return fail_builder(ps);
	return 0;
}

static int parse_dtype(struct parser *ps, enum ir_dtype *t)
{
	const char *w;
	size_t n = word(ps, &w);
	char buf[16];

	if (!n)
		return fail_expected(ps, "a dtype");
	if (!word_copy(w, n, buf, sizeof buf) || ir_dtype_parse(buf, t))
		return fail(ps, "unknown dtype '%.*s'", shown(n), w);
	return 0;
}

static int parse_type(struct parser *ps, enum ir_dtype *t, struct ir_shape *s)
{
	if (parse_dtype(ps, t))
		return -EINVAL;
	return parse_shape(ps, s);
}

static int parse_mode(struct parser *ps, enum ir_op op, const struct op_syntax *syn, int64_t *m)
{
	const char *w;
	size_t n;

	skip_ws(ps);
	if (is_digit(*ps->p) || *ps->p == '-')
		return parse_int(ps, m);
	n = word(ps, &w);
	for (int i = 0; i < syn->nmodes; i++) {
		if (syn->modes[i] && word_is(w, n, syn->modes[i])) {
			*m = i;
			return 0;
		}
	}
	if (!n)
		return fail_expected(ps, "a mode");
	return fail(ps, "unknown mode '%.*s' for %s", shown(n), w, ir_op_name(op));
}

/* ---- the value table ---------------------------------------------------- */

static size_t id_hash(int64_t id, size_t cap)
{
	return (size_t)((uint64_t)id * UINT64_C(0x9e3779b97f4a7c15) >> 32) & (cap - 1);
}

/* The slot holding id, or the empty slot where it would go. */
static struct def_slot *def_slot(struct parser *ps, int64_t id)
{
	size_t i = id_hash(id, ps->defs_cap);

	while (ps->defs[i].v && ps->defs[i].id != id)
		i = (i + 1) & (ps->defs_cap - 1);
	return &ps->defs[i];
}

static struct def_slot *def_lookup(struct parser *ps, int64_t id)
{
	struct def_slot *s;

	if (!ps->defs_cap)
		return NULL;
	s = def_slot(ps, id);
	return s->v ? s : NULL;
}

static int define(struct parser *ps, int64_t id, struct ir_value *v)
{
	struct def_slot *s;

	if ((ps->ndefs + 1) * 2 > ps->defs_cap) {
		struct def_slot *old = ps->defs;
		size_t old_cap = ps->defs_cap, cap = old_cap ? old_cap * 2 : 64;

		ps->defs = ir_calloc(cap, sizeof *ps->defs);
		if (!ps->defs) {
			ps->defs = old;
			return fail_nomem();
		}
		ps->defs_cap = cap;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].v)
				*def_slot(ps, old[i].id) = old[i];
		ir_free(old);
	}
	s = def_slot(ps, id);
	IR_ASSERT(!s->v);
	*s = (struct def_slot){ .id = id, .line = ps->line, .v = v };
	ps->ndefs++;
	return 0;
}

static int parse_use(struct parser *ps, struct ir_value **v)
{
	int64_t id;
	struct def_slot *s;

	if (parse_ref(ps, &id))
		return -EINVAL;
	s = def_lookup(ps, id);
	if (!s)
		return fail(ps, "%%%" PRId64 " used before definition", id);
	*v = s->v;
	return 0;
}

/* "%N ["name"] : type" */
static int parse_def(struct parser *ps, struct def *d)
{
	struct def_slot *s;

	memset(d, 0, sizeof *d);
	if (parse_ref(ps, &d->id))
		return -EINVAL;
	s = def_lookup(ps, d->id);
	if (s)
		return fail(ps, "%%%" PRId64 " redefined (first defined on line %d)", d->id, s->line);
	if (parse_name(ps, &d->name) || expect(ps, ':') || parse_type(ps, &d->dtype, &d->shape))
		return -EINVAL;
	if (!accept(ps, '<'))
		return 0;
	const char *close = strchr(ps->p, '>'), *nl = strchr(ps->p, '\n');
	if (!close || (nl && nl < close))
		return fail_expected(ps, "'>' closing the sharding");
	int n0, n1;
	ir_graph_mesh(ps->g, &n0, &n1);
	if (ir_sharding_parse(ps->p, (size_t)(close - ps->p), d->shape.rank, &d->sharding) ||
	    ir_sharding_check(&d->sharding, &d->shape, n0, n1))
		return fail(ps, "%s", ir_error());
	d->sharded = true;
	ps->p = close + 1;
	return 0;
}

/* Copies a definition's sharding onto its value. */
static void annotate(struct ir_value *v, const struct def *d)
{
	v->sharded = d->sharded;
	v->sharding = d->sharding;
}

static int end_stmt(struct parser *ps)
{
	skip_ws(ps);
	return at_eol(ps) ? 0 : fail_expected(ps, "end of line");
}

/* ---- statements ---------------------------------------------------------- */

static int stmt_input(struct parser *ps)
{
	struct def d;
	struct ir_value *v;

	if (parse_def(ps, &d) || end_stmt(ps))
		return -EINVAL;
	v = ir_graph_add_input(ps->g, d.name, d.dtype, &d.shape);
	if (!v)
		return fail_builder(ps);
	annotate(v, &d);
	return define(ps, d.id, v);
}

static int param_data(struct parser *ps, const struct def *d, struct ir_data *data)
{
	int64_t need = type_bytes(d->dtype, &d->shape);
	const char *w, *start;
	size_t n;
	char type[IR_SHAPE_STR_MAX + 8];

	snprintf(type, sizeof type, "%s", ir_dtype_name(d->dtype));
	ir_shape_str(&d->shape, type + strlen(type), sizeof type - strlen(type));
	skip_ws(ps);
	start = ps->p;
	n = word(ps, &w);
	if (word_is(w, n, "hex")) {
		if (parse_hex(ps, &data->bytes, &data->nbytes))
			return -EINVAL;
		if (data->nbytes != need)
			return fail(ps, "%" PRId64 " bytes of hex, but %s needs %" PRId64,
				    data->nbytes, type, need);
		return 0;
	}
	if (!word_is(w, n, "external")) {
		ps->p = start;
		return fail_expected(ps, "'hex' or 'external'");
	}
	if (parse_string(ps, &data->path) || expect_word(ps, "offset") ||
	    parse_int(ps, &data->offset))
		return -EINVAL;
	if (data->offset < 0)
		return fail(ps, "negative offset %" PRId64, data->offset);
	if (expect_word(ps, "bytes") || parse_int(ps, &data->nbytes))
		return -EINVAL;
	if (data->nbytes != need)
		return fail(ps, "external data of %" PRId64 " bytes, but %s needs %" PRId64,
			    data->nbytes, type, need);
	skip_ws(ps);
	if (!at_eol(ps) && (expect_word(ps, "base_dir") || parse_string(ps, &data->base_dir)))
		return -EINVAL;
	return 0;
}

static int stmt_param(struct parser *ps)
{
	struct def d;
	struct ir_data data = { 0 };
	struct ir_value *v;

	if (parse_def(ps, &d) || expect(ps, '=') || param_data(ps, &d, &data) || end_stmt(ps))
		return -EINVAL;
	v = ir_graph_add_param(ps->g, d.name, d.dtype, &d.shape, &data);
	if (!v)
		return fail_builder(ps);
	annotate(v, &d);
	return define(ps, d.id, v);
}

static int stmt_output(struct parser *ps)
{
	struct ir_value *v;
	const char *name;

	if (parse_use(ps, &v) || parse_name(ps, &name) || end_stmt(ps))
		return -EINVAL;
	if (ir_graph_add_output(ps->g, v, name) < 0)
		return fail_builder(ps);
	return 0;
}

static int stmt_update(struct parser *ps)
{
	struct ir_value *p, *v;

	if (parse_use(ps, &p) || parse_use(ps, &v) || end_stmt(ps))
		return -EINVAL;
	if (p->kind != IR_VAL_PARAM)
		return fail(ps, "update: the first value must be a param");
	if (ir_graph_add_update(ps->g, p, v) < 0)
		return fail_builder(ps);
	return 0;
}

/* "mesh 2x4": before any sharded value, at most once. */
static int stmt_mesh(struct parser *ps)
{
	const char *w;
	char buf[32], tail;
	int c0, c1;
	long n0, n1;
	ir_graph_mesh(ps->g, &c0, &c1);
	if (c0)
		return fail(ps, "mesh given twice");
	size_t n = word(ps, &w);
	if (!word_copy(w, n, buf, sizeof buf) || sscanf(buf, "%ldx%ld%c", &n0, &n1, &tail) != 2) {
		ps->p = w;
		return fail_expected(ps, "a mesh shape N0xN1");
	}
	if (n0 < 1 || n1 < 1 || n0 > 65536 || n1 > 65536)
		return fail(ps, "mesh %ldx%ld: each axis must be 1 .. 65536", n0, n1);
	ir_graph_set_mesh(ps->g, (int)n0, (int)n1);
	return end_stmt(ps);
}

static int parse_attr(struct parser *ps, enum ir_op op, const struct op_syntax *syn,
		      struct ir_attrs *a, unsigned *seen, int64_t *data_bytes)
{
	const char *w;
	size_t n = word(ps, &w);
	int at;
	char *field;

	if (!n)
		return fail_expected(ps, "an attribute");
	for (at = 0; at < ATTR_COUNT && !word_is(w, n, attr_info[at].name); at++)
		;
	if (at == ATTR_COUNT)
		return fail(ps, "unknown attribute '%.*s'", shown(n), w);
	if (!(syn->attrs & (1u << at)))
		return fail(ps, "%s has no attribute '%s'", ir_op_name(op), attr_info[at].name);
	if (*seen & (1u << at))
		return fail(ps, "attribute '%s' given twice", attr_info[at].name);
	*seen |= 1u << at;
	if (expect(ps, '='))
		return -EINVAL;
	field = (char *)a + attr_info[at].offset;
	switch (attr_info[at].kind) {
	case KIND_DTYPE:
		return parse_dtype(ps, (enum ir_dtype *)(void *)field);
	case KIND_SHAPE:
		return parse_shape(ps, (struct ir_shape *)(void *)field);
	case KIND_ILIST: {
		struct ir_ilist *l = (void *)field;
		return parse_ints(ps, l->v, &l->n, "entries");
	}
	case KIND_INT:
		return parse_int(ps, (int64_t *)(void *)field);
	case KIND_MODE:
		return parse_mode(ps, op, syn, (int64_t *)(void *)field);
	case KIND_DOUBLE:
		return parse_double(ps, (double *)(void *)field);
	case KIND_DATA:
		if (expect_word(ps, "hex"))
			return -EINVAL;
		return parse_hex(ps, &a->data, data_bytes);
	case KIND_COUNT:
		break;
	}
	ir_assert_fail(__FILE__, __LINE__, "attr kind out of range");
}

static int grow_ops(struct parser *ps, int need)
{
	struct ir_value **ops;
	int cap;

	if (need <= ps->ops_cap)
		return 0;
	cap = ps->ops_cap ? ps->ops_cap * 2 : 16;
	ops = ir_realloc(ps->ops, sizeof *ops * (size_t)cap);
	if (!ops)
		return fail_nomem();
	ps->ops = ops;
	ps->ops_cap = cap;
	return 0;
}

/* Everything the text says about a node that the builder cannot check:
 * result and operand counts, and the size of a constant's data. */
static int check_node(struct parser *ps, enum ir_op op, int nres, int nin,
		      const struct ir_attrs *a, unsigned seen, int64_t data_bytes)
{
	const char *name = ir_op_name(op);
	int want = ir_op_ninputs(op);

	if (nres != ir_op_noutputs(op))
		return fail(ps, "%s has %d result%s, the text names %d", name,
			    ir_op_noutputs(op), ir_op_noutputs(op) == 1 ? "" : "s", nres);
	if (want >= 0 && nin != want)
		return fail(ps, "%s takes %d operand%s, got %d", name, want, want == 1 ? "" : "s", nin);
	if (want < 0 && nin < 1)
		return fail(ps, "%s takes at least one operand", name);
	if (op_syntax(op).attrs & A(DATA)) {
		/* a.shape passed ir_shape_check if given, and is [] if not */
		int64_t need = type_bytes(a->dtype, &a->shape);
		char shape[IR_SHAPE_STR_MAX];
		if (!(seen & A(DATA)) && need > 0)
			return fail(ps, "%s needs data=hex \"...\"", name);
		if ((seen & A(DATA)) && data_bytes != need)
			return fail(ps, "%s data has %" PRId64 " bytes, %s%s needs %" PRId64, name,
				    data_bytes, ir_dtype_name(a->dtype),
				    ir_shape_str(&a->shape, shape, sizeof shape), need);
	}
	return 0;
}

static int check_result(struct parser *ps, const struct ir_node *n, int i, const struct def *d)
{
	const struct ir_value *v = n->out[i];
	char want[IR_SHAPE_STR_MAX], got[IR_SHAPE_STR_MAX];

	if (v->dtype == d->dtype && ir_shape_eq(&v->shape, &d->shape))
		return 0;
	return fail(ps, "%%%" PRId64 " is %s%s in the text, but %s gives %s%s", d->id,
		    ir_dtype_name(d->dtype), ir_shape_str(&d->shape, want, sizeof want),
		    ir_op_name(n->op), ir_dtype_name(v->dtype),
		    ir_shape_str(&v->shape, got, sizeof got));
}

static int parse_op(struct parser *ps, enum ir_op *op)
{
	const char *w;
	size_t n = word(ps, &w);
	char buf[32];

	if (!n)
		return fail_expected(ps, "an op");
	if (!word_copy(w, n, buf, sizeof buf) || ir_op_parse(buf, op))
		return fail(ps, "unknown op '%.*s'", shown(n), w);
	return 0;
}

static int stmt_node(struct parser *ps)
{
	struct def res[MAX_RESULTS];
	struct ir_attrs a;
	struct op_syntax syn;
	struct ir_node *node;
	const char *name = NULL;
	enum ir_op op;
	int nres = 0, nin = 0;
	unsigned seen = 0;
	int64_t data_bytes = 0;

	memset(&a, 0, sizeof a);
	do {
		if (nres == MAX_RESULTS)
			return fail(ps, "more than %d results", MAX_RESULTS);
		if (parse_def(ps, &res[nres]))
			return -EINVAL;
		for (int i = 0; i < nres; i++)
			if (res[i].id == res[nres].id)
				return fail(ps, "%%%" PRId64 " defined twice", res[i].id);
		nres++;
	} while (accept(ps, ','));
	if (expect(ps, '=') || parse_op(ps, &op))
		return -EINVAL;
	syn = op_syntax(op);
	skip_ws(ps);
	if (*ps->p == '%') {
		do {
			if (nin == MAX_OPERANDS)
				return fail(ps, "more than %d operands", MAX_OPERANDS);
			if (grow_ops(ps, nin + 1) || parse_use(ps, &ps->ops[nin]))
				return -EINVAL;
			nin++;
		} while (accept(ps, ','));
	}
	for (skip_ws(ps); !at_eol(ps) && *ps->p != '@'; skip_ws(ps))
		if (parse_attr(ps, op, &syn, &a, &seen, &data_bytes))
			return -EINVAL;
	if (accept(ps, '@') && parse_string(ps, &name))
		return -EINVAL;
	if (end_stmt(ps) || check_node(ps, op, nres, nin, &a, seen, data_bytes))
		return -EINVAL;

	node = ir_graph_add_node(ps->g, op, name, nin, ps->ops, &a);
	if (!node)
		return fail_builder(ps);
	IR_ASSERT(node->nout == nres);
	for (int i = 0; i < nres; i++)
		if (check_result(ps, node, i, &res[i]))
			return -EINVAL;
	for (int i = 0; i < nres; i++) {
		/* results get their names here: the builder has no parameter for them */
		node->out[i]->name = res[i].name;
		annotate(node->out[i], &res[i]);
		if (define(ps, res[i].id, node->out[i]))
			return -ENOMEM;
	}
	return 0;
}

static int statement(struct parser *ps)
{
	const char *w;
	size_t n;

	skip_ws(ps);
	if (*ps->p == '%')
		return stmt_node(ps);
	n = word(ps, &w);
	if (word_is(w, n, "input"))
		return stmt_input(ps);
	if (word_is(w, n, "param"))
		return stmt_param(ps);
	if (word_is(w, n, "output"))
		return stmt_output(ps);
	if (word_is(w, n, "update"))
		return stmt_update(ps);
	if (word_is(w, n, "mesh"))
		return stmt_mesh(ps);
	if (n)
		return fail(ps, "unknown statement '%.*s'", shown(n), w);
	return fail_expected(ps, "a statement");
}

static int header(struct parser *ps)
{
	int64_t version;

	skip_ws(ps);
	if (strncmp(ps->p, "pcc-ir", 6) || (ps->p[6] != ' ' && ps->p[6] != '\t'))
		return fail_expected(ps, "'pcc-ir 1' header");
	ps->p += 6;
	if (parse_int(ps, &version))
		return -EINVAL;
	if (version != 1)
		return fail(ps, "unsupported IR text version %" PRId64 " (this reads 1)", version);
	return end_stmt(ps);
}

struct ir_graph *ir_parse(const char *text)
{
	struct parser ps = { .p = text, .line = 1 };
	bool seen_header = false;
	int rc = 0;

	ps.g = ir_graph_new();
	if (!ps.g) {
		fail_nomem();
		return NULL;
	}
	for (;;) {
		skip_ws(&ps);
		if (!at_eol(&ps)) {
			rc = seen_header ? statement(&ps) : header(&ps);
			if (rc)
				break;
			seen_header = true;
		}
		while (*ps.p && *ps.p != '\n')
			ps.p++; /* a comment */
		if (!*ps.p)
			break;
		ps.p++;
		if (ps.line < INT_MAX)
			ps.line++;
	}
	if (!rc && !seen_header)
		rc = fail(&ps, "expected 'pcc-ir 1' header, found end of text");
	ir_free(ps.defs);
	ir_free(ps.ops);
	if (rc) {
		ir_graph_free(ps.g);
		return NULL;
	}
	return ps.g;
}
