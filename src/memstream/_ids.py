"""Time-sortable record ids.

An id is 26 characters of Crockford base32: 48 bits of milliseconds since the epoch followed by
80 bits that are random for the first id of a millisecond and counted up from there, so ids made
by one process sort in creation order and ids made by different processes do not collide.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_lock = threading.Lock()
_last_ms = -1
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(at: float | None = None) -> str:
    """A new id whose time part is ``at`` (seconds since the epoch) or now."""
    global _last_ms, _last_rand
    ms = int((time.time() if at is None else at) * 1000)
    ms = max(0, min(ms, (1 << 48) - 1))
    with _lock:
        if ms == _last_ms:
            _last_rand = (_last_rand + 1) & ((1 << _RANDOM_BITS) - 1)
        else:
            _last_ms = ms
            _last_rand = int.from_bytes(os.urandom(10), "big") >> 1  # room to count up
        rand = _last_rand
    return _encode(ms, 10) + _encode(rand, 16)


def id_time(record_id: str) -> float:
    """The creation time (seconds since the epoch) encoded in an id."""
    ms = 0
    for ch in record_id[:10].upper():
        ms = (ms << 5) | _ALPHABET.index(ch)
    return ms / 1000.0
