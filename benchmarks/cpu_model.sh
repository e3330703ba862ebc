#!/bin/bash
# The cost model against this machine's CPU mesh: for every fixture model
# (inference, and a training step where it has labels) on 1, 2 and 4 ranks,
# the step time pcc predicts for `--cluster cpu:N` beside the step time
# pcc-run measures running that plan with its generated kernels.
#
# Usage: benchmarks/cpu_model.sh [BUILD_DIR] [OUT.md]
#
# Environment (defaults in brackets):
#   RUNS=3          processes per case; the table shows the median of their medians
#   REPS=200        inference steps timed per process, after one warm-up
#   STEPS=200       training steps per process (the first one not timed)
#   RANKS="1 2 4"   rank counts
#   MODELS="mlp gpt bert vit resnet moe"           inference fixtures (tests/models/X_op17)
#   TRAIN="mlp_loss gpt bert vit resnet_train moe" training fixtures (tests/train/X)
#   BEFORE=1        also predict with the cost model's GPU-style defaults (the
#                   calibration before host defaults existed) for a column beside
#
# Predicted: the "step X ms" of pcc's summary line when it compiles the plan
# (the very plan that runs), for inference and for training (momentum, one
# micro-batch). Measured: per step, by benchmarks/cpu_model_run.c (pcc-run
# with each rt_step timed; BUILD_DIR/benchmarks/cpu_model_run), median over the steps of a process, then median
# over RUNS processes. Error: predicted / measured - 1.
#
# Over-subscription: a rank count above the host's cores (4 ranks on 2
# cores) runs its ranks time-sliced; pcc-run then gives each rank one
# thread, and the cost model divides the host's measured rates by the
# ranks, not the cores. Those rows are marked "over" and kept out of the
# summary line, which covers the rows whose ranks have a core each.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-}
RUNS=${RUNS:-3}
REPS=${REPS:-200}
STEPS=${STEPS:-200}
RANKS=${RANKS:-1 2 4}
MODELS=${MODELS-mlp gpt bert vit resnet moe}
TRAIN=${TRAIN-mlp_loss gpt bert vit resnet_train moe}
BEFORE=${BEFORE:-1}
pcc=$build/compiler/pcc
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
err() { awk -v p="$1" -v m="$2" 'BEGIN { if (p == "-" || m == "-" || m == 0) print "-"; else printf "%+.0f%%\n", (p / m - 1) * 100 }'; }

# the timing driver: pcc-run's program with its steps timed (benchmarks/cpu_model_run.c,
# built with the rest by ninja)
run=$build/benchmarks/cpu_model_run
[ -x "$run" ] || { echo "$(basename "$0"): no $run: build it first (ninja -C $build)" >&2; exit 1; }

# The cost model's defaults before the host had its own (GPU-style
# efficiencies and overheads, cost_calib_init), as a calibration file.
cat >"$tmp/before.json" <<'EOF'
{ "device": "gpu-defaults",
  "classes": {
    "dot": { "overhead_us": 3, "rows": [ { "max_flops": 1e7, "compute_eff": 0.2, "memory_eff": 0.5 },
      { "max_flops": 1e9, "compute_eff": 0.45, "memory_eff": 0.65 }, { "max_flops": 1e11, "compute_eff": 0.7, "memory_eff": 0.8 },
      { "max_flops": 1e13, "compute_eff": 0.8, "memory_eff": 0.8 } ] },
    "conv": { "overhead_us": 3, "rows": [ { "max_flops": 1e7, "compute_eff": 0.15, "memory_eff": 0.45 },
      { "max_flops": 1e9, "compute_eff": 0.4, "memory_eff": 0.6 }, { "max_flops": 1e11, "compute_eff": 0.6, "memory_eff": 0.7 },
      { "max_flops": 1e13, "compute_eff": 0.7, "memory_eff": 0.7 } ] },
    "elementwise": { "overhead_us": 2, "rows": [ { "compute_eff": 0.5, "memory_eff": 0.8 } ] },
    "reduce": { "overhead_us": 2, "rows": [ { "compute_eff": 0.5, "memory_eff": 0.7 } ] },
    "norm": { "overhead_us": 2, "rows": [ { "compute_eff": 0.5, "memory_eff": 0.7 } ] },
    "move": { "overhead_us": 2, "rows": [ { "compute_eff": 0.5, "memory_eff": 0.6 } ] },
    "gather": { "overhead_us": 3, "rows": [ { "compute_eff": 0.3, "memory_eff": 0.4 } ] },
    "free": { "overhead_us": 0, "rows": [ { "compute_eff": 1, "memory_eff": 1 } ] } } }
EOF

predict() { sed -n 's/.*; step \([0-9.]*\) ms.*/\1/p' "$1" | head -1; }

rows=()
errs=()
over_errs=()
# one KIND NAME NP [pcc options]: compile, run RUNS times, add a row
one() {
	local kind=$1 name=$2 np=$3 dir plan=$tmp/p.bin pred before="-" meas i runargs
	shift 3
	if [ "$kind" = inference ]; then
		dir=tests/models/${name}_op17
		runargs=(-i "$dir/test_data_set_0")
	else
		dir=tests/train/$name
		runargs=(--data "$dir/test_data_set_0" --steps "$STEPS")
	fi
	if ! "$pcc" "$dir/model.onnx" --cluster "cpu:$np" "$@" -o "$plan" >"$tmp/pcc.out" 2>&1; then
		echo "cpu_model.sh: $name $kind cpu:$np: pcc failed:" >&2
		cat "$tmp/pcc.out" >&2
		rows+=("| $name | $kind | $np | pcc failed | | | | | |")
		return
	fi
	pred=$(predict "$tmp/pcc.out")
	if [ "$BEFORE" = 1 ] && "$pcc" "$dir/model.onnx" --cluster "cpu:$np" "$@" --calib "$tmp/before.json" \
		>"$tmp/pcc0.out" 2>&1; then
		before=$(predict "$tmp/pcc0.out")
	fi
	: >"$tmp/m" && : >"$tmp/k" && : >"$tmp/c"
	for ((i = 0; i < RUNS; i++)); do
		if PCC_BENCH_REPS=$REPS timeout 300 mpirun --oversubscribe -np "$np" "$run" --timeout 120 "$plan" \
			"${runargs[@]}" >"$tmp/out" 2>&1; then
			sed -n 's/^pcc-bench: step median \([0-9.]*\) ms.*/\1/p' "$tmp/out" >>"$tmp/m"
			sed -n 's/^pcc-bench: .*(kernels \([0-9.]*\) ms, communication \([0-9.]*\) ms.*/\1 \2/p' "$tmp/out" |
				while read -r k c; do echo "$k" >>"$tmp/k"; echo "$c" >>"$tmp/c"; done
		else
			echo "cpu_model.sh: $name $kind cpu:$np: run failed:" >&2
			tail -5 "$tmp/out" >&2
		fi
	done
	meas=$(median <"$tmp/m")
	local e0 e1 note=""
	e0=$(err "$before" "$meas") e1=$(err "$pred" "$meas")
	if [ "$np" -gt "$cores" ]; then
		note="over"
		[ "$e1" != - ] && over_errs+=("$(awk -v p="$pred" -v m="$meas" 'BEGIN { print (p / m - 1) * 100 }')")
	elif [ "$e1" != - ]; then
		errs+=("$(awk -v p="$pred" -v m="$meas" 'BEGIN { print (p / m - 1) * 100 }')")
	fi
	rows+=("| $name | $kind | $np$([ -n "$note" ] && echo " ($note)") | $before | $e0 | $pred | $meas | $e1 | $(median <"$tmp/k") / $(median <"$tmp/c") |")
	echo "cpu_model.sh: $name $kind cpu:$np: before $before ms ($e0), predicted $pred ms, measured $meas ms ($e1)" >&2
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
for np in $RANKS; do
	for m in $MODELS; do one inference "$m" "$np"; done
	for m in $TRAIN; do
		loss=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["loss"])' "tests/train/$m/train.json")
		args=(--train --optimizer momentum --lr 0.01)
		[ "$loss" != model ] && args+=(--loss "$loss")
		one train "$m" "$np" "${args[@]}"
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# summary ABS_ERRORS...: "N cases, median |error| X%, max |error| Y%"
summary() {
	printf '%s\n' "$@" | awk '{ v = $1 < 0 ? -$1 : $1; print v }' | sort -g |
		awk '{ v[NR] = $1 } END { if (NR == 0) { print "0 cases"; exit }
			m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%d cases, median |error| %.0f%%, max |error| %.0f%%\n", NR, m, v[NR] }'
}

{
	echo "Command: \`benchmarks/cpu_model.sh $*\` (RUNS=$RUNS REPS=$REPS STEPS=$STEPS RANKS=\"$RANKS\"),"
	echo "started $start on $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)),"
	echo "load average $load0 at the start, $load1 at the end."
	echo
	echo "| model | step | ranks | before, ms | error | predicted, ms | measured, ms | error | kernels / comm, ms |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	printf '%s\n' "${rows[@]}"
	echo
	if [ ${#over_errs[@]} -gt 0 ]; then
		echo "Over-subscribed rows (more ranks than cores, not in the summary): $(summary "${over_errs[@]}")"
		echo
	fi
	echo "Summary: $(summary "${errs[@]}")"
} >"$tmp/table"
cat "$tmp/table"
[ -z "$out" ] || cp "$tmp/table" "$out"
