#!/bin/sh
# test_runtime_ckpt.sh PCC PCC_RUN PB_CMP: pcc-run's checkpoints (TAP).
#
# 1. Kill and resume: a run killed between checkpoints and resumed ends
#    bit for bit where an uninterrupted run ends; a checkpoint loads on
#    another mesh; the newest two are kept.
# 2. Corrupt at start: a shard failing its checksum, a shard cut short, a
#    shard file gone, a manifest that does not parse: the checkpoint before
#    it is loaded, with a warning naming the file; none left is an error; a
#    half-written one (a crash mid-save) is ignored; another model's is
#    refused.
# 3. Disk full while saving (issue 12): PCC_RUN_FAULT=R:ckpt:enospc:S makes
#    rank R's file of the checkpoint after step S find the disk full half
#    way; and a real limit, RLIMIT_FSIZE (ulimit -f) below a shard's size,
#    makes every rank's write fail with EFBIG. Each time: exit non-zero,
#    exactly one "pcc-run:" line naming the rank, the step, the file and
#    the cause; every rank stops by itself (no MPI_Abort); no step-S or
#    step-S.tmp directory is left, LATEST still names the checkpoint before,
#    which is intact: a restart resumes from it and ends bit for bit where
#    an uninterrupted run ends.
# 4. LATEST and replacing a checkpoint (issue 8): --resume DIR takes what
#    LATEST names (a run restarted from scratch into a DIR of an older run
#    resumes from its own step 1, not the old run's step 4), and when
#    LATEST is missing, corrupt or names no complete checkpoint, the newest
#    complete one with a warning naming LATEST and the one used; a LATEST
#    that cannot be written fails the save as a full disk does and puts the
#    directory back; a step re-saved into the DIR (a run resumed from before
#    it) replaces the old one in one rename, and a crash just before
#    (PCC_RUN_FAULT=0:ckpt:crash:S) leaves the old one complete. Each
#    resume ends bit for bit where the uninterrupted run ends.
# 5. Cleanup never follows a link (issue 40): an old step-N that is a
#    symbolic link to a directory holding a manifest, and a step-N.tmp that
#    is one, are removed as links with a warning, every file of the
#    directories they point to kept; a LATEST.tmp that is a link fails the
#    save, its target unwritten.
# 6. The manifest's step (issue 40): a negative or huge "step" is refused
#    naming the manifest (one line and exit 1 when that checkpoint alone
#    is asked for; else a warning and the one before); resuming a
#    checkpoint past --steps is an error (exit 1) that says so.
# 7. A --checkpoint DIR that cannot be created or is not a directory stops
#    the run before its first step (issue 40), not at its first save.
pcc=$1
run=$2
cmp=$3
train=$(dirname "$0")/train
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; } # host_pin.sh

# Checkpoints: a run killed between checkpoints and resumed ends bit for bit
# where an uninterrupted run ends; a checkpoint loads on another mesh; a
# corrupt newest checkpoint falls back to the one before.
g=$train/gpt
data=$g/test_data_set_0
topts="--train --loss cross_entropy:logits,labels --optimizer adamw --lr 0.01"
"$pcc" "$g/model.onnx" --cluster cpu:4 $topts -o "$tmp/c4.bin" >/dev/null
$mpi -np 4 "$run" "$tmp/c4.bin" --data "$data" --steps 6 --save-onnx "$tmp/full.onnx" >"$tmp/full.log" 2>&1
# killed_resumes: each step says on stderr what went wrong.
killed_resumes() {
	grep -q '^step 6/6' "$tmp/full.log" || { echo "the uninterrupted run failed: $(tail -3 "$tmp/full.log")" >&2; return 1; }
	PCC_RUN_FAULT=2:10:exit:4 $mpi -np 4 "$run" "$tmp/c4.bin" --data "$data" --steps 6 --checkpoint "$tmp/ck" \
		--checkpoint-every 2 >"$tmp/kill.log" 2>&1 && { echo "the faulted run exited 0" >&2; return 1; }
	[ "$(cat "$tmp/ck/LATEST")" = step-00000002 ] || { echo "LATEST: $(cat "$tmp/ck/LATEST")" >&2; return 1; }
	# The other ranks may finish step 4 and start the step-4 save before
	# rank 2's death stops them: a step-4.tmp may be left (a crash mid-save),
	# which the resume must pass over.
	$mpi -np 4 "$run" "$tmp/c4.bin" --data "$data" --steps 6 --resume "$tmp/ck" --save-onnx "$tmp/res.onnx" \
		>"$tmp/res.log" 2>&1 || { echo "the resumed run failed: $(tail -3 "$tmp/res.log")" >&2; return 1; }
	grep -q 'resumed from .* at step 2' "$tmp/res.log" || { echo "not resumed at step 2" >&2; return 1; }
	grep '^step 6/6' "$tmp/res.log" | cut -d' ' -f1-5 >"$tmp/a"
	grep '^step 6/6' "$tmp/full.log" | cut -d' ' -f1-5 >"$tmp/b"
	cmp -s "$tmp/a" "$tmp/b" || { echo "last losses differ: $(cat "$tmp/a") / $(cat "$tmp/b")" >&2; return 1; }
	"$cmp" --onnx --rtol 0 --atol 0 "$tmp/res.onnx" "$tmp/full.onnx" >&2
}
check "checkpoint: a run killed at step 4 (after the step-2 checkpoint) resumes to the uninterrupted run's parameters, bit for bit" \
	killed_resumes
# Resharding is checked with momentum: AdamW turns the last-bit differences
# of two plans' summation orders into lr-sized steps wherever a gradient is
# near zero, so plans that differ only in rounding drift apart by 1e-2.
mopts="--train --loss cross_entropy:logits,labels --optimizer momentum --lr 0.01"
"$pcc" "$g/model.onnx" --cluster cpu:4 $mopts -o "$tmp/m4.bin" >/dev/null
"$pcc" "$g/model.onnx" --cluster cpu:2 --stages 2 --micro-batches 2 $mopts -o "$tmp/m2.bin" >/dev/null
check "checkpoint: one written on 4 ranks resumes on 2 pipeline stages of another plan (resharded)" sh -c "
  $mpi -np 4 '$run' '$tmp/m4.bin' --data '$data' --steps 6 --save-onnx '$tmp/mfull.onnx' >/dev/null &&
  $mpi -np 4 '$run' '$tmp/m4.bin' --data '$data' --steps 2 --checkpoint '$tmp/mck' --checkpoint-every 2 >/dev/null &&
  $mpi -np 2 '$run' '$tmp/m2.bin' --data '$data' --steps 6 --resume '$tmp/mck' --save-onnx '$tmp/res2.onnx' >'$tmp/res2.log' &&
  grep -q 'resumed from .* at step 2' '$tmp/res2.log' &&
  '$cmp' --onnx --rtol 1e-4 --atol 1e-6 '$tmp/res2.onnx' '$tmp/mfull.onnx' >&2"
check "checkpoint: the newest two are kept, older ones removed" sh -c "
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 6 --checkpoint '$tmp/ck2' --checkpoint-every 1 >/dev/null &&
  test \"\$(ls '$tmp/ck2' | tr '\n' ' ')\" = 'LATEST step-00000005 step-00000006 '"
check "checkpoint: a corrupt shard file is detected by checksum and the one before is used" sh -c "
  printf 'X' | dd of='$tmp/ck2/step-00000006/rank-00000.bin' bs=1 seek=20 conv=notrunc 2>/dev/null &&
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 6 --resume '$tmp/ck2' >'$tmp/o' 2>'$tmp/e' &&
  grep -q 'rank-00000.bin: shard of .* fails its checksum (corrupt); trying the checkpoint before it' '$tmp/e' &&
  grep -q 'resumed from .* at step 5' '$tmp/o'"
check "checkpoint: a corrupt manifest is refused with its name, and none left is an error" sh -c "
  echo '{' >'$tmp/ck2/step-00000005/manifest.json' &&
  ! $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 6 --resume '$tmp/ck2' >/dev/null 2>'$tmp/e' &&
  grep -q 'step-00000005/manifest.json: unreadable or corrupt' '$tmp/e' && grep -q 'no loadable checkpoint' '$tmp/e'"
check "checkpoint: a half-written one (a crash mid-save) is ignored, then replaced" sh -c "
  mkdir -p '$tmp/ck3/step-00000004.tmp' && echo junk >'$tmp/ck3/step-00000004.tmp/rank-00000.bin' &&
  cp -r '$tmp/ck/step-00000002' '$tmp/ck3/' &&
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 4 --resume '$tmp/ck3' --checkpoint '$tmp/ck3' >'$tmp/o' &&
  grep -q 'at step 2' '$tmp/o' && test -f '$tmp/ck3/step-00000004/manifest.json' && ! test -e '$tmp/ck3/step-00000004.tmp'"
check "checkpoint: a checkpoint of another model is refused" sh -c "
  '$pcc' '$train/mlp_loss/model.onnx' --cluster cpu:2 --train --optimizer adamw -o '$tmp/m.bin' >/dev/null &&
  ! $mpi -np 2 '$run' '$tmp/m.bin' --data '$train/mlp_loss/test_data_set_0' --resume '$tmp/ck' >/dev/null 2>'$tmp/e' &&
  grep -q 'written for another model' '$tmp/e'"

check "checkpoint: a shard file cut short is detected and the one before is used" sh -c "
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 4 --checkpoint '$tmp/ck4' --checkpoint-every 2 >/dev/null &&
  truncate -s 100 '$tmp/ck4/step-00000004/rank-00000.bin' &&
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 4 --resume '$tmp/ck4' >'$tmp/o' 2>'$tmp/e' &&
  grep -q 'step-00000004/rank-00000.bin: shard of .* is short (.* bytes at offset .*); trying the checkpoint before it' '$tmp/e' &&
  grep -q 'resumed from .* at step 2' '$tmp/o'"
check "checkpoint: a shard file gone is named and the one before is used" sh -c "
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 4 --checkpoint '$tmp/ck5' --checkpoint-every 2 >/dev/null &&
  rm '$tmp/ck5/step-00000004/rank-00000.bin' &&
  $mpi -np 4 '$run' '$tmp/c4.bin' --data '$data' --steps 4 --resume '$tmp/ck5' >'$tmp/o' 2>'$tmp/e' &&
  grep -q 'step-00000004/rank-00000.bin: cannot open: No such file or directory; trying the checkpoint before it' '$tmp/e' &&
  grep -q 'resumed from .* at step 2' '$tmp/o'"

# ---- 3. disk full while saving

# A plan of two pipeline stages: both ranks save shards of their own.
"$pcc" "$g/model.onnx" --cluster cpu:2 --stages 2 $topts -o "$tmp/s2.bin" >/dev/null
$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 6 --save-onnx "$tmp/s2full.onnx" >"$tmp/s2full.log" 2>&1

# full_disk DIR NP FRAGMENTS: the job in $tmp/fd.{out,err} failed at the
# checkpoint of step 4 as the header says; then a restart from DIR resumes
# at step 2 and ends where the uninterrupted run ended.
full_disk() {
	fd_dir=$1 fd_np=$2 fd_frags=$3
	grep '^pcc-run:' "$tmp/fd.err" >"$tmp/line"
	cat "$tmp/line" >&2
	[ "$(wc -l <"$tmp/line")" -eq 1 ] || { echo "not exactly one pcc-run: line" >&2; return 1; }
	printf '%s\n' "$fd_frags" | while IFS= read -r f; do
		grep -F -q -- "$f" "$tmp/line" || { echo "not in the message: $f" >&2; exit 1; }
	done || return 1
	! grep -q MPI_ABORT "$tmp/fd.err" || { echo "MPI_Abort stopped it" >&2; return 1; }
	grep -q '^step 4/6' "$tmp/fd.out" && ! grep -q '^step 5/6' "$tmp/fd.out" ||
		{ echo "not stopped after step 4" >&2; return 1; }
	[ "$(cat "$fd_dir/LATEST")" = step-00000002 ] || { echo "LATEST: $(cat "$fd_dir/LATEST")" >&2; return 1; }
	[ "$(ls "$fd_dir" | tr '\n' ' ')" = 'LATEST step-00000002 ' ] ||
		{ echo "left: $(ls "$fd_dir" | tr '\n' ' ')" >&2; return 1; }
	$mpi -np "$fd_np" "$run" "$tmp/s2.bin" --data "$data" --steps 6 --resume "$fd_dir" --save-onnx "$tmp/fdres.onnx" \
		>"$tmp/fdres.log" 2>&1 || { echo "the restart failed: $(tail -3 "$tmp/fdres.log")" >&2; return 1; }
	grep -q 'resumed from .* at step 2' "$tmp/fdres.log" || { echo "not resumed at step 2" >&2; return 1; }
	! grep -q warning "$tmp/fdres.log" || { echo "$(grep warning "$tmp/fdres.log")" >&2; return 1; }
	"$cmp" --onnx --rtol 0 --atol 0 "$tmp/fdres.onnx" "$tmp/s2full.onnx" >&2
}
for r in 1 0; do
	rm -rf "$tmp/fd$r"
	PCC_RUN_FAULT=$r:ckpt:enospc:4 $mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 6 --checkpoint "$tmp/fd$r" \
		--checkpoint-every 2 >"$tmp/fd.out" 2>"$tmp/fd.err"
	echo $? >"$tmp/fd.rc"
	check "disk full: rank $r's shard file of the step-4 checkpoint runs out of space: exit 1, one line naming the file and the cause" \
		sh -c "test \$(cat '$tmp/fd.rc') -eq 1 && grep -q '^pcc-run: rank $r: step 4: cannot save the checkpoint of step 4 (the checkpoints before it are kept): $tmp/fd$r/step-00000004.tmp/rank-0000$r.bin.tmp: write failed: No space left on device\$' '$tmp/fd.err'"
	check "disk full on rank $r: no step-4 checkpoint (complete or not) left, LATEST names step 2, which resumes bit for bit" \
		full_disk "$tmp/fd$r" 2 "pcc-run: rank $r: step 4:"
done

# A real limit: RLIMIT_FSIZE below a shard file's size (ulimit -f counts
# 512-byte blocks in dash, 1 KiB ones in bash), for the ranks only
# (mpirun's own shared-memory files would pass it; MPI over TCP on the
# loopback keeps the ranks' shared memory out of it too).
limited() {
	rm -rf "$tmp/fl"
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 2 --checkpoint "$tmp/fl" >/dev/null 2>&1 || return 1
	big=$(wc -c <"$tmp/fl/step-00000002/rank-00000.bin")
	[ "$big" -gt 8192 ] || { echo "rank 0's shard file is $big bytes, not over the limit" >&2; return 1; }
	OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo $mpi -np 2 sh -c \
		"ulimit -f 8 && exec '$run' '$tmp/s2.bin' --data '$data' --steps 6 --checkpoint '$tmp/fl' --checkpoint-every 2 --resume '$tmp/fl'" \
		>"$tmp/fd.out" 2>"$tmp/fd.err" && { echo "exit 0" >&2; return 1; }
	grep -q '^pcc-run: rank 0: step 4: cannot save the checkpoint of step 4 .*/step-00000004.tmp/rank-00000.bin.tmp: write failed: File too large$' "$tmp/fd.err" ||
		{ echo "stderr: $(grep pcc-run "$tmp/fd.err")" >&2; return 1; }
	full_disk "$tmp/fl" 2 "File too large"
}
check "a file size limit (ulimit -f 8: 4 or 8 KiB) under the step-4 checkpoint: EFBIG named, step 2 kept and resumed bit for bit" limited

# ---- 4. LATEST decides; LATEST and step-N written atomically (issue 8)

# base: step-2 and step-4 of s2.bin (LATEST on step 4), copied per check.
rm -rf "$tmp/base"
$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 4 --checkpoint "$tmp/base" --checkpoint-every 2 >/dev/null 2>&1
# resumes_at DIR STEP [WARNING]: a resume from DIR says it took step STEP
# (and warns WARNING on stderr, else nothing) and ends 6 steps bit for bit
# where the uninterrupted run ends.
resumes_at() {
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 6 --resume "$1" --save-onnx "$tmp/ra.onnx" \
		>"$tmp/ra.out" 2>"$tmp/ra.err" || { echo "the resume failed: $(tail -3 "$tmp/ra.err")" >&2; return 1; }
	grep 'resumed from' "$tmp/ra.out" >&2
	grep -q "resumed from $1/step-0000000$2 (.*) at step $2\$" "$tmp/ra.out" || { echo "not resumed at step $2" >&2; return 1; }
	if [ -n "$3" ]; then
		grep -F -q -- "$3" "$tmp/ra.err" || { echo "no warning: $3; stderr: $(cat "$tmp/ra.err")" >&2; return 1; }
	else
		! grep -q warning "$tmp/ra.err" || { grep warning "$tmp/ra.err" >&2; return 1; }
	fi
	"$cmp" --onnx --rtol 0 --atol 0 "$tmp/ra.onnx" "$tmp/s2full.onnx" >&2
}
restarted() {
	rm -rf "$tmp/rs" && cp -r "$tmp/base" "$tmp/rs" || return 1
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 1 --checkpoint "$tmp/rs" >/dev/null 2>&1 || return 1
	[ "$(cat "$tmp/rs/LATEST")" = step-00000001 ] && [ -f "$tmp/rs/step-00000001/manifest.json" ] ||
		{ echo "LATEST $(cat "$tmp/rs/LATEST"), left: $(ls "$tmp/rs" | tr '\n' ' ')" >&2; return 1; }
	resumes_at "$tmp/rs" 1
}
check "LATEST decides: a run restarted from scratch into a DIR holding an older run's step 2 and 4 keeps its step 1 and resumes from it, bit for bit" \
	restarted
# fallback HOW WARNING: LATEST broken by HOW; the newest complete, step 4, with the warning.
fallback() {
	rm -rf "$tmp/fb" && cp -r "$tmp/base" "$tmp/fb" && sh -c "$1" || return 1
	resumes_at "$tmp/fb" 4 "$2"
}
check "LATEST missing: the newest complete checkpoint (step 4), with a warning naming LATEST and the one used" \
	fallback "rm '$tmp/fb/LATEST'" "pcc-run: warning: $tmp/fb/LATEST is missing; resuming from the newest complete checkpoint, step-00000004"
check "LATEST corrupt: the newest complete checkpoint, with a warning" \
	fallback "echo 'not a step' >'$tmp/fb/LATEST'" "$tmp/fb/LATEST is corrupt (it should hold one line, step-N); resuming from the newest complete checkpoint, step-00000004"
check "LATEST naming a checkpoint that is not complete (step 6 without its manifest): the newest complete one, with a warning" \
	fallback "mkdir '$tmp/fb/step-00000006' && echo step-00000006 >'$tmp/fb/LATEST'" \
	"$tmp/fb/LATEST names step-00000006, which is not a complete checkpoint (no manifest.json); resuming from the newest complete checkpoint, step-00000004"
latest_unwritable() {
	rm -rf "$tmp/lw" && mkdir "$tmp/lw" && cp -r "$tmp/base/step-00000002" "$tmp/lw/" && echo step-00000002 >"$tmp/lw/LATEST" &&
		mkdir "$tmp/lw/LATEST.tmp" || return 1
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 6 --checkpoint "$tmp/lw" --checkpoint-every 2 --resume "$tmp/lw" \
		>"$tmp/fd.out" 2>"$tmp/fd.err" && { echo "exit 0" >&2; return 1; }
	rmdir "$tmp/lw/LATEST.tmp"
	full_disk "$tmp/lw" 2 "pcc-run: rank 0: step 4: cannot save the checkpoint of step 4 (the checkpoints before it are kept): $tmp/lw/LATEST.tmp: cannot create: Is a directory"
}
check "a LATEST that cannot be written (LATEST.tmp a directory): one line naming it, the step-4 directory taken back, LATEST on step 2, which resumes bit for bit" \
	latest_unwritable
# resave [FAULT]: a run resumed from step-2 of a copy of base saves step 4
# again into it (a crash just before the new step-4 takes its place with
# FAULT); step-4 is complete at the end either way and resumes bit for bit.
resave() {
	rm -rf "$tmp/rv" && cp -r "$tmp/base" "$tmp/rv" || return 1
	env ${1:+PCC_RUN_FAULT=$1} $mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 4 --checkpoint "$tmp/rv" \
		--resume "$tmp/rv/step-00000002" >/dev/null 2>"$tmp/rv.err"
	rv_rc=$?
	if [ -n "$1" ]; then
		[ $rv_rc -ne 0 ] || { echo "the crashed run exited 0" >&2; return 1; }
	else
		[ $rv_rc -eq 0 ] || { echo "the run failed: $(tail -3 "$tmp/rv.err")" >&2; return 1; }
		[ "$(ls "$tmp/rv" | tr '\n' ' ')" = 'LATEST step-00000002 step-00000004 ' ] ||
			{ echo "left: $(ls "$tmp/rv" | tr '\n' ' ')" >&2; return 1; }
	fi
	[ -f "$tmp/rv/step-00000004/manifest.json" ] || { echo "no complete step-4: $(ls "$tmp/rv" | tr '\n' ' ')" >&2; return 1; }
	resumes_at "$tmp/rv" 4
}
check "re-saving step 4 (resumed from step 2 into the same DIR) replaces it: no step-4.tmp or .old left, resumes bit for bit" resave ""
check "a crash as the re-saved step 4 takes its place (PCC_RUN_FAULT=0:ckpt:crash:4): the old step 4 is still complete and resumes bit for bit" \
	resave 0:ckpt:crash:4


# ---- 5. cleanup never follows a link (issue 40)

# users DIR...: directories of a user's files, one of them a manifest.
users() {
	for u; do
		rm -rf "$u" && mkdir "$u" || return 1
		for f in manifest.json rank-00000.bin notes.txt; do echo "the user's $f" >"$u/$f" || return 1; done
	done
}
# intact DIR...: every file users wrote is still there, unchanged.
intact() {
	for u; do
		for f in manifest.json rank-00000.bin notes.txt; do
			[ "$(cat "$u/$f" 2>/dev/null)" = "the user's $f" ] || { echo "$u/$f was removed or written" >&2; return 1; }
		done
	done
}
nofollow() {
	rm -rf "$tmp/nf" && cp -r "$tmp/base" "$tmp/nf" && users "$tmp/u1" "$tmp/u2" "$tmp/u3" || return 1
	ln -s "$tmp/u1" "$tmp/nf/step-00000001" && ln -s "$tmp/u2" "$tmp/nf/step-00000003.tmp" &&
		ln -s "$tmp/u3" "$tmp/nf/step-00000006.tmp" || return 1
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 6 --resume "$tmp/nf" --checkpoint "$tmp/nf" \
		>"$tmp/nf.out" 2>"$tmp/nf.err" || { echo "the run failed: $(tail -3 "$tmp/nf.err")" >&2; return 1; }
	intact "$tmp/u1" "$tmp/u2" "$tmp/u3" || return 1
	[ "$(ls "$tmp/nf" | tr '\n' ' ')" = 'LATEST step-00000004 step-00000006 ' ] ||
		{ echo "left: $(ls "$tmp/nf" | tr '\n' ' ')" >&2; return 1; }
	for l in step-00000001 step-00000003.tmp step-00000006.tmp; do
		grep -q "^pcc-run: warning: $tmp/nf/$l was a symbolic link, not a checkpoint directory: removed it, not what it points to\$" \
			"$tmp/nf.err" || { echo "no warning for $l: $(cat "$tmp/nf.err")" >&2; return 1; }
	done
}
check "cleanup: an old step-N and step-N.tmp that are symbolic links to a user's directories are removed as links, every file they point to kept" \
	nofollow
latest_link() {
	rm -rf "$tmp/ll" && cp -r "$tmp/base" "$tmp/ll" && users "$tmp/u4" && ln -s "$tmp/u4/notes.txt" "$tmp/ll/LATEST.tmp" ||
		return 1
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 6 --resume "$tmp/ll" --checkpoint "$tmp/ll" \
		>/dev/null 2>"$tmp/ll.err" && { echo "exit 0" >&2; return 1; }
	grep -q "^pcc-run: rank 0: step 6: .*$tmp/ll/LATEST.tmp: cannot create: Too many levels of symbolic links\$" "$tmp/ll.err" ||
		{ echo "stderr: $(cat "$tmp/ll.err")" >&2; return 1; }
	intact "$tmp/u4" && [ "$(cat "$tmp/ll/LATEST")" = step-00000004 ]
}
check "cleanup: a LATEST.tmp that is a symbolic link fails the save with its name, the file it points to unwritten" latest_link


# ---- 6. the manifest's step (issue 40)

# bad_step VALUE: step-4's manifest says VALUE; resumed alone it is refused
# in one line naming the manifest; resumed by DIR, step 2 is, with a warning.
bad_step() {
	rm -rf "$tmp/bs" && cp -r "$tmp/base" "$tmp/bs" &&
		sed -i "s/^ \"step\": 4,/ \"step\": $1,/" "$tmp/bs/step-00000004/manifest.json" &&
		grep -q "\"step\": $1," "$tmp/bs/step-00000004/manifest.json" || return 1
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 6 --resume "$tmp/bs/step-00000004" >/dev/null 2>"$tmp/bs.err" &&
		{ echo "exit 0" >&2; return 1; }
	grep '^pcc-run:' "$tmp/bs.err" >"$tmp/line"
	want="pcc-run: rank 0: $tmp/bs/step-00000004/manifest.json: \"step\" $1 is out of range (0 to 1000000000; corrupt)"
	[ "$(cat "$tmp/line")" = "$want" ] || { echo "stderr: $(cat "$tmp/bs.err")" >&2; return 1; }
	resumes_at "$tmp/bs" 2 "pcc-run: rank 0: warning: $tmp/bs/step-00000004/manifest.json: \"step\" $1 is out of range (0 to 1000000000; corrupt); trying the checkpoint before it"
}
check "a manifest with step -1: refused in one line naming it (exit 1); by DIR, the checkpoint before it, bit for bit" bad_step -1
check "a manifest with step 99999999999: refused in one line naming it (exit 1); by DIR, the checkpoint before it, bit for bit" \
	bad_step 99999999999
check "resuming a checkpoint of step 4 with --steps 3: exit 1, the message says the step and what to give" sh -c "
  $mpi -np 2 '$run' '$tmp/s2.bin' --data '$data' --steps 3 --resume '$tmp/base' >'$tmp/o' 2>'$tmp/e'; test \$? -eq 1 &&
  grep -q '^pcc-run: rank 0: resumed at step 4, past --steps 3 (the run.s total, not the steps to add): give --steps above 4 to train on from it\$' '$tmp/e' &&
  ! grep -q '^step' '$tmp/o'"

# ---- 7. a bad --checkpoint DIR, found at the start (issue 40)

echo "a user's file" >"$tmp/afile"
# bad_dir DIR WHAT: exit 1 before step 1, one pcc-run: line naming DIR and WHAT
bad_dir() {
	$mpi -np 2 "$run" "$tmp/s2.bin" --data "$data" --steps 4 --checkpoint "$1" --checkpoint-every 2 \
		>"$tmp/bd.out" 2>"$tmp/bd.err" && { echo "exit 0" >&2; return 1; }
	grep '^pcc-run:' "$tmp/bd.err" >"$tmp/line"
	[ "$(cat "$tmp/line")" = "pcc-run: rank 0: --checkpoint $1: $2" ] || { echo "stderr: $(cat "$tmp/bd.err")" >&2; return 1; }
	! grep -q '^step ' "$tmp/bd.out" || { echo "steps ran: $(grep '^step ' "$tmp/bd.out" | tr '\n' ' ')" >&2; return 1; }
	[ "$(cat "$tmp/afile")" = "a user's file" ]
}
check "--checkpoint under a regular file: refused before step 1, naming it" bad_dir "$tmp/afile/ck" "cannot create: Not a directory"
check "--checkpoint naming a regular file: refused before step 1, the file untouched" bad_dir "$tmp/afile" "not a directory"

tap_done
