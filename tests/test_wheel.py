"""The package as users install it: a wheel built from this checkout, installed into a fresh
virtual environment without an editable install (which hides missing package data), runs the
README's demo from a folder that holds no source."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd[:3]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_the_built_wheel_runs_the_demo_in_a_fresh_environment(tmp_path: Path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
         tmp_path, env)
    wheel = next(dist.glob("memstream-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("memstream/py.typed", "memstream/server/static/index.html",
                   "memstream/retrieval/notes_weights.json", "memstream/retrieval/background.txt",
                   "memstream/cognition/changes_weights.json", "memstream/calendar_words.txt",
                   "memstream/cognition/reader.bin"):
        assert needed in names, f"{needed} is missing from the wheel"
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE")
               for n in names), "the licence text is missing from the wheel"
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    # (no byte-compiling of every dependency: what the demo imports compiles as it runs)
    _run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(wheel)], tmp_path,
         env)
    away = tmp_path / "elsewhere"  # no source folder to import from by accident
    away.mkdir()
    where = _run([str(venv / "bin" / "python"), "-c",
                  "import memstream, pathlib; print(pathlib.Path(memstream.__file__))"],
                 away, env)
    assert str(ROOT) not in where and str(venv) in where
    out = _run([str(venv / "bin" / "memstream"), "demo"], away, env)
    assert "Lunch with Maria" in out.split("search (default")[1].splitlines()[1]
    assert "context block for 'dinner with Maria'" in out
