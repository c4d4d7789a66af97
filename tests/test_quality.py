"""The linters are part of the suite: ruff and mypy (strict) must be clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_clean():
    res = _run("ruff", "check", "src", "tests", "examples", "benchmarks")
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_clean():
    res = _run("mypy")
    assert res.returncode == 0, res.stdout + res.stderr
