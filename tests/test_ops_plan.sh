#!/bin/sh
# test_ops_plan.sh PCC PCC_RUN PB_CMP OPS_DIR NODE_TESTS_DIR: the small
# models of one core op in tests/ops (written by tests/ops/gen.py) against
# their expected outputs (TAP): pcc eval (the reference interpreter), and a
# plan for 4 CPU ranks (sharded, fused, with generated kernels) run by
# pcc-run under mpirun. A directory without test_data_set_0 is a node test
# of NODE_TESTS_DIR (libonnx-testdata) re-stamped at a newer opset: its
# data sets are the node test's own.
#
# Tolerances (float32): the interpreter within 1e-6 + 1e-6 |want| of the
# expected values; the 4-rank plan |got - want| <= 1e-5 + 1e-4 |want|, as
# test_runtime (sums run in another order on a mesh).
pcc=$1
run=$2
cmp=$3
ops=$4
node=$5
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no network probing, no shared-memory warnings on small containers
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; }

[ -n "$(ls -d "$ops"/*/ 2>/dev/null)" ] || { echo "Bail out! no models in $ops"; exit 1; }
for d in "$ops"/*/; do
	d=${d%/}
	m=$(basename "$d")
	if [ -d "$d/test_data_set_0" ]; then
		sets=$d/test_data_set_0
	else
		sets=$(ls -d "$node/test_$m"/test_data_set_* 2>/dev/null)
		[ -n "$sets" ] || { echo "Bail out! no data sets for $m in $node/test_$m"; exit 1; }
	fi
	for data in $sets; do
		s=$(basename "$data")
		check "$m ($s): pcc eval equals the expected outputs" sh -c "
		  rm -rf '$tmp/eval' && '$pcc' eval '$d/model.onnx' -i '$data' -o '$tmp/eval' >/dev/null &&
		  '$cmp' --rtol 1e-6 --atol 1e-6 '$tmp/eval' '$data' >&2"
		check "$m ($s): a 4-rank plan run by pcc-run equals the expected outputs" sh -c "
		  '$pcc' '$d/model.onnx' --cluster cpu:4 -q -o '$tmp/p.bin' >/dev/null &&
		  rm -rf '$tmp/run' && $mpi -np 4 '$run' --timeout 60 '$tmp/p.bin' -i '$data' -o '$tmp/run' >/dev/null &&
		  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/run' '$data' >&2"
	done
done
tap_done
