from __future__ import annotations

import pytest

from memstream import InvalidInput, Record, Weights
from memstream.retrieval.pipeline import SearchParams, rank
from memstream.retrieval.scoring import (
    PROFILES,
    convex_fusion,
    minmax,
    recency,
    resolve_weights,
    rrf_fusion,
)

H = 3600.0


def test_recency_is_decay_per_hour_since_access():
    assert recency(0, 0.99) == 1.0
    assert recency(1, 0.99) == pytest.approx(0.99)
    assert recency(10, 0.99) == pytest.approx(0.99**10)  # 0.904382...
    assert recency(24, 0.5) == pytest.approx(0.5**24)
    assert recency(-5, 0.99) == 1.0  # accessed "after" now counts as just accessed


def test_minmax_scales_to_unit_range():
    assert minmax([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert minmax([]) == []
    assert minmax([5.0, 5.0]) == [0.0, 0.0]


def test_minmax_does_not_stretch_noise():
    # recencies one minute apart differ by ~1.7e-4: below the spread guard, all equal
    values = [0.99 ** (m / 60) for m in (0, 1, 2)]
    assert minmax(values, min_spread=1e-3) == [0.0, 0.0, 0.0]
    assert minmax(values, min_spread=0.0)[0] == 1.0  # without the guard: full 0..1 range


def test_rrf_fusion_hand_computed():
    fused = rrf_fusion([["a", "b"], ["b", "c"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)


def test_convex_fusion_hand_computed():
    fused = convex_fusion({"a": 0.6, "b": -0.2}, {"b": 4.0, "c": 2.0}, alpha=0.25)
    assert fused["a"] == pytest.approx(0.25 * 0.8)
    assert fused["b"] == pytest.approx(0.25 * 0.4 + 0.75 * 1.0)
    assert fused["c"] == pytest.approx(0.75 * 0.5)


def test_weights_resolution_and_validation():
    assert resolve_weights(None) == PROFILES["default"]
    assert PROFILES["default"].rule == "relevance-first"
    assert PROFILES["balanced"] == PROFILES["paper"] == Weights(1, 1, 1)
    assert resolve_weights("recall").relevance == 1.0
    assert resolve_weights({"recency": 0.0}) == Weights(0.0, 1.0, 1.0)
    assert resolve_weights((1, 2, 3)) == Weights(1, 2, 3)
    for bad in ("nope", {"speed": 1}, (1, 2), (-1, 1, 1), (0, 0, 0), (float("nan"), 1, 1)):
        with pytest.raises(InvalidInput):
            resolve_weights(bad)  # type: ignore[arg-type]


def _rec(rid: str, *, hours_ago: float, importance: float, now: float = 100 * H) -> Record:
    t = now - hours_ago * H
    return Record(id=rid, namespace="ns", text=rid, importance=importance, created_at=t,
                  last_accessed_at=t)


def test_rank_hand_computed_scores_and_explain():
    now = 100 * H
    recs = [_rec("a", hours_ago=0, importance=0.2), _rec("b", hours_ago=10, importance=0.8),
            _rec("c", hours_ago=20, importance=0.5)]
    relevance = [0.1, 0.3, 0.5]
    hits = rank(recs, relevance=relevance, now=now, p=SearchParams(k=3))
    # recency raw: 1, .99^10 = .904382, .99^20 = .817907 -> normalised 1, .474904, 0
    rec_n = {"a": 1.0, "b": (0.99**10 - 0.99**20) / (1 - 0.99**20), "c": 0.0}
    imp_n = {"a": 0.0, "b": 1.0, "c": 0.5}
    rel_n = {"a": 0.0, "b": 0.5, "c": 1.0}
    expected = {k: rec_n[k] + imp_n[k] + rel_n[k] for k in "abc"}
    assert [h.item.id for h in hits] == ["b", "c", "a"]
    for h in hits:
        assert h.score == pytest.approx(expected[h.item.id])
        e = h.explain
        assert e.recency == pytest.approx(rec_n[h.item.id])
        assert e.importance == pytest.approx(imp_n[h.item.id])
        assert e.relevance == pytest.approx(rel_n[h.item.id])
    b = hits[0].explain
    assert b.raw_recency == pytest.approx(0.99**10)
    assert b.hours_since_access == pytest.approx(10)
    assert (b.raw_importance, b.raw_relevance, b.weights) == (0.8, 0.3, (1.0, 1.0, 1.0))


def test_rank_weights_change_the_order():
    now = 100 * H
    recs = [_rec("old-relevant", hours_ago=48, importance=0.5),
            _rec("new-vague", hours_ago=0, importance=0.5)]
    rel = [0.9, 0.1]
    assert rank(recs, relevance=rel, now=now, p=SearchParams(k=2, weights=Weights(3, 1, 1))
                )[0].item.id == "new-vague"
    assert rank(recs, relevance=rel, now=now, p=SearchParams(k=2, weights=PROFILES["recall"])
                )[0].item.id == "old-relevant"


def test_rank_ties_break_on_relevance_then_newer_then_id():
    now = 100 * H
    same = dict(hours_ago=1, importance=0.5)
    recs = [_rec("b", **same), _rec("a", **same), _rec("c", **same)]
    hits = rank(recs, relevance=[0.2, 0.2, 0.2], now=now, p=SearchParams(k=3))
    assert [h.item.id for h in hits] == ["a", "b", "c"]
    assert all(h.score == 0 for h in hits)
    recs[2].created_at += 1  # newer wins a tie
    hits = rank(recs, relevance=[0.2, 0.2, 0.2], now=now, p=SearchParams(k=3))
    assert hits[0].item.id == "c"


def test_search_params_validation():
    for bad in ({"k": 0}, {"k": 5000}, {"decay": 0}, {"decay": 1.5}, {"fusion": "max"},
                {"alpha": 2}):
        with pytest.raises(InvalidInput):
            SearchParams(**bad)


def test_search_parameters_take_the_one_default_of_each_setting():
    from memstream.config import DEFAULTS

    p = SearchParams()
    shared = ["decay", "fusion", "rrf_k", "alpha", "candidates", "min_spread", "context",
              "rerank"]
    assert {f: getattr(p, f) for f in shared} == {f: DEFAULTS[f] for f in shared}
