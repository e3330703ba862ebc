#!/usr/bin/env python3
"""Time one ONNX model in ONNX Runtime (used by benchmarks/codegen.sh).

    python codegen_ort.py MODEL.onnx DATA_DIR THREADS RUNS [OUT_DIR]

Reads DATA_DIR/input_N.pb (ONNX backend-test layout, matched to the graph's
inputs in order), runs one warm-up and RUNS timed inferences with
intra_op_num_threads=THREADS (inter_op 1, sequential execution), and prints

    ort: median X ms, min Y ms over RUNS runs, cpu U ms

(U: the process's CPU time per run, all threads, spinning ones included)

With OUT_DIR, it writes the outputs there as output_N.pb (for pb_cmp).
Exits 3 when onnxruntime cannot be imported.
"""

import os
import statistics
import sys
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
except ImportError as e:
    print(f"ort: not available ({e})", file=sys.stderr)
    sys.exit(3)


def main():
    model, data, threads, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    out_dir = sys.argv[5] if len(sys.argv) > 5 else None
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i, inp in enumerate(sess.get_inputs()):
        t = onnx.TensorProto()
        with open(os.path.join(data, f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[inp.name] = numpy_helper.to_array(t)
    out = sess.run(None, feeds)  # warm-up
    times = []
    cpu0 = time.process_time()
    for _ in range(runs):
        t0 = time.perf_counter()
        out = sess.run(None, feeds)
        times.append(time.perf_counter() - t0)
    cpu = (time.process_time() - cpu0) / runs
    print(f"ort: median {statistics.median(times) * 1e3:.4f} ms, min {min(times) * 1e3:.4f} ms over {runs} runs, "
          f"cpu {cpu * 1e3:.4f} ms")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        for k, (o, v) in enumerate(zip(sess.get_outputs(), out)):
            with open(os.path.join(out_dir, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(v), o.name).SerializeToString())


if __name__ == "__main__":
    main()
