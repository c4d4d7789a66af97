"""Export and import of whole records as JSON Lines: one ``Record.to_dict()`` per line.

Every field round-trips: id, scope, kind, text, payload, step, importance, the three timestamps,
access count, provenance, validity and metadata; embeddings too with ``with_embeddings``. An
import is one transaction: a bad line aborts it with its line number and nothing is stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

from . import _validate as v
from ._types import Record
from .errors import Conflict, InvalidInput
from .memory import Memory

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
                 with_embeddings: bool = False) -> int:
    """Write records as JSON Lines; returns how many."""
    n = 0
    for rec in iter_export(mem, namespace=namespace, with_embeddings=with_embeddings):
        fp.write(json.dumps(rec.to_dict(with_embedding=with_embeddings), ensure_ascii=False))
        fp.write("\n")
        n += 1
    return n


def _check(rec: Record, mem: Memory) -> Record:
    v.namespace(rec.namespace)
    v.text(rec.text, max_bytes=mem.config.max_text_bytes, field="text")
    v.kind(rec.kind)
    v.json_object(rec.data, "data")
    v.json_object(rec.metadata, "metadata")
    if v.importance(rec.importance) is None:
        raise InvalidInput("importance is missing")
    if rec.embedding is not None:
        dim = mem.embedder.dim if mem.embedder else None
        if dim is not None and rec.embedding.shape[0] != dim:
            rec.embedding = None  # another model's vector: embed again
        else:
            rec.embedding = v.vector(rec.embedding, dim)
    return rec


def parse_lines(lines: Iterable[str], mem: Memory) -> list[Record]:
    records = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw: Any = json.loads(line)
            if not isinstance(raw, dict):
                raise InvalidInput("a line must be a JSON object")
            records.append(_check(Record.from_dict(raw), mem))
        except (json.JSONDecodeError, TypeError) as exc:
            raise InvalidInput(f"line {lineno}: not a record ({exc})") from exc
        except InvalidInput as exc:
            raise InvalidInput(f"line {lineno}: {exc}") from exc
    return records


def import_jsonl(mem: Memory, fp: Iterable[str], *, on_conflict: str = "error") -> int:
    """Read records written by ``export_jsonl``; returns how many were stored.

    ``on_conflict``: "error" (an id that exists aborts the import) or "skip" (keep the stored one).
    """
    if on_conflict not in ("error", "skip"):
        raise InvalidInput("on_conflict must be 'error' or 'skip'")
    records = parse_lines(fp, mem)
    by_ns: dict[str, set[str]] = {}
    for rec in records:
        by_ns.setdefault(rec.namespace, set()).add(rec.id)
    existing = {(ns, r.id) for ns, ids in by_ns.items() for r in mem.store.get(ns, list(ids))}
    if existing and on_conflict == "error":
        some = sorted(i for _, i in existing)[:3]
        raise Conflict(f"{len(existing)} record id(s) already exist (e.g. {some}); import with "
                       "on_conflict='skip' (--skip-existing) to keep the stored ones")
    fresh = [r for r in records if (r.namespace, r.id) not in existing]
    mem._store_records(fresh, event="import")
    return len(fresh)
