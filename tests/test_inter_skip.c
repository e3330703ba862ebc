/*
 * test_inter_skip.c: the inter-op search never dies on one candidate it
 * cannot build. A model that groups samples in twos (a Reshape of
 * x[batch,4,8] into [-1,8,8], as GShard's MoE groups tokens) cannot take a
 * micro-batch of one sample:
 *   - with a batch of 8, the search skips size 1, counts it, and plans an
 *     even micro-batch size, which lowers to a plan that verifies;
 *   - with a batch of 3 (sizes 1 and 3) or --micro-batches 8 (size 1),
 *     nothing works: one message names the node, the sizes tried and the
 *     smallest that works (2);
 *   - a model that fails at every size (an unsupported op) keeps the
 *     import's own message;
 *   - the pcc binary (argv[1]) prints the skipped line with its plan, and
 *     one stderr line and exit status 1 when nothing works.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "compiler/pipeline/pipeline.h"
#include "compiler/search/search.h"
#include "ir/plan.h"
#include "onnx_builder.h"

static const char *pcc;

/* x[batch,4,8] -> Reshape "moe/Reshape_groups" to [-1,8,8] -> MatMul W ->
 * Reshape to [-1,4,8]; bad_op: an unsupported op after it. */
static const char *grouping_model(const char *file, bool bad_op)
{
	static char path[600];
	struct mb *b = mb_new(17);
	mb_input(b, "x", T_FLOAT, "batch,4,8");
	mb_init_i64(b, "groups", 3, (int64_t[]){ -1, 8, 8 });
	mb_init_i64(b, "back", 3, (int64_t[]){ -1, 4, 8 });
	mb_init_f32(b, "W", "8,8");
	mb_node(b, "Reshape", "moe/Reshape_groups", "x,groups", "g");
	mb_node(b, "MatMul", "moe/expert", "g,W", "h");
	mb_node(b, "Reshape", "moe/Reshape_back", "h,back", bad_op ? "y0" : "y");
	if (bad_op)
		mb_node(b, "FooBar", "foo", "y0", "y");
	mb_output(b, "y", T_FLOAT, "batch,4,8");
	snprintf(path, sizeof path, "%s", mb_write(b, file));
	mb_free(b);
	return path;
}

struct loader {
	const char *path;
	char name[64];
};

static struct ir_graph *load(void *ctx, int64_t b)
{
	const struct loader *l = ctx;
	return onnx_import_batch(l->path, NULL, l->name, b);
}

/* inter_pass on cpu:2 for a batch of B (micro > 0: that many micro-batches). */
static int plan(struct loader *ld, const struct cost_cluster *c, int64_t B, int micro, struct inter_opts *o,
		struct inter_plan *p)
{
	inter_opts_init(o);
	o->batch = B;
	o->micro = micro;
	o->load = load;
	o->ctx = ld;
	ir_error_clear();
	return inter_pass(c, o, p);
}

static void test_skip(void)
{
	struct cost_cluster c;
	struct loader ld = { grouping_model("groups.onnx", false), "" };
	int64_t sb = -1;
	if (!TAP_OK(cost_cluster_parse("cpu:2", &c) == 0 &&
			    onnx_batch_dim(ld.path, NULL, ld.name, sizeof ld.name, &sb) == 0 &&
			    !strcmp(ld.name, "batch") && sb == 0,
		    "the grouping model has a symbolic batch"))
		return;
	struct inter_opts o;
	struct inter_plan p;
	int rc = plan(&ld, &c, 8, 0, &o, &p);
	if (!TAP_OK(rc == 0, "batch 8: a plan despite micro-batch size 1, which cannot be shaped")) {
		TAP_DIAG("%s", ir_error());
		return;
	}
	TAP_OK(p.micro_batch % 2 == 0 && p.micro_batch * p.micro == 8, "its micro-batch size is even: %lld x %d",
	       (long long)p.micro_batch, p.micro);
	TAP_OK(p.nskipped == 1 && p.skipped_size == 1 && strstr(p.skipped_why, "node \"moe/Reshape_groups\"") &&
		       strstr(p.skipped_why, "[1,4,8]"),
	       "one candidate skipped: size 1, and why");
	TAP_DIAG("  %d skipped, size %lld: %s", p.nskipped, (long long)p.skipped_size, p.skipped_why);
	struct compile_input in = { ld.path, "cpu:2", &c, &o, &p, NULL, NULL, NULL, NULL, NULL };
	struct plan *pl = NULL;
	rc = compile_lower(&in, &pl);
	TAP_OK(rc == 0 && plan_verify(pl) == 0, "and that plan lowers and verifies");
	if (rc < 0)
		TAP_DIAG("%s", ir_error());
	plan_free(pl);
	inter_plan_free(&p);

	static const char *const want[] = {
		"node \"moe/Reshape_groups\" (Reshape): cannot reshape [1,4,8] into [-1,8,8]: micro-batch sizes 1 and "
		"3 (every one tried for a batch of 3) cannot be shaped; the smallest that works is 2",
		"node \"moe/Reshape_groups\" (Reshape): cannot reshape [1,4,8] into [-1,8,8]: micro-batch size 1 "
		"(--micro-batches 8 of a batch of 8) cannot be shaped; the smallest that works is 2",
	};
	rc = plan(&ld, &c, 3, 0, &o, &p);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), ld.path) && strstr(ir_error(), want[0]) && !strchr(ir_error(), '\n'),
	       "batch 3: no size works, one line names the node, the sizes and the smallest that works");
	TAP_DIAG("  %s", ir_error());
	rc = plan(&ld, &c, 8, 8, &o, &p);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), want[1]), "--micro-batches 8 of batch 8: the same, for size 1");
	TAP_DIAG("  %s", ir_error());

	struct loader bad = { grouping_model("groups_bad.onnx", true), "batch" };
	rc = plan(&bad, &c, 8, 0, &o, &p);
	TAP_OK(rc == -EINVAL && strstr(ir_error(), "node \"foo\" (FooBar): unsupported op") &&
		       !strstr(ir_error(), "micro-batch"),
	       "an error at every size is the import's own");
	TAP_DIAG("  %s", ir_error());
}

/* Runs pcc with args, stdout and stderr into files; the exit status. */
static int run_pcc(const char *args, char *out, char *err, size_t n)
{
	char cmd[2048], po[600], pe[600];
	snprintf(po, sizeof po, "%s/stdout.txt", tmpdir);
	snprintf(pe, sizeof pe, "%s/stderr.txt", tmpdir);
	snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", pcc, args, po, pe);
	int st = system(cmd);
	const char *paths[2] = { po, pe };
	char *bufs[2] = { out, err };
	for (int i = 0; i < 2; i++) {
		FILE *f = fopen(paths[i], "r");
		size_t k = f ? fread(bufs[i], 1, n - 1, f) : 0;
		bufs[i][k] = 0;
		if (f)
			fclose(f);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void)
{
	char args[1024], out[4096], err[4096], planpath[600];
	const char *model = grouping_model("cli.onnx", false);
	snprintf(planpath, sizeof planpath, "%s/plan.bin", tmpdir);
	snprintf(args, sizeof args, "'%s' --cluster cpu:2 --batch 8 -o '%s'", model, planpath);
	int st = run_pcc(args, out, err, sizeof out);
	TAP_OK(st == 0 && strstr(out, "skipped 1 candidate that cannot be shaped: micro-batch size 1 (") &&
		       strstr(out, "wrote "),
	       "pcc: the plan is written, and one line says what was skipped");
	TAP_DIAG("  status %d\n%s%s", st, out, err);
	snprintf(args, sizeof args, "'%s' --cluster cpu:2 --batch 3", model);
	st = run_pcc(args, out, err, sizeof out);
	char *nl = strchr(err, '\n');
	TAP_OK(st == 1 && !strncmp(err, "pcc: ", 5) && nl && !nl[1] && strstr(err, "the smallest that works is 2"),
	       "pcc: nothing works: exit status 1 and one line");
	TAP_DIAG("  status %d: %s", st, err);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_inter_skip PCC\n");
		return 2;
	}
	pcc = argv[1];
	if (tmpdir_make(tmpdir) < 0)
		return 1;
	test_skip();
	test_cli();
	tmpdir_remove(tmpdir);
	return tap_done();
}
