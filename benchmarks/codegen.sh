#!/bin/bash
# Single-rank speed of pcc-run with the plan's generated host kernels vs the
# reference kernels (--reference, same plan) vs ONNX Runtime, on one machine.
#
# Usage: benchmarks/codegen.sh [BUILD_DIR] [OUT.md]
#
# Environment (defaults in brackets):
#   RUNS=5        processes per configuration, interleaved; the table shows the median
#   REPS=50       inference steps timed inside each process after one warm-up (fixtures)
#   GPT2_REPS=3   the same for GPT-2 small
#   STEPS=1000    training steps per process (the table shows wall time / STEPS)
#   THREADS=nproc threads per rank for pcc-run (--threads) and ORT (intra_op_num_threads)
#   MODELS="gpt bert mlp moe vit resnet"      inference fixtures (tests/models/X_op17)
#   TRAIN="gpt mlp_loss resnet_train vit"      training fixtures (tests/train/X)
#   GPT2=/tmp/pcc-gpt2   GPT-2 small (made by benchmarks/gpt2_small.py --keep if absent;
#                        GPT2= (empty) skips it)
#   RESNET50=/tmp/pcc-resnet50   ResNet-50, batch 1, 224x224 (made by benchmarks/resnet50.py
#                        --keep if absent; RESNET50= (empty) skips it)
#   RESNET50_REPS=5      inference steps timed per process for ResNet-50
#   ORT_PYTHON=/tmp/ort-venv/bin/python   a python with onnxruntime and onnx; ORT columns
#                        show "-" when it cannot import them
#
# Inference times are per step (rt_step, inputs already loaded, outputs not
# written), taken by benchmarks/codegen_run.c, which is pcc-run's program with
# the step repeated (pcc-run prints inference times in whole milliseconds only),
# linked against libpccrt in BUILD_DIR/benchmarks/codegen_run.  ORT's are
# per InferenceSession.run after a warm-up.  The "outside dots" column is the
# driver's mean kernel time per step less its time in dots (gemm calls of
# dot ops), generated / reference (medians over the processes), and their
# ratio: what the runtime's own kernels (convolutions, pooling, elementwise)
# cost, apart from the BLAS calls that both share.  Training times are pcc-run's own
# "S steps in X s" over STEPS steps (first step included), divided by STEPS.
# Checks: generated vs reference outputs with pb_cmp (default tolerances),
# ORT vs generated with --rtol 1e-3 --atol 1e-4, training losses of the last
# step equal.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$(cd "${1:-$root/build-lead}" && pwd)
out=${2:-}
RUNS=${RUNS:-5}
REPS=${REPS:-50}
GPT2_REPS=${GPT2_REPS:-3}
STEPS=${STEPS:-1000}
THREADS=${THREADS:-$(nproc)}
MODELS=${MODELS-gpt bert mlp moe vit resnet}
TRAIN=${TRAIN-gpt mlp_loss resnet_train vit}
GPT2=${GPT2-/tmp/pcc-gpt2}
RESNET50=${RESNET50-/tmp/pcc-resnet50}
RESNET50_REPS=${RESNET50_REPS:-5}
ORT_PYTHON=${ORT_PYTHON:-/tmp/ort-venv/bin/python}
pcc=$build/compiler/pcc
cmp=$build/tests/pb_cmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
# --bind-to none: Open MPI binds a job of one or two ranks to one core each
# by default, and the rank's --threads would then share that core
mpirun=(mpirun --oversubscribe --bind-to none -np 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# the driver's mean kernel ms per step outside dots, from its pcc-bench line
nondot() { sed -n 's/^pcc-bench: .*kernels \([0-9.]*\) ms, of which dots \([0-9.]*\) ms.*/\1 \2/p' | awk '{ print $1 - $2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f\n", a / b }'; }
fmt() { awk -v a="$1" 'BEGIN { if (a == "-") print "-"; else if (a < 10) printf "%.3f\n", a; else printf "%.1f\n", a }'; }

# the timing driver: pcc-run's program with its steps timed (benchmarks/codegen_run.c,
# built with the rest by ninja)
run=$build/benchmarks/codegen_run
[ -x "$run" ] || { echo "$(basename "$0"): no $run: build it first (ninja -C $build)" >&2; exit 1; }

have_ort=1
if ! "$ORT_PYTHON" -c 'import onnxruntime, onnx, numpy' 2>/dev/null; then
	have_ort=0
	echo "codegen.sh: onnxruntime not importable with $ORT_PYTHON: ORT columns skipped" >&2
fi

rows=()
# infer NAME MODEL DATA REPS
infer() {
	local name=$1 model=$2 data=$3 reps=$4 plan=$tmp/$1.bin r g o i
	if ! "$pcc" "$model" --cluster cpu:1 -o "$plan" >"$tmp/$name.pcc" 2>&1; then
		echo "codegen.sh: $name: pcc failed:" >&2
		cat "$tmp/$name.pcc" >&2
		rows+=("| $name | inference | pcc failed | | | | | | |")
		return
	fi
	: >"$tmp/r" && : >"$tmp/g" && : >"$tmp/o" && : >"$tmp/rk" && : >"$tmp/gk"
	for ((i = 0; i < RUNS; i++)); do
		local od=()
		[ "$i" = 0 ] && od=(-o "$tmp/$name.gen")
		PCC_BENCH_REPS=$reps "${mpirun[@]}" "$run" "$plan" -i "$data" --threads "$THREADS" "${od[@]}" \
			>"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; echo "codegen.sh: $name: generated run failed" >&2; }
		sed -n 's/^pcc-bench: step median \([0-9.]*\) ms.*/\1/p' "$tmp/out" >>"$tmp/g"
		nondot <"$tmp/out" >>"$tmp/gk"
		[ "$i" = 0 ] && od=(-o "$tmp/$name.ref")
		PCC_BENCH_REPS=$reps "${mpirun[@]}" "$run" "$plan" -i "$data" --threads "$THREADS" --reference \
			"${od[@]}" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; echo "codegen.sh: $name: reference run failed" >&2; }
		sed -n 's/^pcc-bench: step median \([0-9.]*\) ms.*/\1/p' "$tmp/out" >>"$tmp/r"
		nondot <"$tmp/out" >>"$tmp/rk"
		if [ $have_ort = 1 ]; then
			[ "$i" = 0 ] && od=("$tmp/$name.ort") || od=()
			"$ORT_PYTHON" "$here/codegen_ort.py" "$model" "$data" "$THREADS" "$reps" "${od[@]}" >"$tmp/out" 2>&1 ||
				{ cat "$tmp/out" >&2; echo "codegen.sh: $name: ORT failed" >&2; }
			sed -n 's/^ort: median \([0-9.]*\) ms.*/\1/p' "$tmp/out" >>"$tmp/o"
		fi
	done
	r=$(median <"$tmp/r") g=$(median <"$tmp/g") o=$(median <"$tmp/o")
	local rk gk check
	rk=$(median <"$tmp/rk") gk=$(median <"$tmp/gk")
	if "$cmp" "$tmp/$name.gen" "$tmp/$name.ref" >"$tmp/cmp" 2>&1; then check="gen = ref"; else
		check="gen != ref: $(tr '\n' ' ' <"$tmp/cmp")"
	fi
	if [ $have_ort = 1 ] && [ -d "$tmp/$name.ort" ]; then
		if "$cmp" --rtol 1e-3 --atol 1e-4 "$tmp/$name.gen" "$tmp/$name.ort" >"$tmp/cmp" 2>&1; then
			check="$check; ORT close ($(sed -n 's/.*\(max abs err [^,]*\).*/\1/p' "$tmp/cmp"))"
		else
			check="$check; ORT differs: $(tr '\n' ' ' <"$tmp/cmp")"
		fi
	fi
	rows+=("| $name | inference | $(fmt "$r") | $(fmt "$g") | $(fmt "$o") | $(ratio "$g" "$r") | $(ratio "$g" "$o") | $(fmt "$gk") / $(fmt "$rk") ($(ratio "$gk" "$rk")) | $check |")
}

# train NAME (tests/train/NAME)
train() {
	local name=$1 dir=tests/train/$1 plan=$tmp/$1.train.bin loss args=() i
	loss=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["loss"])' "$dir/train.json")
	[ "$loss" != model ] && args=(--loss "$loss")
	if ! "$pcc" "$dir/model.onnx" --cluster cpu:1 --train "${args[@]}" --optimizer adamw --lr 0.01 -o "$plan" \
		>"$tmp/$name.pcc" 2>&1; then
		echo "codegen.sh: $name: pcc --train failed:" >&2
		cat "$tmp/$name.pcc" >&2
		rows+=("| $name | train step | pcc failed | | | | | | |")
		return
	fi
	: >"$tmp/r" && : >"$tmp/g"
	for ((i = 0; i < RUNS; i++)); do
		for k in g r; do
			local ref=()
			[ $k = r ] && ref=(--reference)
			"${mpirun[@]}" "$build/runtime/pcc-run" "$plan" --data "$dir" --steps "$STEPS" --threads "$THREADS" \
				"${ref[@]}" >"$tmp/out.$k" 2>&1 || { cat "$tmp/out.$k" >&2; echo "codegen.sh: $name: training run failed" >&2; }
			sed -n 's/^pcc-run: [0-9]* steps in \([0-9.]*\) s.*/\1/p' "$tmp/out.$k" |
				awk -v s="$STEPS" '{ print $1 / s * 1e3 }' >>"$tmp/$k"
		done
	done
	local r g check lg lr
	r=$(median <"$tmp/r") g=$(median <"$tmp/g")
	# loss and grad norm of every logged step (step 1 and every STEPS/10th)
	lg=$(awk '/^step / { print $1, $2, $4, $6 }' "$tmp/out.g") lr=$(awk '/^step / { print $1, $2, $4, $6 }' "$tmp/out.r")
	if [ -n "$lg" ] && [ "$lg" = "$lr" ]; then
		check="losses equal at $(echo "$lg" | wc -l) logged steps (step 1: $(echo "$lg" | awk 'NR == 1 { print $3 }'))"
	else
		check="LOSSES DIFFER: gen $(echo "$lg" | tr '\n' ' '), ref $(echo "$lr" | tr '\n' ' ')"
	fi
	check="$check; gen, $STEPS steps: $(grep '^pcc-run: [0-9]* steps' "$tmp/out.g" | sed 's/.*(rank 0: //; s/)$//')"
	rows+=("| $name | train step | $(fmt "$r") | $(fmt "$g") | - | $(ratio "$g" "$r") | - | - | $check |")
}

for m in $MODELS; do
	infer "$m" "tests/models/${m}_op17/model.onnx" "tests/models/${m}_op17/test_data_set_0" "$REPS"
done
if [ -n "$GPT2" ]; then
	if [ ! -f "$GPT2/model.onnx" ]; then
		/usr/bin/python3 "$here/gpt2_small.py" --pcc "$pcc" --keep "$GPT2" --runs 1 --results "$tmp/gpt2.md" >&2
	fi
	infer gpt2-small "$GPT2/model.onnx" "$GPT2/test_data_set_0" "$GPT2_REPS"
fi
if [ -n "$RESNET50" ]; then
	if [ ! -f "$RESNET50/model.onnx" ]; then
		/usr/bin/python3 "$here/resnet50.py" --keep "$RESNET50" >&2
	fi
	infer resnet50 "$RESNET50/model.onnx" "$RESNET50/test_data_set_0" "$RESNET50_REPS"
fi
for m in $TRAIN; do
	train "$m"
done

cmdline="RUNS=$RUNS REPS=$REPS GPT2_REPS=$GPT2_REPS RESNET50_REPS=$RESNET50_REPS STEPS=$STEPS THREADS=$THREADS benchmarks/codegen.sh ${1:-} ${2:-}"
{
	echo "$(date -u +%Y-%m-%d), $(nproc) cores ($(uname -m), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: ${cmdline% }"
	echo "pcc-run: 1 rank, --threads $THREADS; ORT: intra_op_num_threads=$THREADS$([ $have_ort = 1 ] && "$ORT_PYTHON" -c 'import onnxruntime; print(", onnxruntime", onnxruntime.__version__)' || echo ' (not available)')"
	echo "times: median over $RUNS processes of ms per step (inference: each process's median of REPS steps after a warm-up)"
	echo
	echo "| model | mode | reference ms | generated ms | ORT ms | gen/ref | gen/ORT | outside dots: gen / ref ms (ratio) | check |"
	echo "|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$tmp/table"
if [ -n "$out" ]; then
	{
		echo "# Generated host kernels vs reference kernels vs ONNX Runtime"
		echo
		cat "$tmp/table"
	} >"$out"
fi
