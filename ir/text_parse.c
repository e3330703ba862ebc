/*
 * text_parse.c: ir_parse, the IR text form read back (the grammar is at
 * the top of text.c): the value table (%N to values), statements, and the
 * checks that the text's types agree with shape inference.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text_internal.h"

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
			return tx_fail_nomem();
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

	if (tx_parse_ref(ps, &id))
		return -EINVAL;
	s = def_lookup(ps, id);
	if (!s)
		return tx_fail(ps, "%%%" PRId64 " used before definition", id);
	*v = s->v;
	return 0;
}

/* The sharding of a value of shape shape, after its '<'. */
static int parse_sharding(struct parser *ps, const struct ir_shape *shape, struct ir_sharding *out)
{
	const char *close = strchr(ps->p, '>'), *nl = strchr(ps->p, '\n');
	if (!close || (nl && nl < close))
		return tx_fail_expected(ps, "'>' closing the sharding");
	int n0, n1;
	ir_graph_mesh(ps->g, &n0, &n1);
	if (ir_sharding_parse(ps->p, (size_t)(close - ps->p), shape->rank, out) ||
	    ir_sharding_check(out, shape, n0, n1))
		return tx_fail(ps, "%s", ir_error());
	ps->p = close + 1;
	return 0;
}

/* "%N ["name"] : type" */
static int parse_def(struct parser *ps, struct def *d)
{
	struct def_slot *s;

	memset(d, 0, sizeof *d);
	if (tx_parse_ref(ps, &d->id))
		return -EINVAL;
	s = def_lookup(ps, d->id);
	if (s)
		return tx_fail(ps, "%%%" PRId64 " redefined (first defined on line %d)", d->id, s->line);
	if (tx_parse_name(ps, &d->name) || tx_expect(ps, ':') || tx_parse_type(ps, &d->dtype, &d->shape))
		return -EINVAL;
	if (!tx_accept(ps, '<'))
		return 0;
	d->sharded = true;
	return parse_sharding(ps, &d->shape, &d->sharding);
}

/* Copies a definition's sharding onto its value. */
static void annotate(struct ir_value *v, const struct def *d)
{
	v->sharded = d->sharded;
	v->sharding = d->sharding;
}

static int end_stmt(struct parser *ps)
{
	tx_skip_ws(ps);
	return tx_at_eol(ps) ? 0 : tx_fail_expected(ps, "end of line");
}

/* ---- statements ---------------------------------------------------------- */

/* An input's " classes=C [ignore=I]": class labels (ir.h), integers. */
static int parse_labels(struct parser *ps, struct ir_value *v)
{
	const char *w;
	tx_skip_ws(ps);
	if (tx_at_eol(ps))
		return 0;
	size_t n = tx_word(ps, &w);
	if (!tx_word_is(w, n, "classes")) {
		ps->p = w;
		return tx_fail_expected(ps, "classes=C or end of line");
	}
	if (tx_expect(ps, '=') || tx_parse_int(ps, &v->classes))
		return -EINVAL;
	if (v->classes < 1 || !ir_dtype_is_int(v->dtype))
		return tx_fail(ps, "classes=%" PRId64 ": labels are integers of at least one class", v->classes);
	tx_skip_ws(ps);
	if (tx_at_eol(ps))
		return 0;
	n = tx_word(ps, &w);
	if (!tx_word_is(w, n, "ignore")) {
		ps->p = w;
		return tx_fail_expected(ps, "ignore=I or end of line");
	}
	v->has_ignore = true;
	return tx_expect(ps, '=') || tx_parse_int(ps, &v->ignore) ? -EINVAL : 0;
}

static int stmt_input(struct parser *ps)
{
	struct def d;
	struct ir_value *v;

	if (parse_def(ps, &d))
		return -EINVAL;
	v = ir_graph_add_input(ps->g, d.name, d.dtype, &d.shape);
	if (!v)
		return tx_fail_builder(ps);
	annotate(v, &d);
	if (parse_labels(ps, v) || end_stmt(ps))
		return -EINVAL;
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
	tx_skip_ws(ps);
	start = ps->p;
	n = tx_word(ps, &w);
	if (tx_word_is(w, n, "hex")) {
		if (tx_parse_hex(ps, &data->bytes, &data->nbytes))
			return -EINVAL;
		if (data->nbytes != need)
			return tx_fail(ps, "%" PRId64 " bytes of hex, but %s needs %" PRId64, data->nbytes, type, need);
		return 0;
	}
	if (!tx_word_is(w, n, "external")) {
		ps->p = start;
		return tx_fail_expected(ps, "'hex' or 'external'");
	}
	if (tx_parse_string(ps, &data->path) || tx_expect_word(ps, "offset") || tx_parse_int(ps, &data->offset))
		return -EINVAL;
	if (data->offset < 0)
		return tx_fail(ps, "negative offset %" PRId64, data->offset);
	if (tx_expect_word(ps, "bytes") || tx_parse_int(ps, &data->nbytes))
		return -EINVAL;
	if (data->nbytes != need)
		return tx_fail(ps, "external data of %" PRId64 " bytes, but %s needs %" PRId64, data->nbytes, type,
			       need);
	tx_skip_ws(ps);
	if (!tx_at_eol(ps) && (tx_expect_word(ps, "base_dir") || tx_parse_string(ps, &data->base_dir)))
		return -EINVAL;
	return 0;
}

static int stmt_param(struct parser *ps)
{
	struct def d;
	struct ir_data data = { 0 };
	struct ir_value *v;

	if (parse_def(ps, &d) || tx_expect(ps, '=') || param_data(ps, &d, &data) || end_stmt(ps))
		return -EINVAL;
	v = ir_graph_add_param(ps->g, d.name, d.dtype, &d.shape, &data);
	if (!v)
		return tx_fail_builder(ps);
	annotate(v, &d);
	return define(ps, d.id, v);
}

static int stmt_output(struct parser *ps)
{
	struct ir_value *v;
	const char *name;

	if (parse_use(ps, &v) || tx_parse_name(ps, &name) || end_stmt(ps))
		return -EINVAL;
	if (ir_graph_add_output(ps->g, v, name) < 0)
		return tx_fail_builder(ps);
	return 0;
}

static int stmt_update(struct parser *ps)
{
	struct ir_value *p, *v;

	if (parse_use(ps, &p) || parse_use(ps, &v) || end_stmt(ps))
		return -EINVAL;
	if (p->kind != IR_VAL_PARAM)
		return tx_fail(ps, "update: the first value must be a param");
	if (ir_graph_add_update(ps->g, p, v) < 0)
		return tx_fail_builder(ps);
	return 0;
}

/* "schedule S: F0 F1 B0 B1": stage S's schedule (ir_graph_add_schedule),
 * the stages in order. */
static int stmt_schedule(struct parser *ps)
{
	int64_t s;
	int n = 0, cap = 0, rc = 0, *order = NULL;
	if (tx_parse_int(ps, &s) || tx_expect(ps, ':'))
		return -EINVAL;
	for (tx_skip_ws(ps); !tx_at_eol(ps) && rc == 0; tx_skip_ws(ps)) {
		const char *w;
		size_t len = tx_word(ps, &w);
		char buf[16], tail;
		long m;
		if (!tx_word_copy(w, len, buf, sizeof buf) || (buf[0] != 'F' && buf[0] != 'B') ||
		    sscanf(buf + 1, "%ld%c", &m, &tail) != 1 || m < 0 || m > 1 << 20 || buf[1] == '-' ||
		    buf[1] == '+') {
			ps->p = w;
			rc = tx_fail_expected(ps, "Fm or Bm (micro-batch m's forward or backward part)");
			break;
		}
		if (n == cap) {
			int *x = ir_realloc(order, sizeof *x * (size_t)(cap = cap ? 2 * cap : 16));
			if (!x) {
				rc = tx_fail_nomem();
				break;
			}
			order = x;
		}
		order[n++] = buf[0] == 'F' ? (int)m : -(int)m - 1;
	}
	if (rc == 0 && (s < 0 || s > INT_MAX || ir_graph_add_schedule(ps->g, (int)s, n, order) < 0))
		rc = s < 0 || s > INT_MAX ? tx_fail(ps, "schedule of stage %" PRId64 ": no such stage", s)
					  : tx_fail(ps, "%s", ir_error());
	ir_free(order);
	return rc ? rc : end_stmt(ps);
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
		return tx_fail(ps, "mesh given twice");
	size_t n = tx_word(ps, &w);
	if (!tx_word_copy(w, n, buf, sizeof buf) || sscanf(buf, "%ldx%ld%c", &n0, &n1, &tail) != 2) {
		ps->p = w;
		return tx_fail_expected(ps, "a mesh shape N0xN1");
	}
	if (n0 < 1 || n1 < 1 || n0 > 65536 || n1 > 65536)
		return tx_fail(ps, "mesh %ldx%ld: each axis must be 1 .. 65536", n0, n1);
	ir_graph_set_mesh(ps->g, (int)n0, (int)n1);
	return end_stmt(ps);
}

static int parse_attr(struct parser *ps, enum ir_op op, const struct op_syntax *syn, struct ir_attrs *a, unsigned *seen,
		      int64_t *data_bytes)
{
	const char *w;
	size_t n = tx_word(ps, &w);
	int at;
	char *field;

	if (!n)
		return tx_fail_expected(ps, "an attribute");
	for (at = 0; at < ATTR_COUNT && !tx_word_is(w, n, tx_attr_info[at].name); at++)
		;
	if (at == ATTR_COUNT)
		return tx_fail(ps, "unknown attribute '%.*s'", tx_shown(n), w);
	if (!(syn->attrs & (1u << at)))
		return tx_fail(ps, "%s has no attribute '%s'", ir_op_name(op), tx_attr_info[at].name);
	if (*seen & (1u << at))
		return tx_fail(ps, "attribute '%s' given twice", tx_attr_info[at].name);
	*seen |= 1u << at;
	if (tx_expect(ps, '='))
		return -EINVAL;
	field = (char *)a + tx_attr_info[at].offset;
	switch (tx_attr_info[at].kind) {
	case KIND_DTYPE:
		return tx_parse_dtype(ps, (enum ir_dtype *)(void *)field);
	case KIND_SHAPE:
		return tx_parse_shape(ps, (struct ir_shape *)(void *)field);
	case KIND_ILIST: {
		struct ir_ilist *l = (void *)field;
		return tx_parse_ints(ps, l->v, &l->n, "entries");
	}
	case KIND_INT:
		return tx_parse_int(ps, (int64_t *)(void *)field);
	case KIND_MODE:
		return tx_parse_mode(ps, op, syn, (int64_t *)(void *)field);
	case KIND_DOUBLE:
		return tx_parse_double(ps, (double *)(void *)field);
	case KIND_DATA:
		if (tx_expect_word(ps, "hex"))
			return -EINVAL;
		return tx_parse_hex(ps, &a->data, data_bytes);
	case KIND_COUNT:
		break;
	}
	ir_assert_fail(__FILE__, __LINE__, "attr kind out of range");
}

/* A node's " tag=N" (or "tag=all") and " recompute=K" after its
 * attributes (ir_node.tag, .recompute): 1 when the next word is one of
 * them, parsed into *tag or *recompute; 0 when it is not (the cursor left
 * as it was); -EINVAL with a message when it is malformed. */
static int parse_node_mark(struct parser *ps, int *tag, int *recompute, unsigned *seen)
{
	const char *start = ps->p, *w;
	size_t n = tx_word(ps, &w);
	bool is_tag = tx_word_is(w, n, "tag");
	int64_t v;
	if (!is_tag && !tx_word_is(w, n, "recompute")) {
		ps->p = start;
		return 0;
	}
	unsigned bit = is_tag ? 1u : 2u;
	if (*seen & bit)
		return tx_fail(ps, "'%s' given twice", is_tag ? "tag" : "recompute");
	*seen |= bit;
	if (tx_expect(ps, '='))
		return -EINVAL;
	tx_skip_ws(ps);
	const char *at = ps->p;
	if (is_tag && tx_word(ps, &w) == 3 && !memcmp(w, "all", 3)) {
		*tag = IR_TAG_ALL;
		return 1;
	}
	ps->p = at;
	if (tx_parse_int(ps, &v))
		return -EINVAL;
	if (v < (is_tag ? 0 : 1) || v > INT32_MAX)
		return tx_fail(ps, "%s=%" PRId64 ": %s", is_tag ? "tag" : "recompute", v,
			       is_tag ? "a tag is a number from 0, or all" : "a segment is a number from 1");
	*(is_tag ? tag : recompute) = (int)v;
	return 1;
}

static int grow_ops(struct parser *ps, int need)
{
	struct ir_value **ops;
	struct ir_sharding *sh;
	int cap;

	if (need <= ps->ops_cap)
		return 0;
	cap = ps->ops_cap ? ps->ops_cap * 2 : 16;
	ops = ir_realloc(ps->ops, sizeof *ops * (size_t)cap);
	if (!ops)
		return tx_fail_nomem();
	ps->ops = ops;
	sh = ir_realloc(ps->ops_sh, sizeof *sh * (size_t)cap);
	if (!sh)
		return tx_fail_nomem();
	ps->ops_sh = sh;
	ps->ops_cap = cap;
	return 0;
}

/* Everything the text says about a node that the builder cannot check:
 * result and operand counts, and the size of a constant's data. */
static int check_node(struct parser *ps, enum ir_op op, int nres, int nin, const struct ir_attrs *a, unsigned seen,
		      int64_t data_bytes)
{
	const char *name = ir_op_name(op);
	int want = ir_op_ninputs(op);

	if (nres != ir_op_noutputs(op))
		return tx_fail(ps, "%s has %d result%s, the text names %d", name, ir_op_noutputs(op),
			       ir_op_noutputs(op) == 1 ? "" : "s", nres);
	if (want >= 0 && nin != want)
		return tx_fail(ps, "%s takes %d operand%s, got %d", name, want, want == 1 ? "" : "s", nin);
	if (want < 0 && nin < 1)
		return tx_fail(ps, "%s takes at least one operand", name);
	if (tx_op_syntax(op).attrs & A(DATA)) {
		/* a.shape passed ir_shape_check if given, and is [] if not */
		int64_t need = type_bytes(a->dtype, &a->shape);
		char shape[IR_SHAPE_STR_MAX];
		if (!(seen & A(DATA)) && need > 0)
			return tx_fail(ps, "%s needs data=hex \"...\"", name);
		if ((seen & A(DATA)) && data_bytes != need)
			return tx_fail(ps, "%s data has %" PRId64 " bytes, %s%s needs %" PRId64, name, data_bytes,
				       ir_dtype_name(a->dtype), ir_shape_str(&a->shape, shape, sizeof shape), need);
	}
	return 0;
}

static int check_result(struct parser *ps, const struct ir_node *n, int i, const struct def *d)
{
	const struct ir_value *v = n->out[i];
	char want[IR_SHAPE_STR_MAX], got[IR_SHAPE_STR_MAX];

	if (v->dtype == d->dtype && ir_shape_eq(&v->shape, &d->shape))
		return 0;
	return tx_fail(ps, "%%%" PRId64 " is %s%s in the text, but %s gives %s%s", d->id, ir_dtype_name(d->dtype),
		       ir_shape_str(&d->shape, want, sizeof want), ir_op_name(n->op), ir_dtype_name(v->dtype),
		       ir_shape_str(&v->shape, got, sizeof got));
}

static int parse_op(struct parser *ps, enum ir_op *op)
{
	const char *w;
	size_t n = tx_word(ps, &w);
	char buf[32];

	if (!n)
		return tx_fail_expected(ps, "an op");
	if (!tx_word_copy(w, n, buf, sizeof buf) || ir_op_parse(buf, op))
		return tx_fail(ps, "unknown op '%.*s'", tx_shown(n), w);
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
	int nres = 0, nin = 0, nsh = 0, tag = IR_TAG_NONE, recompute = 0;
	unsigned seen = 0, marks = 0;
	int64_t data_bytes = 0;

	memset(&a, 0, sizeof a);
	do {
		if (nres == MAX_RESULTS)
			return tx_fail(ps, "more than %d results", MAX_RESULTS);
		if (parse_def(ps, &res[nres]))
			return -EINVAL;
		for (int i = 0; i < nres; i++)
			if (res[i].id == res[nres].id)
				return tx_fail(ps, "%%%" PRId64 " defined twice", res[i].id);
		nres++;
	} while (tx_accept(ps, ','));
	if (tx_expect(ps, '=') || parse_op(ps, &op))
		return -EINVAL;
	syn = tx_op_syntax(op);
	tx_skip_ws(ps);
	if (*ps->p == '%') {
		do {
			if (nin == MAX_OPERANDS)
				return tx_fail(ps, "more than %d operands", MAX_OPERANDS);
			if (grow_ops(ps, nin + 1) || parse_use(ps, &ps->ops[nin]))
				return -EINVAL;
			if (tx_accept(ps, '<')) {
				struct ir_sharding *sh = &ps->ops_sh[nin];
				if (parse_sharding(ps, &ps->ops[nin]->shape, sh))
					return -EINVAL;
				if (sh->partial)
					return tx_fail(ps,
						       "operand %d read as partial sums: an operand's sharding "
						       "splits or replicates it",
						       nin);
				nsh++;
			}
			nin++;
		} while (tx_accept(ps, ','));
	}
	if (nsh && nsh != nin)
		return tx_fail(ps, "shardings for %d of %d operands: give every operand's or none", nsh, nin);
	for (tx_skip_ws(ps); !tx_at_eol(ps) && *ps->p != '@'; tx_skip_ws(ps)) {
		int mark = parse_node_mark(ps, &tag, &recompute, &marks);
		if (mark < 0 || (!mark && parse_attr(ps, op, &syn, &a, &seen, &data_bytes)))
			return -EINVAL;
	}
	if (tx_accept(ps, '@') && tx_parse_string(ps, &name))
		return -EINVAL;
	if (end_stmt(ps) || check_node(ps, op, nres, nin, &a, seen, data_bytes))
		return -EINVAL;

	node = ir_graph_add_node(ps->g, op, name, nin, ps->ops, &a);
	if (!node)
		return tx_fail_builder(ps);
	IR_ASSERT(node->nout == nres);
	node->tag = tag;
	node->recompute = recompute;
	if (nsh && ir_node_set_in_sharding(ps->g, node, ps->ops_sh) < 0)
		return tx_fail_nomem();
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

	tx_skip_ws(ps);
	if (*ps->p == '%')
		return stmt_node(ps);
	n = tx_word(ps, &w);
	if (tx_word_is(w, n, "input"))
		return stmt_input(ps);
	if (tx_word_is(w, n, "param"))
		return stmt_param(ps);
	if (tx_word_is(w, n, "output"))
		return stmt_output(ps);
	if (tx_word_is(w, n, "update"))
		return stmt_update(ps);
	if (tx_word_is(w, n, "mesh"))
		return stmt_mesh(ps);
	if (tx_word_is(w, n, "schedule"))
		return stmt_schedule(ps);
	if (n)
		return tx_fail(ps, "unknown statement '%.*s'", tx_shown(n), w);
	return tx_fail_expected(ps, "a statement");
}

static int header(struct parser *ps)
{
	int64_t version;

	tx_skip_ws(ps);
	if (strncmp(ps->p, "pcc-ir", 6) || (ps->p[6] != ' ' && ps->p[6] != '\t'))
		return tx_fail_expected(ps, "'pcc-ir 1' header");
	ps->p += 6;
	if (tx_parse_int(ps, &version))
		return -EINVAL;
	if (version != 1)
		return tx_fail(ps, "unsupported IR text version %" PRId64 " (this reads 1)", version);
	return end_stmt(ps);
}

struct ir_graph *ir_parse(const char *text)
{
	struct parser ps = { .p = text, .line = 1 };
	bool seen_header = false;
	int rc = 0;

	ps.g = ir_graph_new();
	if (!ps.g) {
		tx_fail_nomem();
		return NULL;
	}
	for (;;) {
		tx_skip_ws(&ps);
		if (!tx_at_eol(&ps)) {
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
		rc = tx_fail(&ps, "expected 'pcc-ir 1' header, found end of text");
	ir_free(ps.defs);
	ir_free(ps.ops);
	ir_free(ps.ops_sh);
	if (rc) {
		ir_graph_free(ps.g);
		return NULL;
	}
	return ps.g;
}
