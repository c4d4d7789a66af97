"""Time-sortable record ids.

An id is 26 characters of Crockford base32: 48 bits of milliseconds since the epoch followed by
80 bits that are random for the first id of a millisecond and counted up from there, so ids made
by one process sort in creation order and ids made by different processes do not collide. The
count is kept for the last 4,096 milliseconds used, not only the last one: records added with
the same explicit time by separate calls, with other times in between (an import, a replay),
keep the order they were added in, which is their order in the stream (context smoothing reads
it).
"""

from __future__ import annotations

import base64
import os
import threading
import time
from collections import OrderedDict

import numpy as np

__all__ = ["id_time", "new_id", "new_ids"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# base64's RFC 4648 base32 alphabet -> Crockford's, so the C encoder does the work
_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _ALPHABET.encode())
_RANDOM_BITS = 80
_REMEMBERED = 4096
_lock = threading.Lock()
#: millisecond -> the random part of the last id given for it, the most recently used last
_last: OrderedDict[int, int] = OrderedDict()


def _encode(value: int) -> str:
    """26 Crockford characters of a value below 2**130 (160 bits encode to 32; the first 6
    are the leading zeros)."""
    return base64.b32encode(value.to_bytes(20, "big")).translate(_TO_CROCKFORD)[6:].decode()


def new_ids(count: int, at: float | None = None) -> list[str]:
    """``count`` new ids whose time part is ``at`` (seconds since the epoch) or now, in
    increasing order."""
    ms = int((time.time() if at is None else at) * 1000)
    ms = max(0, min(ms, (1 << 48) - 1))
    mask = (1 << _RANDOM_BITS) - 1
    with _lock:
        last = _last.pop(ms, None)
        # a known millisecond counts on; a new one starts at random, with room to count up
        first = ((last + 1) & mask if last is not None
                 else int.from_bytes(os.urandom(10), "big") >> 1)
        _last[ms] = (first + count - 1) & mask
        if len(_last) > _REMEMBERED:
            _last.popitem(last=False)
    if count < 8:
        base = ms << _RANDOM_BITS
        return [_encode(base | ((first + n) & mask)) for n in range(count)]
    return _encode_run(ms, first, count)


_HALF = 40  # the random part as two 40-bit halves of 8 characters each, in numpy
_DIGITS = np.frombuffer(_ALPHABET.encode(), dtype=np.uint8)
_SHIFTS = np.arange(35, -1, -5, dtype=np.uint64)


def _encode_run(ms: int, first: int, count: int) -> list[str]:
    """``_encode`` of ``count`` ids counting up from ``first`` at ``ms``, vectorised: the
    time part is shared, the random part is encoded for all ids at once."""
    half = (1 << _HALF) - 1
    low = np.arange(count, dtype=np.uint64) + np.uint64(first & half)
    high = (np.uint64(first >> _HALF) + (low >> np.uint64(_HALF))) & np.uint64(half)
    low &= np.uint64(half)
    chars = np.empty((count, 16), dtype=np.uint8)
    chars[:, :8] = _DIGITS[(high[:, None] >> _SHIFTS) & np.uint64(31)]
    chars[:, 8:] = _DIGITS[(low[:, None] >> _SHIFTS) & np.uint64(31)]
    stamp = _encode(ms << _RANDOM_BITS)[:10]
    text = chars.tobytes().decode()
    return [stamp + text[n : n + 16] for n in range(0, 16 * count, 16)]


def new_id(at: float | None = None) -> str:
    """A new id whose time part is ``at`` (seconds since the epoch) or now."""
    return new_ids(1, at)[0]


def id_time(record_id: str) -> float:
    """The creation time (seconds since the epoch) encoded in an id."""
    ms = 0
    for ch in record_id[:10].upper():
        ms = (ms << 5) | _ALPHABET.index(ch)
    return ms / 1000.0
