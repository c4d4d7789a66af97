"""The findings of the worker's comparison (``engine.changes``), kept per namespace: read,
changed in one locked transaction (``_update``: ``KeyValue.update_meta``, so that concurrent
restores and the worker never undo each other), dropped with the records they name
(``forget``), and what a search reads of them (``verdicts``). Beside the store's settings
(``audit:<namespace>``, the tentative ones apart in ``audit-tentative:<namespace>``): record
ids and reasons only, never a text."""

from __future__ import annotations

import dataclasses
import json
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..cognition.changes import Decision

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["VERDICTS_TTL", "Verdicts", "findings", "forget", "update", "verdicts"]


def _key(namespace: str, tentative: bool = False) -> str:
    """Where a namespace's findings are kept: the tentative ones apart, so that a version
    before them (another process of a rolling upgrade) reads the rest as it always did."""
    return f"audit-tentative:{namespace}" if tentative else f"audit:{namespace}"


def findings(mem: Memory, namespace: str) -> dict[str, Decision]:
    """The namespace's findings by record id (a settled one over a tentative one)."""
    out: dict[str, Decision] = {}
    for tentative in (True, False):
        raw = mem.store.kv.get_meta(_key(namespace, tentative))
        if raw:
            out.update((rid, Decision.from_dict(f)) for rid, f in json.loads(raw).items())
    return out


@dataclass(frozen=True, slots=True)
class Verdicts:
    """What a search reads of the findings: ``demoted``, records that rank below real
    memories (junk and duplicates in effect); ``probable``, each record a tentative change
    found a successor for, with that successor's id; ``earlier``, each successor (of a change
    applied or tentative) with the records it replaces; ``successors``, each record a change
    in effect (applied or tentative) found several probable successors for, with each of them
    and its probability (``Decision.others`` beside the tentative ``related``): a read as of
    an earlier time takes the likeliest written by then."""

    demoted: frozenset[str] = frozenset()
    probable: Mapping[str, str] = field(default_factory=dict)
    earlier: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    successors: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)


#: a search reads the findings from here (``verdicts``), for at most this many seconds
#: (another process's worker may have found more meanwhile)
VERDICTS_TTL = 30.0
_verdicts: weakref.WeakKeyDictionary[Any, dict[str, tuple[float, Verdicts]]] = \
    weakref.WeakKeyDictionary()


def update(mem: Memory, namespace: str, mutate: Callable[[dict[str, Decision]], None]
            ) -> None:
    """Change the namespace's findings in place with ``mutate``, read and written back in one
    transaction that locks them (``KeyValue.update_meta``): two restores, or a restore and the
    worker, of one process or of several servers, never undo each other's change."""
    keys = {tentative: _key(namespace, tentative) for tentative in (True, False)}

    def change(stored: dict[str, str | None]) -> dict[str, str]:
        known: dict[str, Decision] = {}
        for tentative in (True, False):  # a settled finding over a tentative one
            if raw := stored[keys[tentative]]:
                known.update((rid, Decision.from_dict(f)) for rid, f in json.loads(raw).items())
        mutate(known)
        out = {}
        for tentative in (True, False):
            part = {rid: f.to_dict() for rid, f in known.items() if f.tentative == tentative}
            if part or not tentative or stored[keys[True]]:  # none: nothing kept
                out[keys[tentative]] = json.dumps(part, sort_keys=True)
        return out

    mem.store.kv.update_meta(list(keys.values()), change)
    _verdicts.get(mem.store, {}).pop(namespace, None)


def _save(mem: Memory, namespace: str, found: dict[str, Decision]) -> None:
    """The namespace's findings, all of them, replaced by ``found``."""
    def replace(known: dict[str, Decision]) -> None:
        known.clear()
        known.update(found)

    update(mem, namespace, replace)


def forget(mem: Memory, namespace: str, ids: Sequence[str]) -> None:
    """Drop the findings about records deleted or erased (and those naming them)."""
    gone = set(ids)
    known = findings(mem, namespace)
    if not any(rid in gone or f.related in gone or any(o[0] in gone for o in f.others)
               for rid, f in known.items()):
        return

    def drop(found: dict[str, Decision]) -> None:
        kept = {rid: dataclasses.replace(f, others=tuple(o for o in f.others
                                                         if o[0] not in gone))
                for rid, f in found.items() if rid not in gone and f.related not in gone}
        found.clear()
        found.update(kept)

    update(mem, namespace, drop)


def verdicts(mem: Memory, namespace: str) -> Verdicts:
    """The namespace's ``Verdicts`` (read again after this process finds more, or
    ``VERDICTS_TTL`` seconds)."""
    seen = _verdicts.setdefault(mem.store, {})
    until, found = seen.get(namespace, (0.0, Verdicts()))
    if until < time.monotonic():
        known = findings(mem, namespace)
        earlier: dict[str, tuple[str, ...]] = {}
        for rid, f in known.items():
            if f.kind == "superseded" and f.related is not None and (f.applied or f.tentative):
                earlier[f.related] = (*earlier.get(f.related, ()), rid)
        found = Verdicts(
            frozenset(rid for rid, f in known.items()
                      if f.applied and f.kind in ("junk", "duplicate")),
            {rid: f.related for rid, f in known.items()
             if f.tentative and f.kind == "superseded" and f.related is not None}, earlier,
            {rid: ((f.related, f.confidence), *f.others) if f.tentative and f.related
             else f.others for rid, f in known.items()
             if f.kind == "superseded" and f.others and (f.applied or f.tentative)})
        seen[namespace] = (time.monotonic() + VERDICTS_TTL, found)
    return found
