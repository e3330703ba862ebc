#!/bin/sh
# test_gpu_bundle.sh SOURCE_ROOT BUILD_DIR: the GPU check bundle end to end
# on the checking stand-in for a GPU (TAP; exit 77, skipped, where the
# bundle cannot be built: no Debian Open MPI, python3 or xz).
#
# scripts/gpu-bundle --no-pcc makes the bundle (at most 60 MiB); unpacked
# in another folder (so every plan finds its model relative to itself),
# `pcc-gpu/run-gpu-check --standin --quick` runs with no LD_LIBRARY_PATH
# and must report every fixture model and every training fixture (1 and 2
# micro-batches) passed, mpirun -np 2 with the bundled Open MPI, and the
# tiny GPT's falling loss. Then the same checks must be able to fail: in a
# copy with one fixture's expected output replaced, one training fixture's
# labels removed and 1 training step where the loss must fall, each of
# those three is a FAIL, RESULT: FAIL, exit status 1. The 2-rank check
# passes with OMPI_MCA_mca_base_env_list set too (as the sanitizer runs).
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
for need in /usr/bin/orterun /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3; do
	[ -e "$need" ] || { echo "1..0 # SKIP no Debian Open MPI ($need)"; exit 77; }
done
command -v xz >/dev/null && { [ -x /usr/bin/python3 ] || command -v python3 >/dev/null; } ||
	{ echo "1..0 # SKIP the bundle needs xz and python3"; exit 77; }
. "$(dirname "$0")/tap.sh"
unset LD_LIBRARY_PATH PCC_GPU_STANDIN PCC_CHECK_ONLY

check "scripts/gpu-bundle --no-pcc writes the bundle" sh -c "
  '$src/scripts/gpu-bundle' '$tmp/b.tar.xz' --build '$build' --no-pcc >&2 && test -s '$tmp/b.tar.xz'"
size=$(stat -c %s "$tmp/b.tar.xz" 2>/dev/null || echo 0)
echo "# bundle: $size bytes"
check "the bundle is at most 60 MiB" test "$size" -le $((60 * 1024 * 1024))
mkdir -p "$tmp/there" "$tmp/elsewhere"
check "it unpacks to pcc-gpu/ with run-gpu-check, pcc-run, pb_cmp, mpirun and the plans" sh -c "
  cd '$tmp/there' && xz -dc '$tmp/b.tar.xz' | tar xf - &&
  test -x pcc-gpu/run-gpu-check && test -x pcc-gpu/bin/pcc-run && test -x pcc-gpu/bin/pb_cmp &&
  test -x pcc-gpu/usr/bin/mpirun && ls pcc-gpu/plans/m_gpt_op17.bin pcc-gpu/gpt2/plan_bf16_b8.bin >/dev/null"

# the checks' time boxes: generous, the stand-in runs kernels on 1 or 2 cores
export PCC_CHECK_FIXTURES_S=1500 PCC_CHECK_TRAIN_S=1500 PCC_CHECK_GPT2_S=600 PCC_CHECK_RUN_S=600
check "run-gpu-check --standin --quick, from another folder, exits 0 and writes its results file" sh -c "
  cd '$tmp/elsewhere' && '$tmp/there/pcc-gpu/run-gpu-check' --standin --quick res.md 2>'$tmp/check.log' ||
  { tail -20 '$tmp/check.log' >&2; exit 1; }"
cat "$tmp/elsewhere/res.md" 2>/dev/null | sed -n '/^fixtures:/,/^RESULT/p' | grep . | sed 's/^/# /'

nfix=0
for m in "$src"/tests/models/*/; do
	[ -f "$m/model.onnx" ] && [ -f "$m/test_data_set_0/output_0.pb" ] && nfix=$((nfix + 1))
done
ntrain=0
for t in "$src"/tests/train/*/; do
	[ -f "$t/train.json" ] && [ -d "$t/test_data_set_0" ] && ntrain=$((ntrain + 2))
done
res=$tmp/elsewhere/res.md
check "every fixture model ($nfix) passed on the stand-in" \
	grep -qx "fixtures: $nfix of $nfix passed, 0 failed, 0 skipped" "$res"
check "every training fixture, 1 and 2 micro-batches ($ntrain), and mpirun -np 2 passed" \
	grep -qx "training: $((ntrain + 1)) of $((ntrain + 1)) passed, 0 failed, 0 skipped" "$res"
check "the tiny GPT's loss fell" grep -q '^| gpt2 | tiny GPT .* | PASS | ' "$res"
check "the results name the GPU (the stand-in), the date, and RESULT: PASS" sh -c "
  grep -q '^# pcc GPU check: the checking stand-in' '$res' && grep -q '^- date: 20' '$res' &&
  grep -q '^RESULT: PASS' '$res'"

# Open MPI refuses mpirun -x alongside the MCA parameter mca_base_env_list,
# which the sanitizer runs set for the ranks (tests/sanitize/run-one.sh):
# the 2-rank check passes with that list set too
check "mpirun -np 2 passes with OMPI_MCA_mca_base_env_list set (as the sanitizer runs set it)" sh -c "
  cd '$tmp/elsewhere' &&
  OMPI_MCA_mca_base_env_list='${OMPI_MCA_mca_base_env_list:+$OMPI_MCA_mca_base_env_list;}PCC_ENV_LIST_PROBE=1' \
    PCC_CHECK_ONLY='^mpirun' '$tmp/there/pcc-gpu/run-gpu-check' --standin --quick envlist.md &&
  grep -q '^| training | mpirun -np 2 | PASS | ' envlist.md"

# the same checks failing
sabotage() {
	cp -a "$tmp/there/pcc-gpu" "$tmp/bad" &&
		cp "$tmp/bad/fx/models/gpt_op17/test_data_set_0/output_0.pb" "$tmp/bad/fx/models/mlp_op17/test_data_set_0/output_0.pb" &&
		rm "$tmp/bad/fx/train/gpt/test_data_set_0/input_1.pb" || return 1
	PCC_CHECK_ONLY='^(mlp_op17|gpt_1|gpt2)$' PCC_CHECK_GPT2_STEPS=1 "$tmp/bad/run-gpu-check" --standin --quick "$tmp/bad.md" \
		2>"$tmp/bad.log" && { echo "exit status 0" >&2; return 1; }
	sed -n '/^| phase/,$p' "$tmp/bad.md" >&2
	grep -q '^| fixtures | mlp_op17 | FAIL | outputs differ' "$tmp/bad.md" &&
		grep -q '^| training | gpt_1 | FAIL | ' "$tmp/bad.md" &&
		grep -q '^| gpt2 | tiny GPT .* | FAIL | ' "$tmp/bad.md" &&
		grep -q '^RESULT: FAIL (.*, 3 failed,' "$tmp/bad.md"
}
check "the checks can fail: wrong expected outputs, a training run that fails, a loss that does not fall" sabotage
tap_done
