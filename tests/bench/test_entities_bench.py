"""``memstream bench entities``: the names found on the labelled sample, and the graph's cost at
a small size (the figures at 100,000 are docs/benchmarks.md's)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from memstream.bench.entities import SAMPLE, quality
from memstream.cli import cli


def test_the_sample_is_scored_per_language() -> None:
    found = quality()
    assert set(found["groups"]) == {"en", "de", "es", "all"}
    assert found["groups"]["all"]["names"] == sum(len(names) for _, _, names in SAMPLE)
    # the extractor's figures as docs/entities.md reports them: a regression fails here
    assert found["groups"]["all"]["precision"] >= 0.9
    assert found["groups"]["all"]["recall"] >= 0.8


def test_the_command_reports_quality_and_cost(tmp_path) -> None:
    result = CliRunner().invoke(cli, ["--json", "bench", "entities", "--n", "300",
                                      "--queries", "5"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    cost = out["cost"]
    assert cost["n"] == 300 and cost["mentions"] > 300 and cost["entities"] > 10
    assert cost["ingest_on"] > 0 and cost["ingest_off"] > 0 and cost["lookup_ms"] > 0
    assert out["quality"]["groups"]["all"]["names"] == 74
