#!/bin/sh
# test_host_cache.sh PCC MODELS: a cpu:N cluster's host figures are
# measured once per machine and read back after (compiler/cost/cost_host.c), so
# the same command gives the same plan: the cache file, four compiles
# racing to create it, a malformed file, another host's, PCC_HOST_CACHE=0.
pcc=$1
gi=$2/gpt_op17/model.onnx
. "$(dirname "$0")/tap.sh"
export PCC_CACHE_DIR="$tmp/cache"
# stderr must hold no warning; under load a compile runs past the two
# seconds after which the progress lines show (scripts/test sets it too)
export PCC_PROGRESS=0
compile() { "$pcc" "$gi" --cluster cpu:4 -o "$1" >/dev/null 2>"$1.err"; }

# four compiles at once on an empty cache: every one uses the first figures published
for i in 1 2 3 4; do compile "$tmp/p$i.bin" & done
wait
check "4 compiles racing on an empty cache: one host.json, version 1, this host's cores" sh -c "
  test \$(ls '$tmp/cache' | wc -l) -eq 1 &&
  python3 -c 'import json, os, sys; h = json.load(open(sys.argv[1])); sys.exit(not (h[\"version\"] == 1 and h[\"cores\"] == os.cpu_count() and h[\"sgemm\"] > 0 and h[\"copy\"] > 0))' '$tmp/cache/host.json'"
check "... and the same plan, byte for byte, with no warning" sh -c "
  cmp '$tmp/p1.bin' '$tmp/p2.bin' && cmp '$tmp/p1.bin' '$tmp/p3.bin' && cmp '$tmp/p1.bin' '$tmp/p4.bin' &&
  ! test -s '$tmp/p1.bin.err'"
cp "$tmp/cache/host.json" "$tmp/first.json"
compile "$tmp/again.bin"
check "a later compile reads the cache: same plan, file unchanged" sh -c "
  cmp '$tmp/p1.bin' '$tmp/again.bin' && cmp '$tmp/first.json' '$tmp/cache/host.json'"

# figures that say the host is 1000x slower change the plan's predicted step: they are used
python3 -c 'import json, sys; h = json.load(open(sys.argv[1])); h["sgemm"] /= 1000; h["dgemm"] /= 1000; json.dump(h, open(sys.argv[1], "w"))' "$tmp/cache/host.json"
step() { sed -n 's/.*step \([0-9.e+-]*\) ms.*/\1/p' "$1" | head -n 1; }
"$pcc" "$gi" --cluster cpu:4 -o "$tmp/slow.bin" >"$tmp/slow.out" 2>&1
PCC_HOST_CACHE=0 "$pcc" "$gi" --cluster cpu:4 -o "$tmp/own.bin" >"$tmp/own.out" 2>&1
check "the cached figures are the ones used (1000x slower sgemm: a predicted step over 10x longer than measuring anew)" \
	python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not a > 10 * b)' \
	"$(step "$tmp/slow.out")" "$(step "$tmp/own.out")"
check "PCC_HOST_CACHE=0 measures and leaves the cache as it was" sh -c "
  python3 -c 'import json, sys; h = json.load(open(sys.argv[1])); sys.exit(not h[\"sgemm\"] < json.load(open(sys.argv[2]))[\"sgemm\"])' '$tmp/cache/host.json' '$tmp/first.json'"

# a malformed file: one warning line naming it, measured again, replaced
echo '{"version": 1, "cpu": ' >"$tmp/cache/host.json"
compile "$tmp/bad.bin"
check "a malformed host.json: one warning naming the file, then measured again and replaced" sh -c "
  test \$(wc -l <'$tmp/bad.bin.err') -eq 1 &&
  grep -q '^pcc: warning: ignoring the host figures in .*/cache/host.json (line [0-9]*: .*): measuring again\$' '$tmp/bad.bin.err' &&
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' '$tmp/cache/host.json'"
echo '{"version": 1, "cpu": "x", "blas": "y", "cores": 2, "l2": 0, "sgemm": -1, "dgemm": 1, "copy": 1, "cache_copy": 1}' >"$tmp/cache/host.json"
compile "$tmp/neg.bin"
check "a figure that is not positive: warned about and replaced" sh -c "
  grep -q 'is not a positive number' '$tmp/neg.bin.err' && grep -q '\"sgemm\": [1-9]' '$tmp/cache/host.json'"

# another host's figures (another CPU model): replaced without a word
python3 -c 'import json, sys; h = json.load(open(sys.argv[1])); h["cpu"] = "another CPU"; h["sgemm"] = 1.0; json.dump(h, open(sys.argv[1], "w"))' "$tmp/cache/host.json"
compile "$tmp/other.bin"
check "another host's host.json: measured again, replaced, no warning" sh -c "
  ! test -s '$tmp/other.bin.err' && ! grep -q 'another CPU' '$tmp/cache/host.json' && ! grep -q '\"sgemm\": 1.0,' '$tmp/cache/host.json'"

# four compiles racing to replace another host's file: one measures and
# publishes, the others wait for it and use its figures (each replacing
# the file with its own measurement left some using figures the file no
# longer held: issue 40); a later compile reading the file agrees
python3 -c 'import json, sys; h = json.load(open(sys.argv[1])); h["cpu"] = "another CPU"; json.dump(h, open(sys.argv[1], "w"))' "$tmp/cache/host.json"
for i in 1 2 3 4; do "$pcc" "$gi" --cluster cpu:4 --json -o "$tmp/r$i.bin" >"$tmp/r$i.json" 2>"$tmp/r$i.err" & done
wait
"$pcc" "$gi" --cluster cpu:4 --json -o "$tmp/r5.bin" >"$tmp/r5.json" 2>"$tmp/r5.err"
check "4 compiles racing to replace another host's host.json: one set of figures (the step time of a later compile's), one plan, no warning" sh -c "
  for i in 2 3 4 5; do cmp '$tmp/r1.bin' '$tmp/r'\$i.bin || exit 1; done &&
  ! test -s '$tmp/r1.err' && ! test -s '$tmp/r2.err' && ! test -s '$tmp/r3.err' && ! test -s '$tmp/r4.err' &&
  python3 -c 'import json, sys; t = {json.load(open(f))[\"step_time_s\"] for f in sys.argv[1:]}; sys.exit(len(t) != 1)' \
    '$tmp/r1.json' '$tmp/r2.json' '$tmp/r3.json' '$tmp/r4.json' '$tmp/r5.json' &&
  ! grep -q 'another CPU' '$tmp/cache/host.json'"

# no cache directory at all (HOME unset, nothing set): measured, no file, no error
check "no cache directory known: compiles, writes nothing" sh -c "
  env -u PCC_CACHE_DIR -u XDG_CACHE_HOME -u HOME '$pcc' '$gi' --cluster cpu:2 -o '$tmp/nohome.bin' >/dev/null 2>'$tmp/nohome.err' &&
  ! test -s '$tmp/nohome.err'"
tap_done
