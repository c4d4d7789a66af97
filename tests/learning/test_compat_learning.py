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
