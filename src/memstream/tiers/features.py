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

import functools
import math
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

__all__ = ["DIM", "compress", "leaves", "state_vector", "vector_of_leaves"]

DIM = 128
_WORD = re.compile(r"[a-z0-9]+")


@functools.lru_cache(maxsize=1 << 16)
def _slot(key: str, dim: int) -> tuple[int, float]:
    h = zlib.crc32(key.encode())
    return h % dim, (1.0 if (h >> 16) & 1 else -1.0)


_SCALARS = frozenset((str, int, float, bool, type(None)))


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, scalar) for every leaf; list items share their list's path."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        here, node = stack.pop()
        if type(node) in _SCALARS:  # the common case, without the cost of ABC checks
            yield here, node
        elif isinstance(node, Mapping):
            for k, v in reversed(list(node.items())):
                stack.append((f"{here}.{k}" if here else str(k), v))
        elif isinstance(node, list | tuple):
            for i in range(min(len(node), 32) - 1, -1, -1):
                stack.append((f"{here}[{min(i, 3)}]", node[i]))
        else:
            yield here, node


def state_vector(state: Mapping[str, Any], dim: int = DIM) -> np.ndarray:
    return vector_of_leaves(leaves(state), dim)


def vector_of_leaves(pairs: Iterable[tuple[str, Any]], dim: int = DIM) -> np.ndarray:
    """``state_vector`` from the state's ``leaves`` (when the caller already has them)."""
    acc = [0.0] * dim
    slot, log1p, log10, copysign = _slot, math.log1p, math.log10, math.copysign
    for path, value in pairs:
        kind = type(value)
        if kind is float or kind is int:  # plain numbers first: most state fields are
            if value != value or value in (math.inf, -math.inf):
                continue
            i, s = slot(path, dim)
            acc[i] += s * copysign(log1p(abs(value)), value) / 4
            j, t = slot(f"{path}~{int(log10(abs(value) + 1e-9)) if value else 0}", dim)
            acc[j] += t * 0.5
        elif value is None:
            continue
        elif isinstance(value, bool) or (isinstance(value, str) and len(value) <= 32):
            i, s = slot(f"{path}={value}", dim)
            acc[i] += s
        elif isinstance(value, int | float):
            if not math.isfinite(value):
                continue
            i, s = slot(path, dim)
            acc[i] += s * copysign(log1p(abs(value)), value) / 4
            j, t = slot(f"{path}~{int(log10(abs(value) + 1e-9)) if value else 0}", dim)
            acc[j] += t * 0.5
        elif isinstance(value, str):
            words = _WORD.findall(value.lower())[:64]
            for w in words:
                i, s = slot(f"{path}:{w}", dim)
                acc[i] += s / math.sqrt(len(words))
    vec = np.array(acc, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm else vec


def _scalar(value: Any, digits: int, chars: int) -> Any:
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
                out[k] = {ik: _scalar(iv, 2, 64) for ik, iv in v.items()
                          if not isinstance(iv, Mapping | list | tuple)}
            elif isinstance(v, list | tuple):
                out[k] = [_scalar(x, 2, 64) for x in v[:3]
                          if not isinstance(x, Mapping | list | tuple)]
            else:
                out[k] = _scalar(v, 2, 64)
        return out
    kept: dict[str, Any] = {}
    for path, value in (leaves(contents) if pairs is None else pairs):
        if len(kept) >= 6:
            break
        if "[" not in path or path.endswith("[0]"):
            kept.setdefault(path, _scalar(value, 1, 24))
    abstract = "; ".join(f"{k}={v}" for k, v in kept.items())[:160]
    return {"abstract": abstract, **{k: v for k, v in kept.items() if "." not in k}}
