#!/bin/sh
# test_zoo.sh PCC PCC_RUN PB_CMP ZOO_DIR: the model zoo of tests/zoo (TAP).
# Tiny transformers/torchvision models (GPT-2, BERT, Llama, Llama with
# repeat_interleave, also with symbolic batch and sequence, ViT, ResNet,
# MobileNetV3, ConvNeXt, Whisper's encoder) exported by the TorchScript
# exporter (NAME_ts, opset 17) and the dynamo exporter (NAME_dy, opset 20),
# made by tests/zoo/gen_zoo.py. For every model: pcc inspect reads it, pcc
# eval and a 4-rank plan run by pcc-run equal ONNX Runtime's outputs; for the
# loss models (a cross entropy inside the graph) one SGD step of pcc train
# and of a 4-rank training plan moves every parameter as torch's step did
# (and leaves alone what torch does not train). A model exported with
# symbolic dims has a file `dims` binding them ("batch=2 sequence=8"),
# passed to pcc as --dim NAME=N.
#
# Tolerances (float32): outputs |got - want| <= 1e-5 + 1e-4 |want|, as
# test_runtime; the SGD step's updates (lr 0.1, up to 0.04) 1e-6 + 1e-3
# |want| (pb_cmp --from: what the step changed, against torch's change).
#
# Cases that do not hold yet are TAP TODOs with the reason (known below);
# a fix makes them pass unexpectedly, and the entry must then go.
pcc=$1
run=$2
cmp=$3
zoo=$4
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# no network probing, no shared-memory warnings on small containers
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; }

# known MODEL CASE: why MODEL's CASE (inspect, eval, plan, train, train4)
# fails today, or nothing when it holds.
known() {
	case $1:$2 in
	none) ;;
	esac
}

# case_ MODEL CASE DESCRIPTION COMMAND...: check, or todo when known.
case_() {
	cm=$1 cc=$2
	shift 2
	why=$(known "$cm" "$cc")
	if [ -n "$why" ]; then todo "$why" "$@"; else check "$@"; fi
}

[ -n "$(ls -d "$zoo"/*_ts "$zoo"/*_dy 2>/dev/null)" ] || { echo "Bail out! no NAME_ts and NAME_dy models in $zoo"; exit 1; }
sgd="--optimizer sgd --lr 0.1"
for d in "$zoo"/*_ts "$zoo"/*_dy; do
	[ -d "$d" ] || continue
	m=$(basename "$d")
	data=$d/test_data_set_0
	opset=$(case $m in *_ts) echo 17 ;; *) echo 20 ;; esac)
	dims=
	[ -f "$d/dims" ] && for nv in $(cat "$d/dims"); do dims="$dims --dim $nv"; done
	case_ "$m" inspect "$m: pcc inspect reads it (opset $opset)" sh -c "
	  '$pcc' inspect '$d/model.onnx' $dims >'$tmp/inspect' && head -1 '$tmp/inspect' | grep -q '^opset $opset,'"
	case_ "$m" eval "$m: pcc eval equals ONNX Runtime's outputs" sh -c "
	  rm -rf '$tmp/eval' && '$pcc' eval '$d/model.onnx' $dims -i '$data' -o '$tmp/eval' >/dev/null &&
	  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/eval' '$data' >&2"
	case_ "$m" plan "$m: a 4-rank plan run by pcc-run equals ONNX Runtime's outputs" sh -c "
	  '$pcc' '$d/model.onnx' $dims --cluster cpu:4 -q -o '$tmp/p.bin' >/dev/null &&
	  rm -rf '$tmp/run' && $mpi -np 4 '$run' --timeout 60 '$tmp/p.bin' -i '$data' -o '$tmp/run' >/dev/null &&
	  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/run' '$data' >&2"
	[ -f "$d/expected_sgd.onnx" ] || continue
	case_ "$m" train "$m: one SGD step of pcc train moves the parameters as torch's did" sh -c "
	  '$pcc' train '$d/model.onnx' $dims -i '$data' $sgd --steps 1 --save-onnx '$tmp/t1.onnx' >/dev/null &&
	  '$cmp' --onnx --from '$d/model.onnx' --rtol 1e-3 --atol 1e-6 '$tmp/t1.onnx' '$d/expected_sgd.onnx' >&2"
	case_ "$m" train4 "$m: one SGD step of a 4-rank training plan moves the parameters as torch's did" sh -c "
	  '$pcc' '$d/model.onnx' $dims --cluster cpu:4 --train $sgd -q -o '$tmp/t.bin' >/dev/null &&
	  $mpi -np 4 '$run' --timeout 60 '$tmp/t.bin' --data '$d' --steps 1 --save-onnx '$tmp/t4.onnx' >/dev/null &&
	  '$cmp' --onnx --from '$d/model.onnx' --rtol 1e-3 --atol 1e-6 '$tmp/t4.onnx' '$d/expected_sgd.onnx' >&2"
done
tap_done
