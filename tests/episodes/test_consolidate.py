"""Consolidation through a real chat-completions exchange with a local server, and offline."""

from __future__ import annotations

import json

from memstream.episodes import new_memory, record_episode
from memstream.episodes.consolidate import consolidated_rules
from memstream.llm import ChatClient


def _memory():
    m = new_memory()
    for i in range(20):
        record_episode(m, {"task_id": "t", "score": 0.9 if i % 2 else 0.3,
                           "trajectory_summary": f"episode {i} summary"})
    return m


def test_llm_good_answer(chat):
    chat.answers = ['Here you go:\n```json\n["Check logs first.", "Never   skip tests."]\n```']
    client = ChatClient(base_url=chat.url, model="m", api_key="sk-test", timeout=5)
    rules, method = consolidated_rules(_memory(), client)
    assert method == "llm"
    assert rules == ["[CONSOLIDATED] Check logs first.", "[CONSOLIDATED] Never skip tests."]
    req = chat.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    prompt = req["body"]["messages"][0]["content"]
    assert "episode 19 summary" in prompt and "JSON array" in prompt
    assert prompt.count("- task=t") == 20  # at most 30 recent episodes are sent


def test_llm_bad_json_falls_back_to_heuristic(chat):
    client = ChatClient(base_url=chat.url, model="m", timeout=5)
    for answer in ("no rules today", '["unclosed", ', "[1, 2]", "[]", json.dumps({"a": 1})):
        chat.answers = [answer]
        rules, method = consolidated_rules(_memory(), client)
        assert method == "heuristic"
        assert rules[0] == "[HIGH SCORE 0.90] episode 1 summary"


def test_llm_timeout_and_errors_fall_back(chat):
    chat.mode, chat.delay = "slow", 2.0
    client = ChatClient(base_url=chat.url, model="m", timeout=0.3, retries=0)
    assert consolidated_rules(_memory(), client)[1] == "heuristic"
    for mode in ("500", "401"):
        chat.mode = mode
        assert consolidated_rules(_memory(), client)[1] == "heuristic"


def test_unreachable_llm_falls_back():
    client = ChatClient(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.5, retries=0)
    assert consolidated_rules(_memory(), client)[1] == "heuristic"


def test_heuristic_without_llm():
    rules, method = consolidated_rules(_memory(), None)
    assert method == "heuristic"
    assert len(rules) == 10 and all(r.startswith("[HIGH SCORE 0.90] ") for r in rules)
