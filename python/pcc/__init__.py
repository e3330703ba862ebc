"""pcc from Python: inspect a model, compile it into a plan for a cluster,
ask the cost model what a plan costs, run a plan under MPI, and train a
PyTorch module through it.

    import pcc
    plan = pcc.from_torch(model, (x,), loss="mse", cluster="cpu:2", optimizer="sgd", lr=0.1)
    for step in pcc.run(plan, data=[[x, y]], steps=100, save_onnx="trained.onnx"):
        print(step["step"], step["loss"])
    pcc.load_state_dict(model, "trained.onnx")

Each function runs one of pcc's programs (pcc, pcc-run; see
_cli.program for where they are found) and reads its JSON output;
a failure raises pcc.Error with the line the program printed.
docs/python.md says more.
"""

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
import warnings
import weakref

from ._cli import Error, PccWarning, failure_line, options, program, run_program, warn_from
from ._torch import from_torch, load_state_dict

__all__ = ["Error", "PccWarning", "Plan", "Run", "inspect", "compile", "report", "run", "write_data",
           "from_torch", "load_state_dict", "program"]


def _scratch(owner, prefix):
    """A temporary folder removed with its owner object."""
    path = tempfile.mkdtemp(prefix=prefix)
    weakref.finalize(owner, shutil.rmtree, path, ignore_errors=True)
    return path


def _is_plan_file(path):
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"PCCPLAN\n"
    except OSError:
        return False


def inspect(model, train=False, optim=None, **opts):
    """`pcc inspect MODEL --json` as a dict: inputs, outputs, parameters,
    FLOPs, op histograms; with train=True what a training step adds (the
    parameters it trains, gradient and optimizer bytes; optim: the
    optimizer, adamw by default). opts: dim={"batch": 8}, const={...}."""
    if _is_plan_file(model):
        raise Error(f"{model}: a plan file, whose summary has no JSON form: Plan.summary has it, "
                    f"and `pcc inspect {model}` prints it")
    args = ["inspect", model, "--json"] + options(dict(opts, train=train, optim=optim))
    return json.loads(run_program("pcc", args))


class Plan:
    """An executable plan that pcc.compile wrote (plan.bin), kept in a
    temporary folder until the object goes.

    summary: `pcc MODEL --json`'s dict (stages, meshes, step time, memory,
    the plans weighed; "output" says what plan.bin holds); path: where the
    plan is now; model: the model it was compiled from."""

    def __init__(self, path, summary, model):
        self.path = path
        self.summary = summary
        self.model = model

    @property
    def devices(self):
        """The ranks the plan runs on (pcc-run's -n)."""
        return self.summary["devices"]

    def write(self, path):
        """Copies plan.bin to path; returns path."""
        shutil.copyfile(self.path, path)
        return path

    def __repr__(self):
        s = self.summary
        return (f"<pcc.Plan {s['model']} on {s['cluster']}: {len(s['stages'])} stage(s), {s['schedule']}, "
                f"{s['micro_batches']} micro-batch(es), step {s['step_time_s'] * 1e3:.3f} ms>")


def compile(model, cluster, batch=None, train=False, **opts):
    """`pcc MODEL --cluster CLUSTER -o plan.bin --json`: the automatic plan
    of model (an ONNX file) for cluster ("cpu:4", "2x8:h100", a JSON file),
    lowered to an executable plan. batch: the global batch of one step;
    train: the training step (then opts take the step's options: loss=
    "cross_entropy:logits,labels", optimizer="adamw", lr=1e-3, ...). Other
    opts are pcc's options (micro_batches=4, memory_limit="16GiB",
    dim={"batch": 8}; see pcc --help). Returns a Plan."""
    plan = Plan(None, None, os.fspath(model))
    out = os.path.join(_scratch(plan, "pcc-plan-"), "plan.bin")
    args = [model, "--cluster", cluster, "--json", "-q", "-o", out]
    args += options(dict(opts, batch=batch, train=train))
    plan.summary = json.loads(run_program("pcc", args))
    plan.path = out
    return plan


def report(model, cluster, plan=None, batch=None, train=False, compare=None, **opts):
    """`pcc report MODEL --cluster CLUSTER --json` as a dict: what one step
    costs (time, memory, throughput) under a manual plan (plan=
    "dp=8,tp=8,pp=16") or the automatic one; compare=(A, B) sets two plans
    side by side ({"a", "b", "delta"}); opts as pcc report's options
    (sweep="tp,pp", price_per_gpu_hour=2.5, html="report.html", ...)."""
    args = ["report", model, "--cluster", cluster, "--json", "-q"]
    if compare is not None:
        a, b = compare
        args += ["--compare", a, b]
    args += options(dict(opts, plan=plan, batch=batch, train=train))
    return json.loads(run_program("pcc", args))


def _is_array(x):
    return hasattr(x, "shape") and hasattr(x, "dtype")


def write_data(directory, sets):
    """Writes data sets as pcc-run --data reads them, one .npy file per
    input: directory/test_data_set_K/input_N.npy. sets is a list of data
    sets, each a list of arrays (numpy arrays or torch tensors) in the
    order of the model's inputs, then the loss's labels or target; a
    single data set may be given as its list of arrays. Each array's dtype
    must be its input's (pcc does not convert). Returns directory."""
    import numpy as np

    if len(sets) and _is_array(sets[0]):
        sets = [sets]
    for k, s in enumerate(sets):
        d = os.path.join(directory, f"test_data_set_{k}")
        os.makedirs(d, exist_ok=True)
        for n, a in enumerate(s):
            if hasattr(a, "detach"):
                a = a.detach().cpu().numpy()
            np.save(os.path.join(d, f"input_{n}.npy"), np.ascontiguousarray(a))
    return directory


def _plan_devices(path):
    first = run_program("pcc", ["inspect", path]).splitlines()[0]
    # "plan: format 6, 2 devices of cluster cpu:2 (...)"
    return int(first.split(",")[1].split()[0])


class Run:
    """A pcc-run job under MPI, started by pcc.run.

    Iterating over it yields each step's --log-json object as pcc-run logs
    it (step, loss, grad_norm, lr, step_ms, samples_per_s, ranks...), and
    raises pcc.Error when the job fails; wait() runs it to the end and
    returns the steps. steps: those read so far; returncode: the job's exit
    status once it ended; stdout: what it printed (the text log). close(),
    or leaving a with block, stops it; a Run dropped while its job runs
    (pcc.run called as a statement) waits for the job to end."""

    def __init__(self, command, log_path, tmp, env):
        """tmp: the scratch folder of the job (its stdout and stderr go there)."""
        self.command = command
        self.steps = []
        self.returncode = None
        self.error = None
        self._log_path = log_path
        self._log = None
        self._partial = ""
        self._out = open(os.path.join(tmp, "stdout"), "w+")
        self._err = open(os.path.join(tmp, "stderr"), "w+")
        try:
            self._proc = subprocess.Popen(command, stdout=self._out, stderr=self._err, stdin=subprocess.DEVNULL,
                                          env=env)
        except OSError as e:
            self._out.close()
            self._err.close()
            raise Error(f"{command[0]}: cannot start: {e.strerror} (pcc.run's launcher= names the MPI launcher)",
                        None, command) from None

    def _read(self):
        if self._log is None:
            if not os.path.exists(self._log_path):
                return
            self._log = open(self._log_path)
        text = self._partial + self._log.read()
        lines = text.split("\n")
        self._partial = lines.pop()
        self.steps += [json.loads(l) for l in lines if l.strip()]

    def _finish(self):
        self.returncode = self._proc.wait()
        self._read()
        if self._log is not None:
            self._log.close()
        self._err.seek(0)
        stderr = self._err.read()
        if self.returncode != 0:
            self.error = Error(failure_line(stderr, self.returncode), self.returncode, self.command)
        else:
            warn_from(stderr)

    @property
    def stdout(self):
        self._out.flush()
        with open(self._out.name) as f:
            return f.read()

    def __iter__(self):
        i = 0
        while True:
            while i < len(self.steps):
                yield self.steps[i]
                i += 1
            if self.returncode is not None:
                break
            ended = self._proc.poll() is not None
            if ended:
                self._finish()
            else:
                self._read()
                if i == len(self.steps):
                    time.sleep(0.05)
        if self.error:
            raise self.error

    def wait(self):
        """Runs the job to its end: its steps, or pcc.Error."""
        for _ in self:
            pass
        return self.steps

    def close(self):
        """Stops the job if it still runs (iterating then raises Error)."""
        if self.returncode is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._finish()
            if self.returncode != 0:
                self.error = Error(f"stopped by Run.close() after {len(self.steps)} steps", self.returncode,
                                   self.command)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def run(plan, data=None, ranks=None, steps=None, *, inputs=None, output=None, launcher="mpirun",
        launcher_args=(), env=None, mpi=None, **opts):
    """Starts `mpirun -n RANKS pcc-run PLAN ...` and returns its Run, which
    yields the logged steps (pcc-run --log-json) as they come.

    plan: a Plan or a plan.bin path; ranks: its device count unless given.
    data: a folder of data sets (pcc-run --data) or the sets themselves
    (write_data's form); steps: the run's total steps. inputs, output: an
    inference run's -i DIR and -o OUTDIR. opts are pcc-run's options
    (save_onnx="trained.onnx", checkpoint="ckpt", shuffle=7, threads=2,
    tokens="train.bin", ...). launcher: the MPI launcher (a string or a
    list: "mpiexec", ["srun", "--mpi=pmix"]), launcher_args added after its
    -n RANKS ("--oversubscribe"); None runs one rank without one. env:
    variables added to the job's environment. mpi: the MPI pcc-run is
    linked with, "openmpi" (pcc-run) or "mpich" (pcc-run-mpich); None:
    "mpich" for MPICH's launchers (mpiexec.mpich, mpirun.mpich,
    mpiexec.hydra), else "openmpi"."""
    path = plan.path if isinstance(plan, Plan) else os.fspath(plan)
    if ranks is None:
        ranks = plan.devices if isinstance(plan, Plan) else _plan_devices(path)
    if launcher is None and ranks != 1:
        raise Error(f"{path}: {ranks} ranks need an MPI launcher (launcher=None runs one)")
    runner = _runner(mpi, launcher)
    tmp = tempfile.mkdtemp(prefix="pcc-run-")
    try:
        job = _start(path, ranks, data, steps, inputs, output, launcher, launcher_args, env, opts, tmp, runner)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    weakref.finalize(job, _remove_job, job._proc, job._out, job._err, tmp)
    return job


def _runner(mpi, launcher):
    """The pcc-run program for pcc.run's mpi= and launcher= (see run)."""
    if mpi is None:
        words = shlex.split(launcher) if isinstance(launcher, str) else list(launcher or [])
        name = os.path.basename(os.fspath(words[0])) if words else ""
        mpi = "mpich" if name in ("mpiexec.mpich", "mpirun.mpich", "mpiexec.hydra") else "openmpi"
    if mpi not in ("openmpi", "mpich"):
        raise Error(f"pcc.run: mpi={mpi!r}: expected \"openmpi\" (pcc-run) or \"mpich\" (pcc-run-mpich)")
    return "pcc-run-mpich" if mpi == "mpich" else "pcc-run"


def _start(path, ranks, data, steps, inputs, output, launcher, launcher_args, env, opts, tmp, runner="pcc-run"):
    """pcc.run's job, its files in the scratch folder tmp."""
    if data is not None and not isinstance(data, (str, os.PathLike)):
        data = write_data(os.path.join(tmp, "data"), data)
    log = opts.pop("log_json", None)
    logged = data is not None or opts.get("tokens") is not None
    if logged and log is None:
        log = os.path.join(tmp, "steps.jsonl")
    elif log is not None and os.path.isfile(log):
        os.remove(log)  # pcc-run writes it afresh: no old line is read as this run's
    args = [program(runner), path] + options(dict(opts, data=data, steps=steps))
    if inputs is not None:
        args += ["-i", os.fspath(inputs)]
    if output is not None:
        args += ["-o", os.fspath(output)]
    if log is not None:
        args += ["--log-json", os.fspath(log)]
    cmd = args
    if launcher is not None:
        cmd = (shlex.split(launcher) if isinstance(launcher, str) else list(launcher))
        cmd += ["-n", str(ranks)] + list(launcher_args) + args
    full_env = dict(os.environ)
    full_env.update(env or {})
    return Run([os.fspath(c) for c in cmd], os.fspath(log) if log else "", tmp, full_env)


def _remove_job(proc, out, err, tmp):
    """A Run's end: its files removed, once the job ended. A Run dropped
    while its job runs (pcc.run called as a statement) waits for the job,
    and a failure it cannot raise is a PccWarning with pcc-run's line."""
    if proc.poll() is None:
        proc.wait()
        if proc.returncode != 0:
            err.seek(0)
            warnings.warn(f"pcc.run: the job ended with status {proc.returncode}: "
                          f"{failure_line(err.read(), proc.returncode)}", PccWarning)
    out.close()
    err.close()
    shutil.rmtree(tmp, ignore_errors=True)
