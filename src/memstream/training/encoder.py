"""The engine's encoder in PyTorch, for training the reader (training only: never imported at
run time). It computes what ``e5.c`` computes: embeddings (word, position from 0, type 0)
then layer norm; per layer post-norm attention and a GELU (erf) feed-forward; the mean of
every token's last state, bos and eos included, L2-normalised. The word, position and type
embeddings stay frozen (the reader shares them with the embedder); the layers train with
their matrices seen through q4_0 rounding (a straight-through estimator), since the engine
can only run them as q4_0 blocks and a tuning smaller than a rounding step would round
away."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from ..embed.e5file import F32, Q4, QK, E5File, Tensor, quantize_q4

__all__ = ["Encoder", "fake_q4"]


def fake_q4(w: torch.Tensor) -> torch.Tensor:
    """``w`` as the engine will run it (q4_0, blocks of ``QK`` along each row), with the
    gradient of ``w`` itself."""
    x = w.reshape(-1, QK)
    idx = x.abs().argmax(dim=1, keepdim=True)
    d = torch.gather(x, 1, idx) / -8.0
    d = d.to(torch.float16).to(torch.float32)  # the scale is stored as float16
    safe = torch.where(d == 0, torch.ones_like(d), d)
    q = torch.clamp(torch.floor(x / safe + 8.5), 0, 15)
    deq = torch.where(d == 0, torch.zeros_like(x), (q - 8.0) * d).reshape(w.shape)
    return w + (deq - w).detach()


class _Linear(nn.Module):
    def __init__(self, w: np.ndarray, b: np.ndarray) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(w))
        self.bias = nn.Parameter(torch.tensor(b))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = nn.functional.linear(x, fake_q4(self.weight), self.bias)
        return out


class _Norm(nn.Module):
    def __init__(self, w: np.ndarray, b: np.ndarray, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(w))
        self.bias = nn.Parameter(torch.tensor(b))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


class _Layer(nn.Module):
    def __init__(self, f: E5File, n: int) -> None:
        super().__init__()
        s = f.shape
        t = f.tensors

        def lin(name: str, rows: int) -> _Linear:
            return _Linear(t[f"l{n}.{name}.w"].array(rows).copy(),
                           t[f"l{n}.{name}.b"].array().copy())

        self.q, self.k, self.v = lin("q", s.hidden), lin("k", s.hidden), lin("v", s.hidden)
        self.ao, self.fi, self.fo = lin("ao", s.hidden), lin("fi", s.ffn), lin("fo", s.hidden)
        self.aln = _Norm(t[f"l{n}.aln.w"].array().copy(), t[f"l{n}.aln.b"].array().copy(),
                         s.eps)
        self.oln = _Norm(t[f"l{n}.oln.w"].array().copy(), t[f"l{n}.oln.b"].array().copy(),
                         s.eps)
        self.heads = s.heads

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, length, h = x.shape
        hd = h // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, length, self.heads, hd).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        att = att.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, length, h)
        x = self.aln(x + self.ao(ctx))
        out: torch.Tensor = self.oln(x + self.fo(nn.functional.gelu(self.fi(x))))
        return out


class Encoder(nn.Module):
    """The encoder of a model file, its layers trainable."""

    word: torch.Tensor
    pos: torch.Tensor
    type0: torch.Tensor
    eln_w: torch.Tensor
    eln_b: torch.Tensor

    def __init__(self, f: E5File) -> None:
        super().__init__()
        s = f.shape
        t = f.tensors
        self.register_buffer("word", torch.tensor(t["emb.word"].array().reshape(-1, s.hidden)))
        self.register_buffer("pos", torch.tensor(t["emb.pos"].array().reshape(-1, s.hidden)))
        self.register_buffer("type0", torch.tensor(t["emb.type"].array().reshape(-1, s.hidden)[0]))
        self.register_buffer("eln_w", torch.tensor(t["emb.ln.w"].array()))
        self.register_buffer("eln_b", torch.tensor(t["emb.ln.b"].array()))
        self.eps = s.eps
        self.layers = nn.ModuleList(_Layer(f, n) for n in range(s.layers))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Each row's pooled, L2-normalised vector (``mask``: the row's real tokens)."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.word[ids] + self.pos[positions][None] + self.type0
        x = nn.functional.layer_norm(x, x.shape[-1:], self.eln_w, self.eln_b, self.eps)
        for layer in self.layers:
            x = layer(x, mask)
        m = mask.to(x.dtype)[..., None]
        pooled = (x * m).sum(1) / m.sum(1)
        return nn.functional.normalize(pooled, dim=-1)

    def layer_tensors(self) -> dict[str, Tensor]:
        """The layers as the model file holds them (matrices as q4_0 blocks)."""
        out: dict[str, Tensor] = {}
        for n, layer in enumerate(self.layers):
            for part in ("q", "k", "v", "ao", "fi", "fo"):
                lin: Any = getattr(layer, part)
                w = lin.weight.detach().cpu().numpy().astype(np.float32)
                out[f"l{n}.{part}.w"] = Tensor(Q4, w.size, quantize_q4(w))
                out[f"l{n}.{part}.b"] = _f32(lin.bias)
            for part in ("aln", "oln"):
                norm: Any = getattr(layer, part)
                out[f"l{n}.{part}.w"] = _f32(norm.weight)
                out[f"l{n}.{part}.b"] = _f32(norm.bias)
        return out


def _f32(p: torch.Tensor) -> Tensor:
    a = p.detach().cpu().numpy().astype(np.float32)
    return Tensor(F32, a.size, a.tobytes())
