/*
 * main.c: the pcc driver. Parses the command line, runs one subcommand and
 * turns a recorded error into one line "pcc: ..." with exit status 1.
 *
 *   pcc inspect MODEL [--dim N=V]... [--const NAME=FILE|DIR]... [--json]
 *   pcc eval MODEL -i DIR [-o OUTDIR] [--dim N=V]... [--const NAME=FILE|DIR]...
 *   pcc print MODEL [--dim N=V]...          the core IR in its text form
 *   pcc report MODEL --cluster C [--plan P] ...  what-if reports (report_cli.c)
 *   pcc MODEL --cluster C [--batch B] [--train] [--stages P] [--mesh N0xN1] [--explain]
 *             [-o plan.bin|PLAN.txt]        the automatic plan
 *   pcc inspect plan.bin [--dump DEVICE]    what a plan holds
 *   pcc MODEL --cluster C --stage-only [--mesh N0xN1] [--train] [--explain] ...
 *   pcc train MODEL -i DIR [--optimizer O] [--lr X] [--steps N] [--save-onnx OUT] ...
 *   pcc version
 * --const binds a graph input as a constant (cli_const.c) wherever a
 * model is imported.
 */
#include <errno.h>
#include <glpk.h>
#include <jansson.h>
#include <llvm-c/Core.h>
#include <protobuf-c/protobuf-c.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ir/npy.h"
#include "compiler/cli.h"
#include "compiler/codegen.h"
#include "compiler/compiler.h"
#include "compiler/progress.h"
#include "compiler/report_internal.h"
#include "ir/plan.h"

#define MAX_DIMS 64

struct args {
	const char *cmd, *model, *in_dir, *out_dir;
	const char *cluster, *calib;
	long long batch;
	bool json, explain, stage_only, train, print_ir;
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
	const char *train_opt; /* the first step option given, for "needs --train" */
	bool precision;        /* --precision given */
	const char *host_cpu;  /* --host-cpu: the CPU host kernels are compiled for */
	const char *codegen;   /* --codegen host|ptx|all|none; NULL: the cluster's kind */
	bool dump_fusion;      /* --dump-after=fusion */
	const char *sign_key;  /* --sign-key FILE: -o plan.bin carries an HMAC under it */
};

/* The key --sign-key names, read before the compile (ir/plan_sign.c). */
static struct plan_key sign_key;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pcc inspect MODEL [--dim NAME=VALUE]... [--const NAME=FILE|DIR]... [--json] [--train [--optim O]]\n"
		"       pcc inspect plan.bin [--dump DEVICE]\n"
		"       pcc eval MODEL -i DIR [-o OUTDIR] [--dim NAME=VALUE]... [--const NAME=FILE|DIR]...\n"
		"       pcc print MODEL [--dim NAME=VALUE]... [--const NAME=FILE|DIR]...\n");
	report_cli_usage(f);
	fprintf(f, "       pcc version\n");
	cli_train_usage(f);
	fprintf(f,
		"       pcc MODEL --cluster C [--batch B] [--train [--optim O] [STEP OPTIONS]] [--micro-batches M]\n"
		"                 [--layers L] [--stages P] [--mesh N0xN1] [--memory-limit SIZE] [--time-limit S]\n"
		"                 [--recompute auto|on|off] [--calib FILE] [--explain] [-q] [--dim NAME=VALUE]... [--const NAME=FILE|DIR]...\n"
		"                 [-o plan.bin [--host-cpu x86-64-v2|v3|v4|native] [--codegen host|ptx|all|none]\n"
		"                 [--dump-after=fusion] [--sign-key KEY] | -o PLAN.txt]\n"
		"                 STEP OPTIONS: as pcc train's (--loss, --lr, --schedule with --total-steps N, ...)\n"
		"       pcc MODEL --cluster C --stage-only [--mesh N0xN1] [--train [--optim O]] [--memory-limit SIZE]\n"
		"                 [--time-limit S] [--calib FILE] [--explain] [--print-ir]\n"
		"\n"
		"  inspect  inputs, outputs, op histograms, parameters, FLOPs of a forward pass\n"
		"  eval     run the reference interpreter on DIR/input_N.pb (ONNX TensorProto),\n"
		"           writing OUTDIR/output_N.pb, or printing a summary without -o\n"
		"  print    the model imported into pcc's core IR, as text\n"
		"  report   time, memory, throughput and cost of one step under a manual plan (--plan)\n"
		"           or the automatic one; compared, swept, traced (--trace) and drawn (--html)\n"
		"  train    train on the reference interpreter and write the trained model (--save-onnx)\n"
		"  MODEL    compile: the automatic plan (pipeline stages, sub-meshes, sharding,\n"
		"           schedule, micro-batches); -o plan.bin writes the executable plan (the\n"
		"           forward pass, pipelined or not, for now), -o FILE.txt its text form;\n"
		"           --stage-only runs the intra-op pass on the whole model as one\n"
		"           stage over an N0xN1 device mesh (default: nodes x devices per node) and\n"
		"           prints the plan; --print-ir writes the IR with its sharding annotations\n"
		"  --stages P   the automatic plan has exactly P pipeline stages (default: searched)\n"
		"  --mesh N0xN1 the automatic plan's every stage runs on an N0xN1 logical mesh of\n"
		"           N0*N1 devices, so the stages are devices / (N0*N1) (default: searched)\n"
		"  -q       no progress on stderr (shown after 2 s: phase, work done, best step time)\n"
		"  --recompute  training: auto (default) lets the search choose per stage whether\n"
		"           its backward pass recomputes each layer's activations from the layer's\n"
		"           input instead of keeping them (activation checkpointing); on and off force it\n"
		"  --cluster  NODESxDEVICES:KIND[,ib=200Gbps,nvlink=600GBps], cpu:N, or a JSON file\n"
		"  --batch  global batch of one step (samples)\n"
		"  --time-limit S  wall seconds each sharding solve may take, a backstop only (default\n"
		"           60 per stage, 30 per layer in the search): the solver's work is bounded by\n"
		"           counts, so the same input and flags give the same plan however loaded the\n"
		"           machine is, unless this fires, which pcc then says on stderr\n"
		"  --dim    bind a symbolic ONNX dimension, e.g. --dim batch=8\n"
		"  --const  bind a graph input as a constant (a shape, Slice's starts, TopK's k...):\n"
		"           NAME=FILE.pb (a TensorProto) or NAME=DIR (DIR/input_N.pb, N the input's\n"
		"           place among the model's inputs); pcc-run -i then leaves its file unread\n");
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

static bool is_command(const char *s)
{
	static const char *const cmds[] = { "inspect", "eval", "print", "report", "version", "--version" };
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strcmp(s, cmds[i]))
			return true;
	return false;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	memset(a, 0, sizeof *a);
	a->dump = -1;
	a->recompute = -1;
	train_opts_init(&a->topts);
	if (argc < 2)
		return ir_errorf(-EINVAL, "no command given (try 'pcc --help')");
	a->cmd = argv[1];
	int first = 2;
	if (!is_command(argv[1]) && argv[1][0] != '-') {
		a->cmd = "compile";
		a->model = argv[1];
	} else if (!is_command(argv[1])) {
		first = 1;
		a->cmd = "compile";
	}
	for (int i = first; i < argc; i++) {
		const char *s = argv[i];
		bool has_next = i + 1 < argc;
		int rc;
		if (!strcmp(s, "--json")) {
			a->json = true;
		} else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
			a->quiet = true;
		} else if (!strcmp(s, "--explain")) {
			a->explain = true;
		} else if (!strcmp(s, "--stage-only")) {
			a->stage_only = true;
		} else if (!strcmp(s, "--train")) {
			a->train = true;
		} else if (cli_train_flag(s, &a->topts)) {
			a->train_opt = a->train_opt ? a->train_opt : s;
		} else if (!strcmp(s, "--print-ir")) {
			a->print_ir = true;
		} else if (!strcmp(s, "--mesh") && has_next) {
			if (parse_mesh(a, argv[++i]) < 0)
				return -EINVAL;
		} else if (!strcmp(s, "--memory-limit") && has_next) {
			if (parse_size(s, argv[++i], &a->mem_limit) < 0)
				return -EINVAL;
		} else if (!strcmp(s, "--host-cpu") && has_next) {
			a->host_cpu = argv[++i];
		} else if (!strcmp(s, "--sign-key") && has_next) {
			a->sign_key = argv[++i];
		} else if (!strcmp(s, "--no-codegen")) {
			a->codegen = "none";
		} else if (!strcmp(s, "--codegen") && has_next) {
			a->codegen = argv[++i];
			if (strcmp(a->codegen, "host") && strcmp(a->codegen, "ptx") && strcmp(a->codegen, "all") &&
			    strcmp(a->codegen, "none"))
				return ir_errorf(-EINVAL, "--codegen %s: expected host, ptx, all or none", a->codegen);
		} else if (!strcmp(s, "--dump-after=fusion") ||
			   (!strcmp(s, "--dump-after") && has_next && !strcmp(argv[i + 1], "fusion") && ++i)) {
			a->dump_fusion = true;
		} else if (!strcmp(s, "--recompute") && has_next) {
			const char *v = argv[++i];
			a->recompute = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? 0 : !strcmp(v, "auto") ? -1 : -2;
			if (a->recompute == -2)
				return ir_errorf(-EINVAL, "--recompute %s: expected auto, on or off", v);
		} else if (!strcmp(s, "--time-limit") && has_next) {
			char *end;
			a->time_limit = strtod(argv[++i], &end);
			if (*end || end == argv[i] || !(a->time_limit > 0))
				return ir_errorf(-EINVAL, "--time-limit %s: expected positive seconds", argv[i]);
		} else if ((!strcmp(s, "--optim") || !strcmp(s, "--optimizer")) && has_next) {
			a->optim = argv[++i];
		} else if (!strcmp(s, "--dim") && has_next) {
			if (cli_parse_dim(argv[++i], a->dims, &a->ndims, MAX_DIMS) < 0)
				return -EINVAL;
		} else if (!strncmp(s, "--dim=", 6)) {
			if (cli_parse_dim(s + 6, a->dims, &a->ndims, MAX_DIMS) < 0)
				return -EINVAL;
		} else if (!strcmp(s, "--const") && has_next) {
			if (cli_parse_const(argv[++i], &a->consts) < 0)
				return -EINVAL;
		} else if (!strncmp(s, "--const=", 8)) {
			if (cli_parse_const(s + 8, &a->consts) < 0)
				return -EINVAL;
		} else if (!strcmp(s, "--cluster") && has_next) {
			a->cluster = argv[++i];
		} else if (!strcmp(s, "--calib") && has_next) {
			a->calib = argv[++i];
		} else if (!strcmp(s, "--batch") && has_next) {
			char *end;
			a->batch = strtoll(argv[++i], &end, 10);
			if (*end || a->batch <= 0 || end == argv[i])
				return ir_errorf(-EINVAL, "--batch %s: expected a positive integer", argv[i]);
		} else if ((!strcmp(s, "--micro-batches") || !strcmp(s, "--layers") || !strcmp(s, "--stages")) &&
			   has_next) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || end == argv[i] || v < 1 || v > 1 << 20)
				return ir_errorf(-EINVAL, "%s %s: expected a positive integer", s, argv[i]);
			*(s[2] == 'm' ? &a->micro : s[2] == 'l' ? &a->layers : &a->stages) = (int)v;
		} else if (!strcmp(s, "--dump") && has_next) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || end == argv[i] || v < 0 || v > 1 << 24)
				return ir_errorf(-EINVAL, "--dump %s: expected a device number", argv[i]);
			a->dump = (int)v;
		} else if (!strcmp(s, "-i") && has_next) {
			a->in_dir = argv[++i];
		} else if (!strcmp(s, "-o") && has_next) {
			a->out_dir = argv[++i];
		} else if (has_next && (rc = cli_train_option(s, argv[i + 1], &a->topts, a->pats, MAX_DIMS)) != 0) {
			if (rc < 0)
				return rc;
			if (!a->train_opt)
				a->train_opt = s;
			a->precision |= !strcmp(s, "--precision");
			i++;
		} else if (s[0] == '-') {
			return ir_errorf(-EINVAL, "unknown or incomplete option '%s'", s);
		} else if (!a->model) {
			a->model = s;
		} else {
			return ir_errorf(-EINVAL, "unexpected argument '%s'", s);
		}
	}
	return 0;
}

static struct ir_graph *load(const struct args *a, struct onnx_model_info *info)
{
	struct onnx_import_opts o;
	onnx_import_opts_init(&o);
	o.dims = a->dims;
	o.ndims = a->ndims;
	cli_consts_use(&a->consts, &o);
	if (!a->model) {
		ir_errorf(-EINVAL, "%s: no model given", a->cmd);
		return NULL;
	}
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
		ir_input_path(path, sizeof path, a->in_dir, input_file(v, i, names, nnames));
		if ((rc = onnx_tensor_read_as(path, &ins[i], NULL, v->dtype)) < 0)
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
	FILE *f = fopen(a->model, "rb");
	if (!f) {
		ir_errorf(-ENOENT, "%s: cannot open: %s", a->model, strerror(errno));
		return NULL;
	}
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	char buf[65536];
	size_t k;
	while (m && (k = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, k, m);
	fclose(f);
	if (!m || fclose(m)) {
		free(text);
		ir_errorf(-ENOMEM, "%s: out of memory reading", a->model);
		return NULL;
	}
	struct ir_graph *g = ir_parse(text);
	free(text);
	if (!g)
		ir_error_prefix("%s", a->model);
	else if (ir_verify(g) < 0) {
		ir_error_prefix("%s", a->model);
		ir_graph_free(g);
		g = NULL;
	}
	return g;
}

/* The inter-op pass's loader: the model with its batch bound to b. */
struct plan_load {
	const struct args *a;
	struct onnx_import_opts imp;
	char bname[128];
};

static struct ir_graph *load_batch(void *ctx, int64_t b)
{
	const struct plan_load *pl = ctx;
	size_t n = strlen(pl->a->model);
	if (n > 3 && !strcmp(pl->a->model + n - 3, ".ir"))
		return load_any(pl->a);
	return pl->bname[0] ? onnx_import_batch(pl->a->model, &pl->imp, pl->bname, b)
			    : onnx_import(pl->a->model, &pl->imp, NULL);
}

/* Names the model in the error unless the message already starts with it
 * (errors of the ONNX import do). */
static void prefix_model(const struct args *a)
{
	size_t n = strlen(a->model);
	if (strncmp(ir_error(), a->model, n) || ir_error()[n] != ':')
		ir_error_prefix("%s", a->model);
}

/* -o FILE.txt: the inter-op plan's text form. */
static int write_text(const char *path, const struct inter_plan *p)
{
	FILE *out = fopen(path, "w");
	if (!out)
		return ir_errorf(-errno, "%s: cannot write: %s", path, strerror(errno));
	int rc = inter_explain(p, out);
	if (fclose(out) != 0 && rc == 0)
		rc = ir_errorf(-EIO, "%s: write error", path);
	return rc;
}

/* -o plan.bin: lowered, verified, written, read back and verified again. */
/* Lowers, generates code for and writes plan p (lowered already: taken over). */
static int write_plan(const struct args *a, const struct cost_cluster *c, struct plan *p)
{
	struct plan *back;
	int rc = 0;
	if (a->dump_fusion)
		for (int s = 0; s < p->nstages && rc == 0; s++)
			rc = plan_print_device(p, p->stages[s].first_rank, stdout);
	/* host code for CPU clusters, PTX for GPU ones, unless --codegen says */
	struct codegen_opts co;
	codegen_opts_init(&co);
	co.host_cpu = a->host_cpu;
	const char *cg = a->codegen ? a->codegen : c->cpu ? "host" : "ptx";
	co.host = !strcmp(cg, "host") || !strcmp(cg, "all");
	co.ptx = !strcmp(cg, "ptx") || !strcmp(cg, "all");
	progress_phase(0, "codegen (%s)", cg);
	if (rc == 0 && strcmp(cg, "none") && (rc = codegen_plan(p, &co)) < 0)
		ir_error_prefix("%s", a->model);
	if (rc < 0) {
		plan_free(p);
		return rc;
	}
	progress_phase(0, "writing %s", a->out_dir);
	const struct plan_key *key = a->sign_key ? &sign_key : NULL;
	if ((rc = plan_write_signed(p, a->out_dir, key)) == 0) {
		if (!(back = plan_read_verified(a->out_dir, key)))
			rc = -EIO;
		else if ((rc = plan_verify(back)) < 0)
			ir_error_prefix("%s: the plan read back fails its check", a->out_dir);
		plan_free(back);
	}
	progress_end();
	if (rc == 0) {
		int64_t peak = 0;
		for (int i = 0; i < p->ndevices; i++)
			peak = p->devices[i].arena_bytes > peak ? p->devices[i].arena_bytes : peak;
		printf("wrote %s: %d devices, %d kernels, peak %.3f MiB per device (arena)\n", a->out_dir, p->ndevices,
		       p->nkernels, (double)peak / (1 << 20));
	}
	plan_free(p);
	return rc;
}

/* --train: what the step trains, said once before the search, as pcc
 * train says it (train_params_print); a step that cannot be built is left
 * to the search, which reports why in its context. */
static void train_summary(const struct args *a, struct plan_load *pl, int64_t batch, const struct train_opts *to)
{
	bool updates = pl->imp.updates;
	pl->imp.updates = true;
	struct ir_graph *g = load_batch(pl, batch);
	pl->imp.updates = updates;
	struct train_step ts;
	if (g && train_build(g, to, &ts) == 0)
		train_params_print(&ts, a->model, stderr);
	if (g)
		train_step_free(&ts);
	ir_error_clear();
}

/* Lowerings that may refuse a stage before pcc gives up. */
#define MAX_REFUSED 16

/* pcc MODEL --cluster C: the whole automatic plan (inter-op pass); with
 * -o plan.bin, lowered: a stage lowering cannot fit in the memory limit
 * is left out of the search, which runs again (inter_opts.refused). */
static int cmd_plan(const struct args *a, const struct cost_cluster *c, const struct cost_calib *cal)
{
	struct inter_opts o;
	struct inter_plan p;
	struct plan_load pl = { .a = a };
	int rc;
	inter_opts_init(&o);
	progress_init(a->quiet);
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
	o.load = load_batch;
	o.ctx = &pl;
	size_t ol = a->out_dir ? strlen(a->out_dir) : 0;
	bool text = ol > 4 && !strcmp(a->out_dir + ol - 4, ".txt");
	/* a training plan to lower: only schedules lowering runs */
	o.no_interleaved = a->train && a->out_dir && !text;
	o.lowered_memory = o.no_interleaved; /* and the memory it will allocate */
	/* the cost model knows Nesterov's state as momentum's */
	if (a->optim && (rc = cost_optim_parse(strcmp(a->optim, "nesterov") ? a->optim : "momentum", &o.optim)) < 0)
		return rc;
	if (a->train_opt && !a->train)
		return ir_errorf(-EINVAL, "%s is an option of the train step: give --train too", a->train_opt);
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
	size_t n = strlen(a->model);
	if (n > 3 && !strcmp(a->model + n - 3, ".ir")) {
		struct ir_graph *g = load_any(a);
		if (!g)
			return -EINVAL;
		o.static_batch = ir_graph_ninputs(g) && ir_graph_input(g, 0)->shape.rank
					 ? ir_graph_input(g, 0)->shape.dims[0]
					 : 1;
		ir_graph_free(g);
	} else {
		onnx_import_opts_init(&pl.imp);
		pl.imp.dims = a->dims;
		pl.imp.ndims = a->ndims;
		cli_consts_use(&a->consts, &pl.imp);
		if ((rc = onnx_batch_dim(a->model, &pl.imp, pl.bname, sizeof pl.bname, &o.static_batch)) < 0)
			return rc;
	}
	if (a->train)
		train_summary(a, &pl, o.static_batch, &to);
	struct plan *lowered = NULL;
	struct inter_refused *refused = NULL;
	for (;;) {
		pl.imp.updates = false; /* the search weighs the model as given */
		if ((rc = inter_pass(c, &o, &p)) < 0) {
			prefix_model(a);
			break;
		}
		if (!a->out_dir || text)
			break;
		int stage = -1;
		pl.imp.updates = a->train; /* the train step updates BatchNorm's running statistics */
		struct compile_input in = { a->model, a->cluster, c, &o, &p, &to, &pl.imp, &stage };
		if ((rc = compile_lower(&in, &lowered)) == 0)
			break;
		prefix_model(a);
		if (rc != -ENOSPC || stage < 0 || o.nrefused >= MAX_REFUSED)
			break;
		/* lowering is the truth: the search leaves that stage out and runs again */
		struct inter_refused *nr = ir_realloc(refused, sizeof *nr * (size_t)(o.nrefused + 1));
		if (!nr) {
			rc = ir_errorf(-ENOMEM, "out of memory");
			break;
		}
		const struct inter_stage *y = &p.stages[stage];
		refused = nr;
		refused[o.nrefused++] = (struct inter_refused){ p.micro_batch, y->layer_first, y->layer_last,
								y->rows,       y->cols,        y->n0,
								y->n1,         y->inflight };
		o.refused = refused;
		progress_clear();
		fprintf(stderr, "pcc: %s; searching again without stage %d (layers %d-%d on %dx%d)\n", ir_error(),
			stage, y->layer_first, y->layer_last, y->n0, y->n1);
		inter_plan_free(&p);
	}
	progress_end();
	if (rc < 0) {
		ir_free(refused);
		return rc;
	}
	char peak[IR_BYTES_STRLEN];
	printf("%s on %s: %d stage%s, %s, %d micro-batch%s; step %.3f ms, %.4g samples/s, MFU %.1f%%, "
	       "peak %s per device\n",
	       a->model, c->name, p.nstages, p.nstages == 1 ? "" : "s", cost_sched_name(p.sched), p.micro,
	       p.micro == 1 ? "" : "es", p.step_time * 1e3, p.samples_per_s, 100 * p.mfu,
	       ir_bytes_str(p.mem_peak, peak));
	inter_skipped_print(&p, stdout);
	if (a->explain)
		rc = inter_explain(&p, stdout);
	if (rc == 0 && a->out_dir && text)
		rc = write_text(a->out_dir, &p);
	else if (rc == 0 && lowered)
		rc = write_plan(a, c, lowered);
	else if (lowered)
		plan_free(lowered);
	inter_plan_free(&p);
	ir_free(refused);
	return rc;
}

static int cmd_compile(const struct args *a)
{
	struct cost_cluster c;
	struct cost_calib cal;
	struct intra_opts o;
	struct intra_result r;
	int rc;
	if (!a->model)
		return ir_errorf(-EINVAL, "no model given (try 'pcc --help')");
	if (!a->cluster)
		return ir_errorf(-EINVAL, "%s: --cluster is required", a->model);
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

static int cmd_version(void)
{
	unsigned maj, min, patch;
	LLVMGetVersion(&maj, &min, &patch);
	printf("pcc 0.1.0\n");
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

static int run(const struct args *a)
{
	if (!strcmp(a->cmd, "inspect"))
		return cmd_inspect(a);
	if (!strcmp(a->cmd, "eval"))
		return cmd_eval(a);
	if (!strcmp(a->cmd, "print"))
		return cmd_print(a);
	if (!strcmp(a->cmd, "version") || !strcmp(a->cmd, "--version"))
		return cmd_version();
	if (!strcmp(a->cmd, "compile"))
		return cmd_compile(a);
	return ir_errorf(-EINVAL, "unknown command '%s' (try 'pcc --help')", a->cmd);
}

int main(int argc, char **argv)
{
	struct args a;
	int rc;
	interp_blas_init();
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "report"))
		return warn_timeouts(report_cli(argc, argv));
	if (argc >= 2 && !strcmp(argv[1], "train")) {
		rc = cmd_train(argc, argv);
		if (rc < 0)
			fprintf(stderr, "pcc: %s\n", ir_error());
		return rc < 0 ? 1 : 0;
	}
	bool bad_args = parse_args(argc, argv, &a) < 0;
	if (bad_args) {
		fprintf(stderr, "pcc: %s\n", ir_error());
		usage(stderr);
	}
	rc = bad_args ? -EINVAL : load_consts(&a);
	if (rc == 0)
		rc = run(&a);
	/* what the options took, also when a later option was refused */
	for (int i = 0; i < a.ndims; i++)
		free((char *)a.dims[i].name);
	cli_consts_free(&a.consts);
	if (bad_args)
		return 2;
	if (rc < 0) {
		fprintf(stderr, "pcc: %s\n", ir_error());
		return warn_timeouts(1);
	}
	return warn_timeouts(0);
}
