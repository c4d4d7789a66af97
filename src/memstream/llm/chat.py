"""A minimal OpenAI-compatible chat-completions client (``POST {base_url}/chat/completions``).

Works with any compatible server, local or hosted. Configured by arguments or by
``MEMSTREAM_LLM_BASE_URL``, ``MEMSTREAM_LLM_MODEL``, ``MEMSTREAM_LLM_API_KEY`` and
``MEMSTREAM_LLM_TIMEOUT`` (read in ``memstream.config``).
"""

from __future__ import annotations

import json
from typing import Any

from .._http import RemoteRefused, post_json
from ..config import ResolvedConfig
from ..errors import InvalidInput, LLMError


class ChatClient:
    """Sends chat messages and returns the first choice's text."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None,
                 timeout: float = 30.0, retries: int = 1) -> None:
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

    def complete(self, messages: list[dict[str, str]], *, temperature: float = 0.0,
                 max_tokens: int | None = None) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        try:
            answer = post_json(self.base_url + "/chat/completions", body, api_key=self._key,
                               timeout=self.timeout, retries=self.retries, what="the LLM")
        except RemoteRefused as exc:
            raise LLMError(f"the LLM at {self.base_url} refused the request ({exc.status}): "
                           f"{exc.detail}") from exc
        try:
            content = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"the LLM at {self.base_url} answered without "
                           "choices[0].message.content") from exc
        if not isinstance(content, str):
            raise LLMError("the LLM's answer content is not text")
        return content


def chat_client_from_config(config: ResolvedConfig) -> ChatClient | None:
    """The configured chat client, or None when no LLM is configured."""
    if not config.llm_base_url:
        return None
    if not config.llm_model:
        raise InvalidInput("MEMSTREAM_LLM_BASE_URL is set but MEMSTREAM_LLM_MODEL is not; "
                           "name the model to use")
    return ChatClient(base_url=config.llm_base_url, model=config.llm_model,
                      api_key=config.llm_api_key, timeout=config.llm_timeout)


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
