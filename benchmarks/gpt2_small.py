#!/usr/bin/env python3
"""Benchmark pcc's reference interpreter on GPT-2 small against PyTorch.

    python3 benchmarks/gpt2_small.py [--pcc build/compiler/pcc] [--keep DIR]

Steps:

1. Build a GPT-2-small model in torch (12 layers, d_model 768, 12 heads,
   vocab 50257, context 1024, tied LM head, GPT-2 initialization from a
   fixed seed; nothing is downloaded) and export it as ONNX opset 17 for
   batch 1, sequence 128, with the weights as external data (weights.bin),
   plus test_data_set_0/input_0.pb (token ids) and output_0.pb (torch's
   logits), the layout of tests/models/.
2. Run `pcc inspect --json` (parameters, forward FLOPs), time `pcc eval`
   (wall clock of the whole process: import, reading weights.bin,
   interpreting, writing output_0.pb) and compare its logits with torch's.
3. Time torch's own forward pass on the same input with
   torch.set_num_threads(2), and with 1 thread.
4. Print a table and write it, with date, machine and command, to
   benchmarks/results/gpt2_small_interp.md (or --results PATH).

--layers and --seq select a smaller variant (e.g. for profiling); such a
run writes no report unless --results is given.  The model directory is a
temporary one, removed at the end, unless --keep DIR names one.
"""

import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

try:
    import numpy as np
    import onnx
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from onnx import numpy_helper
except ImportError:
    # A pyenv (or venv) python3 may shadow Debian's, which has the packages.
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_RESULTS = os.path.join(REPO, "benchmarks", "results", "gpt2_small_interp.md")

# GPT-2 small
N_LAYER, D_MODEL, N_HEAD, VOCAB, N_CTX = 12, 768, 12, 50257, 1024
BATCH, SEQ = 1, 128
OPSET = 17
SEED = 1234
THREADS = 2  # torch.set_num_threads for the torch baseline (also timed with 1)


# --------------------------------------------------------------------------
# Model: a standard GPT-2 (pre-LayerNorm, tanh GELU, learned positions)
# --------------------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, n_ctx):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, n_ctx, n_ctx), persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        hd = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)  # [B, H, T, hd]
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d_model, n_head, n_ctx):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, n_ctx)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    def __init__(self, n_layer, d_model=D_MODEL, n_head=N_HEAD, vocab=VOCAB, n_ctx=N_CTX):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(n_ctx, d_model)
        self.h = nn.ModuleList([Block(d_model, n_head, n_ctx) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        self.apply(self._init_weights)
        # GPT-2 scales the residual projections by 1/sqrt(2 * n_layer).
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(m):
        # GPT-2's N(0, 0.02) weights.  Biases and LayerNorm affine params get
        # small random values instead of zeros/ones: a trained model's are
        # not constant, and the ONNX exporter would merge equal initializers.
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.normal_(m.bias, mean=0.0, std=0.02)
        if isinstance(m, nn.LayerNorm):
            nn.init.normal_(m.weight, mean=1.0, std=0.02)
            nn.init.normal_(m.bias, mean=0.0, std=0.02)

    def forward(self, ids):
        T = ids.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(array), name=name).SerializeToString())


def export(model, ids, out_dir):
    """Write model.onnx + weights.bin + test_data_set_0/ into out_dir;
    return torch's logits."""
    model_path = os.path.join(out_dir, "model.onnx")
    with torch.no_grad():
        logits = model(ids).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about constants are expected
        torch.onnx.export(
            model,
            (ids,),
            model_path,
            opset_version=OPSET,
            input_names=["ids"],
            output_names=["logits"],
            # Folding would bake the LM head's transpose of the tied wte into
            # a second 38.6M-float initializer (and wpe[arange(T)] into a
            # constant); unfolded, the ONNX parameters are torch's.
            do_constant_folding=False,
        )
    # torch writes a single protobuf here (< 2 GB); move the weights out.
    proto = onnx.load(model_path)
    onnx.save_model(
        proto,
        model_path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
    )
    onnx.checker.check_model(model_path)
    data_dir = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(data_dir, exist_ok=True)
    write_tensor(os.path.join(data_dir, "input_0.pb"), ids.numpy(), "ids")
    write_tensor(os.path.join(data_dir, "output_0.pb"), logits, "logits")
    return logits


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------


def run_timed(cmd):
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{shlex.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed, proc.stdout


def time_torch(model, ids, runs, threads):
    """Forward times after one warm-up run."""
    torch.set_num_threads(threads)
    times = []
    with torch.no_grad():
        model(ids)
        for _ in range(runs):
            t0 = time.perf_counter()
            model(ids)
            times.append(time.perf_counter() - t0)
    return times


def compare(got, want):
    """Errors of pcc's logits against torch's."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    diff = np.abs(got - want)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(want != 0, diff / np.abs(want), 0.0)
    worst = int(rel.argmax())  # elementwise, so at a logit near zero
    return dict(
        max_abs=float(diff.max()),
        max_rel=float(rel.flat[worst]),
        max_rel_at=float(want.flat[worst]),
        rel_l2=float(np.linalg.norm(got - want) / np.linalg.norm(want)),
        same_argmax=bool((got.argmax(-1) == want.argmax(-1)).all()),
        match=bool(np.allclose(got, want, rtol=1e-3, atol=1e-4)),
    )


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"nproc {len(os.sched_getaffinity(0))}, {cpu}"


def openblas_core(pcc):
    """The kernel OpenBLAS picked for this CPU (pcc's dots and torch's
    matmuls both use the system OpenBLAS), or "unknown"."""
    env = dict(os.environ, OPENBLAS_VERBOSE="2")
    proc = subprocess.run([pcc, "version"], env=env, capture_output=True, text=True)
    for line in proc.stderr.splitlines():
        if line.startswith("Core:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def git_describe():
    proc = subprocess.run(
        ["git", "-C", REPO, "describe", "--always", "--dirty"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return proc.stdout.strip() or "unknown"


def fmt_s(seconds):
    return f"{seconds:.2f} s" if seconds >= 0.1 else f"{seconds * 1e3:.1f} ms"


def fmt_runs(times):
    return ", ".join(f"{t:.3g}" for t in times)


def timing(seconds, runs, gflop):
    return f"{fmt_s(seconds)}  ({gflop / seconds:.1f} GFLOP/s)  [runs: {fmt_runs(runs)} s]"


def report(r):
    """The results as a markdown table."""
    gflop = r["flops"] / 1e9
    rows = [
        ("model", r["model"]),
        ("parameters (pcc inspect)", f"{r['params']:,} ({r['params'] / 1e6:.1f} M)"),
        ("parameters (torch, tied)", f"{r['torch_params']:,} ({r['torch_params'] / 1e6:.1f} M)"),
        ("forward FLOPs (pcc inspect)", f"{r['flops']:.4g} ({gflop:.1f} GFLOP)"),
        ("pcc eval, wall clock (median)", timing(r["pcc_eval"], r["pcc_eval_runs"], gflop)),
    ]
    if r["full"]:
        target = "met" if r["pcc_eval"] < 60 else "NOT met"
        rows.append(("target: seconds, not minutes (< 60 s)", target))
    rows += [
        (f"torch forward, {THREADS} threads (median)", timing(r["torch"], r["torch_runs"], gflop)),
        ("torch forward, 1 thread (median)", timing(r["torch1"], r["torch1_runs"], gflop)),
        (f"pcc eval / torch forward ({THREADS} threads)", f"{r['pcc_eval'] / r['torch']:.1f}x"),
        ("pcc eval / torch forward (1 thread)", f"{r['pcc_eval'] / r['torch1']:.1f}x"),
        ("max abs error vs torch", f"{r['max_abs']:.3g}"),
        (
            "max rel error vs torch, elementwise",
            f"{r['max_rel']:.3g} (where torch's logit is {r['max_rel_at']:.3g})",
        ),
        ("relative L2 error ‖pcc − torch‖ / ‖torch‖", f"{r['rel_l2']:.3g}"),
        ("same argmax token at every position", "yes" if r["same_argmax"] else "NO"),
        ("outputs match (allclose rtol 1e-3, atol 1e-4)", "yes" if r["match"] else "NO"),
    ]
    w = max(len(k) for k, _ in rows)
    table = [f"| {'metric':<{w}} | value |", f"|{'-' * (w + 2)}|-------|"]
    table += [f"| {k:<{w}} | {v} |" for k, v in rows]
    return "\n".join(table)


def write_markdown(path, r, table):
    date = subprocess.run(["date", "-u"], stdout=subprocess.PIPE, text=True).stdout.strip()
    text = f"""# GPT-2 small in pcc's reference interpreter

- date: {date}
- machine: {r['machine']}; load average before the run {r['load']}
- pcc: `{r['pcc_version']}`, binary `{r['pcc']}`, repository at {r['git']}
- torch {torch.__version__}, onnx {onnx.__version__}, numpy {np.__version__}
- command: `{r['command']}`
- model: {r['model']}; ONNX opset {OPSET}, weights as external data, seed {SEED}
- OpenBLAS kernel (OPENBLAS_VERBOSE=2): {r['openblas_core']}

Method:

- pcc: wall clock of the whole `pcc eval` process (import, reading
  weights.bin from the page cache, interpreting, writing output_0.pb),
  median of {r['runs']}.  Its dots call OpenBLAS `cblas_sgemm` with
  OpenBLAS's default thread count.
- torch: `model(ids)` under `torch.no_grad()`, median of {r['runs']} after one
  warm-up run, with `torch.set_num_threads({THREADS})` and then with 1 thread.
- errors: pcc's output_0.pb against torch's logits (computed with
  {THREADS} threads).

{table}
"""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


# --------------------------------------------------------------------------


def run_pcc(pcc, out_dir, runs, want):
    """Inspect, time `pcc eval` and compare its logits with want."""
    model_path = os.path.join(out_dir, "model.onnx")
    data_dir = os.path.join(out_dir, "test_data_set_0")
    pcc_out = os.path.join(out_dir, "pcc_out")
    r = dict(pcc_version=run_timed([pcc, "version"])[1].splitlines()[0])
    r["openblas_core"] = openblas_core(pcc)
    info = json.loads(run_timed([pcc, "inspect", model_path, "--json"])[1])
    r["params"], r["flops"] = info["params"], info["flops"]
    print(f"pcc inspect: {r['params']:,} params, {r['flops']:.4g} FLOPs", flush=True)

    r["pcc_eval_runs"] = []
    for i in range(runs):
        t, _ = run_timed([pcc, "eval", model_path, "-i", data_dir, "-o", pcc_out])
        r["pcc_eval_runs"].append(t)
        print(f"pcc eval run {i + 1}/{runs}: {t:.2f} s", flush=True)
    r["pcc_eval"] = statistics.median(r["pcc_eval_runs"])

    got = numpy_helper.to_array(onnx.load_tensor(os.path.join(pcc_out, "output_0.pb")))
    if got.shape != want.shape:
        sys.exit(f"pcc's output has shape {got.shape}, torch's {want.shape}")
    r.update(compare(got, want))
    return r


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--pcc",
        default=os.path.join(REPO, "build", "compiler", "pcc"),
        help="the pcc binary (default: build/compiler/pcc)",
    )
    parser.add_argument("--keep", metavar="DIR", help="write the model here and keep it")
    parser.add_argument("--layers", type=int, default=N_LAYER, help="number of decoder blocks")
    parser.add_argument("--seq", type=int, default=SEQ, help="sequence length")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each")
    parser.add_argument(
        "--results",
        metavar="PATH",
        help="markdown report (default for the full model: "
        + os.path.relpath(DEFAULT_RESULTS, REPO) + ")",
    )
    args = parser.parse_args()
    if not os.access(args.pcc, os.X_OK):
        sys.exit(f"{args.pcc}: no pcc binary there (build it: ninja -C build)")
    full = args.layers == N_LAYER and args.seq == SEQ
    results = args.results or (DEFAULT_RESULTS if full else None)

    torch.set_num_threads(THREADS)
    torch.manual_seed(SEED)
    model = GPT2(args.layers).eval()
    gen = torch.Generator().manual_seed(SEED)
    ids = torch.randint(0, VOCAB, (BATCH, args.seq), generator=gen)
    name = "GPT-2 small"
    if not full:
        name += f" variant, {args.layers} of {N_LAYER} layers"
    r = dict(
        model=f"{name}, batch {BATCH}, sequence {args.seq}",
        torch_params=sum(p.numel() for p in model.parameters()),
        full=full,
        runs=args.runs,
        machine=machine(),
        load=" ".join(f"{x:.2f}" for x in os.getloadavg()),
        pcc=args.pcc,
        git=git_describe(),
        command=shlex.join(["python3", os.path.relpath(sys.argv[0])] + sys.argv[1:]),
    )

    out_dir = args.keep or tempfile.mkdtemp(prefix="pcc_gpt2_")
    os.makedirs(out_dir, exist_ok=True)
    try:
        print(f"exporting to {out_dir} ...", flush=True)
        want = export(model, ids, out_dir)
        r.update(run_pcc(os.path.abspath(args.pcc), out_dir, args.runs, want))
    finally:
        if not args.keep:
            shutil.rmtree(out_dir, ignore_errors=True)

    r["torch_runs"] = time_torch(model, ids, args.runs, THREADS)
    r["torch1_runs"] = time_torch(model, ids, args.runs, 1)
    r["torch"] = statistics.median(r["torch_runs"])
    r["torch1"] = statistics.median(r["torch1_runs"])

    table = report(r)
    print("\n" + table)
    if results:
        write_markdown(results, r, table)
        print(f"\nwrote {results}")


if __name__ == "__main__":
    main()
