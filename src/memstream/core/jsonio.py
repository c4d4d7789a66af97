"""JSON for stored rows and cached entries: orjson's encoder and parser (several times faster
than the standard library's, on the write path of every record), with the standard library
as the fallback for what orjson refuses (integers beyond 64 bits, keys that are not strings).
A text holding a run of 20 digits is read by the standard library, since orjson would turn
an integer beyond 64 bits into a float. Output is compact UTF-8 text; NaN and infinities are
refused, as by ``json.dumps(allow_nan=False)``: values reach here validated, so that refusal
is a guard."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "clip", "depth", "dumps", "loads"]

#: how deeply a record's data or metadata may nest (objects and lists); deeper is refused
MAX_DEPTH = 64

_DIGITS = bytes(57 if 48 <= b <= 57 else 32 for b in range(256))
_RUN = b"9" * 20


def dumps(value: Any) -> str:
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if "null" in text and _has_non_finite(value):  # orjson writes NaN as null
        raise ValueError("Out of range float values are not JSON compliant")
    return text


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in value)
    return False


def loads(text: str | bytes) -> Any:
    raw = text.encode() if isinstance(text, str) else text
    # orjson reads integers beyond 64 bits as floats: a run of 20 digits goes to the standard
    # library (found by mapping every byte to "9" or a space, which is much faster than a
    # regular expression over the text)
    if _RUN in raw.translate(_DIGITS):
        return json.loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests (a scalar is 0), counted up to ``limit + 1`` at most."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list | tuple):
            level += 1
            if level > deepest:
                deepest = level
                if deepest > limit:
                    return deepest
            stack.extend((v, level) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def clip(value: Any, limit: int = MAX_DEPTH) -> Any:
    """``value`` itself when it nests at most ``limit`` levels; otherwise a copy whose deeper
    parts are replaced by a note (what is stored stays readable by every interface)."""
    if depth(value, limit) <= limit:
        return value

    def cut(item: Any, room: int) -> Any:
        if not isinstance(item, dict | list | tuple):
            return item
        if room == 0:
            return f"(nested deeper than {limit} levels: not shown)"
        if isinstance(item, dict):
            return {k: cut(v, room - 1) for k, v in item.items()}
        return [cut(v, room - 1) for v in item]

    return cut(value, limit)
