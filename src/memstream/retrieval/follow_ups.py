"""Follow-ups among the first hits of a conversation or of long records: a newer record about
the same thing, about as relevant, placed above the one it follows up (stores of separate notes
use ``notes`` instead)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from .null import Null
from .relevance import UNRELATED

__all__ = ["FOLLOW_GAP", "FOLLOW_TOP", "FOLLOW_Z", "follow_ups", "newest_first"]

#: how many of the best hits may be reordered by follow-ups
FOLLOW_TOP = 10
#: a newer record follows up an older one when their cosine stands this many standard
#: deviations above the namespace's cosines between two records (``Null``)
FOLLOW_Z = 2.25
#: ... and its relevance logit is at most this far below the older one's
FOLLOW_GAP = 2.0


def follow_ups(order: Sequence[str], vecs: Mapping[str, np.ndarray], logits: Mapping[str, float],
               times: Mapping[str, float], null: Null, *,
               questions: Collection[str] = (), weight: Mapping[str, float] | None = None
               ) -> dict[str, list[str]]:
    """For each of the first ``FOLLOW_TOP`` ids of ``order`` that is plausibly relevant (its
    logit at or above ``relevance.UNRELATED``), the others among them that follow it up: about
    the same thing (``FOLLOW_Z``), about as relevant to the query (``FOLLOW_GAP``) and newer (or
    as new and weightier by ``weight``, the importance). A fact and its correction, an event and
    its new date, a question and its reply: the newest of such a chain states what holds now.
    A stored question (one of ``questions``) is followed up by any statement about the same
    thing: a question is not its own answer. ``vecs``: the stored vectors of those ids."""
    top = list(order[:FOLLOW_TOP])
    ids = [i for i in top if i in vecs and vecs[i].shape[0] == null.rows.shape[1]]
    if len(ids) < 2:
        return {}
    mat = np.vstack([vecs[i] for i in ids])
    z = (mat @ mat.T - null.pair_mean) / null.pair_std
    out: dict[str, list[str]] = {}
    weight = weight or {}

    def after(new: str, old: str) -> bool:
        if old in questions and new not in questions:
            return True
        if abs(times[new] - times[old]) < 1.0:
            return weight.get(new, 0.0) > weight.get(old, 0.0)
        return times[new] > times[old] and (new not in questions or old in questions)

    for a, old in enumerate(ids):
        if logits[old] < UNRELATED:
            continue
        newer = [new for b, new in enumerate(ids) if new != old and after(new, old)
                 and z[a, b] >= FOLLOW_Z and logits[new] >= logits[old] - FOLLOW_GAP]
        if newer:
            out[old] = newer
    return out


def newest_first(order: Sequence[str], follow: Mapping[str, Sequence[str]],
                 times: Mapping[str, float]) -> list[str]:
    """``order`` with each followed-up id preceded by the last record of its chain of
    follow-ups (the best placed of those that follow it up, again and again; it keeps its own
    place if it already came first)."""
    place = {rid: n for n, rid in enumerate(order)}

    def head(rid: str) -> str:
        seen = {rid}
        while follow.get(rid):
            nxt = max(follow[rid], key=lambda r: (times[r], -place.get(r, 0)))
            if nxt in seen:
                break
            seen.add(nxt)
            rid = nxt
        return rid

    out: list[str] = []
    placed: set[str] = set()
    for rid in order:
        for r in (head(rid), rid):
            if r not in placed:
                placed.add(r)
                out.append(r)
    return out
