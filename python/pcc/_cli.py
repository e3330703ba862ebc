"""pcc's programs from Python: where they are and how a failure reads.

Every call into pcc goes through run_program(), which turns a failed
command into pcc.Error carrying the one line the program printed
("pcc: ..." or "pcc-run: ..."), and turns the warnings it printed on
stderr into Python warnings.
"""

import os
import re
import shutil
import subprocess
import sysconfig
import warnings

# Where each program lies in a meson build directory (PCC_BIN_DIR=build).
_BUILD_SUBDIR = {"pcc": "compiler", "pcc-run": "runtime", "pcc-run-mpich": "runtime", "pcc-modelgen": "benchmarks",
                 "pcc-iopddl": "solvers"}


class Error(Exception):
    """A pcc program failed, or its input was refused before it ran.

    message: the one line the program printed on stderr (its last
    "pcc: ..." or "pcc-run: ..." line), status: its exit status (2 for a
    usage error, 1 for bad input; None when nothing ran), command: the
    command line, as a list, when one ran."""

    def __init__(self, message, status=None, command=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.command = command


class PccWarning(UserWarning):
    """A warning pcc printed on stderr ("pcc: FILE: warning: ..."), such as
    an ONNX file that looks exported for inference."""


def _installed_scripts():
    """The scripts folders of the install schemes whose library folder holds
    this package: where pip put the programs beside it."""
    here = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for scheme in sysconfig.get_scheme_names():
        try:
            paths = sysconfig.get_paths(scheme)
        except KeyError:
            continue
        libs = {os.path.realpath(paths[k]) for k in ("purelib", "platlib") if k in paths}
        if here in libs and "scripts" in paths:
            yield paths["scripts"]


def program(name):
    """The path of pcc's program name ("pcc", "pcc-run"): from PCC_BIN_DIR
    when it is set (a folder of programs, or a meson build folder), else
    the one pip installed with this package, else the first on PATH."""
    bin_dir = os.environ.get("PCC_BIN_DIR")
    if bin_dir:
        for p in (os.path.join(bin_dir, name), os.path.join(bin_dir, _BUILD_SUBDIR.get(name, ""), name)):
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
        raise Error(f"PCC_BIN_DIR={bin_dir}: no program {name} in it (nor in its {_BUILD_SUBDIR.get(name)}/)")
    for d in _installed_scripts():
        p = os.path.join(d, name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    p = shutil.which(name)
    if p:
        return p
    raise Error(f"{name}: not installed with this package nor on PATH; set PCC_BIN_DIR to the folder "
                "that holds it (a meson build folder will do)")


_LINE = re.compile(r"^(pcc|pcc-run|pcc-modelgen|pcc-iopddl): ")


def failure_line(stderr, status):
    """The one line a failed program said: its last "pcc...: " line, else its
    last line, else its exit status in words."""
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    ours = [l for l in lines if _LINE.match(l)]
    if ours:
        return ours[-1]
    if lines:
        return lines[-1]
    if status is not None and status < 0:
        return f"killed by signal {-status}"
    return f"exited with status {status}"


def warn_from(stderr):
    """Each "warning:" line of a program's stderr as a PccWarning."""
    for l in stderr.splitlines():
        if _LINE.match(l) and ": warning: " in l:
            warnings.warn(l.strip(), PccWarning, stacklevel=3)


def options(opts):
    """Keyword arguments as command-line options: micro_batches=4 is
    --micro-batches 4, a True flag is --flag, False or None is left out, a
    list or tuple repeats the option, a dict gives one NAME=VALUE each
    (dim={"batch": 8} is --dim batch=8)."""
    args = []
    for key, v in opts.items():
        opt = "--" + key.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            args.append(opt)
        elif isinstance(v, dict):
            for k, x in v.items():
                args += [opt, f"{k}={x}"]
        elif isinstance(v, (list, tuple)):
            for x in v:
                args += [opt, str(x)]
        else:
            args += [opt, str(v)]
    return args


def run_program(name, args, **kw):
    """Runs pcc's program name with args; its stdout as text, or Error."""
    cmd = [program(name)] + [os.fspath(a) for a in args]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        raise Error(failure_line(p.stderr, p.returncode), p.returncode, cmd)
    warn_from(p.stderr)
    return p.stdout
