#!/usr/bin/env python3
"""pipe_memory.py PCC TMPDIR LOW HIGH PCC-ARGS...: compiles a training plan
with --explain -o, then checks every stage's memory per device as the
inter-op search predicted it (the explain table's memory column) against
the arena the lowering gave the stage's first device (pcc inspect --dump):
LOW <= predicted / arena <= HIGH. Prints one line per stage; exit 1 when a
stage is out of bounds, 2 when pcc fails or prints no stage."""
import re
import subprocess
import sys

UNIT = {'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30, 'TiB': 1 << 40}


def run(*args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.stderr.write('%s failed: %s' % (' '.join(args[:2]), r.stderr[-400:]))
        sys.exit(2)
    return r.stdout


def main():
    pcc, tmp, low, high = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    plan = tmp + '/pipe_memory.bin'
    out = run(pcc, *sys.argv[5:], '--explain', '-o', plan, '--codegen', 'none')
    # "      0  0-1  0-45  1x2  1x2  0.097 ms ... 0.071 ms  256 KiB (176 KiB state ..."
    pred = [float(m.group(2)) * UNIT[m.group(3)] for m in
            re.finditer(r'^ +(\d+) +\d+-\d+ +\d+-\d+ +\S+ +\S+ +.* ms +([\d.e+]+) (\w+) \(', out, re.M)]
    ranks = [int(m.group(1)) for m in re.finditer(r'^stage \d+: ranks (\d+)-', run(pcc, 'inspect', plan), re.M)]
    if not pred or len(pred) != len(ranks):
        sys.stderr.write('stages: %d predicted, %d in the plan\n%s' % (len(pred), len(ranks), out))
        sys.exit(2)
    bad = 0
    for s, (p, r) in enumerate(zip(pred, ranks)):
        arena = int(re.search(r'arena (\d+) bytes', run(pcc, 'inspect', plan, '--dump', str(r))).group(1))
        ok = low <= p / arena <= high
        bad += not ok
        print('stage %d: predicted %.1f KiB, arena %.1f KiB, ratio %.3f%s' %
              (s, p / 1024, arena / 1024, p / arena, '' if ok else ' OUT OF [%g, %g]' % (low, high)),
              file=sys.stdout if ok else sys.stderr)
    sys.exit(1 if bad else 0)


main()
