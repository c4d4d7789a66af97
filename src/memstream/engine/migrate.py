"""Copy a whole memory from one store to another (SQLite -> PostgreSQL and back), then verify.

Every table is carried as it is:
- records with their embeddings (and the model that made them), validity, provenance and
  access counts, and the full history, deleted records' included;
- API keys and saved settings;
- the change-event log with its numbers, webhooks with their secrets and delivery cursors,
  dead letters and the relations an LLM read between entities (``store._events.OUTBOX_TABLES``);
- LangGraph's checkpoint tables, when a checkpointer has used the store
  (``store._lg_tables.TABLES``);
- the entity graph as the source holds it (``GRAPH_TABLES``): each entity with its name as
  written, its kind (the kinds the source's embedder read included), counts and times, and
  which records mention it. The target does not extract the names again, so a store whose
  names an older release extracted keeps them as they were.
Only what is rebuilt from those is not copied (``DERIVED``): the keyword index, the embedding
cache and the HNSW graph's log.

The target must be empty, or the target of a migrate that did not finish. From the first write
until the copy is verified, the target carries a mark (``MARK`` in its settings): a memory will
not open it, and a second ``migrate`` into it wipes it and starts again. Records go over in id
order, in batches, each batch one transaction; then the history, keys, settings, the event
log, webhooks and checkpoints. Before anything is written, the source is read once for what the
target cannot hold (a NUL character for PostgreSQL): such a store is refused whole, never copied
halfway. Verification compares, per namespace, the record, valid and embedded counts; the
history length; keys; settings; every carried table's row count; and a sample of records field
by field, with the entities each mentions.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import Conflict, InvalidInput
from ..store import Store, keys_of
from ..store.parts.events import OUTBOX_TABLES
from ..store.parts.lg_tables import TABLES as CHECKPOINT_TABLES
from ..store.parts.lg_tables import Tables, existing_tables
from ..store.protocol import SCRUB_PENDING
from .progress import ProgressFn

BATCH = 1000
SAMPLE = 200
#: the setting that marks a migrate's target until the copy is verified
MARK = "migrating_from"
#: settings that belong to the store itself, never copied
OWN_SETTINGS = frozenset({"schema_version", MARK, SCRUB_PENDING})
#: what is rebuilt from the carried tables, so not copied
DERIVED = ("records_fts", "embedding_cache", "vector_log")
#: the entity graph's tables, carried as the source holds them (``Graph.rows_page``)
GRAPH_TABLES = ("entities", "entity_mentions")
#: how many records with a NUL character an error names
NAMED = 5


@dataclass
class MigrationReport:
    namespaces: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    history: tuple[int, int] = (0, 0)
    keys: tuple[int, int] = (0, 0)
    settings: tuple[int, int] = (0, 0)
    settings_differ: list[str] = field(default_factory=list)
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)
    sampled: int = 0
    sample_mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        counts = [pair for ns in self.namespaces.values() for pair in ns.values()]
        counts += [self.history, self.keys, self.settings, *self.tables.values()]
        return all(a == b for a, b in counts) and not self.sample_mismatches \
            and not self.settings_differ

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "namespaces": self.namespaces, "history": self.history,
                "keys": self.keys, "settings": self.settings,
                "settings_differ": self.settings_differ, "tables": self.tables,
                "sampled": self.sampled, "sample_mismatches": self.sample_mismatches}


def _history_length(store: Store) -> int:
    n, after = 0, 0
    while page := store.transfer.history_page(after, 10_000):
        n += len(page)
        after = page[-1][0]
    return n


def _where(store: Store) -> str:
    return store.url.split("@")[-1]


def _settings(store: Store) -> dict[str, str]:
    return {k: v for k, v in store.kv.meta_items().items() if k not in OWN_SETTINGS}


def unfinished(store: Store) -> str | None:
    """Where a migrate into this store came from, when it has not finished (else None)."""
    return store.kv.get_meta(MARK) or None


def refuse_unfinished(store: Store, *, role: str = "store") -> None:
    """Conflict when the store is the target of a migrate that did not finish: a memory, a
    checkpointer and a migrate (as its source) refuse it, since it may hold only part of its
    source. ``role`` names the store in the message ("store", "source")."""
    _refuse(unfinished(store), role)


def _refuse(started: str | None, role: str) -> None:
    if started:
        source = json.loads(started).get("source", "its source")
        raise Conflict(f"this {role} is the target of a migrate from {source} that did not "
                       "finish, so it may hold only part of it: run the same memstream "
                       "migrate again (it starts over), or use another store")


def unfinished_at(url: str) -> str | None:
    """``unfinished`` for a store named by its URL or path, read without opening it as a
    memory and without writing to it (``memstream check``, the LangGraph checkpointer)."""
    if url.startswith(("postgresql://", "postgres://")):
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            if not db.execute("SELECT to_regclass('meta')").fetchone()[0]:  # type: ignore[index]
                return None
            row = db.execute("SELECT value FROM meta WHERE key = %s", (MARK,)).fetchone()
        return str(row[0]) if row and row[0] else None
    path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else url
    if path == ":memory:" or not Path(path).exists() or Path(path).stat().st_size == 0:
        return None
    from ..store.sqlite.check import connect_read_only

    lite = connect_read_only(path)
    try:
        if not lite.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
                          ).fetchone():
            return None
        row = lite.execute("SELECT value FROM meta WHERE key = ?", (MARK,)).fetchone()
    finally:
        lite.close()
    return str(row[0]) if row and row[0] else None


def refuse_unfinished_at(url: str) -> None:
    """``refuse_unfinished`` for a store named by its URL or path."""
    _refuse(unfinished_at(url), "store")


def _held(store: Store) -> list[str]:
    """What a store already holds, by kind (empty: nothing)."""
    held = [f"records in {', '.join(store.namespaces()[:5])}"] if store.namespaces() else []
    if store.transfer.history_page(0, 1):
        held.append("history")
    if keys_of(store).list_keys():
        held.append("API keys")
    held += [table for table in OUTBOX_TABLES if store.transfer.outbox_count(table)]
    return held


def _prepare(source: Store, target: Store, progress: ProgressFn) -> None:
    """Refuse a target that holds anything of its own; wipe an unfinished migrate's target;
    refuse a source the target cannot hold, or one that is itself an unfinished migrate's
    target (it may hold only part of its own source); then mark the target."""
    refuse_unfinished(source, role="source")
    came_from = unfinished(target)
    held = _held(target)
    if held and came_from is None:
        raise Conflict(f"the target store {_where(target)} already holds {', '.join(held)}; "
                       "migrate into an empty store")
    _refuse_nul(source, target, progress)
    if came_from is not None:  # a migrate was killed midway: start again from nothing
        target.transfer.wipe()
        tables = existing_tables(target.url)
        if tables is not None:
            _clear(tables)
    target.kv.set_meta(MARK, json.dumps({"source": _where(source), "started": time.time()}))
    target.events.configure_events(enabled=False)  # the source's own events are copied as they are


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_nul(v) for v in value)
    return False


def _refuse_nul(source: Store, target: Store, progress: ProgressFn) -> None:
    """A NUL character cannot go into PostgreSQL: find every record, history entry and event
    that holds one before anything is written, and name them."""
    if getattr(target, "holds_nul", True):
        return
    found: list[str] = []
    for ns in source.namespaces():
        after: str | None = None
        while page := source.transfer.records_page(ns, after, BATCH):
            found += [f"{ns}/{rec.id}" for rec, _ in page if _has_nul(rec.to_dict())]
            after = page[-1][0].id
    progress("check", len(found), None)
    position, history = 0, 0
    while entries := source.transfer.history_page(position, BATCH * 5):
        history += sum(_has_nul(e.to_dict()) for _, e in entries)
        position = entries[-1][0]
    offset, events = 0, 0
    while rows := source.transfer.outbox_rows("events", offset, BATCH * 5):
        events += sum(_has_nul(list(r)) for r in rows)
        offset += len(rows)
    if found or history or events:
        named = f" (e.g. {', '.join(found[:NAMED])})" if found else ""
        raise InvalidInput(
            f"the source holds NUL characters (\\x00), which {_where(target)} cannot store: "
            f"{len(found)} records{named}, {history} history entries, {events} events. "
            "Nothing was copied. Remove the character from those records (update their text, "
            "data or metadata, or erase them), then migrate again")


def _clear(tables: Tables) -> None:
    try:
        with tables.transaction() as cur:
            for table in CHECKPOINT_TABLES:
                cur.execute(f"DELETE FROM {table}")
    finally:
        tables.close()


def copy_store(source: Store, target: Store, *, batch: int = BATCH,
               progress: ProgressFn | None = None) -> None:
    """Copy everything from ``source`` into ``target`` (empty, or an unfinished migrate's
    target, wiped first). ``progress(stage, done, total)`` (see memstream.engine.progress) hears of
    the records, history entries and rows copied. The target stays marked until ``finish``."""
    tick = progress or (lambda stage, done, total: None)
    _prepare(source, target, tick)
    records = sum(source.stats(ns).records for ns in source.namespaces()) if progress else None
    done = 0
    for ns in source.namespaces():
        after: str | None = None
        while page := source.transfer.records_page(ns, after, batch):
            by_model: dict[str | None, list[Any]] = {}
            for rec, model in page:
                by_model.setdefault(model, []).append(rec)
            for model, recs in by_model.items():
                target.records.insert(recs, model=model, history=False, link=False)
            after = page[-1][0].id
            done += len(page)
            tick("records", done, records)
    _copy_graph(source, target, batch, tick)
    position, copied = 0, 0
    while entries := source.transfer.history_page(position, batch * 5):
        target.transfer.put_history([e for _, e in entries])
        position = entries[-1][0]
        copied += len(entries)
        tick("history", copied, None)
    for key in keys_of(source).list_keys():
        keys_of(target).put_key(key)
    for name, value in _settings(source).items():
        target.kv.set_meta(name, value)
    for table in OUTBOX_TABLES:
        offset = 0
        while rows := source.transfer.outbox_rows(table, offset, batch * 5):
            target.transfer.put_outbox_rows(table, rows)
            offset += len(rows)
            tick(table, offset, None)
    _copy_checkpoints(source, target, batch, tick)


def _copy_graph(source: Store, target: Store, batch: int, tick: ProgressFn) -> None:
    """The source's entity graph as it is, a page of entities (and their mentions) a
    transaction."""
    after, copied = 0, 0
    while True:
        entities, mentions = source.graph.rows_page(after, batch)
        if not entities:
            return
        target.graph.put_rows(entities, mentions)
        after = entities[-1][0]
        copied += len(entities)
        tick("entities", copied, None)


def _copy_checkpoints(source: Store, target: Store, batch: int, tick: ProgressFn) -> None:
    theirs = existing_tables(source.url)
    if theirs is None:
        return
    from ..store.parts.lg_tables import open_tables

    ours = open_tables(target.url)
    try:
        for table, (order, columns) in CHECKPOINT_TABLES.items():
            marks = ", ".join("?" * (columns.count(",") + 1))
            offset = 0
            while rows := theirs.query(f"SELECT {columns} FROM {table} ORDER BY {order} "
                                       f"LIMIT {int(batch)} OFFSET {int(offset)}"):
                with ours.transaction() as cur:
                    cur.executemany(f"INSERT INTO {table}({columns}) VALUES ({marks})", rows)
                offset += len(rows)
                tick(table, offset, None)
    finally:
        theirs.close()
        ours.close()


def _checkpoint_counts(store: Store) -> dict[str, int]:
    tables = existing_tables(store.url)
    if tables is None:
        return dict.fromkeys(CHECKPOINT_TABLES, 0)
    try:
        return {t: int(tables.query(f"SELECT count(*) FROM {t}")[0][0]) for t in CHECKPOINT_TABLES}
    finally:
        tables.close()


def verify(source: Store, target: Store, *, sample: int = SAMPLE, seed: int = 0
           ) -> MigrationReport:
    """Compare counts of every carried table, and ``sample`` random records per namespace,
    between the two stores."""
    report = MigrationReport()
    rng = random.Random(seed)
    for ns in sorted(set(source.namespaces()) | set(target.namespaces())):
        a, b = source.stats(ns), target.stats(ns)
        report.namespaces[ns] = {"records": (a.records, b.records), "valid": (a.valid, b.valid),
                                 "embedded": (a.with_embedding, b.with_embedding)}
        ids: list[str] = []
        after: str | None = None
        while page := source.transfer.records_page(ns, after, 10_000):
            ids.extend(r.id for r, _ in page)
            after = page[-1][0].id
        for rid in rng.sample(ids, min(len(ids), sample)):
            report.sampled += 1
            xs, ys = source.records.get(ns, [rid]), target.records.get(ns, [rid])
            if not xs or not ys or xs[0].to_dict() != ys[0].to_dict():
                report.sample_mismatches.append(f"{ns}/{rid}: fields differ")
                continue
            if _named(source, ns, rid) != _named(target, ns, rid):
                report.sample_mismatches.append(f"{ns}/{rid}: entities differ")
                continue
            ex = source.indexes.embeddings(ns, [rid]).get(rid)
            ey = target.indexes.embeddings(ns, [rid]).get(rid)
            if (ex is None) != (ey is None) or (ex is not None and ey is not None
                                               and not np.allclose(ex, ey, atol=1e-6)):
                report.sample_mismatches.append(f"{ns}/{rid}: embedding differs")
    report.history = (_history_length(source), _history_length(target))
    report.keys = (len(keys_of(source).list_keys()), len(keys_of(target).list_keys()))
    theirs, ours = _settings(source), _settings(target)
    report.settings = (len(theirs), len(ours))
    report.settings_differ = sorted(k for k in set(theirs) | set(ours)
                                    if theirs.get(k) != ours.get(k))
    for table in OUTBOX_TABLES:
        report.tables[table] = (source.transfer.outbox_count(table),
                                target.transfer.outbox_count(table))
    for table, theirs_n, ours_n in zip(GRAPH_TABLES, source.graph.size(), target.graph.size(),
                                       strict=True):
        report.tables[table] = (theirs_n, ours_n)
    ckpt_a, ckpt_b = _checkpoint_counts(source), _checkpoint_counts(target)
    for table in CHECKPOINT_TABLES:
        report.tables[table] = (ckpt_a[table], ckpt_b[table])
    return report


def _named(store: Store, namespace: str, record_id: str) -> list[dict[str, Any]]:
    """The entities a record mentions, as comparable across stores (ids aside)."""
    found = store.graph.record_entities(namespace, [record_id]).get(record_id, [])
    return sorted(({k: v for k, v in e.to_dict().items() if k != "id"} for e in found),
                  key=lambda e: e["key"])


def finish(target: Store, report: MigrationReport) -> None:
    """Take the mark off a target whose copy verified; a failed one stays marked."""
    if report.ok:
        target.kv.set_meta(MARK, "")


def render(report: MigrationReport) -> str:
    lines = [f"{'namespace':<24} {'records':>17} {'valid':>17} {'embedded':>17}"]
    for ns, counts in report.namespaces.items():
        cells = [f"{a:>8,}/{b:<8,}" for a, b in counts.values()]
        lines.append(f"{ns:<24} " + " ".join(f"{c:>17}" for c in cells))
    lines.append(f"history entries: {report.history[0]:,} / {report.history[1]:,}; "
                 f"API keys: {report.keys[0]} / {report.keys[1]}; settings: "
                 f"{report.settings[0]} / {report.settings[1]} (source / target)")
    if report.settings_differ:
        lines.append(f"settings that differ: {', '.join(report.settings_differ)}")
    lines.append("tables: " + "; ".join(f"{t} {a:,} / {b:,}"
                                        for t, (a, b) in report.tables.items()))
    lines.append(f"records compared field by field: {report.sampled:,}, "
                 f"mismatches: {len(report.sample_mismatches)}")
    lines += [f"  {m}" for m in report.sample_mismatches[:10]]
    lines.append("verified: the copy matches" if report.ok else
                 "VERIFICATION FAILED: the target stays marked unfinished")
    return "\n".join(lines)
