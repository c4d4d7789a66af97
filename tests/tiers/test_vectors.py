"""The write path's batch features are exactly those of their definitions."""

from __future__ import annotations

import enum
import random

import numpy as np
import pytest

from memstream import InvalidInput
from memstream.core.validate import json_object
from memstream.tiers import state_vector
from memstream.tiers.features import leaves, long_term, unit_rows
from memstream.tiers.vectors import StateBatch, plain_leaves, search_text


class Colour(enum.StrEnum):
    RED = "red"


def _cases() -> list[dict]:
    rng = random.Random(3)
    cases: list[dict] = [
        {}, {"a": 1}, {"flag": True, "none": None}, {"flag": 1}, {"flag": 1.0},
        {"zero": 0.0, "name": "a fairly long name for the abstract", "n": 3},
        {"zero": -0.0, "name": "a fairly long name for the abstract", "n": 3},
        {"k" * 50: "v" * 200, "b": "x y z", "c" * 100: 3, "d": [{"q": 1}]},
        {f"field_{i}": f"text {i} " * 5 for i in range(10)},
        {"abstract": "mine", "x": 1, "y": "some words here to pass 32 characters"},
        {"a.b": 1, "a": {"b": 2}, "tail": "a long enough string value, really"},
        {"big": 10**400, "neg": -(10**30), "items": list(range(40)), "grid": [[1, 2], [3, 4]]},
        {"tuple": (1, 2), "colour": Colour.RED, "nested": {"t": ("a",)}},
        {"deep": {"er": {"still": {"x": 1.25, "words": "alpha beta gamma delta"}}}},
    ]
    for i in range(40):  # simulation-like states whose leaves repeat
        cases.append({"health": round(rng.random(), 2), "position": {"x": rng.randint(0, 3),
                      "zone": f"z{rng.randint(0, 2)}"}, "inventory": ["wood", "gem"][: i % 3],
                      "status": rng.choice(("idle", "fighting")), "alive": i % 2 == 0})
    return cases


def test_a_batch_gives_the_definitions_vectors_and_texts_bit_for_bit():
    cases = _cases()
    for _ in range(2):  # the second pass is served from the leaf cache
        batch = StateBatch()
        texts = []
        for case in cases:
            data, pairs = plain_leaves(case, "state")
            assert data == json_object(case, "state")
            assert pairs == leaves(data)
            texts.append(batch.add("state", data, pairs))
        full, ltm = batch.vectors()
        for n, case in enumerate(cases):
            data = json_object(case, "state")
            assert np.array_equal(full[n], state_vector(data)), case
            assert np.array_equal(ltm[n], unit_rows([long_term(data, leaves(data))[1]])[0]), case
            assert texts[n] == search_text("state", leaves(data))


def test_the_copy_is_detached_and_bad_contents_are_refused():
    state = {"pos": {"x": 1}, "items": [1, 2]}
    data, _ = plain_leaves(state, "state")
    state["pos"]["x"] = 2
    state["items"].append(3)
    assert data == {"pos": {"x": 1}, "items": [1, 2]}
    for bad, word in (({"x": float("nan")}, "NaN"), ({"x": {1, 2}}, "JSON"), ([1], "dict")):
        with pytest.raises(InvalidInput, match=word):
            plain_leaves(bad, "state")
