"""BEAM retrieval benchmark: long user-assistant chats and their probing questions.

The data (BEAM, "Beyond a Million Tokens", Tavakoli et al. 2025, github.com/mohammadtavakoli78/
BEAM, no licence named by its repository) is not shipped: ``--data`` takes a folder of chats
(``<N>/chat.json`` and ``<N>/probing_questions.json``) or a ``.tar.xz`` of one. Scoring follows
the definitions that come with the development split:

- a memory is one exchange: its messages joined as ``role: content`` lines, timestamped at its
  batch's time anchor (batches without one follow the previous one by a day); one chat is one
  namespace;
- a question's evidence is the exchanges holding a message id listed in its
  ``source_chat_ids`` (a list, or a dict of lists); questions without such ids (abstention and
  a few others) are skipped and counted;
- recall_any@k, recall_frac@k and nDCG@k at k = 1, 5, 10 as in the LoCoMo bench, per category;
  "now" is the last time anchor plus one day; searches do not touch.

Beside the weight profiles, the same run scores two baselines over the same records: plain
vector search (the embedder's cosine, nothing else) and plain keyword search (the store's
BM25), so that every figure compares within one run.
"""

from __future__ import annotations

import ast
import json
import re
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config import Config
from ..engine.memory import Memory
from ..engine.queries import embed_ahead
from ..errors import InvalidInput
from ..filters import Selection
from ..retrieval.keywords import keyword_search, query_terms
from .metrics import KS, accumulate, profile_report

BASELINES = ("vector only", "keyword only")
DAY = 86400.0


@dataclass
class Exchange:
    key: str
    text: str
    at: float
    message_ids: set[str]


@dataclass
class Question:
    text: str
    category: str
    evidence: set[str]


@dataclass
class Chat:
    name: str
    exchanges: list[Exchange]
    questions: list[Question]
    skipped: int = 0


def _anchor(raw: Any) -> float | None:
    if not isinstance(raw, str) or not raw.strip():
        return None
    for fmt in ("%B-%d-%Y", "%b-%d-%Y", "%Y-%m-%d"):
        try:
            return datetime.strptime(raw.strip(), fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def _ids(raw: Any) -> set[str]:
    """Message ids of ``source_chat_ids``: a list, a dict of lists, or either as a string."""
    if isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            return set()
    if isinstance(raw, dict):
        return {i for v in raw.values() for i in _ids(v)}
    if isinstance(raw, list | tuple):
        return {str(i) for i in raw if isinstance(i, int | str)}
    if isinstance(raw, int):
        return {str(raw)}
    return set()


def load_chat(folder: Path) -> Chat:
    try:
        batches = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
        probing = folder / "probing_questions.json"
        if not probing.exists():  # the upstream repository's layout
            probing = folder / "probing_questions" / "probing_questions.json"
        probes = json.loads(probing.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"cannot read the BEAM chat in {folder}: {exc}") from exc
    exchanges: list[Exchange] = []
    at: float | None = None
    for b_no, batch in enumerate(batches):
        anchor = _anchor(batch.get("time_anchor"))
        if anchor is None:  # the first message that names one
            anchor = next((a for ex in batch.get("turns", []) for m in ex
                           if (a := _anchor(m.get("time_anchor"))) is not None), None)
        at = anchor if anchor is not None else (at + DAY if at is not None else 0.0)
        for e_no, exchange in enumerate(batch.get("turns", [])):
            text = "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}"
                             for m in exchange).strip()
            if text:
                exchanges.append(Exchange(f"{b_no}:{e_no}", text, at + e_no,
                                          {str(m.get("id")) for m in exchange}))
    by_message = {m: ex.key for ex in exchanges for m in ex.message_ids}
    questions, skipped = [], 0
    for category, items in probes.items():
        for item in items:
            evidence = {by_message[i] for i in _ids(item.get("source_chat_ids"))
                        if i in by_message}
            if not evidence or not item.get("question"):
                skipped += 1
                continue
            questions.append(Question(item["question"], category, evidence))
    return Chat(folder.name, exchanges, questions, skipped)


def load(path: str | Path) -> list[Chat]:
    """Every chat of a BEAM folder or ``.tar.xz`` (chats in numeric order)."""
    path = Path(path)
    if path.is_file():
        tmp = tempfile.TemporaryDirectory(prefix="memstream-beam-")
        try:
            with tarfile.open(path) as tar:
                tar.extractall(tmp.name, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise InvalidInput(f"cannot read the BEAM archive {path}: {exc}") from exc
        try:
            return load(tmp.name)
        finally:
            tmp.cleanup()
    folders = sorted({p.parent for p in path.rglob("chat.json")},
                     key=lambda p: (int(p.name) if p.name.isdigit() else 10**9, p.name))
    if not folders:
        raise InvalidInput(f"no BEAM chats (<N>/chat.json) under {path}; pass the folder or "
                           "the .tar.xz of the data")
    return [load_chat(f) for f in folders]


def run(path: str | Path, *, profiles: Iterable[str] = ("default",), db: str = ":memory:",
        embedder: str | None = None, limit: int | None = None,
        progress: Callable[[str, int], Any] | None = None) -> dict[str, Any]:
    """Index every chat, ask every question under each profile and each baseline, and return
    the figures."""
    chats = load(path)[:limit]
    names = [*profiles, *BASELINES]
    sums: dict[str, dict[str, dict[str, float]]] = {n: {} for n in names}
    counts: dict[str, dict[str, int]] = {n: {} for n in names}
    latencies: dict[str, list[float]] = {n: [] for n in names}
    index_seconds, exchanges = 0.0, 0
    with Memory(db, embedder=embedder, config=Config(reflection_threshold=0), llm=None) as mem:
        for chat in chats:
            ns = "beam-" + re.sub(r"[^A-Za-z0-9._-]", "-", chat.name)
            mem.delete_all(namespace=ns)
            t0 = time.perf_counter()
            mem.add_many(({"text": e.text, "at": e.at, "metadata": {"exchange": e.key}}
                          for e in chat.exchanges), namespace=ns)
            mem.flush()
            index_seconds += time.perf_counter() - t0
            exchanges += len(chat.exchanges)
            key_of = {r.id: r.metadata["exchange"] for r in mem.get_all(
                namespace=ns, limit=None, include_invalid=True)}
            now = max(e.at for e in chat.exchanges) + DAY
            for q in chat.questions:
                vector = mem.embedder.embed_query(q.text) if mem.embedder is not None else None
                if mem.embedder is not None:  # as a user's search reads it
                    embed_ahead(mem.vectors, mem.store, Selection(ns), q.text)
                for profile in profiles:
                    t1 = time.perf_counter()
                    hits = mem.search(q.text, k=max(KS), namespace=ns, now=now, touch=False,
                                      weights=profile)
                    latencies[profile].append((time.perf_counter() - t1) * 1000)
                    accumulate(sums[profile], counts[profile], q.category,
                                [key_of[h.record.id] for h in hits], q.evidence)
                terms, sel = query_terms(q.text), Selection(ns)
                t1 = time.perf_counter()
                baselines = {"keyword only": keyword_search(mem.store.indexes, sel, terms, max(KS))}
                latencies["keyword only"].append((time.perf_counter() - t1) * 1000)
                if vector is not None:
                    t1 = time.perf_counter()
                    baselines["vector only"] = mem.store.indexes.vector_search(sel, vector, max(KS))
                    latencies["vector only"].append((time.perf_counter() - t1) * 1000)
                for name, found in baselines.items():
                    accumulate(sums[name], counts[name], q.category,
                                [key_of[i] for i, _ in found], q.evidence)
            if progress:
                progress(chat.name, len(chat.questions))
    report: dict[str, Any] = {
        "data": str(path), "chats": len(chats), "exchanges": exchanges,
        "questions": sum(len(c.questions) for c in chats),
        "skipped_questions": sum(c.skipped for c in chats),
        "index_seconds": round(index_seconds, 2),
        "index_exchanges_per_second": round(exchanges / index_seconds, 1)
        if index_seconds else None,
        "profiles": {},
    }
    for name in names:
        if not counts[name]:
            continue
        report["profiles"][name] = profile_report(sums[name], counts[name], latencies[name])
    return report


def render(report: dict[str, Any]) -> str:
    """One table per profile and baseline, and a summary of recall_any@5 side by side."""
    lines = [
        f"BEAM {report['data']}: {report['chats']} chats, {report['exchanges']} exchanges, "
        f"{report['questions']} questions ({report['skipped_questions']} without evidence "
        "skipped)",
        f"index: {report['index_seconds']} s ({report['index_exchanges_per_second']} "
        "exchanges/s, embedding included)",
    ]
    cols = [f"{m}@{k}" for m in ("recall_any", "recall_frac", "ndcg") for k in KS]
    profiles = report["profiles"]
    for name, body in profiles.items():
        lines += ["", f"{name}: search p50 {body['latency_ms']['p50']} ms",
                  f"{'category':<26}{'n':>5} " + " ".join(f"{c:>14}" for c in cols)]
        cats = [*sorted(c for c in body["metrics"] if c != "overall"), "overall"]
        for cat in cats:
            m = body["metrics"][cat]
            lines.append(f"{cat:<26}{body['counts'][cat]:>5} "
                         + " ".join(f"{m[c]:>14.3f}" for c in cols))
    lines += ["", "recall_any@5 by category, side by side:",
              f"{'category':<26}" + "".join(f"{n:>14}" for n in profiles)]
    first = next(iter(profiles.values()))
    for cat in [*sorted(c for c in first["metrics"] if c != "overall"), "overall"]:
        lines.append(f"{cat:<26}" + "".join(
            f"{profiles[n]['metrics'].get(cat, {}).get('recall_any@5', 0.0):>14.3f}"
            for n in profiles))
    return "\n".join(lines)
