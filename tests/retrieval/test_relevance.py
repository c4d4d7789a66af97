"""Calibrated relevance (retrieval.relevance) and the default rule: hand-checked properties,
and the real model on small stores."""

from __future__ import annotations

import itertools

import pytest

from memstream import InvalidFilter, Memory, Record
from memstream.retrieval.pipeline import SearchParams, rank
from memstream.retrieval.relevance import CALIBRATION, Evidence, better_reading, settle, sigmoid
from memstream.retrieval.scoring import PROFILES
from memstream.retrieval.shown import shown

H = 3600.0
NOW = 1_700_000_000.0


def test_the_calibration_is_monotone_in_each_piece_of_evidence():
    grid = [-2.0, 0.0, 2.0, 5.0]
    for dense, kw, learned in itertools.product(grid, [0.0, 0.5, 1.0], [None, -3.0, 0.0, 3.0]):
        base = Evidence(dense=dense, keyword=kw, question=0.0, learned=learned)
        more_dense = Evidence(dense=dense + 1, keyword=kw, question=0.0, learned=learned)
        more_kw = Evidence(dense=dense, keyword=kw + 0.25, question=0.0, learned=learned)
        asked = Evidence(dense=dense, keyword=kw, question=1.0, learned=learned)
        assert CALIBRATION.logit(more_dense) > CALIBRATION.logit(base)
        assert CALIBRATION.logit(more_kw) > CALIBRATION.logit(base)
        assert CALIBRATION.logit(asked) < CALIBRATION.logit(base)
        if learned is not None:
            higher = Evidence(dense=dense, keyword=kw, question=0.0, learned=learned + 1)
            assert CALIBRATION.logit(higher) > CALIBRATION.logit(base)
            # the learned stage never lifts a record far above its own evidence
            assert CALIBRATION.logit(Evidence(dense, kw, 0.0, 50.0)) <= \
                CALIBRATION.absolute(base) + CALIBRATION.margin + 1e-9


def test_settle_is_monotone_and_flattens_only_the_unrelated():
    xs = [x / 4 for x in range(-40, 40)]
    settled = [settle(x) for x in xs]
    assert all(a < b for a, b in itertools.pairwise(settled))
    assert settle(-8.0) - settle(-6.0) < 0.25  # ten-fold flatter below the floor
    assert abs((settle(6.0) - settle(4.0)) - 2.0) < 0.01  # unchanged well above it


def _item(rid: str, hours_ago: float, importance: float) -> Record:
    t = NOW - hours_ago * H
    return Record(id=rid, namespace="n", text=rid, importance=importance, created_at=t,
                  last_accessed_at=t)


def test_recency_and_importance_never_lift_the_unrelated_over_the_relevant():
    p = SearchParams(k=2, weights=PROFILES["default"])
    relevant = _item("relevant", hours_ago=24 * 365, importance=0.0)  # old and dull
    unrelated = _item("unrelated", hours_ago=0, importance=1.0)  # new and vital
    # relevance 0.5 (logit 0) against relevance 0.2 (logit -1.4)
    hits = rank([unrelated, relevant], relevance=[-1.4, 0.0], now=NOW, p=p)
    assert [h.item.id for h in hits] == ["relevant", "unrelated"]
    assert hits[0].explain.rule == "relevance-first"
    assert hits[0].explain.relevance == pytest.approx(0.5)
    # about equally relevant: recency and importance decide
    hits = rank([relevant, unrelated], relevance=[2.0, 2.0], now=NOW, p=p)
    assert [h.item.id for h in hits] == ["unrelated", "relevant"]
    # nothing relevant: recency and importance decide, whatever the small differences
    hits = rank([relevant, unrelated], relevance=[-4.0, -6.0], now=NOW, p=p)
    assert [h.item.id for h in hits] == ["unrelated", "relevant"]
    assert 0 < hits[0].score < 1 and hits[0].score == sigmoid(
        settle(-6.0) + 0.5 * (1.0 - 0.5) + 0.3 * (1.0 - 0.5))


def test_a_single_candidate_is_scored_not_zeroed(small: Memory):
    small.add("Maria is allergic to peanuts.", at=NOW - 30 * 24 * H)
    hit = small.search("What can't Maria eat?", touch=False)[0]
    assert hit.explain.relevance > 0.3 and hit.score > 0.3
    small.add("Bought new hiking boots.", at=NOW - 3600)
    hits = small.search("What can't Maria eat?", touch=False)
    assert hits[0].record.text.startswith("Maria")
    assert hits[1].explain.evidence < 0.05  # unrelated, however recent and however ranked
    assert hits[1].explain.relevance < 0.1  # the documented min_relevance leaves it out
    assert [h.record.text for h in small.search("What can't Maria eat?", touch=False,
                                                min_relevance=0.1)] == [hits[0].record.text]


def test_identical_texts_get_identical_relevance(small: Memory):
    for days in (1, 20):  # two records: by default the second add would refresh the first
        small.add("The gate code is 1379.", at=NOW - days * 24 * H, duplicates="keep")
    small.add("Watered the plants.", at=NOW - 2 * 24 * H)
    a, b = small.search("What is the gate code?", k=2, touch=False)
    assert a.explain.evidence == b.explain.evidence
    assert a.record.created_at > b.record.created_at  # the newer copy first
    # the relevance shown reads the place too: the first of two equals is likelier the answer
    assert a.explain.relevance == shown(a.explain.evidence, 0) > b.explain.relevance


def test_the_relevance_shown_reads_the_evidence_and_the_place():
    """More evidence, more relevance; a lower place, less; below the tenth, as the tenth."""
    assert shown(0.9, 0) > shown(0.5, 0) > shown(0.05, 0)
    assert shown(0.5, 0) > shown(0.5, 1) > shown(0.5, 9) == shown(0.5, 40)
    assert 0.0 < shown(0.0, 0) < shown(1.0, 0) < 1.0


def test_filters_name_the_parameter_for_record_fields(kw_memory: Memory):
    kw_memory.add("note", user_id="u1", kind="fact", data={"kind": "x"})
    for key, argument in (("user_id", "user_id="), ("kind", "kinds="), ("run_id", "run_id=")):
        with pytest.raises(InvalidFilter, match=argument):
            kw_memory.get_all(filters={key: "anything"})
        with pytest.raises(InvalidFilter, match=f"data.{key}"):
            kw_memory.search("note", filters={key: "anything"})
    assert len(kw_memory.get_all(filters={"data.kind": "x"})) == 1


def test_the_term_finder_agrees_with_word_prefixes():
    """One regular-expression scan finds exactly the terms that ``word[:5]`` of some word of
    the text equals (random texts: case, underscores, digits, accents, short and long words)."""
    import random

    from memstream.retrieval.keywords import query_terms
    from memstream.retrieval.relevance import _prefixes, term_finder

    rng = random.Random(5)
    vocab = ["cat", "cats", "catalogue", "Cat", "dog", "dog_house", "été", "Etés", "x1", "x12",
             "house", "hous", "a", "ab", "abcde", "abcdef", "ÀBCDE", "naïve", "naive", "42",
             "4200", "o'clock", "well-known", "known"]
    for _ in range(300):
        text = "".join(rng.choice(vocab) + rng.choice([" ", ",", "_", "-", ". ", "'", ""])
                       for _ in range(rng.randrange(1, 12)))
        terms = list(dict.fromkeys(t[:5] for t in query_terms(" ".join(rng.sample(vocab, 4)))))
        assert term_finder(terms)(text) == _prefixes(text) & set(terms), (text, terms)


def test_a_second_reading_counts_in_deviations_of_its_own_null():
    """``better_reading``: a record read better by the second reading (more deviations above
    that reading's null) gets the cosine to the query that stands as far above the query's
    null; a record read better by the query, or not read the second way, keeps its own."""
    got = better_reading({"a": 0.85, "b": 0.80, "c": 0.90}, {"a": 0.84, "b": 0.95},
                         (0.80, 0.02), (0.90, 0.01))
    assert got["a"] == 0.85  # 2.5 deviations against -6 the second way
    assert got["b"] == pytest.approx(0.80 + 0.02 * 5.0)  # 0 against 5 deviations
    assert got["c"] == 0.90  # not read the second way
