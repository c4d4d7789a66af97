"""The everyday bench: small stores of everyday notes, the question asked of each, and the
memory that should come first.

The data is a JSON file (``{"now", "memories", "questions"}``, as ``everyday_dev.json`` of the
development split; it is never shipped): each memory names its store (``user``), ``kind``,
``at`` (ISO 8601) and ``text``; each question its store, ``type``, ``lang``, the ``question``
and ``expected``, the exact texts of the memories that answer it (each a correct first
answer; for ``multi_hop`` all are needed; an empty list: nothing stored answers).

Every store is one namespace. Each question is asked at ``now`` without touching, under each
weight profile and two baselines over the same records in the same run: plain vector search
(the embedder's cosine, nothing else) and plain keyword search (the store's BM25). Figures:

- ``first``: an expected memory is the first hit; ``top5``: one is among the first five;
  ``all@10`` (multi_hop): the share of the expected memories among the first ten;
- per type, per language and per store, over answerable questions;
- calibration (profiles only: the baselines have no relevance): ``nothing_flagged``, the
  "nothing" questions whose best hit has relevance below 0.5; ``nothing_best``, that best
  relevance on average; ``confident_wrong``, the share of the top-5 hits that answer nothing
  (of answerable questions) with relevance of 0.9 or more; ``reliability``, the first ten
  hits of every question by relevance beside their share of answers, with the expected
  calibration error; ``min_relevance``, the threshold that best keeps answers and drops the
  rest, chosen on the other stores for each store (``metrics.held_out_threshold``).
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..config import Config
from ..engine.memory import Memory
from ..engine.queries import embed_ahead
from ..errors import InvalidInput
from ..filters import Selection
from ..retrieval.keywords import keyword_search, query_terms
from .metrics import held_out_threshold, percentile, reliability, render_reliability

BASELINES = ("vector only", "keyword only")
#: a relevance below this says "nothing relevant"; one at or above ``CONFIDENT`` says "this is it"
FLAG, CONFIDENT = 0.5, 0.9


@dataclass(frozen=True, slots=True)
class Question:
    store: str
    type: str
    lang: str
    text: str
    expected: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Suite:
    now: float
    memories: dict[str, list[dict[str, Any]]]
    questions: list[Question]


def _time(raw: Any, where: str) -> float:
    try:
        return datetime.fromisoformat(str(raw).replace("Z", "+00:00")).timestamp()
    except ValueError as exc:
        raise InvalidInput(f"{where}: {raw!r} is not an ISO 8601 time") from exc


def load(path: str | Path) -> Suite:
    """The stores and questions of an everyday JSON file (see the module docstring)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        memories: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for n, m in enumerate(raw["memories"]):
            memories[m["user"]].append({"text": m["text"], "kind": m.get("kind", "note"),
                                        "at": _time(m["at"], f"memory {n}")})
        questions = [Question(q["user"], q["type"], q.get("lang", "?"), q["question"],
                              tuple(q.get("expected", ()))) for q in raw["questions"]]
        now = _time(raw["now"], "now")
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InvalidInput(f"cannot read the everyday suite {path}: {exc!r}; it needs 'now', "
                           "'memories' (user, at, text) and 'questions' (user, type, question, "
                           "expected)") from exc
    for q in questions:
        texts = {m["text"] for m in memories.get(q.store, [])}
        missing = [e for e in q.expected if e not in texts]
        if missing:
            raise InvalidInput(f"question {q.text!r}: expected memory {missing[0][:60]!r} is "
                               f"not in store {q.store!r}")
    return Suite(now, dict(memories), questions)


class _Tally:
    """Hit counts of one profile or baseline, by group."""

    def __init__(self) -> None:
        self.n: dict[str, int] = defaultdict(int)
        self.first: dict[str, int] = defaultdict(int)
        self.top5: dict[str, int] = defaultdict(int)
        self.all10: dict[str, float] = defaultdict(float)
        self.multi: dict[str, int] = defaultdict(int)
        self.nothing = 0
        self.flagged = 0
        self.nothing_best: list[float] = []
        self.wrong = 0
        self.confident_wrong = 0
        self.latency: list[float] = []
        #: each store's shown hits: (relevance, answers the question?)
        self.shown: dict[str, list[tuple[float, bool]]] = defaultdict(list)

    def answer(self, q: Question, ranked: Sequence[str], relevance: Sequence[float] | None
               ) -> None:
        if relevance is not None:
            self.shown[q.store].extend((rel, text in q.expected)
                                       for text, rel in zip(ranked, relevance, strict=False))
        if not q.expected:
            self.nothing += 1
            if relevance is not None:
                best = max(relevance[:1], default=0.0)
                self.nothing_best.append(best)
                self.flagged += best < FLAG
            return
        want = set(q.expected)
        groups = ("overall", f"type:{q.type}", f"lang:{q.lang}", f"store:{q.store}")
        for g in groups:
            self.n[g] += 1
            self.first[g] += bool(ranked[:1]) and ranked[0] in want
            self.top5[g] += any(t in want for t in ranked[:5])
            if q.type == "multi_hop":
                self.multi[g] += 1
                self.all10[g] += len(want.intersection(ranked[:10])) / len(want)
        if relevance is not None:
            for text, rel in zip(ranked[:5], relevance[:5], strict=False):
                if text not in want:
                    self.wrong += 1
                    self.confident_wrong += rel >= CONFIDENT

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"groups": {
            g: {"n": self.n[g], "first": round(self.first[g] / self.n[g], 3),
                "top5": round(self.top5[g] / self.n[g], 3),
                "first_count": self.first[g], "top5_count": self.top5[g],
                **({"all@10": round(self.all10[g] / self.multi[g], 3)} if self.multi[g] else {})}
            for g in self.n},
            "latency_ms": {"p50": round(percentile(self.latency, 50), 2),
                           "p95": round(percentile(self.latency, 95), 2)}}
        if self.nothing_best:
            out["calibration"] = {
                "nothing": self.nothing, "nothing_flagged": self.flagged,
                "nothing_best": round(sum(self.nothing_best) / len(self.nothing_best), 3),
                "top5_wrong": self.wrong,
                "confident_wrong": round(self.confident_wrong / self.wrong, 3)
                if self.wrong else 0.0}
        if self.shown:
            out["reliability"] = reliability([p for ps in self.shown.values() for p in ps])
            out["min_relevance"] = held_out_threshold(self.shown)
        return out


def run(path: str | Path, *, profiles: Iterable[str] = ("default",), db: str = ":memory:",
        embedder: str | None = None, stores: Sequence[str] | None = None,
        progress: Callable[[str, int], Any] | None = None) -> dict[str, Any]:
    """Index every store, ask every question under each profile and each baseline, and return
    the figures. ``stores`` keeps only the stores named."""
    suite = load(path)
    names = [*profiles, *BASELINES]
    tallies = {n: _Tally() for n in names}
    chosen = [s for s in suite.memories if stores is None or s in stores]
    with Memory(db, embedder=embedder, config=Config(reflection_threshold=0), llm=None) as mem:
        for store in chosen:
            ns = "everyday-" + re.sub(r"[^A-Za-z0-9._-]", "-", store)
            mem.delete_all(namespace=ns)
            mem.add_many(suite.memories[store], namespace=ns, duplicates="keep")
            mem.flush()
            text_of = {r.id: r.text for r in mem.get_all(
                namespace=ns, limit=None, include_invalid=True)}
            asked = [q for q in suite.questions if q.store == store]
            for q in asked:
                vector = mem.embedder.embed_query(q.text) if mem.embedder is not None else None
                embed_ahead(mem.vectors, mem.store, Selection(ns), q.text)  # as a user's search
                for profile in profiles:
                    t0 = time.perf_counter()
                    hits = mem.search(q.text, k=10, namespace=ns, now=suite.now, touch=False,
                                      weights=profile)
                    tallies[profile].latency.append((time.perf_counter() - t0) * 1000)
                    tallies[profile].answer(q, [h.record.text for h in hits],
                                            [h.explain.relevance for h in hits])
                sel = Selection(ns, include_invalid=True)  # plain: no link of engine.changes
                t0 = time.perf_counter()
                found = {"keyword only": keyword_search(mem.store.indexes, sel,
                                                        query_terms(q.text), 10)}
                took = {"keyword only": time.perf_counter() - t0}
                if vector is not None:
                    t0 = time.perf_counter()
                    found["vector only"] = mem.store.indexes.vector_search(sel, vector, 10)
                    took["vector only"] = time.perf_counter() - t0
                for name, ranked in found.items():
                    tallies[name].latency.append(took[name] * 1000)  # timed like the profiles
                    tallies[name].answer(q, [text_of[i] for i, _ in ranked], None)
            if progress:
                progress(store, len(asked))
    return {"data": str(path), "stores": len(chosen),
            "memories": sum(len(suite.memories[s]) for s in chosen),
            "questions": sum(q.store in chosen for q in suite.questions),
            "profiles": {n: t.report() for n, t in tallies.items() if t.n or t.nothing}}


def render(report: dict[str, Any]) -> str:
    """First and top-5 side by side, by group, then the calibration of each profile."""
    profiles = report["profiles"]
    lines = [f"everyday {report['data']}: {report['stores']} stores, {report['memories']} "
             f"memories, {report['questions']} questions", "",
             "answer first / in the top 5 (answerable questions):",
             f"{'group':<30}{'n':>4}" + "".join(f"{n:>18}" for n in profiles)]
    first = next(iter(profiles.values()))["groups"]
    order = sorted(first, key=lambda g: (g != "overall", g.split(":")[0], g))
    for g in order:
        cells = []
        for body in profiles.values():
            c = body["groups"].get(g)
            cells.append(f"{c['first']:.2f} / {c['top5']:.2f}" if c else "-")
        lines.append(f"{g:<30}{first[g]['n']:>4}" + "".join(f"{c:>18}" for c in cells))
    multi = [g for g in order if "all@10" in first[g]]
    if multi:
        lines.append(f"{'multi_hop all@10':<34}" + "".join(
            f"{profiles[n]['groups'][multi[0]]['all@10']:>18.2f}" for n in profiles))
    lines.append("")
    for name, body in profiles.items():
        lat = body["latency_ms"]
        cal = body.get("calibration")
        extra = (f"; nothing flagged {cal['nothing_flagged']}/{cal['nothing']} (best relevance "
                 f"{cal['nothing_best']:.2f} on average); top-5 non-answers with relevance "
                 f">= {CONFIDENT}: {cal['confident_wrong']:.1%} of {cal['top5_wrong']}"
                 if cal else "")
        lines.append(f"{name}: search p50 {lat['p50']} ms{extra}")
        if "reliability" in body:
            lines.extend("  " + line for line in render_reliability(body))
    return "\n".join(lines)
