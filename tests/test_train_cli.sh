#!/bin/sh
# test_train_cli.sh PCC TRAIN_DIR: `pcc train` end to end (TAP).
pcc=$1
train=$2
. "$(dirname "$0")/tap.sh"

tt=$train/tinytext
# The tiny character GPT: its loss starts at 3.23 (uniform is 3.26).
# PyTorch's AdamW reaches 1.04 on set 0 after 200 steps; we require the
# loss to fall by at least 1.6 nats, in the log and in the saved model.
check "tinytext: 200 AdamW steps lower the loss by > 1.6 nats" sh -c "
  '$pcc' train '$tt/model.onnx' -i '$tt' --optimizer adamw --lr 3e-3 --steps 200 --save-onnx '$tmp/tt.onnx' >'$tmp/log' &&
  first=\$(grep '^step 1 ' '$tmp/log' | awk '{print \$4}') && last=\$(grep '^step 200 ' '$tmp/log' | awk '{print \$4}') &&
  awk -v a=\"\$first\" -v b=\"\$last\" 'BEGIN { exit !(a > 3.2 && a - b > 1.6) }'"
check "tinytext: the saved model's loss on set 0 is below 1.6" sh -c "
  '$pcc' eval '$tmp/tt.onnx' -i '$tt/test_data_set_0' | awk '/^loss/ { split(\$0, f, \"= \"); exit !(f[2] + 0 < 1.6) }'"
check "tinytext: the saved model keeps the graph (same ops and inputs), produced by pcc now" sh -c "
  '$pcc' inspect '$tt/model.onnx' | grep -v '^model' | sed 1d >'$tmp/a' && '$pcc' inspect '$tmp/tt.onnx' >'$tmp/b0' &&
  head -1 '$tmp/b0' | grep -q '^opset 17, produced by pcc\$' && grep -v '^model' '$tmp/b0' | sed 1d >'$tmp/b' && cmp -s '$tmp/a' '$tmp/b'"
check "tinytext: bf16 mixed precision trains too (loss falls by > 1 nat in 100 steps)" sh -c "
  '$pcc' train '$tt/model.onnx' -i '$tt' --lr 3e-3 --steps 100 --precision bf16 --log-every 99 >'$tmp/log16' &&
  last=\$(grep '^step 100 ' '$tmp/log16' | awk '{print \$4}') && awk -v b=\"\$last\" 'BEGIN { exit !(b < 2.2) }'"
check "tinytext: f16 loss scaling skips the overflowing first step (scale 65536), then trains" sh -c "
  '$pcc' train '$tt/model.onnx' -i '$tt' --lr 3e-3 --steps 60 --precision f16 --log-every 1 >'$tmp/logf16' &&
  grep -q '^step 1 .*step skipped, loss scale halved' '$tmp/logf16' && ! grep -q '^step 60 .*skipped' '$tmp/logf16' &&
  last=\$(grep '^step 60 ' '$tmp/logf16' | awk '{print \$4}') && awk -v b=\"\$last\" 'BEGIN { exit !(b < 2.9) }'"
check "tinytext: warmup + cosine schedule is logged" sh -c "
  '$pcc' train '$tt/model.onnx' -i '$tt' --lr 1e-2 --steps 10 --schedule cosine --warmup 2 --log-every 1 | grep -q '^step 1 .*lr 0.005\$'"
check "--freeze: frozen parameters are left alone" sh -c "
  '$pcc' train '$tt/model.onnx' -i '$tt' --steps 1 --freeze 'wte.*' --freeze 'blocks.0.*' | grep -q 'left alone'"

m=$train/mlp
check "inspect --train: AdamW adds gradients and two state slots" sh -c "'$pcc' inspect '$m/model.onnx' --train --json | python3 -c 'import json,sys; o=json.load(sys.stdin); assert o[\"gradient_bytes\"]==3232 and o[\"optimizer_state_bytes\"]==6464 and o[\"train_total_bytes\"]==12928'"
check "inspect --train --optim momentum: one slot" sh -c "'$pcc' inspect '$m/model.onnx' --train --optim momentum | grep -q 'training (momentum): gradients 3.23 KB, optimizer state 3.23 KB'"
check "mse loss on a model output" sh -c "'$pcc' train '$m/model.onnx' -i '$m/test_data_set_0' --loss mse:y,target --optimizer sgd --lr 0.1 --steps 3 | grep -q '^step 3 '"
# refused STATUS DESC WANT ARGS...: one line holding WANT, exit STATUS,
# nothing written; bad input exits 1 (bad), a bad option 2 (misuse)
refused() {
	rf_status=$1 desc=$2 want=$3; shift 3
	check "$desc" sh -c "rm -f '$tmp/out.onnx'; '$pcc' train \"\$@\" --save-onnx '$tmp/out.onnx' >/dev/null 2>'$tmp/e'; rc=\$?
	  test \$rc -eq $rf_status && test \$(wc -l <'$tmp/e') -eq 1 && grep -q -- \"$want\" '$tmp/e' && test ! -e '$tmp/out.onnx'" x "$@"
}
bad() { refused 1 "$@"; }
misuse() { refused 2 "$@"; }
misuse "learning rate not finite" "--lr nan: expected a finite number" "$tt/model.onnx" -i "$tt" --lr nan
bad "negative learning rate" "learning rate -1 must be positive and finite" "$tt/model.onnx" -i "$tt" --lr -1
bad "no loss: the model has no scalar output" "has no scalar loss output" "$m/model.onnx" -i "$m/test_data_set_0"
bad "loss spec naming a missing value" 'no value named \"logits\"' "$m/model.onnx" -i "$m/test_data_set_0" --loss cross_entropy:logits,labels
bad "labels of the wrong dtype" 'input \"target\" expects i64\[4\] (integer class indices), got f32\[4,8\]' "$m/model.onnx" -i "$m/test_data_set_0" --loss cross_entropy:y,target
misuse "unknown optimizer" "unknown optimizer 'rmsprop'" "$m/model.onnx" -i "$m/test_data_set_0" --optimizer rmsprop
bad "unknown loss kind" "unknown loss 'hinge'" "$m/model.onnx" -i "$m/test_data_set_0" --loss hinge:y,target
bad "missing data directory" "no input_0.pb (or .npy), no test_data_set_0/ (backend-test layout) and no .npz files" "$m/model.onnx" -i "$tmp/nowhere" --loss mse:y,target
bad "everything frozen" "no parameter to train" "$m/model.onnx" -i "$m/test_data_set_0" --loss mse:y,target --freeze '*'
# --const: mlp_loss's target bound as a constant from the data set trains
# step for step as with the target read from it (the set's input_1.pb,
# named target, is skipped); an unknown name is refused.
ml=$train/mlp_loss
check "--const target=DIR: the same 5 steps as reading target each step" sh -c "
  '$pcc' train '$ml/model.onnx' -i '$ml' --steps 5 --log-every 1 >'$tmp/cread' &&
  '$pcc' train '$ml/model.onnx' -i '$ml' --const target='$ml/test_data_set_0' --steps 5 --log-every 1 >'$tmp/cbound' &&
  test \$(grep -c '^step [1-5] ' '$tmp/cbound') -eq 5 && cmp '$tmp/cread' '$tmp/cbound'"
bad "--const naming no input" 'the model has no input \"tgt\" to bind to a constant' "$ml/model.onnx" -i "$ml" --const tgt="$ml/test_data_set_0"
g=$train/gpt
mkdir -p "$tmp/badlabels"
cp "$g/test_data_set_0/input_0.pb" "$tmp/badlabels/input_0.pb"
cp "$g/test_data_set_0/input_0.pb" "$tmp/badlabels/input_1.pb" # token ids (< 64) as labels: fine
check "token ids as labels are accepted" sh -c "'$pcc' train '$g/model.onnx' -i '$tmp/badlabels' --loss cross_entropy:logits,labels --steps 1 >/dev/null"
# labels [2,8] i64 with a 70 (gpt has 64 classes): a raw TensorProto
{ printf '\010\002\010\010\020\007\102\006labels\112\200\001\106'; head -c 127 /dev/zero; } >"$tmp/badlabels/input_1.pb"
bad "a label outside the classes" "label 70 at element 0 is outside \[0, 64)" "$g/model.onnx" -i "$tmp/badlabels" --loss cross_entropy:logits,labels
# the model's own SoftmaxCrossEntropyLoss (gpt_loss: 64 classes, ignore_index
# -100, labels flattened before it) checks them as --loss does (issue 40)
gl=$train/gpt_loss
bad "the model's SoftmaxCrossEntropyLoss: a label of 70 (64 classes)" \
	"badlabels/input_1.pb: label 70 at element 0 is outside \[0, 64) (and not the ignored -100)" "$gl/model.onnx" -i "$tmp/badlabels"
mkdir -p "$tmp/neglabels"
cp "$gl/test_data_set_0/input_0.pb" "$gl/test_data_set_0/input_1.pb" "$tmp/neglabels/"
printf '\371\377\377\377\377\377\377\377' | dd of="$tmp/neglabels/input_1.pb" bs=1 seek=41 conv=notrunc 2>/dev/null
bad "the model's SoftmaxCrossEntropyLoss: a label of -7 at element 3" \
	"neglabels/input_1.pb: label -7 at element 3 is outside \[0, 64) (and not the ignored -100)" "$gl/model.onnx" -i "$tmp/neglabels"
tap_done
