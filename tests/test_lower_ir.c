/*
 * test_lower_ir.c: SPMD lowering from IR text alone, the annotated IR
 * being the contract between planning and lowering.
 *
 * Each tests/lower/NAME.ir (the directory is argv[1]) is a graph annotated
 * with shardings as the intra-op pass leaves one (its mesh, every value's
 * sharding, the sharding each node reads its operands in); no pass runs
 * on it. Lowering it must print (lower_print: each stage's program as its
 * first device runs it, before fusion and the memory plan) exactly
 * NAME.lower.txt, and the whole plan, fused and memory-planned, must
 * verify and compute on the rank simulator what the reference
 * interpreter computes from the graph on one device. A pipelined case
 * gives each stage's annotated graph as NAME.stage0.ir, NAME.stage1.ir,
 * ... next to the whole model's NAME.ir (unannotated): a stage's values
 * stand for the model's values of the same name, and the stages take
 * consecutive ranks. A training case gives the annotated training step
 * as NAME.step.ir next to the forward model NAME.ir: autodiff of NAME.ir
 * (SGD, one micro-batch) says which values are parameters, gradients and
 * state, NAME.step.ir (the same nodes in the same order) how they are
 * sharded, and the plan's step must compute the loss, gradient norm and
 * new parameters the interpreter computes from the step graph. Pipelined
 * (NAME.ir's nodes tagged with their stage, each stage's schedule given),
 * each stage's part of the step is annotated in NAME.stageK.step.ir. Bad annotations are refused
 * in one line.
 *
 * After a deliberate change to lowering, rewrite the expected files and
 * review their diff:
 *   build/tests/test_lower_ir tests/lower --regen
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/lower/lower.h"
#include "tests/plan_sim.h"
#include "tests/rng.h"
#include "tests/tap.h"

#define MAX_STAGES 4

static const char *dir;
static bool regen;

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (s = malloc((size_t)n + 1)) && fread(s, 1, (size_t)n, f) == (size_t)n)
		s[n] = '\0';
	else
		free(s), s = NULL;
	fclose(f);
	return s;
}

static struct ir_graph *parse_file(const char *path)
{
	char *text = read_file(path);
	struct ir_graph *g = text ? ir_parse(text) : NULL;
	if (!text)
		TAP_DIAG("cannot read %s", path);
	else if (!g)
		TAP_DIAG("%s: %s", path, ir_error());
	free(text);
	return g;
}

/* got against NAME.lower.txt, or written there with --regen. */
static void check_text(const char *name, const char *got)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.lower.txt", dir, name);
	if (regen) {
		FILE *f = fopen(path, "w");
		TAP_OK(f && fputs(got, f) >= 0 && fclose(f) == 0, "%s: wrote %s", name, path);
		return;
	}
	char *want = read_file(path);
	if (!TAP_OK(want && !strcmp(want, got), "%s: its lowering prints as %s.lower.txt", name, name)) {
		if (want)
			tap_diff(want, got);
		else
			TAP_DIAG("cannot read %s", path);
	}
	free(want);
}

/* Per value id of stage graph s: the value of the whole graph w with the
 * same name, or -1. */
static int *match_by_name(const struct ir_graph *s, const struct ir_graph *w)
{
	int ns = ir_graph_nvalues(s), nw = ir_graph_nvalues(w);
	int *src = malloc(sizeof *src * (size_t)(ns + 1));
	for (int v = 0; src && v < ns; v++) {
		const char *name = ir_graph_value(s, v)->name;
		src[v] = -1;
		for (int u = 0; name && u < nw && src[v] < 0; u++)
			if (ir_graph_value(w, u)->name && !strcmp(ir_graph_value(w, u)->name, name))
				src[v] = u;
	}
	return src;
}

/* Random inputs of the whole graph (class labels within their classes),
 * its parameters' bytes, and the interpreter's outputs. */
struct reference {
	int nin, nparams, nout;
	struct ir_tensor *in, *params, *out;
};

static void reference_free(struct reference *r)
{
	for (int i = 0; i < r->nin; i++)
		ir_tensor_free(&r->in[i]);
	for (int i = 0; i < r->nparams; i++)
		ir_tensor_free(&r->params[i]);
	for (int i = 0; i < r->nout; i++)
		ir_tensor_free(&r->out[i]);
	free(r->in);
	free(r->params);
	free(r->out);
}

static int reference_run(const struct ir_graph *g, struct reference *r)
{
	r->nin = ir_graph_ninputs(g);
	r->nparams = ir_graph_nparams(g);
	r->nout = ir_graph_noutputs(g);
	r->in = calloc((size_t)r->nin + 1, sizeof *r->in);
	r->params = calloc((size_t)r->nparams + 1, sizeof *r->params);
	r->out = calloc((size_t)r->nout + 1, sizeof *r->out);
	if (!r->in || !r->params || !r->out)
		return -1;
	for (int i = 0; i < r->nin; i++) {
		const struct ir_value *v = ir_graph_input(g, i);
		if (ir_tensor_alloc(&r->in[i], v->dtype, &v->shape) < 0)
			return -1;
		for (int64_t k = 0; k < ir_shape_numel(&v->shape); k++)
			if (v->classes)
				ir_tensor_set_i64(&r->in[i], k, (int64_t)(urand() * (double)v->classes));
			else
				ir_tensor_set_f64(&r->in[i], k, 2 * urand() - 1);
	}
	for (int i = 0; i < r->nparams; i++)
		if (interp_load_param(ir_graph_param(g, i), &r->params[i]) < 0)
			return -1;
	return interp_run(g, r->in, r->out);
}

static double max_rel_err(const struct ir_tensor *a, const struct ir_tensor *b)
{
	if (!a->data || a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape))
		return INFINITY;
	double worst = 0;
	for (int64_t i = 0; i < ir_shape_numel(&a->shape); i++) {
		double x = ir_tensor_get_f64(a, i), y = ir_tensor_get_f64(b, i);
		double e = fabs(x - y) / fmax(1.0, fabs(y));
		if (!(e <= worst))
			worst = isnan(e) ? INFINITY : e;
	}
	return worst;
}

/* The plan lowered from stages st of whole graph g, run on the rank
 * simulator against the interpreter: the largest relative error of its
 * outputs, or -1. */
static double run_plan(const struct ir_graph *g, const struct lower_stage *st, int ns)
{
	struct reference r = { 0 };
	struct plan *p = NULL;
	double worst = -1;
	if (reference_run(g, &r) < 0) {
		TAP_DIAG("reference: %s", ir_error());
	} else if (lower_plan(g, st, ns, "test", &p) < 0 || plan_verify(p) < 0) {
		TAP_DIAG("lower: %s", ir_error());
	} else {
		struct ir_tensor *outs = calloc((size_t)r.nout + 1, sizeof *outs);
		if (plan_sim_run(p, r.params, r.in, outs) < 0) {
			TAP_DIAG("simulate: %s", ir_error());
		} else {
			worst = 0;
			for (int i = 0; i < r.nout; i++)
				worst = fmax(worst, max_rel_err(&outs[i], &r.out[i]));
		}
		for (int i = 0; i < r.nout; i++)
			ir_tensor_free(&outs[i]);
		free(outs);
	}
	plan_free(p);
	reference_free(&r);
	return worst;
}

/* lower_print of stages st of g, in a malloc'd string; NULL with a
 * message. */
static char *lowered_text(const struct lower_train *tr, const struct ir_graph *g, const struct lower_stage *st, int ns)
{
	struct lowering *lw = NULL;
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	int rc = f ? lower_begin(tr, g, st, ns, "test", &lw) : -1;
	if (rc == 0)
		rc = lower_print(lw, f);
	lower_free(lw);
	if (f)
		fclose(f);
	if (rc < 0) {
		free(s);
		return NULL;
	}
	return s;
}

/* Copies the annotations of a (NAME.step.ir) onto g (the step autodiff
 * built), which must have the same values and nodes in the same order. */
static int annotate_from(struct ir_graph *g, const struct ir_graph *a)
{
	int n0, n1;
	if (ir_graph_ninputs(g) != ir_graph_ninputs(a) || ir_graph_nparams(g) != ir_graph_nparams(a) ||
	    ir_graph_nnodes(g) != ir_graph_nnodes(a)) {
		TAP_DIAG("the annotated step has %d inputs, %d params, %d nodes; autodiff made %d, %d, %d",
			 ir_graph_ninputs(a), ir_graph_nparams(a), ir_graph_nnodes(a), ir_graph_ninputs(g),
			 ir_graph_nparams(g), ir_graph_nnodes(g));
		return -1;
	}
	ir_graph_mesh(a, &n0, &n1);
	ir_graph_set_mesh(g, n0, n1);
	for (int i = 0; i < ir_graph_ninputs(g) + ir_graph_nparams(g); i++) {
		bool in = i < ir_graph_ninputs(g);
		struct ir_value *v = in ? ir_graph_input(g, i) : ir_graph_param(g, i - ir_graph_ninputs(g));
		const struct ir_value *w = in ? ir_graph_input(a, i) : ir_graph_param(a, i - ir_graph_ninputs(a));
		v->sharded = w->sharded;
		v->sharding = w->sharding;
	}
	for (int i = 0; i < ir_graph_nnodes(g); i++) {
		struct ir_node *n = ir_graph_node(g, i);
		const struct ir_node *m = ir_graph_node(a, i);
		if (n->op != m->op || n->nin != m->nin || !ir_shape_eq(&n->out[0]->shape, &m->out[0]->shape)) {
			TAP_DIAG("node %d is %s in the annotated step, %s from autodiff", i, ir_op_name(m->op),
				 ir_op_name(n->op));
			return -1;
		}
		for (int k = 0; k < n->nout; k++) {
			n->out[k]->sharded = m->out[k]->sharded;
			n->out[k]->sharding = m->out[k]->sharding;
		}
		if (m->in_sharding && ir_node_set_in_sharding(g, n, m->in_sharding) < 0)
			return -1;
	}
	return 0;
}

/* One step of the training plan tr lowers to (stages st), on the rank
 * simulator, against the interpreter running the step graph: the largest
 * relative error of the loss, the gradient norm and the new parameters,
 * or -1. */
static double run_step(const struct lower_train *tr, const struct lower_stage *st, int ns)
{
	const struct train_step *ts = tr->ts;
	struct reference r = { 0 };
	struct plan *p = NULL;
	struct plan_sim *sim = NULL;
	int np = ir_graph_nparams(ts->g);
	struct ir_tensor out[2] = { 0 }, *got = calloc((size_t)np + 1, sizeof *got);
	double worst = -1;
	if (reference_run(ts->g, &r) < 0) { /* random data; the state starts below */
		TAP_DIAG("reference: %s", ir_error());
		goto out;
	}
	for (int j = 0; j < ts->nstate; j++) {
		struct ir_tensor *x = &r.in[ts->ndata + j];
		for (int64_t k = 0; k < ir_shape_numel(&x->shape); k++)
			ir_tensor_set_f64(x, k, tr->state_init[j]);
	}
	for (int i = 0; i < r.nout; i++)
		ir_tensor_free(&r.out[i]);
	if (interp_run(ts->g, r.in, r.out) < 0) {
		TAP_DIAG("reference: %s", ir_error());
		goto out;
	}
	if (lower_train(tr, st, ns, "test", &p) < 0 || plan_verify(p) < 0) {
		TAP_DIAG("lower: %s", ir_error());
		goto out;
	}
	if (!(sim = plan_sim_new(p, r.params)) || plan_sim_step(sim, r.in, out) < 0 || plan_sim_params(sim, got) < 0) {
		TAP_DIAG("simulate: %s", ir_error());
		goto out;
	}
	worst = fmax(max_rel_err(&out[0], &r.out[0]), max_rel_err(&out[1], &r.out[1]));
	for (int i = 0; i < np; i++) /* the step's output of each new parameter bears its name */
		for (int o = 0; o < r.nout; o++)
			if (!strcmp(ir_graph_output_name(ts->g, o), ir_graph_param(ts->g, i)->name))
				worst = fmax(worst, max_rel_err(&got[i], &r.out[o]));
out:
	plan_sim_free(sim);
	plan_free(p);
	for (int i = 0; i < np; i++)
		ir_tensor_free(&got[i]);
	for (int i = 0; i < 2; i++)
		ir_tensor_free(&out[i]);
	free(got);
	reference_free(&r);
	return worst;
}

static bool readable(const char *path)
{
	return access(path, R_OK) == 0;
}

/* Training case NAME: g (NAME.ir, taken over) trained with SGD, one
 * micro-batch; its step annotated from NAME.step.ir, or, pipelined (g's
 * nodes tagged with their stage, its stages' schedules given), each
 * stage's part (the nodes of its tag and of tag all, graph_extract_set)
 * from NAME.stageK.step.ir, the stages on consecutive ranks. */
static void test_train(const char *name, struct ir_graph *g)
{
	char path[4096];
	struct train_opts o;
	struct train_step ts;
	struct ir_graph *a[MAX_STAGES] = { NULL }, *sg[MAX_STAGES] = { NULL };
	int *src[MAX_STAGES] = { NULL }, ns = 0, rank = 0;
	struct lower_stage st[MAX_STAGES];
	double *start = NULL;
	memset(&ts, 0, sizeof ts);
	train_opts_init(&o);
	o.optim = TRAIN_SGD;
	int rc = train_build(g, &o, &ts);
	if (!TAP_OK(rc == 0, "%s: autodiff builds its train step", name)) {
		TAP_DIAG("%s", ir_error());
		goto out;
	}
	for (; ns < MAX_STAGES; ns++) {
		snprintf(path, sizeof path, "%s/%s.stage%d.step.ir", dir, name, ns);
		if (!readable(path))
			break;
	}
	for (int s = 0; s < (ns ? ns : 1); s++) {
		bool *keep = calloc((size_t)ir_graph_nnodes(ts.g) + 1, sizeof *keep);
		for (int i = 0; keep && ns && i < ir_graph_nnodes(ts.g); i++)
			keep[i] = ir_graph_node(ts.g, i)->tag == s || ir_graph_node(ts.g, i)->tag == IR_TAG_ALL;
		sg[s] = !ns ? ts.g : keep ? graph_extract_set(ts.g, keep, &src[s]) : NULL;
		free(keep);
		if (ns)
			snprintf(path, sizeof path, "%s/%s.stage%d.step.ir", dir, name, s);
		else
			snprintf(path, sizeof path, "%s/%s.step.ir", dir, name);
		a[s] = parse_file(path);
		if (!TAP_OK(sg[s] && a[s] && annotate_from(sg[s], a[s]) == 0 && ir_verify(sg[s]) == 0,
			    "%s: the step%s, annotated from %s, verifies", name, ns ? "'s stage" : "",
			    strrchr(path, '/') + 1)) {
			TAP_DIAG("%s", ir_error());
			goto out;
		}
		int n0, n1;
		ir_graph_mesh(sg[s], &n0, &n1);
		st[s] = (struct lower_stage){ sg[s], rank, 1, n0 * n1, src[s] };
		rank += n0 * n1;
	}
	start = calloc((size_t)ts.nstate + 1, sizeof *start);
	train_state_start(&ts, &o, start);
	struct lower_train tr = { &ts, 1, start, "test" };
	char *got = lowered_text(&tr, ts.g, st, ns ? ns : 1);
	if (TAP_OK(got, "%s: lowers from its annotations", name))
		check_text(name, got);
	else
		TAP_DIAG("%s", ir_error());
	free(got);
	double e = run_step(&tr, st, ns ? ns : 1);
	TAP_OK(e >= 0 && e < 1e-5,
	       "%s: one step of the plan computes the interpreter's loss, gradient norm and new parameters (max rel "
	       "err %.2g)",
	       name, e);
out:
	free(start);
	for (int s = 0; s < MAX_STAGES; s++) {
		if (sg[s] != ts.g)
			ir_graph_free(sg[s]);
		ir_free(src[s]);
		ir_graph_free(a[s]);
	}
	train_step_free(&ts);
}

/* Case NAME: NAME.ir, its stages' graphs if any, NAME.lower.txt. */
static void test_case(const char *name)
{
	char path[4096];
	struct ir_graph *stage_g[MAX_STAGES] = { NULL };
	int *src[MAX_STAGES] = { NULL };
	struct lower_stage st[MAX_STAGES];
	int ns = 0, rank = 0;
	snprintf(path, sizeof path, "%s/%s.ir", dir, name);
	struct ir_graph *g = parse_file(path);
	if (!TAP_OK(g && ir_verify(g) == 0, "%s.ir parses and verifies", name))
		goto out;
	char step0[4096];
	snprintf(path, sizeof path, "%s/%s.step.ir", dir, name);
	snprintf(step0, sizeof step0, "%s/%s.stage0.step.ir", dir, name);
	if (readable(path) || readable(step0)) {
		test_train(name, g); /* takes g over */
		return;
	}
	for (;; ns++) {
		snprintf(path, sizeof path, "%s/%s.stage%d.ir", dir, name, ns);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		fclose(f);
		if (!TAP_OK(ns < MAX_STAGES && (stage_g[ns] = parse_file(path)) && ir_verify(stage_g[ns]) == 0,
			    "%s.stage%d.ir parses and verifies", name, ns))
			goto out;
		src[ns] = match_by_name(stage_g[ns], g);
	}
	if (!ns)
		stage_g[ns++] = g;
	for (int s = 0; s < ns; s++) {
		int n0, n1;
		ir_graph_mesh(stage_g[s], &n0, &n1);
		st[s] = (struct lower_stage){ stage_g[s], rank, 1, n0 * n1, src[s] };
		rank += n0 * n1;
	}
	char *got = lowered_text(NULL, g, st, ns);
	if (!TAP_OK(got, "%s: lowers from its annotations", name)) {
		TAP_DIAG("%s", ir_error());
		goto out;
	}
	check_text(name, got);
	free(got);
	double e = run_plan(g, st, ns);
	TAP_OK(e >= 0 && e < 1e-5,
	       "%s: the plan verifies and computes the interpreter's outputs on one device (max rel err %.2g)", name,
	       e);
out:
	for (int s = 0; s < MAX_STAGES; s++) {
		if (stage_g[s] != g)
			ir_graph_free(stage_g[s]);
		free(src[s]);
	}
	ir_graph_free(g);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_files(void)
{
	DIR *d = opendir(dir);
	char *names[256];
	int n = 0;
	struct dirent *e;
	if (!TAP_OK(d, "%s opens", dir))
		return;
	while ((e = readdir(d)) && n < 256) {
		size_t len = strlen(e->d_name);
		if (len > 3 && !strcmp(e->d_name + len - 3, ".ir") && !strstr(e->d_name, ".stage") &&
		    !strstr(e->d_name, ".step"))
			names[n++] = strndup(e->d_name, len - 3);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, by_name);
	TAP_OK(n >= 8, "%s holds %d cases", dir, n);
	for (int i = 0; i < n; i++) {
		test_case(names[i]);
		free(names[i]);
	}
}

/* Graphs lowering must refuse, and the one line it says. */
static void test_refused(void)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "pcc-ir 1\ninput %0 \"x\" : f32[4]\n%1 : f32[4] = neg %0\noutput %1\n",
		  "stage 0: the graph has no mesh; lowering reads the shardings the intra-op pass annotates it with" },
		{ "pcc-ir 1\nmesh 1x2\ninput %0 \"x\" : f32[4] <S1>\n%1 : f32[4] <S1> = neg %0\noutput %1\n",
		  "stage 0: node 0 \"\" (neg) has no operand shardings" },
		{ "pcc-ir 1\nmesh 1x2\ninput %0 \"x\" : f32[4]\n%1 : f32[4] <S1> = neg %0 <S1>\noutput %1\n",
		  "stage 0: value 0 \"x\" has no sharding" },
		{ "pcc-ir 1\nmesh 1x2\ninput %0 \"x\" : f32[4,8] <R,R>\ninput %1 \"w\" : f32[8,6] <R,R>\n"
		  "%2 : f32[4,6] <R,R> = dot %0 <R,S1>, %1 <R,R> lhs_batch=[] rhs_batch=[] lhs_contract=[1] "
		  "rhs_contract=[0] @\"mm\"\noutput %2\n",
		  "node 0 \"mm\" (dot): operands <R,S1>, <R,R> to result <R,R> is no sharding its op allows" },
		{ "pcc-ir 1\nmesh 1x2\ninput %0 \"x\" : f32[4,8] <R,S1>\n%1 : f32[4] <R> = reduce_sum %0 <R,S1> "
		  "axes=[1]\noutput %1\n",
		  "node 0 \"\" (reduce_sum): operands <R,S1> to result <R> is no sharding its op allows" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct ir_graph *g = ir_parse(bad[i].text);
		int n0 = 0, n1 = 0;
		if (g)
			ir_graph_mesh(g, &n0, &n1);
		struct lower_stage st = { g, 0, 1, n0 * n1, NULL };
		char *got = g ? lowered_text(NULL, g, &st, 1) : NULL;
		const char *msg = g ? ir_error() : "";
		if (!TAP_OK(g && !got && !strcmp(msg, bad[i].msg), "refused: %s", bad[i].msg))
			TAP_DIAG("got: %s", got ? "(lowered)" : g ? msg : ir_error());
		free(got);
		ir_graph_free(g);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || (argc == 3 && strcmp(argv[2], "--regen")) || argc > 3) {
		fprintf(stderr, "usage: test_lower_ir DIR [--regen]\n");
		return 2;
	}
	dir = argv[1];
	regen = argc == 3;
	test_files();
	test_refused();
	return tap_done();
}
