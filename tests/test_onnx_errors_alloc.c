/*
 * test_onnx_errors_alloc.c: the ONNX importer (compiler/frontend/onnx_*.c), and the
 * interpreter on the graphs it makes, with every allocation failing in
 * turn.
 *
 * For a small MLP, a model whose shape computation folds into constants
 * at import, one of opset 19's new forms and a quantized one with
 * com.microsoft ops (onnx_builder.h), allocation k = 0, 1, ... fails
 * during import until the import succeeds: each failure must end in NULL
 * with a message naming the file; then the same for interp_run on the
 * imported graph, -ENOMEM each time. Each failure point runs in a child
 * process, so an abort, a hang (5 s) or, under ASan or valgrind, a leak
 * fails the case. Also an attribute without a name, imported in a child
 * as a hang is possible. Messages for bad models:
 * test_onnx_errors_messages.c.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "onnx_builder.h"

/* ---- allocation failures -------------------------------------------------------
 * Each failure point runs in a child process so that an abort is reported
 * as one failing case (and, under ASan or valgrind, a leak fails the
 * child's exit status). */

enum { CLEAN_FAILURE, BAD_MESSAGE, SUCCEEDED };

struct fail_point {
	long k;                   /* allocations that succeed first */
	const char *path;         /* model to import */
	const struct ir_graph *g; /* graph to run */
};

static int import_at(const struct fail_point *f)
{
	ir_error_clear();
	ir_alloc_fail_after(f->k);
	struct ir_graph *g = onnx_import(f->path, NULL, NULL);
	ir_alloc_fail_after(-1);
	ir_graph_free(g);
	if (g)
		return SUCCEEDED;
	if (strstr(ir_error(), f->path))
		return CLEAN_FAILURE;
	TAP_DIAG("  failing allocation %ld: %s", f->k, ir_error());
	return BAD_MESSAGE;
}

static int run_at(const struct fail_point *f)
{
	int rc = run_zeros(f->g, f->k);
	if (rc == 0 || rc == -ENOMEM)
		return rc == 0 ? SUCCEEDED : CLEAN_FAILURE;
	TAP_DIAG("  failing allocation %ld: rc %d: %s", f->k, rc, ir_error());
	return BAD_MESSAGE;
}

/* fn(f) in a child: its result, or -signal when it crashed or ran for more
 * than 5 s (SIGALRM). */
static int in_child(int (*fn)(const struct fail_point *), const struct fail_point *f)
{
	int st;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(5);
		exit(fn(f));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		abort();
	return WIFSIGNALED(st) ? -WTERMSIG(st) : WEXITSTATUS(st);
}

/* Fails allocation k = 0, 1, ... until fn succeeds; one case. */
static void sweep_failures(const char *what, int (*fn)(const struct fail_point *), struct fail_point *f)
{
	long bad = 0;
	int r = -1;
	for (f->k = 0; f->k < 100000; f->k++) {
		r = in_child(fn, f);
		if (r == SUCCEEDED)
			break;
		if (r != CLEAN_FAILURE)
			bad++;
		if (r < 0 || r > SUCCEEDED)
			TAP_DIAG("  failing allocation %ld: %s", f->k,
				 r < 0 ? strsignal(-r) : "unexpected exit status");
	}
	TAP_OK(r == SUCCEEDED && bad == 0, "%s: %ld failure points, %ld not clean", what, f->k, bad);
}

/* An attribute without a name (empty, or absent from the file) on an op
 * that accepts attributes: imported in a child, as a hang is possible. */
static void test_nameless_attribute(void)
{
	const char *names[] = { "", NULL };
	for (int i = 0; i < 2; i++) {
		struct mb *b = mb_reshape_to(3, 2);
		mb_attr_int(b, b->g.node[0], "allowzero", 0);
		b->g.node[0]->attribute[0]->name = (char *)names[i];
		struct fail_point f = { .k = -1, .path = mb_write(b, "nameless_attr.onnx") };
		int r = in_child(import_at, &f);
		TAP_OK(r == CLEAN_FAILURE, "attribute with %s name rejected", names[i] ? "an empty" : "no");
		if (r < 0)
			TAP_DIAG("  %s", strsignal(-r));
		mb_free(b);
	}
}

static void alloc_failures(struct mb *b, const char *name)
{
	char what[128];
	struct fail_point f = { .path = mb_write(b, name) };
	snprintf(what, sizeof what, "%s: import under allocation failure (NULL, message names the file)", name);
	sweep_failures(what, import_at, &f);
	struct ir_graph *g = onnx_import(f.path, NULL, NULL);
	snprintf(what, sizeof what, "%s: interp_run under allocation failure (-ENOMEM)", name);
	if ((f.g = g))
		sweep_failures(what, run_at, &f);
	ir_graph_free(g);
	mb_free(b);
}

static void test_alloc_failures(void)
{
	alloc_failures(mb_mlp(), "alloc_mlp.onnx");
	alloc_failures(mb_folding(), "alloc_folding.onnx");
	alloc_failures(mb_opsets(), "alloc_opsets.onnx");
	alloc_failures(mb_quantized(), "alloc_quantized.onnx");
}

int main(void)
{
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	test_nameless_attribute();
	test_alloc_failures();
	tmpdir_remove(tmpdir);
	return tap_done();
}
