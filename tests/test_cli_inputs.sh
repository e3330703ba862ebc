#!/bin/sh
# test_cli_inputs.sh PCC PCC_RUN PB_CMP NODE_TESTS_DIR: graph inputs on the
# command line, end to end (TAP).
#
# --const NAME=FILE|DIR: ONNX node tests whose inputs decide shapes
# (Reshape's shape, Slice's starts/ends/axes/steps, Expand's shape,
# OneHot's depth) compiled by `pcc MODEL --cluster cpu:1 --const ... -o
# plan.bin` and run by `mpirun -np 1 pcc-run plan.bin -i test_data_set_0`,
# the outputs against the test's output_0.pb; the same through pcc eval;
# OneHot binds its middle input, so the plan reads input_0.pb and
# input_2.pb. Then each error: an unknown input, an unreadable file, a
# file that is no TensorProto, another dtype or shape, a name bound twice,
# a plan file instead of a model, and a data set without a file the plan
# reads.
#
# bfloat16 inputs (pcc-run -i, pcc eval -i): a hand-built TensorProto of 12
# bfloat16 values (1, -2, 0.5, 3.140625, 0, -0, inf, -inf, 10, -100, 0.25,
# 1000) in every storage form the spec allows (raw_data; int32_data packed
# and not; with data_type BFLOAT16, and UINT16 as ONNX 1.12's test data
# writes bfloat16) through test_cast_BFLOAT16_to_FLOAT: the float outputs
# are those values exactly, bit for bit. UINT16 for a float input, and an
# int32_data element that is no 16-bit pattern, are refused.
pcc=$1
run=$2
cmp=$3
node=$4
. "$(dirname "$0")/tap.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe -np 1"

if [ ! -d "$node/test_reshape_reduced_dims" ]; then
	echo "1..0 # SKIP no ONNX node tests at $node (libonnx-testdata)"
	exit 0
fi

# const_run TEST DESCRIPTION CONST...: compiled with the bindings, run on
# data set 0 as it is, outputs as expected; and the same by pcc eval.
const_run() {
	t=$1 what=$2
	shift 2
	d=$node/$t/test_data_set_0
	check "$t: pcc --const $what -o plan.bin, then pcc-run -i test_data_set_0: the expected outputs" sh -c "
	  '$pcc' '$node/$t/model.onnx' --cluster cpu:1 $* -o '$tmp/$t.bin' >/dev/null &&
	  $mpi '$run' '$tmp/$t.bin' -i '$d' -o '$tmp/$t.out' >/dev/null && '$cmp' --rtol 1e-6 --atol 0 '$tmp/$t.out' '$d' >&2"
	check "$t: pcc eval --const $what: the expected outputs" sh -c "
	  '$pcc' eval '$node/$t/model.onnx' $* -i '$d' -o '$tmp/$t.ev' && '$cmp' --rtol 1e-6 --atol 0 '$tmp/$t.ev' '$d' >&2"
}

r=$node/test_reshape_reduced_dims
const_run test_reshape_reduced_dims "shape=FILE" --const "shape=$r/test_data_set_0/input_1.pb"
s=$node/test_slice/test_data_set_0
const_run test_slice "starts, ends, axes, steps=DIR" --const "starts=$s" --const "ends=$s" --const "axes=$s" --const "steps=$s"
const_run test_expand_dim_changed "new_shape=DIR" --const "new_shape=$node/test_expand_dim_changed/test_data_set_0"
o=$node/test_onehot_with_axis
const_run test_onehot_with_axis "depth=DIR, the middle input" --const "depth=$o/test_data_set_0"

check "inspect --const: the bound input is no longer an input" sh -c "
  '$pcc' inspect '$r/model.onnx' --const shape=$r/test_data_set_0 >'$tmp/i' && grep -q '^  data  *f32\[2,3,4\]' '$tmp/i' &&
  ! grep -q '^  shape ' '$tmp/i' && grep -q '^  reshaped  *f32\[2,12\]' '$tmp/i'"
check "print and report take --const" sh -c "
  '$pcc' print '$r/model.onnx' --const=shape=$r/test_data_set_0 | grep -q 'reshape %0 shape=\[2,12\]' &&
  '$pcc' report '$r/model.onnx' --cluster cpu:1 --const shape=$r/test_data_set_0 | grep -q '^step time'"
check "the plan of OneHot reads input_0.pb and input_2.pb; a set without input_2.pb: exit 1, naming what the plan reads" sh -c "
  '$pcc' inspect '$tmp/test_onehot_with_axis.bin' >'$tmp/i' && grep -q '2 inputs' '$tmp/i' &&
  grep -q '^input files (others bound as constants): input 0 \"indices\" from input_0.pb, input 1 \"values\" from input_2.pb\$' '$tmp/i' &&
  mkdir '$tmp/part' &&
  cp '$o/test_data_set_0/input_0.pb' '$o/test_data_set_0/input_1.pb' '$tmp/part/' &&
  ! $mpi '$run' '$tmp/test_onehot_with_axis.bin' -i '$tmp/part' >/dev/null 2>'$tmp/e' &&
  grep -q 'part/input_2.pb: cannot open: No such file or directory (input 1 \"values\"): the plan reads input_0.pb, input_2.pb from .*part (not input_1.pb: its input is bound as a constant by pcc --const)' '$tmp/e'"

# errors: exit 1 (2 for a bad option), one line naming what and where
err() {
	desc=$1 status=$2 want=$3
	shift 3
	check "$desc: exit $status, one line" sh -c '
	  e=$1 status=$2 want=$3
	  shift 3
	  "$@" >/dev/null 2>"$e"; test $? -eq "$status" && head -1 "$e" | grep -q -- "$want" &&
	  { test "$status" -eq 2 || test "$(wc -l <"$e")" -eq 1; }' - "$tmp/e" "$status" "$want" "$@"
}
m=$r/model.onnx
err "an input that decides shapes, unbound: the message says --const" 1 \
  'node "reshaped" (Reshape): the target shape must be a constant known at compile time (it is the graph input "shape": bind it with --const shape=FILE.pb)' \
  "$pcc" "$m" --cluster cpu:1 -o "$tmp/x.bin"
err "--const of no input of the model" 1 \
  'model.onnx: the model has no input "shap" to bind to a constant (--const shap=.*) (its inputs: "data", "shape")' \
  "$pcc" "$m" --cluster cpu:1 --const "shap=$r/test_data_set_0/input_1.pb" -o "$tmp/x.bin"
err "--const of an unreadable file" 1 "^pcc: --const shape: $tmp/nope.pb: cannot open: No such file or directory" \
  "$pcc" inspect "$m" --const "shape=$tmp/nope.pb"
printf '\012\377' >"$tmp/cut.pb"
err "--const of a file that is no TensorProto" 1 "^pcc: --const shape: $tmp/cut.pb: not a valid TensorProto" \
  "$pcc" eval "$m" -i "$r/test_data_set_0" --const "shape=$tmp/cut.pb"
err "--const of another dtype" 1 \
  'model.onnx: input "shape" is i64\[2\], but the constant bound to it (--const shape=.*input_0.pb) is f32\[2,3,4\]' \
  "$pcc" report "$m" --cluster cpu:1 --const "shape=$r/test_data_set_0/input_0.pb"
err "--const of another shape" 1 \
  'model.onnx: input "shape" is i64\[2\], but the constant bound to it (--const shape=.*) is i64\[4\]' \
  "$pcc" "$m" --cluster cpu:1 --const "shape=$node/test_reshape_extended_dims/test_data_set_0" -o "$tmp/x.bin"
err "--const of one name twice" 2 'input "shape" is already bound (by --const shape=' \
  "$pcc" "$m" --cluster cpu:1 --const "shape=$r/test_data_set_0" --const "shape=$r/test_data_set_0/input_1.pb"
err "--const without NAME=" 2 "^pcc: --const expects NAME=FILE.pb or NAME=DIR, got .shape. (try .pcc inspect --help.)$" \
  "$pcc" inspect "$m" --const shape
err "--const on a plan file" 1 'the file is a plan, and --const binds an input of an ONNX model' \
  "$pcc" inspect "$tmp/test_onehot_with_axis.bin" --const "shape=$r/test_data_set_0"
check "no plan or output written after an error" test ! -e "$tmp/x.bin"

# bfloat16 inputs, every storage form; expected float outputs bit for bit
b=$node/test_cast_BFLOAT16_to_FLOAT
hdr() { printf '\010\003\010\004\020'"$1"'\102\005input'; }
mkdir "$tmp/want" "$tmp/raw" "$tmp/packed" "$tmp/unpacked" "$tmp/u16raw" "$tmp/u16packed" "$tmp/big" "$tmp/f32"
printf '\010\003\010\004\020\001\102\006output\112\060\000\000\200\077\000\000\000\300\000\000\000\077\000\000\111\100\000\000\000\000\000\000\000\200\000\000\200\177\000\000\200\377\000\000\040\101\000\000\310\302\000\000\200\076\000\000\172\104' >"$tmp/want/output_0.pb"
raw='\112\030\200\077\000\300\000\077\111\100\000\000\000\200\200\177\200\377\040\101\310\302\200\076\172\104'
packed='\052\037\200\177\200\200\003\200\176\311\200\001\000\200\200\002\200\377\001\200\377\003\240\202\001\310\205\003\200\175\372\210\001'
unpacked='\050\200\177\050\200\200\003\050\200\176\050\311\200\001\050\000\050\200\200\002\050\200\377\001\050\200\377\003\050\240\202\001\050\310\205\003\050\200\175\050\372\210\001'
{ hdr '\020'; printf "$raw"; } >"$tmp/raw/input_0.pb"          # BFLOAT16, raw_data
{ hdr '\020'; printf "$packed"; } >"$tmp/packed/input_0.pb"    # BFLOAT16, int32_data packed
{ hdr '\020'; printf "$unpacked"; } >"$tmp/unpacked/input_0.pb" # BFLOAT16, int32_data one field each
{ hdr '\004'; printf "$raw"; } >"$tmp/u16raw/input_0.pb"       # UINT16 (ONNX 1.12), raw_data
{ hdr '\004'; printf "$packed"; } >"$tmp/u16packed/input_0.pb" # UINT16, int32_data
{ hdr '\020'; printf '\052\040\200\200\004'; printf "$packed" | tail -c +5; } >"$tmp/big/input_0.pb" # 65536 first
cp "$node/test_cast_FLOAT_to_BFLOAT16/test_data_set_0/input_0.pb" "$tmp/f32/input_0.pb"
"$pcc" "$b/model.onnx" --cluster cpu:1 -o "$tmp/bf.bin" >/dev/null 2>&1
"$pcc" "$node/test_cast_FLOAT_to_BFLOAT16/model.onnx" --cluster cpu:1 -o "$tmp/fb.bin" >/dev/null 2>&1
for f in raw packed unpacked u16raw u16packed; do
	check "bfloat16 input ($f): pcc-run -i reads the values exactly" sh -c "
	  $mpi '$run' '$tmp/bf.bin' -i '$tmp/$f' -o '$tmp/$f.out' >/dev/null &&
	  '$cmp' --rtol 0 --atol 0 '$tmp/$f.out' '$tmp/want' >&2 && cmp '$tmp/$f.out/output_0.pb' '$tmp/want/output_0.pb' >&2"
	check "bfloat16 input ($f): pcc eval -i reads the values exactly" sh -c "
	  '$pcc' eval '$b/model.onnx' -i '$tmp/$f' -o '$tmp/$f.ev' &&
	  '$cmp' --rtol 0 --atol 0 '$tmp/$f.ev' '$tmp/want' >&2 && cmp '$tmp/$f.ev/output_0.pb' '$tmp/want/output_0.pb' >&2"
done
check "ONNX 1.12's own bfloat16 data set (UINT16) runs through pcc-run -i" sh -c "
  $mpi '$run' '$tmp/bf.bin' -i '$b/test_data_set_0' -o '$tmp/bf.out' >/dev/null && '$cmp' --rtol 0 --atol 0 '$tmp/bf.out' '$b/test_data_set_0' >&2"
check "UINT16 for a float input: pcc-run refuses, naming the input's dtype" sh -c "
  ! $mpi '$run' '$tmp/fb.bin' -i '$tmp/u16raw' >/dev/null 2>'$tmp/e' &&
  grep -q 'u16raw/input_0.pb: holds UINT16, which pcc reads only as bfloat16 bit patterns (as ONNX 1.12.s test data stores bfloat16) for a bf16 input; the input it feeds is f32' '$tmp/e'"
check "bfloat16 for a float input: pcc-run refuses, naming both" sh -c "
  ! $mpi '$run' '$tmp/fb.bin' -i '$tmp/raw' >/dev/null 2>'$tmp/e' &&
  grep -q 'raw/input_0.pb: input 0 \"input\" is bf16\[3,4\], the plan takes f32\[3,4\]' '$tmp/e'"
err "an int32_data element that is no 16-bit pattern" 1 'big/input_0.pb: int32_data element 0 is 65536, not the bit pattern of a 16-bit float (0 to 65535)' \
  "$pcc" eval "$b/model.onnx" -i "$tmp/big"
check "a float data set still reads as float" sh -c "$mpi '$run' '$tmp/fb.bin' -i '$tmp/f32' >/dev/null"
tap_done
