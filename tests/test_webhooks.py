"""Webhook delivery to a real HTTP receiver on loopback: signatures, an outage, retries, dead
letters, type filters and namespaces."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstream import InvalidInput, Memory, NotFound
from memstream.bench import webhooks as outage
from memstream.bench.webhooks import Receiver
from memstream.events import sign, verify_signature
from memstream.webhooks import Deliverer


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(tmp_path / "hooks.db", embedder="none")
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
    deliverer = Deliverer(mem.store, base_delay=0.05, max_attempts=100)
    deliverer.run_once()
    assert receiver.refused == 1 and receiver.events == []
    assert mem.webhooks.get(hook.id).last_error == "HTTP 401"
    receiver.secret = hook.secret  # fixed: the retry gets through
    _until(lambda: deliverer.run_once()[0] == 1)
    assert [e["type"] for e in receiver.events] == ["added"]


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
    deliverer = Deliverer(mem.store, base_delay=0.01, max_delay=0.02, max_attempts=3)
    _until(lambda: deliverer.run_once() is not None and mem.webhooks.get(hook.id).dead == 2)
    dead = mem.webhooks.dead_letters(hook.id)
    assert len(dead) == 2 and "Error" in str(dead[0]["error"])
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
        assert mem.webhooks.get(h1.id).cursor == mem.store.last_event_seq()  # skipped past
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
