"""Webhook delivery: a namespace's change events posted to a URL, signed, at least once, in
order. An outbound HTTP client over the store's event part (``EventStore``), beside the other
remote services (``llm``); ``webhooks.Webhooks`` registers the webhooks it serves.

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

One slow receiver delays only itself: each post has a wall-clock deadline (``deadline``, 10 s,
however slowly the receiver trickles its answer), posts run on a pool of ``workers`` threads
(8), and a namespace has at most ``per_namespace`` (2) of them at once, its webhooks taken in
turn with the other namespaces'; a quarter of the threads is kept for namespaces with no post
under way, so silent receivers spread over many namespaces never take every thread. A
namespace holds at most ``Config.webhooks_per_namespace`` webhooks (10).

A webhook cannot be turned on the server's own network: its URL must be http(s) with a host,
a valid port and no credentials, whitespace or control characters; redirects are never
followed (a 3xx answer is a failed try); link-local and cloud-metadata addresses
(169.254.0.0/16, fe80::/10, metadata.google.internal, 100.100.100.200, fd00:ec2::254, ...)
are refused always, and so are names that cannot be resolved; every address that is not
globally routable (loopback, private, carrier-grade NAT, and IPv4 ones inside IPv6 forms such
as 6to4 or NAT64) unless the operator allows them (``Config.webhooks_private``,
``MEMSTREAM_WEBHOOKS_PRIVATE=1``). The host's addresses are checked at registration and again
before each post, and the post connects to the address just checked (no second look-up that a
rebinding DNS server could answer differently). A webhook's ``last_error`` says only the class
of a failure ("timeout", "connection failed", "HTTP 5xx", "address not allowed"), never which
port answered what.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
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
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..events import SIGNATURE_HEADER, Webhook, sign

if TYPE_CHECKING:
    from ..store.protocol import EventStore

__all__ = ["METADATA_ADDRESSES", "METADATA_HOSTS", "Deliverer", "address_refused", "check_url",
           "resolve_target"]

log = logging.getLogger("memstream.engine.webhooks")


#: host names of cloud metadata services: never a webhook's target
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata",
                            "instance-data", "instance-data.ec2.internal",
                            "metadata.azure.internal"})
_CONTROL = frozenset(chr(c) for c in (*range(0x21), 0x7f))


def check_url(url: str, *, allow_private: bool = False, resolve: bool = True) -> str:
    """``url`` when it may be a webhook's target (module docstring), else InvalidInput."""
    if not isinstance(url, str) or not url or len(url) > 2048 or any(c in _CONTROL
                                                                     for c in url):
        raise InvalidInput("a webhook URL must be one http(s) URL of at most 2,048 characters, "
                           "without spaces or control characters")
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise InvalidInput(f"a webhook URL must be http(s)://host/...; got {url!r}")
    if parsed.username or parsed.password:
        raise InvalidInput("put no credentials in a webhook URL: check the signature header "
                           "instead")
    try:
        port = parsed.port
    except ValueError as exc:
        raise InvalidInput(f"a webhook URL's port must be 1-65535; got {url!r}") from exc
    if port == 0:
        raise InvalidInput(f"a webhook URL's port must be 1-65535; got {url!r}")
    if resolve:
        refused, _ = resolve_target(parsed.hostname, port or 443, allow_private)
        if refused:
            raise InvalidInput(f"a webhook cannot post to {parsed.hostname}: {refused}")
    return url


#: addresses of cloud metadata services: never a webhook's target, whatever the operator allows
#: (AWS, GCP and Azure at 169.254.169.254 and fd00:ec2::254, Alibaba at 100.100.100.200,
#: Oracle at 192.0.0.192, Azure's wire server at 168.63.129.16)
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "192.0.0.192", "168.63.129.16",
    "169.254.170.2", "169.254.169.253"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
#: special-purpose blocks that Python's ``is_global`` still counts as global in part, refused
#: with the other addresses that are not globally routable: the IETF protocol assignments
#: (192.0.0.0/24: 192.0.0.9 and .10 are anycast services, never a receiver) and the
#: deprecated 6to4 relay anycast (192.88.99.0/24, RFC 7526)
_NOT_RECEIVERS = (ipaddress.ip_network("192.0.0.0/24"), ipaddress.ip_network("192.88.99.0/24"))


def _embedded_v4(addr: ipaddress.IPv4Address | ipaddress.IPv6Address
                 ) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo's server, NAT64), else it."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return addr.ipv4_mapped
        if addr.sixtofour is not None:
            return addr.sixtofour
        if addr.teredo is not None:
            return addr.teredo[1]
        if addr in _NAT64:
            return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return addr


def address_refused(addr: ipaddress.IPv4Address | ipaddress.IPv6Address,
                    allow_private: bool) -> str | None:
    """Why a webhook may not post to ``addr`` (None: it may). Metadata services, link-local,
    multicast, reserved and unspecified addresses are refused always; every address that is
    not globally routable (loopback, private, carrier-grade NAT 100.64.0.0/10, the IETF's
    192.0.0.0/24, the 6to4 relays' 192.88.99.0/24, ...) unless the operator allows private
    targets."""
    inner = _embedded_v4(addr)
    for a in {addr, inner}:
        if a in METADATA_ADDRESSES:
            return "a cloud metadata service is never a webhook's target"
        if a.is_link_local or a.is_multicast or a.is_reserved or a.is_unspecified:
            return "link-local, multicast and reserved addresses (cloud metadata) are refused"
    special = any(a in net for a in {addr, inner} for net in _NOT_RECEIVERS
                  if a.version == net.version)
    if not allow_private and (special or not (addr.is_global and inner.is_global)):
        return ("loopback, private and other addresses that are not globally routable are "
                "refused unless the operator allows them (MEMSTREAM_WEBHOOKS_PRIVATE=1)")
    return None


def resolve_target(host: str, port: int, allow_private: bool) -> tuple[str | None, list[str]]:
    """(why ``host`` may not be posted to, or None; its addresses, every one checked). A name
    that cannot be resolved is refused; so is a name any of whose addresses is."""
    name = host.strip("[]").rstrip(".").lower()
    if name in METADATA_HOSTS:
        return "a cloud metadata service is never a webhook's target", []
    literal = name.split("%")[0]  # an IPv6 zone ("fe80::1%eth0") names no other address
    try:
        addresses = [ipaddress.ip_address(literal)]
    except ValueError:
        try:
            infos = socket.getaddrinfo(name, port, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return f"{host} cannot be resolved", []
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    if not addresses:
        return f"{host} cannot be resolved", []
    for addr in addresses:
        why = address_refused(addr, allow_private)
        if why:
            return why, []
    return None, [str(a) for a in addresses]


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
    """Posts due webhooks' events (``run_once``), or keeps doing so on a thread (``start``);
    posts run on a pool, at most ``per_namespace`` per namespace at once, each within
    ``deadline`` seconds (module docstring)."""

    def __init__(self, events: EventStore, *, batch: int = 100, timeout: float = 10.0,
                 base_delay: float = 0.5, max_delay: float = 60.0, max_attempts: int = 12,
                 lease: float | None = None, poll: float = 0.5, workers: int = 8,
                 per_namespace: int = 2, deadline: float | None = None,
                 allow_private: bool = False) -> None:
        self._events = events
        # host/pid/token: a deliverer that finds the owner of a webhook dead on its own host
        # takes the webhook over at once (``_stale``)
        self.owner = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(4)}"
        self.batch, self.timeout, self.poll = batch, timeout, poll
        self.deadline = timeout if deadline is None else deadline
        self.per_namespace, self.allow_private = per_namespace, allow_private
        # a killed deliverer's webhooks are taken over once its lease runs out
        self.lease = 2 * self.deadline + 5 if lease is None else lease
        self.base_delay, self.max_delay, self.max_attempts = base_delay, max_delay, max_attempts
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._released = False
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="memstream-webhook")
        self._busy: dict[str, tuple[str, Future[tuple[int, bool]]]] = {}

    def run_once(self, *, wait: bool = True) -> tuple[int, bool]:
        """One round: posts of the due webhooks started (a webhook still posting is left to
        finish), the finished ones collected; with ``wait``, this round's posts are waited
        for. Returns (events delivered, whether any webhook still has events waiting, a retry
        pending or a post under way)."""
        sent, pending = self._collect()
        if not self._events.webhooks():
            return sent, pending
        if not self._released:
            self._released = True
            self._events.release_webhooks(_stale)
        claimed = self._events.claim_webhooks(self.owner, lease=self.lease, now=time.time())
        started = []
        for hook in _in_turn(claimed):
            if self._stop.is_set():
                break
            if hook.id in self._busy:
                pending = True
                continue
            if not self._may_start(hook.namespace):
                pending = True  # the namespace's share of the pool is in use: next round
                continue
            self._busy[hook.id] = (hook.namespace, self._pool.submit(self._deliver, hook))
            started.append(hook.id)
        if wait:
            for hook_id in started:
                self._busy[hook_id][1].result()
        more_sent, more = self._collect()
        sent, pending = sent + more_sent, pending or more or bool(self._busy)
        if not pending:  # a webhook waiting out a retry counts as pending too
            pending = any(h.attempts for h in self._events.webhooks())
        return sent, pending

    def _may_start(self, namespace: str) -> bool:
        """Whether a post of ``namespace`` may start now: the namespace has fewer than
        ``per_namespace`` posts under way, and the pool has a thread for it. A quarter of the
        pool (at least one thread) is kept for namespaces with nothing under way, so that
        receivers that never answer, however many namespaces they span, leave the others a
        thread (without it, four namespaces of two silent webhooks filled the eight threads
        and every other tenant waited out their deadlines)."""
        own = sum(ns == namespace for ns, _ in self._busy.values())
        if own >= self.per_namespace or len(self._busy) >= self.workers:
            return False
        return own == 0 or len(self._busy) < self.workers - max(1, self.workers // 4)

    def _collect(self) -> tuple[int, bool]:
        sent, pending = 0, False
        for hook_id, (_, future) in list(self._busy.items()):
            if future.done():
                del self._busy[hook_id]
                try:
                    n, more = future.result()
                except Exception:  # a store briefly unreachable: the next round tries again
                    log.exception("webhook %s: delivery failed", hook_id)
                    n, more = 0, True
                sent, pending = sent + n, pending or more
        return sent, pending

    def _deliver(self, hook: Webhook) -> tuple[int, bool]:
        last = self._events.last_event_seq()
        events = self._events.events_after([hook.namespace], hook.cursor, limit=self.batch,
                                                 types=hook.types, upto=last)
        if not events:
            if last > hook.cursor:  # only events of other types: skip past them
                self._events.webhook_progress(hook.id, self.owner, cursor=last)
            return 0, False
        full = len(events) == self.batch
        cursor = events[-1].seq if full else last
        body = json.dumps({"webhook_id": hook.id, "namespace": hook.namespace,
                           "events": [e.to_dict() for e in events]}).encode()
        error = self._post(hook, body, f"{hook.id}:{events[0].seq}-{events[-1].seq}")
        if error is None:
            self._events.webhook_progress(hook.id, self.owner, cursor=cursor,
                                                delivered=len(events))
            return len(events), full
        attempts = hook.attempts + 1
        if attempts >= self.max_attempts:
            log.warning("webhook %s gave up on events %s-%s after %s tries: %s", hook.id,
                        events[0].seq, events[-1].seq, attempts, error)
            self._events.webhook_progress(hook.id, self.owner, cursor=cursor, error=error,
                                                dead=[e.seq for e in events])
            return 0, True
        delay = min(self.max_delay, self.base_delay * 2 ** (attempts - 1))
        delay *= random.uniform(0.8, 1.2)
        self._events.webhook_progress(hook.id, self.owner, cursor=hook.cursor,
                                            attempts=attempts, next_at=time.time() + delay,
                                            error=error)
        return 0, True

    def _post(self, hook: Webhook, body: bytes, delivery: str) -> str | None:
        """None when the receiver took the batch, else the class of what went wrong (the
        operator's log has the detail)."""
        parsed = urllib.parse.urlsplit(hook.url)
        host = parsed.hostname or ""
        try:
            port = parsed.port
        except ValueError:
            return "invalid URL"
        refused, addresses = resolve_target(
            host, port or (443 if parsed.scheme == "https" else 80), self.allow_private)
        if refused:
            return "address not allowed"
        kind = http.client.HTTPSConnection if parsed.scheme == "https" \
            else http.client.HTTPConnection
        conn = kind(host, port, timeout=min(self.timeout, self.deadline))
        pinned = addresses[0]  # connect to the address checked, never to a second look-up's

        def connect(address: tuple[str, int], *args: object) -> socket.socket:
            return socket.create_connection((pinned, address[1]), *args)  # type: ignore[arg-type]

        conn._create_connection = connect  # type: ignore[attr-defined]
        expired = threading.Event()

        def abort() -> None:  # the wall-clock deadline: unblock whatever the socket waits on
            expired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self.deadline, abort)
        timer.daemon = True
        timer.start()
        path = (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else "")
        try:
            conn.request("POST", path, body=body, headers={
                "Content-Type": "application/json", SIGNATURE_HEADER: sign(hook.secret, body),
                "X-Memstream-Webhook": hook.id, "X-Memstream-Delivery": delivery,
                "User-Agent": "memstream-webhooks"})
            resp = conn.getresponse()
            resp.read(1 << 16)
            if 200 <= resp.status < 300:
                return None
            return f"HTTP {resp.status // 100}xx" + (" (redirects are not followed)"
                                                     if 300 <= resp.status < 400 else "")
        except (OSError, http.client.HTTPException, ValueError) as exc:
            log.info("webhook %s: post failed: %r", hook.id, exc)
            if expired.is_set() or isinstance(exc, TimeoutError | socket.timeout):
                return "timeout"
            return "connection failed"
        finally:
            timer.cancel()
            conn.close()

    def start(self) -> Deliverer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="memstream-webhooks",
                                            daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                sent, _ = self.run_once(wait=False)
            except Exception:  # a store briefly unreachable: try again next round
                log.exception("webhook delivery round failed")
                sent = 0
            if not sent:
                self._stop.wait(self.poll)

    def release(self) -> None:
        """Give up this deliverer's leases, so another can go on at once."""
        self._events.release_webhooks(lambda owner: owner == self.owner)

    def close(self) -> None:
        """Wait for the posts under way (each ends by its deadline), then release."""
        self._pool.shutdown(wait=True)
        self._collect()
        self.release()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.deadline + 2)
        self.close()


def _in_turn(hooks: Sequence[Webhook]) -> list[Webhook]:
    """``hooks`` taken one namespace after another, each namespace's longest due first (a
    webhook retried soon after a failure does not go before one still waiting for its first
    try), so neither a namespace with many webhooks nor a failing webhook holds the rest."""
    by_ns: dict[str, list[Webhook]] = {}
    for hook in sorted(hooks, key=lambda h: (h.next_at, h.created_at, h.id)):
        by_ns.setdefault(hook.namespace, []).append(hook)
    out: list[Webhook] = []
    queues = list(by_ns.values())
    while queues:
        out += [q.pop(0) for q in queues]
        queues = [q for q in queues if q]
    return out
