"""Consolidation: merge near-duplicate memories into one, keeping provenance.

Among a namespace's most recent valid records (1,000 by default), two are near duplicates
when their words are the same (case and punctuation aside) or their calibrated embedding
similarity reaches the threshold (0.9). Near duplicates are grouped transitively. In each
group the survivor is the most important record (then the most accessed, then the oldest); it
takes the group's highest importance and lists the others in its provenance; the others are
invalidated with ``superseded_by`` = the survivor (never erased). With an LLM, the survivor's
text becomes the model's one-sentence merge of the group; offline it keeps its own text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._types import Record
from ..core.groups import join
from ..embed.protocol import calibrated_similarity
from ..errors import BackendUnavailable, LLMError
from ..llm import ChatClient

log = logging.getLogger("memstream.consolidation")

__all__ = ["merge_text", "near_duplicate_groups", "survivor"]

_WORDS = re.compile(r"[a-z0-9]+")

MERGE_PROMPT = """These memories say nearly the same thing:
{memories}

Write one sentence that keeps every detail they contain. Answer with JSON only:
{{"text": "..."}}"""


def near_duplicate_groups(records: Sequence[Record], vectors: dict[str, np.ndarray],
                          embedder: object | None, threshold: float) -> list[list[Record]]:
    """Groups (size >= 2) of near-duplicate records, each in creation order."""
    pairs: list[tuple[int, int]] = []
    keys: dict[tuple[str, ...], int] = {}
    for i, rec in enumerate(records):
        key = tuple(_WORDS.findall(rec.text.lower()))
        if key in keys:
            pairs.append((i, keys[key]))
        else:
            keys[key] = i
    ids = [i for i, r in enumerate(records) if r.id in vectors]
    if len(ids) > 1:
        mat = np.vstack([vectors[records[i].id] for i in ids])
        sims = mat @ mat.T
        for a in range(len(ids)):
            for b in np.flatnonzero(sims[a, a + 1 :] >= 0.0) + a + 1:
                if calibrated_similarity(float(sims[a, b]), embedder) >= threshold:
                    pairs.append((ids[int(b)], ids[a]))
    return [sorted((records[i] for i in g), key=lambda r: (r.created_at, r.id))
            for g in join(len(records), pairs) if len(g) > 1]


def survivor(group: Sequence[Record]) -> Record:
    return sorted(group, key=lambda r: (-r.importance, -r.access_count, r.created_at, r.id))[0]


def _check(answer: Any) -> str:
    text = answer.get("text") if isinstance(answer, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise ValueError('expected {"text": "..."}')
    return " ".join(text.split())


def merge_text(client: ChatClient | None, group: Sequence[Record], keep: Record) -> str:
    """The survivor's new text: the LLM's merge, or its own text offline / on failure."""
    if client is None:
        return keep.text
    memories = "\n".join(f"- {r.text[:500]}" for r in group)
    try:
        return str(client.complete_json(
            [{"role": "user", "content": MERGE_PROMPT.format(memories=memories)}], _check,
            max_tokens=200))
    except (LLMError, BackendUnavailable) as exc:
        log.warning("LLM merge failed (%s); keeping the survivor's text", exc)
        return keep.text
