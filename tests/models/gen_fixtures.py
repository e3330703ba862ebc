#!/usr/bin/env python3
"""Generate the ONNX test fixtures under tests/models/.

Run by hand (never by CI) with Debian's python3-torch (1.13) and python3-onnx
(1.12):

    python3 tests/models/gen_fixtures.py            # every model
    python3 tests/models/gen_fixtures.py gpt moe    # only these families

Each model is exported with torch.onnx.export at opset 13 and opset 17 into
tests/models/<name>_op<N>/ with the layout of the ONNX backend node tests:

    model.onnx
    test_data_set_0/input_0.pb, input_1.pb, ...   (graph inputs, in order)
    test_data_set_0/output_0.pb, ...              (graph outputs, in order)

Every .pb file is a serialized onnx.TensorProto named after the graph
input/output it belongs to.  Expected outputs are PyTorch's own float32
results, not onnxruntime's.  Seeds are fixed, so the files are reproducible.
Afterwards every model is checked with onnx.checker and an op histogram is
written to tests/models/OPS.md (always over every fixture present, so
regenerating some families keeps the others' rows).
"""

import argparse
import collections
import copy
import io
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
    from onnx import numpy_helper
except ImportError:
    # A pyenv (or venv) python3 may shadow Debian's, which has the packages.
    if os.path.exists("/usr/bin/python3") and sys.executable != "/usr/bin/python3":
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    raise

HERE = os.path.dirname(os.path.abspath(__file__))
OPSETS = (13, 17)


# --------------------------------------------------------------------------
# Model definitions
# --------------------------------------------------------------------------


class MLP(nn.Module):
    """Linear -> GELU -> Linear."""

    def __init__(self, d_in=16, d_hidden=32, d_out=8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MLPLoss(nn.Module):
    """The MLP followed by a mean squared error against a target.

    Written out by hand: torch 1.13 cannot export aten::mse_loss at any opset.
    """

    def __init__(self):
        super().__init__()
        self.mlp = MLP()

    def forward(self, x, target):
        return ((self.mlp(x) - target) ** 2).mean()


class CausalSelfAttention(nn.Module):
    """GPT-2 attention: fused QKV projection, heads via view/transpose.

    use_where selects how the causal mask is applied (torch.where vs
    masked_fill) so that both constructs appear in the export.
    """

    def __init__(self, d_model, n_head, block_size, use_where):
        super().__init__()
        self.n_head = n_head
        self.use_where = use_where
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        hd = C // self.n_head
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        causal = self.mask[:, :, :T, :T]
        if self.use_where:
            att = torch.where(causal, att, torch.tensor(float("-inf")))
        else:
            att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTBlock(nn.Module):
    """Pre-LayerNorm decoder block."""

    def __init__(self, d_model, n_head, block_size, gelu_approx, use_where):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, block_size, use_where)
        self.ln_2 = nn.LayerNorm(d_model)
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.c_proj = nn.Linear(4 * d_model, d_model)
        self.gelu_approx = gelu_approx

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate=self.gelu_approx)
        return x + self.c_proj(h)


class GPT(nn.Module):
    """2-layer GPT-2 style decoder; layer 0 uses exact (erf) GELU and
    masked_fill, layer 1 tanh-approximate GELU and torch.where."""

    def __init__(self, vocab=64, d_model=32, n_head=2, block_size=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(block_size, d_model)
        self.h = nn.ModuleList(
            [
                GPTBlock(d_model, n_head, block_size, "none", use_where=False),
                GPTBlock(d_model, n_head, block_size, "tanh", use_where=True),
            ]
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, ids):
        T = ids.size(1)
        pos = torch.arange(0, T, dtype=torch.long, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class GPTLoss(nn.Module):
    """GPT returning the mean token cross-entropy loss."""

    def __init__(self):
        super().__init__()
        self.gpt = GPT()

    def forward(self, ids, labels):
        logits = self.gpt(ids)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))


class BertLayer(nn.Module):
    """Post-LayerNorm encoder layer with an additive attention mask."""

    def __init__(self, d_model, n_head, d_ff):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.attn_out = nn.Linear(d_model, d_model)
        self.ln_attn = nn.LayerNorm(d_model, eps=1e-12)
        self.ff_in = nn.Linear(d_model, d_ff)
        self.ff_out = nn.Linear(d_ff, d_model)
        self.ln_ff = nn.LayerNorm(d_model, eps=1e-12)

    def split_heads(self, x):
        B, T, C = x.size()
        return x.view(B, T, self.n_head, C // self.n_head).permute(0, 2, 1, 3)

    def forward(self, x, add_mask):
        B, T, C = x.size()
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // self.n_head)
        probs = F.softmax(scores + add_mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(B, T, C)
        x = self.ln_attn(x + self.attn_out(ctx))
        return self.ln_ff(x + self.ff_out(F.gelu(self.ff_in(x))))


class Bert(nn.Module):
    """2-layer BERT-style encoder; outputs the sequence and a pooled [CLS]."""

    def __init__(self, vocab=64, d_model=32, n_head=2, d_ff=64, max_pos=16, n_types=2):
        super().__init__()
        self.word = nn.Embedding(vocab, d_model)
        self.position = nn.Embedding(max_pos, d_model)
        self.token_type = nn.Embedding(n_types, d_model)
        self.ln_emb = nn.LayerNorm(d_model, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(d_model, n_head, d_ff) for _ in range(2)])
        self.pooler = nn.Linear(d_model, d_model)

    def forward(self, ids, token_type_ids, attention_mask):
        T = ids.size(1)
        pos = torch.arange(T, dtype=torch.long).unsqueeze(0)
        x = self.word(ids) + self.position(pos) + self.token_type(token_type_ids)
        x = self.ln_emb(x)
        # [B, T] of 0/1 -> [B, 1, 1, T] of 0 / -10000
        add_mask = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -10000.0
        for layer in self.layers:
            x = layer(x, add_mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


class ViTBlock(nn.Module):
    """Pre-LayerNorm transformer block using nn.MultiheadAttention."""

    def __init__(self, d_model, n_head, d_ff):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, x):
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class ViT(nn.Module):
    """Tiny ViT: 16x16x3 image, 4x4 patches (16 tokens + cls), 2 blocks."""

    def __init__(self, image=16, patch=4, d_model=32, n_head=2, d_ff=64, n_classes=10):
        super().__init__()
        n_patches = (image // patch) ** 2
        self.patch_embed = nn.Conv2d(3, d_model, kernel_size=patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n_patches + 1, d_model) * 0.02)
        self.blocks = nn.ModuleList([ViTBlock(d_model, n_head, d_ff) for _ in range(2)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_classes)

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)  # [B, 16, D]
        cls = self.cls_token.expand(x.size(0), -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x)[:, 0])


class BasicBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class ResNet(nn.Module):
    """Stem conv/bn/relu/maxpool, 2 BasicBlocks (second downsamples), head."""

    def __init__(self, n_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = BasicBlock(16, 16, stride=1)
        self.layer2 = BasicBlock(16, 32, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class UNet(nn.Module):
    """Tiny UNet for segmentation: two encoder levels and a strided-conv
    bottleneck; the decoder upsamples once with ConvTranspose2d (k3, stride
    2, padding 1, output_padding 1) plus a nearest nn.Upsample skip from
    the bottleneck, and once with a bilinear nn.Upsample plus a k2s2
    ConvTranspose2d; skips are concatenated; a 1x1 conv gives per-pixel
    class logits."""

    def __init__(self, c_in=3, n_classes=4):
        super().__init__()
        self.enc1 = nn.Conv2d(c_in, 8, 3, padding=1)
        self.enc2 = nn.Conv2d(8, 16, 3, padding=1)
        self.mid = nn.Conv2d(16, 16, 3, stride=2, padding=1)
        self.up1 = nn.ConvTranspose2d(16, 16, 3, stride=2, padding=1, output_padding=1)
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.dec1 = nn.Conv2d(32, 16, 3, padding=1)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.up2t = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.dec2 = nn.Conv2d(24, 8, 3, padding=1)
        self.head = nn.Conv2d(8, n_classes, 1)

    def forward(self, x):
        e1 = F.relu(self.enc1(x))                       # [B, 8, H, W]
        e2 = F.relu(self.enc2(F.max_pool2d(e1, 2)))     # [B, 16, H/2, W/2]
        m = F.relu(self.mid(e2))                        # [B, 16, H/4, W/4]
        u1 = self.up1(m) + self.up_nearest(m)           # [B, 16, H/2, W/2]
        d1 = F.relu(self.dec1(torch.cat([u1, e2], 1)))
        u2 = self.up2(d1) + self.up2t(d1)               # [B, 16, H, W]
        d2 = F.relu(self.dec2(torch.cat([u2, e1], 1)))
        return self.head(d2)


class MoE(nn.Module):
    """Top-2 Mixture-of-Experts layer with capacity-limited dispatch.

    router -> softmax -> topk(2) -> gate weights (gathered, renormalized).
    Each (token, choice) pair gets a slot in its expert's buffer from a
    one_hot + cumsum running count (first choices take priority); pairs past
    the capacity are dropped.  Tokens are scattered (index_put -> ScatterND)
    into a flat buffer whose first E*C rows are the expert buffers and whose
    tail holds one distinct overflow row per pair, so no index is ever
    written twice.  The experts run batched with einsum, results are gathered
    back per pair and combined with another einsum.
    """

    def __init__(self, d=16, d_ff=32, n_experts=4, k=2, capacity=4):
        super().__init__()
        self.n_experts, self.k, self.capacity = n_experts, k, capacity
        self.router = nn.Linear(d, n_experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(n_experts, d, d_ff) / math.sqrt(d))
        self.b1 = nn.Parameter(torch.randn(n_experts, 1, d_ff) * 0.1)
        self.w2 = nn.Parameter(torch.randn(n_experts, d_ff, d) / math.sqrt(d_ff))
        self.b2 = nn.Parameter(torch.randn(n_experts, 1, d) * 0.1)

    def forward(self, x):
        T, D = x.shape
        E, K, C = self.n_experts, self.k, self.capacity
        probs = F.softmax(self.router(x), dim=-1)  # [T, E]
        _, expert_idx = torch.topk(probs, K, dim=-1)  # [T, K]
        gate = torch.gather(probs, 1, expert_idx)  # [T, K]
        gate = gate / gate.sum(dim=-1, keepdim=True)

        # Slot of each (token, choice) inside its expert, choice-major order.
        onehot = F.one_hot(expert_idx.t().reshape(-1), E)  # [K*T, E]
        position = (torch.cumsum(onehot, dim=0) - 1) * onehot
        position = position.sum(dim=-1).view(K, T).t()  # [T, K]
        keep = position < C  # [T, K]
        overflow = E * C + torch.arange(T * K).view(T, K)
        slot = torch.where(keep, expert_idx * C + position, overflow)  # [T, K]

        # Dispatch: scatter token rows into the expert buffers.
        token = torch.arange(T).unsqueeze(1).expand(T, K)
        buf = torch.zeros(E * C + T * K, D)
        buf[slot.reshape(-1)] = x[token.reshape(-1)]
        expert_in = buf[: E * C].view(E, C, D)

        # Experts: batched 2-layer MLPs.
        h = F.gelu(torch.einsum("ecd,edh->ech", expert_in, self.w1) + self.b1)
        expert_out = torch.einsum("ech,ehd->ecd", h, self.w2) + self.b2  # [E, C, D]

        # Combine: gather each pair's result, weight it, sum over choices.
        flat_out = torch.cat([expert_out.view(E * C, D), torch.zeros(T * K, D)], dim=0)
        picked = flat_out[slot.reshape(-1)].view(T, K, D)
        weight = gate * keep.to(gate.dtype)
        return torch.einsum("tk,tkd->td", weight, picked)


# --------------------------------------------------------------------------
# Fixture specifications: model, example inputs, names, export options
# --------------------------------------------------------------------------


def gen(seed):
    return torch.Generator().manual_seed(seed)


def spec(model, inputs, input_names, output_names, **export_kwargs):
    return dict(
        model=model,
        inputs=inputs,
        input_names=input_names,
        output_names=output_names,
        export_kwargs=export_kwargs,
        external_data=False,
    )


def mlp_spec():
    torch.manual_seed(1)
    x = torch.randn(4, 16, generator=gen(101))
    return spec(MLP(), (x,), ["x"], ["y"])


def mlp_ext_spec():
    s = mlp_spec()
    s["external_data"] = True
    return s


def mlp_loss_spec():
    torch.manual_seed(2)
    x = torch.randn(4, 16, generator=gen(102))
    target = torch.randn(4, 8, generator=gen(202))
    return spec(MLPLoss(), (x, target), ["x", "target"], ["loss"])


def gpt_ids(seed, batch=2, seq=8, vocab=64):
    return torch.randint(0, vocab, (batch, seq), generator=gen(seed))


def gpt_spec():
    torch.manual_seed(3)
    return spec(GPT(), (gpt_ids(103),), ["ids"], ["logits"])


def gpt_dyn_spec():
    s = gpt_spec()
    s["export_kwargs"]["dynamic_axes"] = {
        "ids": {0: "batch", 1: "seq"},
        "logits": {0: "batch", 1: "seq"},
    }
    return s


def gpt_loss_spec():
    torch.manual_seed(4)
    ids = gpt_ids(104)
    labels = torch.cat([ids[:, 1:], gpt_ids(204, seq=1)], dim=1)  # next token
    return spec(GPTLoss(), (ids, labels), ["ids", "labels"], ["loss"])


def bert_spec():
    torch.manual_seed(5)
    ids = gpt_ids(105)
    token_type_ids = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 1, 1]])
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0, 0]])
    return spec(
        Bert(),
        (ids, token_type_ids, attention_mask),
        ["ids", "token_type_ids", "attention_mask"],
        ["last_hidden_state", "pooled"],
    )


def vit_spec():
    torch.manual_seed(6)
    img = torch.randn(2, 3, 16, 16, generator=gen(106))
    return spec(ViT(), (img,), ["image"], ["logits"])


def randomize_batchnorm(model, seed):
    """Give every BatchNorm non-trivial affine params and running stats."""
    g = gen(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            with torch.no_grad():
                m.weight.copy_(1.0 + 0.2 * torch.randn(n, generator=g))
                m.bias.copy_(0.2 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.2 * torch.randn(n, generator=g))
                m.running_var.copy_(1.0 + 0.5 * torch.rand(n, generator=g))
    return model


def resnet_spec():
    torch.manual_seed(7)
    model = randomize_batchnorm(ResNet(), 207)
    img = torch.randn(2, 3, 16, 16, generator=gen(107))
    return spec(model, (img,), ["image"], ["logits"])


def resnet_train_spec():
    s = resnet_spec()
    s["model"].train()
    s["export_kwargs"].update(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    return s


def moe_spec():
    torch.manual_seed(8)
    x = torch.randn(8, 16, generator=gen(108))
    return spec(MoE(), (x,), ["x"], ["y"])


# name -> (spec function, opsets)
def unet_spec():
    torch.manual_seed(9)
    img = torch.randn(2, 3, 16, 16, generator=gen(109))
    return spec(UNet(), (img,), ["image"], ["logits"])


FIXTURES = {
    "mlp": (mlp_spec, OPSETS),
    "mlp_ext": (mlp_ext_spec, OPSETS),
    "mlp_loss": (mlp_loss_spec, OPSETS),
    "gpt": (gpt_spec, OPSETS),
    "gpt_dyn": (gpt_dyn_spec, (17,)),
    "gpt_loss": (gpt_loss_spec, OPSETS),
    "bert": (bert_spec, OPSETS),
    "vit": (vit_spec, OPSETS),
    "resnet": (resnet_spec, OPSETS),
    "resnet_train": (resnet_train_spec, OPSETS),
    "moe": (moe_spec, OPSETS),
    "unet": (unet_spec, OPSETS),
}


# --------------------------------------------------------------------------
# Export and test data
# --------------------------------------------------------------------------


def torch_outputs(model, inputs):
    """Run the model in its current mode on a private copy (train-mode
    BatchNorm updates running stats) and return a flat list of arrays."""
    with torch.no_grad():
        out = copy.deepcopy(model)(*inputs)
    if not isinstance(out, (tuple, list)):
        out = (out,)
    return [o.detach().numpy() for o in out]


def export(s, opset):
    """Export a fresh copy of the spec's model, return the onnx ModelProto."""
    model = copy.deepcopy(s["model"])
    if not s["export_kwargs"].get("training"):
        model.eval()
    kwargs = dict(do_constant_folding=True)
    kwargs.update(s["export_kwargs"])
    buf = io.BytesIO()
    torch.onnx.export(
        model,
        s["inputs"],
        buf,
        opset_version=opset,
        input_names=s["input_names"],
        output_names=s["output_names"],
        **kwargs,
    )
    return onnx.load_model_from_string(buf.getvalue())


def restore_buffers(proto, model):
    """Tracing in train mode runs BatchNorm, which updates the running stats
    that become initializers; put back the values the model had."""
    buffers = dict(model.named_buffers())
    for init in proto.graph.initializer:
        if init.name in buffers:
            init.CopyFrom(numpy_helper.from_array(buffers[init.name].numpy(), init.name))


def pin_output_shapes(proto, arrays):
    """torch leaves some static outputs (e.g. an Einsum result) with
    generated symbolic dims; a static export gets the concrete shapes."""
    for out, arr in zip(proto.graph.output, arrays):
        shape = out.type.tensor_type.shape
        assert len(shape.dim) == arr.ndim, (out.name, arr.shape)
        for dim, n in zip(shape.dim, arr.shape):
            if dim.dim_param:
                dim.Clear()
                dim.dim_value = n


def write_tensor(path, array, name):
    tensor = numpy_helper.from_array(np.asarray(array, order="C"), name=name)  # keeps 0-d
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def write_fixture(name, s, opset, out_root):
    model = s["model"]
    if not s["export_kwargs"].get("training"):
        model.eval()
    expected = torch_outputs(model, s["inputs"])
    proto = export(s, opset)
    if s["export_kwargs"].get("training"):
        restore_buffers(proto, model)
    if "dynamic_axes" not in s["export_kwargs"]:
        pin_output_shapes(proto, expected)

    graph_inputs = [i.name for i in proto.graph.input]
    graph_outputs = [o.name for o in proto.graph.output]
    if graph_inputs != s["input_names"]:
        raise RuntimeError(f"{name}: graph inputs {graph_inputs} != {s['input_names']}")
    if len(graph_outputs) != len(expected):
        raise RuntimeError(
            f"{name}: graph has outputs {graph_outputs}, torch returned {len(expected)}"
        )

    d = os.path.join(out_root, name)
    shutil.rmtree(d, ignore_errors=True)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data)
    model_path = os.path.join(d, "model.onnx")
    if s["external_data"]:
        onnx.save_model(
            proto,
            model_path,
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location="weights.bin",
            size_threshold=0,
        )
    else:
        onnx.save_model(proto, model_path)

    for i, (n, t) in enumerate(zip(graph_inputs, s["inputs"])):
        write_tensor(os.path.join(data, f"input_{i}.pb"), t.numpy(), n)
    for i, (n, a) in enumerate(zip(graph_outputs, expected)):
        write_tensor(os.path.join(data, f"output_{i}.pb"), a, n)
    return d


# --------------------------------------------------------------------------
# Checking and the op summary
# --------------------------------------------------------------------------


def check_and_count(d):
    """onnx.checker on the saved model (path-based, so external data
    resolves); return (op histogram, parameter count, file size)."""
    model_path = os.path.join(d, "model.onnx")
    onnx.checker.check_model(model_path)
    proto = onnx.load(model_path)  # loads external data too
    onnx.checker.check_model(proto)
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    n_params = sum(int(np.prod(t.dims)) for t in proto.graph.initializer)
    size = sum(
        os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(d) for f in files
    )
    return ops, n_params, size


def dim_str(vi):
    dims = vi.type.tensor_type.shape.dim
    return "[" + ",".join(x.dim_param or str(x.dim_value) for x in dims) + "]"


def write_ops_md(rows, path):
    lines = [
        "# Fixture op summary",
        "",
        "Generated by `gen_fixtures.py`; do not edit by hand.  Counts are ONNX",
        "node op types in each `model.onnx` main graph (no subgraphs occur).",
        "",
        "| model | opset | params | inputs -> outputs | ops (count) |",
        "| --- | --- | --- | --- | --- |",
    ]
    all_ops = collections.Counter()
    for name, opset, ops, n_params, io_sig in rows:
        all_ops.update(ops)
        hist = ", ".join(f"{op} {c}" for op, c in sorted(ops.items()))
        lines.append(f"| `{name}` | {opset} | {n_params} | {io_sig} | {hist} |")
    lines += [
        "",
        "## All op types used",
        "",
        ", ".join(sorted(all_ops)),
        "",
        "## Notes",
        "",
        "- Opset 13 has no `LayerNormalization`; torch decomposes LayerNorm into",
        "  ReduceMean/Sub/Pow/Add/Sqrt/Div/Mul/Add.  At opset 17 it is one",
        "  `LayerNormalization` node.",
        "- GELU is always decomposed: exact as Div/Erf/Add/Mul, tanh-approximate",
        "  as Mul/Add/Tanh with x*x*x (ONNX `Gelu` only exists from opset 20).",
        "- Static exports have no Shape chains for the GPT/BERT head split (torch",
        "  folds them into constant Reshape shapes); `gpt_dyn_op17` has symbolic",
        "  dims `batch`, `seq` and the Shape->Gather->Unsqueeze->Concat->Reshape",
        "  chains (plus Range for positions, Slice of the causal-mask buffer).",
        "  Its test data is 2x8.  `vit_*` keeps a small Shape/Equal/Where/Expand",
        "  chain from `cls_token.expand(B, -1, -1)`.",
        "- `gpt_*` and `bert_*` contain Identity nodes (torch's aliases of the",
        "  shared/tied weights); the LM head is a MatMul by the tied embedding.",
        "- `gpt_loss_*`: SoftmaxCrossEntropyLoss(reduction='mean',",
        "  ignore_index=-100) on [16,64] logits and [16] int64 labels.",
        "- `mlp_loss_*`: torch 1.13 cannot export `aten::mse_loss` at any opset,",
        "  so the loss is written as `((y - target) ** 2).mean()`.",
        "- Eval-mode `resnet_*`: torch folds BatchNorm into the preceding Conv, so",
        "  no `BatchNormalization` node is left; `resnet_train_*` keeps it with",
        "  training semantics (opset 13: BatchNormalization-9 with 5 outputs, only",
        "  Y used; opset 17: BatchNormalization-15 with `training_mode=1` and 3",
        "  outputs, only Y used).  The running-stat outputs are not graph outputs;",
        "  the running-stat initializers hold the model's pre-export values.",
        "- `moe_*`: capacity 4 per expert; with the fixture input expert 1 gets 6",
        "  assignments, so 2 second-choice assignments are dropped.  ScatterND",
        "  indices are always distinct (dropped pairs go to private overflow rows).",
        "- `mlp_ext_*` keep all initializers in `weights.bin` next to `model.onnx`.",
        "- `unet_*`: two ConvTranspose (k3, stride 2, pads 1, output_padding 1;",
        "  k2, stride 2) and two Resize nodes with constant scales [1,1,2,2]:",
        "  nearest (asymmetric, floor) and linear (half_pixel).",
        "",
    ]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("only", nargs="*", help="model families to generate (default: all)")
    parser.add_argument("--out", default=HERE, help="output root (default: tests/models)")
    args = parser.parse_args()
    unknown = set(args.only) - set(FIXTURES)
    if unknown:
        parser.error(f"unknown models: {sorted(unknown)}; choose from {sorted(FIXTURES)}")

    # The tracer's warnings about Python floats / constant tensors and the
    # removal of num_batches_tracked updates in train mode are expected.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    rows = []
    for family, (make_spec, opsets) in FIXTURES.items():
        for opset in opsets:
            name = f"{family}_op{opset}"
            d = os.path.join(args.out, name)
            if not args.only or family in args.only:
                s = make_spec()  # fresh, seeded model and inputs per export
                write_fixture(name, s, opset, args.out)
            elif not os.path.exists(os.path.join(d, "model.onnx")):
                continue  # OPS.md lists what is there
            ops, n_params, size = check_and_count(d)
            proto = onnx.load(os.path.join(d, "model.onnx"), load_external_data=False)
            io_sig = "; ".join(f"{i.name}{dim_str(i)}" for i in proto.graph.input)
            io_sig += " -> " + "; ".join(f"{o.name}{dim_str(o)}" for o in proto.graph.output)
            rows.append((name, opset, ops, n_params, io_sig))
            if not args.only or family in args.only:
                print(f"{name:20s} {size:8d} bytes  {n_params:6d} params  {sum(ops.values()):4d} nodes")
    write_ops_md(rows, os.path.join(args.out, "OPS.md"))
    print("wrote", os.path.join(args.out, "OPS.md"))


if __name__ == "__main__":
    main()
