"""The LoCoMo bench's ablations silence one index at a time: "keyword only" must not see the
vector index, "vector only" not the keyword index (over a real SQLite store)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memstream import Memory
from memstream.bench.locomo import ABLATIONS, _Only
from memstream.filters import Selection
from memstream.retrieval.keywords import keyword_search


def test_each_ablation_silences_the_index_it_names(tmp_path: Path):
    with Memory(tmp_path / "a.db", embedder="none") as mem:
        vec = np.array([1.0, 0.0, 0.0], dtype=np.float32)
        mem.add("the walrus sings at dawn", embedding=vec, namespace="ns")
        sel = Selection("ns")
        assert mem.store.indexes.vector_search(sel, vec, 5)
        assert keyword_search(mem.store.indexes, sel, ["walrus"], 5)
        drops = {name: drop for name, drop, _ in ABLATIONS}
        keyword_only = _Only(mem.store, drops["keyword only"])
        assert keyword_only.indexes.vector_search(sel, vec, 5) == []
        assert keyword_search(keyword_only.indexes, sel, ["walrus"], 5)
        vector_only = _Only(mem.store, drops["vector only"])
        assert keyword_search(vector_only.indexes, sel, ["walrus"], 5) == []
        assert vector_only.indexes.vector_search(sel, vec, 5)
        assert vector_only.records.count(sel) == 1  # the other parts answer as they are
