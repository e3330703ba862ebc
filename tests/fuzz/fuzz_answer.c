/*
 * fuzz_answer.c: libFuzzer target for the answer file that
 * `pcc-iopddl --eval PROBLEM ANSWER` reads (read_answer, compiled in here
 * from solvers/iopddl_main.c with its main renamed), then the independent
 * evaluator (shard_evaluate, solvers/shard_eval.c) on what it read.
 *
 * An input is the answer file, written to one file per process and read
 * by path, against one fixed problem: the contest's example (5 nodes of 1
 * to 3 strategies, usage limit 50; tests/iopddl/example.json). A refusal
 * must come with one line. An answer that reads must evaluate exactly
 * when every strategy is in range, and a refused one must name a reason
 * in one line.
 */
#include "tests/fuzz/fuzz.h"

#define main pcc_iopddl_main
#include "solvers/iopddl_main.c"
#undef main

static const char problem_json[] = "{\"problem\": {\"name\": \"example\", \"nodes\": {"
				   "\"intervals\": [[30, 70], [40, 70], [50, 120], [110, 140], [110, 150]],"
				   "\"costs\": [[15], [55, 65], [25, 45, 35], [85, 75], [95]],"
				   "\"usages\": [[10], [25, 25], [15, 20, 15], [10, 10], [15]]},"
				   "\"edges\": {\"nodes\": [[0, 1], [0, 2], [1, 3], [2, 4], [3, 4]],"
				   "\"costs\": [[30, 40], [50, 10, 40], [90, 10, 20, 80], [60, 20, 30], [70, 60]]},"
				   "\"usage_limit\": 50}}";

static struct shard_problem problem;
static char path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char problem_path[4096];
	fuzz_path(problem_path, sizeof problem_path, "fuzz_answer_problem", ".json");
	fuzz_write(problem_path, (const uint8_t *)problem_json, sizeof problem_json - 1);
	if (shard_problem_read_iopddl(problem_path, &problem) != 0)
		FUZZ_FAIL("the fixed problem does not read: %s", shard_error());
	unlink(problem_path);
	fuzz_path(path, sizeof path, "fuzz_answer", ".txt");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int n = problem.nnodes, choice[5];
	char why[PATH_MAX + 128] = "";
	if (n != 5)
		FUZZ_FAIL("the fixed problem has %d nodes, not 5", n);
	fuzz_write(path, data, size);
	if (read_answer(path, choice, n, why, sizeof why) != 0) {
		fuzz_check_message("read_answer", why);
		return 0;
	}
	bool in_range = true;
	for (int i = 0; i < n; i++)
		in_range = in_range && choice[i] >= 0 && choice[i] < shard_problem_nstrat(&problem, i);
	struct shard_eval ev;
	int rc = shard_evaluate(&problem, choice, &ev);
	if (in_range && rc != 0)
		FUZZ_FAIL("an answer in range does not evaluate: %s", shard_error());
	if (!in_range) {
		if (rc == 0)
			FUZZ_FAIL("an answer out of range evaluates");
		fuzz_check_message("shard_evaluate", shard_error());
	}
	char pk[SHARD_I128_STRLEN];
	if (rc == 0 && ev.feasible != (ev.peak_usage <= (shard_i128)problem.usage_limit))
		FUZZ_FAIL("feasible says %d for peak usage %s, limit %lld", ev.feasible,
			  shard_i128_str(ev.peak_usage, pk), (long long)problem.usage_limit);
	return 0;
}
