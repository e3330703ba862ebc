#!/bin/sh
# test_eval_run.sh PCC PCC_RUN: pcc-run --eval-data DIR --eval-every K
# (TAP) on 4 ranks: a pipelined gpt (2 stages of 2 ranks, 4 micro-batches:
# its evaluation runs the forward parts alone) and a data-parallel
# resnet_train (no forward/backward split, BatchNorm running statistics
# written as it runs). Evaluated on the training data itself, the loss
# after step k is the loss step k + 1 reports (the same weights, before
# its update); the losses and the trained weights are bit for bit those of
# a run without --eval-data; the eval lines and --log-json's eval_loss come
# after every K steps and the last; over two sets the evaluation is the
# mean of each one's; usage errors exit 2, a missing folder exits 1 before
# any step. pcc train --eval-data: the same loss and bit-for-bit checks.
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$1")
run=$(abspath "$2")
train=$(abspath "$(dirname "$0")/train")
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
unset PCC_RUN_FAULT
mpi="timeout 120 mpirun --oversubscribe"
loss="--loss cross_entropy:logits,labels"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; }

"$pcc" "$train/gpt/model.onnx" --cluster cpu:4 --train $loss --stages 2 --micro-batches 4 -o "$tmp/pp.bin" -q >/dev/null
"$pcc" "$train/resnet_train/model.onnx" --cluster cpu:4 --train $loss --mesh 4x1 --micro-batches 2 \
	-o "$tmp/dp.bin" -q >/dev/null

# evals NAME PLAN DATA: 5 steps with and without --eval-data DATA --eval-every 2
evals() {
	$mpi -np 4 "$run" "$2" --data "$3" --steps 5 --save-onnx "$tmp/$1_plain.onnx" >"$tmp/$1_plain.log" 2>&1 &&
		$mpi -np 4 "$run" "$2" --data "$3" --steps 5 --eval-data "$3" --eval-every 2 --log-json "$tmp/$1.jsonl" \
			--save-onnx "$tmp/$1_eval.onnx" >"$tmp/$1_eval.log" 2>&1
}
cat >"$tmp/check.py" <<'PY'
import json, re, sys
log, jsonl = sys.argv[1], sys.argv[2]
loss, ev = {}, {}
for l in open(log):
    m = re.match(r"step (\d+)/5  loss (\S+)", l) or re.match(r"eval (\d+)/5  eval_loss (\S+)", l)
    if m:
        (loss if l.startswith("step") else ev)[int(m.group(1))] = float(m.group(2))
assert sorted(loss) == [1, 2, 3, 4, 5] and sorted(ev) == [2, 4, 5], (loss, ev)
for k in (2, 4):
    assert ev[k] == loss[k + 1], (k, ev[k], loss[k + 1])
rows = [json.loads(l) for l in open(jsonl)]
assert [r["step"] for r in rows if "eval_loss" in r] == [2, 4, 5], rows
for r in rows:
    if "eval_loss" in r and r["step"] < 5:
        nxt = rows[r["step"]]["loss"]
        assert abs(r["eval_loss"] - nxt) <= 1e-7 * abs(nxt), (r, nxt)
PY
for c in "pp:pipelined gpt:$train/gpt/test_data_set_0" "dp:data-parallel resnet_train:$train/resnet_train/test_data_set_0"; do
	name=${c%%:*} rest=${c#*:}
	what=${rest%%:*} data=${rest#*:}
	evals "$name" "$tmp/$name.bin" "$data"
	check "$what, 4 ranks: the loss evaluated after steps 2 and 4 is the loss steps 3 and 5 report" \
		python3 "$tmp/check.py" "$tmp/${name}_eval.log" "$tmp/$name.jsonl"
	check "$what: losses and trained weights bit for bit those of a run without --eval-data" sh -c "
	  grep '^step' '$tmp/${name}_plain.log' | cut -d' ' -f1-6 >'$tmp/a' &&
	  grep '^step' '$tmp/${name}_eval.log' | cut -d' ' -f1-6 >'$tmp/b' &&
	  [ \$(wc -l <'$tmp/a') = 5 ] && cmp '$tmp/a' '$tmp/b' && cmp '$tmp/${name}_plain.onnx' '$tmp/${name}_eval.onnx'"
done

# two evaluation sets: the gpt data, and the same ids with other labels
# (shifted by one class): the evaluation over both is the mean of each
# alone's (after step 1, every rank the same weights)
py=/usr/bin/python3
if $py -c "import numpy, onnx" 2>/dev/null; then
	$py - "$train/gpt/test_data_set_0" "$tmp" <<'PY'
import os, sys
import numpy as np
from onnx import numpy_helper, TensorProto
src, out = sys.argv[1], sys.argv[2]
def load(k):
    t = TensorProto()
    t.ParseFromString(open("%s/input_%d.pb" % (src, k), "rb").read())
    return numpy_helper.to_array(t)
ids, labels = load(0), load(1)
for d in ("set_a", "set_b", "set_ab"):
    os.mkdir(out + "/" + d)
np.savez(out + "/set_a/0.npz", ids=ids, labels=labels)
np.savez(out + "/set_b/0.npz", ids=ids, labels=(labels + 1) % 64)
np.savez(out + "/set_ab/0.npz", ids=ids, labels=labels)
np.savez(out + "/set_ab/1.npz", ids=ids, labels=(labels + 1) % 64)
PY
	for e in a b ab; do
		$mpi -np 4 "$run" "$tmp/pp.bin" --data "$train/gpt/test_data_set_0" --steps 1 --eval-data "$tmp/set_$e" \
			--log-json "$tmp/e$e.jsonl" >"$tmp/e$e.log" 2>&1
	done
	check "evaluated over two sets: the mean of each one's evaluation" $py -c "
import json
a, b, ab = (json.loads(open('$tmp/e%s.jsonl' % e).readline())['eval_loss'] for e in ('a', 'b', 'ab'))
assert a != b and abs(ab - (a + b) / 2) <= 1e-6 * abs(ab), (a, b, ab)"
	check "the eval line says how many micro-batches it took" grep -q '^eval 1/1  eval_loss .* over 2 micro-batches' "$tmp/eab.log"
fi

# pcc train --eval-data: the same, on the interpreter (gpt; resnet_train's
# BatchNorm statistics, saved with the weights, left alone)
for c in "gpt:$train/gpt" "resnet_train:$train/resnet_train"; do
	name=${c%%:*} dir=${c#*:}
	"$pcc" train "$dir/model.onnx" -i "$dir/test_data_set_0" $loss --steps 5 --log-every 1 \
		--save-onnx "$tmp/t_$name.onnx" >"$tmp/t_$name.log" 2>&1
	"$pcc" train "$dir/model.onnx" -i "$dir/test_data_set_0" $loss --steps 5 --log-every 1 --eval-data \
		"$dir/test_data_set_0" --eval-every 2 --log-json "$tmp/te_$name.jsonl" --save-onnx "$tmp/te_$name.onnx" \
		>"$tmp/te_$name.log" 2>&1
	sed 's|^step \([0-9]*\)  loss|step \1/5  loss|; s|^eval \([0-9]*\)  eval_loss|eval \1/5  eval_loss|' \
		"$tmp/te_$name.log" >"$tmp/te_$name.txt"
	check "pcc train $name: the loss evaluated after steps 2 and 4 is the loss steps 3 and 5 report" \
		python3 "$tmp/check.py" "$tmp/te_$name.txt" "$tmp/te_$name.jsonl"
	check "pcc train $name: losses and saved weights bit for bit those of a run without --eval-data" sh -c "
	  grep '^step' '$tmp/t_$name.log' >'$tmp/a' && grep '^step' '$tmp/te_$name.log' >'$tmp/b' &&
	  [ \$(wc -l <'$tmp/a') = 5 ] && cmp '$tmp/a' '$tmp/b' && cmp '$tmp/t_$name.onnx' '$tmp/te_$name.onnx'"
done
check "pcc train --eval-every without --eval-data: one usage error, exit 2" sh -c "
  '$pcc' train '$train/gpt/model.onnx' -i '$train/gpt/test_data_set_0' $loss --eval-every 2 >/dev/null 2>'$tmp/u0';
  [ \$? -eq 2 ] && grep -q -- '--eval-every needs --eval-data DIR' '$tmp/u0'"

check "--eval-every without --eval-data: one usage error, exit 2" sh -c "
  $mpi -np 2 '$run' '$tmp/pp.bin' --data '$train/gpt/test_data_set_0' --eval-every 2 >/dev/null 2>'$tmp/u1'; [ \$? -eq 2 ] &&
  grep -q -- '--eval-every needs --eval-data DIR' '$tmp/u1'"
check "--eval-data with -i: one usage error, exit 2" sh -c "
  $mpi -np 2 '$run' '$tmp/pp.bin' -i '$train/gpt/test_data_set_0' --eval-data '$train/gpt/test_data_set_0' \
    >/dev/null 2>'$tmp/u2'; [ \$? -eq 2 ] && grep -q -- '--eval-data is for training runs' '$tmp/u2'"
check "--eval-data of a missing folder: one error line naming it, exit 1, no step run" sh -c "
  $mpi -np 4 '$run' '$tmp/pp.bin' --data '$train/gpt/test_data_set_0' --eval-data '$tmp/none' >'$tmp/m.out' 2>'$tmp/m.err';
  [ \$? -eq 1 ] && [ \$(grep -c pcc-run '$tmp/m.err') = 1 ] && grep -q -- '--eval-data $tmp/none' '$tmp/m.err' &&
  ! grep -q '^step' '$tmp/m.out'"
tap_done
