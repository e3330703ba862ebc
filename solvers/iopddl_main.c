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
 *
 * pcc-iopddl --eval PROBLEM ANSWER re-checks an answer with the independent
 * evaluator: ANSWER's last non-empty line is a strategy list as printed
 * above. It prints "cost C feasible yes|no peak P limit L" and exits 0 when
 * feasible, 4 when over the limit, 1 on bad input.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	fprintf(stderr, "usage: pcc-iopddl PROBLEM.json[.gz] TIMEOUT_SECONDS\n"
			"       pcc-iopddl --eval PROBLEM.json[.gz] ANSWER\n");
	return 2;
}

/* Reads the last non-empty line of path as "[i, j, ...]" into choice (n
 * entries): 0, or -1 and one line on why (without the "pcc-iopddl: "
 * prefix) in why. tests/fuzz/fuzz_answer.c fuzzes it. */
static int read_answer(const char *path, int *choice, int n, char *why, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(why, cap, "%s: cannot open", path);
		return -1;
	}
	char *line = NULL, *last = NULL;
	size_t cap_line = 0;
	while (getline(&line, &cap_line, f) > 0) {
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue;
		free(last);
		last = strdup(line);
	}
	free(line);
	fclose(f);
	int k = 0, rc = 0;
	char *s = last ? strchr(last, '[') : NULL;
	if (!s)
		rc = -1;
	for (s = s ? s + 1 : NULL; s && rc == 0;) {
		s += strspn(s, " \t");
		if (*s == ']')
			break;
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || k == n || v < INT_MIN || v > INT_MAX) {
			rc = -1;
			break;
		}
		choice[k++] = (int)v;
		s = end + strspn(end, " \t");
		if (*s == ',')
			s++;
		else if (*s != ']')
			rc = -1;
	}
	free(last);
	if (rc == 0 && k != n)
		rc = -1;
	if (rc < 0)
		snprintf(why, cap, "%s: expected a last line \"[s0, s1, ...]\" with %d strategies", path, n);
	return rc;
}

static int eval_main(const char *problem, const char *answer)
{
	struct shard_problem p;
	if (shard_problem_read_iopddl(problem, &p) < 0) {
		fprintf(stderr, "pcc-iopddl: %s\n", shard_error());
		return 1;
	}
	int *choice = malloc(sizeof *choice * ((size_t)p.nnodes + 1)), rc = 1;
	struct shard_eval ev;
	char why[PATH_MAX + 128];
	if (choice && read_answer(answer, choice, p.nnodes, why, sizeof why) < 0) {
		fprintf(stderr, "pcc-iopddl: %s\n", why);
	} else if (choice) {
		if (shard_evaluate(&p, choice, &ev) < 0) {
			fprintf(stderr, "pcc-iopddl: %s: %s\n", answer, shard_error());
		} else {
			char c[SHARD_I128_STRLEN], pk[SHARD_I128_STRLEN];
			printf("cost %s feasible %s peak %s limit %lld\n", shard_i128_str(ev.cost, c),
			       ev.feasible ? "yes" : "no", shard_i128_str(ev.peak_usage, pk), (long long)p.usage_limit);
			rc = ev.feasible ? 0 : 4;
		}
	}
	free(choice);
	shard_problem_free(&p);
	return rc;
}

static void print_choice(const int *choice, int n)
{
	fputc('[', stdout);
	for (int i = 0; i < n; i++)
		printf(i ? ", %d" : "%d", choice[i]);
	fputs("]\n", stdout);
}

/* The search's share of the timeout: what reading left, less a margin for
 * the last step running over, expanding, checking, printing and process
 * exit (5%, at least 0.5 s). */
static double search_budget(double timeout, double elapsed)
{
	double margin = timeout * 0.05 > 0.5 ? timeout * 0.05 : 0.5;
	double left = timeout - elapsed - margin;
	return left > 0.01 ? left : 0.01;
}

int main(int argc, char **argv)
{
	double t0 = now();
	if (argc == 4 && !strcmp(argv[1], "--eval"))
		return eval_main(argv[2], argv[3]);
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
	struct shard_solve_params prm;
	shard_solve_params_init(&prm);
	prm.time_limit = search_budget(timeout, now() - t0);
	prm.verbose = getenv("PCC_IOPDDL_VERBOSE") != NULL;
	prm.stop_when_optimal = false; /* the contest scores the cost only */
	int *choice = malloc(sizeof *choice * ((size_t)p.nnodes + 1));
	struct shard_eval ev;
	int rc = choice ? shard_solve(&p, &prm, choice, &ev) : -ENOMEM;
	if (rc < 0) {
		fprintf(stderr, "pcc-iopddl: %s: %s\n", argv[1],
			rc == -ENOMEM && !choice ? "out of memory" : shard_error());
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
