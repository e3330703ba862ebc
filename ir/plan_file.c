/*
 * plan_file.c: plan.bin on disk: plan_pack/plan_unpack (plan_io.c) over a
 * whole file. Reading refuses a file over the 2 GiB a plan may pack to;
 * writing goes to "<path>.tmp.<pid>", renamed over path once complete, so
 * a reader never sees a partial plan and a failed write leaves nothing.
 * The model's path is written relative to the plan's directory where the
 * two share a folder below "/" (plan_model_path resolves it), so a folder
 * holding plans and models can move to another machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "ir/plan.h"

/* protobuf-c's lengths are 32-bit: keep clear of them, as ONNX does */
#define PLAN_MAX_BYTES ((size_t)INT32_MAX - 64)

/* ---- files ------------------------------------------------------------------------ */

static int read_file(const char *path, uint8_t **out, size_t *n)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;
	if (fd < 0 || fstat(fd, &st) < 0)
		goto fail;
	if ((uint64_t)st.st_size > PLAN_MAX_BYTES + 64) {
		close(fd);
		return ir_errorf(-EFBIG, "%s: not a pcc plan (%lld bytes, more than a plan holds)", path,
				 (long long)st.st_size);
	}
	if (!(buf = ir_malloc((size_t)st.st_size))) {
		close(fd);
		return ir_errorf(-ENOMEM, "%s: out of memory reading %lld bytes", path, (long long)st.st_size);
	}
	/* a file that shrinks meanwhile just reads short and fails as truncated */
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*out = buf;
	*n = got;
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	ir_free(buf);
	return ir_errorf(e == ENOENT ? -ENOENT : -EIO, "%s: cannot read: %s", path, strerror(e));
}

struct plan *plan_read(const char *path)
{
	return plan_read_verified(path, NULL);
}

struct plan *plan_read_verified(const char *path, const struct plan_key *k)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	if (read_file(path, &buf, &n) < 0)
		return NULL;
	struct plan *p = plan_unpack_verified(buf, n, k);
	ir_free(buf);
	if (!p)
		ir_error_prefix("%s", path);
	return p;
}

static int write_all(int fd, const uint8_t *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Skips one path component and the slashes after it; its length in *n. */
static const char *component(const char *s, size_t *n)
{
	*n = strcspn(s, "/");
	s += *n;
	while (*s == '/')
		s++;
	return s;
}

/* The absolute path model as seen from the directory of the plan file
 * path: "../../models/m.onnx", or NULL (kept absolute) when the two share
 * no folder below "/" or that directory cannot be resolved. */
static char *model_relative(const char *model, const char *path)
{
	if (!model || model[0] != '/')
		return NULL;
	size_t n = strlen(path), la, lb;
	char *dir = ir_malloc(n + 2), *real = NULL, *rel = NULL;
	if (!dir)
		return NULL;
	memcpy(dir, path, n + 1);
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else
		slash[slash == dir] = 0; /* "/plan.bin": "/" */
	real = realpath(dir, NULL);
	ir_free(dir);
	if (!real)
		return NULL;
	const char *a = real + 1, *b = model + 1;
	int shared = 0, up = 0;
	for (;;) {
		const char *na = component(a, &la), *nb = component(b, &lb);
		if (!la || la != lb || memcmp(a, b, la))
			break;
		a = na;
		b = nb;
		shared++;
	}
	while (*a) {
		a = component(a, &la);
		up++;
	}
	if (shared && *b && (rel = ir_malloc((size_t)up * 3 + strlen(b) + 1))) {
		for (int i = 0; i < up; i++)
			memcpy(rel + 3 * i, "../", 3);
		strcpy(rel + 3 * up, b);
	}
	free(real); /* realpath's, from the C library */
	return rel;
}

int plan_model_path(const struct plan *p, const char *plan_path, char **out)
{
	*out = NULL;
	if (!p->model || !p->model[0])
		return 0;
	const char *slash = p->model[0] == '/' ? NULL : strrchr(plan_path, '/');
	size_t dn = slash ? (size_t)(slash - plan_path) + 1 : 0, mn = strlen(p->model);
	char *s = ir_malloc(dn + mn + 1);
	if (!s)
		return ir_errorf(-ENOMEM, "out of memory");
	memcpy(s, plan_path, dn);
	memcpy(s + dn, p->model, mn + 1);
	*out = s;
	return 0;
}

int plan_write(const struct plan *p, const char *path)
{
	return plan_write_signed(p, path, NULL);
}

int plan_write_signed(const struct plan *p, const char *path, const struct plan_key *k)
{
	uint8_t *buf;
	size_t n, tn = strlen(path) + 32;
	struct plan stored = *p; /* the same plan, its model's path as the file keeps it */
	char *rel = model_relative(p->model, path);
	if (rel)
		stored.model = rel;
	int rc = plan_pack(&stored, &buf, &n), fd = -1;
	ir_free(rel);
	if (rc == 0 && k && (rc = plan_sign(&buf, &n, k)) < 0)
		ir_free(buf);
	if (rc < 0) {
		ir_error_prefix("%s", path);
		return rc;
	}
	char *tmp = ir_malloc(tn);
	if (!tmp) {
		ir_free(buf);
		return ir_errorf(-ENOMEM, "%s: out of memory", path);
	}
	snprintf(tmp, tn, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = write_all(fd, buf, n);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
out:
	if (rc < 0)
		ir_errorf(rc, "%s: cannot write: %s", path, strerror(-rc));
	ir_free(tmp);
	ir_free(buf);
	return rc;
}

int plan_check_mesh(const struct plan *p, int nranks)
{
	if (nranks != p->ndevices)
		return ir_errorf(-EINVAL, "plan compiled for %d devices (cluster %s), run with %d ranks", p->ndevices,
				 p->cluster && *p->cluster ? p->cluster : "unknown", nranks);
	return 0;
}

int plan_hash_file(const char *path, uint64_t *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return ir_errorf(-errno, "%s: cannot read: %s", path, strerror(errno));
	XXH3_state_t *s = XXH3_createState();
	if (!s) {
		fclose(f);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	XXH3_64bits_reset(s);
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		XXH3_64bits_update(s, buf, n);
	int err = ferror(f);
	fclose(f);
	*out = XXH3_64bits_digest(s);
	XXH3_freeState(s);
	return err ? ir_errorf(-EIO, "%s: read error", path) : 0;
}
