"""What reading a query also without the people it names costs a search, as a user meets
it: the default embedder, no vector given, the query's vectors not cached. The everyday
stores are indexed once; every question that names a person its store keeps notes about
(``engine.queries.unnamed``) is asked with both readings and with the query read whole,
alternated, three rounds each (search p50 and p95 in ms, embedding included).

    python benchmarks/named_query.py ../shared/data/everyday_dev.json
"""

from __future__ import annotations

import re
import statistics
import sys
import time

from memstream import Config, Memory
from memstream.bench.everyday import load
from memstream.engine import memory as engine_memory
from memstream.engine.queries import unnamed
from memstream.filters import Selection


def main() -> None:
    suite = load(sys.argv[1])
    took: dict[str, list[float]] = {"both readings": [], "query whole": []}
    with Memory(":memory:", config=Config(reflection_threshold=0), llm=None) as mem:
        asked = []
        for store, memories in suite.memories.items():
            ns = "everyday-" + re.sub(r"[^A-Za-z0-9._-]", "-", store)
            mem.add_many(memories, namespace=ns, duplicates="keep")
            mem.flush()
            asked += [(ns, q.text) for q in suite.questions if q.store == store and unnamed(
                mem.store, Selection(ns), q.text, mem.vectors.background())]
        print(f"{len(asked)} questions name a person their store knows", flush=True)
        for _ in range(3):
            for name in took:
                engine_memory.unnamed = unnamed if name == "both readings" else \
                    (lambda *_args: None)  # type: ignore[assignment]
                for ns, text in asked:
                    mem.vectors.clear()
                    t0 = time.perf_counter()
                    mem.search(text, namespace=ns, now=suite.now, touch=False)
                    took[name].append((time.perf_counter() - t0) * 1000)
        engine_memory.unnamed = unnamed
    for name, ms in took.items():
        ms.sort()
        print(f"{name:>14}: search p50 {statistics.median(ms):.1f} ms, "
              f"p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms")


if __name__ == "__main__":
    main()
