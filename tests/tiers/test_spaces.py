"""The agents' records live in the memory's own namespace, under the vector space "agents":
the memory's verbs do not list them, their vectors are never compared with text vectors, an
erasure of the agent takes them too, and a store written before spaces existed (the agents'
records in "<ns>.agents") is moved into place when it is opened, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from memstream import Memory
from memstream.engine.records import records_of
from memstream.store.postgres.schema import COLUMNS as PG_COLUMNS
from memstream.store.postgres.schema import MIGRATIONS as PG_MIGRATIONS
from memstream.store.sqlite.schema import COLUMNS, MIGRATIONS
from memstream.store.sqlite.store import _split_sql
from memstream.tiers import TieredMemory
from memstream.tiers.tiered import MODEL, SPACE


def _states(tiers: TieredMemory, n: int = 6) -> list[str]:
    return [tiers.store("fox", "state", {"x": i, "den": "oak"}, i)["memory_id"]
            for i in range(n)]


def test_the_memorys_verbs_do_not_list_the_agents_records(tmp_path: Path):
    with Memory(tmp_path / "m.db", embedder="none") as mem:
        mem.add("The fox sleeps in the oak den", namespace="sim", agent_id="fox")
        tiers = TieredMemory(mem, namespace="sim")
        ids = _states(tiers)
        assert [r.text for r in mem.get_all(namespace="sim")] == ["The fox sleeps in the oak den"]
        assert mem.count(namespace="sim") == 1
        assert all(h.record.space == "" for h in mem.search("oak den x", namespace="sim"))
        assert mem.namespaces() == ["sim"]  # no "sim.agents" beside it any more
        assert mem.stats(namespace="sim")["records"] == 7
        assert mem.get(ids[0], namespace="sim").space == SPACE  # reachable by id
        assert records_of(mem).count(
            tiers.selection("fox", None)) == 6  # the tiers' own selection
        similar = tiers.similar("fox", {"x": 2, "den": "oak"}, k=6)
        assert similar[0][0]["memory_id"] == ids[2]
        # erasing the agent takes its text memories and its states
        assert mem.delete_all(namespace="sim", agent_id="fox", erase=True) == 7
        assert tiers.similar("fox", {"x": 2, "den": "oak"}, k=6) == []


def _legacy_rows(tmp_path: Path) -> list[tuple[Any, ...]]:
    """Agent records as a store before vector spaces held them: namespace "sim.agents"; each
    row is COLUMNS without space, then embedding (float32 bytes) and embed_model."""
    with Memory(tmp_path / "made.db", embedder="none") as mem:
        tiers = TieredMemory(mem, namespace="sim")
        ids = _states(tiers)
        recs = records_of(mem).get("sim", ids)
        vectors = records_of(mem).embeddings("sim", ids)
    rows = []
    for r in recs:
        values = {c: getattr(r, c) for c in COLUMNS if c != "space"}
        values["namespace"] = "sim.agents"
        rows.append((values, vectors[r.id]))
    return rows


def test_an_sqlite_store_from_before_spaces_is_moved_into_place(tmp_path: Path):
    import json

    path = tmp_path / "v7.db"
    db = sqlite3.connect(path)
    for version in range(1, 8):
        for statement in _split_sql(MIGRATIONS[version]):
            db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '7')")
    legacy = _legacy_rows(tmp_path)
    for values, vector in legacy:
        v = dict(values, data=json.dumps(values["data"]), metadata="{}", provenance="[]")
        cols = [*v, "embedding", "embed_model", "needs_embedding"]
        db.execute(f"INSERT INTO records ({', '.join(cols)}) VALUES "
                   f"({', '.join('?' * len(cols))})",
                   (*v.values(), np.asarray(vector, np.float32).tobytes(), MODEL, 0))
        db.execute("INSERT INTO history(namespace, record_id, event, at, new) VALUES "
                   "('sim.agents', ?, 'add', 1, '{}')", (values["id"],))
    db.execute("INSERT INTO records (id, namespace, text, kind, importance, created_at, "
               "last_accessed_at) VALUES ('01TEXT', 'sim', 'a text memory', 'fact', 0.5, 1, 1)")
    db.commit()
    db.close()
    _check_moved(Memory(path, embedder="none"), [v["id"] for v, _ in legacy])


def test_a_postgres_store_from_before_spaces_is_moved_into_place(tmp_path: Path, pg_url: str):
    from psycopg.types.json import Jsonb

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)")
        for version in range(1, 5):
            for statement in PG_MIGRATIONS[version]:
                conn.execute(statement)
        conn.execute("INSERT INTO meta VALUES ('schema_version', '4')")
        legacy = _legacy_rows(tmp_path)
        for values, vector in legacy:
            v = dict(values, data=Jsonb(values["data"]), metadata=Jsonb({}), provenance=[])
            assert list(v) == [c for c in PG_COLUMNS if c != "space"]
            cols = [*v, "embedding", "embed_model", "needs_embedding"]
            conn.execute(f"INSERT INTO records ({', '.join(cols)}) VALUES "
                         f"({', '.join(['%s'] * len(cols))})",
                         (*v.values(), "[" + ",".join(str(float(x)) for x in vector) + "]",
                          MODEL, False))
    _check_moved(Memory(pg_url, embedder="none"), [v["id"] for v, _ in legacy])


def _check_moved(mem: Memory, ids: list[str]) -> None:
    with mem:
        assert "sim.agents" not in mem.namespaces()
        moved = mem.get(ids[0], namespace="sim")
        assert moved.space == SPACE and moved.namespace == "sim"
        assert all(r.space == "" for r in mem.get_all(namespace="sim"))
        tiers = TieredMemory(mem, namespace="sim")  # a new process: states come from LTM
        similar = tiers.similar("fox", {"x": 4, "den": "oak"}, k=3)
        assert similar[0][0]["memory_id"] == ids[4]
        assert [e["step_number"] for e in tiers.step_range("fox", 0, 10)] == list(range(6))


def test_the_agents_states_do_not_change_text_rankings(tmp_path: Path):
    """Keyword statistics are the text space's: the same memories rank the same, with the
    same scores, whether or not agents' states share their namespace."""
    notes = [f"note {i} about the harbour and the boats of pier {i % 7}" for i in range(60)]
    ranked = []
    for name, states in (("plain", 0), ("with-states", 40)):
        with Memory(tmp_path / f"{name}.db", embedder="none") as mem:
            mem.add_many(notes, namespace="sim")
            tiers = TieredMemory(mem, namespace="sim")
            for step in range(states):
                tiers.store_many((f"a{a}", "state", {"harbour": a, "pier": step}, step, 0.5)
                                 for a in range(50))
            hits = mem.search("harbour boats pier 3", namespace="sim", touch=False, now=10**10)
            ranked.append([(h.record.text, round(h.score, 6)) for h in hits])
    assert ranked[0] == ranked[1]
