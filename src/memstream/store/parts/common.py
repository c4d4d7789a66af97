"""What every SQL backend shares: the scope part of a selection's WHERE clause and the change
a patch makes to a record (with its history entry). Dialects differ only in placeholders."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..._types import HistoryEntry, Record
from ...errors import InvalidInput, NotFound
from ...filters import And, Cond, Expr, Not, Or, Selection
from ..protocol import (
    ApiKey,
    Patch,
)
from .backend import Backend

PATCHABLE = ("text", "data", "importance", "metadata", "invalidated_at", "superseded_by",
             "provenance")



def scope_clauses(sel: Selection, a: str, ph: str,
                  in_list: Callable[[str, list[str]], tuple[str, list[Any]]],
                  unindexed: str = "") -> tuple[list[str], list[Any]]:
    """The clauses for namespace, vector space, user / agent / run, kinds, time, steps and
    validity over table alias ``a``; ``ph`` is the dialect's placeholder, ``in_list(column,
    values)`` its membership test, ``unindexed`` what keeps a column's test off its index
    (SQLite's unary "+": there a narrower scope's own index must serve, not the space's)."""
    clauses = [f"{a}.namespace = {ph}"]
    params: list[Any] = [sel.namespace]
    if sel.space is not None:
        narrower = sel.user_id or sel.agent_id or sel.run_id or sel.kinds
        clauses.append(f"{unindexed if narrower else ''}{a}.space = {ph}")
        params.append(sel.space)
    for column in ("user_id", "agent_id", "run_id"):
        value = getattr(sel, column)
        if value is not None:
            clauses.append(f"{a}.{column} = {ph}")
            params.append(value)
    if sel.kinds:
        sql, values = in_list(f"{a}.kind", list(sel.kinds))
        clauses.append(sql)
        params.extend(values)
    for column, op, value in (
        ("created_at", ">=", sel.since),
        ("created_at", "<=", sel.until),
        ("step", ">=", sel.step_min),
        ("step", "<=", sel.step_max),
    ):
        if value is not None:
            clauses.append(f"{a}.{column} {op} {ph}")
            params.append(value)
    if sel.as_of is not None:
        clauses.append(f"{a}.created_at <= {ph} AND ({a}.invalidated_at IS NULL OR "
                       f"{a}.invalidated_at > {ph})")
        params.extend([sel.as_of, sel.as_of])
    elif not sel.include_invalid:
        clauses.append(f"{a}.invalidated_at IS NULL")
    return clauses, params


def selection_where(sel: Selection, a: str, ph: str,
                    in_list: Callable[[str, list[str]], tuple[str, list[Any]]],
                    cond: Callable[[Cond, str], tuple[str, list[Any]]], false: str,
                    unindexed: str = "") -> tuple[str, list[Any]]:
    """The whole WHERE clause of a selection: its scope, then its payload filter compiled
    with the dialect's ``cond`` (one condition) and ``false`` literal."""
    clauses, params = scope_clauses(sel, a, ph, in_list, unindexed)
    if sel.where is not None:
        sql, p = _expr(sel.where, a, cond, false)
        clauses.append(sql)
        params.extend(p)
    return " AND ".join(clauses), params


def _expr(expr: Expr, a: str, cond: Callable[[Cond, str], tuple[str, list[Any]]], false: str
          ) -> tuple[str, list[Any]]:
    if isinstance(expr, Cond):
        sql, params = cond(expr, a)
        return f"COALESCE({sql}, {false})", params  # two-valued: a missing key is false
    if isinstance(expr, Not):
        sql, params = _expr(expr.item, a, cond, false)
        return f"NOT ({sql})", params
    parts = [_expr(e, a, cond, false) for e in expr.items]
    joiner = " AND " if isinstance(expr, And) else " OR "
    assert isinstance(expr, And | Or)
    return "(" + joiner.join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]


@dataclass(frozen=True)
class Change:
    """What a patch changes: ``fields`` (new values), the history entry's ``old`` and ``new``
    (provenance as lists) and ``event``; ``requeue`` when the text changed, so the embedding
    must be made again."""

    fields: dict[str, Any]
    old: dict[str, Any]
    new: dict[str, Any]
    event: str
    requeue: bool


def diff(before: Record, patch: Patch) -> Change | None:
    """The change ``patch`` makes to ``before``, or None when it changes nothing."""
    fields = {name: getattr(patch, name) for name in PATCHABLE
              if getattr(patch, name) is not None
              and getattr(patch, name) != getattr(before, name)}
    if patch.restore and before.invalidated_at is not None:
        fields.update(invalidated_at=None, superseded_by=None)
    if not fields:
        return None

    def plain(name: str, value: Any) -> Any:
        return list(value) if name == "provenance" else value

    return Change(
        fields=fields,
        old={k: plain(k, getattr(before, k)) for k in fields},
        new={k: plain(k, v) for k, v in fields.items()},
        event="restore" if patch.restore and set(fields) <= {"invalidated_at", "superseded_by"}
        else "invalidate" if set(fields) <= {"invalidated_at", "superseded_by"} else "update",
        requeue="text" in fields)


def change_of(before: Record | None, namespace: str, record_id: str, patch: Patch
              ) -> tuple[Record, Change | None]:
    """The record an update reads (NotFound when there is none) and what the patch changes of
    it (None: nothing)."""
    if before is None:
        raise NotFound(f"no record {record_id!r} in namespace {namespace!r}")
    return before, diff(before, patch)


def memory_key(r: Record) -> tuple[Any, ...] | None:
    """What makes two records the same memory for ``insert(refresh=True)``: namespace, user,
    agent and run, kind, text, data and metadata all equal. None for a record with a step (a
    step-indexed state or action is an event of its step, never a repeat of another)."""
    if r.step is not None:
        return None
    return (r.namespace, r.user_id, r.agent_id, r.run_id, r.kind, r.text,
            json.dumps(r.data, sort_keys=True), json.dumps(r.metadata or {}, sort_keys=True))


@dataclass(frozen=True)
class Refresh:
    """What ``insert(refresh=True)`` does: ``fresh`` records to insert; ``stored`` records
    already in the store to refresh (their new values); ``entries`` one "refresh" history
    entry per repeat; ``found`` the record each repeat's id now stands for."""

    fresh: list[Record]
    stored: list[Record]
    entries: list[HistoryEntry]
    found: dict[str, Record]


def plan_refresh(records: Sequence[Record], lookup: Callable[[Record], list[Record]]
                 ) -> Refresh:
    """Split ``records`` into new memories and repeats of one already stored (``lookup`` gives
    the valid stored records without a step in the record's namespace whose text is the
    record's) or given earlier in the same call. A repeat refreshes the memory it repeats:
    its last access moves to the repeat's time (never back), its access count grows by one and
    its history gets a "refresh" entry."""
    fresh: list[Record] = []
    stored: dict[str, Record] = {}
    entries: list[HistoryEntry] = []
    found: dict[str, Record] = {}
    known: dict[tuple[Any, ...], Record] = {}
    for r in records:
        key = memory_key(r)
        if key is None:
            fresh.append(r)
            continue
        target = known.get(key)
        if target is None:
            target = next((s for s in lookup(r) if memory_key(s) == key), None)
            if target is not None:
                target = stored.setdefault(target.id, target)
        if target is None:
            known[key] = r
            fresh.append(r)
            continue
        old = {"last_accessed_at": target.last_accessed_at, "access_count": target.access_count}
        target.last_accessed_at = max(target.last_accessed_at, r.created_at)
        target.access_count += 1
        entries.append(HistoryEntry(
            namespace=target.namespace, record_id=target.id, event="refresh", at=r.created_at,
            old=old, new={"last_accessed_at": target.last_accessed_at,
                          "access_count": target.access_count}))
        known[key] = target
        found[r.id] = target
    final = {rid: dataclasses.replace(t, event="refresh") for rid, t in found.items()}
    return Refresh(fresh, list(stored.values()), entries, final)


_ORDERS = {"created": "r.created_at, r.id", "-created": "r.created_at DESC, r.id DESC",
           "step": "r.step, r.created_at, r.id",
           "-step": "r.step DESC NULLS LAST, r.created_at DESC, r.id DESC"}


def order_sql(order: str) -> str:
    """The ORDER BY of ``Store.select``'s orders (the same SQL for both stores)."""
    if order not in _ORDERS:
        raise InvalidInput(f"order must be one of {sorted(_ORDERS)}, not {order!r}")
    return _ORDERS[order]


class Keys:
    """A store's API keys (``protocol.KeyStore``, reached through ``keys_of``): by id and all
    of them, the same on every backend over its ``_keys`` query; a backend adds ``put_key``,
    ``revoke_key`` and ``_keys``."""

    def __init__(self, backend: Backend) -> None:
        self._session = backend.session
        self._ph = backend.PLACEHOLDER

    def _keys(self, where: str, params: tuple[Any, ...]) -> list[ApiKey]:
        raise NotImplementedError

    def put_key(self, key: ApiKey) -> None:
        raise NotImplementedError

    def revoke_key(self, key_id: str, *, at: float) -> bool:
        raise NotImplementedError

    def get_key(self, key_id: str) -> ApiKey | None:
        found = self._keys(f"WHERE id = {self._ph}", (key_id,))
        return found[0] if found else None

    def list_keys(self) -> list[ApiKey]:
        return self._keys("ORDER BY created_at, id", ())
