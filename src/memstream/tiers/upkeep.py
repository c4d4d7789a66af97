"""Maintenance of an agent's tiers (``TieredMemory.maintain``): per agent, entries past the
STM capacity or older than ``stm_max_age`` steps move to IM (compressed), the lowest effective
priority (priority x decay^(age in steps / cleanup_interval)) among the oldest candidates
first; IM entries past its capacity or ``im_max_age`` leave the caches (they stay in LTM)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .features import compress, state_vector
from .vectors import pack as _pack

if TYPE_CHECKING:
    from .backends import TierBackend
    from .tiered import TieredMemory

__all__ = ["maintain"]


def _due(span: tuple[int, int, int] | None, limit: int, max_age: int) -> bool:
    """Whether a tier holding (count, oldest step, newest step) of an agent has entries to
    move: more than ``limit``, or some older than ``max_age`` steps."""
    return span is not None and (span[0] > limit or span[2] - span[1] > max_age)


def maintain(tm: TieredMemory, agents: Sequence[str]) -> dict[str, int]:
    """``TieredMemory.maintain`` for these agents. One call per tier first reads every
    agent's entry count and step span, so that the agents with nothing to move (the usual case
    at each ``cleanup_interval``) cost nothing more."""
    c = tm.config
    moved = dropped = 0
    spans = tm.tier_call(lambda: tm.stm.spans(agents), None)
    for agent in agents:
        if spans is None or _due(spans.get(agent), c.stm_limit, c.stm_max_age):
            moved += tm.tier_call(lambda a=agent: _stm_to_im(tm, a), 0)
    spans = tm.tier_call(lambda: tm.im.spans(agents), None)
    for agent in agents:
        if spans is None or _due(spans.get(agent), c.im_limit, c.im_max_age):
            dropped += tm.tier_call(lambda a=agent: _drop_im(tm, a), 0)
    return {"moved_to_im": moved, "left_im": dropped}


def _choose(tm: TieredMemory, index: list[tuple[int, str]], limit: int, max_age: int,
            backend: TierBackend) -> list[dict[str, Any]]:
    if not index:
        return []
    newest = index[-1][0]
    old = [i for step, i in index if newest - step > max_age]
    over = max(0, len(index) - limit - len(old))
    if not old and not over:
        return []
    rest = [pair for pair in index if pair[1] not in set(old)]
    window = rest[: 2 * over]  # the oldest candidates; the least important of them go
    entries = backend.get(old + [i for _, i in window])
    c = tm.config

    def effective(e: Mapping[str, Any]) -> float:
        age = newest - int(e["step_number"])
        decay: float = c.priority_decay ** (age / max(1, c.cleanup_interval))
        return float(e["metadata"]["importance_score"]) * decay

    candidates = sorted((entries[i] for _, i in window if i in entries),
                        key=lambda e: (effective(e), e["step_number"], e["memory_id"]))
    return [entries[i] for i in old if i in entries] + candidates[:over]


def _stm_to_im(tm: TieredMemory, agent: str) -> int:
    c = tm.config
    going = _choose(tm, tm.stm.index(agent), c.stm_limit, c.stm_max_age, tm.stm)
    if going:
        for e in going:  # the intermediate form and its vector are made on the way down
            e["metadata"]["compression_level"] = 1
            e["im_contents"] = compress(e["contents"], 1)
            e["im_vec"] = _pack(state_vector(e["im_contents"]))
        tm.im.put(going)
        tm.stm.remove(agent, [e["memory_id"] for e in going])
        tm.records.emit(tm.namespace, "tier_moved", [e["memory_id"] for e in going],
                          agent_id=agent, data={"from": "stm", "to": "im"})
    return len(going)


def _drop_im(tm: TieredMemory, agent: str) -> int:
    c = tm.config
    going = _choose(tm, tm.im.index(agent), c.im_limit, c.im_max_age, tm.im)
    if going:
        tm.im.remove(agent, [e["memory_id"] for e in going])
        tm.records.emit(tm.namespace, "tier_moved", [e["memory_id"] for e in going],
                          agent_id=agent, data={"from": "im", "to": "ltm"})
    return len(going)
