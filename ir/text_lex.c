/*
 * text_lex.c: the IR text parser's tokens and values: words, integers,
 * doubles (inf, nan and NaN payloads by name), strings with escapes, hex
 * data, int lists, types and modes. Never reads past the terminating NUL.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/text_internal.h"

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

bool tx_at_eol(const struct parser *ps)
{
	return *ps->p == '\n' || *ps->p == '\0' || *ps->p == '#';
}

void tx_skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
		ps->p++;
}

__attribute__((format(printf, 2, 3))) int tx_fail(struct parser *ps, const char *fmt, ...)
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
int tx_fail_expected(struct parser *ps, const char *what)
{
	char tok[25];
	size_t n = 0;

	tx_skip_ws(ps);
	if (tx_at_eol(ps))
		return tx_fail(ps, "expected %s, found end of line", what);
	for (const char *p = ps->p; n < sizeof tok - 1 && *p && *p != ' ' && *p != '\n'; p++)
		tok[n++] = (*p >= ' ' && *p <= '~') ? *p : '?';
	tok[n] = '\0';
	return tx_fail(ps, "expected %s, found '%s'", what, tok);
}

int tx_fail_builder(struct parser *ps)
{
	ir_error_prefix("line %d", ps->line);
	return -EINVAL;
}

int tx_fail_nomem(void)
{
	return ir_errorf(-ENOMEM, "out of memory parsing IR text");
}

bool tx_accept(struct parser *ps, char c)
{
	tx_skip_ws(ps);
	if (*ps->p != c)
		return false;
	ps->p++;
	return true;
}

int tx_expect(struct parser *ps, char c)
{
	char what[4] = { '\'', c, '\'', '\0' };

	return tx_accept(ps, c) ? 0 : tx_fail_expected(ps, what);
}

/* An identifier [A-Za-z0-9_]+ at the cursor: its length (0 if none). */
size_t tx_word(struct parser *ps, const char **start)
{
	const char *p;

	tx_skip_ws(ps);
	*start = p = ps->p;
	while (is_word_char(*p))
		p++;
	ps->p = p;
	return (size_t)(p - *start);
}

bool tx_word_is(const char *w, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(w, s, n) == 0;
}

/* Length to show of a word in a message. */
int tx_shown(size_t n)
{
	return n > 32 ? 32 : (int)n;
}

int tx_expect_word(struct parser *ps, const char *s)
{
	const char *start = ps->p, *w;
	size_t n = tx_word(ps, &w);
	char what[40];

	if (tx_word_is(w, n, s))
		return 0;
	ps->p = start;
	snprintf(what, sizeof what, "'%s'", s);
	return tx_fail_expected(ps, what);
}

/* Copies a word into buf as a C string; false when it does not fit. */
bool tx_word_copy(const char *w, size_t n, char *buf, size_t size)
{
	if (n >= size)
		return false;
	memcpy(buf, w, n);
	buf[n] = '\0';
	return true;
}

int tx_parse_int(struct parser *ps, int64_t *out)
{
	const char *p;
	bool neg;
	int64_t v = 0;

	tx_skip_ws(ps);
	p = ps->p;
	neg = *p == '-';
	p += neg;
	if (!is_digit(*p))
		return tx_fail_expected(ps, "an integer");
	for (; is_digit(*p); p++) {
		if (v > (INT64_MAX - (*p - '0')) / 10)
			return tx_fail(ps, "integer out of range");
		v = v * 10 + (*p - '0');
	}
	if (is_word_char(*p) || *p == '.')
		return tx_fail_expected(ps, "an integer");
	ps->p = p;
	*out = neg ? -v : v;
	return 0;
}

int tx_parse_ref(struct parser *ps, int64_t *id)
{
	const char *p;
	int64_t v = 0;

	tx_skip_ws(ps);
	p = ps->p;
	if (*p != '%' || !is_digit(p[1]))
		return tx_fail_expected(ps, "a value like %0");
	for (p++; is_digit(*p); p++) {
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return tx_fail(ps, "value id too large");
	}
	if (is_word_char(*p))
		return tx_fail_expected(ps, "a value like %0");
	ps->p = p;
	*id = v;
	return 0;
}

/* Reads a double: a decimal (anything strtod takes, whole token), inf,
 * -inf, nan, -nan, or nan:0x<bits> for other NaNs (see put_double). */
int tx_parse_double(struct parser *ps, double *out)
{
	char buf[48], *end;
	size_t n = 0;
	const char *p;
	double d;

	tx_skip_ws(ps);
	for (p = ps->p; is_word_char(*p) || *p == '.' || *p == '-' || *p == '+' || *p == ':'; p++) {
		if (n == sizeof buf - 1)
			return tx_fail(ps, "number too long");
		buf[n++] = *p;
	}
	buf[n] = '\0';
	if (!n)
		return tx_fail_expected(ps, "a number");
	if (!strcmp(buf, "inf") || !strcmp(buf, "-inf")) {
		d = buf[0] == '-' ? -INFINITY : INFINITY;
	} else if (!strcmp(buf, "nan") || !strcmp(buf, "-nan")) {
		uint64_t u = buf[0] == '-' ? NEG_NAN_BITS : NAN_BITS;
		memcpy(&d, &u, sizeof d);
	} else if (!strncmp(buf, "nan:0x", 6)) {
		uint64_t u = 0;
		if (n != 6 + 16)
			return tx_fail(ps, "bad NaN '%s': expected nan:0x and 16 hex digits", buf);
		for (size_t i = 6; i < n; i++) {
			if (hex_value(buf[i]) < 0)
				return tx_fail(ps, "bad NaN '%s'", buf);
			u = u << 4 | (uint64_t)hex_value(buf[i]);
		}
		memcpy(&d, &u, sizeof d);
		if (!isnan(d))
			return tx_fail(ps, "bad NaN '%s': the bits are not a NaN", buf);
	} else {
		d = strtod(buf, &end);
		if (end != buf + n || !(is_digit(buf[0]) || buf[0] == '-' || buf[0] == '.'))
			return tx_fail(ps, "bad number '%s'", buf);
		if (isinf(d) || isnan(d))
			return tx_fail(ps, "number '%s' out of range (write inf or nan)", buf);
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
			return tx_fail(ps, "unterminated string"), -1;
		if (c == '\\') {
			c = *p++;
			switch (c) {
			case '"':
			case '\\':
				break;
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'x':
				if (hex_value(p[0]) < 0 || hex_value(p[1]) < 0)
					return tx_fail(ps, "bad escape in string: \\x needs two hex digits"), -1;
				c = (char)(hex_value(p[0]) << 4 | hex_value(p[1]));
				p += 2;
				if (!c)
					return tx_fail(ps, "NUL byte in string"), -1;
				break;
			case '\0':
			case '\n':
				return tx_fail(ps, "unterminated string"), -1;
			default:
				return tx_fail(ps, "bad escape in string: '\\%c'", c >= ' ' && c <= '~' ? c : '?'), -1;
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
int tx_parse_string(struct parser *ps, const char **out)
{
	const char *end;
	int64_t n;
	char *s;

	tx_skip_ws(ps);
	if (*ps->p != '"')
		return tx_fail_expected(ps, "a string");
	n = string_body(ps, ps->p + 1, NULL, &end);
	if (n < 0)
		return -EINVAL;
	s = ir_graph_alloc(ps->g, (size_t)n + 1);
	if (!s)
		return tx_fail_nomem();
	string_body(ps, ps->p + 1, s, &end);
	ps->p = end;
	*out = s;
	return 0;
}

/* An optional name: a string if one comes next. */
int tx_parse_name(struct parser *ps, const char **out)
{
	tx_skip_ws(ps);
	*out = NULL;
	return *ps->p == '"' ? tx_parse_string(ps, out) : 0;
}

/* "hex" has been read; a string of hex digits, two per byte, into the
 * arena (never a NULL pointer, even for zero bytes). */
int tx_parse_hex(struct parser *ps, const void **out, int64_t *nbytes)
{
	const char *p;
	int64_t n = 0;
	unsigned char *b;

	tx_skip_ws(ps);
	if (*ps->p != '"')
		return tx_fail_expected(ps, "a string of hex digits");
	for (p = ps->p + 1; *p != '"'; p++, n++) {
		if (*p == '\0' || *p == '\n')
			return tx_fail(ps, "unterminated string");
		if (hex_value(*p) < 0)
			return tx_fail(ps, "bad hex digit '%c'", *p >= ' ' && *p <= '~' ? *p : '?');
	}
	if (n % 2)
		return tx_fail(ps, "odd number of hex digits (%" PRId64 ")", n);
	b = ir_graph_alloc(ps->g, n ? (size_t)n / 2 : 1);
	if (!b)
		return tx_fail_nomem();
	for (int64_t i = 0; i < n / 2; i++)
		b[i] = (unsigned char)(hex_value(ps->p[1 + 2 * i]) << 4 | hex_value(ps->p[2 + 2 * i]));
	ps->p = p + 1;
	*out = b;
	*nbytes = n / 2;
	return 0;
}

/* "[" [ INT { "," INT } ] "]" into v[0..*n), at most IR_MAX_RANK. */
int tx_parse_ints(struct parser *ps, int64_t *v, int *n, const char *what)
{
	if (tx_expect(ps, '['))
		return -EINVAL;
	*n = 0;
	if (tx_accept(ps, ']'))
		return 0;
	for (;;) {
		if (*n == IR_MAX_RANK)
			return tx_fail(ps, "more than %d %s", IR_MAX_RANK, what);
		if (tx_parse_int(ps, &v[(*n)++]))
			return -EINVAL;
		if (tx_accept(ps, ']'))
			return 0;
		if (!tx_accept(ps, ','))
			return tx_fail_expected(ps, "',' or ']'");
	}
}

int tx_parse_shape(struct parser *ps, struct ir_shape *s)
{
	memset(s, 0, sizeof *s);
	if (tx_parse_ints(ps, s->dims, &s->rank, "dims"))
		return -EINVAL;
	if (ir_shape_check(s))
		return tx_fail_builder(ps);
	return 0;
}

int tx_parse_dtype(struct parser *ps, enum ir_dtype *t)
{
	const char *w;
	size_t n = tx_word(ps, &w);
	char buf[16];

	if (!n)
		return tx_fail_expected(ps, "a dtype");
	if (!tx_word_copy(w, n, buf, sizeof buf) || ir_dtype_parse(buf, t))
		return tx_fail(ps, "unknown dtype '%.*s'", tx_shown(n), w);
	return 0;
}

int tx_parse_type(struct parser *ps, enum ir_dtype *t, struct ir_shape *s)
{
	if (tx_parse_dtype(ps, t))
		return -EINVAL;
	return tx_parse_shape(ps, s);
}

int tx_parse_mode(struct parser *ps, enum ir_op op, const struct op_syntax *syn, int64_t *m)
{
	const char *w;
	size_t n;

	tx_skip_ws(ps);
	if (is_digit(*ps->p) || *ps->p == '-')
		return tx_parse_int(ps, m);
	n = tx_word(ps, &w);
	for (int i = 0; i < syn->nmodes; i++) {
		if (syn->modes[i] && tx_word_is(w, n, syn->modes[i])) {
			*m = i;
			return 0;
		}
	}
	if (!n)
		return tx_fail_expected(ps, "a mode");
	return tx_fail(ps, "unknown mode '%.*s' for %s", tx_shown(n), w, ir_op_name(op));
}
