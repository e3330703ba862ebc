# tap.sh: TAP for the shell tests, sourced by them. Gives $tmp (a scratch
# directory removed on exit), check DESCRIPTION COMMAND... (one case: the
# command's exit status; its stderr shown on failure) and tap_done.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
check() {
	desc=$1
	shift
	n=$((n + 1))
	if "$@" </dev/null >"$tmp/out" 2>"$tmp/err"; then echo "ok $n - $desc"; else
		echo "not ok $n - $desc"
		sed 's/^/# /' "$tmp/err" | head -5
		fail=1
	fi
}
tap_done() {
	echo "1..$n"
	exit $fail
}
# todo REASON DESCRIPTION COMMAND...: a case known not to hold yet (TAP's
# TODO directive: meson counts its failure as expected, its pass as
# unexpected, so a fix must drop the todo).
todo() {
	why=$1 desc=$2
	shift 2
	n=$((n + 1))
	if "$@" </dev/null >"$tmp/out" 2>"$tmp/err"; then echo "ok $n - $desc # TODO $why"; else
		echo "not ok $n - $desc # TODO $why"
		sed 's/^/# /' "$tmp/err" | head -3
	fi
}
# skip REASON DESCRIPTION: a case that this build cannot run (TAP's SKIP
# directive).
skip() {
	n=$((n + 1))
	echo "ok $n - $2 # SKIP $1"
}
