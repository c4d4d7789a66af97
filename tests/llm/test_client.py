"""The OpenAI-compatible chat client against a local server that speaks the protocol."""

from __future__ import annotations

import pytest

from memstream import BackendUnavailable, LLMError
from memstream.llm import ChatClient, LLMBudgetExceeded


def test_complete_sends_the_protocol_and_accounts(chat):
    chat.answers = ["hello there"]
    client = ChatClient(base_url=chat.url, model="m1", api_key="sk", timeout=5)
    assert client.complete([{"role": "user", "content": "hi"}], max_tokens=7) == "hello there"
    body = chat.requests[0]["body"]
    assert body["model"] == "m1" and body["max_tokens"] == 7 and body["temperature"] == 0.0
    assert chat.requests[0]["auth"] == "Bearer sk"
    call = client.usage.calls[-1]
    assert (call.prompt_tokens, call.completion_tokens, call.ok) == (1, 3, True)
    assert call.latency_ms > 0 and client.usage.today() == 4


def test_json_answers_are_validated_and_retried_once(chat):
    def positive(answer):
        if not isinstance(answer.get("n"), int) or answer["n"] <= 0:
            raise ValueError("n must be a positive integer")
        return answer["n"]

    client = ChatClient(base_url=chat.url, model="m", timeout=5)
    chat.answers = ['{"n": -1}', 'sure! {"n": 4}']
    assert client.complete_json([{"role": "user", "content": "n?"}], positive) == 4
    retry = chat.requests[1]["body"]["messages"]
    assert "n must be a positive integer" in retry[-1]["content"]
    assert chat.requests[0]["body"]["response_format"] == {"type": "json_object"}
    chat.answers = ["no json", '{"n": "x"}']
    with pytest.raises(LLMError, match="twice"):
        client.complete_json([{"role": "user", "content": "n?"}], positive)


def test_budgets_refuse_before_sending(chat):
    client = ChatClient(base_url=chat.url, model="m", timeout=5, max_tokens_per_call=50)
    with pytest.raises(LLMBudgetExceeded, match="per-call budget"):
        client.complete([{"role": "user", "content": "word " * 100}])
    assert chat.requests == []
    # each call is planned at 5 tokens (1 for the text + 4 for the message) and spends 2
    daily = ChatClient(base_url=chat.url, model="m", timeout=5, daily_token_budget=8)
    daily.complete([{"role": "user", "content": "a"}])
    daily.complete([{"role": "user", "content": "b"}])
    with pytest.raises(LLMBudgetExceeded, match="today's LLM budget"):
        daily.complete([{"role": "user", "content": "c"}])
    assert len(chat.requests) == 2


def test_errors_and_timeouts(chat):
    chat.mode = "401"
    with pytest.raises(LLMError, match="refused"):
        ChatClient(base_url=chat.url, model="m", timeout=5).complete([{"role": "user",
                                                                       "content": "x"}])
    chat.mode, chat.delay = "slow", 1.5
    client = ChatClient(base_url=chat.url, model="m", timeout=0.3, retries=1)
    with pytest.raises(BackendUnavailable):
        client.complete([{"role": "user", "content": "x"}])
    assert [c.ok for c in client.usage.calls] == [False]
