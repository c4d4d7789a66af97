"""``memstream migrate``: a whole memory from SQLite to PostgreSQL and back, verified."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import psycopg
from click.testing import CliRunner

from memstream import FixedClock, Memory
from memstream.cli import cli
from memstream.filters import Selection
from memstream.migrate import copy_store, verify
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
        near = mem.store.vector_search(Selection("a"), np.eye(4, dtype=np.float32)[2], 7)
        got = mem.store.get("a", [rid for rid, _ in near])
        assert len(got) == 7 and {r.data["i"] % 4 for r in got} == {2}  # vectors came along
    back = tmp_path / "back.db"
    result = runner.invoke(cli, ["migrate", pg_url, str(back)])
    assert result.exit_code == 0, result.output
    assert "verified: the copy matches" in result.output
    a, b = open_store(src), open_store(back)
    try:
        assert verify(a, b).ok
        assert [e for _, e in a.history_page(0, 1000)] == [e for _, e in b.history_page(0, 1000)]
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
