/*
 * test_train.c: the train step against PyTorch (fixtures made by
 * tests/train/gen_train_fixtures.py, see tests/train/README.md).
 *
 * Every model is trained in f64 (train_opts.compute = IR_F64) so the
 * comparison is with PyTorch's float64 references at float32 rounding of
 * the stored files: loss, the gradient of every trained parameter, the
 * parameters after one SGD step; for mlp and gpt three steps of momentum,
 * Nesterov, Adam, AdamW and AdamW with clipping, and six AdamW steps under
 * warmup + cosine. The f32 and bf16 paths are checked on the gradients
 * with tolerances suited to their precision.
 *
 * argv[1]: tests/train.
 */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "tap.h"

#include "compiler/compiler.h"

static const char *root;

struct fixture {
	char dir[1024];
	json_t *j;
};

static int fixture_open(struct fixture *f, const char *name)
{
	char path[1200];
	snprintf(f->dir, sizeof f->dir, "%s/%s", root, name);
	snprintf(path, sizeof path, "%s/train.json", f->dir);
	json_error_t e;
	f->j = json_load_file(path, 0, &e);
	return f->j ? 0 : -1;
}

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static double jnum(json_t *o, const char *k, double dflt)
{
	json_t *v = json_object_get(o, k);
	return v ? json_number_value(v) : dflt;
}

static int read_file_pb(const struct fixture *f, const char *rel, struct ir_tensor *t)
{
	char path[2400];
	snprintf(path, sizeof path, "%s/%s", f->dir, rel);
	return onnx_tensor_read(path, t, NULL);
}

/* Worst |got - want| / (rtol |want| + atol max(max|want|, 1e-6)) over the
 * tensor; <= 1 passes. (A gradient that is zero in exact arithmetic, such
 * as attention's key bias, holds rounding noise on both sides.) */
static double excess(const struct ir_tensor *got, const struct ir_tensor *want, double rtol, double atol)
{
	int64_t n = ir_shape_numel(&want->shape);
	if (!ir_shape_eq(&got->shape, &want->shape))
		return INFINITY;
	double scale = 0, worst = 0;
	for (int64_t i = 0; i < n; i++)
		scale = fmax(scale, fabs(ir_tensor_get_f64(want, i)));
	for (int64_t i = 0; i < n; i++) {
		double g = ir_tensor_get_f64(got, i), w = ir_tensor_get_f64(want, i);
		double e = fabs(g - w) / (rtol * fabs(w) + atol * fmax(scale, 1e-6));
		if (!(e <= worst))
			worst = isnan(e) ? INFINITY : fmax(worst, e);
	}
	return worst;
}

/* A built step with its inputs: data from test_data_set_0, zero state. */
struct run {
	struct train_step ts;
	struct train_opts o;
	struct ir_tensor *in;   /* graph inputs */
	struct ir_tensor **pv;  /* current value per graph param (NULL: initializer) */
	struct ir_tensor *pval; /* storage for trained params' values */
	struct ir_tensor *uval; /* storage for updated state (running statistics) */
	int nin, nupd;
};

static int run_open(struct run *r, const struct fixture *f, const struct train_opts *o)
{
	char path[1200];
	memset(r, 0, sizeof *r);
	r->o = *o;
	snprintf(path, sizeof path, "%s/model.onnx", f->dir);
	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	imp.updates = true; /* as pcc train does */
	struct ir_graph *g = onnx_import(path, &imp, NULL);
	if (!g)
		return -1;
	const char *loss = jstr(f->j, "loss");
	r->o.loss = loss && strcmp(loss, "model") ? loss : NULL;
	if (train_build(g, &r->o, &r->ts) < 0) {
		TAP_DIAG("%s: %s", f->dir, ir_error());
		train_step_free(&r->ts);
		return -1;
	}
	r->nin = ir_graph_ninputs(r->ts.g);
	r->in = calloc((size_t)r->nin, sizeof *r->in);
	r->pv = calloc((size_t)ir_graph_nparams(r->ts.g) + 1, sizeof *r->pv);
	r->pval = calloc((size_t)r->ts.nparams + 1, sizeof *r->pval);
	r->nupd = ir_graph_nupdates(r->ts.g);
	r->uval = calloc((size_t)r->nupd + 1, sizeof *r->uval);
	snprintf(path, sizeof path, "%s/test_data_set_0", f->dir);
	char *names[64] = { 0 };
	int nfiles = read_inputs(path, r->in, names, r->ts.ndata);
	for (int i = 0; i < nfiles; i++)
		free(names[i]);
	if (nfiles != r->ts.ndata)
		return -1;
	return train_state_init(&r->ts, &r->o, r->in + r->ts.ndata);
}

static int param_index(const struct ir_graph *g, const struct ir_value *p)
{
	for (int i = 0; i < ir_graph_nparams(g); i++)
		if (ir_graph_param(g, i) == p)
			return i;
	return -1;
}

/* One step; outputs[] receives everything; state and params advance. */
static int run_step(struct run *r, struct ir_tensor *out)
{
	int rc = interp_run_with(r->ts.g, r->in, (const struct ir_tensor *const *)r->pv, out);
	if (rc < 0)
		return rc;
	for (int i = 0; i < r->ts.nparams; i++) {
		int k = param_index(r->ts.g, r->ts.params[i]);
		ir_tensor_free(&r->pval[i]);
		r->pval[i] = out[2 + i];
		out[2 + i].data = NULL;
		r->pv[k] = &r->pval[i];
	}
	for (int j = 0; j < r->ts.nstate; j++) {
		ir_tensor_free(&r->in[r->ts.ndata + j]);
		r->in[r->ts.ndata + j] = out[2 + r->ts.nparams + j];
		out[2 + r->ts.nparams + j].data = NULL;
	}
	/* Updated state: a copy, so the caller still sees it in out[]. */
	for (int j = 0; j < r->nupd; j++) {
		const struct ir_tensor *u = &out[2 + r->ts.nparams + r->ts.nstate + j];
		ir_tensor_free(&r->uval[j]);
		if (ir_tensor_alloc(&r->uval[j], u->dtype, &u->shape) < 0)
			return -ENOMEM;
		memcpy(r->uval[j].data, u->data, ir_tensor_bytes(u));
		r->pv[param_index(r->ts.g, ir_graph_update_param(r->ts.g, j))] = &r->uval[j];
	}
	return 0;
}

static void run_close(struct run *r)
{
	for (int i = 0; i < r->nin; i++)
		ir_tensor_free(&r->in[i]);
	for (int i = 0; i < r->ts.nparams; i++)
		ir_tensor_free(&r->pval[i]);
	for (int j = 0; j < r->nupd; j++)
		ir_tensor_free(&r->uval[j]);
	free(r->uval);
	free(r->in);
	free(r->pv);
	free(r->pval);
	train_step_free(&r->ts);
}

static void free_outputs(struct ir_tensor *out, int n)
{
	for (int i = 0; i < n; i++)
		ir_tensor_free(&out[i]);
	free(out);
}

/* The position of param name among the trained params, or -1. */
static int trained(const struct train_step *ts, const char *name)
{
	for (int i = 0; i < ts->nparams; i++)
		if (ts->params[i]->name && !strcmp(ts->params[i]->name, name))
			return i;
	return -1;
}

/* Compares the list of files (json array key) with out[base + trained index]. */
static void check_params(const struct fixture *f, json_t *files, const struct run *r, const struct ir_tensor *vals,
			 double rtol, double atol, const char *what)
{
	json_t *names = json_object_get(f->j, "params");
	double worst = 0;
	int missing = 0;
	const char *worst_name = "";
	for (size_t i = 0; i < json_array_size(files); i++) {
		const char *pname = json_string_value(json_array_get(names, i));
		int k = trained(&r->ts, pname);
		struct ir_tensor want;
		if (k < 0 || read_file_pb(f, json_string_value(json_array_get(files, i)), &want) < 0) {
			missing++;
			continue;
		}
		double e = excess(&vals[k], &want, rtol, atol);
		if (e > worst) {
			worst = e;
			worst_name = pname;
		}
		ir_tensor_free(&want);
	}
	TAP_OK(missing == 0 && worst <= 1, "%s: %s (worst %.3g of tolerance at %s, %d missing)",
	       f->dir + strlen(root) + 1, what, worst, worst_name, missing);
}

static void check_grads_and_sgd(const char *name, enum ir_dtype compute, double rtol, double atol)
{
	struct fixture f;
	struct run r;
	struct train_opts o;
	if (fixture_open(&f, name) < 0) {
		TAP_OK(0, "%s: train.json readable", name);
		return;
	}
	train_opts_init(&o);
	o.optim = TRAIN_SGD;
	o.lr = jnum(f.j, "lr", 0.1);
	o.compute = compute;
	const char *cname = ir_dtype_name(compute);
	if (run_open(&r, &f, &o) < 0) {
		TAP_OK(0, "%s (%s): train step built and inputs read: %s", name, cname, ir_error());
		json_decref(f.j);
		return;
	}
	TAP_OK(r.ts.nparams == (int)json_array_size(json_object_get(f.j, "params")),
	       "%s (%s): %d trained parameters, PyTorch %zu", name, cname, r.ts.nparams,
	       json_array_size(json_object_get(f.j, "params")));
	/* The gradients become extra outputs after the documented ones. */
	int base = ir_graph_noutputs(r.ts.g);
	for (int i = 0; i < r.ts.nparams; i++)
		ir_graph_add_output(r.ts.g, r.ts.grads[i], NULL);
	int nout = ir_graph_noutputs(r.ts.g);
	struct ir_tensor *out = calloc((size_t)nout, sizeof *out);
	if (run_step(&r, out) < 0) {
		TAP_OK(0, "%s (%s): step runs: %s", name, cname, ir_error());
	} else {
		double want = jnum(f.j, "loss_f64", NAN);
		TAP_NEAR(ir_tensor_get_f64(&out[0], 0), want, compute == IR_F64 ? 1e-8 : rtol,
			 "%s (%s): loss equals PyTorch's", name, cname);
		check_params(&f, json_object_get(f.j, "grads"), &r, out + base, rtol, atol, "gradients");
		if (compute == IR_F64)
			check_params(&f, json_object_get(f.j, "sgd"), &r, r.pval, 1e-6, 1e-6,
				     "parameters after one SGD step (PyTorch's in f32)");
	}
	free_outputs(out, nout);
	run_close(&r);
	json_decref(f.j);
}

static void optimizer_from_json(json_t *oj, struct train_opts *o)
{
	const char *n = jstr(oj, "name");
	bool nesterov = json_is_true(json_object_get(oj, "nesterov"));
	o->optim = !strcmp(n, "momentum")   ? (nesterov ? TRAIN_NESTEROV : TRAIN_MOMENTUM)
		   : !strcmp(n, "nesterov") ? TRAIN_NESTEROV
		   : !strcmp(n, "adam")     ? TRAIN_ADAM
					    : TRAIN_ADAMW;
	o->lr = jnum(oj, "lr", o->lr);
	o->momentum = jnum(oj, "momentum", o->momentum);
	json_t *betas = json_object_get(oj, "betas");
	if (betas) {
		o->beta1 = json_number_value(json_array_get(betas, 0));
		o->beta2 = json_number_value(json_array_get(betas, 1));
	}
	o->eps = jnum(oj, "eps", o->eps);
	o->weight_decay = jnum(oj, "weight_decay", 0);
	o->clip_norm = jnum(oj, "max_norm", 0);
	if (json_object_get(oj, "warmup")) {
		o->sched = TRAIN_LR_COSINE;
		o->warmup = (int64_t)jnum(oj, "warmup", 0);
		o->total = (int64_t)jnum(oj, "total", 0);
	}
}

/* S steps of one optimizer on the same batch; losses, norms, parameters. */
static void check_optimizer(const struct fixture *f, json_t *oj)
{
	struct train_opts o;
	struct run r;
	train_opts_init(&o);
	o.compute = IR_F64;
	optimizer_from_json(oj, &o);
	const char *name = jstr(oj, "name");
	int steps = (int)jnum(oj, "steps", 0);
	const char *fname = f->dir + strlen(root) + 1;
	if (run_open(&r, f, &o) < 0) {
		TAP_OK(0, "%s %s: built: %s", fname, name, ir_error());
		return;
	}
	int nout = ir_graph_noutputs(r.ts.g);
	struct ir_tensor *out = calloc((size_t)nout, sizeof *out);
	json_t *losses = json_object_get(oj, "losses"), *norms = json_object_get(oj, "grad_norms");
	double worst_loss = 0, worst_norm = 0;
	int rc = 0;
	for (int s = 0; s < steps && rc == 0; s++) {
		rc = run_step(&r, out);
		if (rc < 0)
			break;
		double l = ir_tensor_get_f64(&out[0], 0), want = json_number_value(json_array_get(losses, s));
		worst_loss = fmax(worst_loss, fabs(l - want) / fabs(want));
		if (norms) {
			double nw = json_number_value(json_array_get(norms, s));
			worst_norm = fmax(worst_norm, fabs(ir_tensor_get_f64(&out[1], 0) - nw) / nw);
		}
		for (int i = 0; i < nout; i++)
			ir_tensor_free(&out[i]);
	}
	TAP_OK(rc == 0 && worst_loss < 1e-8, "%s %s: %d steps run, losses equal PyTorch's (rel %.2g)%s", fname, name,
	       steps, worst_loss, rc < 0 ? ir_error() : "");
	if (norms)
		TAP_OK(worst_norm < 1e-7,
		       "%s %s: gradient norms before clipping equal PyTorch's (rel %.2g, f32 output)", fname, name,
		       worst_norm);
	char what[128];
	snprintf(what, sizeof what, "%s: parameters after %d steps (1e-6 relative)", name, steps);
	if (rc == 0)
		check_params(f, json_object_get(oj, "files"), &r, r.pval, 1e-6, 1e-7, what);
	json_t *lrs = json_object_get(oj, "lrs");
	double worst_lr = 0;
	for (size_t s = 0; s < json_array_size(lrs); s++)
		worst_lr = fmax(worst_lr,
				fabs(train_lr_at(&o, (int64_t)s) - json_number_value(json_array_get(lrs, s))));
	if (lrs)
		TAP_OK(worst_lr < 1e-12, "%s %s: warmup + cosine learning rates equal LambdaLR's", fname, name);
	free_outputs(out, nout);
	run_close(&r);
}

static void check_optimizers(const char *name)
{
	struct fixture f;
	if (fixture_open(&f, name) < 0) {
		TAP_OK(0, "%s: train.json readable", name);
		return;
	}
	json_t *list = json_object_get(f.j, "optimizers");
	for (size_t i = 0; i < json_array_size(list); i++)
		check_optimizer(&f, json_array_get(list, i));
	json_t *sched = json_object_get(f.j, "schedule");
	if (sched)
		check_optimizer(&f, sched);
	json_decref(f.j);
}

/* An op without a gradient rule between a parameter and the loss: the
 * error names the op and the parameter. */
static void check_no_rule(void)
{
	static const char text[] = "pcc-ir 1\n"
				   "input %0 \"idx\" : i64[2]\n"
				   "param %1 \"table\" : f32[3] = hex \"0000803f0000004000004040\"\n"
				   "param %2 \"rows\" : f32[2] = hex \"0000803f00000040\"\n"
				   "%3 : f32[3] = scatter %1, %0, %2 mode=max\n"
				   "%4 : f32[] = reduce_sum %3 axes=[0]\n"
				   "output %4 \"loss\"\n";
	struct ir_graph *g = ir_parse(text);
	struct train_opts o;
	struct train_step ts;
	train_opts_init(&o);
	int rc = g ? train_build(g, &o, &ts) : -1;
	TAP_OK(rc == -ENOTSUP && strstr(ir_error(), "scatter") && strstr(ir_error(), "\"table\""),
	       "a scatter max on the path: -ENOTSUP naming the op and the parameter (%s)", ir_error());
	if (g)
		train_step_free(&ts);
}

/* BatchNorm's running statistics after one step, against the fixture's
 * (ONNX's definition: biased batch variance): from the step's outputs, and
 * from the file pcc train saves. */
static void check_running_stats(void)
{
	struct fixture f;
	struct run r;
	struct train_opts o;
	if (fixture_open(&f, "resnet_train") < 0) {
		TAP_OK(0, "resnet_train: train.json readable");
		return;
	}
	train_opts_init(&o);
	o.optim = TRAIN_SGD;
	o.lr = jnum(f.j, "lr", 0.1);
	o.compute = IR_F64;
	json_t *names = json_object_get(f.j, "bn_stats"), *files = json_object_get(f.j, "bn_files");
	size_t nstats = json_array_size(names);
	if (run_open(&r, &f, &o) < 0) {
		TAP_OK(0, "resnet_train: train step built: %s", ir_error());
		json_decref(f.j);
		return;
	}
	TAP_OK(nstats == 12 && r.nupd == (int)nstats,
	       "resnet_train: %d running statistics updated, "
	       "fixture %zu",
	       r.nupd, nstats);
	int wrongly = 0;
	for (int i = 0; i < r.ts.nparams; i++)
		wrongly += strstr(r.ts.params[i]->name, "running") != NULL;
	TAP_OK(wrongly == 0 && r.ts.nparams == 20,
	       "resnet_train: %d trained parameters, %d of them "
	       "running statistics",
	       r.ts.nparams, wrongly);
	int nout = ir_graph_noutputs(r.ts.g), base = 2 + r.ts.nparams + r.ts.nstate;
	struct ir_tensor *out = calloc((size_t)nout, sizeof *out);
	double worst = 0;
	int matched = 0;
	if (run_step(&r, out) == 0) {
		for (int j = 0; j < r.nupd; j++) {
			const char *pn = ir_graph_update_param(r.ts.g, j)->name;
			for (size_t k = 0; k < nstats; k++) {
				struct ir_tensor want;
				if (strcmp(pn, json_string_value(json_array_get(names, k))) ||
				    read_file_pb(&f, json_string_value(json_array_get(files, k)), &want) < 0)
					continue;
				worst = fmax(worst, excess(&out[base + j], &want, 1e-6, 1e-7));
				matched++;
				ir_tensor_free(&want);
			}
		}
	}
	TAP_OK(matched == (int)nstats && worst <= 1,
	       "resnet_train: running statistics after one step equal the reference "
	       "(%d matched, worst %.3g of tolerance)",
	       matched, worst);
	free_outputs(out, nout);
	run_close(&r);

	/* pcc train writes them into the saved model. */
	char model[1300], set[1300], saved[1300], tmpl[] = "/tmp/pcc-bn-XXXXXX";
	const char *tmp = mkdtemp(tmpl);
	snprintf(model, sizeof model, "%s/model.onnx", f.dir);
	snprintf(set, sizeof set, "%s/test_data_set_0", f.dir);
	snprintf(saved, sizeof saved, "%s/trained.onnx", tmp ? tmp : "/tmp");
	struct train_run_opts ro = { .model = model, .in_dir = set, .save = saved, .steps = 1 };
	train_opts_init(&ro.t);
	onnx_import_opts_init(&ro.imp);
	ro.t = o;
	ro.t.loss = jstr(f.j, "loss");
	int rc = train_run(&ro);
	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	imp.updates = true; /* else the unread running statistics are dropped */
	struct ir_graph *g = rc == 0 ? onnx_import(saved, &imp, NULL) : NULL;
	worst = 0;
	matched = 0;
	for (int i = 0; g && i < ir_graph_nparams(g); i++) {
		const struct ir_value *p = ir_graph_param(g, i);
		for (size_t k = 0; k < nstats; k++) {
			struct ir_tensor got, want;
			if (strcmp(p->name, json_string_value(json_array_get(names, k))) ||
			    read_file_pb(&f, json_string_value(json_array_get(files, k)), &want) < 0)
				continue;
			if (interp_load_param(p, &got) == 0) {
				worst = fmax(worst, excess(&got, &want, 1e-6, 1e-7));
				matched++;
				ir_tensor_free(&got);
			}
			ir_tensor_free(&want);
		}
	}
	TAP_OK(matched == (int)nstats && worst <= 1,
	       "pcc train saves the updated running statistics (%d matched, worst %.3g) %s", matched, worst,
	       rc ? ir_error() : "");
	ir_graph_free(g);
	remove(saved);
	if (tmp)
		rmdir(tmp);
	json_decref(f.j);
}

/* Gradient accumulation: with plain SGD, one step over micro-batches A and
 * B from p gives exactly the mean of the steps over A alone and over B
 * alone (p - lr (gA + gB) / 2). Also: the loss and gradient are their mean,
 * not their sum, and the update ran once. */
static int saved_params(const char *path, int *n, struct ir_tensor *t, int max)
{
	struct ir_graph *g = onnx_import(path, NULL, NULL);
	if (!g)
		return -1;
	*n = 0;
	for (int i = 0; i < ir_graph_nparams(g) && *n < max; i++)
		if (interp_load_param(ir_graph_param(g, i), &t[(*n)++]) < 0)
			break;
	ir_graph_free(g);
	return 0;
}

static void check_accumulation(void)
{
	char dir[1200], a[1300], b[1300], ab[1300], model[1300], tmpl[] = "/tmp/pcc-accum-XXXXXX";
	const char *tmp = mkdtemp(tmpl);
	snprintf(dir, sizeof dir, "%s/tinytext", root);
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	struct train_run_opts o = { .model = model };
	train_opts_init(&o.t);
	onnx_import_opts_init(&o.imp);
	o.t.optim = TRAIN_SGD;
	o.t.lr = 0.5;
	o.t.compute = IR_F64;
	int rc = 0;
	char set[1300];
	snprintf(set, sizeof set, "%s/test_data_set_0", dir);
	snprintf(a, sizeof a, "%s/a.onnx", tmp);
	o.in_dir = set, o.save = a;
	rc |= train_run(&o);
	snprintf(set, sizeof set, "%s/test_data_set_1", dir);
	snprintf(b, sizeof b, "%s/b.onnx", tmp);
	o.in_dir = set, o.save = b;
	rc |= train_run(&o);
	snprintf(ab, sizeof ab, "%s/ab.onnx", tmp);
	o.in_dir = dir, o.save = ab, o.t.accum = 2;
	rc |= train_run(&o);
	enum { MAXP = 64 };
	static struct ir_tensor pa[MAXP], pb[MAXP], pab[MAXP], p0[MAXP];
	int na = 0, nb = 0, nab = 0, n0 = 0;
	double worst = 0, moved = 0;
	if (rc == 0 && saved_params(a, &na, pa, MAXP) == 0 && saved_params(b, &nb, pb, MAXP) == 0 &&
	    saved_params(ab, &nab, pab, MAXP) == 0 && saved_params(model, &n0, p0, MAXP) == 0 && na == nab &&
	    nb == nab && n0 == nab) {
		for (int i = 0; i < nab; i++)
			for (int64_t k = 0; k < ir_shape_numel(&pab[i].shape); k++) {
				double want = 0.5 * (ir_tensor_get_f64(&pa[i], k) + ir_tensor_get_f64(&pb[i], k));
				double got = ir_tensor_get_f64(&pab[i], k);
				worst = fmax(worst, fabs(got - want));
				moved = fmax(moved, fabs(got - ir_tensor_get_f64(&p0[i], k)));
			}
	} else {
		rc = -1;
	}
	TAP_OK(rc == 0 && worst < 1e-6 && moved > 1e-3,
	       "accumulating 2 micro-batches = the mean of their SGD steps (worst %.2g, moved %.2g) %s", worst, moved,
	       rc ? ir_error() : "");
	for (int i = 0; i < MAXP; i++) {
		ir_tensor_free(&pa[i]);
		ir_tensor_free(&pb[i]);
		ir_tensor_free(&pab[i]);
		ir_tensor_free(&p0[i]);
	}
	remove(a);
	remove(b);
	remove(ab);
	rmdir(tmp);
}

/* Peak bytes of the temporaries the update part makes, each live from its
 * node to its last reader there (or to its node alone), walking it in
 * order. The new values, graph outputs, are written over their
 * parameters and slots: not counted. */
static double update_peak(const struct train_step *ts)
{
	const struct ir_graph *g = ts->g;
	int nn = ir_graph_nnodes(g), nv = ir_graph_nvalues(g);
	int *last = calloc((size_t)nv + 1, sizeof *last);
	bool *out = calloc((size_t)nv + 1, sizeof *out);
	for (int i = 0; i < ir_graph_noutputs(g); i++)
		out[ir_graph_output(g, i)->id] = true;
	for (int i = ts->update_first; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nout; j++)
			last[n->out[j]->id] = i;
		for (int j = 0; j < n->nin; j++)
			last[n->in[j]->id] = i;
	}
	double live = 0, peak = 0;
	for (int i = ts->update_first; i < nn; i++) {
		const struct ir_node *n = ir_graph_node(g, i);
		for (int j = 0; j < n->nout; j++)
			if (!out[n->out[j]->id])
				live += (double)ir_shape_numel(&n->out[j]->shape) * ir_dtype_size(n->out[j]->dtype);
		peak = live > peak ? live : peak;
		for (int j = 0; j < n->nin + n->nout; j++) {
			const struct ir_value *v = j < n->nin ? n->in[j] : n->out[j - n->nin];
			if (v->kind != IR_VAL_NODE || v->def->id < ts->update_first || out[v->id] || last[v->id] != i)
				continue;
			live -= (double)ir_shape_numel(&v->shape) * ir_dtype_size(v->dtype);
			last[v->id] = -1; /* once, even when read twice */
		}
	}
	free(last);
	free(out);
	return peak;
}

/* The order of a 16-bit train step, which lowering follows: each
 * gradient's convert to f32 right after its 16-bit gradient is made (not
 * every one at the end of the backward pass); and in f16, the update
 * making each parameter's unscaled gradient (loss scaling) just before it
 * reads it, so that the update never holds every parameter's at once: its
 * temporaries at their peak are bf16's (no loss scaling) and one
 * parameter's unscaled gradient at most (19597 bytes against bf16's 8204
 * when every unscaled gradient was made first, 12305 now). */
static void check_step_order(void)
{
	struct fixture f;
	if (fixture_open(&f, "gpt") < 0) {
		TAP_OK(0, "gpt: train.json readable");
		return;
	}
	static const enum ir_dtype dt[] = { IR_BF16, IR_F16 };
	double peak[2] = { 0, 0 }, largest = 0, all = 0;
	for (int k = 0; k < 2; k++) {
		struct train_opts o;
		struct run r;
		train_opts_init(&o);
		o.optim = TRAIN_ADAMW;
		o.compute = dt[k];
		const char *cname = ir_dtype_name(dt[k]);
		if (run_open(&r, &f, &o) < 0) {
			TAP_OK(0, "gpt (%s): train step built: %s", cname, ir_error());
			json_decref(f.j);
			return;
		}
		int converts = 0, after = 0;
		largest = all = 0;
		for (int i = 0; i < r.ts.nparams; i++) {
			const struct ir_value *v = r.ts.grads[i];
			double b = (double)ir_shape_numel(&v->shape) * 4; /* f32 */
			largest = b > largest ? b : largest;
			all += b;
			if (v->kind != IR_VAL_NODE || v->def->op != IR_OP_CONVERT)
				continue;
			converts++;
			const struct ir_value *x = v->def->in[0];
			after += x->kind == IR_VAL_NODE && v->def->id == x->def->id + 1;
		}
		TAP_OK(converts == r.ts.nparams && after == converts,
		       "gpt (%s): each of %d gradients is converted to f32 right after its %s gradient is made (%d "
		       "are)",
		       cname, r.ts.nparams, cname, after);
		peak[k] = update_peak(&r.ts);
		run_close(&r);
	}
	/* one unscaled gradient and the scale broadcast to its shape (a view
	 * lowering fuses, counted here), and a few scalars */
	TAP_OK(peak[1] <= peak[0] + 2 * largest + 64 && all > 4 * largest,
	       "gpt: the f16 update's temporaries peak at %.0f bytes, bf16's at %.0f: at most one parameter's "
	       "unscaled gradient more (the largest %.0f bytes; all of them %.0f)",
	       peak[1], peak[0], largest, all);
	json_decref(f.j);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_train TESTS_TRAIN_DIR\n");
		return 2;
	}
	root = argv[1];
	static const char *const models[] = {
		"mlp_loss", "mlp", "gpt_loss", "gpt", "bert", "vit", "resnet_train", "moe"
	};
	for (size_t i = 0; i < sizeof models / sizeof *models; i++)
		check_grads_and_sgd(models[i], IR_F64, 1e-6, 1e-7);
	/* f32 and bf16: the same gradients at their precision. */
	check_grads_and_sgd("mlp_loss", IR_F32, 1e-4, 1e-4);
	check_grads_and_sgd("gpt", IR_F32, 1e-3, 1e-4);
	check_grads_and_sgd("mlp", IR_BF16, 2e-2, 3e-2);
	check_optimizers("mlp");
	check_optimizers("gpt");
	check_no_rule();
	check_running_stats();
	check_accumulation();
	check_step_order();
	return tap_done();
}
