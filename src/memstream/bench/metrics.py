"""Retrieval metrics over ranked ids and a set of relevant ids (binary relevance)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

__all__ = ["KS", "accumulate", "held_out_threshold", "ndcg_at", "percentile", "profile_report",
           "recall_any_at", "recall_frac_at", "reliability", "render_reliability"]

#: the cut-offs every retrieval bench reports
KS = (1, 5, 10)


def recall_any_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """1.0 when at least one relevant id is in the top k."""
    return 1.0 if any(r in relevant for r in ranked[:k]) else 0.0


def recall_frac_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """The fraction of the relevant ids found in the top k."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Normalised discounted cumulative gain with binary gains."""
    dcg = sum(1.0 / math.log2(i + 2) for i, r in enumerate(ranked[:k]) if r in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def accumulate(sums: dict[str, dict[str, float]], counts: dict[str, int], category: str,
               ranked: Sequence[str], relevant: set[str]) -> None:
    """Add one question's recall_any, recall_frac and nDCG at each of ``KS`` to its category's
    sums and to "overall"."""
    for key in (category, "overall"):
        counts[key] = counts.get(key, 0) + 1
        bucket = sums.setdefault(key, defaultdict(float))
        for k in KS:
            bucket[f"recall_any@{k}"] += recall_any_at(ranked, relevant, k)
            bucket[f"recall_frac@{k}"] += recall_frac_at(ranked, relevant, k)
            bucket[f"ndcg@{k}"] += ndcg_at(ranked, relevant, k)


def profile_report(sums: dict[str, dict[str, float]], counts: dict[str, int],
                   latencies: Sequence[float]) -> dict[str, Any]:
    """One profile's figures: each category's mean of every metric, the question counts and
    the search latency percentiles."""
    return {"metrics": {cat: {m: round(v / counts[cat], 4) for m, v in metrics.items()}
                        for cat, metrics in sums.items()},
            "counts": counts,
            "latency_ms": {"p50": round(percentile(latencies, 50), 2),
                           "p95": round(percentile(latencies, 95), 2)}}


#: the relevance bins of a reliability table
BINS = 10
#: the thresholds ``held_out_threshold`` tries
THRESHOLDS = tuple(round(0.02 * n, 2) for n in range(1, 50))


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = BINS) -> dict[str, Any]:
    """How well relevance reads as a probability: hits (relevance, answers?) in ``bins``
    equal bins of relevance, each bin's mean relevance beside its share of answers, and the
    expected calibration error (those gaps weighted by the bins' sizes)."""
    rows: list[list[float]] = [[0, 0.0, 0] for _ in range(bins)]
    for rel, ok in pairs:
        b = rows[min(bins - 1, int(rel * bins))]
        b[0] += 1
        b[1] += rel
        b[2] += ok
    total = sum(r[0] for r in rows) or 1
    table = [{"from": round(n / bins, 2), "n": int(r[0]),
              "relevance": round(r[1] / r[0], 3) if r[0] else None,
              "answers": round(r[2] / r[0], 3) if r[0] else None} for n, r in enumerate(rows)]
    ece = sum(r[0] / total * abs(r[1] / r[0] - r[2] / r[0]) for r in rows if r[0])
    return {"ece": round(ece, 3), "hits": int(sum(r[0] for r in rows)), "table": table}


def _kept_dropped(pairs: Sequence[tuple[float, bool]], t: float) -> tuple[float, float]:
    answers = [rel for rel, ok in pairs if ok]
    others = [rel for rel, ok in pairs if not ok]
    kept = sum(r >= t for r in answers) / len(answers) if answers else 1.0
    dropped = sum(r < t for r in others) / len(others) if others else 1.0
    return kept, dropped


def held_out_threshold(by_group: dict[str, list[tuple[float, bool]]]) -> dict[str, Any]:
    """A ``min_relevance`` for each group chosen on the other groups (the threshold whose worse
    of "answers kept" and "non-answers dropped" is best), scored on the group it never saw;
    and the threshold chosen on every group."""
    def best(pairs: Sequence[tuple[float, bool]]) -> float:
        return max(THRESHOLDS, key=lambda t: (min(_kept_dropped(pairs, t)), -t))

    kept_n = dropped_n = answers = others = 0.0
    chosen = {}
    for name, pairs in by_group.items():
        rest = [p for other, ps in by_group.items() if other != name for p in ps]
        t = best(rest)
        chosen[name] = t
        a = sum(ok for _, ok in pairs)
        kept, dropped = _kept_dropped(pairs, t)
        kept_n += kept * a
        dropped_n += dropped * (len(pairs) - a)
        answers += a
        others += len(pairs) - a
    every = [p for ps in by_group.values() for p in ps]
    t_all = best(every)
    kept_all, dropped_all = _kept_dropped(every, t_all)
    return {"threshold": t_all, "kept": round(kept_all, 3), "dropped": round(dropped_all, 3),
            "held_out_kept": round(kept_n / answers, 3) if answers else None,
            "held_out_dropped": round(dropped_n / others, 3) if others else None,
            "held_out_thresholds": chosen}


def render_reliability(body: dict[str, Any]) -> list[str]:
    """The reliability table and the held-out threshold of a report, as text lines."""
    rel, thr = body["reliability"], body["min_relevance"]
    lines = [f"relevance of the shown hits: expected calibration error {rel['ece']:.3f} "
             f"({rel['hits']} hits)",
             "  relevance  " + " ".join(f"{r['from']:>5.1f}" for r in rel["table"]),
             "  hits       " + " ".join(f"{r['n']:>5}" for r in rel["table"]),
             "  mean       " + " ".join(f"{r['relevance']:>5.2f}" if r["n"] else "    -"
                                        for r in rel["table"]),
             "  answers    " + " ".join(f"{r['answers']:>5.2f}" if r["n"] else "    -"
                                        for r in rel["table"])]
    if thr["held_out_kept"] is not None:
        lines.append(f"min_relevance {thr['threshold']}: keeps {thr['kept']:.0%} of the answers, "
                     f"drops {thr['dropped']:.0%} of the rest; chosen on the other stores, "
                     f"held out: keeps {thr['held_out_kept']:.0%}, drops "
                     f"{thr['held_out_dropped']:.0%}")
    return lines
