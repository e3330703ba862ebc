#!/bin/sh
# test_gpu.sh MODE PCC PCC_RUN PB_CMP MODELS_DIR TRAIN_DIR: pcc-run's GPU
# backend (TAP).
#
# MODE refusals (any machine): a plan compiled for a GPU cluster, run where
# no GPU is usable (no driver here; CUDA_VISIBLE_DEVICES= hides the GPUs
# of a machine that has some), fails at start within seconds with one
# "pcc-run:" line naming the plan, its cluster and --device cpu; with
# --device cpu the same plan runs on CPU ranks and its outputs equal
# PyTorch's; --device gpu on a plan without GPU code and an unknown
# --device are refused.
#
# MODE gpu (needs an NVIDIA GPU; exits 77, skipped, without one): every
# fixture model with test data, compiled for one GPU (1x1:h100), runs on
# the GPU and its outputs equal PyTorch's (the fixtures' expected outputs,
# rtol 1e-3); the training fixtures' three AdamW steps on the GPU (1 and 2
# micro-batches) log the CPU ranks' losses and gradient norms (rtol 1e-4)
# and end with their parameters (pb_cmp --onnx).
#
# MODE standin (any machine with the CUDA headers): the same, on the
# checking stand-in for a GPU (PCC_GPU_STANDIN=1, runtime/gpu_standin.h),
# plus pipelines and sharded meshes on 2 to 8 stand-in GPUs (the NCCL
# paths: sends, all-reduces, all-gathers, reduce-scatters), inference and
# training.
mode=$1
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$2")
run=$(abspath "$3")
cmp=$(abspath "$4")
models=$(abspath "$5")
train=$(abspath "$6")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"

if [ "$mode" = gpu ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "1..0 # SKIP no NVIDIA GPU (nvidia-smi lists none)"
	exit 77
fi
. "$(dirname "$0")/tap.sh"

gi=$models/gpt_op17

# one_line FILE FRAGMENT...: FILE has exactly one pcc-run: line, with every fragment.
one_line() {
	f=$1
	shift
	grep '^pcc-run:' "$f" >"$tmp/line"
	cat "$tmp/line" >&2
	[ "$(wc -l <"$tmp/line")" -eq 1 ] || { echo "not one pcc-run: line" >&2; return 1; }
	for frag in "$@"; do
		grep -qF -- "$frag" "$tmp/line" || { echo "missing: $frag" >&2; return 1; }
	done
}

# refused_run NP FRAGMENTS... -- ARGS: pcc-run ARGS fails within 20 s with one line.
refused_run() {
	np=$1
	shift
	frags=
	while [ "$1" != -- ]; do frags="$frags$1
"; shift; done
	shift
	t0=$(date +%s)
	CUDA_VISIBLE_DEVICES= $mpi -np "$np" "$run" "$@" >"$tmp/so" 2>"$tmp/se" && { echo "exit status 0" >&2; return 1; }
	[ $(($(date +%s) - t0)) -lt 20 ] || { echo "took too long" >&2; return 1; }
	[ ! -e "$tmp/never" ] || { echo "-o written" >&2; return 1; }
	echo "$frags" | while IFS= read -r fr; do
		[ -z "$fr" ] || grep '^pcc-run:' "$tmp/se" | grep -qF -- "$fr" || { echo "missing: $fr" >&2; exit 1; }
	done || return 1
	[ "$(grep -c '^pcc-run:' "$tmp/se")" -eq 1 ] || { cat "$tmp/se" >&2; echo "not one pcc-run: line" >&2; return 1; }
}

if [ "$mode" = refusals ]; then
	check "pcc compiles gpt_op17 for 1x2:h100 (PTX) and for cpu:2" sh -c "
	  '$pcc' '$gi/model.onnx' --cluster 1x2:h100 -o '$tmp/g.bin' >/dev/null &&
	  '$pcc' '$gi/model.onnx' --cluster cpu:2 -o '$tmp/c.bin' >/dev/null"
	check "without a usable GPU a GPU plan is refused at start, naming its cluster and --device cpu" \
		refused_run 2 "g.bin is for GPUs (cluster 1x2:h100)" "--device cpu" -- "$tmp/g.bin" -i "$gi/test_data_set_0" -o "$tmp/never"
	check "--device cpu runs the GPU plan on CPU ranks; its outputs equal PyTorch's" sh -c "
	  $mpi -np 2 '$run' '$tmp/g.bin' --device cpu -i '$gi/test_data_set_0' -o '$tmp/gout' >/dev/null &&
	  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/gout' '$gi/test_data_set_0'"
	check "--device gpu on a plan without GPU code is refused" \
		refused_run 2 "c.bin has no GPU code" -- "$tmp/c.bin" --device gpu -i "$gi/test_data_set_0" -o "$tmp/never"
	check "an unknown --device is refused" \
		refused_run 2 "--device tpu: expected auto, cpu or gpu" -- "$tmp/c.bin" --device tpu -i "$gi/test_data_set_0"
	tap_done
fi

# ---- on a GPU, or on the checking stand-in for one
if [ "$mode" = standin ]; then
	# every driver, cuBLASLt and NCCL call checked (runtime/gpu_standin.h);
	# no cubin cache of a real GPU's is read; plans for cpu:N made with
	# pinned host figures (host_pin.sh), in that cache directory
	export PCC_GPU_STANDIN=1
	unset CUDA_VISIBLE_DEVICES # the stand-in reads it as the driver does
	. "$(dirname "$0")/host_pin.sh"
	pin_host "$pcc" "$tmp/cache" || { echo "Bail out! cannot pin the host figures"; exit 1; }
fi

# infer NAME DIR RANKS CLUSTER [compile options]: outputs on GPUs equal
# PyTorch's. (sh has no local variables: the functions' names are their own.)
infer() {
	i_name=$1 i_dir=$2 i_np=$3 i_cl=$4
	shift 4
	check "$i_name: compiled for $i_cl $*, run on $i_np GPU$([ "$i_np" = 1 ] || echo s), its outputs equal PyTorch's" sh -c "
	  '$pcc' '$i_dir/model.onnx' --cluster $i_cl $* -o '$tmp/i.bin' >/dev/null &&
	  $mpi -np $i_np '$run' '$tmp/i.bin' --device gpu -i '$i_dir/test_data_set_0' -o '$tmp/i.out' >&2 &&
	  '$cmp' --rtol 1e-3 --atol 1e-4 '$tmp/i.out' '$i_dir/test_data_set_0'"
}
for m in "$models"/*/; do
	m=${m%/}
	name=$(basename "$m")
	[ -f "$m/model.onnx" ] && [ -d "$m/test_data_set_0" ] && [ -f "$m/test_data_set_0/output_0.pb" ] || continue
	dims= # symbolic batch and sequence: bound as the fixture's test data are
	case $name in gpt_dyn_*) dims="--dim batch=2 --dim seq=8" ;; esac
	infer "$name" "$m" 1 1x1:h100 $dims
done

# steps NP DEVICE PLAN DATA OUT: the loss and gradient norm of 3 steps, a
# line each, and the trained model in OUT.onnx.
steps() {
	$mpi -np "$1" "$run" "$3" --device "$2" --data "$4" --steps 3 --save-onnx "$5.onnx" >"$5.log" || return 1
	awk '/^step / { for (i = 1; i < NF; i++) { if ($i == "loss") l = $(i + 1); if ($i == "grad_norm") g = $(i + 1) } print l, g }' "$5.log"
}
# same_steps NP PLAN DATA: 3 steps on GPUs log the CPU ranks' losses and
# gradient norms (1e-4 relative) and end with the same parameters.
same_steps() {
	a=$(steps "$1" cpu "$2" "$3" "$tmp/cpu") && b=$(steps "$1" gpu "$2" "$3" "$tmp/gpu") || return 1
	echo "cpu: $a; gpu: $b" | tr '\n' ' ' >&2
	echo >&2
	[ "$(echo "$a" | wc -l)" -eq 3 ] && [ "$(echo "$b" | wc -l)" -eq 3 ] || return 1
	printf '%s\n%s\n' "$a" "$b" | awk 'NR <= 3 { l[NR] = $1; g[NR] = $2; next }
	  function off(x, y) { d = x - y; if (d < 0) d = -d; return d > 1e-4 * (y < 0 ? -y : y) + 1e-6 }
	  { k = NR - 3; if ($1 != $1 + 0 || off($1, l[k]) || off($2, g[k])) bad = 1 } END { exit bad }' || return 1
	"$cmp" --onnx --rtol 1e-3 --atol 1e-5 "$tmp/gpu.onnx" "$tmp/cpu.onnx" >&2
}
# trainer NAME DIR RANKS CLUSTER MICRO OPTIMIZER [compile options]
trainer() {
	t_name=$1 t_dir=$2 t_np=$3 t_cl=$4 t_mb=$5 t_opt=$6
	shift 6
	t_loss=$(sed -n 's/.*"loss": "\([^"]*\)".*/\1/p' "$t_dir/train.json" | head -1)
	t_lossopt=
	[ "$t_loss" = model ] || t_lossopt="--loss $t_loss"
	check "$t_name: 3 $t_opt steps on $t_np GPU$([ "$t_np" = 1 ] || echo s) ($t_cl $*, $t_mb micro-batches) log the CPU ranks' losses and end with their parameters" \
		train_run "$@"
}
train_run() {
	"$pcc" "$t_dir/model.onnx" --cluster "$t_cl" --train $t_lossopt --optimizer "$t_opt" --lr 0.01 \
		--micro-batches "$t_mb" --codegen all "$@" -o "$tmp/t.bin" >/dev/null &&
		same_steps "$t_np" "$tmp/t.bin" "$t_dir/test_data_set_0"
}
for t in "$train"/*/; do
	t=${t%/}
	name=$(basename "$t")
	[ -f "$t/train.json" ] && [ -d "$t/test_data_set_0" ] || continue
	for mb in 1 2; do
		trainer "$name" "$t" 1 1x1:h100 "$mb" adamw
	done
done

if [ "$mode" = standin ]; then
	# the NCCL paths: pipelines and sharded meshes on 2, 4 and 8 GPUs, the
	# shardings a CPU cluster's costs pick (all-gathers, reduce-scatters)
	infer gpt_op17 "$models/gpt_op17" 2 1x2:h100 --stages 2
	infer gpt_op17 "$models/gpt_op17" 4 1x4:h100 --stages 2 --mesh 1x2
	infer bert_op17 "$models/bert_op17" 4 1x4:h100 --stages 4
	infer vit_op17 "$models/vit_op17" 8 1x8:h100 --stages 2 --mesh 2x2
	for m in gpt_op17 bert_op17 resnet_op17 vit_op17 unet_op17 moe_op17; do
		for np in 2 4 8; do
			infer "$m" "$models/$m" "$np" "cpu:$np" --codegen all
		done
	done
	# momentum where gradients are reduced across ranks: Adam turns the
	# reordering noise of a gradient that is zero in exact arithmetic (an
	# attention key's bias) into updates of +-lr (as test_runtime.sh)
	trainer gpt "$train/gpt" 2 1x2:h100 2 adamw --stages 2
	trainer bert "$train/bert" 4 1x4:h100 2 momentum --stages 2 --mesh 1x2
	trainer mlp_loss "$train/mlp_loss" 4 1x4:h100 2 adamw --stages 2 --mesh 2x1
	trainer moe "$train/moe" 2 1x2:h100 2 adamw --stages 2
	trainer vit "$train/vit" 8 1x8:h100 2 momentum --stages 2 --mesh 2x2
	trainer resnet_train "$train/resnet_train" 4 1x4:h100 1 momentum --mesh 4x1
	trainer gpt "$train/gpt" 8 1x8:h100 1 momentum --mesh 1x8
	for t in gpt bert vit resnet_train moe; do
		trainer "$t" "$train/$t" 4 cpu:4 2 momentum
	done
	# --profile: rank 0's kernels by CUDA event time, with the device's peak.
	# --profile=all prints every kernel, so what is checked holds however
	# the times rank them (a sanitizer's build runs some kernels far slower)
	profiled() {
		"$pcc" "$train/gpt/model.onnx" --cluster 1x1:h100 --train --loss cross_entropy:logits,labels \
			--optimizer adamw -o "$tmp/p.bin" >/dev/null &&
			$mpi -np 1 "$run" "$tmp/p.bin" --device "$1" --data "$train/gpt/test_data_set_0" --steps 2 \
				--profile=all >"$tmp/prof" || return 1
		cat "$tmp/prof" >&2
		grep -q "^pcc-run: profile of rank 0 over 2 steps: .* ms of kernels per step, .* ($2" "$tmp/prof" || return 1
		# a row for every kernel the first line counts, none summed away
		pr_n=$(sed -n 's/^pcc-run: profile of rank 0 .* per step, \([0-9]*\) kernels (.*/\1/p' "$tmp/prof")
		pr_rows=$(grep -cE '^ +[0-9.]+ +[0-9.]+% +[0-9]+ .* k[0-9]+ [a-z_+]' "$tmp/prof")
		[ "$pr_rows" -ge 20 ] && [ "$pr_rows" = "$pr_n" ] && ! grep -q 'more kernels)' "$tmp/prof" ||
			{ echo "$pr_rows kernel rows for ${pr_n:-?} kernels" >&2; return 1; }
		# a dot's row holds its bytes (GB/s, and % of the peak where one is
		# known: $3) and FLOP/s figures
		grep -qE "^ +[0-9.]+ +[0-9.]+% +[0-9]+ +[0-9]+ +$3 +[0-9]+\.[0-9]+ +k[0-9]+ dot bf16\[" "$tmp/prof" ||
			{ echo "no dot bf16 row with GB/s and TFLOP/s figures" >&2; return 1; }
	}
	check "--profile on a GPU: kernels timed by CUDA events, against the device memory's peak" \
		profiled gpu "CUDA events; device memory peak 3352 GB/s" '[0-9.]+%'
	check "--profile on a CPU rank: kernels timed by the host's clock" profiled cpu "host clock" -
	# --profile=N: the N slowest kernels, the rest summed in one line
	profiled_top() {
		$mpi -np 1 "$run" "$tmp/p.bin" --device cpu --data "$train/gpt/test_data_set_0" --steps 1 \
			--profile=5 >"$tmp/prof5" || return 1
		cat "$tmp/prof5" >&2
		pr_n=$(sed -n 's/^pcc-run: profile of rank 0 .* per step, \([0-9]*\) kernels (.*/\1/p' "$tmp/prof5")
		[ "$(grep -cE ' k[0-9]+ [a-z_+]' "$tmp/prof5")" -eq 5 ] &&
			grep -qE "^ +[0-9.]+ +[0-9.]+% +\($((pr_n - 5)) more kernels\)$" "$tmp/prof5"
	}
	check "--profile=5: the 5 slowest kernels, a line for the rest" profiled_top
	# nothing of these training steps runs on the host: bf16, the default
	# of H100s and A100s, and f16, V100s' (with its loss scaling)
	on_device() {
		"$pcc" "$train/$1/model.onnx" --cluster "1x1:$3" --train $2 --optimizer adamw -o "$tmp/d.bin" >/dev/null &&
			$mpi -np 1 "$run" "$tmp/d.bin" --data "$train/$1/test_data_set_0" --steps 1 >"$tmp/d.log" || return 1
		! grep 'ran on the host' "$tmp/d.log" >&2
	}
	for t in gpt:cross_entropy:logits,labels bert:mse:pooled,target vit:cross_entropy:logits,labels \
		resnet_train:cross_entropy:logits,labels moe:mse:y,target tinytext:; do
		dn=${t%%:*} dl=${t#*:} # (n is tap.sh's count)
		check "$dn: a bf16 training step runs every kernel on the GPU (none on the host)" \
			on_device "$dn" "${dl:+--loss $dl}" h100
		check "$dn: an f16 training step (V100) runs every kernel on the GPU (none on the host)" \
			on_device "$dn" "${dl:+--loss $dl}" v100
	done
	# PTX for the cluster's GPUs only, in modules of 64 kernels (8 at most)
	# compiled in parallel that the driver links into one: an A100 plan
	# (sm_80) runs on sm_90 GPUs too; an H100 plan (sm_90) on an sm_80 GPU
	# is refused in one line
	ptx_of() {
		"$pcc" "$train/gpt/model.onnx" --cluster "$1" --train --loss cross_entropy:logits,labels \
			--optimizer adamw -o "$tmp/$2.bin" >/dev/null &&
			"$pcc" inspect "$tmp/$2.bin" | grep -q "GPU (PTX $3); " || {
			"$pcc" inspect "$tmp/$2.bin" | grep PTX >&2
			return 1
		}
	}
	check "gpt training for 1x1:a100: sm_80 PTX only, its 154 kernels in 3 modules" ptx_of 1x1:a100 a "sm_80 in 3 modules"
	check "gpt training for 1x1:h100: sm_90 PTX only, in 3 modules" ptx_of 1x1:h100 h "sm_90 in 3 modules"
	check "gpt_op17 for a GPU of no known kind (--codegen ptx on cpu:1): sm_80 and sm_90" sh -c "
	  '$pcc' '$gi/model.onnx' --cluster cpu:1 --codegen ptx -o '$tmp/b.bin' >/dev/null &&
	  '$pcc' inspect '$tmp/b.bin' | grep -q 'GPU (PTX sm_80 sm_90); '"
	check "the A100 plan's 3 modules, linked, train on an sm_90 GPU as on CPU ranks" \
		same_steps 1 "$tmp/a.bin" "$train/gpt/test_data_set_0"
	check "the H100 plan on an sm_80 GPU is refused in one line" sh -c "
	  PCC_GPU_STANDIN_SM=80 $mpi -np 1 '$run' '$tmp/h.bin' --data '$train/gpt/test_data_set_0' --steps 1 2>'$tmp/e' >/dev/null
	  test \$? -ne 0 && grep -q \"the plan's PTX is for sm_90 only, which pcc GPU stand-in (sm_80) cannot run\" '$tmp/e'"
	check "the A100 plan runs on an sm_80 GPU" sh -c "
	  PCC_GPU_STANDIN_SM=80 $mpi -np 1 '$run' '$tmp/a.bin' --data '$train/gpt/test_data_set_0' --steps 1 >/dev/null"
	# ranks on a host from MPI itself (MPI_COMM_TYPE_SHARED), not Open MPI's
	# variables, which srun and MPICH do not set: 4 ranks and 2 GPUs refused
	nolocal="env -u OMPI_COMM_WORLD_LOCAL_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK"
	check "compiles gpt_op17 for 1x4:h100" \
		sh -c "'$pcc' '$models/gpt_op17/model.onnx' --cluster 1x4:h100 -o '$tmp/g4.bin' >/dev/null"
	check "4 ranks on a host with 2 GPUs are refused without Open MPI's local-rank variables" sh -c "
	  PCC_GPU_STANDIN_DEVICES=2 $mpi -np 4 $nolocal '$run' '$tmp/g4.bin' -i '$models/gpt_op17/test_data_set_0' 2>'$tmp/e'
	  test \$? -ne 0 && grep -q '4 ranks run on this host but it has 2 GPUs' '$tmp/e'"
	check "4 ranks on a host with 4 GPUs run without them" sh -c "
	  PCC_GPU_STANDIN_DEVICES=4 $mpi -np 4 $nolocal '$run' '$tmp/g4.bin' -i '$models/gpt_op17/test_data_set_0' \
	    -o '$tmp/g4.out' >/dev/null && '$cmp' --rtol 1e-3 --atol 1e-4 '$tmp/g4.out' '$models/gpt_op17/test_data_set_0'"
	# srun --gpus-per-task=1: each task sees one of the host's GPUs, its own
	# (CUDA_VISIBLE_DEVICES set per task; here from Open MPI's local rank)
	check "4 ranks that each see one GPU (CUDA_VISIBLE_DEVICES per task, as srun --gpus-per-task=1) run" sh -c "
	  PCC_GPU_STANDIN_DEVICES=4 $mpi -np 4 sh -c 'CUDA_VISIBLE_DEVICES=\$OMPI_COMM_WORLD_LOCAL_RANK exec $nolocal \"\$0\" \"\$@\"' \
	    '$run' '$tmp/g4.bin' -i '$models/gpt_op17/test_data_set_0' -o '$tmp/g1.out' >/dev/null &&
	  '$cmp' --rtol 1e-3 --atol 1e-4 '$tmp/g1.out' '$models/gpt_op17/test_data_set_0'"
	check "a rank shown no GPU (CUDA_VISIBLE_DEVICES lists none of the host's) is refused in one line" sh -c "
	  '$pcc' '$models/gpt_op17/model.onnx' --cluster 1x1:h100 -o '$tmp/g1.bin' >/dev/null &&
	  { PCC_GPU_STANDIN_DEVICES=4 CUDA_VISIBLE_DEVICES=4 $mpi -np 1 '$run' '$tmp/g1.bin' \
	    -i '$models/gpt_op17/test_data_set_0' 2>'$tmp/e' >/dev/null
	  test \$? -ne 0 && grep -q 'no CUDA device is visible' '$tmp/e'; }"
	# a fault in rank 1 of a 2-GPU pipeline (its NCCL sends and receives):
	# the job stops within seconds with one line, rank 1's, naming what
	# failed. A fault the ranks agree on (a checkpoint rank 1 cannot write)
	# stops every rank without MPI_Abort, each aborting its NCCL
	# communicators (NCCL's way after an error); the stand-in names any
	# communicator left at MPI_Finalize.
	faulty() { # FAULT agree|abort FRAGMENT... -- ARGS
		f_fault=$1 f_how=$2
		shift 2
		f_frags=
		while [ "$1" != -- ]; do f_frags="$f_frags$1
"; shift; done
		shift
		rm -rf "$tmp/fck"
		f_t0=$(date +%s)
		PCC_RUN_FAULT=$f_fault $mpi -np 2 "$run" "$tmp/f2.bin" --data "$train/gpt/test_data_set_0" --steps 2 \
			--timeout 20 "$@" >"$tmp/fo" 2>"$tmp/fe" && { echo "exit status 0" >&2; return 1; }
		cat "$tmp/fe" >&2
		[ $(($(date +%s) - f_t0)) -lt 30 ] || { echo "took too long" >&2; return 1; }
		[ "$(grep -c '^pcc-run:' "$tmp/fe")" -eq 1 ] || { echo "not one pcc-run: line" >&2; return 1; }
		echo "$f_frags" | while IFS= read -r fr; do
			[ -z "$fr" ] || grep '^pcc-run:' "$tmp/fe" | grep -qF -- "$fr" || { echo "missing: $fr" >&2; exit 1; }
		done || return 1
		! grep 'neither destroyed nor aborted' "$tmp/fe" >&2 || return 1
		[ "$f_how" = abort ] || ! grep 'MPI_ABORT' "$tmp/fe" >&2
	}
	check "compiles gpt's training for 1x2:h100 in 2 stages" sh -c "
	  '$pcc' '$train/gpt/model.onnx' --cluster 1x2:h100 --train --loss cross_entropy:logits,labels \
	    --optimizer adamw --stages 2 -o '$tmp/f2.bin' >/dev/null"
	check "rank 1 of 2 GPUs cannot write its checkpoint: both ranks stop, rank 1 names why, no communicator left" \
		faulty 1:ckpt:enospc:1 agree "pcc-run: rank 1: step 1: cannot save the checkpoint of step 1" \
		"No space left on device" -- --checkpoint "$tmp/fck" --checkpoint-every 1
	check "a fault in rank 1 of 2 GPUs mid-step: the job stops, one line names rank 1, the step and the fault" \
		faulty 1:5:error abort "pcc-run: rank 1: step 1: micro-batch 0: instruction 5 (" "injected fault" --
	# rank 1 hangs mid-step: rank 0, whose GPU waits for rank 1's NCCL
	# send, times out naming rank 1 and where it is (what each rank last
	# published), not "a peer rank may have stopped"
	hung() {
		PCC_RUN_FAULT=1:5:hang $mpi -np 2 "$run" "$tmp/f2.bin" --data "$train/gpt/test_data_set_0" --steps 2 \
			--timeout 3 >"$tmp/ho" 2>"$tmp/he" && { echo "exit status 0" >&2; return 1; }
		cat "$tmp/he" >&2
		grep '^pcc-run: rank 0:' "$tmp/he" | grep -q 'rank 1 seems hung: at step 1, micro-batch 0, instruction 5'
	}
	check "rank 1 of 2 GPUs hangs: rank 0's timeout names rank 1 and its instruction" hung
fi
tap_done
