/*
 * main.c: the pcc driver. Parses the command line, runs one subcommand and
 * turns a recorded error into one line "pcc: ..." (cli_fail, cli.c).
 *
 * Each command's synopsis, what it does and its options are its struct
 * cli_usage (below; train's in cli_train.c, report's in report_cli.c);
 * `pcc --help` prints them all. A usage error exits 2, bad input 1.
 * --const binds a graph input as a constant (cli_const.c) wherever a
 * model is imported.
 */
#include <errno.h>
#include <glpk.h>
#include <jansson.h>
#include <llvm-c/Core.h>
#include <malloc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "version.h"

#include "ir/npy.h"
#include "compiler/cli/cli.h"
#include "compiler/codegen/codegen.h"
#include "compiler/compiler.h"
#include "compiler/driver/driver.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/progress.h"
#include "compiler/report/report.h"
#include "compiler/search/search.h"
#include "ir/plan.h"

#define MAX_DIMS 64

struct args {
	const struct command *cmd;
	const char *model, *in_dir, *out_dir;
	const char *cluster, *calib;
	long long batch;
	bool json, explain, stage_only, train, print_ir, time_passes;
	bool quiet; /* -q: no progress on stderr */
	int mesh0, mesh1;
	int micro, layers, stages;
	int recompute; /* --recompute: -1 auto, 0 off, 1 on */
	int dump;      /* pcc inspect plan.bin --dump DEVICE; -1: none */
	double mem_limit, time_limit;
	const char *optim;
	struct onnx_dim_binding dims[MAX_DIMS];
	int ndims;
	struct cli_consts consts; /* --const NAME=FILE|DIR */
	struct train_opts topts;  /* --train: the step's options (--loss, --lr, ...) */
	struct train_pattern pats[MAX_DIMS];
	const char *train_opt; /* the first step option given (its name), for "needs --train" */
	bool precision;        /* --precision given */
	const char *host_cpu;  /* --host-cpu: the CPU host kernels are compiled for */
	const char *codegen;   /* --codegen host|ptx|all|none; NULL: the cluster's kind */
	unsigned dump_after;   /* --dump-after=PASS,...: a bit per pass (pipeline.h) */
	const char *dump_dir;  /* --dump-dir DIR: the dumps as files there */
	const char *sign_key;  /* --sign-key FILE: -o plan.bin carries an HMAC under it */
};

/* The key --sign-key names, read before the compile (ir/plan_sign.c). */
static struct plan_key sign_key;

static const struct cli_usage inspect_usage = {
	.synopsis =
		"       pcc inspect MODEL [--dim NAME=VALUE]... [--const NAME=FILE|DIR]... [--json] [--train [--optim O]]\n"
		"       pcc inspect plan.bin [--dump DEVICE]\n",
	.about = "  inspect  inputs, outputs, op histograms, parameters, FLOPs of a forward pass;\n"
		 "           of a plan.bin, what it holds\n",
	.options = "  --json   the model's summary as JSON\n"
		   "  --train  what a training step adds: the parameters it trains, their gradients and the\n"
		   "           optimizer's state (--optim O, default adamw)\n"
		   "  --dump DEVICE  a plan's device: its buffers and program\n",
	.model = true,
};

static const struct cli_usage eval_usage = {
	.synopsis = "       pcc eval MODEL -i DIR [-o OUTDIR] [--dim NAME=VALUE]... [--const NAME=FILE|DIR]...\n",
	.about = "  eval     run the reference interpreter on DIR/input_N.pb (ONNX TensorProto),\n"
		 "           writing OUTDIR/output_N.pb, or printing a summary without -o\n",
	.model = true,
};

static const struct cli_usage print_usage = {
	.synopsis = "       pcc print MODEL [--dim NAME=VALUE]... [--const NAME=FILE|DIR]...\n",
	.about = "  print    the model imported into pcc's core IR, as text\n",
	.model = true,
};

static const struct cli_usage version_usage = {
	.synopsis = "       pcc version | pcc --version\n",
	.about = "  version  pcc's version and commit, and the libraries it was built with\n",
};

static const struct cli_usage compile_usage = {
	.synopsis =
		"       pcc MODEL --cluster C [--batch B] [--train [--optim O] [STEP OPTIONS]] [--micro-batches M]\n"
		"                 [--layers L] [--stages P] [--mesh N0xN1] [--memory-limit SIZE] [--time-limit S]\n"
		"                 [--recompute auto|on|off] [--calib FILE] [--explain | --json] [--time-passes] [-q]\n"
		"                 [--dim NAME=VALUE]...\n"
		"                 [--const NAME=FILE|DIR]...\n"
		"                 [-o plan.bin [--host-cpu x86-64-v2|v3|v4|native] [--codegen host|ptx|all|none]\n"
		"                 [--sign-key KEY] | -o PLAN.txt] [--dump-after=PASS[,PASS]...] [--dump-dir DIR]\n"
		"                 STEP OPTIONS: as pcc train's (--loss, --lr, --schedule with --total-steps N, ...)\n"
		"       pcc MODEL --cluster C --stage-only [--mesh N0xN1] [--train [--optim O]] [--memory-limit SIZE]\n"
		"                 [--time-limit S] [--calib FILE] [--explain] [--print-ir]\n",
	.about = "  MODEL    compile: the automatic plan (pipeline stages, sub-meshes, sharding,\n"
		 "           schedule, micro-batches); -o plan.bin writes the executable plan (the\n"
		 "           forward pass, or with --train the training step), -o FILE.txt its text form;\n"
		 "           --stage-only runs the intra-op pass on the whole model as one\n"
		 "           stage over an N0xN1 device mesh (default: nodes x devices per node) and\n"
		 "           prints the plan; --print-ir writes the IR with its sharding annotations\n",
	.options = "  --stages P   the automatic plan has exactly P pipeline stages (default: searched)\n"
		   "  --mesh N0xN1 the automatic plan's every stage runs on an N0xN1 logical mesh of\n"
		   "           N0*N1 devices, so the stages are devices / (N0*N1) (default: searched)\n"
		   "  -q       no progress on stderr (shown after 2 s: phase, work done, best step time)\n"
		   "  --time-passes  after the compile, a table on stderr of wall and CPU seconds per\n"
		   "           phase (search; lowering: the model, the train step, the stages' sharding,\n"
		   "           instructions, fusion, memory plan; codegen, writing)\n"
		   "  --dump-after=PASS[,PASS]...  after each pass named, what it made, on stdout: IR text\n"
		   "           for import and autodiff, plan text (as pcc inspect shows it) for the others;\n"
		   "           the passes: " PIPELINE_PASSES " (or all)\n"
		   "  --dump-dir DIR  the dumps as files DIR/NN-PASS.ir or .txt, NN counting the passes\n"
		   "           run (every pass when --dump-after is not given)\n"
		   "  --recompute  training: auto (default) lets the search choose per stage whether\n"
		   "           its backward pass recomputes each layer's activations from the layer's\n"
		   "           input instead of keeping them (activation checkpointing); on and off force it\n"
		   "  --cluster  NODESxDEVICES:KIND[,ib=200Gbps,nvlink=600GBps], cpu:N, or a JSON file\n"
		   "  --batch  global batch of one step (samples)\n"
		   "  --json   the plan's summary as one JSON object (stages, step time, memory, the plans\n"
		   "           weighed, the file -o wrote) instead of the text on stdout\n"
		   "  --time-limit S  wall seconds each sharding solve may take, a backstop only (default\n"
		   "           60 per stage, 30 per layer in the search): the solver's work is bounded by\n"
		   "           counts, so the same input and flags give the same plan however loaded the\n"
		   "           machine is, unless this fires, which pcc then says on stderr\n",
	.model = true,
};

/* The commands; train and report parse their own command lines. */
enum { C_INSPECT = 1 << 0, C_EVAL = 1 << 1, C_PRINT = 1 << 2, C_COMPILE = 1 << 3, C_VERSION = 1 << 4 };
#define C_MODEL (C_INSPECT | C_EVAL | C_PRINT | C_COMPILE)

static int cmd_inspect(const struct args *a);
static int cmd_eval(const struct args *a);
static int cmd_print(const struct args *a);
static int cmd_compile(const struct args *a);
static int cmd_version(const struct args *a);

static const struct command {
	const char *name; /* "MODEL": pcc MODEL */
	unsigned bit;
	const struct cli_usage *usage;
	int (*run)(const struct args *a);
	int (*main)(int argc, char **argv); /* a command with its own parser */
} commands[] = {
	{ "inspect", C_INSPECT, &inspect_usage, cmd_inspect, NULL },
	{ "eval", C_EVAL, &eval_usage, cmd_eval, NULL },
	{ "print", C_PRINT, &print_usage, cmd_print, NULL },
	{ "report", 0, &report_cli_usage, NULL, report_cli },
	{ "train", 0, &cli_train_usage, NULL, cmd_train },
	{ "version", C_VERSION, &version_usage, cmd_version, NULL },
	{ "MODEL", C_COMPILE, &compile_usage, cmd_compile, NULL },
};
#define NCOMMANDS (int)(sizeof commands / sizeof *commands)

/* pcc --help: every command's synopsis and what it does, then the options
 * of pcc MODEL and those every command taking a model reads. */
static int usage_all(void)
{
	printf("usage:\n");
	for (int i = 0; i < NCOMMANDS; i++)
		fputs(commands[i].usage->synopsis, stdout);
	printf("\n");
	for (int i = 0; i < NCOMMANDS; i++)
		fputs(commands[i].usage->about, stdout);
	fputs(compile_usage.options, stdout);
	fputs(cli_model_options, stdout);
	printf("'pcc COMMAND --help' shows one command's options.\n");
	return 0;
}

static int parse_mesh(struct args *a, const char *s)
{
	char tail;
	if (sscanf(s, "%dx%d%c", &a->mesh0, &a->mesh1, &tail) != 2 || a->mesh0 < 1 || a->mesh1 < 1)
		return ir_errorf(-EINVAL, "--mesh %s: expected N0xN1 with positive sizes, e.g. 2x8", s);
	return 0;
}

/* "40GB", "40GiB", "512MiB", or bytes; GB and GiB both mean 2^30 (as the
 * device presets do). */
static int parse_size(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	double unit = 1;
	if (!strcasecmp(end, "gb") || !strcasecmp(end, "gib") || !strcasecmp(end, "g"))
		unit = 1 << 30;
	else if (!strcasecmp(end, "mb") || !strcasecmp(end, "mib") || !strcasecmp(end, "m"))
		unit = 1 << 20;
	else if (!strcasecmp(end, "kb") || !strcasecmp(end, "kib") || !strcasecmp(end, "k"))
		unit = 1 << 10;
	else if (*end)
		end = NULL;
	if (!end || end == s || !(v > 0))
		return ir_errorf(-EINVAL, "%s %s: expected a positive size like 40GB, 512MiB or bytes", opt, s);
	*out = v * unit;
	return 0;
}

/* getopt_long codes of the long-only options */
enum {
	O_JSON = 256,
	O_EXPLAIN,
	O_TIME_PASSES,
	O_STAGE_ONLY,
	O_TRAIN,
	O_PRINT_IR,
	O_MESH,
	O_MEMORY_LIMIT,
	O_HOST_CPU,
	O_SIGN_KEY,
	O_NO_CODEGEN,
	O_CODEGEN,
	O_DUMP_AFTER,
	O_DUMP_DIR,
	O_RECOMPUTE,
	O_TIME_LIMIT,
	O_OPTIM,
	O_DIM,
	O_CONST,
	O_CLUSTER,
	O_CALIB,
	O_BATCH,
	O_MICRO,
	O_LAYERS,
	O_STAGES,
	O_DUMP
};

/* Every option of the commands main.c parses, with the commands that take
 * it; a short option's val is its letter (name NULL: it has no long form). */
static const struct opt_def {
	const char *name;
	int has_arg, val;
	unsigned cmds;
} opt_defs[] = {
	{ "help", no_argument, 'h', C_MODEL | C_VERSION },
	{ "dim", required_argument, O_DIM, C_MODEL },
	{ "const", required_argument, O_CONST, C_MODEL },
	{ "json", no_argument, O_JSON, C_INSPECT | C_COMPILE },
	{ "dump", required_argument, O_DUMP, C_INSPECT },
	{ "train", no_argument, O_TRAIN, C_INSPECT | C_COMPILE },
	{ "optim", required_argument, O_OPTIM, C_INSPECT | C_COMPILE },
	{ "optimizer", required_argument, O_OPTIM, C_INSPECT | C_COMPILE },
	{ NULL, required_argument, 'i', C_EVAL },
	{ NULL, required_argument, 'o', C_EVAL | C_COMPILE },
	{ "quiet", no_argument, 'q', C_COMPILE },
	{ "cluster", required_argument, O_CLUSTER, C_COMPILE },
	{ "batch", required_argument, O_BATCH, C_COMPILE },
	{ "micro-batches", required_argument, O_MICRO, C_COMPILE },
	{ "layers", required_argument, O_LAYERS, C_COMPILE },
	{ "stages", required_argument, O_STAGES, C_COMPILE },
	{ "mesh", required_argument, O_MESH, C_COMPILE },
	{ "memory-limit", required_argument, O_MEMORY_LIMIT, C_COMPILE },
	{ "time-limit", required_argument, O_TIME_LIMIT, C_COMPILE },
	{ "recompute", required_argument, O_RECOMPUTE, C_COMPILE },
	{ "calib", required_argument, O_CALIB, C_COMPILE },
	{ "explain", no_argument, O_EXPLAIN, C_COMPILE },
	{ "time-passes", no_argument, O_TIME_PASSES, C_COMPILE },
	{ "stage-only", no_argument, O_STAGE_ONLY, C_COMPILE },
	{ "print-ir", no_argument, O_PRINT_IR, C_COMPILE },
	{ "host-cpu", required_argument, O_HOST_CPU, C_COMPILE },
	{ "codegen", required_argument, O_CODEGEN, C_COMPILE },
	{ "no-codegen", no_argument, O_NO_CODEGEN, C_COMPILE },
	{ "dump-after", required_argument, O_DUMP_AFTER, C_COMPILE },
	{ "dump-dir", required_argument, O_DUMP_DIR, C_COMPILE },
	{ "sign-key", required_argument, O_SIGN_KEY, C_COMPILE },
};
#define NOPT_DEFS (int)(sizeof opt_defs / sizeof *opt_defs)

/* A positive integer option's value into *out (at most max). */
static int parse_count(const char *opt, const char *v, long max, long *out)
{
	char *end;
	*out = strtol(v, &end, 10);
	if (*end || end == v || *out < 1 || *out > max)
		return ir_errorf(-EINVAL, "%s %s: expected a positive integer", opt, v);
	return 0;
}

/* One option of a's command (c: getopt_long's code, opt: its long name). */
static int parse_option(struct args *a, int c, const char *opt, const char *v)
{
	char *end;
	long k;
	int rc = 0;
	switch (c) {
	case 'q':
		a->quiet = true;
		break;
	case 'i':
		a->in_dir = v;
		break;
	case 'o':
		a->out_dir = v;
		break;
	case O_JSON:
		a->json = true;
		break;
	case O_TIME_PASSES:
		a->time_passes = true;
		break;
	case O_EXPLAIN:
		a->explain = true;
		break;
	case O_STAGE_ONLY:
		a->stage_only = true;
		break;
	case O_TRAIN:
		a->train = true;
		break;
	case O_PRINT_IR:
		a->print_ir = true;
		break;
	case O_MESH:
		return parse_mesh(a, v);
	case O_MEMORY_LIMIT:
		return parse_size("--memory-limit", v, &a->mem_limit);
	case O_HOST_CPU:
		a->host_cpu = v;
		break;
	case O_SIGN_KEY:
		a->sign_key = v;
		break;
	case O_NO_CODEGEN:
		a->codegen = "none";
		break;
	case O_CODEGEN:
		a->codegen = v;
		if (strcmp(v, "host") && strcmp(v, "ptx") && strcmp(v, "all") && strcmp(v, "none"))
			return ir_errorf(-EINVAL, "--codegen %s: expected host, ptx, all or none", v);
		break;
	case O_DUMP_AFTER:
		return pipeline_dump_parse(v, &a->dump_after);
	case O_DUMP_DIR:
		a->dump_dir = v;
		break;
	case O_RECOMPUTE:
		a->recompute = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 0 : !strcmp(v, "auto") ? -1 : -2;
		if (a->recompute == -2)
			return ir_errorf(-EINVAL, "--recompute %s: expected auto, on or off", v);
		break;
	case O_TIME_LIMIT:
		a->time_limit = strtod(v, &end);
		if (*end || end == v || !(a->time_limit > 0))
			return ir_errorf(-EINVAL, "--time-limit %s: expected positive seconds", v);
		break;
	case O_OPTIM:
		a->optim = v;
		break;
	case O_DIM:
		return cli_parse_dim(v, a->dims, &a->ndims, MAX_DIMS);
	case O_CONST:
		return cli_parse_const(v, &a->consts);
	case O_CLUSTER:
		a->cluster = v;
		break;
	case O_CALIB:
		a->calib = v;
		break;
	case O_BATCH:
		a->batch = strtoll(v, &end, 10);
		if (*end || a->batch <= 0 || end == v)
			return ir_errorf(-EINVAL, "--batch %s: expected a positive integer", v);
		break;
	case O_MICRO:
		rc = parse_count("--micro-batches", v, 1 << 20, &k);
		a->micro = (int)k;
		break;
	case O_LAYERS:
		rc = parse_count("--layers", v, 1 << 20, &k);
		a->layers = (int)k;
		break;
	case O_STAGES:
		rc = parse_count("--stages", v, 1 << 20, &k);
		a->stages = (int)k;
		break;
	case O_DUMP:
		k = strtol(v, &end, 10);
		if (*end || end == v || k < 0 || k > 1 << 24)
			return ir_errorf(-EINVAL, "--dump %s: expected a device number", v);
		a->dump = (int)k;
		break;
	case CLI_OPT_STEP:
		if ((rc = cli_train_option(opt, v, &a->topts, a->pats, MAX_DIMS)) < 0)
			return rc;
		a->train_opt = a->train_opt ? a->train_opt : opt;
		a->precision |= !strcmp(opt, "precision");
		break;
	default:
		IR_ASSERT(!"an option without a case");
	}
	return rc;
}

/* -o of pcc MODEL: plan.bin, or FILE.txt (the plan's text form). */
static int check_out(const char *path)
{
	size_t n = strlen(path);
	if (n > 4 && (!strcmp(path + n - 4, ".bin") || !strcmp(path + n - 4, ".txt")))
		return 0;
	return ir_errorf(-EINVAL, "-o %s: pcc writes the executable plan as FILE.bin and its text form as FILE.txt",
			 path);
}

/* a's command's options and its one model (argv[0]: the command, or the
 * program for pcc MODEL): 0, 1 for --help, or -EINVAL naming the usage
 * error. */
static int parse_args(int argc, char **argv, struct args *a)
{
	struct option lo[NOPT_DEFS + 32];
	char shorts[32] = ":";
	int n = 0, ns = 1, c, li = 0;
	for (int i = 0; i < NOPT_DEFS; i++) {
		const struct opt_def *d = &opt_defs[i];
		if (!(d->cmds & a->cmd->bit))
			continue;
		if (d->name)
			lo[n++] = (struct option){ d->name, d->has_arg, NULL, d->val };
		if (d->val < 128) {
			shorts[ns++] = (char)d->val;
			if (d->has_arg == required_argument)
				shorts[ns++] = ':';
		}
	}
	lo[n] = (struct option){ 0 };
	if (a->cmd->bit == C_COMPILE)
		cli_options_add(lo, &n, NOPT_DEFS + 32, cli_step_options);
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, &li)) != -1) {
		if (c == 'h')
			return 1;
		if (c == '?' || c == ':')
			return ir_getopt_error(c, argv);
		if (parse_option(a, c, c >= 256 ? lo[li].name : NULL, optarg) < 0)
			return -EINVAL;
	}
	const char *cmd = a->cmd->bit == C_COMPILE ? "" : a->cmd->name, *sep = *cmd ? ": " : "";
	if (a->cmd->bit == C_VERSION && optind < argc)
		return ir_errorf(-EINVAL, "version: unexpected argument '%s'", argv[optind]);
	if (a->cmd->bit == C_VERSION)
		return 0;
	if (optind == argc)
		return ir_errorf(-EINVAL, "%s%sno model given", cmd, sep);
	if (optind + 1 < argc)
		return ir_errorf(-EINVAL, "%s%sunexpected argument '%s'", cmd, sep, argv[optind + 1]);
	a->model = argv[optind];
	if (a->cmd->bit == C_EVAL && !a->in_dir)
		return ir_errorf(-EINVAL, "eval: -i DIR is required");
	if (a->cmd->bit == C_COMPILE && !a->cluster)
		return ir_errorf(-EINVAL, "%s: --cluster is required", a->model);
	if (a->cmd->bit == C_COMPILE && a->train_opt && !a->train)
		return ir_errorf(-EINVAL, "--%s is an option of the train step: give --train too", a->train_opt);
	if (a->cmd->bit == C_COMPILE && a->json && (a->stage_only || a->explain || (a->dump_after && !a->dump_dir)))
		return ir_errorf(-EINVAL, "--json summarizes the automatic plan: not with %s",
				 a->stage_only ? "--stage-only"
				 : a->explain  ? "--explain"
					       : "--dump-after");
	if (a->cmd->bit == C_COMPILE && a->out_dir)
		return check_out(a->out_dir);
	return 0;
}

static struct ir_graph *load(const struct args *a, struct onnx_model_info *info)
{
	struct onnx_import_opts o;
	onnx_import_opts_init(&o);
	o.dims = a->dims;
	o.ndims = a->ndims;
	cli_consts_use(&a->consts, &o);
	return onnx_import(a->model, &o, info);
}

/* Whether path starts like plan.bin (its magic). */
static bool is_plan_file(const char *path)
{
	char head[8] = { 0 };
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	return n == sizeof head && !memcmp(head, "PCCPLAN\n", 8);
}

static int inspect_plan(const struct args *a)
{
	struct plan *p = plan_read(a->model);
	if (!p)
		return -EINVAL;
	int rc = plan_verify(p);
	if (rc < 0)
		ir_error_prefix("%s", a->model);
	else if (a->dump >= 0)
		rc = plan_print_device(p, a->dump, stdout);
	else
		rc = plan_print_summary(p, stdout);
	plan_free(p);
	return rc;
}

static int cmd_inspect(const struct args *a)
{
	if (a->model && is_plan_file(a->model))
		return inspect_plan(a);
	if (a->dump >= 0)
		return ir_errorf(-EINVAL, "%s: --dump takes a plan file (plan.bin)", a->model ? a->model : "inspect");
	struct onnx_model_info info;
	struct ir_graph *g = load(a, &info);
	if (!g)
		return -EINVAL;
	enum train_optim optim = TRAIN_ADAMW;
	int rc = a->optim ? train_optim_parse(a->optim, &optim) : 0;
	if (rc == 0 && !(a->train && a->json))
		rc = inspect_print(g, &info, a->json, stdout);
	if (rc == 0 && a->train)
		rc = inspect_print_train(g, optim, a->json, stdout);
	ir_graph_free(g);
	return rc;
}

static int cmd_print(const struct args *a)
{
	struct ir_graph *g = load(a, NULL);
	if (!g)
		return -EINVAL;
	int rc = ir_print(g, stdout);
	ir_graph_free(g);
	return rc;
}

static void summarize(const char *name, const struct ir_tensor *t)
{
	char sh[IR_SHAPE_STR_MAX];
	int64_t n = ir_shape_numel(&t->shape);
	printf("%s: %s%s =", name ? name : "", ir_dtype_name(t->dtype), ir_shape_str(&t->shape, sh, sizeof sh));
	for (int64_t i = 0; i < n && i < 8; i++)
		printf(" %.6g", ir_tensor_get_f64(t, i));
	printf(n > 8 ? " ...\n" : "\n");
}

/* The N of the DIR/input_N.pb that feeds graph input v: its place among
 * the model's inputs (names, n; none: i, no input bound as a constant). */
static int input_file(const struct ir_value *v, int i, char **names, int n)
{
	for (int k = 0; names && v->name && k < n; k++)
		if (!strcmp(names[k], v->name))
			return k;
	return i;
}

static int cmd_eval(const struct args *a)
{
	char path[4096], **names = NULL;
	int rc = 0, nin, nout, nnames = 0;
	struct ir_tensor *ins = NULL, *outs = NULL;
	if (!a->in_dir)
		return ir_errorf(-EINVAL, "eval: -i DIR is required");
	struct ir_graph *g = load(a, NULL);
	if (!g)
		return -EINVAL;
	if (a->consts.n && (rc = onnx_input_names(a->model, &names, &nnames)) < 0) {
		ir_graph_free(g);
		return rc;
	}
	nin = ir_graph_ninputs(g);
	nout = ir_graph_noutputs(g);
	ins = ir_calloc((size_t)nin + 1, sizeof *ins);
	outs = ir_calloc((size_t)nout + 1, sizeof *outs);
	if (!ins || !outs) {
		rc = ir_errorf(-ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < nin; i++) {
		struct ir_value *v = ir_graph_input(g, i);
		char s1[IR_SHAPE_STR_MAX], s2[IR_SHAPE_STR_MAX];
		int file = input_file(v, i, names, nnames);
		if (ir_npz_path(a->in_dir)) { /* numpy.savez: by the input's name, else arr_N */
			snprintf(path, sizeof path, "%s", a->in_dir);
			rc = ir_npz_read(a->in_dir, v->name, file, &ins[i]);
		} else {
			ir_input_path(path, sizeof path, a->in_dir, file);
			rc = onnx_tensor_read_as(path, &ins[i], NULL, v->dtype);
		}
		if (rc < 0)
			goto out;
		if (ins[i].dtype != v->dtype || !ir_shape_eq(&ins[i].shape, &v->shape)) {
			rc = ir_errorf(-EINVAL, "%s: holds %s%s but input \"%s\" is %s%s", path,
				       ir_dtype_name(ins[i].dtype), ir_shape_str(&ins[i].shape, s1, sizeof s1),
				       v->name ? v->name : "", ir_dtype_name(v->dtype),
				       ir_shape_str(&v->shape, s2, sizeof s2));
			goto out;
		}
	}
	if ((rc = interp_run(g, ins, outs)) < 0) {
		ir_error_prefix("%s", a->model);
		goto out;
	}
	if (a->out_dir && mkdir(a->out_dir, 0777) < 0 && errno != EEXIST) {
		rc = ir_errorf(-EIO, "%s: cannot create: %s", a->out_dir, strerror(errno));
		goto out;
	}
	for (int i = 0; i < nout; i++) {
		if (!a->out_dir) {
			summarize(ir_graph_output_name(g, i), &outs[i]);
			continue;
		}
		snprintf(path, sizeof path, "%s/output_%d.pb", a->out_dir, i);
		if ((rc = onnx_tensor_write(path, &outs[i], ir_graph_output_name(g, i))) < 0)
			goto out;
	}
out:
	for (int i = 0; ins && i < nin; i++)
		ir_tensor_free(&ins[i]);
	for (int i = 0; outs && i < nout; i++)
		ir_tensor_free(&outs[i]);
	ir_free(ins);
	ir_free(outs);
	ir_free(names);
	ir_graph_free(g);
	return rc;
}

/* A model file: ONNX, or pcc's IR text when it ends in ".ir". */
static struct ir_graph *load_any(const struct args *a)
{
	size_t n = a->model ? strlen(a->model) : 0;
	if (n < 3 || strcmp(a->model + n - 3, ".ir"))
		return load(a, NULL);
	struct pipeline_model m;
	int64_t batch;
	if (pipeline_model_open(&m, a->model, NULL, &batch) < 0)
		return NULL;
	struct ir_graph *g = pipeline_load(&m, 0);
	pipeline_model_close(&m);
	return g;
}

/* -o plan.bin written (p: as read back): what it holds, on stdout or as
 * js's "output" (--json). */
static void written(const struct args *a, const struct plan *p, json_t *js)
{
	int64_t peak = 0;
	for (int i = 0; i < p->ndevices; i++)
		peak = p->devices[i].arena_bytes > peak ? p->devices[i].arena_bytes : peak;
	if (js)
		json_object_set_new(js, "output",
				    json_pack("{s:s, s:s, s:i, s:i, s:I}", "path", a->out_dir, "form", "plan",
					      "devices", p->ndevices, "kernels", p->nkernels, "peak_arena_bytes",
					      (json_int_t)peak));
	else
		printf("wrote %s: %d devices, %d kernels, peak %.3f MiB per device (arena)\n", a->out_dir, p->ndevices,
		       p->nkernels, (double)peak / (1 << 20));
}

/* pcc MODEL --json: plan p's summary, the keys named as pcc report --json
 * names them where they mean the same (stages, step time, memory, the
 * plans weighed, candidates skipped); written adds "output". */
static json_t *plan_json(const struct args *a, const struct cost_cluster *c, const struct inter_plan *p)
{
	json_t *o = json_object(), *stages = json_array(), *alts = json_array();
	json_object_set_new(o, "model", json_string(a->model));
	json_object_set_new(o, "cluster", json_string(c->name));
	json_object_set_new(o, "devices", json_integer(p->devices));
	json_object_set_new(o, "train", json_boolean(p->train));
	json_object_set_new(o, "schedule", json_string(cost_sched_name(p->sched)));
	json_object_set_new(o, "chunks_per_device", json_integer(p->v));
	json_object_set_new(o, "micro_batches", json_integer(p->micro));
	json_object_set_new(o, "micro_batch", json_integer(p->micro_batch));
	json_object_set_new(o, "batch", json_integer(p->batch));
	json_object_set_new(o, "layers", json_integer(p->nlayers));
	json_object_set_new(o, "step_time_s", json_real(p->step_time));
	json_object_set_new(o, "samples_per_s", json_real(p->samples_per_s));
	json_object_set_new(o, "mfu", json_real(p->mfu));
	json_object_set_new(o, "peak_memory_bytes", json_real(p->mem_peak));
	json_object_set_new(o, "memory_limit_bytes", json_real(p->mem_limit));
	for (int i = 0; i < p->nstages; i++) {
		const struct inter_stage *s = &p->stages[i];
		char sub[32], mesh[32];
		snprintf(sub, sizeof sub, "%dx%d", s->rows, s->cols);
		snprintf(mesh, sizeof mesh, "%dx%d", s->n0, s->n1);
		json_array_append_new(
			stages,
			json_pack("{s:i, s:i, s:i, s:i, s:s, s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, "
				  "s:f, s:b, s:b, s:b, s:b}",
				  "first_layer", s->layer_first, "last_layer", s->layer_last, "first_node",
				  s->node_first, "last_node", s->node_last - 1, "sub_mesh", sub, "mesh", mesh,
				  "devices", s->rows * s->cols, "per_microbatch_s", s->t_mb, "xfer_s", s->t_xfer,
				  "dp_sync_s", s->t_sync, "optimizer_s", s->t_optim, "state_bytes", s->mem_state,
				  "activation_bytes_per_microbatch", s->mem_act, "workspace_bytes", s->mem_once,
				  "inflight", s->inflight, "total_bytes", s->mem, "recompute", s->recompute, "zero",
				  s->zero, "lean", s->lean, "overlap", s->overlap));
	}
	json_object_set_new(o, "stages", stages);
	json_object_set_new(o, "plans_weighed", json_integer(p->nweighed));
	for (int i = 0; i < p->nalt; i++) {
		const struct inter_alt *x = &p->alt[i];
		json_array_append_new(alts,
				      json_pack("{s:b, s:I, s:i, s:s, s:i, s:i, s:s, s:f, s:f}", "chosen", x->chosen,
						"micro_batch", (json_int_t)x->micro_batch, "micro_batches", x->micro,
						"schedule", cost_sched_name(x->sched), "chunks_per_device", x->v,
						"stages", x->nstages, "meshes", x->stages, "step_time_s", x->step_time,
						"peak_memory_bytes", x->mem_peak));
		inter_alt_json_sync(json_array_get(alts, json_array_size(alts) - 1), x, p->train);
	}
	json_object_set_new(o, "alternatives", alts);
	json_object_set_new(o, "skipped",
			    p->nskipped ? json_pack("{s:i, s:I, s:s}", "candidates", p->nskipped, "micro_batch",
						    (json_int_t)p->skipped_size, "why", p->skipped_why)
					: json_null());
	json_object_set_new(o, "search_s", json_real(p->search_s));
	json_object_set_new(o, "output",
			    a->out_dir ? json_pack("{s:s, s:s}", "path", a->out_dir, "form", "text") : json_null());
	return o;
}

/* pcc MODEL --cluster C: the compile pipeline (pipeline.c: the search,
 * and with -o plan.bin the plan lowered, its code generated and written),
 * then what it chose on stdout. */
static int cmd_plan(const struct args *a, const struct cost_cluster *c, const struct cost_calib *cal)
{
	struct inter_opts o;
	struct pipeline_result res;
	struct onnx_import_opts imp;
	int rc;
	inter_opts_init(&o);
	progress_init(a->quiet);
	if (a->time_passes)
		progress_time_passes();
	o.train = a->train;
	o.batch = a->batch;
	o.micro = a->micro;
	o.layers = a->layers;
	o.stages = a->stages;
	o.mesh0 = a->mesh0;
	o.mesh1 = a->mesh1;
	o.recompute = a->recompute;
	o.mem_limit = a->mem_limit;
	o.time_limit = a->time_limit;
	o.cal = cal;
	size_t ol = a->out_dir ? strlen(a->out_dir) : 0;
	bool text = ol > 4 && !strcmp(a->out_dir + ol - 4, ".txt");
	/* a training plan to lower: only schedules lowering runs */
	o.no_interleaved = a->train && a->out_dir && !text;
	o.lowered_memory = o.no_interleaved; /* and the memory it will allocate */
	/* the cost model knows Nesterov's state as momentum's */
	if (a->optim && (rc = cost_optim_parse(strcmp(a->optim, "nesterov") ? a->optim : "momentum", &o.optim)) < 0)
		return rc;
	if (a->train_opt && !a->train)
		return ir_errorf(-EINVAL, "--%s is an option of the train step: give --train too", a->train_opt);
	struct train_opts to = a->topts;
	if (a->train && a->optim && (rc = train_optim_parse(a->optim, &to.optim)) < 0)
		return rc;
	/* The step's precision and the search's agree: --precision, else mixed
	 * precision in the devices' 16-bit type (f32 where they have none). */
	if (a->train && a->precision) {
		o.prec = to.compute == IR_BF16  ? COST_PREC_BF16
			 : to.compute == IR_F16 ? COST_PREC_F16
			 : to.compute == IR_F64 ? COST_PREC_F64
						: COST_PREC_F32;
	} else if (a->train) {
		struct cost_device dev;
		struct cost_link intra, inter;
		int per_node;
		cost_cluster_effective(c, &dev, &intra, &inter, &per_node);
		o.prec = cost_default_prec(&dev);
		to.compute = o.prec == COST_PREC_BF16 ? IR_BF16 : o.prec == COST_PREC_F16 ? IR_F16 : IR_F32;
		if (o.prec != COST_PREC_BF16 && o.prec != COST_PREC_F16)
			o.prec = COST_PREC_F32;
	}
	if (a->train && to.sched != TRAIN_LR_CONSTANT && to.total == 0)
		return ir_errorf(-EINVAL, "--schedule %s needs --total-steps N (the length of the decay)",
				 to.sched == TRAIN_LR_COSINE ? "cosine" : "linear");
	onnx_import_opts_init(&imp);
	imp.dims = a->dims;
	imp.ndims = a->ndims;
	cli_consts_use(&a->consts, &imp);
	/* host code for CPU clusters, PTX for GPU ones, unless --codegen says */
	struct codegen_opts co;
	codegen_opts_init(&co);
	co.host_cpu = a->host_cpu;
	const char *cg = a->codegen ? a->codegen : c->cpu ? "host" : "ptx";
	co.host = !strcmp(cg, "host") || !strcmp(cg, "all");
	co.ptx = !strcmp(cg, "ptx") || !strcmp(cg, "all");
	for (int i = 0; i < c->ngroups; i++) /* one GPU kind: its code only */
		co.sm = i == 0 || co.sm == c->groups[i].dev.sm ? c->groups[i].dev.sm : 0;
	struct pipeline_input in = {
		.model = a->model,
		.cluster_spec = a->cluster,
		.cluster = c,
		.opts = &o,
		.imp = &imp,
		.train = a->train ? &to : NULL,
		.out = a->out_dir,
		.codegen = codegen_plan,
		.cg = &co,
		.cg_name = cg,
		.key = a->sign_key ? &sign_key : NULL,
		.dump = a->dump_dir && !a->dump_after ? ~0u : a->dump_after,
		.dump_dir = a->dump_dir,
	};
	if ((rc = pipeline_compile(&in, &res)) < 0)
		return rc;
	const struct inter_plan *p = &res.plan;
	char peak[IR_BYTES_STRLEN];
	json_t *js = a->json ? plan_json(a, c, p) : NULL;
	if (!js) {
		printf("%s on %s: %d stage%s, %s, %d micro-batch%s; step %.3f ms, %.4g samples/s, MFU %.1f%%, "
		       "peak %s per device\n",
		       a->model, c->name, p->nstages, p->nstages == 1 ? "" : "s", cost_sched_name(p->sched), p->micro,
		       p->micro == 1 ? "" : "es", p->step_time * 1e3, p->samples_per_s, 100 * p->mfu,
		       ir_bytes_str(p->mem_peak, peak));
		inter_skipped_print(p, stdout);
	}
	if (a->explain)
		rc = inter_explain(p, stdout);
	if (a->explain && res.written)
		inter_lowered_print(p, res.written, stdout);
	if (rc == 0 && res.written)
		written(a, res.written, js);
	if (rc == 0 && js) {
		if (json_dumpf(js, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10)) < 0 ||
		    printf("\n") < 0)
			rc = ir_errorf(-EIO, "cannot write the plan's summary");
	}
	json_decref(js);
	plan_free(res.written);
	inter_plan_free(&res.plan);
	if (rc == 0)
		progress_time_print(stderr);
	return rc;
}

static int cmd_compile(const struct args *a)
{
	struct cost_cluster c;
	struct cost_calib cal;
	struct intra_opts o;
	struct intra_result r;
	int rc;
	if ((rc = cost_cluster_parse(a->cluster, &c)) < 0)
		return rc;
	if (a->calib) {
		cost_calib_init(&cal);
		if ((rc = cost_calib_load(a->calib, &cal)) < 0)
			return rc;
	}
	size_t ol = a->out_dir ? strlen(a->out_dir) : 0;
	if (a->sign_key && (a->stage_only || !ol || (ol > 4 && !strcmp(a->out_dir + ol - 4, ".txt"))))
		return ir_errorf(-EINVAL, "--sign-key %s signs the plan -o writes: give -o plan.bin", a->sign_key);
	if (a->sign_key && (rc = plan_key_read(a->sign_key, &sign_key)) < 0)
		return rc;
	if (!a->stage_only)
		return cmd_plan(a, &c, a->calib ? &cal : NULL);
	if (a->stages)
		return ir_errorf(-EINVAL, "--stages %d: --stage-only compiles one stage; leave one of them out",
				 a->stages);
	intra_opts_init(&o);
	o.n0 = a->mesh0 ? a->mesh0 : c.nodes;
	o.n1 = a->mesh1 ? a->mesh1 : c.ndevices / c.nodes;
	o.train = a->train;
	o.mem_limit = a->mem_limit;
	if (a->time_limit > 0)
		o.time_limit = a->time_limit;
	if (a->optim && (rc = cost_optim_parse(a->optim, &o.optim)) < 0)
		return rc;
	if (a->calib)
		o.cal = &cal;
	struct ir_graph *g = load_any(a);
	if (!g)
		return -EINVAL;
	if ((rc = intra_pass(g, &c, &o, &r)) < 0) {
		ir_error_prefix("%s", a->model);
		ir_graph_free(g);
		return rc;
	}
	int counts[COST_COLL_COUNT][2] = { { 0 } };
	for (int i = 0; i < r.nevents; i++)
		counts[r.events[i].coll][r.events[i].bwd]++;
	printf("%s: one stage on mesh %dx%d of %s: %s %.6g ms (compute %.6g ms, communication %.6g ms), "
	       "peak memory %.3f GiB of %.3f GiB per device\n",
	       a->model, o.n0, o.n1, c.name, o.train ? "training step" : "forward pass", r.t_total * 1e3,
	       r.t_compute * 1e3, r.t_comm * 1e3, r.mem_peak / (1 << 30), r.mem_limit / (1 << 30));
	printf("collectives:");
	int any = 0;
	for (int k = 0; k < COST_COLL_COUNT; k++)
		for (int b = 0; b < 2; b++)
			if (counts[k][b])
				printf("%s %d %s%s", any++ ? "," : "", counts[k][b], cost_coll_name((enum cost_coll)k),
				       b ? " (backward)" : "");
	printf("%s\nintra-op pass: %.3f s (solver %.3f s), %d variables, %d strategies\n", any ? "" : " none", r.pass_s,
	       r.solve_s, r.nvars, r.nstrategies);
	if (a->explain)
		rc = intra_explain(g, &r, stdout);
	if (rc == 0 && a->print_ir)
		rc = ir_print(g, stdout);
	intra_result_free(&r);
	ir_graph_free(g);
	return rc;
}

/* --const's values, read before any command runs: only an ONNX model has
 * inputs to bind. */
static int load_consts(struct args *a)
{
	size_t n = a->model ? strlen(a->model) : 0;
	if (a->consts.n == 0)
		return 0;
	if (!a->model || is_plan_file(a->model) || (n > 3 && !strcmp(a->model + n - 3, ".ir")))
		return ir_errorf(-EINVAL, "%s: %s, and --const binds an input of an ONNX model", a->consts.k[0].from,
				 !a->model                ? "no model given"
				 : is_plan_file(a->model) ? "the file is a plan"
							  : "the model is IR text");
	return cli_consts_load(&a->consts, a->model);
}

static int cmd_version(const struct args *a)
{
	unsigned maj, min, patch;
	LLVMGetVersion(&maj, &min, &patch);
	printf("pcc %s\n", PCC_VERSION);
	printf("  GLPK %s, LLVM %u.%u.%u, protobuf-c %s, jansson %s\n", glp_version(), maj, min, patch,
	       protobuf_c_version(), jansson_version_str());
	return 0;
}

/* One line when some sharding solve stopped at its time limit instead of
 * at its counted work: only then may the same command's plan differ. */
static int warn_timeouts(int status)
{
	int n = intra_timeouts();
	if (n > 0)
		fprintf(stderr,
			"pcc: warning: %d sharding solve%s stopped at the time limit (--time-limit) before "
			"finishing: the plan may vary with machine load\n",
			n, n == 1 ? "" : "s");
	return status;
}

/* The command argv names: argv[1], or pcc MODEL when argv[1] is no
 * command's name (a model, or an option of pcc MODEL); NULL when it looks
 * like a command that does not exist. */
static const struct command *command(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	for (int i = 0; i < NCOMMANDS; i++)
		if (!strcmp(s, commands[i].name) && commands[i].bit != C_COMPILE)
			return &commands[i];
	/* a word without a dot or slash that names no file is a mistyped
	 * command, not a model */
	if (s[0] != '-' && !strpbrk(s, "./") && access(s, F_OK) < 0)
		return NULL;
	return &commands[NCOMMANDS - 1];
}

int main(int argc, char **argv)
{
	struct args a;
	int rc;
#ifdef __GLIBC__
	/* arrays of 256 KiB or more (a device's instructions at scale) straight
	 * from the kernel and back to it when freed: glibc's threshold
	 * otherwise rises past them at the first such free, and a plan's
	 * arrays freed among smaller blocks stay in the heap */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
	interp_blas_init();
	if (argc < 2) {
		ir_errorf(-EINVAL, "no command given");
		return cli_fail(2, NULL);
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return usage_all();
	if (!strcmp(argv[1], "help")) /* pcc help [COMMAND] */
		return argc > 2 && command(argc - 1, argv + 1) ? cli_help(command(argc - 1, argv + 1)->usage)
							       : usage_all();
	if (!strcmp(argv[1], "--version"))
		return cmd_version(NULL);
	memset(&a, 0, sizeof a);
	a.dump = -1;
	a.recompute = -1;
	train_opts_init(&a.topts);
	if (!(a.cmd = command(argc, argv))) {
		ir_errorf(-EINVAL, "unknown command '%s'", argv[1]);
		return cli_fail(2, NULL);
	}
	if (a.cmd->main)
		return warn_timeouts(a.cmd->main(argc - 1, argv + 1));
	/* pcc MODEL parses from argv[1], a command from the word after it */
	bool compile = a.cmd->bit == C_COMPILE;
	rc = parse_args(compile ? argc : argc - 1, compile ? argv : argv + 1, &a);
	int status = rc < 0 ? 2 : 0;
	if (rc == 1)
		cli_help(a.cmd->usage);
	else if (rc == 0 && (rc = load_consts(&a)) == 0)
		rc = a.cmd->run(&a);
	/* what the options took, also when a later option was refused */
	for (int i = 0; i < a.ndims; i++)
		free((char *)a.dims[i].name);
	cli_consts_free(&a.consts);
	if (status == 0 && rc < 0)
		status = 1;
	if (status)
		cli_fail(status, compile ? NULL : a.cmd->name);
	return warn_timeouts(status);
}
