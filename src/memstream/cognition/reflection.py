"""Reflection: synthesise higher-level insights from recent memories, citing their evidence.

With an LLM (the memory-stream paper's procedure):
1. the most recent records (100) are numbered and shown to the model, which names the 3 most
   salient high-level questions they raise;
2. each question is searched in the stream (relevance-dominated weights) and the results,
   numbered again, go back to the model with the request for 5 insights, each citing the
   numbers of the statements it rests on;
3. each insight becomes a ``reflection`` record whose provenance is the cited records' ids.
   Numbers the model invents are dropped; an insight left with no evidence is dropped.

Offline (or when the LLM fails): the recent records are grouped greedily by similarity
(calibrated embedding similarity >= 0.5, or shared content words >= 0.3 Jaccard without
vectors), largest groups first; each group of at least 2 records yields one reflection that
restates its most important record ("Recurring: <text> (n related memories)"), with the
group's ids as provenance. Reflections are records too, so they can be reflected on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._types import Record
from ..embed.protocol import calibrated_similarity
from ..errors import BackendUnavailable, LLMError
from ..llm import ChatClient
from ..retrieval.keywords import query_terms

log = logging.getLogger("memstream.reflection")

__all__ = ["Insight", "extractive_insights", "llm_insights"]

RECENT = 100
QUESTIONS = 3
INSIGHTS = 5
PER_QUESTION = 8
MAX_GROUPS = 5

QUESTION_PROMPT = """Here are an agent's most recent memories, numbered:
{statements}

Given only this information, what are the {n} most salient high-level questions we can answer
about the subjects in these statements? Answer with JSON only:
{{"questions": ["...", "...", "..."]}}"""

INSIGHT_PROMPT = """Statements from an agent's memory, numbered:
{statements}

What {n} high-level insights can you infer from these statements? Each insight must cite the
numbers of the statements it rests on. Answer with JSON only:
{{"insights": [{{"insight": "...", "evidence": [1, 4]}}]}}"""


@dataclass(frozen=True, slots=True)
class Insight:
    text: str
    evidence: tuple[str, ...]


def _numbered(records: Sequence[Record]) -> str:
    return "\n".join(f"{i}. {r.text[:500]}" for i, r in enumerate(records, start=1))


def _check_questions(answer: Any) -> list[str]:
    questions = answer.get("questions") if isinstance(answer, dict) else None
    if not isinstance(questions, list) or not questions or \
            not all(isinstance(q, str) and q.strip() for q in questions):
        raise ValueError('expected {"questions": [non-empty strings]}')
    return [q.strip() for q in questions[:QUESTIONS]]


def _check_insights(answer: Any) -> list[tuple[str, list[int]]]:
    items = answer.get("insights") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError('expected {"insights": [{"insight": str, "evidence": [int]}]}')
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("insight"), str):
            raise ValueError("each insight needs an 'insight' string")
        ev = item.get("evidence", [])
        if not isinstance(ev, list):
            raise ValueError("'evidence' must be a list of statement numbers")
        out.append((item["insight"].strip(), [int(e) for e in ev
                                              if isinstance(e, int | float | str)
                                              and str(e).strip().isdigit()]))
    return out


def llm_insights(client: ChatClient, recent: Sequence[Record],
                 search: Callable[[str], list[Record]]) -> list[Insight]:
    """Questions, retrieval per question, cited insights (raises LLMError/BackendUnavailable)."""
    questions = client.complete_json(
        [{"role": "user", "content": QUESTION_PROMPT.format(statements=_numbered(recent),
                                                            n=QUESTIONS)}], _check_questions)
    evidence: dict[str, Record] = {}
    for question in questions:
        for rec in search(question)[:PER_QUESTION]:
            evidence.setdefault(rec.id, rec)
    pool = list(evidence.values()) or list(recent)
    raw = client.complete_json(
        [{"role": "user", "content": INSIGHT_PROMPT.format(statements=_numbered(pool),
                                                           n=INSIGHTS)}], _check_insights)
    insights = []
    for text, numbers in raw:
        ids = tuple(dict.fromkeys(pool[n - 1].id for n in numbers if 1 <= n <= len(pool)))
        if text and ids:
            insights.append(Insight(text, ids))
    return insights


def _groups(records: Sequence[Record], vectors: dict[str, np.ndarray],
            embedder: object | None) -> list[list[Record]]:
    words = {r.id: set(query_terms(r.text)) for r in records}

    def close(a: Record, b: Record) -> bool:
        va, vb = vectors.get(a.id), vectors.get(b.id)
        if va is not None and vb is not None and va.shape == vb.shape:
            return calibrated_similarity(float(va @ vb), embedder) >= 0.5
        wa, wb = words[a.id], words[b.id]
        return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= 0.3

    groups: list[list[Record]] = []
    for rec in sorted(records, key=lambda r: (-r.importance, r.created_at, r.id)):
        for group in groups:
            if close(group[0], rec):
                group.append(rec)
                break
        else:
            groups.append([rec])
    multi = [g for g in groups if len(g) >= 2]
    multi.sort(key=lambda g: (-len(g), -g[0].importance, g[0].id))
    return multi[:MAX_GROUPS]


def extractive_insights(records: Sequence[Record], vectors: dict[str, np.ndarray],
                        embedder: object | None) -> list[Insight]:
    """The offline fallback (see the module docstring)."""
    out = []
    for group in _groups(records, vectors, embedder):
        head = group[0]
        out.append(Insight(f"Recurring: {head.text} ({len(group)} related memories)",
                           tuple(r.id for r in group)))
    return out


def reflect_insights(client: ChatClient | None, recent: Sequence[Record],
                     search: Callable[[str], list[Record]], vectors: dict[str, np.ndarray],
                     embedder: object | None) -> tuple[list[Insight], str]:
    """(insights, "llm" or "extractive"): the LLM path, falling back on any failure."""
    if client is not None:
        try:
            found = llm_insights(client, recent, search)
            if found:
                return found, "llm"
            log.warning("the LLM cited no real evidence; using the extractive reflection")
        except (LLMError, BackendUnavailable) as exc:
            log.warning("LLM reflection failed (%s); using the extractive reflection", exc)
    return extractive_insights(recent, vectors, embedder), "extractive"
