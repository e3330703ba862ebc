"""PyTorch in and out: a module exported so that training it through pcc
trains the module's own parameters, and the trained weights put back.

The export is the one tests/train/README.md and docs/training.md ask for:
opset 17 through the TorchScript exporter, in training mode (in eval
mode torch merges initializers of equal value, such as fresh LayerNorm
weights, and renames weights it transposes to onnx::MatMul_N), without
constant folding (which copies tied weights apart), parameters stored
under their state_dict names. The ONNX file is checked against the
module before pcc sees it: every parameter exactly one initializer of its
name and shape, or pcc.Error naming those that are not.
"""

import inspect as _inspect
import os
import shutil
import tempfile
import weakref

from ._cli import Error

OPSET = 17


def _torch():
    try:
        import torch
    except ImportError as e:
        raise Error(f"pcc.from_torch and pcc.load_state_dict need PyTorch: {e}") from None
    return torch


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper
    except ImportError as e:
        raise Error(f"pcc.from_torch and pcc.load_state_dict read ONNX files with the onnx package "
                    f"(pip install onnx): {e}") from None
    return onnx


def _names(items, first=6):
    items = list(items)
    more = f" and {len(items) - first} more" if len(items) > first else ""
    return ", ".join(items[:first]) + more


def _input_names(module, n):
    """forward's parameter names when it takes n positional ones, else
    input_0, input_1, ..."""
    try:
        ps = list(_inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        ps = []
    pos = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(pos) >= n and all(p.kind != p.VAR_POSITIONAL for p in ps[:n]):
        return pos[:n]
    return [f"input_{i}" for i in range(n)]


def _loss_spec(loss, output):
    """pcc's --loss: "cross_entropy" and "mse" name the model's first output
    and a labels (target) input; a full spec is taken as it is."""
    if loss == "cross_entropy":
        return f"cross_entropy:{output},labels"
    if loss == "mse":
        return f"mse:{output},target"
    return loss


def _check_initializers(proto, module, path):
    """Every parameter is one initializer of its name and shape."""
    onnx = _onnx()
    inits = {}
    dup = []
    for t in proto.graph.initializer:
        if t.name in inits:
            dup.append(t.name)
        inits[t.name] = t
    if dup:
        raise Error(f"{path}: initializers defined twice: {_names(dup)}")
    missing = [n for n, _ in module.named_parameters() if n not in inits]
    if missing:
        buffers = dict(module.named_buffers())
        others = [n for n in inits if n not in buffers]
        raise Error(f"{path}: the export lost the names of {len(missing)} parameter(s): {_names(missing)} "
                    f"(initializers: {_names(others)})")
    bad = [n for n, p in module.named_parameters() if tuple(inits[n].dims) != tuple(p.shape)]
    if bad:
        raise Error(f"{path}: initializers whose shape is not their parameter's: {_names(bad)}")
    return onnx


def from_torch(module, example_inputs, loss=None, train=True, path=None, cluster="cpu:1", batch=None,
               input_names=None, output_names=None, **opts):
    """Exports module as a training-correct ONNX file and compiles it.

    example_inputs: a tensor or a tuple of tensors, one per forward
    argument (their shapes are the plan's: the first dimension is the
    batch). loss: None when the module returns the scalar loss itself;
    "cross_entropy" (the first output as logits against an int64 input
    "labels") or "mse" (against an input "target"), or pcc's full --loss
    spec ("cross_entropy:logits,labels"). train=False exports the forward
    pass in eval mode instead. path: where the ONNX file goes (a temporary
    folder kept with the plan by default). cluster, batch and opts go to
    pcc.compile (optimizer="adamw", lr=1e-3, micro_batches=2, ...).

    Returns a Plan; plan.onnx is the exported file. The module's mode and
    buffers are as they were (the training-mode trace runs BatchNorm,
    whose running statistics it would move; the file keeps the old ones
    too)."""
    torch = _torch()
    onnx = _onnx()
    from . import compile as _compile

    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    names = list(input_names) if input_names else _input_names(module, len(inputs))
    outs = list(output_names) if output_names else (["loss"] if train and loss is None else ["output"])
    tmp = None
    if path is None:
        tmp = tempfile.mkdtemp(prefix="pcc-torch-")
        path = os.path.join(tmp, "model.onnx")
    path = os.fspath(path)
    was_training = module.training
    buffers = {n: b.detach().clone() for n, b in module.named_buffers()}
    kwargs = dict(opset_version=OPSET, export_params=True, do_constant_folding=False,
                  keep_initializers_as_inputs=False, input_names=names, output_names=outs,
                  training=torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL)
    if "dynamo" in _inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    try:
        module.train(train)
        torch.onnx.export(module, inputs, path, **kwargs)
    except Exception:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        module.train(was_training)
        with torch.no_grad():
            for n, b in module.named_buffers():
                b.copy_(buffers[n])
    proto = onnx.load(path, load_external_data=False)
    for t in proto.graph.initializer:
        if t.name in buffers:
            t.CopyFrom(onnx.numpy_helper.from_array(buffers[t.name].cpu().numpy(), t.name))
    _check_initializers(proto, module, path)
    onnx.save(proto, path)
    if train:
        opts["loss"] = _loss_spec(loss, outs[0]) if loss is not None else None
    try:
        plan = _compile(path, cluster, batch=batch, train=train, **opts)
    except Error:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    plan.onnx = path
    if tmp:
        weakref.finalize(plan, shutil.rmtree, tmp, ignore_errors=True)
    return plan


def load_state_dict(module, trained_onnx):
    """Puts the weights of trained_onnx (pcc-run --save-onnx, pcc train
    --save-onnx) into module's parameters and buffers, each from the
    initializer of its name. pcc.Error, and nothing changed, when a
    parameter has no initializer of its name or of its shape. Buffers the
    file lacks (BatchNorm's num_batches_tracked) are left as they are.
    Returns the names loaded."""
    torch = _torch()
    onnx = _onnx()
    path = os.fspath(trained_onnx)
    try:
        proto = onnx.load(path)
    except Exception as e:  # onnx raises protobuf's DecodeError, OSError...
        raise Error(f"{path}: cannot read as ONNX: {e}") from None
    inits = {t.name: t for t in proto.graph.initializer}
    params = dict(module.named_parameters())
    targets = dict(params)
    targets.update((n, b) for n, b in module.named_buffers() if n in inits)
    missing = [n for n in params if n not in inits]
    if missing:
        extra = [n for n in inits if n not in targets]
        raise Error(f"{path}: no initializer named as parameter(s) {_names(missing)}; "
                    f"initializers not named as any parameter: {_names(extra) or 'none'} "
                    "(export with pcc.from_torch, or torch.onnx.export in training mode "
                    "without constant folding)")
    values = {n: onnx.numpy_helper.to_array(inits[n]) for n in targets}
    bad = [f"{n} {list(values[n].shape)} for {list(t.shape)}" for n, t in targets.items()
           if tuple(values[n].shape) != tuple(t.shape)]
    if bad:
        raise Error(f"{path}: initializers of another shape than their parameter: {_names(bad)}")
    with torch.no_grad():
        for n, t in targets.items():
            t.copy_(torch.from_numpy(values[n].copy()).to(t.dtype))
    return list(targets)
