"""Following names (``retrieval.entities``): in a store of notes, the memories the best hits'
specific names lead to are placed after them, each naming the way in (``explain.via``)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from ...core.names import extract
from ...core.tracing import span
from ...filters import admits
from ...retrieval.entities import BRIDGE_PER_NAME, BRIDGE_SEEDS, bridge_names, placed, reached_from
from ...retrieval.pipeline import rank
from . import Search
from .calibrated import calibrate

__all__ = ["Names"]


class Names:
    name: ClassVar[str] = "names"

    def run(self, search: Search) -> bool:
        s = search
        seeds = [h.item.id for h in s.ranked[:BRIDGE_SEEDS]]
        if not seeds:
            return True
        with span("memstream.entities"):
            names = bridge_names(seeds, s.reads.record_entities(seeds),
                                 {m.key for m in extract(s.text)})
            if not names:
                return True
            # each name's newest memories, one more than it leads to (the seed may be among
            # them)
            reached, via = reached_from(names, s.reads.mentions(
                [e.id for ents in names.values() for e in ents], limit=BRIDGE_PER_NAME + 1))
            wanted = list(dict.fromkeys(r for rs in reached.values() for r in rs))
            visible = {r.id for r in s.reads.records(wanted) if admits(s.sel, r)}
            reached = {k: [r for r in rs if r in visible] for k, rs in reached.items()}
            by_id = {h.item.id: h for h in s.ranked}
            extra = [r for r in wanted if r in visible and r not in by_id]
            if extra:  # those the indexes did not propose, scored on their own evidence
                logits, own, _ = calibrate(s, extra, {})
                signals = s.reads.signals(extra)
                for h in rank(signals, relevance=[logits[c.id] for c in signals], now=s.now,
                              p=s.p, limit=len(signals), own=[own[c.id] for c in signals]):
                    by_id[h.item.id] = h
        shown = {rid: h.explain.raw_relevance for rid, h in by_id.items()}
        before = {h.item.id: n for n, h in enumerate(s.ranked)}
        out = []
        for n, rid in enumerate(placed([h.item.id for h in s.ranked], shown, reached)):
            hit = by_id[rid]
            moved = rid in via and n < before.get(rid, len(s.ranked))
            out.append(hit._replace(explain=dataclasses.replace(hit.explain, via=via[rid]))
                       if moved else hit)
        s.ranked = out
        return True
