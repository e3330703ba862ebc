#!/bin/sh
# test_log_json.sh PCC PCC_RUN: --log-json FILE of pcc-run and pcc train
# (TAP): one JSON object a step and line, read back by python3's json; the
# step numbers, losses and gradient norms are the text log's, the learning
# rate the schedule's (warmup 2, cosine to step 6: 0.005, 0.01, 0.01,
# 0.00853553, 0.005 for lr 0.01), pcc-run's losses equal pcc train's on the
# same data (rtol 1e-5), every rank has its kernel and communication time,
# token models their tokens; an unwritable file is one error line naming it.
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$1")
run=$(abspath "$2")
train=$(abspath "$(dirname "$0")/train")
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 60 mpirun --oversubscribe"
g=$train/gpt
sched="--optimizer adamw --lr 0.01 --schedule cosine --warmup 2 --total-steps 6"

"$pcc" "$g/model.onnx" --cluster cpu:2 --train --loss cross_entropy:logits,labels $sched -o "$tmp/g.bin" -q >/dev/null
$mpi -np 2 "$run" "$tmp/g.bin" --data "$g/test_data_set_0" --steps 5 --log-json "$tmp/run.jsonl" >"$tmp/run.log" 2>&1
"$pcc" train "$g/model.onnx" -i "$g/test_data_set_0" --loss cross_entropy:logits,labels $sched --steps 5 \
	--log-every 1 --log-json "$tmp/train.jsonl" >"$tmp/train.log" 2>&1

# jcheck FILE TEXTLOG NRANKS: the lines against the text log and the schedule
cat >"$tmp/check.py" <<'PY'
import json, math, re, sys
path, text, nranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(l) for l in open(path)]
want_lr = [0.005, 0.01, 0.01, 0.5 * (1 + math.cos(math.pi / 4)) * 0.01, 0.005]
logged = {}
for l in open(text):
    m = re.match(r"step (\d+)\S*\s+loss (\S+)\s+grad_norm (\S+)", l)
    if m:
        logged[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
assert [r["step"] for r in rows] == [1, 2, 3, 4, 5], [r["step"] for r in rows]
for r, lr in zip(rows, want_lr):
    assert abs(r["lr"] - lr) <= 1e-9 * lr, (r["step"], r["lr"], lr)
    loss, norm = logged[r["step"]]
    assert abs(r["loss"] - loss) <= 1e-6 * abs(loss) + 1e-6, (r["loss"], loss)
    assert abs(r["grad_norm"] - norm) <= 1e-3 * abs(norm), (r["grad_norm"], norm)
    assert r["step_ms"] > 0 and r["samples"] > 0 and r["samples_per_s"] > 0 and r["skipped"] is False
    assert r["tokens"] == r["samples"] * 8 and r["tokens_per_s"] > 0, r
    if nranks:
        assert [q["rank"] for q in r["ranks"]] == list(range(nranks)), r["ranks"]
        assert all(q["kernel_ms"] > 0 and q["comm_ms"] >= 0 for q in r["ranks"]), r["ranks"]
    else:
        assert "ranks" not in r
PY
check "pcc-run --log-json: 5 lines of JSON, the text log's losses, the schedule's rates, 2 ranks' times" \
	python3 "$tmp/check.py" "$tmp/run.jsonl" "$tmp/run.log" 2
check "pcc train --log-json: the same, without ranks" python3 "$tmp/check.py" "$tmp/train.jsonl" "$tmp/train.log" 0
check "pcc-run's JSON losses equal pcc train's (rtol 1e-5)" python3 -c "
import json, sys
a = [json.loads(l)['loss'] for l in open('$tmp/run.jsonl')]
b = [json.loads(l)['loss'] for l in open('$tmp/train.jsonl')]
assert len(a) == 5 and all(abs(x - y) <= 1e-5 * abs(y) for x, y in zip(a, b)), (a, b)"
check "the text log shows a sub-millisecond step time in seconds, not 0.000" sh -c \
	"grep '^step 2/5' '$tmp/run.log' | grep -Eq 'grad_norm [0-9.e+-]+  [0-9.]*[1-9][0-9.e-]* s '"
check "pcc-run --log-json into a missing folder: one error line naming it, exit 1" sh -c "
  ! $mpi -np 2 '$run' '$tmp/g.bin' --data '$g/test_data_set_0' --steps 2 --log-json '$tmp/no/such.jsonl' \
    >'$tmp/e.out' 2>'$tmp/e.err' &&
  [ \$(grep -c 'pcc-run' '$tmp/e.err') -eq 1 ] && grep -q -- '--log-json $tmp/no/such.jsonl: cannot write' '$tmp/e.err'"
check "pcc train --log-json into a missing folder: the error names it" sh -c "
  ! '$pcc' train '$g/model.onnx' -i '$g/test_data_set_0' --loss cross_entropy:logits,labels --steps 1 \
    --log-json '$tmp/no/such.jsonl' 2>'$tmp/t.err' >/dev/null && grep -q -- '--log-json $tmp/no/such.jsonl: cannot write' '$tmp/t.err'"
# --shuffle SEED: 4 data sets (copies of the gpt fixture's), the sets each
# step read from the JSON lines
for k in 0 1 2 3; do
	mkdir -p "$tmp/sets/test_data_set_$k" && cp "$g/test_data_set_0/"* "$tmp/sets/test_data_set_$k/"
done
sets() { python3 -c "import json, sys; print(' '.join(str(json.loads(l)['sets'][0]) for l in open(sys.argv[1])))" "$1"; }
$mpi -np 2 "$run" "$tmp/g.bin" --data "$tmp/sets" --steps 12 --log-json "$tmp/s0.jsonl" >/dev/null 2>&1
$mpi -np 2 "$run" "$tmp/g.bin" --data "$tmp/sets" --steps 12 --shuffle 7 --log-json "$tmp/s7.jsonl" >/dev/null 2>&1
$mpi -np 2 "$run" "$tmp/g.bin" --data "$tmp/sets" --steps 12 --shuffle=7 --log-json "$tmp/s7b.jsonl" >/dev/null 2>&1
$mpi -np 2 "$run" "$tmp/g.bin" --data "$tmp/sets" --steps 6 --shuffle 7 --checkpoint "$tmp/ck" >/dev/null 2>&1
$mpi -np 2 "$run" "$tmp/g.bin" --data "$tmp/sets" --steps 12 --shuffle 7 --resume "$tmp/ck" \
	--log-json "$tmp/s7r.jsonl" >/dev/null 2>&1
o0=$(sets "$tmp/s0.jsonl") o7=$(sets "$tmp/s7.jsonl") o7b=$(sets "$tmp/s7b.jsonl") o7r=$(sets "$tmp/s7r.jsonl")
check "without --shuffle the sets are read in turn ($o0)" test "$o0" = "0 1 2 3 0 1 2 3 0 1 2 3"
check "--shuffle 7: each pass over the 4 sets a permutation of them, not all in turn ($o7)" python3 -c "
s = [int(x) for x in '$o7'.split()]
assert len(s) == 12 and all(sorted(s[i:i + 4]) == [0, 1, 2, 3] for i in (0, 4, 8)), s
assert s != [0, 1, 2, 3] * 3, s"
check "--shuffle=7 again: the same order" test -n "$o7" -a "$o7" = "$o7b"
check "--shuffle 7 resumed at step 6: steps 7-12 read the sets the uninterrupted run did ($o7r)" \
	test -n "$o7r" -a "$o7r" = "$(echo "$o7" | cut -d' ' -f7-)"
check "--shuffle without --data: one usage error, exit 2" sh -c "
  $mpi -np 2 '$run' '$tmp/g.bin' -i '$g/test_data_set_0' --shuffle 1 >/dev/null 2>'$tmp/se'; [ \$? -eq 2 ] &&
  grep -q -- '--shuffle reorders the data sets of --data DIR' '$tmp/se'"
tap_done
