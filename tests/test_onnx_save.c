/*
 * test_onnx_save.c: onnx_save_params (onnxio/onnx_save.c) writes weights
 * back into ONNX models. On the fixtures in argv[1] (tests/models):
 *  (a) changed weights round-trip bit for bit and change the outputs;
 *      unchanged ones reproduce the expected outputs and the model's
 *      producer, opset and graph;
 *  (b) a model with external data saved to another directory is
 *      self-contained (inline) and still computes the same;
 *  (c) past the inline limit (lowered by PCC_ONNX_SAVE_INLINE_MAX) the
 *      weights go to "<dst>.data" at aligned offsets and read back;
 *  (d) bad values, names and files give a negative code and a message
 *      naming the culprit, and leave nothing in dst's directory, also when
 *      any allocation fails;
 *  (e) src == dst updates in place, inline and external;
 *  (f) every fixture saved unchanged is byte for byte its source (or, with
 *      external data, inline), and in the external layout computes its
 *      expected outputs (integer initializers stay inline there).
 * Temporary files live under a mkdtemp directory, removed at the end.
 */
#define _GNU_SOURCE /* nftw */
#include <dirent.h>
#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/tap.h"

#define TOL 1e-5
/* as test_models.c, for the deeper fixtures of (f) */
#define RTOL_MODELS 1e-4
#define ATOL_MODELS 1e-5

static char tmpdir[] = "/tmp/pcc_onnx_save_XXXXXX";
static const char *models;

/* Imports with the symbolic dims of the dynamic exports bound as in their
 * test data. */
static struct ir_graph *import(const char *model, struct onnx_model_info *info)
{
	static const struct onnx_dim_binding dims[] = { { "batch", 2 }, { "seq", 8 } };
	struct onnx_import_opts o;
	onnx_import_opts_init(&o);
	o.dims = dims;
	o.ndims = 2;
	return onnx_import(model, &o, info);
}

/* A model's parameters by name, loaded with interp_load_param. */
struct params {
	int n;
	char *names[64];
	struct ir_tensor t[64];
};

static void params_free(struct params *p)
{
	for (int i = 0; i < p->n; i++) {
		free(p->names[i]);
		ir_tensor_free(&p->t[i]);
	}
	p->n = 0;
}

static int params_load(const char *model, struct params *p)
{
	struct ir_graph *g = import(model, NULL);
	int rc = g ? 0 : -1;
	p->n = 0;
	for (int i = 0; g && i < ir_graph_nparams(g) && i < 64 && rc == 0; i++) {
		struct ir_value *v = ir_graph_param(g, i);
		p->names[i] = strdup(v->name);
		rc = interp_load_param(v, &p->t[i]);
		p->n = i + 1;
	}
	if (rc < 0)
		TAP_DIAG("%s", ir_error());
	ir_graph_free(g);
	return rc;
}

/* Every parameter of model holds exactly p's bytes. */
static bool params_equal(const char *model, const struct params *p)
{
	struct params q;
	bool ok = params_load(model, &q) == 0 && q.n == p->n;
	for (int i = 0; ok && i < p->n; i++)
		ok = !strcmp(q.names[i], p->names[i]) && q.t[i].dtype == p->t[i].dtype &&
		     ir_shape_eq(&q.t[i].shape, &p->t[i].shape) &&
		     !memcmp(q.t[i].data, p->t[i].data, ir_tensor_bytes(&p->t[i]));
	params_free(&q);
	return ok;
}

/* Runs model on the data set of the fixture named data and compares with
 * its expected outputs. */
static void run_fixture_tol(const char *model, const char *data, double rtol, double atol, struct cmp *c)
{
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/%s/test_data_set_0", models, data);
	struct ir_graph *g = import(model, NULL);
	if (!g) {
		memset(c, 0, sizeof *c);
		c->bad = -1;
		snprintf(c->what, sizeof c->what, "%s", ir_error());
		return;
	}
	run_data_set(g, dir, rtol, atol, c);
	ir_graph_free(g);
}

static void run_fixture(const char *model, const char *data, struct cmp *c)
{
	run_fixture_tol(model, data, TOL, TOL, c);
}

static int save(const char *src, const char *dst, const struct params *p)
{
	int rc = onnx_save_params(src, dst, p->n, (const char *const *)p->names, p->t);
	if (rc < 0)
		TAP_DIAG("%s", ir_error());
	return rc;
}

static int count_entries(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return d ? n : -1;
}

/* buf (1024 bytes) = a/b, or a followed by b; paths here are short. */
static char *path(char *buf, const char *a, const char *b)
{
	IR_ASSERT(snprintf(buf, 1024, "%s/%s", a, b) < 1024);
	return buf;
}

static char *cat(char *buf, const char *a, const char *b)
{
	IR_ASSERT(snprintf(buf, 1024, "%s%s", a, b) < 1024);
	return buf;
}

/* ---- (a) round trip ------------------------------------------------------------ */

static void test_round_trip(void)
{
	char src[1024], dst[1024], dir[1024];
	struct params p, orig;
	struct cmp c;
	snprintf(src, sizeof src, "%s/mlp_op17/model.onnx", models);
	mkdir(path(dir, tmpdir, "a"), 0777);
	path(dst, dir, "model.onnx");
	if (!TAP_OK(params_load(src, &p) == 0 && p.n == 4, "mlp_op17: 4 parameters load"))
		return;
	params_load(src, &orig);
	for (int i = 0; i < p.n; i++)
		for (int64_t k = 0; k < ir_shape_numel(&p.t[i].shape); k++)
			ir_tensor_set_f64(&p.t[i], k, 2 * ir_tensor_get_f64(&p.t[i], k) + 0.01 * (double)k);
	TAP_OK(save(src, dst, &p) == 0, "changed weights save");
	TAP_OK(params_equal(dst, &p), "every saved parameter reads back bit for bit");
	struct onnx_model_info i0;
	struct ir_graph *g0 = import(dst, &i0);
	TAP_OK(g0 && i0.producer && !strcmp(i0.producer, "pcc"), "changed weights: the producer is pcc (%s)",
	       g0 && i0.producer ? i0.producer : "none");
	ir_graph_free(g0);
	run_fixture(dst, "mlp_op17", &c);
	TAP_OK(c.bad > 0, "changed weights change the outputs (%s)", c.what);

	TAP_OK(save(src, dst, &orig) == 0, "unchanged weights save");
	TAP_OK(params_equal(dst, &orig), "unchanged parameters read back bit for bit");
	run_fixture(dst, "mlp_op17", &c);
	if (!TAP_OK(c.bad == 0, "unchanged weights give the expected outputs within %g (max abs err %.2e)", TOL,
		    c.max_abs))
		TAP_DIAG("%s", c.what);
	struct onnx_model_info i1, i2;
	struct ir_graph *g1 = import(src, &i1), *g2 = import(dst, &i2);
	TAP_OK(g1 && g2 && i1.opset == i2.opset && i2.producer && !strcmp(i1.producer, i2.producer) &&
		       i1.nops == i2.nops && ir_graph_nnodes(g1) == ir_graph_nnodes(g2),
	       "unchanged weights: producer, opset and graph are kept");
	ir_graph_free(g1);
	ir_graph_free(g2);
	TAP_OK(count_entries(dir) == 1, "no temporary file is left beside dst");
	params_free(&p);
	params_free(&orig);
}

/* ---- (b) external-data source ------------------------------------------------- */

static void test_external_source(void)
{
	char src[1024], dst[1024], dir[1024];
	struct params none = { 0 };
	struct cmp c;
	snprintf(src, sizeof src, "%s/mlp_ext_op17/model.onnx", models);
	mkdir(path(dir, tmpdir, "b"), 0777);
	path(dst, dir, "model.onnx");
	TAP_OK(save(src, dst, &none) == 0, "mlp_ext_op17 saves to another directory");
	struct ir_graph *g = import(dst, NULL);
	bool inl = g && ir_graph_nparams(g) == 4;
	for (int i = 0; inl && i < ir_graph_nparams(g); i++)
		inl = ir_graph_param(g, i)->data.bytes != NULL;
	ir_graph_free(g);
	TAP_OK(inl, "its weights are now inline");
	TAP_OK(count_entries(dir) == 1, "no data file or temporary is written");
	run_fixture(dst, "mlp_ext_op17", &c);
	if (!TAP_OK(c.bad == 0, "the saved model gives the expected outputs (max abs err %.2e)", c.max_abs))
		TAP_DIAG("%s", c.what);
}

/* ---- (c) the external layout, (e) in place ------------------------------------ */

static bool external_layout(const char *model, const char *data_name)
{
	struct ir_graph *g = import(model, NULL);
	bool ok = g != NULL;
	for (int i = 0; ok && i < ir_graph_nparams(g); i++) {
		const struct ir_data *d = &ir_graph_param(g, i)->data;
		ok = !d->bytes && d->path && !strcmp(d->path, data_name) && d->offset % 4096 == 0;
	}
	ir_graph_free(g);
	return ok;
}

static void test_external_output(void)
{
	char src[1024], dst[1024], dir[1024], data[1024], dst2[1024];
	struct params p;
	struct cmp c;
	snprintf(src, sizeof src, "%s/mlp_op17/model.onnx", models);
	mkdir(path(dir, tmpdir, "c"), 0777);
	path(dst, dir, "model.onnx");
	path(data, dir, "model.onnx.data");
	if (params_load(src, &p) < 0)
		return;
	p.n = 2; /* fc1 changes, fc2 is carried over */
	for (int i = 0; i < p.n; i++)
		for (int64_t k = 0; k < ir_shape_numel(&p.t[i].shape); k++)
			ir_tensor_set_f64(&p.t[i], k, -ir_tensor_get_f64(&p.t[i], k));
	setenv("PCC_ONNX_SAVE_INLINE_MAX", "100", 1);
	TAP_OK(save(src, dst, &p) == 0, "past the inline limit, the model saves");
	TAP_OK(file_exists(data) && count_entries(dir) == 2, "dst and dst.data, nothing else, are written");
	TAP_OK(external_layout(dst, "model.onnx.data"), "every weight is in model.onnx.data at a 4096-aligned offset");
	p.n = 4;
	struct params q;
	params_load(src, &q);
	for (int i = 0; i < 2; i++) /* the expected state: fc1 negated, fc2 as before */
		memcpy(q.t[i].data, p.t[i].data, ir_tensor_bytes(&p.t[i]));
	TAP_OK(params_equal(dst, &q), "the weights read back bit for bit");

	/* (e) in place, external to external: reads the old data file while
	 * writing the new one */
	p.n = 2;
	for (int i = 0; i < p.n; i++)
		for (int64_t k = 0; k < ir_shape_numel(&p.t[i].shape); k++)
			ir_tensor_set_f64(&p.t[i], k, -ir_tensor_get_f64(&p.t[i], k));
	TAP_OK(save(dst, dst, &p) == 0, "in place with external data");
	params_free(&q);
	params_load(src, &q);
	TAP_OK(params_equal(dst, &q) && count_entries(dir) == 2,
	       "fc1 negated twice is the original again; fc2 carried over");
	unsetenv("PCC_ONNX_SAVE_INLINE_MAX");

	/* back to inline, in another directory */
	path(dst2, tmpdir, "c2.onnx");
	p.n = 0;
	TAP_OK(save(dst, dst2, &p) == 0, "the external model saves inline elsewhere");
	run_fixture(dst2, "mlp_op17", &c);
	if (!TAP_OK(c.bad == 0, "and gives the expected outputs (max abs err %.2e)", c.max_abs))
		TAP_DIAG("%s", c.what);
	p.n = 4;
	params_free(&p);
	params_free(&q);
}

static void test_in_place(void)
{
	char src[1024], dst[1024], dir[1024];
	struct params p, none = { 0 };
	snprintf(src, sizeof src, "%s/mlp_op17/model.onnx", models);
	mkdir(path(dir, tmpdir, "e"), 0777);
	path(dst, dir, "model.onnx");
	TAP_OK(save(src, dst, &none) == 0 && params_load(dst, &p) == 0, "a copy to update in place");
	for (int i = 0; i < p.n; i++)
		for (int64_t k = 0; k < ir_shape_numel(&p.t[i].shape); k++)
			ir_tensor_set_f64(&p.t[i], k, (double)(i + 1) * 0.5 + (double)k);
	TAP_OK(save(dst, dst, &p) == 0, "src == dst saves");
	TAP_OK(params_equal(dst, &p) && count_entries(dir) == 1, "the file holds the new weights, alone");
	params_free(&p);
}

/* ---- (f) every fixture -------------------------------------------------------- */

static bool same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa && fb;
	for (int ca = 0; same && ca != EOF;) {
		ca = getc(fa);
		same = ca == getc(fb);
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* Some parameter of model is external (1), none is (0), or -1. */
static int has_external(const char *model)
{
	struct ir_graph *g = import(model, NULL);
	int ext = g ? 0 : -1;
	for (int i = 0; g && i < ir_graph_nparams(g); i++)
		ext |= ir_graph_param(g, i)->data.path != NULL;
	ir_graph_free(g);
	return ext;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_fixtures(void)
{
	char *names[256], src[1024], dst[1024], dir[1024], ext[1024];
	struct params none = { 0 };
	struct cmp c;
	int n = 0;
	DIR *d = opendir(models);
	for (struct dirent *e; d && (e = readdir(d)) && n < 256;)
		if (strstr(e->d_name, "_op1"))
			names[n++] = strdup(e->d_name);
	if (d)
		closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_names);
	mkdir(path(dir, tmpdir, "f"), 0777);
	path(dst, dir, "model.onnx");
	path(ext, dir, "ext.onnx");
	for (int i = 0; i < n; i++) {
		snprintf(src, sizeof src, "%s/%s/model.onnx", models, names[i]);
		int external = has_external(src);
		bool ok = save(src, dst, &none) == 0;
		if (external)
			ok = ok && has_external(dst) == 0;
		else
			ok = ok && external == 0 && same_file(src, dst);
		TAP_OK(ok, "%s saved unchanged is %s", names[i], external ? "inline" : "byte for byte its source");
		setenv("PCC_ONNX_SAVE_INLINE_MAX", "0", 1);
		ok = save(src, ext, &none) == 0 && external_layout(ext, "ext.onnx.data");
		unsetenv("PCC_ONNX_SAVE_INLINE_MAX");
		run_fixture_tol(ext, names[i], RTOL_MODELS, ATOL_MODELS, &c);
		if (!TAP_OK(ok && c.bad == 0, "%s in the external layout computes its outputs (max abs err %.2e)",
			    names[i], c.max_abs))
			TAP_DIAG("%s", c.what);
		free(names[i]);
	}
	TAP_OK(n >= 20 && count_entries(dir) == 3, "%d fixtures; no temporary file left", n);
}

/* ---- (d) errors ------------------------------------------------------------------ */

/* One failing call: its code, a message containing want (and the file
 * name when file), and nothing left in dir. */
static void expect_fail(const char *what, int rc, int code, const char *want, const char *dir)
{
	if (!TAP_OK(rc == code && strstr(ir_error(), want), "%s: %d and a message naming it", what, code))
		TAP_DIAG("rc %d, wanted a message containing: %s", rc, want);
	TAP_DIAG("%s", ir_error());
	TAP_OK(count_entries(dir) == 0, "%s: nothing left in dst's directory", what);
}

static void test_errors(void)
{
	char src[1024], dst[1024], dir[1024], want[2048], bad[1024], ext[1024], f[1024];
	struct params p;
	snprintf(src, sizeof src, "%s/mlp_op17/model.onnx", models);
	mkdir(path(dir, tmpdir, "d"), 0777);
	path(dst, dir, "model.onnx");
	if (params_load(src, &p) < 0)
		return;
	int w = 0; /* fc1.weight: f32[32,16] */
	while (strcmp(p.names[w], "fc1.weight"))
		w++;
	const char *name[2] = { "fc1.weight", "fc1.bias" };
	struct ir_tensor v[2] = { p.t[w], p.t[w] };

	v[0].shape = (struct ir_shape){ 2, { 16, 32 } };
	snprintf(want, sizeof want, "%s: initializer \"fc1.weight\": expected f32[32,16], got f32[16,32]", src);
	expect_fail("wrong shape", onnx_save_params(src, dst, 1, name, v), -EINVAL, want, dir);

	v[0] = p.t[w];
	v[0].dtype = IR_F64;
	v[0].shape = (struct ir_shape){ 2, { 32, 8 } }; /* the same bytes */
	snprintf(want, sizeof want, "initializer \"fc1.weight\": expected f32[32,16], got f64[32,8]");
	expect_fail("wrong dtype", onnx_save_params(src, dst, 1, name, v), -EINVAL, want, dir);

	v[0] = p.t[w];
	const char *unknown[1] = { "fc9.weight" };
	expect_fail("unknown name", onnx_save_params(src, dst, 1, unknown, v), -EINVAL, "\"fc9.weight\"", dir);

	const char *twice[2] = { "fc1.weight", "fc1.weight" };
	expect_fail("duplicate name", onnx_save_params(src, dst, 2, twice, v), -EINVAL, "\"fc1.weight\" is given twice",
		    dir);

	path(bad, tmpdir, "missing.onnx");
	expect_fail("missing src", onnx_save_params(bad, dst, 0, NULL, NULL), -ENOENT, bad, dir);

	path(bad, tmpdir, "garbage.onnx");
	FILE *fp = fopen(bad, "wb");
	fputs("this is not an ONNX model\n", fp);
	fclose(fp);
	snprintf(want, sizeof want, "%s: not a valid ONNX model", bad);
	expect_fail("corrupt src", onnx_save_params(bad, dst, 0, NULL, NULL), -EINVAL, want, dir);

	path(bad, tmpdir, "no/such/dir/model.onnx");
	expect_fail("missing dst directory", onnx_save_params(src, bad, 1, name, v), -ENOENT, bad, dir);

	char ro[1024];
	mkdir(path(ro, tmpdir, "ro"), 0555);
	path(bad, ro, "model.onnx");
	if (access(ro, W_OK) == 0) { /* root writes anywhere */
		TAP_OK(1, "read-only dst directory # SKIP running as root");
		TAP_OK(1, "read-only dst directory: nothing left # SKIP running as root");
	} else {
		expect_fail("read-only dst directory", onnx_save_params(src, bad, 1, name, v), -EACCES, bad, ro);
	}

	/* external data gone: fails while writing, inline and external */
	mkdir(path(f, tmpdir, "ext"), 0777);
	path(ext, f, "model.onnx");
	snprintf(f, sizeof f, "%s/mlp_ext_op17/model.onnx", models);
	struct params none = { 0 };
	save(f, ext, &none); /* inline: a copy to break */
	setenv("PCC_ONNX_SAVE_INLINE_MAX", "0", 1);
	save(f, ext, &none); /* now external, beside ext */
	cat(f, ext, ".data");
	unlink(f);
	expect_fail("external data missing (external layout)", onnx_save_params(ext, dst, 0, NULL, NULL), -ENOENT,
		    "model.onnx.data", dir);
	unsetenv("PCC_ONNX_SAVE_INLINE_MAX");
	expect_fail("external data missing (inline layout)", onnx_save_params(ext, dst, 0, NULL, NULL), -ENOENT,
		    "model.onnx.data", dir);

	/* every allocation failure, in both layouts: a clean error, no files */
	for (int layout = 0; layout < 2; layout++) {
		int failures = 0, clean = 0, leftovers = 0;
		if (layout)
			setenv("PCC_ONNX_SAVE_INLINE_MAX", "0", 1);
		for (long k = 0;; k++) {
			ir_error_clear();
			ir_alloc_fail_after(k);
			int rc = onnx_save_params(src, dst, 1, name, v);
			ir_alloc_fail_after(-1);
			if (rc == 0)
				break;
			failures++;
			clean += rc < 0 && ir_error()[0];
			leftovers += count_entries(dir) != 0;
		}
		unsetenv("PCC_ONNX_SAVE_INLINE_MAX");
		TAP_OK(failures > 0 && clean == failures && leftovers == 0,
		       "%s layout: %d allocation failures each give an error and leave no file",
		       layout ? "external" : "inline", failures);
		cat(f, dst, ".data");
		unlink(dst);
		unlink(f);
	}
	params_free(&p);
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

int main(int argc, char **argv)
{
	models = argc > 1 ? argv[1] : "tests/models";
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	test_round_trip();
	test_external_source();
	test_external_output();
	test_in_place();
	test_errors();
	test_fixtures();
	chmod(path((char[1024]){ 0 }, tmpdir, "ro"), 0755);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}
