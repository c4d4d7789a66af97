"""``Scope`` and ``Query``: every selecting verb takes them in place of the flat keyword
arguments, with the same results; the two ways mixed must agree; the server's request models
declare the same fields."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memstream import InvalidInput, Memory, Query, Scope
from memstream.server import models


@pytest.fixture()
def mem(tmp_path: Path):
    with Memory(tmp_path / "scope.db", embedder="none") as m:
        m.add("Alice is allergic to peanuts", user_id="alice", kind="fact", at=1000)
        m.add("Alice booked the dentist for Tuesday", user_id="alice", at=2000)
        m.add("Bob likes peanuts on toast", user_id="bob", kind="fact", at=3000)
        m.add("Team note: peanuts banned at the office", namespace="team", at=4000)
        yield m


def _texts(records) -> list[str]:
    return [r.text for r in records]


def test_the_types_select_what_the_keyword_arguments_select(mem: Memory):
    alice, facts = Scope(user_id="alice"), Query(kinds="fact", since=500, until=1500)
    assert _texts(mem.get_all(scope=alice, query=facts)) == \
        _texts(mem.get_all(user_id="alice", kinds="fact", since=500, until=1500)) == \
        ["Alice is allergic to peanuts"]
    assert mem.count(scope=alice) == mem.count(user_id="alice") == 2
    assert mem.count(scope=Scope(namespace="team")) == 1
    hits = mem.search(Query("peanuts", kinds="fact"), scope=alice, touch=False)
    assert [h.record.text for h in hits] == \
        [h.record.text for h in mem.search("peanuts", user_id="alice", kinds="fact",
                                           touch=False)] == ["Alice is allergic to peanuts"]
    ctx = mem.context(Query("peanuts"), scope=Scope(user_id="bob"), touch=False)
    assert "Bob likes peanuts" in ctx.text
    assert [h.record.user_id for h in ctx.hits] == ["bob"]


def test_writes_take_a_scope(mem: Memory):
    carol = Scope(namespace="team", user_id="carol")
    rec = mem.add("Carol runs on Sundays", scope=carol)
    assert (rec.namespace, rec.user_id) == ("team", "carol")
    made = mem.add_many(["Carol swims", {"content": "Dan cycles", "user_id": "dan"}],
                        scope=carol)
    assert [(r.namespace, r.user_id) for r in made] == [("team", "carol"), ("team", "dan")]
    assert mem.delete_all(scope=carol, query=Query(kinds="observation")) == 2
    assert mem.count(scope=Scope(namespace="team")) == 2


def test_a_field_given_both_ways_must_agree_and_nothing_is_written(mem: Memory):
    before = mem.count(include_invalid=True)
    with pytest.raises(InvalidInput, match="user_id is given twice"):
        mem.add("Eve writes", scope=Scope(user_id="eve"), user_id="mallory")
    with pytest.raises(InvalidInput, match="kinds is given twice"):
        mem.get_all(query=Query(kinds="fact"), kinds="observation")
    assert mem.count(include_invalid=True) == before
    # the same value both ways is fine
    assert mem.count(scope=Scope(user_id="alice"), user_id="alice") == 2


def test_a_listing_takes_no_text_and_a_search_needs_one(mem: Memory):
    with pytest.raises(InvalidInput, match="ranks a search"):
        mem.get_all(query=Query("peanuts"))
    with pytest.raises(InvalidInput, match="ranks a search"):
        mem.count(query=Query("peanuts"))
    with pytest.raises(InvalidInput, match="needs the text"):
        mem.search(Query(kinds="fact"))
    with pytest.raises(InvalidInput, match=r"memstream\.Scope"):
        mem.get_all(scope={"user_id": "alice"})  # type: ignore[arg-type]


def test_the_server_models_declare_the_public_fields():
    scope = {f.name for f in dataclasses.fields(Scope)}
    query = {f.name for f in dataclasses.fields(Query)} - {"text"}
    assert set(models.ScopeFields.model_fields) == scope
    assert set(models.ListRequest.model_fields) >= scope | query
    # a search's text is its "query"; a search reads valid memories (or those as of a time)
    assert set(models.SearchRequest.model_fields) >= scope | (query - {"include_invalid"}) \
        | {"query"}
    body = models.ListRequest(user_id="u", kinds=["fact"], since=5, include_invalid=True)
    assert body.scope("ns") == Scope("ns", "u")
    assert body.as_query() == Query(kinds=["fact"], since=5, include_invalid=True)
    assert models.SearchRequest(query="q").as_query() == Query(text="q")
