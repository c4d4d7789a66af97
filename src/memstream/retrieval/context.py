"""Context-aware relevance: a record is also as relevant as the records just before it.

In a conversation the answer often sits in the turn after the question that names the topic
("do you have pets?" -> "we got another cat"). Each source's scores are therefore smoothed
along the stream before fusion: score'(r) = score(r) + 0.5 score(previous) + 0.25
score(the one before) + 0.2 score(next), over the records the query may see (its selection),
in creation order. Dense scores are centred on the candidates' mean first, so that a neighbour
counts for how much more relevant it is than usual; a neighbour that no index proposed counts
as 0 for keywords and by its own cosine for vectors. Neighbours reached this way join the
candidates. The 40 best candidates of each index are smoothed. It applies when the search has
vectors (without them a keyword search returns only records that match) and the namespace
holds at most 5,000 records, whose order is then read at once; larger streams would need a
neighbour lookup per candidate, which costs more than the 20 ms search budget allows, so they
are searched without it for now. Measured on the LoCoMo dev split (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["NEIGHBOUR_WEIGHTS", "smooth"]

#: (previous, the one before, next)
NEIGHBOUR_WEIGHTS = (0.5, 0.25, 0.2)


def smooth(scores: Mapping[str, float], neighbours: Mapping[str, tuple[list[str], list[str]]],
           weights: tuple[float, float, float] = NEIGHBOUR_WEIGHTS) -> dict[str, float]:
    """Smoothed scores for every id in ``neighbours`` (missing scores count as 0)."""
    w_prev, w_prev2, w_next = weights
    out = {}
    for rid, (prev, nxt) in neighbours.items():
        value = scores.get(rid, 0.0)
        if prev:
            value += w_prev * scores.get(prev[0], 0.0)
        if len(prev) > 1:
            value += w_prev2 * scores.get(prev[1], 0.0)
        if nxt:
            value += w_next * scores.get(nxt[0], 0.0)
        out[rid] = value
    return out
