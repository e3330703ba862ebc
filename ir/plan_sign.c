/*
 * plan_sign.c: the keyed tag of a signed plan (plan.h). A plan holds code
 * pcc-run executes, so the one who runs it may want to know who wrote it:
 * pcc -o plan.bin --sign-key KEY appends an HMAC-SHA256 (OpenSSL's
 * libcrypto) of every byte of the file before it, under the secret in KEY,
 * as the PlanFile's field 4; pcc-run --verify-key KEY refuses a plan whose
 * tag is missing or differs (plan_unpack.c) before decoding it. The tag
 * covers the magic, the format version, the content and its checksum, so
 * changing any of them, checksum recomputed or not, needs the key.
 *
 * Field 4 on the wire: the tag byte 0x22 (field 4, length-delimited), the
 * length 32, the 32 bytes of the HMAC.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/plan_io.h"

int plan_key_read(const char *path, struct plan_key *k)
{
	struct stat st;
	memset(k, 0, sizeof *k);
	snprintf(k->path, sizeof k->path, "%s", path);
	/* O_NONBLOCK: a FIFO named as the key is refused, not waited on */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), e;
	if (fd < 0 || fstat(fd, &st) < 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		return ir_errorf(-e, "%s: cannot read the key: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return ir_errorf(-EINVAL, "%s: a key is a regular file", path);
	}
	size_t got = 0;
	bool more = false; /* past PLAN_KEY_MAX */
	ssize_t r;
	uint8_t past;
	for (;;) {
		r = got < sizeof k->bytes ? read(fd, k->bytes + got, sizeof k->bytes - got) : read(fd, &past, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (more = got == sizeof k->bytes))
			break;
		got += (size_t)r;
	}
	e = errno;
	close(fd);
	if (r < 0) {
		plan_key_wipe(k);
		return ir_errorf(-e, "%s: cannot read the key: %s", path, strerror(e));
	}
	if (more || got < PLAN_KEY_MIN) {
		plan_key_wipe(k);
		char size[32];
		snprintf(size, sizeof size, more ? "more than %zu" : "%zu", got);
		return ir_errorf(
			-EINVAL,
			"%s: a key of %s bytes: expected %d to %d (a random one: head -c 32 /dev/urandom > KEY)", path,
			size, PLAN_KEY_MIN, PLAN_KEY_MAX);
	}
	k->n = (size_t)got;
	return 0;
}

void plan_key_wipe(struct plan_key *k)
{
	OPENSSL_cleanse(k->bytes, sizeof k->bytes);
	k->n = 0;
}

int plan_tag(const struct plan_key *k, const uint8_t *data, size_t n, uint8_t out[PLAN_TAG_LEN])
{
	unsigned len = 0;
	if (!HMAC(EVP_sha256(), k->bytes, (int)k->n, data, n, out, &len) || len != PLAN_TAG_LEN)
		return ir_errorf(-EIO, "HMAC-SHA256 failed (libcrypto)");
	return 0;
}

bool plan_tag_equal(const uint8_t *a, const uint8_t *b)
{
	return CRYPTO_memcmp(a, b, PLAN_TAG_LEN) == 0; /* in constant time */
}

int plan_sign(uint8_t **buf, size_t *n, const struct plan_key *k)
{
	uint8_t *b = ir_realloc(*buf, *n + 2 + PLAN_TAG_LEN);
	if (!b)
		return ir_errorf(-ENOMEM, "out of memory signing the plan");
	*buf = b;
	int rc = plan_tag(k, b, *n, b + *n + 2);
	if (rc < 0)
		return rc;
	b[*n] = PLAN_TAG_FIELD;
	b[*n + 1] = PLAN_TAG_LEN;
	*n += 2 + PLAN_TAG_LEN;
	return 0;
}
