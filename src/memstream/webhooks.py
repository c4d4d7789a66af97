"""Webhooks: a namespace's change events posted to a URL, signed, at least once, in order.

Each webhook keeps a cursor in the store (the last event number delivered or given up on). A
``Deliverer`` (``memstream serve`` runs one; ``Webhooks.deliver`` runs one in the foreground)
takes the webhooks due for a try under a lease, so several servers on one PostgreSQL never post
the same batch at once, and posts their next events in batches, oldest first::

    POST <url>
    Content-Type: application/json
    X-Memstream-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>
    X-Memstream-Webhook: <webhook id>
    X-Memstream-Delivery: <webhook id>:<first>-<last event number>

    {"webhook_id": ..., "namespace": ..., "events": [<ChangeEvent.to_dict()>, ...]}

Any 2xx answer advances the cursor. Anything else, or no answer, is retried after 0.5 s, 1 s,
2 s, ... (doubling, at most 60 s, with jitter); after ``max_attempts`` tries the batch becomes
dead letters (listed by the API, sent again by ``redeliver``) and delivery goes on. The cursor
only moves after an answer, so a process killed mid-delivery sends that batch again when it
restarts: a receiver sees each event at least once, those of one record in order.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import random
import secrets
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import InvalidInput, NotFound
from .events import EVENT_TYPES, SIGNATURE_HEADER, Webhook, sign

if TYPE_CHECKING:
    from .memory import Memory
    from .store.protocol import Store

__all__ = ["Deliverer", "Webhooks", "webhooks_of"]

log = logging.getLogger("memstream.webhooks")


def _check_url(url: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InvalidInput(f"a webhook URL must be http(s)://host/...; got {url!r}")
    if parsed.username or parsed.password:
        raise InvalidInput("put no credentials in a webhook URL: check the signature header "
                           "instead")
    return url


class Webhooks:
    """A memory's webhooks (``mem.webhooks``): register, list, remove, dead letters."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._store: Store = memory.store

    def add(self, url: str, *, namespace: str | None = None, types: Sequence[str] = (),
            secret: str | None = None, from_start: bool = False) -> Webhook:
        """Register a webhook for a namespace's events (``types``: all when empty). The
        returned webhook carries its ``secret`` (made when not given): keep it to check
        signatures; it is not shown again. Events written from now on are sent
        (``from_start``: every event still kept)."""
        ns = self._memory._ns(namespace)
        unknown = set(types) - set(EVENT_TYPES)
        if unknown:
            raise InvalidInput(f"unknown event type(s) {sorted(unknown)}; use some of "
                               f"{', '.join(EVENT_TYPES)}")
        if secret is not None and len(secret) < 16:
            raise InvalidInput("a webhook secret needs at least 16 characters")
        hook = Webhook(id="wh_" + secrets.token_hex(8), namespace=ns, url=_check_url(url),
                       secret=secret or "whsec_" + secrets.token_urlsafe(24),
                       types=tuple(dict.fromkeys(types)), created_at=time.time(),
                       cursor=0 if from_start else self._store.last_event_seq())
        self._store.put_webhook(hook)
        return hook

    def list(self, *, namespace: str | None = None) -> list[Webhook]:
        """The namespace's webhooks, oldest first, with their delivery state."""
        return self._store.webhooks(self._memory._ns(namespace))

    def get(self, hook_id: str, *, namespace: str | None = None) -> Webhook:
        for hook in self.list(namespace=namespace):
            if hook.id == hook_id:
                return hook
        raise NotFound(f"no webhook {hook_id!r} in this namespace; list them with "
                       "`memstream webhooks list`")

    def remove(self, hook_id: str, *, namespace: str | None = None) -> None:
        if not self._store.remove_webhook(self._memory._ns(namespace), hook_id):
            raise NotFound(f"no webhook {hook_id!r} in this namespace")

    def dead_letters(self, hook_id: str, *, namespace: str | None = None
                     ) -> builtins.list[dict[str, object]]:
        """The events a webhook gave up on: their numbers, when, and the last error."""
        self.get(hook_id, namespace=namespace)
        return [{"seq": seq, "at": at, "error": error}
                for seq, at, error in self._store.dead_letters(hook_id)]

    def redeliver(self, hook_id: str, *, namespace: str | None = None) -> int:
        """Send a webhook's dead letters again (and what came after them); how many."""
        self.get(hook_id, namespace=namespace)
        return self._store.redeliver_dead(self._memory._ns(namespace), hook_id)

    def deliver(self, *, until_idle: bool = True, timeout: float | None = None) -> int:
        """Deliver in this thread: until nothing is due (``until_idle``) or for ``timeout``
        seconds. Returns how many events arrived."""
        deliverer = Deliverer(self._store)
        deadline = None if timeout is None else time.monotonic() + timeout
        total = 0
        try:
            while deadline is None or time.monotonic() < deadline:
                sent, pending = deliverer.run_once()
                total += sent
                if until_idle and not pending:
                    break
                if not sent:
                    time.sleep(0.2)
        finally:
            deliverer.release()
        return total


def webhooks_of(memory: Memory) -> Webhooks:
    return memory.capabilities.get(("webhooks",), lambda: Webhooks(memory), Webhooks)


def _stale(owner: str) -> bool:
    """Whether a deliverer (``host/pid/token``) was on this host and its process is gone."""
    host, _, rest = owner.partition("/")
    pid = rest.partition("/")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False


class Deliverer:
    """Posts due webhooks' events (``run_once``), or keeps doing so on a thread (``start``)."""

    def __init__(self, store: Store, *, batch: int = 100, timeout: float = 10.0,
                 base_delay: float = 0.5, max_delay: float = 60.0, max_attempts: int = 12,
                 lease: float | None = None, poll: float = 0.5) -> None:
        self._store = store
        # host/pid/token: a deliverer that finds the owner of a webhook dead on its own host
        # takes the webhook over at once (``_stale``)
        self.owner = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
        self.batch, self.timeout, self.poll = batch, timeout, poll
        # a killed deliverer's webhooks are taken over once its lease runs out
        self.lease = 2 * timeout + 5 if lease is None else lease
        self.base_delay, self.max_delay, self.max_attempts = base_delay, max_delay, max_attempts
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._released = False

    def run_once(self) -> tuple[int, bool]:
        """One round over the due webhooks; (events delivered, whether any webhook still has
        events waiting or a retry pending)."""
        if not self._store.webhooks():
            return 0, False
        if not self._released:
            self._released = True
            self._store.release_webhooks(_stale)
        sent, pending = 0, False
        for hook in self._store.claim_webhooks(self.owner, lease=self.lease, now=time.time()):
            if self._stop.is_set():
                break
            n, more = self._deliver(hook)
            sent += n
            pending = pending or more
        if not pending:  # a webhook waiting out a retry counts as pending too
            pending = any(h.attempts for h in self._store.webhooks())
        return sent, pending

    def _deliver(self, hook: Webhook) -> tuple[int, bool]:
        last = self._store.last_event_seq()
        events = self._store.events_after([hook.namespace], hook.cursor, limit=self.batch,
                                          types=hook.types, upto=last)
        if not events:
            if last > hook.cursor:  # only events of other types: skip past them
                self._store.webhook_progress(hook.id, self.owner, cursor=last)
            return 0, False
        full = len(events) == self.batch
        cursor = events[-1].seq if full else last
        body = json.dumps({"webhook_id": hook.id, "namespace": hook.namespace,
                           "events": [e.to_dict() for e in events]}).encode()
        error = self._post(hook, body, f"{hook.id}:{events[0].seq}-{events[-1].seq}")
        if error is None:
            self._store.webhook_progress(hook.id, self.owner, cursor=cursor,
                                         delivered=len(events))
            return len(events), full
        attempts = hook.attempts + 1
        if attempts >= self.max_attempts:
            log.warning("webhook %s gave up on events %s-%s after %s tries: %s", hook.id,
                        events[0].seq, events[-1].seq, attempts, error)
            self._store.webhook_progress(hook.id, self.owner, cursor=cursor, error=error,
                                         dead=[e.seq for e in events])
            return 0, True
        delay = min(self.max_delay, self.base_delay * 2 ** (attempts - 1))
        delay *= random.uniform(0.8, 1.2)
        self._store.webhook_progress(hook.id, self.owner, cursor=hook.cursor, attempts=attempts,
                                     next_at=time.time() + delay, error=error)
        return 0, True

    def _post(self, hook: Webhook, body: bytes, delivery: str) -> str | None:
        """None when the receiver took the batch, else what went wrong."""
        request = urllib.request.Request(hook.url, data=body, method="POST", headers={
            "Content-Type": "application/json", SIGNATURE_HEADER: sign(hook.secret, body),
            "X-Memstream-Webhook": hook.id, "X-Memstream-Delivery": delivery,
            "User-Agent": "memstream-webhooks"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                resp.read(1 << 16)
                return None if 200 <= resp.status < 300 else f"HTTP {resp.status}"
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            return f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"

    def start(self) -> Deliverer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="memstream-webhooks",
                                            daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                sent, _ = self.run_once()
            except Exception:  # a store briefly unreachable: try again next round
                log.exception("webhook delivery round failed")
                sent = 0
            if not sent:
                self._stop.wait(self.poll)

    def release(self) -> None:
        """Give up this deliverer's leases, so another can go on at once."""
        self._store.release_webhooks(lambda owner: owner == self.owner)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 2)
        self.release()
