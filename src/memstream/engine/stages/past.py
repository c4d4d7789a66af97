"""Whether the query asks about the past (``retrieval.past``): read once, before the
orderings, which then neither lift a follow-up of the best match (``notes``) nor leave out
the versions a matching record replaced (``current``)."""

from __future__ import annotations

from typing import ClassVar

from . import Search

__all__ = ["AsksPast"]


class AsksPast:
    name: ClassVar[str] = "past"

    def run(self, search: Search) -> bool:
        s = search
        s.asks_past = s.past is not None and s.vector is not None and s.past.asks(s.vector)
        return s.asks_past
