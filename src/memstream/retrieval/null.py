"""What unrelated text looks like in one namespace: the null against which relevance and the
likeness of two records are measured (see ``relevance`` and ``Null``)."""

from __future__ import annotations

import itertools
import time
import weakref
from dataclasses import dataclass

import numpy as np

from ..filters import Selection
from ..store.protocol import Store

__all__ = ["CONVERSATION", "NULL_SAMPLE", "Null", "null_rows"]

#: the query's null distribution is read from up to this many of the namespace's own records
NULL_SAMPLE = 256
#: a namespace with fewer vectors than this adds the background sentences to its own
NULL_OWN_MIN = 32
#: with at least this many vectors of its own, a namespace's pairs alone set how alike two of
#: its records are by chance
PAIRS_OWN_MIN = 8
#: a large namespace's sample is kept this long (seconds) before it is drawn again
NULL_TTL = 60.0
#: a stream whose consecutive records are this much more alike than any two (``Null``) is a
#: conversation
CONVERSATION = 0.5
_nulls: weakref.WeakKeyDictionary[Store, dict[tuple[str, str | None], Null]] = \
    weakref.WeakKeyDictionary()


@dataclass(frozen=True, slots=True)
class Null:
    """What unrelated text looks like in one namespace: the rows of a sample of its own records
    (with the background sentences while it holds few), and the mean and standard deviation of
    the cosines between two different rows. ``coherence``: how far, in those standard
    deviations, consecutive records of the stream are more alike than any two; a
    conversation's turns follow one another on a subject (LoCoMo's conversations 0.6-1.1), a
    store of separate notes does not (the everyday suite's stores 0.1-0.4)."""

    rows: np.ndarray
    pair_mean: float
    pair_std: float
    size: int
    until: float
    coherence: float = 0.0

    @property
    def conversation(self) -> bool:
        """Whether the stream reads as a conversation (``CONVERSATION``): then a record's
        neighbours tell about it, and context smoothing and the learned stage apply."""
        return self.coherence >= CONVERSATION


def null_rows(store: Store, sel: Selection, background: np.ndarray | None) -> Null | None:
    """The namespace's null (see ``Null``): relevance is measured against the namespace's own
    records, so that a store in another language or domain stands on the same scale as any
    other. A namespace of at most ``NULL_SAMPLE`` records is read whole (again when it grows);
    a larger one is sampled evenly along its stream, again after ``NULL_TTL`` seconds."""
    dim = background.shape[1] if background is not None else None
    whole = Selection(sel.namespace, space=sel.space)
    size = store.count(whole, limit=NULL_SAMPLE)
    seen = _nulls.setdefault(store, {})
    key = (sel.namespace, sel.space)
    cached = seen.get(key)
    if cached is not None and (cached.size == size if size <= NULL_SAMPLE
                               else cached.size > NULL_SAMPLE
                               and cached.until > time.monotonic()):
        return cached
    if size <= NULL_SAMPLE:
        runs = [store.select_ids(whole)]
    else:
        total, parts = store.count(whole), 8
        runs = [store.select_ids(whole, limit=NULL_SAMPLE // parts, offset=n * total // parts)
                for n in range(parts)]
    found = store.embeddings(sel.namespace, [i for run in runs for i in run])
    own = [[found[i] for i in run if i in found and (dim is None or found[i].shape[0] == dim)]
           for run in runs]
    vecs = [e for run in own for e in run]
    mine = len(vecs)
    if mine < NULL_OWN_MIN and background is not None:
        vecs += list(background)
    if len(vecs) < 2:
        return None
    rows = np.vstack(vecs).astype(np.float32)
    # two records are compared with the namespace's own pairs where it has a few (the
    # background's sentences, in English and on every subject, would make any two notes of
    # one store in another language look alike)
    paired = rows[:mine] if mine >= PAIRS_OWN_MIN else rows
    pairs = paired @ paired.T
    off = pairs[~np.eye(len(paired), dtype=bool)]
    mean, std = float(off.mean()), max(float(off.std()), 1e-3)
    nextdoor = [float(a @ b) for run in own for a, b in itertools.pairwise(run)]
    coherence = (float(np.mean(nextdoor)) - mean) / std if len(nextdoor) >= NULL_OWN_MIN \
        else 0.0
    null = Null(rows, mean, std, size, time.monotonic() + NULL_TTL, coherence)
    seen[key] = null
    return null
