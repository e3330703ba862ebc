/*
 * hostcode_cpu.c: hostcode_check_cpu (hostcode.h), whether this CPU has
 * the features the plan's host code was compiled for, so that a plan built
 * for a newer CPU fails with a message instead of SIGILL. Each LLVM feature
 * is looked up by name in a table of __builtin_cpu_supports checks; the
 * features no check can see (cx16, sahf, xsave, ...) pass.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/hostcode.h"

/* LLVM feature names that __builtin_cpu_supports knows by the same name
 * (it takes only literals); clang knows fewer than gcc. */
/* clang-format off */
#define CPU_FEATURES(X)                                                           \
	X("sse") X("sse2") X("sse3") X("ssse3") X("sse4.1") X("sse4.2") X("sse4a") \
	X("popcnt") X("avx") X("avx2") X("fma") X("fma4") X("xop") X("bmi")        \
	X("bmi2") X("aes") X("pclmul") X("gfni") X("vpclmulqdq") X("avx512f")      \
	X("avx512bw") X("avx512vl") X("avx512dq") X("avx512cd") X("avx512vnni")    \
	X("avx512bf16") X("avx512vbmi") X("avx512vbmi2") X("avx512ifma")           \
	X("avx512bitalg") X("avx512vpopcntdq")
#ifdef __clang__
#define CPU_FEATURES_GCC(X)
#else
#define CPU_FEATURES_GCC(X)                                                       \
	X("f16c") X("avx512fp16") X("sha") X("vaes") X("lzcnt") X("movbe")         \
	X("avxvnni") X("adx") X("rdrnd") X("rdseed") X("amx-tile") X("amx-int8")   \
	X("amx-bf16")
#endif
/* clang-format on */

/* 1 or 0, or -1 where no check can see feature f. */
static int cpu_has(const char *f)
{
#define X(name)                   \
	if (strcmp(f, name) == 0) \
		return __builtin_cpu_supports(name) != 0;
	CPU_FEATURES(X)
	CPU_FEATURES_GCC(X)
#undef X
	return -1;
}

int hostcode_check_cpu(const char *features, const char *cpu)
{
	char f[64], lacks[256] = "";
	size_t nl = 0;
	__builtin_cpu_init();
	for (const char *p = features ? features : ""; *p;) {
		size_t k = strcspn(p, ",");
		if (*p == '+' && k - 1 < sizeof f) {
			memcpy(f, p + 1, k - 1);
			f[k - 1] = 0;
			if (cpu_has(f) == 0 && nl < sizeof lacks)
				nl += (size_t)snprintf(lacks + nl, sizeof lacks - nl, "%s%s", nl ? ", " : "", f);
		}
		p += k + (p[k] == ',');
	}
	if (nl)
		return ir_errorf(-ENOTSUP,
				 "this CPU lacks %s, which the plan's host code needs (compiled for CPU '%s')", lacks,
				 cpu ? cpu : "?");
	return 0;
}
