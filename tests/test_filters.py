from __future__ import annotations

import pytest

from memstream import InvalidFilter
from memstream.filters import And, Cond, Not, Or, parse_filter


def test_parse_builds_the_tree():
    assert parse_filter(None) is None
    assert parse_filter({}) is None
    assert parse_filter({"a": 1}) == Cond("data", ("a",), "eq", 1)
    assert parse_filter({"a.b": {"gt": 1, "lt": 5}}) == And((
        Cond("data", ("a", "b"), "gt", 1), Cond("data", ("a", "b"), "lt", 5)))
    assert parse_filter({"metadata.src": "x"}) == Cond("metadata", ("src",), "eq", "x")
    assert parse_filter({"OR": [{"a": 1}, {"NOT": {"b": 2}}]}) == Or((
        Cond("data", ("a",), "eq", 1), Not(Cond("data", ("b",), "eq", 2))))
    assert parse_filter({"x": {"in": [1, 2]}}) == Cond("data", ("x",), "in", (1, 2))


@pytest.mark.parametrize("raw", [
    {"a": {"like": "x"}},          # unknown operator
    {"a": {"in": "abc"}},          # in needs a list
    {"a": {"gt": [1]}},            # comparison with a list
    {"a": {"gt": True}},
    {"a": {}},                     # no operator
    {"a;drop": 1},                 # key outside the path alphabet
    {"OR": {"a": 1}},              # OR needs a list
    {"OR": []},
    {"a": {"eq": {"nested": 1}}},  # not a scalar
    {"a": float("nan")},
    {"a": {"contains": None}},
])
def test_bad_filters_name_the_problem(raw):
    with pytest.raises(InvalidFilter):
        parse_filter(raw)


def test_unknown_operator_message_lists_the_valid_ones():
    with pytest.raises(InvalidFilter, match="use one of eq, ne, in"):
        parse_filter({"a": {"regex": "x"}})


def test_non_dict_filter():
    with pytest.raises(InvalidFilter, match="must be a dict"):
        parse_filter(["a"])  # type: ignore[arg-type]
