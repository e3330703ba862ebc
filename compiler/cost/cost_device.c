/*
 * cost_device.c: device presets (NVIDIA datasheet figures); the CPU host's
 * figures are cost_host.c's.
 *
 * Every preset figure is dense (no 2:4 sparsity) and names its source. The
 * peaks are the datasheets' "FP64", "FP32" (plain vector rates) and "Tensor
 * Core" rates for TF32, BF16, FP16 and FP8; a precision the hardware lacks
 * is 0 and cost_device_peak falls back to a wider one.
 *
 * Memory capacity convention: NVIDIA's HBM sizes are binary, so a "GB" of
 * a datasheet is 2^30 bytes here (an A100 80 GB reports 81920 MiB in
 * nvidia-smi, an H200 "141 GB" 143771 MiB = 140.4 GiB). The driver and
 * ECC keep a little of it (an H100 80 GB reports 81559 MiB = 79.6 GiB);
 * that is the memory budget's headroom to cover, not this figure's.
 * Bandwidths are decimal: 900 GB/s = 900e9 bytes/s.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "compiler/cost/cost.h"
#include "ir/ir.h"

#define GIB 1073741824.0 /* bytes in a datasheet "GB" of HBM, see above */
#define T 1e12           /* TFLOP/s */

static const char *const prec_names[COST_PREC_COUNT] = {
	[COST_PREC_F64] = "f64",   [COST_PREC_F32] = "f32", [COST_PREC_TF32] = "tf32",
	[COST_PREC_BF16] = "bf16", [COST_PREC_F16] = "f16", [COST_PREC_FP8] = "fp8",
};

const char *cost_prec_name(enum cost_prec p)
{
	return (unsigned)p < COST_PREC_COUNT ? prec_names[p] : "?";
}

int cost_prec_parse(const char *s, enum cost_prec *out)
{
	static const struct {
		const char *alias;
		enum cost_prec p;
	} aliases[] = {
		{ "fp64", COST_PREC_F64 }, { "fp32", COST_PREC_F32 }, { "fp16", COST_PREC_F16 }, { "f8", COST_PREC_FP8 }
	};
	for (int i = 0; i < COST_PREC_COUNT; i++)
		if (!strcasecmp(s, prec_names[i])) {
			*out = (enum cost_prec)i;
			return 0;
		}
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcasecmp(s, aliases[i].alias)) {
			*out = aliases[i].p;
			return 0;
		}
	return ir_errorf(-EINVAL, "unknown precision \"%s\" (expected f64, f32, tf32, bf16, f16 or fp8)", s);
}

/* Sources:
 *  V100: NVIDIA Tesla V100 GPU Accelerator datasheet (SXM2 column):
 *        FP64 7.8, FP32 15.7, Tensor 125 TFLOPS (FP16 inputs); HBM2
 *        16 or 32 GB at 900 GB/s. Volta tensor cores take FP16 only: no
 *        TF32, BF16 or FP8.
 *  A100: NVIDIA A100 Tensor Core GPU datasheet (SXM column): FP64 9.7,
 *        FP32 19.5, TF32 156, BF16 312, FP16 312 TFLOPS dense (the 312/624
 *        TF32/BF16 figures are with sparsity); 40 GB HBM2 at 1555 GB/s,
 *        80 GB HBM2e at 2039 GB/s. No FP8.
 *  H100: NVIDIA H100 Tensor Core GPU datasheet (SXM column): FP64 34,
 *        FP32 67 TFLOPS; TF32 989, BF16/FP16 1979, FP8 3958 TFLOPS are
 *        "with sparsity", so dense is half: 494.7, 989.4, 1978.9 (the
 *        Hopper architecture whitepaper's dense table); 80 GB HBM3 at
 *        3.35 TB/s.
 *  H200: NVIDIA H200 Tensor Core GPU datasheet (SXM column): the same
 *        compute figures as H100 SXM; 141 GB HBM3e at 4.8 TB/s. */
static const struct cost_device presets[] = {
	{ .name = "v100-16g",
	  .sm = 70,
	  .desc = "NVIDIA V100 SXM2 16 GB",
	  .peak_flops = { [COST_PREC_F64] = 7.8 * T, [COST_PREC_F32] = 15.7 * T, [COST_PREC_F16] = 125 * T },
	  .mem_bytes = 16 * GIB,
	  .mem_bw = 900e9,
	  .host_bw = 16e9 },
	{ .name = "v100-32g",
	  .sm = 70,
	  .desc = "NVIDIA V100 SXM2 32 GB",
	  .peak_flops = { [COST_PREC_F64] = 7.8 * T, [COST_PREC_F32] = 15.7 * T, [COST_PREC_F16] = 125 * T },
	  .mem_bytes = 32 * GIB,
	  .mem_bw = 900e9,
	  .host_bw = 16e9 },
	{ .name = "a100-40g",
	  .sm = 80,
	  .desc = "NVIDIA A100 SXM4 40 GB",
	  .peak_flops = { [COST_PREC_F64] = 9.7 * T,
			  [COST_PREC_F32] = 19.5 * T,
			  [COST_PREC_TF32] = 156 * T,
			  [COST_PREC_BF16] = 312 * T,
			  [COST_PREC_F16] = 312 * T },
	  .mem_bytes = 40 * GIB,
	  .mem_bw = 1555e9,
	  .host_bw = 32e9 },
	{ .name = "a100-80g",
	  .sm = 80,
	  .desc = "NVIDIA A100 SXM4 80 GB",
	  .peak_flops = { [COST_PREC_F64] = 9.7 * T,
			  [COST_PREC_F32] = 19.5 * T,
			  [COST_PREC_TF32] = 156 * T,
			  [COST_PREC_BF16] = 312 * T,
			  [COST_PREC_F16] = 312 * T },
	  .mem_bytes = 80 * GIB,
	  .mem_bw = 2039e9,
	  .host_bw = 32e9 },
	{ .name = "h100-80g",
	  .sm = 90,
	  .desc = "NVIDIA H100 SXM5 80 GB",
	  .peak_flops = { [COST_PREC_F64] = 34 * T,
			  [COST_PREC_F32] = 67 * T,
			  [COST_PREC_TF32] = 494.7 * T,
			  [COST_PREC_BF16] = 989.4 * T,
			  [COST_PREC_F16] = 989.4 * T,
			  [COST_PREC_FP8] = 1978.9 * T },
	  .mem_bytes = 80 * GIB,
	  .mem_bw = 3.35e12,
	  .host_bw = 64e9 },
	{ .name = "h200-141g",
	  .sm = 90,
	  .desc = "NVIDIA H200 SXM 141 GB",
	  .peak_flops = { [COST_PREC_F64] = 34 * T,
			  [COST_PREC_F32] = 67 * T,
			  [COST_PREC_TF32] = 494.7 * T,
			  [COST_PREC_BF16] = 989.4 * T,
			  [COST_PREC_F16] = 989.4 * T,
			  [COST_PREC_FP8] = 1978.9 * T },
	  .mem_bytes = 141 * GIB,
	  .mem_bw = 4.8e12,
	  .host_bw = 64e9 },
};
#define NPRESETS ((int)(sizeof presets / sizeof presets[0]))

/* Short names: the largest memory of each kind. */
static const struct {
	const char *alias, *preset;
} aliases[] = { { "v100", "v100-32g" }, { "a100", "a100-80g" }, { "h100", "h100-80g" }, { "h200", "h200-141g" } };

int cost_device_npresets(void)
{
	return NPRESETS;
}

const struct cost_device *cost_device_preset_at(int i)
{
	return i >= 0 && i < NPRESETS ? &presets[i] : NULL;
}

int cost_device_preset(const char *name, struct cost_device *d)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcasecmp(name, aliases[i].alias))
			name = aliases[i].preset;
	for (int i = 0; i < NPRESETS; i++)
		if (!strcasecmp(name, presets[i].name)) {
			*d = presets[i];
			return 0;
		}
	return ir_errorf(-ENOENT,
			 "unknown device \"%s\" (presets: v100-16g, v100-32g, a100-40g, "
			 "a100-80g, h100-80g, h200-141g; aliases v100, a100, h100, h200)",
			 name);
}

/* The next wider precision whose values p converts to exactly, so running
 * p there gives the same numbers: FP8 fits BF16 and F16; both 16-bit
 * types fit TF32 (8-bit exponent, 10-bit mantissa); TF32 is F32 rounded. */
double cost_device_peak(const struct cost_device *d, enum cost_prec p)
{
	switch (p) {
	case COST_PREC_FP8:
		if (d->peak_flops[p] > 0)
			return d->peak_flops[p];
		if (d->peak_flops[COST_PREC_BF16] > 0 || d->peak_flops[COST_PREC_F16] > 0)
			return d->peak_flops[COST_PREC_BF16] > d->peak_flops[COST_PREC_F16]
				       ? d->peak_flops[COST_PREC_BF16]
				       : d->peak_flops[COST_PREC_F16];
		return cost_device_peak(d, COST_PREC_TF32);
	case COST_PREC_BF16:
	case COST_PREC_F16:
		return d->peak_flops[p] > 0 ? d->peak_flops[p] : cost_device_peak(d, COST_PREC_TF32);
	case COST_PREC_TF32:
		return d->peak_flops[p] > 0 ? d->peak_flops[p] : cost_device_peak(d, COST_PREC_F32);
	case COST_PREC_F32:
		return d->peak_flops[p] > 0 ? d->peak_flops[p] : d->peak_flops[COST_PREC_F64];
	case COST_PREC_F64:
		return d->peak_flops[p];
	case COST_PREC_COUNT:
		break;
	}
	IR_ASSERT(!"bad precision");
}

enum cost_prec cost_default_prec(const struct cost_device *d)
{
	double bf = cost_device_peak(d, COST_PREC_BF16), hf = cost_device_peak(d, COST_PREC_F16);
	double f32 = cost_device_peak(d, COST_PREC_F32);
	if (bf >= hf && bf > f32)
		return COST_PREC_BF16;
	return hf > f32 ? COST_PREC_F16 : COST_PREC_F32;
}
