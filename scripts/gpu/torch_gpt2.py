#!/usr/bin/env python3
"""torch_gpt2.py [--batch B[,B...]] [--seq T] [--steps S] [--modes f32,tf32,bf16]
   [--budget SECONDS] [--device cuda]

PyTorch eager's GPT-2 small training step, for run-gpu-check to set beside
pcc-run's. The model is written here in plain torch (transformers need not
be installed) as pcc-modelgen's gpt3-125m at --seq 1024 is: 12 pre-LayerNorm
layers, d_model 768, 12 heads, vocabulary 50257, learned positions, fused
QKV with biases, exact (erf) GELU, token table tied to the LM head; causal
attention by scaled_dot_product_attention; mean cross entropy; AdamW
(lr 1e-4, torch's default implementation). Init as GPT-2 (N(0, 0.02),
LayerNorm 1, biases 0). Random token ids, next-token labels, one batch.

For each batch size and mode (f32; tf32: TF32 matmuls; bf16: autocast to
bfloat16), 3 warm-up steps, then S steps timed between two
torch.cuda.synchronize(). One JSON object per line on stdout:
{"batch": 1, "seq": 1024, "mode": "bf16", "ms": 39.3, "loss": 10.9, "steps": 10}
or {"batch": ..., "mode": ..., "error": "..."} (out of memory, over the
budget). The first line names torch, CUDA and the GPU.
"""
import argparse
import json
import math
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--batch', default='1,8')
    ap.add_argument('--seq', type=int, default=1024)
    ap.add_argument('--steps', type=int, default=10)
    ap.add_argument('--modes', default='f32,tf32,bf16')
    ap.add_argument('--budget', type=float, default=300, help='seconds in all; later runs are skipped')
    ap.add_argument('--layers', type=int, default=12)
    ap.add_argument('--device', default='cuda')
    a = ap.parse_args()
    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as e:
        print(json.dumps({'error': 'no torch: %s' % e}), flush=True)
        return 1
    dev = a.device
    if dev == 'cuda' and not torch.cuda.is_available():
        print(json.dumps({'error': 'torch sees no CUDA device (torch %s)' % torch.__version__}), flush=True)
        return 1
    print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda,
                      'gpu': torch.cuda.get_device_name(0) if dev == 'cuda' else 'cpu'}), flush=True)
    V, H, NH, L = 50257, 768, 12, a.layers

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(H)
            self.c_attn = nn.Linear(H, 3 * H)
            self.attn_proj = nn.Linear(H, H)
            self.ln_2 = nn.LayerNorm(H)
            self.c_fc = nn.Linear(H, 4 * H)
            self.mlp_proj = nn.Linear(4 * H, H)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(H, dim=2)
            q, k, v = (z.view(b, t, NH, H // NH).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.attn_proj(y.transpose(1, 2).reshape(b, t, H))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self, T):
            super().__init__()
            self.wte = nn.Embedding(V, H)
            self.wpe = nn.Embedding(T, H)
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(H)
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, 0, 0.02)
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)

        def forward(self, ids, labels):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            logits = self.ln_f(x) @ self.wte.weight.t()
            return F.cross_entropy(logits.float().view(-1, V), labels.view(-1))

    t_start = time.time()
    for B in [int(x) for x in a.batch.split(',')]:
        for mode in a.modes.split(','):
            row = {'batch': B, 'seq': a.seq, 'mode': mode}
            if time.time() - t_start > a.budget:
                row['error'] = 'skipped: over the %g s budget' % a.budget
                print(json.dumps(row), flush=True)
                continue
            model = opt = None
            try:
                torch.manual_seed(0)
                torch.backends.cuda.matmul.allow_tf32 = mode == 'tf32'
                torch.backends.cudnn.allow_tf32 = mode == 'tf32'
                model = GPT(a.seq).to(dev)
                opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
                ids = torch.randint(0, V, (B, a.seq + 1), device=dev)
                x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

                def step():
                    opt.zero_grad(set_to_none=True)
                    with torch.autocast(dev, dtype=torch.bfloat16, enabled=mode == 'bf16'):
                        loss = model(x, y)
                    loss.backward()
                    opt.step()
                    return loss
                for _ in range(3):
                    step()
                if dev == 'cuda':
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(a.steps):
                    loss = step()
                if dev == 'cuda':
                    torch.cuda.synchronize()
                row.update(ms=(time.perf_counter() - t0) / a.steps * 1e3, loss=float(loss.item()), steps=a.steps,
                           params=sum(p.numel() for p in model.parameters()))
                if not math.isfinite(row['loss']):
                    row['error'] = 'loss is not finite'
            except Exception as e:  # out of memory and the like: this run only
                row['error'] = ('%s: %s' % (type(e).__name__, e)).splitlines()[0][:300]
            print(json.dumps(row), flush=True)
            del model, opt
            if dev == 'cuda':
                torch.cuda.empty_cache()
    return 0


if __name__ == '__main__':
    sys.exit(main())
