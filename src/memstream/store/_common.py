"""What every SQL backend shares: the scope part of a selection's WHERE clause and the change
a patch makes to a record (with its history entry). Dialects differ only in placeholders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._types import Record
from ..errors import InvalidInput
from ..filters import And, Cond, Expr, Not, Or, Selection
from .protocol import Patch

PATCHABLE = ("text", "data", "importance", "metadata", "invalidated_at", "superseded_by",
             "provenance")

#: keyword statistics of a selection of up to this many records are its own (both backends)
SELECTION_STATS = 5000


def scope_clauses(sel: Selection, a: str, ph: str,
                  in_list: Callable[[str, list[str]], tuple[str, list[Any]]]
                  ) -> tuple[list[str], list[Any]]:
    """The clauses for namespace, user / agent / run, kinds, time, steps and validity over
    table alias ``a``; ``ph`` is the dialect's placeholder, ``in_list(column, values)`` its
    membership test."""
    clauses = [f"{a}.namespace = {ph}"]
    params: list[Any] = [sel.namespace]
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
                    cond: Callable[[Cond, str], tuple[str, list[Any]]], false: str
                    ) -> tuple[str, list[Any]]:
    """The whole WHERE clause of a selection: its scope, then its payload filter compiled
    with the dialect's ``cond`` (one condition) and ``false`` literal."""
    clauses, params = scope_clauses(sel, a, ph, in_list)
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
    if not fields:
        return None

    def plain(name: str, value: Any) -> Any:
        return list(value) if name == "provenance" else value

    return Change(
        fields=fields,
        old={k: plain(k, getattr(before, k)) for k in fields},
        new={k: plain(k, v) for k, v in fields.items()},
        event="invalidate" if set(fields) <= {"invalidated_at", "superseded_by"} else "update",
        requeue="text" in fields)


_ORDERS = {"created": "r.created_at, r.id", "-created": "r.created_at DESC, r.id DESC",
           "step": "r.step, r.created_at, r.id"}


def order_sql(order: str) -> str:
    """The ORDER BY of ``Store.select``'s orders (the same SQL for both stores)."""
    if order not in _ORDERS:
        raise InvalidInput(f"order must be one of {sorted(_ORDERS)}, not {order!r}")
    return _ORDERS[order]


class Selecting:
    """``select`` and ``select_ids`` of a store, given how it runs a selection's query
    (``_selected``) and makes a record of a row (``_record``)."""

    _ALL: str  # "SELECT <every column> FROM records r"

    def _selected(self, head: str, sel: Selection, limit: int | None, offset: int,
                  order: str) -> list[Any]:
        raise NotImplementedError

    def _record(self, row: Any) -> Record:
        raise NotImplementedError

    def select(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
               order: str = "created") -> list[Record]:
        return [self._record(row) for row in self._selected(self._ALL, sel, limit, offset,
                                                            order)]

    def select_ids(self, sel: Selection, *, limit: int | None = None, offset: int = 0,
                   order: str = "created") -> list[str]:
        return [row[0] for row in self._selected("SELECT r.id FROM records r", sel, limit,
                                                 offset, order)]
