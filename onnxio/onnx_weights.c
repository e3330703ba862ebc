/*
 * onnx_weights.c: slices of a model's initializers, for a runtime rank
 * that loads only its own shards (onnxio.h). The model file is unpacked
 * once (protobuf bounds inline data to 2 GiB); external data is read with
 * pread, one contiguous run of the slice at a time, so a rank reads the
 * bytes of its slices and nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxio/onnxio_pb.h"

struct onnx_weights {
	char *path;     /* for messages */
	char *base_dir; /* for external data */
	Onnx__ModelProto *m;
	int n;
	const Onnx__TensorProto **by_name; /* initializers sorted by name */
};

static int cmp_name(const void *a, const void *b)
{
	const Onnx__TensorProto *x = *(const Onnx__TensorProto *const *)a, *y = *(const Onnx__TensorProto *const *)b;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

void onnx_weights_close(struct onnx_weights *w)
{
	if (!w)
		return;
	if (w->m)
		onnx__model_proto__free_unpacked(w->m, NULL);
	ir_free(w->by_name);
	ir_free(w->path);
	ir_free(w->base_dir);
	ir_free(w);
}

static char *dup_n(const char *s, size_t n)
{
	char *d = ir_malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

struct onnx_weights *onnx_weights_open(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	struct onnx_weights *w = ir_calloc(1, sizeof *w);
	const char *slash = strrchr(path, '/');
	if (!w || !(w->path = dup_n(path, strlen(path))) ||
	    !(w->base_dir = slash ? dup_n(path, slash > path ? (size_t)(slash - path) : 1) : dup_n(".", 1))) {
		onnx_weights_close(w);
		ir_errorf(-ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	if (onnx_read_file(path, &buf, &len) < 0) {
		onnx_weights_close(w);
		return NULL;
	}
	w->m = onnx__model_proto__unpack(NULL, len, buf);
	ir_free(buf);
	if (!w->m || !w->m->graph) {
		ir_errorf(-EINVAL, "%s: not a valid ONNX model (%s)", path,
			  w->m ? "no graph" : "protobuf decoding failed");
		onnx_weights_close(w);
		return NULL;
	}
	const Onnx__GraphProto *g = w->m->graph;
	w->n = (int)g->n_initializer;
	if (!(w->by_name = ir_calloc((size_t)w->n + 1, sizeof *w->by_name))) {
		onnx_weights_close(w);
		ir_errorf(-ENOMEM, "%s: out of memory", path);
		return NULL;
	}
	for (int i = 0; i < w->n; i++)
		w->by_name[i] = g->initializer[i];
	qsort(w->by_name, (size_t)w->n, sizeof *w->by_name, cmp_name);
	return w;
}

static const Onnx__TensorProto *find(const struct onnx_weights *w, const char *name)
{
	Onnx__TensorProto key = { .name = (char *)name };
	const Onnx__TensorProto *kp = &key, *const *hit = bsearch(&kp, w->by_name, (size_t)w->n, sizeof *w->by_name,
								  cmp_name);
	return hit ? *hit : NULL;
}

int onnx_weights_type(const struct onnx_weights *w, const char *name, enum ir_dtype *dt, struct ir_shape *shape)
{
	const Onnx__TensorProto *t = find(w, name);
	if (!t)
		return ir_errorf(-ENOENT, "%s: no initializer \"%s\"", w->path, name);
	if (onnx_tensor_type(t, dt, shape) < 0) {
		ir_error_prefix("%s: initializer \"%s\"", w->path, name);
		return -EINVAL;
	}
	return 0;
}

/* The block's contiguous runs: dimensions [0, k) are iterated, and each
 * run holds the block's extent of dimension k times the whole of the
 * dimensions after it (where the block spans them). */
static int run_split(const struct ir_shape *global, const struct ir_shape *block, int64_t *run)
{
	int k = global->rank - 1;
	*run = 1;
	if (global->rank == 0)
		return 0;
	while (k > 0 && block->dims[k] == global->dims[k]) {
		*run *= global->dims[k];
		k--;
	}
	*run *= block->dims[k];
	return k;
}

static int read_external(const struct onnx_weights *w, const Onnx__TensorProto *t, const struct ir_shape *global,
			 const int64_t *start, const struct ir_shape *block, size_t es, uint8_t *dst)
{
	struct ir_data d = { 0 };
	char file[4096];
	if (onnx_external_ref(w->base_dir, t, &d) < 0) {
		ir_error_prefix("%s: initializer \"%s\"", w->path, t->name);
		return -EINVAL;
	}
	int64_t want = ir_shape_numel(global) * (int64_t)es;
	if (d.nbytes >= 0 && d.nbytes != want)
		return ir_errorf(-EINVAL,
				 "%s: initializer \"%s\": external data holds %lld bytes, its shape needs %lld",
				 w->path, t->name, (long long)d.nbytes, (long long)want);
	snprintf(file, sizeof file, "%s/%s", d.base_dir, d.path);
	int fd = ir_data_open(&d, t->name);
	if (fd < 0)
		return fd;
	int64_t run, idx[IR_MAX_RANK] = { 0 };
	int k = run_split(global, block, &run), rc = 0;
	int64_t nruns = 1;
	for (int i = 0; i < k; i++)
		nruns *= block->dims[i];
	for (int64_t r = 0; r < nruns && rc == 0; r++) {
		int64_t off = 0;
		for (int i = 0; i < global->rank; i++)
			off = off * global->dims[i] + start[i] + (i < k ? idx[i] : 0);
		size_t n = (size_t)run * es, got = 0;
		while (got < n) {
			ssize_t x = pread(fd, dst + got, n - got, (off_t)(d.offset + off * (int64_t)es + (int64_t)got));
			if (x <= 0) {
				rc = ir_errorf(-EIO,
					       "%s: external data of \"%s\" is short or unreadable at offset %lld%s%s",
					       file, t->name, (long long)(d.offset + off * (int64_t)es + (int64_t)got),
					       x < 0 ? ": " : "", x < 0 ? strerror(errno) : "");
				break;
			}
			got += (size_t)x;
		}
		dst += n;
		for (int i = k - 1; i >= 0; i--) {
			if (++idx[i] < block->dims[i])
				break;
			idx[i] = 0;
		}
	}
	close(fd);
	return rc;
}

bool onnx_weights_absent(const struct onnx_weights *w, const char *name)
{
	const Onnx__TensorProto *t = find(w, name);
	struct ir_data d = { 0 };
	char file[4096];
	if (!t || !t->has_data_location || t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL ||
	    onnx_external_ref(w->base_dir, t, &d) < 0)
		return false;
	snprintf(file, sizeof file, "%s/%s", d.base_dir, d.path);
	return access(file, F_OK) < 0 && errno == ENOENT;
}

/* The block in the stored dtype into dst. */
static int read_stored(const struct onnx_weights *w, const Onnx__TensorProto *t, enum ir_dtype dt,
		       const struct ir_shape *global, const int64_t *start, const struct ir_shape *block, void *dst)
{
	size_t es = ir_dtype_size(dt);
	if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
		return read_external(w, t, global, start, block, es, dst);
	if (t->has_raw_data) {
		if (t->raw_data.len != (size_t)ir_shape_numel(global) * es)
			return ir_errorf(-EINVAL,
					 "%s: initializer \"%s\": raw_data holds %zu bytes, its shape needs %zu",
					 w->path, t->name, t->raw_data.len, (size_t)ir_shape_numel(global) * es);
		ir_copy_block(dst, block, NULL, t->raw_data.data, global, start, block, es);
		return 0;
	}
	struct ir_tensor whole;
	if (onnx_tensor_decode(t, &whole) < 0) {
		ir_error_prefix("%s: initializer \"%s\"", w->path, t->name);
		return -EINVAL;
	}
	ir_copy_block(dst, block, NULL, whole.data, global, start, block, es);
	ir_tensor_free(&whole);
	return 0;
}

int onnx_weights_read(const struct onnx_weights *w, const char *name, enum ir_dtype dtype,
		      const struct ir_shape *global, const int64_t *start, const struct ir_shape *block, void *dst)
{
	const Onnx__TensorProto *t = find(w, name);
	enum ir_dtype dt;
	struct ir_shape s;
	char want[IR_SHAPE_STR_MAX], have[IR_SHAPE_STR_MAX];
	if (!t)
		return ir_errorf(-ENOENT, "%s: no initializer \"%s\"", w->path, name);
	if (onnx_tensor_type(t, &dt, &s) < 0) {
		ir_error_prefix("%s: initializer \"%s\"", w->path, name);
		return -EINVAL;
	}
	if (!ir_shape_eq(&s, global) || (dt != dtype && !(ir_dtype_is_float(dt) && ir_dtype_is_float(dtype))))
		return ir_errorf(-EINVAL, "%s: initializer \"%s\" is %s%s, the plan expects %s%s", w->path, name,
				 ir_dtype_name(dt), ir_shape_str(&s, have, sizeof have), ir_dtype_name(dtype),
				 ir_shape_str(global, want, sizeof want));
	for (int i = 0; i < s.rank; i++)
		if (start[i] < 0 || block->dims[i] < 0 || start[i] > s.dims[i] - block->dims[i])
			return ir_errorf(-EINVAL,
					 "%s: initializer \"%s\": slice %s at dimension %d start %lld is outside %s",
					 w->path, name, ir_shape_str(block, want, sizeof want), i, (long long)start[i],
					 ir_shape_str(&s, have, sizeof have));
	if (dt == dtype)
		return read_stored(w, t, dt, global, start, block, dst);
	struct ir_tensor tmp, out = { dtype, *block, dst };
	int rc = ir_tensor_alloc(&tmp, dt, block);
	if (rc == 0 && (rc = read_stored(w, t, dt, global, start, block, tmp.data)) == 0)
		for (int64_t i = 0; i < ir_shape_numel(block); i++)
			ir_tensor_set_f64(&out, i, ir_tensor_get_f64(&tmp, i));
	ir_tensor_free(&tmp);
	return rc;
}
