"""An agent's entry in its three forms: full in STM, compressed in IM, abstract in LTM (a
durable record read back: ``of_record``); ``shown`` is the form the tiers' verbs return."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._types import Record
from .features import compress
from .vectors import floats as _floats

__all__ = ["LEVEL_OF", "of_record", "shown"]

LEVEL_OF = {"stm": 0, "im": 1, "ltm": 2}


def shown(entry: Mapping[str, Any], tier: str) -> dict[str, Any]:
    """An entry as the tiers' verbs return it, from the tier that holds it."""
    level = LEVEL_OF[tier]
    meta = dict(entry["metadata"], compression_level=level, tier=tier)
    contents = entry["contents"] if level == 0 else entry.get("im_contents") \
        if level == 1 else compress(entry["contents"], 2)
    vectors: dict[str, list[float]] = {}
    if "vec" in entry and level == 0:
        vectors["full_vector"] = _floats(entry["vec"])
    if "im_vec" in entry and level <= 1:
        vectors["compressed_vector"] = _floats(entry["im_vec"])
    return {"memory_id": entry["memory_id"], "agent_id": entry["agent_id"],
            "step_number": entry["step_number"], "timestamp": entry["timestamp"],
            "contents": contents, "metadata": meta, "embeddings": vectors}


def of_record(rec: Record, vector: np.ndarray | None) -> dict[str, Any]:
    """The LTM form of a durable record; ``vector`` is its abstract vector."""
    data = rec.data or {}
    return {"memory_id": rec.id, "agent_id": rec.agent_id, "step_number": rec.step,
            "timestamp": rec.created_at, "contents": compress(data, 2),
            "metadata": {"creation_time": rec.created_at,
                         "last_access_time": rec.last_accessed_at,
                         "compression_level": 2, "importance_score": rec.importance,
                         "retrieval_count": rec.access_count, "memory_type": rec.kind,
                         "tier": "ltm"},
            "embeddings": {} if vector is None else {"abstract_vector": vector.tolist()}}
