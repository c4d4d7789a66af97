"""State vectors and compression for agent memories, without a text model.

Vectors: every leaf of a state dict adds to a few of ``dim`` slots chosen by a stable hash of
its path (feature hashing): a number adds sign(v)·log(1+|v|)/4 to its path's slot and marks its
order of magnitude; a bool or a short string marks "path=value"; a long string marks each of
its words. The vector is scaled to unit length, so cosine similarity compares states by their
fields and values. It costs microseconds, so thousands of agents can write every step.

Compression (deterministic): the intermediate form keeps the scalar fields (numbers rounded to
2 decimals, strings cut to 64 characters), nested objects one level deep and the first 3
items of lists; the long-term form keeps 6 scalar fields, rounded to 1 decimal, and a one-line
abstract of them.
"""

from __future__ import annotations

import math
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["ABSTRACT_CHARS", "DIM", "abstract_words", "compress", "flat_unit_rows", "hash_into",
           "leaves", "long_term", "number_features", "raw_vector", "rounded", "state_vector",
           "unit_rows", "vector_of_leaves"]

DIM = 128
_WORD = re.compile(r"[a-z0-9]+")


_SLOT_CACHE_SIZE = 1 << 16
_slots: dict[int, dict[str, tuple[int, float]]] = {}


def _slot_table(dim: int) -> dict[str, tuple[int, float]]:
    """key -> (slot, sign) for ``dim`` slots; a plain dict (a lookup is the hot path), emptied
    when it grows past ``_SLOT_CACHE_SIZE`` keys."""
    table = _slots.setdefault(dim, {})
    if len(table) > _SLOT_CACHE_SIZE:
        table.clear()
    return table


def _slot(key: str, dim: int) -> tuple[int, float]:
    h = zlib.crc32(key.encode())
    return h % dim, (1.0 if (h >> 16) & 1 else -1.0)


_SCALARS = frozenset((str, int, float, bool, type(None)))


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(dotted path, scalar) for every leaf, in order; list items past the fourth share the
    path of the fourth, and only the first 32 items of a list count."""
    out: list[tuple[str, Any]] = []
    _walk(value, path, out.append)
    return out


def _walk(node: Any, here: str, put: Callable[[tuple[str, Any]], None]) -> None:
    if type(node) in _SCALARS:  # the common case, without the cost of ABC checks
        put((here, node))
    elif type(node) is dict or isinstance(node, Mapping):
        for k, v in node.items():
            key = f"{here}.{k}" if here else str(k)
            if type(v) in _SCALARS:
                put((key, v))
            else:
                _walk(v, key, put)
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node[:32]):
            _walk(v, f"{here}[{min(i, 3)}]", put)
    else:
        put((here, node))


def state_vector(state: Mapping[str, Any], dim: int = DIM) -> np.ndarray:
    return vector_of_leaves(leaves(state), dim)


def vector_of_leaves(pairs: Iterable[tuple[str, Any]], dim: int = DIM) -> np.ndarray:
    """``state_vector`` from the state's ``leaves`` (when the caller already has them)."""
    row: np.ndarray = unit_rows([raw_vector(pairs, dim)], dim)[0]
    return row


def unit_rows(raws: Sequence[tuple[list[int], list[float]]], dim: int = DIM) -> np.ndarray:
    """``raw_vector`` results as a float32 matrix whose non-zero rows have unit length: one
    vectorised pass for a whole batch."""
    slots: list[int] = []
    values: list[float] = []
    for row_slots, row_values in raws:
        slots += row_slots
        values += row_values
    return flat_unit_rows([len(r) for r, _ in raws], slots, values, dim)


def flat_unit_rows(lengths: Sequence[int], slots: Sequence[int], values: Sequence[float],
                   dim: int = DIM) -> np.ndarray:
    """``unit_rows`` of rows given end to end: row n owns the next ``lengths[n]`` of
    ``slots`` and ``values``."""
    rows = np.repeat(np.arange(len(lengths)), lengths)
    flat = rows * dim + np.array(slots, dtype=np.int64).reshape(-1)
    m = np.bincount(flat, weights=np.array(values, dtype=np.float64).reshape(-1),
                    minlength=len(lengths) * dim)
    m = m.reshape(len(lengths), dim).astype(np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    out: np.ndarray = np.divide(m, norms, out=m, where=norms > 0)
    return out


def raw_vector(pairs: Iterable[tuple[str, Any]], dim: int = DIM
               ) -> tuple[list[int], list[float]]:
    """The hashed features of a state's leaves as (slots, values) to be summed, before
    scaling to unit length (``unit_rows`` does both for many states at once)."""
    slots: list[int] = []
    values: list[float] = []
    hash_into(pairs, dim, slots, values)
    return slots, values


def number_features(path: str, value: float, dim: int = DIM
                    ) -> tuple[tuple[int, int], tuple[float, float]] | None:
    """The two features of a number: sign(v)·log(1+|v|)/4 in its path's slot and 0.5 in the
    slot of its order of magnitude (None for NaN and infinities)."""
    try:
        x = float(value)
    except OverflowError:  # an int beyond float range counts as the largest float
        x = sys.float_info.max if value > 0 else -sys.float_info.max
    if x - x != 0.0:  # NaN or infinity
        return None
    table = _slot_table(dim)
    key = f"{path}~{int(math.log10(abs(x) + 1e-9)) if x else 0}"
    i, s = table.get(path) or table.setdefault(path, _slot(path, dim))
    j, t = table.get(key) or table.setdefault(key, _slot(key, dim))
    return (i, j), (s * math.copysign(math.log1p(abs(x)), x) / 4, t * 0.5)


def hash_into(pairs: Iterable[tuple[str, Any]], dim: int, slots: list[int],
              values: list[float]) -> None:
    """``raw_vector``, appending to ``slots`` and ``values``."""
    put_slot, put_value = slots.append, values.append
    table = _slot_table(dim)

    def slot(key: str) -> tuple[int, float]:
        hit = table.get(key)
        if hit is None:
            hit = table[key] = _slot(key, dim)
        return hit

    for path, value in pairs:
        kind = type(value)
        if (kind is str and len(value) <= 32) or kind is bool:  # the common cases first
            i, s = slot(f"{path}={value}")
            put_slot(i)
            put_value(s)
        elif kind is float or kind is int or (kind is not str and isinstance(value, int | float)):
            hit = number_features(path, value, dim)
            if hit is not None:
                slots += hit[0]
                values += hit[1]
        elif isinstance(value, str):
            if len(value) <= 32:  # a str subclass
                i, s = slot(f"{path}={value}")
                put_slot(i)
                put_value(s)
                continue
            words = _WORD.findall(value.lower())[:64]
            weight, prefix = 1 / math.sqrt(len(words)) if words else 0.0, path + ":"
            for w in words:
                i, s = slot(prefix + w)
                put_slot(i)
                put_value(s * weight)


def rounded(value: Any, digits: int, chars: int) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, str):
        return value[:chars]
    return value


def compress(contents: Mapping[str, Any], level: int,
             pairs: Iterable[tuple[str, Any]] | None = None) -> dict[str, Any]:
    """Level 1: the intermediate form; level 2: the long-term form (with ``abstract``).
    ``pairs``: the contents' ``leaves``, when the caller already has them."""
    if level <= 0:
        return dict(contents)
    if level == 1:
        out: dict[str, Any] = {}
        for k, v in contents.items():
            if isinstance(v, Mapping):
                out[k] = {ik: rounded(iv, 2, 64) for ik, iv in v.items()
                          if not isinstance(iv, Mapping | list | tuple)}
            elif isinstance(v, list | tuple):
                out[k] = [rounded(x, 2, 64) for x in v[:3]
                          if not isinstance(x, Mapping | list | tuple)]
            else:
                out[k] = rounded(v, 2, 64)
        return out
    kept = _kept(leaves(contents) if pairs is None else pairs)
    abstract = "; ".join(f"{k}={v}" for k, v in kept.items())[:ABSTRACT_CHARS]
    return {"abstract": abstract, **{k: v for k, v in kept.items() if "." not in k}}


ABSTRACT_CHARS = 160
_pieces: dict[int, dict[str, tuple[tuple[int, ...], tuple[float, ...]]]] = {}


def _kept(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The long-term form's fields: the first 6 scalar leaves (a list by its first item)."""
    kept: dict[str, Any] = {}
    for path, value in pairs:
        if len(kept) >= 6:
            break
        if "[" not in path or path.endswith("[0]"):
            kept.setdefault(path, rounded(value, 1, 24))
    return kept


def abstract_words(text: str, dim: int = DIM) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The slots and signs of the words of (a piece of) a long-term abstract."""
    table = _slot_table(dim)
    hits = [table.get(key) or table.setdefault(key, _slot(key, dim))
            for key in ["abstract:" + w for w in _WORD.findall(text.lower())]]
    return tuple(h[0] for h in hits), tuple(h[1] for h in hits)


def long_term(contents: Mapping[str, Any], pairs: Sequence[tuple[str, Any]],
              dim: int = DIM) -> tuple[dict[str, Any], tuple[list[int], list[float]]]:
    """``compress(contents, 2)`` and the ``raw_vector`` of its leaves, computed together: the
    abstract's words are hashed per "path=value" piece, and a piece seen before (values are
    rounded, so they repeat) costs one lookup. Gives exactly what the two calls would."""
    kept = _kept(pairs)
    pieces = _pieces.setdefault(dim, {})
    if len(pieces) > _SLOT_CACHE_SIZE:
        pieces.clear()
    slots: list[int] = []
    signs: list[float] = []
    used = 0  # characters of the abstract so far, as "; ".join(pieces)[:ABSTRACT_CHARS]
    texts = []
    for n, (k, v) in enumerate(kept.items()):
        piece = f"{k}={v}"
        start = used + 2 if n else 0
        room = ABSTRACT_CHARS - start
        if room <= 0:
            break
        texts.append(piece if len(piece) <= room else piece[:room])
        hashed = pieces.get(piece) if len(piece) <= room else None
        if hashed is None:
            hashed = abstract_words(texts[-1], dim)
            if len(piece) <= room:
                pieces[piece] = hashed
        slots.extend(hashed[0])
        signs.extend(hashed[1])
        used = start + len(piece)
    abstract = "; ".join(texts)
    form = {"abstract": abstract, **{k: v for k, v in kept.items() if "." not in k}}
    words = min(len(slots), 64)
    if words:
        del slots[words:], signs[words:]
        weight = 1 / math.sqrt(words)
        values = [x * weight for x in signs]
    else:
        values = []
    if len(abstract) <= 32:  # a short abstract is one "path=value" feature, like any string
        slots, values = [], []
        rest: Iterable[tuple[str, Any]] = form.items()
    else:
        rest = list(form.items())[1:]
    more = raw_vector(rest, dim)
    return form, (slots + more[0], values + more[1])
