/*
 * fuzz_ckpt.c: libFuzzer target for checkpoint manifests (manifest.json,
 * rt_manifest_read, runtime/ckpt_manifest.c), what `pcc-run --resume`
 * reads before any shard.
 *
 * An input is the manifest, written to DIR/manifest.json in one directory
 * per process. The plan it is checked against is made from the manifest
 * itself (its model hash, and its params and state entries that are
 * well-formed tensors), so a mutation reaches the shard checks rather than
 * stopping at "written for another model". A manifest that reads must
 * have shards whose overlap with the whole tensor, and with a slice of its
 * second half, lies inside both; -EINVAL with one line is a clean refusal.
 */
#include <errno.h>
#include <jansson.h>
#include <sys/stat.h>

#include "runtime/ckpt_manifest.h"
#include "tests/fuzz/fuzz.h"

#define MAX_TENSORS 64

static char dir[4096], path[4200];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_path(dir, sizeof dir, "fuzz_ckpt", "");
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		FUZZ_FAIL("cannot create %s", dir);
	snprintf(path, sizeof path, "%s/manifest.json", dir);
	return 0;
}

/* The well-formed entries of a manifest's tensor list (at most
 * MAX_TENSORS), as plan tensors; names point into the JSON. */
static int tensors(json_t *list, struct plan_tensor *t)
{
	int n = 0;
	for (size_t i = 0; i < json_array_size(list) && n < MAX_TENSORS; i++) {
		json_t *e = json_array_get(list, i), *shape = json_object_get(e, "shape");
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *dt = json_string_value(json_object_get(e, "dtype"));
		struct plan_tensor *x = &t[n];
		memset(x, 0, sizeof *x);
		if (!name || !dt || ir_dtype_parse(dt, &x->dtype) < 0 || !json_is_array(shape) ||
		    json_array_size(shape) > IR_MAX_RANK)
			continue;
		x->shape.rank = (int)json_array_size(shape);
		for (int d = 0; d < x->shape.rank; d++)
			x->shape.dims[d] = json_integer_value(json_array_get(shape, (size_t)d));
		if (ir_shape_check(&x->shape) < 0)
			continue;
		x->name = (char *)name;
		n++;
	}
	return n;
}

/* The overlap of s with buffer x (of tensor t, from start) lies in both. */
static void check_overlap(const struct rt_shard *s, const struct plan_tensor *t, const int64_t *start)
{
	struct plan_buffer x = {
		.dtype = t->dtype, .shape = t->shape, .bind = (enum plan_bind)s->kind, .index = s->index
	};
	int64_t in_s[IR_MAX_RANK], in_x[IR_MAX_RANK];
	struct ir_shape blk;
	for (int d = 0; d < t->shape.rank; d++)
		x.shape.dims[d] -= start[d];
	if (!rt_shard_overlap(s, &x, start, in_s, in_x, &blk))
		return;
	for (int d = 0; d < blk.rank; d++)
		if (blk.dims[d] <= 0 || in_s[d] < 0 || in_x[d] < 0 || in_s[d] + blk.dims[d] > s->shape.dims[d] ||
		    in_x[d] + blk.dims[d] > x.shape.dims[d])
			FUZZ_FAIL("shard of %s: overlap block outside the shard or the buffer in dimension %d", t->name,
				  d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_tensor params[MAX_TENSORS], state[MAX_TENSORS];
	struct plan p = { .version = PLAN_FORMAT_VERSION, .params = params, .state = state };
	struct rt_manifest m;
	fuzz_write(path, data, size);
	json_t *root = json_loadb((const char *)data, size, 0, NULL);
	const char *hash = json_string_value(json_object_get(root, "model_hash"));
	p.model_hash = hash ? strtoull(hash, NULL, 16) : 0;
	p.nparams = tensors(json_object_get(root, "params"), params);
	p.nstate = tensors(json_object_get(root, "state"), state);
	if (rt_manifest_read(&p, dir, &m) < 0) {
		fuzz_check_message("rt_manifest_read", ir_error());
	} else {
		for (int i = 0; i < m.n; i++) {
			const struct rt_shard *s = &m.sh[i];
			if (s->index < 0)
				continue;
			const struct plan_tensor *t = s->kind == PLAN_BIND_PARAM ? &params[s->index] : &state[s->index];
			int64_t zero[IR_MAX_RANK] = { 0 }, half[IR_MAX_RANK] = { 0 };
			for (int d = 0; d < t->shape.rank; d++)
				half[d] = t->shape.dims[d] / 2;
			check_overlap(s, t, zero);
			check_overlap(s, t, half);
		}
	}
	rt_manifest_free(&m);
	json_decref(root);
	return 0;
}
