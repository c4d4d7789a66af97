"""The ordering of a conversation's or long records' candidates (``retrieval.pipeline.
lifted_order``): a preference or instruction lifted for a request, a record of the date the
query names lifted for it."""

from __future__ import annotations

from typing import ClassVar

from ...retrieval.pipeline import lifted_order
from . import Search

__all__ = ["Lifted"]


class Lifted:
    name: ClassVar[str] = "lifted"

    def run(self, search: Search) -> bool:
        s = search
        s.ranked = lifted_order(s.text, s.candidates, s.calibrated, s.own, s.kinds, s.now, s.p)
        return True
