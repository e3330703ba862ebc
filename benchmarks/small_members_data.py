#!/usr/bin/env python3
"""small_members_data.py: one data set for a pcc-modelgen model, in the
ONNX backend-test layout (DIR/input_0.pb, DIR/input_1.pb), for
small_members.sh and tests/test_small_members.sh.

    small_members_data.py DIR tokens --batch B --seq T --vocab V [--seed S]
    small_members_data.py DIR images --batch B --image H --classes C [--seed S]

tokens: input_0 the ids, input_1 the labels (int64 [B,T], uniform in
[0, V)); images: input_0 float [B,3,H,H] uniform in [-1, 1), input_1
int64 labels [B] in [0, C). Standard library only (no numpy),
TensorProtos encoded by hand: dims (field 1), data_type (2), name (8),
raw_data (9), little-endian.
"""
import argparse
import os
import random
import struct


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tensor(name, dtype, dims, raw):
    b = b"".join(b"\x08" + varint(d) for d in dims)
    b += b"\x10" + varint(dtype)
    nm = name.encode()
    b += b"\x42" + varint(len(nm)) + nm
    b += b"\x4a" + varint(len(raw)) + raw
    return b


FLOAT, INT64 = 1, 7


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("kind", choices=["tokens", "images"])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=0)
    ap.add_argument("--image", type=int, default=0)
    ap.add_argument("--classes", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    if a.kind == "tokens":
        if a.seq < 1 or a.vocab < 1:
            ap.error("tokens need --seq and --vocab")
        n = a.batch * a.seq
        ins = [("input_ids", INT64, [a.batch, a.seq], [rng.randrange(a.vocab) for _ in range(n)]),
               ("labels", INT64, [a.batch, a.seq], [rng.randrange(a.vocab) for _ in range(n)])]
    else:
        if a.image < 1 or a.classes < 1:
            ap.error("images need --image and --classes")
        n = a.batch * 3 * a.image * a.image
        ins = [("images", FLOAT, [a.batch, 3, a.image, a.image], [rng.uniform(-1, 1) for _ in range(n)]),
               ("labels", INT64, [a.batch], [rng.randrange(a.classes) for _ in range(a.batch)])]
    for k, (name, dt, dims, vals) in enumerate(ins):
        raw = struct.pack("<%d%s" % (len(vals), "f" if dt == FLOAT else "q"), *vals)
        with open(os.path.join(a.dir, "input_%d.pb" % k), "wb") as f:
            f.write(tensor(name, dt, dims, raw))


if __name__ == "__main__":
    main()
