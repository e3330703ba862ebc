#!/bin/sh
# run-fuzz.sh [SECONDS [LIBFUZZER_FLAG...]]: fuzz every reader of outside
# data in pcc, one libFuzzer target each (tests/fuzz/fuzz_NAME.c):
#   onnx     the ONNX importer (compiler/frontend/onnx_*.c, onnxio/), then the interpreter
#   plan     plan.bin (ir/plan_io.c, plan_unpack.c), plan_verify, `pcc inspect`'s printer,
#            then a small plan's step on tests/plan_sim.c
#   text     the IR's text form (ir/text.c), then the interpreter
#   cluster  --cluster specs and JSON files (compiler/cost/cost_cluster.c)
#   calib    --calib files (compiler/cost/cost_compute.c)
#   iopddl   IOPDDL instances, JSON or gzip (solvers/shard_read.c)
#   answer   answers to `pcc-iopddl --eval` (solvers/iopddl_main.c), then
#            the evaluator
#   ckpt     checkpoint manifests (runtime/ckpt_manifest.c)
#
# Builds with clang's libFuzzer, ASan and UBSan, compiling pcc's sources
# directly (the readers and what they call, into one archive each target
# links what it needs from; protoc-c regenerates onnx.pb-c.c and
# plan.pb-c.c) through a generated build.ninja, so a second run rebuilds
# only what changed. Then, per target: replays tests/fuzz/regressions/NAME/
# (every past reproducer, once each), and fuzzes for SECONDS (default 30)
# from tests/fuzz/corpus/NAME/ plus the regressions. Prints TAP, two lines
# per target; exits 1 if a target failed to build, a regression failed, or
# fuzzing found a crash.
#
# Environment: FUZZ_OUT (default build-fuzz/): where everything goes;
# FUZZ_TARGETS: a subset ("plan text"); FUZZ_JOBS: targets fuzzed at once
# (default 1); FUZZ_FRESH=1: start each target from its seeds alone, not
# the corpus grown by earlier runs; CC_FUZZ (default clang); ONNX_PROTO.
# Extra arguments go to libFuzzer (-seed=1 -runs=N makes a run repeatable;
# -fork=2 -ignore_crashes=1 keeps going after a crash).
#
# In FUZZ_OUT/NAME/: corpus/ (grows across runs), crashes/ (reproducers),
# fuzz.log, regressions.log, stats (one line: runs seconds corpus_files
# corpus_bytes crashes, for benchmarks/fuzz.sh). Replay a reproducer:
# FUZZ_OUT/fuzz_NAME FILE; keep it as tests/fuzz/regressions/NAME/WHAT.EXT.
set -eu

all_targets="onnx plan text cluster calib iopddl answer ckpt"

# --one NAME SECONDS FLAGS...: fuzz one target (FUZZ_JOBS runs these at once)
if [ "${1:-}" = --one ]; then
	name=$2 secs=$3
	shift 3
	out=$FUZZ_OUT
	dir="$out/$name"
	log="$dir/fuzz.log"
	# FUZZ_FRESH=1: start from the seeds alone, so -seed and -runs repeat
	[ -z "${FUZZ_FRESH:-}" ] || rm -rf "$dir/corpus"
	mkdir -p "$dir/corpus" "$dir/crashes" "$dir/tmp"
	rm -f "$dir/crashes/"*
	seeds=""
	for d in "$FUZZ_SEEDS/corpus/$name" "$FUZZ_SEEDS/regressions/$name"; do
		[ ! -d "$d" ] || seeds="$seeds $d"
	done
	start=$(date +%s)
	rc=0
	# new inputs go to the first directory, the corpus; the seeds are read
	# shellcheck disable=SC2086 # one argument per directory
	FUZZ_TMP="$dir/tmp" "$out/fuzz_$name" -max_len=262144 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
		-timeout=10 -max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$dir/crashes/" "$@" "$dir/corpus" $seeds </dev/null >"$log" 2>&1 || rc=$?
	took=$(($(date +%s) - start))
	rm -rf "$dir/tmp"
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	# -fork=N prints no final stats: take the last progress line "#RUNS: ..."
	[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9][0-9]*\):.*/\1/p' "$log" | tail -n 1)
	files=$(find "$dir/corpus" -type f | wc -l)
	bytes=$(find "$dir/corpus" -type f -exec cat {} + | wc -c)
	crashes=$(find "$dir/crashes" -type f | wc -l)
	echo "${runs:-0} $took $files $bytes $crashes" >"$dir/stats"
	if [ "$rc" -eq 0 ]; then
		echo "ok - fuzz_$name: ${runs:-?} runs in $took s, no crash" >"$dir/tap"
		exit 0
	fi
	artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
	{
		echo "not ok - fuzz_$name: crash after ${runs:-?} runs in $took s: ${artifact:-no reproducer} (log $log)"
		# the report's first line and the first frames in pcc's own sources
		grep -a -m 1 -E '^==[0-9]+== ?ERROR|runtime error|pcc: internal error|fuzz_[a-z]+: ' "$log" |
			sed 's/^/# /' || true
		grep -a -E '^ +#[0-9]+ .* in .*/(ir|compiler|solvers|runtime|tests)/' "$log" | head -n 4 |
			sed 's/^/# /' || true
	} >"$dir/tap"
	exit 1
fi

secs=${1:-30}
[ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$src/build-fuzz}
proto=${ONNX_PROTO:-/usr/include/onnx/onnx.proto}
cc=${CC_FUZZ:-clang}
targets=${FUZZ_TARGETS:-$all_targets}
jobs=${FUZZ_JOBS:-1}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# libFuzzer ships with clang (Debian: clang-14 + libclang-rt-14-dev)
probe="$out/probe.c"
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe" -o "$out/probe" 2>/dev/null; then
	echo "1..0 # SKIP $cc cannot build libFuzzer targets (Debian: apt install clang libclang-rt-14-dev)"
	exit 0
fi

# version.h, which meson makes from version.h.in for the programs (the
# pcc-iopddl CLI that fuzz_answer.c compiles in includes it)
mkdir -p "$out/gen"
sed 's/@PCC_VERSION@/fuzz/; s/@VCS_TAG@/none/' "$src/version.h.in" >"$out/gen/version.h.tmp" &&
	mv "$out/gen/version.h.tmp" "$out/gen/version.h"

# ---- build.ninja: every source into one archive, one binary per target
blas_cflags=$(pkg-config --cflags openblas 2>/dev/null || true)
blas_libs=$(pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
libs="-lprotobuf-c -ljansson -lzip -lz -lglpk -lxxhash -lcrypto $blas_libs -lm -lpthread"
# the readers and what they call: ir/, the importer, the interpreter, the
# cost model's devices, clusters and roofline, the plan printer, solvers/
# but the pcc-iopddl CLI (fuzz_answer.c compiles that in itself), the
# checkpoint manifests, and the executor on the host's device with the
# in-process communication table that tests/plan_sim.c runs (the runtime's
# files that need neither MPI nor CUDA)
srcs=$(cd "$src" && ls ir/*.c kernels/*.c onnxio/*.c compiler/frontend/onnx_*.c compiler/interp/*.c compiler/cost/cost_device.c \
	compiler/cost/cost_cluster.c compiler/cost/cost_comm.c compiler/cost/cost_compute.c compiler/plan_print.c \
	solvers/*.c runtime/ckpt_manifest.c runtime/exec.c runtime/device_cpu.c runtime/step.c runtime/state.c \
	runtime/collective.c runtime/overlap.c runtime/comm_local.c runtime/fill.c runtime/trace.c \
	runtime/kernels*.c runtime/hostcode*.c runtime/pool.c runtime/gpu_none.c runtime/gpu_plan.c |
	grep -v '^solvers/iopddl_main\.c$')
{
	echo "cc = $cc"
	echo "cflags = -std=gnu11 -g -O1 -fsanitize=fuzzer-no-link,address,undefined" \
		"-fno-sanitize-recover=all -fno-omit-frame-pointer -I$src -I$out/gen $blas_cflags"
	echo "rule protoc"
	echo "  command = protoc-c --proto_path=\$pdir --c_out=\$odir \$in"
	echo "rule cc"
	echo "  command = \$cc \$cflags -MMD -MF \$out.d -c \$in -o \$out"
	echo "  depfile = \$out.d"
	echo "  deps = gcc"
	echo "rule ar"
	echo "  command = rm -f \$out && ar rcs \$out \$in"
	echo "rule link"
	echo "  command = \$cc \$cflags -fsanitize=fuzzer \$in -o \$out \$ldflags $libs"
	echo "build gen/onnx.pb-c.c gen/onnx.pb-c.h: protoc $proto"
	echo "  pdir = $(dirname "$proto")"
	echo "  odir = gen"
	echo "build gen/ir/plan.pb-c.c gen/ir/plan.pb-c.h: protoc $src/ir/plan.proto"
	echo "  pdir = $src/ir"
	echo "  odir = gen/ir"
	gen="gen/onnx.pb-c.h gen/ir/plan.pb-c.h"
	objs=""
	for s in $srcs gen/onnx.pb-c.c gen/ir/plan.pb-c.c; do
		o="obj/$(echo "$s" | tr / _ | sed 's/\.c$/.o/')"
		case $s in gen/*) in=$s ;; *) in=$src/$s ;; esac
		echo "build $o: cc $in || $gen"
		objs="$objs $o"
	done
	echo "build libpcc-fuzz.a: ar$objs"
	echo "build obj/tests_plan_sim.o: cc $src/tests/plan_sim.c || $gen"
	for t in $all_targets; do
		echo "build obj/fuzz_$t.o: cc $src/tests/fuzz/fuzz_$t.c || $gen"
		# the plan target runs verified plans on tests/plan_sim.c (the
		# runtime's executor, in the archive)
		sim=""
		[ "$t" != plan ] || sim=obj/tests_plan_sim.o
		echo "build fuzz_$t: link obj/fuzz_$t.o $sim libpcc-fuzz.a"
		# measuring the host takes a second: fuzz_cluster.c answers "cpu:N"
		[ "$t" != cluster ] || echo "  ldflags = -Wl,--wrap=cost_device_host"
	done
} >"$out/build.ninja.new"
mkdir -p "$out/gen/ir" "$out/obj"
# rewritten only when it changes, so ninja's log of commands stays valid
cmp -s "$out/build.ninja.new" "$out/build.ninja" 2>/dev/null || mv "$out/build.ninja.new" "$out/build.ninja"
rm -f "$out/build.ninja.new"

n=0
failed=0
tap() {
	n=$((n + 1))
	echo "$1" | sed "1s/ - / $n - /"
}
if ! ninja -C "$out" -j "$(nproc)" libpcc-fuzz.a >"$out/build.log" 2>&1; then
	for t in $targets; do
		tap "not ok - fuzz_$t: build failed (see $out/build.log)"
	done
	echo "1..$n"
	exit 1
fi

# ---- build each target and replay its regressions
ready=""
for t in $targets; do
	log="$out/$t.build.log"
	if ! ninja -C "$out" "fuzz_$t" >"$log" 2>&1; then
		tap "not ok - fuzz_$t: build failed (see $log)"
		tap "not ok - fuzz_$t: regressions # SKIP no binary"
		failed=1
		continue
	fi
	mkdir -p "$out/$t"
	regs=$(find "$src/tests/fuzz/regressions/$t" -type f 2>/dev/null | sort)
	if [ -z "$regs" ]; then
		tap "ok - fuzz_$t: regressions # SKIP none"
	# shellcheck disable=SC2086 # one argument per file
	elif FUZZ_TMP="$out/$t" "$out/fuzz_$t" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
		$regs </dev/null >"$out/$t/regressions.log" 2>&1; then
		tap "ok - fuzz_$t: regressions replayed ($(echo "$regs" | wc -l)), no crash"
	else
		bad=$(sed -n 's/^Running: //p' "$out/$t/regressions.log" | tail -n 1)
		tap "not ok - fuzz_$t: regression ${bad:-?} fails (log $out/$t/regressions.log)"
		failed=1
	fi
	ready="$ready $t"
done

# ---- fuzz, FUZZ_JOBS targets at once
if [ -n "$ready" ]; then
	export FUZZ_OUT="$out" FUZZ_SEEDS="$src/tests/fuzz"
	# shellcheck disable=SC2086 # one argument per flag
	printf '%s\n' $ready | xargs -P "$jobs" -I @ "$0" --one @ "$secs" "$@" || true
	for t in $ready; do
		if [ -f "$out/$t/tap" ]; then
			tap "$(cat "$out/$t/tap")"
			head -n 1 "$out/$t/tap" | grep -q '^ok' || failed=1
		else
			tap "not ok - fuzz_$t: did not run"
			failed=1
		fi
		rm -f "$out/$t/tap"
	done
fi
echo "1..$n"
exit "$failed"
