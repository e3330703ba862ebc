/*
 * test_models.c: every fixture model exported from PyTorch (tests/models,
 * made by gen_fixtures.py) imports, verifies and evaluates to PyTorch's own
 * outputs.
 *
 * Tolerance: PyTorch and pcc both compute in f32 but in different orders
 * (pcc rounds each elementwise op once from f64; dots go through sgemm).
 * Each op then differs by a few f32 ulps (eps = 1.2e-7); the deepest
 * fixture chains about 60 ops, with dot lengths up to 128 whose rounding
 * grows like sqrt(k) eps. That bounds the relative drift by about
 * 60 * sqrt(128) * 1.2e-7 = 8e-5, so rtol = 1e-4 with atol = 1e-5 (for
 * values that cancel to near zero, relative to outputs of order 1-20).
 * The observed worst errors are printed so a regression toward the bound
 * is visible long before it fails.
 */
#include <dirent.h>
#include <stdlib.h>

#include "tests/harness.h"
#include "tests/tap.h"

#define RTOL 1e-4
#define ATOL 1e-5

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *root = argc > 1 ? argv[1] : "tests/models";
	char *names[256];
	int n = 0;
	DIR *d = opendir(root);
	if (!d) {
		printf("Bail out! cannot open %s\n", root);
		return 1;
	}
	for (struct dirent *e; (e = readdir(d)) && n < 256;)
		if (strstr(e->d_name, "_op1"))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof *names, cmp_names);
	TAP_OK(n >= 20, "found %d fixture models in %s", n, root);
	/* symbolic dims of the dynamic exports, as in their test data */
	struct onnx_dim_binding dims[] = { { "batch", 2 }, { "seq", 8 } };
	struct onnx_import_opts o;
	onnx_import_opts_init(&o);
	o.dims = dims;
	o.ndims = 2;
	for (int i = 0; i < n; i++) {
		char path[1024], data[1024];
		snprintf(path, sizeof path, "%s/%s/model.onnx", root, names[i]);
		snprintf(data, sizeof data, "%s/%s/test_data_set_0", root, names[i]);
		struct ir_graph *g = onnx_import(path, &o, NULL);
		if (!TAP_OK(g != NULL, "%s imports", names[i])) {
			TAP_DIAG("%s", ir_error());
			free(names[i]);
			continue;
		}
		TAP_OK(ir_verify(g) == 0, "%s verifies", names[i]);
		struct cmp c;
		run_data_set(g, data, RTOL, ATOL, &c);
		if (!TAP_OK(c.bad == 0, "%s matches PyTorch (max abs err %.2e, max rel err %.2e)", names[i], c.max_abs,
			    c.max_rel))
			TAP_DIAG("%s", c.what);
		ir_graph_free(g);
		free(names[i]);
	}
	return tap_done();
}
