/*
 * report_fidelity.c: what is known of the cost model's error, stated
 * beside every report. Each statement quotes a measurement kept in
 * benchmarks/results/ (tests/test_report_cli.sh checks the figures here
 * against those files' summary lines, so a new measurement that changes
 * them fails until this is updated).
 */
#include <string.h>

#include "compiler/report/report_internal.h"

const char *report_fidelity(const struct cost_device *d, const struct cost_calib *cal)
{
	if (cal && cal->device[0])
		return "efficiencies from the --calib file: no error measured for them here";
	if (!strcmp(d->name, "cpu"))
		return "against pcc-run on this machine's CPU mesh (benchmarks/results/cpu_model.md): "
		       "24 cases on 1 and 2 ranks, median |error| 63%, max |error| 170% of the measured step time; "
		       "ranks over-subscribing the cores are not modelled";
	return "against published Megatron-LM runs on A100 (benchmarks/results/report_validation.md): "
	       "predicted throughput 1.044 to 1.074 times the measured for tensor+pipeline+data plans "
	       "(mean error 5.9%), 1.4 to 2.9 times for ZeRO-3 without model parallelism; "
	       "against pcc-run on one H200 (benchmarks/results/gpu.md): GPT-2 small training steps took "
	       "0.97 to 1.25 times the predicted in f32, 1.92 to 2.68 times in bf16";
}
