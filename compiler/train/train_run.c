/*
 * train_run.c: `pcc train`, the train step run on the reference
 * interpreter. Each step runs the micro-batch part of the graph (loss and
 * gradients) once per micro-batch, averages the gradients and runs the
 * update part once: the same split the data-parallel and pipeline runtimes
 * use, with the gradient reduction between the two parts. --eval-data runs
 * the micro-batch part alone on held-out sets and keeps only the loss.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/interp/interp.h"
#include "compiler/train/train.h"
#include "ir/npy.h"
#include "ir/steplog.h"
#include "kernels/kernels.h"

struct dataset {
	struct ir_tensor *in; /* [ndata] */
};

struct trainer {
	const struct train_run_opts *o;
	struct train_step ts;
	int nsets;
	struct dataset *sets;
	int nevals;
	struct dataset *evals;    /* --eval-data */
	struct ir_tensor *params; /* current trained params [nparams] */
	struct ir_tensor *state;  /* [nstate] */
	struct ir_tensor *bufs;   /* updated model state [nupdates] (running statistics) */
	int nbufs;
	struct ir_tensor *vals; /* the value table [nvalues] */
	bool *present, *keep;
};

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* t checked against input v (labels of int32 widen to int64). */
static int conform(const struct ir_value *v, struct ir_tensor *t, const char *file, bool labels)
{
	char want[IR_SHAPE_STR_MAX], got[IR_SHAPE_STR_MAX];
	bool widen = v->dtype == IR_I64 && ir_dtype_is_int(t->dtype) && t->dtype != IR_I64;
	if ((t->dtype != v->dtype && !widen) || !ir_shape_eq(&t->shape, &v->shape))
		return ir_errorf(-EINVAL, "%s: input \"%s\" expects %s%s%s, got %s%s", file, v->name,
				 ir_dtype_name(v->dtype), ir_shape_str(&v->shape, want, sizeof want),
				 labels ? " (integer class indices)" : "", ir_dtype_name(t->dtype),
				 ir_shape_str(&t->shape, got, sizeof got));
	if (widen) {
		struct ir_tensor w;
		int rc = ir_tensor_alloc(&w, IR_I64, &t->shape);
		if (rc < 0)
			return rc;
		for (int64_t i = 0; i < ir_shape_numel(&t->shape); i++)
			ir_tensor_set_i64(&w, i, ir_tensor_get_i64(t, i));
		ir_tensor_free(t);
		*t = w;
	}
	return 0;
}

/* Whether name is an input bound as a constant (pcc train --const). */
static bool bound(const struct trainer *tr, const char *name)
{
	for (int i = 0; name && i < tr->o->imp.nconsts; i++)
		if (!strcmp(tr->o->imp.consts[i].name, name))
			return true;
	return false;
}

/* Reads one set: dir/input_N.pb matched to the data inputs by name, else
 * by position among the files not named after an input bound as a
 * constant (those are skipped: the data set is the model's, whole). */
static int read_set(struct trainer *tr, const char *dir, struct dataset *d)
{
	int nd = tr->ts.ndata, rc = 0;
	char path[4200];
	d->in = ir_calloc((size_t)nd + 1, sizeof *d->in);
	if (!d->in)
		return -ENOMEM;
	if (ir_npz_path(dir)) /* numpy.savez: an array per data input, by name or arr_N */
		for (int i = 0; i < nd && rc == 0; i++) {
			const struct ir_value *v = ir_graph_input(tr->ts.g, i);
			if ((rc = ir_npz_read(dir, v->name, i, &d->in[i])) == 0 &&
			    (rc = conform(v, &d->in[i], dir, v->classes > 0)) == 0 &&
			    (rc = ir_labels_check(v, &d->in[i])) < 0)
				ir_error_prefix("%s", dir);
		}
	for (int f = 0, pos = 0; rc == 0 && !ir_npz_path(dir); f++) {
		ir_input_path(path, sizeof path, dir, f);
		if (!is_file(path))
			break;
		struct ir_tensor t;
		char *name = NULL;
		rc = onnx_tensor_read(path, &t, &name);
		if (rc < 0)
			break;
		if (bound(tr, name)) {
			ir_tensor_free(&t);
			ir_free(name);
			continue;
		}
		int k = pos++, at = -1; /* k: the file's place among those read */
		for (int i = 0; i < nd && at < 0 && name; i++)
			if (ir_graph_input(tr->ts.g, i)->name && !strcmp(ir_graph_input(tr->ts.g, i)->name, name))
				at = i;
		if ((at < 0 || d->in[at].data) && k < nd && !d->in[k].data)
			at = k; /* unnamed, or the name is taken: by position */
		ir_free(name);
		if (at < 0 || d->in[at].data) {
			ir_tensor_free(&t);
			rc = ir_errorf(-EINVAL, "%s: matches no input of the train step (inputs: %d)", path, nd);
			break;
		}
		const struct ir_value *v = ir_graph_input(tr->ts.g, at);
		rc = conform(v, &t, path, v->classes > 0);
		if (rc == 0 && (rc = ir_labels_check(v, &t)) < 0)
			ir_error_prefix("%s", path);
		if (rc < 0) {
			ir_tensor_free(&t);
			break;
		}
		d->in[at] = t;
	}
	for (int i = 0; rc == 0 && i < nd; i++)
		if (!d->in[i].data)
			rc = ir_errorf(-EINVAL, "%s: no input_N.pb for input \"%s\"", dir,
				       ir_graph_input(tr->ts.g, i)->name);
	return rc;
}

/* scandir's filter: numpy.savez's files */
static int is_npz(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return n > 4 && !strcmp(e->d_name + n - 4, ".npz");
}

/* The sets of dir (-i or --eval-data): input_N files in it, or its
 * test_data_set_K/, or the .npz file it is, or the .npz files in it (in
 * name order). */
static int read_sets(struct trainer *tr, const char *dir, struct dataset **sets, int *nsets)
{
	char path[4200];
	struct dirent **npz = NULL;
	ir_input_path(path, sizeof path, dir, 0);
	bool flat = ir_npz_path(dir) || is_file(path);
	int n = 0, nnpz = 0, rc = 0;
	for (; !flat; n++) {
		snprintf(path, sizeof path, "%s/test_data_set_%d", dir, n);
		if (!is_dir(path))
			break;
	}
	if (!flat && n == 0 && is_dir(dir) && (nnpz = scandir(dir, &npz, is_npz, alphasort)) > 0)
		n = nnpz;
	if (flat)
		n = 1;
	if (n == 0)
		return ir_errorf(-ENOENT,
				 "%s: no input_0.pb (or .npy), no test_data_set_0/ (backend-test layout) and no .npz "
				 "files",
				 dir);
	*sets = ir_calloc((size_t)n, sizeof **sets);
	*nsets = *sets ? n : 0;
	for (int k = 0; k < n && rc == 0; k++) {
		if (nnpz > 0)
			snprintf(path, sizeof path, "%s/%s", dir, npz[k]->d_name);
		else if (!flat)
			snprintf(path, sizeof path, "%s/test_data_set_%d", dir, k);
		rc = *sets ? read_set(tr, flat ? dir : path, &(*sets)[k]) : -ENOMEM;
	}
	for (int k = 0; k < nnpz; k++)
		free(npz[k]);
	free(npz);
	return rc;
}

static void lend(struct trainer *tr, const struct ir_value *v, const struct ir_tensor *t)
{
	tr->vals[v->id] = *t;
	tr->present[v->id] = tr->keep[v->id] = true;
}

/* Forgets borrowed entries and frees what the walk left. */
static void clear_table(struct trainer *tr, const bool *borrowed)
{
	for (int v = 0; v < ir_graph_nvalues(tr->ts.g); v++) {
		if (tr->present[v] && !borrowed[v])
			ir_tensor_free(&tr->vals[v]);
		tr->present[v] = tr->keep[v] = false;
		memset(&tr->vals[v], 0, sizeof tr->vals[v]);
	}
}

static void lend_params_state(struct trainer *tr, bool *borrowed)
{
	for (int i = 0; i < tr->ts.nparams; i++) {
		lend(tr, tr->ts.params[i], &tr->params[i]);
		borrowed[tr->ts.params[i]->id] = true;
	}
	for (int j = 0; j < tr->ts.nstate; j++) {
		lend(tr, tr->ts.state[j], &tr->state[j]);
		borrowed[tr->ts.state[j]->id] = true;
	}
	for (int j = 0; j < tr->nbufs; j++) {
		lend(tr, ir_graph_update_param(tr->ts.g, j), &tr->bufs[j]);
		borrowed[ir_graph_update_param(tr->ts.g, j)->id] = true;
	}
}

/* After a micro-batch: the running statistics it computed replace the old. */
static void take_updates(struct trainer *tr, const bool *borrowed)
{
	for (int j = 0; j < tr->nbufs; j++) {
		int v = ir_graph_update_value(tr->ts.g, j)->id;
		if (borrowed[v] || !tr->present[v])
			continue;
		ir_tensor_free(&tr->bufs[j]);
		tr->bufs[j] = tr->vals[v];
		tr->present[v] = false;
	}
}

/* Adds src into acc (allocated on first use), both of one dtype/shape. */
static int accumulate(struct ir_tensor *acc, const struct ir_tensor *src, double scale)
{
	if (!acc->data) {
		int rc = ir_tensor_alloc(acc, src->dtype, &src->shape);
		if (rc < 0)
			return rc;
	}
	for (int64_t i = 0; i < ir_shape_numel(&src->shape); i++)
		ir_tensor_set_f64(acc, i, ir_tensor_get_f64(acc, i) + scale * ir_tensor_get_f64(src, i));
	return 0;
}

/* One step over micro-batches first .. first+accum-1 (cyclic). */
static int step(struct trainer *tr, int64_t t, double *loss, double *norm)
{
	struct train_step *ts = &tr->ts;
	int nv = ir_graph_nvalues(ts->g), nn = ir_graph_nnodes(ts->g), m = tr->o->t.accum, rc = 0;
	bool *borrowed = ir_calloc((size_t)nv, sizeof *borrowed);
	struct ir_tensor *gsum = ir_calloc((size_t)ts->nparams, sizeof *gsum);
	if (!borrowed || !gsum) {
		rc = -ENOMEM;
		goto done;
	}
	*loss = 0;
	for (int k = 0; k < m && rc == 0; k++) {
		const struct dataset *d = &tr->sets[(t * m + k) % tr->nsets];
		memset(borrowed, 0, (size_t)nv * sizeof *borrowed);
		for (int i = 0; i < ts->ndata; i++) {
			lend(tr, ir_graph_input(ts->g, i), &d->in[i]);
			borrowed[ir_graph_input(ts->g, i)->id] = true;
		}
		lend_params_state(tr, borrowed);
		tr->keep[ts->loss->id] = true;
		for (int i = 0; i < ts->nparams; i++)
			tr->keep[ts->grads[i]->id] = true;
		for (int j = 0; j < tr->nbufs; j++)
			tr->keep[ir_graph_update_value(ts->g, j)->id] = true;
		rc = interp_run_range(ts->g, 0, ts->update_first, tr->vals, tr->present, tr->keep);
		if (rc == 0)
			*loss += ir_tensor_get_f64(&tr->vals[ts->loss->id], 0) / m;
		for (int i = 0; rc == 0 && i < ts->nparams; i++)
			rc = accumulate(&gsum[i], &tr->vals[ts->grads[i]->id], 1.0 / m);
		if (rc == 0)
			take_updates(tr, borrowed);
		clear_table(tr, borrowed);
	}
	if (rc < 0)
		goto done;
	/* The update part: gradients (averaged), parameters and state in. */
	memset(borrowed, 0, (size_t)nv * sizeof *borrowed);
	lend_params_state(tr, borrowed);
	for (int i = 0; i < ts->nparams; i++) {
		lend(tr, ts->grads[i], &gsum[i]);
		borrowed[ts->grads[i]->id] = true;
	}
	int no = ir_graph_noutputs(ts->g) - tr->nbufs; /* the updates are taken */
	for (int o = 1; o < no; o++)
		tr->keep[ir_graph_output(ts->g, o)->id] = true;
	rc = interp_run_range(ts->g, ts->update_first, nn, tr->vals, tr->present, tr->keep);
	if (rc == 0) {
		*norm = ir_tensor_get_f64(&tr->vals[ir_graph_output(ts->g, 1)->id], 0);
		/* Move the new parameters and state (outputs 2..) out of the
		 * table; a value the step left unchanged is still the old one. */
		for (int o = 2; o < no; o++) {
			int v = ir_graph_output(ts->g, o)->id;
			struct ir_tensor *dst = o - 2 < ts->nparams ? &tr->params[o - 2]
								    : &tr->state[o - 2 - ts->nparams];
			if (borrowed[v] || !tr->present[v])
				continue;
			ir_tensor_free(dst);
			*dst = tr->vals[v];
			tr->present[v] = false;
		}
	}
	clear_table(tr, borrowed);
done:
	for (int i = 0; gsum && i < ts->nparams; i++)
		ir_tensor_free(&gsum[i]);
	ir_free(gsum);
	ir_free(borrowed);
	return rc;
}

/* --eval-data: the mean loss over the held-out sets, each run through
 * the micro-batch part (loss and gradients, the gradients dropped) with
 * the parameters, state and running statistics as they are, none of them
 * changed. */
static int evaluate(struct trainer *tr, double *loss)
{
	struct train_step *ts = &tr->ts;
	int nv = ir_graph_nvalues(ts->g), rc = 0;
	bool *borrowed = ir_calloc((size_t)nv, sizeof *borrowed);
	if (!borrowed)
		return ir_errorf(-ENOMEM, "out of memory evaluating");
	*loss = 0;
	for (int k = 0; k < tr->nevals && rc == 0; k++) {
		memset(borrowed, 0, (size_t)nv * sizeof *borrowed);
		for (int i = 0; i < ts->ndata; i++) {
			lend(tr, ir_graph_input(ts->g, i), &tr->evals[k].in[i]);
			borrowed[ir_graph_input(ts->g, i)->id] = true;
		}
		lend_params_state(tr, borrowed);
		tr->keep[ts->loss->id] = true;
		rc = interp_run_range(ts->g, 0, ts->update_first, tr->vals, tr->present, tr->keep);
		if (rc == 0)
			*loss += ir_tensor_get_f64(&tr->vals[ts->loss->id], 0) / tr->nevals;
		clear_table(tr, borrowed);
	}
	ir_free(borrowed);
	if (rc < 0)
		ir_error_prefix("evaluating on %s", tr->o->eval_data);
	return rc;
}

/* The trained parameters and updated state (running statistics) in the
 * initializers' dtype (f32 back from f64). */
static int save(const struct trainer *tr)
{
	const struct train_step *ts = &tr->ts;
	int n = ts->nparams + tr->nbufs;
	const char **names = ir_calloc((size_t)n, sizeof *names);
	struct ir_tensor *vals = ir_calloc((size_t)n, sizeof *vals);
	int rc = names && vals ? 0 : -ENOMEM;
	for (int i = 0; rc == 0 && i < n; i++) {
		bool param = i < ts->nparams;
		const struct ir_tensor *src = param ? &tr->params[i] : &tr->bufs[i - ts->nparams];
		names[i] = param ? ts->params[i]->name : ir_graph_update_param(ts->g, i - ts->nparams)->name;
		enum ir_dtype to = tr->o->t.compute == IR_F64 ? IR_F32 : src->dtype;
		rc = ir_tensor_alloc(&vals[i], to, &src->shape);
		for (int64_t k = 0; rc == 0 && k < ir_shape_numel(&vals[i].shape); k++)
			ir_tensor_set_f64(&vals[i], k, ir_tensor_get_f64(src, k));
	}
	if (rc == 0)
		rc = onnx_save_params(tr->o->model, tr->o->save, n, names, vals);
	for (int i = 0; vals && i < n; i++)
		ir_tensor_free(&vals[i]);
	ir_free(vals);
	ir_free(names);
	return rc;
}

static int setup(struct trainer *tr)
{
	struct onnx_import_opts imp = tr->o->imp;
	imp.updates = true;
	struct ir_graph *g = onnx_import(tr->o->model, &imp, NULL);
	if (!g)
		return ir_error_code() ? ir_error_code() : -EINVAL;
	int rc = train_build(g, &tr->o->t, &tr->ts);
	if (rc < 0) {
		ir_error_prefix("%s", tr->o->model);
		return rc;
	}
	int nv = ir_graph_nvalues(tr->ts.g);
	tr->nbufs = ir_graph_nupdates(tr->ts.g);
	tr->bufs = ir_calloc((size_t)tr->nbufs + 1, sizeof *tr->bufs);
	tr->params = ir_calloc((size_t)tr->ts.nparams + 1, sizeof *tr->params);
	tr->state = ir_calloc((size_t)tr->ts.nstate + 1, sizeof *tr->state);
	tr->vals = ir_calloc((size_t)nv, sizeof *tr->vals);
	tr->present = ir_calloc((size_t)nv, sizeof *tr->present);
	tr->keep = ir_calloc((size_t)nv, sizeof *tr->keep);
	if (!tr->bufs || !tr->params || !tr->state || !tr->vals || !tr->present || !tr->keep)
		return ir_errorf(-ENOMEM, "out of memory setting up training");
	for (int i = 0; rc == 0 && i < tr->ts.nparams; i++)
		rc = interp_load_param(tr->ts.params[i], &tr->params[i]);
	for (int j = 0; rc == 0 && j < tr->nbufs; j++)
		rc = interp_load_param(ir_graph_update_param(tr->ts.g, j), &tr->bufs[j]);
	if (rc == 0)
		rc = train_state_init(&tr->ts, &tr->o->t, tr->state);
	if (rc == 0)
		rc = read_sets(tr, tr->o->in_dir, &tr->sets, &tr->nsets);
	if (rc == 0 && tr->o->eval_data && (rc = read_sets(tr, tr->o->eval_data, &tr->evals, &tr->nevals)) < 0)
		ir_error_prefix("--eval-data %s", tr->o->eval_data);
	return rc;
}

static void free_sets(struct trainer *tr, struct dataset *sets, int n)
{
	for (int k = 0; k < n; k++) {
		for (int i = 0; sets[k].in && i < tr->ts.ndata; i++)
			ir_tensor_free(&sets[k].in[i]);
		ir_free(sets[k].in);
	}
	ir_free(sets);
}

static void teardown(struct trainer *tr)
{
	for (int i = 0; tr->params && i < tr->ts.nparams; i++)
		ir_tensor_free(&tr->params[i]);
	for (int j = 0; tr->state && j < tr->ts.nstate; j++)
		ir_tensor_free(&tr->state[j]);
	for (int j = 0; tr->bufs && j < tr->nbufs; j++)
		ir_tensor_free(&tr->bufs[j]);
	ir_free(tr->bufs);
	free_sets(tr, tr->sets, tr->nsets);
	free_sets(tr, tr->evals, tr->nevals);
	ir_free(tr->params);
	ir_free(tr->state);
	ir_free(tr->vals);
	ir_free(tr->present);
	ir_free(tr->keep);
	train_step_free(&tr->ts);
}

/* --log-json: step t's line (samples: the first data input's batch per
 * set, accum sets a step; tokens where that input holds token ids). */
static int log_json(const struct trainer *tr, struct ir_steplog *json, int64_t t, int64_t steps, double loss,
		    double norm, double seconds, const double *eval_loss)
{
	const struct ir_tensor *in = tr->nsets && tr->ts.ndata ? &tr->sets[0].in[0] : NULL;
	double accum = tr->o->t.accum > 0 ? tr->o->t.accum : 1;
	bool ids = in && in->shape.rank >= 2 && (in->dtype == IR_I64 || in->dtype == IR_I32);
	struct ir_steprec e = { .step = (long)t + 1,
				.steps = (long)steps,
				.loss = loss,
				.grad_norm = norm,
				.lr = train_lr_at(&tr->o->t, t),
				.skipped = !isfinite(norm),
				.seconds = seconds,
				.samples = accum * (in && in->shape.rank ? (double)in->shape.dims[0] : 1),
				.tokens = ids ? accum * (double)ir_shape_numel(&in->shape) : 0,
				.evaluated = eval_loss != NULL,
				.eval_loss = eval_loss ? *eval_loss : NAN };
	return ir_steplog_write(json, &e);
}

int train_run(const struct train_run_opts *o)
{
	struct trainer tr = { .o = o };
	int64_t steps = o->steps > 0 ? o->steps : 1;
	int64_t every = o->log_every > 0 ? o->log_every : (steps + 9) / 10;
	int rc = setup(&tr);
	if (rc == 0 && o->log)
		fprintf(o->log,
			"training %d parameter tensors (%d floating point initializers left "
			"alone), %d data set%s, %d micro-batch%s per step\n",
			tr.ts.nparams, tr.ts.nfrozen, tr.nsets, tr.nsets == 1 ? "" : "s", o->t.accum,
			o->t.accum == 1 ? "" : "es");
	if (rc == 0 && o->log)
		train_params_print(&tr.ts, o->model, stderr);
	/* the step skips a non-finite gradient norm itself, or pcc stops */
	bool skips = o->t.compute == IR_F16 || o->t.skip_nonfinite;
	struct ir_steplog *json = NULL;
	if (rc == 0 && o->log_json)
		rc = ir_steplog_open(o->log_json, &json);
	for (int64_t t = 0; rc == 0 && t < steps; t++) {
		double loss = 0, norm = 0, t0 = ir_now(), ev = NAN;
		rc = step(&tr, t, &loss, &norm);
		double secs = ir_now() - t0;
		bool eval = tr.nevals && ((o->eval_every && (t + 1) % o->eval_every == 0) || t == steps - 1);
		if (rc == 0 && eval)
			rc = evaluate(&tr, &ev);
		if (rc == 0 && json)
			rc = log_json(&tr, json, t, steps, loss, norm, secs, eval ? &ev : NULL);
		if (rc < 0) {
			ir_error_prefix("step %lld", (long long)t + 1);
			break;
		}
		if (!skips && (!isfinite(loss) || !isfinite(norm))) {
			double x = isfinite(loss) ? norm : loss;
			rc = ir_errorf(-ERANGE, "step %lld: the %s is %s; stopping, nothing saved", (long long)t + 1,
				       isfinite(loss) ? "gradient norm" : "loss",
				       isnan(x) ? "nan"
				       : x > 0  ? "inf"
						: "-inf");
			break;
		}
		if (o->log && (t % every == 0 || t == steps - 1)) {
			fprintf(o->log, "step %lld  loss %.6f  grad_norm %.4g  lr %.4g", (long long)t + 1, loss,
				isfinite(norm) ? norm : INFINITY, train_lr_at(&o->t, t));
			if (!isfinite(norm) && o->t.compute == IR_F16)
				fprintf(o->log, "  (f16 gradients overflowed: step skipped, loss scale halved)");
			else if (!isfinite(norm))
				fprintf(o->log, "  (non-finite gradients: step skipped)");
			fputc('\n', o->log);
		}
		if (o->log && eval)
			fprintf(o->log, "eval %lld  eval_loss %.6f  over %d set%s\n", (long long)t + 1,
				isnan(ev) ? NAN : ev, tr.nevals, tr.nevals == 1 ? "" : "s");
	}
	if (ir_steplog_close(json) < 0 && rc == 0)
		rc = -EIO;
	if (rc == 0 && o->save)
		rc = save(&tr);
	teardown(&tr);
	return rc;
}
