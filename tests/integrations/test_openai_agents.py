"""The OpenAI Agents SDK's Runner with a memstream session: history kept across runs and
processes, each turn a searchable memory, the Session protocol's four methods."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool
from agents.memory import Session

from memstream import Memory
from memstream.errors import InvalidInput
from memstream.integrations.openai_agents import MemstreamSession

from .agents_model import RecallModel

OFFLINE = RunConfig(tracing_disabled=True)


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _agent(model: RecallModel) -> Agent:
    return Agent(name="assistant", instructions="Be brief.", model=model, tools=[weather])


def test_the_runner_remembers_across_runs_and_processes(tmp_path: Path):
    db = tmp_path / "agent.db"

    async def first() -> None:
        with Memory(db, embedder="none") as mem:
            session = MemstreamSession("chat-1", mem, user_id="ann")
            assert isinstance(session, Session)
            await Runner.run(_agent(RecallModel()), "Hello, I am Ann", session=session,
                             run_config=OFFLINE)
            out = await Runner.run(_agent(RecallModel()), "What is the weather in Oslo?",
                                   session=session, run_config=OFFLINE)
            assert out.final_output == "The weather: sunny in Oslo"

    async def second() -> tuple[str, list, list]:
        with Memory(db, embedder="none") as mem:  # a new process would open it the same way
            model = RecallModel()
            session = MemstreamSession("chat-1", mem, user_id="ann")
            out = await Runner.run(_agent(model), "What is my name?", session=session,
                                   run_config=OFFLINE)
            return out.final_output, model.inputs[0], await session.get_items()

    asyncio.run(first())
    answer, seen, items = asyncio.run(second())
    assert answer == "You are Ann."
    # the model was given the whole history: 2 + 4 items of the first runs, then the question
    assert len(seen) == 7
    kinds = [i.get("type", "message") for i in items]
    assert kinds == ["message", "message", "message", "function_call", "function_call_output",
                     "message", "message", "message"]
    assert items[0] == {"content": "Hello, I am Ann", "role": "user"}
    with Memory(db, embedder="none") as mem:
        hits = mem.search("weather Oslo", user_id="ann")
        assert hits and hits[0].record.run_id == "chat-1"
        assert {h.record.kind for h in hits} <= {"message", "session_item"}


def test_protocol_methods(tmp_path: Path):
    async def run():
        with Memory(tmp_path / "s.db", embedder="none") as mem:
            a = MemstreamSession("a", mem)
            b = MemstreamSession("b", mem)
            await a.add_items([{"role": "user", "content": f"m{i}"} for i in range(5)])
            await b.add_items([{"role": "user", "content": "other"}])
            assert [i["content"] for i in await a.get_items(limit=2)] == ["m3", "m4"]
            assert (await a.pop_item())["content"] == "m4"
            await a.add_items([{"role": "assistant", "content": "m5"}])
            assert [i["content"] for i in await a.get_items()] == ["m0", "m1", "m2", "m3", "m5"]
            # identical messages are two items, not one
            await a.add_items([{"role": "user", "content": "ok"}, {"role": "user",
                                                                  "content": "ok"}])
            assert len(await a.get_items()) == 7
            await a.clear_session()
            assert await a.get_items() == [] and await a.pop_item() is None
            assert [i["content"] for i in await b.get_items()] == ["other"]
            # records of the same run that are not session items are left alone
            mem.add("a note about run a", run_id="a")
            assert await a.get_items() == []
            assert mem.count(run_id="a") == 1

    asyncio.run(run())


def test_bad_items_are_refused_and_nothing_is_written(tmp_path: Path):
    async def run():
        with Memory(tmp_path / "s.db", embedder="none") as mem:
            s = MemstreamSession("x", mem)
            with pytest.raises(InvalidInput):
                await s.add_items([{"role": "user", "content": "fine"}, object()])
            with pytest.raises(InvalidInput):
                await s.add_items([{"role": "user", "content": {1, 2}}])
            assert await s.get_items() == []
            with pytest.raises(InvalidInput):
                MemstreamSession("", mem)

    asyncio.run(run())
