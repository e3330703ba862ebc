#!/usr/bin/env bash
# Copies the ONNX backend node tests of opsets 18 to 21 that touch only ops
# pcc imports from the onnx 1.16.2 wheel (its newest opset is 21; Debian's
# libonnx-testdata is ONNX 1.12, opset 17) into this directory. Run by hand
# after an op is added to compiler/frontend/onnx_ops*.c; needs python3 -m venv and
# network access to PyPI. CI only reads the copies.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q 'onnx==1.16.2' 'numpy<2'
"$venv/bin/python" - "$here" <<'PY'
import os, re, shutil, sys
import onnx

here = sys.argv[1]
src = os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node")
ops = set()
compiler = os.path.join(here, "../../compiler")
for f in os.listdir(compiler):
    if f.startswith("onnx_ops") and f.endswith(".c"):
        ops |= set(re.findall(r'\{ "([A-Z]\w*)", (?:h|onnx)_\w+', open(os.path.join(compiler, f)).read()))
for old in os.listdir(here):
    if old.startswith("test_"):
        shutil.rmtree(os.path.join(here, old))
MAX_BYTES = 100_000  # a few 3-D pooling tests are 130-750 KB; opset 11's cover them
kept = []
for t in sorted(os.listdir(src)):
    m = onnx.load(os.path.join(src, t, "model.onnx"))
    v = [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")]
    if len(m.opset_import) != 1 or not v or not 18 <= v[0] <= 21:
        continue
    if not all(n.op_type in ops and n.domain in ("", "ai.onnx") for n in m.graph.node):
        continue
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(os.path.join(src, t)) for f in fs)
    if size > MAX_BYTES:
        print(f"left out {t}: {size} bytes")
        continue
    shutil.copytree(os.path.join(src, t), os.path.join(here, t))
    kept.append(t)
print(f"{len(kept)} node tests of opsets 18 to 21 copied from onnx {onnx.__version__}")
PY
