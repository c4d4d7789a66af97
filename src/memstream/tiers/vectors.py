"""The write path of a batch of states: each state's validated copy, its full vector, its
long-term vector and its search text, computed once per distinct leaf.

A simulation's states repeat most of their leaves from one step to the next (a zone, a status,
a grid cell, a rounded level), so what a ``(path, value)`` leaf adds to each vector is kept in a
bounded cache: a state costs one walk and a lookup per leaf. The results are those of the
definitions, bit for bit (``features.state_vector`` of the state, ``features.long_term``'s
vector, ``search_text``); a state the shortcut does not cover (an abstract cut short, a field
named "abstract") takes the definitions' own path.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import validate as v
from ..errors import InvalidInput
from .features import (
    ABSTRACT_CHARS,
    DIM,
    abstract_words,
    flat_unit_rows,
    hash_into,
    leaves,
    long_term,
    number_features,
    rounded,
)

__all__ = ["StateBatch", "search_text"]

_CACHE_SIZE = 1 << 16  # leaves; emptied when full
_LONGEST = 64  # longer strings are not kept (they seldom repeat)
_MAX_DEPTH = 64


def search_text(kind: str, pairs: Sequence[tuple[str, Any]]) -> str:
    """What content search matches: the kind and the words of the string values (numbers
    are found with attribute queries, not words). ``pairs``: the contents' leaves."""
    words = [f"{path.rsplit('.', 1)[-1]} {val}" for path, val in pairs if isinstance(val, str)]
    return f"{kind}: " + "; ".join(words)[:1000] if words else kind


class _NotPlain(Exception):
    """Not plain JSON data: the general validation decides."""


def _copy(node: dict[str, Any], here: str, out: list[tuple[str, Any]], depth: int
          ) -> dict[str, Any]:
    """A copy of a dict of plain JSON data, appending its ``features.leaves`` to ``out``."""
    if depth > _MAX_DEPTH:
        raise _NotPlain
    copy: dict[str, Any] = {}
    for k, val in node.items():
        if type(k) is not str:
            raise _NotPlain
        key = f"{here}.{k}" if here else k
        kind = type(val)
        if kind is str or kind is int or kind is bool or val is None:
            copy[k] = val
            out.append((key, val))
        elif kind is float:
            if val - val != 0.0:  # NaN or infinity
                raise _NotPlain
            copy[k] = val
            out.append((key, val))
        elif kind is dict:
            copy[k] = _copy(val, key, out, depth + 1)
        elif kind is list:
            copy[k] = _copy_list(val, key, out, depth + 1)
        else:
            raise _NotPlain
    return copy


def _copy_list(node: list[Any], here: str, out: list[tuple[str, Any]], depth: int
               ) -> list[Any]:
    if depth > _MAX_DEPTH:
        raise _NotPlain
    copy: list[Any] = []
    for i, val in enumerate(node):
        # as features.leaves: the first 32 items count, those past the fourth share its path
        sink = out if i < 32 else []
        key = f"{here}[{min(i, 3)}]"
        kind = type(val)
        if kind is str or kind is int or kind is bool or val is None:
            copy.append(val)
            sink.append((key, val))
        elif kind is float:
            if val - val != 0.0:
                raise _NotPlain
            copy.append(val)
            sink.append((key, val))
        elif kind is dict:
            copy.append(_copy(val, key, sink, depth + 1))
        elif kind is list:
            copy.append(_copy_list(val, key, sink, depth + 1))
        else:
            raise _NotPlain
    return copy


def plain_leaves(contents: Any, field: str) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """``_validate.json_object(contents, field)`` and its ``features.leaves``, in one walk
    when the contents are plain JSON data."""
    pairs: list[tuple[str, Any]] = []
    if type(contents) is dict:
        try:
            return _copy(contents, "", pairs, 0), pairs
        except _NotPlain:
            pairs = []
    data = v.json_object(contents, field)
    if data is None:
        raise InvalidInput(f"{field} must be a dict")
    return data, leaves(data)


#: a leaf in the long-term form: (length of its "path=value" piece of the abstract, the piece's
#: word slots and signs, the slots and values of its own field in the form, if top-level)
_LongTerm = tuple[int, tuple[int, ...], tuple[float, ...], tuple[int, ...], tuple[float, ...]]


class _Leaf:
    """What one (path, value) leaf adds: to the full vector, to the text, and (made when first
    needed) to the long-term form."""

    __slots__ = ("full_slots", "full_values", "kept", "kind", "ltm", "text")

    def __init__(self, path: str, value: Any) -> None:
        self.kind = kind = type(value)
        self.full_slots: tuple[int, ...]
        self.full_values: tuple[float, ...]
        number = number_features(path, value) if kind is float or kind is int else None
        if number is not None:
            self.full_slots, self.full_values = number
        else:
            slots: list[int] = []
            values: list[float] = []
            hash_into(((path, value),), DIM, slots, values)
            self.full_slots, self.full_values = tuple(slots), tuple(values)
        # in the long-term form: scalar leaves, a list by its first item
        self.kept = "[" not in path or path.endswith("[0]")
        self.text = f"{path.rsplit('.', 1)[-1]} {value}" if type(value) is str else None
        self.ltm: _LongTerm | None = None

    def long_term(self, path: str, value: Any) -> _LongTerm:
        """Its part of the long-term form (made once)."""
        if self.ltm is None:
            kept = rounded(value, 1, 24)
            piece = f"{path}={kept}"
            # rounded values repeat where raw ones do not: the part is kept by its piece (and
            # the kept value's type: 1 and "1" print alike)
            key = (piece, type(kept))
            part = _parts.get(key)
            if part is None:
                word_slots, word_signs = abstract_words(piece)
                top_slots: list[int] = []
                top_values: list[float] = []
                if "." not in path:
                    hash_into(((path, kept),), DIM, top_slots, top_values)
                part = (len(piece), word_slots, word_signs, tuple(top_slots), tuple(top_values))
                if len(_parts) >= _CACHE_SIZE:
                    _parts.clear()
                _parts[key] = part
            self.ltm = part
        return self.ltm


_cache: dict[tuple[str, Any], _Leaf] = {}
_parts: dict[tuple[str, type], _LongTerm] = {}


class StateBatch:
    """Collects states, then makes all their vectors in one numpy pass (``vectors``)."""

    def __init__(self) -> None:
        self._full: tuple[list[int], list[float], list[int]] = ([], [], [])
        self._ltm: tuple[list[int], list[float], list[int]] = ([], [], [])

    def add(self, kind: str, data: dict[str, Any], pairs: Sequence[tuple[str, Any]]) -> str:
        """Add one validated state with its leaves; returns its search text."""
        full_slots, full_values, full_lengths = self._full
        start = len(full_slots)
        texts: list[str] = []
        kept: list[str] = []  # the paths of the long-term form's leaves, at most 6
        parts: list[_LongTerm] = []
        length = -2  # of the abstract: "; ".join of the parts' pieces
        cache = _cache
        for path, value in pairs:
            kind_of = type(value)
            leaf = cache.get((path, value))
            if leaf is None or leaf.kind is not kind_of:  # True == 1 == 1.0 as keys
                leaf = _Leaf(path, value)
                # not kept: zero (-0.0 == 0.0 but prints apart) and long strings
                if value if kind_of is float else kind_of is not str or len(value) <= _LONGEST:
                    if len(cache) >= _CACHE_SIZE:
                        cache.clear()
                    cache[(path, value)] = leaf
            full_slots += leaf.full_slots
            full_values += leaf.full_values
            if leaf.text is not None:
                texts.append(leaf.text)
            if leaf.kept and len(kept) < 6 and path not in kept:
                kept.append(path)
                part = leaf.ltm or leaf.long_term(path, value)
                parts.append(part)
                length += part[0] + 2
        full_lengths.append(len(full_slots) - start)
        if 32 < length <= ABSTRACT_CHARS and "abstract" not in kept:
            self._add_long_term(parts)
        else:  # the definition's own path
            raw = long_term(data, pairs)[1]
            self._ltm[0].extend(raw[0])
            self._ltm[1].extend(raw[1])
            self._ltm[2].append(len(raw[0]))
        return f"{kind}: " + "; ".join(texts)[:1000] if texts else kind

    def _add_long_term(self, parts: list[_LongTerm]) -> None:
        """The long-term vector of a form whose abstract is whole: its words, then the
        top-level fields."""
        ltm_slots, ltm_values, ltm_lengths = self._ltm
        start = len(ltm_slots)
        signs: list[float] = []
        for part in parts:
            ltm_slots += part[1]
            signs += part[2]
        words = len(signs)
        if words > 64:
            del ltm_slots[start + 64:], signs[64:]
            words = 64
        weight = 1 / math.sqrt(words) if words else 0.0
        ltm_values += [x * weight for x in signs]
        for part in parts:
            ltm_slots += part[3]
            ltm_values += part[4]
        ltm_lengths.append(len(ltm_slots) - start)

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """The full and long-term vectors of the states added, one row each, unit length."""
        return flat_unit_rows(self._full[2], self._full[0], self._full[1]), \
            flat_unit_rows(self._ltm[2], self._ltm[0], self._ltm[1])


# Entries carry their vectors as base64 float16 (the Redis tiers hold JSON).


def pack(vec: np.ndarray) -> str:
    return base64.b64encode(vec.astype(np.float16).tobytes()).decode()


def unpack(raw: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(raw), dtype=np.float16).astype(np.float32)


def floats(raw: str) -> list[float]:
    """``unpack(raw).tolist()``, sooner: float16 values are exact as Python floats."""
    values: list[float] = np.frombuffer(binascii.a2b_base64(raw), dtype=np.float16).tolist()
    return values


def pack_rows(rows: np.ndarray) -> list[str]:
    """``pack`` of every row of a matrix (one conversion and one encoding call per row)."""
    halves = rows.astype(np.float16)
    b64 = binascii.b2a_base64
    return [b64(row, newline=False).decode() for row in halves]
