#!/usr/bin/python3
"""test_python.py PCC PCC_RUN PB_CMP MODELS_DIR: the Python package
(python/pcc) against the programs it runs (TAP).

Run with PCC_BIN_DIR at the build folder and python/ on PYTHONPATH
(tests/meson.build), so it needs no pip install. Each function's result
is checked against the same command run directly: pcc.inspect and
pcc.report against `pcc inspect --json` and `pcc report --json`,
pcc.compile's summary against pcc's text line and the plan file it
writes, pcc.run's steps against `mpirun pcc-run --log-json` and its text
log, an inference run's outputs against the fixture's (pb_cmp); errors
by their message and exit status. With numpy, data written from arrays
against numpy.save's files; with torch and onnx, pcc.from_torch, three
SGD steps and pcc.load_state_dict against torch.optim.SGD on a copy of
the module (skipped without them).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

pcc_bin, run_bin, pb_cmp, models = sys.argv[1:5]
mpi = ["timeout", "120", "mpirun", "--oversubscribe"]
import pcc  # noqa: E402  (after the arguments: PYTHONPATH names python/)

n = 0
failed = False


def case(desc, fn, skip=None):
    """One TAP case: fn() raising AssertionError (or anything) fails it."""
    global n, failed
    n += 1
    if skip:
        print(f"ok {n} - {desc} # SKIP {skip}")
        return
    try:
        fn()
        print(f"ok {n} - {desc}")
    except Exception as e:  # a case fails on any error, and says which
        failed = True
        print(f"not ok {n} - {desc}")
        for line in f"{type(e).__name__}: {e}".splitlines()[:6]:
            print(f"# {line}")
    sys.stdout.flush()


def cli(*args, ok=True):
    """A command's stdout, stderr and status."""
    p = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert not ok or p.returncode == 0, (args, p.stderr[-500:])
    return p.stdout, p.stderr, p.returncode


def raises(fn, status, message):
    """fn raises pcc.Error with this status and message (a string: equal; a
    pattern: matched)."""
    try:
        fn()
    except pcc.Error as e:
        assert e.status == status, (e.status, e.message)
        if isinstance(message, re.Pattern):
            assert message.search(e.message), e.message
        else:
            assert e.message == message, (e.message, message)
        return e
    raise AssertionError("no pcc.Error")


tmp = tempfile.TemporaryDirectory(prefix="test_python-")
t = tmp.name
mlp = os.path.join(models, "mlp_loss_op17", "model.onnx")
mlp_data = os.path.join(models, "mlp_loss_op17", "test_data_set_0")

# ---- finding the programs --------------------------------------------------


def t_program():
    assert os.path.samefile(pcc.program("pcc"), pcc_bin), pcc.program("pcc")
    assert os.path.samefile(pcc.program("pcc-run"), run_bin), pcc.program("pcc-run")
    old = os.environ["PCC_BIN_DIR"]
    os.environ["PCC_BIN_DIR"] = t
    try:
        raises(lambda: pcc.inspect(mlp), None, f"PCC_BIN_DIR={t}: no program pcc in it (nor in its compiler/)")
    finally:
        os.environ["PCC_BIN_DIR"] = old


case("PCC_BIN_DIR: the build folder's pcc and pcc-run; a folder without them is an Error naming it", t_program)



def t_installed_files():
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    listed = re.findall(r"'python/pcc/([^']+\.py)'", open(os.path.join(src, "meson.build")).read())
    there = [f for f in os.listdir(os.path.join(src, "python", "pcc")) if f.endswith(".py")]
    assert sorted(listed) == sorted(there), (listed, there)
    assert os.path.samefile(os.path.dirname(pcc.__file__), os.path.join(src, "python", "pcc")), pcc.__file__


case("meson.build installs every module of python/pcc (pip install .), and the test imports the source tree's",
     t_installed_files)

# ---- inspect ---------------------------------------------------------------


def t_inspect():
    got = pcc.inspect(mlp)
    assert got == json.loads(cli(pcc_bin, "inspect", mlp, "--json")[0])
    assert got["params"] == 808 and [i["name"] for i in got["inputs"]] == ["x", "target"], got
    train = pcc.inspect(mlp, train=True, optim="sgd")
    assert train == json.loads(cli(pcc_bin, "inspect", mlp, "--json", "--train", "--optim", "sgd")[0])


case("pcc.inspect: pcc inspect --json's dict (808 parameters, inputs x and target), and with train=True", t_inspect)


def t_inspect_errors():
    missing = os.path.join(t, "none.onnx")
    _, err, status = cli(pcc_bin, "inspect", missing, "--json", ok=False)
    raises(lambda: pcc.inspect(missing), status, err.strip().splitlines()[-1])
    assert status == 1
    raises(lambda: pcc.inspect(mlp, frobnicate=1), 2, "pcc: unknown option '--frobnicate' (try 'pcc inspect --help')")


case("pcc.inspect errors: pcc's own line and status (a missing file 1, an unknown option 2)", t_inspect_errors)

# ---- compile ---------------------------------------------------------------

plan = None


def t_compile():
    global plan
    plan = pcc.compile(mlp, "cpu:2", train=True, optimizer="sgd", lr=0.1)
    s = plan.summary
    out, _, _ = cli(pcc_bin, mlp, "--cluster", "cpu:2", "--train", "--optimizer", "sgd", "--lr", "0.1", "-q",
                    "-o", os.path.join(t, "cli.bin"))
    # "MODEL on cpu:2: 1 stage, 1f1b, 1 micro-batch; step 0.014 ms, ..."
    m = re.match(r".* on (\S+): (\d+) stages?, (\S+), (\d+) micro-batch(?:es)?; step ([\d.]+) ms", out)
    assert m, out
    assert (s["cluster"], len(s["stages"]), s["schedule"], s["micro_batches"]) == \
        (m[1], int(m[2]), m[3], int(m[4])), s
    assert f"{s['step_time_s'] * 1e3:.3f}" == m[5], (s["step_time_s"], m[5])
    assert s["train"] is True and s["devices"] == plan.devices == 2, s
    # "wrote FILE: 2 devices, 37 kernels, ..."
    w = re.search(r"wrote \S+: (\d+) devices, (\d+) kernels", out)
    assert (s["output"]["form"], s["output"]["devices"], s["output"]["kernels"]) == ("plan", int(w[1]), int(w[2]))
    assert [a["chosen"] for a in s["alternatives"]].count(True) == 1, s["alternatives"]
    mine = plan.write(os.path.join(t, "py.bin"))
    # the same plan as pcc wrote: pcc inspect says the same of both
    a = cli(pcc_bin, "inspect", mine)[0]
    b = cli(pcc_bin, "inspect", os.path.join(t, "cli.bin"))[0]
    assert a == b and "2 devices of cluster cpu:2" in a and "training step" in a, (a, b)


case("pcc.compile: the summary pcc's text line gives (stages, schedule, micro-batches, step time, kernels); "
     "Plan.write's file inspects as pcc -o's", t_compile)


def t_compile_errors():
    raises(lambda: pcc.compile(mlp, "cpu:0"), 1,
           'pcc: cluster "cpu:0": expected cpu:N with 1 to 4096 ranks, got "cpu:0"')
    raises(lambda: pcc.compile(mlp, "cpu:2", explain=True), 2,
           "pcc: --json summarizes the automatic plan: not with --explain (try 'pcc --help')")
    raises(lambda: pcc.compile(mlp, "cpu:2", lr=0.1), 2,
           re.compile(r"^pcc: --lr is an option of the train step: give --train too"))


case("pcc.compile errors: a bad cluster (1), --explain beside --json (2), a step option without train (2)",
     t_compile_errors)

# ---- report ----------------------------------------------------------------


def t_report():
    def same(got, args):
        want = json.loads(cli(pcc_bin, "report", mlp, "--cluster", "cpu:2", "--json", *args)[0])
        for d in (got, want):
            d.pop("search_s", None)  # wall time of the search
        assert got == want, (got, want)
    same(pcc.report(mlp, "cpu:2"), [])
    same(pcc.report(mlp, "cpu:2", plan="dp=2,tp=1,pp=1", batch=8), ["--plan", "dp=2,tp=1,pp=1", "--batch", "8"])
    got = pcc.report(mlp, "cpu:2", compare=("auto", "dp=1,tp=2,pp=1"))
    assert set(got) >= {"a", "b", "delta"}, got.keys()


case("pcc.report: pcc report --json's dict, the automatic plan and a manual one; compare=(A, B)", t_report)

# ---- run -------------------------------------------------------------------


def t_run_train():
    cli_log = os.path.join(t, "cli.jsonl")
    out, _, _ = cli(*mpi, "-n", "2", run_bin, os.path.join(t, "cli.bin"), "--data", mlp_data, "--steps", "4",
                    "--log-json", cli_log)
    want = [json.loads(l) for l in open(cli_log)]
    job = pcc.run(plan, data=mlp_data, steps=4, launcher_args=["--oversubscribe"])
    got = list(job)
    keys = ("step", "steps", "loss", "grad_norm", "lr", "samples", "sets", "skipped")
    assert [[g[k] for k in keys] for g in got] == [[w[k] for k in keys] for w in want], (got, want)
    assert [g["step"] for g in got] == [1, 2, 3, 4] and got[0]["lr"] == 0.1, got
    assert job.returncode == 0 and job.wait() == got and list(job) == got
    # the text log's losses are the logged ones
    text = [float(x) for x in re.findall(r"^step \d+/4\s+loss (\S+)", job.stdout, re.M)]
    assert len(text) == 4 and all(abs(a - g["loss"]) <= 1e-6 * abs(a) for a, g in zip(text, got)), text
    assert [float(x) for x in re.findall(r"^step \d+/4\s+loss (\S+)", out, re.M)] == text


case("pcc.run: the steps mpirun pcc-run --log-json logs (loss, gradient norm, rate, sets), the text log's losses",
     t_run_train)


def mpich_missing():
    if not shutil.which("mpiexec.mpich"):
        return "MPICH's mpiexec.mpich is not installed"
    try:
        pcc._cli.program("pcc-run-mpich")
    except pcc.Error:
        return "pcc-run-mpich was not built"
    return None


def t_run_mpich():
    want = list(pcc.run(plan, data=mlp_data, steps=3, launcher_args=["--oversubscribe"]))
    # MPICH's launcher picks pcc-run-mpich; no Open MPI variable may leak in
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        job = pcc.run(plan, data=mlp_data, steps=3, launcher="mpiexec.mpich")
        got = list(job)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert job.returncode == 0, job.stderr
    keys = ("step", "loss", "grad_norm", "lr", "sets")
    assert [[g[k] for k in keys] for g in got] == [[w[k] for k in keys] for w in want], (got, want)
    raises(lambda: pcc.run(plan, data=mlp_data, steps=1, mpi="lam"), None,
           re.compile(r"mpi='lam': expected \"openmpi\" \(pcc-run\) or \"mpich\" \(pcc-run-mpich\)"))


case("pcc.run(launcher=\"mpiexec.mpich\") runs pcc-run-mpich under MPICH: the steps pcc-run logs under Open MPI; "
     "an unknown mpi= is refused", t_run_mpich, skip=mpich_missing())


def t_run_streams():
    job = pcc.run(plan, data=mlp_data, steps=20000, launcher_args=["--oversubscribe"])
    it = iter(job)
    first = next(it)
    assert first["step"] == 1 and job.returncode is None, (first, job.returncode)
    job.close()
    assert job.returncode not in (None, 0) and len(job.steps) < 20000, (job.returncode, len(job.steps))
    raises(lambda: list(it), job.returncode, f"stopped by Run.close() after {len(job.steps)} steps")


case("pcc.run yields step 1 while the job runs (20000 steps); close() stops it, and the iteration then raises",
     t_run_streams)


def t_run_statement():
    saved = os.path.join(t, "statement.onnx")
    pcc.run(plan, data=mlp_data, steps=3, save_onnx=saved, launcher_args=["--oversubscribe"])
    assert os.path.isfile(saved), "the dropped job did not end first"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pcc.run(plan, data=os.path.join(t, "nodata"), steps=3, launcher_args=["--oversubscribe"])
    msgs = [str(x.message) for x in w if issubclass(x.category, pcc.PccWarning)]
    assert len(msgs) == 1 and re.match(r"pcc.run: the job ended with status 1: pcc-run: rank 0: .*nodata: no input_0",
                                       msgs[0]), [str(x.message) for x in w]


case("pcc.run called as a statement: the job runs to its end (its --save-onnx file is there after the call); "
     "a failure is a PccWarning with pcc-run's line", t_run_statement)


def t_run_infer():
    fwd = pcc.compile(mlp, "cpu:2")
    assert fwd.summary["train"] is False
    out = os.path.join(t, "infer")
    assert pcc.run(fwd, inputs=mlp_data, output=out, launcher_args=["--oversubscribe"]).wait() == []
    cli(pb_cmp, "--rtol", "1e-5", out, mlp_data)
    # a plan file by its path: its device count read from it
    fwd.write(os.path.join(t, "fwd.bin"))
    out2 = os.path.join(t, "infer2")
    pcc.run(os.path.join(t, "fwd.bin"), inputs=mlp_data, output=out2, launcher_args=["--oversubscribe"]).wait()
    cli(pb_cmp, "--rtol", "0", "--atol", "0", out2, out)


case("pcc.run inference: -i/-o, outputs the fixture's (pb_cmp rtol 1e-5); a plan by path runs on its 2 ranks",
     t_run_infer)


def t_run_errors():
    e = raises(lambda: pcc.run(plan, data=os.path.join(t, "nodata"), steps=2,
                               launcher_args=["--oversubscribe"]).wait(),
               1, re.compile(r"^pcc-run: rank 0: .*nodata: no input_0\.pb \(or \.npy\)"))
    assert e.command[:3] == ["mpirun", "-n", "2"], e.command
    raises(lambda: pcc.run(plan, data=mlp_data, steps=2, ranks=1, launcher_args=["--oversubscribe"]).wait(), 1,
           "pcc-run: rank 0: plan compiled for 2 devices (cluster cpu:2), run with 1 ranks")
    raises(lambda: pcc.run(plan, data=mlp_data, steps=2, launcher=None).wait(), None,
           re.compile(r"2 ranks need an MPI launcher"))
    raises(lambda: pcc.run(plan, data=mlp_data, launcher=os.path.join(t, "no-mpirun")), None,
           f"{t}/no-mpirun: cannot start: No such file or directory (pcc.run's launcher= names the MPI launcher)")
    raises(lambda: pcc.inspect(os.path.join(t, "cli.bin")), None, re.compile(r"a plan file"))


case("pcc.run errors: pcc-run's line (missing data, ranks not the plan's), no launcher for 2 ranks, a launcher "
     "that is not there; pcc.inspect of a plan file", t_run_errors)

try:
    import numpy as np
except ImportError:
    np = None


def t_run_arrays():
    rng = np.random.default_rng(1)
    sets = [[rng.standard_normal((4, 16), dtype=np.float32), rng.standard_normal((4, 8), dtype=np.float32)]
            for _ in range(2)]
    d = os.path.join(t, "npdata")
    for k, s in enumerate(sets):
        os.makedirs(os.path.join(d, f"test_data_set_{k}"))
        for i, a in enumerate(s):
            np.save(os.path.join(d, f"test_data_set_{k}", f"input_{i}.npy"), a)
    want = pcc.run(plan, data=d, steps=4, launcher_args=["--oversubscribe"]).wait()
    got = pcc.run(plan, data=sets, steps=4, launcher_args=["--oversubscribe"]).wait()
    assert [g["loss"] for g in got] == [w["loss"] for w in want] and [g["sets"] for g in got] == [[0], [1], [0], [1]]


case("pcc.run data=[[x, target], ...]: the losses of numpy.save's files in the same layout", t_run_arrays,
     skip=None if np is not None else "numpy is not installed")

# ---- PyTorch ---------------------------------------------------------------

try:
    import torch
    import onnx
    import onnx.numpy_helper
except ImportError as e:
    torch = None
    no_torch = f"torch and onnx are needed: {e}"
else:
    no_torch = None


def mlp_module():
    torch.manual_seed(0)
    # two LayerNorms, fresh: equal weights that an eval-mode export merges
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.GELU(),
                               torch.nn.Linear(32, 32), torch.nn.LayerNorm(32), torch.nn.Linear(32, 8))


def t_torch_train():
    import copy
    m = mlp_module()
    ref = copy.deepcopy(m)
    x, y = torch.randn(4, 16), torch.randn(4, 8)
    p = pcc.from_torch(m, (x,), loss="mse", cluster="cpu:2", optimizer="sgd", lr=0.1)
    names = [i.name for i in onnx.load(p.onnx).graph.initializer]
    assert sorted(names) == sorted(n for n, _ in m.named_parameters()), names
    trained = os.path.join(t, "trained.onnx")
    got = pcc.run(p, data=[x, y], steps=3, save_onnx=trained, launcher_args=["--oversubscribe"]).wait()
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ref(x), y)
        losses.append(loss.item())
        loss.backward()
        opt.step()
    assert all(abs(g["loss"] - w) <= 1e-5 * w for g, w in zip(got, losses)), ([g["loss"] for g in got], losses)
    before = {n: q.detach().clone() for n, q in m.named_parameters()}
    loaded = pcc.load_state_dict(m, trained)
    assert sorted(loaded) == sorted(before), loaded
    values = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(trained).graph.initializer}
    for (name, q), (_, r) in zip(m.named_parameters(), ref.named_parameters()):
        assert not torch.equal(q, before[name]), f"{name} unchanged"
        assert np.array_equal(q.detach().numpy(), values[name]), name
        err = (q - r).abs().max().item()
        assert err <= 1e-6, (name, err)


case("pcc.from_torch + 3 SGD steps on 2 ranks + pcc.load_state_dict: every parameter named, the losses and "
     "trained weights torch.optim.SGD's (1e-6), the weights the ONNX file's", t_torch_train, skip=no_torch)


def t_torch_buffers():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 1))
    m.eval()
    before = {n: b.clone() for n, b in m.named_buffers()}
    p = pcc.from_torch(m, torch.randn(4, 8), loss="mse", cluster="cpu:1", train=True)
    assert not m.training, "the module's mode changed"
    assert all(torch.equal(b, before[n]) for n, b in m.named_buffers()), "the export moved the buffers"
    values = {i.name: onnx.numpy_helper.to_array(i) for i in onnx.load(p.onnx).graph.initializer}
    for n in ("1.running_mean", "1.running_var"):
        assert np.array_equal(values[n], before[n].numpy()), n
    assert p.summary["train"] is True and p.summary["devices"] == 1


case("pcc.from_torch leaves the module's mode and BatchNorm statistics as they were, and the file holds them",
     t_torch_buffers, skip=no_torch)


def t_torch_errors():
    m = mlp_module()
    x = torch.randn(4, 16)
    # torch's default export: eval mode, constant folding
    path = os.path.join(t, "eval.onnx")
    m.eval()
    torch.onnx.export(m, (x,), path, opset_version=17, input_names=["x"], output_names=["output"])
    names = {i.name for i in onnx.load(path).graph.initializer}
    lost = sorted(n for n, _ in m.named_parameters() if n not in names)
    assert lost, names
    e = raises(lambda: pcc.load_state_dict(m, path), None, re.compile(r"no initializer named as parameter"))
    assert all(n in e.message for n in lost[:6]), (lost, e.message)
    other = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 3))
    before = [q.detach().clone() for q in other.parameters()]
    raises(lambda: pcc.load_state_dict(other, os.path.join(t, "trained.onnx")), None,
           re.compile(r"initializers of another shape than their parameter: 1\.weight \[32\] for \[3, 32\]"))
    assert all(torch.equal(a, b) for a, b in zip(before, other.parameters())), "a refused load changed weights"
    # a Linear on [2,4,16] exported so: its weight transposed into onnx::MatMul_N
    lin = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).eval()
    path3 = os.path.join(t, "eval3.onnx")
    torch.onnx.export(lin, (torch.randn(2, 4, 16),), path3, opset_version=17, input_names=["x"],
                      output_names=["output"])
    e = raises(lambda: pcc.load_state_dict(lin, path3), None, re.compile(r"no initializer named as parameter"))
    assert "0.weight, 2.weight;" in e.message and "onnx::MatMul_" in e.message, e.message
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pcc.compile(path3, "cpu:1", train=True, loss="mse:output,target")
    msgs = [str(x.message) for x in w if issubclass(x.category, pcc.PccWarning)]
    assert len(msgs) == 1 and re.match(r"pcc: .*eval3.onnx: warning: 2 trained tensors named by the exporter",
                                       msgs[0]), [str(x.message) for x in w]


case("eval-mode exports: pcc.load_state_dict names the parameters they lost (merged LayerNorms, "
     "onnx::MatMul_N), a wrong module is refused unchanged, pcc.compile(train=True) warns (PccWarning)", t_torch_errors, skip=no_torch)

print(f"1..{n}")
sys.exit(1 if failed else 0)
