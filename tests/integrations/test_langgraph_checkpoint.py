"""The checkpointer against LangGraph's own conformance suite (every capability), on a real
SQLite file and a real PostgreSQL, and a graph killed between two steps resuming from its last
checkpoint."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.conformance")

from langgraph.checkpoint.conformance import checkpointer_test, validate

from memstream import Memory
from memstream.errors import InvalidInput
from memstream.integrations.langgraph import MemstreamSaver

from ..pg import drop_database, new_database

ALL = {"put", "put_writes", "get_tuple", "list", "delete_thread", "delete_for_runs",
       "copy_thread", "prune"}


def _conform(make) -> dict[str, object]:
    @checkpointer_test(name="MemstreamSaver")
    async def factory():
        saver = make()
        yield saver
        saver.close()

    report = asyncio.run(validate(factory))
    failures = {cap: r.failures for cap, r in report.results.items() if r.passed is not True}
    assert failures == {}, failures
    return {cap: r.tests_passed for cap, r in report.results.items()}


def test_conformance_on_sqlite(tmp_path: Path):
    files = iter(range(100))
    passed = _conform(lambda: MemstreamSaver(tmp_path / f"cp{next(files)}.db"))
    assert set(passed) == ALL and all(n > 0 for n in passed.values())


@pytest.mark.slow
def test_conformance_on_postgres(pg_admin: str):
    url = new_database(pg_admin, "lgcp")
    try:
        passed = _conform(lambda: MemstreamSaver(url))
        assert set(passed) == ALL
    finally:
        drop_database(pg_admin, url)


def test_a_memory_on_postgres_keeps_checkpoints_in_its_database(pg_admin: str):
    url = new_database(pg_admin, "lgmem")
    try:
        with Memory(url, embedder="none") as mem, MemstreamSaver(mem) as saver:
            config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
            from langgraph.checkpoint.base import empty_checkpoint

            saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
            assert saver.get_tuple({"configurable": {"thread_id": "t"}}) is not None
        import psycopg

        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM lg_checkpoints").fetchone()[0] == 1
    finally:
        drop_database(pg_admin, url)


def test_a_config_without_a_thread_is_refused(tmp_path: Path):
    with MemstreamSaver(tmp_path / "cp.db") as saver, \
            pytest.raises(InvalidInput, match="thread_id"):
        saver.get_tuple({"configurable": {}})


GRAPH = textwrap.dedent("""
    import sys, time
    from typing import Annotated, TypedDict
    import operator
    from langgraph.graph import StateGraph, START, END
    from memstream import Memory
    from memstream.integrations.langgraph import MemstreamSaver, MemstreamStore

    class State(TypedDict):
        steps: Annotated[list[str], operator.add]

    db, marker = sys.argv[1], sys.argv[2]
    mem = Memory(db, embedder="none")
    store = MemstreamStore(mem)
    saver = MemstreamSaver(mem)

    def node(name):
        def run(state, *, store):
            store.put(("runs", "r1"), name, {"text": f"did {name}"})
            if name == "three" and marker != "-":
                open(marker, "w").write("ready")
                time.sleep(60)  # killed here, after two steps were checkpointed
            return {"steps": [name]}
        return run

    g = StateGraph(State)
    for n in ("one", "two", "three", "four"):
        g.add_node(n, node(n))
    g.add_edge(START, "one"); g.add_edge("one", "two"); g.add_edge("two", "three")
    g.add_edge("three", "four"); g.add_edge("four", END)
    graph = g.compile(checkpointer=saver, store=store)
    config = {"configurable": {"thread_id": "job-1"}}
    state = graph.get_state(config)
    out = graph.invoke(None if state.next else {"steps": []}, config)
    print(",".join(out["steps"]))
    print(",".join(sorted(i.key for i in store.search(("runs", "r1"), limit=10))))
""")


@pytest.mark.slow
def test_a_graph_killed_between_steps_resumes_from_its_last_checkpoint(tmp_path: Path):
    script = tmp_path / "graph.py"
    script.write_text(GRAPH)
    db, marker = tmp_path / "agent.db", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, str(script), str(db), str(marker)])
    try:
        for _ in range(600):
            if marker.exists() or proc.poll() is not None:
                break
            import time

            time.sleep(0.05)
        assert marker.exists(), "the graph never reached its third step"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    done = subprocess.run([sys.executable, str(script), str(db), "-"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    steps, keys = done.stdout.strip().splitlines()
    # one and two ran once, before the kill; three ran again from the checkpoint after two
    assert steps == "one,two,three,four"
    assert keys == "four,one,three,two"


def test_deleting_a_thread_leaves_none_of_its_bytes_in_the_file(tmp_path: Path):
    """A thread's checkpoints hold the user's words; erase does not reach them (they belong to
    threads), so delete_thread is how they are erased: nothing of them stays in the file or
    its write-ahead log."""
    from langgraph.checkpoint.base import empty_checkpoint

    db = tmp_path / "lg.db"
    secret = "Priya's passport number is X9981-SECRET"
    with Memory(db, embedder="none") as mem, MemstreamSaver(mem) as saver:
        mem.add("a memory that stays", user_id="u")
        config = {"configurable": {"thread_id": "t-erase", "checkpoint_ns": ""}}
        cp = empty_checkpoint()
        cp["channel_values"] = {"messages": [secret] * 50}
        cp["channel_versions"] = {"messages": "1"}
        saved = saver.put(config, cp, {"source": "input", "step": 0}, {"messages": "1"})
        saver.put_writes(saved, [("messages", secret)], task_id="t1")
        saver.delete_thread("t-erase")
        assert saver.get_tuple({"configurable": {"thread_id": "t-erase"}}) is None
        files = [p for p in tmp_path.iterdir() if p.name.startswith("lg.db")]
        for path in files:
            assert b"X9981-SECRET" not in path.read_bytes(), path.name
