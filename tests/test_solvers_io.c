/*
 * test_solvers_io.c: the intra-op solver library's instances
 * (solvers/solvers.h): the IOPDDL reader and its error messages, the
 * independent evaluator against hand computations (the example, int64
 * sums past 2^63, memory over huge intervals), and the solver on the
 * contest's small instances.
 *
 * Usage: test_solvers_io EXAMPLE_DIR SHARED_DIR. EXAMPLE_DIR holds
 * example.json (tests/iopddl); SHARED_DIR the contest instances
 * (../shared/iopddl), whose cases are skipped when it is missing.
 */
#define _GNU_SOURCE /* nftw (tmpdir.h) */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "tests/solvers_check.h"
#include "tests/tmpdir.h"

static const char *example_dir = "tests/iopddl";
static const char *shared_dir = "../shared/iopddl";
static char tmp_dir[] = "/tmp/test_solvers.XXXXXX";

/* ---- the example --------------------------------------------------------- */

static void test_example(void)
{
	struct shard_problem p;
	char path[4096];
	snprintf(path, sizeof path, "%s/example.json", example_dir);
	if (!TAP_OK(shard_problem_read_iopddl(path, &p) == 0, "example.json reads: %s", shard_error()))
		return;
	TAP_OK(p.nnodes == 5 && p.nedges == 5 && p.usage_limit == 50 && p.strat_off[5] == 9 &&
		       p.edge_off[5] == 2 + 3 + 4 + 3 + 2 && !strcmp(p.name, "example"),
	       "example: 5 nodes, 9 strategies, 5 edges, 14 matrix entries, limit 50");
	/*
	 * By hand, [0, 0, 2, 1, 0]: nodes 15 + 55 + 35 + 75 + 95 = 275; edges
	 * (0,1) 30, (0,2) 40, (1,3) entry 0*2+1 = 10, (2,4) 30, (3,4) entry 1
	 * = 60: 170; total 445. Memory: on [50, 70) nodes 0, 1, 2 hold
	 * 10 + 25 + 15 = 50, at the limit; on [110, 120) 15 + 10 + 15 = 40.
	 * Node 2 with strategy 1 would be cheaper (45 + 10 + 20 = 75 against
	 * 35 + 40 + 30 = 105, total 415) but needs 20 bytes: 55 on the 20
	 * points 50..69.
	 */
	int best[5] = { 0, 0, 2, 1, 0 }, cheap[5] = { 0, 0, 1, 1, 0 }, got[5];
	struct shard_eval ev;
	TAP_OK(shard_evaluate(&p, best, &ev) == 0 && i128_is(ev.cost, "445") && ev.feasible &&
		       i128_is(ev.peak_usage, "50") && ev.peak_time == 50 && ev.over_points == 0,
	       "evaluate [0,0,2,1,0]: 445, feasible, peak 50 at t=50");
	TAP_OK(shard_evaluate(&p, cheap, &ev) == 0 && i128_is(ev.cost, "415") && !ev.feasible &&
		       i128_is(ev.peak_usage, "55") && ev.over_points == 20 && ev.first_over_time == 50,
	       "evaluate [0,0,1,1,0]: 415 but 20 points over the limit from t=50");
	struct shard_heuristic_params prm;
	shard_heuristic_params_init(&prm);
	prm.time_limit = 2;
	TAP_OK(shard_heuristic(&p, &prm, got, &ev) == 0 && !memcmp(got, best, sizeof best) && i128_is(ev.cost, "445"),
	       "heuristic finds the optimum [0, 0, 2, 1, 0] of cost 445");
	p.usage_limit = 49;
	TAP_OK(shard_heuristic(&p, &prm, got, &ev) == -ENOSPC && has("usage limit 49") && has("50 at time 50"),
	       "limit 49 is infeasible: -ENOSPC naming the peak 50 at t=50");
	shard_problem_free(&p);
}

/* ---- evaluator ----------------------------------------------------------- */

static void test_evaluator_extremes(void)
{
	struct shard_problem p;
	struct shard_eval ev;
	problem_alloc(&p, 3, 2, 2);
	for (int i = 0; i < 3; i++) {
		p.strat_off[i + 1] = 2 * (i + 1);
		p.cost[2 * i] = INT64_MAX;
		p.cost[2 * i + 1] = INT64_MIN;
		p.usage[2 * i] = INT64_MAX; /* [0, 0]: never live */
	}
	for (int k = 0; k < 2; k++) {
		p.edge_u[k] = k, p.edge_v[k] = k + 1;
		p.edge_off[k + 1] = 4 * (k + 1);
		for (int j = 0; j < 4; j++)
			p.edge_cost[4 * k + j] = j == 0 ? INT64_MAX : INT64_MIN;
	}
	p.usage_limit = 0;
	int zero[3] = { 0, 0, 0 }, one[3] = { 1, 1, 1 }, bad[3] = { 0, 2, 0 };
	/* 5 (2^63 - 1) = 46116860184273879035; 5 (-2^63) = -46116860184273879040 */
	TAP_OK(shard_evaluate(&p, zero, &ev) == 0 && i128_is(ev.cost, "46116860184273879035") && ev.feasible,
	       "five INT64_MAX terms sum exactly past 2^63; [0,0] intervals hold no memory");
	TAP_OK(shard_evaluate(&p, one, &ev) == 0 && i128_is(ev.cost, "-46116860184273879040"),
	       "five INT64_MIN terms sum exactly");
	TAP_OK(shard_evaluate(&p, bad, &ev) == -EINVAL && has("node 1: strategy 2 out of range"),
	       "an out-of-range choice is rejected naming the node");
	/* Usages INT64_MAX on [0, 10^18) and [5, 10^17), limit INT64_MAX: the
	 * sum 2^64 - 2 is over the limit on the 10^17 - 5 points from t = 5. */
	for (int i = 0; i < 2; i++)
		p.usage[2 * i] = INT64_MAX;
	p.lo[0] = 0, p.hi[0] = 1000000000000000000;
	p.lo[1] = 5, p.hi[1] = 100000000000000000;
	p.usage_limit = INT64_MAX;
	TAP_OK(shard_evaluate(&p, zero, &ev) == 0 && !ev.feasible && ev.over_points == 100000000000000000 - 5 &&
		       ev.first_over_time == 5 && i128_is(ev.peak_usage, "18446744073709551614") && ev.peak_time == 5,
	       "huge intervals: 10^17 - 5 points over from t=5, peak 2^64 - 2 summed exactly");
	TAP_OK(shard_evaluate(&p, one, &ev) == 0 && ev.feasible && i128_is(ev.peak_usage, "0"),
	       "zero-usage strategies: feasible, peak 0");
	shard_problem_free(&p);
}

/* ---- malformed files ----------------------------------------------------- */

static const char *write_file(const char *name, const char *text)
{
	static char path[4096];
	snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
	FILE *f = fopen(path, "wb");
	fputs(text, f);
	fclose(f);
	return path;
}

#define NODES_OK "\"nodes\": {\"costs\": [[1, 2], [3]], \"usages\": [[1, 1], [2]], \"intervals\": [[0, 2], [1, 3]]}"

static void expect_error(const char *name, const char *text, const char *msg)
{
	struct shard_problem p;
	const char *path = write_file(name, text);
	int rc = shard_problem_read_iopddl(path, &p);
	TAP_OK(rc < 0 && has(path) && has(msg), "%s: rejected with \"%s\"", name, msg);
}

static void test_malformed(void)
{
	expect_error("syntax.json", "{\"problem\": {", "malformed JSON at line 1");
	expect_error("nokey.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1]], \"intervals\": [[0, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}, \"usage_limit\": 5}}",
		     "problem.nodes: missing key \"usages\"");
	expect_error("noedge.json", "{\"problem\": {" NODES_OK ", \"edges\": {\"nodes\": [[0, 2]], \"costs\": [[0]]}}}",
		     "problem.edges.nodes[0]: node 2 does not exist (2 nodes)");
	expect_error("matrix.json",
		     "{\"problem\": {" NODES_OK ", \"edges\": {\"nodes\": [[0, 1]], \"costs\": [[0, 1, 2]]}}}",
		     "problem.edges.costs[0]: has 3 entries, expected 2 x 1 = 2");
	expect_error("usages.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1, 2]], \"usages\": [[1]], \"intervals\": [[0, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.usages[0]: has 1 entries, expected 2");
	expect_error("negative.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1]], \"usages\": [[-1]], \"intervals\": [[0, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.usages[0][0]: negative usage -1");
	expect_error("interval.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1]], \"usages\": [[1]], \"intervals\": [[3, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.intervals[0]: [3, 1) has lo > hi");
	expect_error("real.json",
		     "{\"problem\": {\"nodes\": {\"costs\": [[1.5]], \"usages\": [[1]], \"intervals\": [[0, 1]]}, "
		     "\"edges\": {\"nodes\": [], \"costs\": []}}}",
		     "problem.nodes.costs[0][0]: expected an integer");
	/* gzip magic, then garbage */
	expect_error("bad.json.gz", "\x1f\x8b\x08\x00garbage that is not deflate data", "cannot read");
	struct shard_problem p;
	char path[4096];
	snprintf(path, sizeof path, "%s/missing.json", tmp_dir);
	TAP_OK(shard_problem_read_iopddl(path, &p) < 0 && has("missing.json: cannot open"),
	       "a missing file: cannot open");

	/* A valid gzip file reads like the plain one; cut short, it fails. */
	snprintf(path, sizeof path, "%s/ok.json.gz", tmp_dir);
	const char *text = "{\"problem\": {" NODES_OK ", \"edges\": {\"nodes\": [[0, 1]], \"costs\": [[5, 7]]}, "
			   "\"usage_limit\": 3}}";
	gzFile gz = gzopen(path, "wb");
	gzputs(gz, text);
	gzclose(gz);
	TAP_OK(shard_problem_read_iopddl(path, &p) == 0 && p.nnodes == 2 && p.edge_cost[1] == 7 && p.usage_limit == 3,
	       "a gzip-compressed instance reads: %s", shard_error());
	shard_problem_free(&p);
	FILE *f = fopen(path, "rb");
	char buf[4096];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	f = fopen(path, "wb");
	fwrite(buf, 1, n - 12, f);
	fclose(f);
	TAP_OK(shard_problem_read_iopddl(path, &p) < 0 && has("cannot read"), "a truncated gzip file is rejected");
}

/* ---- the fast path against jansson's ------------------------------------- */

static bool same_problem(const struct shard_problem *a, const struct shard_problem *b)
{
	if (a->nnodes != b->nnodes || a->nedges != b->nedges || a->usage_limit != b->usage_limit ||
	    !a->name != !b->name || (a->name && strcmp(a->name, b->name)))
		return false;
	size_t n = (size_t)a->nnodes, m = (size_t)a->nedges;
	if (memcmp(a->strat_off, b->strat_off, sizeof *a->strat_off * (n + 1)) ||
	    memcmp(a->lo, b->lo, sizeof *a->lo * n) || memcmp(a->hi, b->hi, sizeof *a->hi * n) ||
	    memcmp(a->edge_u, b->edge_u, sizeof *a->edge_u * m) ||
	    memcmp(a->edge_v, b->edge_v, sizeof *a->edge_v * m) ||
	    memcmp(a->edge_off, b->edge_off, sizeof *a->edge_off * (m + 1)))
		return false;
	size_t ns = (size_t)a->strat_off[n], ne = (size_t)a->edge_off[m];
	return !memcmp(a->cost, b->cost, sizeof *a->cost * ns) && !memcmp(a->usage, b->usage, sizeof *a->usage * ns) &&
	       !memcmp(a->edge_cost, b->edge_cost, sizeof *a->edge_cost * ne);
}

/* text as the contest writes it (the fast path) and with an extra key in
 * "problem" after its first '{' (jansson's path: the fast one refuses
 * keys it does not know) read to the same problem. */
static bool both_paths(const char *name, const char *text)
{
	const char *at = strstr(text, "\"problem\"");
	at = at ? strchr(at, '{') : NULL;
	if (!at)
		return false;
	size_t len = strlen(text), k = (size_t)(at - text) + 1;
	char *alt = malloc(len + 16);
	memcpy(alt, text, k);
	memcpy(alt + k, "\"x\": 0, ", 8);
	memcpy(alt + k + 8, text + k, len - k + 1);
	char fast_name[64], slow_name[64];
	snprintf(fast_name, sizeof fast_name, "fast-%s", name);
	snprintf(slow_name, sizeof slow_name, "slow-%s", name);
	struct shard_problem a, b;
	bool ok = shard_problem_read_iopddl(write_file(fast_name, text), &a) == 0;
	ok = shard_problem_read_iopddl(write_file(slow_name, alt), &b) == 0 && ok;
	ok = ok && same_problem(&a, &b);
	shard_problem_free(&a);
	shard_problem_free(&b);
	free(alt);
	return ok;
}

static void test_fast_path(void)
{
	TAP_OK(both_paths("edge.json",
			  "{\"problem\":{\"edges\":{\"costs\":[[1000000000000000000,-5],[9223372036854775807,0,1,2]],"
			  "\"nodes\":[[0,1],[1,1]]},\"nodes\":{\"intervals\":[[-3,4],[0,0]],"
			  "\"costs\":[[0],[-9223372036854775807,7]],\"usages\":[[0],[2,3]]},\"name\":\"e\","
			  "\"usage_limit\":null}}"),
	       "fast path: 19-digit, negative and largest integers, self-loops, a null limit, as jansson reads them");
	TAP_OK(both_paths("space.json",
			  "{ \"problem\" : {\n \"nodes\" : { \"costs\" : [ [ 1 , 2 ] ], \"usages\" : [ [ 0 , "
			  "0 ] ] , \"intervals\" : [ [ 0 , 1 ] ] } ,\r\n\t\"edges\" : { \"nodes\" : [ ] , "
			  "\"costs\" : [ ] }, \"usage_limit\" : 5 } }\n"),
	       "fast path: whitespace everywhere and no edges, as jansson reads them");
	char path[4096];
	snprintf(path, sizeof path, "%s/asplos-2025-iopddl-B.json.gz", shared_dir);
	gzFile gz = gzopen(path, "rb");
	if (!gz) {
		printf("ok %d - # SKIP fast path on B: no %s\n", ++tap_n, path);
		return;
	}
	size_t cap = 1 << 20, len = 0;
	char *text = malloc(cap);
	int k;
	while ((k = gzread(gz, text + len, (unsigned)(cap - len - 1))) > 0)
		if ((len += (size_t)k) + 1 == cap)
			text = realloc(text, cap *= 2);
	gzclose(gz);
	text[len] = '\0';
	TAP_OK(both_paths("B.json", text), "fast path: contest instance B (%zu bytes) as jansson reads it", len);
	free(text);
}

/* ---- contest instances --------------------------------------------------- */

static void test_shared(const char *id, const char *best_known)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/asplos-2025-iopddl-%s.json.gz", shared_dir, id);
	if (access(path, R_OK) != 0) {
		printf("ok %d - # SKIP %s: no %s\n", ++tap_n, id, path);
		return;
	}
	struct shard_problem p;
	struct shard_solve_params prm;
	shard_solve_params_init(&prm);
	prm.time_limit = 2;
	if (!TAP_OK(shard_problem_read_iopddl(path, &p) == 0, "%s reads: %s", id, shard_error()))
		return;
	int *c = malloc(sizeof *c * (size_t)p.nnodes);
	struct shard_eval ev;
	int rc = shard_solve(&p, &prm, c, &ev);
	char b[SHARD_I128_STRLEN];
	TAP_OK(rc == 0 && ev.feasible, "%s (%d nodes): feasible within 2 s", id, p.nnodes);
	TAP_DIAG("%s: cost %s, best known %s (ratio %.3f)", id, shard_i128_str(ev.cost, b), best_known,
		 (double)ev.cost / atof(best_known));
	free(c);
	shard_problem_free(&p);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		example_dir = argv[1];
	if (argc > 2)
		shared_dir = argv[2];
	if (tmpdir_make(tmp_dir) < 0)
		return 1;
	test_example();
	test_evaluator_extremes();
	test_malformed();
	test_fast_path();
	test_shared("B", "532843");
	test_shared("G", "217039");
	tmpdir_remove(tmp_dir);
	return tap_done();
}
