#!/usr/bin/env bash
# report_validation.sh [BUILD_DIR]
#
# `pcc report`'s predictions against published measurements of real
# training runs, and the speed of `pcc report` itself.  Prints a markdown
# table on stdout; exits non-zero when a model cannot be generated or a
# `pcc report` run fails.  BUILD_DIR (default: build) holds
# compiler/pcc and benchmarks/pcc-modelgen.
#
# Published numbers (all A100 80 GB DGX nodes of NVIDIA's Selene: 8 GPUs,
# NVLink/NVSwitch 600 GB/s per GPU, 8 x 200 Gb/s HDR InfiniBand per node;
# mixed precision, activation recomputation; GPT with sequence 2048 and
# vocabulary 51,200):
#
#   [T1] Narayanan et al., "Efficient Large-Scale Language Model Training on
#        GPU Clusters Using Megatron-LM", SC21 (arXiv:2104.04473), Table 1,
#        rows 39.1B and 76.1B (the only Table 1 sizes pcc-modelgen builds).
#        Table 1 gives t, p, d, GPUs, batch and teraFLOP/s per GPU, not the
#        micro-batch size or the schedule: pcc chooses the micro-batch size
#        (its search) and runs 1F1B; the sensitivity table varies both.
#   [T2] same paper, Table 2, PTD-parallelism rows for 174.6B (model-parallel
#        size 96, micro-batch size 1; the split t=8 x p=12 is inferred from
#        96 layers and t = 8 GPUs per node) and ZeRO-3-without-model-
#        parallelism rows (micro-batch sizes 4, 2, 1 as in the table).
#   [S5] same paper, Section 5.1 (training-time estimate): GPT-3 175B on
#        1024 A100s with batch 1536 at 140 teraFLOP/s per GPU.  The text
#        gives no plan; t=8, p=16, micro-batch size 1 are those of
#        Megatron-LM's examples/pretrain_gpt3_175B.sh (128 nodes x 8 GPUs,
#        global batch 1536) at the paper's code release (commit 50a4b5fa02,
#        2021-04-08).
#
# The paper's teraFLOP/s count F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
# FLOPs per step (its Eq. 3: recomputation included); pcc's
# tflops_per_device counts its own hardware FLOPs (recomputation included),
# within 0.5% of F on these models (the table's footnote prints the ratio).
# "published step" is F / (published TFLOP/s x GPUs).
set -u -o pipefail

BUILD=${1:-build}
PCC=$BUILD/compiler/pcc
GEN=$BUILD/benchmarks/pcc-modelgen
RUNS=3
for x in "$PCC" "$GEN"; do
	if [ ! -x "$x" ]; then
		echo "report_validation: $x not found or not executable (build with ninja -C $BUILD)" >&2
		exit 1
	fi
done
command -v python3 >/dev/null || { echo "report_validation: python3 not found" >&2; exit 1; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for m in gpt3-39b gpt3-76b gpt3-175b; do
	if ! "$GEN" "$m" --vocab 51200 --seq 2048 -o "$TMP/$m.onnx" >"$TMP/gen.log" 2>&1; then
		echo "report_validation: pcc-modelgen $m failed:" >&2
		cat "$TMP/gen.log" >&2
		exit 1
	fi
done

# id | table | model | nodes of 8 | plan | global batch | published TFLOP/s per GPU | source
# table "main": the published configuration; "sens": an unstated knob varied.
CONFIGS='
t1-39b|main|gpt3-39b|64|dp=32,tp=8,pp=2,recompute=1|1536|138|[T1] Table 1, row 39.1B
t1-76b|main|gpt3-76b|128|dp=32,tp=8,pp=4,recompute=1|1792|140|[T1] Table 1, row 76.1B
t2-ptd-384|main|gpt3-175b|48|dp=4,tp=8,pp=12,recompute=1,mb=384|1536|153|[T2] Table 2, PTD, 174.6B, 384 GPUs
t2-ptd-768|main|gpt3-175b|96|dp=8,tp=8,pp=12,recompute=1,mb=192|1536|149|[T2] Table 2, PTD, 174.6B, 768 GPUs
t2-ptd-1536|main|gpt3-175b|192|dp=16,tp=8,pp=12,recompute=1,mb=96|1536|141|[T2] Table 2, PTD, 174.6B, 1536 GPUs
s5-1024|main|gpt3-175b|128|dp=8,tp=8,pp=16,recompute=1,mb=192|1536|140|[S5] Section 5.1, GPT-3 175B, 1024 GPUs
t2-z3-384|main|gpt3-175b|48|dp=384,tp=1,pp=1,zero=3,recompute=1,mb=1|1536|144|[T2] Table 2, ZeRO-3, 174.6B, 384 GPUs
t2-z3-768|main|gpt3-175b|96|dp=768,tp=1,pp=1,zero=3,recompute=1,mb=1|1536|88|[T2] Table 2, ZeRO-3, 174.6B, 768 GPUs
t2-z3-1536|main|gpt3-175b|192|dp=1536,tp=1,pp=1,zero=3,recompute=1,mb=1|1536|44|[T2] Table 2, ZeRO-3, 174.6B, 1536 GPUs
t1-39b-b1|sens|gpt3-39b|64|dp=32,tp=8,pp=2,recompute=1,mb=48|1536|138|[T1] row 39.1B, micro-batch size 1
t1-39b-il|sens|gpt3-39b|64|dp=32,tp=8,pp=2,recompute=1,schedule=interleaved,v=2|1536|138|[T1] row 39.1B, interleaved v=2
t1-76b-b1|sens|gpt3-76b|128|dp=32,tp=8,pp=4,recompute=1,mb=56|1792|140|[T1] row 76.1B, micro-batch size 1
t1-76b-il|sens|gpt3-76b|128|dp=32,tp=8,pp=4,recompute=1,schedule=interleaved,v=2|1792|140|[T1] row 76.1B, interleaved v=2
s5-1024-il|sens|gpt3-175b|128|dp=8,tp=8,pp=16,recompute=1,mb=192,schedule=interleaved,v=2|1536|140|[S5] 175B, 1024 GPUs, interleaved v=2
'

fail=0
while IFS='|' read -r id table model nodes plan batch pub src; do
	[ -n "$id" ] || continue
	cluster="${nodes}x8:a100-80g,ib=200Gbps,nvlink=600GBps"
	for i in $(seq 1 $RUNS); do
		t0=$(date +%s%N)
		if ! "$PCC" report "$TMP/$model.onnx" --cluster "$cluster" --plan "$plan" --batch "$batch" --json \
			>"$TMP/$id.json" 2>"$TMP/$id.err"; then
			echo "report_validation: $id: pcc report $model --cluster $cluster --plan $plan --batch $batch failed:" >&2
			cat "$TMP/$id.err" >&2
			fail=1
			break
		fi
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>"$TMP/$id.us"
	done
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$table" "$model" "$nodes" "$plan" "$batch" "$pub" \
		"$src" "$cluster" >>"$TMP/rows.tsv"
done <<<"$CONFIGS"
[ "$fail" = 0 ] || exit 1

python3 - "$TMP" <<'EOF'
import json, statistics, sys, os

tmp = sys.argv[1]
# layers, hidden of the generated models (pcc-modelgen --list)
dims = {"gpt3-39b": (48, 8192), "gpt3-76b": (60, 10240), "gpt3-175b": (96, 12288)}
S, V = 2048, 51200

def eq3(model, B):
    l, h = dims[model]
    return 96.0 * B * S * l * h * h * (1 + S / (6.0 * h) + V / (16.0 * l * h))

def fmt_t(s):
    return "%.2f s" % s

rows = []
with open(os.path.join(tmp, "rows.tsv")) as f:
    for line in f:
        id_, table, model, nodes, plan, batch, pub, src, cluster = line.rstrip("\n").split("\t")
        with open(os.path.join(tmp, id_ + ".json")) as jf:
            r = json.load(jf)
        with open(os.path.join(tmp, id_ + ".us")) as tf:
            us = [int(x) for x in tf.read().split()]
        for k in ("step_time_s", "tflops_per_device", "devices", "fits", "peak_memory_bytes",
                  "memory_capacity_bytes", "micro_batch", "plan", "time_s"):
            if k not in r:
                sys.exit("report_validation: %s: no %s in pcc's JSON" % (id_, k))
        rows.append(dict(id=id_, table=table, model=model, plan=plan, batch=int(batch), pub=float(pub),
                         src=src, r=r, us=us))

def plan_str(r):
    p = r["plan"]
    s = "t=%d p=%d d=%d" % (p["tp"], p["pp"], p["dp"])
    if p["pp"] > 1:
        s += ", " + p["schedule"] + (" v=%d" % p["v"] if p["schedule"] == "interleaved" else "")
    if p["zero"]:
        s += ", ZeRO-%d" % p["zero"]
    s += ", b=%d" % r["micro_batch"]
    return s

def verdict(r):
    pct = 100.0 * r["peak_memory_bytes"] / r["memory_capacity_bytes"]
    return ("fits" if r["fits"] else "**does not fit**") + " (%.0f%%)" % pct

def dominant(r):
    t = r["time_s"]
    # a manual plan's mesh axis 0 is dp, axis 1 tp
    names = {"compute": "compute", "recompute": "recompute", "comm_axis1": "tp comm",
             "comm_axis0": "dp comm", "transfers": "pp transfers", "bubble": "bubble",
             "sync_axis0": "dp sync", "sync_axis1": "tp sync", "optimizer": "optimizer"}
    parts = sorted(((v, k) for k, v in t.items()), reverse=True)
    out = []
    for v, k in parts[:3]:
        if v > 0:
            out.append("%s %.0f%%" % (names.get(k, k), 100.0 * v / r["step_time_s"]))
    return ", ".join(out)

def table(sel, title):
    print("### " + title)
    print()
    print("| config | model | GPUs | plan (b = micro-batch size) | batch | published TFLOP/s/GPU "
          "| predicted TFLOP/s/GPU | ratio pred/pub | predicted step | published step (Eq. 3) "
          "| largest parts of the predicted step | memory verdict | `pcc report` wall (median of 3) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for x in sel:
        r = x["r"]
        pred = r["tflops_per_device"]
        pub_step = eq3(x["model"], x["batch"]) / (x["pub"] * 1e12 * r["devices"])
        ratio = pred / x["pub"]
        flag = " **(>25%)**" if abs(ratio - 1) > 0.25 else ""
        wall = statistics.median(x["us"]) / 1000.0
        print("| %s | %s | %d | %s | %d | %.0f | %.1f | %.3f%s | %s | %s | %s | %s | %.0f ms [%s] |" % (
            x["src"], x["model"], r["devices"], plan_str(r), x["batch"], x["pub"], pred, ratio, flag,
            fmt_t(r["step_time_s"]), fmt_t(pub_step), dominant(r), verdict(r), wall,
            ", ".join("%.0f" % (u / 1000.0) for u in x["us"])))
    print()

main = [x for x in rows if x["table"] == "main"]
sens = [x for x in rows if x["table"] == "sens"]
table(main, "Published configurations")
table(sens, "Sensitivity: knobs the sources do not state")

ratios = [x["r"]["tflops_per_device"] / x["pub"] for x in main]
ptd = [x["r"]["tflops_per_device"] / x["pub"] for x in main if x["r"]["plan"]["zero"] == 0]
print("Summary (published configurations): %d rows; ratio pred/pub over the Megatron (PTD) rows "
      "min %.3f, max %.3f, mean |ratio - 1| %.1f%%; over all rows %d beyond 25%%." % (
          len(main), min(ptd), max(ptd), 100.0 * statistics.mean(abs(q - 1) for q in ptd),
          sum(1 for q in ratios if abs(q - 1) > 0.25)))
print()
seen = {}
for x in rows:
    r = x["r"]
    hw = r["tflops_per_device"] * 1e12 * r["devices"] * r["step_time_s"]
    seen.setdefault(x["model"], hw / eq3(x["model"], x["batch"]))
print("pcc's hardware FLOPs per step / the paper's Eq. (3): " +
      ", ".join("%s %.4f" % (m, q) for m, q in seen.items()) + ".")
walls = [u / 1000.0 for x in rows for u in x["us"]]
print("`pcc report` wall clock over all %d calls: median %.0f ms, max %.0f ms "
      "(whole process: ONNX import, layer solves, stage search, micro-batch search)." % (
          len(walls), statistics.median(walls), max(walls)))
EOF
