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
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..cognition.kinds import kinds_of
from ..errors import MemstreamError

if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["BATCH", "ROUND", "read_kinds"]

log = logging.getLogger("memstream.entities")

#: names embedded in one call (about 0.13 s with the default model: the longest a closing
#: store waits for the kinds)
BATCH = 16
#: names read in one round of the worker at most; more wait for its next round
ROUND = 512


def read_kinds(mem: Memory, *, stopping: Callable[[], bool] | None = None) -> int:
    """Read the open kinds of confirmed entities, at most ``ROUND`` of them (the rest wait
    for the worker's next round), a batch at a time; ``stopping`` (the worker's) ends the
    round at the next batch, so that closing a store waits for one batch at most. How many
    were set."""
    if mem.embedder is None:
        return 0
    graph = mem.store.graph
    done = read = 0
    while read < ROUND and not (stopping is not None and stopping()):
        todo = graph.unread_kinds(BATCH)
        if not todo:
            return done
        read += len(todo)
        try:
            kinds = kinds_of(mem.embedder, [n for _, n in todo])
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
