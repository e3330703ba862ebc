#!/bin/bash
# pcc-run (1 rank, generated host kernels) against ONNX Runtime on the zoo
# architectures, single- and 2-threaded, side by side in one run; and how
# long pcc takes to compile each for cpu:1 and cpu:4.
#
# Usage: benchmarks/cpu_vs_ort.sh [BUILD_DIR] [OUT.md]
#
# Environment (defaults in brackets):
#   ZOO=/tmp/pcc-zoo   models as benchmarks/zoo_export.py writes them (made
#                      by it when a model is absent: needs python3-torch)
#   MODELS="gpt2 bert llama vit whisper resnet18 mobilenet convnext"
#   RUNS=5             processes per configuration, pcc and ORT interleaved
#   REPS=10            inference steps timed inside each process after a warm-up
#   THREADS="1 2"      thread counts: pcc-run --threads, ORT intra_op_num_threads
#   ORT_PYTHON=/tmp/ort-venv/bin/python   a python with onnxruntime and onnx
#
# Times are per step: pcc's are benchmarks/codegen_run.c's (pcc-run's program
# with the step repeated, inputs loaded; BUILD_DIR/benchmarks/codegen_run), ORT's benchmarks/codegen_ort.py's
# (InferenceSession.run after a warm-up); each cell the median over RUNS
# processes of each process's median, and the minimum over all steps
# timed (on a shared machine the medians measure the load as much as
# the runtimes; the minimum is a step that ran undisturbed). Both time the
# step alone: process start, plan or session load and the warm-up step
# are outside. pcc's outputs are checked against
# ORT's with pb_cmp --rtol 1e-3 --atol 1e-4. Compile times are wall
# seconds of one `pcc MODEL --cluster cpu:N -o PLAN`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-}
ZOO=${ZOO:-/tmp/pcc-zoo}
MODELS=${MODELS-gpt2 bert llama vit whisper resnet18 mobilenet convnext}
RUNS=${RUNS:-5}
REPS=${REPS:-10}
THREADS=${THREADS-1 2}
ORT_PYTHON=${ORT_PYTHON:-/tmp/ort-venv/bin/python}
pcc=$build/compiler/pcc
cmp=$build/tests/pb_cmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
mpirun=(mpirun --oversubscribe --bind-to none -np 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"

# The median, min and cpu times of a "pcc-bench: step" or "ort:" line on
# stdin, appended to $tmp/g, gm, gc (pcc's) or o, om, oc (ORT's).
pick() {
	local f=o line
	[ "$1" = "ort:" ] || f=g
	line=$(grep -m1 "^$1 median" || true)
	[ -n "$line" ] || return 0
	sed -n 's/.* median \([0-9.]*\) ms.*/\1/p' <<<"$line" >>"$tmp/$f"
	sed -n 's/.* min \([0-9.]*\) ms.*/\1/p' <<<"$line" >>"$tmp/${f}m"
	sed -n 's/.* cpu \([0-9.]*\) ms.*/\1/p' <<<"$line" >>"$tmp/${f}c"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f\n", a / b }'; }
fmt() { awk -v a="$1" 'BEGIN { if (a == "-") print "-"; else if (a < 10) printf "%.2f\n", a; else printf "%.1f\n", a }'; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || { echo "-"; return; }; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'; }

if ! "$ORT_PYTHON" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
	echo "cpu_vs_ort.sh: onnxruntime not importable with $ORT_PYTHON" >&2
	exit 1
fi
# the timing driver: pcc-run's program with its steps timed (benchmarks/codegen_run.c,
# built with the rest by ninja)
run=$build/benchmarks/codegen_run
[ -x "$run" ] || { echo "$(basename "$0"): no $run: build it first (ninja -C $build)" >&2; exit 1; }

rows=()
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for m in $MODELS; do
	dir=$ZOO/$m
	[ -f "$dir/model.onnx" ] || /usr/bin/python3 "$here/zoo_export.py" "$ZOO" "$m" >&2
	data=$dir/test_data_set_0 plan=$tmp/$m.bin
	c1=$(secs "$pcc" "$dir/model.onnx" --cluster cpu:1 -o "$tmp/$m.c1.bin")
	c4=$(secs "$pcc" "$dir/model.onnx" --cluster cpu:4 -o "$tmp/$m.c4.bin")
	if ! "$pcc" "$dir/model.onnx" --cluster cpu:1 -o "$plan" >"$tmp/$m.pcc" 2>&1; then
		cat "$tmp/$m.pcc" >&2
		rows+=("| $m | | pcc failed | | | | | | $c1 | $c4 | |")
		continue
	fi
	check=""
	for t in $THREADS; do
		for f in g o gm om gc oc; do : >"$tmp/$f"; done
		for ((i = 0; i < RUNS; i++)); do
			od=() oo=()
			[ "$i" = 0 ] && od=(-o "$tmp/$m.$t.gen") && oo=("$tmp/$m.$t.ort")
			PCC_BENCH_REPS=$REPS "${mpirun[@]}" "$run" "$plan" -i "$data" --threads "$t" "${od[@]}" \
				>"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; echo "cpu_vs_ort.sh: $m: pcc-run failed" >&2; }
			pick "pcc-bench: step" <"$tmp/out"
			"$ORT_PYTHON" "$here/codegen_ort.py" "$dir/model.onnx" "$data" "$t" "$REPS" "${oo[@]}" >"$tmp/out" 2>&1 ||
				{ cat "$tmp/out" >&2; echo "cpu_vs_ort.sh: $m: ORT failed" >&2; }
			pick "ort:" <"$tmp/out"
		done
		g=$(median <"$tmp/g") o=$(median <"$tmp/o") gc=$(median <"$tmp/gc") oc=$(median <"$tmp/oc")
		gm=$(sort -g "$tmp/gm" | head -1) om=$(sort -g "$tmp/om" | head -1)
		if [ -z "$check" ]; then
			if "$cmp" --rtol 1e-3 --atol 1e-4 "$tmp/$m.$t.gen" "$tmp/$m.$t.ort" >"$tmp/cmp" 2>&1; then
				check="ORT close ($(sed -n 's/.*\(max abs err [^,]*\).*/\1/p' "$tmp/cmp"))"
			else
				check="ORT differs: $(tr '\n' ' ' <"$tmp/cmp")"
			fi
		fi
		rows+=("| $m | $t | $(fmt "$g") / $(fmt "$o") | $(ratio "$g" "$o") | $(fmt "${gm:--}") / $(fmt "${om:--}") | $(ratio "${gm:--}" "${om:--}") | $(fmt "$gc") / $(fmt "$oc") | $(ratio "$gc" "$oc") | $c1 | $c4 | $check |")
		check="-"
	done
done

cmdline="ZOO=$ZOO RUNS=$RUNS REPS=$REPS THREADS=\"$THREADS\" benchmarks/cpu_vs_ort.sh ${1:-} ${2:-}"
{
	echo "$(date -u +%Y-%m-%d), $(nproc) cores ($(uname -m), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))," \
		"load $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	echo "command: ${cmdline% }"
	echo "pcc-run: 1 rank; ORT: onnxruntime $("$ORT_PYTHON" -c 'import onnxruntime; print(onnxruntime.__version__)'), sequential, intra_op_num_threads as pcc's --threads"
	echo "times, ms per step, pcc / ORT and their ratio: median over $RUNS processes of each one's median of $REPS steps after a warm-up; min, the fastest step of all; CPU, the median over processes of CPU time per step (all threads, spinning ones included); compile: wall s of one pcc run"
	echo
	echo "| model | threads | median ms | ratio | min ms | min ratio | CPU ms | CPU ratio | compile cpu:1 s | compile cpu:4 s | check |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$tmp/table"
if [ -n "$out" ]; then
	{
		echo "# pcc-run against ONNX Runtime on the zoo architectures"
		echo
		cat "$tmp/table"
	} >"$out"
fi
