"""What new memories do to older ones, decided by an LLM: one call for a batch of added
memories, answers in the shape of the offline models (``cognition.changes.Decision``).

The model sees each new memory (``N1``, ``N2``, ...) with the older memories of the same owner
most alike to it (``O1``, ``O2``, ..., the candidates the offline models read) and answers, for
each new memory, whether it is junk, which older memory it restates, and which older memories
it makes out of date. Ids it was not shown are refused (the answer is asked for again once,
then the batch falls back to the offline models: ``engine.changes``). The calls go through the
configured ``ChatClient``: metered in its ``usage`` and held to its token budgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..llm import ChatClient
from .changes import Decision, Item

__all__ = ["CONFIDENCE", "PROMPT", "Case", "decide_batch"]

#: the confidence of a decision the model states without one of its own
CONFIDENCE = 0.9
#: characters of each memory shown to the model
SHOWN = 400

PROMPT = """You keep an assistant's long-term memory of one person. New memories were just
written. For each new memory, compare it with the older memories listed under it and decide:
- "junk": true if it is not worth remembering at all (an acknowledgement, a greeting, filler,
  a tool's error or retry notice), else false;
- "duplicate_of": the id of an older memory that says the same thing (a restatement), or null;
- "supersedes": the ids of older memories that it makes out of date: the same fact of the same
  person or thing with a new value (a move, a new job, a new price, a rescheduled or cancelled
  event, a correction, a retraction). A memory about someone else, or one that only adds
  detail, supersedes nothing.
- "confidence": from 0 to 1, how sure you are; "why": a few words.
Memories may be in any language. Times are when each memory was written.

{cases}

Answer with JSON only: {{"decisions": [{{"new": "N1", "junk": false, "duplicate_of": null,
"supersedes": [], "confidence": 0.9, "why": "..."}}, ...]}} with one entry per new memory."""


@dataclass(frozen=True, slots=True)
class Case:
    """A new memory and the older memories it is compared with (most alike first)."""

    new: Item
    older: Sequence[Item]


def _when(at: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def _render(cases: Sequence[Case]) -> tuple[str, dict[str, str]]:
    """The cases as the prompt shows them, and the shown ids -> record ids."""
    ids: dict[str, str] = {}
    olds: dict[str, str] = {}  # record id -> its label: an older memory shown twice is one id
    blocks = []
    for n, case in enumerate(cases, start=1):
        ids[f"N{n}"] = case.new.id
        lines = [f"N{n} ({_when(case.new.at)}, {case.new.kind}): {case.new.text[:SHOWN]}"]
        for old in case.older:
            label = olds.setdefault(old.id, f"O{len(olds) + 1}")
            ids[label] = old.id
            lines.append(f"  {label} ({_when(old.at)}, {old.kind}): {old.text[:SHOWN]}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks), ids


def _check(cases: Sequence[Case], ids: dict[str, str]) -> Any:
    shown = {f"N{n}": {o.id for o in case.older} for n, case in enumerate(cases, start=1)}

    def check(answer: Any) -> list[Decision]:
        rows = answer.get("decisions") if isinstance(answer, dict) else None
        if not isinstance(rows, list):
            raise ValueError('expected {"decisions": [...]}')
        out: list[Decision] = []
        for row in rows:
            if not isinstance(row, dict) or row.get("new") not in shown:
                raise ValueError(f'each decision names a new memory by its id (N1 to '
                                 f'N{len(cases)}), got {row!r:.80}')
            new = row["new"]
            conf = row.get("confidence", CONFIDENCE)
            conf = min(1.0, max(0.0, float(conf))) if isinstance(conf, int | float) \
                else CONFIDENCE
            why = str(row.get("why") or "")[:120]
            reason = f"llm: {why}" if why else "llm"
            nid = ids[new]
            if row.get("junk") is True:
                out.append(Decision("junk", nid, None, conf, reason))
                continue
            dup = row.get("duplicate_of")
            if dup is not None:
                if dup not in ids or ids[dup] not in shown[new]:
                    raise ValueError(f"{new}'s duplicate_of {dup!r} is not one of the older "
                                     "memories listed under it")
                out.append(Decision("duplicate", nid, ids[dup], conf, reason))
                continue
            sup = row.get("supersedes") or []
            if not isinstance(sup, list):
                raise ValueError(f"{new}'s supersedes must be a list of ids")
            for old in sup:
                if old not in ids or ids[old] not in shown[new]:
                    raise ValueError(f"{new} supersedes {old!r}, which is not one of the "
                                     "older memories listed under it")
                out.append(Decision("superseded", ids[old], nid, conf, reason))
        return out
    return check


def decide_batch(client: ChatClient, cases: Sequence[Case]) -> list[Decision]:
    """The decisions about a batch of new memories, in one call (raises ``LLMError`` when the
    model cannot be reached or answers twice in a wrong shape, ``LLMBudgetExceeded`` over
    budget: the caller falls back to the offline models)."""
    if not cases:
        return []
    text, ids = _render(cases)
    return list(client.complete_json(
        [{"role": "user", "content": PROMPT.format(cases=text)}], _check(cases, ids),
        max_tokens=120 + 60 * len(cases)))
