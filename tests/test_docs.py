"""Every ```python block in README.md and docs/*.md runs, in order, one namespace per file."""

from __future__ import annotations

import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
DOCS = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        if BLOCK.search(p.read_text())]


# Examples that use PostgreSQL name this URL; the test runs them against a real server.
PG_PLACEHOLDER = "postgresql://memstream:secret@db.internal:5432/memstream"


#: the pages whose examples load the real model over many memories (run in the full suite)
HEAVY = {"retrieval.md", "server.md"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.name in HEAVY
                                  else p for p in DOCS], ids=lambda p: p.name)
def test_doc_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          request: pytest.FixtureRequest):
    blocks = BLOCK.findall(path.read_text())
    if any(PG_PLACEHOLDER in b for b in blocks):
        url = request.getfixturevalue("pg_url")
        blocks = [b.replace(PG_PLACEHOLDER, url) for b in blocks]
    if any("8765" in b for b in blocks):  # a free port instead of the documented one
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            blocks = [b.replace("8765", str(s.getsockname()[1])) for b in blocks]
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


# --- shell blocks -----------------------------------------------------------------------------

SHELL = re.compile(r"(?:^<!-- (not run by the doc tests: [^\n]*?) -->\n)?^```(?:bash|sh|shell)\n"
                   r"(.*?)^```", re.S | re.M)
#: what stands for a machine the reader has, and what the tests use instead
HOSTS = {"redis://redis.internal:6379/0": "redis://127.0.0.1:6379/0"}


def _shell_blocks() -> list[tuple[str, int, str | None, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, m in enumerate(SHELL.finditer(path.read_text()), start=1):
            found.append((path.name, n, m.group(1), m.group(2)))
    return found


SHELL_BLOCKS = _shell_blocks()


def test_every_shell_block_runs_or_says_why_not():
    """A block the tests cannot run (a download, an install, an hour-long benchmark) carries
    its reason just above it; none is skipped silently."""
    skipped = [(f, n, why) for f, n, why, _ in SHELL_BLOCKS if why]
    assert all(len(why) > len("not run by the doc tests: ") + 10 for _, _, why in skipped)
    assert len(skipped) <= 1  # the test suite itself


#: the documented URLs of the benchmark data, served here from small stand-ins (bench_data.py)
LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/LoCoMo/main/data/locomo10.json"
BEAM_URL = "https://github.com/mohammadtavakoli78/BEAM"
#: a benchmark's size options, scaled down so that the documented commands run in seconds
SMALL = [(re.compile(r"--n \d+"), "--n 300"), (re.compile(r"--clients \d+"), "--clients 2"),
         (re.compile(r"--seconds \d+"), "--seconds 1"), (re.compile(r"--agents \d+"), "--agents 4"),
         (re.compile(r"--steps \d+"), "--steps 20"), (re.compile(r"--kill-after \d+"),
                                                        "--kill-after 1"),
         (re.compile(r"--down \d+"), "--down 2"), (re.compile(r"--queries \d+"), "--queries 20"),
         (re.compile(r"--servers [3-9]\d*"), "--servers 2"),
         (re.compile(r"bench scale(?![^\n]*--queries)"), "bench scale --queries 20")]
PG_NAMED = re.compile(re.escape(PG_PLACEHOLDER.rsplit("/", 1)[0]) + r"/(\w+)")
FOREGROUND_SERVE = re.compile(r"^(memstream serve [^&#\n]*?)\s*(#.*)?$", re.M)


def _prepare(code: str, tmp_path: Path, request: pytest.FixtureRequest, stack: Any) -> str:
    """The block as the tests run it: services of the tests in place of the reader's, small
    sizes for benchmarks, a free port, and a foreground server started, checked and stopped."""
    import socket

    from . import bench_data
    from .pg import new_database

    names = sorted(set(PG_NAMED.findall(code)))
    if names:
        admin = request.getfixturevalue("pg_admin")
        urls = {name: new_database(admin, name.lower()) for name in names}
        code = PG_NAMED.sub(lambda m: urls[m.group(1)], code)
    for theirs, ours in HOSTS.items():
        code = code.replace(theirs, ours)
    if re.search(r"\bmemstream\b.* bench ", code):
        for pattern, small in SMALL:
            code = pattern.sub(small, code)
    if LOCOMO_URL in code:
        bench_data.locomo(tmp_path / "served.json")
        (tmp_path / "served").mkdir()
        (tmp_path / "served.json").rename(tmp_path / "served" / "locomo10.json")
        base = stack.enter_context(bench_data.serve_folder(tmp_path / "served"))
        code = code.replace(LOCOMO_URL, f"{base}/locomo10.json")
    elif "--data locomo10.json" in code:
        bench_data.locomo(tmp_path / "locomo10.json")
    if BEAM_URL in code:
        repo = bench_data.beam_repo(tmp_path / "upstream" / "BEAM")
        code = code.replace(BEAM_URL, f"file://{repo}")
    if "8765" in code:  # a free port instead of the documented one
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            code = code.replace("8765", str(s.getsockname()[1]))
    if re.search(r"^chromium ", code, re.M):  # Debian's, installed by the tests as root
        from .machine import chromium

        found, why = chromium()
        if found is None:
            pytest.skip(why or "no Chromium")
        code = re.sub(r"^chromium ", found + " ", code, flags=re.M)
    serve = FOREGROUND_SERVE.search(code)
    if serve:  # the reader's server runs until stopped: here it is checked, then stopped
        port = re.search(r"--port (\d+)", serve.group(1))
        url = f"localhost:{port.group(1) if port else 8765}/healthz"
        code = FOREGROUND_SERVE.sub(
            f"{serve.group(1)} &\nuntil curl -sf {url} > /dev/null; do sleep 0.5; done\n"
            "kill %1; wait", code)
    return code


@pytest.mark.parametrize(("name", "n", "why", "code"), [
    # a benchmark's block runs the real model over data, if scaled down: the full run's
    pytest.param(*block, marks=pytest.mark.slow)
    if "memstream bench" in block[3] or "memstream demo" in block[3] else block
    for block in SHELL_BLOCKS], ids=[f"{f}#sh{n}" for f, n, _, _ in SHELL_BLOCKS])
def test_shell_block_runs(name: str, n: int, why: str | None, code: str, tmp_path: Path,
                          request: pytest.FixtureRequest):
    if why:
        pytest.skip(why)
    import contextlib
    import os
    import shutil
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["XDG_RUNTIME_DIR"] = str(tmp_path)
    cwd = tmp_path
    if "pip install -e ." in code:  # the README's first command: in a copy of the project
        cwd = tmp_path / "memstream"
        shutil.copytree(ROOT, cwd, ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "__pycache__", "test-artifacts", "*.db*"))
        env["PATH"] = env["PATH"].split(os.pathsep, 1)[1]  # not this suite's virtualenv
    with contextlib.ExitStack() as stack:
        code = _prepare(code, tmp_path, request, stack)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{name} shell block {n}:\n{code}\n{done.stdout}\n{done.stderr}"


def test_every_setting_an_error_message_names_is_documented():
    """An error that says "raise max_text_bytes" sends the reader to docs/operations.md,
    which lists every setting with its environment variable and default."""
    import ast
    import dataclasses
    import re

    from memstream.config import Config

    fields = {f.name for f in dataclasses.fields(Config)}
    named: set[str] = set()
    for path in (ROOT / "src" / "memstream").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                for part in ast.walk(node.exc):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        named |= fields & set(re.findall(r"[a-z_]+", part.value))
    assert "max_text_bytes" in named
    doc = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    missing = [n for n in sorted(named) if f"| `{n}` | `MEMSTREAM_{n.upper()}` |" not in doc]
    assert not missing, f"settings named by errors but not in docs/operations.md: {missing}"
