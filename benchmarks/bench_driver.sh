#!/usr/bin/env bash
# bench_driver.sh BUILD SRC OUT: builds a benchmark's timing driver, SRC (a
# file that includes runtime/main.c with its timing around it, e.g.
# codegen_run.c, cpu_model_run.c), linked like pcc-run from BUILD's objects
# and libraries, into the executable OUT. Used by codegen.sh and cpu_model.sh.
set -euo pipefail
build=$1 src=$2 out=$3
root=$(cd "$(dirname "$0")/.." && pwd)
inc="-I$build/runtime/pcc-run.p -I$build/runtime -I$root/runtime -I$build -I$root"
inc="$inc -I/usr/include/x86_64-linux-gnu/openblas-pthread/ $(mpicc --showme:compile)"
objs=$(ls "$build"/runtime/pcc-run.p/*.o | grep -v '/main\.c\.o$')
cc $inc -D_FILE_OFFSET_BITS=64 -std=gnu11 -O2 -pthread -c "$src" -o "$out.o"
cc -o "$out" "$out.o" $objs -Wl,--start-group "$build"/kernels/libpcckernels.a "$build"/onnxio/libpcconnxio.a \
	"$build"/ir/libpccir.a -Wl,--end-group -lm -lprotobuf-c -lxxhash -lcrypto -ljansson \
	-lz -L/usr/lib/x86_64-linux-gnu/openblas-pthread -Wl,-rpath,/usr/lib/x86_64-linux-gnu/openblas-pthread \
	-lopenblas -pthread $(mpicc --showme:link)
rm -f "$out.o"
