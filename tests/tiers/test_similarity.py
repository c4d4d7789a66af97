"""Similar states in the states' own units (docs/tiers.md, "Similar states")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memstream import Memory
from memstream.tiers import TierConfig, TieredMemory
from memstream.tiers.similarity import distances, flatten, form, scales


def test_distance_by_hand():
    states = [flatten(s) for s in (
        {"pos": [0, 0], "mood": "calm", "hp": 1.0},
        {"pos": [2, 0], "mood": "calm", "hp": 1.0},
        {"pos": [0, 0], "mood": "angry"},
    )]
    scale = scales(states)
    # pos[0]: values 0, 2, 0 -> std sqrt(8/9); pos[1] and hp never vary: no scale
    assert scale["pos[0]"] == pytest.approx(math.sqrt(8 / 9))
    assert scale["pos[1]"] is None and scale["hp"] is None
    query = flatten({"pos": [1, 0], "mood": "calm", "hp": 1.0})
    got = distances(query, states, scale)
    step = 1 / math.sqrt(8 / 9)  # one unit of pos[0], in the field's own spread
    assert got == pytest.approx([step, step, math.sqrt(step ** 2 + 1 + 1)])  # mood, no hp


def test_categories_missing_fields_and_types():
    states = [flatten(s) for s in ({"a": True}, {"a": 1}, {"a": "1"}, {}, {"a": True, "b": 0})]
    got = distances(flatten({"a": True}), states, scales(states))
    # a field the query lacks ("b") is no difference: the query asks only about "a"
    assert list(got) == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_forms_per_tier():
    state = {"hp": 0.87654, "pos": {"x": 1.23456, "deep": {"a": 1}}, "bag": [1, 2, 3, 4],
             "note": "n"}
    assert form(state, 0) == {"hp": 0.87654, "pos.x": 1.23456, "pos.deep.a": 1, "bag[0]": 1,
                              "bag[1]": 2, "bag[2]": 3, "bag[3]": 4, "note": "n"}
    assert form(state, 1) == {"hp": 0.88, "pos.x": 1.23, "bag[0]": 1, "bag[1]": 2, "bag[2]": 3,
                              "note": "n"}
    assert form(state, 2) == {"hp": 0.9, "pos.x": 1.2, "pos.deep.a": 1, "bag[0]": 1,
                              "note": "n"}


def test_the_exact_state_comes_first(store_memory: Memory, backend):
    """The issue's example: with a hashed cosine the proportional states looked the same."""
    tm = TieredMemory(store_memory, **backend)
    for i in range(50):
        tm.store("a", "state", {"position": [i, i], "health": 1 - i / 100}, step=i)
    hits = tm.similar("a", {"position": [30, 30], "health": 0.7}, k=3)
    assert [e["step_number"] for e, _ in hits] == [30, 31, 29]  # 31 and 29 tie: the newer
    assert hits[0][1] == 1.0 > hits[1][1]
    assert hits[1][1] == pytest.approx(hits[2][1])


def test_exact_match_first_in_every_tier(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, config=TierConfig(stm_limit=5, im_limit=5,
                                                      cleanup_interval=1000), **backend)
    rng = np.random.default_rng(3)
    states = [{"x": int(rng.integers(0, 100)), "hp": round(float(rng.random()), 1),
               "zone": f"z{i % 4}"} for i in range(20)]
    for i, s in enumerate(states):
        tm.store("a", "state", s, step=i)
    tm.maintain("a")
    tiers = {e["step_number"]: e["metadata"]["tier"] for e in tm.step_range("a", 0, 19)}
    assert set(tiers.values()) == {"stm", "im", "ltm"}
    for step in (2, 12, 18):  # one entry in each tier (LTM, IM, STM)
        (best, score), *_ = tm.similar("a", states[step], k=3)
        assert (best["step_number"], score) == (step, 1.0)
        assert best["metadata"]["tier"] == tiers[step]


def test_ties_go_to_the_most_recent_and_kind_filters(store_memory: Memory, backend):
    tm = TieredMemory(store_memory, **backend)
    for step in (3, 9, 5):
        tm.store("a", "state", {"zone": "north", "hp": 5}, step=step)
    tm.store("a", "action", {"zone": "north", "hp": 5}, step=11)
    hits = tm.similar("a", {"zone": "north", "hp": 5}, k=3, kind="state")
    assert [e["step_number"] for e, _ in hits] == [9, 5, 3]
    # a state is compared with states unless a kind is named: the action needs kind="action"
    assert [e["step_number"] for e, _ in tm.similar("a", {"zone": "north"}, k=1)] == [9]
    assert [e["step_number"] for e, _ in tm.similar("a", {"zone": "north"}, k=1,
                                                    kind="action")] == [11]


def test_a_partial_state_compares_states_on_its_own_fields(store_memory: Memory, backend):
    """similar("npc", {"health": 30, "zone": "swamp"}): the npc's states only (not its
    actions), and only those two fields count, so partial queries no longer tie."""
    tm = TieredMemory(store_memory, **backend)
    zones = ["swamp", "forest", "swamp", "cave", "swamp", "forest"]
    for step, zone in enumerate(zones):
        tm.store("npc", "state", {"health": 10 * (step + 1), "zone": zone, "gold": 7 * step,
                                  "pos": [step, 2 * step]}, step=step)
        tm.store("npc", "action", {"health": 30, "zone": "swamp", "verb": "walk"},
                 step=step)
    hits = tm.similar("npc", {"health": 30, "zone": "swamp"}, k=3)
    assert all(e["metadata"]["memory_type"] == "state" for e, _ in hits)
    (best, first), (_, second), (_, third) = hits
    assert best["step_number"] == 2 and first == 1.0  # health 30 in the swamp: a full match
    assert first > second >= third > 1 / 3  # no tie at 0.333: fields it does not ask about
    # do not count against the states (health 10 or 50 in the swamp, one scale away, next)


def test_fields_count_in_their_own_units(store_memory: Memory):
    """A position over hundreds of metres and a health in [0, 1]: a small step in position
    is nearer than a large change of health."""
    tm = TieredMemory(store_memory)
    for i in range(40):
        tm.store("a", "state", {"x": i * 10, "health": 1.0 if i % 2 else 0.0}, step=i)
    (best, _), (second, _) = tm.similar("a", {"x": 205, "health": 0.0}, k=2)
    assert {best["step_number"], second["step_number"]} == {20, 22}
