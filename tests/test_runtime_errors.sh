#!/bin/sh
# test_runtime_errors.sh PCC PCC_RUN MODELS_DIR: pcc-run's refusals and
# faults (TAP).
#
# 1. Refusals at start: a wrong world size, a missing or corrupt plan, a
#    model that is not the one compiled (or is gone), options that do not
#    fit the plan, inputs of the wrong shape or dtype, no data. Each one:
#    the job exits non-zero within seconds with exactly one "pcc-run:" line
#    on stderr naming what is wrong and where, and writes nothing (no -o
#    directory, no --save-onnx model).
# 2. Faults while running, injected with PCC_RUN_FAULT=RANK:INSTR:KIND[:STEP]
#    into plans whose ranks communicate (checked with `pcc inspect`): an
#    error names the rank, step and instruction; a rank that dies or hangs
#    stops the whole job (a hang through --timeout, naming what was
#    awaited); no --save-onnx model or -o outputs are left behind. The
#    seconds each fault took to stop the job are printed as "# ..." lines.
# 3. Positive controls (run first): the same plans and data without a
#    fault succeed, so the failures are not failures of the setup.
#
# Every mpirun is bounded by `timeout 60`. Checks of known runtime bugs are
# skipped (each marked "KNOWN BUG:" below); PCC_TEST_KNOWN_BUGS=1 runs them.
#
# Not covered: an initializer missing from the model or of the wrong
# shape. Making such a model needs python3-onnx, and pcc-run refuses any
# model whose bytes differ from the compiled one's before it reads a
# weight (the --model checks below), so that path is unreachable here.
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$1")
run=$(abspath "$2")
models=$(abspath "$3")
train=$(abspath "$(dirname "$0")/train")
. "$(dirname "$0")/tap.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no network probing, no shared-memory warnings on small containers
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
unset PCC_RUN_FAULT
mpi="timeout 60 mpirun --oversubscribe"

# ---- helpers. They run inside check, in this shell: their variables are
# prefixed so that check's own ($desc, $n) survive.

now() {
	_t=$(date +%s.%N 2>/dev/null)
	case $_t in *N* | '') date +%s ;; *) echo "$_t" ;; esac
}

# go NP ARGS...: pcc-run ARGS on NP ranks, with PCC_RUN_FAULT=$go_fault
# when that is set; stdout in $tmp/so, stderr in $tmp/se, the exit status
# in $go_rc, the seconds in $go_secs and $tmp/secs.
go_fault=
go() {
	go_np=$1
	shift
	go_t0=$(now)
	if [ -n "$go_fault" ]; then
		PCC_RUN_FAULT=$go_fault $mpi -np "$go_np" "$run" "$@" >"$tmp/so" 2>"$tmp/se"
	else
		$mpi -np "$go_np" "$run" "$@" >"$tmp/so" 2>"$tmp/se"
	fi
	go_rc=$?
	go_secs=$(awk -v a="$go_t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
	echo "$go_secs" >"$tmp/secs"
}

# has_all FILE FRAGMENTS: every line of FRAGMENTS occurs in FILE (fixed strings).
has_all() {
	printf '%s\n' "$2" | while IFS= read -r ha_f; do
		[ -z "$ha_f" ] && continue
		grep -F -q -- "$ha_f" "$1" || { echo "not in the message: $ha_f" >&2; exit 1; }
	done
}

# unwritten PATHS...: none of them exists (nor a temporary beside it).
unwritten() {
	for uw_p in "$@"; do
		for uw_f in "$uw_p" "$uw_p".tmp*; do
			[ ! -e "$uw_f" ] || { echo "$uw_f was written" >&2; return 1; }
		done
	done
}

# refused NP FRAGMENTS ARGS...: the job fails within 20 s; stderr has
# exactly one "pcc-run:" line and it holds every fragment (lines of
# FRAGMENTS); stdout has nothing of pcc-run's; $tmp/never (for -o) and
# $tmp/never.onnx (for --save-onnx) were not written.
refused() {
	rf_np=$1 rf_frags=$2
	shift 2
	rm -rf "$tmp/never" "$tmp/never.onnx"
	go "$rf_np" "$@"
	grep '^pcc-run:' "$tmp/se" >"$tmp/line"
	cat "$tmp/line" >&2
	[ "$go_rc" -ne 0 ] || { echo "exit status 0" >&2; return 1; }
	[ "$(wc -l <"$tmp/line")" -eq 1 ] || { echo "not exactly one pcc-run: line on stderr" >&2; return 1; }
	has_all "$tmp/line" "$rf_frags" || return 1
	awk -v s="$go_secs" 'BEGIN { exit !(s < 20) }' || { echo "took $go_secs s" >&2; return 1; }
	! grep -q 'pcc-run' "$tmp/so" || { echo "stdout: $(cat "$tmp/so")" >&2; return 1; }
	unwritten "$tmp/never" "$tmp/never.onnx"
}

# refuse DESC NP FRAGMENTS ARGS...
refuse() {
	rs_d=$1
	shift
	check "$rs_d" refused "$@"
}

# succeeds NP ARGS...: the job exits 0.
succeeds() {
	go "$@"
	cat "$tmp/se" >&2
	[ "$go_rc" -eq 0 ] || { echo "exit status $go_rc" >&2; return 1; }
}

# known_bug DESC COMMAND...: a check that a runtime bug fails today; it is
# reported as skipped unless PCC_TEST_KNOWN_BUGS=1.
known_bug() {
	if [ "${PCC_TEST_KNOWN_BUGS:-0}" = 1 ]; then
		check "$@"
	else
		n=$((n + 1))
		echo "ok $n - $1 # SKIP known runtime bug (PCC_TEST_KNOWN_BUGS=1 runs it)"
	fi
}

# device_col PLAN RANK COLUMN: a column of RANK's row in pcc inspect's
# device table (3 instrs; 5-10 all_reduce, all_gather, reduce_scatter,
# all_to_all, send, recv).
device_col() {
	"$pcc" inspect "$1" | awk -v d="$2" -v c="$3" '$1 == "device" { t = 1; next } t && $1 == d { print $c; exit }'
}
# talks PLAN RANKS: each of RANKS has communication instructions.
talks() {
	for tk_r in $2; do
		tk_c=$("$pcc" inspect "$1" | awk -v d="$tk_r" '$1 == "device" { t = 1; next } t && $1 == d { print $5 + $6 + $7 + $8 + $9 + $10; exit }')
		[ "${tk_c:-0}" -gt 0 ] || { echo "$1: rank $tk_r does not communicate" >&2; return 1; }
	done
}

# ---- fixtures

gpt=$train/gpt
gdata=$gpt/test_data_set_0
gi=$models/gpt_op17
mlp=$models/mlp_op17
loss="--loss cross_entropy:logits,labels"
# Training plans whose ranks talk: two pipeline stages (cpu:2: one rank a
# stage, send/recv; cpu:4: stages of 2 ranks, collectives and send/recv).
# The automatic cpu:2 training plan replicates everything and never talks.
check "the plans compile (gpt training on cpu:2 and cpu:4, gpt inference on cpu:2 and cpu:4, mlp on cpu:2)" sh -c "
  '$pcc' '$gpt/model.onnx' --cluster cpu:2 --train $loss --stages 2 -o '$tmp/t2.bin' >/dev/null &&
  '$pcc' '$gpt/model.onnx' --cluster cpu:4 --train $loss --stages 2 -o '$tmp/t4.bin' >/dev/null &&
  '$pcc' '$gi/model.onnx' --cluster cpu:4 -o '$tmp/i4.bin' >/dev/null &&
  '$pcc' '$gi/model.onnx' --cluster cpu:2 -o '$tmp/i2.bin' >/dev/null &&
  '$pcc' '$mlp/model.onnx' --cluster cpu:2 -o '$tmp/m2.bin' >/dev/null"
fault_plans_talk() { talks "$tmp/t2.bin" "0 1" && talks "$tmp/t4.bin" "0 1 2 3" && talks "$tmp/i4.bin" "0 1 2 3"; }
check "pcc inspect: every rank of the fault plans (training on cpu:2 and cpu:4, inference on cpu:4) communicates" \
	fault_plans_talk

# input_0.pb files for gpt's ids (i64[2,8]), as raw TensorProtos: dims
# (field 1), data_type (2: 7 int64, 1 float), name (8), raw_data (9).
mkdir -p "$tmp/ws" "$tmp/wd" "$tmp/short" "$tmp/garbage" "$tmp/empty" "$tmp/half" \
	"$tmp/sets/test_data_set_0" "$tmp/sets/test_data_set_1" "$tmp/badlabels"
{ printf '\010\002\010\004\020\007\102\003ids\112\100'; head -c 64 /dev/zero; } >"$tmp/ws/input_0.pb"        # i64[2,4]
{ printf '\010\002\010\010\020\001\102\003ids\112\100'; head -c 64 /dev/zero; } >"$tmp/wd/input_0.pb"        # f32[2,8]
{ printf '\010\002\010\010\020\007\102\003ids\112\100'; head -c 64 /dev/zero; } >"$tmp/short/input_0.pb"     # i64[2,8], 8 values
echo "this is not a TensorProto" >"$tmp/garbage/input_0.pb"
cp "$gdata/input_0.pb" "$tmp/half/"                                                                          # no labels
cp "$gdata/input_0.pb" "$gdata/input_1.pb" "$tmp/sets/test_data_set_0/"
cp "$tmp/ws/input_0.pb" "$tmp/sets/test_data_set_1/"
cp "$gdata/input_1.pb" "$tmp/sets/test_data_set_1/"
cp "$gdata/input_0.pb" "$tmp/badlabels/"
# labels i64[2,8] with a 70 first (gpt has 64 classes)
{ printf '\010\002\010\010\020\007\102\006labels\112\200\001\106'; head -c 127 /dev/zero; } >"$tmp/badlabels/input_1.pb"
# plan files: one byte flipped half-way, the first half, an ONNX model, nothing
pl_size=$(wc -c <"$tmp/t2.bin")
pl_off=$((pl_size / 2))
pl_byte=$(od -An -tu1 -j "$pl_off" -N1 "$tmp/t2.bin" | tr -d ' ')
cp "$tmp/t2.bin" "$tmp/flip.bin"
# shellcheck disable=SC2059
printf "$(printf '\\%03o' $((pl_byte ^ 255)))" | dd of="$tmp/flip.bin" bs=1 seek="$pl_off" conv=notrunc 2>/dev/null
head -c "$pl_off" "$tmp/t2.bin" >"$tmp/trunc.bin"
cp "$mlp/model.onnx" "$tmp/notplan.bin"
: >"$tmp/empty.bin"
# a plan of a model that will move, compiled by a relative path
mkdir -p "$tmp/mv"
cp "$mlp/model.onnx" "$tmp/mv/model.onnx"
(cd "$tmp/mv" && "$pcc" model.onnx --cluster cpu:2 -o ../mv.bin >/dev/null)

# ---- 3. positive controls: the plans, data and options used below work

# trains NP PLAN: 3 steps logged, --save-onnx written.
trains() {
	rm -f "$tmp/ok.onnx"
	succeeds "$1" "$2" --timeout 20 --data "$gdata" --steps 3 --save-onnx "$tmp/ok.onnx" || return 1
	[ "$(grep -c '^step [123]/3 ' "$tmp/so")" -eq 3 ] || { echo "not 3 steps logged" >&2; return 1; }
	grep -q "wrote $tmp/ok.onnx" "$tmp/so" && test -s "$tmp/ok.onnx"
}
# infers NP PLAN DIR [ARGS]: -o outputs written.
infers() {
	if_np=$1 if_plan=$2 if_dir=$3
	shift 3
	rm -rf "$tmp/ok_out"
	succeeds "$if_np" "$if_plan" --timeout 20 -i "$if_dir" -o "$tmp/ok_out" "$@" && test -s "$tmp/ok_out/output_0.pb"
}
check "control: gpt training, 2 ranks (2 stages): 3 steps, --save-onnx written" trains 2 "$tmp/t2.bin"
check "control: gpt training, 4 ranks (2 stages of 2): 3 steps, --save-onnx written" trains 4 "$tmp/t4.bin"
check "control: gpt inference on 4 ranks writes its outputs" infers 4 "$tmp/i4.bin" "$gi/test_data_set_0"
check "control: gpt inference on 2 ranks writes its outputs" infers 2 "$tmp/i2.bin" "$gi/test_data_set_0"
check "control: mlp inference on 2 ranks writes its outputs" infers 2 "$tmp/m2.bin" "$mlp/test_data_set_0"
check "control: --model naming the compiled model's file is accepted" infers 2 "$tmp/m2.bin" "$mlp/test_data_set_0" --model "$mlp/model.onnx"
check "control: a plan compiled by a relative model path runs from another directory" infers 2 "$tmp/mv.bin" "$mlp/test_data_set_0"
check "control: a training set per step, cycling over 2 sets, is read" sh -c "
  mkdir -p '$tmp/two/test_data_set_0' '$tmp/two/test_data_set_1' &&
  cp '$gdata/input_0.pb' '$gdata/input_1.pb' '$tmp/two/test_data_set_0/' &&
  cp '$gdata/input_0.pb' '$gdata/input_1.pb' '$tmp/two/test_data_set_1/' &&
  $mpi -np 2 '$run' '$tmp/t2.bin' --timeout 20 --data '$tmp/two' --steps 2 | grep -q '2 data sets'"

# ---- 1. refusals at start

# the world size
refuse "a plan for 2 ranks run on 1: refused" 1 "pcc-run: rank 0: plan compiled for 2 devices (cluster cpu:2), run with 1 rank" \
	"$tmp/m2.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "a plan for 2 ranks run on 3: refused" 3 "plan compiled for 2 devices (cluster cpu:2), run with 3 ranks" \
	"$tmp/m2.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "a training plan for 4 ranks run on 2: refused" 2 "plan compiled for 4 devices (cluster cpu:4), run with 2 ranks" \
	"$tmp/t4.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"

# the plan file
refuse "a missing plan file: named" 2 "$tmp/nowhere.bin: cannot read" \
	"$tmp/nowhere.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "a plan with a byte flipped half-way: corrupt" 2 "$tmp/flip.bin: checksum mismatch (file is corrupt)" \
	"$tmp/flip.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"
refuse "a plan cut in half: truncated" 2 "$tmp/trunc.bin: truncated" \
	"$tmp/trunc.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"
refuse "an empty plan file: truncated" 2 "$tmp/empty.bin: truncated (0 bytes)" \
	"$tmp/empty.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "an ONNX model given as the plan: not a plan" 2 "$tmp/notplan.bin: not a pcc plan" \
	"$tmp/notplan.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"

# the model
refuse "--model naming another model (the op13 export of the same mlp): not the model compiled" 2 \
	"$models/mlp_op13/model.onnx is not the model $tmp/m2.bin was compiled from" \
	"$tmp/m2.bin" --model "$models/mlp_op13/model.onnx" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "--model naming a missing file: named" 2 "$tmp/nowhere.onnx: cannot read" \
	"$tmp/m2.bin" --model "$tmp/nowhere.onnx" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "a training plan with --model naming another model: not the model compiled" 2 \
	"$gi/model.onnx is not the model $tmp/t2.bin was compiled from" \
	"$tmp/t2.bin" --model "$gi/model.onnx" --data "$gdata" --save-onnx "$tmp/never.onnx"
mv "$tmp/mv/model.onnx" "$tmp/mv/moved.onnx"
refuse "the model moved after compiling: the path the plan records is named" 2 "$tmp/mv/model.onnx: cannot read" \
	"$tmp/mv.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
check "control: --model naming the moved model is accepted" infers 2 "$tmp/mv.bin" "$mlp/test_data_set_0" --model "$tmp/mv/moved.onnx"
cp "$models/mlp_op13/model.onnx" "$tmp/mv/model.onnx"
refuse "another model in the place of the compiled one: not the model compiled" 2 \
	"$tmp/mv/model.onnx is not the model $tmp/mv.bin was compiled from" \
	"$tmp/mv.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"

# options
refuse "an inference plan given --data: refused" 2 "$tmp/m2.bin is an inference plan: give -i DIR, not --data" \
	"$tmp/m2.bin" --data "$mlp/test_data_set_0" --save-onnx "$tmp/never.onnx"
refuse "a training plan given -i: refused" 2 "$tmp/t2.bin is a training plan: give --data DIR, not -i" \
	"$tmp/t2.bin" -i "$gdata" -o "$tmp/never"
refuse "neither -i nor --data: refused" 2 "$tmp/t2.bin: give -i DIR (inference) or --data DIR (training)" \
	"$tmp/t2.bin" --save-onnx "$tmp/never.onnx"
refuse "both -i and --data: refused" 2 "-i and --data exclude each other" \
	"$tmp/t2.bin" -i "$gdata" --data "$gdata" --save-onnx "$tmp/never.onnx"
refuse "an unknown option: named" 2 "unknown option '--frobnicate'" \
	"$tmp/t2.bin" --data "$gdata" --frobnicate --save-onnx "$tmp/never.onnx"
refuse "--steps 0: refused" 2 "--steps 0: expected a whole number from 1 to" \
	"$tmp/t2.bin" --data "$gdata" --steps 0 --save-onnx "$tmp/never.onnx"
refuse "--steps without a value: refused" 2 "--steps (missing): expected a whole number" \
	"$tmp/t2.bin" --data "$gdata" --save-onnx "$tmp/never.onnx" --steps
refuse "--timeout 0: refused" 2 "--timeout 0: expected a number of at least 0.001" \
	"$tmp/t2.bin" --data "$gdata" --timeout 0 --save-onnx "$tmp/never.onnx"
refuse "-i without a value: refused" 2 "-i needs a value" "$tmp/m2.bin" -o "$tmp/never" -i
refuse "no plan: refused" 2 "no plan given" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "a second plan argument: refused" 2 "unexpected argument '$tmp/m2.bin'" \
	"$tmp/m2.bin" "$tmp/m2.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
go_fault=1:2:explode
refuse "a malformed PCC_RUN_FAULT: refused" 2 "PCC_RUN_FAULT=1:2:explode: expected RANK:INSTRUCTION:exit|hang|error[:STEP]" \
	"$tmp/m2.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
go_fault=
# --steps is a whole number in range (1e30 once became LONG_MIN: no step, exit 0)
check "--steps 1e30 (more than a long holds): refused" refused 2 "--steps 1e30: expected" \
	"$tmp/t2.bin" --data "$gdata" --steps 1e30 --save-onnx "$tmp/never.onnx"

# inputs and data
refuse "gpt inference: input of another shape (i64[2,4]): file and shapes named" 2 \
	"$tmp/ws/input_0.pb: input 0 \"ids\" is i64[2,4], the plan takes i64[2,8]" \
	"$tmp/i2.bin" -i "$tmp/ws" -o "$tmp/never"
refuse "gpt inference: input of another dtype (f32[2,8]): file and dtypes named" 2 \
	"$tmp/wd/input_0.pb: input 0 \"ids\" is f32[2,8], the plan takes i64[2,8]" \
	"$tmp/i2.bin" -i "$tmp/wd" -o "$tmp/never"
refuse "gpt inference given the mlp fixture's input: file named" 4 \
	"$mlp/test_data_set_0/input_0.pb: input 0 \"ids\" is f32[4,16], the plan takes i64[2,8]" \
	"$tmp/i4.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "gpt training: ids of another shape: file and shapes named" 2 \
	"$tmp/ws/input_0.pb: input 0 \"ids\" is i64[2,4], the plan takes i64[2,8]" \
	"$tmp/t2.bin" --data "$tmp/ws" --save-onnx "$tmp/never.onnx"
refuse "gpt training: the second data set of another shape: its file named" 4 \
	"$tmp/sets/test_data_set_1/input_0.pb: input 0 \"ids\" is i64[2,4], the plan takes i64[2,8]" \
	"$tmp/t4.bin" --data "$tmp/sets" --save-onnx "$tmp/never.onnx"
refuse "gpt training: no labels file: named" 2 "$tmp/half/input_1.pb: cannot open" \
	"$tmp/t2.bin" --data "$tmp/half" --save-onnx "$tmp/never.onnx"
refuse "an input holding fewer values than its shape: named" 2 "$tmp/short/input_0.pb: data holds 8 elements, shape [2,8] needs 16" \
	"$tmp/i2.bin" -i "$tmp/short" -o "$tmp/never"
refuse "an input that is not a TensorProto: named" 2 "$tmp/garbage/input_0.pb: not a valid TensorProto" \
	"$tmp/i2.bin" -i "$tmp/garbage" -o "$tmp/never"
refuse "inference: an empty data directory: the layout named" 2 "$tmp/empty: no input_0.pb and no test_data_set_0" \
	"$tmp/i2.bin" -i "$tmp/empty" -o "$tmp/never"
refuse "training: a missing data directory: the layout named" 2 "$tmp/nowhere: no input_0.pb and no test_data_set_0" \
	"$tmp/t2.bin" --data "$tmp/nowhere" --save-onnx "$tmp/never.onnx"
# KNOWN BUG: pcc-run takes labels outside [0, classes) without a word (the
# cross-entropy's one-hot row is all zero; the loss comes out 7.35 instead
# of failing), where `pcc train` refuses "label 70 at element 0 is outside
# [0, 64)". The plan does not record which input holds labels nor the
# class count, so data.c cannot check them.
known_bug "gpt training: a label outside the classes: refused" refused 2 "label 70" \
	"$tmp/t2.bin" --data "$tmp/badlabels" --save-onnx "$tmp/never.onnx"

# ---- 2. faults while running

# faulted NP SPEC MAXSECS ERE ARGS...: with PCC_RUN_FAULT=SPEC the job
# fails within MAXSECS s, a stderr line matches ERE (if not empty), and
# neither $tmp/fo (-o) nor $tmp/fo.onnx (--save-onnx) is left. A fault at
# step 2 of a training run must come after step 1 was logged and before
# step 2 was.
faulted() {
	fl_np=$1 go_fault=$2 fl_spec=$2 fl_max=$3 fl_ere=$4
	shift 4
	rm -rf "$tmp/fo" "$tmp/fo.onnx"
	go "$fl_np" "$@"
	go_fault=
	grep '^pcc-run:' "$tmp/se" >&2
	[ "$go_rc" -ne 0 ] || { echo "exit status 0" >&2; return 1; }
	awk -v s="$go_secs" -v m="$fl_max" 'BEGIN { exit !(s < m) }' || { echo "took $go_secs s" >&2; return 1; }
	[ -z "$fl_ere" ] || grep -E -q -- "$fl_ere" "$tmp/se" || { echo "no line matches: $fl_ere" >&2; return 1; }
	case $fl_spec in *:2)
		grep -q '^step 1/3 ' "$tmp/so" || { echo "step 1 was not logged" >&2; return 1; }
		! grep -q '^step 2/3 ' "$tmp/so" || { echo "step 2 was logged" >&2; return 1; }
		;;
	esac
	! grep -q '^pcc-run: wrote' "$tmp/so" || { echo "stdout: $(grep '^pcc-run: wrote' "$tmp/so")" >&2; return 1; }
	unwritten "$tmp/fo" "$tmp/fo.onnx"
}
# fault DESC NP SPEC MAXSECS ERE ARGS...: the check, then the time it took.
fault() {
	ft_d=$1
	shift
	check "$ft_d" faulted "$@"
	echo "# $ft_d: the job stopped in $(cat "$tmp/secs") s"
}
hung() { # hung MINSECS: the timeout, not something else, ended it
	awk -v s="$(cat "$tmp/secs")" -v m="$1" 'BEGIN { exit !(s >= m) }' || { echo "ended after $(cat "$tmp/secs") s" >&2; return 1; }
}

# (split on purpose: $tmp and the fixtures' paths hold no blanks)
tr="--data $gdata --steps 3 --save-onnx $tmp/fo.onnx"
waits='no progress for 3 s waiting for (a message from rank [0-9]+|(all_reduce|all_gather|reduce_scatter|all_to_all) over ranks [0-9,]+)'

# an error: one rank fails as a kernel would, the job stops at once
fault "training, 2 ranks: error on rank 1 at instruction 10 of step 2 names rank, step and instruction" \
	2 1:10:error:2 30 '^pcc-run: rank 1: step 2: .*instruction 10 \([a-z_ ]+\): injected fault$' \
	"$tmp/t2.bin" --timeout 20 $tr
fault "training, 4 ranks: error on rank 1 at instruction 10 of step 2 names rank, step and instruction" \
	4 1:10:error:2 30 '^pcc-run: rank 1: step 2: .*instruction 10 \([a-z_ ]+\): injected fault$' \
	"$tmp/t4.bin" --timeout 20 $tr
fault "inference, 4 ranks: error on rank 2 at instruction 20 names rank, step and instruction; no outputs written" \
	4 2:20:error 30 '^pcc-run: rank 2: step 1: .*instruction 20 \([a-z_ ]+\): injected fault$' \
	"$tmp/i4.bin" --timeout 20 -i "$gi/test_data_set_0" -o "$tmp/fo"

# an exit: the process dies (status 9); its peers' waits are cut by mpirun
fault "training, 2 ranks: rank 1 dies at step 2: the job fails" \
	2 1:10:exit:2 30 '' "$tmp/t2.bin" --timeout 20 $tr
fault "training, 4 ranks: rank 1 dies at step 2: the job fails" \
	4 1:10:exit:2 30 '' "$tmp/t4.bin" --timeout 20 $tr
fault "inference, 4 ranks: rank 3 dies: the job fails, no outputs written" \
	4 3:20:exit 30 '' "$tmp/i4.bin" --timeout 20 -i "$gi/test_data_set_0" -o "$tmp/fo"

# a hang: with --timeout 3 a peer gives up waiting and names what for
fault "training, 2 ranks: rank 1 hangs at step 2, --timeout 3: rank 0 names the message it waited for" \
	2 1:10:hang:2 30 "^pcc-run: rank 0: step 2: .*no progress for 3 s waiting for a message from rank 1" \
	"$tmp/t2.bin" --timeout 3 $tr
check "... and it was the timeout that ended it (>= 3 s)" hung 3
fault "training, 4 ranks: rank 2 hangs at step 2, --timeout 3: a peer names what it waited for" \
	4 2:10:hang:2 30 "^pcc-run: rank [0-9]: step 2: .*$waits" \
	"$tmp/t4.bin" --timeout 3 $tr
check "... and it was the timeout that ended it (>= 3 s)" hung 3
fault "inference, 4 ranks: rank 1 hangs, --timeout 3: a peer names the collective it waited for" \
	4 1:10:hang 30 "^pcc-run: rank [0-9]: step 1: .*$waits" \
	"$tmp/i4.bin" --timeout 3 -i "$gi/test_data_set_0" -o "$tmp/fo"
check "... and it was the timeout that ended it (>= 3 s)" hung 3

# Rank 0 writes --save-onnx only after every rank reports its steps done:
# rank 3 here (a replica of rank 2) sends rank 0 nothing after its last
# message, so its hang at the end of the last step must still stop the write.
t4_last=$(($(device_col "$tmp/t4.bin" 3 3) - 1))
check "training, 4 ranks: rank 3 hangs at its last instruction of the last step: no --save-onnx model is left" \
	faulted 4 "3:$t4_last:hang:3" 30 'no progress for 3 s' "$tmp/t4.bin" --timeout 3 $tr

tap_done
