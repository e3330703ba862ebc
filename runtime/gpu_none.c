/*
 * gpu_none.c: the CUDA backend's entry points in a build without the CUDA
 * headers: every GPU plan is refused at start (run.c asks rt_gpu_built()
 * first), so only rt_gpu_close and the checks are ever reached.
 */
#include <errno.h>

#include "runtime/rt.h"

bool rt_gpu_built(void)
{
	return false;
}

static int none(void)
{
	return ir_errorf(-ENODEV, "this pcc-run was built without CUDA");
}

int rt_gpu_open(struct rt *r, bool tf32)
{
	return none();
}

int rt_gpu_connect(struct rt *r)
{
	return none();
}

void rt_gpu_close(struct rt *r)
{
}

int rt_gpu_run(struct rt *r, const struct plan_instr *x, int i)
{
	return none();
}

int rt_gpu_put(struct rt *r, const struct plan_buffer *b)
{
	return none();
}

int rt_gpu_get(struct rt *r, const struct plan_buffer *b)
{
	return none();
}

int rt_gpu_zero(struct rt *r, const struct plan_buffer *b)
{
	return none();
}

int rt_gpu_state(struct rt *r, bool to_device)
{
	return none();
}

int rt_gpu_finish(struct rt *r)
{
	return none();
}

int rt_gpu_fallbacks(const struct rt *r)
{
	return 0;
}

int rt_gpu_fallback_report(const struct rt *r, char *buf, size_t n)
{
	if (n)
		buf[0] = 0;
	return 0;
}

const char *rt_gpu_kernel_how(const struct rt *r, int k)
{
	(void)r;
	(void)k;
	return NULL;
}

int rt_gpu_profile_check(const struct rt *r, double *peak_bw)
{
	*peak_bw = 0;
	return 0;
}
