/*
 * cli_const.c: `--const NAME=FILE|DIR`, a graph input bound as a constant
 * (pcc inspect, print, eval, report and compile).
 *
 * Some models take as inputs what decides shapes (a Reshape's shape, a
 * Slice's starts, TopK's k); pcc plans static shapes, so such an input must
 * be known when it compiles. --const reads its value from a TensorProto
 * file (FILE), or from DIR/input_N.pb, N the input's place among the
 * model's inputs (a data set of the ONNX backend-test layout, the one
 * pcc-run -i DIR then reads). The importer turns the input into that
 * constant (onnx_import_opts.consts), checking that it is an input of the
 * model and that the value has its dtype and shape; the plan then reads
 * the other inputs from the files they had (plan.input_file).
 *
 * Example: pcc model.onnx --cluster cpu:1 --const shape=test_data_set_0 -o plan.bin
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/cli/cli.h"

int cli_parse_const(const char *s, struct cli_consts *c)
{
	const char *eq = strchr(s, '=');
	if (!eq || eq == s || !eq[1])
		return ir_errorf(-EINVAL, "--const expects NAME=FILE.pb or NAME=DIR, got '%s'", s);
	size_t n = (size_t)(eq - s);
	for (int i = 0; i < c->n; i++)
		if (strlen(c->k[i].name) == n && !strncmp(c->k[i].name, s, n))
			return ir_errorf(-EINVAL, "--const %s: input \"%s\" is already bound (by %s)", s, c->k[i].name,
					 c->k[i].from);
	if (c->n == CLI_MAX_CONSTS)
		return ir_errorf(-EINVAL, "more than %d --const bindings", CLI_MAX_CONSTS);
	char *name = strndup(s, n), *from = malloc(strlen(s) + sizeof "--const ");
	if (!name || !from) {
		free(name);
		free(from);
		return ir_errorf(-ENOMEM, "out of memory");
	}
	strcat(strcpy(from, "--const "), s);
	c->src[c->n] = eq + 1;
	c->k[c->n++] = (struct onnx_const_input){ .name = name, .from = from };
	return 0;
}

/* DIR/input_N.pb for input name of model: N its place among the inputs. */
static int data_set_file(const char *dir, const char *name, const char *model, char *path, size_t len)
{
	char **names;
	int n, k = 0;
	int rc = onnx_input_names(model, &names, &n);
	if (rc < 0)
		return rc;
	while (k < n && strcmp(names[k], name))
		k++;
	ir_free(names);
	if (k == n) /* the importer names the inputs there are */
		return 1;
	if (snprintf(path, len, "%s/input_%d.pb", dir, k) >= (int)len)
		return ir_errorf(-ENAMETOOLONG, "%s: path too long", dir);
	return 0;
}

int cli_consts_load(struct cli_consts *c, const char *model)
{
	char path[4096];
	for (int i = 0; i < c->n; i++) {
		struct onnx_const_input *k = &c->k[i];
		const char *src = c->src[i];
		struct stat st;
		int rc = 0;
		if (stat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
			if (!model)
				return ir_errorf(-EINVAL, "%s: a directory needs a model to number its inputs",
						 k->from);
			if ((rc = data_set_file(src, k->name, model, path, sizeof path)) < 0)
				return rc;
			if (rc > 0) /* no such input: leave it to the importer's message */
				continue;
			src = path;
		}
		if ((rc = onnx_tensor_read(src, &k->value, NULL)) < 0) {
			ir_error_prefix("--const %s", k->name);
			return rc;
		}
	}
	return 0;
}

void cli_consts_use(const struct cli_consts *c, struct onnx_import_opts *o)
{
	o->consts = c->k;
	o->nconsts = c->n;
}

void cli_consts_free(struct cli_consts *c)
{
	for (int i = 0; i < c->n; i++) {
		free((char *)c->k[i].name);
		free((char *)c->k[i].from);
		ir_tensor_free(&c->k[i].value);
	}
	c->n = 0;
}
