"""The storage conformance suite: every backend must pass these unchanged.

One class per part of the storage protocol (``store/protocol.py``): ``RecordsConformance``,
``IndexesConformance``, ``QueuesConformance``, ``KeyValueConformance``, ``TransferConformance``
and ``KeysConformance`` (the events part is ``test_events.py``). A backend's test module
subclasses ``StoreConformance`` (all of them) and provides a ``store`` fixture that yields an
empty store of that backend.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol

import numpy as np
import pytest

from memstream import Conflict, InvalidInput, NotFound, Record
from memstream.core.ids import new_id
from memstream.filters import Selection, matches, parse_filter
from memstream.retrieval.keywords import SELECTION_STATS, cap, keyword_search
from memstream.store import Patch
from memstream.store.protocol import (
    EventStore,
    KeyStore,
    KeyValue,
    RecordStore,
    SearchIndexes,
    Store,
    Transfer,
    VectorSpace,
    WorkQueues,
)


def _kws(store, sel, terms, limit):
    """``retrieval.keywords.keyword_search`` over a store's indexes part."""
    return keyword_search(store.indexes, sel, terms, limit)

T0 = 1_700_000_000.0


def rec(text: str, ns: str = "ns", **kw: Any) -> Record:
    at = kw.pop("at", T0)
    return Record(id=kw.pop("id", new_id(at)), namespace=ns, text=text, created_at=at,
                  last_accessed_at=at, **kw)


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


FILTER_CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"color": "red"}, ["a"]),
    ({"color": {"ne": "red"}}, ["b", "c", "d"]),
    ({"size": {"gt": 2}}, ["b", "c"]),
    ({"size": {"gte": 2, "lt": 5}}, ["a", "b"]),
    ({"size": {"lte": 2}}, ["a"]),
    ({"color": {"in": ["red", "blue"]}}, ["a", "b"]),
    ({"color": {"nin": ["red", "blue"]}}, ["c", "d"]),
    ({"tags": {"contains": "x"}}, ["a", "c"]),
    ({"note": {"contains": "ell"}}, ["b"]),
    ({"flag": True}, ["a"]),
    ({"flag": 1}, []),
    ({"place.city": "Rome"}, ["c"]),
    ({"color": None}, ["d"]),
    ({"OR": [{"color": "red"}, {"size": {"gt": 4}}]}, ["a", "c"]),
    ({"NOT": {"color": "red"}}, ["b", "c", "d"]),
    ({"AND": [{"size": {"gt": 1}}, {"NOT": {"tags": {"contains": "x"}}}]}, ["b"]),
    ({"metadata.source": "chat"}, ["b"]),
]


class RecordsConformance:
    """``RecordStore``: write, read, select, change and forget records."""

    def seed_filters(self, store) -> dict[str, str]:
        rows = {
            "a": {"color": "red", "size": 2, "tags": ["x", "y"], "flag": True},
            "b": {"color": "blue", "size": 3, "note": "hello", "flag": False},
            "c": {"color": "green", "size": 7, "tags": ["x"], "place": {"city": "Rome"}},
            "d": {"size": None},
        }
        recs = [rec(f"item {k}", data=v, metadata={"source": "chat"} if k == "b" else {},
                    at=T0 + i) for i, (k, v) in enumerate(rows.items())]
        store.records.insert(recs)
        return {r.id: r.text[-1] for r in recs}

    def test_insert_get_roundtrips_every_field(self, store):
        r = rec("hello world", kind="fact", data={"a": [1, 2], "b": {"c": None}}, user_id="u",
                agent_id="g", run_id="r", step=5, importance=0.7, provenance=("x", "y"),
                metadata={"m": 1})
        store.records.insert([r])
        got = store.records.get("ns", [r.id])[0]
        assert got == r
        assert store.records.get("other", [r.id]) == []

    def test_get_keeps_order_and_skips_unknown(self, store):
        a, b = rec("a"), rec("b")
        store.records.insert([a, b])
        assert [x.id for x in store.records.get("ns", [b.id, "nope", a.id])] == [b.id, a.id]

    def test_texts_alone(self, store):
        a, b = rec("alpha text"), rec("beta text")
        store.records.insert([a, b])
        assert store.records.texts("ns", [b.id, "nope", a.id, b.id]) == {a.id: "alpha text",
                                                                         b.id: "beta text"}
        assert store.records.texts("other", [a.id]) == {} and store.records.texts("ns", []) == {}

    def test_signals_are_the_scoring_fields(self, store):
        a = rec("a", importance=0.3, at=T0 + 1)
        store.records.insert([a])
        store.records.touch("ns", [a.id], at=T0 + 50)
        assert store.records.signals("ns", ["nope", a.id]) == [(a.id, 0.3, T0 + 1, T0 + 50)]
        assert store.records.signals("other", [a.id]) == []

    def test_duplicate_id_conflicts_and_stores_nothing(self, store):
        a = rec("a")
        store.records.insert([a])
        with pytest.raises(Conflict):
            store.records.insert([rec("fresh"), rec("dup", id=a.id)])
        assert store.records.count(Selection("ns")) == 1

    def test_a_large_insert_is_one_transaction(self, store):
        """Past the rows of one INSERT statement, a conflict in the last part still leaves
        nothing of the earlier parts."""
        a = rec("a")
        store.records.insert([a])
        many = [rec(f"r{i}", data={"i": i}, embedding=unit(1.0, i % 3)) for i in range(600)]
        with pytest.raises(Conflict):
            store.records.insert([*many, rec("dup", id=a.id)])
        assert store.records.count(Selection("ns")) == 1
        store.records.insert(many, model="m")
        assert store.records.count(Selection("ns")) == 601
        got = store.records.get("ns", [many[0].id, many[599].id])
        assert [r.data for r in got] == [{"i": 0}, {"i": 599}]
        assert set(store.indexes.embeddings("ns", [many[599].id])) == {many[599].id}

    def test_update_records_history(self, store):
        a = rec("old text", importance=0.2)
        store.records.insert([a])
        new = store.records.update("ns", a.id, Patch(text="new text", importance=0.9), at=T0 + 10)
        assert (new.text, new.importance, new.updated_at) == ("new text", 0.9, T0 + 10)
        hist = store.records.history("ns", a.id)
        assert [h.event for h in hist] == ["add", "update"]
        assert hist[1].old == {"text": "old text", "importance": 0.2}
        assert hist[1].new == {"text": "new text", "importance": 0.9}
        linked = store.records.update("ns", a.id, Patch(provenance=("o1", "o2")), at=T0 + 20)
        assert linked.provenance == ("o1", "o2")
        assert store.records.history("ns", a.id)[2].new == {"provenance": ["o1", "o2"]}
        with pytest.raises(NotFound):
            store.records.update("ns", "missing", Patch(text="x"), at=T0)
        with pytest.raises(NotFound):
            store.records.update("other", a.id, Patch(text="x"), at=T0)

    def test_erase_keeps_only_a_tombstone(self, store):
        a = rec("the vault code is 4417", user_id="pat", embedding=unit(1, 0, 0))
        b = rec("pat's earlier note", user_id="pat")
        keep = rec("the vault code is 4417 too", user_id="sam", embedding=unit(1, 0, 0))
        store.records.insert([a, b, keep], model="m")
        store.kv.cache_vectors("m", [("h-a", unit(1, 0, 0)), ("h-keep", unit(0, 1, 0))])
        store.records.update("ns", a.id, Patch(text="the vault code is 4418"), at=T0 + 1)
        store.records.delete("ns", [b.id], at=T0 + 2)
        assert sorted(store.records.history_ids("ns", {"user_id": "pat"})) == sorted([a.id, b.id])
        assert store.records.erase("ns", [a.id, b.id, "never-existed"], at=T0 + 3,
                                   cache_keys=["h-a"]) == 2
        for rid in (a.id, b.id):
            assert [(h.event, h.at, h.old, h.new) for h in store.records.history("ns", rid)] == [
                ("erase", T0 + 3, None, None)]
        assert store.records.history("ns", "never-existed") == []
        assert store.records.get("ns", [a.id, b.id]) == []
        assert [i for i, _ in _kws(store, Selection("ns"), ["vault"], 5)] == [keep.id]
        assert [i for i, _ in store.indexes.vector_search(Selection("ns"), unit(1, 0, 0), 5)] == [
            keep.id]
        assert set(store.kv.cached_vectors("m", ["h-a", "h-keep"])) == {"h-keep"}
        assert store.records.erase("ns", [a.id], at=T0 + 4) == 1  # idempotent: the tombstone stays
        assert store.records.taken([a.id, keep.id]) == {keep.id}
        assert store.records.taken([keep.id]) == {keep.id}
        assert store.records.get("other", [keep.id]) == []

    def test_delete_is_scoped_to_namespace(self, store):
        a = rec("a", ns="one")
        store.records.insert([a])
        assert store.records.delete("two", [a.id], at=T0) == 0
        assert store.records.get("one", [a.id]) == [a]

    def test_touch_moves_access_forward_only(self, store):
        a = rec("a")
        store.records.insert([a])
        store.records.touch("ns", [a.id], at=T0 + 100)
        store.records.touch("ns", [a.id], at=T0 + 50)
        got = store.records.get("ns", [a.id])[0]
        assert (got.last_accessed_at, got.access_count) == (T0 + 100, 2)

    def test_refresh_instead_of_a_repeat(self, store):
        long_head = "x" * 64  # same first 64 characters, different texts
        a = rec("The user likes tea.", user_id="u1")
        b = rec(long_head + " one", at=T0 + 1)
        assert store.records.insert([a, b], refresh=True) == {}
        again = rec("The user likes tea.", user_id="u1", at=T0 + 50)
        other_user = rec("The user likes tea.", user_id="u2", at=T0 + 60)
        other_data = rec("The user likes tea.", user_id="u1", data={"k": 1}, at=T0 + 61)
        stepped = rec("The user likes tea.", user_id="u1", step=3, at=T0 + 62)
        near = rec(long_head + " two", at=T0 + 63)
        in_call = rec("new", at=T0 + 64)
        in_call_again = rec("new", at=T0 + 65)
        found = store.records.insert([again, other_user, other_data, stepped, near, in_call,
                                      in_call_again], refresh=True)
        assert set(found) == {again.id, in_call_again.id}
        assert found[again.id].id == a.id and found[again.id].event == "refresh"
        assert found[in_call_again.id].id == in_call.id
        assert store.records.get("ns", [again.id, in_call_again.id]) == []
        assert len(store.records.get("ns", [other_user.id, other_data.id, stepped.id, near.id,
                                            in_call.id])) == 5
        got = store.records.get("ns", [a.id, in_call.id])
        assert [(r.last_accessed_at, r.access_count) for r in got] == [(T0 + 50, 1),
                                                                        (T0 + 65, 1)]
        refresh = store.records.history("ns", a.id)[-1]
        assert (refresh.event, refresh.at, refresh.old, refresh.new) == (
            "refresh", T0 + 50, {"last_accessed_at": T0, "access_count": 0},
            {"last_accessed_at": T0 + 50, "access_count": 1})
        # an older repeat never moves the access back; an invalidated memory is not repeated
        store.records.insert([rec("The user likes tea.", user_id="u1", at=T0 + 10)], refresh=True)
        assert store.records.get("ns", [a.id])[0].last_accessed_at == T0 + 50
        store.records.update("ns", a.id, Patch(invalidated_at=T0 + 70), at=T0 + 70)
        assert store.records.insert([rec("The user likes tea.", user_id="u1", at=T0 + 80)],
                                    refresh=True) == {}
        # without refresh every record is inserted
        plain = rec("new", at=T0 + 90)
        assert store.records.insert([plain]) == {}
        assert store.records.get("ns", [plain.id]) == [plain]

    def test_select_orders_and_pages(self, store):
        recs = [rec(f"r{i}", at=T0 + i, step=10 - i) for i in range(5)]
        store.records.insert(recs)
        ids = [r.id for r in recs]
        assert [r.id for r in store.records.select(Selection("ns"))] == ids
        assert [r.id for r in store.records.select(Selection("ns"), order="-created")] == ids[::-1]
        assert [r.id for r in store.records.select(Selection("ns"), order="step")] == ids[::-1]
        assert [r.id for r in store.records.select(Selection("ns"), limit=2, offset=1)] == ids[1:3]
        for kw in ({}, {"order": "-created"}, {"order": "step"}, {"limit": 2, "offset": 1},
                   {"order": "step", "limit": 3}):
            assert store.records.select_ids(Selection("ns", step_max=9), **kw) == \
                [r.id for r in store.records.select(Selection("ns", step_max=9), **kw)]
        with pytest.raises(InvalidInput, match="order must be one of"):
            store.records.select_ids(Selection("ns"), order="random")

    def test_selection_scope_time_step_kind(self, store):
        store.records.insert([
            rec("a", user_id="u1", kind="fact", at=T0, step=1),
            rec("b", user_id="u2", kind="fact", at=T0 + 10, step=2),
            rec("c", user_id="u1", agent_id="g", run_id="r", kind="action", at=T0 + 20, step=3),
        ])

        def texts(**kw: Any) -> list[str]:
            return [r.text for r in store.records.select(Selection("ns", **kw))]

        assert texts(user_id="u1") == ["a", "c"]
        assert texts(agent_id="g", run_id="r") == ["c"]
        assert texts(kinds=("fact",)) == ["a", "b"]
        assert texts(since=T0 + 5) == ["b", "c"]
        assert texts(until=T0 + 10) == ["a", "b"]
        assert texts(step_min=2, step_max=2) == ["b"]
        assert store.records.count(Selection("ns", user_id="u1")) == 2

    @pytest.mark.parametrize(("raw", "expected"), FILTER_CASES)
    def test_payload_filters_agree_with_reference(self, store, raw, expected):
        names = self.seed_filters(store)
        where = parse_filter(raw)
        got = sorted(names[r.id] for r in store.records.select(Selection("ns", where=where)))
        assert got == expected
        every = store.records.select(Selection("ns"))
        assert sorted(names[r.id] for r in every if matches(where, r)) == expected

    def test_invalidated_hidden_unless_asked(self, store):
        a, b = rec("apple pie", embedding=unit(1, 0)), rec("apple tart", embedding=unit(1, 0.1))
        store.records.insert([a, b], model="m")
        store.records.update("ns", a.id, Patch(invalidated_at=T0 + 5, superseded_by=b.id),
                             at=T0 + 5)
        assert [r.id for r in store.records.select(Selection("ns"))] == [b.id]
        assert len(store.records.select(Selection("ns", include_invalid=True))) == 2
        assert [i for i, _ in _kws(store, Selection("ns"), ["apple"], 5)] == [b.id]
        assert [i for i, _ in store.indexes.vector_search(Selection("ns"), unit(1, 0), 5)] == [b.id]
        assert store.records.history("ns", a.id)[-1].event == "invalidate"


class IndexesConformance:
    """``SearchIndexes``: keyword and vector search, stream neighbours; kept in step with
    every write."""

    def test_update_text_requeues_embedding_and_reindexes_keywords(self, store):
        a = rec("apples", embedding=unit(1, 0, 0))
        store.records.insert([a], model="m")
        assert store.queues.pending_embeddings(10) == []
        store.records.update("ns", a.id, Patch(text="bananas"), at=T0)
        assert [p[1] for p in store.queues.pending_embeddings(10)] == [a.id]
        assert _kws(store, Selection("ns"), ["apples"], 5) == []
        assert [i for i, _ in _kws(store, Selection("ns"), ["bananas"], 5)] == [a.id]
        assert store.indexes.vector_search(Selection("ns"), unit(1, 0, 0), 5) == []

    def test_delete_removes_from_every_index(self, store):
        a = rec("zebra stripes", embedding=unit(0, 1, 0))
        b = rec("zebra crossing", embedding=unit(0, 1, 0.1))
        store.records.insert([a, b], model="m")
        assert len(store.indexes.vector_search(Selection("ns"), unit(0, 1, 0), 5)) == 2
        assert store.records.delete("ns", [a.id, "missing"], at=T0 + 1) == 1
        assert store.records.delete("ns", [a.id], at=T0 + 2) == 0
        assert store.records.get("ns", [a.id]) == []
        assert [i for i, _ in _kws(store, Selection("ns"), ["zebra"], 5)] == [b.id]
        assert [i for i, _ in store.indexes.vector_search(Selection("ns"), unit(0, 1, 0), 5)] == \
            [b.id]
        assert [h.event for h in store.records.history("ns", a.id)] == ["add", "delete"]

    def test_keyword_statistics_are_the_selections(self, store):
        """Other users of the namespace do not change how one user's records rank: "apple"
        is rarer than "banana" in u1's records, though u2 has apples everywhere."""
        mine = [rec("apple pie recipe notes", user_id="u1"),
                rec("banana bread recipe notes", user_id="u1"),
                rec("banana smoothie recipe notes", user_id="u1")]
        store.records.insert(mine)
        alone = _kws(store, Selection("ns", user_id="u1"), ["apple", "banana"], 3)
        store.records.insert([rec(f"apple orchard visit number {i} notes", user_id="u2")
                              for i in range(60)])
        crowded = _kws(store, Selection("ns", user_id="u1"), ["apple", "banana"], 3)
        assert alone[0][0] == crowded[0][0] == mine[0].id

    def test_term_stats_describe_the_selection_or_its_namespace(self, store):
        store.records.insert([rec("apple pie", user_id="u1"), rec("apple tart", user_id="u1"),
                              rec("banana", user_id="u2")]
                     + [rec(f"plum {i}", user_id="u3") for i in range(5)])
        u1 = Selection("ns", user_id="u1")
        small = store.indexes.term_stats(u1, ["apple", "banana"], selection_up_to=10,
                                         cap=lambda n: 100)
        assert (small.records, small.matches, small.of_selection) == (
            2, {"apple": 2, "banana": 0}, True)
        wide = store.indexes.term_stats(u1, ["apples"], selection_up_to=1, cap=lambda n: 100)
        assert (wide.records, wide.matches, wide.of_selection) == (8, {"apples": 2}, False)
        capped = store.indexes.term_stats(Selection("ns"), ["plum"], selection_up_to=10,
                                          cap=lambda n: 2)
        assert capped.matches == {"plum": 3}  # counted up to the cap, plus one

    def test_keyword_scores_are_weighted_sums(self, store):
        a, b = rec("apple orchard"), rec("banana grove")
        store.records.insert([a, b, rec("cherry stone")])
        sel = Selection("ns")
        scores = store.indexes.keyword_scores
        assert [i for i, _ in scores(sel, [("apple", 1), ("banana", 3)], 5)] == [b.id, a.id]
        assert [i for i, _ in scores(sel, [("apple", 3), ("banana", 1)], 5)] == [a.id, b.id]
        one = dict(store.indexes.keyword_scores(sel, [("apple", 1.0)], 5))
        two = dict(store.indexes.keyword_scores(sel, [("apple", 2.0)], 5))
        assert two[a.id] == pytest.approx(2 * one[a.id])
        assert store.indexes.keyword_scores(sel, [], 5) == []

    def test_keyword_search_ranks_and_scopes(self, store):
        store.records.insert([
            rec("the cat sat on the mat"), rec("a dog and a cat and another cat"),
            rec("nothing relevant here"), rec("cat", ns="other"),
        ])
        hits = _kws(store, Selection("ns"), ["cat"], 10)
        assert len(hits) == 2
        assert hits[0][1] >= hits[1][1]
        assert _kws(store, Selection("ns"), [], 10) == []
        assert _kws(store, Selection("ns"), ['"quoted" cat*'], 10) == []

    def test_keyword_search_ranks_by_the_sum_over_terms(self, store):
        """A record holding both words, but long enough to rank below 300 others on each word
        alone, comes first: the score is the whole sum, not the sum of truncated lists."""
        both = rec("apple zebra " + " ".join(f"filler{i}" for i in range(4)))
        store.records.insert([both] + [rec(f"apple a{i}") for i in range(300)]
                             + [rec(f"zebra z{i}") for i in range(300)]
                             + [rec(f"other words o{i}") for i in range(1500)])
        assert _kws(store, Selection("ns"), ["apple"], 10)[0][0] != both.id
        assert _kws(store, Selection("ns"), ["apple", "zebra"], 10)[0][0] == both.id

    def test_keyword_scores_are_the_whole_sum_beside_other_namespaces(self, store):
        """The same with another namespace in the index (so that the terms are weighed by the
        namespace's own statistics, one term at a time): a search must not depend on what
        other namespaces hold (SQLite summed each term's best 200 records here)."""
        both = rec("apple zebra " + " ".join(f"filler{i}" for i in range(4)))
        store.records.insert([both] + [rec(f"apple a{i}") for i in range(300)]
                             + [rec(f"zebra z{i}") for i in range(300)]
                             + [rec(f"other words o{i}") for i in range(400)])
        alone = _kws(store, Selection("ns"), ["apple", "zebra"], 10)
        store.records.insert([rec(f"zebra apple elsewhere {i}", ns="b") for i in range(40)]
                             + [rec(f"unrelated words w{i}", ns="b") for i in range(3000)])
        beside = _kws(store, Selection("ns"), ["apple", "zebra"], 10)
        assert beside[0][0] == both.id
        assert [i for i, _ in beside] == [i for i, _ in alone]

    def test_a_word_common_elsewhere_keeps_its_weight_in_a_namespace(self, store):
        """A word that thousands of another namespace's records hold is counted in this one:
        here it is rare, and it still finds its record (SQLite left such a word out, as over
        the cap of the whole index)."""
        budget, photos = rec("budget review for the quarter"), rec("trip photos from Lisbon")
        store.records.insert([budget, photos] + [rec(f"garden notes g{i}") for i in range(20)])
        alone = _kws(store, Selection("ns"), ["budget", "photos"], 10)
        store.records.insert([rec(f"budget line b{i}", ns="b") for i in range(2100)])
        stats = store.indexes.term_stats(Selection("ns"), ["budget", "photos"],
                                         selection_up_to=SELECTION_STATS, cap=cap)
        assert stats.matches == {"budget": 1, "photos": 1}
        beside = _kws(store, Selection("ns"), ["budget", "photos"], 10)
        assert {i for i, _ in alone} == {i for i, _ in beside} == {budget.id, photos.id}

    def test_keyword_search_stems(self, store):
        a = rec("she was running marathons")
        store.records.insert([a])
        assert [i for i, _ in _kws(store, Selection("ns"), ["runs"], 5)] == [a.id]

    def test_keyword_ranking_ignores_other_namespaces(self, store):
        store.records.insert([rec("apple pie recipe", ns="a", at=T0),
                              rec("zebra crossing rules", ns="a", at=T0 + 1),
                              rec("apple zebra stripes", ns="a", at=T0 + 2)])
        before = _kws(store, Selection("a"), ["apple", "zebra"], 10)
        # another tenant floods the index with one of the terms (same document lengths)
        store.records.insert([rec(f"apple tart dessert{i}", ns="b", at=T0 + 10 + i)
                              for i in range(60)])
        after = _kws(store, Selection("a"), ["apple", "zebra"], 10)
        assert [i for i, _ in after] == [i for i, _ in before]
        assert [s for _, s in after] == pytest.approx([s for _, s in before], rel=1e-6)
        assert after[0][0] == store.records.select(Selection("a"))[2].id  # both terms beat one

    def test_vector_search_exact_cosine_and_filters(self, store):
        vecs = [unit(1, 0, 0), unit(1, 1, 0), unit(0, 1, 0), unit(0, 0, 1)]
        recs = [rec(f"v{i}", embedding=v, user_id=f"u{i % 2}") for i, v in enumerate(vecs)]
        store.records.insert(recs, model="m")
        q = unit(1, 0.2, 0)
        hits = store.indexes.vector_search(Selection("ns"), q, 4)
        expected = sorted(range(4), key=lambda i: -float(vecs[i] @ q))
        assert [i for i, _ in hits] == [recs[i].id for i in expected]
        assert hits[0][1] == pytest.approx(float(vecs[expected[0]] @ q), abs=1e-5)
        only_u1 = store.indexes.vector_search(Selection("ns", user_id="u1"), q, 4)
        assert {i for i, _ in only_u1} == {recs[1].id, recs[3].id}
        assert store.indexes.vector_search(Selection("other"), q, 4) == []

    def test_vector_index_sees_later_writes(self, store):
        a = rec("a", embedding=unit(1, 0))
        store.records.insert([a], model="m")
        assert len(store.indexes.vector_search(Selection("ns"), unit(1, 0), 5)) == 1
        b = rec("b")
        store.records.insert([b])
        store.indexes.set_embeddings("ns", [(b.id, unit(1, 0.01))], "m")
        assert len(store.indexes.vector_search(Selection("ns"), unit(1, 0), 5)) == 2
        assert store.indexes.embeddings("ns", [b.id])[b.id] == pytest.approx(unit(1, 0.01))

    def test_vector_spaces_keep_their_vectors_apart(self, store):
        """Records of a named space share a namespace with text records, but a search, a
        scan and a reindex see only their own space; a selection of every space sees both."""
        assert store.indexes.define_space("agents", "hash-3", 3) == VectorSpace("hash-3", 3)
        assert store.indexes.define_space("agents", "hash-3", 3) == VectorSpace("hash-3", 3)
        with pytest.raises(Conflict, match="hash-3"):
            store.indexes.define_space("agents", "other-model", 3)
        with pytest.raises(InvalidInput):
            store.indexes.define_space("", "hash-3", 3)
        assert store.indexes.spaces() == {"agents": VectorSpace("hash-3", 3)}
        text = [rec("a text memory", embedding=unit(1, 0, 0), at=T0),
                rec("another text", embedding=unit(0, 1, 0), at=T0 + 1)]
        states = [rec("position=1", embedding=unit(1, 0, 0), space="agents", step=1,
                      kind="state", agent_id="bot", at=T0 + 2)]
        store.records.insert(text, model="m")
        store.records.insert(states, model="hash-3")
        q = unit(1, 0, 0)
        assert [i for i, _ in store.indexes.vector_search(Selection("ns"), q, 5)] == \
            [text[0].id, text[1].id]
        agents = Selection("ns", space="agents")
        assert [i for i, _ in store.indexes.vector_search(agents, q, 5)] == [states[0].id]
        assert store.indexes.selection_vectors(Selection("ns", space="agents"))[0] == [states[0].id]
        assert store.records.select_ids(Selection("ns")) == [r.id for r in text]
        assert store.records.count(Selection("ns", space=None)) == 3
        # keyword statistics are the space's: the states do not count as text memories
        assert store.indexes.term_stats(Selection("ns"), ["position"], selection_up_to=0,
                                        cap=lambda n: 1000).records == 2
        assert store.indexes.keyword_scores(Selection("ns"), [("position", 1.0)], 5) == []
        agents = Selection("ns", space="agents")
        assert [i for i, _ in store.indexes.keyword_scores(agents, [("position", 1.0)], 5)] == \
            [states[0].id]
        assert store.records.get("ns", [states[0].id])[0].space == "agents"
        assert store.queues.clear_embeddings() == 2  # the text space only
        assert store.indexes.vector_search(Selection("ns"), q, 5) == []
        assert store.indexes.embeddings("ns", [states[0].id])[states[0].id] == pytest.approx(q)
        kept = store.records.update("ns", states[0].id, Patch(text="position=2"), at=T0 + 3)
        assert kept.space == "agents"  # a new text never queues a named space's vector
        agents = Selection("ns", space="agents")
        assert [i for i, _ in store.indexes.vector_search(agents, q, 5)] == [states[0].id]

    def test_neighbours_in_creation_order(self, store):
        recs = [rec(f"t{i}", at=T0 + i, user_id="u" if i != 2 else "v") for i in range(6)]
        store.records.insert(recs)
        ids = [r.id for r in recs]
        got = store.indexes.neighbours(Selection("ns", user_id="u"), [ids[3]], before=2, after=1)
        assert got == {ids[3]: ([ids[1], ids[0]], [ids[4]])}
        edge = store.indexes.neighbours(Selection("ns"), [ids[0], ids[5]], before=2, after=2)
        assert edge == {ids[0]: ([], [ids[1], ids[2]]), ids[5]: ([ids[4], ids[3]], [])}
        assert store.indexes.neighbours(Selection("other"), [ids[0]], before=1, after=1) == {}


class QueuesConformance:
    """``WorkQueues``: the rating and embedding queues, claims and leases."""

    def test_rating_queue(self, store):
        a, b = rec("rate me", importance=0.3), rec("leave me")
        store.records.insert([a, b], rate={a.id})
        assert store.queues.pending_ratings(5) == [("ns", a.id, "rate me", "observation")]
        store.queues.set_rating("ns", a.id, 0.9, at=T0 + 1)
        assert store.queues.pending_ratings(5) == []
        assert store.records.get("ns", [a.id])[0].importance == 0.9
        assert store.records.history("ns", a.id)[-1].new == {"importance": 0.9}
        store.records.insert([c := rec("offline")], rate={rec("x").id, b.id})
        store.queues.set_rating("ns", "gone", None, at=T0)  # unknown ids are skipped
        assert store.records.get("ns", [c.id])[0].importance == 0.5

    def test_embedding_claims(self, store):
        import time

        a, b, c = rec("a", at=T0), rec("b", at=T0 + 1), rec("c", at=T0 + 2)
        store.records.insert([a, b, c])
        first = store.queues.pending_embeddings(2, owner="w1", lease=60)
        assert [p[1] for p in first] == [a.id, b.id]
        assert [p[1] for p in store.queues.pending_embeddings(5, owner="w2", lease=60)] == [c.id]
        assert store.queues.pending_embeddings(5, owner="w3", lease=60) == []
        again = store.queues.pending_embeddings(5, owner="w1", lease=60)  # its own claims come back
        assert [p[1] for p in again] == [a.id, b.id]
        assert len(store.queues.pending_embeddings(10)) == 3  # unclaimed view: everything queued
        store.indexes.set_embeddings("ns", [(a.id, unit(1, 0))], "m")
        short = store.queues.pending_embeddings(5, owner="w4", lease=0.05)
        assert short == []
        store.records.insert([d := rec("d", at=T0 + 3)])
        assert [p[1] for p in store.queues.pending_embeddings(5, owner="w4", lease=0.05)] == [d.id]
        time.sleep(0.1)  # w4's lease lapses: another worker takes its record
        assert [p[1] for p in store.queues.pending_embeddings(5, owner="w5", lease=0.05)] == [d.id]


class KeyValueConformance:
    """``KeyValue`` and the whole store's own methods: meta, the embedding cache, stats,
    namespaces, reset."""

    def test_pending_and_cache(self, store):
        a, b = rec("a"), rec("b", embedding=unit(1, 0))
        store.records.insert([a, b], model="m")
        assert [p[1] for p in store.queues.pending_embeddings(10)] == [a.id]
        store.kv.cache_vectors("m", [("h1", unit(0, 1))])
        store.kv.cache_vectors("m", [("h1", unit(1, 0))])  # idempotent: first value stays
        assert store.kv.cached_vectors("m", ["h1", "h2"])["h1"] == pytest.approx(unit(0, 1))
        assert store.kv.cached_vectors("other-model", ["h1"]) == {}

    def test_stats_namespaces_meta_reset(self, store):
        store.records.insert([rec("a", kind="fact"), rec("b"), rec("c", ns="z")])
        s = store.stats("ns")
        assert (s.records, s.valid, s.by_kind) == (2, 2, {"fact": 1, "observation": 1})
        assert store.namespaces() == ["ns", "z"]
        store.kv.set_meta("k", "v")
        assert store.kv.get_meta("k") == "v"
        store.reset()
        assert store.namespaces() == []


    def test_a_read_change_write_of_meta_values_is_never_lost(self, store):
        """Eight threads, each adding one to two counters 25 times through ``update_meta``:
        each read-change-write holds the values, so none of the 200 is lost."""
        import threading

        def bump(stored):
            return {k: str(int(v or 0) + 1) for k, v in stored.items()}

        def work():
            for _ in range(25):
                store.kv.update_meta(["count:a", "count:b"], bump)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert (store.kv.get_meta("count:a"), store.kv.get_meta("count:b")) == ("200", "200")
        store.kv.update_meta(["count:a"], lambda stored: {})  # nothing to write: unchanged
        assert store.kv.get_meta("count:a") == "200"


class TransferConformance:
    """``Transfer``: paging through a whole store to copy it."""

    def test_pages_for_copying_a_store(self, store):
        recs = [rec(f"p{i}", at=T0 + i, embedding=unit(1, i) if i % 2 else None)
                for i in range(5)]
        store.records.insert(recs, model="m")
        store.records.update("ns", recs[0].id, Patch(invalidated_at=T0 + 9), at=T0 + 9)
        store.records.delete("ns", [recs[4].id], at=T0 + 10)
        first = store.transfer.records_page("ns", None, 2)
        rest = store.transfer.records_page("ns", first[-1][0].id, 10)
        got = first + rest
        assert [r.id for r, _ in got] == sorted(r.id for r in recs[:4])
        assert [m for _, m in got] == [None, "m", None, "m"]
        assert got[1][0].embedding == pytest.approx(unit(1, 1))
        assert got[0][0].invalidated_at == T0 + 9
        assert store.transfer.records_page("other", None, 10) == []
        entries = store.transfer.history_page(0, 100)
        assert [e.event for _, e in entries] == ["add"] * 5 + ["invalidate", "delete"]
        positions = [p for p, _ in entries]
        assert positions == sorted(positions)
        assert store.transfer.history_page(positions[-2], 100) == entries[-1:]
        store.transfer.put_history([entries[0][1]])
        assert store.records.history("ns", recs[0].id)[-1] == entries[0][1]
        store.kv.set_meta("a", "1")
        assert store.kv.meta_items() == {"a": "1"}


class KeysConformance:
    """``KeyStore``: API key records (used by the server, not part of ``Store``)."""

    def test_api_keys(self, store):
        from memstream.store import ApiKey

        key = ApiKey("k1", "ab" * 32, "ci", ("ns", "other"), "write", T0)
        store.keys.put_key(key)
        with pytest.raises(Conflict):
            store.keys.put_key(key)
        assert store.keys.get_key("k1") == key and store.keys.get_key("nope") is None
        assert store.keys.revoke_key("k1", at=T0 + 5) and not store.keys.revoke_key("nope", at=T0)
        store.keys.revoke_key("k1", at=T0 + 9)  # the first revocation time stays
        assert store.keys.get_key("k1").revoked_at == T0 + 5
        assert [k.id for k in store.keys.list_keys()] == ["k1"]


class StoreConformance(RecordsConformance, IndexesConformance, QueuesConformance,
                       KeyValueConformance, TransferConformance, KeysConformance):
    """Every part: what a backend's test module subclasses (with its ``store`` fixture). The
    ``EventStore`` part is ``tests/store/test_events.py``."""

    def test_implements_every_part_and_keys_stay_out_of_store(self, store):
        parts = (RecordStore, SearchIndexes, WorkQueues, KeyValue, Transfer, EventStore)
        assert isinstance(store, Store) and isinstance(store.keys, KeyStore)
        members = {name for part in parts for name in vars(part) if not name.startswith("_")}
        store_own = {n for n in vars(Store) if not n.startswith("_")}
        assert not store_own & members  # every method is declared once, in its part
        assert not {n for n in vars(KeyStore) if not n.startswith("_")} & (members | store_own)
        # a bundle of parts: each attribute is its part, and no protocol grows past 15 methods
        bundle = {"records": RecordStore, "indexes": SearchIndexes, "queues": WorkQueues,
                  "kv": KeyValue, "transfer": Transfer, "events": EventStore}
        assert all(isinstance(getattr(store, name), part) for name, part in bundle.items())
        for proto in (*parts, Store, KeyStore):
            own = {n for k in proto.__mro__ if k not in (object, Protocol, Generic)
                   for n, v in vars(k).items() if not n.startswith("_")
                   and (callable(v) or isinstance(v, property))}
            assert len(own) <= 15, f"{proto.__name__} has {len(own)} methods: split it"
