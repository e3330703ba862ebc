#!/usr/bin/env python3
"""gen_tokens.py: a token file for `pcc-run --tokens` and the same batches
in the backend-test layout, for test_runtime_tokens.sh.

    gen_tokens.py TOKENS SETS --tokens N --vocab V --batch B --seq T --sets K
                  [--type u16|u32|i32] [--seed S] [--odd-bytes]

TOKENS gets N random ids in [0, V) (little-endian, as numpy's tofile on
x86). SETS/test_data_set_J/ gets input_0.pb (ids) and input_1.pb (labels),
int64 [B,T], for J = 0 .. K-1: set J is what pcc-run cuts for the J-th
micro-batch of the run (step s, micro-batch m: J = s * micro + m), by the
rule runtime/data.c states, written out here on its own: row b takes window
w = (J * B + b) mod W, W = (N - 1) // T, the tokens [w * T, w * T + T + 1);
ids are its first T, labels its last T. --odd-bytes appends one byte.
Standard library only (no numpy), TensorProtos encoded by hand.
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


def tensor_i64(name, dims, values):
    """A TensorProto: dims (1), data_type INT64 = 7 (2), name (8), raw_data (9)."""
    b = b"".join(b"\x08" + varint(d) for d in dims)
    b += b"\x10\x07"
    nm = name.encode()
    b += b"\x42" + varint(len(nm)) + nm
    raw = struct.pack("<%dq" % len(values), *values)
    b += b"\x4a" + varint(len(raw)) + raw
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokens_path", metavar="TOKENS")
    ap.add_argument("sets_dir", metavar="SETS")
    ap.add_argument("--tokens", dest="n", type=int, required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--sets", type=int, default=0)
    ap.add_argument("--type", default="u16", choices=["u16", "u32", "i32"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--odd-bytes", action="store_true")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    toks = [rng.randrange(a.vocab) for _ in range(a.n)]
    fmt = {"u16": "H", "u32": "I", "i32": "i"}[a.type]
    with open(a.tokens_path, "wb") as f:
        f.write(struct.pack("<%d%s" % (a.n, fmt), *toks))
        if a.odd_bytes:
            f.write(b"\x00")
    windows = (a.n - 1) // a.seq
    for j in range(a.sets):
        ids, labels = [], []
        for b in range(a.batch):
            w = (j * a.batch + b) % windows
            win = toks[w * a.seq:w * a.seq + a.seq + 1]
            ids += win[:-1]
            labels += win[1:]
        d = os.path.join(a.sets_dir, "test_data_set_%d" % j)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "input_0.pb"), "wb") as f:
            f.write(tensor_i64("ids", [a.batch, a.seq], ids))
        with open(os.path.join(d, "input_1.pb"), "wb") as f:
            f.write(tensor_i64("labels", [a.batch, a.seq], labels))


if __name__ == "__main__":
    main()
