/*
 * gpu_none.c: a build without the CUDA headers has no CUDA device table
 * (device.h): every GPU plan is refused at start (run.c asks for it
 * first).
 */
#include "runtime/device.h"

const struct rt_device_ops *rt_device_cuda(void)
{
	return NULL;
}
