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

/* `pcc train ...` (cli_train.c): argv[1] is "train". 0 or negative error. */
int cmd_train(int argc, char **argv);
void cli_train_usage(FILE *f);
/* One option of the train step (--loss, --optimizer, --lr, ... --freeze)
 * with its value v into t (--freeze patterns appended to freeze[], at most
 * max_freeze): 1 when s is one, 0 when it is not, or -EINVAL naming it. */
int cli_train_option(const char *s, const char *v, struct train_opts *t, const char **freeze, int max_freeze);

#endif
