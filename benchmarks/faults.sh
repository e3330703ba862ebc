#!/bin/sh
# faults.sh [OUT_MD]: the fault-injection campaign of issue 40 as a
# benchmark, writing a markdown report to OUT_MD (default
# benchmarks/results/faults.md). Five parts, each counted:
#
# 1. kills: KILLS times (default 10), a 4-rank gpt training job (tests/train/
#    gpt) gets one of its ranks, picked at random, killed with SIGKILL at a
#    random moment 0.5-2.5 s after the start. Survived: the whole job stops
#    within 60 s, non-zero, and a line names the killed rank; the time from
#    the kill to the job's end is measured.
# 2. checkpoint kills: CKPT_KILLS times (default 10), the same job
#    checkpointing after every step is killed the same way (a rank at
#    random, 0.4-2.0 s in), then resumed from the checkpoint LATEST names
#    and run to its last step. Survived: it resumed at LATEST's step and its
#    final parameters (--save-onnx) equal an uninterrupted run's bit for bit
#    (pb_cmp --rtol 0 --atol 0). Kills that left a step-N.tmp (a save under
#    way) are counted.
# 3. checkpoint bit flips: CKPT_FLIPS times (default 20), one random bit of
#    the newest checkpoint (its manifest or its shard, as bytes fall) is
#    flipped and the job resumed. Detected: a message names a file of that
#    checkpoint and the run falls back to the checkpoint before or stops; harmless: no
#    message and the result equal to a resume of the intact checkpoint;
#    silent: neither (a defect).
# 4. plan bit flips: PLAN_FLIPS times (default 50), one random bit of a
#    2-rank plan.bin flipped, then pcc-run. Detected: refused with a
#    "pcc-run: rank N:" line; crash: a signal, an assertion or a timeout.
# 5. mutated ONNX: MUTANTS models (default 300) made from the mlp and gpt
#    fixtures by bit flips, cut ends and inserted bytes (a fixed seed), each
#    through `pcc inspect` and `pcc eval`: crashes (a signal, an assertion,
#    a sanitizer report) and hangs (20 s) counted.
#
# BUILD (default build/) holds pcc, pcc-run and tests/pb_cmp; SEED (default
# 1) fixes every random choice. About 3-5 minutes on 2 cores.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${BUILD:-$src/build}
md=${1:-$here/results/faults.md}
pcc=$build/compiler/pcc
run=$build/runtime/pcc-run
pbcmp=$build/tests/pb_cmp
kills=${KILLS:-10} ckpt_kills=${CKPT_KILLS:-10} ckpt_flips=${CKPT_FLIPS:-20}
plan_flips=${PLAN_FLIPS:-50} mutants=${MUTANTS:-300} seed=${SEED:-1}
for f in "$pcc" "$run" "$pbcmp"; do
	[ -x "$f" ] || { echo "faults.sh: $f missing (build first: scripts/build)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
unset PCC_RUN_FAULT
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t_start=$(date +%s)

g=$src/tests/train/gpt
data=$g/test_data_set_0
mlp=$src/tests/models/mlp_op17
topts="--train --loss cross_entropy:logits,labels --optimizer adamw --lr 0.01"
"$pcc" "$g/model.onnx" --cluster cpu:4 $topts -o "$work/c4.bin" >/dev/null || exit 1
"$pcc" "$mlp/model.onnx" --cluster cpu:2 -o "$work/m2.bin" >/dev/null || exit 1

# ---- helpers

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
draw=0
# rnd VAR LO HI: VAR set to a uniform number in [LO, HI) (whole when both
# are), the next of SEED's sequence (in this shell: no $(...), which would
# lose the count)
rnd() {
	draw=$((draw + 1))
	rnd_v=$(awk -v s=$((seed * 100003 + draw)) -v lo="$2" -v hi="$3" 'BEGIN {
		srand(s); x = lo + rand() * (hi - lo)
		if (lo == int(lo) && hi == int(hi)) printf "%d", int(x); else printf "%.2f", x }')
	eval "$1=\$rnd_v"
}
# ranks MPIRUN_PID: "PID RANK" of each pcc-run child of that mpirun
ranks() {
	[ -n "$1" ] || return 0
	for rk_p in $(ps -o pid= --ppid "$1" 2>/dev/null); do
		rk_r=$(tr '\0' '\n' <"/proc/$rk_p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
		[ -n "$rk_r" ] && echo "$rk_p $rk_r"
	done
}
# killjob DELAY ARGS...: starts pcc-run ARGS on 4 ranks (mpirun under a
# 90 s timeout), waits DELAY s, SIGKILLs one rank at random; sets kj_rank
# (-1: the job ended first), kj_secs (kill to end), kj_rc; the job's stderr
# in $work/kj.err.
killjob() {
	kj_delay=$1
	shift
	timeout -s KILL 90 mpirun --oversubscribe -np 4 "$run" "$@" >"$work/kj.out" 2>"$work/kj.err" &
	kj_to=$!
	sleep "$kj_delay"
	kj_rank=-1
	kj_list=$(ranks "$(ps -o pid= --ppid "$kj_to" | head -n 1 | tr -d ' ')")
	if [ -n "$kj_list" ]; then
		rnd kj_pick 1 $(($(echo "$kj_list" | wc -l) + 1))
		set -- $(echo "$kj_list" | sed -n "${kj_pick}p")
		kj_t0=$(now)
		kill -9 "$1" 2>/dev/null && kj_rank=$2
	fi
	wait "$kj_to"
	kj_rc=$?
	kj_secs=$(secs "${kj_t0:-0}" "$(now)")
}
# flip FILE OFFSET BIT
flip() {
	python3 -c '
import sys
p, o, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(p, "r+b") as f:
    f.seek(o); c = f.read(1)[0]; f.seek(o); f.write(bytes([c ^ (1 << b)]))' "$1" "$2" "$3"
}
size() { wc -c <"$1" | tr -d ' '; }

# ---- 1. kills
k_ok=0 k_missed=0 k_times=""
for i in $(seq 1 "$kills"); do
	rnd delay 0.5 2.5
	killjob "$delay" "$work/c4.bin" --data "$data" --steps 1000000 --log-every 1000000 --timeout 30
	if [ "$kj_rank" -lt 0 ]; then
		k_missed=$((k_missed + 1))
		continue
	fi
	named=no
	grep -q "rank $kj_rank " "$work/kj.err" && named=yes
	echo "kill $i: rank $kj_rank, exit $kj_rc, stopped in $kj_secs s, named: $named"
	if [ "$kj_rc" -ne 0 ] && [ "$named" = yes ] && awk -v s="$kj_secs" 'BEGIN { exit !(s < 60) }'; then
		k_ok=$((k_ok + 1))
		k_times="$k_times $kj_secs"
	else
		sed 's/^/  | /' "$work/kj.err" | head -5
	fi
done
k_tried=$((kills - k_missed))
k_stat=$(echo "$k_times" | tr ' ' '\n' | awk 'NF { n++; s += $1; if (n == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1 }
	END { if (n) printf "%.2f / %.2f / %.2f", lo, s / n, hi; else printf "-" }')

echo "# part 1 took $(($(date +%s) - t_start)) s so far"
# ---- 2. checkpoint kills
steps=200
mpirun --oversubscribe -np 4 "$run" "$work/c4.bin" --data "$data" --steps $steps --save-onnx "$work/full.onnx" \
	>/dev/null 2>&1 || { echo "faults.sh: the uninterrupted run failed" >&2; exit 1; }
c_ok=0 c_tried=0 c_midsave=0 c_before=0 c_bad=""
for i in $(seq 1 "$ckpt_kills"); do
	rm -rf "$work/ck" "$work/res.onnx"
	rnd delay 0.4 2.0
	killjob "$delay" "$work/c4.bin" --data "$data" --steps $steps --log-every 1000 \
		--checkpoint "$work/ck" --checkpoint-every 1 --timeout 30
	[ "$kj_rank" -ge 0 ] || continue
	c_tried=$((c_tried + 1))
	mid=no
	ls -d "$work/ck"/step-*.tmp >/dev/null 2>&1 && mid=yes && c_midsave=$((c_midsave + 1))
	if [ ! -f "$work/ck/LATEST" ]; then
		c_before=$((c_before + 1))
		echo "checkpoint kill $i: rank $kj_rank killed before the first checkpoint"
		continue
	fi
	latest=$(cat "$work/ck/LATEST")
	lstep=$(echo "$latest" | sed 's/^step-0*//')
	verdict=fail
	if timeout 120 mpirun --oversubscribe -np 4 "$run" "$work/c4.bin" --data "$data" --steps $steps \
		--resume "$work/ck" --save-onnx "$work/res.onnx" >"$work/res.out" 2>"$work/res.err" &&
		grep -q "resumed from .*/$latest (named by LATEST) at step $lstep\$" "$work/res.out" &&
		"$pbcmp" --onnx --rtol 0 --atol 0 "$work/res.onnx" "$work/full.onnx" >/dev/null 2>&1; then
		verdict=identical
		c_ok=$((c_ok + 1))
	else
		c_bad="$c_bad $i"
		grep resumed "$work/res.out"
		sed 's/^/  | /' "$work/res.err" | head -5
	fi
	echo "checkpoint kill $i: rank $kj_rank, a save under way: $mid, LATEST $latest, resumed: $verdict"
done

echo "# part 2 took $(($(date +%s) - t_start)) s so far"
# ---- 3. checkpoint bit flips
mpirun --oversubscribe -np 4 "$run" "$work/c4.bin" --data "$data" --steps 100 --checkpoint "$work/base" \
	--checkpoint-every 50 >/dev/null 2>&1 || { echo "faults.sh: the checkpointing run failed" >&2; exit 1; }
mpirun --oversubscribe -np 4 "$run" "$work/c4.bin" --data "$data" --steps 110 --resume "$work/base" \
	--save-onnx "$work/ref.onnx" >/dev/null 2>&1 || { echo "faults.sh: the reference resume failed" >&2; exit 1; }
newest=step-00000100
f_det=0 f_harm=0 f_silent=0
for i in $(seq 1 "$ckpt_flips"); do
	rm -rf "$work/fl" "$work/fl.onnx"
	cp -r "$work/base" "$work/fl"
	man=$work/fl/$newest/manifest.json shard=$work/fl/$newest/rank-00000.bin
	rnd at 0 $(($(size "$man") + $(size "$shard")))
	if [ "$at" -lt "$(size "$man")" ]; then file=$man off=$at; else file=$shard off=$((at - $(size "$man"))); fi
	rnd bit 0 8
	flip "$file" "$off" "$bit"
	timeout 120 mpirun --oversubscribe -np 4 "$run" "$work/c4.bin" --data "$data" --steps 110 \
		--resume "$work/fl" --save-onnx "$work/fl.onnx" >"$work/fl.out" 2>"$work/fl.err"
	rc=$?
	base=$(basename "$file")
	if grep -q "$newest/" "$work/fl.err" && { [ "$rc" -ne 0 ] || grep -q 'at step 50$' "$work/fl.out"; }; then
		what=detected
		f_det=$((f_det + 1))
	elif [ "$rc" -eq 0 ] && grep -q 'at step 100$' "$work/fl.out" &&
		"$pbcmp" --onnx --rtol 0 --atol 0 "$work/fl.onnx" "$work/ref.onnx" >/dev/null 2>&1; then
		what="harmless (the same result)"
		f_harm=$((f_harm + 1))
	else
		what=SILENT
		f_silent=$((f_silent + 1))
		sed 's/^/  | /' "$work/fl.err" | head -3
	fi
	echo "checkpoint flip $i: $base byte $off: $what ($(grep -m1 'pcc-run: ' "$work/fl.err" | cut -c1-140))"
done

echo "# part 3 took $(($(date +%s) - t_start)) s so far"
# ---- 4. plan bit flips
p_det=0 p_crash=0 p_run=0
psize=$(size "$work/m2.bin")
for i in $(seq 1 "$plan_flips"); do
	cp "$work/m2.bin" "$work/flip.bin"
	rnd off 0 "$psize"
	rnd bit 0 8
	flip "$work/flip.bin" "$off" "$bit"
	rm -rf "$work/po"
	timeout 30 mpirun --oversubscribe -np 2 "$run" "$work/flip.bin" -i "$mlp/test_data_set_0" -o "$work/po" \
		>/dev/null 2>"$work/p.err"
	rc=$?
	if [ "$rc" -ge 124 ] || grep -q -E 'internal error|Sanitizer|signal [0-9]+|Segmentation' "$work/p.err"; then
		p_crash=$((p_crash + 1))
		echo "plan flip $i: byte $off: CRASH (exit $rc)"
		sed 's/^/  | /' "$work/p.err" | head -3
	elif [ "$rc" -ne 0 ] && grep -q '^pcc-run: rank [0-9]*: ' "$work/p.err"; then
		p_det=$((p_det + 1))
	else
		p_run=$((p_run + 1))
		echo "plan flip $i: byte $off: exit $rc, not refused"
	fi
done

echo "# part 4 took $(($(date +%s) - t_start)) s so far"
# ---- 5. mutated ONNX
mkdir -p "$work/mut"
python3 - "$work/mut" "$mutants" "$seed" "$mlp/model.onnx" "$g/model.onnx" <<'EOF'
import random, sys
out, n, seed, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
rng = random.Random(seed)
srcs = [open(m, "rb").read() for m in models]
for i in range(n):
    k = i % len(srcs)
    d = bytearray(srcs[k])
    how = rng.choice(["flip", "flip", "flip", "cut", "insert", "bytes"])
    if how == "flip":
        for _ in range(rng.randint(1, 8)):
            j = rng.randrange(len(d)); d[j] ^= 1 << rng.randrange(8)
    elif how == "cut":
        d = d[:rng.randrange(len(d))]
    elif how == "insert":
        j = rng.randrange(len(d)); d[j:j] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    else:
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(d)); d[j] = rng.choice([0, 0x7f, 0x80, 0xff])
    open("%s/%04d_%d.onnx" % (out, i, k), "wb").write(bytes(d))
EOF
m_runs=0 m_crash=0 m_hang=0 m_ok=0
for f in "$work/mut"/*.onnx; do
	case $f in *_0.onnx) in=$mlp/test_data_set_0 ;; *) in=$g/test_data_set_0 ;; esac
	for cmd in inspect eval; do
		if [ $cmd = eval ]; then
			timeout 20 "$pcc" eval "$f" -i "$in" >/dev/null 2>"$work/m.err"
		else
			timeout 20 "$pcc" inspect "$f" >/dev/null 2>"$work/m.err"
		fi
		rc=$?
		m_runs=$((m_runs + 1))
		if [ "$rc" -eq 124 ]; then
			m_hang=$((m_hang + 1))
			echo "mutant $(basename "$f") $cmd: HANG"
		elif [ "$rc" -gt 124 ] || grep -q -E 'internal error|Sanitizer|runtime error' "$work/m.err"; then
			m_crash=$((m_crash + 1))
			echo "mutant $(basename "$f") $cmd: CRASH (exit $rc): $(head -c 200 "$work/m.err")"
		elif [ "$rc" -eq 0 ]; then
			m_ok=$((m_ok + 1))
		fi
	done
done
m_refused=$((m_runs - m_crash - m_hang - m_ok))
took=$(($(date +%s) - t_start))
echo "# part 5 took $took s so far"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	echo "# Fault injection"
	echo
	echo "Produced by \`benchmarks/faults.sh\` (KILLS=$kills CKPT_KILLS=$ckpt_kills CKPT_FLIPS=$ckpt_flips" \
		"PLAN_FLIPS=$plan_flips MUTANTS=$mutants SEED=$seed) on $(nproc) cores ($cpu), $(date +%Y-%m-%d)," \
		"commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'), in $took s; load average" \
		"$(cut -d' ' -f1-3 /proc/loadavg) at the end. The job: tests/train/gpt trained on 4 CPU ranks" \
		"(Open MPI, shared memory); the plan flipped: tests/models/mlp_op17 on 2 ranks."
	echo
	echo "| part | tried | result |"
	echo "|---|---:|---|"
	echo "| a rank SIGKILLed 0.5-2.5 s into a run | $k_tried | $k_ok stopped with the rank named (mpirun); kill to end min / mean / max $k_stat s |"
	echo "| a rank SIGKILLed while checkpointing every step, then \`--resume\` | $c_tried | $c_ok resumed at LATEST's step, parameters bit for bit an uninterrupted run's; $c_midsave killed with a save under way; $c_before before the first checkpoint |"
	echo "| a bit flipped in the newest checkpoint (manifest or shard) | $ckpt_flips | $f_det detected (file named, the checkpoint before used), $f_harm harmless (no message, the same result), $f_silent silent |"
	echo "| a bit flipped in plan.bin, then pcc-run | $plan_flips | $p_det refused with a \`pcc-run: rank N:\` line, $p_crash crashes, $p_run not refused |"
	echo "| mutated ONNX models (bit flips, cut ends, inserted bytes) through \`pcc inspect\` and \`pcc eval\` | $m_runs runs of $mutants models | $m_crash crashes, $m_hang hangs; $m_refused refused with a message, $m_ok accepted |"
	echo
	echo "Kills the job outlived (the rank ended first) are not counted as tried."
	echo "Checkpoint shards carry an XXH3 each, checked at load; the manifest has"
	echo "none of its own, so a flip there is found when the JSON no longer parses"
	echo "or a field no longer matches the plan or a shard (a harmless flip would be"
	echo "one in text nothing reads back into the result). A plan's content is"
	echo "covered by its checksum (and, signed, by its HMAC: \`--sign-key\`)."
} >"$md.tmp" && mv "$md.tmp" "$md"
cat "$md"
[ "$k_ok" -eq "$k_tried" ] && [ "$c_ok" -eq $((c_tried - c_before)) ] && [ "$f_silent" -eq 0 ] &&
	[ "$p_crash" -eq 0 ] && [ "$p_run" -eq 0 ] && [ "$m_crash" -eq 0 ] && [ "$m_hang" -eq 0 ]
