"""Compile a ``Selection`` and its payload filter into an SQLite WHERE clause.

The meaning is the one ``memstream.filters.matches`` gives in Python; the conformance suite
checks that both agree. Every value is bound as a parameter; JSON paths are built only from
validated segments and bound too.
"""

from __future__ import annotations

from typing import Any

from ...filters import Cond, Selection
from ..parts.common import selection_where

_NUM = "('integer','real')"


def selection_sql(sel: Selection, alias: str = "r") -> tuple[str, list[Any]]:
    """``(sql, params)`` for the WHERE clause of a selection over table alias ``alias``."""
    return selection_where(sel, alias, "?",
                           lambda col, vals: (f"{col} IN ({','.join('?' * len(vals))})", vals),
                           _cond, "0", unindexed="+")


def _path(cond: Cond) -> str:
    return "$" + "".join(f'."{seg}"' for seg in cond.path)


def _typed_eq(col: str, path: str, value: Any) -> tuple[str, list[Any]]:
    """SQL true when the JSON value at path equals value with the same JSON type."""
    if isinstance(value, bool):
        return f"json_type({col}, ?) = ?", [path, "true" if value else "false"]
    if isinstance(value, int | float):
        params: list[Any] = [path, path, value]
        return f"(json_type({col}, ?) IN {_NUM} AND json_extract({col}, ?) = ?)", params
    return f"(json_type({col}, ?) = 'text' AND json_extract({col}, ?) = ?)", [path, path, value]


def _is_null(col: str, path: str) -> tuple[str, list[Any]]:
    return f"COALESCE(json_type({col}, ?), 'null') = 'null'", [path]


def _cond(cond: Cond, a: str) -> tuple[str, list[Any]]:
    col = f"{a}.data" if cond.source == "data" else f"{a}.metadata"
    path, op, v = _path(cond), cond.op, cond.value
    if op in ("eq", "ne"):
        sql, params = _is_null(col, path) if v is None else _typed_eq(col, path, v)
        return (sql, params) if op == "eq" else (f"NOT COALESCE({sql}, 0)", params)
    if op in ("in", "nin"):
        parts = [_typed_eq(col, path, item) for item in v if item is not None]
        if any(item is None for item in v):
            parts.append(_is_null(col, path))
        sql = "(" + " OR ".join(p[0] for p in parts) + ")" if parts else "0"
        params = [x for p in parts for x in p[1]]
        return (sql, params) if op == "in" else (f"NOT COALESCE({sql}, 0)", params)
    if op == "contains":
        item_params: list[Any]
        if isinstance(v, bool):
            item_sql, item_params = "j.type = ?", ["true" if v else "false"]
        elif isinstance(v, int | float):
            item_sql, item_params = f"(j.type IN {_NUM} AND j.value = ?)", [v]
        else:
            item_sql, item_params = "(j.type = 'text' AND j.value = ?)", [v]
        sql = (
            f"((json_type({col}, ?) = 'array' AND EXISTS (SELECT 1 FROM json_each({col}, ?) AS j "
            f"WHERE {item_sql})) OR (json_type({col}, ?) = 'text' "
            f"AND instr(json_extract({col}, ?), ?) > 0))"
        )
        return sql, [path, path, *item_params, path, path, str(v)]
    sym = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    kind = _NUM if isinstance(v, int | float) else "('text')"
    return (f"(json_type({col}, ?) IN {kind} AND json_extract({col}, ?) {sym} ?)",
            [path, path, v])
