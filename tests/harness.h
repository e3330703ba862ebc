/*
 * harness.h: shared by the model tests: load a backend-test data set
 * (input_N.pb / output_N.pb), run the reference interpreter, compare.
 */
#ifndef PCC_TESTS_HARNESS_H
#define PCC_TESTS_HARNESS_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/compiler.h"
#include "compiler/frontend/onnx_internal.h"

struct cmp {
	double max_abs, max_rel; /* worst errors seen */
	int64_t bad;             /* elements outside tolerance */
	bool input_mismatch;     /* an input file disagrees with the model's static shape */
	char what[256];          /* first problem, for the report */
};

/* numpy.testing.assert_allclose rule: |got - want| <= atol + rtol * |want|;
 * NaN matches NaN, infinities must match exactly. */
static inline void cmp_tensor(const struct ir_tensor *got, const struct ir_tensor *want, double rtol, double atol,
			      int index, struct cmp *c)
{
	char s1[IR_SHAPE_STR_MAX], s2[IR_SHAPE_STR_MAX];
	bool fl = ir_dtype_is_float(want->dtype);
	if (got->dtype != want->dtype || !ir_shape_eq(&got->shape, &want->shape)) {
		c->bad++;
		snprintf(c->what, sizeof c->what, "output %d is %s%s, expected %s%s", index, ir_dtype_name(got->dtype),
			 ir_shape_str(&got->shape, s1, sizeof s1), ir_dtype_name(want->dtype),
			 ir_shape_str(&want->shape, s2, sizeof s2));
		return;
	}
	int64_t n = ir_shape_numel(&want->shape);
	for (int64_t i = 0; i < n; i++) {
		bool ok;
		double g, w;
		if (fl) {
			g = ir_tensor_get_f64(got, i);
			w = ir_tensor_get_f64(want, i);
			if (isnan(w) || isnan(g))
				ok = isnan(w) && isnan(g);
			else if (isinf(w) || isinf(g))
				ok = g == w;
			else {
				double d = fabs(g - w);
				ok = d <= atol + rtol * fabs(w);
				if (d > c->max_abs)
					c->max_abs = d;
				if (w != 0 && d / fabs(w) > c->max_rel)
					c->max_rel = d / fabs(w);
			}
		} else {
			int64_t gi = ir_tensor_get_i64(got, i), wi = ir_tensor_get_i64(want, i);
			ok = gi == wi;
			g = (double)gi;
			w = (double)wi;
		}
		if (!ok && c->bad++ == 0)
			snprintf(c->what, sizeof c->what, "output %d element %lld: got %.9g, expected %.9g", index,
				 (long long)i, g, w);
	}
}

static inline bool file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* ONNX 1.12's test data stores bfloat16 tensors as UINT16 (the type pcc
 * does not have); read those bit patterns as bf16. */
static inline int read_pb(const char *path, struct ir_tensor *t, char **name)
{
	int rc = onnx_tensor_read(path, t, name);
	if (rc == 0 || !strstr(ir_error(), "UINT16"))
		return rc;
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
	if (f)
		fclose(f);
	Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, len, buf);
	if (!p)
		return rc;
	p->data_type = 16; /* BFLOAT16 */
	struct ir_tensor tmp;
	rc = onnx_tensor_decode(p, &tmp);
	if (rc == 0) {
		*t = tmp;
		if (name && p->name)
			*name = strdup(p->name);
	}
	onnx__tensor_proto__free_unpacked(p, NULL);
	return rc;
}

/* Reads dir/input_N.pb for every N present, with the tensors' names. */
static inline int read_inputs(const char *dir, struct ir_tensor *t, char **names, int max)
{
	char path[4096];
	int n = 0;
	for (; n < max; n++) {
		snprintf(path, sizeof path, "%s/input_%d.pb", dir, n);
		if (!file_exists(path) || read_pb(path, &t[n], &names[n]) < 0)
			break;
	}
	return n;
}

/* The op a test is about: its single node's type, or "(expanded)" for the
 * function-body expansions that hold several nodes. */
static inline void node_test_op(const char *model, char *op, size_t n)
{
	snprintf(op, n, "?");
	FILE *f = fopen(model, "rb");
	if (!f)
		return;
	static uint8_t buf[1 << 22];
	size_t len = fread(buf, 1, sizeof buf, f);
	fclose(f);
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
	if (!m)
		return;
	if (m->graph && m->graph->n_node == 1)
		snprintf(op, n, "%s", m->graph->node[0]->op_type);
	else if (m->graph)
		snprintf(op, n, "(expanded)");
	onnx__model_proto__free_unpacked(m, NULL);
}

/* The inputs of a node test that pcc binds as constants, kept alive while
 * the graph may be imported again (compile_lower's loader does). */
struct node_consts {
	struct ir_tensor t[64];
	char *names[64];
	struct onnx_const_input ci[64];
	int n, nbound; /* tensors read; of them bound: ci[0 .. nbound) */
};

static inline void node_consts_free(struct node_consts *b)
{
	for (int i = 0; i < b->n; i++) {
		ir_tensor_free(&b->t[i]);
		free(b->names[i]);
	}
	b->n = b->nbound = 0;
}

/* Imports a node test's model (o: options, filled) as the conformance
 * tests do. pcc compiles static shapes: when an input decides shapes
 * (Reshape's shape, Slice's starts, ...) the import fails, and it is
 * imported again with the integer and scalar inputs of test_data_set_0
 * bound as constants (data stays data), held in b and o until
 * node_consts_free(b). When a float tensor decides them (Resize's scales
 * and roi), every input but the first (the data) is bound. */
static inline struct ir_graph *import_node_test(const char *root, const char *name, struct node_consts *b,
						struct onnx_import_opts *o)
{
	char model[2048], data[2048];
	snprintf(model, sizeof model, "%s/%s/model.onnx", root, name);
	memset(b, 0, sizeof *b);
	onnx_import_opts_init(o);
	struct ir_graph *g = onnx_import(model, o, NULL);
	if (g || !strstr(ir_error(), "must be a constant known at compile time"))
		return g;
	snprintf(data, sizeof data, "%s/%s/test_data_set_0", root, name);
	b->n = read_inputs(data, b->t, b->names, 64);
	for (int i = 0; i < b->n; i++)
		if (!ir_dtype_is_float(b->t[i].dtype) || b->t[i].shape.rank == 0)
			b->ci[b->nbound++] = (struct onnx_const_input){ b->names[i] ? b->names[i] : "", b->t[i], NULL };
	o->consts = b->ci;
	o->nconsts = b->nbound;
	g = onnx_import(model, o, NULL);
	if (g || !strstr(ir_error(), "must be a constant known at compile time"))
		return g;
	b->nbound = 0;
	for (int i = 1; i < b->n; i++)
		b->ci[b->nbound++] = (struct onnx_const_input){ b->names[i] ? b->names[i] : "", b->t[i], NULL };
	o->nconsts = b->nbound;
	return onnx_import(model, o, NULL);
}

/* Runs g on dir/input_N.pb and compares with dir/output_N.pb. Inputs are
 * matched to graph inputs by name (inputs bound as constants at import are
 * left out of the graph), else by position. Returns 0 when run; errors in
 * c->what. */
static inline int run_data_set(const struct ir_graph *g, const char *dir, double rtol, double atol, struct cmp *c)
{
	char path[4096];
	int nin = ir_graph_ninputs(g), nout = ir_graph_noutputs(g), rc = 0;
	struct ir_tensor *in = calloc((size_t)nin + 1, sizeof *in);
	struct ir_tensor *out = calloc((size_t)nout + 1, sizeof *out);
	memset(c, 0, sizeof *c);
	struct ir_tensor files[64];
	char *names[64] = { 0 };
	int nfiles = read_inputs(dir, files, names, 64);
	for (int i = 0; i < nin && rc == 0; i++) {
		const char *want = ir_graph_input(g, i)->name;
		int k = -1;
		for (int j = 0; j < nfiles && k < 0; j++)
			if (names[j] && want && !strcmp(names[j], want))
				k = j;
		if (k < 0 && nfiles == nin)
			k = i;
		if (k < 0) {
			snprintf(path, sizeof path, "%s: no input file for \"%s\"", dir, want ? want : "");
			rc = ir_errorf(-ENOENT, "%s", path);
			break;
		}
		in[i] = files[k];
		files[k].data = NULL;
		struct ir_value *v = ir_graph_input(g, i);
		if (in[i].dtype != v->dtype || !ir_shape_eq(&in[i].shape, &v->shape)) {
			char s1[IR_SHAPE_STR_MAX], s2[IR_SHAPE_STR_MAX];
			c->input_mismatch = true;
			rc = ir_errorf(-EINVAL, "input \"%s\" is declared %s%s but the data is %s%s", want ? want : "",
				       ir_dtype_name(v->dtype), ir_shape_str(&v->shape, s1, sizeof s1),
				       ir_dtype_name(in[i].dtype), ir_shape_str(&in[i].shape, s2, sizeof s2));
			nin = i + 1;
			break;
		}
	}
	for (int j = 0; j < nfiles; j++) {
		ir_tensor_free(&files[j]);
		free(names[j]);
	}
	if (rc == 0)
		rc = interp_run(g, in, out);
	if (rc < 0) {
		snprintf(c->what, sizeof c->what, "%s", ir_error());
		c->bad = 1;
	}
	for (int i = 0; i < nout && rc == 0; i++) {
		struct ir_tensor want;
		snprintf(path, sizeof path, "%s/output_%d.pb", dir, i);
		if ((rc = read_pb(path, &want, NULL)) < 0) {
			snprintf(c->what, sizeof c->what, "%s", ir_error());
			c->bad = 1;
			break;
		}
		cmp_tensor(&out[i], &want, rtol, atol, i, c);
		ir_tensor_free(&want);
	}
	for (int i = 0; i < nin; i++)
		ir_tensor_free(&in[i]);
	for (int i = 0; i < nout; i++)
		ir_tensor_free(&out[i]);
	free(in);
	free(out);
	return rc;
}

#endif
