"""Agents at scale: ``agents`` agents each write one state per step for ``steps`` steps (one
``store_many`` call per step; the ingest rate counts the time inside it, not the making up of
the states), then step-range, attribute and similar-state queries are timed on random agents.
Run with the tiers in Redis and in this process, over a temporary SQLite file or a given store
(whose records are left in the namespace ``bench-<pid>``, vector space ``agents``).

The similar-state queries are also checked: recall@5 of ``similar`` against the exact five
nearest states under the documented distance (``tiers.similarity``), found by brute force over
the agent's whole history at full resolution (ties to the most recent step, as ``similar``).
With tiers smaller than the history (``stm_limit``, ``im_limit``) the older states are compared
at their tier's resolution, which is what the recall then measures."""

from __future__ import annotations

import contextlib
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..engine.memory import Memory
from ..tiers import TierConfig, TieredMemory
from ..tiers.similarity import distances, flatten, scales
from .metrics import percentile


def _state(rng: random.Random, agent: int, step: int) -> dict[str, Any]:
    return {"health": round(rng.random(), 3), "energy": round(rng.random(), 3),
            "position": {"x": rng.randint(0, 99), "y": rng.randint(0, 99),
                         "zone": f"z{(agent + step // 50) % 10}"},
            "inventory": ["wood", "stone", "gem"][: step % 4],
            "status": rng.choice(("idle", "foraging", "fighting", "trading"))}


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(values, 50), 2), "p95": round(percentile(values, 95), 2)}


def run(*, agents: int = 1000, steps: int = 1000, redis_url: str | None = None,
        store: str | None = None, queries: int = 200, stm_limit: int | None = None,
        im_limit: int | None = None, echo: Callable[[str], Any] = print) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        db: Path | None = None
        if store is None:  # a temporary file, removed afterwards
            db = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="memstream-agents-"))) / "agents.db"
        mem = stack.enter_context(Memory(db or store, embedder="none"))
        prefix = f"bench-{os.getpid()}"
        limits = {"stm_limit": stm_limit, "im_limit": im_limit}
        config = TierConfig(stm_ttl=None, **{k: n for k, n in limits.items() if n is not None})
        tm = TieredMemory(mem, redis_url=redis_url, prefix=prefix,
                          namespace=None if db else prefix, config=config)
        if redis_url:  # the cache entries go, also when the run fails
            stack.callback(tm.im.clear)
            stack.callback(tm.stm.clear)
        report: dict[str, Any] = {
            "agents": agents, "steps": steps, "tiers": "redis" if redis_url else "in-process",
            "store": "sqlite" if db else str(store).partition(":")[0],
            "stm_limit": config.stm_limit, "im_limit": config.im_limit}
        _measure(tm, agents, steps, queries, report, echo)
        report["db_mib"] = round(os.path.getsize(db) / 2**20, 1) if db else None
    return report


def _measure(tm: TieredMemory, agents: int, steps: int, queries: int, report: dict[str, Any],
             echo: Callable[[str], Any]) -> None:
    rng = random.Random(7)
    redis_before = tm.stm.memory_bytes()
    elapsed = 0.0  # in store_many only: making up the states is the simulation's work
    for step in range(steps):
        batch = [(f"agent{a}", "state", _state(rng, a, step), step,
                  0.3 + 0.7 * rng.random()) for a in range(agents)]
        started = time.perf_counter()
        tm.store_many(batch)
        if step == steps - 1:
            tm.flush()  # the last batch's STM copy is part of the ingest
        elapsed += time.perf_counter() - started
        if (step + 1) % max(1, steps // 10) == 0:
            done = (step + 1) * agents
            echo(f"  {done:,} states, {done / elapsed:,.0f}/s")
    report["states"] = agents * steps
    report["ingest_per_s"] = round(agents * steps / elapsed)
    if redis_before is not None:
        report["redis_mib"] = round(((tm.stm.memory_bytes() or 0) - redis_before) / 2**20, 1)
    timings: dict[str, list[float]] = {"step_range": [], "attributes": [], "similar": []}
    found = 0
    for _ in range(queries):
        agent = f"agent{rng.randrange(agents)}"
        start = rng.randrange(max(1, steps - 100))
        t = time.perf_counter()
        tm.step_range(agent, start, start + 99)
        timings["step_range"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        tm.by_attributes(agent, {"position.zone": f"z{rng.randrange(10)}",
                                 "status": "trading"})
        timings["attributes"].append((time.perf_counter() - t) * 1000)
        query = _state(rng, 0, rng.randrange(steps))
        t = time.perf_counter()
        hits = tm.similar(agent, query, k=5)
        timings["similar"].append((time.perf_counter() - t) * 1000)
        found += len({e["memory_id"] for e, _ in hits} & _nearest(tm, agent, query, 5))
    for name, values in timings.items():
        report[f"{name}_ms"] = _ms(values)
    report["similar_recall_at_5"] = round(found / (5 * queries), 4) if queries else None


def _nearest(tm: TieredMemory, agent: str, query: dict[str, Any], k: int) -> set[str]:
    """The ids of the ``k`` states nearest to ``query`` under the documented distance, by brute
    force over the agent's whole history in full (the durable records)."""
    records = tm.memory.store.records.select(tm.selection(agent, None), order="step")
    states = [flatten(r.data or {}) for r in records]
    dist = distances(flatten(query), states, scales(states))
    order = sorted(range(len(records)), key=lambda j: (dist[j], -(records[j].step or 0)))
    return {records[j].id for j in order[:k]}


def render(r: dict[str, Any]) -> str:
    def pp(d: dict[str, float]) -> str:
        return f"p50 {d['p50']} ms, p95 {d['p95']} ms"

    lines = [f"agents: {r['agents']:,} agents x {r['steps']:,} steps = {r['states']:,} states, "
             f"tiers {r['tiers']}, store {r['store']}",
             f"ingest:              {r['ingest_per_s']:,} states/s",
             f"step-range (100):    {pp(r['step_range_ms'])}",
             f"attribute query:     {pp(r['attributes_ms'])}",
             f"similar state (k=5): {pp(r['similar_ms'])}",
             f"similar recall@5:    {r['similar_recall_at_5']} against the exact nearest "
             f"(STM {r['stm_limit']:,}, IM {r['im_limit']:,} per agent)"]
    if r["db_mib"] is not None:
        lines.append(f"database:            {r['db_mib']} MiB")
    if "redis_mib" in r:
        lines.append(f"redis memory:        {r['redis_mib']} MiB")
    return "\n".join(lines)
