#!/bin/sh
# run-one.sh COMMAND...: the `meson test --wrapper` of scripts/test-sanitize.
# Runs one test with the ASan and LSan reports, its own and those of every
# process it starts (pcc, pcc-run's MPI ranks, the test programs), written
# to a directory of its own instead of stderr, where tests compare messages.
# Exits with the test's status, or 1 after printing the reports on stderr
# when there is any: a report fails the test even where the test expected
# the program to fail (exit 1 is ASan's status too). UBSan's reports go
# there too when clang built pcc; gcc's UBSan writes only to stderr.
#
# MPI ranks get their ASan options through Open MPI (mca_base_env_list):
# the same, and a full unwind of every allocation, so that Open MPI's own
# leaks are recognized by their stacks (tests/sanitize/lsan.supp). The
# full unwind costs pcc 7 times its run time, the ranks little.
dir=$(mktemp -d "${TMPDIR:-/tmp}/pcc-san.XXXXXX") || exit 1
opts=${ASAN_OPTIONS:-halt_on_error=1}
export ASAN_OPTIONS="$opts:log_path=$dir/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$dir/ubsan"
export OMPI_MCA_mca_base_env_list="ASAN_OPTIONS=$opts:fast_unwind_on_malloc=0:log_path=$dir/rank"
"$@"
status=$?
if [ -n "$(ls -A "$dir")" ]; then
	for f in "$dir"/*; do
		echo "sanitizer report ($f):" >&2
		cat "$f" >&2
	done
	rm -rf "$dir"
	exit 1
fi
rm -rf "$dir"
exit "$status"
