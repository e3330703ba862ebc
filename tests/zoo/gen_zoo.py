#!/usr/bin/env python3
"""Generate the model zoo fixtures under tests/zoo/ (run by hand, never by CI).

Tiny configurations of the architectures issue 39 names, built from the
current PyPI stack (transformers' and torchvision's own classes, not ours),
randomly initialised with every constant-valued tensor perturbed, exported
by both of torch's exporters, with ONNX Runtime's outputs as references and,
for the loss models, torch's parameters after one SGD step.

Setup (a throwaway venv; PyPI must be reachable; about 3 GB with torch's
CUDA wheels, which are not used):

    python3 -m venv /tmp/zoo-venv
    /tmp/zoo-venv/bin/pip install torch torchvision transformers onnx \\
        onnxruntime onnxscript
    /tmp/zoo-venv/bin/python tests/zoo/gen_zoo.py            # everything
    /tmp/zoo-venv/bin/python tests/zoo/gen_zoo.py gpt2 vit   # some models

The committed files were made with torch 2.15.0, torchvision 0.29.2,
transformers 5.24.0, onnx 1.23.2, onnxscript 0.7.2, onnxruntime 1.32.0
(versions.txt records them).  Seeds are fixed; one thread; a rerun gives
byte-identical files.

For every architecture NAME two directories:

    NAME_ts/   torch.onnx.export(..., dynamo=False, opset_version=17): the
               TorchScript exporter, eval mode, its default constant folding
    NAME_dy/   torch.onnx.export(..., dynamo=True): the dynamo exporter at
               its default opset, its default optimizer

each holding model.onnx and test_data_set_0/{input_N,output_N}.pb (graph
inputs in order; outputs are ONNX Runtime's, checked against torch's within
1e-4 before they are written).  The loss models (gpt2_loss, llama_loss,
llama_ri_loss: transformers' own causal-LM loss, cross entropy on the
shifted labels, inside the graph) are exported from train() mode (dropout
0), the TorchScript one with training=TrainingMode.TRAINING and
do_constant_folding=False, the dynamo one with optimize=False (and
llama_loss_opt_dy with the optimizer on, dynamo only), and also hold
expected_sgd.onnx: model.onnx
with every parameter replaced by torch's value after one float32
torch.optim.SGD step at lr 0.1 (SGD_LR) on test_data_set_0.  Every
torch parameter must be exactly one initializer of (one of) its names, or
the one initializer holding its transpose (the dynamo optimizer's folded
Linear weights); the script fails otherwise, as it does when a directory outgrows MAX_DIR_BYTES.
BatchNorm's running statistics are the example batch's, and the exporters'
per-node debug records are dropped (strip_debug_info).  The SYMBOLIC models
are exported with every input's dims 0 and 1 symbolic (batch, sequence) and
hold a file `dims` binding them to the data set's sizes ("batch=2
sequence=8"), which test_zoo passes to pcc as --dim.
"""

import contextlib
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torchvision
import transformers
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
SGD_LR = 0.1
MAX_DIR_BYTES = 400_000  # model + data (+ expected_sgd.onnx, as large, for loss models)
TS_OPSET = 17


def perturb(model, seed):
    """Random init, then every tensor whose elements are all equal (LayerNorm
    and BatchNorm weights of 1, biases and cls tokens of 0, running
    statistics) gets noise, so no two initializers are merged as equal and
    a bias read as zero or a scale read as one shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if not t.is_floating_point() or t.numel() == 0:
                continue
            flat = t.reshape(-1)
            if t.numel() > 1 and not bool((flat == flat[0]).all()):
                continue
            noise = torch.randn(t.shape, generator=g)
            if name.endswith("running_var"):
                t.copy_(0.5 + noise.abs())
            elif name.endswith("inv_freq"):
                continue  # a rotary table, not a constant to perturb
            else:
                t.add_(0.1 * noise)
    return model


def calibrate_batchnorm(model, args):
    """BatchNorm's running statistics set to the example batch's: with the
    defaults (mean 0, variance 1) the activations shrink block by block
    and the logits come out as the last biases, the same for every image."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None  # a cumulative average: one batch, its statistics
    model.train()
    with torch.no_grad():
        model(*args)
    for bn in bns:
        bn.momentum = 0.1


# --------------------------------------------------------------------------
# The architectures (tiny configurations)
# --------------------------------------------------------------------------


def gpt2_config():
    return transformers.GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2,
                                   resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)


def llama_config():
    return transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
                                    use_cache=False, tie_word_embeddings=False)


class LogitsOnly(nn.Module):
    """A transformers causal LM returning its logits alone."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask):
        return self.lm(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class LMLoss(nn.Module):
    """A transformers causal LM returning its own loss on labels (shifted
    inside the model: the cross entropy of token t+1 given tokens <= t)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask, labels):
        return self.lm(input_ids=input_ids, attention_mask=attention_mask, labels=labels, use_cache=False).loss


class BertOut(nn.Module):
    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, token_type_ids, attention_mask):
        o = self.bert(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask)
        return o.last_hidden_state, o.pooler_output


class Logits(nn.Module):
    """An image classifier (transformers) returning its logits."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, pixel_values):
        return self.net(pixel_values=pixel_values).logits


class Encoder(nn.Module):
    def __init__(self, enc):
        super().__init__()
        self.enc = enc

    def forward(self, input_features):
        return self.enc(input_features).last_hidden_state


def ids(seed, shape, vocab=64):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def image(seed, shape):
    """Noise of another scale and mean in each batch row: pooled i.i.d.
    noise alone gives every row nearly the same features."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    row = torch.arange(shape[0], dtype=torch.float32).reshape(-1, *[1] * (len(shape) - 1))
    return x * (0.5 + row) + 0.3 * row


# A causal LM's inputs: token ids and a 0/1 attention mask (given, as
# tokenizers give it: without it transformers looks for packed sequences
# with aten::diff, which the TorchScript exporter cannot export).
PADDED = torch.tensor([[1] * 8, [1] * 6 + [0] * 2])  # the second row padded on the right
UNPADDED = torch.ones(2, 8, dtype=torch.int64)


def gpt2():
    m = LogitsOnly(transformers.GPT2LMHeadModel(gpt2_config()))
    return m, (ids(1, (2, 8)), PADDED), ["input_ids", "attention_mask"], ["logits"]


def gpt2_loss():
    m = LMLoss(transformers.GPT2LMHeadModel(gpt2_config()))
    return m, (ids(1, (2, 8)), UNPADDED, ids(2, (2, 8))), ["input_ids", "attention_mask", "labels"], ["loss"]


def llama():
    m = LogitsOnly(transformers.LlamaForCausalLM(llama_config()))
    return m, (ids(1, (2, 8)), PADDED), ["input_ids", "attention_mask"], ["logits"]


@contextlib.contextmanager
def repeat_interleave_kv():
    """Within it transformers' Llama repeats its key/value heads for their
    queries by torch.repeat_interleave, as hand-written Llama blocks do,
    instead of its repeat_kv (expand, then reshape: the same values). The
    TorchScript exporter writes that as an Unsqueeze to rank 5 and a Tile
    by [1, 1, r, 1, 1] (issue 39)."""
    from transformers.models.llama import modeling_llama
    repeat_kv = modeling_llama.repeat_kv
    modeling_llama.repeat_kv = lambda h, n: torch.repeat_interleave(h, n, dim=1)
    try:
        yield
    finally:
        modeling_llama.repeat_kv = repeat_kv


class RepeatInterleaveKV(nn.Module):
    """A transformers Llama (eager attention, the one that calls repeat_kv)
    returning its logits, its heads repeated by repeat_interleave."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm  # LogitsOnly, or LMLoss for RepeatInterleaveKVLoss

    def forward(self, input_ids, attention_mask):
        with repeat_interleave_kv():
            return self.lm(input_ids, attention_mask)


class RepeatInterleaveKVLoss(RepeatInterleaveKV):
    """The same returning transformers' causal-LM loss (LMLoss)."""

    def forward(self, input_ids, attention_mask, labels):
        with repeat_interleave_kv():
            return self.lm(input_ids, attention_mask, labels)


def llama_ri():
    c = llama_config()
    c._attn_implementation = "eager"  # the attention that calls repeat_kv
    m = RepeatInterleaveKV(LogitsOnly(transformers.LlamaForCausalLM(c)))
    return m, (ids(1, (2, 8)), PADDED), ["input_ids", "attention_mask"], ["logits"]


def llama_ri_loss():
    c = llama_config()
    c._attn_implementation = "eager"
    m = RepeatInterleaveKVLoss(LMLoss(transformers.LlamaForCausalLM(c)))
    return m, (ids(1, (2, 8)), UNPADDED, ids(2, (2, 8))), ["input_ids", "attention_mask", "labels"], ["loss"]


def llama_loss():
    m = LMLoss(transformers.LlamaForCausalLM(llama_config()))
    return m, (ids(1, (2, 8)), UNPADDED, ids(2, (2, 8))), ["input_ids", "attention_mask", "labels"], ["loss"]


def bert():
    c = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=16, type_vocab_size=2,
                                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    m = BertOut(transformers.BertModel(c))
    tt = torch.tensor([[0] * 4 + [1] * 4, [0] * 6 + [1] * 2])
    mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3])  # the second row padded
    return m, (ids(1, (2, 8)), tt, mask), ["input_ids", "token_type_ids", "attention_mask"], [
        "last_hidden_state", "pooler_output"]


def vit():
    c = transformers.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=64, num_labels=10,
                               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    m = Logits(transformers.ViTForImageClassification(c))
    return m, (image(1, (2, 3, 16, 16)),), ["pixel_values"], ["logits"]


def resnet():
    c = transformers.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                                  layer_type="basic", num_labels=10)
    m = Logits(transformers.ResNetForImageClassification(c))
    return m, (image(1, (2, 3, 32, 32)),), ["pixel_values"], ["logits"]


def mobilenet():
    """torchvision's MobileNetV3 (mobilenet_v3_small's blocks: depthwise
    convolutions, squeeze-and-excitation, hardswish) with three small
    inverted residual blocks."""
    from torchvision.models.mobilenetv3 import InvertedResidualConfig as B
    from torchvision.models.mobilenetv3 import MobileNetV3
    blocks = [B(8, 3, 8, 8, True, "RE", 2, 1, 1.0), B(8, 3, 24, 16, False, "RE", 2, 1, 1.0),
              B(16, 5, 32, 16, True, "HS", 1, 1, 1.0)]
    m = MobileNetV3(blocks, last_channel=32, num_classes=10)
    for lin in (m.classifier[0], m.classifier[3]):  # N(0, 0.01) weights leave the logits the biases
        lin.reset_parameters()
    return m, (image(1, (2, 3, 32, 32)),), ["x"], ["logits"]


def convnext():
    c = transformers.ConvNextConfig(num_channels=3, patch_size=2, num_stages=2, hidden_sizes=[16, 32], depths=[1, 1],
                                    num_labels=10, image_size=16, layer_scale_init_value=0.5)
    m = Logits(transformers.ConvNextForImageClassification(c))
    return m, (image(1, (2, 3, 16, 16)),), ["pixel_values"], ["logits"]


def whisper():
    c = transformers.WhisperConfig(num_mel_bins=8, d_model=32, encoder_layers=2, encoder_attention_heads=2,
                                   encoder_ffn_dim=64, decoder_layers=1, decoder_attention_heads=2,
                                   decoder_ffn_dim=64, max_source_positions=8, max_target_positions=8,
                                   vocab_size=64, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    enc = transformers.models.whisper.modeling_whisper.WhisperEncoder(c)
    # 2 * max_source_positions frames: the second convolution halves them
    return Encoder(enc), (image(1, (1, 8, 16)),), ["input_features"], ["last_hidden_state"]


ARCHS = {"gpt2": gpt2, "bert": bert, "llama": llama, "llama_ri": llama_ri, "llama_ri_sym": llama_ri, "vit": vit,
         "resnet": resnet, "mobilenet": mobilenet, "convnext": convnext, "whisper": whisper, "gpt2_loss": gpt2_loss, "llama_loss": llama_loss,
         "llama_loss_opt": llama_loss, "llama_ri_loss": llama_ri_loss}
LOSS = {"gpt2_loss", "llama_loss", "llama_loss_opt", "llama_ri_loss"}
# Exported by the dynamo exporter alone, with its optimizer on (as
# torch.onnx.export does by default): RoPE's tables folded into constant
# initializers that must not train, every parameter still one initializer.
# (GPT-2's would not do: the optimizer folds wpe[arange] into a constant
# and the tied LM head's transpose into a copy, so wpe and the head are no
# longer torch's parameters.)
DYNAMO_OPTIMIZED = {"llama_loss_opt"}
# Exported with the batch and sequence dims symbolic (TorchScript's
# dynamic_axes, dynamo's dynamic_shapes), as LLMs are exported to serve any
# length: every graph input's dims 0 and 1, named here. The directory's
# `dims` file binds them to the data set's sizes for pcc (--dim NAME=N).
SYMBOLIC = {"llama_ri_sym"}
SYMBOLIC_DIMS = ("batch", "sequence")


# --------------------------------------------------------------------------
# Export, references
# --------------------------------------------------------------------------


def export(model, args, in_names, out_names, path, dynamo, train, optimize, symbolic):
    if dynamo:
        shapes = None
        if symbolic:
            # the sequence at most the configs' 16 positions
            batch, seq = torch.export.Dim(SYMBOLIC_DIMS[0]), torch.export.Dim(SYMBOLIC_DIMS[1], max=16)
            shapes = tuple({0: batch, 1: seq} for _ in args)
        # training: optimize=False, the dynamo exporter's "no constant
        # folding" (its optimizer folds wpe[arange(8)] into a constant and
        # the LM head's transpose of a tied embedding into a second copy)
        prog = torch.onnx.export(model, args, dynamo=True, input_names=in_names, output_names=out_names,
                                 optimize=optimize, verbose=False, dynamic_shapes=shapes)
        prog.save(path, external_data=False)
    else:
        mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL
        axes = {n: dict(enumerate(SYMBOLIC_DIMS)) for n in in_names + out_names} if symbolic else None
        torch.onnx.export(model, args, path, dynamo=False, opset_version=TS_OPSET, input_names=in_names,
                          output_names=out_names, training=mode, do_constant_folding=not train,
                          dynamic_axes=axes)
    strip_debug_info(path)
    onnx.checker.check_model(path)


# The dynamo exporter's word on what each graph input of the exported
# program was (PARAMETER, BUFFER, CONSTANT_TENSOR, USER_INPUT): pcc trains
# the parameters it names, so this metadata stays.
INPUT_SPEC = "pkg.torch.export.graph_signature.InputSpec."


def strip_debug_info(path):
    """Drops the exporters' per-node debug records (the dynamo exporter's
    stack traces and module paths are 60% of its file); nothing pcc or
    ONNX Runtime reads. Value infos keep the InputSpec entries."""
    proto = onnx.load(path)
    for n in proto.graph.node:
        del n.metadata_props[:]
        n.doc_string = ""
    for v in list(proto.graph.input) + list(proto.graph.output) + list(proto.graph.value_info):
        keep = [(p.key, p.value) for p in v.metadata_props if p.key.startswith(INPUT_SPEC)]
        del v.metadata_props[:]
        for k, x in keep:
            v.metadata_props.add(key=k, value=x)
    onnx.save(proto, path)


def symbolic_dims(proto, path, shape, dims_path):
    """Checks that every graph input's dims 0 and 1 are the symbolic ones
    (the export kept them symbolic, under their names) and writes the
    `dims` file binding them to the data set's sizes: "batch=2 sequence=8"."""
    for i in proto.graph.input:
        got = [d.dim_param for d in i.type.tensor_type.shape.dim[:2]]
        if got != list(SYMBOLIC_DIMS):
            raise SystemExit(f"{path}: input {i.name} has dims {got}, expected {list(SYMBOLIC_DIMS)}")
    with open(dims_path, "w") as f:
        f.write(" ".join(f"{n}={v}" for n, v in zip(SYMBOLIC_DIMS, shape[:2])) + "\n")


def write_tensor(path, array, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.array(array, order="C"), name).SerializeToString())  # keeps 0-d


def ort_run(path, feeds):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    return s, s.run(None, feeds)


def sgd_reference(model, args, proto, path):
    """model.onnx with every parameter replaced by its value after one SGD
    step of torch's (the loss is the model's only output). A parameter is
    the initializer of its name (a tied one has several: GPT-2's wte and
    LM head; any one of them, but exactly one), or, where the dynamo
    exporter's optimizer folded a Linear weight's transpose, the one
    initializer holding exactly its transpose (stored transposed)."""
    params = dict(model.named_parameters())
    aliases = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(p), []).append(n)
    inits = {t.name: t for t in proto.graph.initializer}
    before = {n: numpy_helper.to_array(t) for n, t in inits.items()}
    where = {}  # parameter name -> (initializer, transposed)
    for n, p in params.items():
        found = [a for a in aliases[id(p)] if a in inits]
        if len(found) == 1:
            where[n] = (inits[found[0]], False)
            continue
        w = p.detach().numpy()
        folded = [k for k, v in before.items() if w.ndim == 2 and v.shape == w.T.shape and np.array_equal(v, w.T)]
        if found or len(folded) != 1:
            raise SystemExit(f"{path}: parameter {aliases[id(p)]} is initializers {found or folded}, not one")
        where[n] = (inits[folded[0]], True)
    opt = torch.optim.SGD(params.values(), lr=SGD_LR)
    opt.zero_grad()
    model(*args).backward()
    opt.step()
    for n, p in params.items():
        t, transposed = where[n]
        new = p.detach().numpy().astype(np.float32)
        new = np.ascontiguousarray(new.T) if transposed else new
        if tuple(t.dims) != new.shape:
            raise SystemExit(f"{path}: initializer {t.name} has shape {tuple(t.dims)}, the parameter {new.shape}")
        t.CopyFrom(numpy_helper.from_array(new, t.name))
    onnx.save(proto, path)


def make(name, dynamo):
    torch.manual_seed(0)
    model, args, in_names, out_names = ARCHS[name]()
    perturb(model, 1)
    calibrate_batchnorm(model, args)
    train = name in LOSS
    model.train(train)
    d = os.path.join(HERE, f"{name}_{'dy' if dynamo else 'ts'}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    path = os.path.join(d, "model.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(model, args, in_names, out_names, path, dynamo, train, not train or name in DYNAMO_OPTIMIZED,
               name in SYMBOLIC)
    proto = onnx.load(path)
    graph_in = [i.name for i in proto.graph.input]
    if graph_in != in_names:
        raise SystemExit(f"{path}: graph inputs {graph_in}, expected {in_names}")
    feeds = {n: a.numpy() for n, a in zip(in_names, args)}
    if name in SYMBOLIC:
        symbolic_dims(proto, path, args[0].shape, os.path.join(d, "dims"))
    for k, n in enumerate(in_names):
        write_tensor(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), feeds[n], n)
    sess, outs = ort_run(path, feeds)
    with torch.no_grad():
        want = model(*args)
    want = [want] if isinstance(want, torch.Tensor) else list(want)
    for o, w, meta in zip(outs, want, sess.get_outputs()):
        err = float(np.max(np.abs(o - w.numpy())))
        if o.shape != tuple(w.shape) or not err <= 1e-4:
            raise SystemExit(f"{path}: ONNX Runtime's {meta.name} differs from torch's by {err}")
    for k, (o, meta) in enumerate(zip(outs, sess.get_outputs())):
        write_tensor(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), o, meta.name)
    if train:
        sgd_reference(model, args, proto, os.path.join(d, "expected_sgd.onnx"))
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
    if size > MAX_DIR_BYTES:
        raise SystemExit(f"{d}: {size} bytes, more than {MAX_DIR_BYTES}")
    opset = next(o.version for o in proto.opset_import if o.domain in ("", "ai.onnx"))
    nparams = sum(p.numel() for p in model.parameters())
    print(f"{os.path.basename(d)}: opset {opset}, {len(proto.graph.node)} nodes, "
          f"{len(proto.graph.initializer)} initializers, {nparams} parameters, {size} bytes")


def main():
    torch.set_num_threads(1)
    names = sys.argv[1:] or list(ARCHS)
    for n in names:
        if n not in ARCHS:
            raise SystemExit(f"unknown model {n}; expected one of {', '.join(ARCHS)}")
    for n in names:
        for dynamo in (False, True):
            if dynamo or n not in DYNAMO_OPTIMIZED:
                make(n, dynamo)
    with open(os.path.join(HERE, "versions.txt"), "w") as f:
        for mod in (torch, torchvision, transformers, onnx, ort):
            f.write(f"{mod.__name__} {mod.__version__}\n")
        import onnxscript
        f.write(f"onnxscript {onnxscript.__version__}\n")


if __name__ == "__main__":
    main()
