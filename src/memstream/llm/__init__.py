"""The optional language model: an OpenAI-compatible chat client. Every feature that uses it
has a deterministic offline fallback."""

from __future__ import annotations

from .chat import (
    ChatClient,
    LLMBudgetExceeded,
    Usage,
    chat_client_from_config,
    parse_json_answer,
)

__all__ = ["ChatClient", "LLMBudgetExceeded", "Usage", "chat_client_from_config",
           "parse_json_answer"]
