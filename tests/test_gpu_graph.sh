#!/bin/sh
# test_gpu_graph.sh PCC PCC_RUN PB_CMP MODELS_DIR TRAIN_DIR: pcc-run
# --cuda-graph on the checking stand-in for a GPU (PCC_GPU_STANDIN=1,
# runtime/gpu_standin.h), TAP.
#
# Training fixtures (AdamW and momentum, 1 and 2 micro-batches, 1 GPU, a
# 2-GPU pipeline's NCCL sends, 4 GPUs' pipelines and all-reduces) log,
# step by step, the very losses and gradient norms (--log-json's, every
# digit) and end with the very parameters with the step recorded as a
# CUDA graph and replayed (the default) as with --cuda-graph=off and as on
# CPU ranks, and the run says that step 2 was recorded (the first is a
# warm-up) and replayed by the third. An evaluation between steps runs
# outside the graph and changes nothing. A token file, which feeds each
# step other ids and labels, shows that each replay reads its own step's
# inputs; a run resumed from a checkpoint saved after a replayed step
# records its own and logs the uninterrupted run's steps. Inference
# fixtures' outputs with the graph (--cuda-graph on: auto records no
# inference, whose one step nothing replays) are --cuda-graph=off's byte
# for byte and PyTorch's. A plan whose kernels partly run on the host, --profile
# and --trace run without a graph and say why; a bad --cuda-graph is
# refused.
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$1")
run=$(abspath "$2")
cmp=$(abspath "$3")
models=$(abspath "$4")
train=$(abspath "$5")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export PCC_GPU_STANDIN=1
unset CUDA_VISIBLE_DEVICES
mpi="timeout 300 mpirun --oversubscribe"
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"
pin_host "$pcc" "$tmp/cache" || { echo "Bail out! cannot pin the host figures"; exit 1; }

# run3 NP DEVICE GRAPH OUT PLAN ARGS...: 3 steps; OUT.log, OUT.json
# (--log-json) and OUT.onnx (--save-onnx); OUT.steps: each step's loss
# and gradient norm as --log-json wrote them.
run3() {
	r_np=$1 r_dev=$2 r_graph=$3 r_out=$4 r_plan=$5
	shift 5
	$mpi -np "$r_np" "$run" "$r_plan" --device "$r_dev" --cuda-graph "$r_graph" --steps 3 \
		--log-json "$r_out.json" --save-onnx "$r_out.onnx" "$@" >"$r_out.log" 2>&1 || {
		cat "$r_out.log" >&2
		return 1
	}
	sed 's/.*\("loss": *[^,]*\).*\("grad_norm": *[^,]*\).*/\1 \2/' "$r_out.json" >"$r_out.steps"
	grep -h 'eval_loss' "$r_out.json" | sed 's/.*\("eval_loss": *[^,}]*\).*/\1/' >>"$r_out.steps"
}

# same_training NP PLAN ARGS...: on GPUs with the graph, without, and on
# CPU ranks: the same steps, bit for bit, the same parameters.
same_training() {
	s_np=$1 s_plan=$2
	shift 2
	run3 "$s_np" gpu auto "$tmp/ga" "$s_plan" "$@" &&
		run3 "$s_np" gpu off "$tmp/go" "$s_plan" "$@" &&
		run3 "$s_np" cpu off "$tmp/c" "$s_plan" "$@" || return 1
	cat "$tmp/ga.steps" >&2
	[ "$(grep -c grad_norm "$tmp/ga.steps")" -eq 3 ] || { echo "not 3 steps logged" >&2; return 1; }
	cmp "$tmp/ga.steps" "$tmp/go.steps" >&2 && cmp "$tmp/ga.steps" "$tmp/c.steps" >&2 || return 1
	cmp "$tmp/ga.onnx" "$tmp/go.onnx" >&2 && cmp "$tmp/ga.onnx" "$tmp/c.onnx" >&2 || return 1
	g_who=rank\ 0
	[ "$s_np" = 1 ] || g_who="every rank"
	grep -q "^pcc-run: $g_who: CUDA graph: step 2 recorded, replayed as 1 later step$" "$tmp/ga.log" ||
		{ grep 'CUDA graph' "$tmp/ga.log" >&2; echo "no line says the graph was replayed" >&2; return 1; }
	! grep 'CUDA graph' "$tmp/go.log" "$tmp/c.log" >&2
}

# trained NAME NP CLUSTER MICRO OPTIMIZER [compile options]
trained() {
	t_name=$1 t_np=$2 t_cl=$3 t_mb=$4 t_opt=$5
	shift 5
	t_loss=$(sed -n 's/.*"loss": "\([^"]*\)".*/\1/p' "$train/$t_name/train.json" | head -1)
	t_lossopt=
	[ "$t_loss" = model ] || t_lossopt="--loss $t_loss"
	check "$t_name: 3 $t_opt steps on $t_np GPU$([ "$t_np" = 1 ] || echo s) ($t_cl $*, $t_mb micro-batches) replayed as a CUDA graph: the losses, gradient norms and parameters of --cuda-graph=off and of CPU ranks, bit for bit" \
		train_case "$@"
}
train_case() {
	"$pcc" "$train/$t_name/model.onnx" --cluster "$t_cl" --train $t_lossopt --optimizer "$t_opt" --lr 0.01 \
		--micro-batches "$t_mb" --codegen all "$@" -o "$tmp/t.bin" >/dev/null &&
		same_training "$t_np" "$tmp/t.bin" --data "$train/$t_name/test_data_set_0"
}

trained gpt 1 1x1:h100 1 adamw
trained gpt 1 1x1:h100 2 adamw
trained vit 1 1x1:h100 2 momentum
trained gpt 2 1x2:h100 2 adamw --stages 2
trained mlp_loss 4 1x4:h100 2 adamw --stages 2 --mesh 2x1
trained bert 4 1x4:h100 2 momentum --stages 2 --mesh 1x2
trained gpt 4 1x4:h100 1 momentum --mesh 1x4

check "compiles gpt's training for 1x1:h100" sh -c "
  '$pcc' '$train/gpt/model.onnx' --cluster 1x1:h100 --train --loss cross_entropy:logits,labels --optimizer adamw \
    --lr 0.01 --codegen all -o '$tmp/e.bin' >/dev/null"
check "an evaluation after each step (--eval-data) runs outside the graph: the same eval losses, the same training" \
	same_training 1 "$tmp/e.bin" --data "$train/gpt/test_data_set_0" --eval-data "$train/gpt/test_data_set_0" --eval-every 1
# a token file feeds each step other windows: a replay reads each step's
# inputs, not the recorded step's
python3 "$(dirname "$0")/gen_tokens.py" "$tmp/tok" "$tmp/unused" --tokens 400 --vocab 64 --batch 2 --seq 8
# tokened NP CLUSTER MICRO OPTIMIZER [compile options]
tokened() {
	k_np=$1 k_cl=$2 k_mb=$3 k_opt=$4
	shift 4
	check "gpt from a token file (other ids and labels every step) on $k_np GPU$([ "$k_np" = 1 ] || echo s) ($k_cl $*, $k_mb micro-batches, $k_opt): the graph's steps are --cuda-graph=off's and the CPU ranks', bit for bit" \
		tokens_case "$@"
}
tokens_case() {
	"$pcc" "$train/gpt/model.onnx" --cluster "$k_cl" --train --loss cross_entropy:logits,labels --optimizer "$k_opt" \
		--lr 0.01 --micro-batches "$k_mb" --codegen all "$@" -o "$tmp/k.bin" >/dev/null &&
		same_training "$k_np" "$tmp/k.bin" --tokens "$tmp/tok"
}
tokened 1 1x1:h100 2 adamw
tokened 4 1x4:h100 1 momentum --mesh 1x4
# a checkpoint after a replayed step, resumed: the resumed run warms up
# and records again, and logs the uninterrupted run's steps
resumed() {
	rm -rf "$tmp/ck"
	"$pcc" "$train/gpt/model.onnx" --cluster 1x1:h100 --train --loss cross_entropy:logits,labels --optimizer adamw \
		--lr 0.01 --codegen all -o "$tmp/k.bin" >/dev/null &&
		$mpi -np 1 "$run" "$tmp/k.bin" --tokens "$tmp/tok" --steps 3 --checkpoint "$tmp/ck" >"$tmp/r1.log" 2>&1 &&
		$mpi -np 1 "$run" "$tmp/k.bin" --tokens "$tmp/tok" --steps 6 --resume "$tmp/ck" --log-json "$tmp/r2.json" \
			>"$tmp/r2.log" 2>&1 &&
		$mpi -np 1 "$run" "$tmp/k.bin" --tokens "$tmp/tok" --steps 6 --cuda-graph off --log-json "$tmp/r3.json" \
			>"$tmp/r3.log" 2>&1 || { cat "$tmp/r1.log" "$tmp/r2.log" >&2; return 1; }
	cat "$tmp/r1.log" "$tmp/r2.log" >&2
	grep -q "CUDA graph: step 2 recorded, replayed as 1 later step$" "$tmp/r1.log" &&
		grep -q "CUDA graph: step 5 recorded, replayed as 1 later step$" "$tmp/r2.log" || return 1
	sed 's/.*\("loss": *[^,]*\).*\("grad_norm": *[^,]*\).*/\1 \2/' "$tmp/r2.json" >"$tmp/r2.steps"
	sed -n '4,$s/.*\("loss": *[^,]*\).*\("grad_norm": *[^,]*\).*/\1 \2/p' "$tmp/r3.json" >"$tmp/r3.steps"
	[ "$(wc -l <"$tmp/r2.steps")" -eq 3 ] && cmp "$tmp/r2.steps" "$tmp/r3.steps" >&2
}
check "a run resumed from a checkpoint saved after a replayed step records its own graph and logs the uninterrupted run's steps, bit for bit" resumed

# inferred NAME NP CLUSTER [compile options]: one step, recorded
# (--cuda-graph on) and launched, its outputs --cuda-graph=off's byte for
# byte and PyTorch's
inferred() {
	i_name=$1 i_np=$2 i_cl=$3
	shift 3
	check "$i_name inference on $i_np GPU$([ "$i_np" = 1 ] || echo s) ($i_cl $*) as a CUDA graph: the outputs of --cuda-graph=off byte for byte, and PyTorch's" \
		infer_run "$@"
}
infer_run() {
	d=$models/$i_name/test_data_set_0
	"$pcc" "$models/$i_name/model.onnx" --cluster "$i_cl" "$@" -o "$tmp/i.bin" >/dev/null &&
		$mpi -np "$i_np" "$run" "$tmp/i.bin" --device gpu --cuda-graph on -i "$d" -o "$tmp/ia" >"$tmp/ia.log" 2>&1 &&
		$mpi -np "$i_np" "$run" "$tmp/i.bin" --device gpu --cuda-graph off -i "$d" -o "$tmp/io" >"$tmp/io.log" 2>&1 || {
		cat "$tmp/ia.log" "$tmp/io.log" >&2
		return 1
	}
	for f in "$tmp"/io/output_*.pb; do
		cmp "$f" "$tmp/ia/$(basename "$f")" >&2 || return 1
	done
	grep -q "CUDA graph: step 1 recorded, replayed as 0 later steps$" "$tmp/ia.log" ||
		{ cat "$tmp/ia.log" >&2; return 1; }
	"$cmp" --rtol 1e-3 --atol 1e-4 "$tmp/ia" "$d"
}
inferred gpt_op17 1 1x1:h100
inferred resnet_op17 1 1x1:h100
inferred unet_op17 1 1x1:h100
inferred gpt_op17 2 1x2:h100 --stages 2
inferred gpt_op17 4 1x4:h100 --stages 2 --mesh 1x2
# auto (the default) records no inference: nothing would replay its one
# step; the summary says nothing of a graph and the outputs are the same
check "an inference with --cuda-graph auto is not recorded (nothing replays it), and says nothing of a graph" sh -c "
  '$pcc' '$models/gpt_op17/model.onnx' --cluster 1x1:h100 -o '$tmp/n.bin' >/dev/null &&
  $mpi -np 1 '$run' '$tmp/n.bin' --device gpu -i '$models/gpt_op17/test_data_set_0' -o '$tmp/no' >'$tmp/n.log' 2>&1 &&
  cat '$tmp/n.log' >&2 && ! grep -q 'CUDA graph' '$tmp/n.log' &&
  '$cmp' --rtol 1e-3 --atol 1e-4 '$tmp/no' '$models/gpt_op17/test_data_set_0'"

# a plan for CPU ranks with PTX (--codegen ptx): its library calls with
# epilogues run on the host, so no step is recorded, and the run says why
check "a plan whose kernels partly run on the host runs without a graph, saying why; its outputs as before" sh -c "
  '$pcc' '$models/gpt_op17/model.onnx' --cluster cpu:1 --codegen ptx -o '$tmp/h.bin' >/dev/null &&
  $mpi -np 1 '$run' '$tmp/h.bin' --device gpu --cuda-graph on -i '$models/gpt_op17/test_data_set_0' -o '$tmp/ho' >'$tmp/h.log' 2>&1 &&
  cat '$tmp/h.log' >&2 &&
  grep -q '^pcc-run: rank 0: no CUDA graph: 7 kernel instructions run on the host (instruction [0-9]*, add f32, ...)' '$tmp/h.log' &&
  '$cmp' --rtol 1e-3 --atol 1e-4 '$tmp/ho' '$models/gpt_op17/test_data_set_0'"
check "--profile times each kernel, so it runs without a graph, saying so, and still profiles" sh -c "
  $mpi -np 1 '$run' '$tmp/e.bin' --data '$train/gpt/test_data_set_0' --steps 2 --profile=3 >'$tmp/p.log' 2>&1 &&
  cat '$tmp/p.log' >&2 &&
  grep -q '^pcc-run: rank 0: no CUDA graph: --profile times each kernel by CUDA events' '$tmp/p.log' &&
  grep -q '^pcc-run: profile of rank 0 over 2 steps: .* (CUDA events' '$tmp/p.log'"
check "--trace times each instruction, so it runs without a graph, saying so, and writes the timeline" sh -c "
  $mpi -np 1 '$run' '$tmp/e.bin' --data '$train/gpt/test_data_set_0' --steps 2 --trace '$tmp/t.json' >'$tmp/t.log' 2>&1 &&
  cat '$tmp/t.log' >&2 &&
  grep -q '^pcc-run: rank 0: no CUDA graph: --trace times each instruction on the host' '$tmp/t.log' &&
  grep -q '^pcc-run: wrote the measured timeline to' '$tmp/t.log'"
check "--cuda-graph always is refused, naming what it takes" sh -c "
  $mpi -np 1 '$run' '$tmp/e.bin' --data '$train/gpt/test_data_set_0' --cuda-graph always >/dev/null 2>'$tmp/b.err'
  test \$? -eq 2 && grep -q -- '--cuda-graph always: expected auto, on or off' '$tmp/b.err'"
tap_done
