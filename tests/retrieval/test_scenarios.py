"""The everyday scenario suite (memstream.bench.scenarios) with the real embedder: under the
default configuration the expected memory comes first in every case. `memstream bench
scenarios` prints the same cases under the named profiles beside the default."""

from __future__ import annotations

import pytest

from memstream.bench import scenarios


@pytest.fixture(scope="module")
def outcomes(e5) -> dict[str, scenarios.Outcome]:
    return {o.case.name: o for o in scenarios.run(e5)}


def test_the_suite_covers_every_kind_of_case():
    kinds = {c.kind for c in scenarios.CASES}
    assert len(scenarios.CASES) >= 30 and len(kinds) >= 10
    assert len(scenarios.DISTRACTORS) >= 24


@pytest.mark.parametrize("name", [c.name for c in scenarios.CASES])
def test_the_expected_memory_comes_first(outcomes: dict[str, scenarios.Outcome], name: str):
    outcome = outcomes[name]
    assert outcome.ok, f"{outcome.case.query!r}: first was {outcome.first!r}, expected " \
                       f"{outcome.case.expected!r}"
