#!/bin/sh
# test_trace_run.sh PCC PCC_RUN: pcc-run --trace FILE.json, the measured
# timeline (TAP), on a 4-rank pipelined training plan (2 stages of 2 ranks,
# 4 micro-batches; overlap on and off) and a 4-rank data-parallel one,
# read back by python3's json: every rank has events; every send has one
# flow arrow to one receive (the same id, "s" before "f", the receive ends
# after the send starts, within the clock error the file states); each
# rank's kernel events are its plan's kernel instructions (pcc inspect
# --dump: per micro-batch ones times micro-batches, plus per-step ones)
# times the steps; the plan's collectives likewise; a step's kernels take
# no longer than the step; the step spans are --log-json's step_ms; the
# threads have the ids and names pcc report --trace gives the same
# streams; clocks estimated from round trips (PCC_TRACE_CLOCK=estimate on
# this one host, where the true offset is 0) are within the error the file
# states. An unwritable file: one error line naming it, exit 1, no step run.
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
"$pcc" report "$train/gpt/model.onnx" --cluster cpu:4 --train $loss --stages 2 --micro-batches 4 \
	--trace "$tmp/predicted.json" >/dev/null
for r in 0 1 2 3; do
	"$pcc" inspect "$tmp/pp.bin" --dump $r >"$tmp/pp.dump$r"
	"$pcc" inspect "$tmp/dp.bin" --dump $r >"$tmp/dp.dump$r"
done

cat >"$tmp/check.py" <<'PY'
import collections, json, re, sys
trace, plan, jsonl, steps, predicted = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
o = json.load(open(trace))
ev = o["traceEvents"]
other = o["otherData"]
assert other["generator"] == "pcc-run" and other["ranks"] == 4 and other["steps"] == steps, other
assert not other["truncated"] and len(other["clock_error_us"]) == 4
xs = [e for e in ev if e["ph"] == "X"]
pids = sorted({e["pid"] for e in xs})
assert pids == [10000, 10001, 10002, 10003], pids
for e in xs:
    assert e["ts"] >= 0 and e["dur"] >= 0 and e["tid"] > 0 and 1 <= e["args"]["step"] <= steps, e

# the plan's own counts, from pcc inspect --dump of each rank
micro = other["micro_batches"]
for r in range(4):
    part, want = None, collections.Counter()
    stage = int(re.search(r"stage (\d+)", open("%s.dump%d" % (plan, r)).readline()).group(1))
    for line in open("%s.dump%d" % (plan, r)):
        if line.startswith(("program:", "backward part")):
            part = "mb"
        elif line.startswith("once per step"):
            part = "step"
        m = re.match(r"\s+\d+\s+(kernel|all_reduce|all_gather|reduce_scatter|all_to_all|send|recv)\b", line)
        if m and part:
            want[m.group(1)] += (micro if part == "mb" else 1) * steps
    mine = [e for e in xs if e["pid"] == 10000 + r]
    got = collections.Counter()
    for e in mine:
        if e["cat"] == "kernel":
            got["kernel"] += 1
        elif e["cat"] == "collective":
            got[e["name"]] += 1
        elif e["cat"] == "transfer":
            got["send" if e["name"].startswith("send") else "recv"] += 1
    assert got == want, (r, dict(got), dict(want))
    pname = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == 10000 + r]
    assert pname == ["rank %d (stage %d)" % (r, stage)], pname
    # a step's kernels fit in the step; the steps are the logged ones
    span = {e["args"]["step"]: e for e in mine if e["cat"] == "step"}
    assert sorted(span) == list(range(1, steps + 1)), sorted(span)
    busy = collections.Counter()
    for e in mine:
        if e["cat"] == "kernel":
            busy[e["args"]["step"]] += e["dur"]
            s = span[e["args"]["step"]]
            assert s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3, (e, s)
    for s, b in busy.items():
        assert b <= span[s]["dur"] + 1e-3, (r, s, b, span[s]["dur"])
    if r == 0:
        logged = [json.loads(l)["step_ms"] for l in open(jsonl)]
        assert len(logged) == steps and all(abs(span[i + 1]["dur"] / 1e3 - ms) < 2e-3 for i, ms in enumerate(logged)), (
            [span[i + 1]["dur"] / 1e3 for i in range(steps)], logged)

# flows: one "s" at each send, one "f" at each receive, paired by id
err = other["clock_error_us"]
sends = {(e["pid"], e["tid"], e["ts"]): e for e in xs if e["cat"] == "transfer" and e["name"].startswith("send")}
recvs = [e for e in xs if e["cat"] == "transfer" and e["name"].startswith("receive")]
s_ev = {e["id"]: e for e in ev if e["ph"] == "s"}
f_ev = {e["id"]: e for e in ev if e["ph"] == "f"}
assert len(s_ev) == len([e for e in ev if e["ph"] == "s"]) == len(sends), "send flows not one each"
assert len(f_ev) == len([e for e in ev if e["ph"] == "f"]) == len(recvs), "receive flows not one each"
assert set(s_ev) == set(f_ev), "unpaired flows"
for i, s in s_ev.items():
    f = f_ev[i]
    snd = sends[(s["pid"], s["tid"], s["ts"])]
    rcv = [e for e in recvs if e["pid"] == f["pid"] and e["tid"] == f["tid"] and e["ts"] <= f["ts"] <= e["ts"] + e["dur"]]
    assert rcv, f
    rcv = rcv[0]
    assert f.get("bp") == "e" and snd["args"]["to"] == rcv["pid"] - 10000 and rcv["args"]["from"] == snd["pid"] - 10000
    assert snd["args"]["tag"] == rcv["args"]["tag"] and snd["args"]["bytes"] == rcv["args"]["bytes"]
    tol = err[snd["pid"] - 10000] + err[rcv["pid"] - 10000] + 2e-3
    assert s["ts"] <= f["ts"] + tol and rcv["ts"] + rcv["dur"] >= snd["ts"] - tol, (snd, rcv)

# the same streams as pcc report --trace: the same thread ids and names
def threads(doc):
    return {(e["args"]["name"], e["tid"]) for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
mine, pred = threads(o), threads(json.load(open(predicted)))
names = {n for n, t in mine}
shared = {n for n, t in pred} & names
assert "compute" in shared, (names, pred)
assert all((n, t) in mine for n, t in pred if n in shared), (mine, pred)
print(len(s_ev), "flows,", len(xs), "spans")
PY

$mpi -np 4 "$run" "$tmp/pp.bin" --data "$train/gpt/test_data_set_0" --steps 3 --trace "$tmp/pp.json" \
	--log-json "$tmp/pp.jsonl" >"$tmp/pp.log" 2>&1
check "pipelined, 4 ranks: spans, kernels and flows as the plan says, steps as logged" \
	python3 "$tmp/check.py" "$tmp/pp.json" "$tmp/pp" "$tmp/pp.jsonl" 3 "$tmp/predicted.json"
check "pipelined: activations and gradients both ways, receives and sends on their threads" python3 -c "
import json, sys
o = json.load(open('$tmp/pp.json'))
names = {e['args']['name'] for e in o['traceEvents'] if e['ph'] == 'M' and e['name'] == 'thread_name'}
assert {'compute', 'receive activation', 'receive gradient', 'send activation', 'send gradient'} <= names, names
parts = {e['name'].split()[0] for e in o['traceEvents'] if e.get('cat') == 'compute'}
assert parts == {'forward', 'backward', 'optimizer'}, parts
assert sum(e['ph'] == 's' for e in o['traceEvents']) > 0"
check "pcc-run says where the timeline went" grep -q "wrote the measured timeline to $tmp/pp.json" "$tmp/pp.log"
$mpi -np 4 "$run" "$tmp/pp.bin" --data "$train/gpt/test_data_set_0" --steps 2 --no-overlap --trace "$tmp/pn.json" \
	--log-json "$tmp/pn.jsonl" >"$tmp/pn.log" 2>&1
check "pipelined with --no-overlap: the same checks" \
	python3 "$tmp/check.py" "$tmp/pn.json" "$tmp/pp" "$tmp/pn.jsonl" 2 "$tmp/predicted.json"
$mpi -np 4 "$run" "$tmp/dp.bin" --data "$train/resnet_train/test_data_set_0" --steps 3 --trace "$tmp/dp.json" \
	--log-json "$tmp/dp.jsonl" >"$tmp/dp.log" 2>&1
check "data-parallel, 4 ranks: kernels and collectives as the plan says, no transfers" \
	python3 "$tmp/check.py" "$tmp/dp.json" "$tmp/dp" "$tmp/dp.jsonl" 3 "$tmp/predicted.json"
check "data-parallel: the per-step part's collectives on 'gradient sync'" python3 -c "
import json
o = json.load(open('$tmp/dp.json'))
tid = {e['args']['name']: e['tid'] for e in o['traceEvents'] if e['ph'] == 'M' and e['name'] == 'thread_name' and e['pid'] == 10000}
coll = [e for e in o['traceEvents'] if e.get('cat') == 'collective' and e['pid'] == 10000]
assert coll and all(e['tid'] in tid.values() for e in coll), tid
assert any(e['tid'] == tid['gradient sync'] for e in coll) and any(e['tid'] == tid['collectives'] for e in coll)
assert not [e for e in o['traceEvents'] if e.get('cat') == 'transfer']"
PCC_TRACE_CLOCK=estimate $mpi -np 4 "$run" "$tmp/pp.bin" --data "$train/gpt/test_data_set_0" \
	--steps 2 --trace "$tmp/pe.json" --log-json "$tmp/pe.jsonl" >"$tmp/pe.log" 2>&1
check "clocks estimated from round trips (one host: the truth is 0): each offset within its stated error" python3 -c "
import json
o = json.load(open('$tmp/pe.json'))['otherData']
off, err = o['clock_offset_us'], o['clock_error_us']
assert o['clock'].startswith('offsets') and off[0] == err[0] == 0 and all(e > 0 for e in err[1:]), o
assert all(abs(x) <= e + 1e-3 for x, e in zip(off, err)), (off, err)"
check "with estimated clocks: the same checks" \
	python3 "$tmp/check.py" "$tmp/pe.json" "$tmp/pp" "$tmp/pe.jsonl" 2 "$tmp/predicted.json"
check "losses with --trace are the losses without it" sh -c "
  $mpi -np 4 '$run' '$tmp/pp.bin' --data '$train/gpt/test_data_set_0' --steps 3 >'$tmp/plain.log' 2>&1 &&
  grep '^step' '$tmp/plain.log' | cut -d' ' -f1-6 >'$tmp/a' && grep '^step' '$tmp/pp.log' | cut -d' ' -f1-6 >'$tmp/b' &&
  [ \$(wc -l <'$tmp/a') = 3 ] && cmp -s '$tmp/a' '$tmp/b'"
check "--trace into a missing folder: one error line naming it, exit 1, no step run" sh -c "
  $mpi -np 4 '$run' '$tmp/pp.bin' --data '$train/gpt/test_data_set_0' --steps 2 --trace '$tmp/no/such.json' \
    >'$tmp/e.out' 2>'$tmp/e.err'; [ \$? -eq 1 ] &&
  [ \$(grep -c 'pcc-run' '$tmp/e.err') -eq 1 ] && grep -q -- '--trace $tmp/no/such.json: cannot write' '$tmp/e.err' &&
  ! grep -q '^step' '$tmp/e.out'"
tap_done
