"""Every ```python block in README.md and docs/*.md runs, in order, one namespace per file."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        if BLOCK.search(p.read_text())]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_doc_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocks = BLOCK.findall(path.read_text())
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
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
