/*
 * onnx_file.c: a whole ONNX model file read into memory (under 2 GiB: the
 * weights of a larger model must be external data), and where an
 * initializer's external data lives (onnxio_pb.h). The importer and
 * onnxio's own readers and writer share them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnxio/onnxio_pb.h"

/* The ONNX file itself (weights may live in external files) */
#define MODEL_MAX_BYTES (INT64_C(1) << 31)

int onnx_read_file(const char *path, uint8_t **buf, size_t *len)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno ? errno : ENOENT;
		return ir_errorf(-e, "%s: cannot open: %s", path, strerror(e));
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		return ir_errorf(-EINVAL, "%s: not a regular file", path);
	}
	if (st.st_size > MODEL_MAX_BYTES) {
		fclose(f);
		return ir_errorf(-EFBIG, "%s: %lld bytes; ONNX files over 2 GiB must keep weights as external data",
				 path, (long long)st.st_size);
	}
	*len = (size_t)st.st_size;
	*buf = ir_malloc(*len ? *len : 1);
	if (!*buf) {
		fclose(f);
		return ir_errorf(-ENOMEM, "%s: out of memory reading %zu bytes", path, *len);
	}
	if (fread(*buf, 1, *len, f) != *len) {
		ir_free(*buf);
		fclose(f);
		return ir_errorf(-EIO, "%s: read error", path);
	}
	fclose(f);
	return 0;
}

bool onnx_path_inside(const char *p)
{
	if (!p[0] || p[0] == '/')
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n + (s[n] == '/');
	}
	return true;
}

int onnx_external_ref(const char *base_dir, const Onnx__TensorProto *t, struct ir_data *d)
{
	d->base_dir = base_dir;
	d->offset = 0;
	d->nbytes = -1;
	for (size_t i = 0; i < t->n_external_data; i++) {
		const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
		if (!k || !v)
			continue;
		char *end;
		if (strcmp(k, "location") == 0) {
			if (!onnx_path_inside(v))
				return ir_errorf(
					-EINVAL,
					"external data location \"%s\" must be a relative path inside the model's directory",
					v);
			d->path = v;
		} else if (strcmp(k, "offset") == 0 || strcmp(k, "length") == 0) {
			long long x = strtoll(v, &end, 10);
			if (*end || x < 0)
				return ir_errorf(-EINVAL, "external data %s \"%s\" is not a size", k, v);
			*(k[0] == 'o' ? &d->offset : &d->nbytes) = x;
		}
	}
	if (!d->path)
		return ir_errorf(-EINVAL, "external data has no location");
	return 0;
}
