"""The LangGraph store on memstream, used as LangGraph's users use it: through BaseStore's
methods, sync and async, and from the nodes of a compiled graph through the runtime."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import InvalidNamespaceError

from memstream import FixedClock, Memory
from memstream.errors import InvalidInput
from memstream.integrations.langgraph import MemstreamSearchItem, MemstreamStore

from ..conftest import T0


@pytest.fixture
def store(kw_memory: Memory):
    return MemstreamStore(kw_memory)


def test_put_get_update_delete(store: MemstreamStore, kw_memory: Memory):
    store.put(("users", "alice"), "prefs", {"text": "likes green tea", "n": 1})
    item = store.get(("users", "alice"), "prefs")
    assert item is not None and item.value == {"text": "likes green tea", "n": 1}
    assert item.namespace == ("users", "alice") and item.key == "prefs"
    assert isinstance(item.created_at, datetime)
    store.put(("users", "alice"), "prefs", {"text": "likes black coffee", "n": 2})
    assert store.get(("users", "alice"), "prefs").value["n"] == 2
    # one record, whose history keeps the first value
    (record,) = kw_memory.get_all(kinds="langgraph")
    assert [e.event for e in kw_memory.history(record.id)] == ["add", "update"]
    assert store.get(("users", "bob"), "prefs") is None
    store.delete(("users", "alice"), "prefs")
    assert store.get(("users", "alice"), "prefs") is None
    assert kw_memory.get_all(kinds="langgraph") == []


def test_search_ranks_by_memstream_and_explains(store: MemstreamStore):
    store.put(("docs", "a"), "1", {"text": "the deploy runbook for the payments service"})
    store.put(("docs", "a"), "2", {"text": "lunch menu for friday"})
    store.put(("docs", "b"), "3", {"text": "payments service incident review"})
    store.put(("other",), "4", {"text": "payments elsewhere"})
    hits = store.search(("docs",), query="payments service", limit=10)
    assert {h.key for h in hits} == {"1", "3"}
    assert all(isinstance(h, MemstreamSearchItem) and h.score is not None for h in hits)
    assert hits[0].score >= hits[-1].score
    assert hits[0].explanation is not None and "relevance" in hits[0].explanation
    assert [h.key for h in store.search(("docs", "b"), query="payments")] == ["3"]
    assert [h.key for h in store.search((), query="payments elsewhere", limit=1)] == ["4"]


def test_filter_limit_offset(store: MemstreamStore):
    for i in range(6):
        store.put(("items",), f"k{i}", {"text": f"item {i}", "score": i,
                                        "color": "red" if i % 2 else "blue", "tags": ["x", i]})
    red = store.search(("items",), filter={"color": "red"}, limit=10)
    assert sorted(h.key for h in red) == ["k1", "k3", "k5"]
    assert sorted(h.key for h in store.search(("items",), filter={"score": {"$gte": 4}})) == [
        "k4", "k5"]
    assert sorted(h.key for h in store.search(
        ("items",), filter={"score": {"$gt": 1, "$lt": 4}, "color": {"$ne": "red"}})) == ["k2"]
    assert [h.key for h in store.search(("items",), filter={"tags": ["x", 3]})] == ["k3"]
    page1 = store.search(("items",), limit=4)
    page2 = store.search(("items",), limit=4, offset=4)
    assert len(page1) == 4 and len(page2) == 2
    assert {h.key for h in page1} | {h.key for h in page2} == {f"k{i}" for i in range(6)}
    with pytest.raises(InvalidInput, match=r"\$in"):
        store.search(("items",), filter={"score": {"$in": [1]}})


def test_index_fields_and_unindexed_items(kw_memory: Memory):
    store = MemstreamStore(kw_memory, index={"fields": ["title"]})
    store.put(("n",), "a", {"title": "quarterly roadmap", "body": "zebra"})
    store.put(("n",), "b", {"title": "zebra facts"}, index=["title"])
    store.put(("n",), "c", {"title": "zebra hidden"}, index=False)
    assert [h.key for h in store.search(("n",), query="zebra")] == ["b"]
    assert store.get(("n",), "c").value == {"title": "zebra hidden"}
    with pytest.raises(InvalidInput, match="embedder"):
        MemstreamStore(kw_memory, index={"dims": 1536, "embed": "openai:text-embedding-3-small"})


def test_list_namespaces(store: MemstreamStore):
    for ns in [("a", "x", "1"), ("a", "y", "1"), ("b", "x", "2"), ("a", "x", "2")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces() == sorted(
        [("a", "x", "1"), ("a", "x", "2"), ("a", "y", "1"), ("b", "x", "2")])
    assert store.list_namespaces(prefix=("a",)) == [("a", "x", "1"), ("a", "x", "2"),
                                                    ("a", "y", "1")]
    assert store.list_namespaces(suffix=("1",)) == [("a", "x", "1"), ("a", "y", "1")]
    assert store.list_namespaces(prefix=("*", "x")) == [("a", "x", "1"), ("a", "x", "2"),
                                                        ("b", "x", "2")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("b",)]
    assert store.list_namespaces(limit=1, offset=1) == [("a", "x", "2")]


def test_ttl_expires_refreshes_and_sweeps(db_path: Path):
    clock = FixedClock(T0)
    with Memory(db_path, embedder="none", clock=clock) as mem:
        store = MemstreamStore(mem, ttl={"default_ttl": 10, "omit_expired": True})
        store.put(("s",), "short", {"text": "gone soon"})
        store.put(("s",), "forever", {"text": "stays"}, ttl=None)
        clock.advance(seconds=9 * 60)
        assert store.get(("s",), "short") is not None  # a read refreshes the TTL
        clock.advance(seconds=9 * 60)
        assert store.get(("s",), "short", refresh_ttl=False) is not None
        clock.advance(seconds=2 * 60)
        assert store.get(("s",), "short") is None  # expired: omitted
        assert [h.key for h in store.search(("s",))] == ["forever"]
        assert store.sweep_ttl() == 1
        assert [r.data["text"] for r in mem.get_all(kinds="langgraph")] == ["stays"]
        with pytest.raises(InvalidInput, match="TTL"):
            store.put(("s",), "bad", {"v": 1}, ttl=-5)


def test_bad_input_is_refused_and_writes_nothing(store: MemstreamStore, kw_memory: Memory):
    with pytest.raises(InvalidNamespaceError):
        store.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put((), "k", {"v": 1})
    with pytest.raises(InvalidInput):
        store.put(("a",), "k", {"when": datetime.now()})  # not JSON
    with pytest.raises((InvalidInput, TypeError)):
        store.put(("a",), "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    assert kw_memory.get_all() == []


def test_async_twins(store: MemstreamStore):
    async def run():
        await store.aput(("u",), "k1", {"text": "async apples"})
        await store.aput(("u",), "k2", {"text": "async pears"})
        got = await store.aget(("u",), "k1")
        hits = await store.asearch(("u",), query="pears")
        spaces = await store.alist_namespaces()
        await store.adelete(("u",), "k1")
        return got, hits, spaces, await store.aget(("u",), "k1")

    got, hits, spaces, gone = asyncio.run(run())
    assert got.value == {"text": "async apples"}
    assert hits[0].key == "k2" and spaces == [("u",)] and gone is None


class State(TypedDict):
    user: str
    question: str
    answer: str


@dataclass
class Ctx:
    user_id: str


def test_in_a_compiled_graph_through_the_runtime(store: MemstreamStore):
    def remember(state: State, runtime: Runtime[Ctx]) -> dict:
        runtime.store.put(("memories", runtime.context.user_id), "fact",
                          {"text": f"{state['user']} is allergic to peanuts"})
        return {}

    def recall(state: State, runtime: Runtime[Ctx]) -> dict:
        hits = runtime.store.search(("memories", runtime.context.user_id),
                                    query=state["question"], limit=1)
        return {"answer": hits[0].value["text"] if hits else "nothing"}

    builder = StateGraph(State, context_schema=Ctx)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)
    out = graph.invoke({"user": "Ann", "question": "allergic peanuts", "answer": ""},
                       context=Ctx(user_id="u1"))
    assert out["answer"] == "Ann is allergic to peanuts"
    other = graph.invoke({"user": "Bo", "question": "allergic", "answer": ""},
                         context=Ctx(user_id="u2"))
    assert other["answer"] == "Bo is allergic to peanuts"  # u2's own memory, not u1's
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "u1"),
                                                           ("memories", "u2")]

    async def arun():
        return await graph.ainvoke({"user": "Cy", "question": "allergic", "answer": ""},
                                   context=Ctx(user_id="u3"))

    assert asyncio.run(arun())["answer"] == "Cy is allergic to peanuts"


def test_on_postgres_store_and_checkpointer_share_the_database(pg_url: str):
    from memstream.integrations.langgraph import MemstreamSaver

    with Memory(pg_url, embedder="none") as mem:
        store = MemstreamStore(mem)
        for i in range(3):
            store.put(("pg", "x"), f"k{i}", {"text": f"postgres item {i}", "i": i})
        assert store.get(("pg", "x"), "k1").value == {"text": "postgres item 1", "i": 1}
        assert sorted(h.key for h in store.search(("pg",), filter={"i": {"$gte": 1}})) == [
            "k1", "k2"]
        assert [h.key for h in store.search(("pg",), query="item 2", limit=1)] == ["k2"]
        assert store.list_namespaces() == [("pg", "x")]
        with MemstreamSaver(mem) as saver:
            builder = StateGraph(State)
            builder.add_node("n", lambda s: {"answer": "done"})
            builder.add_edge(START, "n")
            builder.add_edge("n", END)
            graph = builder.compile(checkpointer=saver, store=store)
            config = {"configurable": {"thread_id": "pg-thread"}}
            graph.invoke({"user": "u", "question": "q", "answer": ""}, config)
            assert graph.get_state(config).values["answer"] == "done"
