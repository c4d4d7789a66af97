"""A place kept among the first hits for the most relevant standing memory, a preference or
an instruction (``retrieval.standing``); the list is cut to ``k`` here."""

from __future__ import annotations

from typing import ClassVar

from ...retrieval.pipeline import lift_standing
from . import Search

__all__ = ["Standing"]


class Standing:
    name: ClassVar[str] = "standing"

    def run(self, search: Search) -> bool:
        s = search
        s.ranked = lift_standing(s.ranked[: s.p.k], s.candidates, s.calibrated, s.own, s.kinds,
                                 s.reads.known_texts, s.text, s.now, s.p)
        return True
