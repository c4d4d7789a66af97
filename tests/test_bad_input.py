"""Bad input gets a clear memstream error, and nothing already stored is damaged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memstream import CorruptStore, InvalidFilter, InvalidInput, Memory, MemstreamError


@pytest.fixture
def seeded(kw_memory: Memory) -> Memory:
    kw_memory.add("the original record", data={"k": 1})
    return kw_memory


def _intact(mem: Memory) -> None:
    assert [r.text for r in mem.get_all()] == ["the original record"]
    assert mem.get_all()[0].data == {"k": 1}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"content": ""}, "empty"),
    ({"content": "   \n"}, "empty"),
    ({"content": "x" * 10_000_000}, "over the limit"),
    ({"content": b"caf\xe9 au lait"}, "not valid UTF-8"),
    ({"content": "bad \udcff surrogate"}, "surrogate"),
    ({"content": 42}, "must be a string"),
    ({"content": "ok", "namespace": "has spaces/and slashes"}, "namespace"),
    ({"content": "ok", "namespace": ""}, "namespace"),
    ({"content": "ok", "namespace": "x" * 200}, "namespace"),
    ({"content": "ok", "namespace": "team-a\n"}, "namespace"),  # no trailing newline
    ({"content": "ok", "kind": "Not A Kind"}, "kind"),
    ({"content": "ok", "kind": "fact\n"}, "kind"),
    ({"content": "ok", "importance": 1.5}, "importance"),
    ({"content": "ok", "importance": float("nan")}, "importance"),
    ({"content": "ok", "data": [1, 2]}, "data must be a dict"),
    ({"content": "ok", "data": {"x": float("nan")}}, "JSON values"),
    ({"content": "ok", "data": {"x": {1, 2}}}, "JSON values"),
    ({"content": "ok", "step": 1.5}, "step"),
    ({"content": "ok", "step": 2**70}, "64 bits"),
    ({"content": "ok", "at": "last tuesday"}, "ISO 8601"),
    ({"content": "ok", "user_id": "a\nb"}, "user_id"),
    ({"content": "ok", "user_id": "alice\u200b"}, "invisible characters"),  # zero-width space
    ({"content": "ok", "agent_id": "\u202eecila"}, "U\\+202E"),  # a bidirectional override
    ({"content": "ok", "embedding": [1.0, float("nan")]}, "NaN"),
    ({"content": "ok", "embedding": [0.0, 0.0]}, "zeros"),
    ({"content": "ok", "provenance": "not-a-list"}, "provenance"),
])
def test_bad_add_is_refused_and_store_intact(seeded: Memory, kwargs, match):
    with pytest.raises(InvalidInput, match=match):
        seeded.add(**kwargs)
    _intact(seeded)


def test_wrong_dimension_vector_with_real_model(tmp_path: Path, e5):
    with Memory(tmp_path / "v.db", embedder=e5) as mem:
        mem.add("kept")
        with pytest.raises(InvalidInput, match="dimensions"):
            mem.add("bad", embedding=np.ones(10))
        with pytest.raises(InvalidInput, match="dimensions"):
            mem.search("q", vector=[1.0, 2.0])
        assert [r.text for r in mem.get_all()] == ["kept"]


@pytest.mark.parametrize(("kwargs", "exc"), [
    ({"query": ""}, InvalidInput),
    ({"query": "x", "k": 0}, InvalidInput),
    ({"query": "x", "filters": {"a": {"regex": "."}}}, InvalidFilter),
    ({"query": "x", "weights": "fastest"}, InvalidInput),
    ({"query": "x", "namespace": "bad ns"}, InvalidInput),
    ({"query": "x", "now": "soon"}, InvalidInput),
    ({"query": "x", "step_range": (-(2**70), 3)}, InvalidInput),
])
def test_bad_search_is_refused(seeded: Memory, kwargs, exc):
    with pytest.raises(exc):
        seeded.search(**kwargs)
    _intact(seeded)


def test_bad_update_changes_nothing(seeded: Memory):
    rid = seeded.get_all()[0].id
    with pytest.raises(InvalidInput):
        seeded.update(rid, text="", importance=0.9)
    with pytest.raises(InvalidInput):
        seeded.update(rid, importance=-1)
    _intact(seeded)
    assert len(seeded.history(rid)) == 1


def test_keyword_query_syntax_is_not_interpreted(seeded: Memory):
    for q in ['"unbalanced', "NEAR(a b)", "col:value", "a AND OR NOT", "*", "(((", "'; DROP"]:
        seeded.search(q)  # no error: plain words only
    _intact(seeded)


def test_corrupt_database_file(tmp_path: Path):
    path = tmp_path / "mem.db"
    with Memory(path, embedder="none") as mem:
        mem.add("precious")
    data = bytearray(path.read_bytes())
    data[:100] = b"\x00" * 100  # wipe the header
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStore) as info:
        Memory(path, embedder="none")
    assert isinstance(info.value, MemstreamError)
    assert "restore it from a backup" in str(info.value)
