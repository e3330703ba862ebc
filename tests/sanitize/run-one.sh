#!/bin/sh
# run-one.sh COMMAND...: the `meson test --wrapper` of scripts/test-sanitize.
# Runs one test with the sanitizer reports, its own and those of every
# process it starts (pcc, pcc-run's MPI ranks, the test programs), written
# to a directory of its own instead of stderr, where tests compare messages.
# Exits with the test's status, or 1 after printing the reports on stderr
# when there is any: a report fails the test even where the test expected
# the program to fail (exit 1 is ASan's status too) or threw its stderr
# away.
#
# UBSan's reports reach that directory too, with gcc as with clang. gcc's
# libubsan writes its own "runtime error:" lines to stderr whatever
# log_path says (it hands its log_path to libasan instead, whose
# __sanitizer_set_report_path answers the call), so UBSan aborts on its
# first error (abort_on_error=1) and ASan, which handles SIGABRT
# (handle_abort=1), writes that abort as a report to the directory, the
# __ubsan_handle_* frame and the source line on its stack. Any other abort
# (a failed assert) is a report the same way. scripts/test-sanitize checks
# that a UB in a program whose stderr is thrown away fails its test
# (tests/sanitize/canary.c) before it runs the suite.
#
# MPI ranks get their options through Open MPI (mca_base_env_list): the
# same, and for ASan a full unwind of every allocation, so that Open MPI's
# own leaks are recognized by their stacks (tests/sanitize/lsan.supp). The
# full unwind costs pcc 7 times its run time, the ranks little. A pcc-run
# started without mpirun (a singleton) asks for the full unwind itself
# (runtime/main.c's __asan_default_options).
dir=$(mktemp -d "${TMPDIR:-/tmp}/pcc-san.XXXXXX") || exit 1
opts="${ASAN_OPTIONS:-halt_on_error=1}:handle_abort=1"
ubopts="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:abort_on_error=1"
export ASAN_OPTIONS="$opts:log_path=$dir/asan"
export UBSAN_OPTIONS="$ubopts:log_path=$dir/ubsan"
export OMPI_MCA_mca_base_env_list="ASAN_OPTIONS=$opts:fast_unwind_on_malloc=0:log_path=$dir/rank;UBSAN_OPTIONS=$ubopts:log_path=$dir/rank-ubsan"
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
