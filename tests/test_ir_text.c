/*
 * test_ir_text.c: the IR text form (ir/text.c).
 *
 *  - every .ir file in tests/ir (the directory is argv[1]) is canonical: parsing
 *    and printing it gives the file back without its '#' lines, printing
 *    the reparsed graph gives the same bytes, and both graphs are equal
 *    field by field; together the files cover every op and dtype;
 *  - a graph built with the C API survives print -> parse -> print;
 *  - lenient input (comments, sparse ids, attributes in any order or left
 *    out, CRLF) prints as the expected canonical text;
 *  - malformed input fails with "line N: ..." naming the problem;
 *  - every prefix and random mutations of the files, and every allocation
 *    failure, end in a graph or a clean error (run under ASan or valgrind
 *    to check that nothing leaks or reads out of bounds).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "tap.h"

#ifndef PCC_IR_TEST_DIR
#define PCC_IR_TEST_DIR "tests/ir"
#endif

/* ---- helpers ----------------------------------------------------------- */

static char *print_str(const struct ir_graph *g)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	if (!f)
		return NULL;
	if (ir_print(g, f) < 0) {
		fclose(f);
		free(s);
		return NULL;
	}
	fclose(f);
	return s;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (s = malloc((size_t)n + 1)) && fread(s, 1, (size_t)n, f) == (size_t)n)
		s[n] = '\0';
	else
		free(s), s = NULL;
	fclose(f);
	return s;
}

/* The text without its whole-line '#' comments: what the printer writes. */
static char *strip_comments(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t n = eol ? (size_t)(eol - s) + 1 : strlen(s);
		if (*s != '#') {
			memcpy(o, s, n);
			o += n;
		}
		s += n;
	}
	*o = '\0';
	return out;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool ilist_eq(const struct ir_ilist *a, const struct ir_ilist *b)
{
	return a->n == b->n && !memcmp(a->v, b->v, sizeof a->v[0] * (size_t)a->n);
}

static bool bits_eq(double a, double b)
{
	return !memcmp(&a, &b, sizeof a);
}

static bool attrs_eq(enum ir_op op, const struct ir_attrs *a, const struct ir_attrs *b)
{
	bool data_eq = op == IR_OP_CONSTANT
			       ? a->data && b->data &&
					 !memcmp(a->data, b->data,
						 ir_tensor_bytes(&(struct ir_tensor){ a->dtype, a->shape, NULL }))
			       : !a->data && !b->data;

	return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape) && ilist_eq(&a->axes, &b->axes) &&
	       ilist_eq(&a->lhs_batch, &b->lhs_batch) && ilist_eq(&a->rhs_batch, &b->rhs_batch) &&
	       ilist_eq(&a->lhs_contract, &b->lhs_contract) && ilist_eq(&a->rhs_contract, &b->rhs_contract) &&
	       ilist_eq(&a->start, &b->start) && ilist_eq(&a->limit, &b->limit) && ilist_eq(&a->stride, &b->stride) &&
	       ilist_eq(&a->pad_lo, &b->pad_lo) && ilist_eq(&a->pad_hi, &b->pad_hi) &&
	       ilist_eq(&a->window, &b->window) && ilist_eq(&a->dilation, &b->dilation) && a->axis == b->axis &&
	       a->k == b->k && a->groups == b->groups && a->mode == b->mode && bits_eq(a->eps, b->eps) &&
	       bits_eq(a->value, b->value) && data_eq;
}

static bool value_eq(const struct ir_value *a, const struct ir_value *b)
{
	const struct ir_data *x = &a->data, *y = &b->data;

	if (a->id != b->id || !str_eq(a->name, b->name) || a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape) ||
	    a->kind != b->kind || a->sharded != b->sharded ||
	    (a->sharded && memcmp(&a->sharding, &b->sharding, sizeof a->sharding)))
		return false;
	if (a->kind == IR_VAL_NODE)
		return a->def->id == b->def->id && a->def_index == b->def_index;
	if (a->kind == IR_VAL_INPUT)
		return true;
	return !x->bytes == !y->bytes && (!x->bytes || !memcmp(x->bytes, y->bytes, (size_t)x->nbytes)) &&
	       str_eq(x->path, y->path) && str_eq(x->base_dir, y->base_dir) && x->offset == y->offset &&
	       x->nbytes == y->nbytes;
}

/* Field by field, with values matched by id (both graphs in print order). */
static bool graph_eq(const struct ir_graph *a, const struct ir_graph *b)
{
	int a0, a1, b0, b1;
	ir_graph_mesh(a, &a0, &a1);
	ir_graph_mesh(b, &b0, &b1);
	if (a0 != b0 || a1 != b1 || ir_graph_nschedules(a) != ir_graph_nschedules(b))
		return false;
	for (int s = 0; s < ir_graph_nschedules(a); s++) {
		int na, nb;
		const int *x = ir_graph_schedule(a, s, &na), *y = ir_graph_schedule(b, s, &nb);
		if (na != nb || memcmp(x, y, sizeof *x * (size_t)na))
			return false;
	}
	if (ir_graph_nvalues(a) != ir_graph_nvalues(b) || ir_graph_nnodes(a) != ir_graph_nnodes(b) ||
	    ir_graph_ninputs(a) != ir_graph_ninputs(b) || ir_graph_nparams(a) != ir_graph_nparams(b) ||
	    ir_graph_noutputs(a) != ir_graph_noutputs(b))
		return false;
	for (int i = 0; i < ir_graph_nvalues(a); i++)
		if (!value_eq(ir_graph_value(a, i), ir_graph_value(b, i)))
			return false;
	for (int i = 0; i < ir_graph_ninputs(a); i++)
		if (ir_graph_input(a, i)->id != ir_graph_input(b, i)->id)
			return false;
	for (int i = 0; i < ir_graph_nparams(a); i++)
		if (ir_graph_param(a, i)->id != ir_graph_param(b, i)->id)
			return false;
	for (int i = 0; i < ir_graph_nnodes(a); i++) {
		const struct ir_node *x = ir_graph_node(a, i), *y = ir_graph_node(b, i);
		if (x->op != y->op || !str_eq(x->name, y->name) || x->nin != y->nin || x->nout != y->nout ||
		    !attrs_eq(x->op, &x->a, &y->a) || x->tag != y->tag || x->recompute != y->recompute)
			return false;
		for (int j = 0; j < x->nin; j++)
			if (x->in[j]->id != y->in[j]->id)
				return false;
		if (!x->in_sharding != !y->in_sharding ||
		    (x->in_sharding && memcmp(x->in_sharding, y->in_sharding, sizeof *x->in_sharding * (size_t)x->nin)))
			return false;
		for (int j = 0; j < x->nout; j++)
			if (x->out[j]->id != y->out[j]->id)
				return false;
	}
	for (int i = 0; i < ir_graph_noutputs(a); i++)
		if (ir_graph_output(a, i)->id != ir_graph_output(b, i)->id ||
		    !str_eq(ir_graph_output_name(a, i), ir_graph_output_name(b, i)))
			return false;
	return true;
}

/* print(g) is want; parse(print(g)) equals g and prints the same bytes. */
static void check_round_trip(const struct ir_graph *g, const char *want, const char *what)
{
	char *s1 = print_str(g), *s2 = NULL;
	struct ir_graph *g2 = s1 ? ir_parse(s1) : NULL;

	if (!TAP_OK(s1 && (!want || !strcmp(s1, want)), "%s: prints canonically", what) && s1 && want)
		tap_diff(want, s1);
	if (!TAP_OK(g2, "%s: printed text parses", what))
		TAP_DIAG("%s", ir_error());
	if (g2)
		s2 = print_str(g2);
	if (!TAP_OK(s1 && s2 && !strcmp(s1, s2), "%s: print(parse(print(g))) == print(g)", what) && s1 && s2)
		tap_diff(s1, s2);
	TAP_OK(g2 && graph_eq(g, g2), "%s: parse(print(g)) equals g field by field", what);
	TAP_OK(g2 && ir_verify(g2) == 0, "%s: reparsed graph verifies", what);
	ir_graph_free(g2);
	free(s1);
	free(s2);
}

/* ---- the example files --------------------------------------------------- */

static bool op_seen[IR_OP_COUNT], dtype_seen[IR_DTYPE_COUNT];

static void note_coverage(const struct ir_graph *g)
{
	for (int i = 0; i < ir_graph_nnodes(g); i++)
		op_seen[ir_graph_node(g, i)->op] = true;
	for (int i = 0; i < ir_graph_nvalues(g); i++)
		dtype_seen[ir_graph_value(g, i)->dtype] = true;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted *.ir names in dir; NULL-terminated, malloc'd. */
static char **list_ir_files(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	struct dirent *e;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 3 && !strcmp(e->d_name + len - 3, ".ir")) {
			names = realloc(names, sizeof *names * (size_t)(*n + 2));
			names[(*n)++] = strdup(e->d_name);
		}
	}
	closedir(d);
	if (names) {
		qsort(names, (size_t)*n, sizeof *names, cmp_names);
		names[*n] = NULL;
	}
	return names;
}

/* Accepted text must round-trip too; rejected text needs a line number. */
static bool parse_is_clean(const char *text)
{
	struct ir_graph *g;
	bool ok;

	ir_error_clear();
	g = ir_parse(text);
	if (!g)
		return !strncmp(ir_error(), "line ", 5);
	char *s1 = print_str(g);
	struct ir_graph *g2 = s1 ? ir_parse(s1) : NULL;
	char *s2 = g2 ? print_str(g2) : NULL;
	ok = s1 && s2 && !strcmp(s1, s2);
	if (!ok)
		TAP_DIAG("accepted but does not round-trip:\n%s", text);
	free(s1);
	free(s2);
	ir_graph_free(g2);
	ir_graph_free(g);
	return ok;
}

/* Every prefix, each in a buffer of exactly its size so that an over-read
 * shows under ASan or valgrind. */
static bool prefixes_are_clean(const char *text)
{
	size_t n = strlen(text);
	bool ok = true;

	for (size_t len = 0; len <= n; len++) {
		char *buf = malloc(len + 1);
		memcpy(buf, text, len);
		buf[len] = '\0';
		if (!parse_is_clean(buf)) {
			TAP_DIAG("prefix of %zu bytes: %s", len, ir_error());
			ok = false;
		}
		free(buf);
	}
	return ok;
}

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Small edits that hit the syntax: replace, insert or delete a byte. */
static bool mutations_are_clean(const char *text, int rounds)
{
	static const char interesting[] = "%\"\\[],=:@#\n 0189-+.xeafinX\x01\xff";
	size_t n = strlen(text);
	bool ok = true;

	for (int r = 0; r < rounds && n; r++) {
		char *buf = malloc(n + 2);
		size_t pos = rng() % n, len = n;
		char c = rng() % 4 ? interesting[rng() % (sizeof interesting - 1)] : (char)(rng() % 255 + 1);
		memcpy(buf, text, n + 1);
		switch (rng() % 3) {
		case 0:
			buf[pos] = c;
			break;
		case 1:
			memmove(buf + pos + 1, buf + pos, n - pos + 1);
			buf[pos] = c;
			len++;
			break;
		case 2:
			memmove(buf + pos, buf + pos + 1, n - pos);
			len--;
			break;
		}
		buf[len] = '\0';
		if (!parse_is_clean(buf)) {
			TAP_DIAG("mutation %d: %s", r, ir_error());
			ok = false;
		}
		free(buf);
	}
	return ok;
}

static void test_file(const char *dir, const char *name, char **all_text)
{
	char path[4096];
	char *text, *want;
	struct ir_graph *g;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	text = read_file(path);
	if (!TAP_OK(text, "%s: readable", name))
		return;
	want = strip_comments(text);
	ir_error_clear();
	g = ir_parse(text);
	if (!TAP_OK(g, "%s: parses", name))
		TAP_DIAG("%s", ir_error());
	if (g) {
		TAP_OK(ir_verify(g) == 0, "%s: verifies", name);
		check_round_trip(g, want, name);
		note_coverage(g);
		ir_graph_free(g);
	}
	TAP_OK(prefixes_are_clean(text), "%s: every prefix parses or fails cleanly", name);
	TAP_OK(mutations_are_clean(text, 2000), "%s: mutations parse or fail cleanly", name);

	size_t have = *all_text ? strlen(*all_text) : 0;
	*all_text = realloc(*all_text, have + strlen(text) + 1);
	strcpy(*all_text + have, text);
	free(want);
	free(text);
}

/* Spellings the files must exercise between them, beyond ops and dtypes. */
static const char *const must_appear[] = {
	"mode=first",
	"mode=last",
	"mode=inclusive",
	"mode=exclusive\n",
	"mode=reverse",
	"mode=exclusive_reverse",
	"mode=constant",
	"mode=edge",
	"mode=reflect",
	"mode=none",
	"mode=add",
	"mode=mul",
	"mode=max",
	"mode=min",
	"mode=largest",
	"mode=smallest",
	"= external ",
	" base_dir ",
	"= hex ",
	"data=hex ",
	"value=0.1\n",
	"value=-0\n",
	"value=inf\n",
	"value=-inf\n",
	"value=nan\n",
	"value=-nan\n",
	"value=nan:0x",
	"eps=1e-05",
	"\\\"",
	"\\\\",
	"\\n",
	"\\t",
	"\\x",
	" @\"",
	": f32[]",
	"[0,",
	"output %",
	" classes=4 ignore=-100\n",
	" classes=4\n",
};

static void test_files(const char *dir)
{
	int n;
	char **names = list_ir_files(dir, &n);
	char *all = NULL;

	if (!TAP_OK(n > 0, "found .ir files in %s", dir))
		return;
	for (int i = 0; i < n; i++) {
		test_file(dir, names[i], &all);
		free(names[i]);
	}
	free(names);
	for (int op = 0; op < IR_OP_COUNT; op++)
		TAP_OK(op_seen[op], "the files use op %s", ir_op_name((enum ir_op)op));
	for (int t = 0; t < IR_DTYPE_COUNT; t++)
		TAP_OK(dtype_seen[t], "the files use dtype %s", ir_dtype_name((enum ir_dtype)t));
	for (size_t i = 0; i < sizeof must_appear / sizeof must_appear[0]; i++)
		TAP_OK(all && strstr(all, must_appear[i]), "the files contain '%.*s'",
		       (int)strcspn(must_appear[i], "\n"), must_appear[i]);
	free(all);
}

/* ---- a graph from the C API ------------------------------------------------ */

static struct ir_value *out0(struct ir_graph *g, enum ir_op op, const char *name, int nin, struct ir_value *const *in,
			     const struct ir_attrs *a)
{
	struct ir_node *n = ir_graph_add_node(g, op, name, nin, in, a);
	if (!n)
		TAP_DIAG("add_node %s: %s", ir_op_name(op), ir_error());
	return n ? n->out[0] : NULL;
}

static double nan_with_payload(void)
{
	uint64_t u = 0x7ff4000000000123ULL;
	double d;
	memcpy(&d, &u, sizeof d);
	return d;
}

static void test_api_graph(void)
{
	static const float w_bytes[6] = { 1, 2, 3, 4, 5, -0.0f };
	static const uint16_t half[3] = { 0x3c00, 0x8000, 0x7e00 };
	struct ir_graph *g = ir_graph_new();
	struct ir_shape s23 = { 2, { 2, 3 } }, s32 = { 2, { 3, 2 } }, s3 = { 1, { 3 } };
	struct ir_data inl = { .bytes = w_bytes, .nbytes = sizeof w_bytes };
	struct ir_data ext = { .path = "w 2.bin", .base_dir = "/m\\d", .offset = 16, .nbytes = 24 };
	struct ir_value *x = ir_graph_add_input(g, "x \"in\"\n", IR_F32, &s23);
	struct ir_value *w = ir_graph_add_param(g, "w", IR_F32, &s32, &inl);
	struct ir_value *w2 = ir_graph_add_param(g, NULL, IR_F32, &s32, &ext);
	struct ir_value *h = out0(g, IR_OP_DOT, "/MatMul", 2, (struct ir_value *[]){ x, w },
				  &(struct ir_attrs){ .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) });
	struct ir_value *h2 = out0(g, IR_OP_DOT, NULL, 2, (struct ir_value *[]){ x, w2 },
				   &(struct ir_attrs){ .lhs_contract = IR_ILIST(1), .rhs_contract = IR_ILIST(0) });
	struct ir_value *sum = out0(g, IR_OP_ADD, "", 2, (struct ir_value *[]){ h, h2 }, &(struct ir_attrs){ 0 });
	struct ir_value *p = out0(g, IR_OP_PAD, "pad", 1, &sum,
				  &(struct ir_attrs){ .pad_lo = IR_ILIST(1, 0),
						      .pad_hi = IR_ILIST(0, 2),
						      .mode = IR_PAD_CONSTANT,
						      .value = nan_with_payload() });
	struct ir_value *pe = out0(g, IR_OP_PAD, NULL, 1, &sum,
				   &(struct ir_attrs){ .pad_lo = IR_ILIST(1, 1),
						       .pad_hi = IR_ILIST(1, 1),
						       .mode = IR_PAD_EDGE,
						       .value = -0.0 });
	struct ir_value *scale = ir_graph_add_input(g, "", IR_F32, &s3);
	struct ir_value *ln = out0(g, IR_OP_LAYER_NORM, "ln", 3, (struct ir_value *[]){ x, scale, scale },
				   &(struct ir_attrs){ .axis = 1, .eps = 1e-5 });
	struct ir_value *c = out0(g, IR_OP_CONSTANT, "c", 0, NULL,
				  &(struct ir_attrs){ .dtype = IR_F16, .shape = s3, .data = half });
	struct ir_value *cv = out0(g, IR_OP_CONVERT, NULL, 1, &c, &(struct ir_attrs){ .dtype = IR_BF16 });
	struct ir_node *tk = ir_graph_add_node(g, IR_OP_TOPK, "topk", 1, &ln,
					       &(struct ir_attrs){ .axis = 1, .k = 2, .mode = IR_TOPK_SMALLEST });

	if (!TAP_OK(x && w && w2 && h && h2 && sum && p && pe && scale && ln && c && cv && tk, "C API graph builds")) {
		ir_graph_free(g);
		return;
	}
	/* inputs were added after nodes: the printer still lists them first,
	 * so compare against the reparsed graph's text, not ids */
	h->name = "h";
	tk->out[1]->name = "topk idx";
	ir_graph_add_output(g, p, "padded");
	ir_graph_add_output(g, pe, NULL);
	ir_graph_add_output(g, cv, "");
	ir_graph_add_output(g, tk->out[0], "values");

	static const char want[] =
		"pcc-ir 1\n"
		"input %0 \"x \\\"in\\\"\\n\" : f32[2,3]\n"
		"input %1 \"\" : f32[3]\n"
		"param %2 \"w\" : f32[3,2] = hex \"0000803f0000004000004040000080400000a04000000080\"\n"
		"param %3 : f32[3,2] = external \"w 2.bin\" offset 16 bytes 24 base_dir \"/m\\\\d\"\n"
		"%4 \"h\" : f32[2,2] = dot %0, %2 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0] @\"/MatMul\"\n"
		"%5 : f32[2,2] = dot %0, %3 lhs_batch=[] rhs_batch=[] lhs_contract=[1] rhs_contract=[0]\n"
		"%6 : f32[2,2] = add %4, %5 @\"\"\n"
		"%7 : f32[3,4] = pad %6 pad_lo=[1,0] pad_hi=[0,2] mode=constant value=nan:0x7ff4000000000123 @\"pad\"\n"
		"%8 : f32[4,4] = pad %6 pad_lo=[1,1] pad_hi=[1,1] mode=edge value=-0\n"
		"%9 : f32[2,3] = layer_norm %0, %1, %1 axis=1 eps=1e-05 @\"ln\"\n"
		"%10 : f16[3] = constant dtype=f16 shape=[3] data=hex \"003c0080007e\" @\"c\"\n"
		"%11 : bf16[3] = convert %10 dtype=bf16\n"
		"%12 : f32[2,2], %13 \"topk idx\" : i64[2,2] = topk %9 axis=1 k=2 mode=smallest @\"topk\"\n"
		"output %7 \"padded\"\n"
		"output %8\n"
		"output %11 \"\"\n"
		"output %12 \"values\"\n";
	char *s1 = print_str(g);
	if (!TAP_OK(s1 && !strcmp(s1, want), "C API graph prints as expected") && s1)
		tap_diff(want, s1);

	/* the reparsed graph is in print order, so it round-trips by ids too */
	struct ir_graph *g2 = s1 ? ir_parse(s1) : NULL;
	if (!TAP_OK(g2, "C API graph's text parses"))
		TAP_DIAG("%s", ir_error());
	if (g2)
		check_round_trip(g2, want, "C API graph");
	ir_graph_free(g2);
	free(s1);
	ir_graph_free(g);
}

/* ---- lenient input ---------------------------------------------------------- */

static void test_lenient(void)
{
	static const char text[] = "# leading comment\n"
				   "\n"
				   "  pcc-ir 1   # header comment\n"
				   "input %10 \"x\" : f32[2,3]\r\n"
				   "%7 : f32[3,2] = transpose %10 axes=[1,0]   # trailing comment\n"
				   "%3:f32[2,3]=transpose %7 axes=[ 1 , 0 ]\n"
				   "\t%5 : f32[2,1,3] = reshape %3 shape=[2,1,3] @\"r\"\n"
				   "%1 : i64[2,3] = argmax %5 axis=1\n"
				   "%2 : f32[4,3] = pad %3 value=1e-5 pad_hi=[2,0] pad_lo=[0,0]\n"
				   "%4 : i64[2] = argmax %3 axis=1 mode=1\n"
				   "%900 : f32[2,3] = softmax %3 axis=1 @\"s\\x41\"\n"
				   "output %2\n"
				   "output %900 \"y\"\n";
	static const char want[] = "pcc-ir 1\n"
				   "input %0 \"x\" : f32[2,3]\n"
				   "%1 : f32[3,2] = transpose %0 axes=[1,0]\n"
				   "%2 : f32[2,3] = transpose %1 axes=[1,0]\n"
				   "%3 : f32[2,1,3] = reshape %2 shape=[2,1,3] @\"r\"\n"
				   "%4 : i64[2,3] = argmax %3 axis=1 mode=first\n"
				   "%5 : f32[4,3] = pad %2 pad_lo=[0,0] pad_hi=[2,0] mode=constant value=1e-05\n"
				   "%6 : i64[2] = argmax %2 axis=1 mode=last\n"
				   "%7 : f32[2,3] = softmax %2 axis=1 @\"sA\"\n"
				   "output %5\n"
				   "output %7 \"y\"\n";
	struct ir_graph *g = ir_parse(text);

	if (!TAP_OK(g, "lenient text parses"))
		TAP_DIAG("%s", ir_error());
	if (g)
		check_round_trip(g, want, "lenient text");
	ir_graph_free(g);

	/* State updates (BatchNorm running statistics) print after the outputs. */
	static const char upd[] = "pcc-ir 1\n"
				  "input %0 \"x\" : f32[3]\n"
				  "param %1 \"m\" : f32[3] = hex \"000000000000000000000000\"\n"
				  "%2 : f32[3] = add %1, %0\n"
				  "output %0 \"y\"\n"
				  "update %1 %2\n";
	g = ir_parse(upd);
	TAP_OK(g && ir_graph_nupdates(g) == 1 && ir_graph_update_param(g, 0) == ir_graph_param(g, 0),
	       "an update statement parses");
	if (g) {
		check_round_trip(g, upd, "graph with an update");
		TAP_OK(ir_graph_dce(g) == 0 && ir_graph_nnodes(g) == 1, "an update keeps its value alive");
	}
	ir_graph_free(g);

	g = ir_parse("pcc-ir 1");
	TAP_OK(g && ir_graph_nvalues(g) == 0, "a header alone is an empty graph");
	if (g)
		check_round_trip(g, "pcc-ir 1\n", "empty graph");
	ir_graph_free(g);
}

/* ---- malformed input --------------------------------------------------------- */

#define H "pcc-ir 1\n"
#define X "input %0 \"x\" : f32[2,3]\n"

static const struct {
	const char *text, *message;
} bad[] = {
	{ "", "line 1: expected 'pcc-ir 1' header, found end of text" },
	{ "# only a comment\n", "expected 'pcc-ir 1' header" },
	{ X, "line 1: expected 'pcc-ir 1' header" },
	{ "pcc-ir 2\n", "line 1: unsupported IR text version 2" },
	{ "pcc-ir 1 x\n", "line 1: expected end of line, found 'x'" },
	{ H X "%1 : f32[2,3] = dott %0\n", "line 3: unknown op 'dott'" },
	{ H X "%1 : f32[2,3] =\n", "line 3: expected an op, found end of line" },
	{ H "input %0 : f33[2]\n", "line 2: unknown dtype 'f33'" },
	{ H "input %0 : [2]\n", "line 2: expected a dtype, found '[2]'" },
	{ H "input %0 : f32[2,-1]\n", "line 2: negative dimension" },
	{ H "input %0 : f32[2,x]\n", "line 2: expected an integer, found 'x]'" },
	{ H "input %0 : f32[2,3\n", "line 2: expected ',' or ']', found end of line" },
	{ H "input %0 : f32[2;3]\n", "line 2: expected ',' or ']', found ';3]'" },
	{ H "input %0 : f32[2.5]\n", "line 2: expected an integer" },
	{ H "input %0 : f32[1000000000000000]\n", "line 2: shape [1000000000000000] has more than 2^44 elements" },
	{ H "input %0 : f32[100000,100000,100000]\n", "line 2: shape [100000,100000,100000] has more than 2^44" },
	{ H "input %0 : f32[99999999999999999999]\n", "line 2: integer out of range" },
	/* no elements but a huge dim: inference must not overflow (UBSan) */
	{ H "input %0 : f32[0,9223372036854775807]\n"
	    "%1 : f32[0,9223372036854775807] = pad %0 pad_lo=[0,1] pad_hi=[0,1]\n",
	  "line " },
	{ H "input %0 : f32[1,1,1,1,1,1,1,1,1]\n", "line 2: more than 8 dims" },
	{ H "input %0 : f32[2]\n", "" }, /* placeholder replaced below: must parse */
	{ H X "%1 : f32[2,3] = neg %9\n", "line 3: %9 used before definition" },
	{ H X "output %3\n", "line 3: %3 used before definition" },
	{ H X "%1 : f32[2,3] = neg %0\nupdate %0 %1\n", "line 4: update: the first value must be a param" },
	{ H "param %0 : f32[2] = hex \"0000000000000000\"\n%1 : f32[2,2] = broadcast %0 shape=[2,2] axes=[1]\n"
	    "update %0 %1\n",
	  "line 4: update of \"?\": the new value's type differs" },
	{ H X "%1 : f32[3,2] = neg %0\n", "line 3: %1 is f32[3,2] in the text, but neg gives f32[2,3]" },
	{ H X "%1 : f64[2,3] = neg %0\n", "line 3: %1 is f64[2,3] in the text, but neg gives f32[2,3]" },
	{ H X "%1 : f32[2,3] = softmax %0 axis=2\n", "line 3: softmax: axis 2 out of range for rank 2" },
	{ H X X, "line 3: %0 redefined (first defined on line 2)" },
	{ H X "%1 : f32[2,1], %1 : i64[2,1] = topk %0 axis=1 k=1\n", "line 3: %1 defined twice" },
	{ H X "%1 : f32[2,1] = topk %0 axis=1 k=1\n", "line 3: topk has 2 results, the text names 1" },
	{ H X "%1 : f32[2,3] = add %0\n", "line 3: add takes 2 operands, got 1" },
	{ H X "%1 : f32[2,3] = concat axis=0\n", "line 3: concat takes at least one operand" },
	{ H X "%1 : f32[2,3] = neg %0 foo=1\n", "line 3: unknown attribute 'foo'" },
	{ H X "%1 : f32[2,3] = neg %0 axis=1\n", "line 3: neg has no attribute 'axis'" },
	{ H X "%1 : f32[2,3] = softmax %0 axis=1 axis=1\n", "line 3: attribute 'axis' given twice" },
	{ H X "%1 : f32[2,3] = softmax %0 axis=\n", "line 3: expected an integer, found end of line" },
	{ H X "%1 : f32[2,3] = softmax %0 axis 1\n", "line 3: expected '=', found '1'" },
	{ H X "%1 : i64[2] = argmax %0 axis=1 mode=biggest\n", "line 3: unknown mode 'biggest' for argmax" },
	{ H X "%1 : f32[2,3] = convert %0 dtype=f128\n", "line 3: unknown dtype 'f128'" },
	{ H X "%1 : f32[2,3] = layer_norm %0, %0, %0 axis=0 eps=1e-5x\n", "line 3: bad number '1e-5x'" },
	{ H X "%1 : f32[2,3] = layer_norm %0, %0, %0 axis=0 eps=1e999\n", "line 3: number '1e999' out of range" },
	{ H X "%1 : f32[2,3] = layer_norm %0, %0, %0 axis=0 eps=nan:0x7ff0000000000000\n", "not a NaN" },
	{ H X "%1 : f32[2,3] = layer_norm %0, %0, %0 axis=0 eps=nan:0x7ff\n", "line 3: bad NaN" },
	{ H X "%1 : f32[2,3] = layer_norm %0, %0, %0 axis=0 eps=\n", "line 3: expected a number" },
	{ H X "%1 : f32[2,3] = transpose %0 axes=[1,0,2,3,4,5,6,7,8]\n", "line 3: more than 8 entries" },
	{ H X "%1 : f32[2,3] = neg %0 @\n", "line 3: expected a string, found end of line" },
	{ H X "%1 : f32[2,3] = neg %0 @\"n\" x\n", "line 3: expected end of line, found 'x'" },
	{ H "input %0\n", "line 2: expected ':', found end of line" },
	{ H "input %0 \"x : f32[2]\n", "line 2: unterminated string" },
	{ H "input %0 \"x\\\" : f32[2]\n", "line 2: unterminated string" },
	{ H "input %0 \"x\\", "line 2: unterminated string" },
	{ H "input %0 \"a\\q\" : f32[2]\n", "line 2: bad escape in string: '\\q'" },
	{ H "input %0 \"a\\x4\" : f32[2]\n", "line 2: bad escape in string: \\x needs two hex digits" },
	{ H "input %0 \"a\\x00\" : f32[2]\n", "line 2: NUL byte in string" },
	{ H "input x : f32[2]\n", "line 2: expected a value like %0, found 'x'" },
	{ H "input % 0 : f32[2]\n", "line 2: expected a value like %0" },
	{ H "input %0x : f32[2]\n", "line 2: expected a value like %0" },
	{ H "input %99999999999 : f32[2]\n", "line 2: value id too large" },
	{ H "inputs %0 : f32[2]\n", "line 2: unknown statement 'inputs'" },
	{ H "input %0 : i64[2] classes=0\n", "line 2: classes=0: labels are integers of at least one class" },
	{ H "input %0 : f32[2] classes=3\n", "line 2: classes=3: labels are integers of at least one class" },
	{ H "input %0 : i64[2] ignore=1\n", "line 2: expected classes=C or end of line, found 'ignore=1'" },
	{ H "input %0 : i64[2] classes=3 x\n", "line 2: expected ignore=I or end of line, found 'x'" },
	{ H "input %0 : i64[2] classes=3 ignore=1 x\n", "line 2: expected end of line, found 'x'" },
	{ H "input %0 : i64[2] classes=x\n", "line 2: expected an integer" },
	{ H "[\n", "line 2: expected a statement, found '['" },
	{ H "param %0 : u8[2] = hex \"0g12\"\n", "line 2: bad hex digit 'g'" },
	{ H "param %0 : u8[2] = hex \"012\"\n", "line 2: odd number of hex digits (3)" },
	{ H "param %0 : u8[2] = hex \"01\"\n", "line 2: 1 bytes of hex, but u8[2] needs 2" },
	{ H "param %0 : u8[2] = hex \"0102\n", "line 2: unterminated string" },
	{ H "param %0 : u8[2] = hex\n", "line 2: expected a string of hex digits, found end of line" },
	{ H "param %0 : u8[2] = inline \"0102\"\n", "line 2: expected 'hex' or 'external', found 'inline" },
	{ H "param %0 : u8[2]\n", "line 2: expected '=', found end of line" },
	{ H "param %0 : f32[2] = external \"w\" offset 0 bytes 4\n",
	  "line 2: external data of 4 bytes, but f32[2] needs 8" },
	{ H "param %0 : f32[2] = external \"w\" offset -1 bytes 8\n", "line 2: negative offset -1" },
	{ H "param %0 : f32[2] = external \"w\" bytes 8\n", "line 2: expected 'offset', found 'bytes'" },
	{ H "param %0 : f32[2] = external \"w\" offset 0 bytes 8 dir \"d\"\n",
	  "line 2: expected 'base_dir', found 'dir'" },
	{ H "%0 : f32[2] = constant dtype=f32 shape=[2]\n", "line 2: constant needs data=hex" },
	{ H "%0 : f32[2] = constant dtype=f32 shape=[2] data=hex \"00\"\n",
	  "line 2: constant data has 1 bytes, f32[2] needs 8" },
	{ H "%0 : f32[2] = constant dtype=f32 shape=[2] data=\"00\"\n", "line 2: expected 'hex', found '\"00\"'" },
	{ H "%0 : f32[2] = iota dtype=f32 shape=[1000000,1000000,1000] axis=0\n",
	  "line 2: shape [1000000,1000000,1000] has more than 2^44" },
	{ H "%0 : f32[1], %1 : f32[1], %2 : f32[1], %3 : f32[1], %4 : f32[1], %5 : f32[1], %6 : f32[1], "
	    "%7 : f32[1], %8 : f32[1] = neg %0\n",
	  "line 2: more than 8 results" },
	{ H "%0 \"\\xff\xfe\" : f32[1]\x01 = neg\n", "line 2: expected '=', found '?'" },
	{ H X "%1 : f32[2,3] <R,S1> = neg %0\n", "line 3: sharding <R,S1> but the graph has no mesh" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] <R,S1> = neg %0\n",
	  "line 4: sharding <R,S1>: dimension 1 of size 3 does not split into 4 pieces" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] <S0,S01> = neg %0\n", "line 4: sharding <S0,S01>: a mesh axis used twice" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] <S0> = neg %0\n",
	  "line 4: sharding <S0>: expected 2 entries, one per dimension" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] <S0,S2> = neg %0\n",
	  "line 4: sharding <S0,S2>: entry 1 is not R, S0, S1 or S01" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] <S0,R|Q> = neg %0\n", "line 4: sharding <S0,R|Q>: expected P0, P1 or P01" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] <S0,R = neg %0\n", "line 4: expected '>' closing the sharding" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] = neg %0 <S0,R|P1>\n",
	  "line 4: operand 0 read as partial sums: an operand's sharding splits or replicates it" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] = add %0 <S0,R>, %0\n",
	  "line 4: shardings for 1 of 2 operands: give every operand's or none" },
	{ H "mesh 2x4\n" X "%1 : f32[2,3] = neg %0 <R,S1>\n",
	  "line 4: sharding <R,S1>: dimension 1 of size 3 does not split into 4 pieces" },
	{ H X "%1 : f32[2,3] = neg %0 <S0,R>\n", "line 3: sharding <S0,R> but the graph has no mesh" },
	{ H X "%1 : f32[2,3] = neg %0 tag=-1\n", "line 3: tag=-1: a tag is a number from 0, or all" },
	{ H X "%1 : f32[2,3] = neg %0 tag=some\n", "line 3: expected an integer, found 'some'" },
	{ H X "%1 : f32[2,3] = neg %0 tag=1 tag=2\n", "line 3: 'tag' given twice" },
	{ H X "%1 : f32[2,3] = neg %0 recompute=0\n", "line 3: recompute=0: a segment is a number from 1" },
	{ H "schedule 1: F0 B0\n", "line 2: schedule of stage 1 given after 0 stages" },
	{ H "schedule 0: F0 B1\n",
	  "line 2: schedule of stage 0: entry 1 (B1) is not the next part of a micro-batch of 1" },
	{ H "schedule 0: B0 F0\n",
	  "line 2: schedule of stage 0: entry 0 (B0) is not the next part of a micro-batch of 1" },
	{ H "schedule 0: F0 F0\n",
	  "line 2: schedule of stage 0: entry 1 (F0) is not the next part of a micro-batch of 1" },
	{ H "schedule 0: F0\n",
	  "line 2: schedule of stage 0: 1 entries, not a forward and a backward per micro-batch" },
	{ H "schedule 0: F0 X0\n", "line 2: expected Fm or Bm (micro-batch m's forward or backward part), found 'X0'" },
	{ H "schedule 0 F0 B0\n", "line 2: expected ':', found 'F0'" },
	{ H "mesh 2x4\nmesh 2x4\n", "line 3: mesh given twice" },
	{ H "mesh 2by4\n", "line 2: expected a mesh shape N0xN1" },
	{ H "mesh 0x4\n", "line 2: mesh 0x4: each axis must be 1 .. 65536" },
};

static void test_malformed(void)
{
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct ir_graph *g;
		const char *msg;

		ir_error_clear();
		g = ir_parse(bad[i].text);
		msg = ir_error();
		if (!bad[i].message[0]) {
			TAP_OK(g, "well-formed control case %zu parses", i);
		} else if (!TAP_OK(!g && strstr(msg, bad[i].message), "rejects with \"%s\"", bad[i].message)) {
			TAP_DIAG("text: %s", bad[i].text);
			TAP_DIAG("got:  %s", g ? "(a graph)" : msg);
		}
		ir_graph_free(g);
	}
}

/* ---- allocation failures ---------------------------------------------------- */

static void test_alloc_failures(void)
{
	static const char text[] =
		"pcc-ir 1\n"
		"input %0 \"x\" : f32[2,3]\n"
		"param %1 \"w\" : f32[3] = hex \"0000803f0000803f0000803f\"\n"
		"param %2 \"v\" : f32[3] = external \"v.bin\" offset 0 bytes 12 base_dir \"/d\"\n"
		"%3 \"c\" : i32[2] = constant dtype=i32 shape=[2] data=hex \"0100000002000000\" @\"c\"\n"
		"%4 : f32[2,3] = layer_norm %0, %1, %2 axis=1 eps=1e-05 @\"ln\"\n"
		"%5 : f32[2,1], %6 : i64[2,1] = topk %4 axis=1 k=1 mode=largest\n"
		"%7 : f32[2,6] = concat %4, %0 axis=1\n"
		"output %7 \"y\"\n"
		"output %6\n";
	bool clean = true;
	long n;

	for (n = 0; n < 10000; n++) {
		struct ir_graph *g;
		ir_error_clear();
		ir_alloc_fail_after(n);
		g = ir_parse(text);
		ir_alloc_fail_after(-1);
		if (g) {
			ir_graph_free(g);
			break;
		}
		clean &= ir_error()[0] != '\0';
	}
	TAP_OK(n > 0 && n < 10000 && clean, "parse fails cleanly at each of its first %ld allocations, then succeeds",
	       n);

	struct ir_graph *g = ir_parse(text);
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	ir_alloc_fail_after(0);
	int rc = g && f ? ir_print(g, f) : 0;
	ir_alloc_fail_after(-1);
	TAP_OK(rc == -ENOMEM, "print reports an allocation failure");
	if (f)
		fclose(f);
	free(s);
	ir_graph_free(g);
}

int main(int argc, char **argv)
{
	test_files(argc > 1 ? argv[1] : PCC_IR_TEST_DIR);
	test_api_graph();
	test_lenient();
	test_malformed();
	test_alloc_failures();
	return tap_done();
}
