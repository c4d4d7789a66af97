"""The change-event outbox and the webhooks that read it: a store's ``events`` part, the same SQL
on every backend (only the placeholder and how events are serialised differ: ``Backend``).

The stores write a change's events inside the change's own transaction (``log``), so an event
exists if and only if its change committed. Sequence numbers follow commit order: SQLite has one
writer at a time; PostgreSQL takes a transaction lock before it numbers events
(``serialise_events``), so a reader that has seen number n will never later see a smaller one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ...events import ChangeEvent, Webhook, current_cause, event_type
from .backend import Backend

_EVENT_COLUMNS = "namespace, type, record_ids, kind, user_id, agent_id, run_id, at, data"
_HOOK_COLUMNS = ("id, namespace, url, secret, types, created_at, cursor, attempts, next_at, "
                 "last_error, delivered")
#: the tables a migrate carries as they are: table -> (its order, its columns)
OUTBOX_TABLES = {
    "events": ("seq", "seq, " + _EVENT_COLUMNS),
    "webhooks": ("id", _HOOK_COLUMNS),
    "webhook_dead": ("webhook_id, seq", "webhook_id, seq, at, error"),
    # the relations an LLM read (store/parts/graph.py): not derived from the records, so carried
    "entity_relations": ("id", "namespace, owner, subject_key, subject, predicate, object_key, "
                                "object, record_id, valid_from, valid_to"),
}
#: a prune deletes at most this many events per statement
PRUNE_BATCH = 10_000
#: an erase of up to this many records finds their events one record at a time; more, in
#: one pass over the namespace's events
SCRUB_BY_ID = 64
#: events per INSERT statement (9 parameters each, under SQLite's limit of 32,766)
LOG_ROWS = 500


class Numbering(Backend, Protocol):
    """What the event log needs of its store besides a session: how events are numbered."""

    def serialise_events(self, db: Any) -> None:
        """Make event numbering follow commit order (nothing to do with one writer)."""

    def events_copied(self, db: Any) -> None:
        """After events were written with their own numbers: later ones are numbered above."""


class EventLog:
    """The outbox (``events``) and webhooks (``webhooks``, ``webhook_dead``) of a store: its
    ``events`` part (``protocol.EventStore``), over the store's connection."""

    def __init__(self, backend: Numbering) -> None:
        self._backend = backend
        self._session = backend.session
        self.PLACEHOLDER = backend.PLACEHOLDER
        #: what the memory's config asks (``configure_events``)
        self.events_on, self.events_text, self.events_touch = True, False, False

    def configure_events(self, *, enabled: bool, text: bool = False, touch: bool = False
                         ) -> None:
        self.events_on, self.events_text, self.events_touch = enabled, text, touch

    # --- writing, inside a store's own transactions ----------------------------------------

    def change_rows(self, op: str, records: Iterable[Any], *, fields: Sequence[str] = (),
                    superseded_by: str | None = None, text: str | None = None
                    ) -> list[tuple[Any, ...]]:
        """One row per record (anything with namespace, id, kind and scope ids) for ``op``."""
        if not self.events_on:
            return []
        cause, now = current_cause(), time.time()
        rows = []
        for r in records:
            data: dict[str, Any] = {"op": op}
            if fields:
                data["fields"] = list(fields)
            if superseded_by is not None:
                data["superseded_by"] = superseded_by
            whose = (r.user_id, r.agent_id, r.run_id)
            if op == "erase":  # an erased record keeps its id and time only, here too
                data["erased"] = True
                whose = (None, None, None)
            shown = text if text is not None else getattr(r, "text", None)
            if self.events_text and shown is not None and op not in ("delete", "erase"):
                data["text"] = shown
            rows.append((r.namespace, event_type(op, r.kind, superseded=superseded_by
                                                 is not None, cause=cause),
                         json.dumps([r.id]), r.kind, *whose, now, json.dumps(data)))
        return rows

    def scrub(self, db: Any, namespace: str, ids: Sequence[str]) -> int:
        """Take the text (written while ``events_text`` was on) and the user, agent and run
        ids out of the kept events of erased records: what the event log, pending webhook
        batches and dead letters (all read from the log) would still show of them. How many
        events were changed. A few ids are looked up one by one; many, in one pass over the
        namespace's events."""
        ph = self.PLACEHOLDER
        columns = "seq, record_ids, data, user_id, agent_id, run_id"
        if len(ids) <= SCRUB_BY_ID:
            rows = [row for rid in ids for row in db.execute(
                f"SELECT {columns} FROM events WHERE namespace = {ph} AND record_ids = {ph}",
                (namespace, json.dumps([rid]))).fetchall()]
        else:
            erased = {json.dumps([rid]) for rid in ids}
            rows = [row for row in db.execute(
                f"SELECT {columns} FROM events WHERE namespace = {ph}", (namespace,))
                if row[1] in erased]
        changes = []
        for seq, _, raw, *whose in rows:
            data = json.loads(raw) if raw else {}
            had_text = data.pop("text", None) is not None
            if had_text:
                data["erased"] = True
            if had_text or any(w is not None for w in whose):
                changes.append((json.dumps(data), seq))
        if changes:
            db.executemany(f"UPDATE events SET data = {ph}, user_id = NULL, agent_id = NULL, "
                           f"run_id = NULL WHERE seq = {ph}", changes)
        return len(changes)

    def log(self, db: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        if not rows:
            return
        self._backend.serialise_events(db)
        row = f"({', '.join([self.PLACEHOLDER] * 9)})"
        for start in range(0, len(rows), LOG_ROWS):  # a multi-row statement per part
            part = rows[start:start + LOG_ROWS]
            db.execute(f"INSERT INTO events({_EVENT_COLUMNS}) VALUES "
                       + ", ".join([row] * len(part)), [v for r in part for v in r])

    def bulk_rows(self, namespace: str, type_: str, record_ids: Sequence[str], *,
                   agent_id: str | None = None, data: dict[str, Any] | None = None
                   ) -> list[tuple[Any, ...]]:
        """One event about many records (touches, tier moves)."""
        if not self.events_on or not record_ids:
            return []
        return [(namespace, type_, json.dumps(list(record_ids)), None, None, agent_id, None,
                 time.time(), json.dumps(data or {}))]

    def touch_rows(self, namespace: str, ids: Sequence[str]) -> list[tuple[Any, ...]]:
        return self.bulk_rows(namespace, "touched", ids, data={"op": "touch"}) \
            if self.events_touch else []

    def append_events(self, namespace: str, type_: str, record_ids: Sequence[str], *,
                      agent_id: str | None = None, data: dict[str, Any] | None = None
                      ) -> None:
        """Write one event that no record change carries (tier moves) in its own
        transaction."""
        rows = self.bulk_rows(namespace, type_, record_ids, agent_id=agent_id, data=data)
        if rows:
            with self._session(True) as db:
                self.log(db, rows)

    # --- reading --------------------------------------------------------------------------

    def events_after(self, namespaces: Sequence[str] | None, after: int, *, limit: int = 100,
                     types: Sequence[str] = (), upto: int | None = None
                     ) -> list[ChangeEvent]:
        """Events of these namespaces (every one: None) numbered above ``after`` (and at most
        ``upto``), oldest first; only ``types`` when given."""
        ph = self.PLACEHOLDER
        where = [f"seq > {ph}"]
        params: list[Any] = [after]
        if namespaces is not None:
            if not namespaces:
                return []
            where.append(f"namespace IN ({', '.join([ph] * len(namespaces))})")
            params += list(namespaces)
        if types:
            where.append(f"type IN ({', '.join([ph] * len(types))})")
            params += list(types)
        if upto is not None:
            where.append(f"seq <= {ph}")
            params.append(upto)
        with self._session(False) as db:
            rows = db.execute(f"SELECT seq, {_EVENT_COLUMNS} FROM events WHERE "
                              f"{' AND '.join(where)} ORDER BY seq LIMIT {ph}",
                              (*params, limit)).fetchall()
        return [ChangeEvent(seq=r[0], namespace=r[1], type=r[2],
                            record_ids=tuple(json.loads(r[3])), kind=r[4], user_id=r[5],
                            agent_id=r[6], run_id=r[7], at=r[8],
                            data=json.loads(r[9]) if r[9] else {}) for r in rows]

    # --- transfer (memstream migrate) ---------------------------------------------------------

    def outbox_rows(self, table: str, offset: int, limit: int) -> list[tuple[Any, ...]]:
        """Rows of an ``OUTBOX_TABLES`` table in its order, as stored."""
        order, columns = OUTBOX_TABLES[table]
        ph = self.PLACEHOLDER
        with self._session(False) as db:
            return [tuple(r) for r in db.execute(
                f"SELECT {columns} FROM {table} ORDER BY {order} LIMIT {ph} OFFSET {ph}",
                (limit, offset)).fetchall()]

    def put_outbox_rows(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        """Store rows read by ``outbox_rows`` (of another store), in one transaction."""
        if not rows:
            return
        columns = OUTBOX_TABLES[table][1]
        marks = ", ".join([self.PLACEHOLDER] * (columns.count(",") + 1))
        with self._session(True) as db:
            db.executemany(f"INSERT INTO {table}({columns}) VALUES ({marks})",
                           [tuple(r) for r in rows])
            if table == "events":
                self._backend.events_copied(db)

    def outbox_count(self, table: str) -> int:
        if table not in OUTBOX_TABLES:
            raise KeyError(table)
        with self._session(False) as db:
            return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def last_event_seq(self) -> int:
        """The highest sequence number written so far (0: none)."""
        with self._session(False) as db:
            row = db.execute("SELECT max(seq) FROM events").fetchone()
        return int(row[0] or 0)

    def prune_events(self, *, before: float, limit: int = PRUNE_BATCH) -> int:
        """Delete up to ``limit`` events written before ``before``, oldest first, but none a
        webhook has yet to deliver. Returns how many went."""
        ph = self.PLACEHOLDER
        with self._session(True) as db:
            keep = db.execute("SELECT min(cursor) FROM webhooks").fetchone()[0]
            bound = f" AND seq <= {int(keep)}" if keep is not None else ""
            cur = db.execute(f"DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE "
                             f"at < {ph}{bound} ORDER BY seq LIMIT {ph})", (before, limit))
            return int(cur.rowcount or 0)

    # --- webhooks -------------------------------------------------------------------------

    def put_webhook(self, hook: Webhook, *, cap: int | None = None) -> bool:
        ph = self.PLACEHOLDER
        with self._session(True) as db:
            if cap is not None:
                self._backend.serialise_events(db)  # one registration at a time (PostgreSQL)
                held = db.execute(f"SELECT count(*) FROM webhooks WHERE namespace = {ph}",
                                  (hook.namespace,)).fetchone()[0]
                if held >= cap:
                    return False
            db.execute(f"INSERT INTO webhooks({_HOOK_COLUMNS}) VALUES "
                       f"({', '.join([ph] * 11)})",
                       (hook.id, hook.namespace, hook.url, hook.secret,
                        json.dumps(list(hook.types)), hook.created_at, hook.cursor,
                        hook.attempts, hook.next_at, hook.last_error, hook.delivered))
        return True

    def webhooks(self, namespace: str | None = None) -> list[Webhook]:
        ph = self.PLACEHOLDER
        where, params = (f"WHERE w.namespace = {ph}", (namespace,)) if namespace else ("", ())
        with self._session(False) as db:
            rows = db.execute(
                f"SELECT {', '.join('w.' + c.strip() for c in _HOOK_COLUMNS.split(','))}, "
                "(SELECT count(*) FROM webhook_dead d WHERE d.webhook_id = w.id) "
                f"FROM webhooks w {where} ORDER BY w.created_at, w.id", params).fetchall()
        return [_hook(r) for r in rows]

    def remove_webhook(self, namespace: str, hook_id: str) -> bool:
        ph = self.PLACEHOLDER
        with self._session(True) as db:
            gone = db.execute(f"DELETE FROM webhooks WHERE id = {ph} AND namespace = {ph}",
                              (hook_id, namespace)).rowcount
            if gone:
                db.execute(f"DELETE FROM webhook_dead WHERE webhook_id = {ph}", (hook_id,))
        return bool(gone)

    def claim_webhooks(self, owner: str, *, lease: float, now: float) -> list[Webhook]:
        """Take the webhooks due for a try (their retry time has come) that no other
        deliverer holds, for ``lease`` seconds."""
        ph = self.PLACEHOLDER
        with self._session(True) as db:
            rows = db.execute(
                f"UPDATE webhooks SET owner = {ph}, lease_until = {ph} WHERE next_at <= {ph} "
                f"AND (owner IS NULL OR lease_until < {ph} OR owner = {ph}) "
                f"RETURNING {_HOOK_COLUMNS}, 0", (owner, now + lease, now, now, owner)
            ).fetchall()
        return sorted((_hook(r) for r in rows), key=lambda h: (h.created_at, h.id))

    def release_webhooks(self, stale: Callable[[str], bool]) -> int:
        """Free the webhooks held by owners that ``stale(owner)`` says are gone (a deliverer
        killed on this host), so a new one need not wait out their lease."""
        ph = self.PLACEHOLDER
        with self._session(False) as db:
            held = db.execute("SELECT id, owner FROM webhooks WHERE owner IS NOT NULL").fetchall()
        freed = 0
        for hook_id, owner in held:
            if stale(owner):
                with self._session(True) as db:
                    freed += db.execute(f"UPDATE webhooks SET owner = NULL, lease_until = 0 "
                                        f"WHERE id = {ph} AND owner = {ph}",
                                        (hook_id, owner)).rowcount
        return freed

    def webhook_progress(self, hook_id: str, owner: str, *, cursor: int, delivered: int = 0,
                         attempts: int = 0, next_at: float = 0.0, error: str | None = None,
                         dead: Sequence[int] = ()) -> bool:
        """Record a try: the new cursor, how many events arrived, the failed tries of the
        next batch and when to try again, the last error, and events given up on (they move
        to the dead letters). Only the holder of the lease may; False when it is lost."""
        ph = self.PLACEHOLDER
        with self._session(True) as db:
            moved = db.execute(
                f"UPDATE webhooks SET cursor = {ph}, delivered = delivered + {ph}, "
                f"attempts = {ph}, next_at = {ph}, last_error = {ph} WHERE id = {ph} AND "
                f"owner = {ph}", (cursor, delivered, attempts, next_at, error, hook_id, owner)
            ).rowcount
            if moved and dead:
                db.executemany(f"INSERT INTO webhook_dead(webhook_id, seq, at, error) VALUES "
                               f"({ph}, {ph}, {ph}, {ph}) ON CONFLICT DO NOTHING",
                               [(hook_id, s, time.time(), error) for s in dead])
        return bool(moved)

    def dead_letters(self, hook_id: str) -> list[tuple[int, float, str | None]]:
        """(sequence number, when given up, last error) of a webhook's dead letters."""
        with self._session(False) as db:
            rows = db.execute(f"SELECT seq, at, error FROM webhook_dead WHERE webhook_id = "
                              f"{self.PLACEHOLDER} ORDER BY seq", (hook_id,)).fetchall()
        return [(int(r[0]), float(r[1]), r[2]) for r in rows]

    def redeliver_dead(self, namespace: str, hook_id: str) -> int:
        """Send a webhook's dead letters again: its cursor goes back to before the first of
        them (later events may arrive twice: delivery is at least once)."""
        ph = self.PLACEHOLDER
        with self._session(True) as db:
            first = db.execute(f"SELECT min(seq), count(*) FROM webhook_dead WHERE webhook_id = "
                               f"{ph} AND webhook_id IN (SELECT id FROM webhooks WHERE "
                               f"namespace = {ph})", (hook_id, namespace)).fetchone()
            if not first or first[0] is None:
                return 0
            db.execute(f"UPDATE webhooks SET cursor = {ph}, attempts = 0, next_at = 0 "
                       f"WHERE id = {ph} AND cursor >= {ph}",
                       (int(first[0]) - 1, hook_id, int(first[0]) - 1))
            db.execute(f"DELETE FROM webhook_dead WHERE webhook_id = {ph}", (hook_id,))
            return int(first[1])


def _hook(r: Sequence[Any]) -> Webhook:
    return Webhook(id=r[0], namespace=r[1], url=r[2], secret=r[3],
                   types=tuple(json.loads(r[4] or "[]")), created_at=float(r[5]),
                   cursor=int(r[6]), attempts=int(r[7]), next_at=float(r[8]),
                   last_error=r[9], delivered=int(r[10]), dead=int(r[11]))
