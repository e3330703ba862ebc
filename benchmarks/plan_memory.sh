#!/bin/sh
# plan_memory.sh [PCC]: the memory a plan predicts for every device (what
# the sharding solve lowering lays out counts for its stage, pcc
# --explain's memory column) over a representative set of plans the tests
# write (tests/test_runtime.sh's and test_pipe_memory.sh's: fixtures on
# cpu:1 to cpu:8, pipelined and not, training and inference, and GPU
# clusters), beside the arena the lowering gives it, both broken down by
# kind (tests/plan_memory.py).
# Prints one line per stage (its devices share a layout) and the ratios'
# range. Run from the repository root after scripts/build.
pcc=${1:-build/compiler/pcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
m=tests/models
t=tests/train
lo=9 hi=0 n=0 bad=0
row() {
	name=$1
	shift
	out=$(python3 tests/plan_memory.py "$pcc" "$tmp" 0 0 "$@" 2>&1) || { echo "$name: FAILED ${out##*failed: }"; return; }
	echo "$out" | awk -v n="$name" '{ s = $2; if (!(s in seen)) { seen[s] = 1; print n ": " $0 } }'
	echo "$out" | sed -n 's/.*, ratio \([0-9.]*\).*/\1/p' >>"$tmp/ratios"
	echo "$out" | sed -n 's/.*search ratio \([0-9.]*\).*/\1/p' >>"$tmp/search"
}
topt() { # DIR: the step options test_runtime.sh gives a training fixture
	loss=$(python3 -c "import json; print(json.load(open('$1/train.json')).get('loss', 'model'))")
	[ "$loss" = model ] || echo "--loss $loss"
}
for np in 1 2 4 8; do
	row "gpt_op17 infer cpu:$np" $m/gpt_op17/model.onnx --cluster cpu:$np
	row "resnet_op17 infer cpu:$np" $m/resnet_op17/model.onnx --cluster cpu:$np
done
row "gpt_op17 infer cpu:4 stages 2 mesh 1x2" $m/gpt_op17/model.onnx --cluster cpu:4 --stages 2 --mesh 1x2
row "bert_op17 infer cpu:4 stages 4" $m/bert_op17/model.onnx --cluster cpu:4 --stages 4
for f in mlp_loss gpt bert moe vit resnet_train; do
	for np in 1 2 4 8; do
		row "$f train cpu:$np" $t/$f/model.onnx --cluster cpu:$np --train --optimizer momentum $(topt $t/$f)
	done
	row "$f train cpu:4 mb 2" $t/$f/model.onnx --cluster cpu:4 --train --optimizer momentum --micro-batches 2 $(topt $t/$f)
done
row "gpt train adamw cpu:2 mb 4 stages 2" $t/gpt/model.onnx --cluster cpu:2 --train --optimizer adamw --micro-batches 4 --stages 2 $(topt $t/gpt)
row "gpt train cpu:4 mb 4 stages 4" $t/gpt/model.onnx --cluster cpu:4 --train --optimizer momentum --micro-batches 4 --stages 4 $(topt $t/gpt)
row "bert train cpu:4 mb 2 stages 2 mesh 1x2" $t/bert/model.onnx --cluster cpu:4 --train --optimizer momentum --micro-batches 2 --stages 2 --mesh 1x2 $(topt $t/bert)
row "vit train cpu:8 mb 2 stages 2 mesh 2x2" $t/vit/model.onnx --cluster cpu:8 --train --optimizer momentum --micro-batches 2 --stages 2 --mesh 2x2 $(topt $t/vit)
row "gpt_loss_op17 train adamw cpu:2 b8 mb 4 stages 2" $m/gpt_loss_op17/model.onnx --cluster cpu:2 --train --batch 8 --micro-batches 4 --stages 2
row "gpt_loss_op17 train adamw cpu:4 b8 mb 4 stages 2" $m/gpt_loss_op17/model.onnx --cluster cpu:4 --train --batch 8 --micro-batches 4 --stages 2
row "gpt_loss_op17 train adamw cpu:4 b16 mb 8 stages 4" $m/gpt_loss_op17/model.onnx --cluster cpu:4 --train --batch 16 --micro-batches 8 --stages 4
row "gpt_loss_op17 train adamw cpu:8 b16" $m/gpt_loss_op17/model.onnx --cluster cpu:8 --train --batch 16
row "gpt_loss_op17 train adamw 1x8:a100 b64" $m/gpt_loss_op17/model.onnx --cluster 1x8:a100 --train --batch 64
row "gpt_loss_op17 train adamw 2x4:v100 b64 stages 2" $m/gpt_loss_op17/model.onnx --cluster 2x4:v100 --train --batch 64 --stages 2
row "gpt_op17 infer 1x4:h100 b32" $m/gpt_op17/model.onnx --cluster 1x4:h100 --batch 32
sort -n "$tmp/ratios" | awk 'NR == 1 { lo = $1 } { hi = $1; n++; out += ($1 < 0.9 || $1 > 1.1) }
	END { printf "%d devices: predicted / arena from %.3f to %.3f, %d outside 0.9..1.1\n", n, lo, hi, out }'
sort -n "$tmp/search" | awk 'NR == 1 { lo = $1 } { hi = $1; n++; out += ($1 < 0.9 || $1 > 1.1) }
	END { printf "%d devices: the search'"'"'s own figure / arena from %.3f to %.3f, %d outside 0.9..1.1\n", n, lo, hi, out }'
