#!/bin/sh
# test_init.sh PCC PCC_RUN PB_CMP MODELS_DIR: pcc-run --init [SPEC] --seed N
# fills the parameters whose weights file is absent (TAP).
#
# The mlp_ext_op17 fixture (two Linear layers, weights as external data in
# weights.bin) is trained with an MSE loss against its own outputs, by SGD
# at lr 1e-30 so that one step leaves the parameters as they were loaded,
# and written with --save-onnx; pb_cmp --stats reads their statistics.
# Checked: without --init the absent file is an error naming it and
# --init; the defaults (matrices N(0, 0.02), biases 0); named rules win
# over the defaults and over later rules (const, ones, normal:STD,
# uniform:A); the same seed gives the same values, on 1 rank and on 2, and
# another seed others; a present weights file is read, not filled; bad
# rules and --seed without --init are refused in one line.
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$1")
run=$(abspath "$2")
cmp=$(abspath "$3")
models=$(abspath "$4")
. "$(dirname "$0")/tap.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 60 mpirun --oversubscribe"
m=$models/mlp_ext_op17

mkdir -p "$tmp/w" "$tmp/d"
cp "$m/model.onnx" "$m/weights.bin" "$tmp/w/"
cp "$m/model.onnx" "$tmp/model.onnx" # its weights.bin absent
cp "$m/test_data_set_0/input_0.pb" "$tmp/d/input_0.pb"
cp "$m/test_data_set_0/output_0.pb" "$tmp/d/input_1.pb" # the MSE's target

compile() {
	"$pcc" "$1" --cluster "$2" --train --loss mse:y,target --optimizer sgd --lr 1e-30 -o "$3" >/dev/null
}
plans() {
	compile "$tmp/model.onnx" cpu:1 "$tmp/t1.bin" && compile "$tmp/model.onnx" cpu:2 "$tmp/t2.bin" &&
		compile "$tmp/w/model.onnx" cpu:1 "$tmp/w1.bin"
}
check "control: training plans of mlp_ext_op17 (its weights absent, and present) compile" plans

# fill NP PLAN OUT [ARGS]: one step with ARGS, the parameters in OUT.onnx,
# their statistics in OUT.stats (name count mean std min max).
fill() {
	f_np=$1 f_plan=$2 f_out=$3
	shift 3
	$mpi -np "$f_np" "$run" "$f_plan" --data "$tmp/d" --steps 1 --save-onnx "$f_out.onnx" "$@" >"$f_out.log" 2>&1 ||
		{ cat "$f_out.log" >&2; return 1; }
	"$cmp" --stats "$f_out.onnx" >"$f_out.stats"
}
# stat OUT NAME COLUMN: mean (3), std (4), min (5) or max (6) of parameter NAME.
stat() {
	awk -v n="$2" -v c="$3" '$1 == n { print $c }' "$1.stats"
}
# within X LO HI
within() {
	awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x + 0 >= lo && x + 0 <= hi) }' ||
		{ echo "$1 is outside [$2, $3]" >&2; return 1; }
}

check "without --init an absent weights file is one error naming the file and --init" sh -c "
  ! $mpi -np 1 '$run' '$tmp/t1.bin' --data '$tmp/d' --steps 1 >'$tmp/so' 2>'$tmp/se' &&
  [ \$(grep -c '^pcc-run:' '$tmp/se') -eq 1 ] &&
  grep -q 'weights.bin: cannot open external data of \"fc[12].[a-z]*\": No such file or directory (pcc-run --init fills parameters whose weights are absent)' '$tmp/se'"

defaults() {
	fill 1 "$tmp/t1.bin" "$tmp/def" --init || return 1
	grep -q -- '--init: 4 parameters on rank 0 filled' "$tmp/def.log" || { echo "no fill line" >&2; return 1; }
	cat "$tmp/def.stats" >&2
	for w in fc1.weight fc2.weight; do
		within "$(stat "$tmp/def" $w 3)" -0.004 0.004 && within "$(stat "$tmp/def" $w 4)" 0.017 0.023 || return 1
	done
	for b in fc1.bias fc2.bias; do
		within "$(stat "$tmp/def" $b 5)" -1e-20 1e-20 && within "$(stat "$tmp/def" $b 6)" -1e-20 1e-20 || return 1
	done
}
check "--init alone: matrices N(0, 0.02) (mean and std of 512 and 256 values), biases 0" defaults

rules() {
	fill 1 "$tmp/t1.bin" "$tmp/rule" --init 'fc1.weight=const:0.5,*.bias=ones,fc*=normal:0.1,*=zeros' || return 1
	cat "$tmp/rule.stats" >&2
	within "$(stat "$tmp/rule" fc1.weight 5)" 0.5 0.5 && within "$(stat "$tmp/rule" fc1.weight 6)" 0.5 0.5 &&
		within "$(stat "$tmp/rule" fc1.bias 5)" 0.999999 1.000001 &&
		within "$(stat "$tmp/rule" fc2.bias 6)" 0.999999 1.000001 &&
		within "$(stat "$tmp/rule" fc2.weight 4)" 0.085 0.115 && within "$(stat "$tmp/rule" fc2.weight 3)" -0.02 0.02
}
check "named rules win over the defaults and over later rules (const:0.5, ones, normal:0.1)" rules

uniform() {
	fill 1 "$tmp/t1.bin" "$tmp/uni" --init '*.weight=uniform:0.3' || return 1
	within "$(stat "$tmp/uni" fc1.weight 5)" -0.3 -0.27 && within "$(stat "$tmp/uni" fc1.weight 6)" 0.27 0.3 &&
		within "$(stat "$tmp/uni" fc1.weight 4)" 0.155 0.19 && within "$(stat "$tmp/uni" fc1.bias 6)" -1e-20 1e-20
}
check "uniform:0.3 stays in [-0.3, 0.3] with std near 0.3/sqrt(3); unmatched biases keep the default 0" uniform

check "the same seed gives the same values on 1 rank and on 2" sh -c "
  $mpi -np 2 '$run' '$tmp/t2.bin' --data '$tmp/d' --steps 1 --init --seed 7 --save-onnx '$tmp/s2.onnx' >/dev/null &&
  $mpi -np 1 '$run' '$tmp/t1.bin' --data '$tmp/d' --steps 1 --init --seed 7 --save-onnx '$tmp/s1.onnx' >/dev/null &&
  '$cmp' --onnx --rtol 0 --atol 0 '$tmp/s2.onnx' '$tmp/s1.onnx' >&2"
check "another seed gives other values" sh -c "
  ! '$cmp' --onnx --rtol 1e-3 --atol 0 '$tmp/def.onnx' '$tmp/s1.onnx' >&2"

check "--init with the weights file present reads it: nothing filled, the model's own values" sh -c "
  $mpi -np 1 '$run' '$tmp/w1.bin' --data '$tmp/d' --steps 1 --init --save-onnx '$tmp/p.onnx' >'$tmp/p.log' &&
  grep -q -- '--init: 0 parameters on rank 0 filled' '$tmp/p.log' &&
  '$cmp' --onnx --rtol 1e-6 --atol 1e-9 '$tmp/p.onnx' '$tmp/w/model.onnx' >&2"

# (one rank of mpirun, not an MPI singleton: under scripts/test-sanitize a
# rank's leaks unwind fully, so Open MPI's own are told apart)
refused() {
	r_frag=$1
	shift
	! $mpi -np 1 "$run" "$tmp/t1.bin" --data "$tmp/d" "$@" >"$tmp/so" 2>"$tmp/se" || return 1
	cat "$tmp/se" >&2
	[ "$(grep -c '^pcc-run:' "$tmp/se")" -eq 1 ] && grep -qF -- "$r_frag" "$tmp/se"
}
check "an unknown initializer is refused naming it and the kinds" \
	refused 'unknown initializer "twos" (expected zeros, ones, const:V, normal[:STD] or uniform:A)' --init 'fc*=twos'
check "a rule without = is refused" refused '"fc1" is not PATTERN=KIND' --init=fc1,fc2=ones
check "const without a value is refused" refused 'initializer "const" needs a value (const:V)' --init '*=const'
check "--seed without --init is refused" refused '--seed needs --init' --seed 3
tap_done
