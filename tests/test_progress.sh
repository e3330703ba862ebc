#!/bin/sh
# test_progress.sh PCC MODELS_DIR: the status line of long compiles and
# reports on stderr (TAP). PCC_PROGRESS_AFTER=0 shows it at once, as a long
# compile would after two seconds: the phases in order (search, lowering,
# codegen, writing) as plain lines when stderr is not a terminal, redrawn
# in place (carriage return, erase line) and erased at the end on one; none
# with -q, with PCC_PROGRESS=0, or (the default) within the first seconds.
pcc=$1
models=$2
. "$(dirname "$0")/tap.sh"
unset PCC_PROGRESS # scripts/test turns it off for the other tests

g=$models/gpt_loss_op17/model.onnx
PCC_PROGRESS_AFTER=0 "$pcc" "$g" --cluster cpu:4 --train --batch 8 -o "$tmp/p.bin" >/dev/null 2>"$tmp/plain"
grep '^pcc: \[[0-9.]* s\] ' "$tmp/plain" | sed 's/^pcc: \[[0-9.]* s\] \([a-z]*\).*/\1/' | uniq | tr '\n' ' ' \
	>"$tmp/phases"
check "plain lines, the phases in order: search, lowering, codegen, writing" grep -qx 'search lowering codegen writing ' \
	"$tmp/phases"
check "the search names its micro-batch size and how many it may try" \
	grep -q 'search: micro-batch size 2 (1 of at most 1)' "$tmp/plain"
check "lowering counts the stages it has sharded" \
	grep -q "lowering: the sharding of each stage's part of the train step: [0-9] of 3" "$tmp/plain"
check "the best step time shows once the search has one" \
	grep -q 'lowering: .*; best so far [0-9.e-]* s a step' "$tmp/plain"
check "no carriage return when stderr is not a terminal" sh -c "! grep -q \"\$(printf '\\r')\" '$tmp/plain'"
check "-q: no status line" sh -c "
  PCC_PROGRESS_AFTER=0 '$pcc' '$g' --cluster cpu:4 --train --batch 8 --codegen none -o '$tmp/q.bin' -q \
    2>'$tmp/q' >/dev/null && ! grep -q '^pcc: \[' '$tmp/q'"
check "PCC_PROGRESS=0: no status line" sh -c "
  PCC_PROGRESS=0 PCC_PROGRESS_AFTER=0 '$pcc' '$g' --cluster cpu:4 --train --batch 8 --codegen none -o '$tmp/q.bin' \
    2>'$tmp/q' >/dev/null && ! grep -q '^pcc: \[' '$tmp/q'"
check "a quick compile (under two seconds) prints no status line" sh -c "
  '$pcc' '$models/mlp_op17/model.onnx' --cluster cpu:2 --codegen none -o '$tmp/m.bin' 2>'$tmp/m' >/dev/null &&
  ! grep -q '^pcc: \[' '$tmp/m'"
if command -v script >/dev/null 2>&1; then
	PCC_PROGRESS_AFTER=0 script -qec "'$pcc' '$g' --cluster cpu:4 --train --batch 8 --codegen none -o '$tmp/t.bin'" \
		/dev/null 2>&1 | sed "s/$(printf '\r\033')\\[K/<erase>/g" >"$tmp/tty"
	check "on a terminal: redrawn in place" grep -q '<erase>pcc: \[[0-9.]* s\] lowering' "$tmp/tty"
	check "on a terminal: the line erased before the result" grep -qF "<erase>$g on cpu:4: " "$tmp/tty"
fi
check "pcc report --sweep names each point" sh -c "
  PCC_PROGRESS_AFTER=0 '$pcc' report '$g' --cluster 1x8:a100 --batch 64 --train --sweep tp,pp 2>'$tmp/s' >/dev/null &&
  grep -q '^pcc: \[[0-9.]* s\] sweep: tp=2 pp=1' '$tmp/s'"

# --time-passes: a table of wall and CPU seconds per kind of phase, -q or
# not, whose rows add up to its total; nothing without the option
check "--time-passes: every phase a row (search, the stages' sharding, fusion, memory plan, codegen, writing), the rows adding up to the total" sh -c "
  '$pcc' '$g' --cluster cpu:4 --train --batch 8 -q --time-passes -o '$tmp/tp.bin' 2>'$tmp/tp' >/dev/null &&
  cat '$tmp/tp' >&2 && grep -q '^pass timings' '$tmp/tp' &&
  grep -q '^  search: micro-batch size N  *[0-9.]* *[0-9.]* *[0-9.]*% *[1-9]' '$tmp/tp' &&
  grep -q \"^  lowering: the sharding of each stage's part of the train step \" '$tmp/tp' &&
  grep -q '^  lowering: fusion  ' '$tmp/tp' && grep -q '^  lowering: memory plan  ' '$tmp/tp' &&
  grep -q '^  codegen  ' '$tmp/tp' && grep -q '^  writing  ' '$tmp/tp' &&
  awk '/^  total/ { t = \$2 } /^  [a-z(]/ && !/^  total/ && !/^  phase/ { s += \$(NF - (\$NF ~ /%/ ? 2 : 3)) }
       END { d = s - t; if (d < 0) d = -d; exit !(t > 0 && d < 0.01 + 0.001 * t) }' '$tmp/tp'"
check "no --time-passes: no table" sh -c "
  '$pcc' '$g' --cluster cpu:4 --train --batch 8 -q -o '$tmp/tp2.bin' 2>'$tmp/tp2' >/dev/null && ! grep -q 'pass timings' '$tmp/tp2'"

tap_done
