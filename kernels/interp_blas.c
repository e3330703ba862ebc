/*
 * interp_blas.c: OpenBLAS's kernels for CPUs it does not recognize.
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the
 * CPU's family and model at load time; a CPU newer than the library (0.3.21
 * on a Sapphire Rapids Xeon, for one) falls back to the generic SSE3
 * "Prescott" kernels, 2.5x to 4x slower at sgemm than the AVX2 or AVX-512
 * ones the CPU can run. interp_blas_init, called first thing by pcc and
 * pcc-run, chooses the best core OpenBLAS has for the features the CPU and
 * OS support (__builtin_cpu_supports checks both) when, and only when:
 *   - the BLAS is OpenBLAS (its functions are weak references here, so
 *     another BLAS still links and this does nothing),
 *   - OPENBLAS_CORETYPE is unset (a user's choice is never overridden),
 *   - the detected core is one without AVX2 (a fallback or an older core)
 *     while the CPU has AVX2 and FMA.
 * Then SkylakeX for AVX512F/BW/VL/DQ, else Haswell. OpenBLAS reads
 * OPENBLAS_CORETYPE in gotoblas_dynamic_init, so the switch sets it,
 * re-initializes the core table (gotoblas_dynamic_quit only forgets the
 * current core; thread pool and buffers do not depend on it) and unsets it
 * again: in-process, before any BLAS call, so nothing is re-executed and it
 * works the same under mpirun. Measured on that Xeon (sgemm 128x2304x768, 2
 * threads): Prescott 21.1 ms, Haswell 8.4 ms, SkylakeX 5.5 ms, Cooperlake
 * 5.6 ms. PCC_VERBOSE_BLAS=1 prints the choice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernels/kernels.h"

char *openblas_get_corename(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
void gotoblas_dynamic_init(void) __attribute__((weak));

/* Cores whose kernels use no AVX2: choosing one on an AVX2 CPU is a
 * misdetection. */
static bool pre_avx2(const char *core)
{
	static const char *const old[] = {
		"prescott",    "core2",     "penryn",     "dunnington", "nehalem", "atom",
		"sandybridge", "katmai",    "coppermine", "northwood",  "banias",  "nano",
		"opteron",     "barcelona", "bobcat",     "athlon",     "unknown",
	};
	for (size_t i = 0; i < sizeof old / sizeof *old; i++)
		if (!strcasecmp(core, old[i]))
			return true;
	return false;
}

static const char *best_core(void)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return "SkylakeX";
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return "Haswell";
	return NULL;
}

void interp_blas_init(void)
{
	if (!openblas_get_corename || !gotoblas_dynamic_quit || !gotoblas_dynamic_init)
		return;
	const char *verbose = getenv("PCC_VERBOSE_BLAS");
	const char *now = openblas_get_corename();
	const char *want = best_core();
	if (getenv("OPENBLAS_CORETYPE") || !now || !pre_avx2(now) || !want) {
		if (verbose && *verbose == '1')
			fprintf(stderr, "pcc: OpenBLAS core %s (kept)\n", now ? now : "?");
		return;
	}
	char was[32];
	snprintf(was, sizeof was, "%s", now);
	if (setenv("OPENBLAS_CORETYPE", want, 1) < 0)
		return;
	gotoblas_dynamic_quit();
	gotoblas_dynamic_init();
	unsetenv("OPENBLAS_CORETYPE");
	if (verbose && *verbose == '1')
		fprintf(stderr, "pcc: OpenBLAS core %s (detected %s)\n", openblas_get_corename(), was);
}
