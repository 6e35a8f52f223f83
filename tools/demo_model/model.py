"""Tiny llama-architecture transformer in torch, laid out exactly as GGUF `llama` expects.

Core idea: every parameter maps one-to-one onto a GGUF tensor with no reshuffling.
- RMSNorm (weight only), SwiGLU FFN (gate/up/down), untied output head.
- RoPE uses the *interleaved* convention of ggml's rope mode 0 (LLAMA_ROPE_TYPE_NORM):
  within each head the pairs (x[2i], x[2i+1]) are rotated by pos * base^(-2i/head_dim).
  Because the model is trained with this convention, q/k weights are written to GGUF as they
  are; no HF-style rotate-half permutation is needed (or applied).
- GQA: query head h reads kv head h // (n_head / n_head_kv), as ggml's broadcasting does.
- A torch Linear weight has shape (out, in), row-major; GGUF lists dims innermost first, so it
  is written with ne = [in, out] and the same bytes.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


# Debian's python3-torch links the reference (netlib) BLAS, which runs matmuls at ~2 GFLOP/s
# on this machine, while its oneDNN convolutions reach ~10-25 GFLOP/s. So the training path
# expresses every matmul as a 1x1 convolution; the maths is identical (checked against the plain
# F.linear / @ path by check_equivalence()). `fast=False` uses the plain ops.
FAST_OPS = True


def linear(x, w):
    """x (B, T, in) @ w(out, in)^T -> (B, T, out)."""
    if not FAST_OPS:
        return F.linear(x, w)
    y = F.conv2d(x.transpose(1, 2).unsqueeze(-1), w[:, :, None, None])
    return y.squeeze(-1).transpose(1, 2)


def attention(q, k, v, mask_t):
    """q, k, v: (B, T, H, hd) (k, v already expanded to H heads). mask_t: (T_k, T_q) additive.
    Returns (B, T, H*hd)."""
    B, T, H, hd = q.shape
    scale = 1.0 / math.sqrt(hd)
    if not FAST_OPS:
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        att = (qt @ kt.transpose(-1, -2)) * scale + mask_t.t()
        out = torch.softmax(att, dim=-1) @ vt
        return out.transpose(1, 2).reshape(B, T, H * hd)
    # scores^T[b, h, tk, tq] via a grouped 1x1 conv1d: one group per (b, h).
    qi = q.permute(0, 2, 3, 1).reshape(1, B * H * hd, T)
    kw = k.permute(0, 2, 1, 3).reshape(B * H * T, hd, 1)
    st = F.conv1d(qi, kw, groups=B * H).view(B, H, T, T) * scale + mask_t
    pt = torch.softmax(st, dim=2)  # over tk
    vw = v.permute(0, 2, 3, 1).reshape(B * H * hd, T, 1)
    out = F.conv1d(pt.reshape(1, B * H * T, T), vw, groups=B * H)  # (1, B*H*hd, T)
    return out.view(B, H, hd, T).permute(0, 3, 1, 2).reshape(B, T, H * hd)


@dataclass
class Config:
    vocab_size: int = 2048
    dim: int = 256
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_dim: int = 704
    context_length: int = 512
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(head_dim: int, n_pos: int, base: float):
    """cos/sin of shape (n_pos, head_dim/2): angle[p, i] = p * base^(-2i/head_dim)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    """x: (B, T, H, hd). Rotates interleaved pairs (2i, 2i+1) (ggml rope mode 0)."""
    x0 = x[..., 0::2]
    x1 = x[..., 1::2]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    r0 = x0 * c - x1 * s
    r1 = x0 * s + x1 * c
    return torch.stack((r0, r1), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        hd = cfg.head_dim
        self.cfg = cfg
        self.attn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.n_heads * hd, cfg.dim, bias=False)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.w_gate = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)
        self.w_down = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)

    def forward(self, x, cos, sin, mask_t):
        cfg = self.cfg
        B, T, _ = x.shape
        hd = cfg.head_dim
        h = self.attn_norm(x)
        q = apply_rope(linear(h, self.wq.weight).view(B, T, cfg.n_heads, hd), cos, sin)
        k = apply_rope(linear(h, self.wk.weight).view(B, T, cfg.n_kv_heads, hd), cos, sin)
        v = linear(h, self.wv.weight).view(B, T, cfg.n_kv_heads, hd)
        group = cfg.n_heads // cfg.n_kv_heads
        k = k.repeat_interleave(group, dim=2)
        v = v.repeat_interleave(group, dim=2)
        x = x + linear(attention(q, k, v, mask_t), self.wo.weight)
        h = self.ffn_norm(x)
        gate = linear(h, self.w_gate.weight)
        up = linear(h, self.w_up.weight)
        return x + linear(F.silu(gate) * up, self.w_down.weight)


class Llama(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg.head_dim, cfg.context_length, cfg.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self._init()

    def _init(self):
        std = 0.02
        for name, p in self.named_parameters():
            if p.dim() == 2:
                s = std
                if name.endswith("wo.weight") or name.endswith("w_down.weight"):
                    s = std / math.sqrt(2 * self.cfg.n_layers)
                nn.init.normal_(p, mean=0.0, std=s)

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.tok_embd(tokens)
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        # mask_t[tk, tq] = -inf where tk > tq (the future): the transpose of the usual mask.
        mask_t = torch.full((T, T), float("-inf")).tril(-1)
        for layer in self.layers:
            x = layer(x, cos, sin, mask_t)
        return linear(self.norm(x), self.output.weight)

    def gguf_tensors(self):
        """(name, float32 numpy array in torch layout) pairs, in GGUF naming."""
        out = [("token_embd.weight", self.tok_embd.weight)]
        for i, b in enumerate(self.layers):
            p = f"blk.{i}."
            out += [
                (p + "attn_norm.weight", b.attn_norm.weight),
                (p + "attn_q.weight", b.wq.weight),
                (p + "attn_k.weight", b.wk.weight),
                (p + "attn_v.weight", b.wv.weight),
                (p + "attn_output.weight", b.wo.weight),
                (p + "ffn_norm.weight", b.ffn_norm.weight),
                (p + "ffn_gate.weight", b.w_gate.weight),
                (p + "ffn_up.weight", b.w_up.weight),
                (p + "ffn_down.weight", b.w_down.weight),
            ]
        out += [("output_norm.weight", self.norm.weight), ("output.weight", self.output.weight)]
        return [(n, t.detach().float().cpu().numpy()) for n, t in out]

    def load_gguf_tensors(self, tensors):
        """Inverse of gguf_tensors: tensors is a dict name -> numpy array in torch layout."""
        own = dict((n, None) for n, _ in self.gguf_tensors())
        params = {
            "token_embd.weight": self.tok_embd.weight,
            "output_norm.weight": self.norm.weight,
            "output.weight": self.output.weight,
        }
        for i, b in enumerate(self.layers):
            p = f"blk.{i}."
            params.update({
                p + "attn_norm.weight": b.attn_norm.weight,
                p + "attn_q.weight": b.wq.weight,
                p + "attn_k.weight": b.wk.weight,
                p + "attn_v.weight": b.wv.weight,
                p + "attn_output.weight": b.wo.weight,
                p + "ffn_norm.weight": b.ffn_norm.weight,
                p + "ffn_gate.weight": b.w_gate.weight,
                p + "ffn_up.weight": b.w_up.weight,
                p + "ffn_down.weight": b.w_down.weight,
            })
        assert set(own) == set(params)
        with torch.no_grad():
            for name, param in params.items():
                arr = torch.from_numpy(tensors[name].astype("float32")).reshape(param.shape)
                param.copy_(arr)
