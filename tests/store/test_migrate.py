"""``memstream migrate``: a whole memory from SQLite to PostgreSQL and back, verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from memstream import FixedClock, Memory
from memstream.cli import cli
from memstream.engine.migrate import copy_store, verify
from memstream.filters import Selection
from memstream.server.auth import create_key
from memstream.store import open_store

T0 = 1_700_000_000.0


def seed(path: Path) -> dict[str, str]:
    clock = FixedClock(T0)
    with Memory(path, embedder="none", clock=clock) as mem:
        ids = {}
        for i in range(30):
            clock.advance(seconds=60)
            ids[f"n{i}"] = mem.add(f"note {i} about the harbour", namespace="a",
                                   embedding=np.eye(4, dtype=np.float32)[i % 4],
                                   data={"i": i}, provenance=[f"src{i}"] if i % 5 == 0 else None
                                   ).id
        mem.add("Bob lives in Porto", namespace="b", kind="fact")
        new = mem.add("Bob lives in Lisbon", namespace="b", kind="fact")
        ids["old"] = mem.get_all(namespace="b")[0].id
        mem.invalidate(ids["old"], superseded_by=new.id, namespace="b")
        mem.update(ids["n3"], namespace="a", importance=0.9)
        mem.delete(ids["n4"], namespace="a")
        create_key(mem.store, name="ci", namespaces=["a"], role="read", now=T0)
    return ids


def test_sqlite_to_postgres_and_back(tmp_path: Path, pg_url: str) -> None:
    src = tmp_path / "src.db"
    ids = seed(src)
    runner = CliRunner()
    result = runner.invoke(cli, ["--json", "migrate", str(src), pg_url])
    assert result.exit_code == 0, result.output + str(result.exception)
    report = json.loads(result.stdout)
    assert report["ok"] and report["namespaces"]["a"]["records"] == [29, 29]
    assert report["namespaces"]["a"]["embedded"] == [29, 29]
    assert report["namespaces"]["b"]["valid"] == [1, 1]
    assert report["keys"] == [1, 1] and report["sampled"] == 31

    with Memory(pg_url, embedder="none") as mem:  # the copy works as a memory
        assert mem.get(ids["n3"], namespace="a").importance == 0.9
        assert [h.event for h in mem.history(ids["n4"], namespace="a")] == ["add", "delete"]
        assert mem.get(ids["old"], namespace="b").superseded_by is not None
        near = mem.store.indexes.vector_search(Selection("a"), np.eye(4, dtype=np.float32)[2], 7)
        got = mem.store.records.get("a", [rid for rid, _ in near])
        assert len(got) == 7 and {r.data["i"] % 4 for r in got} == {2}  # vectors came along
    back = tmp_path / "back.db"
    result = runner.invoke(cli, ["migrate", pg_url, str(back)])
    assert result.exit_code == 0, result.output
    assert "verified: the copy matches" in result.output
    a, b = open_store(src), open_store(back)
    try:
        assert verify(a, b).ok
        assert [e for _, e in a.transfer.history_page(0, 1000)] == \
            [e for _, e in b.transfer.history_page(0, 1000)]
    finally:
        a.close()
        b.close()


def test_target_must_be_empty_and_mismatch_fails(tmp_path: Path, pg_url: str) -> None:
    src = tmp_path / "src.db"
    seed(src)
    runner = CliRunner()
    assert runner.invoke(cli, ["migrate", str(src), pg_url]).exit_code == 0
    again = runner.invoke(cli, ["migrate", str(src), pg_url])
    assert again.exit_code != 0 and "already holds records" in again.output
    with psycopg.connect(pg_url, autocommit=True) as conn:  # damage the copy
        conn.execute("DELETE FROM records WHERE namespace = 'b'")
    a, b = open_store(src), open_store(pg_url)
    try:
        report = verify(a, b)
        assert not report.ok and report.namespaces["b"]["records"] == (2, 0)
    finally:
        a.close()
        b.close()


def test_copy_reports_progress(tmp_path: Path) -> None:
    src, dst = tmp_path / "s.db", tmp_path / "d.db"
    with Memory(src, embedder="none") as mem:
        mem.add_many([f"r{i}" for i in range(25)])
    seen: list[tuple[str, int, int | None]] = []
    a, b = open_store(src), open_store(dst)
    try:
        copy_store(a, b, batch=10, progress=lambda stage, done, total: seen.append(
            (stage, done, total)))
        assert [(d, t) for stage, d, t in seen if stage == "records"] == [
            (10, 25), (20, 25), (25, 25)]
        assert [d for stage, d, _ in seen if stage == "history"][-1] == 25
        assert verify(a, b).ok
    finally:
        a.close()
        b.close()


def seed_everything(path: Path) -> dict[str, Any]:
    """A store that has every table in use: records and history, a key, the event log, a
    webhook with a cursor and a dead letter, and LangGraph checkpoints with a pending write."""
    from langgraph.checkpoint.base import empty_checkpoint

    from memstream.events import Webhook
    from memstream.integrations.langgraph import MemstreamSaver

    ids = seed(path)
    with Memory(path, embedder="none") as mem:
        store = mem.store
        store.events.put_webhook(Webhook(id="wh1", namespace="a", url="http://127.0.0.1:9/hook",
                                         secret="s3cret", types=("add",), created_at=T0, cursor=0))
        assert len(store.events.claim_webhooks("me", lease=60, now=T0)) == 1
        assert store.events.webhook_progress("wh1", "me", cursor=5, delivered=4, dead=[5])
        with MemstreamSaver(mem) as saver:
            config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
            saved = saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
            saver.put_writes(saved, [("messages", "hello")], task_id="task-1")
        events = [e.seq for e in store.events.events_after(None, 0, limit=1000)]
    return {"ids": ids, "events": events}


def test_every_table_is_carried_and_compared(tmp_path: Path, pg_url: str) -> None:
    from memstream.integrations.langgraph import MemstreamSaver

    src = tmp_path / "src.db"
    seeded = seed_everything(src)
    result = CliRunner().invoke(cli, ["--json", "migrate", str(src), pg_url])
    assert result.exit_code == 0, result.output + str(result.exception)
    report = json.loads(result.stdout)
    assert report["ok"]
    tables = report["tables"]
    for table in ("events", "webhooks", "webhook_dead", "lg_checkpoints", "lg_writes"):
        a, b = tables[table]
        assert a == b > 0, (table, tables)
    with Memory(pg_url, embedder="none") as mem:
        store = mem.store
        assert [e.seq for e in store.events.events_after(None, 0, limit=1000)] == seeded["events"]
        (hook,) = store.events.webhooks("a")
        assert (hook.secret, hook.cursor, hook.delivered, hook.dead) == ("s3cret", 5, 4, 1)
        assert [seq for seq, _, _ in store.events.dead_letters("wh1")] == [5]
        mem.add("after the move", namespace="a")  # numbered after the copied events
        assert store.events.last_event_seq() > max(seeded["events"])
        with MemstreamSaver(mem) as saver:
            got = saver.get_tuple({"configurable": {"thread_id": "t1"}})
            assert got is not None and got.pending_writes == [("task-1", "messages", "hello")]


def test_a_damaged_carried_table_fails_verification(tmp_path: Path, pg_url: str) -> None:
    src = tmp_path / "src.db"
    seed_everything(src)
    assert CliRunner().invoke(cli, ["migrate", str(src), pg_url]).exit_code == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM lg_writes")
        conn.execute("DELETE FROM webhook_dead")
    a, b = open_store(src), open_store(pg_url)
    try:
        report = verify(a, b)
        assert not report.ok
        assert report.tables["lg_writes"][1] == 0 and report.tables["webhook_dead"][1] == 0
    finally:
        a.close()
        b.close()


def test_a_killed_migrate_is_marked_and_a_rerun_starts_over(tmp_path: Path,
                                                            pg_url: str) -> None:
    """SIGKILL midway: the target is marked unfinished, no memory opens it, and the same
    command run again wipes it and copies everything, keys included."""
    import contextlib
    import os
    import signal
    import subprocess
    import sys
    import time

    from memstream.errors import Conflict

    src = tmp_path / "big.db"
    with Memory(src, embedder="none") as mem:
        mem.add_many([{"content": f"note {i}", "embedding": np.eye(4, dtype=np.float32)[i % 4]}
                      for i in range(4000)], namespace="a")
        create_key(mem.store, name="ci", namespaces=["a"], role="read", now=T0)
    exe = Path(sys.executable).parent / "memstream"
    proc = subprocess.Popen([str(exe), "migrate", str(src), pg_url, "--batch", "20"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    copied = 0
    deadline = time.monotonic() + 60
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while time.monotonic() < deadline and copied < 200:
            with contextlib.suppress(psycopg.errors.UndefinedTable):
                copied = conn.execute("SELECT count(*) FROM records").fetchone()[0]
            time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        copied = conn.execute("SELECT count(*) FROM records").fetchone()[0]
        mark = conn.execute("SELECT value FROM meta WHERE key = 'migrating_from'").fetchone()
    assert 0 < copied < 4000, copied  # killed midway
    assert mark and "big.db" in mark[0]
    with pytest.raises(Conflict, match="did not finish"):
        Memory(pg_url, embedder="none")
    again = CliRunner().invoke(cli, ["--json", "migrate", str(src), pg_url])
    assert again.exit_code == 0, again.output + str(again.exception)
    report = json.loads(again.stdout)
    assert report["ok"] and report["namespaces"]["a"]["records"] == [4000, 4000]
    assert report["keys"] == [1, 1]
    with Memory(pg_url, embedder="none") as mem:  # finished: it opens
        assert mem.count(namespace="a") == 4000


def test_a_nul_character_is_refused_before_anything_is_copied(tmp_path: Path,
                                                              pg_url: str) -> None:
    src = tmp_path / "nul.db"
    with Memory(src, embedder="none") as mem:
        mem.add_many([f"fine {i}" for i in range(50)], namespace="a")
        bad = mem.add("a stray \x00 byte", namespace="a")
    result = CliRunner().invoke(cli, ["migrate", str(src), pg_url])
    assert result.exit_code == 2, result.output
    assert "NUL" in result.output and bad.id in result.output
    assert "Nothing was copied" in result.output
    with psycopg.connect(pg_url, autocommit=True) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        if "records" in tables:
            assert conn.execute("SELECT count(*) FROM records").fetchone()[0] == 0
            assert conn.execute("SELECT count(*) FROM meta WHERE key = 'migrating_from' "
                                "AND value <> ''").fetchone()[0] == 0
    other = tmp_path / "copy.db"  # SQLite holds it: that migrate goes through
    assert CliRunner().invoke(cli, ["migrate", str(src), str(other)]).exit_code == 0


def test_every_table_of_a_store_is_carried_or_rebuilt(tmp_path: Path) -> None:
    """A table a later change adds must be carried by migrate or named as rebuilt."""
    import sqlite3

    from memstream.engine.migrate import CHECKPOINT_TABLES, DERIVED, GRAPH_TABLES, OUTBOX_TABLES

    src = tmp_path / "all.db"
    seed_everything(src)
    with sqlite3.connect(src) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    carried = {"records", "history", "api_keys", "meta", *OUTBOX_TABLES, *CHECKPOINT_TABLES,
               *GRAPH_TABLES}
    rebuilt = {t for t in tables if t.startswith(DERIVED)} | {"sqlite_sequence"}
    assert tables - carried - rebuilt == set()


def test_an_unfinished_target_is_refused_by_every_way_of_opening_it(tmp_path: Path) -> None:
    """The target of a migrate that did not finish holds part of its source: a migrate from it,
    the LangGraph checkpointer and `memstream check` refuse it and name the unfinished copy
    (as a memory already did)."""
    import sqlite3

    from memstream.engine.migrate import MARK
    from memstream.errors import Conflict
    from memstream.integrations.langgraph import MemstreamSaver

    src, partial, third = tmp_path / "src.db", tmp_path / "partial.db", tmp_path / "third.db"
    with Memory(src, embedder="none") as mem:
        mem.add_many([f"note {i}" for i in range(300)], namespace="a")
    assert CliRunner().invoke(cli, ["migrate", str(src), str(partial)]).exit_code == 0
    with sqlite3.connect(partial) as db:  # as a migrate killed midway leaves it
        db.execute("UPDATE meta SET value = ? WHERE key = ?",
                   (json.dumps({"source": str(src), "started": 0}), MARK))
    with pytest.raises(Conflict, match="did not finish"):
        Memory(partial, embedder="none")
    moved = CliRunner().invoke(cli, ["migrate", str(partial), str(third)])
    assert moved.exit_code == 4, moved.output
    assert "this source is the target of a migrate from" in moved.output
    assert not third.exists() or Memory(third, embedder="none").namespaces() == []
    with pytest.raises(Conflict, match="did not finish"):
        MemstreamSaver(str(partial))
    checked = CliRunner().invoke(cli, ["--db", str(partial), "check"])
    assert checked.exit_code == 4 and "did not finish" in checked.output
    with sqlite3.connect(partial) as db:  # check changed nothing
        assert db.execute("SELECT value FROM meta WHERE key = ?", (MARK,)).fetchone()[0]


def test_entities_keep_their_names_and_kinds_on_every_path(tmp_path: Path, pg_url: str
                                                           ) -> None:
    """Export then import, and migrate SQLite -> SQLite and SQLite -> PostgreSQL, list the same
    entities, each with its name as written (accents kept) and its kind."""
    from memstream.engine.transfer import export_jsonl, import_jsonl

    texts = ["Lunch with Andrés Pérez at Café Kranich.", "Called Dr. Weber about the results.",
             "Dad's birthday: a gift from Oskar Lindqvist.", "Visited the Universidad de Sevilla.",
             "Andrés Pérez moved to Valencia."]
    src = tmp_path / "src.db"

    def listed(mem: Memory) -> list[tuple[str, str, int]]:
        return sorted((e.name, e.kind, e.mentions) for e in mem.entities(user_id="u"))

    with Memory(src, embedder="none") as mem:
        for n, text in enumerate(texts):
            mem.add(text, user_id="u", at=T0 + n * 86400)
        want = listed(mem)
        dump = tmp_path / "all.jsonl"
        with dump.open("w", encoding="utf-8") as out:
            export_jsonl(mem, out)
    assert ("Andrés Pérez", "person", 2) in want and ("Weber", "person", 1) in want
    assert ("Valencia", "place", 1) in want and ("Café Kranich", "place", 1) in want
    with Memory(tmp_path / "imported.db", embedder="none") as mem:
        with dump.open(encoding="utf-8") as raw:
            import_jsonl(mem, raw)
        assert listed(mem) == want
    for target in (str(tmp_path / "copy.db"), pg_url):
        assert CliRunner().invoke(cli, ["migrate", str(src), target]).exit_code == 0
        with Memory(target, embedder="none") as mem:
            assert listed(mem) == want, target


def test_the_kinds_the_embedder_read_are_carried_to_the_target(tmp_path: Path, pg_url: str,
                                                               e5: object) -> None:
    """A kind the source's worker read from the embedder (Netflix, a product: its words say
    only "name") is the target's too, opened without an embedder, on SQLite and PostgreSQL."""
    src = tmp_path / "src.db"
    with Memory(src, embedder=e5, llm=None) as mem:
        mem.add("Netflix subscription renews on the 3rd; consider cancelling.", user_id="u")
        mem.add("Lunch with Marta Silva at Café Luso.", user_id="u")
        mem.flush()
        want = sorted((e.name, e.kind) for e in mem.entities(user_id="u"))
    assert ("Netflix", "product") in want
    for target in (str(tmp_path / "copy.db"), pg_url):
        assert CliRunner().invoke(cli, ["migrate", str(src), target]).exit_code == 0
        with Memory(target, embedder="none", llm=None) as mem:
            assert sorted((e.name, e.kind) for e in mem.entities(user_id="u")) == want, target


def test_the_graph_goes_over_as_the_source_holds_it_and_is_verified(tmp_path: Path,
                                                                    pg_url: str) -> None:
    """A source whose names an older release extracted (here: a kind and a name as written
    that today's extractor would not give, and an entity it would not find) keeps them on the
    target, SQLite and PostgreSQL; a target whose graph lost mentions fails the check."""
    import sqlite3

    src = tmp_path / "src.db"
    with Memory(src, embedder="none") as mem:
        rid = mem.add("Lunch with Marta Silva at Café Luso.", user_id="u", at=T0).id
        mem.add("Marta Silva moved to Porto.", user_id="u", at=T0 + 60)
    with sqlite3.connect(src) as db:  # as an older extractor left them
        db.execute("UPDATE entities SET kind = 'organization', name = 'MARTA SILVA' "
                   "WHERE key = 'marta silva'")
        db.execute("INSERT INTO entities (namespace, owner, key, name, kind, mentions, strong, "
                   "first_seen, last_seen) VALUES ('default', 'u', 'lunch with', 'Lunch With', "
                   "'name', 1, 1, ?, ?)", (T0, T0))
        db.execute("INSERT INTO entity_mentions (entity_id, record_id, namespace, at, strong) "
                   "SELECT id, ?, 'default', ?, 1 FROM entities WHERE key = 'lunch with'",
                   (rid, T0))
        lost = db.execute("SELECT count(*) FROM entity_mentions WHERE record_id = ?",
                          (rid,)).fetchone()[0]

    def graph(mem: Memory) -> list[tuple[Any, ...]]:
        return sorted((e.name, e.kind, e.mentions, e.first_seen, e.last_seen,
                       tuple(sorted(mem.store.graph.mentions([e.id])[e.id])))
                      for e in mem.entities(user_id="u"))

    with Memory(src, embedder="none") as mem:
        want = graph(mem)
        sizes = mem.store.graph.size()
    assert ("MARTA SILVA", "organization", 2) in [w[:3] for w in want]
    assert ("Lunch With", "name", 1) in [w[:3] for w in want]
    for target in (str(tmp_path / "copy.db"), pg_url):
        moved = CliRunner().invoke(cli, ["--json", "migrate", str(src), target])
        assert moved.exit_code == 0, moved.output
        tables = json.loads(moved.stdout)["tables"]
        assert (tables["entities"], tables["entity_mentions"]) == \
            ([sizes[0]] * 2, [sizes[1]] * 2)
        with Memory(target, embedder="none") as mem:
            assert graph(mem) == want, target
        if target.endswith(".db"):  # the copy loses the first note's mentions
            with sqlite3.connect(target) as db:
                db.execute("DELETE FROM entity_mentions WHERE record_id = ?", (rid,))
        else:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("DELETE FROM entity_mentions WHERE record_id = %s", (rid,))
        a, b = open_store(str(src)), open_store(target)
        try:
            report = verify(a, b, sample=10)
        finally:
            a.close()
            b.close()
        assert not report.ok
        assert report.tables["entity_mentions"] == (sizes[1], sizes[1] - lost)
        assert f"default/{rid}: entities differ" in report.sample_mismatches
