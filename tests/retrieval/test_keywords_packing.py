from __future__ import annotations

import pytest

from memstream import Explanation, Hit, InvalidInput, Record
from memstream.core.tokens import cl100k
from memstream.retrieval.keywords import MAX_DF_FLOOR, MIN_IDF, idf, query_terms, weigh
from memstream.retrieval.packing import pack
from memstream.store.protocol import TermStats


def test_query_terms_drop_function_words_and_possessives():
    assert query_terms("When did Caroline's dog go to the vet?") == ["caroline", "dog", "go",
                                                                      "vet"]
    assert query_terms("the of and") == []
    assert query_terms("Cat cat CAT 2024") == ["cat", "2024"]


def test_keyword_policy_weighs_terms_by_the_selections_idf():
    stats = TermStats(1000, {"rare": 3, "common": 600, "absent": 0}, True)
    got = dict(weigh(stats, ["rare", "common", "absent"]))
    assert got == {"rare": idf(1000, 3), "absent": idf(1000, 0)}  # "common" is no evidence
    # no other term matches: the term held by most records still counts (a little)
    assert dict(weigh(TermStats(10, {"x": 9, "y": 0}, True), ["x", "y"]))["x"] == idf(10, 9)
    # terms too common for the index are left out; when all are, the rarest stays
    huge = MAX_DF_FLOOR * 100
    many = TermStats(huge, {"a": huge // 10, "b": huge // 20, "c": 5}, False)
    assert [t for t, _ in weigh(many, ["a", "b", "c"])] == ["c"]
    assert [t for t, _ in weigh(many, ["a", "b"])] == ["b"]
    assert weigh(many, ["not counted"]) == []
    # a term reported past the cap of a small selection (more holders than records) weighs
    # the least, and the search goes on
    assert idf(2000, 2001) == idf(2000, 2000) == MIN_IDF
    small = TermStats(2000, {"bobo": 2001, "kiwi": 3}, True)
    assert [t for t, _ in weigh(small, ["bobo", "kiwi"])] == ["kiwi"]
    assert weigh(TermStats(2000, {"bobo": 2001}, True), ["bobo"]) == [("bobo", MIN_IDF)]


def test_cl100k_counts_real_tokens():
    tok = cl100k()
    assert tok.count("hello world") == 2
    assert tok.count("") == 0
    assert tok.count("<|endoftext|>") > 1  # special tokens are counted as plain text


def _hit(text: str, score: float) -> Hit:
    e = Explanation(0, 0, 0, 0, 0, 0, (1, 1, 1), 0)
    return Hit(Record(id=text, namespace="n", text=text), score, e)


def test_pack_keeps_best_hits_that_fit_exactly():
    tok = cl100k()
    hits = [_hit("alpha beta gamma delta epsilon zeta eta theta", 3), _hit("short one", 2),
            _hit("another short", 1)]
    full = "\n".join(f"- {h.record.text}" for h in hits)
    kept, text, used = pack(hits, tok.count(full), tokenizer=tok)
    assert [h.record.text for h in kept] == [h.record.text for h in hits]
    assert used == tok.count(text) == tok.count(full)
    budget = tok.count("- short one\n- another short")
    kept, text, used = pack(hits, budget, tokenizer=tok)
    assert [h.record.text for h in kept] == ["short one", "another short"]  # the long one skipped
    assert used <= budget
    assert pack(hits, 0, tokenizer=tok)[0] == []
    with pytest.raises(InvalidInput):
        pack(hits, -1)
