#!/usr/bin/env python3
"""gen_embed_model.py: a tiny language model whose embedding has another
row count than its head has classes, for test_runtime_tokens.sh.

    gen_embed_model.py OUT.onnx --vocab V --classes C [--batch B] [--seq T]

The graph: ids int64 [B,T] -> Gather(wte [V,16], ids) -> MatMul(head
[16,C]) -> logits [B,T,C]. Trained with --loss cross_entropy:logits,labels,
its token ids must lie in [0, V) (the rows of wte) and its labels in
[0, C) (the classes): pcc-run --tokens checks each against its own bound.
Standard library only; the ModelProto is encoded by hand (opset 17).
"""
import argparse
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_tokens import varint  # noqa: E402 (the same encoder)


def field(num, payload):
    """A length-delimited field (wire type 2)."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vint(num, v):
    """A varint field (wire type 0)."""
    return varint(num << 3) + varint(v)


def s(text):
    return text.encode()


def tensor_f32(name, dims, values):
    """TensorProto: dims (1), data_type FLOAT = 1 (2), name (8), raw_data (9)."""
    b = b"".join(vint(1, d) for d in dims) + vint(2, 1) + field(8, s(name))
    return b + field(9, struct.pack("<%df" % len(values), *values))


def value_info(name, elem, dims):
    """ValueInfoProto: name (1), type (2) -> tensor_type (1): elem_type (1),
    shape (2) -> dim (1) -> dim_value (1)."""
    shape = b"".join(field(1, vint(1, d)) for d in dims)
    return field(1, s(name)) + field(2, field(1, vint(1, elem) + field(2, shape)))


def node(op, inputs, outputs, name, attrs=b""):
    """NodeProto: input (1), output (2), name (3), op_type (4), attribute (5)."""
    b = b"".join(field(1, s(i)) for i in inputs) + b"".join(field(2, s(o)) for o in outputs)
    return b + field(3, s(name)) + field(4, s(op)) + attrs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--classes", type=int, required=True)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    a = ap.parse_args()
    rng = random.Random(1)
    d = 16
    wte = [rng.uniform(-0.1, 0.1) for _ in range(a.vocab * d)]
    head = [rng.uniform(-0.1, 0.1) for _ in range(d * a.classes)]
    axis0 = field(5, field(1, s("axis")) + vint(3, 0) + vint(20, 2))  # AttributeProto: name, i, type INT
    g = node("Gather", ["wte", "ids"], ["emb"], "embed", axis0)
    g = field(1, g) + field(1, node("MatMul", ["emb", "head"], ["logits"], "lm_head"))
    g += field(2, s("embed_lm"))
    g += field(5, tensor_f32("wte", [a.vocab, d], wte)) + field(5, tensor_f32("head", [d, a.classes], head))
    g += field(11, value_info("ids", 7, [a.batch, a.seq]))
    g += field(12, value_info("logits", 1, [a.batch, a.seq, a.classes]))
    m = vint(1, 8) + field(8, field(1, b"") + vint(2, 17)) + field(7, g)  # ir_version, opset_import, graph
    with open(a.out, "wb") as f:
        f.write(m)


if __name__ == "__main__":
    main()
