"""Compile a ``Selection`` and its payload filter into a PostgreSQL WHERE clause.

The meaning is the one ``memstream.filters.matches`` gives in Python (and ``sqlite.sql`` gives
in SQLite); the conformance suite checks all of them agree. Every value, JSON path included, is
bound as a parameter.
"""

from __future__ import annotations

from typing import Any

from ...filters import Cond, Selection
from ..parts.common import selection_where


def selection_sql(sel: Selection, alias: str = "r") -> tuple[str, list[Any]]:
    """``(sql, params)`` for the WHERE clause of a selection over table alias ``alias``."""
    return selection_where(sel, alias, "%s",
                           lambda col, vals: (f"{col} = ANY(%s)", [vals]),
                           _cond, "false")


def _typed_eq(at: str, value: Any) -> tuple[str, list[Any]]:
    """SQL true when the JSON value ``at`` equals ``value`` with the same JSON type."""
    if isinstance(value, bool):
        return f"({at} = %s::jsonb)", ["true" if value else "false"]
    if isinstance(value, int | float):
        return f"(jsonb_typeof({at}) = 'number' AND ({at})::float8 = %s)", [float(value)]
    return f"(jsonb_typeof({at}) = 'string' AND ({at} #>> '{{}}') = %s)", [value]


def _cond(cond: Cond, a: str) -> tuple[str, list[Any]]:
    col = f"{a}.data" if cond.source == "data" else f"{a}.metadata"
    path = list(cond.path)
    op, v = cond.op, cond.value
    at = f"({col} #> %s::text[])"

    def bind(sql: str, params: list[Any]) -> tuple[str, list[Any]]:
        """Each use of the path in ``sql`` takes the path as one more parameter, in order."""
        out: list[Any] = []
        pieces = sql.split(at)
        for n, piece in enumerate(pieces):
            if n:
                out.append(path)
            out.extend(params.pop(0) for _ in range(piece.count("%s")))
        return sql, out

    def eq(value: Any) -> tuple[str, list[Any]]:
        if value is None:
            return f"COALESCE(jsonb_typeof({at}), 'null') = 'null'", []
        return _typed_eq(at, value)

    if op in ("eq", "ne"):
        sql, params = bind(*eq(v))
        return (sql, params) if op == "eq" else (f"NOT COALESCE({sql}, false)", params)
    if op in ("in", "nin"):
        parts = [bind(*eq(item)) for item in v]
        sql = "(" + " OR ".join(p[0] for p in parts) + ")" if parts else "false"
        params = [x for p in parts for x in p[1]]
        return (sql, params) if op == "in" else (f"NOT COALESCE({sql}, false)", params)
    if op == "contains":
        item = "true" if v is True else "false" if v is False else None
        element = "%s::jsonb" if item is not None else (
            "to_jsonb(%s::float8)" if isinstance(v, int | float) else "to_jsonb(%s::text)")
        sql = (f"((jsonb_typeof({at}) = 'array' AND {at} @> jsonb_build_array({element})) OR "
               f"(jsonb_typeof({at}) = 'string' AND strpos({at} #>> '{{}}', %s) > 0))")
        first = item if item is not None else float(v) if isinstance(v, int | float) else v
        return bind(sql, [first, str(v)])
    sym = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op]
    if isinstance(v, int | float):
        return bind(f"(jsonb_typeof({at}) = 'number' AND ({at})::float8 {sym} %s)", [float(v)])
    return bind(f"(jsonb_typeof({at}) = 'string' AND ({at} #>> '{{}}') COLLATE \"C\" {sym} %s)",
                [v])
