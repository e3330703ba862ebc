/*
 * onnx_save.c: writes trained weights back into an ONNX model.
 *
 * onnx_save_params(src, dst, n, names, values) copies the model at src to
 * dst with the initializers names[i] replaced by values[i]:
 *
 * 1. Read src whole and unpack it (so src == dst works), check each value
 *    against its initializer's dtype and shape.
 * 2. Each initializer that changes gets a copy of its TensorProto that
 *    stands in for the original in the graph while packing: replaced ones,
 *    and those whose bytes are external files beside src (dst may live
 *    elsewhere, so their bytes are carried into dst's files). The originals
 *    are put back before the unpacked model is freed, so protobuf-c frees
 *    only what it allocated.
 * 3. If the model with those bytes inline (raw_data, little-endian as ONNX
 *    specifies) packs to at most the inline limit, dst is that. Otherwise
 *    every floating-point initializer's bytes go to "<dst>.data" beside dst
 *    at 4096-byte aligned offsets, referenced by location/offset/length;
 *    integer and bool initializers stay inline (they are shape-sized, and
 *    the importer reads them: external ones only from their file).
 * 4. dst and its data file are written to temporary files in dst's
 *    directory, fsync'ed and renamed over the final names, data file first,
 *    so no partial dst ever exists; on error the temporaries are removed.
 *
 * When a value saved differs from its initializer, dst's producer is pcc
 * (name "pcc", version pcc's, version.h); unchanged weights save src as it
 * was, byte for byte.
 *
 * The inline limit is 1800 MiB, clear of protobuf's 2 GiB message limit.
 * The environment variable PCC_ONNX_SAVE_INLINE_MAX (bytes) lowers it so
 * tests reach the external path on small models; it is read at each call.
 *
 * Example: onnx_save_params("mlp.onnx", "out/mlp.onnx", 1,
 * (const char *[]){ "fc1.weight" }, &w) writes out/mlp.onnx with fc1.weight
 * = w and every other initializer as it was, inline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxio/onnxio_pb.h"
#include "version.h"

/* raw_data and the external files are little-endian; pcc's tensors are
 * host order, written as they are. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "onnx_save.c assumes a little-endian host");

#define INLINE_MAX_DEFAULT (INT64_C(1800) << 20)
#define PROTOBUF_MAX (INT64_C(2) << 30)
#define DATA_ALIGN 4096

/* A file being written under a temporary name beside its final one. */
struct tmp {
	char *path; /* ir_malloc'd temporary name; NULL when none */
	FILE *f;
	int err;     /* first errno of a failed write, 0 if none */
	int64_t pos; /* bytes written */
};

struct init {
	Onnx__TensorProto *orig; /* as unpacked; owned by the model */
	Onnx__TensorProto copy;  /* stands in for orig in the graph when changed */
	int value;               /* index into values[], or -1 */
	bool external;           /* orig's bytes are in a file beside src */
	char *ext_path;          /* that file, ir_malloc'd */
	struct ir_data ext;      /* the same, for ir_data_open: base_dir ir_malloc'd */
	int64_t ext_offset;
	size_t nbytes; /* contents; set when value >= 0 or external */
	void *buf;     /* ir_malloc'd contents read from ext_path */
	Onnx__StringStringEntryProto kv[3], *kvp[3];
	char offset[24], length[24];
};

struct save {
	const char *src, *dst;
	const struct ir_tensor *values;
	Onnx__ModelProto *m;
	Onnx__GraphProto *gp;
	struct init *in; /* [gp->n_initializer] */
	char **producer; /* the model's own producer name and version while pcc's stand in, or NULL */
	char *data_name; /* "<basename of dst>.data", ir_malloc'd */
	char *data_path; /* "<dst>.data" */
	struct tmp model, data;
};

static int64_t inline_max(void)
{
	const char *e = getenv("PCC_ONNX_SAVE_INLINE_MAX");
	char *end;
	if (!e || !e[0])
		return INLINE_MAX_DEFAULT;
	long long v = strtoll(e, &end, 10);
	return *end || v < 0 ? INLINE_MAX_DEFAULT : v;
}

static char *str_cat(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 1;
	char *s = ir_malloc(n);
	if (s)
		snprintf(s, n, "%s%s", a, b);
	return s;
}

/* The path of name in file's directory (ir_malloc'd). */
static char *sibling(const char *file, const char *name)
{
	const char *slash = strrchr(file, '/');
	int dir = slash ? (int)(slash - file + 1) : 0;
	size_t n = (size_t)dir + strlen(name) + 1;
	char *s = ir_malloc(n);
	if (s)
		snprintf(s, n, "%.*s%s", dir, file, name);
	return s;
}

static const char *tname(const Onnx__TensorProto *t)
{
	return t->name ? t->name : "";
}

/* ---- reading src ------------------------------------------------------------ */

static int read_model(struct save *s)
{
	uint8_t *buf = NULL;
	size_t len;
	int rc = onnx_read_file(s->src, &buf, &len);
	if (rc < 0)
		return rc;
	/* protobuf-c copies what it keeps, so buf can go right away */
	s->m = onnx__model_proto__unpack(NULL, len, buf);
	if (!s->m)
		rc = ir_errorf(-EINVAL, "%s: not a valid ONNX model (protobuf decoding failed: truncated or corrupt)",
			       s->src);
	else if (!s->m->graph)
		rc = ir_errorf(-EINVAL, "%s: the model has no graph", s->src);
	else
		s->gp = s->m->graph;
	ir_free(buf);
	return rc;
}

static bool is_external(const Onnx__TensorProto *t)
{
	return t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* Resolves an external initializer's location/offset/length against src's
 * directory; checks the length against its dtype and shape. */
static int plan_external(struct save *s, struct init *it)
{
	const Onnx__TensorProto *t = it->orig;
	const char *loc = NULL;
	int64_t length = -1;
	enum ir_dtype dt;
	struct ir_shape sh;
	if (onnx_tensor_type(t, &dt, &sh) < 0)
		return -EINVAL;
	it->nbytes = (size_t)ir_shape_numel(&sh) * ir_dtype_size(dt);
	for (size_t i = 0; i < t->n_external_data; i++) {
		const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
		char *end;
		if (!k || !v)
			continue;
		if (strcmp(k, "location") == 0) {
			loc = v;
		} else if (strcmp(k, "offset") == 0 || strcmp(k, "length") == 0) {
			long long x = strtoll(v, &end, 10);
			if (*end || x < 0)
				return ir_errorf(-EINVAL, "external data %s \"%s\" is not a size", k, v);
			*(k[0] == 'o' ? &it->ext_offset : &length) = x;
		}
	}
	if (!loc || !onnx_path_inside(loc))
		return ir_errorf(-EINVAL,
				 "external data location \"%s\" must be a relative path inside the model's directory",
				 loc ? loc : "");
	if (length >= 0 && (size_t)length != it->nbytes)
		return ir_errorf(-EINVAL, "external data holds %lld bytes, %s%s needs %zu", (long long)length,
				 ir_dtype_name(dt), ir_shape_str(&sh, (char[IR_SHAPE_STR_MAX]){ 0 }, IR_SHAPE_STR_MAX),
				 it->nbytes);
	it->external = true;
	it->ext_path = sibling(s->src, loc);
	it->ext = (struct ir_data){ .path = loc, .base_dir = sibling(s->src, ".") };
	return it->ext_path && it->ext.base_dir ? 0 : ir_errorf(-ENOMEM, "out of memory");
}

/* Reads an external initializer's bytes into it->buf. */
static int load_external(struct init *it)
{
	struct stat st;
	int rc = 0;
	int fd = ir_data_open(&it->ext, tname(it->orig));
	FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
	if (fd >= 0 && !f) {
		close(fd);
		return ir_errorf(-ENOMEM, "out of memory reading %s", it->ext_path);
	}
	if (!f)
		return fd;
	if (!(it->buf = ir_malloc(it->nbytes ? it->nbytes : 1))) {
		rc = ir_errorf(-ENOMEM, "out of memory reading %zu bytes of %s", it->nbytes, it->ext_path);
	} else if (fseeko(f, (off_t)it->ext_offset, SEEK_SET) != 0 || fread(it->buf, 1, it->nbytes, f) != it->nbytes) {
		long long size = fstat(fileno(f), &st) == 0 ? (long long)st.st_size : -1;
		rc = ir_errorf(
			-EIO,
			"%s: external data of initializer \"%s\" is short: needs %zu bytes at offset %lld, the file has %lld bytes",
			it->ext_path, tname(it->orig), it->nbytes, (long long)it->ext_offset, size);
	}
	fclose(f);
	return rc;
}

/* ---- choosing what changes ------------------------------------------------- */

/* Replaces initializer i's contents in the graph by nbytes at bytes (NULL
 * while only sizing), inline, with every other data field cleared. */
static void set_raw(struct save *s, size_t i, const void *bytes, size_t nbytes)
{
	struct init *it = &s->in[i];
	Onnx__TensorProto *c = &it->copy;
	*c = *it->orig; /* shares name, dims, doc_string with orig */
	c->n_float_data = c->n_int32_data = c->n_string_data = c->n_int64_data = 0;
	c->n_double_data = c->n_uint64_data = c->n_external_data = 0;
	c->float_data = NULL;
	c->int32_data = NULL;
	c->string_data = NULL;
	c->int64_data = NULL;
	c->double_data = NULL;
	c->uint64_data = NULL;
	c->external_data = NULL;
	c->has_data_location = 0;
	c->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
	c->has_raw_data = 1;
	c->raw_data.len = nbytes;
	c->raw_data.data = (uint8_t *)bytes;
	s->gp->initializer[i] = c;
}

/* Points initializer i at nbytes at offset of the data file. */
static void set_external(struct save *s, size_t i, int64_t offset, size_t nbytes)
{
	struct init *it = &s->in[i];
	static const char *keys[3] = { "location", "offset", "length" };
	set_raw(s, i, NULL, 0);
	snprintf(it->offset, sizeof it->offset, "%lld", (long long)offset);
	snprintf(it->length, sizeof it->length, "%zu", nbytes);
	const char *vals[3] = { s->data_name, it->offset, it->length };
	for (int k = 0; k < 3; k++) {
		it->kv[k] = (Onnx__StringStringEntryProto)ONNX__STRING_STRING_ENTRY_PROTO__INIT;
		it->kv[k].key = (char *)keys[k];
		it->kv[k].value = (char *)vals[k];
		it->kvp[k] = &it->kv[k];
	}
	it->copy.has_raw_data = 0;
	it->copy.n_external_data = 3;
	it->copy.external_data = it->kvp;
	it->copy.has_data_location = 1;
	it->copy.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

/* Finds each name among the main graph's initializers (a linear scan per
 * name: models have thousands of initializers at most) and checks its
 * value; then plans the external sources. */
static int match_values(struct save *s, int n, const char *const *names)
{
	char s1[IR_SHAPE_STR_MAX], s2[IR_SHAPE_STR_MAX];
	for (int k = 0; k < n; k++) {
		const struct ir_tensor *v = &s->values[k];
		size_t i = 0;
		IR_ASSERT(names[k] && (v->data || ir_tensor_bytes(v) == 0));
		while (i < s->gp->n_initializer && strcmp(tname(s->in[i].orig), names[k]) != 0)
			i++;
		if (i == s->gp->n_initializer)
			return ir_errorf(-EINVAL, "%s: no initializer \"%s\" in the main graph", s->src, names[k]);
		if (s->in[i].value >= 0)
			return ir_errorf(-EINVAL, "%s: initializer \"%s\" is given twice", s->src, names[k]);
		enum ir_dtype dt;
		struct ir_shape sh;
		if (onnx_tensor_type(s->in[i].orig, &dt, &sh) < 0) {
			ir_error_prefix("%s: initializer \"%s\"", s->src, names[k]);
			return -EINVAL;
		}
		if (dt != v->dtype || !ir_shape_eq(&sh, &v->shape))
			return ir_errorf(-EINVAL, "%s: initializer \"%s\": expected %s%s, got %s%s", s->src, names[k],
					 ir_dtype_name(dt), ir_shape_str(&sh, s1, sizeof s1), ir_dtype_name(v->dtype),
					 ir_shape_str(&v->shape, s2, sizeof s2));
		s->in[i].value = k;
		s->in[i].nbytes = ir_tensor_bytes(v);
		set_raw(s, i, v->data, s->in[i].nbytes);
	}
	for (size_t i = 0; i < s->gp->n_initializer; i++) {
		struct init *it = &s->in[i];
		if (it->value >= 0 || !is_external(it->orig))
			continue;
		int rc = plan_external(s, it);
		if (rc < 0) {
			ir_error_prefix("%s: initializer \"%s\"", s->src, tname(it->orig));
			return rc;
		}
		set_raw(s, i, NULL, it->nbytes);
	}
	return 0;
}

/* ---- temporary files ---------------------------------------------------------- */

/* Creates "<final>.tmp-<pid>-<k>" exclusively: in final's directory, so the
 * rename is atomic, and with mode 0666 less the umask like any new file
 * (mkstemp's 0600 could only be widened by calling umask(), which is
 * process-wide). */
static int tmp_create(struct tmp *t, const char *final)
{
	static unsigned serial;
	size_t n = strlen(final) + 48;
	int fd = -1, e = 0;
	if (!(t->path = ir_malloc(n)))
		return ir_errorf(-ENOMEM, "%s: out of memory", final);
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		snprintf(t->path, n, "%s.tmp-%ld-%u", final, (long)getpid(), serial++);
		fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		e = errno;
		if (fd < 0 && e != EEXIST)
			break;
	}
	if (fd >= 0 && (t->f = fdopen(fd, "wb")))
		return 0;
	e = fd >= 0 ? errno : e;
	if (fd >= 0) {
		close(fd);
		unlink(t->path);
	}
	ir_free(t->path);
	t->path = NULL;
	return ir_errorf(-e, "%s: cannot create a temporary file beside it: %s", final, strerror(e));
}

static void tmp_write(struct tmp *t, const void *p, size_t n)
{
	errno = 0;
	if (n && !t->err && fwrite(p, 1, n, t->f) != n)
		t->err = errno ? errno : EIO;
	t->pos += (int64_t)n;
}

/* Flushes, fsyncs and closes; the data is on disk under the temporary name. */
static int tmp_close(struct tmp *t, const char *final)
{
	if (!t->err && (fflush(t->f) != 0 || fsync(fileno(t->f)) != 0))
		t->err = errno;
	if (fclose(t->f) != 0 && !t->err)
		t->err = errno;
	t->f = NULL;
	if (t->err)
		return ir_errorf(-t->err, "%s: cannot write: %s", final, strerror(t->err));
	return 0;
}

static int tmp_rename(struct tmp *t, const char *final)
{
	if (rename(t->path, final) != 0)
		return ir_errorf(-errno, "%s: cannot rename %s over it: %s", final, t->path, strerror(errno));
	ir_free(t->path);
	t->path = NULL;
	return 0;
}

static void tmp_discard(struct tmp *t)
{
	if (t->f)
		fclose(t->f);
	if (t->path)
		unlink(t->path);
	ir_free(t->path);
	memset(t, 0, sizeof *t);
}

/* Makes the renames durable. Best effort: some file systems refuse to
 * fsync a directory, and the files themselves are already safe. */
static void sync_dir(const char *file)
{
	char *dir = sibling(file, ".");
	if (!dir)
		return;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	ir_free(dir);
}

/* protobuf-c packs through this into the model's temporary file, so the
 * packed model never sits in memory beside the weights. */
struct file_buffer {
	ProtobufCBuffer base;
	struct tmp *t;
};

static void file_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	tmp_write(((struct file_buffer *)b)->t, data, len);
}

static int write_model(struct save *s)
{
	struct file_buffer fb = { .base = { .append = file_append }, .t = &s->model };
	int rc = tmp_create(&s->model, s->dst);
	if (rc < 0)
		return rc;
	onnx__model_proto__pack_to_buffer(s->m, &fb.base);
	return tmp_close(&s->model, s->dst);
}

/* ---- the external layout ----------------------------------------------------- */

/* Writes initializer i's bytes at the next aligned offset of the data file
 * and points it there. Only floating-point initializers come here. */
static int write_one(struct save *s, size_t i)
{
	static const uint8_t zeros[DATA_ALIGN];
	struct init *it = &s->in[i];
	const Onnx__TensorProto *t = it->orig;
	struct ir_tensor host = { 0 };
	const void *bytes;
	size_t nbytes;
	int rc;
	if (it->value >= 0) {
		bytes = s->values[it->value].data;
		nbytes = it->nbytes;
	} else if (it->external) {
		if ((rc = load_external(it)) < 0)
			return rc;
		bytes = it->buf;
		nbytes = it->nbytes;
	} else if ((rc = onnx_tensor_decode(t, &host)) < 0) {
		/* decoding checks raw_data or the typed fields against the shape */
		ir_error_prefix("%s: initializer \"%s\"", s->src, tname(t));
		return rc;
	} else {
		bytes = host.data;
		nbytes = ir_tensor_bytes(&host);
	}
	int64_t pad = (DATA_ALIGN - s->data.pos % DATA_ALIGN) % DATA_ALIGN;
	tmp_write(&s->data, zeros, (size_t)pad);
	int64_t offset = s->data.pos;
	tmp_write(&s->data, bytes, nbytes);
	set_external(s, i, offset, nbytes);
	ir_tensor_free(&host);
	ir_free(it->buf);
	it->buf = NULL;
	return 0;
}

static int write_external(struct save *s)
{
	int rc;
	const char *slash = strrchr(s->dst, '/');
	s->data_path = str_cat(s->dst, ".data");
	s->data_name = str_cat(slash ? slash + 1 : s->dst, ".data");
	if (!s->data_path || !s->data_name)
		return ir_errorf(-ENOMEM, "out of memory");
	if ((rc = tmp_create(&s->data, s->data_path)) < 0)
		return rc;
	for (size_t i = 0; i < s->gp->n_initializer; i++) {
		struct init *it = &s->in[i];
		enum ir_dtype dt;
		struct ir_shape sh;
		if (onnx_tensor_type(it->orig, &dt, &sh) == 0 && ir_dtype_is_float(dt)) {
			if ((rc = write_one(s, i)) < 0)
				return rc;
			continue;
		}
		ir_error_clear();
		/* integer ones stay inline; external sources were checked */
		if (it->external) {
			if ((rc = load_external(it)) < 0)
				return rc;
			it->copy.raw_data.data = it->buf;
		}
	}
	if ((rc = tmp_close(&s->data, s->data_path)) < 0)
		return rc;
	size_t size = onnx__model_proto__get_packed_size(s->m);
	if ((int64_t)size >= PROTOBUF_MAX)
		return ir_errorf(-EFBIG, "%s: %zu bytes even with the weights in %s: more than protobuf's 2 GiB",
				 s->dst, size, s->data_name);
	return write_model(s);
}

static int write_inline(struct save *s)
{
	for (size_t i = 0; i < s->gp->n_initializer; i++) {
		struct init *it = &s->in[i];
		if (!it->external)
			continue;
		int rc = load_external(it);
		if (rc < 0)
			return rc;
		it->copy.raw_data.data = it->buf;
	}
	return write_model(s);
}

/* Whether a value saved differs from its initializer in src, so that pcc
 * produced dst: an inline one decoded and compared byte for byte, an
 * external one taken as changed. Unchanged weights save src as it was. */
static bool weights_changed(const struct save *s)
{
	for (size_t i = 0; i < s->gp->n_initializer; i++) {
		const struct init *x = &s->in[i];
		if (x->value < 0)
			continue;
		struct ir_tensor t = { 0 };
		if (is_external(x->orig) || onnx_tensor_decode(x->orig, &t) < 0) {
			ir_error_clear();
			return true;
		}
		const struct ir_tensor *v = &s->values[x->value];
		size_t nb = ir_tensor_bytes(v);
		bool same = ir_tensor_bytes(&t) == nb && !memcmp(t.data, v->data, nb);
		ir_tensor_free(&t);
		if (!same)
			return true;
	}
	return false;
}

int onnx_save_params(const char *src, const char *dst, int n, const char *const *names, const struct ir_tensor *values)
{
	struct save s = { .src = src, .dst = dst, .values = values };
	int rc;
	IR_ASSERT(src && dst && n >= 0 && (n == 0 || (names && values)));
	if ((rc = read_model(&s)) < 0)
		goto out;
	size_t ninit = s.gp->n_initializer;
	if (!(s.in = ir_calloc(ninit ? ninit : 1, sizeof *s.in))) {
		rc = ir_errorf(-ENOMEM, "%s: out of memory", src);
		goto out;
	}
	for (size_t i = 0; i < ninit; i++) {
		s.in[i].orig = s.gp->initializer[i];
		s.in[i].value = -1;
	}
	if ((rc = match_values(&s, n, names)) < 0)
		goto out;
	/* new weights make the file pcc's: its producer says so (the
	 * unpacked strings are put back before the model is freed) */
	char *producer[2] = { s.m->producer_name, s.m->producer_version };
	if (weights_changed(&s)) {
		s.m->producer_name = (char *)"pcc";
		s.m->producer_version = (char *)PCC_VERSION;
		s.producer = producer;
	}
	/* sizing needs only raw_data.len; nothing external is read yet */
	if ((int64_t)onnx__model_proto__get_packed_size(s.m) <= inline_max())
		rc = write_inline(&s);
	else
		rc = write_external(&s);
	/* the data file first: a new dst must never point at a missing or old
	 * one (if the second rename fails, an old dst may; it cannot be undone) */
	if (rc == 0 && s.data.path)
		rc = tmp_rename(&s.data, s.data_path);
	if (rc == 0)
		rc = tmp_rename(&s.model, dst);
	if (rc == 0)
		sync_dir(dst);
out:
	tmp_discard(&s.model);
	tmp_discard(&s.data);
	for (size_t i = 0; s.in && i < s.gp->n_initializer; i++) {
		s.gp->initializer[i] = s.in[i].orig;
		ir_free(s.in[i].ext_path);
		ir_free((char *)s.in[i].ext.base_dir);
		ir_free(s.in[i].buf);
	}
	ir_free(s.in);
	ir_free(s.data_name);
	ir_free(s.data_path);
	if (s.m && s.producer) {
		s.m->producer_name = s.producer[0];
		s.m->producer_version = s.producer[1];
	}
	if (s.m)
		onnx__model_proto__free_unpacked(s.m, NULL);
	return rc;
}
