"""Directions of one embedder's vector space that the pair models of ``cognition.changes``
read: how far a new record reads as announcing a change, how far what it says beyond an older
record points where a successor's does, how far it reads like a reminder."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Direction", "Directions", "beyond", "fit_directions", "unit"]


@dataclass(frozen=True, slots=True)
class Direction:
    """A direction of one embedder's vector space and the spread of rows along it: a row's
    reading is its projection, less ``mean``, over ``scale``."""

    vector: np.ndarray
    mean: float
    scale: float

    def read(self, rows: np.ndarray) -> np.ndarray:
        out: np.ndarray = (np.asarray(rows, dtype=np.float64) @ self.vector - self.mean
                           ) / self.scale
        return out

    @classmethod
    def between(cls, rows: np.ndarray, positive: np.ndarray) -> Direction:
        """From the mean of the other ``rows`` to the mean of the ``positive`` ones (no
        parameter to fit: what a ridge fit tends to as its penalty grows), scaled so that the
        rows read with unit spread."""
        rows = np.asarray(rows, dtype=np.float64)
        vec = rows[positive].mean(axis=0) - rows[~positive].mean(axis=0)
        vec /= float(np.linalg.norm(vec)) or 1.0
        along = rows @ vec
        return cls(vec, float(along.mean()), float(along.std()) or 1.0)


@dataclass(frozen=True, slots=True)
class Directions:
    """The directions the pair models read, for the vectors of ``embedder`` only
    (``Embedder.name``). The change model's (``DIRECTION_FEATURES``): ``announces`` (records
    that replaced an older one, from the others), ``adds_as_successor`` (what a successor says
    beyond the record it replaced, from what any record says beyond its compared
    neighbours). The restatement model's (``RESTATEMENT_FEATURES``): ``reminds`` (records
    that restate an older one, "Remember: ...", "Denk dran: ...", from the others)."""

    embedder: str
    announces: Direction
    adds_as_successor: Direction
    reminds: Direction

    def features(self, new: np.ndarray, older: np.ndarray) -> np.ndarray:
        """The ``DIRECTION_FEATURES`` of ``new`` (a vector) with each row of ``older``."""
        return self.pairs(np.repeat(new[None, :], len(older), axis=0), beyond(new, older))[0]

    def pairs(self, new: np.ndarray, beyond_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``DIRECTION_FEATURES`` and the ``RESTATEMENT_FEATURES`` of many pairs at once,
        from each pair's new vector (a row of ``new``) and what it says beyond the older
        record (a row of ``beyond_rows``: ``beyond``)."""
        rows = unit(new)
        return (np.column_stack([self.announces.read(rows),
                                 self.adds_as_successor.read(beyond_rows)]),
                self.reminds.read(rows)[:, None])

    def restating(self, new: np.ndarray, older: np.ndarray) -> np.ndarray:
        """The ``RESTATEMENT_FEATURES`` of ``new`` (a vector) with each row of ``older``."""
        return np.full((len(older), 1), self.reminds.read(unit(new[None, :]))[0])


def unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    out: np.ndarray = rows / np.where(norms == 0, 1.0, norms)
    return out


def fit_directions(embedder: str, new: np.ndarray, replaced_one: np.ndarray,
                   restates_one: np.ndarray, beyond_rows: np.ndarray, is_change: np.ndarray
                   ) -> Directions:
    """The directions from labelled records: ``new`` one vector per record, ``replaced_one``
    whether it replaced an older record, ``restates_one`` whether it restates one;
    ``beyond_rows`` one row per compared pair (``beyond``), ``is_change`` whether the pair is
    a change."""
    rows = unit(new)
    return Directions(embedder, Direction.between(rows, replaced_one.astype(bool)),
                      Direction.between(beyond_rows, is_change.astype(bool)),
                      Direction.between(rows, restates_one.astype(bool)))


def beyond(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """What ``new`` (a vector) says beyond each row of ``old``: its unit vector less its part
    along each (the rows ``Directions.adds_as_successor`` reads)."""
    n = unit(new[None, :])[0]
    o = unit(old)
    out: np.ndarray = n[None, :] - (o @ n)[:, None] * o
    return out
