"""Mem0's API on memstream: the examples of Mem0's own quickstart documentation, with only the
import line changed, then each verb's shapes, scopes, filters, events and errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memstream import Memory as MsMemory
from memstream.compat.mem0 import AsyncMemory, Memory
from memstream.errors import InvalidFilter, InvalidInput, NotFound

# --- the quickstart examples (https://docs.mem0.ai/open-source/python-quickstart) --------------

QUICKSTART = '''
from memstream.compat.mem0 import Memory

m = Memory()

messages = [
    {"role": "user", "content": "Hi, I'm Alex. I love basketball and gaming."},
    {"role": "assistant", "content": "Hey Alex! I'll remember your interests."}
]
m.add(messages, user_id="alex")

results = m.search("What do you know about me?", filters={"user_id": "alex"})
print(results)
'''

QUICKSTART_V1 = '''
from memstream.compat.mem0 import Memory

m = Memory()

messages = [
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any recommendations?"},
    {"role": "assistant", "content": "How about a thriller movies? They can be quite engaging."},
    {"role": "user", "content": "I'm not a big fan of thriller movies but I love sci-fi movies."},
    {"role": "assistant", "content": "Got it! I'll avoid thriller recommendations and suggest sci-fi movies in the future."}
]

# Store inferred memories (default behavior)
result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"})

# Store raw messages without inference
# result = m.add(messages, user_id="alice", metadata={"category": "movie_recommendations"}, infer=False)

# Get all memories
all_memories = m.get_all(user_id="alice")

# Get a single memory by ID
specific_memory = m.get(all_memories["results"][0]["id"])

related_memories = m.search(query="What do you know about me?", user_id="alice")

result = m.update(memory_id=specific_memory["id"], data="I love India, it is my favorite country.")

history = m.history(memory_id=specific_memory["id"])

# Delete a memory by id
m.delete(memory_id=specific_memory["id"])
# Delete all memories for a user
m.delete_all(user_id="alice")

m.reset() # Reset all memories
'''

ASYNC = '''
import asyncio
from memstream.compat.mem0 import AsyncMemory

async def main():
    m = AsyncMemory()
    messages = [
        {"role": "user", "content": "Alice loves playing badminton"},
        {"role": "assistant", "content": "That's great! Alice is a fitness freak"},
    ]
    await m.add(messages, user_id="alice")
    found = await m.search("What is Alice's favorite sport?", user_id="alice")
    everything = await m.get_all(filters={"AND": [{"user_id": "alice"}]})
    return found, everything

found, everything = asyncio.run(main())
'''


@pytest.mark.slow
@pytest.mark.parametrize("example", [QUICKSTART, QUICKSTART_V1, ASYNC],
                         ids=["quickstart", "quickstart-v1", "async"])
def test_the_quickstart_runs_with_only_the_import_changed(example: str, tmp_path: Path,
                                                          monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # Memory() keeps memstream.db in the working folder
    monkeypatch.delenv("MEMSTREAM_URL", raising=False)
    scope: dict = {}
    exec(compile(example, "quickstart", "exec"), scope)
    if example is QUICKSTART:
        printed = capsys.readouterr().out
        assert "basketball" in printed and "'score'" in printed
        results = scope["results"]["results"]
        assert {r["user_id"] for r in results} == {"alex"}
        assert any("basketball" in r["memory"] for r in results)
    elif example is QUICKSTART_V1:
        history = scope["history"]
        assert [h["event"] for h in history] == ["ADD", "UPDATE"]
        assert history[1]["new_memory"] == "I love India, it is my favorite country."
        assert scope["specific_memory"]["metadata"] == {"category": "movie_recommendations"}
        assert "sci-fi" in " ".join(r["memory"] for r in scope["related_memories"]["results"])
        assert scope["m"].get_all(user_id="alice") == {"results": []}
    else:
        found, everything = scope["found"], scope["everything"]
        assert "badminton" in found["results"][0]["memory"]
        assert len(everything["results"]) == 2
    assert (tmp_path / "memstream.db").exists()


# --- the verbs ----------------------------------------------------------------------------------

@pytest.fixture
def m(kw_memory: MsMemory) -> Memory:
    return Memory(memory=kw_memory)


def test_add_without_an_llm_says_so(m: Memory):
    out = m.add("Likes to play cricket on weekends", user_id="alice",
                metadata={"category": "hobbies"})
    (item,) = out["results"]
    assert item["event"] == "ADD" and item["memory"] == "Likes to play cricket on weekends"
    assert out["inferred"] is False and "no LLM" in out["note"]
    assert "inferred" not in m.add("raw", user_id="alice", infer=False)
    got = m.get(item["id"])
    assert got["metadata"] == {"category": "hobbies"} and got["user_id"] == "alice"
    assert got["updated_at"] is None and len(got["hash"]) == 32
    assert m.get("no-such-id") is None


def test_scopes_filters_limits_and_threshold(m: Memory):
    m.add("tea in the morning", user_id="a", metadata={"n": 1, "tag": "drink"})
    m.add("tea at night", user_id="a", agent_id="bot", metadata={"n": 5})
    m.add("tea for b", user_id="b")
    assert len(m.search("tea", user_id="a")["results"]) == 2
    assert len(m.search("tea", filters={"user_id": "a", "agent_id": "bot"})["results"]) == 1
    assert [r["memory"] for r in m.search("tea", filters={"user_id": "a", "n": {"gte": 2}})[
        "results"]] == ["tea at night"]
    assert [r["memory"] for r in m.get_all(filters={"AND": [{"user_id": "a"}, {"tag": "*"}]})[
        "results"]] == ["tea in the morning"]
    assert len(m.get_all(filters={"user_id": "a", "OR": [{"n": 1}, {"n": 5}]})["results"]) == 2
    assert len(m.search("tea", user_id="a", top_k=1)["results"]) == 1
    assert len(m.search("tea", user_id="a", limit=1)["results"]) == 1
    assert m.search("tea", user_id="a", threshold=1.0)["results"] == []
    scores = [r["score"] for r in m.search("tea", user_id="a")["results"]]
    assert scores == sorted(scores, reverse=True)
    with pytest.raises(InvalidFilter, match="icontains"):
        m.search("tea", filters={"user_id": "a", "tag": {"icontains": "x"}})
    with pytest.raises(InvalidInput, match="threshold"):
        m.search("tea", user_id="a", threshold=2)
    with pytest.raises(InvalidInput, match="rerank_model"):
        m.search("tea", user_id="a", rerank_model="x")


def test_filters_never_widen_the_named_user(m: Memory):
    m.add("alice's secret plan", user_id="alice")
    m.add("bob's shopping list", user_id="bob")
    for widen in ({"user_id": "alice"}, {"AND": [{"user_id": "alice"}]},
                  {"AND": [{"user_id": "bob"}, {"user_id": "alice"}]}):
        with pytest.raises(InvalidFilter, match="bounded to user_id='bob'"):
            m.search("plan", user_id="bob", filters=widen)
        with pytest.raises(InvalidFilter, match="user_id"):
            m.get_all(user_id="bob", filters=widen)
    # naming the same user again is fine, and stays within bob's memories
    assert m.search("plan", user_id="bob", filters={"user_id": "bob"})["results"] == []
    found = m.get_all(user_id="bob", filters={"AND": [{"user_id": "bob"}]})["results"]
    assert [r["memory"] for r in found] == ["bob's shopping list"]


def test_bad_input_writes_nothing(m: Memory, kw_memory: MsMemory):
    with pytest.raises(InvalidInput, match="user_id, agent_id or run_id"):
        m.add("no scope")
    with pytest.raises(InvalidInput, match="spaces"):
        m.add("x", user_id="has space")
    with pytest.raises(InvalidInput, match="content"):
        m.add([{"role": "user", "content": "fine"}, {"role": "user"}], user_id="u")
    with pytest.raises(InvalidInput):
        m.add("x", user_id="u", metadata={"when": object()})
    with pytest.raises(InvalidInput, match="reset"):
        m.delete_all()
    with pytest.raises(InvalidInput, match="memory_type"):
        m.add("x", user_id="u", memory_type="procedural_memory")
    assert kw_memory.count() == 0
    for verb in (lambda: m.update("nope", "text"), lambda: m.delete("nope"),
                 lambda: m.history("nope")):
        with pytest.raises(NotFound):
            verb()


def test_update_delete_history_reset(m: Memory, kw_memory: MsMemory):
    (item,) = m.add("I like tea", user_id="u", infer=False)["results"]
    assert m.update(item["id"], "I like coffee") == {"message": "Memory updated successfully!"}
    assert m.get(item["id"])["memory"] == "I like coffee"
    assert m.get(item["id"])["updated_at"] is not None
    m.delete(item["id"])
    history = m.history(item["id"])
    assert [(h["event"], h["old_memory"], h["new_memory"], h["is_deleted"]) for h in history] \
        == [("ADD", None, "I like tea", 0), ("UPDATE", "I like tea", "I like coffee", 0),
            ("DELETE", "I like coffee", None, 1)]
    m.add("keep me?", user_id="v")
    kw_memory.add("another namespace", namespace="other")
    m.reset()
    assert m.get_all(user_id="v") == {"results": []}
    assert kw_memory.count(namespace="other") == 1  # reset erases this API's namespace only


def test_with_an_llm_facts_are_inferred(tmp_path: Path, chat):
    def respond(body: dict) -> str:
        prompt = body["messages"][0]["content"]
        if prompt.startswith("Extract the facts"):
            return json.dumps({"facts": ["The user loves sci-fi movies"]})
        return '{"action": "add", "target": null, "text": null}'

    chat.respond = respond
    config = {"llm": {"provider": "openai", "config": {"model": "small", "api_key": "k",
                                                       "openai_base_url": chat.url}},
              "vector_store": {"provider": "qdrant", "config": {"host": "localhost"}},
              "memstream": {"url": str(tmp_path / "m.db"), "embedder": "none"}}
    with Memory.from_config(config) as m:
        out = m.add([{"role": "user", "content": "I love sci-fi movies"}], user_id="alice",
                    metadata={"category": "movies"})
        assert [(r["event"], r["memory"]) for r in out["results"]] == [
            ("ADD", "The user loves sci-fi movies")]
        assert "inferred" not in out
        (got,) = m.get_all(user_id="alice")["results"]
        assert got["metadata"] == {"category": "movies"}
    assert chat.requests and chat.requests[0]["auth"] == "Bearer k"


def test_async_twin(kw_memory: MsMemory):
    am = AsyncMemory(memory=kw_memory)

    async def run():
        added = await am.add("async tea", user_id="u", infer=False)
        rid = added["results"][0]["id"]
        await am.update(rid, "async coffee")
        return (await am.search("coffee", user_id="u"), await am.history(rid),
                await am.get(rid), await am.delete_all(user_id="u"),
                await am.get_all(user_id="u"))

    found, history, got, deleted, after = asyncio.run(run())
    assert found["results"][0]["memory"] == "async coffee"
    assert [h["event"] for h in history] == ["ADD", "UPDATE"] and got["memory"] == "async coffee"
    assert deleted == {"message": "Memories deleted successfully!"} and after == {"results": []}
