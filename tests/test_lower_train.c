/*
 * test_lower_train.c: training plans (compiler/lower/lower_train.c). The training
 * fixtures (tests/train: an MLP under an MSE loss, GPT with its own loss,
 * ResNet with BatchNorm's running statistics, BERT, a mixture of experts)
 * are lowered on meshes 1x1 to 2x4 with one and two micro-batches, under
 * the intra-op pass's plan and under random strategies (every gradient
 * sharding: partial sums reduced once per step, updates split over the
 * data-parallel axis and gathered back). Each plan must verify, survive
 * plan.bin, and two steps on the rank simulator must leave the parameters
 * that `pcc train`'s reference trainer (train_run: the interpreter on one
 * device, its own accumulation of micro-batches) leaves after two steps
 * with the same data; the first loss must equal PyTorch's. Also: the
 * gradient reduction happens once per step, not per micro-batch, and the
 * pass, told what each write-back costs, leaves every new parameter and
 * state value of these small models in its old value's sharding.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "compiler/search/intra_internal.h"
#include "compiler/lower/lower.h"
#include "compiler/pipeline/pipeline.h"
#include "tests/plan_sim.h"
#include "tests/tap.h"

#define STEPS 2

static const char *root;

struct fixture {
	char dir[1024];
	json_t *j;
	const char *loss; /* NULL: the model's own */
};

static int fixture_open(struct fixture *f, const char *name)
{
	char path[1200];
	json_error_t e;
	snprintf(f->dir, sizeof f->dir, "%s/%s", root, name);
	snprintf(path, sizeof path, "%s/train.json", f->dir);
	if (!(f->j = json_load_file(path, 0, &e)))
		return -1;
	const char *l = json_string_value(json_object_get(f->j, "loss"));
	f->loss = l && strcmp(l, "model") ? l : NULL;
	return 0;
}

static double rel_err(const struct ir_tensor *a, const struct ir_tensor *b)
{
	if (!a->data || !b->data || !ir_shape_eq(&a->shape, &b->shape))
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

/* The parameters pcc train's reference trainer leaves after STEPS steps
 * of `micro` micro-batches (the same data each), by name of g's params. */
static int reference(const struct fixture *f, const struct train_opts *o, int micro, const struct ir_graph *g,
		     struct ir_tensor *want)
{
	char model[1300], set[1300], saved[1300], tmpl[] = "/tmp/pcc-lt-XXXXXX";
	const char *tmp = mkdtemp(tmpl);
	if (!tmp)
		return -1;
	snprintf(model, sizeof model, "%s/model.onnx", f->dir);
	snprintf(set, sizeof set, "%s/test_data_set_0", f->dir);
	snprintf(saved, sizeof saved, "%s/trained.onnx", tmp);
	struct train_run_opts ro = { .model = model, .in_dir = set, .save = saved, .steps = STEPS };
	onnx_import_opts_init(&ro.imp);
	ro.t = *o;
	ro.t.grad_scale = 1;
	ro.t.accum = micro;
	int rc = train_run(&ro);
	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	imp.updates = true;
	struct ir_graph *t = rc == 0 ? onnx_import(saved, &imp, NULL) : NULL;
	rc = t ? 0 : -1;
	for (int i = 0; t && i < ir_graph_nparams(g); i++) {
		want[i].data = NULL;
		for (int k = 0; k < ir_graph_nparams(t); k++)
			if (!strcmp(ir_graph_param(t, k)->name, ir_graph_param(g, i)->name) &&
			    interp_load_param(ir_graph_param(t, k), &want[i]) < 0)
				rc = -1;
	}
	ir_graph_free(t);
	unlink(saved);
	rmdir(tmp);
	return rc;
}

static void randomize(struct ir_graph *g, struct intra_state *st, unsigned seed)
{
	srand(seed);
	for (int gi = 0; gi < st->ngroups; gi++) {
		int n = st->unit[st->leader[gi]].nstrat;
		st->choice[gi] = n > 1 ? rand() % n : 0;
	}
	IR_ASSERT(intra_annotate(g, st) == 0); /* what lowering reads */
}

struct result {
	double loss0, param_err;
	char worst[64];                  /* the parameter of param_err */
	int reduces_micro, reduces_step; /* gradient collectives on device 0, per part */
	int ties, tie_moves;             /* write-backs; those the pass left in another sharding */
};

/* Runs the plan for STEPS steps; the first loss and the parameters after. */
static int simulate(const struct plan *p, const struct train_step *ts, const struct fixture *f, int micro,
		    const struct ir_tensor *want, struct result *res)
{
	int np = ir_graph_nparams(ts->g), rc = -1;
	struct ir_tensor *params = calloc((size_t)np + 1, sizeof *params);
	struct ir_tensor *in = calloc((size_t)(micro * ts->ndata) + 1, sizeof *in);
	struct ir_tensor *out = calloc((size_t)(micro * p->noutputs) + 1, sizeof *out);
	struct ir_tensor *got = calloc((size_t)np + 1, sizeof *got);
	struct plan_sim *s = NULL;
	for (int i = 0; i < np; i++)
		if (interp_load_param(ir_graph_param(ts->g, i), &params[i]) < 0)
			goto out;
	for (int i = 0; i < ts->ndata; i++) {
		char path[1300];
		snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", f->dir, i);
		if (onnx_tensor_read(path, &in[i], NULL) < 0)
			goto out;
		for (int k = 1; k < micro; k++)
			in[k * ts->ndata + i] = in[i]; /* the same data every micro-batch */
	}
	if (!(s = plan_sim_new(p, params)))
		goto out;
	for (int t = 0; t < STEPS; t++) {
		if (plan_sim_step(s, in, out) < 0) {
			TAP_DIAG("step %d: %s", t, ir_error());
			goto out;
		}
		if (t == 0)
			res->loss0 = ir_tensor_get_f64(&out[0], 0);
		for (int i = 0; i < micro * p->noutputs; i++)
			ir_tensor_free(&out[i]);
	}
	if (plan_sim_params(s, got) < 0) {
		TAP_DIAG("params: %s", ir_error());
		goto out;
	}
	res->param_err = 0;
	for (int i = 0; i < np; i++) {
		double e = rel_err(&got[i], &want[i]);
		if (e > res->param_err)
			snprintf(res->worst, sizeof res->worst, "%s", ir_graph_param(ts->g, i)->name);
		res->param_err = fmax(res->param_err, e);
	}
	rc = 0;
out:
	plan_sim_free(s);
	for (int i = 0; i < np; i++) {
		ir_tensor_free(&params[i]);
		ir_tensor_free(&got[i]);
	}
	for (int i = 0; i < ts->ndata; i++)
		ir_tensor_free(&in[i]);
	free(params);
	free(in);
	free(out);
	free(got);
	return rc;
}

/* Lowers the train step of fixture f on mesh n0 x n1 (random strategies
 * when seed > 0), checks and simulates it. */
static int run_case(const struct fixture *f, const struct train_opts *base, int n0, int n1, int micro, unsigned seed,
		    const struct ir_tensor *want, struct result *res)
{
	char path[1300];
	struct onnx_import_opts imp;
	struct train_opts o = *base;
	struct train_step ts;
	struct cost_cluster c;
	struct intra_opts io;
	struct intra_result r;
	struct plan *p = NULL, *back = NULL;
	int rc = -1;
	memset(res, 0, sizeof *res);
	onnx_import_opts_init(&imp);
	imp.updates = true;
	snprintf(path, sizeof path, "%s/model.onnx", f->dir);
	struct ir_graph *g = onnx_import(path, &imp, NULL);
	if (!g)
		return -1;
	o.grad_scale = 1.0 / micro;
	if (train_build(g, &o, &ts) < 0) {
		TAP_DIAG("train_build: %s", ir_error());
		train_step_free(&ts);
		return -1;
	}
	IR_ASSERT(cost_cluster_parse("2x4:v100", &c) == 0);
	intra_opts_init(&io);
	io.n0 = n0;
	io.n1 = n1;
	io.quick = true;
	/* as compile.c: the update once per step, write-backs costed */
	int nt = ts.nparams + ts.nstate;
	int(*ties)[2] = calloc((size_t)nt + 1, sizeof *ties);
	train_step_ties(&ts, ties);
	io.update_first = ts.update_first;
	io.step_share = 1.0 / micro;
	io.ties = (const int(*)[2])ties;
	io.nties = nt;
	int irc = intra_pass(ts.g, &c, &io, &r);
	for (int i = 0; irc == 0 && i < nt; i++) {
		int ua = r.st->value_unit[ties[i][0]], ub = r.st->value_unit[ties[i][1]];
		if (ua < 0 || ub < 0 || ties[i][0] == ties[i][1])
			continue;
		struct ir_sharding a = intra_chosen(r.st, ua)->out, b = intra_chosen(r.st, ub)->out;
		a.partial = b.partial = 0;
		res->ties++;
		res->tie_moves += memcmp(&a, &b, sizeof a) != 0;
	}
	free(ties);
	if (irc < 0) {
		TAP_DIAG("intra_pass: %s", ir_error());
		train_step_free(&ts);
		return -1;
	}
	if (seed)
		randomize(ts.g, r.st, seed);
	double *start = calloc((size_t)ts.nstate + 1, sizeof *start);
	train_state_start(&ts, &o, start);
	struct lower_train tr = { &ts, micro, start, "test" };
	struct lower_stage st = { ts.g, 0, 1, n0 * n1, NULL };
	uint8_t *bytes = NULL;
	size_t nbytes = 0;
	if (lower_train(&tr, &st, 1, "2x4:v100", &p) < 0 || plan_verify(p) < 0) {
		TAP_DIAG("lower: %s", ir_error());
		goto out;
	}
	if (plan_pack(p, &bytes, &nbytes) < 0 || !(back = plan_unpack(bytes, nbytes)) || plan_verify(back) < 0) {
		TAP_DIAG("plan.bin round trip: %s", ir_error());
		goto out;
	}
	/* collectives reading an accumulator, per part, on device 0 */
	const struct plan_device *d = &back->devices[0];
	for (int i = 0; i < d->ninstr; i++) {
		const struct plan_instr *x = &d->instr[i];
		if (!plan_instr_is_collective(x->kind) || d->buf[d->args[x->arg]].bind != PLAN_BIND_ACCUM)
			continue;
		if (i < plan_step_first(d))
			res->reduces_micro++;
		else
			res->reduces_step++;
	}
	rc = simulate(back, &ts, f, micro, want, res);
out:
	ir_free(bytes);
	plan_free(p);
	plan_free(back);
	free(start);
	intra_result_free(&r);
	train_step_free(&ts);
	return rc;
}

static struct ir_graph *load_fixture(void *ctx, int64_t b)
{
	struct onnx_import_opts imp;
	(void)b;
	onnx_import_opts_init(&imp);
	imp.updates = true;
	return onnx_import(ctx, &imp, NULL);
}

static bool refused(const struct plan *p, const char *want)
{
	if (plan_verify(p) == 0)
		return false;
	if (!strstr(ir_error(), want))
		TAP_DIAG("verifier said: %s", ir_error());
	return strstr(ir_error(), want) != NULL;
}

/* Stage 0's values of the parameters alone (16-bit weight copies) cross
 * from its forward part to its backward part in one slot shared by the
 * micro-batches in flight (plan_invariant_instr): the verifier accepts
 * that, and refuses a backward part that frees such a buffer. */
static int nshared; /* plans check_shared found such a buffer in */

static void check_shared(struct plan *p)
{
	struct plan_device *d = &p->devices[0];
	int sf = plan_step_first(d), nb = d->nbuf, shared = -1;
	unsigned char *st = malloc((size_t)nb + 1);
	int *first = malloc(sizeof *first * (size_t)(nb + 1)), *last = malloc(sizeof *last * (size_t)(nb + 1));
	for (int k = 0; k < nb; k++) {
		st[k] = plan_invariant_init(d->buf[k].bind);
		first[k] = last[k] = -1;
	}
	for (int i = 0; i < sf; i++) {
		const struct plan_instr *x = &d->instr[i];
		plan_invariant_instr(st, x->kind, d->args + x->arg, x->nin, x->nout);
		for (int j = 0; j < x->nin + x->nout && x->kind != PLAN_FREE; j++) {
			int k = d->args[x->arg + j];
			first[k] = first[k] < 0 ? i : first[k];
			last[k] = i;
		}
	}
	for (int k = 0; k < nb && shared < 0; k++)
		if (d->buf[k].bind == PLAN_BIND_NONE && plan_buffer_slots(&d->buf[k]) == 1 && st[k] == PLAN_INVARIANT &&
		    first[k] < d->nfwd && last[k] >= d->nfwd)
			shared = k;
	if (shared < 0) { /* an f32 MLP has no such value: its dots read the weights themselves */
		TAP_DIAG("stage 0 has no value of the parameters alone crossing to its backward part");
		goto out;
	}
	nshared++;
	TAP_OK(plan_verify(p) == 0,
	       "pipelined plan: stage 0 keeps a value of the parameters alone in one slot for its 2 micro-batches "
	       "in flight, and the verifier accepts it");
	int f = -1;
	for (int i = sf - 1; shared >= 0 && i > last[shared] && f < 0; i--)
		if (d->instr[i].kind == PLAN_FREE)
			f = i;
	if (f >= 0) {
		int *arg = &d->args[d->instr[f].arg], was = *arg;
		*arg = shared;
		TAP_OK(refused(p, "yet a backward part frees it"),
		       "verifier: a backward part freeing a buffer that serves every micro-batch in one slot is refused");
		*arg = was;
	} else {
		TAP_OK(0, "stage 0 frees a buffer in its backward part after the shared one's last read");
	}
out:
	free(st);
	free(first);
	free(last);
}

/* plan_verify on a 2-stage 1F1B plan of 4 micro-batches, broken: a stashed
 * buffer short of slots, a backward before its forward, stages whose
 * backwards run in different orders, a forward part missing. */
static void check_verifier(struct plan *p)
{
	struct plan_device *d = &p->devices[0];
	int b = 0;
	while (b < d->nbuf && d->buf[b].slots < 2)
		b++;
	TAP_OK(b < d->nbuf, "pipelined plan: stage 0 stashes activations in buffers of 2 slots");
	if (b == d->nbuf)
		return;
	d->buf[b].slots = 1;
	TAP_OK(refused(p, "has 1 slots for the 2 micro-batches in flight"),
	       "verifier: a stashed buffer with too few slots is refused");
	d->buf[b].slots = 2;
	check_shared(p);
	int *o = p->stages[1].order, t = o[0];
	o[0] = o[1];
	o[1] = t;
	TAP_OK(refused(p, "each backward after its forward"), "verifier: a backward before its forward is refused");
	o[1] = o[0];
	o[0] = t;
	int *z = p->stages[0].order, n = p->stages[0].norder;
	t = z[n - 1];
	z[n - 1] = z[n - 2];
	z[n - 2] = t;
	TAP_OK(refused(p, "backwards in stage 0's order"),
	       "verifier: stages whose backwards run in different "
	       "orders are refused (their gradient messages would pair with the wrong micro-batch)");
	z[n - 2] = z[n - 1];
	z[n - 1] = t;
	t = p->devices[2].nfwd;
	p->devices[2].nfwd = 0;
	TAP_OK(refused(p, "has no forward part, its stage 1 has a schedule"),
	       "verifier: a device without a forward part in a pipelined stage is refused");
	p->devices[2].nfwd = t;
	TAP_OK(plan_verify(p) == 0, "verifier: the repaired plan passes again");
}

/* A pipelined plan through compile_lower, as pcc compiles one: the forward
 * graph cut into ns stages of about equal node counts, each on an n0 x n1
 * mesh, under schedule sched; checked and simulated as run_case does. */
static int run_pipe_case(const struct fixture *f, const struct train_opts *base, int ns, int n0, int n1, int micro,
			 enum cost_sched sched, const struct ir_tensor *want, struct result *res)
{
	char path[1300];
	struct inter_stage stages[4];
	struct inter_plan ip = {
		.train = true, .nstages = ns, .stages = stages, .micro = micro, .sched = sched, .v = 1
	};
	struct inter_opts io;
	struct cost_cluster c;
	struct train_opts o = *base;
	struct train_step ts;
	struct plan *p = NULL, *back = NULL;
	uint8_t *bytes = NULL;
	size_t nbytes = 0;
	int rc = -1;
	memset(res, 0, sizeof *res);
	memset(&ts, 0, sizeof ts);
	snprintf(path, sizeof path, "%s/model.onnx", f->dir);
	struct ir_graph *g = load_fixture(path, 0);
	if (!g || ns > 4)
		return -1;
	int nn = ir_graph_nnodes(g);
	for (int s = 0; s < ns; s++)
		stages[s] = (struct inter_stage){ .node_first = s * nn / ns,
						  .node_last = (s + 1) * nn / ns,
						  .rows = 1,
						  .cols = n0 * n1,
						  .n0 = n0,
						  .n1 = n1 };
	inter_opts_init(&io);
	io.train = true;
	io.load = load_fixture;
	io.ctx = path;
	io.mem_limit = 1 << 30;
	IR_ASSERT(cost_cluster_parse("2x4:v100", &c) == 0);
	struct compile_input in = { path, "2x4:v100", &c, &io, &ip, &o, NULL, NULL, NULL, NULL };
	if (compile_lower(&in, &p) < 0) {
		TAP_DIAG("compile_lower: %s", ir_error());
		goto out;
	}
	if (plan_pack(p, &bytes, &nbytes) < 0 || !(back = plan_unpack(bytes, nbytes)) || plan_verify(back) < 0) {
		TAP_DIAG("plan.bin round trip: %s", ir_error());
		goto out;
	}
	if (sched == COST_SCHED_1F1B && micro == 4 && ns == 2 && n0 * n1 == 2)
		check_verifier(back);
	o.grad_scale = 1.0 / micro;
	if (train_build(g, &o, &ts) < 0) {
		g = NULL;
		TAP_DIAG("train_build: %s", ir_error());
		goto out;
	}
	g = NULL;
	if (back->nstages != ns || back->stages[ns - 1].norder != 2 * micro || !back->devices[0].nfwd) {
		TAP_DIAG("the plan has %d stages and no schedule of %d micro-batches", back->nstages, micro);
		goto out;
	}
	rc = simulate(back, &ts, f, micro, want, res);
out:
	ir_graph_free(g);
	ir_free(bytes);
	plan_free(p);
	plan_free(back);
	train_step_free(&ts);
	return rc;
}

/* Fixture `name` trained by plans on each mesh and micro-batch count; ns
 * > 1: pipelined over ns stages of that mesh under schedule sched. */
static void test_fixture(const char *name, const int (*mesh)[2], int nmesh, const int *micros, int nmicro,
			 enum train_optim optim, enum ir_dtype compute, int ns, enum cost_sched sched)
{
	struct fixture f;
	struct train_opts o;
	if (fixture_open(&f, name) < 0) {
		TAP_OK(0, "%s: train.json readable", name);
		return;
	}
	train_opts_init(&o);
	o.loss = f.loss;
	o.optim = optim;
	o.lr = optim == TRAIN_SGD || optim == TRAIN_MOMENTUM ? 0.05 : 0.01;
	o.clip_norm = optim == TRAIN_ADAMW ? 0.5 : 0;
	/* Adam divides by the gradient's own size: attention's key bias has a
	 * zero gradient in exact arithmetic, rounding noise in practice, and
	 * eps 1e-8 would turn either side's noise into full steps of lr */
	o.eps = 1e-4;
	o.compute = compute;
	/* the reference scales the loss of each micro-batch by loss_scale, the
	 * plan by loss_scale / micro: at 65536 one overflows f16 where the other
	 * does not and skips its step; at 1024 neither does */
	o.loss_scale = 1024;
	/* PyTorch's loss in f32 (f16 and bf16 round it: compared only in f32) */
	double loss_want = compute == IR_F32 ? json_number_value(json_object_get(f.j, "loss_f32")) : 0;
	struct onnx_import_opts imp;
	char path[1300];
	onnx_import_opts_init(&imp);
	imp.updates = true;
	snprintf(path, sizeof path, "%s/model.onnx", f.dir);
	struct ir_graph *g = onnx_import(path, &imp, NULL);
	int np = g ? ir_graph_nparams(g) : 0;
	struct ir_tensor *want = calloc((size_t)np + 1, sizeof *want);
	for (int mi = 0; g && mi < nmicro; mi++) {
		int m = micros[mi];
		if (reference(&f, &o, m, g, want) < 0) {
			TAP_OK(0, "%s: reference trainer (%d micro-batches): %s", name, m, ir_error());
			continue;
		}
		for (int k = 0; k < nmesh && ns > 1; k++) {
			struct result res;
			int rc = run_pipe_case(&f, &o, ns, mesh[k][0], mesh[k][1], m, sched, want, &res);
			double le = loss_want ? fabs(res.loss0 - loss_want) / fmax(1, fabs(loss_want)) : 0;
			double tol = compute == IR_F32 ? 2e-4 : 5e-3;
			TAP_OK(rc == 0 && res.param_err < tol && le < 1e-4,
			       "%s %s, %d stages of %dx%d, %s, %d micro-batches: parameters after %d steps equal the "
			       "reference trainer's (max rel err %.2g %s), first loss PyTorch's (rel err %.2g)",
			       name, ir_dtype_name(compute), ns, mesh[k][0], mesh[k][1], cost_sched_name(sched), m,
			       STEPS, res.param_err, res.worst, le);
		}
		for (int k = 0; k < nmesh && ns == 1; k++)
			for (unsigned seed = 0; seed < 2; seed++) {
				struct result res;
				int rc = run_case(&f, &o, mesh[k][0], mesh[k][1], m, seed, want, &res);
				double le = loss_want ? fabs(res.loss0 - loss_want) / fmax(1, fabs(loss_want)) : 0;
				double tol = compute == IR_F32 ? 2e-4 : 5e-3; /* 16-bit sums in another order */
				TAP_OK(rc == 0 && res.param_err < tol &&
						       le<1e-4,
							  "%s %s %dx%d, %d micro-batch%s, %s: parameters after %d steps equal the reference "
							  "trainer's (max rel err %.2g %s), first loss PyTorch's (rel err %.2g)",
							  name, ir_dtype_name(compute), mesh[k][0], mesh[k][1], m, m> 1
					       ? "es"
					       : "",
				       seed ? "random strategies" : "the pass's plan", STEPS, res.param_err, res.worst,
				       le);
				if (rc == 0 && seed == 0 && mesh[k][0] * mesh[k][1] > 1)
					TAP_OK(res.ties > 0 && res.tie_moves == 0,
					       "%s %dx%d, %d micro-batches: the pass leaves each of %d new parameters and "
					       "state values where its old value lies (%d moved)",
					       name, mesh[k][0], mesh[k][1], m, res.ties, res.tie_moves);
				if (rc == 0 && mesh[k][0] * mesh[k][1] > 1 && m > 1)
					TAP_OK(res.reduces_micro == 0,
					       "%s %dx%d seed %u: no accumulated gradient is communicated per micro-batch "
					       "(%d per step)",
					       name, mesh[k][0], mesh[k][1], seed, res.reduces_step);
			}
		for (int i = 0; i < np; i++)
			ir_tensor_free(&want[i]);
	}
	free(want);
	ir_graph_free(g);
	json_decref(f.j);
}

int main(int argc, char **argv)
{
	root = argc > 1 ? argv[1] : "tests/train";
	static const int all[][2] = { { 1, 1 }, { 1, 2 }, { 1, 4 }, { 2, 2 }, { 2, 4 } };
	static const int some[][2] = { { 1, 2 }, { 2, 2 } };
	static const int one_two[] = { 1, 2 }, two[] = { 2 };
	enum cost_sched one = COST_SCHED_1F1B;
	test_fixture("mlp", all, 5, one_two, 2, TRAIN_ADAMW, IR_F32, 1, one);
	test_fixture("mlp", some, 2, two, 1, TRAIN_MOMENTUM, IR_F32, 1, one);
	/* dynamic loss scaling: state that starts at 65536, not 0 */
	test_fixture("mlp", some, 2, two, 1, TRAIN_ADAMW, IR_F16, 1, one);
	test_fixture("gpt_loss", some, 2, two, 1, TRAIN_ADAMW, IR_F32, 1, one);
	test_fixture("gpt_loss", some + 1, 1, two, 1, TRAIN_SGD, IR_BF16, 1, one);
	test_fixture("resnet_train", some, 2, one_two, 2, TRAIN_SGD, IR_F32, 1, one);
	test_fixture("bert", some + 1, 1, two, 1, TRAIN_ADAM, IR_F32, 1, one);
	test_fixture("moe", some + 1, 1, two, 1, TRAIN_ADAMW, IR_F32, 1, one);
	/* pipelined: stages exchange activations, gradients and the norm's sums */
	static const int single[][2] = { { 1, 1 } }, four[] = { 4 };
	test_fixture("mlp", all, 2, four, 1, TRAIN_ADAMW, IR_F32, 2, one);
	test_fixture("mlp", some, 1, two, 1, TRAIN_ADAMW, IR_F32, 2, COST_SCHED_GPIPE);
	test_fixture("mlp", single, 1, four, 1, TRAIN_ADAMW, IR_F16, 2, one);
	test_fixture("gpt_loss", some, 2, four, 1, TRAIN_ADAMW, IR_F32, 2, one);
	test_fixture("gpt_loss", single, 1, four, 1, TRAIN_ADAMW, IR_F32, 3, one);
	test_fixture("resnet_train", some, 1, two, 1, TRAIN_SGD, IR_F32, 2, one);
	test_fixture("bert", single, 1, four, 1, TRAIN_ADAM, IR_F32, 2, COST_SCHED_GPIPE);
	test_fixture("moe", some, 1, two, 1, TRAIN_ADAMW, IR_F32, 2, one);
	TAP_OK(nshared > 0, "a pipelined plan shares one slot among its micro-batches (%d plans)", nshared);
	return tap_done();
}
