"""``TieredMemory.similar``: an agent's entries nearest to a state (in the state's own units,
``similarity``) or to a raw vector (cosine), across the tiers.

Each tier compares at its own resolution, and an entry is judged by the most detailed tier that
holds it: STM is read first, then IM without the entries STM held, then LTM without both. Each
tier's best are found in its own sorted list, and the lists are heap-merged.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import validate as v
from ..errors import InvalidInput
from .entries import of_record, shown
from .features import DIM
from .similarity import distances, flatten, form, scales, similarity

if TYPE_CHECKING:
    from .backends import TierBackend
    from .tiered import TieredMemory
    from .tiered import _Chosen as _Hit

__all__ = ["similar"]

_TIERS = ("stm", "im", "ltm")


def similar(tm: TieredMemory, agent_id: str, query: Mapping[str, Any] | Sequence[float],
            k: int, kind: str | None, tiers: Sequence[str] | None
            ) -> list[tuple[dict[str, Any], float]]:
    """(entry, similarity) of the ``k`` entries most like ``query``, best first."""
    if k < 1:
        raise InvalidInput("k must be >= 1")
    wanted = list(tiers or _TIERS)
    if set(wanted) - set(_TIERS):
        raise InvalidInput("memory_tiers may name only 'stm', 'im' and 'ltm'")
    if isinstance(query, Mapping):  # a state is compared with states unless a kind is named
        ranked = _by_state(tm, agent_id, query, k, kind or "state", wanted)
    else:
        ranked = _by_vector(tm, agent_id, v.vector(query, DIM, "query_embedding"), k, kind,
                            wanted)
    out: list[tuple[dict[str, Any], float]] = []
    seen: set[str] = set()
    for key, rid, entry in heapq.merge(*ranked, key=lambda t: (t[0], t[1])):
        if rid in seen:
            continue
        seen.add(rid)
        out.append((entry, similarity(key[0]) if isinstance(query, Mapping) else -key[0]))
        if len(out) == k:
            break
    tm.count_reads([e for e, _ in out])
    return out


def _cached(tm: TieredMemory, agent_id: str, kind: str | None, wanted: list[str],
            held: set[str]) -> list[tuple[str, TierBackend, list[dict[str, Any]]]]:
    """Each wanted cache tier's entries of the agent (of that kind), none held by a more
    detailed tier; their ids are added to ``held``."""
    out: list[tuple[str, TierBackend, list[dict[str, Any]]]] = []
    for tier in ("stm", "im"):
        if tier not in wanted:
            continue
        backend = tm.stm if tier == "stm" else tm.im
        ids = [i for _, i in tm.tier_call(lambda b=backend: b.index(agent_id), [])
               if i not in held]
        got = tm.tier_call(lambda b=backend, i=ids: b.get(i), {}) if ids else {}
        entries = [got[i] for i in ids if i in got]
        held.update(e["memory_id"] for e in entries)
        out.append((tier, backend, [e for e in entries
                                    if kind is None or e["metadata"]["memory_type"] == kind]))
    return out


def _by_state(tm: TieredMemory, agent_id: str, query: Mapping[str, Any], k: int,
              kind: str | None, wanted: list[str]) -> list[list[_Hit]]:
    """Per tier, its best entries by distance to the state (then the most recent step)."""
    held: set[str] = set()
    cached = _cached(tm, agent_id, kind, wanted, held)
    flats = [[flatten(e["contents"]) if tier == "stm" else flatten(e.get("im_contents") or {})
              for e in entries] for tier, _, entries in cached]
    records = []
    if "ltm" in wanted:
        ids = [i for i in tm.records.select_ids(tm.selection(agent_id, kind), order="step")
               if i not in held]  # by step: the agent's index, not a scan of the namespace
        records = tm.records.get(tm.namespace, ids) if ids else []
    ltm_flats = [form(r.data or {}, 2) for r in records]
    scale = scales([f for group in flats for f in group] + ltm_flats)  # the agent's own spread
    ranked: list[list[_Hit]] = []
    for (tier, backend, entries), group in zip(cached, flats, strict=True):
        dist = distances(form(query, 0 if tier == "stm" else 1), group, scale)
        hits: list[_Hit] = sorted(
            ((float(d), -float(e["step_number"]), -float(e["timestamp"])), e["memory_id"], e)
            for d, e in zip(dist, entries, strict=True))[: k * 2]
        ranked.append(tm.still_stored(backend, [(key, rid, shown(e, tier))
                                           for key, rid, e in hits]))
    if records:
        dist = distances(form(query, 2), ltm_flats, scale)
        best = sorted(((float(d), -float(r.step or 0), -r.created_at), r.id, n)
                      for n, (d, r) in enumerate(zip(dist, records, strict=True)))[: k * 2]
        found = tm.ltm_entries([records[n] for *_, n in best])
        ranked.append([(key, rid, found[rid]) for key, rid, _ in best])
    return ranked


def _by_vector(tm: TieredMemory, agent_id: str, q: np.ndarray, k: int, kind: str | None,
               wanted: list[str]) -> list[list[_Hit]]:
    """Per tier, its best entries by cosine to a raw vector, from the packed vectors (whole
    entries are read only for the best ones)."""
    ranked: list[list[_Hit]] = []
    held: set[str] = set()  # ids a more detailed tier searched: judged there, not again
    for tier in ("stm", "im"):
        if tier not in wanted:
            continue
        backend = tm.stm if tier == "stm" else tm.im
        ids, raw = tm.tier_call(lambda b=backend: b.vectors(agent_id), ([], b""))
        if not ids:
            continue
        mat = np.frombuffer(raw, dtype=np.float16).reshape(len(ids), -1)
        ids, mat = _unheld(ids, mat, held)
        held.update(ids)
        scores = mat.astype(np.float32) @ q
        order = np.argsort(-scores, kind="stable")
        chosen: list[_Hit] = []
        for start in range(0, len(order), k * 4):
            block = [ids[j] for j in order[start: start + k * 4]]
            got = tm.tier_call(lambda b=backend, i=block: b.get(i), {})
            for j in order[start: start + k * 4]:
                e = got.get(ids[j])
                if e is None:  # gone since (evicted or expired): a lower tier may hold it
                    held.discard(ids[j])
                elif kind is None or e["metadata"]["memory_type"] == kind:
                    chosen.append(((-float(scores[j]), 0.0, 0.0), ids[j], shown(e, tier)))
            if len(chosen) >= k * 2:
                break
        ranked.append(tm.still_stored(backend, sorted(chosen, key=lambda t: (t[0], t[1]))[: k * 2]))
    if "ltm" in wanted:
        ids, mat = _unheld(*tm.records.vectors(tm.selection(agent_id, kind)), held)
        if len(ids):
            scores = mat @ q
            top = np.argsort(-scores, kind="stable")[: k * 2]
            recs = {r.id: r for r in tm.records.get(tm.namespace, [ids[i] for i in top])}
            ranked.append([((-float(scores[i]), 0.0, 0.0), ids[i],
                            of_record(recs[ids[i]], mat[i]))
                           for i in top if ids[i] in recs])
    return ranked


def _unheld(ids: list[str], mat: np.ndarray, held: set[str]) -> tuple[list[str], np.ndarray]:
    """The ids (and their rows of ``mat``) that are not in ``held``."""
    if not held:
        return ids, mat
    keep = [j for j, i in enumerate(ids) if i not in held]
    return [ids[j] for j in keep], mat[keep]
