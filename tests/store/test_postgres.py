from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from memstream import BackendUnavailable, InvalidInput, Memory
from memstream.filters import Selection
from memstream.store import open_store
from memstream.store.postgres import PostgresStore
from memstream.store.postgres.schema import SCHEMA_VERSION

from .conformance import StoreConformance, rec, unit


class TestPostgresConformance(StoreConformance):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PostgresStore]:
        s = PostgresStore(pg_url)
        yield s
        s.close()


def test_schema_version_recorded_and_newer_refused(pg_url: str) -> None:
    open_store(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert row == (str(SCHEMA_VERSION),)
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(BackendUnavailable, match="newer than this memstream"):
        PostgresStore(pg_url)


def test_foreign_records_table_is_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE records (x int)")
    with pytest.raises(BackendUnavailable, match="memstream did not make"):
        PostgresStore(pg_url)


def test_unreachable_server_names_the_problem() -> None:
    with pytest.raises(BackendUnavailable, match=r"cannot reach PostgreSQL at 127\.0\.0\.1:1/x"):
        PostgresStore("postgresql://u:secret@127.0.0.1:1/x", busy_timeout=1)


def test_hnsw_index_per_dimension_and_used(pg_url: str) -> None:
    s = PostgresStore(pg_url)
    try:
        s.records.insert([rec(f"r{i}", embedding=unit(1, i, 0)) for i in range(3)], model="m")
        with psycopg.connect(pg_url) as conn:
            names = [r[0] for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'records_vec_%'")]
            assert names == ["records_vec_3"]
            conn.execute("SET enable_seqscan = off")
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT id FROM records r WHERE vector_dims(r.embedding) = 3 ORDER BY "
                "r.embedding::vector(3) <=> '[1,0,0]'::vector(3) LIMIT 5"))
            assert "records_vec_3" in plan
        # a second process (here: a second store) finds the index and does not rebuild it
        assert PostgresStore(pg_url)._indexed_dims == {3}
    finally:
        s.close()


def test_vectors_searched_exactly_make_no_hnsw_index(pg_url: str) -> None:
    """Agent states (``ann=False``) keep their vectors for exact per-agent scans: no HNSW index
    is made for their dimension, so inserting them costs a row, not a graph update."""
    from memstream.tiers import TieredMemory

    with Memory(pg_url, embedder="none") as mem:
        tm = TieredMemory(mem)
        tm.store_many([(f"a{i}", "state", {"hp": i}, 1, 0.5) for i in range(3)])
        assert tm.similar("a1", {"hp": 1}, k=1, tiers=["ltm"])[0][0]["step_number"] == 1
        s = mem.store
        assert isinstance(s, PostgresStore)
        s.records.insert([rec("text", embedding=unit(1, 0, 0, 0))], model="m")  # a text embedding
    with psycopg.connect(pg_url) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'records_vec_%'")]
    assert names == ["records_vec_4"]


def test_nul_characters_are_refused_and_nothing_is_stored(pg_url: str) -> None:
    s = PostgresStore(pg_url)
    try:
        s.records.insert([rec("kept")])
        with pytest.raises(InvalidInput, match="NUL"):
            s.records.insert([rec("bad \x00 text")])
        assert [r.text for r in s.records.select(Selection("ns"))] == ["kept"]
    finally:
        s.close()


def test_memory_on_postgres_url(pg_url: str) -> None:
    with Memory(pg_url, embedder="none") as mem:
        a = mem.add("Ana likes window seats on long flights", user_id="ana")
        mem.add("Bo prefers the aisle", user_id="bo")
        hits = mem.search("where does Ana like to sit on flights", user_id="ana")
        assert [h.record.id for h in hits] == [a.id]
        assert mem.store.url == pg_url
