#!/bin/sh
# test_man.sh PAGE...: the man pages help2man made from each program's
# --help and --version (TAP): each is titled with its program, carries the
# version --version prints and lists an option its --help has; skipped
# where help2man was absent.
. "$(dirname "$0")/tap.sh"
if [ $# -eq 0 ]; then
	echo "1..0 # SKIP help2man is not installed (scripts/install-deps installs it)"
	exit 0
fi
# page_ok PAGE TITLE OPTION: roff escapes each '-' of an option as '\-'
page_ok() {
	grep -q "^\.TH \"\{0,1\}$2\"\{0,1\} " "$1" || { echo "no .TH $2" >&2; return 1; }
	grep -q '0\.1\.0 (commit ' "$1" || { echo "no version" >&2; return 1; }
	sed 's/\\-/-/g; s/\\f[BRI]//g' "$1" | grep -q -- "$3" || { echo "no $3" >&2; return 1; }
}
for page in "$@"; do
	prog=$(basename "$page" .1)
	case $prog in
	pcc) opt=--cluster ;;
	pcc-run) opt=--log-json ;;
	pcc-modelgen) opt=--seq ;;
	*) opt=--eval ;;
	esac
	check "$prog.1: titled $prog, with the version --version prints and $opt from --help" \
		page_ok "$page" "$(echo "$prog" | tr 'a-z' 'A-Z')" "$opt"
done
tap_done
