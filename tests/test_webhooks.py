"""Webhook delivery to a real HTTP receiver on loopback: signatures, an outage, retries, dead
letters, type filters and namespaces."""

from __future__ import annotations

import itertools
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memstream import Config, InvalidInput, Memory, NotFound
from memstream.bench import webhooks as outage
from memstream.bench.webhooks import Receiver
from memstream.engine.delivery import Deliverer
from memstream.events import sign, verify_signature


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    # the receivers are on loopback: allowed as an operator would allow them
    m = Memory(tmp_path / "hooks.db", embedder="none", config=Config(webhooks_private=True))
    yield m
    m.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def _until(check: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_signatures_check_the_body_the_secret_and_the_age() -> None:
    body = b'{"events": []}'
    header = sign("s" * 20, body)
    assert verify_signature("s" * 20, body, header)
    assert not verify_signature("s" * 20, body + b" ", header)
    assert not verify_signature("t" * 20, body, header)
    old = sign("s" * 20, body, at=int(time.time()) - 3600)
    assert not verify_signature("s" * 20, body, old)  # a replay of an old delivery
    assert not verify_signature("s" * 20, body, "garbage")
    # a non-ASCII signature is simply wrong, and a time well in the future is refused
    assert not verify_signature("s" * 20, body, header.split("v1=")[0] + "v1=é\ud800")
    ahead = sign("s" * 20, body, at=int(time.time()) + 300)
    assert not verify_signature("s" * 20, body, ahead)
    assert verify_signature("s" * 20, body, sign("s" * 20, body, at=int(time.time()) + 5))


def test_events_arrive_signed_in_order(mem: Memory, receiver: Receiver) -> None:
    hook = mem.webhooks.add(receiver.url)
    receiver.secret = hook.secret
    a = mem.add("Ana prefers the window seat", user_id="ana")
    mem.update(a.id, importance=0.8)
    mem.delete(a.id)
    assert mem.webhooks.deliver() == 3
    assert [e["type"] for e in receiver.events] == ["added", "updated", "deleted"]
    assert receiver.events[0]["record_ids"] == [a.id]
    assert receiver.events[0]["user_id"] == "ana"
    assert "text" not in receiver.events[0]["data"]
    assert receiver.refused == 0
    state = mem.webhooks.get(hook.id)
    assert (state.delivered, state.attempts, state.dead) == (3, 0, 0)


def test_a_receiver_with_another_secret_refuses_and_nothing_is_lost(
        mem: Memory, receiver: Receiver) -> None:
    hook = mem.webhooks.add(receiver.url)
    receiver.secret = "not-the-secret-at-all"
    mem.add("one")
    deliverer = Deliverer(mem.store.events, base_delay=0.05, max_attempts=100, allow_private=True)
    deliverer.run_once()
    assert receiver.refused == 1 and receiver.events == []
    assert mem.webhooks.get(hook.id).last_error == "HTTP 4xx"  # the class, not the detail
    receiver.secret = hook.secret  # fixed: the retry gets through
    _until(lambda: deliverer.run_once()[0] == 1)
    assert [e["type"] for e in receiver.events] == ["added"]


@pytest.mark.slow
def test_an_outage_loses_nothing_and_keeps_each_record_in_order() -> None:
    report = outage.run(n=200, down=3.0, max_delay=1.0, timeout=60)
    assert report["failed_tries_while_down"] >= 2
    assert report["missing"] == 0 and report["unexpected"] == 0
    assert report["out_of_order"] == 0
    assert report["arrived"] >= report["expected"] == 300  # 200 adds, 100 updates


def test_after_its_tries_a_batch_becomes_dead_letters_and_can_be_sent_again(
        mem: Memory) -> None:
    down = Receiver().start()
    down.stop()  # a port where nothing listens
    hook = mem.webhooks.add(down.url)
    mem.add("first")
    mem.add("second")
    deliverer = Deliverer(mem.store.events, base_delay=0.01, max_delay=0.02, max_attempts=3,
                          allow_private=True)
    _until(lambda: deliverer.run_once() is not None and mem.webhooks.get(hook.id).dead == 2)
    dead = mem.webhooks.dead_letters(hook.id)
    assert len(dead) == 2 and dead[0]["error"] == "connection failed"
    mem.add("third")  # delivery goes on after the dead letters
    down.secret = hook.secret
    down.start()
    _until(lambda: deliverer.run_once()[0] > 0)
    assert [e["type"] for e in down.events] == ["added"] and len(down.events) == 1
    assert mem.webhooks.redeliver(hook.id) == 2
    _until(lambda: deliverer.run_once()[0] > 0)
    assert len(down.events) == 4  # the two dead letters, and "third" again (at least once)
    assert mem.webhooks.dead_letters(hook.id) == []
    down.stop()


def test_types_and_namespaces_select_what_a_webhook_gets(mem: Memory) -> None:
    deletes, other = Receiver().start(), Receiver().start()
    try:
        h1 = mem.webhooks.add(deletes.url, types=["deleted"])
        h2 = mem.webhooks.add(other.url, namespace="other")
        deletes.secret, other.secret = h1.secret, h2.secret
        a = mem.add("kept then deleted")
        mem.add("elsewhere", namespace="other")
        mem.delete(a.id)
        mem.webhooks.deliver()
        assert [e["type"] for e in deletes.events] == ["deleted"]
        assert [(e["type"], e["namespace"]) for e in other.events] == [("added", "other")]
        mem.add("more, not deleted")
        mem.webhooks.deliver()
        assert mem.webhooks.get(h1.id).cursor == mem.store.events.last_event_seq()  # skipped past
        assert [h.id for h in mem.webhooks.list()] == [h1.id]
        assert [h.id for h in mem.webhooks.list(namespace="other")] == [h2.id]
        with pytest.raises(NotFound):
            mem.webhooks.remove(h2.id)  # not in this namespace
    finally:
        deletes.stop()
        other.stop()


def test_bad_registrations_are_refused_and_write_nothing(mem: Memory) -> None:
    for url in ("ftp://example.com/x", "not a url", "http://user:pw@127.0.0.1/x"):
        with pytest.raises(InvalidInput):
            mem.webhooks.add(url)
    with pytest.raises(InvalidInput, match="unknown event type"):
        mem.webhooks.add("http://127.0.0.1:9/x", types=["created"])
    with pytest.raises(InvalidInput, match="16 characters"):
        mem.webhooks.add("http://127.0.0.1:9/x", secret="short")
    assert mem.webhooks.list() == []


# --- round 3: no tenant stalls another, no webhook reaches the server's own network ----------

class _Stall:
    """A receiver that accepts connections and never answers (``trickle``: sends one byte of
    a status line every ``trickle`` seconds, forever)."""

    def __init__(self, trickle: float = 0.0) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.trickle, self.conns = trickle, []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.trickle:
                threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        try:
            for byte in itertools.cycle(b"HTTP/1.1 200"):
                conn.send(bytes([byte]))
                time.sleep(self.trickle)
        except OSError:
            return

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.mark.slow
def test_slow_receivers_of_one_namespace_do_not_stall_another(mem: Memory,
                                                              receiver: Receiver) -> None:
    stalls = [_Stall(trickle=0.2 if n % 2 else 0.0) for n in range(10)]
    try:
        for s in stalls:
            mem.webhooks.add(s.url, namespace="noisy")
        hook = mem.webhooks.add(receiver.url, namespace="quiet")
        receiver.secret = hook.secret
        mem.add("noise", namespace="noisy")
        mem.add("hello", namespace="quiet")
        deliverer = Deliverer(mem.store.events, deadline=3.0, poll=0.05, allow_private=True).start()
        started = time.monotonic()
        try:
            _until(lambda: len(receiver.events) == 1, timeout=10)
            took = time.monotonic() - started
            # every stalled post ends by its deadline, trickling or not
            _until(lambda: all(h.last_error == "timeout"
                               for h in mem.webhooks.list(namespace="noisy")), timeout=30)
        finally:
            deliverer.stop()
        assert took < 2.0, took  # not behind the noisy namespace's 3 s deadlines
    finally:
        for s in stalls:
            s.close()


def test_redirects_are_not_followed(mem: Memory, receiver: Receiver) -> None:
    class Redirect(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(302)
            self.send_header("Location", receiver.url)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hook = mem.webhooks.add(f"http://127.0.0.1:{server.server_address[1]}/hook")
        receiver.secret = hook.secret
        mem.add("signed, not to be forwarded")
        Deliverer(mem.store.events, max_attempts=1, allow_private=True).run_once()
        assert receiver.arrivals == 0
        assert mem.webhooks.dead_letters(hook.id)[0]["error"].startswith("HTTP 3xx")
    finally:
        server.shutdown()
        server.server_close()


def test_webhook_urls_cannot_reach_metadata_or_private_addresses(tmp_path: Path) -> None:
    with Memory(tmp_path / "strict.db", embedder="none") as strict:
        for url in ("http://169.254.169.254/latest/meta-data/",
                    "http://metadata.google.internal/computeMetadata/v1/",
                    "http://[fe80::1]/x", "http://127.0.0.1:8080/x", "http://10.0.0.7/x",
                    "http://localhost/x", "http://[::1]/x", "http://example.com:99999/x",
                    "http://example.com/x\r\nX-Evil: 1", "http://exa mple.com/x"):
            with pytest.raises(InvalidInput):
                strict.webhooks.add(url)
        assert strict.webhooks.list() == []
    with Memory(tmp_path / "open.db", embedder="none",
                config=Config(webhooks_private=True)) as allowed:
        allowed.webhooks.add("http://127.0.0.1:8080/x")  # the operator allowed loopback
        with pytest.raises(InvalidInput, match="metadata"):
            allowed.webhooks.add("http://169.254.169.254/latest/meta-data/")


def test_a_namespace_holds_a_bounded_number_of_webhooks(tmp_path: Path) -> None:
    with Memory(tmp_path / "cap.db", embedder="none",
                config=Config(webhooks_private=True, webhooks_per_namespace=3)) as mem:
        for n in range(3):
            mem.webhooks.add(f"http://127.0.0.1:{9000 + n}/x")
        with pytest.raises(InvalidInput, match="webhooks_per_namespace"):
            mem.webhooks.add("http://127.0.0.1:9100/x")
        mem.webhooks.add("http://127.0.0.1:9100/x", namespace="other")  # per namespace


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_registrations_at_the_same_time_never_pass_the_cap(tmp_path: Path, backend: str,
                                                           request: pytest.FixtureRequest
                                                           ) -> None:
    """40 registrations at once against a cap of 10, from four processes' worth of Memory
    objects on one store: exactly 10 are stored (the count and the insert are one
    serialised transaction); the others are refused with the cap named."""
    from concurrent.futures import ThreadPoolExecutor

    target = str(tmp_path / "race.db") if backend == "sqlite" \
        else request.getfixturevalue("pg_url")
    config = Config(webhooks_private=True, webhooks_per_namespace=10)
    mems = [Memory(target, embedder="none", config=config) for _ in range(4)]
    try:
        start = threading.Barrier(40)

        def register(n: int) -> str:
            start.wait()
            try:
                mems[n % 4].webhooks.add(f"http://127.0.0.1:{9000 + n}/x", namespace="race")
                return "stored"
            except InvalidInput as exc:
                assert "webhooks_per_namespace" in str(exc)
                return "refused"

        with ThreadPoolExecutor(40) as pool:
            outcomes = list(pool.map(register, range(40)))
        assert outcomes.count("stored") == 10 and outcomes.count("refused") == 30
        assert len(mems[0].webhooks.list(namespace="race")) == 10
    finally:
        for mem in mems:
            mem.close()


@pytest.mark.parametrize("url", [
    "http://100.100.100.200/latest/meta-data/",  # a cloud metadata service (Alibaba)
    "http://192.0.0.192/opc/v1/instance/",  # another (Oracle)
    "http://100.64.0.1/x", "http://100.127.255.254/x",  # carrier-grade NAT
    "http://192.0.0.9/x", "http://192.0.0.200/x",  # the IETF's 192.0.0.0/24, anycast included
    "http://192.88.99.1/x",  # the 6to4 relays' anycast (deprecated)
    "http://[2002:7f00:1::]/x",  # 6to4 form of 127.0.0.1
    "http://[64:ff9b::7f00:1]/x",  # NAT64 form of 127.0.0.1
    "http://[fe80::1%25eth0]/x",  # a zone id: the look-up fails, the address is link-local
    "http://no-such-host.invalid/x",  # cannot be resolved
])
def test_the_default_policy_refuses_metadata_nat_and_unresolvable_targets(
        tmp_path: Path, url: str) -> None:
    with Memory(tmp_path / "strict.db", embedder="none") as strict:
        with pytest.raises(InvalidInput, match="webhook cannot post"):
            strict.webhooks.add(url)
        assert strict.webhooks.list() == []


def test_metadata_services_are_refused_even_with_private_targets_allowed(tmp_path: Path
                                                                         ) -> None:
    with Memory(tmp_path / "open.db", embedder="none",
                config=Config(webhooks_private=True)) as allowed:
        for url in ("http://[fd00:ec2::254]/latest/meta-data/", "http://100.100.100.200/x",
                    "http://192.0.0.192/x", "http://[2002:a9fe:a9fe::]/x"):
            with pytest.raises(InvalidInput, match=r"metadata|link-local"):
                allowed.webhooks.add(url)
        allowed.webhooks.add("http://100.64.0.1/x")  # carrier-grade NAT: private, allowed


def test_a_post_connects_to_the_address_it_checked(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS rebinding: a name that answers a public address to the check and loopback to a
    second look-up. The post connects to the address it checked; the loopback receiver hears
    nothing."""
    receiver = Receiver(secret="s" * 16).start()
    real = socket.getaddrinfo
    answers = itertools.chain(["93.184.216.34"], itertools.repeat("127.0.0.1"))
    connected: list[tuple[str, int]] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebind.test":
            address = next(answers)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    opened = socket.create_connection

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        connected.append(address)
        if address[0] == "93.184.216.34":  # the public address stands for the internet
            raise ConnectionRefusedError("not reached from the tests")
        return opened(address, *args, **kwargs)  # a name: looked up again (loopback)

    try:
        with Memory(tmp_path / "rebind.db", embedder="none") as mem:
            monkeypatch.setattr(socket, "getaddrinfo", rebinding)
            mem.webhooks.add(f"http://rebind.test:{receiver.port}/hook", secret="s" * 16,
                             from_start=True)
            answers = itertools.chain(["93.184.216.34"], itertools.repeat("127.0.0.1"))
            mem.add("the wifi password is tulip")
            monkeypatch.setattr(socket, "create_connection", create_connection)
            mem.webhooks.deliver(timeout=1.5)
    finally:
        receiver.stop()
    assert receiver.arrivals == 0, "the post reached loopback through a second look-up"
    assert connected and {a[0] for a in connected} == {"93.184.216.34"}


@pytest.mark.slow
def test_silent_receivers_in_many_namespaces_leave_other_tenants_a_thread(
        mem: Memory, receiver: Receiver) -> None:
    """Four namespaces with two never-answering webhooks each would fill the eight delivery
    threads; a quarter of them is kept for namespaces with nothing under way, so another
    tenant's events arrive at once, not after the silent ones' deadlines."""
    stalls = [_Stall() for _ in range(8)]
    try:
        for n, s in enumerate(stalls):
            mem.webhooks.add(s.url, namespace=f"silent-{n // 2}")
            mem.add("noise", namespace=f"silent-{n // 2}")
        hook = mem.webhooks.add(receiver.url, namespace="quiet")
        receiver.secret = hook.secret
        deliverer = Deliverer(mem.store.events, deadline=4.0, poll=0.05, allow_private=True)
        deliverer.start()
        try:
            time.sleep(0.5)  # the silent posts take their threads first
            waits = []
            for n in range(3):
                started = time.monotonic()
                mem.add(f"hello {n}", namespace="quiet")
                _until(lambda n=n: len(receiver.events) == n + 1, timeout=15)
                waits.append(time.monotonic() - started)
        finally:
            deliverer.stop()
        assert max(waits) < 1.5, waits  # not behind the silent receivers' 4 s deadlines
    finally:
        for s in stalls:
            s.close()
