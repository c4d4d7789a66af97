"""Follow-ups first (``retrieval.follow_ups``), among short records that the learned stage did
not order: in a conversation the learned stage reads each turn's surroundings, and a later turn
on the same subject is not an update (LoCoMo dev recall_any@5 0.801 without them, 0.799 with).
Each hit placed above a record it follows up names it in ``explain.updates``."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ...retrieval.follow_ups import FOLLOW_TOP, follow_ups, newest_first
from ...retrieval.relevance import is_question
from . import Search

__all__ = ["FollowUps"]


class FollowUps:
    name: ClassVar[str] = "follow-ups"

    def run(self, search: Search) -> bool:
        s = search
        if s.null is None or s.long_records or s.learned:
            return False
        texts = s.reads.known_texts
        order = [h.item.id for h in s.ranked]
        times = {h.item.id: h.item.created_at for h in s.ranked}
        vecs = s.reads.embeddings(order[:FOLLOW_TOP])
        follow = follow_ups(order, vecs, s.calibrated, times, s.null, questions={
            rid for rid in order if is_question(texts.get(rid, ""))},
            weight={h.item.id: h.item.importance for h in s.ranked})
        if not follow:
            return True
        by_id = {h.item.id: h for h in s.ranked}
        out = []
        for rid in newest_first(order, follow, times):
            updates = tuple(old for old, newer in follow.items() if rid in newer)
            hit = by_id[rid]
            out.append(hit._replace(explain=dataclasses.replace(hit.explain, updates=updates))
                       if updates else hit)
        s.ranked = out
        return True
