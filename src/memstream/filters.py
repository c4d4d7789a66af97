"""Which records a query may see: the scope and the payload filter language.

A payload filter is a JSON-like dict::

    {"topic": "food"}                                  # equality
    {"score": {"gte": 3, "lt": 10}}                    # several operators on one field: all hold
    {"tags": {"contains": "urgent"}}                   # list membership or substring
    {"place.city": {"in": ["Paris", "Rome"]}}          # dotted keys reach into nested objects
    {"metadata.source": "chat"}                        # "metadata." addresses the metadata
    {"OR": [{"topic": "food"}, {"NOT": {"score": {"lt": 5}}}]}

Operators: eq, ne, in, nin, gt, gte, lt, lte, contains. Combinators: AND, OR (lists) and NOT
(one filter). A bare key that names a record field (``user_id``, ``kind``, ...) is an error
that names the argument selecting on it: filters never silently look for it in the payload
(``data.kind`` does). Keys in one dict are combined with AND. ``parse_filter`` turns the dict into a
small tree that each backend compiles to its own query language; ``matches`` evaluates the same
tree in Python, so that every backend can be checked against one meaning.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._types import Record
from .errors import InvalidFilter

_SURROGATE = re.compile("[\ud800-\udfff]")

__all__ = ["OPERATORS", "And", "Cond", "Expr", "Not", "Or", "Selection", "matches", "parse_filter"]

OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains")
_COMBINATORS = {"AND": "AND", "$and": "AND", "OR": "OR", "$or": "OR", "NOT": "NOT", "$not": "NOT"}
_SEGMENT = re.compile(r"^[A-Za-z0-9_\-]{1,64}\Z")
_MAX_DEPTH = 16
#: values one filter may compare with in all (each condition's value, each value of in/nin)
MAX_VALUES = 500


@dataclass(frozen=True, slots=True)
class Cond:
    """``source.path op value`` where source is the payload (``data``) or ``metadata``."""

    source: Literal["data", "metadata"]
    path: tuple[str, ...]
    op: str
    value: Any


@dataclass(frozen=True, slots=True)
class And:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not:
    item: Expr


Expr = Cond | And | Or | Not


@dataclass(frozen=True, slots=True)
class Selection:
    """The records one query may see: always exactly one namespace, then optional narrowing.

    ``since``/``until`` bound ``created_at`` (inclusive); ``step_min``/``step_max`` bound
    ``step`` (inclusive). Invalidated records are left out unless ``include_invalid``. With
    ``as_of``, the records valid at that time: created at or before it and not invalidated
    before or at it. ``space``: the records of one vector space ("" the text space, which every
    verb of the memory reads); None, of every space (deletes and the inspector).
    """

    namespace: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    kinds: tuple[str, ...] | None = None
    since: float | None = None
    until: float | None = None
    step_min: int | None = None
    step_max: int | None = None
    where: Expr | None = None
    include_invalid: bool = False
    as_of: float | None = None
    space: str | None = ""


def parse_filter(raw: Mapping[str, Any] | None) -> Expr | None:
    """Validate a filter dict and return its tree (None for no filter)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InvalidFilter(
            f"a filter must be a dict such as {{'topic': 'food'}}, not {type(raw).__name__}"
        )
    if not raw:
        return None
    expr = _parse(raw, 0)
    if _size(expr) > MAX_VALUES:
        raise InvalidFilter(f"the filter compares with more than {MAX_VALUES} values in all; "
                            "narrow it, or store a field that groups those values")
    return expr


def _size(expr: Expr) -> int:
    if isinstance(expr, Cond):
        return len(expr.value) if expr.op in ("in", "nin") else 1
    if isinstance(expr, Not):
        return _size(expr.item)
    return sum(_size(e) for e in expr.items)


def _parse(raw: Any, depth: int) -> Expr:
    if depth > _MAX_DEPTH:
        raise InvalidFilter(f"the filter nests deeper than {_MAX_DEPTH} levels; flatten it")
    if not isinstance(raw, Mapping) or not raw:
        raise InvalidFilter(f"expected a non-empty filter dict, got {raw!r}")
    parts: list[Expr] = []
    for key, value in raw.items():
        if not isinstance(key, str):
            raise InvalidFilter(f"filter keys must be strings, got {key!r}")
        comb = _COMBINATORS.get(key)
        if comb == "NOT":
            parts.append(Not(_parse(value, depth + 1)))
        elif comb in ("AND", "OR"):
            if isinstance(value, Mapping | str) or not isinstance(value, Sequence) or not value:
                raise InvalidFilter(f"{key} takes a non-empty list of filters, got {value!r}")
            items = tuple(_parse(v, depth + 1) for v in value)
            parts.append(And(items) if comb == "AND" else Or(items))
        else:
            parts.extend(_parse_field(key, value))
    return parts[0] if len(parts) == 1 else And(tuple(parts))


#: record fields, which filters do not address: each with the argument that selects on it
RECORD_FIELDS = {
    "user_id": "user_id=", "agent_id": "agent_id=", "run_id": "run_id=", "kind": "kinds=",
    "kinds": "kinds=", "namespace": "namespace=", "created_at": "since= / until=",
    "step": "step_range=", "id": "get(id)", "text": "the query", "importance": "weights=",
}


def _parse_field(key: str, value: Any) -> list[Expr]:
    if key in RECORD_FIELDS:
        raise InvalidFilter(
            f"filter key {key!r} names a record field, but filters address the payload "
            f"(data) and metadata: select on it with {RECORD_FIELDS[key]} instead; for a "
            f"payload field of that name write 'data.{key}'")
    source: Literal["data", "metadata"] = "data"
    dotted = key
    if key.startswith("metadata."):
        source, dotted = "metadata", key[len("metadata.") :]
    elif key.startswith("data."):
        dotted = key[len("data.") :]
    path = tuple(dotted.split("."))
    if not all(_SEGMENT.match(seg) for seg in path):
        raise InvalidFilter(
            f"filter key {key!r} is not a dotted path of letters, digits, '_' and '-'"
        )
    if isinstance(value, Mapping):
        if not value:
            raise InvalidFilter(f"filter on {key!r} has no operator; use e.g. {{'eq': 1}}")
        return [_cond(source, path, key, op, v) for op, v in value.items()]
    return [_cond(source, path, key, "eq", value)]


def _cond(source: Literal["data", "metadata"], path: tuple[str, ...], key: str, op: Any,
          value: Any) -> Cond:
    if op not in OPERATORS:
        raise InvalidFilter(
            f"unknown filter operator {op!r} on {key!r}; use one of {', '.join(OPERATORS)}"
        )
    if op in ("in", "nin"):
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
            raise InvalidFilter(f"{op!r} on {key!r} takes a list of values, got {value!r}")
        for v in value:
            _check_scalar(key, op, v)
        value = tuple(value)
    elif op in ("gt", "gte", "lt", "lte"):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise InvalidFilter(f"{op!r} on {key!r} compares with a number or a string")
        _check_scalar(key, op, value)
    elif op == "contains":
        _check_scalar(key, op, value)
        if value is None:
            raise InvalidFilter(f"'contains' on {key!r} needs a value, not null")
    else:
        _check_scalar(key, op, value)
    return Cond(source, path, op, value)


def _check_scalar(key: str, op: str, value: Any) -> None:
    if value is not None and not isinstance(value, str | int | float | bool):
        raise InvalidFilter(
            f"{op!r} on {key!r} compares with a string, number, bool or null, not {value!r}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidFilter(f"{op!r} on {key!r} cannot compare with {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) \
            and not -(2**63) <= value < 2**63:
        raise InvalidFilter(f"{op!r} on {key!r}: {str(value)[:24]}... does not fit in 64 bits; "
                            "compare with a float or a string instead")
    for text in (key, value):
        if isinstance(text, str) and _SURROGATE.search(text):
            raise InvalidFilter(f"{op!r} on {key!r}: a lone surrogate cannot be compared; clean "
                                "the string first")


# --- evaluation in Python: the reference meaning every backend must agree with ---------------

_MISSING = object()


def _lookup(record: Record, cond: Cond) -> Any:
    node: Any = record.data if cond.source == "data" else record.metadata
    for seg in cond.path:
        if not isinstance(node, Mapping) or seg not in node:
            return _MISSING
        node = node[seg]
    return node


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return bool(a == b)


def _order(a: Any, b: Any, op: str) -> bool:
    numeric = (int, float)
    a_num = isinstance(a, numeric) and not isinstance(a, bool)
    b_num = isinstance(b, numeric) and not isinstance(b, bool)
    if not ((a_num and b_num) or (isinstance(a, str) and isinstance(b, str))):
        return False
    if op == "gt":
        return bool(a > b)
    if op == "gte":
        return bool(a >= b)
    if op == "lt":
        return bool(a < b)
    return bool(a <= b)


def _eval_cond(cond: Cond, record: Record) -> bool:
    actual = _lookup(record, cond)
    op, want = cond.op, cond.value
    if op == "eq":
        if want is None:
            return actual is _MISSING or actual is None
        return actual is not _MISSING and _same(actual, want)
    if op == "ne":
        if want is None:
            return actual is not _MISSING and actual is not None
        return actual is _MISSING or actual is None or not _same(actual, want)
    if actual is _MISSING or actual is None:
        return op == "nin"
    if op == "in":
        return any(_same(actual, w) for w in want)
    if op == "nin":
        return not any(_same(actual, w) for w in want)
    if op == "contains":
        if isinstance(actual, list):
            return any(_same(item, want) for item in actual)
        if isinstance(actual, str):
            return str(want) in actual
        return False
    return _order(actual, want, op)


def matches(expr: Expr | None, record: Record) -> bool:
    """Whether a record satisfies a parsed filter (None matches everything)."""
    if expr is None:
        return True
    if isinstance(expr, Cond):
        return _eval_cond(expr, record)
    if isinstance(expr, And):
        return all(matches(e, record) for e in expr.items)
    if isinstance(expr, Or):
        return any(matches(e, record) for e in expr.items)
    return not matches(expr.item, record)


def admits(sel: Selection, record: Record) -> bool:
    """Whether a selection sees a record (what the stores' selection SQL decides, in Python: for
    records reached another way than through an index, such as an entity's mentions)."""
    r = record
    if r.namespace != sel.namespace or (sel.space is not None and r.space != sel.space):
        return False
    for name in ("user_id", "agent_id", "run_id"):
        want = getattr(sel, name)
        if want is not None and getattr(r, name) != want:
            return False
    if sel.kinds is not None and r.kind not in sel.kinds:
        return False
    if (sel.since is not None and r.created_at < sel.since) or \
            (sel.until is not None and r.created_at > sel.until):
        return False
    if (sel.step_min is not None or sel.step_max is not None) and (
            r.step is None or (sel.step_min is not None and r.step < sel.step_min)
            or (sel.step_max is not None and r.step > sel.step_max)):
        return False
    if sel.as_of is not None:
        if r.created_at > sel.as_of or (r.invalidated_at is not None
                                         and r.invalidated_at <= sel.as_of):
            return False
    elif not sel.include_invalid and r.invalidated_at is not None:
        return False
    return matches(sel.where, r)
