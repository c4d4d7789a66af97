from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from memstream import (
    AsyncMemory,
    Config,
    Conflict,
    FixedClock,
    InvalidFilter,
    InvalidInput,
    KeywordOnlyWarning,
    Memory,
    NotFound,
)

from .conftest import T0


def test_add_stores_every_field(kw_memory: Memory):
    rec = kw_memory.add("Bought oat milk", namespace="shop", user_id="u1", agent_id="a1",
                        run_id="r1", kind="action", data={"item": "oat milk", "qty": 2},
                        importance=0.4, step=7, metadata={"src": "test"}, provenance=["x"])
    got = kw_memory.get(rec.id, namespace="shop")
    assert got == rec
    assert (got.created_at, got.last_accessed_at, got.access_count) == (T0, T0, 0)
    assert (got.kind, got.step, got.importance, got.provenance) == ("action", 7, 0.4, ("x",))
    assert got.valid and got.invalidated_at is None


def test_ids_sort_by_creation_time(kw_memory: Memory, clock: FixedClock):
    ids = []
    for i in range(20):
        clock.advance(seconds=0.001 * (i % 2))
        ids.append(kw_memory.add(f"m{i}").id)
    assert ids == sorted(ids) and len(set(ids)) == 20


def test_importance_defaults_to_heuristic_and_caller_wins(kw_memory: Memory):
    routine = kw_memory.add("ok")
    alarm = kw_memory.add("The deploy failed with a critical error and we lost data")
    given = kw_memory.add("The deploy failed with a critical error", importance=0.1)
    assert routine.importance < alarm.importance
    assert given.importance == 0.1


def test_namespaces_are_isolated(kw_memory: Memory):
    a = kw_memory.add("secret plan alpha", namespace="tenant-a")
    kw_memory.add("public plan beta", namespace="tenant-b")
    assert [h.record.text for h in kw_memory.search("plan", namespace="tenant-b")] == [
        "public plan beta"]
    with pytest.raises(NotFound):
        kw_memory.get(a.id, namespace="tenant-b")
    with pytest.raises(NotFound):
        kw_memory.delete(a.id, namespace="tenant-b")
    assert kw_memory.get(a.id, namespace="tenant-a").text == "secret plan alpha"


def test_search_touches_unless_told_not_to(kw_memory: Memory, clock: FixedClock):
    rec = kw_memory.add("the blue notebook is in the drawer")
    clock.advance(hours=5)
    kw_memory.search("blue notebook", touch=False)
    assert kw_memory.get(rec.id).access_count == 0
    hits = kw_memory.search("blue notebook")
    assert hits[0].explain.hours_since_access == pytest.approx(5)
    got = kw_memory.get(rec.id)
    assert (got.last_accessed_at, got.access_count) == (T0 + 5 * 3600, 1)


def test_recency_follows_last_access_not_creation(kw_memory: Memory, clock: FixedClock):
    old = kw_memory.add("garden tomato harvest notes")
    clock.advance(hours=30)
    new = kw_memory.add("garden tomato seedlings bought")
    clock.advance(hours=1)
    hits = kw_memory.search("garden tomato", weights=(1, 0, 0), touch=False)
    assert hits[0].record.id == new.id  # the recently created one wins on recency alone
    kw_memory.search("harvest", k=1)  # touching the old record makes it the most recent
    clock.advance(hours=1)
    hits = kw_memory.search("garden tomato", weights=(1, 0, 0), touch=False)
    assert hits[0].record.id == old.id


def test_update_history_delete(kw_memory: Memory, clock: FixedClock):
    rec = kw_memory.add("Ana lives in Lisbon", data={"city": "Lisbon"})
    clock.advance(hours=1)
    kw_memory.update(rec.id, text="Ana lives in Porto", data={"city": "Porto"})
    assert [h.record.text for h in kw_memory.search("Porto")] == ["Ana lives in Porto"]
    assert kw_memory.search("Lisbon") == []
    kw_memory.delete(rec.id)
    with pytest.raises(NotFound):
        kw_memory.get(rec.id)
    with pytest.raises(NotFound):
        kw_memory.delete(rec.id)
    events = [(h.event, h.at) for h in kw_memory.history(rec.id)]
    assert events == [("add", T0), ("update", T0 + 3600), ("delete", T0 + 3600)]
    assert kw_memory.history(rec.id)[1].old == {"text": "Ana lives in Lisbon",
                                                "data": {"city": "Lisbon"}}


def test_invalidate_keeps_the_record_readable(kw_memory: Memory):
    old = kw_memory.add("the office is on floor 3")
    new = kw_memory.add("the office moved to floor 5")
    kw_memory.invalidate(old.id, superseded_by=new.id)
    assert [h.record.id for h in kw_memory.search("office floor")] == [new.id]
    got = kw_memory.get(old.id)
    assert (got.valid, got.superseded_by) == (False, new.id)
    assert {r.id for r in kw_memory.get_all(include_invalid=True)} == {old.id, new.id}


def test_filters_on_get_all_and_search(kw_memory: Memory, clock: FixedClock):
    for i, (city, score) in enumerate([("Paris", 3), ("Rome", 8), ("Oslo", 5)]):
        clock.set(T0 + i * 3600)
        kw_memory.add(f"trip report {city}", data={"city": city, "score": score}, step=i)
    assert [r.data["city"] for r in kw_memory.get_all(filters={"score": {"gte": 5}})] == [
        "Rome", "Oslo"]
    hits = kw_memory.search("trip report", filters={"NOT": {"city": "Rome"}})
    assert sorted(h.record.data["city"] for h in hits) == ["Oslo", "Paris"]
    assert [r.step for r in kw_memory.get_all(step_range=(1, 2))] == [1, 2]
    assert len(kw_memory.get_all(since=T0 + 3600, until=T0 + 3600)) == 1
    assert kw_memory.count(filters={"city": {"in": ["Paris", "Oslo"]}}) == 2
    with pytest.raises(InvalidFilter):
        kw_memory.search("trip", filters={"score": {"approx": 3}})


def test_delete_all_and_reset(kw_memory: Memory):
    kw_memory.add("a", user_id="u1")
    kw_memory.add("b", user_id="u2")
    kw_memory.add("c", user_id="u1", namespace="other")
    assert kw_memory.delete_all(user_id="u1") == 1
    assert [r.text for r in kw_memory.get_all()] == ["b"]
    kw_memory.reset()
    assert kw_memory.namespaces() == []


def test_the_same_memory_added_again_refreshes_it(kw_memory: Memory, clock: FixedClock):
    first = kw_memory.add("The user likes tea.", user_id="u1")
    assert first.event == "add"
    clock.advance(seconds=3600)
    again = kw_memory.add("The user likes tea.", user_id="u1")
    assert (again.id, again.event, again.access_count) == (first.id, "refresh", 1)
    assert again.last_accessed_at == T0 + 3600 and again.created_at == T0
    assert kw_memory.count() == 1
    assert [h.event for h in kw_memory.history(first.id)] == ["add", "refresh"]
    assert kw_memory.get(first.id).to_dict().get("event") is None  # read back: no event
    # another user, kind or payload is another memory; so is a step-indexed record
    others = [kw_memory.add("The user likes tea.", user_id="u2"),
              kw_memory.add("The user likes tea.", user_id="u1", kind="preference"),
              kw_memory.add("The user likes tea.", user_id="u1", metadata={"src": "chat"}),
              kw_memory.add("The user likes tea.", user_id="u1", step=1),
              kw_memory.add("The user likes tea.", user_id="u1", step=1)]
    assert [r.event for r in others] == ["add"] * 5 and kw_memory.count() == 6
    # in one batch, and on request per call
    batch = kw_memory.add_many(["Bought milk.", "Bought milk.", "The user likes tea."])
    assert [r.event for r in batch] == ["add", "refresh", "add"] and batch[0].id == batch[1].id
    kept = kw_memory.add("Bought milk.", duplicates="keep")
    assert kept.event == "add" and kept.id != batch[0].id
    with pytest.raises(InvalidInput, match="duplicates"):
        kw_memory.add("x", duplicates="merge")
    changes = kw_memory.add([{"role": "user", "content": "Bought milk."}] * 2)
    assert [c.event for c in changes] == ["add", "noop"]


def test_duplicates_keep_in_the_config(db_path: Path, clock: FixedClock):
    from memstream import Config

    with Memory(db_path, embedder="none", clock=clock, llm=None,
                config=Config(duplicates="keep")) as mem:
        a, b = mem.add("same"), mem.add("same")
        assert a.id != b.id and mem.count() == 2
    with pytest.raises(InvalidInput, match="duplicates"):
        Config(duplicates="never").resolve()


def test_add_many_is_all_or_nothing(kw_memory: Memory):
    with pytest.raises(InvalidInput, match="item 1"):
        kw_memory.add_many(["fine", {"content": "bad", "importance": 7}])
    assert kw_memory.count() == 0
    recs = kw_memory.add_many(["one", {"content": "two", "kind": "fact", "user_id": "u"}])
    assert [r.kind for r in recs] == ["observation", "fact"]


def test_context_fits_the_budget(kw_memory: Memory):
    for i in range(30):
        kw_memory.add(f"fact number {i} about the moon landing mission and its crew")
    ctx = kw_memory.context("moon landing crew", budget=60)
    assert 0 < ctx.tokens <= 60
    assert ctx.text.count("\n") == len(ctx.hits) - 1
    from memstream.core.tokens import cl100k

    assert cl100k().count(ctx.text) == ctx.tokens


def test_config_from_environment(monkeypatch: pytest.MonkeyPatch, db_path: Path):
    monkeypatch.setenv("MEMSTREAM_NAMESPACE", "envspace")
    monkeypatch.setenv("MEMSTREAM_DECAY", "0.5")
    with Memory(db_path, embedder="none") as mem:
        assert mem.add("x").namespace == "envspace"
        assert mem.config.decay == 0.5
        saved = json.loads(mem.store.kv.get_meta("config") or "{}")
        assert saved["decay"] == 0.5 and saved["namespace"] == "envspace"
        assert "embed_key" not in saved  # secrets are never written beside the data
    monkeypatch.setenv("MEMSTREAM_DECAY", "fast")
    with pytest.raises(InvalidInput, match="MEMSTREAM_DECAY"):
        Memory(db_path, embedder="none")


def test_unknown_embedder_is_invalid_and_broken_one_falls_back(db_path: Path):
    with pytest.raises(InvalidInput, match="unknown embedder"):
        Memory(db_path, embedder="word2vec")
    with pytest.warns(KeywordOnlyWarning):
        mem = Memory(db_path, embedder="no_such_module:Thing")
    with mem:
        assert mem.embedder is None
        mem.add("keyword search still works")
        assert len(mem.search("keyword")) == 1


def test_async_memory_shares_the_core(db_path: Path):
    async def main() -> list[str]:
        async with AsyncMemory(db_path, embedder="none") as mem:
            await mem.add("async apples")
            await asyncio.gather(*(mem.add(f"async pears {i}") for i in range(5)))
            hits = await mem.search("apples")
            return [h.record.text for h in hits]

    assert asyncio.run(main()) == ["async apples"]


def test_embedder_change_is_refused(db_path: Path, e5):
    with Memory(db_path, embedder=e5) as mem:
        mem.add("hello")
        mem.flush()

    class Other:
        name, dim = "other-model", 3

        def embed_documents(self, texts):
            import numpy as np

            return np.ones((len(texts), 3), dtype=np.float32)

        def embed_query(self, text):
            import numpy as np

            return np.ones(3, dtype=np.float32)

    with pytest.raises(Conflict, match="reindex"):
        Memory(db_path, embedder=Other())


def test_ids_sort_in_creation_order_and_carry_their_time():
    from memstream.core.ids import id_time, new_id, new_ids

    batch = new_ids(1000, 1_700_000_000.5)
    more = [*new_ids(3, 1700000000.5), new_id(1700000000.5)]
    assert len(set(batch + more)) == 1004
    assert batch + more == sorted(batch + more)
    assert all(len(i) == 26 and id_time(i) == 1_700_000_000.5 for i in batch + more)
    assert new_id(1.0) < new_id(2.0) and id_time(new_id(0.0)) == 0.0
    # the same time again after other times (records imported with explicit times): still in
    # the order they were made (before, the first id of each return to a time was random)
    times = [1_600_000_000.0 + n for n in range(20)]
    first = [new_id(t) for t in times]
    again = [new_id(t) for t in times]
    assert all(a < b for a, b in zip(first, again, strict=True))


def test_a_run_of_ids_is_encoded_as_each_one_alone():
    """Large batches are encoded with numpy: the same text as one id at a time, also when
    the counter carries across its halves or wraps around."""
    from memstream.core.ids import _encode, _encode_run

    mask = (1 << 80) - 1
    for first in (0, (1 << 40) - 3, (1 << 80) - 2, 0x1234_5678_9ABC_DEF0_1234):
        ms = 1_700_000_000_123
        assert _encode_run(ms, first, 50) == [_encode((ms << 80) | ((first + n) & mask))
                                              for n in range(50)]


class _OnBackground:
    """The real model, calling ``hook`` each time it embeds the background sentences."""

    def __init__(self, e5, hook) -> None:
        self.e5, self.hook = e5, hook
        self.dim, self.name = e5.dim, e5.name

    def embed_documents(self, texts):
        from memstream.retrieval.relevance import BACKGROUND

        if list(texts)[:3] == list(BACKGROUND)[:3]:
            self.hook()
        return self.e5.embed_documents(texts)

    def embed_query(self, text):
        return self.e5.embed_query(text)


def test_the_first_search_embeds_the_background_without_holding_adds(tmp_path: Path, e5):
    """The background sentences are embedded on the first search outside the engine's lock:
    an add from another thread goes through while that embedding is still running."""

    started, release = threading.Event(), threading.Event()

    def gate() -> None:  # its first embedding of the background waits at a gate
        started.set()
        assert release.wait(30)

    with Memory(tmp_path / "gate.db", embedder=_OnBackground(e5, gate), llm=None,
                config=Config(embed_mode="sync")) as mem:
        mem.add("a first memory")
        searching = threading.Thread(target=lambda: mem.search("first"))
        searching.start()
        assert started.wait(30)
        added = []
        adder = threading.Thread(target=lambda: added.append(mem.add("added meanwhile")))
        adder.start()
        adder.join(10)
        assert added, "an add waited for the first search's background embedding"
        release.set()
        searching.join(30)


def test_many_first_searches_embed_the_background_once(tmp_path: Path, e5):
    """Twenty searches arriving together on a fresh memory embed the background sentences one
    time, not twenty (at 20 clients that was searches of over a minute, the load bench's
    time-outs)."""

    calls, gate = [], threading.Event()

    def count() -> None:
        calls.append(1)
        assert gate.wait(30)  # every search is waiting by now

    with Memory(tmp_path / "cold.db", embedder=_OnBackground(e5, count), llm=None,
                config=Config(embed_mode="sync")) as mem:
        mem.add("a first memory")
        threads = [threading.Thread(target=lambda: mem.search("first")) for _ in range(20)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # let them all reach the background
        gate.set()
        for t in threads:
            t.join(60)
        assert len(calls) == 1
