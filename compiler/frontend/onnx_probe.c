/*
 * onnx_probe.c: what pcc reads from an ONNX file without importing it,
 * and import with the batch bound: the batch dimension (the first dim of
 * the first data input: initializers and inputs bound as constants are
 * not data), the model's input names in order (what --const DIR numbers
 * its files by), and onnx_import with that dimension bound to a size.
 *
 * Example: a GPT exported with input ids [batch, seq] gives "batch" and
 * size 0 (symbolic); onnx_import_batch(path, o, "batch", 8) then imports
 * it for 8 samples.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/onnx_internal.h"

static bool is_const(const struct onnx_import_opts *o, const char *name)
{
	for (int i = 0; o && name && i < o->nconsts; i++)
		if (strcmp(o->consts[i].name, name) == 0)
			return true;
	return false;
}

int onnx_model_batch_dim(const struct onnx_model *model, const struct onnx_import_opts *o, char *name, size_t namelen,
			 int64_t *size)
{
	const Onnx__ModelProto *m = model->proto;
	if (!m->graph)
		return ir_errorf(-EINVAL, "%s: not a valid ONNX model (protobuf decoding failed: truncated or corrupt)",
				 model->path);
	const Onnx__GraphProto *gp = m->graph;
	/* no input with a dimension (none, scalars only, an empty first
	 * dimension): no batch to split, the model is one sample */
	name[0] = 0;
	*size = 1;
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vi = gp->input[i];
		bool init = false;
		for (size_t k = 0; k < gp->n_initializer && !init; k++)
			init = vi->name && gp->initializer[k]->name && strcmp(vi->name, gp->initializer[k]->name) == 0;
		if (init || is_const(o, vi->name) || !vi->type ||
		    vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !vi->type->tensor_type ||
		    !vi->type->tensor_type->shape || vi->type->tensor_type->shape->n_dim == 0)
			continue;
		const Onnx__TensorShapeProto__Dimension *d = vi->type->tensor_type->shape->dim[0];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param) {
			snprintf(name, namelen, "%s", d->dim_param);
			*size = 0;
		} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0) {
			*size = d->dim_value;
		} else {
			continue;
		}
		break;
	}
	for (int i = 0; o && i < o->ndims && name[0]; i++)
		if (strcmp(o->dims[i].name, name) == 0) { /* bound by the user: static */
			*size = o->dims[i].value;
			name[0] = 0;
		}
	return 0;
}

int onnx_batch_dim(const char *path, const struct onnx_import_opts *o, char *name, size_t namelen, int64_t *size)
{
	struct onnx_model *m = onnx_model_read(path);
	if (!m)
		return ir_error_code();
	int rc = onnx_model_batch_dim(m, o, name, namelen, size);
	onnx_model_free(m);
	return rc;
}

int onnx_model_input_names(const struct onnx_model *model, char ***names, int *n)
{
	size_t bytes = 0;
	*names = NULL;
	*n = 0;
	const Onnx__ModelProto *m = model->proto;
	if (!m->graph)
		return ir_errorf(-EINVAL, "%s: not a valid ONNX model (protobuf decoding failed: truncated or corrupt)",
				 model->path);
	const Onnx__GraphProto *gp = m->graph;
	bool *init = ir_calloc(gp->n_input + 1, sizeof *init);
	int count = 0;
	for (size_t i = 0; init && i < gp->n_input; i++) {
		const char *in = gp->input[i]->name ? gp->input[i]->name : "";
		for (size_t k = 0; k < gp->n_initializer && !init[i]; k++)
			init[i] = gp->initializer[k]->name && strcmp(in, gp->initializer[k]->name) == 0;
		if (!init[i]) {
			bytes += strlen(in) + 1;
			count++;
		}
	}
	char **out = init ? ir_malloc(sizeof *out * (size_t)count + bytes + 1) : NULL;
	if (out) {
		char *at = (char *)(out + count);
		for (size_t i = 0, j = 0; i < gp->n_input; i++) {
			if (init[i])
				continue;
			const char *in = gp->input[i]->name ? gp->input[i]->name : "";
			out[j++] = strcpy(at, in);
			at += strlen(in) + 1;
		}
		*names = out;
		*n = count;
	}
	ir_free(init);
	return out ? 0 : ir_errorf(-ENOMEM, "%s: out of memory", model->path);
}

int onnx_input_names(const char *path, char ***names, int *n)
{
	*names = NULL;
	*n = 0;
	struct onnx_model *m = onnx_model_read(path);
	if (!m)
		return ir_error_code();
	int rc = onnx_model_input_names(m, names, n);
	onnx_model_free(m);
	return rc;
}

struct ir_graph *onnx_model_import_batch(const struct onnx_model *m, const struct onnx_import_opts *o, const char *name,
					 int64_t b)
{
	struct onnx_import_opts dflt;
	if (!o) {
		onnx_import_opts_init(&dflt);
		o = &dflt;
	}
	if (!name || !name[0])
		return onnx_model_import(m, o, NULL);
	struct onnx_dim_binding *dims = ir_malloc(((size_t)o->ndims + 1) * sizeof *dims);
	if (!dims) {
		ir_errorf(-ENOMEM, "out of memory");
		return NULL;
	}
	if (o->ndims > 0) /* o->dims may be NULL then, which memcpy may not take */
		memcpy(dims, o->dims, (size_t)o->ndims * sizeof *dims);
	dims[o->ndims] = (struct onnx_dim_binding){ .name = name, .value = b };
	struct onnx_import_opts with = *o;
	with.dims = dims;
	with.ndims = o->ndims + 1;
	struct ir_graph *g = onnx_model_import(m, &with, NULL);
	ir_free(dims);
	return g;
}

struct ir_graph *onnx_import_batch(const char *path, const struct onnx_import_opts *o, const char *name, int64_t b)
{
	struct onnx_model *m = onnx_model_read(path);
	if (!m)
		return NULL;
	struct ir_graph *g = onnx_model_import_batch(m, o, name, b);
	onnx_model_free(m);
	return g;
}