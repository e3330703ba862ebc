#!/bin/sh
# test_plan_sign.sh PCC PCC_RUN: signed plans (issue 40, item 8; TAP).
#
# pcc -o plan.bin --sign-key KEY appends an HMAC-SHA256 of the file under
# KEY (ir/plan_sign.c), checked here against Python's hmac module; pcc-run
# --verify-key KEY runs such a plan with the outputs of the unsigned one
# and refuses, with one "pcc-run: rank 0:" line and no outputs written, an
# unsigned plan, a plan signed with another key, and a forgery: another
# valid plan (its checksum right) carrying the signed plan's tag. Without
# --verify-key the tag is passed over. Keys that are too short, not files
# or given without -o plan.bin are refused. (Content bytes flipped with the
# checksum recomputed: test_plan_io, every byte.)
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$1")
run=$(abspath "$2")
models=$(abspath "$(dirname "$0")/models")
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/host_pin.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
unset PCC_RUN_FAULT
pin_host "$pcc" "$tmp/host" || { echo "Bail out! cannot pin the host figures"; exit 1; } # host_pin.sh
mlp=$models/mlp_op17
mpi="timeout 60 mpirun --oversubscribe -np 2"

# a fixed 32-byte key and another, a 15-byte one
printf 'pcc test key: 0123456789abcdef' >"$tmp/k"
printf 'pcc test key: fedcba9876543210' >"$tmp/k2"
printf '0123456789abcde' >"$tmp/k15"

check "pcc -o --sign-key: a signed plan, and an unsigned and a --codegen none one of the same model" sh -c "
  '$pcc' '$mlp/model.onnx' --cluster cpu:2 -o '$tmp/s.bin' --sign-key '$tmp/k' >/dev/null &&
  '$pcc' '$mlp/model.onnx' --cluster cpu:2 -o '$tmp/u.bin' >/dev/null &&
  '$pcc' '$mlp/model.onnx' --cluster cpu:2 --codegen none -o '$tmp/other.bin' >/dev/null"

# tag_ok PLAN KEY: PLAN ends with field 4 (0x22, length 32) holding
# HMAC-SHA256 under KEY's bytes of everything before it (Python's hmac).
tag_ok() {
	python3 -c '
import hashlib, hmac, sys
d = open(sys.argv[1], "rb").read()
k = open(sys.argv[2], "rb").read()
ok = d[-34:-32] == b"\x22\x20" and hmac.compare_digest(d[-32:], hmac.new(k, d[:-34], hashlib.sha256).digest())
sys.exit(0 if ok else 1)' "$1" "$2"
}
check "the tag is HMAC-SHA256 of the plan's bytes before it under the key (Python's hmac)" tag_ok "$tmp/s.bin" "$tmp/k"
nottag() { ! tag_ok "$@"; }
check "... and not under the other key" nottag "$tmp/s.bin" "$tmp/k2"
signed_is_unsigned_plus_34() {
	[ "$(wc -c <"$tmp/s.bin")" -eq $(($(wc -c <"$tmp/u.bin") + 34)) ] &&
		head -c "$(wc -c <"$tmp/u.bin")" "$tmp/s.bin" | cmp -s - "$tmp/u.bin"
}
check "the signed plan is the unsigned one and 34 bytes" signed_is_unsigned_plus_34
check "pcc inspect reads a signed plan" sh -c "'$pcc' inspect '$tmp/s.bin' | grep -q '^device'"

# a forgery: a valid plan (other.bin, its checksum right) with s.bin's tag
cp "$tmp/other.bin" "$tmp/forged.bin"
tail -c 34 "$tmp/s.bin" >>"$tmp/forged.bin"

# runs PLAN OUT ARGS...: pcc-run on 2 ranks writes OUT.
runs() {
	rs_plan=$1 rs_out=$2
	shift 2
	rm -rf "$rs_out"
	$mpi "$run" "$rs_plan" -i "$mlp/test_data_set_0" -o "$rs_out" "$@" >"$tmp/so" 2>"$tmp/se" || {
		cat "$tmp/se" >&2
		return 1
	}
}
check "control: the unsigned plan runs" runs "$tmp/u.bin" "$tmp/out_u"
check "the signed plan runs with --verify-key KEY" runs "$tmp/s.bin" "$tmp/out_s" --verify-key "$tmp/k"
check "... its outputs are the unsigned plan's, byte for byte" \
	sh -c "ls '$tmp/out_u' | grep -q . && for f in \$(ls '$tmp/out_u'); do cmp '$tmp/out_u/'\$f '$tmp/out_s/'\$f || exit 1; done"
check "the signed plan runs without --verify-key" runs "$tmp/s.bin" "$tmp/out_s2"
check "the forgery runs without --verify-key (its checksum is right: only the key tells)" \
	runs "$tmp/forged.bin" "$tmp/out_f"

# refused PLAN MESSAGE ARGS...: the job fails; stderr's only pcc-run: line
# is rank 0's and holds MESSAGE; no output directory.
refused() {
	rf_plan=$1 rf_msg=$2
	shift 2
	rm -rf "$tmp/never"
	if $mpi "$run" "$rf_plan" -i "$mlp/test_data_set_0" -o "$tmp/never" "$@" >"$tmp/so" 2>"$tmp/se"; then
		echo "exit status 0" >&2
		return 1
	fi
	grep '^pcc-run:' "$tmp/se" >"$tmp/line"
	cat "$tmp/line" >&2
	[ "$(wc -l <"$tmp/line")" -eq 1 ] || { echo "not one pcc-run: line" >&2; return 1; }
	grep -q -F -- "pcc-run: rank 0: $rf_msg" "$tmp/line" || { echo "expected: $rf_msg" >&2; return 1; }
	[ ! -e "$tmp/never" ] || { echo "outputs written" >&2; return 1; }
}
check "an unsigned plan with --verify-key: refused" refused "$tmp/u.bin" \
	"$tmp/u.bin: not signed, and --verify-key $tmp/k asks for a plan signed with that key" --verify-key "$tmp/k"
check "the signed plan with another key: refused" refused "$tmp/s.bin" \
	"$tmp/s.bin: its signature does not match the key in $tmp/k2 (the plan changed after it was signed, or another key signed it)" \
	--verify-key "$tmp/k2"
check "the forgery (another plan with the signed plan's tag) with --verify-key: refused" refused "$tmp/forged.bin" \
	"$tmp/forged.bin: its signature does not match the key in $tmp/k" --verify-key "$tmp/k"
check "a 15-byte key: refused" refused "$tmp/s.bin" "$tmp/k15: a key of 15 bytes: expected 16 to 1024" \
	--verify-key "$tmp/k15"
check "a directory as the key: refused" refused "$tmp/s.bin" "$tmp: a key is a regular file" --verify-key "$tmp"
check "a missing key: refused" refused "$tmp/s.bin" "$tmp/nokey: cannot read the key: No such file or directory" \
	--verify-key "$tmp/nokey"

# pcc refuses a key it cannot use before compiling
pcc_refuses() {
	pr_msg=$1
	shift
	if "$pcc" "$mlp/model.onnx" --cluster cpu:2 "$@" >"$tmp/so" 2>"$tmp/se"; then
		echo "exit status 0" >&2
		return 1
	fi
	cat "$tmp/se" >&2
	grep -q -F -- "pcc: $pr_msg" "$tmp/se"
}
check "pcc --sign-key with a 15-byte key: refused, nothing written" pcc_refuses \
	"$tmp/k15: a key of 15 bytes: expected 16 to 1024" -o "$tmp/x.bin" --sign-key "$tmp/k15"
check "... no plan left" test ! -e "$tmp/x.bin"
check "pcc --sign-key without -o: refused" pcc_refuses \
	"--sign-key $tmp/k signs the plan -o writes: give -o plan.bin" --sign-key "$tmp/k"
check "pcc --sign-key with -o PLAN.txt: refused" pcc_refuses \
	"--sign-key $tmp/k signs the plan -o writes: give -o plan.bin" -o "$tmp/x.txt" --sign-key "$tmp/k"

tap_done
