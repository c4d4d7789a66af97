"""Context-aware relevance on small hand-made cases."""

from __future__ import annotations

import pytest

from memstream import Memory, Query, Scope
from memstream.retrieval.context import smooth


def test_smooth_hand_computed():
    scores = {"q": 1.0, "a": 0.1, "x": 0.4}
    nb = {"q": ([], ["a"]), "a": (["q"], ["x"]), "x": (["a", "q"], [])}
    out = smooth(scores, nb)
    assert out["q"] == pytest.approx(1.0 + 0.2 * 0.1)
    assert out["a"] == pytest.approx(0.1 + 0.5 * 1.0 + 0.2 * 0.4)
    assert out["x"] == pytest.approx(0.4 + 0.5 * 0.1 + 0.25 * 1.0)
    assert smooth({}, {"z": ([], [])}) == {"z": 0.0}


def test_answer_after_the_question_is_found(tmp_path, e5):
    """The answer turn shares no word with the question; the turn before it does."""
    turns = ["Mel: How was the hike with the kids?", "Caroline: Long but fun, we saw deer.",
             "Mel: Do you have any pets at home these days?",
             "Caroline: Yes! We adopted a second cat named Bailey last month.",
             "Mel: Great, my son starts school on Monday.",
             "Caroline: The pottery class is on Thursdays now."]
    with Memory(tmp_path / "c.db", embedder=e5) as mem:
        mem.add_many([{"content": t, "at": 1000 + i} for i, t in enumerate(turns)])
        mem.flush(timeout=60)
        ids = {r.text: r.id for r in mem.get_all()}
        answer = ids[turns[3]]
        with_ctx = [h.record.id for h in mem.search("What pets does Caroline have?", k=2,
                                                     weights="recall", touch=False)]
        assert answer in with_ctx
    # the neighbours come from the stream of the selection, in creation order
    with Memory(tmp_path / "n.db", embedder="none") as mem:
        a = mem.add("first", at=1, user_id="u")
        mem.add("other user", at=2, user_id="v")
        b = mem.add("second", at=3, user_id="u")
        c = mem.add("third", at=4, user_id="u")
        sel = mem._selection(Scope(user_id="u"), Query())
        assert mem.store.indexes.neighbours(sel, [b.id], before=2, after=1) == \
            {b.id: ([a.id], [c.id])}
