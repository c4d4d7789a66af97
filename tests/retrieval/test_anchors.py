"""Times a query counts from another event (retrieval.anchors), in English, Spanish and
German, by hand; and the notes stage's ``anchored`` feature on a hand-made pool."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memstream.retrieval.anchors import Window, event_share, windows
from memstream.retrieval.notes import (
    AFTER_EVENT,
    AFTER_EVENT_LABEL,
    FEATURES,
    Pool,
    Weights,
    adjustments,
    features,
)

DAY = 86400.0


@pytest.mark.parametrize(("query", "expected"), [
    ("What did the plumber say the morning after the leak?", [(0, 2, None, "the leak")]),
    ("Who called the night of the power cut?", [(-0.75, 1, None, "power cut")]),
    ("How was her knee about a week after the fall?", [(3, 11, None, "the fall")]),
    ("What did I eat two days before the blood test", [(-3, -1, None, "the blood test")]),
    ("What broke a few days after we moved in?", [(1, 6, None, "we moved in")]),
    ("Where did we go the Sunday after the wedding?", [(0, 8, 6, "the wedding")]),
    ("¿Qué pasó la mañana después de la mudanza?", [(0, 2, None, "la mudanza")]),
    ("¿Qué comimos unos días antes del viaje?", [(-6, -1, None, "viaje")]),
    ("¿Adónde fuimos el sábado después de la boda?", [(0, 8, 5, "la boda")]),
    ("Was war drei Tage nach der Operation?", [(2, 4, None, "der Operation")]),
    ("Wer kam am Abend vor der Prüfung?", [(-2, 0, None, "der Prüfung")]),
    ("Was geschah in der Nacht des Sturms?", [(-0.75, 1, None, "Sturms")]),
    # a title's or an initial's full stop does not end the event's words
    ("What had I noticed a few days before Dr. Haddad's exam?",
     [(-6, -1, None, "Dr. Haddad's exam")]),
    ("What did we cook the night after J. R. Vance visited. Then?",
     [(0, 2, None, "J. R. Vance visited")]),
    # nothing counted from an event
    ("When is the dentist appointment?", []), ("What is the day of the week?", []),
    ("Which day after tomorrow is free?", []), ("¿Dónde vivo ahora?", []),
])
def test_the_windows_a_query_counts_from_an_event(query: str, expected: list) -> None:
    got = [(w.start, w.end, w.weekday, w.event) for w in windows(query)]
    assert [(s, e, d) for s, e, d, _ in got] == [(s, e, d) for s, e, d, _ in expected]
    for (*_, event), (*_, words) in zip(got, expected, strict=True):
        assert words in event
        assert "." not in words or event == words


def test_the_event_is_the_record_holding_its_rarest_words():
    counted = windows("What did Ravi do the day after the hailstorm?")
    share = event_share(counted, ["Hailstorm dented the car roof.", "Ravi fixed the gutter.",
                                  "Ravi and the car went to the garage."])
    assert share is not None and int(np.argmax(share)) == 0 and share[0] > 0.5
    assert event_share(windows("Where is Ravi?"), ["Ravi fixed the gutter."]) is None


def test_a_record_in_the_window_after_the_anchor_is_anchored():
    # r0 the event (best), r1 half a day later, r2 a week later, r3 a day before; r4 and r5,
    # the next best (anchors too), months away
    t0 = datetime(2025, 3, 3, 20, 0, tzinfo=UTC).timestamp()  # a Monday
    times = [t0, t0 + 0.5 * DAY, t0 + 7 * DAY, t0 - DAY, t0 + 90 * DAY, t0 + 120 * DAY]
    n = len(times)

    def pool(counted: list[Window]) -> Pool:
        return Pool(ids=[f"r{i}" for i in range(n)],
                    logits=np.array([2.0, -1.0, -1.0, -1.0, 1.0, 1.0]),
                    dense=np.zeros(n), keyword=np.zeros(n), keyword_rank=np.zeros(n),
                    question=np.zeros(n, bool), standing=np.zeros(n, bool), dated=np.zeros(n),
                    times=np.array(times), importance=np.full(n, 0.5),
                    pair_z=np.zeros((n, n)), request=False, windows=counted)

    weights = Weights(tuple(0.0 for _ in FEATURES))
    column = FEATURES.index("anchored")
    x, _ = features(pool([Window(0.0, 2.0)]), weights)
    assert x[:, column].tolist() == [0, 1, 0, 0, 0, 0]
    x, _ = features(pool([Window(-2.0, 0.0)]), weights)
    assert x[:, column].tolist() == [0, 0, 0, 1, 0, 0]
    x, _ = features(pool([Window(0.0, 8.0, weekday=0)]), weights)  # "the Monday after"
    assert x[:, column].tolist() == [0, 0, 1, 0, 0, 0]
    x, _ = features(pool([]), weights)
    assert x[:, column].tolist() == [0] * n


def test_the_records_of_the_window_go_above_the_event_they_are_counted_from():
    """The best record written in the window counted from an anchor stands ``AFTER_EVENT``
    above it, the others of the window in their own order; not when the anchor tells of
    another day than its own (its time is not the event's), nor without a window."""
    t0 = datetime(2025, 3, 3, 20, 0, tzinfo=UTC).timestamp()
    times = [t0, t0 + 0.1 * DAY, t0 + 0.2 * DAY, t0 + 40 * DAY]
    n = len(times)

    def pool(counted: list[Window], tells: list[bool] | None = None) -> Pool:
        return Pool(ids=[f"r{i}" for i in range(n)],
                    logits=np.array([1.0, -3.0, -2.0, -1.0]),
                    dense=np.zeros(n), keyword=np.zeros(n), keyword_rank=np.zeros(n),
                    question=np.zeros(n, bool), standing=np.zeros(n, bool), dated=np.zeros(n),
                    times=np.array(times), importance=np.full(n, 0.5),
                    pair_z=np.zeros((n, n)), request=False, windows=counted,
                    tells=None if tells is None else np.array(tells))

    weights = Weights(tuple(0.0 for _ in FEATURES))

    def totals(p: Pool) -> list[float]:
        adds = adjustments(p, weights).named
        return [float(p.logits[i]) + sum(a.values()) for i, a in enumerate(adds)]

    night = [Window(-0.75, 1.0)]
    lifted = totals(pool(night, [False] * n))
    assert lifted[2] == pytest.approx(1.0 + AFTER_EVENT)  # the best of the window, above
    assert lifted[1] == pytest.approx(lifted[2] - 1.0)  # the other, in its own order
    assert lifted[3] == -1.0  # outside the window
    adds = adjustments(pool(night, [False] * n), weights).named
    assert AFTER_EVENT_LABEL in adds[2] and AFTER_EVENT_LABEL not in adds[0]
    assert totals(pool(night, [True, False, False, False])) == [1.0, -3.0, -2.0, -1.0]
    assert totals(pool([])) == [1.0, -3.0, -2.0, -1.0]
