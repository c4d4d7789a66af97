"""Fit the learned ranking stage's weights (retrieval.rerank) on a LoCoMo file.

Every conversation is indexed as in the LoCoMo benchmark; every question is searched with the
stage off, and its candidates' features are kept with which of them are evidence. A linear
model is fitted with a listwise objective: for each question, the log of the probability that a
softmax over its candidates' scores puts on its evidence (Adam, L2 penalty, features
standardised). Before the final fit on everything, each conversation is held out in turn and
scored by a model fitted on the others: those figures say how well the weights carry to
conversations they never saw, which is what the shipped weights will meet.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..engine.memory import Memory
from ..errors import InvalidInput
from ..filters import Selection
from ..retrieval.learned import adam
from ..retrieval.rerank import FEATURES, Model
from .locomo import load

#: the fit's settings (fixed: not tuned per run)
L2, EPOCHS, LEARNING_RATE = 1e-2, 400, 0.03


def collect(path: str | Path, *, db: str = ":memory:", embedder: str | None = None,
            progress: Callable[[str], Any] | None = None, limit: int | None = None
            ) -> list[list[tuple[np.ndarray, np.ndarray]]]:
    """Per conversation, per question: its candidates' (features, labels)."""
    from ..engine.search import run_search
    from ..retrieval.pipeline import SearchParams
    from ..retrieval.scoring import resolve_weights

    out = []
    with Memory(db, embedder=embedder, config=Config(reflection_threshold=0), llm=None) as mem:
        if mem.embedder is None:
            raise RuntimeError("fitting the ranking stage needs the embedding model")
        params = SearchParams.of(mem.config, k=10, weights=resolve_weights("recall"),
                                 rerank=False)
        for conv in load(path)[:limit]:
            ns = "locomo-" + re.sub(r"[^A-Za-z0-9._-]", "-", conv.sample_id)
            mem.delete_all(namespace=ns)
            mem.add_many(({"text": t.text, "at": t.at, "metadata": {"dia_id": t.dia_id}}
                          for t in conv.turns), namespace=ns)
            mem.flush()
            dia = {r.id: r.metadata["dia_id"] for r in mem.get_all(
                namespace=ns, limit=None, include_invalid=True)}
            now = max(t.at for t in conv.turns) + 86400
            groups = []
            for q in conv.questions:
                seen: list[tuple[list[str], np.ndarray]] = []

                def keep(ids: list[str], x: np.ndarray,
                         into: list[tuple[list[str], np.ndarray]] = seen) -> None:
                    into.append((ids, x))

                run_search(mem.store, Selection(ns), q.text, mem.embedder.embed_query(q.text),
                           now, params, observe=keep)
                if not seen:
                    continue
                ids, x = seen[0]
                groups.append((x, np.array([dia[i] in q.evidence for i in ids], dtype=np.float64)))
            out.append(groups)
            if progress:
                progress(conv.sample_id)
    return out


def fit(groups: list[tuple[np.ndarray, np.ndarray]]) -> Model:
    """The listwise linear fit (see the module docstring), on the groups with evidence."""
    groups = [(gx, gy) for gx, gy in groups if gy.any()]
    if not groups:
        raise InvalidInput("no question reached the ranking stage with its evidence among the "
                           "candidates: nothing to fit on (fit on whole LoCoMo conversations)")
    size = max(len(y) for _, y in groups)
    f = len(FEATURES)
    x = np.zeros((len(groups), size, f))
    y = np.zeros((len(groups), size))
    mask = np.zeros((len(groups), size), dtype=bool)
    for n, (gx, gy) in enumerate(groups):
        x[n, : len(gy)], y[n, : len(gy)], mask[n, : len(gy)] = gx, gy, True
    flat = x[mask]
    mean, std = flat.mean(0), flat.std(0)
    std[std == 0] = 1.0
    xn = np.where(mask[..., None], (x - mean) / std, 0.0)

    def gradient(w: np.ndarray) -> np.ndarray:  # of -log(the mass on the evidence)
        s = np.where(mask, xn @ w, -np.inf)
        s -= s.max(1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(1, keepdims=True)
        on = (p * y).sum(1, keepdims=True)
        grad: np.ndarray = np.einsum("qc,qcf->f", (p - p * y / on) / len(groups), xn) + L2 * w
        return grad

    return Model(mean, std, adam(gradient, f, epochs=EPOCHS, rate=LEARNING_RATE))


def any_at(model: Model | None, groups: list[tuple[np.ndarray, np.ndarray]], k: int) -> float:
    """recall_any@k of the stage alone, over every question (one whose evidence is not among
    the candidates counts as a miss; None: the fused order)."""
    hits = 0
    for x, y in groups:
        order = np.arange(len(y)) if model is None else np.argsort(-model.score(x), kind="stable")
        hits += bool(y[order[:k]].any())
    return hits / len(groups) if groups else 0.0


def run(path: str | Path, out: str | Path, *, db: str = ":memory:", embedder: str | None = None,
        progress: Callable[[str], Any] | None = None, limit: int | None = None
        ) -> dict[str, Any]:
    """Fit on the first ``limit`` conversations (all by default), each held out in turn."""
    per_conv = collect(path, db=db, embedder=embedder, progress=progress, limit=limit)
    report: dict[str, Any] = {"held_out": []}
    for n, held in enumerate(per_conv):
        model = fit([g for m, conv in enumerate(per_conv) if m != n for g in conv])
        report["held_out"].append({
            "questions": len(held), "fused@5": round(any_at(None, held, 5), 4),
            "stage@5": round(any_at(model, held, 5), 4),
            "fused@10": round(any_at(None, held, 10), 4),
            "stage@10": round(any_at(model, held, 10), 4)})
    total = sum(h["questions"] for h in report["held_out"])
    for key in ("fused@5", "stage@5", "fused@10", "stage@10"):
        report[key] = round(sum(h[key] * h["questions"] for h in report["held_out"]) / total, 4)
    final = fit([g for conv in per_conv for g in conv])
    Path(out).write_text(final.to_json(
        fitted_on=Path(path).name, objective="listwise softmax on evidence", l2=L2,
        epochs=EPOCHS, held_out_recall_any_at_5=report["stage@5"]) + "\n", encoding="utf-8")
    report["weights"] = dict(zip(FEATURES, (round(float(v), 3) for v in final.weights),
                                 strict=True))
    return report
