#!/bin/sh
# test_runtime_errors.sh PCC PCC_RUN MODELS_DIR: pcc-run's refusals and
# faults (TAP).
#
# 1. Refusals at start: a wrong world size, a missing or corrupt plan, a
#    model that is not the one compiled (or is gone), options that do not
#    fit the plan, inputs of the wrong shape or dtype, labels outside the
#    loss's classes, no data, token files (--tokens) that cannot feed the
#    plan, a PCC_RUN_FAULT that could never fire. Each one: the job exits
#    non-zero within seconds with exactly one "pcc-run:" line on stderr
#    naming what is wrong and where, and writes nothing (no -o directory,
#    no --save-onnx model). A token outside the vocabulary is found when
#    its window is first cut: the job stops, on every rank alike (no
#    MPI_Abort), before the step that would read it.
# 2. Faults while running, injected with PCC_RUN_FAULT=RANK:INSTR:KIND[:STEP]
#    into plans whose ranks communicate (checked with `pcc inspect`): an
#    error names the rank, step and instruction, a failed assertion the
#    rank (every pcc-run: line but a warning starts "pcc-run: rank N:"); a rank that dies or hangs
#    stops the whole job (a hang through --timeout, naming what was
#    awaited); no --save-onnx model or -o outputs are left behind. The
#    seconds each fault took to stop the job are printed as "# ..." lines.
# 3. Positive controls (run first): the same plans and data without a
#    fault succeed, so the failures are not failures of the setup.
#
# Every mpirun is bounded by `timeout 60`.
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
. "$(dirname "$0")/host_pin.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no network probing, no shared-memory warnings on small containers
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
unset PCC_RUN_FAULT
mpi="timeout 60 mpirun --oversubscribe"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; } # host_pin.sh

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

# ranked: every "pcc-run:" line of $tmp/se but a warning starts "pcc-run:
# rank N: " (issue 40: a message names the rank that prints it).
ranked() {
	! grep '^pcc-run:' "$tmp/se" | grep -v -E '^pcc-run: (rank [0-9]+: |warning: )' >&2 ||
		{ echo "a pcc-run: line without its rank" >&2; return 1; }
}

# refused NP FRAGMENTS ARGS...: the job fails within 20 s; stderr has
# exactly one "pcc-run:" line, "pcc-run: rank N: ...", and it holds every
# fragment (lines of FRAGMENTS); stdout has nothing of pcc-run's;
# $tmp/never (for -o) and $tmp/never.onnx (for --save-onnx) were not
# written.
refused() {
	rf_np=$1 rf_frags=$2
	shift 2
	rm -rf "$tmp/never" "$tmp/never.onnx"
	go "$rf_np" "$@"
	grep '^pcc-run:' "$tmp/se" >"$tmp/line"
	cat "$tmp/line" >&2
	[ "$go_rc" -ne 0 ] || { echo "exit status 0" >&2; return 1; }
	[ "$(wc -l <"$tmp/line")" -eq 1 ] || { echo "not exactly one pcc-run: line on stderr" >&2; return 1; }
	ranked || return 1
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
# The automatic cpu:2 training plan replicates everything and never talks;
# the automatic cpu:4 inference plan talks or not as the host's figures
# (cost_host.c) put it, so i4 has 2 stages of 2 ranks: send/recv.
check "the plans compile (gpt training on cpu:2 and cpu:4, gpt inference on cpu:2 and cpu:4, mlp on cpu:2)" sh -c "
  '$pcc' '$gpt/model.onnx' --cluster cpu:2 --train $loss --stages 2 -o '$tmp/t2.bin' >/dev/null &&
  '$pcc' '$gpt/model.onnx' --cluster cpu:4 --train $loss --stages 2 -o '$tmp/t4.bin' >/dev/null &&
  '$pcc' '$gi/model.onnx' --cluster cpu:4 --stages 2 -o '$tmp/i4.bin' >/dev/null &&
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
# labels i64[2,8]: one set whose element 13 is -3, and one of -100 and 63 only
mkdir -p "$tmp/neglabels/test_data_set_0" "$tmp/neglabels/test_data_set_1" "$tmp/oklabels"
cp "$gdata/input_0.pb" "$gdata/input_1.pb" "$tmp/neglabels/test_data_set_0/"
cp "$gdata/input_0.pb" "$tmp/neglabels/test_data_set_1/"
{ printf '\010\002\010\010\020\007\102\006labels\112\200\001'; head -c 104 /dev/zero
  printf '\375\377\377\377\377\377\377\377'; head -c 16 /dev/zero; } >"$tmp/neglabels/test_data_set_1/input_1.pb"
cp "$gdata/input_0.pb" "$tmp/oklabels/"
{ printf '\010\002\010\010\020\007\102\006labels\112\200\001'
  for _ in 1 2 3 4 5 6 7 8; do printf '\234\377\377\377\377\377\377\377\077\000\000\000\000\000\000\000'; done
} >"$tmp/oklabels/input_1.pb"
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

# a plan beside its model's folder, both moved to another folder afterwards
mkdir -p "$tmp/rel/m" "$tmp/rel/plans"
cp "$mlp/model.onnx" "$tmp/rel/m/model.onnx"
"$pcc" "$tmp/rel/m/model.onnx" --cluster cpu:2 -o "$tmp/rel/plans/r.bin" >/dev/null
mv "$tmp/rel" "$tmp/rel2"

# ---- 3. positive controls: the plans, data and options used below work

# trains NP PLAN [DATA]: 3 steps logged, --save-onnx written.
trains() {
	rm -f "$tmp/ok.onnx"
	succeeds "$1" "$2" --timeout 20 --data "${3:-$gdata}" --steps 3 --save-onnx "$tmp/ok.onnx" || return 1
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
check "a plan names its model relative to its own folder: ../m/model.onnx, no absolute path" sh -c "
  grep -qF '../m/model.onnx' '$tmp/rel2/plans/r.bin' && ! grep -qF '$tmp/rel/' '$tmp/rel2/plans/r.bin'"
check "a plan and its model moved together run where they now are, from another directory" sh -c "
  cd / && $mpi -np 2 '$run' '$tmp/rel2/plans/r.bin' --timeout 20 -i '$mlp/test_data_set_0' -o '$tmp/rel_out' >&2 &&
  test -s '$tmp/rel_out/output_0.pb'"
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
rm "$tmp/rel2/m/model.onnx"
refuse "a plan whose model is gone: the path, relative to the plan's folder, and --model are named" 2 \
	"$tmp/rel2/plans/../m/model.onnx: cannot read: No such file or directory (the model $tmp/rel2/plans/r.bin was compiled from, named relative to the plan's directory; give --model MODEL.onnx)" \
	"$tmp/rel2/plans/r.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
cp "$models/mlp_op13/model.onnx" "$tmp/mv/model.onnx"
refuse "another model in the place of the compiled one: not the model compiled" 2 \
	"$tmp/mv/model.onnx is not the model $tmp/mv.bin was compiled from" \
	"$tmp/mv.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"

# options
refuse "an inference plan given --data: refused" 2 "$tmp/m2.bin is an inference plan: give -i DIR, not --data" \
	"$tmp/m2.bin" --data "$mlp/test_data_set_0" --save-onnx "$tmp/never.onnx"
refuse "a training plan given -i: refused" 2 "$tmp/t2.bin is a training plan: give --data DIR or --tokens FILE, not -i" \
	"$tmp/t2.bin" -i "$gdata" -o "$tmp/never"
refuse "neither -i nor --data nor --tokens: refused" 2 "$tmp/t2.bin: give -i DIR (inference) or --data DIR or --tokens FILE (training)" \
	"$tmp/t2.bin" --save-onnx "$tmp/never.onnx"
refuse "both -i and --data: refused" 2 "-i and --data exclude each other" \
	"$tmp/t2.bin" -i "$gdata" --data "$gdata" --save-onnx "$tmp/never.onnx"
refuse "an unknown option: named" 2 "unknown option '--frobnicate'" \
	"$tmp/t2.bin" --data "$gdata" --frobnicate --save-onnx "$tmp/never.onnx"
refuse "--steps 0: refused" 2 "--steps 0: expected a whole number from 1 to" \
	"$tmp/t2.bin" --data "$gdata" --steps 0 --save-onnx "$tmp/never.onnx"
refuse "--steps without a value: refused" 2 "--steps needs a value" \
	"$tmp/t2.bin" --data "$gdata" --save-onnx "$tmp/never.onnx" --steps
refuse "--timeout 0: refused" 2 "--timeout 0: expected a number of at least 0.001" \
	"$tmp/t2.bin" --data "$gdata" --timeout 0 --save-onnx "$tmp/never.onnx"
refuse "--profile=0: refused" 2 "--profile=0: expected all or a number of kernels from 1 to" \
	"$tmp/t2.bin" --data "$gdata" --profile=0 --save-onnx "$tmp/never.onnx"
refuse "-i without a value: refused" 2 "-i needs a value" "$tmp/m2.bin" -o "$tmp/never" -i
refuse "no plan: refused" 2 "no plan given" -i "$mlp/test_data_set_0" -o "$tmp/never"
refuse "a second plan argument: refused" 2 "unexpected argument '$tmp/m2.bin'" \
	"$tmp/m2.bin" "$tmp/m2.bin" -i "$mlp/test_data_set_0" -o "$tmp/never"
go_fault=1:2:explode
refuse "a malformed PCC_RUN_FAULT: refused" 2 "PCC_RUN_FAULT=1:2:explode: expected RANK:INSTRUCTION:exit|hang|error|assert[:STEP]" \
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
refuse "inference: an empty data directory: the layout named" 2 "$tmp/empty: no input_0.pb (or .npy), no test_data_set_0" \
	"$tmp/i2.bin" -i "$tmp/empty" -o "$tmp/never"
refuse "training: a missing data directory: the layout named" 2 "$tmp/nowhere: no input_0.pb (or .npy), no test_data_set_0" \
	"$tmp/t2.bin" --data "$tmp/nowhere" --save-onnx "$tmp/never.onnx"
# labels: the plan records the labels input and the class count (64)
refuse "gpt training: a label outside the classes (70 of 64): file, element, value and range named" 2 \
	"pcc-run: rank 0: $tmp/badlabels/input_1.pb: label 70 at element 0 is outside [0, 64) (and not the ignored -100)" \
	"$tmp/t2.bin" --data "$tmp/badlabels" --save-onnx "$tmp/never.onnx"
refuse "gpt training on 4 ranks (2 stages): a negative label (-3) at element 13 of the second set: named" 4 \
	"$tmp/neglabels/test_data_set_1/input_1.pb: label -3 at element 13 is outside [0, 64)" \
	"$tmp/t4.bin" --data "$tmp/neglabels" --save-onnx "$tmp/never.onnx"
check "control: labels of the ignored -100 and the last class (63) are taken" \
	trains 2 "$tmp/t2.bin" "$tmp/oklabels"
# the model's own SoftmaxCrossEntropyLoss (train/gpt_loss, 64 classes): its
# labels input goes into the plan as --loss's does (issue 40)
"$pcc" "$train/gpt_loss/model.onnx" --cluster cpu:2 --train --stages 2 -o "$tmp/tl2.bin" >/dev/null
refuse "gpt_loss (the model's own SoftmaxCrossEntropyLoss): a label outside its classes (70 of 64): named" 2 \
	"pcc-run: rank 0: $tmp/badlabels/input_1.pb: label 70 at element 0 is outside [0, 64) (and not the ignored -100)" \
	"$tmp/tl2.bin" --data "$tmp/badlabels" --save-onnx "$tmp/never.onnx"
refuse "gpt_loss: a negative label (-3) at element 13 of the second set: named" 2 \
	"$tmp/neglabels/test_data_set_1/input_1.pb: label -3 at element 13 is outside [0, 64)" \
	"$tmp/tl2.bin" --data "$tmp/neglabels" --save-onnx "$tmp/never.onnx"
check "control: gpt_loss takes labels of the ignored -100 and the last class (63)" \
	trains 2 "$tmp/tl2.bin" "$tmp/oklabels"

# the arena times the host's ranks beyond int64 (issue 40: it wrapped to a
# negative need, passed, and the arena was allocated): a 4.1 GiB arena (a
# 1.1e9-float parameter, never read) for 2^31 - 1 local ranks, as
# PCC_RUN_LOCAL_RANKS says (one rank through mpirun: under
# scripts/test-sanitize a rank's leaks unwind fully, so Open MPI's own are
# told apart; an MPI singleton's were reported as pcc-run's)
mkdir -p "$tmp/big/in"
printf 'pcc-ir 1\ninput %%0 "x" : f32[]\nparam %%1 "W" : f32[1100000000] = external "w.bin" offset 0 bytes 4400000000\n%%2 : f32[] = reduce_sum %%1 axes=[0]\n%%3 : f32[] = add %%2, %%0\noutput %%3 "y"\n' >"$tmp/big/big.ir"
printf '\020\001\102\001x\112\004\000\000\200\077' >"$tmp/big/in/input_0.pb" # f32[] x = 1
check "an arena of 4.1 GiB on 2147483647 local ranks (the product past int64): refused with both figures" sh -c "
  '$pcc' '$tmp/big/big.ir' --cluster cpu:1 -o '$tmp/big/big.bin' >/dev/null &&
  PCC_RUN_LOCAL_RANKS=2147483647 $mpi -np 1 '$run' '$tmp/big/big.bin' -i '$tmp/big/in' 2>'$tmp/big/e'; test \$? -eq 1 &&
  grep -q '^pcc-run: rank 0: the plan needs 4.1 GiB per rank (its arena) for 2147483647 ranks on this host, which has .* available\$' '$tmp/big/e'"

# token files (--tokens; the window rule and its results: test_runtime_tokens.sh)
gen_tokens() { python3 "$(dirname "$0")/gen_tokens.py" "$@" --vocab 64 --batch 2 --seq 8; }
# put_tokens FILE FORMAT POS VALUE: 100 random u16/u32/i32 tokens with VALUE at POS
put_tokens() {
	python3 -c "import random, struct, sys
f, fmt, pos, val = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = [random.Random(1).randrange(64) for _ in range(100)]
t[pos] = val
open(f, 'wb').write(struct.pack('<100' + fmt, *t))" "$@"
}
gen_tokens "$tmp/ok.tok" "$tmp/unused" --tokens 100
gen_tokens "$tmp/short.tok" "$tmp/unused" --tokens 8
gen_tokens "$tmp/odd.tok" "$tmp/unused" --tokens 100 --odd-bytes
gen_tokens "$tmp/odd101.tok" "$tmp/unused" --tokens 101
put_tokens "$tmp/big0.tok" H 3 64
put_tokens "$tmp/late.tok" H 40 70
put_tokens "$tmp/neg.i32" i 0 -1
put_tokens "$tmp/big.u32" I 96 70000
check "the token plans compile (gpt on cpu:2, vit with labels [2], mlp_loss with its own loss)" sh -c "
  '$pcc' '$gpt/model.onnx' --cluster cpu:2 --train $loss -o '$tmp/tk2.bin' >/dev/null &&
  '$pcc' '$train/vit/model.onnx' --cluster cpu:2 --train $loss -o '$tmp/vit.bin' >/dev/null &&
  '$pcc' '$train/mlp_loss/model.onnx' --cluster cpu:2 --train -o '$tmp/ml.bin' >/dev/null"
check "control: gpt training from a token file, 2 ranks" sh -c "
  $mpi -np 2 '$run' '$tmp/tk2.bin' --timeout 20 --tokens '$tmp/ok.tok' --steps 3 | grep -q '^step 3/3 '"
refuse "--tokens: a file shorter than one window: named, with its token count and the window" 2 \
	"$tmp/short.tok: 8 tokens, fewer than one window of 9 (the plan's sequence of 8, plus the last label)" \
	"$tmp/tk2.bin" --tokens "$tmp/short.tok" --save-onnx "$tmp/never.onnx"
refuse "--tokens: a file that is not whole u16 tokens: named" 2 \
	"$tmp/odd.tok: 201 bytes is not a whole number of u16 tokens (2 bytes each)" \
	"$tmp/tk2.bin" --tokens "$tmp/odd.tok" --save-onnx "$tmp/never.onnx"
refuse "--tokens: 101 u16 tokens read as u32: not whole u32 tokens" 2 \
	"$tmp/odd101.tok: 202 bytes is not a whole number of u32 tokens (4 bytes each)" \
	"$tmp/tk2.bin" --tokens "$tmp/odd101.tok" --token-type u32 --save-onnx "$tmp/never.onnx"
refuse "--tokens: a missing file: named" 2 "$tmp/nowhere.tok: cannot open: No such file or directory" \
	"$tmp/tk2.bin" --tokens "$tmp/nowhere.tok" --save-onnx "$tmp/never.onnx"
refuse "--token-type u8: refused" 2 "--token-type u8: expected u16, u32 or i32" \
	"$tmp/tk2.bin" --tokens "$tmp/ok.tok" --token-type u8 --save-onnx "$tmp/never.onnx"
refuse "--token-type without --tokens: refused" 2 "--token-type needs --tokens FILE" \
	"$tmp/tk2.bin" --data "$gdata" --token-type u32 --save-onnx "$tmp/never.onnx"
refuse "--data and --tokens together: refused" 2 "--data and --tokens exclude each other" \
	"$tmp/tk2.bin" --data "$gdata" --tokens "$tmp/ok.tok" --save-onnx "$tmp/never.onnx"
refuse "--tokens for an inference plan: refused" 2 "$tmp/i2.bin is an inference plan: give -i DIR, not --tokens" \
	"$tmp/i2.bin" --tokens "$tmp/ok.tok" --save-onnx "$tmp/never.onnx"
refuse "--tokens for a plan with the model's own loss: no labels input" 2 \
	"$tmp/ok.tok: --tokens needs a plan trained with a cross entropy over token ids" \
	"$tmp/ml.bin" --tokens "$tmp/ok.tok" --save-onnx "$tmp/never.onnx"
refuse "--tokens for an image classifier (labels [2]): its inputs named" 2 \
	"--tokens feeds a plan of two inputs, token ids and labels of shape [B,T]; this one has 2 inputs, labels \"labels\" of shape [2]" \
	"$tmp/vit.bin" --tokens "$tmp/ok.tok" --save-onnx "$tmp/never.onnx"

# stopped NP STEP FRAGMENTS ARGS...: the job fails within 20 s with one
# "pcc-run:" line holding the fragments; steps before STEP were logged,
# STEP was not; every rank left by itself (no MPI_Abort); no model written.
stopped() {
	sp_np=$1 sp_step=$2 sp_frags=$3
	shift 3
	rm -f "$tmp/never.onnx"
	go "$sp_np" "$@"
	grep '^pcc-run:' "$tmp/se" >"$tmp/line"
	cat "$tmp/line" >&2
	[ "$go_rc" -ne 0 ] || { echo "exit status 0" >&2; return 1; }
	[ "$(wc -l <"$tmp/line")" -eq 1 ] || { echo "not exactly one pcc-run: line on stderr" >&2; return 1; }
	ranked || return 1
	has_all "$tmp/line" "$sp_frags" || return 1
	awk -v s="$go_secs" 'BEGIN { exit !(s < 20) }' || { echo "took $go_secs s" >&2; return 1; }
	[ "$(grep -c '^step ' "$tmp/so")" -eq $((sp_step - 1)) ] || { echo "steps logged: $(grep -c '^step ' "$tmp/so")" >&2; return 1; }
	! grep -q 'MPI_ABORT' "$tmp/se" || { echo "MPI_Abort stopped it" >&2; return 1; }
	unwritten "$tmp/never.onnx"
}
check "--tokens: an id of 64 (vocabulary 64) in the first window: stops before step 1, file, element and range named" \
	stopped 2 1 "pcc-run: rank 0: step 1: $tmp/big0.tok: token 64 at element 3 is outside [0, 64)" \
	"$tmp/tk2.bin" --tokens "$tmp/big0.tok" --steps 3 --save-onnx "$tmp/never.onnx"
check "--tokens: an id of 70 first read by step 3 (window 4): steps 1 and 2 run, step 3 does not" \
	stopped 2 3 "pcc-run: rank 0: step 3: $tmp/late.tok: token 70 at element 40 is outside [0, 64)" \
	"$tmp/tk2.bin" --tokens "$tmp/late.tok" --steps 3 --save-onnx "$tmp/never.onnx"
check "--tokens i32: a negative id: named" \
	stopped 2 1 "$tmp/neg.i32: token -1 at element 0 is outside [0, 64)" \
	"$tmp/tk2.bin" --tokens "$tmp/neg.i32" --token-type i32 --steps 3 --save-onnx "$tmp/never.onnx"
check "--tokens u32: an id of 70000 ending the last window (11, step 6): named" \
	stopped 2 6 "$tmp/big.u32: token 70000 at element 96 is outside [0, 64)" \
	"$tmp/tk2.bin" --tokens "$tmp/big.u32" --token-type u32 --steps 6 --save-onnx "$tmp/never.onnx"

# PCC_RUN_FAULT naming what does not exist never fires: refused
fault_refused() {
	go_fault=$1
	shift
	refused "$@"
	fr_rc=$?
	go_fault=
	return $fr_rc
}
check "PCC_RUN_FAULT naming rank 2 of a 2-rank plan: refused" fault_refused 2:3:error 2 \
	"PCC_RUN_FAULT=2:3:error: rank 2 does not exist (the plan has ranks 0 to 1)" \
	"$tmp/t2.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"
check "PCC_RUN_FAULT naming instruction 999999 of rank 1: refused" fault_refused 1:999999:hang 2 \
	"PCC_RUN_FAULT=1:999999:hang: rank 1 has no instruction 999999 (its program has" \
	"$tmp/t2.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"
check "PCC_RUN_FAULT at step 5 of a 3-step run: refused" fault_refused 1:10:error:5 2 \
	"PCC_RUN_FAULT=1:10:error:5: step 5 is past the run's last step (3)" \
	"$tmp/t2.bin" --data "$gdata" --steps 3 --save-onnx "$tmp/never.onnx"
check "PCC_RUN_FAULT at step 2 of an inference run: refused" fault_refused 0:5:error:2 2 \
	"PCC_RUN_FAULT=0:5:error:2: step 2 is past the run's last step (1)" \
	"$tmp/i2.bin" -i "$gi/test_data_set_0" -o "$tmp/never"
check "PCC_RUN_FAULT with junk after the step: refused" fault_refused 1:10:error:2x 2 \
	"PCC_RUN_FAULT=1:10:error:2x: expected RANK:INSTRUCTION:exit|hang|error|assert[:STEP] or RANK:ckpt:enospc[:STEP]" \
	"$tmp/t2.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"
check "PCC_RUN_FAULT with a negative rank: refused" fault_refused -1:10:error 2 \
	"PCC_RUN_FAULT=-1:10:error: expected" "$tmp/t2.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"
check "PCC_RUN_FAULT disk full at a checkpoint of a run without --checkpoint: refused" fault_refused 1:ckpt:enospc:2 2 \
	"PCC_RUN_FAULT=1:ckpt:enospc:2: no checkpoint is saved after step 2 (no --checkpoint)" \
	"$tmp/t2.bin" --data "$gdata" --steps 3 --save-onnx "$tmp/never.onnx"
check "PCC_RUN_FAULT disk full after step 3 when checkpoints follow steps 2 and 4: refused" fault_refused 0:ckpt:enospc:3 2 \
	"PCC_RUN_FAULT=0:ckpt:enospc:3: no checkpoint is saved after step 3 (see --checkpoint-every)" \
	"$tmp/t2.bin" --data "$gdata" --steps 4 --checkpoint "$tmp/never_ck" --checkpoint-every 2 --save-onnx "$tmp/never.onnx"
check "... and nothing was written in the checkpoint directory" unwritten "$tmp/never_ck"
check "PCC_RUN_FAULT error kinds on a checkpoint (ckpt:hang): refused" fault_refused 1:ckpt:hang 2 \
	"expected RANK:INSTRUCTION:exit|hang|error|assert[:STEP] or RANK:ckpt:enospc[:STEP]" \
	"$tmp/t2.bin" --data "$gdata" --save-onnx "$tmp/never.onnx"

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
	ranked || return 1
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

# a broken invariant: the assertion's message names the rank (issue 40).
# Under scripts/test-sanitize every abort is a report (tests/sanitize/
# run-one.sh hands the ranks handle_abort=1); this one is injected, so the
# ranks of this job alone get handle_abort=0.
san_env=${OMPI_MCA_mca_base_env_list-}
[ -z "$san_env" ] || export OMPI_MCA_mca_base_env_list="$(printf '%s' "$san_env" | sed 's/handle_abort=1/handle_abort=0/g')"
fault "training, 2 ranks: an assertion failing on rank 1 at step 2 names the rank" \
	2 1:10:assert:2 30 "^pcc-run: rank 1: internal error: .*runtime/exec.c:[0-9]+: assertion '.*PCC_RUN_FAULT injected a broken invariant.*' failed\$" \
	"$tmp/t2.bin" --timeout 20 $tr
[ -z "$san_env" ] || export OMPI_MCA_mca_base_env_list="$san_env"

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
# (at its first instruction: before its send to stage 1, whatever the plan's order)
fault "inference, 4 ranks: rank 1 hangs, --timeout 3: a peer names the message it waited for" \
	4 1:0:hang 30 "^pcc-run: rank [0-9]: step 1: .*$waits" \
	"$tmp/i4.bin" --timeout 3 -i "$gi/test_data_set_0" -o "$tmp/fo"
check "... and it was the timeout that ended it (>= 3 s)" hung 3

# Rank 0 writes --save-onnx only after every rank reports its steps done:
# rank 3 here (a replica of rank 2) sends rank 0 nothing after its last
# message, so its hang at the end of the last step must still stop the write.
t4_last=$(($(device_col "$tmp/t4.bin" 3 3) - 1))
check "training, 4 ranks: rank 3 hangs at its last instruction of the last step: no --save-onnx model is left" \
	faulted 4 "3:$t4_last:hang:3" 30 'no progress for 3 s' "$tmp/t4.bin" --timeout 3 $tr

tap_done
