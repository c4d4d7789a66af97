"""The store and the engine against damaged files, poison input and deletes that must reach
every cache: each test here failed on the code before the hardening round (issue 17)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memstream import CorruptStore, InvalidInput, Memory
from memstream.tiers import TieredMemory

from .redis_server import REDIS_URL

EXE = str(Path(sys.executable).parent / "memstream")


def _files(folder: Path) -> dict[str, bytes]:
    """Every file's bytes, read by another process: a descriptor this process opened and
    closed on a store it has open would drop the store's POSIX locks (they belong to the
    process), and another process could then delete the write-ahead log under it."""
    import pickle

    code = ("import pathlib, pickle, sys\n"
            "folder = pathlib.Path(sys.argv[1])\n"
            "sys.stdout.buffer.write(pickle.dumps({p.name: p.read_bytes() for p in "
            "sorted(folder.iterdir()) if p.is_file()}))\n")
    out = subprocess.run([sys.executable, "-c", code, str(folder)], check=True,
                         capture_output=True).stdout
    return dict(pickle.loads(out))


# --- 9. damaged files: refused, and left exactly as they were ---------------------------------

def test_a_foreign_sqlite_file_is_refused_unchanged(tmp_path: Path):
    db = tmp_path / "theirs.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    before = _files(tmp_path)
    with pytest.raises(CorruptStore, match="not a memstream store"):
        Memory(db, embedder="none")
    assert _files(tmp_path) == before  # no WAL switch, no -wal or -shm beside it


def test_an_empty_file_is_not_silently_a_new_store(tmp_path: Path):
    (tmp_path / "empty.db").touch()
    with pytest.raises(CorruptStore, match="empty file"):
        Memory(tmp_path / "empty.db", embedder="none")
    assert _files(tmp_path) == {"empty.db": b""}


def test_damage_in_the_middle_is_found_before_any_write(tmp_path: Path):
    db = tmp_path / "hurt.db"
    with Memory(db, embedder="none") as mem:
        mem.add_many([f"memory {i} about the harbour and the boats" for i in range(3000)])
    size = db.stat().st_size
    with db.open("r+b") as fh:
        fh.seek(size // 2)
        fh.write(os.urandom(8192))
    before = _files(tmp_path)
    with pytest.raises(CorruptStore, match="damaged"):
        Memory(db, embedder="none")
    assert _files(tmp_path) == before
    out = subprocess.run([EXE, "--db", str(db), "check"], capture_output=True, text=True)
    assert out.returncode == 7 and "damaged" in out.stderr


def test_a_dropped_keyword_table_is_a_corrupt_store(tmp_path: Path):
    db = tmp_path / "fts.db"
    with Memory(db, embedder="none") as mem:
        mem.add("hello harbour")
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE records_fts")
    with pytest.raises(CorruptStore, match="records_fts"):
        Memory(db, embedder="none")


def test_check_passes_a_healthy_store(tmp_path: Path):
    db = tmp_path / "ok.db"
    with Memory(db, embedder="none") as mem:
        mem.add("fine")
    out = subprocess.run([EXE, "--db", str(db), "check"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip().endswith(": ok")


# --- 3 and 8 in the library: depth, size and times at the boundary -----------------------------

def test_deep_or_huge_payloads_and_wild_times_store_nothing(kw_memory: Memory):
    deep: dict[str, object] = {}
    node = deep
    for _ in range(100):
        node["a"] = {}
        node = node["a"]  # type: ignore[assignment]
    bad_calls = [
        lambda: kw_memory.add("x", data=deep),
        lambda: kw_memory.add("x", metadata={"blob": "y" * 2_000_000}),
        lambda: kw_memory.add("x", at=1e20),
        lambda: kw_memory.add("x", at=2**63),
        lambda: kw_memory.add("x", at=True),
        lambda: kw_memory.get_all(filters={"n": 2**64}),
        lambda: kw_memory.get_all(filters={"n": {"in": list(range(1000))}}),
    ]
    for call in bad_calls:
        with pytest.raises(InvalidInput):
            call()
    assert kw_memory.count() == 0


# --- 5. deletes reach every tier, in process and in Redis, from any process -------------------

@pytest.mark.parametrize("redis", [False, True])
def test_deletes_reach_the_tiers(tmp_path: Path, redis: bool, redis_prefix: str):
    kwargs = {"redis_url": REDIS_URL, "prefix": redis_prefix} if redis else {}
    with Memory(tmp_path / "t.db", embedder="none") as mem:
        tiers = TieredMemory(mem, namespace="sim", **kwargs)  # type: ignore[arg-type]
        ids = [tiers.store("fox", "state", {"x": i, "den": "oak"}, i)["memory_id"]
               for i in range(8)]
        query = {"x": 3, "den": "oak"}
        mem.delete(ids[3], namespace="sim")
        assert ids[3] not in [e["memory_id"] for e, _ in tiers.similar("fox", query, k=8)]
        if redis:  # evicted from Redis at once, not left there for the TTL
            assert tiers.stm.get([ids[3]]) == {}
        # a delete by another process (no listener here): never served again
        with Memory(tmp_path / "t.db", embedder="none") as other:
            other.delete(ids[4], namespace="sim")
        assert ids[4] not in [e["memory_id"] for e, _ in tiers.similar("fox", query, k=8)]
        assert mem.delete_all(namespace="sim", agent_id="fox", erase=True) == 6
        assert tiers.similar("fox", query, k=8) == []
        assert tiers.stm.get(ids) == {} and tiers.im.get(ids) == {}


# --- 6. erasure in the library and the CLI -----------------------------------------------------

def test_erasure_leaves_no_trace_in_the_files(tmp_path: Path):
    db = tmp_path / "e.db"
    with Memory(db, embedder="none") as mem:
        mem.add_many([f"filler memory {i}" for i in range(500)], namespace="ns")
        secret = mem.add("the locker code is quokkapass", user_id="kim", namespace="ns",
                         data={"note": "quokkapass"})
        mem.update(secret.id, text="the locker code is quokkapass again", namespace="ns")
        mem.delete(secret.id, namespace="ns")  # a plain delete keeps the history...
        assert "quokkapass" in str(mem.history(secret.id, namespace="ns"))
        kept = b"".join(_files(tmp_path).values())
        assert b"quokkapass" in kept
        mem.delete(secret.id, namespace="ns", erase=True)  # ...erasure does not
        assert [(e.event, e.old, e.new) for e in mem.history(secret.id, namespace="ns")] == [
            ("erase", None, None)]
        assert mem.count(namespace="ns") == 500
    assert b"quokkapass" not in b"".join(_files(tmp_path).values())


def test_erase_from_the_cli(tmp_path: Path):
    db = str(tmp_path / "f.db")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([EXE, "--db", db, "--embedder", "none", *args],
                              capture_output=True, text=True)

    run("add", "Kim's passport number is 55 41 wombat", "--user", "kim")
    rid = run("add", "Kim likes tea", "--user", "kim").stdout.split()[-1]
    run("add", "Lee likes coffee", "--user", "lee")
    assert run("erase").returncode == 2
    out = run("erase", "--user", "kim")
    assert out.returncode == 0 and "erased 2" in out.stdout
    assert "erase" in run("history", rid).stdout
    assert "wombat" not in run("--json", "list").stdout
    assert b"wombat" not in b"".join(_files(tmp_path).values())


def test_erase_removes_every_cached_vector_of_the_users_texts(tmp_path: Path, e5):
    """The embedding cache keeps no vector of an erased user's texts: the text before an
    update, a record deleted earlier without erase, and texts still being embedded when the
    erase came."""
    from memstream.embed.cache import content_hash, passage

    def cached(mem: Memory, texts: list[str]) -> list[str]:
        keys = {content_hash(passage(t)): t for t in texts}
        return sorted(keys[k] for k in mem.store.kv.cached_vectors(e5.name, list(keys)))

    with Memory(tmp_path / "cache.db", embedder=e5) as mem:
        before = mem.add("Kim's old locker code is 4471", user_id="kim")
        gone = mem.add("Kim's bank is Ostbank", user_id="kim")
        mem.flush()
        mem.update(before.id, text="Kim's locker code is 9902")
        mem.delete(gone.id)  # a plain delete: the history (and the cache) keep the text
        mem.flush()
        old = ["Kim's old locker code is 4471", "Kim's locker code is 9902",
               "Kim's bank is Ostbank"]
        assert cached(mem, old) == sorted(old)
        busy = [f"Kim's diary, day {n}: walked the dog along the river" for n in range(150)]
        mem.add_many([{"text": t, "user_id": "kim"} for t in busy])  # embedding starts...
        mem.delete_all(user_id="kim", erase=True)  # ...and the erase comes meanwhile
        mem.flush()
        assert cached(mem, old) == []
        assert cached(mem, busy) == []


def _reader(db: Path) -> subprocess.Popen[str]:
    """Another process holding a read transaction on the file (a dashboard, a backup),
    until a line is written to its standard input."""
    reader = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys\n"
         f"db = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
         "db.execute('BEGIN'); db.execute('SELECT count(*) FROM records').fetchone()\n"
         "print('reading', flush=True); sys.stdin.readline()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert reader.stdout is not None and reader.stdout.readline().strip() == "reading"
    return reader


def test_erase_beside_a_reader_never_claims_a_scrub_it_has_not_done(tmp_path: Path):
    """Another process holds a read transaction (a dashboard, a backup). The erase returns at
    once instead of waiting 30 s, says its scrub is pending, and meanwhile another namespace's
    writes and searches go on; once the reader ends, the log is truncated in the background
    and the erased words are in no file."""
    import threading
    import time

    db = tmp_path / "reader.db"
    with Memory(db, embedder="none") as mem:
        mem.add_many([f"filler memory {i}" for i in range(300)], namespace="other")
        mem.add_many([{"text": f"kim's secret number {i} is quokkapass", "user_id": "kim"}
                      for i in range(50)], namespace="ns")
    reader = _reader(db)
    try:
        with Memory(db, embedder="none") as mem:
            mem.add("written after the reader began", namespace="ns")  # the log now matters
            waits: list[float] = []
            stop = threading.Event()

            def other_tenant() -> None:
                while not stop.is_set():
                    started = time.monotonic()
                    mem.add("another tenant's note", namespace="other")
                    mem.search("filler", namespace="other", k=3)
                    waits.append(time.monotonic() - started)

            worker = threading.Thread(target=other_tenant)
            worker.start()
            started = time.monotonic()
            erased = mem.delete_all(user_id="kim", namespace="ns", erase=True)
            took = time.monotonic() - started
            time.sleep(0.5)
            stop.set()
            worker.join()
            assert erased == 50 and took < 5.0, took
            assert max(waits) < 5.0, max(waits)
            pending = mem.deletions.scrub_pending()
            assert pending and "read transaction" in pending
            assert b"quokkapass" in b"".join(_files(tmp_path).values())  # honest: still there
            reader.communicate("done\n", timeout=30)  # the reader ends
            deadline = time.monotonic() + 15
            while mem.deletions.scrub_pending() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert mem.deletions.scrub_pending() is None
            assert b"quokkapass" not in b"".join(_files(tmp_path).values())
    finally:
        if reader.poll() is None:
            reader.kill()


def test_a_long_reader_never_stalls_the_writers_while_the_log_grows(tmp_path: Path):
    """With another process's read transaction open, writes that grow the log past the
    restarting checkpoint's size (16 MiB) used to stall every write for the busy timeout
    (30 s) while the checkpoint waited for the reader; it now waits a moment and tries later."""
    import time

    db = tmp_path / "grow.db"
    with Memory(db, embedder="none") as mem:
        mem.add("the first note", namespace="a")
    reader = _reader(db)
    try:
        with Memory(db, embedder="none") as mem:
            waits = []
            for n in range(40):  # about 24 MiB of log
                started = time.monotonic()
                mem.add_many([f"note {n}.{i} " + "words of a long note " * 40
                              for i in range(200)], namespace=f"t{n % 4}")
                waits.append(time.monotonic() - started)
            assert (db.parent / "grow.db-wal").stat().st_size > 16 * 2**20
            assert max(waits) < 5.0, sorted(waits)[-3:]
    finally:
        reader.communicate("done\n", timeout=30)


def test_a_rest_erase_says_its_scrub_is_pending_as_the_cli_and_mcp_do(tmp_path: Path):
    """Beside another process's read transaction, REST's erase routes answered
    {"deleted": 4} as if the text were gone; they now name the pending scrub too."""
    from fastapi.testclient import TestClient

    from memstream.server.app import create_app

    db = tmp_path / "rest.db"
    with Memory(db, embedder="none") as mem:
        ids = [r.id for r in mem.add_many([{"text": f"kim's pin {i} is 4417", "user_id": "kim"}
                                           for i in range(4)])]
    reader = _reader(db)
    try:
        mem = Memory(db, embedder="none")
        mem.add("written after the reader began")
        http = TestClient(create_app(mem), base_url="http://127.0.0.1")
        one = http.delete(f"/v1/memories/{ids[0]}", params={"erase": "true"})
        assert one.status_code == 200
        assert one.json()["deleted"] == ids[0] and "read transaction" in one.json()[
            "scrub_pending"]
        every = http.post("/v1/memories/delete", json={"user_id": "kim", "erase": True})
        assert every.json()["deleted"] == 3 and every.json()["scrub_pending"]
        kept = http.post("/v1/memories/delete", json={"user_id": "nobody"})
        assert kept.json() == {"deleted": 0}  # no erase: nothing to scrub, nothing said
        mem.close()
    finally:
        reader.communicate("done\n", timeout=30)


@pytest.mark.slow
def test_no_vector_of_an_erased_text_is_cached_though_its_embedding_was_in_flight(
        tmp_path: Path):
    """Sixty notes added, their user erased 0.3 s later while the worker embeds them: after
    flush no vector of any of their texts is in the cache (what the cache keeps besides are
    the reference sentences the models read: never a user's text)."""
    import sqlite3
    import time

    from memstream.embed.cache import content_hash, passage

    texts = [f"victim note {i}: the locker code is {1000 + i}" for i in range(60)]
    db = tmp_path / "erase.db"
    with Memory(db) as mem:
        mem.add_many([{"text": t, "user_id": "victim"} for t in texts])
        time.sleep(0.3)
        assert mem.delete_all(user_id="victim", erase=True) == 60
        mem.flush()
    cached = {h for (h,) in sqlite3.connect(db).execute("SELECT hash FROM embedding_cache")}
    assert not cached & {content_hash(passage(t)) for t in texts}
