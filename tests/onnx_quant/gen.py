#!/usr/bin/env python3
"""Writes tests/onnx_quant: quantized graphs and the com.microsoft ops of
ONNX Runtime's optimizer, in the ONNX backend-test layout (model.onnx,
test_data_set_0/input_N.pb and output_N.pb), for test_conformance and
test_conformance_run. Run by hand through gen.sh (a venv with onnx,
numpy and onnxruntime); CI only reads the files and never needs
onnxruntime.

Every expected output is ONNX Runtime's (default session options, its
graph optimizations on). Each one is also checked here against numpy's
restatement of the spec (integers exactly, floats within 1e-5 relative),
and a fixture is written only where both agree; the one case ONNX Runtime
refuses (MatMulInteger's per-row zero point of A, which the spec allows)
takes numpy's output and says so. Three whole models have ONNX Runtime's
outputs only: a small MLP quantized by onnxruntime.quantization's
quantize_static (QDQ, per channel), a BERT-style block quantized by its
quantize_dynamic (DynamicQuantizeLinear, MatMulInteger), and the same
block in float as onnxruntime's optimizer saves it (extended level:
FusedMatMul, SkipLayerNormalization).
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(39)
F32 = TensorProto.FLOAT
MS = helper.make_opsetid("com.microsoft", 1)


def write(name, model, feeds, outs, note=""):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, vi in enumerate(model.graph.input):
        t = numpy_helper.from_array(feeds[vi.name], vi.name)
        open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, vo in enumerate(model.graph.output):
        t = numpy_helper.from_array(outs[i], vo.name)
        open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb").write(t.SerializeToString())
    print(f"{name}: written{note}")


def run_ort(model, feeds):
    s = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def check(name, got, want, exact):
    for g, w in zip(got, want):
        w = np.asarray(w).astype(g.dtype)
        ok = np.array_equal(g, w) if exact else np.allclose(g, w, rtol=1e-5, atol=1e-6)
        if not ok:
            sys.exit(f"{name}: onnxruntime and numpy disagree:\n{g}\n{w}")


def case(name, nodes, inputs, outputs, feeds, ref, exact, opset=21, ms=False):
    """inputs/outputs: (name, elem_type, shape); ref: numpy's outputs."""
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(*o) for o in outputs])
    ops = [helper.make_opsetid("", opset)] + ([MS] if ms else [])
    m = helper.make_model(g, opset_imports=ops, ir_version=10)
    outs = run_ort(m, feeds)
    check(name, outs, ref, exact)
    write(name, m, feeds, outs)


# ---- numpy's restatement of the spec ------------------------------------------
def qrange(t):
    return (-128, 127) if t == np.int8 else (0, 255)


def quantize(x, s, zp, t):
    lo, hi = qrange(t)
    q = np.rint(x.astype(np.float32) / s.astype(np.float32)) + zp.astype(np.float32)
    return np.clip(q, lo, hi).astype(t)


def dequantize(q, s, zp):
    return ((q.astype(np.int32) - zp.astype(np.int32)).astype(np.float32) * s).astype(np.float32)


def along(v, axis, rank):
    shape = [1] * rank
    shape[axis] = v.size
    return v.reshape(shape)


def gelu(x):
    from math import erf, sqrt
    return (0.5 * x * (1 + np.vectorize(erf)(x.astype(np.float64) / sqrt(2)))).astype(np.float32)


# ---- QuantizeLinear / DequantizeLinear per axis ---------------------------------
def quantize_cases():
    # per channel (axis 1) int8 with ties at .5 of a step (half to even) and saturation
    s = np.array([0.5, 0.25, 2.0], np.float32)
    zp = np.array([1, -3, 0], np.int8)
    k = rng.integers(-40, 40, (2, 3, 4)).astype(np.float32) + 0.5  # ties
    x = (k * along(s, 1, 3)).astype(np.float32)
    x[0, 0, 0], x[1, 2, 3], x[0, 1, 1] = 1000.0, -1000.0, 0.375
    sc = helper.make_tensor("s", F32, [3], s)
    z = helper.make_tensor("zp", TensorProto.INT8, [3], zp)
    case("test_quantizelinear_axis1_int8_ties",
         [helper.make_node("Constant", [], ["s"], value=sc), helper.make_node("Constant", [], ["zp"], value=z),
          helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], axis=1)],
         [("x", F32, [2, 3, 4])], [("y", TensorProto.INT8, [2, 3, 4])], {"x": x},
         [quantize(x, along(s, 1, 3), along(zp, 1, 3), np.int8)], True)
    # the last axis (-1), uint8, scale and zero point as graph inputs
    s = np.array([0.1, 0.02, 0.5, 1.5], np.float32)
    zp = np.array([128, 0, 255, 7], np.uint8)
    x = (rng.standard_normal((3, 4)) * 4).astype(np.float32)
    case("test_quantizelinear_axis_last_uint8",
         [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], axis=-1)],
         [("x", F32, [3, 4]), ("s", F32, [4]), ("zp", TensorProto.UINT8, [4])],
         [("y", TensorProto.UINT8, [3, 4])], {"x": x, "s": s, "zp": zp},
         [quantize(x, along(s, 1, 2), along(zp, 1, 2), np.uint8)], True)
    # opset 19's float16 input and opset 21's output_dtype without a zero point
    x = (rng.standard_normal((2, 5)) * 30).astype(np.float16)
    s = np.array(0.75, np.float16)
    case("test_quantizelinear_19_float16",
         [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"])],
         [("x", TensorProto.FLOAT16, [2, 5]), ("s", TensorProto.FLOAT16, []), ("zp", TensorProto.UINT8, [])],
         [("y", TensorProto.UINT8, [2, 5])], {"x": x, "s": s, "zp": np.array(100, np.uint8)},
         [quantize(x, s, np.uint8(100), np.uint8)], True, opset=19)
    x = (rng.standard_normal((3, 4)) * 100).astype(np.float32)
    case("test_quantizelinear_21_output_dtype",
         [helper.make_node("QuantizeLinear", ["x", "s"], ["y"], output_dtype=TensorProto.INT8)],
         [("x", F32, [3, 4]), ("s", F32, [])], [("y", TensorProto.INT8, [3, 4])],
         {"x": x, "s": np.array(0.5, np.float32)}, [quantize(x, np.float32(0.5), np.int8(0), np.int8)], True)
    # DequantizeLinear along axis 0 (int8), and an int32 input without zero point
    q = rng.integers(-128, 128, (3, 5)).astype(np.int8)
    s = np.array([0.03, 1.25, 7.0], np.float32)
    zp = np.array([-128, 5, 127], np.int8)
    case("test_dequantizelinear_axis0_int8",
         [helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], axis=0)],
         [("q", TensorProto.INT8, [3, 5]), ("s", F32, [3]), ("zp", TensorProto.INT8, [3])],
         [("y", F32, [3, 5])], {"q": q, "s": s, "zp": zp},
         [dequantize(q, along(s, 0, 2), along(zp, 0, 2))], True)
    q = rng.integers(-(1 << 20), 1 << 20, (2, 6)).astype(np.int32)
    s = np.array(0.001, np.float32)
    case("test_dequantizelinear_int32",
         [helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
         [("q", TensorProto.INT32, [2, 6]), ("s", F32, [])], [("y", F32, [2, 6])], {"q": q, "s": s},
         [dequantize(q, s, np.int32(0))], True)
    # QDQ round trip per channel of a conv weight's layout (axis 0)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    s = (np.abs(x).reshape(4, -1).max(1) / 127).astype(np.float32)
    zp = np.zeros(4, np.int8)
    sc = helper.make_tensor("s", F32, [4], s)
    z = helper.make_tensor("zp", TensorProto.INT8, [4], zp)
    nodes = [helper.make_node("Constant", [], ["s"], value=sc), helper.make_node("Constant", [], ["zp"], value=z),
             helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], axis=0),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], axis=0)]
    q = quantize(x, along(s, 0, 3), along(zp, 0, 3), np.int8)
    case("test_qdq_axis0_roundtrip", nodes, [("x", F32, [4, 2, 3])], [("y", F32, [4, 2, 3])], {"x": x},
         [dequantize(q, along(s, 0, 3), along(zp, 0, 3))], True)
    # DynamicQuantizeLinear on all zeros: ONNX Runtime's scale 1 where the spec divides by 0
    x = np.zeros((2, 3), np.float32)
    case("test_dynamicquantizelinear_zeros",
         [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "ys", "yzp"])], [("x", F32, [2, 3])],
         [("y", TensorProto.UINT8, [2, 3]), ("ys", F32, []), ("yzp", TensorProto.UINT8, [])], {"x": x},
         [np.zeros((2, 3), np.uint8), np.float32(1), np.uint8(0)], True)


# ---- integer matmuls ----------------------------------------------------------------
def matmul_cases():
    a = rng.integers(0, 256, (2, 3, 4)).astype(np.uint8)
    b = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    azp = np.uint8(131)
    bzp = rng.integers(-128, 128, 5).astype(np.int8)
    ref = np.matmul(a.astype(np.int32) - np.int32(azp), b.astype(np.int32) - bzp.astype(np.int32))
    case("test_matmulinteger_batched_per_column",
         [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"])],
         [("a", TensorProto.UINT8, [2, 3, 4]), ("b", TensorProto.INT8, [4, 5]), ("azp", TensorProto.UINT8, []),
          ("bzp", TensorProto.INT8, [5])], [("y", TensorProto.INT32, [2, 3, 5])],
         {"a": a, "b": b, "azp": np.array(azp), "bzp": bzp}, [ref], True)
    # A's per-row zero point: the spec allows it, ONNX Runtime's CPU kernel
    # refuses it, so this one's output is numpy's
    a = rng.integers(-128, 128, (3, 4)).astype(np.int8)
    b = rng.integers(0, 256, (4, 2)).astype(np.uint8)
    azp = np.array([-1, 100, -128], np.int8)
    ref = np.matmul(a.astype(np.int32) - azp.astype(np.int32)[:, None], b.astype(np.int32))
    g = helper.make_graph([helper.make_node("MatMulInteger", ["a", "b", "azp"], ["y"])],
                          "test_matmulinteger_per_row",
                          [helper.make_tensor_value_info("a", TensorProto.INT8, [3, 4]),
                           helper.make_tensor_value_info("b", TensorProto.UINT8, [4, 2]),
                           helper.make_tensor_value_info("azp", TensorProto.INT8, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [3, 2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    try:
        out = run_ort(m, {"a": a, "b": b, "azp": azp})
        check("test_matmulinteger_per_row", out, [ref], True)
        write("test_matmulinteger_per_row", m, {"a": a, "b": b, "azp": azp}, out)
    except Exception as e:  # noqa: BLE001 (onnxruntime's refusal)
        write("test_matmulinteger_per_row", m, {"a": a, "b": b, "azp": azp}, [ref],
              f" with numpy's output (onnxruntime: {str(e).splitlines()[0][:100]})")
    # QLinearMatMul, b per column, uint8 result
    a = rng.integers(0, 256, (3, 4)).astype(np.uint8)
    b = rng.integers(-128, 128, (4, 5)).astype(np.int8)
    a_s, a_z = np.float32(0.02), np.uint8(120)
    b_s = rng.uniform(0.005, 0.02, 5).astype(np.float32)
    b_z = np.zeros(5, np.int8)
    y_s, y_z = np.float32(0.05), np.uint8(100)
    acc = np.matmul(a.astype(np.int32) - np.int32(a_z), b.astype(np.int32) - b_z.astype(np.int32))
    mult = (a_s * b_s / y_s).astype(np.float32)
    ref = np.clip(np.rint(acc.astype(np.float32) * mult) + np.float32(y_z), 0, 255).astype(np.uint8)
    feeds = {"a": a, "as": np.array(a_s), "az": np.array(a_z), "b": b, "bs": b_s, "bz": b_z, "ys": np.array(y_s),
             "yz": np.array(y_z)}
    case("test_qlinearmatmul_per_column",
         [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
         [("a", TensorProto.UINT8, [3, 4]), ("as", F32, []), ("az", TensorProto.UINT8, []),
          ("b", TensorProto.INT8, [4, 5]), ("bs", F32, [5]), ("bz", TensorProto.INT8, [5]), ("ys", F32, []),
          ("yz", TensorProto.UINT8, [])], [("y", TensorProto.UINT8, [3, 5])], feeds, [ref], True)


# ---- com.microsoft ------------------------------------------------------------------
def ms_cases():
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 5, 3)).astype(np.float32)
    ref = 0.5 * np.matmul(a.transpose(0, 2, 1), b.transpose(0, 2, 1))
    case("test_ms_fusedmatmul_trans",
         [helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain="com.microsoft", alpha=0.5, transA=1,
                           transB=1)], [("a", F32, [2, 3, 4]), ("b", F32, [2, 5, 3])], [("y", F32, [2, 4, 5])],
         {"a": a, "b": b}, [ref], False, opset=17, ms=True)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((5, 4)).astype(np.float32)
    c = rng.standard_normal(5).astype(np.float32)
    z = 0.7 * a @ b.T + 1.3 * c
    ref = np.where(z >= 0, z, 0.1 * z).astype(np.float32)
    case("test_ms_fusedgemm_leakyrelu",
         [helper.make_node("FusedGemm", ["a", "b", "c"], ["y"], domain="com.microsoft", alpha=0.7, beta=1.3,
                           transB=1, activation="LeakyRelu", activation_alpha=0.1)],
         [("a", F32, [3, 4]), ("b", F32, [5, 4]), ("c", F32, [5])], [("y", F32, [3, 5])],
         {"a": a, "b": b, "c": c}, [ref], False, opset=17, ms=True)
    x = (rng.standard_normal((2, 3, 8)) * 2).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    case("test_ms_gelu", [helper.make_node("Gelu", ["x"], ["y"], domain="com.microsoft")], [("x", F32, [2, 3, 8])],
         [("y", F32, [2, 3, 8])], {"x": x}, [gelu(x)], False, opset=17, ms=True)
    case("test_ms_biasgelu", [helper.make_node("BiasGelu", ["x", "b"], ["y"], domain="com.microsoft")],
         [("x", F32, [2, 3, 8]), ("b", F32, [8])], [("y", F32, [2, 3, 8])], {"x": x, "b": bias},
         [gelu(x + bias)], False, opset=17, ms=True)
    # FastGelu's inputs stay above -3.5: below, 1 + tanh cancels to a few
    # ulp of 1, where onnxruntime's approximate tanh differs from a correctly
    # rounded one by more than the 1e-7 the tests allow
    xf = (rng.uniform(-3, 3, (2, 3, 8))).astype(np.float32)
    bf = (rng.uniform(-0.5, 0.5, 8)).astype(np.float32)
    xb = (xf + bf).astype(np.float64)
    fast = 0.5 * xb * (1 + np.tanh(np.sqrt(2 / np.pi) * (xb + 0.044715 * xb ** 3)))
    case("test_ms_fastgelu_bias", [helper.make_node("FastGelu", ["x", "b"], ["y"], domain="com.microsoft")],
         [("x", F32, [2, 3, 8]), ("b", F32, [8])], [("y", F32, [2, 3, 8])], {"x": xf, "b": bf},
         [fast.astype(np.float32)], False, opset=17, ms=True)
    skip = rng.standard_normal((2, 3, 8)).astype(np.float32)
    gamma = rng.standard_normal(8).astype(np.float32)
    beta = rng.standard_normal(8).astype(np.float32)
    s = (x + skip + bias).astype(np.float64)
    norm = (s - s.mean(-1, keepdims=True)) / np.sqrt(s.var(-1, keepdims=True) + 1e-5) * gamma + beta
    case("test_ms_skiplayernorm_bias_sum",
         [helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"],
                           ["y", "", "", "sum"], domain="com.microsoft", epsilon=1e-5)],
         [("x", F32, [2, 3, 8]), ("skip", F32, [2, 3, 8]), ("gamma", F32, [8]), ("beta", F32, [8]),
          ("bias", F32, [8])], [("y", F32, [2, 3, 8]), ("sum", F32, [2, 3, 8])],
         {"x": x, "skip": skip, "gamma": gamma, "beta": beta, "bias": bias},
         [norm.astype(np.float32), s.astype(np.float32)], False, opset=17, ms=True)


# ---- a QDQ model as onnxruntime's quantizer writes it ---------------------------------------
def qdq_mlp():
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    w1 = (rng.standard_normal((16, 32)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((32, 10)) * 0.3).astype(np.float32)
    b2 = (rng.standard_normal(10) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
         helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
         helper.make_node("Add", ["h3", "b2"], ["y"])], "mlp", [helper.make_tensor_value_info("x", F32, [4, 16])],
        [helper.make_tensor_value_info("y", F32, [4, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    tmp = os.path.join(HERE, ".tmp")
    os.makedirs(tmp, exist_ok=True)
    fp, qp = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
    onnx.save(m, fp)
    calib = [{"x": rng.standard_normal((4, 16)).astype(np.float32)} for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            return next(self.it, None)

    quantize_static(fp, qp, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    q = onnx.load(qp)
    shutil.rmtree(tmp)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    out = run_ort(q, {"x": x})
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(q.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    ops = sorted({n.op_type for n in q.graph.node})
    write("test_qdq_mlp_per_channel", q, {"x": x}, out,
          f" ({', '.join(ops)}; onnxruntime unoptimized differs by at most {np.abs(out[0] - plain[0]).max():.3g})")


def qdq_convnet():
    """A small ResNet-style stem (Conv, Relu, residual Add, GlobalAveragePool,
    Gemm) quantized by quantize_static, QDQ, per channel: onnxruntime runs
    it as QLinearConv and friends, pcc as float ops between exact
    quantize/dequantize pairs."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    def w(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = [numpy_helper.from_array(v, n) for v, n in (
        (w(8, 3, 3, 3), "c1"), (w(8, scale=0.1), "c1b"), (w(8, 8, 3, 3, scale=0.15), "c2"),
        (w(8, scale=0.1), "c2b"), (w(5, 8), "fc"), (w(5, scale=0.1), "fcb"))]
    n = helper.make_node
    nodes = [n("Conv", ["x", "c1", "c1b"], ["a0"], pads=[1, 1, 1, 1]), n("Relu", ["a0"], ["a1"]),
             n("Conv", ["a1", "c2", "c2b"], ["a2"], pads=[1, 1, 1, 1]), n("Add", ["a2", "a1"], ["a3"]),
             n("Relu", ["a3"], ["a4"]), n("GlobalAveragePool", ["a4"], ["p0"]),
             n("Flatten", ["p0"], ["p1"]), n("Gemm", ["p1", "fc", "fcb"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", F32, [2, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", F32, [2, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    tmp = os.path.join(HERE, ".tmp")
    os.makedirs(tmp, exist_ok=True)
    fp, qp = os.path.join(tmp, "f.onnx"), os.path.join(tmp, "q.onnx")
    onnx.save(m, fp)
    calib = [{"x": rng.standard_normal((2, 3, 8, 8)).astype(np.float32)} for _ in range(8)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(calib)

        def get_next(self):
            return next(self.it, None)

    quantize_static(fp, qp, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    q = onnx.load(qp)
    shutil.rmtree(tmp)
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    out = run_ort(q, {"x": x})
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(q.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    ops = sorted({nd.op_type for nd in q.graph.node})
    write("test_qdq_convnet_per_channel", q, {"x": x}, out,
          f" ({', '.join(ops)}; onnxruntime unoptimized differs by at most {np.abs(out[0] - plain[0]).max():.3g})")


# ---- a BERT-style block quantized dynamically, and one optimized by onnxruntime ---------------
def bert_block(hidden=16, ffn=32):
    """x -> LayerNorm(x + MatMul(Gelu(MatMul(x) + b1)) + b2), with a scaled
    x @ x^T beside it: the patterns onnxruntime fuses."""
    def w(*shape, scale=0.3):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    inits = [numpy_helper.from_array(v, n) for v, n in (
        (w(hidden, ffn), "w1"), (w(ffn, scale=0.1), "b1"), (w(ffn, hidden), "w2"), (w(hidden, scale=0.1), "b2"),
        (1 + w(hidden, scale=0.1), "gamma"), (w(hidden, scale=0.1), "beta"),
        (np.array(np.sqrt(0.5), np.float32), "rsqrt2"), (np.array(1, np.float32), "one"),
        (np.array(0.5, np.float32), "half"), (np.array(0.125, np.float32), "eighth"))]
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w1"], ["h0"]), n("Add", ["h0", "b1"], ["h1"]),
        # Gelu as torch's TorchScript export writes it
        n("Mul", ["h1", "rsqrt2"], ["g0"]), n("Erf", ["g0"], ["g1"]), n("Add", ["g1", "one"], ["g2"]),
        n("Mul", ["h1", "g2"], ["g3"]), n("Mul", ["g3", "half"], ["g4"]),
        n("MatMul", ["g4", "w2"], ["h2"]), n("Add", ["h2", "b2"], ["h3"]), n("Add", ["h3", "x"], ["h4"]),
        n("LayerNormalization", ["h4", "gamma", "beta"], ["y"], axis=-1, epsilon=1e-5),
        n("Transpose", ["x"], ["xt"], perm=[0, 2, 1]), n("MatMul", ["x", "xt"], ["s0"]),
        n("Mul", ["s0", "eighth"], ["s"])]
    g = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", F32, [2, 5, hidden])],
                          [helper.make_tensor_value_info("y", F32, [2, 5, hidden]),
                           helper.make_tensor_value_info("s", F32, [2, 5, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def bert_cases():
    from onnxruntime.quantization import QuantType, quantize_dynamic

    m = bert_block()
    x = rng.standard_normal((2, 5, 16)).astype(np.float32)
    tmp = os.path.join(HERE, ".tmp")
    os.makedirs(tmp, exist_ok=True)
    fp, qp, op = (os.path.join(tmp, f) for f in ("f.onnx", "q.onnx", "o.onnx"))
    onnx.save(m, fp)
    # dynamic quantization, as onnxruntime's BERT examples do it
    quantize_dynamic(fp, qp, weight_type=QuantType.QInt8)
    q = onnx.load(qp)
    ops = sorted({nd.op_type for nd in q.graph.node})
    write("test_dynamic_quantized_block", q, {"x": x}, run_ort(q, {"x": x}), f" ({', '.join(ops)})")
    # the float block as onnxruntime's optimizer saves it (extended level)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = op
    ort.InferenceSession(fp, opts, providers=["CPUExecutionProvider"])
    o = onnx.load(op)
    ms = sorted({nd.op_type for nd in o.graph.node if nd.domain == "com.microsoft"})
    if not ms:
        sys.exit("test_ort_optimized_block: onnxruntime fused nothing into com.microsoft ops")
    write("test_ort_optimized_block", o, {"x": x}, run_ort(o, {"x": x}),
          f" (com.microsoft: {', '.join(ms)}; all: {', '.join(sorted({nd.op_type for nd in o.graph.node}))})")
    shutil.rmtree(tmp)


quantize_cases()
matmul_cases()
bert_cases()
ms_cases()
qdq_mlp()
qdq_convnet()
print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}")
