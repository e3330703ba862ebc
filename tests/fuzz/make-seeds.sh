#!/bin/sh
# make-seeds.sh BUILD_DIR: rewrites the seeds that pcc itself produces, so
# they follow a new plan.bin or checkpoint format: tests/fuzz/corpus/plan/
# (plans of the fixture models, without generated code but for one) and
# tests/fuzz/corpus/ckpt/ (manifests of one-step training runs under
# mpirun). The other seeds are copies of tests/ir, tests/clusters and
# tests/iopddl files, or written by hand. cpu:N clusters are measured on
# the host, so a rerun may shard some plans otherwise: any is a good seed.
set -eu

build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
pcc=$build/compiler/pcc
run=$build/runtime/pcc-run
m=$src/tests/models
c=$src/tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$pcc" "$m/mlp_op13/model.onnx" --cluster cpu:2 --codegen none -o "$c/plan/mlp_cpu2.bin"
"$pcc" "$m/mlp_op13/model.onnx" --cluster cpu:2 -o "$c/plan/mlp_cpu2_host.bin"
"$pcc" "$m/mlp_loss_op17/model.onnx" --cluster cpu:4 --train --optim momentum --batch 8 \
	--micro-batches 2 --codegen none -o "$c/plan/mlp_train_cpu4.bin"
"$pcc" "$m/mlp_loss_op17/model.onnx" --cluster cpu:2 --train --batch 8 --micro-batches 2 \
	--stages 2 --codegen none -o "$c/plan/mlp_pipe_cpu2.bin"
"$pcc" "$m/mlp_loss_op17/model.onnx" --cluster cpu:2 --train --batch 64 --mesh 2x1 --codegen none \
	-o "$c/plan/mlp_train_dp2.bin"
"$pcc" "$m/moe_op13/model.onnx" --cluster cpu:4 --mesh 1x4 --memory-limit 40KB --codegen none \
	-o "$c/plan/moe_1x4_mem.bin"
# a cross entropy's labels input and class count (plan format 5)
"$pcc" "$m/mlp_op13/model.onnx" --cluster cpu:2 --train --loss cross_entropy:y,labels --codegen none \
	-o "$c/plan/mlp_train_labels_cpu2.bin"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
g=$src/tests/train/gpt
topts="--train --loss cross_entropy:logits,labels --optimizer adamw --lr 0.01"
# shellcheck disable=SC2086 # one argument per option
"$pcc" "$g/model.onnx" --cluster cpu:4 $topts -o "$tmp/c4.bin" >/dev/null
mpirun --oversubscribe -np 4 "$run" "$tmp/c4.bin" --data "$g/test_data_set_0" --steps 1 \
	--checkpoint "$tmp/ck4" >/dev/null
cp "$tmp"/ck4/step-*/manifest.json "$c/ckpt/gpt_cpu4.json"
# shellcheck disable=SC2086
"$pcc" "$g/model.onnx" --cluster cpu:2 $topts --stages 2 --batch 4 --micro-batches 2 -o "$tmp/c2.bin" >/dev/null
mpirun --oversubscribe -np 2 "$run" "$tmp/c2.bin" --data "$g/test_data_set_0" --steps 1 \
	--checkpoint "$tmp/ck2" >/dev/null
cp "$tmp"/ck2/step-*/manifest.json "$c/ckpt/gpt_pipe2.json"
# a small one on one line: four parameters, three state tensors
python3 - "$c/ckpt/gpt_cpu4.json" "$c/ckpt/small_compact.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["params"], m["state"] = m["params"][:4], m["state"][:3]
keep = {"param": 4, "state": 3}
m["shards"] = [s for s in m["shards"] if s["index"] < keep[s["kind"]]]
open(sys.argv[2], "w").write(json.dumps(m, separators=(",", ":")))
EOF
echo "make-seeds.sh: wrote $c/plan and $c/ckpt"
