#!/bin/sh
# test_ckpt_hosts.sh PCC PCC_RUN: checkpoints of a run on two hosts without
# a shared file system, as docs/launching.md states them (TAP; exit 77,
# skipped, where this process may not make mount namespaces: unshare -m
# and mount --bind need root or a user namespace that allows them).
#
# Two hosts are stood for by mount namespaces: ranks 0 and 1 ("host A")
# see folder A at the checkpoint path, ranks 2 and 3 ("host B") folder B;
# MPI's shared memory still joins them. A 4-rank data-parallel training
# plan (resnet_train on a 4x1 mesh):
# - --checkpoint at a path host B lacks: refused at start, in one line by
#   rank 2, before any step;
# - the path made on both hosts: the first save fails in one line naming
#   rank 2's file (step-N.tmp is on host A only), exit 1, and host A's
#   folder holds no step-N and no LATEST;
# - a checkpoint saved on one host, copied whole to both: --resume from it
#   continues with the losses of an uninterrupted run, byte for byte;
# - copies of each host's own rank files only: refused, no step run.
pcc=$1 run=$2
train=$(dirname "$0")/train
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"

mkdir -p "$tmp/A" "$tmp/B" "$tmp/ck"
if ! unshare -m sh -c "mount --bind '$tmp/A' '$tmp/ck'" 2>/dev/null; then
	echo "1..0 # SKIP cannot make mount namespaces here (unshare -m, mount --bind)"
	exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"
# hosts PROGRAM ARGS...: a rank's view of $tmp/ck, by its rank
cat >"$tmp/hosts" <<EOF
#!/bin/sh
h=A
[ "\${OMPI_COMM_WORLD_RANK:-0}" -lt 2 ] || h=B
exec unshare -m sh -c 'mount --bind "\$0" "\$1" && shift && exec "\$@"' "$tmp/\$h" "$tmp/ck" "\$@"
EOF
chmod +x "$tmp/hosts"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; }

rn=$train/resnet_train
data="--data $rn/test_data_set_0"
check "resnet_train compiles for a 4x1 mesh of cpu:4" sh -c "
  '$pcc' '$rn/model.onnx' --cluster cpu:4 --train --optimizer momentum --lr 0.01 \
    --loss cross_entropy:logits,labels --mesh 4x1 --micro-batches 2 -o '$tmp/dp.bin' >/dev/null"
p=$tmp/dp.bin

check "a --checkpoint folder host B lacks is refused at start by rank 2, in one line" sh -c "
  ! $mpi -np 4 '$tmp/hosts' '$run' '$p' $data --timeout 30 --steps 4 --checkpoint '$tmp/ck/run' \
    >'$tmp/o1' 2>'$tmp/e1' &&
  grep -q '^pcc-run: rank 2: --checkpoint $tmp/ck/run: No such file or directory\$' '$tmp/e1' &&
  ! grep -q '^step ' '$tmp/o1'"

check "a folder made on both hosts: the first save fails in one line naming rank 2's file, exit 1, nothing saved" sh -c "
  ! $mpi -np 4 '$tmp/hosts' '$run' '$p' $data --timeout 30 --steps 4 --checkpoint '$tmp/ck' \
    --checkpoint-every 2 >'$tmp/o2' 2>'$tmp/e2' &&
  grep -q '^pcc-run: rank 2: step 2: cannot save the checkpoint of step 2 .*$tmp/ck/step-00000002.tmp/rank-00002.bin.tmp: cannot create: No such file or directory\$' '$tmp/e2' &&
  test \$(grep -c '^step ' '$tmp/o2') -eq 2 &&
  test ! -e '$tmp/A/step-00000002' && test ! -e '$tmp/A/LATEST'"

check "a checkpoint copied whole to both hosts resumes with an uninterrupted run's losses, byte for byte" sh -c "
  $mpi -np 4 '$run' '$p' $data --timeout 30 --steps 4 >'$tmp/whole' &&
  $mpi -np 4 '$run' '$p' $data --timeout 30 --steps 2 --checkpoint '$tmp/shared' >/dev/null &&
  rm -rf '$tmp/A' '$tmp/B' && cp -a '$tmp/shared' '$tmp/A' && cp -a '$tmp/shared' '$tmp/B' &&
  $mpi -np 4 '$tmp/hosts' '$run' '$p' $data --timeout 30 --steps 4 --resume '$tmp/ck' >'$tmp/res' &&
  grep -q 'resumed from $tmp/ck/step-00000002' '$tmp/res' &&
  grep '^step [34]/4 ' '$tmp/whole' | awk '{ print \$2, \$4, \$6 }' >'$tmp/want' &&
  grep '^step ' '$tmp/res' | awk '{ print \$2, \$4, \$6 }' >'$tmp/got' &&
  test -s '$tmp/want' && cmp '$tmp/want' '$tmp/got' >&2"

check "copies of each host's own rank files only are refused, no step run" sh -c "
  rm -f '$tmp'/A/step-*/rank-0000[23].bin '$tmp'/B/step-*/rank-0000[01].bin &&
  ! $mpi -np 4 '$tmp/hosts' '$run' '$p' $data --timeout 30 --steps 4 --resume '$tmp/ck' >'$tmp/o5' 2>'$tmp/e5' &&
  grep -q 'no loadable checkpoint' '$tmp/e5' && ! grep -q '^step ' '$tmp/o5'"
tap_done
