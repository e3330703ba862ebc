/*
 * gpu_api.h: the CUDA driver API, cuBLASLt and NCCL, opened at run time
 * (dlopen) so that pcc-run starts on machines without an NVIDIA driver and
 * only a GPU plan needs one. One table of entry points, filled by
 * gpu_api_load(); the names are the headers' (so cuMemAlloc is the
 * versioned cuMemAlloc_v2 the header maps it to). Built only with the CUDA
 * headers (PCC_HAVE_CUDA).
 */
#ifndef PCC_RUNTIME_GPU_API_H
#define PCC_RUNTIME_GPU_API_H

#include <cublasLt.h>
#include <cuda.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdint.h>

/* clang-format off */
#define GPU_CU_FUNCS(X)                                                                                   \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)               \
	X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
	X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemGetInfo) X(cuMemHostRegister)                   \
	X(cuMemHostUnregister) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync)               \
	X(cuMemcpy2DAsync) X(cuMemsetD8Async) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)  \
	X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery)      \
	X(cuStreamWaitEvent) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery)            \
	X(cuGetErrorString) X(cuLinkCreate) X(cuLinkAddData) X(cuLinkComplete) X(cuLinkDestroy)

#define GPU_LT_FUNCS(X)                                                                                   \
	X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusString) X(cublasLtMatmul)                   \
	X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)          \
	X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy) X(cublasLtMatrixLayoutSetAttribute)    \
	X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)                                \
	X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic)

#define GPU_NCCL_FUNCS(X)                                                                                 \
	X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommSplit) X(ncclCommDestroy)        \
	X(ncclCommAbort) X(ncclCommGetAsyncError) X(ncclGetErrorString) X(ncclAllReduce)                    \
	X(ncclReduceScatter) X(ncclAllGather) X(ncclSend) X(ncclRecv) X(ncclGroupStart) X(ncclGroupEnd)
/* clang-format on */

/* Entry points only --profile needs: NULL where the driver lacks them (the
 * _v2 name CUDA 13's header asks for, else the first version's). */
#define GPU_CU_OPTIONAL(X) X(cuEventElapsedTime)

/* Stream capture and graphs (gpu_graph.c): NULL, all of them, where the
 * driver lacks one (by the header's own names only: the unversioned
 * cuStreamBeginCapture of CUDA 10.0 took no capture mode). The header
 * maps cuGraphInstantiate to cuGraphInstantiateWithFlags since CUDA 12;
 * the CUDA 11 one took an error node and a log instead of flags, so the
 * table names the flags version, which both have. */
#define GPU_CU_GRAPH(X)         \
	X(cuStreamBeginCapture) \
	X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)

#define GPU_API_FIELD(f) __typeof__(&f) f;
struct gpu_api {
	GPU_CU_FUNCS(GPU_API_FIELD)
	GPU_LT_FUNCS(GPU_API_FIELD)
	GPU_NCCL_FUNCS(GPU_API_FIELD)
	GPU_CU_OPTIONAL(GPU_API_FIELD)
	GPU_CU_GRAPH(GPU_API_FIELD)
};
#undef GPU_API_FIELD

/* Opens libcuda, libcublasLt and libnccl and fills the table (once per
 * process). NULL, with a message naming the library and what to install,
 * when one is missing. */
const struct gpu_api *gpu_api_load(void);

/* The checking stand-in for a GPU (gpu_standin.h): the same table over
 * host memory, MPI and the plan's host kernels. gpu_api_load() returns it
 * when the environment has PCC_GPU_STANDIN=1. */
const struct gpu_api *gpu_standin_load(void);
bool gpu_api_standin(const struct gpu_api *a);

/* What the stand-in runs for a kernel its PTX declares: run(ctx, kernel,
 * args) on the host addresses of the nargs device pointers in the launch's
 * argument table (the first nin read, the rest written; bytes[j] each),
 * launched with rows rows. */
struct gpu_standin_kernel {
	int nargs, nin, kernel;
	const int64_t *bytes; /* [nargs], copied by the stand-in */
	int64_t rows;
	int64_t scratch; /* bytes of device memory its third parameter must hold, or 0 */
	int (*run)(void *ctx, int kernel, void *const *args);
	void *ctx;
};
/* 0 and *k for the kernel called name, or a negative errno. */
typedef int (*gpu_standin_lookup_fn)(void *ctx, const char *name, struct gpu_standin_kernel *k);
void gpu_standin_kernels(gpu_standin_lookup_fn f, void *ctx);

/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory" style text of driver status e. */
const char *gpu_cu_error(const struct gpu_api *a, CUresult e);

#endif
