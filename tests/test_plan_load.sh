#!/bin/sh
# test_plan_load.sh PCC MODELGEN MODELS_DIR: the same command gives the same
# plan however loaded the machine is (TAP).
#
# The sharding solvers stop at counts (rounds, simplex iterations, windows,
# branch-and-bound nodes), the wall-clock limit being a far backstop; when
# the backstop fires, pcc says so on stderr. So each plan here is compiled
# once on an idle machine and once squeezed onto one core next to busy
# loops (and another compile), and the plan files must match byte for
# byte, with no warning. GPU clusters only: a cpu:N cluster's device is
# measured on the host at compile time (cost_device_host), which a load
# changes by design.
pcc=$1
modelgen=$2
models=$3
. "$(dirname "$0")/tap.sh"

hogs=""
stop_hogs() {
	for p in $hogs; do
		kill "$p" 2>/dev/null
	done
	hogs=""
}
trap 'stop_hogs; rm -rf "$tmp"' EXIT
trap 'stop_hogs; rm -rf "$tmp"; exit 1' INT TERM HUP
# one core when taskset is there, so that the hogs surely take its time
pin=""
if command -v taskset >/dev/null 2>&1 && taskset -c 0 true 2>/dev/null; then
	pin="taskset -c 0"
fi

"$modelgen" gpt3-125m --layers 2 --batch 16 --seq 512 -o "$tmp/g.onnx" >/dev/null || exit 1
gpt="$models/gpt_loss_op17/model.onnx"
# NAME then pcc's arguments, writing $tmp/NAME.bin; $tmp/NAME.err holds stderr
compile() {
	name=$1
	shift
	$pin "$pcc" "$@" -o "$tmp/$name.bin" >/dev/null 2>"$tmp/$name.err"
}
pipe="$gpt --cluster 1x4:v100 --train --batch 8 --micro-batches 4 --stages 2 --memory-limit 600KB"
big="$tmp/g.onnx --cluster 1x8:h100 --train --micro-batches 2 --codegen none"

check "idle: a pipelined training plan (gpt_loss, 2 stages) compiles without a time-limit warning" \
	sh -c "$pin '$pcc' $pipe -o '$tmp/pipe0.bin' >/dev/null 2>'$tmp/e' && ! grep -q 'time limit' '$tmp/e'"
check "idle: a 2-layer GPT-3 125M training plan on 1x8:h100 compiles without a time-limit warning" \
	sh -c "$pin '$pcc' $big -o '$tmp/big0.bin' >/dev/null 2>'$tmp/e' && ! grep -q 'time limit' '$tmp/e'"

# busy loops that end by themselves too, should this script be killed
for i in 1 2 3; do
	$pin timeout 90 sh -c 'while :; do :; done' &
	hogs="$hogs $!"
done
# both compiles at once, next to the hogs
compile pipe1 $pipe &
p1=$!
compile big1 $big
rc_big=$?
wait $p1
rc_pipe=$?
stop_hogs

# same RC NAME: compiled (exit RC 0), byte for byte the idle plan, no
# time-limit warning; on failure, which of these and how (stderr)
same() {
	[ "$1" -eq 0 ] || { echo "the loaded compile failed ($1):" >&2; tail -3 "$tmp/${2}1.err" >&2; return 1; }
	if ! cmp "$tmp/${2}0.bin" "$tmp/${2}1.bin" >&2; then
		"$pcc" inspect "$tmp/${2}0.bin" >"$tmp/i0" 2>&1
		"$pcc" inspect "$tmp/${2}1.bin" >"$tmp/i1" 2>&1
		diff "$tmp/i0" "$tmp/i1" | head -4 >&2
		return 1
	fi
	! grep 'time limit' "$tmp/${2}1.err" >&2
}
check "loaded: the pipelined training plan is the same, byte for byte" same "$rc_pipe" pipe
check "loaded: the GPT-3 125M plan is the same, byte for byte" same "$rc_big" big
check "a backstop that fires is said on stderr, in one line, and the plan still comes" \
	sh -c "'$pcc' '$models/bert_op17/model.onnx' --cluster 1x8:a100 --stage-only --time-limit 1e-9 >'$tmp/o' 2>'$tmp/e' && grep -q '^intra-op pass: ' '$tmp/o' && test \$(wc -l <'$tmp/e') -eq 1 && grep -q '^pcc: warning: 1 sharding solve stopped at the time limit (--time-limit) before finishing: the plan may vary with machine load\$' '$tmp/e'"
check "--help says what --time-limit is" sh -c "'$pcc' --help | grep -q 'time-limit S  wall seconds each sharding solve may take, a backstop only'"
tap_done
