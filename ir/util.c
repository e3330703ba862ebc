/*
 * util.c: errors, the allocation hook, dtypes, shapes and the op table's
 * accessors. Everything here is leaf code with no knowledge of graphs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ir/ir.h"

/* ---- errors ----------------------------------------------------------- */

#define ERR_MAX 1024
static _Thread_local char err_msg[ERR_MAX];
static _Thread_local int err_code;

/* A message is one line whatever names from the input it quotes: control
 * characters (a newline in an ONNX node name) print as '?'. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int ir_errorf(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof err_msg, fmt, ap);
	va_end(ap);
	one_line(err_msg);
	err_code = code;
	return code;
}

int ir_getopt_error(int c, char *const *argv)
{
	const char *s = optind > 0 ? argv[optind - 1] : "";
	/* a long option is the word it came in, up to "="; a short one may sit
	 * inside a cluster of them ("-qx") that optind has not passed yet */
	if (strncmp(s, "--", 2) || (c == '?' && optopt && !strchr(s, '=')))
		return c == ':' ? ir_errorf(-EINVAL, "-%c needs a value", optopt)
				: ir_errorf(-EINVAL, "unknown option '-%c'", optopt ? optopt : '?');
	int n = (int)strcspn(s, "=");
	if (c == ':')
		return ir_errorf(-EINVAL, "%.*s needs a value", n, s);
	if (optopt && s[n])
		return ir_errorf(-EINVAL, "%.*s takes no value", n, s);
	return ir_errorf(-EINVAL, "unknown option '%.*s'", n, s);
}

void ir_error_prefix(const char *fmt, ...)
{
	char prefix[ERR_MAX], old[ERR_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err_msg, sizeof old);
	size_t n = strlen(prefix);
	if (n > ERR_MAX / 2)
		n = ERR_MAX / 2;
	memcpy(err_msg, prefix, n);
	memcpy(err_msg + n, ": ", 2);
	size_t rest = strlen(old);
	if (rest > ERR_MAX - n - 3)
		rest = ERR_MAX - n - 3;
	memcpy(err_msg + n + 2, old, rest);
	err_msg[n + 2 + rest] = 0;
	one_line(err_msg);
}

const char *ir_bytes_str(double bytes, char buf[IR_BYTES_STRLEN])
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;
	while (u < 5 && !(bytes < 1024)) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, IR_BYTES_STRLEN, u ? "%.3g %s" : "%.0f %s", bytes, unit[u]);
	return buf;
}

const char *ir_error(void)
{
	return err_msg[0] ? err_msg : "unknown error";
}

int ir_error_code(void)
{
	return err_code;
}

void ir_error_clear(void)
{
	err_code = 0;
	err_msg[0] = 0;
}

static char assert_who[64] = "pcc";

void ir_assert_set_who(const char *who)
{
	snprintf(assert_who, sizeof assert_who, "%s", who);
}

void ir_assert_fail(const char *file, int line, const char *expr)
{
	fprintf(stderr, "%s: internal error: %s:%d: assertion '%s' failed\n", assert_who, file, line, expr);
	abort();
}

/* ---- external data ---------------------------------------------------------- */

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "a device";
}

/* Opens dir/rel (an openat from dfd, which it closes) component by
 * component, none a symbolic link; the last one O_NONBLOCK. */
static int open_beneath(int dfd, const char *rel, const char *file, const char *name)
{
	char part[4096];
	while (dfd >= 0) {
		size_t n = strcspn(rel, "/");
		bool last = rel[n] == 0;
		if (n >= sizeof part) {
			close(dfd);
			return ir_errorf(-ENAMETOOLONG, "%s: cannot open external data of \"%s\": %s", file, name,
					 strerror(ENAMETOOLONG));
		}
		memcpy(part, rel, n);
		part[n] = 0;
		rel += n + !last;
		if (!last && (n == 0 || !strcmp(part, ".")))
			continue;
		int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
		int fd = openat(dfd, part, flags), e = errno;
		struct stat st;
		bool link = fd < 0 && (e == ELOOP || e == ENOTDIR) &&
			    fstatat(dfd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
		close(dfd);
		if (link)
			return ir_errorf(
				-ELOOP,
				"%s: external data of \"%s\" is reached through the symbolic link \"%s\", which "
				"is not followed (the data must be a file inside the model's directory)",
				file, name, part);
		if (fd < 0)
			return ir_errorf(-e, "%s: cannot open external data of \"%s\": %s", file, name, strerror(e));
		if (last)
			return fd;
		dfd = fd;
	}
	return ir_errorf(-errno, "%s: cannot open external data of \"%s\": %s", file, name, strerror(errno));
}

int ir_data_open(const struct ir_data *d, const char *name)
{
	char file[4200];
	bool rel = d->path[0] != '/' && d->base_dir && d->base_dir[0];
	snprintf(file, sizeof file, "%s%s%s", rel ? d->base_dir : "", rel ? "/" : "", d->path);
	int fd = rel ? open_beneath(open(d->base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), d->path, file, name)
		     : open(d->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (!rel && fd < 0)
		return ir_errorf(-errno, "%s: cannot open external data of \"%s\": %s", file, name,
				 errno == ELOOP ? "a symbolic link, which is not followed" : strerror(errno));
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return ir_errorf(-e, "%s: cannot open external data of \"%s\": %s", file, name, strerror(e));
	}
	if (fd >= 0 && !S_ISREG(st.st_mode)) {
		close(fd);
		return ir_errorf(-EINVAL, "%s: external data of \"%s\" is %s, not a regular file", file, name,
				 file_kind(st.st_mode));
	}
	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/* ---- allocation ---------------------------------------------------------- */

static long fail_after = -1;

static bool alloc_allowed(void)
{
	if (fail_after < 0)
		return true;
	if (fail_after == 0)
		return false;
	fail_after--;
	return true;
}

void ir_alloc_fail_after(long n)
{
	fail_after = n;
}

void *ir_malloc(size_t n)
{
	return alloc_allowed() ? malloc(n ? n : 1) : NULL;
}

void *ir_calloc(size_t count, size_t size)
{
	return alloc_allowed() ? calloc(count ? count : 1, size ? size : 1) : NULL;
}

void *ir_realloc(void *p, size_t n)
{
	return alloc_allowed() ? realloc(p, n ? n : 1) : NULL;
}

void ir_free(void *p)
{
	free(p);
}

/* ---- dtypes ---------------------------------------------------------------- */

static const struct {
	const char *name;
	size_t size;
} dtypes[IR_DTYPE_COUNT] = {
	[IR_F64] = { "f64", 8 },   [IR_F32] = { "f32", 4 }, [IR_F16] = { "f16", 2 },
	[IR_BF16] = { "bf16", 2 }, [IR_I64] = { "i64", 8 }, [IR_I32] = { "i32", 4 },
	[IR_I8] = { "i8", 1 },     [IR_U8] = { "u8", 1 },   [IR_BOOL] = { "bool", 1 },
};

size_t ir_dtype_size(enum ir_dtype t)
{
	IR_ASSERT((unsigned)t < IR_DTYPE_COUNT);
	return dtypes[t].size;
}

const char *ir_dtype_name(enum ir_dtype t)
{
	return (unsigned)t < IR_DTYPE_COUNT ? dtypes[t].name : "?";
}

int ir_dtype_parse(const char *s, enum ir_dtype *out)
{
	for (int i = 0; i < IR_DTYPE_COUNT; i++) {
		if (strcmp(s, dtypes[i].name) == 0) {
			*out = (enum ir_dtype)i;
			return 0;
		}
	}
	return ir_errorf(-EINVAL, "unknown dtype '%s'", s);
}

bool ir_dtype_is_float(enum ir_dtype t)
{
	return t == IR_F64 || t == IR_F32 || t == IR_F16 || t == IR_BF16;
}

bool ir_dtype_is_int(enum ir_dtype t)
{
	return t == IR_I64 || t == IR_I32 || t == IR_I8 || t == IR_U8;
}

/* ---- shapes ---------------------------------------------------------------- */

int64_t ir_shape_numel(const struct ir_shape *s)
{
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++)
		n *= s->dims[i];
	return n;
}

int ir_shape_check(const struct ir_shape *s)
{
	char buf[IR_SHAPE_STR_MAX];
	if (s->rank < 0 || s->rank > IR_MAX_RANK)
		return ir_errorf(-EINVAL, "rank %d exceeds the limit of %d", s->rank, IR_MAX_RANK);
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++) {
		int64_t d = s->dims[i];
		if (d < 0)
			return ir_errorf(-EINVAL, "negative dimension in shape %s", ir_shape_str(s, buf, sizeof buf));
		if (d > IR_MAX_NUMEL || (d > 0 && n > IR_MAX_NUMEL / d))
			return ir_errorf(-EINVAL, "shape %s has more than 2^44 elements",
					 ir_shape_str(s, buf, sizeof buf));
		n *= d;
	}
	return 0;
}

bool ir_shape_eq(const struct ir_shape *a, const struct ir_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

char *ir_shape_str(const struct ir_shape *s, char *buf, size_t n)
{
	size_t at = 0;
	int rank = s->rank < 0 ? 0 : s->rank > IR_MAX_RANK ? IR_MAX_RANK : s->rank;
	at += (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < rank && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, i ? ",%lld" : "%lld", (long long)s->dims[i]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
	return buf;
}

/* ---- op table ---------------------------------------------------------------- */

static const struct {
	const char *name;
	int nin, nout;
	unsigned flags;
} ops[IR_OP_COUNT] = {
/* the flags column names IR_OPF_* without the prefix */
#define UNARY IR_OPF_UNARY
#define BINARY IR_OPF_BINARY
#define ELEMENTWISE IR_OPF_ELEMENTWISE
#define FLOAT IR_OPF_FLOAT
#define LOGIC IR_OPF_LOGIC
#define PREDICATE IR_OPF_PREDICATE
#define REDUCE IR_OPF_REDUCE
#define MOVE IR_OPF_MOVE
#define HEAVY IR_OPF_HEAVY
#define COMPOSITE IR_OPF_COMPOSITE
#define NUMERIC IR_OPF_NUMERIC
#define LINEAR IR_OPF_LINEAR
#define KEEP_F32 IR_OPF_KEEP_F32
#define X(e, name, nin, nout, flags, form, cost, saved, shard, cg) [IR_OP_##e] = { #name, nin, nout, flags },
	IR_OPS(X)
#undef X
#undef UNARY
#undef BINARY
#undef ELEMENTWISE
#undef FLOAT
#undef LOGIC
#undef PREDICATE
#undef REDUCE
#undef MOVE
#undef HEAVY
#undef COMPOSITE
#undef NUMERIC
#undef LINEAR
#undef KEEP_F32
};

const char *ir_op_name(enum ir_op op)
{
	return (unsigned)op < IR_OP_COUNT ? ops[op].name : "?";
}

int ir_op_parse(const char *name, enum ir_op *out)
{
	for (int i = 0; i < IR_OP_COUNT; i++) {
		if (strcmp(name, ops[i].name) == 0) {
			*out = (enum ir_op)i;
			return 0;
		}
	}
	return ir_errorf(-EINVAL, "unknown op '%s'", name);
}

int ir_op_ninputs(enum ir_op op)
{
	IR_ASSERT((unsigned)op < IR_OP_COUNT);
	return ops[op].nin;
}

int ir_op_noutputs(enum ir_op op)
{
	IR_ASSERT((unsigned)op < IR_OP_COUNT);
	return ops[op].nout;
}

unsigned ir_op_flags(enum ir_op op)
{
	IR_ASSERT((unsigned)op < IR_OP_COUNT);
	return ops[op].flags;
}

const char *ir_cache_dir(char *buf, size_t n)
{
	const char *d = getenv("PCC_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (d && *d)
		snprintf(buf, n, "%s", d);
	else if (x && *x)
		snprintf(buf, n, "%s/pcc", x);
	else if (home && *home)
		snprintf(buf, n, "%s/.cache/pcc", home);
	else
		return NULL;
	return buf;
}

void ir_make_dirs(char *dir)
{
	for (char *s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir(dir, 0777);
		*s = '/';
	}
	mkdir(dir, 0777);
}

double ir_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
