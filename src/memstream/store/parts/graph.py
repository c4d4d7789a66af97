"""A store's ``graph`` part (``protocol.EntityGraph``): the named things its records mention
(``_entities.extract``) and which records mention them, the same SQL on every backend (only
the placeholder and two function names differ), over the store's connection.

The graph is derived from the records' text and kept in the records' own transactions: an
insert links its records (``link``), a text update links the record again (``relink``), a
delete or an erasure unlinks them (``unlink``) and drops every entity left without a mention,
so the graph never holds a name that no stored record holds. An entity belongs to a namespace
and an owner (the records' ``user_id``, ``""`` when they have none): the same name under two
users is two entities.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..._types import Entity, Record, Relation
from ...core.names import extract, key_of
from .backend import Backend

__all__ = ["ENTITY_COLUMNS", "MAX_PER_RECORD", "MAX_PER_WRITE", "MENTION_COLUMNS", "READ_CHARS",
           "Graph"]

log = logging.getLogger("memstream.entities")

#: ids per ``IN (...)`` list, well under SQLite's limit of bound parameters
CHUNK = 400
#: rows per multi-row INSERT (9 parameters each, under SQLite's limit of 32,766)
ROWS = 500
#: the names linked of one record at most (the first ones in its text), the characters of a
#: record read for them, and the names one write links at most (a record past the write's
#: budget gets fewer, and the write logs how many were left out): a 990,000-character list of
#: names made 69,794 entities in a 2 s write transaction
MAX_PER_RECORD = 64
READ_CHARS = 50_000
MAX_PER_WRITE = 20_000
#: how a new mention of a known entity updates it: counts, times, and the name and kind of
#: its first strong mention
_UPSERT = (" ON CONFLICT (namespace, owner, key) DO UPDATE SET "
           "mentions = entities.mentions + excluded.mentions, "
           "strong = entities.strong + excluded.strong, "
           "first_seen = {least}(entities.first_seen, excluded.first_seen), "
           "last_seen = {greatest}(entities.last_seen, excluded.last_seen), "
           "name = CASE WHEN entities.strong = 0 AND excluded.strong > 0 THEN excluded.name "
           "ELSE entities.name END, "
           "kind = CASE WHEN entities.strong = 0 AND excluded.strong > 0 THEN excluded.kind "
           "ELSE entities.kind END")
#: the confirmed entities whose kind the words left open (``cognition.kinds.UNREAD``): the
#: condition of the partial index ``entities_unread`` (the schemas' graph migrations), written
#: the same in each query so that the index serves it
_UNREAD_WHERE = "kind IN ('name', 'thing') AND strong > 0"
#: an entity's and a mention's columns as ``migrate`` carries them (``rows_page``), ids aside
ENTITY_COLUMNS = "namespace, owner, key, name, kind, mentions, strong, first_seen, last_seen"
MENTION_COLUMNS = "record_id, namespace, at, strong"
_ENTITY = ("e.id, e.namespace, e.owner, e.name, e.kind, e.key, e.mentions, e.strong, "
           "e.first_seen, e.last_seen")


def _entity(row: Sequence[Any]) -> Entity:
    return Entity(int(row[0]), row[1], row[2] or None, row[3], row[4], row[5], int(row[6]),
                  row[8], row[9], confirmed=int(row[7]) > 0)


#: the keys one query of ``Graph.find`` looks up at most
_KEYS_A_QUERY = 200


def _chunks(items: Sequence[Any], size: int = CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class Graph:
    """Entities (``entities``) and their mentions (``entity_mentions``)."""

    def __init__(self, backend: Backend) -> None:
        self._session = backend.session
        self._ph = backend.PLACEHOLDER
        pg = self._ph != "?"
        self._least, self._greatest = ("least", "greatest") if pg else ("min", "max")

    # --- in the records' transactions ----------------------------------------------------

    def link(self, db: Any, records: Sequence[Record]) -> None:
        """Link new records to the entities their text mentions (text records only: the
        agents' states and other named spaces hold no prose)."""
        ph = self._ph
        found: dict[tuple[str, str, str], list[Any]] = {}
        mentions: list[tuple[str, str, str, str, float, int]] = []
        budget, left_out = MAX_PER_WRITE, 0
        for r in records:
            if r.space != "":
                continue
            owner = r.user_id or ""
            named = extract(r.text[:READ_CHARS])
            kept = named[:max(0, min(MAX_PER_RECORD, budget))]
            budget -= len(kept)
            left_out += len(named) - len(kept)
            for m in kept:
                k = (r.namespace, owner, m.key)
                row = found.get(k)
                if row is None:
                    found[k] = [m.name, m.kind, 1, int(m.strong), r.created_at, r.created_at]
                else:
                    row[2] += 1
                    row[3] += int(m.strong)
                    row[4] = min(row[4], r.created_at)
                    row[5] = max(row[5], r.created_at)
                    if m.strong and row[3] == 1:  # the first strong mention names it
                        row[0], row[1] = m.name, m.kind
                mentions.append((r.namespace, owner, m.key, r.id, r.created_at, int(m.strong)))
        if left_out:
            log.info("%d names of this write were not linked (at most %d a record, %d a "
                     "write: docs/entities.md)", left_out, MAX_PER_RECORD, MAX_PER_WRITE)
        if not found:
            return
        # in key order: two writers never wait on each other's entity rows in turn; one
        # multi-row statement per part (far cheaper per row than executemany)
        rows = [(*k, *v) for k, v in sorted(found.items())]
        for part in _chunks(rows, ROWS):
            db.execute(
                "INSERT INTO entities (namespace, owner, key, name, kind, mentions, strong, "
                "first_seen, last_seen) VALUES "
                + ", ".join([f"({', '.join([ph] * 9)})"] * len(part)) + _UPSERT.format(
                    least=self._least, greatest=self._greatest),
                [v for row in part for v in row])
        ids = self._ids(db, list(found))
        marks = [(ids[(ns, owner, key)], rid, ns, at, strong)
                 for ns, owner, key, rid, at, strong in mentions]
        for part in _chunks(marks, ROWS):
            db.execute("INSERT INTO entity_mentions (entity_id, record_id, namespace, at, strong) "
                       "VALUES " + ", ".join([f"({', '.join([ph] * 5)})"] * len(part))
                       + " ON CONFLICT DO NOTHING", [v for row in part for v in row])

    def _ids(self, db: Any, keys: Sequence[tuple[str, str, str]]) -> dict[tuple[str, str, str],
                                                                          int]:
        out: dict[tuple[str, str, str], int] = {}
        by_scope: dict[tuple[str, str], list[str]] = {}
        for ns, owner, key in keys:
            by_scope.setdefault((ns, owner), []).append(key)
        for (ns, owner), names in by_scope.items():
            for part in _chunks(names):
                for eid, key in db.execute(
                        f"SELECT id, key FROM entities WHERE namespace = {self._ph} AND "
                        f"owner = {self._ph} AND key IN ({', '.join([self._ph] * len(part))})",
                        (ns, owner, *part)).fetchall():
                    out[(ns, owner, key)] = int(eid)
        return out

    def unlink(self, db: Any, namespace: str, ids: Sequence[str]) -> None:
        """Unlink records about to go (their relations go too), and drop the entities no
        record mentions any more."""
        ph = self._ph
        touched: set[int] = set()
        for part in _chunks(list(dict.fromkeys(ids))):
            q = ", ".join([ph] * len(part))
            db.execute(f"DELETE FROM entity_relations WHERE namespace = {ph} AND record_id IN "
                       f"({q})", (namespace, *part))
            touched.update(int(r[0]) for r in db.execute(
                f"SELECT DISTINCT entity_id FROM entity_mentions WHERE namespace = {ph} AND "
                f"record_id IN ({q})", (namespace, *part)).fetchall())
            db.execute(f"DELETE FROM entity_mentions WHERE namespace = {ph} AND record_id IN "
                       f"({q})", (namespace, *part))
        for part in _chunks(sorted(touched)):
            q = ", ".join([ph] * len(part))
            db.execute(
                "UPDATE entities SET "
                "mentions = (SELECT count(*) FROM entity_mentions m WHERE m.entity_id = "
                "entities.id), "
                "strong = (SELECT count(*) FROM entity_mentions m WHERE m.entity_id = "
                "entities.id AND m.strong = 1), "
                "first_seen = (SELECT min(at) FROM entity_mentions m WHERE m.entity_id = "
                "entities.id), "
                "last_seen = (SELECT max(at) FROM entity_mentions m WHERE m.entity_id = "
                f"entities.id) WHERE id IN ({q})", tuple(part))
            db.execute(f"DELETE FROM entities WHERE id IN ({q}) AND mentions = 0", tuple(part))

    def relink(self, db: Any, record: Record) -> None:
        """Link a record whose text changed again."""
        self.unlink(db, record.namespace, [record.id])
        self.link(db, [record])

    def unread_kinds(self, limit: int = 64) -> list[tuple[int, str]]:
        """(id, name) of confirmed entities whose kind the words left open (``UNREAD``), on
        the index that holds only those (so that finding none costs nothing)."""
        ph = self._ph
        with self._session(False) as db:
            rows = db.execute(f"SELECT id, name FROM entities WHERE {_UNREAD_WHERE} LIMIT {ph}",
                              (limit,)).fetchall()
        return [(int(r[0]), r[1]) for r in rows]

    def set_kinds(self, kinds: Sequence[tuple[int, str]]) -> int:
        """Set the kinds read for these entities, where the kind is still open (a relink
        meanwhile may have named it). How many were set."""
        ph = self._ph
        done = 0
        with self._session(True) as db:
            for eid, kind in sorted(kinds):
                cur = db.execute(f"UPDATE entities SET kind = {ph} WHERE id = {ph} AND "
                                 f"{_UNREAD_WHERE}", (kind, eid))
                done += max(0, cur.rowcount or 0)
        return done

    def rows_page(self, after: int, limit: int
                  ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        ph = self._ph
        with self._session(False) as db:
            entities = [tuple(r) for r in db.execute(
                f"SELECT id, {ENTITY_COLUMNS} FROM entities WHERE id > {ph} ORDER BY id "
                f"LIMIT {ph}", (after, limit)).fetchall()]
            if not entities:
                return [], []
            mentions = [tuple(r) for r in db.execute(
                f"SELECT entity_id, {MENTION_COLUMNS} FROM entity_mentions WHERE entity_id "
                f"> {ph} AND entity_id <= {ph} ORDER BY entity_id, at, record_id",
                (after, entities[-1][0])).fetchall()]
        return entities, mentions

    def put_rows(self, entities: Sequence[Sequence[Any]], mentions: Sequence[Sequence[Any]]
                 ) -> None:
        ph = self._ph
        width = ENTITY_COLUMNS.count(",") + 1
        with self._session(True) as db:
            for part in _chunks(list(entities), ROWS):
                db.execute(f"INSERT INTO entities ({ENTITY_COLUMNS}) VALUES "
                           + ", ".join([f"({', '.join([ph] * width)})"] * len(part)),
                           [v for row in part for v in row[1:]])
            ids = self._ids(db, [(row[1], row[2], row[3]) for row in entities])
            ours = {row[0]: ids[(row[1], row[2], row[3])] for row in entities}
            for part in _chunks(list(mentions), ROWS):
                db.execute(f"INSERT INTO entity_mentions (entity_id, {MENTION_COLUMNS}) VALUES "
                           + ", ".join([f"({', '.join([ph] * 5)})"] * len(part)),
                           [v for row in part for v in (ours[row[0]], *row[1:])])

    def clear(self, db: Any) -> None:
        db.execute("DELETE FROM entity_relations")
        db.execute("DELETE FROM entity_mentions")
        db.execute("DELETE FROM entities")

    def relate(self, namespace: str, owner: str,
               triples: Sequence[tuple[str, str, str, str, float]]) -> int:
        """Keep relations ``(subject, predicate, object, record id, time)``: each is valid from
        its time until the next one on the same subject and predicate: it ends the one valid at
        its time, and ends itself when a later one begins (one that arrives late is fitted in
        between). The same relation already valid at that time is not added twice. How many
        were added."""
        ph = self._ph
        added = 0
        with self._session(True) as db:
            for subject, predicate, obj, rid, at in sorted(triples, key=lambda t: t[4]):
                sk, ok = key_of(subject), key_of(obj)
                if not sk or not ok:
                    continue
                scope = (namespace, owner, sk, predicate)
                rows = db.execute(  # the relations of the subject valid at ``at`` or later
                    "SELECT id, object_key, valid_from FROM entity_relations WHERE namespace = "
                    f"{ph} AND owner = {ph} AND subject_key = {ph} AND predicate = {ph} AND "
                    f"(valid_to IS NULL OR valid_to > {ph})", (*scope, at)).fetchall()
                if any(r[1] == ok and r[2] <= at for r in rows):
                    continue  # already known to hold then
                ends = None
                for eid, _key, since in rows:
                    if since <= at:
                        db.execute(f"UPDATE entity_relations SET valid_to = {ph} WHERE id = {ph}",
                                   (at, eid))
                    else:
                        ends = since if ends is None else min(ends, since)
                db.execute(
                    "INSERT INTO entity_relations (namespace, owner, subject_key, subject, "
                    "predicate, object_key, object, record_id, valid_from, valid_to) VALUES "
                    f"({', '.join([ph] * 10)})",
                    (namespace, owner, sk, subject, predicate, ok, obj, rid, at, ends))
                added += 1
        return added

    def relations(self, namespace: str, owners: Sequence[str] | None, subject_keys:
                  Sequence[str], *, as_of: float | None = None, limit: int = 100
                  ) -> list[Relation]:
        """The relations of these subjects valid at ``as_of`` (None: now), newest first."""
        if not subject_keys:
            return []
        ph = self._ph
        where, params = self._scope(namespace, owners)
        where += f" AND e.subject_key IN ({', '.join([ph] * len(subject_keys))})"
        params += list(subject_keys)
        if as_of is None:
            where += " AND e.valid_to IS NULL"
        else:
            where += f" AND e.valid_from <= {ph} AND (e.valid_to IS NULL OR e.valid_to > {ph})"
            params += [as_of, as_of]
        with self._session(False) as db:
            rows = db.execute(
                "SELECT e.subject, e.predicate, e.object, e.record_id, e.valid_from, e.valid_to "
                f"FROM entity_relations e WHERE {where} ORDER BY e.valid_from DESC, e.id DESC "
                f"LIMIT {ph}", (*params, limit)).fetchall()
        return [Relation(*r) for r in rows]

    # --- reads -----------------------------------------------------------------------------

    def _scope(self, namespace: str, owners: Sequence[str] | None) -> tuple[str, list[Any]]:
        where, params = f"e.namespace = {self._ph}", [namespace]
        if owners is not None:
            where += f" AND e.owner IN ({', '.join([self._ph] * len(owners))})"
            params += list(owners)
        return where, params

    def entities(self, namespace: str, owners: Sequence[str] | None = None, *,
                 query: str | None = None, record_ids: Sequence[str] | None = None,
                 limit: int = 50, confirmed: bool = True) -> list[Entity]:
        ph = self._ph
        where, params = self._scope(namespace, owners)
        if confirmed:
            where += " AND e.strong > 0"
        if query:
            where += f" AND e.key LIKE {ph}"
            params.append("%" + key_of(query).replace("%", "").replace("_", "") + "%")
        if record_ids is not None:
            if not record_ids:
                return []
            where += (" AND e.id IN (SELECT entity_id FROM entity_mentions WHERE namespace = "
                      f"{ph} AND record_id IN ({', '.join([ph] * len(record_ids))}))")
            params += [namespace, *record_ids]
        with self._session(False) as db:
            rows = db.execute(f"SELECT {_ENTITY} FROM entities e WHERE {where} ORDER BY "
                              f"e.mentions DESC, e.last_seen DESC, e.id LIMIT {ph}",
                              (*params, limit)).fetchall()
        return [_entity(r) for r in rows]

    def find(self, namespace: str, owners: Sequence[str] | None, keys: Sequence[str]
             ) -> list[Entity]:
        """The entities (weak ones included) whose key is one of ``keys``, or whose key is
        one of them and more words ("marta" finds "marta silva")."""
        keys = [k for k in dict.fromkeys(keys) if k]
        if not keys:
            return []
        ph = self._ph
        where, params = self._scope(namespace, owners)
        rows = []
        with self._session(False) as db:
            # a few hundred keys a query: SQLite parses a chain of ORs as a tree as deep as it
            # is long, and refuses one deeper than 1,000
            for part in _chunks(keys, _KEYS_A_QUERY):
                # the key itself, or it and a space and more: a range on the key's index (a
                # space sorts just before "!", and no key holds a character below a space)
                ors = " OR ".join([f"(e.key >= {ph} AND e.key < {ph})"] * len(part))
                rows += db.execute(f"SELECT {_ENTITY} FROM entities e WHERE {where} AND ({ors})",
                                   (*params, *[v for k in part for v in (k, k + "!")])
                                   ).fetchall()
        return [_entity(r) for r in dict.fromkeys(rows)]

    def mentions(self, entity_ids: Sequence[int], *, limit: int = 50) -> dict[int, list[str]]:
        """The ids of the records mentioning each entity, newest first, at most ``limit``."""
        ph = self._ph
        out: dict[int, list[str]] = {}
        with self._session(False) as db:
            for eid in dict.fromkeys(entity_ids):
                out[eid] = [r[0] for r in db.execute(
                    f"SELECT record_id FROM entity_mentions WHERE entity_id = {ph} "
                    f"ORDER BY at DESC, record_id DESC LIMIT {ph}", (eid, limit)).fetchall()]
        return out

    def record_entities(self, namespace: str, record_ids: Sequence[str]
                        ) -> dict[str, list[Entity]]:
        """The entities each record mentions (confirmed or not)."""
        ph = self._ph
        out: dict[str, list[Entity]] = {}
        with self._session(False) as db:
            for part in _chunks(list(dict.fromkeys(record_ids))):
                for row in db.execute(
                        f"SELECT m.record_id, {_ENTITY} FROM entity_mentions m JOIN entities e "
                        f"ON e.id = m.entity_id WHERE m.namespace = {ph} AND m.record_id IN "
                        f"({', '.join([ph] * len(part))}) ORDER BY e.id",
                        (namespace, *part)).fetchall():
                    out.setdefault(row[0], []).append(_entity(row[1:]))
        return out

    def related(self, entity_id: int, *, limit: int = 10, window: int = 200
                ) -> list[tuple[Entity, list[str]]]:
        """Confirmed entities that share records with this one (among its newest ``window``
        mentions), most shared first, each with the shared records' ids (newest first)."""
        ph = self._ph
        with self._session(False) as db:
            rows = db.execute(
                f"SELECT {_ENTITY}, m2.record_id FROM (SELECT record_id, at FROM entity_mentions "
                f"WHERE entity_id = {ph} ORDER BY at DESC, record_id DESC LIMIT {ph}) m1 "
                "JOIN entity_mentions m2 ON m2.record_id = m1.record_id "
                f"JOIN entities e ON e.id = m2.entity_id WHERE m2.entity_id <> {ph} "
                "AND e.strong > 0 ORDER BY m1.at DESC",
                (entity_id, window, entity_id)).fetchall()
        by: dict[int, tuple[Entity, list[str]]] = {}
        for row in rows:
            e = _entity(row[:10])
            by.setdefault(e.id, (e, []))[1].append(row[10])
        ranked = sorted(by.values(), key=lambda item: (-len(item[1]), -(item[0].last_seen or 0),
                                                        item[0].id))
        return ranked[:limit]

    def size(self, namespace: str | None = None) -> tuple[int, int]:
        """(entities, mentions) stored, of one namespace or all."""
        ph = self._ph
        with self._session(False) as db:
            if namespace is None:
                e = db.execute("SELECT count(*) FROM entities").fetchone()[0]
                m = db.execute("SELECT count(*) FROM entity_mentions").fetchone()[0]
            else:
                e = db.execute(f"SELECT count(*) FROM entities WHERE namespace = {ph}",
                               (namespace,)).fetchone()[0]
                m = db.execute(f"SELECT count(*) FROM entity_mentions WHERE namespace = {ph}",
                               (namespace,)).fetchone()[0]
        return int(e), int(m)

    def backfill(self, db: Any, select: str, to_record: Callable[[Any], Record]) -> None:
        """Link the records written before the graph existed (in the migration that makes it,
        in its transaction), a page at a time."""
        after = ""
        while True:
            rows = db.execute(f"{select} WHERE r.id > {self._ph} ORDER BY r.id LIMIT 1000",
                              (after,)).fetchall()
            if not rows:
                return
            records = [to_record(row) for row in rows]
            self.link(db, records)
            after = records[-1].id
