"""The kinds the worker reads for names whose words left them open (``cognition.kinds``): after
each round of background work, the confirmed entities of kind "name" or "thing" are read from
the embedder a batch at a time and given the kind their name lies nearest. Without an embedder
they keep the kind their words gave. The entities to read are found on an index that holds only
them, so a store with none left pays one empty index look-up a round.

A round reads at most ``ROUND`` names (about 4 s with the default model), so that ``flush()``
never waits long for a hint: a store with more waiting (one written before kinds were read,
or a large import) reads the rest in the rounds that follow, one each time the worker wakes
(each add, and each time the store is opened)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..cognition.kinds import DESCRIBED, kinds_of
from ..embed.protocol import Embedder
from ..errors import MemstreamError

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["BATCH", "MEMO", "ROUND", "name_vectors", "read_kinds"]

log = logging.getLogger("memstream.entities")

#: names embedded in one call (about 0.13 s with the default model: the longest a closing
#: store waits for the kinds)
BATCH = 16
#: names read in one round of the worker at most; more wait for its next round
ROUND = 512
#: names whose kind this process has read, per embedder (in memory only: a name is never
#: written anywhere but its entity's row, which an erasure deletes)
MEMO = 4096
_memo: OrderedDict[tuple[str, str], str] = OrderedDict()
_lock = threading.Lock()


def name_vectors(embedder: Embedder, names: Sequence[str]) -> np.ndarray:
    """Query vectors of ``names``, as background work where the embedder can (the default
    one: so that a search never waits for them), else in one call, else one by one."""
    for method in ("embed_queries_in_background", "embed_queries"):
        many = getattr(embedder, method, None)
        if many is not None:
            return np.asarray(many(list(names)), dtype=np.float32)
    return np.vstack([np.asarray(embedder.embed_query(n), dtype=np.float32) for n in names])


def _kinds(mem: Memory, embedder: Embedder, names: list[str]) -> list[str]:
    """The kind of each name (a name this process read lately is not embedded again: the same
    firm or app under another owner)."""
    with _lock:
        known = {n: _memo[(embedder.name, n)] for n in names if (embedder.name, n) in _memo}
    todo = list(dict.fromkeys(n for n in names if n not in known))
    if todo:
        described = mem.vectors.rows(DESCRIBED, queries=True)
        assert described is not None  # an embedder is configured
        read = dict(zip(todo, kinds_of(name_vectors(embedder, todo), described), strict=True))
        known.update(read)
        with _lock:
            for n, kind in read.items():
                _memo[(embedder.name, n)] = kind
            while len(_memo) > MEMO:
                _memo.popitem(last=False)
    return [known[n] for n in names]


def read_kinds(mem: Memory, *, stopping: Callable[[], bool] | None = None) -> int:
    """Read the open kinds of confirmed entities, at most ``ROUND`` of them (the rest wait
    for the worker's next round), a batch at a time; ``stopping`` (the worker's) ends the
    round at the next batch, so that closing a store waits for one batch at most. How many
    were set."""
    embedder = mem.embedder
    if embedder is None:
        return 0
    graph = mem.store.graph
    done = read = 0
    while read < ROUND and not (stopping is not None and stopping()):
        todo = graph.unread_kinds(BATCH)
        if not todo:
            return done
        read += len(todo)
        try:
            kinds = _kinds(mem, embedder, [n for _, n in todo])
        except (MemstreamError, OSError, ValueError) as exc:
            # the kinds are a hint: they wait for the next round, and the embeddings, the
            # comparisons and flush() go on (an embedder that is down fails those itself)
            log.warning("reading the kinds of names failed (%s); they stay open until the "
                        "next round", exc)
            return done
        done += graph.set_kinds(list(zip([eid for eid, _ in todo], kinds, strict=True)))
    if read < ROUND:
        return done  # stopped
    log.info("read the kinds of %d names; more are left for the worker's next round", read)
    return done
