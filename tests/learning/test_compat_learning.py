from __future__ import annotations

import numpy as np

from memstream import Memory
from memstream.compat.learning import LearningProtocol, MemoryScope, Outcome


def test_facade_behaviour(kw_memory: Memory):
    scopes = {"helena": MemoryScope(agent_name="helena", can_learn=["testing"],
                                    cannot_learn=[], min_occurrences_for_heuristic=3)}
    proto = LearningProtocol(storage=kw_memory, scopes=scopes)
    out = proto.learn(agent="helena", project_id="p", task="Test login form", outcome=True,
                      strategy_used="Tested empty fields first, then invalid formats",
                      duration_ms=30000, feedback="good")
    assert isinstance(out, Outcome)
    assert (out.task_type, out.success, out.duration_ms, out.user_feedback) == (
        "testing", True, 30000, "good")
    for _ in range(2):
        proto.learn("helena", "p", "Test login form", True,
                    "Tested empty fields first, then invalid formats")
    ctx = proto.retrieve("Test login form", "helena")
    assert ctx.heuristics[0].confidence == 1.0
    assert proto.add_preference("u", "c", "p", "explicit_instruction").confidence == 1.0
    assert proto.add_domain_knowledge("helena", "p", "testing", "f", "x").confidence == 0.8
    assert proto.forget("p", older_than_days=0, below_confidence=0.0) == 3


def test_facade_with_an_encode_embedder(kw_memory: Memory):
    class Encoder:  # the shape other libraries' embedding providers have
        def encode(self, text: str) -> list[float]:
            return [1.0, float("retry" in text), 0.0]

    proto = LearningProtocol(kw_memory, {}, embedder=Encoder(), similarity_threshold=0.99)
    assert proto.learner.similar("retry fast", "retry slowly later")
    assert not proto.learner.similar("retry fast", "give up")
    assert np.isclose(proto.similarity_threshold, 0.99)


# --- code written for the original, unchanged apart from the import --------------------------

from datetime import datetime, timedelta, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from memstream.compat.learning import (  # noqa: E402
    ALMAError,
    AntiPattern,
    DomainKnowledge,
    Heuristic,
    MemoryStorage,
    ScopeViolationError,
    SQLiteStorage,
    UserPreference,
)


@pytest.fixture
def storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSTREAM_EMBEDDER", "none")  # keyword search only: fast
    store = SQLiteStorage(db_path=tmp_path / ".alma" / "alma.db")
    yield store
    store.close()


def test_the_protocol_writes_through_the_storage_api(storage: SQLiteStorage):
    scopes = {"helena": MemoryScope(agent_name="helena", can_learn=["testing"],
                                    cannot_learn=["billing"], min_occurrences_for_heuristic=3)}
    protocol = LearningProtocol(storage=storage, scopes=scopes)
    assert protocol.storage is storage
    for _ in range(3):
        protocol.learn(agent="helena", project_id="shop", task="Test the login form",
                       outcome=True, strategy_used="Tested empty fields first, then formats")
    protocol.learn("helena", "shop", "Test the login form", False, "clicked around randomly",
                   error_message="Timeout")
    protocol.learn("helena", "shop", "Test the login form", False, "clicked around randomly",
                   error_message="Timeout waiting for element")
    heuristics = storage.get_heuristics(project_id="shop", agent="helena", top_k=5)
    assert [(h.strategy, h.confidence) for h in heuristics] == [
        ("Tested empty fields first, then formats", 1.0)]
    assert heuristics[0].success_rate == 1.0 and heuristics[0].metadata == {}
    outcomes = storage.get_outcomes(project_id="shop", agent="helena", task_type="testing",
                                    top_k=10)
    assert len(outcomes) == 5 and outcomes[0].success is False  # newest first
    assert len(storage.get_outcomes("shop", "helena", success_only=True, top_k=10)) == 3
    (anti,) = storage.get_anti_patterns(project_id="shop", agent="helena")
    assert anti.pattern == "clicked around randomly" and anti.why_bad.startswith("Timeout")
    with pytest.raises(ScopeViolationError):
        protocol.learn("helena", "shop", "Fix the invoice", True, "x", task_type="billing")
    with pytest.raises(ALMAError):  # the original's base class catches it too
        protocol.add_domain_knowledge("helena", "shop", "billing", "VAT is 20%", "user_stated")
    protocol.add_preference("u1", "communication", "No emojis", "explicit_instruction")
    protocol.add_domain_knowledge("helena", "shop", "testing", "Login uses JWT", "user_stated")
    (pref,) = storage.get_user_preferences(user_id="u1", category="communication")
    assert (pref.preference, pref.confidence) == ("No emojis", 1.0)
    (fact,) = storage.get_domain_knowledge(project_id="shop", agent="helena", domain="testing")
    assert fact.fact == "Login uses JWT"
    stats = storage.get_stats(project_id="shop", agent="helena")
    assert (stats["heuristics_count"], stats["outcomes_count"], stats["anti_patterns_count"],
            stats["domain_knowledge_count"]) == (1, 5, 1, 1)
    assert protocol.forget(project_id="shop", older_than_days=0, below_confidence=0.0) == 5


def test_a_storage_backend_used_directly(storage: SQLiteStorage):
    now = datetime.now(timezone.utc)  # noqa: UP017 (the original's code, as written)
    h = Heuristic(id="heur_1", agent="helena", project_id="shop",
                  condition="form with required fields", strategy="happy path first",
                  confidence=0.6, occurrence_count=5, success_count=3, last_validated=now,
                  created_at=now, embedding=[1.0, 0.0, 0.0], metadata={"run_id": "r1"})
    assert storage.save_heuristic(h) == "heur_1"
    other = Heuristic(id="heur_2", agent="helena", project_id="shop", condition="c",
                      strategy="edge cases first", confidence=0.9, occurrence_count=3,
                      success_count=3, last_validated=now, created_at=now,
                      embedding=[0.0, 1.0, 0.0])
    storage.save_heuristics([other])
    assert [x.id for x in storage.get_heuristics("shop")] == ["heur_2", "heur_1"]  # confidence
    assert [x.id for x in storage.get_heuristics("shop", embedding=[0.9, 0.1, 0.0])] == [
        "heur_1", "heur_2"]  # by similarity to the query embedding
    assert [x.id for x in storage.get_heuristics("shop", min_confidence=0.7)] == ["heur_2"]
    assert [x.id for x in storage.get_heuristics("shop", scope_filter={"run_id": "r1"})] == [
        "heur_1"]
    assert storage.increment_heuristic_occurrence("heur_1", success=True)
    assert storage.update_heuristic_confidence("heur_1", 0.2)
    assert storage.update_heuristic("heur_1", {"strategy": "happy path, then errors"})
    (got,) = [x for x in storage.get_heuristics("shop") if x.id == "heur_1"]
    assert (got.occurrence_count, got.success_count, got.confidence, got.strategy) == (
        6, 4, 0.2, "happy path, then errors")
    assert not storage.update_heuristic("nope", {"confidence": 1.0})
    assert storage.delete_low_confidence_heuristics("shop", below_confidence=0.5) == 1
    assert [x.id for x in storage.get_heuristics("shop")] == ["heur_2"]
    assert storage.delete_heuristic("heur_2") and not storage.delete_heuristic("heur_2")

    old = Outcome(id="", agent="helena", project_id="shop", task_type="testing",
                  task_description="t", success=True, strategy_used="s",
                  timestamp=now - timedelta(days=100))
    new_id = storage.save_outcome(old)
    assert old.id == new_id  # an item saved without an id gets the record's
    storage.save_outcomes([Outcome(id="out_2", agent="helena", project_id="shop",
                                   task_type="testing", task_description="t", success=False,
                                   strategy_used="s", timestamp=now)])
    assert storage.delete_outcomes_older_than("shop", older_than=now - timedelta(days=90)) == 1
    assert [o.id for o in storage.get_outcomes("shop")] == ["out_2"]
    assert storage.delete_outcome("out_2")

    storage.save_anti_pattern(AntiPattern(
        id="anti_1", agent="helena", project_id="shop", pattern="fixed sleep()",
        why_bad="flaky", better_alternative="explicit waits", occurrence_count=2,
        last_seen=now))
    assert storage.get_anti_patterns_for_agents("shop", ["helena", "victor"])[0].id == "anti_1"
    storage.save_domain_knowledge_batch([DomainKnowledge(
        id="dk_1", agent="victor", project_id="shop", domain="auth", fact="JWT, 24h expiry",
        source="code_analysis")])
    assert storage.update_knowledge_confidence("dk_1", 0.5)
    (dk,) = storage.get_domain_knowledge_for_agents("shop", ["victor"])
    assert (dk.id, dk.confidence) == ("dk_1", 0.5)
    storage.save_user_preference(UserPreference(id="pref_1", user_id="u1", category="style",
                                                preference="short answers",
                                                source="explicit_instruction"))
    assert storage.get_user_preferences("u1")[0].confidence == 1.0  # the original's default


def test_a_memory_is_wrapped_and_other_storage_is_refused(kw_memory: Memory):
    protocol = LearningProtocol(kw_memory, {})
    assert isinstance(protocol.storage, MemoryStorage) and protocol.storage.memory is kw_memory
    with pytest.raises(ALMAError, match="storage must be a memstream Memory"):
        LearningProtocol(object(), {})  # type: ignore[arg-type]
