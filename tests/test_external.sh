#!/bin/sh
# test_external.sh PCC PCC_RUN PB_CMP MODELS_DIR: models whose initializers
# of every dtype are external data, as onnx's converter writes them
# (convert_model_to_external_data, size_threshold=0: tests/models/
# gen_external.py), TAP:
#   - pcc eval gives exactly the outputs of the inline model it came from
#     (gpt_ext_op17 from gpt_op17, gpt_dyn_ext_op17 from gpt_dyn_op17,
#     mask_ext_op17 from mask_op17);
#   - a plan compiles and pcc-run on 2 CPU ranks computes the same outputs
#     (the runtime reads the weights from the file, and mask_ext_op17's
#     bool mask, which is runtime data);
#   - without the data file, an initializer whose values import needs (a
#     Split's sizes, a Range's start) is one line naming it and the file,
#     exit status 1.
pcc=$1
run=$2
cmp=$3
models=$4
. "$(dirname "$0")/tap.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"
dyn="--dim batch=2 --dim seq=8"

# same NAME FROM [options]: pcc eval of NAME equals FROM's, exactly.
same() {
	name=$1 from=$2
	shift 2
	check "$name: pcc eval gives exactly $from's outputs" sh -c "
	  '$pcc' eval '$models/$name/model.onnx' -i '$models/$name/test_data_set_0' $* -o '$tmp/ev_$name' >/dev/null &&
	  '$pcc' eval '$models/$from/model.onnx' -i '$models/$from/test_data_set_0' $* -o '$tmp/ev_$from' >/dev/null &&
	  '$cmp' --rtol 0 --atol 0 '$tmp/ev_$name' '$tmp/ev_$from' >&2"
}
same gpt_ext_op17 gpt_op17
same gpt_dyn_ext_op17 gpt_dyn_op17 $dyn
same mask_ext_op17 mask_op17

# plan NAME [options]: compiled for 2 ranks, pcc-run's outputs equal eval's.
plan() {
	name=$1
	shift
	opts="$*"
	check "$name: a plan for cpu:2${opts:+ ($opts)}, pcc-run on 2 ranks computes the same outputs" sh -c "
	  '$pcc' '$models/$name/model.onnx' --cluster cpu:2 $* -o '$tmp/p.bin' >/dev/null &&
	  $mpi -np 2 '$run' --timeout 60 '$tmp/p.bin' -i '$models/$name/test_data_set_0' -o '$tmp/run_$name' >/dev/null &&
	  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/run_$name' '$tmp/ev_$name' >&2"
}
plan gpt_ext_op17
plan gpt_ext_op17 --stages 2
plan gpt_dyn_ext_op17 --batch 2 --dim seq=8
plan mask_ext_op17
plan mask_ext_op17 --mesh 2x1

# missing NAME WHAT INITIALIZER [options]: model.onnx alone, without its
# data file: one line naming the initializer and the file.
missing() {
	name=$1 what=$2 init=$3
	shift 3
	mkdir -p "$tmp/alone_$name"
	cp "$models/$name/model.onnx" "$tmp/alone_$name/"
	check "$name without model.onnx.data: one line naming \"$init\" ($what) and the file" sh -c "
	  '$pcc' inspect '$tmp/alone_$name/model.onnx' $* >/dev/null 2>'$tmp/e'; test \$? -eq 1 &&
	  test \$(wc -l <'$tmp/e') -eq 1 &&
	  grep -F 'must be known at compile time: it is initializer \"$init\", whose values are in the external file \"model.onnx.data\", which cannot be read: No such file or directory' '$tmp/e' >/dev/null ||
	  { cat '$tmp/e' >&2; false; }"
}
missing gpt_ext_op17 "a Split's sizes" /h.0/attn/Constant_output_0
missing gpt_dyn_ext_op17 "a Range's start" /Constant_1_output_0 $dyn
missing mask_ext_op17 "a Reshape's shape" consts/shape

tap_done
