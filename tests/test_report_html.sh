#!/bin/sh
# test_report_html.sh PCC MODELGEN: `pcc report --svg / --png / --html`
# (TAP). The SVG parses as XML, the PNG has its signature and size, the
# HTML page is well formed, self-contained (images as base64 PNG, nothing
# fetched) and shows the JSON report's numbers; headless Chromium renders
# it where Chromium is installed (SKIP otherwise). Built without cairo the
# pictures are one line saying so (the picture cases SKIP).
pcc=$1
modelgen=$2
. "$(dirname "$0")/tap.sh"

skip() {
	n=$((n + 1))
	echo "ok $n # SKIP $1"
}

"$modelgen" gpt3-125m -o "$tmp/g.onnx" >/dev/null
"$modelgen" gpt3-1.3b -o "$tmp/g13.onnx" >/dev/null
g=$tmp/g.onnx
run="'$pcc' report '$tmp/g13.onnx' --cluster 1x8:v100 --train --batch 64 --stages 4"

cairo=yes
if ! "$pcc" report "$g" --cluster 1x8:a100 --plan dp=8 --svg "$tmp/probe.svg" >/dev/null 2>"$tmp/probe"; then
	grep -q 'pictures need cairo' "$tmp/probe" && cairo=no
fi

# The page is well formed: every element closed in order, no scripts, no
# external resources, every image a base64 PNG.
page_ok='
import base64, html.parser, re, sys
text = open(sys.argv[1]).read()
void = {"meta", "img", "br", "hr", "link", "input"}
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.imgs = []; self.tags = set()
    def handle_starttag(self, t, a):
        self.tags.add(t)
        if t == "img": self.imgs.append(dict(a)["src"])
        if t not in void: self.stack.append(t)
    def handle_endtag(self, t):
        assert self.stack and self.stack[-1] == t, (t, self.stack[-3:])
        self.stack.pop()
p = P(); p.feed(text); p.close()
assert p.stack == [], p.stack
assert text.startswith("<!DOCTYPE html>") and "script" not in p.tags and "link" not in p.tags
assert not re.search(r"(src|href)=\"(?!data:)", text)
want = int(sys.argv[2])
assert len(p.imgs) == want, (len(p.imgs), want)
for s in p.imgs:
    assert s.startswith("data:image/png;base64,")
    assert base64.b64decode(s.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
'

if [ $cairo = yes ]; then
	check "--svg: an SVG document 960 wide with the three charts' text" sh -c "
	  $run --svg '$tmp/a.svg' >/dev/null && python3 - '$tmp/a.svg' <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag.endswith('svg') and root.get('width').startswith('960'), root.attrib
assert len(list(root.iter())) > 100
EOF"
	check "--png: a PNG image 960 pixels wide" sh -c "
	  $run --png '$tmp/a.png' >/dev/null && python3 - '$tmp/a.png' <<'EOF'
import struct, sys
b = open(sys.argv[1], 'rb').read()
assert b[:8] == b'\x89PNG\r\n\x1a\n' and b[12:16] == b'IHDR'
w, h = struct.unpack('>II', b[16:24])
assert w == 960 and 400 < h < 5000, (w, h)
EOF"
	check "--png of a sweep: the sweep's chart" sh -c "
	  '$pcc' report '$g' --cluster 2x8:a100 --plan dp=4,tp=4 --batch 64 --sweep sensitivity --png '$tmp/s.png' >/dev/null &&
	  python3 -c 'import sys; b=open(sys.argv[1],\"rb\").read(); assert b[:4]==b\"\x89PNG\" and len(b) > 5000' '$tmp/s.png'"
	nimg=3
else
	skip "--svg: built without cairo"
	skip "--png: built without cairo"
	skip "--png of a sweep: built without cairo"
	nimg=0
fi

check "--html: well formed, self-contained, images embedded as base64 PNG" sh -c "
  $run --html '$tmp/a.html' >/dev/null && python3 -c '$page_ok' '$tmp/a.html' $nimg"
check "--html shows the report's numbers: step time, MFU, each stage's memory" sh -c "
  $run --json >'$tmp/a.json' && python3 - '$tmp/a.html' '$tmp/a.json' $nimg <<'EOF'
import json, re, sys
h = open(sys.argv[1]).read(); o = json.load(open(sys.argv[2]))
assert '<td>%.3f s</td>' % o['step_time_s'] in h
assert 'MFU %.1f%%' % (100 * o['mfu']) in h
for s in o['stages']:
    assert '<td>%.3f</td>' % (s['total_bytes'] / 2**30) in h
assert h.count('<table>') == 5 and h.count('<tr>') >= 1 + 8 + 1 + len(o['stages'])
# why this plan: the plans weighed (the plan's row first, in bold) and each stage's costliest ops
assert '<h2>Why this plan</h2>' in h and 'the fastest of %d plans weighed' % o['plans_weighed'] in h
assert h.index('<tr class=\"best\"><td>%d x %d</td>' % (o['micro_batch'], o['micro_batches'])) > h.index('Why this plan')
# the charts' key: one colour per meaning, each meaning once, red only for "worse"
key = re.findall(r'<tr><td class=\"swatch\" style=\"background:#([0-9a-f]{6})\"></td><td>([^<]*)</td></tr>', h)
assert key or sys.argv[3] == '0'  # drawn without cairo: no charts, no key
if key:
    cols = [c for c, _ in key]; names = [m for _, m in key]
    assert len(key) >= 15 and len(set(cols)) == len(cols) and len(set(names)) == len(names), key
    def red(c):
        r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4)); return r > 180 and g < 80 and b < 80
    reds = [m for c, m in key if red(c)]
    assert len(reds) == 1 and reds[0].startswith('does not fit,'), key
# each plan weighed once, the other way of solving its gradient reduction named beside it
rows = re.findall(r'<tr(?: class=\"best\")?><td>(\d+ x \d+)</td><td>([^<]*)</td><td>([^<]*)</td>', h)
assert len(rows) == len(set(rows)) == len(o['alternatives']), rows
assert not any('overlap' in r[2] for r in rows) and '<th>gradient sync (the other way)</th>' in h
assert re.search(r'<td>(after backward|overlapped) \((overlapped|after): (same|\+[0-9.]+%)\)</td>', h)
for s in o['stages']:
    for op in s['ops']:
        assert ('<td>%s</td>' % op['sharding'].replace('<', '&lt;').replace('>', '&gt;')) in h or op['collective'], op
EOF"
check "--html of a comparison and of a sweep: both plans' columns, the sweep's table" sh -c "
  '$pcc' report '$g' --cluster 2x8:a100 --batch 64 --compare auto dp=4,tp=2,pp=2 --html '$tmp/c.html' >/dev/null &&
  grep -q '<th>A: auto</th><th>B: dp=4,tp=2,pp=2</th><th>B/A</th>' '$tmp/c.html' && python3 -c '$page_ok' '$tmp/c.html' $nimg &&
  '$pcc' report '$g' --cluster 2x8:a100 --batch 64 --compare auto dp=4,tp=2,pp=2 --json >'$tmp/c.json' &&
  python3 - '$tmp/c.html' '$tmp/c.json' <<'EOF' &&
import json, re, sys
h = open(sys.argv[1]).read(); c = json.load(open(sys.argv[2])); a, b = c['a'], c['b']
# B/A of the step time, throughput and peak memory, from the JSON
def ratio(row):
    return float(re.search(r'<tr><th>%s</th><td>[^<]*</td><td>[^<]*</td><td>([0-9.e+-]+)x</td></tr>' % row, h).group(1))
assert abs(ratio('step time') / (b['step_time_s'] / a['step_time_s']) - 1) < 6e-3  # three digits
assert abs(ratio('throughput') / (b['samples_per_s'] / a['samples_per_s']) - 1) < 6e-3  # three digits
assert abs(ratio('peak memory') / (b['peak_memory_bytes'] / a['peak_memory_bytes']) - 1) < 6e-3  # three digits
# the step time's rows: the same groups for both plans (no per-plan collective rows), each with B/A
t = h[h.index('<h2>Step time</h2>'):]; t = t[:t.index('</table>')]
rows = re.findall(r'<tr><th>([^<]*)</th><td>[^<]*</td><td>[^<]*</td><td>[^<]*</td></tr>', t)
assert 'collectives inside the micro-batches' in rows and not any('tp=' in r or 'mesh axis' in r for r in rows), rows
assert rows[0] == 'compute' and len(rows) == t.count('<tr>') - 1, rows
EOF
  '$pcc' report '$g' --cluster 2x8:a100 --train --batch 64 --sweep tp,pp --html '$tmp/s.html' >/dev/null &&
  grep -q '<h2>Sweep</h2>' '$tmp/s.html' && test \$(grep -c '<td>tp=[0-9]* pp=' '$tmp/s.html') -eq 14 &&
  python3 -c '$page_ok' '$tmp/s.html' \$(( $nimg == 0 ? 0 : 4 ))"

if [ $cairo = yes ]; then
	check "--html of a step of 64 micro-batches: the timeline whole, then its start and end zoomed in (three panels)" sh -c "
	  $run --micro-batches 64 --html '$tmp/z.html' >/dev/null && python3 - '$tmp/z.html' <<'EOF'
import base64, re, struct, sys
h = open(sys.argv[1]).read()
src = re.search(r'<img alt=\"timeline: the whole step, then its start and its end zoomed in\" src=\"data:image/png;base64,([^\"]*)\"', h).group(1)
png = base64.b64decode(src)
w, ht = struct.unpack('>II', png[16:24])
assert ht == 3 * (80 + 22 * 4), ht  # three panels of 4 stages
EOF"
	cat >"$tmp/loglog.py" <<'EOF'
# loglog.py PNG JSON RRGGBB: the throughput markers of a GPU sweep's chart lie
# on log-log axes fitted to the points (decodes the PNG itself)
import json, math, struct, sys, zlib
png = open(sys.argv[1], 'rb').read(); pts = [p for p in json.load(open(sys.argv[2]))['points'] if p['ok']]
w, h, depth, ctype = struct.unpack('>IIBB', png[16:26])
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 4 if ctype == 6 else 3
data, i = b'', 8
while i < len(png):
    n, t = struct.unpack('>I4s', png[i:i + 8])
    if t == b'IDAT': data += png[i + 8:i + 8 + n]
    i += 12 + n
raw = zlib.decompress(data); stride = w * bpp; rows = []; prev = bytearray(stride)
for y in range(h):
    f = raw[y * (stride + 1)]; line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
# the throughput markers: filled discs of the palette's throughput colour (report_internal.h)
ink = bytes.fromhex(sys.argv[3])
def hit(x, y):
    return bytes(rows[y][x * bpp:x * bpp + 3]) == ink
cols = {x: [y for y in range(h - 30) if hit(x, y)] for x in range(w)}  # not the legend
marks, cur = [], []
for x in range(w):
    if len(cols[x]) >= 4: cur.append(x)
    elif cur: marks.append(cur); cur = []
centres = []
for m in marks:
    ys = sorted(y for x in m for y in cols[x]); mid = ys[len(ys) // 2]
    ys = [y for y in ys if abs(y - mid) <= 5]
    centres.append((sum(m) / len(m), sum(ys) / len(ys)))
assert len(centres) == len(pts), (centres, len(pts))
# log x: equal pixel steps for equal GPU ratios; log y: pixel steps proportional to log throughput ratios
dx = [(c2[0] - c1[0]) / math.log(p2['gpus'] / p1['gpus']) for c1, c2, p1, p2 in zip(centres, centres[1:], pts, pts[1:])]
dy = [(c1[1] - c2[1]) / math.log(p2['samples_per_s'] / p1['samples_per_s']) for c1, c2, p1, p2 in zip(centres, centres[1:], pts, pts[1:])]
assert max(dx) - min(dx) < 3 and max(dy) - min(dy) < 0.05 * max(dy), (dx, dy)
# fitted: the points span much of the plot's height
assert centres[0][1] - centres[-1][1] > 0.3 * h, centres
EOF
	check "--html of a GPU sweep: the scaling chart on log-log axes fitted to the points" sh -c "
	  '$pcc' report '$g' --cluster 2x8:a100 --train --batch 64 --sweep gpus=8..32 --html '$tmp/gs.html' --png '$tmp/gs.png' \
	    --json >'$tmp/gs.json' 2>/dev/null &&
	  grep -q '<img alt=\"scaling: samples/s (log scale) and MFU against GPUs (log scale)\" src=\"data:image/png;base64,' '$tmp/gs.html' &&
	  python3 '$tmp/loglog.py' '$tmp/gs.png' '$tmp/gs.json' 2f4b7c  # INK_THROUGHPUT"
else
	skip "--html of a GPU sweep: built without cairo"
fi

chrome=
for c in chromium chromium-browser google-chrome; do
	command -v "$c" >/dev/null 2>&1 && chrome=$c && break
done
# A browser that cannot render an empty page here (no display libraries,
# a sandbox it may not use) says nothing about the report: SKIP, naming it.
if [ -n "$chrome" ] && ! timeout 120 "$chrome" --headless --disable-gpu --no-sandbox --dump-dom about:blank \
	>"$tmp/blank" 2>"$tmp/blank.err"; then
	skip "headless $chrome renders the page: it does not start here ($(tail -n 1 "$tmp/blank.err"))"
	skip "headless $chrome screenshot: it does not start here"
	chrome=
	ran=no
fi
if [ -n "$chrome" ]; then
	check "headless $chrome renders the page: the DOM holds the tables and images" sh -c "
	  timeout 120 $chrome --headless --disable-gpu --no-sandbox --dump-dom 'file://$tmp/a.html' 2>/dev/null >'$tmp/dom' &&
	  grep -q '<h1>pcc report</h1>' '$tmp/dom' && test \$(grep -c '<img alt=' '$tmp/dom') -eq $nimg &&
	  grep -q '<th>stage</th>' '$tmp/dom'"
	check "headless $chrome takes a screenshot with content" sh -c "
	  cd '$tmp' && timeout 120 $chrome --headless --disable-gpu --no-sandbox --window-size=1000,2400 \
	    --screenshot='$tmp/shot.png' 'file://$tmp/a.html' >/dev/null 2>&1 &&
	  python3 -c 'import sys; b=open(sys.argv[1],\"rb\").read(); assert b[:4]==b\"\x89PNG\" and len(b) > 30000, len(b)' '$tmp/shot.png'"
elif [ "${ran:-}" != no ]; then
	skip "headless Chromium renders the page: chromium not installed"
	skip "headless Chromium screenshot: chromium not installed"
fi

check "--svg into a folder that does not exist: exit 1, one line, before any work" sh -c "
  '$pcc' report '$g' --cluster 1x8:a100 --plan dp=8 --svg /nonexistent/a.svg 2>'$tmp/e' >/dev/null; test \$? -eq 1 &&
  test \$(wc -l <'$tmp/e') -eq 1 && grep -q -- '--svg /nonexistent/a.svg' '$tmp/e'"
check "--png onto a folder: exit 1, one line" sh -c "
  '$pcc' report '$g' --cluster 1x8:a100 --plan dp=8 --png '$tmp' 2>'$tmp/e' >/dev/null; test \$? -eq 1 &&
  test \$(wc -l <'$tmp/e') -eq 1 && grep -q 'is a folder' '$tmp/e'"
if [ "$(id -u)" -ne 0 ]; then
	check "--html in a read-only folder: exit 1, one line" sh -c "
	  mkdir -p '$tmp/ro' && chmod 555 '$tmp/ro' &&
	  '$pcc' report '$g' --cluster 1x8:a100 --plan dp=8 --html '$tmp/ro/a.html' 2>'$tmp/e' >/dev/null; test \$? -eq 1 &&
	  test \$(wc -l <'$tmp/e') -eq 1 && grep -q 'cannot write there' '$tmp/e'"
else
	skip "--html in a read-only folder: running as root, which may write anywhere"
fi
tap_done
