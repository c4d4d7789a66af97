"""The records that name an identifier the query names (an order, a ticket, an invoice:
``cognition.identifiers``) before those that do not: asked "Where was order 48220 shipped?",
the record of order 48220 answers, however alike the other orders of the log read. Each
record lifted shows at least the score of the best hit it passes (``explain.lifted``)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ...cognition.identifiers import identifiers
from . import Search

__all__ = ["NAMED", "Named"]

#: why a record stands above hits that score higher (``explain.lifted``)
NAMED = "names the identifier the question asks about"


class Named:
    name: ClassVar[str] = "identifier"

    def run(self, search: Search) -> bool:
        s = search
        named = identifiers(s.text)
        if not named or not s.ranked:
            return False
        texts = s.reads.texts([h.item.id for h in s.ranked])
        naming = [h for h in s.ranked if identifiers(texts.get(h.item.id, "")) & named]
        if not naming or len(naming) == len(s.ranked):
            return False
        others = [h for h in s.ranked if h not in naming]
        top = others[0].score
        s.ranked = [h if h.score >= top else h._replace(
            score=top, explain=dataclasses.replace(h.explain, lifted=NAMED))
                    for h in naming] + others
        return True
