"""Write ``src/memstream/retrieval/past_direction.json``: the direction that tells a question
about the past (``memstream.retrieval.past``) in the default embedder's space, drawn from the
questions written in that module, so that a store's first search need not embed them.

    python tools/past_direction.py

Run it again whenever the questions or the default embedder change: the file names both
(``questions``: a digest of the questions), and is not read for any others."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from memstream.embed import load_embedder
from memstream.retrieval.past import EVENTS, NOW, PAST, SHIPPED, Past, questions_key

OUT = Path(__file__).resolve().parents[1] / "src" / "memstream" / "retrieval" / SHIPPED


def main() -> None:
    embedder = load_embedder(None)
    assert embedder is not None
    past = Past.between(np.array([embedder.embed_query(q) for q in NOW + EVENTS]),
                        np.array([embedder.embed_query(q) for q in PAST]))
    OUT.write_text(json.dumps({
        "embedder": embedder.name, "questions": questions_key(),
        "midpoint": round(past.midpoint, 8),
        "direction": [round(float(v), 8) for v in past.direction]}) + "\n", encoding="utf-8")
    print(f"wrote {OUT} for {embedder.name}")


if __name__ == "__main__":
    main()
