#!/bin/sh
# test_small_members.sh PCC PCC_RUN PB_CMP MODELGEN DATA_PY: pcc-modelgen's
# small members at their full widths (TAP), as benchmarks/small_members.sh
# checks them at larger sizes: GPT-3 125M (2 of 12 layers, sequence 128,
# batch 2), GShard MoE 380M (2 of 8 layers: one MoE layer of 8 experts,
# one dense; sequence 128, batch 2) and Wide-ResNet 250M (all 50 layers,
# images 64 x 64, batch 2; at 32 x 32 the last stage normalizes 2 values
# per channel and even one rank disagrees with pcc eval: loss 7.417 against
# 6.289, gradient norm 1.6e10). Their weights are absent: one SGD step at lr
# 1e-30 on one rank with `pcc-run --init '*bias=normal:0.02' --seed 1`
# fills them and `--save-onnx` writes the model that every plan and
# reference then reads.
#
# Per family, on 4 CPU ranks: a pipelined plan (--stages 2) and a sharded
# one (--mesh 2x2) for inference (the loss the graphs end in, against
# `pcc eval`: 1e-5 + 1e-4 relative), and one training step (momentum,
# lr 0.01) of GPT's pipelined (2 micro-batches) and sharded plans and of
# MoE's sharded one (the loss against `pcc train --accum M` within 1e-5
# relative, and every parameter's update against pcc train's: `pb_cmp
# --from`, 1e-8 + 1e-2 |update| + 4 f32 units of the value); Wide-ResNet's
# training is a TODO (below). Controls: a model whose parameters did not
# move and another data set's loss are caught.
pcc=$1
run=$2
cmp=$3
gen=$4
data=$5
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export PCC_ONNX_SAVE_INLINE_MAX=1 PCC_PROGRESS=0
mpi="timeout 300 mpirun --oversubscribe"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; }

# prepare FAMILY MODELGEN_ARGS -- DATA_ARGS
prepare() {
	p_d=$tmp/$1
	shift
	mkdir -p "$p_d"
	p_g=""
	while [ "$1" != -- ]; do
		p_g="$p_g $1"
		shift
	done
	shift
	"$gen" $p_g -o "$p_d/gen.onnx" >/dev/null &&
		python3 "$data" "$p_d/data" "$@" --seed 1 &&
		python3 "$data" "$p_d/data2" "$@" --seed 2 &&
		"$pcc" "$p_d/gen.onnx" --cluster cpu:1 --train --optimizer sgd --lr 1e-30 -q -o "$p_d/init.bin" &&
		$mpi -np 1 "$run" "$p_d/init.bin" --data "$p_d/data" --steps 1 --init '*bias=normal:0.02' --seed 1 \
			--save-onnx "$p_d/model.onnx" >"$p_d/init.log" 2>&1 &&
		"$pcc" eval "$p_d/model.onnx" -i "$p_d/data" -o "$p_d/ref" >/dev/null &&
		"$pcc" eval "$p_d/model.onnx" -i "$p_d/data2" -o "$p_d/ref2" >/dev/null ||
		{ cat "$p_d/init.log" >&2; return 1; }
}

# infer FAMILY [OPTS...] (4 ranks)
infer() {
	i_d=$tmp/$1
	shift
	"$pcc" "$i_d/model.onnx" --cluster cpu:4 "$@" -q -o "$i_d/p.bin" &&
		$mpi -np 4 "$run" --timeout 240 "$i_d/p.bin" -i "$i_d/data" -o "$i_d/out" >/dev/null &&
		"$cmp" --rtol 1e-4 --atol 1e-5 "$i_d/out" "$i_d/ref" >&2 &&
		! "$cmp" --rtol 1e-4 --atol 1e-5 "$i_d/out" "$i_d/ref2" >/dev/null
}

# train FAMILY MICRO [OPTS...] (4 ranks, one step)
train() {
	t_d=$tmp/$1 t_m=$2
	shift 2
	t_r=$t_d/tref$t_m
	"$pcc" train "$t_d/model.onnx" -i "$t_d/data" --optimizer momentum --lr 0.01 --accum "$t_m" --steps 1 \
		--log-every 1 --save-onnx "$t_r.onnx" >"$t_r.log" 2>&1 || { cat "$t_r.log" >&2; return 1; }
	"$pcc" "$t_d/model.onnx" --cluster cpu:4 --train --optimizer momentum --lr 0.01 --micro-batches "$t_m" "$@" -q \
		-o "$t_d/t.bin" &&
		$mpi -np 4 "$run" --timeout 240 "$t_d/t.bin" --data "$t_d/data" --steps 1 --save-onnx "$t_d/t.onnx" \
			>"$t_d/t.log" || return 1
	t_got=$(awk '/^step 1/ { print $4 }' "$t_d/t.log")
	t_want=$(awk '/^step 1/ { print $4 }' "$t_r.log")
	echo "loss $t_got, pcc train $t_want" >&2
	awk -v a="$t_got" -v b="$t_want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1e-5 * (b < 0 ? -b : b)) }' &&
		"$cmp" --onnx --from "$t_d/model.onnx" --rtol 1e-2 --atol 1e-8 "$t_d/t.onnx" "$t_r.onnx" >&2 &&
		! "$cmp" --onnx --from "$t_d/model.onnx" --rtol 1e-2 --atol 1e-8 "$t_d/model.onnx" "$t_r.onnx" >/dev/null
}

# family NAME WHAT WHICH: WHICH names the training plans checked (pipelined,
# sharded, or todo: Wide-ResNet's, which disagree, see below).
family() {
	f_name=$1 f_what=$2 f_which=$3
	shift 3
	if ! check "$f_what: pcc-modelgen's graph, weights filled by pcc-run --init and saved" prepare "$f_name" "$@"; then
		return
	fi
	check "$f_what inference, 2 stages on cpu:4: the loss equals pcc eval's (and not another data set's)" \
		infer "$f_name" --stages 2
	check "$f_what inference, mesh 2x2 on cpu:4: the loss equals pcc eval's (and not another data set's)" \
		infer "$f_name" --mesh 2x2
	case $f_which in
	*pipelined*)
		check "$f_what training, 2 stages, 2 micro-batches on cpu:4: loss and every update equal pcc train's" \
			train "$f_name" 2 --stages 2 ;;
	esac
	case $f_which in
	*sharded*)
		check "$f_what training, mesh 2x2 on cpu:4: loss and every update equal pcc train's" \
			train "$f_name" 1 --mesh 2x2 ;;
	esac
	# Wide-ResNet's training step at this initialization is ill-conditioned
	# (gradient norm 1.3e4, BatchNormalization over a few values per
	# channel): pcc-run on ONE rank already disagrees with pcc train by as
	# much as the 4-rank plans (stem.conv.weight's first update 0.128 against
	# 0.092; the losses within 5e-6), so what differs is rounding amplified,
	# not the distribution (benchmarks/results/small_members.md).
	case $f_which in
	todo)
		todo "ill-conditioned step: one rank disagrees with pcc train as much (results/small_members.md)" \
			"$f_what training, mesh 2x2 on cpu:4: loss and every update equal pcc train's" \
			train "$f_name" 1 --mesh 2x2 ;;
	esac
}

family gpt "GPT-3 125M (2 layers, seq 128)" pipelined,sharded gpt3-125m --layers 2 --seq 128 --batch 2 -- \
	tokens --batch 2 --seq 128 --vocab 50257
family moe "MoE 380M (2 layers, seq 128)" sharded moe-380m --layers 2 --seq 128 --batch 2 -- \
	tokens --batch 2 --seq 128 --vocab 32000
family wrn "Wide-ResNet 250M (images 64)" todo wresnet-250m --image 64 --batch 2 -- \
	images --batch 2 --image 64 --classes 1024
tap_done
