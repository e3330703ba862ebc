#!/bin/sh
# test_plan_memory.sh PCC MODELS_DIR TRAIN_DIR: what the search predicts a
# plan holds against what its lowering allocates (TAP).
#
# 1. A plan is written only if lowering keeps every device within the
#    memory limit: under limits where the search's prediction and the
#    lowering disagree, pcc -o writes a plan (every arena within the limit,
#    plan_verify's and compile_lower's check) or says the model does not
#    fit; never "the lowered plan needs ... more than ... allowed". A
#    stage whose arena is over is solved again under a lower limit before
#    the search is asked for another plan.
# 2. On every device of a representative set of plans (fixtures on meshes
#    of 1 to 8 devices, pipelined and not, training and inference, state
#    split or not, recomputation on and off), the predicted peak of its
#    stage (what the sharding solve lowering lays out states, pcc
#    --explain's memory column) is within 10% of its arena
#    (tests/plan_memory.py).
pcc=$1
models=$2
train=$3
. "$(dirname "$0")/tap.sh"

# writes NAME PCC-ARGS...: written within the limit, or does not fit
writes() {
	"$pcc" "$@" -o "$tmp/w.bin" --codegen none >"$tmp/w.out" 2>"$tmp/w.err"
	rc=$?
	if grep -q 'the lowered plan needs' "$tmp/w.out" "$tmp/w.err" && [ $rc -ne 0 ]; then
		grep 'the lowered plan needs' "$tmp/w.err" | tail -1 >&2
		return 1
	fi
	[ $rc -eq 0 ] && return 0
	grep -q 'does not fit' "$tmp/w.err" || { tail -1 "$tmp/w.err" >&2; return 1; }
}
g=$models/gpt_loss_op17/model.onnx
for c in "cpu:2 300KB" "cpu:4 250KB" "cpu:4 300KB" "cpu:8 200KB" "cpu:8 250KB"; do
	set -- $c
	check "gpt_loss training on $1 under --memory-limit $2: a plan lowering keeps within the limit, or none" \
		writes "$g" --cluster "$1" --train --batch 16 --memory-limit "$2"
done

# refits PCC-ARGS...: written, lowering having solved a stage again under
# a lower limit where its first solve's arena was over (compile.c's
# REFIT_ROUNDS), named on the progress lines
refits() {
	PCC_PROGRESS=1 PCC_PROGRESS_AFTER=0 "$pcc" "$@" -o "$tmp/w.bin" --codegen none >"$tmp/w.out" 2>"$tmp/w.err" ||
		{ tail -1 "$tmp/w.err" >&2; return 1; }
	grep -q 'lowering: stage [0-9]* again, its arena .* over the .* allowed' "$tmp/w.err" ||
		{ echo "no stage solved again" >&2; return 1; }
}
check "gpt_loss training on cpu:8 under --memory-limit 130KB: a stage whose arena is over is solved again, and the plan written" \
	refits "$g" --cluster cpu:8 --train --batch 16 --memory-limit 130KB

# explained PCC-ARGS...: pcc --explain -o ends with one row per stage of
# its predicted memory against its arena, the ratio the two make
explained() {
	"$pcc" "$@" --explain -o "$tmp/x.bin" --codegen none >"$tmp/x.out" 2>"$tmp/x.err" ||
		{ tail -1 "$tmp/x.err" >&2; return 1; }
	awk '/^memory per device, the prediction .* against the lowered plan.s arena/ { t = 1; next }
	     t && /^  stage/ { next }
	     t && /^ +[0-9]+ / {
	       rows++
	       # the ratio is the arena over the prediction as printed (both in KiB here)
	       if ($2 + 0 <= 0 || $4 + 0 <= 0 || $3 != "KiB" || $5 != "KiB") bad = 1
	       else if (($4 / $2) / $NF > 1.02 || ($4 / $2) / $NF < 0.98) bad = 1
	     }
	     END { exit !(rows == 2 && !bad) }' "$tmp/x.out" || { cat "$tmp/x.out" >&2; return 1; }
}
check "pcc --explain -o: each of the 2 stages' predicted memory, its arena and their ratio" \
	explained "$g" --cluster cpu:4 --train --batch 8 --stages 2

agree() {
	python3 "$(dirname "$0")/plan_memory.py" "$pcc" "$tmp" 0.90 1.10 "$@"
}
check "gpt_loss, 2 stages of 1 device, 1F1B over 4 micro-batches" \
	agree "$g" --cluster cpu:2 --train --batch 8 --micro-batches 4 --stages 2
check "gpt_loss, 2 stages of 1x2, 1F1B over 4 micro-batches" \
	agree "$g" --cluster cpu:4 --train --batch 8 --micro-batches 4 --stages 2
check "gpt_loss, 4 stages of 1 device, 1F1B over 8 micro-batches" \
	agree "$g" --cluster cpu:4 --train --batch 16 --micro-batches 8 --stages 4
check "gpt_loss on cpu:8, batch 16 (3 stages of 2 to 4 devices)" agree "$g" --cluster cpu:8 --train --batch 16
check "gpt_loss on 1x8:a100, batch 64 (4 stages)" agree "$g" --cluster 1x8:a100 --train --batch 64
check "train/gpt on cpu:1" agree "$train/gpt/model.onnx" --cluster cpu:1 --train --optimizer momentum \
	--loss cross_entropy:logits,labels
check "train/gpt on cpu:4" agree "$train/gpt/model.onnx" --cluster cpu:4 --train --optimizer momentum \
	--loss cross_entropy:logits,labels
check "train/resnet_train on cpu:4" agree "$train/resnet_train/model.onnx" --cluster cpu:4 --train \
	--optimizer momentum --loss cross_entropy:logits,labels
check "train/vit, 2 stages of 2x2" agree "$train/vit/model.onnx" --cluster cpu:8 --train --optimizer momentum \
	--micro-batches 2 --stages 2 --mesh 2x2 --loss cross_entropy:logits,labels
check "resnet inference on cpu:4" agree "$models/resnet_op17/model.onnx" --cluster cpu:4
check "resnet inference on cpu:1 (each convolution runs on its bias and ReLU's buffer)" \
	agree "$models/resnet_op17/model.onnx" --cluster cpu:1
check "gpt_loss on 2x4:v100, 2 stages, f16 mixed precision" agree "$g" --cluster 2x4:v100 --train --batch 64 --stages 2
check "gpt inference on cpu:1" agree "$models/gpt_op17/model.onnx" --cluster cpu:1
check "gpt inference on cpu:8" agree "$models/gpt_op17/model.onnx" --cluster cpu:8
check "bert inference, 4 stages of 1 device" agree "$models/bert_op17/model.onnx" --cluster cpu:4 --stages 4
check "gpt_loss recomputing its activations, 2 stages of 1x2 (state split, ZeRO)" \
	agree "$g" --cluster cpu:4 --train --batch 8 --micro-batches 4 --stages 2 --recompute on
check "train/gpt on cpu:4 recomputing its activations" agree "$train/gpt/model.onnx" --cluster cpu:4 --train \
	--optimizer momentum --loss cross_entropy:logits,labels --recompute on
tap_done
