"""LoCoMo retrieval benchmark: are the evidence turns among the top k?

Each conversation is indexed into its own namespace, one record per turn ("Speaker: text", plus
the caption of a shared photo), timestamped at its session's date. Each question of categories
1-4 (single-hop, temporal, open-domain, multi-hop; category 5, adversarial, has no evidence to
find) is searched in its conversation with ``touch=False`` and "now" one day after the last
session. Reported per category and overall: recall_any@k, recall_frac@k and nDCG@k for k = 1, 5,
10, index time and query latency. Evidence ids that name no turn (annotation slips in the data)
are dropped; questions left with no evidence are skipped and counted.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ..config import Config
from ..engine.memory import Memory
from ..engine.queries import embed_ahead
from ..errors import InvalidInput
from ..filters import Selection
from .metrics import KS, accumulate, percentile, profile_report

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D\d+:\d+")


@dataclass
class Turn:
    dia_id: str
    text: str
    at: float


@dataclass
class Question:
    text: str
    category: int
    evidence: set[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    skipped: int = 0


def parse_session_time(raw: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime (UTC)."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError as exc:
        raise InvalidInput(f"cannot read the LoCoMo session time {raw!r}") from exc


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn.get('text', '')}".strip()
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shares a photo: {caption}]"
    return text


def load(path: str | Path) -> list[Conversation]:
    """Read a LoCoMo JSON file into conversations with their turns and scorable questions."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"cannot read the LoCoMo file {path}: {exc}") from exc
    out = []
    for sample in raw:
        conv = sample["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv:
            start = parse_session_time(conv[f"session_{n}_date_time"])
            for i, t in enumerate(conv[f"session_{n}"]):
                at = start + timedelta(seconds=30 * i)
                turns.append(Turn(t["dia_id"], turn_text(t), at.timestamp()))
            n += 1
        known = {t.dia_id for t in turns}
        questions, skipped = [], 0
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = {e for item in qa.get("evidence", []) for e in _EVIDENCE.findall(item)}
            evidence &= known
            if not evidence:
                skipped += 1
                continue
            questions.append(Question(qa["question"], qa["category"], evidence))
        out.append(Conversation(sample["sample_id"], turns, questions, skipped))
    return out


@dataclass
class Result:
    profile: str
    scores: dict[str, dict[str, float]] = field(default_factory=dict)  # category -> metric -> v
    counts: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)

    def row(self, category: str) -> dict[str, float]:
        return self.scores[category]


class _Silenced:
    """A search-index part one of whose searches (``drop``) answers nothing."""

    def __init__(self, indexes: Any, drop: str) -> None:
        self._indexes, self._drop = indexes, drop

    def __getattr__(self, name: str) -> Any:
        if name == self._drop:
            return lambda *a, **k: []
        return getattr(self._indexes, name)


class _Only:
    """A store whose keyword or vector index answers nothing: one source at a time."""

    def __init__(self, store: Any, drop: str) -> None:
        self._store, self._drop = store, drop

    def __getattr__(self, name: str) -> Any:
        if name == "indexes":  # the searches are the indexes part's
            return _Silenced(self._store.indexes, self._drop)
        return getattr(self._store, name)


#: (name, which index to silence, SearchParams changes) for --ablate; "recall" weights.
ABLATIONS: list[tuple[str, str | None, dict[str, Any]]] = [
    ("keyword only", "vector_search", {"context": 0}),
    ("vector only", "keyword_scores", {"context": 0}),
    ("fused, RRF k=60", None, {"context": 0, "rrf_k": 60}),
    ("fused, RRF k=10", None, {"context": 0}),
    ("keyword + context", "vector_search", {}),
    ("vector + context", "keyword_scores", {"rerank": False}),
    ("fused + context", None, {"rerank": False}),
    ("fused + context + learned stage (default)", None, {}),
]


def pad_namespace(mem: Memory, namespace: str, count: int, *, users: int = 50,
                  seed: int = 3) -> None:
    """Fill ``namespace`` with ``count`` records of other users: 22 pseudo-words each (the
    length of a LoCoMo turn) and a random unit vector, so that they share the namespace's
    statistics and indexes without answering anything."""
    rng = np.random.default_rng(seed)
    dim = mem.embedder.dim if mem.embedder is not None else None
    for start in range(0, count, 5000):
        n = min(5000, count - start)
        vecs = rng.normal(size=(n, dim)).astype(np.float32) if dim else None
        if vecs is not None:
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        mem.add_many([{"text": " ".join(f"pad{j}" for j in rng.integers(0, 50_000, 22)),
                       "user_id": f"padding-{(start + i) % users}", "at": 1.6e9 + start + i,
                       "embedding": None if vecs is None else vecs[i]} for i in range(n)],
                     namespace=namespace)


def run(path: str | Path, *, profiles: Iterable[str] = ("recall",), db: str = ":memory:",
        embedder: str | None = None, limit: int | None = None, ablate: bool = False,
        pad: int = 0, progress: Callable[[str, int], Any] | None = None) -> dict[str, Any]:
    """Index every conversation, ask every question under each weight profile (and, with
    ``ablate``, under each stage of ``ABLATIONS``), and return the figures. With ``pad``, the
    conversations are ``user_id``s of one namespace holding ``pad`` records in all (the rest
    from ``pad_namespace``), and each question is searched with its conversation's user."""
    from ..engine.search import run_search
    from ..retrieval.pipeline import SearchParams
    from ..retrieval.scoring import resolve_weights

    conversations = load(path)[:limit]
    profiles = list(profiles)
    variants = [name for name, _, _ in ABLATIONS] if ablate else []
    sums = {p: {} for p in profiles + variants}  # type: dict[str, dict[str, dict[str, float]]]
    counts: dict[str, dict[str, int]] = {p: {} for p in profiles + variants}
    latencies: dict[str, list[float]] = {p: [] for p in profiles + variants}
    embed_ms: list[float] = []
    index_seconds = 0.0
    turns = 0
    # automatic reflection would add insight records to the conversations: not turns, so off
    with Memory(db, embedder=embedder, config=Config(reflection_threshold=0), llm=None) as mem:
        if pad:
            if ablate:
                raise InvalidInput("--ablate searches whole namespaces; run it without --pad")
            mem.delete_all(namespace="locomo-padded")
            pad_namespace(mem, "locomo-padded",
                          max(0, pad - sum(len(c.turns) for c in conversations)))
        for conv in conversations:
            ns = "locomo-padded" if pad else \
                "locomo-" + re.sub(r"[^A-Za-z0-9._-]", "-", conv.sample_id)
            user = conv.sample_id if pad else None
            if not pad:
                mem.delete_all(namespace=ns)
            t0 = time.perf_counter()
            mem.add_many(({"text": t.text, "at": t.at, "metadata": {"dia_id": t.dia_id},
                           "user_id": user} for t in conv.turns), namespace=ns)
            mem.flush()
            index_seconds += time.perf_counter() - t0
            turns += len(conv.turns)
            by_id = {r.id: r.metadata["dia_id"] for r in mem.get_all(
                namespace=ns, user_id=user, limit=None, include_invalid=True)}
            now = max(t.at for t in conv.turns) + 86400
            for q in conv.questions:
                vector = None
                if mem.embedder is not None:
                    t1 = time.perf_counter()
                    vector = mem.embedder.embed_query(q.text)
                    embed_ms.append((time.perf_counter() - t1) * 1000)
                if mem.embedder is not None:  # as a user's search reads it
                    embed_ahead(mem.vectors, mem.store, Selection(ns, user_id=user), q.text)
                for profile in profiles:
                    t1 = time.perf_counter()
                    hits = mem.search(q.text, k=max(KS), namespace=ns, user_id=user, now=now,
                                      touch=False, weights=profile)
                    latencies[profile].append((time.perf_counter() - t1) * 1000)
                    ranked = [by_id[h.record.id] for h in hits]
                    accumulate(sums[profile], counts[profile], CATEGORIES[q.category], ranked,
                                q.evidence)
                for name, drop, changes in ABLATIONS if ablate else []:
                    params = SearchParams.of(mem.config, k=max(KS),
                                             weights=resolve_weights("recall"), **changes)
                    store = mem.store if drop is None else _Only(mem.store, drop)
                    t1 = time.perf_counter()
                    hits = run_search(store, Selection(ns), q.text, vector, now, params)
                    latencies[name].append((time.perf_counter() - t1) * 1000)
                    accumulate(sums[name], counts[name], CATEGORIES[q.category],
                                [by_id[h.record.id] for h in hits], q.evidence)
            if progress:
                progress(conv.sample_id, len(conv.questions))
    report: dict[str, Any] = {
        "data": str(path),
        "conversations": len(conversations),
        "turns": turns,
        "questions": sum(len(c.questions) for c in conversations),
        "skipped_questions": sum(c.skipped for c in conversations),
        "index_seconds": round(index_seconds, 2),
        "index_turns_per_second": round(turns / index_seconds, 1) if index_seconds else None,
        "query_embedding_ms": {"p50": round(percentile(embed_ms, 50), 2),
                               "p95": round(percentile(embed_ms, 95), 2)},
        "profiles": {},
    }
    for profile in profiles + variants:
        report["profiles"][profile] = profile_report(sums[profile], counts[profile],
                                                     latencies[profile])
    return report


def render(report: dict[str, Any]) -> str:
    """A plain-text table per profile."""
    lines = [
        f"LoCoMo {report['data']}: {report['conversations']} conversations, {report['turns']} "
        f"turns, {report['questions']} questions (categories 1-4; {report['skipped_questions']} "
        "without usable evidence skipped)",
        f"index: {report['index_seconds']} s ({report['index_turns_per_second']} turns/s, "
        "embedding included)",
        f"query embedding: p50 {report['query_embedding_ms']['p50']} ms, p95 "
        f"{report['query_embedding_ms']['p95']} ms",
    ]
    cols = [f"{m}@{k}" for m in ("recall_any", "recall_frac", "ndcg") for k in KS]
    for profile, body in report["profiles"].items():
        lines.append("")
        lines.append(f"profile {profile}: search p50 {body['latency_ms']['p50']} ms, "
                     f"p95 {body['latency_ms']['p95']} ms (after query embedding)")
        lines.append(f"{'category':<12}{'n':>5} " + " ".join(f"{c:>14}" for c in cols))
        order = [*CATEGORIES.values(), "overall"]
        for cat in order:
            if cat not in body["metrics"]:
                continue
            m = body["metrics"][cat]
            lines.append(f"{cat:<12}{body['counts'][cat]:>5} "
                         + " ".join(f"{m[c]:>14.3f}" for c in cols))
    return "\n".join(lines)
