"""``memstream bench everyday`` on a small suite of our own (the development suite stays outside
the repository): every group, the baselines timed like the profiles, the calibration figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstream.cli import cli

SUITE = {
    "now": "2026-05-01T12:00:00Z",
    "memories": [
        {"user": "mira", "at": "2026-04-01T09:00:00Z", "text": "Mira's bike was stolen outside "
         "the library"},
        {"user": "mira", "at": "2026-04-03T09:00:00Z", "text": "Mira ordered a new bike, a "
         "green gravel frame"},
        {"user": "mira", "at": "2026-04-05T09:00:00Z", "text": "Mira's dentist is Dr. Okafor"},
        {"user": "tomas", "at": "2026-04-02T09:00:00Z", "text": "Tomás juega al pádel los "
         "jueves con su hermana"},
        {"user": "tomas", "at": "2026-04-04T09:00:00Z", "text": "Tomás es alérgico a las nueces"},
    ],
    "questions": [
        {"user": "mira", "type": "exact", "lang": "en", "question": "Who is Mira's dentist?",
         "expected": ["Mira's dentist is Dr. Okafor"]},
        {"user": "mira", "type": "latest", "lang": "en", "question": "What bike does Mira "
         "have now?", "expected": ["Mira ordered a new bike, a green gravel frame"]},
        {"user": "tomas", "type": "exact", "lang": "es", "question": "¿Cuándo juega Tomás al "
         "pádel?", "expected": ["Tomás juega al pádel los jueves con su hermana"]},
        {"user": "tomas", "type": "nothing", "lang": "es", "question": "¿Cuál es la capital "
         "de Australia?", "expected": []},
    ],
}


@pytest.mark.slow
def test_bench_everyday_reports_groups_baselines_and_calibration(tmp_path: Path) -> None:
    data, out = tmp_path / "suite.json", tmp_path / "report.json"
    data.write_text(json.dumps(SUITE), encoding="utf-8")
    res = CliRunner().invoke(cli, ["bench", "everyday", "--data", str(data), "--profiles",
                                   "default", "--out", str(out)])
    assert res.exit_code == 0, res.output + str(res.exception)
    for group in ("overall", "lang:en", "lang:es", "store:mira", "type:exact", "type:latest"):
        assert group in res.output, group
    assert "nothing flagged" in res.output
    report = json.loads(out.read_text())
    profiles = report["profiles"]
    assert set(profiles) >= {"default", "vector only", "keyword only"}
    for name in ("vector only", "keyword only"):  # timed like the profiles, not 0.0
        assert profiles[name]["latency_ms"]["p50"] > 0, name
    assert report["questions"] == 4 and report["stores"] == 2


def test_bench_fit_notes_holds_each_store_out_and_writes_weights_the_stage_loads(
        tmp_path: Path) -> None:
    from memstream.retrieval.notes import FEATURES, WEIGHTS_FILE, load_weights

    data, out = tmp_path / "suite.json", tmp_path / "weights.json"
    data.write_text(json.dumps(SUITE), encoding="utf-8")
    res = CliRunner().invoke(cli, ["--json", "bench", "fit-notes", "--data", str(data),
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output + str(res.exception)
    report = json.loads(res.stdout)
    assert report["questions"] == 3  # the answerable ones
    assert {"overall", "store:mira", "store:tomas", "lang:es"} <= set(report["held_out"])
    assert report["held_out"]["store:mira"]["n"] == 2
    written = json.loads(out.read_text())
    assert written["features"] == list(FEATURES) and len(written["weights"]) == len(FEATURES)
    assert written["fitted_on"] == "suite.json"
    # the shipped file has the same form
    load_weights.cache_clear()
    assert len(load_weights().values) == len(FEATURES) and WEIGHTS_FILE == "notes_weights.json"
