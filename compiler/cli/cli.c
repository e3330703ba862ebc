/*
 * cli.c: what every command of the pcc driver parses and prints alike:
 * the help of --dim and --const, `pcc CMD --help`, the one line of a
 * failed command with its exit status, getopt_long tables joined, and
 * --dim's NAME=VALUE.
 *
 * The driver (main.c), `pcc train` (cli_train.c) and `pcc report`
 * (report_cli.c) call these; this file calls none of them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cli/cli.h"

/* --dim and --const, which every command that imports a model takes. */
const char cli_model_options[] = "  --dim    bind a symbolic ONNX dimension, e.g. --dim batch=8\n"
				 "  --const  bind a graph input as a constant (a shape, Slice's starts, TopK's k...):\n"
				 "           NAME=FILE.pb (a TensorProto) or NAME=DIR (DIR/input_N.pb, N the input's\n"
				 "           place among the model's inputs); pcc-run -i then leaves its file unread\n";

int cli_help(const struct cli_usage *u)
{
	printf("usage:\n%s\n%s%s%s", u->synopsis, u->about, u->options ? u->options : "",
	       u->model ? cli_model_options : "");
	return 0;
}

int cli_fail(int status, const char *cmd)
{
	if (status == 2)
		fprintf(stderr, "pcc: %s (try 'pcc%s%s --help')\n", ir_error(), cmd ? " " : "", cmd ? cmd : "");
	else
		fprintf(stderr, "pcc: %s\n", ir_error());
	return status;
}

void cli_options_add(struct option *dst, int *n, int cap, const struct option *src)
{
	for (; src->name; src++) {
		IR_ASSERT(*n + 1 < cap);
		dst[(*n)++] = *src;
	}
	dst[*n] = (struct option){ 0 };
}

int cli_parse_dim(const char *s, struct onnx_dim_binding *dims, int *ndims, int max)
{
	const char *eq = strchr(s, '=');
	char *end;
	if (!eq || eq == s)
		return ir_errorf(-EINVAL, "--dim expects NAME=VALUE, got '%s'", s);
	long long v = strtoll(eq + 1, &end, 10);
	if (*end || v < 0 || end == eq + 1)
		return ir_errorf(-EINVAL, "--dim %s: value must be a non-negative integer", s);
	if (*ndims == max)
		return ir_errorf(-EINVAL, "more than %d --dim bindings", max);
	char *name = strndup(s, (size_t)(eq - s));
	if (!name)
		return -ENOMEM;
	dims[(*ndims)++] = (struct onnx_dim_binding){ name, v };
	return 0;
}
