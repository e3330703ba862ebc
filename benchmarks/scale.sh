#!/bin/sh
# scale.sh [BUILD_DIR]: compiles pcc-modelgen's families at real scale, the
# whole way to plan.bin (import, search, lowering, fusion, codegen, write),
# and prints one markdown row per (model, cluster): written or not (and
# why, in a few words), refusals, wall seconds, the seconds of each phase
# (from pcc's own progress lines, shown from the start with
# PCC_PROGRESS_AFTER=0), peak RSS, the search's predicted peak and the
# lowered arena per device. Issue 35 item 4.
#
#   SCALE_RUNS   "MODEL CLUSTER BATCH;..." (default: Alpa's settings, the
#                two modern clusters, and Llama 2 and 3, below)
#   SCALE_TIMEOUT seconds per compile (default 600); a compile past it is
#                "timeout" with the phase it was in
#   SCALE_OUT    also write the table there (default: print only)
#
# Each run is one process on an otherwise quiet machine for timings worth
# quoting; the figures of a loaded machine are upper bounds.
set -u
BUILD=${1:-build}
pcc=$BUILD/compiler/pcc
gen=$BUILD/benchmarks/pcc-modelgen
[ -x "$pcc" ] && [ -x "$gen" ] || { echo "scale.sh: build first ($pcc, $gen)" >&2; exit 2; }
T=${SCALE_TIMEOUT:-600}
RUNS=${SCALE_RUNS:-"gpt3-1.3b 1x8:v100-16g 1024;gpt3-2.6b 2x8:v100-16g 1024;gpt3-6.7b 4x8:v100-16g 1024;\
gpt3-13b 8x8:v100-16g 1024;gpt3-39b 8x8:v100-16g 1024;gpt3-39b 8x8:a100-80g 1024;\
gpt3-175b 128x8:h100-80g 1536;moe-380m 1x8:v100-16g 1024;moe-2.4b 2x8:v100-16g 1024;\
moe-10b 4x8:v100-16g 1024;moe-70b 8x8:a100-80g 1024;wresnet-250m 1x8:v100-16g 1536;\
wresnet-1b 2x8:v100-16g 1536;wresnet-13b 8x8:v100-16g 1536;gpt3-39b 16x8:h100-80g 1024;\
llama2-7b 1x8:a100-80g 256;llama2-70b 8x8:a100-80g 1024;llama3-70b 16x8:h100-80g 512"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# seconds per phase from the progress lines: from each line to the next
# (the last to the end), added up per phase name, so that a search run
# again after a refusal counts as search
phases() { # FILE END
	awk -v end="$2" '
	  /^pcc: \[[0-9.]* s\] / {
	    t = $2; gsub(/[\[]/, "", t); p = $4; sub(/:.*/, "", p)
	    if (cur != "") sum[cur] += t - start
	    if (!(p in sum)) { sum[p] = 0; order[++n] = p }
	    cur = p; start = t
	  }
	  END {
	    if (cur != "") sum[cur] += end - start
	    for (i = 1; i <= n; i++)
	      printf "%s%s %.1f", (i > 1 ? ", " : ""), order[i], sum[order[i]]
	  }' "$1"
}

echo "| model | cluster | batch | result | refusals | wall s | phases (s) | RSS MiB | predicted peak | arena peak |"
echo "|---|---|---|---|---|---|---|---|---|---|"
echo "$RUNS" | tr ';' '\n' | while read -r model cluster batch; do
	[ -n "$model" ] || continue
	[ -f "$tmp/$model.onnx" ] || "$gen" "$model" -o "$tmp/$model.onnx" >/dev/null || continue
	PCC_PROGRESS_AFTER=0 /usr/bin/time -f "%e %M" -o "$tmp/time" timeout "$T" "$pcc" "$tmp/$model.onnx" \
		--cluster "$cluster" --batch "$batch" --train --optimizer adamw -o "$tmp/plan.bin" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	wall=$(awk 'END { print $1 }' "$tmp/time" 2>/dev/null)
	rss=$(awk 'END { printf "%.0f", $2 / 1024 }' "$tmp/time" 2>/dev/null)
	[ -n "$wall" ] || wall=$T
	refusals=$(grep -c 'searching again' "$tmp/err")
	pred=$(sed -n 's/.*, peak \([0-9.]* [KMGT]*i*B\) per device$/\1/p' "$tmp/out" | tail -1)
	arena=$(sed -n 's/^wrote .* peak \([0-9.]*\) MiB per device (arena)$/\1 MiB/p' "$tmp/out")
	if [ $rc -eq 0 ]; then
		result=written
	elif [ $rc -eq 124 ]; then
		result="timeout ($(grep '^pcc: \[' "$tmp/err" | tail -1 | sed 's/^pcc: \[[0-9.]* s\] \([a-z]*\).*/in \1/'))"
	else
		result="not written: $(grep -v '^pcc: \[' "$tmp/err" | tail -1 | cut -c1-120 | tr '|' '/')"
	fi
	echo "| $model | $cluster | $batch | $result | $refusals | $wall | $(phases "$tmp/err" "$wall") | $rss |" \
		"${pred:--} | ${arena:--} |"
done | tee "$tmp/rows"
if [ -n "${SCALE_OUT:-}" ]; then
	{
		echo "    SCALE_RUNS=\"$RUNS\" SCALE_TIMEOUT=$T benchmarks/scale.sh $BUILD"
		echo
		echo "| model | cluster | batch | result | refusals | wall s | phases (s) | RSS MiB | predicted peak | arena peak |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		cat "$tmp/rows"
	} >"$SCALE_OUT"
fi
