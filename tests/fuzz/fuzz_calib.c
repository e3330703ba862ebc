/*
 * fuzz_calib.c: libFuzzer target for calibration files, `--calib FILE`
 * (cost_calib_load, compiler/cost/cost_compute.c).
 *
 * An input is the file, written to one file per process and loaded over
 * the defaults. A file that loads must give, for every op class on a
 * preset device, finite non-negative roofline times at sizes from one FLOP
 * to 1e20; -EINVAL with one line is a clean refusal (the loader may have
 * filled part of the table by then: it is not used).
 */
#include <math.h>

#include "compiler/compiler.h"
#include "tests/fuzz/fuzz.h"

static char path[4096];
static struct cost_device dev;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_path(path, sizeof path, "fuzz_calib", ".json");
	if (cost_device_preset("h100-80g", &dev) < 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const double sizes[] = { 1, 1e3, 1e7, 1e9, 1e11, 1e13, 1e20 };
	struct cost_calib cal;
	fuzz_write(path, data, size);
	cost_calib_init(&cal);
	if (cost_calib_load(path, &cal) < 0) {
		fuzz_check_message("cost_calib_load", ir_error());
		return 0;
	}
	for (int c = 0; c < COST_CLASS_COUNT; c++)
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
			double t = cost_roofline(&dev, &cal, (enum cost_class)c, COST_PREC_BF16, sizes[i],
						 sizes[i] / 4);
			if (!(t >= 0) || isinf(t))
				FUZZ_FAIL("class %s at %g FLOPs takes %g s", cost_class_name((enum cost_class)c),
					  sizes[i], t);
		}
	return 0;
}
