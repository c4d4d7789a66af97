"""The entity graph's part of the storage conformance (``store.graph``): the same tests on
SQLite and on a real PostgreSQL with pgvector. The graph follows the records in their own
transactions: inserts link, text updates relink, deletes and erasures unlink."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstream.store import Patch
from memstream.store.postgres import PostgresStore
from memstream.store.sqlite import SQLiteStore

from .conformance import T0, rec


def names(entities: Any) -> set[str]:
    return {e.name for e in entities}


class GraphConformance:
    @pytest.fixture
    def store(self) -> Any:
        raise NotImplementedError

    def test_an_insert_links_its_records_per_owner(self, store: Any) -> None:
        a = rec("Lunch with Marta Silva at Café Luso.", user_id="u1", at=T0)
        b = rec("Gave the keys to Marta Silva.", user_id="u1", at=T0 + 10)
        c = rec("Dinner with Marta Silva in Porto.", user_id="u2", at=T0 + 5)
        store.records.insert([a, b, c], model="m")
        mine = store.graph.entities("ns", ["u1"])
        marta = next(e for e in mine if e.name == "Marta Silva")
        assert (marta.mentions, marta.first_seen, marta.last_seen) == (2, T0, T0 + 10)
        assert marta.owner == "u1" and marta.kind == "person"
        assert names(store.graph.entities("ns", ["u2"])) == {"Marta Silva", "Porto"}
        theirs = next(e for e in store.graph.entities("ns", ["u2"]) if e.name == "Marta Silva")
        assert theirs.id != marta.id  # another user's Marta is another entity
        assert store.graph.mentions([marta.id]) == {marta.id: [b.id, a.id]}  # newest first
        assert store.graph.entities("other") == []

    def test_a_sentence_opening_name_is_weak_until_confirmed(self, store: Any) -> None:
        store.records.insert([rec("Never book the early ferry.")], model="m")
        assert store.graph.entities("ns") == []
        assert names(store.graph.entities("ns", confirmed=False)) == {"Never"}
        store.records.insert([rec("Pell mends nets."), rec("Quorra walked home with Pell.")],
                             model="m")
        assert names(store.graph.entities("ns")) == {"Pell"}

    def test_the_kinds_left_open_are_listed_and_set_once(self, store: Any) -> None:
        """Confirmed entities of kind "name" or "thing" wait for a kind (weak ones do not);
        a kind set is kept, and one no longer open is not overwritten."""
        store.records.insert([rec("The Fibrenest bill and the NHS letter came.", at=T0),
                              rec("Zorblat called.", at=T0 + 1),  # weak: opens a sentence
                              rec("Lunch with Marta Silva.", at=T0 + 2)], model="m")
        open_ = dict(store.graph.unread_kinds())
        assert sorted(open_.values()) == ["Fibrenest", "NHS"]  # "Marta Silva" is a person
        assert store.graph.unread_kinds(1) != [] and len(store.graph.unread_kinds(1)) == 1
        marta = next(e for e in store.graph.entities("ns") if e.name == "Marta Silva")
        assert store.graph.set_kinds([*((eid, "organization") for eid in open_),
                                      (marta.id, "place")]) == 2
        assert store.graph.unread_kinds() == []
        kinds = {e.name: e.kind for e in store.graph.entities("ns")}
        assert kinds == {"Fibrenest": "organization", "NHS": "organization",
                         "Marta Silva": "person"}

    def test_find_reads_longer_names_and_weak_ones(self, store: Any) -> None:
        store.records.insert([rec("Marta gave me Dune."), rec("Today I met Marta Silva.")],
                             model="m")
        found = store.graph.find("ns", None, ["marta"])
        assert {e.key for e in found} == {"marta", "marta silva"}
        assert store.graph.find("ns", None, ["silva"]) == []

    def test_a_text_update_relinks_and_a_delete_unlinks(self, store: Any) -> None:
        a, b = rec("Call Dr. Feld about the results."), rec("Dr. Feld moved to Suite 400.")
        store.records.insert([a, b], model="m")
        feld = next(e for e in store.graph.entities("ns") if e.key == "feld")
        assert feld.mentions == 2
        store.records.update("ns", a.id, Patch(text="Call Dr. Okoro about the results."),
                             at=T0 + 1)
        keys = {e.key: e.mentions for e in store.graph.entities("ns")}
        assert keys["feld"] == 1 and keys["okoro"] == 1
        assert {e.key for e in store.graph.record_entities("ns", [a.id])[a.id]} == {"call", "okoro"}
        store.records.delete("ns", [b.id], at=T0 + 2)
        assert "feld" not in {e.key for e in store.graph.entities("ns", confirmed=False)}
        assert store.graph.size("ns") == (2, 2)  # "Call" (weak) and "Okoro", of record a

    def test_erase_drops_the_entities_left_without_a_mention(self, store: Any) -> None:
        a, b = rec("Met Ingrid Vasquez at the Oslo office."), rec("Ingrid Vasquez called.")
        store.records.insert([a, b, rec("Lunch at Café Luso.")], model="m")
        store.records.erase("ns", [a.id], at=T0 + 1)
        assert names(store.graph.entities("ns")) == {"Ingrid Vasquez", "Café Luso"}
        store.records.erase("ns", [b.id], at=T0 + 2)
        assert "Ingrid Vasquez" not in names(store.graph.entities("ns", confirmed=False))
        assert "Café Luso" in names(store.graph.entities("ns"))

    def test_related_entities_share_records(self, store: Any) -> None:
        a = rec("Marta Silva and Priya Rao met at Café Luso.", at=T0)
        b = rec("Marta Silva and Priya Rao moved to Porto.", at=T0 + 1)
        c = rec("Marta Silva visited Café Luso again.", at=T0 + 2)
        store.records.insert([a, b, c], model="m")
        marta = next(e for e in store.graph.entities("ns") if e.key == "marta silva")
        related = store.graph.related(marta.id)
        assert [(e.name, ids) for e, ids in related[:2]] == [
            ("Café Luso", [c.id, a.id]), ("Priya Rao", [b.id, a.id])]

    def test_the_agents_states_are_not_linked(self, store: Any) -> None:
        store.records.insert([rec('{"pos": "Berlin Hauptbahnhof"}', space="agents")],
                             model="m", ann=False)
        assert store.graph.size() == (0, 0)

    def test_a_newer_relation_ends_the_older_and_as_of_reads_it(self, store: Any) -> None:
        a, b, c = rec("x", at=T0), rec("y", at=T0 + 50), rec("z", at=T0 + 100)
        store.records.insert([a, b, c], model="m")
        added = store.graph.relate("ns", "", [
            ("Marta Silva", "lives in", "Porto", c.id, T0 + 100),
            ("Marta Silva", "lives in", "Lisbon", a.id, T0),
            ("Marta Silva", "works at", "Uni Porto", c.id, T0 + 100),
            ("Marta Silva", "lives in", "porto", c.id, T0 + 100)])  # the same, open: kept once
        assert added == 3
        now = store.graph.relations("ns", None, ["marta silva"])
        assert [(r.predicate, r.object) for r in now] == [("works at", "Uni Porto"),
                                                          ("lives in", "Porto")]
        then = store.graph.relations("ns", [""], ["marta silva"], as_of=T0 + 50)
        assert [(r.object, r.valid_from, r.valid_to) for r in then] == [
            ("Lisbon", T0, T0 + 100)]
        # an older fact arriving late is kept as ended when the open one began
        store.graph.relate("ns", "", [("Marta Silva", "lives in", "Faro", b.id, T0 + 50)])
        assert [r.object for r in store.graph.relations("ns", None, ["marta silva"],
                                                          as_of=T0 + 60)] == ["Faro"]
        assert store.graph.relations("other", None, ["marta silva"]) == []
        store.records.delete("ns", [c.id], at=T0 + 200)  # its relations go with it
        assert store.graph.relations("ns", None, ["marta silva"], as_of=T0 + 150) == []

    def test_reset_empties_the_graph(self, store: Any) -> None:
        store.records.insert([rec("Met Ingrid Vasquez.")], model="m")
        store.reset()
        assert store.graph.size() == (0, 0)


class TestSQLiteGraph(GraphConformance):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SQLiteStore]:
        s = SQLiteStore(tmp_path / "graph.db")
        yield s
        s.close()


class TestPostgresGraph(GraphConformance):
    @pytest.fixture
    def store(self, pg_url: str) -> Iterator[PostgresStore]:
        s = PostgresStore(pg_url)
        yield s
        s.close()
