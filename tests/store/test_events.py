"""The event outbox's part of the storage conformance: the same tests on SQLite and on a real
PostgreSQL with pgvector."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstream import Conflict
from memstream.events import Webhook
from memstream.store import Patch
from memstream.store.postgres import PostgresStore
from memstream.store.sqlite import SQLiteStore

from .conformance import T0, rec


def hook(hook_id: str, ns: str = "ns", cursor: int = 0, types: tuple[str, ...] = ()) -> Webhook:
    return Webhook(id=hook_id, namespace=ns, url="http://127.0.0.1:9/x", secret="s" * 20,
                   types=types, created_at=time.time(), cursor=cursor)


class EventConformance:
    @pytest.fixture
    def store(self) -> Any:
        raise NotImplementedError

    def test_every_change_writes_its_event(self, store: Any) -> None:
        a, b = rec("alpha", user_id="u1"), rec("beta", kind="fact", agent_id="ag")
        store.records.insert([a, b], model="m")
        store.records.update("ns", a.id, Patch(text="alpha two"), at=T0 + 1)
        store.records.update("ns", b.id, Patch(invalidated_at=T0 + 2, superseded_by=a.id),
                             at=T0 + 2)
        store.records.delete("ns", [a.id], at=T0 + 3)
        store.records.erase("ns", [b.id], at=T0 + 4)
        events = store.events.events_after(["ns"], 0)
        assert [(e.type, e.record_ids) for e in events] == [
            ("added", (a.id,)), ("added", (b.id,)), ("updated", (a.id,)),
            ("superseded", (b.id,)), ("deleted", (a.id,)), ("deleted", (b.id,))]
        assert [e.seq for e in events] == sorted({e.seq for e in events})
        assert events[0].user_id == "u1" and events[1].agent_id is None  # b was erased
        assert events[1].kind == "fact"
        assert events[2].data == {"op": "update", "fields": ["text"]}
        assert events[3].data["superseded_by"] == a.id
        assert events[5].data == {"op": "erase", "erased": True}
        assert all("text" not in e.data for e in events)  # text only when asked

    def test_erase_takes_the_text_out_of_kept_events(self, store: Any, tmp_path: Path
                                                     ) -> None:
        """With events_text on, a record's events held its text; erase leaves it nowhere in
        the log (so nowhere in a pending webhook batch or a dead letter, read from it)."""
        store.events.configure_events(enabled=True, text=True)
        secret, kept = rec("the vault code is 7731-0042"), rec("the vault code is elsewhere")
        store.records.insert([secret, kept], model="m")
        store.records.update("ns", secret.id, Patch(text="the vault code is 7731-0042 still"),
                             at=T0 + 1)
        store.events.put_webhook(hook("wh_1", cursor=0))  # a webhook that has not received them
        store.records.erase("ns", [secret.id], at=T0 + 2)
        events = store.events.events_after(["ns"], 0)
        assert not any("7731" in str(e.data) for e in events)
        assert [e.data.get("erased") for e in events if e.record_ids == (secret.id,)] == \
            [True, True, True]
        assert any("elsewhere" in str(e.data) for e in events)  # other records keep theirs
        if isinstance(store, SQLiteStore):  # nor in the file's bytes
            store.close()
            assert b"7731-0042" not in Path(store.path).read_bytes()

    def test_a_failed_change_writes_no_event(self, store: Any) -> None:
        a = rec("alpha")
        store.records.insert([a], model="m")
        with pytest.raises(Conflict):
            store.records.insert([rec("other"), rec("again", id=a.id)], model="m")
        assert [e.type for e in store.events.events_after(None, 0)] == ["added"]

    def test_refresh_text_touch_and_off(self, store: Any) -> None:
        store.events.configure_events(enabled=True, text=True, touch=True)
        a = rec("alpha")
        store.records.insert([a], model="m")
        store.records.insert([rec("alpha", at=T0 + 5)], model="m", refresh=True)
        store.records.touch("ns", [a.id], at=T0 + 6)
        events = store.events.events_after(["ns"], 0)
        assert [e.type for e in events] == ["added", "refreshed", "touched"]
        assert events[0].data["text"] == "alpha"
        store.events.configure_events(enabled=False)
        store.records.insert([rec("quiet")], model="m")
        assert len(store.events.events_after(["ns"], 0)) == 3

    def test_reading_by_namespace_type_and_range(self, store: Any) -> None:
        store.records.insert([rec("one"), rec("two", ns="other"), rec("three")], model="m")
        store.events.append_events("ns", "tier_moved", ["x", "y"], agent_id="ag",
                                   data={"from": "stm", "to": "im"})
        mine = store.events.events_after(["ns"], 0)
        assert [e.type for e in mine] == ["added", "added", "tier_moved"]
        assert mine[2].record_ids == ("x", "y") and mine[2].agent_id == "ag"
        assert store.events.events_after(["other"], 0)[0].namespace == "other"
        assert store.events.events_after([], 0) == []
        assert len(store.events.events_after(None, 0)) == 4
        assert [e.type for e in store.events.events_after(["ns"], 0, types=["tier_moved"])] == \
            ["tier_moved"]
        assert store.events.events_after(["ns"], mine[0].seq, limit=1) == [mine[1]]
        assert store.events.events_after(["ns"], 0, upto=mine[0].seq) == [mine[0]]
        assert store.events.last_event_seq() == mine[2].seq

    def test_prune_keeps_what_a_webhook_has_not_delivered(self, store: Any) -> None:
        store.records.insert([rec(f"r{i}") for i in range(5)], model="m")
        seqs = [e.seq for e in store.events.events_after(["ns"], 0)]
        store.events.put_webhook(hook("w1", cursor=seqs[1]))
        assert store.events.prune_events(before=time.time() + 10) == 2
        assert [e.seq for e in store.events.events_after(["ns"], 0)] == seqs[2:]
        store.events.remove_webhook("ns", "w1")
        assert store.events.prune_events(before=time.time() + 10, limit=2) == 2
        assert store.events.prune_events(before=time.time() - 3600) == 0  # too recent
        assert [e.seq for e in store.events.events_after(["ns"], 0)] == seqs[4:]

    def test_webhooks_claims_progress_and_dead_letters(self, store: Any) -> None:
        store.events.put_webhook(hook("w1"))
        store.events.put_webhook(hook("w2", ns="other"))
        assert [h.id for h in store.events.webhooks("ns")] == ["w1"]
        assert not store.events.remove_webhook("other", "w1")  # another namespace's id: untouched
        now = time.time()
        assert {h.id for h in store.events.claim_webhooks("a", lease=30, now=now)} == {"w1", "w2"}
        assert store.events.claim_webhooks("b", lease=30, now=now) == []  # held by a
        assert not store.events.webhook_progress("w1", "b", cursor=9)  # not b's to move
        assert store.events.webhook_progress("w1", "a", cursor=3, delivered=3)
        assert store.events.webhook_progress("w1", "a", cursor=5, attempts=4, error="HTTP 500",
                                             dead=[4, 5])
        w1 = store.events.webhooks("ns")[0]
        assert (w1.cursor, w1.delivered, w1.attempts, w1.dead) == (5, 3, 4, 2)
        assert [d[0] for d in store.events.dead_letters("w1")] == [4, 5]
        assert store.events.redeliver_dead("other", "w1") == 0  # the namespace must match
        assert store.events.redeliver_dead("ns", "w1") == 2
        assert (store.events.webhooks("ns")[0].cursor, store.events.dead_letters("w1")) == (3, [])
        assert [h.id for h in store.events.claim_webhooks("b", lease=30, now=now + 31)] == \
            ["w1", "w2"]  # a's lease ran out
        assert store.events.release_webhooks(lambda owner: owner == "b") == 2
        assert [h.id for h in store.events.claim_webhooks("c", lease=30, now=now + 32)] == \
            ["w1", "w2"]

    def test_a_reader_following_concurrent_writers_misses_nothing(self, store: Any) -> None:
        """Numbers follow commit order: a reader that resumes after the last number it saw
        never skips an event that commits later with a smaller one."""
        writers, per = 4, 40
        seen: list[int] = []
        done = threading.Event()

        def write(w: int) -> None:
            for i in range(per):
                store.records.insert([rec(f"w{w} r{i}", at=T0 + i)], model="m")

        def read() -> None:
            cursor = 0
            while True:
                finished = done.is_set()
                batch = store.events.events_after(["ns"], cursor, limit=50)
                seen.extend(e.seq for e in batch)
                cursor = batch[-1].seq if batch else cursor
                if finished and not batch:
                    return

        reader = threading.Thread(target=read)
        reader.start()
        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done.set()
        reader.join()
        assert len(seen) == len(set(seen)) == writers * per


class TestSQLiteEvents(EventConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStore]:
        s = SQLiteStore(tmp_path / "events.db")
        yield s
        s.close()


class TestPostgresEvents(EventConformance):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PostgresStore]:
        s = PostgresStore(pg_url)
        yield s
        s.close()
