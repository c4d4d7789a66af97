"""Export and import of whole records as JSON Lines: one ``Record.to_dict()`` per line.

Every field round-trips: id, scope, kind, text, payload, step, importance, the three timestamps,
access count, provenance, validity and metadata; embeddings too with ``with_embeddings``. An
import is one transaction: a bad line aborts it with its line number and nothing is stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import IO, Any

from . import _validate as v
from ._ids import new_id
from ._types import Record
from .clock import to_timestamp
from .errors import Conflict, InvalidInput
from .memory import Memory
from .progress import ProgressFn

__all__ = ["export_jsonl", "import_jsonl", "iter_export"]

_BATCH = 1000


def iter_export(mem: Memory, *, namespace: str | None = None,
                with_embeddings: bool = False) -> Iterator[Record]:
    """Every record (valid or not) of one namespace, or of all when ``namespace`` is None."""
    spaces = [namespace] if namespace is not None else mem.namespaces()
    for ns in spaces:
        offset = 0
        while True:
            batch = mem.get_all(namespace=ns, include_invalid=True, limit=_BATCH, offset=offset)
            if not batch:
                break
            if with_embeddings:
                vectors = mem.store.embeddings(ns, [r.id for r in batch])
                for rec in batch:
                    rec.embedding = vectors.get(rec.id)
            yield from batch
            offset += len(batch)


def export_jsonl(mem: Memory, fp: IO[str], *, namespace: str | None = None,
                 with_embeddings: bool = False, progress: ProgressFn | None = None) -> int:
    """Write records as JSON Lines; returns how many. ``progress("export", done, total)``
    is called every ``_BATCH`` records (see memstream.progress)."""
    total = None
    if progress is not None:
        spaces = [namespace] if namespace is not None else mem.namespaces()
        total = sum(mem.count(namespace=ns, include_invalid=True) for ns in spaces)
    n = 0
    for rec in iter_export(mem, namespace=namespace, with_embeddings=with_embeddings):
        fp.write(json.dumps(rec.to_dict(with_embedding=with_embeddings), ensure_ascii=False))
        fp.write("\n")
        n += 1
        if progress is not None and n % _BATCH == 0:
            progress("export", n, total)
    if progress is not None:
        progress("export", n, total)
    return n


_ID = re.compile(r"^[0-9A-Za-z_\-]{1,64}$")
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,), "namespace": (str,), "text": (str,), "kind": (str,),
    "access_count": (int,), "importance": (int, float), "created_at": (int, float, str),
    "last_accessed_at": (int, float, str), "updated_at": (int, float, str),
    "invalidated_at": (int, float, str), "superseded_by": (str,), "provenance": (list,),
    "embedding": (list,),
}


def _check(raw: dict[str, Any], mem: Memory) -> Record:
    """A record from one exported line, every field checked as ``add`` checks its arguments."""
    for name, types in _FIELD_TYPES.items():
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise InvalidInput(f"{name} must be of type {types[0].__name__}, not "
                               f"{type(value).__name__}")
    for name in ("id", "namespace", "text"):
        if raw.get(name) is None:
            raise InvalidInput(f"{name} is missing")
    rec = Record.from_dict(raw)
    if not _ID.match(rec.id):
        raise InvalidInput(f"id {rec.id[:80]!r} is not a record id (1-64 letters, digits, _ "
                           "or -)")
    v.namespace(rec.namespace)
    v.text(rec.text, max_bytes=mem.config.max_text_bytes, field="text")
    v.kind(rec.kind)
    limit = mem.config.max_text_bytes
    rec.data = v.json_object(rec.data, "data", max_bytes=limit)
    rec.metadata = v.json_object(rec.metadata, "metadata", max_bytes=limit) or {}
    for name in ("user_id", "agent_id", "run_id", "superseded_by"):
        v.scope_id(getattr(rec, name), name)
    rec.step = v.step(rec.step)
    if v.importance(rec.importance) is None:
        raise InvalidInput("importance is missing")
    rec.created_at = to_timestamp(rec.created_at)
    rec.last_accessed_at = to_timestamp(rec.last_accessed_at or rec.created_at)
    for name in ("updated_at", "invalidated_at"):
        value = getattr(rec, name)
        setattr(rec, name, None if value is None else to_timestamp(value))
    if not 0 <= rec.access_count < 2**63:
        raise InvalidInput(f"access_count must be a whole number >= 0, got {rec.access_count}")
    rec.provenance = v.ids(rec.provenance)
    if rec.embedding is not None:
        dim = mem.embedder.dim if mem.embedder else None
        if dim is not None and rec.embedding.shape[0] != dim:
            rec.embedding = None  # another model's vector: embed again
        else:
            rec.embedding = v.vector(rec.embedding, dim)
    return rec


def parse_lines(lines: Iterable[str], mem: Memory, *, progress: ProgressFn | None = None,
                total: int | None = None) -> list[Record]:
    """Records from exported lines, each checked; ``progress("read", lines, total)``."""
    records = []
    every = max(100, (total or 0) // 200)
    lineno = 0
    for lineno, line in enumerate(lines, start=1):
        if progress is not None and lineno % every == 0:
            progress("read", lineno, total)
        if not line.strip():
            continue
        try:
            raw: Any = json.loads(line)
            if not isinstance(raw, dict):
                raise InvalidInput("a line must be a JSON object")
            records.append(_check(raw, mem))
        except (json.JSONDecodeError, TypeError, ValueError, RecursionError) as exc:
            if isinstance(exc, InvalidInput):
                raise InvalidInput(f"line {lineno}: {exc}") from exc
            raise InvalidInput(f"line {lineno}: not a record ({str(exc)[:200]})") from exc
    if progress is not None:
        progress("read", lineno, total)
    return records


def import_jsonl(mem: Memory, fp: Iterable[str], *, on_conflict: str = "error",
                 records: list[Record] | None = None,
                 progress: ProgressFn | None = None) -> int:
    """Read records written by ``export_jsonl``; returns how many were stored.

    ``on_conflict``: "error" (an id that exists in the record's namespace aborts the import) or
    "skip" (keep the stored one). A record whose id is taken in another namespace is stored
    under a new id, as if that id were free: an import never tells whether a record exists
    elsewhere. ``records``: lines already read with ``parse_lines``. ``progress`` hears of
    the lines read and of the records stored (``memstream.progress``; the vectors are made
    afterwards in the background: ``wait_embedded``).
    """
    if on_conflict not in ("error", "skip"):
        raise InvalidInput("on_conflict must be 'error' or 'skip'")
    if records is None:
        records = parse_lines(fp, mem, progress=progress)
    by_ns: dict[str, set[str]] = {}
    for rec in records:
        by_ns.setdefault(rec.namespace, set()).add(rec.id)
    existing = {(ns, r.id) for ns, ids in by_ns.items() for r in mem.store.get(ns, list(ids))}
    if existing and on_conflict == "error":
        some = sorted(i for _, i in existing)[:3]
        raise Conflict(f"{len(existing)} record id(s) already exist (e.g. {some}); import with "
                       "on_conflict='skip' (--skip-existing) to keep the stored ones")
    fresh = [r for r in records if (r.namespace, r.id) not in existing]
    elsewhere = mem.store.taken([r.id for r in fresh])
    if elsewhere:
        _renumber(fresh, elsewhere)
    mem._store_records(fresh, event="import")
    if progress is not None:
        progress("store", len(fresh), len(fresh))
    return len(fresh)


def _renumber(records: list[Record], taken: set[str]) -> None:
    """New ids for the records whose ids are taken, and references to them updated."""
    new = {r.id: new_id(r.created_at) for r in records if r.id in taken}
    for rec in records:
        rec.id = new.get(rec.id, rec.id)
        rec.provenance = tuple(new.get(i, i) for i in rec.provenance)
        if rec.superseded_by is not None:
            rec.superseded_by = new.get(rec.superseded_by, rec.superseded_by)
