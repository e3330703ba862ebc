#!/bin/sh
# test_layers.sh SRC PCC_RUN COMPILER_LIB BUILD: the modules depend one way
# (TAP). Every #include "DIR/..." of a module's files names a module it may
# use, lowest first:
#   ir       ir                         solvers  solvers
#   kernels  ir                         onnxio   ir
#   compiler ir solvers kernels onnxio  runtime  ir kernels onnxio
# (each also itself); runtime/ includes no compiler/ header and not the
# ONNX schema's generated C (onnx.pb-c.h, onnxio's protobuf level). And
# pcc-run, linked, holds no symbol that the compiler's library
# (COMPILER_LIB, libpcccompiler.a) defines: no importer, no graph builder,
# no interpreter graph walk; named markers first (onnx_import, the
# importer's handler table onnx_ops_basic, the builder b_node) for a clear
# message, then every global the library defines. And runtime/ is built
# in runtime/meson.build alone (libpccrt, and its MPI entry once per MPI:
# libpccrt_mpi, libpccrt_mpich): no other build file lists one of its .c
# files, and no C file includes one. And the module graph that
# docs/architecture.md draws is the one scripts/module-graph derives from
# BUILD. And the C files of compiler/ and runtime/ call each other in no
# circle (scripts/file-cycles, over BUILD's object files). And compiler/'s
# own folders (its sub-folders and the flat files of compiler/ itself)
# include each other's headers one way: no circle.
src=$1 run=$2 lib=$3 build=$4
LC_ALL=C
export LC_ALL
. "$(dirname "$0")/tap.sh"

# uses MODULE ALLOWED...: MODULE's files include only DIR/ headers of the
# allowed modules and its own.
uses() {
	m=$1
	shift
	bad=0
	for f in $(cd "$src" && find "$m" -name '*.[ch]' | sort); do
		for d in $(sed -n 's|^[ \t]*#[ \t]*include[ \t]*"\([^/"]*\)/.*|\1|p' "$src/$f" | sort -u); do
			case " $m $* " in
			*" $d "*) ;;
			*)
				grep -n "#[ \t]*include[ \t]*\"$d/" "$src/$f" | sed "s|^|$f:|" >&2
				bad=1
				;;
			esac
		done
	done
	return $bad
}

no_onnx_schema() {
	! grep -rn '#[ \t]*include[ \t]*"onnx\.pb-c\.h"' "$src/runtime" >&2
}

# No build file but runtime/meson.build lists a runtime/ source (as a path
# or runtime_srcs; comments aside): pcc-run, the tests and the benchmarks
# link libpccrt (pccrt_dep) instead of compiling runtime/ into themselves.
runtime_built_once() {
	bad=0
	for f in $(cd "$src" && ls meson.build */meson.build */*/meson.build 2>/dev/null); do
		[ "$f" != runtime/meson.build ] || continue
		sed 's/#.*//' "$src/$f" | grep -En "runtime_srcs|runtime/[A-Za-z0-9_]+\.c|'runtime' */ *'[A-Za-z0-9_]+\.c'" |
			sed "s|^|$f:|" >"$tmp/listed"
		[ ! -s "$tmp/listed" ] || { cat "$tmp/listed" >&2; bad=1; }
	done
	return $bad
}

# No C file #includes a .c file of runtime/ (a test or benchmark taking
# pcc-run's code by inclusion, or runtime/ one of its own files).
no_runtime_c_included() {
	inc='^[ \t]*#[ \t]*include[ \t]*"'
	bad=0
	for d in ir solvers kernels onnxio compiler runtime tests benchmarks; do
		grep -rnE --include='*.[ch]' "$inc[^\"]*runtime/[^\"]*\.c\"" "$src/$d" >&2 && bad=1
	done
	grep -rnE --include='*.[ch]' "$inc[^\"/]*\.c\"" "$src/runtime" >&2 && bad=1
	return $bad
}

# The global symbols that binary or archive $1 defines, one a line.
defined() {
	nm --defined-only -g "$1" 2>/dev/null | awk 'NF >= 3 && $2 != "U" { print $3 }' | sort -u
}

# pcc-run has a symbol table to read (a stripped binary would pass the
# checks below vacuously).
has_symbols() {
	defined "$run" >"$tmp/run.syms"
	for s in main rt_step interp_kernel onnx_weights_open; do
		grep -qx "$s" "$tmp/run.syms" || { echo "pcc-run: no symbol $s (stripped?)" >&2; return 1; }
	done
}

no_markers() {
	bad=0
	for s in onnx_import onnx_ops_basic b_node; do
		if grep -qx "$s" "$tmp/run.syms"; then
			echo "pcc-run holds $s: it links the ONNX importer" >&2
			bad=1
		fi
	done
	return $bad
}

nothing_of_compiler() {
	defined "$lib" >"$tmp/lib.syms"
	[ -s "$tmp/lib.syms" ] || { echo "$lib: no symbols read" >&2; return 1; }
	comm -12 "$tmp/run.syms" "$tmp/lib.syms" >"$tmp/both"
	if [ -s "$tmp/both" ]; then
		echo "pcc-run holds $(wc -l <"$tmp/both") symbols of the compiler's library: $(head -5 "$tmp/both" | tr '\n' ' ')" >&2
		return 1
	fi
}

# compiler/'s folders include one way: the folder of each file of
# compiler/ and the folder of each compiler/ header it includes (a
# sub-folder, or compiler/ itself for compiler.h, parallel.h, progress.h)
# make a graph without a circle; tsort finds one and names its folders.
compiler_one_way() {
	(cd "$src" && find compiler -name '*.[ch]' | sort) | while read -r f; do
		from=$(dirname "$f")
		sed -n 's|^[ \t]*#[ \t]*include[ \t]*"\(compiler/[^"]*\)".*|\1|p' "$src/$f" | while read -r h; do
			to=$(dirname "$h")
			[ "$to" = "$from" ] || echo "$from $to"
		done
	done | sort -u >"$tmp/folders"
	[ -s "$tmp/folders" ] || { echo "compiler/: no include of another of its folders read" >&2; return 1; }
	tsort "$tmp/folders" >/dev/null 2>"$tmp/tsort.err" && return 0
	loop=$(sed -n '/input contains a loop/d; s/^tsort: //p' "$tmp/tsort.err" | awk '!seen[$0]++')
	echo "compiler/'s folders include each other in a circle: $(echo $loop) (architecture.md, compiler/'s row)" >&2
	for a in $loop; do
		for b in $loop; do
			[ "$a" = "$b" ] || grep -Hn "#[ \t]*include[ \t]*\"$b/[^/]*\"" "$src/$a"/*.[ch] 2>/dev/null | sed "s|^$src/||" | head -1 >&2
		done
	done
	return 1
}

# docs/architecture.md's module graph, between its markers, is what
# scripts/module-graph prints for this build.
graph_current() {
	python3 "$src/scripts/module-graph" "$build" >"$tmp/graph.new" || return 1
	sed -n '/^<!-- begin module-graph -->$/,/^<!-- end module-graph -->$/p' "$src/docs/architecture.md" |
		sed '1d;$d' >"$tmp/graph.doc"
	[ -s "$tmp/graph.doc" ] || { echo "docs/architecture.md: no module-graph markers" >&2; return 1; }
	diff "$tmp/graph.doc" "$tmp/graph.new" >"$tmp/graph.diff" && return 0
	echo "docs/architecture.md's module graph is stale: scripts/module-graph build --write docs/architecture.md" >&2
	cat "$tmp/graph.diff" >&2
	return 1
}

# No circle among the files of compiler/ and runtime/: no file calls a
# function of another that calls back, directly or through others (issue
# 37 broke up the last ones). A circle is one concern split in the wrong
# place; the message names the calls that close it.
no_circle() {
	[ -s "$tmp/built" ] || { echo "file-cycles $build: no C file of compiler/ or runtime/ built" >&2; return 1; }
	[ -s "$tmp/circles" ] || return 0
	echo "files that call each other in a circle (architecture.md, \"Checking the structure\"):" >&2
	python3 "$src/scripts/file-cycles" "$build" --edges >&2
	return 1
}

check "ir/ includes only ir/" uses ir
check "solvers/ includes only solvers/" uses solvers
check "kernels/ includes only ir/ and kernels/" uses kernels ir
check "onnxio/ includes only ir/ and onnxio/" uses onnxio ir
check "compiler/ includes only ir/, solvers/, kernels/, onnxio/ and compiler/" uses compiler ir solvers kernels onnxio
check "runtime/ includes only ir/, kernels/, onnxio/ and runtime/ (no compiler/)" uses runtime ir kernels onnxio
check "compiler/'s sub-folders and flat files include each other one way" compiler_one_way
check "runtime/ does not include the ONNX schema (onnx.pb-c.h)" no_onnx_schema
check "only runtime/meson.build compiles runtime/'s files (the rest link libpccrt)" runtime_built_once
check "no C file includes a .c file of runtime/" no_runtime_c_included
check "pcc-run has a symbol table" has_symbols
check "pcc-run holds no importer marker (onnx_import, onnx_ops_basic, b_node)" no_markers
check "pcc-run holds no symbol of libpcccompiler.a" nothing_of_compiler
check "docs/architecture.md's module graph is scripts/module-graph's" graph_current
python3 "$src/scripts/file-cycles" "$build" --built >"$tmp/built" 2>"$tmp/cycles.err" &&
	python3 "$src/scripts/file-cycles" "$build" >"$tmp/circles" 2>>"$tmp/cycles.err" ||
	: >"$tmp/built"
cycles_ran() {
	[ -s "$tmp/built" ] || { cat "$tmp/cycles.err" >&2; return 1; }
}
check "scripts/file-cycles reads the object files of compiler/ and runtime/" cycles_ran
check "no circle among the files of compiler/ or runtime/" no_circle
tap_done
