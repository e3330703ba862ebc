/*
 * fuzz.h: what the libFuzzer targets (tests/fuzz/fuzz_*.c, built and run
 * by run-fuzz.sh) share: the entry points, a per-process file for readers
 * that take a path, and the check that a refusal is one line.
 *
 * A target aborts (which libFuzzer reports as a crash, with the input) on
 * anything but a clean outcome: a reader's result that breaks its own
 * contract, or an error message that is empty or spans lines.
 */
#ifndef PCC_TESTS_FUZZ_H
#define PCC_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints why the input is a finding, then aborts. */
#define FUZZ_FAIL(...)                                        \
	do {                                                  \
		fprintf(stderr, "fuzz_target: " __VA_ARGS__); \
		fputc('\n', stderr);                          \
		abort();                                      \
	} while (0)

/* "$FUZZ_TMP/NAME_PID.EXT" (or under /tmp) into path, PATH_MAX bytes. */
static inline void fuzz_path(char *path, size_t n, const char *name, const char *ext)
{
	const char *dir = getenv("FUZZ_TMP");
	snprintf(path, n, "%s/%s_%ld%s", dir ? dir : "/tmp", name, (long)getpid(), ext);
}

/* Writes the input to path; a failure here is the machine's, not pcc's. */
static inline void fuzz_write(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		FUZZ_FAIL("cannot write %s", path);
}

/* A refusal's message: one line, not empty. */
static inline void fuzz_check_message(const char *what, const char *msg)
{
	if (!msg || !*msg)
		FUZZ_FAIL("%s failed with no message", what);
	if (strchr(msg, '\n'))
		FUZZ_FAIL("%s: message spans lines: %s", what, msg);
}

/* A copy of the input with a terminating NUL, for readers of C strings. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;
	return s;
}

#endif
