/*
 * tmpdir.h: a test's temporary directory, made from a mkdtemp template at
 * the start and removed with everything the test wrote there at the end.
 * Needs _GNU_SOURCE (nftw) defined before the first #include.
 */
#ifndef PCC_TESTS_TMPDIR_H
#define PCC_TESTS_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

/* Makes the directory, templ's XXXXXX replaced; 0, or -1 with the reason
 * printed. */
static inline int tmpdir_make(char *templ)
{
	if (!mkdtemp(templ)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

static inline int tmpdir_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* Removes dir and everything in it. */
static inline void tmpdir_remove(const char *dir)
{
	nftw(dir, tmpdir_remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

#endif
