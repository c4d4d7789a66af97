"""Every ```python block in README.md and docs/*.md runs, in order, one namespace per file."""

from __future__ import annotations

import re
import sys
import types
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        if BLOCK.search(p.read_text())]


# Examples that use PostgreSQL name this URL; the test runs them against a real server.
PG_PLACEHOLDER = "postgresql://memstream:secret@db.internal:5432/memstream"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_doc_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          request: pytest.FixtureRequest):
    blocks = BLOCK.findall(path.read_text())
    if any(PG_PLACEHOLDER in b for b in blocks):
        url = request.getfixturevalue("pg_url")
        blocks = [b.replace(PG_PLACEHOLDER, url) for b in blocks]
    monkeypatch.chdir(tmp_path)
    # platformdirs warns when XDG_RUNTIME_DIR is unset (the local PostgreSQL recipe)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    module = types.ModuleType("__doc_example__")  # a real module: dataclasses look it up
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, object] = module.__dict__
    for n, code in enumerate(blocks, start=1):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            exec(compile(code, f"{path.name}#block{n}", "exec"), namespace)


def test_readme_and_ci_agree():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    commands = re.findall(r"^```bash\n(.*?)\n```", readme, re.S | re.M)
    test_cmd = next(c for c in commands if "pytest" in c)
    assert test_cmd.strip() in ci
