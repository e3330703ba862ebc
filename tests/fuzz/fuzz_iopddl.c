/*
 * fuzz_iopddl.c: libFuzzer target for IOPDDL contest instances
 * (shard_problem_read_iopddl, solvers/shard_read.c), what pcc-iopddl and
 * benchmarks/iopddl.sh read: JSON, or JSON compressed with gzip.
 *
 * An input is the file, written to one file per process and read by path.
 * A problem that reads must pass shard_problem_check (the reader promises
 * full validation) and evaluate: the first strategy of every node, and
 * the last. Nonzero with one line in shard_error() is a clean refusal, and
 * leaves the problem zeroed.
 */
#include "solvers/solvers.h"
#include "tests/fuzz/fuzz.h"

static char path[4096], gz_path[4096];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_path(path, sizeof path, "fuzz_iopddl", ".json");
	fuzz_path(gz_path, sizeof gz_path, "fuzz_iopddl", ".json.gz");
	return 0;
}

static void evaluate(const struct shard_problem *p, bool last)
{
	struct shard_eval e;
	int *choice = malloc(sizeof *choice * ((size_t)p->nnodes + 1));
	if (!choice)
		abort();
	for (int i = 0; i < p->nnodes; i++)
		choice[i] = last ? shard_problem_nstrat(p, i) - 1 : 0;
	if (shard_evaluate(p, choice, &e) != 0)
		FUZZ_FAIL("a valid choice does not evaluate: %s", shard_error());
	free(choice);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct shard_problem p;
	/* named as the contest names them; the branch also keeps plain and
	 * compressed inputs apart in the corpus (zlib has no coverage) */
	const char *file = size >= 2 && data[0] == 0x1f && data[1] == 0x8b ? gz_path : path;
	fuzz_write(file, data, size);
	if (shard_problem_read_iopddl(file, &p) != 0) {
		fuzz_check_message("shard_problem_read_iopddl", shard_error());
		if (p.nnodes || p.strat_off || p.cost || p.name)
			FUZZ_FAIL("a refused problem is not left zeroed");
		return 0;
	}
	if (shard_problem_check(&p) != 0)
		FUZZ_FAIL("a problem that read fails its check: %s", shard_error());
	evaluate(&p, false);
	evaluate(&p, true);
	shard_problem_free(&p);
	return 0;
}
