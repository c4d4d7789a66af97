"""Ingest as a user meets it, with the default embedder: everyday notes added ten at a time
and embedded, with the entity graph on and off in turn (notes a second, twice each).

    python benchmarks/entity_ingest.py ../shared/data/everyday_dev.json [count]

With the graph on, the worker also reads the kinds the names' words leave open
(``cognition.kinds``, ``engine.kinds``), from a cold start each run.

``memstream bench entities`` measures the graph's cost where it is largest, records whose
vectors are given; this measures it beside the embedding every added note pays
(docs/benchmarks.md, "Entities")."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from memstream import Config, Memory
from memstream.engine import kinds
from memstream.store.parts.graph import Graph


def rate(texts: list[str], graph: bool) -> float:
    kinds._memo.clear()  # every run reads the kinds of its names afresh, as a new process does
    link = Graph.link
    if not graph:  # the write path without linking names (as bench.entities does)
        Graph.link = lambda self, db, records: None  # type: ignore[method-assign,assignment]
    try:
        with tempfile.TemporaryDirectory() as tmp, Memory(
                Path(tmp) / "notes.db", config=Config(reflection_threshold=0), llm=None) as mem:
            mem.add("warm up")
            mem.flush()
            t0 = time.perf_counter()
            for start in range(0, len(texts), 10):
                mem.add_many([{"content": t, "user_id": "u"} for t in texts[start:start + 10]])
            mem.flush()
            return len(texts) / (time.perf_counter() - t0)
    finally:
        Graph.link = link  # type: ignore[method-assign]


def main() -> None:
    suite = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    texts = [m["text"] for m in suite["memories"]][: int(sys.argv[2]) if len(sys.argv) > 2
                                                     else 400]
    for graph in (False, True, False, True):
        print(f"graph {'on ' if graph else 'off'}: {rate(texts, graph):.1f} notes/s", flush=True)


if __name__ == "__main__":
    main()
