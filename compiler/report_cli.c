/*
 * report_cli.c: the `pcc report` command line.
 *
 *   pcc report MODEL --cluster C --plan dp=D,tp=T,pp=P[,...]   a manual plan
 *   pcc report MODEL --cluster C [--train [STEP OPTIONS]] ...    the automatic plan
 *   pcc report MODEL --cluster C --compare A B [--compare-cluster C2]
 *   pcc report MODEL --cluster C [--plan P] --compare-cluster C2
 *   ... [--sweep gpus=8..1024 | --sweep tp,pp | --sweep sensitivity] [--csv FILE]
 *   ... [--trace FILE.json] [--svg FILE] [--png FILE] [--html FILE] [--json]
 *       [--price-per-gpu-hour X] [--batch B] [--calib FILE] [--dim N=V]... [--const NAME=FILE|DIR]...
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

#include "compiler/cli.h"
#include "compiler/progress.h"
#include "compiler/report_internal.h"

#define MAX_LIST 64

struct ropts {
	const char *model, *cluster, *cluster2, *plan, *calib, *optim;
	const char *cmp[2];
	const char *trace, *csv, *svg, *png, *html, *sweep_spec;
	struct wi_sweep sweep;
	long long batch;
	bool json, explain, train, precision, help;
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

void report_cli_usage(FILE *f)
{
	fprintf(f,
		"       pcc report MODEL --cluster C --plan dp=D,tp=T,pp=P[,mb=M][,schedule=S][,zero=Z]\n"
		"                  [,recompute=0|1][,optim=O][,precision=P] [--batch B] [--calib FILE] [--json] [--explain]\n"
		"       pcc report MODEL --cluster C [--batch B] [--train [--optim O] [STEP OPTIONS]] [--micro-batches M]\n"
		"                  [--layers L] [--stages P] [--mesh N0xN1] [--memory-limit SIZE]   (the automatic plan)\n"
		"                  [--compare A B] [--compare-cluster C2]   (A, B: auto or dp=..,tp=..,pp=..)\n"
		"                  [--sweep gpus=LO..HI | --sweep tp,pp | --sweep sensitivity] [--csv FILE]\n"
		"                  [--trace FILE.json] [--svg FILE] [--png FILE] [--html FILE]\n"
		"                  [--price-per-gpu-hour X] [--dim NAME=VALUE]... [--const NAME=FILE|DIR]... [--json]\n");
}

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

/* Options with a value; 1 when s was one, 0 when not, or an error. */
static int option_with_value(struct ropts *a, const char *s, const char *v)
{
	const struct {
		const char *name;
		const char **dst;
	} strs[] = { { "--cluster", &a->cluster }, { "--plan", &a->plan },      { "--calib", &a->calib },
		     { "--trace", &a->trace },     { "--csv", &a->csv },        { "--svg", &a->svg },
		     { "--png", &a->png },         { "--html", &a->html },      { "--compare-cluster", &a->cluster2 },
		     { "--optim", &a->optim },     { "--optimizer", &a->optim } };
	for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
		if (!strcmp(s, strs[i].name)) {
			*strs[i].dst = v;
			return 1;
		}
	char *end;
	if (!strcmp(s, "--batch")) {
		a->batch = strtoll(v, &end, 10);
		return *end || end == v || a->batch <= 0
			       ? ir_errorf(-EINVAL, "--batch %s: expected a positive integer", v)
			       : 1;
	}
	if (!strcmp(s, "--sweep")) {
		a->sweep_spec = v;
		return wi_sweep_parse(v, &a->sweep) < 0 ? -EINVAL : 1;
	}
	if (!strcmp(s, "--price-per-gpu-hour"))
		return parse_double(s, v, &a->price) < 0 ? -EINVAL : 1;
	if (!strcmp(s, "--memory-limit"))
		return parse_size(s, v, &a->mem_limit) < 0 ? -EINVAL : 1;
	if (!strcmp(s, "--micro-batches"))
		return parse_count(s, v, &a->micro) < 0 ? -EINVAL : 1;
	if (!strcmp(s, "--layers"))
		return parse_count(s, v, &a->layers) < 0 ? -EINVAL : 1;
	if (!strcmp(s, "--stages"))
		return parse_count(s, v, &a->stages) < 0 ? -EINVAL : 1;
	if (!strcmp(s, "--dim"))
		return cli_parse_dim(v, a->dims, &a->ndims, MAX_LIST) < 0 ? -EINVAL : 1;
	if (!strcmp(s, "--const"))
		return cli_parse_const(v, &a->consts) < 0 ? -EINVAL : 1;
	if (!strcmp(s, "--mesh")) {
		char tail;
		if (sscanf(v, "%dx%d%c", &a->mesh0, &a->mesh1, &tail) != 2 || a->mesh0 < 1 || a->mesh1 < 1)
			return ir_errorf(-EINVAL, "--mesh %s: expected N0xN1 with positive sizes, e.g. 2x8", v);
		return 1;
	}
	int rc = cli_train_option(s, v, &a->topts, a->pats, MAX_LIST);
	if (rc > 0) {
		a->train_opt = a->train_opt ? a->train_opt : s;
		a->precision |= !strcmp(s, "--precision");
	}
	return rc;
}

static int parse(int argc, char **argv, struct ropts *a)
{
	memset(a, 0, sizeof *a);
	train_opts_init(&a->topts);
	for (int i = 2; i < argc; i++) {
		const char *s = argv[i];
		int rc;
		if (!strcmp(s, "--json") || !strcmp(s, "--explain") || !strcmp(s, "--train")) {
			*(s[2] == 'j' ? &a->json : s[2] == 'e' ? &a->explain : &a->train) = true;
		} else if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
			a->help = true;
		} else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
			a->quiet = true;
		} else if (!strcmp(s, "--compare")) {
			if (i + 2 >= argc)
				return ir_errorf(-EINVAL,
						 "--compare expects two plans, A and B (auto or dp=..,tp=..,pp=..)");
			a->cmp[0] = argv[++i];
			a->cmp[1] = argv[++i];
		} else if (!strncmp(s, "--dim=", 6)) {
			if (cli_parse_dim(s + 6, a->dims, &a->ndims, MAX_LIST) < 0)
				return -EINVAL;
		} else if (!strncmp(s, "--const=", 8)) {
			if (cli_parse_const(s + 8, &a->consts) < 0)
				return -EINVAL;
		} else if (i + 1 < argc && (rc = option_with_value(a, s, argv[i + 1])) != 0) {
			if (rc < 0)
				return rc;
			i++;
		} else if (s[0] == '-') {
			return ir_errorf(-EINVAL, "report: unknown or incomplete option '%s'", s);
		} else if (!a->model) {
			a->model = s;
		} else {
			return ir_errorf(-EINVAL, "report: unexpected argument '%s'", s);
		}
	}
	return 0;
}

/* The checks that need no model: what is required, what goes together,
 * whether every output file can be written. */
static int check(const struct ropts *a)
{
	if (!a->model)
		return ir_errorf(-EINVAL, "report: no model given");
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
		return ir_errorf(-EINVAL, "%s is an option of the train step: give --train too", a->train_opt);
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

/* A manual plan alone: the report as before, the extras from its what-if. */
static int manual(const struct ropts *a, const struct wi_request *q, const struct cost_cluster *c)
{
	struct report r;
	struct whatif w;
	int rc = report_evaluate(q->model, q->imp, q->batch, c, &q->plan, q->cal, &r);
	if (rc < 0)
		return rc;
	if ((rc = wi_from_report(&r, q->label, q->price, &w)) < 0) {
		report_free(&r);
		return rc;
	}
	if (a->json) {
		json_t *o = report_json(&r);
		if (q->price > 0) {
			json_object_set_new(o, "price_per_gpu_hour", json_real(w.price));
			json_object_set_new(o, "cost_per_step", json_real(w.cost_per_step));
			json_object_set_new(o, "cost_per_million_tokens",
					    w.tokens_per_sample > 0 ? json_real(w.cost_per_mtokens) : json_null());
			json_object_set_new(o, "cost_per_million_samples", json_real(w.cost_per_msamples));
		}
		rc = wi_json_write(o, NULL);
		json_decref(o);
	} else {
		rc = report_print(&r, false, stdout);
		if (rc == 0 && q->price > 0)
			printf("price     %.4g per GPU-hour: %.4g per step, %.4g per million %s\n", w.price,
			       w.cost_per_step, w.tokens_per_sample > 0 ? w.cost_per_mtokens : w.cost_per_msamples,
			       w.tokens_per_sample > 0 ? "tokens" : "samples");
		if (rc == 0 && a->explain)
			rc = report_explain(&r, stdout);
	}
	const struct whatif *one = &w;
	if (rc == 0)
		rc = extras(a, &one, 1, NULL);
	wi_free(&w);
	report_free(&r);
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
	return q.manual ? manual(a, &q, &c) : single(a, &q, &c);
}

int report_cli(int argc, char **argv)
{
	struct ropts a;
	int rc = parse(argc, argv, &a), status = 0;
	if (rc == 0 && a.help) {
		fprintf(stdout, "usage:\n");
		report_cli_usage(stdout);
	} else if (rc < 0) {
		fprintf(stderr, "pcc: %s\n", ir_error());
		status = 2;
	} else {
		progress_init(a.quiet);
		rc = run(&a);
		progress_end();
		if (rc < 0) {
			fprintf(stderr, "pcc: %s\n", ir_error());
			status = 1;
		}
	}
	for (int i = 0; i < a.ndims; i++)
		free((char *)a.dims[i].name);
	cli_consts_free(&a.consts);
	return status;
}
