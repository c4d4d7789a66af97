"""The docs/learning.md demonstration: advice converges on the strategy that works best."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "learning_demo.py"


@pytest.mark.slow
def test_advice_converges_on_the_best_strategy(tmp_path: Path):
    spec = importlib.util.spec_from_file_location("learning_demo", EXAMPLE)
    assert spec and spec.loader
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    out = io.StringIO()
    advice = demo.run(episodes=50, seed=7, path=str(tmp_path / "demo.db"), out=out)
    best = max(demo.STRATEGIES, key=lambda s: demo.STRATEGIES[s][0])
    assert advice[-1] == best
    assert all(a == best for a in advice[-20:])  # it settled, not flickering at the end
    for seed in (1, 2):  # not one lucky draw
        assert demo.run(episodes=50, seed=seed, path=str(tmp_path / f"s{seed}.db"),
                        out=io.StringIO())[-1] == best
    text = out.getvalue()
    assert "after 50 episodes: advice = " + best in text
    for line in text.splitlines():  # never advised to replace a strategy by itself
        if "; instead: " in line:
            pattern = line[2:].split(": fails with ")[0]
            assert line.split("; instead: ")[1] != pattern
