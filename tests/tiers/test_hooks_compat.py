"""Hooks around act(), the compatible agent-memory API (its documented examples, run with only
the import changed), bad input, Redis down, and two processes sharing agents."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from memstream import Memory
from memstream.compat.agent_memory import (
    ActionResult,
    AgentMemoryAPI,
    AgentState,
    BaseAgent,
    MemoryAPIException,
    MemoryConfig,
    MemoryRetrievalException,
    MemoryStoreException,
    RedisSTMConfig,
    cacheable,
    install_memory_hooks,
    with_memory,
)
from memstream.tiers import TierDegradedWarning, TieredMemory

from ..machine import redis


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert redis() is None
    api = AgentMemoryAPI(MemoryConfig(cleanup_interval=100,
                                      stm_config={"memory_limit": 10000}))
    yield api
    api.tiered.clear("agent-123")
    api.memory.close()


def test_documented_examples_run(api: AgentMemoryAPI):
    api.store_agent_state(
        agent_id="agent-123",
        state_data={"position": [10, 20], "health": 0.85, "inventory": {"wood": 5, "stone": 2}},
        step_number=1234,
        priority=0.75,
    )
    api.store_agent_interaction(
        agent_id="agent-123",
        interaction_data={"interaction_type": "conversation", "other_agent_id": "agent-456",
                          "content": "Hello, do you have any wood to trade?", "sentiment": 0.6},
        step_number=1235,
    )
    api.store_agent_action(
        agent_id="agent-123",
        action_data={"action_type": "trade", "target_agent": "agent-456",
                     "items_given": {"wood": 2}, "items_received": {"stone": 1},
                     "outcome": "success"},
        step_number=1236,
    )
    memory = api.retrieve_state_by_id(agent_id="agent-123",
                                      memory_id="agent-123-1234-1679233344")
    assert memory is None  # that id was never issued here
    recent_states = api.retrieve_recent_states(agent_id="agent-123", count=5,
                                               memory_type="state")
    assert [m["step_number"] for m in recent_states] == [1234]
    current_state = {"position": [12, 22], "health": 0.8}
    similar_states = api.retrieve_similar_states(agent_id="agent-123",
                                                 query_state=current_state, k=5)
    assert similar_states[0]["metadata"]["memory_type"] == "state"
    memories = api.retrieve_by_time_range(agent_id="agent-123", start_step=1000, end_step=2000,
                                          memory_type="action")
    assert [m["contents"]["action_type"] for m in memories] == ["trade"]
    trading_memories = api.retrieve_by_attributes(
        agent_id="agent-123", attributes={"action_type": "trade", "outcome": "success"},
        memory_type="action")
    assert len(trading_memories) == 1
    api.force_memory_maintenance(agent_id="agent-123")
    mid = trading_memories[0]["memory_id"]
    assert api.retrieve_state_by_id("agent-123", mid)["memory_id"] == mid
    api.set_importance_score(agent_id="agent-123", memory_id=mid, importance_score=0.9)
    api.configure_memory_system({"cleanup_interval": 150,
                                 "stm_config": {"memory_limit": 15000, "ttl": 7200}})
    stats = api.get_memory_statistics(agent_id="agent-123")
    assert stats["total_memories"] == 3
    assert stats["memory_type_distribution"] == {"state": 1, "action": 1, "interaction": 1}
    snapshots = api.get_memory_snapshots(agent_id="agent-123", steps=[1000, 1234, 3000])
    assert snapshots[1000] is None and snapshots[1234]["step_number"] == 1234
    health = api.get_attribute_change_history(agent_id="agent-123", attribute_name="health",
                                              start_step=1000, end_step=2000)
    assert health == [{"step_number": 1234, "value": 0.85}]
    embedding = similar_states[0]["embeddings"]["full_vector"]
    similar = api.search_by_embedding(agent_id="agent-123", query_embedding=embedding, k=10,
                                      memory_tiers=["stm", "im"])
    assert similar[0]["step_number"] == 1234
    conversation = api.search_by_content(agent_id="agent-123", content_query="trade wood", k=5)
    assert "interaction" in {m["metadata"]["memory_type"] for m in conversation}
    low = api.search_by_content(agent_id="agent-123",
                                content_query={"health": {"$lt": 0.9}}, k=5)
    assert [m["step_number"] for m in low] == [1234]
    space = api.get_memory_space("agent-123")
    assert len(space.retrieve_recent_states(2)) == 2
    space.set_cache_ttl(5)
    space.clear_cache()
    api.clear_agent_memory(agent_id="agent-123", memory_tiers=["stm", "im"])
    assert api.get_memory_statistics("agent-123")["tiers"]["stm"] == 0


def test_memory_entry_structure(api: AgentMemoryAPI):
    api.store_agent_state("agent-123", AgentState("agent-123", 3, health=0.5).as_dict(), 3)
    (entry,) = api.retrieve_recent_states("agent-123", 1)
    assert set(entry) >= {"memory_id", "agent_id", "step_number", "timestamp", "contents",
                          "metadata", "embeddings"}
    assert set(entry["metadata"]) >= {"creation_time", "last_access_time",
                                      "compression_level", "importance_score",
                                      "retrieval_count", "memory_type"}


def test_bad_input_is_refused_before_work(api: AgentMemoryAPI):
    with pytest.raises(MemoryStoreException):
        api.store_agent_state("", {"x": 1}, 1)
    with pytest.raises(MemoryStoreException):
        api.store_agent_state("agent-123", {"x": object()}, 1)
    with pytest.raises(MemoryStoreException):
        api.store_agent_state("agent-123", {"x": 1}, -3)
    with pytest.raises(MemoryRetrievalException):
        api.retrieve_by_time_range("agent-123", 10, 2)
    with pytest.raises(MemoryRetrievalException):
        api.retrieve_recent_states("agent-123", 5, memory_type="dream")
    assert issubclass(MemoryStoreException, MemoryAPIException)
    assert api.retrieve_by_time_range("unknown-agent", 0, 10) == []
    assert api.get_memory_statistics("agent-123")["total_memories"] == 0


def test_redis_down_degrades_without_losing_writes(tmp_path: Path):
    cfg = MemoryConfig(stm_config=RedisSTMConfig(port=1), ltm_config={"db_path": str(
        tmp_path / "ltm.db")})
    with pytest.warns(TierDegradedWarning):
        api = AgentMemoryAPI(cfg)
    api.store_agent_state("a", {"health": 1.0}, 1)
    assert api.retrieve_by_time_range("a", 0, 5)[0]["contents"]["health"] == 1.0
    with Memory(tmp_path / "ltm.db", embedder="none") as mem:
        with pytest.warns(TierDegradedWarning):  # already down at start
            tm = TieredMemory(mem, redis_url="redis://127.0.0.1:1/0")
        assert tm.degraded
        tm.store("a", "state", {"health": 0.5}, step=2)
        assert [e["step_number"] for e in tm.step_range("a", 0, 5)] == [1, 2]
    api.memory.close()


def test_hooks_record_act_and_never_break_it(tmp_path: Path, caplog):
    with Memory(tmp_path / "h.db", embedder="none") as mem:
        tm = TieredMemory(mem)

        @install_memory_hooks
        class Forager(BaseAgent):
            def act(self, target: str) -> ActionResult:
                self.step_number += 1
                self.food = getattr(self, "food", 0) + 2
                return ActionResult("forage", {"target": target}, reward=2.0)

        agent = Forager("fox", memory=tm)
        result = agent.act("berries")
        assert result.reward == 2.0
        entries = tm.step_range("fox", 0, 10)
        kinds = [e["metadata"]["memory_type"] for e in entries]
        assert kinds == ["state", "action", "state"]
        action = entries[1]["contents"]
        assert action["action_type"] == "act" and action["reward"] == 2.0
        assert entries[2]["contents"]["_changes"]["food"] == {"before": None, "after": 2}

        class Broken:
            step_number = 0

            def get_state(self):
                raise RuntimeError("sensor offline")

            def act(self):
                return "still acting"

        broken = with_memory(Broken(), "owl", tm)
        with caplog.at_level(logging.WARNING, logger="memstream.hooks"):
            assert broken.act() == "still acting"
        assert "sensor offline" in caplog.text
        assert [e["metadata"]["memory_type"] for e in tm.step_range("owl", 0, 5)] == []


def test_cacheable_expires():
    calls = []

    @cacheable(ttl=0.2)
    def square(x: int) -> int:
        calls.append(x)
        return x * x

    assert square(3) == square(3) == 9 and calls == [3]
    import time

    time.sleep(0.25)
    square(3)
    assert calls == [3, 3]


WORKER = r"""
import sys
from memstream import Memory
from memstream.tiers import TieredMemory
with Memory(sys.argv[1], embedder="none") as mem:
    tm = TieredMemory(mem, redis_url="redis://127.0.0.1:6379/0", prefix=sys.argv[2])
    for step in range(50):
        tm.store_many([(f"agent{a}", "state", {"by": sys.argv[3], "step": step}, step, 1.0)
                       for a in range(4)])
"""


def test_two_processes_share_agents_through_redis_and_the_store(tmp_path: Path,
                                                                redis_prefix: str):
    prefix = redis_prefix
    db = tmp_path / "shared.db"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(db), prefix, name])
             for name in ("left", "right")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with Memory(db, embedder="none") as mem:
        tm = TieredMemory(mem, redis_url="redis://127.0.0.1:6379/0", prefix=prefix)
        for a in range(4):
            entries = tm.step_range(f"agent{a}", 0, 100)
            assert len(entries) == 100
            assert {e["contents"]["by"] for e in entries if
                    e["metadata"]["compression_level"] == 0} == {"left", "right"}
