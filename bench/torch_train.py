#!/usr/bin/env python3
"""PyTorch (CPU) training of the same model epar train builds, for bench/bench_train.sh.

Decoder-only Transformer: token embedding, N pre-LayerNorm blocks (multi-head causal attention with
q.k/sqrt(head dim), residual, MLP with tanh-GELU, residual), final LayerNorm, output head tied to the
embedding; cross-entropy; AdamW (0.9, 0.95, eps 1e-8, weight decay on the embedding and the weight
matrices) with gradient-norm clipping; float32. Position mechanism (--mechanism): none (the causal mask
only), alibi (z_ij = s_ij - m_h (i - j), slopes 2^(-8 (h+1) / H)) or epar-basic (z_ij = s_ij alpha
exp(-beta (i - j) / T), alpha = beta = 1 as the paper preset), each a precomputed (H, T, T) table applied
to the scaled scores, the way a PyTorch user would write it.

Prints one CSV line: mechanism,threads,batch,length,dim,layers,heads,mlp,vocab,params,seconds_per_step,tokens_per_second,
cpu_seconds_per_step (medians over the timed steps, after warm-up steps; cpu = process CPU time of a step, which
other processes on a shared machine do not inflate).
"""
import argparse
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("torch_train.py: PyTorch is not installed (Debian: apt-get install python3-torch)", file=sys.stderr)
    sys.exit(3)


class Block(nn.Module):
    def __init__(self, C, H, Fdim):
        super().__init__()
        self.H = H
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, Fdim)
        self.fcproj = nn.Linear(Fdim, C)

    def forward(self, x, mask, pos):
        B, T, C = x.shape
        hs = C // self.H
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.H, hs).transpose(1, 2)
        k = k.view(B, T, self.H, hs).transpose(1, 2)
        v = v.view(B, T, self.H, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        if pos is not None:
            att = att * pos[0] if pos[1] == "factor" else att + pos[0]
        att = att.masked_fill(mask[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        x = x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class Model(nn.Module):
    def __init__(self, V, T, C, H, L, Fdim, mechanism):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList([Block(C, H, Fdim) for _ in range(L)])
        self.lnf = nn.LayerNorm(C)
        self.register_buffer("mask", torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1))
        dist = (torch.arange(T).view(T, 1) - torch.arange(T).view(1, T)).clamp(min=0).float()   # i - j, 0 above
        self.pos = None
        if mechanism == "alibi":
            slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)])
            self.pos = (-(slopes.view(H, 1, 1) * dist), "bias")
        elif mechanism == "epar-basic":
            self.pos = (torch.exp(-dist / T).expand(H, T, T).contiguous(), "factor")
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.wte(idx)
        for b in self.blocks:
            x = b(x, self.mask, self.pos)
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--mlp", type=int, default=512)
    ap.add_argument("--vocab", type=int, default=63)
    ap.add_argument("--mechanism", choices=["none", "alibi", "epar-basic"], default="none")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup-steps", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(42)
    m = Model(a.vocab, a.length, a.dim, a.heads, a.layers, a.mlp, a.mechanism)
    decay = [p for n, p in m.named_parameters() if p.dim() == 2]
    other = [p for n, p in m.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(1)
    times, cpus = [], []
    for step in range(a.warmup_steps + a.steps):
        idx = torch.randint(0, a.vocab, (a.batch, a.length), generator=g)
        tgt = torch.randint(0, a.vocab, (a.batch, a.length), generator=g)
        c0, t0 = time.process_time(), time.perf_counter()
        loss = m(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if step >= a.warmup_steps:
            times.append(dt)
            cpus.append(dc)
    s = statistics.median(times)
    params = sum(p.numel() for p in m.parameters())
    print(f"{a.mechanism},{a.threads},{a.batch},{a.length},{a.dim},{a.layers},{a.heads},{a.mlp},{a.vocab},{params},{s:.6g},"
          f"{a.batch * a.length / s:.6g},{statistics.median(cpus):.6g}")


if __name__ == "__main__":
    main()
