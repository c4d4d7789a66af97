"""``Client`` takes ``Scope`` and ``Query`` as ``Memory`` does, over a real server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memstream import Client, InvalidInput, Query, Scope

from .conftest import Server


def test_client_verbs_take_scope_and_query(server: Server) -> None:
    with Client(server.url, server.keys["admin"]) as c:
        alice = Scope(namespace="team-a", user_id="scope-alice")
        c.add("Alice is allergic to peanuts", scope=alice, kind="fact",
              at=datetime(2026, 3, 1, tzinfo=UTC))
        c.add("Alice likes the window seat", scope=alice)
        c.add_many(["Bob likes peanuts"], scope=Scope(namespace="team-a", user_id="scope-bob"))
        facts = c.get_all(scope=alice, query=Query(kinds="fact"))
        assert [r.text for r in facts] == ["Alice is allergic to peanuts"]
        assert [r.text for r in c.get_all(scope=alice, query=Query(
            since=datetime(2026, 2, 1, tzinfo=UTC), until=datetime(2026, 4, 1, tzinfo=UTC)))] \
            == ["Alice is allergic to peanuts"]
        hits = c.search(Query("peanuts"), scope=alice, touch=False)
        assert {h.record.user_id for h in hits} == {"scope-alice"}
        assert "peanuts" in c.context(Query("peanuts"), scope=alice, touch=False).text
        with pytest.raises(InvalidInput, match="user_id is given twice"):
            c.get_all(scope=alice, user_id="scope-bob")
        with pytest.raises(InvalidInput, match="needs the text"):
            c.search(Query(kinds="fact"), scope=alice)
        assert c.delete_all(scope=alice, query=Query(kinds="fact")) == 1
        assert [r.text for r in c.get_all(scope=alice)] == ["Alice likes the window seat"]
