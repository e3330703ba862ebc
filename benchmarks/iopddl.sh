#!/usr/bin/env bash
# iopddl.sh [BUILD_DIR [INSTANCE_DIR [OUT_MD]]]
#
# pcc's intra-op solver on the public IOPDDL contest instances (ASPLOS 2025;
# ../shared/iopddl/README.md): runs BUILD_DIR/solvers/pcc-iopddl on every
# asplos-2025-iopddl-*.json.gz at the contest timeout times
# PCC_IOPDDL_TIME_SCALE (default 1), re-checks each printed answer with
# `pcc-iopddl --eval` (the independent evaluator, not the solver's own
# summary), and prints a markdown table: cost, feasible, wall seconds and
# points = best-known / cost (0 when infeasible or missing), then the total.
# The table also goes to OUT_MD (default benchmarks/results/iopddl.md under
# the source tree) unless PCC_IOPDDL_NO_WRITE is set. PCC_IOPDDL_ONLY="B G"
# runs a subset. Exits non-zero when an answer is missing or infeasible.
#
# The contest machine had 8 cores and a 32 GB limit; pcc-iopddl uses one
# core, so scaled runs on small machines compare fairly.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-build}
DIR=${2:-$here/../../shared/iopddl}
OUT=${3:-$here/results/iopddl.md}
SCALE=${PCC_IOPDDL_TIME_SCALE:-1}
BIN=$BUILD/solvers/pcc-iopddl
[ -x "$BIN" ] || { echo "iopddl.sh: no $BIN (build first)" >&2; exit 2; }
[ -d "$DIR" ] || { echo "iopddl.sh: no instance directory $DIR" >&2; exit 2; }

# id, contest timeout (s), best-known cost: the README's table.
table="A 60 6548641531
B 60 532843
C 60 84102445260
D 60 313613524736
G 120 217039
K 180 2274276676
L 180 1970993742
M 180 49928460991
N 180 202739586553
P 240 662197407330
Q 240 526776842042
R 240 371899551572
S 240 1534613444
T 240 682895254913
U 300 2569342178
V 300 1632051"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
total=0
count=0
rows=""
while read -r id timeout best; do
	if [ -n "${PCC_IOPDDL_ONLY:-}" ] && ! printf ' %s ' "$PCC_IOPDDL_ONLY" | grep -q " $id "; then
		continue
	fi
	f=$DIR/asplos-2025-iopddl-$id.json.gz
	if [ ! -r "$f" ]; then
		echo "iopddl.sh: $f missing, skipped" >&2
		continue
	fi
	t=$(awk -v a="$timeout" -v s="$SCALE" 'BEGIN { printf "%.3f", a * s }')
	start=$(date +%s.%N)
	"$BIN" "$f" "$t" >"$tmp/$id.out" 2>"$tmp/$id.err"
	rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	ev=$("$BIN" --eval "$f" "$tmp/$id.out" 2>&1)
	erc=$?
	cost=$(printf '%s\n' "$ev" | awk '/^cost /{ print $2 }')
	feas=$(printf '%s\n' "$ev" | awk '/^cost /{ print $4 }')
	if [ "$rc" -ne 0 ] || [ "$erc" -ne 0 ] || [ -z "$cost" ]; then
		status=1
		pts=0
		[ -n "$feas" ] || feas="no answer (exit $rc)"
		[ -n "$cost" ] || cost="-"
	else
		pts=$(awk -v b="$best" -v c="$cost" 'BEGIN { printf "%.3f", (c > 0 ? b / c : 1) }')
	fi
	total=$(awk -v a="$total" -v p="$pts" 'BEGIN { printf "%.3f", a + p }')
	count=$((count + 1))
	rows="$rows| $id | $t | $cost | $best | $feas | $secs | $pts |
"
	echo "iopddl.sh: $id: cost $cost ($feas), ${secs}s, points $pts" >&2
done <<EOF
$table
EOF

report="# pcc-iopddl on the IOPDDL contest instances

Machine: $(nproc) cores, $(uname -m); timeouts are the contest's times $SCALE.
Answers re-checked by \`pcc-iopddl --eval\` (solvers/shard_eval.c).
Points = best-known / cost, summed over the instances run.

| id | timeout s | cost | best known | feasible | wall s | points |
|---|---|---|---|---|---|---|
$rows
Total points: $total of $count.
"
printf '%s\n' "$report"
if [ -z "${PCC_IOPDDL_NO_WRITE:-}" ]; then
	mkdir -p "$(dirname "$OUT")"
	printf '%s\n' "$report" >"$OUT"
fi
exit $status
