"""A store's ``indexes`` part (``protocol.SearchIndexes``): what is the same on every backend
(named vector spaces, kept as meta values; a record's neighbours in its stream, over the
records' dialect) is here (``Indexes``); keyword and vector search are the backend's subclass's
(``sqlite.indexes.SQLiteIndexes``, ``postgres.indexes.PgIndexes``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..._types import TermStats
from ...errors import Conflict, InvalidInput
from ...filters import Selection
from ..protocol import KeyValue, VectorSpace
from .backend import Backend
from .records import count_sql

__all__ = ["Indexes", "IndexesHost"]

#: a selection up to this many records reads its whole stream once to find neighbours
SMALL_SELECTION = 5000
_SPACE = "space:"  # the meta key of a named vector space


class IndexesHost(Backend, Protocol):
    """What ``Indexes`` needs of its store: its meta values (where the named vector spaces
    are kept), and how it runs a selection (``where``), reads a selection's stream in order
    (``stream``) and rows by id (``by_id``)."""

    @property
    def kv(self) -> KeyValue: ...

    def where(self, sel: Selection) -> tuple[str, list[Any]]: ...

    def stream(self, db: Any, where: str, params: Sequence[Any]) -> list[str]: ...

    def by_id(self, db: Any, head: str, namespace: str, ids: Sequence[str]) -> list[Any]: ...


class Indexes:
    """Named vector spaces and stream neighbours; a backend adds keyword and vector search
    and its stored vectors."""

    def __init__(self, store: IndexesHost) -> None:
        self._s = store

    def term_stats(self, sel: Selection, terms: Sequence[str], *, selection_up_to: int,
                   cap: Callable[[int], int]) -> TermStats:
        raise NotImplementedError

    def keyword_scores(self, sel: Selection, weighted: Sequence[tuple[str, float]], limit: int
                       ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def vector_search(self, sel: Selection, vector: np.ndarray, limit: int
                      ) -> list[tuple[str, float]]:
        raise NotImplementedError

    def selection_vectors(self, sel: Selection) -> tuple[list[str], np.ndarray]:
        raise NotImplementedError

    def embeddings(self, namespace: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def set_embeddings(self, namespace: str, items: Sequence[tuple[str, np.ndarray]],
                       model: str) -> None:
        raise NotImplementedError

    def define_space(self, name: str, model: str, dim: int) -> VectorSpace:
        if not isinstance(name, str) or not name.isidentifier() or not name.islower():
            raise InvalidInput(f"a vector space is named by a lowercase identifier, not {name!r}"
                               " (the text space \"\" is the memory's embedder's)")
        space = VectorSpace(model, int(dim))
        saved = self._s.kv.get_meta(_SPACE + name)
        if saved is None:
            self._s.kv.set_meta(_SPACE + name, json.dumps({"model": model, "dim": space.dim}))
            return space
        held = VectorSpace(**json.loads(saved))
        if held != space:
            raise Conflict(f"the vector space {name!r} of this store holds vectors of {held.model}"
                           f" ({held.dim} dimensions), not of {model} ({space.dim})")
        return held

    def spaces(self) -> dict[str, VectorSpace]:
        return {key[len(_SPACE):]: VectorSpace(**json.loads(value))
                for key, value in self._s.kv.meta_items().items() if key.startswith(_SPACE)}

    def neighbours(self, sel: Selection, ids: Sequence[str], *, before: int, after: int
                   ) -> dict[str, tuple[list[str], list[str]]]:
        where, params = self._s.where(sel)
        ph = self._s.PLACEHOLDER
        out: dict[str, tuple[list[str], list[str]]] = {}
        wanted = list(dict.fromkeys(ids))
        with self._s.session(False) as db:
            total = db.execute(count_sql(ph, where, True),  # the size, up to the bound
                               (*params, SMALL_SELECTION + 1)).fetchone()[0]
            if total <= SMALL_SELECTION:  # read the whole stream once
                order = self._s.stream(db, where, params)
                pos = {rid: n for n, rid in enumerate(order)}
                for rid in wanted:
                    n = pos.get(rid)
                    if n is not None:
                        out[rid] = (order[max(0, n - before):n][::-1], order[n + 1:n + 1 + after])
                return out
            keys = dict(self._s.by_id(db, "SELECT r.id, r.created_at FROM records r",
                                    sel.namespace, wanted))
            # row values keep both lookups an index range (an OR would walk the stream)
            sql = (f"SELECT * FROM (SELECT 0, r.id FROM records r WHERE {where} AND "
                   f"(r.created_at, r.id) < ({ph}, {ph}) ORDER BY r.created_at DESC, r.id DESC "
                   f"LIMIT {ph}) b UNION ALL SELECT * FROM (SELECT 1, r.id FROM records r "
                   f"WHERE {where} AND (r.created_at, r.id) > ({ph}, {ph}) "
                   f"ORDER BY r.created_at, r.id LIMIT {ph}) a")
            for rid in wanted:
                if rid not in keys:
                    continue
                rows = db.execute(sql, (*params, keys[rid], rid, before,
                                        *params, keys[rid], rid, after)).fetchall()
                out[rid] = ([i for side, i in rows if side == 0],
                            [i for side, i in rows if side == 1])
        return out
