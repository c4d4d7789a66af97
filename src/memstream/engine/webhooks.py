"""Webhooks: a memory's registrations of URLs that receive a namespace's change events
(``mem.webhooks``: add, list, remove, dead letters, redeliver). Delivery itself, with its
signatures, retries, leases and the checks of a webhook's URL, is ``memstream.engine.delivery``'s
``Deliverer`` (``memstream serve`` runs one; ``Webhooks.deliver`` runs one in the foreground).
"""

from __future__ import annotations

import builtins
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.aliases import renamed
from ..errors import InvalidInput, NotFound
from ..events import EVENT_TYPES, Webhook
from .delivery import Deliverer, check_url

if TYPE_CHECKING:
    from ..store.protocol import Store
    from .memory import Memory

__all__ = ["Deliverer", "Webhooks", "webhooks_of"]


class Webhooks:
    """A memory's webhooks (``mem.webhooks``): register, list, remove, dead letters."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._store: Store = memory.store

    def _ns(self, namespace: str | None) -> str:
        return self._memory.config.namespace_of(namespace)

    def add(self, url: str, *, namespace: str | None = None, types: Sequence[str] = (),
            secret: str | None = None, from_start: bool = False) -> Webhook:
        """Register a webhook for a namespace's events (``types``: all when empty). The
        returned webhook carries its ``secret`` (made when not given): keep it to check
        signatures; it is not shown again. Events written from now on are sent
        (``from_start``: every event still kept)."""
        ns = self._ns(namespace)
        unknown = set(types) - set(EVENT_TYPES)
        if unknown:
            raise InvalidInput(f"unknown event type(s) {sorted(unknown)}; use some of "
                               f"{', '.join(EVENT_TYPES)}")
        if secret is not None and len(secret) < 16:
            raise InvalidInput("a webhook secret needs at least 16 characters")
        url = check_url(url, allow_private=self._memory.config.webhooks_private)
        hook = Webhook(id="wh_" + secrets.token_hex(8), namespace=ns, url=url,
                       secret=secret or "whsec_" + secrets.token_urlsafe(24),
                       types=tuple(dict.fromkeys(types)), created_at=time.time(),
                       cursor=0 if from_start else self._store.events.last_event_seq())
        cap = self._memory.config.webhooks_per_namespace
        if not self._store.events.put_webhook(hook, cap=cap):
            raise InvalidInput(f"namespace {ns!r} has {cap} webhooks, the most it may hold "
                               "(Config.webhooks_per_namespace); remove one first")
        return hook

    def list(self, *, namespace: str | None = None) -> list[Webhook]:
        """The namespace's webhooks, oldest first, with their delivery state."""
        return self._store.events.webhooks(self._ns(namespace))

    @renamed(hook_id="webhook_id")
    def get(self, webhook_id: str, *, namespace: str | None = None) -> Webhook:
        for hook in self.list(namespace=namespace):
            if hook.id == webhook_id:
                return hook
        raise NotFound(f"no webhook {webhook_id!r} in this namespace; list them with "
                       "`memstream webhooks list`")

    @renamed(hook_id="webhook_id")
    def remove(self, webhook_id: str, *, namespace: str | None = None) -> None:
        if not self._store.events.remove_webhook(self._ns(namespace), webhook_id):
            raise NotFound(f"no webhook {webhook_id!r} in this namespace")

    @renamed(hook_id="webhook_id")
    def dead_letters(self, webhook_id: str, *, namespace: str | None = None
                     ) -> builtins.list[dict[str, object]]:
        """The events a webhook gave up on: their numbers, when, and the last error."""
        self.get(webhook_id, namespace=namespace)
        return [{"seq": seq, "at": at, "error": error}
                for seq, at, error in self._store.events.dead_letters(webhook_id)]

    @renamed(hook_id="webhook_id")
    def redeliver(self, webhook_id: str, *, namespace: str | None = None) -> int:
        """Send a webhook's dead letters again (and what came after them); how many."""
        self.get(webhook_id, namespace=namespace)
        return self._store.events.redeliver_dead(self._ns(namespace), webhook_id)

    def deliver(self, *, until_idle: bool = True, timeout: float | None = None) -> int:
        """Deliver in this thread: until nothing is due (``until_idle``) or for ``timeout``
        seconds. Returns how many events arrived."""
        deliverer = Deliverer(self._store.events,
                              allow_private=self._memory.config.webhooks_private)
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
            deliverer.close()
        return total


def webhooks_of(memory: Memory) -> Webhooks:
    return memory.capabilities.get(("webhooks",), lambda: Webhooks(memory), Webhooks)


