"""Compile a ``Selection`` and its payload filter into a PostgreSQL WHERE clause.

The meaning is the one ``memstream.filters.matches`` gives in Python (and ``_sqlite_sql`` gives
in SQLite); the conformance suite checks all of them agree. Every value, JSON path included, is
bound as a parameter.
"""

from __future__ import annotations

from typing import Any

from ..filters import And, Cond, Expr, Not, Or, Selection


def selection_sql(sel: Selection, alias: str = "r") -> tuple[str, list[Any]]:
    """``(sql, params)`` for the WHERE clause of a selection over table alias ``alias``."""
    a = alias
    clauses = [f"{a}.namespace = %s"]
    params: list[Any] = [sel.namespace]
    for column in ("user_id", "agent_id", "run_id"):
        value = getattr(sel, column)
        if value is not None:
            clauses.append(f"{a}.{column} = %s")
            params.append(value)
    if sel.kinds:
        clauses.append(f"{a}.kind = ANY(%s)")
        params.append(list(sel.kinds))
    for column, op, value in (
        ("created_at", ">=", sel.since),
        ("created_at", "<=", sel.until),
        ("step", ">=", sel.step_min),
        ("step", "<=", sel.step_max),
    ):
        if value is not None:
            clauses.append(f"{a}.{column} {op} %s")
            params.append(value)
    if sel.as_of is not None:
        clauses.append(f"{a}.created_at <= %s AND ({a}.invalidated_at IS NULL OR "
                       f"{a}.invalidated_at > %s)")
        params.extend([sel.as_of, sel.as_of])
    elif not sel.include_invalid:
        clauses.append(f"{a}.invalidated_at IS NULL")
    if sel.where is not None:
        sql, p = _expr(sel.where, a)
        clauses.append(sql)
        params.extend(p)
    return " AND ".join(clauses), params


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


def _expr(expr: Expr, a: str) -> tuple[str, list[Any]]:
    if isinstance(expr, Cond):
        sql, params = _cond(expr, a)
        return f"COALESCE({sql}, false)", params  # two-valued: a missing key is false
    if isinstance(expr, Not):
        sql, params = _expr(expr.item, a)
        return f"NOT ({sql})", params
    parts = [_expr(e, a) for e in expr.items]
    joiner = " AND " if isinstance(expr, And) else " OR "
    assert isinstance(expr, And | Or)
    return "(" + joiner.join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
