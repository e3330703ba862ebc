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
    llama       Llama-like decoder: 4 blocks, d 768, 12 query heads and 4
                key/value heads, RMSNorm, rotary embeddings, SwiGLU MLP of
                2048, sequence 128, vocabulary 8192
    whisper     Whisper-like encoder (whisper-tiny's shape): two 1-d
                convolutions over 80 mel bins of 1000 frames (the second
                of stride 2), 4 blocks, d 384, 6 heads, 500 positions
    resnet18    torchvision's resnet18, batch 1, 224x224
    mobilenet   torchvision's mobilenet_v3_small, batch 1, 224x224
    convnext    torchvision's convnext_tiny, batch 1, 224x224

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


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate, self.up = nn.Linear(d, ffn, bias=False), nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, d = x.shape
        h = self.ln1(x)
        q = self.q(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        # each key/value head repeated for its queries, as transformers'
        # repeat_kv writes it (expand, then reshape)
        rep = self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, rep, t, self.hd).reshape(b, self.heads, t, self.hd)
        v = v[:, :, None].expand(b, self.kv_heads, rep, t, self.hd).reshape(b, self.heads, t, self.hd)
        a = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd) + mask
        y = (torch.softmax(a, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.o(y)
        h = self.ln2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self, vocab=8192, seq=128, d=768, heads=12, kv_heads=4, ffn=2048, layers=4):
        super().__init__()
        self.seq = seq
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([LlamaBlock(d, heads, kv_heads, ffn) for _ in range(layers)])
        self.ln = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        f = torch.outer(torch.arange(t).float(), self.inv_freq)
        e = torch.cat([f, f], dim=-1)
        cos, sin = e.cos(), e.sin()
        mask = torch.triu(torch.full((t, t), -1e9), diagonal=1)
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin, mask)
        return self.head(self.ln(x))


class WhisperEncoder(nn.Module):
    def __init__(self, mels=80, frames=1000, d=384, heads=6, layers=4):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.pos = nn.Parameter(torch.randn(frames // 2, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, heads, False, nn.GELU()) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)

    def forward(self, mel):
        x = nn.functional.gelu(self.conv1(mel))
        x = nn.functional.gelu(self.conv2(x)).transpose(1, 2)
        return self.ln(self.blocks(x + self.pos))


def models():
    ids = torch.randint(0, 8192, (1, 128))
    img = torch.randn(1, 3, 224, 224)
    return {
        "gpt2": (GPT, ids),
        "bert": (BERT, ids),
        "llama": (Llama, ids),
        "whisper": (WhisperEncoder, torch.randn(1, 80, 1000)),
        "vit": (ViT, img),
        "resnet18": (lambda: torchvision.models.resnet18(weights=None), img),
        "mobilenet": (lambda: torchvision.models.mobilenet_v3_small(weights=None), img),
        "convnext": (lambda: torchvision.models.convnext_tiny(weights=None), img),
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
