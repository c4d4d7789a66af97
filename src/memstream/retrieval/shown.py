"""The relevance a hit shows: how likely it is to answer, read from its own evidence and its
place in the list.

The calibrated relevance of ``retrieval.relevance`` reads only a record's own evidence (how far
its cosine stands above the query's others, the query's words it holds). The ranking reads
more (the notes stage, the learned stage, follow-ups, current versions), and where it places a
hit says something the evidence alone does not: on the development sets, a first hit whose own
evidence gives it 0.03 answers about a third of the time, a tenth hit with the same evidence
almost never. So the relevance shown is

    logit = BIAS + EVIDENCE * logit(evidence) + PLACE * log(1 + position)

(``position`` 0 for the first hit; a hit below the tenth counts as the tenth: the fit saw ten),
fitted by logistic regression on the first ten hits of
every question of the everyday and the changes development sets, 18 stores in three languages
(``benchmarks/fit_shown.py``). Each store held out in turn, its hits showing 0.3 are answers
about 0.3 of the time: expected calibration error 0.016 (everyday) and 0.020 (changes), from
0.045 and 0.047 with the evidence alone; and ``min_relevance=0.1`` keeps 79% (everyday) and
80% (changes) of the answers while it drops 81% and 82% of the rest (evidence alone: no
threshold keeps and drops 75% of each on the everyday stores: 0.06 keeps 68%). The evidence
stays in ``explain.evidence``. What it costs: a search where nothing answers shows its first
hit at about 0.2-0.4 (its evidence alone: under 0.1), so ``min_relevance=0.1`` no longer
empties it; ``explain.evidence`` still says "nothing".
"""

from __future__ import annotations

import math

__all__ = ["BIAS", "EVIDENCE", "FITTED", "PLACE", "shown"]

#: the places the fit saw (a lower hit counts as the last of them)
FITTED = 10
BIAS = 0.34
EVIDENCE = 0.27
PLACE = -1.59


def shown(evidence: float, position: int) -> float:
    """The relevance shown for a hit at ``position`` (0: first) whose own evidence gives
    ``evidence`` (both in [0, 1])."""
    e = min(max(evidence, 1e-6), 1.0 - 1e-6)
    logit = BIAS + EVIDENCE * math.log(e / (1.0 - e)) + PLACE * math.log1p(
        min(position, FITTED - 1))
    return 1.0 / (1.0 + math.exp(-logit))
