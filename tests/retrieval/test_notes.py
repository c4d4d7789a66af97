"""The notes stage's features on hand-made pools (retrieval.notes): who follows up whom, and
when the best candidate's follow-ups count."""

from __future__ import annotations

import numpy as np
import pytest

from memstream.retrieval.notes import (
    FEATURES,
    LINK_Z,
    Pool,
    Weights,
    adjustments,
    features,
)

DAY = 86400.0
#: request and date weigh 2 (the best is chosen on them), the follow-up of the best 1
WEIGHTS = Weights(tuple(2.0 if f in ("request", "date") else 1.0 if f == "follows_best"
                        else 0.0 for f in FEATURES))


def pool(logits, times, pair_z, *, question=None, importance=None, keyword=None,
         dated=None, standing=None, request=False) -> Pool:
    n = len(logits)
    return Pool(ids=[f"r{i}" for i in range(n)], logits=np.array(logits, float),
                dense=np.array(logits, float), keyword=np.array(keyword or [0.0] * n),
                keyword_rank=np.zeros(n), question=np.array(question or [False] * n),
                standing=np.array(standing or [False] * n), dated=np.array(dated or [0.0] * n),
                times=np.array(times, float), importance=np.array(importance or [0.5] * n),
                pair_z=np.array(pair_z, float), request=request)


def col(x: np.ndarray, name: str) -> list[float]:
    return x[:, FEATURES.index(name)].tolist()


ALIKE = [[0, 3, 0], [3, 0, 0], [0, 0, 0]]  # r0 and r1 about the same thing, r2 apart


def test_a_newer_alike_record_follows_up_the_best():
    x, best = features(pool([2.0, 1.0, 0.5], [0, 5 * DAY, 9 * DAY], ALIKE), WEIGHTS)
    assert best == 0
    assert col(x, "follows_best") == [0, 1, 0]
    assert col(x, "follows_best_pz") == [0, 3, 0]
    assert col(x, "follows_best_gap") == [0, 1.0, 0]
    assert col(x, "follows_best_days") == pytest.approx([0, np.log1p(5), 0])
    assert col(x, "superseded") == [1, 0, 0]  # r1 is as relevant (within 1.5) and newer


@pytest.mark.parametrize("why, kwargs, times", [
    ("older", {}, [5 * DAY, 0, 9 * DAY]),
    ("not alike enough", {"pair_z": [[0, LINK_Z - 0.1, 0], [LINK_Z - 0.1, 0, 0], [0, 0, 0]]},
     [0, 5 * DAY, 9 * DAY]),
    ("the best is unrelated", {"logits": [-3.0, -4.0, -5.0]}, [0, 5 * DAY, 9 * DAY]),
])
def test_no_follow_up(why: str, kwargs: dict, times: list[float]):
    args = {"logits": [2.0, 1.0, 0.5], "pair_z": ALIKE} | kwargs
    x, _ = features(pool(args["logits"], times, args["pair_z"]), WEIGHTS)
    assert col(x, "follows_best") == [0, 0, 0], why


def test_at_the_same_second_the_statement_follows_the_question_and_the_weightier_the_other():
    x, _ = features(pool([2.0, 1.0, 0.5], [0, 0, 0], ALIKE, question=[True, False, False]),
                    WEIGHTS)
    assert col(x, "follows_best") == [0, 1, 0]
    x, _ = features(pool([2.0, 1.0, 0.5], [0, 0, 0], ALIKE, importance=[0.3, 0.9, 0.5]),
                    WEIGHTS)
    assert col(x, "follows_best") == [0, 1, 0]
    x, _ = features(pool([2.0, 1.0, 0.5], [0, 0, 0], ALIKE, importance=[0.9, 0.3, 0.5]),
                    WEIGHTS)
    assert col(x, "follows_best") == [0, 0, 0]


def test_the_best_is_chosen_with_the_date_and_adjustments_are_named():
    # r2 names the query's date: with +2 it is the best, and r1 no longer follows the best
    p = pool([2.0, 1.0, 0.5], [0, 5 * DAY, 9 * DAY], ALIKE, dated=[0.0, 0.0, 1.0])
    named, x, best, _ = adjustments(p, WEIGHTS)
    assert best == 2 and col(x, "follows_best") == [0, 0, 0]
    assert named[2] == {"of the date the query names": 2.0} and named[0] == named[1] == {}



def test_the_record_a_newer_alike_one_makes_superseded_is_named():
    """The "superseded" signal is a likeness: its addition is named "a newer record is about
    the same thing", and ``newer`` names that record (r1 for r0; none for the others)."""
    added = adjustments(pool([2.0, 1.0, 0.5], [0, 5 * DAY, 9 * DAY], ALIKE))  # as shipped
    assert added.newer == ["r1", "", ""]
    assert "a newer record is about the same thing" in added.named[0]
    assert not any("superseded" in label for named in added.named for label in named)
