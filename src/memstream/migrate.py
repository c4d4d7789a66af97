"""Copy a whole memory from one store to another (SQLite -> PostgreSQL and back), then verify.

Everything is copied as it is: records with their embeddings (and the model that made them),
validity, provenance and access counts; the full history, deleted records' included; API keys;
saved settings. The target must hold no records. Records go over in id order, in batches, each
batch one transaction; the history follows, then keys and settings. Verification compares,
per namespace, the record, valid and embedded counts, the history length, the keys, and a
sample of records field by field.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import Conflict
from .progress import ProgressFn
from .store import Store, keys_of

BATCH = 1000
SAMPLE = 200


@dataclass
class MigrationReport:
    namespaces: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)
    history: tuple[int, int] = (0, 0)
    keys: tuple[int, int] = (0, 0)
    sampled: int = 0
    sample_mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        counts = [pair for ns in self.namespaces.values() for pair in ns.values()]
        return (all(a == b for a, b in [*counts, self.history, self.keys])
                and not self.sample_mismatches)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "namespaces": self.namespaces, "history": self.history,
                "keys": self.keys, "sampled": self.sampled,
                "sample_mismatches": self.sample_mismatches}


def _history_length(store: Store) -> int:
    n, after = 0, 0
    while page := store.history_page(after, 10_000):
        n += len(page)
        after = page[-1][0]
    return n


def copy_store(source: Store, target: Store, *, batch: int = BATCH,
               progress: ProgressFn | None = None) -> None:
    """Copy everything from ``source`` into the empty ``target``. ``progress(stage, done,
    total)`` (see memstream.progress) hears of the records and history entries copied."""
    if target.namespaces():
        raise Conflict(f"the target store {target.url.split('@')[-1]} already holds records "
                       f"(namespaces {', '.join(target.namespaces()[:5])}); migrate into an "
                       "empty store")
    tick = progress or (lambda stage, done, total: None)
    records = sum(source.stats(ns).records for ns in source.namespaces()) if progress else None
    done = 0
    for ns in source.namespaces():
        after: str | None = None
        while page := source.records_page(ns, after, batch):
            by_model: dict[str | None, list[Any]] = {}
            for rec, model in page:
                by_model.setdefault(model, []).append(rec)
            for model, recs in by_model.items():
                target.insert(recs, model=model, history=False)
            after = page[-1][0].id
            done += len(page)
            tick("records", done, records)
    position, copied = 0, 0
    while entries := source.history_page(position, batch * 5):
        target.put_history([e for _, e in entries])
        position = entries[-1][0]
        copied += len(entries)
        tick("history", copied, None)
    for key in keys_of(source).list_keys():
        keys_of(target).put_key(key)
    for name, value in source.meta_items().items():
        target.set_meta(name, value)


def verify(source: Store, target: Store, *, sample: int = SAMPLE, seed: int = 0
           ) -> MigrationReport:
    """Compare counts, and ``sample`` random records per namespace, between the two stores."""
    report = MigrationReport()
    rng = random.Random(seed)
    for ns in sorted(set(source.namespaces()) | set(target.namespaces())):
        a, b = source.stats(ns), target.stats(ns)
        report.namespaces[ns] = {"records": (a.records, b.records), "valid": (a.valid, b.valid),
                                 "embedded": (a.with_embedding, b.with_embedding)}
        ids: list[str] = []
        after: str | None = None
        while page := source.records_page(ns, after, 10_000):
            ids.extend(r.id for r, _ in page)
            after = page[-1][0].id
        for rid in rng.sample(ids, min(len(ids), sample)):
            report.sampled += 1
            xs, ys = source.get(ns, [rid]), target.get(ns, [rid])
            if not xs or not ys or xs[0].to_dict() != ys[0].to_dict():
                report.sample_mismatches.append(f"{ns}/{rid}: fields differ")
                continue
            ex, ey = source.embeddings(ns, [rid]).get(rid), target.embeddings(ns, [rid]).get(rid)
            if (ex is None) != (ey is None) or (ex is not None and ey is not None
                                               and not np.allclose(ex, ey, atol=1e-6)):
                report.sample_mismatches.append(f"{ns}/{rid}: embedding differs")
    report.history = (_history_length(source), _history_length(target))
    report.keys = (len(keys_of(source).list_keys()), len(keys_of(target).list_keys()))
    return report


def render(report: MigrationReport) -> str:
    lines = [f"{'namespace':<24} {'records':>17} {'valid':>17} {'embedded':>17}"]
    for ns, counts in report.namespaces.items():
        cells = [f"{a:>8,}/{b:<8,}" for a, b in counts.values()]
        lines.append(f"{ns:<24} " + " ".join(f"{c:>17}" for c in cells))
    lines.append(f"history entries: {report.history[0]:,} / {report.history[1]:,}; "
                 f"API keys: {report.keys[0]} / {report.keys[1]} (source / target)")
    lines.append(f"records compared field by field: {report.sampled:,}, "
                 f"mismatches: {len(report.sample_mismatches)}")
    lines += [f"  {m}" for m in report.sample_mismatches[:10]]
    lines.append("verified: the copy matches" if report.ok else "VERIFICATION FAILED")
    return "\n".join(lines)
