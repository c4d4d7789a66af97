"""Fit the relevance a hit shows (``retrieval/shown.py``) from its own evidence and its place,
on the first ten hits of every question of the everyday and the changes sets, and report each
store held out in turn: the expected calibration error and the ``min_relevance`` chosen on the
other stores.

    python benchmarks/fit_shown.py ../shared/data/everyday_dev.json \
        ../shared/data/changes_dev.json

Prints the weights fitted on every store (to copy into ``retrieval/shown.py``) and the held-out
figures of those fitted without each store."""

from __future__ import annotations

import math
import re
import sys
from collections import defaultdict

import numpy as np

from memstream import Config, Memory, Query
from memstream.bench import changes as changes_bench
from memstream.bench import everyday
from memstream.bench.metrics import held_out_threshold, reliability
from memstream.engine import changes as engine

Row = tuple[float, int, bool]  # evidence logit, place, answers


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def everyday_rows(mem: Memory, path: str) -> dict[str, list[Row]]:
    suite = everyday.load(path)
    out: dict[str, list[Row]] = defaultdict(list)
    for store, memories in suite.memories.items():
        ns = "fit-shown-" + re.sub(r"[^A-Za-z0-9._-]", "-", store)
        mem.delete_all(namespace=ns)
        mem.add_many(memories, namespace=ns, duplicates="keep")
        mem.flush()
        for q in (q for q in suite.questions if q.store == store):
            hits = mem.search(q.text, k=10, namespace=ns, now=suite.now, touch=False)
            out["everyday:" + store].extend((_logit(h.explain.evidence or 0.0), n,
                                             h.record.text in q.expected)
                                            for n, h in enumerate(hits))
        mem.delete_all(namespace=ns)
    return out


def changes_rows(mem: Memory, path: str) -> dict[str, list[Row]]:
    suite = changes_bench.load(path)
    out: dict[str, list[Row]] = defaultdict(list)
    for store in suite["stores"]:
        ns = changes_bench._ns(store, "fit-shown-")
        ids = changes_bench._index(mem, store, ns)
        of = {v: k for k, v in ids.items()}
        engine.compare(mem, [(ns, of[m["id"]]) for m in store["memories"]],
                       background=mem.vectors.background())
        canonical = {m["id"]: m.get("duplicate_of", m["id"]) for m in store["memories"]}
        for q in store["questions"]:
            want = set(q.get("expected") or ())
            as_of = changes_bench._time(q["as_of"]) if q["type"] == "as_of" else None
            hits = mem.search(Query(q["question"], include_invalid=q["type"] == "history"),
                              k=10, namespace=ns, now=suite["now_ts"], touch=False, as_of=as_of)
            out["changes:" + store["user"]].extend(
                (_logit(h.explain.evidence or 0.0), n, canonical[ids[h.record.id]] in want)
                for n, h in enumerate(hits))
        mem.delete_all(namespace=ns)
    return out


def features(rows: list[Row]) -> np.ndarray:
    return np.array([[1.0, lg, math.log1p(min(n, 9))] for lg, n, _ in rows])


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 4000) -> np.ndarray:
    w = np.zeros(x.shape[1])
    scale = x.std(axis=0) + 1e-6
    scale[0] = 1.0
    xs = x / scale
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xs @ w))
        g = xs.T @ (p - y) / len(y)
        g[1:] += l2 * w[1:]
        w -= 0.5 * g
    out: np.ndarray = w / scale
    return out


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with Memory(":memory:", config=Config(reflection_threshold=0, find_changes=False),
                llm=None) as mem:
        by_store = {**everyday_rows(mem, sys.argv[1]), **changes_rows(mem, sys.argv[2])}
    every = [r for rows in by_store.values() for r in rows]
    w = fit(features(every), np.array([r[2] for r in every], dtype=float))
    print(f"fitted on {len(by_store)} stores, {len(every)} hits: BIAS = {w[0]:.2f}, "
          f"EVIDENCE = {w[1]:.2f}, PLACE = {w[2]:.2f}")
    shown: dict[str, list[tuple[float, bool]]] = {}
    for store, rows in by_store.items():
        rest = [r for s, rs in by_store.items() if s != store for r in rs]
        ws = fit(features(rest), np.array([r[2] for r in rest], dtype=float))
        p = 1 / (1 + np.exp(-features(rows) @ ws))
        shown[store] = [(float(v), r[2]) for v, r in zip(p, rows, strict=True)]
    for name in ("everyday", "changes"):
        part = {s: v for s, v in shown.items() if s.startswith(name)}
        before = {s: [(1 / (1 + math.exp(-lg)), ok) for lg, _, ok in by_store[s]] for s in part}
        for label, data in (("evidence alone", before), ("evidence and place", part)):
            rel = reliability([p for v in data.values() for p in v])
            t = held_out_threshold(data)
            print(f"{name}, {label}, each store held out: calibration error {rel['ece']:.3f}; "
                  f"min_relevance {t['threshold']} keeps {t['held_out_kept']:.0%} of the "
                  f"answers, drops {t['held_out_dropped']:.0%} of the rest")


if __name__ == "__main__":
    main()
