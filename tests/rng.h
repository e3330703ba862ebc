/*
 * rng.h: the tests' random numbers, xorshift64 from a fixed seed, so that
 * a run gives the same inputs every time.
 */
#ifndef PCC_TESTS_RNG_H
#define PCC_TESTS_RNG_H

#include <stdint.h>

static uint64_t rng = 88172645463325252ull;

/* Uniform in [0, 1), 53 bits. */
static inline double urand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}
#endif
