#!/usr/bin/env python3
"""The automatic plan's search time, and its predicted throughput against the
best manual plan, on the benchmark models (pcc-modelgen) and clusters.

    python3 benchmarks/inter_search.py [--build build] [--cases NAME,...]
                                       [--results PATH] [--no-manual]

Per case: pcc-modelgen writes the model (graph only, symbolic batch), then
`pcc MODEL --cluster C --batch B --train` runs the whole search (wall time
of the process, and the plan's step time) and every manual plan that
`pcc report --plan` can evaluate (dp x tp x pp = the cluster's devices,
powers of two, tp within a node, pp at most 32; ZeRO 0/1; recomputation 0/1; 1F1B and
interleaved; micro-batch size chosen by the report) is costed; the table
gives the automatic plan's throughput over the best manual plan's that
fits the planner's memory budget (90% of device memory). Both come from
the same cost model. Standard library only.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

# (name, model, extra modelgen args, cluster, global batch)
CASES = [
    ("gpt-1.3b-8", "gpt3-1.3b", [], "1x8:v100", 1024),
    ("gpt-2.6b-16", "gpt3-2.6b", [], "2x8:v100", 1024),
    ("gpt-6.7b-32", "gpt3-6.7b", [], "4x8:v100", 1024),
    ("gpt-13b-32", "gpt3-13b", [], "4x8:v100", 1024),
    ("gpt-39b-64", "gpt3-39b", [], "8x8:v100", 1024),
    ("gpt-6.7b-16-h100", "gpt3-6.7b", [], "2x8:h100", 1024),
    ("gpt-175b-1024", "gpt3-175b", [], "128x8:v100", 1536),
    ("moe-1.3b-16", "moe-1.3b", [], "2x8:v100", 1024),
    ("moe-10b-32", "moe-10b", [], "4x8:v100", 1024),
    ("wresnet-1b-8", "wresnet-1b", [], "1x8:v100", 1536),
    ("wresnet-2b-16", "wresnet-2b", [], "2x8:v100", 1536),
]


BUDGET = 0.9


def run(cmd, timeout=900):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def auto_plan(pcc, model, cluster, batch):
    p, wall = run([pcc, model, "--cluster", cluster, "--batch", str(batch), "--train"])
    if p.returncode != 0:
        return None, wall, (p.stderr.strip().splitlines() or ["?"])[-1]
    m = re.search(r"step ([0-9.]+) ms, ([0-9.e+]+) samples/s, MFU ([0-9.]+)%", p.stdout)
    shape = re.search(r": (\d+ stages?, [a-z0-9]+, \d+ micro-batch(?:es)?)", p.stdout)
    return ({"step_ms": float(m.group(1)), "samples_s": float(m.group(2)), "mfu": float(m.group(3)),
             "plan": shape.group(1) if shape else "?"}, wall, "")


def manual_plans(devices, per_node):
    tp = 1
    while tp <= per_node and tp <= devices:
        pp = 1
        while tp * pp <= devices and pp <= 32:
            if devices % (tp * pp) == 0:
                dp = devices // (tp * pp)
                for zero in (0, 1):
                    for rc in (0, 1):
                        for sch in ("1f1b", "interleaved"):
                            if sch == "interleaved" and pp == 1:
                                continue
                            yield f"dp={dp},tp={tp},pp={pp},zero={zero},recompute={rc},schedule={sch}"
            pp *= 2
        tp *= 2


def best_manual(pcc, model, cluster, batch):
    nodes, per = cluster.split(":")[0].split("x")
    devices = int(nodes) * int(per)
    best = None
    for plan in manual_plans(devices, int(per)):
        p, _ = run([pcc, "report", model, "--cluster", cluster, "--batch", str(batch), "--train", "--plan", plan,
                    "--json"])
        if p.returncode != 0:
            continue
        r = json.loads(p.stdout)
        # the planner's budget: 90% of device memory (headroom for the allocator and the runtime)
        fits = r.get("fits") and r["peak_memory_bytes"] <= BUDGET * r["memory_capacity_bytes"]
        if fits and (best is None or r["samples_per_s"] > best[0]):
            best = (r["samples_per_s"], plan)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--cases", default="")
    ap.add_argument("--results", default=os.path.join(os.path.dirname(__file__), "results", "inter_search.md"))
    ap.add_argument("--no-manual", action="store_true")
    a = ap.parse_args()
    pcc = os.path.join(a.build, "compiler", "pcc")
    gen = os.path.join(a.build, "benchmarks", "pcc-modelgen")
    want = set(a.cases.split(",")) if a.cases else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, extra, cluster, batch in CASES:
            if want and name not in want:
                continue
            path = os.path.join(tmp, model + ".onnx")
            if not os.path.exists(path):
                subprocess.run([gen, model, "-o", path] + extra, check=True, capture_output=True)
            auto, wall, err = auto_plan(pcc, path, cluster, batch)
            best = None if a.no_manual else best_manual(pcc, path, cluster, batch)
            ratio = auto["samples_s"] / best[0] if auto and best else None
            row = (name, cluster, batch, f"{wall:.1f}",
                   f"{auto['samples_s']:.4g}" if auto else "-", auto["plan"] if auto else err,
                   f"{best[0]:.4g}" if best else "-", best[1] if best else "-",
                   f"{ratio:.3f}" if ratio else "-")
            rows.append(row)
            print(" | ".join(str(x) for x in row), flush=True)
    head = ("case", "cluster", "batch", "search s", "auto samples/s", "auto plan", "best manual samples/s",
            "best manual plan", "auto / manual")
    load = os.getloadavg()[0]
    with open(a.results, "w") as f:
        f.write(f"# Automatic plan: search time and throughput against the best manual plan\n\n")
        f.write(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, load {load:.2f}; "
                f"`python3 benchmarks/inter_search.py --build {a.build}`\n\n")
        f.write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
        for r in rows:
            f.write("| " + " | ".join(str(x) for x in r) + " |\n")
    print(f"wrote {a.results}")


if __name__ == "__main__":
    sys.exit(main())
