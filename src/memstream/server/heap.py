"""The server's heap, bounded: what a large request leaves behind is given back.

A request of a few megabytes (an import, an export, a batch) makes tens of megabytes of short-
lived Python objects. glibc's allocator gives each thread that allocates an arena of its own
(up to eight per core) and keeps what is freed in them for reuse, so a server whose thread pool
serves large requests one after another grew its anonymous memory from 71 MB to 852 MB and
stayed there: not a leak (it flattens), but memory no other process could use. ``limit_arenas``
caps the arenas at two, so threads reuse each other's freed memory, and ``trim`` hands free
pages back to the system after each large request. Elsewhere than glibc both do nothing.

What remains is bounded by the work in flight: about ten times the bodies being handled at
once (their text, decoded, split and turned into records), plus SQLite's page cache (64 MiB
per store connection at most) and the model's weights when the server embeds. docs/server.md
gives the measured figures (``benchmarks/server_memory.py``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

__all__ = ["ARENAS", "TRIM_AFTER", "limit_arenas", "trim"]

#: the most malloc arenas the server's threads share
ARENAS = 2
#: a request whose body is at least this many bytes is followed by a trim
TRIM_AFTER = 1 << 20
_M_ARENA_MAX = -8  # glibc's mallopt parameter


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt  # glibc only  # noqa: B018
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (call before the server's threads start); whether it could."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, arenas) == 1)


def trim() -> None:
    """Give the heap's free pages back to the system."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
