#!/usr/bin/env python3
"""Generate the training test fixtures under tests/train/.

Run by hand (never by CI) with Debian's python3-torch (1.13) and python3-onnx
(1.12), from anywhere:

    python3 tests/train/gen_train_fixtures.py             # every fixture
    python3 tests/train/gen_train_fixtures.py gpt moe     # only these

The model classes and example inputs come from tests/models/gen_fixtures.py
(imported, not copied).  Each fixture directory holds model.onnx (opset 17,
every trainable parameter one initializer named as in the state_dict),
train.json (loss spec, input and parameter names, hyperparameters, the
names of the expected files), test_data_set_0/input_N.pb and expected/*.pb:
the loss and the gradients from float64 autograd, the parameters after one
float32 SGD step, and for some models the parameters after a few optimizer
steps, a learning-rate schedule or BatchNorm running statistics.  tinytext/
is a character-level GPT with eight batches for a short training run.  The
layout is described in tests/train/README.md.  Seeds are fixed and a rerun
gives byte-identical files.
"""

import argparse
import collections
import contextlib
import copy
import importlib.util
import json
import math
import os
import shutil
import sys
import warnings

try:
    import numpy as np
    import onnx
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    # A pyenv (or venv) python3 may shadow Debian's, which has the packages.
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
SGD_LR = 0.1  # the single SGD step of every fixture


def load_model_fixtures():
    """Import tests/models/gen_fixtures.py without leaving a __pycache__."""
    path = os.path.join(HERE, os.pardir, "models", "gen_fixtures.py")
    spec = importlib.util.spec_from_file_location("gen_fixtures", path)
    module = importlib.util.module_from_spec(spec)
    old, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = old
    return module


gf = load_model_fixtures()
gen = gf.gen


# --------------------------------------------------------------------------
# Models: the tests/models families, some narrowed to keep the files small
# --------------------------------------------------------------------------


def randomize_layernorm(model, seed):
    """LayerNorm starts at weight 1, bias 0, where a backward pass that
    forgets the scale would still look right; move them off that point."""
    g = gen(seed)
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            n = m.weight.numel()
            with torch.no_grad():
                m.weight.copy_(1.0 + 0.2 * torch.randn(n, generator=g).view_as(m.weight))
                m.bias.copy_(0.2 * torch.randn(n, generator=g).view_as(m.bias))
    return model


def narrow_resnet():
    """gf.ResNet (its forward, stem and BasicBlocks) at widths 8 and 16
    instead of 16 and 32: the full one has 20k parameters, too many for
    three copies (model, gradients, SGD step) in 200 KB."""
    model = gf.ResNet()
    model.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
    model.bn1 = nn.BatchNorm2d(8)
    model.layer1 = gf.BasicBlock(8, 8, stride=1)
    model.layer2 = gf.BasicBlock(8, 16, stride=2)
    model.fc = nn.Linear(16, 10)
    return model


def fixture(base, model, loss, extra_name=None, extra=None, **flags):
    """A training fixture from a gen_fixtures spec: the model, its example
    inputs and names, the loss spec and the extra loss input if any."""
    return dict(
        model=model,
        inputs=base["inputs"],
        input_names=base["input_names"],
        output_names=base["output_names"],
        loss=loss,
        extra_name=extra_name,
        extra=extra,
        **flags,
    )


def next_token_labels(ids, seed):
    return torch.cat([ids[:, 1:], gf.gpt_ids(seed, batch=ids.size(0), seq=1)], dim=1)


def mlp_fixture():
    s = gf.mlp_spec()
    target = torch.randn(4, 8, generator=gen(311))
    return fixture(
        s, s["model"], "mse:y,target", "target", target, optimizers=True, clip_max_norm=0.5
    )


def mlp_loss_fixture():
    s = gf.mlp_loss_spec()
    return fixture(s, s["model"], "model")


def gpt_fixture():
    s = gf.gpt_spec()
    torch.manual_seed(13)
    model = randomize_layernorm(gf.GPT(vocab=64, d_model=8, n_head=2, block_size=8), 213)
    labels = next_token_labels(s["inputs"][0], 313)
    return fixture(
        s,
        model,
        "cross_entropy:logits,labels",
        "labels",
        labels,
        optimizers=True,
        clip_max_norm=0.5,
        schedule=True,
    )


def gpt_loss_fixture():
    s = gf.gpt_loss_spec()
    torch.manual_seed(14)
    model = gf.GPTLoss()
    model.gpt = randomize_layernorm(gf.GPT(vocab=64, d_model=16, n_head=2, block_size=8), 214)
    return fixture(s, model, "model")


def bert_fixture():
    s = gf.bert_spec()
    torch.manual_seed(15)
    model = randomize_layernorm(gf.Bert(vocab=64, d_model=16, n_head=2, d_ff=32), 215)
    target = 0.5 * torch.randn(2, 16, generator=gen(315))
    return fixture(s, model, "mse:pooled,target", "target", target)


def vit_fixture():
    s = gf.vit_spec()
    torch.manual_seed(16)
    model = randomize_layernorm(gf.ViT(d_model=16, n_head=2, d_ff=32), 216)
    labels = torch.randint(0, 10, (2,), generator=gen(316))
    return fixture(s, model, "cross_entropy:logits,labels", "labels", labels)


def resnet_train_fixture():
    s = gf.resnet_train_spec()
    torch.manual_seed(17)
    model = gf.randomize_batchnorm(narrow_resnet(), 217).train()
    labels = torch.randint(0, 10, (2,), generator=gen(317))
    return fixture(s, model, "cross_entropy:logits,labels", "labels", labels, batchnorm=True)


def moe_fixture():
    s = gf.moe_spec()
    target = torch.randn(8, 16, generator=gen(318))
    return fixture(s, s["model"], "mse:y,target", "target", target)


FIXTURES = {
    "mlp_loss": mlp_loss_fixture,
    "mlp": mlp_fixture,
    "gpt_loss": gpt_loss_fixture,
    "gpt": gpt_fixture,
    "bert": bert_fixture,
    "vit": vit_fixture,
    "resnet_train": resnet_train_fixture,
    "moe": moe_fixture,
}


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------


def export(f, out_arrays):
    """Export at opset 17 in training mode without constant folding.

    Training mode matters beyond BatchNorm: torch deduplicates initializers
    by value in eval mode (all fresh LayerNorm weights are ones and would
    collapse into one initializer) but by tensor identity in training mode,
    so exactly the tied weights share one."""
    s = dict(
        model=f["model"],
        inputs=f["inputs"],
        input_names=f["input_names"],
        output_names=f["output_names"],
        export_kwargs=dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False),
    )
    proto = gf.export(s, OPSET)
    gf.restore_buffers(proto, f["model"])
    gf.pin_output_shapes(proto, out_arrays)
    check_initializers(proto, f["model"])
    graph_inputs = [i.name for i in proto.graph.input]
    if graph_inputs != f["input_names"]:
        raise RuntimeError(f"graph inputs {graph_inputs} != {f['input_names']}")
    return proto


def check_initializers(proto, model):
    """Every parameter is exactly one initializer of its state_dict name and
    value; any other initializer is a buffer.  Fail loudly otherwise."""
    inits = collections.Counter(i.name for i in proto.graph.initializer)
    dup = [n for n, c in inits.items() if c > 1]
    if dup:
        raise RuntimeError(f"initializers defined twice: {dup}")
    values = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    missing = [n for n in params if n not in values]
    if missing:
        raise RuntimeError(f"parameters with no initializer of their name: {missing}")
    for n, p in params.items():
        if not np.array_equal(values[n], p.detach().numpy()):
            raise RuntimeError(f"initializer {n} differs from the parameter")
    stray = [n for n in values if n not in params and n not in buffers]
    if stray:
        raise RuntimeError(f"initializers that are neither parameters nor buffers: {stray}")
    # A copy of a parameter in a Constant node would escape the checks above.
    for node in proto.graph.node:
        for attr in node.attribute:
            if node.op_type != "Constant" or attr.name != "value":
                continue
            c = onnx.numpy_helper.to_array(attr.t)
            for n, p in params.items():
                if c.shape == tuple(p.shape) and np.array_equal(c, p.detach().numpy()):
                    raise RuntimeError(f"Constant node {node.name} holds a copy of {n}")


# --------------------------------------------------------------------------
# Losses and references
# --------------------------------------------------------------------------


@contextlib.contextmanager
def float64_default():
    """The models create some tensors with the default dtype (MoE's dispatch
    buffer); make those float64 while the model runs in float64."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def to_dtype(t, dtype):
    return t.to(dtype) if t.is_floating_point() else t


def run_loss(f, model, dtype):
    """The loss of the fixture's loss spec on the model's outputs."""
    inputs = [to_dtype(t, dtype) for t in f["inputs"]]
    out = model(*inputs)
    out = out if isinstance(out, (tuple, list)) else (out,)
    outs = dict(zip(f["output_names"], out))
    kind, _, args = f["loss"].partition(":")
    if kind == "model":
        return out[0]
    name, extra_name = args.split(",")
    assert extra_name == f["extra_name"], f["loss"]
    y, extra = outs[name], to_dtype(f["extra"], dtype)
    if kind == "mse":
        return ((y - extra) ** 2).mean()
    if kind == "cross_entropy":
        return F.cross_entropy(y.reshape(-1, y.size(-1)), extra.reshape(-1))
    raise ValueError(f["loss"])


def trained_params(model):
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad and p.grad is not None]


def reference64(f):
    """Loss, parameter and input gradients in float64; the model copy is in
    train mode as it was given, so BatchNorm updates its running stats."""
    with float64_default():
        model = copy.deepcopy(f["model"]).double()
        inputs = [to_dtype(t, torch.float64) for t in f["inputs"]]
        for t in inputs:
            if t.is_floating_point():
                t.requires_grad_(True)
        g = dict(f)
        g["inputs"] = inputs
        loss = run_loss(g, model, torch.float64)
        loss.backward()
    grads = [(n, p.grad.detach().clone()) for n, p in trained_params(model)]
    input_grads = [
        (n, t.grad.detach().clone())
        for n, t in zip(f["input_names"], inputs)
        if t.is_floating_point()
    ]
    return loss.item(), grads, input_grads, model


BN_MOMENTUM = 0.1  # torch's convention: the weight of the new batch


def onnx_running_stats(f):
    """BatchNorm's running statistics after one train-mode forward pass in
    float64, as ONNX's BatchNormalization (training_mode=1) defines them:
    the batch variance is the biased one, where torch's own update uses
    N*H*W - 1 (its buffers differ from these by that factor)."""
    with float64_default():
        model = copy.deepcopy(f["model"]).double()
        seen = {}
        hooks = [
            m.register_forward_hook(lambda mod, args, out, name=name: seen.__setitem__(name, args[0]))
            for name, m in model.named_modules()
            if isinstance(m, nn.BatchNorm2d)
        ]
        with torch.no_grad():
            model(*[to_dtype(t, torch.float64) for t in f["inputs"]])
        for h in hooks:
            h.remove()
    old = dict(f["model"].named_buffers())
    stats = []
    for name in [n for n, _ in f["model"].named_modules() if n in seen]:
        x = seen[name]
        mean = x.mean(dim=(0, 2, 3))
        var = x.var(dim=(0, 2, 3), unbiased=False)
        for kind, batch in (("running_mean", mean), ("running_var", var)):
            prev = old[f"{name}.{kind}"].double()
            stats.append((f"{name}.{kind}", (1 - BN_MOMENTUM) * prev + BN_MOMENTUM * batch))
    return stats


def sgd_step32(f):
    """One ordinary float32 training step with torch.optim.SGD."""
    model = copy.deepcopy(f["model"])
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=SGD_LR)
    opt.zero_grad()
    loss = run_loss(f, model, torch.float32)
    loss.backward()
    opt.step()
    return loss.item(), [(n, p.detach().clone()) for n, p in model.named_parameters()]


# Optimizer references: name -> (torch class, hyperparameters as recorded).
ADAM_HP = dict(lr=1e-2, betas=[0.8, 0.95], eps=1e-6)
OPTIMIZERS = [
    ("momentum", dict(lr=0.05, momentum=0.9, dampening=0.0, nesterov=False, weight_decay=0.0)),
    ("nesterov", dict(lr=0.05, momentum=0.9, dampening=0.0, nesterov=True, weight_decay=0.0)),
    ("adam", dict(ADAM_HP, weight_decay=0.0)),
    ("adamw", dict(ADAM_HP, weight_decay=0.1)),
    ("adamw_clip", dict(ADAM_HP, weight_decay=0.1)),
]
OPT_STEPS = 3
CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_: scale = max_norm / (norm + 1e-6)
SCHEDULE = dict(warmup=2, total=6)


def make_optimizer(name, hp, params):
    if name in ("momentum", "nesterov"):
        return torch.optim.SGD(params, **hp)
    kw = dict(lr=hp["lr"], betas=tuple(hp["betas"]), eps=hp["eps"], weight_decay=hp["weight_decay"])
    if name == "adam":
        return torch.optim.Adam(params, **kw)
    return torch.optim.AdamW(params, **kw)


def schedule_factor(step, warmup, total):
    """Linear warmup over `warmup` steps, then cosine decay towards 0."""
    if step < warmup:
        return (step + 1) / warmup
    return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / (total - warmup)))


def run_optimizer(f, name, hp, steps, max_norm=None, schedule=None):
    """`steps` float64 steps on the same batch; returns the parameters, the
    loss before each step, the pre-clip global gradient norms and the lr
    used at each step."""
    with float64_default():
        model = copy.deepcopy(f["model"]).double()
        params = [p for p in model.parameters() if p.requires_grad]
        opt = make_optimizer(name, hp, params)
        sched = None
        if schedule:
            w, total = schedule["warmup"], schedule["total"]
            sched = torch.optim.lr_scheduler.LambdaLR(
                opt, lambda s: schedule_factor(s, w, total)
            )
        losses, norms, lrs = [], [], []
        for _ in range(steps):
            opt.zero_grad()
            loss = run_loss(f, model, torch.float64)
            loss.backward()
            losses.append(loss.item())
            norm = torch.sqrt(sum((p.grad.detach() ** 2).sum() for p in params)).item()
            norms.append(norm)
            if max_norm is not None:
                torch.nn.utils.clip_grad_norm_(params, max_norm)
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            if sched:
                sched.step()
    return [(n, p.detach().clone()) for n, p in model.named_parameters()], losses, norms, lrs


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


def write_tensor(d, rel, array, name):
    gf.write_tensor(os.path.join(d, rel), array, name)
    return rel


def write_params(d, prefix, named, names):
    """Write float32 copies of the named tensors in the order of `names`."""
    by_name = dict(named)
    return [
        write_tensor(d, f"expected/{prefix}_{k}.pb", by_name[n].to(torch.float32).numpy(), n)
        for k, n in enumerate(names)
    ]


def write_json(path, obj):
    with open(path, "w") as fp:
        json.dump(obj, fp, indent=1)
        fp.write("\n")


def write_inputs(d, names, tensors):
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    for i, (n, t) in enumerate(zip(names, tensors)):
        gf.write_tensor(os.path.join(data, f"input_{i}.pb"), t.numpy(), n)


def write_fixture(name, f, out_root):
    model = f["model"]
    with torch.no_grad():
        out = copy.deepcopy(model)(*f["inputs"])
    out = out if isinstance(out, (tuple, list)) else (out,)
    proto = export(f, [o.numpy() for o in out])

    d = os.path.join(out_root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "expected"))
    onnx.save_model(proto, os.path.join(d, "model.onnx"))

    input_names = list(f["input_names"])
    input_tensors = list(f["inputs"])
    if f["extra_name"]:
        input_names.append(f["extra_name"])
        input_tensors.append(f["extra"])
    write_inputs(d, input_names, input_tensors)

    loss64, grads, input_grads, model64 = reference64(f)
    loss32, after_sgd = sgd_step32(f)
    names = [n for n, _ in grads]
    meta = collections.OrderedDict()
    meta["loss"] = f["loss"]
    meta["inputs"] = input_names
    meta["lr"] = SGD_LR
    meta["params"] = names
    meta["param_count"] = sum(g.numel() for _, g in grads)
    meta["loss_file"] = write_tensor(d, "expected/loss.pb", np.float32(loss64), "loss")
    meta["loss_f64"] = loss64
    meta["loss_f32"] = loss32
    meta["grads"] = write_params(d, "grad", grads, names)
    meta["sgd"] = write_params(d, "sgd", after_sgd, names)
    meta["input_grad_names"] = [n for n, _ in input_grads]
    meta["input_grads"] = write_params(d, "input_grad", input_grads, meta["input_grad_names"])

    if f.get("batchnorm"):
        stats = onnx_running_stats(f)
        meta["bn_momentum"] = BN_MOMENTUM
        meta["bn_running_var"] = "biased"
        meta["bn_stats"] = [n for n, _ in stats]
        meta["bn_files"] = write_params(d, "bn", stats, meta["bn_stats"])

    if f.get("optimizers"):
        meta["optimizers"] = []
        for opt_name, hp in OPTIMIZERS:
            max_norm = f["clip_max_norm"] if opt_name == "adamw_clip" else None
            after, losses, norms, _ = run_optimizer(f, opt_name, hp, OPT_STEPS, max_norm)
            entry = collections.OrderedDict(name=opt_name, steps=OPT_STEPS)
            entry.update(hp)
            if max_norm is not None:
                if min(norms) <= max_norm:
                    raise RuntimeError(f"{name}: max_norm {max_norm} does not clip: {norms}")
                entry["max_norm"] = max_norm
                entry["clip_eps"] = CLIP_EPS
                entry["grad_norm_step1"] = norms[0]
                entry["grad_norms"] = norms
            entry["losses"] = losses
            entry["files"] = write_params(d, opt_name, after, names)
            meta["optimizers"].append(entry)

    if f.get("schedule"):
        hp = dict(OPTIMIZERS)["adamw"]
        total = SCHEDULE["total"]
        after, losses, _, lrs = run_optimizer(f, "adamw", hp, total, schedule=SCHEDULE)
        formula = [hp["lr"] * schedule_factor(s, SCHEDULE["warmup"], total) for s in range(total)]
        if any(abs(a - b) > 1e-15 for a, b in zip(lrs, formula)):
            raise RuntimeError(f"LambdaLR lrs {lrs} != formula {formula}")
        entry = collections.OrderedDict(name="adamw", steps=total)
        entry.update(SCHEDULE)
        entry.update(hp)
        entry["lrs"] = lrs
        entry["losses"] = losses
        entry["files"] = write_params(d, "schedule", after, names)
        meta["schedule"] = entry

    write_json(os.path.join(d, "train.json"), meta)
    return d, meta


# --------------------------------------------------------------------------
# tinytext: a character-level GPT for a short `pcc train` run
# --------------------------------------------------------------------------

TEXT = (
    "the small boat left the harbor before the sun was up. "
    "four people sat in it and nobody spoke, because the water was calm "
    "and the fog lay low over the bay. the oldest of them held the tiller "
    "and watched the light on the point turn slowly. when the fog lifted "
    "they could see the island, green and quiet, with a white house near "
    "the shore. they had come to mend the roof of that house, and they "
    "carried nails, tar, a saw and two long ladders tied to the side. "
    "the work took three days. on the last evening they cooked fish on "
    "the beach, told old stories and laughed until the fire went out. "
    "in the morning the boat went home with empty bags and a good wind."
)
TT_BATCH, TT_SEQ, TT_SETS, TT_D = 4, 16, 8, 32
TT_STEPS, TT_LR = 200, 3e-3


def tinytext_batches(text, stoi):
    """Set s, row b is the window of TT_SEQ + 1 characters starting at
    k * (len - TT_SEQ - 1) // (n - 1), k = s * TT_BATCH + b, n = all rows:
    ids its first TT_SEQ characters, labels the next character of each."""
    n = TT_SETS * TT_BATCH
    span = len(text) - TT_SEQ - 1
    rows = []
    for k in range(n):
        start = k * span // (n - 1)
        rows.append([stoi[c] for c in text[start : start + TT_SEQ + 1]])
    rows = torch.tensor(rows, dtype=torch.int64).view(TT_SETS, TT_BATCH, TT_SEQ + 1)
    return [(r[:, :-1].contiguous(), r[:, 1:].contiguous()) for r in rows]


def write_tinytext(out_root):
    chars = "".join(sorted(set(TEXT)))
    stoi = {c: i for i, c in enumerate(chars)}
    batches = tinytext_batches(TEXT, stoi)
    torch.manual_seed(19)
    model = gf.GPTLoss()
    model.gpt = gf.GPT(vocab=len(chars), d_model=TT_D, n_head=2, block_size=TT_SEQ)
    # GPT-2's embedding init: nn.Embedding's N(0, 1) through the tied head
    # starts at a loss near 20, far above the uniform ln(vocab).
    nn.init.normal_(model.gpt.wte.weight, std=0.02)
    nn.init.normal_(model.gpt.wpe.weight, std=0.02)
    f = dict(
        model=model,
        inputs=batches[0],
        input_names=["ids", "labels"],
        output_names=["loss"],
    )
    with torch.no_grad():
        initial = copy.deepcopy(model)(*batches[0])
    proto = export(f, [initial.numpy()])

    d = os.path.join(out_root, "tinytext")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.save_model(proto, os.path.join(d, "model.onnx"))
    for s, (ids, labels) in enumerate(batches):
        data = os.path.join(d, f"test_data_set_{s}")
        os.makedirs(data)
        gf.write_tensor(os.path.join(data, "input_0.pb"), ids.numpy(), "ids")
        gf.write_tensor(os.path.join(data, "input_1.pb"), labels.numpy(), "labels")

    trained = copy.deepcopy(model)
    params = [p for p in trained.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=TT_LR)
    hp = opt.defaults
    losses = []
    for step in range(TT_STEPS):
        opt.zero_grad()
        loss = trained(*batches[step % TT_SETS])
        loss.backward()
        losses.append(loss.item())
        opt.step()
    with torch.no_grad():
        final = trained(*batches[0]).item()

    meta = collections.OrderedDict()
    meta["loss"] = "model"
    meta["inputs"] = ["ids", "labels"]
    meta["sets"] = TT_SETS
    meta["batch"] = TT_BATCH
    meta["seq"] = TT_SEQ
    meta["vocab"] = len(chars)
    meta["chars"] = chars
    meta["params"] = [n for n, p in trained.named_parameters() if p.grad is not None]
    meta["param_count"] = sum(p.numel() for p in params)
    meta["initial_loss"] = initial.item()
    meta["uniform_loss"] = math.log(len(chars))
    meta["optimizer"] = "adamw"
    meta["lr"] = TT_LR
    meta["betas"] = list(hp["betas"])
    meta["eps"] = hp["eps"]
    meta["weight_decay"] = hp["weight_decay"]
    meta["steps"] = TT_STEPS
    meta["final_loss"] = final
    meta["losses_every_20"] = losses[::20]
    meta["text"] = TEXT
    write_json(os.path.join(d, "train.json"), meta)
    if not final < 0.5 * initial.item():  # it learns the text
        raise RuntimeError(f"tinytext: 200 steps only reach {final} from {initial.item()}")
    return d, meta


# --------------------------------------------------------------------------


def check_dir(d, limit):
    onnx.checker.check_model(os.path.join(d, "model.onnx"))
    size = sum(
        os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(d) for f in files
    )
    if size >= limit:
        raise RuntimeError(f"{d}: {size} bytes, over {limit}")
    return size


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("only", nargs="*", help="fixtures to generate (default: all)")
    parser.add_argument("--out", default=HERE, help="output root (default: tests/train)")
    args = parser.parse_args()
    known = set(FIXTURES) | {"tinytext"}
    unknown = set(args.only) - known
    if unknown:
        parser.error(f"unknown fixtures: {sorted(unknown)}; choose from {sorted(known)}")

    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for name, make in FIXTURES.items():
        if args.only and name not in args.only:
            continue
        d, meta = write_fixture(name, make(), args.out)
        size = check_dir(d, 200_000)
        print(
            f"{name:14s} {size:7d} bytes  {meta['param_count']:6d} params"
            f" in {len(meta['params']):2d} tensors  loss {meta['loss_f64']:.6f}"
        )
    if not args.only or "tinytext" in args.only:
        d, meta = write_tinytext(args.out)
        size = check_dir(d, 300_000)
        print(
            f"{'tinytext':14s} {size:7d} bytes  {meta['param_count']:6d} params"
            f"  loss {meta['initial_loss']:.4f} -> {meta['final_loss']:.4f}"
            f" after {meta['steps']} steps"
        )


if __name__ == "__main__":
    main()
