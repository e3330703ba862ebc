/*
 * ckpt_manifest.c: a checkpoint's manifest.json (format in ckpt.c), read
 * and checked against the plan that loads it (ckpt_manifest.h).
 *
 * Everything a loading rank later does with a shard is bounded here: its
 * slice is a valid shape (numel at most 2^44, so bytes cannot overflow), its
 * byte count is that of its shape and dtype, and a shard of one of the
 * plan's tensors lies inside that tensor, so the overlap arithmetic of
 * rt_shard_overlap stays within int64. The manifest names the file of each
 * shard; ckpt.c checks the offset and bytes against that file's size before
 * reading, so no allocation follows a number from the manifest alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ckpt_manifest.h"

/* snprintf into an array, true when the path did not fit. */
#define PATH_TOO_LONG(buf, ...) (snprintf(buf, sizeof buf, __VA_ARGS__) >= (int)sizeof buf)

static int get_dims(json_t *a, int64_t *out, int *rank)
{
	if (!json_is_array(a) || json_array_size(a) > IR_MAX_RANK)
		return -1;
	*rank = (int)json_array_size(a);
	for (int i = 0; i < *rank; i++) {
		json_t *v = json_array_get(a, (size_t)i);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return -1;
		out[i] = json_integer_value(v);
	}
	return 0;
}

/* A shape of at most 2^44 elements (ir_shape_check), without its message. */
static int get_shape(json_t *a, struct ir_shape *s)
{
	int64_t n = 1;
	if (get_dims(a, s->dims, &s->rank) < 0)
		return -1;
	for (int i = 0; i < s->rank; i++) {
		int64_t d = s->dims[i];
		if (d > IR_MAX_NUMEL || (d > 0 && n > IR_MAX_NUMEL / d))
			return -1;
		n *= d;
	}
	return 0;
}

/* The plan's index of manifest tensor k of list (by name, same dtype and
 * shape), -1 when the plan has none of that name; -2 on a mismatch. */
static int plan_index(json_t *list, size_t k, const struct plan_tensor *t, int n)
{
	json_t *e = json_array_get(list, k);
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *dt = json_string_value(json_object_get(e, "dtype"));
	struct ir_shape s = { 0 };
	if (!name || !dt || get_dims(json_object_get(e, "shape"), s.dims, &s.rank) < 0)
		return -2;
	for (int i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return !strcmp(ir_dtype_name(t[i].dtype), dt) && ir_shape_eq(&t[i].shape, &s) ? i : -2;
	return -1;
}

/* The shard lies inside tensor t. */
static bool inside(const struct rt_shard *s, const struct plan_tensor *t)
{
	if (s->shape.rank != t->shape.rank)
		return false;
	for (int d = 0; d < s->shape.rank; d++)
		if (s->start[d] > t->shape.dims[d] - s->shape.dims[d])
			return false;
	return true;
}

static int parse_shard(json_t *o, json_t *params, json_t *state, const struct plan *p, struct rt_shard *s)
{
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *dt = json_string_value(json_object_get(o, "dtype"));
	const char *file = json_string_value(json_object_get(o, "file"));
	const char *hex = json_string_value(json_object_get(o, "xxh3"));
	json_t *idx = json_object_get(o, "index");
	int r2 = 0;
	if (!kind || !dt || !file || !hex || !json_is_integer(idx) || strlen(file) >= sizeof s->file ||
	    strchr(file, '/') || ir_dtype_parse(dt, &s->dtype) < 0 ||
	    get_shape(json_object_get(o, "shape"), &s->shape) < 0 ||
	    get_dims(json_object_get(o, "start"), s->start, &r2) < 0 || r2 != s->shape.rank)
		return -1;
	bool param = !strcmp(kind, "param");
	json_t *list = param ? params : state;
	json_int_t k = json_integer_value(idx);
	if ((!param && strcmp(kind, "state")) || k < 0 || (size_t)k >= json_array_size(list))
		return -1;
	const struct plan_tensor *t = param ? p->params : p->state;
	s->kind = param ? PLAN_BIND_PARAM : PLAN_BIND_STATE;
	s->index = plan_index(list, (size_t)k, t, param ? p->nparams : p->nstate);
	strcpy(s->file, file);
	s->offset = json_integer_value(json_object_get(o, "offset"));
	s->bytes = json_integer_value(json_object_get(o, "bytes"));
	s->xxh3 = strtoull(hex, NULL, 16);
	return s->index == -2 || (s->index >= 0 && !inside(s, &t[s->index])) || s->offset < 0 ||
			       s->bytes != ir_shape_numel(&s->shape) * (int64_t)ir_dtype_size(s->dtype)
		       ? -1
		       : 0;
}

int rt_manifest_read(const struct plan *p, const char *cdir, struct rt_manifest *m)
{
	char path[4200], hex[17];
	json_error_t err;
	memset(m, 0, sizeof *m);
	if (PATH_TOO_LONG(path, "%s/manifest.json", cdir))
		return ir_errorf(-ENAMETOOLONG, "%s: path too long", cdir);
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return ir_errorf(-EINVAL, "%s: unreadable or corrupt (line %d: %s)", path, err.line, err.text);
	json_t *shards = json_object_get(root, "shards"), *params = json_object_get(root, "params");
	json_t *state = json_object_get(root, "state");
	const char *mh = json_string_value(json_object_get(root, "model_hash"));
	int rc = 0;
	snprintf(hex, sizeof hex, "%016" PRIx64, p->model_hash);
	if (json_integer_value(json_object_get(root, "format")) != RT_CKPT_FORMAT || !json_is_array(shards) ||
	    !json_is_array(params) || !json_is_array(state) || !mh)
		rc = ir_errorf(-EINVAL, "%s: not a pcc checkpoint manifest of format %d", path, RT_CKPT_FORMAT);
	else if (strcmp(mh, hex))
		rc = ir_errorf(-EINVAL, "%s: written for another model (hash %s, the plan's %s)", path, mh, hex);
	json_t *step = json_object_get(root, "step");
	m->step = (long)json_integer_value(step);
	if (rc == 0 && !json_is_integer(step))
		rc = ir_errorf(-EINVAL, "%s: \"step\" is missing or not a whole number (corrupt)", path);
	else if (rc == 0 && (json_integer_value(step) < 0 || json_integer_value(step) > RT_STEPS_MAX))
		rc = ir_errorf(-EINVAL, "%s: \"step\" %lld is out of range (0 to %ld; corrupt)", path,
			       (long long)json_integer_value(step), RT_STEPS_MAX);
	m->n = rc == 0 ? (int)json_array_size(shards) : 0;
	if (rc == 0 && !(m->sh = ir_calloc((size_t)m->n + 1, sizeof *m->sh)))
		rc = ir_errorf(-ENOMEM, "out of memory reading %s", path);
	for (int i = 0; i < m->n && rc == 0; i++)
		if (parse_shard(json_array_get(shards, (size_t)i), params, state, p, &m->sh[i]) < 0)
			rc = ir_errorf(-EINVAL, "%s: shard %d is malformed or does not match the plan's tensor", path,
				       i);
	json_decref(root);
	return rc;
}

void rt_manifest_free(struct rt_manifest *m)
{
	ir_free(m->sh);
	m->sh = NULL;
	m->n = 0;
}

bool rt_shard_overlap(const struct rt_shard *s, const struct plan_buffer *x, const int64_t *start, int64_t *in_s,
		      int64_t *in_x, struct ir_shape *blk)
{
	if (s->kind != (int)x->bind || s->index != x->index || s->dtype != x->dtype || s->shape.rank != x->shape.rank)
		return false;
	*blk = (struct ir_shape){ x->shape.rank, { 0 } };
	for (int d = 0; d < x->shape.rank; d++) {
		int64_t lo = s->start[d] > start[d] ? s->start[d] : start[d];
		int64_t hs = s->start[d] + s->shape.dims[d], hx = start[d] + x->shape.dims[d];
		blk->dims[d] = (hs < hx ? hs : hx) - lo;
		if (blk->dims[d] <= 0)
			return false;
		in_s[d] = lo - s->start[d];
		in_x[d] = lo - start[d];
	}
	return true;
}
