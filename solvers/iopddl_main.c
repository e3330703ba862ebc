/*
 * iopddl_main.c: pcc-iopddl PROBLEM.json[.gz] TIMEOUT_SECONDS, the IOPDDL
 * contest's solver interface over pcc's intra-op heuristic.
 *
 * Prints a one-line summary on stderr and, as the last stdout line, one
 * strategy index per node: "[0, 0, 2, 1, 0]". Exit status: 0 solved;
 * 1 bad input (one line "pcc-iopddl: FILE: ..." on stderr); 2 usage error;
 * 3 no assignment fits the usage limit (the last line is then "[]").
 * PCC_IOPDDL_VERBOSE=1 in the environment prints the search's progress.
 * The whole run, reading included, stays inside the timeout with a margin.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "solvers/solvers.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(void)
{
	fprintf(stderr, "usage: pcc-iopddl PROBLEM.json[.gz] TIMEOUT_SECONDS\n");
	return 2;
}

static void print_choice(const int *choice, int n)
{
	fputc('[', stdout);
	for (int i = 0; i < n; i++)
		printf(i ? ", %d" : "%d", choice[i]);
	fputs("]\n", stdout);
}

/* The search's share of the timeout: what reading left, less a margin for
 * printing and process exit (5%, at least 0.3 s). */
static double search_budget(double timeout, double elapsed)
{
	double margin = timeout * 0.05 > 0.3 ? timeout * 0.05 : 0.3;
	double left = timeout - elapsed - margin;
	return left > 0.01 ? left : 0.01;
}

int main(int argc, char **argv)
{
	double t0 = now();
	if (argc != 3)
		return usage();
	char *end;
	double timeout = strtod(argv[2], &end);
	if (end == argv[2] || *end || !(timeout > 0))
		return usage();
	struct shard_problem p;
	if (shard_problem_read_iopddl(argv[1], &p) < 0) {
		fprintf(stderr, "pcc-iopddl: %s\n", shard_error());
		return 1;
	}
	struct shard_heuristic_params prm;
	shard_heuristic_params_init(&prm);
	prm.time_limit = search_budget(timeout, now() - t0);
	prm.max_rounds = INT_MAX;
	prm.verbose = getenv("PCC_IOPDDL_VERBOSE") != NULL;
	int *choice = malloc(sizeof *choice * ((size_t)p.nnodes + 1));
	struct shard_eval ev;
	int rc = choice ? shard_heuristic(&p, &prm, choice, &ev) : -ENOMEM;
	if (rc < 0) {
		fprintf(stderr, "pcc-iopddl: %s: %s\n", argv[1], rc == -ENOMEM && !choice ? "out of memory" : shard_error());
		puts("[]");
		shard_problem_free(&p);
		free(choice);
		return rc == -ENOSPC ? 3 : 1;
	}
	char c[SHARD_I128_STRLEN], pk[SHARD_I128_STRLEN];
	fprintf(stderr, "pcc-iopddl: %s: %d nodes, %d edges: cost %s, peak usage %s of %lld, %.2f s\n",
		p.name ? p.name : argv[1], p.nnodes, p.nedges, shard_i128_str(ev.cost, c),
		shard_i128_str(ev.peak_usage, pk), (long long)p.usage_limit, now() - t0);
	print_choice(choice, p.nnodes);
	shard_problem_free(&p);
	free(choice);
	return 0;
}
