"""Changes found when memories are written: the worker's comparison of each newly embedded
record with the same owner's older records (``cognition.changes`` decides), the links it
makes, the findings ``audit`` lists, and their undoing (``restore``).

A change links the old record to the new one (``superseded_by`` and ``invalidated_at`` = the
new record's time, through ``Memory.invalidate``: in history and events). A duplicate refreshes
its original (its last access moves to the duplicate's time, as an exact repeat's does); it and
junk are kept and rank below real memories (``search``). Every finding is kept per namespace
(``audit:<namespace>`` beside the store's settings, record ids and reasons only: never a text)
so that ``audit`` can list it and ``restore`` undo it; a restored finding is never applied
again. Streams that read as a conversation (``retrieval.null.Null.conversation``) and long
records are not compared: a later turn on the same subject is not an update.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._types import Finding, HistoryEntry, Record
from ..cognition.changes import (
    APPLY,
    CHATTER,
    NEAREST,
    STATED,
    Decision,
    Item,
    Weights,
    chatter_of,
    decide,
    load_weights,
)
from ..cognition.changes_llm import Case, decide_batch
from ..cognition.identifiers import identifiers
from ..cognition.reader import Reader, load_reader
from ..embed.cache import embed_documents_cached
from ..errors import (
    BackendUnavailable,
    EmbeddingError,
    InvalidInput,
    LLMError,
    MissingDependency,
    NotFound,
)
from ..filters import Selection
from ..retrieval.relevance import BACKGROUND
from ..store.protocol import Patch
from .findings import Verdicts, findings, forget, update, verdicts
from .nulls import null_rows

if TYPE_CHECKING:
    from .memory import Memory

log = logging.getLogger("memstream.changes")

__all__ = ["Verdicts", "audit", "chatter", "compare", "findings", "forget", "invalidate",
           "neighbours", "reading", "reads", "restore", "screen", "settled", "verdicts"]

#: records longer than this (characters) carry their own context and are not compared
LONG_RECORD = 600
#: kinds the engine writes itself, never compared
DERIVED = frozenset({"reflection", "summary", "insight"})
_MUTUAL = 2  # the nearest this many older records are checked for "new is my nearest newer"
#: how many neighbours are read to keep the ``NEAREST`` written earlier (and to find the
#: nearest written later, for each of the first ``_MUTUAL``)
READ = 64


def _item(r: Record) -> Item:
    return Item(r.id, r.text, r.kind, r.created_at)


def _owner(r: Record) -> Selection:
    return Selection(r.namespace, user_id=r.user_id, agent_id=r.agent_id)


def _candidate(old: Record, rec: Record) -> bool:
    """Whether ``old`` may be compared with ``rec``: a memory of the same owner, in the text
    space, not derived, not a step of a simulation."""
    return (old.space == "" and old.kind not in DERIVED and old.step is None
            and _same_owner(old, rec))


#: at most this many older records naming one of a new record's identifiers are compared
#: with it beside its nearest (the latest first)
SAME_THING = 2


def _same_thing(mem: Memory, rec: Record, sel: Selection) -> list[Record]:
    """The owner's valid records written before ``rec`` that name one of its identifiers
    (``cognition.identifiers``): in a log of orders written from one template, likeness
    cannot tell which earlier record is about the same order, the identifier can."""
    named = identifiers(rec.text)
    if not named:
        return []
    terms = sorted({run for key in named for run in re.findall(r"\d{3,}", key)})
    if not terms:
        return []
    hits = mem.store.indexes.keyword_scores(sel, [(t, 1.0) for t in terms], 4 * SAME_THING)
    found = [r for r in mem.store.records.get(rec.namespace, [i for i, _ in hits])
             if r.id != rec.id and r.valid and r.created_at <= rec.created_at
             and _candidate(r, rec) and identifiers(r.text) & named]
    return sorted(found, key=lambda r: (-r.created_at, r.id))[:SAME_THING]


def _same_owner(a: Record, b: Record) -> bool:
    """Whether two records have one owner: the same user and agent, a record without a user
    (or agent) only with another without (a selection without them would read everyone's)."""
    return a.user_id == b.user_id and a.agent_id == b.agent_id


def _comparable(r: Record) -> bool:
    return (r.space == "" and r.step is None and r.kind not in DERIVED
            and len(r.text) <= LONG_RECORD)


def chatter(mem: Memory, vec: np.ndarray) -> float:
    """How near ``vec`` is to chatter rather than to ordinary sentences
    (``cognition.changes.chatter_of``)."""
    return chatter_of(vec, mem.vectors.rows(CHATTER), mem.vectors.rows(STATED + BACKGROUND))


def screen(mem: Memory, records: Sequence[Record]) -> set[str]:
    """With ``Config(junk="refuse")``: the ids of the records to add that the junk model
    refuses (at the ``APPLY["refuse"]`` confidence: a refused record is never stored, so the
    bar is higher than for ranking junk last). The add embeds them first (as
    ``embed_mode="sync"`` does) so that the model reads what it reads in the worker: the
    text, the kind, how near it is to chatter and how alike to what its owner keeps. Each
    refused record is marked ``event="refused"`` and gets a ``refused`` event (its kind, the
    confidence and the signals; never its text); nothing else is written. With "keep" (the
    default), no embedder, or a stream that reads as a conversation: none."""
    todo = [r for r in records if _comparable(r)]
    if mem.config.junk != "refuse" or mem.embedder is None or not todo:
        return set()
    background = mem.vectors.background()
    if missing := [r for r in todo if r.embedding is None]:
        for r, vec in zip(missing, embed_documents_cached(
                mem.store.kv, mem.embedder, [r.text for r in missing]), strict=True):
            r.embedding = vec
    w = load_weights()
    out: set[str] = set()
    for r in todo:
        null = null_rows(mem.store, Selection(r.namespace), background)
        if null is None or null.conversation:
            continue
        _, z, _ = neighbours(mem, r, np.asarray(r.embedding), null.pair_mean, null.pair_std)
        f = decide(_item(r), [], z[:0], [], float(z[0]) if len(z) else -3.0,
                   chatter(mem, np.asarray(r.embedding)), w)
        if not f or f[0].confidence < APPLY["refuse"]:
            continue
        out.add(r.id)
        r.event = "refused"
        mem.store.events.append_events(r.namespace, "refused", [r.id], agent_id=r.agent_id,
                                       data={"kind": r.kind, "reason": f"junk: {f[0].reason}",
                                             "confidence": round(f[0].confidence, 3)})
    return out


#: new records decided in one LLM call at most
LLM_BATCH = 16


def compare(mem: Memory, embedded: Iterable[tuple[str, str]], *,
            background: np.ndarray | None, weights: Weights | None = None) -> list[Decision]:
    """Compare each newly embedded record (namespace, id) with its owner's older records and
    apply what is found; returns the findings applied. With an LLM configured, it decides
    (one call per ``LLM_BATCH`` new records: ``cognition.changes_llm``); where it cannot (not
    reachable, over budget, a wrong answer twice) the offline models do."""
    by_ns: dict[str, list[str]] = defaultdict(list)
    for ns, rid in embedded:
        by_ns[ns].append(rid)
    w = weights or load_weights()
    out: list[Decision] = []
    for ns, ids in by_ns.items():
        null = null_rows(mem.store, Selection(ns), background)
        if null is None or null.conversation:
            continue
        records = sorted((r for r in mem.store.records.get(ns, ids)
                          if r.valid and _comparable(r)),
                         key=lambda r: (r.created_at, r.id))
        known = findings(mem, ns)
        read_first = dict(known)
        vecs = mem.store.indexes.embeddings(ns, [r.id for r in records])
        records = [r for r in records if r.id in vecs and r.id not in known]
        fresh: list[Decision] = []
        beside = False  # a successor kept beside a finding made before
        for start in range(0, len(records), LLM_BATCH if mem.llm is not None else 1):
            chunk = records[start:start + (LLM_BATCH if mem.llm is not None else 1)]
            found = [(r, neighbours(mem, r, vecs[r.id], null.pair_mean, null.pair_std))
                     for r in chunk]
            decided = _ask(mem, found)
            if decided is None:  # offline
                decided = [f for r, (older, z, mutual) in found for f in decide(
                    _item(r), older, z, mutual, float(z[0]) if len(z) else -3.0,
                    chatter(mem, vecs[r.id]), w, _vectors(mem, w, ns, vecs[r.id], older),
                    reading(mem, _item(r), older))]
            at = {r.id: r.created_at for r in chunk}
            for f in decided:
                prior = known.get(f.record)
                if not _replaces(f, prior):
                    if prior is not None and _in_effect_change(f, prior):
                        known[f.record] = _beside(prior, f)  # a less likely successor
                        beside = True
                    continue  # decided before (or restored by the user): kept as is
                if prior is not None and _in_effect_change(f, prior):
                    f = _beside(f, prior)  # the likelier successor, the other kept beside
                if f.tentative:  # orders reads about now; nothing is invalidated
                    known[f.record] = f
                    fresh.append(f)
                    continue
                when = at[f.related if f.kind == "superseded" and f.related else f.record]
                if f.kind == "superseded":
                    old = mem.store.records.get(ns, [f.record])
                    if not old or not old[0].valid:
                        continue
                    mem.invalidate(f.record, superseded_by=f.related, namespace=ns, at=when)
                elif f.kind == "duplicate" and f.related is not None:  # used again: refreshed
                    mem.store.records.touch(ns, [f.related], at=when)
                known[f.record] = f
                fresh.append(f)
        if fresh or beside:
            decided_now = {rid: f for rid, f in known.items() if f != read_first.get(rid)}

            def merge(found: dict[str, Decision], now: dict[str, Decision] = decided_now,
                      first: dict[str, Decision] = read_first) -> None:
                for rid, f in now.items():
                    stored = found.get(rid)
                    if stored is not None and stored != first.get(rid) and not (
                            stored.applied or stored.tentative):
                        continue  # undone by a restore meanwhile: never applied again
                    found[rid] = f

            update(mem, ns, merge)
            out.extend(fresh)
    return out


def reads(mem: Memory, new: Item, older: Sequence[Item]) -> np.ndarray | None:
    """What the reader reads of ``new`` against each of ``older`` (``RELATIONS``
    probabilities, a row each), when it is on (``Config.reader``); None otherwise, or when
    the reader cannot be loaded (logged once: likeness alone decides)."""
    ask = reading(mem, new, older)
    return None if ask is None or not older else ask(list(range(len(older))))


def reading(mem: Memory, new: Item, older: Sequence[Item]
            ) -> Callable[[list[int]], np.ndarray] | None:
    """The reader, for ``decide``: asked about some of ``older`` (their indexes), it reads
    each against ``new``; None when it is off or cannot be loaded."""
    if not mem.config.reader:
        return None
    reader = _reader()
    if reader is None:
        return None
    return lambda idx: reader.read([(older[i].text, new.text) for i in idx])


_reader_failed: list[str] = []


def _reader() -> Reader | None:
    if _reader_failed:
        return None
    try:
        return load_reader()
    except (EmbeddingError, MissingDependency, OSError) as exc:
        _reader_failed.append(str(exc))
        log.warning("the reader could not be loaded (%s); changes are decided by likeness "
                    "alone", exc)
        return None


def _vectors(mem: Memory, w: Weights, ns: str, vec: np.ndarray, older: Sequence[Item]
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """The new record's vector and its older records' rows, for the pair model's directions:
    only with the embedder they were fitted for (another's space has other directions)."""
    if (w.directions is None or mem.embedder is None or not older
            or mem.embedder.name != w.directions.embedder):
        return None
    rows = mem.store.indexes.embeddings(ns, [o.id for o in older])
    if len(rows) != len(older):
        return None
    return np.asarray(vec), np.vstack([rows[o.id] for o in older])


def _in_effect_change(f: Decision, prior: Decision) -> bool:
    """Whether ``f`` and ``prior`` both find a successor for the same record, ``prior`` a
    change in effect (applied or tentative, not undone by the user), each another one."""
    return (f.kind == prior.kind == "superseded"
            and (prior.applied or prior.tentative) and f.related is not None
            and prior.related is not None and f.related != prior.related)


def _beside(kept: Decision, other: Decision) -> Decision:
    """``kept`` with ``other``'s successor (and those it kept) among its ``others``."""
    seen = {kept.related}
    others = []
    for rid, p in (*kept.others, (other.related, other.confidence), *other.others):
        if rid not in seen:
            seen.add(rid)
            others.append((str(rid), p))
    return dataclasses.replace(kept, others=tuple(others))


def _replaces(f: Decision, prior: Decision | None) -> bool:
    """Whether ``f`` is kept: a decision applied at its ``APPLY`` confidence, or a tentative
    change; over a tentative finding about the same record only when applied or more
    confident (a decision made before, or undone by the user, stays)."""
    if not f.tentative and f.confidence < APPLY[f.kind]:
        return False
    return prior is None or (prior.tentative and (not f.tentative
                                                  or f.confidence > prior.confidence))


def _ask(mem: Memory, found: Sequence[tuple[Record, tuple[list[Item], np.ndarray, list[bool]]]]
         ) -> list[Decision] | None:
    """The LLM's decisions about a batch (None: no LLM, or it could not decide)."""
    if mem.llm is None:
        return None
    try:
        return decide_batch(mem.llm, [Case(_item(r), older) for r, (older, _, _) in found])
    except (LLMError, BackendUnavailable) as exc:
        log.warning("the LLM could not decide what %d new memories change (%s); the offline "
                    "models did", len(found), exc)
        return None


def neighbours(mem: Memory, rec: Record, vec: np.ndarray, mean: float, std: float
               ) -> tuple[list[Item], np.ndarray, list[bool]]:
    """The owner's valid records written before ``rec`` most alike to it (at most
    ``NEAREST``), how alike (pair deviations from the namespace's ``mean`` and ``std``), and
    whether ``rec`` is the nearest record written after each of the first ``_MUTUAL`` (up to
    ``rec``'s time), then the latest that name one of its identifiers (``_same_thing``). The
    owner's records are searched without a time bound (a bound makes the index scan every
    record of the time range: 250 ms a record at 100,000); ``READ`` are read and sorted by
    time here."""
    indexes = mem.store.indexes
    sel = _owner(rec)
    found = indexes.vector_search(sel, vec, READ)
    times = {s.id: s.created_at for s in mem.store.records.signals(rec.namespace,
                                                                    [i for i, _ in found])}
    earlier = [(i, c) for i, c in found if i != rec.id and i in times
               and times[i] <= rec.created_at][: 2 * NEAREST + 2]
    olds = {r.id: r for r in mem.store.records.get(rec.namespace, [i for i, _ in earlier])}
    earlier = [(i, c) for i, c in earlier if i in olds and _candidate(olds[i], rec)][:NEAREST]
    same = [r for r in _same_thing(mem, rec, sel) if r.id not in dict(earlier)]
    if same:
        rows = indexes.embeddings(rec.namespace, [r.id for r in same])
        unit = vec / (float(np.linalg.norm(vec)) or 1.0)
        for r in same:
            if r.id in rows:
                olds[r.id] = r
                earlier.append((r.id, float(rows[r.id] @ unit / (
                    float(np.linalg.norm(rows[r.id])) or 1.0))))
    z = np.array([(c - mean) / std for _, c in earlier], dtype=np.float64)
    mutual = []
    old_vecs = indexes.embeddings(rec.namespace, [i for i, _ in earlier[:_MUTUAL]])
    for n, (i, _) in enumerate(earlier):
        if n >= _MUTUAL or i not in old_vecs:
            mutual.append(False)
            continue
        near = indexes.vector_search(sel, old_vecs[i], READ)
        at = {s.id: s.created_at for s in mem.store.records.signals(rec.namespace,
                                                                     [j for j, _ in near])}
        later = [j for j, _ in near if j != i and j in at
                 and olds[i].created_at <= at[j] <= rec.created_at]
        mutual.append(bool(later) and later[0] == rec.id)
    return [_item(olds[i]) for i, _ in earlier], z, mutual


#: how long ``audit`` waits at most for the memories not yet embedded and compared
AUDIT_WAIT = 30.0


def audit(mem: Memory, namespace: str, *, user_id: str | None = None,
          agent_id: str | None = None, kinds: Sequence[str] | None = None,
          limit: int = 100) -> list[Finding]:
    """The namespace's findings (of one owner when named; of the kinds named), with their
    records and related records, most confident first. The namespace's memories not yet
    embedded and compared are waited for first (up to ``AUDIT_WAIT`` seconds, as ``flush``
    waits): an audit answers what is known of what was stored, not what the worker happened
    to have reached."""
    counts = mem.store.stats(namespace)
    if mem.embedder is not None and counts.with_embedding < counts.records:
        try:
            mem.flush(AUDIT_WAIT)
        except BackendUnavailable as exc:  # what is known so far: said in the log
            log.warning("audit answers before every memory was compared: %s", exc)
    found = [f for f in findings(mem, namespace).values() if kinds is None or f.kind in kinds]
    ids = list({i for f in found for i in (f.record, f.related) if i is not None})
    records = {r.id: r for r in mem.store.records.get(namespace, ids)}
    out = []
    for f in sorted(found, key=lambda f: (-f.confidence, f.record)):
        rec = records.get(f.record)
        if rec is None or (user_id is not None and rec.user_id != user_id) or (
                agent_id is not None and rec.agent_id != agent_id):
            continue
        out.append(Finding(f.kind, rec,  # type: ignore[arg-type]
                           records.get(f.related) if f.related else None, f.confidence,
                           f.reason, f.applied, f.tentative))
        if len(out) >= limit:
            break
    return out


def invalidate(mem: Memory, namespace: str, record_id: str, successor: str | None, *,
               at: float) -> Record:
    """``Memory.invalidate``: a successor named must be another record of the namespace
    (checked before anything is written); a tentative change found about the record is then
    settled (``settled``)."""
    if successor is not None:
        if not isinstance(successor, str) or successor == record_id:
            raise InvalidInput("superseded_by must name another memory's id")
        if not mem.store.records.get(namespace, [successor]):
            raise NotFound(f"no record {successor!r} in namespace {namespace!r} to supersede "
                           f"{record_id!r}: add the new version first, then name its id")
        _refuse_cycle(mem, namespace, record_id, successor)
    rec = mem.store.records.update(
        namespace, record_id, Patch(invalidated_at=at, superseded_by=successor), at=at)
    settled(mem, namespace, record_id, successor)
    return rec


def _refuse_cycle(mem: Memory, namespace: str, record_id: str, successor: str) -> None:
    """A successor whose own chain of successors leads back to the record would hide every
    version of the fact (each replaced by another): refused before anything is written."""
    seen, at = {successor}, successor
    for _ in range(1000):
        found = mem.store.records.get(namespace, [at])
        nxt = found[0].superseded_by if found else None
        if nxt is None or nxt in seen:
            return
        if nxt == record_id:
            raise InvalidInput(f"{successor!r} is already replaced, through {nxt!r}, by "
                               f"{record_id!r}: superseding {record_id!r} by it would make a "
                               "cycle that hides every version; restore one of them first")
        seen.add(nxt)
        at = nxt


def settled(mem: Memory, namespace: str, record_id: str, successor: str | None) -> None:
    """A record invalidated by hand: a tentative change found about it is applied when it
    named the same successor, and dropped otherwise (the user decided)."""
    f = findings(mem, namespace).get(record_id)
    if f is None or not f.tentative:
        return

    def settle(found: dict[str, Decision]) -> None:
        now = found.get(record_id)
        if now is None or not now.tentative:
            return
        if successor is not None and now.related == successor:
            found[record_id] = dataclasses.replace(
                now, reason=f"confirmed by hand; {now.reason}", applied=True, tentative=False)
        else:
            del found[record_id]

    update(mem, namespace, settle)


def restore(mem: Memory, namespace: str, record_id: str, *, at: float) -> Record:
    """Undo what was decided about a record: valid again (no successor) when it was
    superseded or invalidated, and no longer ranked as junk or a duplicate. Its finding stays,
    marked not applied, so that it is never applied again."""
    before = mem.store.records.get(namespace, [record_id])
    rec = mem.store.records.update(namespace, record_id, Patch(restore=True), at=at)
    undone: list[Decision] = []

    def undo(found: dict[str, Decision]) -> None:
        f = found.get(record_id)
        if f is not None and (f.applied or f.tentative):
            undone.append(f)
            found[record_id] = dataclasses.replace(f, applied=False, tentative=False,
                                                   others=())

    if record_id in findings(mem, namespace):
        update(mem, namespace, undo)
    for f in undone:
        if f.applied and f.kind in ("junk", "duplicate") and before and before[0].valid:
            # nothing of the record itself changed: its history and the event say what did
            mem.store.transfer.put_history([HistoryEntry(
                record_id, namespace, "restore", at,
                {"finding": f.kind, "related": f.related}, {"finding": None})])
            mem.store.events.append_events(namespace, "restored", [record_id],
                                           agent_id=rec.agent_id, data={"undid": f.kind})
    return rec
