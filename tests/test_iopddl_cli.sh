#!/bin/sh
# test_iopddl_cli.sh PCC_IOPDDL DIR [CONTEST_DIR]: the contest interface of
# pcc-iopddl, exit codes and the last stdout line (TAP). DIR holds
# example.json; CONTEST_DIR the contest instances (../shared/iopddl), for
# the deadline cases (skipped without it).
bin=$1
dir=$2
contest=${3:-}
. "$(dirname "$0")/tap.sh"

check "example: exit 0, last line is the optimum" sh -c "'$bin' '$dir/example.json' 1 >'$tmp/o' && test \"\$(tail -n 1 '$tmp/o')\" = '[0, 0, 2, 1, 0]'"
check "example: a summary on stderr with the cost" sh -c "'$bin' '$dir/example.json' 1 2>&1 >/dev/null | grep -q 'cost 445'"
check "example: stops within the timeout" sh -c "timeout 3 '$bin' '$dir/example.json' 1 >/dev/null 2>&1"
gzip -c "$dir/example.json" >"$tmp/example.json.gz"
check "gzip input: same answer" sh -c "'$bin' '$tmp/example.json.gz' 1 | tail -n 1 | grep -qx '\[0, 0, 2, 1, 0\]'"
sed 's/"usage_limit": 50/"usage_limit": 49/' "$dir/example.json" >"$tmp/tight.json"
check "infeasible: exit 3, last line []" sh -c "'$bin' '$tmp/tight.json' 1 >'$tmp/o' 2>'$tmp/e'; test \$? -eq 3 && test \"\$(tail -n 1 '$tmp/o')\" = '[]' && grep -q 'usage limit 49' '$tmp/e'"
check "missing file: exit 1, one line" sh -c "'$bin' '$tmp/nope.json' 1 2>'$tmp/e' >/dev/null; test \$? -eq 1 && test \$(wc -l <'$tmp/e') -eq 1 && grep -q '^pcc-iopddl: .*nope.json: cannot open' '$tmp/e'"
printf '{"problem": {"nodes": {"costs": [[1]], "usages": [[1]], "intervals": [[0, 1]]}, "edges": {"nodes": [[0, 3]], "costs": [[0]]}}}' >"$tmp/bad.json"
check "edge to a missing node: exit 1 naming it" sh -c "'$bin' '$tmp/bad.json' 1 2>'$tmp/e' >/dev/null; test \$? -eq 1 && grep -q '^pcc-iopddl: .*bad.json: problem.edges.nodes\[0\]: node 3 does not exist' '$tmp/e'"
printf 'noise\n[0, 0, 2, 1, 0]\n\n' >"$tmp/best.txt"
check "--eval: the optimum costs 445, feasible, exit 0" sh -c "'$bin' --eval '$dir/example.json' '$tmp/best.txt' >'$tmp/o' && grep -qx 'cost 445 feasible yes peak 50 limit 50' '$tmp/o'"
printf '[0, 0, 1, 1, 0]\n' >"$tmp/over.txt"
check "--eval: over the limit, exit 4" sh -c "'$bin' --eval '$dir/example.json' '$tmp/over.txt' >'$tmp/o'; test \$? -eq 4 && grep -q 'cost 415 feasible no peak 55' '$tmp/o'"
printf '[0, 0, 9, 1, 0]\n' >"$tmp/range.txt"
check "--eval: a strategy out of range, exit 1 naming the node" sh -c "'$bin' --eval '$dir/example.json' '$tmp/range.txt' 2>'$tmp/e' >/dev/null; test \$? -eq 1 && grep -q 'node 2: strategy 9 out of range' '$tmp/e'"
printf '[0, 0, 2]\n' >"$tmp/short.txt"
check "--eval: a short list, exit 1" sh -c "'$bin' --eval '$dir/example.json' '$tmp/short.txt' 2>'$tmp/e' >/dev/null; test \$? -eq 1 && grep -q 'with 5 strategies' '$tmp/e'"
check "--eval: round trip of the solver's own answer" sh -c "'$bin' '$dir/example.json' 1 >'$tmp/ans' 2>/dev/null && '$bin' --eval '$dir/example.json' '$tmp/ans' | grep -q '^cost 445 feasible yes'"
check "no arguments: exit 2" sh -c "'$bin' 2>/dev/null; test \$? -eq 2"
check "bad timeout: exit 2" sh -c "'$bin' '$dir/example.json' soon 2>/dev/null; test \$? -eq 2"
check "zero timeout: exit 2" sh -c "'$bin' '$dir/example.json' 0 2>/dev/null; test \$? -eq 2"

# The deadline: an answer printed, feasible by --eval, and the process gone
# before the timeout (timeout -s KILL at the limit itself: a run that is
# still there is killed and fails), whatever the load. B reads in 0.1 s.
# deadline_run ID LIMIT OUT: the run, killed at LIMIT.
deadline_run() {
	timeout -s KILL "$2" "$bin" "$contest/asplos-2025-iopddl-$1.json.gz" "$2" >"$3" 2>"$3.err"
}
deadline_ok() {
	deadline_run "$1" "$2" "$tmp/$1.ans" && "$bin" --eval "$contest/asplos-2025-iopddl-$1.json.gz" "$tmp/$1.ans" |
		grep -q 'feasible yes'
}
# Two busy loops per core beside two solves at once: each gets a fraction
# of a core, as on the loaded machine where D once ran 14 s over.
loaded_pair() {
	hogs=""
	for _ in $(seq 1 $((2 * $(nproc)))); do
		sh -c 'while :; do :; done' &
		hogs="$hogs $!"
	done
	deadline_ok B 1.5 &
	b=$!
	deadline_ok G 1.5
	g=$?
	wait $b
	b=$?
	for h in $hogs; do kill "$h"; done
	test $b -eq 0 && test $g -eq 0
}
# Reading D alone takes about 2 s: the alarm ends the run before its 1 s
# with no answer yet (exit 5, "[]"), or with one when reading was quick.
early_alarm() {
	deadline_run D 1 "$tmp/D.ans"
	rc=$?
	test $rc -eq 5 && test "$(tail -n 1 "$tmp/D.ans")" = '[]' && grep -q 'time limit: no answer yet' "$tmp/D.ans.err" ||
		{ test $rc -eq 0 && "$bin" --eval "$contest/asplos-2025-iopddl-D.json.gz" "$tmp/D.ans" | grep -q 'feasible yes'; }
}
if [ -r "$contest/asplos-2025-iopddl-B.json.gz" ]; then
	check "contest B at 0.5 s: a feasible answer printed before the limit" deadline_ok B 0.5
	check "contest B and G at 1.5 s beside busy loops: feasible, before the limit" loaded_pair
	check "contest D at 1 s, still reading when the alarm comes: exit 5 and [] before the limit" early_alarm
else
	echo "# no contest instances in '$contest': deadline cases skipped"
fi
tap_done
