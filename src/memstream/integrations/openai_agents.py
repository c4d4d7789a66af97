"""A ``Session`` of the OpenAI Agents SDK on memstream: the conversation kept durably, and each
turn also a searchable memory.

Every item the SDK hands to ``add_items`` becomes one record in run ``session_id``: a chat
message as kind ``"message"`` (its text searchable, its role in ``data``), anything else (tool
calls, tool outputs, reasoning) as kind ``"session_item"`` with a short text that names it. The
item itself is kept whole in ``data["item"]`` and comes back unchanged from ``get_items``, in
the order it was added (``step`` counts the session's items). A batch of items is stored in one
transaction: all or none.

``pip install 'memstream[openai-agents]'``; see docs/integrations.md.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

try:
    from agents.memory.session import SessionABC
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ImportError as exc:  # pragma: no cover - exercised without the extra only
    from ..errors import MissingDependency

    raise MissingDependency(
        "the OpenAI Agents integration needs: pip install 'memstream[openai-agents]'") from exc

from .._types import Record
from ..engine.memory import Memory
from ..errors import InvalidInput

__all__ = ["MemstreamSession"]

_MARK = {"session": "openai-agents"}


class _Scope(TypedDict):
    namespace: str | None
    user_id: str | None
    agent_id: str | None
    run_id: str | None

_MAX_TEXT = 20_000  # characters of an item made searchable; the item itself is kept whole


class MemstreamSession(SessionABC):
    """Conversation history for one session, in a memstream ``Memory``.

    ``memory`` is a ``Memory`` or a store URL (a path, ``postgresql://...``) to open one.
    ``user_id`` and ``agent_id`` scope the session's records like any memory's, so that
    ``memory.search(..., user_id=...)`` finds what was said across a user's sessions.
    """

    def __init__(self, session_id: str, memory: Memory | str | Path, *,
                 user_id: str | None = None, agent_id: str | None = None,
                 namespace: str | None = None,
                 session_settings: SessionSettings | None = None) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInput("session_id must be a non-empty string")
        self.session_id = session_id
        self.session_settings = session_settings
        self._owned = not isinstance(memory, Memory)
        self.memory = memory if isinstance(memory, Memory) else Memory(memory)
        self._scope = _Scope(namespace=namespace, user_id=user_id, agent_id=agent_id,
                             run_id=session_id)
        self._lock = threading.Lock()

    # --- the Session protocol -------------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items, oldest first; with ``limit``, only the latest that many."""
        return await asyncio.to_thread(self._get, resolve_session_limit(
            limit, self.session_settings))

    async def add_items(self, items: list[Any]) -> None:
        await asyncio.to_thread(self._add, items)

    async def pop_item(self) -> Any | None:
        """Remove the latest item and return it (None when the session is empty)."""
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._clear)

    def close(self) -> None:
        """Close the memory if this session opened it."""
        if self._owned:
            self.memory.close()

    # --- the work, in a worker thread -----------------------------------------------------------

    def _records(self, *, limit: int | None, latest: bool) -> list[Record]:
        return self.memory.get_all(**self._scope, filters={f"metadata.{k}": v
                                                          for k, v in _MARK.items()},
                                   limit=limit, order="-step" if latest else "step")

    def _get(self, limit: int | None) -> list[Any]:
        if limit == 0:
            return []
        if limit is None or limit < 0:  # as the SDK's own sessions: negative means all
            return [_item(r) for r in self._records(limit=None, latest=False)]
        return [_item(r) for r in reversed(self._records(limit=limit, latest=True))]

    def _add(self, items: Sequence[Any]) -> None:
        if not isinstance(items, Sequence) or isinstance(items, str | bytes):
            raise InvalidInput("add_items takes a list of items (dicts)")
        if not items:
            return
        plain = [_plain(item) for item in items]
        with self._lock:
            last = self._records(limit=1, latest=True)
            step = (last[0].step or 0) + 1 if last else 0
            self.memory.add_many([
                {"text": _text(item), "kind": "message" if _is_message(item)
                 else "session_item", "data": {"role": item.get("role"), "item": item},
                 "metadata": dict(_MARK), "step": step + i, **self._scope}
                for i, item in enumerate(plain)], duplicates="keep")

    def _pop(self) -> Any | None:
        with self._lock:
            last = self._records(limit=1, latest=True)
            if not last:
                return None
            self.memory.delete(last[0].id, namespace=self._scope["namespace"])
            return _item(last[0])

    def _clear(self) -> None:
        with self._lock:
            self.memory.delete_all(**self._scope, filters={f"metadata.{k}": v
                                                          for k, v in _MARK.items()})


def _item(record: Record) -> Any:
    return (record.data or {}).get("item")


def _plain(item: Any) -> dict[str, Any]:
    """An item as a JSON object (the SDK's items are dicts; a pydantic model is dumped)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(exclude_unset=True, mode="json")
    if not isinstance(item, Mapping):
        raise InvalidInput(f"a session item is a dict, not {type(item).__name__}")
    try:
        return dict(json.loads(json.dumps(item)))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"a session item must be JSON: {exc}") from exc


def _is_message(item: Mapping[str, Any]) -> bool:
    return item.get("role") in ("user", "assistant", "system", "developer") \
        and item.get("type", "message") == "message"


def _text(item: Mapping[str, Any]) -> str:
    """What of an item is worth finding by a search."""
    content = item.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(str(p.get("text") or p.get("refusal") or "") for p in content
                        if isinstance(p, Mapping))
    elif item.get("type") == "function_call":
        text = f"called {item.get('name')}({item.get('arguments', '')})"
    elif item.get("type") == "function_call_output":
        output = item.get("output")
        text = f"tool output: {output if isinstance(output, str) else json.dumps(output)}"
    else:
        text = ""
    text = text.strip()[:_MAX_TEXT]
    return text or f"[{item.get('type') or item.get('role') or 'item'}]"
