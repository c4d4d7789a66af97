"""Relations between named things, read by an LLM: one call per added batch of memories gives
(subject, predicate, object) triples, each from one memory (docs/entities.md, "With an LLM").

The store keeps each triple with the time it became valid (its memory's time); a newer triple
on the same subject and predicate with another object ends the older one at its own time, so a
read ``as_of`` an earlier time shows the older fact, as ``Memory.get_all(as_of=...)`` does for
memories.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._types import Record
from ..llm import ChatClient

__all__ = ["RELATIONS_PROMPT", "Triple", "extract_relations"]

RELATIONS_PROMPT = """Read the numbered memories below and list the lasting relations they
state between named things (people, places, organisations, products): who lives where, works
where, owns, manages, is married to, reports to, and so on. Use the names as written, a short
lowercase predicate in the memory's own language ("lives in", "works at", "wohnt in"), and
only relations a memory states, each with the number of its memory. Answer with JSON only:
{{"relations": [{{"memory": N, "subject": "...", "predicate": "...", "object": "..."}}]}}

Memories:
{memories}"""

#: at most this many characters of one memory go into the prompt
MEMORY_CHARS = 1000


@dataclass(frozen=True, slots=True)
class Triple:
    record_id: str
    subject: str
    predicate: str
    object: str


def _check(answer: Any, count: int) -> list[tuple[int, str, str, str]]:
    rows = answer.get("relations") if isinstance(answer, dict) else None
    if not isinstance(rows, list):
        raise ValueError('the answer needs a "relations" list')
    out = []
    for row in rows:
        if not isinstance(row, dict):
            raise ValueError("each relation must be an object")
        n = row.get("memory")
        parts = [row.get(k) for k in ("subject", "predicate", "object")]
        if not isinstance(n, int) or not 1 <= n <= count:
            raise ValueError(f"memory must be a number from 1 to {count}")
        words = [p.strip() for p in parts if isinstance(p, str) and 0 < len(p.strip()) <= 200]
        if len(words) != 3:
            raise ValueError("subject, predicate and object must be short non-empty strings")
        out.append((n, words[0], words[1], words[2]))
    return out


def extract_relations(llm: ChatClient, records: Sequence[Record]) -> list[Triple]:
    """The relations the memories state, in one call (none for no memories)."""
    if not records:
        return []
    listing = "\n".join(f"{n}. {json.dumps(r.text[:MEMORY_CHARS], ensure_ascii=False)}"
                        for n, r in enumerate(records, start=1))
    rows = llm.complete_json(
        [{"role": "user", "content": RELATIONS_PROMPT.format(memories=listing)}],
        lambda answer: _check(answer, len(records)))
    return [Triple(records[n - 1].id, s, p.lower(), o) for n, s, p, o in rows]
