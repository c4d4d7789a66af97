"""How alike two agent states are, in the states' own units.

A state is flattened to its leaves: ``path -> value``, nested keys joined by dots and list items
by their index (``position[0]``; the first 32 items of a list). A stored state is compared with
the query field by field over the query's paths (a partial query asks only about the fields it
names; what else a state holds is no difference):

* a number in both: the difference divided by the field's *scale*, the standard deviation of
  that field over the agent's states being compared (so a position in metres and a health in
  [0, 1] both count). A field the agent never varied has no scale: there, any difference counts
  1, as for a category;
* any other value in both (a string, a bool, None, or a number against a string): 0 when equal,
  1 when not;
* a field of the query that the state lacks: 1 (a missing field is a difference, never a
  match).

distance = sqrt(sum of the squared parts); similarity = 1 / (1 + distance). A state that
matches every field of the query is at distance 0, so an exact match always ranks first; equal
distances go to the most recent step. Each tier compares at its own resolution: STM the full
state, IM its compressed form and LTM its long-term fields, each against the query cut to the
same form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .features import _kept, compress, leaves

__all__ = ["Scales", "distances", "flatten", "form", "scales", "similarity"]

_LIST_ITEMS = 32
_NUMBER = (int, float)
_MISSING = object()
_SCALARS = frozenset((str, int, float, bool, type(None)))

#: field path -> its scale (None: the agent never varied it, or it is not a number)
Scales = dict[str, float | None]


def flatten(state: Mapping[str, Any]) -> dict[str, Any]:
    """``path -> scalar`` for every leaf of a state."""
    out: dict[str, Any] = {}
    _walk(state, "", out)
    return out


def _walk(node: Any, here: str, out: dict[str, Any]) -> None:
    if type(node) is dict or isinstance(node, Mapping):
        pairs = [(f"{here}.{k}" if here else str(k), val) for k, val in node.items()]
    elif type(node) is list or type(node) is tuple:
        pairs = [(f"{here}[{i}]", val) for i, val in enumerate(node[:_LIST_ITEMS])]
    else:
        out[here] = node
        return
    for key, val in pairs:
        if type(val) in _SCALARS:  # no call for a leaf: this runs for every state compared
            out[key] = val
        else:
            _walk(val, key, out)


def form(state: Mapping[str, Any], level: int) -> dict[str, Any]:
    """The flattened state at a tier's resolution: 0 full (STM), 1 compressed (IM), 2 the
    long-term fields (LTM, without the abstract, which only repeats them)."""
    if level == 0:
        return flatten(state)
    if level == 1:
        return flatten(compress(state, 1))
    return _kept(leaves(state))


def _is_number(value: Any) -> bool:
    return type(value) in _NUMBER and math.isfinite(value)


def scales(states: Sequence[Mapping[str, Any]]) -> Scales:
    """Each numeric field's standard deviation over flattened states (None where there is
    none: fewer than two numbers, or all equal)."""
    columns: dict[str, list[float]] = {}
    for state in states:
        for path, value in state.items():
            if _is_number(value):
                columns.setdefault(path, []).append(value)
    out: Scales = {}
    for path, values in columns.items():
        spread = float(np.std(values)) if len(values) > 1 else 0.0
        out[path] = spread if spread > 0 else None
    return out


def distances(query: Mapping[str, Any], states: Sequence[Mapping[str, Any]],
              scale: Scales) -> np.ndarray:
    """The distance of each flattened state to the flattened query (module rules)."""
    n = len(states)
    squared = np.zeros(n)
    if not n:
        return squared
    for path in query:  # the query's fields only: a partial query asks about those
        want = query.get(path, _MISSING)
        column = [s.get(path, _MISSING) for s in states]
        spread = scale.get(path)
        if spread is not None and _is_number(want):
            values = np.array([x if _is_number(x) else np.nan for x in column])
            parts = (values - want) / spread
            squared += np.where(np.isnan(parts), 1.0, parts * parts)
        else:
            squared += np.array([not _same(x, want) for x in column], dtype=float)
    result: np.ndarray = np.sqrt(squared)
    return result


def _same(a: Any, b: Any) -> bool:
    """Equal as categories: 1 and True differ, 1 and 1.0 do not."""
    if a is _MISSING:
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def similarity(distance: float) -> float:
    """1 for an identical state, towards 0 as the distance grows."""
    return 1.0 / (1.0 + distance)
