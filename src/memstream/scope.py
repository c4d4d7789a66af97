"""``Scope`` and ``Query``: whose memories a verb reads or writes, and which of them.

Every verb that selects memories (``add``, ``add_many``, ``get_all``, ``count``, ``search``,
``context``, ``delete_all``) on ``Memory``, ``AsyncMemory`` and ``Client`` takes a ``scope=``
and, where it reads, a ``Query`` (``search`` and ``context`` as their first argument, in place
of the text; the others as ``query=``); the same fields may be passed as keyword arguments instead
(Mem0's style), and both ways may be mixed as long as they agree::

    from memstream import Memory, Query, Scope

    alice = Scope(user_id="alice")
    with Memory(":memory:", embedder="none") as mem:
        mem.add("Alice is allergic to peanuts", scope=alice, kind="fact")
        mem.search(Query("allergies", kinds="fact", since="2026-01-01"), scope=alice)
        mem.get_all(scope=alice, query=Query(kinds="fact"))

The REST API, the MCP tools and the CLI take the same fields flat, with the same names
(``server/models.py`` declares them once, from these types; a test holds them together).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar

from .core import validate as v
from .core.clock import TimeLike, to_timestamp
from .errors import InvalidInput
from .filters import Selection, parse_filter

__all__ = ["AddArgs", "Query", "RecordArgs", "Scope", "ScopeArgs", "SearchArgs", "SelectArgs",
           "resolve", "selection", "split", "split_add"]


@dataclass(frozen=True)
class Scope:
    """Whose memories: a namespace (the tenant; None is the configured default) and, within
    it, optionally one user, one agent and one run or session."""

    namespace: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Query:
    """What to find: the ``text`` a search ranks by (``search`` and ``context`` only; a
    listing has none) and which memories of a scope qualify: only some ``kinds``; a payload
    and metadata ``filters`` expression (docs/filters.md); created in ``[since, until]``;
    steps within ``step_range`` (first, last); with ``include_invalid`` also invalidated
    (superseded) ones (a search whose text asks about the past reads them without it:
    docs/retrieval.md, "How memstream knows what is current"); ``as_of`` the memories as they
    were valid at that time. Empty: every valid memory of the scope."""

    text: str | None = None
    kinds: str | Sequence[str] | None = None
    filters: Mapping[str, Any] | None = None
    since: TimeLike | None = None
    until: TimeLike | None = None
    step_range: tuple[int, int] | None = None
    include_invalid: bool = False
    as_of: TimeLike | None = None


class ScopeArgs(TypedDict, total=False):
    """``Scope``'s fields as keyword arguments (Mem0's style): ``add(text, user_id="u1")``."""

    namespace: str | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None


class SearchArgs(ScopeArgs, total=False):
    """``Scope``'s and ``Query``'s fields (the text aside) as a search takes them as keyword
    arguments: ``search("...", user_id="u1", since="2026-01-01")``."""

    kinds: str | Iterable[str] | None
    filters: Mapping[str, Any] | None
    since: TimeLike | None
    until: TimeLike | None
    step_range: tuple[int, int] | None
    as_of: TimeLike | None


class SelectArgs(SearchArgs, total=False):
    """A listing's keyword arguments (``get_all``, ``count``): a search's, and
    ``include_invalid``."""

    include_invalid: bool


class RecordArgs(ScopeArgs, total=False):
    """What a new memory may be given besides its text (``add``'s keywords, an item of
    ``add_many``): its ``kind`` (default "observation"), structured ``data``, ``importance``
    (0 to 1; default: rated), ``step``, the time it happened (``at``), ``metadata``, the ids
    it was made from (``provenance``) and its ``embedding``."""

    kind: str
    data: Mapping[str, Any] | None
    importance: float | None
    step: int | None
    at: TimeLike | None
    metadata: Mapping[str, Any] | None
    provenance: Sequence[str] | None
    embedding: Any


class AddArgs(RecordArgs, total=False):
    """``add``'s keywords: a new memory's fields (``RecordArgs``), ``scope`` in place of the
    scope's keywords, ``infer`` (messages: extract and reconcile facts with an LLM) and
    ``duplicates`` ("refresh" or "keep", for this call)."""

    scope: Scope | None
    infer: bool
    duplicates: str | None


T = TypeVar("T", Scope, Query)


def resolve(cls: type[T], given: T | None, **flat: Any) -> T:
    """``given`` (or an empty ``cls``) with the keyword arguments that were set (not None,
    not False). A field set both ways must have the same value: two different values raise
    InvalidInput naming the field."""
    if given is not None and not isinstance(given, cls):
        raise InvalidInput(f"{cls.__name__.lower()} must be a memstream.{cls.__name__}, "
                           f"not {type(given).__name__}")
    base = given if given is not None else cls()
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(flat) - names
    if unknown:
        raise InvalidInput(f"unknown {cls.__name__} field(s) {sorted(unknown)}")
    changes: dict[str, Any] = {}
    for name, value in flat.items():
        if value is None or value is False:
            continue
        held = getattr(base, name)
        if held is not None and held is not False and held != value:
            raise InvalidInput(f"{name} is given twice with different values ({held!r} in "
                               f"{cls.__name__.lower()}=, {value!r} as an argument); give it "
                               "once")
        changes[name] = value
    return dataclasses.replace(base, **changes) if changes else base


_SCOPE_FIELDS = ("namespace", "user_id", "agent_id", "run_id")


def split_add(args: Mapping[str, Any]) -> tuple[Scope, bool, dict[str, Any]]:
    """``add``'s keywords split once (``Memory.add``, ``Client.add``): the scope (``scope`` and
    the scope's keywords, ``resolve``d), ``infer``, and the rest (the record's fields and
    ``duplicates``)."""
    given: dict[str, Any] = dict(args)
    scope, infer = given.pop("scope", None), bool(given.pop("infer", False))
    return (resolve(Scope, scope, **{k: given.pop(k) for k in _SCOPE_FIELDS if k in given}),
            infer, given)


def split(scope: Scope | None, query: Query | None, **flat: Any) -> tuple[Scope, Query]:
    """``resolve`` of a scope and a query at once, the flat arguments going to the type whose
    field they name."""
    return (resolve(Scope, scope, **{k: x for k, x in flat.items() if k in _SCOPE_FIELDS}),
            resolve(Query, query, **{k: x for k, x in flat.items() if k not in _SCOPE_FIELDS}))


def selection(scope: Scope, query: Query, *, default_namespace: str, ranked: bool = False
              ) -> Selection:
    """The store's selection for a scope and a query, every field validated (a missing
    namespace is ``default_namespace``); only a ranked read (search) takes a query's text."""
    if query.text is not None and not ranked:
        raise InvalidInput("a query's text ranks a search: give it to search() or "
                           "context(); this verb selects by the other fields only")
    step_min = step_max = None
    if query.step_range is not None:
        if len(query.step_range) != 2:
            raise InvalidInput("step_range is (first_step, last_step)")
        step_min, step_max = (v.step(s) for s in query.step_range)

    def when(t: TimeLike | None) -> float | None:
        return None if t is None else to_timestamp(t)

    return Selection(
        namespace=v.namespace(scope.namespace if scope.namespace is not None
                              else default_namespace),
        user_id=v.scope_id(scope.user_id, "user_id"),
        agent_id=v.scope_id(scope.agent_id, "agent_id"),
        run_id=v.scope_id(scope.run_id, "run_id"), kinds=v.kinds(query.kinds),
        since=when(query.since), until=when(query.until), step_min=step_min,
        step_max=step_max, where=parse_filter(query.filters),
        include_invalid=bool(query.include_invalid), as_of=when(query.as_of))
