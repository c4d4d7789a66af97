"""Where "now" comes from.

All time logic in memstream asks a clock. ``WallClock`` is the default. ``SimulationClock`` maps
step numbers to hours, for simulations that count steps instead of wall time: step ``s`` is
``start + s * hours_per_step * 3600`` seconds. ``FixedClock`` is set by hand (tests, benchmarks).
Any call can also pass an explicit time (``at=`` on writes, ``now=`` on reads).
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from ..errors import InvalidInput

__all__ = ["Clock", "FixedClock", "SimulationClock", "WallClock", "iso", "iso_times",
           "to_timestamp"]

TimeLike = float | int | datetime | str


@runtime_checkable
class Clock(Protocol):
    """Gives the current time in seconds since the epoch."""

    def now(self) -> float: ...


class WallClock:
    """The machine's clock."""

    def now(self) -> float:
        return time.time()


class FixedClock:
    """A clock that stands still until it is set or advanced."""

    def __init__(self, at: TimeLike = 0.0) -> None:
        self._now = to_timestamp(at)

    def now(self) -> float:
        return self._now

    def set(self, at: TimeLike) -> None:
        self._now = to_timestamp(at)

    def advance(self, *, hours: float = 0.0, seconds: float = 0.0) -> None:
        self._now += hours * 3600.0 + seconds


class SimulationClock:
    """Steps mapped to hours: step ``s`` happens at ``start + s * hours_per_step`` hours."""

    def __init__(self, *, hours_per_step: float = 1.0, start: TimeLike = 0.0, step: int = 0):
        if not hours_per_step > 0:
            raise InvalidInput("hours_per_step must be a positive number of hours")
        self.hours_per_step = float(hours_per_step)
        self.start = to_timestamp(start)
        self.step = step

    def time_of(self, step: int) -> float:
        """The timestamp of a step."""
        return self.start + step * self.hours_per_step * 3600.0

    def now(self) -> float:
        return self.time_of(self.step)

    def advance(self, steps: int = 1) -> None:
        self.step += steps


#: the times memstream accepts: those a datetime can show (years 1 to 9999)
EARLIEST, LATEST = -62_135_596_800.0, 253_402_300_799.0


_NUMBER = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")


def to_timestamp(value: TimeLike) -> float:
    """Seconds since the epoch from a number (or a string of one), an aware or naive (taken as
    UTC) datetime, or an ISO 8601 string."""
    if isinstance(value, bool):
        raise InvalidInput("a time must be a number, a datetime or an ISO 8601 string, not a bool")
    if isinstance(value, int | float):
        ts = float(value) if isinstance(value, float) or abs(value) < 2**63 else math.inf
    elif isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        ts = dt.timestamp()
    elif isinstance(value, str) and _NUMBER.match(value):  # "1715176560" from a command line
        return to_timestamp(float(value))
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInput(
                f"cannot read {value!r} as a time; use ISO 8601 such as 2024-05-08T13:56:00Z"
            ) from exc
        return to_timestamp(parsed)
    else:
        raise InvalidInput(
            f"a time must be a number, a datetime or an ISO 8601 string, not {type(value).__name__}"
        )
    if not math.isfinite(ts) or not EARLIEST <= ts <= LATEST:
        raise InvalidInput(f"a time must be seconds since the epoch between {EARLIEST:.0f} "
                           f"(year 1) and {LATEST:.0f} (year 9999), got {str(value)[:40]}")
    return ts


# --- times in JSON output ------------------------------------------------------------------------

#: keys that hold a time besides those ending in "_at" (history "at", stats, tiers entries)
TIME_KEYS = frozenset({"at", "timestamp", "oldest", "newest", "creation_time",
                       "last_access_time"})


#: keys whose values are the user's own JSON (a record's data and metadata, an agent's state or
#: contents): never rewritten, whatever their keys
USER_JSON = frozenset({"data", "metadata", "contents", "state"})


def is_time_key(key: object) -> bool:
    return isinstance(key, str) and (key in TIME_KEYS or key.endswith("_at"))


def iso(ts: float) -> str:
    """Seconds since the epoch as ISO 8601 in UTC to the microsecond,
    ``2024-05-08T13:56:00.000000Z`` (read back by ``to_timestamp`` to the same microsecond)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def iso_times(value: object) -> object:
    """A copy of a JSON-ready value with every time (a number under a time key) written as ISO
    8601 UTC: what REST and the CLI's ``--json`` show. Python callers keep numbers. The user's
    own JSON (``USER_JSON``) is left as it is."""
    if isinstance(value, dict):
        return {k: v if k in USER_JSON else iso(v) if is_time_key(k) and _seconds(v)
                else iso_times(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [iso_times(v) for v in value]
    return value


def epoch_times(value: object) -> object:
    """The inverse of ``iso_times``: ISO 8601 strings under time keys back to seconds."""
    if isinstance(value, dict):
        return {k: v if k in USER_JSON else to_timestamp(v)
                if is_time_key(k) and isinstance(v, str) and v[:1].isdigit()
                else epoch_times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [epoch_times(v) for v in value]
    return value


def _seconds(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and EARLIEST <= value <= LATEST
