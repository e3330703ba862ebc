/*
 * cli_train.c: the `pcc train` command line.
 *
 * Its synopsis and options: cli_train_usage below.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/cli/cli.h"
#include "compiler/compiler.h"

#define MAX_LIST 64

const struct cli_usage cli_train_usage = {
	.synopsis =
		"       pcc train MODEL -i DIR [--optimizer sgd|momentum|nesterov|adam|adamw] [--lr X]\n"
		"                 [--steps N] [--save-onnx OUT.onnx] [--loss cross_entropy:LOGITS,LABELS|mse:OUT,TARGET]\n"
		"                 [--freeze PATTERN]... [--trainable PATTERN]... [--skip-nonfinite]\n"
		"                 [--momentum M] [--betas B1,B2] [--eps E] [--weight-decay W]\n"
		"                 [--clip-norm C] [--schedule constant|cosine|linear] [--warmup N] [--total-steps N]\n"
		"                 [--min-lr X] [--precision f32|bf16|f16|f64] [--accum M] [--log-every N] [--log-json FILE]\n"
		"                 [--eval-data DIR [--eval-every K]] [--dim NAME=VALUE]... [--const NAME=FILE|DIR]...\n",
	.about = "  train    train on the reference interpreter and write the trained model (--save-onnx)\n",
	.options = "  -i DIR   the data: DIR/input_N.pb, or DIR/test_data_set_K/input_N.pb used in turn\n"
		   "           (--accum M sets a step); .npy for .pb; or FILE.npz, or a DIR of .npz files\n"
		   "           (numpy.savez, an array per input by name or position)\n"
		   "  --eval-data DIR  held-out sets (as -i's): their mean loss after every K steps\n"
		   "           (--eval-every K; default after the last), nothing updated\n"
		   "  --steps N  steps to run (default 1)\n"
		   "  --loss SPEC  the loss, when the model does not end in one\n"
		   "  --freeze, --trainable PATTERN  which parameters train (shell patterns, in order)\n"
		   "  --skip-nonfinite  a step whose gradients are not finite updates nothing\n",
	.model = true,
};

static int num(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !isfinite(v))
		return ir_errorf(-EINVAL, "--%s %s: expected a finite number", opt, s);
	*out = v;
	return 0;
}

static int count(const char *opt, const char *s, int64_t lo, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || v < lo)
		return ir_errorf(-EINVAL, "--%s %s: expected an integer >= %lld", opt, s, (long long)lo);
	*out = v;
	return 0;
}

const struct option cli_step_options[] = {
	{ "loss", required_argument, NULL, CLI_OPT_STEP },
	{ "schedule", required_argument, NULL, CLI_OPT_STEP },
	{ "lr", required_argument, NULL, CLI_OPT_STEP },
	{ "min-lr", required_argument, NULL, CLI_OPT_STEP },
	{ "momentum", required_argument, NULL, CLI_OPT_STEP },
	{ "eps", required_argument, NULL, CLI_OPT_STEP },
	{ "weight-decay", required_argument, NULL, CLI_OPT_STEP },
	{ "clip-norm", required_argument, NULL, CLI_OPT_STEP },
	{ "betas", required_argument, NULL, CLI_OPT_STEP },
	{ "warmup", required_argument, NULL, CLI_OPT_STEP },
	{ "total-steps", required_argument, NULL, CLI_OPT_STEP },
	{ "accum", required_argument, NULL, CLI_OPT_STEP },
	{ "precision", required_argument, NULL, CLI_OPT_STEP },
	{ "freeze", required_argument, NULL, CLI_OPT_STEP },
	{ "trainable", required_argument, NULL, CLI_OPT_STEP },
	{ "skip-nonfinite", no_argument, NULL, CLI_OPT_STEP },
	{ 0 },
};

int cli_train_option(const char *s, const char *v, struct train_opts *t, struct train_pattern *pats, int max_pats)
{
	int64_t k;
	int rc = 0;
	if (!strcmp(s, "skip-nonfinite"))
		t->skip_nonfinite = true;
	else if (!strcmp(s, "loss"))
		t->loss = v;
	else if (!strcmp(s, "optimizer") || !strcmp(s, "optim"))
		rc = train_optim_parse(v, &t->optim);
	else if (!strcmp(s, "schedule"))
		rc = train_sched_parse(v, &t->sched);
	else if (!strcmp(s, "lr"))
		rc = num(s, v, &t->lr);
	else if (!strcmp(s, "min-lr"))
		rc = num(s, v, &t->min_lr);
	else if (!strcmp(s, "momentum"))
		rc = num(s, v, &t->momentum);
	else if (!strcmp(s, "eps"))
		rc = num(s, v, &t->eps);
	else if (!strcmp(s, "weight-decay"))
		rc = num(s, v, &t->weight_decay);
	else if (!strcmp(s, "clip-norm"))
		rc = num(s, v, &t->clip_norm);
	else if (!strcmp(s, "betas")) {
		char *end;
		t->beta1 = strtod(v, &end);
		if (*end != ',' || num(s, end + 1, &t->beta2) < 0)
			rc = ir_errorf(-EINVAL, "--betas %s: expected B1,B2", v);
	} else if (!strcmp(s, "warmup"))
		rc = count(s, v, 0, &t->warmup);
	else if (!strcmp(s, "total-steps"))
		rc = count(s, v, 1, &t->total);
	else if (!strcmp(s, "accum")) {
		rc = count(s, v, 1, &k);
		t->accum = (int)(k > 1 << 20 ? 1 << 20 : k);
	} else if (!strcmp(s, "precision")) {
		rc = ir_dtype_parse(v, &t->compute);
		if (rc < 0)
			rc = ir_errorf(-EINVAL, "--precision %s: expected f32, bf16, f16 or f64", v);
	} else {
		IR_ASSERT(!strcmp(s, "freeze") || !strcmp(s, "trainable"));
		if (t->npatterns == max_pats)
			return ir_errorf(-EINVAL, "more than %d --freeze and --trainable patterns", max_pats);
		pats[t->npatterns++] = (struct train_pattern){ v, s[0] == 't' };
		t->patterns = pats;
	}
	return rc < 0 ? rc : 0;
}

/* 0, 1 for --help, or -EINVAL naming the usage error. */
static int parse(int argc, char **argv, struct train_run_opts *o, struct train_pattern *pats,
		 struct onnx_dim_binding *dims, struct cli_consts *consts)
{
	enum { O_SAVE = 256, O_STEPS, O_LOG_EVERY, O_LOG_JSON, O_DIM, O_CONST, O_EVAL_DATA, O_EVAL_EVERY };
	static const struct option own[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "save-onnx", required_argument, NULL, O_SAVE },
		{ "steps", required_argument, NULL, O_STEPS },
		{ "log-every", required_argument, NULL, O_LOG_EVERY },
		{ "log-json", required_argument, NULL, O_LOG_JSON },
		{ "eval-data", required_argument, NULL, O_EVAL_DATA },
		{ "eval-every", required_argument, NULL, O_EVAL_EVERY },
		{ "dim", required_argument, NULL, O_DIM },
		{ "const", required_argument, NULL, O_CONST },
		{ "optimizer", required_argument, NULL, CLI_OPT_STEP },
		{ "optim", required_argument, NULL, CLI_OPT_STEP },
		{ 0 },
	};
	struct option lo[64];
	int n = 0, c, li = 0;
	cli_options_add(lo, &n, 64, own);
	cli_options_add(lo, &n, 64, cli_step_options);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hi:", lo, &li)) != -1) {
		int rc = 0;
		switch (c) {
		case 'h':
			return 1;
		case 'i':
			o->in_dir = optarg;
			break;
		case O_SAVE:
			o->save = optarg;
			break;
		case O_STEPS:
			rc = count("steps", optarg, 1, &o->steps);
			break;
		case O_LOG_EVERY:
			rc = count("log-every", optarg, 1, &o->log_every);
			break;
		case O_LOG_JSON:
			o->log_json = optarg;
			break;
		case O_EVAL_DATA:
			o->eval_data = optarg;
			break;
		case O_EVAL_EVERY:
			rc = count("eval-every", optarg, 1, &o->eval_every);
			break;
		case O_DIM:
			rc = cli_parse_dim(optarg, dims, &o->imp.ndims, MAX_LIST);
			break;
		case O_CONST:
			rc = cli_parse_const(optarg, consts);
			break;
		case CLI_OPT_STEP:
			rc = cli_train_option(lo[li].name, optarg, &o->t, pats, MAX_LIST);
			break;
		default:
			return ir_getopt_error(c, argv);
		}
		if (rc < 0)
			return rc;
	}
	if (optind == argc)
		return ir_errorf(-EINVAL, "train: no model given");
	if (optind + 1 < argc)
		return ir_errorf(-EINVAL, "train: unexpected argument '%s'", argv[optind + 1]);
	o->model = argv[optind];
	if (!o->in_dir)
		return ir_errorf(-EINVAL, "train: -i DIR is required");
	if (o->eval_every && !o->eval_data)
		return ir_errorf(-EINVAL, "train: --eval-every needs --eval-data DIR");
	return 0;
}

int cmd_train(int argc, char **argv)
{
	struct train_run_opts o = { .log = stdout };
	static struct train_pattern pats[MAX_LIST];
	static struct onnx_dim_binding dims[MAX_LIST];
	static struct cli_consts consts;
	train_opts_init(&o.t);
	onnx_import_opts_init(&o.imp);
	o.imp.dims = dims;
	int rc = parse(argc, argv, &o, pats, dims, &consts), status = rc < 0 ? 2 : 0;
	if (rc == 1)
		status = cli_help(&cli_train_usage);
	else if (rc == 0 && (rc = cli_consts_load(&consts, o.model)) == 0)
		cli_consts_use(&consts, &o.imp);
	/* The schedule length defaults to the run. */
	if (status == 0 && rc == 0 && o.t.sched != TRAIN_LR_CONSTANT && o.t.total == 0)
		o.t.total = o.steps > 0 ? o.steps : 1;
	if (status == 0 && rc == 0)
		rc = train_run(&o);
	if (status == 0 && rc == 0 && o.save)
		printf("wrote %s\n", o.save);
	if (status == 0 && rc < 0)
		status = 1;
	for (int i = 0; i < o.imp.ndims; i++)
		free((char *)dims[i].name);
	cli_consts_free(&consts);
	return status ? cli_fail(status, "train") : 0;
}
