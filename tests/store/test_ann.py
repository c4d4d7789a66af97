"""The approximate (HNSW) index of large namespaces, on small hand-made stores: a low
``ann_threshold`` turns it on for a few hundred vectors."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from memstream import Config, InvalidInput, Memory
from memstream.filters import Selection
from memstream.store import Patch
from memstream.store.sqlite import SQLiteStore

from .conformance import T0, rec

DIM = 16


def vectors(n: int, seed: int = 3) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def exact_top(vecs: np.ndarray, ids: list[str], q: np.ndarray, k: int,
              keep: list[bool] | None = None) -> list[str]:
    scores = vecs @ q
    order = [i for i in np.argsort(-scores) if keep is None or keep[i]]
    return [ids[i] for i in order[:k]]


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, list[str], np.ndarray]:
    path = tmp_path / "ann.db"
    vecs = vectors(400)
    recs = [rec(f"r{i}", embedding=vecs[i], at=T0 + i, user_id=f"u{i % 10}",
                data={"rare": i < 3}) for i in range(400)]
    s = SQLiteStore(path, ann_threshold=100)
    s.records.insert(recs, model="m")
    s.close()
    return path, [r.id for r in recs], vecs


def test_graph_answers_like_exact_search_and_is_saved(filled, caplog) -> None:
    path, ids, vecs = filled
    q = vectors(1, seed=9)[0]
    caplog.set_level(logging.INFO, "memstream.ann")
    s = SQLiteStore(path, ann_threshold=100)
    got = [i for i, _ in s.indexes.vector_search(Selection("ns"), q, 10)]
    assert "building the HNSW index" in caplog.text
    assert got == exact_top(vecs, ids, q, 10)
    assert "ns" in s.index_part.vectors._ann  # the graph served it
    files = sorted(p.suffix for p in (Path(str(path) + ".ann")).iterdir())
    assert files == [".hnsw", ".json"]
    s.close()
    caplog.clear()
    again = SQLiteStore(path, ann_threshold=100)  # the next process loads it
    assert [i for i, _ in again.indexes.vector_search(Selection("ns"), q, 10)] == got
    assert "building" not in caplog.text
    again.close()


def test_an_erased_vector_never_comes_back_in_a_saved_graph(filled) -> None:
    """Process A holds the graph; process B erases a record (and deletes the saved graph);
    when A searches and then closes, its graph, which still holds the erased vector, is
    rebuilt and never written back to disk."""
    path, ids, vecs = filled
    q = vectors(1, seed=9)[0]
    a = SQLiteStore(path, ann_threshold=100)
    a.indexes.vector_search(Selection("ns"), q, 5)  # A builds (and saves) its graph
    a.records.insert([rec("dirty the graph", embedding=vectors(1, seed=11)[0], at=T0 + 500)],
                     model="m")
    a.indexes.vector_search(Selection("ns"), q, 5)
    b = SQLiteStore(path, ann_threshold=100)
    b.records.erase("ns", [ids[7]], at=T0 + 1000)
    b.close()
    assert ids[7] not in [i for i, _ in a.indexes.vector_search(Selection("ns"), q, 400)]
    a.close()  # saves its changed graphs
    folder = Path(str(path) + ".ann")
    saved = b"".join(p.read_bytes() for p in folder.iterdir()) if folder.exists() else b""
    assert vecs[7].tobytes() not in saved
    again = SQLiteStore(path, ann_threshold=100)
    assert ids[7] not in [i for i, _ in again.indexes.vector_search(Selection("ns"), q, 400)]
    again.close()


def test_graph_follows_other_processes_writes(filled) -> None:
    path = filled[0]
    q = vectors(1, seed=9)[0]
    reader = SQLiteStore(path, ann_threshold=100)
    writer = SQLiteStore(path, ann_threshold=100)
    first = [i for i, _ in reader.indexes.vector_search(Selection("ns"), q, 5)]
    near = rec("new, nearest", embedding=q, at=T0 + 999)
    writer.records.insert([near], model="m")
    writer.records.delete("ns", [first[0]], at=T0 + 1000)
    writer.records.update("ns", first[1], Patch(invalidated_at=T0 + 1000), at=T0 + 1000)
    got = [i for i, _ in reader.indexes.vector_search(Selection("ns"), q, 5)]
    assert got[0] == near.id
    assert first[0] not in got and first[1] not in got
    assert first[1] in [i for i, _ in reader.indexes.vector_search(
        Selection("ns", include_invalid=True), q, 5)]
    writer.close()
    reader.close()


def test_saved_graph_is_brought_up_to_date_or_rebuilt(filled, caplog) -> None:
    path = filled[0]
    q = vectors(1, seed=9)[0]
    s = SQLiteStore(path, ann_threshold=100)
    before = [i for i, _ in s.indexes.vector_search(Selection("ns"), q, 5)]
    s.close()  # saved at this log position
    w = SQLiteStore(path, ann_threshold=0)  # a process without the graph keeps writing
    w.records.delete("ns", [before[0]], at=T0 + 5000)
    w.close()
    caplog.set_level(logging.INFO, "memstream.ann")
    s = SQLiteStore(path, ann_threshold=100)
    got = [i for i, _ in s.indexes.vector_search(Selection("ns"), q, 5)]
    assert "building" not in caplog.text and got[:4] == before[1:]
    s.close()
    for f in Path(str(path) + ".ann").glob("*.hnsw"):
        f.write_bytes(b"not a graph")
    caplog.clear()
    s = SQLiteStore(path, ann_threshold=100)
    assert [i for i, _ in s.indexes.vector_search(Selection("ns"), q, 5)] == got
    assert "rebuilding" in caplog.text
    s.close()


def test_filters_on_graph_candidates_and_narrow_selections(filled) -> None:
    path, ids, vecs = filled
    q = vectors(1, seed=9)[0]
    s = SQLiteStore(path, ann_threshold=100)
    users = [f"u{i % 10}" for i in range(400)]
    want = exact_top(vecs, ids, q, 5, [u == "u3" for u in users])
    assert [i for i, _ in s.indexes.vector_search(Selection("ns", user_id="u3"), q, 5)] == want
    s.exact_selection = 10  # now 40 records of u3 are too many: graph candidates, filtered
    assert [i for i, _ in s.indexes.vector_search(Selection("ns", user_id="u3"), q, 5)] == want
    from memstream.filters import parse_filter

    rare = Selection("ns", where=parse_filter({"rare": True}))  # 3 records: exact over them
    got = [i for i, _ in s.indexes.vector_search(rare, q, 5)]
    assert got == exact_top(vecs, ids, q, 5, [i < 3 for i in range(400)])
    s.close()


def test_threshold_setting(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="ann_threshold"):
        Config(ann_threshold=-1).resolve({})
    assert Config().resolve({"MEMSTREAM_ANN_THRESHOLD": "0"}).ann_threshold == 0
    with Memory(tmp_path / "m.db", embedder="none", config=Config(ann_threshold=5)) as mem:
        assert mem.store.ann_threshold == 5  # type: ignore[attr-defined]


def test_exact_vectors_are_dropped_while_the_graph_serves(filled) -> None:
    path, ids, vecs = filled
    q = vectors(1, seed=9)[0]
    s = SQLiteStore(path, ann_threshold=100)
    assert [i for i, _ in s.indexes.vector_search(Selection("ns"), q, 10)] == \
        exact_top(vecs, ids, q, 10)
    # the graph holds them; no second copy
    assert not s.index_part.vectors._vectors["ns"].keeps_vectors
    s.records.delete("ns", ids[:350], at=T0 + 9999)  # below the threshold: exact search comes back
    keep = [i >= 350 for i in range(400)]
    assert [i for i, _ in s.indexes.vector_search(Selection("ns"), q, 10)] == \
        exact_top(vecs, ids, q, 10, keep)
    assert s.index_part.vectors._vectors["ns"].keeps_vectors
    s.close()
