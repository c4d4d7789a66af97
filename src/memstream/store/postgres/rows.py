"""Rows of the PostgreSQL store's records table: the columns read, a record from a row and a
row from a record, vectors to and from pgvector."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from ..._types import Record
from .schema import COLUMNS

SELECT = "SELECT " + ", ".join(f"r.{c}" for c in COLUMNS) + " FROM records r"


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def jsonb(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value, dumps=dumps)


_PROVENANCE, _METADATA = COLUMNS.index("provenance"), COLUMNS.index("metadata")


def row_to_record(row: Sequence[Any]) -> Record:
    """A record from the values of COLUMNS (which are Record's first fields, in order)."""
    v = list(row)
    v[_PROVENANCE] = tuple(v[_PROVENANCE] or ())
    v[_METADATA] = v[_METADATA] or {}
    return Record(*v)


def record_row(r: Record) -> list[Any]:
    values = {c: getattr(r, c) for c in COLUMNS}
    values["data"] = jsonb(r.data)
    values["metadata"] = jsonb(r.metadata)
    values["provenance"] = list(r.provenance)
    return [values[c] for c in COLUMNS]


def vec(v: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(v, dtype=np.float32).ravel())


def scalar(cur: Any, sql: Any, params: Sequence[Any] = ()) -> Any:
    """The first column of the one row a query returns."""
    row = cur.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


def from_db(v: Any) -> np.ndarray:
    """A vector read back (pgvector gives a ``Vector`` or a numpy array)."""
    return np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)
