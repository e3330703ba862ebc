# host_pin.sh: pins the host figures pcc plans CPU ranks with
# (compiler/cost/cost_host.c) for a shell test, sourced after tap.sh. The
# figures cached in ~/.cache/pcc/host.json are measured once, and on a
# loaded machine they make other plans (issue 40): a test that compiles for
# cpu:N must not depend on them.
#
# pin_host PCC DIR [COPY CACHE_COPY]: DIR/host.json holds this host's
# identity (cpu, BLAS core, cores, L2, as pcc measures them) with fixed
# figures: sgemm 1.2e11 and dgemm 6e10 flop/s, copy 2e10 and cache_copy
# 7.5e10 bytes/s unless given; PCC_CACHE_DIR is exported to DIR.
pin_host() {
	ph_dir=$2
	rm -rf "$ph_dir" && mkdir -p "$ph_dir" || return 1
	PCC_CACHE_DIR=$ph_dir
	export PCC_CACHE_DIR
	# any compile for CPU ranks measures the host and writes host.json
	"$1" "$(dirname "$0")/models/mlp_op17/model.onnx" --cluster cpu:1 >/dev/null || return 1
	python3 -c '
import json, sys
path = sys.argv[1]
h = json.load(open(path))
h.update(sgemm=1.2e11, dgemm=6e10, copy=float(sys.argv[2]), cache_copy=float(sys.argv[3]), measured="pinned")
json.dump(h, open(path, "w"))' "$ph_dir/host.json" "${3:-2e10}" "${4:-7.5e10}"
}
