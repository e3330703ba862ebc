#!/bin/sh
# test_format.sh SRC: every tracked C file of the source tree SRC is laid
# out as its .clang-format says (STYLE.md 11), by scripts/format --check
# with clang-format 14 (TAP, one case). Exits 77, skipped, where
# clang-format 14 is not installed. To fix a failure: scripts/format.
src=$1
out=$("$src/scripts/format" --check 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
	echo "1..0 # SKIP $out"
	exit 77
fi
if [ $rc -eq 0 ]; then
	echo "ok 1 - every tracked C file is as .clang-format lays it out"
	echo "1..1"
	exit 0
fi
n=$(printf '%s\n' "$out" | grep -c '^[^ ]*:[0-9]*$')
if [ "$n" -eq 0 ]; then
	echo "not ok 1 - scripts/format --check failed (exit $rc)"
else
	echo "not ok 1 - $n C files are not as .clang-format lays them out (scripts/format fixes them)"
fi
printf '%s\n' "$out" | head -n 10 | sed 's/^/# /'
if [ "$n" -gt 10 ]; then echo "# ... and $((n - 10)) more"; fi
echo "1..1"
exit 1
