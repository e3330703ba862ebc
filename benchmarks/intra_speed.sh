#!/bin/sh
# Wall time of the intra-op pass (strategy enumeration, cost tables, solver,
# annotation) on GPT-3 175B layers, the target being well under a
# second for one layer on an 8-device node. Median of 5 runs per case, as
# pcc itself reports it ("intra-op pass: X s"); import time excluded.
#
# Usage: benchmarks/intra_speed.sh BUILD_DIR [OUT.md]
set -eu
build=${1:?usage: intra_speed.sh BUILD_DIR [OUT.md]}
out=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pcc="$build/compiler/pcc"
gen="$build/benchmarks/pcc-modelgen"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

{
echo "| model | mesh | mode | variables | strategies | pass s (median of 5) |"
echo "|---|---|---|---|---|---|"
for layers in 1 4 8; do
	"$gen" gpt3-175b --layers "$layers" --batch 1 --seq 2048 -o "$tmp/g.onnx" >/dev/null
	for mesh in 1x8 2x4; do
		for mode in "" --train; do
			for i in 1 2 3 4 5; do
				"$pcc" "$tmp/g.onnx" --cluster 1x8:h100 --mesh "$mesh" --stage-only $mode |
					sed -n 's/^intra-op pass: \([0-9.]*\) s.*/\1/p' >>"$tmp/t$i"
			done
			info=$("$pcc" "$tmp/g.onnx" --cluster 1x8:h100 --mesh "$mesh" --stage-only $mode |
				sed -n 's/^intra-op pass: .*), \([0-9]*\) variables, \([0-9]*\) strategies/\1 | \2/p')
			t=$(cat "$tmp"/t? | median)
			rm -f "$tmp"/t?
			kind=forward
			[ -n "$mode" ] && kind=training
			echo "| gpt3-175b, $layers layer(s), batch 1, seq 2048 | $mesh | $kind | $info | $t |"
		done
	done
done
} | tee "$tmp/table"
if [ -n "$out" ]; then
	{
		echo "# Intra-op pass speed"
		echo
		echo "Produced by \`benchmarks/intra_speed.sh build $out\` on $(nproc) cores ($(uname -m)), $(date -u +%Y-%m-%d)."
		echo
		cat "$tmp/table"
	} >"$out"
fi
