/*
 * cli.h: subcommands of the pcc driver that live outside main.c.
 */
#ifndef PCC_CLI_H
#define PCC_CLI_H

#include <stdio.h>

/* `pcc train ...` (cli_train.c): argv[1] is "train". 0 or negative error. */
int cmd_train(int argc, char **argv);
void cli_train_usage(FILE *f);

#endif
