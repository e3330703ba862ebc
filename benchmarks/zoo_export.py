#!/usr/bin/env python3
"""Export the zoo architectures that benchmarks/cpu_vs_ort.sh times.

    /usr/bin/python3 benchmarks/zoo_export.py [OUT_DIR] [NAME ...]

Writes OUT_DIR/NAME/model.onnx and OUT_DIR/NAME/test_data_set_0/input_0.pb
(default OUT_DIR /tmp/pcc-zoo) for each NAME of

    gpt2        GPT-2-like decoder: 4 blocks, d 768, 12 heads, gelu_new
                (0.5 x (1 + tanh(c (x + 0.044715 x^3))) with torch.pow, as
                transformers writes it), sequence 128, vocabulary 8192
    bert        BERT/MiniLM-like encoder: 6 blocks, d 384, 12 heads, erf
                gelu, sequence 128
    vit         ViT-like: 16x16 patches of a 224x224 image (a strided
                convolution), 4 blocks, d 384, 6 heads
    resnet18    torchvision's resnet18, batch 1, 224x224
    mobilenet   torchvision's mobilenet_v3_small, batch 1, 224x224

all with random weights (seed 0), exported by torch.onnx.export's
TorchScript exporter at opset 17, in eval mode. Needs torch and
torchvision (Debian's python3-torch, python3-torchvision) and onnx. Run by
hand; the models are large, so nothing here is committed.
"""

import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision
from onnx import numpy_helper


class Attention(nn.Module):
    def __init__(self, d, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        a = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        if self.causal:
            mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
            a = a.masked_fill(~mask, -1e9)
        y = torch.softmax(a, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class Block(nn.Module):
    def __init__(self, d, heads, causal, act):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads, causal)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.act = act

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=8192, seq=128, d=768, heads=12, layers=4):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.Sequential(*[Block(d, heads, True, gelu_new) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.head(self.ln(self.blocks(self.wte(ids) + self.wpe(pos))))


class BERT(nn.Module):
    def __init__(self, vocab=8192, seq=128, d=384, heads=12, layers=6):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.ln = nn.LayerNorm(d)
        self.blocks = nn.Sequential(*[Block(d, heads, False, nn.GELU()) for _ in range(layers)])

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.blocks(self.ln(self.wte(ids) + self.wpe(pos)))


class ViT(nn.Module):
    def __init__(self, d=384, heads=6, layers=4, classes=1000):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 16, 16)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 197, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, heads, False, nn.GELU()) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.ln(self.blocks(x))[:, 0])


def models():
    ids = torch.randint(0, 8192, (1, 128))
    img = torch.randn(1, 3, 224, 224)
    return {
        "gpt2": (GPT, ids),
        "bert": (BERT, ids),
        "vit": (ViT, img),
        "resnet18": (lambda: torchvision.models.resnet18(weights=None), img),
        "mobilenet": (lambda: torchvision.models.mobilenet_v3_small(weights=None), img),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/pcc-zoo"
    todo = models()
    names = sys.argv[2:] or list(todo)
    for name in names:
        torch.manual_seed(0)
        make, x = todo[name]
        m = make().eval()
        d = os.path.join(out, name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        path = os.path.join(d, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(m, (x,), path, opset_version=17, input_names=["x"], output_names=["y"])
        onnx.checker.check_model(path)
        t = numpy_helper.from_array(x.numpy(), "x")
        with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(t.SerializeToString())
        print(f"{name}: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")


if __name__ == "__main__":
    np.random.seed(0)
    main()
