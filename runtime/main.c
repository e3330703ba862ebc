/*
 * main.c: pcc-run, the program: all of it but main is rt_main (run.c) in
 * libpccrt, which the benchmarks' timing drivers run around their own
 * step function.
 */
#include "runtime/rt.h"

#if defined(__SANITIZE_ADDRESS__) /* gcc's */
#define PCC_ASAN 1
#elif defined(__has_feature) /* clang's */
#if __has_feature(address_sanitizer)
#define PCC_ASAN 1
#endif
#endif
#ifdef PCC_ASAN
/* Built with AddressSanitizer (scripts/test-sanitize): every allocation
 * unwound fully, so that LeakSanitizer's suppressions know Open MPI's own
 * leaks by their frames (tests/sanitize/lsan.supp) in a pcc-run started
 * without mpirun too (a singleton, as the GPU check bundle runs it), which
 * tests/sanitize/run-one.sh's options for mpirun's ranks do not reach.
 * ASAN_OPTIONS, read after this, still decides. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}
#endif

int main(int argc, char **argv)
{
	return rt_main(argc, argv, NULL);
}
