#!/bin/sh
# fuzz.sh [SECONDS [OUT_MD]]: fuzzes every reader of outside data for
# SECONDS each (default 60) through tests/fuzz/run-fuzz.sh, one target at a
# time from its committed seeds (FUZZ_FRESH=1), and writes a markdown table
# to OUT_MD (default benchmarks/results/fuzz.md): per target the inputs
# run, the seconds, executions per second, the inputs the run kept for new
# coverage (files and bytes, the seeds not counted) and the crashes found
# (a crash stops that target's run: its reproducer is in
# FUZZ_OUT/NAME/crashes/).
#
# FUZZ_OUT (default build-fuzz-bench/ under the source tree) keeps the
# binaries and the corpora; FUZZ_TARGETS picks a subset. Needs clang with
# libFuzzer (Debian: clang, libclang-rt-14-dev); exits 2 without it.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
secs=${1:-60}
md=${2:-$here/results/fuzz.md}
out=${FUZZ_OUT:-$src/build-fuzz-bench}
targets=${FUZZ_TARGETS:-onnx plan text cluster calib iopddl answer ckpt}

tap=$(FUZZ_OUT="$out" FUZZ_FRESH=1 FUZZ_JOBS=1 FUZZ_TARGETS="$targets" \
	"$src/tests/fuzz/run-fuzz.sh" "$secs" 2>&1)
status=$?
echo "$tap"
if echo "$tap" | grep -q '^1\.\.0 # SKIP'; then
	echo "fuzz.sh: no libFuzzer here" >&2
	exit 2
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	echo "# Fuzzing every reader"
	echo
	echo "Produced by \`benchmarks/fuzz.sh $secs\` on $(nproc) cores ($cpu), $(date +%Y-%m-%d)," \
		"$(${CC_FUZZ:-clang} --version | head -n 1), libFuzzer with ASan and UBSan, one target at a time," \
		"each from its seeds in \`tests/fuzz/corpus/NAME/\` and \`tests/fuzz/regressions/NAME/\`."
	echo
	echo "| target | reads | runs | seconds | exec/s | new corpus files | new corpus KiB | crashes |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|"
	for t in $targets; do
		case $t in
		onnx) what="ONNX models (compiler/frontend/onnx_*.c), then the interpreter" ;;
		plan) what="plan.bin (ir/plan_io.c), plan_verify, \`pcc inspect\`, a step on the rank simulator" ;;
		text) what="IR text (ir/text.c), its round trip, the interpreter" ;;
		cluster) what="\`--cluster\` specs and JSON (compiler/cost/cost_cluster.c)" ;;
		calib) what="\`--calib\` files (compiler/cost/cost_compute.c)" ;;
		iopddl) what="IOPDDL instances, JSON or gzip (solvers/shard_read.c)" ;;
		answer) what="answers to \`pcc-iopddl --eval\` (solvers/iopddl_main.c), then the evaluator" ;;
		ckpt) what="checkpoint manifests (runtime/ckpt_manifest.c)" ;;
		*) what="" ;;
		esac
		if [ -f "$out/$t/stats" ]; then
			read -r runs took files bytes crashes <"$out/$t/stats"
			rate=$(awk -v r="$runs" -v s="$took" 'BEGIN { printf "%.0f", (s > 0 ? r / s : r) }')
			kib=$(awk -v b="$bytes" 'BEGIN { printf "%.0f", b / 1024 }')
			echo "| $t | $what | $runs | $took | $rate | $files | $kib | $crashes |"
		else
			echo "| $t | $what | - | - | - | - | - | did not run |"
		fi
	done
	echo
	echo "Exec/s counts whole inputs through the target: the read, then what the"
	echo "target checks of a result (round trips, printing, the interpreter on small"
	echo "graphs and plans), all under the sanitizers, so it is no measure of parser"
	echo "speed. The seeds: tests/fuzz/corpus/NAME/ (tests/fuzz/make-seeds.sh remakes"
	echo "the plans and manifests), past reproducers in tests/fuzz/regressions/NAME/."
} >"$md"
echo "wrote $md"
exit "$status"
