"""``memstream demo``: a small scripted session on the embedded default, printed step by step."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from .._types import Hit
from ..core.clock import FixedClock
from ..engine.memory import Memory
from ..retrieval.scoring import PROFILES

_DAY = [
    (8.0, "Woke up in the apartment; the kitchen tap is still dripping.", None),
    (8.5, "Made coffee and read the news about the city marathon on Sunday.", None),
    (9.0, "Klaus said the landlord promised to fix the dripping tap by Friday.", 0.6),
    (10.0, "Started the quarterly report; the sales figures for March look wrong.", None),
    (11.5, "Found the bug: the March sales export double-counts refunds.", 0.9),
    (13.0, "Lunch with Maria; she is allergic to peanuts and prefers Thai food.", None),
    (15.0, "Sent the corrected report to the finance team.", None),
    (18.0, "Went for a 10 km run to train for the marathon.", None),
]

#: (question, weight profile, touch): the same question under the default rule (relevance
#: first) and under the memory-stream paper's formula, both read-only so that they see the
#: same recency; then a search that refreshes the last access of what it returns (its hits get
#: recency 1 in later searches)
_QUESTIONS = [
    ("What should I remember about Maria before booking dinner?", "default", False),
    ("What should I remember about Maria before booking dinner?", "paper", False),
    ("What went wrong with the report?", "default", True),
    ("What was the bug in the sales export?", "default", False),
]


def _describe(profile: str) -> str:
    w = PROFILES[profile]
    if w.rule == "relevance-first":
        return (f"{profile}: calibrated relevance first, {w.recency:g} x recency and "
                f"{w.importance:g} x importance to order the about equally relevant")
    return (f"{profile}: {w.recency:g} x recency + {w.importance:g} x importance + "
            f"{w.relevance:g} x relevance, each min-max normalised over the candidates")


def _why(mem: Memory, hits: list[Hit], n: int) -> str | None:
    """What put hit ``n`` above a hit that is more relevant to the question (None when nothing
    did): the adjustments of the ordering, or the record it follows up."""
    hit = hits[n]
    e = hit.explain
    if e.rule != "relevance-first" or not any(
            h.explain.relevance > e.relevance for h in hits[n + 1:]):
        return None
    parts = [f"{name} ({value:+.2f} on the relevance logit)" for name, value in
             sorted(e.adjustments.items(), key=lambda kv: -abs(kv[1])) if abs(value) >= 0.5]
    if e.lifted:
        parts.append(e.lifted)
    for rid in e.updates:
        older = mem.get(rid, namespace=hit.record.namespace).text
        parts.append(f"written after {older[:40] + '...' if len(older) > 40 else older!r}")
    if not parts:
        return "recency and importance (the relevances are about equal)"
    return "; ".join(parts) + " (docs/retrieval.md: what the notes stage added)"


def _below(hits: list[Hit], n: int) -> str | None:
    """Why hit ``n`` stands below hits less important than it (None when none is): under the
    default rule relevance comes first, and importance only orders the about equally
    relevant."""
    hit, above = hits[n], hits[:n]
    e = hit.explain
    if e.rule != "relevance-first" or not above or not all(
            h.explain.importance < e.importance and h.explain.relevance > e.relevance
            for h in above):
        return None
    return (f"it is the most important ({e.importance:.2f}), but it reads less alike to the "
            f"question (relevance {e.relevance:.2f} against {above[-1].explain.relevance:.2f} "
            "and more above), and importance only orders memories about as relevant: the "
            "next question, in its own words, finds it first")


def run_demo(path: str | None = None, *, echo: Callable[[str], Any] = print) -> None:
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="memstream-demo-")
        path = os.path.join(tmp.name, "demo.db")
        where = (f"a temporary file, deleted when the demo ends ({path}); `memstream --db "
                 "demo.db demo` keeps it in demo.db")
    else:
        where = (f"{path}, kept: `memstream --db {path} search \"...\" --agent ada` reads it "
                 "again")
    clock = FixedClock("2026-03-02T00:00:00Z")
    start = clock.now()
    try:
        with Memory(path, clock=clock) as mem:
            echo(f"memstream demo: one agent's day, stored in {where}\n")
            for hour, text, importance in _DAY:
                clock.set(start + hour * 3600)
                rec = mem.add(text, agent_id="ada", importance=importance)
                echo(f"  {hour:05.2f}h  add  [imp {rec.importance:.2f}] {text}")
            mem.flush()
            clock.set(start + 20 * 3600)
            echo("\nEach hit shows its score and the three signals that made it (see "
                 "docs/retrieval.md); a hit placed above a more relevant one says why.")
            for question, profile, touch in _QUESTIONS:
                echo(f"\nsearch ({_describe(profile)}{'' if touch else '; read-only'}): "
                     f"{question}")
                hits = mem.search(question, agent_id="ada", k=3, weights=profile, touch=touch)
                for n, hit in enumerate(hits):
                    e = hit.explain
                    echo(f"  {hit.score:.2f}  recency {e.recency:.2f}  importance "
                         f"{e.importance:.2f}  relevance {e.relevance:.2f}  {hit.record.text}")
                    why = _why(mem, hits, n)
                    if why:
                        echo(f"        why first: {why}" if n == 0 else f"        why: {why}")
                    below = _below(hits, n)
                    if below:
                        echo(f"        not higher: {below}")
            ctx = mem.context("dinner with Maria", agent_id="ada", budget=40)
            echo(f"\ncontext block for 'dinner with Maria' ({ctx.tokens} tokens of 40):\n"
                 f"{ctx.text}")
    finally:
        if tmp is not None:
            tmp.cleanup()
