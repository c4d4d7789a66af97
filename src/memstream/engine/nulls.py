"""What searches remember of a namespace between them, kept per store: its null
(``retrieval.null.Null``) and whether it is large (``small``).

A namespace of at most ``NULL_SAMPLE`` records is read whole for its null (again when it
grows); a larger one is sampled evenly along its stream, again after ``NULL_TTL`` seconds.
"""

from __future__ import annotations

import dataclasses
import time
import weakref

import numpy as np

from ..filters import Selection
from ..retrieval.null import NULL_SAMPLE, NULL_TTL, Null, is_turn, measure
from .reads import NullReads

__all__ = ["LARGE_STREAM", "null_rows", "small"]

#: the parts a large namespace's sample is drawn from, evenly along its stream
PARTS = 8
_nulls: weakref.WeakKeyDictionary[NullReads, dict[tuple[str, str | None], Null]] = \
    weakref.WeakKeyDictionary()


def null_rows(store: NullReads, sel: Selection, background: np.ndarray | None) -> Null | None:
    """The namespace's null: relevance is measured against the namespace's own records, so that
    a store in another language or domain stands on the same scale as any other."""
    dim = background.shape[1] if background is not None else None
    whole = Selection(sel.namespace, space=sel.space)
    size = store.records.count(whole, limit=NULL_SAMPLE)
    seen = _nulls.setdefault(store, {})
    key = (sel.namespace, sel.space)
    cached = seen.get(key)
    if cached is not None and (cached.size == size if size <= NULL_SAMPLE
                               else cached.size > NULL_SAMPLE
                               and cached.until > time.monotonic()):
        return cached
    if size <= NULL_SAMPLE:
        runs = [store.records.select_ids(whole)]
    else:
        total = store.records.count(whole)
        runs = [store.records.select_ids(whole, limit=NULL_SAMPLE // PARTS,
                                         offset=n * total // PARTS) for n in range(PARTS)]
    ids = [i for run in runs for i in run]
    found = store.indexes.embeddings(sel.namespace, ids)
    own = [[found[i] for i in run if i in found and (dim is None or found[i].shape[0] == dim)]
           for run in runs]
    records = store.records.get(sel.namespace, ids)
    turns = sum(is_turn(r.text, r.kind) for r in records) / len(records) if records else 1.0
    null = measure(own, background, size, time.monotonic() + NULL_TTL, turns)
    if null is not None:
        seen[key] = null
    return null


#: context smoothing applies to selections of at most this many records (retrieval.context)
LARGE_STREAM = 5000
#: a namespace found to hold more than ``LARGE_STREAM`` records is taken to stay that large for
#: this long (seconds) before it is counted again
LARGE_TTL = 30.0
_large: weakref.WeakKeyDictionary[NullReads, dict[str, float]] = weakref.WeakKeyDictionary()


def small(store: NullReads, sel: Selection) -> bool:
    """Whether the search selects at most ``LARGE_STREAM`` records: the namespace is counted
    first (on a covering index; a large one is remembered for ``LARGE_TTL``), the selection
    only when it is narrower."""
    everything = Selection(sel.namespace, include_invalid=True)
    seen = _large.setdefault(store, {})
    if seen.get(sel.namespace, 0.0) < time.monotonic():
        if store.records.count(everything, limit=LARGE_STREAM) <= LARGE_STREAM:
            return True
        seen[sel.namespace] = time.monotonic() + LARGE_TTL
    narrower = dataclasses.replace(sel, include_invalid=True, as_of=None) != everything
    return narrower and store.records.count(sel, limit=LARGE_STREAM) <= LARGE_STREAM
