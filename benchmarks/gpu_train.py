#!/usr/bin/env python3
"""GPT-2 small training steps on one GPU: pcc-run against PyTorch eager.

    python3 benchmarks/gpu_train.py [--build build] [--batch 8] [--seq 128] [--steps 20]

Needs an NVIDIA GPU, PyTorch with CUDA, onnx (the GPU machines have them).
1. Builds GPT-2 small in torch (benchmarks/gpt2_small.py's model, its fixed
   seed) and exports it (ONNX opset 17, weights as external data) for
   [batch, seq] token ids, with random ids and next-token labels as
   test_data_set_0/input_0.pb and input_1.pb.
2. Compiles it for one H100 (`pcc --cluster 1x1:h100 --train --loss
   cross_entropy:logits,labels --optimizer adamw`) and runs `pcc-run
   --device gpu --steps S` (with and without --tf32), taking pcc-run's
   own "S steps in X s" (first step included, so the PTX load and the
   cuBLASLt heuristics count).
3. Times the same model's AdamW training step in PyTorch eager on the same
   GPU (f32, then TF32 matmuls), S steps after 3 warm-up steps,
   synchronized.
4. Prints and writes benchmarks/results/gpu_train.md: ms per step, the
   ratio pcc/PyTorch (side by side, one process each), TFLOP/s (6 x
   parameters x tokens per step) and MFU against the GPU's dense peak for
   the precision (H100 SXM: 67 TFLOP/s f32, 495 TF32), with the date, the
   GPU (nvidia-smi -L) and the command.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_small  # noqa: E402  (the model and its export)

PEAK = {"f32": 67e12, "tf32": 495e12}  # H100 SXM dense, NVIDIA's datasheet


def pcc_steps(build, plan, data, steps, extra):
    cmd = ["mpirun", "-np", "1", os.path.join(build, "runtime/pcc-run"), plan, "--device", "gpu", "--data", data,
           "--steps", str(steps)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("pcc-run failed:\n" + out.stdout + out.stderr)
    m = re.search(r"(\d+) steps in ([0-9.]+) s", out.stdout)
    return float(m.group(2)) / int(m.group(1))


def torch_steps(model, ids, labels, steps, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(ids).flatten(0, 1), labels.flatten())
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--results", default=os.path.join(os.path.dirname(__file__), "results/gpu_train.md"))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_train: no CUDA device for PyTorch")
    torch.manual_seed(0)
    model = gpt2_small.GPT2(gpt2_small.N_LAYER)
    nparams = sum(p.numel() for p in model.parameters())
    g = np.random.default_rng(0)
    ids = g.integers(0, gpt2_small.VOCAB, size=(a.batch, a.seq), dtype=np.int64)
    labels = np.roll(ids, -1, axis=1)
    work = tempfile.mkdtemp(prefix="pcc-gpu-train-")
    gpt2_small.export(model, torch.from_numpy(ids), work)
    data = os.path.join(work, "test_data_set_0")
    gpt2_small.write_tensor(os.path.join(data, "input_1.pb"), labels, "labels")
    os.remove(os.path.join(data, "output_0.pb"))
    plan = os.path.join(work, "plan.bin")
    subprocess.run([os.path.join(a.build, "compiler/pcc"), os.path.join(work, "model.onnx"), "--cluster", "1x1:h100",
                    "--train", "--loss", "cross_entropy:logits,labels", "--optimizer", "adamw", "--lr", "1e-4",
                    "-o", plan], check=True)
    rows = []
    cuda_model = model.cuda()
    tid, tlab = torch.from_numpy(ids).cuda(), torch.from_numpy(labels).cuda()
    flop = 6.0 * nparams * a.batch * a.seq
    for prec, extra in (("f32", []), ("tf32", ["--tf32"])):
        p = pcc_steps(a.build, plan, data, a.steps, extra)
        t = torch_steps(cuda_model, tid, tlab, a.steps, prec == "tf32")
        rows.append((prec, p, t))
    gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip()
    lines = ["# GPT-2 small training step on one GPU: pcc-run vs PyTorch eager", "",
             f"{datetime.date.today()}, {gpu}; batch {a.batch} x seq {a.seq}, {nparams / 1e6:.1f} M parameters,",
             f"{a.steps} steps each; command: `python3 benchmarks/gpu_train.py --batch {a.batch} --seq {a.seq} "
             f"--steps {a.steps}`", "",
             "| precision | pcc-run ms/step | PyTorch ms/step | pcc / PyTorch | pcc TFLOP/s | pcc MFU |",
             "|---|---|---|---|---|---|"]
    for prec, p, t in rows:
        lines.append(f"| {prec} | {p * 1e3:.1f} | {t * 1e3:.1f} | {p / t:.2f} | {flop / p / 1e12:.1f} | "
                     f"{flop / p / PEAK[prec] * 100:.1f}% |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(a.results, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
