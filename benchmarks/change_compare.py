"""What the worker's comparison of a new memory with its owner's older ones costs, per memory,
in a store filled by ``memstream bench scale`` (docs/benchmarks.md, "Speed at 100,000 records").

    memstream bench scale --n 100000 --db /tmp/scale.db      # once: fills the store
    python benchmarks/change_compare.py /tmp/scale.db [count]

The store is copied first (it is never changed). ``count`` new memories (200 unless given) are
written with their vectors and the comparison turned off, then compared as the worker compares
them (``engine.changes.compare``), one at a time; it prints the milliseconds per memory (median
and 90th percentile). Run old and new code alternately to compare them (``farm-bench``)."""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from memstream import Config, Memory
from memstream.engine import changes


def main() -> None:
    source = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / source.name
        shutil.copy(source, db)
        config = Config(reflection_threshold=0, find_changes=False)
        with Memory(db, config=config, llm=None) as mem:
            held = mem.count(namespace="scale")
            stored = mem.store.indexes.embeddings("scale", [
                r.id for r in mem.get_all(namespace="scale", limit=count)])
            base = np.vstack(list(stored.values()))
            noise = rng.standard_normal(base.shape).astype(np.float32) * 0.02
            vecs = base + noise
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            recs = mem.add_many([{"text": f"new memory {n}: the rate went up", "embedding": v,
                                  "user_id": f"u{n % 50}"} for n, v in enumerate(vecs)],
                                namespace="scale")
            background = mem.vectors.background()
            changes.compare(mem, [("scale", recs[0].id)], background=background)  # warm
            took = []
            for r in recs[1:]:
                t0 = time.perf_counter()
                changes.compare(mem, [("scale", r.id)], background=background)
                took.append((time.perf_counter() - t0) * 1000)
    took.sort()
    print(f"{held:,} records: comparison {statistics.median(took):.2f} ms a memory (p50), "
          f"{took[int(0.9 * len(took))]:.2f} ms (p90), {len(took)} memories")


if __name__ == "__main__":
    main()
