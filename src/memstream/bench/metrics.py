"""Retrieval metrics over ranked ids and a set of relevant ids (binary relevance)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

__all__ = ["KS", "accumulate", "ndcg_at", "percentile", "profile_report", "recall_any_at",
           "recall_frac_at"]

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
