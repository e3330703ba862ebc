#!/usr/bin/python3
"""Writes the models of tests/ops (run by hand; needs onnx and numpy, as
Debian's python3-onnx and python3-numpy): small models of one core op for
test_ops_plan.sh, each with its expected outputs.

softplus, softplus_example: the ONNX node tests test_softplus and
  test_softplus_example (libonnx-testdata) with their model's opset stamped
  13 (they declare opset 1, which pcc does not import; Softplus has one
  version from 1 to 21). Only model.onnx is written: the test reads the data
  sets from the node tests themselves.
softplus_mlp: y = Softplus(Softplus(x W1) W2) at opset 13, x [8, 16], large
  enough that a 4-rank plan splits it; the expected output from numpy in
  float64 (softplus as logaddexp(0, h)) rounded to float32.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
node_tests = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/libonnx-testdata/data/node"


def restamp(name):
    m = onnx.load(os.path.join(node_tests, "test_" + name, "model.onnx"))
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 13
    d = os.path.join(here, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))


def write_set(d, arrays, prefix):
    os.makedirs(d, exist_ok=True)
    for i, a in enumerate(arrays):
        with open(os.path.join(d, f"{prefix}_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())


def softplus_mlp():
    rng = np.random.default_rng(37)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    w1 = (rng.standard_normal((16, 32)) * 2).astype(np.float32)  # softplus sees -20..20
    w2 = (rng.standard_normal((32, 16)) * 0.2).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Softplus", ["h"], ["s"]),
        helper.make_node("MatMul", ["s", "w2"], ["z"]),
        helper.make_node("Softplus", ["z"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "softplus_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 16])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    d = os.path.join(here, "softplus_mlp")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    h = x.astype(np.float64) @ w1.astype(np.float64)
    z = np.logaddexp(0, h) @ w2.astype(np.float64)
    y = np.logaddexp(0, z).astype(np.float32)
    write_set(os.path.join(d, "test_data_set_0"), [x], "input")
    write_set(os.path.join(d, "test_data_set_0"), [y], "output")


restamp("softplus")
restamp("softplus_example")
softplus_mlp()
