"""Memory around an agent's ``act()`` without touching its logic.

Around each call the hook captures the state before (``get_state()``, or the public
attributes), calls ``act``, captures the state after, and stores three entries at the agent's
step: the state before, the action (its name, arguments, result and reward) and the state
after with what changed. Any failure inside capture or storage is logged and never reaches the
agent: ``act`` returns (or raises) exactly as it would without memory.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger("memstream.hooks")

__all__ = ["capture_state", "diff", "install_memory_hooks", "with_memory"]

T = TypeVar("T")


def capture_state(agent: Any) -> dict[str, Any]:
    getter = getattr(agent, "get_state", None)
    state = getter() if callable(getter) else {
        k: v for k, v in vars(agent).items()
        if not k.startswith("_") and isinstance(v, str | int | float | bool | list | dict)}
    if hasattr(state, "as_dict"):
        state = state.as_dict()
    if not isinstance(state, dict):
        raise TypeError(f"get_state() returned {type(state).__name__}, not a dict")
    return dict(state)


def diff(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """{key: {"before": old, "after": new}} for every key whose value changed."""
    keys = set(before) | set(after)
    return {k: {"before": before.get(k), "after": after.get(k)} for k in sorted(keys)
            if before.get(k) != after.get(k)}


def _result_fields(result: Any) -> dict[str, Any]:
    if hasattr(result, "as_dict"):
        result = result.as_dict()
    if isinstance(result, dict):
        return {"result": result, "reward": result.get("reward")}
    return {"result": result if isinstance(result, str | int | float | bool) else repr(result),
            "reward": getattr(result, "reward", None)}


def _wrap_act(act: Callable[..., Any], tiered_of: Callable[[Any], Any],
              agent_id_of: Callable[[Any], str]) -> Callable[..., Any]:
    @functools.wraps(act)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        raw_step = getattr(self, "step_number", None)
        step: int = int(raw_step if raw_step is not None else getattr(self, "_memstream_step", 0))
        before = None
        try:
            before = capture_state(self)
        except Exception as exc:  # capture must never break the agent
            log.warning("memory capture before act() failed: %s", exc)
        result = act(self, *args, **kwargs)
        try:
            tiered, agent_id = tiered_of(self), agent_id_of(self)
            after = capture_state(self)
            action = {"action_type": act.__name__, "args": [repr(a) for a in args][:8],
                      "kwargs": {k: repr(v) for k, v in list(kwargs.items())[:8]},
                      **_result_fields(result)}
            items = []
            if before is not None:
                items.append((agent_id, "state", before, int(step), 1.0))
            items.append((agent_id, "action", action, int(step), 1.0))
            items.append((agent_id, "state", {**after, "_changes": diff(before or {}, after)},
                          int(step), 1.0))
            tiered.store_many(items)
        except Exception as exc:
            log.warning("memory capture after act() failed: %s", exc)
        if getattr(self, "step_number", None) is None:
            self._memstream_step = int(step) + 1
        return result
    return wrapped


def install_memory_hooks(cls: type[T]) -> type[T]:
    """Class decorator: the agent's ``act`` is recorded in ``self.memory`` (a TieredMemory)
    under ``self.agent_id``."""
    cls.act = _wrap_act(cls.act, lambda self: self.memory,  # type: ignore[attr-defined]
                        lambda self: str(self.agent_id))
    return cls


def with_memory(agent: T, agent_id: str, memory: Any) -> T:
    """Wrap one existing agent object: its ``act`` is recorded in ``memory``."""
    bound = type(agent).act  # type: ignore[attr-defined]
    wrapped = _wrap_act(bound, lambda self: memory, lambda self: agent_id)
    agent.act = functools.partial(wrapped, agent)  # type: ignore[attr-defined]
    return agent
