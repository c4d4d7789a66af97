"""Every threshold and limit of the episodes spec, on the pure dict functions."""

from __future__ import annotations

import pytest

from memstream import InvalidInput
from memstream.episodes import build_memory_context, memory_summary, new_memory, record_episode
from memstream.episodes.state import consolidation_due, heuristic_rules


def ep(task="t", score=0.5, **kw):
    return {"task_id": task, "score": score, **kw}


def test_rule_thresholds_are_085_and_050():
    m = new_memory()
    record_episode(m, ep(score=0.85, successes=["s85"], mistakes=["m85"]))
    record_episode(m, ep(score=0.849, successes=["s849"]))
    record_episode(m, ep(score=0.50, mistakes=["m50"]))
    record_episode(m, ep(score=0.4999, mistakes=["m49"], successes=["s49"]))
    assert m["task_rules"]["t"] == ["[WORKS] s85", "[AVOID] m49"]


def test_rules_not_duplicated_and_newest_10_per_task():
    m = new_memory()
    for i in range(12):
        record_episode(m, ep(score=0.9, successes=[f"success number {i} unique{i}x"]))
    record_episode(m, ep(score=0.9, successes=["success number 11 unique11x"]))
    rules = m["task_rules"]["t"]
    assert len(rules) == 10
    assert rules[0] == "[WORKS] success number 2 unique2x"
    assert rules[-1] == "[WORKS] success number 11 unique11x"


def test_episode_log_keeps_100_and_counts_all():
    m = new_memory()
    for i in range(105):
        record_episode(m, ep(score=0.1 * (i % 10), steps=i, trajectory_summary=f"ep {i}"))
    assert len(m["episode_log"]) == 100
    assert m["episode_log"][0]["summary"] == "ep 5"
    assert m["total_episodes"] == 105
    assert len(m["score_history"]["t"]) == 105


def test_default_task_and_validation():
    m = record_episode(new_memory(), {"score": 1})
    assert m["episode_log"][0]["task_id"] == "unknown"
    for bad in ({"score": 1.5}, {"score": "high"}, {"score": 1, "mistakes": "oops"},
                {"score": 1, "mistake_cards": {"a": 1}}):
        with pytest.raises(InvalidInput):
            record_episode(new_memory(), bad)


def test_exact_and_near_duplicate_mistakes_merge():
    m = new_memory()
    record_episode(m, ep(mistakes=["Escalated too early before diagnosing"]))
    record_episode(m, ep(mistakes=["Escalated too early before diagnosing"]))
    record_episode(m, ep(mistakes=["escalated too early, before diagnosing!"]))
    record_episode(m, ep(mistakes=["Restarted the wrong service"]))
    record_episode(m, ep(successes=["Read the logs", "read the logs."]))
    assert m["mistakes"] == ["Escalated too early before diagnosing", "Restarted the wrong service"]
    assert m["successes"] == ["Read the logs"]


def card(**kw):
    base = {"mistake_type": "wrong_tool", "worker_id": "w1", "correct_decision": "use grep"}
    base.update(kw)
    return base


def test_card_fields_defaults_and_300_char_cut():
    m = new_memory()
    record_episode(m, ep(task="t9", mistake_cards=[
        {"bad_decision": "x" * 400, "evidence": "e" * 301}, "not a card", 42]))
    (c,) = m["mistake_cards"]
    assert c["mistake_type"] == "unknown_mistake"
    assert c["task_id"] == "t9"  # the episode's task when the card has none
    assert c["lesson"] == "Avoid repeating this failure."
    assert len(c["bad_decision"]) == 300 and len(c["evidence"]) == 300
    assert (c["seen_count"], c["first_seen_episode"], c["last_seen_episode"]) == (1, 1, 1)


def test_card_merge_key_and_newer_values():
    m = new_memory()
    record_episode(m, ep(mistake_cards=[card(evidence="first", lesson="L1")]))
    record_episode(m, ep(mistake_cards=[card(evidence="", lesson="L2")]))   # same key
    record_episode(m, ep(mistake_cards=[card(evidence="third")]))
    record_episode(m, ep(mistake_cards=[card(worker_id="w2")]))             # other worker
    record_episode(m, ep(mistake_cards=[card(correct_decision="use find")]))
    record_episode(m, ep(mistake_cards=[card(task_id="other")]))
    record_episode(m, ep(mistake_cards=[card(mistake_type="typo")]))
    top = m["mistake_cards"][0]
    assert (top["seen_count"], top["first_seen_episode"], top["last_seen_episode"]) == (3, 1, 3)
    assert (top["evidence"], top["lesson"]) == ("third", "L2")
    assert len(m["mistake_cards"]) == 5


def test_only_30_cards_with_highest_seen_then_last_seen():
    m = new_memory()
    record_episode(m, ep(mistake_cards=[card(mistake_type="often")]))
    record_episode(m, ep(mistake_cards=[card(mistake_type="often")]))
    for i in range(34):
        record_episode(m, ep(mistake_cards=[card(mistake_type=f"type{i}")]))
    cards = m["mistake_cards"]
    assert len(cards) == 30
    assert cards[0]["mistake_type"] == "often" and cards[0]["seen_count"] == 2
    assert [c["mistake_type"] for c in cards[1:3]] == ["type33", "type32"]
    kept = {c["mistake_type"] for c in cards}
    assert "type4" not in kept and "type5" in kept  # the oldest singles were dropped
    assert all(cards[i]["last_seen_episode"] >= cards[i + 1]["last_seen_episode"]
               for i in range(1, 29))


def test_context_empty_string_when_nothing_to_say():
    assert build_memory_context(new_memory()) == ""
    assert build_memory_context(new_memory(), task_id="t") == ""
    assert build_memory_context(new_memory(), task_id="t", max_tokens=5) == ""


def test_context_sections_order_and_limits():
    m = new_memory()
    long = "L" * 150
    for i in range(6):
        record_episode(m, ep(score=0.2, steps=i, trajectory_summary=f"{i} {long}",
                             mistakes=[f"mistake {i} of a distinct kind k{i}"],
                             mistake_cards=[card(mistake_type=f"k{i}", evidence=f"ev{i}")]))
    m["global_rules"] = [f"g{i}" for i in range(8)]
    text = build_memory_context(m, task_id="t")
    lines = text.splitlines()
    assert lines[0] == "## MEMORY FROM PAST EPISODES"
    order = [text.index(h) for h in ("Rules for t:", "General rules", "Mistakes to avoid:",
                                     "Mistake cards:", "Recent t episodes:", "Your mean score")]
    assert order == sorted(order)
    assert "  - [AVOID] mistake 0 of a distinct kind k0" not in text  # only the newest 5 rules
    assert sum(1 for ln in lines if ln.startswith("  - g")) == 5
    assert sum(1 for ln in lines if ln.startswith("  - AVOID: ")) == 3
    assert "  - [k5, seen 1x] Avoid repeating this failure. Evidence: ev5" in lines
    assert sum(1 for ln in lines if ln.startswith("  - [k")) == 3
    recent = [ln for ln in lines if ln.startswith("  - Score ")]
    assert len(recent) == 3
    assert recent[-1] == "  - Score 0.20 in 5 steps: 5 " + "L" * 98
    assert lines[-1] == "Your mean score on t: 0.20 (over 6 episodes)"


def test_context_token_budget_is_exact():
    from memstream.core.tokens import cl100k

    m = new_memory()
    for i in range(6):
        record_episode(m, ep(score=0.9, trajectory_summary="did a thing " * 5,
                             successes=[f"worked well in way number {i} w{i}"]))
    full = build_memory_context(m, task_id="t")
    tok = cl100k()
    for budget in (12, 40, 80, tok.count(full)):
        text = build_memory_context(m, task_id="t", max_tokens=budget)
        assert tok.count(text) <= budget
        assert text == "" or text.startswith("## MEMORY FROM PAST EPISODES\n")
    assert build_memory_context(m, task_id="t", max_tokens=tok.count(full)) == full
    assert tok.count(build_memory_context(m, task_id="t", max_tokens=80)) > 60


def test_consolidation_due_every_20():
    m = new_memory()
    for _ in range(19):
        record_episode(m, ep())
    assert not consolidation_due(m)
    record_episode(m, ep())
    assert consolidation_due(m)
    m["last_consolidated_at"] = 20
    assert not consolidation_due(m)
    m["last_consolidated_at"] = "2024-01-01T00:00:00"  # an old file's ISO string counts as 0
    assert consolidation_due(m)


def test_heuristic_rules_from_high_scores():
    m = new_memory()
    record_episode(m, ep(score=0.9, trajectory_summary="S" * 200))
    record_episode(m, ep(score=0.84, trajectory_summary="too low"))
    record_episode(m, ep(score=0.85, trajectory_summary="just enough"))
    assert heuristic_rules(m) == ["[HIGH SCORE 0.90] " + "S" * 120,
                                  "[HIGH SCORE 0.85] just enough"]


def test_summary():
    m = new_memory()
    record_episode(m, ep(task="a", score=0.2, mistakes=["x"], mistake_cards=[card()]))
    record_episode(m, ep(task="b", score=0.9, successes=["y"]))
    s = memory_summary(m)
    assert s["total_episodes"] == 2 and s["mistakes_stored"] == 1 and s["mistake_cards"] == 1
    assert s["task_rules"] == {"a": 1, "b": 1}
    assert s["top_cards"] == [{"mistake_type": "wrong_tool", "task_id": "a", "seen_count": 1}]
    assert s["scores_by_task"] == {"a": 0.2, "b": 0.9}
