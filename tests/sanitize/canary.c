/* canary.c: scripts/test-sanitize's check of its own report collection,
 * built with the suite's sanitizers and run through run-one.sh before the
 * suite. `canary shift` shifts an int by 40 bits (undefined behaviour),
 * `canary heap` writes past a heap block, `canary none` does neither and
 * exits 0. The script runs each error as a test that expects it to fail
 * with its stderr discarded (`! canary shift 2>/dev/null`): run-one.sh
 * must fail that test all the same, from the report alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "none";
	int n = argc > 2 ? atoi(argv[2]) : 40;
	if (strcmp(what, "shift") == 0) {
		int x = argc;
		printf("%d\n", x << n);
	} else if (strcmp(what, "heap") == 0) {
		char *p = malloc(4);
		p[strlen(what)] = 1; /* p[4], just past the block */
		printf("%d\n", p[0]);
		free(p);
	}
	return 0;
}
