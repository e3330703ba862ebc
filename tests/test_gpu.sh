#!/bin/sh
# test_gpu.sh MODE PCC PCC_RUN PB_CMP MODELS_DIR TRAIN_DIR: pcc-run's GPU
# backend (TAP).
#
# MODE refusals (any machine): a plan compiled for a GPU cluster, run where
# no GPU is usable (no driver here; CUDA_VISIBLE_DEVICES= hides the GPUs
# of a machine that has some), fails at start within seconds with one
# "pcc-run:" line naming the plan, its cluster and --device cpu; with
# --device cpu the same plan runs on CPU ranks and its outputs equal
# PyTorch's; --device gpu on a plan without GPU code and an unknown
# --device are refused.
#
# MODE gpu (needs an NVIDIA GPU; exits 77, skipped, without one): every
# fixture model with test data, compiled for one GPU (1x1:h100), runs on
# the GPU and its outputs equal PyTorch's (the fixtures' expected outputs,
# rtol 1e-3); the training fixtures' three steps on the GPU log the same
# losses as on CPU ranks (rtol 1e-4), with GPipe micro-batches too.
mode=$1
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$2")
run=$(abspath "$3")
cmp=$(abspath "$4")
models=$(abspath "$5")
train=$(abspath "$6")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"

if [ "$mode" = gpu ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "1..0 # SKIP no NVIDIA GPU (nvidia-smi lists none)"
	exit 77
fi
. "$(dirname "$0")/tap.sh"

gi=$models/gpt_op17

# one_line FILE FRAGMENT...: FILE has exactly one pcc-run: line, with every fragment.
one_line() {
	f=$1
	shift
	grep '^pcc-run:' "$f" >"$tmp/line"
	cat "$tmp/line" >&2
	[ "$(wc -l <"$tmp/line")" -eq 1 ] || { echo "not one pcc-run: line" >&2; return 1; }
	for frag in "$@"; do
		grep -qF -- "$frag" "$tmp/line" || { echo "missing: $frag" >&2; return 1; }
	done
}

# refused_run NP FRAGMENTS... -- ARGS: pcc-run ARGS fails within 20 s with one line.
refused_run() {
	np=$1
	shift
	frags=
	while [ "$1" != -- ]; do frags="$frags$1
"; shift; done
	shift
	t0=$(date +%s)
	CUDA_VISIBLE_DEVICES= $mpi -np "$np" "$run" "$@" >"$tmp/so" 2>"$tmp/se" && { echo "exit status 0" >&2; return 1; }
	[ $(($(date +%s) - t0)) -lt 20 ] || { echo "took too long" >&2; return 1; }
	[ ! -e "$tmp/never" ] || { echo "-o written" >&2; return 1; }
	echo "$frags" | while IFS= read -r fr; do
		[ -z "$fr" ] || grep '^pcc-run:' "$tmp/se" | grep -qF -- "$fr" || { echo "missing: $fr" >&2; exit 1; }
	done || return 1
	[ "$(grep -c '^pcc-run:' "$tmp/se")" -eq 1 ] || { cat "$tmp/se" >&2; echo "not one pcc-run: line" >&2; return 1; }
}

if [ "$mode" = refusals ]; then
	check "pcc compiles gpt_op17 for 1x2:h100 (PTX) and for cpu:2" sh -c "
	  '$pcc' '$gi/model.onnx' --cluster 1x2:h100 -o '$tmp/g.bin' >/dev/null &&
	  '$pcc' '$gi/model.onnx' --cluster cpu:2 -o '$tmp/c.bin' >/dev/null"
	check "without a usable GPU a GPU plan is refused at start, naming its cluster and --device cpu" \
		refused_run 2 "g.bin is for GPUs (cluster 1x2:h100)" "--device cpu" -- "$tmp/g.bin" -i "$gi/test_data_set_0" -o "$tmp/never"
	check "--device cpu runs the GPU plan on CPU ranks; its outputs equal PyTorch's" sh -c "
	  $mpi -np 2 '$run' '$tmp/g.bin' --device cpu -i '$gi/test_data_set_0' -o '$tmp/gout' >/dev/null &&
	  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/gout' '$gi/test_data_set_0'"
	check "--device gpu on a plan without GPU code is refused" \
		refused_run 2 "c.bin has no GPU code" -- "$tmp/c.bin" --device gpu -i "$gi/test_data_set_0" -o "$tmp/never"
	check "an unknown --device is refused" \
		refused_run 2 "--device tpu: expected auto, cpu or gpu" -- "$tmp/c.bin" --device tpu -i "$gi/test_data_set_0"
	tap_done
fi

# ---- on a GPU
for m in "$models"/*/; do
	m=${m%/}
	name=$(basename "$m")
	[ -f "$m/model.onnx" ] && [ -d "$m/test_data_set_0" ] && [ -f "$m/test_data_set_0/output_0.pb" ] || continue
	# symbolic batch and sequence: bound as the fixture's test data are
	opts=
	case $name in gpt_dyn_*) opts="--batch 2 --dim seq=8" ;; esac
	check "$name: compiled for one GPU, run on it, its outputs equal PyTorch's" sh -c "
	  '$pcc' '$m/model.onnx' --cluster 1x1:h100 $opts -o '$tmp/$name.bin' >/dev/null &&
	  $mpi -np 1 '$run' '$tmp/$name.bin' -i '$m/test_data_set_0' -o '$tmp/$name.out' >&2 &&
	  '$cmp' --rtol 1e-3 --atol 1e-4 '$tmp/$name.out' '$m/test_data_set_0'"
done

# losses DEVICE PLAN DATA: the three losses pcc-run logs.
losses() {
	$mpi -np 1 "$run" "$2" --device "$1" --data "$3" --steps 3 | awk '/^step/ { print $3 }'
}
same_losses() {
	a=$(losses cpu "$1" "$2") && b=$(losses gpu "$1" "$2") || return 1
	echo "cpu: $a; gpu: $b" >&2
	[ -n "$a" ] && echo "$a
$b" | awk 'NR <= 3 { c[NR] = $1; next } { d = $1 - c[NR - 3]; if (d < 0) d = -d; if (d > 1e-4 * (c[NR - 3] < 0 ? -c[NR - 3] : c[NR - 3]) + 1e-6) bad = 1 } END { exit bad || NR != 6 }'
}
for t in "$train"/*/; do
	t=${t%/}
	name=$(basename "$t")
	[ -f "$t/train.json" ] && [ -d "$t/test_data_set_0" ] || continue
	loss=$(sed -n 's/.*"loss": "\([^"]*\)".*/\1/p' "$t/train.json" | head -1)
	lossopt=
	[ "$loss" = model ] || lossopt="--loss $loss"
	for mb in 1 2; do
		plan=$tmp/$name-$mb.bin
		check "$name: compiles for one GPU (adamw, $mb micro-batches)" sh -c "'$pcc' '$t/model.onnx' \
		  --cluster 1x1:h100 --train $lossopt --optimizer adamw --lr 0.01 --micro-batches $mb --codegen all \
		  -o '$plan' >/dev/null"
		check "$name: 3 training steps on the GPU log the CPU ranks' losses ($mb micro-batches)" \
			same_losses "$plan" "$t/test_data_set_0"
	done
done
tap_done
