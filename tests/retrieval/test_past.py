"""Whether a query asks about the past, read from its vector (``retrieval.past``)."""

from __future__ import annotations

import numpy as np

from memstream.retrieval.past import EVENTS, NOW, PAST, Past


def _rows(center: list[float], n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.asarray(center) + 0.05 * rng.standard_normal((n, len(center)))


def test_the_direction_runs_from_questions_about_now_to_questions_about_the_past():
    past = Past.between(_rows([1.0, 0.0, 0.2], 15, 1), _rows([0.0, 1.0, 0.2], 15, 2))
    assert np.isclose(np.linalg.norm(past.direction), 1.0)
    assert past.asks(np.array([0.1, 2.0, 0.3]))  # the scale of a vector does not count
    assert not past.asks(np.array([3.0, 0.2, 0.3]))
    assert past.reading(np.array([0.0, 1.0, 0.2])) > 0 > past.reading(np.array([1.0, 0.0, 0.2]))
    # halfway between the two sets' means reads as neither
    assert abs(past.reading(np.array([0.5, 0.5, 0.2]))) < 0.05


def test_a_vector_of_another_embedder_reads_as_about_now():
    past = Past.between(_rows([1.0, 0.0], 15, 1), _rows([0.0, 1.0], 15, 2))
    assert not past.asks(np.array([0.0, 1.0, 0.0]))


def test_the_questions_are_distinct_questions():
    assert len(set(PAST + NOW + EVENTS)) == len(PAST + NOW + EVENTS)
    assert all(q.endswith("?") for q in PAST + NOW + EVENTS)


def test_the_shipped_direction_is_the_one_the_questions_give(e5, monkeypatch):
    """The default embedder's direction is shipped (no store's first search embeds the
    questions); it is the one drawn from the questions as they are written, and questions
    edited without running tools/past_direction.py again are not read with it."""
    from memstream.retrieval import past as module

    shipped = Past.shipped(e5.name)
    assert shipped is not None
    drawn = Past.between(np.array([e5.embed_query(q) for q in NOW + EVENTS]),
                         np.array([e5.embed_query(q) for q in PAST]))
    # equal up to rounding: the embedder's float sums differ by CPU (AVX2 or AVX-512), which
    # moves it by a few thousandths (cosine 0.99987); one question fewer, to 0.997 or less
    assert float(shipped.direction @ drawn.direction) > 0.999
    assert abs(shipped.midpoint - drawn.midpoint) < 1e-3
    assert Past.shipped("another-embedder") is None
    monkeypatch.setattr(module, "PAST", PAST[:-1])
    assert Past.shipped(e5.name) is None
