#!/bin/sh
# test_npy.sh PCC PCC_RUN PB_CMP: data written by numpy.save (input_N.npy,
# tests/npy/) feeds pcc eval, pcc train and pcc-run as input_N.pb does
# (TAP): the same outputs as the fixtures' expected ones (pb_cmp), the same
# losses as the .pb data's; a .npy pcc cannot read is one error line
# naming the file and what is wrong (bad magic, Fortran order, a
# big-endian or unsupported element type, too few bytes). .npz archives
# (numpy.savez, by name, by position, compressed, a folder of them as the
# sets) feed pcc-run --data and pcc train -i with the .pb data's losses,
# pcc eval -i with the fixtures' outputs; an archive missing
# an input's array, or no zip, is one error line naming it.
abspath() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
pcc=$(abspath "$1")
run=$(abspath "$2")
cmp=$(abspath "$3")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
. "$here/host_pin.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi="timeout 60 mpirun --oversubscribe"
npy=$here/npy
m=$here/models
g=$here/train/gpt

for f in mlp_op17 gpt_op17; do
	check "pcc eval $f with input_0.npy: the fixture's expected outputs" sh -c "
	  '$pcc' eval '$m/$f/model.onnx' -i '$npy/$f' -o '$tmp/$f' >/dev/null &&
	  '$cmp' --rtol 1e-5 --atol 1e-6 '$tmp/$f' '$m/$f/test_data_set_0'"
done
losses() { grep '^step' "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "loss") print $(i + 1) }'; }
check "pcc train on .npy data: the same losses as on the .pb data" sh -c "
  '$pcc' train '$g/model.onnx' -i '$npy/gpt' --loss cross_entropy:logits,labels --steps 3 --log-every 1 \
    >'$tmp/tn.log' 2>&1 &&
  '$pcc' train '$g/model.onnx' -i '$g/test_data_set_0' --loss cross_entropy:logits,labels --steps 3 --log-every 1 \
    >'$tmp/tp.log' 2>&1 &&
  [ \"\$(grep -c '^step' '$tmp/tn.log')\" = 3 ] && cmp -s '$tmp/tn.log' '$tmp/tp.log'"
"$pcc" "$g/model.onnx" --cluster cpu:2 --train --loss cross_entropy:logits,labels -o "$tmp/g.bin" -q >/dev/null
check "pcc-run --data on .npy data (2 ranks): the same losses as on the .pb data" sh -c "
  $mpi -np 2 '$run' '$tmp/g.bin' --data '$npy/gpt' --steps 3 >'$tmp/rn.log' 2>&1 &&
  $mpi -np 2 '$run' '$tmp/g.bin' --data '$g/test_data_set_0' --steps 3 >'$tmp/rp.log' 2>&1 &&
  grep '^step' '$tmp/rn.log' | cut -d' ' -f1-6 >'$tmp/a' && grep '^step' '$tmp/rp.log' | cut -d' ' -f1-6 >'$tmp/b' &&
  [ \$(wc -l <'$tmp/a') = 3 ] && cmp -s '$tmp/a' '$tmp/b'"

# bad NAME HEADER PAYLOAD_BYTES: a .npy of mlp_op17's input with that header
bad() {
	mkdir -p "$tmp/$1"
	python3 - "$tmp/$1/input_0.npy" "$2" "$3" <<'PY'
import struct, sys
path, head, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
magic = b"\x93NUMPY" if not head.startswith("!") else b"\x93NUMPX"
head = head.lstrip("!").encode()
head += b" " * ((64 - (10 + len(head) + 1) % 64) % 64) + b"\n"
open(path, "wb").write(magic + b"\x01\x00" + struct.pack("<H", len(head)) + head + bytes(n))
PY
}
ok_head="{'descr': '<f4', 'fortran_order': False, 'shape': (4, 16), }"
bad good "$ok_head" 256
check "a .npy written by hand (the control): pcc eval takes it" \
	"$pcc" eval "$m/mlp_op17/model.onnx" -i "$tmp/good" -o "$tmp/o"
bad magic "!$ok_head" 256
bad fortran "{'descr': '<f4', 'fortran_order': True, 'shape': (4, 16), }" 256
bad big "{'descr': '>f4', 'fortran_order': False, 'shape': (4, 16), }" 256
bad complex "{'descr': '<c8', 'fortran_order': False, 'shape': (4, 16), }" 512
bad short "$ok_head" 100
for c in "magic:no \\\\x93NUMPY magic" "fortran:Fortran (column-major) order" "big:element type '>f4'" \
	"complex:element type '<c8'" "short:256 bytes of elements expected"; do
	name=${c%%:*} want=${c#*:}
	check "a .npy with $name: one error line naming the file and what is wrong" sh -c "
	  ! '$pcc' eval '$m/mlp_op17/model.onnx' -i '$tmp/$name' -o '$tmp/o$name' 2>'$tmp/e' >/dev/null &&
	  [ \$(wc -l <'$tmp/e') = 1 ] && grep -q '$tmp/$name/input_0.npy' '$tmp/e' && grep -qF \"$want\" '$tmp/e'"
done
check "pcc-run --data with a bad .npy: one error line naming it" sh -c "
  mkdir -p '$tmp/rb' && cp '$tmp/fortran/input_0.npy' '$tmp/rb/' && cp '$npy/gpt/input_1.npy' '$tmp/rb/' &&
  ! $mpi -np 2 '$run' '$tmp/g.bin' --data '$tmp/rb' --steps 1 >/dev/null 2>'$tmp/re' &&
  [ \$(grep -c 'pcc-run' '$tmp/re') = 1 ] && grep -q 'rb/input_0.npy' '$tmp/re'"

# .npz (numpy.savez): the gpt fixture's two inputs as one archive, by name
# (ids=, labels=), by position (arr_0, arr_1), compressed (deflate), and a
# folder of archives as the sets; written by numpy (/usr/bin/python3 has it:
# install-deps' python3-numpy)
py=/usr/bin/python3
if $py -c "import numpy" 2>/dev/null; then
	$py - "$npy/gpt" "$tmp" <<'PY'
import os, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
ids, labels = np.load(src + "/input_0.npy"), np.load(src + "/input_1.npy")
np.savez(out + "/named.npz", labels=labels, ids=ids)  # names, not order, decide
np.savez(out + "/order.npz", ids, labels)
np.savez_compressed(out + "/packed.npz", ids=ids, labels=labels)
np.savez(out + "/partial.npz", ids=ids)
os.mkdir(out + "/sets")
for k in range(3):
    np.savez(out + "/sets/%02d.npz" % k, ids=ids, labels=labels)
open(out + "/notzip.npz", "wb").write(b"PK not really a zip")
PY
	for f in named order packed; do
		check "pcc-run --data $f.npz (2 ranks): the same losses as on the .pb data" sh -c "
		  $mpi -np 2 '$run' '$tmp/g.bin' --data '$tmp/$f.npz' --steps 3 >'$tmp/z$f.log' 2>&1 &&
		  grep '^step' '$tmp/z$f.log' | cut -d' ' -f1-6 >'$tmp/z$f' && cmp -s '$tmp/z$f' '$tmp/b'"
	done
	for f in mlp_op17 gpt_op17; do
		$py -c "import numpy as np, sys; np.savez(sys.argv[2], np.load(sys.argv[1]))" "$npy/$f/input_0.npy" \
			"$tmp/$f.npz"
		check "pcc eval $f -i $f.npz (arr_0): the fixture's expected outputs" sh -c "
		  '$pcc' eval '$m/$f/model.onnx' -i '$tmp/$f.npz' -o '$tmp/z$f' >/dev/null &&
		  '$cmp' --rtol 1e-5 --atol 1e-6 '$tmp/z$f' '$m/$f/test_data_set_0'"
	done
	check "pcc train -i named.npz and -i DIR of .npz files: the same losses as on the .pb data" sh -c "
	  '$pcc' train '$g/model.onnx' -i '$tmp/named.npz' --loss cross_entropy:logits,labels --steps 3 --log-every 1 \
	    >'$tmp/tz.log' 2>&1 && cmp -s '$tmp/tz.log' '$tmp/tp.log' &&
	  '$pcc' train '$g/model.onnx' -i '$tmp/sets' --loss cross_entropy:logits,labels --steps 3 --log-every 1 \
	    >'$tmp/tzs.log' 2>&1 && grep -q '3 data sets' '$tmp/tzs.log' && grep '^step' '$tmp/tzs.log' >'$tmp/tzs' &&
	  grep '^step' '$tmp/tp.log' | cmp -s - '$tmp/tzs'"
	check "pcc-run --data DIR of 3 .npz files: 3 sets, shuffled, the same losses" sh -c "
	  $mpi -np 2 '$run' '$tmp/g.bin' --data '$tmp/sets' --shuffle 3 --steps 3 --log-json '$tmp/zs.jsonl' \
	    >'$tmp/zs.log' 2>&1 && grep -q '3 data sets' '$tmp/zs.log' &&
	  grep '^step' '$tmp/zs.log' | cut -d' ' -f1-6 >'$tmp/zs' && cmp -s '$tmp/zs' '$tmp/b' &&
	  $py -c 'import json, sys; s = sorted(json.loads(l)[\"sets\"][0] for l in open(sys.argv[1])); assert s == [0, 1, 2], s' '$tmp/zs.jsonl'"
	check "a .npz without an input's array: one error line naming the file and both member names" sh -c "
	  ! $mpi -np 2 '$run' '$tmp/g.bin' --data '$tmp/partial.npz' --steps 1 >/dev/null 2>'$tmp/ze' &&
	  [ \$(grep -c 'pcc-run' '$tmp/ze') = 1 ] && grep 'partial.npz' '$tmp/ze' | grep -q 'labels.npy nor arr_1.npy'"
	check "a .npz that is no zip: one error line naming it" sh -c "
	  ! $mpi -np 2 '$run' '$tmp/g.bin' --data '$tmp/notzip.npz' --steps 1 >/dev/null 2>'$tmp/zn' &&
	  [ \$(grep -c 'pcc-run' '$tmp/zn') = 1 ] && grep -q 'notzip.npz: not a .npz file' '$tmp/zn'"
else
	echo "# /usr/bin/python3 without numpy: the .npz cases skipped"
fi
tap_done
