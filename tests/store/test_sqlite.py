from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memstream import BackendUnavailable, CorruptStore
from memstream.filters import Selection
from memstream.retrieval.keywords import SELECTION_STATS, cap, keyword_search
from memstream.store import open_store
from memstream.store.sqlite import SQLiteStore
from memstream.store.sqlite.schema import SCHEMA_VERSION

from .conformance import StoreConformance, rec, unit


def _kws(store, sel, terms, limit):
    """``retrieval.keywords.keyword_search`` over a store's indexes part."""
    return keyword_search(store.indexes, sel, terms, limit)


class TestSQLiteConformance(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path: Path):
        s = SQLiteStore(tmp_path / "conf.db")
        yield s
        s.close()


def test_file_is_wal_with_schema_version(tmp_path: Path):
    path = tmp_path / "a.db"
    SQLiteStore(path).close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    version = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    assert version == str(SCHEMA_VERSION)


def test_old_schema_is_migrated_and_newer_refused(tmp_path: Path):
    from memstream.store.sqlite.schema import MIGRATIONS
    from memstream.store.sqlite.store import _split_sql

    path = tmp_path / "v1.db"
    db = sqlite3.connect(path)
    for statement in _split_sql(MIGRATIONS[1]):
        db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute("INSERT INTO records (id, namespace, text, kind, importance, created_at, "
               "last_accessed_at) VALUES ('01OLD', 'ns', 'kept across versions', 'fact', 0.5, "
               "1, 1)")
    db.commit()
    db.close()
    store = SQLiteStore(path)
    assert store.records.get("ns", ["01OLD"])[0].text == "kept across versions"
    assert store.kv.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert store.queues.pending_ratings(5) == []
    store.kv.set_meta("schema_version", str(SCHEMA_VERSION + 1))
    store.close()
    with pytest.raises(BackendUnavailable, match="upgrade memstream"):
        SQLiteStore(path)


def test_two_connections_see_each_others_writes(tmp_path: Path):
    path = tmp_path / "shared.db"
    one, two = SQLiteStore(path), SQLiteStore(path)
    a = rec("first", embedding=unit(1, 0))
    one.records.insert([a], model="m")
    assert [i for i, _ in two.indexes.vector_search(Selection("ns"), unit(1, 0), 5)] == [a.id]
    b = rec("second", embedding=unit(0.9, 0.1))
    two.records.insert([b], model="m")
    two.records.delete("ns", [a.id], at=0)
    assert [i for i, _ in one.indexes.vector_search(Selection("ns"), unit(1, 0), 5)] == [b.id]
    one.close()
    two.close()


def test_a_second_handle_in_the_process_keeps_the_first_ones_locks(tmp_path: Path):
    """Opening the file again in the same process used to read its header with a descriptor of
    its own; closing it dropped every POSIX lock the process held on the file, so another
    process that then closed its connection believed itself the last one and deleted the
    write-ahead log: it stopped seeing this process's writes, and its own write was lost."""
    import subprocess
    import sys

    path = tmp_path / "shared.db"

    def other(code: str) -> str:
        script = f"import sqlite3\ndb = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        return subprocess.run([sys.executable, "-c", script + code], check=True,
                              capture_output=True, text=True).stdout.strip()

    count = "print(db.execute('SELECT count(*) FROM records').fetchone()[0]); db.close()"
    first = SQLiteStore(path)
    first.records.insert([rec("one")], model="m")
    SQLiteStore(path).close()  # a second handle on the same file in this process
    assert other(count) == "1"
    first.records.insert([rec("two")], model="m")
    assert other(count) == "2"  # was 1: the log this process writes to had been deleted
    other("db.execute(\"UPDATE records SET text = 'theirs: ' || text\"); db.close()")
    first.records.insert([rec("three")], model="m")
    first.close()
    db = sqlite3.connect(path)
    texts = sorted(row[0] for row in db.execute("SELECT text FROM records"))
    db.close()
    assert texts == ["theirs: one", "theirs: two", "three"]  # their write was lost


def test_garbage_file_is_reported_as_corrupt(tmp_path: Path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database" * 500)
    with pytest.raises(CorruptStore, match="is not an SQLite database"):
        SQLiteStore(path)
    assert path.read_bytes() == b"this is not a database" * 500


def test_foreign_sqlite_file_is_refused(tmp_path: Path):
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE people (name TEXT)")
    db.commit()
    db.close()
    with pytest.raises(CorruptStore, match="not a memstream store"):
        SQLiteStore(path)


def test_missing_folder_is_a_clear_error(tmp_path: Path):
    with pytest.raises(BackendUnavailable, match="does not exist"):
        SQLiteStore(tmp_path / "nope" / "x.db")


def test_open_store_urls(tmp_path: Path):
    path = tmp_path / "u.db"
    s = open_store(f"sqlite:///{path}")
    assert isinstance(s, SQLiteStore) and s.path == str(path)
    s.close()
    s = open_store(":memory:")
    assert s.path == ":memory:"
    s.close()


def test_closed_store_refuses_work(tmp_path: Path):
    s = SQLiteStore(tmp_path / "c.db")
    s.close()
    s.close()
    with pytest.raises(BackendUnavailable, match="closed"):
        s.records.get("ns", ["x"])


def test_columns_are_the_first_fields_of_a_record_in_order():
    """Rows become records positionally in both stores: their column lists and the dataclass
    must agree."""
    import dataclasses

    from memstream import Record
    from memstream.store.postgres import schema as _pg_schema
    from memstream.store.sqlite import schema as _sqlite_schema

    names = [f.name for f in dataclasses.fields(Record)]
    for columns in (_sqlite_schema.COLUMNS, _pg_schema.COLUMNS):
        assert tuple(names[: len(columns)]) == columns


def test_the_vector_index_reads_other_namespaces_log_entries_once(tmp_path: Path):
    """Every vector change of every namespace goes through one log. A namespace's index moves
    its position to the log's end at each search, so the entries of a busy other namespace
    (agent states, say) are read past once, not again at every later search; and it still
    sees its own changes made in between."""
    s = SQLiteStore(tmp_path / "v.db")
    try:
        s.records.insert([rec("first", ns="docs", embedding=unit(1, 0, 0))], model="m")
        assert [i for i, _ in s.indexes.vector_search(Selection("docs"), unit(1, 0, 0), 5)]
        s.records.insert([rec(f"state {i}", ns="agents", embedding=unit(0, 1, i))
                          for i in range(50)], model="m")
        late = rec("second", ns="docs", embedding=unit(1, 1, 0))
        s.records.insert([late], model="m")
        s.records.insert([rec("more", ns="agents", embedding=unit(0, 0, 1))], model="m")
        hits = s.indexes.vector_search(Selection("docs"), unit(1, 1, 0), 5)
        assert hits[0][0] == late.id and len(hits) == 2
        with sqlite3.connect(tmp_path / "v.db") as db:
            end = db.execute("SELECT max(seq) FROM vector_log").fetchone()[0]
        assert s.index_part.vectors._vectors["docs"].last_seq == end  # past the agents' 51 entries
    finally:
        s.close()


def test_a_term_common_in_the_whole_index_is_reported_over_the_cap(tmp_path: Path):
    """Counting a term within a selection reads all its entries: a term past the cap in the
    whole index is reported over the cap instead (and left out by the ranking policy)."""
    s = SQLiteStore(tmp_path / "g.db")
    try:
        s.records.insert([rec(f"plum {i}", user_id="u2") for i in range(30)]
                         + [rec("plum pie", user_id="u1"), rec("plum jam", user_id="u1")])
        u1 = Selection("ns", user_id="u1")
        stats = s.indexes.term_stats
        assert stats(u1, ["plum"], selection_up_to=10, cap=lambda n: 5).matches == {"plum": 6}
        assert stats(u1, ["plum"], selection_up_to=10, cap=lambda n: 100).matches == {"plum": 2}
    finally:
        s.close()


def test_a_narrower_scope_keeps_its_own_index(tmp_path: Path):
    """The space's test must not pull SQLite off a user's index onto the stream index (which
    leads with namespace and space): a user's search at 100,000 records took 280 ms so."""
    from memstream.store.sqlite.sql import selection_sql

    store = SQLiteStore(tmp_path / "plan.db")
    for sel, index in ((Selection("ns", user_id="u"), "records_ns_user"),
                       (Selection("ns", agent_id="a", space="agents"), "records_ns_agent_step"),
                       (Selection("ns"), "records_ns_created")):
        where, params = selection_sql(sel)
        with store.read() as db:
            plan = " ".join(str(row) for row in db.execute(
                f"EXPLAIN QUERY PLAN SELECT count(*) FROM records r WHERE {where}", params))
        assert index in plan, (sel, plan)
    store.close()


def test_a_capped_count_is_reused_until_the_file_changes(tmp_path: Path):
    """A filtered search asks the selection's size up to three times (exact vector search,
    keyword statistics, context smoothing): SQLite counts it once, and a write by this or
    another connection is seen at once."""
    path = tmp_path / "counts.db"
    one, two = SQLiteStore(path), SQLiteStore(path)
    one.records.insert([rec(f"note {i}", user_id="u") for i in range(5)], model="m")
    sel = Selection("ns", user_id="u")
    counted: list[str] = []
    # nobody else writes: reads go through the writing connection (its cache is warm)
    one.db.set_trace_callback(lambda sql: counted.append(sql) if "count(*)" in sql else None)
    assert one.records.count(sel, limit=100) == 5
    # more than 3: from the exact count, not counted again
    assert one.records.count(sel, limit=3) == 4
    assert one.records.count(sel, limit=10) == 5
    assert len(counted) == 1
    two.records.insert([rec("from the other process", user_id="u")], model="m")
    assert one.records.count(sel, limit=10) == 6
    one.records.insert([rec("from this one", user_id="u")], model="m")
    assert one.records.count(sel, limit=10) == 7
    assert len(counted) == 3
    # a capped answer serves lower caps only
    one.records.insert([rec("one more", user_id="u")], model="m")
    assert one.records.count(sel, limit=2) == 3
    assert one.records.count(sel, limit=1) == 2
    assert len(counted) == 4
    assert one.records.count(sel, limit=50) == 8
    assert len(counted) == 5
    assert one.records.count(sel) == 8  # an uncapped count is always counted
    one.close()
    two.close()


def test_a_namespace_span_is_renewed_by_any_insert(tmp_path: Path):
    """Keyword reads are bounded by the rowids the namespace spans; a record inserted after a
    search, by this connection or another, is found by the next one."""
    path = tmp_path / "span.db"
    one, two = SQLiteStore(path), SQLiteStore(path)
    one.records.insert([rec(f"note {i}") for i in range(5)] + [rec("other", ns="b")], model="m")
    assert _kws(one, Selection("ns"), ["walrus"], 5) == []
    late = rec("a walrus on the beach")
    two.records.insert([late], model="m")
    assert [i for i, _ in _kws(one, Selection("ns"), ["walrus"], 5)] == [late.id]
    mine = rec("another walrus")
    one.records.insert([mine], model="m")
    assert {i for i, _ in _kws(one, Selection("ns"), ["walrus"], 5)} == {late.id,
                                                                                  mine.id}
    one.close()
    two.close()


def test_keyword_statistics_see_another_connections_writes(tmp_path: Path):
    """A small keyword count is recounted after another process writes, not only after this
    one does (before, the namespace's size stayed as first counted)."""
    path = tmp_path / "stats.db"
    one, two = SQLiteStore(path), SQLiteStore(path)
    one.records.insert([rec(f"walrus note {i}") for i in range(5)], model="m")
    stats = one.indexes.term_stats(Selection("ns"), ["walrus"], selection_up_to=SELECTION_STATS,
                                   cap=cap)
    assert (stats.records, stats.matches["walrus"]) == (5, 5)
    two.records.insert([rec("walrus from the other process"), rec("a seal")], model="m")
    stats = one.indexes.term_stats(Selection("ns"), ["walrus"], selection_up_to=SELECTION_STATS,
                                   cap=cap)
    assert (stats.records, stats.matches["walrus"]) == (7, 6)
    one.close()
    two.close()


def test_the_migrations_make_the_checkpoint_tables(tmp_path: Path) -> None:
    """LangGraph's checkpoint tables are part of the store's schema, made by its migrations
    (not only when a checkpointer first runs)."""
    import sqlite3

    from memstream.store.parts.lg_tables import TABLES, existing_tables
    from memstream.store.sqlite import SQLiteStore

    SQLiteStore(tmp_path / "fresh.db").close()
    with sqlite3.connect(tmp_path / "fresh.db") as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert set(TABLES) <= names
    tables = existing_tables(str(tmp_path / "fresh.db"))
    assert tables is not None
    tables.close()


def test_a_read_never_waits_for_a_write_in_hand(tmp_path: Path):
    """One tenant's long write (a large batch, an import, an erase) held every other tenant's
    search until it committed: reads shared the writing connection and its lock. Beside a
    write held past ``READ_WAIT_S`` they now go through a reading connection of their own and
    see the last committed state; a read made inside the write sees the write's own rows, and
    the search's touch (a write) is left to the writer instead of waiting for it."""
    import threading

    from memstream import Memory

    with Memory(tmp_path / "two.db", embedder="none") as mem:
        mem.add_many(["the quarterly report is due on Friday", "the boiler was serviced"],
                     namespace="quiet")
        store = mem.store
        inside: list[int] = []
        writing, release = threading.Event(), threading.Event()

        def long_write() -> None:
            with store.write() as db:  # type: ignore[attr-defined]
                db.execute("INSERT INTO meta VALUES ('long write', 'in hand')")
                inside.append(len(store.kv.get_meta("long write") or ""))  # its own row
                writing.set()
                release.wait(30)

        writer = threading.Thread(target=long_write)
        writer.start()
        try:
            assert writing.wait(10)
            answers: list[list[str]] = []
            reader = threading.Thread(target=lambda: answers.append(
                [h.record.text for h in mem.search("quarterly report", namespace="quiet")]))
            reader.start()
            reader.join(10)
            done_beside = not reader.is_alive()
            outside = store.kv.get_meta("long write") if done_beside else "not asked"
        finally:
            release.set()
            writer.join()
            reader.join()
        assert done_beside  # it waited for the write to commit
        assert answers[0][0] == "the quarterly report is due on Friday"
        assert inside == [len("in hand")] and outside is None  # the commit had not come
        assert store.kv.get_meta("long write") == "in hand"
        # the search's touch waited for nobody: the writer applied it as it let go
        report = next(r for r in mem.get_all(namespace="quiet") if "quarterly" in r.text)
        assert report.access_count == 1 and report.last_accessed_at > report.created_at


def test_touches_left_to_a_writer_are_never_lost(tmp_path: Path):
    """Touches that meet another thread's write are queued for it: however they interleave
    with the writes, each one is applied once."""
    import threading

    store = SQLiteStore(tmp_path / "touch.db")
    target = rec("touched often")
    store.records.insert([target], model="m")

    def writes() -> None:
        for i in range(60):
            store.records.insert([rec(f"filler {i}")], model="m")

    def touches() -> None:
        for i in range(50):
            store.records.touch("ns", [target.id], at=float(i))

    threads = [threading.Thread(target=writes)] + [threading.Thread(target=touches)
                                                   for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.touches == []
    assert store.records.get("ns", [target.id])[0].access_count == 200
    store.close()


def test_the_checkpoint_tables_read_a_store_url_as_the_stores_do(tmp_path: Path):
    """The checkpoint tables parsed store URLs a second time, their own way: a file whose
    name holds "#" was opened as another path (the rest read as a URL fragment), and an
    unknown scheme was taken for a file name."""
    from memstream import InvalidInput
    from memstream.store.parts.lg_tables import existing_tables, open_tables

    path = tmp_path / "notes #2.db"
    SQLiteStore(path).close()
    assert existing_tables(path) is not None
    assert existing_tables(f"sqlite:///{path}") is not None
    with pytest.raises(InvalidInput, match="unknown store URL scheme"):
        open_tables("mysql://somewhere/db")
    assert not list(tmp_path.glob("mysql*"))


def test_a_search_after_erasing_most_of_a_common_word_still_scores(tmp_path: Path):
    """A term held by more than 5,000 records keeps its count for a minute; erasing most of
    them left that count above the rows in the index, and the next search that weighed the
    term failed with "math domain error"."""
    from memstream import Memory

    with Memory(tmp_path / "common.db", embedder="none") as mem:
        mem.add_many([{"text": f"apple pie recipe number {i}", "user_id": "gone"}
                      for i in range(6000)])
        mem.add_many(["an apple a day", "the pear tree in the garden"], namespace="kept")
        assert mem.search("apple pear", namespace="kept", touch=False)
        mem.delete_all(user_id="gone", erase=True)
        hits = mem.search("apple pear", namespace="kept", touch=False)
        assert {h.record.text for h in hits} == {"an apple a day", "the pear tree in the garden"}
