/*
 * text_internal.h: shared by the IR text form's files and nothing else:
 * text_syntax.c (the attributes each op reads), text.c (printing),
 * text_lex.c (the parser's tokens and values), text_parse.c (statements
 * and ir_parse).
 */
#ifndef PCC_IR_TEXT_INTERNAL_H
#define PCC_IR_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

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

enum attr_kind { KIND_DTYPE, KIND_SHAPE, KIND_ILIST, KIND_INT, KIND_MODE, KIND_DOUBLE, KIND_DATA, KIND_COUNT };

struct tx_attr_row {
	const char *name;
	enum attr_kind kind;
	size_t offset; /* into struct ir_attrs */
};
extern const struct tx_attr_row tx_attr_info[ATTR_COUNT];

#define A(x) (1u << ATTR_##x)

struct op_syntax {
	unsigned attrs;           /* A() bits: the fields the op reads (ir.h) */
	const char *const *modes; /* name of each mode value, or NULL */
	int nmodes;
};

/* The attributes op reads and the names of its modes. */
struct op_syntax tx_op_syntax(enum ir_op op);

/* Bytes of a tensor whose shape passed ir_shape_check (cannot overflow). */
static inline int64_t type_bytes(enum ir_dtype t, const struct ir_shape *s)
{
	return ir_shape_numel(s) * (int64_t)ir_dtype_size(t);
}

/* The quiet NaNs printed as nan and -nan (others by payload). */
#define NAN_BITS UINT64_C(0x7ff8000000000000)
#define NEG_NAN_BITS UINT64_C(0xfff8000000000000)

/* ---- the parser's state (text_lex.c, text_parse.c) ---- */

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
	struct ir_value **ops;      /* operands of the node being parsed */
	struct ir_sharding *ops_sh; /* [ops_cap]: their shardings, where the text gives them */
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

/* Tokens and values (text_lex.c); errors set ir_error() to "line N: ..."
 * and return a negative errno. */
bool tx_at_eol(const struct parser *ps);
void tx_skip_ws(struct parser *ps);
__attribute__((format(printf, 2, 3))) int tx_fail(struct parser *ps, const char *fmt, ...);
int tx_fail_expected(struct parser *ps, const char *what);
int tx_fail_builder(struct parser *ps);
int tx_fail_nomem(void);
bool tx_accept(struct parser *ps, char c);
int tx_expect(struct parser *ps, char c);
size_t tx_word(struct parser *ps, const char **start);
bool tx_word_is(const char *w, size_t n, const char *s);
int tx_shown(size_t n);
int tx_expect_word(struct parser *ps, const char *s);
bool tx_word_copy(const char *w, size_t n, char *buf, size_t size);
int tx_parse_int(struct parser *ps, int64_t *out);
int tx_parse_ref(struct parser *ps, int64_t *id);
int tx_parse_double(struct parser *ps, double *out);
int tx_parse_string(struct parser *ps, const char **out);
int tx_parse_name(struct parser *ps, const char **out);
int tx_parse_hex(struct parser *ps, const void **out, int64_t *nbytes);
int tx_parse_ints(struct parser *ps, int64_t *v, int *n, const char *what);
int tx_parse_shape(struct parser *ps, struct ir_shape *s);
int tx_parse_dtype(struct parser *ps, enum ir_dtype *t);
int tx_parse_type(struct parser *ps, enum ir_dtype *t, struct ir_shape *s);
int tx_parse_mode(struct parser *ps, enum ir_op op, const struct op_syntax *syn, int64_t *m);

#endif
