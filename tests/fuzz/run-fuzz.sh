#!/bin/sh
# run-fuzz.sh [SECONDS [LIBFUZZER_FLAG...]]: fuzz pcc's ONNX importer.
#
# Builds tests/fuzz/fuzz_onnx.c with clang's libFuzzer, ASan and UBSan,
# compiling pcc's sources directly (ir/*.c, compiler/onnx_*.c,
# compiler/interp*.c and onnx.pb-c.c regenerated with protoc-c), then fuzzes
# for SECONDS (default 30) starting from a copy of tests/fuzz/corpus and
# tests/fuzz/regressions.
# Prints TAP, one line per target; exits 1 if a target crashed.
#
# Everything goes to build-fuzz/ (or $FUZZ_OUT): the binary, the growing
# corpus, crash reproducers in crashes/, the log of each target. Extra
# arguments go to libFuzzer (e.g. -fork=2 -ignore_crashes=1 to keep going
# after a crash). Replay a reproducer: build-fuzz/fuzz_onnx CRASH_FILE
set -eu

secs=${1:-30}
[ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$src/build-fuzz}
proto=${ONNX_PROTO:-/usr/include/onnx/onnx.proto}
cc=${CC_FUZZ:-clang}

mkdir -p "$out/gen" "$out/corpus" "$out/crashes" "$out/tmp"

# libFuzzer ships with clang (Debian: clang-14 + libclang-rt-14-dev)
probe="$out/probe.c"
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe" -o "$out/probe" 2>/dev/null; then
	echo "1..0 # SKIP $cc cannot build libFuzzer targets (Debian: apt install clang libclang-rt-14-dev)"
	exit 0
fi

protoc-c --proto_path="$(dirname "$proto")" --c_out="$out/gen" "$proto"
blas_cflags=$(pkg-config --cflags openblas 2>/dev/null || true)
blas_libs=$(pkg-config --libs openblas 2>/dev/null || echo -lopenblas)

# the IR without the plan format (plan*.c: not on the import path)
ir_srcs=$(ls "$src"/ir/*.c | grep -v '/ir/plan')

# one TAP line per target
n=0
failed=0
fuzz_target() {
	name=$1
	shift
	n=$((n + 1))
	log="$out/$name.log"
	# shellcheck disable=SC2086 # flag lists are word-split on purpose
	if ! "$cc" -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -fno-omit-frame-pointer \
		-I"$src" -I"$out/gen" $blas_cflags \
		"$src/tests/fuzz/$name.c" $ir_srcs "$src"/compiler/onnx_*.c \
		"$src"/compiler/interp*.c "$out/gen/onnx.pb-c.c" \
		-o "$out/$name" -lprotobuf-c $blas_libs -lm >"$log" 2>&1; then
		echo "not ok $n - $name: build failed (see $log)"
		failed=1
		return
	fi
	# seeds, plus past reproducers so a regression fails at once
	cp "$src/tests/fuzz/corpus/"* "$out/corpus/"
	if [ -d "$src/tests/fuzz/regressions" ]; then
		cp "$src/tests/fuzz/regressions/"* "$out/corpus/" 2>/dev/null || true
	fi
	start=$(date +%s)
	rc=0
	FUZZ_ONNX_TMP="$out/tmp" "$out/$name" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
		-max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$out/crashes/" "$@" "$out/corpus" >"$log" 2>&1 || rc=$?
	took=$(($(date +%s) - start))
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	# -fork=N prints no final stats: take the last progress line "#RUNS: ..."
	[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9][0-9]*\):.*/\1/p' "$log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		echo "ok $n - $name: ${runs:-?} runs in $took s, no crash"
		return
	fi
	artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	echo "not ok $n - $name: crash after ${runs:-?} runs in $took s: ${artifact:-no reproducer} (log $log)"
	# the report's first line and the first frames in pcc's own sources
	grep -a -m 1 -E '^==[0-9]+== ?ERROR|runtime error|pcc: internal error' "$log" | sed 's/^/# /' || true
	grep -a -E '^ +#[0-9]+ .* in .*/(ir|compiler|tests)/' "$log" | head -n 4 | sed 's/^/# /' || true
	failed=1
}

fuzz_target fuzz_onnx "$@"
rm -f "$out/tmp/"fuzz_onnx_*.onnx
echo "1..$n"
exit "$failed"
