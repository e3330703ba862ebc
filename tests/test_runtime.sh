#!/bin/sh
# test_runtime.sh PCC PCC_RUN PB_CMP MODELS_DIR: the equivalence suite of the
# CPU runtime (TAP). Every fixture model is compiled for meshes of 1, 2, 4
# and 8 CPU ranks, run by pcc-run under mpirun (over-subscribed), and
# compared with the reference interpreter: inference outputs (`pcc eval`),
# and for training the per-step losses and the parameters after 3 steps
# (`pcc train`, the same optimizer, micro-batches as --accum).
#
# Tolerances (float32 throughout; sums run in another order on a mesh):
#   inference outputs: |got - want| <= 1e-5 + 1e-4 |want|
#   losses: 1e-5 relative; parameters after 3 steps: 1e-4 absolute + 1e-3
#   relative.
pcc=$1
run=$2
cmp=$3
models=$4
train=$(dirname "$0")/train
. "$(dirname "$0")/tap.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no network probing, no shared-memory warnings on small containers
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"

# infer NAME MODEL_DIR RANKS [compile options]: outputs equal pcc eval's.
infer() {
	name=$1 dir=$2 np=$3
	shift 3
	ref=$tmp/ref_$name
	[ -d "$ref" ] || "$pcc" eval "$dir/model.onnx" -i "$dir/test_data_set_0" -o "$ref" >/dev/null 2>&1
	check "$name on $np ranks $*: outputs equal the reference interpreter's" sh -c "
	  '$pcc' '$dir/model.onnx' --cluster cpu:$np $* -o '$tmp/p.bin' >/dev/null &&
	  $mpi -np $np '$run' --timeout 60 '$tmp/p.bin' -i '$dir/test_data_set_0' -o '$tmp/run_out' >/dev/null &&
	  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/run_out' '$ref' >&2"
}

# trainer NAME DIR OPTIMIZER RANKS MICRO [compile options]: 3 steps.
trainer() {
	name=$1 dir=$2 opt=$3 np=$4 micro=$5
	shift 5
	loss=$(python3 -c "import json; print(json.load(open('$dir/train.json')).get('loss', 'model'))")
	lossopt=$([ "$loss" = model ] || echo "--loss $loss")
	topts="--optimizer $opt --lr 0.01 $lossopt"
	ref=$tmp/tref_${name}_${opt}_$micro
	[ -f "$ref.onnx" ] || "$pcc" train "$dir/model.onnx" -i "$dir/test_data_set_0" $topts --accum "$micro" \
		--steps 3 --log-every 1 --save-onnx "$ref.onnx" >"$ref.log" 2>&1
	check "$name training ($opt) on $np ranks, $micro micro-batches $*: losses and parameters after 3 steps equal pcc train's" sh -c "
	  '$pcc' '$dir/model.onnx' --cluster cpu:$np --train $topts --micro-batches $micro $* -o '$tmp/t.bin' >/dev/null &&
	  $mpi -np $np '$run' --timeout 60 '$tmp/t.bin' --data '$dir/test_data_set_0' --steps 3 --save-onnx '$tmp/t.onnx' >'$tmp/t.log' &&
	  grep '^step ' '$tmp/t.log' | awk '{print \$4}' >'$tmp/got' && grep '^step ' '$ref.log' | awk '{print \$4}' >'$tmp/want' &&
	  test \$(wc -l <'$tmp/got') -eq 3 &&
	  paste '$tmp/got' '$tmp/want' | awk '{ d = \$1 - \$2; if (d < 0) d = -d; if (d > 1e-5 * (\$2 < 0 ? -\$2 : \$2) + 1e-6) { print \"loss \" \$1 \" vs \" \$2; exit 1 } }' >&2 &&
	  '$cmp' --onnx --rtol 1e-3 --atol 1e-4 '$tmp/t.onnx' '$ref.onnx' >&2"
}

for m in mlp_op17 gpt_op17 bert_op17 resnet_op17 vit_op17 moe_op17 gpt_op13 mlp_ext_op17; do
	for np in 1 2 4 8; do
		infer "$m" "$models/$m" "$np"
	done
done
# pipeline stages and meshes forced (--stages, --mesh)
infer gpt_op17 "$models/gpt_op17" 2 --stages 2
infer gpt_op17 "$models/gpt_op17" 4 --stages 2 --mesh 1x2
infer bert_op17 "$models/bert_op17" 4 --stages 4
infer vit_op17 "$models/vit_op17" 8 --stages 2 --mesh 2x2
infer resnet_op17 "$models/resnet_op17" 4 --mesh 4x1
infer moe_op17 "$models/moe_op17" 4 --mesh 1x4

# Momentum SGD for every model: Adam would turn the reordering noise of
# gradients that are zero in exact arithmetic (an attention key's bias)
# into updates of +-lr. AdamW on the models without such parameters.
for m in mlp_loss gpt bert moe vit resnet_train; do
	for np in 1 2 4 8; do
		trainer "$m" "$train/$m" momentum "$np" 1
	done
	trainer "$m" "$train/$m" momentum 4 2
done
for m in mlp_loss moe; do
	for np in 2 8; do
		trainer "$m" "$train/$m" adamw "$np" 1
	done
	trainer "$m" "$train/$m" adamw 4 2
done
# pipelined training (1F1B or GPipe as the search picks) and forced meshes
trainer gpt "$train/gpt" momentum 2 2 --stages 2
trainer gpt "$train/gpt" momentum 2 4 --stages 2
trainer gpt "$train/gpt" momentum 4 4 --stages 4
trainer bert "$train/bert" momentum 4 2 --stages 2 --mesh 1x2
trainer mlp_loss "$train/mlp_loss" adamw 4 2 --stages 2 --mesh 2x1
trainer moe "$train/moe" adamw 2 2 --stages 2
trainer vit "$train/vit" momentum 8 2 --stages 2 --mesh 2x2
trainer resnet_train "$train/resnet_train" momentum 4 1 --mesh 4x1
trainer gpt "$train/gpt" momentum 8 1 --mesh 1x8

# Checkpoints: a run killed between checkpoints and resumed ends bit for bit
# where an uninterrupted run ends; a checkpoint loads on another mesh; a
# corrupt newest checkpoint falls back to the one before.
g=$train/gpt
data=$g/test_data_set_0
topts="--train --loss cross_entropy:logits,labels --optimizer adamw --lr 0.01"
"$pcc" "$g/model.onnx" --cluster cpu:4 $topts -o "$tmp/c4.bin" >/dev/null
$mpi -np 4 "$run" "$tmp/c4.bin" --data "$data" --steps 6 --save-onnx "$tmp/full.onnx" >"$tmp/full.log" 2>&1
# killed_resumes: each step says on stderr what went wrong.
killed_resumes() {
	grep -q '^step 6/6' "$tmp/full.log" || { echo "the uninterrupted run failed: $(tail -3 "$tmp/full.log")" >&2; return 1; }
	PCC_RUN_FAULT=2:10:exit:4 $mpi -np 4 "$run" "$tmp/c4.bin" --data "$data" --steps 6 --checkpoint "$tmp/ck" \
		--checkpoint-every 2 >"$tmp/kill.log" 2>&1 && { echo "the faulted run exited 0" >&2; return 1; }
	[ "$(cat "$tmp/ck/LATEST")" = step-00000002 ] || { echo "LATEST: $(cat "$tmp/ck/LATEST")" >&2; return 1; }
	! ls -d "$tmp"/ck/*.tmp 2>/dev/null || { echo "a temporary checkpoint was left" >&2; return 1; }
	$mpi -np 4 "$run" "$tmp/c4.bin" --data "$data" --steps 6 --resume "$tmp/ck" --save-onnx "$tmp/res.onnx" \
		>"$tmp/res.log" 2>&1 || { echo "the resumed run failed: $(tail -3 "$tmp/res.log")" >&2; return 1; }
	grep -q 'resumed from .* at step 2' "$tmp/res.log" || { echo "not resumed at step 2" >&2; return 1; }
	grep '^step 6/6' "$tmp/res.log" | cut -d' ' -f1-5 >"$tmp/a"
	grep '^step 6/6' "$tmp/full.log" | cut -d' ' -f1-5 >"$tmp/b"
	cmp -s "$tmp/a" "$tmp/b" || { echo "last losses differ: $(cat "$tmp/a") / $(cat "$tmp/b")" >&2; return 1; }
	"$cmp" --onnx --rtol 0 --atol 0 "$tmp/res.onnx" "$tmp/full.onnx" >&2
}
check "checkpoint: a run killed at step 4 (after the step-2 checkpoint) resumes to the uninterrupted run's parameters, bit for bit" \
	killed_resumes
# Resharding is checked with momentum: AdamW turns the last-bit differences
# of two plans' summation orders into lr-sized steps wherever a gradient is
# near zero, so plans that differ only in rounding drift apart by 1e-2.
mopts="--train --loss cross_entropy:logits,labels --optimizer momentum --lr 0.01"
"$pcc" "$g/model.onnx" --cluster cpu:4 $mopts -o "$tmp/m4.bin" >/dev/null
"$pcc" "$g/model.onnx" --cluster cpu:2 --stages 2 --micro-batches 2 $mopts -o "$tmp/m2.bin" >/dev/null
check "checkpoint: one written on 4 ranks resumes on 2 pipeline stages of another plan (resharded)" sh -c "
  $mpi -np 4 '$run' '$tmp/m4.bin' --data '$data' --steps 6 --save-onnx '$tmp/mfull.onnx' >/dev/null &&
  $mpi -np 4 '$run' '$tmp/m4.bin' --data '$data' --steps 2 --checkpoint '$tmp/mck' --checkpoint-every 2 >/dev/null &&
  $mpi -np 2 '$run' '$tmp/m2.bin' --data '$data' --steps 6 --resume '$tmp/mck' --save-onnx '$tmp/res2.onnx' >'$tmp/res2.log' &&
  grep -q 'resumed from .* at step 2' '$tmp/res2.log' &&
  '$cmp' --onnx --rtol 1e-4 --atol 1e-6 '$tmp/res2.onnx' '$tmp/mfull.onnx' >&2"
check "checkpoint: the newest two are kept, older ones removed" sh -c "
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 6 --checkpoint '$tmp/ck2' --checkpoint-every 1 >/dev/null &&
  test \"\$(ls '$tmp/ck2' | tr '\n' ' ')\" = 'LATEST step-00000005 step-00000006 '"
check "checkpoint: a corrupt shard file is detected by checksum and the one before is used" sh -c "
  printf 'X' | dd of='$tmp/ck2/step-00000006/rank-00000.bin' bs=1 seek=20 conv=notrunc 2>/dev/null &&
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 6 --resume '$tmp/ck2' >'$tmp/o' 2>'$tmp/e' &&
  grep -q 'rank-00000.bin: shard of .* fails its checksum (corrupt); trying the checkpoint before it' '$tmp/e' &&
  grep -q 'resumed from .* at step 5' '$tmp/o'"
check "checkpoint: a corrupt manifest is refused with its name, and none left is an error" sh -c "
  echo '{' >'$tmp/ck2/step-00000005/manifest.json' &&
  ! $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 6 --resume '$tmp/ck2' >/dev/null 2>'$tmp/e' &&
  grep -q 'step-00000005/manifest.json: unreadable or corrupt' '$tmp/e' && grep -q 'no loadable checkpoint' '$tmp/e'"
check "checkpoint: a half-written one (a crash mid-save) is ignored, then replaced" sh -c "
  mkdir -p '$tmp/ck3/step-00000004.tmp' && echo junk >'$tmp/ck3/step-00000004.tmp/rank-00000.bin' &&
  cp -r '$tmp/ck/step-00000002' '$tmp/ck3/' &&
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 4 --resume '$tmp/ck3' --checkpoint '$tmp/ck3' >'$tmp/o' &&
  grep -q 'at step 2' '$tmp/o' && test -f '$tmp/ck3/step-00000004/manifest.json' && ! test -e '$tmp/ck3/step-00000004.tmp'"
check "checkpoint: a checkpoint of another model is refused" sh -c "
  '$pcc' '$train/mlp_loss/model.onnx' --cluster cpu:2 --train --optimizer adamw -o '$tmp/m.bin' >/dev/null &&
  ! $mpi -np 2 '$run' '$tmp/m.bin' --data '$train/mlp_loss/test_data_set_0' --resume '$tmp/ck' >/dev/null 2>'$tmp/e' &&
  grep -q 'written for another model' '$tmp/e'"

tap_done
