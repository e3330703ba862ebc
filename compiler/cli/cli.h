/*
 * cli.h: the one header of compiler/cli/, the command line's pieces that
 * the pcc driver (driver/main.c) and `pcc report`'s command
 * (report/report_cli.c) share: the option helpers and usages (cli.c),
 * --const (cli_const.c), and `pcc train` with the train step's options
 * (cli_train.c). Below both: it includes compiler.h alone, and its files
 * call nothing of report/ or driver/.
 */
#ifndef PCC_CLI_H
#define PCC_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "compiler/compiler.h"

/* "--dim NAME=VALUE" (cli.c): appends the binding (name strdup'd) to
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

/* ---- the command line: getopt_long tables, usage, exit statuses ----
 *
 * Every command parses with getopt_long (so --opt=value and --opt value
 * both work) and answers -h and --help with its own usage on stdout, exit
 * status 0. A usage error (unknown option, missing value, bad count of
 * arguments) is one line ending "(try 'pcc CMD --help')" and exit status
 * 2; bad input (an unreadable model, a corrupt plan) one line and 1. */

/* A command's usage: its synopsis lines ("       pcc CMD ..."), what it
 * does ("  CMD      ..." lines), its options (NULL: the synopsis says
 * all); model: it takes --dim and --const (their help is cli_help's).
 * `pcc --help` prints every synopsis and every about; `pcc CMD --help`
 * one command's all. */
struct cli_usage {
	const char *synopsis, *about, *options;
	bool model;
};
extern const struct cli_usage cli_train_usage;
/* The help of --dim and --const, after the options of a command that
 * takes a model. */
extern const char cli_model_options[];
/* `pcc CMD --help`: u's usage on stdout; 0, the exit status. */
int cli_help(const struct cli_usage *u);
/* The exit status of a failed command, its one line printed: 2 for a
 * usage error (with "(try 'pcc CMD --help')", cmd NULL for pcc MODEL), 1
 * for bad input. */
int cli_fail(int status, const char *cmd);

/* getopt_long codes of the train step's options (cli_step_options). */
enum { CLI_OPT_STEP = 0x1000 };
/* The train step's options as getopt_long entries (--loss, --lr, ...,
 * --freeze, --trainable, --skip-nonfinite), val CLI_OPT_STEP, ended by a
 * zeroed entry. --optimizer is not among them: each command that takes it
 * reads it itself. */
extern const struct option cli_step_options[];
/* Appends src's entries (up to its zeroed one) to dst[*n], keeping dst
 * zero-terminated within cap entries (a table too small is a bug). */
void cli_options_add(struct option *dst, int *n, int cap, const struct option *src);

/* `pcc train ...` (cli_train.c): argv[0] is "train"; the exit status. */
int cmd_train(int argc, char **argv);
/* One option of the train step named name (a cli_step_options entry's, or
 * "optimizer") with its value v (NULL for --skip-nonfinite) into t
 * (--freeze and --trainable patterns appended to pats[], at most
 * max_pats, t->patterns pointing there): 0, or -EINVAL naming it. */
int cli_train_option(const char *name, const char *v, struct train_opts *t, struct train_pattern *pats, int max_pats);

#endif
