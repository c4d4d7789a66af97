"""Rows of the SQLite store's records table: the columns read, a record from a row and a row
from a record, and id lists cut to SQLite's parameter limit."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from typing import Any

from ..._types import Record
from ...core import jsonio as _json
from .schema import COLUMNS

_dumps = _json.dumps
SELECT = "SELECT " + ", ".join(f"r.{c}" for c in COLUMNS) + " FROM records r"
CHUNK = 500  # parameters per IN (...) list, well under SQLite's limit

_FIELDS = operator.attrgetter(*COLUMNS)
_DATA, _METADATA, _PROVENANCE = (COLUMNS.index(c) for c in ("data", "metadata", "provenance"))


def row_to_record(row: Sequence[Any]) -> Record:
    """A record from the values of COLUMNS (which are Record's first fields, in order)."""
    v = list(row)
    data, meta, prov = v[_DATA], v[_METADATA], v[_PROVENANCE]
    v[_DATA] = _json.loads(data) if data is not None else None
    v[_METADATA] = _json.loads(meta) if meta != "{}" else {}
    v[_PROVENANCE] = tuple(_json.loads(prov)) if prov != "[]" else ()
    return Record(*v)


def record_row(r: Record) -> list[Any]:
    """The values of COLUMNS for a record (its JSON fields as text)."""
    row = list(_FIELDS(r))
    row[_DATA] = _dumps(r.data) if r.data is not None else None
    row[_METADATA] = _dumps(r.metadata) if r.metadata else "{}"
    row[_PROVENANCE] = _dumps(list(r.provenance)) if r.provenance else "[]"
    return row


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
