#!/usr/bin/env python3
"""Writes tests/onnx_opsets_expect.h: inputs and expected outputs of the
hand-built models of test_onnx_opsets.c (the op forms of opsets 18 to 21),
computed by ONNX's own reference evaluator (onnx.reference, numpy), not by
pcc. Run by hand with onnx 1.16 (its newest opset is 21) and numpy < 2:

    python3 -m venv /tmp/onnx116 && /tmp/onnx116/bin/pip install onnx==1.16.2 'numpy<2'
    /tmp/onnx116/bin/python tests/gen_onnx_opsets.py && scripts/format tests/onnx_opsets_expect.h

Each case here is one model; test_onnx_opsets.c builds the same one with
onnx_builder.h (keep the two in step) and compares pcc's interpreter with
these numbers. The inputs are written out too, so both sides read the same
values.
"""
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

HERE = os.path.dirname(os.path.abspath(__file__))
out = []


def cfloat(v):
    t = f"{float(v):.9g}"  # enough digits to give back the same float
    return t + ("f" if "." in t or "e" in t else ".0f")


def carray(name, a):
    a = np.asarray(a)
    ctype = {np.float32: "float", np.int64: "int64_t", np.int32: "int32_t", np.uint8: "uint8_t",
             np.bool_: "uint8_t"}[a.dtype.type]
    flat = a.reshape(-1)
    if a.dtype == np.float32:
        vals = ", ".join(cfloat(v) for v in flat)
    else:
        vals = ", ".join(str(int(v)) for v in flat)
    out.append(f"/* {list(a.shape)} */\nstatic const {ctype} {name}[] = {{ {vals} }};")


def run(case, opset, nodes, inputs, outputs):
    """inputs: {name: array}, given as initializers (the models have no
    graph inputs); outputs: [(name, onnx type)]."""
    init = [onnx.numpy_helper.from_array(v, k) for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in outputs]
    g = helper.make_graph(nodes, case, [], outs, init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    res = ReferenceEvaluator(m).run(None, {})
    for k, v in inputs.items():
        carray(f"{case}_{k}", v)
    for (n, _), r in zip(outputs, res):
        carray(f"{case}_{n}", np.asarray(r))


F = TensorProto.FLOAT
x24 = (np.arange(24, dtype=np.float32) * 0.25 - 3).reshape(2, 3, 4)

# Reduce*-18: axes as an input, noop_with_empty_axes; ReduceMax/Min-20 on bool
run("reduce", 18, [
    helper.make_node("ReduceL2", ["x", "ax_l2"], ["l2"], keepdims=0),
    helper.make_node("ReduceLogSumExp", ["x", "ax_lse"], ["lse"], keepdims=1),
    helper.make_node("ReduceSumSquare", ["x"], ["ssq"], keepdims=0),
    helper.make_node("ReduceProd", ["x", "ax_prod"], ["prod"], keepdims=0),
], {"x": x24, "ax_l2": np.array([-1, 0], np.int64), "ax_lse": np.array([1], np.int64),
    "ax_prod": np.array([2], np.int64)},
    [("l2", F), ("lse", F), ("ssq", F), ("prod", F)])
run("reduce_bool", 20, [
    helper.make_node("ReduceMax", ["b", "ax"], ["any"], keepdims=0),
    helper.make_node("ReduceMin", ["b", "ax"], ["all"], keepdims=0),
], {"b": np.array([[0, 0, 0], [0, 1, 0], [1, 1, 1]], np.bool_), "ax": np.array([1], np.int64)},
    [("any", TensorProto.BOOL), ("all", TensorProto.BOOL)])

# Pad-18 axes, Pad-19 wrap (pads beyond the dim)
x6 = (np.arange(6, dtype=np.float32) + 1).reshape(2, 3)
run("pad", 19, [
    helper.make_node("Pad", ["x", "p_wrap", "", "ax1"], ["wrap"], mode="wrap"),
    helper.make_node("Pad", ["x", "p_const", "v", "axm1"], ["const"], mode="constant"),
    helper.make_node("Pad", ["x", "p_edge", "", "ax0"], ["edge"], mode="edge"),
], {"x": x6, "p_wrap": np.array([4, 2], np.int64), "ax1": np.array([1], np.int64),
    "p_const": np.array([1, 2], np.int64), "v": np.array(9.5, np.float32), "axm1": np.array([-1], np.int64),
    "p_edge": np.array([1, 2], np.int64), "ax0": np.array([0], np.int64)},
    [("wrap", F), ("const", F), ("edge", F)])

# ScatterElements-18 and ScatterND-18: max and min with repeated indices
run("scatter", 18, [
    helper.make_node("ScatterElements", ["d", "ie", "ue"], ["emax"], axis=1, reduction="max"),
    helper.make_node("ScatterElements", ["d", "ie", "ue"], ["emin"], axis=1, reduction="min"),
], {"d": x6, "ie": np.array([[0, 2, 0], [1, 1, 2]], np.int64),
    "ue": np.array([[5, -1, 0.5], [-4, 7, 2]], np.float32)},
    [("emax", F), ("emin", F)])
# ScatterND min/max by hand: onnx 1.16's reference indexes without a tuple
# there and fails
ind = np.array([[1, 0], [1, 0], [0, 2]], np.int64)
und = np.array([-2, 0.5, 3.5], np.float32)
carray("scatter_ind", ind)
carray("scatter_und", und)
for name, fn in (("ndmin", np.minimum), ("ndmax", np.maximum)):
    y = x6.copy()
    for i in range(len(ind)):
        y[tuple(ind[i])] = fn(y[tuple(ind[i])], und[i])
    carray("scatter_" + name, y)

# Split-18 num_outputs: 7 in parts of ceil(7 / 3)
run("split", 18, [helper.make_node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)],
    {"x": np.arange(7, dtype=np.float32)}, [("a", F), ("b", F), ("c", F)])

# Resize-18/19: axes, keep_aspect_ratio_policy, antialias, half_pixel_symmetric
img = (np.arange(24, dtype=np.float32) ** 1.5 / 7).reshape(1, 1, 4, 6)
run("resize", 19, [
    helper.make_node("Resize", ["x", "", "", "sz_hw"], ["keep"], mode="linear", axes=[2, 3],
                     keep_aspect_ratio_policy="not_larger"),
    # test_onnx_opsets.c lists these axes as [-2, -1] (onnx 1.16's
    # reference does not take negative ones)
    helper.make_node("Resize", ["x", "", "", "sz_hw"], ["keep_big"], mode="nearest", axes=[2, 3],
                     keep_aspect_ratio_policy="not_smaller"),
    helper.make_node("Resize", ["x", "", "sc_half"], ["aa_lin"], mode="linear", antialias=1),
    helper.make_node("Resize", ["x", "", "", "sz_cubic"], ["aa_cub"], mode="cubic", antialias=1),
    helper.make_node("Resize", ["x", "", "sc_sym"], ["sym"], mode="linear",
                     coordinate_transformation_mode="half_pixel_symmetric"),
    helper.make_node("Resize", ["x", "", "sc_w"], ["axis_w"], mode="nearest", axes=[3]),
], {"x": img, "sz_hw": np.array([3, 3], np.int64), "sc_half": np.array([1, 1, 0.5, 0.5], np.float32),
    "sz_cubic": np.array([1, 1, 3, 2], np.int64), "sc_sym": np.array([1, 1, 0.7, 0.6], np.float32),
    "sc_w": np.array([1.5], np.float32)},
    [("keep", F), ("keep_big", F), ("aa_lin", F), ("aa_cub", F), ("sym", F), ("axis_w", F)])

# GroupNormalization-18 (scale and bias per group) and -21 (per channel),
# by hand in float64 (the reference evaluator runs it only as a function)
xg = (np.sin(np.arange(24, dtype=np.float32)) * 2 + 0.5).reshape(2, 4, 3)


def groupnorm(x, g, scale, bias, eps):
    n, c = x.shape[:2]
    t = x.astype(np.float64).reshape(n, g, -1)
    t = (t - t.mean(axis=2, keepdims=True)) / np.sqrt(t.var(axis=2, keepdims=True) + eps)
    shape = [1, c] + [1] * (x.ndim - 2)
    return (t.reshape(x.shape) * scale.reshape(shape) + bias.reshape(shape)).astype(np.float32)


s18, b18 = np.array([1.5, -0.5], np.float32), np.array([0.25, 1], np.float32)
carray("groupnorm_x", xg)
carray("groupnorm18_s", s18)
carray("groupnorm18_b", b18)
carray("groupnorm18_y", groupnorm(xg, 2, np.repeat(s18, 2), np.repeat(b18, 2), 1e-5))
s21, b21 = np.array([1.5, -0.5, 2, 1], np.float32), np.array([0.25, 1, 0, -1], np.float32)
carray("groupnorm21_s", s21)
carray("groupnorm21_b", b21)
carray("groupnorm21_y", groupnorm(xg, 2, s21, b21, 1e-3))

# Col2Im-18: strides leaving a remainder, dilations and pads
run("col2im", 18, [
    helper.make_node("Col2Im", ["x", "img", "blk"], ["y"], strides=[2, 2]),
    helper.make_node("Col2Im", ["xd", "img", "blk"], ["yd"], dilations=[2, 1], pads=[1, 0, 0, 1]),
], {"x": (np.arange(2 * 4 * 4, dtype=np.float32) * 0.5 - 3).reshape(1, 8, 4),
    "xd": (np.arange(2 * 4 * 20, dtype=np.float32) % 7 - 2).reshape(1, 8, 20),
    "img": np.array([5, 5], np.int64), "blk": np.array([2, 2], np.int64)},
    [("y", F), ("yd", F)])

# CenterCropPad-18: pad one axis, crop the other, odd differences
run("ccp", 18, [
    helper.make_node("CenterCropPad", ["x", "shape"], ["y"]),
    helper.make_node("CenterCropPad", ["x", "shape_ax"], ["ya"], axes=[-1]),
], {"x": (np.arange(15, dtype=np.float32) + 1).reshape(3, 5), "shape": np.array([6, 2], np.int64),
    "shape_ax": np.array([8], np.int64)},
    [("y", F), ("ya", F)])

# Gelu-20, by hand in float64 (a function for the reference evaluator)
xl = np.linspace(-3, 3, 9).astype(np.float32)
xd = xl.astype(np.float64)
carray("gelu_x", xl)
carray("gelu_y", np.array([v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in xd], np.float32))
carray("gelu_yt", (xd / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3)))).astype(np.float32))

# AveragePool-19 dilations
run("avgpool", 19, [
    helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1],
                     strides=[1, 2], count_include_pad=1),
    helper.make_node("AveragePool", ["x"], ["y0"], kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1],
                     strides=[1, 2], count_include_pad=0),
], {"x": (np.arange(25, dtype=np.float32) * 0.5).reshape(1, 1, 5, 5)}, [("y", F), ("y0", F)])

# BitwiseAnd/Or/Xor/Not-18
run("bitwise", 18, [
    helper.make_node("BitwiseAnd", ["a", "b"], ["and"]),
    helper.make_node("BitwiseOr", ["a", "b"], ["or"]),
    helper.make_node("BitwiseXor", ["a", "b"], ["xor"]),
    helper.make_node("BitwiseNot", ["a"], ["not"]),
    helper.make_node("BitwiseNot", ["u"], ["unot"]),
], {"a": np.array([12, -1, 0x5A, 7], np.int32), "b": np.array([10, 5, 0xF0, -8], np.int32),
    "u": np.array([0x5A, 0, 255], np.uint8)},
    [("and", TensorProto.INT32), ("or", TensorProto.INT32), ("xor", TensorProto.INT32),
     ("not", TensorProto.INT32), ("unot", TensorProto.UINT8)])

with open(os.path.join(HERE, "onnx_opsets_expect.h"), "w") as f:
    f.write("/*\n * onnx_opsets_expect.h: written by tests/gen_onnx_opsets.py (onnx "
            f"{onnx.__version__}'s reference\n * evaluator, numpy {np.__version__}); do not edit. The inputs "
            "and expected\n * outputs of test_onnx_opsets.c's models.\n */\n")
    f.write("#ifndef PCC_TESTS_ONNX_OPSETS_EXPECT_H\n#define PCC_TESTS_ONNX_OPSETS_EXPECT_H\n\n")
    f.write("#include <math.h>\n#include <stdint.h>\n\n")
    f.write("\n".join(out))
    f.write("\n\n#endif\n")
