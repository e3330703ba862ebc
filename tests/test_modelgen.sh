#!/bin/sh
# test_modelgen.sh MODELGEN PCC: the benchmark models of pcc-modelgen, checked
# with `pcc inspect` against closed forms and published figures (TAP).
#
# GPT-3: parameters exactly 12 l h^2 (1 + 13/(12h)) + V h + s h + 2h, and
# 3 x forward dot FLOPs (batch 1) within 1% of Megatron-LM's training FLOPs
# 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) (Narayanan et al. 2021, FLOPs per
# iteration without activation recomputation).
# MoE, Wide-ResNet: parameters exactly our closed forms (written out again
# below) and within 5% of Alpa's published sizes; MoE FLOPs within 1% of
# Alpa's compute_moe_tflops (benchmark/alpa/util.py) for one sequence.
# Llama 2 and 3: parameters exactly l (2h^2 + 2h kv hd + 3hf + 2h) + 2Vh + h
# and within 0.2% of the published counts; 3 x dot FLOPs within 1% of
# 6 N s + 12 l s^2 h (the projections' weights N without the embedding,
# and the attention's two products; Hoffmann et al. 2022's accounting).
modelgen=$1
pcc=$2
. "$(dirname "$0")/tap.sh"

cat >"$tmp/check.py" <<'EOF'
import json, sys

def load(path):
    with open(path) as f:
        return json.load(f)

def expect(cond, msg):
    if not cond:
        sys.exit(msg)

def gpt_params(l, h, s, v):
    # 12 l h^2 (1 + 13/(12h)) = 12 l h^2 + 13 l h, in integers
    return 12 * l * h * h + 13 * l * h + v * h + s * h + 2 * h

def moe_params(l, h, e, s, v, r=8):
    f = r * h
    mlp = 2 * h * f + f + h
    dense = 4 * h * h + 4 * h + 4 * h + mlp
    moe = 4 * h * h + 4 * h + 4 * h + h * e + e * mlp
    return l // 2 * (dense + moe) + v * h + s * h + 2 * h

def wrn_params(depth, c, w, classes):
    stages = [3, 4, 6, 3] if depth == 50 else [3, 4, 23, 3]
    conv = lambda cin, cout, k: cin * cout * k * k + 2 * cout  # + BN scale, bias
    n, cin = conv(3, c, 7), c
    for i, blocks in enumerate(stages):
        f = c << i
        for j in range(blocks):
            n += conv(cin, f, 1) + conv(f, f * w, 3) + conv(f * w, 4 * f, 1)
            if cin != 4 * f or (i > 0 and j == 0):
                n += conv(cin, 4 * f, 1)
            cin = 4 * f
    return n + cin * classes + classes

def moe_flops(l, h, e, s, v, r=8):
    # Alpa benchmark/alpa/util.py compute_moe_tflops, B = 1, group = s
    dense = s * h * h * (8 + 4 * r) + 4 * s * s * h
    moe = (s * h * h * 8 + 4 * s * s * h + 8 * s * h * h * r + 2 * s * h * e
           + 2 * s * 2 * s + 2 * s * h * 2 * s * 2)
    return 3 * (dense + moe) * l / 2 + 6 * s * h * v

def llama_params(l, h, a, kv, f, v):
    hd = h // a
    return l * (2 * h * h + 2 * h * kv * hd + 3 * h * f + 2 * h) + 2 * v * h + h

def llama_flops(l, h, a, kv, f, s, v):
    hd = h // a
    n = l * (2 * h * h + 2 * h * kv * hd + 3 * h * f) + h * v  # weights a token multiplies
    return 6 * n * s + 12 * l * s * s * h

def close(got, want, tol, what):
    expect(abs(got / want - 1) <= tol, "%s: %.6g vs %.6g (%+.3f%%, tolerance %g%%)"
           % (what, got, want, 100 * (got / want - 1), 100 * tol))

cmd, o, a = sys.argv[1], load(sys.argv[2]), [float(x) if '.' in x or 'e' in x else int(x) for x in sys.argv[3:]]
p = o["params"]
if cmd == "gpt-params":
    want = gpt_params(*a)
    expect(p == want, "params %d, closed form %d" % (p, want))
elif cmd == "gpt-flops":
    l, h, s, v = a
    megatron = 72 * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h))
    close(3 * o["dot_flops"], megatron, 0.01, "3 x dot FLOPs vs Megatron")
elif cmd == "moe":
    l, h, e, s, v, published = a
    want = moe_params(l, h, e, s, v)
    expect(p == want, "params %d, closed form %d" % (p, want))
    close(p, published, 0.05, "params vs published")
    expect(o["onnx_ops"].get("TopK") == l // 2, "one TopK per MoE layer: %s" % o["onnx_ops"])
elif cmd == "moe-flops":
    close(3 * o["dot_flops"], moe_flops(*a), 0.01, "3 x dot FLOPs vs Alpa")
elif cmd == "wrn":
    depth, c, w, classes, published = a
    want = wrn_params(depth, c, w, classes)
    expect(p == want, "params %d, closed form %d" % (p, want))
    close(p, published, 0.05, "params vs published")
elif cmd == "llama":
    l, h, a_, kv, f, v, published = a
    want = llama_params(l, h, a_, kv, f, v)
    expect(p == want, "params %d, closed form %d" % (p, want))
    close(p, published, 0.002, "params vs published")
elif cmd == "llama-flops":
    close(3 * o["dot_flops"], llama_flops(*a), 0.01, "3 x dot FLOPs vs 6Ns + 12ls^2h")
elif cmd == "near":
    close(p, a[0], a[1], "params")
elif cmd == "inputs":
    shapes = [i["shape"] for i in o["inputs"]]
    expect(shapes == [a[0:2], a[0:2]], "input shapes %s" % shapes)
else:
    sys.exit("unknown check " + cmd)
EOF

# gen MODEL [ARGS...]: writes $tmp/MODEL.onnx and $tmp/MODEL.json (batch 1)
gen() {
	m=$1
	shift
	"$modelgen" "$m" -o "$tmp/$m.onnx" "$@" </dev/null >/dev/null &&
		"$pcc" inspect "$tmp/$m.onnx" --dim batch=1 --json </dev/null >"$tmp/$m.json"
}
py() { python3 "$tmp/check.py" "$@"; }

check "--list names every model" sh -c "'$modelgen' --list >'$tmp/list' && test \$(grep -c '^gpt3-\|^moe-\|^llama\|^wresnet-' '$tmp/list') -eq 29"

# GPT-3 (Brown et al. 2020, Table 2.1; 39b, 76b: Narayanan et al. 2021, Table 1)
while read -r m l h; do
	if gen "$m"; then
		check "$m: params = 12lh^2(1+13/12h) + Vh + sh + 2h" py gpt-params "$tmp/$m.json" "$l" "$h" 2048 50257
		check "$m: 3 x dot FLOPs within 1% of Megatron-LM's" py gpt-flops "$tmp/$m.json" "$l" "$h" 2048 50257
	else
		check "$m: generate and inspect" false
	fi
done <<EOF
gpt3-125m 12 768
gpt3-350m 24 1024
gpt3-760m 24 1536
gpt3-1.3b 24 2048
gpt3-2.6b 32 2560
gpt3-6.7b 32 4096
gpt3-13b 40 5120
gpt3-39b 48 8192
gpt3-76b 60 10240
gpt3-175b 96 12288
EOF
check "gpt3-175b: 174.6e9 params within 0.1%" py near "$tmp/gpt3-175b.json" 174.6e9 0.001
check "gpt3-175b: .onnx under 2 MB" test "$(stat -c %s "$tmp/gpt3-175b.onnx")" -lt 2000000
t0=$(date +%s%N)
"$pcc" inspect "$tmp/gpt3-175b.onnx" --dim batch=1 --json </dev/null >/dev/null
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
echo "# pcc inspect gpt3-175b: $ms ms"
check "gpt3-175b: pcc inspect succeeds in under 5 s" test $rc -eq 0 -a $ms -lt 5000
check "weights are never written" sh -c "! ls '$tmp'/*.weights 2>/dev/null | grep -q ."

# GShard MoE (Alpa, Zheng et al. 2022, Table 4; configurations of its benchmark code)
while read -r m l h e published; do
	if gen "$m"; then
		check "$m: params = closed form, within 5% of $published" py moe "$tmp/$m.json" "$l" "$h" "$e" 1024 32000 "$published"
		check "$m: 3 x dot FLOPs within 1% of Alpa's" py moe-flops "$tmp/$m.json" "$l" "$h" "$e" 1024 32000
	else
		check "$m: generate and inspect" false
	fi
done <<EOF
moe-380m 8 768 8 380e6
moe-690m 8 768 16 690e6
moe-1.3b 16 768 16 1.3e9
moe-2.4b 16 1024 16 2.4e9
moe-10b 16 1536 32 10e9
moe-27b 16 2048 48 27e9
moe-70b 32 2048 64 70e9
EOF

# Llama 2 (Touvron et al. 2023, Table 1) and Llama 3 (Dubey et al. 2024, Table 3)
while read -r m l h a kv f s v published; do
	if gen "$m"; then
		check "$m: params = closed form, within 0.2% of $published" py llama "$tmp/$m.json" "$l" "$h" "$a" "$kv" "$f" "$v" "$published"
		check "$m: 3 x dot FLOPs within 1% of 6Ns + 12ls^2h" py llama-flops "$tmp/$m.json" "$l" "$h" "$a" "$kv" "$f" "$s" "$v"
	else
		check "$m: generate and inspect" false
	fi
done <<EOF
llama2-7b 32 4096 32 32 11008 4096 32000 6.74e9
llama2-13b 40 5120 40 40 13824 4096 32000 13.0e9
llama2-70b 80 8192 64 8 28672 4096 32000 68.98e9
llama3-8b 32 4096 32 8 14336 8192 128256 8.03e9
llama3-70b 80 8192 64 8 28672 8192 128256 70.55e9
EOF

# Wide-ResNet (Alpa, Table 4; configurations of its benchmark code)
while read -r m depth c w published; do
	if gen "$m"; then
		check "$m: params = closed form, within 5% of $published" py wrn "$tmp/$m.json" "$depth" "$c" "$w" 1024 "$published"
	else
		check "$m: generate and inspect" false
	fi
done <<EOF
wresnet-250m 50 160 2 250e6
wresnet-500m 50 224 2 500e6
wresnet-1b 50 320 2 1e9
wresnet-2b 50 448 2 2e9
wresnet-4b 50 640 2 4e9
wresnet-6.8b 50 320 16 6.8e9
wresnet-13b 101 320 16 13e9
EOF

# options
check "batch is symbolic by default" sh -c "'$pcc' inspect '$tmp/gpt3-125m.onnx' 2>&1 | grep -q 'symbolic \"batch\"'"
check "--batch 4 --seq 128 --vocab 1000: fixed shapes, closed form" sh -c "'$modelgen' gpt3-125m -o '$tmp/small.onnx' --batch 4 --seq 128 --vocab 1000 >/dev/null &&
	'$pcc' inspect '$tmp/small.onnx' --json >'$tmp/small.json' &&
	python3 '$tmp/check.py' inputs '$tmp/small.json' 4 128 && python3 '$tmp/check.py' gpt-params '$tmp/small.json' 12 768 128 1000"
check "wresnet-250m --image 64: images [2,3,64,64], the same parameters as at 224" sh -c "
	'$modelgen' wresnet-250m -o '$tmp/wrn64.onnx' --image 64 --batch 2 >/dev/null &&
	'$pcc' inspect '$tmp/wrn64.onnx' >'$tmp/wrn64.txt' && grep -q 'images *f32\[2,3,64,64\]' '$tmp/wrn64.txt' &&
	'$pcc' inspect '$tmp/wrn64.onnx' --json >'$tmp/wrn64.json' && python3 '$tmp/check.py' wrn '$tmp/wrn64.json' 50 160 2 1024 250e6"

# errors: one line, exit 2 for arguments, 1 for I/O
# fails STATUS MESSAGE ARGS...: exit status and the one-line message
fails() {
	want=$1
	msg=$2
	shift 2
	"$modelgen" "$@" >/dev/null 2>"$tmp/e"
	rc=$?
	test $rc -eq "$want" && test "$(wc -l <"$tmp/e")" -eq 1 && grep -q "^pcc-modelgen: .*$msg" "$tmp/e" ||
		{ echo "exit $rc: $(cat "$tmp/e")" >&2; return 1; }
}
check "unknown model: exit 2, one line" fails 2 "unknown model 'gpt3-1t'" gpt3-1t -o "$tmp/x.onnx"
check "--seq 0: exit 2, one line" fails 2 "--seq expects an integer" gpt3-125m -o "$tmp/x.onnx" --seq 0
check "--seq abc: exit 2, one line" fails 2 "--seq expects an integer" gpt3-125m -o "$tmp/x.onnx" --seq abc
check "--seq on a ResNet: exit 2, one line" fails 2 "not a transformer" wresnet-1b -o "$tmp/x.onnx" --seq 64
check "--image on a transformer: exit 2, one line" fails 2 "gpt3-125m is not a Wide-ResNet: --image does not apply" gpt3-125m -o "$tmp/x.onnx" --image 64
check "--image 0: exit 2, one line" fails 2 "--image expects an integer from 1 to 8192" wresnet-250m -o "$tmp/x.onnx" --image 0
check "no -o: exit 2, one line" fails 2 "no output file" gpt3-125m
check "unwritable output: exit 1, one line" fails 1 "cannot write" gpt3-125m -o "$tmp/no/such/dir/x.onnx"
tap_done
