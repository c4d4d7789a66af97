"""What a search's stages read, declared here and gathered by the engine in one place
(``engine.search.Gather``): the records of the search's namespace by id, and what the stages
before found of its candidates (``Searched``, for the learned stages' pools). Ranking reads
the store only through these."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from .._types import Entity, Record, Signals
from .null import Null
from .relevance import Evidence

__all__ = ["Neighbours", "Reads", "Searched"]

#: each record's stream neighbours: (the ones before it, nearest first; the ones after it)
Neighbours = dict[str, tuple[list[str], list[str]]]


class Reads(Protocol):
    """What a stage may read of the store for its search: records of the search's namespace
    by id; what was read is kept for the rest of the search (``cosine``, ``known_texts``)."""

    @property
    def cosine(self) -> dict[str, float]:
        """Every cosine to the query known so far, by record id."""
        ...

    @property
    def known_texts(self) -> dict[str, str]:
        """Every text read so far, by record id."""
        ...

    @property
    def plain(self) -> np.ndarray | None:
        """The query's vector without the people it names, when the search reads it too
        (``engine.queries.unnamed``)."""
        ...

    def plain_cosines(self, ids: Sequence[str]) -> dict[str, float]:
        """The cosines of ``ids`` to ``plain`` (empty without it)."""
        ...

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """``known_texts`` with the texts of ``ids`` read."""
        ...

    def cosines(self, ids: Sequence[str]) -> dict[str, float]:
        """``cosine`` with the cosines of ``ids`` (those with a vector of the query's size)."""
        ...

    def embeddings(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...

    def neighbours(self, ids: Sequence[str], *, before: int, after: int) -> Neighbours: ...

    def records(self, ids: Sequence[str]) -> list[Record]: ...

    def signals(self, ids: Sequence[str]) -> list[Signals]: ...

    def small(self) -> bool:
        """Whether the search selects few enough records to read its stream in order."""
        ...

    def record_entities(self, ids: Sequence[str]) -> dict[str, list[Entity]]: ...

    def mentions(self, entity_ids: Sequence[int], *, limit: int) -> dict[int, list[str]]: ...


class Searched(Protocol):
    """What a learned stage builds its pool from: the query, the candidates as the stages
    before left them, and ``reads`` for anything else (``engine.stages.Search`` is one)."""

    @property
    def text(self) -> str: ...
    @property
    def now(self) -> float: ...
    @property
    def reads(self) -> Reads: ...
    @property
    def null(self) -> Null | None: ...
    @property
    def kw_score(self) -> dict[str, float]: ...
    @property
    def kw_rank(self) -> dict[str, int]: ...
    @property
    def vec_rank(self) -> dict[str, int]: ...
    @property
    def fused(self) -> dict[str, float]: ...
    @property
    def nb(self) -> Neighbours | None: ...
    @property
    def candidates(self) -> list[Signals]: ...
    @property
    def calibrated(self) -> dict[str, float]: ...
    @property
    def evidence(self) -> dict[str, Evidence]: ...
    @property
    def kinds(self) -> Mapping[str, str]: ...
    @property
    def asks_past(self) -> bool: ...
