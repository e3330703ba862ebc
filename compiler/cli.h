/*
 * cli.h: subcommands of the pcc driver that live outside main.c.
 */
#ifndef PCC_CLI_H
#define PCC_CLI_H

#include <stdio.h>

#include "compiler/compiler.h"

/* "--dim NAME=VALUE" (main.c): appends the binding (name strdup'd) to
 * dims[*ndims]; -EINVAL naming the bad text or the limit max. */
int cli_parse_dim(const char *s, struct onnx_dim_binding *dims, int *ndims, int max);

/* "--const NAME=FILE|DIR" (cli_const.c): graph inputs bound as constants.
 * parse records one (no file read yet; -EINVAL for bad text, a name given
 * twice, more than CLI_MAX_CONSTS); load reads every value, FILE a
 * TensorProto, DIR its input_N.pb with N the input's place among model's
 * inputs; use points o at them (valid until free). */
#define CLI_MAX_CONSTS 64
struct cli_consts {
	struct onnx_const_input k[CLI_MAX_CONSTS]; /* [n]: name and from ("--const
						    * NAME=SRC") malloc'd, value ir_malloc'd */
	const char *src[CLI_MAX_CONSTS];           /* [n]: FILE or DIR, in argv */
	int n;
};
int cli_parse_const(const char *s, struct cli_consts *c);
int cli_consts_load(struct cli_consts *c, const char *model);
void cli_consts_use(const struct cli_consts *c, struct onnx_import_opts *o);
void cli_consts_free(struct cli_consts *c);

/* `pcc train ...` (cli_train.c): argv[1] is "train". 0 or negative error. */
int cmd_train(int argc, char **argv);
void cli_train_usage(FILE *f);
/* One option of the train step (--loss, --optimizer, --lr, ... --freeze,
 * --trainable) with its value v into t (--freeze and --trainable patterns
 * appended to pats[], at most max_pats, t->patterns pointing there): 1
 * when s is one, 0 when it is not, or -EINVAL naming it. */
int cli_train_option(const char *s, const char *v, struct train_opts *t, struct train_pattern *pats, int max_pats);
/* A train step option without a value (--skip-nonfinite) into t: 1 when s
 * is one, else 0. */
int cli_train_flag(const char *s, struct train_opts *t);

#endif
