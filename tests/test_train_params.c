/*
 * test_train_params.c: which initializers train (compiler/train/train_params.c)
 * and what happens to a non-finite step (pcc train, pcc-run).
 *
 * Models built with onnx_builder.h, written to a temporary directory:
 *  - "consts" (f64): parameters W, B, G, A1 among the constants an exporter
 *    stores as initializers: a 0-d Pow exponent, a [1] Pow exponent, [1]
 *    Clip bounds, a [1] epsilon added to a variance before Sqrt, a [1]
 *    Where fill and a folded cos/sin table pair. The step trains exactly
 *    W, B, G, A1; pcc train's stderr lists the constants; after one SGD
 *    step the constants are unchanged and each parameter moved by
 *    -lr * gradient, the gradient by central differences on the
 *    interpreter's forward pass (independent of autodiff). --trainable and
 *    --freeze override, the last pattern that matches deciding.
 *  - "untied" (f32): F equals E transposed: one warning line, exact; two
 *    all-ones vectors (fresh LayerNorm weights) are not reported.
 *  - "nan" (f32): Log of the data; the second data set holds a negative
 *    number, so step 2's loss is NaN: pcc train and pcc-run (argv[1],
 *    argv[2]) stop with "step 2: the loss is nan; stopping, nothing
 *    saved", exit 1, nothing written; compiled with --skip-nonfinite both
 *    skip step 2 and end with the same weights.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "onnx_builder.h"
#include "rng.h"

enum { T_DOUBLE = 11 };

static const char *pcc, *pccrun;

/* ---- building ---------------------------------------------------------------- */

static void init_f64(struct mb *b, const char *name, const char *dims, const double *v, size_t n)
{
	mb_init_raw(b, name, T_DOUBLE, dims, v, n * sizeof *v);
}

static void init_f32(struct mb *b, const char *name, const char *dims, const float *v, size_t n)
{
	mb_init_raw(b, name, T_FLOAT, dims, v, n * sizeof *v);
}

#define NX 32 /* x: [4, 8] */

/* The parameters and constants of "consts", in initializer order. */
static const char *const consts_trained[] = { "W", "B", "G", "A1" };
static const char *const consts_aside[] = { "e3", "e2", "lo", "hi", "eps", "fillv", "COS", "SIN" };
static const char *const consts_why[] = { "scalar",  "exponent", "bound",         "bound",
					  "epsilon", "fill",     "sin/cos table", "sin/cos table" };

static struct mb *model_consts(void)
{
	struct mb *b = mb_new(17);
	double w[64], bias[8], g[8], cs[32], sn[32];
	for (int i = 0; i < 64; i++)
		w[i] = 0.4 * (urand() - 0.5);
	for (int i = 0; i < 8; i++) {
		bias[i] = 0.2 * (urand() - 0.5);
		g[i] = 1 + 0.2 * (urand() - 0.5);
	}
	for (int i = 0; i < 32; i++) {
		double t = 0.3 * (i / 8 + 1) * (i % 8 + 1);
		cs[i] = cos(t);
		sn[i] = sin(t);
	}
	double e3 = 3, e2 = 2, lo = -0.5, hi = 0.5, eps = 1e-6, fill = -3, a1 = 0.7;
	mb_input(b, "x", T_DOUBLE, "4,8");
	init_f64(b, "W", "8,8", w, 64);
	init_f64(b, "B", "8", bias, 8);
	init_f64(b, "e3", "", &e3, 1);
	init_f64(b, "e2", "1", &e2, 1);
	init_f64(b, "lo", "1", &lo, 1);
	init_f64(b, "hi", "1", &hi, 1);
	init_f64(b, "eps", "1", &eps, 1);
	init_f64(b, "fillv", "1", &fill, 1);
	init_f64(b, "G", "8", g, 8);
	init_f64(b, "A1", "1", &a1, 1);
	init_f64(b, "COS", "4,8", cs, 32);
	init_f64(b, "SIN", "4,8", sn, 32);
	mb_node(b, "MatMul", "mm", "x,W", "h");
	mb_node(b, "Add", "bias", "h,B", "hb");
	mb_node(b, "Pow", "cube", "hb,e3", "p3");
	mb_node(b, "Pow", "square", "hb,e2", "p2");
	mb_node(b, "Clip", "clip", "hb,lo,hi", "c");
	mb_node(b, "Mul", "sq", "hb,hb", "sq");
	int64_t last = -1;
	Onnx__NodeProto *n = mb_node(b, "ReduceMean", "var", "sq", "v");
	mb_attr_ints(b, n, "axes", 1, &last);
	mb_node(b, "Add", "add_eps", "v,eps", "ve");
	mb_node(b, "Sqrt", "sqrt", "ve", "s");
	mb_node(b, "Div", "norm", "hb,s", "nrm");
	mb_node(b, "Mul", "scale", "nrm,G", "ng");
	mb_node(b, "Greater", "above", "hb,c", "cond");
	mb_node(b, "Where", "fill", "cond,fillv,hb", "wf");
	mb_node(b, "Mul", "slope", "hb,A1", "a");
	mb_node(b, "Mul", "rot_c", "hb,COS", "rc");
	mb_node(b, "Neg", "neg", "hb", "nh");
	mb_node(b, "Mul", "rot_s", "nh,SIN", "rs");
	mb_node(b, "Add", "rope", "rc,rs", "ro");
	mb_node(b, "Add", "s1", "p3,p2", "t1");
	mb_node(b, "Add", "s2", "t1,c", "t2");
	mb_node(b, "Add", "s3", "t2,ng", "t3");
	mb_node(b, "Add", "s4", "t3,wf", "t4");
	mb_node(b, "Add", "s5", "t4,a", "t5");
	mb_node(b, "Add", "s6", "t5,ro", "t6");
	mb_node(b, "Mul", "sq2", "t6,t6", "t7");
	n = mb_node(b, "ReduceMean", "loss", "t7", "loss");
	mb_attr_int(b, n, "keepdims", 0);
	mb_output(b, "loss", T_DOUBLE, "");
	return b;
}

static void write_input(const char *dir, int k, const char *name, enum ir_dtype dt, const struct ir_shape *s,
			const double *v)
{
	char path[600];
	struct ir_tensor t;
	if (ir_tensor_alloc(&t, dt, s) < 0)
		abort();
	for (int64_t i = 0; i < ir_shape_numel(s); i++)
		ir_tensor_set_f64(&t, i, v[i]);
	snprintf(path, sizeof path, "%s/test_data_set_%d", dir, k);
	mkdir(dir, 0777);
	mkdir(path, 0777);
	snprintf(path, sizeof path, "%s/test_data_set_%d/input_0.pb", dir, k);
	if (onnx_tensor_write(path, &t, name) < 0)
		abort();
	ir_tensor_free(&t);
}

/* ---- running pcc --------------------------------------------------------------- */

static char out_text[8192], err_text[8192];
static char err_line[8192]; /* err_text on one line (TAP descriptions), at most 300 characters */

static void slurp(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	size_t k = f ? fread(buf, 1, n - 1, f) : 0;
	buf[k] = 0;
	if (f)
		fclose(f);
}

/* Runs the shell command (stdout and stderr into out_text, err_text);
 * returns its exit status. */
static int run(const char *fmt, ...)
{
	char cmd[4096], full[5400], so[600], se[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	snprintf(so, sizeof so, "%s/stdout", tmpdir);
	snprintf(se, sizeof se, "%s/stderr", tmpdir);
	snprintf(full, sizeof full, "%s >'%s' 2>'%s' </dev/null", cmd, so, se);
	int st = system(full);
	slurp(so, out_text, sizeof out_text);
	slurp(se, err_text, sizeof err_text);
	size_t k = strlen(err_text) < 300 ? strlen(err_text) : 300;
	memcpy(err_line, err_text, k);
	err_line[k] = 0;
	for (char *c = err_line; *c; c++)
		*c = *c == '\n' ? '|' : *c;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* ---- the train step's parameters -------------------------------------------- */

static int index_of(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (name && !strcmp(names[i], name))
			return i;
	return -1;
}

/* The names ts trains, comma-separated in ts's order. */
static const char *trained_names(const struct train_step *ts, char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < ts->nparams && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? "," : "", ts->params[i]->name);
	return buf;
}

static int build(const char *model, const struct train_pattern *pats, int npats, struct train_step *ts)
{
	struct onnx_import_opts imp;
	struct train_opts o;
	onnx_import_opts_init(&imp);
	imp.updates = true;
	train_opts_init(&o);
	o.optim = TRAIN_SGD;
	o.lr = 0.1;
	o.patterns = pats;
	o.npatterns = npats;
	struct ir_graph *g = onnx_import(model, &imp, NULL);
	if (!g)
		return -1;
	return train_build(g, &o, ts);
}

static void test_rule(const char *model)
{
	struct train_step ts;
	char names[512];
	int rc = build(model, NULL, 0, &ts);
	TAP_OK(rc == 0, "consts: the train step builds (%s)", rc ? ir_error() : "ok");
	if (rc == 0) {
		bool ok = ts.nparams == 4;
		for (int i = 0; i < ts.nparams; i++)
			ok = ok && index_of(consts_trained, 4, ts.params[i]->name) >= 0;
		TAP_OK(ok, "consts: exactly W, B, G, A1 train (got %s)", trained_names(&ts, names, sizeof names));
		ok = ts.naside == 8;
		for (int i = 0; i < ts.naside; i++) {
			int k = index_of(consts_aside, 8, ts.aside[i]->name);
			ok = ok && k >= 0 && !strcmp(consts_why[k], train_aside_name(ts.aside_why[i]));
			if (k < 0 || strcmp(consts_why[k], train_aside_name(ts.aside_why[i])))
				TAP_DIAG("%s set aside as %s", ts.aside[i]->name, train_aside_name(ts.aside_why[i]));
		}
		TAP_OK(ok, "consts: the 8 constants set aside, each for its reason (%d)", ts.naside);
	}
	train_step_free(&ts);

	/* --freeze W --trainable e2: the patterns decide over the rule */
	const struct train_pattern p1[] = { { "W", false }, { "e2", true } };
	rc = build(model, p1, 2, &ts);
	TAP_OK(rc == 0 && ts.nparams == 4 && !strcmp(trained_names(&ts, names, sizeof names), "B,e2,G,A1") &&
		       ts.naside == 7,
	       "--freeze W --trainable e2: B, e2, G, A1 train, 7 constants set aside (got %s, %d)",
	       rc == 0 ? names : ir_error(), ts.naside);
	train_step_free(&ts);
	/* the last matching pattern decides: everything frozen but G */
	const struct train_pattern p2[] = { { "*", false }, { "G", true } };
	rc = build(model, p2, 2, &ts);
	TAP_OK(rc == 0 && !strcmp(trained_names(&ts, names, sizeof names), "G"),
	       "--freeze '*' --trainable G: only G trains (got %s)", rc == 0 ? names : ir_error());
	train_step_free(&ts);
	const struct train_pattern p3[] = { { "G", true }, { "*", false } };
	rc = build(model, p3, 2, &ts);
	TAP_OK(rc < 0 && strstr(ir_error(), "no parameter to train"),
	       "--trainable G --freeze '*': nothing trains, refused (%s)", rc < 0 ? ir_error() : "built");
	train_step_free(&ts);
	/* --trainable on a table: it trains, and is no longer listed */
	const struct train_pattern p4[] = { { "[CS]*", true } };
	rc = build(model, p4, 1, &ts);
	TAP_OK(rc == 0 && ts.nparams == 6 && ts.naside == 6, "--trainable '[CS]*': the tables train too (%s)",
	       rc == 0 ? trained_names(&ts, names, sizeof names) : ir_error());
	train_step_free(&ts);
}

/* The forward loss of g with parameter values vals (f64, one per param). */
static double forward(const struct ir_graph *g, const struct ir_tensor *x, struct ir_tensor *vals)
{
	int np = ir_graph_nparams(g);
	const struct ir_tensor *ps[32];
	for (int i = 0; i < np && i < 32; i++)
		ps[i] = &vals[i];
	struct ir_tensor out[1] = { 0 };
	if (interp_run_with(g, x, ps, out) < 0)
		abort();
	double l = ir_tensor_get_f64(&out[0], 0);
	ir_tensor_free(&out[0]);
	return l;
}

/* pcc train, one SGD step: the constants unchanged, each parameter moved by
 * -0.1 * the central-difference gradient of the forward loss. */
static void test_sgd_step(const char *model, const char *data)
{
	char out[600], want[2048];
	snprintf(out, sizeof out, "%s/consts_trained.onnx", tmpdir);
	int rc = run("'%s' train '%s' -i '%s' --optimizer sgd --lr 0.1 --steps 1 --save-onnx '%s'", pcc, model, data,
		     out);
	TAP_OK(rc == 0, "consts: pcc train --steps 1 succeeds (exit %d: %s)", rc, err_line);
	snprintf(want, sizeof want,
		 "pcc: %s: training 4 tensors; set aside as constants: e3 (scalar), e2 (exponent), lo (bound), hi "
		 "(bound), eps (epsilon), fillv (fill), COS (sin/cos table), SIN (sin/cos table) (--trainable "
		 "PATTERN trains one)\n",
		 model);
	TAP_OK(!strcmp(err_text, want), "consts: pcc train's stderr is the one summary line");
	if (strcmp(err_text, want))
		TAP_DIAG("got: %s", err_line);
	TAP_OK(strstr(out_text, "training 4 parameter tensors (8 floating point initializers left alone)") != NULL,
	       "consts: the log counts 4 trained, 8 left alone");

	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	struct ir_graph *g = onnx_import(model, &imp, NULL), *t = onnx_import(out, &imp, NULL);
	struct ir_tensor x;
	char xpath[700];
	snprintf(xpath, sizeof xpath, "%s/test_data_set_0/input_0.pb", data);
	if (!g || !t || onnx_tensor_read(xpath, &x, NULL) < 0) {
		TAP_OK(0, "consts: the model, the trained model and the data read back (%s)", ir_error());
		return;
	}
	int np = ir_graph_nparams(g);
	struct ir_tensor vals[32];
	for (int i = 0; i < np; i++)
		if (interp_load_param(ir_graph_param(g, i), &vals[i]) < 0)
			abort();
	int same = 0, moved = 0, checked = 0;
	double worst = 0;
	for (int i = 0; i < np; i++) {
		const struct ir_value *p = ir_graph_param(g, i), *q = NULL;
		for (int j = 0; j < ir_graph_nparams(t); j++)
			if (!strcmp(ir_graph_param(t, j)->name, p->name))
				q = ir_graph_param(t, j);
		if (!q)
			continue;
		struct ir_tensor after;
		if (interp_load_param(q, &after) < 0)
			abort();
		bool trained = index_of(consts_trained, 4, p->name) >= 0;
		if (!trained) {
			same += !memcmp(after.data, vals[i].data, ir_tensor_bytes(&after));
		} else {
			moved++;
			for (int64_t e = 0; e < ir_shape_numel(&p->shape); e++) {
				double v0 = ir_tensor_get_f64(&vals[i], e), h = 1e-6;
				ir_tensor_set_f64(&vals[i], e, v0 + h);
				double up = forward(g, &x, vals);
				ir_tensor_set_f64(&vals[i], e, v0 - h);
				double down = forward(g, &x, vals);
				ir_tensor_set_f64(&vals[i], e, v0);
				double grad = (up - down) / (2 * h), want_v = v0 - 0.1 * grad;
				double err = fabs(ir_tensor_get_f64(&after, e) - want_v) / (1e-6 + fabs(0.1 * grad));
				worst = err > worst ? err : worst;
				checked++;
			}
		}
		ir_tensor_free(&after);
	}
	TAP_OK(same == 8, "consts: the 8 constants (the exponents among them) are unchanged after the step (%d)", same);
	TAP_OK(moved == 4 && checked == 64 + 8 + 8 + 1 && worst < 1e-4,
	       "consts: W, B, G, A1 moved by -lr * gradient (central differences), worst relative error %.2g", worst);
	for (int i = 0; i < np; i++)
		ir_tensor_free(&vals[i]);
	ir_tensor_free(&x);
	ir_graph_free(g);
	ir_graph_free(t);
}

/* The patterns on the command lines: pcc train, and pcc --train. */
static void test_cli_patterns(const char *model, const char *data)
{
	int rc = run("'%s' train '%s' -i '%s' --optimizer sgd --steps 1 --freeze W --trainable 'S*'", pcc, model, data);
	TAP_OK(rc == 0 && strstr(out_text, "training 4 parameter tensors (8 floating point initializers left alone)") &&
		       strstr(err_text, "training 4 tensors; set aside as constants: e3 (scalar), e2 (exponent)") &&
		       strstr(err_text, "COS (sin/cos table)") && !strstr(err_text, "SIN ("),
	       "pcc train --freeze W --trainable 'S*': B, G, A1 and SIN train (exit %d: %s)", rc, err_line);
	/* the exponent trained: its gradient x^e log x is NaN where x < 0, the
	 * bug the rule prevents, and the step says so */
	rc = run("'%s' train '%s' -i '%s' --optimizer sgd --steps 1 --trainable e2", pcc, model, data);
	TAP_OK(rc == 1 && strstr(err_text, "\npcc: step 1: the gradient norm is nan; stopping, nothing saved\n"),
	       "pcc train --trainable e2: the exponent's gradient is NaN, the run stops (exit %d: %s)", rc, err_line);
	rc = run("'%s' '%s' --cluster cpu:1 --train --optim sgd --freeze '[WBA]*'", pcc, model);
	TAP_OK(strstr(err_text, "training 1 tensor; set aside as constants: e3 (scalar)") != NULL,
	       "pcc --train --freeze '[WBA]*': G alone trains (exit %d: %s)", rc, err_line);
}

/* pcc --train prints the same summary before it plans. */
static void test_compile_summary(const char *model)
{
	int rc = run("'%s' '%s' --cluster cpu:1 --train --optim sgd", pcc, model);
	const char *want = "set aside as constants: e3 (scalar), e2 (exponent)";
	TAP_OK(!strncmp(err_text, "pcc: ", 5) && strstr(err_text, "training 4 tensors; ") && strstr(err_text, want),
	       "pcc MODEL --train: stderr says 4 train and lists the constants (exit %d)", rc);
	if (!strstr(err_text, want))
		TAP_DIAG("got: %s", err_line);
}

/* ---- an untied copy ------------------------------------------------------------- */

static void test_untied(void)
{
	struct mb *b = mb_new(17);
	float e[24], f[24], ones[4] = { 1, 1, 1, 1 }, x[8];
	for (int i = 0; i < 24; i++)
		e[i] = (float)(urand() - 0.5);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 6; j++)
			f[j * 4 + i] = e[i * 6 + j];
	for (int i = 0; i < 8; i++)
		x[i] = (float)urand();
	mb_input(b, "x", T_FLOAT, "2,4");
	init_f32(b, "E", "4,6", e, 24);
	init_f32(b, "F", "6,4", f, 24);
	init_f32(b, "ln1.weight", "4", ones, 4);
	init_f32(b, "ln2.weight", "4", ones, 4);
	mb_node(b, "MatMul", "up", "x,E", "h");
	mb_node(b, "MatMul", "down", "h,F", "y");
	mb_node(b, "Mul", "g1", "y,ln1.weight", "y1");
	mb_node(b, "Mul", "g2", "y1,ln2.weight", "y2");
	mb_node(b, "Mul", "sq", "y2,y2", "y3");
	Onnx__NodeProto *n = mb_node(b, "ReduceMean", "loss", "y3", "loss");
	mb_attr_int(b, n, "keepdims", 0);
	mb_output(b, "loss", T_FLOAT, "");
	const char *model = mb_write(b, "untied.onnx");
	char data[600], want[1024];
	snprintf(data, sizeof data, "%s/untied_data", tmpdir);
	double xv[8];
	for (int i = 0; i < 8; i++)
		xv[i] = x[i];
	write_input(data, 0, "x", IR_F32, &(struct ir_shape){ 2, { 2, 4 } }, xv);
	int rc = run("'%s' train '%s' -i '%s' --steps 1", pcc, model, data);
	snprintf(want, sizeof want,
		 "pcc: %s: warning: \"F\" equals \"E\" transposed: an untied copy of one weight, trained apart from "
		 "it (export with do_constant_folding=False, or optimize=False with dynamo=True, to keep them tied)\n",
		 model);
	TAP_OK(rc == 0 && !strcmp(err_text, want),
	       "untied: one warning, F equals E transposed; the equal all-ones weights are not reported");
	if (strcmp(err_text, want))
		TAP_DIAG("got: %s", err_line);
	mb_free(b);
}

/* ---- an eval-mode export --------------------------------------------------------- */

/* x [2,3,2] through MatMul by W (named `wname`), BatchNormalization over its
 * 3 channels (training_mode tm, opset 15), the mean square as the loss:
 * pcc train's stderr after one step. */
static int eval_export(const char *tag, const char *wname, int tm)
{
	struct mb *b = mb_new(15);
	float w[4] = { 0.5f, -0.25f, 0.75f, 1.0f }, g[3] = { 1, 1.5f, 2 }, z[3] = { 0, 0.1f, -0.1f },
	      one[3] = { 1, 1, 1 };
	mb_input(b, "x", T_FLOAT, "2,3,2");
	init_f32(b, wname, "2,2", w, 4);
	init_f32(b, "bn.weight", "3", g, 3);
	init_f32(b, "bn.bias", "3", z, 3);
	init_f32(b, "bn.running_mean", "3", z, 3);
	init_f32(b, "bn.running_var", "3", one, 3);
	char ins[160];
	snprintf(ins, sizeof ins, "x,%s", wname);
	mb_node(b, "MatMul", "mm", ins, "h");
	Onnx__NodeProto *n = mb_node(b, "BatchNormalization", "bn",
				     "h,bn.weight,bn.bias,bn.running_mean,bn.running_var", tm ? "y,rm,rv" : "y");
	mb_attr_int(b, n, "training_mode", tm);
	mb_node(b, "Mul", "sq", "y,y", "y2");
	n = mb_node(b, "ReduceMean", "loss", "y2", "loss");
	mb_attr_int(b, n, "keepdims", 0);
	mb_output(b, "loss", T_FLOAT, "");
	char file[64], data[600];
	snprintf(file, sizeof file, "%s.onnx", tag);
	const char *model = mb_write(b, file);
	snprintf(data, sizeof data, "%s/%s_data", tmpdir, tag);
	double xv[12];
	for (int i = 0; i < 12; i++)
		xv[i] = urand() - 0.5;
	write_input(data, 0, "x", IR_F32, &(struct ir_shape){ 3, { 2, 3, 2 } }, xv);
	int rc = run("'%s' train '%s' -i '%s' --steps 1", pcc, model, data);
	mb_free(b);
	return rc;
}

static void test_eval_export(void)
{
	int rc = eval_export("bn_eval", "onnx::MatMul_7", 0);
	TAP_OK(rc == 0 &&
		       strstr(err_text, "warning: BatchNormalization in inference mode (2 running statistics never "
					"updated)") &&
		       strstr(err_text, "training=torch.onnx.TrainingMode.TRAINING"),
	       "an eval-mode export's BatchNormalization: a warning naming the fix");
	TAP_OK(rc == 0 && strstr(err_text, "warning: 1 trained tensor named by the exporter (\"onnx::MatMul_7\")") &&
		       strstr(err_text, "do_constant_folding=False"),
	       "a weight named onnx::MatMul_7 (constant folding): a warning naming the fix");
	if (!strstr(err_text, "onnx::MatMul_7"))
		TAP_DIAG("got: %s", err_text);
	rc = eval_export("bn_train", "mm.weight", 1);
	TAP_OK(rc == 0 && !strstr(err_text, "warning"),
	       "a training-mode export with state_dict names: no warning (exit %d)", rc);
	if (strstr(err_text, "warning"))
		TAP_DIAG("got: %s", err_text);
}

/* ---- a NaN loss ------------------------------------------------------------------ */

static void test_nan(void)
{
	struct mb *b = mb_new(17);
	float w[12];
	for (int i = 0; i < 12; i++)
		w[i] = 0.1f * (float)(i % 5) - 0.2f;
	mb_input(b, "x", T_FLOAT, "2,4");
	init_f32(b, "W", "4,3", w, 12);
	mb_node(b, "Log", "log", "x", "lx");
	mb_node(b, "MatMul", "mm", "lx,W", "h");
	mb_node(b, "Mul", "sq", "h,h", "h2");
	Onnx__NodeProto *n = mb_node(b, "ReduceMean", "loss", "h2", "loss");
	mb_attr_int(b, n, "keepdims", 0);
	mb_output(b, "loss", T_FLOAT, "");
	const char *model = mb_write(b, "nan.onnx");
	char data[600], out[600], out2[600], plan[600], plan2[600];
	snprintf(data, sizeof data, "%s/nan_data", tmpdir);
	const struct ir_shape s = { 2, { 2, 4 } };
	for (int k = 0; k < 3; k++) {
		double xv[8];
		for (int i = 0; i < 8; i++)
			xv[i] = 0.5 + 0.25 * ((i + k) % 4);
		if (k == 1)
			xv[5] = -1; /* log(-1): the loss of step 2 is NaN */
		write_input(data, k, "x", IR_F32, &s, xv);
	}
	snprintf(out, sizeof out, "%s/nan_trained.onnx", tmpdir);
	snprintf(out2, sizeof out2, "%s/nan_run.onnx", tmpdir);
	snprintf(plan, sizeof plan, "%s/nan.bin", tmpdir);
	snprintf(plan2, sizeof plan2, "%s/nan_skip.bin", tmpdir);
	const char *msg = "step 2: the loss is nan; stopping, nothing saved\n";
	char want[256];

	int rc = run("'%s' train '%s' -i '%s' --optimizer sgd --lr 0.1 --steps 3 --save-onnx '%s'", pcc, model, data,
		     out);
	snprintf(want, sizeof want, "pcc: %s", msg);
	TAP_OK(rc == 1 && !strcmp(err_text, want) && !exists(out),
	       "pcc train: a NaN loss at step 2 stops it, exit 1, nothing saved (exit %d: %s)", rc, err_line);

	const char *mpi = "timeout 120 mpirun --oversubscribe -np 1";
	rc = run("'%s' '%s' --cluster cpu:1 --train --optim sgd --lr 0.1 -o '%s'", pcc, model, plan);
	TAP_OK(rc == 0, "pcc: the training plan compiles (exit %d: %s)", rc, err_line);
	rc = run("%s '%s' '%s' --data '%s' --steps 3 --save-onnx '%s'", mpi, pccrun, plan, data, out2);
	snprintf(want, sizeof want, "pcc-run: rank 0: %s", msg);
	TAP_OK(rc == 1 && strstr(err_text, want) && !exists(out2) && strstr(out_text, "step 1/3") &&
		       !strstr(out_text, "step 2/3"),
	       "pcc-run: a NaN loss at step 2 stops it, exit 1, the same message, nothing saved (exit %d)", rc);
	if (!strstr(err_text, want))
		TAP_DIAG("stderr: %s", err_line);

	rc = run("%s '%s' '%s' --data '%s' --steps 3 --skip-nonfinite", mpi, pccrun, plan, data);
	TAP_OK(rc == 2 && strstr(err_text, "pcc-run: rank 0: --skip-nonfinite is an option of the train step: "
					   "compile the plan with pcc --train --skip-nonfinite"),
	       "pcc-run --skip-nonfinite: refused, it is the plan's (exit %d: %s)", rc, err_line);

	/* --skip-nonfinite: step 2 changes nothing, steps 1 and 3 train */
	rc = run("'%s' train '%s' -i '%s' --optimizer sgd --lr 0.1 --steps 3 --log-every 1 --skip-nonfinite "
		 "--save-onnx '%s'",
		 pcc, model, data, out);
	TAP_OK(rc == 0 && exists(out) && strstr(out_text, "(non-finite gradients: step skipped)") &&
		       strstr(out_text, "step 3 "),
	       "pcc train --skip-nonfinite: step 2 skipped, the run ends and saves (exit %d: %s)", rc, err_line);
	rc = run("'%s' '%s' --cluster cpu:1 --train --optim sgd --lr 0.1 --skip-nonfinite -o '%s'", pcc, model, plan2);
	TAP_OK(rc == 0, "pcc --skip-nonfinite: the plan compiles (exit %d: %s)", rc, err_line);
	rc = run("%s '%s' '%s' --data '%s' --steps 3 --save-onnx '%s'", mpi, pccrun, plan2, data, out2);
	TAP_OK(rc == 0 && strstr(out_text, "step 2/3") && strstr(out_text, "(non-finite gradients: step skipped)") &&
		       exists(out2),
	       "pcc-run on a --skip-nonfinite plan: step 2 skipped, the run ends and saves (exit %d: %s)", rc,
	       err_line);
	/* f16 loss scaling skips them anyway */
	rc = run("'%s' '%s' --cluster cpu:1 --train --optim sgd --lr 0.1 --precision f16 -o '%s'", pcc, model, plan);
	TAP_OK(rc == 0, "pcc --precision f16: the plan compiles (exit %d: %s)", rc, err_line);
	rc = run("%s '%s' '%s' --data '%s' --steps 3", mpi, pccrun, plan, data);
	TAP_OK(rc == 0 && strstr(out_text, "step 3/3") && strstr(out_text, "loss nan  grad_norm nan") &&
		       strstr(out_text, "(f16 gradients overflowed: step skipped, loss scale halved)"),
	       "pcc-run on an f16 plan: loss scaling skips the NaN step, the run goes on (exit %d: %s)", rc, err_line);

	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	struct ir_graph *a = onnx_import(out, &imp, NULL), *c = onnx_import(out2, &imp, NULL);
	double worst = INFINITY;
	bool finite = a && c;
	if (a && c) {
		struct ir_tensor ta, tc;
		if (interp_load_param(ir_graph_param(a, 0), &ta) < 0 ||
		    interp_load_param(ir_graph_param(c, 0), &tc) < 0)
			abort();
		worst = 0;
		for (int e = 0; e < 12; e++) {
			double u = ir_tensor_get_f64(&ta, e), v = ir_tensor_get_f64(&tc, e);
			finite = finite && isfinite(u) && isfinite(v) && u != w[e];
			worst = fmax(worst, fabs(u - v));
		}
		ir_tensor_free(&ta);
		ir_tensor_free(&tc);
	}
	TAP_OK(finite && worst < 1e-6,
	       "skipping: pcc train and pcc-run end with the same finite, trained W (max difference %.2g)", worst);
	ir_graph_free(a);
	ir_graph_free(c);
	mb_free(b);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_train_params PCC PCC_RUN\n");
		return 2;
	}
	pcc = argv[1];
	pccrun = argv[2];
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	setenv("OMPI_MCA_btl", "self,vader", 1);
	setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	struct mb *b = model_consts();
	const char *model = mb_write(b, "consts.onnx");
	char data[600];
	snprintf(data, sizeof data, "%s/consts_data", tmpdir);
	double xv[NX];
	for (int i = 0; i < NX; i++)
		xv[i] = urand() - 0.5;
	write_input(data, 0, "x", IR_F64, &(struct ir_shape){ 2, { 4, 8 } }, xv);
	test_rule(model);
	test_sgd_step(model, data);
	test_compile_summary(model);
	test_cli_patterns(model, data);
	test_untied();
	test_eval_export();
	test_nan();
	mb_free(b);
	tmpdir_remove(tmpdir);
	return tap_done();
}
