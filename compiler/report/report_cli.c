/*
 * report_cli.c: the `pcc report` command line.
 *
 * Its synopsis and options: report_cli_usage below.
 *
 * Without --plan the report runs the planner exactly as `pcc MODEL
 * --cluster C` does (same options: --train, --optim, --micro-batches,
 * --layers, --stages, --mesh, --memory-limit, the step options) and reads
 * the same cost model. A bad option is one line and exit status 2; an
 * error while reporting (a model that does not fit, a file that cannot be
 * written) one line and exit status 1.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compiler/cli/cli.h"
#include "compiler/progress.h"
#include "compiler/report/report_internal.h"

#define MAX_LIST 64

struct ropts {
	const char *model, *cluster, *cluster2, *plan, *calib, *optim;
	const char *cmp[2];
	const char *trace, *csv, *svg, *png, *html, *sweep_spec;
	struct wi_sweep sweep;
	long long batch;
	bool json, explain, train, precision;
	bool quiet; /* -q: no progress on stderr */
	int mesh0, mesh1, micro, layers, stages;
	double mem_limit, price;
	struct onnx_dim_binding dims[MAX_LIST];
	int ndims;
	struct cli_consts consts; /* --const NAME=FILE|DIR */
	struct train_opts topts;
	struct train_pattern pats[MAX_LIST];
	const char *train_opt; /* the first step option given */
};

const struct cli_usage report_cli_usage = {
	.synopsis =
		"       pcc report MODEL --cluster C --plan dp=D,tp=T,pp=P[,mb=M][,schedule=S][,zero=Z]\n"
		"                  [,recompute=0|1][,optim=O][,precision=P] [--batch B] [--calib FILE] [--json] [--explain]\n"
		"       pcc report MODEL --cluster C [--batch B] [--train [--optim O] [STEP OPTIONS]] [--micro-batches M]\n"
		"                  [--layers L] [--stages P] [--mesh N0xN1] [--memory-limit SIZE]   (the automatic plan)\n"
		"                  [--compare A B] [--compare-cluster C2]   (A, B: auto or dp=..,tp=..,pp=..)\n"
		"                  [--sweep gpus=LO..HI | --sweep tp,pp | --sweep sensitivity] [--csv FILE]\n"
		"                  [--trace FILE.json] [--svg FILE] [--png FILE] [--html FILE]\n"
		"                  [--price-per-gpu-hour X] [--dim NAME=VALUE]... [--const NAME=FILE|DIR]... [--json] [-q]\n",
	.about = "  report   time, memory, throughput and cost of one step under a manual plan (--plan)\n"
		 "           or the automatic one; compared, swept, traced (--trace) and drawn (--html)\n",
	.options = "  --plan P  a manual plan (D-way data, T-way tensor, P-way pipeline parallel); without\n"
		   "           it the automatic plan, with pcc MODEL's options (pcc --help) and step options\n"
		   "  --compare A B  two plans side by side; --compare-cluster C2: B on cluster C2\n"
		   "  --sweep  the plan over cluster sizes, tp x pp, or each cost figure's sensitivity\n"
		   "  --trace FILE.json  the step's timeline (chrome://tracing, Perfetto)\n"
		   "  --svg, --png, --html FILE  charts, or one page with all of it\n"
		   "  -q       no progress on stderr\n",
	.model = true,
};

static int parse_double(const char *opt, const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v > 0) || v > 1e12)
		return ir_errorf(-EINVAL, "%s %s: expected a positive number", opt, s);
	*out = v;
	return 0;
}

static int parse_count(const char *opt, const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < 1 || v > 1 << 20)
		return ir_errorf(-EINVAL, "%s %s: expected a positive integer", opt, s);
	*out = (int)v;
	return 0;
}

/* "40GB", "512MiB", bytes: GB and GiB both 2^30, as `pcc MODEL` takes them. */
static int parse_size(const char *opt, const char *s, double *out)
{
	static const struct {
		const char *suffix;
		double unit;
	} units[] = {
		{ "", 1 },         { "k", 1 << 10 },   { "kb", 1 << 10 }, { "kib", 1 << 10 }, { "m", 1 << 20 },
		{ "mb", 1 << 20 }, { "mib", 1 << 20 }, { "g", 1 << 30 },  { "gb", 1 << 30 },  { "gib", 1 << 30 }
	};
	char *end;
	double v = strtod(s, &end);
	for (size_t i = 0; end != s && v > 0 && i < sizeof units / sizeof *units; i++)
		if (!strcasecmp(end, units[i].suffix)) {
			*out = v * units[i].unit;
			return 0;
		}
	return ir_errorf(-EINVAL, "%s %s: expected a positive size like 40GB, 512MiB or bytes", opt, s);
}

/* 0, 1 for --help, or -EINVAL naming the usage error. */
static int parse(int argc, char **argv, struct ropts *a)
{
	enum {
		O_CLUSTER = 256,
		O_PLAN,
		O_CALIB,
		O_TRACE,
		O_CSV,
		O_SVG,
		O_PNG,
		O_HTML,
		O_CLUSTER2,
		O_OPTIM,
		O_JSON,
		O_EXPLAIN,
		O_TRAIN,
		O_COMPARE,
		O_BATCH,
		O_SWEEP,
		O_PRICE,
		O_MEMORY,
		O_MICRO,
		O_LAYERS,
		O_STAGES,
		O_DIM,
		O_CONST,
		O_MESH
	};
	static const struct option own[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "cluster", required_argument, NULL, O_CLUSTER },
		{ "plan", required_argument, NULL, O_PLAN },
		{ "calib", required_argument, NULL, O_CALIB },
		{ "trace", required_argument, NULL, O_TRACE },
		{ "csv", required_argument, NULL, O_CSV },
		{ "svg", required_argument, NULL, O_SVG },
		{ "png", required_argument, NULL, O_PNG },
		{ "html", required_argument, NULL, O_HTML },
		{ "compare-cluster", required_argument, NULL, O_CLUSTER2 },
		{ "optim", required_argument, NULL, O_OPTIM },
		{ "optimizer", required_argument, NULL, O_OPTIM },
		{ "json", no_argument, NULL, O_JSON },
		{ "explain", no_argument, NULL, O_EXPLAIN },
		{ "train", no_argument, NULL, O_TRAIN },
		{ "compare", required_argument, NULL, O_COMPARE },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "sweep", required_argument, NULL, O_SWEEP },
		{ "price-per-gpu-hour", required_argument, NULL, O_PRICE },
		{ "memory-limit", required_argument, NULL, O_MEMORY },
		{ "micro-batches", required_argument, NULL, O_MICRO },
		{ "layers", required_argument, NULL, O_LAYERS },
		{ "stages", required_argument, NULL, O_STAGES },
		{ "dim", required_argument, NULL, O_DIM },
		{ "const", required_argument, NULL, O_CONST },
		{ "mesh", required_argument, NULL, O_MESH },
		{ 0 },
	};
	struct option lo[64];
	int n = 0, c, li = 0;
	memset(a, 0, sizeof *a);
	train_opts_init(&a->topts);
	cli_options_add(lo, &n, 64, own);
	cli_options_add(lo, &n, 64, cli_step_options);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hq", lo, &li)) != -1) {
		const char *v = optarg, *opt = c == CLI_OPT_STEP || c >= 256 ? lo[li].name : NULL;
		char tail, *end;
		int rc = 0;
		switch (c) {
		case 'h':
			return 1;
		case 'q':
			a->quiet = true;
			break;
		case O_CLUSTER:
			a->cluster = v;
			break;
		case O_PLAN:
			a->plan = v;
			break;
		case O_CALIB:
			a->calib = v;
			break;
		case O_TRACE:
			a->trace = v;
			break;
		case O_CSV:
			a->csv = v;
			break;
		case O_SVG:
			a->svg = v;
			break;
		case O_PNG:
			a->png = v;
			break;
		case O_HTML:
			a->html = v;
			break;
		case O_CLUSTER2:
			a->cluster2 = v;
			break;
		case O_OPTIM:
			a->optim = v;
			break;
		case O_JSON:
			a->json = true;
			break;
		case O_EXPLAIN:
			a->explain = true;
			break;
		case O_TRAIN:
			a->train = true;
			break;
		case O_COMPARE: /* two values: the second is the next word */
			if (optind >= argc)
				return ir_errorf(-EINVAL,
						 "--compare expects two plans, A and B (auto or dp=..,tp=..,pp=..)");
			a->cmp[0] = v;
			a->cmp[1] = argv[optind++];
			break;
		case O_BATCH:
			a->batch = strtoll(v, &end, 10);
			if (*end || end == v || a->batch <= 0)
				rc = ir_errorf(-EINVAL, "--batch %s: expected a positive integer", v);
			break;
		case O_SWEEP:
			a->sweep_spec = v;
			rc = wi_sweep_parse(v, &a->sweep);
			break;
		case O_PRICE:
			rc = parse_double("--price-per-gpu-hour", v, &a->price);
			break;
		case O_MEMORY:
			rc = parse_size("--memory-limit", v, &a->mem_limit);
			break;
		case O_MICRO:
			rc = parse_count("--micro-batches", v, &a->micro);
			break;
		case O_LAYERS:
			rc = parse_count("--layers", v, &a->layers);
			break;
		case O_STAGES:
			rc = parse_count("--stages", v, &a->stages);
			break;
		case O_DIM:
			rc = cli_parse_dim(v, a->dims, &a->ndims, MAX_LIST);
			break;
		case O_CONST:
			rc = cli_parse_const(v, &a->consts);
			break;
		case O_MESH:
			if (sscanf(v, "%dx%d%c", &a->mesh0, &a->mesh1, &tail) != 2 || a->mesh0 < 1 || a->mesh1 < 1)
				rc = ir_errorf(-EINVAL, "--mesh %s: expected N0xN1 with positive sizes, e.g. 2x8", v);
			break;
		case CLI_OPT_STEP:
			rc = cli_train_option(opt, v, &a->topts, a->pats, MAX_LIST);
			a->train_opt = a->train_opt ? a->train_opt : opt;
			a->precision |= !strcmp(opt, "precision");
			break;
		default:
			return ir_getopt_error(c, argv);
		}
		if (rc < 0)
			return -EINVAL;
	}
	if (optind == argc)
		return ir_errorf(-EINVAL, "report: no model given");
	if (optind + 1 < argc)
		return ir_errorf(-EINVAL, "report: unexpected argument '%s'", argv[optind + 1]);
	a->model = argv[optind];
	return 0;
}

/* The checks that need no model: what is required, what goes together,
 * whether every output file can be written. */
static int check(const struct ropts *a)
{
	if (!a->cluster)
		return ir_errorf(-EINVAL, "report: --cluster is required (with --plan P for a manual plan, without "
					  "it for the automatic one)");
	if (a->cmp[0] && a->plan)
		return ir_errorf(-EINVAL, "report: --compare A B names both plans; leave --plan out");
	if (a->sweep_spec && (a->cmp[0] || a->cluster2))
		return ir_errorf(-EINVAL, "report: --sweep reports one plan; leave --compare out");
	if (a->csv && !a->sweep_spec)
		return ir_errorf(-EINVAL, "report: --csv %s writes a sweep: give --sweep too", a->csv);
	const struct {
		const char *opt, *path;
	} out[] = { { "--trace", a->trace },
		    { "--csv", a->csv },
		    { "--svg", a->svg },
		    { "--png", a->png },
		    { "--html", a->html } };
	for (size_t i = 0; i < sizeof out / sizeof *out; i++)
		if (out[i].path && wi_check_writable(out[i].opt, out[i].path) < 0)
			return -EINVAL;
	return 0;
}

/* The request for plan spec s ("auto", or a manual plan) under a's options. */
static int request(const struct ropts *a, const char *spec, const struct onnx_import_opts *imp,
		   const struct cost_calib *cal, struct wi_request *q)
{
	wi_request_init(q);
	q->model = a->model;
	q->imp = imp;
	q->cal = cal;
	q->batch = a->batch;
	q->price = a->price;
	q->manual = spec && strcmp(spec, "auto");
	snprintf(q->label, sizeof q->label, "%s", spec ? spec : "auto");
	if (q->manual) {
		int rc = report_plan_parse(spec, &q->plan);
		if (rc == 0 && a->precision && q->plan.prec < 0)
			q->plan.prec = a->topts.compute == IR_BF16  ? COST_PREC_BF16
				       : a->topts.compute == IR_F16 ? COST_PREC_F16
				       : a->topts.compute == IR_F64 ? COST_PREC_F64
								    : COST_PREC_F32;
		return rc;
	}
	if (a->train_opt && !a->train)
		return ir_errorf(-EINVAL, "--%s is an option of the train step: give --train too", a->train_opt);
	struct inter_opts *o = &q->inter;
	o->train = a->train;
	o->micro = a->micro;
	o->layers = a->layers;
	o->stages = a->stages;
	o->mesh0 = a->mesh0;
	o->mesh1 = a->mesh1;
	o->mem_limit = a->mem_limit;
	/* the cost model knows Nesterov's state as momentum's (as `pcc MODEL`) */
	if (a->optim && cost_optim_parse(strcmp(a->optim, "nesterov") ? a->optim : "momentum", &o->optim) < 0)
		return -EINVAL;
	if (a->train && a->precision)
		q->prec = a->topts.compute == IR_BF16  ? COST_PREC_BF16
			  : a->topts.compute == IR_F16 ? COST_PREC_F16
			  : a->topts.compute == IR_F64 ? COST_PREC_F64
						       : COST_PREC_F32;
	return 0;
}

/* --trace, --svg, --png, --html for n what-ifs (1, or 2 compared). */
static int extras(const struct ropts *a, const struct whatif *const *w, int n, const struct wi_sweep_result *sw)
{
	int rc = 0;
	if (a->trace && w)
		rc = wi_trace_write(w, n, a->trace);
	if (rc == 0 && a->svg)
		rc = wi_chart_write(w, n, sw, a->svg, false);
	if (rc == 0 && a->png)
		rc = wi_chart_write(w, n, sw, a->png, true);
	if (rc == 0 && a->html)
		rc = wi_html_write(w, n, sw, a->html);
	return rc;
}

static int single(const struct ropts *a, const struct wi_request *q, const struct cost_cluster *c)
{
	struct whatif w;
	int rc = wi_eval(q, c, &w);
	if (rc < 0)
		return rc;
	if (a->json) {
		json_t *o = wi_json(&w);
		rc = wi_json_write(o, NULL);
		json_decref(o);
	} else {
		rc = wi_print(&w, stdout);
		if (rc == 0 && a->explain)
			rc = wi_explain(&w, stdout);
	}
	const struct whatif *one = &w;
	if (rc == 0)
		rc = extras(a, &one, 1, NULL);
	wi_free(&w);
	return rc;
}

/* --compare A B and/or --compare-cluster C2. A compared manual plan is a
 * training step, so an automatic one beside it plans training too. */
static int compare(const struct ropts *a, const struct wi_request *base, const struct onnx_import_opts *imp,
		   const struct cost_calib *cal, const struct cost_cluster *c1)
{
	struct wi_request q[2];
	struct cost_cluster c2;
	struct whatif w[2] = { 0 };
	const char *spec[2] = { a->cmp[0] ? a->cmp[0] : base->label, a->cmp[1] ? a->cmp[1] : base->label };
	int rc = 0;
	if (a->cluster2 && (rc = cost_cluster_parse(a->cluster2, &c2)) < 0)
		return rc;
	for (int i = 0; i < 2 && rc == 0; i++)
		rc = request(a, spec[i], imp, cal, &q[i]);
	bool any_manual = rc == 0 && (q[0].manual || q[1].manual);
	for (int i = 0; i < 2 && rc == 0; i++) {
		q[i].inter.train |= any_manual;
		rc = wi_eval(&q[i], i == 1 && a->cluster2 ? &c2 : c1, &w[i]);
		/* manual beside automatic without --batch: B takes A's batch */
		if (rc == 0 && i == 0 && !a->batch && q[0].manual != q[1].manual)
			q[1].batch = w[0].batch;
	}
	if (rc == 0 && a->json) {
		json_t *o = wi_compare_json(&w[0], &w[1]);
		rc = wi_json_write(o, NULL);
		json_decref(o);
	} else if (rc == 0) {
		rc = wi_compare_print(&w[0], &w[1], stdout);
	}
	const struct whatif *two[2] = { &w[0], &w[1] };
	if (rc == 0)
		rc = extras(a, two, 2, NULL);
	wi_free(&w[0]);
	wi_free(&w[1]);
	return rc;
}

static int sweep(const struct ropts *a, const struct wi_request *q, const struct cost_cluster *c)
{
	struct wi_sweep_result r;
	int rc = wi_sweep_run(&a->sweep, q, c, &r);
	if (rc < 0)
		return rc;
	if (a->json) {
		json_t *o = wi_sweep_json(&r);
		rc = wi_json_write(o, NULL);
		json_decref(o);
	} else {
		rc = wi_sweep_print(&r, stdout);
	}
	if (rc == 0 && a->csv)
		rc = wi_sweep_csv(&r, a->csv);
	/* the trace and the page show the cluster as given, else the best point */
	int k = r.base >= 0 && r.pt[r.base].ok ? r.base : r.best;
	const struct whatif *one = k >= 0 ? &r.pt[k].w : NULL;
	if (rc == 0 && a->trace && !one)
		rc = ir_errorf(-EINVAL, "--trace %s: no point of the sweep fits to trace", a->trace);
	if (rc == 0)
		rc = extras(a, one ? &one : NULL, one ? 1 : 0, &r);
	wi_sweep_free(&r);
	return rc;
}

static int run(struct ropts *a)
{
	struct onnx_import_opts imp;
	struct cost_cluster c;
	struct cost_calib cal;
	struct wi_request q;
	int rc = check(a);
	if (rc < 0 || (rc = cli_consts_load(&a->consts, a->model)) < 0)
		return rc;
	onnx_import_opts_init(&imp);
	imp.dims = a->dims;
	imp.ndims = a->ndims;
	cli_consts_use(&a->consts, &imp);
	if ((rc = cost_cluster_parse(a->cluster, &c)) < 0)
		return rc;
	if (c.cpu) /* what the planner uses on a CPU mesh (intra.c) */
		cost_calib_host(&cal);
	else
		cost_calib_init(&cal);
	if (a->calib && (rc = cost_calib_load(a->calib, &cal)) < 0)
		return rc;
	if ((rc = request(a, a->cmp[0] ? a->cmp[0] : a->plan, &imp, &cal, &q)) < 0)
		return rc;
	if (a->cmp[0] || a->cluster2)
		return compare(a, &q, &imp, &cal, &c);
	if (a->sweep_spec)
		return sweep(a, &q, &c);
	return single(a, &q, &c);
}

int report_cli(int argc, char **argv)
{
	struct ropts a;
	int rc = parse(argc, argv, &a), status = 0;
	if (rc == 1) {
		status = cli_help(&report_cli_usage);
	} else if (rc < 0) {
		status = cli_fail(2, "report");
	} else {
		progress_init(a.quiet);
		rc = run(&a);
		progress_end();
		if (rc < 0)
			status = cli_fail(1, "report");
	}
	for (int i = 0; i < a.ndims; i++)
		free((char *)a.dims[i].name);
	cli_consts_free(&a.consts);
	return status;
}
