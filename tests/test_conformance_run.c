/*
 * test_conformance_run.c: the ONNX backend node tests (libonnx-testdata
 * and tests/onnx_node_18_21)
 * through the whole generated-kernel path, as `pcc MODEL --cluster cpu:1
 * -o plan.bin` and `pcc-run plan.bin -i DIR` take them: the automatic
 * plan, lowering, fusion, host code through LLVM, plan.bin written and read
 * back, then the runtime (parameters from the model, generated kernels,
 * its own conv, dot, window and pad kernels) on every data set.
 *
 * In scope are the tests test_conformance passes (import and the
 * reference interpreter, imported the same way: inputs that decide shapes
 * bound as constants). Each is one TAP case: ok when every output of
 * every data set matches the test's expected output within
 * test_conformance's tolerance (rtol 1e-3, atol 1e-7); not ok names the
 * stage that failed or the first wrong element, and whether the plan's
 * reference kernels (pcc-run --reference) pass the same data. The others
 * are skips saying why they are out of scope. An ok line also names the
 * inputs bound as constants (on the command line: pcc --const
 * NAME=test_data_set_0, the plan then reading the other inputs' files of
 * each set), and says when pcc-run -i could not read data set 0 as it
 * stands (its reader, rt_data_open, is tried on it).
 *
 * The tests are many and small, so all of it runs in this process rather
 * than through pcc and mpirun (about 1 s of process start-up, MPI and the
 * host's measurement per test; here 0.1 s, nearly all of it LLVM, so the
 * whole run takes about a minute on 2 cores): each test in a child
 * process (a crash or a hang is that test's failure, not the run's), the
 * plan run by the runtime's own code (rt.h) on one rank whose
 * communication table has no peers. All of the tests, not a subset: one op's tests differ in dtypes,
 * axes and broadcasts, which is what code generation varies on.
 *
 * --special (exploring, not run by meson): also data set 0 with special
 * float values, generated kernels against the reference kernels.
 * --host-cpu: another LLVM CPU than pcc's default (x86-64-v4: AVX-512).
 *
 * argv: [--only NAME] [--host-cpu CPU] [--special] [node tests dir]...; tests
 * of every directory after the first are named DIRNAME/TEST.
 */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/codegen/codegen.h"
#include "compiler/pipeline/pipeline.h"
#include "compiler/search/search.h"
#include "runtime/rt.h"
#include "tests/conformance.h"
#include "tests/harness.h"
#include "tests/tap.h"

#define RTOL 1e-3
#define ATOL 1e-7
#define TEST_SECONDS 120

/* ---- one rank, no peers: a cpu:1 plan has no messages */

static int no_peer(void)
{
	return ir_errorf(-EINVAL, "a one-rank run has no peer to talk to");
}
static int self_setup(struct rt_comm *c, const struct plan *p)
{
	(void)c;
	(void)p;
	return 0;
}
static int self_send(struct rt_comm *c, const void *b, size_t n, int peer, int tag)
{
	(void)c, (void)b, (void)n, (void)peer, (void)tag;
	return no_peer();
}
static int self_recv(struct rt_comm *c, void *b, size_t n, int peer, int tag, struct rt_comm_req **req)
{
	(void)c, (void)b, (void)n, (void)peer, (void)tag, (void)req;
	return no_peer();
}
static int self_all_reduce(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
			   enum plan_reduce op, struct rt_comm_req **req)
{
	(void)c, (void)comm, (void)in, (void)out, (void)n, (void)t, (void)op, (void)req;
	return no_peer();
}
static int self_reduce_scatter(struct rt_comm *c, int comm, const void *in, void *out, int64_t n, enum ir_dtype t,
			       struct rt_comm_req **req)
{
	(void)c, (void)comm, (void)in, (void)out, (void)n, (void)t, (void)req;
	return no_peer();
}
static int self_gather(struct rt_comm *c, int comm, const void *in, void *out, size_t bytes, struct rt_comm_req **req)
{
	(void)c, (void)comm, (void)in, (void)out, (void)bytes, (void)req;
	return no_peer();
}
static int self_wait(struct rt_comm *c, struct rt_comm_req *req)
{
	(void)c, (void)req;
	return no_peer();
}
static int self_nothing(struct rt_comm *c)
{
	(void)c;
	return 0;
}
static int self_ctl(struct rt_comm *c, const void *b, size_t n, int peer)
{
	(void)c, (void)b, (void)n, (void)peer;
	return no_peer();
}
static int self_ctl_recv(struct rt_comm *c, void *b, size_t n, int peer)
{
	(void)c, (void)b, (void)n, (void)peer;
	return no_peer();
}
static int self_ctl_min(struct rt_comm *c, int *v)
{
	(void)c, (void)v;
	return 0;
}
static _Noreturn void self_abort(struct rt_comm *c, int code)
{
	(void)c;
	_exit(code);
}
static void self_finish(struct rt_comm *c)
{
	(void)c;
}

static const struct rt_comm_ops self_ops = {
	.name = "self",
	.setup = self_setup,
	.send = self_send,
	.recv = self_recv,
	.all_reduce = self_all_reduce,
	.reduce_scatter = self_reduce_scatter,
	.all_gather = self_gather,
	.all_to_all = self_gather,
	.wait = self_wait,
	.progress = self_nothing,
	.flush = self_nothing,
	.ctl_send = self_ctl,
	.ctl_recv = self_ctl_recv,
	.ctl_min = self_ctl_min,
	.abort = self_abort,
	.finish = self_finish,
};

/* ---- what a child reports (shared memory: it survives the child's crash) */

enum verdict {
	V_PASS,
	V_FAIL, /* the generated path fails where the interpreter passes */
	V_OUT,  /* out of scope: test_conformance does not pass it */
};

/* Why the command line could not run a test as this process does (its
 * kernels are tested here all the same). */
enum cli_gap {
	CLI_OK,
	CLI_FEED, /* pcc-run -i cannot read the data set as it is */
};

struct verdict_report {
	enum verdict v;
	char stage[64]; /* the stage reached: named in a crash */
	char what[768];
	bool ref_ok; /* failures: the plan's reference kernels pass */
	enum cli_gap gap;
	char gap_what[256];
	int nbound;                         /* inputs bound as constants (pcc --const) */
	char bound[256];                    /* their names */
	double t_compile, t_run;            /* seconds */
	double t_inter, t_lower, t_codegen; /* of t_compile */
};

static struct verdict_report *rep;
static const char *host_cpu; /* --host-cpu: LLVM's CPU; NULL: pcc's default */
/* cpu:1, parsed once: parsing measures the host (gemm and copy rates,
 * 0.1 s), which would take most of each test's time */
static struct cost_cluster cpu1;

static void stage(const char *s)
{
	snprintf(rep->stage, sizeof rep->stage, "%s", s);
}

__attribute__((format(printf, 2, 3))) static int say(enum verdict v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rep->v = v;
	vsnprintf(rep->what, sizeof rep->what, fmt, ap);
	va_end(ap);
	return v == V_PASS ? 0 : -1;
}

/* ---- the compiler: what `pcc MODEL --cluster cpu:1 -o plan.bin` does */

struct loader {
	const char *model;
	const struct onnx_import_opts *imp;
	char bname[128];
};

static struct ir_graph *load_batch(void *ctx, int64_t b)
{
	const struct loader *l = ctx;
	return l->bname[0] ? onnx_import_batch(l->model, l->imp, l->bname, b) : onnx_import(l->model, l->imp, NULL);
}

static struct plan *compile(const char *model, const struct onnx_import_opts *imp, const char *tmp)
{
	struct inter_opts o;
	struct inter_plan ip;
	struct loader l = { model, imp, "" };
	struct plan *p = NULL, *back = NULL;
	inter_opts_init(&o);
	o.load = load_batch;
	o.ctx = &l;
	stage("inter-op pass");
	double t0 = ir_now(), t1;
	if (onnx_batch_dim(model, imp, l.bname, sizeof l.bname, &o.static_batch) < 0 || inter_pass(&cpu1, &o, &ip) < 0)
		return NULL;
	stage("lowering and fusion");
	t1 = ir_now();
	rep->t_inter = t1 - t0;
	struct compile_input in = { model, "cpu:1", &cpu1, &o, &ip, NULL, imp, NULL, NULL, NULL };
	int rc = compile_lower(&in, &p);
	inter_plan_free(&ip);
	if (rc < 0)
		return NULL;
	stage("codegen");
	t0 = ir_now();
	rep->t_lower = t0 - t1;
	struct codegen_opts co;
	codegen_opts_init(&co);
	co.host = true;
	co.host_cpu = host_cpu;
	if (codegen_plan(p, &co) < 0) {
		plan_free(p);
		return NULL;
	}
	stage("plan.bin written and read back");
	rep->t_codegen = ir_now() - t0;
	if (plan_write(p, tmp) == 0 && (back = plan_read(tmp)) && plan_verify(back) < 0) {
		plan_free(back);
		back = NULL;
	}
	plan_free(p);
	unlink(tmp);
	return back;
}

/* ---- the runtime: what `pcc-run plan.bin -i DIR` does on one rank */

/* Data set dir's input files for the plan's inputs: by name, else by
 * position when the counts agree (as run_data_set matches them). */
static int read_set(const struct plan *p, const char *dir, struct ir_tensor *in)
{
	struct ir_tensor files[64];
	char *names[64] = { 0 };
	int nfiles = read_inputs(dir, files, names, 64), rc = 0;
	for (int i = 0; i < p->ninputs && rc == 0; i++) {
		int k = -1;
		for (int j = 0; j < nfiles && k < 0; j++)
			if (names[j] && !strcmp(names[j], p->inputs[i].name))
				k = j;
		if (k < 0 && nfiles == p->ninputs)
			k = i;
		if (k < 0 || !files[k].data) {
			rc = ir_errorf(-ENOENT, "%s: no input file for \"%s\"", dir, p->inputs[i].name);
			break;
		}
		in[i] = files[k];
		files[k].data = NULL;
	}
	for (int j = 0; j < nfiles; j++) {
		ir_tensor_free(&files[j]);
		free(names[j]);
	}
	return rc;
}

/* Runs plan p on inputs in with generated kernels (or the reference
 * ones) into out[noutputs] (the caller frees them). */
static int run_plan(const struct plan *p, const char *model, const struct ir_tensor *in, bool reference,
		    struct ir_tensor *out)
{
	struct rt_comm_progress prog = { 0 };
	struct rt_comm comm = { .ops = &self_ops, .size = 1, .timeout = 60, .prog = &prog, .local_size = 1 };
	struct rt r;
	stage(reference ? "pcc-run --reference: load" : "pcc-run: load");
	int rc = rt_init(&r, p, &comm, false);
	if (rc == 0)
		rc = rt_kernels_load(&r, reference, 0);
	if (rc == 0)
		rc = rt_load_params(&r, model, NULL, NULL);
	stage(reference ? "pcc-run --reference: step" : "pcc-run: step");
	if (rc == 0 && (rc = rt_step(&r, in)) == 0)
		rc = rt_gather_outputs(&r, out);
	rt_overlap_release(&r);
	rt_release(&r);
	return rc;
}

static void free_tensors(struct ir_tensor *t, int n)
{
	for (int i = 0; i < n; i++)
		ir_tensor_free(&t[i]);
	free(t);
}

/* Runs plan p on one data set; compares with the set's outputs into *c. */
static int run_set(const struct plan *p, const char *model, const char *dir, bool reference, struct cmp *c)
{
	struct ir_tensor *in = calloc((size_t)p->ninputs + 1, sizeof *in);
	struct ir_tensor *out = calloc((size_t)p->noutputs + 1, sizeof *out);
	char path[4096];
	memset(c, 0, sizeof *c);
	int rc = read_set(p, dir, in);
	if (rc == 0)
		rc = run_plan(p, model, in, reference, out);
	for (int i = 0; i < p->noutputs && rc == 0; i++) {
		struct ir_tensor want;
		snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
		if ((rc = read_pb(path, &want, NULL)) == 0) {
			cmp_tensor(&out[i], &want, RTOL, ATOL, i, c);
			ir_tensor_free(&want);
		}
	}
	if (rc < 0) {
		c->bad = 1;
		snprintf(c->what, sizeof c->what, "%s", ir_error());
	}
	free_tensors(in, p->ninputs);
	free_tensors(out, p->noutputs);
	return rc;
}

/* --special (exploring, not the CI case): data set 0 with its float
 * inputs replaced by values in [-2, 2] and, every 7th element, NaN, +-inf,
 * -0, values where exp and tanh saturate; generated kernels against the
 * plan's reference kernels on them (NaN where NaN, else rtol 1e-4,
 * atol 1e-6). */
static bool special;

static int run_special(const struct plan *p, const char *model, const char *dir, char *what, size_t n)
{
	static const double odd[] = { NAN, INFINITY, -INFINITY, -0.0, 40, -40, 120, -800, 1e-9, 0 };
	struct ir_tensor *in = calloc((size_t)p->ninputs + 1, sizeof *in);
	struct ir_tensor *gen = calloc((size_t)p->noutputs + 1, sizeof *gen);
	struct ir_tensor *ref = calloc((size_t)p->noutputs + 1, sizeof *ref);
	uint64_t x = 88172645463325252ull;
	int rc = read_set(p, dir, in);
	for (int i = 0; i < p->ninputs && rc == 0; i++) {
		if (!ir_dtype_is_float(in[i].dtype))
			continue;
		for (int64_t e = 0; e < ir_shape_numel(&in[i].shape); e++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			double v = 4.0 * (double)(x >> 11) / 9007199254740992.0 - 2;
			ir_tensor_set_f64(&in[i], e, e % 7 == 3 ? odd[(e / 7) % 10] : v);
		}
	}
	if (rc == 0)
		rc = run_plan(p, model, in, false, gen);
	if (rc == 0)
		rc = run_plan(p, model, in, true, ref);
	struct cmp c = { 0 };
	for (int i = 0; i < p->noutputs && rc == 0; i++)
		cmp_tensor(&gen[i], &ref[i], 1e-4, 1e-6, i, &c);
	if (rc < 0)
		snprintf(what, n, "special values: %s", ir_error());
	else if (c.bad)
		snprintf(what, n, "special values, generated against reference kernels: %s", c.what);
	free_tensors(in, p->ninputs);
	free_tensors(gen, p->noutputs);
	free_tensors(ref, p->noutputs);
	return rc < 0 || c.bad ? -1 : 0;
}

/* Every data set through p: 0 when all match. */
static int run_sets(const struct plan *p, const char *root, const char *name, bool reference, char *what, size_t n)
{
	char model[2048], set[2048];
	snprintf(model, sizeof model, "%s/%s/model.onnx", root, name);
	for (int k = 0; k < 16; k++) {
		struct cmp c;
		snprintf(set, sizeof set, "%s/%s/test_data_set_%d", root, name, k);
		if (!file_exists(set))
			break;
		run_set(p, model, set, reference, &c);
		if (c.bad) {
			snprintf(what, n, "data set %d: %s", k, c.what);
			return -1;
		}
	}
	return 0;
}

/* The child: one test through the interpreter (in scope?) and the plan. */
static int child(const char *root, const char *name)
{
	char model[2048], data[2048];
	snprintf(model, sizeof model, "%s/%s/model.onnx", root, name);
	struct node_consts consts;
	struct onnx_import_opts imp;
	stage("import");
	struct ir_graph *g = import_node_test(root, name, &consts, &imp);
	if (!g)
		return say(V_OUT, "does not import: %s", ir_error());
	stage("interpreter");
	for (int k = 0; k < 16; k++) {
		struct cmp c;
		snprintf(data, sizeof data, "%s/%s/test_data_set_%d", root, name, k);
		if (!file_exists(data))
			break;
		run_data_set(g, data, RTOL, ATOL, &c);
		if (c.bad) {
			ir_graph_free(g);
			return say(V_OUT, "the interpreter does not pass it: %s", c.what);
		}
	}
	ir_graph_free(g);
	char tmp[64];
	snprintf(tmp, sizeof tmp, "/tmp/pcc-conf-run-%d.bin", (int)getpid());
	double t0 = ir_now();
	struct plan *p = compile(model, &imp, tmp);
	rep->t_compile = ir_now() - t0;
	if (!p)
		return say(V_FAIL, "%s: %s", rep->stage, ir_error());
	snprintf(data, sizeof data, "%s/%s/test_data_set_0", root, name);
	struct rt_data *rd = rt_data_open(data, p);
	rep->nbound = consts.nbound;
	for (int i = 0, at = 0; i < consts.nbound && at < (int)sizeof rep->bound; i++)
		at += snprintf(rep->bound + at, sizeof rep->bound - (size_t)at, "%s%s", i ? ", " : "",
			       consts.ci[i].name);
	if (!rd) {
		rep->gap = CLI_FEED;
		snprintf(rep->gap_what, sizeof rep->gap_what, "%s", ir_error());
	}
	rt_data_close(rd);
	t0 = ir_now();
	char what[512];
	int rc = run_sets(p, root, name, false, what, sizeof what);
	if (rc < 0) {
		char ignored[512];
		rep->ref_ok = run_sets(p, root, name, true, ignored, sizeof ignored) == 0;
		say(V_FAIL, "%s", what);
	} else if (special && (rc = run_special(p, model, data, what, sizeof what)) < 0) {
		say(V_FAIL, "%s", what);
	} else {
		int host = 0;
		for (int k = 0; k < p->nkernels; k++)
			host += p->kernels[k].host;
		say(V_PASS, "%d kernels, %d with host code", p->nkernels, host);
	}
	rep->t_run = ir_now() - t0;
	plan_free(p);
	node_consts_free(&consts);
	return rc;
}

/* ---- the parent: one child per test, a case each */

static int nout, npass, nfail, ngap[2], nbound;
static double t_compile, t_run, t_inter, t_lower, t_codegen;

static void run_test(const char *root, const char *label, const char *name)
{
	char model[2048], op[64];
	snprintf(model, sizeof model, "%s/%s/model.onnx", root, name);
	node_test_op(model, op, sizeof op);
	memset(rep, 0, sizeof *rep);
	rep->v = V_FAIL;
	snprintf(rep->stage, sizeof rep->stage, "start");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(TEST_SECONDS);
		child(root, name);
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0) {
		rep->v = V_FAIL;
		snprintf(rep->what, sizeof rep->what, "cannot start a process for it");
	} else if (WIFSIGNALED(st)) {
		rep->v = V_FAIL;
		snprintf(rep->what, sizeof rep->what, "%s at %s",
			 WTERMSIG(st) == SIGALRM ? "timed out" : strsignal(WTERMSIG(st)), rep->stage);
	}
	struct op_count *e = op_entry(op);
	t_compile += rep->t_compile;
	t_inter += rep->t_inter;
	t_lower += rep->t_lower;
	t_codegen += rep->t_codegen;
	t_run += rep->t_run;
	switch (rep->v) {
	case V_PASS:
		npass++;
		e->passed++;
		ngap[rep->gap]++;
		nbound += rep->nbound > 0;
		TAP_OK(1, "%s (%s): %s%s%s%s%s", label, op, rep->what,
		       rep->nbound ? "; bound as constants (pcc --const): " : "", rep->bound,
		       rep->gap ? "; the command line cannot run it: " : "", rep->gap_what);
		break;
	case V_OUT:
		nout++;
		TAP_OK(1, "%s (%s) # SKIP not in test_conformance's passes: %s", label, op, rep->what);
		break;
	case V_FAIL:
		nfail++;
		e->failed++;
		TAP_OK(0, "%s (%s)", label, op);
		TAP_DIAG("%s", rep->what);
		if (strncmp(rep->stage, "pcc-run", 7) == 0 || WIFSIGNALED(st))
			TAP_DIAG("the plan's reference kernels %s", rep->ref_ok ? "pass" : "fail or were not run");
		break;
	}
}

/* Runs every test of root (or the one named --only); tests of roots after
 * the first are named after the directory too. 0, or -1 when root cannot
 * be read. */
static int run_root(const char *root, bool first, const char *only)
{
	DIR *d = opendir(root);
	if (!d) {
		printf("Bail out! cannot open %s (install libonnx-testdata)\n", root);
		return -1;
	}
	static char *names[4096];
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) && n < 4096;)
		if (!strncmp(e->d_name, "test_", 5) && (!only || !strcmp(e->d_name, only)))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_names);
	const char *base = strrchr(root, '/') ? strrchr(root, '/') + 1 : root;
	for (int i = 0; i < n; i++) {
		char label[512];
		snprintf(label, sizeof label, "%s%s%s", first ? "" : base, first ? "" : "/", names[i]);
		run_test(root, label, names[i]);
		free(names[i]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *roots[8] = { "/usr/share/libonnx-testdata/data/node" }, *only = NULL;
	int nroots = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--special"))
			special = true;
		else if (!strcmp(argv[i], "--host-cpu") && i + 1 < argc)
			host_cpu = argv[++i];
		else if (nroots < 8)
			roots[nroots++] = argv[i];
	}
	if (cost_cluster_parse("cpu:1", &cpu1) < 0) {
		printf("Bail out! %s\n", ir_error());
		return 1;
	}
	rep = mmap(NULL, sizeof *rep, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rep == MAP_FAILED) {
		printf("Bail out! mmap: %s\n", strerror(errno));
		return 1;
	}
	double t0 = ir_now();
	for (int i = 0; i < (nroots ? nroots : 1); i++)
		if (run_root(roots[i], i == 0, only) < 0)
			return 1;
	for (int i = 0; i < nops; i++)
		if (ops[i].failed)
			TAP_DIAG("%-32s passed %3d  failed %3d", ops[i].op, ops[i].passed, ops[i].failed);
	TAP_DIAG("node tests through plan.bin and generated kernels: %d passed, %d failed; %d out of scope "
		 "(not passed by test_conformance); %.1f s: compiling %.1f s (inter-op pass %.1f s, lowering %.1f s, "
		 "codegen %.1f s), running %.1f s",
		 npass, nfail, nout, ir_now() - t0, t_compile, t_inter, t_lower, t_codegen, t_run);
	TAP_DIAG("of the passed, %d bind inputs as constants (pcc --const); the command line (pcc, then pcc-run -i "
		 "DATA_SET) cannot run %d: data sets pcc-run -i cannot read",
		 nbound, ngap[CLI_FEED]);
	return tap_done();
}
