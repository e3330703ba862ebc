/*
 * conformance.h: what test_conformance and test_conformance_run share:
 * counts per op of the ONNX node tests, and the sort of their names.
 */
#ifndef PCC_TESTS_CONFORMANCE_H
#define PCC_TESTS_CONFORMANCE_H

#include <stdio.h>
#include <string.h>

struct op_count {
	char op[64];
	int passed, failed, unsupported;
};

#define MAX_OPS 1024
static struct op_count ops[MAX_OPS];
static int nops;

/* The counts of op, new ones zero (past MAX_OPS ops, the last entry). */
static inline struct op_count *op_entry(const char *op)
{
	for (int i = 0; i < nops; i++)
		if (!strcmp(ops[i].op, op))
			return &ops[i];
	if (nops == MAX_OPS)
		return &ops[MAX_OPS - 1];
	snprintf(ops[nops].op, sizeof ops[nops].op, "%s", op);
	return &ops[nops++];
}

/* qsort's order of test names (char *). */
static inline int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}
#endif
