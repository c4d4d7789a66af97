"""Tier transitions, compression, promotion, TTLs, capacity, merged ordering, de-duplication,
with the tiers in this process and in the real Redis server."""

from __future__ import annotations

import time

import numpy as np
import pytest

from memstream import InvalidInput, Memory
from memstream.tiers import (
    TierConfig,
    TierDegradedWarning,
    TieredMemory,
    compress,
    state_vector,
    tiered,
)
from memstream.tiers.features import leaves, long_term, unit_rows

from ..redis_server import REDIS_URL, RedisRelay


def state(i: int, **extra):
    return {"health": 100 - i, "position": {"x": i, "y": i * 2, "location": "forest"},
            "inventory": ["sword", "map", "gem", "rope"], "mood": "calm", **extra}


def test_vectors_are_deterministic_and_similarity_follows_values():
    a, b, c = state(1), state(2), {"health": 5, "position": {"location": "village"}}
    va = state_vector(a)
    assert np.array_equal(va, state_vector(dict(a)))
    assert np.isclose(np.linalg.norm(va), 1.0)
    assert float(va @ state_vector(b)) > float(va @ state_vector(c))


def test_compression_levels():
    full = {"health": 0.87654, "note": "x" * 100, "position": {"x": 1.23456, "deep": {"a": 1}},
            "inventory": [1, 2, 3, 4, 5]}
    im = compress(full, 1)
    assert im == {"health": 0.88, "note": "x" * 64, "position": {"x": 1.23},
                  "inventory": [1, 2, 3]}
    ltm = compress(full, 2)
    assert ltm["abstract"].startswith("health=0.9; note=" + "x" * 24)
    assert ltm["health"] == 0.9 and len(ltm) <= 7


def test_long_term_form_and_vector_are_those_of_their_definitions():
    """``long_term`` (the write path's shortcut, hashing the abstract piece by piece) gives
    exactly ``compress(.., 2)`` and the vector of its leaves, also when the abstract is cut
    inside a piece, and on a second pass through its cache."""
    cases = [state(i) for i in range(5)] + [
        {}, {"a": 1}, {"flag": True, "none": None},
        {"k" * 50: "v" * 200, "b": "x y z", "c" * 100: 3, "d": [{"q": 1}]},
        {f"field_{i}": f"text {i} " * 5 for i in range(10)}]
    for _ in range(2):
        for case in cases:
            form, raw = long_term(case, list(leaves(case)))
            assert form == compress(case, 2)
            assert np.allclose(unit_rows([raw])[0], state_vector(compress(case, 2)), atol=1e-6)


def test_a_large_batch_is_stored_whole_and_read_back(store_memory: Memory, backend):
    """A step of many agents: one transaction, ids in order, STM holds every entry in full
    as soon as store_many returns (with Redis, the copy runs in the background and reads
    wait for it)."""
    tm = TieredMemory(store_memory, config=TierConfig(cleanup_interval=10_000), **backend)
    items = [(f"a{i % 7}", "state", state(i), i, 0.5) for i in range(600)]
    ids = tm.store_many(items)
    assert len(set(ids)) == 600 and ids == sorted(ids)
    mine = [i for i in range(600) if i % 7 == 3]
    entries = tm.step_range("a3", 0, 1000)
    assert [e["contents"] for e in entries] == [state(i) for i in mine]
    assert {e["metadata"]["tier"] for e in entries} == {"stm"}
    with pytest.raises(InvalidInput, match="item 600"):
        tm.store_many([*items, ("a1", "state", {"x": {1}}, 1, 0.5)])
    assert tm.stats("a3")["tiers"] == {"stm": len(mine), "im": 0, "ltm": len(mine)}


def test_spans_tell_maintenance_which_agents_to_visit(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, config=TierConfig(stm_limit=3, cleanup_interval=10_000),
                      **backend)
    tm.store_many([("busy", "state", state(i), i, 0.5) for i in range(5)] +
                  [("calm", "state", state(i), 10 + i, 0.5) for i in range(2)])
    assert tm.stm.spans(["busy", "calm", "nobody"]) == {"busy": (5, 0, 4), "calm": (2, 10, 11)}
    assert tm.maintain() == {"moved_to_im": 2, "left_im": 0}  # busy's two oldest only
    assert tm.stm.spans(["busy", "calm"]) == {"busy": (3, 2, 4), "calm": (2, 10, 11)}
    assert tm.im.spans(["busy"]) == {"busy": (2, 0, 1)}


def test_redis_failing_under_a_background_copy_degrades_and_keeps_the_batch(
        store_memory: Memory, redis_prefix: str):
    import redis

    prefix = redis_prefix
    tm = TieredMemory(store_memory, config=TierConfig(cleanup_interval=10_000),
                      redis_url=REDIS_URL, prefix=prefix)
    tm.store("a0", "state", state(0), step=0)
    gone = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    tm.stm._r = gone  # the server stops answering: a real refused connection
    tm.stm._put_script = gone.register_script("return 0")
    tm.store_many([(f"a{i % 3}", "state", state(i), i, 0.5) for i in range(1, 300)])
    with pytest.warns(TierDegradedWarning):
        entries = tm.step_range("a0", 0, 1000)
    assert [e["step_number"] for e in entries] == list(range(0, 300, 3))  # from LTM
    assert tm.degraded


def test_tiers_come_back_after_a_redis_outage(store_memory: Memory, redis_relay: RedisRelay,
                                              redis_prefix: str):
    """While Redis cannot be reached, writes go to the durable store alone; once it answers
    again (tried every ``retry_interval`` seconds) STM is used again, and reads serve what was
    written meanwhile in its LTM form."""
    tm = TieredMemory(store_memory, config=TierConfig(retry_interval=0.3),
                      redis_url=redis_relay.url, prefix=redis_prefix)
    tm.store("a", "state", state(1), step=1)
    redis_relay.cut()
    with pytest.warns(TierDegradedWarning):
        tm.store("a", "state", state(2), step=2)
    assert tm.degraded
    redis_relay.start()
    tm.store("a", "state", state(3), step=3)  # before the next attempt: still degraded
    assert tm.degraded
    time.sleep(0.4)
    tm.store("a", "state", state(4), step=4)
    assert not tm.degraded
    entries = tm.step_range("a", 0, 10)
    assert [e["step_number"] for e in entries] == [1, 2, 3, 4]
    assert [e["metadata"]["tier"] for e in entries] == ["stm", "ltm", "ltm", "stm"]
    best, _ = tm.similar("a", state(4), k=4)[0]
    assert best["memory_id"] == entries[-1]["memory_id"] and best["metadata"]["tier"] == "stm"


def test_transitions_capacity_and_merged_order(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, config=TierConfig(stm_limit=5, im_limit=4,
                                                      cleanup_interval=1000), **backend)
    ids = [tm.store("a1", "state", state(i), step=i)["memory_id"] for i in range(12)]
    assert tm.maintain("a1") == {"moved_to_im": 7, "left_im": 3}
    stats = tm.stats("a1")
    assert stats["tiers"] == {"stm": 5, "im": 4, "ltm": 12}
    entries = tm.step_range("a1", 0, 100)
    assert [e["memory_id"] for e in entries] == ids  # each once, oldest first
    levels = [e["metadata"]["compression_level"] for e in entries]
    assert levels == [2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert entries[3]["contents"]["inventory"] == ["sword", "map", "gem"]  # IM form
    assert "abstract" in entries[0]["contents"]  # LTM form
    assert entries[-1]["contents"] == state(11)  # full detail in STM
    # every form names its tier and carries the vector(s) of its resolution
    assert [e["metadata"]["tier"] for e in entries] == ["ltm"] * 3 + ["im"] * 4 + ["stm"] * 5
    assert [sorted(e["embeddings"]) for e in entries[2:4] + entries[-1:]] == [
        ["abstract_vector"], ["compressed_vector"], ["full_vector"]]
    assert np.allclose(entries[0]["embeddings"]["abstract_vector"],
                       state_vector(compress(state(0), 2)), atol=1e-6)
    ltm_hit = dict(tm.similar("a1", state(1), k=12, tiers=["ltm"])[0][0])
    assert ltm_hit["memory_id"] == ids[1] and ltm_hit["metadata"]["tier"] == "ltm"
    assert np.allclose(ltm_hit["embeddings"]["abstract_vector"],
                       state_vector(compress(state(1), 2)), atol=1e-6)
    assert [e["step_number"] for e in tm.step_range("a1", 3, 5)] == [3, 4, 5]
    assert [e["step_number"] for e in tm.recent("a1", 3)] == [11, 10, 9]
    # the durable store kept every record in full
    steps = store_memory.store.records.select(tm.selection("a1", None), order="step")
    assert [r.data for r in steps] == [state(i) for i in range(12)]


def test_low_priority_moves_first(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, config=TierConfig(stm_limit=3, cleanup_interval=1000),
                      **backend)
    for i in range(5):
        tm.store("a", "state", state(i), step=i, priority=0.1 if i == 3 else 0.9)
    tm.maintain("a")
    stm_steps = sorted(s for s, _ in tm.stm.index("a"))
    assert 3 not in stm_steps and len(stm_steps) == 3  # the unimportant one left first


def test_promotion_after_repeated_reads(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, config=TierConfig(stm_limit=2, cleanup_interval=1000,
                                                      promote_after=3), **backend)
    for i in range(4):
        tm.store("a", "state", state(i), step=i)
    tm.maintain("a")
    assert tm.step_range("a", 0, 0)[0]["metadata"]["compression_level"] == 1
    tm.step_range("a", 0, 0)
    tm.step_range("a", 0, 0)  # the third read promotes it
    entry = tm.step_range("a", 0, 0)[0]
    assert entry["metadata"]["compression_level"] == 0 and entry["contents"] == state(0)


def test_promotion_counts_are_bounded(store_memory: Memory, monkeypatch: pytest.MonkeyPatch):
    """A long run reads many entries from IM and LTM once: the counts kept for promotion stay
    under a bound, forgetting those read least recently."""
    monkeypatch.setattr(tiered, "_READS_KEPT", 3)
    tm = TieredMemory(store_memory, config=TierConfig(stm_limit=1, im_limit=1,
                                                      cleanup_interval=1000, promote_after=2))
    for i in range(6):
        tm.store("a", "state", state(i), step=i)
    tm.maintain("a")
    for step in (0, 1, 2, 3):  # four entries read from LTM once: step 0's count goes
        assert tm.step_range("a", step, step)[0]["metadata"]["tier"] == "ltm"
    assert len(tm._ltm_reads) == 3
    tm.step_range("a", 1, 1)  # a second read promotes it
    assert tm.step_range("a", 1, 1)[0]["metadata"]["tier"] == "stm"
    tm.step_range("a", 0, 0)  # its count was forgotten: this is a first read again, so
    assert tm.step_range("a", 0, 0)[0]["metadata"]["tier"] == "ltm"  # no promotion yet
    assert tm.step_range("a", 0, 0)[0]["metadata"]["tier"] == "stm"


def test_ttl_expires_cache_not_memory(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, config=TierConfig(stm_ttl=1), **backend)
    tm.store("a", "action", {"action_type": "dig"}, step=1)
    kept = tm.store("a", "action", {"action_type": "rest"}, step=2, priority=0.5)
    assert len(tm.stm.index("a")) == 2
    time.sleep(0.6)
    tm.stm.put([tm.stm.get([kept["memory_id"]])[kept["memory_id"]]])  # its TTL starts again
    time.sleep(0.7)
    assert [i for _, i in tm.stm.index("a")] == [kept["memory_id"]]
    ids, raw = tm.stm.vectors("a")  # the expired entry's vector is not served either
    assert ids == [kept["memory_id"]] and len(raw) == 2 * 128
    entries = tm.step_range("a", 0, 10)
    assert [e["metadata"]["memory_type"] for e in entries] == ["action", "action"]
    assert [e["metadata"]["tier"] for e in entries] == ["ltm", "stm"]
    hits = tm.similar("a", {"action_type": "dig"}, k=2, kind="action")
    assert [(e["contents"].get("action_type"), e["metadata"]["tier"]) for e, _ in hits] == [
        ("dig", "ltm"), ("rest", "stm")]


def test_queries_similar_attributes_content(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, config=TierConfig(stm_limit=10, cleanup_interval=1000),
                      **backend)
    for i in range(30):
        loc = "village" if i % 3 == 0 else "forest"
        tm.store("a", "state", {"health": i, "position": {"location": loc}}, step=i)
    tm.store("a", "interaction", {"content": "traded wood for a shiny potion"}, step=30)
    tm.store("b", "state", {"health": 7, "position": {"location": "village"}}, step=7)
    tm.maintain("a")
    hits = tm.similar("a", {"health": 7, "position": {"location": "forest"}}, k=3,
                      kind="state")
    assert hits[0][0]["step_number"] == 7 and hits[0][0]["agent_id"] == "a"
    assert len({e["memory_id"] for e, _ in hits}) == 3
    assert all(hits[i][1] >= hits[i + 1][1] for i in range(2))
    vec = state_vector({"health": 25, "position": {"location": "forest"}})
    for tiers in (["stm"], ["im"], ["ltm"]):
        assert tm.similar("a", vec.tolist(), k=2, tiers=tiers)
    village = tm.by_attributes("a", {"position.location": "village"})
    assert [e["step_number"] for e in village] == list(range(0, 30, 3))
    low = tm.by_attributes("a", {"health": {"$lt": 3}}, kind="state")
    assert [e["step_number"] for e in low] == [0, 1, 2]
    (found,) = tm.content_search("a", "potion", k=5)
    assert found["metadata"]["memory_type"] == "interaction"


def test_similar_scores_an_entry_in_the_most_detailed_tier_holding_it(store_memory: Memory,
                                                                      backend):
    """Two states share their long-term abstract (the first six fields) and differ after it:
    LTM alone cannot tell them apart, STM can, and an entry held in STM is judged there."""
    tm = TieredMemory(store_memory, **backend)
    head = {"health": 5, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    kept = tm.store("x", "state", {**head, "secret": "alpha"}, step=1)
    query = {**head, "secret": "omega"}
    assert compress(query, 2) == compress(kept["contents"], 2)
    ((ltm_only, ltm_score),) = tm.similar("x", query, k=1, tiers=["ltm"])
    assert ltm_only["metadata"]["tier"] == "ltm" and ltm_score == pytest.approx(1.0, abs=1e-5)
    ((entry, score),) = tm.similar("x", query, k=1)
    assert entry["memory_id"] == kept["memory_id"]
    assert entry["metadata"]["tier"] == "stm" and entry["contents"]["secret"] == "alpha"
    assert score == pytest.approx(0.5)  # one field differs, as a category: distance 1


def test_bad_input(store_memory: Memory):
    tm = TieredMemory(store_memory)
    tm.store("a", "state", {"x": 1}, step=1)
    for bad in [("a", "state", {"x": 1}, -1, 1.0), ("a", "mood", {"x": 1}, 1, 1.0),
                ("a", "state", {"x": {1, 2}}, 1, 1.0), ("", "state", {"x": 1}, 1, 1.0),
                ("a", "state", {"x": 1}, 1, 2.0), ("a", "state", [1, 2], 1, 1.0)]:
        with pytest.raises(InvalidInput):
            tm.store(*bad)
    for start, end in ((5, 2), (-1, 3)):
        with pytest.raises(InvalidInput):
            tm.step_range("a", start, end)
    assert tm.step_range("nobody", 0, 10) == []
    assert tm.stats("a")["total_memories"] == 1


def test_one_instance_per_scope_in_a_process(store_memory: Memory):
    from memstream.episodes import EpisodeMemory
    from memstream.learning import Learner

    tm = TieredMemory.of(store_memory)
    assert TieredMemory.of(store_memory, store_memory.config.namespace) is tm
    assert TieredMemory.of(store_memory, "other") is not tm
    assert Learner.of(store_memory, "ns") is Learner.of(store_memory, "ns")
    assert Learner.of(store_memory) is not Learner.of(store_memory, "ns")
    assert EpisodeMemory.of(store_memory, "a") is EpisodeMemory.of(store_memory, "a")
    assert EpisodeMemory.of(store_memory, "a") is not EpisodeMemory.of(store_memory, "b")
