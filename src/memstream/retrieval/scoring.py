"""The retrieval score, as small pure functions (each tested on hand-computed examples).

For each candidate: recency = decay ** hours since last access; importance as stored; relevance
from the fused vector and keyword signals. Each signal is min-max normalised over the candidate
set and the score is the weighted sum. A signal whose spread over the candidates is below
``min_spread`` is treated as equal for all of them (normalised to 0): min-max would otherwise
stretch a meaningless difference, such as recencies a few minutes apart, over the whole 0-1
range and let it decide the ranking.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidInput

__all__ = [
    "PROFILES",
    "RULES",
    "Weights",
    "convex_fusion",
    "minmax",
    "recency",
    "resolve_weights",
    "rrf_fusion",
]


RULES = ("weighted", "relevance-first")


#: words by which a query asks about the present (see ``asks_about_now``)
_PRESENT = re.compile(
    r"\b(now|nowadays|currently|current|today|tonight|latest|recent|recently|lately|"
    r"at the moment|these days|this (?:morning|afternoon|evening|week)|still|anymore|"
    r"any more|so far|up to date|yet)\b", re.IGNORECASE)
#: under "relevance-first", recency counts this much less for a query about the past
PAST_RECENCY = 0.3


def asks_about_now(query: str) -> bool:
    """Whether ``query`` asks about the present ("what am I doing now?", "my current plan",
    "the latest version"): then recency counts fully under "relevance-first"; for any other
    query (a question over a long history) it counts ``PAST_RECENCY`` as much."""
    return _PRESENT.search(query) is not None


@dataclass(frozen=True, slots=True)
class Weights:
    """How the three signals make the score, and how much each counts.

    ``rule="weighted"`` is the memory-stream paper's: each signal min-max normalised over the
    candidates, the score their weighted sum. ``rule="relevance-first"`` (the default profile)
    uses the calibrated relevance logit (retrieval.relevance) and the raw recency and
    importance, which mean the same in every search: ``score = sigmoid(relevance_weight *
    settle(logit) + recency_weight * (recency - 0.5) + importance_weight * (importance -
    0.5))``. With the default weights (1, 0.5, 0.3) recency and importance move a memory by at
    most 0.8 logits against another: enough to order memories about equally relevant (and,
    since ``settle`` flattens the differences between unrelated ones, to decide when nothing
    is relevant), never enough to lift an unrelated memory (relevance under 0.2) over a
    relevant one (over 0.5). For a query that does not ask about the present
    (``asks_about_now``) the recency weight is multiplied by ``PAST_RECENCY``.
    """

    recency: float = 1.0
    importance: float = 1.0
    relevance: float = 1.0
    rule: str = "weighted"

    def __post_init__(self) -> None:
        for name in ("recency", "importance", "relevance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or (
                    isinstance(value, int) and abs(value) > 2**53) or not math.isfinite(value) \
                    or value < 0:
                raise InvalidInput(f"weight {name} must be a finite number >= 0, got "
                                   f"{str(value)[:40]}")
        if self.recency == self.importance == self.relevance == 0:
            raise InvalidInput("at least one weight must be above 0")
        if self.rule not in RULES:
            raise InvalidInput(f"unknown scoring rule {self.rule!r}; use one of {RULES}")

    def as_tuple(self) -> tuple[float, float, float]:
        return (float(self.recency), float(self.importance), float(self.relevance))


#: Named weight profiles. "default" (relevance first, see ``Weights``) serves both an agent
#: acting in the moment and questions over a long history. The others use the paper's rule:
#: "paper" and "balanced" are its equal weights; "recall" lets relevance dominate (recency and
#: importance only break near-ties); "recent" favours what was just used.
PROFILES: dict[str, Weights] = {
    "default": Weights(0.5, 0.3, 1.0, rule="relevance-first"),
    "paper": Weights(1.0, 1.0, 1.0),
    "balanced": Weights(1.0, 1.0, 1.0),
    "recall": Weights(0.05, 0.05, 1.0),
    "recent": Weights(2.0, 0.5, 1.0),
}


def resolve_weights(value: str | Weights | Mapping[str, float] | Sequence[float] | None,
                    default: str = "default") -> Weights:
    """Weights from a profile name, a Weights, a dict or a (recency, importance, relevance)."""
    if value is None:
        value = default
    if isinstance(value, Weights):
        return value
    if isinstance(value, str):
        if value not in PROFILES:
            raise InvalidInput(f"unknown weight profile {value!r}; use one of {sorted(PROFILES)}")
        return PROFILES[value]
    if isinstance(value, Mapping):
        unknown = set(value) - {"recency", "importance", "relevance"}
        if unknown:
            raise InvalidInput(f"unknown weight(s) {sorted(unknown)}; use recency, importance, "
                               "relevance")
        w = {k: _number(v, k) for k, v in value.items()}
        return Weights(w.get("recency", 1.0), w.get("importance", 1.0), w.get("relevance", 1.0))
    if len(value) != 3:
        raise InvalidInput("weights as a sequence need three numbers: recency, importance, "
                           "relevance")
    recency_w, importance_w, relevance_w = (
        _number(x, name) for x, name in zip(value, ("recency", "importance", "relevance"),
                                            strict=True))
    return Weights(recency_w, importance_w, relevance_w)


def _number(value: object, name: str) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInput(f"weight {name} must be a finite number >= 0, got "
                           f"{str(value)[:40]}") from exc


def recency(hours_since_access: float, decay: float) -> float:
    """``decay ** hours``; hours below zero (access in the future of "now") count as zero."""
    return float(decay ** max(0.0, hours_since_access))


def minmax(values: Sequence[float], min_spread: float = 0.0) -> list[float]:
    """Scale to [0, 1] over the given values. A spread (max - min) at or below ``min_spread``
    gives 0 for every value: the signal cannot tell these candidates apart."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    spread = hi - lo
    if spread <= min_spread or spread == 0:
        return [0.0] * len(values)
    return [(v - lo) / spread for v in values]


def rrf_fusion(rankings: Sequence[Sequence[str]], k: int = 60,
               weights: Sequence[float] | None = None) -> dict[str, float]:
    """Reciprocal rank fusion: sum over the rankings of weight / (k + rank), rank 1-based."""
    weights = weights or [1.0] * len(rankings)
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
    return fused


def convex_fusion(vector: Mapping[str, float], keyword: Mapping[str, float],
                  alpha: float = 0.5) -> dict[str, float]:
    """alpha * normalised cosine + (1 - alpha) * normalised keyword score. Cosine is scaled
    from [-1, 1] to [0, 1]; keyword scores are divided by the best keyword score. A record
    missing from one source gets 0 from it."""
    top_kw = max(keyword.values(), default=0.0)
    fused: dict[str, float] = {}
    for key in set(vector) | set(keyword):
        cos = (vector[key] + 1.0) / 2.0 if key in vector else 0.0
        kw = keyword[key] / top_kw if key in keyword and top_kw > 0 else 0.0
        fused[key] = alpha * cos + (1.0 - alpha) * kw
    return fused
