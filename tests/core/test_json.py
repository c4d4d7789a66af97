"""memstream.core.jsonio: orjson where it is exact, the standard library where it is not."""

from __future__ import annotations

import json

import pytest

from memstream.core.jsonio import dumps, loads


def test_round_trips_what_the_standard_library_would():
    value = {"a": 1.5, "b": [1, "x", None, True], "c": {"d": "é"}, "e": 0.1, "f": -3}
    assert loads(dumps(value)) == value
    assert dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_integers_beyond_64_bits_keep_every_digit():
    value = {"big": 123456789012345678901234567890, "edge": 2**64 + 1, "neg": -(2**70)}
    text = dumps(value)
    assert loads(text) == value and all(type(v) is int for v in loads(text).values())
    assert loads('{"n": 18446744073709551615}') == {"n": 2**64 - 1}


def test_non_finite_numbers_are_refused_and_odd_keys_fall_back():
    with pytest.raises(ValueError):
        dumps({"x": [1.0, float("nan")]})
    with pytest.raises(ValueError):
        dumps({"x": float("inf"), "y": None})
    assert dumps({1: "a"}) == '{"1":"a"}'
