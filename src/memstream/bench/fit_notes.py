"""Fit the notes stage's weights (retrieval.notes) on an everyday suite.

Every store is indexed as in the everyday bench; every answerable question is searched with
the default profile, and the notes stage's candidates are kept with their features, their
calibrated relevance logits and which of them answer. A linear model is fitted with a listwise
objective: for each question, the log of the probability that a softmax over its candidates'
``logit + weights . features`` puts on its answers (Adam, L2 penalty; the calibrated logit is a
fixed offset, so each weight reads in logits). Before the final fit on every store, each store is
held out in turn and ranked by weights fitted on the others: those figures say what the weights
do on a store they never saw, which is what the shipped weights will meet.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..engine.memory import Memory
from ..errors import InvalidInput
from ..filters import Selection
from ..retrieval.learned import adam
from ..retrieval.notes import FEATURES, Weights
from .everyday import load

#: the fit's settings (fixed: not tuned per run)
L2, EPOCHS, LEARNING_RATE = 1e-2, 400, 0.05


class Group:
    """One question: its candidates' features, calibrated logits and answers."""

    def __init__(self, x: np.ndarray, offset: np.ndarray, y: np.ndarray, kind: str,
                 lang: str) -> None:
        self.x, self.offset, self.y, self.kind, self.lang = x, offset, y, kind, lang


def collect(path: str | Path, *, db: str = ":memory:", embedder: str | None = None,
            progress: Callable[[str], Any] | None = None) -> dict[str, list[Group]]:
    """Per store, per answerable question that reached the notes stage: its ``Group``."""
    from ..embed.cache import embed_documents_cached
    from ..engine.search import run_search
    from ..retrieval.pipeline import SearchParams
    from ..retrieval.relevance import BACKGROUND
    from ..retrieval.scoring import resolve_weights

    suite = load(path)
    out: dict[str, list[Group]] = {}
    with Memory(db, embedder=embedder, config=Config(reflection_threshold=0), llm=None) as mem:
        if mem.embedder is None:
            raise RuntimeError("fitting the notes stage needs the embedding model")
        params = SearchParams.of(mem.config, k=10, weights=resolve_weights("default"))
        background = embed_documents_cached(mem.store.kv, mem.embedder, list(BACKGROUND))
        for store, memories in suite.memories.items():
            ns = "everyday-" + re.sub(r"[^A-Za-z0-9._-]", "-", store)
            mem.delete_all(namespace=ns)
            mem.add_many(memories, namespace=ns, duplicates="keep")
            mem.flush()
            text_of = {r.id: r.text for r in mem.get_all(
                namespace=ns, limit=None, include_invalid=True)}
            groups = []
            for q in suite.questions:
                if q.store != store or not q.expected:
                    continue
                seen: list[tuple[list[str], np.ndarray, np.ndarray]] = []

                def keep(ids: list[str], x: np.ndarray, offset: np.ndarray,
                         into: list[tuple[list[str], np.ndarray, np.ndarray]] = seen) -> None:
                    into.append((ids, x, offset))

                run_search(mem.store, Selection(ns), q.text, mem.embedder.embed_query(q.text),
                           suite.now, params, background=background, past=mem.vectors.past(),
                           observe_notes=keep)
                if not seen:
                    continue
                ids, x, offset = seen[0]
                y = np.array([text_of.get(i) in q.expected for i in ids], dtype=np.float64)
                groups.append(Group(x, offset, y, q.type, q.lang))
            out[store] = groups
            if progress:
                progress(store)
    return out


def fit(groups: list[Group]) -> Weights:
    """The listwise fit (see the module docstring) on the groups with an answer among their
    candidates."""
    data = [g for g in groups if g.y.any()]
    if not data:
        raise InvalidInput("no question reached the notes stage with its answer among the "
                           "candidates: nothing to fit on")

    def gradient(w: np.ndarray) -> np.ndarray:  # of the cross-entropy on the answers
        grad = L2 * w
        for g in data:
            s = g.x @ w + g.offset
            p = np.exp(s - s.max())
            p /= p.sum()
            grad = grad + g.x.T @ (p - g.y / g.y.sum()) / len(data)
        return grad

    w = adam(gradient, len(FEATURES), epochs=EPOCHS, rate=LEARNING_RATE)
    return Weights(tuple(round(float(v), 3) for v in w))


def first_top5(groups: list[Group], weights: Weights | None) -> tuple[int, int]:
    """How many groups have an answer first and in the first five (None: the calibrated
    logit alone)."""
    first = top5 = 0
    for g in groups:
        s = g.offset + (g.x @ np.array(weights.values) if weights is not None else 0.0)
        order = np.argsort(-s, kind="stable")
        first += bool(g.y[order[0]]) if len(order) else 0
        top5 += bool(g.y[order[:5]].any())
    return first, top5


def run(path: str | Path, out: str | Path, *, db: str = ":memory:", embedder: str | None = None,
        progress: Callable[[str], Any] | None = None) -> dict[str, Any]:
    """Fit with each store held out in turn, then on every store; write the weights to
    ``out``; return the figures (the stage alone, over the questions that reached it)."""
    per_store = collect(path, db=db, embedder=embedder, progress=progress)
    held: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for name, groups in per_store.items():
        weights = fit([g for other, gs in per_store.items() if other != name for g in gs])
        for g in groups:
            f, t = first_top5([g], weights)
            f0, t0 = first_top5([g], None)
            for key in ("overall", f"type:{g.kind}", f"lang:{g.lang}", f"store:{name}"):
                row = held[key]
                row[0] += 1
                row[1] += f
                row[2] += t
                row[3] += f0
                row[4] += t0
    everything = [g for gs in per_store.values() for g in gs]
    final = fit(everything)
    f, t = first_top5(everything, final)
    Path(out).write_text(final.to_json(
        fitted_on=Path(path).name, objective="listwise softmax on answers, calibrated logit as "
        "offset", l2=L2, epochs=EPOCHS) + "\n", encoding="utf-8")
    return {"questions": len(everything),
            "fitted": {"first": round(f / len(everything), 3),
                       "top5": round(t / len(everything), 3)},
            "held_out": {k: {"n": n, "first": round(a / n, 3), "top5": round(b / n, 3),
                             "calibrated_first": round(c / n, 3),
                             "calibrated_top5": round(d / n, 3)}
                         for k, (n, a, b, c, d) in sorted(held.items())},
            "weights": dict(zip(FEATURES, final.values, strict=True))}
