"""Export and import of whole records as JSON Lines: one ``Record.to_dict()`` per line, its
times in ISO 8601 UTC to the microsecond (import reads them, or seconds since the epoch, back to
the same microsecond).

Every field round-trips: id, scope, kind, text, payload, step, importance, the three timestamps,
access count, provenance, validity and metadata; embeddings too with ``with_embeddings``. An
import is one transaction: bad lines abort it, each named with all its problems, and nothing
is stored.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from .._types import Record
from ..core import validate as v
from ..core.clock import iso_times, to_timestamp
from ..core.ids import _ALPHABET, new_id
from ..errors import Conflict, InvalidInput
from .building import build_record
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
                vectors = mem.store.indexes.embeddings(ns, [r.id for r in batch])
                for rec in batch:
                    rec.embedding = vectors.get(rec.id)
            yield from batch
            offset += len(batch)


def export_jsonl(mem: Memory, fp: IO[str], *, namespace: str | None = None,
                 with_embeddings: bool = False, progress: ProgressFn | None = None) -> int:
    """Write records as JSON Lines; returns how many. ``progress("export", done, total)``
    is called every ``_BATCH`` records (see memstream.engine.progress)."""
    total = None
    if progress is not None:
        spaces = [namespace] if namespace is not None else mem.namespaces()
        total = sum(mem.count(namespace=ns, include_invalid=True) for ns in spaces)
    n = 0
    for rec in iter_export(mem, namespace=namespace, with_embeddings=with_embeddings):
        fp.write(json.dumps(iso_times(rec.to_dict(with_embedding=with_embeddings)),
                            ensure_ascii=False))
        fp.write("\n")
        n += 1
        if progress is not None and n % _BATCH == 0:
            progress("export", n, total)
    if progress is not None:
        progress("export", n, total)
    return n


_ID = re.compile(r"^[0-9A-Za-z_\-]{1,64}\Z")
_OURS = re.compile(r"^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}\Z")
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,), "namespace": (str,), "text": (str,), "kind": (str,),
    "access_count": (int,), "importance": (int, float), "created_at": (int, float, str),
    "last_accessed_at": (int, float, str), "updated_at": (int, float, str),
    "invalidated_at": (int, float, str), "superseded_by": (str,), "provenance": (list,),
    "embedding": (list,),
}
#: what a line of a user's own file may hold besides its text (a line without an ``id``)
_NEW_FIELDS = ("namespace", "user_id", "agent_id", "run_id", "kind", "data", "metadata", "step",
               "importance", "provenance", "created_at", "at", "timestamp")
_TEXTS = ("text", "content")


class _Problems:
    """Every problem of one line, gathered so that the error names them all at once."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def check(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InvalidInput as exc:
            self.found.append(str(exc))
        except (TypeError, ValueError, OverflowError) as exc:
            self.found.append(str(exc)[:200])
        return None

    def add(self, problem: str) -> None:
        self.found.append(problem)

    def raise_any(self) -> None:
        if self.found:
            raise InvalidInput("; ".join(self.found))


def _check(raw: dict[str, Any], mem: Memory) -> Record:
    """A record from one exported line, every field checked as ``add`` checks its arguments."""
    bad = _Problems()
    for name, types in _FIELD_TYPES.items():
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            bad.add(f"{name} must be of type {types[0].__name__}, not {type(value).__name__}")
    for name in ("namespace", "text"):
        if raw.get(name) is None:
            bad.add(f"{name} is missing")
    bad.raise_any()
    rec = Record.from_dict(raw)
    if not _ID.match(rec.id):
        bad.add(f"id {rec.id[:80]!r} is not a record id (1-64 letters, digits, _ or -)")
    bad.check(v.namespace, rec.namespace)
    bad.check(v.text, rec.text, max_bytes=mem.config.max_text_bytes, field="text")
    bad.check(v.kind, rec.kind)
    limit = mem.config.max_text_bytes
    rec.data = bad.check(v.json_object, rec.data, "data", max_bytes=limit)
    rec.metadata = bad.check(v.json_object, rec.metadata, "metadata", max_bytes=limit) or {}
    for name in ("user_id", "agent_id", "run_id", "superseded_by"):
        bad.check(v.scope_id, getattr(rec, name), name)
    rec.step = bad.check(v.step, rec.step)
    if rec.importance is None:
        bad.add("importance is missing")
    else:
        bad.check(v.importance, rec.importance)
    for name in ("created_at", "last_accessed_at", "updated_at", "invalidated_at"):
        value = getattr(rec, name)
        if name == "last_accessed_at" and not value:
            value = rec.created_at
        when = None if value is None else bad.check(_time, value, name)
        setattr(rec, name, when)
    if not 0 <= rec.access_count < 2**63:
        bad.add(f"access_count must be a whole number >= 0, got {rec.access_count}")
    rec.provenance = bad.check(v.ids, rec.provenance) or ()
    if rec.embedding is not None:
        dim = mem.embedder.dim if mem.embedder else None
        if dim is not None and rec.embedding.shape[0] != dim:
            rec.embedding = None  # another model's vector: embed again
        else:
            rec.embedding = bad.check(v.vector, rec.embedding, dim)
    bad.raise_any()
    return rec


def _time(value: Any, name: str) -> float:
    try:
        return to_timestamp(value)
    except InvalidInput as exc:
        raise InvalidInput(f"{name}: {exc}") from exc


def _new(raw: dict[str, Any], mem: Memory, namespace: str | None) -> Record:
    """A new record from a line of a user's own file: a text and any of ``add``'s fields; the
    id is made, the time is the line's own (ISO 8601 or epoch seconds) or now, and a missing
    importance is rated as ``add`` rates it."""
    bad = _Problems()
    texts = [name for name in _TEXTS if name in raw]
    if not texts:
        bad.add("text is missing (a line needs a \"text\", or an \"id\" when it is a record "
                "exported by memstream)")
    elif len(texts) > 1:
        bad.add("give the text once, as \"text\" or \"content\", not both")
    unknown = sorted(set(raw) - set(_TEXTS) - set(_NEW_FIELDS))
    if unknown:
        bad.add(f"unknown field(s) {unknown}: a line holds a text and any of "
                f"{sorted(_NEW_FIELDS)}")
    times = [name for name in ("created_at", "at", "timestamp") if raw.get(name) is not None]
    if len(times) > 1:
        bad.add(f"give the time once, not as {' and '.join(times)}")
    at = bad.check(_time, raw[times[0]], times[0]) if times else None
    kind = raw.get("kind") or "observation"
    args: dict[str, Any] = {"namespace": raw.get("namespace") or namespace, "kind": kind}
    for name in ("user_id", "agent_id", "run_id", "data", "metadata", "step", "importance",
                 "provenance"):
        args[name] = raw.get(name)
    if args["namespace"] is not None:
        bad.check(v.namespace, args["namespace"])
    for name in ("user_id", "agent_id", "run_id"):
        bad.check(v.scope_id, args[name], name)
    bad.check(v.kind, kind)
    limit = mem.config.max_text_bytes
    for name in ("data", "metadata"):
        bad.check(v.json_object, args[name], name, max_bytes=limit)
    bad.check(v.step, args["step"])
    bad.check(v.importance, args["importance"])
    if args["provenance"] is not None:
        bad.check(v.ids, args["provenance"])
    if texts:
        bad.check(v.text, raw[texts[0]], max_bytes=limit, field=texts[0])
    bad.raise_any()
    return build_record(mem, raw[texts[0]], at=at, embedding=None, **args)


#: an import names the problems of at most this many lines, then counts the rest
MAX_BAD_LINES = 20
#: and at most this many problems of one line
MAX_LINE_PROBLEMS = 10


def parse_lines(lines: Iterable[str], mem: Memory, *, progress: ProgressFn | None = None,
                total: int | None = None, namespace: str | None = None,
                rate: list[str] | None = None) -> list[Record]:
    """Records from the lines of a JSON Lines file, each checked; ``progress("read", lines,
    total)``. A file with bad lines raises one ``InvalidInput`` that names every problem of
    every bad line (up to ``MAX_BAD_LINES`` lines of ``MAX_LINE_PROBLEMS`` problems, then a
    count of the rest): one pass tells the user all there is to fix.

    A line with an ``id`` is a record exported by memstream and comes back as it was. Any other
    line is a new record: a ``text`` (or ``content``) and any of ``add``'s fields, in
    ``namespace`` (the memory's default) unless the line names its own; the ids of new records
    that name no importance go to ``rate`` (an LLM rates them, as for ``add``)."""
    records = []
    bad: list[str] = []
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
                raise InvalidInput(f"a line must be a JSON object, not {_json_kind(raw)}")
            if "id" in raw:
                records.append(_check(raw, mem))
            else:
                records.append(_new(raw, mem, namespace))
                if raw.get("importance") is None and rate is not None:
                    rate.append(records[-1].id)
        except json.JSONDecodeError as exc:
            bad.append(f"line {lineno}: {_not_json(line, exc)}")
        except InvalidInput as exc:
            bad.append(f"line {lineno}: {_capped(str(exc))}")
        except (TypeError, ValueError, RecursionError) as exc:
            bad.append(f"line {lineno}: not a record ({str(exc)[:200]})")
    if progress is not None:
        progress("read", lineno, total)
    if bad:
        raise InvalidInput(_bad_lines(bad))
    return records


def _json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "true or false", type(None): "null"}.get(
        type(value), "a number")


def _not_json(line: str, exc: json.JSONDecodeError) -> str:
    """A JSON error in the user's terms: the column of the line, and what was expected."""
    what = exc.msg[:1].lower() + exc.msg[1:]
    if exc.pos >= len(line.rstrip("\r\n")):
        return f"not valid JSON: the line ends before its object is complete ({what})"
    return f"not valid JSON at column {exc.pos + 1} ({what})"


def _capped(problems: str) -> str:
    found = problems.split("; ")
    if len(found) <= MAX_LINE_PROBLEMS:
        return problems
    return "; ".join(found[:MAX_LINE_PROBLEMS]) + \
        f"; and {len(found) - MAX_LINE_PROBLEMS} more problems"


def _bad_lines(bad: list[str]) -> str:
    if len(bad) == 1:
        return bad[0]
    shown = bad[:MAX_BAD_LINES]
    rest = f"\n... and {len(bad) - len(shown)} more bad lines" if len(bad) > len(shown) else ""
    return (f"{len(bad)} lines are not records; nothing was imported. Fix them and import "
            "again:\n" + "\n".join(shown) + rest)


def import_jsonl(mem: Memory, fp: Iterable[str], *, on_conflict: str = "error",
                 records: list[Record] | None = None, rate: Sequence[str] = (),
                 progress: ProgressFn | None = None) -> int:
    """Read records written by ``export_jsonl``, or a user's own lines (see ``parse_lines``);
    returns how many were stored.

    ``on_conflict``: "error" (an id that exists in the record's namespace aborts the import) or
    "skip" (keep the stored one). A record whose id is taken in another namespace is stored
    under a new id, as if that id were free: an import never tells whether a record exists
    elsewhere (a server shared by tenants goes further: ``own_ids``). ``records``: lines
    already read with ``parse_lines``. ``progress`` hears of
    the lines read and of the records stored (``memstream.engine.progress``; the vectors are made
    afterwards in the background: ``wait_embedded``).
    """
    if on_conflict not in ("error", "skip"):
        raise InvalidInput("on_conflict must be 'error' or 'skip'")
    if records is None:
        new: list[str] = []
        records = parse_lines(fp, mem, progress=progress, rate=new)
        rate = new
    by_ns: dict[str, set[str]] = {}
    for rec in records:
        by_ns.setdefault(rec.namespace, set()).add(rec.id)
    existing = {(ns, r.id) for ns, ids in by_ns.items()
                for r in mem.store.records.get(ns, list(ids))}
    if existing and on_conflict == "error":
        some = sorted(i for _, i in existing)[:3]
        raise Conflict(f"{len(existing)} record id(s) already exist (e.g. {some}); import with "
                       "on_conflict='skip' (--skip-existing) to keep the stored ones")
    fresh = [r for r in records if (r.namespace, r.id) not in existing]
    elsewhere = mem.store.records.taken([r.id for r in fresh])
    if elsewhere:
        _renumber(fresh, elsewhere)
    mem.write_records(fresh, event="import", rate=rate)
    if progress is not None:
        progress("store", len(fresh), len(fresh))
    return len(fresh)


def own_ids(mem: Memory, records: list[Record], made: set[str]) -> dict[str, str]:
    """Give each record read from a file (not those in ``made``, whose ids were made here) whose
    id its namespace does not hold an id of that namespace's own (``namespace_id``), references
    between them following; returns {id in the file: id now}. A server shared by tenants
    imports this way: whether an id exists in another namespace then changes nothing a tenant
    can see, a namespace's own export imported again meets its own ids (a conflict, or skipped),
    and the same foreign file imported again meets the same derived ids."""
    by_ns: dict[str, set[str]] = {}
    for rec in records:
        if rec.id not in made:
            by_ns.setdefault(rec.namespace, set()).add(rec.id)
    held = {(ns, r.id) for ns, ids in by_ns.items() for r in mem.store.records.get(ns, sorted(ids))}
    new = {r.id: namespace_id(r.namespace, r.id) for r in records
           if r.id not in made and (r.namespace, r.id) not in held}
    _rename(records, new)
    return new


def namespace_id(namespace: str, record_id: str) -> str:
    """A record id of the namespace's own for an id read from a file: the same time prefix
    (where the id is a memstream id) and 80 bits of a hash of the namespace and the id."""
    digest = int.from_bytes(hashlib.sha256(f"{namespace}\0{record_id}".encode()).digest()[:10],
                            "big")
    head = record_id[:10].upper() if _OURS.match(record_id) else "0" * 10
    tail = "".join(_ALPHABET[(digest >> (5 * i)) & 31] for i in reversed(range(16)))
    return head + tail


def _renumber(records: list[Record], taken: set[str]) -> None:
    """New ids for the records whose ids are taken, and references to them updated."""
    _rename(records, {r.id: new_id(r.created_at) for r in records if r.id in taken})


def _rename(records: list[Record], new: dict[str, str]) -> None:
    for rec in records:
        rec.id = new.get(rec.id, rec.id)
        rec.provenance = tuple(new.get(i, i) for i in rec.provenance)
        if rec.superseded_by is not None:
            rec.superseded_by = new.get(rec.superseded_by, rec.superseded_by)
