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
#
# Sweep mode, PCC_IOPDDL_SECONDS="1 5 15 60": every instance at each of
# these timeouts (seconds, not scaled), one run at a time, and a table of
# points per timeout with the wall and CPU seconds each run took (so that
# a loaded machine's runs say how much CPU they got) and the latest exit
# relative to the timeout. PCC_IOPDDL_HOG=N keeps N busy loops running
# during the sweep (N = nproc loads every core; they are this script's
# children and end with it). The report goes to OUT_MD, by default
# benchmarks/results/iopddl-sweep-idle.md, or -loaded.md with a hog.
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
hogs=""
cleanup() {
	for h in $hogs; do kill "$h" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
status=0

# run_one ID TIMEOUT BEST: sets cost, feas, secs (wall), cpu (user +
# system) and pts (0 when the answer is missing or infeasible, and then
# status=1).
run_one() {
	local f=$DIR/asplos-2025-iopddl-$1.json.gz start rc ev erc
	start=$(date +%s.%N)
	cpu="-"
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f '%U %S' -o "$tmp/$1.time" "$BIN" "$f" "$2" >"$tmp/$1.out" 2>"$tmp/$1.err"
		rc=$?
		cpu=$(awk '/^[0-9.]+ [0-9.]+$/ { printf "%.1f", $1 + $2 }' "$tmp/$1.time")
	else
		"$BIN" "$f" "$2" >"$tmp/$1.out" 2>"$tmp/$1.err"
		rc=$?
	fi
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	ev=$("$BIN" --eval "$f" "$tmp/$1.out" 2>&1)
	erc=$?
	cost=$(printf '%s\n' "$ev" | awk '/^cost /{ print $2 }')
	feas=$(printf '%s\n' "$ev" | awk '/^cost /{ print $4 }')
	if [ "$rc" -ne 0 ] || [ "$erc" -ne 0 ] || [ -z "$cost" ]; then
		status=1
		pts=0
		[ -n "$feas" ] || feas="no answer (exit $rc)"
		[ -n "$cost" ] || cost="-"
	else
		pts=$(awk -v b="$3" -v c="$cost" 'BEGIN { printf "%.3f", (c > 0 ? b / c : 1) }')
	fi
}

# the instances to run: id, contest timeout, best known
runs=$(printf '%s\n' "$table" | while read -r id timeout best; do
	if [ -n "${PCC_IOPDDL_ONLY:-}" ] && ! printf ' %s ' "$PCC_IOPDDL_ONLY" | grep -q " $id "; then
		continue
	fi
	if [ ! -r "$DIR/asplos-2025-iopddl-$id.json.gz" ]; then
		echo "iopddl.sh: $DIR/asplos-2025-iopddl-$id.json.gz missing, skipped" >&2
		continue
	fi
	echo "$id $timeout $best"
done)

if [ -n "${PCC_IOPDDL_SECONDS:-}" ]; then
	load=idle
	for _ in $(seq 1 "${PCC_IOPDDL_HOG:-0}"); do
		sh -c 'while :; do :; done' &
		hogs="$hogs $!"
		load=loaded
	done
	[ "$#" -ge 3 ] || OUT=$here/results/iopddl-sweep-$load.md
	load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
	rows=""
	sums=""
	for s in $PCC_IOPDDL_SECONDS; do
		total=0 count=0 cpus=0 late=-1e9
		while read -r id timeout best; do
			run_one "$id" "$s" "$best"
			total=$(awk -v a="$total" -v p="$pts" 'BEGIN { printf "%.3f", a + p }')
			cpus=$(awk -v a="$cpus" -v c="$cpu" 'BEGIN { printf "%.1f", a + c }')
			late=$(awk -v a="$late" -v w="$secs" -v t="$s" 'BEGIN { d = w - t; printf "%.1f", (d > a ? d : a) }')
			count=$((count + 1))
			rows="$rows| $id | $s | $cost | $feas | $secs | $cpu | $pts |
"
			echo "iopddl.sh: $id at ${s}s: cost $cost ($feas), ${secs}s wall, ${cpu}s CPU, points $pts" >&2
		done <<<"$runs"
		sums="$sums| $s | $total | $count | $cpus | $late |
"
	done
	only=""
	[ -z "${PCC_IOPDDL_ONLY:-}" ] || only=" PCC_IOPDDL_ONLY=\"$PCC_IOPDDL_ONLY\""
	report="# pcc-iopddl against the time given ($load)

Machine: $(nproc) cores, $(uname -m), ${PCC_IOPDDL_HOG:-0} busy loops beside the solver;
load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null).
Command: \`PCC_IOPDDL_SECONDS=\"$PCC_IOPDDL_SECONDS\" PCC_IOPDDL_HOG=${PCC_IOPDDL_HOG:-0}$only benchmarks/iopddl.sh\`
Answers re-checked by \`pcc-iopddl --eval\`; points = best-known / cost.
CPU s: the user + system seconds the runs got; latest exit: the largest
wall time past the timeout (negative: every run ended that much early).

| timeout s | points | instances | CPU s, all runs | latest exit s |
|---|---|---|---|---|
$sums
| id | timeout s | cost | feasible | wall s | CPU s | points |
|---|---|---|---|---|---|---|
$rows"
	printf '%s\n' "$report"
	if [ -z "${PCC_IOPDDL_NO_WRITE:-}" ]; then
		mkdir -p "$(dirname "$OUT")"
		printf '%s\n' "$report" >"$OUT"
	fi
	exit $status
fi

total=0
count=0
rows=""
while read -r id timeout best; do
	t=$(awk -v a="$timeout" -v s="$SCALE" 'BEGIN { printf "%.3f", a * s }')
	run_one "$id" "$t" "$best"
	total=$(awk -v a="$total" -v p="$pts" 'BEGIN { printf "%.3f", a + p }')
	count=$((count + 1))
	rows="$rows| $id | $t | $cost | $best | $feas | $secs | $pts |
"
	echo "iopddl.sh: $id: cost $cost ($feas), ${secs}s, points $pts" >&2
done <<<"$runs"

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
