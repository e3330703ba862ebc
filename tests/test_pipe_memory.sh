#!/bin/sh
# test_pipe_memory.sh PCC MODELS_DIR TRAIN_DIR: the memory the inter-op
# search predicts for a pipelined training plan it lowers is the arena the
# lowering allocates, per stage (TAP). Plans on 1x1 stage meshes: the
# stage's sharding is then the search's (on wider meshes the lowering
# re-solves each stage's sharding on the train step and may pick another,
# with other bytes per device). Bounds: at most 10% under the arena (a plan
# that passes --memory-limit must fit), at most 15% over.
pcc=$1
models=$2
train=$3
. "$(dirname "$0")/tap.sh"
agree() {
	python3 "$(dirname "$0")/pipe_memory.py" "$pcc" "$tmp" 0.90 1.15 "$@"
}

check "gpt_loss, 2 stages of 1 device, 1F1B over 4 micro-batches" \
	agree "$models/gpt_loss_op17/model.onnx" --cluster cpu:2 --train --batch 8 --micro-batches 4 --stages 2
check "gpt_loss, 4 stages of 1 device, 1F1B over 8 micro-batches (4 slots on stage 0)" \
	agree "$models/gpt_loss_op17/model.onnx" --cluster cpu:4 --train --batch 16 --micro-batches 8 --stages 4
check "gpt_loss, 2 stages of 1 device, 2 micro-batches, SGD with momentum" \
	agree "$models/gpt_loss_op17/model.onnx" --cluster cpu:2 --train --batch 4 --micro-batches 2 --stages 2 \
	--optimizer momentum
check "train/gpt_loss (smaller GPT), 2 stages of 1 device, 4 micro-batches" \
	agree "$train/gpt_loss/model.onnx" --cluster cpu:2 --train --batch 8 --micro-batches 4 --stages 2
tap_done
