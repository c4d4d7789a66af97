"""One note made of names, just under the default size limit: how long its add takes and how
many entities it makes (the graph links at most ``MAX_PER_RECORD`` names of a record).

    python benchmarks/entity_big_note.py [characters]
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from memstream import Config, Memory

FIRST = ["Marta", "Jonas", "Priya", "Kenji", "Oskar", "Renee", "Lucia", "Tobias"]


def note(chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    words: list[str] = []
    size = 0
    while size < chars:
        last = "".join(rng.choice("abcdefghij") for _ in range(6)).capitalize()
        words.append(f"{rng.choice(FIRST)} {last}")
        size += len(words[-1]) + 2
    return ", ".join(words)[:chars]


def main() -> None:
    chars = int(sys.argv[1]) if len(sys.argv) > 1 else 990_000
    text = note(chars)
    with tempfile.TemporaryDirectory() as tmp, Memory(
            Path(tmp) / "big.db", embedder="none", llm=None,
            config=Config(reflection_threshold=0)) as mem:
        t0 = time.perf_counter()
        mem.add(text)
        took = time.perf_counter() - t0
        entities, mentions = mem.store.graph.size()
    print(f"a {chars:,}-character note of names: added in {took:.2f} s, {entities:,} entities, "
          f"{mentions:,} mentions")


if __name__ == "__main__":
    main()
