"""What came before the best match, for a question about the past (``retrieval.past``): in a
store of notes, the older records the best hit follows up (about the same thing, by the
likeness ``retrieval.notes`` reads as a follow-up) are placed right after it.

"Where did I live before the student residence?" matches the note about the residence best;
the answer is the older note about the flat it followed, which holds none of the question's
words.
When a change was found between the two (``engine.changes``), the ``current`` stage already
places the replaced version there; this stage reads the same thing from the vectors alone, so
the first hit never changes: only what follows it."""

from __future__ import annotations

from typing import ClassVar

from ...retrieval.notes import LINK_RANK, LINK_Z, NOTES_PAIRS
from . import Search
from .current import _in_place

__all__ = ["EARLIER_THING", "Earlier"]

#: why an older record follows the best match (``explain.lifted``)
EARLIER_THING = "an earlier record about the same thing as the best match"


class Earlier:
    name: ClassVar[str] = "earlier"

    def run(self, search: Search) -> bool:
        s = search
        if not s.asks_past or s.null is None or len(s.ranked) < 2:
            return False
        best = s.ranked[0]
        older = [h for h in s.ranked[1:NOTES_PAIRS]
                 if h.item.created_at < best.item.created_at - 1.0]
        vecs = s.reads.embeddings([best.item.id, *[h.item.id for h in older]])
        dim = s.null.rows.shape[1]
        b = vecs.get(best.item.id)
        if b is None or b.shape[0] != dim:
            return True
        alike = [(float((vecs[h.item.id] @ b - s.null.pair_mean) / s.null.pair_std), n, h)
                 for n, h in enumerate(older)
                 if h.item.id in vecs and vecs[h.item.id].shape[0] == dim]
        chosen = [h for z, _, h in sorted(alike, key=lambda t: (-t[0], t[1]))[:LINK_RANK]
                  if z >= LINK_Z]
        if not chosen:
            return True
        moved = {h.item.id for h in chosen}
        lifted = [_in_place(best, h, h.item, EARLIER_THING, ()) for h in chosen]
        s.ranked = [best, *lifted, *[h for h in s.ranked[1:] if h.item.id not in moved]]
        return True
