"""An OpenAI-compatible chat-completions client (``POST {base_url}/chat/completions``).

Works with any compatible server, local or hosted. Configured by arguments or by
``MEMSTREAM_LLM_BASE_URL``, ``MEMSTREAM_LLM_MODEL``, ``MEMSTREAM_LLM_API_KEY``,
``MEMSTREAM_LLM_TIMEOUT``, ``MEMSTREAM_LLM_MAX_TOKENS_PER_CALL`` and
``MEMSTREAM_LLM_DAILY_TOKEN_BUDGET`` (read in ``memstream.config``).

* Timeouts and retries with exponential backoff on network errors, 429 and 5xx.
* ``complete_json`` asks for JSON, parses it, validates it with the caller's check, and on a
  bad answer asks once more (telling the model what was wrong) before raising LLMError.
* Every call is accounted (prompt and completion tokens as the server reports them, latency)
  in ``usage``; ``max_tokens_per_call`` caps the prompt plus the answer of one call (the prompt
  counted with cl100k_base before sending) and ``daily_token_budget`` the tokens of one UTC
  day. A call over either raises LLMBudgetExceeded before anything is sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..config import ResolvedConfig
from ..core.http import RemoteRefused, post_json
from ..core.tracing import span
from ..errors import InvalidInput, LLMError

__all__ = ["CallRecord", "ChatClient", "LLMBudgetExceeded", "Usage", "chat_client_from_config",
           "parse_json_answer"]


class LLMBudgetExceeded(LLMError):
    """The call would pass the per-call or per-day token budget; nothing was sent."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    ok: bool


@dataclass
class Usage:
    """What the client has spent: per call, and per UTC day."""

    calls: list[CallRecord] = field(default_factory=list)
    by_day: dict[str, int] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.calls)

    def today(self) -> int:
        return self.by_day.get(_today(), 0)


def _today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


Check = Callable[[Any], Any]


class ChatClient:
    """Sends chat messages and returns the first choice's text."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None,
                 timeout: float = 30.0, retries: int = 1, max_tokens_per_call: int | None = None,
                 daily_token_budget: int | None = None, json_mode: bool = True) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInput(f"LLM base URL must start with http:// or https://, got "
                               f"{base_url!r}")
        if not model:
            raise InvalidInput("the LLM needs a model name (MEMSTREAM_LLM_MODEL)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._key = api_key
        self.timeout = timeout
        self.retries = retries
        self.max_tokens_per_call = max_tokens_per_call
        self.daily_token_budget = daily_token_budget
        self.json_mode = json_mode
        self.usage = Usage()
        self._lock = threading.Lock()

    def _check_budget(self, messages: list[dict[str, str]], max_tokens: int | None) -> None:
        if self.max_tokens_per_call is None and self.daily_token_budget is None:
            return
        from ..core.tokens import cl100k

        prompt = sum(cl100k().count(m.get("content", "")) + 4 for m in messages)
        planned = prompt + (max_tokens or 0)
        if self.max_tokens_per_call is not None and planned > self.max_tokens_per_call:
            raise LLMBudgetExceeded(
                f"this call needs about {planned} tokens, over the per-call budget of "
                f"{self.max_tokens_per_call}; raise MEMSTREAM_LLM_MAX_TOKENS_PER_CALL")
        with self._lock:
            spent = self.usage.today()
        if self.daily_token_budget is not None and spent + planned > self.daily_token_budget:
            raise LLMBudgetExceeded(
                f"today's LLM budget of {self.daily_token_budget} tokens is spent ({spent} used);"
                " features fall back to their offline behaviour until tomorrow (UTC)")

    def complete(self, messages: list[dict[str, str]], *, temperature: float = 0.0,
                 max_tokens: int | None = None, json_answer: bool = False) -> str:
        """The model's answer to ``messages`` (raises LLMError or BackendUnavailable)."""
        self._check_budget(messages, max_tokens)
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if json_answer and self.json_mode:
            body["response_format"] = {"type": "json_object"}
        with span("memstream.llm", **{"gen_ai.request.model": self.model}) as s:
            answer = self._post(body)
            usage = answer.get("usage") if isinstance(answer, dict) else None
            usage = usage if isinstance(usage, dict) else {}
            prompt = int(usage.get("prompt_tokens") or 0)
            completion = int(usage.get("completion_tokens") or 0)
            if s is not None:
                s.set_attribute("gen_ai.usage.input_tokens", prompt)
                s.set_attribute("gen_ai.usage.output_tokens", completion)
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"the LLM at {self.base_url} answered without "
                           "choices[0].message.content") from exc
        if not isinstance(content, str):
            raise LLMError("the LLM's answer content is not text")
        return content

    def _post(self, body: dict[str, Any]) -> Any:
        """One accounted call to the chat endpoint (the usage added by ``complete``)."""
        started = time.perf_counter()
        try:
            answer = post_json(self.base_url + "/chat/completions", body, api_key=self._key,
                               timeout=self.timeout, retries=self.retries, what="the LLM")
        except RemoteRefused as exc:
            self._account(0, 0, started, ok=False)
            raise LLMError(f"the LLM at {self.base_url} refused the request ({exc.status}): "
                           f"{exc.detail}") from exc
        except Exception:
            self._account(0, 0, started, ok=False)
            raise
        usage = answer.get("usage") if isinstance(answer, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        self._account(int(usage.get("prompt_tokens") or 0),
                      int(usage.get("completion_tokens") or 0), started, ok=True)
        return answer

    def _account(self, prompt: int, completion: int, started: float, *, ok: bool) -> None:
        record = CallRecord(prompt, completion, (time.perf_counter() - started) * 1000, ok)
        with self._lock:
            self.usage.calls.append(record)
            if len(self.usage.calls) > 10_000:
                del self.usage.calls[:5_000]
            day = _today()
            self.usage.by_day[day] = self.usage.by_day.get(day, 0) + prompt + completion

    def complete_json(self, messages: list[dict[str, str]], check: Check, *,
                      opening: str = "{", max_tokens: int | None = 800) -> Any:
        """Ask for JSON; return ``check(parsed)``. ``check`` raises ValueError (or LLMError)
        on a wrong shape. A bad answer is retried once with the problem named."""
        attempt_messages = list(messages)
        for attempt in range(2):
            content = self.complete(attempt_messages, max_tokens=max_tokens,
                                    json_answer=opening == "{")
            try:
                return check(parse_json_answer(content, opening=opening))
            except (LLMError, ValueError, TypeError, KeyError) as exc:
                if attempt == 1:
                    raise LLMError(f"the LLM's answer did not fit the expected JSON twice: "
                                   f"{exc}") from exc
                attempt_messages = [*messages, {"role": "assistant", "content": content},
                                    {"role": "user", "content":
                                     f"That answer was not usable ({exc}). Reply again with "
                                     "only the JSON, in exactly the requested shape."}]
        raise AssertionError("unreachable")  # pragma: no cover


def chat_client_from_config(config: ResolvedConfig) -> ChatClient | None:
    """The configured chat client, or None when no LLM is configured."""
    if not config.llm_base_url:
        return None
    if not config.llm_model:
        raise InvalidInput("MEMSTREAM_LLM_BASE_URL is set but MEMSTREAM_LLM_MODEL is not; "
                           "name the model to use")
    return ChatClient(base_url=config.llm_base_url, model=config.llm_model,
                      api_key=config.llm_api_key, timeout=config.llm_timeout,
                      max_tokens_per_call=config.llm_max_tokens_per_call,
                      daily_token_budget=config.llm_daily_token_budget)


def parse_json_answer(content: str, *, opening: str = "[") -> Any:
    """The first JSON value that starts with ``opening`` in a model's answer (models often wrap
    JSON in prose or code fences). Raises LLMError when there is none."""
    closing = {"[": "]", "{": "}"}[opening]
    start, end = content.find(opening), content.rfind(closing)
    if start == -1 or end < start:
        raise LLMError(f"the LLM's answer holds no JSON {opening}...{closing}")
    try:
        return json.loads(content[start : end + 1])
    except json.JSONDecodeError as exc:
        raise LLMError(f"the LLM's answer is not valid JSON ({exc.msg})") from exc
