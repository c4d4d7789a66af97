from __future__ import annotations

from collections.abc import Iterator

import pytest

from memstream import Config, FixedClock, Memory

#: "now" of the small stores below
NOW = 1_700_000_000.0


@pytest.fixture
def small(e5) -> Iterator[Memory]:
    """An in-memory store with the real model, embedding inside add, its clock at ``NOW``."""
    with Memory(":memory:", embedder=e5, config=Config(reflection_threshold=0,
                                                         embed_mode="sync"),
                clock=FixedClock(NOW), llm=None) as mem:
        yield mem
