"""Would the change model do better with its penalty and its link thresholds chosen by held-out
selection? (docs/benchmarks.md, "Choosing the change model's penalty and thresholds").

    python benchmarks/changes_selection.py ../shared/data/changes_dev.json \\
        ../shared/data/everyday_dev.json

1. The changes set, nested: each store is scored (as ``memstream bench changes`` scores it)
   with weights whose penalty and thresholds were chosen on the other stores alone. Among
   them, each store in turn is scored by weights fitted on the rest; the penalty of
   ``PENALTIES`` with the least log loss is kept, then, for restatements and for changes, the
   lowest confidence of ``CONFIDENCES`` whose links are right at ``PRECISION`` or more, as
   ``decide`` takes them (a restatement first, then at most one change per new record).
2. The everyday set, which has no link labels and was not fitted on: the links that the
   weights selected on every changes store apply there, beside those the shipped weights
   apply, printed for a reader to judge.

Nothing is shipped from this script: the shipped weights and ``APPLY`` stay as they are."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import re
import sys
from collections.abc import Iterator

import numpy as np

from memstream import Config, Memory
from memstream.bench import changes as bench
from memstream.bench.everyday import load as load_everyday
from memstream.cognition import changes as model

#: the pair models' penalties chosen among, by the log loss on stores left out
PENALTIES = (1e-2, 3e-3, 1e-3, 3e-4)
#: the confidences a link's threshold is chosen among
CONFIDENCES = tuple(round(0.5 + 0.05 * n, 2) for n in range(10))
#: the precision a link must reach, on stores the weights were not fitted on
PRECISION = 0.9
NEAREST = model.PAIR_FEATURES.index("nearest")


@dataclasses.dataclass(frozen=True)
class Chosen:
    weights: model.Weights
    l2: float
    duplicate: float
    superseded: float


def decisions(rows: bench.Rows, w: model.Weights, read: tuple[np.ndarray, np.ndarray] | None
              ) -> list[tuple[float, bool, float, bool]]:
    """What ``decide`` does with each new record of ``rows`` that has older ones: the
    restatement model's best (confidence, right) and the change model's."""
    first = np.flatnonzero(rows.pairs[:, NEAREST] == 1.0)
    if read is not None and w.directions is not None and w.restating is not None:
        change = model._softmax(np.hstack([rows.pairs, read[0]]) @ w.pair.T)
        restate = model._softmax(np.hstack([rows.pairs, read[1]]) @ w.restating.T)
    else:
        change = restate = model._softmax(rows.pairs @ (w.plain if w.plain is not None
                                                        else w.pair).T)
    out = []
    for a, b in itertools.pairwise([*first.tolist(), len(rows.pairs)]):
        r = a + int(np.argmax(restate[a:b, 2]))
        c = a + int(np.argmax(change[a:b, 1]))
        out.append((float(restate[r, 2]), bool(rows.pair_y[r] == 2), float(change[c, 1]),
                    bool(rows.pair_y[c] == 1)))
    return out


def lowest(found: list[tuple[float, bool]], default: float) -> float:
    for t in CONFIDENCES:
        kept = [right for p, right in found if p >= t]
        if kept and sum(kept) / len(kept) >= PRECISION:
            return t
    return default


def select(rows: list[bench.Rows], embedder: str | None) -> Chosen:
    """The weights fitted on ``rows``, penalty and thresholds chosen on ``rows`` alone."""
    inner = [bench._read([o for k, o in enumerate(rows) if k != n], embedder)
             for n in range(len(rows))]
    outer = bench._read(rows, embedder)
    best: tuple[float, float, list[tuple[float, bool, float, bool]]] | None = None
    for l2 in PENALTIES:
        loss, decided = 0.0, []
        for n, r in enumerate(rows):
            w = bench._fit([o for k, o in enumerate(rows) if k != n], embedder, l2=l2,
                           read=inner[n])
            read = outer[n] if outer else None
            decided.extend(decisions(r, w, read))
            x, pair = ((np.hstack([r.pairs, read[0]]), w.pair) if read is not None
                       and w.directions is not None else
                       (r.pairs, w.plain if w.plain is not None else w.pair))
            p = model._softmax(x @ pair.T)
            loss -= float(np.log(p[np.arange(len(r.pair_y)), r.pair_y] + 1e-12).sum())
        if best is None or loss < best[0]:
            best = (loss, l2, decided)
    assert best is not None
    _, l2, decided = best
    duplicate = lowest([(p, right) for p, right, _, _ in decided], model.APPLY["duplicate"])
    superseded = lowest([(p, right) for rp, _, p, right in decided if rp < duplicate],
                        model.APPLY["superseded"])
    return Chosen(bench._fit(rows, embedder, l2=l2), l2, duplicate, superseded)


@contextlib.contextmanager
def applying(chosen: Chosen) -> Iterator[None]:
    """``chosen``'s weights and thresholds in use meanwhile."""
    saved = dict(model.APPLY)
    model.APPLY.update(duplicate=chosen.duplicate, superseded=chosen.superseded)
    try:
        with model.fitted(chosen.weights):
            yield
    finally:
        model.APPLY.update(saved)


def links(mem: Memory, path: str) -> list[str]:
    """The links applied on each store of the everyday set at ``path``."""
    suite = load_everyday(path)
    out = []
    for store, memories in suite.memories.items():
        ns = "selection-" + re.sub(r"[^A-Za-z0-9._-]", "-", store)
        mem.delete_all(namespace=ns)
        mem.add_many(memories, namespace=ns, duplicates="keep")
        mem.flush()
        for f in mem.audit(namespace=ns, kinds=("superseded", "duplicate"), limit=10_000):
            if f.applied and f.related is not None:
                out.append(f"{store} {f.kind} {f.confidence:.2f}: {f.record.text[:60]!r} -> "
                           f"{f.related.text[:60]!r}")
        mem.delete_all(namespace=ns)
    return sorted(out)


def main(changes_path: str, everyday_path: str) -> None:
    suite = bench.load(changes_path)
    tallies = {"default": bench._Tally(), "vector only": bench._Tally()}
    with Memory(":memory:", config=Config(reflection_threshold=0, find_changes=False),
                llm=None) as mem:
        name = bench._name(mem)
        rows = [bench.features(mem, store) for store in suite["stores"]]
        for n, store in enumerate(suite["stores"]):
            chosen = select([r for k, r in enumerate(rows) if k != n], name)
            print(f"{store['user']}: penalty {chosen.l2:g}, duplicate from "
                  f"{chosen.duplicate}, superseded from {chosen.superseded}", flush=True)
            with applying(chosen):
                bench._evaluate(mem, suite, store, chosen.weights, tallies)
    print(bench.render({"data": changes_path, "stores": len(suite["stores"]), "held_out": True,
                        "profiles": {k: t.report() for k, t in tallies.items()}}))
    with Memory(":memory:", config=Config(reflection_threshold=0), llm=None) as mem:
        shipped = links(mem, everyday_path)
        chosen = select(rows, name)
        print(f"\nselected on every changes store: penalty {chosen.l2:g}, duplicate from "
              f"{chosen.duplicate}, superseded from {chosen.superseded}")
        with applying(chosen):
            selected = links(mem, everyday_path)
    print(f"everyday links: {len(shipped)} with the shipped weights, {len(selected)} with the "
          "selected ones")
    for line in sorted(set(selected) - set(shipped)):
        print("  only selected:", line)
    for line in sorted(set(shipped) - set(selected)):
        print("  only shipped: ", line)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python benchmarks/changes_selection.py CHANGES_JSON EVERYDAY_JSON")
    main(sys.argv[1], sys.argv[2])
