/*
 * gpu_standin_load.c: the checking stand-in's table (gpu_api.h), its
 * three parts' entries put together once: the driver's (gpu_standin.c),
 * cuBLASLt's (gpu_standin_lt.c) and NCCL's (gpu_standin_nccl.c), with the
 * devices the environment asks for (PCC_GPU_STANDIN_DEVICES, _MEM, _SM,
 * and CUDA_VISIBLE_DEVICES). The libraries' parts queue their work through
 * the driver's streams; none of the three calls this file.
 */
#include <errno.h>
#include <stdlib.h>

#include "runtime/gpu_standin.h"

static long long env_num(const char *name, long long dflt, long long lo, long long hi)
{
	const char *s = getenv(name);
	char *end;
	if (!s || !*s)
		return dflt;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	return errno || *end || v < lo || v > hi ? dflt : v;
}

/* How many of the host's n devices CUDA_VISIBLE_DEVICES shows: all where
 * it is unset; else its comma-separated ordinals up to the first that is
 * not one of them (the driver's rule; GPU UUIDs are not taken here). */
static int visible_devices(int n)
{
	const char *s = getenv("CUDA_VISIBLE_DEVICES");
	if (!s)
		return n;
	int seen = 0;
	for (;;) {
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (end == s || errno || v < 0 || v >= n || (*end && *end != ','))
			return seen;
		seen++;
		if (!*end)
			return seen;
		s = end + 1;
	}
}

static struct gpu_api api;

const struct gpu_api *gpu_standin_load(void)
{
	if (api.cuInit)
		return &api;
	int ndev = visible_devices((int)env_num("PCC_GPU_STANDIN_DEVICES", 8, 1, 64));
	size_t mem = (size_t)env_num("PCC_GPU_STANDIN_MEM", 80ll << 30, 1 << 20, 1ll << 50);
	int sm = env_num("PCC_GPU_STANDIN_SM", 90, 80, 90) == 80 ? 80 : 90;
	si_fill_driver(&api, ndev, mem, sm);
	si_fill_lt(&api);
	si_fill_nccl(&api);
	return &api;
}

bool gpu_api_standin(const struct gpu_api *a)
{
	return a == &api;
}
