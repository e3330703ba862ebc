/*
 * interp.c: the reference kernels, the oracle every other execution path
 * is compared with. This file holds the elementwise ops, the table
 * mapping ops to kernels (by their form in ops.h) and parameter loading (the dtype conversions and
 * layout helpers every kernel shares are interp_data.c's, the graph walk
 * is the compiler's, compiler/interp/interp_run.c).
 *
 * Numerics contract (what "correct" means for every later path):
 *  - floating-point elementwise math is done in double per element and
 *    rounded once to the result dtype (nearest even; f16/bf16 too, through a
 *    round-to-odd f32 step so that double -> half never double-rounds);
 *  - reductions, softmax, layer_norm, cumsum and window sums accumulate in
 *    double (integers: in int64 with wrap-around);
 *  - dots and convolutions use OpenBLAS: sgemm for f32, dgemm for f64,
 *    f16/bf16 converted to f32 and through sgemm, integers by an int64 loop;
 *  - integer math is done in int64 and wrapped to the result width; integer
 *    division or remainder by zero gives 0 (INT64_MIN / -1 wraps); REM is C
 *    fmod for floats and C % for integers (ONNX Mod with fmod=1); integer POW
 *    is repeated squaring, a negative exponent gives 1/b^e truncated;
 *  - bool is one byte holding 0 or 1; predicates yield bool;
 *  - CONVERT float -> int truncates toward zero (NaN -> 0, beyond the int64
 *    range clamps, then wraps to the width); float -> bool is x != 0;
 *  - MAX/MIN, REDUCE_MAX/MIN propagate NaN; ROUND is half to even; SIGN and
 *    RELU keep NaN; ARGMAX/ARGMIN and TOPK rank NaN above every number.
 *
 * Speed: kernels convert whole runs between a tensor and a double or int64
 * buffer with one typed loop each (no per-element dispatch); f32 has a
 * direct single-loop path for the ops that dominate transformer inference;
 * data movement is strided memcpy. GPT-2 small (seq 128) runs in about a
 * second on two cores, nearly all of it in sgemm.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/interp_internal.h"

int interp_nomem(const char *what)
{
	return ir_errorf(-ENOMEM, "out of memory (%s)", what);
}

/* ---- elementwise ops ---------------------------------------------------- */

static double sign_f(double x)
{
	return x > 0 ? 1.0 : x < 0 ? -1.0 : x; /* keeps NaN and signed zero */
}

static double max_f(double x, double z)
{
	return x != x || z != z ? NAN : x > z ? x : z;
}

static double min_f(double x, double z)
{
	return x != x || z != z ? NAN : x < z ? x : z;
}

/* Elementwise op on m doubles: y = op(a) or op(a, b); predicates give 0/1. */
static void eval_f64(enum ir_op op, const double *a, const double *b, double *y, int64_t m)
{
	int64_t i;
#define MAP1(e)                   \
	for (i = 0; i < m; i++) { \
		double x = a[i];  \
		y[i] = (e);       \
	}                         \
	return
#define MAP2(e)                            \
	for (i = 0; i < m; i++) {          \
		double x = a[i], z = b[i]; \
		y[i] = (e);                \
	}                                  \
	return
	switch (op) {
	case IR_OP_NEG:
		MAP1(-x);
	case IR_OP_ABS:
		MAP1(fabs(x));
	case IR_OP_SIGN:
		MAP1(sign_f(x));
	case IR_OP_EXP:
		MAP1(exp(x));
	case IR_OP_LOG:
		MAP1(log(x));
	case IR_OP_SQRT:
		MAP1(sqrt(x));
	case IR_OP_RSQRT:
		MAP1(1.0 / sqrt(x));
	case IR_OP_RECIP:
		MAP1(1.0 / x);
	case IR_OP_TANH:
		MAP1(tanh(x));
	case IR_OP_ERF:
		MAP1(erf(x));
	case IR_OP_SIGMOID:
		MAP1(1.0 / (1.0 + exp(-x)));
	case IR_OP_SOFTPLUS: /* log(1 + e^x), with no overflow for large x */
		MAP1((x > 0 ? x : 0.0) + log1p(exp(-fabs(x))));
	case IR_OP_RELU:
		MAP1(x > 0 || x != x ? x : 0.0);
	case IR_OP_SIN:
		MAP1(sin(x));
	case IR_OP_COS:
		MAP1(cos(x));
	case IR_OP_TAN:
		MAP1(tan(x));
	case IR_OP_ASIN:
		MAP1(asin(x));
	case IR_OP_ACOS:
		MAP1(acos(x));
	case IR_OP_ATAN:
		MAP1(atan(x));
	case IR_OP_SINH:
		MAP1(sinh(x));
	case IR_OP_COSH:
		MAP1(cosh(x));
	case IR_OP_ASINH:
		MAP1(asinh(x));
	case IR_OP_ACOSH:
		MAP1(acosh(x));
	case IR_OP_ATANH:
		MAP1(atanh(x));
	case IR_OP_FLOOR:
		MAP1(floor(x));
	case IR_OP_CEIL:
		MAP1(ceil(x));
	case IR_OP_ROUND:
		MAP1(nearbyint(x)); /* default rounding mode: half to even */
	case IR_OP_NOT:
		MAP1(x == 0);
	case IR_OP_IS_NAN:
		MAP1(x != x);
	case IR_OP_IS_INF:
		MAP1(isinf(x) != 0);
	case IR_OP_CONVERT:
		MAP1(x); /* the store converts */
	case IR_OP_ADD:
		MAP2(x + z);
	case IR_OP_SUB:
		MAP2(x - z);
	case IR_OP_MUL:
		MAP2(x * z);
	case IR_OP_DIV:
		MAP2(x / z);
	case IR_OP_REM:
		MAP2(fmod(x, z));
	case IR_OP_POW:
		MAP2(pow(x, z));
	case IR_OP_MAX:
		MAP2(max_f(x, z));
	case IR_OP_MIN:
		MAP2(min_f(x, z));
	case IR_OP_AND:
		MAP2(x != 0 && z != 0);
	case IR_OP_OR:
		MAP2(x != 0 || z != 0);
	case IR_OP_XOR:
		MAP2((x != 0) != (z != 0));
	case IR_OP_EQ:
		MAP2(x == z);
	case IR_OP_NE:
		MAP2(x != z);
	case IR_OP_LT:
		MAP2(x < z);
	case IR_OP_LE:
		MAP2(x <= z);
	case IR_OP_GT:
		MAP2(x > z);
	case IR_OP_GE:
		MAP2(x >= z);
	case IR_OP_SELECT:
	case IR_OP_DOT:
	case IR_OP_CONV:
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
	case IR_OP_CUMSUM:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
	case IR_OP_SOFTMAX:
	case IR_OP_LAYER_NORM:
	case IR_OP_TOPK:
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"not a unary or binary elementwise op");
}

/* b^e with wrap-around; e < 0 gives 1/b^e truncated toward zero (0 for b 0). */
static int64_t ipow(int64_t b, int64_t e)
{
	if (e < 0)
		return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
	uint64_t r = 1, x = (uint64_t)b;
	for (; e; e >>= 1) {
		if (e & 1)
			r *= x;
		x *= x;
	}
	return (int64_t)r;
}

static int64_t idiv(int64_t x, int64_t z)
{
	if (z == 0)
		return 0;
	if (z == -1) /* INT64_MIN / -1 overflows in C; wrap instead */
		return (int64_t)(0 - (uint64_t)x);
	return x / z;
}

static int64_t irem(int64_t x, int64_t z)
{
	return z == 0 || z == -1 ? 0 : x % z;
}

/* Integer (and bool) elementwise math in int64, wrapping through uint64;
 * and, or, xor and not are bitwise (logical on bool's 0 and 1: not needs
 * to know which). */
static void eval_i64(enum ir_op op, bool boolean, const int64_t *a, const int64_t *b, int64_t *y, int64_t m)
{
	int64_t i;
#define IMAP1(e)                  \
	for (i = 0; i < m; i++) { \
		int64_t x = a[i]; \
		y[i] = (e);       \
	}                         \
	return
#define IMAP2(e)                            \
	for (i = 0; i < m; i++) {           \
		int64_t x = a[i], z = b[i]; \
		y[i] = (e);                 \
	}                                   \
	return
	switch (op) {
	case IR_OP_NEG:
		IMAP1((int64_t)(0 - (uint64_t)x));
	case IR_OP_ABS:
		IMAP1(x < 0 ? (int64_t)(0 - (uint64_t)x) : x);
	case IR_OP_SIGN:
		IMAP1((x > 0) - (x < 0));
	case IR_OP_RELU:
		IMAP1(x > 0 ? x : 0);
	case IR_OP_NOT:
		IMAP1(boolean ? x == 0 : ~x);
	case IR_OP_CONVERT:
		IMAP1(x);
	case IR_OP_ADD:
		IMAP2((int64_t)((uint64_t)x + (uint64_t)z));
	case IR_OP_SUB:
		IMAP2((int64_t)((uint64_t)x - (uint64_t)z));
	case IR_OP_MUL:
		IMAP2((int64_t)((uint64_t)x * (uint64_t)z));
	case IR_OP_DIV:
		IMAP2(idiv(x, z));
	case IR_OP_REM:
		IMAP2(irem(x, z));
	case IR_OP_POW:
		IMAP2(ipow(x, z));
	case IR_OP_MAX:
		IMAP2(x > z ? x : z);
	case IR_OP_MIN:
		IMAP2(x < z ? x : z);
	case IR_OP_AND:
		IMAP2(x & z);
	case IR_OP_OR:
		IMAP2(x | z);
	case IR_OP_XOR:
		IMAP2(x ^ z);
	case IR_OP_EQ:
		IMAP2(x == z);
	case IR_OP_NE:
		IMAP2(x != z);
	case IR_OP_LT:
		IMAP2(x < z);
	case IR_OP_LE:
		IMAP2(x <= z);
	case IR_OP_GT:
		IMAP2(x > z);
	case IR_OP_GE:
		IMAP2(x >= z);
	/* float-only ops: ir_infer rejects integer operands */
	case IR_OP_EXP:
	case IR_OP_LOG:
	case IR_OP_SQRT:
	case IR_OP_RSQRT:
	case IR_OP_RECIP:
	case IR_OP_TANH:
	case IR_OP_ERF:
	case IR_OP_SIGMOID:
	case IR_OP_SOFTPLUS:
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
	case IR_OP_IS_NAN:
	case IR_OP_IS_INF:
	/* not elementwise */
	case IR_OP_SELECT:
	case IR_OP_DOT:
	case IR_OP_CONV:
	case IR_OP_REDUCE_SUM:
	case IR_OP_REDUCE_MAX:
	case IR_OP_REDUCE_MIN:
	case IR_OP_REDUCE_PROD:
	case IR_OP_ARGMAX:
	case IR_OP_ARGMIN:
	case IR_OP_WINDOW_MAX:
	case IR_OP_WINDOW_SUM:
	case IR_OP_CUMSUM:
	case IR_OP_RESHAPE:
	case IR_OP_TRANSPOSE:
	case IR_OP_BROADCAST:
	case IR_OP_SLICE:
	case IR_OP_CONCAT:
	case IR_OP_PAD:
	case IR_OP_REVERSE:
	case IR_OP_GATHER:
	case IR_OP_SCATTER:
	case IR_OP_IOTA:
	case IR_OP_CONSTANT:
	case IR_OP_SOFTMAX:
	case IR_OP_LAYER_NORM:
	case IR_OP_TOPK:
	case IR_OP_COUNT:
		break;
	}
	IR_ASSERT(!"not an integer elementwise op");
#undef MAP1
#undef MAP2
#undef IMAP1
#undef IMAP2
}

/* The f32 fast path for the ops that dominate transformer inference: one
 * loop each, no blocks. Same numerics as eval_f64 (double, rounded once).
 * Returns false for ops it does not cover. */
static bool fast_f32(enum ir_op op, const float *a, const float *b, float *y, int64_t n)
{
	int64_t i;
#define F32_1(e)                   \
	for (i = 0; i < n; i++) {  \
		double x = a[i];   \
		y[i] = (float)(e); \
	}                          \
	return true
#define F32_2(e)                           \
	for (i = 0; i < n; i++) {          \
		double x = a[i], z = b[i]; \
		y[i] = (float)(e);         \
	}                                  \
	return true
	if (op == IR_OP_ADD) {
		F32_2(x + z);
	}
	if (op == IR_OP_SUB) {
		F32_2(x - z);
	}
	if (op == IR_OP_MUL) {
		F32_2(x * z);
	}
	if (op == IR_OP_DIV) {
		F32_2(x / z);
	}
	if (op == IR_OP_MAX) {
		F32_2(max_f(x, z));
	}
	if (op == IR_OP_MIN) {
		F32_2(min_f(x, z));
	}
	/* pow(x, 2) of an f32 x is exact in double, so x * x is the same value */
	if (op == IR_OP_POW) {
		F32_2(z == 2.0 ? x * x : pow(x, z));
	}
	if (op == IR_OP_NEG) {
		F32_1(-x);
	}
	if (op == IR_OP_RELU) {
		F32_1(x > 0 || x != x ? x : 0.0);
	}
	if (op == IR_OP_TANH) {
		F32_1(tanh(x));
	}
	if (op == IR_OP_EXP) {
		F32_1(exp(x));
	}
	if (op == IR_OP_ERF) {
		F32_1(erf(x));
	}
	if (op == IR_OP_SQRT) {
		F32_1(sqrt(x));
	}
	if (op == IR_OP_RSQRT) {
		F32_1(1.0 / sqrt(x));
	}
	if (op == IR_OP_SIGMOID) {
		F32_1(1.0 / (1.0 + exp(-x)));
	}
	return false;
#undef F32_1
#undef F32_2
}

/* y = op(a) or op(a, b) in blocks: load into the operand's domain, compute,
 * store with one rounding to y's dtype. b is NULL for unary ops. */
static void elementwise(enum ir_op op, const struct ir_tensor *a, const struct ir_tensor *b, struct ir_tensor *y)
{
	int64_t total = ir_shape_numel(&y->shape);
	if (a->dtype == IR_F32 && y->dtype == IR_F32 && fast_f32(op, a->data, b ? b->data : NULL, y->data, total))
		return;
	if (ir_dtype_is_float(a->dtype)) {
		double xa[INTERP_BLOCK], xb[INTERP_BLOCK], r[INTERP_BLOCK];
		for (int64_t off = 0; off < total; off += INTERP_BLOCK) {
			int64_t m = total - off < INTERP_BLOCK ? total - off : INTERP_BLOCK;
			interp_load_f64(a, off, m, xa);
			if (b)
				interp_load_f64(b, off, m, xb);
			eval_f64(op, xa, xb, r, m);
			interp_store_f64(y, off, m, r);
		}
		return;
	}
	int64_t xa[INTERP_BLOCK], xb[INTERP_BLOCK], r[INTERP_BLOCK];
	for (int64_t off = 0; off < total; off += INTERP_BLOCK) {
		int64_t m = total - off < INTERP_BLOCK ? total - off : INTERP_BLOCK;
		interp_load_i64(a, off, m, xa);
		if (b)
			interp_load_i64(b, off, m, xb);
		eval_i64(op, a->dtype == IR_BOOL, xa, xb, r, m);
		interp_store_i64(y, off, m, r);
	}
}

/* select(cond, t, f): moves bytes, so exact for every dtype. */
static void select_op(const struct ir_tensor *in, struct ir_tensor *y)
{
	int64_t n = ir_shape_numel(&y->shape), i;
	const uint8_t *c = in[0].data;
	switch (ir_dtype_size(y->dtype)) {
	case 1: {
		const uint8_t *t = in[1].data, *f = in[2].data;
		uint8_t *o = y->data;
		for (i = 0; i < n; i++)
			o[i] = c[i] ? t[i] : f[i];
		return;
	}
	case 2: {
		const uint16_t *t = in[1].data, *f = in[2].data;
		uint16_t *o = y->data;
		for (i = 0; i < n; i++)
			o[i] = c[i] ? t[i] : f[i];
		return;
	}
	case 4: {
		const uint32_t *t = in[1].data, *f = in[2].data;
		uint32_t *o = y->data;
		for (i = 0; i < n; i++)
			o[i] = c[i] ? t[i] : f[i];
		return;
	}
	case 8: {
		const uint64_t *t = in[1].data, *f = in[2].data;
		uint64_t *o = y->data;
		for (i = 0; i < n; i++)
			o[i] = c[i] ? t[i] : f[i];
		return;
	}
	}
	IR_ASSERT(!"element size not 1, 2, 4 or 8");
}

/* ---- one node ------------------------------------------------------------ */

/* The kernels of the forms not in interp_internal.h: elementwise ops and
 * reshape (a copy: the layout is row-major either way). */
static int interp_unary(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	elementwise(n->op, &in[0], NULL, &out[0]);
	return 0;
}

static int interp_convert(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	elementwise(n->op, &in[0], NULL, &out[0]);
	return 0;
}

static int interp_binary(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	elementwise(n->op, &in[0], &in[1], &out[0]);
	return 0;
}

static int interp_select(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	select_op(in, &out[0]);
	return 0;
}

static int interp_reshape(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	memcpy(out[0].data, in[0].data, ir_tensor_bytes(&in[0]));
	return 0;
}

/* The kernel of each op: the form column of ops.h. */
static int (*const kernels[IR_OP_COUNT])(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out) = {
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = interp_##form,
	IR_OPS(X)
#undef X
};

static int dispatch(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	IR_ASSERT((unsigned)n->op < IR_OP_COUNT);
	return kernels[n->op](n, in, out);
}

/* A value larger than this machine's memory is refused before anything
 * is allocated for it (a model may declare 2^44 elements): -ENOMEM with
 * what (its result, its data), its type and both sizes. */
static int check_room(const struct ir_value *v, const char *what)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
	double bytes = (double)ir_shape_numel(&v->shape) * (double)ir_dtype_size(v->dtype);
	double have = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
	char sh[IR_SHAPE_STR_MAX], b1[IR_BYTES_STRLEN], b2[IR_BYTES_STRLEN];
	if (bytes <= have)
		return 0;
	return ir_errorf(-ENOMEM, "%s %s%s needs %s, more than this machine's memory (%s)", what,
			 ir_dtype_name(v->dtype), ir_shape_str(&v->shape, sh, sizeof sh), ir_bytes_str(bytes, b1),
			 ir_bytes_str(have, b2));
}

int interp_node(const struct ir_node *n, const struct ir_tensor *in, struct ir_tensor *out)
{
	int rc = 0, j;
	for (int i = 0; i < n->nin; i++)
		IR_ASSERT(in[i].dtype == n->in[i]->dtype && ir_shape_eq(&in[i].shape, &n->in[i]->shape));
	for (j = 0; j < n->nout; j++)
		out[j].data = NULL;
	for (j = 0; j < n->nout && rc == 0; j++)
		rc = check_room(n->out[j], "its result");
	for (j = 0; j < n->nout && rc == 0; j++)
		rc = ir_tensor_alloc(&out[j], n->out[j]->dtype, &n->out[j]->shape);
	if (rc == 0)
		rc = dispatch(n, in, out);
	if (rc < 0) {
		for (j = 0; j < n->nout; j++)
			ir_tensor_free(&out[j]);
		if (n->name)
			ir_error_prefix("node \"%s\" (%s)", n->name, ir_op_name(n->op));
		else
			ir_error_prefix("node %d (%s)", n->id, ir_op_name(n->op));
	}
	return rc;
}

/* ---- parameters ------------------------------------------------------------ */

const char *interp_value_name(const struct ir_value *v, char *buf, size_t n)
{
	if (v->name)
		return v->name;
	snprintf(buf, n, "%%%d", v->id);
	return buf;
}

/* Reads v's external data into t, allocated once the file is known to
 * hold all of it (a shape that declares more than the file has is refused
 * before any allocation); file names it in messages. -ENOENT (or another
 * errno from ir_data_open) / -EIO with a message naming the file. */
static int read_external(const struct ir_value *v, const char *file, const char *pname, size_t nbytes,
			 struct ir_tensor *t)
{
	const struct ir_data *d = &v->data;
	int fd = ir_data_open(d, pname), rc = 0;
	struct stat st = { 0 };
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_size < d->offset || (uint64_t)(st.st_size - d->offset) < nbytes)
		rc = ir_errorf(-EIO,
			       "%s: external data of parameter \"%s\" is short: needs %zu bytes "
			       "at offset %lld, the file has %lld bytes",
			       file, pname, nbytes, (long long)d->offset, (long long)st.st_size);
	if (rc == 0 && (rc = check_room(v, "its data")) < 0)
		ir_error_prefix("%s: parameter \"%s\"", file, pname);
	if (rc == 0)
		rc = ir_tensor_alloc(t, v->dtype, &v->shape);
	for (size_t got = 0; rc == 0 && got < nbytes;) {
		ssize_t x = pread(fd, (char *)t->data + got, nbytes - got, (off_t)(d->offset + (int64_t)got));
		if (x <= 0)
			rc = ir_errorf(
				-EIO, "%s: external data of parameter \"%s\" is short or unreadable at offset %lld%s%s",
				file, pname, (long long)(d->offset + (int64_t)got), x < 0 ? ": " : "",
				x < 0 ? strerror(errno) : "");
		else
			got += (size_t)x;
	}
	close(fd);
	return rc;
}

int interp_load_param(const struct ir_value *v, struct ir_tensor *t)
{
	const struct ir_data *d = &v->data;
	char nbuf[32], sbuf[IR_SHAPE_STR_MAX];
	const char *pname = interp_value_name(v, nbuf, sizeof nbuf);
	IR_ASSERT(v->kind == IR_VAL_PARAM);
	*t = (struct ir_tensor){ 0 };
	size_t want = (size_t)ir_shape_numel(&v->shape) * ir_dtype_size(v->dtype);
	int rc = 0;
	if (d->nbytes != (int64_t)want || d->offset < 0 || (!d->bytes && !d->path)) {
		rc = ir_errorf(-EINVAL, "parameter \"%s\" (%s%s, %zu bytes) has %lld bytes of data at offset %lld%s",
			       pname, ir_dtype_name(v->dtype), ir_shape_str(&v->shape, sbuf, sizeof sbuf), want,
			       (long long)d->nbytes, (long long)d->offset,
			       !d->bytes && !d->path ? " and no source" : "");
		goto fail;
	}
	if (d->bytes) {
		if ((rc = check_room(v, "its data")) < 0)
			ir_error_prefix("parameter \"%s\"", pname);
		else if ((rc = ir_tensor_alloc(t, v->dtype, &v->shape)) == 0)
			memcpy(t->data, d->bytes, want);
		return rc;
	}
	if (d->path[0] == '/' || !d->base_dir || !d->base_dir[0]) {
		rc = read_external(v, d->path, pname, want, t);
	} else {
		size_t len = strlen(d->base_dir) + strlen(d->path) + 2;
		char *full = ir_malloc(len);
		if (!full) {
			rc = interp_nomem("an external data path");
			goto fail;
		}
		snprintf(full, len, "%s/%s", d->base_dir, d->path);
		rc = read_external(v, full, pname, want, t);
		ir_free(full);
	}
	if (rc == 0)
		return 0;
fail:
	ir_tensor_free(t);
	return rc;
}
