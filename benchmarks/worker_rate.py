"""The background worker's rate on a store of notes, with and without the reader: memories a
second from ``add`` to embedded and compared (``flush``), and the cost of each memory.

    python benchmarks/worker_rate.py ../shared/data/changes_dev.json [repeats]

Each store of the changes set is written as one user's notes (the worker compares notes; it
does not compare a conversation's turns), into a fresh SQLite file, with the default
embedder, once with ``Config(reader=False)`` and once with the reader on (the default), the
two in turn ``repeats`` times; the figures are the medians.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from memstream import Config, Memory


def run(stores: list[dict], reader: bool) -> tuple[float, int]:
    """(seconds, memories) to add and flush every store."""
    n = 0
    with tempfile.TemporaryDirectory() as tmp, Memory(
            Path(tmp) / "m.db", config=Config(reflection_threshold=0, reader=reader),
            llm=None) as mem:
        mem.add("warm up the embedder", user_id="warm")
        mem.flush()
        started = time.perf_counter()
        for s in stores:
            mem.add_many([{"text": m["text"], "kind": m.get("kind", "note"), "at": m["at"],
                           "user_id": s["user"]} for m in s["memories"]], duplicates="keep")
            n += len(s["memories"])
        mem.flush()
        return time.perf_counter() - started, n


def main() -> None:
    stores = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))["stores"]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    took: dict[bool, list[float]] = {False: [], True: []}
    n = 0
    for _ in range(repeats):
        for reader in (False, True):
            seconds, n = run(stores, reader)
            took[reader].append(seconds)
    for reader in (False, True):
        s = statistics.median(took[reader])
        print(f"reader {'on ' if reader else 'off'}: {n / s:.1f} memories/s, "
              f"{s / n * 1000:.1f} ms a memory ({n} memories, median of {repeats})")
    print(f"rate with the reader / without: "
          f"{statistics.median(took[False]) / statistics.median(took[True]):.2f}")


if __name__ == "__main__":
    main()
