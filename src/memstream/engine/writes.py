"""The one write path of a ``Memory`` (``Writes``): a memory, many, or records already built
go through the comparison with what is stored (``changes.screen``), the embedder in sync mode,
one insert, the relations an LLM finds and the worker's queue. ``Memory.add``, ``add_many``,
``update`` and ``write_records`` hand their validated arguments here."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._types import MemoryChange, Record
from ..cognition.extraction import check_messages
from ..core import validate as v
from ..core.clock import TimeLike, to_timestamp
from ..embed.cache import embed_documents_cached
from ..errors import InvalidInput
from ..scope import Scope, split_add
from ..store import Patch
from . import changes
from . import cognitive as cog
from .building import build_record, build_records
from .kinds import read_kinds
from .subscribers import maybe_prune

if TYPE_CHECKING:
    from .memory import Memory
    from .worker import EnrichmentWorker

__all__ = ["Writes"]


class Writes:
    """What a ``Memory`` writes, and the namespaces written since the worker last looked
    (``take_touched``: what reflection and the other after-enrichment steps revisit)."""

    def __init__(self, mem: Memory, worker: Callable[[], EnrichmentWorker | None]) -> None:
        self._mem = mem
        self._worker = worker  # the memory's worker, once it is made (it may call back first)
        self._lock = threading.Lock()
        self._touched: set[str] = set()

    def kick(self) -> None:
        """Wake the worker: there are vectors to make or importances to rate."""
        if (worker := self._worker()) is not None:
            worker.notify()

    def take_touched(self) -> list[str]:
        with self._lock:
            touched, self._touched = sorted(self._touched), set()
        return touched

    def after_enrichment(self, worker: EnrichmentWorker | None) -> None:
        """What the worker runs after its batches: the comparison of the records it embedded
        (``changes.compare``), then reflection and the other steps over the namespaces written
        (``cognitive.after_enrichment``); what fails of those is handed back, done again on
        the worker's retry, never dropped. Then the kinds of names their words left open
        (``kinds.read_kinds``), which wait in the store until they are read."""
        mem = self._mem
        touched = self.take_touched()
        embedded = worker.take_embedded() if worker is not None else []
        try:
            if embedded and mem.config.find_changes:
                changes.compare(mem, embedded, background=mem.vectors.background())
            cog.after_enrichment(mem, touched)
        except Exception:
            with self._lock:
                self._touched.update(touched)
            if worker is not None:
                worker.give_back(embedded)
            raise
        # after the rest is done: the kinds wait in the store, so nothing is handed back
        read_kinds(mem, stopping=worker.stopping if worker is not None else None)

    def refresh(self, duplicates: str | None) -> bool:
        """Whether a repeat refreshes what is stored (``duplicates``, else the config's)."""
        mode = self._mem.config.duplicates if duplicates is None else duplicates
        if mode not in ("refresh", "keep"):
            raise InvalidInput(f"duplicates must be 'refresh' or 'keep', not {mode!r}")
        return mode == "refresh"

    def add(self, text: str | bytes | Sequence[Mapping[str, str]], args: Mapping[str, Any]
            ) -> Record | list[MemoryChange]:
        """``Memory.add`` with its keywords (``scope.AddArgs``)."""
        mem = self._mem
        scope, infer, given = split_add(args)
        duplicates = given.pop("duplicates", None)
        whose = dataclasses.asdict(scope)
        if isinstance(text, list | tuple):
            if infer:
                return cog.infer(mem, text, **whose)
            msgs = check_messages(text)
            return [MemoryChange("noop" if r.event == "refresh" else "add", r)
                    for r in self.many([{"text": m["content"], "kind": "message",
                                         "data": {"role": m["role"]}, **whose} for m in msgs],
                                       Scope(), duplicates)]
        record = build_record(mem, text, **whose, **given)  # type: ignore[arg-type]
        rate = [record.id] if given.get("importance") is None else []
        return self.records([record], rate=rate, refresh=self.refresh(duplicates))[0]

    def many(self, items: Iterable[str | Mapping[str, Any]], scope: Scope,
             duplicates: str | None) -> list[Record]:
        """``Memory.add_many``: every item in one transaction."""
        records, rate = build_records(self._mem, items, dataclasses.asdict(scope))
        return self.records(records, rate=rate, refresh=self.refresh(duplicates))

    def update(self, namespace: str, memory_id: str, fields: Mapping[str, Any],
               at: TimeLike | None) -> Record:
        """``Memory.update``: every field validated first, the old values to history."""
        mem = self._mem
        limit = mem.config.max_text_bytes
        text = fields.get("text")
        provenance = fields.get("provenance")
        patch = Patch(
            text=None if text is None else v.text(text, max_bytes=limit),
            data=v.json_object(fields.get("data"), "data", max_bytes=limit),
            importance=v.importance(fields.get("importance")),
            metadata=v.json_object(fields.get("metadata"), "metadata", max_bytes=limit),
            provenance=None if provenance is None else v.ids(provenance))
        when = mem.clock.now() if at is None else to_timestamp(at)
        record = mem.store.records.update(namespace, memory_id, patch, at=when)
        if text is not None:
            self.kick()
        return record

    def records(self, records: list[Record], *, event: str = "add", rate: Sequence[str] = (),
                refresh: bool = False) -> list[Record]:
        """``Memory.write_records``."""
        mem = self._mem
        refused = changes.screen(mem, records) if event == "add" else set()
        kept = [r for r in records if r.id not in refused]
        sync = mem.config.embed_mode == "sync" and mem.embedder is not None
        if sync and mem.embedder and (todo := [r for r in kept if r.embedding is None]):
            vectors = embed_documents_cached(mem.store.kv, mem.embedder, [r.text for r in todo])
            for rec, vec in zip(todo, vectors, strict=True):
                rec.embedding = vec
        model = mem.embedder.name if mem.embedder is not None else "caller"
        to_rate = set(rate) if mem.llm is not None else set()
        found = mem.store.records.insert(kept, event=event, model=model, rate=to_rate,
                                         refresh=refresh) if kept else {}
        new = [r for r in kept if r.id not in found]
        if mem.config.relations and event == "add":  # one LLM call for the batch
            cog.relate(mem, new)
        with self._lock:
            self._touched.update(r.namespace for r in new)
        if to_rate or any(r.embedding is None for r in kept) or self._worker() is not None:
            self.kick()
        for r in kept:
            r.event = "add"
        maybe_prune(mem)
        return [found.get(r.id, r) for r in records]
