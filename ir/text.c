/*
 * text.c: the IR's text form: ir_print here, ir_parse in text_parse.c
 * (its tokens in text_lex.c; the attributes each op reads in text_syntax.c).
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
 *   stmt  := "input" def [ "classes=" INT [ "ignore=" INT ] ]   class labels (ir.h)
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

#include "ir/text_internal.h"

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

static void put_attr(FILE *f, const struct ir_attrs *a, enum attr at, const struct op_syntax *syn)
{
	const char *field = (const char *)a + tx_attr_info[at].offset;

	fprintf(f, " %s=", tx_attr_info[at].name);
	switch (tx_attr_info[at].kind) {
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
	struct op_syntax syn = tx_op_syntax(n->op);

	for (int i = 0; i < n->nout; i++) {
		if (i)
			fputs(", ", f);
		put_def(f, num[n->out[i]->id], n->out[i]);
	}
	fprintf(f, " = %s", ir_op_name(n->op));
	for (int i = 0; i < n->nin; i++) {
		IR_ASSERT(num[n->in[i]->id] >= 0);
		fprintf(f, "%s%%%d", i ? ", " : " ", num[n->in[i]->id]);
		if (n->in_sharding) {
			char buf[IR_SHARDING_STR_MAX];
			fprintf(f, " %s", ir_sharding_str(&n->in_sharding[i], n->in[i]->shape.rank, buf, sizeof buf));
		}
	}
	for (int at = 0; at < ATTR_COUNT; at++)
		if (syn.attrs & (1u << at))
			put_attr(f, &n->a, (enum attr)at, &syn);
	if (n->tag == IR_TAG_ALL)
		fputs(" tag=all", f);
	else if (n->tag != IR_TAG_NONE)
		fprintf(f, " tag=%d", n->tag);
	if (n->recompute)
		fprintf(f, " recompute=%d", n->recompute);
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
		if (v->classes)
			fprintf(f, " classes=%" PRId64, v->classes);
		if (v->classes && v->has_ignore)
			fprintf(f, " ignore=%" PRId64, v->ignore);
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
	for (int s = 0; s < ir_graph_nschedules(g); s++) {
		int n;
		const int *order = ir_graph_schedule(g, s, &n);
		fprintf(f, "schedule %d:", s);
		for (int i = 0; i < n; i++)
			fprintf(f, " %c%d", order[i] >= 0 ? 'F' : 'B', order[i] >= 0 ? order[i] : -order[i] - 1);
		fputc('\n', f);
	}
	ir_free(num);
	if (ferror(f))
		return ir_errorf(-EIO, "write error printing the graph");
	return 0;
}
