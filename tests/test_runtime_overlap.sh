#!/bin/sh
# test_runtime_overlap.sh PCC PCC_RUN: communication overlapped with compute
# (runtime/exec.c) changes no bit of a result, and does happen (TAP).
#
# Plans: a pipelined training plan (gpt, 2 stages of 1 rank: send/recv) and
# one of 2 stages of 2 ranks (send/recv and collectives) on 4 ranks; a
# training plan sharded over the batch (resnet_train on a 2x1 and a 4x1 mesh:
# all_reduce, reduce_scatter and the all_gathers of the update) on 2 and 4
# ranks, and in bf16 on 2; tinytext on a 4x1 mesh (all_to_all too); a
# pipelined inference plan on 4 ranks. Each runs 3 steps with overlap (the
# default) and with --no-overlap:
# - the losses printed and the parameters saved (--save-onnx) or the
#   outputs written are identical, byte for byte;
# - the closing statistics count receives posted early (pipelines) and
#   collectives overlapped (the sharded plans) above zero with overlap,
#   so a change that silently turns it off fails here, and zero without.
# That the results also equal the reference interpreter's is
# test_runtime.sh's part: it runs with overlap on.
# The host figures the plans are made with are pinned (host_pin.sh), not
# read from ~/.cache/pcc. With memory copies a tenth as fast (as a loaded
# machine measures them), vit's training plan on 2 stages of 4 ranks starts
# a collective early at the position where receives are due too, which
# stopped their posting: an assertion failed in rt_overlap_finish (issue
# 40); it runs here both ways too.
pcc=$1
run=$2
train=$(dirname "$0")/train
models=$(dirname "$0")/models
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no network probing, no shared-memory warnings on small containers
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
unset PCC_RUN_FAULT
mpi="timeout 120 mpirun --oversubscribe"
loss="--loss cross_entropy:logits,labels"

# counter LOG N: the Nth number of the overlap statistics ("overlap: A of
# B receives posted early, C of D collectives overlapped").
counter() {
	sed -n 's/.*overlap[a-z ]*: \([0-9]*\) of \([0-9]*\) receives posted early, \([0-9]*\) of \([0-9]*\) collectives overlapped.*/\1 \2 \3 \4/p' "$1" |
		awk -v n="$2" '{ print $n }'
}

# same NAME NP PLAN DATA: trains 3 steps both ways; identical losses and
# parameters.
same() {
	for mode in on off; do
		flag=$([ $mode = off ] && echo --no-overlap)
		$mpi -np "$2" "$run" "$3" --timeout 60 --data "$4" --steps 3 --save-onnx "$tmp/$1_$mode.onnx" $flag \
			>"$tmp/$1_$mode.log" || { echo "$1 ($mode) failed" >&2; return 1; }
		grep '^step ' "$tmp/$1_$mode.log" | awk '{ print $2, $4, $6 }' >"$tmp/$1_$mode.loss"
	done
	test "$(wc -l <"$tmp/$1_on.loss")" -eq 3 || { echo "not 3 steps logged" >&2; return 1; }
	cmp "$tmp/$1_on.loss" "$tmp/$1_off.loss" >&2 || return 1
	cmp "$tmp/$1_on.onnx" "$tmp/$1_off.onnx" >&2
}

# counted NAME FIELD: with overlap, counter FIELD (1 receives posted early,
# 3 collectives overlapped) is above 0; without, both are 0.
counted() {
	on=$(counter "$tmp/$1_on.log" "$2") off1=$(counter "$tmp/$1_off.log" 1) off3=$(counter "$tmp/$1_off.log" 3)
	grep 'overlap' "$tmp/$1_on.log" "$tmp/$1_off.log" >&2
	[ "${on:-0}" -gt 0 ] || { echo "counter $2 is ${on:-missing} with overlap" >&2; return 1; }
	[ "$off1" = 0 ] && [ "$off3" = 0 ] || { echo "counters $off1, $off3 without overlap" >&2; return 1; }
}

pin_host "$pcc" "$tmp/host.slow" 2e9 7.5e9 || { echo "Bail out! cannot pin the host figures"; exit 1; }
"$pcc" "$train/vit/model.onnx" --cluster cpu:8 --train --optimizer momentum --lr 0.01 $loss --micro-batches 2 --stages 2 \
	--mesh 2x2 -o "$tmp/vit8.bin" >/dev/null
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; }

gpt=$train/gpt
rn=$train/resnet_train
opts="--train --optimizer momentum --lr 0.01"
check "the plans compile (gpt pipelined on cpu:2 and cpu:4, resnet_train and tinytext sharded, gpt inference)" sh -c "
  '$pcc' '$gpt/model.onnx' --cluster cpu:2 $opts $loss --stages 2 --micro-batches 4 -o '$tmp/pp2.bin' >/dev/null &&
  '$pcc' '$gpt/model.onnx' --cluster cpu:4 $opts $loss --stages 2 --micro-batches 4 -o '$tmp/pp4.bin' >/dev/null &&
  '$pcc' '$rn/model.onnx' --cluster cpu:2 $opts $loss --mesh 2x1 --micro-batches 2 -o '$tmp/dp2.bin' >/dev/null &&
  '$pcc' '$rn/model.onnx' --cluster cpu:4 $opts $loss --mesh 4x1 --micro-batches 2 -o '$tmp/dp4.bin' >/dev/null &&
  '$pcc' '$rn/model.onnx' --cluster cpu:2 $opts $loss --mesh 2x1 --micro-batches 2 --precision bf16 -o '$tmp/bf2.bin' >/dev/null &&
  '$pcc' '$train/tinytext/model.onnx' --cluster cpu:4 $opts --mesh 4x1 --micro-batches 2 -o '$tmp/tt4.bin' >/dev/null &&
  '$pcc' '$models/gpt_op17/model.onnx' --cluster cpu:4 --stages 2 -o '$tmp/i4.bin' >/dev/null"

check "gpt pipelined on 2 ranks: losses and parameters identical with and without overlap" \
	same pp2 2 "$tmp/pp2.bin" "$gpt/test_data_set_0"
check "... and receives were posted early" counted pp2 1
check "gpt pipelined on 4 ranks (stages of 2): losses and parameters identical with and without overlap" \
	same pp4 4 "$tmp/pp4.bin" "$gpt/test_data_set_0"
check "... and receives were posted early" counted pp4 1
check "resnet_train sharded on 2 ranks: losses and parameters identical with and without overlap" \
	same dp2 2 "$tmp/dp2.bin" "$rn/test_data_set_0"
check "... and collectives overlapped compute" counted dp2 3
check "resnet_train sharded on 4 ranks: losses and parameters identical with and without overlap" \
	same dp4 4 "$tmp/dp4.bin" "$rn/test_data_set_0"
check "... and collectives overlapped compute" counted dp4 3
# bf16 collectives travel as f32 and are shortened at the wait
check "resnet_train sharded on 2 ranks in bf16: losses and parameters identical with and without overlap" \
	same bf2 2 "$tmp/bf2.bin" "$rn/test_data_set_0"
check "... and collectives overlapped compute" counted bf2 3
check "tinytext sharded on 4 ranks (all_to_all too): losses and parameters identical with and without overlap" \
	same tt4 4 "$tmp/tt4.bin" "$train/tinytext/test_data_set_0"
check "... and collectives overlapped compute" counted tt4 3

# inference: the outputs, byte for byte
infer_same() {
	for mode in on off; do
		flag=$([ $mode = off ] && echo --no-overlap)
		$mpi -np 4 "$run" "$tmp/i4.bin" --timeout 60 -i "$models/gpt_op17/test_data_set_0" -o "$tmp/io_$mode" \
			$flag >"$tmp/i4_$mode.log" || return 1
	done
	grep 'overlap' "$tmp/i4_on.log" >&2
	for f in "$tmp"/io_on/*.pb; do
		cmp "$f" "$tmp/io_off/$(basename "$f")" >&2 || return 1
	done
	[ "$(counter "$tmp/i4_on.log" 1)" -gt 0 ]
}
check "gpt inference pipelined on 4 ranks: outputs identical with and without overlap, receives posted early" \
	infer_same

check "vit on 8 ranks (2 stages of 2x2), planned with slow memory copies: identical with and without overlap" \
	same vit8 8 "$tmp/vit8.bin" "$train/vit/test_data_set_0"
check "... and receives were posted early" counted vit8 1

tap_done
