"""The stages of one search, in the order they run over one pool of candidates.

A search (``engine.search.run_search``) gathers its candidates, decides once from the kind of
store it reads which stages run (``plan``), hands each stage in turn the same ``Search`` (the
pool and what the stages before found), then cuts the list. A stage is one object with one
method, ``run``: it reads what it needs of the pool, and of the store only through
``search.reads`` (``retrieval.reads.Reads``, all gathered in one place,
``engine.search.Gather``), and says whether it ran (each hit names the stages that did:
``explain.stages``). The orderings themselves are ``retrieval``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np

from ..._types import Signals
from ...filters import Selection
from ...retrieval.null import Null
from ...retrieval.past import Past
from ...retrieval.pipeline import Scored, SearchParams
from ...retrieval.reads import Neighbours, Reads
from ...retrieval.relevance import Evidence
from ...retrieval.scoring import convex_fusion, rrf_fusion
from ..changes import Verdicts

__all__ = ["ORDERINGS", "Search", "Stage", "fuse", "plan"]

#: the kinds of store a search tells apart (``explain.ordering``)
ORDERINGS = ("notes", "conversation", "long records", "keyword")

@dataclass(eq=False)
class Search:
    """One search's pool of candidates, handed from stage to stage.

    Set by the gathering: the query, the selection, ``dense`` and ``keyword`` (each index's
    candidates with their scores; ``kw_score`` the keyword scores by id), ``null`` (the
    namespace's, when there are vectors), ``past`` (what tells a question about the past, with
    an embedder) and ``kind``. The stages change: ``asks_past`` (``past``); ``dense_ids`` /
    ``kw_ids`` (each ranking's order), their ranks and ``fused`` (``context``,
    ``learned``); ``learned``; ``calibrated``, ``own``, ``evidence``, ``candidates`` and
    ``kinds`` (``calibrated``); ``ranked``, best first (the orderings that follow)."""

    text: str
    #: the query as words match it: without the days it names (``dates.without_days``)
    words: str
    sel: Selection
    vector: np.ndarray | None
    now: float
    p: SearchParams
    reads: Reads
    verdicts: Verdicts
    dense: list[tuple[str, float]]
    keyword: list[tuple[str, float]]
    kw_score: dict[str, float]
    null: Null | None = None
    past: Past | None = None
    asks_past: bool = False
    kind: str = "notes"
    long_records: bool = False
    observe: Callable[[list[str], np.ndarray], object] | None = None
    observe_notes: Callable[[list[str], np.ndarray, np.ndarray], object] | None = None
    dense_ids: list[str] = field(default_factory=list)
    kw_ids: list[str] = field(default_factory=list)
    vec_rank: dict[str, int] = field(default_factory=dict)
    kw_rank: dict[str, int] = field(default_factory=dict)
    fused: dict[str, float] = field(default_factory=dict)
    nb: Neighbours | None = None
    learned: dict[str, float] = field(default_factory=dict)
    calibrated: dict[str, float] = field(default_factory=dict)
    own: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    candidates: list[Signals] = field(default_factory=list)
    kinds: Mapping[str, str] = field(default_factory=dict)
    ranked: list[Scored[Signals]] = field(default_factory=list)


def fuse(s: Search, dense_ids: list[str], kw_ids: list[str]) -> None:
    """``s`` with the rankings ``dense_ids`` and ``kw_ids``, their ranks and their fusion."""
    s.dense_ids, s.kw_ids = dense_ids, kw_ids
    s.kw_rank = {rid: n for n, rid in enumerate(kw_ids, start=1)}
    s.vec_rank = {rid: n for n, rid in enumerate(dense_ids, start=1)}
    if s.p.fusion == "rrf":
        s.fused = rrf_fusion([dense_ids, kw_ids], k=s.p.rrf_k)
    else:
        s.fused = convex_fusion(s.reads.cosine, s.kw_score, alpha=s.p.alpha if s.dense else 0.0)


class Stage(Protocol):
    """One step of a search: ``name`` is how ``explain.stages`` lists it."""

    name: ClassVar[str]

    def run(self, search: Search) -> bool:
        """Change ``search`` (its order, its pool); whether the stage ran."""
        ...


def plan(kind: str, p: SearchParams) -> list[Stage]:
    """The stages a search of a store of ``kind`` runs under ``p``, in order."""
    from .calibrated import Calibrated
    from .context import Context
    from .current import Current
    from .follow_ups import FollowUps
    from .learned import Learned
    from .lifted import Lifted
    from .named import Named
    from .names import Names
    from .notes import Notes
    from .past import AsksPast
    from .standing import Standing
    from .weighted import Weighted

    fused: list[Stage] = [AsksPast()]
    if kind == "conversation":
        fused += [Context(), Learned()]
    if p.weights.rule != "relevance-first":
        return [*fused, Weighted(), Current()]
    if kind == "notes":
        ordering: list[Stage] = [Notes(), *([Names()] if p.entities else [])]
    else:
        ordering = [Lifted(), FollowUps()]
    return [*fused, Calibrated(), *ordering, Named(), Current(), Standing()]
