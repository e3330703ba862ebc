#!/usr/bin/env bash
# Regenerates tests/onnx_quant (gen.py) in a throwaway venv with onnx,
# numpy and onnxruntime from PyPI. Run by hand; CI only reads the files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q 'onnx==1.16.2' 'onnxruntime==1.32.0' ml_dtypes numpy
"$venv/bin/python" "$here/gen.py"
