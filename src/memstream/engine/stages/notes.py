"""The notes stage (``retrieval.notes``): in a store of separate notes, each candidate's
logit plus what its place among the others adds (a follow-up of the best match, a record a
newer one supersedes, a date or an event the query counts from)."""

from __future__ import annotations

from typing import ClassVar

from ...retrieval.notes import pool
from ...retrieval.pipeline import notes_order
from . import Search

__all__ = ["Notes"]


class Notes:
    name: ClassVar[str] = "notes"

    def run(self, search: Search) -> bool:
        s = search
        s.ranked = notes_order(pool(s), s.candidates, s.calibrated, s.own, s.now, s.p,
                               s.observe_notes)
        return True
