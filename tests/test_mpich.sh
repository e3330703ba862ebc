#!/bin/sh
# test_mpich.sh PCC PCC_RUN PCC_RUN_MPICH PB_CMP: pcc-run under MPICH
# (TAP; exit 77, skipped, where the build has no pcc-run-mpich or the
# machine no mpiexec.mpich: scripts/install-deps installs Debian's mpich).
#
# pcc-run-mpich is pcc-run linked with MPICH alone (runtime/meson.build).
# Under MPICH's launcher (hydra, mpiexec.mpich -n 4), with no Open MPI
# variable in the ranks' environment, on one host:
# - rank 0 finds itself local rank 0 of 4 (MPI_COMM_TYPE_SHARED; --profile
#   says so), as under Open MPI's mpirun;
# - a data-parallel training plan (resnet_train on a 4x1 mesh: all-reduces
#   and all-gathers) and a pipelined one (gpt, 2 stages of 2 ranks, 4
#   micro-batches: sends and receives) log the same losses and save the
#   same parameters as pcc-run under Open MPI, byte for byte, and the
#   losses are pcc train's (1e-5 relative); a pipelined inference plan
#   writes the same outputs byte for byte, and pcc eval's within 1e-5 +
#   1e-4 relative;
# - a plan for 4 devices on 2 ranks is refused in one line, and the job
#   ends; each MPI's program under the other's launcher (each process a
#   world of one) is refused in one line naming its MPI and the program
#   to use.
# Plans are made with pinned host figures (host_pin.sh).
pcc=$1 run=$2 runm=$3 cmp=$4
train=$(dirname "$0")/train
models=$(dirname "$0")/models
if [ -z "$runm" ] || [ ! -x "$runm" ]; then
	echo "1..0 # SKIP pcc-run-mpich was not built (no MPICH at configure time: scripts/install-deps installs it)"
	exit 77
fi
command -v mpiexec.mpich >/dev/null ||
	{ echo "1..0 # SKIP no mpiexec.mpich (scripts/install-deps installs mpich)"; exit 77; }
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"

# Open MPI's mpirun as test_runtime.sh runs it; MPICH's with every OMPI_
# and PMIX_ variable taken out of the environment (local ranks must come
# from MPI itself), forked on this host
ompi="env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader"
ompi="$ompi OMPI_MCA_btl_vader_single_copy_mechanism=none timeout 120 mpirun --oversubscribe"
mpich="env $(env | sed -n 's/^\(\(OMPI\|PMIX\)_[A-Za-z0-9_]*\)=.*/-u \1/p' | tr '\n' ' ') timeout 120 mpiexec.mpich -launcher fork"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; }

check "pcc-run-mpich links MPICH's libmpich and not Open MPI's libmpi; pcc-run the other way round" sh -c "
  ldd '$runm' >'$tmp/ldd_m' && ldd '$run' >'$tmp/ldd_o' &&
  grep -q 'libmpich\\.so' '$tmp/ldd_m' && ! grep 'libmpi\\.so' '$tmp/ldd_m' >&2 &&
  grep -q 'libmpi\\.so' '$tmp/ldd_o' && ! grep 'libmpich\\.so' '$tmp/ldd_o' >&2"
check "mpiexec.mpich's 4 ranks carry MPICH's PMI_RANK and no Open MPI variable" sh -c "
  $mpich -n 4 sh -c 'echo rank \$PMI_RANK; env | grep \"^OMPI_\"; true' >'$tmp/env' &&
  test \$(grep -c '^rank [0-3]\$' '$tmp/env') -eq 4 && ! grep OMPI_ '$tmp/env' >&2"

loss="--loss cross_entropy:logits,labels"
topts="--optimizer momentum --lr 0.01 $loss"
opts="--train $topts"
check "the plans compile (resnet_train on a 4x1 mesh, gpt in 2 stages of 2 ranks, gpt_op17 inference in 2 stages)" sh -c "
  '$pcc' '$train/resnet_train/model.onnx' --cluster cpu:4 $opts --mesh 4x1 --micro-batches 2 -o '$tmp/dp.bin' >/dev/null &&
  '$pcc' '$train/gpt/model.onnx' --cluster cpu:4 $opts --stages 2 --micro-batches 4 -o '$tmp/pp.bin' >/dev/null &&
  '$pcc' '$models/gpt_op17/model.onnx' --cluster cpu:4 --stages 2 -o '$tmp/pi.bin' >/dev/null"

# losses FILE: the loss of each line of a --log-json file, one a line
losses() {
	sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1"
}

# trains NAME PLAN DATA MICRO: 3 steps under Open MPI and under MPICH;
# the same losses and saved parameters, byte for byte, and pcc train's
# losses (the same optimizer, MICRO micro-batches as --accum).
trains() {
	"$pcc" train "$train/$3/model.onnx" -i "$train/$3/test_data_set_0" $topts --accum "$4" --steps 3 \
		--log-json "$tmp/$1_ref.jsonl" >/dev/null 2>&1 || { echo "pcc train failed" >&2; return 1; }
	$ompi -np 4 "$run" "$2" --timeout 60 --threads 1 --profile --data "$train/$3/test_data_set_0" --steps 3 \
		--log-json "$tmp/$1_o.jsonl" --save-onnx "$tmp/$1_o.onnx" >"$tmp/$1_o.log" || { echo "Open MPI run failed" >&2; return 1; }
	$mpich -n 4 "$runm" "$2" --timeout 60 --threads 1 --profile --data "$train/$3/test_data_set_0" --steps 3 \
		--log-json "$tmp/$1_m.jsonl" --save-onnx "$tmp/$1_m.onnx" >"$tmp/$1_m.log" || { echo "MPICH run failed" >&2; return 1; }
	for w in ref o m; do losses "$tmp/$1_$w.jsonl" >"$tmp/$1_$w.loss"; done
	test "$(wc -l <"$tmp/$1_m.loss")" -eq 3 || { echo "MPICH: not 3 losses logged" >&2; return 1; }
	cmp "$tmp/$1_o.loss" "$tmp/$1_m.loss" >&2 || { paste "$tmp/$1_o.loss" "$tmp/$1_m.loss" >&2; return 1; }
	cmp "$tmp/$1_o.onnx" "$tmp/$1_m.onnx" >&2 || return 1
	paste "$tmp/$1_m.loss" "$tmp/$1_ref.loss" | awk '{ d = $1 - $2; if (d < 0) d = -d
	  if (NF != 2 || d > 1e-5 * ($2 < 0 ? -$2 : $2)) { print "loss " $1 " vs pcc train " $2; bad = 1 } } END { exit bad }' >&2
}

# local4 NAME: both runs' --profile says rank 0 is local rank 0 of 4.
local4() {
	for w in o m; do
		grep -q '^pcc-run: profile of rank 0 .*; local rank 0 of 4 on its host' "$tmp/$1_$w.log" ||
			{ grep -h '^pcc-run: profile' "$tmp/$1_$w.log" >&2; echo "($w)" >&2; return 1; }
	done
}

check "resnet_train data-parallel on 4 ranks: MPICH's losses and parameters are Open MPI's byte for byte, the losses pcc train's" \
	trains dp "$tmp/dp.bin" resnet_train 2
check "... and rank 0 is local rank 0 of 4 on its host under MPICH without Open MPI's variables, as under Open MPI" local4 dp
check "gpt in 2 pipeline stages of 2 ranks: MPICH's losses and parameters are Open MPI's byte for byte, the losses pcc train's" \
	trains pp "$tmp/pp.bin" gpt 4

d=$models/gpt_op17/test_data_set_0
check "gpt_op17 inference in 2 stages on 4 ranks: MPICH's outputs are Open MPI's byte for byte, and pcc eval's" sh -c "
  '$pcc' eval '$models/gpt_op17/model.onnx' -i '$d' -o '$tmp/pi_ref' >/dev/null &&
  $ompi -np 4 '$run' '$tmp/pi.bin' --timeout 60 --threads 1 -i '$d' -o '$tmp/pi_o' >/dev/null &&
  $mpich -n 4 '$runm' '$tmp/pi.bin' --timeout 60 --threads 1 -i '$d' -o '$tmp/pi_m' >/dev/null &&
  ls '$tmp/pi_o' >'$tmp/pi_names' && test -s '$tmp/pi_names' &&
  for f in \$(cat '$tmp/pi_names'); do cmp '$tmp/pi_o/'\$f '$tmp/pi_m/'\$f >&2 || exit 1; done &&
  '$cmp' --rtol 1e-4 --atol 1e-5 '$tmp/pi_m' '$tmp/pi_ref' >&2"

check "under MPICH a plan for 4 devices on 2 ranks is refused in one line and the job ends" sh -c "
  ! $mpich -n 2 '$runm' '$tmp/dp.bin' --timeout 30 --data '$train/resnet_train/test_data_set_0' >/dev/null 2>'$tmp/ws' &&
  grep -q 'plan compiled for 4 devices (cluster cpu:4), run with 2 ranks' '$tmp/ws'"
# each MPI's program under the other's launcher: every process a world of
# one, which the world-size refusal names with the fix
foreign="the launcher started 2 processes but each is alone in its MPI world; this program is linked with"
check "pcc-run (Open MPI) under mpiexec.mpich: refused in one line naming Open MPI and pcc-run-mpich" sh -c "
  ! $mpich -n 2 '$run' '$tmp/dp.bin' --timeout 30 --data '$train/resnet_train/test_data_set_0' >/dev/null 2>'$tmp/f1' &&
  grep -q 'run with 1 ranks: $foreign Open MPI v[0-9].*MPICH.s mpiexec pcc-run-mpich' '$tmp/f1'"
check "pcc-run-mpich under Open MPI's mpirun: refused in one line naming MPICH and pcc-run" sh -c "
  ! $ompi -np 2 '$runm' '$tmp/dp.bin' --timeout 30 --data '$train/resnet_train/test_data_set_0' >/dev/null 2>'$tmp/f2' &&
  grep -q 'run with 1 ranks: $foreign MPICH [0-9].*Open MPI.s mpirun runs pcc-run' '$tmp/f2'"
tap_done
