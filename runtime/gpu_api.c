/*
 * gpu_api.c: dlopen and dlsym of the CUDA libraries (gpu_api.h). The
 * libraries are looked up by soname first (the loader's path, where CUDA's
 * installer registers them), then under the toolkit the build saw.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "runtime/gpu_api.h"

#ifndef PCC_CUDA_DIR
#define PCC_CUDA_DIR "/usr/local/cuda"
#endif

#define STR_(x) #x
#define STR(x) STR_(x) /* the name after the header's macros: cuMemAlloc -> "cuMemAlloc_v2" */

static struct gpu_api api;
static int loaded; /* 0 not yet, 1 done, -1 failed */
static char failure[512];

/* The first of names[] that opens, also tried under the toolkit's lib64. */
static void *open_lib(const char *const *names, const char *what, const char *hint)
{
	char path[512], first[256] = "";
	for (int i = 0; names[i]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!h && !first[0])
			snprintf(first, sizeof first, "%s", dlerror());
		if (!h) {
			snprintf(path, sizeof path, "%s/lib64/%s", PCC_CUDA_DIR, names[i]);
			h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		}
		if (h)
			return h;
	}
	snprintf(failure, sizeof failure, "%s cannot be loaded (%s)%s", what, first, hint);
	return NULL;
}

static int resolve(void *h, const char *name, void **slot)
{
	*slot = dlsym(h, name);
	if (!*slot)
		snprintf(failure, sizeof failure, "%s has no symbol %s (too old a version?)", "a CUDA library", name);
	return *slot ? 0 : -1;
}

#define GPU_API_RESOLVE(f) \
	if (rc == 0)       \
		rc = resolve(h, STR(f), (void **)&api.f);

/* An optional entry point: its versioned name, else its first. */
#define GPU_API_OPTIONAL(f)                  \
	*(void **)&api.f = dlsym(h, STR(f)); \
	if (!api.f)                          \
		*(void **)&api.f = dlsym(h, #f);

/* A graph entry point by the header's name alone; *all false when absent. */
#define GPU_API_GRAPH(f)                     \
	*(void **)&api.f = dlsym(h, STR(f)); \
	all = all && api.f;

static int load_all(void)
{
	static const char *const cuda[] = { "libcuda.so.1", "libcuda.so", NULL };
	static const char *const lt[] = { "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL };
	static const char *const nccl[] = { "libnccl.so.2", "libnccl.so", NULL };
	int rc = 0;
	void *h = open_lib(cuda, "the NVIDIA driver's libcuda.so.1", ": no NVIDIA driver on this machine");
	if (!h)
		return -1;
	GPU_CU_FUNCS(GPU_API_RESOLVE)
	if (rc == 0) {
		bool all = true;
		GPU_CU_OPTIONAL(GPU_API_OPTIONAL)
		GPU_CU_GRAPH(GPU_API_GRAPH)
		if (!all) /* none, or a half that could capture but not launch */
			api.cuStreamBeginCapture = NULL;
	}
	if (rc == 0 && !(h = open_lib(lt, "cuBLASLt (libcublasLt.so)", ": install the CUDA toolkit's libraries")))
		return -1;
	GPU_LT_FUNCS(GPU_API_RESOLVE)
	if (rc == 0 && !(h = open_lib(nccl, "NCCL (libnccl.so.2)", ": install NCCL (Debian: libnccl2)")))
		return -1;
	GPU_NCCL_FUNCS(GPU_API_RESOLVE)
	return rc;
}

const struct gpu_api *gpu_api_load(void)
{
	const char *standin = getenv("PCC_GPU_STANDIN");
	if (standin && *standin && strcmp(standin, "0"))
		return gpu_standin_load();
	if (!loaded)
		loaded = load_all() == 0 ? 1 : -1;
	if (loaded < 0) {
		ir_errorf(-ENODEV, "%s", failure);
		return NULL;
	}
	return &api;
}

const char *gpu_cu_error(const struct gpu_api *a, CUresult e)
{
	const char *s = NULL;
	if (a->cuGetErrorString(e, &s) != CUDA_SUCCESS || !s)
		return "unknown CUDA error";
	return s;
}
