#!/bin/sh
# test_runtime_tokens.sh PCC PCC_RUN PB_CMP: pcc-run's raw token data
# (--tokens FILE) against the same batches in the backend-test layout (TAP).
#
# A file of 100 random token ids (the GPT fixture: vocabulary 64, ids and
# labels [2,8]) holds 12 windows of 9 tokens; gen_tokens.py writes it and,
# by the window rule of runtime/data.c written out on its own, each
# micro-batch's ids and labels as a test_data_set_J. Training 8 steps from
# the token file (16 or 32 windows: it wraps around) must give the losses
# `pcc train` gives on those sets (--accum as the micro-batches) and that
# pcc-run gives on them with --data: on 1 rank, 2 ranks, 2 ranks of two
# pipeline stages with 2 micro-batches. u32 and i32 files of the same ids
# give the same losses as u16. A run checkpointed at step 4 and resumed
# reads on where it stopped: the last losses and parameters equal the
# uninterrupted run's bit for bit. Losses: 1e-5 relative (sums in another
# order on a mesh), as test_runtime.sh.
#
# Ids and labels have bounds of their own: a token read as an id must be a
# row of the embedding the ids index, one read as a label a class of the
# loss. gen_embed_model.py writes two models whose embedding rows differ
# from their classes (48 rows and 64 classes, 80 and 64): an id of 50 is
# refused by the first, naming the embedding and its 48 rows (the step
# before it runs); an id of 70 read only as an id (element 0) is taken by
# the second, and a 70 read as a label too is refused, naming the classes.
#
# Other refusals of bad token files (too short, not whole tokens, an id
# outside the vocabulary) are in test_runtime_errors.sh.
pcc=$1
run=$2
cmp=$3
here=$(dirname "$0")
gpt=$here/train/gpt
. "$here/tap.sh"
. "$here/host_pin.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 120 mpirun --oversubscribe"
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; } # host_pin.sh
topts="--train --loss cross_entropy:logits,labels --optimizer adamw --lr 0.01"

check "the token file and its 32 micro-batches as sets are written" sh -c "
  python3 '$here/gen_tokens.py' '$tmp/tok.bin' '$tmp/sets' --tokens 100 --vocab 64 --batch 2 --seq 8 --sets 32 &&
  python3 '$here/gen_tokens.py' '$tmp/tok32.bin' '$tmp/unused' --tokens 100 --vocab 64 --batch 2 --seq 8 --type u32 &&
  python3 '$here/gen_tokens.py' '$tmp/toki32.bin' '$tmp/unused' --tokens 100 --vocab 64 --batch 2 --seq 8 --type i32 &&
  test \$(wc -c <'$tmp/tok.bin') -eq 200 && test -f '$tmp/sets/test_data_set_31/input_1.pb'"

# losses FILE: the loss column of the step lines.
losses() { grep '^step ' "$1" | awk '{print $4}'; }
# same_losses A B TOL: equal counts (8) and each within TOL relative.
same_losses() {
	losses "$1" >"$tmp/la"
	losses "$2" >"$tmp/lb"
	[ "$(wc -l <"$tmp/la")" -eq 8 ] && [ "$(wc -l <"$tmp/lb")" -eq 8 ] ||
		{ echo "not 8 steps: $1 $(wc -l <"$tmp/la"), $2 $(wc -l <"$tmp/lb")" >&2; return 1; }
	paste "$tmp/la" "$tmp/lb" | awk -v t="$3" '{ d = $1 - $2; if (d < 0) d = -d; a = $2 < 0 ? -$2 : $2
	  if (d > t * a + 1e-7) { print "step " NR ": loss " $1 " vs " $2; bad = 1 } } END { exit bad }' >&2
}

# tokens NP MICRO [compile options]: --tokens, --data on the same batches
# and pcc train agree.
tokens() {
	tk_np=$1 tk_micro=$2
	shift 2
	ref=$tmp/ref_$tk_micro.log
	[ -f "$ref" ] || "$pcc" train "$gpt/model.onnx" -i "$tmp/sets" --loss cross_entropy:logits,labels \
		--optimizer adamw --lr 0.01 --accum "$tk_micro" --steps 8 --log-every 1 >"$ref" 2>&1
	"$pcc" "$gpt/model.onnx" --cluster "cpu:$tk_np" $topts --micro-batches "$tk_micro" "$@" -o "$tmp/p.bin" \
		>/dev/null || return 1
	$mpi -np "$tk_np" "$run" "$tmp/p.bin" --timeout 60 --tokens "$tmp/tok.bin" --steps 8 >"$tmp/tok.log" 2>&1 ||
		{ tail -3 "$tmp/tok.log" >&2; return 1; }
	grep -q 'tok.bin: 100 tokens, 12 windows of 8 + 1' "$tmp/tok.log" || { echo "no token summary" >&2; return 1; }
	# --data over 32 sets reads them in turn, as the token file's windows come
	$mpi -np "$tk_np" "$run" "$tmp/p.bin" --timeout 60 --data "$tmp/sets" --steps 8 >"$tmp/data.log" 2>&1 ||
		{ tail -3 "$tmp/data.log" >&2; return 1; }
	same_losses "$tmp/tok.log" "$ref" 1e-5 && same_losses "$tmp/tok.log" "$tmp/data.log" 0
}
check "1 rank: --tokens gives pcc train's losses on the same windows (and --data's, exactly)" tokens 1 1
check "2 ranks: --tokens gives pcc train's losses on the same windows (and --data's, exactly)" tokens 2 1
check "2 ranks, 2 pipeline stages, 2 micro-batches: the windows of each micro-batch in order" tokens 2 2 --stages 2

# the same ids stored as u32 and i32
types() {
	"$pcc" "$gpt/model.onnx" --cluster cpu:1 $topts -o "$tmp/p1.bin" >/dev/null &&
		$mpi -np 1 "$run" "$tmp/p1.bin" --tokens "$tmp/tok.bin" --steps 8 >"$tmp/t16.log" &&
		$mpi -np 1 "$run" "$tmp/p1.bin" --tokens "$tmp/tok32.bin" --token-type u32 --steps 8 >"$tmp/t32.log" &&
		$mpi -np 1 "$run" "$tmp/p1.bin" --tokens "$tmp/toki32.bin" --token-type i32 --steps 8 >"$tmp/ti32.log" &&
		same_losses "$tmp/t16.log" "$tmp/t32.log" 0 && same_losses "$tmp/t16.log" "$tmp/ti32.log" 0
}
check "--token-type u32 and i32 files of the same ids give the u16 file's losses exactly" types

# Resuming: the data goes on at the checkpoint's step.
resumes() {
	"$pcc" "$gpt/model.onnx" --cluster cpu:2 $topts -o "$tmp/p2.bin" >/dev/null || return 1
	$mpi -np 2 "$run" "$tmp/p2.bin" --tokens "$tmp/tok.bin" --steps 8 --save-onnx "$tmp/full.onnx" >"$tmp/full.log" ||
		return 1
	PCC_RUN_FAULT=1:10:exit:6 $mpi -np 2 "$run" "$tmp/p2.bin" --tokens "$tmp/tok.bin" --steps 8 \
		--checkpoint "$tmp/ck" --checkpoint-every 4 >/dev/null 2>&1 && { echo "the faulted run exited 0" >&2; return 1; }
	[ "$(cat "$tmp/ck/LATEST")" = step-00000004 ] || { echo "LATEST: $(cat "$tmp/ck/LATEST")" >&2; return 1; }
	$mpi -np 2 "$run" "$tmp/p2.bin" --tokens "$tmp/tok.bin" --steps 8 --resume "$tmp/ck" \
		--save-onnx "$tmp/res.onnx" >"$tmp/res.log" || return 1
	grep -q 'resumed from .* at step 4' "$tmp/res.log" || { echo "not resumed at step 4" >&2; return 1; }
	grep '^step [5-8]/8' "$tmp/res.log" | cut -d' ' -f1-4 >"$tmp/a"
	grep '^step [5-8]/8' "$tmp/full.log" | cut -d' ' -f1-4 >"$tmp/b"
	[ "$(wc -l <"$tmp/a")" -eq 4 ] && cmp -s "$tmp/a" "$tmp/b" ||
		{ echo "steps 5-8 differ: $(tr '\n' ' ' <"$tmp/a") / $(tr '\n' ' ' <"$tmp/b")" >&2; return 1; }
	"$cmp" --onnx --rtol 0 --atol 0 "$tmp/res.onnx" "$tmp/full.onnx" >&2
}
check "a run killed at step 6 and resumed from step 4 reads the same windows: losses and parameters bit for bit" resumes

# Each token against the bound of what it is read as.
# put_tokens FILE VOCAB POS VALUE: 100 random u16 ids below VOCAB, VALUE at POS.
put_tokens() {
	python3 -c "import random, struct, sys
f, v, pos, val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = [random.Random(1).randrange(v) for _ in range(100)]
t[pos] = val
open(f, 'wb').write(struct.pack('<100H', *t))" "$@"
}
check "models whose embedding rows are not their classes (48 and 64, 80 and 64) compile" sh -c "
  python3 '$here/gen_embed_model.py' '$tmp/e48.onnx' --vocab 48 --classes 64 &&
  python3 '$here/gen_embed_model.py' '$tmp/e80.onnx' --vocab 80 --classes 64 &&
  '$pcc' '$tmp/e48.onnx' --cluster cpu:2 $topts -o '$tmp/e48.bin' >/dev/null &&
  '$pcc' '$tmp/e80.onnx' --cluster cpu:2 $topts -o '$tmp/e80.bin' >/dev/null"
put_tokens "$tmp/id50.tok" 48 40 50
put_tokens "$tmp/id70at0.tok" 48 0 70
put_tokens "$tmp/id70at40.tok" 48 40 70
# refused PLAN FILE LINE: stops before step 3 (element 40 is in window 4,
# step 3's first) with exactly the one line LINE; every rank by itself.
refused() {
	$mpi -np 2 "$run" "$1" --timeout 60 --tokens "$2" --steps 3 >"$tmp/rf.out" 2>"$tmp/rf.err" &&
		{ echo "exit 0" >&2; return 1; }
	grep '^pcc-run:' "$tmp/rf.err" >"$tmp/rf.line"
	cat "$tmp/rf.line" >&2
	[ "$(cat "$tmp/rf.line")" = "$3" ] || { echo "not the one line expected" >&2; return 1; }
	[ "$(grep -c '^step ' "$tmp/rf.out")" -eq 2 ] || { echo "steps run: $(grep -c '^step ' "$tmp/rf.out")" >&2; return 1; }
	! grep -q MPI_ABORT "$tmp/rf.err" || { echo "MPI_Abort stopped it" >&2; return 1; }
}
check "an id of 50, inside the 64 classes but outside the embedding's 48 rows: refused, naming file, element and the embedding" \
	refused "$tmp/e48.bin" "$tmp/id50.tok" \
	"pcc-run: rank 0: step 3: $tmp/id50.tok: token 50 at element 40 is outside [0, 48) (the vocabulary: the rows of the embedding \"wte\" the ids index)"
check "an id of 70 read only as an id (element 0), inside the embedding's 80 rows, not the 64 classes: taken" sh -c "
  $mpi -np 2 '$run' '$tmp/e80.bin' --timeout 60 --tokens '$tmp/id70at0.tok' --steps 3 | grep -q '^step 3/3 '"
check "a token of 70 read as a label too (element 40), inside the embedding's 80 rows, outside the 64 classes: refused, naming the classes" \
	refused "$tmp/e80.bin" "$tmp/id70at40.tok" \
	"pcc-run: rank 0: step 3: $tmp/id70at40.tok: token 70 at element 40 is outside [0, 64) (the class count of the plan's loss, which the labels, the ids shifted by one, index)"

tap_done
