"""The background worker and short-lived processes (one process per request, as LangGraph runs
them), with the real default model in real processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memstream import Memory

NOTES = ["Ana prefers window seats on long flights", "Ana is vegetarian",
         "Bob prefers aisle seats"]
#: other notes written first, so that the worker of the next process has work in hand when the
#: question comes (fewer than the catch-up bound in all)
FILLER = [f"Errand {n}: returned library book number {n} and paid the fine" for n in range(20)]


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_the_next_process_searches_what_the_last_one_wrote_by_meaning(tmp_path: Path):
    """Written by one process that closes at once (its vectors left to the queue), asked by the
    next: the window seat comes first, not the vegetarian note that shares the name."""
    db = tmp_path / "agent.db"
    write = ("import sys, json\nfrom memstream import Memory\n"
             "mem = Memory(sys.argv[1])\n"
             "mem.add_many([{'text': t, 'user_id': 'ana'} for t in json.loads(sys.argv[2])])\n"
             "mem.close()\n")
    import json

    done = _python(write, str(db), json.dumps(FILLER + NOTES))
    assert done.returncode == 0, done.stderr
    with Memory(db) as mem:
        hits = mem.search("where does Ana like to sit?", user_id="ana", k=3, touch=False)
        assert hits[0].record.text == NOTES[0], [h.record.text for h in hits]
        assert hits[0].explain.cosine is not None


def test_a_search_embeds_only_a_few_waiting_records(tmp_path: Path, e5):
    """The bound: with more records waiting than CATCH_UP, the search does not embed them (the
    worker is on it); with a few, it embeds those of its own namespace only."""
    from memstream.engine.worker import CATCH_UP

    db = tmp_path / "m.db"
    with Memory(db, embedder="none") as mem:  # stored, their vectors still to be made
        mem.add_many([f"note {n}" for n in range(CATCH_UP + 40)], namespace="big")
        mem.add("Ana prefers window seats", namespace="small")
    from memstream.engine.worker import EnrichmentWorker

    with Memory(db, embedder=e5) as mem:
        worker = mem._worker
        assert isinstance(worker, EnrichmentWorker)
        worker.stop()  # only what the search does is measured (it may have done a batch)
        assert len(mem.store.queues.pending_embeddings(100)) > CATCH_UP
        assert worker.catch_up("small") == 0  # too many wait: the worker's job
        big = [rid for ns, rid, _ in mem.store.queues.pending_embeddings(100) if ns == "big"]
        mem.delete_all(namespace="big")
        assert big and worker.catch_up("small") == 1
        assert mem.store.queues.pending_embeddings(100) == []


@pytest.mark.slow
def test_a_script_that_exits_without_close_prints_no_traceback(tmp_path: Path):
    """The worker embeds at exit while the interpreter shuts thread pools down: it stops after
    the batch in hand, the rest stays queued for the next process, and nothing is printed."""
    script = ("import atexit, sys, time\nfrom memstream import Memory\n"
              "atexit.register(time.sleep, 1.0)  # another library's exit hook takes a second\n"
              "mem = Memory(sys.argv[1])\n"
              "mem.add_many([f'note {n} about the garden and the bees' for n in range(300)])\n")
    for run in range(2):
        db = tmp_path / f"exit{run}.db"
        done = _python(script, str(db))
        assert done.returncode == 0 and done.stderr == "", done.stderr[-3000:]
        with Memory(db, embedder="none") as mem:
            assert mem.stats()["records"] == 300  # every acknowledged write kept


@pytest.mark.slow
def test_the_worker_outlives_a_failure_it_did_not_expect(tmp_path: Path, monkeypatch, caplog):
    """A bug in what runs after a batch (here the comparison raising TypeError once) is
    logged with its traceback and retried: the thread lives on, flush returns, later records
    get their vectors. (It used to end the thread: flush waited for ever.)"""
    from memstream.config import Config
    from memstream.engine import changes

    calls: list[int] = []
    real = changes.compare

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise TypeError("a bug")
        return real(*args, **kwargs)

    monkeypatch.setattr(changes, "compare", flaky)
    with Memory(tmp_path / "m.db", config=Config(reflection_threshold=0), llm=None) as mem:
        mem.add(NOTES[0])
        mem.flush(timeout=60)
        mem.add(NOTES[1])
        mem.flush(timeout=60)
        assert len(calls) >= 2
        ids = [r.id for r in mem.get_all()]
        assert len(ids) == 2 and set(mem.store.indexes.embeddings("default", ids)) == set(ids)
    assert "failed unexpectedly" in caplog.text and "TypeError: a bug" in caplog.text


@pytest.mark.slow
def test_records_whose_comparison_failed_are_compared_on_the_retry(tmp_path: Path,
                                                                     monkeypatch):
    """The comparison of a batch fails (a disk error, once): its records are handed back and
    compared when the worker retries, not dropped (junk found in them is listed)."""
    from memstream.config import Config
    from memstream.engine import changes

    calls: list[int] = []
    real = changes.compare

    def failing_once(mem, embedded, **kwargs):
        embedded = list(embedded)
        if embedded:
            calls.append(len(embedded))
            if len(calls) == 1:
                raise OSError("disk I/O error")
        return real(mem, embedded, **kwargs)

    monkeypatch.setattr(changes, "compare", failing_once)
    with Memory(tmp_path / "m.db", config=Config(reflection_threshold=0), llm=None) as mem:
        recs = mem.add_many([*NOTES, "ok thanks!"])
        mem.flush(timeout=60)
        assert len(calls) >= 2
        assert [f.record.id for f in mem.audit(kinds="junk")] == [recs[-1].id]
