#!/bin/sh
# test_docs.sh SRC: the README stays a front door and the documentation's
# links hold (TAP). SRC/README.md has at most 200 lines; every relative
# link or image in README.md, NEWS.md and docs/*.md names a file or folder
# that exists in the source tree SRC (an anchor after # is not checked);
# README.md links into nothing outside the tree (no ../). Links in code
# (indented blocks, fenced blocks, `spans`) are not links and are skipped.
src=$1
. "$(dirname "$0")/tap.sh"

# The link targets of markdown file $1, one a line: [text](target) and
# ![alt](target), outside code, without a title or an anchor.
targets() {
	awk '
		/^```/ { fence = !fence; next }
		fence || /^(    |\t)/ { next }
		{
			line = $0
			gsub(/`[^`]*`/, "", line)
			while (match(line, /\]\([^)]*\)/)) {
				t = substr(line, RSTART + 2, RLENGTH - 3)
				line = substr(line, RSTART + RLENGTH)
				sub(/[ \t].*/, "", t)
				sub(/#.*/, "", t)
				if (t != "" && t !~ /^[a-z]+:/) print t
			}
		}' "$1"
}

# Every relative link of file $1 resolves to something inside $src.
links_hold() {
	dir=$(dirname "$1")
	root=$(cd "$src" && pwd -P)
	bad=0
	for t in $(targets "$1"); do
		p="$dir/$t"
		if [ ! -e "$p" ]; then
			echo "$1: $t: no such file" >&2
			bad=1
		elif case "$(cd "$(dirname "$p")" && pwd -P)/" in "$root"/*) false ;; *) true ;; esac then
			echo "$1: $t: outside the source tree" >&2
			bad=1
		fi
	done
	return $bad
}

short() {
	lines=$(wc -l <"$src/README.md")
	[ "$lines" -le 200 ] || { echo "README.md has $lines lines, more than 200" >&2; return 1; }
}

no_parent() {
	if targets "$src/README.md" | grep '^\.\./' >&2; then return 1; fi
	return 0
}

check "README.md has at most 200 lines" short
check "README.md links into nothing outside the tree (../)" no_parent
for f in "$src/README.md" "$src/NEWS.md" "$src"/docs/*.md; do
	check "the relative links of ${f#"$src"/} name files that exist" links_hold "$f"
done
tap_done
