/*
 * test_model_once.c: a model read once builds the graphs the compile
 * pipeline needs without its file, and builds the same graphs as the file
 * imported afresh each time (what the pipeline did before).
 *   - every fixture of tests/models (argv[1]) at micro-batch sizes 1, 2, 3
 *     and 8 (its symbolic batch bound to the size, "seq" to 8): the graph
 *     onnx_model_import_batch builds from one onnx_model_read, and the one
 *     pipeline_load builds over pipeline_model_open, print as the same IR
 *     text as onnx_import_batch's import of the file, or fail with the same
 *     message; onnx_model_batch_dim and onnx_model_input_names say what
 *     onnx_batch_dim and onnx_input_names say;
 *   - a model read, then its file deleted, still builds every size, and a
 *     graph outlives onnx_model_free with its inline weights intact;
 *   - the grouping model of test_inter_skip (x[batch,4,8] reshaped to
 *     [-1,8,8], as GShard's MoE groups tokens) refuses size 1 with the
 *     import's message and builds size 2;
 *   - IR text (.ir) read once, its file deleted, parses to the same text
 *     at each size.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h), open_memstream */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/pipeline/pipeline.h"
#include "onnx_builder.h"

static const int64_t sizes[] = { 1, 2, 3, 8 };
#define NSIZES (int)(sizeof sizes / sizeof sizes[0])

/* g as IR text (malloc'd), or "error: MESSAGE" when g is NULL; g freed. */
static char *text_of(struct ir_graph *g)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (!f)
		abort();
	if (g)
		ir_print(g, f);
	else
		fprintf(f, "error: %s", ir_error());
	fclose(f);
	ir_graph_free(g);
	ir_error_clear();
	return s;
}

/* One fixture: fresh imports against the model read once, at each size. */
static bool same_as_file(const char *path, const struct onnx_import_opts *imp, int *nbuilt)
{
	char name[128], name2[128];
	int64_t batch = -1, batch2 = -2;
	int rc = onnx_batch_dim(path, imp, name, sizeof name, &batch);
	struct onnx_model *m = onnx_model_read(path);
	struct pipeline_model pm;
	if (!m || pipeline_model_open(&pm, path, imp, &batch2) < 0 || rc < 0) {
		TAP_DIAG("  %s: %s", path, ir_error());
		onnx_model_free(m);
		return false;
	}
	bool ok = onnx_model_batch_dim(m, imp, name2, sizeof name2, &batch2) == 0 && batch == batch2 &&
		  !strcmp(name, name2) && !strcmp(name, pm.bname);
	char **in1 = NULL, **in2 = NULL;
	int n1 = -1, n2 = -2;
	ok = ok && onnx_input_names(path, &in1, &n1) == 0 && onnx_model_input_names(m, &in2, &n2) == 0 && n1 == n2;
	for (int i = 0; ok && i < n1; i++)
		ok = !strcmp(in1[i], in2[i]);
	ir_free(in1);
	ir_free(in2);
	for (int i = 0; ok && i < NSIZES; i++) {
		char *want = text_of(onnx_import_batch(path, imp, name, sizes[i]));
		char *once = text_of(onnx_model_import_batch(m, imp, name, sizes[i]));
		char *piped = text_of(pipeline_load(&pm, sizes[i]));
		const char *got = strcmp(want, once) ? once : strcmp(want, piped) ? piped : NULL;
		if (got) {
			TAP_DIAG("%s at %lld: %s differs from a fresh import", path, (long long)sizes[i],
				 got == once ? "the model read once" : "the pipeline's graph");
			tap_diff(want, got);
			ok = false;
		}
		*nbuilt += strncmp(want, "error: ", 7) != 0;
		free(want);
		free(once);
		free(piped);
		if (!name[0]) /* a static batch: one graph whatever the size */
			break;
	}
	onnx_model_free(m);
	pipeline_model_close(&pm);
	return ok;
}

static void test_fixtures(const char *models)
{
	DIR *d = opendir(models);
	if (!TAP_OK(d != NULL, "the fixtures' directory %s opens", models))
		return;
	struct onnx_dim_binding seq = { "seq", 8 };
	struct onnx_import_opts imp;
	onnx_import_opts_init(&imp);
	imp.dims = &seq;
	imp.ndims = 1;
	int n = 0, nsame = 0, nbuilt = 0;
	char path[1024];
	for (struct dirent *e; (e = readdir(d));) {
		snprintf(path, sizeof path, "%s/%s/model.onnx", models, e->d_name);
		if (e->d_name[0] == '.' || access(path, R_OK))
			continue;
		n++;
		for (int updates = 0; updates < 2; updates++) { /* the search's imports, then lowering's */
			imp.updates = updates;
			if (!same_as_file(path, &imp, &nbuilt)) {
				TAP_DIAG("  differs: %s (updates %d)", path, updates);
				break;
			}
			nsame += updates;
		}
	}
	closedir(d);
	TAP_OK(n >= 20 && nsame == n && nbuilt > 2 * n,
	       "%d fixtures: the model read once builds what importing the file builds (%d graphs)", n, nbuilt);
}

/* A fixture copied, read, its copy deleted: every size still builds, the
 * same as from the original; a graph outlives the model with its
 * weights. */
static void test_no_file(const char *models)
{
	char src[1024], dst[600];
	snprintf(src, sizeof src, "%s/gpt_op17/model.onnx", models);
	snprintf(dst, sizeof dst, "%s/copy.onnx", tmpdir);
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	char buf[65536];
	size_t k;
	while (in && out && (k = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, k, out);
	bool copied = in && out && !ferror(in) && !fclose(out);
	if (in)
		fclose(in);
	if (!TAP_OK(copied, "%s copied to %s", src, dst))
		return;
	char name[128];
	int64_t batch;
	struct onnx_model *m = onnx_model_read(dst);
	bool ok = m && onnx_model_batch_dim(m, NULL, name, sizeof name, &batch) == 0 && unlink(dst) == 0;
	int nsame = 0;
	for (int i = 0; ok && i < NSIZES; i++) {
		char *want = text_of(onnx_import_batch(src, NULL, name, sizes[i]));
		char *once = text_of(onnx_model_import_batch(m, NULL, name, sizes[i]));
		nsame += !strcmp(want, once) && strncmp(once, "error: ", 7);
		free(want);
		free(once);
		if (!name[0])
			break;
	}
	TAP_OK(ok && nsame == (name[0] ? NSIZES : 1), "its file deleted, the model read once builds every size");
	/* the graph keeps the model's inline weights after onnx_model_free */
	struct ir_graph *g = m ? onnx_model_import(m, NULL, NULL) : NULL;
	onnx_model_free(m);
	struct ir_graph *fresh = onnx_import(src, NULL, NULL);
	int nparams = 0, nbytes_same = 0;
	for (int i = 0; g && fresh && i < ir_graph_nparams(g) && i < ir_graph_nparams(fresh); i++) {
		const struct ir_data *a = &ir_graph_param(g, i)->data, *b = &ir_graph_param(fresh, i)->data;
		if (!a->bytes)
			continue;
		nparams++;
		nbytes_same += a->nbytes == b->nbytes && b->bytes && !memcmp(a->bytes, b->bytes, (size_t)a->nbytes);
	}
	TAP_OK(g && fresh && nparams > 0 && nbytes_same == nparams && ir_verify(g) == 0,
	       "a graph outlives onnx_model_free with its %d inline weights intact", nparams);
	ir_graph_free(g);
	ir_graph_free(fresh);
}

/* test_inter_skip's grouping model: size 1 refused as the import refuses
 * it, size 2 built. */
static void test_grouping(void)
{
	struct mb *b = mb_new(17);
	mb_input(b, "x", T_FLOAT, "batch,4,8");
	mb_init_i64(b, "groups", 3, (int64_t[]){ -1, 8, 8 });
	mb_init_i64(b, "back", 3, (int64_t[]){ -1, 4, 8 });
	mb_init_f32(b, "W", "8,8");
	mb_node(b, "Reshape", "moe/Reshape_groups", "x,groups", "g");
	mb_node(b, "MatMul", "moe/expert", "g,W", "h");
	mb_node(b, "Reshape", "moe/Reshape_back", "h,back", "y");
	mb_output(b, "y", T_FLOAT, "batch,4,8");
	char path[600];
	snprintf(path, sizeof path, "%s", mb_write(b, "groups.onnx"));
	mb_free(b);
	struct pipeline_model pm;
	int64_t batch = -1;
	if (!TAP_OK(pipeline_model_open(&pm, path, NULL, &batch) == 0 && batch == 0 && !strcmp(pm.bname, "batch"),
		    "the grouping model has a symbolic batch"))
		return;
	char *want1 = text_of(onnx_import_batch(path, NULL, "batch", 1));
	char *once1 = text_of(pipeline_load(&pm, 1));
	TAP_OK(!strcmp(want1, once1) &&
		       strstr(once1, "node \"moe/Reshape_groups\" (Reshape): cannot reshape [1,4,8] into [-1,8,8]"),
	       "size 1 is refused with the import's message");
	TAP_DIAG("  %s", once1);
	char *want2 = text_of(onnx_import_batch(path, NULL, "batch", 2));
	char *once2 = text_of(pipeline_load(&pm, 2));
	TAP_OK(!strcmp(want2, once2) && strncmp(once2, "error: ", 7), "size 2 builds the import's graph");
	free(want1);
	free(once1);
	free(want2);
	free(once2);
	pipeline_model_close(&pm);
}

/* IR text read once, its file deleted: each load parses the same graph. */
static void test_ir_text(const char *models)
{
	char src[1024], path[600];
	snprintf(src, sizeof src, "%s/mlp_op17/model.onnx", models);
	snprintf(path, sizeof path, "%s/mlp.ir", tmpdir);
	char *want = text_of(onnx_import(src, NULL, NULL));
	FILE *f = fopen(path, "w");
	if (!f || fputs(want, f) < 0 || fclose(f))
		abort();
	struct pipeline_model pm;
	int64_t batch = -1;
	bool ok = pipeline_model_open(&pm, path, NULL, &batch) == 0 && batch == 4 && unlink(path) == 0;
	int nsame = 0;
	for (int i = 0; ok && i < NSIZES; i++) {
		char *once = text_of(pipeline_load(&pm, sizes[i]));
		nsame += !strcmp(want, once);
		free(once);
	}
	TAP_OK(ok && nsame == NSIZES, "IR text read once, its file deleted, parses to the same graph every time");
	if (ok)
		pipeline_model_close(&pm);
	free(want);
	ok = pipeline_model_open(&pm, path, NULL, &batch) < 0;
	TAP_OK(ok && strstr(ir_error(), "mlp.ir: cannot open"), "a missing IR text file: %s", ir_error());
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_model_once MODELS_DIR\n");
		return 2;
	}
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	test_fixtures(argv[1]);
	test_no_file(argv[1]);
	test_grouping();
	test_ir_text(argv[1]);
	tmpdir_remove(tmpdir);
	return tap_done();
}
