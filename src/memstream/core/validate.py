"""Checks on caller input, each failing with an InvalidInput that names the field and the fix.
Nothing reaches the store before these pass."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidInput
from .jsonio import MAX_DEPTH
from .jsonio import depth as json_depth
from .jsonio import dumps as json_dumps

_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@\-]{0,127}\Z")
_KIND = re.compile(r"^[a-z][a-z0-9_]{0,63}\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8(value: Any, field: str, depth: int = 0) -> None:
    """Refuse a lone surrogate (``"\\ud800"``) in any string of ``value`` (keys included):
    such a string cannot be stored as UTF-8."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found:
            raise InvalidInput(f"{field} contains a lone surrogate at position {found.start()} "
                               "and cannot be stored as UTF-8; clean the string first")
    elif depth <= MAX_DEPTH + 1 and isinstance(value, Mapping):
        for k, v in value.items():
            utf8(k, f"{field} (a key)", depth + 1)
            utf8(v, field, depth + 1)
    elif depth <= MAX_DEPTH + 1 and isinstance(value, list | tuple):
        for v in value:
            utf8(v, field, depth + 1)


def text(value: Any, *, max_bytes: int, field: str = "text") -> str:
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"{field} is not valid UTF-8 (bad byte at position {exc.start}); decode it with "
                "the right encoding first"
            ) from exc
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, not {type(value).__name__}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"{field} contains a lone surrogate at position {exc.start} and cannot be stored as "
            "UTF-8; clean the string first"
        ) from exc
    if not value.strip():
        raise InvalidInput(f"{field} is empty; a memory needs some text")
    if size > max_bytes:
        raise InvalidInput(
            f"{field} is {size:,} bytes, over the limit of {max_bytes:,}; split it into smaller "
            "records or raise max_text_bytes"
        )
    return value


def namespace(value: Any) -> str:
    if not isinstance(value, str) or not _NAMESPACE.match(value):
        raise InvalidInput(
            f"namespace {value!r} is not valid: use 1-128 characters of letters, digits and "
            "'._:@-', starting with a letter or digit"
        )
    return value


def scope_id(value: Any, field: str) -> str | None:
    """A user, agent or run id: printable, with no invisible character (a zero-width space or
    a bidirectional control would make "alice\u200b" another owner that reads as "alice")."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > 256 or _CONTROL.search(value):
        raise InvalidInput(f"{field} must be a non-empty string of at most 256 printable "
                           f"characters, got {value!r}")
    if hidden := [c for c in value if unicodedata.category(c) in ("Cc", "Cf")]:
        raise InvalidInput(f"{field} {value!r} holds invisible characters "
                           f"({', '.join(f'U+{ord(c):04X}' for c in hidden[:3])}): remove "
                           "them, an id must read as what it is")
    utf8(value, field)
    return value


def kind(value: Any) -> str:
    if not isinstance(value, str) or not _KIND.match(value):
        raise InvalidInput(f"kind {value!r} is not valid: use a lowercase identifier such as "
                           "'observation' or 'fact'")
    return value


def kinds(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    return tuple(kind(k) for k in value)


class _NotPlain(Exception):
    """A value that only a JSON round trip copies faithfully (or refuses)."""


def _plain_copy(value: Any, depth: int = 0) -> Any:
    """A copy of plain JSON data (dicts with string keys, lists, strings, finite numbers,
    booleans, None): what a JSON round trip would give, without one."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if value - value != 0.0:  # NaN or infinity
            raise _NotPlain
        return value
    if depth >= MAX_DEPTH:
        raise _NotPlain
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _NotPlain
            out[k] = _plain_copy(v, depth + 1)
        return out
    if kind is list:
        return [_plain_copy(v, depth + 1) for v in value]
    raise _NotPlain


def json_object(value: Any, field: str, *, max_bytes: int | None = None
                ) -> dict[str, Any] | None:
    """A plain copy of a JSON object, at most ``MAX_DEPTH`` levels deep and, when given,
    ``max_bytes`` long as JSON."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field} must be a dict (a JSON object), not {type(value).__name__}")
    try:
        out = dict(_plain_copy(value)) if type(value) is dict else _round_trip(value, field)
    except _NotPlain:
        out = _round_trip(value, field)
    utf8(out, field)
    if json_depth(out) > MAX_DEPTH:
        raise InvalidInput(f"{field} nests more than {MAX_DEPTH} levels deep; flatten it (deep "
                           "structures cannot be filtered or shown)")
    if max_bytes is not None and out:
        size = len(json_dumps(out).encode())
        if size > max_bytes:
            raise InvalidInput(f"{field} is {size:,} bytes as JSON, over the limit of "
                               f"{max_bytes:,}; store less in it or raise max_text_bytes")
    return out


def _round_trip(value: Any, field: str) -> dict[str, Any]:
    try:
        return dict(json.loads(json.dumps(value, allow_nan=False)))
    except RecursionError as exc:
        raise InvalidInput(f"{field} nests more than {MAX_DEPTH} levels deep; flatten it") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} must hold only JSON values (no NaN, sets or objects): "
                           f"{exc}") from exc


def fraction(value: Any, field: str) -> float:
    """A number in [0, 1] (an integer of any size is refused, not overflowed)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, int) and value not in (0, 1)) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        shown = repr(value) if not isinstance(value, int) or abs(value) < 10**20 \
            else f"an integer of {len(str(abs(value)))} digits"
        raise InvalidInput(f"{field} must be a number in [0, 1], got {shown}")
    return float(value)


def importance(value: Any) -> float | None:
    return None if value is None else fraction(value, "importance")


def step(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidInput(f"step must be an integer, got {value!r}")
    if not -(2**63) <= int(value) < 2**63:
        raise InvalidInput(f"step must fit in 64 bits (|step| < 2**63), got {value!r}")
    return int(value)


def ids(value: Any, field: str = "provenance") -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(f"{field} must be a list of record ids")
    for item in value:
        if not isinstance(item, str) or not item:
            raise InvalidInput(f"{field} must be a list of record ids, got {item!r}")
        utf8(item, field)
    return tuple(value)


def vector(value: Any, dim: int | None, field: str = "embedding") -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float32).ravel()
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{field} must be a list of numbers") from exc
    if dim is not None and arr.shape[0] != dim:
        raise InvalidInput(f"{field} has {arr.shape[0]} dimensions, the embedder makes {dim}; "
                           "pass a vector from the same model")
    if arr.shape[0] == 0 or not np.isfinite(arr).all():
        raise InvalidInput(f"{field} holds NaN or infinite values or is empty")
    norm = float(np.linalg.norm(arr))
    if norm == 0:
        raise InvalidInput(f"{field} is all zeros; it has no direction to compare")
    return arr / norm
