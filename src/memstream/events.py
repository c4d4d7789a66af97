"""Change events: what every change to the stream tells its subscribers.

Each change to a record is written with its event in the same transaction (the store's outbox,
table ``events``), so an event exists if and only if its change committed. An event names its
namespace, the records it concerns, their kind and scope ids, a sequence number and the time the
change was written; never the text, unless the memory is configured with ``events_text=True``.

Sequence numbers increase in commit order. They are shared by every namespace of a store, so
those of one namespace increase but leave gaps; a reader resumes after the last number it saw.

Types (``EVENT_TYPES``):

- ``added``, ``refreshed`` (an exact duplicate refreshed the stored record), ``updated``,
  ``invalidated``, ``superseded`` (invalidated with a successor), ``deleted`` (``erased`` in
  its data when erased), ``restored`` (a finding of ``audit`` undone), ``refused`` (with
  ``Config(junk="refuse")``, an add the junk model refused: nothing was stored);
- ``reflected``, ``outcome_learned``, ``heuristic_created``, ``heuristic_updated``,
  ``episode_recorded``: records the capabilities write, told apart by their kind;
- ``consolidated``: every change a consolidation makes (its ``op`` says add, update or
  invalidate);
- ``touched`` (off by default: ``Config(events_touch=True)``): records read as a use, in bulk;
- ``tier_moved``: an agent's entries moved between short, intermediate and long-term tiers.

Webhook bodies are signed with HMAC-SHA256 (``sign``, ``verify_signature``).
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["EVENT_TYPES", "SIGNATURE_HEADER", "ChangeEvent", "Webhook", "caused",
           "current_cause", "event_type", "sign", "verify_signature"]

EVENT_TYPES = ("added", "refreshed", "updated", "invalidated", "superseded", "deleted",
               "restored", "refused", "touched", "reflected", "consolidated", "outcome_learned",
               "heuristic_created", "heuristic_updated", "episode_recorded", "tier_moved")

#: the header that carries a webhook body's signature: ``t=<unix seconds>,v1=<hex digest>``
SIGNATURE_HEADER = "X-Memstream-Signature"

_HEURISTICS = frozenset({"heuristic", "anti_pattern"})
_ADDED = {"reflection": "reflected", "outcome": "outcome_learned",
          "heuristic": "heuristic_created", "anti_pattern": "heuristic_created",
          "episode": "episode_recorded"}
_CAUSES = frozenset({"consolidated"})

_cause: contextvars.ContextVar[str | None] = contextvars.ContextVar("memstream_cause",
                                                                    default=None)


@contextmanager
def caused(name: str) -> Iterator[None]:
    """Mark the changes made inside the block as parts of one larger operation (for now
    ``consolidated``): their events take that type, their ``op`` says what each did."""
    if name not in _CAUSES:
        raise ValueError(f"cause must be one of {sorted(_CAUSES)}")
    token = _cause.set(name)
    try:
        yield
    finally:
        _cause.reset(token)


def current_cause() -> str | None:
    return _cause.get()


def event_type(op: str, kind: str | None, *, superseded: bool = False,
               cause: str | None = None) -> str:
    """The event type of a store operation (``op``: add, import, refresh, update, invalidate,
    delete, erase, touch) on a record of ``kind``."""
    if cause is not None:
        return cause
    if op in ("add", "import"):
        return _ADDED.get(kind or "", "added")
    if op == "update":
        return "heuristic_updated" if kind in _HEURISTICS else "updated"
    if op == "invalidate":
        return "superseded" if superseded else "invalidated"
    return {"refresh": "refreshed", "delete": "deleted", "erase": "deleted",
            "touch": "touched", "restore": "restored"}.get(op, op)


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One committed change. ``seq`` orders events (gaps allowed); ``at`` is when the change
    was written (seconds since the epoch); ``data`` holds the operation (``op``) and what the
    type adds: changed ``fields``, ``superseded_by``, ``erased``, tier moves' ``from`` and
    ``to``, and ``text`` when the memory is configured to include it."""

    seq: int
    namespace: str
    type: str
    record_ids: tuple[str, ...]
    at: float
    kind: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The event as JSON for webhooks, the event stream and the API (``at`` in ISO 8601)."""
        out: dict[str, Any] = {"seq": self.seq, "type": self.type, "namespace": self.namespace,
                               "record_ids": list(self.record_ids),
                               "at": datetime.fromtimestamp(self.at, UTC).isoformat(
                                   timespec="milliseconds").replace("+00:00", "Z")}
        for key in ("kind", "user_id", "agent_id", "run_id"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["data"] = dict(self.data)
        return out


def sign(secret: str, body: bytes, *, at: int | None = None) -> str:
    """The signature header value of a webhook body: HMAC-SHA256 of ``"<t>." + body`` with the
    webhook's secret, as ``t=<t>,v1=<hex>``."""
    t = int(time.time()) if at is None else at
    digest = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={t},v1={digest}"


#: how far in the future a signature's time may be (the sender's clock a little ahead)
FUTURE_SKEW = 30.0


def verify_signature(secret: str, body: bytes, header: str, *, tolerance: float = 300.0,
                     now: float | None = None) -> bool:
    """Whether ``header`` (the ``X-Memstream-Signature`` value) signs ``body`` with ``secret``,
    is at most ``tolerance`` seconds old (a replayed old delivery fails) and at most
    ``FUTURE_SKEW`` seconds ahead. Any malformed header is False, never an error."""
    try:
        parts = dict(p.split("=", 1) for p in str(header).split(","))
        t = int(parts["t"])
        given = parts["v1"].encode("utf-8", "surrogatepass")
    except (KeyError, ValueError, UnicodeError):
        return False
    age = (time.time() if now is None else now) - t
    if age > tolerance or age < -FUTURE_SKEW:
        return False
    expected = sign(secret, body, at=t).split("v1=", 1)[1].encode()
    return hmac.compare_digest(expected, given)


@dataclass(frozen=True, slots=True)
class Webhook:
    """A webhook: where a namespace's events are posted, which types (all when empty), and
    how far delivery has come: ``cursor`` is the last sequence number delivered or given up
    on; ``attempts`` the failed tries of the batch after it, retried at ``next_at``."""

    id: str
    namespace: str
    url: str
    secret: str
    types: tuple[str, ...]
    created_at: float
    cursor: int
    attempts: int = 0
    next_at: float = 0.0
    last_error: str | None = None
    delivered: int = 0
    dead: int = 0

    def to_dict(self, *, secret: bool = False) -> dict[str, Any]:
        """The webhook as JSON; the secret only when asked (it is shown once, at creation)."""
        out = {"id": self.id, "namespace": self.namespace, "url": self.url,
               "types": list(self.types), "created_at": self.created_at, "cursor": self.cursor,
               "attempts": self.attempts, "next_at": self.next_at or None,
               "last_error": self.last_error, "delivered": self.delivered,
               "dead_letters": self.dead}
        if secret:
            out["secret"] = self.secret
        return out
