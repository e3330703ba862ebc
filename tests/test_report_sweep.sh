#!/bin/sh
# test_report_sweep.sh PCC MODELGEN: `pcc report --sweep` (gpus=LO..HI,
# tp,pp, sensitivity) with --json and --csv (TAP). Checks: each point
# equals the report of that point alone; faster hardware is never slower;
# JSON and CSV agree; bad sweeps are one line and a non-zero exit.
pcc=$1
modelgen=$2
. "$(dirname "$0")/tap.sh"

"$modelgen" gpt3-125m -o "$tmp/g.onnx" >/dev/null
g=$tmp/g.onnx

# Faster hardware is never slower: bandwidth and FLOP/s x2 never raise the
# step time, x0.5 never lowers it; latency the other way round.
monotonic='
import json, sys
o = json.load(open(sys.argv[1]))
t = {p["name"]: p["step_time_s"] for p in o["points"]}
assert len(t) == 7 and o["base"] == 0 and o["points"][0]["name"] == "base", t
b = t["base"]
assert t["bandwidth x2"] <= b <= t["bandwidth x0.5"], t
assert t["flops x2"] <= b <= t["flops x0.5"], t
assert t["latency x0.5"] <= b <= t["latency x2"], t
assert t["flops x2"] < b < t["flops x0.5"], t
'
check "sensitivity of a manual plan: monotonic in bandwidth, latency and FLOP/s" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan dp=4,tp=4 --batch 64 --sweep sensitivity --json >'$tmp/s.json' &&
  python3 -c '$monotonic' '$tmp/s.json' &&
  python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); t={p[\"name\"]: p[\"step_time_s\"] for p in o[\"points\"]}; assert t[\"bandwidth x2\"] < t[\"base\"] < t[\"bandwidth x0.5\"]' '$tmp/s.json'"
check "sensitivity of the automatic plan (searched again per point): monotonic" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --train --batch 64 --sweep sensitivity --json >'$tmp/a.json' && python3 -c '$monotonic' '$tmp/a.json'"
check "sensitivity: the base point is the plain report; on one device the links change nothing" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan dp=4,tp=4 --batch 64 --json >'$tmp/one.json' &&
  '$pcc' report '$g' --cluster 1x1:a100 --plan dp=1 --batch 8 --sweep sensitivity --json >'$tmp/s1.json' &&
  python3 - '$tmp/s.json' '$tmp/one.json' '$tmp/s1.json' <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); one = json.load(open(sys.argv[2])); s1 = json.load(open(sys.argv[3]))
assert abs(s['points'][0]['step_time_s'] - one['step_time_s']) < 1e-12 * one['step_time_s']
t = {p['name']: p['step_time_s'] for p in s1['points']}
for k in ('bandwidth x0.5', 'bandwidth x2', 'latency x0.5', 'latency x2'):
    assert t[k] == t['base'], (k, t)
EOF"
check "sensitivity text: a row per knob with the change against the base" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan dp=4,tp=4 --batch 64 --sweep sensitivity >'$tmp/s.txt' &&
  grep -q '^base  .* +0.0%' '$tmp/s.txt' && grep -q '^flops x2  .* -[0-9.]*%' '$tmp/s.txt' && test \$(grep -c ' x[02]' '$tmp/s.txt') -eq 6"

check "gpus=2..64 with a manual plan: dp scales, each point is the report of that cluster alone, JSON and CSV agree" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan tp=2,pp=2 --batch 256 --sweep gpus=2..64 --json --csv '$tmp/g.csv' >'$tmp/g.json' &&
  '$pcc' report '$g' --cluster 4x8:a100 --plan dp=8,tp=2,pp=2 --batch 256 --json >'$tmp/p32.json' &&
  python3 - '$tmp/g.json' '$tmp/g.csv' '$tmp/p32.json' <<'EOF'
import csv, json, sys
o = json.load(open(sys.argv[1])); rows = list(csv.DictReader(open(sys.argv[2]))); p32 = json.load(open(sys.argv[3]))
pts = o['points']
assert o['sweep'] == 'gpus' and [p['gpus'] for p in pts] == [2, 4, 8, 16, 32, 64]
assert not pts[0]['ok'] and 'tp=2 x pp=2' in pts[0]['error'] and rows[0]['ok'] == '0' and rows[0]['error']
assert o['base'] == 3 and pts[3]['gpus'] == 16
for p, r in zip(pts[1:], rows[1:]):
    assert p['plan']['dp'] * 4 == p['gpus'] == p['report']['devices'], p['plan']
    assert abs(float(r['step_time_s']) / p['step_time_s'] - 1) < 1e-12 and int(r['dp']) == p['plan']['dp']
    assert abs(p['samples_per_s'] - 256 / p['step_time_s']) < 1e-9 * p['samples_per_s']
    eff = (p['samples_per_s'] / p['gpus']) / (pts[1]['samples_per_s'] / pts[1]['gpus'])
    assert abs(p['scaling_efficiency'] - eff) < 1e-12
assert abs(pts[4]['step_time_s'] - p32['step_time_s']) < 1e-12 * p32['step_time_s']
best = max((p for p in pts if p['ok'] and p['fits']), key=lambda p: p['samples_per_s'])
assert pts[o['best']] is not None and pts[o['best']]['name'] == best['name']
EOF"
check "gpus=8..32 with the automatic plan: each point is the plan pcc would make on that cluster" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --train --batch 128 --sweep gpus=8..32 --json >'$tmp/ga.json' &&
  '$pcc' report '$g' --cluster 4x8:a100 --train --batch 128 --json >'$tmp/a32.json' &&
  python3 - '$tmp/ga.json' '$tmp/a32.json' <<'EOF'
import json, sys
o = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2]))
assert [p['gpus'] for p in o['points']] == [8, 16, 32] and all(p['ok'] for p in o['points'])
assert abs(o['points'][2]['step_time_s'] - a['step_time_s']) < 1e-12 * a['step_time_s']
assert o['points'][2]['report']['cluster'] == '4x8:a100-80g'
EOF"
check "gpus text table: a row per size, the scaling column" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan tp=2 --batch 256 --sweep gpus=2..16 >'$tmp/g.txt' &&
  test \$(grep -c '^ *\(2\|4\|8\|16\)  dp=' '$tmp/g.txt') -eq 4 && grep -q '^ *2  dp=1 tp=2 pp=1 .* 100.0%' '$tmp/g.txt'"

check "tp,pp: every power-of-two split of 16 devices, each the report of that plan, the best the fastest that fits" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --batch 64 --plan mb=8 --sweep tp,pp --json --csv '$tmp/t.csv' >'$tmp/t.json' &&
  '$pcc' report '$g' --cluster 2x8:a100 --batch 64 --plan dp=4,tp=2,pp=2,mb=8 --json >'$tmp/p.json' &&
  python3 - '$tmp/t.json' '$tmp/t.csv' '$tmp/p.json' <<'EOF'
import csv, json, sys
o = json.load(open(sys.argv[1])); rows = list(csv.DictReader(open(sys.argv[2]))); one = json.load(open(sys.argv[3]))
pts = o['points']
splits = sorted((p['plan']['tp'], p['plan']['pp']) for p in pts)
want = sorted((t, p) for t in (1, 2, 4, 8) for p in (1, 2, 4, 8, 16) if t * p <= 16)
assert splits == want, splits
for p in pts:
    assert p['plan']['dp'] * p['plan']['tp'] * p['plan']['pp'] == 16
x = [p for p in pts if p['plan'] == {'dp': 4, 'tp': 2, 'pp': 2}][0]
assert abs(x['step_time_s'] - one['step_time_s']) < 1e-12 * one['step_time_s']
ok = [p for p in pts if p['ok'] and p['fits']]
assert pts[o['best']]['samples_per_s'] == max(p['samples_per_s'] for p in ok)
assert len(rows) == len(pts) and all(r['sweep'] == 'tp,pp' for r in rows)
EOF"
check "tp,pp without --plan lists the automatic plan first" sh -c "
  '$pcc' report '$g' --cluster 1x8:a100 --train --batch 64 --sweep tp,pp | grep -q '^auto '"

one_line() { test "$(wc -l <"$tmp/e")" -eq 1; }
for bad in "gpus=8..6" "gpus=6..8" "gpus=8" "gpus=8..x" "gpus=0..8" "tp" "bandwidth" "gpus=8..4194304"; do
	check "--sweep $bad: exit 2, one line naming it" sh -c "
	  '$pcc' report '$g' --cluster 2x8:a100 --plan dp=2 --sweep '$bad' 2>'$tmp/e' >/dev/null; test \$? -eq 2 &&
	  test \$(wc -l <'$tmp/e') -eq 1 && grep -q -- '--sweep $bad' '$tmp/e'"
done
check "--csv to a folder that does not exist: exit 1, one line, before sweeping" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan dp=2 --sweep tp,pp --csv /nonexistent/x.csv 2>'$tmp/e' >/dev/null; test \$? -eq 1 &&
  test \$(wc -l <'$tmp/e') -eq 1 && grep -q -- '--csv /nonexistent/x.csv' '$tmp/e'"
check "--csv without --sweep: exit 1" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan dp=2 --csv '$tmp/x.csv' 2>'$tmp/e' >/dev/null; test \$? -eq 1 && grep -q 'give --sweep' '$tmp/e'"
check "--sweep with --compare: exit 1" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --compare auto dp=2 --sweep tp,pp 2>'$tmp/e' >/dev/null; test \$? -eq 1 && test \$(wc -l <'$tmp/e') -eq 1"
check "--sweep gpus on a cluster of mixed nodes: exit 1, one line" sh -c "
  '$pcc' report '$g' --cluster '$(dirname "$0")/clusters/mixed.json' --plan dp=2 --sweep gpus=2..8 2>'$tmp/e' >/dev/null; test \$? -eq 1 &&
  test \$(wc -l <'$tmp/e') -eq 1 && grep -q 'different kinds' '$tmp/e'"
check "a sweep where no point can be evaluated: exit 1, one line with a point's reason" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --plan tp=4,pp=4 --sweep gpus=2..8 2>'$tmp/e' >/dev/null; test \$? -eq 1 &&
  test \$(wc -l <'$tmp/e') -eq 1 && grep -q 'no point could be evaluated' '$tmp/e'"
tap_done
