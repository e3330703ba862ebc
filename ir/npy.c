/*
 * npy.c: reading NumPy's .npy format (npy.h). A file is the magic
 * "\x93NUMPY", a version (1.0: a 2-byte header length; 2.0 and 3.0: 4
 * bytes), then a Python dict literal, {'descr': '<f4', 'fortran_order':
 * False, 'shape': (2, 8), }, padded with spaces to a multiple of 64 bytes,
 * then the elements. A .npz (numpy.savez, savez_compressed) is a zip
 * archive of .npy members, read through libzip.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zip.h>

#include "ir/npy.h"

/* The value text after 'key': in the header, or NULL. */
static const char *value_of(const char *h, const char *key)
{
	char k[32];
	snprintf(k, sizeof k, "'%s'", key);
	const char *p = strstr(h, k);
	if (!p)
		return NULL;
	p += strlen(k);
	while (*p == ' ')
		p++;
	if (*p++ != ':')
		return NULL;
	while (*p == ' ')
		p++;
	return p;
}

static int dtype_of(const char *d, enum ir_dtype *t)
{
	static const struct {
		const char *descr;
		enum ir_dtype t;
	} known[] = { { "f8", IR_F64 }, { "f4", IR_F32 }, { "f2", IR_F16 }, { "i8", IR_I64 },
		      { "i4", IR_I32 }, { "i1", IR_I8 },  { "u1", IR_U8 },  { "b1", IR_BOOL } };
	/* '<' little-endian, '|' not applicable (bytes), '=' native (x86-64 and arm64: little) */
	if (d[0] != '<' && d[0] != '|' && d[0] != '=')
		return -1;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (!strncmp(d + 1, known[i].descr, 2) && d[3] == '\'') {
			*t = known[i].t;
			return 0;
		}
	return -1;
}

/* The shape tuple "(2, 8)", "(5,)" or "()". */
static int shape_of(const char *p, struct ir_shape *s)
{
	s->rank = 0;
	if (*p++ != '(')
		return -1;
	for (;;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (*p == ')')
			return 0;
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p || v < 0 || s->rank == IR_MAX_RANK)
			return -1;
		s->dims[s->rank++] = v;
		p = end;
		while (*p == 'L') /* Python 2's long */
			p++;
	}
}

/* The .npy in f (path names it in errors) into *t. */
static int npy_parse(FILE *f, const char *path, struct ir_tensor *t)
{
	unsigned char pre[12];
	int rc = 0;
	char *h = NULL;
	size_t hl = 0;
	if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6))
		rc = ir_errorf(-EINVAL, "%s: not a .npy file (no \\x93NUMPY magic)", path);
	else if (pre[6] < 1 || pre[6] > 3)
		rc = ir_errorf(-EINVAL, "%s: .npy format version %d.%d, pcc reads 1.0 to 3.0", path, pre[6], pre[7]);
	else if (pre[6] == 1)
		hl = (size_t)pre[8] | (size_t)pre[9] << 8;
	else if (fread(pre + 10, 1, 2, f) != 2)
		rc = ir_errorf(-EINVAL, "%s: truncated .npy header", path);
	else
		hl = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
	if (rc == 0 && (hl > (1u << 20) || !(h = ir_malloc(hl + 1))))
		rc = ir_errorf(hl > (1u << 20) ? -EINVAL : -ENOMEM, "%s: a .npy header of %zu bytes", path, hl);
	if (rc == 0 && fread(h, 1, hl, f) != hl)
		rc = ir_errorf(-EINVAL, "%s: truncated .npy header", path);
	struct ir_shape shape = { 0 };
	enum ir_dtype dt = IR_F32;
	if (rc == 0) {
		h[hl] = 0;
		const char *d = value_of(h, "descr"), *fo = value_of(h, "fortran_order"), *sh = value_of(h, "shape");
		if (!d || !fo || !sh || *d != '\'')
			rc = ir_errorf(-EINVAL, "%s: the .npy header lacks descr, fortran_order or shape: %.80s", path,
				       h);
		else if (dtype_of(d + 1, &dt) < 0)
			rc = ir_errorf(-EINVAL,
				       "%s: element type %.8s is not one pcc reads (little-endian f8, f4, f2, i8, i4, "
				       "i1, u1 or b1)",
				       path, d);
		else if (strncmp(fo, "False", 5))
			rc = ir_errorf(-EINVAL,
				       "%s: Fortran (column-major) order; save it in C order "
				       "(numpy.ascontiguousarray)",
				       path);
		else if (shape_of(sh, &shape) < 0 || ir_shape_numel(&shape) > IR_MAX_NUMEL)
			rc = ir_errorf(-EINVAL, "%s: a shape pcc cannot take: %.40s", path, sh);
	}
	if (rc == 0)
		rc = ir_tensor_alloc(t, dt, &shape);
	if (rc == 0) {
		size_t n = ir_tensor_bytes(t);
		if (fread(t->data, 1, n, f) != n) {
			rc = ir_errorf(-EINVAL, "%s: %zu bytes of elements expected after the header, fewer there",
				       path, n);
			ir_tensor_free(t);
		}
	}
	ir_free(h);
	return rc;
}

int ir_npy_read(const char *path, struct ir_tensor *t)
{
	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "rb");
	if (!f)
		return ir_errorf(-ENOENT, "%s: cannot open: %s", path, strerror(errno));
	int rc = npy_parse(f, path, t);
	fclose(f);
	return rc;
}

bool ir_npz_path(const char *path)
{
	size_t n = strlen(path);
	struct stat st;
	return n > 4 && !strcmp(path + n - 4, ".npz") && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Member `name` of the archive z into *buf (*n bytes): 0, -ENOENT when it
 * has none, else -EINVAL naming it. */
static int member(zip_t *z, const char *path, const char *name, uint8_t **buf, size_t *n)
{
	zip_stat_t st;
	zip_int64_t i = zip_name_locate(z, name, 0);
	if (i < 0)
		return -ENOENT;
	if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) < 0 || !(st.valid & ZIP_STAT_SIZE) ||
	    st.size > (zip_uint64_t)IR_MAX_NUMEL * 8 + (1u << 20))
		return ir_errorf(-EINVAL, "%s: %s: cannot read its size: %s", path, name, zip_strerror(z));
	zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)i, 0);
	*n = (size_t)st.size;
	*buf = f ? ir_malloc(*n + 1) : NULL;
	zip_int64_t got = *buf ? zip_fread(f, *buf, st.size) : -1;
	int rc = 0;
	if (!f || got != (zip_int64_t)st.size)
		rc = ir_errorf(-EINVAL, "%s: %s: cannot read it: %s", path, name,
			       !f      ? zip_strerror(z)
			       : !*buf ? "out of memory"
				       : zip_file_strerror(f));
	if (f)
		zip_fclose(f);
	if (rc < 0) {
		ir_free(*buf);
		*buf = NULL;
	}
	return rc;
}

int ir_npz_read(const char *path, const char *name, int k, struct ir_tensor *t)
{
	memset(t, 0, sizeof *t);
	int err = 0;
	zip_t *z = zip_open(path, ZIP_RDONLY, &err);
	if (!z) {
		zip_error_t ze;
		zip_error_init_with_code(&ze, err);
		int rc = ir_errorf(err == ZIP_ER_NOENT || err == ZIP_ER_OPEN ? -ENOENT : -EINVAL,
				   "%s: not a .npz file numpy.savez writes: %s", path, zip_error_strerror(&ze));
		zip_error_fini(&ze);
		return rc;
	}
	char want[300], pos[32], what[4400];
	uint8_t *buf = NULL;
	size_t n = 0;
	snprintf(want, sizeof want, "%s.npy", name ? name : "");
	snprintf(pos, sizeof pos, "arr_%d.npy", k);
	int rc = name && name[0] ? member(z, path, want, &buf, &n) : -ENOENT;
	const char *used = want;
	if (rc == -ENOENT) {
		rc = member(z, path, pos, &buf, &n);
		used = pos;
	}
	if (rc == -ENOENT)
		rc = ir_errorf(-ENOENT,
			       "%s: holds neither %s nor %s (numpy.savez(FILE, NAME=array, ...) by the inputs' names, "
			       "or numpy.savez(FILE, array, ...) in the model's input order)",
			       path, want, pos);
	FILE *f = rc == 0 ? fmemopen(buf, n, "rb") : NULL;
	if (rc == 0 && !f)
		rc = ir_errorf(-ENOMEM, "%s: out of memory", path);
	if (rc == 0) {
		snprintf(what, sizeof what, "%s: %s", path, used);
		rc = npy_parse(f, what, t);
		fclose(f);
	}
	ir_free(buf);
	zip_discard(z);
	return rc;
}

const char *ir_input_path(char *buf, size_t n, const char *dir, int k)
{
	if (snprintf(buf, n, "%s/input_%d.pb", dir, k) >= (int)n)
		return NULL;
	if (access(buf, F_OK) != 0) { /* no TensorProto: numpy.save's file, where there is one */
		snprintf(buf, n, "%s/input_%d.npy", dir, k);
		if (access(buf, F_OK) != 0)
			snprintf(buf, n, "%s/input_%d.pb", dir, k); /* for the error: the usual name */
	}
	return buf;
}
