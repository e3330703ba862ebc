#!/bin/sh
# test_report_cli.sh PCC MODELGEN MODELS_DIR: `pcc report` without --plan
# (the automatic plan), --compare, --compare-cluster, --price-per-gpu-hour
# and --trace, end to end (TAP). Numbers are checked against the planner's
# own summary line and against each other; the trace against the Chrome
# trace-event format's rules.
pcc=$1
modelgen=$2
models=$3
. "$(dirname "$0")/tap.sh"

"$modelgen" gpt3-125m -o "$tmp/g125.onnx" >/dev/null
"$modelgen" gpt3-1.3b -o "$tmp/g13.onnx" >/dev/null
"$modelgen" gpt3-6.7b -o "$tmp/g67.onnx" >/dev/null
m=$models/gpt_op17/model.onnx

# The report's step time, MFU and peak are the planner's (pcc MODEL --cluster C prints them on one line).
check "auto: step time, MFU and peak memory are those of pcc MODEL --cluster C" sh -c "
  '$pcc' '$tmp/g13.onnx' --cluster 1x8:v100 --train --batch 64 --stages 4 >'$tmp/plan' &&
  '$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --train --batch 64 --stages 4 --json >'$tmp/r.json' &&
  python3 - '$tmp/plan' '$tmp/r.json' <<'EOF'
import json, re, sys
line = open(sys.argv[1]).read()
step = float(re.search(r'step ([0-9.]+) ms', line).group(1)) / 1e3
mfu = float(re.search(r'MFU ([0-9.]+)%', line).group(1)) / 100
o = json.load(open(sys.argv[2]))
assert abs(o['step_time_s'] - step) < 1e-6, (o['step_time_s'], step)
assert abs(o['mfu'] - mfu) < 1e-3, (o['mfu'], mfu)
assert '4 stages' in line and len(o['stages']) == 4 and o['mode'] == 'auto' and o['train'] is True
EOF"
check "auto --json: the step-time parts add up, memory by kind adds up per stage, nothing exceeds the limit" sh -c "
  python3 - '$tmp/r.json' <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
t = o['time_s']
assert abs(sum(t.values()) - o['step_time_s']) < 1e-9 * o['step_time_s'], t
for k in ('compute', 'bubble', 'transfers', 'optimizer', 'comm_axis0', 'comm_axis1', 'sync_axis0', 'sync_axis1'):
    assert k in t and t[k] >= 0, k
assert t['bubble'] > 0 and t['transfers'] > 0
for s in o['stages']:
    assert abs(sum(s['memory_bytes'].values()) - s['total_bytes']) < 1e-6 * s['total_bytes']
    assert s['total_bytes'] <= o['memory_limit_bytes'] < o['memory_capacity_bytes']
assert o['peak_memory_bytes'] == max(s['total_bytes'] for s in o['stages']) and o['fits'] is True
assert o['breakdown_residual'] < 1e-9
assert abs(o['tokens_per_s'] - o['samples_per_s'] * 2048) < 1e-6 * o['tokens_per_s']
assert abs(o['tflops_per_device'] / (o['hw_flops_per_step'] / o['step_time_s'] / o['devices'] / 1e12) - 1) < 1e-12
EOF"
check "auto text: the stack, throughput, MFU, each stage's mesh and the verdict" sh -c "
  '$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --train --batch 64 --stages 4 >'$tmp/r.txt' &&
  grep -q '^plan      auto: 4 stages, interleaved' '$tmp/r.txt' && grep -q '^  pipeline bubble ' '$tmp/r.txt' &&
  grep -q '^per device .* TFLOP/s achieved, MFU ' '$tmp/r.txt' && test \$(grep -c '^    [0-3]  .* on 1x' '$tmp/r.txt') -eq 4 &&
  grep -q '^verdict   fits' '$tmp/r.txt'"
check "auto --explain: the plans weighed, the plan first, and every stage's costliest ops with runner-ups; the same in JSON" sh -c "
  '$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --train --batch 64 --stages 4 --explain >'$tmp/e.txt' &&
  grep -A2 '^plans weighed: [0-9]*; the fastest that fit' '$tmp/e.txt' | grep -q '^plan  .* +0.0%' &&
  test \$(grep -c '^stage [0-3] (layers* [0-9-]*, mesh .*): the [1-8] costliest of [0-9]* ops' '$tmp/e.txt') -eq 4 &&
  grep -q '^      runner-up <.*>: +' '$tmp/e.txt' && ! grep -q ' overlap  ' '$tmp/e.txt' &&
  grep -q '^plan  .*  \(after backward\|overlapped\)' '$tmp/e.txt' &&
  python3 - '$tmp/r.json' <<'EOF'
import json, sys
o = json.load(open(sys.argv[1]))
a = o['alternatives']
assert a[0]['chosen'] and abs(a[0]['step_time_s'] - o['step_time_s']) < 1e-12 * o['step_time_s'], a[0]
assert all(x['step_time_s'] <= y['step_time_s'] for x, y in zip(a, a[1:])) and o['plans_weighed'] >= len(a)
# each plan once: its gradient reduction solved after the backward pass or
# overlapped with it, the other way's time beside it (never slower than the row)
keys = [(x['micro_batch'], x['micro_batches'], x['schedule'], x['meshes']) for x in a]
assert len(set(keys)) == len(keys) and not any('overlap' in x['meshes'] for x in a), keys
assert all(x['gradient_sync'] in ('after', 'overlapped') for x in a), a
assert any(x['other_way_step_time_s'] is not None for x in a), a
assert all(x['other_way_step_time_s'] is None or x['other_way_step_time_s'] >= x['step_time_s'] * (1 - 1e-12) for x in a), a
for s in o['stages']:
    assert 1 <= len(s['ops']) <= 8, s['ops']
    for op in s['ops']:
        assert op['time_s'] > 0 and op['count'] >= 1 and op['sharding'].startswith('<'), op
        assert op['runner_up'] is None or op['runner_up_extra_s'] >= 0, op
EOF"
# "plans weighed" counts each plan once: a training plan timed with its
# gradient sync after the backward pass and overlapped is one plan (one
# row), as is one stage under 1F1B and GPipe. On one stage of 1x4 with
# batch 16 the plans are the five micro-batch sizes (16, 8, 4, 2, 1),
# every one listed; on two stages each size under 1F1B, GPipe and
# interleaved, less interleaved with one micro-batch: 14.
check "auto --explain: plans weighed counts each plan once (not its two gradient syncs, not one stage's GPipe)" sh -c "
  '$pcc' report '$tmp/g125.onnx' --cluster 1x4:v100 --train --batch 16 --stages 1 --json >'$tmp/w1.json' &&
  '$pcc' report '$tmp/g125.onnx' --cluster 1x4:v100 --train --batch 16 --stages 1 --explain >'$tmp/w1.txt' &&
  '$pcc' report '$tmp/g125.onnx' --cluster 1x4:v100 --train --batch 16 --stages 2 --json >'$tmp/w2.json' &&
  python3 - '$tmp/w1.json' '$tmp/w1.txt' '$tmp/w2.json' <<'EOF'
import json, re, sys
one, two = json.load(open(sys.argv[1])), json.load(open(sys.argv[3]))
a = one['alternatives']
assert sorted(x['micro_batch'] for x in a) == [1, 2, 4, 8, 16], a
assert all(x['other_way_step_time_s'] is not None for x in a), a
assert one['plans_weighed'] == len(a) == 5, (one['plans_weighed'], len(a))
n = int(re.search(r'^plans weighed: ([0-9]+);', open(sys.argv[2]).read(), re.M).group(1))
assert n == 5, n
assert two['plans_weighed'] == 14 and len(two['alternatives']) == 10, (two['plans_weighed'], len(two['alternatives']))
EOF"
# Data parallelism all-reduces every batch norm's mean and variance over the
# replicas per micro-batch (what one device computes; what the automatic plan
# costs); a GPT (layer norm, a loss averaged over the batch) has none. A manual
# plan is the planner held to it (report_auto.c), so these are its collectives
# on the data-parallel mesh axis inside the micro-batches (comm_axis0); the
# report no longer counts batch statistics apart, and a GPT's dp axis carries
# only the loss's scalar mean (microseconds).
"$modelgen" wresnet-1b -o "$tmp/wr.onnx" >/dev/null
check "manual dp plans: batch norms' statistics all-reduced over dp per micro-batch; none without dp, a scalar's in a GPT" sh -c "
  '$pcc' report '$tmp/wr.onnx' --cluster 1x8:v100 --plan dp=8,mb=4 --batch 1536 >'$tmp/wd.txt' &&
  '$pcc' report '$tmp/wr.onnx' --cluster 1x8:v100 --plan dp=8,mb=4 --batch 1536 --json >'$tmp/wd.json' &&
  '$pcc' report '$tmp/wr.onnx' --cluster 1x8:v100 --plan tp=8,mb=4 --batch 1536 --json >'$tmp/wt.json' &&
  '$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --plan dp=4,tp=2 --batch 64 --json >'$tmp/gd.json' &&
  grep -q '^  collectives, data-parallel (dp=8) ' '$tmp/wd.txt' &&
  python3 - '$tmp/wd.json' '$tmp/wt.json' '$tmp/gd.json' <<'EOF'
import json, sys
d, t, g = (json.load(open(a)) for a in sys.argv[1:])
assert d['mode'] == 'manual' and d['time_s']['comm_axis0'] > 0, d['time_s']
assert abs(sum(d['time_s'].values()) - d['step_time_s']) < 1e-9 * d['step_time_s']
assert t['time_s']['comm_axis0'] == 0 and t['time_s']['comm_axis1'] > 0, t['time_s']
assert g['time_s']['comm_axis0'] < 1e-4 * g['step_time_s'], g['time_s']
EOF"
# The fidelity line quotes the measurements kept in benchmarks/results/.
res=$(cd "$(dirname "$0")/../benchmarks/results" && pwd)
check "fidelity: every report states the cost model's measured error, the figures of benchmarks/results" sh -c "
  '$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --train --batch 64 --stages 4 >'$tmp/fa.txt' &&
  '$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --plan dp=4,tp=2 --batch 64 --json >'$tmp/fm.json' &&
  python3 - '$tmp/fa.txt' '$tmp/fm.json' '$res/report_validation.md' '$res/gpu.md' <<'EOF'
import json, re, sys
line = [l for l in open(sys.argv[1]) if l.startswith('fidelity  ')]
assert len(line) == 1, line
fid = line[0][10:].strip()
assert json.load(open(sys.argv[2]))['fidelity'] == fid
r = open(sys.argv[3]).read()
lo, hi, mean = re.search(r'Megatron \(PTD\) rows min ([0-9.]+), max ([0-9.]+), mean \|ratio - 1\| ([0-9.]+)%', r).groups()
z = [float(x) for x in re.findall(r'ZeRO-3, 174.6B, [0-9]+ GPUs \|(?:[^|]*\|){6} ([0-9.]+) ', r)]
assert len(z) == 3, z
want = ['%s to %s times' % (lo, hi), '(mean error %s%%)' % mean, '%.1f to %.1f times for ZeRO-3' % (min(z), max(z))]
f32, bf16 = re.search(r'^Summary: .*: f32 ([0-9.]+ to [0-9.]+), bf16 ([0-9.]+ to [0-9.]+) ', open(sys.argv[4]).read(),
                      re.M).groups()
want += ['%s times the predicted in f32' % f32, '%s times in bf16' % bf16, 'gpu.md']
assert all(w in fid for w in want), (fid, want)
EOF"
check "fidelity on a CPU mesh: the figures of benchmarks/results/cpu_model.md's summary" sh -c "
  '$pcc' report '$m' --cluster cpu:2 --json >'$tmp/fc.json' &&
  python3 - '$tmp/fc.json' '$res/cpu_model.md' <<'EOF'
import json, re, sys
fid = json.load(open(sys.argv[1]))['fidelity']
n, med, mx = re.search(r'^Summary: ([0-9]+) cases, median \|error\| ([0-9]+)%, max \|error\| ([0-9]+)%$',
                       open(sys.argv[2]).read(), re.M).groups()
want = ['%s cases' % n, 'median |error| %s%%' % med, 'max |error| %s%%' % mx, 'cpu_model.md']
assert all(w in fid for w in want), (fid, want)
EOF"
check "auto: the forward plan without --train, as pcc MODEL --cluster C" sh -c "
  '$pcc' '$m' --cluster 1x8:a100 >'$tmp/plan' && '$pcc' report '$m' --cluster 1x8:a100 --json >'$tmp/f.json' &&
  python3 - '$tmp/plan' '$tmp/f.json' <<'EOF'
import json, re, sys
step = float(re.search(r'step ([0-9.]+) ms', open(sys.argv[1]).read()).group(1)) / 1e3
o = json.load(open(sys.argv[2]))
assert o['train'] is False and abs(o['step_time_s'] - step) < 1e-6, (o['step_time_s'], step)
assert o['time_s']['optimizer'] == 0
EOF"
check "price: cost per step and per million tokens follow from step time, devices and batch" sh -c "
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --train --batch 64 --price-per-gpu-hour 2.5 --json |
  python3 -c '
import json, sys
o = json.load(sys.stdin)
c = 2.5 * o[\"devices\"] * o[\"step_time_s\"] / 3600
assert abs(o[\"cost_per_step\"] - c) < 1e-12
assert abs(o[\"cost_per_million_tokens\"] - c / (64 * 2048) * 1e6) < 1e-9
' && '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --train --batch 64 --price-per-gpu-hour 2.5 |
  grep -q '^price     2.5 per GPU-hour: .* per million tokens'"
check "price with a manual plan: text and JSON" sh -c "
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --plan dp=4,tp=4 --price-per-gpu-hour 3 | grep -q '^price     3 per GPU-hour' &&
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --plan dp=4,tp=4 --price-per-gpu-hour 3 --json |
  python3 -c 'import json,sys; o=json.load(sys.stdin); assert abs(o[\"cost_per_step\"] - 3*16*o[\"step_time_s\"]/3600) < 1e-12'"
check "compare auto with a manual plan: both columns, deltas = B - A, the manual plan gets the automatic plan's batch" sh -c "
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --batch 64 --compare auto dp=4,tp=2,pp=2 --json >'$tmp/c.json' &&
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --batch 64 --plan dp=4,tp=2,pp=2 --json >'$tmp/m.json' &&
  python3 - '$tmp/c.json' '$tmp/m.json' <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
a, b, d = c['a'], c['b'], c['delta']
assert a['mode'] == 'auto' and b['mode'] == 'manual' and a['batch'] == b['batch'] == 64
assert abs(b['step_time_s'] - m['step_time_s']) < 1e-12
assert abs(d['step_time_s'] - (b['step_time_s'] - a['step_time_s'])) < 1e-12
assert abs(d['mfu'] - (b['mfu'] - a['mfu'])) < 1e-12
for k, v in d['time_s'].items():
    assert abs(v - (b['time_s'].get(k, 0) - a['time_s'].get(k, 0))) < 1e-12, k
EOF
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --batch 64 --compare auto dp=4,tp=2,pp=2 >'$tmp/c.txt' &&
  grep -q '^ *A: auto *B: dp=4,tp=2,pp=2 *B vs A' '$tmp/c.txt' && grep -q '^step time .*%' '$tmp/c.txt' && grep -q '^MFU .* points' '$tmp/c.txt' &&
  grep -q '^  collectives inside the micro-batches  ' '$tmp/c.txt' && ! grep -q 'tensor-parallel comm\|mesh axis' '$tmp/c.txt'"
check "compare two clusters: H100 is faster than A100 for the same model" sh -c "
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --train --batch 64 --compare-cluster 2x8:h100 --json |
  python3 -c 'import json,sys; o=json.load(sys.stdin); assert o[\"a\"][\"cluster\"]==\"2x8:a100\" and o[\"b\"][\"cluster\"]==\"2x8:h100\" and o[\"b\"][\"step_time_s\"] < o[\"a\"][\"step_time_s\"] and o[\"delta\"][\"step_time_ratio\"] < 1'"

# The trace: valid Chrome trace-event JSON, one process per stage, events that never overlap on a thread.
check "trace: well-formed X events with ts/dur/pid/tid, no overlap on a thread, ends at the step time; flows; memory" sh -c "
  '$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --train --batch 64 --stages 4 --trace '$tmp/t.json' --json >'$tmp/tr.json' &&
  python3 - '$tmp/t.json' '$tmp/tr.json' <<'EOF'
import json, sys, collections
# memory per stage as a counter track: from the state alone, it peaks at the
# memory model's peak of the stage (activations of its inflight micro-batches)
rep = json.load(open(sys.argv[2])); o = json.load(open(sys.argv[1]))
mem = collections.defaultdict(list)
for e in o['traceEvents']:
    if e['ph'] == 'C':
        assert e['name'] == 'memory (GiB)' and e['ts'] >= 0, e
        mem[e['pid']].append((e['ts'], e['args']['GiB']))
assert sorted(mem) == list(range(len(rep['stages']))), sorted(mem)
for s, st in enumerate(rep['stages']):
    v = [g for t, g in sorted(mem[s])]
    base = sum(b for k, b in st['memory_bytes'].items() if k != 'activations') / 2**30
    assert abs(v[0] - base) < 1e-6 and min(v) >= base - 1e-6, (s, v[:3], base)
    assert abs(max(v) - st['total_bytes'] / 2**30) < 1e-6 * max(v), (s, max(v), st['total_bytes'] / 2**30)
o = json.load(open(sys.argv[1]))
ev = o['traceEvents']
xs = [e for e in ev if e['ph'] == 'X']
assert xs and all(e['ph'] in ('X', 'M', 's', 'f', 'C') for e in ev)
# a flow arrow per receive: it ends inside the receive (bound to it), and
# starts inside the sending stage's forward or backward (or its collectives)
# of the same micro-batch, which ends when the transfer starts
def inside(e, t):
    return e['ts'] <= t <= e['ts'] + e['dur']
recv = [e for e in xs if e['name'].startswith('receive ')]
starts = {e['id']: e for e in ev if e['ph'] == 's'}; ends = {e['id']: e for e in ev if e['ph'] == 'f'}
assert recv and len(starts) == len(ends) == len(recv) and set(starts) == set(ends), (len(recv), len(starts))
for i, f in ends.items():
    s = starts[i]
    assert f['bp'] == 'e' and s['name'] == f['name'] and s['pid'] != f['pid'], (s, f)
    r = [e for e in recv if e['pid'] == f['pid'] and e['tid'] == f['tid'] and inside(e, f['ts'])]
    assert len(r) == 1 and r[0]['name'].startswith('receive ' + s['name']), (f, r)
    mb = r[0]['args']['micro_batch']
    src = [e for e in xs if e['pid'] == s['pid'] and e['tid'] == s['tid'] and inside(e, s['ts'])]
    assert len(src) == 1 and src[0].get('args', {}).get('micro_batch') == mb, (s, src)
    assert src[0]['name'].split()[0] in ('forward', 'backward', 'collectives'), src
    assert abs(src[0]['ts'] + src[0]['dur'] - r[0]['ts']) < 2e-3, (src, r)
lanes = collections.defaultdict(list)
for e in xs:
    for k in ('name', 'ts', 'dur', 'pid', 'tid'):
        assert k in e, (k, e)
    assert e['dur'] > 0 and e['ts'] >= 0
    lanes[(e['pid'], e['tid'])].append((e['ts'], e['ts'] + e['dur']))
for k, v in lanes.items():
    v.sort()
    for x, y in zip(v, v[1:]):
        assert y[0] >= x[1] - 1e-6, (k, x, y)
plan = o['otherData']['plans'][0]
end = max(e['ts'] + e['dur'] for e in xs) / 1e6
assert abs(end - plan['simulated_step_time_s']) < 1e-8 and abs(plan['simulated_step_time_s'] - plan['step_time_s']) < 1e-9
assert sorted({e['pid'] for e in xs}) == [0, 1, 2, 3]
names = {e['args']['name'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}
assert {'compute', 'collectives', 'receive activation', 'receive gradient'} <= names, names
for pid in range(4):
    fw = [e for e in xs if e['pid'] == pid and e['name'].startswith('forward ')]
    bw = [e for e in xs if e['pid'] == pid and e['name'].startswith('backward ')]
    chunks = 2 if plan['schedule'] == 'interleaved' else 1  # the report's 2 chunks per device
    assert len(fw) == len(bw) == plan['micro_batches'] * chunks, (pid, len(fw), plan['micro_batches'])
    assert any(e['name'] == 'idle' for e in xs if e['pid'] == pid)
EOF"
check "trace of a manual plan and of a comparison (pids of B from 1000)" sh -c "
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --plan dp=4,tp=2,pp=2 --batch 64 --trace '$tmp/m.json' >/dev/null &&
  '$pcc' report '$tmp/g125.onnx' --cluster 2x8:a100 --batch 64 --compare auto dp=4,tp=2,pp=2 --trace '$tmp/c.json' >/dev/null &&
  python3 -c '
import json, sys
m = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
assert {e[\"pid\"] for e in m[\"traceEvents\"] if e[\"ph\"] == \"X\"} == {0, 1}
assert {e[\"pid\"] for e in c[\"traceEvents\"] if e[\"ph\"] == \"X\"} == {0, 1000, 1001}
assert any(e[\"name\"] == \"collectives 0\" for e in m[\"traceEvents\"])
' '$tmp/m.json' '$tmp/c.json'"

# Bad input: one line, non-zero exit.
one_line() { test "$(wc -l <"$tmp/e")" -eq 1; }
check "unwritable --trace: exit 1, one line naming it, before any work" sh -c "
  '$pcc' report '$m' --cluster 1x8:a100 --trace /nonexistent/dir/t.json 2>'$tmp/e' >/dev/null; test \$? -eq 1 &&
  test \$(wc -l <'$tmp/e') -eq 1 && grep -q -- '--trace /nonexistent/dir/t.json: folder /nonexistent/dir does not exist' '$tmp/e'"
check "--trace to a folder: exit 1, one line" sh -c "
  '$pcc' report '$m' --cluster 1x8:a100 --trace '$tmp' 2>'$tmp/e' >/dev/null; test \$? -eq 1 && test \$(wc -l <'$tmp/e') -eq 1 && grep -q 'is a folder' '$tmp/e'"
check "--compare with one plan: exit 2, one line" sh -c "
  '$pcc' report '$m' --cluster 1x8:a100 --compare auto 2>'$tmp/e' >/dev/null; test \$? -eq 2 && test \$(wc -l <'$tmp/e') -eq 1 && grep -q 'two plans' '$tmp/e'"
check "--compare with a bad plan: exit 1 naming the key" sh -c "
  '$pcc' report '$m' --cluster 1x8:a100 --compare auto dp=2,tq=2 2>'$tmp/e' >/dev/null; test \$? -eq 1 && test \$(wc -l <'$tmp/e') -eq 1 && grep -q '\"tq\"' '$tmp/e'"
check "unknown option: exit 2, one line" sh -c "
  '$pcc' report '$m' --cluster 1x8:a100 --frobnicate 2>'$tmp/e' >/dev/null; test \$? -eq 2 && test \$(wc -l <'$tmp/e') -eq 1"
check "bad --price-per-gpu-hour: exit 2" sh -c "
  '$pcc' report '$m' --cluster 1x8:a100 --price-per-gpu-hour -1 2>'$tmp/e' >/dev/null; test \$? -eq 2 && grep -q 'positive number' '$tmp/e'"
check "a step option without --train (automatic plan): exit 1" sh -c "
  '$pcc' report '$m' --cluster 1x8:a100 --lr 0.1 2>'$tmp/e' >/dev/null; test \$? -eq 1 && grep -q -- '--lr is an option of the train step' '$tmp/e'"
check "a model that does not fit: exit 1, one line" sh -c "
  '$pcc' report '$tmp/g67.onnx' --cluster 1x1:v100 --train --batch 8 2>'$tmp/e' >/dev/null; test \$? -eq 1 && test \$(wc -l <'$tmp/e') -eq 1 && grep -q 'does not fit' '$tmp/e'"
check "report --help lists the new options" sh -c "'$pcc' report --help | grep -q -- '--compare A B'"
tap_done
