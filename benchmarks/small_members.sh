#!/bin/bash
# small_members.sh: the plans of pcc-modelgen's small members run on CPU
# ranks and checked against the reference interpreter (issue 35 item 6).
#
# Usage: benchmarks/small_members.sh [BUILD_DIR] [OUT.md]
#
# Environment: FAMILIES="gpt moe wrn" (which models), STEPS=2 (training
# steps), KEEP=DIR (keep the models, plans and outputs there).
#
# GPT-3 125M, GShard MoE 380M and Wide-ResNet 250M are written by
# pcc-modelgen at their full widths (hidden 768, 12 or 16 heads, MLP 4h or
# 8h, 8 experts, the whole vocabularies; Wide-ResNet depth 50, 160 base
# channels, width 2, 1024 classes), shrunk only where the run time on this
# 2-core machine needs it (the script prints the exact commands):
#   GPT-3 125M: 4 of 12 layers, sequence 128 of 2048, batch 4
#   MoE 380M:   2 of 8 layers (one MoE layer, one dense), sequence 128 of
#               1024 (a group is one sequence: capacity 2 x 128 / 8 = 32
#               tokens per expert), batch 4
#   WRN 250M:   every layer; images 64 x 64 instead of 224 x 224, batch 4
# Their weights are absent; one training step on one rank fills them
# (`pcc-run --init '*bias=normal:0.02' --seed 1`, so biases are not zeros;
# SGD at lr 1e-30, which leaves the values as filled) and writes the model
# with them (`--save-onnx`), which every plan and reference then reads.
#
# Each case compiles a plan for `--cluster cpu:N` with the stage count and
# logical mesh shapes the scale plans use (pipelined 2 stages, 2x2, 1x4,
# 4x1, 2x4, and the plan the search picks unforced), runs it with
# `mpirun -np N pcc-run` and compares:
#   inference: the output (the model's loss: the graphs end in it) against
#     `pcc eval`, |got - want| <= 1e-5 + 1e-4 |want| (test_runtime.sh's);
#   training (momentum SGD, lr 0.01, STEPS steps, M micro-batches): every
#     step's loss against `pcc train --accum M` within 1e-5 relative, and
#     every parameter's update (after - before) against pcc train's, within
#     1e-8 + 1e-2 |update| + four f32 units of the value (`pb_cmp --from`:
#     a step moves these models' parameters by less than any tolerance on
#     their values would notice).
# The table gives the plan pcc chose (stages, schedule, micro-batches, its
# predicted step), the largest errors, and wall times (compile; run, which
# is mostly mpirun's start and loading the weights, and the ranks share
# 2 cores).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-}
FAMILIES=${FAMILIES:-gpt moe wrn}
STEPS=${STEPS:-2}
pcc=$build/compiler/pcc
run=$build/runtime/pcc-run
cmp=$build/tests/pb_cmp
gen=$build/benchmarks/pcc-modelgen
data=$here/small_members_data.py
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# weights in a data file beside each saved model: every rank reads only its slices
export PCC_ONNX_SAVE_INLINE_MAX=1
export PCC_PROGRESS=0
mpi="timeout 900 mpirun --oversubscribe"
if [ -n "${KEEP:-}" ]; then
	tmp=$KEEP
	mkdir -p "$tmp"
else
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
fi
rows=$tmp/rows.md
: >"$rows"
: >"$tmp/models"
npass=0 nfail=0

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
say() { echo "$*" >&2; }

# prepare FAMILY: $tmp/FAMILY/{model.onnx (+ .data), data/, ref/}
prepare() {
	f=$1 d=$tmp/$1
	mkdir -p "$d"
	case $f in
	gpt)
		gcmd="pcc-modelgen gpt3-125m --layers 4 --seq 128 --batch 4"
		dcmd="tokens --batch 4 --seq 128 --vocab 50257" ;;
	moe)
		gcmd="pcc-modelgen moe-380m --layers 2 --seq 128 --batch 4"
		dcmd="tokens --batch 4 --seq 128 --vocab 32000" ;;
	wrn)
		gcmd="pcc-modelgen wresnet-250m --image 64 --batch 4"
		dcmd="images --batch 4 --image 64 --classes 1024" ;;
	esac
	say "== $f: $gcmd"
	echo "$f|$gcmd" >>"$tmp/models"
	[ -f "$d/model.onnx" ] && [ -d "$d/ref" ] && return 0 # KEEP: prepared before
	"$gen" ${gcmd#pcc-modelgen } -o "$d/gen.onnx" >&2 &&
		python3 "$data" "$d/data" $dcmd &&
		"$pcc" "$d/gen.onnx" --cluster cpu:1 --train --optimizer sgd --lr 1e-30 -q -o "$d/init.bin" &&
		$mpi -np 1 "$run" "$d/init.bin" --data "$d/data" --steps 1 --init '*bias=normal:0.02' --seed 1 \
			--save-onnx "$d/model.onnx" >"$d/init.log" 2>&1 &&
		"$pcc" eval "$d/model.onnx" -i "$d/data" -o "$d/ref" >/dev/null ||
		{ say "$f: preparing failed"; cat "$d/init.log" >&2; return 1; }
}

# train_ref FAMILY M: pcc train's losses and parameters (M micro-batches)
train_ref() {
	d=$tmp/$1 r=$tmp/$1/tref$2
	[ -f "$r.onnx" ] && return 0
	t0=$(now)
	"$pcc" train "$d/model.onnx" -i "$d/data" --optimizer momentum --lr 0.01 --accum "$2" --steps "$STEPS" \
		--log-every 1 --save-onnx "$r.onnx" >"$r.log" 2>&1 || { cat "$r.log" >&2; return 1; }
	say "$1: pcc train --accum $2: $(since "$t0") s"
}

# row FAMILY KIND NP MICRO OPTS PLAN RESULT ERR COMPILE_S RUN_S
row() {
	printf '| %s | %s | cpu:%s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$5" "$6" "$7" "$8" "$9" "${10}" >>"$rows"
	if [ "$7" = pass ]; then npass=$((npass + 1)); else nfail=$((nfail + 1)); fi
	say "$1 $2 cpu:$3 $5: $7 ($8) compile $9 s, run ${10} s"
}

# the plan pcc describes: "2 stages, 1f1b, 2 micro-batches; step 12.3 ms"
plan_of() { sed -n "s/.* on cpu:[0-9]*: \([^;]*\); step \([0-9.]*\) \([a-z]*\).*/\1, step \2 \3/p" "$1" | head -1; }

# infer FAMILY NP [OPTS...]
infer() {
	f=$1 np=$2 d=$tmp/$1
	shift 2
	c=$d/case
	rm -rf "$c" && mkdir -p "$c"
	t0=$(now)
	if ! "$pcc" "$d/model.onnx" --cluster "cpu:$np" "$@" -o "$c/p.bin" >"$c/compile.log" 2>&1; then
		row "$f" infer "$np" - "$*" - "fail: compile: $(tail -1 "$c/compile.log")" - "$(since "$t0")" -
		return
	fi
	tc=$(since "$t0") t0=$(now)
	if ! $mpi -np "$np" "$run" --timeout 600 "$c/p.bin" -i "$d/data" -o "$c/out" >"$c/run.log" 2>&1; then
		row "$f" infer "$np" - "$*" "$(plan_of "$c/compile.log")" "fail: run: $(grep -m1 'pcc-run: rank' "$c/run.log" || tail -1 "$c/run.log")" - "$tc" "$(since "$t0")"
		return
	fi
	tr=$(since "$t0")
	res=$("$cmp" --rtol 1e-4 --atol 1e-5 "$c/out" "$d/ref")
	st=$?
	err=$(echo "$res" | sed -n 's/.*\(max abs err [^,]*\), max rel err \([^ ]*\).*/\1, rel \2/p')
	[ $st -eq 0 ] && r=pass || r="fail: ${res##*first outside: }"
	row "$f" infer "$np" - "$*" "$(plan_of "$c/compile.log")" "$r" "$err" "$tc" "$tr"
}

# train FAMILY NP MICRO [OPTS...]
train() {
	f=$1 np=$2 m=$3 d=$tmp/$1
	shift 3
	c=$d/case
	rm -rf "$c" && mkdir -p "$c"
	train_ref "$f" "$m" || { row "$f" train "$np" "$m" "$*" - "fail: pcc train" - - -; return; }
	t0=$(now)
	if ! "$pcc" "$d/model.onnx" --cluster "cpu:$np" --train --optimizer momentum --lr 0.01 --micro-batches "$m" "$@" \
		-o "$c/t.bin" >"$c/compile.log" 2>&1; then
		row "$f" train "$np" "$m" "$*" - "fail: compile: $(tail -1 "$c/compile.log")" - "$(since "$t0")" -
		return
	fi
	tc=$(since "$t0") t0=$(now)
	if ! $mpi -np "$np" "$run" --timeout 600 "$c/t.bin" --data "$d/data" --steps "$STEPS" --save-onnx "$c/t.onnx" \
		>"$c/run.log" 2>&1; then
		row "$f" train "$np" "$m" "$*" "$(plan_of "$c/compile.log")" "fail: run: $(grep -m1 'pcc-run: rank' "$c/run.log" || tail -1 "$c/run.log")" - "$tc" "$(since "$t0")"
		return
	fi
	tr=$(since "$t0")
	grep '^step ' "$c/run.log" | awk '{ print $4 }' >"$c/got"
	grep '^step ' "$d/tref$m.log" | awk '{ print $4 }' >"$c/want"
	lerr=$(paste "$c/got" "$c/want" | awk -v n="$STEPS" '
		{ d = $1 - $2; d = d < 0 ? -d : d; r = d / ($2 < 0 ? -$2 : $2); if (r > m) m = r; if (r > 1e-5) bad = NR }
		END { if (NR != n) printf "%d losses of %d", NR, n; else if (bad) printf "loss of step %d off by %.2g", bad, m; else printf "%.2g", m }')
	res=$("$cmp" --onnx --from "$d/model.onnx" --rtol 1e-2 --atol 1e-8 "$c/t.onnx" "$d/tref$m.onnx")
	st=$?
	err="loss rel $lerr; update abs $(echo "$res" | sed -n 's/.*max abs err \([^,]*\), max rel err \([^ ]*\).*/\1, rel \2/p') of $(echo "$res" | sed -n 's/.*largest update \([^:]*\):.*/\1/p')"
	case $lerr in
	[0-9]*) r=pass ;;
	*) r="fail: $lerr" ;;
	esac
	[ $st -eq 0 ] || r="fail: ${res##*first outside: }"
	row "$f" train "$np" "$m" "--micro-batches $m $*" "$(plan_of "$c/compile.log")" "$r" "$err" "$tc" "$tr"
}

# The cases: inference and training, on 4 and 8 ranks, the meshes of the
# scale plans (training: the forced ones only; each takes minutes here).
cases() {
	f=$1
	infer "$f" 4
	infer "$f" 4 --stages 2
	infer "$f" 4 --mesh 2x2
	infer "$f" 4 --mesh 1x4
	infer "$f" 4 --mesh 4x1
	infer "$f" 8
	infer "$f" 8 --mesh 2x4
	infer "$f" 8 --stages 2 --mesh 2x2
	train "$f" 4 2 --stages 2
	train "$f" 4 1 --mesh 2x2
	train "$f" 4 1 --mesh 4x1
	train "$f" 8 1 --mesh 2x4
	train "$f" 8 2 --stages 2 --mesh 2x2
}

t_all=$(now)
for f in $FAMILIES; do
	if prepare "$f"; then
		cases "$f"
	else
		row "$f" - - - - - "fail: preparing the model (see stderr)" - - -
	fi
done
total=$(since "$t_all")

report() {
	echo "# pcc-modelgen's small members on CPU ranks against the reference interpreter (issue 35 item 6)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) cores ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)), $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
	echo
	echo "    benchmarks/small_members.sh build benchmarks/results/small_members.md"
	echo
	echo "Models (full widths; what is shrunk and why: the script's header):"
	echo
	while IFS='|' read -r f g; do echo "    $f: $g"; done <"$tmp/models"
	echo
	echo "Weights: pcc-run --init '*bias=normal:0.02' --seed 1 on one rank, saved with --save-onnx."
	echo "Inference: the loss output against pcc eval (rtol 1e-4, atol 1e-5). Training: momentum SGD lr 0.01,"
	echo "$STEPS steps; losses against pcc train --accum M (1e-5 relative), every parameter's update against"
	echo "pcc train's (pb_cmp --from: 1e-8 + 1e-2 |update| + 4 f32 ulps of the value). Times in seconds,"
	echo "wall clock, the ranks over-subscribing the cores; run includes mpirun's start and loading the weights."
	echo
	echo "| model | kind | cluster | forced | plan (pcc's summary) | result | largest errors | compile s | run s |"
	echo "|---|---|---|---|---|---|---|---|---|"
	cat "$rows"
	echo
	echo "$npass passed, $nfail failed, $(printf %.0f "$total") s in all."
}
report
[ -n "$out" ] && report >"$out"
[ "$nfail" -eq 0 ]
