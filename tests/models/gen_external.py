#!/usr/bin/env python3
"""Generate the external-data fixtures under tests/models/ from the GPT ones.

Run by hand (never by CI) with Debian's python3-onnx (1.12), after
gen_fixtures.py (it reads gpt_op17 and gpt_dyn_op17):

    python3 tests/models/gen_external.py

Models as exporters that keep shapes as initializers write them (tf2onnx,
flax-style onnx.helper graphs): every Constant node of the source becomes an
initializer of the same name (int64 shapes, axes and indices, scalars), then
onnx's own converter moves every initializer's bytes out of the model,
whatever its dtype and size (convert_model_to_external_data with
size_threshold=0): float weights, the bool causal masks and the int64
shapes, all into one file, model.onnx.data, beside model.onnx.

    gpt_ext_op17      from gpt_op17: Reshape shapes and Transpose-free
                      constants are external int64 initializers that import
                      must read; the causal masks (bool [1,1,8,8]) are
                      external and only ever runtime data (Where's
                      condition)
    gpt_dyn_ext_op17  from gpt_dyn_op17 (symbolic batch and seq): the
                      Shape -> Gather -> Concat -> Reshape chains fold
                      through external int64 indices, and the bool mask is
                      sliced to the sequence, which folds too

Each keeps its source's test_data_set_0 (copied: PyTorch's outputs).

And a flax-style graph written with onnx.helper, as the causal mask of a
large model is used (too large to fold, so runtime data), inline and
external:

    mask_op17         scores x f32[2,8,8] -> Where("consts/causal_mask"
                      bool[2,8,8], x, "consts/neg" -1e9) -> Softmax ->
                      Reshape to "consts/shape" int64 [2,64]; outputs from
                      numpy
    mask_ext_op17     the same with every initializer external: the mask
                      stays a bool parameter that the runtime reads from
                      the file, the shape is read by import

The files are the same on every run.
"""

import os
import shutil
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    from onnx.external_data_helper import convert_model_to_external_data
except ImportError:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = {"gpt_ext_op17": "gpt_op17", "gpt_dyn_ext_op17": "gpt_dyn_op17"}
DATA = "model.onnx.data"


def constants_to_initializers(m):
    """Every Constant node (a 'value' tensor) becomes an initializer named
    after its output."""
    keep = []
    for n in m.graph.node:
        attrs = {a.name: a for a in n.attribute}
        if n.op_type == "Constant" and set(attrs) == {"value"}:
            t = onnx.TensorProto()
            t.CopyFrom(attrs["value"].t)
            t.name = n.output[0]
            m.graph.initializer.append(t)
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)


def make(name, src):
    m = onnx.load(os.path.join(HERE, src, "model.onnx"))
    constants_to_initializers(m)
    # raw_data everywhere, so that every tensor moves out
    for i, t in enumerate(m.graph.initializer):
        a = numpy_helper.to_array(t)
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(a, t.name))
    convert_model_to_external_data(m, all_tensors_to_one_file=True, location=DATA, size_threshold=0)
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.save_model(m, os.path.join(d, "model.onnx"))
    shutil.copytree(os.path.join(HERE, src, "test_data_set_0"), os.path.join(d, "test_data_set_0"))
    onnx.checker.check_model(os.path.join(d, "model.onnx"))
    left = [t.name for t in m.graph.initializer if t.data_location != onnx.TensorProto.EXTERNAL]
    if left:
        raise RuntimeError(f"{name}: initializers left inline: {left}")
    dtypes = sorted({onnx.TensorProto.DataType.Name(t.data_type) for t in m.graph.initializer})
    print(f"{name}: {len(m.graph.initializer)} initializers ({', '.join(dtypes)}), all in {DATA}")


def write_tensor(path, a, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())


def make_mask(name, external):
    rng = np.random.RandomState(35)
    x = rng.randn(2, 8, 8).astype(np.float32)
    mask = np.broadcast_to(np.tril(np.ones((8, 8), dtype=bool)), (2, 8, 8)).copy()
    neg = np.array(-1e9, dtype=np.float32)
    shape = np.array([2, 64], dtype=np.int64)
    inits = [
        numpy_helper.from_array(mask, "consts/causal_mask"),
        numpy_helper.from_array(neg, "consts/neg"),
        numpy_helper.from_array(shape, "consts/shape"),
    ]
    nodes = [
        helper.make_node("Where", ["consts/causal_mask", "x", "consts/neg"], ["masked"], name="attn/Where"),
        helper.make_node("Softmax", ["masked"], ["p"], name="attn/Softmax", axis=-1),
        helper.make_node("Reshape", ["p", "consts/shape"], ["y"], name="attn/Reshape"),
    ]
    g = helper.make_graph(
        nodes,
        "mask",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 64])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="gen_external.py")
    m.ir_version = 8
    if external:
        convert_model_to_external_data(m, all_tensors_to_one_file=True, location=DATA, size_threshold=0)
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save_model(m, os.path.join(d, "model.onnx"))
    onnx.checker.check_model(os.path.join(d, "model.onnx"))
    s = np.where(mask, x, neg)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    y = (e / e.sum(axis=-1, keepdims=True)).reshape(2, 64).astype(np.float32)
    write_tensor(os.path.join(d, "test_data_set_0", "input_0.pb"), x, "x")
    write_tensor(os.path.join(d, "test_data_set_0", "output_0.pb"), y, "y")
    print(f"{name}: {'every initializer in ' + DATA if external else 'inline'}")


def main():
    for name, src in FIXTURES.items():
        make(name, src)
    make_mask("mask_op17", False)
    make_mask("mask_ext_op17", True)


if __name__ == "__main__":
    main()
